//! The language-neutral model every front-end produces and every rule reads.
//!
//! Invariant: nothing in here names a rule, and nothing a rule needs to know
//! about a language is missing from here. A front-end turns one source file
//! into one [`FileFacts`]; the rules only ever see that value.
//!
//! All positions are byte offsets into the (lossily decoded) source text; the
//! engine turns them into 1-based lines and character columns at the end.

use serde::Serialize;
use std::path::Path;

/// Index into [`FileFacts::scopes`]. Scope 0 is always the file's top level.
pub type ScopeId = u32;

/// The scope of an op that belongs to another file of the project (its own
/// scope ids mean nothing here).
pub const FOREIGN_SCOPE: ScopeId = ScopeId::MAX;
/// Index into [`FileFacts::scripts`]: a file's first 65,536 scripts have
/// one (two bytes keep [`OpKind`] at four); a script past them is left
/// unresolved, as one the front-end could not read.
pub type ScriptId = u16;

/// The id the next script of `scripts` gets, if it gets one ([`ScriptId`]).
pub fn next_script_id(scripts: &[ScriptFact]) -> Option<ScriptId> {
    ScriptId::try_from(scripts.len()).ok()
}

/// A byte range `[start, end)` in the source text.
pub use span::Span;

/// Byte offsets into a source file (a module of its own so that the rest
/// of `facts` reads them through the accessors too).
mod span {
    /// Files are at most `engine::MAX_FILE_BYTES` (256 MiB), so an offset
    /// always fits in the u32 it is held as: an op holds two spans.
    #[derive(
        Clone,
        Copy,
        Debug,
        Default,
        PartialEq,
        Eq,
        Hash,
        PartialOrd,
        Ord,
        serde::Serialize,
        serde::Deserialize,
    )]
    pub struct Span {
        start: u32,
        end: u32,
    }

    const _: () = assert!(crate::engine::MAX_FILE_BYTES <= u32::MAX as u64);

    impl Span {
        pub fn new(start: usize, end: usize) -> Self {
            Span {
                start: super::offset32(start),
                end: super::offset32(end),
            }
        }

        pub fn start(&self) -> usize {
            self.start as usize
        }

        pub fn end(&self) -> usize {
            self.end as usize
        }

        pub fn range(&self) -> std::ops::Range<usize> {
            self.start()..self.end()
        }

        pub fn set_start(&mut self, at: usize) {
            self.start = super::offset32(at);
        }

        pub fn set_end(&mut self, at: usize) {
            self.end = super::offset32(at);
        }
    }
}

#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    Rust,
    Java,
    Kotlin,
    Python,
    JavaScript,
    TypeScript,
    Go,
    Ruby,
    Php,
    CSharp,
    Lua,
    /// Raw redis commands: `.redis` files.
    Redis,
    /// Shell scripts running `redis-cli`.
    Shell,
}

impl Language {
    /// Every language, in declaration order.
    pub const ALL: [Language; 13] = [
        Language::Rust,
        Language::Java,
        Language::Kotlin,
        Language::Python,
        Language::JavaScript,
        Language::TypeScript,
        Language::Go,
        Language::Ruby,
        Language::Php,
        Language::CSharp,
        Language::Lua,
        Language::Redis,
        Language::Shell,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Language::Rust => "rust",
            Language::Java => "java",
            Language::Kotlin => "kotlin",
            Language::Python => "python",
            Language::JavaScript => "javascript",
            Language::TypeScript => "typescript",
            Language::Go => "go",
            Language::Ruby => "ruby",
            Language::Php => "php",
            Language::CSharp => "csharp",
            Language::Lua => "lua",
            Language::Redis => "redis",
            Language::Shell => "shell",
        }
    }

    /// Calls without parentheses (Ruby `recv.name arg`): a name before a
    /// space may be a call (`prefilter::stands_before_call`).
    pub fn has_paren_less_calls(self) -> bool {
        self == Language::Ruby
    }

    /// The language of a file, by its extension; `None` for files locklint does not read.
    pub fn from_path(path: &Path) -> Option<Language> {
        let ext = path.extension()?.to_str()?.as_bytes();
        // lower-cased in place (no `String` per file): no extension below
        // is longer than the buffer
        let mut buf = [0u8; 5];
        let lower = buf.get_mut(..ext.len())?;
        lower.copy_from_slice(ext);
        lower.make_ascii_lowercase();
        Some(match &*lower {
            b"rs" => Language::Rust,
            b"java" => Language::Java,
            b"kt" | b"kts" => Language::Kotlin,
            b"py" => Language::Python,
            b"js" | b"mjs" | b"cjs" | b"jsx" => Language::JavaScript,
            b"ts" | b"tsx" | b"mts" | b"cts" => Language::TypeScript,
            b"go" => Language::Go,
            b"rb" => Language::Ruby,
            b"php" => Language::Php,
            b"cs" => Language::CSharp,
            b"lua" => Language::Lua,
            b"redis" => Language::Redis,
            b"sh" | b"bash" => Language::Shell,
            _ => return None,
        })
    }
}

/// The client library a call was made through. Rules never branch on it; it
/// only selects how the `help:` text spells the fix.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Client {
    #[default]
    Unknown,
    RedisRs,
    Fred,
    Rustis,
    SpringData,
    Jedis,
    Lettuce,
    RedisPy,
    Ioredis,
    NodeRedis,
    GoRedis,
    Redigo,
    Rueidis,
    RedisRb,
    Phpredis,
    Predis,
    StackExchange,
    RedisCli,
    Lua,
}

/// A function, method or closure body that ops are grouped by.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Scope {
    /// Function or method name (`""` for the file's top level).
    pub name: String,
    /// The enclosing type, impl, class, module or trait name, if any.
    pub owner: Option<String>,
    /// `#[test]`, `#[cfg(test)]` module, a test class/function by convention.
    pub is_test: bool,
}

/// One piece of a normalised key expression.
///
/// (Encoded with a one-letter tag per variant, where `rmp_serde` writes a
/// variant's name: a packed call site's arguments are mostly keys and
/// values, and `"Unknown"` took 8 bytes of a site's 85.)
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum KeyPart {
    /// Literal text (a string literal, or a constant resolved to its literal).
    #[serde(rename = "L")]
    Lit(Box<str>),
    /// A named constant, static, final field, or `self.field` / `this.field`
    /// that could not be resolved to a literal: evidence for correlation.
    #[serde(rename = "C")]
    Const(Box<str>),
    /// A local variable or parameter.
    #[serde(rename = "V")]
    Var(Box<str>),
    /// Something the front-end could not reduce (a call, an index, …).
    #[serde(rename = "U")]
    Unknown,
}

/// A key's parts ([`KeyExpr::parts`]): none, one inline, or a boxed list.
/// Most keys are one part: a list of its own took 24 bytes of heap beside
/// the 24 of the list, an op each (redis-cli lines: 0.5 MB at the peak).
/// Reads as a slice of parts; equal parts are equal whichever way held.
#[derive(Clone, Default)]
pub struct Parts(PartsRepr);

#[derive(Clone, Default)]
#[allow(clippy::box_collection)]
enum PartsRepr {
    #[default]
    None,
    One(KeyPart),
    /// (A `Vec` boxed on purpose: one pointer beside the part's tag keeps
    /// the whole at a part's size.)
    Many(Box<Vec<KeyPart>>),
}

const _: () = assert!(std::mem::size_of::<Parts>() == 24);

impl Parts {
    pub fn as_slice(&self) -> &[KeyPart] {
        match &self.0 {
            PartsRepr::None => &[],
            PartsRepr::One(p) => std::slice::from_ref(p),
            PartsRepr::Many(v) => v,
        }
    }

    pub fn push(&mut self, part: KeyPart) {
        match &mut self.0 {
            PartsRepr::None => self.0 = PartsRepr::One(part),
            PartsRepr::One(_) => {
                let PartsRepr::One(first) = std::mem::take(&mut self.0) else {
                    unreachable!()
                };
                let mut v = Vec::with_capacity(4);
                v.push(first);
                v.push(part);
                self.0 = PartsRepr::Many(Box::new(v));
            }
            PartsRepr::Many(v) => v.push(part),
        }
    }

    pub fn pop(&mut self) -> Option<KeyPart> {
        match &mut self.0 {
            PartsRepr::None => None,
            PartsRepr::One(_) => match std::mem::take(&mut self.0) {
                PartsRepr::One(p) => Some(p),
                _ => unreachable!(),
            },
            PartsRepr::Many(v) => v.pop(),
        }
    }

    pub fn retain(&mut self, mut keep: impl FnMut(&KeyPart) -> bool) {
        match &mut self.0 {
            PartsRepr::None => {}
            PartsRepr::One(p) => {
                if !keep(p) {
                    self.0 = PartsRepr::None;
                }
            }
            PartsRepr::Many(v) => v.retain(keep),
        }
    }

    /// Gives back a list's spare room (one part or none is held inline).
    pub fn shrink_to_fit(&mut self) {
        if let PartsRepr::Many(v) = &mut self.0 {
            if v.len() > 1 {
                v.shrink_to_fit();
                return;
            }
            self.0 = match v.pop() {
                Some(p) => PartsRepr::One(p),
                None => PartsRepr::None,
            };
        }
    }
}

impl std::ops::Deref for Parts {
    type Target = [KeyPart];
    fn deref(&self) -> &[KeyPart] {
        self.as_slice()
    }
}

