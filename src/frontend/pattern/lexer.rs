//! A small lexer per language family (C-like, Python, Ruby; PHP and the
//! interpolating C-likes as variants). It drops comments, keeps string
//! literals with their source span, their decoded text, anchors from text
//! offsets to source offsets, and their interpolations as parts.

use crate::facts::Language;

/// The discriminants are the low two bits of a packed token's tag (`Packed::at`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    Ident = 0,
    Num = 1,
    Punct = 2,
    Str = 3,
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
/// the text's runs stand in the source) and its parts. A view of its
/// entry in the literal table ([`Tok::lit`]), made for each read.
#[derive(Clone, Copy, Debug)]
pub struct StrLit<'a> {
    /// The text while the literal is one run of the source (a slice of
    /// it); empty when `pieces` holds the text.
    run: &'a str,
    /// The source offset of `run`.
    at: u32,
    pieces: Option<&'a Pieces>,
}

impl<'a> StrLit<'a> {
    /// The decoded text of the literal pieces (interpolations left out).
    pub fn text(&self) -> &'a str {
        match self.pieces {
            Some(p) => &p.text,
            None => self.run,
        }
    }

    /// `(text offset, source offset)` of each run of the text, sorted by
    /// text offset.
    pub fn anchors(&self) -> impl Iterator<Item = (usize, usize)> + 'a {
        let (one, many) = match self.pieces {
            None => (
                (!self.run.is_empty()).then_some((0, self.at as usize)),
                &[][..],
            ),
            Some(p) => (None, p.anchors.as_slice()),
        };
        one.into_iter().chain(many.iter().copied())
    }

    /// The literal text and interpolated expressions, in order.
    pub fn parts(&self) -> impl Iterator<Item = StrPart> + 'a {
        let (one, many) = match self.pieces {
            None => (
                (!self.run.is_empty()).then_some(StrPart::Lit(0, self.run.len())),
                &[][..],
            ),
            Some(p) => (None, p.parts.as_slice()),
        };
        one.into_iter().chain(many.iter().copied())
    }

    pub fn has_interp(&self) -> bool {
        self.parts().any(|p| matches!(p, StrPart::Interp(..)))
    }
}

/// A string literal as its table keeps it: 8 bytes (a dense file holds
/// a literal every few dozen bytes; the 32-byte literal that borrowed its
/// run and boxed its pieces made a third of the lexer's tables on a
/// minified bundle). Nearly every literal is one run of the source (no
/// escape, no interpolation) that starts a few bytes into its token (past
/// the quote and any prefix): `run` is its length ([`RUN_LEN`]) and that
/// distance ([`RUN_SKIP`]), and nothing is allocated. The others (and a
/// run farther from its token's start, as a heredoc's body) keep their
/// owned text, anchors and parts in [`Ctx::pieces`], `run` their index
/// there with [`PIECES_BIT`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct LitEntry {
    run: u32,
    /// One past the literal token's last source byte (its token keeps
    /// the table index in place of the span length).
    end: u32,
}

const _: () = assert!(std::mem::size_of::<LitEntry>() == 8);

/// [`LitEntry::run`]: the literal's pieces are in [`Ctx::pieces`], at the
/// index in the low bits.
const PIECES_BIT: u32 = 1 << 31;
/// [`LitEntry::run`] of a run: its length (shorter than [`OFF_LIMIT`])…
const RUN_LEN: u32 = (1 << OFF_BITS) - 1;
/// …and above it, how far into its token it starts (at most
/// [`RUN_SKIP_MAX`]).
const RUN_SKIP: u32 = OFF_BITS;
const RUN_SKIP_MAX: u32 = 7;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Pieces {
    text: String,
    anchors: Vec<(usize, usize)>,
    parts: Vec<StrPart>,
}

