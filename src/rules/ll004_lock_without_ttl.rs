use super::ll003_setnx_then_expire::following_expire;
use super::ll010_legacy_takeover_lock::legacy_takeover;
use super::{Context, Diagnostic, Diags, Rule, RuleMeta};
use crate::advice;
use crate::facts::OpKind;
use crate::finding::Severity;

/// Flags a lock acquired with no expiry at all. See the markdown beside this file.
pub struct LockWithoutTtl;

static META: RuleMeta = RuleMeta {
    code: "LL004",
    name: "lock-without-ttl",
    severity: Severity::Error,
    summary: "a lock is acquired without a TTL: a crashed holder keeps it forever",
    doc: include_str!("ll004_lock_without_ttl.md"),
};

impl Rule for LockWithoutTtl {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Diags) {
        for op in cx.ops() {
            if op.kind != (OpKind::Acquire { expiry: false }) || following_expire(cx, op).is_some()
            {
                continue;
            }
            if !cx.used_as_lock(op) || cx.deadline_value(op) {
                continue;
            }
            // The legacy takeover expires by its deadline: LL010 speaks for it.
            if legacy_takeover(cx, op).is_some() {
                continue;
            }
            // The same function also takes the key with a TTL: a configured
            // "no expiry" branch (`if ttl > 0 { SET NX EX } else { SETNX }`).
            let with_ttl_too = cx.in_scope_same_key(op, &OpKind::Acquire { expiry: true });
            if with_ttl_too {
                continue;
            }
            out.push(Diagnostic {
                own_flow: false,
                span: Context::call_span(op),
                message: format!(
                    "lock `{}` is acquired without a TTL: if the holder crashes before releasing it, no one can ever take it again",
                    op.key.display()
                ),
                label: "no expiry".into(),
                help: cx.text(&format!(
                    "give the lock a TTL in the same command, with a unique token:\n{}",
                    advice::acquire(op.client)
                )),
                note: None,
                labels: Vec::new(),
            });
        }
    }
}
