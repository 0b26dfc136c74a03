//! Pattern front-end for Java, Kotlin, Python, JavaScript/TypeScript, Go,
//! Ruby, PHP and C#: a lexer per language family ([`lexer`]), the scope and
//! call structure over its tokens ([`calls`]), key and value normalisation
//! ([`values`]) and the per-client tables of method names, argument order
//! and semantics ([`clients`]). It produces the same language-neutral facts
//! as the Rust front-end.

// Token-walking code reads better with explicit nesting.
#![allow(
    clippy::collapsible_if,
    clippy::collapsible_match,
    clippy::while_let_loop
)]

pub mod calls;
pub mod clients;
pub mod failopen;
pub mod guards;
pub mod lexer;
pub mod link;
pub mod paths;
pub mod ttl;
pub mod values;
pub mod waits;

#[cfg(test)]
mod tests;

use crate::facts::{
    Client, FileFacts, KeyExpr, Language, Op, OpKind, ScriptFact, ScriptId, Span, ValueExpr,
};
use calls::{Call, Structure};
use lexer::{Kind, Toks};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::path::Path;
use values::Values;

/// An operation found by the client tables, before scope bookkeeping.
#[derive(Clone, Debug)]
pub struct Draft {
    pub kind: OpKind,
    pub key: KeyExpr,
    pub value: Option<ValueExpr>,
    pub name_tok: usize,
    /// One past the last token of the call.
    pub end_tok: usize,
    pub client: Client,
}

pub struct Analyzer<'a> {
    pub src: &'a str,
    pub lang: Language,
    pub toks: Toks<'a>,
    pub st: &'a Structure,
    pub vals: Values<'a>,
    /// The file mentions a Redis client library.
    pub has_redis: bool,
    pub default_client: Client,
    /// Script literal groups: first token index → script id.
    pub script_at: HashMap<usize, ScriptId>,
    /// Names bound to a script text or script object → script id (if known).
    pub script_names: HashMap<String, Option<ScriptId>>,
    /// Names bound to a callable/runnable script object (`register_script`,
    /// `NewScript`, `DefaultRedisScript`, …), and ioredis `defineCommand` names.
    pub script_objs: HashMap<String, Option<ScriptId>>,
    pub scripts: Vec<ScriptFact>,
    /// Names bound to a Redis client, pipeline or transaction.
    pub redis_vars: HashSet<String>,
    /// Names bound to a transaction/pipeline that runs atomically, with the
    /// scope of the binding: a local `pipe := rdb.TxPipeline()` in one
    /// function says nothing of a `pipe := rdb.Pipeline()` in another.
    pub atomic_vars: HashSet<(u32, String)>,
    /// Names bound to a StackExchange `CreateTransaction()`.
    pub tx_vars: HashSet<String>,
    /// Receivers (see [`Analyzer::recv_root`]) that run an unambiguous Redis
    /// command somewhere in the file (`cache.setnx(..)`, `set(k, v, nx=True)`).
    pub redis_recvs: HashSet<String>,
}

/// `lower` holds `word` (a file's text searched for a handful of client
/// names: `memmem` runs several bytes at a time).
fn has(lower: &str, word: &str) -> bool {
    memchr::memmem::find(lower.as_bytes(), word.as_bytes()).is_some()
}

fn default_client(lang: Language, lower: &str) -> Client {
    match lang {
        Language::Java | Language::Kotlin => {
            // imports first, then names
            if has(lower, "redis.clients.jedis") {
                Client::Jedis
            } else if has(lower, "io.lettuce") {
                Client::Lettuce
            } else if has(lower, "springframework.data.redis")
                || has(lower, "redistemplate")
                || has(lower, "opsforvalue")
            {
                Client::SpringData
            } else if has(lower, "jedis") {
                Client::Jedis
            } else if has(lower, "lettuce") || has(lower, "rediscommands") {
                Client::Lettuce
            } else {
                Client::SpringData
            }
        }
        Language::Python => Client::RedisPy,
        Language::JavaScript | Language::TypeScript => {
            if has(lower, "ioredis") {
                Client::Ioredis
            } else {
                Client::NodeRedis
            }
        }
        Language::Go => {
            if has(lower, "rueidis") {
                Client::Rueidis
            } else if has(lower, "redigo") {
                Client::Redigo
            } else {
                Client::GoRedis
            }
        }
        Language::Ruby => Client::RedisRb,
        Language::Php => {
            if has(lower, "predis") {
                Client::Predis
            } else {
                Client::Phpredis
            }
        }
        Language::CSharp => Client::StackExchange,
        _ => Client::Unknown,
    }
}

