use super::{Context, Diagnostic, Rule, RuleMeta};
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
    if !matches!(write.kind, OpKind::Set { .. }) || write.watched || write.key.is_unknown() {
        return None;
    }
    let guards = &cx.facts.absence_guards;
    let from = guards.partition_point(|g| g.write.start < write.name_span.start);
    let check = guards[from..]
        .iter()
        .take_while(|g| g.write == write.name_span)
        .find_map(|g| {
            let is_check = |c: &Op| {
                c.name_span == g.check
                    && matches!(c.kind, OpKind::Get | OpKind::Exists)
                    && !c.watched
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
        || cx
            .any_same_key(write, |o| matches!(o.kind, OpKind::Acquire { .. }))
            .is_some();
    // Used as a lock: released somewhere, or taken by a lock function. A
    // lock-named marker that only expires (a rate limit, an attempt
    // lockout, a dedup window) is not a lock (SPEC §1, §2 Lock key).
    // A release in the acquiring function counts whatever its name (SPEC §2
    // Checked release: `clearCache()` that takes the lock and deletes it).
    let released_here = cx
        .any_same_key(write, |o| {
            o.scope == write.scope && matches!(o.kind, OpKind::Release { .. } | OpKind::Eval { .. })
        })
        .is_some();
    let used = lock_fn || released_here || cx.released(write).is_some();
    (lock_key && used).then_some(check)
}

impl Rule for NonAtomicAcquire {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Vec<Diagnostic>) {
        for op in cx.ops() {
            let Some(check) = check_then_set(cx, op) else {
                continue;
            };
            let how = if check.kind == OpKind::Exists {
                "EXISTS"
            } else {
                "GET"
            };
            out.push(Diagnostic {
                span: Context::call_span(op),
                message: format!(
                    "lock `{}` is taken by checking that it is absent ({how}) and then writing it with a plain SET: two processes can both see it absent, both write it, and both believe they hold the lock",
                    op.key.display()
                ),
                label: "writes the lock without NX, after a separate check".into(),
                help: format!(
                    "check and take the lock in one command, SET with NX, a TTL and a unique token:\n{}",
                    advice::acquire(op.client)
                ),
                note: None,
                labels: vec![(
                    Context::call_span(check),
                    "the key is found absent here, in a separate round trip".into(),
                )],
            });
        }
    }
}
