//! Which ops a finding's fix rewrites. Language-blind like the rules: it
//! picks the ops and the call sites the front-end recorded; `advice` spells
//! the replacement in the client's own API.

use super::ll003_setnx_then_expire::following_expire;
use super::{Context, Diagnostic};
use crate::advice::{self, CallParts, FixDraft};
use crate::facts::{CallSite, Op, OpKind, Span};
use std::collections::HashMap;

/// Finds the fixes of one file's diagnostics; indexes acquires and call
/// sites once, so a file with many findings stays linear.
pub struct Fixer<'a> {
    acquires: HashMap<Span, &'a Op>,
    sites: HashMap<Span, &'a CallSite>,
}

impl<'a> Fixer<'a> {
    pub fn new(cx: &Context<'a>) -> Self {
        Fixer {
            acquires: cx
                .ops()
                .filter(|o| matches!(o.kind, OpKind::Acquire { .. }))
                .map(|o| (Context::call_span(o), o))
                .collect(),
            sites: cx.facts.call_sites.iter().map(|c| (c.span, c)).collect(),
        }
    }

    /// The fix of one diagnostic of rule `code`, if the rule and the call allow one.
    pub fn fix_for(
        &self,
        code: &str,
        cx: &Context<'a>,
        d: &Diagnostic,
        src: &str,
    ) -> Option<FixDraft> {
        if !matches!(code, "LL003" | "LL004") {
            return None;
        }
        let acquire = *self.acquires.get(&d.span)?;
        fix_for(code, cx, acquire, src, |op| self.parts(op))
    }

    fn parts(&self, op: &Op) -> Option<CallParts<'a>> {
        let site = *self.sites.get(&op.span)?;
        let start = if site.receiver.end > site.receiver.start {
            site.receiver.start
        } else {
            op.name_span.start
        };
        Some(CallParts {
            client: op.client,
            start,
            name: op.name_span,
            end: op.span.end,
            args: &site.args,
        })
    }
}

fn fix_for<'a>(
    code: &str,
    cx: &Context<'a>,
    acquire: &'a Op,
    src: &str,
    parts: impl Fn(&Op) -> Option<CallParts<'a>>,
) -> Option<FixDraft> {
    match code {
        "LL003" => {
            let expire = following_expire(cx, acquire)?;
            // Adjacent: the expire is the very next Redis command of the
            // function, on the same key, and no transaction changes the replies.
            let next = cx.later_in_scope(acquire).next();
            let adjacent = next.is_some_and(|n| std::ptr::eq(n, expire))
                && cx.same_key(acquire, expire)
                && !acquire.atomic
                && !expire.atomic;
            advice::merge_set_if_absent_and_expire(src, parts(acquire)?, parts(expire)?, adjacent)
        }
        "LL004" => advice::add_ttl(src, parts(acquire)?),
        _ => None,
    }
}
