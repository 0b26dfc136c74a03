//! Where code runs only on some paths: failure handlers (`catch`, `except`,
//! `rescue`, `if err != nil`, a promise's `.catch`) and validity guards
//! (`if elapsed < ttl { … }`, `if (Date.now() < deadline) { … }`). The
//! front-end reports the byte ranges; what they mean for a lock is the
//! rules' business (SPEC §2 once-only marker, validity guard).

use super::lexer::{Kind, Tok, Toks};
use super::Analyzer;
use crate::facts::{Deferred, Language, Op, OpKind, Span};
use crate::words;

/// Methods whose callback runs only when the chain failed.
const FAILURE_CALLBACKS: &[&str] = &[
    "catch",
    "onFailure",
    "exceptionally",
    "doOnError",
    "onErrorResume",
    "fail",
];

fn span_of(toks: Toks, s: usize, e: usize) -> Option<Span> {
    if e <= s || e > toks.len() {
        return None;
    }
    Some(Span::new(toks.at(s).start(), toks.at(e - 1).end()))
}

/// An error variable: `err`, `error`, `e`, `ex`, `writeErr`, `lock_err`.
fn is_err_name(t: &Tok) -> bool {
    t.is_ident()
        && (matches!(t.text(), "err" | "error" | "e" | "ex" | "exc")
            || t.text().ends_with("Err")
            || t.text().ends_with("_err")
            || t.text().ends_with("Error"))
}

/// The tokens that start a new line, in order, and the token count: built
/// once per file, so finding where an `if`'s line ends costs a binary search
/// instead of a scan of the rest of the line (quadratic on a minified line
/// with many `if`s). One entry per line, not per token (a 4 MB minified
/// line holds a million tokens and one line).
pub struct LineEnds {
    starts: Vec<u32>,
    len: u32,
}

impl LineEnds {
    pub fn new(toks: Toks) -> LineEnds {
        let mut starts = Vec::with_capacity(toks.iter().filter(|t| t.nl()).count());
        starts.extend(
            (0..toks.len())
                .filter(|&k| toks.at(k).nl())
                .map(|k| k as u32),
        );
        LineEnds {
            starts,
            len: toks.len() as u32,
        }
    }

    /// The first token at or after `k` with a line break before it (the
    /// token count when none has one).
    fn from(&self, k: usize) -> usize {
        let i = self.starts.partition_point(|&j| (j as usize) < k);
        self.starts
            .get(i)
            .map_or(self.len as usize, |&j| j as usize)
    }
}

