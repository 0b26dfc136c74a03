//! The syn walk: one [`Walker`] visits every item of the file, opens a
//! scope per fn / method / trait default method (closures belong to their
//! enclosing fn), follows method-call chains (`redis::cmd("SET").arg(..)`,
//! `con.set_nx(..)`, `pipe().atomic()…`, `Script::new(..).key(..)`), and
//! resolves keys and values through constants, `let` bindings, `format!`
//! and one-expression helper fns of the same file.

use super::scan;
use super::syntax::*;
use crate::facts::{
    AbsenceGuard, Client, FailOpen, FileFacts, KeyExpr, KeyPart, Op, OpKind, Scope, ScopeId,
    ScriptFact, ScriptId, Span, ValueExpr,
};
use crate::frontend::lua;
use crate::project::calls::PackedCalls;
use crate::words;
use quote::ToTokens;
use std::collections::HashMap;
use std::rc::Rc;
use syn::spanned::Spanned;
use syn::visit::{self, Visit};
use syn::{Expr, Lit, Pat};

/// One top-level item and where its text starts in the file.
pub struct Unit<'f> {
    pub base: usize,
    pub item: &'f syn::Item,
    /// The impl/trait/mod name when the item was cut out of a container.
    pub owner: Option<String>,
}

/// Crates whose presence is evidence that ambiguous method names
/// (`get`, `set`, `del`, …) are Redis commands.
const REDIS_CRATES: &[(&str, Client)] = &[
    ("redis", Client::RedisRs),
    ("deadpool_redis", Client::RedisRs),
    ("bb8_redis", Client::RedisRs),
    ("r2d2_redis", Client::RedisRs),
    ("mobc_redis", Client::RedisRs),
    ("redis_pool", Client::RedisRs),
    ("fred", Client::Fred),
    ("rustis", Client::Rustis),
];

/// Deepest resolution through constants, locals and helpers.
const MAX_RESOLVE: u32 = 6;

// ---------------------------------------------------------------------------
// File-level collection
// ---------------------------------------------------------------------------

struct Helper {
    params: Vec<String>,
    /// Its block: braces and all.
    body: Deferred,
}

/// An expression of another item (a constant's value, a helper's body, a
/// script field's source) by where its text stands in the file: the walk
/// parses it again when it needs it ([`Walker::deferred`]). A file read by
/// pieces holds one piece's syntax tree at a time, and every constant of
/// the file held as a tree kept them all (51 bytes a source byte on a file
/// of 600 statics).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Deferred {
    start: usize,
    end: usize,
    /// A block (`{ expr }`) whose single expression is meant.
    block: bool,
    /// It makes a `Script` ([`find_script_new`]): known without parsing it
    /// again (a method called on a constant asks).
    script: bool,
    /// Where the expression, [`strip`]ped, is a call of a path that no
    /// lookup of a key, a value or a string looks into (`Lazy::new(|| …)`,
    /// `Opts::new(..)`: not a helper of the file), the bytes of that call:
    /// all those lookups read of it ([`Walker::const_view`]). openobserve's
    /// `metrics.rs` names 166 such statics in one function; each was parsed
    /// again, and each parse stood in proc-macro2's map of spans until the
    /// piece's end (0.2 MB of its 1.36 MB peak).
    /// (`u32`s: the front-end reads files of at most 8 MiB)
    call_text: Option<(u32, u32)>,
}

impl Deferred {
    /// A constant's expression `e`, between its `=` and `;`.
    fn between(base: usize, e: &Expr, eq: &syn::token::Eq, semi: &syn::token::Semi) -> Self {
        Deferred {
            start: base + eq.spans[0].byte_range().end,
            end: base + semi.spans[0].byte_range().start,
            block: false,
            script: find_script_new(e).is_some(),
            call_text: opaque_call(base, e),
        }
    }
    fn of_expr(base: usize, e: &Expr) -> Self {
        let r = e.span().byte_range();
        Deferred {
            start: base + r.start,
            end: base + r.end,
            block: false,
            script: find_script_new(e).is_some(),
            call_text: opaque_call(base, e),
        }
    }
}

/// [`Deferred::call_text`] of a constant's expression `e`: the call it is
/// once stripped, when its path is no function of the file a lookup would
/// follow (one segment, or `Self::f`), and it makes no script.
fn opaque_call(base: usize, e: &Expr) -> Option<(u32, u32)> {
    let inner = strip(e);
    if !matches!(inner, Expr::Call(_)) || find_script_new(e).is_some() {
        return None;
    }
    let path = call_path(inner).unwrap_or_default();
    if path.len() == 1 || (path.len() == 2 && path[0] == "Self") {
        return None;
    }
    let r = inner.span().byte_range();
    let at = |o: usize| u32::try_from(base + o).ok();
    (r.end > r.start).then_some((at(r.start)?, at(r.end)?))
}

/// A constant's expression as the lookups of keys, values and strings see
/// it ([`Walker::const_view`]).
enum ConstView {
    /// Parsed again.
    Expr(Rc<Expr>),
    /// Not parsed: a call no lookup looks into, and its text.
    Call(std::ops::Range<usize>),
}

#[derive(Default)]
struct FileInfo {
    /// Constants and statics by name.
    consts: HashMap<String, Deferred>,
    /// `lazy_static! { static ref NAME: T = expr; }` items, parsed out of the macro.
    macro_consts: HashMap<String, Deferred>,
    helpers: HashMap<String, Helper>,
    /// Struct fields initialised with `Script::new(x)`: field name → `x`.
    script_fields: HashMap<String, Deferred>,
    crates: Vec<Client>,
    /// Struct fields whose type is a map, set, vector or cache (`self.local.get(..)`).
    non_redis_fields: Vec<String>,
}

impl FileInfo {
    /// What `other` (collected from the items after these) adds, as one
    /// collection of them all would hold it (a later name wins).
    fn absorb(&mut self, other: FileInfo) {
        self.consts.extend(other.consts);
        self.macro_consts.extend(other.macro_consts);
        self.helpers.extend(other.helpers);
        self.script_fields.extend(other.script_fields);
        for c in other.crates {
            if !self.crates.contains(&c) {
                self.crates.push(c);
            }
        }
        self.non_redis_fields.extend(other.non_redis_fields);
    }

    fn evidence(&self) -> bool {
        !self.crates.is_empty()
    }
    fn client(&self) -> Client {
        self.crates.first().copied().unwrap_or(Client::Unknown)
    }
}

struct Collect<'i> {
    info: &'i mut FileInfo,
    base: usize,
    /// The piece is a part of a fn's body (under that fn's header): the
    /// first fn met is that one, read only in part, so no helper...
    part_of_body: bool,
    /// ...unless its body is one block-like expression cut into parts,
    /// and this its first piece: its body's braces ([`Cut::helpers`]).
    helper: Option<std::ops::Range<usize>>,
    /// The piece is a part of a table: the whole value's text, where the
    /// first constant or static met finds its value ([`Within::Table`]).
    value: Option<std::ops::Range<usize>>,
}

impl Collect<'_> {
    /// Where a constant's value stands: between its `=` and its `;`, or,
    /// in a part of a table, the whole table's (an array: no script, no
    /// call, as [`Deferred::between`] finds of the whole).
    fn value_of(&mut self, e: &Expr, eq: &syn::token::Eq, semi: &syn::token::Semi) -> Deferred {
        match self.value.take() {
            Some(v) => Deferred {
                start: v.start,
                end: v.end,
                block: false,
                script: false,
                call_text: None,
            },
            None => Deferred::between(self.base, e, eq, semi),
        }
    }
}

fn note_crate(info: &mut FileInfo, name: &str) {
    if let Some((_, c)) = REDIS_CRATES.iter().find(|(n, _)| *n == name) {
        if !info.crates.contains(c) {
            info.crates.push(*c);
        }
    }
}

fn single_expr_body(block: &syn::Block) -> Option<&Expr> {
    match block.stmts.as_slice() {
        [syn::Stmt::Expr(e, None)] => match e {
            Expr::Return(r) => r.expr.as_deref(),
            _ => Some(e),
        },
        [syn::Stmt::Expr(Expr::Return(r), Some(_))] => r.expr.as_deref(),
        _ => None,
    }
}

fn helper_of(sig: &syn::Signature, block: &syn::Block, base: usize) -> Option<Helper> {
    single_expr_body(block)?;
    let braces = block.brace_token.span;
    Some(helper_at(
        sig,
        base + braces.open().byte_range().start..base + braces.close().byte_range().end,
    ))
}

/// A helper of signature `sig` whose body's braces stand at `body`.
fn helper_at(sig: &syn::Signature, body: std::ops::Range<usize>) -> Helper {
    let mut params = Vec::new();
    for input in &sig.inputs {
        match input {
            syn::FnArg::Receiver(_) => {}
            syn::FnArg::Typed(t) => params.push(pat_name(&t.pat).unwrap_or_default()),
        }
    }
    Helper {
        params,
        body: Deferred {
            start: body.start,
            end: body.end,
            block: true,
            script: false,
            call_text: None,
        },
    }
}

impl<'f> Visit<'f> for Collect<'_> {
    fn visit_item_const(&mut self, i: &'f syn::ItemConst) {
        let at = self.value_of(&i.expr, &i.eq_token, &i.semi_token);
        self.info.consts.insert(i.ident.to_string(), at);
        visit::visit_item_const(self, i);
    }
    fn visit_item_static(&mut self, i: &'f syn::ItemStatic) {
        let at = self.value_of(&i.expr, &i.eq_token, &i.semi_token);
        self.info.consts.insert(i.ident.to_string(), at);
        visit::visit_item_static(self, i);
    }
    fn visit_impl_item_const(&mut self, i: &'f syn::ImplItemConst) {
        let at = self.value_of(&i.expr, &i.eq_token, &i.semi_token);
        self.info.consts.insert(i.ident.to_string(), at);
        visit::visit_impl_item_const(self, i);
    }
    fn visit_item_fn(&mut self, i: &'f syn::ItemFn) {
        if !std::mem::take(&mut self.part_of_body) {
            if let Some(h) = helper_of(&i.sig, &i.block, self.base) {
                self.info.helpers.insert(i.sig.ident.to_string(), h);
            }
        } else if let Some(body) = self.helper.take() {
            let h = helper_at(&i.sig, body);
            self.info.helpers.insert(i.sig.ident.to_string(), h);
        }
        visit::visit_item_fn(self, i);
    }
    fn visit_impl_item_fn(&mut self, i: &'f syn::ImplItemFn) {
        if !std::mem::take(&mut self.part_of_body) {
            if let Some(h) = helper_of(&i.sig, &i.block, self.base) {
                self.info.helpers.insert(i.sig.ident.to_string(), h);
            }
        } else if let Some(body) = self.helper.take() {
            let h = helper_at(&i.sig, body);
            self.info.helpers.insert(i.sig.ident.to_string(), h);
        }
        visit::visit_impl_item_fn(self, i);
    }
    fn visit_field_value(&mut self, i: &'f syn::FieldValue) {
        if let syn::Member::Named(name) = &i.member {
            if let Some(arg) = find_script_new(&i.expr) {
                self.info
                    .script_fields
                    .insert(name.to_string(), Deferred::of_expr(self.base, arg));
            }
        }
        visit::visit_field_value(self, i);
    }
    fn visit_field(&mut self, f: &'f syn::Field) {
        if let Some(name) = &f.ident {
            let ty = f.ty.to_token_stream().to_string();
            if NON_REDIS_TYPES.iter().any(|w| ty.contains(w)) {
                self.info.non_redis_fields.push(name.to_string());
            }
        }
        visit::visit_field(self, f);
    }
    fn visit_use_tree(&mut self, i: &'f syn::UseTree) {
        match i {
            syn::UseTree::Path(p) => note_crate(self.info, &p.ident.to_string()),
            syn::UseTree::Name(n) => note_crate(self.info, &n.ident.to_string()),
            syn::UseTree::Rename(r) => note_crate(self.info, &r.ident.to_string()),
            _ => {}
        }
        // Only the root of a use tree names a crate.
    }
    fn visit_item_macro(&mut self, i: &'f syn::ItemMacro) {
        if macro_name(&i.mac) == "lazy_static" {
            for (name, e) in lazy_statics(&i.mac.tokens) {
                let at = Deferred::of_expr(self.base, &e);
                self.info.macro_consts.insert(name, at);
            }
        }
        visit::visit_item_macro(self, i);
    }
    fn visit_item_extern_crate(&mut self, i: &'f syn::ItemExternCrate) {
        note_crate(self.info, &i.ident.to_string());
    }
    fn visit_path(&mut self, p: &'f syn::Path) {
        if p.segments.len() > 1 {
            if let Some(first) = p.segments.first() {
                note_crate(self.info, &first.ident.to_string());
            }
        }
        visit::visit_path(self, p);
    }
}

// ---------------------------------------------------------------------------
// The walker
// ---------------------------------------------------------------------------

/// What is known about a `let` binding.
#[derive(Clone, Debug)]
struct Local {
    name: String,
    key: KeyExpr,
    value: ValueExpr,
    /// Its value when it is a string or number constant.
    str_val: Option<String>,
    /// Option words of the initialiser (for let-bound `SetOptions`).
    words: Vec<String>,
    script: Option<ScriptId>,
    /// A pipeline made atomic, a MULTI transaction.
    atomic: bool,
    /// Bound to the result of an acquire of this key.
    acquire: Option<KeyExpr>,
    /// A map, set, vector or cache: not a Redis connection.
    non_redis: bool,
    /// The keys of a list of keys (`let keys = [a, b]`).
    keys: Vec<KeyExpr>,
    /// A raw command built over several statements (`let mut c = cmd("SET"); c.arg(k);`).
    raw: Option<RawLocal>,
}

#[derive(Clone, Debug)]
struct RawLocal {
    name: Option<String>,
    name_span: Span,
    args: Vec<Expr>,
    start: usize,
}

/// Client traits whose methods may be called with the fully qualified syntax.
const COMMAND_TRAITS: &[&str] = &[
    "Commands",
    "AsyncCommands",
    "TypedCommands",
    "AsyncTypedCommands",
    "KeysInterface",
    "StringCommands",
    "GenericCommands",
];

/// Methods that send a command built with `cmd(..)`.
const TERMINALS: &[&str] = &[
    "query",
    "query_async",
    "exec",
    "exec_async",
    "execute",
    "query_async_raw",
];

struct Txn {
    watched: Vec<KeyExpr>,
}

/// One operation found, before it is placed.
struct Found {
    kind: OpKind,
    key: KeyExpr,
    value: Option<ValueExpr>,
    client: Option<Client>,
    script: bool,
}

impl Found {
    fn new(kind: OpKind, key: KeyExpr) -> Self {
        Found {
            kind,
            key,
            value: None,
            client: None,
            script: false,
        }
    }
    fn value(mut self, v: ValueExpr) -> Self {
        self.value = Some(v);
        self
    }
    fn client(mut self, c: Client) -> Self {
        self.client = Some(c);
        self
    }
}

struct Walker<'f, 'o> {
    src: &'f str,
    info: &'f FileInfo,
    facts: &'o mut FileFacts,
    /// The byte offset the spans of the unit being read count from (a
    /// cell: an expression of another unit, a constant's or a helper's, is
    /// read at its own, [`Walker::at_base`]).
    base: std::cell::Cell<usize>,
    /// The rest of its state, carried from one top-level item to the next.
    s: WalkState,
    /// The piece walked is a part of a fn's body: the first fn entered is
    /// that one, and this says whether the part is its first and its last.
    part_of_body: Option<(bool, bool)>,
    /// The piece walked is a part of a large macro item's body: the first
    /// macro item met is that one, read as a large body is
    /// ([`syntax::for_each_macro_expr`]).
    part_of_macro: bool,
    /// The block-like statements of a fn's body the piece walked is a part
    /// of, outermost first ([`add_block`]).
    split: Vec<SplitAt>,
    /// How many of `split` the walk is inside.
    split_next: usize,
    /// The piece walked is a part of a builder chain cut between its
    /// calls: where the chain's head starts, whether this is its first
    /// part, and where the piece's own text starts (the head before it is
    /// a header's copy). The chain walked there is read as the whole
    /// statement's (its span from the head, no receiver for a call after
    /// the first).
    cut_chain: Option<(usize, bool, usize)>,
}

/// A block-like statement a piece is a part of: where it starts in the
/// piece's text (the span its expression has there), and whether the
/// piece holds its first part and its last.
struct SplitAt {
    at: usize,
    first: bool,
    last: bool,
}

/// What the walk of a block-like statement cut into parts holds from its
/// first part to its last ([`WalkState::open_blocks`]): for a body, how
/// many locals stood before it and the exits found so far; for a `match`,
/// the acquire its arms test; for an `if`, what its condition tests,
/// where its branch's ops start and whether the branch exits.
#[derive(Default)]
struct OpenBlock {
    locals: usize,
    exits: Vec<(usize, usize)>,
    acquired: Option<KeyExpr>,
    helper: Option<usize>,
    test: Option<(usize, bool)>,
    then_from: usize,
    branch_exits: bool,
    /// For a `let` whose value is the statement: where its ops start, the
    /// words of its parts so far and whether their text names a type of
    /// no Redis value ([`Walker::bind`] reads both off a whole value).
    let_from: usize,
    let_words: Vec<String>,
    let_non_redis: bool,
}

mod link;

/// Walks the parsed `units` into `facts`; their call sites come back
/// packed ([`Sites`]).
pub fn run(src: &str, units: &[Unit], facts: &mut FileFacts) -> Option<PackedCalls> {
    let mut info = FileInfo::default();
    {
        let mut c = Collect {
            info: &mut info,
            base: 0,
            part_of_body: false,
            helper: None,
            value: None,
        };
        for u in units {
            c.base = u.base;
            c.visit_item(u.item);
        }
    }
    let mut w = Walker::new(src, &info, facts, WalkState::default());
    for u in units {
        w.base.set(u.base);
        w.s.owner = u.owner.clone();
        w.visit_item(u.item);
    }
    let sites = std::mem::take(&mut w.s.sites);
    finish(w.facts, sites)
}

