//! A small lexer per language family (C-like, Python, Ruby; PHP and the
//! interpolating C-likes as variants). It drops comments, keeps string
//! literals with their source span, their decoded text, anchors from text
//! offsets to source offsets, and their interpolations as parts.

use crate::facts::Language;
use std::marker::PhantomData;
use std::ptr::NonNull;

/// The discriminants are the token's packed kind bits (`Tok::meta`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    Ident = 0,
    Str = 1,
    Num = 2,
    Punct = 3,
}

/// One piece of a string literal: literal text or an interpolated expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StrPart {
    /// A byte range of the decoded text (`StrLit::text`).
    Lit(usize, usize),
    /// The expression's source byte range.
    Interp(usize, usize),
}

/// A string literal: its decoded text (interpolations left out), its
/// anchors (`(text offset, source offset)`, sorted by text offset: where
/// the text's runs stand in the source) and its parts.
///
/// Nearly every literal is one run of the source (no escape, no
/// interpolation): its text then borrows the source, its one anchor is
/// `(0, at)` and its one part the whole text, so it allocates nothing (a
/// dense file holds a literal every hundred bytes, and each took three
/// small allocations). The first escape or interpolation moves it to an
/// owned text with explicit anchors and parts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StrLit<'a> {
    text: std::borrow::Cow<'a, str>,
    /// The source offset of `text` while it borrows the source.
    at: usize,
    /// The anchors and parts, once the literal is more than one run.
    pieces: Option<Box<Pieces>>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Pieces {
    anchors: Vec<(usize, usize)>,
    parts: Vec<StrPart>,
}

impl<'a> StrLit<'a> {
    /// The decoded text of the literal pieces (interpolations left out).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// [`StrLit::text`] for as long as the literal's table is borrowed.
    fn text_for(&'a self) -> &'a str {
        &self.text
    }

    /// `(text offset, source offset)` of each run of the text, sorted by
    /// text offset.
    pub fn anchors(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        let (one, many) = match &self.pieces {
            None => ((!self.text.is_empty()).then_some((0, self.at)), &[][..]),
            Some(p) => (None, p.anchors.as_slice()),
        };
        one.into_iter().chain(many.iter().copied())
    }

    /// The literal text and interpolated expressions, in order.
    pub fn parts(&self) -> impl Iterator<Item = StrPart> + '_ {
        let (one, many) = match &self.pieces {
            None => (
                (!self.text.is_empty()).then_some(StrPart::Lit(0, self.text.len())),
                &[][..],
            ),
            Some(p) => (None, p.parts.as_slice()),
        };
        one.into_iter().chain(many.iter().copied())
    }

    /// The literal stops being one run of the source: its anchors and parts
    /// are written out and its text owned.
    fn pieces(&mut self) -> &mut Pieces {
        if self.pieces.is_none() {
            let anchors: Vec<(usize, usize)> = self.anchors().collect();
            let parts: Vec<StrPart> = self.parts().collect();
            self.text = std::borrow::Cow::Owned(std::mem::take(&mut self.text).into_owned());
            self.pieces = Some(Box::new(Pieces { anchors, parts }));
        }
        self.pieces.get_or_insert_with(Default::default)
    }

    fn push_src(&mut self, src: &'a str, from: usize, to: usize) {
        if from >= to {
            return;
        }
        let Some(piece) = src.get(from..to) else {
            return;
        };
        if self.pieces.is_none() {
            if self.text.is_empty() {
                self.text = std::borrow::Cow::Borrowed(piece);
                self.at = from;
                return;
            }
            // the run goes on where it stopped: still one slice
            if let std::borrow::Cow::Borrowed(t) = self.text {
                if self.at + t.len() == from {
                    if let Some(run) = src.get(self.at..to) {
                        self.text = std::borrow::Cow::Borrowed(run);
                        return;
                    }
                }
            }
        }
        let len = self.text.len();
        let p = self.pieces();
        let predicted = p.anchors.last().map(|&(t, s)| s + (len - t));
        if predicted != Some(from) {
            // Most literals have one anchor: room for one, not the default four.
            p.anchors.reserve_exact(1);
            p.anchors.push((len, from));
        }
        self.text.to_mut().push_str(piece);
        self.push_lit(len);
    }
    fn push_decoded(&mut self, c: char) {
        self.pieces();
        let at = self.text.len();
        self.text.to_mut().push(c);
        self.push_lit(at);
    }
    /// The decoded text grew from `at` to its end: one literal piece more.
    fn push_lit(&mut self, at: usize) {
        let end = self.text.len();
        let p = self.pieces();
        if let Some(StrPart::Lit(_, prev)) = p.parts.last_mut() {
            *prev = end;
        } else {
            p.parts.reserve_exact(1);
            p.parts.push(StrPart::Lit(at, end));
        }
    }
    fn push_interp(&mut self, start: usize, end: usize) {
        self.pieces().parts.push(StrPart::Interp(start, end));
    }
    pub fn has_interp(&self) -> bool {
        self.parts().any(|p| matches!(p, StrPart::Interp(..)))
    }
}

