//! `--changed-since REV`: keep only findings on lines added or changed since
//! a git revision (`git diff --unified=0 REV`, working tree included), plus
//! every line of untracked files. For pull-request gates and review bots.

use crate::finding::Report;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Added or changed lines per file (absolute, canonical paths).
#[derive(Clone, Debug, Default)]
pub struct ChangedLines {
    /// 1-based line ranges (inclusive) per file.
    lines: HashMap<PathBuf, Vec<(usize, usize)>>,
    /// Files that are new as a whole (untracked).
    whole: HashSet<PathBuf>,
}

fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run git: {}", crate::walk::io_cause(&e)))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let first = err
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim();
        return Err(format!("`git {}` failed: {first}", args.join(" ")));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

impl ChangedLines {
    /// Asks git, from the repository that contains `cwd`, what changed since `rev`.
    pub fn since(rev: &str, cwd: &Path) -> Result<ChangedLines, String> {
        if rev.starts_with('-') {
            return Err(format!("--changed-since: `{rev}` is not a revision"));
        }
        let top = git(cwd, &["rev-parse", "--show-toplevel"])
            .map_err(|e| format!("--changed-since needs a git repository: {e}"))?;
        let top = PathBuf::from(top.trim_end_matches(['\n', '\r']));
        let top = top.canonicalize().unwrap_or(top);
        // Fail early and clearly on an unknown revision.
        git(
            &top,
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                &format!("{rev}^{{commit}}"),
            ],
        )
        .map_err(|_| format!("--changed-since: unknown git revision `{rev}`"))?;
        let diff = git(
            &top,
            &[
                "-c",
                "core.quotePath=false",
                "diff",
                "--unified=0",
                "--no-color",
                "--no-ext-diff",
                "--src-prefix=a/",
                "--dst-prefix=b/",
                rev,
                "--",
            ],
        )?;
        let mut changed = parse_diff(&diff, &top);
        let untracked = git(&top, &["ls-files", "--others", "--exclude-standard", "-z"])?;
        for p in untracked.split('\0').filter(|p| !p.is_empty()) {
            changed.whole.insert(top.join(p));
        }
        Ok(changed)
    }

    /// Is any line of `first..=last` of `path` (as printed, relative to
    /// `cwd` or absolute) added or changed?
    pub fn touches(&self, path: &Path, first: usize, last: usize, cwd: &Path) -> bool {
        let abs = if path.is_absolute() {
            path.to_path_buf()
        } else {
            cwd.join(path)
        };
        let abs = abs.canonicalize().unwrap_or(abs);
        if self.whole.contains(&abs) {
            return true;
        }
        self.lines.get(&abs).is_some_and(|ranges| {
            ranges
                .iter()
                .any(|&(a, b)| a <= last.max(first) && first <= b)
        })
    }

    /// Keeps only the findings on changed lines; returns how many were dropped.
    pub fn filter(&self, report: &mut Report, cwd: &Path) -> usize {
        let before = report.findings.len();
        report.findings.retain(|f| {
            self.touches(
                Path::new(&*f.path),
                f.line as usize,
                f.end_line as usize,
                cwd,
            )
        });
        before - report.findings.len()
    }
}

/// Reads `git diff --unified=0` output: `+++ b/path` then
/// `@@ -a,b +c,d @@` hunks, whose added lines are `c..c+d` (`d` defaults to 1).
pub fn parse_diff(diff: &str, top: &Path) -> ChangedLines {
    let mut out = ChangedLines::default();
    let mut current: Option<PathBuf> = None;
    for line in diff.lines() {
        if let Some(p) = line.strip_prefix("+++ ") {
            current = p
                .strip_prefix("b/")
                .map(|rel| top.join(rel.trim_end_matches('\t')));
            continue;
        }
        let Some(rest) = line.strip_prefix("@@ ") else {
            continue;
        };
        let Some(file) = &current else {
            continue;
        };
        let Some(plus) = rest.split_whitespace().find(|t| t.starts_with('+')) else {
            continue;
        };
        let mut it = plus[1..].splitn(2, ',');
        let start: usize = match it.next().and_then(|s| s.parse().ok()) {
            Some(s) => s,
            None => continue,
        };
        let count: usize = match it.next() {
            Some(c) => c.parse().unwrap_or(0),
            None => 1,
        };
        if count == 0 {
            continue;
        }
        out.lines
            .entry(file.clone())
            .or_default()
            .push((start, start + count - 1));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_hunks() {
        let diff = "diff --git a/src/x.rs b/src/x.rs\n--- a/src/x.rs\n+++ b/src/x.rs\n@@ -3,0 +4,2 @@ fn f()\n+a\n+b\n@@ -10 +12 @@\n-x\n+y\n@@ -20,3 +21,0 @@\n-gone\n--- /dev/null\n+++ b/new.py\n@@ -0,0 +1,3 @@\n";
        let c = parse_diff(diff, Path::new("/r"));
        let x = &c.lines[Path::new("/r/src/x.rs")];
        assert_eq!(x, &vec![(4, 5), (12, 12)]);
        assert_eq!(c.lines[Path::new("/r/new.py")], vec![(1, 3)]);
        let cwd = Path::new("/r");
        assert!(c.touches(Path::new("src/x.rs"), 5, 5, cwd));
        assert!(c.touches(Path::new("src/x.rs"), 11, 12, cwd));
        assert!(!c.touches(Path::new("src/x.rs"), 6, 6, cwd));
        assert!(!c.touches(Path::new("src/x.rs"), 21, 21, cwd));
        assert!(!c.touches(Path::new("src/other.rs"), 4, 4, cwd));
    }
}
