//! Which ops a finding's fix rewrites. Language-blind like the rules: it
//! picks the ops and the call sites the front-end recorded; `advice` spells
//! the replacement in the client's own API.

use super::ll003_setnx_then_expire::following_expire;
use super::{Context, Reported};
use crate::advice::{self, CallParts, FixDraft};
use crate::facts::{CallSites, Op, OpCall, OpKind, Span};

/// Finds the fixes of one file's diagnostics; indexes acquires and call
/// sites once, so a file with many findings stays linear.
pub struct Fixer<'a> {
    /// Acquires and plain releases by the span a finding points at
    /// ([`Context::call_span`]), sorted by it.
    ops: BySpan<'a, Op>,
    /// The file's call sites, sorted by their span.
    sites: BySpan<'a, OpCall>,
    /// Where the sites' arguments are.
    call_sites: &'a CallSites,
    /// Expires and plain SETs (LL007, LL011) by the same span.
    writes: BySpan<'a, Op>,
}

/// Items of a list sorted by a span of theirs, looked up by it: their
/// indexes in the list, four bytes an item (a hash map from span to item
/// took about six times that, and a file of dense findings has as many
/// entries as ops).
struct BySpan<'a, T> {
    items: Vec<u32>,
    all: &'a [T],
    span: fn(&T) -> Span,
}

impl<'a, T> BySpan<'a, T> {
    /// The items of `all` at `indexes` (counted, then listed at that size:
    /// grown by doubling, then shrunk, the list took up to twice its room
    /// beside the rules' context at its peak).
    fn new(
        all: &'a [T],
        indexes: impl Iterator<Item = usize> + Clone,
        span: fn(&T) -> Span,
    ) -> Self {
        let fits = |&i: &usize| i < all.len() && u32::try_from(i).is_ok();
        let mut items: Vec<u32> = Vec::with_capacity(indexes.clone().filter(fits).count());
        items.extend(indexes.filter(fits).map(|i| i as u32));
        // stable: of equal spans the last given wins, as a map's insert would
        items.sort_by_key(|&i| {
            let s = span(&all[i as usize]);
            (s.start(), s.end())
        });
        BySpan { items, all, span }
    }

    fn get(&self, at: &Span) -> Option<&'a T> {
        let key = (at.start(), at.end());
        let all = self.all;
        let n = self.items.partition_point(|&i| {
            let s = (self.span)(&all[i as usize]);
            (s.start(), s.end()) <= key
        });
        let item = &all[*self.items.get(n.checked_sub(1)?)? as usize];
        ((self.span)(item) == *at).then_some(item)
    }
}

fn op_span(op: &Op) -> Span {
    Context::call_span(op)
}

fn site_span(site: &OpCall) -> Span {
    site.span()
}

impl<'a> Fixer<'a> {
    pub fn new(cx: &Context<'a>) -> Self {
        let ops: &'a [Op] = &cx.facts.ops;
        // (the rules' ops are the file's, less the cache writes: by index)
        let index = |o: &Op| cx.op_index(o);
        Fixer {
            ops: BySpan::new(
                ops,
                cx.ops()
                    .filter(|o| {
                        matches!(
                            o.kind,
                            OpKind::Acquire { .. } | OpKind::Release { checked: false }
                        )
                    })
                    .filter_map(index),
                op_span,
            ),
            sites: BySpan::new(
                cx.facts.call_sites.as_slice(),
                0..cx.facts.call_sites.len(),
                site_span,
            ),
            call_sites: &cx.facts.call_sites,
            writes: BySpan::new(
                ops,
                cx.ops()
                    .filter(|o| matches!(o.kind, OpKind::Expire | OpKind::Set { .. }))
                    .filter_map(index),
                op_span,
            ),
        }
    }

    /// The fix of one diagnostic of rule `code`, if the rule and the call allow one.
    pub fn fix_for(
        &self,
        code: &str,
        cx: &Context<'a>,
        d: &Reported,
        src: &str,
    ) -> Option<FixDraft> {
        if matches!(code, "LL007" | "LL011") {
            let op = self.writes.get(&d.span())?;
            return write_fix(code, cx, op, src, |op| self.parts(op));
        }
        if !matches!(
            code,
            "LL001" | "LL002" | "LL003" | "LL004" | "LL005" | "LL009"
        ) {
            return None;
        }
        let op = self.ops.get(&d.span())?;
        fix_for(code, cx, op, src, |op| self.parts(op))
    }

    fn parts(&self, op: &Op) -> Option<CallParts<'a>> {
        let site = self.sites.get(&op.span)?;
        let start = site
            .receiver_start()
            .unwrap_or_else(|| op.name_span.start());
        Some(CallParts {
            client: op.client,
            start,
            name: op.name_span,
            end: op.span.end(),
            args: self.call_sites.args(site),
        })
    }
}

