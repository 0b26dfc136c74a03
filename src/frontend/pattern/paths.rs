//! Where code runs only on some paths: failure handlers (`catch`, `except`,
//! `rescue`, `if err != nil`, a promise's `.catch`) and validity guards
//! (`if elapsed < ttl { … }`, `if (Date.now() < deadline) { … }`). The
//! front-end reports the byte ranges; what they mean for a lock is the
//! rules' business (SPEC §2 once-only marker, validity guard).

use super::lexer::Tok;
use super::Analyzer;
use crate::facts::{Language, Span};
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

fn span_of(toks: &[Tok], s: usize, e: usize) -> Option<Span> {
    if e <= s || e > toks.len() {
        return None;
    }
    Some(Span::new(toks[s].start, toks[e - 1].end))
}

/// An error variable: `err`, `error`, `e`, `ex`, `writeErr`, `lock_err`.
fn is_err_name(t: &Tok) -> bool {
    t.is_ident()
        && (matches!(t.text.as_str(), "err" | "error" | "e" | "ex" | "exc")
            || t.text.ends_with("Err")
            || t.text.ends_with("_err")
            || t.text.ends_with("Error"))
}

/// For each token index, the first token at or after it that starts a new
/// line (`toks.len()` when none does): built once per file, so finding where
/// an `if`'s line ends costs O(1) instead of a scan of the rest of the line
/// (quadratic on a minified line with many `if`s).
pub struct LineEnds(Vec<u32>);

impl LineEnds {
    pub fn new(toks: &[Tok]) -> LineEnds {
        let n = toks.len();
        let mut next = vec![n as u32; n + 1];
        for k in (0..n).rev() {
            next[k] = if toks[k].nl { k as u32 } else { next[k + 1] };
        }
        LineEnds(next)
    }

    /// The first token at or after `k` with a line break before it.
    fn from(&self, k: usize) -> usize {
        self.0.get(k).map_or(self.0.len() - 1, |&j| j as usize)
    }
}

