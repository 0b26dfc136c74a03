//! SARIF 2.1.0 as GitHub code scanning accepts it (SPEC §5): the rules'
//! metadata generated from their own documentation, relative URIs,
//! `partialFingerprints`, columns counted in characters.

use super::{EmitOptions, Emitter};
use crate::filter::{self, baseline::normalise_path};
use crate::finding::{Applicability, Report, Severity};
use serde_json::{json, Value};
use std::io::{self, Write};

pub struct Sarif;

/// Where users read about the tool (`tool.driver.informationUri`).
pub fn information_uri() -> &'static str {
    match env!("CARGO_PKG_REPOSITORY") {
        "" => "https://github.com/locklint/locklint",
        repo => repo,
    }
}

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
    }
}

/// A path as a relative URI reference: `/` separators, percent-encoded
/// where a URI needs it. Absolute paths become `file://` URIs.
pub fn uri(path: &str) -> String {
    let p = normalise_path(path);
    let mut out = String::with_capacity(p.len());
    for b in p.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    if p.starts_with('/') {
        format!("file://{out}")
    } else {
        out
    }
}

fn rules_json() -> Vec<Value> {
    filter::all_metas()
        .iter()
        .map(|m| {
            let what = m.section("What it does").unwrap_or(m.summary);
            json!({
                "id": m.code,
                "name": m.name,
                "shortDescription": { "text": m.summary },
                "fullDescription": { "text": what },
                "help": { "text": m.doc.trim(), "markdown": m.doc.trim() },
                "defaultConfiguration": { "level": level(m.severity) },
                "properties": {
                    "tags": ["redis", "distributed-lock", "correctness"],
                    "precision": "high",
                    "problem.severity": level(m.severity),
                },
            })
        })
        .collect()
}

/// The SARIF document of a report, as a value.
pub fn document(report: &Report) -> Value {
    serde_json::to_value(Document(report)).expect("a SARIF document is plain JSON")
}

/// The SARIF document of a report, serialized as it is built: one result
/// at a time (10,000 findings as one value took 155 MB), its keys in the
/// order a `json!` object gives them (sorted).
struct Document<'a>(&'a Report);

/// The one run of a [`Document`].
struct Run<'a>(&'a Report);

/// The results of a [`Run`], each made and written in turn.
struct Results<'a>(&'a Report);

impl serde::Serialize for Document<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("$schema", "https://json.schemastore.org/sarif-2.1.0.json")?;
        m.serialize_entry("runs", &[Run(self.0)])?;
        m.serialize_entry("version", "2.1.0")?;
        m.end()
    }
}

impl serde::Serialize for Run<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let report = self.0;
        let notifications: Vec<Value> = report
            .errors
            .iter()
            .map(|e| {
                json!({
                    "level": "error",
                    "message": { "text": format!("{}: {}", e.path, e.message) },
                    "locations": [{ "physicalLocation": { "artifactLocation": { "uri": uri(&e.path) } } }],
                })
            })
            .collect();
        let mut m = s.serialize_map(Some(4))?;
        m.serialize_entry("columnKind", "unicodeCodePoints")?;
        m.serialize_entry(
            "invocations",
            &json!([{
                "executionSuccessful": report.errors.is_empty(),
                "toolExecutionNotifications": notifications,
            }]),
        )?;
        m.serialize_entry("results", &Results(report))?;
        m.serialize_entry(
            "tool",
            &json!({
                "driver": {
                    "name": "locklint",
                    "version": env!("CARGO_PKG_VERSION"),
                    "semanticVersion": env!("CARGO_PKG_VERSION"),
                    "informationUri": information_uri(),
                    "rules": rules_json(),
                }
            }),
        )?;
        m.end()
    }
}

impl serde::Serialize for Results<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let metas = filter::all_metas();
        s.collect_seq(self.0.findings.iter().map(|f| result(f, &metas)))
    }
}

/// One finding as a SARIF result.
fn result(f: &crate::finding::Finding, metas: &[&crate::rules::RuleMeta]) -> Value {
    let rule_index = metas.iter().position(|m| m.code == f.code());
    let location = |line: u32, column: u32, end: Option<(u32, u32)>| {
        let mut region = json!({ "startLine": line, "startColumn": column });
        if let Some((el, ec)) = end {
            region["endLine"] = json!(el);
            region["endColumn"] = json!(ec);
        }
        let u = uri(&f.path);
        let artifact = if u.starts_with("file://") {
            json!({ "uri": u })
        } else {
            json!({ "uri": u, "uriBaseId": "%SRCROOT%" })
        };
        json!({ "physicalLocation": { "artifactLocation": artifact, "region": region } })
    };
    let text = f.full_message(true);
    let mut r = json!({
        "ruleId": f.code(),
        "level": level(f.severity),
        "message": { "text": text },
        "locations": [location(f.line, f.column, Some((f.end_line, f.end_column.max(1))))],
        "partialFingerprints": {
            "primaryLocationLineHash": f.fingerprint,
            "locklint/v1": f.fingerprint,
        },
    });
    if let Some(i) = rule_index {
        r["ruleIndex"] = json!(i);
    }
    // --- fix (issue 11): the applicable fix as a SARIF fix ---
    if let Some(fix) = f
        .fix
        .as_ref()
        .filter(|x| x.applicability != Applicability::DisplayOnly)
    {
        let artifact =
            location(f.line, f.column, None)["physicalLocation"]["artifactLocation"].clone();
        let replacements: Vec<Value> = fix
            .edits
            .iter()
            .map(|e| {
                json!({
                    "deletedRegion": {
                        "startLine": e.line, "startColumn": e.column,
                        "endLine": e.end_line, "endColumn": e.end_column,
                    },
                    "insertedContent": { "text": e.replacement },
                })
            })
            .collect();
        r["fixes"] = json!([{
            "description": { "text": format!("{} ({})", fix.message, fix.applicability.as_str()) },
            "artifactChanges": [{ "artifactLocation": artifact, "replacements": replacements }],
        }]);
    }
    // --- end fix ---
    if !f.labels.is_empty() {
        r["relatedLocations"] = Value::Array(
            f.labels
                .iter()
                .enumerate()
                .map(|(i, l)| {
                    let mut loc = location(l.line, l.column, None);
                    loc["id"] = json!(i + 1);
                    loc["message"] = json!({ "text": l.text });
                    loc
                })
                .collect(),
        );
    }
    r
}

impl Emitter for Sarif {
    fn emit(&self, report: &Report, _opts: &EmitOptions, out: &mut dyn Write) -> io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, &Document(report))?;
        writeln!(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_are_relative_and_encoded() {
        assert_eq!(uri("./src/lock.rs"), "src/lock.rs");
        assert_eq!(uri("src\\my lock.rs"), "src/my%20lock.rs");
        assert_eq!(uri("/abs/x.rs"), "file:///abs/x.rs");
    }
}
