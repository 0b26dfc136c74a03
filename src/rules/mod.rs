//! The rule registry and the context rules read. A rule sees only
//! [`FileFacts`] through [`Context`]; it never knows which language the
//! facts came from. One file per rule; each rule's documentation is the
//! markdown file beside it, and that text feeds `locklint explain`, the
//! SARIF `help` and the README's table.

mod ll001_constant_lock_value;
mod ll002_unconditional_release;
mod ll003_setnx_then_expire;
mod ll004_lock_without_ttl;
mod ll005_check_then_delete;
mod ll006_unsafe_release_script;
mod ll007_unconditional_extend;
mod ll008_fail_open_acquire;
mod ll009_weak_lock_token;

use crate::advice::Target;
use crate::facts::{FileFacts, KeyExpr, KeyPart, Op, OpKind, ScopeId, Span};
use crate::finding::Severity;
use crate::words;
use std::collections::HashMap;

/// A rule's identity and documentation.
#[derive(Debug)]
pub struct RuleMeta {
    pub code: &'static str,
    pub name: &'static str,
    pub severity: Severity,
    /// One line: what the rule flags.
    pub summary: &'static str,
    /// The whole documentation in markdown, sections `## What it does`,
    /// `## Why is this bad?`, `## Example`, `## Use instead`,
    /// `## What the fix does not solve`.
    pub doc: &'static str,
}

impl RuleMeta {
    /// The text of one `## ` section of the doc, trimmed.
    pub fn section(&self, title: &str) -> Option<&'static str> {
        let doc = self.doc;
        let head = format!("## {title}");
        let start = doc.find(&head)? + head.len();
        let rest = &doc[start..];
        let end = rest.find("\n## ").unwrap_or(rest.len());
        Some(rest[..end].trim())
    }
}

/// What a rule reports; the engine turns it into a [`crate::Finding`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub span: Span,
    pub message: String,
    pub label: String,
    pub help: String,
    pub note: Option<String>,
    pub labels: Vec<(Span, String)>,
}

pub trait Rule: Sync {
    fn meta(&self) -> &'static RuleMeta;
    fn check(&self, cx: &Context, out: &mut Vec<Diagnostic>);
}

/// Every rule, in code order.
pub fn all() -> &'static [&'static dyn Rule] {
    &[
        &ll001_constant_lock_value::ConstantLockValue,
        &ll002_unconditional_release::UnconditionalRelease,
        &ll003_setnx_then_expire::SetnxThenExpire,
        &ll004_lock_without_ttl::LockWithoutTtl,
        &ll005_check_then_delete::CheckThenDelete,
        &ll006_unsafe_release_script::UnsafeReleaseScript,
        &ll007_unconditional_extend::UnconditionalExtend,
        &ll008_fail_open_acquire::FailOpenAcquire,
        &ll009_weak_lock_token::WeakLockToken,
    ]
}

/// Finds a rule by code (`LL002`, any case) or name (`unconditional-release`).
pub fn lookup(code_or_name: &str) -> Option<&'static RuleMeta> {
    all()
        .iter()
        .map(|r| r.meta())
        .find(|m| m.code.eq_ignore_ascii_case(code_or_name) || m.name == code_or_name)
}

/// Runs every enabled rule and returns its diagnostics with the rule's meta.
pub fn run_all(
    cx: &Context,
    enabled: impl Fn(&str) -> bool,
) -> Vec<(&'static RuleMeta, Diagnostic)> {
    let mut out = Vec::new();
    for rule in all() {
        let meta = rule.meta();
        if !enabled(meta.code) {
            continue;
        }
        let mut diags = Vec::new();
        rule.check(cx, &mut diags);
        // One call gets at most one finding per rule.
        diags.sort_by_key(|d| (d.span.start, d.span.end));
        diags.dedup_by_key(|d| d.span.start);
        out.extend(diags.into_iter().map(|d| (meta, d)));
    }
    out
}

