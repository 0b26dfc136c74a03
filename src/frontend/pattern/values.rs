//! Keys and values: bindings (constants of the file, locals bound once),
//! key normalisation across concatenation, format calls and interpolation,
//! and the classification of written values (constant, unique, weak).

use super::calls::Structure;
use super::lexer::{self, Kind, StrPart, Tok, Toks};
use crate::facts::{KeyExpr, KeyPart, Language, ValueExpr};
use crate::words::{self, holds};
use rustc_hash::FxHashMap as HashMap;
use std::borrow::Cow;

/// A binding `name = expr`: the token range of `expr` in the token stream
/// it was found in (`sub` for bindings found in a re-lexed snippet: none).
#[derive(Clone, Copy, Debug)]
pub struct Binding {
    pub start: usize,
    pub end: usize,
}

impl Binding {
    /// Index of the `=` token (the right-hand side starts after it).
    pub fn eq(&self) -> usize {
        self.start - 1
    }
}

pub struct Values<'a> {
    pub src: &'a str,
    pub toks: Toks<'a>,
    pub st: &'a Structure,
    pub lang: Language,
    /// (scope, normalised name) → every binding of it in that scope, in
    /// source order ([`Values::bindings`]).
    bindings: HashMap<BindKey, Bind>,
    /// Go `v, err := call(…)`: (scope, `v`) → every such binding, for the
    /// value's words only (`raw, err := json.Marshal(b)` is serialised data);
    /// never a key.
    result_values: HashMap<BindKey, Bind>,
    /// The names of [`Values::bindings`]' and [`Values::result_values`]'
    /// keys that normalising wrote anew (`this.x`): the keys point into
    /// them, so they are kept as long as the maps and never changed.
    names: Vec<Box<str>>,
    /// The bindings of the names of both maps that are bound more than
    /// once ([`Bind::MANY`]).
    many: Vec<Vec<Bind>>,
    /// Same-file helpers whose body returns one expression. (Sorted by
    /// name, a name at most once.)
    helpers: Vec<Helper>,
    /// (scope, normalised name) of names a function declares without a
    /// single resolvable binding: parameters, `for` targets, multi-assignment
    /// targets. They shadow file-level bindings of the same name.
    locals: ScopedNames<'a>,
    /// Names being resolved right now: `key = "lock:" + key` refers to the
    /// previous value (a parameter) inside its own right-hand side.
    resolving: std::cell::RefCell<Vec<String>>,
}

/// A (scope, name) key of [`Values::bindings`] and [`Values::locals`],
/// looked up without building a `String`: `(u32, String)` borrows as this,
/// and so does `(u32, &str)`. Both hash as the tuple does (the scope, then
/// the name as a `str`), so a borrowed key finds the owned one.
pub trait ScopedName {
    fn scope(&self) -> u32;
    fn name(&self) -> &str;
}

impl ScopedName for (u32, String) {
    fn scope(&self) -> u32 {
        self.0
    }
    fn name(&self) -> &str {
        &self.1
    }
}

impl ScopedName for (u32, Cow<'_, str>) {
    fn scope(&self) -> u32 {
        self.0
    }
    fn name(&self) -> &str {
        &self.1
    }
}

impl ScopedName for (u32, &str) {
    fn scope(&self) -> u32 {
        self.0
    }
    fn name(&self) -> &str {
        self.1
    }
}

impl<'a> std::borrow::Borrow<dyn ScopedName + 'a> for (u32, String) {
    fn borrow(&self) -> &(dyn ScopedName + 'a) {
        self
    }
}

impl<'a, 'b: 'a> std::borrow::Borrow<dyn ScopedName + 'a> for (u32, Cow<'b, str>) {
    fn borrow(&self) -> &(dyn ScopedName + 'a) {
        self
    }
}

impl std::hash::Hash for dyn ScopedName + '_ {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.scope().hash(h);
        self.name().hash(h);
    }
}

impl PartialEq for dyn ScopedName + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.scope() == other.scope() && self.name() == other.name()
    }
}

impl Eq for dyn ScopedName + '_ {}

/// A key of [`Values::bindings`]: a scope and a normalised name, 16
/// bytes (a `(u32, Cow<str>)` took 32, and a minified bundle binds a name
/// every eighty bytes). The name is a slice of the source or of one of
/// [`Values::names`] (both outlive the map and never move), held as a
/// pointer and a length. It hashes and compares as `(scope, name)` does,
/// the way the `(u32, Cow<str>)` key did: the map's order (which the
/// passes over every binding follow) is the same.
#[derive(Clone, Copy)]
struct BindKey {
    ptr: std::ptr::NonNull<u8>,
    len: u32,
    scope: u32,
}

impl BindKey {
    /// The key of `name`: a slice of the source or of a [`Values::names`]
    /// entry (a name is a token's text, shorter than the 256 MiB the
    /// lexer reads, or made of one).
    fn new(scope: u32, name: &str) -> BindKey {
        BindKey {
            ptr: std::ptr::NonNull::from(name.as_bytes()).cast(),
            len: name.len() as u32,
            scope,
        }
    }
    fn name(&self) -> &str {
        // SAFETY: `ptr` and `len` are those of a `str` that outlives the
        // map holding this key and is never moved or changed
        // (`BindKey::new`: the source, or a boxed name of
        // `Values::names`), and a key is only read through its map.
        unsafe {
            std::str::from_utf8_unchecked(std::slice::from_raw_parts(
                self.ptr.as_ptr(),
                self.len as usize,
            ))
        }
    }
}

impl ScopedName for BindKey {
    fn scope(&self) -> u32 {
        self.scope
    }
    fn name(&self) -> &str {
        BindKey::name(self)
    }
}

impl<'a> std::borrow::Borrow<dyn ScopedName + 'a> for BindKey {
    fn borrow(&self) -> &(dyn ScopedName + 'a) {
        self
    }
}

impl std::hash::Hash for BindKey {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        // as `(u32, Cow<str>)` hashes
        self.scope.hash(h);
        self.name().hash(h);
    }
}

impl PartialEq for BindKey {
    fn eq(&self, other: &Self) -> bool {
        self.scope == other.scope && self.name() == other.name()
    }
}

impl Eq for BindKey {}

/// A [`Binding`] as [`Values::bindings`] keeps it (token indices stay far
/// below 2^31: the lexer reads at most 256 MiB). Most names are bound
/// once in a scope, and their binding is the map's value itself (eight
/// bytes, where a list took 24 and an allocation a name); the value of a
/// name bound more than once has [`Bind::MANY`] in `end` and the index of
/// its list in [`Values::many`] as `start`.
#[derive(Clone, Copy)]
struct Bind {
    start: u32,
    end: u32,
}

impl Bind {
    const MANY: u32 = 1 << 31;

    fn get(self) -> Binding {
        Binding {
            start: self.start as usize,
            end: self.end as usize,
        }
    }
}

