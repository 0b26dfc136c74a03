//! LL008 shapes: code that turns a failed or null acquisition into
//! "acquired" — `acquired == null || acquired`, `?: true`, `?? true`,
//! `!Boolean.FALSE.equals(..)`, a catch/except/rescue around the acquire
//! that returns true, Go `if err != nil { return true }`, `.catch(() => true)`.

use super::calls::Call;
use super::lexer::{Kind, Tok};
use super::Analyzer;
use crate::facts::{FailOpen, Op, OpKind, Span, ValueExpr};
use rustc_hash::FxHashSet as HashSet;

fn is_true(t: Tok) -> bool {
    t.is("true") || t.is("True")
}
fn is_null(t: Tok) -> bool {
    matches!(t.text(), "null" | "nil" | "None" | "undefined") && t.kind() == Kind::Ident
}

pub fn find(an: &Analyzer, calls: &[Call], ops: &[Op]) -> Vec<FailOpen> {
    let toks = an.toks;
    let mut out: Vec<FailOpen> = Vec::new();
    // The starts already reported; the call at an acquire's name token is
    // found by a binary search (`calls` are sorted by name token).
    let mut starts: HashSet<usize> = HashSet::default();
    for op in ops {
        if !matches!(op.kind, OpKind::Acquire { .. }) {
            continue;
        }
        let nt = op.order as usize;
        let Some(call) = super::calls::call_at(calls, nt) else {
            continue;
        };
        let mut push = |s: usize, e: usize| {
            let last = toks.len().saturating_sub(1);
            let span = Span::new(
                toks.at(s.min(last)).start(),
                toks.at(e.max(s).min(last)).end(),
            );
            if starts.insert(span.start()) {
                out.push(FailOpen {
                    span,
                    key: op.key.clone(),
                    scope: op.scope,
                    client: op.client,
                });
            }
        };
        // 1. on the call chain: .catch(() => true), ?: true, ?? true, .orElse(true)
        let mut k = call.end();
        let mut guard = 0;
        while guard < 16
            && toks.get(k).is_some_and(|t| t.is(".") || t.is("?."))
            && toks.get(k + 2).is_some_and(|t| t.is("("))
        {
            guard += 1;
            let Some(close) = an.st.matching.get(&(k + 2)) else {
                break;
            };
            let name = toks.at(k + 1).text();
            if matches!(
                name,
                "catch"
                    | "exceptionally"
                    | "onErrorReturn"
                    | "orElse"
                    | "getOrDefault"
                    | "onErrorReturnItem"
                    | "rescue"
            ) && (k + 3..close).any(|j| {
                is_true(toks.at(j)) || (toks.at(j).kind() == Kind::Str && toks.at(j).text() == "OK")
            }) {
                push(k + 1, close);
            }
            k = close + 1;
        }
        if let (Some(a), Some(b)) = (toks.get(k), toks.get(k + 1)) {
            if (a.is("?:") || a.is("??")) && is_true(b) {
                push(k, k + 1);
            }
        }
        // 2. prefix: !Boolean.FALSE.equals(call), Boolean.FALSE != call
        let rs = call.recv_start();
        if rs >= 7
            && toks.at(rs - 7).is("!")
            && toks.at(rs - 6).is("Boolean")
            && toks.at(rs - 4).is("FALSE")
            && toks.at(rs - 2).is("equals")
        {
            push(rs - 7, rs - 1);
        }
        if rs >= 4
            && toks.at(rs - 4).is("Boolean")
            && toks.at(rs - 2).is("FALSE")
            && toks.at(rs - 1).is("!=")
        {
            push(rs - 4, rs - 1);
        }
        // 3. the result variable, tested null-tolerantly
        let scope = op.scope;
        let mut var: Option<String> = None;
        let mut errvar: Option<String> = None;
        {
            let mut j = rs;
            let mut g = 0;
            while j > 0 && g < 12 {
                j -= 1;
                g += 1;
                let t = toks.at(j);
                if t.is("=") || t.is(":=") {
                    // idents before it on the same statement
                    let mut names = Vec::new();
                    let mut q = j;
                    while q > 0 {
                        q -= 1;
                        let x = toks.at(q);
                        if x.is_ident() {
                            names.push(x.text().to_string());
                        } else if !x.is(",") && !x.is(":") {
                            break;
                        }
                        if x.nl() {
                            break;
                        }
                    }
                    names.reverse();
                    // `Boolean acquired = …` → last ident; Go `ok, err := …`
                    if let Some(e) = names
                        .iter()
                        .find(|n| *n == "err" || n.ends_with("Err") || n.ends_with("err"))
                    {
                        errvar = Some(e.clone());
                    }
                    var = names.into_iter().rfind(|n| n != "err" && n != "_");
                    break;
                }
                if t.is(";")
                    || t.is("{")
                    || t.is("}")
                    || (t.nl()
                        && !matches!(
                            an.lang,
                            crate::facts::Language::Java
                                | crate::facts::Language::CSharp
                                | crate::facts::Language::Php
                        ))
                {
                    break;
                }
            }
        }
        let limit = (call.end() + 400).min(toks.len());
        let in_scope = |j: usize| an.st.tok_scope.get(j) == Some(&scope);
        if let Some(v) = var.as_deref() {
            for j in call.end()..limit {
                if !in_scope(j) {
                    break;
                }
                if toks.at(j).text() != v || toks.at(j).kind() != Kind::Ident {
                    continue;
                }
                let a = toks.get(j + 1);
                let b = toks.get(j + 2);
                let c = toks.get(j + 3);
                let (Some(a), Some(b)) = (a, b) else { continue };
                // After `v == null ||`: `!v`, `not v`, `v == false` make the
                // test fail-closed (`if (v == null || !v) return false`).
                let negated = |k: usize| {
                    toks.get(k).is_some_and(|t| t.is("!") || t.is("not"))
                        || (toks.get(k).is_some_and(|t| t.text() == v)
                            && toks
                                .get(k + 1)
                                .is_some_and(|t| t.is("==") || t.is("===") || t.is("is"))
                            && toks
                                .get(k + 2)
                                .is_some_and(|t| t.is("false") || t.is("False")))
                };
                // v == null || …
                if (a.is("==") || a.is("==="))
                    && is_null(b)
                    && c.is_some_and(|c| c.is("||") || c.is("or"))
                    && !negated(j + 4)
                {
                    push(j, (j + 4).min(toks.len() - 1));
                    break;
                }
                if a.is("is") && b.is("None") && c.is_some_and(|c| c.is("or")) && !negated(j + 4) {
                    push(j, (j + 4).min(toks.len() - 1));
                    break;
                }
                // v != false / v != Boolean.FALSE / v ?: true / v ?? true
                if (a.is("!=") || a.is("!=="))
                    && (b.is("false")
                        || (b.is("Boolean") && toks.get(j + 4).is_some_and(|x| x.is("FALSE"))))
                {
                    push(j, j + 2);
                    break;
                }
                if (a.is("?:") || a.is("??")) && is_true(b) {
                    push(j, j + 2);
                    break;
                }
                if a.is(".") && b.is("orElse") && toks.get(j + 4).is_some_and(is_true) {
                    push(j, j + 5);
                    break;
                }
                // null == v || …
                if j >= 2
                    && is_null(toks.at(j - 2))
                    && (toks.at(j - 1).is("==") || toks.at(j - 1).is("==="))
                    && a.is("||")
                    && !negated(j + 2)
                {
                    push(j - 2, j + 1);
                    break;
                }
                // !Boolean.FALSE.equals(v)
                if j >= 6
                    && toks.at(j - 6).is("!")
                    && toks.at(j - 5).is("Boolean")
                    && toks.at(j - 3).is("FALSE")
                    && toks.at(j - 1).is("(")
                {
                    push(j - 6, j + 1);
                    break;
                }
            }
        }
        // Go: if err != nil { return true }
        if let Some(ev) = errvar.as_deref() {
            for j in call.end()..limit.min(call.end() + 80) {
                if !in_scope(j) {
                    break;
                }
                if toks.at(j).is("if")
                    && toks.get(j + 1).is_some_and(|t| t.text() == ev)
                    && toks.get(j + 2).is_some_and(|t| t.is("!="))
                    && toks.get(j + 3).is_some_and(|t| t.is("nil"))
                    && toks.get(j + 4).is_some_and(|t| t.is("{"))
                {
                    let Some(close) = an.st.matching.get(&(j + 4)) else {
                        break;
                    };
                    for q in j + 5..close {
                        if toks.at(q).is("return") && toks.get(q + 1).is_some_and(is_true) {
                            push(q, q + 1);
                        }
                    }
                    break;
                }
            }
        }
        // 4. a handler around the acquire that returns success or a handle
        let d = op.depth();
        let clike = !matches!(
            an.lang,
            crate::facts::Language::Python | crate::facts::Language::Ruby
        );
        for j in call.end()..limit {
            if !in_scope(j) {
                break;
            }
            let dj = an.st.tok_depth.at(j);
            let t = toks.at(j);
            let handler = t.is_ident()
                && matches!(t.text(), "catch" | "except" | "rescue")
                && !toks.at(j - 1).is(".");
            if handler {
                let ok_depth = if an.lang == crate::facts::Language::Ruby {
                    dj <= d
                } else {
                    dj < d
                };
                // a handler nested after the acquire (`try { sleep } catch
                // (InterruptedException e) {}` in the else branch) is not
                // around it: skip it and look further
                if !ok_depth {
                    continue;
                }
                // braces (Python: indentation) tell which try a handler belongs to
                let python = an.lang == crate::facts::Language::Python;
                if (clike && !encloses(an, j, nt)) || (python && !py_encloses(an, call.end(), j)) {
                    continue;
                }
                let (bs, be) = handler_body(an, j);
                if let Some((s, e)) = fail_open_in_handler(an, bs, be, scope) {
                    push(s, e);
                }
                // further handlers of the same try may follow
                if clike || python {
                    continue;
                }
                break;
            }
            if dj + 1 < d.max(1) && an.lang != crate::facts::Language::Ruby {
                break;
            }
        }
    }
    out
}

