//! Where a function may wait on something other than Redis: a call into
//! code the file does not show to be a Redis command, a log line or a pure
//! computation; a loop whose every turn makes a Redis round trip; an `await`
//! of anything but a Redis command (JS/TS: a synchronous call cannot wait
//! for I/O there). And which ops run only when their function returns (Go
//! `defer`). Facts only: what they mean for a lock is the rules' business.

use super::calls::Call;
use super::lexer::Toks;
use super::{values, Analyzer};
use crate::facts::{Deferred, Language, Op, OpKind, Span};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// How many rounds the "this file's function waits" answer may take to settle.
const MAX_ROUNDS: usize = 16;
/// Longest loop header (in tokens) read before its body.
const MAX_HEADER: usize = 256;

/// Names that are never calls: declarations, keywords before `(`.
const NOT_CALLS: &[&str] = &[
    "if",
    "for",
    "while",
    "switch",
    "catch",
    "return",
    "func",
    "function",
    "fun",
    "def",
    "lambda",
    "async",
    "await",
    "elif",
    "elsif",
    "unless",
    "until",
    "foreach",
    "using",
    "synchronized",
    "match",
    "when",
    "typeof",
    "sizeof",
    "super",
    "this",
    "self",
    "base",
    "with",
    "except",
    "select",
    "in",
    "not",
    "and",
    "or",
    "assert",
    "yield",
    "new",
    "throw",
    "raise",
    "go",
    "defer",
    "else",
    "do",
    "try",
    "finally",
    "case",
    "var",
    "let",
    "const",
    "is",
    "as",
    "instanceof",
    "void",
    "delete",
];

/// Receivers whose calls write a log line (or format text): the last
/// segment of `root` (case aside, leading `_` dropped).
fn is_logger(root: &str) -> bool {
    let last = root
        .rsplit('.')
        .next()
        .unwrap_or(root)
        .trim_start_matches('_');
    let is = |w: &str| last.eq_ignore_ascii_case(w);
    let ends = |w: &str| {
        last.len() >= w.len()
            && last.as_bytes()[last.len() - w.len()..].eq_ignore_ascii_case(w.as_bytes())
    };
    [
        "log", "logger", "logging", "blog", "glog", "klog", "slog", "zap", "zlog", "logrus",
        "console", "fmt", "logs", "log4j", "sentry",
    ]
    .iter()
    .any(|w| is(w))
        || ends("logger")
        || ends("_log")
}

/// Some segment of the receiver holds a word every logger name holds
/// ([`is_logger`]), case aside: without one, no root built from those
/// segments is a logger.
fn may_be_logger(recv: &[super::calls::Seg]) -> bool {
    recv.iter().any(|seg| {
        let b = seg.as_bytes();
        (0..b.len()).any(|i| {
            let rest = &b[i..];
            let at = |w: &[u8]| rest.len() >= w.len() && rest[..w.len()].eq_ignore_ascii_case(w);
            match b[i] | 0x20 {
                b'l' => at(b"log"),
                b'z' => at(b"zap"),
                b'c' => at(b"console"),
                b'f' => at(b"fmt"),
                b's' => at(b"sentry"),
                _ => false,
            }
        })
    })
}

