//! What the TTL of a set-if-absent write is (its constant value in
//! milliseconds, the names it is written with), and the hard runtime limit a
//! file declares for its runs (`export const maxDuration = 600`).
//! Facts only: what they mean for a lock is the rules' business.

use super::calls::Call;
use super::lexer::{Kind, Toks};
use super::Analyzer;
use crate::facts::{Language, OpTtl};

/// How deep a constant may refer to another constant.
const MAX_DEPTH: u32 = 4;

/// The `EX`/`PX` option of the call `c` whose method name starts at byte
/// `name_start`: a flag followed by its value (`'EX', 60`, `{ex: 60}`,
/// `ex: 60`, `ex=60`, `.px(ms)`). `None` when the call has no such option.
pub fn of_call(an: &Analyzer, c: &Call, name_start: usize) -> Option<OpTtl> {
    let toks = an.toks;
    let end = c.end().min(toks.len());
    let mut k = c.open();
    while k + 1 < end {
        let t = toks.at(k);
        let unit: u64 = match t.text().to_ascii_lowercase().as_str() {
            "ex" if t.kind() == Kind::Str || t.is_ident() => 1000,
            "px" if t.kind() == Kind::Str || t.is_ident() => 1,
            _ => {
                k += 1;
                continue;
            }
        };
        let next = toks.at(k + 1);
        let (vs, ve) = if next.is("(") {
            let close = an.st.matching.get(&(k + 1)).unwrap_or(k + 1);
            (k + 2, close.min(end))
        } else if next.is(",") || next.is(":") || next.is("=") || next.is("=>") {
            (k + 2, value_end(an, k + 2, end))
        } else {
            k += 1;
            continue;
        };
        if ve <= vs {
            return None;
        }
        let scope = an.st.tok_scope.get(k).copied().unwrap_or(0);
        let ms = const_int(an, vs, ve, scope, 0).and_then(|n| n.checked_mul(unit));
        return Some(OpTtl {
            name_start,
            ms,
            names: names(an, vs, ve, scope),
            sym: ms
                .is_none()
                .then(|| sym_name(an, vs, ve, scope))
                .flatten()
                .map(|n| (n, unit)),
        });
    }
    None
}

/// The TTL of a Python cache framework's `cache.add(k, v, timeout)` (Django,
/// Flask-Caching: seconds): its `timeout=` argument or its third positional
/// one. `None` for another call or one without a TTL.
pub fn of_cache_add(an: &Analyzer, c: &Call, name_start: usize) -> Option<OpTtl> {
    if an.lang != Language::Python || c.name(an.toks) != "add" {
        return None;
    }
    let arg = c
        .args()
        .iter()
        .find(|a| a.name(an.toks) == Some("timeout"))
        .or_else(|| c.args().iter().filter(|a| !a.is_named()).nth(2))?;
    let (vs, ve) = (arg.start(), arg.end().min(an.toks.len()));
    if ve <= vs {
        return None;
    }
    let scope = an.st.tok_scope.get(vs).copied().unwrap_or(0);
    let ms = const_int(an, vs, ve, scope, 0).and_then(|n| n.checked_mul(1000));
    Some(OpTtl {
        name_start,
        ms,
        names: names(an, vs, ve, scope),
        sym: ms
            .is_none()
            .then(|| sym_name(an, vs, ve, scope))
            .flatten()
            .map(|n| (n, 1000)),
    })
}

/// The tasks' limits known in the file, and those named by a constant.
type TaskLimits = (Vec<(u32, u64)>, Vec<(u32, String)>);