/// C-like: the `catch` at `at` belongs to a `try { … }` whose block holds
/// the token `inner` (walking back over earlier catches of the same try).
fn encloses(an: &Analyzer, at: usize, inner: usize) -> bool {
    let toks = an.toks;
    let mut k = at;
    for _ in 0..16 {
        if k == 0 || !toks.at(k - 1).is("}") {
            return false;
        }
        let Some(open) = an.st.matching.get(&(k - 1)) else {
            return false;
        };
        // the block before us: an earlier `catch (…) {…}` or the try block
        let mut h = open;
        // `catch (E e)`, C# `catch (E) when (cond)`
        for _ in 0..2 {
            if h >= 1 && toks.at(h - 1).is(")") {
                match an.st.matching.get(&(h - 1)) {
                    Some(o) if o < h => h = o,
                    _ => return false,
                }
            }
            if h >= 1 && toks.at(h - 1).is("when") {
                h -= 1;
            } else {
                break;
            }
        }
        if h >= 1 && toks.at(h - 1).is("catch") {
            k = h - 1;
            continue;
        }
        return open < inner && inner < k - 1;
    }
    false
}

/// Python: the `except` at `at` belongs to the try around `from`: nothing
/// between them sits at its indentation or shallower, except the header lines
/// of earlier `except` clauses of the same statement.
fn py_encloses(an: &Analyzer, from: usize, at: usize) -> bool {
    let toks = an.toks;
    let d = an.st.tok_depth.at(at);
    let mut head = from;
    for k in from..at {
        if toks.at(k).nl() {
            head = k;
        }
        if an.st.tok_depth.at(k) <= d && !toks.at(head).is("except") {
            return false;
        }
    }
    true
}