/// Extracts the facts of one file in pattern mode.
pub fn extract(path: &Path, src: &str, language: Language) -> FileFacts {
    let (mut facts, packed) = extract_packed(path, src, language, super::CallSites::Record);
    if let Some(p) = packed {
        facts.link.calls = p.unpack(None, &mut facts.link.functions);
    }
    facts
}

/// [`extract`], the call sites of the link facts left packed (and
/// `facts.link.calls` empty): as a whole-project run keeps them until the
/// link ([`crate::project::calls`]).
pub fn extract_packed(
    _path: &Path,
    src: &str,
    language: Language,
    sites: super::CallSites,
) -> (FileFacts, Option<crate::project::calls::PackedCalls>) {
    let mut facts = FileFacts::new(language);
    let lexed = lexer::lex(src, language);
    let toks = lexed.toks();
    let st = calls::structure(toks, src, language);
    // the lower-cased copy of the file is dropped as soon as these are known
    let (has_redis, default_client) = {
        let lower = src.to_ascii_lowercase();
        let has_redis = [
            "redis",
            "jedis",
            "lettuce",
            "rueidis",
            "stackexchange",
            "valkey",
        ]
        .iter()
        .any(|w| has(&lower, w));
        (has_redis, default_client(language, &lower))
    };
    let vals = Values::new(src, toks, &st, language);
    let mut an = Analyzer {
        src,
        lang: language,
        toks,
        st: &st,
        vals,
        has_redis,
        default_client,
        script_at: HashMap::default(),
        script_names: HashMap::default(),
        script_objs: HashMap::default(),
        scripts: Vec::new(),
        redis_vars: HashSet::default(),
        atomic_vars: HashSet::default(),
        tx_vars: HashSet::default(),
        redis_recvs: HashSet::default(),
    };
    an.find_scripts();
    an.classify_bindings();
    an.spring_connection_params();
    an.link_script_setters();
    let mut call_table = calls::CallTable::default();
    let all_calls = calls::calls(toks, &st, language, &mut call_table);
    an.collect_redis_receivers(&all_calls);
    // Each draft becomes its op at once (its key and value moved, the
    // position facts filled in below): no list of drafts beside the ops.
    // Until then an op's `order`, `span` and `scope` hold its name token,
    // one past its call's last token and its call's index (a list of them
    // beside the ops took 12 bytes an op at the front-end's peak).
    for (ci, c) in all_calls.iter().enumerate() {
        for d in an.classify(c, &all_calls) {
            let mut op = Op::new(
                d.kind,
                d.key,
                d.value,
                ci as u32,
                Span::new(d.end_tok, d.end_tok),
                Span::new(0, 0),
                d.client,
            );
            op.order = d.name_tok as u32;
            crate::facts::push_by_quarters(&mut facts.ops, op);
        }
    }
    // the ops are kept to the end: no spare room
    facts.ops.shrink_to_fit();
    if !facts.ops.is_sorted_by_key(|o| o.order) {
        // stably by name token, through a permutation (no scratch copy of
        // the ops)
        let mut idx: Vec<u32> = (0..facts.ops.len() as u32).collect();
        idx.sort_by_key(|&i| facts.ops[i as usize].order);
        permute(&mut facts.ops, &mut idx);
    }
    let tx = an.tx_state(&all_calls);
    // project link facts need the calls that became ops
    let client_calls = ClientCalls::new(facts.ops.iter().map(|o| o.scope), all_calls.len());
    // (room for every site and argument, reserved once they are made, below:
    // the list is kept to the end of the run)
    let args: usize = facts
        .ops
        .iter()
        .filter_map(|o| all_calls.get(o.scope as usize))
        .map(|c| c.args().len())
        .sum();
    for op in facts.ops.iter_mut() {
        let (name_tok, end_tok, ci) = (op.order as usize, op.span.start(), op.scope);
        let scope = st.tok_scope.get(name_tok).copied().unwrap_or(0);
        let depth = st.tok_depth.get(name_tok).unwrap_or(0);
        let (mut atomic, watched) = tx.at(name_tok, scope);
        let call = all_calls.get(ci as usize);
        if let Some(c) = call {
            if c.recv()
                .iter()
                .any(|r| r.eq_ignore_ascii_case("multi()") || r == "TxPipeline()")
                || c.recv().first().is_some_and(|r| an.atomic_var(scope, r))
            {
                atomic = true;
            }
        }
        if let (OpKind::Release { checked: false }, Some(c)) = (&op.kind, call) {
            if c.recv()
                .first()
                .is_some_and(|r| an.tx_vars.contains(&values::norm_name(r)))
                && tx.conditioned.contains(&scope)
            {
                op.kind = OpKind::Release { checked: true };
            }
        }
        let name = toks.at(name_tok);
        let end = toks
            .get(end_tok.saturating_sub(1))
            .map(|t| t.end())
            .unwrap_or(name.end())
            .max(name.end());
        if let Some(c) = call {
            if op.kind == (OpKind::Acquire { expiry: true }) {
                facts.ttls.extend(
                    ttl::of_call(&an, c, name.start())
                        .or_else(|| ttl::of_cache_add(&an, c, name.start()))
                        .or_else(|| ttl::of_duration_arg(&an, c, name.start())),
                );
            }
        }
        op.scope = scope;
        op.order = an.exec_order(name_tok) as u32;
        op.set_depth(depth);
        op.set_atomic(atomic);
        op.set_watched(watched);
        op.span = Span::new(name.start(), end);
        op.name_span = Span::new(name.start(), name.end());
    }
    // (kept to the end of the run, and grown by doubling: a bundle with a
    // lock every few hundred bytes left a third of their room spare)
    facts.ttls.shrink_to_fit();
    facts.fail_opens = failopen::find(&an, &all_calls, &facts.ops);
    facts.absence_guards = guards::find(&an, &all_calls, &facts.ops);
    facts.exclusive_of_acquire = guards::exclusive_of_acquire(&an, &facts.ops);
    {
        // a `u32` per token: dropped before the link facts are worked out
        let lines = paths::LineEnds::new(an.toks);
        facts.failure_spans = paths::failure_spans(&an, &lines, &facts.ops);
        facts.validity_spans = paths::validity_spans(&an, &lines);
        facts.deliberate_spans = paths::deliberate_spans(&an, &lines);
        facts.deferred = waits::deferred(&an);
        facts.late_result_tests = paths::late_result_tests(&an, &lines, &facts.deferred);
    }
    facts.scripts = std::mem::take(&mut an.scripts);
    facts.run_limit_secs = ttl::run_limit(&an);
    (facts.task_limits, facts.task_limit_names) = ttl::task_limits(&an);
    facts.int_consts = ttl::module_consts(&an);
    // project link facts (SPEC §2 "Project summaries")
    // `waits` before `record`: its marks and the packed call sites do not
    // stand together (`link::resolvable`)
    let resolvable = link::resolvable(&an, &all_calls, &client_calls);
    // Ruby: a call without parentheses (`build`) reads as a name, so a
    // wait there cannot be told from a variable: waits unknown, never exempt
    facts.waits = (language != Language::Ruby).then(|| {
        // only where a short critical section can be, acquire to release
        let need = waits::sections(&facts.ops, &resolvable, &facts.deferred);
        waits::find(&an, &all_calls, &client_calls, &need)
    });
    // The ops' call sites, made only now: they are kept to the end, and
    // the searches above (sections, waits) held their lists at the
    // front-end's peak. An op's call is the call named at its name token
    // (`calls::call_at`: every op's draft is named by its call's name).
    facts.call_sites.reserve_exact(facts.ops.len(), args);
    for op in &facts.ops {
        // (the first token at the name's start that names a call: an empty
        // token may stand at the same offset before it)
        let at = op.name_span.start();
        let call = (toks.first_at(at)..toks.len())
            .take_while(|&i| toks.at(i).start() == at)
            .find_map(|i| calls::call_at(&all_calls, i));
        debug_assert!(call.is_some(), "an op without its call");
        if let Some(c) = call {
            push_call_site(&mut facts.call_sites, toks, c, op.span);
        }
    }
    let sites = link::record(
        &an,
        &all_calls,
        &client_calls,
        &mut facts,
        sites,
        &resolvable,
    );
    drop(resolvable);
    drop(an);
    drop(all_calls);
    drop(call_table);
    drop(lexed);
    // the facts' scopes are made from the structure's at the end, once the
    // tokens and the calls are gone (the structure's table is a third of
    // their size; a minified bundle has a scope every seventy bytes); then
    // the call sites' bytes are joined
    facts.scopes = st.into_scopes().into_facts();
    (facts, sites.finish())
}

