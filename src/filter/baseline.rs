//! Fingerprints and baselines.
//!
//! A fingerprint is a short hash of the rule code, the file path (as given,
//! with `./` and `\` normalised away), the whitespace-normalised text of the
//! finding's line, and the occurrence index of that (code, line text) pair
//! in the file. It does not contain a line number, so it survives lines
//! inserted or removed above the finding, and it changes when the offending
//! line itself changes.
//!
//! A baseline file is JSON: the fingerprints of the findings a legacy
//! codebase already has, plus enough context for a human to read it.

use crate::finding::{Finding, Report};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashSet;
use std::path::Path;

/// The path as it goes into fingerprints and SARIF: `/` separators, no
/// leading `./`, no `.` components.
pub fn normalise_path(path: &str) -> String {
    let p = path.replace('\\', "/");
    let absolute = p.starts_with('/');
    let parts: Vec<&str> = p
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    let joined = parts.join("/");
    if absolute {
        format!("/{joined}")
    } else {
        joined
    }
}

/// A line's text with runs of whitespace collapsed to one space.
pub fn normalise_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The fingerprint of the `occurrence`-th (1-based) finding of `code` on a
/// line reading `line_text` in `path`.
pub fn fingerprint(code: &str, path: &str, line_text: &str, occurrence: usize) -> String {
    let prefix = fingerprint_prefix(code, &normalise_path(path), &normalise_line(line_text));
    fingerprint_finish(&prefix, occurrence)
}

/// The hash state of [`fingerprint`] before the occurrence index, from the
/// normalised path and line: the engine hashes a line once and finishes it
/// per finding, so a huge line is not hashed again for each of its findings.
pub fn fingerprint_prefix(code: &str, normalised_path: &str, normalised_line: &str) -> Sha256 {
    let mut h = Sha256::new();
    h.update(code.as_bytes());
    h.update(b"\0");
    h.update(normalised_path.as_bytes());
    h.update(b"\0");
    h.update(normalised_line.as_bytes());
    h.update(b"\0");
    h
}

/// [`fingerprint`] from its [`fingerprint_prefix`].
pub fn fingerprint_finish(prefix: &Sha256, occurrence: usize) -> String {
    let mut h = prefix.clone();
    h.update(occurrence.to_string().as_bytes());
    let digest = h.finalize();
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

#[derive(Serialize, Deserialize)]
struct File {
    /// Format marker and version.
    locklint_baseline: u32,
    findings: Vec<Entry>,
}

#[derive(Serialize, Deserialize)]
struct Entry {
    fingerprint: String,
    #[serde(default)]
    code: String,
    #[serde(default)]
    path: String,
    #[serde(default)]
    line: usize,
    #[serde(default)]
    message: String,
}

/// The fingerprints of a baseline file.
#[derive(Clone, Debug, Default)]
pub struct Baseline {
    fingerprints: HashSet<String>,
}

impl Baseline {
    pub fn read(path: &Path) -> Result<Baseline, String> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            format!(
                "{}: cannot read the baseline: {}",
                path.display(),
                crate::walk::io_cause(&e)
            )
        })?;
        let file: File = serde_json::from_str(&text).map_err(|e| {
            format!(
                "{}:{}: not a locklint baseline ({e}); write one with `--write-baseline`",
                path.display(),
                e.line()
            )
        })?;
        Ok(Baseline {
            fingerprints: file.findings.into_iter().map(|e| e.fingerprint).collect(),
        })
    }

    pub fn contains(&self, f: &Finding) -> bool {
        self.fingerprints.contains(&f.fingerprint)
    }

    /// Drops the findings of the baseline; returns how many were dropped.
    pub fn filter(&self, report: &mut Report) -> usize {
        let before = report.findings.len();
        report.findings.retain(|f| !self.contains(f));
        before - report.findings.len()
    }
}

/// Writes the fingerprints of every finding of `report` to `path`.
pub fn write(path: &Path, report: &Report) -> Result<(), String> {
    let file = File {
        locklint_baseline: 1,
        findings: report
            .findings
            .iter()
            .map(|f| Entry {
                fingerprint: f.fingerprint.clone(),
                code: f.code.to_string(),
                path: normalise_path(&f.path),
                line: f.line,
                message: f.message.clone(),
            })
            .collect(),
    };
    let mut text = serde_json::to_string_pretty(&file).map_err(|e| e.to_string())?;
    text.push('\n');
    std::fs::write(path, text).map_err(|e| {
        format!(
            "{}: cannot write the baseline: {}",
            path.display(),
            crate::walk::io_cause(&e)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_normalised() {
        assert_eq!(normalise_path("./src/lock.rs"), "src/lock.rs");
        assert_eq!(normalise_path("src\\lock.rs"), "src/lock.rs");
        assert_eq!(normalise_path("./a/./b.rs"), "a/b.rs");
        assert_eq!(normalise_path("/abs/x.rs"), "/abs/x.rs");
    }

    #[test]
    fn fingerprints_ignore_indentation_and_spelling_of_the_path() {
        let a = fingerprint("LL002", "./src/x.rs", "    con.del(&key)?;", 1);
        assert_eq!(a, fingerprint("LL002", "src/x.rs", "con.del(&key)?;  ", 1));
        assert_ne!(a, fingerprint("LL002", "src/x.rs", "con.del(&other)?;", 1));
        assert_ne!(a, fingerprint("LL002", "src/x.rs", "con.del(&key)?;", 2));
        assert_ne!(a, fingerprint("LL001", "src/x.rs", "con.del(&key)?;", 1));
        assert_ne!(a, fingerprint("LL002", "src/y.rs", "con.del(&key)?;", 1));
        assert_eq!(a.len(), 16);
    }
}