/// Inside a handler body: `return true`, Ruby `true`, `=> true`, a return of
/// a freshly made token (a fake handle), or `ok = true` where `ok` is what
/// the function returns after the handler.
fn fail_open_in_handler(an: &Analyzer, bs: usize, be: usize, scope: u32) -> Option<(usize, usize)> {
    let toks = an.toks;
    // Kotlin: `try { … } catch (e: Exception) { true }` is an expression whose
    // value is the handler's last expression
    if an.lang == crate::facts::Language::Kotlin && be > bs + 1 && toks.at(be).is("}") {
        let last = be - 1;
        if is_true(toks.at(last)) && (toks.at(last).nl() || toks.at(last - 1).is("{")) {
            return Some((last, last));
        }
    }
    for q in bs..be {
        if toks.at(q).is("return") {
            if toks.get(q + 1).is_some_and(is_true) {
                return Some((q, q + 1));
            }
            let e = super::values::expr_end(toks, an.st, an.lang, q + 1).min(be);
            if e > q + 1 && an.vals.value(q + 1, e, scope) == ValueExpr::Unique {
                return Some((q, e - 1));
            }
        }
        if an.lang == crate::facts::Language::Ruby && is_true(toks.at(q)) && toks.at(q).nl() {
            return Some((q, q));
        }
        if toks.at(q).is("=>") && toks.get(q + 1).is_some_and(is_true) {
            return Some((q + 1, q + 1));
        }
        // `ok = true` … `return ok` after the handler
        if toks.at(q).is_ident()
            && toks.get(q + 1).is_some_and(|t| t.is("="))
            && toks.get(q + 2).is_some_and(is_true)
            && q > bs
            && !toks.at(q - 1).is(".")
            && !toks.at(q - 1).is("->")
        {
            let v = toks.at(q).text();
            let mut r = be;
            while r + 1 < toks.len() && an.st.tok_scope.get(r) == Some(&scope) {
                if toks.at(r).is("return") && toks.at(r + 1).text() == v {
                    let after = toks.get(r + 2);
                    if after.is_none_or(|a| a.is(";") || a.is("}") || a.nl()) {
                        return Some((q, q + 2));
                    }
                }
                r += 1;
            }
        }
    }
    None
}