/// One piece of [`run_by_pieces`]: a range of the source parsed alone, or
/// a run of the items of a large module, statements of a large fn or
/// parts of a large macro item parsed inside the item's header
/// (`#[cfg(test)] mod tests {`, from the item's start to its `{`; the
/// headers of the items around it first, for a module in a module), at
/// the offsets they have in the source.
#[derive(Clone)]
struct Piece {
    range: std::ops::Range<usize>,
    headers: Vec<Header>,
    part: Part,
    /// What cut statement or item the piece is a part of, if any.
    within: Within,
}

/// The statement or item cut into parts a [`Piece`] is one of, where it
/// matters to its walk (offsets as `u32`: a file's pieces are held for
/// the whole walk, two lists of them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Within {
    #[default]
    Plain,
    /// A builder chain cut between its calls ([`add_chain`]): where its
    /// head starts, and whether the part is the first.
    Chain { head: u32, first: bool },
    /// A table cut between its elements ([`add_array`]): the whole
    /// value's text, what the collect pass keeps for its name.
    Table { start: u32, end: u32 },
}

impl Within {
    /// The value's text of a table's part.
    fn value(self) -> Option<std::ops::Range<usize>> {
        match self {
            Within::Table { start, end } => Some(start as usize..end as usize),
            _ => None,
        }
    }
}

/// The pieces of [`run_by_pieces`] before any is joined, and the helpers
/// among the fns cut into parts: a fn whose one statement is a block-like
/// expression cut into parts ([`fn_body`]) is a helper, as when read
/// whole ([`helper_of`]); the index of its first piece and where its
/// body's braces stand.
#[derive(Default)]
struct Cut {
    pieces: Vec<Piece>,
    helpers: Vec<(usize, std::ops::Range<usize>)>,
}

impl Cut {
    /// The helper whose fn the piece at `k` opens.
    fn helper_at(&self, k: usize) -> Option<std::ops::Range<usize>> {
        self.helpers
            .iter()
            .find(|(i, _)| *i == k)
            .map(|(_, r)| r.clone())
    }
}

/// A header a [`Piece`] is parsed inside: an item's (a module's, an
/// `impl`'s, a fn's, a macro's) text up to its body, or a block-like
/// statement's of a fn's body (`for … {`, `match … {`) cut into parts
/// ([`add_statements`]).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Header {
    /// Where its text starts: where the item or statement starts, what
    /// tells one header from another.
    start: usize,
    /// Where its text ends, past the `{` that opens the body (a header
    /// whose body's first piece opens with a block cut into parts reaches
    /// to that block's start, so the headers of that piece stand at their
    /// own offsets).
    end: usize,
    /// A block-like statement, not an item.
    block: bool,
    /// A statement with a `;` after its block.
    semi: bool,
    /// An `if` whose last piece holds its own `}`, its `else`s and its
    /// `;` (at their offsets), or a builder chain whose last piece holds
    /// its `;`: where the statement ends; 0 for any other.
    tail: usize,
    /// A builder chain cut between its calls ([`add_chain`]): closed by
    /// a `;`, and the walker reads each of its pieces as a statement.
    chain: bool,
    /// A table cut between its elements ([`add_array`]): closed by `];`.
    array: bool,
}

impl Header {
    fn item(r: std::ops::Range<usize>) -> Header {
        Header {
            start: r.start,
            end: r.end,
            block: false,
            semi: false,
            tail: 0,
            chain: false,
            array: false,
        }
    }

    fn len(&self) -> usize {
        self.end - self.start
    }

    /// What closes it after the piece.
    fn close(&self) -> &'static str {
        if self.array {
            "];"
        } else if self.chain {
            ";"
        } else if self.semi {
            "};"
        } else {
            "}"
        }
    }
}

/// `a` and `b` stand inside the same first `n` headers.
fn share_headers(a: &[Header], b: &[Header], n: usize) -> bool {
    a.len() >= n && b.len() >= n && a[..n].iter().zip(&b[..n]).all(|(x, y)| x.start == y.start)
}

/// What a [`Piece`] holds.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    /// Whole items.
    Items,
    /// Statements of a large fn's body, the last header that fn's
    /// ([`fn_statements`]).
    FnBody,
    /// A part of a large macro item's body, the last header the macro's
    /// ([`macro_parts`]).
    MacroBody,
}

/// The items inside a module or `impl` item at `r` of more than
/// `piece_bytes` (a test module of 70 kB held a 3 MB syntax tree
/// alone, an `impl` of a 108 kB file 6 MB): where its header ends (after
/// its `{` and the inner attributes that open its body) and its items.
/// `None` for any other item, or one whose body holds more than its items.
fn module_items(
    src: &str,
    r: &std::ops::Range<usize>,
    piece_bytes: usize,
) -> Option<(usize, Vec<std::ops::Range<usize>>)> {
    if r.end - r.start <= piece_bytes {
        return None;
    }
    let piece = src.get(r.clone())?;
    let (_, body) = scan::container_body(piece)?;
    // `mod name {` right before the body, nothing else; or an `impl`
    let header = piece.get(..body.start - 1)?;
    let mut words = header.split_whitespace().rev();
    let name = words.next()?;
    let module =
        words.next() == Some("mod") && name.chars().all(|c| c.is_alphanumeric() || c == '_');
    if !module && !is_impl_header(header) {
        return None;
    }
    // inner attributes go with the header, to stand in every piece
    let mut body = body;
    body.start += scan::inner_attributes_len(piece.get(body.clone())?);
    let inner = scan::top_level_items_in(piece, body.clone());
    let last = inner.last().map_or(body.start, |i| i.end);
    if !piece.get(last..body.end)?.trim().is_empty()
        || inner.first().is_some_and(|i| i.start != body.start)
    {
        return None;
    }
    let at = r.start;
    Some((
        at + body.start,
        inner
            .into_iter()
            .map(|i| at + i.start..at + i.end)
            .collect(),
    ))
}

/// The parts of a macro item at `r` of more than `piece_bytes`, its body
/// larger than [`WHOLE_MACRO_BYTES`], invoked with braces and no name
/// (redis-rs's `implement_commands! { … }`, 150 kB of methods, was one
/// token stream of 3 MB): where its header ends (after its `{`) and its
/// body cut after each `,`, `;` and `=>` at its own level, where the
/// walker cuts a large macro body into expressions
/// ([`syntax::for_each_macro_expr`]). `None` for any other item, and for
/// `macro_rules!` and `lazy_static!` (read as a whole).
fn macro_parts(
    src: &str,
    r: &std::ops::Range<usize>,
    piece_bytes: usize,
) -> Option<(usize, Vec<std::ops::Range<usize>>)> {
    let (piece, open, close) = braced_item(src, r, piece_bytes)?;
    let head = past_attributes(piece.get(..open)?)?.trim_end();
    let path = head.strip_suffix('!')?.trim_end();
    let name = path.rsplit("::").next()?.trim();
    if path.is_empty()
        || !path
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == ':' || c.is_whitespace())
        || matches!(name, "macro_rules" | "lazy_static")
    {
        return None;
    }
    // (a smaller body is parsed as one list first: its parts would not be)
    if close + 1 - open <= WHOLE_MACRO_BYTES {
        return None;
    }
    let body = open + 1..close;
    let ends = scan::separators_at_level(piece, body.clone());
    cut_body(piece, r.start, body, ends, |_| false)
}

/// An item's text before its body opens as an `impl` (`impl<T> Store for
/// Cache<T>`, `unsafe impl …`), past its attributes and comments.
fn is_impl_header(header: &str) -> bool {
    let Some(rest) = past_attributes(header) else {
        return false;
    };
    let rest = rest.strip_prefix("unsafe").map_or(rest, str::trim_start);
    rest.strip_prefix("impl")
        .is_some_and(|r| r.starts_with(|c: char| c == '<' || c.is_whitespace()))
}

/// An item's text before its body opens as a fn's (`pub(crate) async fn
/// name(…) -> T where …`), past its attributes and comments.
fn is_fn_header(header: &str) -> bool {
    let Some(mut rest) = past_attributes(header) else {
        return false;
    };
    if let Some(r) = rest.strip_prefix("pub") {
        rest = r.trim_start();
        if rest.starts_with('(') {
            rest = rest.find(')').map_or("", |e| rest[e + 1..].trim_start());
        }
    }
    loop {
        let word = rest
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .next()
            .unwrap_or("");
        match word {
            "default" | "const" | "async" | "unsafe" | "extern" => {
                rest = rest[word.len()..].trim_start();
                if rest.starts_with('"') {
                    // the ABI of `extern "C"`
                    rest = rest[1..]
                        .find('"')
                        .map_or("", |e| rest[e + 2..].trim_start());
                }
            }
            "fn" => {
                return rest[2..].starts_with(char::is_whitespace);
            }
            _ => return false,
        }
    }
}

/// `header` past its leading attributes and comments; `None` when one of
/// them does not close.
fn past_attributes(header: &str) -> Option<&str> {
    let mut rest = header;
    loop {
        rest = rest.trim_start();
        if rest.starts_with("//") {
            rest = rest.find('\n').map_or("", |n| &rest[n..]);
        } else if rest.starts_with("/*") {
            match rest.find("*/") {
                Some(e) => rest = &rest[e + 2..],
                None => return None,
            }
        } else if rest.starts_with("#[") {
            // to the bracket that closes the attribute, past its strings
            // (`#[cfg(feature = "x")]`, `#[doc = "a ] b"]`)
            rest = &rest[scan::closing(rest, 1)? + 1..];
        } else {
            break;
        }
    }
    Some(rest)
}

/// Adds the item at `r` to the pieces `cut`, inside the modules whose
/// `headers` stand around it: to the last piece when that one is of the
/// same modules, ends where it starts and is smaller than `piece_bytes`;
/// a large module's items one by one inside its header
/// ([`module_items`]).
fn cut_into(
    src: &str,
    r: &std::ops::Range<usize>,
    piece_bytes: usize,
    headers: &mut Vec<Header>,
    cut: &mut Cut,
) {
    // (each level scans its item again: 400 nested modules around 2.3 MB
    // took 3.7 s split all the way down, 2.7 s split 32 deep, 2.2 s
    // parsed whole)
    let split = if headers.len() < MAX_SPLIT_DEPTH {
        module_items(src, r, piece_bytes)
    } else {
        None
    };
    if let Some((open, inner)) = split {
        headers.push(Header::item(r.start..open));
        for i in &inner {
            cut_into(src, i, piece_bytes, headers, cut);
        }
        headers.pop();
        return;
    }
    if let Some((open, parts, helper)) = fn_body(src, r, piece_bytes) {
        headers.push(Header::item(r.start..open));
        let first = cut.pieces.len();
        // (the last part, after a raw command's `let`, is not cut inside)
        let whole_from = raw_let_at(src, &parts);
        for (k, s) in parts.iter().enumerate() {
            if k < whole_from {
                add_statements(src, s.clone(), piece_bytes, headers, cut);
            } else {
                add_to_pieces(s, headers, Part::FnBody, piece_bytes, cut);
            }
        }
        headers.pop();
        if let Some(h) = helper.filter(|_| cut.pieces.len() > first) {
            cut.helpers.push((first, h));
        }
        return;
    }
    if let Some((open, parts)) = macro_parts(src, r, piece_bytes) {
        headers.push(Header::item(r.start..open));
        for s in &parts {
            add_to_pieces(s, headers, Part::MacroBody, piece_bytes, cut);
        }
        headers.pop();
        return;
    }
    if r.len() > piece_bytes {
        if let Some(a) = scan::const_array(src, r.clone()) {
            return add_array(r, &a, piece_bytes, headers, cut);
        }
    }
    add_to_pieces(r, headers, Part::Items, piece_bytes, cut);
}

/// A `const` or `static` table at `r` (`scan::const_array`) cut between
/// its elements: runs of them in pieces of their own under a header of
/// the item's text up to its `[`, closed by `];` (the last piece holds
/// the item's own). Each piece is the item with some of its elements,
/// walked as such; the collect pass keeps the whole value for its name
/// (`Within::Table`).
fn add_array(
    r: &std::ops::Range<usize>,
    a: &scan::ArrayItem,
    piece_bytes: usize,
    headers: &mut Vec<Header>,
    cut: &mut Cut,
) {
    headers.push(Header {
        start: r.start,
        end: a.open,
        block: false,
        semi: false,
        tail: r.end,
        chain: false,
        array: true,
    });
    let mut from = a.open;
    for &end in a.commas.iter().chain(std::iter::once(&r.end)) {
        let before = cut.pieces.len();
        add_to_pieces(&(from..end), headers, Part::Items, piece_bytes, cut);
        if cut.pieces.len() > before {
            if let Some(p) = cut.pieces.last_mut() {
                p.within = Within::Table {
                    start: crate::facts::offset32(a.value.start),
                    end: crate::facts::offset32(a.value.end),
                };
            }
        }
        from = end;
    }
    headers.pop();
}

/// The index of the first of `parts` (statements of a body, in order)
/// that follows a raw command's `let` ([`is_raw_let`]): that one and those
/// after it are not cut inside (`parts.len()` when there is none).
fn raw_let_at(src: &str, parts: &[std::ops::Range<usize>]) -> usize {
    parts
        .iter()
        .position(|p| src.get(p.clone()).is_some_and(is_raw_let))
        .map_or(parts.len(), |k| k + 1)
}

/// A `let` of a raw command (`let mut c = cmd("SET");`): the walker keeps
/// that command's argument expressions on the local until it is sent, and
/// they are trees of the piece they were read in, so the body is not cut
/// after it.
fn is_raw_let(stmt: &str) -> bool {
    let stmt = stmt.trim_start();
    stmt.starts_with("let") && (stmt.contains("cmd") || stmt.contains("Cmd"))
}

/// The statements of a large fn's body ([`fn_statements`]), or, for a
/// body of one statement that is a block-like expression (a `match` of
/// 600 arms, a `for` loop of 20 kB: `scan::block_statement`), that one
/// statement, to be cut inside by [`add_statements`]; with it, the body's
/// braces when the fn is a helper (the statement is the body's value).
#[allow(clippy::type_complexity)]
fn fn_body(
    src: &str,
    r: &std::ops::Range<usize>,
    piece_bytes: usize,
) -> Option<(
    usize,
    Vec<std::ops::Range<usize>>,
    Option<std::ops::Range<usize>>,
)> {
    if let Some((open, parts)) = fn_statements(src, r, piece_bytes) {
        return Some((open, parts, None));
    }
    let (piece, open, close) = braced_item(src, r, piece_bytes)?;
    if !is_fn_header(piece.get(..open)?) {
        return None;
    }
    let start = open + 1 + scan::inner_attributes_len(piece.get(open + 1..close)?);
    let b = scan::block_statement(piece, scan::skip_blank(piece, start), close)?;
    if b.kind == scan::BlockKind::If || scan::skip_blank(piece, b.end) < close {
        return None;
    }
    let helper = (!b.semi).then(|| r.start + open..r.start + close + 1);
    Some((
        r.start + start,
        std::iter::once(r.start + start..r.start + close).collect(),
        helper,
    ))
}

/// Adds the statements at `part` of a fn's body (or of a block cut into
/// parts) to the pieces: whole when they fit in a piece, else one by one,
/// where a block-like statement larger than a piece (`for`, `while`,
/// `loop`, `unsafe`, a bare block, `match`; not `if`) is cut inside
/// ([`add_block`]). What follows the block-like statements it opens with
/// is one part.
fn add_statements(
    src: &str,
    part: std::ops::Range<usize>,
    piece_bytes: usize,
    headers: &mut Vec<Header>,
    cut: &mut Cut,
) {
    if part.len() <= piece_bytes || headers.len() >= MAX_SPLIT_DEPTH {
        add_to_pieces(&part, headers, Part::FnBody, piece_bytes, cut);
        return;
    }
    let mut from = part.start;
    while from < part.end {
        let at = scan::skip_blank(src, from);
        let stmt = if at < part.end {
            scan::block_statement(src, at, part.end)
        } else {
            None
        };
        let Some(b) = stmt else {
            // (a builder chain is the part's last statement)
            match scan::chain_statement(src, at, part.end) {
                Some(c) if c.end - at > piece_bytes => add_chain(at, &c, piece_bytes, headers, cut),
                _ => add_to_pieces(&(from..part.end), headers, Part::FnBody, piece_bytes, cut),
            }
            return;
        };
        // (blanks after the last statement go with it)
        let end = if scan::skip_blank(src, b.end) >= part.end {
            part.end
        } else {
            b.end
        };
        if b.close - b.open > piece_bytes && cuttable(src, at, &b) {
            add_block(src, at, b, piece_bytes, headers, cut);
        } else {
            add_to_pieces(&(from..end), headers, Part::FnBody, piece_bytes, cut);
        }
        from = end;
    }
}

/// A builder chain statement at `at` (`scan::chain_statement`) cut
/// between its calls: consecutive calls in pieces of their own under a
/// header of the statement's text before its first call (`router =
/// router`, `let app = Router::new()`), closed by `;`; the last piece
/// holds the statement's own. The walker reads each piece as a statement
/// on the same head, whose calls are those of that piece.
fn add_chain(
    at: usize,
    c: &scan::ChainStmt,
    piece_bytes: usize,
    headers: &mut Vec<Header>,
    cut: &mut Cut,
) {
    let Some(&first) = c.links.first() else {
        return;
    };
    // (as `add_block`: the header around it reaches to it when it opens
    // that header's body, so the first piece's headers are one text)
    let opens_outer = !cut
        .pieces
        .last()
        .is_some_and(|p| share_headers(&p.headers, headers, headers.len()));
    let outer_end = headers.last().map(|h| h.end);
    if opens_outer {
        if let Some(h) = headers.last_mut() {
            h.end = at;
        }
    }
    headers.push(Header {
        start: at,
        end: first,
        block: true,
        semi: false,
        tail: c.end,
        chain: true,
        array: false,
    });
    for (k, &l) in c.links.iter().enumerate() {
        let end = c.links.get(k + 1).copied().unwrap_or(c.end);
        let before = cut.pieces.len();
        add_to_pieces(&(l..end), headers, Part::FnBody, piece_bytes, cut);
        if cut.pieces.len() > before {
            if let Some(p) = cut.pieces.last_mut() {
                p.within = Within::Chain {
                    head: crate::facts::offset32(c.head),
                    first: k == 0,
                };
            }
        }
    }
    headers.pop();
    if let (Some(h), Some(end)) = (headers.last_mut(), outer_end) {
        h.end = end;
    }
}

