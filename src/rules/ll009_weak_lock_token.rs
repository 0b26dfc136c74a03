use super::ll010_legacy_takeover_lock::legacy_takeover;
use super::{Context, Diagnostic, Diags, Rule, RuleMeta};
use crate::advice;
use crate::facts::{OpKind, ValueExpr};
use crate::finding::Severity;

/// Flags a lock value that is not unique across processes. See the markdown
/// beside this file.
pub struct WeakLockToken;

static META: RuleMeta = RuleMeta {
    code: "LL009",
    name: "weak-lock-token",
    severity: Severity::Warning,
    summary:
        "a lock's token (thread id, pid, host name, time, counter) is not unique across processes",
    doc: include_str!("ll009_weak_lock_token.md"),
};

impl Rule for WeakLockToken {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Diags) {
        for op in cx.ops() {
            let (OpKind::Acquire { .. }, Some(ValueExpr::Weak(what))) = (&op.kind, op.value())
            else {
                continue;
            };
            // A value is a token only where a release or extend compares it
            // (SPEC §2); in the legacy takeover (LL010) the time is a deadline.
            if !cx.used_as_lock(op)
                || legacy_takeover(cx, op).is_some()
                || cx.once_only_marker(op)
                || cx.deadline_value(op)
            {
                continue;
            }
            let Some(compare) = cx.value_compared(op) else {
                continue;
            };
            out.push(Diagnostic {
                own_flow: false,
                span: Context::call_span(op),
                message: format!(
                    "lock `{}` uses {what} as its token: it is not unique across processes and hosts, so two holders can carry the same token and release each other's lock",
                    op.key.display()
                ),
                label: format!("{what} is not a unique token"),
                help: cx.text(&format!(
                    "use a UUID or 16+ random bytes per acquisition:\n{}",
                    advice::acquire(op.client)
                )),
                note: None,
                labels: vec![(
                    Context::call_span(compare),
                    "the value is compared as a token here".into(),
                )],
            });
        }
    }
}
