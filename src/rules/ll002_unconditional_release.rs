use super::{Context, Diagnostic, Diags, Rule, RuleMeta};
use crate::advice;
use crate::facts::{Op, OpKind};
use crate::finding::Severity;

/// Flags a `DEL`/`UNLINK` of a lock key that does not check ownership.
/// See the markdown beside this file.
pub struct UnconditionalRelease;

static META: RuleMeta = RuleMeta {
    code: "LL002",
    name: "unconditional-release",
    severity: Severity::Error,
    summary: "a lock is released with a plain DEL/UNLINK that can delete another holder's lock",
    doc: include_str!("ll002_unconditional_release.md"),
};

/// A release in the acquire function right after its own set-if-absent
/// (and before or instead of a TTL), nested deeper than the acquire and
/// deeper than the EXPIRE between them: the rollback of a failed EXPIRE
/// (`if !expire(k) { del(k) }`), part of the LL003 sequence. A release beside
/// the EXPIRE (`if timeout { expire(k) } else { del(k) }`) is not a rollback.
pub(super) fn is_rollback(cx: &Context, release: &Op) -> bool {
    let mut expire_depth: Option<u32> = None;
    for prev in cx.earlier_same_key(release) {
        match prev.kind {
            OpKind::Expire => {
                expire_depth.get_or_insert(prev.depth());
            }
            OpKind::Acquire { expiry: false } => {
                return release.depth() > prev.depth()
                    && expire_depth.is_none_or(|d| release.depth() > d)
            }
            _ => return false,
        }
    }
    false
}

/// The release is preceded in its function by a GET of the same key (LL005's
/// case), with no write of the key between them: a GET followed by a
/// takeover `SET` (`old = GET k; if old < now { SET k … PX }`) or `GETSET`
/// (SPEC §2 legacy takeover) read the lock to take it, not to check who
/// owns it before the release.
pub(super) fn get_before(cx: &Context, release: &Op) -> bool {
    let Some(get) = cx.nearest_before(release, &OpKind::Get) else {
        return false;
    };
    ![
        OpKind::Acquire { expiry: false },
        OpKind::Acquire { expiry: true },
        OpKind::Set { expiry: false },
        OpKind::Set { expiry: true },
        OpKind::GetSet,
    ]
    .iter()
    .any(|k| {
        cx.nearest_before(release, k)
            .is_some_and(|w| w.order > get.order)
    })
}

impl Rule for UnconditionalRelease {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Diags) {
        for op in cx.ops() {
            if op.kind != (OpKind::Release { checked: false }) || op.watched() {
                continue;
            }
            if !cx.is_lock_key(op) || cx.deliberate_release(op) || cx.counter_or_collection(op) {
                continue;
            }
            // A once-only marker's rollback, or a release that runs only while
            // the lease is still valid (SPEC §2): not an unconditional release.
            // A lock that can never expire cannot change hands while held:
            // LL004/LL003 speak for it (SPEC §2 expirable lock).
            // A release at the end of a critical section made only of Redis
            // commands, under a TTL of a second or more, is one too (not in
            // SPEC yet: JUDGING.md, the work cannot outlive the TTL).
            // A release deferred before the acquire's result is tested runs
            // also where the acquire failed: it deletes the lock of the
            // process that got it however short the section is (the short
            // critical section speaks of a holder outliving its lease).
            let early = cx.released_before_take_test(op);
            if cx.once_only_marker(op)
                || cx.behind_validity_guard(op)
                || (early.is_none() && cx.short_critical_section(op))
                || !cx.expirable(op)
            {
                continue;
            }
            if get_before(cx, op) || is_rollback(cx, op) {
                continue;
            }
            if let Some(acquire) = early {
                out.push(Diagnostic {
                    own_flow: true,
                    span: Context::call_span(op),
                    message: format!(
                        "lock `{}` is released by code deferred before the acquire's result is tested: it runs also when this process did not get the lock, and then deletes the lock of the process that did",
                        op.key.display()
                    ),
                    label: "runs even when the lock was not taken".into(),
                    help: cx.text(&format!(
                        "register the release only after the acquire succeeded (after the `if` that returns when it failed), and release only while the key still holds your token:\n{}",
                        advice::release(op.client, cx.target)
                    )),
                    note: Some(advice::LEASE_NOTE),
                    labels: vec![(
                        Context::call_span(acquire),
                        "the lock is taken here; its result is tested only after the release was deferred".to_string(),
                    )],
                });
                continue;
            }
            let acquire = cx.acquire_of(op);
            out.push(Diagnostic {
                own_flow: false,
                span: Context::call_span(op),
                message: format!(
                    "lock `{}` is released without checking that this process still owns it: if the TTL ran out and another process took the lock, this deletes theirs",
                    op.key.display()
                ),
                label: "deletes whoever holds the lock now".into(),
                help: cx.text(&advice::release(op.client, cx.target)),
                note: Some(advice::LEASE_NOTE),
                labels: acquire
                    .map(|a| vec![(Context::call_span(a), "the lock is taken here".to_string())])
                    .unwrap_or_default(),
            });
        }
    }
}
