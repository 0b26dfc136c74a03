//! reviewdog Diagnostic Format (rdjson): `reviewdog -f=rdjson` turns it into
//! review comments on GitHub, GitLab, Bitbucket or Gerrit. Columns are
//! 1-based UTF-8 byte counts, as the format asks.

use super::{EmitOptions, Emitter};
use crate::filter::baseline::normalise_path;
use crate::finding::{Applicability, LineIndex, Report, Severity};
use serde_json::json;
use std::io::{self, Write};

pub struct Rdjson;

/// A 1-based character column of `line` as a 1-based byte column.
fn byte_column(index: Option<&LineIndex>, line: usize, column: usize) -> usize {
    let Some(index) = index else {
        return column;
    };
    let text = index.line_text(line);
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
}

impl Emitter for Rdjson {
    fn emit(&self, report: &Report, _opts: &EmitOptions, out: &mut dyn Write) -> io::Result<()> {
        // (findings come sorted by path: each file's line index once, not
        // once per finding — 10,000 findings in one file took 1.6 s)
        let mut indexed: Option<(&str, Option<LineIndex>)> = None;
        let diagnostics: Vec<_> = report
            .findings
            .iter()
            .map(|f| {
                if indexed.as_ref().is_none_or(|(p, _)| *p != f.path) {
                    let index = report.sources.get(&f.path).map(|s| LineIndex::new(s));
                    indexed = Some((&f.path, index));
                }
                let index = indexed.as_ref().and_then(|(_, i)| i.as_ref());
                let mut message = f.message.clone();
                if !f.help.is_empty() {
                    message.push_str("\nhelp: ");
                    message.push_str(&f.help);
                }
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
                    "code": { "value": format!("{} {}", f.code, f.name) },
                })
            })
            .collect();
        let doc = json!({
            "source": { "name": "locklint", "url": super::sarif::information_uri() },
            "diagnostics": diagnostics,
        });
        serde_json::to_writer_pretty(&mut *out, &doc)?;
        writeln!(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_columns() {
        let src = "é = con.del(k)\n";
        let index = LineIndex::new(src);
        assert_eq!(byte_column(Some(&index), 1, 5), 6);
        assert_eq!(byte_column(Some(&index), 1, 1), 1);
        assert_eq!(byte_column(None, 1, 5), 5);
    }
}
