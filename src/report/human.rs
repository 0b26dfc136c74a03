//! rustc/miette-style output: `error[LL002] unconditional-release`, the
//! message, the excerpt with the span labelled, `help:` and `note:`.

use super::{EmitOptions, Emitter};
use crate::finding::{Applicability, Finding, Report, Severity};
use miette::{
    GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteError, MietteSpanContents,
    NamedSource, SourceCode, SourceSpan, SpanContents,
};
use std::fmt;
use std::io::{self, Write};
use std::sync::Arc;

pub struct Human;

/// One finding as a miette diagnostic.
struct Diag<'a> {
    f: &'a Finding,
    text: Arc<str>,
    newlines: Arc<[usize]>,
    src: NamedSource<Lines>,
}

/// A file's text and where each of its lines starts, so that the excerpt
/// of a finding is read from the few lines around it: miette's own
/// `SourceCode` for text counts the lines from the file's start for every
/// excerpt, and 10,000 findings in one file took 11.6 s (quadratic).
#[derive(Clone)]
struct Lines {
    text: Arc<str>,
    /// The offset after each line break (`\n`, `\r\n` or a lone `\r`, as
    /// miette counts them), the first line's start (0) first.
    starts: Arc<[usize]>,
    /// The offset after each `\n`, 0 first (the lines of a fix's diff):
    /// `starts` itself for a text without `\r`.
    newlines: Arc<[usize]>,
}

impl Lines {
    fn new(text: Arc<str>) -> Lines {
        let b = text.as_bytes();
        let mut starts = vec![0];
        let mut i = 0;
        while let Some(at) = memchr::memchr2(b'\n', b'\r', &b[i..]) {
            i += at + 1;
            if b[i - 1] == b'\r' && b.get(i) == Some(&b'\n') {
                i += 1;
            }
            starts.push(i);
        }
        let starts: Arc<[usize]> = starts.into();
        let newlines = if memchr::memchr(b'\r', b).is_none() {
            starts.clone()
        } else {
            std::iter::once(0)
                .chain(memchr::memchr_iter(b'\n', b).map(|i| i + 1))
                .collect()
        };
        Lines {
            text,
            starts,
            newlines,
        }
    }
}

/// A line longer than this is shown as a window around the span (a
/// minified bundle's line of a megabyte, once per finding, took 11 s and
/// 1.8 GB for 10,000 findings).
const WIDE_LINE: usize = 1000;
/// Bytes of a wide line shown on each side of the span.
const WINDOW_SIDE: usize = 200;

impl Lines {
    /// The excerpt of a span on a wide line ([`WIDE_LINE`]): that line
    /// alone, from [`WINDOW_SIDE`] bytes before the span to as many after
    /// it (on character boundaries), its number and the span's column
    /// kept; `None` for a line of ordinary width or a span that goes on
    /// past the line.
    fn window(
        &self,
        line: usize,
        span: &SourceSpan,
        context_lines_before: usize,
    ) -> Option<MietteSpanContents<'_>> {
        let text = &*self.text;
        let start = *self.starts.get(line)?;
        let mut end = self.starts.get(line + 1).copied().unwrap_or(text.len());
        while end > start && matches!(text.as_bytes()[end - 1], b'\n' | b'\r') {
            end -= 1;
        }
        // (a span going on past the line — labels of several lines merged
        // — is read whole, as miette reads it)
        if end - start <= WIDE_LINE || span.offset() + span.len() > end {
            return None;
        }
        let mut from = span.offset().saturating_sub(WINDOW_SIDE).max(start);
        while !text.is_char_boundary(from) {
            from -= 1;
        }
        let mut to = (span.offset() + span.len() + WINDOW_SIDE).min(end);
        while !text.is_char_boundary(to) {
            to += 1;
        }
        let column = if context_lines_before == 0 {
            span.offset() - start
        } else {
            0
        };
        Some(MietteSpanContents::new(
            &text.as_bytes()[from..to],
            SourceSpan::new(from.into(), to - from),
            line,
            column,
            line + 1,
        ))
    }
}

impl SourceCode for Lines {
    /// miette's excerpt of the text from the start of the line one more
    /// than the context above the span's line, its line numbers and
    /// offsets moved back to the whole file's: the same excerpt as of the
    /// whole text (the lines before the window only count).
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        let line = self
            .starts
            .partition_point(|&s| s <= span.offset())
            .saturating_sub(1);
        if let Some(window) = self.window(line, span, context_lines_before) {
            return Ok(Box::new(window));
        }
        let first = line.saturating_sub(context_lines_before + 1);
        let base = self.starts[first];
        let tail = &self.text.as_bytes()[base..];
        let shifted = SourceSpan::new(span.offset().saturating_sub(base).into(), span.len());
        let c = tail.read_span(&shifted, context_lines_before, context_lines_after)?;
        Ok(Box::new(MietteSpanContents::new(
            c.data(),
            SourceSpan::new((c.span().offset() + base).into(), c.span().len()),
            c.line() + first,
            c.column(),
            c.line_count() + first,
        )))
    }
}

impl fmt::Debug for Diag<'_> {
    fn fmt(&self, fm: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(fm, "{}", self.f.message())
    }
}