/// The hard time limits, in seconds, of a Python file's Celery tasks: a
/// function decorated `@app.task(time_limit=N)` or `@shared_task(time_limit=N)`
/// with a constant `N`, as (the scope of its body, N). The worker kills the
/// task when it is reached. (`soft_time_limit` only raises an exception in
/// the task, which the task may catch and go on: not a hard limit.) Beside
/// them, the tasks whose limit is one name of another module
/// (`time_limit=settings.TASK_TIME_LIMIT`): (scope, that name's last part).
pub fn task_limits(an: &Analyzer) -> TaskLimits {
    let mut out = Vec::new();
    let mut named = Vec::new();
    if an.lang != Language::Python {
        return (out, named);
    }
    let toks: Toks = an.toks;
    for i in 0..toks.len().saturating_sub(2) {
        if !toks.at(i).is("@") {
            continue;
        }
        // `@ a . b . task (`: the decorator's dotted name, then its arguments
        let mut j = i + 1;
        while j + 1 < toks.len() && toks.at(j).is_ident() && toks.at(j + 1).is(".") {
            j += 2;
        }
        if !(j + 1 < toks.len()
            && toks.at(j).is_ident()
            && matches!(toks.at(j).text(), "task" | "shared_task")
            && toks.at(j + 1).is("("))
        {
            continue;
        }
        let Some(close) = an.st.matching.get(&(j + 1)) else {
            continue;
        };
        let mut limit = None;
        let mut k = j + 2;
        while k + 2 < close {
            if toks.at(k).text() == "time_limit"
                && toks.at(k + 1).is("=")
                && (toks.at(k - 1).is("(") || toks.at(k - 1).is(","))
            {
                let end = value_end(an, k + 2, close);
                limit = const_int(an, k + 2, end, 0, 0)
                    .map(Ok)
                    .or_else(|| sym_name(an, k + 2, end, 0).map(Err));
                break;
            }
            k += 1;
        }
        let Some(limit) = limit else {
            continue;
        };
        // further decorators, then `def name` (or `async def name`)
        let mut d = close + 1;
        while d < toks.len() && toks.at(d).is("@") {
            let mut e = d + 1;
            // the decorator's name ends at its line's end (`def` is a word too)
            while e < toks.len()
                && !toks.at(e).nl()
                && (toks.at(e).is_ident() || toks.at(e).is("."))
            {
                e += 1;
            }
            d = match toks.get(e) {
                Some(t) if t.is("(") => an.st.matching.get(&e).map_or(toks.len(), |m| m + 1),
                _ => e,
            };
        }
        if d < toks.len() && toks.at(d).is("async") {
            d += 1;
        }
        if d + 1 < toks.len() && toks.at(d).is("def") {
            if let Some(scope) = an.st.decls.scope_of(d + 1) {
                match limit {
                    Ok(l) => out.push((scope, l)),
                    Err(n) => named.push((scope, n)),
                }
            }
        }
    }
    (out, named)
}

/// The one name `s..e` is when it is no constant of the file
/// (`settings.LOCK_TTL`, an imported `LOCK_TTL`, a local bound to one of
/// those): its last part, for the project's constants to resolve.
fn sym_name(an: &Analyzer, s: usize, e: usize, scope: u32) -> Option<String> {
    let toks = an.toks;
    let dotted = |a: usize, b: usize| {
        b > a
            && b <= toks.len()
            && (b - a) % 2 == 1
            && toks.slice(a..b).iter().enumerate().all(|(k, t)| {
                if k % 2 == 0 {
                    t.is_ident()
                } else {
                    t.is(".")
                }
            })
    };
    if !dotted(s, e) {
        return None;
    }
    if e == s + 1 {
        if let Some(b) = an.vals.lookup(scope, toks.at(s).text()) {
            let (bs, be) = (b.start, b.end.min(toks.len()));
            return dotted(bs, be).then(|| toks.at(be - 1).text().to_string());
        }
    }
    Some(toks.at(e - 1).text().to_string())
}

/// Words that make a module constant a time (a TTL, a timeout, a limit).
const TIME_WORDS: &[&str] = &[
    "TTL", "TIME", "LIMIT", "EXPIR", "DURATION", "SECONDS", "LEASE", "TIMEOUT",
];

