use super::ll010_legacy_takeover_lock::legacy_takeover;
use super::{Context, Diagnostic, Diags, Rule, RuleMeta, Want};
use crate::advice;
use crate::facts::{Op, OpKind};
use crate::finding::Severity;
use crate::words;

/// Flags a lock taken by checking that its key is absent and then writing
/// it with a plain SET. See the markdown beside this file.
pub struct NonAtomicAcquire;

static META: RuleMeta = RuleMeta {
    code: "LL011",
    name: "non-atomic-acquire",
    severity: Severity::Error,
    summary: "a lock is taken by checking that its key is absent and then writing it without NX: two processes can both take it",
    doc: include_str!("ll011_non_atomic_acquire.md"),
};

/// The check (`EXISTS`/`GET`) when `write` is the plain `SET` of a
/// check-then-set acquire of a lock key: the front-end says the write runs
/// only where that check found the key absent, in the same function (or
/// through a helper of the file that returns the check), on the same key,
/// outside `WATCH`. The key is a lock key (SPEC §2): named like a
/// lock (or a configured pattern), the key of an acquire in the file, or the
/// key written by a function named like a lock or an acquire (`tryLock(key)`,
/// `acquire(name)`); and it is used as one: released somewhere, or taken by
/// a function named like a lock or an acquire. A
/// cache read-through (`v = get(k); if v == null { set(k, compute(), ttl) }`)
/// has none of these. A lock type's other methods do not make their keys
/// lock keys (SPEC §2 Lock type correlates keys, Lock key decides what is a
/// lock): a semaphore class's version marker written once after a `GET`
/// found it absent is not a lock.
pub(crate) fn check_then_set<'a>(cx: &Context<'a>, write: &'a Op) -> Option<&'a Op> {
    if !matches!(write.kind, OpKind::Set { .. }) || write.watched() || write.key.is_unknown() {
        return None;
    }
    let guards = &cx.facts.absence_guards;
    let from = guards.partition_point(|g| g.write.start() < write.name_span.start());
    let check = guards[from..]
        .iter()
        .take_while(|g| g.write == write.name_span)
        .find_map(|g| {
            let is_check = |c: &Op| {
                c.name_span == g.check
                    && matches!(c.kind, OpKind::Get | OpKind::Exists)
                    && !c.watched()
                    && c.key.parts == write.key.parts
            };
            // in the write's function, or in a helper of the file that returns it
            cx.earlier_in_scope(write)
                .find(|c| is_check(c))
                .or_else(|| cx.any_same_key(write, |c| c.scope != write.scope && is_check(c)))
        })?;
    let scope_name = &cx.facts.scope(write.scope).name;
    let lock_fn = words::is_lock_fn(scope_name) || words::is_acquire_fn(scope_name);
    let lock_key = lock_fn
        || cx.key_reads_like_lock(&write.key)
        || cx.any_same_key_is(write, Want::Acquire).is_some();
    // Used as a lock: released somewhere, or taken by a lock function. A
    // lock-named marker that only expires (a rate limit, an attempt
    // lockout, a dedup window) is not a lock (SPEC §1, §2 Lock key).
    // A release in the acquiring function counts whatever its name (SPEC §2
    // Checked release: `clearCache()` that takes the lock and deletes it).
    // (the function's own ops on the key, not a walk of the key group; the
    // project's as `any_same_key` asks them)
    let releases_here = |o: &Op| {
        o.scope == write.scope && matches!(o.kind, OpKind::Release { .. } | OpKind::Eval { .. })
    };
    let released_here = cx
        .scope_key_ops(write, None)
        .iter()
        .any(|o| !std::ptr::eq(o, write) && releases_here(o))
        || cx.project_any(write, releases_here).is_some();
    let used = lock_fn || released_here || cx.released(write).is_some();
    (lock_key && used).then_some(check)
}

/// The `GET` when `write` is the plain `SET` of a takeover after a failed
/// set-if-absent (SPEC §3 LL011: the check may find the key's holder gone
/// rather than the key absent): in the same function, a set-if-absent of
/// the key, then a `GET` of it (the holder's deadline or id, judged stale
/// in the client), then this write without NX in a branch below that `GET`,
/// with no other write of the key between them, outside `WATCH`. Two
/// waiters that both judge the holder stale both write and both hold the
/// lock. The legacy deadline
/// variant is LL010's ([`legacy_takeover`] returns this write then). The
/// key is used as a lock (released, extended, or named like one); a status
/// marker (`SETNX k "running"`, `GET k`, `SET k "done"`) that nothing
/// releases, and a counter, are not.
fn takeover_set<'a>(cx: &Context<'a>, write: &'a Op) -> Option<&'a Op> {
    if !matches!(write.kind, OpKind::Set { .. }) || write.watched() || write.key.is_unknown() {
        return None;
    }
    let get = cx.nearest_before(write, &OpKind::Get)?;
    // the write is gated on what the GET found (nested below it); a write at
    // the GET's own level (`if setnx(k) { v = get(k); set(k, next(v)) }`)
    // updates a lock already held
    if get.watched() || write.depth() <= get.depth() {
        return None;
    }
    let acquire = [
        OpKind::Acquire { expiry: true },
        OpKind::Acquire { expiry: false },
    ]
    .iter()
    .filter_map(|k| cx.nearest_before(get, k))
    .max_by_key(|a| a.order)?;
    // nothing else writes the key between the acquire and this SET
    let between = cx
        .earlier_same_key(write)
        .take_while(|o| o.order > acquire.order)
        .any(|o| !matches!(o.kind, OpKind::Get | OpKind::Exists | OpKind::Expire));
    if between || legacy_takeover(cx, acquire).is_some_and(|t| std::ptr::eq(t, write)) {
        return None;
    }
    cx.used_as_lock(acquire).then_some(get)
}

impl Rule for NonAtomicAcquire {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Diags) {
        for op in cx.ops() {
            let (check, takeover) = match check_then_set(cx, op) {
                Some(check) => (check, false),
                None => match takeover_set(cx, op) {
                    Some(get) => (get, true),
                    None => continue,
                },
            };
            let how = if check.kind == OpKind::Exists {
                "EXISTS"
            } else {
                "GET"
            };
            let (seen, label) = if takeover {
                (
                    format!("reading its holder ({how}) after the set-if-absent failed, judging the holder gone in the client and then writing it with a plain SET: two waiters can both judge it gone"),
                    "the holder is read here and judged gone in the client, in a separate round trip",
                )
            } else {
                (
                    format!("checking that it is absent ({how}) and then writing it with a plain SET: two processes can both see it absent"),
                    "the key is found absent here, in a separate round trip",
                )
            };
            out.push(Diagnostic {
                own_flow: false,
                span: Context::call_span(op),
                message: format!(
                    "lock `{}` is taken by {seen}, both write it, and both believe they hold the lock",
                    op.key.display()
                ),
                label: "writes the lock without NX, after a separate check".into(),
                help: cx.text(&format!(
                    "check and take the lock in one command, SET with NX, a TTL and a unique token:\n{}",
                    advice::acquire(op.client)
                )),
                note: None,
                labels: vec![(Context::call_span(check), label.into())],
            });
        }
    }
}
