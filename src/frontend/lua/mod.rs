//! Lua script analyser: finds every `redis.call`/`redis.pcall` of a script
//! (also through a local alias), resolves `KEYS[i]`/`ARGV[j]` arguments and
//! their local aliases, and decides for each call whether it runs only after
//! an ownership check (the stored value compared with a caller-supplied
//! token: an `ARGV`, or a `KEYS` entry other than the key being read).
//!
//! It is a lexer plus a light structural pass over `if`/`elseif`/`else`/`end`
//! blocks, not a Lua parser. The approximation of "guarded" is sound for the
//! shapes seen in real lock libraries: a call is guarded when it comes, in
//! text order, after an `if`/`elseif` condition that holds an ownership
//! check, except in the branch of that same `if` that runs exactly when the
//! check failed (the `else` of an `==` check, the `then` of a `~=` check).
//!
//! Every pass is linear in the number of tokens (bracket pairs are matched
//! once and jumped over, a jump being a binary search among the pairs;
//! operand scans are bounded), so arbitrary input never hangs, and nothing
//! indexes past the token vector, so it never panics.

mod lexer;
#[cfg(test)]
pub(crate) mod tests;

use crate::facts::{
    AffixedKey, Client, FileFacts, Language, LuaArg, LuaCall, LuaFacts, ScriptFact, Span,
};
use lexer::{Kind, Tok};
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// Commands that read the stored value (or membership) of a lock.
const READS: &[&str] = &[
    "get",
    "mget",
    "getrange",
    "substr",
    "getex",
    "hget",
    "hmget",
    "hexists",
    "zscore",
    "sismember",
];

/// Reads that are an ownership check by themselves when an `ARGV` is their
/// field or member (`hexists KEYS[1] ARGV[2]`, `zscore KEYS[1] ARGV[1]`).
const MEMBER_READS: &[&str] = &["hget", "hmget", "hexists", "zscore", "sismember"];

const KEYWORDS: &[&str] = &[
    "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto", "if", "in",
    "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while",
];

fn is_keyword(s: &str) -> bool {
    // Every keyword is 2 to 8 lower-case letters: most names leave at once.
    s.len() >= 2 && s.len() <= 8 && s.as_bytes()[0].is_ascii_lowercase() && KEYWORDS.contains(&s)
}

const BINOPS: &[&str] = &[
    "+", "-", "*", "/", "//", "%", "^", "..", "==", "~=", "<", ">", "<=", ">=", "&", "|", "~",
    "<<", ">>",
];

/// Longest function body (in tokens) read as an ownership-check helper.
const CHECK_HELPER_TOKENS: usize = 96;
/// Tokens taken as the arguments of a call whose `)` is missing.
const UNCLOSED_ARGS: usize = 32;
/// Upper bound on the tokens one comparison operand is searched for.
const OPERAND_SCAN: usize = 256;
/// Upper bound on the tokens of one condition or one assigned expression
/// that are searched for a check: keeps nested bodies (a `function` inside a
/// call inside a condition, many levels deep) from turning quadratic.
const EXPR_SCAN: usize = 1024;

const NONE: u32 = u32::MAX;

/// The `KEYS` entries a read (or a local assigned from one) is about, to
/// tell a caller-supplied `KEYS[j]` token from the key being read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct ReadKeys {
    /// Bit `n`: `KEYS[n]` (or an alias of it) is read or mentioned.
    mask: u64,
    /// Some key read is not a known `KEYS[n]` with `n < 64` (a parameter,
    /// `KEYS[i]`, a computed name): no `KEYS` entry can be told apart from it.
    opaque: bool,
}

impl ReadKeys {
    fn add(&mut self, k: Option<u32>) {
        match k {
            Some(n) if n < 64 => self.mask |= 1u64 << n,
            _ => self.opaque = true,
        }
    }

    /// `KEYS[n]` is certainly not a key this read is about.
    fn is_other_key(self, n: u32) -> bool {
        !self.opaque && self.mask != 0 && n < 64 && self.mask & (1u64 << n) == 0
    }
}

/// Token ranges `[start, end)` of a call's arguments.
type ArgRanges = Vec<(usize, usize)>;

/// Analyses one Lua script text. Never panics; linear time.
pub fn analyse(text: &str) -> LuaFacts {
    let lexed = lexer::lex(text);
    let mut a = Analyser::new(text, &lexed.toks, &lexed.decoded);
    a.run();
    // (kept with the script's facts to the end of the run: at their count)
    let mut calls = a.calls;
    calls.shrink_to_fit();
    LuaFacts {
        calls,
        partial: lexed.partial || a.partial,
    }
}

/// The literal prefix and suffix the script joins to `KEYS[1]` in every
/// call that names it (`"lock_" .. KEYS[1]` in both the `get` and the `del`
/// of a release): the key the script really touches is the caller's first
/// key with them. `None` when no call joins any, or when the calls disagree
/// (one uses the bare `KEYS[1]`, another `"lock_" .. KEYS[1]`).
pub fn first_key_affix(lua: &LuaFacts) -> Option<(&str, &str)> {
    let mut found: Option<(&str, &str)> = None;
    for arg in lua.calls.iter().flat_map(|c| &c.args) {
        let this = match arg {
            LuaArg::Keys(1) => ("", ""),
            LuaArg::KeysAffixed(k) if k.index == 1 => (k.prefix.as_str(), k.suffix.as_str()),
            _ => continue,
        };
        match found {
            Some(f) if f != this => return None,
            _ => found = Some(this),
        }
    }
    found.filter(|(p, s)| !p.is_empty() || !s.is_empty())
}