/// Whether the block-like statement `b` at `at` may be cut inside: any
/// but an `if` whose condition tests an `Err` (the walker reads whether
/// such a branch fails open over the whole branch).
fn cuttable(src: &str, at: usize, b: &scan::BlockStmt) -> bool {
    b.kind != scan::BlockKind::If || src.get(at..b.open).is_some_and(|h| !h.contains("Err"))
}

/// A block-like statement at `at` cut inside: its statements (or a
/// `match`'s arms, or an `if`'s first branch) in pieces of their own
/// under its header (from `at` to past its `{`). The walker enters it at
/// its first piece and leaves it at its last ([`WalkState::open_blocks`]).
/// An `if`'s last piece holds the rest of the statement as the source
/// has it: the branch's `}`, the `else`s (not cut) and a `;`.
fn add_block(
    src: &str,
    at: usize,
    b: scan::BlockStmt,
    piece_bytes: usize,
    headers: &mut Vec<Header>,
    cut: &mut Cut,
) {
    let mut body = b.open..b.close;
    if b.kind == scan::BlockKind::Body {
        body.start += src.get(body.clone()).map_or(0, scan::inner_attributes_len);
    }
    // the header around it, when no piece of its body was made yet (this
    // statement opens it), reaches to it: the first piece's headers are
    // then one text, at their own offsets
    let opens_outer = !cut
        .pieces
        .last()
        .is_some_and(|p| share_headers(&p.headers, headers, headers.len()));
    let outer_end = headers.last().map(|h| h.end);
    if opens_outer {
        if let Some(h) = headers.last_mut() {
            h.end = at;
        }
    }
    let is_if = b.kind == scan::BlockKind::If;
    headers.push(Header {
        start: at,
        end: body.start,
        block: true,
        semi: b.semi,
        tail: if is_if { b.end } else { 0 },
        chain: false,
        array: false,
    });
    let ends = match b.kind {
        scan::BlockKind::Match => scan::arm_ends(src, body.clone()),
        _ => scan::semicolons_at_level(src, body.clone()),
    };
    let mut parts: Vec<std::ops::Range<usize>> = Vec::new();
    let mut start = body.start;
    for end in ends {
        parts.push(start..end);
        start = end;
    }
    if parts.is_empty()
        || !src
            .get(start..body.end)
            .is_some_and(|t| t.trim().is_empty())
    {
        parts.push(start..body.end);
    } else if let Some(last) = parts.last_mut() {
        last.end = body.end;
    }
    if is_if {
        if let Some(last) = parts.last_mut() {
            last.end = b.end;
        }
    }
    if b.kind == scan::BlockKind::Match {
        for p in &parts {
            add_to_pieces(p, headers, Part::FnBody, piece_bytes, cut);
        }
    } else {
        // (the parts after a raw command's `let` are one, not cut inside;
        // an `if`'s last, which holds its `else`s, only where the
        // block-like statements it opens with end)
        let raw = raw_let_at(src, &parts);
        let if_tail = is_if && raw == parts.len();
        let whole_from = raw.min(parts.len() - usize::from(is_if));
        if let Some(rest) = parts.get(whole_from..).filter(|r| !r.is_empty()) {
            let rest = rest[0].start..rest[rest.len() - 1].end;
            parts.truncate(whole_from);
            parts.push(rest);
        }
        for (k, p) in parts.into_iter().enumerate() {
            if k < whole_from || (if_tail && k == whole_from) {
                add_statements(src, p, piece_bytes, headers, cut);
            } else {
                add_to_pieces(&p, headers, Part::FnBody, piece_bytes, cut);
            }
        }
    }
    headers.pop();
    if let (Some(h), Some(end)) = (headers.last_mut(), outer_end) {
        h.end = end;
    }
}

/// `r` to the last piece when that one is of the same `headers`, ends
/// where `r` starts and stays within `piece_bytes` with it; else a new
/// piece (a piece of 8 kB joined by an item of 15 kB held the syntax tree
/// of both).
fn add_to_pieces(
    r: &std::ops::Range<usize>,
    headers: &[Header],
    part: Part,
    piece_bytes: usize,
    cut: &mut Cut,
) {
    match cut.pieces.last_mut() {
        Some(last)
            if last.headers == headers
                && last.range.end == r.start
                && r.end - last.range.start <= piece_bytes =>
        {
            last.range.end = r.end;
        }
        _ => cut.pieces.push(Piece {
            range: r.clone(),
            headers: headers.to_vec(),
            part,
            within: Within::Plain,
        }),
    }
}

/// The statements of a fn item at `r` of more than `piece_bytes` (a
/// function of 44 kB held a syntax tree of 2.6 MB): where its header ends
/// (after the `{` of its body and its inner attributes) and the body cut
/// after each `;` at its own level, the last range to the body's `}`.
/// `None` for any other item, or a body of one statement. The body is
/// not cut after a `let` of a raw command (`let mut c = cmd("SET");`):
/// the walker keeps that command's argument expressions on the local
/// until it is sent, and they are trees of the piece they were read in.
fn fn_statements(
    src: &str,
    r: &std::ops::Range<usize>,
    piece_bytes: usize,
) -> Option<(usize, Vec<std::ops::Range<usize>>)> {
    let (piece, open, close) = braced_item(src, r, piece_bytes)?;
    if !is_fn_header(piece.get(..open)?) {
        return None;
    }
    let mut body = open + 1..close;
    // inner attributes go with the header, to stand in every part
    body.start += scan::inner_attributes_len(piece.get(body.clone())?);
    let ends = scan::semicolons_at_level(piece, body.clone());
    cut_body(piece, r.start, body, ends, is_raw_let)
}

/// The text of an item at `r` of more than `piece_bytes` that ends with
/// the `}` of a body opened by its first `{`, and where those two stand.
fn braced_item<'s>(
    src: &'s str,
    r: &std::ops::Range<usize>,
    piece_bytes: usize,
) -> Option<(&'s str, usize, usize)> {
    if r.end - r.start <= piece_bytes {
        return None;
    }
    let piece = src.get(r.clone())?;
    let open = scan::first_code_byte(piece, b'{')?;
    let kept = piece.trim_end();
    (kept.ends_with('}') && kept.len() > open + 1).then(|| (piece, open, kept.len() - 1))
}

/// The `body` of an item (`piece`, at `at` in the source) cut at each of
/// `ends` until a part `last` says is the last cut one, the rest to the
/// body's end one part (trailing blanks joined to the part before): where
/// the header ends and the parts, in source offsets. `None` for fewer than
/// two parts.
fn cut_body(
    piece: &str,
    at: usize,
    body: std::ops::Range<usize>,
    ends: Vec<usize>,
    last: impl Fn(&str) -> bool,
) -> Option<(usize, Vec<std::ops::Range<usize>>)> {
    let mut out: Vec<std::ops::Range<usize>> = Vec::new();
    let mut start = body.start;
    for end in ends {
        out.push(start..end);
        start = end;
        if last(piece.get(out.last()?.clone())?) {
            break;
        }
    }
    if piece.get(start..body.end)?.trim().is_empty() {
        out.last_mut()?.end = body.end;
    } else {
        out.push(start..body.end);
    }
    if out.len() < 2 {
        return None;
    }
    Some((
        at + body.start,
        out.into_iter().map(|s| at + s.start..at + s.end).collect(),
    ))
}

/// [`run`] over the top-level items of `src` at `items` (byte ranges,
/// `scan::top_level_items`), in pieces of consecutive items each parsed
/// alone, twice (the walk needs what
/// is collected from them all): only one piece's syntax tree is held at a
/// time (a whole file's takes about 100 bytes per byte of source). A piece
/// that does not parse alone was cut where no item ends (a brace closed
/// inside an attribute's parentheses, `#[schema(example = json!({ … }))]`):
/// it is joined to the pieces after it until it parses, a few at most.
/// `None`, and `facts` untouched, when that does not mend it: the file is
/// then parsed whole; else the file's call sites, packed. Pieces are of at most `piece_bytes` ([`PIECE_BYTES`];
/// the tests read a file item by item with 0) but for an item larger
/// alone; a module or `impl` item larger than a piece is read by pieces of
/// its items ([`module_items`]), a fn by parts of its body
/// ([`fn_statements`]), a block-like statement of its body by parts of
/// its own ([`add_statements`]).
pub fn run_by_pieces(
    src: &str,
    items: &[std::ops::Range<usize>],
    facts: &mut FileFacts,
    piece_bytes: usize,
) -> Option<Option<PackedCalls>> {
    // consecutive items in pieces of about `piece_bytes` (one parse per
    // piece: a file of 100,000 one-line items parsed item by item spent
    // 40% more time than whole, on syn's and proc-macro2's per-parse work);
    // a large module's items in pieces of their own under its header
    let whole_cut = cut_pieces(src, items, piece_bytes);
    let cut = &whole_cut.pieces;
    let parse = |p: &Piece| parse_piece(src, p);
    let mut info = FileInfo::default();
    let mut pieces: Vec<Piece> = Vec::with_capacity(cut.len());
    let mut next = 0;
    while next < cut.len() {
        // (each join parses the piece again: a few joins keep it linear)
        let mut p = cut[next].clone();
        let helper = whole_cut.helper_at(next);
        next += 1;
        let mut joins = 0;
        let (items, base) = loop {
            if let Some(parsed) = parse(&p) {
                break parsed;
            }
            match cut.get(next) {
                Some(more)
                    if joins < MAX_PIECE_JOINS
                        && more.range.start == p.range.end
                        && more.headers == p.headers =>
                {
                    p.range.end = more.range.end;
                    next += 1;
                    joins += 1;
                }
                _ => return None,
            }
        };
        let mut part = FileInfo::default();
        let mut c = Collect {
            info: &mut part,
            base,
            part_of_body: p.part == Part::FnBody,
            helper,
            value: p.within.value(),
        };
        for item in &items {
            c.visit_item(item);
        }
        info.absorb(part);
        drop(items);
        // (what was collected holds no span: the piece's text can go)
        proc_macro2::extra::invalidate_current_thread_spans();
        pieces.push(p);
    }
    let mut state = WalkState::default();
    let mut walked = 0;
    for (k, p) in pieces.iter().enumerate() {
        // (each parsed above)
        let (items, base) = parse(p).unwrap_or_default();
        // the pieces before and after it that stand inside its first `n` headers
        let before = k.checked_sub(1).and_then(|j| pieces.get(j));
        let shared = |q: Option<&Piece>, n: usize| {
            q.is_some_and(|q| q.part == Part::FnBody && share_headers(&q.headers, &p.headers, n))
        };
        let part_of_body = (p.part == Part::FnBody).then(|| {
            let n = p
                .headers
                .iter()
                .rposition(|h| !h.block)
                .map_or(0, |f| f + 1);
            (!shared(before, n), !shared(pieces.get(k + 1), n))
        });
        // where each block-like statement it is a part of starts in its text
        let mut split = Vec::new();
        let mut at = base;
        for (i, h) in p.headers.iter().enumerate() {
            if h.block {
                split.push(SplitAt {
                    at,
                    first: !shared(before, i + 1),
                    last: !shared(pieces.get(k + 1), i + 1),
                });
            }
            at += h.len();
        }
        let mut w = Walker::new(src, &info, facts, state);
        w.base.set(base);
        w.s.owner = None;
        w.part_of_body = part_of_body;
        w.split = split;
        w.part_of_macro = p.part == Part::MacroBody;
        w.cut_chain = match p.within {
            Within::Chain { head, first } => Some((head as usize, first, p.range.start)),
            _ => None,
        };
        for item in &items {
            w.visit_item(item);
        }
        state = w.s;
        drop(items);
        // Each parse adds its text to proc-macro2's map of spans, which
        // lives as long as the thread: twice the file's size, and the lines
        // of each piece. It is emptied once a piece's tree is gone, unless
        // the other items' expressions the walk parsed again since took more
        // than half as much text as the pieces (they would be parsed again:
        // a large helper every piece calls keeps them).
        walked += p.range.len() + p.headers.iter().map(Header::len).sum::<usize>();
        let reparsed = state.deferred.get_mut();
        if walked >= 2 * reparsed.bytes {
            reparsed.exprs.clear();
            reparsed.held = 0;
            reparsed.bytes = 0;
            walked = 0;
            proc_macro2::extra::invalidate_current_thread_spans();
        }
    }
    Some(finish(facts, state.sites))
}

/// The items of a piece of [`run_by_pieces`] (the first may open with
/// inner attributes) and the base of their offsets; `None` when it does
/// not parse.
fn parse_piece(src: &str, p: &Piece) -> Option<(Vec<syn::Item>, usize)> {
    let body = src.get(p.range.clone())?;
    if p.headers.is_empty() {
        return syn::parse_file(body).ok().map(|f| (f.items, p.range.start));
    }
    let mut text = String::new();
    for h in &p.headers {
        text.push_str(src.get(h.start..h.end)?);
    }
    let base = p.range.start - text.len();
    text.push_str(body);
    for h in p.headers.iter().rev() {
        if h.tail == 0 || p.range.end != h.tail {
            text.push_str(h.close());
        }
    }
    syn::parse_file(&text).ok().map(|f| (f.items, base))
}

/// The helpers the pieces of [`run_by_pieces`] find (each piece parsed
/// alone, none joined), or with `piece_bytes` `usize::MAX` the whole
/// file: their names, parameters and where their bodies stand, sorted.
#[cfg(test)]
pub(super) fn helpers_found(
    src: &str,
    items: &[std::ops::Range<usize>],
    piece_bytes: usize,
) -> Vec<(String, Vec<String>, usize, usize)> {
    let mut info = FileInfo::default();
    let cut = if piece_bytes == usize::MAX {
        Cut {
            pieces: vec![Piece {
                range: 0..src.len(),
                headers: Vec::new(),
                part: Part::Items,
                within: Within::Plain,
            }],
            helpers: Vec::new(),
        }
    } else {
        cut_pieces(src, items, piece_bytes)
    };
    for (k, p) in cut.pieces.iter().enumerate() {
        let (items, base) = parse_piece(src, p).expect("a piece parses");
        let mut c = Collect {
            info: &mut info,
            base,
            part_of_body: p.part == Part::FnBody,
            helper: cut.helper_at(k),
            value: p.within.value(),
        };
        for item in &items {
            c.visit_item(item);
        }
    }
    let mut out: Vec<_> = info
        .helpers
        .into_iter()
        .map(|(n, h)| (n, h.params, h.body.start, h.body.end))
        .collect();
    out.sort();
    out
}

/// The constants the collect pass of [`run_by_pieces`] finds (pieces of
/// `piece_bytes`, none joined; `usize::MAX`: the whole file): each name
/// and where its value stands, sorted.
#[cfg(test)]
pub(super) fn consts_found(
    src: &str,
    items: &[std::ops::Range<usize>],
    piece_bytes: usize,
) -> Vec<(String, usize, usize)> {
    let mut info = FileInfo::default();
    let cut = if piece_bytes == usize::MAX {
        vec![Piece {
            range: 0..src.len(),
            headers: Vec::new(),
            part: Part::Items,
            within: Within::Plain,
        }]
    } else {
        cut_pieces(src, items, piece_bytes).pieces
    };
    for p in &cut {
        let (items, base) = parse_piece(src, p).expect("a piece parses");
        let mut c = Collect {
            info: &mut info,
            base,
            part_of_body: p.part == Part::FnBody,
            helper: None,
            value: p.within.value(),
        };
        for item in &items {
            c.visit_item(item);
        }
    }
    let mut out: Vec<_> = info
        .consts
        .into_iter()
        .map(|(n, d)| (n, d.start, d.end))
        .collect();
    out.sort();
    out
}

/// The pieces of [`run_by_pieces`], before any is joined.
fn cut_pieces(src: &str, items: &[std::ops::Range<usize>], piece_bytes: usize) -> Cut {
    let mut cut = Cut::default();
    let mut headers = Vec::new();
    for r in items {
        cut_into(src, r, piece_bytes, &mut headers, &mut cut);
    }
    cut
}

/// How many pieces [`run_by_pieces`] cuts, and how many of them are
/// parts of a fn's body, under how many headers at most.
#[cfg(test)]
pub(super) fn cut_counts(
    src: &str,
    items: &[std::ops::Range<usize>],
    piece_bytes: usize,
) -> (usize, usize, usize) {
    let cut = cut_pieces(src, items, piece_bytes).pieces;
    let body = cut.iter().filter(|p| p.part == Part::FnBody).count();
    let deepest = cut.iter().map(|p| p.headers.len()).max().unwrap_or(0);
    (cut.len(), body, deepest)
}

/// Each piece [`run_by_pieces`] cuts (before any join): its range, its
/// headers' starts (a block-like statement's marked `*`), its length.
#[cfg(test)]
pub(super) fn piece_list(
    src: &str,
    items: &[std::ops::Range<usize>],
    piece_bytes: usize,
) -> Vec<String> {
    cut_pieces(src, items, piece_bytes)
        .pieces
        .iter()
        .map(|p| {
            let heads: Vec<String> = p
                .headers
                .iter()
                .map(|h| format!("{}{}", h.start, if h.block { "*" } else { "" }))
                .collect();
            format!("{:?} [{}] {}", p.range, heads.join(" "), p.range.len())
        })
        .collect()
}

/// How many pieces [`run_by_pieces`] cuts inside a block-like statement
/// of a fn's body, and under how many such statements at most.
#[cfg(test)]
pub(super) fn block_counts(
    src: &str,
    items: &[std::ops::Range<usize>],
    piece_bytes: usize,
) -> (usize, usize) {
    let cut = cut_pieces(src, items, piece_bytes).pieces;
    let blocks = |p: &Piece| p.headers.iter().filter(|h| h.block).count();
    let inside = cut.iter().filter(|p| blocks(p) > 0).count();
    (inside, cut.iter().map(blocks).max().unwrap_or(0))
}

