use super::ll002_unconditional_release::get_before;
use super::{Context, Diagnostic, Diags, Rule, RuleMeta};
use crate::advice;
use crate::facts::OpKind;
use crate::finding::Severity;

/// Flags GET, compare in the client, then DEL. See the markdown beside this file.
pub struct CheckThenDelete;

static META: RuleMeta = RuleMeta {
    code: "LL005",
    name: "check-then-delete",
    severity: Severity::Error,
    summary: "a lock is released by GET, a comparison in the client, then DEL: the lock can change hands in between",
    doc: include_str!("ll005_check_then_delete.md"),
};

impl Rule for CheckThenDelete {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Diags) {
        for op in cx.ops() {
            if op.kind != (OpKind::Release { checked: false }) || op.watched() || op.atomic() {
                continue;
            }
            if !cx.is_lock_key(op)
                || cx.deliberate_release(op)
                || cx.once_only_marker(op)
                || !get_before(cx, op)
                || !cx.expirable(op)
            {
                continue;
            }
            let get = cx.nearest_before(op, &OpKind::Get);
            out.push(Diagnostic {
                own_flow: false,
                span: Context::call_span(op),
                message: format!(
                    "lock `{}` is released by reading it, comparing in the client and deleting it in a second command: the lock can expire and be taken by another process between the GET and the DEL",
                    op.key.display()
                ),
                label: "deletes whatever the key holds by now".into(),
                help: cx.text(&format!("do the comparison and the delete in Redis, atomically — {}", advice::release(op.client, cx.target))),
                note: None,
                labels: get
                    .map(|g| vec![(Context::call_span(g), "the value is read here, in another round trip".to_string())])
                    .unwrap_or_default(),
            });
        }
    }
}