/// The calls that became ops (indexes into the file's call list): one bit
/// for each call of the file, where a sorted list took 4 bytes a client
/// call (a hash set of `usize`, before it, 16 or more: 590 kB for 50,000
/// calls on one line). A call is at least three bytes of source, so the
/// bits cost at most a twenty-fourth of a byte a source byte.
pub struct ClientCalls {
    bits: Vec<u64>,
    count: usize,
}

impl ClientCalls {
    /// The calls `calls` (repeats allowed) among `all` calls.
    fn new(calls: impl Iterator<Item = u32>, all: usize) -> Self {
        let mut bits = vec![0u64; all.div_ceil(64)];
        for c in calls {
            if let Some(w) = bits.get_mut(c as usize / 64) {
                *w |= 1 << (c % 64);
            }
        }
        let count = bits.iter().map(|w| w.count_ones() as usize).sum();
        ClientCalls { bits, count }
    }

    pub fn contains(&self, ci: &usize) -> bool {
        self.bits
            .get(ci / 64)
            .is_some_and(|w| w & (1 << (ci % 64)) != 0)
    }

    /// How many calls there are.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The calls in order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.bits.iter().enumerate().flat_map(|(i, &w)| {
            let mut w = w;
            std::iter::from_fn(move || {
                (w != 0).then(|| {
                    let bit = w.trailing_zeros() as usize;
                    w &= w - 1;
                    i * 64 + bit
                })
            })
        })
    }
}