/// How deep in modules and impls [`cut_into`] splits items: deeper ones
/// are parsed whole with their piece (real code nests a few).
const MAX_SPLIT_DEPTH: usize = 32;

/// How many pieces after it [`run_by_pieces`] joins to a piece that does
/// not parse alone before it parses the file whole.
const MAX_PIECE_JOINS: usize = 3;

/// The size past which [`run_by_pieces`] starts a new piece.
pub(super) const PIECE_BYTES: usize = 2 << 10;

/// Ops in source order with a dense order number, guards sorted, call
/// sites ordered and packed: the end of [`run`] and [`run_by_pieces`].
fn finish(facts: &mut FileFacts, sites: Sites) -> Option<PackedCalls> {
    let mut ops = std::mem::take(&mut facts.ops);
    ops.sort_by_key(|o| (o.name_span.start(), o.span.start()));
    for (i, o) in ops.iter_mut().enumerate() {
        o.order = i as u32;
    }
    facts.ops = ops;
    facts
        .absence_guards
        .sort_by_key(|g| (g.write.start(), g.check.start()));
    facts.absence_guards.dedup();
    link::order_calls(facts, sites)
}

/// The call sites of the project link, packed as the walk makes them
/// (`project::calls::SitePacker`: unpacked, they were a tenth of a dense
/// file's peak), each with where its order goes and where its name
/// starts: a site's order is that of the first op at or after it, known
/// once the file is walked ([`link::order_calls`]).
#[derive(Default)]
struct Sites {
    packer: crate::project::calls::SitePacker,
    at: Vec<(crate::project::calls::OrderAt, u32)>,
}

/// What a [`Walker`] carries from one top-level item to the next.
#[derive(Default)]
struct WalkState {
    /// The names of the op values recorded so far, one copy each.
    value_names: crate::facts::OpValueNames,
    scope: ScopeId,
    owner: Option<String>,
    in_test: bool,
    depth: u32,
    locals: Vec<Local>,
    txns: Vec<Txn>,
    /// Keys under `WATCH` in the current fn (raw `WATCH`, fred/rustis `watch`).
    fn_watched: Vec<KeyExpr>,
    script_at: HashMap<usize, ScriptId>,
    /// Locals bound to the result of an `EXISTS`/`GET` (index into `facts.ops`).
    checks: Vec<(String, usize)>,
    /// Set by an `if` that exits while the key is present: the check's op index.
    exit_guard: Option<usize>,
    /// Parameters of the current fn (project link facts, `visitor/link.rs`).
    params: Vec<String>,
    /// The call sites' texts, shared.
    call_texts: crate::facts::CallTexts,
    /// Expressions of other items parsed again ([`Walker::deferred`]).
    deferred: std::cell::RefCell<Reparsed>,
    /// A fn whose body is walked part by part, between its parts.
    open_fn: Option<OpenFn>,
    /// The block-like statements cut into parts, between their parts, by
    /// depth ([`Walker::split`]).
    open_blocks: Vec<OpenBlock>,
    /// The call sites recorded so far.
    sites: Sites,
}

/// What [`Walker::with_fn`] holds from a fn's entry to its exit when the
/// body is walked over several pieces: the state to restore after it, and
/// the body's exits found so far ([`Walker::visit_stmts`]).
struct OpenFn {
    outer: FnOuter,
    exits: Vec<(usize, usize)>,
}

/// The walker's state around a fn, restored when the fn is left.
struct FnOuter {
    scope: ScopeId,
    depth: u32,
    locals: Vec<Local>,
    txns: Vec<Txn>,
    watched: Vec<KeyExpr>,
    checks: Vec<(String, usize)>,
    in_test: bool,
    params: Vec<String>,
}

/// [`Walker::deferred`]'s expressions, and the bytes of source they were
/// parsed from: their spans live as long as the pieces' ([`run_by_pieces`]).
#[derive(Default)]
struct Reparsed {
    exprs: HashMap<Deferred, Option<Rc<Expr>>>,
    /// Bytes of text parsed since the spans were last invalidated.
    bytes: usize,
    /// Bytes of text of the expressions held in `exprs`.
    held: usize,
    /// Bytes of text parsed in the whole file.
    total: usize,
}

/// The text of the expressions [`Reparsed`] holds before it lets them all
/// go (a function registering 600 statics held the trees of them all; at
/// 16 kB of text, the trees of its last ones were still a third of the
/// file's peak).
const REPARSED_HELD_BYTES: usize = 4 << 10;

impl<'f, 'o> Walker<'f, 'o> {
    fn new(
        src: &'f str,
        info: &'f FileInfo,
        facts: &'o mut FileFacts,
        s: WalkState,
    ) -> Walker<'f, 'o> {
        Walker {
            src,
            info,
            facts,
            base: std::cell::Cell::new(0),
            s,
            part_of_body: None,
            part_of_macro: false,
            split: Vec::new(),
            split_next: 0,
            cut_chain: None,
        }
    }
}