/// A call of the standard library that computes without waiting, by the
/// receiver's first segment (`""` for a bare call) and the name.
fn pure_call(lang: Language, first: &str, name: &str) -> bool {
    match lang {
        Language::Go => match first {
            "" => matches!(
                name,
                "len"
                    | "cap"
                    | "make"
                    | "new"
                    | "append"
                    | "copy"
                    | "delete"
                    | "panic"
                    | "min"
                    | "max"
                    | "int"
                    | "int8"
                    | "int16"
                    | "int32"
                    | "int64"
                    | "uint"
                    | "uint8"
                    | "uint16"
                    | "uint32"
                    | "uint64"
                    | "float32"
                    | "float64"
                    | "string"
                    | "byte"
                    | "rune"
                    | "bool"
            ),
            "strings" | "strconv" | "errors" | "bytes" | "math" | "utf8" | "json" | "uuid"
            | "hex" | "base64" | "sort" | "slices" | "maps" => true,
            "time" => !matches!(
                name,
                "Sleep" | "After" | "Tick" | "NewTimer" | "NewTicker" | "AfterFunc"
            ),
            "context" => true,
            _ => false,
        },
        Language::Python => match first {
            "" => matches!(
                name,
                "len"
                    | "str"
                    | "int"
                    | "float"
                    | "bool"
                    | "dict"
                    | "list"
                    | "set"
                    | "tuple"
                    | "min"
                    | "max"
                    | "sum"
                    | "sorted"
                    | "isinstance"
                    | "range"
                    | "enumerate"
                    | "zip"
                    | "repr"
                    | "abs"
                    | "round"
                    | "bytes"
                    | "print"
            ),
            "json" | "uuid" | "math" | "datetime" | "timedelta" => true,
            "time" => matches!(name, "time" | "monotonic" | "time_ns" | "perf_counter"),
            _ => false,
        },
        Language::Java | Language::Kotlin => {
            matches!(
                first,
                "String"
                    | "Integer"
                    | "Long"
                    | "Objects"
                    | "Math"
                    | "TimeUnit"
                    | "Duration"
                    | "UUID"
                    | "Arrays"
                    | "List"
                    | "Map"
                    | "Set"
                    | "Collections"
                    | "StringUtils"
            ) || (first == "System" && matches!(name, "currentTimeMillis" | "nanoTime"))
                || matches!(
                    name,
                    "toString"
                        | "valueOf"
                        | "equals"
                        | "format"
                        | "toInt"
                        | "toLong"
                        | "toIntOrNull"
                        | "toLongOrNull"
                )
        }
        Language::JavaScript | Language::TypeScript => {
            matches!(
                first,
                "Promise" | "JSON" | "Math" | "Object" | "Array" | "Number" | "String" | "Date"
            ) || matches!(
                name,
                "map"
                    | "flatMap"
                    | "filter"
                    | "concat"
                    | "slice"
                    | "from"
                    | "fromEntries"
                    | "entries"
                    | "values"
                    | "keys"
                    | "toISOString"
                    | "getTime"
                    | "toString"
                    | "String"
                    | "Number"
                    | "Boolean"
                    | "startsWith"
                    | "endsWith"
                    | "indexOf"
                    | "lastIndexOf"
                    | "toLowerCase"
                    | "toUpperCase"
                    | "padStart"
                    | "padEnd"
                    | "trim"
            ) || js_date_field(name)
        }
        Language::CSharp => matches!(
            first,
            "string" | "String" | "TimeSpan" | "Math" | "Guid" | "DateTime" | "Convert"
        ),
        _ => false,
    }
}

/// A JS `Date` getter or setter (`getUTCDate`, `setHours`, …).
fn js_date_field(name: &str) -> bool {
    let Some(rest) = name
        .strip_prefix("get")
        .or_else(|| name.strip_prefix("set"))
    else {
        return false;
    };
    let rest = rest.strip_prefix("UTC").unwrap_or(rest);
    matches!(
        rest,
        "FullYear" | "Month" | "Date" | "Day" | "Hours" | "Minutes" | "Seconds" | "Milliseconds"
    )
}

/// Each scope's token range `(first, last)`, by scope id (`None`: a scope
/// without tokens); a nested function lies inside its parent's.
fn scope_ranges(an: &Analyzer) -> Vec<Option<(usize, usize)>> {
    let mut out: Vec<Option<(usize, usize)>> = vec![None; an.st.scopes.len()];
    for (i, &s) in an.st.tok_scope.iter().enumerate() {
        let s = s as usize;
        if s >= out.len() {
            out.resize(s + 1, None);
        }
        match &mut out[s] {
            Some(r) => r.1 = i,
            slot => *slot = Some((i, i)),
        }
    }
    out
}

/// A call the link may resolve: its scope and span (byte offsets: a
/// file's fit in 32 bits). Twelve bytes, not a `(u32, Span)`'s 24: a
/// dense file holds one per call at its peak.
#[derive(Clone, Copy, Debug)]
pub struct CallAt {
    pub scope: u32,
    pub start: u32,
    pub end: u32,
}

/// Where a short critical section may start and end in one function.
#[derive(Debug, Default)]
pub struct Section {
    /// Where the acquires of the function end (byte offsets, sorted, as
    /// `u32`s): a section starts at one of them.
    pub starts: Vec<u32>,
    /// The furthest a section of the function may end (a byte offset).
    pub end: usize,
}