/// One token: 16 bytes, no allocation of its own (tokens can come every
/// two or three bytes of dense code). A pointer to its text and two plain
/// `u32` words, laid out so that the hot readers (`kind`, `is`, `text`,
/// `start`) cost a mask or a shift, never a branch on a class:
/// - `at`: the first source byte (low [`OFF_BITS`] bits) and the
///   line-break flag ([`NL_BIT`]);
/// - `meta`: the span length (low [`OFF_BITS`] bits), the [`NOT_SRC`] flag
///   and the kind (top two bits, [`Kind`]'s discriminant).
///
/// A token without [`NOT_SRC`] is a source token: `ptr` is its first
/// source byte and its text is the span. With it, the text is elsewhere: a
/// string literal's `ptr` is its entry of the side table `lex` fills (the
/// decoded text), any other token's `ptr` is a `&'static str` (`/regex/`
/// for a JS regex literal; empty for a span that is not a char-boundary
/// slice of the source).
#[derive(Clone, Copy)]
pub struct Tok<'a> {
    ptr: NonNull<u8>,
    at: u32,
    meta: u32,
    /// The token reads the source and the literal table for `'a`.
    life: PhantomData<(&'a str, &'a StrLit<'a>)>,
}

const _: () = assert!(std::mem::size_of::<Tok>() == 16);

// SAFETY: a `Tok` is a shared borrow of the source (`&'a str`), of an
// entry of the literal table (`&'a StrLit`) or of a `&'static str`, plus
// plain integers; all are `Send` and `Sync`.
unsafe impl Send for Tok<'_> {}
unsafe impl Sync for Tok<'_> {}

/// Bits of a source offset or span length: every offset of a file the
/// engine reads fits (the lexer reads no more than `OFF_MAX` bytes).
const OFF_BITS: u32 = 29;
const OFF_MAX: usize = (1 << OFF_BITS) - 1;
const OFF_MASK: u32 = OFF_MAX as u32;
const _: () = assert!(crate::engine::MAX_FILE_BYTES <= OFF_MAX as u64);
/// `Tok::at`: a line break stands before the token.
const NL_BIT: u32 = 1 << 31;
/// `Tok::meta`: the text is not the source span (see [`Tok`]).
const NOT_SRC: u32 = 1 << OFF_BITS;
const KIND_SHIFT: u32 = 30;
/// The text of a JS regex literal token, and of a token without one.
static REGEX_TEXT: &str = "/regex/";
static NO_TEXT: &str = "";

/// A token while lexing: its literal is an index into the side table. As
/// large and aligned as a [`Tok`], so that the raw tokens' buffer becomes
/// the tokens' (collected in place).
#[derive(Clone, Copy)]
#[repr(align(8))]
struct Raw {
    start: u32,
    end: u32,
    /// Index of the literal in the side table, or `NO_LIT`.
    lit: u32,
    kind: Kind,
    nl: bool,
}

const NO_LIT: u32 = u32::MAX;
/// `Raw::lit` of a JS regex literal, an opaque `/regex/` token.
const REGEX: u32 = u32::MAX - 1;