impl<'f> Walker<'f, '_> {
    // --- positions -------------------------------------------------------

    fn off(&self, s: proc_macro2::Span) -> Span {
        let r = s.byte_range();
        let base = self.base.get();
        Span::new(base + r.start, base + r.end.max(r.start))
    }

    /// `f` with the spans counted from `base` (an expression of another
    /// unit: a constant's, a helper's, a script field's).
    fn at_base<R>(&self, base: usize, f: impl FnOnce() -> R) -> R {
        let saved = self.base.replace(base);
        let out = f();
        self.base.set(saved);
        out
    }

    fn span_of<T: Spanned>(&self, t: &T) -> Span {
        self.off(t.span())
    }

    /// `[start, name)` without the `.` (and blanks) that joins the receiver to the method name.
    fn receiver_before(&self, start: usize, name: usize) -> Span {
        let name = name.max(start);
        let text = self.src.get(start..name).unwrap_or("");
        let kept = text.trim_end_matches(|c: char| c == '.' || c.is_whitespace());
        Span::new(start, start + kept.len())
    }

    fn text_of<T: Spanned + ToTokens>(&self, t: &T) -> String {
        let sp = self.span_of(t);
        match self.src.get(sp.range()) {
            Some(s) if !s.is_empty() => s.to_string(),
            _ => t.to_token_stream().to_string().replace(' ', ""),
        }
    }

    // --- scopes ----------------------------------------------------------

    /// A fn: its scope, its parameters, its body's statements. A body
    /// walked part by part ([`Walker::part_of_body`]) is entered at its
    /// first part and left at its last, [`WalkState::open_fn`] between.
    fn with_fn(&mut self, sig: &syn::Signature, attrs: &[syn::Attribute], body: &syn::Block) {
        let (first, last) = self.part_of_body.take().unwrap_or((true, true));
        let open = if first { None } else { self.s.open_fn.take() };
        let (outer, mut exits) = match open {
            Some(o) => {
                // (the headers of the part set what they did at the first)
                self.s.in_test = self.s.in_test || is_test_attrs(attrs);
                (o.outer, o.exits)
            }
            None => (self.enter_fn(sig, attrs), Vec::new()),
        };
        self.visit_stmts_in(&body.stmts, &mut exits);
        if !last {
            self.s.open_fn = Some(OpenFn { outer, exits });
            return;
        }
        self.guard_exits(exits);
        self.s.scope = outer.scope;
        self.s.depth = outer.depth;
        self.s.locals = outer.locals;
        self.s.txns = outer.txns;
        self.s.fn_watched = outer.watched;
        self.s.checks = outer.checks;
        self.s.in_test = outer.in_test;
        self.s.params = outer.params;
    }

    /// Enters a fn: its scope, its parameters as locals; what was before.
    fn enter_fn(&mut self, sig: &syn::Signature, attrs: &[syn::Attribute]) -> FnOuter {
        let name = sig.ident.to_string();
        let is_test = self.s.in_test || is_test_attrs(attrs);
        let id = self.facts.add_scope(Scope {
            name,
            owner: self.s.owner.clone(),
            is_test,
        });
        let params = self.link_fn(id, sig);
        let outer = FnOuter {
            scope: std::mem::replace(&mut self.s.scope, id),
            depth: std::mem::replace(&mut self.s.depth, 0),
            locals: std::mem::take(&mut self.s.locals),
            txns: std::mem::take(&mut self.s.txns),
            watched: std::mem::take(&mut self.s.fn_watched),
            checks: std::mem::take(&mut self.s.checks),
            in_test: std::mem::replace(&mut self.s.in_test, is_test),
            params,
        };
        for input in &sig.inputs {
            if let syn::FnArg::Typed(t) = input {
                if let Some(pname) = pat_name(&t.pat) {
                    let ty = t.ty.to_token_stream().to_string();
                    self.s.locals.push(Local {
                        key: KeyExpr::var(&pname),
                        value: words::classify_value_words(&pname).unwrap_or(ValueExpr::Unknown),
                        non_redis: NON_REDIS_TYPES.iter().any(|w| ty.contains(w)),
                        name: pname,
                        ..blank_local()
                    });
                }
            }
        }
        outer
    }

    fn with_owner(&mut self, owner: Option<String>, test: bool, f: impl FnOnce(&mut Self)) {
        let saved = std::mem::replace(&mut self.s.owner, owner);
        let saved_test = self.s.in_test;
        self.s.in_test |= test;
        f(self);
        self.s.owner = saved;
        self.s.in_test = saved_test;
    }

    // --- lookups ---------------------------------------------------------

    fn local(&self, name: &str) -> Option<&Local> {
        self.s.locals.iter().rev().find(|l| l.name == name)
    }

    fn local_of(&self, e: &Expr) -> Option<&Local> {
        match strip(e) {
            Expr::Path(p) => p.path.get_ident().and_then(|i| self.local(&i.to_string())),
            _ => None,
        }
    }

    /// Where the constant named by the path's last segment stands.
    fn const_at(&self, path: &syn::Path) -> Option<(String, Deferred)> {
        let last = path.segments.last()?.ident.to_string();
        let at = match self.info.consts.get(&last) {
            Some(at) => *at,
            None => *self.info.macro_consts.get(&last)?,
        };
        Some((last, at))
    }

    /// A constant's name, the base offset of its expression's spans and
    /// its expression.
    fn const_entry(&self, path: &syn::Path) -> Option<(String, usize, Rc<Expr>)> {
        let (name, at) = self.const_at(path)?;
        let e = self.deferred(at)?;
        Some((name, at.start, e))
    }

    /// [`Walker::const_entry`] for the lookups of keys, values and strings,
    /// which do not look into a call of another module's function: such a
    /// constant is not parsed again ([`Deferred::call_text`]).
    fn const_view(&self, path: &syn::Path) -> Option<(String, usize, ConstView)> {
        let (name, at) = self.const_at(path)?;
        if let Some((start, end)) = at.call_text {
            return Some((
                name,
                at.start,
                ConstView::Call(start as usize..end as usize),
            ));
        }
        let e = self.deferred(at)?;
        Some((name, at.start, ConstView::Expr(e)))
    }

    /// The expression of another item at `at`, parsed again from its text
    /// (once while its spans are valid): its spans count from `at.start`.
    /// `None` when it no longer parses (it did when it was collected).
    fn deferred(&self, at: Deferred) -> Option<Rc<Expr>> {
        let mut cache = self.s.deferred.borrow_mut();
        if let Some(e) = cache.exprs.get(&at) {
            return e.clone();
        }
        let len = at.end.saturating_sub(at.start);
        // Past a budget of twice the file's text parsed again they are all
        // held (large expressions used by turns all over the file: two
        // helpers of 28 kB, each called by 2,000 functions, took 2.3 G
        // instructions held as trees, 3.1 G with this budget, 5.4 G with
        // one of eight times).
        if cache.held + len > REPARSED_HELD_BYTES && cache.total <= 2 * self.src.len() {
            cache.exprs.clear();
            cache.held = 0;
        }
        let text = self.src.get(at.start..at.end);
        let e = text
            .and_then(|t| {
                if at.block {
                    let block = syn::parse_str::<syn::Block>(t).ok()?;
                    single_expr_body(&block).cloned()
                } else {
                    syn::parse_str::<Expr>(t).ok()
                }
            })
            .map(Rc::new);
        cache.bytes += len;
        cache.held += len;
        cache.total += len;
        cache.exprs.insert(at, e.clone());
        e
    }

    // --- keys ------------------------------------------------------------

    fn key_of(&self, e: &Expr) -> KeyExpr {
        self.key_d(e, 0, None)
    }

    fn key_d(&self, e: &Expr, d: u32, sub: Option<&HashMap<String, KeyExpr>>) -> KeyExpr {
        if d > MAX_RESOLVE {
            return KeyExpr::unknown();
        }
        let e = strip(e);
        match e {
            Expr::Lit(l) => match &l.lit {
                Lit::Str(s) => KeyExpr::lit(&s.value()),
                Lit::Int(i) => KeyExpr::lit(&i.to_string()),
                Lit::ByteStr(b) => KeyExpr::lit(&String::from_utf8_lossy(&b.value())),
                Lit::Char(c) => KeyExpr::lit(&c.value().to_string()),
                _ => KeyExpr::unknown(),
            },
            Expr::Path(p) => {
                if let Some(ident) = p.path.get_ident() {
                    let name = ident.to_string();
                    if let Some(sub) = sub {
                        if let Some(k) = sub.get(&name) {
                            return k.clone();
                        }
                    } else if let Some(l) = self.local(&name) {
                        return l.key.clone();
                    }
                }
                if let Some((name, base, view)) = self.const_view(&p.path) {
                    let mut k = match view {
                        ConstView::Expr(ce) => self.at_base(base, || self.key_d(&ce, d + 1, None)),
                        // (`key_d` of such a call)
                        ConstView::Call(_) => KeyExpr::unknown(),
                    };
                    if k.is_unknown() {
                        k = KeyExpr {
                            parts: vec![KeyPart::Const(name.clone().into())].into(),
                            idents: Default::default(),
                        };
                    }
                    k.idents.push(name);
                    return k;
                }
                let full = path_idents(&p.path).join("::");
                let last = p
                    .path
                    .segments
                    .last()
                    .map(|s| s.ident.to_string())
                    .unwrap_or_default();
                let upper = last.chars().any(|c| c.is_ascii_uppercase())
                    && !last.chars().any(|c| c.is_ascii_lowercase());
                if upper || p.path.segments.len() > 1 {
                    KeyExpr {
                        parts: vec![KeyPart::Const(full.clone().into())].into(),
                        idents: vec![full].into(),
                    }
                } else {
                    KeyExpr::var(&full)
                }
            }
            Expr::Field(f) => {
                let text = self.text_of(e).split_whitespace().collect::<String>();
                let on_self = matches!(&*f.base, Expr::Path(p) if p.path.is_ident("self"));
                if on_self {
                    KeyExpr {
                        parts: vec![KeyPart::Const(text.clone().into())].into(),
                        idents: vec![text].into(),
                    }
                } else {
                    KeyExpr::var(&text)
                }
            }
            Expr::Macro(m) => self.macro_key(&m.mac, d, sub),
            Expr::Binary(b) if matches!(b.op, syn::BinOp::Add(_)) => {
                let mut k = self.key_d(&b.left, d + 1, sub);
                k.append(self.key_d(&b.right, d + 1, sub));
                k
            }
            Expr::Call(c) => {
                let Some(path) = call_path(e) else {
                    return KeyExpr::unknown();
                };
                let is_local_fn = path.len() == 1 || (path.len() == 2 && path[0] == "Self");
                let name = path.last().cloned().unwrap_or_default();
                if is_local_fn {
                    let args: Vec<&Expr> = c.args.iter().collect();
                    return self.helper_key(&name, &args, d, sub);
                }
                KeyExpr::unknown()
            }
            // `[LOCK_PREFIX, &id].concat()`, `[a, b].join(":")`.
            Expr::MethodCall(m)
                if (m.method == "concat" && m.args.is_empty()
                    || m.method == "join" && m.args.len() == 1)
                    && matches!(strip(&m.receiver), Expr::Array(_)) =>
            {
                let Expr::Array(a) = strip(&m.receiver) else {
                    return KeyExpr::unknown();
                };
                let sep = m.args.first().and_then(|s| self.const_str(s));
                let mut k = KeyExpr::default();
                for (i, el) in a.elems.iter().enumerate() {
                    if i > 0 {
                        if let Some(sep) = &sep {
                            k.push(KeyPart::Lit(sep.clone().into()));
                        }
                    }
                    k.append(self.key_d(el, d + 1, sub));
                }
                if k.parts.is_empty() {
                    KeyExpr::unknown()
                } else {
                    k
                }
            }
            Expr::MethodCall(m) if matches!(&*m.receiver, Expr::Path(p) if p.path.is_ident("self")) =>
            {
                let args: Vec<&Expr> = m.args.iter().collect();
                self.helper_key(&m.method.to_string(), &args, d, sub)
            }
            _ => KeyExpr::unknown(),
        }
    }

    fn helper_key(
        &self,
        name: &str,
        args: &[&Expr],
        d: u32,
        sub: Option<&HashMap<String, KeyExpr>>,
    ) -> KeyExpr {
        let Some(h) = self.info.helpers.get(name) else {
            return KeyExpr::unknown();
        };
        if h.params.len() != args.len() {
            return KeyExpr::unknown();
        }
        let map: HashMap<String, KeyExpr> = h
            .params
            .iter()
            .zip(args)
            .map(|(p, a)| (p.clone(), self.key_d(a, d + 1, sub)))
            .collect();
        let Some(body) = self.deferred(h.body) else {
            return KeyExpr::unknown();
        };
        let mut k = self.at_base(h.body.start, || self.key_d(&body, d + 1, Some(&map)));
        k.idents.push(name.to_string());
        k
    }

    /// `format!("lock:{}", id)`, `format!("lock:{id}")`, `concat!(..)`.
    fn macro_key(
        &self,
        mac: &syn::Macro,
        d: u32,
        sub: Option<&HashMap<String, KeyExpr>>,
    ) -> KeyExpr {
        let name = macro_name(mac);
        let exprs = macro_exprs(&mac.tokens);
        match name.as_str() {
            "concat" => {
                let mut k = KeyExpr::default();
                for e in &exprs {
                    k.append(self.key_d(e, d + 1, sub));
                }
                if k.parts.is_empty() {
                    KeyExpr::unknown()
                } else {
                    k
                }
            }
            "format" => {
                let Some(Expr::Lit(syn::ExprLit {
                    lit: Lit::Str(fmt), ..
                })) = exprs.first()
                else {
                    return KeyExpr::unknown();
                };
                let mut positional: Vec<&Expr> = Vec::new();
                let mut named: HashMap<String, &Expr> = HashMap::new();
                for e in &exprs[1..] {
                    if let Expr::Assign(a) = e {
                        if let Expr::Path(p) = &*a.left {
                            if let Some(i) = p.path.get_ident() {
                                named.insert(i.to_string(), &a.right);
                                continue;
                            }
                        }
                    }
                    positional.push(e);
                }
                self.format_key(&fmt.value(), &positional, &named, d, sub)
            }
            _ => KeyExpr::unknown(),
        }
    }

    fn format_key(
        &self,
        fmt: &str,
        positional: &[&Expr],
        named: &HashMap<String, &Expr>,
        d: u32,
        sub: Option<&HashMap<String, KeyExpr>>,
    ) -> KeyExpr {
        let mut k = KeyExpr::default();
        let mut lit = String::new();
        let mut next = 0usize;
        let mut chars = fmt.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '{' if chars.peek() == Some(&'{') => {
                    chars.next();
                    lit.push('{');
                }
                '}' if chars.peek() == Some(&'}') => {
                    chars.next();
                    lit.push('}');
                }
                '{' => {
                    let mut inner = String::new();
                    for c2 in chars.by_ref() {
                        if c2 == '}' {
                            break;
                        }
                        inner.push(c2);
                    }
                    let arg = inner.split(':').next().unwrap_or("").trim().to_string();
                    k.push(KeyPart::Lit(std::mem::take(&mut lit).into()));
                    let part = if arg.is_empty() {
                        let e = positional.get(next).copied();
                        next += 1;
                        e.map(|e| self.key_d(e, d + 1, sub))
                    } else if let Ok(i) = arg.parse::<usize>() {
                        positional.get(i).map(|e| self.key_d(e, d + 1, sub))
                    } else if let Some(e) = named.get(&arg) {
                        Some(self.key_d(e, d + 1, sub))
                    } else {
                        // Inline `{id}`: an identifier of the surrounding code.
                        syn::parse_str::<Expr>(&arg)
                            .ok()
                            .map(|e| self.key_ident_inline(&e, &arg, d, sub))
                    };
                    k.append(part.unwrap_or_else(KeyExpr::unknown));
                }
                _ => lit.push(c),
            }
        }
        k.push(KeyPart::Lit(lit.into()));
        if k.parts.is_empty() {
            KeyExpr::lit("")
        } else {
            k
        }
    }

    /// An inline format argument: spans of a re-parsed string are not in the
    /// file, so only names are resolved, never text.
    fn key_ident_inline(
        &self,
        e: &Expr,
        name: &str,
        d: u32,
        sub: Option<&HashMap<String, KeyExpr>>,
    ) -> KeyExpr {
        if let Expr::Path(p) = e {
            if p.path.get_ident().is_some() {
                return self.key_d(e, d + 1, sub);
            }
        }
        KeyExpr::var(name)
    }

    /// The keys of a `del` argument: one per element of an array or `vec!`.
    fn keys_of(&self, e: &Expr) -> Vec<KeyExpr> {
        if let Some(l) = self.local_of(e) {
            if !l.keys.is_empty() {
                return l.keys.clone();
            }
        }
        match strip(e) {
            Expr::Array(a) => a.elems.iter().map(|x| self.key_of(x)).collect(),
            Expr::Macro(m) if macro_name(&m.mac) == "vec" => macro_exprs(&m.mac.tokens)
                .iter()
                .map(|x| self.key_of(x))
                .collect(),
            Expr::Tuple(t) => t.elems.iter().map(|x| self.key_of(x)).collect(),
            _ => vec![self.key_of(e)],
        }
    }

    fn first_key(&self, e: &Expr) -> KeyExpr {
        self.keys_of(e)
            .into_iter()
            .next()
            .unwrap_or_else(KeyExpr::unknown)
    }

    // --- values ----------------------------------------------------------

    fn value_of(&self, e: &Expr) -> ValueExpr {
        self.value_d(e, 0)
    }

    fn value_d(&self, e: &Expr, d: u32) -> ValueExpr {
        if d > MAX_RESOLVE {
            return ValueExpr::Unknown;
        }
        let e = strip(e);
        match e {
            Expr::Lit(l) => return crate::words::constant(&self.text_of(l)),
            Expr::Call(c) => {
                // A one-expression helper of the file: classify what it returns.
                let path = call_path(e).unwrap_or_default();
                if path.len() == 1 || (path.len() == 2 && path[0] == "Self") {
                    if let Some(h) = path.last().and_then(|n| self.info.helpers.get(n)) {
                        if h.params.len() == c.args.len() {
                            if let Some(body) = self.deferred(h.body) {
                                return self.at_base(h.body.start, || self.value_d(&body, d + 1));
                            }
                        }
                    }
                }
            }
            Expr::Path(p) => {
                if let Some(i) = p.path.get_ident() {
                    if let Some(l) = self.local(&i.to_string()) {
                        return l.value.clone();
                    }
                }
                if let Some((name, base, view)) = self.const_view(&p.path) {
                    let v = match view {
                        ConstView::Expr(ce) => self.at_base(base, || self.value_d(&ce, d + 1)),
                        // (`value_d` of such a call: the words of its text)
                        ConstView::Call(r) if d < MAX_RESOLVE => self
                            .src
                            .get(r)
                            .and_then(words::classify_value_words)
                            .unwrap_or(ValueExpr::Unknown),
                        ConstView::Call(_) => ValueExpr::Unknown,
                    };
                    return match v {
                        ValueExpr::Unknown => {
                            words::classify_value_words(&name).unwrap_or(ValueExpr::Unknown)
                        }
                        v => v,
                    };
                }
            }
            _ => {}
        }
        words::classify_value_words(&self.text_of(e)).unwrap_or(ValueExpr::Unknown)
    }

    /// A string or number constant the expression stands for.
    fn const_str(&self, e: &Expr) -> Option<String> {
        self.const_str_d(e, 0)
    }

    fn const_str_d(&self, e: &Expr, d: u32) -> Option<String> {
        if d > MAX_RESOLVE {
            return None;
        }
        match strip(e) {
            Expr::Lit(l) => match &l.lit {
                Lit::Str(s) => Some(s.value()),
                Lit::Int(i) => Some(i.base10_digits().to_string()),
                Lit::ByteStr(b) => Some(String::from_utf8_lossy(&b.value()).into_owned()),
                _ => None,
            },
            Expr::Path(p) => {
                if let Some(i) = p.path.get_ident() {
                    if let Some(l) = self.local(&i.to_string()) {
                        return l.str_val.clone();
                    }
                }
                match self.const_view(&p.path)? {
                    (_, base, ConstView::Expr(ce)) => {
                        self.at_base(base, || self.const_str_d(&ce, d + 1))
                    }
                    // (`const_str_d` of such a call)
                    (_, _, ConstView::Call(_)) => None,
                }
            }
            _ => None,
        }
    }

    /// Option words of an expression, through a let-bound local.
    fn words_of(&self, e: &Expr) -> Vec<String> {
        if let Some(l) = self.local_of(e) {
            return l.words.clone();
        }
        let mut out = Vec::new();
        let mut budget = MAX_WORD_TOKENS as u32;
        token_words(e.to_token_stream(), &mut out, &mut budget);
        out
    }

    // --- scripts ---------------------------------------------------------

    /// The script text an expression stands for: a literal, a const or local
    /// bound to one, a `Script::new(x)`.
    fn script_of(&mut self, e: &Expr, name: Option<String>) -> Option<ScriptId> {
        self.script_d(e, name, 0)
    }

    fn script_d(&mut self, e: &Expr, name: Option<String>, d: u32) -> Option<ScriptId> {
        if d > MAX_RESOLVE {
            return None;
        }
        let e = strip(e);
        match e {
            Expr::Lit(syn::ExprLit {
                lit: Lit::Str(s), ..
            }) => self.register_script(s, name),
            Expr::Path(p) => {
                if let Some(i) = p.path.get_ident() {
                    if let Some(l) = self.local(&i.to_string()) {
                        return l.script;
                    }
                }
                let (cname, base, ce) = self.const_entry(&p.path)?;
                let inner = find_script_new(&ce).unwrap_or(&ce);
                let saved = self.base.replace(base);
                let id = self.script_d(inner, Some(cname), d + 1);
                self.base.set(saved);
                id
            }
            Expr::Field(f) => {
                let syn::Member::Named(m) = &f.member else {
                    return None;
                };
                let at = *self.info.script_fields.get(&m.to_string())?;
                let arg = self.deferred(at)?;
                let saved = self.base.replace(at.start);
                let id = self.script_d(&arg, Some(m.to_string()), d + 1);
                self.base.set(saved);
                id
            }
            Expr::Call(_) => {
                let arg = find_script_new(e)?;
                self.script_d(arg, name, d + 1)
            }
            _ => None,
        }
    }

    fn register_script(&mut self, lit: &syn::LitStr, name: Option<String>) -> Option<ScriptId> {
        let sp = self.off(lit.span());
        if let Some(&id) = self.s.script_at.get(&sp.start()) {
            if let Some(s) = self.facts.scripts.get_mut(id as usize) {
                if s.name.is_none() {
                    s.name = name;
                }
            }
            return Some(id);
        }
        let raw = self.src.get(sp.range())?;
        let (text, anchors) = decode_literal(raw, sp.start())?;
        let id = crate::facts::next_script_id(&self.facts.scripts)?;
        let lua = lua::analyse(&text);
        let client = match self.info.client() {
            Client::Unknown => Client::RedisRs,
            c => c,
        };
        self.facts.scripts.push(ScriptFact {
            name,
            text,
            anchors,
            lua,
            client,
        });
        self.s.script_at.insert(sp.start(), id);
        Some(id)
    }

    // --- emitting --------------------------------------------------------

    fn emit(
        &mut self,
        f: Found,
        span: Span,
        name_span: Span,
        atomic: bool,
        script: Option<ScriptId>,
    ) {
        if f.key.is_unknown() {
            return;
        }
        let kind = match f.kind {
            OpKind::Eval { .. } if f.script => OpKind::Eval { script },
            k => k,
        };
        let in_txn = !self.s.txns.is_empty();
        let watched = self
            .s
            .txns
            .iter()
            .any(|t| t.watched.iter().any(|w| w.parts == f.key.parts))
            || self.s.fn_watched.iter().any(|w| w.parts == f.key.parts);
        let client = f.client.unwrap_or_else(|| match self.info.client() {
            Client::Unknown => Client::RedisRs,
            c => c,
        });
        crate::facts::push_by_quarters(&mut self.facts.ops, {
            let mut op = Op::new(kind, f.key, f.value, self.s.scope, span, name_span, client);
            op.set_depth(self.s.depth);
            op.set_atomic(atomic || in_txn);
            op.set_watched(watched);
            op
        });
    }

    fn fail_open(&mut self, span: Span, key: KeyExpr) {
        if key.is_unknown() {
            return;
        }
        let client = match self.info.client() {
            Client::Unknown => Client::RedisRs,
            c => c,
        };
        self.facts.fail_opens.push(FailOpen {
            span,
            key,
            scope: self.s.scope,
            client,
        });
    }

    /// A fail-open shape around the call of a project function whose name
    /// starts at `at`: LL008 when the link finds it returns an acquire's result.
    fn fail_open_call(&mut self, at: usize, span: Span) {
        self.facts
            .link
            .fail_open_calls
            .push(crate::facts::CallFailOpen {
                name_start: at,
                span,
            });
    }

    /// Where the name of `e` starts when `e` is the call of a function that
    /// reads like an acquire and is no client call (`acquire_lock(&mut c,
    /// k)`, `self.locks.try_lock(k)`), through `.await` and `?`.
    fn helper_acquire(&self, e: &Expr) -> Option<usize> {
        let mut e = strip(e);
        for _ in 0..8 {
            match e {
                Expr::Await(a) => e = strip(&a.base),
                Expr::Try(t) => e = strip(&t.expr),
                _ => break,
            }
        }
        let ident = match e {
            Expr::Call(c) => match &*c.func {
                Expr::Path(p) => &p.path.segments.last()?.ident,
                _ => return None,
            },
            Expr::MethodCall(m) => &m.method,
            _ => return None,
        };
        acquire_like(&ident.to_string()).then(|| self.off(ident.span()).start())
    }

    /// The key of the first acquire among ops pushed since `from`.
    fn acquire_since(&self, from: usize) -> Option<KeyExpr> {
        self.facts
            .ops
            .get(from..)?
            .iter()
            .find_map(|o| matches!(o.kind, OpKind::Acquire { .. }).then(|| o.key.clone()))
    }

    // --- command tables --------------------------------------------------

    /// Is an ambiguous method name (`get`, `set`, `del`, …) a Redis call here?
    fn redis_evidence(&self, recv: Option<&Expr>, key: &KeyExpr, sure: bool) -> bool {
        if sure {
            return true;
        }
        if let Some(r) = recv {
            if self.local_of(r).is_some_and(|l| l.non_redis) {
                return false;
            }
            if let Expr::Field(f) = strip(r) {
                if let syn::Member::Named(m) = &f.member {
                    if self.info.non_redis_fields.contains(&m.to_string()) {
                        return false;
                    }
                }
            }
            let text = self.text_of(r);
            let parts = words::word_parts(&text);
            const NON_REDIS: &[&str] = &[
                "map", "maps", "cache", "caches", "headers", "params", "env", "args", "json",
                "row", "vec", "list", "dict", "table", "set", "sets", "cookies", "query", "form",
                "config", "settings", "options", "attrs", "fields", "memo",
            ];
            if parts
                .last()
                .is_some_and(|p| NON_REDIS.contains(&p.as_str()))
            {
                return false;
            }
            if !self.s.txns.is_empty() {
                return true;
            }
            const REDISH: &[&str] = &[
                "redis",
                "con",
                "conn",
                "connection",
                "client",
                "pool",
                "pipe",
                "pipeline",
                "rds",
                "trx",
                "tx",
                "txn",
                "multi",
                "manager",
                "cluster",
                "db",
            ];
            if parts.iter().any(|p| REDISH.contains(&p.as_str())) {
                return true;
            }
        }
        self.info.evidence() || self.key_reads_lock(key)
    }

    fn key_reads_lock(&self, k: &KeyExpr) -> bool {
        k.parts.iter().any(|p| match p {
            KeyPart::Lit(s) | KeyPart::Const(s) | KeyPart::Var(s) => words::reads_like_lock(s),
            KeyPart::Unknown => false,
        }) || k.idents.iter().any(|i| words::reads_like_lock(i))
    }

    /// A client method call (`con.set_nx(k, v)`, `Cmd::del(k)`). `sure` when the
    /// receiver is known to be Redis (a pipeline, a transaction, `Cmd`).
    fn method_ops(
        &mut self,
        name: &str,
        args: &[&Expr],
        recv: Option<&Expr>,
        sure: bool,
    ) -> Vec<Found> {
        let n = args.len();
        let key = |w: &Self| {
            args.first()
                .map(|a| w.key_of(a))
                .unwrap_or_else(KeyExpr::unknown)
        };
        let ambiguous = |w: &Self, k: &KeyExpr| w.redis_evidence(recv, k, sure);
        match (name, n) {
            ("set_nx" | "setnx", 2) => {
                let c = if name == "setnx" {
                    Some(Client::Fred)
                } else {
                    None
                };
                let mut f = Found::new(OpKind::Acquire { expiry: false }, key(self))
                    .value(self.value_of(args[1]));
                f.client = c;
                vec![f]
            }
            ("set", 2) => {
                let k = key(self);
                if !ambiguous(self, &k) {
                    return vec![];
                }
                vec![Found::new(OpKind::Set { expiry: false }, k).value(self.value_of(args[1]))]
            }
            ("set", 5) => {
                // fred: set(k, v, expiration, options, get)
                let k = key(self);
                let exp = self.words_of(args[2]);
                let opts = self.words_of(args[3]);
                let fred_like = self.info.crates.contains(&Client::Fred)
                    || exp.iter().any(|w| w == "Expiration")
                    || opts.iter().any(|w| w == "SetOptions");
                if !fred_like {
                    return vec![];
                }
                let has_exp = !exp.iter().any(|w| w == "None")
                    && exp
                        .iter()
                        .any(|w| w != "Some" && w != "Expiration" && w != "KEEPTTL")
                    && !exp.iter().any(|w| w == "KEEPTTL");
                let mut flags = SetFlags::from_words(&opts);
                flags.expiry = has_exp;
                vec![Found::new(flags.kind(), k)
                    .value(self.value_of(args[1]))
                    .client(Client::Fred)]
            }
            ("set_ex" | "pset_ex", 3) => {
                vec![Found::new(OpKind::Set { expiry: true }, key(self))
                    .value(self.value_of(args[1]))]
            }
            ("setex" | "psetex", 3) => {
                vec![Found::new(OpKind::Set { expiry: true }, key(self))
                    .value(self.value_of(args[2]))]
            }
            ("set_options", 3) => {
                let flags = SetFlags::from_words(&self.words_of(args[2]));
                vec![Found::new(flags.kind(), key(self)).value(self.value_of(args[1]))]
            }
            ("set_with_options", 4..=6) => {
                let mut w = self.words_of(args[2]);
                w.extend(self.words_of(args[3]));
                let flags = SetFlags::from_words(&w);
                vec![Found::new(flags.kind(), key(self))
                    .value(self.value_of(args[1]))
                    .client(Client::Rustis)]
            }
            ("pexpire" | "expire_at" | "pexpire_at" | "pexpireat" | "expireat", 2 | 3) => {
                vec![Found::new(OpKind::Expire, key(self))]
            }
            ("expire", 2 | 3) => {
                let k = key(self);
                if !ambiguous(self, &k) {
                    return vec![];
                }
                vec![Found::new(OpKind::Expire, k)]
            }
            ("del" | "unlink", 1) => {
                let keys = self.keys_of(args[0]);
                if !keys.iter().any(|k| ambiguous(self, k)) {
                    return vec![];
                }
                keys.into_iter()
                    .map(|k| Found::new(OpKind::Release { checked: false }, k))
                    .collect()
            }
            ("del_ex" | "delex", 2) => {
                let w = self.words_of(args[1]);
                let checked = w.iter().any(|x| {
                    let l = x.to_ascii_lowercase();
                    l == "ifeq" || l == "ifdeq"
                });
                let mut f = Found::new(OpKind::Release { checked }, key(self));
                if name == "delex" {
                    f.client = Some(Client::Rustis);
                }
                vec![f]
            }
            ("get", 1) => {
                let k = key(self);
                if !ambiguous(self, &k) {
                    return vec![];
                }
                vec![Found::new(OpKind::Get, k)]
            }
            ("watch", 1) => {
                let keys = self.keys_of(args[0]);
                self.s.fn_watched.extend(keys);
                vec![]
            }
            ("exists", 1) => {
                let k = key(self);
                if !ambiguous(self, &k) {
                    return vec![];
                }
                vec![Found::new(OpKind::Exists, k)]
            }
            ("get_del" | "getdel", 1) => vec![Found::new(OpKind::GetDel, key(self))],
            ("incr" | "decr" | "incr_by" | "decr_by" | "incrby" | "decrby", 1 | 2) => {
                let k = key(self);
                if !ambiguous(self, &k) {
                    return vec![];
                }
                vec![Found::new(OpKind::Incr, k)]
            }
            // collections: redis-rs `zadd(k, member, score)`, `sadd(k, m)`, `lpush(k, v)`, …
            (
                "zadd" | "zincr" | "zrem" | "zrembyscore" | "zremrangebyrank" | "sadd" | "srem"
                | "lpush" | "rpush" | "lrem",
                2 | 3,
            ) => {
                let k = key(self);
                if !ambiguous(self, &k) {
                    return vec![];
                }
                vec![Found::new(OpKind::Members, k)]
            }
            // redis-rs `hset_nx(k, field, v)`
            ("hset_nx" | "hsetnx", 3) => {
                let k = key(self);
                if !ambiguous(self, &k) {
                    return vec![];
                }
                vec![Found::new(OpKind::FieldAcquire, k)]
            }
            ("getset" | "get_set", 2) => {
                let k = key(self);
                if !ambiguous(self, &k) {
                    return vec![];
                }
                vec![Found::new(OpKind::GetSet, k)]
            }
            ("eval", 3) => {
                // fred: eval(script, keys, args)
                let k = self.first_key(args[1]);
                if !ambiguous(self, &k) {
                    return vec![];
                }
                let mut f = Found::new(OpKind::Eval { script: None }, k).client(Client::Fred);
                f.script = true;
                vec![f]
            }
            ("evalsha" | "fcall" | "evalsha_with_reload", 3) => {
                let k = self.first_key(args[1]);
                if !ambiguous(self, &k) {
                    return vec![];
                }
                vec![Found::new(OpKind::Eval { script: None }, k)]
            }
            ("eval" | "evalsha" | "fcall", 1) => {
                // rustis: eval(CallBuilder::script(s).keys(k).args(a))
                let (_, links) = flatten(args[0]);
                let Some(l) = links.iter().find(|l| l.method == "keys") else {
                    return vec![];
                };
                let Some(a) = l.args.first() else {
                    return vec![];
                };
                let mut f = Found::new(OpKind::Eval { script: None }, self.first_key(a))
                    .client(Client::Rustis);
                f.script = name == "eval";
                vec![f]
            }
            _ => vec![],
        }
    }

    /// The script handed to a method-style eval, if it resolves.
    fn method_script(&mut self, name: &str, args: &[&Expr]) -> Option<ScriptId> {
        match (name, args.len()) {
            ("eval", 3) => self.script_of(args[0], None),
            ("eval", 1) => {
                let (base, _) = flatten(args[0]);
                let Expr::Call(c) = base else { return None };
                let a = c.args.first()?;
                self.script_of(a, None)
            }
            _ => None,
        }
    }

    /// A raw command: `cmd("SET").arg(..)…`, `Cmd::new().arg("SET")…`.
    fn raw_ops(&mut self, name: &str, args: &[&Expr]) -> (Vec<Found>, Option<ScriptId>) {
        let upper = name.to_ascii_uppercase();
        let key = |w: &Self| {
            args.first()
                .map(|a| w.key_of(a))
                .unwrap_or_else(KeyExpr::unknown)
        };
        let value = |w: &Self, i: usize| args.get(i).map(|a| w.value_of(a));
        let mut script = None;
        let found = match upper.as_str() {
            "SET" if args.len() >= 2 => {
                let mut words: Vec<String> = Vec::new();
                for a in &args[2..] {
                    match self.const_str(a) {
                        Some(s) => words.push(s.to_ascii_uppercase()),
                        None => {
                            // `.arg(opts)` with a `SetOptions` value (ToRedisArgs).
                            let w = self.words_of(a);
                            if w.iter().any(|x| {
                                matches!(x.as_str(), "SetOptions" | "ExistenceCheck" | "SetExpiry")
                            }) {
                                words.extend(w);
                            } else {
                                words.push("?".into());
                            }
                        }
                    }
                }
                let flags = SetFlags::from_words(&words);
                let mut f = Found::new(flags.kind(), key(self));
                f.value = value(self, 1);
                vec![f]
            }
            "SETNX" => {
                let mut f = Found::new(OpKind::Acquire { expiry: false }, key(self));
                f.value = value(self, 1);
                vec![f]
            }
            "SETEX" | "PSETEX" => {
                let mut f = Found::new(OpKind::Set { expiry: true }, key(self));
                f.value = value(self, 2);
                vec![f]
            }
            "DEL" | "UNLINK" => args
                .iter()
                .map(|a| Found::new(OpKind::Release { checked: false }, self.key_of(a)))
                .collect(),
            "DELEX" => {
                let checked = args[1.min(args.len())..].iter().any(|a| {
                    self.const_str(a).is_some_and(|s| {
                        s.eq_ignore_ascii_case("IFEQ") || s.eq_ignore_ascii_case("IFDEQ")
                    })
                });
                vec![Found::new(OpKind::Release { checked }, key(self))]
            }
            "DELIFEQ" => vec![Found::new(OpKind::Release { checked: true }, key(self))],
            "EXPIRE" | "PEXPIRE" | "EXPIREAT" | "PEXPIREAT" => {
                vec![Found::new(OpKind::Expire, key(self))]
            }
            "GET" => vec![Found::new(OpKind::Get, key(self))],
            "GETDEL" => vec![Found::new(OpKind::GetDel, key(self))],
            "GETSET" => vec![Found::new(OpKind::GetSet, key(self))],
            "HSETNX" => vec![Found::new(OpKind::FieldAcquire, key(self))],
            "EXISTS" if args.len() == 1 => vec![Found::new(OpKind::Exists, key(self))],
            "INCR" | "INCRBY" | "INCRBYFLOAT" | "DECR" | "DECRBY" | "HINCRBY" => {
                vec![Found::new(OpKind::Incr, key(self))]
            }
            "ZADD" | "ZINCRBY" | "ZREM" | "ZREMRANGEBYSCORE" | "ZREMRANGEBYRANK" | "SADD"
            | "SREM" | "LPUSH" | "RPUSH" | "LREM" => vec![Found::new(OpKind::Members, key(self))],
            "WATCH" => {
                let keys: Vec<KeyExpr> = args.iter().map(|a| self.key_of(a)).collect();
                self.s.fn_watched.extend(keys);
                vec![]
            }
            "EVAL" | "EVALSHA" | "FCALL" | "EVAL_RO" | "EVALSHA_RO" | "FCALL_RO" => {
                if upper.starts_with("EVAL") && !upper.starts_with("EVALSHA") {
                    if let Some(a) = args.first() {
                        script = self.script_of(a, None);
                    }
                }
                let numkeys = args.get(1).and_then(|a| self.const_str(a));
                if numkeys.as_deref() == Some("0") || args.len() < 3 {
                    vec![]
                } else {
                    let mut f = Found::new(OpKind::Eval { script: None }, self.key_of(args[2]));
                    f.script = true;
                    vec![f]
                }
            }
            _ => vec![],
        };
        let client = Client::RedisRs;
        let found = found
            .into_iter()
            .map(|mut f| {
                if f.client.is_none() && self.info.client() == Client::Unknown {
                    f.client = Some(client);
                }
                f
            })
            .collect();
        (found, script)
    }

    // --- chains ----------------------------------------------------------

    fn chain(&mut self, top: &Expr) {
        let (base, mut links) = flatten(top);
        for l in links.iter_mut() {
            l.end += self.base.get();
        }
        // (the statement's chain in a part of one cut between its calls:
        // its head is in the part's header, before the part's text)
        let cut = self
            .cut_chain
            .filter(|&(_, _, from)| self.span_of(base).end() <= from);
        let chain_start = match cut {
            Some((head, _, _)) => head,
            None => self.span_of(base).start(),
        };
        let ops_before = self.facts.ops.len();
        let has_atomic = links.iter().any(|l| l.method == "atomic");
        let mut atomic = has_atomic;
        let mut acquired: Option<KeyExpr> = None;
        // A pipeline base: every command of the chain is a Redis command.
        let mut pipe_base = false;

        // A command built in a local over several statements.
        let local_raw: Option<(String, RawLocal)> = match base {
            Expr::Path(p) => p.path.get_ident().and_then(|i| {
                let name = i.to_string();
                self.local(&name)
                    .and_then(|l| l.raw.clone())
                    .map(|r| (name, r))
            }),
            _ => None,
        };
        let prefix: Vec<Expr> = local_raw
            .as_ref()
            .map(|(_, r)| r.args.clone())
            .unwrap_or_default();
        let mut consumed = false;
        // The base: a raw command, a pipeline, a script, a local.
        let mut raw: Option<Raw> = local_raw.as_ref().map(|(_, r)| Raw {
            name: r.name.clone(),
            name_span: r.name_span,
            args: prefix.iter().collect(),
            end: self.span_of(base).end(),
        });
        let chain_start = local_raw
            .as_ref()
            .map(|(_, r)| r.start)
            .unwrap_or(chain_start);
        let mut script: Option<Option<ScriptId>> = None;
        match base {
            Expr::Call(c) => {
                let path = call_path(base).unwrap_or_default();
                let n = path.len();
                let last = path.last().map(String::as_str).unwrap_or("");
                let prev = if n >= 2 { path[n - 2].as_str() } else { "" };
                if last == "cmd" && c.args.len() == 1 {
                    if let Some(name) = self.const_str(&c.args[0]) {
                        let ns = match &*c.func {
                            Expr::Path(p) => {
                                p.path.segments.last().map(|s| self.off(s.ident.span()))
                            }
                            _ => None,
                        }
                        .unwrap_or_else(|| self.span_of(base));
                        raw = Some(Raw {
                            name: Some(name),
                            name_span: ns,
                            args: Vec::new(),
                            end: self.span_of(base).end(),
                        });
                    }
                } else if prev == "Cmd" && last == "new" {
                    raw = Some(Raw {
                        name: None,
                        name_span: self.span_of(base),
                        args: Vec::new(),
                        end: self.span_of(base).end(),
                    });
                } else if prev == "Cmd" || COMMAND_TRAITS.contains(&prev) {
                    // `Cmd::del(k)`, or `AsyncCommands::del(&mut con, k)` (the first
                    // argument is the connection).
                    let skip = usize::from(prev != "Cmd");
                    let args: Vec<&Expr> = c.args.iter().skip(skip).collect();
                    let found = self.method_ops(last, &args, None, true);
                    let ns = match &*c.func {
                        Expr::Path(p) => p.path.segments.last().map(|s| self.off(s.ident.span())),
                        _ => None,
                    }
                    .unwrap_or_else(|| self.span_of(base));
                    let sp = Span::new(chain_start, self.span_of(base).end());
                    for f in found {
                        self.emit(f, sp, ns, atomic, None);
                    }
                } else if last == "pipe"
                    || (prev == "Pipeline" && matches!(last, "new" | "with_capacity"))
                {
                    pipe_base = true;
                } else if (prev == "Script" && matches!(last, "new" | "from_lua"))
                    || (prev == "CallBuilder" && last == "script")
                {
                    let id = c.args.first().and_then(|a| self.script_of(a, None));
                    script = Some(id);
                }
            }
            Expr::Path(_) | Expr::Field(_) => {
                if let Some(l) = self.local_of(base) {
                    atomic |= l.atomic;
                    if l.script.is_some() {
                        script = Some(l.script);
                    }
                    acquired = l.acquire.clone();
                } else if let Expr::Path(p) = base {
                    if let Some((_, at)) = self.const_at(&p.path) {
                        if at.script {
                            let id = self.script_of(base, None);
                            script = Some(id);
                        }
                    }
                } else if let Expr::Field(f) = base {
                    if let syn::Member::Named(m) = &f.member {
                        if self.info.script_fields.contains_key(&m.to_string()) {
                            let id = self.script_of(base, None);
                            script = Some(id);
                        }
                    }
                }
            }
            _ => {}
        }

        let mut script_key: Option<(KeyExpr, Span)> = None;
        let mut recv_for: Option<&Expr> = match cut {
            Some((_, false, _)) => None,
            _ => Some(base),
        };
        for l in &links {
            let m = l.method.to_string();
            let ns = self.off(l.method.span());
            let span = Span::new(chain_start, l.end);
            match m.as_str() {
                "arg" if raw.is_some() => {
                    if let (Some(r), Some(a)) = (raw.as_mut(), l.args.first()) {
                        if r.name.is_none() {
                            r.name = self.const_str(a);
                            r.name_span = ns;
                        } else {
                            r.args.push(a);
                        }
                        r.end = l.end;
                    }
                    continue;
                }
                _ if local_raw.is_some() => {
                    if TERMINALS.contains(&m.as_str()) && !consumed {
                        if let Some(r) = raw.as_mut() {
                            r.end = l.end;
                        }
                        self.flush_raw(raw.take(), chain_start, atomic, &mut acquired);
                        consumed = true;
                    }
                    continue;
                }
                "cmd" if l.args.len() == 1 => {
                    self.flush_raw(raw.take(), chain_start, atomic, &mut acquired);
                    if let Some(name) = self.const_str(l.args[0]) {
                        raw = Some(Raw {
                            name: Some(name),
                            name_span: ns,
                            args: Vec::new(),
                            end: l.end,
                        });
                    }
                    continue;
                }
                _ => {}
            }
            self.flush_raw(raw.take(), chain_start, atomic, &mut acquired);
            if let Some(sid) = script {
                match m.as_str() {
                    "key" if script_key.is_none() => {
                        if let Some(a) = l.args.first() {
                            script_key = Some((self.first_key(a), ns));
                        }
                    }
                    "invoke"
                    | "invoke_async"
                    | "prepare_invoke"
                    | "evalsha_with_reload"
                    | "eval" => {
                        let key = match (&script_key, l.args.get(1)) {
                            (Some((k, _)), _) => Some(k.clone()),
                            (None, Some(keys)) if m != "invoke" && m != "invoke_async" => {
                                Some(self.first_key(keys))
                            }
                            _ => None,
                        };
                        if let Some(k) = key {
                            let mut f = Found::new(OpKind::Eval { script: None }, k);
                            f.script = true;
                            if m == "evalsha_with_reload" {
                                f.client = Some(Client::Fred);
                            }
                            self.emit(f, span, ns, atomic, sid);
                            script_key = None;
                        }
                    }
                    _ => {}
                }
                continue;
            }
            // Fail-open conversions of an acquire's result.
            if matches!(
                m.as_str(),
                "unwrap_or" | "unwrap_or_else" | "or" | "or_else"
            ) && l.args.first().is_some_and(|a| truthy(a, 0))
            {
                if let Some(k) = acquired.clone().or_else(|| self.acquire_since(ops_before)) {
                    self.fail_open(Span::new(ns.start(), l.end), k);
                } else {
                    // the result of an acquire helper (`acquire_lock(..)`, `locks.try_lock(..)`)
                    let i = links.iter().position(|x| std::ptr::eq(x, l)).unwrap_or(0);
                    let helper = match i.checked_sub(1).and_then(|p| links.get(p)) {
                        Some(prev) => Some(prev.method.to_string())
                            .filter(|n| acquire_like(n))
                            .map(|_| self.off(prev.method.span()).start()),
                        None => self.helper_acquire(base),
                    };
                    if let Some(at) = helper {
                        self.fail_open_call(at, Span::new(ns.start(), l.end));
                    }
                }
            }
            let found = self.method_ops(&m, &l.args, recv_for, atomic || pipe_base);
            self.link_method(&m, &l.args, recv_for, span, ns, &found);
            let script_id = if found.iter().any(|f| f.script) {
                self.method_script(&m, &l.args)
            } else {
                None
            };
            if !found.is_empty() {
                // Where the call's parts stand, for fixes (`src/fix.rs`).
                let receiver = self.receiver_before(chain_start, ns.start());
                let args: Vec<Span> = l.args.iter().map(|a| self.span_of(*a)).collect();
                self.facts.call_sites.push(span, receiver, args);
            }
            for f in found {
                if matches!(f.kind, OpKind::Acquire { .. }) && acquired.is_none() {
                    acquired = Some(f.key.clone());
                }
                self.emit(f, span, ns, atomic, script_id);
            }
            if m == "custom" && l.args.len() == 2 {
                self.fred_custom(l.args[0], l.args[1], span, ns, atomic);
            }
            recv_for = None;
        }
        if let Some((name, _)) = &local_raw {
            // Not sent yet: keep the arguments on the local for a later `.query`.
            let kept = if consumed {
                None
            } else {
                raw.take()
                    .map(|r| r.args.iter().map(|e| (*e).clone()).collect::<Vec<Expr>>())
            };
            if let Some(l) = self.s.locals.iter_mut().rev().find(|l| &l.name == name) {
                match (kept, l.raw.as_mut()) {
                    (Some(args), Some(lr)) => lr.args = args,
                    _ => l.raw = None,
                }
            }
        }
        self.flush_raw(raw.take(), chain_start, atomic, &mut acquired);
        if let (Some(sid), Some((k, ns))) = (script, script_key) {
            // `script.key(k).arg(t)` bound or returned before the invoke.
            let mut f = Found::new(OpKind::Eval { script: None }, k);
            f.script = true;
            let end = links.last().map(|l| l.end).unwrap_or(chain_start);
            self.emit(f, Span::new(chain_start, end), ns, atomic, sid);
        }
        // Visit the arguments and the base for nested calls and closures.
        self.visit_base(base);
        for l in &links {
            for a in &l.args {
                self.visit_expr(a);
            }
        }
    }

    fn visit_base(&mut self, base: &Expr) {
        match base {
            Expr::Call(c) => {
                // The base call itself was interpreted; still walk into it.
                // A call of a project function is a call site
                // (`acquire_lock(&mut c, k).unwrap_or(true)`).
                let path = call_path(base).unwrap_or_default();
                let n = path.len();
                let last = path.last().map(String::as_str).unwrap_or("");
                let prev = if n >= 2 { path[n - 2].as_str() } else { "" };
                let redis_base = matches!(last, "cmd" | "pipe")
                    || matches!(prev, "Cmd" | "Pipeline" | "Script" | "CallBuilder")
                    || COMMAND_TRAITS.contains(&prev);
                if !redis_base {
                    self.link_path_call(c);
                }
                for a in &c.args {
                    self.visit_expr(a);
                }
                if !matches!(&*c.func, Expr::Path(_)) {
                    self.visit_expr(&c.func);
                }
            }
            _ => self.visit_expr(base),
        }
    }

    fn flush_raw(
        &mut self,
        raw: Option<Raw>,
        chain_start: usize,
        atomic: bool,
        acquired: &mut Option<KeyExpr>,
    ) {
        let Some(r) = raw else { return };
        let Some(name) = r.name else { return };
        let (found, script) = self.raw_ops(&name, &r.args);
        let span = Span::new(chain_start, r.end);
        for f in found {
            if matches!(f.kind, OpKind::Acquire { .. }) && acquired.is_none() {
                *acquired = Some(f.key.clone());
            }
            self.emit(f, span, r.name_span, atomic, script);
        }
    }

    /// fred `custom(CustomCommand::new_static("EVAL", ..), vec![script, 1, key])`.
    fn fred_custom(&mut self, cmd: &Expr, args: &Expr, span: Span, ns: Span, atomic: bool) {
        let Expr::Call(c) = strip(cmd) else { return };
        let Some(name) = c.args.first().and_then(|a| self.const_str(a)) else {
            return;
        };
        let owned: Vec<Expr> = match strip(args) {
            Expr::Array(a) => a.elems.iter().cloned().collect(),
            Expr::Macro(m) if macro_name(&m.mac) == "vec" => macro_exprs(&m.mac.tokens),
            _ => return,
        };
        let refs: Vec<&Expr> = owned.iter().collect();
        let (found, script) = self.raw_ops(&name, &refs);
        for mut f in found {
            f.client = Some(Client::Fred);
            self.emit(f, span, ns, atomic, script);
        }
    }

    // --- lets ------------------------------------------------------------

    fn bind(
        &mut self,
        name: String,
        ty: Option<&syn::Type>,
        init: Option<&Expr>,
        ops_before: usize,
    ) {
        let Some(init) = init else {
            let non_redis = ty.is_some_and(|t| {
                let t = t.to_token_stream().to_string();
                NON_REDIS_TYPES.iter().any(|w| t.contains(w))
            });
            self.s.locals.push(Local {
                key: KeyExpr::var(&name),
                name,
                non_redis,
                ..blank_local()
            });
            return;
        };
        // A binding that produced ops (`let ok = con.set_nx(..)?`) is a result, not a key.
        let produced = self.facts.ops.len() > ops_before;
        let acquire = self.acquire_since(ops_before);
        let mut key = if produced {
            KeyExpr::unknown()
        } else {
            self.key_of(init)
        };
        if key.is_unknown() && !produced {
            key = KeyExpr::var(&name);
        } else if !produced {
            key.idents.push(name.clone());
        } else {
            key = KeyExpr::var(&name);
        }
        let value = match self.value_of(init) {
            ValueExpr::Unknown => words::classify_value_words(&name).unwrap_or(ValueExpr::Unknown),
            v => v,
        };
        let words = self.words_of(init);
        let script = if find_script_new(init).is_some() || matches!(strip(init), Expr::Lit(_)) {
            self.script_of(init, Some(name.clone()))
                .filter(|&id| find_script_new(init).is_some() || self.is_lua(id))
        } else {
            // `let inv = script.prepare_invoke();` keeps the script of its base.
            self.local_of(flatten(init).0).and_then(|l| l.script)
        };
        let (_, links) = flatten(init);
        let base_pipe =
            call_path(flatten(init).0).is_some_and(|p| p.last().is_some_and(|l| l == "pipe"));
        let atomic = links.iter().any(|l| {
            l.method == "multi" || l.method == "create_transaction" || l.method == "atomic"
        }) || (base_pipe && links.iter().any(|l| l.method == "atomic"))
            || self.local_of(init).is_some_and(|l| l.atomic);
        let init_text = self.text_of(init);
        let ty_text = ty
            .map(|t| t.to_token_stream().to_string())
            .unwrap_or_default();
        let non_redis = NON_REDIS_TYPES
            .iter()
            .any(|w| init_text.contains(w) || ty_text.contains(w));
        let str_val = self.const_str(init);
        let list = match strip(init) {
            Expr::Array(_) | Expr::Tuple(_) => true,
            Expr::Macro(m) => macro_name(&m.mac) == "vec",
            _ => false,
        };
        let keys = if list { self.keys_of(init) } else { Vec::new() };
        let raw = if produced { None } else { self.raw_local(init) };
        self.s.locals.push(Local {
            keys,
            raw,
            name,
            key,
            value,
            str_val,
            words,
            script,
            atomic,
            acquire,
            non_redis,
        });
    }

    fn expr_call(&mut self, e: &Expr, c: &syn::ExprCall) {
        let path = match &*c.func {
            Expr::Path(p) => path_idents(&p.path),
            _ => Vec::new(),
        };
        let last = path.last().map(String::as_str).unwrap_or("");
        let closure = c.args.iter().rev().find(|a| matches!(a, Expr::Closure(_)));
        if matches!(last, "transaction" | "transaction_async") && c.args.len() >= 3 {
            if let Some(cl) = closure {
                let watched = c
                    .args
                    .iter()
                    .nth(1)
                    .map(|k| self.keys_of(k))
                    .unwrap_or_default();
                for a in c.args.iter() {
                    if !std::ptr::eq(a, cl) {
                        self.visit_expr(a);
                    }
                }
                self.s.txns.push(Txn { watched });
                self.visit_expr(cl);
                self.s.txns.pop();
                return;
            }
        }
        // `cmd("DEL")` used without a chain, `Cmd::set_nx(..)`, `Script::new(..)`.
        let interesting = last == "cmd"
            || path.len() >= 2
                && (matches!(path[path.len() - 2].as_str(), "Cmd" | "Script")
                    || COMMAND_TRAITS.contains(&path[path.len() - 2].as_str()));
        if interesting {
            self.chain(e);
            return;
        }
        self.link_path_call(c);
        visit::visit_expr_call(self, c);
    }

    /// `cmd("SET").arg(k)` or `Cmd::new().arg("SET")` bound to a local before it is sent.
    fn raw_local(&self, init: &Expr) -> Option<RawLocal> {
        let (base, links) = flatten(init);
        let Expr::Call(c) = base else { return None };
        let path = call_path(base)?;
        let n = path.len();
        let last = path.last()?.as_str();
        let prev = if n >= 2 { path[n - 2].as_str() } else { "" };
        let func_span = match &*c.func {
            Expr::Path(p) => p.path.segments.last().map(|s| self.off(s.ident.span())),
            _ => None,
        }
        .unwrap_or_else(|| self.span_of(base));
        let mut r = if last == "cmd" && c.args.len() == 1 {
            RawLocal {
                name: Some(self.const_str(&c.args[0])?),
                name_span: func_span,
                args: Vec::new(),
                start: self.span_of(base).start(),
            }
        } else if prev == "Cmd" && last == "new" {
            RawLocal {
                name: None,
                name_span: func_span,
                args: Vec::new(),
                start: self.span_of(base).start(),
            }
        } else {
            return None;
        };
        for l in &links {
            if l.method != "arg" {
                return None;
            }
            let a = l.args.first()?;
            if r.name.is_none() {
                r.name = self.const_str(a);
                r.name_span = self.off(l.method.span());
            } else {
                r.args.push((*a).clone());
            }
        }
        Some(r)
    }

    fn is_lua(&self, id: ScriptId) -> bool {
        self.facts
            .scripts
            .get(id as usize)
            .is_some_and(|s| looks_like_lua(&s.text))
    }
}