/// A whole `.lua` file: one script named after the file stem.
pub fn extract_file(path: &Path, src: &str) -> FileFacts {
    let mut facts = FileFacts::new(Language::Lua);
    let name = path.file_stem().map(|s| s.to_string_lossy().into_owned());
    // analysed before the text is copied: the copy is not held beside the
    // analyser's tokens (a 654 kB script of calls peaked with both)
    let lua = analyse(src);
    facts.scripts.push(ScriptFact {
        name,
        text: src.to_string(),
        anchors: vec![(0, 0)],
        lua,
        client: Client::Lua,
    });
    facts
}

/// Which branches of an `if` an ownership check in one of its conditions
/// protects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Polarity {
    /// `read == ARGV`: the branch it opens.
    Equal,
    /// `read ~= ARGV`: the branches after it (the `then` is the failure path).
    NotEqual,
    /// Mixed, negated, or a membership read: every branch from it on.
    Unknown,
}

impl Polarity {
    /// Does a check found in the condition of branch `at` protect branch `b`?
    fn covers(self, at: u32, b: u32) -> bool {
        match self {
            Polarity::Equal => b == at,
            Polarity::NotEqual => b > at,
            Polarity::Unknown => b >= at,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FrameKind {
    If,
    /// `function … end`, `do … end` (also of `while`/`for`).
    Block,
    Repeat,
}

#[derive(Debug)]
struct Frame {
    kind: FrameKind,
    /// Index of the current branch (`then` = 0, each `elseif`/`else` + 1).
    branch: u32,
    /// Checks found in this `if`'s conditions: (branch, polarity).
    checks: Vec<(u32, Polarity)>,
    /// The check of the condition being read, activated at `then`.
    pending: Option<Polarity>,
    /// The current branch is protected by one of `checks`.
    covered: bool,
    /// For a named function body: its name and first token, so that a
    /// function whose body is an ownership check counts as one when called
    /// in a condition (`local function owned() return get(..) == ARGV[1] end`).
    /// (token of the name, first token of the body)
    function: Option<(usize, usize)>,
    /// The condition being read tests that the key is absent.
    absent_pending: bool,
    /// The branch that runs only where the key was found absent.
    absent_branch: Option<u32>,
}

impl Frame {
    fn new(kind: FrameKind) -> Self {
        Frame {
            kind,
            branch: 0,
            checks: Vec::new(),
            pending: None,
            covered: false,
            function: None,
            absent_pending: false,
            absent_branch: None,
        }
    }
}

struct Analyser<'a> {
    src: &'a str,
    toks: &'a [Tok],
    /// The decoded values of the strings with an escape (see [`lexer::str_value`]).
    decoded: &'a [(u32, String)],
    /// Each opening bracket's token index and its closing one's (`NONE`
    /// when unmatched), in token order: 8 bytes an opening bracket, not 4
    /// bytes a token (a script of calls has one for every 7 tokens).
    brackets: Vec<(u32, u32)>,
    partial: bool,
    /// Locals bound to `redis.call`/`redis.pcall`.
    callee_alias: HashSet<&'a str>,
    key_alias: HashMap<&'a str, u32>,
    argv_alias: HashMap<&'a str, u32>,
    /// Locals assigned from an expression that reads the stored value, with
    /// the keys it reads.
    read_local: HashMap<&'a str, ReadKeys>,
    /// Locals assigned a whole ownership check (`local ok = get(..) == ARGV[1]`).
    check_local: HashSet<&'a str>,
    frames: Vec<Frame>,
    /// Number of frames whose current branch is covered.
    covered: usize,
    /// A checked `if` has ended: everything after it is guarded.
    guard_after: bool,
    /// Calls before this token index are guarded by a `<check> and …`.
    guard_until: usize,
    calls: Vec<LuaCall>,
}

impl<'a> Analyser<'a> {
    fn new(src: &'a str, toks: &'a [Tok], decoded: &'a [(u32, String)]) -> Self {
        let mut a = Analyser {
            src,
            toks,
            decoded,
            brackets: Vec::new(),
            partial: false,
            callee_alias: HashSet::new(),
            key_alias: HashMap::new(),
            argv_alias: HashMap::new(),
            read_local: HashMap::new(),
            check_local: HashSet::new(),
            frames: Vec::new(),
            covered: 0,
            guard_after: false,
            guard_until: 0,
            calls: Vec::new(),
        };
        a.match_brackets();
        a
    }

    fn match_brackets(&mut self) {
        // (index in `brackets`, the bracket)
        let mut stack: Vec<(usize, u8)> = Vec::new();
        for (i, t) in self.toks.iter().enumerate() {
            if t.kind() != Kind::Sym {
                continue;
            }
            let c = self
                .src
                .as_bytes()
                .get(t.start as usize)
                .copied()
                .unwrap_or(0);
            match c {
                b'(' | b'[' | b'{' => {
                    stack.push((self.brackets.len(), c));
                    self.brackets.push((i as u32, NONE));
                }
                b')' | b']' | b'}' => {
                    let open = match c {
                        b')' => b'(',
                        b']' => b'[',
                        _ => b'{',
                    };
                    if stack.last().is_some_and(|&(_, o)| o == open) {
                        if let Some((j, _)) = stack.pop() {
                            self.brackets[j].1 = i as u32;
                        }
                    } else {
                        self.partial = true;
                    }
                }
                _ => {}
            }
        }
        self.brackets.shrink_to_fit();
        if !stack.is_empty() {
            self.partial = true;
        }
    }

    // ---- token helpers -------------------------------------------------

    fn text(&self, i: usize) -> &'a str {
        let src: &'a str = self.src;
        match self.toks.get(i) {
            Some(t) => src.get(t.start as usize..t.end() as usize).unwrap_or(""),
            None => "",
        }
    }

    fn kind(&self, i: usize) -> Option<Kind> {
        self.toks.get(i).map(|t| t.kind())
    }

    fn is_sym(&self, i: usize, s: &str) -> bool {
        self.kind(i) == Some(Kind::Sym) && self.text(i) == s
    }

    fn is_name(&self, i: usize, s: &str) -> bool {
        self.kind(i) == Some(Kind::Name) && self.text(i) == s
    }

    /// A name that is not a keyword and not a field (`x.name`, `x:name`).
    fn is_plain_name(&self, i: usize) -> bool {
        self.kind(i) == Some(Kind::Name)
            && !is_keyword(self.text(i))
            && !(i > 0 && (self.is_sym(i - 1, ".") || self.is_sym(i - 1, ":")))
    }

    fn str_value(&self, i: usize) -> Option<&'a str> {
        lexer::str_value(self.src, self.toks, self.decoded, i)
    }