/// The bindings of a map's value `b`, in source order.
fn all_of<'s>(many: &'s [Vec<Bind>], b: &'s Bind) -> &'s [Bind] {
    if b.end & Bind::MANY != 0 {
        many.get(b.start as usize).map_or(&[], |v| v.as_slice())
    } else {
        std::slice::from_ref(b)
    }
}

/// Adds `b` to the bindings of `(scope, name)` in `map`; a name that
/// normalising wrote anew is kept in `names` for the key to point into.
fn bind(
    map: &mut HashMap<BindKey, Bind>,
    names: &mut Vec<Box<str>>,
    many: &mut Vec<Vec<Bind>>,
    scope: u32,
    name: Cow<'_, str>,
    b: Bind,
) {
    let key = match name {
        Cow::Borrowed(n) => BindKey::new(scope, n),
        Cow::Owned(n) => match map.get_key_value(&scoped(scope, &n) as &dyn ScopedName) {
            Some((k, _)) => *k,
            None => {
                let n: Box<str> = n.into();
                let k = BindKey::new(scope, &n);
                names.push(n);
                k
            }
        },
    };
    // (`entry` as before: the map grows at the same insert)
    match map.entry(key) {
        std::collections::hash_map::Entry::Occupied(mut e) => {
            let v = e.get_mut();
            if v.end & Bind::MANY != 0 {
                if let Some(list) = many.get_mut(v.start as usize) {
                    list.push(b);
                }
            } else {
                many.push(vec![*v, b]);
                *v = Bind {
                    start: (many.len() - 1) as u32,
                    end: Bind::MANY,
                };
            }
        }
        std::collections::hash_map::Entry::Vacant(e) => {
            e.insert(b);
        }
    }
}

/// The key `(scope, name)` to look up as [`ScopedName`] (it fixes the
/// tuple's types: a literal scope, a `&String` or a `Cow` name).
fn scoped(scope: u32, name: &str) -> (u32, &str) {
    (scope, name)
}

/// A same-file helper ([`Values::helpers`]): tokens only, its names read
/// back from them when a call of it is read (a copy of each parameter's
/// name took 40 bytes and more a function, and most one-expression
/// functions of a file are never called in a key).
#[derive(Clone, Debug)]
pub struct Helper {
    /// Its name's token.
    name: u32,
    /// The `(` of its parameter list.
    open: u32,
    /// Its returned expression, as a token range.
    start: u32,
    end: u32,
    scope: u32,
}

/// A set of (scope, name) pairs, per scope its names sorted: eight bytes a
/// name and four a scope (a hash set of `(u32, Cow<str>)` took 33 bytes a
/// slot, and a minified bundle declares a parameter every thirty bytes).
/// A name is a range of the source, or of `extra` for one normalising
/// wrote anew (`this.x` of `@x`): offsets from `src.len()` on.
struct ScopedNames<'a> {
    src: &'a str,
    extra: String,
    /// Scope `s`'s names are `names[starts[s]..starts[s + 1]]`.
    starts: Vec<u32>,
    names: Vec<(u32, u32)>,
}

impl<'a> ScopedNames<'a> {
    fn empty(src: &'a str) -> Self {
        ScopedNames {
            src,
            extra: String::new(),
            starts: Vec::new(),
            names: Vec::new(),
        }
    }

    /// The (offset, length) of `name` in the source, or of a copy in `extra`.
    fn place(src: &str, extra: &mut String, name: &str) -> (u32, u32) {
        let (base, at) = (src.as_ptr() as usize, name.as_ptr() as usize);
        let off = if at >= base && at + name.len() <= base + src.len() {
            at - base
        } else {
            extra.push_str(name);
            src.len() + extra.len() - name.len()
        };
        (off as u32, name.len() as u32)
    }

    fn text(&self, (off, len): (u32, u32)) -> &str {
        let (off, len) = (off as usize, len as usize);
        match off.checked_sub(self.src.len()) {
            None => &self.src[off..off + len],
            Some(e) => &self.extra[e..e + len],
        }
    }

    /// The set of `found`'s pairs (any order, repeats allowed).
    fn of(src: &'a str, found: Vec<(u32, Cow<'_, str>)>) -> Self {
        let mut set = ScopedNames::empty(src);
        let Some(top) = found.iter().map(|(s, _)| *s).max() else {
            return set;
        };
        let mut placed: Vec<(u32, (u32, u32))> = found
            .iter()
            .map(|(s, n)| (*s, Self::place(src, &mut set.extra, n)))
            .collect();
        drop(found);
        set.extra.shrink_to_fit();
        placed
            .sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| set.text(a.1).cmp(set.text(b.1))));
        placed.dedup_by(|a, b| a.0 == b.0 && set.text(a.1) == set.text(b.1));
        let mut starts = Vec::with_capacity(top as usize + 2);
        let mut k = 0;
        for scope in 0..=top {
            starts.push(k as u32);
            while k < placed.len() && placed[k].0 == scope {
                k += 1;
            }
        }
        starts.push(placed.len() as u32);
        set.starts = starts;
        // (a buffer of their own: collected in place, they kept the
        // twelve bytes of each entry)
        let mut names = Vec::with_capacity(placed.len());
        names.extend(placed.iter().map(|&(_, n)| n));
        set.names = names;
        set
    }

    fn contains(&self, scope: u32, name: &str) -> bool {
        let s = scope as usize;
        let (Some(&lo), Some(&hi)) = (self.starts.get(s), self.starts.get(s + 1)) else {
            return false;
        };
        self.names[lo as usize..hi as usize]
            .binary_search_by(|&n| self.text(n).cmp(name))
            .is_ok()
    }
}

/// Value words, plus per-language spellings the shared table does not know.
fn classify(text: &str) -> Option<ValueExpr> {
    words::with_ascii_lower(text, |lower| classify_lower(text, lower))
}

/// [`classify`] with `lower` = `text` ASCII lower-cased (once for all the
/// word tables).
fn classify_lower(text: &str, lower: &str) -> Option<ValueExpr> {
    // which words of the tables the text holds, found in one pass
    let found = words::Needles::of(lower);
    if holds!(found, "newguid")
        || holds!(found, "securerandom")
        || holds!(found, "randomnumbergenerator")
        || holds!(found, "crypto/rand")
        || holds!(found, "randomuuid")
    {
        return Some(ValueExpr::Unique);
    }
    if let Some(v) = words::classify_value_words_found(text, lower, found) {
        return Some(v);
    }
    if words::is_serialised_data_found(found) {
        return Some(ValueExpr::Data(text.trim().into()));
    }
    if holds!(found, "machinename")
        || holds!(found, "getlocalhost")
        || holds!(found, "os.hostname")
        || holds!(found, "gethostname")
    {
        return Some(ValueExpr::Weak("a host name".into()));
    }
    if holds!(found, "processid")
        || holds!(found, "getpid")
        || holds!(found, "mypid")
        || holds!(found, "$$")
    {
        return Some(ValueExpr::Weak("a process id".into()));
    }
    if holds!(found, "managedthreadid") || holds!(found, "goid") {
        return Some(ValueExpr::Weak("a thread id".into()));
    }
    if holds!(found, "ticks")
        || holds!(found, "datetime")
        || holds!(found, "date.now")
        || holds!(found, "new date(")
        || holds!(found, "time.time")
    {
        return Some(ValueExpr::Weak("the current time".into()));
    }
    None
}

