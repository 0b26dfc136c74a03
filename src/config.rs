//! Configuration (SPEC §6): `.locklint.toml`, `locklint.toml` or
//! `[tool.locklint]` in `pyproject.toml`, found from the current folder
//! upwards (the nearest wins; in one folder in that order), or named with
//! `--config FILE`. Parsed with `toml` + `serde`; an unknown key or rule is
//! an error naming the file, the line and the nearest valid name.

use crate::filter::{self, nearest};
use crate::finding::{LineIndex, Severity};
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::path::{Component, Path, PathBuf};
use toml::Spanned;

/// The lowest severity that makes the exit code 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    Error,
    Warning,
    Never,
}

impl FailOn {
    pub fn threshold(self) -> Option<Severity> {
        match self {
            FailOn::Error => Some(Severity::Error),
            FailOn::Warning => Some(Severity::Warning),
            FailOn::Never => None,
        }
    }
}

/// Folders never walked unless `exclude` replaces this list
/// (`extend-exclude` adds to it).
pub const DEFAULT_EXCLUDE: &[&str] = &[
    ".git",
    "node_modules",
    "target",
    "vendor",
    "third_party",
    ".venv",
    "venv",
    "__pycache__",
    ".tox",
];

/// Every key of the file, for "did you mean".
pub const KEYS: &[&str] = &[
    "select",
    "ignore",
    "severity",
    "exclude",
    "extend-exclude",
    "lock-key-patterns",
    "min-redis-version",
    "fail-on",
    "tests",
    "include-minified",
    "include-generated",
];

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct Raw {
    select: Option<Vec<Spanned<String>>>,
    ignore: Option<Vec<Spanned<String>>>,
    severity: Option<BTreeMap<String, Spanned<String>>>,
    exclude: Option<Vec<String>>,
    extend_exclude: Option<Vec<String>>,
    lock_key_patterns: Option<Vec<Spanned<String>>>,
    min_redis_version: Option<Spanned<toml::Value>>,
    fail_on: Option<Spanned<String>>,
    tests: Option<bool>,
    include_minified: Option<bool>,
    include_generated: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
struct PyProject {
    tool: Option<PyTool>,
}

#[derive(Debug, Default, Deserialize)]
struct PyTool {
    locklint: Option<Raw>,
}

/// A configuration error: the file, the 1-based line and column, the cause.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub path: PathBuf,
    pub line: Option<(usize, usize)>,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some((l, c)) => write!(f, "{}:{l}:{c}: {}", self.path.display(), self.message),
            None => write!(f, "{}: {}", self.path.display(), self.message),
        }
    }
}

/// Paths excluded by the config's `exclude`/`extend-exclude` globs
/// (gitignore syntax, relative to the folder of the config file).
#[derive(Clone, Debug)]
pub struct Exclude {
    matcher: Gitignore,
    /// The folder the globs are relative to (absolute).
    base: PathBuf,
    /// The current folder (absolute), to resolve relative walked paths.
    cwd: PathBuf,
    /// The globs as given (what the project's folder listing is keyed by).
    globs: Vec<String>,
    /// No configuration file: the globs (the default list) name folders to
    /// skip wherever a walked path is, not only under the current folder.
    anywhere: bool,
}

/// `a/./b/../c` → `a/c`, without touching the file system.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

impl Exclude {
    pub fn new(globs: &[String], base: &Path, cwd: &Path) -> Result<Exclude, String> {
        let mut b = GitignoreBuilder::new(base);
        for g in globs {
            b.add_line(None, g)
                .map_err(|e| format!("invalid exclude glob `{g}`: {e}"))?;
        }
        let matcher = b.build().map_err(|e| e.to_string())?;
        Ok(Exclude {
            matcher,
            base: lexical(base),
            cwd: lexical(cwd),
            globs: globs.to_vec(),
            anywhere: false,
        })
    }

    /// The same globs applied wherever a walked path is (the default list,
    /// with no configuration file to anchor them): `locklint check
    /// /abs/repo` run from another folder skips that repository's
    /// `node_modules/` as a run from inside it does.
    pub fn anywhere(mut self) -> Exclude {
        self.anywhere = true;
        self
    }

    /// Everything that decides what is excluded: globs, base, current
    /// folder and whether the globs apply outside the base.
    pub fn signature(&self) -> String {
        format!(
            "{:?}|{:?}|{:?}|{}",
            self.globs, self.base, self.cwd, self.anywhere
        )
    }

