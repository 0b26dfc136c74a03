use super::{Context, Diagnostic, Diags, Rule, RuleMeta};
use crate::advice;
use crate::facts::{Op, OpKind};
use crate::finding::Severity;

/// Flags a set-if-absent without expiry followed by a separate EXPIRE of the
/// same key. See the markdown beside this file.
pub struct SetnxThenExpire;

static META: RuleMeta = RuleMeta {
    code: "LL003",
    name: "setnx-then-expire",
    severity: Severity::Error,
    summary: "SETNX and EXPIRE are two commands: a crash between them, or a waiter inside MULTI, breaks the TTL",
    doc: include_str!("ll003_setnx_then_expire.md"),
};

/// The first EXPIRE of the same key after `acquire` in its function, unless
/// a `GETSET` of the key comes first: an EXPIRE after the takeover's
/// `GETSET` gives that write its TTL, not the set-if-absent (SPEC §2 Legacy
/// takeover), so the acquire has no EXPIRE of its own.
pub(super) fn following_expire<'a>(cx: &Context<'a>, acquire: &'a Op) -> Option<&'a Op> {
    let expire = cx.nearest_after(acquire, &OpKind::Expire)?;
    let getset = cx
        .nearest_after(acquire, &OpKind::GetSet)
        .is_some_and(|g| g.order < expire.order);
    (!getset).then_some(expire)
}

/// The acquire's own function first reads the key and then deletes it
/// before taking it (`GET k`; a check of what it read; `DEL k`; `SETNX k`):
/// every acquirer judges the holder by the stored value and removes a stale
/// one, so a key left without TTL by a crash between the set-if-absent and
/// its EXPIRE is taken over by the next acquirer, not held forever. The
/// race of that read-then-delete is LL005's finding.
fn taken_over_before(cx: &Context, acquire: &Op) -> bool {
    let Some(get) = cx.nearest_before(acquire, &OpKind::Get) else {
        return false;
    };
    cx.earlier_same_key(acquire)
        .take_while(|o| o.order > get.order)
        .any(|o| o.kind == OpKind::Release { checked: false })
}

impl Rule for SetnxThenExpire {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Diags) {
        for op in cx.ops() {
            if op.kind != (OpKind::Acquire { expiry: false }) {
                continue;
            }
            let Some(expire) = following_expire(cx, op) else {
                continue;
            };
            // A marker or counter created with SETNX + EXPIRE is not a lock (SPEC §1).
            if !cx.used_as_lock(op) {
                continue;
            }
            // A deadline in the value that waiters read back and take over
            // once passed (SPEC §2 "Legacy takeover"): a crash before the
            // EXPIRE leaves a key the next waiter takes over, not a lock
            // held forever.
            if cx.deadline_value(op) || taken_over_before(cx, op) {
                continue;
            }
            let key = op.key.display();
            let (message, label) = if op.atomic() && expire.atomic() {
                (
                    format!(
                        "lock `{key}` is taken with SETNX and given its TTL by an EXPIRE in the same transaction: the EXPIRE runs even when SETNX failed, so every waiter refreshes the TTL of the current holder's lock, and waiters that retry keep a crashed holder's lock alive forever"
                    ),
                    "the EXPIRE in this transaction runs whether or not SETNX succeeded".to_string(),
                )
            } else {
                (
                    format!(
                        "lock `{key}` is taken with a set-if-absent and given its TTL by a separate EXPIRE: if the process dies between the two commands the lock never expires"
                    ),
                    "a crash after this command leaves the lock without TTL".to_string(),
                )
            };
            out.push(Diagnostic {
                own_flow: false,
                span: Context::call_span(op),
                message,
                label,
                help: cx.text(&format!(
                    "take the lock and its TTL in one command, with a unique token:\n{}",
                    advice::acquire(op.client)
                )),
                note: None,
                labels: vec![(
                    Context::call_span(expire),
                    "the TTL is set separately here".into(),
                )],
            });
        }
    }
}
