//! Phase two: the project link (SPEC §2 "Project summaries", DESIGN "from
//! files to the project").
//!
//! Phase one (the front-ends, per file, in parallel) gives each file's ops
//! plus [`crate::facts::LinkFacts`]: functions with their parameters, calls
//! of non-client functions with normalised arguments, and value sources.
//! This module, once per run and language-blind:
//! - [`summary`]: what each function does to Redis in terms of its
//!   parameters;
//! - [`link`]: resolves call sites to summaries (name and arity, narrowed
//!   by file and receiver; ambiguous calls link to nothing) and instantiates
//!   the summarised ops at the call site with the caller's arguments,
//!   iterating so that helper chains resolve to [`link::ROUNDS`] calls deep;
//! - [`index`]: the project-wide key index (ops of other files on the same
//!   key), so an acquire in one file correlates with a release in another.
//!
//! The rules then see, per file, its own ops (minus those of pass-through
//! facades) plus the instantiated ops, and the foreign ops of the index
//! through `Context::with_project`.

pub mod cache;
pub mod calls;
pub mod failure;
pub mod holders;
pub mod index;
pub mod limits;
pub mod link;
pub mod listing;
pub mod root;
pub mod scan;
pub mod summary;

use crate::facts::{FileFacts, Op, ScopeId, Span};
use summary::Root;

/// One file of the project as phase one left it.
pub struct ProjectFile<'a> {
    pub display: &'a str,
    /// The file's stem (`redis_lock`): a file named like a lock is a lock type.
    pub stem: &'a str,
    pub facts: &'a FileFacts,
}

/// A file's own ops followed by the ops the link instantiated at its calls
/// (`view` is the file's view, absent before the link ran).
pub fn own_and_linked_ops<'a>(
    f: &'a ProjectFile,
    view: Option<&'a FileView>,
) -> impl Iterator<Item = &'a Op> {
    let insts = view.into_iter().flat_map(|v| v.insts.iter().map(|i| &i.op));
    f.facts.ops.iter().chain(insts)
}

/// An op instantiated at a call site.
#[derive(Clone, Debug)]
pub struct Inst {
    /// The op as the caller performs it (the call site's scope and span).
    pub op: Op,
    /// The caller's variable the value came from (for the next round).
    pub value_var: Option<String>,
    /// The client call it stands for, then each call site on the way here
    /// (not this one).
    pub chain: Vec<Root>,
    /// The function called at this call site (`RedisUtil.tryLock`).
    pub via: String,
    /// The file that function is in.
    pub via_file: usize,
    /// The op's place among the ops performed at the call site (the
    /// wrapper's order: 0 for the first).
    pub seq: u32,
}

/// In one scope, ops whose key normalises to `from` (a local bound to the
/// result of a function that returns the key it locked) act on `to`.
#[derive(Clone, Debug)]
pub struct KeyRewrite {
    pub scope: ScopeId,
    pub from: crate::facts::Parts,
    pub to: crate::facts::KeyExpr,
}

/// What the rules of one file see beyond the file's own facts.
#[derive(Clone, Debug, Default)]
pub struct FileView {
    /// Ops performed through calls of project functions.
    pub insts: Vec<Inst>,
    /// Scopes of pass-through facades: their own ops are not reported.
    pub facades: Vec<ScopeId>,
    /// Ops of other files on the keys of this file (key evidence required).
    pub foreign: Vec<Op>,
    /// Fail-open handling of a call that returns an acquire's result
    /// (LL008 at the caller of an acquire helper).
    pub fail_opens: Vec<crate::facts::FailOpen>,
    /// Scopes run only on failure paths of their callers ([`failure`]).
    pub failure_scopes: Vec<ScopeId>,
    /// Keys returned by the functions that locked them ([`link`]).
    pub key_rewrites: Vec<KeyRewrite>,
    /// Shapes of this file's lock-named keys that the project writes only
    /// with a plain `SET` and never takes (`rules::shape_writes`).
    pub plain_writes: Vec<Vec<Option<String>>>,
    /// Scopes whose function some caller in the project runs after a take
    /// ([`holders`]): a delete there may be a holder's release (`true`);
    /// or that the project never calls (`false`).
    pub held_scopes: Vec<(ScopeId, bool)>,
}