/// A string literal while it is lexed: one run of the source (`run`
/// borrowing it) until the first escape or interpolation moves it to an
/// owned text with explicit anchors and parts.
#[derive(Default)]
struct LitBuf<'a> {
    run: &'a str,
    at: u32,
    pieces: Option<Pieces>,
}

impl<'a> LitBuf<'a> {
    fn text_len(&self) -> usize {
        match &self.pieces {
            Some(p) => p.text.len(),
            None => self.run.len(),
        }
    }

    /// The literal stops being one run of the source: its text, anchors
    /// and parts are written out.
    fn pieces(&mut self) -> &mut Pieces {
        if self.pieces.is_none() {
            let run = std::mem::take(&mut self.run);
            let mut p = Pieces {
                text: run.to_string(),
                anchors: Vec::new(),
                parts: Vec::new(),
            };
            if !run.is_empty() {
                // Most literals have one anchor and one part: room for
                // one, not the default four.
                p.anchors.reserve_exact(1);
                p.anchors.push((0, self.at as usize));
                p.parts.reserve_exact(1);
                p.parts.push(StrPart::Lit(0, run.len()));
            }
            self.pieces = Some(p);
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
            if self.run.is_empty() {
                self.run = piece;
                self.at = from as u32;
                return;
            }
            // the run goes on where it stopped: still one slice
            if self.at as usize + self.run.len() == from {
                if let Some(run) = src.get(self.at as usize..to) {
                    self.run = run;
                    return;
                }
            }
        }
        let len = self.text_len();
        let p = self.pieces();
        let predicted = p.anchors.last().map(|&(t, s)| s + (len - t));
        if predicted != Some(from) {
            // Most literals have one anchor: room for one, not the default four.
            p.anchors.reserve_exact(1);
            p.anchors.push((len, from));
        }
        p.text.push_str(piece);
        self.push_lit(len);
    }
    fn push_decoded(&mut self, c: char) {
        let p = self.pieces();
        let at = p.text.len();
        p.text.push(c);
        self.push_lit(at);
    }
    /// The decoded text grew from `at` to its end: one literal piece more.
    fn push_lit(&mut self, at: usize) {
        let p = self.pieces();
        let end = p.text.len();
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
}

/// One token, as read: its packed form and what it is read against (16
/// bytes; made by [`Toks`] for each read, no allocation). The hot readers
/// (`kind`, `is`, `start`, `nl`) cost a mask or a shift on the packed
/// words; `text` of a plain source token a load and an add. A string
/// literal's text is its decoded text, from the side table; a JS regex
/// literal's is `/regex/`; a span that is not a char-boundary slice of
/// the source has none.
#[derive(Clone, Copy)]
pub struct Tok<'a> {
    p: Packed,
    ctx: &'a Ctx<'a>,
}

const _: () = assert!(std::mem::size_of::<Tok>() == 16);