    /// How the walk below `root` (a path given, relative to the current
    /// folder or absolute) tests the entries under it. `Some(names)`: an
    /// entry is excluded exactly when its own name is one of `names` —
    /// every glob is a plain name (the default list: `node_modules`,
    /// `vendor`, …), which gitignore matches against the last component
    /// only, so no path is built and no glob set run per entry (that was a
    /// quarter of the walk's time). `None`: ask [`Exclude::is_excluded`].
    pub fn names_below(&self, root: &Path) -> Option<HashSet<std::ffi::OsString>> {
        let plain = |g: &String| {
            !g.is_empty()
                && !g.starts_with('#')
                && g.trim() == g
                && !g.contains(['/', '\\', '*', '?', '[', ']', '!', '{'])
        };
        if !self.globs.iter().all(plain) {
            return None;
        }
        let abs = lexical(&self.cwd.join(root));
        if !self.anywhere && abs.strip_prefix(&self.base).is_err() {
            // outside the folder the globs belong to: nothing is excluded
            return Some(HashSet::new());
        }
        Some(self.globs.iter().map(std::ffi::OsString::from).collect())
    }

    /// Is this walked path (relative to the current folder, or absolute) excluded?
    pub fn is_excluded(&self, path: &Path, is_dir: bool) -> bool {
        let abs = lexical(&self.cwd.join(path));
        match abs.strip_prefix(&self.base) {
            Ok(rel) if !rel.as_os_str().is_empty() => self.matcher.matched(rel, is_dir).is_ignore(),
            Ok(_) => false,
            // outside the base: the path from the root of its file system,
            // which only a glob without a leading `/` can match
            Err(_) if self.anywhere => {
                let rel: PathBuf = abs
                    .components()
                    .filter(|c| matches!(c, Component::Normal(_)))
                    .collect();
                !rel.as_os_str().is_empty() && self.matcher.matched(&rel, is_dir).is_ignore()
            }
            Err(_) => false,
        }
    }
}

/// The configuration, resolved: rule names turned into codes, regexes compiled.
#[derive(Clone, Debug, Default)]
pub struct Config {
    /// The file it was read from (`None`: defaults).
    pub path: Option<PathBuf>,
    pub select: Option<Vec<&'static str>>,
    pub ignore: Vec<&'static str>,
    pub severity: HashMap<&'static str, Severity>,
    /// `exclude` (or the default list) plus `extend-exclude`.
    pub exclude: Vec<String>,
    pub lock_key_patterns: Vec<regex::Regex>,
    pub min_redis_version: Option<(u32, u32)>,
    pub fail_on: Option<FailOn>,
    pub tests: Option<bool>,
    /// Scan minified JavaScript/TypeScript found in folders too (default
    /// false: skipped with a note; `crate::minified`).
    pub include_minified: Option<bool>,
    /// Scan generated files found in folders too (default false: skipped
    /// with a note; `crate::generated`).
    pub include_generated: Option<bool>,
}

impl Config {
    /// Defaults: no file.
    pub fn defaults() -> Config {
        Config {
            exclude: DEFAULT_EXCLUDE.iter().map(|s| s.to_string()).collect(),
            ..Config::default()
        }
    }

    /// The folder `exclude` globs are relative to.
    pub fn base(&self, cwd: &Path) -> PathBuf {
        match self.path.as_ref().and_then(|p| p.parent()) {
            Some(d) if !d.as_os_str().is_empty() => cwd.join(d),
            _ => cwd.to_path_buf(),
        }
    }

    /// The exclusion matcher of this configuration.
    pub fn exclude_matcher(&self, cwd: &Path) -> Result<Exclude, ConfigError> {
        let ex =
            Exclude::new(&self.exclude, &self.base(cwd), cwd).map_err(|message| ConfigError {
                path: self.path.clone().unwrap_or_default(),
                line: None,
                message,
            })?;
        Ok(if self.path.is_none() {
            ex.anywhere()
        } else {
            ex
        })
    }
}

/// `8`, `8.4`, `"7.2"` → (major, minor).
pub fn parse_version(s: &str) -> Result<(u32, u32), String> {
    let mut it = s.trim().split('.');
    let major = it.next().and_then(|m| m.parse().ok());
    let minor = it.next().map(|m| m.parse().ok()).unwrap_or(Some(0));
    match (major, minor, it.next()) {
        (Some(a), Some(b), None) => Ok((a, b)),
        _ => Err(format!(
            "invalid Redis version `{s}`: expected X.Y, e.g. \"7.2\""
        )),
    }
}

