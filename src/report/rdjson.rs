//! reviewdog Diagnostic Format (rdjson): `reviewdog -f=rdjson` turns it into
//! review comments on GitHub, GitLab, Bitbucket or Gerrit. Columns are
//! 1-based UTF-8 byte counts, as the format asks.

use super::{EmitOptions, Emitter};
use crate::filter::baseline::normalise_path;
use crate::finding::{Applicability, Finding, LineIndex, Report, Severity};
use serde_json::json;
use std::io::{self, Write};

pub struct Rdjson;

/// A 1-based character column of `line` as a 1-based byte column.
fn byte_column(index: Option<&LineIndex>, line: u32, column: u32) -> usize {
    match index {
        Some(index) => index.byte_column(line as usize, column as usize),
        None => column as usize,
    }
}

impl Emitter for Rdjson {
    fn emit(&self, report: &Report, _opts: &EmitOptions, out: &mut dyn Write) -> io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, &Document(report))?;
        writeln!(out)
    }
}

/// The rdjson document of a report, serialized as it is built: one
/// diagnostic at a time (10,000 findings as one value took 164 MB), its
/// keys in the order a `json!` object gives them (sorted).
struct Document<'a>(&'a Report);

/// The diagnostics of a [`Document`], each made and written in turn.
struct Diagnostics<'a>(&'a Report);

impl serde::Serialize for Document<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("diagnostics", &Diagnostics(self.0))?;
        m.serialize_entry(
            "source",
            &json!({ "name": "locklint", "url": super::sarif::information_uri() }),
        )?;
        m.end()
    }
}

impl serde::Serialize for Diagnostics<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let report = self.0;
        // (findings come sorted by path: each file's line index once, not
        // once per finding — 10,000 findings in one file took 1.6 s)
        let mut indexed: Option<(&str, Option<LineIndex>)> = None;
        s.collect_seq(report.findings.iter().map(|f| {
            if indexed.as_ref().is_none_or(|(p, _)| *p != &*f.path) {
                let index = report.sources.get(&*f.path).map(|s| LineIndex::new(s));
                indexed = Some((&f.path, index));
            }
            diagnostic(f, indexed.as_ref().and_then(|(_, i)| i.as_ref()))
        }))
    }
}

/// One finding as an rdjson diagnostic.
fn diagnostic(f: &Finding, index: Option<&LineIndex>) -> serde_json::Value {
    let message = f.full_message(false);
    // --- fix (issue 11): applicable fixes as suggested changes ---
    let suggestions: Vec<_> = f
        .fix
        .iter()
        .filter(|x| x.applicability != Applicability::DisplayOnly)
        .flat_map(|x| x.edits.iter())
        .map(|e| {
            json!({
                "range": {
                    "start": { "line": e.line, "column": byte_column(index, e.line, e.column) },
                    "end": { "line": e.end_line, "column": byte_column(index, e.end_line, e.end_column) },
                },
                "text": e.replacement,
            })
        })
        .collect();
    // --- end fix ---
    json!({
        "suggestions": suggestions,
        "message": message,
        "location": {
            "path": normalise_path(&f.path),
            "range": {
                "start": { "line": f.line, "column": byte_column(index, f.line, f.column) },
                "end": { "line": f.end_line, "column": byte_column(index, f.end_line, f.end_column) },
            },
        },
        "severity": match f.severity {
            Severity::Error => "ERROR",
            Severity::Warning => "WARNING",
        },
        "source": { "name": "locklint" },
        "code": { "value": format!("{} {}", f.code(), f.name()) },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The index's byte column is the one counted over the line's
    /// characters, for every line and column of mixed-width text, long
    /// lines across the index's checkpoints included.
    #[test]
    fn byte_columns_are_counted_ones() {
        let reference = |text: &str, column: usize| {
            let bytes: usize = text
                .chars()
                .take(column.saturating_sub(1))
                .map(char::len_utf8)
                .sum();
            bytes
                + 1
                + column
                    .saturating_sub(1)
                    .saturating_sub(text.chars().count())
        };
        let long: String = (0..3000).map(|i| ["a", "é", "日", "𝄞"][i % 4]).collect();
        for src in [
            "".to_string(),
            "ascii only\nsecond\r\n".to_string(),
            "é = con.del(k)\nx\n日本 = 1\r\n".to_string(),
            format!("a\n{long}\n{long}b\nz"),
            format!("{}\n{long}", "x".repeat(5000)),
        ] {
            let index = LineIndex::new(&src);
            for line in 0..=src.lines().count() + 1 {
                let text = index.line_text(line);
                let n = text.chars().count();
                for column in (0..n + 3).filter(|c| *c < 40 || c % 97 == 0 || *c + 3 >= n) {
                    assert_eq!(
                        byte_column(Some(&index), line as u32, column as u32),
                        reference(text, column),
                        "line {line} column {column}"
                    );
                }
            }
        }
    }

    #[test]
    fn byte_columns() {
        let src = "é = con.del(k)\n";
        let index = LineIndex::new(src);
        assert_eq!(byte_column(Some(&index), 1, 5), 6);
        assert_eq!(byte_column(Some(&index), 1, 1), 1);
        assert_eq!(byte_column(None, 1, 5), 5);
    }
}
