//! What the engine reports: findings with resolved positions, per-file errors,
//! and the whole report the reporters print.

use crate::facts::{Language, Span};
use crate::rules::RuleMeta;
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

/// Most texts [`shared`] keeps for sharing.
const MAX_SHARED_TEXTS: usize = 4096;

/// `s` as the run's one shared copy of it. The set is shared by the files
/// checked side by side and bounded ([`MAX_SHARED_TEXTS`]: past it, a text
/// is a copy of its own), so a long-lived language server cannot grow it
/// without end.
pub fn shared(s: &str) -> Arc<str> {
    static TEXTS: std::sync::OnceLock<std::sync::Mutex<std::collections::HashSet<Arc<str>>>> =
        std::sync::OnceLock::new();
    let mut texts = TEXTS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(t) = texts.get(s) {
        return Arc::clone(t);
    }
    let t: Arc<str> = s.into();
    if texts.len() < MAX_SHARED_TEXTS {
        texts.insert(Arc::clone(&t));
    }
    t
}

/// A finding's message or label, kept as its wording with the first
/// quoted part (between backticks: most often the lock's key) cut out.
/// The wording is the run's one shared copy ([`shared`]), so the
/// findings of one rule on many keys hold one wording and a short quote
/// each: a file of a finding every 30 bytes held a whole message per
/// finding (over 100 bytes each, 4 B/B of source).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Text {
    /// The text, with [`Text::HOLE`] where the quote was cut out.
    words: Arc<str>,
    quote: Option<Box<str>>,
}

impl Text {
    /// Where a quote was cut out of the wording (a text that holds one
    /// itself is kept whole).
    const HOLE: char = '\u{0}';

    pub fn new(s: &str) -> Text {
        Self::cut(s, '`')
    }

    /// A text of code (a fix's replacement): the quote cut out is its
    /// first string literal (most often the key), between the quote marks
    /// that come first (`"` or `'`).
    pub fn code(s: &str) -> Text {
        match s.find(['"', '\'']) {
            Some(i) => Self::cut(s, if s.as_bytes()[i] == b'"' { '"' } else { '\'' }),
            None => Self::cut(s, '`'),
        }
    }

    /// The text with what stands between the first two `mark`s cut out.
    fn cut(s: &str, mark: char) -> Text {
        let quoted = s
            .find(mark)
            .and_then(|open| Some((open + 1, s[open + 1..].find(mark)? + open + 1)));
        match quoted {
            Some((from, to)) if to > from && !s.contains(Self::HOLE) => {
                let mut words = String::with_capacity(s.len() - (to - from) + 1);
                words.push_str(&s[..from]);
                words.push(Self::HOLE);
                words.push_str(&s[to..]);
                Text {
                    words: shared(&words),
                    quote: Some(s[from..to].into()),
                }
            }
            _ => Text {
                words: shared(s),
                quote: None,
            },
        }
    }

    /// The shared wording and the quote cut out of it, taken apart (a
    /// [`crate::rules::Reported`] keeps the wordings of its texts as one).
    pub(crate) fn into_parts(self) -> (Arc<str>, Option<Box<str>>) {
        (self.words, self.quote)
    }

    /// A text put back together from [`Text::into_parts`].
    pub(crate) fn from_parts(words: Arc<str>, quote: Option<Box<str>>) -> Text {
        Text { words, quote }
    }

    /// The text as a view of its parts.
    pub fn as_view(&self) -> TextView<'_> {
        TextView {
            words: &self.words,
            quote: self.quote.as_deref(),
        }
    }

    /// Appends the text to `out`.
    pub fn push_to(&self, out: &mut String) {
        self.as_view().push_to(out);
    }
}

impl std::fmt::Display for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_view().fmt(f)
    }
}

/// A [`Text`] as its parts lent out: a wording with [`Text::HOLE`] where
/// the quote was cut out, and the quote (a [`Finding`] keeps its message's
/// and label's wordings in one shared [`Wording`] and only their quotes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TextView<'a> {
    words: &'a str,
    quote: Option<&'a str>,
}

