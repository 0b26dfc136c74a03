//! Writes guarded by an absence check ([`AbsenceGuard`]): a plain write of
//! a key that runs only where an earlier `EXISTS`/`GET` of the same key, in
//! the same function, found it absent — in the branch taken when the key
//! was absent (`if (!exists(k)) { set(k, …) }`, `v = get(k); if v is None:
//! set(k, …)`, `unless redis.exists?(k)`), in the `else` of a test for
//! presence, or after an early exit or a wait loop taken while it was
//! present (`if exists(k) { return }`, `while exists(k) { sleep }`).
//!
//! Only shapes whose meaning is certain are recognised: a test this module
//! cannot read (an unknown wrapper, a negated compound condition) guards
//! nothing.

use super::calls::Call;
use super::lexer::{Kind, Tok, Toks};
use super::Analyzer;
use crate::facts::{AbsenceGuard, KeyPart, Language, Op, OpKind};
use rustc_hash::FxHashMap as HashMap;

/// What an expression that holds the check's result says about the key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Probe {
    /// A count or boolean, truthy when the key is present (`EXISTS`).
    Count,
    /// The stored value, null/nil/None/false when the key is absent (`GET`).
    Value,
    /// The error of a Go `GET`: `redis.Nil` when the key is absent.
    ErrNil,
    /// A boolean: `Bool(true)` is true exactly when the key is absent,
    /// `Bool(false)` exactly when it is present.
    Bool(bool),
    /// The remaining time to live (`TTL`/`PTTL`, Spring `getExpire`): -2
    /// when the key is absent, -1 when it has no TTL, else the time left.
    /// Only a comparison with a number says something (-2 is truthy).
    Ttl,
}

impl Probe {
    /// The probe used as a condition: true when absent (`Some(true)`) or present.
    fn truth(self) -> Option<bool> {
        match self {
            Probe::Count | Probe::Value => Some(false),
            Probe::ErrNil | Probe::Ttl => None,
            Probe::Bool(b) => Some(b),
        }
    }
}

/// Tokens a write may stand after its check; farther apart they are not one acquire.
const MAX_WINDOW: usize = 4000;
/// Uses of a bound result that are looked at.
const MAX_USES: usize = 32;
/// How far back an enclosing condition keyword is looked for.
const MAX_COND_BACK: usize = 200;