impl std::ops::DerefMut for Parts {
    fn deref_mut(&mut self) -> &mut [KeyPart] {
        match &mut self.0 {
            PartsRepr::None => &mut [],
            PartsRepr::One(p) => std::slice::from_mut(p),
            PartsRepr::Many(v) => v,
        }
    }
}

impl From<Vec<KeyPart>> for Parts {
    fn from(mut v: Vec<KeyPart>) -> Parts {
        Parts(match v.len() {
            0 => PartsRepr::None,
            1 => PartsRepr::One(v.pop().expect("one part")),
            _ => PartsRepr::Many(Box::new(v)),
        })
    }
}

impl FromIterator<KeyPart> for Parts {
    fn from_iter<I: IntoIterator<Item = KeyPart>>(iter: I) -> Parts {
        let mut parts = Parts::default();
        for p in iter {
            parts.push(p);
        }
        parts
    }
}

impl IntoIterator for Parts {
    type Item = KeyPart;
    type IntoIter = std::iter::Chain<std::option::IntoIter<KeyPart>, std::vec::IntoIter<KeyPart>>;
    fn into_iter(self) -> Self::IntoIter {
        let (one, many) = match self.0 {
            PartsRepr::None => (None, Vec::new()),
            PartsRepr::One(p) => (Some(p), Vec::new()),
            PartsRepr::Many(v) => (None, *v),
        };
        one.into_iter().chain(many)
    }
}

impl<'p> IntoIterator for &'p Parts {
    type Item = &'p KeyPart;
    type IntoIter = std::slice::Iter<'p, KeyPart>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// The equality, hash, debug form and encoding of a list type that reads
/// as a slice (`Deref`), taken from the slice: how the list is held does
/// not show.
macro_rules! as_its_slice {
    ($list:ty, $item:ty) => {
        impl PartialEq for $list {
            fn eq(&self, other: &$list) -> bool {
                **self == **other
            }
        }

        impl Eq for $list {}

        impl PartialEq<Vec<$item>> for $list {
            fn eq(&self, other: &Vec<$item>) -> bool {
                **self == **other
            }
        }

        impl PartialEq<&[$item]> for $list {
            fn eq(&self, other: &&[$item]) -> bool {
                **self == **other
            }
        }

        impl std::hash::Hash for $list {
            fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
                (**self).hash(h);
            }
        }

        impl std::fmt::Debug for $list {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                (**self).fmt(f)
            }
        }

        impl serde::Serialize for $list {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                (**self).serialize(s)
            }
        }
    };
}

as_its_slice!(Parts, KeyPart);

/// A key expression reduced to constant parts and variable names, so that
/// `format!("lock:{}", id)`, `format!("lock:{id}")`, `"lock:" + id` and
/// `f"lock:{id}"` are all `[Lit("lock:"), Var("id")]`.
///
/// (Encoded as its parts and its names, the names left out, as a nil,
/// where they are the names of its variable and constant parts in order:
/// most keys of a call's arguments, `key`, `lockKey`, spelled twice.)
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, serde::Deserialize)]
#[serde(from = "KeyWire")]
pub struct KeyExpr {
    pub parts: Parts,
    /// Every identifier that took part in building the key, including the
    /// names of constants that were resolved to literals (`LOCK_KEY`), for
    /// the "reads like a lock" test.
    pub idents: Idents,
}

/// A key's identifiers ([`KeyExpr::idents`]), behind one pointer and
/// none allocated where there are none (a literal key): a list inline
/// took 24 of the 136 bytes of every op.
/// (A `Vec` boxed on purpose: one pointer inline, not three.)
#[derive(Clone, Default)]
#[allow(clippy::box_collection)]
pub struct Idents(Option<Box<Vec<String>>>);

impl Idents {
    pub fn push(&mut self, s: String) {
        self.0.get_or_insert_with(Default::default).push(s);
    }

    pub fn truncate(&mut self, n: usize) {
        if let Some(v) = &mut self.0 {
            v.truncate(n);
        }
        self.drop_empty();
    }

    pub fn shrink_to_fit(&mut self) {
        if let Some(v) = &mut self.0 {
            v.shrink_to_fit();
        }
        self.drop_empty();
    }

    /// (No list is kept empty: equal lists are one value.)
    fn drop_empty(&mut self) {
        if self.0.as_ref().is_some_and(|v| v.is_empty()) {
            self.0 = None;
        }
    }
}

impl std::ops::Deref for Idents {
    type Target = [String];
    fn deref(&self) -> &[String] {
        self.0.as_deref().map_or(&[], Vec::as_slice)
    }
}

impl std::ops::DerefMut for Idents {
    fn deref_mut(&mut self) -> &mut [String] {
        self.0.as_deref_mut().map_or(&mut [], Vec::as_mut_slice)
    }
}

impl From<Vec<String>> for Idents {
    fn from(v: Vec<String>) -> Idents {
        Idents((!v.is_empty()).then(|| Box::new(v)))
    }
}

impl Extend<String> for Idents {
    fn extend<I: IntoIterator<Item = String>>(&mut self, iter: I) {
        let mut iter = iter.into_iter().peekable();
        if iter.peek().is_some() {
            self.0.get_or_insert_with(Default::default).extend(iter);
        }
    }
}

impl IntoIterator for Idents {
    type Item = String;
    type IntoIter = std::vec::IntoIter<String>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.map(|v| *v).unwrap_or_default().into_iter()
    }
}

impl<'i> IntoIterator for &'i Idents {
    type Item = &'i String;
    type IntoIter = std::slice::Iter<'i, String>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

as_its_slice!(Idents, String);

/// A [`KeyExpr`] as it is decoded: `idents` is `None` where they are the
/// names of its variable and constant parts.
#[derive(serde::Deserialize)]
struct KeyWire {
    parts: Vec<KeyPart>,
    idents: Option<Vec<String>>,
}

/// The names of a key's constant and variable parts, in order.
fn part_names(parts: &[KeyPart]) -> impl Iterator<Item = &str> {
    parts.iter().filter_map(|p| match p {
        KeyPart::Const(n) | KeyPart::Var(n) => Some(&**n),
        _ => None,
    })
}

impl From<KeyWire> for KeyExpr {
    fn from(w: KeyWire) -> KeyExpr {
        let idents = w.idents.unwrap_or_else(|| {
            // (at its exact length, as a list decoded whole is: collected,
            // one name took the room of four)
            let mut idents = Vec::with_capacity(part_names(&w.parts).count());
            idents.extend(part_names(&w.parts).map(str::to_string));
            idents
        });
        KeyExpr {
            parts: w.parts.into(),
            idents: idents.into(),
        }
    }
}

impl serde::Serialize for KeyExpr {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeTuple;
        let mut names = part_names(&self.parts);
        let implied =
            self.idents.iter().all(|i| names.next() == Some(i.as_str())) && names.next().is_none();
        let mut t = s.serialize_tuple(2)?;
        t.serialize_element(&self.parts)?;
        t.serialize_element(&(!implied).then_some(&self.idents))?;
        t.end()
    }
}

/// Longest literal part a key keeps whole: a longer one (a template, an
/// SVG sprite passed where a key could be) is kept as its first
/// [`KEY_LIT_HEAD`] bytes, `…` and a hash of the whole, so that equal
/// literals still make equal keys (each call site that passed a 641 kB
/// sprite by name carried a copy of it).
pub const KEY_LIT_MAX: usize = 256;
const KEY_LIT_HEAD: usize = 64;

/// `s` as a key's literal part ([`KEY_LIT_MAX`]).
fn key_lit(s: &str) -> String {
    if s.len() <= KEY_LIT_MAX {
        return s.to_string();
    }
    short_key_lit(s)
}

#[cold]
fn short_key_lit(s: &str) -> String {
    use std::hash::Hasher;
    let mut cut = KEY_LIT_HEAD;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut h = rustc_hash::FxHasher::default();
    h.write(s.as_bytes());
    h.write_usize(s.len());
    format!("{}…{:016x}", &s[..cut], h.finish())
}

impl KeyExpr {
    pub fn lit(s: &str) -> Self {
        KeyExpr {
            parts: vec![KeyPart::Lit(key_lit(s).into())].into(),
            idents: Idents::default(),
        }
    }

    pub fn var(name: &str) -> Self {
        KeyExpr {
            parts: vec![KeyPart::Var(name.to_string().into())].into(),
            idents: vec![name.to_string()].into(),
        }
    }

    /// Nothing is known about this key.
    pub fn unknown() -> Self {
        KeyExpr {
            parts: vec![KeyPart::Unknown].into(),
            idents: Idents::default(),
        }
    }

    pub fn is_unknown(&self) -> bool {
        self.parts.is_empty() || self.parts.iter().all(|p| matches!(p, KeyPart::Unknown))
    }

    /// Appends `other`, merging adjacent literals, so concatenation and
    /// interpolation normalise to the same parts.
    pub fn push(&mut self, mut part: KeyPart) {
        if let KeyPart::Lit(s) = &mut part {
            if s.is_empty() {
                return;
            }
            if let Some(KeyPart::Lit(prev)) = self.parts.last_mut() {
                // (a new text: a part holds its literal at its length; the
                // joined one is at most `KEY_LIT_MAX` and the piece)
                let joined = [&**prev, &**s].concat();
                *prev = if joined.len() > KEY_LIT_MAX {
                    short_key_lit(&joined)
                } else {
                    joined
                }
                .into();
                return;
            }
            if s.len() > KEY_LIT_MAX {
                *s = short_key_lit(s).into();
            }
        }
        self.parts.push(part);
    }

