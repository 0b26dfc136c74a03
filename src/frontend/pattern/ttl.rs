//! What the TTL of a set-if-absent write is (its constant value in
//! milliseconds, the names it is written with), and the hard runtime limit a
//! file declares for its runs (`export const maxDuration = 600`).
//! Facts only: what they mean for a lock is the rules' business.

use super::calls::Call;
use super::lexer::{Kind, Tok};
use super::Analyzer;
use crate::facts::{Language, OpTtl};

/// How deep a constant may refer to another constant.
const MAX_DEPTH: u32 = 4;

/// The `EX`/`PX` option of the call `c` whose method name starts at byte
/// `name_start`: a flag followed by its value (`'EX', 60`, `{ex: 60}`,
/// `ex: 60`, `ex=60`, `.px(ms)`). `None` when the call has no such option.
pub fn of_call(an: &Analyzer, c: &Call, name_start: usize) -> Option<OpTtl> {
    let toks = an.toks;
    let end = c.end.min(toks.len());
    let mut k = c.open;
    while k + 1 < end {
        let t = &toks[k];
        let unit: u64 = match t.text.to_ascii_lowercase().as_str() {
            "ex" if t.kind == Kind::Str || t.is_ident() => 1000,
            "px" if t.kind == Kind::Str || t.is_ident() => 1,
            _ => {
                k += 1;
                continue;
            }
        };
        let next = &toks[k + 1];
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
    if an.lang != Language::Python || c.name != "add" {
        return None;
    }
    let arg = c
        .args
        .iter()
        .find(|a| a.name == Some("timeout"))
        .or_else(|| c.args.iter().filter(|a| a.name.is_none()).nth(2))?;
    let (vs, ve) = (arg.start, arg.end.min(an.toks.len()));
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
    let toks: &[Tok] = an.toks;
    for i in 0..toks.len().saturating_sub(2) {
        if !toks[i].is("@") {
            continue;
        }
        // `@ a . b . task (`: the decorator's dotted name, then its arguments
        let mut j = i + 1;
        while j + 1 < toks.len() && toks[j].is_ident() && toks[j + 1].is(".") {
            j += 2;
        }
        if !(j + 1 < toks.len()
            && toks[j].is_ident()
            && matches!(toks[j].text, "task" | "shared_task")
            && toks[j + 1].is("("))
        {
            continue;
        }
        let Some(close) = an.st.matching.get(&(j + 1)) else {
            continue;
        };
        let mut limit = None;
        let mut k = j + 2;
        while k + 2 < close {
            if toks[k].text == "time_limit"
                && toks[k + 1].is("=")
                && (toks[k - 1].is("(") || toks[k - 1].is(","))
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
        while d < toks.len() && toks[d].is("@") {
            let mut e = d + 1;
            // the decorator's name ends at its line's end (`def` is a word too)
            while e < toks.len() && !toks[e].nl && (toks[e].is_ident() || toks[e].is(".")) {
                e += 1;
            }
            d = match toks.get(e) {
                Some(t) if t.is("(") => an.st.matching.get(&e).map_or(toks.len(), |m| m + 1),
                _ => e,
            };
        }
        if d < toks.len() && toks[d].is("async") {
            d += 1;
        }
        if d + 1 < toks.len() && toks[d].is("def") {
            if let Some(&scope) = an.st.decl_scope.get(&(d + 1)) {
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
    let dotted =
        |a: usize, b: usize| {
            b > a
                && b <= toks.len()
                && (b - a) % 2 == 1
                && toks[a..b].iter().enumerate().all(|(k, t)| {
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
        if let Some(b) = an.vals.lookup(scope, toks[s].text) {
            let (bs, be) = (b.start, b.end.min(toks.len()));
            return dotted(bs, be).then(|| toks[be - 1].text.to_string());
        }
    }
    Some(toks[e - 1].text.to_string())
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
    let toks: &[Tok] = an.toks;
    for i in 0..toks.len().saturating_sub(2) {
        let t = &toks[i];
        if !(t.is_ident()
            && (i == 0 || t.nl)
            && toks[i + 1].is("=")
            && an.st.tok_scope.get(i).copied() == Some(0)
            && an.st.tok_depth.get(i).copied() == Some(0))
        {
            continue;
        }
        let name = t.text;
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
            if j > s && toks[j].nl {
                break;
            }
            if toks[j].is("(") || toks[j].is("[") || toks[j].is("{") {
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
        let t = &toks[j];
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
    let mut out: Vec<String> = an.toks[s..e]
        .iter()
        .filter(|t| t.is_ident())
        .map(|t| t.text.to_string())
        .collect();
    if e == s + 1 && an.toks[s].is_ident() {
        if let Some(b) = an.vals.lookup(scope, an.toks[s].text) {
            let (bs, be) = (b.start, b.end.min(an.toks.len()));
            out.extend(
                an.toks[bs.min(be)..be]
                    .iter()
                    .filter(|t| t.is_ident())
                    .map(|t| t.text.to_string()),
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
    while e > s && (toks[e - 1].is(";") || toks[e - 1].is("const")) {
        e -= 1;
        if e > s && toks[e - 1].is("as") {
            e -= 1;
        }
    }
    if e <= s {
        return None;
    }
    if toks[s].is("(") && an.st.matching.get(&s) == Some(e - 1) {
        return const_int(an, s + 1, e - 1, scope, depth);
    }
    if an.lang == Language::Python && toks[e - 1].is(")") {
        if let Some(open) = an.st.matching.get(&(e - 1)).filter(|&o| o > s) {
            let callee = &toks[s..open];
            // `int(x)`: x
            if open == s + 1 && toks[s].is("int") {
                return const_int(an, s + 2, e - 1, scope, depth + 1);
            }
            // an environment variable's default: `os.environ.get('X', 4260)`,
            // `os.getenv('X', 60)`
            let env = toks[open - 1].is("getenv")
                || (toks[open - 1].is("get") && callee.iter().any(|t| t.is("environ")));
            if env && callee.iter().all(|t| t.is_ident() || t.is(".")) {
                let args = super::calls::split_args(toks, an.st, open, e - 1);
                if let [_, d] = args.as_slice() {
                    if d.name.is_none() {
                        return const_int(an, d.start, d.end, scope, depth + 1);
                    }
                }
            }
        }
    }
    // a sum at this level (`LIMIT + 60 * 5`, `TTL - 10`)
    let mut terms: Vec<(bool, usize, usize)> = Vec::new();
    let (mut from, mut neg, mut j) = (s, false, s);
    while j < e {
        let t = &toks[j];
        if t.is("(") || t.is("[") || t.is("{") {
            if let Some(m) = an.st.matching.get(&j).filter(|&m| m > j) {
                j = m + 1;
                continue;
            }
        }
        if (t.is("+") || t.is("-")) && j > from {
            terms.push((neg, from, j));
            neg = t.is("-");
            from = j + 1;
        }
        j += 1;
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
    let mut j = s;
    while j < e {
        let t = &toks[j];
        if t.is("(") || t.is("[") || t.is("{") {
            if let Some(m) = an.st.matching.get(&j) {
                if m > j {
                    j = m + 1;
                    continue;
                }
            }
        }
        if t.is("*") {
            parts.push((from, j));
            from = j + 1;
        }
        j += 1;
    }
    if !parts.is_empty() {
        parts.push((from, e));
        return parts.into_iter().try_fold(1u64, |acc, (a, b)| {
            acc.checked_mul(const_int(an, a, b, scope, depth + 1)?)
        });
    }
    if e == s + 1 {
        let t = &toks[s];
        return match t.kind {
            Kind::Num => number(t.text),
            Kind::Ident => {
                let b = an.vals.lookup(scope, t.text)?;
                const_int(an, b.start, b.end, scope, depth + 1)
            }
            _ => None,
        };
    }
    // `this.TTL`, `self.TTL`, `Self::TTL`
    let text = an.vals.text(s, e);
    if toks[s..e]
        .iter()
        .all(|t| t.is_ident() || t.is(".") || t.is("::") || t.is("->"))
    {
        let b = an.vals.lookup(scope, text)?;
        return const_int(an, b.start, b.end, scope, depth + 1);
    }
    None
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
    let toks: &[Tok] = an.toks;
    let top = |i: usize| an.st.tok_scope.get(i).copied() == Some(0);
    for i in 2..toks.len().saturating_sub(1) {
        if !(toks[i].is_ident() && toks[i].text == "maxDuration" && top(i)) {
            continue;
        }
        // export const maxDuration = 600;
        if toks[i + 1].is("=") && toks[i - 1].is("const") && toks[i - 2].is("export") {
            let end = statement_end(toks, i + 2);
            return const_int(an, i + 2, end, 0, 0);
        }
    }
    // export const config = { maxDuration: 600 }
    for i in 0..toks.len().saturating_sub(4) {
        if toks[i].is("export")
            && toks[i + 1].is("const")
            && toks[i + 2].text == "config"
            && toks[i + 3].is("=")
            && toks[i + 4].is("{")
            && top(i)
        {
            let close = an.st.matching.get(&(i + 4))?;
            let mut k = i + 5;
            while k + 2 < close {
                if toks[k].text == "maxDuration" && toks[k + 1].is(":") {
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
fn statement_end(toks: &[Tok], s: usize) -> usize {
    let mut j = s;
    while j < toks.len() {
        if toks[j].is(";") || (j > s && toks[j].nl) {
            break;
        }
        j += 1;
    }
    j
}
