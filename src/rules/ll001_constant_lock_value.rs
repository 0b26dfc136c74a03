use super::{Context, Diagnostic, Diags, Rule, RuleMeta, Want};
use crate::advice;
use crate::facts::{OpKind, ValueExpr};
use crate::finding::Severity;

/// Flags an acquire that writes the same constant for every holder of a key
/// that is later released or extended. See the markdown beside this file.
pub struct ConstantLockValue;

static META: RuleMeta = RuleMeta {
    code: "LL001",
    name: "constant-lock-value",
    severity: Severity::Error,
    summary: "a lock is acquired with a constant value, so no release can tell its holder from the next one",
    doc: include_str!("ll001_constant_lock_value.md"),
};

impl Rule for ConstantLockValue {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Diags) {
        for op in cx.ops() {
            let (OpKind::Acquire { .. }, Some(ValueExpr::Constant(v))) = (&op.kind, op.value())
            else {
                continue;
            };
            let Some(user) = cx.released_or_extended(op) else {
                continue;
            };
            // Every release runs only while the lease is still valid (SPEC §3
            // LL001), or ends a short critical section (see `Context::short_critical_section`).
            // (through the key group's index: each release is judged once)
            let all_guarded = cx.any_same_key_is(op, Want::OpenRelease).is_none()
                && cx.any_same_key_is(op, Want::Release).is_some();
            if all_guarded || !cx.expirable(op) {
                continue;
            }
            let what = match user.kind {
                OpKind::Release { .. } | OpKind::Eval { .. } => "released",
                _ => "extended",
            };
            out.push(Diagnostic {
                own_flow: false,
                span: Context::call_span(op),
                message: format!(
                    "lock `{}` is acquired with the constant value {v}: every holder writes the same value, so the release cannot check who owns the lock",
                    op.key.display()
                ),
                label: format!("every holder writes {v}"),
                help: cx.text(&format!(
                    "write a token unique to this acquisition and keep it for the release:\n{}",
                    advice::acquire(op.client)
                )),
                note: None,
                labels: vec![(Context::call_span(user), format!("the same key is {what} here"))],
            });
        }
    }
}
