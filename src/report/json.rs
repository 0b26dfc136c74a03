//! The stable JSON format of SPEC §5.

use super::{EmitOptions, Emitter};
use crate::finding::{Report, Severity};
use serde::Serialize;
use std::io::{self, Write};

pub struct Json;

#[derive(Serialize)]
struct Out<'a> {
    version: &'static str,
    summary: Summary,
    findings: Findings<'a>,
    errors: &'a [crate::finding::FileError],
}

/// The findings, each made a [`JsonFinding`] as it is written (a list of
/// them all stood beside the report: 2.2 MB for 12,000 findings).
struct Findings<'a>(&'a [crate::finding::Finding]);

impl Serialize for Findings<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(json_finding))
    }
}

fn json_finding(f: &crate::finding::Finding) -> JsonFinding<'_> {
    JsonFinding {
        code: f.code(),
        name: f.name(),
        severity: f.severity,
        path: &f.path,
        line: f.line,
        column: f.column,
        end_line: f.end_line,
        end_column: f.end_column,
        message: f.message(),
        help: f.help(),
        note: f.note(),
        language: f.language,
        fingerprint: &f.fingerprint,
        fix: f.fix.as_deref().map(json_fix),
    }
}

#[derive(Serialize)]
struct Summary {
    files_scanned: usize,
    files_with_findings: usize,
    errors: usize,
    warnings: usize,
    duration_ms: u64,
}

#[derive(Serialize)]
struct JsonFinding<'a> {
    code: &'a str,
    name: &'a str,
    severity: Severity,
    path: &'a str,
    line: u32,
    column: u32,
    end_line: u32,
    end_column: u32,
    message: crate::finding::TextView<'a>,
    help: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<&'a str>,
    language: crate::facts::Language,
    fingerprint: &'a str,
    /// issue 11: the machine-applicable fix, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<JsonFix<'a>>,
}

#[derive(Serialize)]
struct JsonFix<'a> {
    applicability: crate::finding::Applicability,
    message: &'a crate::finding::Text,
    edits: Vec<JsonEdit<'a>>,
}

#[derive(Serialize)]
struct JsonEdit<'a> {
    line: u32,
    column: u32,
    end_line: u32,
    end_column: u32,
    start_byte: usize,
    end_byte: usize,
    replacement: &'a crate::finding::Text,
}

fn json_fix(fix: &crate::finding::Fix) -> JsonFix<'_> {
    JsonFix {
        applicability: fix.applicability,
        message: &fix.message,
        edits: fix
            .edits
            .iter()
            .map(|e| JsonEdit {
                line: e.line,
                column: e.column,
                end_line: e.end_line,
                end_column: e.end_column,
                start_byte: e.span.start(),
                end_byte: e.span.end(),
                replacement: &e.replacement,
            })
            .collect(),
    }
}

impl Emitter for Json {
    fn emit(&self, report: &Report, _opts: &EmitOptions, out: &mut dyn Write) -> io::Result<()> {
        let doc = Out {
            version: env!("CARGO_PKG_VERSION"),
            summary: Summary {
                files_scanned: report.files_scanned,
                files_with_findings: report.files_with_findings(),
                errors: report.count(Severity::Error),
                warnings: report.count(Severity::Warning),
                duration_ms: report.duration_ms,
            },
            findings: Findings(&report.findings),
            errors: &report.errors,
        };
        serde_json::to_writer_pretty(&mut *out, &doc)?;
        writeln!(out)
    }
}
