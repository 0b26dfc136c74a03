//! The `locklint` command line. Parsing and exit codes only; the work is in the library.

use clap::{Args, Parser, Subcommand, ValueEnum};
use locklint::advice::Target;
use locklint::report::{self, EmitOptions, Format};
use locklint::{rules, Settings, Severity};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "locklint",
    version,
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
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum RulesFormat {
    Text,
    Json,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum FailOn {
    Error,
    Warning,
    Never,
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
    /// Lowest severity that makes the exit code 1.
    #[arg(long, value_enum)]
    fail_on: Option<FailOn>,
    /// Exit 0 even when there are findings (errors still exit 2).
    #[arg(long)]
    exit_zero: bool,
    /// Report test code too (tests/, *_test.go, #[test], …).
    #[arg(long)]
    tests: bool,
    /// Print per-rule counts.
    #[arg(long)]
    stats: bool,
    /// Print only the summary and errors.
    #[arg(long, short = 'q')]
    quiet: bool,
    /// Print notes (e.g. parser fallbacks).
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
}

fn parse_version(s: &str) -> Result<(u32, u32), String> {
    let mut it = s.trim().split('.');
    let major = it.next().and_then(|m| m.parse().ok());
    let minor = it.next().map(|m| m.parse().ok()).unwrap_or(Some(0));
    match (major, minor) {
        (Some(a), Some(b)) => Ok((a, b)),
        _ => Err(format!(
            "invalid Redis version `{s}`: expected X.Y, e.g. 7.2"
        )),
    }
}

fn resolve_rules(list: &[String]) -> Result<Vec<&'static str>, String> {
    let mut out = Vec::new();
    for item in list.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
        if item.eq_ignore_ascii_case("all") {
            out.extend(rules::all().iter().map(|r| r.meta().code));
            continue;
        }
        match rules::lookup(item) {
            Some(m) => out.push(m.code),
            None => return Err(format!("unknown rule `{item}` (see `locklint rules`)")),
        }
    }
    Ok(out)
}

fn usage_error(msg: &str) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(2)
}

fn run_check(args: CheckArgs) -> ExitCode {
    let select = match resolve_rules(&args.select) {
        Ok(v) => v,
        Err(e) => return usage_error(&e),
    };
    let ignore = match resolve_rules(&args.ignore) {
        Ok(v) => v,
        Err(e) => return usage_error(&e),
    };
    let min_redis = match args
        .min_redis_version
        .as_deref()
        .map(parse_version)
        .transpose()
    {
        Ok(v) => v,
        Err(e) => return usage_error(&e),
    };
    let settings = Settings {
        select: (!select.is_empty()).then_some(select),
        ignore,
        tests: args.tests,
        target: Target { min_redis },
        threads: args.threads.unwrap_or(0),
        ..Settings::default()
    };
    let paths = if args.paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        args.paths.clone()
    };
    let report = locklint::check_paths(&paths, &settings);

    let format = args.format.unwrap_or(Format::Human);
    let to_terminal = args.output.is_none() && std::io::stdout().is_terminal();
    let color = match args.color {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => to_terminal && std::env::var_os("NO_COLOR").is_none(),
    };
    let opts = EmitOptions {
        color,
        quiet: args.quiet,
        stats: args.stats,
        verbose: args.verbose,
    };
    let mut buf: Vec<u8> = Vec::new();
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
    if format != Format::Human {
        for e in &report.errors {
            eprintln!("error: {}: {}", e.path, e.message);
        }
    }

    if !report.errors.is_empty() {
        return ExitCode::from(2);
    }
    let threshold = match args.fail_on.unwrap_or(FailOn::Error) {
        FailOn::Error => Some(Severity::Error),
        FailOn::Warning => Some(Severity::Warning),
        FailOn::Never => None,
    };
    let failing = threshold.is_some_and(|t| report.findings.iter().any(|f| f.severity >= t));
    if failing && !args.exit_zero {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn explain(rule: &str) -> ExitCode {
    let Some(meta) = rules::lookup(rule) else {
        return usage_error(&format!("unknown rule `{rule}` (see `locklint rules`)"));
    };
    println!("{} {} ({})\n", meta.code, meta.name, meta.severity.as_str());
    println!("{}\n", meta.summary);
    println!("{}", meta.doc.trim_end());
    ExitCode::SUCCESS
}

fn list_rules(format: RulesFormat) -> ExitCode {
    let metas: Vec<_> = rules::all().iter().map(|r| r.meta()).collect();
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
        None => run_check(cli.check),
    }
}
