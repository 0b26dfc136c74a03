use super::{Context, Diagnostic, Diags, Rule, RuleMeta};
use crate::advice;
use crate::facts::{Op, OpKind};
use crate::finding::Severity;

/// Flags code that turns a failed or null acquisition into "acquired".
/// See the markdown beside this file.
pub struct FailOpenAcquire;

static META: RuleMeta = RuleMeta {
    code: "LL008",
    name: "fail-open-acquire",
    severity: Severity::Warning,
    summary: "an error or null reply from the lock's acquire is treated as success, silently giving up mutual exclusion",
    doc: include_str!("ll008_fail_open_acquire.md"),
};

impl Rule for FailOpenAcquire {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Diags) {
        for f in &cx.facts.fail_opens {
            // A probe op standing for the acquire, to ask the usual key questions.
            let probe = Op::new(
                OpKind::Acquire { expiry: true },
                f.key.clone(),
                None,
                f.scope,
                f.span,
                f.span,
                f.client,
            );
            if !cx.used_as_lock(&probe) {
                continue;
            }
            out.push(Diagnostic {
                own_flow: false,
                span: f.span,
                message: format!(
                    "a failed or empty reply from acquiring lock `{}` is treated as \"acquired\": when Redis is down or times out, every process enters the critical section",
                    f.key.display()
                ),
                label: "failure counts as success here".into(),
                help: cx.text(&format!(
                    "treat an error or a null reply as \"not acquired\" (fail closed) and retry or give up:\n{}",
                    advice::acquire(f.client)
                )),
                note: None,
                labels: Vec::new(),
            });
        }
    }
}