/// Reorders `ops` so that entry `i` becomes the one that
/// stood at `idx[i]` (`idx` is a permutation; it is used up).
fn permute(ops: &mut [Op], idx: &mut [u32]) {
    for i in 0..idx.len() {
        // follow the cycle through `i`: the entry first at `i` moves along
        // it to where it belongs
        let mut j = i;
        while idx[j] as usize != i {
            let k = idx[j] as usize;
            idx[j] = j as u32;
            ops.swap(j, k);
            j = k;
        }
        idx[j] = j as u32;
    }
}

/// Records where the receiver and the arguments of `c` stand (for fixes).
fn push_call_site(sites: &mut crate::facts::CallSites, toks: Toks, c: &Call, span: Span) {
    let byte = |i: usize, end: bool| toks.get(i).map(|t| if end { t.end() } else { t.start() });
    let receiver = if c.recv_start() < c.name_tok() {
        let start = byte(c.recv_start(), false).unwrap_or(span.start());
        // The receiver ends at its last token before the joining `.`/`->`/`::`.
        let last = c.name_tok().saturating_sub(2).max(c.recv_start());
        Span::new(start, byte(last, true).unwrap_or(start).max(start))
    } else {
        Span::new(span.start(), span.start())
    };
    let args = c
        .args()
        .iter()
        .filter(|a| a.end() > a.start())
        .filter_map(|a| Some(Span::new(byte(a.start(), false)?, byte(a.end() - 1, true)?)));
    sites.push(span, receiver, args);
}

/// MULTI/EXEC and WATCH state by position.
/// A transaction transition: (token index, atomic after it, watched after it).
type TxMark = (usize, bool, bool);

pub struct TxState {
    /// Per scope, the transitions in the order they were found, and
    /// whether that is token order.
    marks: HashMap<u32, (Vec<TxMark>, bool)>,
    /// Token ranges that run atomically, and those that run watched
    /// (callbacks, blocks), as the tokens strictly inside them.
    atomic_ranges: crate::facts::SpanIndex,
    watched_ranges: crate::facts::SpanIndex,
    /// Scopes with a StackExchange `AddCondition(Condition.StringEqual…)`.
    pub conditioned: HashSet<u32>,
}

impl TxState {
    fn new(
        marks: Vec<(u32, usize, bool, bool)>,
        ranges: Vec<(usize, usize, bool, bool)>,
        conditioned: HashSet<u32>,
    ) -> Self {
        let mut by_scope: HashMap<u32, (Vec<TxMark>, bool)> = HashMap::default();
        for (s, t, a, w) in marks {
            by_scope.entry(s).or_default().0.push((t, a, w));
        }
        for (list, sorted) in by_scope.values_mut() {
            *sorted = list.windows(2).all(|p| p[0].0 <= p[1].0);
        }
        let inside = |want: fn(&(usize, usize, bool, bool)) -> bool| {
            let spans: Vec<Span> = ranges
                .iter()
                .filter(|r| want(r))
                .map(|&(s, e, _, _)| Span::new(s + 1, e))
                .collect();
            crate::facts::SpanIndex::new(&spans)
        };
        TxState {
            atomic_ranges: inside(|r| r.2),
            watched_ranges: inside(|r| r.3),
            marks: by_scope,
            conditioned,
        }
    }

    /// Whether the token runs in a transaction, and watched: the scope's
    /// last transition before it (a binary search when they are in token
    /// order, as the calls are), or any range holding it. Asked per op, a
    /// scan of every transition and range was quadratic.
    fn at(&self, tok: usize, scope: u32) -> (bool, bool) {
        let (mut atomic, mut watched) = (false, false);
        if let Some((list, sorted)) = self.marks.get(&scope) {
            let last = if *sorted {
                list[..list.partition_point(|m| m.0 < tok)].last()
            } else {
                list.iter().rev().find(|m| m.0 < tok)
            };
            if let Some(&(_, a, w)) = last {
                atomic = a;
                watched = w;
            }
        }
        atomic |= self.atomic_ranges.contains(tok);
        watched |= self.watched_ranges.contains(tok);
        (atomic, watched)
    }
}