/// The facts of one file plus the correlation questions every rule asks.
pub struct Context<'a> {
    pub facts: &'a FileFacts,
    /// The file's stem (`redis_lock`): a file named like a lock is a lock type.
    pub file_stem: &'a str,
    pub lock_patterns: &'a [regex::Regex],
    pub target: Target,
    /// Ops grouped by their normalised key parts: only ops with equal parts
    /// can be the same key, so correlation never scans the whole file.
    by_key: HashMap<&'a [KeyPart], Vec<&'a Op>>,
    /// Ops of each scope in source order.
    by_scope: HashMap<ScopeId, Vec<&'a Op>>,
    /// Ops of other files of the project on this file's keys, grouped by key
    /// (SPEC §2 "Project summaries"); see [`Context::with_project`].
    project_by_key: HashMap<&'a [KeyPart], Vec<&'a Op>>,
}

impl<'a> Context<'a> {
    pub fn new(
        facts: &'a FileFacts,
        file_stem: &'a str,
        lock_patterns: &'a [regex::Regex],
        target: Target,
    ) -> Self {
        let mut by_key: HashMap<&'a [KeyPart], Vec<&'a Op>> = HashMap::new();
        let mut by_scope: HashMap<ScopeId, Vec<&'a Op>> = HashMap::new();
        for op in &facts.ops {
            if !op.key.is_unknown() {
                by_key.entry(op.key.parts.as_slice()).or_default().push(op);
            }
            by_scope.entry(op.scope).or_default().push(op);
        }
        for list in by_scope.values_mut() {
            list.sort_by_key(|o| o.order);
        }
        Context {
            facts,
            file_stem,
            lock_patterns,
            target,
            by_key,
            by_scope,
            project_by_key: HashMap::new(),
        }
    }

    /// Adds the ops other files perform on this file's keys (the project key
    /// index). They correlate only through keys that carry evidence (a
    /// constant part or a lock-like name); their spans are empty.
    pub fn with_project(mut self, foreign: &'a [Op]) -> Self {
        for op in foreign {
            if !op.key.is_unknown() {
                self.project_by_key
                    .entry(op.key.parts.as_slice())
                    .or_default()
                    .push(op);
            }
        }
        self
    }