/// A Python module's integer constants named like a time
/// (`TASK_TIME_LIMIT = int(os.environ.get('TASK_TIME_LIMIT', 4260))`,
/// `LOCK_TTL = TASK_TIME_LIMIT + 60 * 5`), with their values: an
/// upper-case name at the start of a top-level line, `=`, a value
/// [`const_int`] reads (an environment variable's default counts).
pub fn module_consts(an: &Analyzer) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    if an.lang != Language::Python {
        return out;
    }
    let toks: Toks = an.toks;
    for i in 0..toks.len().saturating_sub(2) {
        let t = toks.at(i);
        if !(t.is_ident()
            && (i == 0 || t.nl())
            && toks.at(i + 1).is("=")
            && an.st.tok_scope.get(i).copied() == Some(0)
            && an.st.tok_depth.get(i) == Some(0))
        {
            continue;
        }
        let name = t.text();
        if !name
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
            || !TIME_WORDS.iter().any(|w| name.contains(w))
        {
            continue;
        }
        // the value: to the end of its line, brackets spanning lines
        let s = i + 2;
        let mut j = s;
        while j < toks.len() {
            if j > s && toks.at(j).nl() {
                break;
            }
            if toks.at(j).is("(") || toks.at(j).is("[") || toks.at(j).is("{") {
                if let Some(m) = an.st.matching.get(&j).filter(|&m| m > j) {
                    j = m + 1;
                    continue;
                }
            }
            j += 1;
        }
        if let Some(v) = const_int(an, s, j, 0, 0) {
            out.push((name.to_string(), v));
        }
    }
    out
}

/// One past the last token of the value starting at `s` (up to the next `,`
/// or closing bracket at its own nesting level).
fn value_end(an: &Analyzer, s: usize, end: usize) -> usize {
    let toks = an.toks;
    let mut j = s;
    while j < end {
        let t = toks.at(j);
        if t.is(",") || t.is(")") || t.is("]") || t.is("}") || t.is(";") {
            break;
        }
        if t.is("(") || t.is("[") || t.is("{") {
            match an.st.matching.get(&j) {
                Some(m) if m > j => {
                    j = m + 1;
                    continue;
                }
                _ => {}
            }
        }
        j += 1;
    }
    j
}

/// The identifiers of `s..e`, and those of the binding of a single name
/// (`interval` bound to `env.REVALIDATION_INTERVAL_SECONDS`).
fn names(an: &Analyzer, s: usize, e: usize, scope: u32) -> Vec<String> {
    let mut out: Vec<String> = an
        .toks
        .slice(s..e)
        .iter()
        .filter(|t| t.is_ident())
        .map(|t| t.text().to_string())
        .collect();
    if e == s + 1 && an.toks.at(s).is_ident() {
        if let Some(b) = an.vals.lookup(scope, an.toks.at(s).text()) {
            let (bs, be) = (b.start, b.end.min(an.toks.len()));
            out.extend(
                an.toks
                    .slice(bs.min(be)..be)
                    .iter()
                    .filter(|t| t.is_ident())
                    .map(|t| t.text().to_string()),
            );
        }
    }
    out
}

