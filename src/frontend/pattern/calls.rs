//! The structure over the token stream: function/class scopes with block
//! depth, matching brackets, and method calls with their receiver chain and
//! argument list (balanced brackets, split over any number of lines).

use super::lexer::{Kind, Tok, Toks};
use crate::facts::{Language, Scope};
use rustc_hash::FxHashMap as HashMap;
use std::marker::PhantomData;
use std::ptr::NonNull;

/// One argument: token range `[start, end)`, and whether it is a keyword
/// / named argument (`nx=True`, `px: ms`, `expiry: null`, `'px' => 5`),
/// whose name is then the token two before its start ([`Arg::name`]).
/// Eight bytes: a dense file has two arguments a call and a call every
/// ten or twenty bytes.
#[derive(Clone, Copy, Debug)]
pub struct Arg {
    /// The first token, with [`Arg::NAMED`] set for a named argument.
    start: u32,
    end: u32,
}

/// One call: 32 bytes (a dense file has a call every thirty bytes; one
/// of 48, with a slice of each table and four token indices, was an
/// eighth of a minified bundle's peak). Its receiver segments and
/// arguments are runs of the stream's [`CallTable`], held as their first
/// entries' addresses with their counts packed beside the token indices:
/// a token index is below 2^28 (the lexer reads at most 256 MiB), which
/// leaves the top four bits of three words free.
#[derive(Clone, Copy)]
pub struct Call<'a> {
    /// The first of [`Call::recv`] in the table's receiver segments.
    recv: NonNull<Seg<'a>>,
    /// The first of [`Call::args`] in the table's arguments.
    args: NonNull<Arg>,
    /// The name's token, and the `(`'s distance from it above [`IDX_BITS`].
    name: u32,
    /// The receiver chain's first token, and the low four bits of the
    /// number of receiver segments above [`IDX_BITS`].
    recv_start: u32,
    /// One past the call's last token.
    end: u32,
    /// The number of arguments, and the high four bits of the number of
    /// receiver segments above [`IDX_BITS`].
    nargs: u32,
    /// What `recv` and `args` point into: the table, borrowed.
    _table: PhantomData<&'a [Seg<'a>]>,
}

// SAFETY: a `Call` reads its table only through shared borrows for as
// long as it lives (`_table`), as the two slices it replaces did.
unsafe impl Send for Call<'_> {}
unsafe impl Sync for Call<'_> {}

/// Bits of a token index in a [`Call`]'s packed words; the four above
/// them hold a small count.
const IDX_BITS: u32 = 28;
const IDX_MASK: u32 = (1 << IDX_BITS) - 1;
const _: () = assert!(crate::engine::MAX_FILE_BYTES <= 1 << IDX_BITS);

impl<'a> Call<'a> {
    /// The called name as written: the text of its token in `toks`, the
    /// stream the call was found in (kept as the token only: 16 bytes less
    /// a call).
    #[inline]
    pub fn name(&self, toks: Toks<'a>) -> &'a str {
        toks.at(self.name_tok()).text()
    }
    #[inline]
    pub fn name_tok(&self) -> usize {
        (self.name & IDX_MASK) as usize
    }
    /// First token of the receiver chain (== name_tok when there is none).
    #[inline]
    pub fn recv_start(&self) -> usize {
        (self.recv_start & IDX_MASK) as usize
    }
    /// Index of the `(` (or of the first argument for paren-less Ruby calls).
    #[inline]
    pub fn open(&self) -> usize {
        self.name_tok() + (self.name >> IDX_BITS) as usize
    }
    /// Index one past the last token of the call.
    #[inline]
    pub fn end(&self) -> usize {
        self.end as usize
    }
    /// Receiver segments, outermost first: `redisTemplate`, `opsForValue`
    /// (borrowed from the source but for `name()` segments).
    #[inline]
    pub fn recv(&self) -> &'a [Seg<'a>] {
        let n = (self.recv_start >> IDX_BITS) | (self.nargs >> IDX_BITS) << 4;
        // SAFETY: `recv` is the address of this call's first segment in
        // its table (or the table's start when it has none), and the
        // table holds `n` segments from there (`calls`); the table is
        // borrowed for `'a` and no longer changes.
        unsafe { std::slice::from_raw_parts(self.recv.as_ptr(), n as usize) }
    }
    /// The arguments.
    #[inline]
    pub fn args(&self) -> &'a [Arg] {
        // SAFETY: as for `recv`, of the argument table
        unsafe { std::slice::from_raw_parts(self.args.as_ptr(), (self.nargs & IDX_MASK) as usize) }
    }
}

impl std::fmt::Debug for Call<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Call")
            .field("name_tok", &self.name_tok())
            .field("recv_start", &self.recv_start())
            .field("recv", &self.recv())
            .field("open", &self.open())
            .field("end", &self.end())
            .field("args", &self.args())
            .finish()
    }
}

#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<Call>() == 32);

const _: () = assert!(std::mem::size_of::<Arg>() == 8);

impl Arg {
    /// `start`'s bit for a named argument (token indices stay far below
    /// it: the lexer reads at most 256 MiB).
    const NAMED: u32 = 1 << 31;

    fn new(start: usize, end: usize, named: bool) -> Arg {
        Arg {
            start: start as u32 | if named { Arg::NAMED } else { 0 },
            end: end as u32,
        }
    }
    #[inline]
    pub fn start(&self) -> usize {
        (self.start & !Arg::NAMED) as usize
    }
    /// Whether the argument is named (`name=value`, `name: value`,
    /// `'name' => value`).
    #[inline]
    pub fn is_named(&self) -> bool {
        self.start & Arg::NAMED != 0
    }
    /// A named argument's name as written, read from `toks`, the stream
    /// the call was found in.
    #[inline]
    pub fn name<'a>(&self, toks: Toks<'a>) -> Option<&'a str> {
        self.is_named().then(|| toks.at(self.start() - 2).text())
    }
    #[inline]
    pub fn end(&self) -> usize {
        self.end as usize
    }
}

/// The arguments and receiver segments of all the calls of one stream, one
/// flat table each: a call holds its slices of them, so that no call
/// allocates (dense code has a call every ten or twenty bytes).
#[derive(Default)]
pub struct CallTable<'a> {
    args: Vec<Arg>,
    recv: Vec<Seg<'a>>,
    /// The texts of the `name()` receiver segments, which the source does
    /// not hold as written: `recv` points into them.
    owned: OwnedTexts,
}

/// Texts a [`CallTable`] writes, in chunks whose room is never grown, so
/// a text once written never moves and is never changed or dropped while
/// the table lives. (Each boxed alone, a Go file of method chains,
/// `c.client.B().Get()`, held 7,353 of them: 131 kB of boxes beside
/// 50 kB of text.)
#[derive(Default)]
struct OwnedTexts {
    chunks: Vec<String>,
}

impl OwnedTexts {
    const CHUNK: usize = 4096;

    /// The segment `name()` of the call whose `(` and `)` are tokens
    /// `open` and `close`, `name` the token before `open`: the source's
    /// text where the call is written so, `b()` (a builder chain's
    /// links, `c.B().Get()`, mostly are), else written after the others.
    fn call_seg<'t>(&mut self, toks: Toks<'t>, open: usize, close: usize) -> Seg<'t> {
        let name = toks.at(open - 1);
        let (o, c) = (toks.at(open), toks.at(close));
        let written = close == open + 1
            && name.end() == o.start()
            && o.end() == c.start()
            && c.end() == name.end() + 2;
        match toks
            .src()
            .get(name.start()..c.end())
            .filter(|t| written && t.len() == name.text().len() + 2 && t.starts_with(name.text()))
        {
            Some(t) if t.ends_with("()") => Seg::of(t),
            _ => self.call_of(name.text()),
        }
    }

    /// The segment of `name()`, written after the others.
    fn call_of<'t>(&mut self, name: &str) -> Seg<'t> {
        let need = name.len() + 2;
        if self
            .chunks
            .last()
            .is_none_or(|c| c.capacity() - c.len() < need)
        {
            self.chunks
                .push(String::with_capacity(Self::CHUNK.max(need)));
        }
        match self.chunks.last_mut() {
            Some(c) => {
                // (within the chunk's room: its text does not move)
                let at = c.len();
                c.push_str(name);
                c.push_str("()");
                Seg::of(&c[at..])
            }
            None => Seg::of(""),
        }
    }
}

/// A receiver segment's text, read as a `str` (`Deref`): 12 bytes (its
/// address and a u32 length, packed), where a `Cow<str>` took 24 (a
/// minified bundle has a segment every sixty bytes). It is a slice of the
/// source, or of a `name()` text its [`CallTable`] owns; segments are
/// only handed out through the table, borrowed (`Call::recv`).
#[derive(Clone, Copy)]
#[repr(C, packed(4))]
pub struct Seg<'a> {
    ptr: NonNull<u8>,
    len: u32,
    _text: PhantomData<&'a str>,
}

const _: () = assert!(std::mem::size_of::<Seg>() == 12);

// SAFETY: a `Seg` is a shared borrow of a `str` (see `Seg::deref`).
unsafe impl Send for Seg<'_> {}
unsafe impl Sync for Seg<'_> {}

impl Seg<'_> {
    /// The segment of `text`: a slice of the source, or one of the table's
    /// `owned` texts.
    fn of(text: &str) -> Self {
        // (a text is a slice of a file the engine reads, at most
        // `MAX_FILE_BYTES`, or a shorter text written from one)
        Seg {
            ptr: NonNull::from(text.as_bytes()).cast(),
            len: crate::facts::offset32(text.len()),
            _text: PhantomData,
        }
    }
}

impl std::ops::Deref for Seg<'_> {
    type Target = str;
    #[inline]
    fn deref(&self) -> &str {
        // SAFETY: `ptr` and `len` are those of a `str` (`Seg::of`) that
        // outlives the table the segment is read through: the source, or
        // a text of the table's `owned`, never moved, changed or dropped before
        // the table; and the table is borrowed while it is read
        // (the fields copied out: a packed field is not borrowed)
        let (ptr, len) = (self.ptr, self.len);
        unsafe {
            std::str::from_utf8_unchecked(std::slice::from_raw_parts(ptr.as_ptr(), len as usize))
        }
    }
}

impl std::borrow::Borrow<str> for Seg<'_> {
    fn borrow(&self) -> &str {
        self
    }
}

impl PartialEq<str> for Seg<'_> {
    fn eq(&self, other: &str) -> bool {
        **self == *other
    }
}

impl PartialEq<&str> for Seg<'_> {
    fn eq(&self, other: &&str) -> bool {
        **self == **other
    }
}

impl std::fmt::Debug for Seg<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

/// A call while the tables grow: the indices of its first receiver
/// segment and first argument in place of their addresses, its words
/// packed as a [`Call`]'s. Laid out exactly as a [`Call`], so that the
/// list of raw calls becomes the list of calls in its own buffer (an
/// in-place collect), not beside a second list.
struct RawCall {
    recv: usize,
    args: usize,
    name: u32,
    recv_start: u32,
    end: u32,
    nargs: u32,
}

impl RawCall {
    /// A call named at `name_tok`, `(` at `open` (at most a dozen tokens
    /// on), ending before `end`; its receiver segments `recv` and its
    /// arguments `args` are ranges of the tables. `None` for a call whose
    /// words do not fit their bits — none does: token indices and argument
    /// counts stay below 2^28 (a token takes a byte at least, a file at
    /// most 256 MiB), a receiver chain is read for at most 64 links of two
    /// segments, an open paren a dozen tokens on at most; but should that
    /// change, such a call is left out rather than packed wrong.
    fn new(
        name_tok: usize,
        open: usize,
        recv_start: usize,
        end: usize,
        recv: (usize, usize),
        args: (usize, usize),
    ) -> Option<RawCall> {
        let nrecv = recv.1 - recv.0;
        let gap = open - name_tok;
        let nargs = args.1 - args.0;
        let fits = |x: usize| x <= IDX_MASK as usize;
        if nrecv >= 256
            || gap >= 16
            || !fits(name_tok)
            || !fits(recv_start)
            || !fits(nargs)
            || end > u32::MAX as usize
        {
            debug_assert!(false, "a call's words do not fit their bits");
            return None;
        }
        let (nrecv, gap) = (nrecv as u32, gap as u32);
        Some(RawCall {
            recv: recv.0,
            args: args.0,
            name: name_tok as u32 | gap << IDX_BITS,
            recv_start: recv_start as u32 | (nrecv & 15) << IDX_BITS,
            end: end as u32,
            nargs: nargs as u32 | (nrecv >> 4 & 15) << IDX_BITS,
        })
    }
}