/// Bits of a token's first source byte: every offset of a file the
/// engine reads fits (the lexer reads no more than `OFF_LIMIT` bytes).
const OFF_BITS: u32 = 28;
const OFF_LIMIT: usize = 1 << OFF_BITS;
const OFF_MASK: u32 = (OFF_LIMIT - 1) as u32;
const _: () = assert!(crate::engine::MAX_FILE_BYTES <= OFF_LIMIT as u64);
/// `Packed::at`: a line break stands before the token.
const NL_BIT: u32 = 1 << 31;
/// `Packed::at`'s three tag bits: the kind (the low two, as [`Kind`]'s
/// discriminant) and whether the token is read from [`Ctx::longs`].
const TAG_SHIFT: u32 = OFF_BITS;
const TAG: u32 = 7 << TAG_SHIFT;
/// Plain source tokens, whose text is their span of fewer than [`LONG`]
/// bytes: an identifier, a number, punctuation.
const PLAIN_IDENT: u32 = (Kind::Ident as u32) << TAG_SHIFT;
const PLAIN_NUM: u32 = (Kind::Num as u32) << TAG_SHIFT;
const PLAIN_PUNCT: u32 = (Kind::Punct as u32) << TAG_SHIFT;
/// A string literal: its entry of the side table is found by its start.
const STR_TAG: u32 = (Kind::Str as u32) << TAG_SHIFT;
/// An identifier, a number, punctuation as the plain tags with this bit,
/// whose span is of [`LONG`] bytes or more, is not a char-boundary slice
/// of the source (its text then empty) or is a JS regex literal (an
/// opaque `/regex/`, punctuation): its length and which it is in
/// [`Ctx::longs`].
const OTHER: u32 = 4 << TAG_SHIFT;
/// [`Ctx::longs`]: the span is not a char-boundary slice of the source.
const BAD_BIT: u32 = 1 << 31;
/// [`Ctx::longs`]: the span is a JS regex literal.
const REGEX_BIT: u32 = 1 << 30;
/// [`Lx::push`]'s `lit` of a token that is no string literal.
const NO_LIT: u32 = u32::MAX;
/// [`Lx::push`]'s `lit` of a JS regex literal.
const REGEX: u32 = u32::MAX - 1;
/// `Packed::len` of a span of this length or more (and of a bad span or a
/// regex): its length is in the table of long tokens ([`Ctx::longs`]).
const LONG: u8 = u8::MAX;
/// The text of a JS regex literal token, and of a token without one.
static REGEX_TEXT: &str = "/regex/";
static NO_TEXT: &str = "";

/// A token as the lexer keeps it: 5 bytes (the tokens of a dense file are
/// its largest table: minified code has a token every two bytes). [`Toks`]
/// pairs it with the source and the side tables when it is read, as a
/// [`Tok`].
/// - `at`: the first source byte (low [`OFF_BITS`] bits), the tag
///   ([`TAG`]: plain identifier, number or punctuation, string literal,
///   or an identifier, number or punctuation read from [`Ctx::longs`]:
///   long, bad span or regex) and the line-break flag ([`NL_BIT`]);
/// - `len`: a plain token's span length, [`LONG`] for the others; unused
///   for a string literal, whose entry in the literal table is the first
///   that ends after its start (the entries are in source order, as their
///   tokens).
#[derive(Clone, Copy)]
#[repr(C, packed)]
pub struct Packed {
    at: u32,
    len: u8,
}

const _: () = assert!(std::mem::size_of::<Packed>() == 5);

impl Packed {
    #[inline]
    fn tag(self) -> u32 {
        self.at & TAG
    }
    #[inline]
    fn kind(self) -> Kind {
        match (self.at >> TAG_SHIFT) & 3 {
            0 => Kind::Ident,
            1 => Kind::Num,
            2 => Kind::Punct,
            _ => Kind::Str,
        }
    }
    /// A plain source token: its text is its span, its length `len`.
    #[inline]
    fn plain(self) -> bool {
        self.tag() < STR_TAG
    }
    #[inline]
    fn start(self) -> u32 {
        self.at & OFF_MASK
    }
}

/// The tokens of one file: a slice of them, the way `&[Tok]` was (indexed
/// from the slice's start; [`Toks::slice`] narrows it), handing out each
/// [`Tok`] by value. Copy, and no larger than three slices.
#[derive(Clone, Copy)]
pub struct Toks<'a> {
    packed: &'a [Packed],
    /// (One pointer for both, so that a `Toks` is three words and its
    /// iterator four: they are passed and copied everywhere.)
    ctx: &'a Ctx<'a>,
}

/// What the packed tokens are read against: the source they were lexed
/// from and their literal table.
struct Ctx<'a> {
    src: &'a str,
    /// The string literals, in source order.
    lits: Vec<LitEntry>,
    /// The owned text, anchors and parts of the literals that are more
    /// than one run of the source ([`PIECES_BIT`]).
    pieces: Vec<Pieces>,
    /// (start, length) of every token of [`LONG`] bytes or more, of every
    /// bad span (its length with [`BAD_BIT`]) and of every JS regex
    /// literal (with [`REGEX_BIT`]), in source order.
    longs: Vec<(u32, u32)>,
    /// Per block of `1 << LIT_BLOCK_SHIFT` source bytes, the index of the
    /// first literal that ends after the block's start ([`Tok::entry`]:
    /// a search among a block's literals, not the whole table's).
    lit_blocks: Vec<u32>,
}