    /// Gives back the spare room of a finished key: its parts and names grew
    /// by doubling while it was put together, and the facts keep it to the
    /// end of the run.
    pub fn shrink_to_fit(&mut self) {
        self.parts.shrink_to_fit();
        self.idents.shrink_to_fit();
    }

    pub fn append(&mut self, other: KeyExpr) {
        for p in other.parts {
            self.push(p);
        }
        self.idents.extend(other.idents);
    }

    /// A constant part (a literal prefix, a named constant or field) that makes
    /// a match across functions meaningful. A literal made only of
    /// separators (`namespace + "-" + key`, `a + ":" + b`) names nothing: a
    /// key-prefixing facade joins its caller's parts with it in every method.
    pub fn has_constant_part(&self) -> bool {
        self.parts.iter().any(|p| {
            matches!(p, KeyPart::Lit(s) if s.chars().any(char::is_alphanumeric))
                || matches!(p, KeyPart::Const(_))
        })
    }

    /// A readable form for messages: `"lock:" + id` style.
    pub fn display(&self) -> String {
        let mut out = String::new();
        for p in &self.parts {
            match p {
                KeyPart::Lit(s) => out.push_str(s),
                KeyPart::Const(n) | KeyPart::Var(n) => {
                    out.push('{');
                    out.push_str(n);
                    out.push('}');
                }
                KeyPart::Unknown => out.push_str("{?}"),
            }
        }
        out
    }
}

/// What is written as the lock's value.
///
/// (Encoded with a one-letter tag per variant, as [`KeyPart`] is.)
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ValueExpr {
    /// A literal, or a constant/local bound once to a literal. The text is the literal.
    #[serde(rename = "C")]
    Constant(Box<str>),
    /// A UUID, random bytes, nanoid, … : unique per acquisition.
    #[serde(rename = "Q")]
    Unique,
    /// Not unique across processes: thread id, pid, host name alone, time, a
    /// process-local counter, a few random digits. The text says which.
    #[serde(rename = "W")]
    Weak(Box<str>),
    /// Serialised data (`json.dumps(result)`, `JSON.stringify(v)`,
    /// `serialize($v)`): a cache fill, not a token. The text says how.
    #[serde(rename = "D")]
    Data(Box<str>),
    /// Anything else (a parameter, a field, a call we do not know).
    #[default]
    #[serde(rename = "U")]
    Unknown,
}

/// The Redis operation a call performs, as far as locks are concerned.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum OpKind {
    /// A set-if-absent write (`SET k v NX`, `SETNX`, `setIfAbsent`, `LockTake`, …).
    /// `expiry` is false only when no TTL option is present or the TTL is a
    /// literal zero/None/null/nil.
    Acquire { expiry: bool },
    /// A plain `SET` without `NX` (and without `XX`); `expiry` when it carries `PX`/`EX`.
    Set { expiry: bool },
    /// `EXPIRE`/`PEXPIRE`/`EXPIREAT`/`PEXPIREAT`, or `SET … XX PX`
    /// (Spring `setIfPresent(k, v, timeout)`): changes the TTL of an existing key.
    Expire,
    /// `DEL`/`UNLINK` or a client method that does it. `checked` for releases
    /// that compare ownership atomically (`DELEX … IFEQ`, `LockRelease`,
    /// a conditional transaction, …).
    Release { checked: bool },
    /// An atomic checked extend (`LockExtend`, `SET … IFEQ … PX`).
    CheckedExtend,
    /// `GET` of the key (or `MGET` including it).
    Get,
    /// `GETDEL`: a single-use token is consumed.
    GetDel,
    /// `GETSET`: the timestamp takeover of the old SETNX algorithm.
    GetSet,
    /// A Lua script run on this key (`EVAL`, `EVALSHA`, `FCALL`, a script object).
    /// `script` when the front-end could resolve the script text in this file.
    Eval { script: Option<ScriptId> },
    /// `EXISTS` of the key (`hasKey`, `exists?`, `KeyExists`, …): a read that
    /// only says whether the key is there. A `TTL`/`PTTL` (Spring
    /// `getExpire`) is one too: its reply is -2 when the key is absent.
    Exists,
    /// `INCR`/`INCRBY`/`DECR`/`DECRBY`/`INCRBYFLOAT`/`HINCRBY` (Spring
    /// `increment`/`decrement`): the key is a counter.
    Incr,
    /// A write of members to a sorted set, set or list (`ZADD`, `ZINCRBY`,
    /// `ZREM`, `ZREMRANGEBYSCORE`, `SADD`, `SREM`, `LPUSH`, `RPUSH`, `LREM`
    /// and their client spellings): the key is a collection — a semaphore's
    /// slot pool, a queue — whose TTL or delete takes no holder's slot.
    /// Neither an acquire, a release, an extend nor a read. Hashes are not
    /// collections here: a hash lock's owner field is a real lock.
    Members,
    /// `HSETNX`: a hash field written only if it is absent (`hsetnx`,
    /// `hSetNx`, Spring `opsForHash().putIfAbsent`, StackExchange
    /// `HashSet(k, f, v, When.NotExists)`), how a hash lock is taken. A hash
    /// field has no TTL of its own: the key expires only through an
    /// EXPIRE. Not an acquire of SPEC §2 (no set-if-absent of the key): it
    /// only tells how the key is taken (SPEC §2 Expirable lock).
    FieldAcquire,
}

/// One Redis operation on one key.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Op {
    pub kind: OpKind,
    pub key: KeyExpr,
    /// The written value, for acquires and plain sets, other than
    /// [`ValueExpr::Unknown`]: read and written through [`Op::value`] and
    /// [`Op::set_value`].
    #[serde(deserialize_with = "shared_value_de")]
    value_box: Option<std::sync::Arc<ValueExpr>>,
    pub scope: ScopeId,
    /// Position in the file; orders ops inside a scope (source order).
    pub order: u32,
    /// Block nesting depth inside the scope (0 = the function body
    /// itself), at most [`Op::MAX_DEPTH`]: set through [`Op::set_depth`].
    depth: u16,
    /// The whole call.
    pub span: Span,
    /// Where the method or command name stands (first line of a split call).
    pub name_span: Span,
    pub client: Client,
    /// [`Op::atomic`], [`Op::watched`], and whether the written value is
    /// [`ValueExpr::Unknown`] (a variable, the most common value, where
    /// a box took 24 bytes an acquire): one byte.
    flags: u8,
}

/// [`Op::flags`]: inside MULTI/EXEC or an atomic pipeline.
const OP_ATOMIC: u8 = 1;
/// [`Op::flags`]: under `WATCH` of the key.
const OP_WATCHED: u8 = 2;
/// [`Op::flags`]: the written value is [`ValueExpr::Unknown`].
const OP_VALUE_UNKNOWN: u8 = 4;

impl Op {
    /// An op of `kind` on `key` writing `value`, at `span` (its name at
    /// `name_span`) in `scope`; the position facts (`order`, `depth`,
    /// `atomic`, `watched`) at their defaults.
    pub fn new(
        kind: OpKind,
        key: KeyExpr,
        value: Option<ValueExpr>,
        scope: ScopeId,
        span: Span,
        name_span: Span,
        client: Client,
    ) -> Op {
        let mut op = Op {
            kind,
            key,
            value_box: None,
            scope,
            order: 0,
            depth: 0,
            span,
            name_span,
            client,
            flags: 0,
        };
        op.set_value(value);
        op
    }

    /// The written value, for acquires and plain sets.
    pub fn value(&self) -> Option<&ValueExpr> {
        static UNKNOWN: ValueExpr = ValueExpr::Unknown;
        if self.flags & OP_VALUE_UNKNOWN != 0 {
            Some(&UNKNOWN)
        } else {
            self.value_box.as_deref()
        }
    }

    /// (A value equal to one of the last few this thread set is shared
    /// with it: the constants and unique tokens of a file's locks are most
    /// often one value written by every acquire, a box each took 24
    /// bytes an acquire.)
    pub fn set_value(&mut self, value: Option<ValueExpr>) {
        self.set_flag(OP_VALUE_UNKNOWN, value == Some(ValueExpr::Unknown));
        self.value_box = value.filter(|v| *v != ValueExpr::Unknown).map(shared_value);
    }

    /// The deepest nesting an op tells apart: deeper ops all read as this
    /// deep (a file nested 65,535 blocks deep is no hand-written code).
    pub const MAX_DEPTH: u32 = u16::MAX as u32;

    /// Block nesting depth inside the scope (0 = the function body itself).
    pub fn depth(&self) -> u32 {
        u32::from(self.depth)
    }

    /// Sets [`Op::depth`], at most [`Op::MAX_DEPTH`].
    pub fn set_depth(&mut self, depth: u32) {
        self.depth = depth.min(Self::MAX_DEPTH) as u16;
    }

    /// Inside MULTI/EXEC or an atomic pipeline.
    pub fn atomic(&self) -> bool {
        self.flags & OP_ATOMIC != 0
    }

    pub fn set_atomic(&mut self, atomic: bool) {
        self.set_flag(OP_ATOMIC, atomic);
    }

    /// Under `WATCH` of a key (an optimistic transaction).
    pub fn watched(&self) -> bool {
        self.flags & OP_WATCHED != 0
    }

