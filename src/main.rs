//! The `locklint` command line. Parsing and exit codes only; the work is in the library.

use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};
use locklint::advice::Target;
use locklint::config::{self, Config, FailOn};
use locklint::filter::{self, baseline::Baseline, diff::ChangedLines};
use locklint::report::{self, EmitOptions, Format};
use locklint::{Report, Settings};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "locklint",
    version = env!("LOCKLINT_VERSION"), // build.rs: the commit too when built from git
    about = "Finds misuse of Redis as a distributed lock and tells how to fix it",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    check: CheckArgs,
}

#[derive(Subcommand, Debug)]
#[allow(clippy::large_enum_variant)] // parsed once
enum Command {
    /// Check files and folders (the default command).
    Check(CheckArgs),
    /// Explain a rule: what it flags, why, the redis-cli reproduction and the fix.
    Explain {
        /// A rule code (LL002) or name (unconditional-release).
        rule: String,
    },
    /// List every rule.
    Rules {
        #[arg(long, value_enum, default_value_t = RulesFormat::Text)]
        format: RulesFormat,
    },
    // --- packaging (issue 10): shell completions and the man page ---
    /// Print the shell completion script (e.g. `locklint completions bash > ~/.local/share/bash-completion/completions/locklint`).
    Completions {
        /// The shell to complete in.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff; e.g. `locklint man > ~/.local/share/man/man1/locklint.1`).
    Man,
    // --- end packaging ---
    // --- fix (issue 11) ---
    /// Run as a language server over stdio (diagnostics, fixes as code actions, hover).
    Server,
    // --- end fix ---
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum RulesFormat {
    Text,
    Json,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
enum Color {
    #[default]
    Auto,
    Always,
    Never,
}

#[derive(Args, Debug, Default)]
struct CheckArgs {
    /// Files or folders to check (folders respect .gitignore). Default: "."
    paths: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// Write the report to FILE instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,
    /// Only these rules (codes or names, comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "RULES")]
    select: Vec<String>,
    /// Never these rules (codes or names, comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "RULES")]
    ignore: Vec<String>,
    /// Lowest severity that makes the exit code 1 (default: error, or the config's `fail-on`).
    #[arg(long, value_enum)]
    fail_on: Option<FailOn>,
    /// Read the configuration from FILE (a locklint.toml, or a pyproject.toml with [tool.locklint]).
    #[arg(long, value_name = "FILE", conflicts_with = "no_config")]
    config: Option<PathBuf>,
    /// Ignore every configuration file.
    #[arg(long)]
    no_config: bool,
    /// Do not report findings whose fingerprint is in FILE (written by --write-baseline).
    #[arg(long, value_name = "FILE")]
    baseline: Option<PathBuf>,
    /// Write the fingerprints of the current findings to FILE, then report only newer ones.
    #[arg(long, value_name = "FILE")]
    write_baseline: Option<PathBuf>,
    /// Only findings on lines added or changed since this git revision (working tree included).
    #[arg(long, value_name = "GIT_REV")]
    changed_since: Option<String>,
    /// Exit 0 even when there are findings (errors still exit 2).
    #[arg(long)]
    exit_zero: bool,
    /// Report test code too (tests/, *_test.go, #[test], …).
    #[arg(long)]
    tests: bool,
    /// Scan minified JavaScript/TypeScript found in folders too (by default
    /// skipped with a note under -v; named files are always scanned).
    #[arg(long)]
    include_minified: bool,
    /// Print the number of findings per rule instead of each finding (to stderr for machine formats).
    #[arg(long)]
    stats: bool,
    /// Print only the summary and errors.
    #[arg(long, short = 'q')]
    quiet: bool,
    /// Print notes (parser fallbacks, minified files skipped).
    #[arg(long, short = 'v')]
    verbose: bool,
    /// When to colour the human output.
    #[arg(long, value_enum, default_value_t = Color::Auto)]
    color: Color,
    /// Worker threads (default: all cores).
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
    /// Oldest Redis the code runs against (from 8.4 the help offers DELEX … IFEQ).
    #[arg(long, value_name = "X.Y")]
    min_redis_version: Option<String>,
    // --- fix (issue 11) ---
    /// Apply the safe fixes, rewriting each file atomically; then report what is left.
    #[arg(long)]
    fix: bool,
    /// With --fix or --diff: apply the unsafe fixes too (read the diff before committing).
    #[arg(long)]
    unsafe_fixes: bool,
    /// Print the fixes as a unified diff instead of writing them (exit 1 when there is one).
    #[arg(long)]
    diff: bool,
    // --- end fix ---
    /// The project whose wrappers and keys the paths are linked against
    /// (default: the nearest folder upwards with `.git` or a locklint config).
    #[arg(long, value_name = "DIR")]
    project_root: Option<PathBuf>,
    /// Do not read or write the phase-one cache (`.locklint_cache/` in the project root).
    #[arg(long)]
    no_cache: bool,
}

// --- fix (issue 11): --fix / --unsafe-fixes / --diff ---
/// Applies (or, with `--diff`, prints) the fixes of the files with a
/// fixable finding. Returns whether a diff was printed, or an error.
fn apply_fixes(
    args: &CheckArgs,
    report: &Report,
    settings: &locklint::Settings,
) -> Result<bool, String> {
    use locklint::fix::{self, Level};
    let level = if args.unsafe_fixes {
        Level::Unsafe
    } else {
        Level::Safe
    };
    let mut paths: Vec<&str> = report
        .findings
        .iter()
        .filter(|f| {
            f.fix
                .as_ref()
                .is_some_and(|x| level.allows(x.applicability))
        })
        .map(|f| f.path.as_str())
        .collect();
    paths.dedup();
    let (mut fixed, mut files, mut printed) = (0usize, 0usize, false);
    let mut out = std::io::stdout().lock();
    for display in paths {
        let path = Path::new(display);
        let Some(language) = locklint::facts::Language::from_path(path) else {
            continue;
        };
        let src = match locklint::engine::load_with(path, !settings.lock_key_patterns.is_empty()) {
            Ok(locklint::engine::Loaded::Text(s)) => s,
            Ok(_) => continue,
            Err(e) => return Err(format!("{display}: {e}")),
        };
        let result = fix::fix_source(display, &src, language, settings, level);
        for (line, code) in &result.refused {
            eprintln!(
                "locklint: {display}:{line}: the {code} fix was not applied: the file would not parse (or would gain a finding) after it"
            );
        }
        if !result.changed() {
            continue;
        }
        files += 1;
        fixed += result.applied.values().sum::<usize>();
        if args.diff {
            let d = fix::unified_diff(display, &result.original, &result.fixed);
            out.write_all(d.as_bytes())
                .map_err(|e| format!("stdout: {e}"))?;
            printed = true;
        } else {
            // A BOM the loader dropped is written back.
            let bom = std::fs::read(path)
                .map(|b| b.starts_with("\u{feff}".as_bytes()))
                .unwrap_or(false);
            let text = if bom {
                format!("\u{feff}{}", result.fixed)
            } else {
                result.fixed.clone()
            };
            fix::write_atomic(path, &text).map_err(|e| format!("{display}: {e}"))?;
        }
    }
    let verb = if args.diff { "would fix" } else { "fixed" };
    eprintln!("locklint: {verb} {fixed} finding(s) in {files} file(s)");
    Ok(printed)
}
// --- end fix ---

fn resolve_rules(list: &[String]) -> Result<Vec<&'static str>, String> {
    let mut out = Vec::new();
    for item in list.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
        if item.eq_ignore_ascii_case("all") {
            out.extend(filter::all_metas().iter().map(|m| m.code));
            continue;
        }
        match filter::lookup(item) {
            Some(m) => out.push(m.code),
            None => {
                return Err(format!(
                    "unknown rule `{item}` ({})",
                    filter::rule_hint(item)
                ))
            }
        }
    }
    Ok(out)
}

/// The configuration the flags ask for: none, the named file, or the
/// nearest one found from the current folder upwards.
fn load_config(args: &CheckArgs, cwd: &Path) -> Result<Config, String> {
    if args.no_config {
        return Ok(Config::defaults());
    }
    let path = match &args.config {
        Some(p) => Some(p.clone()),
        None => {
            config::discover(cwd).map(|p| p.strip_prefix(cwd).map(Path::to_path_buf).unwrap_or(p))
        }
    };
    match path {
        Some(p) => config::load(&p).map_err(|e| e.to_string()),
        None => Ok(Config::defaults()),
    }
}

/// Per-rule counts, most frequent first, like `ruff --statistics`.
fn stats_table(report: &Report) -> String {
    let mut counts: Vec<(usize, &str, &str, &str)> = Vec::new();
    for f in &report.findings {
        match counts.iter_mut().find(|c| c.1 == f.code) {
            Some(c) => c.0 += 1,
            None => counts.push((1, f.code, f.name, f.severity.as_str())),
        }
    }
    counts.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    let width = counts
        .iter()
        .map(|c| c.0.to_string().len())
        .max()
        .unwrap_or(1);
    let name_width = counts.iter().map(|c| c.2.len()).max().unwrap_or(0);
    let mut s = String::new();
    for (n, code, name, sev) in counts {
        s.push_str(&format!(
            "{n:>width$}  {code}  {name:<name_width$}  {sev}\n"
        ));
    }
    s
}

fn usage_error(msg: &str) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(2)
}

