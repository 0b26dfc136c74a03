//! Where a function may wait on something other than Redis: a call into
//! code the file does not show to be a Redis command, a log line or a pure
//! computation; a loop whose every turn makes a Redis round trip; an `await`
//! of anything but a Redis command (JS/TS: a synchronous call cannot wait
//! for I/O there). And which ops run only when their function returns (Go
//! `defer`). Facts only: what they mean for a lock is the rules' business.

use super::calls::Call;
use super::{values, Analyzer};
use crate::facts::{Deferred, Language, Span};
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

/// Receivers whose calls write a log line (or format text).
fn is_logger(root: &str) -> bool {
    let r = root.trim_start_matches("this.").to_ascii_lowercase();
    let last = r.rsplit('.').next().unwrap_or(&r).trim_start_matches('_');
    matches!(
        last,
        "log"
            | "logger"
            | "logging"
            | "blog"
            | "glog"
            | "klog"
            | "slog"
            | "zap"
            | "zlog"
            | "logrus"
            | "console"
            | "fmt"
            | "logs"
            | "log4j"
            | "sentry"
    ) || last.ends_with("logger")
        || last.ends_with("_log")
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
            )
        }
        Language::CSharp => matches!(
            first,
            "string" | "String" | "TimeSpan" | "Math" | "Guid" | "DateTime" | "Convert"
        ),
        _ => false,
    }
}

