//! What the engine reports: findings with resolved positions, per-file errors,
//! and the whole report the reporters print.

use crate::facts::{Language, Span};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

/// A secondary labelled place of a finding (e.g. the EXPIRE of LL003).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Label {
    pub span: Span,
    pub line: usize,
    pub column: usize,
    pub text: String,
}

/// How far a fix may be applied without the author's eye (ruff's terms).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Applicability {
    /// Shown as a suggestion only; never applied (`--fix` skips it).
    DisplayOnly,
    /// Correct, but changes what the code returns or needs: `--unsafe-fixes`.
    Unsafe,
    /// What the author clearly meant, nothing else to change: `--fix`.
    Safe,
}

impl Applicability {
    pub fn as_str(self) -> &'static str {
        match self {
            Applicability::Safe => "safe",
            Applicability::Unsafe => "unsafe",
            Applicability::DisplayOnly => "display-only",
        }
    }
}

/// One text edit: replace the bytes `span` of the file with `replacement`.
/// Lines and columns (1-based, columns in characters) are resolved by the engine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edit {
    pub span: Span,
    pub replacement: String,
    pub line: usize,
    pub column: usize,
    pub end_line: usize,
    pub end_column: usize,
}

/// A fix of one finding: edits that do not overlap, sorted by position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fix {
    pub applicability: Applicability,
    /// One line: what the fix does.
    pub message: String,
    pub edits: Vec<Edit>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub code: &'static str,
    pub name: &'static str,
    pub severity: Severity,
    pub path: String,
    pub line: usize,
    pub column: usize,
    pub end_line: usize,
    pub end_column: usize,
    pub message: String,
    /// The label under the primary span.
    pub label: String,
    pub help: String,
    pub note: Option<String>,
    pub language: Language,
    pub fingerprint: String,
    pub span: Span,
    pub labels: Vec<Label>,
    /// A machine-applicable change, when the rule and the client allow one.
    pub fix: Option<Fix>,
}

impl Finding {
    pub fn sort_key(&self) -> (&str, usize, usize, &str) {
        (&self.path, self.line, self.column, self.code)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct FileError {
    pub path: String,
    pub message: String,
}

#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Sorted by path, line, column, code.
    pub findings: Vec<Finding>,
    /// Sorted by path.
    pub errors: Vec<FileError>,
    pub files_scanned: usize,
    pub duration_ms: u64,
    /// Source text of every file that has a finding, for excerpts.
    pub sources: BTreeMap<String, Arc<str>>,
    /// Verbose notes per file (e.g. a parser fallback).
    pub notes: Vec<(String, String)>,
}

impl Report {
    pub fn count(&self, sev: Severity) -> usize {
        self.findings.iter().filter(|f| f.severity == sev).count()
    }

    pub fn files_with_findings(&self) -> usize {
        let mut paths: Vec<&str> = self.findings.iter().map(|f| f.path.as_str()).collect();
        paths.dedup();
        paths.len()
    }

    pub fn sort(&mut self) {
        self.findings
            .sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
        self.errors.sort();
        self.notes.sort();
    }
}

/// Byte offset → 1-based line and 1-based column counted in characters.
pub struct LineIndex<'a> {
    src: &'a str,
    starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    pub fn new(src: &'a str) -> Self {
        let mut starts = vec![0];
        starts.extend(memchr::memchr_iter(b'\n', src.as_bytes()).map(|i| i + 1));
        LineIndex { src, starts }
    }

    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let mut offset = offset.min(self.src.len());
        while !self.src.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.starts.partition_point(|&s| s <= offset);
        let start = self.starts[line - 1];
        let col = self.src[start..offset].chars().count() + 1;
        (line, col)
    }

    /// The text of a 1-based line, without its line ending.
    pub fn line_text(&self, line: usize) -> &'a str {
        if line == 0 || line > self.starts.len() {
            return "";
        }
        let start = self.starts[line - 1];
        let end = self.starts.get(line).copied().unwrap_or(self.src.len());
        self.src[start..end].trim_end_matches(['\n', '\r'])
    }
}