const _: () = assert!(std::mem::size_of::<ScopeRec>() == 12);

const _: () = assert!(
    std::mem::size_of::<RawCall>() == std::mem::size_of::<Call>()
        && std::mem::align_of::<RawCall>() == std::mem::align_of::<Call>()
);

/// Scopes, depth and brackets of one token stream.
pub struct Structure {
    pub scopes: ScopeTable,
    /// The scope of each token.
    pub tok_scope: ScopeColumn,
    /// Block depth inside the function at each token.
    pub tok_depth: TokColumn,
    /// Paren/bracket nesting (not braces) at each token.
    pub tok_paren: TokColumn,
    /// Matching bracket (both directions) for `( ) [ ] { }` and Ruby `do … end`.
    pub matching: Matching,
    /// Tokens that are the name of a function declaration, and the scope
    /// of its body.
    pub decls: Decls,
    /// Go methods: scope → receiver variable (`l` in `func (l *RedisLock) Unlock()`).
    pub receivers: HashMap<u32, String>,
}

impl Structure {
    /// The scopes, the rest of the structure dropped.
    pub fn into_scopes(self) -> ScopeTable {
        self.scopes
    }
}

/// The scopes of one stream while the front end reads them: 12 bytes a
/// scope, with every name and owner in one text (a [`Scope`] is 56 bytes
/// and an allocation for its name, and a minified bundle has a scope every
/// seventy bytes: 1.9 MB of its peak). Scope 0 is the file's top level.
/// [`ScopeTable::into_facts`] makes the facts' scopes once the rest of
/// the structure is gone.
pub struct ScopeTable {
    text: String,
    all: Vec<ScopeRec>,
    /// The owners' (offset, length) in `text`: one entry for the methods of
    /// a class declared one after another.
    owners: Vec<(u32, u32)>,
}

/// A scope of a [`ScopeTable`]: its name as a range of the table's text,
/// and its owner's index in [`ScopeTable::owners`] ([`ScopeRec::NO_OWNER`]
/// for none) with [`ScopeRec::TEST`] for a test scope.
#[derive(Clone, Copy)]
struct ScopeRec {
    name: u32,
    name_len: u32,
    owner: u32,
}

impl ScopeRec {
    const TEST: u32 = 1 << 31;
    const NO_OWNER: u32 = ScopeRec::TEST - 1;
}

/// A scope of a [`ScopeTable`] as read: what a [`Scope`] holds, borrowed.
#[derive(Clone, Copy, Debug)]
pub struct ScopeView<'s> {
    /// Function or method name (`""` for the file's top level).
    pub name: &'s str,
    /// The enclosing type, impl, class, module or trait name, if any.
    pub owner: Option<&'s str>,
    pub is_test: bool,
}

impl ScopeTable {
    /// The table with the file's top level.
    fn new() -> ScopeTable {
        let mut t = ScopeTable {
            text: String::new(),
            all: Vec::new(),
            owners: Vec::new(),
        };
        t.push("", None, false);
        t
    }

    pub fn len(&self) -> usize {
        self.all.len()
    }

    pub fn is_empty(&self) -> bool {
        self.all.is_empty()
    }

    /// Adds a scope (its index is the length before).
    pub fn push(&mut self, name: &str, owner: Option<&str>, is_test: bool) {
        let name_at = self.add(name);
        // (the methods of a class follow each other: their owner is
        // written once)
        let owner = match owner {
            None => ScopeRec::NO_OWNER,
            Some(o) => match self.owners.last() {
                Some(&(at, len)) if self.at(at, len) == o => (self.owners.len() - 1) as u32,
                _ => {
                    let at = self.add(o);
                    self.owners.push((at, o.len() as u32));
                    // (past 2^31 - 1 owners, which no file of 256 MiB
                    // declares, a scope reads as having none)
                    ((self.owners.len() - 1) as u32).min(ScopeRec::NO_OWNER)
                }
            },
        };
        self.all.push(ScopeRec {
            name: name_at,
            name_len: name.len() as u32,
            owner: owner | if is_test { ScopeRec::TEST } else { 0 },
        });
    }

    /// Appends `s` to the text: its offset. (A stream's names are its
    /// tokens' texts, less than the 256 MiB the lexer reads: past
    /// `u32::MAX` bytes a name reads as empty rather than wrap.)
    fn add(&mut self, s: &str) -> u32 {
        let at = self.text.len();
        if at + s.len() >= u32::MAX as usize {
            return u32::MAX;
        }
        self.text.push_str(s);
        at as u32
    }

    fn at(&self, at: u32, len: u32) -> &str {
        let (at, len) = (at as usize, len as usize);
        self.text.get(at..at + len).unwrap_or("")
    }

    fn view(&self, r: &ScopeRec) -> ScopeView<'_> {
        let owner = r.owner & !ScopeRec::TEST;
        ScopeView {
            name: self.at(r.name, r.name_len),
            owner: (owner != ScopeRec::NO_OWNER)
                .then(|| self.owners.get(owner as usize))
                .flatten()
                .map(|&(at, len)| self.at(at, len)),
            is_test: r.owner & ScopeRec::TEST != 0,
        }
    }

    pub fn get(&self, i: usize) -> Option<ScopeView<'_>> {
        self.all.get(i).map(|r| self.view(r))
    }

    /// The name of scope `i` (`""` for none): its owner is not looked up
    /// (sorting the functions by name reads it a few times a function).
    pub fn name(&self, i: usize) -> &str {
        self.all.get(i).map_or("", |r| self.at(r.name, r.name_len))
    }

    pub fn iter(&self) -> impl Iterator<Item = ScopeView<'_>> + '_ {
        self.all.iter().map(|r| self.view(r))
    }

    fn shrink_to_fit(&mut self) {
        self.text.shrink_to_fit();
        self.all.shrink_to_fit();
        self.owners.shrink_to_fit();
    }

    /// The facts' scopes (kept to the end of the run: no spare room).
    pub fn into_facts(self) -> Vec<Scope> {
        let mut out = Vec::with_capacity(self.all.len());
        out.extend(self.iter().map(|s| Scope {
            name: s.name.to_string(),
            owner: s.owner.map(str::to_string),
            is_test: s.is_test,
        }));
        out
    }
}

/// The name tokens of function declarations, each with the scope of its
/// body (most have one): sorted by token once the structure is built,
/// eight bytes a declaration (a map and a set took 26 a slot, and a
/// minified bundle declares a function every fifty bytes).
#[derive(Default)]
pub struct Decls {
    /// (name token, scope or [`Decls::NONE`]).
    all: Vec<(u32, u32)>,
}

impl Decls {
    const NONE: u32 = u32::MAX;

    /// `tok` names a declaration.
    fn add_name(&mut self, tok: usize) {
        self.all.push((tok as u32, Self::NONE));
    }

    /// `tok` names a declaration whose body is `scope` (a later scope of
    /// the same token replaces an earlier one).
    fn add_scope(&mut self, tok: usize, scope: u32) {
        match self.all.last_mut() {
            Some(last) if last.0 == tok as u32 => last.1 = scope,
            _ => self.all.push((tok as u32, scope)),
        }
    }

    /// Sorted by token, one entry a token: its last scope, if any.
    fn finish(&mut self) {
        if !self.all.is_sorted_by_key(|d| d.0) {
            // (stable: the later scope of a token stays the later one)
            self.all.sort_by_key(|d| d.0);
        }
        self.all.dedup_by(|later, kept| {
            if later.0 != kept.0 {
                return false;
            }
            if later.1 != Self::NONE {
                kept.1 = later.1;
            }
            true
        });
        self.all.shrink_to_fit();
    }

    fn find(&self, tok: usize) -> Option<u32> {
        let tok = u32::try_from(tok).ok()?;
        let i = self.all.binary_search_by_key(&tok, |d| d.0).ok()?;
        Some(self.all[i].1)
    }

    /// Whether `tok` is the name of a function declaration.
    pub fn is_name(&self, tok: usize) -> bool {
        self.find(tok).is_some()
    }

    /// The scope of the body of the declaration named at `tok`.
    pub fn scope_of(&self, tok: usize) -> Option<u32> {
        self.find(tok).filter(|&s| s != Self::NONE)
    }

    /// The declaration name tokens, ascending.
    pub fn names(&self) -> impl Iterator<Item = usize> + '_ {
        self.all.iter().map(|d| d.0 as usize)
    }

    /// (name token, scope) of the declarations with a body, by token.
    pub fn scopes(&self) -> impl Iterator<Item = (usize, u32)> + '_ {
        self.all
            .iter()
            .filter(|d| d.1 != Self::NONE)
            .map(|d| (d.0 as usize, d.1))
    }
}

const CONTROL: &[&str] = &[
    "if",
    "for",
    "while",
    "switch",
    "catch",
    "synchronized",
    "using",
    "foreach",
    "return",
    "new",
    "else",
    "do",
    "try",
    "finally",
    "when",
    "fixed",
    "checked",
    "unchecked",
    "function",
    "elseif",
    "match",
    "select",
    "go",
    "defer",
    "await",
    "throw",
    "yield",
    "typeof",
    "sizeof",
    "assert",
    "super",
    "this",
    "base",
    "in",
    "is",
    "as",
    "case",
    "default",
    "with",
    "except",
];

fn is_close(t: Tok) -> bool {
    t.kind() == Kind::Punct && matches!(t.text(), ")" | "]" | "}")
}

fn line_indent(src: &str, pos: usize) -> usize {
    let pos = pos.min(src.len());
    let b = src.as_bytes();
    let mut ls = pos;
    while ls > 0 && b[ls - 1] != b'\n' {
        ls -= 1;
    }
    let mut n = 0;
    while ls + n < b.len() && (b[ls + n] == b' ' || b[ls + n] == b'\t') {
        n += 1;
    }
    n
}

/// Matching bracket of each token, indexed by token (not a hash map: it is
/// read for nearly every token, and hashing showed in profiles). A match is
/// two bytes: the distance to it and its direction (`distance << 1 |
/// forward`, `0` for none); a match farther than [`Matching::NEAR`] tokens
/// (a long function or class body) is kept in a side map.
///
/// While the structure is built, `rel` holds a match for every token.
/// [`Matching::compact`] then keeps only the tokens that have one (a
/// quarter of a minified bundle's, fewer elsewhere): a bit per token says
/// which, and a token's match is found by its rank among them (the count of
/// bits before its block of 64, plus those before it in the block).
#[derive(Debug, Default, Clone)]
pub struct Matching {
    rel: Vec<u16>,
    far: HashMap<u32, u32>,
    /// Compacted: bit `i % 64` of `bits[i / 64]` says whether token `i`
    /// has an entry in `rel` (empty while not compacted).
    bits: Vec<u64>,
    /// The entries of `rel` before each block of `bits`.
    before: Vec<u32>,
}

impl Matching {
    const NONE: u16 = 0;
    /// The match is in `far`.
    const FAR: u16 = u16::MAX;
    /// The farthest distance kept inline (`NEAR << 1 | 1` < `FAR`).
    const NEAR: usize = (u16::MAX as usize - 1) >> 1;

    pub fn new(tokens: usize) -> Matching {
        Matching {
            rel: vec![Self::NONE; tokens],
            ..Matching::default()
        }
    }