/// How many tokens [`Walker::words_of`] reads of an expression, and how
/// many words a `let` cut into parts keeps of its value's parts.
const MAX_WORD_TOKENS: usize = 4096;

/// Types (and constructors) of values that are not Redis connections.
const NON_REDIS_TYPES: &[&str] = &[
    "HashMap", "BTreeMap", "HashSet", "BTreeSet", "IndexMap", "IndexSet", "DashMap", "Vec", "vec!",
    "LruCache", "Cache", "VecDeque", "Mutex", "RwLock",
];

// --- absence guards (a write that runs only where a check found the key absent)

impl Walker<'_, '_> {
    /// Visits a block's statements; after an `if` that exits while the key
    /// is present (`if exists(k) { return }`) the rest runs only when absent.
    fn visit_stmts(&mut self, stmts: &[syn::Stmt]) {
        let mut exits: Vec<(usize, usize)> = Vec::new();
        self.visit_stmts_in(stmts, &mut exits);
        self.guard_exits(exits);
    }

    /// [`Walker::visit_stmts`] over a part of a block: its exits (the
    /// check, the first op after the `if`) are added to `exits`.
    fn visit_stmts_in(&mut self, stmts: &[syn::Stmt], exits: &mut Vec<(usize, usize)>) {
        for s in stmts {
            self.s.exit_guard = None;
            self.visit_stmt(s);
            if let Some(check) = self.s.exit_guard.take() {
                if matches!(s, syn::Stmt::Expr(Expr::If(_), _)) {
                    exits.push((check, self.facts.ops.len()));
                }
            }
        }
    }