/// Byte ranges of code that runs only when something failed. `ops` are the
/// file's own Redis ops (for the rest of a block after an early success return).
pub fn failure_spans(an: &Analyzer, lines: &LineEnds, ops: &[Op]) -> Vec<Span> {
    let toks = an.toks;
    let mut out = Vec::new();
    for i in 0..toks.len() {
        let t = toks.at(i);
        if !t.is_ident() {
            continue;
        }
        let after_dot = i > 0 && (toks.at(i - 1).is(".") || toks.at(i - 1).is("?."));
        // promise / future chains: `.catch(err => …)`, `.onFailure { … }`
        if after_dot && FAILURE_CALLBACKS.contains(&t.text()) {
            if let Some(open) = toks.get(i + 1).filter(|n| n.is("(") || n.is("{")) {
                let _ = open;
                if let Some(close) = an.st.matching.get(&(i + 1)) {
                    if let Some(s) = span_of(toks, i + 1, close + 1) {
                        out.push(s);
                    }
                }
            }
            continue;
        }
        if after_dot {
            continue;
        }
        match t.text() {
            "catch" | "except" => {
                let (s, e) = super::failopen::handler_body(an, i);
                if let Some(sp) = span_of(toks, s, (e + 1).min(toks.len())) {
                    out.push(sp);
                }
            }
            // a `rescue` modifier (`x rescue nil`) guards one expression only
            "rescue" if an.lang == Language::Ruby && t.nl() => {
                let (s, e) = super::failopen::handler_body(an, i);
                if let Some(sp) = span_of(toks, s, e) {
                    out.push(sp);
                }
            }
            "if" => {
                if let Some(sp) = after_success_return(an, lines, ops, i) {
                    out.push(sp);
                    continue;
                }
                let Some((cs, ce, bs, be)) = if_parts(an, lines, i) else {
                    continue;
                };
                if is_error_test(toks.slice(cs..ce)) || is_failure_disjunction(toks.slice(cs..ce)) {
                    if let Some(sp) = span_of(toks, bs, be) {
                        out.push(sp);
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// How far back a result's binding is looked for, and how far the rest of a
/// block is followed (constants: the work per `if` stays bounded).
const BIND_WINDOW: usize = 400;
const REST_WINDOW: usize = 4000;

/// The rest of the block after an early success return is a failed-result
/// branch: `sent = deliver(…)` then `if (sent) return;` (`return if sent`,
/// `if err == nil { return nil }`) — what follows runs only when the work
/// failed. Only when `sent` holds the result of work done after a
/// set-if-absent of the same function (SPEC §2 "Once-only marker"): a
/// `cached = load(k); if (cached) return cached;` before the acquire, or a
/// result read from Redis (`held = GET k`), says nothing about failure.
fn after_success_return(an: &Analyzer, lines: &LineEnds, ops: &[Op], i: usize) -> Option<Span> {
    let toks = an.toks;
    let n = toks.len();
    // (condition, first token of the rest, first token of the statement)
    let (cond, after, stmt) = if an.lang == Language::Ruby && i > 0 && !toks.at(i).nl() {
        // `return [value] if cond`
        let ls = (i.saturating_sub(16)..i).rfind(|&k| toks.at(k).nl() || k == 0)?;
        if !toks.at(ls).is("return") {
            return None;
        }
        let le = lines.from(i + 1).min(n);
        (toks.slice(i + 1..le), le, ls)
    } else {
        let (cs, ce, bs, be) = if_parts(an, lines, i)?;
        if !toks.get(bs).is_some_and(|t| t.is("return")) {
            return None;
        }
        let braced = bs > 0 && an.st.matching.get(&(bs - 1)) == Some(be);
        let closed =
            braced || (an.lang == Language::Ruby && toks.get(be).is_some_and(|t| t.is("end")));
        (toks.slice(cs..ce), if closed { be + 1 } else { be }, i)
    };
    if toks
        .get(after)
        .is_some_and(|t| matches!(t.text(), "else" | "elif" | "elsif"))
    {
        return None;
    }
    let subject = success_subject(cond)?;
    if words::reads_like_lock(subject.text()) {
        return None;
    }
    // the binding: `subject = call(…)` (`:=`, `let`/`const`, a tuple `_, err :=`)
    let scope = an.st.tok_scope[i];
    let lo = stmt.saturating_sub(BIND_WINDOW);
    let k = (lo..stmt).rev().find(|&k| {
        an.st.tok_scope[k] == scope
            && toks.at(k).is_ident()
            && toks.at(k).text() == subject.text()
            && !(k > 0 && (toks.at(k - 1).is(".") || toks.at(k - 1).is("?.")))
            && assigned_at(toks, k).is_some()
    })?;
    let eq = assigned_at(toks, k)?;
    let rhs_end = lines.from(eq + 1).min(n);
    let rhs = toks.slice(eq + 1..rhs_end);
    let calls = rhs
        .windows(2)
        .any(|w| w.at(0).is_ident() && w.at(1).is("("));
    let (from, to) = (
        toks.at(eq).end(),
        toks.get(rhs_end).map_or(usize::MAX, |t| t.start()),
    );
    let redis_result = ops
        .iter()
        .any(|o| o.scope == scope && from <= o.name_span.start() && o.name_span.start() < to);
    let after_acquire = ops.iter().any(|o| {
        o.scope == scope
            && matches!(o.kind, OpKind::Acquire { .. })
            && o.name_span.start() < toks.at(k).start()
    });
    if !calls || redis_result || !after_acquire {
        return None;
    }
    // the rest of the enclosing block
    let d = an.st.tok_depth.at(stmt);
    let mut e = after;
    let limit = after.saturating_add(REST_WINDOW).min(n);
    while e < limit {
        let t = toks.at(e);
        let td = an.st.tok_depth.at(e);
        let ends = match an.lang {
            Language::Python => t.nl() && td < d,
            Language::Ruby => {
                td < d
                    || (td == d
                        && matches!(
                            t.text(),
                            "end" | "rescue" | "ensure" | "else" | "elsif" | "when" | "}"
                        ))
            }
            _ => td < d || (td == d && t.is("}")),
        };
        if ends {
            break;
        }
        e += 1;
    }
    span_of(toks, after, e)
}

/// Calls whose result a `defer` of the same function follows before any
/// test of it, and that a later `if` tests for failure (`!ok`, `ok ==
/// false`): `ok, err := s.Lock(k, ttl)` … `defer s.Unlock(k)` … `if !ok {
/// return }`. The deferred code was registered while the call's failure
/// was still possible, so it runs on that failure too. As (the defer's
/// start, the call's method-name start). Only the first `if` after each
/// defer that tests a variable bound to a call counts, within
/// `REST_WINDOW` tokens; the binding must be the variable's last mention
/// before the defer (a variable tested before the defer was handled
/// there).
pub fn late_result_tests(
    an: &Analyzer,
    lines: &LineEnds,
    deferred: &[Deferred],
) -> Vec<(usize, usize)> {
    let toks = an.toks;
    let n = toks.len();
    let mut out = Vec::new();
    for d in deferred {
        let kd = toks.first_at(d.span.start());
        let after = toks.first_at(d.span.end());
        let limit = after.saturating_add(REST_WINDOW).min(n);
        let mut i = after;
        while i < limit && toks.at(i).start() < d.runs_at {
            if !(toks.at(i).is("if") && an.st.tok_scope[i] == d.scope) {
                i += 1;
                continue;
            }
            let Some((cs, ce, _, _)) = if_parts(an, lines, i) else {
                i += 1;
                continue;
            };
            let Some(subject) = failed_subject(toks.slice(cs..ce)) else {
                i += 1;
                continue;
            };
            // the subject's last mention before the defer: its binding
            let lo = kd.saturating_sub(BIND_WINDOW);
            let bound = (lo..kd)
                .rev()
                .find(|&k| {
                    toks.at(k).is_ident()
                        && toks.at(k).text() == subject
                        && !(k > 0 && (toks.at(k - 1).is(".") || toks.at(k - 1).is("?.")))
                })
                .filter(|&k| an.st.tok_scope[k] == d.scope)
                .and_then(|k| assigned_at(toks, k));
            if let Some(eq) = bound {
                let rhs_end = lines.from(eq + 1).min(kd);
                if let Some(name) = (eq + 1..rhs_end.saturating_sub(1))
                    .find(|&k| toks.at(k).is_ident() && toks.at(k + 1).is("("))
                {
                    out.push((d.span.start(), toks.at(name).start()));
                }
            }
            break;
        }
    }
    out
}

/// The variable a condition tests for failure: `!ok`, `not ok`, `ok ==
/// false`, `(!ok)`; never an error variable (`!err` says nothing of a
/// result).
fn failed_subject<'a>(cond: Toks<'a>) -> Option<&'a str> {
    let inner: Vec<Tok> = cond.iter().filter(|t| !(t.is("(") || t.is(")"))).collect();
    let x = match inner.as_slice() {
        [neg, x] if neg.is("!") || neg.is("not") => x,
        [x, op, f] if (op.is("==") || op.is("===")) && (f.is("false") || f.is("False")) => x,
        _ => return None,
    };
    (x.is_ident() && !is_err_name(x) && !matches!(x.text(), "this" | "self")).then(|| x.text())
}

/// The tested result of a success condition: `sent`, `res.ok`, `(captured)`,
/// `err == nil`, `err is None`.
fn success_subject<'a>(cond: Toks<'a>) -> Option<Tok<'a>> {
    let inner: Vec<Tok> = cond.iter().filter(|t| !(t.is("(") || t.is(")"))).collect();
    match inner.as_slice() {
        [e, op, nil]
            if is_err_name(e)
                && (op.is("==") || op.is("==="))
                && (nil.is("nil") || nil.is("null")) =>
        {
            Some(*e)
        }
        [e, is, none] if is_err_name(e) && is.is("is") && none.is("None") => Some(*e),
        [first, ..] if first.is_ident() && !is_err_name(first) => {
            let path = inner.iter().enumerate().all(|(k, t)| {
                if k % 2 == 0 {
                    t.is_ident() && !matches!(t.text(), "not" | "is" | "and" | "or" | "await")
                } else {
                    t.is(".") || t.is("->") || t.is("?.")
                }
            });
            (path && inner.len() % 2 == 1).then_some(*first)
        }
        _ => None,
    }
}

/// `k` is assigned: `k = …`, `k := …`, `k, err := …`, `_, k = …`; the
/// index of the `=`/`:=`.
fn assigned_at(toks: Toks, k: usize) -> Option<usize> {
    let mut j = k + 1;
    while toks.get(j).is_some_and(|t| t.is(",")) && toks.get(j + 1).is_some_and(|t| t.is_ident()) {
        j += 2;
    }
    toks.get(j).filter(|t| t.is("=") || t.is(":=")).map(|_| j)
}

/// A disjunction about one result, one alternative of which is a failed
/// test: `!res || res === INVALID`, `err != nil || resp == nil`,
/// `not sent or sent.status >= 400`. The branch runs on every failure of
/// that result and only on outcomes of it.
fn is_failure_disjunction(cond: Toks) -> bool {
    let mut parts: Vec<Toks> = Vec::new();
    let (mut depth, mut s) = (0i32, 0usize);
    for (k, t) in cond.iter().enumerate() {
        if t.is("(") || t.is("[") {
            depth += 1;
        } else if t.is(")") || t.is("]") {
            depth -= 1;
        } else if depth == 0 && (t.is("||") || t.is("or")) {
            parts.push(cond.slice(s..k));
            s = k + 1;
        } else if depth == 0 && (t.is("&&") || t.is("and")) {
            return false;
        }
    }
    parts.push(cond.slice(s..));
    if parts.len() < 2 {
        return false;
    }
    let subject = |p: Toks| {
        p.iter()
            .find(|t| !(t.is("!") || t.is("not") || t.is("(")))
            .filter(|t| t.is_ident())
            .map(|t| t.text().to_string())
    };
    let failing: Vec<String> = parts
        .iter()
        .filter(|p| is_error_test(**p))
        .filter_map(|p| subject(*p))
        .collect();
    !failing.is_empty()
        && parts
            .iter()
            .all(|p| is_error_test(*p) || subject(*p).is_some_and(|s| failing.contains(&s)))
}

/// `err != nil`, `(err)`, `(error)`, `err is not None`: the branch runs on
/// failure; so does a failed-result branch: `not delivered`, `!ok`,
/// `result == null`, `sent is None`, `ok == false`. A field of the object
/// itself (`this.processing === false`, `not self.conn`) is its state, not
/// the result of work just done: a branch on it is no failure path.
fn is_error_test(cond: Toks) -> bool {
    let path = |ts: &[Tok]| {
        !ts.is_empty()
            && ts.len() % 2 == 1
            && !(ts.len() > 1 && matches!(ts[0].text(), "this" | "self" | "$this"))
            && ts.iter().enumerate().all(|(k, t)| {
                if k % 2 == 0 {
                    t.is_ident() && !matches!(t.text(), "not" | "is" | "and" | "or")
                } else {
                    t.is(".") || t.is("->") || t.is("?.")
                }
            })
    };
    let flat: Vec<Tok> = cond.iter().collect();
    if let Some((first, rest)) = flat.split_first() {
        if (first.is("not") || first.is("!")) && path(rest) {
            return true;
        }
    }
    if flat.len() >= 3 {
        let (lhs, tail) = flat.split_at(flat.len() - 2);
        let (op, v) = (tail[0], tail[1]);
        let empty = matches!(v.text(), "None" | "null" | "nil" | "false" | "False");
        if path(lhs) && empty && (op.is("==") || op.is("===") || op.is("is")) {
            return true;
        }
    }
    let inner: Vec<Tok> = cond.iter().filter(|t| !(t.is("(") || t.is(")"))).collect();
    // Go: `err != nil`, possibly after an init statement `x, err := f(); err != nil`
    let tail: Vec<Tok> = match inner.iter().rposition(|t| t.is(";")) {
        Some(p) => inner[p + 1..].to_vec(),
        None => inner.clone(),
    };
    match tail.as_slice() {
        [e] => is_err_name(e) && e.text() != "e",
        [e, op, nil] => is_err_name(e) && op.is("!=") && (nil.is("nil") || nil.is("null")),
        [e, is, not, none] => is_err_name(e) && is.is("is") && not.is("not") && none.is("None"),
        _ => false,
    }
}

/// The parts of an `if` at token `i`: (condition start, condition end, body
/// start, body end) as token ranges, for the language's block syntax.
fn if_parts(an: &Analyzer, lines: &LineEnds, i: usize) -> Option<(usize, usize, usize, usize)> {
    let toks = an.toks;
    let n = toks.len();
    match an.lang {
        Language::Python | Language::Ruby => {
            let line_end = lines.from(i + 1).min(n);
            let colon = if an.lang == Language::Python {
                (i + 1..line_end).rfind(|&k| toks.at(k).is(":"))?
            } else {
                if i > 0 && !toks.at(i).nl() {
                    return None; // a modifier `x if cond`
                }
                line_end
            };
            let d = an.st.tok_depth.at(i);
            let bs = if an.lang == Language::Python {
                colon + 1
            } else {
                line_end
            };
            let mut e = bs;
            while e < n {
                let t = toks.at(e);
                let at_or_above = an.st.tok_depth.at(e) <= d && t.nl();
                if an.lang == Language::Python && at_or_above {
                    break;
                }
                // the `if`'s own `end`/`else`/`elsif` stand inside its frame,
                // one deeper than the `if`; a nested block's are deeper still
                if an.lang == Language::Ruby
                    && an.st.tok_depth.at(e) <= d + 1
                    && matches!(t.text(), "end" | "else" | "elsif")
                {
                    break;
                }
                e += 1;
            }
            Some((i + 1, colon, bs, e))
        }
        _ => {
            // C-like: `if (cond) {`, Go: `if cond {`
            let (cs, ce, mut k) = if toks.get(i + 1).is_some_and(|t| t.is("(")) {
                let c = an.st.matching.get(&(i + 1))?;
                (i + 2, c, c + 1)
            } else {
                let mut k = i + 1;
                while k < n && !toks.at(k).is("{") && !(toks.at(k).nl() && k > i + 1) {
                    k += 1;
                }
                (i + 1, k, k)
            };
            if !toks.get(k).is_some_and(|t| t.is("{")) {
                // a braceless body: one statement up to the line's end
                if k >= n {
                    return None;
                }
                let e = lines.from(k + 1).min(n);
                return Some((cs, ce, k, e));
            }
            let m = an.st.matching.get(&k)?;
            if m <= k {
                return None;
            }
            k += 1;
            Some((cs, ce, k, m))
        }
    }
}

/// Words of an elapsed or current time, and of a lease's limit.
const TIME_WORDS: &[&str] = &[
    "elapsed",
    "cost",
    "spent",
    "took",
    "duration",
    "now",
    "time",
    "current",
    "millis",
    "monotonic",
];
const LIMIT_WORDS: &[&str] = &[
    "ttl",
    "timeout",
    "expire",
    "expires",
    "expiry",
    "expiration",
    "lease",
    "deadline",
    "validity",
    "valid",
    "until",
    "lock",
];

fn has_word(toks: Toks, set: &[&str]) -> bool {
    toks.iter().any(|t| {
        t.is_ident()
            && words::word_parts(t.text())
                .iter()
                .any(|w| set.contains(&w.as_str()))
    })
}

/// One comparison of an elapsed or current time below a lease's limit:
/// `elapsed < ttl`, `now < deadline`, `ttl > elapsed`.
fn lease_still_valid(cond: Toks) -> bool {
    let Some(p) = cond
        .iter()
        .position(|t| t.is("<") || t.is("<=") || t.is(">") || t.is(">="))
    else {
        return false;
    };
    let (left, right) = (cond.slice(..p), cond.slice(p + 1..));
    let (small, big) = if cond.at(p).is("<") || cond.at(p).is("<=") {
        (left, right)
    } else {
        (right, left)
    };
    has_word(small, TIME_WORDS) && !has_word(small, LIMIT_WORDS) && has_word(big, LIMIT_WORDS)
}

/// Byte ranges of code that runs only while the holder's clock says the
/// lease is valid: `if elapsed < ttl`, `if now < deadline`, `if ttl > elapsed`.
pub fn validity_spans(an: &Analyzer, lines: &LineEnds) -> Vec<Span> {
    if_body_spans(an, lines, 24, |cond| {
        // no `||` (an alternative would run the body anyway) and no negated
        // group; a conjunction (`now < deadline and lock`) guards when one
        // of its terms is the comparison
        !(cond.iter().any(|t| t.is("||") || t.is("or"))
            || cond
                .windows(2)
                .any(|w| (w.at(0).is("!") || w.at(0).is("not")) && w.at(1).is("(")))
            && cond
                .split(|t| t.is("&&") || t.is("and"))
                .any(lease_still_valid)
    })
}

/// How far back the start of a Ruby modifier `if`'s statement is looked for.
const MODIFIER_WINDOW: usize = 64;

/// A Ruby modifier `stmt if cond` (`@redis.del(k) if held_until > now`): the
/// parts as [`if_parts`] gives them, the statement before the `if` as the
/// body (condition start, condition end, body start, body end).
fn modifier_if(an: &Analyzer, lines: &LineEnds, i: usize) -> Option<(usize, usize, usize, usize)> {
    let toks = an.toks;
    if an.lang != Language::Ruby || i == 0 || toks.at(i).nl() {
        return None;
    }
    let bs = (i.saturating_sub(MODIFIER_WINDOW)..i).rfind(|&k| toks.at(k).nl() || k == 0)?;
    // the statement must start the line and stand in the `if`'s block
    if an.st.tok_depth.at(bs) != an.st.tok_depth.at(i) {
        return None;
    }
    let ce = lines.from(i + 1).min(toks.len());
    Some((i + 1, ce, bs, i))
}

/// The bodies of the `if`s (not `.if` members) whose condition, at most
/// `max_cond` tokens, satisfies `pred`.
fn if_body_spans(
    an: &Analyzer,
    lines: &LineEnds,
    max_cond: usize,
    pred: impl Fn(Toks) -> bool,
) -> Vec<Span> {
    let toks = an.toks;
    let mut out = Vec::new();
    for i in 0..toks.len() {
        if !toks.at(i).is("if") || (i > 0 && (toks.at(i - 1).is(".") || toks.at(i - 1).is("?."))) {
            continue;
        }
        let Some((cs, ce, bs, be)) = if_parts(an, lines, i).or_else(|| modifier_if(an, lines, i))
        else {
            continue;
        };
        if ce <= cs || ce - cs > max_cond {
            continue;
        }
        if pred(toks.slice(cs..ce)) {
            if let Some(sp) = span_of(toks, bs, be) {
                out.push(sp);
            }
        }
    }
    out
}

/// A flag that asks for a deliberate override: its last name part says
/// `force`, `forced` or `override` (`$override`, `force`, `opts.force`,
/// `this.forceRelease`), alone or compared `== true`.
fn deliberate_flag(cond: Toks) -> bool {
    let n = cond.len();
    let compared = n >= 2
        && (cond.at(n - 2).is("==") || cond.at(n - 2).is("==="))
        && (cond.at(n - 1).is("true") || cond.at(n - 1).is("True"));
    let cond = if compared { cond.slice(..n - 2) } else { cond };
    let path_ok = !cond.is_empty()
        && cond.len() % 2 == 1
        && cond.iter().enumerate().all(|(k, t)| {
            if k % 2 == 0 {
                t.is_ident() && !matches!(t.text(), "not" | "is" | "and" | "or")
            } else {
                t.is(".") || t.is("->") || t.is("?.")
            }
        });
    path_ok
        && cond.last().is_some_and(|t| {
            words::word_parts(t.text())
                .iter()
                .any(|w| matches!(w.as_str(), "force" | "forced" | "override"))
        })
}

/// Byte ranges of code that runs only when the caller asked for a
/// deliberate override (SPEC §2 deliberate names): the body of `if
/// ($override)`, `if force:`, `if (opts.force)`. A delete there is a forced
/// release by request, not the function's ordinary release.
pub fn deliberate_spans(an: &Analyzer, lines: &LineEnds) -> Vec<Span> {
    if_body_spans(an, lines, 12, deliberate_flag)
}

/// What a defaulted parameter holds when a call leaves it out, as far as
/// an `if` on it can tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Default {
    /// `null`, `undefined`, `None`, `nil` (also a TS `opts?:` left out).
    Null,
    False,
    Zero,
    EmptyStr,
    /// `{}`: an object or dict with no fields.
    EmptyObj,
    /// `[]`, `()`, `array()`.
    EmptyList,
    Other,
}

/// Classifies a parameter's default value (its tokens after `=`).
pub fn classify_default(d: Toks) -> Default {
    match d.to_vec().as_slice() {
        [t] if t.kind() == Kind::Str => {
            if t.text().is_empty() {
                Default::EmptyStr
            } else {
                Default::Other
            }
        }
        [t] if t.kind() == Kind::Num => {
            let digits = t.text().trim_end_matches(|c: char| c.is_ascii_alphabetic());
            if !digits.is_empty() && digits.chars().all(|c| c == '0' || c == '.' || c == '_') {
                Default::Zero
            } else {
                Default::Other
            }
        }
        [t] => match t.text() {
            "null" | "undefined" | "None" | "nil" | "NULL" | "Null" => Default::Null,
            "false" | "False" | "FALSE" => Default::False,
            _ => Default::Other,
        },
        [a, b] if a.is("{") && b.is("}") => Default::EmptyObj,
        [a, b] if (a.is("[") && b.is("]")) || (a.is("(") && b.is(")")) => Default::EmptyList,
        [a, b, c] if a.is("array") && b.is("(") && c.is(")") => Default::EmptyList,
        _ => Default::Other,
    }
}

/// The parameter a test reads and whether it reads one of its members:
/// `p`, `opts.ttl`, `opts?.ttl`, `$opts['ttl']`, `this`-less only.
/// Returns (parameter, member read, through `?.`).
fn tested_path<'a>(c: Toks<'a>) -> Option<(Tok<'a>, bool, bool)> {
    let (first, rest) = c.split_first()?;
    if !first.is_ident() || matches!(first.text(), "not" | "is" | "and" | "or" | "this") {
        return None;
    }
    let mut k = 0;
    let mut optional = false;
    while k < rest.len() {
        let t = &rest.at(k);
        if (t.is(".") || t.is("?.") || t.is("->")) && rest.get(k + 1).is_some_and(|n| n.is_ident())
        {
            optional |= t.is("?.");
            k += 2;
        } else if t.is("[")
            && rest.get(k + 1).is_some_and(|n| n.kind() == Kind::Str)
            && rest.get(k + 2).is_some_and(|n| n.is("]"))
        {
            k += 3;
        } else {
            return None;
        }
    }
    Some((first, !rest.is_empty(), optional))
}