impl<'a> Ctx<'a> {
    /// The literal of a table entry, whose token starts at `start`.
    #[inline]
    fn lit(&'a self, e: &LitEntry, start: u32) -> StrLit<'a> {
        if e.run & PIECES_BIT != 0 {
            StrLit {
                run: "",
                at: 0,
                pieces: self.pieces.get((e.run & !PIECES_BIT) as usize),
            }
        } else {
            let at = start + (e.run >> RUN_SKIP);
            let (from, len) = (at as usize, (e.run & RUN_LEN) as usize);
            StrLit {
                // (a run is a char-boundary slice of the source: `LitBuf::push_src`)
                run: self.src.get(from..from + len).unwrap_or(""),
                at,
                pieces: None,
            }
        }
    }
}

/// [`Ctx::lit_blocks`]' block: 128 source bytes (4 bytes of index).
const LIT_BLOCK_SHIFT: u32 = 7;

/// [`Ctx::lit_blocks`] of `lits` over a source of `len` bytes.
fn lit_blocks(lits: &[LitEntry], len: usize) -> Vec<u32> {
    let blocks = if lits.is_empty() {
        0
    } else {
        (len >> LIT_BLOCK_SHIFT) + 1
    };
    let mut out = Vec::with_capacity(blocks);
    let mut i = 0;
    for b in 0..blocks {
        let at = (b << LIT_BLOCK_SHIFT) as u32;
        while i < lits.len() && lits[i].end <= at {
            i += 1;
        }
        out.push(i as u32);
    }
    out
}

impl<'a> Toks<'a> {
    /// The source the tokens were lexed from.
    #[inline]
    pub fn src(&self) -> &'a str {
        self.ctx.src
    }
    #[inline]
    pub fn len(&self) -> usize {
        self.packed.len()
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.packed.is_empty()
    }
    /// Token `i` (panics past the end, as indexing a slice does).
    #[inline]
    pub fn at(&self, i: usize) -> Tok<'a> {
        self.view(self.packed[i])
    }
    #[inline]
    pub fn get(&self, i: usize) -> Option<Tok<'a>> {
        self.packed.get(i).map(|&p| self.view(p))
    }
    #[inline]
    pub fn first(&self) -> Option<Tok<'a>> {
        self.get(0)
    }
    #[inline]
    pub fn last(&self) -> Option<Tok<'a>> {
        self.packed.last().map(|&p| self.view(p))
    }
    /// The tokens of `range` (panics as slicing does).
    #[inline]
    pub fn slice<R>(&self, range: R) -> Toks<'a>
    where
        R: std::slice::SliceIndex<[Packed], Output = [Packed]>,
    {
        Toks {
            packed: &self.packed[range],
            ..*self
        }
    }
    #[inline]
    pub fn iter(&self) -> TokIter<'a> {
        TokIter {
            inner: self.packed.iter(),
            toks: *self,
        }
    }
    /// Every run of `n` tokens, as `slice::windows`.
    pub fn windows(&self, n: usize) -> impl DoubleEndedIterator<Item = Toks<'a>> + 'a {
        let toks = *self;
        let count = (toks.len() + 1).saturating_sub(n.max(1));
        (0..count).map(move |i| toks.slice(i..i + n))
    }
    /// The runs between tokens that match `pred`, as `slice::split`.
    pub fn split(
        &self,
        pred: impl Fn(Tok<'a>) -> bool + 'a,
    ) -> impl Iterator<Item = Toks<'a>> + 'a {
        let toks = *self;
        self.packed
            .split(move |&p| pred(toks.view(p)))
            .map(move |packed| Toks { packed, ..toks })
    }
    /// The first token and the rest, as `slice::split_first`.
    pub fn split_first(&self) -> Option<(Tok<'a>, Toks<'a>)> {
        let (&first, rest) = self.packed.split_first()?;
        Some((
            self.view(first),
            Toks {
                packed: rest,
                ..*self
            },
        ))
    }
    /// The tokens, collected (for matching against slice patterns).
    pub fn to_vec(&self) -> Vec<Tok<'a>> {
        self.iter().collect()
    }
    /// The first index whose token fails `pred` (the tokens are
    /// partitioned by it), as `slice::partition_point`.
    pub fn partition_point(&self, mut pred: impl FnMut(Tok<'a>) -> bool) -> usize {
        self.packed.partition_point(|&p| pred(self.view(p)))
    }
    /// The index of the first token starting at or after byte `offset`
    /// (the length when none does): the tokens are in source order.
    #[inline]
    pub fn first_at(&self, offset: usize) -> usize {
        self.partition_point(|t| t.start() < offset)
    }
    /// The token a packed one stands for.
    #[inline]
    fn view(&self, p: Packed) -> Tok<'a> {
        Tok { p, ctx: self.ctx }
    }
}