    pub fn set_watched(&mut self, watched: bool) {
        self.set_flag(OP_WATCHED, watched);
    }

    fn set_flag(&mut self, flag: u8, on: bool) {
        if on {
            self.flags |= flag;
        } else {
            self.flags &= !flag;
        }
    }
}

// (a file of dense calls holds tens of thousands)
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<Op>() == 72);
const _: () = assert!(std::mem::size_of::<OpKind>() == 4);

/// A value read back from the cache, shared as [`Op::set_value`] shares.
fn shared_value_de<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<std::sync::Arc<ValueExpr>>, D::Error> {
    use serde::Deserialize;
    Ok(Option::<ValueExpr>::deserialize(d)?.map(shared_value))
}

/// How many of the values set last [`shared_value`] keeps to share.
const RECENT_VALUES: usize = 4;

/// `v` as the one copy of it among the last [`RECENT_VALUES`] values this
/// thread set, or a new one (then kept in place of the oldest).
fn shared_value(v: ValueExpr) -> std::sync::Arc<ValueExpr> {
    use std::cell::RefCell;
    use std::sync::Arc;
    thread_local! {
        static RECENT: RefCell<([Option<Arc<ValueExpr>>; RECENT_VALUES], usize)> =
            RefCell::new((Default::default(), 0));
    }
    RECENT.with(|recent| {
        let mut recent = recent.borrow_mut();
        let (kept, next) = &mut *recent;
        if let Some(same) = kept.iter().flatten().find(|k| ***k == v) {
            return Arc::clone(same);
        }
        let new = Arc::new(v);
        kept[*next] = Some(Arc::clone(&new));
        *next = (*next + 1) % RECENT_VALUES;
        new
    })
}

/// A place where a failed or null acquisition is treated as "acquired"
/// (`.unwrap_or(true)`, `Err(_) => true`, `acquired == null || acquired`, …).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FailOpen {
    pub span: Span,
    /// The key of the acquire whose failure is turned into success.
    pub key: KeyExpr,
    pub scope: ScopeId,
    pub client: Client,
}

/// A write that runs only where an earlier read of the same key, in the same
/// function, found the key absent: `if !exists(k) { set(k, …) }`, `v =
/// get(k); if v == null { set(k, …) }`, `if exists(k) { return }` followed
/// by `set(k, …)`, `while exists(k) { wait }` followed by `set(k, …)`.
/// Both ends are named by the `name_span` of their op.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AbsenceGuard {
    /// The `Get` or `Exists` op that looked at the key.
    pub check: Span,
    /// The write that runs only when that look found nothing.
    pub write: Span,
}

/// An argument of a `redis.call` inside a Lua script.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum LuaArg {
    /// `KEYS[i]` (1-based), or a local alias of it.
    Keys(u32),
    /// `KEYS[i]` with string literals joined before and/or after it
    /// (`"lock_" .. KEYS[1]`, `KEYS[1] .. ":lock"`): the script builds the
    /// key it touches from the caller's key. Boxed: it is rare, and its two
    /// strings inline would make every argument 56 bytes instead of 24.
    KeysAffixed(Box<AffixedKey>),
    /// `ARGV[i]` (1-based), or a local alias of it.
    Argv(u32),
    /// A string or number literal.
    Literal(Box<str>),
    /// Anything else.
    Other,
}

/// A `KEYS` entry with string literals joined to it ([`LuaArg::KeysAffixed`]).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AffixedKey {
    /// The `KEYS` index (1-based).
    pub index: u32,
    /// At least one of `prefix` and `suffix` is non-empty.
    pub prefix: String,
    pub suffix: String,
}

/// One `redis.call`/`redis.pcall` in a script.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LuaCall {
    /// The command, lower-cased (`"del"`, `"pexpire"`, …); `"?"` when not a literal.
    pub command: String,
    pub args: Vec<LuaArg>,
    /// The call runs only after the stored value was compared with an `ARGV`
    /// (or an alias of one): the ownership check of a safe release.
    pub guarded: bool,
    /// The call runs only in a branch where a read found the key absent
    /// (`local v = get(KEYS[1]); if v == false then … end`, `if exists(…) == 0`):
    /// the script creates the key there.
    pub absent: bool,
    /// Byte range of the call inside the script text.
    pub span: Span,
}

/// What the Lua analyser learned about one script text.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LuaFacts {
    pub calls: Vec<LuaCall>,
    /// The script did not lex/parse cleanly; calls are a best effort.
    pub partial: bool,
}

/// A Lua script found in the file: a string literal handed to a script API,
/// a script constant, or a whole `.lua` file.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ScriptFact {
    /// The variable, constant or file stem it is known by (`RELEASE_SCRIPT`, `unlock`).
    pub name: Option<String>,
    /// The decoded script text.
    pub text: String,
    /// Anchors `(offset in text, byte offset in source)`, sorted by text
    /// offset: a text offset maps to `source + (offset - text_anchor)` from
    /// the last anchor at or before it.
    pub anchors: Vec<(usize, usize)>,
    pub lua: LuaFacts,
    pub client: Client,
}

impl ScriptFact {
    /// Maps a byte offset in the script text to a byte offset in the source.
    pub fn to_source(&self, offset: usize) -> usize {
        let idx = self.anchors.partition_point(|&(t, _)| t <= offset);
        if idx == 0 {
            return self.anchors.first().map(|a| a.1).unwrap_or(0);
        }
        let (t, s) = self.anchors[idx - 1];
        s + (offset - t)
    }
}

/// Where the parts of one call stand, for fixes that rewrite it (see
/// `src/fix.rs`). Matched to its op by `span`, which equals the op's `span`.
/// Front-ends that know a call's arguments record it; nothing else reads it.
/// Positions are `u32` (files are capped at 256 MiB) and the arguments sit
/// in the file's one list ([`CallSites`]): a site with a list of its own
/// took about 120 bytes, a dense file holds one per op.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OpCall {
    span: Span,
    /// Where the receiver chain before the method name starts (`r`,
    /// `$redis`, `template.opsForValue()`); [`NO_RECEIVER`] when there is
    /// none. (Its end is read by nothing: a span took 4 bytes more a site.)
    receiver_start: u32,
    /// Its arguments: where they start in [`CallSites::args`], how many.
    args: [u32; 2],
}

/// Room for `more` entries in `v`, grown by a quarter at a time (at least
/// `more`, at least 4 as `Vec` starts: most files have a handful of ops,
/// and 16 made them larger): for the lists pushed one entry at a time and kept
/// to the end of a run. Doubling left up to half their room spare and,
/// while they grew, held the old list beside the new one (40,000
/// redis-cli commands: 8.9 MB of ops for 5.4 MB of them).
pub fn reserve_by_quarters<T>(v: &mut Vec<T>, more: usize) {
    if v.capacity() - v.len() < more {
        v.reserve_exact(more.max(v.len() / 4).max(4));
    }
}

/// The Fx hash of `q`: the key of the tables that hold 4-byte ids and find
/// their entries by hash (`hashbrown::HashTable`) instead of keeping a key.
pub fn fx_hash<Q: std::hash::Hash + ?Sized>(q: &Q) -> u64 {
    use std::hash::BuildHasher;
    rustc_hash::FxBuildHasher.hash_one(q)
}

/// Pushes `x` onto `v`, grown as [`reserve_by_quarters`] grows it.
pub fn push_by_quarters<T>(v: &mut Vec<T>, x: T) {
    reserve_by_quarters(v, 1);
    v.push(x);
}

/// A byte offset as the `u32` of the compact facts.
pub(crate) fn offset32(at: usize) -> u32 {
    u32::try_from(at).unwrap_or(u32::MAX)
}

impl OpCall {
    pub fn span(&self) -> Span {
        self.span
    }

    /// Where the receiver chain before the method name starts, if there
    /// is one.
    pub fn receiver_start(&self) -> Option<usize> {
        (self.receiver_start != NO_RECEIVER).then_some(self.receiver_start as usize)
    }
}

/// [`OpCall::receiver_start`] of a call without a receiver.
const NO_RECEIVER: u32 = u32::MAX;

const _: () = assert!(std::mem::size_of::<OpCall>() == 20);

/// The call sites of a file's ops ([`OpCall`]), their arguments in one list.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CallSites {
    sites: Vec<OpCall>,
    /// Each argument in order, without the commas, site after site (two
    /// u32 offsets each: a `Span` took 16 bytes, two arguments a call).
    args: Vec<Span>,
}

/// The arguments of one call site ([`CallSites::args`]), read as spans.
#[derive(Clone, Copy, Debug, Default)]
pub struct Args<'a>(&'a [Span]);

impl<'a> Args<'a> {
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn get(&self, i: usize) -> Option<Span> {
        self.0.get(i).copied()
    }

    /// The `i`th argument (there must be one, as for indexing a slice).
    pub fn at(&self, i: usize) -> Span {
        self.0[i]
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = Span> + ExactSizeIterator + 'a {
        self.0.iter().copied()
    }

    pub fn to_vec(&self) -> Vec<Span> {
        self.0.to_vec()
    }
}

