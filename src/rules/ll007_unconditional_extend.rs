use super::ll011_non_atomic_acquire::check_then_set;
use super::{Context, Diagnostic, Diags, Rule, RuleMeta};
use crate::advice;
use crate::facts::{Op, OpKind};
use crate::finding::Severity;

/// Flags an EXPIRE/PEXPIRE (or `SET … XX PX`, or a plain `SET … PX`) of a
/// lock key outside its acquire sequence. See the markdown beside this file.
pub struct UnconditionalExtend;

static META: RuleMeta = RuleMeta {
    code: "LL007",
    name: "unconditional-extend",
    severity: Severity::Warning,
    summary: "a lock's lease is extended (or overwritten) without checking that this process still owns it",
    doc: include_str!("ll007_unconditional_extend.md"),
};

/// An `EXPIRE` whose nearest op of the key in its function is a `GET` that
/// follows a set-if-absent of it there (`SET k me NX EX`; if that failed,
/// `GET k == me` then `EXPIRE k`): the holder's value was read back to
/// decide the extend, so the key is a lease with an owner, a lock. A
/// non-lock key read and expired (a session touched while its user matches)
/// has no set-if-absent and never gets here; the TTL set after a legacy
/// `GETSET` takeover (LL010's) follows the `GETSET`, not the `GET`.
fn renewed_after_read(cx: &Context, op: &Op) -> bool {
    op.kind == OpKind::Expire
        && cx.earlier_same_key(op).next().is_some_and(|get| {
            get.kind == OpKind::Get
                && !get.watched()
                && [
                    OpKind::Acquire { expiry: true },
                    OpKind::Acquire { expiry: false },
                ]
                .iter()
                .any(|k| cx.nearest_before(get, k).is_some())
        })
}

impl Rule for UnconditionalExtend {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Diags) {
        for op in cx.ops() {
            let overwrite = match op.kind {
                OpKind::Expire => false,
                OpKind::Set { expiry: true } => true,
                _ => continue,
            };
            // A lock: named like one, or taken with set-if-absent and released
            // somewhere. A counter or cache key that is merely created with
            // SETNX is not (SPEC §1).
            // Or renewed as one: in the function that tries to take it, its
            // holder is read back (`GET`, compared in the client) before the
            // EXPIRE — a leader lease re-armed by whoever finds its own name
            // there, in two round trips.
            // A once-only marker's delete is a rollback, not a release (SPEC
            // §2): a dedupe key set if absent, deleted only when the work
            // failed and rewritten with a TTL when it succeeded, is no lock.
            let lock = cx.is_lock_key(op)
                && !cx.counter_or_collection(op)
                && (cx.key_reads_like_lock(&op.key)
                    || (cx.released(op).is_some() && !cx.once_only_marker(op))
                    || renewed_after_read(cx, op));
            // The other path of a write that sets-if-absent on one branch
            // (`if nx { return setnx(k…) }; return set(k…)`): no acquire ran.
            let other_path = cx
                .facts
                .exclusive_of_acquire
                .binary_search_by_key(&(op.name_span.start(), op.name_span.end()), |s| {
                    (s.start(), s.end())
                })
                .is_ok();
            if op.watched() || !lock || other_path || cx.deliberate_release(op) {
                continue;
            }
            // Part of the acquire sequence: LL003 (or the acquire itself) speaks for it.
            // So is the TTL of a plain SET just written in the same function,
            // and that of a hash lock just taken with HSETNX.
            let in_acquire = cx
                .nearest_before(op, &OpKind::Acquire { expiry: false })
                .is_some()
                || cx
                    .nearest_before(op, &OpKind::Set { expiry: false })
                    .is_some()
                || cx.nearest_before(op, &OpKind::FieldAcquire).is_some();
            // A takeover inside the acquire loop: the SET follows a GET of the
            // key, which follows a failed set-if-absent of it in the same
            // function (`SET NX PX` failed; `old = GET k`; if `old` passed,
            // `SET k … PX`) — a racy acquire, not a watchdog.
            let takeover = overwrite
                && cx.nearest_before(op, &OpKind::Get).is_some_and(|get| {
                    [
                        OpKind::Acquire { expiry: true },
                        OpKind::Acquire { expiry: false },
                    ]
                    .iter()
                    .any(|k| cx.nearest_before(get, k).is_some())
                });
            // The plain SET of a check-then-set acquire: LL011 speaks for it.
            if in_acquire || takeover || check_then_set(cx, op).is_some() {
                continue;
            }
            out.push(Diagnostic {
                own_flow: false,
                span: Context::call_span(op),
                message: if overwrite {
                    format!("lock `{}` is overwritten with a plain SET and a TTL, without NX or an ownership check: it replaces whoever holds the lock now", op.key.display())
                } else {
                    format!("the lease of lock `{}` is extended without checking that this process still owns it: a watchdog like this extends the lock of whoever holds it now", op.key.display())
                },
                label: if overwrite { "overwrites the current holder".into() } else { "extends whoever holds the lock".into() },
                help: cx.text(&advice::extend(op.client)),
                note: Some(advice::LEASE_NOTE),
                labels: Vec::new(),
            });
        }
    }
}