    #[inline]
    pub fn get(&self, tok: &usize) -> Option<usize> {
        let tok = *tok;
        let v = if self.bits.is_empty() {
            *self.rel.get(tok)?
        } else {
            let (block, bit) = (tok >> 6, tok & 63);
            let word = *self.bits.get(block)?;
            if word >> bit & 1 == 0 {
                return None;
            }
            let below = (word & ((1u64 << bit) - 1)).count_ones() as usize;
            self.rel[self.before[block] as usize + below]
        };
        match v {
            Self::NONE => None,
            Self::FAR => self.far.get(&(tok as u32)).map(|&m| m as usize),
            v if v & 1 == 1 => Some(tok + (v >> 1) as usize),
            v => Some(tok - (v >> 1) as usize),
        }
    }

    #[inline]
    pub fn insert(&mut self, tok: usize, other: usize) {
        let d = tok.abs_diff(other);
        match self.rel.get_mut(tok) {
            Some(v) if self.bits.is_empty() && *v != Self::FAR && d != 0 && d <= Self::NEAR => {
                *v = (d << 1) as u16 | u16::from(other > tok);
            }
            _ => self.insert_slow(tok, other),
        }
    }

    /// [`Matching::insert`] past the end, of a far match, over one, or
    /// once compacted (then kept in `far`, as a far match).
    #[cold]
    fn insert_slow(&mut self, tok: usize, other: usize) {
        if !self.bits.is_empty() {
            let (block, bit) = (tok >> 6, tok & 63);
            if block >= self.bits.len() {
                // (past the compacted tokens: a block of its own, never read
                // but for this bit)
                self.bits.resize(block + 1, 0);
                self.before.resize(block + 1, self.rel.len() as u32);
            }
            if self.bits[block] >> bit & 1 == 1 {
                let below = (self.bits[block] & ((1u64 << bit) - 1)).count_ones() as usize;
                self.rel[self.before[block] as usize + below] = Self::FAR;
            } else {
                // an entry of its own: the ranks after it move up by one
                self.bits[block] |= 1 << bit;
                let below = (self.bits[block] & ((1u64 << bit) - 1)).count_ones() as usize;
                self.rel
                    .insert(self.before[block] as usize + below, Self::FAR);
                for b in &mut self.before[block + 1..] {
                    *b += 1;
                }
            }
            self.far.insert(tok as u32, other as u32);
            return;
        }
        if tok >= self.rel.len() {
            self.rel.resize(tok + 1, Self::NONE);
        }
        if self.rel[tok] == Self::FAR {
            self.far.remove(&(tok as u32));
        }
        let d = tok.abs_diff(other);
        if d == 0 || d > Self::NEAR {
            self.rel[tok] = Self::FAR;
            self.far.insert(tok as u32, other as u32);
        } else {
            self.rel[tok] = (d << 1) as u16 | u16::from(other > tok);
        }
    }

    /// Keeps only the tokens that have a match (see [`Matching`]); reads
    /// give the same answers. Once: a second call does nothing.
    pub fn compact(&mut self) {
        if !self.bits.is_empty() || self.rel.is_empty() {
            return;
        }
        let blocks = self.rel.len().div_ceil(64);
        let mut bits = vec![0u64; blocks];
        let mut before = Vec::with_capacity(blocks);
        let kept = self.rel.iter().filter(|&&v| v != Self::NONE).count();
        let mut rel = Vec::with_capacity(kept);
        for (block, chunk) in self.rel.chunks(64).enumerate() {
            before.push(rel.len() as u32);
            for (bit, &v) in chunk.iter().enumerate() {
                if v != Self::NONE {
                    bits[block] |= 1 << bit;
                    rel.push(v);
                }
            }
        }
        self.rel = rel;
        self.bits = bits;
        self.before = before;
    }
}

/// A `u32` per token that from one token to the next nearly always stays
/// or steps by one (block depth, bracket nesting), kept as its steps
/// ([`Steps`]) while it is written, not a value per token: the builders
/// write the tokens in order ([`TokColumn::set`]; a token may be written
/// again), each block of [`Steps::BLOCK`] tokens is encoded when a later
/// one is first written to, and a token not yet written reads 0. Read by
/// value, `at(i)` (as `[i]` of a `Vec<u32>`) and `get(i)`; any `u32` is
/// held as it is, however deep the nesting. A write into a block already
/// encoded (no builder makes one) turns the column into a plain vector,
/// once; [`TokColumn::compact`] encodes it again.
#[derive(Debug, Clone)]
pub struct TokColumn {
    len: usize,
    /// The blocks before the open one.
    steps: Steps,
    /// The open block (the one after `steps`), as written.
    open: [u32; Steps::BLOCK],
    /// The column as a vector once a write fell behind the open block
    /// (`steps` is then empty), else empty.
    dense: Vec<u32>,
}

/// A column as its steps: from one token to the next the value nearly
/// always stays, goes one up or one down (a bracket, a block), so each
/// block of 64 tokens keeps its first value and a bit per token for each
/// way it steps by one; a larger jump (into a function's body, where depth
/// starts again) is listed with the value it jumps to. 24 bytes a block:
/// about a third of a byte a token, at any depth.
#[derive(Debug, Clone, Default)]
pub struct Steps {
    blocks: Vec<StepBlock>,
    /// (token, value) of each token that is not the first of its block and
    /// differs from the one before by more than one, in token order.
    jumps: Vec<(u32, u32)>,
}

#[derive(Debug, Clone, Copy)]
struct StepBlock {
    /// The tokens one above / one below the token before.
    up: u64,
    down: u64,
    /// Its first entry in `jumps` (the next block's first, or the end of
    /// `jumps`, ends its entries).
    jump_at: u32,
    /// The value of its first token.
    base: u32,
}

const _: () = assert!(std::mem::size_of::<StepBlock>() == 24);

impl Steps {
    const BLOCK: usize = 64;

    /// Encodes the next block from the values of its tokens (at most
    /// `BLOCK`).
    fn push(&mut self, vals: &[u32]) {
        let first = self.blocks.len() * Self::BLOCK;
        let jump_at = self.jumps.len() as u32;
        let (mut up, mut down) = (0u64, 0u64);
        for (o, w) in vals.windows(2).enumerate() {
            let (prev, cur) = (w[0], w[1]);
            let bit = 1u64 << (o + 1);
            if prev != u32::MAX && cur == prev + 1 {
                up |= bit;
            } else if cur != u32::MAX && cur + 1 == prev {
                down |= bit;
            } else if cur != prev {
                self.jumps.push(((first + o + 1) as u32, cur));
            }
        }
        self.blocks.push(StepBlock {
            up,
            down,
            jump_at,
            base: vals.first().copied().unwrap_or(0),
        });
    }

    /// Token `i`'s value (`i` in an encoded block).
    #[inline]
    fn value(&self, i: usize) -> u32 {
        let (b, o) = (i / Self::BLOCK, i % Self::BLOCK);
        let blk = &self.blocks[b];
        let (mut from, mut at) = (0, blk.base);
        let j0 = blk.jump_at as usize;
        let j1 = self
            .blocks
            .get(b + 1)
            .map_or(self.jumps.len(), |n| n.jump_at as usize);
        if j1 > j0 {
            // the last jump of the block at or before `i`, if any
            let jumps = &self.jumps[j0..j1];
            let n = jumps.partition_point(|&(t, _)| t as usize <= i);
            if n > 0 {
                let (t, v) = jumps[n - 1];
                from = t as usize - b * Self::BLOCK;
                at = v;
            }
        }
        // the steps after `from`, up to and with `i` (the sum is the
        // value's; wrapping only on the way)
        let mask = (2u64 << o).wrapping_sub(1) & !((2u64 << from).wrapping_sub(1));
        let up = (blk.up & mask).count_ones();
        let down = (blk.down & mask).count_ones();
        at.wrapping_add(up).wrapping_sub(down)
    }
}

impl TokColumn {
    pub fn new(tokens: usize) -> TokColumn {
        TokColumn {
            len: tokens,
            steps: Steps {
                blocks: Vec::with_capacity(tokens.div_ceil(Steps::BLOCK)),
                jumps: Vec::new(),
            },
            open: [0; Steps::BLOCK],
            dense: Vec::new(),
        }
    }

    /// Encodes the rest of the column (its last writes; a column that
    /// became a vector, whole), and gives back the jump list's spare room.
    pub fn compact(&mut self) {
        if self.dense.is_empty() {
            self.seal(self.len.div_ceil(Steps::BLOCK));
        } else {
            let dense = std::mem::take(&mut self.dense);
            self.steps = Steps {
                blocks: Vec::with_capacity(dense.len().div_ceil(Steps::BLOCK)),
                jumps: Vec::new(),
            };
            dense.chunks(Steps::BLOCK).for_each(|c| self.steps.push(c));
        }
        self.steps.jumps.shrink_to_fit();
    }

    /// Encodes the open block and the blocks after it up to `end` (not
    /// written: zeros).
    fn seal(&mut self, end: usize) {
        while self.steps.blocks.len() < end {
            let first = self.steps.blocks.len() * Steps::BLOCK;
            let n = (self.len - first).min(Steps::BLOCK);
            self.steps.push(&self.open[..n]);
            self.open = [0; Steps::BLOCK];
        }
    }

    /// Token `i`'s value (`i < len`).
    #[inline]
    fn value(&self, i: usize) -> u32 {
        if !self.dense.is_empty() {
            return self.dense[i];
        }
        match (i / Steps::BLOCK).cmp(&self.steps.blocks.len()) {
            std::cmp::Ordering::Less => self.steps.value(i),
            std::cmp::Ordering::Equal => self.open[i % Steps::BLOCK],
            std::cmp::Ordering::Greater => 0,
        }
    }

    /// Token `i`'s value, if the column has the token.
    #[inline]
    pub fn get(&self, i: usize) -> Option<u32> {
        (i < self.len).then(|| self.value(i))
    }

    /// Token `i`'s value (as a vector's `[i]`: panics past the end).
    #[inline]
    pub fn at(&self, i: usize) -> u32 {
        if i >= self.len {
            out_of_range(i, self.len);
        }
        self.value(i)
    }

    /// Sets token `i`'s value (`i` within the column, as `[i]` wants).
    #[inline]
    pub fn set(&mut self, i: usize, v: u32) {
        if i >= self.len {
            out_of_range(i, self.len);
        }
        if self.dense.is_empty() && i / Steps::BLOCK == self.steps.blocks.len() {
            self.open[i % Steps::BLOCK] = v;
        } else {
            self.set_later(i, v);
        }
    }

    /// [`TokColumn::set`] past the open block (it is encoded, and the
    /// token's block opened), or behind it (the column becomes a vector).
    #[inline(never)]
    fn set_later(&mut self, i: usize, v: u32) {
        if self.dense.is_empty() {
            let b = i / Steps::BLOCK;
            if b > self.steps.blocks.len() {
                self.seal(b);
                self.open[i % Steps::BLOCK] = v;
                return;
            }
            self.dense = (0..self.len).map(|k| self.value(k)).collect();
            self.steps = Steps::default();
            self.open = [0; Steps::BLOCK];
        }
        self.dense[i] = v;
    }
}

/// The scope of each token: two bytes a token while the file has at most
/// 65,536 scopes (nearly every file), four from the first larger one on.
/// Read like a `Vec<u32>` (`[i]`, `get(i)`, `iter()`); written with
/// [`ScopeColumn::set`]. Once the structure is built,
/// [`ScopeColumn::compact`] keeps it as runs of tokens of one scope where
/// that is smaller ([`ScopeRuns`]).
#[derive(Debug, Clone)]
pub enum ScopeColumn {
    Narrow(Vec<u16>),
    Wide(Vec<u32>),
    Runs(Box<ScopeRuns>),
}

/// A scope column as runs: a run starts wherever the scope changes (twice
/// a function, at its body and after it). Hand-written code has a run every
/// few hundred tokens, a minified bundle one every ten or so; either way
/// eight bytes a run and half a bit a token are less than two bytes a
/// token. A token's run is found from the run its block of 64 tokens
/// starts in, stepping over the runs that start before it in the block.
#[derive(Debug, Clone)]
pub struct ScopeRuns {
    /// Tokens in the column.
    len: usize,
    /// The first token of each run, ascending (the first is 0).
    starts: Vec<u32>,
    /// The scope of each run.
    scopes: Vec<u32>,
    /// The run that token `64 * b` is in, for each block `b`.
    blocks: Vec<u32>,
}