    /// The closing bracket of the opening one at `i`, if matched.
    fn close_of(&self, i: usize) -> Option<usize> {
        let k = self
            .brackets
            .binary_search_by_key(&u32::try_from(i).ok()?, |b| b.0)
            .ok()?;
        let c = self.brackets[k].1;
        (c != NONE).then_some(c as usize)
    }

    /// Index after the bracket group opened at `i` (or `i + 1` when unmatched).
    fn skip(&self, i: usize) -> usize {
        self.close_of(i).map_or(i + 1, |c| c + 1)
    }

    /// `redis.call`/`redis.pcall` or an alias of them starting at `i`: the
    /// number of tokens of the callee.
    fn callee_len(&self, i: usize) -> Option<usize> {
        if !self.is_plain_name(i) {
            return None;
        }
        let name = self.text(i);
        if name == "redis"
            && self.is_sym(i + 1, ".")
            && (self.is_name(i + 2, "call") || self.is_name(i + 2, "pcall"))
        {
            return Some(3);
        }
        (!self.callee_alias.is_empty() && self.callee_alias.contains(name)).then_some(1)
    }

    /// A `redis.call(` at `i`: the index of its `(`.
    fn call_at(&self, i: usize) -> Option<usize> {
        let len = self.callee_len(i)?;
        self.is_sym(i + len, "(").then_some(i + len)
    }

    /// The argument ranges of the call whose `(` is at `open`, and the index
    /// of its `)` (or the token count when unclosed).
    fn args(&self, open: usize) -> (ArgRanges, usize) {
        // An unclosed call takes what follows as its arguments, up to a bound
        // (nested unclosed calls would otherwise each scan to the end).
        let close = self
            .close_of(open)
            .unwrap_or_else(|| self.toks.len().min(open + 1 + UNCLOSED_ARGS));
        let mut out = Vec::new();
        let mut start = open + 1;
        let mut i = start;
        while i < close {
            if self.is_sym(i, ",") {
                out.push((start, i));
                start = i + 1;
                i += 1;
            } else if matches!(self.text(i), "(" | "[" | "{") && self.kind(i) == Some(Kind::Sym) {
                i = self.skip(i).min(close);
            } else {
                i += 1;
            }
        }
        if start < close {
            out.push((start, close));
        }
        (out, close)
    }

    /// The lower-cased command of the call at `i`, its argument ranges and `)`.
    fn call_parts(&self, i: usize) -> Option<(String, ArgRanges, usize)> {
        let open = self.call_at(i)?;
        let (args, close) = self.args(open);
        let command = args
            .first()
            .filter(|&&(s, e)| e == s + 1)
            .and_then(|&(s, _)| self.str_value(s))
            .map(|s| s.to_ascii_lowercase())
            .unwrap_or_else(|| "?".to_string());
        Some((command, args, close))
    }

    /// `KEYS[n]` / `ARGV[n]` with an integer literal index at `s..e`.
    fn indexed(&self, s: usize, e: usize, table: &str) -> Option<Option<u32>> {
        if e != s + 4
            || !self.is_name(s, table)
            || !self.is_sym(s + 1, "[")
            || !self.is_sym(s + 3, "]")
        {
            return None;
        }
        if self.kind(s + 2) != Some(Kind::Num) {
            return Some(None);
        }
        Some(self.text(s + 2).parse::<u32>().ok())
    }