/// The sections whose waits a rule may read. A short critical section
/// (`rules::short_critical_section`, `project::summary`) runs in one
/// function, from the end of an acquire of that function to a release
/// that closes it there (or, deferred, to the end of that function:
/// `Deferred::runs_at`), and asks only whether some wait stands between
/// the two: the first wait after each acquire's end says it. An acquire or
/// a release is one of the function's own ops, or one the link
/// instantiates at a call it may resolve (`resolvable`: the scope and span
/// of each such call; its ops take the call's scope and span).
pub fn sections(ops: &[Op], resolvable: &[CallAt], deferred: &[Deferred]) -> Vec<Section> {
    // where a release of `scope` at `at` closes its section (`rules::section_end`)
    let deferred = crate::facts::DeferredIndex::new(deferred);
    let section_end = |scope: u32, at: usize, start: usize| -> (u32, usize) {
        match deferred.at(at) {
            Some(d) => (d.scope, d.runs_at),
            None => (scope, start),
        }
    };
    // one flat list of (scope, is an end and byte offset), grouped by scope
    // after a sort: no map with a list per function (offsets as `u32`, an
    // end marked by the top bit so that the starts of a scope sort before
    // its ends; the list's room reserved once)
    const END: u32 = 1 << 31;
    const _: () = assert!(crate::engine::MAX_FILE_BYTES < END as u64);
    let own = ops
        .iter()
        .filter(|o| matches!(o.kind, OpKind::Acquire { .. } | OpKind::Release { .. }))
        .count();
    let mut marks: Vec<(u32, u32)> = Vec::with_capacity(own + 2 * resolvable.len());
    let end_mark = |at: usize| END | (at as u32 & !END);
    for o in ops {
        match o.kind {
            OpKind::Acquire { .. } => marks.push((o.scope, o.span.end() as u32 & !END)),
            OpKind::Release { .. } => {
                let (s, end) = section_end(o.scope, o.name_span.start(), o.span.start());
                marks.push((s, end_mark(end)));
            }
            _ => {}
        }
    }
    for c in resolvable {
        marks.push((c.scope, c.end & !END));
        let (s, end) = section_end(c.scope, c.start as usize, c.start as usize);
        marks.push((s, end_mark(end)));
    }
    marks.sort_unstable();
    let mut out: Vec<Section> = Vec::new();
    for group in marks.chunk_by(|a, b| a.0 == b.0) {
        // sorted: the starts first, in order, then the ends (the last is
        // the furthest)
        let end = group
            .last()
            .filter(|m| m.1 & END != 0)
            .map_or(0, |m| (m.1 & !END) as usize);
        let opened = group.iter().take_while(|m| m.1 & END == 0);
        // (at most their count: grown by doubling, a function of 12,500
        // acquires left half its room spare beside the marks)
        let mut starts: Vec<u32> = Vec::with_capacity(opened.clone().count());
        starts.extend(opened.map(|m| m.1).filter(|&s| (s as usize) < end));
        starts.dedup();
        starts.shrink_to_fit();
        if !starts.is_empty() {
            out.push(Section { starts, end });
        }
    }
    out.sort_unstable_by_key(|e| (e.starts[0], e.end));
    out
}