impl ScopeRuns {
    const BLOCK: usize = 64;

    #[inline]
    fn get(&self, i: usize) -> Option<&u32> {
        if i >= self.len {
            return None;
        }
        let mut r = *self.blocks.get(i / Self::BLOCK)? as usize;
        while self.starts.get(r + 1).is_some_and(|&s| s as usize <= i) {
            r += 1;
        }
        self.scopes.get(r)
    }
}

/// `NARROW[v] == v`: what a narrow [`ScopeColumn`] lends for a value (its
/// readers borrow a `&u32`, as they would from a vector).
static NARROW: [u32; 1 << 16] = {
    let mut t = [0u32; 1 << 16];
    let mut k = 0;
    while k < t.len() {
        t[k] = k as u32;
        k += 1;
    }
    t
};

impl ScopeColumn {
    pub fn new(tokens: usize) -> ScopeColumn {
        ScopeColumn::Narrow(vec![0; tokens])
    }

    #[inline]
    pub fn get(&self, i: usize) -> Option<&u32> {
        match self {
            ScopeColumn::Narrow(v) => v.get(i).map(|&s| &NARROW[s as usize]),
            ScopeColumn::Wide(v) => v.get(i),
            ScopeColumn::Runs(r) => r.get(i),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            ScopeColumn::Narrow(v) => v.len(),
            ScopeColumn::Wide(v) => v.len(),
            ScopeColumn::Runs(r) => r.len,
        }
    }

    /// Keeps the column as runs ([`ScopeRuns`]) when they take less room;
    /// reads give the same answers.
    pub fn compact(&mut self) {
        let len = self.len();
        let per_token = match self {
            ScopeColumn::Narrow(_) => 2,
            ScopeColumn::Wide(_) => 4,
            ScopeColumn::Runs(_) => return,
        };
        let changes = match self {
            ScopeColumn::Narrow(v) => v.windows(2).filter(|w| w[0] != w[1]).count(),
            ScopeColumn::Wide(v) => v.windows(2).filter(|w| w[0] != w[1]).count(),
            ScopeColumn::Runs(_) => return,
        };
        let runs = usize::from(len > 0) + changes;
        let blocks = len.div_ceil(ScopeRuns::BLOCK);
        if runs * 8 + blocks * 4 >= len * per_token {
            return;
        }
        let mut out = ScopeRuns {
            len,
            starts: Vec::with_capacity(runs),
            scopes: Vec::with_capacity(runs),
            blocks: Vec::with_capacity(blocks),
        };
        let mut prev = None;
        let mut push = |i: usize, s: u32| {
            if prev != Some(s) {
                prev = Some(s);
                out.starts.push(i as u32);
                out.scopes.push(s);
            }
            if i % ScopeRuns::BLOCK == 0 {
                out.blocks.push((out.starts.len() - 1) as u32);
            }
        };
        match self {
            ScopeColumn::Narrow(v) => v
                .iter()
                .enumerate()
                .for_each(|(i, &s)| push(i, u32::from(s))),
            ScopeColumn::Wide(v) => v.iter().enumerate().for_each(|(i, &s)| push(i, s)),
            ScopeColumn::Runs(_) => return,
        }
        *self = ScopeColumn::Runs(Box::new(out));
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn iter(&self) -> ScopeIter<'_> {
        ScopeIter {
            col: self,
            next: 0,
            run: 0,
        }
    }

    /// Sets token `i`'s scope (`i` within the column, as `[i]` wants).
    #[inline]
    pub fn set(&mut self, i: usize, scope: u32) {
        match self {
            ScopeColumn::Narrow(v) if scope <= u32::from(u16::MAX) => v[i] = scope as u16,
            ScopeColumn::Wide(v) => v[i] = scope,
            ScopeColumn::Narrow(_) | ScopeColumn::Runs(_) => self.widen(i, scope),
        }
    }

    /// [`ScopeColumn::set`] of the first scope past two bytes, or of a
    /// compacted column (none is set after the structure is built): the
    /// column becomes four bytes a token (once).
    #[cold]
    fn widen(&mut self, i: usize, scope: u32) {
        let mut wide: Vec<u32> = self.iter().copied().collect();
        wide[i] = scope;
        *self = ScopeColumn::Wide(wide);
    }
}

impl std::ops::Index<usize> for ScopeColumn {
    type Output = u32;
    #[inline]
    fn index(&self, i: usize) -> &u32 {
        match self {
            ScopeColumn::Narrow(v) => &NARROW[v[i] as usize],
            ScopeColumn::Wide(v) => &v[i],
            ScopeColumn::Runs(r) => match r.get(i) {
                Some(s) => s,
                None => out_of_range(i, r.len),
            },
        }
    }
}

/// (As a vector's index out of range.)
#[cold]
#[inline(never)]
fn out_of_range(i: usize, len: usize) -> ! {
    panic!("token {i} of a column of {len}")
}

/// The scopes of a [`ScopeColumn`]'s tokens in order (a compacted one's
/// read run after run, not looked up token by token).
pub struct ScopeIter<'a> {
    col: &'a ScopeColumn,
    next: usize,
    /// The run of token `next` (compacted columns).
    run: usize,
}

impl<'a> Iterator for ScopeIter<'a> {
    type Item = &'a u32;

    #[inline]
    fn next(&mut self) -> Option<&'a u32> {
        let i = self.next;
        let s = match self.col {
            ScopeColumn::Narrow(v) => v.get(i).map(|&s| &NARROW[s as usize]),
            ScopeColumn::Wide(v) => v.get(i),
            ScopeColumn::Runs(r) => {
                if i >= r.len {
                    return None;
                }
                while r.starts.get(self.run + 1).is_some_and(|&s| s as usize <= i) {
                    self.run += 1;
                }
                r.scopes.get(self.run)
            }
        }?;
        self.next += 1;
        Some(s)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.col.len().saturating_sub(self.next);
        (left, Some(left))
    }
}

pub fn structure(toks: Toks, src: &str, lang: Language) -> Structure {
    let mut st = Structure {
        scopes: ScopeTable::new(),
        tok_scope: ScopeColumn::new(toks.len()),
        tok_depth: TokColumn::new(toks.len()),
        tok_paren: TokColumn::new(toks.len()),
        matching: Matching::new(toks.len()),
        decls: Decls::default(),
        receivers: HashMap::default(),
    };
    // brackets
    let mut stack: Vec<usize> = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        if t.kind() != Kind::Punct {
            continue;
        }
        match t.text() {
            "(" | "[" | "{" => stack.push(i),
            ")" | "]" | "}" => {
                let want = match t.text() {
                    ")" => "(",
                    "]" => "[",
                    _ => "{",
                };
                // bounded search: a stray closer must not make this quadratic
                let floor = stack.len().saturating_sub(64);
                if let Some(pos) = stack[floor..]
                    .iter()
                    .rposition(|&o| toks.at(o).text() == want)
                    .map(|p| p + floor)
                {
                    let o = stack[pos];
                    stack.truncate(pos);
                    st.matching.insert(o, i);
                    st.matching.insert(i, o);
                }
            }
            _ => {}
        }
    }
    let mut paren = 0u32;
    for (i, t) in toks.iter().enumerate() {
        if t.kind() == Kind::Punct && matches!(t.text(), ")" | "]") {
            paren = paren.saturating_sub(1);
        }
        st.tok_paren.set(i, paren);
        if t.kind() == Kind::Punct && matches!(t.text(), "(" | "[") {
            paren += 1;
        }
    }
    match lang {
        Language::Python => python_scopes(toks, src, &mut st),
        Language::Ruby => ruby_scopes(toks, &mut st),
        _ => clike_scopes(toks, lang, &mut st),
    }
    if lang == Language::TypeScript {
        ts_signatures(toks, &mut st);
    }
    st.decls.finish();
    st.matching.compact();
    st.tok_scope.compact();
    st.tok_depth.compact();
    st.tok_paren.compact();
    // no room left spare from growing by doubling
    st.scopes.shrink_to_fit();
    st
}

/// TypeScript method signatures without a body (`get(id: string): Promise<T>;`
/// in an interface, a type literal or an abstract class) declare a method,
/// they call nothing. A call that starts a statement is never followed by
/// `:` (a ternary's call follows `?`).
fn ts_signatures(toks: Toks, st: &mut Structure) {
    const MODIFIERS: &[&str] = &[
        "abstract",
        "public",
        "private",
        "protected",
        "readonly",
        "static",
        "declare",
    ];
    for i in 0..toks.len().saturating_sub(1) {
        let t = toks.at(i);
        // generic: `getJSON<T>(key: string): Promise<T | null>;`
        let open = skip_type_params(toks, i + 1, Language::TypeScript);
        if !t.is_ident() || !toks.get(open).is_some_and(|o| o.is("(")) {
            continue;
        }
        let prev = i.checked_sub(1).map(|p| toks.at(p));
        // after a block, a statement, a modifier, or on a new line after the
        // previous member's type (never after `?`, `:`, `=` or an operator)
        let starts = prev.is_none_or(|p| {
            (p.kind() == Kind::Punct && matches!(p.text(), "{" | ";" | "}"))
                || (p.is_ident() && MODIFIERS.contains(&p.text()))
                || (t.nl()
                    && (p.is_ident()
                        || (p.kind() == Kind::Punct && matches!(p.text(), ">" | ")" | "]"))))
        });
        if !starts {
            continue;
        }
        let Some(close) = st.matching.get(&open) else {
            continue;
        };
        if toks.get(close + 1).is_some_and(|n| n.is(":")) {
            st.decls.add_name(i);
        }
    }
}

/// What a header opens (a `{`, a Python line, a Ruby keyword).
enum Frame {
    Class(String),
    Func(u32),
    Block,
    /// A type literal inside a header (`interface{}`, TS `{ ok: boolean }`):
    /// neither a block nor a statement boundary.
    TypeLit,
}

/// An open [`Frame`] as [`Frames`] keeps it (a class's name aside).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Open {
    Class,
    Func(u32),
    Block,
    TypeLit,
}

/// The owner of a method declared here: the innermost open class.
fn owner_of(frames: &Frames) -> Option<String> {
    frames.names.last().cloned()
}

/// The scope and block depth at the top of `frames`: the innermost function
/// and the blocks above it (file scope inside a class or at the top).
fn current(frames: &Frames) -> (u32, u32) {
    match frames.items.last() {
        Some(top) if top.scope != Frames::NONE => (top.scope, top.depth),
        _ => (0, 0),
    }
}

/// The stack of open frames, with [`current`]'s answer kept for every
/// prefix, so that it costs O(1) per token instead of a walk down the
/// stack (quadratic in the nesting depth). 20 bytes a frame.
#[derive(Default)]
struct Frames {
    items: Vec<OpenFrame>,
    /// The names of the open classes, innermost last.
    names: Vec<String>,
    /// How many `Open::Func` are open.
    funcs: usize,
}

#[derive(Clone, Copy)]
struct OpenFrame {
    /// Its opening token (Python: its line's indent).
    at: u32,
    open: Open,
    /// The innermost function in the stack up to and with this frame, and
    /// its block depth there; `scope` is [`Frames::NONE`] when a class or
    /// nothing comes first.
    scope: u32,
    depth: u32,
}

const _: () = assert!(std::mem::size_of::<OpenFrame>() == 20);

impl Frames {
    const NONE: u32 = u32::MAX;

    fn push(&mut self, (at, frame): (usize, Frame)) {
        let (below, depth) = match self.items.last() {
            Some(top) => (top.scope, top.depth),
            None => (Self::NONE, 0),
        };
        let (open, scope, depth) = match frame {
            Frame::Func(s) => (Open::Func(s), s, 0),
            Frame::Block if below != Self::NONE => (Open::Block, below, depth + 1),
            Frame::Block => (Open::Block, Self::NONE, 0),
            Frame::TypeLit => (Open::TypeLit, below, depth),
            Frame::Class(name) => {
                self.names.push(name);
                (Open::Class, Self::NONE, 0)
            }
        };
        if matches!(open, Open::Func(_)) {
            self.funcs += 1;
        }
        self.items.push(OpenFrame {
            // (a token index or an indent: within a file's 256 MiB)
            at: u32::try_from(at).unwrap_or(u32::MAX),
            open,
            scope,
            depth,
        });
    }