impl<'a> Analyzer<'a> {
    fn tx_state(&self, all: &[Call]) -> TxState {
        let mut marks = Vec::new();
        let mut ranges = Vec::new();
        let mut conditioned = HashSet::default();
        let mut state: HashMap<u32, (bool, bool)> = HashMap::default();
        for c in all {
            let scope = self.st.tok_scope.get(c.name_tok()).copied().unwrap_or(0);
            let lname = c.name(self.toks).to_ascii_lowercase();
            let cur = state.entry(scope).or_insert((false, false));
            // a block or callback argument: `TxPipelined(ctx, func…{…})`, Ruby `multi do … end`
            let block_end = self.block_after(c);
            match lname.as_str() {
                "txpipelined" => ranges.push((c.open(), c.end(), true, false)),
                "watch"
                    if self.lang == Language::Go
                        && c.args().iter().any(|a| self.toks.at(a.start()).is("func")) =>
                {
                    ranges.push((c.open(), c.end(), false, true))
                }
                "multi" | "watch" if block_end.is_some() => {
                    let e = block_end.unwrap_or(c.end());
                    let atomic = lname == "multi";
                    ranges.push((c.open(), e, atomic, !atomic));
                }
                "multi" if c.recv().len() <= 2 && !self.call_continues(c) => {
                    cur.0 = true;
                    marks.push((scope, c.name_tok(), cur.0, cur.1));
                }
                "watch" | "watchasync" if !c.args().is_empty() => {
                    cur.1 = true;
                    marks.push((scope, c.name_tok(), cur.0, cur.1));
                }
                // an UNWATCH right before leaving (`if stale { UnWatch();
                // return false; }`) leaves the code after that branch watched
                "unwatch" | "unwatchasync" if self.exits_after(c) => {}
                // an UNWATCH inside a branch (`if fresh { UnWatch() } else {
                // MULTI … DEL … EXEC }`) ends the watch only in that branch
                "unwatch" | "unwatchasync" if self.enclosing_block_end(c.name_tok()).is_some() => {
                    let end = self.enclosing_block_end(c.name_tok()).unwrap_or(c.end());
                    marks.push((scope, c.name_tok(), cur.0, false));
                    marks.push((scope, end, cur.0, cur.1));
                }
                "exec" | "execute" | "discard" | "unwatch" => {
                    if lname != "execute" || cur.0 {
                        *cur = (false, false);
                        marks.push((scope, c.name_tok(), false, false));
                    }
                }
                "addcondition" => {
                    let t = self.vals.text(c.open(), c.end());
                    if t.contains("StringEqual") || t.contains("HashEqual") {
                        conditioned.insert(scope);
                    }
                }
                _ => {}
            }
        }
        // Ruby blocks: `redis.multi do |tx| … end`, `redis.watch(k) do … end`
        if self.lang == Language::Ruby {
            for (i, t) in self.toks.iter().enumerate() {
                if !(t.is("do") || t.is("{")) || i == 0 {
                    continue;
                }
                let Some(m) = self.st.matching.get(&i) else {
                    continue;
                };
                if m <= i {
                    continue;
                }
                let mut n = i - 1;
                if self.toks.at(n).is(")") {
                    match self.st.matching.get(&n) {
                        Some(o) if o >= 1 => n = o - 1,
                        _ => continue,
                    }
                }
                let name = self.toks.at(n).text();
                if n >= 1 && self.toks.at(n - 1).is(".") && (name == "multi" || name == "watch") {
                    let atomic = name == "multi";
                    ranges.push((i, m, atomic, !atomic));
                }
            }
        }
        TxState::new(marks, ranges, conditioned)
    }

    /// Source order, except that a Ruby/Perl-style modifier condition
    /// (`redis.del(k) if redis.get(k) == t`) runs before its statement.
    pub(crate) fn exec_order(&self, tok: usize) -> usize {
        if self.lang != Language::Ruby {
            return tok;
        }
        let mut k = tok;
        while k > 0 && !self.toks.at(k).nl() {
            k -= 1;
            let t = self.toks.at(k);
            if (t.is("if") || t.is("unless"))
                && !t.nl()
                && self.st.tok_paren.at(k) == self.st.tok_paren.at(tok)
            {
                // the line's first token
                let mut s = k;
                while s > 0 && !self.toks.at(s).nl() {
                    s -= 1;
                }
                return s;
            }
        }
        tok
    }