/// Byte ranges of code that runs only when something failed.
pub fn failure_spans(an: &Analyzer, lines: &LineEnds) -> Vec<Span> {
    let toks = an.toks;
    let mut out = Vec::new();
    for i in 0..toks.len() {
        let t = &toks[i];
        if !t.is_ident() {
            continue;
        }
        let after_dot = i > 0 && (toks[i - 1].is(".") || toks[i - 1].is("?."));
        // promise / future chains: `.catch(err => …)`, `.onFailure { … }`
        if after_dot && FAILURE_CALLBACKS.contains(&t.text.as_str()) {
            if let Some(open) = toks.get(i + 1).filter(|n| n.is("(") || n.is("{")) {
                let _ = open;
                if let Some(&close) = an.st.matching.get(&(i + 1)) {
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
        match t.text.as_str() {
            "catch" | "except" => {
                let (s, e) = super::failopen::handler_body(an, i);
                if let Some(sp) = span_of(toks, s, (e + 1).min(toks.len())) {
                    out.push(sp);
                }
            }
            // a `rescue` modifier (`x rescue nil`) guards one expression only
            "rescue" if an.lang == Language::Ruby && t.nl => {
                let (s, e) = super::failopen::handler_body(an, i);
                if let Some(sp) = span_of(toks, s, e) {
                    out.push(sp);
                }
            }
            "if" => {
                let Some((cs, ce, bs, be)) = if_parts(an, lines, i) else {
                    continue;
                };
                if is_error_test(&toks[cs..ce]) {
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

/// `err != nil`, `(err)`, `(error)`, `err is not None`: the branch runs on
/// failure; so does a failed-result branch: `not delivered`, `!ok`,
/// `result == null`, `sent is None`, `ok == false`.
fn is_error_test(cond: &[Tok]) -> bool {
    let path = |ts: &[&Tok]| {
        !ts.is_empty()
            && ts.len() % 2 == 1
            && ts.iter().enumerate().all(|(k, t)| {
                if k % 2 == 0 {
                    t.is_ident() && !matches!(t.text.as_str(), "not" | "is" | "and" | "or")
                } else {
                    t.is(".") || t.is("->") || t.is("?.")
                }
            })
    };
    let flat: Vec<&Tok> = cond.iter().collect();
    if let Some((first, rest)) = flat.split_first() {
        if (first.is("not") || first.is("!")) && path(rest) {
            return true;
        }
    }
    if flat.len() >= 3 {
        let (lhs, tail) = flat.split_at(flat.len() - 2);
        let (op, v) = (tail[0], tail[1]);
        let empty = matches!(v.text.as_str(), "None" | "null" | "nil" | "false" | "False");
        if path(lhs) && empty && (op.is("==") || op.is("===") || op.is("is")) {
            return true;
        }
    }
    let inner: Vec<&Tok> = cond.iter().filter(|t| !(t.is("(") || t.is(")"))).collect();
    // Go: `err != nil`, possibly after an init statement `x, err := f(); err != nil`
    let tail: Vec<&Tok> = match inner.iter().rposition(|t| t.is(";")) {
        Some(p) => inner[p + 1..].to_vec(),
        None => inner.clone(),
    };
    match tail.as_slice() {
        [e] => is_err_name(e) && e.text != "e",
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
                (i + 1..line_end).rfind(|&k| toks[k].is(":"))?
            } else {
                if i > 0 && !toks[i].nl {
                    return None; // a modifier `x if cond`
                }
                line_end
            };
            let d = an.st.tok_depth[i];
            let bs = if an.lang == Language::Python {
                colon + 1
            } else {
                line_end
            };
            let mut e = bs;
            while e < n {
                let t = &toks[e];
                let at_or_above = an.st.tok_depth[e] <= d && t.nl;
                if an.lang == Language::Python && at_or_above {
                    break;
                }
                if an.lang == Language::Ruby
                    && an.st.tok_depth[e] <= d
                    && matches!(t.text.as_str(), "end" | "else" | "elsif")
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
                let &c = an.st.matching.get(&(i + 1))?;
                (i + 2, c, c + 1)
            } else {
                let mut k = i + 1;
                while k < n && !toks[k].is("{") && !(toks[k].nl && k > i + 1) {
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
            let &m = an.st.matching.get(&k)?;
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
    "elapsed", "cost", "spent", "took", "duration", "now", "time", "current", "millis",
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

fn has_word(toks: &[Tok], set: &[&str]) -> bool {
    toks.iter().any(|t| {
        t.is_ident()
            && words::word_parts(&t.text)
                .iter()
                .any(|w| set.contains(&w.as_str()))
    })
}

/// Byte ranges of code that runs only while the holder's clock says the
/// lease is valid: `if elapsed < ttl`, `if now < deadline`, `if ttl > elapsed`.
pub fn validity_spans(an: &Analyzer, lines: &LineEnds) -> Vec<Span> {
    let toks = an.toks;
    let mut out = Vec::new();
    for i in 0..toks.len() {
        if !toks[i].is("if") || (i > 0 && (toks[i - 1].is(".") || toks[i - 1].is("?."))) {
            continue;
        }
        let Some((cs, ce, bs, be)) = if_parts(an, lines, i) else {
            continue;
        };
        if ce <= cs || ce - cs > 24 {
            continue;
        }
        let cond = &toks[cs..ce];
        // one comparison, no `||` (an alternative would run the body anyway)
        if cond
            .iter()
            .any(|t| t.is("||") || t.is("or") || t.is("&&") || t.is("and"))
        {
            continue;
        }
        let Some(p) = cond
            .iter()
            .position(|t| t.is("<") || t.is("<=") || t.is(">") || t.is(">="))
        else {
            continue;
        };
        let (left, right) = (&cond[..p], &cond[p + 1..]);
        let (small, big) = if cond[p].is("<") || cond[p].is("<=") {
            (left, right)
        } else {
            (right, left)
        };
        let ok = has_word(small, TIME_WORDS)
            && !has_word(small, LIMIT_WORDS)
            && has_word(big, LIMIT_WORDS);
        if ok {
            if let Some(sp) = span_of(toks, bs, be) {
                out.push(sp);
            }
        }
    }
    out
}