    fn pop(&mut self) -> Option<(usize, Open)> {
        let top = self.items.pop()?;
        match top.open {
            Open::Func(_) => self.funcs -= 1,
            Open::Class => {
                self.names.pop();
            }
            _ => {}
        }
        Some((top.at as usize, top.open))
    }

    fn last(&self) -> Option<(usize, Open)> {
        self.items.last().map(|f| (f.at as usize, f.open))
    }

    /// Frame `k`'s opening token (from the bottom).
    fn at(&self, k: usize) -> usize {
        self.items[k].at as usize
    }

    fn truncate(&mut self, len: usize) {
        while self.items.len() > len {
            self.pop();
        }
    }
}

fn test_class(name: &Option<String>) -> bool {
    name.as_deref()
        .is_some_and(|n| n.ends_with("Test") || n.ends_with("Tests") || n.starts_with("Test"))
}

fn clike_scopes(toks: Toks, lang: Language, st: &mut Structure) {
    let mut frames = Frames::default();
    let mut head = 0usize; // first token of the current statement header
                           // an expression-bodied function: (end token, scope)
    let mut expr_scope: Option<(usize, u32)> = None;
    for i in 0..toks.len() {
        let t = toks.at(i);
        let (s, d) = current(&frames);
        st.tok_scope.set(i, s);
        st.tok_depth.set(i, d);
        if let Some((end, sc)) = expr_scope {
            if i < end {
                st.tok_scope.set(i, sc);
                st.tok_depth.set(i, 0);
            } else {
                // the next declaration's header starts after the expression
                // (`fun a(x) = f(x)` then `fun b(y) {` names `b`, not `a`)
                expr_scope = None;
                head = head.max(end);
            }
        }
        if expr_scope.is_none() && s == 0 {
            if let Some((end, sc)) = expression_body(toks, lang, i, &frames, st) {
                expr_scope = Some((end, sc));
            }
        }
        if t.kind() != Kind::Punct {
            continue;
        }
        match t.text() {
            ";" => {
                if !matches!(frames.last(), Some((_, Open::TypeLit))) {
                    head = i + 1;
                }
            }
            "}" => {
                if !matches!(frames.pop(), Some((_, Open::TypeLit))) {
                    head = i + 1;
                }
            }
            "{" => {
                let prev = i.checked_sub(1).map(|p| toks.at(p).text()).unwrap_or("");
                let type_lit = match lang {
                    Language::Go => {
                        matches!(prev, "interface" | "struct")
                            && (st.tok_paren.at(i) > 0
                                || toks.get(i + 1).is_some_and(|n| n.is("}")))
                    }
                    Language::TypeScript => {
                        matches!(prev, ":" | "<" | "|" | "&")
                            && i > 0
                            && toks.at(i - 1).kind() == Kind::Punct
                    }
                    _ => false,
                } || destructured_param(toks, head, i, lang, &frames, st);
                if type_lit || matches!(frames.last(), Some((_, Open::TypeLit))) {
                    frames.push((i, Frame::TypeLit));
                    continue;
                }
                let frame = classify_header(toks, head, i, lang, &frames, st);
                frames.push((i, frame));
                head = i + 1;
            }
            _ => {}
        }
    }
}

/// JS/TS: a `{` inside the parameter list of a function declaration
/// (`function f({ key, reason }: Args) {`) or of a class method
/// (`async release({ key }) {`) is a destructuring pattern, not the body;
/// after `=` it is a parameter's default (`opts: Options = {}`).
fn destructured_param(
    toks: Toks,
    head: usize,
    i: usize,
    lang: Language,
    frames: &Frames,
    st: &Structure,
) -> bool {
    if !matches!(lang, Language::JavaScript | Language::TypeScript)
        || i == 0
        || !(toks.at(i - 1).is("(") || toks.at(i - 1).is(",") || toks.at(i - 1).is("="))
        || head >= i
        || st.tok_paren.at(i) <= st.tok_paren.at(head)
    {
        return false;
    }
    let level = st.tok_paren.at(head);
    // the header's first parenthesis at its own level, and what precedes it
    let Some(open) = (head..i).find(|&k| toks.at(k).is("(") && st.tok_paren.at(k) == level) else {
        return false;
    };
    // a generic method's type parameters stand between its name and the list
    let name_end = type_params_start(toks, open).unwrap_or(open);
    if name_end <= head || !toks.at(name_end - 1).is_ident() {
        return false;
    }
    let in_class = matches!(frames.last(), Some((_, Open::Class)));
    let declares = (head..open).any(|k| toks.at(k).is("function"));
    declares || in_class
}

/// JS/TS: the innermost open `{` is an object literal, not a block: it
/// follows `return`, `=`, `(`, `,`, `:` or `[` (a block follows `)`, `=>`,
/// `else`, `try`, or ends a statement).
fn in_object_literal(toks: Toks, frames: &Frames) -> bool {
    let Some((open, Open::Block)) = frames.last() else {
        return false;
    };
    open.checked_sub(1)
        .and_then(|p| toks.get(p))
        .is_some_and(|t| matches!(t.text(), "return" | "=" | "(" | "," | ":" | "["))
}

/// Kotlin `fun name(..): T = expr` and C# `T Name(..) => expr;`: a scope
/// over the expression, returned as (end token, scope id).
fn expression_body(
    toks: Toks,
    lang: Language,
    i: usize,
    frames: &Frames,
    st: &mut Structure,
) -> Option<(usize, u32)> {
    let t = toks.at(i);
    let (name_tok, open) = match lang {
        Language::Kotlin if t.is("fun") => {
            let mut j = skip_type_params(toks, i + 1, lang);
            while toks.get(j + 1).is_some_and(|x| x.is(".")) {
                j += 2;
            }
            (j, j + 1)
        }
        Language::CSharp if t.is_ident() && matches!(frames.last(), Some((_, Open::Class))) => {
            (i, skip_type_params(toks, i + 1, lang))
        }
        _ => return None,
    };
    if !toks.get(name_tok).is_some_and(|n| n.is_ident())
        || !toks.get(open).is_some_and(|p| p.is("("))
    {
        return None;
    }
    let close = st.matching.get(&open)?;
    let mut j = close + 1;
    let limit = (j + 24).min(toks.len());
    while j < limit
        && !toks.at(j).is("=")
        && !toks.at(j).is("=>")
        && !toks.at(j).is("{")
        && !toks.at(j).is(";")
    {
        j += 1;
    }
    let arrow = if lang == Language::Kotlin { "=" } else { "=>" };
    if j >= limit || !toks.at(j).is(arrow) {
        return None;
    }
    let end = super::values::expr_end(toks, st, lang, j + 1);
    st.decls.add_name(name_tok);
    let owner = owner_of(frames);
    let is_test = test_class(&owner);
    st.scopes
        .push(toks.at(name_tok).text(), owner.as_deref(), is_test);
    st.decls.add_scope(name_tok, (st.scopes.len() - 1) as u32);
    Some((end, (st.scopes.len() - 1) as u32))
}

/// The first `(` of `h` that can open a parameter list: not the arguments
/// of an annotation (`@Conditional(X.class) public class P {`, TS
/// decorators) nor inside a C# attribute (`[DebuggerDisplay("…")]`).
fn first_param_paren(h: Toks) -> usize {
    let mut i = 0;
    let mut square = 0usize;
    while i < h.len() {
        let t = h.at(i);
        if t.is("[") {
            square += 1;
        } else if t.is("]") {
            square = square.saturating_sub(1);
        } else if t.is("@") {
            i += 1;
            while i < h.len() && (h.at(i).is_ident() || h.at(i).is(".")) {
                i += 1;
            }
            if i < h.len() && h.at(i).is("(") {
                let mut depth = 0usize;
                while i < h.len() {
                    if h.at(i).is("(") {
                        depth += 1;
                    } else if h.at(i).is(")") {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            break;
                        }
                    }
                    i += 1;
                }
                i += 1;
            }
            continue;
        } else if t.is("(") && square == 0 {
            return i;
        }
        i += 1;
    }
    h.len()
}

/// Longest type-parameter list (in tokens) that [`skip_type_params`] reads.
const MAX_TYPE_PARAM_TOKENS: usize = 64;

/// Past a type-parameter list that opens at `h[i]` right after a declared
/// name (`setJSON<T>(` in TypeScript, C# `Get<T>(`, Kotlin `fun <T> f(`,
/// Go `Name[T any](`): the index after its closing bracket. `i` itself when
/// `h[i]` opens none or the list does not close within a short header.
pub(crate) fn skip_type_params(h: Toks, i: usize, lang: Language) -> usize {
    let (open, close) = match lang {
        Language::Go => ("[", "]"),
        Language::TypeScript | Language::Java | Language::Kotlin | Language::CSharp => ("<", ">"),
        _ => return i,
    };
    if !h.get(i).is_some_and(|t| t.is(open)) {
        return i;
    }
    let mut depth = 0usize;
    for (k, t) in h.iter().enumerate().skip(i).take(MAX_TYPE_PARAM_TOKENS) {
        if t.is(open) {
            depth += 1;
        } else if t.is(close) {
            depth -= 1;
            if depth == 0 {
                return k + 1;
            }
        } else if t.is(";") {
            break;
        }
    }
    i
}

/// The `<` of a type-parameter list that ends right before `h[end]`.
fn type_params_start(h: Toks, end: usize) -> Option<usize> {
    if !end.checked_sub(1).is_some_and(|l| h.at(l).is(">")) {
        return None;
    }
    let mut depth = 0usize;
    for k in (0..end).rev().take(MAX_TYPE_PARAM_TOKENS) {
        if h.at(k).is(">") {
            depth += 1;
        } else if h.at(k).is("<") {
            depth -= 1;
            if depth == 0 {
                return Some(k);
            }
        } else if h.at(k).is(";") {
            break;
        }
    }
    None
}