impl<'a> TextView<'a> {
    /// The text before the quote, the quote, the text after it.
    fn parts(&self) -> (&'a str, &'a str, &'a str) {
        match self.quote {
            Some(q) => {
                let (head, tail) = self
                    .words
                    .split_once(Text::HOLE)
                    .unwrap_or((self.words, ""));
                (head, q, tail)
            }
            None => (self.words, "", ""),
        }
    }

    /// Appends the text to `out`.
    pub fn push_to(&self, out: &mut String) {
        let (head, quote, tail) = self.parts();
        out.push_str(head);
        out.push_str(quote);
        out.push_str(tail);
    }
}

impl std::fmt::Display for TextView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (head, quote, tail) = self.parts();
        f.write_str(head)?;
        f.write_str(quote)?;
        f.write_str(tail)
    }
}

impl Serialize for TextView<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Text {
        Text::new(s)
    }
}

impl From<String> for Text {
    fn from(s: String) -> Text {
        Text::new(&s)
    }
}

impl Serialize for Text {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// A secondary labelled place of a finding (e.g. the EXPIRE of LL003).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Label {
    pub span: Span,
    pub line: u32,
    pub column: u32,
    pub text: Text,
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
    /// ([`Text::code`]: a file of dense fixes holds one wording of each.)
    pub replacement: Text,
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub end_column: u32,
}

/// A fix of one finding: edits that do not overlap, sorted by position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fix {
    pub applicability: Applicability,
    /// One line: what the fix does.
    pub message: Text,
    pub edits: Vec<Edit>,
}

/// What the findings that read alike share: the rule, the wordings of the
/// message and the label with their quotes cut out ([`Text`]), the advice
/// and the note. One copy for all of them: a file of dense findings held
/// each finding's rule code and name, two wordings, help and note, 96
/// bytes a finding.
#[derive(Debug)]
pub struct Wording {
    pub meta: &'static RuleMeta,
    /// ([`Text::HOLE`] where the message's quote was cut out)
    pub message: Arc<str>,
    /// ([`Text::HOLE`] where the label's quote was cut out)
    pub label: Arc<str>,
    pub help: Arc<str>,
    pub note: Option<&'static str>,
}

impl PartialEq for Wording {
    fn eq(&self, other: &Wording) -> bool {
        self.meta.code == other.meta.code
            && self.message == other.message
            && self.label == other.label
            && self.help == other.help
            && self.note == other.note
    }
}

impl Eq for Wording {}

/// A finding: where, what and how to fix it. Its rule and texts are read
/// through [`Finding::code`], [`Finding::message`] and the like (they are
/// kept as one shared [`Wording`] and the quotes cut out of it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub(crate) wording: Arc<Wording>,
    pub(crate) message_quote: Option<Box<str>>,
    /// `None` also where the label quotes what the message does
    /// (`label_quotes_message`).
    pub(crate) label_quote: Option<Box<str>>,
    /// Shared by the findings of one file.
    pub path: Arc<str>,
    pub fingerprint: crate::filter::baseline::Fingerprint,
    pub span: Span,
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub end_column: u32,
    pub labels: Vec<Label>,
    /// A machine-applicable change, when the rule and the client allow one
    /// (boxed: most findings have none, and a dense file holds 10,000).
    pub fix: Option<Box<Fix>>,
    pub severity: Severity,
    pub language: Language,
    pub(crate) label_quotes_message: bool,
}

#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<Finding>() == 136);

