//! The project-wide key index: for each file, the ops other files perform on
//! its keys (acquired, released, extended, incremented anywhere). Only keys
//! that carry evidence correlate across files (SPEC §2 "Same key"): a
//! constant part or a lock-like name, never a bare parameter.

use super::{FileView, ProjectFile};
use crate::facts::{KeyExpr, KeyPart, Op, OpKind, Span};
use crate::words;
use std::collections::{HashMap, HashSet};

/// Most foreign ops one file sees for one key.
const MAX_PER_KEY: usize = 8;

/// A key that names the same thing in every file: a literal with a word in
/// it or a named constant, not a field of an instance (`this.key` is a
/// different key in each class) nor a call, or a lock-like name.
fn evidence(key: &KeyExpr) -> bool {
    if key.is_unknown() {
        return false;
    }
    key.parts.iter().any(|p| match p {
        KeyPart::Lit(s) => s.chars().any(|c| c.is_alphanumeric()),
        // a named constant (`LOCK_PREFIX`, `Keys.ORDER`), not a call or a
        // member of a local (`command.getKey()`)
        KeyPart::Const(n) => {
            let last = n.rsplit(['.', ':']).next().unwrap_or(n);
            !n.starts_with("this.")
                && !n.contains('(')
                && last.chars().any(|c| c.is_ascii_uppercase())
                && !last.chars().any(|c| c.is_ascii_lowercase())
        }
        _ => false,
    }) || key.parts.iter().any(|p| match p {
        KeyPart::Lit(s) | KeyPart::Const(s) | KeyPart::Var(s) => words::reads_like_lock(s),
        KeyPart::Unknown => false,
    }) || key.idents.iter().any(|i| words::reads_like_lock(i))
}

/// A file's ops outside facade scopes, then the ops instantiated at its
/// call sites outside them.
fn visible_ops<'a>(f: &'a ProjectFile, view: &'a FileView) -> impl Iterator<Item = &'a Op> {
    f.facts
        .ops
        .iter()
        .filter(|o| !view.facades.contains(&o.scope))
        .chain(view.visible_insts().map(|i| &i.op))
}

/// Fills `views[i].foreign` with the ops of other files on file `i`'s keys.
pub fn fill_foreign(files: &[ProjectFile], views: &mut [FileView]) {
    if files.len() < 2 {
        return;
    }
    let foreign = foreign_ops(files, views);
    for (view, ops) in views.iter_mut().zip(foreign) {
        view.foreign = ops;
    }
}

/// The ops of file `fi` that other files may see: visible, on a key with
/// evidence, outside a deliberate release function, and not the TTL an
/// acquire sequence sets on its own key (no extend).
fn shared_ops<'a>(f: &'a ProjectFile, view: &'a FileView) -> impl Iterator<Item = &'a Op> + 'a {
    let visible = visible_ops(f, view).collect::<Vec<&Op>>();
    let scope_name = |s: u32| {
        f.facts
            .scopes
            .get(s as usize)
            .map(|x| x.name.as_str())
            .unwrap_or("")
    };
    let untimed: HashSet<(u32, &[KeyPart])> = visible
        .iter()
        .filter(|o| o.kind == (OpKind::Acquire { expiry: false }))
        .map(|o| (o.scope, o.key.parts.as_slice()))
        .collect();
    visible.into_iter().filter(move |op| {
        evidence(&op.key)
            && !words::is_deliberate_release_fn(scope_name(op.scope))
            && !(op.kind == OpKind::Expire
                && untimed.contains(&(op.scope, op.key.parts.as_slice())))
    })
}