fn classify_header(
    toks: Toks,
    head: usize,
    open: usize,
    lang: Language,
    frames: &Frames,
    st: &mut Structure,
) -> Frame {
    let h = toks.slice(head.min(open)..open);
    // Some `Func` frame is open (what `current(frames).0 != 0` also implies).
    let in_func = frames.funcs > 0;
    // class-like: a keyword before any parameter list (`object value` in
    // `bool SetNx(string key, object value)` is a C# parameter)
    let before_params = first_param_paren(h);
    for (k, t) in h.slice(..before_params).iter().enumerate() {
        if t.is_ident()
            && matches!(
                t.text(),
                "class"
                    | "struct"
                    | "interface"
                    | "trait"
                    | "object"
                    | "enum"
                    | "record"
                    | "module"
            )
        {
            // `public object Eval(…)`: a method returning `object`
            let method = t.text() == "object" && h.get(k + 2).is_some_and(|p| p.is("("));
            if let Some(n) = h.get(k + 1).filter(|n| n.is_ident() && !method) {
                // Go: `type Name struct {`
                if lang == Language::Go {
                    if k >= 1 && h.at(k - 1).is_ident() {
                        return Frame::Class(h.at(k - 1).text().to_string());
                    }
                    return Frame::Block;
                }
                return Frame::Class(n.text().to_string());
            }
            if lang == Language::Go && t.text() == "struct" && k >= 1 && h.at(k - 1).is_ident() {
                return Frame::Class(h.at(k - 1).text().to_string());
            }
        }
    }
    let annotated_test = h.windows(2).any(|w| {
        (w.at(0).is("@") || w.at(0).is("["))
            && matches!(
                w.at(1).text(),
                "Test"
                    | "ParameterizedTest"
                    | "RepeatedTest"
                    | "Fact"
                    | "Theory"
                    | "TestMethod"
                    | "TestCase"
            )
    });
    let mut owner = owner_of(frames);
    let class_is_test = test_class(&owner);
    let mk =
        |st: &mut Structure, name: &str, name_tok: usize, owner: Option<String>, test: bool| {
            st.decls.add_name(name_tok);
            st.scopes
                .push(name, owner.as_deref(), test || class_is_test);
            st.decls.add_scope(name_tok, (st.scopes.len() - 1) as u32);
            Frame::Func((st.scopes.len() - 1) as u32)
        };
    let base = head.min(open);
    // Go: func Name( / func (r *T) Name(
    if lang == Language::Go {
        if in_func {
            return Frame::Block;
        }
        // a declaration starts with its `func`; a later one is a func-typed
        // parameter or result (`fn func() error`), not the declaration's
        let decl = h.first().is_some_and(|t| t.is("func"));
        // Go has no `;` between declarations, so a header can still hold
        // the `import (…)`/`const …` lines before it: the declaration's
        // `func` is then the last one that starts a line outside the
        // parentheses — one inside them types a parameter, and one later
        // on the line types a result (`func F() func() error {`)
        let level = st.tok_paren.at(open);
        let last = if decl {
            Some(0)
        } else {
            h.iter()
                .enumerate()
                .rposition(|(k, t)| t.is("func") && t.nl() && st.tok_paren.at(base + k) == level)
                .or_else(|| h.iter().rposition(|t| t.is("func")))
        };
        if let Some(f) = last {
            let base = base + f;
            let h = h.slice(f..);
            let mut k = 1;
            let mut recv_var = None;
            if h.get(1).is_some_and(|t| t.is("(")) {
                let close = st.matching.get(&(base + 1)).unwrap_or(base + 1);
                if close <= base + 1 || close >= open {
                    return Frame::Block;
                }
                // receiver type: last ident inside, before a generic
                // type's arguments (`(c *Cache[K, V])`)
                let recv = toks.slice(base + 1..close);
                let recv = recv.slice(..recv.iter().position(|t| t.is("[")).unwrap_or(recv.len()));
                if let Some(ty) = recv.iter().rev().find(|t| t.is_ident()) {
                    owner = Some(ty.text().to_string());
                }
                let idents: Vec<Tok> = toks
                    .slice(base + 1..close)
                    .iter()
                    .filter(|t| t.is_ident())
                    .collect();
                if idents.len() >= 2 {
                    recv_var = Some(idents[0].text().to_string());
                }
                k = close - base + 1;
            }
            // generic: func Name[T any](
            let p = skip_type_params(h, k + 1, lang);
            if let Some(n) = h
                .get(k)
                .filter(|n| n.is_ident() && h.get(p).is_some_and(|p| p.is("(")))
            {
                let params = toks.slice(base + k..open);
                let test =
                    n.text().starts_with("Test") && params.iter().any(|p| p.text() == "testing");
                let frame = mk(st, n.text(), base + k, owner, test);
                if let (Frame::Func(id), Some(r)) = (&frame, recv_var) {
                    st.receivers.insert(*id, r);
                }
                return frame;
            }
        }
        return Frame::Block;
    }
    // `function name(` / `fun name(` / `def`
    for (k, t) in h.iter().enumerate() {
        if t.is_ident() && matches!(t.text(), "function" | "fun") {
            let mut j = k + 1;
            if h.get(j).is_some_and(|x| x.is("*")) {
                j += 1;
            }
            // Kotlin generic: fun <T> name(
            j = skip_type_params(h, j, lang);
            // Kotlin extension: fun Type.name( / fun List<T>.name(
            while h.get(j + 1).is_some_and(|x| x.is(".") || x.is("<")) {
                let dot = skip_type_params(h, j + 1, lang);
                if !h.get(dot).is_some_and(|x| x.is(".")) {
                    break;
                }
                j = dot + 1;
            }
            if let Some(n) = h.get(j).filter(|n| n.is_ident()) {
                // TypeScript generic: function name<T>(
                if h.get(skip_type_params(h, j + 1, lang))
                    .is_some_and(|x| x.is("("))
                {
                    let test = annotated_test
                        || (lang == Language::Php && n.text().starts_with("test"))
                        || (lang == Language::Kotlin && class_is_test);
                    return mk(st, n.text(), base + j, owner, test);
                }
            }
            if in_func {
                return Frame::Block;
            }
        }
    }
    // JS/TS arrow assigned to a name: `const name = async (..) => {` / `name = (..) => {`
    if matches!(lang, Language::JavaScript | Language::TypeScript)
        && h.last().is_some_and(|t| t.is("=>"))
    {
        // the last top-level `=`: without semicolons the header can span
        // earlier statements (`const a = 1\nconst f = (k) => {`)
        let level = st.tok_paren.at(open);
        if let Some(eq) = h
            .iter()
            .enumerate()
            .rposition(|(k, t)| t.is("=") && st.tok_paren.at(base + k) == level)
        {
            if eq >= 1 && h.at(eq - 1).is_ident() && !in_func {
                return mk(st, h.at(eq - 1).text(), base + eq - 1, owner, false);
            }
            if eq >= 1
                && h.at(eq - 1).is_ident()
                && h.first()
                    .is_some_and(|t| matches!(t.text(), "const" | "let" | "var"))
            {
                return mk(st, h.at(eq - 1).text(), base + eq - 1, owner, false);
            }
        }
        return Frame::Block;
    }
    // JS/TS object-literal methods at the top level (`{ async acquire(key) { … } }`)
    // or in an object literal a function builds (`return { async release(id) { … } }`)
    if matches!(lang, Language::JavaScript | Language::TypeScript)
        && (!in_func || in_object_literal(toks, frames))
    {
        let k = h
            .iter()
            .position(|t| {
                !matches!(
                    t.text(),
                    "async"
                        | "static"
                        | "get"
                        | "set"
                        | "public"
                        | "private"
                        | "protected"
                        | "*"
                        | ","
                )
            })
            .unwrap_or(0);
        // a generic method's type parameters come before its list (`setJSON<T>(`)
        let p = skip_type_params(h, k + 1, lang);
        let header_ends = st
            .matching
            .get(&(base + p))
            .is_some_and(|c| c + 1 == open || toks.get(c + 1).is_some_and(|x| x.is(":")));
        if h.get(k)
            .is_some_and(|n| n.is_ident() && !CONTROL.contains(&n.text()))
            && h.get(p).is_some_and(|p| p.is("("))
            && header_ends
        {
            let name = h.at(k).text().to_string();
            return mk(st, &name, base + k, owner, false);
        }
    }
    // methods: `mods Type name(params) [throws X] {` directly in a class (or top level)
    let direct_in_class = matches!(frames.last(), Some((_, Open::Class)));
    if direct_in_class {
        if let Some(p) = h.iter().position(|t| t.is("(")) {
            // C# generic method: the name precedes its `<T>` (`Get<T>(`)
            let name_at = type_params_start(h, p).unwrap_or(p);
            if name_at >= 1
                && h.at(name_at - 1).is_ident()
                && !CONTROL.contains(&h.at(name_at - 1).text())
            {
                let name = h.at(name_at - 1).text().to_string();
                return mk(st, &name, base + name_at - 1, owner, annotated_test);
            }
        }
    }
    Frame::Block
}

fn python_scopes(toks: Toks, src: &str, st: &mut Structure) {
    // logical lines
    let mut lines: Vec<(usize, usize)> = Vec::new();
    let mut s = 0;
    for i in 1..=toks.len() {
        // a closing bracket at the start of a line continues the statement
        // (black's `) -> bool:` after a multi-line parameter list)
        if i == toks.len()
            || (toks.at(i).nl()
                && st.tok_paren.at(i) == 0
                && !toks.at(i - 1).is("\\")
                && !is_close(toks.at(i)))
        {
            if s < i {
                lines.push((s, i));
            }
            s = i;
        }
    }
    let mut frames = Frames::default(); // (indent, frame)
    for (ls, le) in lines {
        let ind = line_indent(src, toks.at(ls).start());
        while frames.last().is_some_and(|(fi, _)| fi >= ind) {
            frames.pop();
        }
        let (sc, d) = current(&frames);
        for k in ls..le {
            st.tok_scope.set(k, sc);
            st.tok_depth.set(k, d);
        }
        let mut k = ls;
        while k < le && toks.at(k).is("@") {
            // decorator line: nothing to open
            k = le;
        }
        if k >= le {
            continue;
        }
        if toks.at(k).is("async") {
            k += 1;
        }
        let ends_colon = toks.at(le - 1).is(":");
        if k < le && toks.at(k).is("def") {
            if let Some(n) = toks.get(k + 1).filter(|n| n.is_ident()) {
                let owner = owner_of(&frames);
                let test = n.text().starts_with("test") || test_class(&owner);
                st.decls.add_name(k + 1);
                st.scopes.push(n.text(), owner.as_deref(), test);
                st.decls.add_scope(k + 1, (st.scopes.len() - 1) as u32);
                frames.push((ind, Frame::Func((st.scopes.len() - 1) as u32)));
                continue;
            }
        }
        if k < le && toks.at(k).is("class") {
            if let Some(n) = toks.get(k + 1).filter(|n| n.is_ident()) {
                frames.push((ind, Frame::Class(n.text().to_string())));
                continue;
            }
        }
        if ends_colon {
            frames.push((ind, Frame::Block));
        }
    }
}

fn ruby_scopes(toks: Toks, st: &mut Structure) {
    // (opener token index, frame, closes with `}`)
    let mut frames = Frames::default();
    let mut braces: Vec<bool> = Vec::new(); // parallel: true when opened by `{`
    let mut skip_do_line: Option<usize> = None;
    let mut line_no = 0usize;
    for i in 0..toks.len() {
        let t = toks.at(i);
        if t.nl() {
            line_no += 1;
        }
        let (s, d) = current(&frames);
        st.tok_scope.set(i, s);
        st.tok_depth.set(i, d);
        let stmt_start = i == 0
            || t.nl()
            || toks.at(i - 1).is(";")
            || toks.at(i - 1).is("=")
            || toks.at(i - 1).is("(");
        if t.kind() == Kind::Punct {
            match t.text() {
                "{" => {
                    frames.push((i, Frame::Block));
                    braces.push(true);
                }
                "}" => {
                    if braces.last() == Some(&true) {
                        braces.pop();
                        frames.pop();
                    }
                }
                _ => {}
            }
            continue;
        }
        if t.kind() != Kind::Ident {
            continue;
        }
        let prev_dot = i > 0 && (toks.at(i - 1).is(".") || toks.at(i - 1).is("&."));
        if prev_dot {
            continue;
        }
        match t.text() {
            "def" => {
                let mut k = i + 1;
                if toks.get(k + 1).is_some_and(|x| x.is(".")) {
                    k += 2;
                }
                let name = toks
                    .get(k)
                    .map(|n| n.text().to_string())
                    .unwrap_or_default();
                let owner = owner_of(&frames);
                let test = name.starts_with("test_") || test_class(&owner);
                st.decls.add_name(k);
                st.scopes.push(&name, owner.as_deref(), test);
                st.decls.add_scope(k, (st.scopes.len() - 1) as u32);
                frames.push((i, Frame::Func((st.scopes.len() - 1) as u32)));
                braces.push(false);
            }
            "class" | "module" => {
                let f = match toks.get(i + 1) {
                    Some(n) if n.is_ident() => Frame::Class(n.text().to_string()),
                    _ => Frame::Block,
                };
                frames.push((i, f));
                braces.push(false);
            }
            "do" => {
                if skip_do_line == Some(line_no) {
                    skip_do_line = None;
                    continue;
                }
                frames.push((i, Frame::Block));
                braces.push(false);
            }
            "begin" | "case" => {
                frames.push((i, Frame::Block));
                braces.push(false);
            }
            "if" | "unless" | "while" | "until" | "for" if stmt_start => {
                if matches!(t.text(), "while" | "until" | "for") {
                    skip_do_line = Some(line_no);
                }
                frames.push((i, Frame::Block));
                braces.push(false);
            }
            "end" => {
                if let Some(pos) = braces.iter().rposition(|b| !b) {
                    let o = frames.at(pos);
                    st.matching.insert(o, i);
                    st.matching.insert(i, o);
                    frames.truncate(pos);
                    braces.truncate(pos);
                }
            }
            _ => {}
        }
    }
}

