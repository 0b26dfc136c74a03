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

/// Feeds [`normalise_line`]'s bytes of `text` to `h`, without writing
/// them out (a minified line of findings is megabytes long).
fn update_normalised(h: &mut Sha256, text: &str) {
    for (i, word) in text.split_whitespace().enumerate() {
        if i > 0 {
            h.update(b" ");
        }
        h.update(word.as_bytes());
    }
}

/// A hash of [`normalise_line`] of `text` by `state` (lines that read
/// alike have the same), without a copy of it; [`reads_alike`] tells a
/// collision apart (a keyed `state`, `RandomState`, leaves no input a way
/// to make many).
pub fn normalised_hash(text: &str, state: &impl std::hash::BuildHasher) -> u64 {
    use std::hash::Hasher;
    let mut h = state.build_hasher();
    for word in text.split_whitespace() {
        h.write(word.as_bytes());
        h.write_u8(0xff);
    }
    h.finish()
}

/// [`normalise_line`] of `a` and of `b` are the same.
pub fn reads_alike(a: &str, b: &str) -> bool {
    a.split_whitespace().eq(b.split_whitespace())
}

/// The fingerprint of the `occurrence`-th (1-based) finding of `code` on a
/// line reading `line_text` in `path`.
pub fn fingerprint(code: &str, path: &str, line_text: &str, occurrence: usize) -> Fingerprint {
    let prefix = fingerprint_prefix(code, &normalise_path(path), line_text);
    fingerprint_finish(&prefix, occurrence)
}

/// The hash state of [`fingerprint`] before the occurrence index, from the
/// normalised path and the line as written (normalised as it is hashed,
/// [`normalise_line`]'s bytes without a copy of them): the engine hashes a
/// line once and finishes it per finding, so a huge line is not hashed
/// again for each of its findings.
pub fn fingerprint_prefix(code: &str, normalised_path: &str, text: &str) -> Sha256 {
    let mut h = Sha256::new();
    h.update(code.as_bytes());
    h.update(b"\0");
    h.update(normalised_path.as_bytes());
    h.update(b"\0");
    update_normalised(&mut h, text);
    h.update(b"\0");
    h
}

/// [`fingerprint`] from its [`fingerprint_prefix`].
pub fn fingerprint_finish(prefix: &Sha256, occurrence: usize) -> Fingerprint {
    let mut h = prefix.clone();
    h.update(occurrence.to_string().as_bytes());
    let digest = h.finalize();
    let mut hex = [0u8; 16];
    for (i, b) in digest[..8].iter().enumerate() {
        hex[2 * i] = HEX[usize::from(b >> 4)];
        hex[2 * i + 1] = HEX[usize::from(b & 15)];
    }
    Fingerprint(hex)
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// A finding's fingerprint: 16 lowercase hex digits, kept in place (as a
/// `String` it cost 40 bytes more a finding, a file of dense findings
/// holds 10,000).
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Fingerprint([u8; 16]);

impl Fingerprint {
    pub fn as_str(&self) -> &str {
        self
    }
}

impl std::ops::Deref for Fingerprint {
    type Target = str;
    fn deref(&self) -> &str {
        // (hex digits only: never fails)
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

impl std::fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self)
    }
}

impl std::fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

impl Serialize for Fingerprint {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self)
    }
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
        self.fingerprints.contains(&*f.fingerprint)
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
                fingerprint: f.fingerprint.to_string(),
                code: f.code().to_string(),
                path: normalise_path(&f.path),
                line: f.line as usize,
                message: f.message().to_string(),
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
    fn a_line_hashes_as_its_normalised_copy() {
        let rs = std::collections::hash_map::RandomState::new();
        let lines = [
            "",
            "   ",
            "redis.del(key)",
            "  \tredis.del( key ,\t tok )  ",
            "a\u{3000}b\u{a0}c  d",
            "x",
        ];
        for text in lines {
            let norm = normalise_line(text);
            // the bytes hashed: code, path and the normalised copy
            let by_copy = Sha256::digest(format!("LL002\0src/a.py\0{norm}\0").as_bytes());
            let by_line = fingerprint_prefix("LL002", "src/a.py", text).finalize();
            assert_eq!(by_copy, by_line, "{text:?}");
            assert!(reads_alike(text, &norm), "{text:?}");
            assert_eq!(
                normalised_hash(text, &rs),
                normalised_hash(&norm, &rs),
                "{text:?}"
            );
        }
        // lines alike but for whitespace read alike and hash alike
        assert!(reads_alike("a  b\t", " a b"));
        assert_eq!(normalised_hash("a  b\t", &rs), normalised_hash(" a b", &rs));
        assert!(!reads_alike("a b", "ab") && !reads_alike("a b", "a b c"));
        assert_ne!(normalised_hash("a b", &rs), normalised_hash("ab", &rs));
    }

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
        // written out in hex as before it was kept in place: the
        // baselines of earlier versions still match
        assert_eq!(a.as_str(), "ab7a6617d341f837");
    }
}