/// The texts of the last tokens of `toks` joined, at least four bytes of
/// them (or all: then `true`): what `ends_with` of a word of up to four
/// bytes reads of the whole joined text, without joining a whole callback.
fn compact_tail(toks: Toks) -> (String, bool) {
    let mut len = 0;
    let mut from = toks.len();
    while from > 0 && len < 4 {
        from -= 1;
        len += toks.at(from).text().len();
    }
    let tail: String = toks.slice(from..).iter().map(|t| t.text()).collect();
    (tail, from == 0)
}

/// `this.x`, `self.x`, `$this->x`, `@x` all become `this.x`; PHP `$x` becomes `x`.
pub fn norm_name(raw: &str) -> String {
    norm_name_cow(raw).into_owned()
}

/// [`norm_name`], borrowing `raw` (or a part of it) when nothing is
/// rewritten: what a lookup needs.
pub fn norm_name_cow(raw: &str) -> std::borrow::Cow<'_, str> {
    use std::borrow::Cow;
    // most names start with a letter other than the prefixes' `t`/`s` and
    // end in a printable ASCII byte: nothing to trim or rewrite
    if let (Some(&f), Some(&l)) = (raw.as_bytes().first(), raw.as_bytes().last()) {
        if (f.is_ascii_alphanumeric() || f == b'_')
            && f != b't'
            && f != b's'
            && l.is_ascii_graphic()
        {
            return Cow::Borrowed(raw);
        }
    }
    let s = raw.trim();
    for p in [
        "$this->", "this.", "self.", "this->", "self::", "static::", "@",
    ] {
        if let Some(rest) = s.strip_prefix(p) {
            if p == "self::" || p == "static::" {
                return Cow::Borrowed(rest.trim_start_matches('$'));
            }
            return Cow::Owned(format!("this.{}", rest.trim_start_matches('@')));
        }
    }
    Cow::Borrowed(s.trim_start_matches('$'))
}

fn semicolon_lang(lang: Language) -> bool {
    matches!(lang, Language::Java | Language::CSharp | Language::Php)
}

fn is_continuation_op(t: Tok) -> bool {
    t.kind() == Kind::Punct
        && matches!(
            t.text(),
            "+" | "."
                | ","
                | "("
                | "["
                | "{"
                | "="
                | "||"
                | "&&"
                | "?"
                | ":"
                | "->"
                | "=>"
                | "-"
                | "*"
                | "%"
                | "\\"
        )
}

/// End (exclusive) of the expression starting at `s`.
pub fn expr_end(toks: Toks, st: &Structure, lang: Language, s: usize) -> usize {
    let mut k = s;
    while k < toks.len() {
        let t = toks.at(k);
        if k > s
            && t.nl()
            && !semicolon_lang(lang)
            && !is_continuation_op(toks.at(k - 1))
            && !(t.is(".") || t.is("+") || t.is("?."))
        {
            if st.tok_paren.get(k) <= st.tok_paren.get(s) {
                return k;
            }
        }
        if t.kind() == Kind::Punct {
            match t.text() {
                "(" | "[" | "{" => {
                    if let Some(m) = st.matching.get(&k) {
                        if m > k {
                            k = m + 1;
                            continue;
                        }
                    }
                    if t.is("{") {
                        return k;
                    }
                }
                ")" | "]" | "}" | ";" | "," => return k,
                _ => {}
            }
        }
        k += 1;
    }
    k
}

impl<'a> Values<'a> {
    pub fn new(src: &'a str, toks: Toks<'a>, st: &'a Structure, lang: Language) -> Self {
        let mut v = Values {
            src,
            toks,
            st,
            lang,
            bindings: HashMap::default(),
            result_values: HashMap::default(),
            names: Vec::new(),
            many: Vec::new(),
            helpers: Vec::new(),
            locals: ScopedNames::empty(src),
            resolving: std::cell::RefCell::new(Vec::new()),
        };
        v.collect_bindings();
        v.collect_helpers();
        v.collect_locals();
        v
    }