/// The value of `s..e` when it is an integer constant: a number literal, a
/// name bound once to one, a parenthesised one, or a product of those
/// (`10 * 60`, `TTL_MINUTES * 60`).
pub fn const_int(an: &Analyzer, s: usize, e: usize, scope: u32, depth: u32) -> Option<u64> {
    let toks = an.toks;
    if depth > MAX_DEPTH || e <= s || e > toks.len() {
        return None;
    }
    // a trailing `;` or a TypeScript `as const`
    let mut e = e;
    while e > s && (toks.at(e - 1).is(";") || toks.at(e - 1).is("const")) {
        e -= 1;
        if e > s && toks.at(e - 1).is("as") {
            e -= 1;
        }
    }
    if e <= s {
        return None;
    }
    if toks.at(s).is("(") && an.st.matching.get(&s) == Some(e - 1) {
        return const_int(an, s + 1, e - 1, scope, depth);
    }
    if an.lang == Language::Python && toks.at(e - 1).is(")") {
        if let Some(open) = an.st.matching.get(&(e - 1)).filter(|&o| o > s) {
            let callee = toks.slice(s..open);
            // `int(x)`: x
            if open == s + 1 && toks.at(s).is("int") {
                return const_int(an, s + 2, e - 1, scope, depth + 1);
            }
            // an environment variable's default: `os.environ.get('X', 4260)`,
            // `os.getenv('X', 60)`
            let env = toks.at(open - 1).is("getenv")
                || (toks.at(open - 1).is("get") && callee.iter().any(|t| t.is("environ")));
            if env && callee.iter().all(|t| t.is_ident() || t.is(".")) {
                let args = super::calls::split_args(toks, an.st, open, e - 1);
                if let [_, d] = args.as_slice() {
                    if !d.is_named() {
                        return const_int(an, d.start(), d.end(), scope, depth + 1);
                    }
                }
            }
        }
    }
    // a sum at this level (`LIMIT + 60 * 5`, `TTL - 10`)
    let mut terms: Vec<(bool, usize, usize)> = Vec::new();
    let (mut from, mut neg) = (s, false);
    for j in this_level(an, s, e) {
        let t = toks.at(j);
        if (t.is("+") || t.is("-")) && j > from {
            terms.push((neg, from, j));
            neg = t.is("-");
            from = j + 1;
        }
    }
    if !terms.is_empty() {
        terms.push((neg, from, e));
        return terms.into_iter().try_fold(0u64, |acc, (neg, a, b)| {
            let v = const_int(an, a, b, scope, depth + 1)?;
            if neg {
                acc.checked_sub(v)
            } else {
                acc.checked_add(v)
            }
        });
    }
    // a product at this level
    let mut parts = Vec::new();
    let mut from = s;
    for j in this_level(an, s, e).filter(|&j| toks.at(j).is("*")) {
        parts.push((from, j));
        from = j + 1;
    }
    if !parts.is_empty() {
        parts.push((from, e));
        return parts.into_iter().try_fold(1u64, |acc, (a, b)| {
            acc.checked_mul(const_int(an, a, b, scope, depth + 1)?)
        });
    }
    if e == s + 1 {
        let t = toks.at(s);
        return match t.kind() {
            Kind::Num => number(t.text()),
            Kind::Ident => {
                let b = an.vals.lookup(scope, t.text())?;
                const_int(an, b.start, b.end, scope, depth + 1)
            }
            _ => None,
        };
    }
    // `this.TTL`, `self.TTL`, `Self::TTL`
    let text = an.vals.text(s, e);
    if toks
        .slice(s..e)
        .iter()
        .all(|t| t.is_ident() || t.is(".") || t.is("::") || t.is("->"))
    {
        let b = an.vals.lookup(scope, text)?;
        return const_int(an, b.start, b.end, scope, depth + 1);
    }
    None
}

/// The tokens of `s..e` outside any bracket pair that opens in it: an
/// opening bracket is yielded, then its contents are skipped.
fn this_level<'a>(an: &'a Analyzer, s: usize, e: usize) -> impl Iterator<Item = usize> + 'a {
    let toks = an.toks;
    let mut j = s;
    std::iter::from_fn(move || {
        if j >= e {
            return None;
        }
        let at = j;
        let t = toks.at(at);
        j = match an.st.matching.get(&at) {
            Some(m) if m > at && (t.is("(") || t.is("[") || t.is("{")) => m + 1,
            _ => at + 1,
        };
        Some(at)
    })
}