    fn classify(&self, s: usize, e: usize) -> LuaArg {
        if e == s + 1 {
            return match self.kind(s) {
                Some(Kind::Str) => LuaArg::Literal(self.str_value(s).unwrap_or("").into()),
                Some(Kind::Num) => LuaArg::Literal(self.text(s).into()),
                Some(Kind::Name) if self.is_plain_name(s) => {
                    let n = self.text(s);
                    if let Some(&k) = self.key_alias.get(n) {
                        LuaArg::Keys(k)
                    } else if let Some(&a) = self.argv_alias.get(n) {
                        LuaArg::Argv(a)
                    } else {
                        LuaArg::Other
                    }
                }
                _ => LuaArg::Other,
            };
        }
        if e == s + 2 && self.is_sym(s, "-") && self.kind(s + 1) == Some(Kind::Num) {
            return LuaArg::Literal(format!("-{}", self.text(s + 1)).into());
        }
        if let Some(k) = self.indexed(s, e, "KEYS") {
            return k.map_or(LuaArg::Other, LuaArg::Keys);
        }
        if let Some(a) = self.indexed(s, e, "ARGV") {
            return a.map_or(LuaArg::Other, LuaArg::Argv);
        }
        self.affixed_key(s, e).unwrap_or(LuaArg::Other)
    }

    /// `"lock_" .. KEYS[1]`, `KEYS[1] .. ":lock"`, `"a:" .. k .. ":b"` (`k`
    /// an alias of a `KEYS` entry) at `s..e`: string literals joined to one
    /// `KEYS` entry with `..` and nothing else.
    fn affixed_key(&self, s: usize, e: usize) -> Option<LuaArg> {
        let mut index = None;
        let (mut prefix, mut suffix) = (String::new(), String::new());
        let mut t = s;
        while t < e {
            if t > s {
                if !self.is_sym(t, "..") || t + 1 >= e {
                    return None;
                }
                t += 1;
            }
            if self.kind(t) == Some(Kind::Str) {
                let lit = self.str_value(t)?;
                if index.is_none() {
                    &mut prefix
                } else {
                    &mut suffix
                }
                .push_str(lit);
                t += 1;
                continue;
            }
            if index.is_some() {
                return None;
            }
            if let Some(k) = self.indexed(t, t + 4, "KEYS").filter(|_| t + 4 <= e) {
                index = Some(k?);
                t += 4;
            } else if self.is_plain_name(t) && !self.is_sym(t + 1, "[") {
                index = Some(*self.key_alias.get(self.text(t))?);
                t += 1;
            } else {
                return None;
            }
        }
        let index = index?;
        Some(if prefix.is_empty() && suffix.is_empty() {
            LuaArg::Keys(index)
        } else {
            LuaArg::KeysAffixed(Box::new(AffixedKey {
                index,
                prefix,
                suffix,
            }))
        })
    }

    // ---- the pass ------------------------------------------------------

    fn run(&mut self) {
        let n = self.toks.len();
        let mut i = 0;
        while i < n {
            let kind = self.toks[i].kind();
            let text = self.text(i);
            if kind == Kind::Name {
                match text {
                    "local" => self.local(i),
                    "if" => {
                        let pending = self.condition_after(i);
                        let mut f = Frame::new(FrameKind::If);
                        f.pending = pending;
                        f.absent_pending = self.absent_condition_after(i);
                        self.frames.push(f);
                    }
                    "elseif" => {
                        let pending = self.condition_after(i);
                        let absent = self.absent_condition_after(i);
                        self.next_branch(pending);
                        if let Some(f) = self.frames.last_mut() {
                            f.absent_pending = absent;
                        }
                    }
                    "else" => self.next_branch(None),
                    "then" => self.then(),
                    "function" => {
                        let mut f = Frame::new(FrameKind::Block);
                        f.function = self.function_name(i).map(|n| (n, i + 1));
                        self.frames.push(f);
                    }
                    "do" => self.frames.push(Frame::new(FrameKind::Block)),
                    "for" => self.for_in(i),
                    "repeat" => self.frames.push(Frame::new(FrameKind::Repeat)),
                    "until" => self.pop(FrameKind::Repeat),
                    "end" => self.pop_end(i),
                    "and" => self.and_guard(i),
                    "assert" if self.is_sym(i + 1, "(") => {
                        let (args, _) = self.args(i + 1);
                        if let Some(&(a, b)) = args.first() {
                            if matches!(
                                self.check_in(a, b),
                                Some(Polarity::Equal | Polarity::Unknown)
                            ) {
                                self.guard_after = true;
                            }
                        }
                    }
                    _ => {
                        let may_call = text == "redis"
                            || (!self.callee_alias.is_empty() && self.callee_alias.contains(text));
                        if let Some((command, args, close)) =
                            may_call.then(|| self.call_parts(i)).flatten()
                        {
                            self.record(i, command, &args, close);
                        } else if self.is_sym(i + 1, "=")
                            && self.is_plain_name(i)
                            && !(i > 0
                                && (self.is_sym(i - 1, ",")
                                    || self.is_sym(i - 1, "{")
                                    || self.is_name(i - 1, "local")))
                        {
                            self.assign(&[i], i + 2);
                        }
                    }
                }
            }
            i += 1;
        }
        if !self.frames.is_empty() {
            self.partial = true;
        }
    }

