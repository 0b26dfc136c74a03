//! The hard runtime limit a deployment platform sets for a JavaScript or
//! TypeScript file's runs from outside the file: the `functions` of the
//! nearest `vercel.json` at or above it (up to the project root), whose
//! glob keys are relative to the folder of that `vercel.json` and whose
//! `maxDuration` is the limit in seconds (SPEC §2 "Expirable lock").
//!
//! Applied to a file's facts after phase one, never inside them: the
//! per-file cache keys facts by the file's own text, and a `vercel.json`
//! edited alone must not leave a cached limit behind. A file's own
//! `export const maxDuration` (read by the front-end) wins.

use crate::facts::{FileFacts, Language};
use globset::{GlobBuilder, GlobMatcher};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The file name the platform reads its configuration from.
const CONFIG: &str = "vercel.json";

/// Largest `vercel.json` read; a larger one is not a deployment config.
const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// One `vercel.json`: its `functions` globs with their `maxDuration`.
struct Config {
    functions: Vec<(GlobMatcher, u64)>,
}

impl Config {
    /// The config in `text`; one that is not JSON or has no `functions`
    /// sets no limit (it is still the nearest config: none above is read).
    fn parse(text: &str) -> Config {
        let json: serde_json::Value = serde_json::from_str(text).unwrap_or_default();
        let mut out = Vec::new();
        let functions = json.get("functions").and_then(|f| f.as_object());
        for (pattern, spec) in functions.into_iter().flatten() {
            let Some(secs) = spec.get("maxDuration").and_then(|d| d.as_u64()) else {
                continue;
            };
            let Ok(glob) = GlobBuilder::new(pattern.trim_start_matches("./"))
                .literal_separator(true)
                .build()
            else {
                continue;
            };
            out.push((glob.compile_matcher(), secs));
        }
        Config { functions: out }
    }

    /// The limit for the file at `rel` (relative to this config's folder,
    /// `/`-separated): the smallest `maxDuration` among the globs that
    /// match it, so that several matching globs never lift a limit.
    fn limit(&self, rel: &str) -> Option<u64> {
        self.functions
            .iter()
            .filter(|(g, _)| g.is_match(rel))
            .map(|(_, secs)| *secs)
            .min()
    }
}

/// Sets the run limit of every JavaScript/TypeScript file that declares
/// none itself from the nearest `vercel.json` at or above it. Each folder
/// is looked at once per run.
pub fn apply<'a>(files: impl Iterator<Item = (&'a Path, &'a mut FileFacts)>, root: Option<&Path>) {
    let root = root.map(|r| r.canonicalize().unwrap_or_else(|_| r.to_path_buf()));
    // folder -> its parsed vercel.json (None: none there)
    let mut seen: HashMap<PathBuf, Option<Config>> = HashMap::new();
    for (path, facts) in files {
        if !matches!(facts.language, Language::JavaScript | Language::TypeScript)
            || facts.run_limit_secs.is_some()
            || facts.ops.is_empty()
        {
            continue;
        }
        let Ok(file) = path.canonicalize() else {
            continue;
        };
        facts.run_limit_secs = limit_for(&file, root.as_deref(), &mut seen);
    }
}

/// The limit the nearest `vercel.json` at or above `file` gives it; the
/// search stops at `root` (inclusive) when the file lies under it.
fn limit_for(
    file: &Path,
    root: Option<&Path>,
    seen: &mut HashMap<PathBuf, Option<Config>>,
) -> Option<u64> {
    let root = root.filter(|r| file.starts_with(r));
    for dir in file.ancestors().skip(1) {
        let config = seen
            .entry(dir.to_path_buf())
            .or_insert_with(|| read_config(&dir.join(CONFIG)));
        if let Some(config) = config {
            let rel = file.strip_prefix(dir).ok()?;
            let rel: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            return config.limit(&rel.join("/"));
        }
        if root.is_some_and(|r| r == dir) {
            break;
        }
    }
    None
}

/// The config at `path`; `None` when there is no such file.
fn read_config(path: &Path) -> Option<Config> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() {
        return None;
    }
    let text = if meta.len() > MAX_CONFIG_BYTES {
        String::new()
    } else {
        std::fs::read_to_string(path).unwrap_or_default()
    };
    Some(Config::parse(&text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_are_relative_and_do_not_cross_folders_with_one_star() {
        let c = Config::parse(
            r#"{"functions": {"app/(ee)/api/cron/**/*.ts": {"maxDuration": 600},
                "api/*.js": {"maxDuration": 30}, "api/x.js": {"maxDuration": 10},
                "other/*.ts": {"memory": 1024}}}"#,
        );
        assert_eq!(c.limit("app/(ee)/api/cron/queue/retry/route.ts"), Some(600));
        assert_eq!(c.limit("app/(ee)/api/cron/route.ts"), Some(600));
        assert_eq!(c.limit("app/(ee)/api/other/route.ts"), None);
        assert_eq!(c.limit("api/deep/a.js"), None);
        assert_eq!(c.limit("api/a.js"), Some(30));
        assert_eq!(c.limit("api/x.js"), Some(10));
        assert_eq!(c.limit("other/a.ts"), None);
    }

    #[test]
    fn no_functions_or_bad_json_gives_nothing() {
        assert!(Config::parse(r#"{"crons": []}"#).functions.is_empty());
        assert!(Config::parse("{ not json").functions.is_empty());
    }
}