    /// The end of the innermost `{ … }` block around `tok` when that block is
    /// a branch or loop body nested in the function (not the function body):
    /// a brace language only.
    fn enclosing_block_end(&self, tok: usize) -> Option<usize> {
        if matches!(self.lang, Language::Python | Language::Ruby) {
            return None;
        }
        let depth = self.st.tok_depth.get(tok)?;
        if depth == 0 {
            return None;
        }
        let mut k = tok;
        while k > 0 {
            k -= 1;
            let t = self.toks.at(k);
            if t.is("}") {
                match self.st.matching.get(&k) {
                    Some(o) if o < k => k = o,
                    _ => return None,
                }
            } else if t.is("{") {
                let close = self.st.matching.get(&k)?;
                // only a branch: the token before the block closes a condition or is `else`
                let prev = k.checked_sub(1).map(|p| self.toks.at(p));
                let branch = prev.is_some_and(|p| p.is(")") || p.is("else"));
                return (close > tok && branch).then_some(close);
            }
        }
        None
    }

    /// The statement after this call leaves the block (`return`, `throw`,
    /// `raise`, `break`, `continue`).
    fn exits_after(&self, c: &Call) -> bool {
        let mut k = c.end();
        // `.ConfigureAwait(false)` and the like
        while self.toks.get(k).is_some_and(|t| t.is("."))
            && self.toks.get(k + 1).is_some_and(|t| t.is_ident())
            && self.toks.get(k + 2).is_some_and(|t| t.is("("))
        {
            match self.st.matching.get(&(k + 2)) {
                Some(m) if m > k => k = m + 1,
                _ => break,
            }
        }
        while self.toks.get(k).is_some_and(|t| t.is(";")) {
            k += 1;
        }
        self.toks.get(k).is_some_and(|t| {
            t.is_ident()
                && matches!(
                    t.text(),
                    "return" | "throw" | "raise" | "break" | "continue"
                )
        })
    }

    /// The chain goes on after this call (`multi().set(..).exec()`).
    fn call_continues(&self, c: &Call) -> bool {
        self.toks
            .get(c.end())
            .is_some_and(|t| t.is(".") || t.is("->"))
    }

    /// For Ruby/Kotlin-style blocks: the end of a `do … end` / `{ … }` right after the call.
    fn block_after(&self, c: &Call) -> Option<usize> {
        let t = self.toks.get(c.end())?;
        if t.is("do") || t.is("{") {
            let m = self.st.matching.get(&c.end())?;
            return (m > c.end()).then_some(m);
        }
        None
    }

    /// Finds Lua script texts: string literals (and concatenations of them)
    /// that call `redis.call`/`redis.pcall`.
    fn find_scripts(&mut self) {
        /// A script's first token, text and anchors (text offset, source offset).
        type FoundScript = (usize, String, Vec<(usize, usize)>);
        let toks = self.toks;
        // the scripts (first token, text, anchors) first, then their names
        // all at once (`script_names`), then recorded in order
        let mut found: Vec<FoundScript> = Vec::new();
        let mut i = 0;
        while i < toks.len() {
            if toks.at(i).kind() != Kind::Str {
                i += 1;
                continue;
            }
            let first = i;
            let mut group = vec![i];
            let mut k = i + 1;
            loop {
                let Some(t) = toks.get(k) else { break };
                let joins = t.is("+")
                    || (self.lang == Language::Php && t.is("."))
                    || (self.lang == Language::Lua && t.is(".."));
                if joins && toks.get(k + 1).is_some_and(|x| x.kind() == Kind::Str) {
                    group.push(k + 1);
                    k += 2;
                } else if t.kind() == Kind::Str && matches!(self.lang, Language::Python) {
                    group.push(k);
                    k += 1;
                } else {
                    break;
                }
            }
            i = k;
            let mut text = String::new();
            let mut anchors = Vec::new();
            for &g in &group {
                if let Some(lit) = toks.at(g).lit() {
                    let base = text.len();
                    let before = anchors.len();
                    anchors.extend(lit.anchors().map(|(t, s)| (base + t, s)));
                    if anchors.len() == before {
                        anchors.push((base, toks.at(g).start()));
                    }
                    text.push_str(lit.text());
                }
            }
            let lower = text.to_ascii_lowercase();
            if !(lower.contains("redis.call") || lower.contains("redis.pcall")) {
                continue;
            }
            found.push((first, text, anchors));
        }
        if found.is_empty() {
            return;
        }
        let firsts: Vec<usize> = found.iter().map(|f| f.0).collect();
        let names = self.script_names(&firsts);
        for ((first, text, anchors), name) in found.into_iter().zip(names) {
            let Some(id) = crate::facts::next_script_id(&self.scripts) else {
                break;
            };
            let lua = crate::frontend::lua::analyse(&text);
            self.scripts.push(ScriptFact {
                name: name.clone(),
                text,
                anchors,
                lua,
                client: self.default_client,
            });
            self.script_at.insert(first, id);
            if let Some(n) = name {
                self.script_names.insert(n, Some(id));
            }
        }
    }