/// The token range of a catch/except/rescue body.
pub(super) fn handler_body(an: &Analyzer, at: usize) -> (usize, usize) {
    let toks = an.toks;
    let n = toks.len();
    match an.lang {
        crate::facts::Language::Python => {
            let d = an.st.tok_depth.at(at);
            let mut s = at + 1;
            while s < n && !toks.at(s).is(":") {
                s += 1;
            }
            let mut e = s + 1;
            while e < n && an.st.tok_depth.at(e) > d {
                e += 1;
            }
            (s.min(n), e.min(n))
        }
        crate::facts::Language::Ruby => {
            let d = an.st.tok_depth.at(at);
            let mut e = at + 1;
            while e < n
                && !(an.st.tok_depth.at(e) <= d
                    && toks.at(e).is_ident()
                    && matches!(toks.at(e).text(), "end" | "ensure" | "else" | "rescue"))
            {
                e += 1;
            }
            (at + 1, e.min(n))
        }
        _ => {
            let mut k = at + 1;
            if toks.get(k).is_some_and(|t| t.is("(")) {
                k = an.st.matching.get(&k).unwrap_or(k) + 1;
            }
            // C# exception filter: `catch (E e) when (cond) {`
            if toks.get(k).is_some_and(|t| t.is("when"))
                && toks.get(k + 1).is_some_and(|t| t.is("("))
            {
                k = an.st.matching.get(&(k + 1)).unwrap_or(k) + 1;
            }
            if toks.get(k).is_some_and(|t| t.is("{")) {
                let e = an.st.matching.get(&k).unwrap_or(k);
                return (k, e.max(k));
            }
            (at, at)
        }
    }
}