impl<'a> IntoIterator for Toks<'a> {
    type Item = Tok<'a>;
    type IntoIter = TokIter<'a>;
    fn into_iter(self) -> TokIter<'a> {
        self.iter()
    }
}

impl<'a> IntoIterator for &Toks<'a> {
    type Item = Tok<'a>;
    type IntoIter = TokIter<'a>;
    fn into_iter(self) -> TokIter<'a> {
        self.iter()
    }
}

/// The tokens of a [`Toks`] one after another, by value.
#[derive(Clone)]
pub struct TokIter<'a> {
    inner: std::slice::Iter<'a, Packed>,
    toks: Toks<'a>,
}

impl<'a> Iterator for TokIter<'a> {
    type Item = Tok<'a>;
    #[inline]
    fn next(&mut self) -> Option<Tok<'a>> {
        self.inner.next().map(|&p| self.toks.view(p))
    }
    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
    #[inline]
    fn nth(&mut self, n: usize) -> Option<Tok<'a>> {
        self.inner.nth(n).map(|&p| self.toks.view(p))
    }
}

impl DoubleEndedIterator for TokIter<'_> {
    #[inline]
    fn next_back(&mut self) -> Option<Self::Item> {
        self.inner.next_back().map(|&p| self.toks.view(p))
    }
}

impl ExactSizeIterator for TokIter<'_> {}

/// The tokens of one file and the literal table they read: what [`lex`]
/// returns, lent out as [`Toks`].
pub struct Lexed<'a> {
    packed: Vec<Packed>,
    ctx: Ctx<'a>,
}

impl<'a> Lexed<'a> {
    #[inline]
    pub fn toks(&self) -> Toks<'_> {
        Toks {
            packed: &self.packed,
            ctx: &self.ctx,
        }
    }
    /// The string literals, in source order.
    #[cfg(test)]
    pub fn lits(&self) -> impl Iterator<Item = StrLit<'_>> {
        self.toks().iter().filter_map(|t| t.lit())
    }
}