    /// The name of each script starting at `firsts` (ascending token
    /// indices): the innermost binding holding it (the first seen of
    /// equal widths), else a `defineCommand('name', …)` around it. Each
    /// binding visits the scripts inside it, not each script every
    /// binding: a file of thousands of registered scripts was quadratic.
    fn script_names(&self, firsts: &[usize]) -> Vec<Option<String>> {
        let mut best: Vec<Option<(usize, &str)>> = vec![None; firsts.len()];
        for (_, name, b) in self.vals.bindings() {
            let lo = firsts.partition_point(|&t| t < b.start);
            let hi = firsts.partition_point(|&t| t < b.end).max(lo);
            let w = b.end - b.start;
            for slot in &mut best[lo..hi] {
                if slot.is_none_or(|(bw, _)| w < bw) {
                    *slot = Some((w, name));
                }
            }
        }
        firsts
            .iter()
            .zip(best)
            .map(|(&tok, b)| match b {
                Some((_, n)) => Some(n.to_string()),
                None => self.define_command_name(tok),
            })
            .collect()
    }

    /// The name a `defineCommand("name", {...})` just before `tok` gives.
    fn define_command_name(&self, tok: usize) -> Option<String> {
        let mut k = tok;
        let mut guard = 0;
        while k > 0 && guard < 40 {
            k -= 1;
            guard += 1;
            if self.toks.at(k).is("defineCommand") {
                return self
                    .toks
                    .get(k + 2)
                    .filter(|t| t.kind() == Kind::Str)
                    .map(|t| t.text().to_string());
            }
        }
        None
    }

    /// `script.setScriptText(LUA)` (Spring `DefaultRedisScript`): the object runs that text.
    fn link_script_setters(&mut self) {
        let toks = self.toks;
        for i in 2..toks.len() {
            if !(toks.at(i).is("setScriptText")
                && toks.at(i - 1).is(".")
                && toks.get(i + 1).is_some_and(|t| t.is("(")))
            {
                continue;
            }
            let Some(close) = self.st.matching.get(&(i + 1)) else {
                continue;
            };
            let sid = self.script_ref(i + 2, close);
            if sid.is_none() {
                continue;
            }
            let mut recv = toks.at(i - 2).text().to_string();
            if i >= 4 && toks.at(i - 3).is(".") && matches!(toks.at(i - 4).text(), "this" | "self")
            {
                recv = format!("this.{recv}");
            }
            let recv = values::norm_name(&recv);
            self.script_objs.insert(recv.clone(), sid);
            self.script_names.insert(recv, sid);
        }
    }

    /// Spring Data Redis hands a connection to callbacks: the parameter of a
    /// lambda cast to or declared as `RedisCallback`/`SessionCallback`
    /// (`(RedisCallback<Long>) con -> con.del(k)`) and a parameter typed
    /// `RedisConnection` (`doInRedis(RedisConnection c)`, Kotlin
    /// `c: RedisConnection`) is a Redis client, whatever its name.
    fn spring_connection_params(&mut self) {
        if !matches!(self.lang, Language::Java | Language::Kotlin) {
            return;
        }
        let toks = self.toks;
        for (i, t) in toks.iter().enumerate() {
            if !t.is_ident() {
                continue;
            }
            let name = t.text();
            if matches!(
                name,
                "RedisCallback" | "SessionCallback" | "ReactiveRedisCallback"
            ) {
                // the lambda's parameters: the identifiers before the first
                // `->` within the cast or declaration
                let end = (i + 16).min(toks.len());
                // (not past a statement or, in Java, into an anonymous class body)
                let java = self.lang == Language::Java;
                let Some(arrow) = (i + 1..end)
                    .take_while(|&k| !(toks.at(k).is(";") || (java && toks.at(k).is("{"))))
                    .find(|&k| toks.at(k).is("->"))
                else {
                    continue;
                };
                let mut k = arrow;
                while k > i + 1 {
                    k -= 1;
                    let p = toks.at(k);
                    if p.is_ident() && !toks.at(k - 1).is(".") && !toks.at(k - 1).is("<") {
                        self.redis_vars.insert(p.text().to_string());
                        break;
                    }
                    if !p.is(")") && !p.is(",") {
                        break;
                    }
                }
            } else if name.ends_with("RedisConnection") {
                // Java `RedisConnection c` (then `,` or `)`), Kotlin `c: RedisConnection`
                let next = toks.get(i + 1);
                let after = toks.get(i + 2);
                if let (Some(n), Some(a)) = (next, after) {
                    if n.is_ident() && (a.is(")") || a.is(",")) {
                        self.redis_vars.insert(n.text().to_string());
                        continue;
                    }
                }
                if i >= 2 && toks.at(i - 1).is(":") && toks.at(i - 2).is_ident() {
                    self.redis_vars.insert(toks.at(i - 2).text().to_string());
                }
            }
        }
    }