#[derive(Clone, Copy, Debug)]
enum Region {
    /// Token range `[start, end)`.
    Range(usize, usize),
    /// From a token on, while the block the statement stood in lasts (to
    /// `end` at most: the brace that closes it).
    After {
        from: usize,
        end: usize,
        depth: u32,
        scope: u32,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CondKind {
    If,
    While,
    /// Ruby `stmt if cond` / `stmt unless cond`.
    Modifier,
}

#[derive(Clone, Copy, Debug)]
struct Cond {
    kw: usize,
    kind: CondKind,
    /// `unless`/`until`: the body runs when the condition is false.
    negated: bool,
    cs: usize,
    ce: usize,
    then: (usize, usize),
    els: Option<(usize, usize)>,
    stmt_end: usize,
}

/// Plain writes grouped by scope and normalised key.
type WriteKey<'o> = (u32, &'o [KeyPart]);

/// Every write of a plain `SET` guarded by an `EXISTS`/`GET` of its key.
pub fn find(an: &Analyzer, calls: &[Call], ops: &[Op]) -> Vec<AbsenceGuard> {
    let toks = an.toks;
    let tok_at = |start: usize| toks.first_at(start);
    let mut writes: HashMap<WriteKey, Vec<(&Op, usize)>> = HashMap::default();
    for o in ops {
        if matches!(o.kind, OpKind::Set { .. }) && !o.key.is_unknown() {
            writes
                .entry((o.scope, o.key.parts.as_slice()))
                .or_default()
                .push((o, tok_at(o.name_span.start())));
        }
    }
    if writes.is_empty() {
        return Vec::new();
    }
    let call_at: HashMap<usize, &Call> = calls.iter().map(|c| (c.name_tok(), c)).collect();
    let mut out = Vec::new();
    for op in ops {
        if !matches!(op.kind, OpKind::Get | OpKind::Exists) || op.key.is_unknown() {
            continue;
        }
        let Some(list) = writes.get(&(op.scope, op.key.parts.as_slice())) else {
            continue;
        };
        let ct = tok_at(op.name_span.start());
        let cands: Vec<&(&Op, usize)> = list
            .iter()
            .filter(|(_, wt)| *wt > ct && *wt - ct < MAX_WINDOW)
            .take(16)
            .collect();
        if cands.is_empty() {
            continue;
        }
        let Some(call) = call_at.get(&ct) else {
            continue;
        };
        let kind = match op.kind {
            OpKind::Exists if is_ttl_call(call, toks) => Probe::Ttl,
            OpKind::Exists => Probe::Count,
            _ => Probe::Value,
        };
        let regions = an.absent_regions(call, kind, op.scope);
        for (w, wt) in cands {
            if regions.iter().any(|r| an.in_region(*r, *wt)) {
                out.push(AbsenceGuard {
                    check: op.name_span,
                    write: w.name_span,
                });
            }
        }
    }
    // A same-file helper that returns the check (`isLocked()` whose body is
    // `return Boolean(await redis.exists(LOCK_KEY))`), called without
    // arguments: its call is the check, on the helper's own key.
    for (c, op, negated) in an.check_helper_calls(calls, ops, &call_at) {
        let scope = an.st.tok_scope.get(c.name_tok()).copied().unwrap_or(0);
        let Some(list) = writes.get(&(scope, op.key.parts.as_slice())) else {
            continue;
        };
        let kind = match (op.kind == OpKind::Exists, negated) {
            (true, false) => Probe::Count,
            (true, true) => Probe::Bool(true),
            (false, false) => Probe::Value,
            (false, true) => continue,
        };
        let regions = an.absent_regions(c, kind, scope);
        for (w, wt) in list {
            if *wt > c.name_tok() && regions.iter().any(|r| an.in_region(*r, *wt)) {
                out.push(AbsenceGuard {
                    check: op.name_span,
                    write: w.name_span,
                });
            }
        }
    }
    out.sort_by_key(|g| (g.write.start(), g.check.start()));
    out.dedup();
    out
}

/// The ops that run only where a set-if-absent of their key, in the same
/// function, was not reached ([`FileFacts::exclusive_of_acquire`]): every
/// such acquire before the op stands in the body of an `if`/`elif`/`else`
/// (not in its condition) that returns or throws, and the op comes after
/// that body. One acquire that falls through to the op makes it a step
/// after that acquire again.
///
/// [`FileFacts::exclusive_of_acquire`]: crate::facts::FileFacts::exclusive_of_acquire
pub fn exclusive_of_acquire(an: &Analyzer, ops: &[Op]) -> Vec<crate::facts::Span> {
    let toks = an.toks;
    let tok_at = |start: usize| toks.first_at(start);
    // per scope and key: each acquire's token and the end of its returning
    // branch (None: it falls through)
    let acquires = || {
        ops.iter()
            .filter(|a| matches!(a.kind, OpKind::Acquire { .. }) && !a.key.is_unknown())
            .map(|a| {
                let at = tok_at(a.name_span.start());
                (
                    a,
                    at,
                    (a.depth() > 0).then(|| an.returning_branch(at)).flatten(),
                )
            })
    };
    // most files have no acquire in a returning branch: then nothing is
    // kept (read twice where one is: a list of them all first took 32
    // bytes an acquire, 0.26 MB on a line of 5,000)
    if acquires().all(|(_, _, end)| end.is_none()) {
        return Vec::new();
    }
    let mut by_key: HashMap<WriteKey, Vec<(usize, Option<usize>)>> = HashMap::default();
    for (a, at, end) in acquires() {
        by_key
            .entry((a.scope, a.key.parts.as_slice()))
            .or_default()
            .push((at, end));
    }
    let acquires = by_key;
    let mut out = Vec::new();
    for o in ops {
        if matches!(o.kind, OpKind::Acquire { .. }) {
            continue;
        }
        let Some(list) = acquires.get(&(o.scope, o.key.parts.as_slice())) else {
            continue;
        };
        let ot = tok_at(o.name_span.start());
        let mut before = list.iter().filter(|(at, _)| *at < ot).peekable();
        if before.peek().is_some() && before.all(|(_, end)| end.is_some_and(|e| e <= ot)) {
            out.push(o.name_span);
        }
    }
    out.sort_by_key(|s| (s.start(), s.end()));
    out.dedup();
    out
}

fn is_null(t: Tok) -> bool {
    t.kind() == Kind::Ident && matches!(t.text(), "null" | "nil" | "None" | "undefined")
}
fn is_false(t: Tok) -> bool {
    t.kind() == Kind::Ident && matches!(t.text(), "false" | "False")
}
fn is_true(t: Tok) -> bool {
    t.kind() == Kind::Ident && matches!(t.text(), "true" | "True")
}
fn is_num(t: Tok, n: &str) -> bool {
    t.kind() == Kind::Num && t.text() == n
}
/// The check is a `TTL`/`PTTL` (Spring `getExpire`): its reply is a time
/// to live, -2 when the key is absent.
fn is_ttl_call(c: &Call, toks: Toks) -> bool {
    ["ttl", "pttl", "getexpire"]
        .iter()
        .any(|n| c.name(toks).eq_ignore_ascii_case(n))
}
fn is_connective(t: Tok) -> bool {
    t.is("&&") || t.is("||") || t.is("and") || t.is("or")
}
fn is_exit(t: Tok) -> bool {
    t.kind() == Kind::Ident
        && matches!(
            t.text(),
            "return" | "throw" | "raise" | "continue" | "break" | "exit" | "die" | "abort"
        )
}

impl Analyzer<'_> {
    fn tok(&self, i: usize) -> Option<Tok<'_>> {
        self.toks.get(i)
    }

    fn tok_is(&self, i: usize, s: &str) -> bool {
        self.toks.get(i).is_some_and(|t| t.is(s))
    }

    fn matching(&self, i: usize) -> Option<usize> {
        self.st.matching.get(&i)
    }

    /// Calls of same-file helpers that return a check of a key with a
    /// constant part: functions whose only Redis op is that `EXISTS`/`GET`,
    /// in a `return` (or an expression body), called with no arguments and
    /// no receiver other than `this`/`self`. With the check op and whether
    /// the helper negates it (`return !exists(k)`).
    fn check_helper_calls<'c, 'o, 't>(
        &self,
        calls: &'c [Call<'t>],
        ops: &'o [Op],
        call_at: &HashMap<usize, &'c Call<'t>>,
    ) -> Vec<(&'c Call<'t>, &'o Op, bool)> {
        let toks = self.toks;
        let tok_at = |start: usize| toks.first_at(start);
        let mut per_scope: HashMap<u32, Vec<&Op>> = HashMap::default();
        for o in ops {
            per_scope.entry(o.scope).or_default().push(o);
        }
        let mut helpers: HashMap<&str, (&Op, bool)> = HashMap::default();
        for (scope, list) in &per_scope {
            let [op] = list.as_slice() else { continue };
            if *scope == 0
                || !matches!(op.kind, OpKind::Get | OpKind::Exists)
                || !op.key.has_constant_part()
            {
                continue;
            }
            let Some(call) = call_at.get(&tok_at(op.name_span.start())) else {
                continue;
            };
            // a helper handing back a TTL is no yes/no answer
            if is_ttl_call(call, toks) {
                continue;
            }
            // `return [await] [!] [Boolean(] check`, or `fun f() = check`
            let mut k = call.recv_start();
            let mut negated = false;
            let mut returned = false;
            let mut guard = 0;
            while k > 0 && guard < 8 {
                guard += 1;
                k -= 1;
                let t = toks.at(k);
                if t.is("return") || t.is("=>") || (t.is("=") && self.lang == Language::Kotlin) {
                    returned = true;
                    break;
                }
                if t.is("!") || t.is("not") {
                    negated = !negated;
                } else if !(t.is("await")
                    || t.is("(")
                    || t.is("!!")
                    || matches!(t.text(), "Boolean" | "bool" | "Bool"))
                {
                    break;
                }
            }
            if !returned {
                continue;
            }
            let name = self.st.scopes.get(*scope as usize).map(|s| s.name);
            if let Some(n) = name.filter(|n| !n.is_empty()) {
                helpers.insert(n, (op, negated));
            }
        }
        // two functions of one name (overloads, two classes): neither is known
        for (i, sc) in self.st.scopes.iter().enumerate() {
            if let Some(&(op, _)) = helpers.get(sc.name) {
                if op.scope as usize != i {
                    helpers.remove(sc.name);
                }
            }
        }
        if helpers.is_empty() {
            return Vec::new();
        }
        calls
            .iter()
            .filter(|c| {
                c.args().is_empty()
                    && !self.st.decls.is_name(c.name_tok())
                    && c.recv()
                        .iter()
                        .all(|r| matches!(&**r, "this" | "self" | "$this" | "static"))
            })
            .filter_map(|c| {
                let &(op, negated) = helpers.get(c.name(toks))?;
                let scope = self.st.tok_scope.get(c.name_tok()).copied().unwrap_or(0);
                (scope != op.scope).then_some((c, op, negated))
            })
            .collect()
    }

    /// The regions of code that run only when the check `call` found its key absent.
    fn absent_regions(&self, call: &Call, kind: Probe, scope: u32) -> Vec<Region> {
        let toks = self.toks;
        let (mut s, mut e, mut kind) = (call.recv_start(), call.end(), kind);
        // `.Result()`, `.Val()`, `.get()`, `.block()`, Kotlin `!!`: the same answer.
        let mut guard = 0;
        while guard < 8 {
            guard += 1;
            if self.tok_is(e, "!!") {
                e += 1;
                continue;
            }
            if self.tok_is(e, ".")
                && self.tok(e + 1).is_some_and(|t| {
                    matches!(
                        t.text(),
                        "Result"
                            | "Val"
                            | "get"
                            | "join"
                            | "block"
                            | "await"
                            | "booleanValue"
                            | "longValue"
                            | "intValue"
                    )
                })
                && self.tok_is(e + 2, "(")
            {
                match self.matching(e + 2) {
                    Some(m) if m > e => e = m + 1,
                    _ => break,
                }
                continue;
            }
            break;
        }
        if s > 0 && toks.at(s - 1).is("await") {
            s -= 1;
        }
        // redigo: `redis.Bool(conn.Do("EXISTS", k))`, `redis.String(conn.Do("GET", k))`
        if s >= 4
            && toks.at(s - 1).is("(")
            && self.matching(s - 1) == Some(e)
            && toks.at(s - 3).is(".")
            && toks.at(s - 4).is("redis")
        {
            let conv = toks.at(s - 2).text();
            let conv_kind = match conv {
                "Bool" | "Int" | "Int64" | "Uint64" => Some(Probe::Count),
                "String" | "Bytes" => Some(Probe::Value),
                _ => None,
            };
            if let Some(k) = conv_kind {
                if kind == Probe::Count || k == Probe::Value {
                    kind = k;
                }
                s -= 4;
                e += 1;
            }
        }
        let mut out = Vec::new();
        self.regions_of_use(s, e, kind, scope, &mut out);
        // The result bound to a name, tested later.
        for (name, var_kind, from) in self.bindings_of(s, e, kind) {
            let mut uses = 0;
            let mut j = from;
            let end = (from + MAX_WINDOW).min(toks.len());
            while j < end && uses < MAX_USES {
                if self.st.tok_scope.get(j) != Some(&scope) {
                    break;
                }
                let t = toks.at(j);
                if t.kind() == Kind::Ident && t.text() == name {
                    let member = j > 0 && (toks.at(j - 1).is(".") || toks.at(j - 1).is("->"));
                    // reassigned: later tests say nothing about this check
                    if !member && self.tok_is(j + 1, "=") {
                        break;
                    }
                    if !member && !self.tok_is(j + 1, "(") {
                        uses += 1;
                        self.regions_of_use(j, j + 1, var_kind, scope, &mut out);
                    }
                }
                j += 1;
            }
        }
        out
    }

    /// Names the probe `[s, e)` is bound to (`v = get(k)`, Go `v, err :=
    /// …Result()`, `exists = get(k) == null`), with what each says and the
    /// token where their uses start.
    fn bindings_of(&self, s: usize, e: usize, kind: Probe) -> Vec<(String, Probe, usize)> {
        let toks = self.toks;
        if s < 2 || !(toks.at(s - 1).is("=") || toks.at(s - 1).is(":=")) {
            return Vec::new();
        }
        // The bound expression is the probe, or the probe compared once.
        let (mut e, mut kind) = (e, kind);
        if let Some((k, ne)) = self.compare_after(kind, e) {
            kind = k;
            e = ne;
        }
        let ends = match toks.get(e) {
            None => true,
            Some(t) => t.nl() || t.is(";") || t.is("}") || t.is(")"),
        };
        if !ends {
            return Vec::new();
        }
        let eq = s - 1;
        let name = toks.at(eq - 1);
        if !name.is_ident() || is_null(name) {
            return Vec::new();
        }
        let mut out = Vec::new();
        // Go `v, err := rdb.Get(ctx, k).Result()`
        if eq >= 3 && toks.at(eq - 2).is(",") && toks.at(eq - 3).is_ident() {
            let value = toks.at(eq - 3).text();
            if value != "_" {
                out.push((value.to_string(), kind, e));
            }
            if kind == Probe::Value && name.text() != "_" {
                out.push((name.text().to_string(), Probe::ErrNil, e));
            }
            return out;
        }
        out.push((name.text().to_string(), kind, e));
        out
    }

    /// A comparison right after `[.., e)`: the probe's new meaning and the end of the comparison.
    fn compare_after(&self, kind: Probe, e: usize) -> Option<(Probe, usize)> {
        let toks = self.toks;
        let op = toks.get(e)?;
        // member tests: `.nil?`, `.IsNull`, `.isEmpty()`, `.is_none()`, `.zero?`
        if op.is(".") || op.is("?.") {
            let m = toks.get(e + 1)?;
            let absent = match (kind, m.text()) {
                (
                    Probe::Value,
                    "nil?" | "IsNull" | "IsNullOrEmpty" | "isEmpty" | "is_none" | "blank?"
                    | "empty?" | "isBlank",
                ) => true,
                (
                    Probe::Value,
                    "HasValue" | "isPresent" | "is_some" | "present?" | "isNotEmpty" | "isNotBlank",
                ) => false,
                (Probe::Count, "zero?") => true,
                (Probe::Count, "positive?") => false,
                _ => return None,
            };
            let mut end = e + 2;
            if self.tok_is(end, "(") && self.tok_is(end + 1, ")") {
                end += 2;
            }
            return Some((Probe::Bool(absent), end));
        }
        let eqop = op.is("==") || op.is("===");
        let neop = op.is("!=") || op.is("!==");
        let rhs = toks.get(e + 1)?;
        // Python `is None` / `is not None`
        if op.is("is") {
            if rhs.is("not") && toks.get(e + 2).is_some_and(is_null) {
                return (kind == Probe::Value).then_some((Probe::Bool(false), e + 3));
            }
            if is_null(rhs) {
                return (kind == Probe::Value).then_some((Probe::Bool(true), e + 2));
            }
            return None;
        }
        // Go `err == redis.Nil`
        if kind == Probe::ErrNil && (eqop || neop) {
            if rhs.is("redis") && self.tok_is(e + 2, ".") {
                let n = toks.get(e + 3)?;
                if n.is("Nil") || n.is("ErrNil") {
                    return Some((Probe::Bool(eqop), e + 4));
                }
                return None;
            }
            if is_null(rhs) && eqop {
                return Some((Probe::Bool(false), e + 2));
            }
            return None;
        }
        let absent = match kind {
            Probe::Value if eqop || neop => {
                let empty = rhs.kind() == Kind::Str && rhs.text().is_empty();
                if is_null(rhs) || is_false(rhs) || empty {
                    eqop
                } else {
                    return None;
                }
            }
            Probe::Count => {
                let zero = is_num(rhs, "0");
                let one = is_num(rhs, "1");
                let present = (eqop && (one || is_true(rhs)))
                    || (neop && (zero || is_false(rhs)))
                    || (op.is(">") && zero)
                    || (op.is(">=") && one);
                if (eqop && (zero || is_false(rhs))) || (neop && (one || is_true(rhs))) {
                    true
                } else if present {
                    false
                } else if (op.is("<") && one) || (op.is("<=") && zero) {
                    true
                } else {
                    return None;
                }
            }
            Probe::Ttl => {
                // the number compared with: `0`, or `-1`/`-2` (two tokens)
                let (n, end) = if rhs.is("-") {
                    let d = toks.get(e + 2).filter(|t| t.kind() == Kind::Num)?;
                    (-d.text().parse::<i64>().ok()?, e + 3)
                } else if rhs.kind() == Kind::Num {
                    (rhs.text().parse::<i64>().ok()?, e + 2)
                } else {
                    return None;
                };
                // present: a TTL left (`> 0`, `>= 0`, `> -1`), or not -2;
                // absent: -2, or no TTL left (`< 0`, `<= 0`, `== -2`)
                let absent = match (op.text(), n) {
                    (">", -2..=0) | (">=", -1..=0) => false,
                    ("!=" | "!==", -2) => false,
                    ("==" | "===", -2) => true,
                    ("<", -1..=0) | ("<=", -2..=0) => true,
                    _ => return None,
                };
                return Some((Probe::Bool(absent), end));
            }
            Probe::Bool(b) if eqop || neop => {
                if is_true(rhs) {
                    if eqop {
                        b
                    } else {
                        !b
                    }
                } else if is_false(rhs) {
                    if eqop {
                        !b
                    } else {
                        b
                    }
                } else {
                    return None;
                }
            }
            _ => return None,
        };
        Some((Probe::Bool(absent), e + 2))
    }

    /// The probe `[s, e)` (a check or a name bound to it) inside a
    /// condition: the regions that run only when the key was absent.
    fn regions_of_use(&self, s: usize, e: usize, kind: Probe, scope: u32, out: &mut Vec<Region>) {
        let toks = self.toks;
        let Some(cond) = self.enclosing_cond(s) else {
            return;
        };
        if e > cond.ce {
            return;
        }
        let (mut s, mut e, mut kind) = (s, e, kind);
        let mut guard = 0;
        loop {
            guard += 1;
            if guard > 12 {
                return;
            }
            if let Some((k, ne)) = self.compare_after(kind, e) {
                if ne > cond.ce {
                    return;
                }
                kind = k;
                e = ne;
                continue;
            }
            // Yoda: `null == v`, `0 === n`
            if s >= cond.cs + 2 {
                let op = toks.at(s - 1);
                let lhs = toks.at(s - 2);
                if (op.is("==") || op.is("===") || op.is("!=") || op.is("!=="))
                    && (is_null(lhs) || is_false(lhs) || lhs.kind() == Kind::Num)
                {
                    let eqop = op.is("==") || op.is("===");
                    let absent = match kind {
                        Probe::Value if is_null(lhs) || is_false(lhs) => eqop,
                        Probe::Count if is_num(lhs, "0") || is_false(lhs) => eqop,
                        Probe::Count if is_num(lhs, "1") => !eqop,
                        _ => return,
                    };
                    kind = Probe::Bool(absent);
                    s -= 2;
                    continue;
                }
            }
            if s > cond.cs && (toks.at(s - 1).is("!") || toks.at(s - 1).is("not")) {
                let Some(b) = kind.truth() else { return };
                kind = Probe::Bool(!b);
                s -= 1;
                continue;
            }
            if s > cond.cs && toks.at(s - 1).is("(") && self.matching(s - 1) == Some(e) {
                let w = s - 2;
                let wrapper = toks.get(w).filter(|t| {
                    t.is_ident()
                        && !matches!(
                            t.text(),
                            "if" | "while" | "elif" | "not" | "and" | "or" | "unless" | "return"
                        )
                });
                match wrapper {
                    None => {
                        s -= 1;
                        e += 1;
                    }
                    Some(wt) => {
                        let (absent, ws) = match self.wrapper(wt, w, kind) {
                            Some(x) => x,
                            None => return,
                        };
                        kind = Probe::Bool(absent);
                        s = ws;
                        e += 1;
                    }
                }
                continue;
            }
            // Go `errors.Is(err, redis.Nil)`
            if kind == Probe::ErrNil
                && s >= 4
                && toks.at(s - 1).is("(")
                && toks.at(s - 2).is("Is")
                && toks.at(s - 3).is(".")
                && toks.at(s - 4).is("errors")
                && self.tok_is(e, ",")
                && self.tok_is(e + 1, "redis")
                && self.tok_is(e + 2, ".")
                && self
                    .tok(e + 3)
                    .is_some_and(|t| t.is("Nil") || t.is("ErrNil"))
                && self.tok_is(e + 4, ")")
            {
                kind = Probe::Bool(true);
                s -= 4;
                e += 5;
                continue;
            }
            break;
        }
        // The probe must be a whole operand of the condition.
        let left_ok = s == cond.cs || toks.get(s.wrapping_sub(1)).is_some_and(is_connective);
        let right_ok = e == cond.ce || toks.get(e).is_some_and(is_connective);
        if !left_ok || !right_ok {
            return;
        }
        let Some(absent) = kind.truth() else {
            return;
        };
        let level = self.st.tok_paren.get(cond.cs).unwrap_or(0);
        let (mut has_and, mut has_or) = (false, false);
        for (k, t) in toks.iter().enumerate().take(cond.ce).skip(cond.cs) {
            if self.st.tok_paren.get(k) != Some(level) || t.kind() == Kind::Str {
                continue;
            }
            has_and |= t.is("&&") || t.is("and");
            has_or |= t.is("||") || t.is("or");
        }
        // `unless c` runs its body when `c` is false: flip the probe, swap and/or.
        let (absent, has_and) = if cond.negated {
            (!absent, has_or)
        } else {
            (absent, has_and)
        };
        if absent {
            // The body runs when the key was absent (`absent && x`, or the
            // takeover shape `absent || expired`).
            out.push(Region::Range(cond.then.0, cond.then.1));
            return;
        }
        // The body runs whenever the key is present: its `else`, and what
        // follows it when it exits (or loops while present), run only when
        // the key was absent. Not when the body needs more than presence.
        if has_and {
            return;
        }
        if cond.kind != CondKind::While {
            if let Some((a, b)) = cond.els {
                out.push(Region::Range(a, b));
            }
        }
        let exits = match cond.kind {
            CondKind::While => true,
            _ => cond.els.is_none() && self.body_exits(cond.then, cond.kind),
        };
        if exits {
            out.push(Region::After {
                from: cond.stmt_end,
                end: self.block_end(cond.kw),
                depth: self.st.tok_depth.get(cond.kw).unwrap_or(0),
                scope,
            });
        }
    }

    /// A test around the probe: `isNull(v)`, `Boolean.TRUE.equals(hasKey(k))`,
    /// `empty($v)`. `w` is the wrapper's name token; returns whether it is
    /// true when the key is absent, and where the wrapper expression starts.
    fn wrapper(&self, name: Tok, w: usize, kind: Probe) -> Option<(bool, usize)> {
        let toks = self.toks;
        // start of the wrapper's receiver chain
        let mut ws = w;
        while ws >= 2 && toks.at(ws - 1).is(".") && toks.at(ws - 2).is_ident() {
            ws -= 2;
        }
        let chain: Vec<&str> = toks
            .slice(ws..=w)
            .iter()
            .filter(|t| t.is_ident())
            .map(|t| t.text())
            .collect();
        let absent = match (kind, name.text()) {
            (
                Probe::Value,
                "isNull" | "is_null" | "isEmpty" | "isBlank" | "IsNullOrEmpty"
                | "IsNullOrWhiteSpace" | "empty" | "isNullOrEmpty" | "isNullOrBlank",
            ) => true,
            (
                Probe::Value,
                "nonNull" | "isNotEmpty" | "isNotBlank" | "hasText" | "hasLength" | "isset"
                | "notEmpty" | "isNotNull",
            ) => false,
            (Probe::Count | Probe::Bool(_), "equals") if chain.contains(&"Boolean") => {
                let truth = kind.truth()?;
                if chain.contains(&"TRUE") {
                    truth
                } else if chain.contains(&"FALSE") {
                    !truth
                } else {
                    return None;
                }
            }
            (Probe::Count, "isTrue") if chain.contains(&"BooleanUtils") => false,
            (Probe::Count, "isFalse" | "isNotTrue") if chain.contains(&"BooleanUtils") => true,
            _ => return None,
        };
        Some((absent, ws))
    }

    /// The `if`/`while`/`unless` whose condition holds token `p`, innermost first.
    fn enclosing_cond(&self, p: usize) -> Option<Cond> {
        let low = p.saturating_sub(MAX_COND_BACK);
        let mut k = p;
        while k > low {
            k -= 1;
            let t = self.toks.at(k);
            if t.kind() != Kind::Ident {
                continue;
            }
            let kw = matches!(t.text(), "if" | "while" | "elif" | "elseif")
                || (self.lang == Language::Ruby
                    && matches!(t.text(), "unless" | "until" | "elsif"))
                || (self.lang == Language::Go && t.text() == "for");
            if !kw || (k > 0 && self.toks.at(k - 1).is(".")) {
                continue;
            }
            if let Some(c) = self.cond_at(k, 0) {
                if c.cs <= p && p < c.ce {
                    return Some(c);
                }
            }
        }
        None
    }

    /// The conditional statement whose keyword is token `k`.
    fn cond_at(&self, k: usize, depth: u32) -> Option<Cond> {
        if depth > 6 {
            return None;
        }
        let toks = self.toks;
        let word = toks.at(k).text();
        let kind = if matches!(word, "while" | "until" | "for") {
            CondKind::While
        } else {
            CondKind::If
        };
        let negated = matches!(word, "unless" | "until");
        match self.lang {
            Language::Python => {
                let line_start = k == 0 || toks.at(k).nl();
                if !line_start {
                    return None;
                }
                let level = self.st.tok_paren.at(k);
                let mut c = k + 1;
                while c < toks.len() && !(toks.at(c).is(":") && self.st.tok_paren.at(c) == level) {
                    if toks.at(c).nl() && self.st.tok_paren.at(c) == level {
                        return None;
                    }
                    c += 1;
                }
                if c >= toks.len() {
                    return None;
                }
                let (then, stmt_end) = self.py_body(k, c);
                let mut els = None;
                let mut stmt_end2 = stmt_end;
                if let Some(t) = toks.get(stmt_end) {
                    if self.st.tok_depth.at(stmt_end) == self.st.tok_depth.at(k)
                        && self.st.tok_scope[stmt_end] == self.st.tok_scope[k]
                    {
                        if t.is("else") && self.tok_is(stmt_end + 1, ":") {
                            let (b, end) = self.py_body(stmt_end, stmt_end + 1);
                            els = Some(b);
                            stmt_end2 = end;
                        } else if t.is("elif") {
                            if let Some(n) = self.cond_at(stmt_end, depth + 1) {
                                els = Some((stmt_end, n.stmt_end));
                                stmt_end2 = n.stmt_end;
                            }
                        }
                    }
                }
                Some(Cond {
                    kw: k,
                    kind,
                    negated,
                    cs: k + 1,
                    ce: c,
                    then,
                    els,
                    stmt_end: stmt_end2,
                })
            }
            Language::Ruby => {
                let stmt_start = k == 0
                    || toks.at(k).nl()
                    || toks.at(k - 1).is(";")
                    || toks.at(k - 1).is("=")
                    || toks.at(k - 1).is("(");
                let mut ce = k + 1;
                while ce < toks.len()
                    && !toks.at(ce).nl()
                    && !toks.at(ce).is("then")
                    && !toks.at(ce).is(";")
                    && (word == "if" || word == "unless" || !toks.at(ce).is("do"))
                {
                    ce += 1;
                }
                if ce == k + 1 {
                    return None;
                }
                if !stmt_start {
                    // modifier: the statement before the keyword, on its line
                    let mut ls = k;
                    while ls > 0 && !toks.at(ls).nl() {
                        ls -= 1;
                    }
                    return Some(Cond {
                        kw: k,
                        kind: CondKind::Modifier,
                        negated,
                        cs: k + 1,
                        ce,
                        then: (ls, k),
                        els: None,
                        stmt_end: ce,
                    });
                }
                let end = self.matching(k).filter(|&m| m > k)?;
                let inner = self.st.tok_depth.at(k) + 1;
                let body = if toks.get(ce).is_some_and(|t| t.is("then") || t.is(";")) {
                    ce + 1
                } else {
                    ce
                };
                let split = (body..end).find(|&j| {
                    (toks.at(j).is("else") || toks.at(j).is("elsif"))
                        && self.st.tok_depth.at(j) == inner
                });
                let (then, els) = match split {
                    Some(j) => ((body, j), Some((j, end))),
                    None => ((body, end), None),
                };
                Some(Cond {
                    kw: k,
                    kind,
                    negated,
                    cs: k + 1,
                    ce,
                    then,
                    els,
                    stmt_end: end + 1,
                })
            }
            Language::Go => {
                let level = self.st.tok_paren.at(k);
                let mut b = k + 1;
                let mut cs = k + 1;
                while b < toks.len() && !(toks.at(b).is("{") && self.st.tok_paren.at(b) == level) {
                    if toks.at(b).is(";") && self.st.tok_paren.at(b) == level {
                        if kind == CondKind::While {
                            return None; // three-clause `for`
                        }
                        cs = b + 1;
                    }
                    if toks.at(b).is("range") || b > k + MAX_COND_BACK {
                        return None;
                    }
                    b += 1;
                }
                let m = self.matching(b).filter(|&m| m > b)?;
                let (els, stmt_end) = self.else_of(m + 1, depth)?;
                Some(Cond {
                    kw: k,
                    kind,
                    negated,
                    cs,
                    ce: b,
                    then: (b + 1, m),
                    els,
                    stmt_end,
                })
            }
            _ => {
                if !self.tok_is(k + 1, "(") {
                    return None;
                }
                let close = self.matching(k + 1).filter(|&m| m > k + 1)?;
                let (then, after) = self.stmt_body(close + 1)?;
                let (els, stmt_end) = if kind == CondKind::While {
                    (None, after)
                } else {
                    self.else_of(after, depth)?
                };
                Some(Cond {
                    kw: k,
                    kind,
                    negated,
                    cs: k + 2,
                    ce: close,
                    then,
                    els,
                    stmt_end,
                })
            }
        }
    }

    /// A C-like statement body starting at `b`: a `{ … }` block or one
    /// statement; its inner range and the token after it.
    fn stmt_body(&self, b: usize) -> Option<((usize, usize), usize)> {
        let toks = self.toks;
        let t = toks.get(b)?;
        if t.is("{") {
            let m = self.matching(b).filter(|&m| m > b)?;
            return Some(((b + 1, m), m + 1));
        }
        let no_semicolons = matches!(
            self.lang,
            Language::Kotlin | Language::JavaScript | Language::TypeScript
        );
        let mut j = b;
        while j < toks.len() && j < b + MAX_COND_BACK {
            let x = toks.at(j);
            if j > b && no_semicolons && x.nl() {
                return Some(((b, j), j));
            }
            if x.is(";") {
                return Some(((b, j + 1), j + 1));
            }
            if x.is("}") {
                return Some(((b, j), j));
            }
            if x.is("(") || x.is("[") || x.is("{") {
                match self.matching(j) {
                    Some(m) if m > j => {
                        j = m + 1;
                        continue;
                    }
                    _ => return None,
                }
            }
            j += 1;
        }
        None
    }

    /// The `else` (or `else if` chain) at `a`, if any: its range and the end of the statement.
    #[allow(clippy::type_complexity)]
    fn else_of(&self, a: usize, depth: u32) -> Option<(Option<(usize, usize)>, usize)> {
        let toks = self.toks;
        let Some(t) = toks.get(a) else {
            return Some((None, a));
        };
        if t.is("elseif") {
            let n = self.cond_at(a, depth + 1)?;
            return Some((Some((a, n.stmt_end)), n.stmt_end));
        }
        if !t.is("else") {
            return Some((None, a));
        }
        if self.tok_is(a + 1, "if") {
            let n = self.cond_at(a + 1, depth + 1)?;
            return Some((Some((a + 1, n.stmt_end)), n.stmt_end));
        }
        let (body, end) = self.stmt_body(a + 1)?;
        Some((Some(body), end))
    }

    /// A Python block after the header colon `c` of the line at `k`: its
    /// range and the first token after it.
    fn py_body(&self, k: usize, c: usize) -> ((usize, usize), usize) {
        let toks = self.toks;
        let start = c + 1;
        if toks.get(start).is_some_and(|t| !t.nl()) {
            let mut j = start;
            while j < toks.len() && !(j > start && toks.at(j).nl()) {
                j += 1;
            }
            return ((start, j), j);
        }
        let d = self.st.tok_depth.at(k);
        let sc = self.st.tok_scope[k];
        let mut j = start;
        while j < toks.len() && self.st.tok_depth.at(j) > d && self.st.tok_scope[j] == sc {
            j += 1;
        }
        ((start, j), j)
    }

    /// The body leaves the enclosing block unconditionally: an exit
    /// statement at the body's own level (`return false`, `raise`, `throw`).
    fn body_exits(&self, (a, b): (usize, usize), kind: CondKind) -> bool {
        let toks = self.toks;
        if a >= b || b > toks.len() {
            return false;
        }
        if kind == CondKind::Modifier {
            return is_exit(toks.at(a));
        }
        let depth = self.st.tok_depth.at(a);
        let paren = self.st.tok_paren.at(a);
        (a..b).any(|j| {
            let t = toks.at(j);
            if !is_exit(t) || self.st.tok_depth.at(j) != depth || self.st.tok_paren.at(j) != paren {
                return false;
            }
            // not itself conditional: `if (x) return;`, `return if x`, `if x: return`
            let prev = j.checked_sub(1).map(|p| toks.at(p));
            let guarded_before = j > a && prev.is_some_and(|p| p.is(")") || p.is(":")) && !t.nl();
            let mut q = j + 1;
            let mut guarded_after = false;
            while q < b && !toks.at(q).nl() {
                if toks.at(q).is("if") || toks.at(q).is("unless") {
                    guarded_after = true;
                }
                q += 1;
            }
            !guarded_before && !guarded_after
        })
    }

    /// The end of the branch body around token `p` when that body returns
    /// or throws at its own level (`if x { return f(p) }`, `if x: raise`):
    /// code after it runs only where the branch was not taken. A `break` or
    /// `continue` does not count (the loop goes on after the branch ran);
    /// nor does a `p` in the condition.
    fn returning_branch(&self, p: usize) -> Option<usize> {
        let low = p.saturating_sub(MAX_COND_BACK);
        let mut k = p;
        while k > low {
            k -= 1;
            let t = self.toks.at(k);
            if t.kind() != Kind::Ident
                || !matches!(t.text(), "if" | "elif" | "elseif" | "elsif")
                || (k > 0 && self.toks.at(k - 1).is("."))
            {
                continue;
            }
            let Some(c) = self.cond_at(k, 0) else {
                continue;
            };
            if c.kind != CondKind::If || c.negated {
                continue;
            }
            let body = [Some(c.then), c.els]
                .into_iter()
                .flatten()
                .find(|(s, e)| *s <= p && p < *e);
            let Some(body) = body else {
                continue;
            };
            let leaves = self.body_exits(body, c.kind)
                && !(body.0..body.1).any(|j| {
                    self.toks.at(j).is("break")
                        || self.toks.at(j).is("continue")
                        || self.toks.at(j).is("goto")
                });
            return leaves.then_some(body.1);
        }
        None
    }

    /// For brace languages, the `}` that closes the block around token `k`
    /// (depth alone is not enough where a method was not recognised);
    /// elsewhere the end of the file.
    fn block_end(&self, k: usize) -> usize {
        let toks = self.toks;
        if matches!(self.lang, Language::Python | Language::Ruby) {
            return toks.len();
        }
        let mut j = k;
        let low = k.saturating_sub(MAX_WINDOW * 4);
        while j > low {
            j -= 1;
            let t = toks.at(j);
            if t.is("}") {
                match self.matching(j) {
                    Some(o) if o < j => j = o,
                    _ => return toks.len(),
                }
            } else if t.is("{") {
                return self.matching(j).filter(|&m| m > k).unwrap_or(toks.len());
            }
        }
        toks.len()
    }

    /// The write at token `w` runs whenever the region does: it stands at
    /// the region's own block level, and nothing on its line before it
    /// (from `from` on) makes it conditional. `if attempts >= limit {
    /// set(k, …) }` inside the absent branch is not the acquire.
    fn unconditional(&self, from: usize, w: usize, depth: u32, limit: usize) -> bool {
        let toks = self.toks;
        if self.st.tok_depth.get(w) != Some(depth) {
            return false;
        }
        let mut ls = w;
        while ls > from && !toks.at(ls).nl() {
            ls -= 1;
        }
        let start = ls.max(from);
        for (j, p) in toks.iter().enumerate().take(w).skip(start) {
            if p.kind() == Kind::Str {
                continue;
            }
            match p.text() {
                // the write inside the condition itself runs whenever the
                // condition is evaluated (`break if redis.set(…)`), as does
                // a Go init statement before it (`if err := rdb.Set(…).Err();
                // err != nil {`)
                "if" | "unless" | "elif" | "while" => {
                    let in_cond = self.cond_at(j, 0).is_some_and(|c| c.kw < w && w < c.ce);
                    if !in_cond {
                        return false;
                    }
                }
                "for" | "&&" | "||" | "?" | "and" | "or" => return false,
                _ => {}
            }
        }
        // a Ruby/Python-style modifier after it on its line: `set(…) if x`
        let level = self.st.tok_paren.get(w).unwrap_or(0);
        let mut j = w + 1;
        while j < limit.min(toks.len()) && !toks.at(j).nl() {
            let t = toks.at(j);
            if t.kind() != Kind::Str
                && matches!(t.text(), "if" | "unless")
                && self.st.tok_paren.get(j) == Some(level)
            {
                return false;
            }
            j += 1;
        }
        true
    }

    /// Token `w` lies in the region, at its own level and not under a further condition.
    fn in_region(&self, r: Region, w: usize) -> bool {
        match r {
            Region::Range(a, b) => {
                a <= w
                    && w < b
                    && self.unconditional(a, w, self.st.tok_depth.get(a).unwrap_or(0), b)
            }
            Region::After {
                from,
                end,
                depth,
                scope,
            } => {
                w >= from
                    && w < end
                    && w - from < MAX_WINDOW
                    && self.unconditional(from, w, depth, end)
                    && (from..=w).all(|j| {
                        self.st.tok_depth.get(j).is_some_and(|d| d >= depth)
                            && self.st.tok_scope.get(j) == Some(&scope)
                    })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::facts::{Language, OpKind};
    use std::path::Path;

    /// The lines of the writes that are guarded, as `(check line, write line)`.
    fn guarded(src: &str, lang: Language) -> Vec<(usize, usize)> {
        let f = super::super::extract(Path::new("x"), src, lang);
        let idx = crate::finding::LineIndex::new(src);
        f.absence_guards
            .iter()
            .map(|g| {
                (
                    idx.line_col(g.check.start()).0,
                    idx.line_col(g.write.start()).0,
                )
            })
            .collect()
    }

    #[test]
    fn absent_branch_else_of_presence_and_code_after_an_exit() {
        let java = "class A { void a(String k) {\n if (!jedis.exists(k)) {\n jedis.setex(k, 30, t);\n }\n}\n\
                    void b(String k) {\n if (jedis.exists(k)) { log(); } else {\n jedis.setex(k, 30, t);\n }\n}\n\
                    void c(String k) {\n if (jedis.exists(k)) return;\n jedis.setex(k, 30, t);\n}\n\
                    void d(String k) {\n while (jedis.exists(k)) { sleep(); }\n jedis.setex(k, 30, t);\n}\n}";
        assert_eq!(
            guarded(java, Language::Java),
            vec![(2, 3), (7, 8), (12, 13), (16, 17)]
        );
    }

    #[test]
    fn presence_branches_and_conditional_exits_guard_nothing() {
        // refresh while present; an exit that needs more than presence; a
        // nested conditional exit; a test this module cannot read.
        let java = "class A { void a(String k) {\n if (jedis.exists(k)) {\n jedis.setex(k, 30, t);\n }\n}\n\
                    void b(String k) {\n if (jedis.exists(k) && busy) return;\n jedis.setex(k, 30, t);\n}\n\
                    void c(String k) {\n if (jedis.exists(k)) { if (x) return; }\n jedis.setex(k, 30, t);\n}\n\
                    void d(String k) {\n if (check(jedis.exists(k))) return;\n jedis.setex(k, 30, t);\n}\n}";
        assert_eq!(guarded(java, Language::Java), vec![]);
    }

    #[test]
    fn bound_results_in_every_family() {
        let py = "import redis\ndef a(k):\n    v = r.get(k)\n    if v is None:\n        r.set(k, t, ex=30)\n\
                  def b(k):\n    v = r.get(k)\n    if v:\n        r.set(k, t, ex=30)\n";
        assert_eq!(guarded(py, Language::Python), vec![(3, 5)]);
        let rb = "def a(k)\n  return nil if @redis.exists?(k)\n  @redis.set(k, t, ex: 30)\nend\n\
                  def b(k)\n  v = @redis.get(k)\n  @redis.set(k, t, ex: 30) if v.nil?\nend\n";
        assert_eq!(guarded(rb, Language::Ruby), vec![(2, 3), (6, 7)]);
        let go = "package a\nfunc A(ctx context.Context, k string) {\n\
                  if n, _ := rdb.Exists(ctx, k).Result(); n == 0 {\n rdb.Set(ctx, k, t, ttl)\n }\n}\n\
                  func B(ctx context.Context, k string) {\n v, err := rdb.Get(ctx, k).Result()\n\
                  if errors.Is(err, redis.Nil) {\n rdb.Set(ctx, k, v, ttl)\n }\n}\n";
        assert_eq!(guarded(go, Language::Go), vec![(3, 4), (8, 10)]);
        let php = "<?php function a($k) {\n $v = $this->redis->get($k);\n if (empty($v)) {\n $this->redis->set($k, $t, ['ex' => 30]);\n }\n}";
        assert_eq!(guarded(php, Language::Php), vec![(2, 4)]);
    }

    #[test]
    fn a_modifier_after_the_write_makes_it_conditional_a_write_in_the_condition_is_not() {
        let rb = "require 'redis'\ndef a(k)\n  return nil if @redis.exists?(k)\n  @redis.set(k, t, ex: 30) if attempts > 3\nend\n\
                  def b(k)\n  return nil if @redis.exists?(k)\n  return true if @redis.set(k, t, ex: 30)\nend\n";
        assert_eq!(guarded(rb, Language::Ruby), vec![(7, 8)]);
    }

    #[test]
    fn the_check_is_an_exists_op() {
        let f = super::super::extract(
            Path::new("x"),
            "class A { void a() { if (redisTemplate.hasKey(\"lock:a\")) return; } }",
            Language::Java,
        );
        assert!(f.ops.iter().any(|o| o.kind == OpKind::Exists));
        // not Redis: a file system check
        let f = super::super::extract(
            Path::new("x"),
            "class A { void a() { if (Files.exists(path)) return; } }",
            Language::Java,
        );
        assert!(!f.ops.iter().any(|o| o.kind == OpKind::Exists));
    }
}