impl<'a> Tok<'a> {
    /// Identifier, number or punctuation text; for strings the decoded text
    /// (the literal's own, from the side table); `/regex/` for a JS regex.
    #[inline]
    pub fn text(&self) -> &'a str {
        if self.p.plain() {
            // SAFETY: `Lx::push` gives a plain tag only to a span of fewer
            // than `LONG` bytes, its length in `len`, that is a
            // char-boundary slice of the source these tokens were lexed
            // from (`ctx.src`).
            unsafe {
                std::str::from_utf8_unchecked(std::slice::from_raw_parts(
                    self.ctx.src.as_ptr().add(self.p.start() as usize),
                    self.p.len as usize,
                ))
            }
        } else {
            self.other_text()
        }
    }
    /// The text of a token that is not a short plain source span.
    #[cold]
    #[inline(never)]
    fn other_text(&self) -> &'a str {
        match self.p.tag() {
            STR_TAG => self.ctx.lit(self.entry(), self.p.start()).text(),
            _ => {
                // a long span, a bad one (no text) or a regex
                let (len, flags) = self.long();
                let start = self.start();
                match flags {
                    0 => self.ctx.src.get(start..start + len).unwrap_or(""),
                    REGEX_BIT => REGEX_TEXT,
                    _ => NO_TEXT,
                }
            }
        }
    }
    /// The length of a token read from [`Ctx::longs`], and its flags
    /// ([`BAD_BIT`], [`REGEX_BIT`]).
    #[cold]
    #[inline(never)]
    fn long(&self) -> (usize, u32) {
        let start = self.p.start();
        let longs = &self.ctx.longs;
        match longs.binary_search_by_key(&start, |l| l.0) {
            Ok(i) => {
                let flags = BAD_BIT | REGEX_BIT;
                ((longs[i].1 & !flags) as usize, longs[i].1 & flags)
            }
            Err(_) => (usize::from(self.p.len), 0),
        }
    }
    /// A string literal token's entry of the side table: the first that
    /// ends after the token's start.
    #[inline]
    fn entry(&self) -> &'a LitEntry {
        debug_assert!(self.p.tag() == STR_TAG);
        let start = self.p.start();
        let lits = &self.ctx.lits[..];
        // the entries that can be the token's: from the first that ends
        // in its block of the source to the first that ends past it
        let b = start as usize >> LIT_BLOCK_SHIFT;
        let from = self.ctx.lit_blocks.get(b).map_or(0, |&i| i as usize);
        let to = self
            .ctx
            .lit_blocks
            .get(b + 1)
            .map_or(lits.len(), |&i| (i as usize + 1).min(lits.len()));
        let i = from + lits[from..to.max(from)].partition_point(|l| l.end <= start);
        // every literal token has its entry (`Lx::push_str`), and tokens
        // are only ever read against the table they were lexed with
        // (`Lexed`, whose fields are private to this module)
        &lits[i.min(lits.len().saturating_sub(1))]
    }
    #[inline]
    pub fn kind(&self) -> Kind {
        self.p.kind()
    }
    /// A line break stands between the previous token and this one.
    #[inline]
    pub fn nl(&self) -> bool {
        self.p.at & NL_BIT != 0
    }
    /// The token's first source byte.
    #[inline]
    pub fn start(&self) -> usize {
        self.p.start() as usize
    }
    /// One past the token's last source byte.
    #[inline]
    pub fn end(&self) -> usize {
        if self.p.tag() == STR_TAG {
            return (self.entry().end as usize).max(self.start());
        }
        if self.p.tag() >= OTHER {
            return self.start() + self.long().0;
        }
        self.start() + self.p.len as usize
    }
    /// Not a string literal, and its text is `s`.
    #[inline]
    pub fn is(&self, s: &str) -> bool {
        // a plain source token of `s`'s length: one compare
        if self.p.plain() {
            return self.p.len as usize == s.len() && self.text().as_bytes() == s.as_bytes();
        }
        self.p.tag() != STR_TAG && self.other_text() == s
    }
    #[inline]
    pub fn is_ident(&self) -> bool {
        // a plain or bad-span identifier: the tag's two low bits clear
        self.p.at & (3 << TAG_SHIFT) == 0
    }
    /// A string literal's pieces (every `Kind::Str` token has them).
    #[inline]
    pub fn lit(&self) -> Option<StrLit<'a>> {
        (self.p.tag() == STR_TAG).then(|| self.ctx.lit(self.entry(), self.p.start()))
    }
}