/// Splits `(`…`)` contents at top-level commas.
pub fn split_args<'a>(toks: Toks<'a>, st: &Structure, open: usize, close: usize) -> Vec<Arg> {
    let mut out = Vec::new();
    split_args_into(toks, st, open, close, &mut out);
    out
}

/// [`split_args`], the arguments pushed onto `out`.
fn split_args_into<'a>(
    toks: Toks<'a>,
    st: &Structure,
    open: usize,
    close: usize,
    out: &mut Vec<Arg>,
) {
    let mut s = open + 1;
    let mut k = open + 1;
    while k < close {
        let t = toks.at(k);
        if t.kind() == Kind::Punct && matches!(t.text(), "(" | "[" | "{") {
            if let Some(m) = st.matching.get(&k) {
                if m > k && m < close {
                    k = m + 1;
                    continue;
                }
            }
        }
        if t.is(",") {
            out.push(make_arg(toks, s, k));
            s = k + 1;
        }
        k += 1;
    }
    if s < close {
        out.push(make_arg(toks, s, close));
    }
}

fn make_arg(toks: Toks, s: usize, e: usize) -> Arg {
    // `name=value`, `name: value`, `name => value` (named/keyword arguments)
    if e > s + 2 && toks.at(s).is_ident() {
        let sep = toks.at(s + 1);
        if sep.is("=") || sep.is(":") {
            return Arg::new(s + 2, e, true);
        }
    }
    if e > s + 2 && toks.at(s).kind() == Kind::Str && toks.at(s + 1).is("=>") {
        return Arg::new(s + 2, e, true);
    }
    Arg::new(s, e, false)
}

/// `( (T) x )` between `open` and `close` (C#/Java casts): `(T, x)`.
fn cast_in_parens<'a>(
    toks: Toks<'a>,
    st: &Structure,
    open: usize,
    close: usize,
) -> Option<(&'a str, &'a str)> {
    let inner = open + 1;
    if !toks.get(inner)?.is("(") {
        return None;
    }
    let m = st.matching.get(&inner)?;
    if m + 2 != close || !toks.at(m + 1).is_ident() || m <= inner + 1 {
        return None;
    }
    let ty = toks.slice(inner + 1..m);
    let ok = ty
        .iter()
        .enumerate()
        .all(|(i, t)| if i % 2 == 0 { t.is_ident() } else { t.is(".") });
    (ok && ty.len() % 2 == 1).then(|| (ty.at(ty.len() - 1).text(), toks.at(m + 1).text()))
}

/// Walks back over a receiver chain ending just before `name_tok`; its
/// segments are pushed onto `segs`, outermost first. Returns the chain's
/// first token.
fn receiver<'a>(
    toks: Toks<'a>,
    st: &Structure,
    name_tok: usize,
    segs: &mut Vec<Seg<'a>>,
    owned: &mut OwnedTexts,
) -> usize {
    let first = segs.len();
    let mut k = name_tok;
    let mut guard = 0;
    while k >= 2 && guard < 64 {
        guard += 1;
        let sep = toks.at(k - 1);
        if !(sep.is(".") || sep.is("->") || sep.is("?.") || sep.is("::") || sep.is("&.")) {
            break;
        }
        let mut j = k - 2;
        // `!!.` Kotlin, `!.` TS non-null
        while j > 0 && toks.at(j).is("!") {
            j -= 1;
        }
        let t = toks.at(j);
        if t.is_ident() || t.kind() == Kind::Str {
            segs.push(Seg::of(t.text()));
            k = j;
            continue;
        }
        if is_close(t) {
            let Some(o) = st.matching.get(&j) else { break };
            if o >= j {
                break;
            }
            if t.is(")") && o >= 1 && toks.at(o - 1).is_ident() {
                segs.push(owned.call_seg(toks, o, j));
                k = o - 1;
                continue;
            }
            // a cast `((RedisNativeClient)r).Get(k)`: the variable and its type
            if let Some((ty, var)) = cast_in_parens(toks, st, o, j) {
                segs.push(Seg::of(var));
                segs.push(Seg::of(ty));
                k = o;
                continue;
            }
            segs.push(Seg::of("?"));
            k = o;
            // an index or a parenthesised expression: continue before it
            if o >= 1 && toks.at(o - 1).is_ident() && !t.is(")") {
                k = o - 1;
                segs.push(Seg::of(toks.at(o - 1).text()));
            }
            continue;
        }
        break;
    }
    segs[first..].reverse();
    k
}

/// The receiver of a call chained on the call before it, `a.b().c()`:
/// that call's receiver segments and its `b()`, as [`receiver`] would
/// walk them (the walk from `c` goes on from `b` as `b`'s own did). The
/// segments are that call's run with one more: where its run ends the
/// table (a chain with no call in its arguments), `b()` is pushed after
/// it and the runs overlap; else its run is copied. The start of the run
/// in `segs` and the chain's first token; `None` when `name_tok` is no
/// link of a chain of calls found before (then [`receiver`] walks it).
/// (Each link walked alone, a Go mock of builder chains,
/// `m.raw.B().Lrange().Key(key).Start(start).Build()`, held a segment
/// and a `name()` text per link for every link after it: 114 kB of
/// segments for a file of 135 kB.)
fn chained_receiver<'a>(
    toks: Toks<'a>,
    st: &Structure,
    name_tok: usize,
    before: &[RawCall],
    segs: &mut Vec<Seg<'a>>,
    owned: &mut OwnedTexts,
) -> Option<(usize, usize)> {
    // the first step of `receiver`'s walk: `)` `.` before the name
    if name_tok < 2 {
        return None;
    }
    let sep = toks.at(name_tok - 1);
    if !(sep.is(".") || sep.is("->") || sep.is("?.") || sep.is("::") || sep.is("&.")) {
        return None;
    }
    let mut j = name_tok - 2;
    while j > 0 && toks.at(j).is("!") {
        j -= 1;
    }
    if !toks.at(j).is(")") {
        return None;
    }
    let o = st.matching.get(&j).filter(|&o| o < j && o >= 1)?;
    let inner = o - 1;
    if !toks.at(inner).is_ident() {
        return None;
    }
    // the call named there, opened at that `(` (not a paren-less Ruby
    // call's `name (x)`), with fewer segments than steps left to the walk
    // (it takes one a step, and stops after 64 steps)
    let at = before.partition_point(|c| ((c.name & IDX_MASK) as usize) < inner);
    let prev = before
        .get(at)
        .filter(|c| (c.name & IDX_MASK) as usize == inner)?;
    let nrecv = ((prev.recv_start >> IDX_BITS) | (prev.nargs >> IDX_BITS) << 4) as usize;
    if inner + (prev.name >> IDX_BITS) as usize != o || nrecv >= 63 {
        return None;
    }
    let run = if prev.recv + nrecv == segs.len() {
        prev.recv
    } else {
        let run = segs.len();
        segs.extend_from_within(prev.recv..prev.recv + nrecv);
        run
    };
    segs.push(owned.call_seg(toks, o, j));
    Some((run, (prev.recv_start & IDX_MASK) as usize))
}

/// The call whose name is token `name_tok`, in `calls` as [`calls`] returns
/// them (sorted by name token, one call per token): a binary search, no
/// index to build over every call of a file.
pub fn call_at<'c, 'a>(calls: &'c [Call<'a>], name_tok: usize) -> Option<&'c Call<'a>> {
    let i = calls.partition_point(|c| c.name_tok() < name_tok);
    calls.get(i).filter(|c| c.name_tok() == name_tok)
}

/// Room for the most calls and arguments [`calls`] can find in the
/// stream, reserved once (grown by doubling, a list of a large file would
/// have up to half its room spare at its peak). A call opens at a `(` right
/// after a name (or a generic's `>`), and its arguments are cut at the
/// commas directly inside that `(`: a comma of an array or object literal,
/// of a declaration list or of a grouping is no argument's (a minified
/// bundle has many, and the room once reserved for every `(` and every
/// comma was most of its peak). Paren-less Ruby calls (a name after a `.`,
/// cut at any comma of the line) keep the coarse count. The counts only
/// size the lists: a stream with more (an unbalanced bracket) grows them.
fn most_calls_and_args(toks: Toks, lang: Language) -> (usize, usize) {
    let (mut calls, mut args) = (0usize, 0usize);
    if lang == Language::Ruby {
        for t in toks {
            if t.kind() == Kind::Punct {
                match t.text() {
                    "(" | "." => calls += 1,
                    "," => args += 1,
                    _ => {}
                }
            }
        }
        return (calls, calls + args);
    }
    // per open bracket: whether it may open a call's arguments
    let mut open: Vec<bool> = Vec::new();
    let mut after_name = false;
    for t in toks {
        let name = t.kind() == Kind::Ident;
        if t.kind() == Kind::Punct {
            match t.text() {
                "(" => {
                    if after_name {
                        calls += 1;
                        args += 1;
                    }
                    open.push(after_name);
                }
                "[" | "{" => open.push(false),
                ")" | "]" | "}" => {
                    open.pop();
                }
                "," if open.last() == Some(&true) => args += 1,
                _ => {}
            }
        }
        after_name = name || t.is(">");
    }
    (calls, args)
}