impl Finding {
    /// A finding of the rule `meta` in `path` with these texts, at its
    /// rule's severity; its places (`span`, lines and columns, labels) and
    /// fingerprint are set by the caller.
    pub fn new(
        meta: &'static RuleMeta,
        path: Arc<str>,
        language: Language,
        message: &str,
        label: &str,
        help: &str,
        note: Option<&'static str>,
    ) -> Finding {
        let (message, message_quote) = Text::new(message).into_parts();
        let (label, label_quote) = Text::new(label).into_parts();
        // (as the engine keeps them: a label quoting what the message
        // does holds no quote of its own, so equal texts compare equal)
        let label_quotes_message = label_quote.is_some() && label_quote == message_quote;
        Finding {
            wording: Arc::new(Wording {
                meta,
                message,
                label,
                help: shared(help),
                note,
            }),
            message_quote,
            label_quote: label_quote.filter(|_| !label_quotes_message),
            path,
            fingerprint: crate::filter::baseline::Fingerprint::default(),
            span: Span::default(),
            line: 0,
            column: 0,
            end_line: 0,
            end_column: 0,
            labels: Vec::new(),
            fix: None,
            severity: meta.severity,
            language,
            label_quotes_message,
        }
    }

    /// The rule that reported it.
    pub fn meta(&self) -> &'static RuleMeta {
        self.wording.meta
    }

    /// The rule's code (`LL002`).
    pub fn code(&self) -> &'static str {
        self.wording.meta.code
    }

    /// The rule's name (`unconditional-release`).
    pub fn name(&self) -> &'static str {
        self.wording.meta.name
    }

    pub fn message(&self) -> TextView<'_> {
        TextView {
            words: &self.wording.message,
            quote: self.message_quote.as_deref(),
        }
    }

    /// The label under the primary span.
    pub fn label(&self) -> TextView<'_> {
        let quote = if self.label_quotes_message {
            &self.message_quote
        } else {
            &self.label_quote
        };
        TextView {
            words: &self.wording.label,
            quote: quote.as_deref(),
        }
    }

    /// Shared by the findings of the run that give the same advice.
    pub fn help(&self) -> &str {
        &self.wording.help
    }

    pub fn note(&self) -> Option<&'static str> {
        self.wording.note
    }

    /// The message with its `help:` (and, with `note`, its `note:`) on
    /// lines of their own: the one-text form of the reporters that take a
    /// single message (SARIF, GitHub, rdjson, the language server).
    pub fn full_message(&self, note: bool) -> String {
        let mut text = self.message().to_string();
        if !self.help().is_empty() {
            text.push_str("\nhelp: ");
            text.push_str(self.help());
        }
        if let Some(n) = self.note().filter(|_| note) {
            text.push_str("\nnote: ");
            text.push_str(n);
        }
        text
    }

    pub fn sort_key(&self) -> (&str, u32, u32, &str) {
        (&self.path, self.line, self.column, self.code())
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
    /// How many of the files walked were minified and skipped (each has a
    /// note; `Settings::include_minified`).
    pub minified_skipped: usize,
    /// How many were generated and skipped (each has a note;
    /// `Settings::include_generated`).
    pub generated_skipped: usize,
    /// How many minified files were scanned in reduced mode (each has a
    /// note: `crate::minified::REDUCED_NOTE`).
    pub minified_reduced: usize,
}

impl Report {
    /// One more machine-written file skipped: generated, or minified.
    pub fn count_skipped(&mut self, generated: bool) {
        if generated {
            self.generated_skipped += 1;
        } else {
            self.minified_skipped += 1;
        }
    }

    pub fn count(&self, sev: Severity) -> usize {
        self.findings.iter().filter(|f| f.severity == sev).count()
    }

    pub fn files_with_findings(&self) -> usize {
        let mut paths: Vec<&str> = self.findings.iter().map(|f| &*f.path).collect();
        paths.dedup();
        paths.len()
    }

    pub fn sort(&mut self) {
        sort_findings(&mut self.findings);
        self.errors.sort();
        self.notes.sort();
    }
}

