//! The project root (SPEC §5): findings are reported only for the paths
//! given, but summaries come from the whole project, the nearest enclosing
//! folder that holds `.git` or a locklint config (`--project-root DIR`
//! overrides).

use std::path::{Path, PathBuf};

/// Files that mark a project root besides `.git`.
const MARKERS: &[&str] = &[".git", ".locklint.toml", "locklint.toml"];

/// The project root of the first of `paths`: the nearest folder upwards
/// (from the path itself when it is a folder) that holds `.git`, a
/// `locklint.toml`/`.locklint.toml`, or a `pyproject.toml` with
/// `[tool.locklint]`. Relative to `cwd` when it lies under it.
pub fn find(paths: &[PathBuf], cwd: &Path) -> Option<PathBuf> {
    let first = paths.first()?;
    let abs = if first.is_absolute() {
        first.clone()
    } else {
        cwd.join(first)
    };
    let abs = abs.canonicalize().unwrap_or(abs);
    let start = if abs.is_dir() {
        abs.as_path()
    } else {
        abs.parent()?
    };
    let root = start.ancestors().find(|dir| {
        MARKERS.iter().any(|m| dir.join(m).exists())
            || crate::config::discover(dir).is_some_and(|c| c.parent() == Some(*dir))
    })?;
    let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    Some(match root.strip_prefix(&cwd) {
        Ok(rel) if rel.as_os_str().is_empty() => PathBuf::from("."),
        Ok(rel) => rel.to_path_buf(),
        Err(_) => root.to_path_buf(),
    })
}

/// The given paths already cover the root (a run on the whole project).
pub fn covered_by(root: &Path, paths: &[PathBuf]) -> bool {
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let root = canon(root);
    paths.iter().any(|p| root.starts_with(canon(p)))
}