impl PartialEq for Tok<'_> {
    fn eq(&self, other: &Self) -> bool {
        let (a, b) = (self.p, other.p);
        (a.at, a.len) == (b.at, b.len) && self.text() == other.text()
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
    toks: Vec<Packed>,
    lits: Vec<LitEntry>,
    /// [`Ctx::pieces`].
    pieces: Vec<Pieces>,
    /// [`Ctx::longs`].
    longs: Vec<(u32, u32)>,
    nl: bool,
    /// Ruby heredocs whose bodies start at the next line: (terminator,
    /// interpolating, literal index, its token's start).
    pending_heredocs: Vec<(String, bool, usize, u32)>,
}

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c >= 0x80
}
fn is_ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}

/// Lexes `src` as `lang`. Never panics; unterminated constructs end at EOF.
/// Only the first `OFF_LIMIT` bytes (256 MiB) are read (token offsets are
/// packed in 28 bits; the engine reads no file of more than
/// `MAX_FILE_BYTES`).
pub fn lex(src: &str, lang: Language) -> Lexed<'_> {
    let mut cut = src.len().min(OFF_LIMIT);
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
        pieces: Vec::new(),
        longs: Vec::new(),
        nl: false,
        pending_heredocs: Vec::new(),
    };
    lx.run();
    // The tables grew by doubling: their spare room is given back (a
    // large shrink is a remap, not a copy).
    let mut packed = lx.toks;
    packed.shrink_to_fit();
    let mut lits = lx.lits;
    lits.shrink_to_fit();
    let mut pieces = lx.pieces;
    pieces.shrink_to_fit();
    let mut longs = lx.longs;
    longs.shrink_to_fit();
    let lit_blocks = lit_blocks(&lits, src.len());
    Lexed {
        packed,
        ctx: Ctx {
            src,
            lits,
            pieces,
            longs,
            lit_blocks,
        },
    }
}