/// How a conjunct of an `if`'s test reads a parameter: truthy (`p`,
/// `opts.ttl`), not null (`p != null`, `p is not None`, `isset($p)`), or
/// positive (`p > 0`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Test {
    Truthy,
    NotNull,
    Positive,
}

fn conjunct_test<'a>(c: Toks<'a>) -> Option<(Tok<'a>, bool, bool, Test)> {
    let nullish = |t: Tok| matches!(t.text(), "null" | "undefined" | "None" | "nil" | "NULL");
    let n = c.len();
    let (path, test) = match c.to_vec().as_slice() {
        [.., op, v] if (op.is("!=") || op.is("!==")) && nullish(*v) => {
            (c.slice(..n - 2), Test::NotNull)
        }
        [.., is, not, v] if is.is("is") && not.is("not") && v.is("None") => {
            (c.slice(..n - 3), Test::NotNull)
        }
        [f, open, .., close] if f.is("isset") && open.is("(") && close.is(")") => {
            (c.slice(2..n - 1), Test::NotNull)
        }
        [.., op, v] if op.is(">") && v.is("0") => (c.slice(..n - 2), Test::Positive),
        [.., op, v] if op.is(">=") && v.is("1") => (c.slice(..n - 2), Test::Positive),
        _ => (c, Test::Truthy),
    };
    let (p, member, optional) = tested_path(path)?;
    Some((p, member, optional, test))
}