    /// `recv` (as written) is bound to an atomic transaction or pipeline in
    /// `scope`, or is a field or a top-level name bound to one.
    fn atomic_var(&self, scope: u32, recv: &str) -> bool {
        let name = values::norm_name(recv);
        self.atomic_vars.contains(&(0, name.clone())) || self.atomic_vars.contains(&(scope, name))
    }

    /// Bindings whose value is a script object, a Redis client or a transaction.
    fn classify_bindings(&mut self) {
        let mut objs = Vec::new();
        let mut alias = Vec::new();
        for (scope, name, b) in self.vals.bindings() {
            let text = self.vals.text(b.start, b.end);
            let lower = text.to_ascii_lowercase();
            let is_script_obj = [
                "register_script",
                "newscript",
                "newluascript",
                "defaultredisscript",
                "redisscript.of",
                "luascript.prepare",
                "script.new",
                "registerscript",
            ]
            .iter()
            .any(|w| lower.contains(w));
            // the script text it holds: a literal group inside, or a name of one
            let mut sid = None;
            for k in b.start..b.end {
                if let Some(&id) = self.script_at.get(&k) {
                    sid = Some(id);
                    break;
                }
            }
            if sid.is_none() {
                for k in b.start..b.end {
                    let t = self.toks.at(k);
                    if t.is_ident() {
                        if let Some(&Some(id)) = self.script_names.get(&values::norm_name(t.text()))
                        {
                            sid = Some(id);
                            break;
                        }
                    }
                }
            }
            if is_script_obj {
                objs.push((name.to_string(), sid));
            } else if sid.is_some() && b.end - b.start == 1 {
                alias.push((name.to_string(), sid));
            }
            let client_ctor = [
                "redis",
                "jedis",
                "createclient",
                "getresource",
                "connectionmultiplexer",
                "getdatabase",
                "predis",
                "rueidis",
                "lettuce",
                "connect(",
            ]
            .iter()
            .any(|w| lower.contains(w));
            if client_ctor && !is_script_obj {
                self.redis_vars.insert(name.to_string());
            }
            if lower.contains("pipeline(")
                && !lower.contains("transaction=false")
                && self.lang == Language::Python
                || lower.contains("txpipeline(")
                || lower.contains(".multi(")
            {
                // a field (`this.tx`) is seen from every method
                let at = if name.starts_with("this.") { 0 } else { scope };
                self.atomic_vars.insert((at, name.to_string()));
                self.redis_vars.insert(name.to_string());
            }
            if lower.contains("createtransaction(") {
                self.tx_vars.insert(name.to_string());
                self.redis_vars.insert(name.to_string());
            }
            if lower.contains("pipeline(") || lower.contains("pipelined(") {
                self.redis_vars.insert(name.to_string());
            }
        }
        for (n, sid) in objs {
            self.script_objs.insert(n.clone(), sid);
            self.script_names.entry(n).or_insert(sid);
        }
        for (n, sid) in alias {
            self.script_names.entry(n).or_insert(sid);
        }
        // Python `with r.pipeline() as pipe:`
        if self.lang == Language::Python {
            for i in 0..self.toks.len() {
                if self.toks.at(i).is("as") && i >= 2 && self.toks.at(i - 1).is(")") {
                    if let (Some(o), Some(n)) =
                        (self.st.matching.get(&(i - 1)), self.toks.get(i + 1))
                    {
                        if o >= 1
                            && self.toks.at(o - 1).is("pipeline")
                            && !self.vals.text(o, i).contains("transaction=False")
                        {
                            let scope = self.st.tok_scope.get(i).copied().unwrap_or(0);
                            self.atomic_vars.insert((scope, n.text().to_string()));
                            self.redis_vars.insert(n.text().to_string());
                        }
                    }
                }
            }
        }
        // ioredis defineCommand("name", …)
        for i in 0..self.toks.len() {
            if self.toks.at(i).is("defineCommand") {
                if let Some(t) = self.toks.get(i + 2).filter(|t| t.kind() == Kind::Str) {
                    let mut sid = None;
                    let end = (i + 40).min(self.toks.len());
                    for k in i..end {
                        if let Some(&id) = self.script_at.get(&k) {
                            sid = Some(id);
                            break;
                        }
                        if self.toks.at(k).is_ident() {
                            if let Some(&Some(id)) = self
                                .script_names
                                .get(&values::norm_name(self.toks.at(k).text()))
                            {
                                if k > i + 2 {
                                    sid = Some(id);
                                    break;
                                }
                            }
                        }
                    }
                    self.script_objs.insert(t.text().to_string(), sid);
                }
            }
        }
    }
}
