//! A small POSIX-shell lexer, enough to find `redis-cli` invocations: words
//! with their quoting removed (single, double, `\`), parameter expansions
//! kept as variables, command substitutions `$(…)` and backticks lexed
//! recursively, operators, comments, line continuations and here-documents.
//! It never fails and every step advances, so it never hangs.

use crate::facts::Span;
use std::borrow::Cow;

/// One piece of a word after quote removal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    /// Literal text.
    Lit(String),
    /// `$NAME`, `${NAME…}`, `$1`, `$$` (name `$`), `$?`, …
    Var(String),
    /// `$(…)` or `` `…` ``: its tokens and its source text.
    Subst { toks: Vec<STok>, text: String },
    /// Anything else (arithmetic expansion, …).
    Unknown,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Word {
    pub parts: Vec<Part>,
    pub span: Span,
    /// `(offset in the literal text, byte offset in the source)` anchors for
    /// the literal parts, in the sense of `ScriptFact::anchors`.
    pub anchors: Vec<(usize, usize)>,
    /// Length of the literal text the anchors refer to.
    pub lit_len: usize,
}

impl Word {
    /// The whole word is literal text (no expansion). Borrowed in the usual
    /// case of one literal part.
    pub fn literal(&self) -> Option<Cow<'_, str>> {
        match self.parts.as_slice() {
            [] => Some(Cow::Borrowed("")),
            [Part::Lit(t)] => Some(Cow::Borrowed(t.as_str())),
            parts => {
                let mut s = String::new();
                for p in parts {
                    match p {
                        Part::Lit(t) => s.push_str(t),
                        _ => return None,
                    }
                }
                Some(Cow::Owned(s))
            }
        }
    }

    /// A readable form: literal text with `$NAME` / `$(…)` for expansions.
    pub fn text(&self) -> String {
        let mut s = String::new();
        for p in &self.parts {
            match p {
                Part::Lit(t) => s.push_str(t),
                Part::Var(n) => {
                    s.push('$');
                    s.push_str(n);
                }
                Part::Subst { text, .. } => s.push_str(text),
                Part::Unknown => s.push('?'),
            }
        }
        s
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum STok {
    Word(Word),
    /// `;` `;;` `&&` `||` `|` `|&` `&` `(` `)` and redirections `<` `>` `>>` `<<<` `<&` `>&` `&>`, `<<`.
    Op(&'static str, Span),
    Newline,
    /// The body of a here-document, right after its `<<` operator.
    Heredoc {
        body: Span,
        expand: bool,
    },
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Term {
    Eof,
    Paren,
    Backtick,
}

/// Recursion bound for nested substitutions.
const MAX_DEPTH: u32 = 24;

#[cfg(test)]
pub fn lex(src: &str) -> Vec<STok> {
    lex_range(src, 0, src.len())
}

/// The tokens of a whole script, lexed a batch at a time (the top-level
/// list, as [`lex`] returns it, without holding all of it at once).
pub struct Stream<'a> {
    l: Lexer<'a>,
    parens: u32,
    done: bool,
}

pub fn stream(src: &str) -> Stream<'_> {
    Stream {
        l: Lexer {
            src,
            b: src.as_bytes(),
            pos: 0,
            skips: Vec::new(),
            next_skip: 0,
            resume: 0,
        },
        parens: 0,
        done: false,
    }
}

impl Stream<'_> {
    /// Appends the next tokens to `out` until it holds `len` tokens and
    /// its last one is not a line break (so a run of line breaks is never
    /// cut), or the script ends.
    pub fn fill(&mut self, out: &mut Vec<STok>, len: usize) {
        while !self.done && (out.len() < len || matches!(out.last(), Some(STok::Newline))) {
            if !self.l.step(out, Term::Eof, 0, &mut self.parens) {
                self.done = true;
            }
        }
    }

    /// Every token has been handed out.
    pub fn done(&self) -> bool {
        self.done
    }
}

/// Lexes `src[start..end]` (a command string such as the body of
/// `trap '…' EXIT`); positions stay offsets into `src`.
pub fn lex_range(src: &str, start: usize, end: usize) -> Vec<STok> {
    let Some(src) = src.get(..end) else {
        return Vec::new();
    };
    if !src.is_char_boundary(start.min(end)) {
        return Vec::new();
    }
    let mut l = Lexer {
        src,
        b: src.as_bytes(),
        pos: start.min(end),
        skips: Vec::new(),
        next_skip: 0,
        resume: 0,
    };
    l.list(Term::Eof, 0)
}