/// Whether a test reads false for a parameter left at its default.
fn false_at_default(lang: Language, d: Default, member: bool, optional: bool, test: Test) -> bool {
    use Language::*;
    let dynamic = matches!(lang, JavaScript | TypeScript | Python | Php);
    if member {
        // a member of an empty object or array is absent (`opts.ttl` of
        // `opts = {}`, `$opts['ttl']` of `$opts = []`), as is one read
        // through `?.` from an absent object
        return match d {
            Default::EmptyObj => matches!(lang, JavaScript | TypeScript),
            Default::EmptyList => lang == Php,
            Default::Null => optional,
            _ => false,
        };
    }
    match test {
        Test::NotNull => d == Default::Null,
        Test::Positive => {
            d == Default::Zero
                || (d == Default::Null && matches!(lang, JavaScript | TypeScript | Php | CSharp))
        }
        Test::Truthy => match d {
            Default::False => true,
            Default::Null => lang != Kotlin && lang != Java && lang != CSharp,
            Default::Zero | Default::EmptyStr => dynamic,
            Default::EmptyObj | Default::EmptyList => matches!(lang, Python | Php),
            Default::Other => false,
        },
    }
}

/// Longest `if` test read for [`arg_branches`].
const MAX_ARG_TEST: usize = 24;

