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
        let issues: Vec<_> = report
            .findings
            .iter()
            .map(|f| {
                json!({
                    "type": "issue",
                    "engine_name": "locklint",
                    "check_name": format!("{} {}", f.code, f.name),
                    "description": format!("{}: {}", f.code, f.message),
                    "content": { "body": format!("help: {}", f.help) },
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
            })
            .collect();
        serde_json::to_writer_pretty(&mut *out, &issues)?;
        writeln!(out)
    }
}