/// Sorts findings by [`Finding::sort_key`], stably (findings with equal
/// keys keep their order), through a sorted list of their indices: a stable
/// sort of the findings themselves borrows scratch room for up to all of
/// them (about 300 bytes each; 3 MB beside 10,000 findings of one file),
/// the indices take 4 bytes each.
pub fn sort_findings(v: &mut [Finding]) {
    if v.windows(2).all(|w| w[0].sort_key() <= w[1].sort_key()) {
        return;
    }
    let mut order: Vec<u32> = (0..v.len() as u32).collect();
    order.sort_by(|&a, &b| v[a as usize].sort_key().cmp(&v[b as usize].sort_key()));
    // Position `i` takes the finding at `order[i]`: each cycle of the
    // permutation is walked once by swaps, its entries marked done
    // (`order[k] == k`) on the way.
    for start in 0..v.len() {
        let mut cur = start;
        loop {
            let next = order[cur] as usize;
            order[cur] = cur as u32;
            if next == start || next == cur {
                break;
            }
            v.swap(cur, next);
            cur = next;
        }
    }
}

/// Byte offset → 1-based line and 1-based column counted in characters
/// (or, made by [`LineIndex::utf16`], in UTF-16 code units: the columns of
/// the language server protocol).
///
/// Every query costs O(log lines + CHAR_STRIDE): columns are counted from a
/// checkpoint of the running character count (kept every `CHAR_STRIDE`
/// bytes, only for text that is not plain ASCII), never from the start of
/// the line, so a minified file with one huge line is not rescanned per
/// finding.
pub struct LineIndex<'a> {
    src: &'a str,
    /// (`u32`s: a file the engine reads is at most 256 MiB)
    starts: Vec<u32>,
    /// Characters (or UTF-16 units) before byte `k * CHAR_STRIDE` (empty
    /// for ASCII text, where both are bytes).
    chars_at: Vec<usize>,
    /// Columns count UTF-16 code units, not characters.
    utf16: bool,
}

/// Bytes between two character-count checkpoints of [`LineIndex`].
const CHAR_STRIDE: usize = 4096;

impl<'a> LineIndex<'a> {
    pub fn new(src: &'a str) -> Self {
        Self::counting(src, false)
    }

    /// Columns in UTF-16 code units (a character beyond U+FFFF counts two).
    pub fn utf16(src: &'a str) -> Self {
        Self::counting(src, true)
    }

    fn counting(src: &'a str, utf16: bool) -> Self {
        // (counted first, then filled at that size: grown by doubling, a
        // file of 12,000 lines held room for 16,384 beside its findings)
        let lines = memchr::memchr_iter(b'\n', src.as_bytes()).count();
        let mut starts = Vec::with_capacity(lines + 1);
        starts.push(0);
        starts.extend(
            memchr::memchr_iter(b'\n', src.as_bytes()).map(|i| crate::facts::offset32(i + 1)),
        );
        let mut index = LineIndex {
            src,
            starts,
            chars_at: Vec::new(),
            utf16,
        };
        if !src.is_ascii() {
            let bytes = src.as_bytes();
            let mut total = 0usize;
            let mut chars_at = Vec::with_capacity(bytes.len() / CHAR_STRIDE + 1);
            for chunk in bytes.chunks(CHAR_STRIDE) {
                chars_at.push(total);
                total += index.units_in(chunk);
            }
            index.chars_at = chars_at;
        }
        index
    }

    /// The columns byte `b` opens: a character is counted at its first
    /// byte (not a continuation byte); in UTF-16, a four-byte character
    /// (lead byte 0xF0 and up) is two units.
    fn units_of(&self, b: u8) -> usize {
        usize::from((b as i8) >= -0x40) + usize::from(self.utf16 && b >= 0xF0)
    }

    fn units_in(&self, bytes: &[u8]) -> usize {
        bytes.iter().map(|&b| self.units_of(b)).sum()
    }

    /// Characters (units) before byte `offset` (a char boundary).
    fn chars_before(&self, offset: usize) -> usize {
        if self.chars_at.is_empty() {
            return offset;
        }
        let k = offset / CHAR_STRIDE;
        let from = k * CHAR_STRIDE;
        let base = self.chars_at.get(k).copied().unwrap_or(0);
        base + self.units_in(&self.src.as_bytes()[from..offset])
    }