/// Every call `name(args)` in the stream (and paren-less Ruby method calls);
/// their arguments and receivers go to `table`.
pub fn calls<'a, 'b>(
    toks: Toks<'a>,
    st: &Structure,
    lang: Language,
    table: &'b mut CallTable<'a>,
) -> Vec<Call<'b>> {
    let (most_calls, most_args) = most_calls_and_args(toks, lang);
    let mut out: Vec<RawCall> = Vec::with_capacity(most_calls);
    table.args.reserve(most_args);
    let args = &mut table.args;
    let recvs = &mut table.recv;
    let owned = &mut table.owned;
    for i in 0..toks.len() {
        let t = toks.at(i);
        if t.kind() != Kind::Ident {
            continue;
        }
        let next = toks.get(i + 1);
        let mut open = i + 1;
        // Generic call `foo<T>(…)`, C# `Method<T>(…)`
        if next.is_some_and(|n| n.is("<")) && lang != Language::Python {
            let mut j = i + 2;
            while j < toks.len()
                && j < i + 12
                && (toks.at(j).is_ident()
                    || toks.at(j).is(",")
                    || toks.at(j).is(".")
                    || toks.at(j).is("?"))
            {
                j += 1;
            }
            if toks.get(j).is_some_and(|x| x.is(">"))
                && toks.get(j + 1).is_some_and(|x| x.is("("))
                && !toks.at(j + 1).nl()
            {
                open = j + 1;
            }
        }
        if toks.get(open).is_some_and(|n| n.is("("))
            && !(lang == Language::Ruby && toks.at(open).nl())
        {
            let Some(close) = st.matching.get(&open) else {
                continue;
            };
            let (r0, recv_start) = match chained_receiver(toks, st, i, &out, recvs, owned) {
                Some(shared) => shared,
                None => {
                    let r0 = recvs.len();
                    (r0, receiver(toks, st, i, recvs, owned))
                }
            };
            let a0 = args.len();
            split_args_into(toks, st, open, close, args);
            out.extend(RawCall::new(
                i,
                open,
                recv_start,
                close + 1,
                (r0, recvs.len()),
                (a0, args.len()),
            ));
            continue;
        }
        // Ruby `recv.name arg, arg` (paren-less, same line)
        if lang == Language::Ruby && i >= 1 && toks.at(i - 1).is(".") {
            let Some(n) = next else { continue };
            if n.nl() {
                continue;
            }
            let starts_arg = match n.kind() {
                Kind::Str | Kind::Num | Kind::Ident => !matches!(
                    n.text(),
                    "if" | "unless" | "do" | "and" | "or" | "then" | "while" | "until" | "rescue"
                ),
                Kind::Punct => matches!(n.text(), "[" | "@" | "-"),
            };
            if !starts_arg || (n.kind() == Kind::Punct && n.text() == "-") {
                continue;
            }
            // the args run to the end of the line (continuing after a trailing comma)
            let mut k = i + 1;
            while k < toks.len() {
                let x = toks.at(k);
                if k > i + 1 && x.nl() && !toks.at(k - 1).is(",") {
                    break;
                }
                if x.is_ident()
                    && matches!(x.text(), "if" | "unless" | "do" | "rescue" | "then")
                    && k > i + 1
                {
                    break;
                }
                if x.is("{") && k > i + 1 {
                    break;
                }
                if x.kind() == Kind::Punct && matches!(x.text(), "(" | "[") {
                    if let Some(m) = st.matching.get(&k) {
                        if m > k {
                            k = m + 1;
                            continue;
                        }
                    }
                }
                if x.kind() == Kind::Punct && matches!(x.text(), ")" | "]" | "}" | ";") {
                    break;
                }
                k += 1;
            }
            let r0 = recvs.len();
            let recv_start = receiver(toks, st, i, recvs, owned);
            // split at top-level commas of [i+1, k)
            let a0 = args.len();
            let mut s = i + 1;
            let mut j = i + 1;
            while j < k {
                if toks.at(j).kind() == Kind::Punct && matches!(toks.at(j).text(), "(" | "[" | "{")
                {
                    if let Some(m) = st.matching.get(&j) {
                        if m > j && m < k {
                            j = m + 1;
                            continue;
                        }
                    }
                }
                if toks.at(j).is(",") {
                    args.push(make_arg(toks, s, j));
                    s = j + 1;
                }
                j += 1;
            }
            if s < k {
                args.push(make_arg(toks, s, k));
            }
            out.extend(RawCall::new(
                i,
                i,
                recv_start,
                k,
                (r0, recvs.len()),
                (a0, args.len()),
            ));
        }
    }
    // the room the list and the argument table were given for the most
    // they could hold, and the receiver table's (grown by doubling), given
    // back before the list becomes the calls (a large shrink is a remap)
    out.shrink_to_fit();
    table.args.shrink_to_fit();
    table.recv.shrink_to_fit();
    let table: &'b CallTable<'a> = table;
    let (recv, args) = (table.recv.as_ptr(), table.args.as_ptr());
    out.into_iter()
        .map(|c| Call {
            // SAFETY: a raw call's first indices are at most its table's
            // length (the tables only grew after they were taken)
            recv: unsafe { NonNull::new_unchecked(recv.add(c.recv) as *mut Seg<'b>) },
            args: unsafe { NonNull::new_unchecked(args.add(c.args) as *mut Arg) },
            name: c.name,
            recv_start: c.recv_start,
            end: c.end,
            nargs: c.nargs,
            _table: PhantomData,
        })
        .collect()
}

#[cfg(test)]
mod column_tests {
    use super::{Matching, ScopeColumn, TokColumn};

    /// Pairs of every distance (near, far, across blocks of 64), then
    /// reads of every token before and after compaction, and inserts after.
    #[test]
    fn compacted_matches_read_as_before() {
        let n = 200_000;
        let mut m = Matching::new(n);
        let mut pairs = Vec::new();
        // nested and sibling pairs; one far beyond `Matching::NEAR`
        let mut t = 0;
        while t + 10 < 100_000 {
            pairs.push((t, t + 9));
            pairs.push((t + 1, t + 3));
            t += 11 + t % 7;
        }
        pairs.push((100_100, 199_000));
        pairs.push((100_200, 100_263));
        for &(o, c) in &pairs {
            m.insert(o, c);
            m.insert(c, o);
        }
        let before: Vec<Option<usize>> = (0..n + 70).map(|i| m.get(&i)).collect();
        assert_eq!(before[100_100], Some(199_000));
        assert_eq!(before[100_263], Some(100_200));
        m.compact();
        assert!(!m.bits.is_empty());
        assert_eq!(m.rel.len(), 2 * pairs.len());
        let after: Vec<Option<usize>> = (0..n + 70).map(|i| m.get(&i)).collect();
        assert_eq!(before, after);
        // inserts after compaction: over an entry, a new one, past the end
        m.insert(1, 5);
        m.insert(2, 4);
        m.insert(n + 66, 7);
        assert_eq!(m.get(&1), Some(5));
        assert_eq!(m.get(&2), Some(4));
        assert_eq!(m.get(&(n + 66)), Some(7));
        for (i, &b) in before.iter().enumerate().take(n).skip(3) {
            assert_eq!(m.get(&i), b, "token {i}");
        }
        // nothing to compact
        let mut empty = Matching::new(0);
        empty.compact();
        assert_eq!(empty.get(&0), None);
    }

    /// Steps of one, jumps of more (into and out of a function), runs that
    /// stay, values past a byte, both ends of a `u32`; tokens written again
    /// and tokens skipped; read while written, once compacted, after a write
    /// behind the open block (a vector) and compacted again.
    #[test]
    fn depths_read_as_written() {
        let n = 5_000;
        let mut col = TokColumn::new(n);
        let mut want = vec![0u32; n];
        let mut v: u32 = 0;
        for k in 0..n {
            v = match k % 97 {
                0 => 0,
                13 => v + 40,
                29 => 254,
                30 => 255,
                31 => 300 + k as u32,
                32 => 255,
                33 => 254,
                40 => u32::MAX,
                41 => 0,
                42 => u32::MAX - 1,
                43 => u32::MAX,
                44 => 7,
                50..=60 => v + 1,
                61..=70 => v.saturating_sub(1),
                _ if k % 5 == 0 => v + 1,
                _ if k % 7 == 0 => v.saturating_sub(1),
                _ => v,
            };
            if k % 211 == 100 {
                continue; // never written: reads 0
            }
            col.set(k, v);
            want[k] = v;
            if k % 3 == 0 {
                // written again (a builder's second word on a token)
                col.set(k, v / 2);
                col.set(k, v);
            }
            assert_eq!(col.at(k), v, "token {k} as written");
            let back = k.saturating_sub(k % 150);
            assert_eq!(
                col.get(back),
                Some(want[back]),
                "token {back} while written"
            );
        }
        assert!(col.dense.is_empty());
        col.compact();
        assert!(col.dense.is_empty() && col.steps.blocks.len() == n.div_ceil(64));
        let read = |col: &TokColumn| (0..n).map(|k| col.at(k)).collect::<Vec<u32>>();
        assert_eq!(read(&col), want);
        assert_eq!(
            (0..n).map(|k| col.get(k).unwrap()).collect::<Vec<_>>(),
            want
        );
        assert_eq!(col.get(n), None);
        // a set behind the open block: the column as a vector, then steps
        col.set(7, 9);
        want[7] = 9;
        assert!(!col.dense.is_empty());
        assert_eq!(read(&col), want);
        col.compact();
        assert!(col.dense.is_empty());
        assert_eq!(read(&col), want);
        let mut empty = TokColumn::new(0);
        empty.compact();
        assert_eq!(empty.get(0), None);
    }

    /// Nesting thousands deep (blocks and brackets past a byte, the steps
    /// only) and a write far ahead (the blocks between read 0).
    #[test]
    fn deep_columns_read_as_written() {
        let n = 40_000;
        let mut col = TokColumn::new(n);
        let want: Vec<u32> = (0..n as u32)
            .map(|k| if k < 30_000 { k / 3 } else { 40_000 - k })
            .collect();
        for (k, &v) in want.iter().enumerate() {
            col.set(k, v);
        }
        col.compact();
        assert!(col.steps.jumps.is_empty());
        assert!((0..n).all(|k| col.at(k) == want[k]));
        let mut far = TokColumn::new(1_000);
        far.set(3, 70_000);
        far.set(900, 5);
        assert_eq!(
            (far.at(3), far.at(64), far.at(899), far.at(900)),
            (70_000, 0, 0, 5)
        );
        far.compact();
        assert_eq!(
            (far.at(3), far.at(64), far.at(899), far.at(900)),
            (70_000, 0, 0, 5)
        );
        assert_eq!(far.at(999), 0);
    }

    #[test]
    fn compacted_scopes_read_as_before() {
        let n = 10_000;
        let mut col = ScopeColumn::new(n);
        let (mut i, mut run) = (0, 0usize);
        while i < n {
            let len = [1, 3, 64, 65, 200, 7][run % 6];
            for k in i..(i + len).min(n) {
                col.set(k, (run % 5) as u32 * 20_000);
            }
            i += len;
            run += 1;
        }
        let before: Vec<u32> = col.iter().copied().collect();
        col.compact();
        assert!(matches!(col, ScopeColumn::Runs(_)));
        assert_eq!(col.len(), n);
        assert_eq!(col.iter().copied().collect::<Vec<_>>(), before);
        for (k, &s) in before.iter().enumerate() {
            assert_eq!(col[k], s);
            assert_eq!(col.get(k), Some(&s));
        }
        assert_eq!(col.get(n), None);
        // a set after the compaction still reads back
        col.set(5, 7);
        assert_eq!(col[5], 7);
        assert_eq!(col[6], before[6]);
        // a column of one scope per token stays dense; an empty one too
        let mut dense = ScopeColumn::new(100);
        (0..100).for_each(|k| dense.set(k, k as u32));
        dense.compact();
        assert!(matches!(dense, ScopeColumn::Narrow(_)));
        let mut empty = ScopeColumn::new(0);
        empty.compact();
        assert_eq!(empty.get(0), None);
    }
}

#[cfg(test)]
mod chain_tests {
    use super::{calls, receiver, structure, CallTable, OwnedTexts};
    use crate::facts::Language;
    use crate::frontend::pattern::lexer::lex;

    /// A call chained on the call before it takes that call's segments
    /// (`chained_receiver`): the same segments, and the same first token,
    /// as the receiver walked alone.
    #[test]
    fn chained_receivers_read_as_walked() {
        let cases = [
            (
                Language::Go,
                "func f() {\n\tcmd := m.raw.B().Lrange().Key(k).Start(s).Build()\n\
                 \tc.B().Set().Key(g(x).Y()).Value(h.V()).Build()\n\
                 \tr.Do(ctx, c.B().Get().Key(\"a\").Build()).ToString()\n\
                 \tx[0].F().G()\n\t((T)(a)).B().C()\n}\n",
            ),
            (
                Language::Kotlin,
                "fun f() { a!!.b()!!.c()?.d().e(f().g()).h() }\n",
            ),
            (Language::Php, "$this->r->a()->b()::c()->d();\n"),
            (
                Language::Ruby,
                "r.multi.set(k, v).expire(k, 5)\nx.a(1).b 2, 3\n",
            ),
        ];
        let (mut chained, mut borrowed) = (0, 0);
        for (lang, src) in cases {
            let lexed = lex(src, lang);
            let toks = lexed.toks();
            let st = structure(toks, src, lang);
            let mut table = CallTable::default();
            let all = calls(toks, &st, lang, &mut table);
            assert!(all.len() >= 4, "{src}");
            for c in &all {
                let (mut segs, mut owned) = (Vec::new(), OwnedTexts::default());
                let first = receiver(toks, &st, c.name_tok(), &mut segs, &mut owned);
                let walked: Vec<&str> = segs.iter().map(|s| &**s).collect();
                let got: Vec<&str> = c.recv().iter().map(|s| &**s).collect();
                assert_eq!(got, walked, "{src}: {}", c.name(toks));
                assert_eq!(c.recv_start(), first, "{src}: {}", c.name(toks));
                chained += usize::from(got.iter().filter(|s| s.ends_with("()")).count() > 1);
                // a link written `b()` is the source's text, any other
                // (`b(x)`, `b ()`) a written copy
                for s in c.recv().iter().filter(|s| s.ends_with("()")) {
                    let in_src = src.as_bytes().as_ptr_range().contains(&s.as_ptr());
                    let written = src.contains(&format!("{}.", &**s))
                        || src.contains(&format!("{}!", &**s))
                        || src.contains(&format!("{}?", &**s))
                        || src.contains(&format!("{}-", &**s))
                        || src.contains(&format!("{}:", &**s));
                    assert_eq!(in_src, written, "{src}: {}", &**s);
                    borrowed += usize::from(in_src);
                }
            }
        }
        // (chains of two or more links were read)
        assert!(chained >= 8, "{chained}");
        assert!(borrowed >= 8, "{borrowed}");
    }
}