/// Lexes `src` for a test or a short snippet: the tokens and the
/// literals' table are leaked.
#[cfg(test)]
pub fn lex_leak<'a>(src: &'a str, lang: Language) -> Toks<'a> {
    let lexed: &'a Lexed<'a> = Box::leak(Box::new(lex(src, lang)));
    lexed.toks()
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
    /// A token of `kind` over `start..end`; `lit` is a string literal's
    /// index in the side table, [`REGEX`] or [`NO_LIT`].
    fn push(&mut self, kind: Kind, start: usize, end: usize, lit: u32) {
        let mut at = start as u32 & OFF_MASK;
        if std::mem::take(&mut self.nl) {
            at |= NL_BIT;
        }
        let len = end.saturating_sub(start);
        let tag = match kind {
            Kind::Ident => PLAIN_IDENT,
            Kind::Num => PLAIN_NUM,
            Kind::Punct => PLAIN_PUNCT,
            Kind::Str => STR_TAG,
        };
        let flags = if kind == Kind::Str {
            0
        } else if lit == REGEX {
            REGEX_BIT
        } else if self.src.get(start..end).is_none() {
            BAD_BIT
        } else {
            0
        };
        let len = if kind != Kind::Str && (len >= LONG as usize || flags != 0) {
            // read from the table of long tokens
            at |= OTHER;
            self.longs.push((start as u32, len as u32 | flags));
            LONG
        } else {
            len as u8
        };
        self.toks.push(Packed { at: at | tag, len });
    }
    /// A source token: its text is the source's.
    fn push_src(&mut self, kind: Kind, start: usize, end: usize) {
        self.push(kind, start, end, NO_LIT);
    }
    /// A string literal token, its pieces in the side table.
    fn push_str(&mut self, start: usize, end: usize, lit: LitBuf<'a>) {
        let idx = self.lits.len() as u32;
        let entry = self.entry(lit, start as u32, end as u32);
        self.lits.push(entry);
        self.push(Kind::Str, start, end, idx);
    }
    /// The table entry of `lit`, whose token spans `start..end`; its
    /// pieces (if any) are moved to their table.
    fn entry(&mut self, mut lit: LitBuf<'a>, start: u32, end: u32) -> LitEntry {
        if lit.pieces.is_none() {
            if lit.run.is_empty() {
                return LitEntry { run: 0, end };
            }
            match lit.at.checked_sub(start) {
                Some(skip) if skip <= RUN_SKIP_MAX => {
                    return LitEntry {
                        run: skip << RUN_SKIP | lit.run.len() as u32 & RUN_LEN,
                        end,
                    };
                }
                // a run away from its token (a heredoc's body): written
                // out, as it reads the same
                _ => {
                    lit.pieces();
                }
            }
        }
        self.pieces.push(lit.pieces.unwrap_or_default());
        LitEntry {
            run: PIECES_BIT | (self.pieces.len() - 1) as u32,
            end,
        }
    }
    fn prev(&self) -> Option<Packed> {
        self.toks.last().copied()
    }
    /// The source text of a token (the previous one, for context).
    /// `t` (the previous token) is a JS regex literal.
    fn is_regex(&self, t: Packed) -> bool {
        t.tag() >= OTHER
            && self
                .longs
                .binary_search_by_key(&t.start(), |l| l.0)
                .is_ok_and(|i| self.longs[i].1 & REGEX_BIT != 0)
    }
    fn raw_text(&self, t: Packed) -> &'a str {
        let end = match t.kind() {
            Kind::Str => {
                let i = self.lits.partition_point(|l| l.end <= t.start());
                self.lits.get(i).map_or(0, |l| l.end)
            }
            _ if t.len == LONG => match self.longs.binary_search_by_key(&t.start(), |l| l.0) {
                Ok(i) => self.longs[i].0 + (self.longs[i].1 & !(BAD_BIT | REGEX_BIT)),
                Err(_) => 0,
            },
            _ => t.start() + u32::from(t.len),
        };
        self.src.get(t.start() as usize..end as usize).unwrap_or("")
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
            Some(t) => match t.kind() {
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
                    self.is_regex(t) || !matches!(self.raw_text(t), ")" | "]" | "}" | "++" | "--")
                }
            },
        }
    }

    fn php_single(&mut self) -> LitBuf<'a> {
        let mut lit = LitBuf::default();
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
    ) -> LitBuf<'a> {
        let mut lit = LitBuf::default();
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
    fn verbatim_body(&mut self, delim: &str, interp: Interp) -> LitBuf<'a> {
        let mut lit = LitBuf::default();
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
    fn heredoc_body(&mut self, term: &str, interp: Interp) -> LitBuf<'a> {
        let mut lit = LitBuf::default();
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
                let mut lit = LitBuf::default();
                lit.push_src(self.src, start + 1, j);
                self.i = j;
                self.push_str(start, j, lit);
                return true;
            }
        }
        // %q{...} %Q{...} %w[...] %(...)
        if c == b'%'
            && !matches!(
                self.prev().map(|t| t.kind()),
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
            let mut lit = LitBuf::default();
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
            self.push_str(start, self.i, LitBuf::default());
            let idx = self.lits.len() - 1;
            self.pending_heredocs
                .push((term, quote != Some(b'\''), idx, start as u32));
            return true;
        }
        false
    }

    fn ruby_heredoc_bodies(&mut self) {
        let pending = std::mem::take(&mut self.pending_heredocs);
        for (term, interp, idx, start) in pending {
            let mode = if interp { Interp::Hash } else { Interp::None };
            let lit = self.heredoc_body(&term, mode);
            // skip the rest of the terminator line
            while self.i < self.b.len() && self.b[self.i] != b'\n' {
                self.i += 1;
            }
            if let Some(end) = self.lits.get(idx).map(|l| l.end) {
                // the placeholder's end stays: the table is in source
                // order by it (`Tok::entry`)
                self.lits[idx] = self.entry(lit, start, end);
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