    /// [`LineIndex::line_col`] as the `u32`s a [`Finding`] keeps (a file
    /// the engine reads is at most 256 MiB).
    pub fn place(&self, offset: usize) -> (u32, u32) {
        let (line, column) = self.line_col(offset);
        (crate::facts::offset32(line), crate::facts::offset32(column))
    }

    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let mut offset = offset.min(self.src.len());
        while !self.src.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.starts.partition_point(|&s| s as usize <= offset);
        let start = self.starts[line - 1] as usize;
        let col = if offset - start <= CHAR_STRIDE {
            self.units_in(&self.src.as_bytes()[start..offset]) + 1
        } else {
            self.chars_before(offset) - self.chars_before(start) + 1
        };
        (line, col)
    }

    /// The 1-based byte column of 1-based character (unit) column `column`
    /// of 1-based `line` (a column past the line's end goes on one byte per
    /// character; one inside a UTF-16 surrogate pair is the next
    /// character's): at most [`CHAR_STRIDE`] bytes read, however long the
    /// line.
    pub fn byte_column(&self, line: usize, column: usize) -> usize {
        let text = self.line_text(line);
        let want = column.saturating_sub(1);
        if text.is_empty() {
            return want + 1;
        }
        let start = self.starts[line - 1] as usize;
        let end = start + text.len();
        let first = self.chars_before(start);
        let last = self.chars_before(end);
        if want >= last - first {
            return text.len() + 1 + (want - (last - first));
        }
        // the byte where the first character at or after unit
        // `first + want` starts
        let target = first + want;
        let at = if self.chars_at.is_empty() {
            target
        } else {
            let k = self.chars_at.partition_point(|&c| c <= target) - 1;
            let mut count = self.chars_at[k];
            let mut i = (k * CHAR_STRIDE).max(start);
            if i > k * CHAR_STRIDE {
                count = self.chars_before(i);
            }
            let b = self.src.as_bytes();
            loop {
                // (the end of the line: a unit inside a surrogate pair
                // that ends it)
                if i >= end {
                    break end;
                }
                let w = self.units_of(b[i]);
                if w > 0 {
                    if count >= target {
                        break i;
                    }
                    count += w;
                }
                i += 1;
            }
        };
        at - start + 1
    }

    /// Every line's start: `0` and one past each `\n`.
    pub fn starts(&self) -> &[u32] {
        &self.starts
    }

    /// Where a 1-based line starts (none past the last line).
    pub fn line_start(&self, line: usize) -> Option<usize> {
        self.starts.get(line.checked_sub(1)?).map(|&s| s as usize)
    }

    /// The length of the text in bytes.
    pub fn text_len(&self) -> usize {
        self.src.len()
    }

    /// The text of a 1-based line, without its line ending.
    pub fn line_text(&self, line: usize) -> &'a str {
        if line == 0 || line > self.starts.len() {
            return "";
        }
        let start = self.starts[line - 1] as usize;
        let end = self
            .starts
            .get(line)
            .map_or(self.src.len(), |&e| e as usize);
        self.src[start..end].trim_end_matches(['\n', '\r'])
    }
}

#[cfg(test)]
mod tests {
    use super::{sort_findings, Finding, LineIndex, Severity, Text};
    use crate::facts::Language;