    fn record(&mut self, i: usize, command: String, args: &[(usize, usize)], close: usize) {
        let closed = self
            .toks
            .get(close)
            .is_some_and(|t| t.kind() == Kind::Sym && self.text(close) == ")");
        let end = if closed {
            self.toks[close].end() as usize
        } else {
            self.partial = true;
            let last = close.saturating_sub(1).max(i);
            self.toks.get(last).map_or(0, |t| t.end() as usize)
        };
        let args = args
            .iter()
            .skip(1)
            .map(|&(s, e)| self.classify(s, e))
            .collect();
        self.calls.push(LuaCall {
            command,
            args,
            guarded: self.guard_after || self.covered > 0 || i < self.guard_until,
            absent: self
                .frames
                .iter()
                .any(|f| f.kind == FrameKind::If && f.absent_branch == Some(f.branch)),
            span: Span::new(self.toks[i].start as usize, end),
        });
    }

    /// The condition between `if`/`elseif` at `i` and its `then`.
    fn condition_after(&self, i: usize) -> Option<Polarity> {
        let n = self.toks.len();
        let mut j = i + 1;
        while j < n {
            match (self.toks[j].kind(), self.text(j)) {
                (Kind::Name, "then") => return self.check_in(i + 1, j),
                (
                    Kind::Name,
                    "end" | "local" | "return" | "if" | "elseif" | "else" | "do" | "function"
                    | "until" | "repeat" | "while" | "for",
                ) => return None,
                (Kind::Sym, "(" | "[" | "{") => j = self.skip(j),
                _ => j += 1,
            }
        }
        None
    }

    /// The condition between `if`/`elseif` at `i` and its `then` tests that
    /// the key is absent: a read tested `false`/`nil` (`v == false`, `not v`),
    /// or `exists(…) == 0`.
    fn absent_condition_after(&self, i: usize) -> bool {
        let n = self.toks.len();
        let mut j = i + 1;
        let stop = n.min(i + 1 + EXPR_SCAN);
        while j < stop && !self.is_name(j, "then") {
            if self.is_name(j, "end") || self.is_name(j, "local") || self.is_name(j, "return") {
                return false;
            }
            j += 1;
        }
        let (s, e) = (i + 1, j);
        let empty = |a: usize, b: usize| {
            (a..b)
                .any(|t| self.is_name(t, "false") || self.is_name(t, "nil") || self.text(t) == "0")
        };
        let reads = |a: usize, b: usize| {
            self.read_keys(a, b).is_some()
                || (a..b).any(|t| self.call_parts(t).is_some_and(|(c, _, _)| c == "exists"))
        };
        for t in s..e {
            if self.is_sym(t, "==") {
                let (ls, le) = self.operand_left(t, s);
                let (rs, re) = self.operand_right(t, e);
                if (reads(ls, le) && empty(rs, re)) || (reads(rs, re) && empty(ls, le)) {
                    return true;
                }
            }
        }
        // `not v` as the whole condition (optionally in parentheses)
        let mut k = s;
        while k < e && self.is_sym(k, "(") {
            k += 1;
        }
        k < e
            && self.is_name(k, "not")
            && reads(k + 1, e)
            && !(k + 1..e).any(|t| self.is_name(t, "and") || self.is_name(t, "or"))
    }

    /// Does the expression `s..e` hold an ownership check, and of which polarity?
    fn check_in(&self, s: usize, e: usize) -> Option<Polarity> {
        const EQ: u8 = 1;
        const NE: u8 = 2;
        const UNKNOWN: u8 = 4;
        let mut found = 0u8;
        let mut negated = false;
        let e = e.min(s.saturating_add(EXPR_SCAN));
        for t in s..e {
            match self.kind(t) {
                Some(Kind::Name) => {
                    let x = self.text(t);
                    if x == "not" {
                        negated = true;
                    } else if let Some((command, args, _)) = self.call_parts(t) {
                        if MEMBER_READS.contains(&command.as_str())
                            && args.iter().skip(2).any(|&(a, b)| self.has_argv(a, b))
                        {
                            found |= UNKNOWN;
                        }
                    } else if self.is_plain_name(t)
                        && !self.check_local.is_empty()
                        && self.check_local.contains(x)
                    {
                        found |= UNKNOWN;
                    }
                }
                Some(Kind::Sym) => {
                    let x = self.text(t);
                    if x == "==" || x == "~=" {
                        let (ls, le) = self.operand_left(t, s);
                        let (rs, re) = self.operand_right(t, e);
                        let l = self.read_keys(ls, le);
                        let r = self.read_keys(rs, re);
                        if l.is_some_and(|k| self.has_token(rs, re, k))
                            || r.is_some_and(|k| self.has_token(ls, le, k))
                        {
                            found |= if x == "==" { EQ } else { NE };
                        }
                    }
                }
                _ => {}
            }
        }
        match found {
            0 => None,
            EQ if !negated => Some(Polarity::Equal),
            NE if !negated => Some(Polarity::NotEqual),
            _ => Some(Polarity::Unknown),
        }
    }

    fn is_operand_boundary(&self, t: usize) -> bool {
        match self.kind(t) {
            Some(Kind::Sym) => matches!(
                self.text(t),
                "==" | "~=" | "<" | ">" | "<=" | ">=" | "," | "=" | ";"
            ),
            Some(Kind::Name) => matches!(
                self.text(t),
                "and" | "or" | "not" | "if" | "elseif" | "then" | "return" | "local" | "do"
            ),
            _ => false,
        }
    }