struct Lexer<'a> {
    src: &'a str,
    b: &'a [u8],
    pos: usize,
    /// Here-document bodies (start, end) the lexer jumps over at their line
    /// start, in source order; `next_skip` is the first one not yet passed.
    skips: Vec<(usize, usize)>,
    next_skip: usize,
    /// Where the next here-document body starts at the earliest.
    resume: usize,
}

fn is_meta(c: u8) -> bool {
    matches!(
        c,
        b' ' | b'\t' | b'\r' | b'\n' | b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>'
    )
}

impl<'a> Lexer<'a> {
    fn peek(&self, k: usize) -> Option<u8> {
        self.b.get(self.pos + k).copied()
    }

    fn op(&mut self, out: &mut Vec<STok>, s: &'static str) {
        let start = self.pos;
        self.pos += s.len();
        out.push(STok::Op(s, Span::new(start, self.pos)));
    }

    fn list(&mut self, term: Term, depth: u32) -> Vec<STok> {
        let mut out = Vec::new();
        let mut parens = 0u32;
        while self.step(&mut out, term, depth, &mut parens) {}
        out
    }

    /// Lexes what stands at the current position (a token, blanks or a
    /// comment) into `out`; false at the end of the input or of `term`.
    fn step(&mut self, out: &mut Vec<STok>, term: Term, depth: u32, parens: &mut u32) -> bool {
        let Some(c) = self.peek(0) else {
            return false;
        };
        {
            match c {
                b' ' | b'\t' | b'\r' => self.pos += 1,
                b'\\' if matches!(self.peek(1), Some(b'\n')) => self.pos += 2,
                b'\n' => {
                    out.push(STok::Newline);
                    self.pos += 1;
                    self.jump_heredocs();
                }
                b'#' => {
                    self.pos = memchr::memchr(b'\n', &self.b[self.pos..])
                        .map_or(self.b.len(), |p| self.pos + p);
                }
                b';' => {
                    let s = if self.peek(1) == Some(b';') {
                        ";;"
                    } else {
                        ";"
                    };
                    self.op(out, s);
                }
                b'&' => {
                    let s = match self.peek(1) {
                        Some(b'&') => "&&",
                        Some(b'>') => "&>",
                        _ => "&",
                    };
                    self.op(out, s);
                }
                b'|' => {
                    let s = match self.peek(1) {
                        Some(b'|') => "||",
                        Some(b'&') => "|&",
                        _ => "|",
                    };
                    self.op(out, s);
                }
                b'(' => {
                    *parens += 1;
                    self.op(out, "(");
                }
                b')' => {
                    if term == Term::Paren && *parens == 0 {
                        self.pos += 1;
                        return false;
                    }
                    *parens = parens.saturating_sub(1);
                    self.op(out, ")");
                }
                b'`' if term == Term::Backtick => {
                    self.pos += 1;
                    return false;
                }
                b'<' | b'>' => self.redirection(out),
                _ => {
                    let w = self.word(term, depth);
                    out.push(STok::Word(w));
                }
            }
        }
        true
    }

    fn jump_heredocs(&mut self) {
        while let Some(&(s, e)) = self.skips.get(self.next_skip) {
            if s > self.pos {
                break;
            }
            if s == self.pos {
                self.pos = e.max(self.pos);
            }
            self.next_skip += 1;
        }
    }