impl CallSites {
    /// A call at `span`, its receiver (empty when there is none) and its
    /// arguments in order.
    pub fn push(&mut self, span: Span, receiver: Span, args: impl IntoIterator<Item = Span>) {
        let receiver_start = if receiver.end() > receiver.start() {
            offset32(receiver.start()).min(NO_RECEIVER - 1)
        } else {
            NO_RECEIVER
        };
        let from = self.args.len();
        for a in args {
            push_by_quarters(&mut self.args, a);
        }
        push_by_quarters(
            &mut self.sites,
            OpCall {
                span,
                receiver_start,
                args: [offset32(from), offset32(self.args.len() - from)],
            },
        );
    }

    /// Room for `sites` more sites of `args` arguments in all.
    pub fn reserve_exact(&mut self, sites: usize, args: usize) {
        self.sites.reserve_exact(sites);
        self.args.reserve_exact(args);
    }

    pub fn shrink_to_fit(&mut self) {
        self.sites.shrink_to_fit();
        self.args.shrink_to_fit();
    }

    pub fn iter(&self) -> std::slice::Iter<'_, OpCall> {
        self.sites.iter()
    }

    pub fn as_slice(&self) -> &[OpCall] {
        &self.sites
    }

    pub fn len(&self) -> usize {
        self.sites.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sites.is_empty()
    }

    /// The arguments of `site`, one of this list's.
    pub fn args(&self, site: &OpCall) -> Args<'_> {
        let from = site.args[0] as usize;
        Args(
            self.args
                .get(from..from + site.args[1] as usize)
                .unwrap_or(&[]),
        )
    }
}

/// Everything one front-end learned about one file.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FileFacts {
    pub language: Language,
    pub scopes: Vec<Scope>,
    pub ops: Vec<Op>,
    pub scripts: Vec<ScriptFact>,
    pub fail_opens: Vec<FailOpen>,
    /// Writes guarded by a check that their key is absent, sorted by `write`.
    pub absence_guards: Vec<AbsenceGuard>,
    /// The `name_span`s of ops that run only where a set-if-absent of the
    /// same key, in the same function, was not reached: it stands in a
    /// branch that returns (`if nx { return setnx(k, …) }; return set(k, …)`),
    /// so the op is the other path of one write, not a step after an
    /// acquire. Sorted.
    pub exclusive_of_acquire: Vec<Span>,
    /// Code that runs only when something failed: `catch`/`except`/`rescue`
    /// handlers, `if err != nil` bodies, a promise's `.catch(…)` callback.
    /// (`finally`/`ensure`/`defer` bodies are not in here: they run on success too.)
    pub failure_spans: Vec<Span>,
    /// Code that runs only while the holder's own clock says its lease is
    /// still valid: the body of `if elapsed < ttl`, `if now < deadline`.
    pub validity_spans: Vec<Span>,
    /// Code that runs only when the caller asked for a deliberate override:
    /// the body of `if ($override)`, `if force:` (SPEC §2 deliberate names).
    #[serde(default)]
    pub deliberate_spans: Vec<Span>,
    /// Notes for verbose output (e.g. "syn could not parse; pattern fallback").
    pub notes: Vec<String>,
    /// The calls behind ops, for fixes (not every op has one).
    pub call_sites: CallSites,
    /// What the project link (phase two) needs from this file.
    pub link: LinkFacts,
    /// The TTL arguments of set-if-absent writes the front-end could read
    /// (not every acquire has one), matched to their op by `name_start`.
    #[serde(default)]
    pub ttls: Vec<OpTtl>,
    /// The hard limit, in seconds, after which the platform kills a run of
    /// this file's code (a Next.js/Vercel route's `export const maxDuration
    /// = 600`): a lease at least that long never expires while its holder
    /// runs. `None` when the file declares none.
    #[serde(default)]
    pub run_limit_secs: Option<u64>,
    /// The hard limits, in seconds, after which a worker kills a run of one
    /// function (a Celery task's `@app.task(time_limit=600)`), as (the
    /// function's scope, the limit).
    #[serde(default)]
    pub task_limits: Vec<(ScopeId, u64)>,
    /// Where the code may wait on something other than Redis (byte offsets,
    /// sorted): a call the front-end cannot show to be a Redis command, a
    /// log line or a pure computation (JS/TS: an awaited one, or a
    /// function of the file that awaits one); a loop whose every turn makes
    /// a Redis round trip; an `await` of no call. Only those a rule may
    /// read are kept: the pattern front-end records, in each function that
    /// can hold a short critical section, the first wait after the end of
    /// each acquire (own, or at a call the link may resolve) before the
    /// furthest release there. `None` when the front-end does not record
    /// them (nothing is then known to be quick).
    #[serde(default)]
    pub waits: Option<Vec<usize>>,
    /// Ops that run only when their function returns (Go `defer`), sorted
    /// by `span`.
    #[serde(default)]
    pub deferred: Vec<Deferred>,
    /// Calls whose result is tested for failure only after a `defer` that
    /// follows them (`ok, err := Lock(k)` … `defer Unlock(k)` … `if !ok {
    /// return }`): the deferred code runs also where the call failed. As
    /// (the `Deferred::span` start, the call's method-name start); the
    /// call may be a client command or a project function.
    #[serde(default)]
    pub late_result_tests: Vec<(usize, usize)>,
    /// The task limits written as a constant of another module
    /// (`time_limit=settings.TASK_TIME_LIMIT`), as (scope, the constant's
    /// last name): the project resolves them (`project::limits`).
    #[serde(default)]
    pub task_limit_names: Vec<(ScopeId, String)>,
    /// The module-level integer constants with a time word in their name
    /// (`LOCK_TTL = 60 * 5`, `TASK_TIME_LIMIT = int(os.environ.get('X',
    /// 4260))`: the default), with their value: what a TTL or a task limit
    /// written as a name in another file is (`project::limits`).
    #[serde(default)]
    pub int_consts: Vec<(String, u64)>,
}

/// The ops whose `name_span` lies in `span` run when function `scope`
/// returns: at the end of its body, `runs_at` (a byte offset).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Deferred {
    pub span: Span,
    pub scope: ScopeId,
    pub runs_at: usize,
}

/// Spans a front-end recorded (failure handlers, force-flag or
/// validity-guard bodies; they may nest or overlap), sorted by start with
/// the greatest end up to each: whether one holds an offset is a binary
/// search.
pub struct SpanIndex {
    starts: Vec<usize>,
    /// The greatest end among the spans up to each (in start order).
    reach: Vec<usize>,
}

impl SpanIndex {
    pub fn new(spans: &[Span]) -> Self {
        let mut sorted: Vec<(usize, usize)> = spans.iter().map(|s| (s.start(), s.end())).collect();
        sorted.sort_unstable();
        let mut reach = Vec::with_capacity(sorted.len());
        let mut far = 0;
        for &(_, end) in &sorted {
            far = far.max(end);
            reach.push(far);
        }
        SpanIndex {
            starts: sorted.into_iter().map(|(start, _)| start).collect(),
            reach,
        }
    }

    /// The op (its name, or the call's start when the name comes first)
    /// lies inside one of the spans: some span starting at or before it
    /// ends after it.
    pub fn holds(&self, op: &Op) -> bool {
        self.contains(op.name_span.start().max(op.span.start()))
    }

    pub fn contains(&self, at: usize) -> bool {
        let upto = self.starts.partition_point(|&s| s <= at);
        upto > 0 && self.reach[upto - 1] > at
    }
}

/// Which deferred op holds an offset, for [`FileFacts::deferred`] (sorted
/// by start; a deferred closure may hold another `defer`): the greatest
/// end up to each, so that the first one holding an offset is a binary
/// search and a file of many `defer`s is not read once per release.
pub struct DeferredIndex<'a> {
    list: &'a [Deferred],
    reach: Vec<usize>,
}

impl<'a> DeferredIndex<'a> {
    pub fn new(list: &'a [Deferred]) -> Self {
        debug_assert!(list
            .windows(2)
            .all(|w| w[0].span.start() <= w[1].span.start()));
        let mut far = 0;
        let reach = list
            .iter()
            .map(|d| {
                far = far.max(d.span.end());
                far
            })
            .collect();
        DeferredIndex { list, reach }
    }

    /// The first deferred op (in start order) whose span holds `at`: the
    /// first whose end, the greatest so far, passes `at` holds it when it
    /// starts at or before `at`; every one before it ends at or before `at`.
    pub fn at(&self, at: usize) -> Option<&'a Deferred> {
        let upto = self.list.partition_point(|d| d.span.start() <= at);
        let i = self.reach[..upto].partition_point(|&r| r <= at);
        (i < upto).then(|| &self.list[i])
    }
}

/// The TTL argument of the op whose method name starts at `name_start`.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OpTtl {
    pub name_start: usize,
    /// Its value in milliseconds when it is a constant (a literal, a
    /// constant bound once, a product of those; `EX` seconds converted).
    pub ms: Option<u64>,
    /// The identifiers it is written with (`interval`, `LOCK_TTL_SECONDS`).
    pub names: Vec<String>,
    /// When it is no constant of its file but one name (`settings.LOCK_TTL`,
    /// an imported `LOCK_TTL`): that name's last part and the milliseconds
    /// of one unit of it, for the project to resolve (`project::limits`).
    #[serde(default)]
    pub sym: Option<(String, u64)>,
}