/// Finds the configuration for `start` (a folder): the nearest folder
/// upwards with `.locklint.toml`, `locklint.toml`, or a `pyproject.toml`
/// that has a `[tool.locklint]` table.
pub fn discover(start: &Path) -> Option<PathBuf> {
    for dir in start.ancestors() {
        for name in [".locklint.toml", "locklint.toml"] {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
        let py = dir.join("pyproject.toml");
        if py.is_file() {
            if let Ok(text) = std::fs::read_to_string(&py) {
                if has_tool_locklint(&text) {
                    return Some(py);
                }
            }
        }
    }
    None
}

fn has_tool_locklint(text: &str) -> bool {
    match toml::from_str::<toml::Table>(text) {
        Ok(t) => t
            .get("tool")
            .and_then(|t| t.as_table())
            .is_some_and(|t| t.contains_key("locklint")),
        // An invalid pyproject.toml that mentions us is reported, not skipped.
        Err(_) => text.contains("tool.locklint"),
    }
}

/// Reads and resolves a configuration file (a `pyproject.toml` is read for
/// its `[tool.locklint]` table).
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
        path: path.to_path_buf(),
        line: None,
        message: format!(
            "cannot read the configuration: {}",
            crate::walk::io_cause(&e)
        ),
    })?;
    let is_pyproject = path.file_name().is_some_and(|n| n == "pyproject.toml");
    from_text(path, &text, is_pyproject)
}

/// Parses configuration text as if read from `path`.
pub fn from_text(path: &Path, text: &str, is_pyproject: bool) -> Result<Config, ConfigError> {
    let index = LineIndex::new(text);
    let err_at = |offset: Option<usize>, message: String| ConfigError {
        path: path.to_path_buf(),
        line: offset.map(|o| index.line_col(o)),
        message,
    };
    let parsed = if is_pyproject {
        toml::from_str::<PyProject>(text)
            .map(|p| p.tool.and_then(|t| t.locklint).unwrap_or_default())
    } else {
        toml::from_str::<Raw>(text)
    };
    let raw =
        parsed.map_err(|e| err_at(e.span().map(|s| s.start), explain_toml_error(e.message())))?;

    let rule = |s: &Spanned<String>| -> Result<&'static str, ConfigError> {
        let name = s.get_ref().trim();
        filter::lookup(name).map(|m| m.code).ok_or_else(|| {
            err_at(
                Some(s.span().start),
                format!("unknown rule `{name}` ({})", filter::rule_hint(name)),
            )
        })
    };
    let rules = |list: &Option<Vec<Spanned<String>>>| -> Result<Vec<&'static str>, ConfigError> {
        let mut out = Vec::new();
        for s in list.iter().flatten() {
            if s.get_ref().trim().eq_ignore_ascii_case("all") {
                out.extend(filter::all_metas().iter().map(|m| m.code));
            } else {
                out.push(rule(s)?);
            }
        }
        Ok(out)
    };

    let mut cfg = Config::defaults();
    cfg.path = Some(path.to_path_buf());
    cfg.select = match &raw.select {
        Some(_) => Some(rules(&raw.select)?),
        None => None,
    };
    cfg.ignore = rules(&raw.ignore)?;
    for (name, level) in raw.severity.iter().flatten() {
        let at = Some(level.span().start);
        let code = filter::lookup(name).map(|m| m.code).ok_or_else(|| {
            err_at(
                at,
                format!(
                    "unknown rule `{name}` in `severity` ({})",
                    filter::rule_hint(name)
                ),
            )
        })?;
        let sev = match level.get_ref().as_str() {
            "error" => Severity::Error,
            "warning" => Severity::Warning,
            other => {
                return Err(err_at(
                    at,
                    format!(
                    "unknown severity `{other}` for `{name}`: expected \"error\" or \"warning\""
                ),
                ))
            }
        };
        cfg.severity.insert(code, sev);
    }
    if let Some(ex) = raw.exclude {
        cfg.exclude = ex;
    }
    cfg.exclude.extend(raw.extend_exclude.unwrap_or_default());
    for p in raw.lock_key_patterns.iter().flatten() {
        let re = regex::Regex::new(p.get_ref()).map_err(|e| {
            err_at(
                Some(p.span().start),
                format!("invalid regex in `lock-key-patterns`: {e}"),
            )
        })?;
        cfg.lock_key_patterns.push(re);
    }
    if let Some(v) = &raw.min_redis_version {
        let text = match v.get_ref() {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            other => other.to_string(),
        };
        cfg.min_redis_version =
            Some(parse_version(&text).map_err(|e| err_at(Some(v.span().start), e))?);
    }
    if let Some(f) = &raw.fail_on {
        cfg.fail_on = Some(match f.get_ref().as_str() {
            "error" => FailOn::Error,
            "warning" => FailOn::Warning,
            "never" => FailOn::Never,
            other => {
                return Err(err_at(
                    Some(f.span().start),
                    format!("unknown `fail-on` value `{other}`: expected \"error\", \"warning\" or \"never\""),
                ))
            }
        });
    }
    cfg.tests = raw.tests;
    cfg.include_minified = raw.include_minified;
    cfg.include_generated = raw.include_generated;
    Ok(cfg)
}