    /// At the end of a block: the ops after each exit to its end guarded.
    fn guard_exits(&mut self, exits: Vec<(usize, usize)>) {
        let end = self.facts.ops.len();
        for (check, from) in exits {
            self.guard_ops(check, from..end, self.s.depth);
        }
    }

    /// The block-like statement cut into parts that `e` is, if it is the
    /// next one the piece is a part of: its depth among them, whether
    /// this is its first part and its last.
    fn split_of<T: Spanned>(&self, e: &T) -> Option<(usize, bool, bool)> {
        let s = self.split.get(self.split_next)?;
        (self.span_of(e).start() == s.at).then_some((self.split_next, s.first, s.last))
    }

    /// The part of an `if` cut into parts that `i` holds (the statement at
    /// `depth`): walked as [`Visit::visit_expr_if`] walks a whole one, its
    /// condition at the first part, its branch entered there and left at
    /// the last, which holds the `else`s. (The cutter leaves an `if` whose
    /// condition tests an `Err` whole: whether it fails open is read over
    /// the whole branch.)
    fn visit_split_if(&mut self, i: &syn::ExprIf, split: (usize, bool, bool)) {
        let mut open = OpenBlock::default();
        if split.1 {
            let before = self.facts.ops.len();
            self.visit_expr(&i.cond);
            open.test = self.absence_test(&i.cond, before, 0);
            open.then_from = self.facts.ops.len();
        }
        let Some(open) = self.visit_split_body(&i.then_branch, split, open) else {
            return;
        };
        let else_from = self.facts.ops.len();
        if let Some((_, e)) = &i.else_branch {
            self.visit_expr(e);
        }
        self.guard_if(i, open.test, (open.then_from, else_from), || {
            open.branch_exits
        });
    }

    /// A `match` walked, whole or (`split`) the arms of one of its parts:
    /// the scrutinee is read at its first part, what it acquires kept for
    /// the arms of the others.
    fn walk_match(&mut self, m: &syn::ExprMatch, split: Option<(usize, bool, bool)>) {
        let (acquired, helper) = match split {
            Some((depth, false, _)) => {
                let open = self.take_open(depth);
                (open.acquired, open.helper)
            }
            _ => self.match_scrutinee(m),
        };
        if acquired.is_some() || helper.is_some() {
            for arm in &m.arms {
                if is_err_pat(&arm.pat) && truthy(&arm.body, 0) {
                    let s = self.span_of(&arm.pat).start();
                    let e = self.span_of(&*arm.body).end();
                    match (&acquired, helper) {
                        (Some(k), _) => self.fail_open(Span::new(s, e.max(s)), k.clone()),
                        (None, Some(at)) => self.fail_open_call(at, Span::new(s, e.max(s))),
                        _ => {}
                    }
                }
            }
        }
        for arm in &m.arms {
            self.visit_arm(arm);
        }
        match split {
            Some((depth, _, true)) => self.s.open_blocks.truncate(depth),
            Some((depth, _, false)) => self.keep_open(
                depth,
                OpenBlock {
                    acquired,
                    helper,
                    ..OpenBlock::default()
                },
            ),
            None => {}
        }
    }

    /// The part of a `let` whose value is a `match` or an `if` cut into
    /// parts that `l` holds (the statement at `depth`): the value's part
    /// walked as [`Walker::walk_match`] and [`Walker::visit_split_if`] walk
    /// theirs, the name bound at its last part to what the whole value
    /// did (its ops from the first part on).
    fn visit_split_let(&mut self, l: &syn::Local, split: (usize, bool, bool)) {
        let (depth, first, last) = split;
        let (before, mut words, mut non_redis) = match self.s.open_blocks.get_mut(depth) {
            Some(o) if !first => (
                o.let_from,
                std::mem::take(&mut o.let_words),
                o.let_non_redis,
            ),
            _ => (self.facts.ops.len(), Vec::new(), false),
        };
        let Some(init) = l.init.as_ref().map(|i| &*i.expr) else {
            return;
        };
        match init {
            Expr::Match(m) => self.walk_match(m, Some(split)),
            Expr::If(i) => self.visit_split_if(i, split),
            _ => self.visit_expr(init),
        }
        if !last {
            words.extend(self.words_of(init));
            words.truncate(MAX_WORD_TOKENS);
            let text = self.text_of(init);
            non_redis |= NON_REDIS_TYPES.iter().any(|w| text.contains(w));
            if let Some(o) = self.s.open_blocks.get_mut(depth) {
                o.let_from = before;
                o.let_words = words;
                o.let_non_redis = non_redis;
            }
            return;
        }
        let ty = match &l.pat {
            Pat::Type(t) => Some(&*t.ty),
            _ => None,
        };
        if let Some(name) = pat_name(&l.pat) {
            self.s.checks.retain(|(n, _)| *n != name);
            self.bind(name, ty, Some(init), before);
            // (what the earlier parts held, on the local just bound)
            if let Some(local) = self.s.locals.last_mut() {
                words.append(&mut local.words);
                words.truncate(MAX_WORD_TOKENS);
                local.words = words;
                local.non_redis |= non_redis;
            }
        }
    }

    /// The `let` cut into parts that `l` is, as [`Walker::split_of`] (its
    /// start read from its first token, not from all of them).
    fn split_of_let(&self, l: &syn::Local) -> Option<(usize, bool, bool)> {
        let s = self.split.get(self.split_next)?;
        let first = l
            .attrs
            .first()
            .map_or(l.let_token.span, |a| a.pound_token.span);
        (self.off(first).start() == s.at).then_some((self.split_next, s.first, s.last))
    }

    /// A `match`'s scrutinee walked: the acquire whose result it is, or
    /// where the call of a helper that may return one starts.
    fn match_scrutinee(&mut self, m: &syn::ExprMatch) -> (Option<KeyExpr>, Option<usize>) {
        let before = self.facts.ops.len();
        self.visit_expr(&m.expr);
        let acquired = self
            .acquire_since(before)
            .or_else(|| self.local_of(&m.expr).and_then(|l| l.acquire.clone()));
        let helper = acquired
            .is_none()
            .then(|| self.helper_acquire(&m.expr))
            .flatten();
        (acquired, helper)
    }