impl FileFacts {
    pub fn new(language: Language) -> Self {
        FileFacts {
            language,
            scopes: vec![Scope::default()],
            ops: Vec::new(),
            scripts: Vec::new(),
            fail_opens: Vec::new(),
            absence_guards: Vec::new(),
            exclusive_of_acquire: Vec::new(),
            failure_spans: Vec::new(),
            validity_spans: Vec::new(),
            deliberate_spans: Vec::new(),
            notes: Vec::new(),
            call_sites: CallSites::default(),
            link: LinkFacts::default(),
            ttls: Vec::new(),
            run_limit_secs: None,
            task_limits: Vec::new(),
            waits: None,
            deferred: Vec::new(),
            late_result_tests: Vec::new(),
            task_limit_names: Vec::new(),
            int_consts: Vec::new(),
        }
    }

    /// The scope `id`; an id this file does not have (the [`FOREIGN_SCOPE`]
    /// of another file's op seen through the project index) is an anonymous
    /// top-level scope.
    pub fn scope(&self, id: ScopeId) -> &Scope {
        static NONE: Scope = Scope {
            name: String::new(),
            owner: None,
            is_test: false,
        };
        self.scopes.get(id as usize).unwrap_or(&NONE)
    }

    /// Adds a scope and returns its id.
    pub fn add_scope(&mut self, scope: Scope) -> ScopeId {
        self.scopes.push(scope);
        (self.scopes.len() - 1) as ScopeId
    }
}

// ---- Project summaries (SPEC §2): phase-one facts the link reads ----------

/// What a front-end records for the project link besides the ops: each
/// function's parameters, the calls of non-client functions with their
/// normalised arguments, and which parameter an op's value comes from.
/// Names, not indices: `src/project/` turns them into parameter positions.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LinkFacts {
    pub functions: Vec<FnSig>,
    pub calls: Vec<CallSite>,
    pub op_values: Vec<OpValueSource>,
    /// The names [`OpValueSource::var`] stands for, one copy of each (a
    /// file that acquires with the same parameter thousands of times
    /// held a copy of its name per acquire).
    #[serde(default)]
    pub value_names: Vec<Box<str>>,
    /// Calls of project functions whose result is treated fail-open (the
    /// shapes of LL008 around the call): an LL008 when the link finds the
    /// callee returns an acquire's result.
    pub fail_open_calls: Vec<CallFailOpen>,
    /// Code that runs only when a call passed a defaulted argument: the
    /// body of an `if` whose test is false for the parameter's default
    /// (`if (opts.ttl)` of `opts = {}`, `if ttl:` of `ttl=None`).
    #[serde(default)]
    pub arg_branches: Vec<ArgBranch>,
}

/// The body `span` of an `if` in function `scope` runs only when the
/// caller passed the defaulted parameter `param`: its default makes the
/// test false (`if (opts.ttl)` of `opts = {}`, `if ttl is not None:` of
/// `ttl=None`, `if ($ttl > 0)` of `$ttl = 0`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ArgBranch {
    pub scope: ScopeId,
    pub span: Span,
    pub param: String,
}

/// A call (its name starting at `name_start`) whose failure or null
/// result counts as success at `span`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CallFailOpen {
    pub name_start: usize,
    pub span: Span,
}

/// A function or method: its body scope and its parameter names in order
/// (`self`/`this` receivers left out).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FnSig {
    pub scope: ScopeId,
    /// How many of the last parameters have a default value (`ttl = 30`):
    /// a call may leave them out.
    #[serde(default)]
    pub optional: u32,
    /// (Shared texts: a file names the same parameters again and again.
    /// Boxed lists at their length, here and below: a minified bundle
    /// declares a function every few dozen bytes.)
    pub params: Box<[std::sync::Arc<str>]>,
    /// Each parameter's declared type where the language writes one
    /// (Java, Kotlin, C#, Go, TypeScript, Rust), as [`type_word`] spells
    /// it; `None` where nothing is declared or the type is not one name
    /// (a union, a function type). Empty: no types at all.
    #[serde(default)]
    pub param_types: Box<[Option<std::sync::Arc<str>>]>,
    /// [`FnSig::absent_defaults`] and [`FnSig::returns`], where the function
    /// has either: most have neither, and the two lists inline took 32 of
    /// a signature's 72 bytes.
    #[serde(default)]
    more: Option<Box<FnSigMore>>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct FnSigMore {
    absent_defaults: Box<[String]>,
    returns: Box<[KeyExpr]>,
}

impl FnSig {
    pub fn new(
        scope: ScopeId,
        params: Box<[std::sync::Arc<str>]>,
        optional: u32,
        param_types: Box<[Option<std::sync::Arc<str>>]>,
    ) -> FnSig {
        FnSig {
            scope,
            optional,
            params,
            param_types,
            more: None,
        }
    }

    /// Its parameters whose default is an absence (`null`, `None`, `nil`,
    /// `false`): a flag or a missing value, never text of a key, so a call
    /// that leaves one out adds nothing to a key built from it
    /// (`getFinalKey(key, isCluster)` of `isCluster: Boolean? = false`).
    pub fn absent_defaults(&self) -> &[String] {
        self.more.as_ref().map_or(&[], |m| &m.absent_defaults)
    }

    pub fn set_absent_defaults(&mut self, names: Box<[String]>) {
        if !names.is_empty() || self.more.is_some() {
            self.more
                .get_or_insert_with(Default::default)
                .absent_defaults = names;
        }
    }

    /// The keys its `return` statements hand back (each branch of a
    /// conditional apart: `return ok ? lockKey : null`), normalised as the
    /// function's own ops normalise theirs: a function that returns the key
    /// it locked gives its caller the key to release (SPEC §2 "Project
    /// summaries").
    pub fn returns(&self) -> &[KeyExpr] {
        self.more.as_ref().map_or(&[], |m| &m.returns)
    }

    /// Adds a returned key (the list at its length: most functions return
    /// one at most).
    pub fn push_return(&mut self, key: KeyExpr) {
        let more = self.more.get_or_insert_with(Default::default);
        let mut list = std::mem::take(&mut more.returns).into_vec();
        list.push(key);
        more.returns = list.into_boxed_slice();
    }
}

/// A declared or known type as the link compares it: its last path
/// segment without generic arguments, references, pointers or nullability
/// (`java.util.List<String>` → `List`, `&str` → `str`, `*Locker` →
/// `Locker`, `String?` → `String`); the spellings of a text, a number and
/// a truth value are one word each (`string`, `number`, `bool`) whatever
/// the language; an array is its element's word with `[]`.
pub fn type_word(head: &str) -> String {
    let t = head
        .trim_start_matches(['&', '*'])
        .trim_end_matches(['?', '!']);
    let t = t.strip_prefix("mut ").unwrap_or(t).trim();
    let t = t.rsplit(['.', ':']).next().unwrap_or(t);
    match t {
        "String" | "string" | "str" | "CharSequence" | "StringBuilder" => "string".into(),
        "int" | "long" | "short" | "byte" | "Integer" | "Long" | "Short" | "Byte" | "Int"
        | "double" | "float" | "Double" | "Float" | "number" | "i8" | "i16" | "i32" | "i64"
        | "i128" | "isize" | "u8" | "u16" | "u32" | "u64" | "u128" | "usize" | "f32" | "f64"
        | "int8" | "int16" | "int32" | "int64" | "uint" | "uint8" | "uint16" | "uint32"
        | "uint64" | "float32" | "float64" | "decimal" | "uint32_t" | "ulong" | "ushort"
        | "sbyte" | "Int32" | "Int64" | "UInt" | "ULong" | "bigint" => "number".into(),
        "boolean" | "bool" | "Boolean" => "bool".into(),
        _ => t.to_string(),
    }
}

/// Whether an argument of known type `arg` cannot be passed to a parameter
/// declared `param` (both as [`type_word`] spells them) in `lang`. Only
/// what is sure without the project's type hierarchy: a text, number or
/// truth value is not another of the three; an object of a named type is
/// none of them (a named type that is a top type — `Object`, `any` — or
/// a type parameter — `T` — aside); and in Java and Kotlin, where a
/// `String` converts to nothing, a text is no parameter of a named type
/// other than its own supertypes. Two different named types may be
/// subtypes of one another: no mismatch.
pub fn type_mismatch(arg: &str, param: &str, lang: Language) -> bool {
    const BUILTIN: &[&str] = &["string", "number", "bool"];
    const TOP: &[&str] = &[
        "Object",
        "object",
        "Any",
        "any",
        "unknown",
        "dynamic",
        "interface{}",
        "Comparable",
        "Serializable",
        "Constable",
        "ConstantDesc",
        "Number",
        "Value",
        "T",
    ];
    let generic = |t: &str| {
        let mut c = t.chars();
        c.next().is_some_and(|f| f.is_ascii_uppercase())
            && t.len() <= 2
            && c.all(|x| x.is_ascii_digit() || x.is_ascii_uppercase())
    };
    let named = |t: &str| {
        !BUILTIN.contains(&t)
            && !TOP.contains(&t)
            && !generic(t)
            && !t.ends_with("[]")
            && t.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
    };
    if arg == param {
        return false;
    }
    let (ab, pb) = (BUILTIN.contains(&arg), BUILTIN.contains(&param));
    if ab && pb {
        return true;
    }
    if pb {
        return named(arg);
    }
    arg == "string" && matches!(lang, Language::Java | Language::Kotlin) && named(param)
}