/// The waits (byte offsets, sorted) and deferred ops of one file. `client`
/// holds the indices of the calls that are Redis commands.
pub fn find(
    an: &Analyzer,
    all: &[Call],
    client: &std::collections::HashSet<usize>,
) -> (Vec<usize>, Vec<Deferred>) {
    let toks = an.toks;
    let lang = an.lang;
    let js = matches!(lang, Language::JavaScript | Language::TypeScript);
    // each scope's token range: a nested function lies inside its parent's
    let mut range: HashMap<u32, (usize, usize)> = HashMap::default();
    for (i, &s) in an.st.tok_scope.iter().enumerate() {
        let e = range.entry(s).or_insert((i, i));
        e.1 = i;
    }
    // a function of this file by name (all of them when a name repeats)
    let mut by_name: HashMap<&str, Vec<u32>> = HashMap::default();
    for (&tok, &scope) in &an.st.decl_scope {
        if let Some(t) = toks.get(tok) {
            by_name.entry(t.text()).or_default().push(scope);
        }
    }
    // receivers of the calls that build a Redis command's key: a key namespace
    let mut key_builders: HashSet<String> = HashSet::default();
    let mut spans: Vec<(usize, usize)> = client
        .iter()
        .filter_map(|&ci| all.get(ci))
        .filter_map(|c| {
            // the first positional argument that is not Go's context
            let a = c.args.iter().find(|a| {
                let t = an.vals.text(a.start, a.end).to_ascii_lowercase();
                a.name.is_none() && !t.contains("ctx") && !t.contains("context")
            })?;
            Some((a.start, a.end))
        })
        .collect();
    // sorted by start, each with the furthest end of it and those before it:
    // a token lies in some span when the last span starting at or before it
    // reaches past it (one binary search per call)
    spans.sort_unstable();
    let mut reach = 0;
    let spans: Vec<(usize, usize)> = spans
        .into_iter()
        .map(|(s, e)| {
            reach = reach.max(e);
            (s, reach)
        })
        .collect();
    for c in all {
        let i = spans.partition_point(|&(s, _)| s <= c.name_tok);
        if i > 0 && c.name_tok < spans[i - 1].1 {
            if let Some(r) = an.recv_root(c) {
                key_builders.insert(r);
            }
        }
    }
    // the calls an `await` waits for (JS/TS, Python, C#, Kotlin): those of
    // its operand outside the bodies of async functions written in it
    let mut awaited: HashSet<usize> = HashSet::default();
    let mut bare_awaits: Vec<usize> = Vec::new();
    let call_at: HashMap<usize, usize> = all
        .iter()
        .enumerate()
        .map(|(ci, c)| (c.name_tok, ci))
        .collect();
    for a in 0..toks.len() {
        if !toks[a].is("await") {
            continue;
        }
        let end = values::expr_end(toks, an.st, lang, a + 1).min(toks.len());
        let mut any = false;
        let mut k = a + 1;
        while k < end {
            if toks[k].is("async") {
                // skip an async function's body: its own awaits speak for it
                let mut j = k + 1;
                while j < end && !toks[j].is("{") && !toks[j].is("=>") {
                    j += 1;
                }
                if j < end && toks[j].is("=>") && toks.get(j + 1).is_some_and(|t| t.is("{")) {
                    j += 1;
                }
                if j < end && toks[j].is("{") {
                    if let Some(m) = an.st.matching.get(&j) {
                        if m > j {
                            k = m + 1;
                            continue;
                        }
                    }
                }
            }
            if let Some(&ci) = call_at.get(&k) {
                if !NOT_CALLS.contains(&toks[k].text()) {
                    awaited.insert(ci);
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
        if !any && !on_redis {
            bare_awaits.push(a);
        }
    }
    // per call, once: whether it sends a Redis command
    let redis_call: Vec<bool> = all
        .iter()
        .enumerate()
        .map(|(ci, c)| client.contains(&ci) || an.redis_receiver(c))
        .collect();
    let is_redis = |ci: usize, _: &Call| redis_call[ci];
    let quiet_base = |ci: usize, c: &Call| -> Option<bool> {
        // PHP `fn($x) => …` is an arrow function; elsewhere `fn` is a name
        // (a Go or JS callback parameter: `fn()` runs unknown code)
        if NOT_CALLS.contains(&c.name)
            || (lang == Language::Php && c.name == "fn")
            || an.st.decl_names.contains(&c.name_tok)
        {
            return Some(true);
        }
        if is_redis(ci, c) {
            return Some(true);
        }
        let first = c.recv.first().map(|s| &**s).unwrap_or("");
        let root = an.recv_root(c);
        // `log.Info(…)`, `blog.V(4).Infof(…)`, a bare `console`-less `print`
        if root.as_deref().is_some_and(is_logger)
            || (!first.is_empty() && is_logger(first))
            || (first.is_empty() && is_logger(c.name))
        {
            return Some(true);
        }
        if pure_call(lang, first, c.name) {
            return Some(true);
        }
        if root.as_ref().is_some_and(|r| key_builders.contains(r)) {
            return Some(true);
        }
        if c.name_tok > 0 && toks[c.name_tok - 1].is("new") && js {
            return Some(true);
        }
        None
    };
    // the functions of this file that send a Redis command themselves: only
    // those are followed through an `await` (a helper that awaits nothing
    // we can see but sends no command is some other work, e.g. a stub)
    let mut redis_toks: Vec<usize> = all
        .iter()
        .enumerate()
        .filter(|&(ci, _)| redis_call[ci])
        .map(|(_, c)| c.name_tok)
        .collect();
    redis_toks.sort_unstable();
    let with_redis: HashSet<u32> = range
        .iter()
        .filter(|&(&s, &(a, b))| s != 0 && any_in(&redis_toks, a, b))
        .map(|(&s, _)| s)
        .collect();
    let own_fn = |c: &Call| -> Option<&Vec<u32>> {
        let first = c.recv.first().map(|s| &**s).unwrap_or("");
        if !(c.recv.is_empty() || (c.recv.len() == 1 && matches!(first, "this" | "self"))) {
            return None;
        }
        by_name.get(c.name)
    };
    // loops whose body holds a Redis round trip (a command not queued on a
    // pipeline or transaction)
    let mut trips: Vec<usize> = client
        .iter()
        .filter_map(|&ci| all.get(ci))
        .filter(|c| {
            let root = c.recv.join(".").to_ascii_lowercase();
            !["pipe", "multi", "tx", "batch", "transaction"]
                .iter()
                .any(|w| root.contains(w))
        })
        .map(|c| c.name_tok)
        .collect();
    trips.sort_unstable();
    let mut loop_waits: Vec<usize> = Vec::new();
    for (k, t) in toks.iter().enumerate() {
        if !t.is_ident() || !matches!(t.text(), "for" | "while" | "foreach" | "until" | "loop") {
            continue;
        }
        if t.text() == "loop" && lang != Language::Ruby {
            continue;
        }
        let Some((bs, be)) = loop_body(an, k) else {
            loop_waits.push(k);
            continue;
        };
        if be > bs + 1 && any_in(&trips, bs + 1, be - 1) {
            loop_waits.push(k);
        }
    }
    // per call, once: a call that can never wait (the same in every round)
    let quiet: Vec<bool> = all
        .iter()
        .enumerate()
        .map(|(ci, c)| quiet_base(ci, c) == Some(true))
        .collect();
    // settle which functions of the file wait (optimistic start)
    let mut waiting: HashSet<u32> = HashSet::default();
    let mut sites: Vec<usize> = Vec::new();
    for round in 0..=MAX_ROUNDS {
        sites.clear();
        sites.extend(loop_waits.iter().copied());
        sites.extend(bare_awaits.iter().copied());
        for (ci, c) in all.iter().enumerate() {
            if quiet[ci] {
                continue;
            }
            let name = c.name;
            // JS/TS: a synchronous call cannot wait for I/O; an awaited
            // one waits unless it is a function of this file that waits
            // for nothing but Redis. Elsewhere any other call may block.
            let wait = if !js {
                true
            } else if awaited.contains(&ci) {
                !own_fn(c).is_some_and(|ss| {
                    ss.iter()
                        .all(|s| with_redis.contains(s) && !waiting.contains(s))
                })
            } else {
                name.ends_with("Sync") || name.eq_ignore_ascii_case("sleep")
            };
            if wait {
                sites.push(c.name_tok);
            }
        }
        sites.sort_unstable();
        let mut now: HashSet<u32> = HashSet::default();
        for (&s, &(a, b)) in &range {
            if s != 0 && any_in(&sites, a, b) {
                now.insert(s);
            }
        }
        if now == waiting {
            break;
        }
        if round == MAX_ROUNDS {
            // not settled: every function of the file waits
            waiting = range.keys().copied().collect();
        } else {
            waiting = now;
        }
    }
    let mut out: Vec<usize> = sites.iter().map(|&t| toks[t].start()).collect();
    out.sort_unstable();
    out.dedup();
    (out, deferred(an, &range))
}

/// Some token of `sorted` lies in `a..=b`.
fn any_in(sorted: &[usize], a: usize, b: usize) -> bool {
    let i = sorted.partition_point(|&t| t < a);
    sorted.get(i).is_some_and(|&t| t <= b)
}

/// The tokens of a loop's body: `(first, last)` exclusive of its brackets;
/// `None` when the body cannot be found.
fn loop_body(an: &Analyzer, k: usize) -> Option<(usize, usize)> {
    let toks = an.toks;
    if an.lang == Language::Python {
        // the header's `:` at its own nesting level, then the indented lines
        let mut j = k + 1;
        while j < toks.len() && j < k + MAX_HEADER {
            if toks[j].is(":") && an.st.tok_paren[j] == an.st.tok_paren[k] {
                break;
            }
            j += 1;
        }
        if j >= toks.len() || !toks[j].is(":") {
            return None;
        }
        let base = indent(an.src, toks[k].start());
        let mut e = j + 1;
        while e < toks.len() {
            if toks[e].nl() && e > j + 1 && indent(an.src, toks[e].start()) <= base {
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
    if k >= 1 && toks[k - 1].is("}") && toks[k].text() == "while" {
        let o = an.st.matching.get(&(k - 1))?;
        return Some((o, k - 1));
    }
    let mut j = k + 1;
    while j < toks.len() && j < k + MAX_HEADER {
        let t = &toks[j];
        if t.is("{") && an.st.tok_paren[j] == an.st.tok_paren[k] {
            let m = an.st.matching.get(&j)?;
            return (m > j).then_some((j, m));
        }
        if t.is(";") && an.st.tok_paren[j] == an.st.tok_paren[k] {
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
fn deferred(an: &Analyzer, range: &HashMap<u32, (usize, usize)>) -> Vec<Deferred> {
    let toks = an.toks;
    let mut out = Vec::new();
    if an.lang != Language::Go {
        return out;
    }
    for k in 0..toks.len() {
        if !toks[k].is("defer") {
            continue;
        }
        let scope = an.st.tok_scope.get(k).copied().unwrap_or(0);
        let Some(&(_, last)) = range.get(&scope) else {
            continue;
        };
        if scope == 0 {
            continue;
        }
        // the deferred call: up to the end of its line at its own nesting
        let mut e = k + 1;
        while e < toks.len() {
            let t = &toks[e];
            if e > k + 1 && t.nl() && an.st.tok_paren[e] == an.st.tok_paren[k] {
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
            if t.is(";") || (t.is("}") && an.st.tok_paren[e] == an.st.tok_paren[k]) {
                break;
            }
            e += 1;
        }
        let end_tok = e.min(toks.len()).max(k + 1) - 1;
        out.push(Deferred {
            span: Span::new(toks[k].start(), toks[end_tok].end()),
            scope,
            runs_at: toks[last].end(),
        });
    }
    out
}