    fn redirection(&mut self, out: &mut Vec<STok>) {
        let rest = &self.b[self.pos..];
        if rest.starts_with(b"<<<") {
            return self.op(out, "<<<");
        }
        if rest.starts_with(b"<<") {
            let start = self.pos;
            self.pos += 2;
            let strip_tabs = self.peek(0) == Some(b'-');
            if strip_tabs {
                self.pos += 1;
            }
            out.push(STok::Op("<<", Span::new(start, self.pos)));
            while matches!(self.peek(0), Some(b' ' | b'\t')) {
                self.pos += 1;
            }
            // The delimiter word: quotes removed; any quote disables expansion.
            let mut delim = Vec::new();
            let mut quoted = false;
            while let Some(c) = self.peek(0) {
                if is_meta(c) {
                    break;
                }
                if c == b'\'' || c == b'"' || c == b'\\' {
                    quoted = true;
                } else {
                    delim.push(c);
                }
                self.pos += 1;
            }
            let (body, end) = self.heredoc_body(&delim, strip_tabs);
            self.skips.push((body.start(), end));
            self.resume = end;
            out.push(STok::Heredoc {
                body,
                expand: !quoted,
            });
            return;
        }
        for s in ["<&", "<>", ">>", ">&", ">|", "<", ">"] {
            if rest.starts_with(s.as_bytes()) {
                return self.op(out, s);
            }
        }
        self.pos += 1;
    }

    /// The body after the current line (or after the previous here-document
    /// of this line), up to the delimiter line: (body span, end of the terminator line).
    fn heredoc_body(&self, delim: &[u8], strip_tabs: bool) -> (Span, usize) {
        let n = self.b.len();
        let line_end = memchr::memchr(b'\n', &self.b[self.pos..]).map_or(n, |p| self.pos + p);
        let start = (line_end + 1).max(self.resume).min(n);
        let mut p = start;
        while p < n {
            let eol = memchr::memchr(b'\n', &self.b[p..]).map_or(n, |q| p + q);
            let mut line = &self.b[p..eol];
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            if strip_tabs {
                while line.first() == Some(&b'\t') {
                    line = &line[1..];
                }
            }
            if line == delim {
                return (Span::new(start, p), (eol + 1).min(n));
            }
            p = eol + 1;
        }
        (Span::new(start, n), n)
    }

    fn word(&mut self, term: Term, depth: u32) -> Word {
        let start = self.pos;
        let mut w = WordBuilder::default();
        while let Some(c) = self.peek(0) {
            if is_meta(c) || (c == b'`' && term == Term::Backtick) {
                break;
            }
            match c {
                b'\'' => {
                    self.pos += 1;
                    let end = memchr::memchr(b'\'', &self.b[self.pos..])
                        .map_or(self.b.len(), |p| self.pos + p);
                    w.lit(self.src, self.pos, end);
                    self.pos = (end + 1).min(self.b.len());
                }
                b'"' => {
                    self.pos += 1;
                    self.double_quoted(&mut w, depth);
                }
                b'\\' => {
                    self.pos += 1;
                    match self.peek(0) {
                        Some(b'\n') => self.pos += 1,
                        Some(_) => {
                            let end = self.char_end(self.pos);
                            w.lit(self.src, self.pos, end);
                            self.pos = end;
                        }
                        None => {}
                    }
                }
                b'$' => self.dollar(&mut w, depth),
                b'`' => self.backtick(&mut w, depth),
                _ => {
                    // A run of plain characters.
                    let mut end = self.pos;
                    while end < self.b.len()
                        && !is_meta(self.b[end])
                        && !matches!(self.b[end], b'\'' | b'"' | b'\\' | b'$' | b'`')
                    {
                        end += 1;
                    }
                    let end = self.char_boundary(end);
                    w.lit(self.src, self.pos, end);
                    self.pos = end.max(self.pos + 1);
                }
            }
        }
        w.finish(Span::new(start, self.pos))
    }

    fn char_end(&self, i: usize) -> usize {
        let mut j = i + 1;
        while j < self.b.len() && (self.b[j] & 0xC0) == 0x80 {
            j += 1;
        }
        j.min(self.b.len())
    }

    fn char_boundary(&self, mut i: usize) -> usize {
        while i < self.b.len() && !self.src.is_char_boundary(i) {
            i += 1;
        }
        i
    }

    fn double_quoted(&mut self, w: &mut WordBuilder, depth: u32) {
        while let Some(c) = self.peek(0) {
            match c {
                b'"' => {
                    self.pos += 1;
                    return;
                }
                b'\\' => match self.peek(1) {
                    Some(b'\n') => self.pos += 2,
                    Some(b'$' | b'`' | b'"' | b'\\') => {
                        w.lit(self.src, self.pos + 1, self.pos + 2);
                        self.pos += 2;
                    }
                    _ => {
                        w.lit(self.src, self.pos, self.pos + 1);
                        self.pos += 1;
                    }
                },
                b'$' => self.dollar(w, depth),
                b'`' => self.backtick(w, depth),
                _ => {
                    let mut end = self.pos;
                    while end < self.b.len() && !matches!(self.b[end], b'"' | b'\\' | b'$' | b'`') {
                        end += 1;
                    }
                    let end = self.char_boundary(end);
                    w.lit(self.src, self.pos, end);
                    self.pos = end.max(self.pos + 1);
                }
            }
        }
    }