/// A decimal integer literal (`600`, `10_000`, `30L`).
fn number(text: &str) -> Option<u64> {
    let t = text.trim_end_matches(['L', 'l', 'u', 'U', 'n']);
    let digits: String = t.chars().filter(|&c| c != '_').collect();
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The hard runtime limit a JavaScript/TypeScript file declares for its
/// runs, in seconds: the Next.js route segment config `export const
/// maxDuration = 600`, or the `maxDuration` of `export const config = { … }`.
/// The platform ends the run when it is reached.
pub fn run_limit(an: &Analyzer) -> Option<u64> {
    if !matches!(an.lang, Language::JavaScript | Language::TypeScript) {
        return None;
    }
    let toks: Toks = an.toks;
    let top = |i: usize| an.st.tok_scope.get(i).copied() == Some(0);
    for i in 2..toks.len().saturating_sub(1) {
        if !(toks.at(i).is_ident() && toks.at(i).text() == "maxDuration" && top(i)) {
            continue;
        }
        // export const maxDuration = 600;
        if toks.at(i + 1).is("=") && toks.at(i - 1).is("const") && toks.at(i - 2).is("export") {
            let end = statement_end(toks, i + 2);
            return const_int(an, i + 2, end, 0, 0);
        }
    }
    // export const config = { maxDuration: 600 }
    for i in 0..toks.len().saturating_sub(4) {
        if toks.at(i).is("export")
            && toks.at(i + 1).is("const")
            && toks.at(i + 2).text() == "config"
            && toks.at(i + 3).is("=")
            && toks.at(i + 4).is("{")
            && top(i)
        {
            let close = an.st.matching.get(&(i + 4))?;
            let mut k = i + 5;
            while k + 2 < close {
                if toks.at(k).text() == "maxDuration" && toks.at(k + 1).is(":") {
                    let end = value_end(an, k + 2, close);
                    return const_int(an, k + 2, end, 0, 0);
                }
                k += 1;
            }
        }
    }
    None
}

/// One past the last token of a top-level statement starting at `s` (its
/// `;`, or the next line break).
fn statement_end(toks: Toks, s: usize) -> usize {
    let mut j = s;
    while j < toks.len() {
        if toks.at(j).is(";") || (j > s && toks.at(j).nl()) {
            break;
        }
        j += 1;
    }
    j
}

/// The TTL of a set-if-absent that takes it as a positional duration after
/// the key and the value: go-redis `SetNX(ctx, k, v, 10*time.Second)`,
/// Spring `setIfAbsent(k, v, 30, TimeUnit.SECONDS)` or `setIfAbsent(k, v,
/// Duration.ofSeconds(30))`, StackExchange `LockTake(k, v,
/// TimeSpan.FromSeconds(30))` or `StringSet(k, v, TimeSpan.FromSeconds(30),
/// When.NotExists)`. `ms` only when the duration and its unit
/// are constants.
pub fn of_duration_arg(an: &Analyzer, c: &Call, name_start: usize) -> Option<OpTtl> {
    let mut lname = c.name(an.toks).to_ascii_lowercase();
    if an.lang == Language::CSharp && lname.ends_with("async") {
        lname.truncate(lname.len() - 5);
    }
    // StackExchange `StringSet(k, v, expiry, When.NotExists)` (this is only
    // asked of a set-if-absent)
    let string_set = an.lang == Language::CSharp && lname == "stringset";
    if !string_set && !matches!(lname.as_str(), "setnx" | "setifabsent" | "locktake") {
        return None;
    }
    let toks = an.toks;
    let mut pos: Vec<_> = c.args().iter().filter(|a| !a.is_named()).collect();
    if an.lang == Language::Go
        && pos.first().is_some_and(|a| {
            let t = an.vals.text(a.start(), a.end()).to_ascii_lowercase();
            t.contains("ctx") || t.contains("context")
        })
    {
        pos.remove(0);
    }
    let arg = pos.get(2)?;
    let (vs, ve) = (arg.start(), arg.end().min(toks.len()));
    if ve <= vs {
        return None;
    }
    let scope = an.st.tok_scope.get(vs).copied().unwrap_or(0);
    let d = duration(an, vs, ve, scope, 0);
    let unit_ns = pos.get(3).and_then(|u| {
        let t = an.vals.text(u.start(), u.end());
        time_unit_ns(t.rsplit('.').next().unwrap_or(t))
    });
    let ms = match (d, unit_ns) {
        (Some((n, false)), Some(u)) => n.checked_mul(u).map(|ns| ns / MS),
        (Some((n, true)), None) => Some(n / MS),
        // a bare number is a Go `time.Duration` in nanoseconds
        (Some((n, false)), None) if an.lang == Language::Go => Some(n / MS),
        _ => None,
    };
    Some(OpTtl {
        name_start,
        ms,
        names: names(an, vs, ve, scope),
        // a positional TTL with its unit (Spring, Go, .NET): no module
        // constant of another file is looked up for it
        sym: None,
    })
}

/// Nanoseconds in a millisecond.
const MS: u64 = 1_000_000;

/// A Java `TimeUnit` or `ChronoUnit` constant (the unit argument of Spring's
/// `set(k, v, timeout, unit)` / `setIfAbsent(k, v, timeout, unit)`): its
/// length in nanoseconds. The one reading of those names for the pattern
/// front-end (`clients` asks it whether an argument is a unit).
pub fn time_unit_ns(name: &str) -> Option<u64> {
    Some(match name {
        "NANOSECONDS" | "NANOS" => 1,
        "MICROSECONDS" | "MICROS" => 1000,
        "MILLISECONDS" | "MILLIS" => MS,
        "SECONDS" => 1000 * MS,
        "MINUTES" => 60_000 * MS,
        "HOURS" => 3_600_000 * MS,
        "DAYS" => 86_400_000 * MS,
        _ => return None,
    })
}

/// A duration constant of `s..e`: (its value, whether a unit stood in it,
/// in which case the value is in nanoseconds): `10 * time.Second`,
/// `Duration.ofSeconds(30)`, `TimeSpan.FromMinutes(5)`, a name bound once to
/// one of those, a product of those and integer constants.
fn duration(an: &Analyzer, s: usize, e: usize, scope: u32, depth: u32) -> Option<(u64, bool)> {
    let toks = an.toks;
    if depth > MAX_DEPTH || e <= s || e > toks.len() {
        return None;
    }
    let mut e = e;
    while e > s && toks.at(e - 1).is(";") {
        e -= 1;
    }
    if e <= s {
        return None;
    }
    if toks.at(s).is("(") && an.st.matching.get(&s) == Some(e - 1) {
        return duration(an, s + 1, e - 1, scope, depth + 1);
    }
    // a product at this level
    let mut cuts = Vec::new();
    for j in this_level(an, s, e) {
        let t = toks.at(j);
        if t.is("*") {
            cuts.push(j);
        }
        if t.is("+") || t.is("-") || t.is("/") || t.is("?") {
            return None;
        }
    }
    if !cuts.is_empty() {
        let mut from = s;
        let mut acc: (u64, bool) = (1, false);
        for cut in cuts.into_iter().chain(std::iter::once(e)) {
            let (v, u) = duration(an, from, cut, scope, depth + 1)?;
            if u && acc.1 {
                return None;
            }
            acc = (acc.0.checked_mul(v)?, acc.1 || u);
            from = cut + 1;
        }
        return Some(acc);
    }
    let unit = |name: &str| -> Option<u64> {
        Some(match name.to_ascii_lowercase().as_str() {
            "nanosecond" | "nanoseconds" => 1,
            "microsecond" | "microseconds" => 1_000,
            "millisecond" | "ofmillis" | "frommilliseconds" => MS,
            "second" | "ofseconds" | "fromseconds" => 1000 * MS,
            "minute" | "ofminutes" | "fromminutes" => 60_000 * MS,
            "hour" | "ofhours" | "fromhours" => 3_600_000 * MS,
            "ofdays" | "fromdays" => 86_400_000 * MS,
            _ => return None,
        })
    };
    // Go `time.Second`
    if e == s + 3
        && toks.at(s).text() == "time"
        && toks.at(s + 1).is(".")
        && an.lang == Language::Go
    {
        return unit(toks.at(s + 2).text()).map(|u| (u, true));
    }
    // `Duration.ofSeconds(30)`, `TimeSpan.FromSeconds(30)`, Go `time.Duration(n)`
    if toks.at(e - 1).is(")") {
        let open = an.st.matching.get(&(e - 1))?;
        if open < s + 1 || !toks.at(open - 1).is_ident() {
            return None;
        }
        let name = toks.at(open - 1).text();
        let inner = const_int(an, open + 1, e - 1, scope, depth + 1)
            .map(|n| (n, false))
            .or_else(|| duration(an, open + 1, e - 1, scope, depth + 1))?;
        if name == "Duration" && an.lang == Language::Go {
            return Some(inner);
        }
        let u = unit(name)?;
        if inner.1 {
            return None;
        }
        return Some((inner.0.checked_mul(u)?, true));
    }
    if let Some(n) = const_int(an, s, e, scope, depth + 1) {
        return Some((n, false));
    }
    // a name bound once to a duration
    let text = an.vals.text(s, e);
    if toks
        .slice(s..e)
        .iter()
        .all(|t| t.is_ident() || t.is(".") || t.is("::") || t.is("->"))
    {
        let b = an.vals.lookup(scope, text)?;
        return duration(an, b.start, b.end, scope, depth + 1);
    }
    None
}