fn run_check(args: CheckArgs) -> ExitCode {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let cfg = match load_config(&args, &cwd) {
        Ok(c) => c,
        Err(e) => return usage_error(&e),
    };
    let select = match resolve_rules(&args.select) {
        Ok(v) => v,
        Err(e) => return usage_error(&e),
    };
    let mut ignore = match resolve_rules(&args.ignore) {
        Ok(v) => v,
        Err(e) => return usage_error(&e),
    };
    ignore.extend(cfg.ignore.iter().copied());
    let min_redis = match args
        .min_redis_version
        .as_deref()
        .map(config::parse_version)
        .transpose()
    {
        Ok(v) => v.or(cfg.min_redis_version),
        Err(e) => return usage_error(&e),
    };
    let exclude = match cfg.exclude_matcher(&cwd) {
        Ok(x) => x,
        Err(e) => return usage_error(&e.to_string()),
    };
    let settings = Settings {
        select: if select.is_empty() {
            cfg.select.clone()
        } else {
            Some(select)
        },
        ignore,
        severity: cfg.severity.clone(),
        tests: args.tests || cfg.tests.unwrap_or(false),
        lock_key_patterns: cfg.lock_key_patterns.clone(),
        target: Target { min_redis },
        threads: args.threads.unwrap_or(0),
        exclude: Some(exclude),
        project_root: None,
        cache: false,
        include_minified: args.include_minified || cfg.include_minified.unwrap_or(false),
    };
    let paths = if args.paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        args.paths.clone()
    };
    let settings = Settings {
        project_root: args
            .project_root
            .clone()
            .or_else(|| locklint::project::root::find(&paths, &cwd)),
        cache: !args.no_cache,
        ..settings
    };
    // The gates' inputs are read before the scan: a bad baseline or revision fails fast.
    let baseline = match args.baseline.as_deref().map(Baseline::read).transpose() {
        Ok(b) => b,
        Err(e) => return usage_error(&e),
    };
    let changed = match args
        .changed_since
        .as_deref()
        .map(|rev| ChangedLines::since(rev, &cwd))
        .transpose()
    {
        Ok(c) => c,
        Err(e) => return usage_error(&e),
    };
    let mut report = locklint::check_paths(&paths, &settings);
    // --- fix (issue 11) ---
    if args.fix || args.diff {
        match apply_fixes(&args, &report, &settings) {
            Err(e) => return usage_error(&e),
            Ok(printed) if args.diff => {
                return ExitCode::from(u8::from(printed));
            }
            Ok(_) => report = locklint::check_paths(&paths, &settings),
        }
    }
    // --- end fix ---

    // Gates, in order: the baseline written now or read, then changed lines.
    let mut failed = false;
    let mut hidden: Vec<(usize, &str)> = Vec::new();
    if let Some(path) = &args.write_baseline {
        match filter::baseline::write(path, &report) {
            Ok(()) => {
                eprintln!(
                    "locklint: wrote {} finding(s) to the baseline {}",
                    report.findings.len(),
                    path.display()
                );
                report.findings.clear();
            }
            Err(e) => {
                eprintln!("error: {e}");
                failed = true;
            }
        }
    }
    if let Some(b) = &baseline {
        hidden.push((b.filter(&mut report), "in the baseline"));
    }
    if let Some(c) = &changed {
        hidden.push((
            c.filter(&mut report, &cwd),
            "on lines not changed since the revision",
        ));
    }

    let format = args.format.unwrap_or(Format::Human);
    let to_terminal = args.output.is_none() && std::io::stdout().is_terminal();
    let color = match args.color {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => to_terminal && std::env::var_os("NO_COLOR").is_none(),
    };
    let opts = EmitOptions {
        color,
        quiet: args.quiet || (args.stats && format == Format::Human),
        stats: args.stats,
        verbose: args.verbose,
    };
    let mut buf: Vec<u8> = Vec::new();
    if args.stats {
        let mut table = stats_table(&report);
        if report.minified_skipped > 0 {
            table.push_str(&format!(
                "{} minified file(s) skipped (`-v` names them, `--include-minified` scans them)\n",
                report.minified_skipped
            ));
        }
        if format == Format::Human {
            buf.extend_from_slice(table.as_bytes());
        } else {
            eprint!("{table}");
        }
    }
    if let Err(e) = report::emitter(format).emit(&report, &opts, &mut buf) {
        return usage_error(&format!("cannot format the report: {e}"));
    }
    let written = match &args.output {
        Some(path) => std::fs::write(path, &buf).map_err(|e| format!("{}: {e}", path.display())),
        None => std::io::stdout()
            .write_all(&buf)
            .map_err(|e| format!("stdout: {e}")),
    };
    if let Err(e) = written {
        return usage_error(&format!("cannot write the report: {e}"));
    }
    if format == Format::Human && !args.quiet {
        for (n, why) in hidden.iter().filter(|h| h.0 > 0) {
            eprintln!("locklint: {n} more finding(s) {why} not shown");
        }
    }
    if format != Format::Human {
        if args.verbose {
            for (path, note) in &report.notes {
                eprintln!("note: {path}: {note}");
            }
        }
        for e in &report.errors {
            eprintln!("error: {}: {}", e.path, e.message);
        }
    }

    if failed || !report.errors.is_empty() {
        return ExitCode::from(2);
    }
    let threshold = args
        .fail_on
        .or(cfg.fail_on)
        .unwrap_or(FailOn::Error)
        .threshold();
    let failing = threshold.is_some_and(|t| report.findings.iter().any(|f| f.severity >= t));
    if failing && !args.exit_zero {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn explain(rule: &str) -> ExitCode {
    let Some(meta) = filter::lookup(rule) else {
        return usage_error(&format!(
            "unknown rule `{rule}` ({})",
            filter::rule_hint(rule)
        ));
    };
    println!("{} {} ({})\n", meta.code, meta.name, meta.severity.as_str());
    println!("{}\n", meta.summary);
    println!("{}", meta.doc.trim_end());
    ExitCode::SUCCESS
}

fn list_rules(format: RulesFormat) -> ExitCode {
    let metas = filter::all_metas();
    match format {
        RulesFormat::Text => {
            for m in metas {
                println!(
                    "{:<6} {:<24} {:<8} {}",
                    m.code,
                    m.name,
                    m.severity.as_str(),
                    m.summary
                );
            }
        }
        RulesFormat::Json => {
            let list: Vec<_> = metas
                .iter()
                .map(|m| {
                    serde_json::json!({
                        "code": m.code, "name": m.name,
                        "severity": m.severity.as_str(), "summary": m.summary,
                    })
                })
                .collect();
            println!(
                "{}",
                serde_json::to_string_pretty(&list).unwrap_or_default()
            );
        }
    }
    ExitCode::SUCCESS
}

// --- packaging (issue 10) ---
fn completions(shell: clap_complete::Shell) -> ExitCode {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "locklint", &mut out);
    write_stdout(&out)
}

fn man_page() -> ExitCode {
    let mut out = Vec::new();
    if let Err(e) = clap_mangen::Man::new(Cli::command()).render(&mut out) {
        return usage_error(&format!("cannot render the man page: {e}"));
    }
    write_stdout(&out)
}

fn write_stdout(bytes: &[u8]) -> ExitCode {
    match std::io::stdout().write_all(bytes) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => usage_error(&format!("stdout: {e}")),
    }
}
// --- end packaging ---

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    match cli.command {
        Some(Command::Check(args)) => run_check(args),
        Some(Command::Explain { rule }) => explain(&rule),
        Some(Command::Rules { format }) => list_rules(format),
        Some(Command::Completions { shell }) => completions(shell),
        Some(Command::Man) => man_page(),
        // --- fix (issue 11) ---
        Some(Command::Server) => match locklint::server::run_stdio() {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => usage_error(&e),
        },
        // --- end fix ---
        None => run_check(cli.check),
    }
}