/// A call of something that is not a Redis client method: a candidate call
/// of a project function (a wrapper, a helper, a lock manager).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CallSite {
    /// The called function's or method's name as written (`tryLock`).
    /// (Shared: a file's calls repeat a few names, and each text of its
    /// own took a small allocation per call.)
    pub callee: std::sync::Arc<str>,
    /// The receiver as written (`redisUtil`, `self.locks`), if any: a hint
    /// for narrowing by type.
    pub recv: Option<std::sync::Arc<str>>,
    pub args: Vec<CallArg>,
    pub scope: ScopeId,
    pub order: u32,
    pub depth: u32,
    pub span: Span,
    pub name_span: Span,
    /// The key form a local bound once to this call's result takes in the
    /// caller's ops (`k = tryLock(id); …; del(k)`), when the call is the
    /// whole right-hand side of such a binding.
    /// (Boxed: few calls have one, and a whole-project run holds
    /// hundreds of thousands of calls at once; the encoding is the same.)
    #[serde(default)]
    pub result_key: Option<Box<KeyExpr>>,
}

/// The texts and argument keys of a file's link facts, one shared copy of
/// each ([`CallSite::callee`], [`CallSite::recv`], [`CallArg`]'s,
/// [`FnSig::params`]).
#[derive(Debug, Default)]
pub struct CallTexts {
    /// Callees, receivers, parameter names: a few names again and again.
    texts: Shared<str>,
    /// An argument's name, keyword and type, each judged apart (a file can
    /// call one function with thousands of distinct locals).
    arg_texts: Shared<str>,
    keys: Shared<KeyExpr>,
}

/// One shared copy of each value asked for, while sharing pays: after
/// [`Shared::TRIAL`] values of which fewer than a quarter were met
/// before, new values are no longer remembered (a file of distinct
/// arguments held a set entry per value beside the values themselves);
/// the ones remembered are still shared. Sharing never changes a value.
#[derive(Debug)]
struct Shared<T: ?Sized> {
    set: rustc_hash::FxHashSet<std::sync::Arc<T>>,
    met: usize,
    new: usize,
}

impl<T: ?Sized> Default for Shared<T> {
    fn default() -> Self {
        Shared {
            set: Default::default(),
            met: 0,
            new: 0,
        }
    }
}

impl<T: ?Sized + Eq + std::hash::Hash> Shared<T> {
    const TRIAL: usize = 1024;

    /// The earlier copy of `value`, if one is remembered; else `value`
    /// made shared (`make`), and remembered while sharing pays.
    fn get<V: std::borrow::Borrow<T>>(
        &mut self,
        value: V,
        make: impl FnOnce(V) -> std::sync::Arc<T>,
    ) -> std::sync::Arc<T> {
        if let Some(v) = self.set.get(value.borrow()) {
            self.met += 1;
            return std::sync::Arc::clone(v);
        }
        let v = make(value);
        self.new += 1;
        if self.new <= Self::TRIAL || self.met * 4 >= self.new {
            self.set.insert(std::sync::Arc::clone(&v));
        }
        v
    }
}

impl CallTexts {
    /// `text`, shared with the earlier calls that have it.
    pub fn get(&mut self, text: &str) -> std::sync::Arc<str> {
        self.texts.get(text, Into::into)
    }

    /// An argument's name, keyword or type, shared with the earlier
    /// arguments that have it.
    pub fn arg_text(&mut self, text: &str) -> std::sync::Arc<str> {
        self.arg_texts.get(text, Into::into)
    }

    /// `key`, shared with the earlier arguments that have it.
    pub fn key(&mut self, key: KeyExpr) -> std::sync::Arc<KeyExpr> {
        self.keys.get(key, std::sync::Arc::new)
    }

    /// [`CallTexts::get`] of a text already shared (decoded alone): the
    /// earlier copy of it, or this one kept as the copy.
    pub fn share_text(&mut self, text: &std::sync::Arc<str>) -> std::sync::Arc<str> {
        self.texts.get(&**text, |_| std::sync::Arc::clone(text))
    }

    /// [`CallTexts::arg_text`] of a text already shared (decoded alone).
    pub fn share_arg_text(&mut self, text: &std::sync::Arc<str>) -> std::sync::Arc<str> {
        self.arg_texts.get(&**text, |_| std::sync::Arc::clone(text))
    }

    /// [`CallTexts::key`] of a key already shared (decoded alone): the
    /// earlier copy of it, or this one kept as the copy.
    pub fn share_key(&mut self, key: &std::sync::Arc<KeyExpr>) -> std::sync::Arc<KeyExpr> {
        self.keys.get(&**key, |_| std::sync::Arc::clone(key))
    }
}

/// One argument of a [`CallSite`], normalised as a key and as a value.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CallArg {
    /// (Shared with the file's other arguments of the same key: most are
    /// one parameter or local, `key`, `flags`, named alike in every
    /// function.)
    pub key: std::sync::Arc<KeyExpr>,
    pub value: ValueExpr,
    /// The argument is a bare name (a parameter or local of the caller).
    /// (This and the two below are the file's shared texts.)
    pub name: Option<std::sync::Arc<str>>,
    /// The parameter it is passed to by name (`ttl=30`, `ttl: 30`,
    /// `ttl = 30` in Kotlin): it binds that parameter, not its position.
    #[serde(default)]
    pub keyword: Option<std::sync::Arc<str>>,
    /// Its type where it is known cheaply ([`type_word`]): a string
    /// literal, a `new T(…)` (a Go `T{…}`, a Rust `T { … }` or
    /// `T::new(…)`), a parameter or local declared with a type.
    #[serde(default)]
    pub ty: Option<std::sync::Arc<str>>,
}

/// The value of the op whose method name starts at `name_start` is the
/// variable `var` (a parameter of its function, when the link finds it so).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OpValueSource {
    /// (a `u32`, as a `Span`'s offsets: one for every acquire of a
    /// parameter's value, a dense file holds thousands)
    pub name_start: u32,
    /// The variable's name: its index in [`LinkFacts::value_names`].
    pub var: u32,
}

impl LinkFacts {
    /// The name of the variable `v` stands for.
    pub fn value_name(&self, v: &OpValueSource) -> &str {
        self.value_names.get(v.var as usize).map_or("", |n| n)
    }
}

/// Records [`LinkFacts::op_values`], each distinct name kept once in
/// [`LinkFacts::value_names`] (found again through a map of the names
/// recorded so far, so a file with many distinct names stays linear).
#[derive(Default)]
pub struct OpValueNames(rustc_hash::FxHashMap<Box<str>, u32>);