    /// What the first part of the statement at `depth` left.
    fn take_open(&mut self, depth: usize) -> OpenBlock {
        self.s
            .open_blocks
            .get_mut(depth)
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Keeps what the statement at `depth` holds for its next part.
    fn keep_open(&mut self, depth: usize, open: OpenBlock) {
        if self.s.open_blocks.len() <= depth {
            self.s
                .open_blocks
                .resize_with(depth + 1, OpenBlock::default);
        }
        self.s.open_blocks[depth] = open;
    }

    /// The part of a body cut into parts that `b` holds (the body of the
    /// statement at `depth`): walked as [`Visit::visit_block`] walks a
    /// whole one, entered at the first part and left at the last.
    /// `open` is what the statement's header left at its first part (an
    /// `if`'s test); at the last, what was gathered comes back.
    fn visit_split_body(
        &mut self,
        b: &syn::Block,
        (depth, first, last): (usize, bool, bool),
        open: OpenBlock,
    ) -> Option<OpenBlock> {
        let mut open = if first {
            self.s.depth += 1;
            OpenBlock {
                locals: self.s.locals.len(),
                ..open
            }
        } else {
            self.take_open(depth)
        };
        open.branch_exits |= block_exits(b);
        self.split_next += 1;
        self.visit_stmts_in(&b.stmts, &mut open.exits);
        self.split_next -= 1;
        if !last {
            self.keep_open(depth, open);
            return None;
        }
        self.guard_exits(std::mem::take(&mut open.exits));
        self.s.locals.truncate(open.locals);
        self.s.depth -= 1;
        self.s.open_blocks.truncate(depth);
        Some(open)
    }

    /// After an `if`: the ops its condition's absence test guards (its
    /// branch's when the test finds the key absent, else its plain
    /// `else`'s), and an exit while the key is present for the statements
    /// after it.
    fn guard_if(
        &mut self,
        i: &syn::ExprIf,
        test: Option<(usize, bool)>,
        (then_from, else_from): (usize, usize),
        branch_exits: impl FnOnce() -> bool,
    ) {
        let Some((check, absent)) = test else {
            return;
        };
        let end = self.facts.ops.len();
        let inner = self.s.depth + 1;
        let plain_else = matches!(&i.else_branch, Some((_, e)) if matches!(**e, Expr::Block(_)));
        if absent {
            self.guard_ops(check, then_from..else_from, inner);
        } else {
            if plain_else {
                self.guard_ops(check, else_from..end, inner);
            }
            if i.else_branch.is_none() && branch_exits() {
                self.s.exit_guard = Some(check);
            }
        }
    }

    /// The `EXISTS`/`GET` op (its index) whose result `e` is: the call itself
    /// (through `?`, `.await`, `.unwrap()`, parentheses) emitted since
    /// `from`, or a local bound to one.
    fn check_in(&self, e: &Expr, from: usize) -> Option<usize> {
        let e = peel_result(e);
        if let Expr::Path(p) = e {
            let name = p.path.get_ident()?.to_string();
            return self
                .s
                .checks
                .iter()
                .rev()
                .find(|(n, _)| *n == name)
                .map(|(_, i)| *i);
        }
        if !matches!(e, Expr::MethodCall(_) | Expr::Call(_)) {
            return None;
        }
        let sp = self.span_of(e);
        let ops = &self.facts.ops;
        (from.min(ops.len())..ops.len()).rev().find(|&i| {
            matches!(ops[i].kind, OpKind::Get | OpKind::Exists)
                && sp.start() <= ops[i].name_span.start()
                && ops[i].name_span.end() <= sp.end()
        })
    }

    /// A condition that tests a check's result: the check and whether the
    /// condition holds exactly when the key is absent (`true`) or present.
    fn absence_test(&self, e: &Expr, from: usize, d: u32) -> Option<(usize, bool)> {
        if d > 8 {
            return None;
        }
        let is_exists = |c: usize| self.facts.ops.get(c).map(|o| &o.kind) == Some(&OpKind::Exists);
        match e {
            Expr::Paren(p) => self.absence_test(&p.expr, from, d + 1),
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Not(_)) => self
                .absence_test(&u.expr, from, d + 1)
                .map(|(c, a)| (c, !a)),
            Expr::MethodCall(m)
                if m.args.is_empty()
                    && matches!(
                        m.method.to_string().as_str(),
                        "is_none" | "is_some" | "is_empty"
                    ) =>
            {
                let c = self.check_in(&m.receiver, from)?;
                (!is_exists(c)).then_some((c, m.method != "is_some"))
            }
            Expr::Let(l) => {
                let c = self.check_in(&l.expr, from)?;
                if is_exists(c) {
                    return None;
                }
                let pat = l.pat.to_token_stream().to_string();
                if pat.starts_with("Some") {
                    Some((c, false))
                } else if pat == "None" {
                    Some((c, true))
                } else {
                    None
                }
            }
            Expr::Binary(b) => {
                let lit = |x: &Expr| match strip(x) {
                    Expr::Lit(l) => Some(l.lit.to_token_stream().to_string()),
                    _ => None,
                };
                let (probe, lit, flipped) = match (lit(&b.left), lit(&b.right)) {
                    (None, Some(l)) => (&*b.left, l, false),
                    (Some(l), None) => (&*b.right, l, true),
                    _ => return None,
                };
                let c = self.check_in(probe, from)?;
                if !is_exists(c) {
                    return None;
                }
                let zero = lit == "0" || lit == "false";
                let one = lit == "1" || lit == "true";
                let absent = match b.op {
                    syn::BinOp::Eq(_) if zero => true,
                    syn::BinOp::Eq(_) if one => false,
                    syn::BinOp::Ne(_) if zero => false,
                    syn::BinOp::Ne(_) if one => true,
                    syn::BinOp::Gt(_) if zero && !flipped => false,
                    syn::BinOp::Lt(_) if zero && flipped => false,
                    _ => return None,
                };
                Some((c, absent))
            }
            _ => {
                let c = self.check_in(e, from)?;
                is_exists(c).then_some((c, false))
            }
        }
    }

    /// Records the plain writes among `ops[range]` of the check's key, at
    /// block depth `depth` (not under a further condition), as guarded by it.
    fn guard_ops(&mut self, check: usize, range: std::ops::Range<usize>, depth: u32) {
        let Some(c) = self.facts.ops.get(check) else {
            return;
        };
        let (cspan, scope) = (c.name_span, c.scope);
        let Some(ops) = self.facts.ops.get(range) else {
            return;
        };
        let writes: Vec<Span> = ops
            .iter()
            .filter(|o| {
                matches!(o.kind, OpKind::Set { .. })
                    && o.scope == scope
                    && o.depth() == depth
                    && o.key.parts == self.facts.ops[check].key.parts
            })
            .map(|o| o.name_span)
            .collect();
        for w in writes {
            self.facts.absence_guards.push(AbsenceGuard {
                check: cspan,
                write: w,
            });
        }
    }
}

/// `?`, `.await`, parentheses and `unwrap`-like calls around a reply.
fn peel_result(mut e: &Expr) -> &Expr {
    for _ in 0..16 {
        e = match e {
            Expr::Paren(p) => &p.expr,
            Expr::Try(t) => &t.expr,
            Expr::Await(a) => &a.base,
            Expr::MethodCall(m)
                if matches!(
                    m.method.to_string().as_str(),
                    "unwrap" | "unwrap_or_default" | "unwrap_or" | "expect"
                ) =>
            {
                &m.receiver
            }
            _ => return e,
        };
    }
    e
}

/// The block leaves unconditionally at its own level (`return`, `break`,
/// `continue`, `bail!`).
fn block_exits(b: &syn::Block) -> bool {
    b.stmts.iter().any(|s| match s {
        syn::Stmt::Expr(Expr::Return(_) | Expr::Break(_) | Expr::Continue(_), _) => true,
        syn::Stmt::Macro(m) => {
            let n = macro_name(&m.mac);
            n == "bail" || n == "panic"
        }
        syn::Stmt::Expr(Expr::Macro(m), _) => {
            let n = macro_name(&m.mac);
            n == "bail" || n == "panic"
        }
        _ => false,
    })
}

/// A string that is a Redis Lua script: it calls `redis.call`/`redis.pcall`
/// (or Valkey's `server.call`/`server.pcall`).
fn looks_like_lua(text: &str) -> bool {
    ["redis.call", "redis.pcall", "server.call", "server.pcall"]
        .iter()
        .any(|w| text.contains(w))
}

fn blank_local() -> Local {
    Local {
        name: String::new(),
        key: KeyExpr::unknown(),
        value: ValueExpr::Unknown,
        str_val: None,
        words: Vec::new(),
        script: None,
        atomic: false,
        acquire: None,
        non_redis: false,
        keys: Vec::new(),
        raw: None,
    }
}

struct Raw<'e> {
    name: Option<String>,
    name_span: Span,
    args: Vec<&'e Expr>,
    end: usize,
}

impl<'ast> Visit<'ast> for Walker<'_, '_> {
    fn visit_item_fn(&mut self, i: &'ast syn::ItemFn) {
        self.with_fn(&i.sig, &i.attrs, &i.block);
    }

    fn visit_impl_item_fn(&mut self, i: &'ast syn::ImplItemFn) {
        self.with_fn(&i.sig, &i.attrs, &i.block);
    }

    fn visit_trait_item_fn(&mut self, i: &'ast syn::TraitItemFn) {
        if let Some(b) = &i.default {
            self.with_fn(&i.sig, &i.attrs, b);
        }
    }

    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        let owner = type_name(&i.self_ty);
        let test = is_test_attrs(&i.attrs);
        self.with_owner(owner, test, |w| visit::visit_item_impl(w, i));
    }

    fn visit_item_trait(&mut self, i: &'ast syn::ItemTrait) {
        let test = is_test_attrs(&i.attrs);
        self.with_owner(Some(i.ident.to_string()), test, |w| {
            visit::visit_item_trait(w, i)
        });
    }

    fn visit_item_mod(&mut self, i: &'ast syn::ItemMod) {
        let test = is_test_attrs(&i.attrs);
        self.with_owner(Some(i.ident.to_string()), test, |w| {
            visit::visit_item_mod(w, i)
        });
    }

    fn visit_item_const(&mut self, i: &'ast syn::ItemConst) {
        if let Expr::Lit(syn::ExprLit {
            lit: Lit::Str(s), ..
        }) = &*i.expr
        {
            if !self.s.in_test && looks_like_lua(&s.value()) {
                self.register_script(s, Some(i.ident.to_string()));
            }
        }
        visit::visit_item_const(self, i);
    }

    fn visit_item_static(&mut self, i: &'ast syn::ItemStatic) {
        if let Expr::Lit(syn::ExprLit {
            lit: Lit::Str(s), ..
        }) = &*i.expr
        {
            if !self.s.in_test && looks_like_lua(&s.value()) {
                self.register_script(s, Some(i.ident.to_string()));
            }
        }
        visit::visit_item_static(self, i);
    }

    fn visit_lit_str(&mut self, s: &'ast syn::LitStr) {
        if !self.s.in_test {
            let v = s.value();
            if looks_like_lua(&v) {
                self.register_script(s, None);
            }
        }
    }

    fn visit_attribute(&mut self, _: &'ast syn::Attribute) {
        // Doc comments and attributes hold no calls.
    }

    fn visit_block(&mut self, b: &'ast syn::Block) {
        self.s.depth += 1;
        let n = self.s.locals.len();
        self.visit_stmts(&b.stmts);
        self.s.locals.truncate(n);
        self.s.depth -= 1;
    }

    fn visit_arm(&mut self, a: &'ast syn::Arm) {
        let block = matches!(&*a.body, Expr::Block(_));
        if !block {
            self.s.depth += 1;
        }
        visit::visit_arm(self, a);
        if !block {
            self.s.depth -= 1;
        }
    }

    fn visit_expr_closure(&mut self, c: &'ast syn::ExprClosure) {
        let n = self.s.locals.len();
        visit::visit_expr_closure(self, c);
        self.s.locals.truncate(n);
    }

    fn visit_local(&mut self, l: &'ast syn::Local) {
        if let Some(split) = self.split_of_let(l) {
            return self.visit_split_let(l, split);
        }
        let before = self.facts.ops.len();
        let init = l.init.as_ref().map(|i| &*i.expr);
        if let Some(i) = &l.init {
            // A command still being built is sent later, from the local.
            if self.raw_local(&i.expr).is_none() {
                self.visit_expr(&i.expr);
            }
            if let Some((_, d)) = &i.diverge {
                self.visit_expr(d);
            }
        }
        let ty = match &l.pat {
            Pat::Type(t) => Some(&*t.ty),
            _ => None,
        };
        if let Some(name) = pat_name(&l.pat) {
            self.s.checks.retain(|(n, _)| *n != name);
            if let Some(check) = init.and_then(|e| self.check_in(e, before)) {
                self.s.checks.push((name.clone(), check));
            }
            self.bind(name, ty, init, before);
        }
    }

    fn visit_expr(&mut self, e: &'ast Expr) {
        match e {
            Expr::MethodCall(m) => {
                // `p.atomic();` on a pipeline local makes later ops on `p` atomic.
                if m.method == "atomic" {
                    if let Expr::Path(p) = strip(&m.receiver) {
                        if let Some(i) = p.path.get_ident() {
                            let name = i.to_string();
                            if let Some(l) = self.s.locals.iter_mut().rev().find(|l| l.name == name)
                            {
                                l.atomic = true;
                            }
                        }
                    }
                }
                self.chain(e);
            }
            Expr::Call(c) => self.expr_call(e, c),
            Expr::Binary(b) if matches!(b.op, syn::BinOp::Or(_)) => {
                // `res.is_err() || res.unwrap()`: an error counts as acquired.
                let before = self.facts.ops.len();
                visit::visit_expr(self, e);
                let err_side = [&*b.left, &*b.right].into_iter().find_map(|side| {
                    let Expr::MethodCall(m) = strip(side) else {
                        return None;
                    };
                    if m.method != "is_err" || !m.args.is_empty() {
                        return None;
                    }
                    let (base, _) = flatten(&m.receiver);
                    self.local_of(base)
                        .and_then(|l| l.acquire.clone())
                        .or_else(|| self.acquire_since(before))
                });
                if let Some(k) = err_side {
                    let sp = self.span_of(e);
                    self.fail_open(sp, k);
                }
            }
            Expr::Assign(a) => {
                visit::visit_expr(self, e);
                // `opts = opts.with_expiration(..)`: the options grow.
                if let Expr::Path(p) = &*a.left {
                    if let Some(i) = p.path.get_ident() {
                        let name = i.to_string();
                        let words = self.words_of(&a.right);
                        if let Some(l) = self.s.locals.iter_mut().rev().find(|l| l.name == name) {
                            // (as many as one value's: a router assigned
                            // 8,000 times kept every call's words)
                            l.words.extend(words);
                            l.words.truncate(MAX_WORD_TOKENS);
                        }
                    }
                }
            }
            _ => visit::visit_expr(self, e),
        }
    }

    fn visit_expr_for_loop(&mut self, f: &'ast syn::ExprForLoop) {
        let Some(split) = self.split_of(f) else {
            return visit::visit_expr_for_loop(self, f);
        };
        if split.1 {
            self.visit_pat(&f.pat);
            self.visit_expr(&f.expr);
        }
        self.visit_split_body(&f.body, split, OpenBlock::default());
    }

    fn visit_expr_while(&mut self, w: &'ast syn::ExprWhile) {
        let Some(split) = self.split_of(w) else {
            return visit::visit_expr_while(self, w);
        };
        if split.1 {
            self.visit_expr(&w.cond);
        }
        self.visit_split_body(&w.body, split, OpenBlock::default());
    }

    fn visit_expr_loop(&mut self, l: &'ast syn::ExprLoop) {
        match self.split_of(l) {
            Some(split) => {
                self.visit_split_body(&l.body, split, OpenBlock::default());
            }
            None => visit::visit_expr_loop(self, l),
        }
    }

    fn visit_expr_block(&mut self, b: &'ast syn::ExprBlock) {
        match self.split_of(b) {
            Some(split) => {
                self.visit_split_body(&b.block, split, OpenBlock::default());
            }
            None => visit::visit_expr_block(self, b),
        }
    }

    fn visit_expr_unsafe(&mut self, u: &'ast syn::ExprUnsafe) {
        match self.split_of(u) {
            Some(split) => {
                self.visit_split_body(&u.block, split, OpenBlock::default());
            }
            None => visit::visit_expr_unsafe(self, u),
        }
    }

    fn visit_expr_match(&mut self, m: &'ast syn::ExprMatch) {
        let split = self.split_of(m);
        self.walk_match(m, split);
    }

    fn visit_expr_if(&mut self, i: &'ast syn::ExprIf) {
        if let Some(split) = self.split_of(i) {
            return self.visit_split_if(i, split);
        }
        let before = self.facts.ops.len();
        self.visit_expr(&i.cond);
        if let Expr::Let(l) = &*i.cond {
            if is_err_pat(&l.pat) && block_truthy(&i.then_branch, 0) {
                let acquired = self
                    .acquire_since(before)
                    .or_else(|| self.local_of(&l.expr).and_then(|x| x.acquire.clone()));
                if let Some(k) = acquired {
                    let s = self.span_of(&l.pat).start();
                    let e = self.span_of(&i.then_branch).end();
                    self.fail_open(Span::new(s, e.max(s)), k);
                }
            }
        }
        let test = self.absence_test(&i.cond, before, 0);
        let then_from = self.facts.ops.len();
        self.visit_block(&i.then_branch);
        let else_from = self.facts.ops.len();
        if let Some((_, e)) = &i.else_branch {
            self.visit_expr(e);
        }
        self.guard_if(i, test, (then_from, else_from), || {
            block_exits(&i.then_branch)
        });
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        let name = macro_name(m);
        if name == "macro_rules" {
            return;
        }
        if name == "matches" {
            // its scrutinee only: the rest is a pattern, which calls
            // nothing (read as an expression, stalwart's `A | B | …` of
            // 130 paths was a tree of 0.25 MB, and `Some(x)` a call)
            let scrutinee = m.parse_body_with(|input: syn::parse::ParseStream| {
                let e: Expr = input.parse()?;
                input.parse::<proc_macro2::TokenStream>()?;
                Ok(e)
            });
            if let Ok(e) = scrutinee {
                self.visit_expr(&e);
            }
            return;
        }
        for_each_macro_expr(m, |e| self.visit_expr(e));
    }

    fn visit_item_macro(&mut self, i: &'ast syn::ItemMacro) {
        if macro_name(&i.mac) == "lazy_static" {
            for (name, e) in lazy_statics(&i.mac.tokens) {
                if !self.s.in_test {
                    if let Some(arg) = find_script_new(&e) {
                        self.script_of(arg, Some(name));
                    }
                }
                self.visit_expr(&e);
            }
            return;
        }
        if std::mem::take(&mut self.part_of_macro) {
            for_each_macro_part(&i.mac, |e| self.visit_expr(e));
            return;
        }
        if i.ident.is_none() {
            self.visit_macro(&i.mac);
        }
    }
}

/// A function name that reads like an acquire (`acquire_lock`, `try_lock`,
/// `set_nx_lock`): its call may return an acquire's result.
fn acquire_like(name: &str) -> bool {
    crate::words::is_acquire_fn(name) || crate::project::link::says_redis(name)
}