    /// The left operand of the comparison at `op`, not before `lo`.
    fn operand_left(&self, op: usize, lo: usize) -> (usize, usize) {
        let mut j = op;
        let mut depth = 0usize;
        while j > lo && op - j < OPERAND_SCAN {
            let k = j - 1;
            if self.kind(k) == Some(Kind::Sym) {
                match self.text(k) {
                    ")" | "]" | "}" => depth += 1,
                    "(" | "[" | "{" => {
                        if depth == 0 {
                            break;
                        }
                        depth -= 1;
                    }
                    _ => {}
                }
            }
            if depth == 0 && self.is_operand_boundary(k) {
                break;
            }
            j = k;
        }
        (j, op)
    }

    /// The right operand of the comparison at `op`, before `hi`.
    fn operand_right(&self, op: usize, hi: usize) -> (usize, usize) {
        let mut j = op + 1;
        let mut depth = 0usize;
        while j < hi && j - op < OPERAND_SCAN {
            if self.kind(j) == Some(Kind::Sym) {
                match self.text(j) {
                    "(" | "[" | "{" => depth += 1,
                    ")" | "]" | "}" => {
                        if depth == 0 {
                            break;
                        }
                        depth -= 1;
                    }
                    _ => {}
                }
            }
            if depth == 0 && self.is_operand_boundary(j) {
                break;
            }
            j += 1;
        }
        (op + 1, j)
    }

    /// `s..e` reads the stored value (a read call, or a local assigned from
    /// one): the keys it reads and mentions; `None` when it reads nothing.
    fn read_keys(&self, s: usize, e: usize) -> Option<ReadKeys> {
        let mut found = false;
        let mut keys = ReadKeys::default();
        for t in s..e {
            if let Some((command, args, _)) = self.call_parts(t) {
                if READS.contains(&command.as_str()) {
                    found = true;
                    // The key arguments: every one of an `mget`, else the first.
                    let n = if command == "mget" { args.len() } else { 2 };
                    if args.len() < 2 {
                        keys.opaque = true;
                    }
                    for &(a, b) in args.iter().take(n).skip(1) {
                        keys.add(match self.classify(a, b) {
                            LuaArg::Keys(k) => Some(k),
                            _ => None,
                        });
                    }
                }
            } else if let Some(k) = self.key_at(t) {
                keys.add(k);
            } else if self.is_plain_name(t) && !self.read_local.is_empty() {
                if let Some(r) = self.read_local.get(self.text(t)) {
                    found = true;
                    keys.mask |= r.mask;
                    keys.opaque |= r.opaque;
                }
            }
        }
        found.then_some(keys)
    }

    /// `KEYS[…]` or a local alias of one at `t`: `Some(Some(n))` for a
    /// known index `n`, `Some(None)` for a computed one (`KEYS[i]`).
    fn key_at(&self, t: usize) -> Option<Option<u32>> {
        if self.is_name(t, "KEYS") && self.is_sym(t + 1, "[") {
            return Some(self.indexed(t, t + 4, "KEYS").flatten());
        }
        if self.is_plain_name(t) && !self.key_alias.is_empty() {
            return self.key_alias.get(self.text(t)).map(|&k| Some(k));
        }
        None
    }

    /// `s..e` holds a caller-supplied token to compare a read of `read`
    /// with: an `ARGV` (or alias), or, when it reads nothing itself, a
    /// `KEYS[j]` (or alias) that is certainly not a key of the read
    /// (`get(KEYS[1]) == KEYS[2]`, not `get(KEYS[1]) == KEYS[1]`).
    fn has_token(&self, s: usize, e: usize, read: ReadKeys) -> bool {
        if self.has_argv(s, e) {
            return true;
        }
        if read.opaque || read.mask == 0 || self.read_keys(s, e).is_some() {
            return false;
        }
        (s..e).any(|t| matches!(self.key_at(t), Some(Some(n)) if read.is_other_key(n)))
    }

    /// `s..e` mentions `ARGV[…]` or a local alias of one.
    fn has_argv(&self, s: usize, e: usize) -> bool {
        (s..e).any(|t| {
            (self.is_name(t, "ARGV") && self.is_sym(t + 1, "["))
                || (self.is_plain_name(t)
                    && !self.argv_alias.is_empty()
                    && self.argv_alias.contains_key(self.text(t)))
        })
    }

    /// `<check> and <expr>`: the right operand runs only when the check held
    /// (`return get(KEYS[1]) == ARGV[1] and redis.call('del', KEYS[1]) or 0`).
    fn and_guard(&mut self, at: usize) {
        // Inside the right operand of an earlier guarding `and` of the same
        // chain: already guarded to the chain's end.
        if at < self.guard_until {
            return;
        }
        // The left operand: back to the previous `and`, a lower-precedence
        // `or`, or a statement start.
        let mut j = at;
        let mut depth = 0usize;
        while j > 0 && at - j < OPERAND_SCAN {
            let k = j - 1;
            match (self.toks[k].kind(), self.text(k)) {
                (Kind::Sym, ")" | "]" | "}") => depth += 1,
                (Kind::Sym, "(" | "[" | "{") => {
                    if depth == 0 {
                        break;
                    }
                    depth -= 1;
                }
                (Kind::Sym, "," | "=" | ";") if depth == 0 => break,
                (Kind::Name, x)
                    if depth == 0
                        && is_keyword(x)
                        && !matches!(x, "not" | "nil" | "true" | "false") =>
                {
                    break
                }
                _ => {}
            }
            j = k;
        }
        if !matches!(
            self.check_in(j, at),
            Some(Polarity::Equal | Polarity::Unknown)
        ) {
            return;
        }
        let end = self.operand_end_before_or(at + 1);
        self.guard_until = self.guard_until.max(end);
    }