impl FileView {
    /// The instantiated ops outside facade scopes.
    pub fn visible_insts(&self) -> impl Iterator<Item = &Inst> + '_ {
        self.insts
            .iter()
            .filter(|i| !self.facades.contains(&i.op.scope))
    }

    /// Turns a file's facts into the facts the rules see: own ops (without
    /// facades) plus instantiated ops, the fail-opens and failure spans
    /// the project adds; what it replaced comes back, for
    /// [`Unlink::restore`] (`None` when the project adds nothing). The
    /// rest of the facts (the link facts, scopes, scripts) stays in place:
    /// a copy of the whole was a fifth of a facade's peak.
    pub fn link_into(&self, facts: &mut FileFacts) -> Option<Unlink> {
        if self.insts.is_empty()
            && self.facades.is_empty()
            && self.fail_opens.is_empty()
            && self.failure_scopes.is_empty()
            && self.key_rewrites.is_empty()
        {
            return None;
        }
        let undo = Unlink {
            ops: std::mem::take(&mut facts.ops),
            fail_opens: std::mem::take(&mut facts.fail_opens),
            failure_spans: facts.failure_spans.len(),
        };
        let visible = |scope: &ScopeId| !self.facades.contains(scope);
        facts.fail_opens = undo
            .fail_opens
            .iter()
            .chain(&self.fail_opens)
            .filter(|o| visible(&o.scope))
            .cloned()
            .collect();
        // A call site's order is that of the token (pattern) or of the
        // first op at or after it (Rust): its ops go just before that op.
        // The ops of one call keep the wrapper's order among themselves
        // (its SETNX before its EXPIRE), all before that op.
        const SLOTS: u32 = link::MAX_PER_CALL as u32 + 1;
        let own = undo.ops.iter().filter(|o| visible(&o.scope)).map(|o| {
            let mut op = o.clone();
            op.order = op.order.saturating_mul(SLOTS).saturating_add(SLOTS - 1);
            op
        });
        let linked = self.visible_insts().map(|i| {
            let mut op = i.op.clone();
            op.order = op
                .order
                .saturating_mul(SLOTS)
                .saturating_add(i.seq.min(SLOTS - 2));
            op
        });
        facts.ops = own.chain(linked).collect();
        if !self.key_rewrites.is_empty() {
            let to: std::collections::HashMap<(ScopeId, &[crate::facts::KeyPart]), _> = self
                .key_rewrites
                .iter()
                .map(|r| ((r.scope, r.from.as_slice()), &r.to))
                .collect();
            for o in facts.ops.iter_mut() {
                if let Some(k) = to.get(&(o.scope, o.key.parts.as_slice())) {
                    o.key = (*k).clone();
                }
            }
        }
        // an op of a function run only on failure paths runs on one
        let failing: Vec<Span> = facts
            .ops
            .iter()
            .filter(|o| self.failure_scopes.contains(&o.scope))
            .map(|o| {
                let start = o.span.start().min(o.name_span.start());
                Span::new(start, o.span.end().max(o.name_span.end()).max(start + 1))
            })
            .collect();
        facts.failure_spans.extend(failing);
        Some(undo)
    }
}

/// What [`FileView::link_into`] replaced in a file's facts.
#[derive(Debug)]
pub struct Unlink {
    ops: Vec<crate::facts::Op>,
    fail_opens: Vec<crate::facts::FailOpen>,
    failure_spans: usize,
}

impl Unlink {
    /// The file's own facts again, as they were before the link.
    pub fn restore(self, facts: &mut FileFacts) {
        facts.ops = self.ops;
        facts.fail_opens = self.fail_opens;
        facts.failure_spans.truncate(self.failure_spans);
    }
}

/// Links the project: one view per file, in the order given.
pub fn link_project(files: &[ProjectFile]) -> Vec<FileView> {
    let mut views = link::link(files);
    index::fill_foreign(files, &mut views);
    index::fill_plain_writes(files, &mut views);
    let failing = failure::failure_only_scopes(files, &views);
    for (v, scopes) in views.iter_mut().zip(failing) {
        v.failure_scopes = scopes;
    }
    let held = holders::held_scopes(files, &views);
    for (v, scopes) in views.iter_mut().zip(held) {
        v.held_scopes = scopes;
    }
    views
}

#[cfg(test)]
mod tests;