impl OpValueNames {
    /// Records that the value of the op whose name starts at `name_start`
    /// is the variable `var`.
    pub fn push(&mut self, link: &mut LinkFacts, name_start: usize, var: &str) {
        let var = match self.0.get(var) {
            Some(&id) => id,
            None => {
                let id = offset32(link.value_names.len());
                link.value_names.push(var.into());
                self.0.insert(var.into(), id);
                id
            }
        };
        push_by_quarters(
            &mut link.op_values,
            OpValueSource {
                name_start: offset32(name_start),
                var,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_key_literal_keeps_its_head_and_tells_equal_from_other() {
        let sprite = "<svg>".repeat(2000);
        let a = KeyExpr::lit(&sprite);
        let KeyPart::Lit(short) = &a.parts[0] else {
            panic!("{a:?}")
        };
        assert!(
            short.len() < 100 && short.starts_with("<svg><svg>"),
            "{short}"
        );
        // equal literals, however built, are equal keys; others are not
        let mut built = KeyExpr::default();
        built.push(KeyPart::Lit(sprite[..300].to_string().into()));
        built.push(KeyPart::Lit(sprite[300..].to_string().into()));
        assert_eq!(KeyExpr::lit(&sprite), a);
        let mut b = KeyExpr::default();
        b.push(KeyPart::Lit(sprite.clone().into()));
        assert_eq!(b, a);
        assert_ne!(KeyExpr::lit(&format!("{sprite}x")), a);
        assert!(matches!(&built.parts[..], [KeyPart::Lit(s)] if s.len() < 100));
        // short literals are whole
        let k = "lock:".repeat(51);
        assert_eq!(KeyExpr::lit(&k).parts, vec![KeyPart::Lit(k.clone().into())]);
    }

    #[test]
    fn an_op_keeps_its_position_flags_and_depth_apart() {
        let mut op = Op::new(
            OpKind::Acquire { expiry: true },
            KeyExpr::lit("lock:a"),
            Some(ValueExpr::Unknown),
            0,
            Span::new(0, 10),
            Span::new(0, 3),
            Client::RedisPy,
        );
        assert!(!op.atomic() && !op.watched());
        assert_eq!(op.value(), Some(&ValueExpr::Unknown));
        op.set_atomic(true);
        op.set_watched(true);
        assert!(op.atomic() && op.watched());
        assert_eq!(op.value(), Some(&ValueExpr::Unknown));
        op.set_value(Some(ValueExpr::Unique));
        op.set_atomic(false);
        assert!(!op.atomic() && op.watched());
        assert_eq!(op.value(), Some(&ValueExpr::Unique));
        op.set_watched(false);
        op.set_value(None);
        assert!(!op.atomic() && !op.watched() && op.value().is_none());
        // depth: exact up to the most an op tells apart, then that
        op.set_depth(7);
        assert_eq!(op.depth(), 7);
        op.set_depth(Op::MAX_DEPTH);
        assert_eq!(op.depth(), Op::MAX_DEPTH);
        op.set_depth(u32::MAX);
        assert_eq!(op.depth(), Op::MAX_DEPTH);
        // a file's first 65,536 scripts get an id, the next none
        let script = ScriptFact {
            name: None,
            text: String::new(),
            anchors: Vec::new(),
            lua: LuaFacts::default(),
            client: Client::RedisCli,
        };
        let mut scripts = vec![script; usize::from(ScriptId::MAX)];
        assert_eq!(next_script_id(&scripts), Some(ScriptId::MAX));
        scripts.push(scripts[0].clone());
        assert_eq!(next_script_id(&scripts), None);
        assert_eq!(next_script_id(&[]), Some(0));
    }

    #[test]
    fn key_parts_read_alike_held_inline_or_in_a_list() {
        use std::hash::BuildHasher;
        let lit = |s: &str| KeyPart::Lit(s.into());
        let hash = |p: &Parts| rustc_hash::FxBuildHasher.hash_one(p);
        let listed = |v: Vec<KeyPart>| Parts(PartsRepr::Many(Box::new(v)));
        // one part inline, pushed or from a list; the same as a list of one
        let mut one = Parts::default();
        assert!(one.is_empty() && one.pop().is_none());
        one.push(lit("lock:a"));
        assert!(matches!(one.0, PartsRepr::One(_)));
        assert_eq!(one, Parts::from(vec![lit("lock:a")]));
        assert_eq!(one, listed(vec![lit("lock:a")]));
        assert_eq!(hash(&one), hash(&listed(vec![lit("lock:a")])));
        assert_eq!(
            hash(&one),
            rustc_hash::FxBuildHasher.hash_one(vec![lit("lock:a")])
        );
        assert_eq!(format!("{one:?}"), format!("{:?}", vec![lit("lock:a")]));
        assert_ne!(one, Parts::from(vec![lit("lock:b")]));
        assert_ne!(Parts::default(), listed(vec![KeyPart::Unknown]));
        // a second part makes a list; popped and shrunk, one is inline again
        let mut two = one.clone();
        two.push(KeyPart::Var("id".into()));
        assert_eq!(&two[..], &[lit("lock:a"), KeyPart::Var("id".into())]);
        assert_eq!(two.pop(), Some(KeyPart::Var("id".into())));
        assert_eq!(two, one);
        two.shrink_to_fit();
        assert!(matches!(two.0, PartsRepr::One(_)));
        assert_eq!(two.pop(), Some(lit("lock:a")));
        assert!(matches!(two.0, PartsRepr::None) && two.is_empty());
        // kept, changed in place, and taken apart in order
        let mut three: Parts = [lit("a"), lit(""), KeyPart::Unknown].into_iter().collect();
        three.retain(|p| !matches!(p, KeyPart::Lit(s) if s.is_empty()));
        three[1] = KeyPart::Const("C".into());
        assert_eq!(three, vec![lit("a"), KeyPart::Const("C".into())]);
        assert_eq!(
            three.clone().into_iter().collect::<Vec<_>>(),
            three.to_vec()
        );
        assert_eq!(
            one.clone().into_iter().collect::<Vec<_>>(),
            vec![lit("lock:a")]
        );
        one.retain(|_| false);
        assert!(matches!(one.0, PartsRepr::None));
        // written as a list of parts, whichever way held
        for p in [Parts::default(), Parts::from(vec![lit("x")]), three] {
            let packed = rmp_serde::to_vec(&p).unwrap();
            assert_eq!(packed, rmp_serde::to_vec(&p.to_vec()).unwrap());
        }
    }

    #[test]
    fn a_key_encodes_its_names_only_where_its_parts_do_not_say_them() {
        let mut resolved = KeyExpr::lit("lock:");
        resolved.idents.push("LOCK_PREFIX".into());
        let mut both = KeyExpr::default();
        both.push(KeyPart::Const("PREFIX".into()));
        both.push(KeyPart::Lit(":".into()));
        both.push(KeyPart::Var("id".into()));
        both.idents = vec!["PREFIX".to_string(), "id".to_string()].into();
        let mut reordered = both.clone();
        reordered.idents.reverse();
        let mut fewer = both.clone();
        fewer.idents.truncate(1);
        let mut more = KeyExpr::var("id");
        more.idents.push("id".into());
        let keys = [
            KeyExpr::var("lockKey"),
            KeyExpr::lit("lock:a"),
            KeyExpr::unknown(),
            KeyExpr::default(),
            resolved,
            both.clone(),
            reordered,
            fewer,
            more,
        ];
        for k in &keys {
            let packed = rmp_serde::to_vec(k).unwrap();
            assert_eq!(&rmp_serde::from_slice::<KeyExpr>(&packed).unwrap(), k);
            let json = serde_json::to_string(k).unwrap();
            assert_eq!(
                &serde_json::from_str::<KeyExpr>(&json).unwrap(),
                k,
                "{json}"
            );
        }
        // the names its parts say are left out: a nil, not `["lockKey"]`
        let with = rmp_serde::to_vec(&KeyExpr::var("lockKey")).unwrap();
        assert_eq!(with.len(), 1 + 1 + 1 + 2 + 8 + 1, "{with:?}");
        assert_eq!(with.last(), Some(&0xc0));
        let json = serde_json::to_string(&both).unwrap();
        assert!(json.ends_with(",null]"), "{json}");
    }

    #[test]
    fn call_texts_share_while_sharing_pays() {
        use std::sync::Arc;
        let mut t = CallTexts::default();
        // names met again and again: one copy each
        let a = t.get("lockIt");
        assert!(Arc::ptr_eq(&a, &t.get("lockIt")));
        let k = t.key(KeyExpr::var("key"));
        assert!(Arc::ptr_eq(&k, &t.key(KeyExpr::var("key"))));
        // thousands of distinct argument names: past the trial, new ones
        // are no longer remembered (equal values, not shared), the ones
        // remembered still are
        let n = Shared::<str>::TRIAL * 3;
        for i in 0..n {
            assert_eq!(&*t.arg_text(&format!("v{i}")), format!("v{i}"));
        }
        assert_eq!(t.arg_texts.set.len(), Shared::<str>::TRIAL);
        let late = format!("v{}", n - 1);
        assert!(!Arc::ptr_eq(&t.arg_text(&late), &t.arg_text(&late)));
        assert!(Arc::ptr_eq(&t.arg_text("v0"), &t.arg_text("v0")));
        // the callee names were judged apart: still remembered
        let b = t.get("unlock");
        assert!(Arc::ptr_eq(&b, &t.get("unlock")));
        // a shared copy decoded alone is kept, or replaced by the earlier
        let decoded: Arc<str> = Arc::from("lockIt");
        assert!(Arc::ptr_eq(&t.share_text(&decoded), &a));
        let fresh: Arc<KeyExpr> = Arc::new(KeyExpr::var("other"));
        assert!(Arc::ptr_eq(&t.share_key(&fresh), &fresh));
        assert!(Arc::ptr_eq(&t.key(KeyExpr::var("other")), &fresh));
    }

    #[test]
    fn languages_by_extension_in_any_ascii_case() {
        let of = |p: &str| Language::from_path(Path::new(p));
        assert_eq!(of("a/b.rs"), Some(Language::Rust));
        assert_eq!(of("B.JAVA"), Some(Language::Java));
        assert_eq!(of("x.Redis"), Some(Language::Redis));
        assert_eq!(of("x.BASH"), Some(Language::Shell));
        assert_eq!(of("x.tSx"), Some(Language::TypeScript));
        assert_eq!(of("x.redis2"), None);
        assert_eq!(of("x.rs~"), None);
        assert_eq!(of("x.ŗs"), None);
        assert_eq!(of("rs"), None);
        assert_eq!(of("x."), None);
    }

    /// Ops writing one value hold one copy of it (`Op::set_value` shares the
    /// last few values set, and so does reading ops back from the cache), and
    /// every op reads back the value it was given.
    #[test]
    fn equal_op_values_are_one_copy() {
        let op = |v: Option<ValueExpr>| {
            Op::new(
                OpKind::Acquire { expiry: true },
                KeyExpr::lit("lock:a"),
                v,
                0,
                Span::new(0, 1),
                Span::new(0, 1),
                Client::Unknown,
            )
        };
        let one = || Some(ValueExpr::Constant("1".into()));
        let (a, b) = (op(one()), op(one()));
        let shared = |x: &Op, y: &Op| match (&x.value_box, &y.value_box) {
            (Some(p), Some(q)) => std::sync::Arc::ptr_eq(p, q),
            _ => false,
        };
        assert!(shared(&a, &b));
        // more distinct values than are kept: each op keeps its own
        let many: Vec<Op> = (0..3 * RECENT_VALUES)
            .map(|i| op(Some(ValueExpr::Weak(format!("w{i}").into()))))
            .collect();
        for (i, o) in many.iter().enumerate() {
            assert_eq!(o.value(), Some(&ValueExpr::Weak(format!("w{i}").into())));
        }
        let c = op(one());
        assert_eq!(c.value(), a.value());
        assert_eq!(
            op(Some(ValueExpr::Unknown)).value(),
            Some(&ValueExpr::Unknown)
        );
        assert_eq!(op(None).value(), None);
        // read back from JSON (as the cache reads ops back): shared again
        let text = serde_json::to_string(&b).unwrap();
        let (d, e): (Op, Op) = (
            serde_json::from_str(&text).unwrap(),
            serde_json::from_str(&text).unwrap(),
        );
        assert_eq!(d, b);
        assert!(shared(&d, &e));
    }
}