/// serde's "unknown field `selct`, expected one of …" → "unknown key
/// `selct` (did you mean `select`?)".
fn explain_toml_error(message: &str) -> String {
    let message = message.trim();
    if let Some(rest) = message.strip_prefix("unknown field `") {
        if let Some(end) = rest.find('`') {
            let key = &rest[..end];
            let hint = match nearest(key, KEYS.iter().copied()) {
                Some(k) => format!("did you mean `{k}`?"),
                None => format!("valid keys: {}", KEYS.join(", ")),
            };
            return format!("unknown key `{key}` ({hint})");
        }
    }
    message.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        from_text(Path::new("locklint.toml"), text, false)
    }

    #[test]
    fn reads_every_key() {
        let c = parse(
            r#"
select = ["LL002", "check-then-delete", "LL100"]
ignore = ["LL009"]
severity = { LL007 = "error", "weak-lock-token" = "warning" }
exclude = ["generated/"]
extend-exclude = ["*.gen.go"]
lock-key-patterns = ["^job:.*:owner$"]
min-redis-version = "8.4"
fail-on = "warning"
tests = true
include-minified = true
include-generated = true
"#,
        )
        .unwrap();
        assert_eq!(c.select, Some(vec!["LL002", "LL005", "LL100"]));
        assert_eq!(c.ignore, vec!["LL009"]);
        assert_eq!(c.severity.get("LL007"), Some(&Severity::Error));
        assert_eq!(c.severity.get("LL009"), Some(&Severity::Warning));
        assert_eq!(c.exclude, vec!["generated/", "*.gen.go"]);
        assert_eq!(c.lock_key_patterns.len(), 1);
        assert_eq!(c.min_redis_version, Some((8, 4)));
        assert_eq!(c.fail_on, Some(FailOn::Warning));
        assert_eq!(c.tests, Some(true));
        assert_eq!(c.include_minified, Some(true));
        assert_eq!(parse("").unwrap().include_minified, None);
        assert_eq!(c.include_generated, Some(true));
        assert_eq!(parse("").unwrap().include_generated, None);
    }

    #[test]
    fn unknown_key_names_line_and_suggestion() {
        let e = parse("tests = false\nselct = [\"LL002\"]\n").unwrap_err();
        assert_eq!(e.line.map(|l| l.0), Some(2));
        assert!(
            e.message.contains("did you mean `select`?"),
            "{}",
            e.message
        );
        assert!(e.to_string().starts_with("locklint.toml:2:"), "{e}");
    }

    #[test]
    fn unknown_rule_names_line_and_suggestion() {
        let e =
            parse("\n\nignore = [\n  \"LL001\",\n  \"unconditional-relase\",\n]\n").unwrap_err();
        assert_eq!(e.line.map(|l| l.0), Some(5));
        assert!(
            e.message.contains("did you mean `unconditional-release`?"),
            "{}",
            e.message
        );
        let e = parse("[severity]\nLL0007 = \"error\"\n").unwrap_err();
        assert_eq!(e.line.map(|l| l.0), Some(2));
        assert!(e.message.contains("`LL007`"), "{}", e.message);
    }

    #[test]
    fn pyproject_table() {
        let text = "[project]\nname = \"x\"\n\n[tool.locklint]\nignore = [\"LL009\"]\nfail-on = \"never\"\n";
        let c = from_text(Path::new("pyproject.toml"), text, true).unwrap();
        assert_eq!(c.ignore, vec!["LL009"]);
        assert_eq!(c.fail_on, Some(FailOn::Never));
        let e = from_text(
            Path::new("pyproject.toml"),
            "[tool.locklint]\nexclud = []\n",
            true,
        )
        .unwrap_err();
        assert_eq!(e.line.map(|l| l.0), Some(2));
        assert!(
            e.message.contains("did you mean `exclude`?"),
            "{}",
            e.message
        );
        assert!(has_tool_locklint(text));
        assert!(!has_tool_locklint("[tool.ruff]\n"));
    }

    #[test]
    fn exclude_globs_are_relative_to_the_config_folder() {
        let ex = Exclude::new(
            &["generated/".into(), "*.gen.go".into(), "/top.py".into()],
            Path::new("/repo"),
            Path::new("/repo/sub"),
        )
        .unwrap();
        assert!(ex.is_excluded(Path::new("generated"), true));
        assert!(ex.is_excluded(Path::new("./a/generated"), true));
        assert!(!ex.is_excluded(Path::new("generated"), false));
        assert!(ex.is_excluded(Path::new("x/y.gen.go"), false));
        assert!(!ex.is_excluded(Path::new("top.py"), false)); // /repo/sub/top.py
        assert!(ex.is_excluded(Path::new("../top.py"), false));
        assert!(!ex.is_excluded(Path::new("/elsewhere/x.gen.go"), false));
    }

    #[test]
    fn the_default_excludes_apply_outside_the_current_folder() {
        let cfg = Config::defaults();
        let ex = cfg.exclude_matcher(Path::new("/home/me")).unwrap();
        // a repository named by its absolute path from another folder
        assert!(ex.is_excluded(Path::new("/srv/app/node_modules"), true));
        assert!(ex.is_excluded(Path::new("/srv/app/web/vendor"), true));
        assert!(!ex.is_excluded(Path::new("/srv/app/src"), true));
        assert!(!ex.is_excluded(Path::new("/srv/app/node_modules.py"), false));
        assert!(ex.is_excluded(Path::new("../other/target"), true));
        assert!(ex.is_excluded(Path::new("node_modules"), true));
        // a configuration's globs stay those of its folder
        let ex = Exclude::new(&["vendor".into()], Path::new("/repo"), Path::new("/repo")).unwrap();
        assert!(!ex.is_excluded(Path::new("/srv/app/vendor"), true));
        assert!(ex.is_excluded(Path::new("/repo/x/vendor"), true));
    }

    #[test]
    fn a_plain_name_test_agrees_with_the_globs() {
        let defaults = Config::defaults()
            .exclude_matcher(Path::new("/home/me"))
            .unwrap();
        let plain = Exclude::new(
            &["vendor".into(), "gen.py".into()],
            Path::new("/repo"),
            Path::new("/repo/sub"),
        )
        .unwrap();
        let entries = [
            "node_modules",
            "a/node_modules",
            "node_modules.py",
            "a/vendor",
            "vendor/x.go",
            "x/gen.py",
            "x/gen.pyc",
            "src",
            "target",
            ".git",
            ".gitignore",
            "__pycache__",
        ];
        for (ex, roots) in [
            (&defaults, &["/srv/app", ".", "../other", "/home/me/x"][..]),
            (
                &plain,
                &["/repo", ".", "..", "../..", "/elsewhere", "x/../y"][..],
            ),
        ] {
            for root in roots {
                let names = ex.names_below(Path::new(root)).expect("plain names");
                for e in entries {
                    let path = Path::new(root).join(e);
                    for dir in [true, false] {
                        assert_eq!(
                            path.file_name().is_some_and(|n| names.contains(n)),
                            ex.is_excluded(&path, dir),
                            "{} (dir: {dir})",
                            path.display()
                        );
                    }
                }
            }
        }
        // a glob with a slash or a wildcard is left to the glob set
        let globs = Exclude::new(&["*.gen.go".into()], Path::new("/r"), Path::new("/r")).unwrap();
        assert!(globs.names_below(Path::new(".")).is_none());
        let slash = Exclude::new(&["gen/".into()], Path::new("/r"), Path::new("/r")).unwrap();
        assert!(slash.names_below(Path::new(".")).is_none());
    }
}