    /// A finding made from texts reads them back as given, and keeps a
    /// label quoting what its message does as the engine keeps it.
    #[test]
    fn a_finding_reads_back_its_texts() {
        let meta = crate::rules::lookup("LL002").expect("a rule");
        let make = |message: &str, label: &str| {
            Finding::new(
                meta,
                "a.py".into(),
                Language::Python,
                message,
                label,
                "h",
                None,
            )
        };
        let same = make("lock `lock:a` is released", "`lock:a` here");
        assert_eq!(same.message().to_string(), "lock `lock:a` is released");
        assert_eq!(same.label().to_string(), "`lock:a` here");
        assert!(same.label_quotes_message && same.label_quote.is_none());
        let other = make("lock `lock:a` is released", "`lock:b` here");
        assert_eq!(other.label().to_string(), "`lock:b` here");
        assert!(!other.label_quotes_message);
        let plain = make("no quote", "none");
        assert_eq!(
            (plain.message().to_string(), plain.label().to_string()),
            ("no quote".into(), "none".into())
        );
        assert_eq!(
            (same.code(), same.name(), same.help(), same.note()),
            ("LL002", meta.name, "h", None)
        );
    }

    /// The sort through indices gives the stable sort's order: findings
    /// with equal keys (told apart by their message) keep theirs.
    #[test]
    fn findings_sort_stably_through_indices() {
        let f = |path: &str, line: usize, code: &'static str, n: usize| {
            let meta = crate::rules::lookup(code).expect("a rule");
            let mut f = Finding::new(
                meta,
                path.into(),
                Language::Python,
                &n.to_string(),
                "",
                "",
                None,
            );
            f.severity = Severity::Warning;
            (f.line, f.end_line) = (line as u32, line as u32);
            (f.column, f.end_column) = (1, 1);
            f
        };
        let mut v = Vec::new();
        for n in 0..200 {
            let path = ["b.py", "a.py", "c.py"][n * 7 % 3];
            v.push(f(path, n * 13 % 17, ["LL002", "LL001"][n % 2], n));
        }
        let mut want = v.clone();
        want.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
        sort_findings(&mut v);
        let msgs = |v: &[Finding]| {
            v.iter()
                .map(|f| f.message().to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(msgs(&v), msgs(&want));
        // already sorted: unchanged
        sort_findings(&mut v);
        assert_eq!(msgs(&v), msgs(&want));
    }

    /// A text reads back exactly as it was given, whatever its backticks,
    /// and texts that differ only in their first quote share one wording.
    #[test]
    fn texts_read_back_as_given_and_share_their_wording() {
        for s in [
            "",
            "plain words",
            "lock `lock:a0` is released",
            "``empty quote` then one`",
            "one ` only",
            "`at start` and `second`",
            "ends with a quote `k`",
            "a key with a NUL `a\u{0}b` stays whole",
            "\u{0}`k`",
            "unicode `clé:日本` key",
        ] {
            let t = Text::new(s);
            assert_eq!(t.to_string(), s);
            assert_eq!(
                serde_json::to_string(&t).unwrap(),
                serde_json::to_string(s).unwrap()
            );
        }
        let (a, b) = (
            Text::new("lock `a:1` is held"),
            Text::new("lock `b:22` is held"),
        );
        assert!(std::sync::Arc::ptr_eq(&a.words, &b.words));
        assert_ne!(a, b);
        assert_eq!(a, Text::new("lock `a:1` is held"));
    }

    #[test]
    fn columns_count_characters_on_long_lines() {
        // Past several checkpoints, with multi-byte characters before the offset.
        let mut src = String::from("ab\n");
        for i in 0..20_000 {
            src.push(if i % 7 == 0 { 'é' } else { 'x' });
            if i % 5000 == 0 {
                src.push('日');
            }
        }
        src.push_str("END\nz");
        let index = LineIndex::new(&src);
        for offset in (0..src.len())
            .step_by(997)
            .chain([src.len(), src.len() - 1])
        {
            let mut o = offset;
            while !src.is_char_boundary(o) {
                o -= 1;
            }
            let line_start = src[..o].rfind('\n').map_or(0, |i| i + 1);
            let line = src[..o].matches('\n').count() + 1;
            let col = src[line_start..o].chars().count() + 1;
            assert_eq!(index.line_col(offset), (line, col), "offset {offset}");
        }
        let end = src.find("END").unwrap();
        assert_eq!(index.line_col(end).0, 2);
        assert_eq!(index.line_text(3), "z");
    }
}
