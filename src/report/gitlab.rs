//! GitLab Code Quality report: a JSON array of issues
//! (`description`, `check_name`, `fingerprint`, `severity`, `location.path`,
//! `location.lines.begin`), shown in merge request widgets and diffs.

use super::{EmitOptions, Emitter};
use crate::filter::baseline::normalise_path;
use crate::finding::{Report, Severity};
use serde_json::json;
use std::io::{self, Write};

pub struct Gitlab;

impl Emitter for Gitlab {
    fn emit(&self, report: &Report, _opts: &EmitOptions, out: &mut dyn Write) -> io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, &Issues(report))?;
        writeln!(out)
    }
}

/// The issues of a report, each made and written in turn (10,000
/// findings as one value took 92 MB).
struct Issues<'a>(&'a Report);

impl serde::Serialize for Issues<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.findings.iter().map(|f| {
            json!({
                "type": "issue",
                "engine_name": "locklint",
                "check_name": format!("{} {}", f.code(), f.name()),
                "description": format!("{}: {}", f.code(), f.message()),
                "content": { "body": format!("help: {}", f.help()) },
                "categories": ["Bug Risk"],
                "severity": match f.severity {
                    Severity::Error => "major",
                    Severity::Warning => "minor",
                },
                "fingerprint": f.fingerprint,
                "location": {
                    "path": normalise_path(&f.path),
                    "lines": { "begin": f.line, "end": f.end_line.max(f.line) },
                },
            })
        }))
    }
}