impl<'a> Tok<'a> {
    /// Identifier, number or punctuation text; for strings the decoded text
    /// (the literal's own, from the side table); `/regex/` for a JS regex.
    #[inline]
    pub fn text(&self) -> &'a str {
        if self.meta & NOT_SRC == 0 {
            // SAFETY: `ptr` and the span length were taken from a
            // `&'a str` slice of the source at char boundaries.
            unsafe {
                std::str::from_utf8_unchecked(std::slice::from_raw_parts(
                    self.ptr.as_ptr(),
                    (self.meta & OFF_MASK) as usize,
                ))
            }
        } else {
            self.other_text()
        }
    }
    /// The text of a token that is not a source span.
    #[cold]
    #[inline(never)]
    fn other_text(&self) -> &'a str {
        match self.lit() {
            Some(l) => l.text_for(),
            // SAFETY: a token with `NOT_SRC` that is no string literal
            // points at `REGEX_TEXT` or `NO_TEXT` (see `Tok::new`).
            None => unsafe { *(self.ptr.as_ptr() as *const &'static str) },
        }
    }
    #[inline]
    pub fn kind(&self) -> Kind {
        match self.meta >> KIND_SHIFT {
            0 => Kind::Ident,
            1 => Kind::Str,
            2 => Kind::Num,
            _ => Kind::Punct,
        }
    }
    /// A line break stands between the previous token and this one.
    #[inline]
    pub fn nl(&self) -> bool {
        self.at & NL_BIT != 0
    }
    /// The token's first source byte.
    #[inline]
    pub fn start(&self) -> usize {
        (self.at & OFF_MASK) as usize
    }
    /// One past the token's last source byte.
    #[inline]
    pub fn end(&self) -> usize {
        self.start() + (self.meta & OFF_MASK) as usize
    }
    /// Not a string literal, and its text is `s`.
    #[inline]
    pub fn is(&self, s: &str) -> bool {
        // a source token (never a string) of `s`'s length: one compare
        if self.meta & (NOT_SRC | OFF_MASK) == s.len() as u32 {
            return self.text().as_bytes() == s.as_bytes();
        }
        self.meta & NOT_SRC != 0 && self.kind() != Kind::Str && self.other_text() == s
    }
    #[inline]
    pub fn is_ident(&self) -> bool {
        self.meta >> KIND_SHIFT == Kind::Ident as u32
    }
    /// A string literal's pieces (every `Kind::Str` token has them).
    #[inline]
    pub fn lit(&self) -> Option<&'a StrLit<'a>> {
        // SAFETY: a string literal token's pointer is an entry of the side
        // table, borrowed (unmoved, unchanged) for `'a`.
        (self.kind() == Kind::Str).then(|| unsafe { &*(self.ptr.as_ptr() as *const StrLit<'a>) })
    }
    /// The token of a raw one; `lits` is the finished side table.
    fn new(src: &'a str, lits: &'a [StrLit<'a>], r: &Raw) -> Tok<'a> {
        let lit = lits.get(r.lit as usize).filter(|_| r.kind == Kind::Str);
        let (ptr, src_text) = match lit {
            Some(l) => (NonNull::from(l).cast::<u8>(), false),
            None if r.lit == REGEX => (NonNull::from(&REGEX_TEXT).cast::<u8>(), false),
            None => match src.get(r.start as usize..r.end as usize) {
                Some(span) => (NonNull::from(span.as_bytes()).cast::<u8>(), true),
                None => (NonNull::from(&NO_TEXT).cast::<u8>(), false),
            },
        };
        // A `Kind::Str` token's pointer is its literal (`lit()` reads it):
        // `push_str` is the only maker of string tokens, so every one has
        // its literal; a string without one (none is made) would be read
        // as punctuation rather than through a pointer of another type.
        let kind = match (r.kind, lit) {
            (Kind::Str, None) => Kind::Punct,
            (k, _) => k,
        };
        let len = r.end.saturating_sub(r.start);
        Tok {
            ptr,
            at: r.start | if r.nl { NL_BIT } else { 0 },
            meta: len | if src_text { 0 } else { NOT_SRC } | (kind as u32) << KIND_SHIFT,
            life: PhantomData,
        }
    }
}

impl PartialEq for Tok<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at && self.meta == other.meta && self.text() == other.text()
    }
}
impl Eq for Tok<'_> {}

impl std::fmt::Debug for Tok<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tok")
            .field("text", &self.text())
            .field("start", &self.start())
            .field("end", &self.end())
            .field("kind", &self.kind())
            .field("nl", &self.nl())
            .finish()
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Family {
    CLike,
    Python,
    Ruby,
}

fn family(lang: Language) -> Family {
    match lang {
        Language::Python => Family::Python,
        Language::Ruby => Family::Ruby,
        _ => Family::CLike,
    }
}

const PUNCTS: &[&str] = &[
    "===", "!==", "...", "<=>", "?.", "??", "?:", "->", "=>", "::", "==", "!=", "<=", ">=", "&&",
    "||", ":=", "+=", "-=", "*=", "/=", "..", "++", "--", "**", "<<",
];

/// The first bytes of [`PUNCTS`]: any other byte is a punctuation token
/// of its own (brackets, commas, semicolons: most of them).
const PUNCT_HEADS: [bool; 128] = {
    let mut t = [false; 128];
    let mut k = 0;
    while k < PUNCTS.len() {
        t[PUNCTS[k].as_bytes()[0] as usize] = true;
        k += 1;
    }
    t
};

/// The bytes that can start a comment or a string literal in some family
/// ([`Lx::comment`], [`Lx::string`]): at any other byte neither reads
/// anything. Quotes, `/` `#` `=` (`=begin`), C# `@"`/`$"`, PHP `<<<`, Ruby
/// `:sym` `%q{}` `<<~EOS`, and Python's prefixes `r` `b` `u` `f`.
const OPENS: [bool; 256] = {
    let mut t = [false; 256];
    let bytes = b"/#=\"'`@$<:%rbufRBUF";
    let mut k = 0;
    while k < bytes.len() {
        t[bytes[k] as usize] = true;
        k += 1;
    }
    t
};

/// ASCII bytes of an identifier after its first ([`is_ident_char`]).
const IDENT_CHAR: [bool; 128] = {
    let mut t = [false; 128];
    let mut c = 0;
    while c < 128 {
        t[c] = (c as u8).is_ascii_alphanumeric() || c as u8 == b'_';
        c += 1;
    }
    t
};

/// The bytes a string body stops at besides its delimiter: a line break,
/// an escape, and every byte that can open an interpolation or a `{{`/`}}`
/// escape ([`Lx::interp_at`]).
const BODY_SPECIAL: [bool; 128] = {
    let mut t = [false; 128];
    t[b'\n' as usize] = true;
    t[b'\\' as usize] = true;
    t[b'$' as usize] = true;
    t[b'{' as usize] = true;
    t[b'}' as usize] = true;
    t[b'#' as usize] = true;
    t
};

struct Lx<'a> {
    src: &'a str,
    b: &'a [u8],
    i: usize,
    lang: Language,
    fam: Family,
    toks: Vec<Raw>,
    lits: Vec<StrLit<'a>>,
    nl: bool,
    /// Ruby heredocs whose bodies start at the next line: (terminator, squiggly/dash, interpolating, literal index).
    pending_heredocs: Vec<(String, bool, usize)>,
}

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c >= 0x80
}
fn is_ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}

/// Lexes `src` as `lang`; the string literals' pieces go to `lits`, which
/// the tokens borrow. Never panics; unterminated constructs end at EOF.
/// Only the first `OFF_MAX` bytes (512 MiB) are read (token offsets are
/// packed in 29 bits; the engine reads no file of more than
/// `MAX_FILE_BYTES`).
pub fn lex<'a>(src: &'a str, lang: Language, lits: &'a mut Vec<StrLit<'a>>) -> Vec<Tok<'a>> {
    lex_with_lits(src, lang, lits).0
}