/// The token intervals `spans` and those of the scopes marked in
/// `needed`, sorted and merged.
fn intervals(
    spans: &[(usize, usize)],
    ranges: &[Option<(usize, usize)>],
    needed: &[bool],
) -> Vec<(usize, usize)> {
    let mut v: Vec<(usize, usize)> = needed
        .iter()
        .enumerate()
        .filter(|&(_, &n)| n)
        .filter_map(|(s, _)| ranges.get(s).copied().flatten())
        .chain(spans.iter().copied())
        .collect();
    v.sort_unstable();
    let mut out: Vec<(usize, usize)> = Vec::with_capacity(v.len());
    for (a, b) in v {
        match out.last_mut() {
            Some(last) if a <= last.1 + 1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// Token `t` lies in one of the sorted, disjoint `intervals`.
fn inside(intervals: &[(usize, usize)], t: usize) -> bool {
    let i = intervals.partition_point(|&(a, _)| a <= t);
    i > 0 && t <= intervals[i - 1].1
}

/// The waits of one file (byte offsets, sorted) a rule may read: for each
/// start of each of `sections`, the first wait at or after it before the
/// section's furthest end ([`sections`]). Where code may wait is:
/// - a call that is not quiet ([`quiet_call`]); in JS/TS only an awaited one
///   (or a `…Sync`/`sleep` call); an awaited function of this file waits
///   unless it is *quiet*: it waits for nothing itself and either sends a
///   Redis command or makes no call that is not quiet — every call in it
///   a quiet one or a call of another quiet function of this file (a pure
///   helper that formats or parses a value). Which functions are quiet is
///   settled over the functions of the file awaited in those sections (and
///   in them, in turn), every one of their waits counted;
/// - a loop whose body makes a Redis round trip (a command not queued on a
///   pipeline or transaction), or whose body cannot be found;
/// - an `await` of no call (and of no Redis client).
///
/// `client` holds the indices of the calls that are Redis commands.
pub fn find(
    an: &Analyzer,
    all: &[Call],
    client: &super::ClientCalls,
    sections: &[Section],
) -> Vec<usize> {
    let toks = an.toks;
    let lang = an.lang;
    let js = matches!(lang, Language::JavaScript | Language::TypeScript);
    if sections.is_empty() || toks.is_empty() {
        return Vec::new();
    }
    // the first token at or after a byte offset
    let tok_at = |b: usize| toks.first_at(b);
    // receivers of the calls that build a Redis command's key: a key namespace
    let mut key_builders: HashSet<String> = HashSet::default();
    // (token indexes as `u32`, and let go once read: 50,000 client calls
    // held 1 MB of them through the rest of the search)
    {
        // (only the arguments with a call in them: most are a name or a
        // literal, and a list of them all, 8 bytes a client call, stood at
        // the front-end's peak)
        let mut spans: Vec<(u32, u32)> = client
            .iter()
            .filter_map(|ci| all.get(ci))
            .filter_map(|c| {
                // the first positional argument that is not Go's context
                let a = c.args().iter().find(|a| {
                    let t = an.vals.text(a.start(), a.end()).to_ascii_lowercase();
                    !a.is_named() && !t.contains("ctx") && !t.contains("context")
                })?;
                let first = all.partition_point(|c| c.name_tok() < a.start());
                all.get(first).filter(|c| c.name_tok() < a.end())?;
                Some((a.start() as u32, a.end() as u32))
            })
            .collect();
        // sorted by start, each with the furthest end of it and those before it:
        // a token lies in some span when the last span starting at or before it
        // reaches past it (one binary search per call)
        spans.sort_unstable();
        let mut reach = 0;
        let spans: Vec<(u32, u32)> = spans
            .into_iter()
            .map(|(s, e)| {
                reach = reach.max(e);
                (s, reach)
            })
            .collect();
        if let (Some(&(first, _)), Some(&(_, last))) = (spans.first(), spans.last()) {
            let (first, last) = (first as usize, last as usize);
            let lo = all.partition_point(|c| c.name_tok() < first);
            let hi = all.partition_point(|c| c.name_tok() < last);
            for c in &all[lo..hi] {
                let i = spans.partition_point(|&(s, _)| s as usize <= c.name_tok());
                if i > 0 && c.name_tok() < spans[i - 1].1 as usize {
                    if let Some(r) = an.recv_root(c) {
                        key_builders.insert(r);
                    }
                }
            }
        }
    }
    // per call, once, when asked: whether it sends a Redis command, and
    // whether it can never wait (the same in every round)
    let mut redis_memo: Vec<u8> = vec![0; all.len()];
    let mut is_redis = |ci: usize| -> bool {
        if redis_memo[ci] == 0 {
            redis_memo[ci] = if client.contains(&ci) || an.redis_receiver(&all[ci]) {
                2
            } else {
                1
            };
        }
        redis_memo[ci] == 2
    };
    let mut quiet_memo: Vec<u8> = vec![0; all.len()];
    let mut quiet = |ci: usize, is_redis: &mut dyn FnMut(usize) -> bool| -> bool {
        if quiet_memo[ci] == 0 {
            quiet_memo[ci] = if quiet_call(an, &all[ci], &key_builders, || is_redis(ci)) {
                2
            } else {
                1
            };
        }
        quiet_memo[ci] == 2
    };
    // the calls an `await` waits for (JS/TS, Python, C#, Kotlin): those of
    // its operand outside the bodies of async functions written in it; an
    // `await` of no call waits by itself, unless it is of a Redis client
    // (then it is put in `on_client`)
    let scan_await = |a: usize, awaited: &mut Vec<u32>, on_client: &mut Vec<u32>| -> bool {
        let end = values::expr_end(toks, an.st, lang, a + 1).min(toks.len());
        let mut any = false;
        let mut k = a + 1;
        while k < end {
            if toks.at(k).is("async") {
                // skip an async function's body: its own awaits speak for it
                let mut j = k + 1;
                while j < end && !toks.at(j).is("{") && !toks.at(j).is("=>") {
                    j += 1;
                }
                if j < end && toks.at(j).is("=>") && toks.get(j + 1).is_some_and(|t| t.is("{")) {
                    j += 1;
                }
                if j < end && toks.at(j).is("{") {
                    if let Some(m) = an.st.matching.get(&j) {
                        if m > j {
                            k = m + 1;
                            continue;
                        }
                    }
                }
            }
            if let Some(ci) = call_index(all, k) {
                if !NOT_CALLS.contains(&toks.at(k).text()) {
                    awaited.push(ci as u32);
                    any = true;
                }
            }
            k += 1;
        }
        // `await redis.hgetall<T>(k)`: a generic the call reader does not
        // take for a call, on a Redis client
        let on_redis = toks.get(a + 1).is_some_and(|t| {
            t.is_ident()
                && (t.text().to_ascii_lowercase().contains("redis")
                    || an.redis_vars.contains(&values::norm_name(t.text()))
                    || an.redis_recvs.contains(&values::norm_name(t.text())))
        });
        if !any && on_redis {
            on_client.push(a as u32);
        }
        !any && !on_redis
    };
    // loops whose body holds a Redis round trip: the client calls'
    // tokens, listed at the first loop asked about (at most one a client
    // call: room for them all, where growing by doubling left up to half
    // spare at the file's peak; a file without a loop lists none)
    let trips: std::cell::OnceCell<Vec<u32>> = std::cell::OnceCell::new();
    let round_trips = || {
        let mut trips: Vec<u32> = Vec::with_capacity(client.count());
        trips.extend(
            client
                .iter()
                .filter_map(|ci| all.get(ci))
                .filter(|c| {
                    let root = c.recv().join(".").to_ascii_lowercase();
                    !["pipe", "multi", "tx", "batch", "transaction"]
                        .iter()
                        .any(|w| root.contains(w))
                })
                .map(|c| c.name_tok() as u32),
        );
        trips.sort_unstable();
        trips
    };
    let loop_waits = |k: usize| -> bool {
        let t = toks.at(k);
        if !t.is_ident() || !matches!(t.text(), "for" | "while" | "foreach" | "until" | "loop") {
            return false;
        }
        if t.text() == "loop" && lang != Language::Ruby {
            return false;
        }
        match loop_body(an, k) {
            None => true,
            Some((bs, be)) => be > bs + 1 && any_in(trips.get_or_init(round_trips), bs + 1, be - 1),
        }
    };
    // JS/TS: every `await` (what each waits for; those of no call), and the
    // functions of this file by name (call and token indexes as `u32`s, as
    // in the lists below: a line of 25,000 awaited calls held 0.6 MB of
    // them as `usize`s)
    let mut awaited: Vec<u32> = Vec::new();
    let mut bare_awaits: Vec<u32> = Vec::new();
    // awaits of a Redis command the call reader did not take for a call
    let mut client_awaits: Vec<u32> = Vec::new();
    let mut by_name: HashMap<&str, Vec<u32>> = HashMap::default();
    if js {
        // most awaits wait for one call: room for that many up front
        awaited.reserve_exact(toks.iter().filter(|t| t.is("await")).count());
        for (a, t) in toks.iter().enumerate() {
            if t.is("await") && scan_await(a, &mut awaited, &mut client_awaits) {
                bare_awaits.push(a as u32);
            }
        }
        awaited.sort_unstable();
        awaited.dedup();
        for (tok, scope) in an.st.decls.scopes() {
            if let Some(t) = toks.get(tok) {
                by_name.entry(t.text()).or_default().push(scope);
            }
        }
    }
    let own_fn = |c: &Call| -> Option<&Vec<u32>> {
        let first = c.recv().first().map(|s| &**s).unwrap_or("");
        if !(c.recv().is_empty() || (c.recv().len() == 1 && matches!(first, "this" | "self"))) {
            return None;
        }
        by_name.get(c.name(an.toks))
    };
    // JS/TS: settle which awaited functions of this file wait (optimistic
    // start): those awaited in the sections, those awaited in them, …
    let mut ok: HashSet<u32> = HashSet::default();
    if js && !awaited.is_empty() {
        let ranges = &scope_ranges(an);
        let section_toks: Vec<(usize, usize)> = sections
            .iter()
            .filter_map(|sec| {
                let lo = tok_at(sec.starts[0] as usize);
                let hi = toks.first_at(sec.end);
                (lo < hi).then(|| (lo, hi - 1))
            })
            .collect();
        // the functions of this file awaited in the sections, and every
        // function of this file those call in turn (awaited or not: a
        // helper is quiet only while all it calls is), each once
        let mut needed = vec![false; ranges.len()];
        let spans = intervals(&section_toks, ranges, &needed);
        let mut work: Vec<u32> = Vec::new();
        let mark = |ss: &[u32], needed: &mut Vec<bool>, work: &mut Vec<u32>| {
            for &s in ss {
                if let Some(n) = needed.get_mut(s as usize) {
                    if !*n && s != 0 && ranges[s as usize].is_some() {
                        *n = true;
                        work.push(s);
                    }
                }
            }
        };
        for ci in awaited.iter().map(|&ci| ci as usize) {
            if inside(&spans, all[ci].name_tok()) && !quiet(ci, &mut is_redis) {
                if let Some(ss) = own_fn(&all[ci]) {
                    mark(ss, &mut needed, &mut work);
                }
            }
        }
        while let Some(s) = work.pop() {
            let Some((a, b)) = ranges[s as usize] else {
                continue;
            };
            let lo = all.partition_point(|c| c.name_tok() < a);
            let hi = all.partition_point(|c| c.name_tok() <= b);
            for (ci, c) in all.iter().enumerate().take(hi).skip(lo) {
                if let Some(ss) = own_fn(c) {
                    if !quiet(ci, &mut is_redis) {
                        mark(ss, &mut needed, &mut work);
                    }
                }
            }
        }
        // those functions, whole: their calls, loops and bare awaits
        let scopes: Vec<(u32, usize, usize)> = needed
            .iter()
            .enumerate()
            .filter(|&(_, &n)| n)
            .filter_map(|(s, _)| ranges[s].map(|(a, b)| (s as u32, a, b)))
            .collect();
        let whole = intervals(&[], ranges, &needed);
        let mut calls: Vec<usize> = Vec::new();
        let mut fixed: Vec<usize> = Vec::new();
        for &(a, b) in &whole {
            let lo = all.partition_point(|c| c.name_tok() < a);
            let hi = all.partition_point(|c| c.name_tok() <= b);
            calls.extend((lo..hi).filter(|&ci| !quiet(ci, &mut is_redis)));
            fixed.extend((a..=b).filter(|&k| loop_waits(k)));
        }
        fixed.extend(
            bare_awaits
                .iter()
                .map(|&a| a as usize)
                .filter(|&a| inside(&whole, a)),
        );
        let mut redis_toks: Vec<u32> = whole
            .iter()
            .flat_map(|&(a, b)| {
                let lo = all.partition_point(|c| c.name_tok() < a);
                let hi = all.partition_point(|c| c.name_tok() <= b);
                lo..hi
            })
            .filter(|&ci| is_redis(ci))
            .map(|ci| all[ci].name_tok() as u32)
            .chain(client_awaits.iter().copied())
            .collect();
        redis_toks.sort_unstable();
        let with_redis: HashSet<u32> = scopes
            .iter()
            .filter(|&&(_, a, b)| any_in(&redis_toks, a, b))
            .map(|&(s, _, _)| s)
            .collect();
        // the calls in those functions that are not quiet: of another
        // object or module (foreign: the function is no pure helper), or
        // of a function of this file (pure only while that one is quiet)
        let mut foreign: Vec<u32> = Vec::new();
        let mut own_calls: Vec<(usize, &Vec<u32>)> = Vec::new();
        for &ci in &calls {
            match own_fn(&all[ci]) {
                Some(ss) => own_calls.push((all[ci].name_tok(), ss)),
                None => foreign.push(all[ci].name_tok() as u32),
            }
        }
        foreign.sort_unstable();
        own_calls.sort_unstable_by_key(|&(t, _)| t);
        let in_scopes: HashSet<u32> = scopes.iter().map(|&(s, _, _)| s).collect();
        // quiet unless shown otherwise (optimistic start)
        ok = scopes
            .iter()
            .filter(|&&(s, a, b)| with_redis.contains(&s) || !any_in(&foreign, a, b))
            .map(|&(s, _, _)| s)
            .collect();
        let mut sites: Vec<u32> = Vec::new();
        for round in 0..=MAX_ROUNDS {
            sites.clear();
            sites.extend(fixed.iter().map(|&k| k as u32));
            for &ci in &calls {
                if js_call_waits(&all[ci], an.toks, &awaited, ci, &own_fn, &ok) {
                    sites.push(all[ci].name_tok() as u32);
                }
            }
            sites.sort_unstable();
            let now: HashSet<u32> = scopes
                .iter()
                .filter(|&&(s, a, b)| {
                    if any_in(&sites, a, b) {
                        return false;
                    }
                    if with_redis.contains(&s) {
                        return true;
                    }
                    let lo = own_calls.partition_point(|&(t, _)| t < a);
                    !any_in(&foreign, a, b)
                        && own_calls[lo..]
                            .iter()
                            .take_while(|&&(t, _)| t <= b)
                            .all(|(_, ss)| {
                                ss.iter().all(|c| in_scopes.contains(c) && ok.contains(c))
                            })
                })
                .map(|&(s, _, _)| s)
                .collect();
            // settled, or not after the last round: the sites of that
            // round stand, with the quiet functions it started from
            if now == ok || round == MAX_ROUNDS {
                break;
            }
            ok = now;
        }
    }
    // the first wait at or after each start of each section
    let mut out: Vec<usize> = Vec::new();
    for sec in sections {
        let bound = toks.first_at(sec.end);
        let mut found: Option<usize> = None;
        for (i, s) in sec.starts.iter().map(|&s| s as usize).enumerate() {
            if found.is_some_and(|f| toks.at(f).start() >= s) {
                continue;
            }
            // none after an earlier start: none after this one
            if i > 0 && found.is_none() {
                break;
            }
            found = None;
            let from = tok_at(s);
            let mut ci = all.partition_point(|c| c.name_tok() < from);
            for (k, tok) in toks.iter().enumerate().take(bound).skip(from) {
                let call = (all.get(ci).is_some_and(|c| c.name_tok() == k)).then(|| {
                    ci += 1;
                    ci - 1
                });
                let site = loop_waits(k)
                    || if js {
                        bare_awaits.binary_search(&(k as u32)).is_ok()
                    } else {
                        tok.is("await") && scan_await(k, &mut Vec::new(), &mut Vec::new())
                    }
                    || call.is_some_and(|ci| {
                        !quiet(ci, &mut is_redis)
                            && (!js || js_call_waits(&all[ci], an.toks, &awaited, ci, &own_fn, &ok))
                    });
                if site {
                    found = Some(k);
                    out.push(tok.start());
                    break;
                }
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// JS/TS: a call that is not quiet waits when it is awaited, unless it is
/// a function of this file that is quiet (`ok`: it waits for nothing but
/// Redis, or for nothing at all), or when it is a `…Sync` or `sleep` call
/// (a synchronous call cannot wait for I/O otherwise).
fn js_call_waits<'f>(
    c: &Call,
    toks: Toks,
    awaited: &[u32],
    ci: usize,
    own_fn: &impl Fn(&Call) -> Option<&'f Vec<u32>>,
    ok: &HashSet<u32>,
) -> bool {
    if awaited.binary_search(&(ci as u32)).is_ok() {
        !own_fn(c).is_some_and(|ss| ss.iter().all(|s| ok.contains(s)))
    } else {
        c.name(toks).ends_with("Sync") || c.name(toks).eq_ignore_ascii_case("sleep")
    }
}

/// The call whose name is token `k`, by index into `all` (sorted by name token).
pub(super) fn call_index(all: &[Call], k: usize) -> Option<usize> {
    let i = all.partition_point(|c| c.name_tok() < k);
    all.get(i).filter(|c| c.name_tok() == k).map(|_| i)
}

/// A call that can never wait: a declaration or keyword, a Redis command
/// (`is_redis`, asked last: the dearest), a log line, a standard pure
/// computation, a method of an object the file builds Redis keys with, a
/// JS/TS constructor.
fn quiet_call(
    an: &Analyzer,
    c: &Call,
    key_builders: &HashSet<String>,
    is_redis: impl FnOnce() -> bool,
) -> bool {
    let lang = an.lang;
    // PHP `fn($x) => …` is an arrow function; elsewhere `fn` is a name
    // (a Go or JS callback parameter: `fn()` runs unknown code)
    if NOT_CALLS.contains(&c.name(an.toks))
        || (lang == Language::Php && c.name(an.toks) == "fn")
        || an.st.decls.is_name(c.name_tok())
    {
        return true;
    }
    let first = c.recv().first().map(|s| &**s).unwrap_or("");
    // `log.Info(…)`, `blog.V(4).Infof(…)`, a bare `console`-less `print`
    if (!first.is_empty() && is_logger(first)) || (first.is_empty() && is_logger(c.name(an.toks))) {
        return true;
    }
    if pure_call(lang, first, c.name(an.toks)) {
        return true;
    }
    let js = matches!(lang, Language::JavaScript | Language::TypeScript);
    if c.name_tok() > 0 && an.toks.at(c.name_tok() - 1).is("new") && js {
        return true;
    }
    // the receiver's root (`this.logger`, a key builder) only when it may
    // be one of those: building it costs a few allocations
    if !c.recv().is_empty() && (!key_builders.is_empty() || may_be_logger(c.recv())) {
        let root = an.recv_root(c);
        if root
            .as_deref()
            .is_some_and(|r| is_logger(r) || key_builders.contains(r))
        {
            return true;
        }
    }
    is_redis()
}

/// Some token of `sorted` lies in `a..=b`.
fn any_in(sorted: &[u32], a: usize, b: usize) -> bool {
    let i = sorted.partition_point(|&t| (t as usize) < a);
    sorted.get(i).is_some_and(|&t| t as usize <= b)
}

/// The tokens of a loop's body: `(first, last)` exclusive of its brackets;
/// `None` when the body cannot be found.
fn loop_body(an: &Analyzer, k: usize) -> Option<(usize, usize)> {
    let toks = an.toks;
    if an.lang == Language::Python {
        // the header's `:` at its own nesting level, then the indented lines
        let mut j = k + 1;
        while j < toks.len() && j < k + MAX_HEADER {
            if toks.at(j).is(":") && an.st.tok_paren.at(j) == an.st.tok_paren.at(k) {
                break;
            }
            j += 1;
        }
        if j >= toks.len() || !toks.at(j).is(":") {
            return None;
        }
        let base = indent(an.src, toks.at(k).start());
        let mut e = j + 1;
        while e < toks.len() {
            if toks.at(e).nl() && e > j + 1 && indent(an.src, toks.at(e).start()) <= base {
                break;
            }
            e += 1;
        }
        return Some((j, e));
    }
    if an.lang == Language::Ruby {
        return None;
    }
    // `do { … } while (…)`: the block after `do`, read from the `while`
    if k >= 1 && toks.at(k - 1).is("}") && toks.at(k).text() == "while" {
        let o = an.st.matching.get(&(k - 1))?;
        return Some((o, k - 1));
    }
    let mut j = k + 1;
    while j < toks.len() && j < k + MAX_HEADER {
        let t = toks.at(j);
        if t.is("{") && an.st.tok_paren.at(j) == an.st.tok_paren.at(k) {
            let m = an.st.matching.get(&j)?;
            return (m > j).then_some((j, m));
        }
        if t.is(";") && an.st.tok_paren.at(j) == an.st.tok_paren.at(k) {
            // a braceless body: the statement up to its `;`
            return None;
        }
        if t.is("(") || t.is("[") {
            if let Some(m) = an.st.matching.get(&j) {
                if m > j {
                    j = m + 1;
                    continue;
                }
            }
        }
        j += 1;
    }
    None
}

fn indent(src: &str, pos: usize) -> usize {
    let b = src.as_bytes();
    let mut ls = pos.min(b.len());
    while ls > 0 && b[ls - 1] != b'\n' {
        ls -= 1;
    }
    let mut n = 0;
    while ls + n < b.len() && (b[ls + n] == b' ' || b[ls + n] == b'\t') {
        n += 1;
    }
    n
}

/// Go `defer` statements: what they defer runs when their function returns,
/// at the end of its body.
pub fn deferred(an: &Analyzer) -> Vec<Deferred> {
    let toks = an.toks;
    let mut out = Vec::new();
    if an.lang != Language::Go {
        return out;
    }
    // each scope's range, worked out at the first `defer`
    let mut ranges: Option<Vec<Option<(usize, usize)>>> = None;
    for k in 0..toks.len() {
        if !toks.at(k).is("defer") {
            continue;
        }
        let ranges = ranges.get_or_insert_with(|| scope_ranges(an));
        let scope = an.st.tok_scope.get(k).copied().unwrap_or(0);
        let Some((_, last)) = ranges.get(scope as usize).copied().flatten() else {
            continue;
        };
        if scope == 0 {
            continue;
        }
        // the deferred call: up to the end of its line at its own nesting
        let mut e = k + 1;
        while e < toks.len() {
            let t = toks.at(e);
            if e > k + 1 && t.nl() && an.st.tok_paren.at(e) == an.st.tok_paren.at(k) {
                break;
            }
            if t.is("{") || t.is("(") || t.is("[") {
                if let Some(m) = an.st.matching.get(&e) {
                    if m > e {
                        e = m + 1;
                        continue;
                    }
                }
            }
            if t.is(";") || (t.is("}") && an.st.tok_paren.at(e) == an.st.tok_paren.at(k)) {
                break;
            }
            e += 1;
        }
        let end_tok = e.min(toks.len()).max(k + 1) - 1;
        out.push(Deferred {
            span: Span::new(toks.at(k).start(), toks.at(end_tok).end()),
            scope,
            runs_at: toks.at(last).end(),
        });
    }
    out
}