/// [`fill_foreign`]'s lists, one a file. Only the ops of keys some other
/// file has are copied: a key of one file alone (every key of a one-file
/// run) costs no copy of its ops.
fn foreign_ops(files: &[ProjectFile], views: &[FileView]) -> Vec<Vec<Op>> {
    // key parts → the first file that shares it, and whether another does
    let mut sharers: HashMap<&[KeyPart], (usize, bool)> = HashMap::new();
    for (fi, f) in files.iter().enumerate() {
        for op in shared_ops(f, &views[fi]) {
            let e = sharers
                .entry(op.key.parts.as_slice())
                .or_insert((fi, false));
            e.1 |= e.0 != fi;
        }
    }
    // each file's keys with evidence, first time each
    let keys_of: Vec<Vec<&[KeyPart]>> = files
        .iter()
        .zip(views)
        .map(|(f, view)| {
            let mut done: HashSet<&[KeyPart]> = HashSet::new();
            f.facts
                .ops
                .iter()
                .chain(view.insts.iter().map(|i| &i.op))
                .filter(|o| evidence(&o.key))
                .map(|o| o.key.parts.as_slice())
                .filter(|k| done.insert(k))
                .collect()
        })
        .collect();
    // the shared keys a file other than their sharer has
    let mut wanted: HashSet<&[KeyPart]> = HashSet::new();
    for (fi, keys) in keys_of.iter().enumerate() {
        for &k in keys {
            if sharers
                .get(k)
                .is_some_and(|&(first, more)| more || first != fi)
            {
                wanted.insert(k);
            }
        }
    }
    drop(sharers);
    // key parts → (file, op), one per (file, kind)
    let mut by_key: HashMap<&[KeyPart], Vec<(usize, Op)>> = HashMap::new();
    #[allow(clippy::type_complexity)]
    let mut seen: HashSet<(
        &[KeyPart],
        usize,
        std::mem::Discriminant<OpKind>,
        bool,
        bool,
    )> = HashSet::new();
    for (fi, f) in files.iter().enumerate() {
        if wanted.is_empty() {
            break;
        }
        for op in shared_ops(f, &views[fi]) {
            let parts = op.key.parts.as_slice();
            if !wanted.contains(parts) {
                continue;
            }
            let checked = matches!(op.kind, OpKind::Release { checked: true });
            // a timed and an untimed write of one key both say how it is taken
            let timed = matches!(
                op.kind,
                OpKind::Acquire { expiry: true } | OpKind::Set { expiry: true }
            );
            if !seen.insert((parts, fi, std::mem::discriminant(&op.kind), checked, timed)) {
                continue;
            }
            let mut o = op.clone();
            o.scope = 0;
            o.order = 0;
            o.set_depth(0);
            o.span = Span::default();
            o.name_span = Span::default();
            if let OpKind::Eval { .. } = o.kind {
                o.kind = OpKind::Eval { script: None };
            }
            by_key.entry(parts).or_default().push((fi, o));
        }
    }
    keys_of
        .iter()
        .enumerate()
        .map(|(fi, keys)| {
            let mut foreign = Vec::new();
            for &k in keys {
                let Some(list) = by_key.get(k) else { continue };
                foreign.extend(
                    list.iter()
                        .filter(|(other, _)| *other != fi)
                        .take(MAX_PER_KEY)
                        .map(|(_, o)| {
                            let mut op = o.clone();
                            op.scope = crate::facts::FOREIGN_SCOPE;
                            op
                        }),
                );
            }
            foreign
        })
        .collect()
}

/// Fills `views[i].plain_writes`: the shapes of file `i`'s lock-named keys
/// (with a literal or constant part, so that they name the same thing in
/// every file) that some file writes with a plain `SET` and no file takes
/// (SPEC §2 Lock key: a lock-named key only ever written with a plain
/// `SET`, deleted or expired is not a lock).
pub fn fill_plain_writes(files: &[ProjectFile], views: &mut [FileView]) {
    let shaped = |key: &KeyExpr| {
        crate::rules::has_fixed_part(key)
            && evidence(key)
            && (key.parts.iter().any(|p| match p {
                KeyPart::Lit(s) | KeyPart::Const(s) | KeyPart::Var(s) => words::reads_like_lock(s),
                KeyPart::Unknown => false,
            }) || key.idents.iter().any(|i| words::reads_like_lock(i)))
    };
    // shape → (written with a plain SET somewhere, taken somewhere)
    let mut project: HashMap<Vec<Option<String>>, (bool, bool)> = HashMap::new();
    for (fi, f) in files.iter().enumerate() {
        let visible = visible_ops(f, &views[fi]).filter(|o| shaped(&o.key));
        for (op, plain) in crate::rules::shape_writes(f.facts, visible) {
            let e = project
                .entry(
                    crate::rules::write_shape(&op.key)
                        .iter()
                        .map(|p| p.map(str::to_string))
                        .collect(),
                )
                .or_default();
            if plain {
                e.0 = true;
            } else {
                e.1 = true;
            }
        }
    }
    project.retain(|_, (plain, taken)| *plain && !*taken);
    if project.is_empty() {
        return;
    }
    for (fi, f) in files.iter().enumerate() {
        let mut mine: Vec<Vec<Option<String>>> = Vec::new();
        let mut seen: HashSet<Vec<Option<String>>> = HashSet::new();
        for o in f
            .facts
            .ops
            .iter()
            .chain(views[fi].insts.iter().map(|i| &i.op))
        {
            if !shaped(&o.key) {
                continue;
            }
            let shape: Vec<Option<String>> = crate::rules::write_shape(&o.key)
                .iter()
                .map(|p| p.map(str::to_string))
                .collect();
            if project.contains_key(&shape) && seen.insert(shape.clone()) {
                mine.push(shape);
            }
        }
        views[fi].plain_writes = mine;
    }
}