/// [`lex`], and the side table of the literals for [`Tok::lit`].
pub fn lex_with_lits<'a>(
    src: &'a str,
    lang: Language,
    lits: &'a mut Vec<StrLit<'a>>,
) -> (Vec<Tok<'a>>, &'a [StrLit<'a>]) {
    let mut cut = src.len().min(OFF_MAX);
    while !src.is_char_boundary(cut) {
        cut -= 1;
    }
    let src = &src[..cut];
    let mut lx = Lx {
        src,
        b: src.as_bytes(),
        i: 0,
        lang,
        fam: family(lang),
        toks: Vec::new(),
        lits: Vec::new(),
        nl: false,
        pending_heredocs: Vec::new(),
    };
    lx.run();
    // Both tables grew by doubling: their spare room is given back (a
    // large shrink is a remap, not a copy), then the raw tokens become the
    // tokens in their own buffer.
    let mut raw = lx.toks;
    raw.shrink_to_fit();
    *lits = lx.lits;
    lits.shrink_to_fit();
    let lits: &'a [StrLit<'a>] = lits;
    let toks: Vec<Tok<'a>> = raw.into_iter().map(|r| Tok::new(src, lits, &r)).collect();
    (toks, lits)
}

/// Lexes `src` for a test or a short snippet: the literals' table is leaked.
#[cfg(test)]
pub fn lex_leak<'a>(src: &'a str, lang: Language) -> Vec<Tok<'a>> {
    let lits: &'a mut Vec<StrLit<'a>> = Box::leak(Box::default());
    lex(src, lang, lits)
}