/// The bodies of the `if`s whose test is false when the caller leaves a
/// defaulted parameter out (`if (opts.ttl)` of `opts = {}`, `if ttl:` of
/// `ttl=None`): (scope, body, parameter). `defaults` gives, per function
/// scope, its parameters' names and defaults.
pub fn arg_branches(
    an: &Analyzer,
    lines: &LineEnds,
    defaults: &std::collections::HashMap<u32, Vec<(String, Default)>>,
) -> Vec<(u32, Span, String)> {
    let toks = an.toks;
    let mut out = Vec::new();
    for i in 0..toks.len() {
        if !toks.at(i).is("if") || (i > 0 && (toks.at(i - 1).is(".") || toks.at(i - 1).is("?."))) {
            continue;
        }
        let scope = an.st.tok_scope.get(i).copied().unwrap_or(0);
        let Some(params) = defaults.get(&scope) else {
            continue;
        };
        let Some((cs, ce, bs, be)) = if_parts(an, lines, i).or_else(|| modifier_if(an, lines, i))
        else {
            continue;
        };
        if ce <= cs || ce - cs > MAX_ARG_TEST {
            continue;
        }
        let cond = toks.slice(cs..ce);
        if cond.iter().any(|t| t.is("||") || t.is("or") || t.is("!")) {
            continue;
        }
        let found = cond
            .split(|t| t.is("&&") || t.is("and"))
            .filter_map(conjunct_test)
            .find_map(|(p, member, optional, test)| {
                let name = super::values::norm_name(p.text());
                params.iter().find(|(n, d)| {
                    *n == name && false_at_default(an.lang, *d, member, optional, test)
                })
            });
        if let (Some((name, _)), Some(sp)) = (found, span_of(toks, bs, be)) {
            out.push((scope, sp, name.clone()));
        }
    }
    out
}
