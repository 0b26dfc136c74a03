//! rustc/miette-style output: `error[LL002] unconditional-release`, the
//! message, the excerpt with the span labelled, `help:` and `note:`.

use super::{EmitOptions, Emitter};
use crate::finding::{Applicability, Finding, Report, Severity};
use miette::{GraphicalReportHandler, GraphicalTheme, LabeledSpan, NamedSource};
use std::fmt;
use std::io::{self, Write};
use std::sync::Arc;

pub struct Human;

/// One finding as a miette diagnostic.
struct Diag<'a> {
    f: &'a Finding,
    text: Arc<str>,
    src: NamedSource<Arc<str>>,
}

impl fmt::Debug for Diag<'_> {
    fn fmt(&self, fm: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(fm, "{}", self.f.message)
    }
}

impl fmt::Display for Diag<'_> {
    fn fmt(&self, fm: &mut fmt::Formatter<'_>) -> fmt::Result {
        let f = self.f;
        write!(
            fm,
            "{}[{}] {}: {}",
            f.severity.as_str(),
            f.code,
            f.name,
            f.message
        )
    }
}

impl std::error::Error for Diag<'_> {}

impl miette::Diagnostic for Diag<'_> {
    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.f.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
        })
    }

    fn help<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        let mut h = self.f.help.clone();
        // --- fix (issue 11): the fix as a diff under `help:` ---
        if let Some(fix) = &self.f.fix {
            let how = match fix.applicability {
                Applicability::Safe => "safe: `locklint --fix` applies it",
                Applicability::Unsafe => "unsafe: `locklint --fix --unsafe-fixes` applies it",
                Applicability::DisplayOnly => "display-only: adapt it by hand",
            };
            h.push_str(&format!("\nfix ({how}): {}", fix.message));
            let diff = crate::fix::preview(&self.text, fix, &self.f.path);
            for line in diff.lines().skip(2) {
                h.push('\n');
                h.push_str(line);
            }
        }
        // --- end fix ---
        if let Some(n) = &self.f.note {
            h.push_str("\nnote: ");
            h.push_str(n);
        }
        Some(Box::new(h))
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        Some(&self.src)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let f = self.f;
        let (start, len) = first_line(&self.text, f.span.start, f.span.end);
        let primary = LabeledSpan::new_primary_with_span(Some(f.label.clone()), (start, len));
        let rest = f.labels.iter().map(|l| {
            LabeledSpan::new_with_span(
                Some(l.text.clone()),
                first_line(&self.text, l.span.start, l.span.end),
            )
        });
        Some(Box::new(std::iter::once(primary).chain(rest)))
    }
}

/// Clips a span to the line it starts on, so a call split over many lines
/// is underlined where its name stands instead of boxed whole.
fn first_line(text: &str, start: usize, end: usize) -> (usize, usize) {
    let start = start.min(text.len());
    let end = end.clamp(start, text.len());
    let cut = text.as_bytes()[start..end]
        .iter()
        .position(|&b| b == b'\n' || b == b'\r')
        .map_or(end, |i| start + i);
    (
        start,
        cut.saturating_sub(start)
            .max(1)
            .min(text.len().saturating_sub(start)),
    )
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("{n} {word}")
    } else {
        format!("{n} {word}s")
    }
}

impl Emitter for Human {
    fn emit(&self, report: &Report, opts: &EmitOptions, out: &mut dyn Write) -> io::Result<()> {
        let mut theme = if opts.color {
            GraphicalTheme::unicode()
        } else {
            GraphicalTheme::unicode_nocolor()
        };
        // The header already says `error[LL002]`: no severity glyph before it.
        theme.characters.error = String::new();
        theme.characters.warning = String::new();
        let handler = GraphicalReportHandler::new_themed(theme)
            .with_width(120)
            .with_break_words(false)
            .with_context_lines(1);
        if !opts.quiet {
            for f in &report.findings {
                let text = report
                    .sources
                    .get(&f.path)
                    .cloned()
                    .unwrap_or_else(|| Arc::from(""));
                let diag = Diag {
                    f,
                    text: text.clone(),
                    src: NamedSource::new(f.path.clone(), text),
                };
                let mut s = String::new();
                if handler.render_report(&mut s, &diag).is_err() {
                    s = format!(
                        "{}[{}] {}: {}:{}:{}\n",
                        f.severity.as_str(),
                        f.code,
                        f.message,
                        f.path,
                        f.line,
                        f.column
                    );
                }
                writeln!(out, "{s}")?;
            }
        }
        // asked for with -v, so also under --quiet and --stats
        if opts.verbose {
            for (path, note) in &report.notes {
                writeln!(out, "note: {path}: {note}")?;
            }
        }
        for e in &report.errors {
            writeln!(out, "error: {}: {}", e.path, e.message)?;
        }
        let (errs, warns) = (
            report.count(Severity::Error),
            report.count(Severity::Warning),
        );
        if errs + warns == 0 {
            writeln!(out, "no findings in {} files", report.files_scanned)?;
        } else {
            writeln!(
                out,
                "{}, {} in {} of {} files",
                plural(errs, "error"),
                plural(warns, "warning"),
                report.files_with_findings(),
                report.files_scanned
            )?;
        }
        Ok(())
    }
}