    /// The end of the expression at `i`, stopping at a top-level `or`
    /// (bounded by `EXPR_SCAN` tokens).
    fn operand_end_before_or(&self, i: usize) -> usize {
        let limit = self.toks.len().min(i.saturating_add(EXPR_SCAN));
        let mut j = i;
        let mut want_operand = true;
        while j < limit {
            let kind = self.toks[j].kind();
            let x = self.text(j);
            if want_operand {
                match kind {
                    Kind::Name if x == "not" => j += 1,
                    Kind::Name if is_keyword(x) && !matches!(x, "nil" | "true" | "false") => {
                        return j
                    }
                    Kind::Name | Kind::Num | Kind::Str => {
                        want_operand = false;
                        j += 1;
                    }
                    Kind::Sym if x == "(" || x == "{" => {
                        j = self.skip(j);
                        want_operand = false;
                    }
                    Kind::Sym if x == "-" || x == "#" || x == "~" => j += 1,
                    _ => return j,
                }
            } else {
                match kind {
                    Kind::Sym if x == "." || x == ":" => {
                        j += 1;
                        if self.kind(j) == Some(Kind::Name) {
                            j += 1;
                        }
                    }
                    Kind::Sym if x == "[" || x == "(" || x == "{" => j = self.skip(j),
                    Kind::Str => j += 1,
                    Kind::Sym if BINOPS.contains(&x) => {
                        want_operand = true;
                        j += 1;
                    }
                    Kind::Name if x == "and" => {
                        want_operand = true;
                        j += 1;
                    }
                    _ => return j,
                }
            }
        }
        limit
    }

    // ---- blocks --------------------------------------------------------

    fn set_covered(&mut self, covered: bool) {
        if let Some(f) = self.frames.last_mut() {
            if f.covered != covered {
                f.covered = covered;
                if covered {
                    self.covered += 1;
                } else {
                    self.covered = self.covered.saturating_sub(1);
                }
            }
        }
    }

    fn top_is_if(&mut self) -> bool {
        let ok = self.frames.last().is_some_and(|f| f.kind == FrameKind::If);
        if !ok {
            self.partial = true;
        }
        ok
    }

    /// `then`: the branch starts; a check of its condition takes effect.
    fn then(&mut self) {
        if !self.top_is_if() {
            return;
        }
        let covered = match self.frames.last_mut() {
            Some(f) => {
                if std::mem::take(&mut f.absent_pending) {
                    f.absent_branch = Some(f.branch);
                }
                if let Some(p) = f.pending.take() {
                    if f.checks.len() < 16 {
                        f.checks.push((f.branch, p));
                    }
                }
                let b = f.branch;
                f.checks.iter().any(|&(at, p)| p.covers(at, b))
            }
            None => false,
        };
        self.set_covered(covered);
    }

    /// `elseif` (with its condition's check) or `else`.
    fn next_branch(&mut self, pending: Option<Polarity>) {
        if !self.top_is_if() {
            return;
        }
        self.set_covered(false);
        let covered = match self.frames.last_mut() {
            Some(f) => {
                f.branch = f.branch.saturating_add(1);
                f.pending = pending;
                let b = f.branch;
                f.checks.iter().any(|&(at, p)| p.covers(at, b))
            }
            None => false,
        };
        // An `elseif` branch is covered from its `then`; `else` from here.
        if pending.is_none() {
            self.set_covered(covered);
        }
    }

    fn pop_end(&mut self, at: usize) {
        match self.frames.last().map(|f| f.kind) {
            Some(FrameKind::If) | Some(FrameKind::Block) => {
                self.set_covered(false);
                if let Some(f) = self.frames.pop() {
                    if !f.checks.is_empty() {
                        self.guard_after = true;
                    }
                    // Only short bodies: a check helper is one comparison, and
                    // the bound keeps deeply nested functions linear.
                    if let Some((name, body)) = f.function {
                        if at.saturating_sub(body) <= CHECK_HELPER_TOKENS
                            && self.check_in(body, at).is_some()
                        {
                            self.check_local.insert(self.text(name));
                        }
                    }
                }
            }
            _ => self.partial = true,
        }
    }

    /// The name token of the function whose `function` keyword is at `i`:
    /// `[local] function name(`, or `local name = function(`.
    fn function_name(&self, i: usize) -> Option<usize> {
        if self.is_plain_name(i + 1) && self.is_sym(i + 2, "(") {
            return Some(i + 1);
        }
        if i >= 3
            && self.is_sym(i - 1, "=")
            && self.is_plain_name(i - 2)
            && self.is_name(i - 3, "local")
        {
            return Some(i - 2);
        }
        None
    }

