//! GitHub Actions workflow commands: one `::error`/`::warning` annotation
//! per finding, shown on the pull request's diff.
//! `::error file=…,line=…,col=…,endLine=…,endColumn=…,title=LL002 unconditional-release::message`

use super::{EmitOptions, Emitter};
use crate::filter::baseline::normalise_path;
use crate::finding::{Report, Severity};
use std::io::{self, Write};

pub struct Github;

/// Escapes the message part of a workflow command.
pub fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escapes a property value (`file=`, `title=`): also `:` and `,`.
pub fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

impl Emitter for Github {
    fn emit(&self, report: &Report, _opts: &EmitOptions, out: &mut dyn Write) -> io::Result<()> {
        for f in &report.findings {
            let kind = match f.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
            };
            let message = f.full_message(true);
            writeln!(
                out,
                "::{kind} file={},line={},col={},endLine={},endColumn={},title={}::{}",
                escape_property(&normalise_path(&f.path)),
                f.line,
                f.column,
                f.end_line,
                f.end_column,
                escape_property(&format!("{} {}", f.code(), f.name())),
                escape_data(&message)
            )?;
        }
        for e in &report.errors {
            writeln!(
                out,
                "::error file={},title=locklint::{}",
                escape_property(&normalise_path(&e.path)),
                escape_data(&e.message)
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes() {
        assert_eq!(
            escape_data("100% sure\r\nnext: a,b"),
            "100%25 sure%0D%0Anext: a,b"
        );
        assert_eq!(escape_property("a:b,c%\n"), "a%3Ab%2Cc%25%0A");
    }
}