impl<'a> Lx<'a> {
    fn at(&self, k: usize) -> u8 {
        self.b.get(self.i + k).copied().unwrap_or(0)
    }
    fn starts(&self, s: &str) -> bool {
        self.b[self.i.min(self.b.len())..].starts_with(s.as_bytes())
    }
    fn char_len(&self, i: usize) -> usize {
        match self.b.get(i) {
            Some(&c) if c < 0x80 => 1,
            Some(&c) if c >= 0xF0 => 4,
            Some(&c) if c >= 0xE0 => 3,
            Some(&c) if c >= 0xC0 => 2,
            Some(_) => 1,
            None => 1,
        }
    }
    fn push(&mut self, kind: Kind, start: usize, end: usize, lit: u32) {
        self.toks.push(Raw {
            kind,
            start: start as u32,
            end: end as u32,
            lit,
            nl: std::mem::take(&mut self.nl),
        });
    }
    /// A source token: its text is the source's.
    fn push_src(&mut self, kind: Kind, start: usize, end: usize) {
        self.push(kind, start, end, NO_LIT);
    }
    /// A string literal token, its pieces in the side table.
    fn push_str(&mut self, start: usize, end: usize, lit: StrLit<'a>) {
        let idx = self.lits.len() as u32;
        self.lits.push(lit);
        self.push(Kind::Str, start, end, idx);
    }
    fn prev(&self) -> Option<&Raw> {
        self.toks.last()
    }
    /// The source text of a token (the previous one, for context).
    fn raw_text(&self, t: &Raw) -> &'a str {
        self.src.get(t.start as usize..t.end as usize).unwrap_or("")
    }

    fn run(&mut self) {
        let n = self.b.len();
        while self.i < n {
            let c = self.b[self.i];
            if c == b'\n' {
                self.nl = true;
                self.i += 1;
                if !self.pending_heredocs.is_empty() {
                    self.ruby_heredoc_bodies();
                }
                continue;
            }
            if c.is_ascii_whitespace() {
                self.i += 1;
                continue;
            }
            if OPENS[c as usize] {
                if self.comment() {
                    continue;
                }
                if self.string() {
                    continue;
                }
            }
            if is_ident_start(c)
                || (c == b'$'
                    && matches!(
                        self.lang,
                        Language::Php
                            | Language::JavaScript
                            | Language::TypeScript
                            | Language::Ruby
                    ))
                || (c == b'@' && self.fam == Family::Ruby)
            {
                let start = self.i;
                self.i += 1;
                let dollar = self.fam == Family::CLike && self.lang != Language::Php;
                while self.i < n {
                    let ch = self.b[self.i];
                    if ch < 0x80 {
                        if !(IDENT_CHAR[ch as usize] || ch == b'$' && dollar || ch == b'@') {
                            break;
                        }
                        self.i += 1;
                    } else {
                        self.i += self.char_len(self.i);
                    }
                }
                // Ruby predicate/bang methods.
                if self.fam == Family::Ruby
                    && matches!(self.at(0), b'?' | b'!')
                    && self.at(1) != b'='
                {
                    self.i += 1;
                }
                let end = self.i.min(n);
                self.push_src(Kind::Ident, start, end);
                continue;
            }
            if c.is_ascii_digit() {
                let start = self.i;
                while self.i < n
                    && (self.b[self.i].is_ascii_alphanumeric()
                        || self.b[self.i] == b'_'
                        || (self.b[self.i] == b'.'
                            && self.b.get(self.i + 1).is_some_and(|d| d.is_ascii_digit())))
                {
                    self.i += 1;
                }
                self.push_src(Kind::Num, start, self.i);
                continue;
            }
            if c >= 0x80 {
                self.i += self.char_len(self.i);
                continue;
            }
            let start = self.i;
            let p = if PUNCT_HEADS[c as usize] {
                PUNCTS.iter().find(|p| self.starts(p)).copied()
            } else {
                None
            };
            let len = p.map(|p| p.len()).unwrap_or(1);
            self.i += len;
            self.push_src(Kind::Punct, start, self.i);
        }
    }

    /// Skips a comment at the cursor; true when one was skipped.
    fn comment(&mut self) -> bool {
        let c = self.at(0);
        let line_comment = match self.fam {
            Family::CLike => {
                (c == b'/' && self.at(1) == b'/')
                    || (self.lang == Language::Php && c == b'#' && self.at(1) != b'[')
            }
            Family::Python | Family::Ruby => c == b'#',
        };
        if line_comment {
            while self.i < self.b.len() && self.b[self.i] != b'\n' {
                self.i += 1;
            }
            return true;
        }
        if self.fam == Family::CLike && c == b'/' && self.at(1) == b'*' {
            self.i += 2;
            while self.i < self.b.len() && !(self.b[self.i] == b'*' && self.at(1) == b'/') {
                if self.b[self.i] == b'\n' {
                    self.nl = true;
                }
                self.i += 1;
            }
            self.i = (self.i + 2).min(self.b.len());
            return true;
        }
        if self.fam == Family::Ruby
            && self.starts("=begin")
            && (self.i == 0 || self.b[self.i - 1] == b'\n')
        {
            match self.src[self.i..].find("\n=end") {
                Some(k) => {
                    let e = self.i + k + 5;
                    self.i = self.src[e..]
                        .find('\n')
                        .map(|x| e + x)
                        .unwrap_or(self.b.len());
                }
                None => self.i = self.b.len(),
            }
            return true;
        }
        false
    }

    /// Lexes a string literal at the cursor; true when one was read.
    fn string(&mut self) -> bool {
        let start = self.i;
        match self.fam {
            Family::Python => {
                // prefixes: r, b, u, f and combinations
                let mut k = 0;
                while k < 3 && matches!(self.at(k).to_ascii_lowercase(), b'r' | b'b' | b'u' | b'f')
                {
                    k += 1;
                }
                let q = self.at(k);
                if (q == b'"' || q == b'\'') && (k == 0 || !self.prev_is_ident_glued(start)) {
                    let prefix = self
                        .src
                        .get(start..start + k)
                        .unwrap_or("")
                        .to_ascii_lowercase();
                    let raw = prefix.contains('r');
                    let fstr = prefix.contains('f');
                    self.i += k;
                    let triple = self.at(0) == q && self.at(1) == q && self.at(2) == q;
                    let delim = if triple {
                        if q == b'"' {
                            "\"\"\""
                        } else {
                            "'''"
                        }
                    } else if q == b'"' {
                        "\""
                    } else {
                        "'"
                    };
                    self.i += delim.len();
                    let lit = self.body(
                        delim,
                        !raw,
                        if fstr { Interp::Brace } else { Interp::None },
                        !triple,
                    );
                    self.push_str(start, self.i, lit);
                    return true;
                }
                false
            }
            Family::Ruby => self.ruby_string(),
            Family::CLike => self.clike_string(),
        }
    }

    fn prev_is_ident_glued(&self, start: usize) -> bool {
        start > 0 && is_ident_char(self.b[start - 1])
    }

    fn clike_string(&mut self) -> bool {
        let c = self.at(0);
        let start = self.i;
        let lang = self.lang;
        match lang {
            Language::Java | Language::Kotlin if self.starts("\"\"\"") => {
                self.i += 3;
                let interp = if lang == Language::Kotlin {
                    Interp::Dollar
                } else {
                    Interp::None
                };
                // Java text blocks start after the line break.
                if lang == Language::Java {
                    while self.i < self.b.len() && self.b[self.i] != b'\n' {
                        self.i += 1;
                    }
                    self.i = (self.i + 1).min(self.b.len());
                }
                let lit = self.body("\"\"\"", lang == Language::Java, interp, false);
                self.push_str(start, self.i, lit);
                true
            }
            Language::CSharp if c == b'@' || c == b'$' => {
                let mut k = 0;
                let mut verbatim = false;
                let mut interp = false;
                while k < 3 {
                    match self.at(k) {
                        b'@' => verbatim = true,
                        b'$' => interp = true,
                        _ => break,
                    }
                    k += 1;
                }
                if self.at(k) != b'"' {
                    return false;
                }
                self.i += k;
                let raw = self.starts("\"\"\"");
                let delim = if raw { "\"\"\"" } else { "\"" };
                self.i += delim.len();
                let mode = if interp { Interp::Brace } else { Interp::None };
                let lit = if verbatim || raw {
                    self.verbatim_body(delim, mode)
                } else {
                    self.body("\"", true, mode, true)
                };
                self.push_str(start, self.i, lit);
                true
            }
            _ if c == b'"' && lang == Language::CSharp && self.starts("\"\"\"") => {
                self.i += 3;
                let lit = self.verbatim_body("\"\"\"", Interp::None);
                self.push_str(start, self.i, lit);
                true
            }
            _ if c == b'"'
                || c == b'\''
                || (c == b'`'
                    && matches!(
                        lang,
                        Language::JavaScript | Language::TypeScript | Language::Go
                    )) =>
            {
                self.i += 1;
                let d = match c {
                    b'"' => "\"",
                    b'\'' => "'",
                    _ => "`",
                };
                let (escapes, interp, single_line) = match (lang, c) {
                    (Language::Go, b'`') => (false, Interp::None, false),
                    (Language::JavaScript | Language::TypeScript, b'`') => {
                        (true, Interp::DollarBrace, false)
                    }
                    (Language::Kotlin, b'"') => (true, Interp::Dollar, true),
                    (Language::Php, b'"') => (true, Interp::Php, false),
                    (Language::Php, b'\'') => (true, Interp::None, false),
                    _ => (true, Interp::None, true),
                };
                let lit = if lang == Language::Php && c == b'\'' {
                    self.php_single()
                } else {
                    self.body(d, escapes, interp, single_line)
                };
                self.push_str(start, self.i, lit);
                true
            }
            Language::Php if self.starts("<<<") => {
                let mut j = self.i + 3;
                while j < self.b.len() && (self.b[j] == b' ' || self.b[j] == b'\t') {
                    j += 1;
                }
                let quote = self.b.get(j).copied().filter(|&q| q == b'\'' || q == b'"');
                if quote.is_some() {
                    j += 1;
                }
                let ns = j;
                while j < self.b.len() && is_ident_char(self.b[j]) {
                    j += 1;
                }
                if j == ns {
                    return false;
                }
                let term = self.src[ns..j].to_string();
                if quote.is_some() {
                    j += 1;
                }
                // body starts after the line break
                while j < self.b.len() && self.b[j] != b'\n' {
                    j += 1;
                }
                self.i = (j + 1).min(self.b.len());
                let interp = if quote == Some(b'\'') {
                    Interp::None
                } else {
                    Interp::Php
                };
                let lit = self.heredoc_body(&term, interp);
                self.push_str(start, self.i, lit);
                true
            }
            Language::JavaScript | Language::TypeScript if c == b'/' && self.regex_allowed() => {
                // A regex literal: skip it as an opaque token.
                self.i += 1;
                let mut class = false;
                while self.i < self.b.len() && self.b[self.i] != b'\n' {
                    let ch = self.b[self.i];
                    if ch == b'\\' {
                        self.i += 2;
                        continue;
                    }
                    if ch == b'[' {
                        class = true;
                    } else if ch == b']' {
                        class = false;
                    } else if ch == b'/' && !class {
                        self.i += 1;
                        break;
                    }
                    self.i += 1;
                }
                while self.i < self.b.len() && self.b[self.i].is_ascii_alphabetic() {
                    self.i += 1;
                }
                self.i = self.i.min(self.b.len());
                self.push(Kind::Punct, start, self.i, REGEX);
                true
            }
            _ => false,
        }
    }

    fn regex_allowed(&self) -> bool {
        match self.prev() {
            None => true,
            Some(t) => match t.kind {
                Kind::Ident => matches!(
                    self.raw_text(t),
                    "return"
                        | "typeof"
                        | "case"
                        | "in"
                        | "of"
                        | "new"
                        | "delete"
                        | "void"
                        | "throw"
                ),
                Kind::Num | Kind::Str => false,
                Kind::Punct => {
                    t.lit == REGEX || !matches!(self.raw_text(t), ")" | "]" | "}" | "++" | "--")
                }
            },
        }
    }

    fn php_single(&mut self) -> StrLit<'a> {
        let mut lit = StrLit::default();
        let mut from = self.i;
        while self.i < self.b.len() {
            let ch = self.b[self.i];
            if ch == b'\\' && matches!(self.at(1), b'\'' | b'\\') {
                lit.push_src(self.src, from, self.i);
                lit.push_decoded(self.at(1) as char);
                self.i += 2;
                from = self.i;
                continue;
            }
            if ch == b'\'' {
                lit.push_src(self.src, from, self.i);
                self.i += 1;
                return lit;
            }
            self.i += self.char_len(self.i);
        }
        lit.push_src(self.src, from, self.b.len());
        self.i = self.b.len();
        lit
    }

    /// A string body up to `delim`, with backslash escapes (unless raw) and
    /// interpolation of the given kind.
    fn body(
        &mut self,
        delim: &str,
        escapes: bool,
        interp: Interp,
        single_line: bool,
    ) -> StrLit<'a> {
        let mut lit = StrLit::default();
        let mut from = self.i;
        let n = self.b.len();
        // every caller's delimiter is a quote (one to three bytes)
        debug_assert!(!delim.is_empty());
        let head = delim.as_bytes().first().copied().unwrap_or(0);
        while self.i < n {
            let ch = self.b[self.i];
            // a plain byte: none of the checks below can hold
            if ch < 0x80 && ch != head && !BODY_SPECIAL[ch as usize] {
                self.i += 1;
                continue;
            }
            if self.starts(delim) {
                lit.push_src(self.src, from, self.i);
                self.i += delim.len();
                return lit;
            }
            if ch == b'\n' && single_line {
                lit.push_src(self.src, from, self.i);
                return lit;
            }
            if ch == b'\\' {
                if !escapes {
                    // raw: a backslash still keeps the next quote inside
                    self.i = (self.i + 1 + self.char_len(self.i + 1)).min(n);
                    continue;
                }
                lit.push_src(self.src, from, self.i);
                let e = self.at(1);
                let dec = match e {
                    b'n' => Some('\n'),
                    b't' => Some('\t'),
                    b'r' => Some('\r'),
                    b'0' => Some('\0'),
                    b'\n' => None,
                    b'"' | b'\'' | b'\\' | b'`' | b'$' | b'{' | b'}' | b'/' => Some(e as char),
                    _ => Some('\\'),
                };
                if let Some(d) = dec {
                    lit.push_decoded(d);
                    if d == '\\' {
                        self.i += 1;
                        from = self.i;
                        continue;
                    }
                }
                self.i = (self.i + 1 + self.char_len(self.i + 1)).min(n);
                from = self.i;
                continue;
            }
            if let Some((s, e, next)) = self.interp_at(interp) {
                lit.push_src(self.src, from, self.i);
                if s < e {
                    lit.push_interp(s, e);
                }
                self.i = next;
                from = next;
                continue;
            }
            if interp == Interp::Brace && (self.starts("{{") || self.starts("}}")) {
                lit.push_src(self.src, from, self.i + 1);
                self.i += 2;
                from = self.i;
                continue;
            }
            self.i += self.char_len(self.i);
        }
        lit.push_src(self.src, from, n);
        self.i = n;
        lit
    }

    /// C# verbatim/raw bodies: `""` is a quote, no backslash escapes.
    fn verbatim_body(&mut self, delim: &str, interp: Interp) -> StrLit<'a> {
        let mut lit = StrLit::default();
        let mut from = self.i;
        let n = self.b.len();
        while self.i < n {
            if delim == "\"" && self.starts("\"\"") {
                lit.push_src(self.src, from, self.i + 1);
                self.i += 2;
                from = self.i;
                continue;
            }
            if self.starts(delim) {
                lit.push_src(self.src, from, self.i);
                self.i += delim.len();
                return lit;
            }
            if let Some((s, e, next)) = self.interp_at(interp) {
                lit.push_src(self.src, from, self.i);
                lit.push_interp(s, e);
                self.i = next;
                from = next;
                continue;
            }
            if interp == Interp::Brace && (self.starts("{{") || self.starts("}}")) {
                lit.push_src(self.src, from, self.i + 1);
                self.i += 2;
                from = self.i;
                continue;
            }
            self.i += self.char_len(self.i);
        }
        lit.push_src(self.src, from, n);
        self.i = n;
        lit
    }

    /// A heredoc body (PHP or Ruby): lines up to one whose trimmed text is `term`.
    fn heredoc_body(&mut self, term: &str, interp: Interp) -> StrLit<'a> {
        let mut lit = StrLit::default();
        let n = self.b.len();
        loop {
            if self.i >= n {
                return lit;
            }
            let line_end = self.src[self.i..]
                .find('\n')
                .map(|k| self.i + k)
                .unwrap_or(n);
            let line = &self.src[self.i..line_end];
            let t = line.trim_start();
            if t == term
                || t.strip_prefix(term)
                    .is_some_and(|r| r.starts_with([';', ',', ')', ' ', '\r']))
                || t.trim_end() == term
            {
                // PHP: `EOS;` keeps the `;` as the next token.
                self.nl = true;
                let ws = line.len() - t.len();
                self.i = (self.i + ws + term.len()).min(n);
                return lit;
            }
            // lex the line with interpolation
            let mut from = self.i;
            while self.i < line_end {
                if self.b[self.i] == b'\\' && interp != Interp::None {
                    lit.push_src(self.src, from, self.i);
                    let e = self.at(1);
                    match e {
                        b'n' => lit.push_decoded('\n'),
                        b't' => lit.push_decoded('\t'),
                        b'\n' => {}
                        _ => lit.push_decoded(e as char),
                    }
                    self.i = (self.i + 1 + self.char_len(self.i + 1)).min(n);
                    from = self.i;
                    continue;
                }
                if let Some((s, e, next)) = self.interp_at(interp) {
                    lit.push_src(self.src, from, self.i);
                    lit.push_interp(s, e);
                    self.i = next;
                    from = next;
                    continue;
                }
                self.i += self.char_len(self.i);
            }
            let stop = (line_end + 1).min(n);
            lit.push_src(self.src, from, stop);
            self.i = stop;
        }
    }

    /// An interpolation at the cursor: (expr start, expr end, position after it).
    fn interp_at(&self, interp: Interp) -> Option<(usize, usize, usize)> {
        let c = self.at(0);
        match interp {
            Interp::None => None,
            Interp::DollarBrace if c == b'$' && self.at(1) == b'{' => {
                let e = self.match_brace(self.i + 1)?;
                Some((self.i + 2, e, e + 1))
            }
            Interp::Dollar if c == b'$' => {
                if self.at(1) == b'{' {
                    let e = self.match_brace(self.i + 1)?;
                    return Some((self.i + 2, e, e + 1));
                }
                let s = self.i + 1;
                let mut j = s;
                while j < self.b.len() && is_ident_char(self.b[j]) {
                    j += 1;
                }
                (j > s).then_some((s, j, j))
            }
            Interp::Brace if c == b'{' && self.at(1) != b'{' => {
                let e = self.match_brace(self.i)?;
                // strip a format spec / conversion: `{x:>3}`, `{x!r}`
                let inner = &self.src[self.i + 1..e];
                let cut = inner
                    .find(['!', ':'])
                    .filter(|&k| k > 0 && !inner[..k].contains(['(', '[', '"', '\'']))
                    .unwrap_or(inner.len());
                Some((self.i + 1, self.i + 1 + cut, e + 1))
            }
            Interp::Hash if c == b'#' && self.at(1) == b'{' => {
                let e = self.match_brace(self.i + 1)?;
                Some((self.i + 2, e, e + 1))
            }
            Interp::Php if c == b'{' && self.at(1) == b'$' => {
                let e = self.match_brace(self.i)?;
                Some((self.i + 1, e, e + 1))
            }
            Interp::Php if c == b'$' && is_ident_start(self.at(1)) => {
                let s = self.i;
                let mut j = s + 1;
                while j < self.b.len() && is_ident_char(self.b[j]) {
                    j += 1;
                }
                if self.b.get(j) == Some(&b'-')
                    && self.b.get(j + 1) == Some(&b'>')
                    && self.b.get(j + 2).is_some_and(|&c| is_ident_start(c))
                {
                    j += 2;
                    while j < self.b.len() && is_ident_char(self.b[j]) {
                        j += 1;
                    }
                }
                Some((s, j, j))
            }
            Interp::Php if c == b'$' && self.at(1) == b'{' => {
                let e = self.match_brace(self.i + 1)?;
                Some((self.i + 2, e, e + 1))
            }
            _ => None,
        }
    }

    /// The index of the `}` matching the `{` at `open`, skipping nested strings.
    fn match_brace(&self, open: usize) -> Option<usize> {
        let mut depth = 0usize;
        let mut j = open;
        let mut quote: Option<u8> = None;
        while j < self.b.len() {
            let ch = self.b[j];
            if let Some(q) = quote {
                if ch == b'\\' {
                    j += 2;
                    continue;
                }
                if ch == q {
                    quote = None;
                }
            } else {
                match ch {
                    b'{' => depth += 1,
                    b'}' => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            return Some(j);
                        }
                    }
                    b'"' | b'\'' | b'`' => quote = Some(ch),
                    b'\n' if depth > 8 => return None,
                    _ => {}
                }
            }
            j += 1;
        }
        None
    }

    fn ruby_string(&mut self) -> bool {
        let c = self.at(0);
        let start = self.i;
        if c == b'"' || c == b'\'' || c == b'`' {
            self.i += 1;
            let d = match c {
                b'"' => "\"",
                b'\'' => "'",
                _ => "`",
            };
            let interp = if c == b'\'' {
                Interp::None
            } else {
                Interp::Hash
            };
            let lit = self.body(d, true, interp, false);
            self.push_str(start, self.i, lit);
            return true;
        }
        // symbol :name (not ::, not a ternary's `: x` with space)
        if c == b':'
            && is_ident_start(self.at(1))
            && !self.prev_is_ident_glued(start)
            && self.at(1) != b':'
        {
            let prev_colon = start > 0 && self.b[start - 1] == b':';
            if !prev_colon {
                let mut j = start + 1;
                while j < self.b.len() && is_ident_char(self.b[j]) {
                    j += 1;
                }
                let mut lit = StrLit::default();
                lit.push_src(self.src, start + 1, j);
                self.i = j;
                self.push_str(start, j, lit);
                return true;
            }
        }
        // %q{...} %Q{...} %w[...] %(...)
        if c == b'%'
            && !matches!(
                self.prev().map(|t| t.kind),
                Some(Kind::Ident | Kind::Num | Kind::Str)
            )
        {
            let mut k = 1;
            let kind = self.at(1);
            if matches!(kind, b'q' | b'Q' | b'w' | b'W' | b'i' | b'I') {
                k = 2;
            }
            let open = self.at(k);
            let close = match open {
                b'{' => b'}',
                b'(' => b')',
                b'[' => b']',
                b'<' => b'>',
                b'|' | b'!' | b'/' => open,
                _ => return false,
            };
            let body_start = self.i + k + 1;
            let mut j = body_start;
            let mut depth = 1;
            while j < self.b.len() {
                let ch = self.b[j];
                if ch == b'\\' {
                    j += 2;
                    continue;
                }
                if ch == close && open != close {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                } else if ch == open && open != close {
                    depth += 1;
                } else if ch == close {
                    break;
                }
                j += 1;
            }
            let end = j.min(self.b.len());
            let mut lit = StrLit::default();
            lit.push_src(self.src, body_start.min(end), end);
            self.i = (end + 1).min(self.b.len());
            self.push_str(start, self.i, lit);
            return true;
        }
        // heredoc <<~EOS, <<-EOS, <<EOS, <<~'EOS'
        if c == b'<' && self.at(1) == b'<' {
            let mut j = self.i + 2;
            if matches!(self.b.get(j), Some(b'~' | b'-')) {
                j += 1;
            } else if !self
                .b
                .get(j)
                .is_some_and(|c| c.is_ascii_uppercase() || *c == b'\'' || *c == b'"')
            {
                return false;
            }
            let quote = self.b.get(j).copied().filter(|&q| q == b'\'' || q == b'"');
            if quote.is_some() {
                j += 1;
            }
            let ns = j;
            while j < self.b.len() && is_ident_char(self.b[j]) {
                j += 1;
            }
            if j == ns || !self.b[ns].is_ascii_uppercase() && quote.is_none() {
                return false;
            }
            let term = self.src[ns..j].to_string();
            if quote.is_some() {
                j += 1;
            }
            self.i = j.min(self.b.len());
            // placeholder token; the body is filled at the next line break
            self.push_str(start, self.i, StrLit::default());
            let idx = self.lits.len() - 1;
            self.pending_heredocs
                .push((term, quote != Some(b'\''), idx));
            return true;
        }
        false
    }

    fn ruby_heredoc_bodies(&mut self) {
        let pending = std::mem::take(&mut self.pending_heredocs);
        for (term, interp, idx) in pending {
            let mode = if interp { Interp::Hash } else { Interp::None };
            let lit = self.heredoc_body(&term, mode);
            // skip the rest of the terminator line
            while self.i < self.b.len() && self.b[self.i] != b'\n' {
                self.i += 1;
            }
            if let Some(l) = self.lits.get_mut(idx) {
                *l = lit;
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Interp {
    None,
    /// `${expr}` (JS template)
    DollarBrace,
    /// `$name`, `${expr}` (Kotlin)
    Dollar,
    /// `{expr}` with `{{` escapes (Python f-strings, C# `$"…"`)
    Brace,
    /// `#{expr}` (Ruby)
    Hash,
    /// `$name`, `$name->prop`, `{$expr}`, `${name}` (PHP)
    Php,
}