impl fmt::Display for Diag<'_> {
    fn fmt(&self, fm: &mut fmt::Formatter<'_>) -> fmt::Result {
        let f = self.f;
        write!(
            fm,
            "{}[{}] {}: {}",
            f.severity.as_str(),
            f.code(),
            f.name(),
            f.message()
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
        let mut h = self.f.help().to_string();
        // --- fix (issue 11): the fix as a diff under `help:` ---
        if let Some(fix) = &self.f.fix {
            let how = match fix.applicability {
                Applicability::Safe => "safe: `locklint --fix` applies it",
                Applicability::Unsafe => "unsafe: `locklint --fix --unsafe-fixes` applies it",
                Applicability::DisplayOnly => "display-only: adapt it by hand",
            };
            h.push_str(&format!("\nfix ({how}): {}", fix.message));
            let diff = crate::fix::preview_near(&self.text, &self.newlines, fix, &self.f.path);
            for line in diff.lines().skip(2) {
                h.push('\n');
                h.push_str(line);
            }
        }
        // --- end fix ---
        if let Some(n) = &self.f.note() {
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
        let (start, len) = first_line(&self.text, f.span.start(), f.span.end());
        let primary = LabeledSpan::new_primary_with_span(Some(f.label().to_string()), (start, len));
        let rest = f.labels.iter().map(|l| {
            LabeledSpan::new_with_span(
                Some(l.text.to_string()),
                first_line(&self.text, l.span.start(), l.span.end()),
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
            // (findings come sorted by path: each file's lines once)
            let mut lines: Option<(&str, Lines)> = None;
            for f in &report.findings {
                if lines.as_ref().is_none_or(|(p, _)| *p != &*f.path) {
                    let text = report
                        .sources
                        .get(&*f.path)
                        .cloned()
                        .unwrap_or_else(|| Arc::from(""));
                    lines = Some((&f.path, Lines::new(text)));
                }
                let Some((_, src)) = &lines else {
                    continue;
                };
                let diag = Diag {
                    f,
                    text: src.text.clone(),
                    newlines: src.newlines.clone(),
                    src: NamedSource::new(f.path.clone(), src.clone()),
                };
                let mut s = String::new();
                if handler.render_report(&mut s, &diag).is_err() {
                    s = format!(
                        "{}[{}] {}: {}:{}:{}\n",
                        f.severity.as_str(),
                        f.code(),
                        f.message(),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The excerpt read from the lines around a span is the one miette
    /// reads from the whole text: data, span, line, column and line
    /// count, for every span and context over mixed line breaks.
    #[test]
    fn excerpts_are_those_of_the_whole_text() {
        let texts = [
            "",
            "one line",
            "a\nb\nc\n",
            "first\r\nsecond\r\n\r\nfourth\rfifth\n\nseventh",
            "\n\n\nx = 1\n\r\n\ry\r",
            "  set(k, v, 'NX')\n  del(k)\n",
        ];
        let mut checked = 0;
        for text in texts {
            let lines = Lines::new(Arc::from(text));
            let whole = text.as_bytes();
            for start in 0..=text.len() {
                for len in [0, 1, 2, 5, 40] {
                    let span = SourceSpan::new(start.into(), len);
                    for (before, after) in [(0, 0), (1, 1), (2, 0), (0, 3), (4, 4)] {
                        let want = whole.read_span(&span, before, after);
                        let got = lines.read_span(&span, before, after);
                        match (want, got) {
                            (Ok(w), Ok(g)) => {
                                let show = |c: &dyn SpanContents<'_>| {
                                    (
                                        c.data().to_vec(),
                                        *c.span(),
                                        c.line(),
                                        c.column(),
                                        c.line_count(),
                                    )
                                };
                                assert_eq!(
                                    show(g.as_ref()),
                                    show(w.as_ref()),
                                    "{text:?} {start}+{len} ({before}, {after})"
                                );
                                checked += 1;
                            }
                            (Err(_), Err(_)) => {}
                            (w, g) => panic!(
                                "{text:?} {start}+{len}: {:?} against {:?}",
                                w.is_ok(),
                                g.is_ok()
                            ),
                        }
                    }
                }
            }
        }
        assert!(checked > 1000, "{checked}");
    }

    /// A finding on a line of a megabyte: its excerpt is a window of the
    /// line, the header still gives the span's line and column.
    #[test]
    fn a_wide_line_is_shown_around_the_span() {
        let pad = "x=1;".repeat(250_000);
        let text = format!("a\n{pad}client.del('lock:k');{pad}\nz\n");
        let at = text.find("client.del").expect("call");
        let lines = Lines::new(Arc::from(text.as_str()));
        let span = SourceSpan::new(at.into(), 10);
        for (before, after) in [(0, 0), (1, 1)] {
            let c = lines.read_span(&span, before, after).expect("excerpt");
            assert!(c.data().len() <= 2 * WINDOW_SIDE + 10, "{}", c.data().len());
            assert!(String::from_utf8_lossy(c.data()).contains("client.del('lock:k')"));
            assert_eq!(c.line(), 1);
            assert_eq!(c.column(), if before == 0 { at - 2 } else { 0 });
        }
        // ordinary lines around it: as miette reads them
        let z = SourceSpan::new((text.len() - 2).into(), 1);
        let want = text.as_bytes().read_span(&z, 0, 0).expect("z");
        let got = lines.read_span(&z, 0, 0).expect("z");
        assert_eq!((got.line(), got.column()), (want.line(), want.column()));
    }
}