    pub fn ops(&self) -> impl Iterator<Item = &'a Op> {
        self.facts.ops.iter()
    }

    /// Lock key (b) or (c): an identifier or literal of the key reads like a
    /// lock, or the key matches a configured pattern.
    pub fn key_reads_like_lock(&self, key: &KeyExpr) -> bool {
        let lit_or_name = key.parts.iter().any(|p| match p {
            KeyPart::Lit(s) | KeyPart::Const(s) | KeyPart::Var(s) => words::reads_like_lock(s),
            KeyPart::Unknown => false,
        });
        if lit_or_name || key.idents.iter().any(|i| words::reads_like_lock(i)) {
            return true;
        }
        if self.lock_patterns.is_empty() {
            return false;
        }
        let shown = key.display();
        self.lock_patterns
            .iter()
            .any(|re| re.is_match(&shown) || key.idents.iter().any(|i| re.is_match(i)))
    }

    /// A scope belongs to a lock type: its owner (class, impl, module) or the
    /// file reads like a lock.
    pub fn in_lock_type(&self, scope: ScopeId) -> bool {
        words::reads_like_lock(self.file_stem)
            || self
                .facts
                .scope(scope)
                .owner
                .as_deref()
                .is_some_and(words::reads_like_lock)
    }

    /// SPEC §2 "same key": equal normalised keys; across functions the key
    /// must carry evidence, or the functions must read like a lock pair or
    /// live in a lock type.
    pub fn same_key(&self, a: &Op, b: &Op) -> bool {
        self.same_key_at(&a.key, a.scope, &b.key, b.scope)
    }

    pub fn same_key_at(&self, a: &KeyExpr, sa: ScopeId, b: &KeyExpr, sb: ScopeId) -> bool {
        if a.is_unknown() || b.is_unknown() || a.parts != b.parts {
            return false;
        }
        if sa == sb {
            return true;
        }
        if a.has_constant_part() || self.key_reads_like_lock(a) {
            return true;
        }
        let (na, nb) = (&self.facts.scope(sa).name, &self.facts.scope(sb).name);
        let pair = |x: &str, y: &str| words::is_acquire_fn(x) && words::is_release_fn(y);
        pair(na, nb) || pair(nb, na) || (self.in_lock_type(sa) && self.in_lock_type(sb))
    }

    /// Any op of the file (other than `op` itself) matching `pred` on the same key.
    pub fn any_same_key(&self, op: &Op, pred: impl Fn(&Op) -> bool) -> Option<&'a Op> {
        let here = self.by_key.get(op.key.parts.as_slice()).and_then(|list| {
            list.iter()
                .copied()
                .find(|o| !std::ptr::eq(*o, op) && pred(o) && self.same_key(op, o))
        });
        // project: another file's op on the same key, when the key carries evidence
        here.or_else(|| {
            let list = self.project_by_key.get(op.key.parts.as_slice())?;
            if !(op.key.has_constant_part() || self.key_reads_like_lock(&op.key)) {
                return None;
            }
            list.iter().copied().find(|o| pred(o))
        })
    }

    /// SPEC §2 "lock key": the key of an acquire in this file, or reads like
    /// a lock, or matches a configured pattern.
    pub fn is_lock_key(&self, op: &Op) -> bool {
        self.key_reads_like_lock(&op.key)
            || matches!(op.kind, OpKind::Acquire { .. })
            || self
                .any_same_key(op, |o| matches!(o.kind, OpKind::Acquire { .. }))
                .is_some()
    }

    /// An EXPIRE that gives a set-if-absent of the same function its TTL
    /// (the second half of the LL003 sequence): not an extension.
    pub fn is_acquire_ttl(&self, expire: &Op) -> bool {
        expire.kind == OpKind::Expire
            && self
                .earlier_in_scope(expire)
                .any(|o| o.kind == (OpKind::Acquire { expiry: false }) && self.same_key(o, expire))
    }

    /// The key is released, extended or handed to a script somewhere in the
    /// file. The TTL an acquire sequence sets on its own key does not count,
    /// nor does a plain `SET` (an overwrite, not a use of the lock), nor a
    /// deliberate wipe (`reset`, `clear…`, `force…`): deleting every key of a
    /// feature is not evidence that one of them is a lock.
    pub fn released_or_extended(&self, op: &Op) -> Option<&'a Op> {
        self.any_same_key(op, |o| {
            !self.deliberate_scope(o.scope)
                && match o.kind {
                    OpKind::Release { .. } | OpKind::CheckedExtend | OpKind::Eval { .. } => true,
                    OpKind::Expire => !self.is_acquire_ttl(o),
                    _ => false,
                }
        })
    }

    /// The key is released (plainly, checked, or through a script) somewhere in the file.
    pub fn released(&self, op: &Op) -> Option<&'a Op> {
        self.any_same_key(op, |o| {
            !self.deliberate_scope(o.scope)
                && matches!(
                    o.kind,
                    OpKind::Release { .. } | OpKind::CheckedExtend | OpKind::Eval { .. }
                )
        })
    }

    /// A lock in the strong sense: released or extended somewhere, or named like one.
    pub fn used_as_lock(&self, op: &Op) -> bool {
        self.key_reads_like_lock(&op.key) || self.released_or_extended(op).is_some()
    }

    /// The function's name says the deletion is deliberate (`forceRelease`, `reset_all`).
    pub fn deliberate_scope(&self, scope: ScopeId) -> bool {
        words::is_deliberate_release_fn(&self.facts.scope(scope).name)
    }

    /// Ops of the same scope before `op`, nearest first.
    pub fn earlier_in_scope(&self, op: &Op) -> impl Iterator<Item = &'a Op> + '_ {
        let list = self.scope_ops(op.scope);
        let end = list.partition_point(|o| o.order < op.order);
        list[..end].iter().rev().copied()
    }

    /// Ops of the same scope after `op`, nearest first.
    pub fn later_in_scope(&self, op: &Op) -> impl Iterator<Item = &'a Op> + '_ {
        let list = self.scope_ops(op.scope);
        let start = list.partition_point(|o| o.order <= op.order);
        list[start..].iter().copied()
    }

    fn scope_ops(&self, scope: ScopeId) -> &[&'a Op] {
        self.by_scope.get(&scope).map(Vec::as_slice).unwrap_or(&[])
    }

    /// The span a finding on `op` points at: from the method name to the end of the call.
    pub fn call_span(op: &Op) -> Span {
        let start = if op.name_span == Span::default() {
            op.span.start
        } else {
            op.name_span.start
        };
        Span::new(start, op.span.end.max(start))
    }
}

#[cfg(test)]
mod tests;