    fn dollar(&mut self, w: &mut WordBuilder, depth: u32) {
        let b = self.b;
        match self.peek(1) {
            Some(b'(') if self.peek(2) == Some(b'(') => {
                // Arithmetic: skip to the matching `))`.
                let mut d = 0i64;
                let mut i = self.pos + 1;
                while i < b.len() {
                    match b[i] {
                        b'(' => d += 1,
                        b')' => {
                            d -= 1;
                            if d <= 0 {
                                i += 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
                self.pos = i.min(b.len());
                w.part(Part::Unknown);
            }
            Some(b'(') => {
                let start = self.pos;
                self.pos += 2;
                let toks = if depth < MAX_DEPTH {
                    self.list(Term::Paren, depth + 1)
                } else {
                    self.skip_balanced();
                    Vec::new()
                };
                let text = self.src.get(start..self.pos).unwrap_or("").to_string();
                w.part(Part::Subst { toks, text });
            }
            Some(b'{') => {
                let start = self.pos + 2;
                let end = memchr::memchr(b'}', &b[start..]).map_or(b.len(), |p| start + p);
                let inner = self.src.get(start..end).unwrap_or("");
                let inner = inner.trim_start_matches(['#', '!']);
                let name: String = match inner.chars().next() {
                    Some(c) if c.is_ascii_alphanumeric() || c == '_' => inner
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect(),
                    Some(c) => c.to_string(),
                    None => String::new(),
                };
                self.pos = (end + 1).min(b.len());
                w.part(Part::Var(name));
            }
            Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
                let s = self.pos + 1;
                let mut e = s;
                while e < b.len() && (b[e].is_ascii_alphanumeric() || b[e] == b'_') {
                    e += 1;
                }
                w.part(Part::Var(self.src.get(s..e).unwrap_or("").to_string()));
                self.pos = e;
            }
            Some(c) if c.is_ascii_digit() || b"$?!@*#-".contains(&c) => {
                w.part(Part::Var((c as char).to_string()));
                self.pos += 2;
            }
            Some(b'\'') => {
                // $'…' (ANSI-C quoting): taken literally, escapes kept.
                self.pos += 2;
                let s = self.pos;
                while self.pos < b.len() && b[self.pos] != b'\'' {
                    self.pos += if b[self.pos] == b'\\' { 2 } else { 1 };
                }
                let e = self.char_boundary(self.pos.min(b.len()));
                w.lit(self.src, s, e);
                self.pos = (e + 1).min(b.len());
            }
            _ => {
                w.lit(self.src, self.pos, self.pos + 1);
                self.pos += 1;
            }
        }
    }

    fn backtick(&mut self, w: &mut WordBuilder, depth: u32) {
        let start = self.pos;
        self.pos += 1;
        let toks = if depth < MAX_DEPTH {
            self.list(Term::Backtick, depth + 1)
        } else {
            self.pos = memchr::memchr(b'`', &self.b[self.pos..])
                .map_or(self.b.len(), |p| self.pos + p + 1);
            Vec::new()
        };
        let text = self.src.get(start..self.pos).unwrap_or("").to_string();
        w.part(Part::Subst { toks, text });
    }

    /// Past the `)` that closes a `$(` whose content is not lexed (too deep).
    fn skip_balanced(&mut self) {
        let mut d = 0u32;
        while let Some(c) = self.peek(0) {
            self.pos += 1;
            match c {
                b'(' => d += 1,
                b')' if d == 0 => return,
                b')' => d -= 1,
                _ => {}
            }
        }
    }
}

/// Builds a [`Word`] from literal source runs, decoded text and expansions.
#[derive(Default)]
pub(super) struct WordBuilder {
    parts: Vec<Part>,
    anchors: Vec<(usize, usize)>,
    lit_len: usize,
}

impl WordBuilder {
    /// Appends the source text `start..end` as literal text.
    pub(super) fn lit(&mut self, src: &str, start: usize, end: usize) {
        let Some(text) = src.get(start..end) else {
            return;
        };
        if text.is_empty() {
            return;
        }
        let contiguous = self
            .anchors
            .last()
            .is_some_and(|&(t, s)| s + (self.lit_len - t) == start);
        if !contiguous {
            self.anchors.push((self.lit_len, start));
        }
        self.lit_len += text.len();
        if let Some(Part::Lit(prev)) = self.parts.last_mut() {
            prev.push_str(text);
        } else {
            self.parts.push(Part::Lit(text.to_string()));
        }
    }

    /// Appends decoded text that does not stand verbatim in the source (an escape).
    pub(super) fn decoded(&mut self, text: &str) {
        self.lit_len += text.len();
        if let Some(Part::Lit(prev)) = self.parts.last_mut() {
            prev.push_str(text);
        } else {
            self.parts.push(Part::Lit(text.to_string()));
        }
    }

    pub(super) fn part(&mut self, p: Part) {
        self.parts.push(p);
    }

    pub(super) fn finish(mut self, span: Span) -> Word {
        // a word is kept until its script is read to the end: no spare
        // room (a first push leaves room for four parts and four anchors)
        self.parts.shrink_to_fit();
        self.anchors.shrink_to_fit();
        Word {
            parts: self.parts,
            span,
            anchors: self.anchors,
            lit_len: self.lit_len,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(src: &str) -> Vec<String> {
        lex(src)
            .into_iter()
            .map(|t| match t {
                STok::Word(w) => w.text(),
                STok::Op(o, _) => format!("<{o}>"),
                STok::Newline => "<nl>".into(),
                STok::Heredoc { body, .. } => format!("<doc {}>", &src[body.range()]),
            })
            .collect()
    }

    #[test]
    fn quoting_and_expansions() {
        assert_eq!(
            words(
                "redis-cli -h \"$HOST\" SET 'lock:job' \"lock:${JOB}\" x\\ y # DEL lock\nDEL a;b"
            ),
            vec![
                "redis-cli",
                "-h",
                "$HOST",
                "SET",
                "lock:job",
                "lock:$JOB",
                "x y",
                "<nl>",
                "DEL",
                "a",
                "<;>",
                "b"
            ]
        );
    }

    #[test]
    fn substitutions_nest() {
        let toks = lex("OK=$(redis-cli SET k \"$(uuidgen)\" NX) && echo `date +%s`");
        let STok::Word(w) = &toks[0] else { panic!() };
        assert_eq!(w.parts[0], Part::Lit("OK=".into()));
        let Part::Subst { toks: inner, .. } = &w.parts[1] else {
            panic!()
        };
        assert_eq!(inner.len(), 5);
        assert_eq!(toks[1], STok::Op("&&", Span::new(38, 40)));
    }

    #[test]
    fn heredoc_bodies() {
        let src = "redis-cli <<EOF\nMULTI\nEXEC\nEOF\nDEL x\ncat <<-'E' >/dev/null\n\tx\n\tE\n";
        assert_eq!(
            words(src),
            vec![
                "redis-cli",
                "<<<>",
                "<doc MULTI\nEXEC\n>",
                "<nl>",
                "DEL",
                "x",
                "<nl>",
                "cat",
                "<<<>",
                "<doc \tx\n>",
                "<>>",
                "/dev/null",
                "<nl>"
            ]
        );
    }

    #[test]
    fn anchors_map_literal_text() {
        let src = "X \"ab\\\"cd\"";
        let toks = lex(src);
        let STok::Word(w) = &toks[1] else { panic!() };
        assert_eq!(w.literal().as_deref(), Some("ab\"cd"));
        assert_eq!(w.anchors, vec![(0, 3), (2, 6)]);
    }

    #[test]
    fn odd_input_terminates() {
        for src in [
            "$(",
            "`",
            "\"",
            "'",
            "${",
            "$((",
            "<<",
            "<<EOF",
            "\\",
            "$(((((",
            "a)b",
            "é$é",
            "$'\\",
            "<<-",
            "x <<A <<B\nA\n",
        ] {
            let _ = lex(src);
        }
        let deep = "$(".repeat(5000);
        let _ = lex(&deep);
    }
}
