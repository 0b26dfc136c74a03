use super::{Context, Diagnostic, Diags, Rule, RuleMeta};
use crate::advice;
use crate::facts::{Op, OpKind};
use crate::finding::Severity;

/// Flags the legacy SETNX + GETSET deadline algorithm. See the markdown
/// beside this file.
pub struct LegacyTakeoverLock;

static META: RuleMeta = RuleMeta {
    code: "LL010",
    name: "legacy-takeover-lock",
    severity: Severity::Warning,
    summary: "a lock uses the legacy SETNX + GETSET deadline takeover: clock-dependent, and a holder cannot tell it was taken over",
    doc: include_str!("ll010_legacy_takeover_lock.md"),
};

/// SPEC §2 "Legacy takeover": the `GETSET` of the same key that takes the
/// lock of `acquire` over once the deadline it read with a `GET` passed (or,
/// when the acquire writes a deadline, the `DEL` + `SETNX` or plain `SET`
/// that does the same without GETSET: the `SETNX` or `SET` is returned) —
/// later in the acquire's own function (after that `GET`, or nested below
/// the acquire, with no other write of the key between them), or
/// in another function of the file (same-key evidence rules) that reads the
/// deadline with a `GET` first. A facade whose `add` is a `SETNX` and whose
/// `replace` is a `GETSET` is no takeover.
pub(super) fn legacy_takeover<'a>(cx: &Context<'a>, acquire: &'a Op) -> Option<&'a Op> {
    if !matches!(acquire.kind, OpKind::Acquire { .. }) {
        return None;
    }
    let mut read = false;
    let mut deleted = false;
    // The variants without GETSET (`GET` the deadline; once it passed, `DEL`
    // then `SETNX` again, or a plain `SET` of a new deadline) need the
    // acquire's value to be that deadline (a time the file reads back), on a
    // key used as a lock: a "last run" time kept with SETNX/GET/SET is a
    // throttle, not a lock.
    let deadline = || cx.deadline_value(acquire) && cx.used_as_lock(acquire);
    for o in cx.later_same_key(acquire) {
        match o.kind {
            OpKind::Get => read = true,
            // the deadline was read (`GET`), or the GETSET sits in a branch
            // below the acquire (`if deadline < now { GETSET }`) — the read
            // may go through a wrapper this file does not show as a GET
            OpKind::GetSet if read || o.depth() > acquire.depth() => return Some(o),
            // a takeover under WATCH (`WATCH k; GET k; MULTI; SET k …; EXEC`)
            // lets one waiter win: the optimistic transaction is the fix
            OpKind::Release { checked: false } if read && !o.watched() && deadline() => {
                deleted = true
            }
            OpKind::Acquire { .. } if deleted => return Some(o),
            OpKind::Set { .. } if read && !deleted && !o.watched() && deadline() => return Some(o),
            OpKind::Expire | OpKind::Exists => {}
            _ => break,
        }
    }
    cx.any_same_key_of_kind(acquire, super::KindOnly::GetSet, |o| {
        o.kind == OpKind::GetSet
            && o.scope != acquire.scope
            && cx
                .earlier_in_scope(o)
                .any(|g| g.kind == OpKind::Get && cx.same_key(g, o))
    })
}

impl Rule for LegacyTakeoverLock {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Diags) {
        for op in cx.ops() {
            let Some(getset) = legacy_takeover(cx, op) else {
                continue;
            };
            let how = match getset.kind {
                OpKind::GetSet => {
                    "the legacy SETNX + GETSET deadline takeover: it relies on synchronised clocks, every waiter's GETSET rewrites the deadline"
                }
                OpKind::Acquire { .. } => {
                    "a SETNX deadline takeover (GET the deadline, DEL, SETNX again): it relies on synchronised clocks, two waiters that both see the deadline passed can both take it, one deleting the other's fresh lock"
                }
                _ => {
                    "a SETNX deadline takeover (GET the deadline, then a plain SET): it relies on synchronised clocks, two waiters that both see the deadline passed both write it and both believe they hold it"
                }
            };
            out.push(Diagnostic {
                own_flow: false,
                span: Context::call_span(op),
                message: format!(
                    "lock `{}` uses {how}, and a holder whose lock was taken over cannot tell",
                    op.key.display()
                ),
                label: "the deadline is a logical expiry that clients enforce".into(),
                help: cx.text(&format!(
                    "let Redis expire the lock: take it with one command that carries a TTL and a unique token, and release or extend it only through an atomic ownership check:\n{}",
                    advice::acquire(op.client)
                )),
                note: Some(advice::LEASE_NOTE),
                labels: vec![(
                    Context::call_span(getset),
                    "an expired deadline is taken over here".into(),
                )],
            });
        }
    }
}