    /// `for a, b in <expr> do`: loop variables over a read result (`ipairs(vals)`
    /// of an `mget`) read the stored value too.
    fn for_in(&mut self, i: usize) {
        let mut names = Vec::new();
        let mut j = i + 1;
        while self.is_plain_name(j) {
            names.push(self.text(j));
            j += 1;
            if !self.is_sym(j, ",") {
                break;
            }
            j += 1;
        }
        if !self.is_name(j, "in") {
            for n in names {
                self.forget(n);
            }
            return;
        }
        let s = j + 1;
        let e = self.expr_end(s);
        let read = if e > s {
            self.read_keys(s, e.min(s + EXPR_SCAN))
        } else {
            None
        };
        for n in names {
            self.forget(n);
            if let Some(r) = read {
                self.read_local.insert(n, r);
            }
        }
    }

    fn pop(&mut self, kind: FrameKind) {
        if self.frames.last().is_some_and(|f| f.kind == kind) {
            self.set_covered(false);
            self.frames.pop();
        } else {
            self.partial = true;
        }
    }

    // ---- locals and aliases --------------------------------------------

    /// `local a, b <const> = e1, e2`.
    fn local(&mut self, i: usize) {
        let mut names = Vec::new();
        let mut j = i + 1;
        while self.is_plain_name(j) {
            names.push(j);
            j += 1;
            if self.is_sym(j, "<") && self.is_sym(j + 2, ">") {
                j += 3;
            }
            if self.is_sym(j, ",") {
                j += 1;
            } else {
                break;
            }
        }
        if self.is_sym(j, "=") {
            self.assign(&names, j + 1);
        } else {
            for &n in &names {
                self.forget(self.text(n));
            }
        }
    }

    fn forget(&mut self, name: &str) {
        self.callee_alias.remove(name);
        self.key_alias.remove(name);
        self.argv_alias.remove(name);
        self.read_local.remove(name);
        self.check_local.remove(name);
    }

    /// Binds `names` to the expression list starting at `j`.
    fn assign(&mut self, names: &[usize], mut j: usize) {
        let mut exprs_left = true;
        for &n in names {
            let name = self.text(n);
            if !exprs_left {
                self.forget(name);
                continue;
            }
            let e = self.expr_end(j);
            self.bind(name, j, e);
            if self.is_sym(e, ",") {
                j = e + 1;
            } else {
                exprs_left = false;
            }
        }
    }

    fn bind(&mut self, name: &'a str, s: usize, e: usize) {
        let scan_end = e.min(s.saturating_add(EXPR_SCAN));
        let callee = (e == s + 3 && self.callee_len(s) == Some(3))
            || (e == s + 1 && self.callee_len(s) == Some(1));
        let key = self.indexed(s, e, "KEYS").flatten().or_else(|| {
            (e == s + 1 && self.is_plain_name(s))
                .then(|| self.key_alias.get(self.text(s)).copied())
                .flatten()
        });
        let argv = self.indexed(s, e, "ARGV").flatten().or_else(|| {
            (e == s + 1 && self.is_plain_name(s))
                .then(|| self.argv_alias.get(self.text(s)).copied())
                .flatten()
        });
        let check = e > s && self.check_in(s, e).is_some();
        let read = if !check && e > s {
            self.read_keys(s, scan_end)
        } else {
            None
        };
        self.forget(name);
        if callee {
            self.callee_alias.insert(name);
        } else if let Some(k) = key {
            self.key_alias.insert(name, k);
        } else if let Some(a) = argv {
            self.argv_alias.insert(name, a);
        } else if check {
            self.check_local.insert(name);
        } else if let Some(r) = read {
            self.read_local.insert(name, r);
        }
    }

    /// The end (exclusive) of the expression starting at `i`; stops before a
    /// top-level `,` and at anything that cannot continue an expression.
    /// Gives up at `function` (a function body is read by the main pass).
    fn expr_end(&self, mut i: usize) -> usize {
        let n = self.toks.len();
        let mut want_operand = true;
        while i < n {
            let kind = self.toks[i].kind();
            let x = self.text(i);
            if want_operand {
                match kind {
                    Kind::Name if x == "not" => i += 1,
                    Kind::Name if is_keyword(x) && !matches!(x, "nil" | "true" | "false") => {
                        return i
                    }
                    Kind::Name | Kind::Num | Kind::Str => {
                        want_operand = false;
                        i += 1;
                    }
                    Kind::Sym if x == "(" || x == "{" => {
                        i = self.skip(i);
                        want_operand = false;
                    }
                    Kind::Sym if x == "..." => {
                        want_operand = false;
                        i += 1;
                    }
                    Kind::Sym if x == "-" || x == "#" || x == "~" => i += 1,
                    _ => return i,
                }
            } else {
                match kind {
                    Kind::Sym if x == "." || x == ":" => {
                        i += 1;
                        if self.kind(i) == Some(Kind::Name) {
                            i += 1;
                        }
                    }
                    Kind::Sym if x == "[" || x == "(" || x == "{" => i = self.skip(i),
                    Kind::Str => i += 1,
                    Kind::Sym if BINOPS.contains(&x) => {
                        want_operand = true;
                        i += 1;
                    }
                    Kind::Name if x == "and" || x == "or" => {
                        want_operand = true;
                        i += 1;
                    }
                    _ => return i,
                }
            }
        }
        n
    }
}