fn fix_for<'a>(
    code: &str,
    cx: &Context<'a>,
    op: &'a Op,
    src: &str,
    parts: impl Fn(&Op) -> Option<CallParts<'a>>,
) -> Option<FixDraft> {
    if code == "LL002" {
        return release_fix(cx, op, src, &parts);
    }
    if code == "LL005" {
        return compare_release_fix(cx, op, src, &parts);
    }
    let acquire = op;
    if !matches!(acquire.kind, OpKind::Acquire { .. }) {
        return None;
    }
    match code {
        "LL003" => {
            let expire = following_expire(cx, acquire)?;
            // Adjacent: the expire is the very next Redis command of the
            // function, on the same key, and no transaction changes the replies.
            let next = cx.later_in_scope(acquire).next();
            let adjacent = next.is_some_and(|n| std::ptr::eq(n, expire))
                && cx.same_key(acquire, expire)
                && !acquire.atomic()
                && !expire.atomic();
            advice::merge_set_if_absent_and_expire(src, parts(acquire)?, parts(expire)?, adjacent)
        }
        "LL004" => advice::add_ttl(src, parts(acquire)?),
        "LL001" | "LL009" => {
            // The release that follows in the same function, on the same key.
            let release = cx.later_in_scope(acquire).find(|o| {
                matches!(o.kind, OpKind::Release { .. } | OpKind::Eval { .. })
                    && cx.same_key(acquire, o)
            })?;
            let rp = parts(release)?;
            let following = if release.kind == (OpKind::Release { checked: false }) {
                advice::FollowingRelease::Plain(rp)
            } else {
                advice::FollowingRelease::Checked(rp)
            };
            advice::fresh_token(
                src,
                parts(acquire)?,
                following,
                cx.facts.language,
                cx.target,
            )
        }
        _ => None,
    }
}

/// LL002: the plain release becomes the checked release, where the token
/// the lock was taken with is in scope: the acquire is earlier in the same
/// function, or in another method of the same type with a token the
/// methods share (a field; `advice` decides which texts are one).
fn release_fix<'a>(
    cx: &Context<'a>,
    release: &'a Op,
    src: &str,
    parts: &impl Fn(&Op) -> Option<CallParts<'a>>,
) -> Option<FixDraft> {
    if release.kind != (OpKind::Release { checked: false }) {
        return None;
    }
    let acquire = token_acquire(cx, release)?;
    let same_scope = acquire.scope == release.scope;
    advice::checked_release(
        src,
        parts(acquire)?,
        parts(release)?,
        same_scope,
        cx.facts.language,
        cx.target,
    )
}

/// LL005: the delete of a GET-compare-DEL becomes the checked release,
/// with the acquire's token when one is in scope (as for LL002), else the
/// token the read value is compared with in the same function.
fn compare_release_fix<'a>(
    cx: &Context<'a>,
    release: &'a Op,
    src: &str,
    parts: &impl Fn(&Op) -> Option<CallParts<'a>>,
) -> Option<FixDraft> {
    if release.kind != (OpKind::Release { checked: false }) {
        return None;
    }
    if let Some(fix) = release_fix(cx, release, src, parts) {
        return Some(fix);
    }
    let get = cx.nearest_before(release, &OpKind::Get)?;
    if get.scope != release.scope || !cx.same_key(get, release) {
        return None;
    }
    advice::checked_release_of_compare(
        src,
        parts(get)?,
        parts(release)?,
        cx.facts.language,
        cx.target,
    )
}

/// The acquire whose token is in scope at `op`: earlier in the same
/// function, or in another method of the same type, on the same key and
/// with a value that is not a constant.
pub(super) fn token_acquire<'a>(cx: &Context<'a>, op: &Op) -> Option<&'a Op> {
    // Only the function's own ops, or those of its type's other methods,
    // can hold the token: the ops of its scope and key (on the same key as
    // `op` by construction), and the type's acquires of the key group — not
    // a walk of the whole group per finding (quadratic for 5,000 functions
    // or classes on one key). The first in the group's order, which is the
    // facts' order: the lowest address.
    let own = cx.earlier_token_acquire(op);
    let Some(owner) = cx.facts.scope(op.scope).owner.as_deref() else {
        return own;
    };
    match (own, cx.type_token_acquire(op, owner)) {
        (Some(a), Some(b)) => Some(if (a as *const Op) < (b as *const Op) {
            a
        } else {
            b
        }),
        (a, b) => a.or(b),
    }
}

/// LL007: the bare extend becomes the checked extend (unsafe with the
/// acquire's token in scope, display-only otherwise); LL011: the plain SET
/// of a check-then-set becomes one set-if-absent (display-only).
fn write_fix<'a>(
    code: &str,
    cx: &Context<'a>,
    op: &'a Op,
    src: &str,
    parts: impl Fn(&Op) -> Option<CallParts<'a>>,
) -> Option<FixDraft> {
    match (code, &op.kind) {
        ("LL007", OpKind::Expire) => {
            let token = token_acquire(cx, op)
                .and_then(|a| Some((parts(a)?, a.scope == op.scope)))
                .and_then(|(a, same)| advice::acquire_token(src, a, same));
            advice::checked_extend(src, token, parts(op)?, cx.facts.language)
        }
        ("LL011", OpKind::Set { .. }) => advice::set_if_absent_instead(src, parts(op)?),
        _ => None,
    }
}