    /// The parameter names in a declaration's `(`…`)`.
    pub(crate) fn param_names(&self, open: usize, close: usize) -> Vec<Cow<'a, str>> {
        self.param_list(open, close)
            .into_iter()
            .map(|(n, _)| n)
            .collect()
    }

    /// The parameters of a declaration's list with what each holds when a
    /// call leaves it out: `None` for a parameter a call must pass; the
    /// class of its default (`ttl = 30`, `opts: Options = {}`, Ruby `ttl:
    /// nil`), or null for a TS `opts?: Options` (`self`/`cls` left out).
    /// Go has no defaults.
    pub(crate) fn param_list(
        &self,
        open: usize,
        close: usize,
    ) -> Vec<(Cow<'a, str>, Option<super::paths::Default>)> {
        let toks = self.toks;
        super::calls::split_args(toks, self.st, open, close)
            .iter()
            .filter_map(|a| {
                let r =
                    toks.slice(a.start().saturating_sub(if a.is_named() { 2 } else { 0 })..a.end());
                let name = if let Some(c) = r.iter().position(|t| t.is(":")) {
                    r.slice(..c).iter().rev().find(|t| t.is_ident())
                } else if self.lang == Language::Go {
                    r.iter().find(|t| t.is_ident())
                } else {
                    r.iter()
                        .take_while(|t| !t.is("="))
                        .filter(|t| t.is_ident())
                        .last()
                };
                let name = norm_name_cow(name?.text());
                Some((name, self.param_default(r)))
            })
            .filter(|(p, _)| p != "self" && p != "cls")
            .collect()
    }

    /// What a parameter (its tokens `r`) holds when a call leaves it out.
    fn param_default(&self, r: Toks) -> Option<super::paths::Default> {
        use super::paths::{classify_default, Default};
        if self.lang == Language::Go {
            return None;
        }
        if let Some(eq) = r.iter().position(|t| t.is("=")) {
            return Some(classify_default(r.slice(eq + 1..)));
        }
        match self.lang {
            // a TS optional parameter `opts?: Options`
            Language::JavaScript | Language::TypeScript => r
                .windows(2)
                .any(|w| w.at(0).is_ident() && w.at(1).is("?"))
                .then_some(Default::Null),
            // a Ruby keyword parameter with a default `ttl: nil`
            Language::Ruby => match (r.get(0), r.get(1)) {
                (Some(n), Some(c)) if n.is_ident() && c.is(":") && r.len() > 2 => {
                    Some(classify_default(r.slice(2..)))
                }
                _ => None,
            },
            _ => None,
        }
    }

    /// How many parameters at the end of a declaration's list have a
    /// default value (`function checkLock(key, retry = 0, ttl = null)`,
    /// `def lock(key, ttl=30)`): a call may leave them out. Go has none.
    pub(crate) fn defaulted_params(&self, open: usize, close: usize) -> usize {
        if self.lang == Language::Go {
            return 0;
        }
        let toks = self.toks;
        super::calls::split_args(toks, self.st, open, close)
            .iter()
            .rev()
            .take_while(|a| {
                a.is_named() || toks.slice(a.start()..a.end()).iter().any(|t| t.is("="))
            })
            .count()
    }

    /// The `(` of a declaration's parameter list: right after the name (and
    /// its type parameters: `setJSON<T>(`, Go `Name[T any](`), or for a
    /// JS/TS arrow assigned to a name, after `= [async]`.
    pub(crate) fn param_open(&self, n: usize) -> Option<usize> {
        let toks = self.toks;
        let next = toks.get(n + 1)?;
        let after = super::calls::skip_type_params(toks, n + 1, self.lang);
        if toks.get(after)?.is("(") {
            return Some(after);
        }
        if matches!(self.lang, Language::JavaScript | Language::TypeScript) && next.is("=") {
            let mut j = n + 2;
            if toks.get(j).is_some_and(|t| t.is("async")) {
                j += 1;
            }
            return toks.get(j).is_some_and(|t| t.is("(")).then_some(j);
        }
        None
    }

    /// Parameters, loop targets and multi-assignment targets of each function.
    fn collect_locals(&mut self) {
        let toks = self.toks;
        let mut found: Vec<(u32, Cow<'a, str>)> = Vec::new();
        for (n, scope) in self.st.decls.scopes() {
            let Some(open) = self.param_open(n) else {
                continue;
            };
            let Some(close) = self.st.matching.get(&open) else {
                continue;
            };
            if close <= open {
                continue;
            }
            for p in self.param_names(open, close) {
                found.push((scope, p));
            }
        }
        // (the scopes read in order: a compacted column's runs one after
        // another)
        for (i, &scope) in self.st.tok_scope.iter().enumerate().take(toks.len()) {
            if scope == 0 {
                continue;
            }
            let t = toks.at(i);
            // every test below wants an identifier or `=`/`:=`
            if !matches!(t.kind(), Kind::Ident | Kind::Punct) {
                continue;
            }
            // `for x in` / `for (const x of …)` / `foreach ($xs as $x)`: the targets
            if t.is("for") || t.is("foreach") {
                let paren = toks.get(i + 1).is_some_and(|x| x.is("("));
                let limit = match paren {
                    true => self.st.matching.get(&(i + 1)).unwrap_or(i + 1),
                    false => (i + 16).min(toks.len()),
                };
                let mut k = i + 1 + usize::from(paren);
                let mut names = Vec::new();
                let mut done = false;
                while k < limit {
                    let x = toks.at(k);
                    if x.is("in") || x.is("of") || x.is(":") || x.is(":=") || x.is(";") {
                        done = true;
                        break;
                    }
                    if x.is("{") || (x.nl() && !paren) {
                        break;
                    }
                    if x.is("as") {
                        names.clear();
                    } else if x.is_ident() {
                        names.push(norm_name_cow(x.text()));
                    }
                    k += 1;
                }
                if done || (paren && k >= limit) {
                    found.extend(names.into_iter().map(|n| (scope, n)));
                }
            }
            // `a, b = …` / `a, b := …` / `with … as x` / `except E as x`
            // (statement level only: `f(a, nx=True)` is a keyword argument)
            if (t.is("=") || t.is(":="))
                && i >= 2
                && toks.at(i - 2).is(",")
                && self.st.tok_paren.at(i) == 0
            {
                let mut k = i;
                while k >= 1 && (toks.at(k - 1).is_ident() || toks.at(k - 1).is(",")) {
                    k -= 1;
                    if toks.at(k).is_ident() {
                        found.push((scope, norm_name_cow(toks.at(k).text())));
                    }
                    if toks.at(k).nl() {
                        break;
                    }
                }
            }
            if t.is("as") && toks.get(i + 1).is_some_and(|x| x.is_ident()) {
                found.push((scope, norm_name_cow(toks.at(i + 1).text())));
            }
        }
        self.locals = ScopedNames::of(self.src, found);
    }

    fn collect_bindings(&mut self) {
        let toks = self.toks;
        // Go `const ( a = … )` / `var ( … )` groups: their parens do not count
        // (a table per token for Go only: other files read 0)
        let mut group_depth = Vec::new();
        if self.lang == Language::Go {
            group_depth = vec![0u32; toks.len()];
            for (i, t) in toks.iter().enumerate() {
                if t.is("(") && i > 0 && (toks.at(i - 1).is("const") || toks.at(i - 1).is("var")) {
                    if let Some(c) = self.st.matching.get(&i) {
                        for g in group_depth.iter_mut().take(c).skip(i + 1) {
                            *g += 1;
                        }
                    }
                }
            }
        }
        // The paren depth at the innermost `{` block around each token: a
        // binding in the block of a closure passed as an argument
        // (`Retry(() => { var v = …; })`, `g.Go(func() error { v := … })`)
        // is a statement of that block, not a keyword argument. Kept as a
        // stack of blocks while the tokens are walked.
        let mut blocks: Vec<u32> = Vec::new();
        for i in 0..toks.len() {
            let t = toks.at(i);
            // only punctuation opens or closes a block or binds
            if t.kind() != Kind::Punct {
                continue;
            }
            match t.text() {
                "}" => {
                    blocks.pop();
                    continue;
                }
                "{" => {
                    blocks.push(self.st.tok_paren.at(i));
                    continue;
                }
                "=" | ":=" => {}
                _ => continue,
            }
            let block_paren = blocks.last().copied().unwrap_or(0);
            if i == 0 {
                continue;
            }
            let group = group_depth.get(i).copied().unwrap_or(0);
            if self.st.tok_paren.at(i) != group + block_paren {
                continue;
            }
            let n = toks.at(i - 1);
            if !n.is_ident() {
                continue;
            }
            let mut name: Cow<'a, str> = Cow::Borrowed(n.text());
            if i >= 3
                && (toks.at(i - 2).is(".") || toks.at(i - 2).is("->") || toks.at(i - 2).is("::"))
            {
                let owner = toks.at(i - 3).text();
                if matches!(owner, "this" | "self" | "$this" | "static") {
                    name = Cow::Owned(format!("{owner}.{name}"));
                } else {
                    continue;
                }
            }
            // Go `a, b := …` binds the call to the first name only when single.
            if i >= 2 && toks.at(i - 2).is(",") {
                // `v, err := call(…)`: `v` is the call's result, for its value
                if self.lang == Language::Go
                    && i >= 4
                    && toks.at(i - 3).is_ident()
                    && !toks.at(i - 4).is(",")
                    && (toks.at(i - 1).text() == "err" || toks.at(i - 1).text().ends_with("Err"))
                {
                    let start = i + 1;
                    let end = expr_end(toks, self.st, self.lang, start);
                    if end > start {
                        bind(
                            &mut self.result_values,
                            &mut self.names,
                            &mut self.many,
                            self.st.tok_scope[i],
                            norm_name_cow(toks.at(i - 3).text()),
                            Bind {
                                start: start as u32,
                                end: end as u32,
                            },
                        );
                    }
                }
                continue;
            }
            let name = match name {
                Cow::Borrowed(n) => norm_name_cow(n),
                Cow::Owned(n) => Cow::Owned(norm_name(&n)),
            };
            let start = i + 1;
            let end = expr_end(toks, self.st, self.lang, start);
            if end <= start {
                continue;
            }
            let scope = if name.starts_with("this.") {
                0
            } else {
                self.st.tok_scope[i]
            };
            bind(
                &mut self.bindings,
                &mut self.names,
                &mut self.many,
                scope,
                name,
                Bind {
                    start: start as u32,
                    end: end as u32,
                },
            );
        }
        // Go `var x = …` / `const x = …` inside `const ( … )` groups are covered
        // above; Python/others `for x in` are not bindings.
    }

    /// Functions whose body is one `return EXPR` (or a Ruby/Kotlin expression body).
    fn collect_helpers(&mut self) {
        let toks = self.toks;
        let mut seen: HashMap<&'a str, usize> = HashMap::default();
        let mut found = Vec::new();
        for n in self.st.decls.names() {
            let Some(nt) = toks.get(n) else { continue };
            *seen.entry(nt.text()).or_insert(0) += 1;
            let open = n + 1;
            if !toks.get(open).is_some_and(|t| t.is("(")) {
                continue;
            }
            let Some(close) = self.st.matching.get(&open) else {
                continue;
            };
            // the body: the first token after the header that opens it
            let mut k = close + 1;
            let limit = (k + 16).min(toks.len());
            // `:` opens a Python body; elsewhere it starts a return type
            // (`): bool {`), and a body read from there would run on past
            // the function to wherever an expression happens to end.
            let opens_body = |t: Tok| match self.lang {
                Language::Python => t.is(":") || t.is("="),
                Language::Ruby => t.is("{") || t.is("=") || t.nl(),
                _ => t.is("{") || t.is("="),
            };
            while k < limit && !opens_body(toks.at(k)) {
                k += 1;
            }
            if k >= limit {
                continue;
            }
            let body_start = if toks.at(k).nl() && self.lang == Language::Ruby {
                k
            } else {
                k + 1
            };
            let mut b = body_start;
            if toks.get(b).is_some_and(|t| t.is("return")) {
                b += 1;
            }
            let e = expr_end(toks, self.st, self.lang, b);
            if e <= b {
                continue;
            }
            // nothing else in the body
            let after = toks.get(e).map(|t| t.text()).unwrap_or("");
            let ok = match self.lang {
                Language::Python => toks
                    .get(e)
                    .is_none_or(|t| t.nl() && self.st.tok_scope.get(e) != self.st.tok_scope.get(b)),
                Language::Ruby => after == "end",
                _ if toks.at(k).is("{") => {
                    after == "}" || (after == ";" && toks.get(e + 1).is_some_and(|t| t.is("}")))
                }
                _ => true,
            };
            if ok {
                let scope = self.st.tok_scope.get(b).copied().unwrap_or(0);
                found.push(Helper {
                    name: n as u32,
                    open: open as u32,
                    start: b as u32,
                    end: e as u32,
                    scope,
                });
            }
        }
        // (a name declared more than once is no helper)
        let name = |h: &Helper| toks.at(h.name as usize).text();
        found.retain(|h| seen.get(name(h)) == Some(&1));
        found.sort_unstable_by(|a, b| name(a).cmp(name(b)));
        found.shrink_to_fit();
        self.helpers = found;
    }

    /// The helper of that name.
    fn helper(&self, name: &str) -> Option<&Helper> {
        let toks = self.toks;
        let i = self
            .helpers
            .binary_search_by(|h| toks.at(h.name as usize).text().cmp(name))
            .ok()?;
        Some(&self.helpers[i])
    }

    /// The key a helper call stands for: its returned expression with the
    /// parameters replaced by the call's argument keys.
    fn helper_key(
        &self,
        name: &str,
        args: &[(usize, usize)],
        scope: u32,
        depth: u32,
    ) -> Option<KeyExpr> {
        let h = self.helper(name)?;
        let body = self.key_d(h.start as usize, h.end as usize, h.scope, depth + 1);
        if body.is_unknown() {
            return None;
        }
        let open = h.open as usize;
        let params = match self.st.matching.get(&open) {
            Some(close) => self.param_names(open, close),
            None => Vec::new(),
        };
        let mut out = KeyExpr::default();
        for p in body.parts {
            match &p {
                KeyPart::Var(v) => match params.iter().position(|x| **x == **v) {
                    Some(i) => match args.get(i) {
                        Some(&(a, b)) => out.append(self.key_d(a, b, scope, depth + 1)),
                        None => out.push(KeyPart::Unknown),
                    },
                    None => out.push(p.clone()),
                },
                _ => out.push(p.clone()),
            }
        }
        out.idents.extend(
            body.idents
                .into_iter()
                .filter(|i| !params.iter().any(|p| **p == **i)),
        );
        out.idents.push(name.to_string());
        Some(out)
    }

    /// The single binding of `name` visible from `scope` (a local bound once,
    /// else a file-level constant bound once). A local first bound to
    /// null/None/nil ("not taken yet") and then once to a value is bound once.
    pub fn lookup(&self, scope: u32, name: &str) -> Option<Binding> {
        let name = norm_name_cow(name);
        let name = name.as_ref();
        if scope != 0 {
            if let Some(v) = self.bindings.get(&scoped(scope, name) as &dyn ScopedName) {
                let v = all_of(&self.many, v);
                if v.len() == 2 && self.is_null(&v[0].get()) && !self.is_null(&v[1].get()) {
                    return Some(v[1].get());
                }
                return if v.len() == 1 { Some(v[0].get()) } else { None };
            }
            // a parameter or loop variable shadows the file-level name
            if self.is_local(scope, name) {
                return None;
            }
        }
        let b = self.bindings.get(&scoped(0, name) as &dyn ScopedName)?;
        (b.end & Bind::MANY == 0).then(|| b.get())
    }

    /// Every binding: (scope, normalised name, binding), the names in the
    /// map's order and each name's bindings in source order.
    pub fn bindings(&self) -> impl Iterator<Item = (u32, &str, Binding)> + '_ {
        self.bindings.iter().flat_map(|(k, bs)| {
            all_of(&self.many, bs)
                .iter()
                .map(move |b| (k.scope, k.name(), b.get()))
        })
    }

    /// `name` (normalised) is one of `scope`'s [`Values::locals`].
    fn is_local(&self, scope: u32, name: &str) -> bool {
        self.locals.contains(scope, name)
    }

    fn is_null(&self, b: &Binding) -> bool {
        b.end == b.start + 1
            && self.toks.get(b.start).is_some_and(|t| {
                t.kind() == Kind::Ident && matches!(t.text(), "null" | "None" | "nil")
            })
    }

    pub fn text(&self, s: usize, e: usize) -> &'a str {
        if s >= e || e > self.toks.len() {
            return "";
        }
        self.src
            .get(self.toks.at(s).start()..self.toks.at(e - 1).end())
            .unwrap_or("")
    }

    /// Strips wrapping parens, casts and `.toString()`-style conversions.
    pub fn unwrap(&self, mut s: usize, mut e: usize) -> (usize, usize) {
        let toks = self.toks;
        for _ in 0..8 {
            if e <= s {
                break;
            }
            // (expr)
            if toks.at(s).is("(") && self.st.matching.get(&s) == Some(e - 1) {
                // C# cast `(RedisKey)x`
                s += 1;
                e -= 1;
                continue;
            }
            if toks.at(s).is("(")
                && e > s + 3
                && toks.at(s + 1).is_ident()
                && toks.at(s + 2).is(")")
            {
                s += 3;
                continue;
            }
            // str(x), String.valueOf(x), strval(x), String(x)
            let wrapper = |k: usize| {
                matches!(
                    toks.at(k).text(),
                    "str"
                        | "valueOf"
                        | "strval"
                        | "String"
                        | "string"
                        | "bytes"
                        | "toString"
                        | "Bytes"
                )
            };
            if toks.at(e - 1).is(")") {
                if let Some(o) = self.st.matching.get(&(e - 1)) {
                    if o >= 1
                        && o > s
                        && wrapper(o - 1)
                        && (o - 1 == s || (o - 1 == s + 2 && toks.at(s + 1).is(".")))
                    {
                        s = o + 1;
                        e -= 1;
                        continue;
                    }
                    // x.toString(), x.encode(), x.to_s
                    if o == e - 2
                        && o >= s + 3
                        && toks.at(o - 2).is(".")
                        && matches!(
                            toks.at(o - 1).text(),
                            "toString"
                                | "getBytes"
                                | "encode"
                                | "to_s"
                                | "ToString"
                                | "trim"
                                | "intern"
                                | "toByteArray"
                        )
                    {
                        e = o - 2;
                        continue;
                    }
                }
            }
            if e >= s + 3
                && toks.at(e - 2).is(".")
                && matches!(toks.at(e - 1).text(), "to_s" | "to_str")
            {
                e -= 2;
                continue;
            }
            break;
        }
        (s, e)
    }

    /// Splits at top-level concatenation operators.
    fn concat_pieces(&self, s: usize, e: usize) -> Vec<(usize, usize)> {
        let toks = self.toks;
        let mut out = Vec::new();
        let mut ps = s;
        let mut k = s;
        while k < e {
            let t = toks.at(k);
            if t.kind() == Kind::Punct && matches!(t.text(), "(" | "[" | "{") {
                if let Some(m) = self.st.matching.get(&k) {
                    if m > k && m < e {
                        k = m + 1;
                        continue;
                    }
                }
            }
            let concat = t.is("+")
                || (self.lang == Language::Php && t.is("."))
                || (self.lang == Language::Lua && t.is(".."));
            if concat && k > ps {
                out.push((ps, k));
                ps = k + 1;
            }
            k += 1;
        }
        if ps < e {
            out.push((ps, e));
        }
        out
    }

    pub fn key(&self, s: usize, e: usize, scope: u32) -> KeyExpr {
        let mut k = self.key_d(s, e, scope, 0);
        k.shrink_to_fit();
        k
    }

    fn key_d(&self, s: usize, e: usize, scope: u32, depth: u32) -> KeyExpr {
        if depth > 6 || e <= s || e > self.toks.len() {
            return KeyExpr::unknown();
        }
        let (s, e) = self.unwrap(s, e);
        if e <= s {
            return KeyExpr::unknown();
        }
        let pieces = self.concat_pieces(s, e);
        if pieces.len() > 1 {
            let mut k = KeyExpr::default();
            for (a, b) in pieces {
                k.append(self.key_d(a, b, scope, depth + 1));
            }
            return k;
        }
        let toks = self.toks;
        // Python `"lock:%s" % id`
        if self.lang == Language::Python
            && e >= s + 3
            && toks.at(s).kind() == Kind::Str
            && toks.at(s + 1).is("%")
        {
            let args = self.arg_ranges(s + 2, e, true);
            return self.format_key(toks.at(s).text(), &args, scope, depth);
        }
        // Adjacent literals (Python implicit concatenation)
        if toks.slice(s..e).iter().all(|t| t.kind() == Kind::Str) {
            let mut k = KeyExpr::default();
            for t in toks.slice(s..e) {
                k.append(self.lit_key(t, scope, depth));
            }
            return k;
        }
        // `"lock:{}".format(id)`, `"lock:%s".formatted(id)`, `"…" % (…)`
        if toks.at(s).kind() == Kind::Str
            && e > s + 3
            && toks.at(s + 1).is(".")
            && matches!(toks.at(s + 2).text(), "format" | "formatted")
            && toks.at(s + 3).is("(")
        {
            if let Some(c) = self.st.matching.get(&(s + 3)) {
                let args = super::calls::split_args(toks, self.st, s + 3, c);
                let ranges: Vec<(usize, usize)> =
                    args.iter().map(|a| (a.start(), a.end())).collect();
                return self.format_key(toks.at(s).text(), &ranges, scope, depth);
            }
        }
        // String.format(fmt, …), fmt.Sprintf, sprintf, string.Format
        if toks.at(e - 1).is(")") {
            if let Some(o) = self.st.matching.get(&(e - 1)) {
                if o >= 1 && o > s {
                    let fname = toks.at(o - 1).text();
                    if matches!(
                        fname,
                        "format" | "Format" | "Sprintf" | "sprintf" | "formatted"
                    ) {
                        let args = super::calls::split_args(toks, self.st, o, e - 1);
                        if let Some(first) = args.first() {
                            if first.end() == first.start() + 1
                                && toks.at(first.start()).kind() == Kind::Str
                            {
                                let rest: Vec<(usize, usize)> =
                                    args[1..].iter().map(|a| (a.start(), a.end())).collect();
                                return self.format_key(
                                    toks.at(first.start()).text(),
                                    &rest,
                                    scope,
                                    depth,
                                );
                            }
                        }
                    }
                    // join helpers: String.join(":", a, b) → unknown; a call `f(args)`
                    if o - 1 == s
                        || (o >= s + 2 && toks.at(o - 2).is(".")
                            || toks
                                .get(o.wrapping_sub(2))
                                .is_some_and(|t| t.is("->") || t.is("::")))
                    {
                        let name_raw = self.text(s, o);
                        // Go: the method's receiver (`v.vmJobKey(id)` in a
                        // method of `v *Manager`) calls a method of its own
                        let go_recv = o == s + 3
                            && self
                                .st
                                .receivers
                                .get(&scope)
                                .is_some_and(|r| toks.at(s).text() == r.as_str());
                        let own = o - 1 == s
                            || go_recv
                            || matches!(toks.at(s).text(), "this" | "self" | "$this" | "static");
                        if own && depth < 4 {
                            let ranges: Vec<(usize, usize)> =
                                super::calls::split_args(toks, self.st, o, e - 1)
                                    .iter()
                                    .map(|a| (a.start(), a.end()))
                                    .collect();
                            if let Some(k) =
                                self.helper_key(toks.at(o - 1).text(), &ranges, scope, depth)
                            {
                                return k;
                            }
                        }
                        let mut k = KeyExpr::default();
                        let short = norm_name(name_raw);
                        let args = super::calls::split_args(toks, self.st, o, e - 1);
                        // SPEC §2 same key: a call named like a lock (`lockKey(id)`,
                        // `getLockName()`) is evidence; any other call (`ToInner(key)`,
                        // `rawKey(key)`, `key.getBytes()`) is transparent: it stands
                        // for its arguments (or, without any, its receiver) and
                        // carries no evidence of its own.
                        if !words::reads_like_lock(toks.at(o - 1).text()) {
                            // a string constant's own method: `KEY_FMT.format(id=x)`,
                            // `PREFIX.concat(id)` keep the constant's text
                            let recv = if o >= s + 3 && !own {
                                self.key_d(s, o - 2, scope, depth + 1)
                            } else {
                                KeyExpr::unknown()
                            };
                            let lit_recv = recv.parts.iter().any(|p| matches!(p, KeyPart::Lit(_)));
                            if lit_recv && !args.is_empty() {
                                if let ([KeyPart::Lit(fmt)], "format" | "formatted") =
                                    (recv.parts.as_slice(), toks.at(o - 1).text())
                                {
                                    let ranges: Vec<(usize, usize)> =
                                        args.iter().map(|a| (a.start(), a.end())).collect();
                                    let mut f = self.format_key(fmt, &ranges, scope, depth);
                                    f.idents.extend(recv.idents.iter().cloned());
                                    return f;
                                }
                                k.append(recv.clone());
                            }
                            if !args.is_empty() {
                                for a in args {
                                    k.append(self.key_d(a.start(), a.end(), scope, depth + 1));
                                }
                                return k;
                            }
                            if !recv.is_unknown() {
                                return recv;
                            }
                            // `getKey()`: the same call matches within one function only
                            k.push(KeyPart::Var(format!("{short}()").into()));
                            k.idents.push(toks.at(o - 1).text().to_string());
                            return k;
                        }
                        k.push(KeyPart::Const(format!("{short}()").into()));
                        k.idents.push(toks.at(o - 1).text().to_string());
                        for a in args {
                            k.append(self.key_d(a.start(), a.end(), scope, depth + 1));
                        }
                        return k;
                    }
                }
            }
            return KeyExpr::unknown();
        }
        if e == s + 1 {
            let t = toks.at(s);
            return match t.kind() {
                Kind::Str => self.lit_key(t, scope, depth),
                Kind::Num => KeyExpr::lit(t.text()),
                Kind::Ident => self.name_key(t.text(), scope, depth),
                Kind::Punct => KeyExpr::unknown(),
            };
        }
        // a dotted path: this.x, self.x, Cls.CONST, $this->x, obj.field
        if toks.slice(s..e).iter().enumerate().all(|(k, t)| {
            if k % 2 == 0 {
                t.is_ident()
            } else {
                t.is(".") || t.is("->") || t.is("::") || t.is("?.")
            }
        }) && (e - s) % 2 == 1
        {
            let raw = self.text(s, e);
            return self.name_key(raw, scope, depth);
        }
        KeyExpr::unknown()
    }

    fn arg_ranges(&self, s: usize, e: usize, tuple: bool) -> Vec<(usize, usize)> {
        let toks = self.toks;
        if tuple && toks.at(s).is("(") && self.st.matching.get(&s) == Some(e - 1) {
            return super::calls::split_args(toks, self.st, s, e - 1)
                .into_iter()
                .map(|a| (a.start(), a.end()))
                .collect();
        }
        vec![(s, e)]
    }

    fn name_key(&self, raw: &str, scope: u32, depth: u32) -> KeyExpr {
        let mut name = norm_name(raw);
        // Go: the method receiver `l.key` is `this.key`
        if let Some(r) = self.st.receivers.get(&scope) {
            if let Some(rest) = name
                .strip_prefix(r.as_str())
                .and_then(|x| x.strip_prefix('.'))
            {
                name = format!("this.{rest}");
            }
        }
        if matches!(
            name.as_str(),
            "null" | "None" | "nil" | "true" | "false" | "True" | "False"
        ) {
            return KeyExpr::unknown();
        }
        // a bare field name (Java/C#/Kotlin) assigned as `this.x = …` elsewhere
        if !name.contains('.')
            && self.lookup(scope, &name).is_none()
            && !self.is_local(scope, &name)
        {
            let field = format!("this.{name}");
            if self
                .bindings
                .contains_key(&scoped(0, &field) as &dyn ScopedName)
            {
                name = field;
            }
        }
        let blocked = self.resolving.borrow().contains(&name);
        if let Some(b) = self.lookup(scope, &name).filter(|_| !blocked) {
            self.resolving.borrow_mut().push(name.clone());
            let mut k = self.key_d(b.start, b.end, self.st.tok_scope[b.eq()], depth + 1);
            self.resolving.borrow_mut().pop();
            // a field is only resolved when it is a constant; else it stays `this.x`
            let field_var = name.starts_with("this.")
                && k.parts
                    .iter()
                    .any(|p| !matches!(p, KeyPart::Lit(_) | KeyPart::Const(_)));
            if !k.is_unknown() && !field_var {
                k.idents.push(name.clone());
                return k;
            }
        }
        // Cls.CONST / self::CONST: try the last segment as a file constant
        let last = name
            .rsplit(['.', ':'])
            .next()
            .unwrap_or(&name)
            .trim_start_matches('$');
        if last != name && !name.starts_with("this.") {
            if let Some(b) = self.lookup(0, last) {
                let mut k = self.key_d(b.start, b.end, 0, depth + 1);
                if !k.is_unknown() {
                    k.idents.push(name.clone());
                    return k;
                }
            }
        }
        let constish = name.starts_with("this.")
            || name.contains('.')
            || name.contains("::")
            || (name.chars().any(|c| c.is_ascii_uppercase())
                && !name.chars().any(|c| c.is_ascii_lowercase()));
        KeyExpr {
            parts: vec![if constish {
                KeyPart::Const(name.clone().into())
            } else {
                KeyPart::Var(name.clone().into())
            }]
            .into(),
            idents: vec![name].into(),
        }
    }

    fn lit_key(&self, t: Tok, scope: u32, depth: u32) -> KeyExpr {
        let Some(lit) = t.lit() else {
            return KeyExpr::lit(t.text());
        };
        let mut k = KeyExpr::default();
        for p in lit.parts() {
            match p {
                StrPart::Lit(a, b) => k.push(KeyPart::Lit(
                    lit.text().get(a..b).unwrap_or("").to_string().into(),
                )),
                StrPart::Interp(a, b) => k.append(self.snippet_key(a, b, scope, depth)),
            }
        }
        k
    }

    /// Key of an interpolated expression: re-lexed on its own.
    fn snippet_key(&self, a: usize, b: usize, scope: u32, depth: u32) -> KeyExpr {
        let Some(text) = self.src.get(a..b) else {
            return KeyExpr::unknown();
        };
        let text = text.trim();
        let lexed = lexer::lex(text, self.lang);
        let sub = lexed.toks();
        if sub.len() == 1 && sub.at(0).is_ident() {
            return self.name_key(sub.at(0).text(), scope, depth + 1);
        }
        if sub.iter().enumerate().all(|(k, t)| {
            if k % 2 == 0 {
                t.is_ident()
            } else {
                t.is(".") || t.is("->")
            }
        }) && sub.len() % 2 == 1
        {
            return self.name_key(text, scope, depth + 1);
        }
        KeyExpr::unknown()
    }

    /// A format string with `%s`/`%d`/`%v`/`{}`/`{0}` placeholders filled with `args`.
    fn format_key(&self, fmt: &str, args: &[(usize, usize)], scope: u32, depth: u32) -> KeyExpr {
        let mut k = KeyExpr::default();
        let mut lit = String::new();
        let mut next = 0usize;
        let chars: Vec<char> = fmt.chars().collect();
        let mut i = 0;
        let fill = |k: &mut KeyExpr, lit: &mut String, idx: usize| {
            k.push(KeyPart::Lit(std::mem::take(lit).into()));
            match args.get(idx) {
                Some(&(a, b)) => k.append(self.key_d(a, b, scope, depth + 1)),
                None => k.push(KeyPart::Unknown),
            }
        };
        while i < chars.len() {
            let c = chars[i];
            if c == '%' {
                if chars.get(i + 1) == Some(&'%') {
                    lit.push('%');
                    i += 2;
                    continue;
                }
                let mut j = i + 1;
                while j < chars.len()
                    && (chars[j].is_ascii_digit()
                        || matches!(chars[j], '-' | '+' | '.' | '#' | ' '))
                {
                    j += 1;
                }
                if j < chars.len() && chars[j].is_ascii_alphabetic() {
                    fill(&mut k, &mut lit, next);
                    next += 1;
                    i = j + 1;
                    continue;
                }
            }
            if c == '{' {
                if chars.get(i + 1) == Some(&'{') {
                    lit.push('{');
                    i += 2;
                    continue;
                }
                if let Some(off) = chars[i..].iter().position(|&x| x == '}') {
                    let inner: String = chars[i + 1..i + off].iter().collect();
                    let idx = inner
                        .split(':')
                        .next()
                        .unwrap_or("")
                        .trim()
                        .parse::<usize>()
                        .unwrap_or(next);
                    fill(&mut k, &mut lit, idx);
                    next += 1;
                    i += off + 1;
                    continue;
                }
            }
            if c == '}' && chars.get(i + 1) == Some(&'}') {
                lit.push('}');
                i += 2;
                continue;
            }
            lit.push(c);
            i += 1;
        }
        k.push(KeyPart::Lit(lit.into()));
        if k.parts.is_empty() {
            return KeyExpr::unknown();
        }
        k
    }

    /// The written value: constant, unique, weak or unknown.
    pub fn value(&self, s: usize, e: usize, scope: u32) -> ValueExpr {
        self.value_d(s, e, scope, 0)
    }

    fn value_d(&self, s: usize, e: usize, scope: u32, depth: u32) -> ValueExpr {
        if depth > 5 || e <= s || e > self.toks.len() {
            return ValueExpr::Unknown;
        }
        let (s, e) = self.unwrap(s, e);
        if e <= s {
            return ValueExpr::Unknown;
        }
        let toks = self.toks;
        if e == s + 1 {
            let t = toks.at(s);
            match t.kind() {
                Kind::Str => {
                    if t.lit().is_some_and(|l| l.has_interp()) {
                        return classify(self.text(s, e)).unwrap_or(ValueExpr::Unknown);
                    }
                    return words::quoted_constant(t.text());
                }
                Kind::Num => return words::constant(t.text()),
                Kind::Ident
                    if matches!(
                        t.text(),
                        "true" | "false" | "True" | "False" | "nil" | "null" | "None"
                    ) =>
                {
                    return words::constant(t.text())
                }
                _ => {}
            }
        }
        // b"x" style / negative numbers
        if e == s + 2 && toks.at(s).is("-") && toks.at(s + 1).kind() == Kind::Num {
            return words::constant(self.text(s, e));
        }
        // an empty array: `new byte[0]`, `new byte[]{}`, `[]byte{}`, `[]`, `b''`
        let (tail, whole) = compact_tail(toks.slice(s..e));
        if (tail.ends_with("[0]")
            && toks.at(s).is("new")
            && toks.slice(s..e).iter().all(|t| t.kind() != Kind::Str))
            || (tail.ends_with("[]{}") && e - s <= 6)
            || (whole && tail == "[]")
        {
            return words::constant(self.text(s, e));
        }
        let text = self.text(s, e);
        // a name bound once: follow it
        let is_path = toks.slice(s..e).iter().enumerate().all(|(k, t)| {
            if k % 2 == 0 {
                t.is_ident()
            } else {
                t.is(".") || t.is("->") || t.is("::")
            }
        }) && (e - s) % 2 == 1;
        if is_path {
            if let Some(b) = self.lookup(scope, text) {
                let v = self.value_d(b.start, b.end, self.st.tok_scope[b.eq()], depth + 1);
                if v != ValueExpr::Unknown {
                    return v;
                }
            } else if let Some(b) = self
                .result_values
                .get(&scoped(scope, &norm_name_cow(text)) as &dyn ScopedName)
                .filter(|b| b.end & Bind::MANY == 0)
            {
                // the first result of one call: only its words say something
                if let Some(v) = classify(self.text(b.start as usize, b.end as usize)) {
                    return v;
                }
            }
            return classify(text).unwrap_or(ValueExpr::Unknown);
        }
        // concatenations: weak/unique by words, constant when all literal
        let pieces = self.concat_pieces(s, e);
        if pieces.len() > 1 {
            let vals: Vec<ValueExpr> = pieces
                .iter()
                .map(|&(a, b)| self.value_d(a, b, scope, depth + 1))
                .collect();
            if vals.contains(&ValueExpr::Unique) {
                return ValueExpr::Unique;
            }
            if let Some(w) = vals.iter().find(|v| matches!(v, ValueExpr::Weak(_))) {
                return w.clone();
            }
            if vals.iter().all(|v| matches!(v, ValueExpr::Constant(_))) {
                return words::constant(text);
            }
            return ValueExpr::Unknown;
        }
        classify(text).unwrap_or(ValueExpr::Unknown)
    }

    /// A TTL argument that means "no expiry": a literal zero, null, None, nil.
    pub fn is_zero_ttl(&self, s: usize, e: usize) -> bool {
        let t = self.text(s, e).trim();
        matches!(
            t,
            "0" | "0L"
                | "0l"
                | "None"
                | "null"
                | "nil"
                | "NULL"
                | "undefined"
                | "Duration.ZERO"
                | "TimeSpan.Zero"
                | "0 * time.Second"
                | "-1"
        )
    }
}
