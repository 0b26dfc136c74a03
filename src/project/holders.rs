//! Functions that run in the flow of a holder (SPEC §1 "a deduplication
//! window that nobody ever deletes", §2 "Once-only marker"): a delete of a
//! key is its holder's release only when the holder runs it — in the
//! function that took the key, or in a function called after a take. A
//! function every call of which in the project comes before any take in its
//! caller (or in a caller that takes nothing) deletes the key as a reset of
//! a window or flag (an admin re-init, a session clean-up, a job-start hook):
//! the rules read that through `Context::once_only_marker`.
//!
//! A function is *held* when some call of its name in the project sits in a
//! scope after a take there — an acquire of that scope (its own or one the
//! link instantiated at a call), or a call of a function that performs an
//! acquire — or in a held function (to [`ROUNDS`] calls deep). Call sites are
//! matched by name alone, and a take of any key counts: the answer leans to
//! "held" (a lock release), never the other way.

use super::{FileView, ProjectFile};
use crate::facts::{OpKind, ScopeId};
use rayon::prelude::*;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// Rounds of propagation (a helper called by a held function).
const ROUNDS: usize = 4;

/// Per file, the scopes whose name is held somewhere in the project
/// (`true`), or called nowhere in it (`false`: no evidence either way).
pub fn held_scopes(files: &[ProjectFile], views: &[FileView]) -> Vec<Vec<(ScopeId, bool)>> {
    // the names of functions that acquire (own or linked ops), and per
    // (file, scope) the first position of an acquire
    let mut takers: HashSet<&str> = HashSet::default();
    let mut first_take: HashMap<(usize, ScopeId), usize> = HashMap::default();
    for (fi, f) in files.iter().enumerate() {
        for o in super::own_and_linked_ops(f, views.get(fi)) {
            if !matches!(o.kind, OpKind::Acquire { .. }) {
                continue;
            }
            let Some(s) = f.facts.scopes.get(o.scope as usize) else {
                continue;
            };
            if s.is_test {
                continue;
            }
            if !s.name.is_empty() {
                takers.insert(s.name.as_str());
            }
            let at = o.span.start().min(o.name_span.start());
            let e = first_take.entry((fi, o.scope)).or_insert(at);
            *e = (*e).min(at);
        }
    }
    if first_take.is_empty() {
        return files.iter().map(|_| Vec::new()).collect();
    }
    // a call of a taker counts as a take of its caller from that position
    // (not a call of a name too common or generic to say which function it
    // is: `failed.add(id)` beside a cache's `add`)
    takers.retain(|n| {
        !super::link::COMMON
            .iter()
            .any(|c| c.eq_ignore_ascii_case(n))
            && !super::summary::generic_command_name(n)
    });
    // (each pass over every call: the files side by side)
    let taker_calls: Vec<(usize, ScopeId, usize)> = files
        .par_iter()
        .enumerate()
        .flat_map_iter(|(fi, f)| {
            let takers = &takers;
            f.facts
                .link
                .calls
                .iter()
                .filter(move |cs| takers.contains(&*cs.callee) && !is_test_scope(f, cs.scope))
                .map(move |cs| (fi, cs.scope, cs.name_span.start().max(cs.span.start())))
        })
        .collect();
    for (fi, scope, at) in taker_calls {
        let e = first_take.entry((fi, scope)).or_insert(at);
        *e = (*e).min(at);
    }
    let name_of = |fi: usize, sc: ScopeId| -> &str {
        files[fi]
            .facts
            .scopes
            .get(sc as usize)
            .map_or("", |s| s.name.as_str())
    };
    let is_test = |fi: usize, sc: ScopeId| {
        files[fi]
            .facts
            .scopes
            .get(sc as usize)
            .is_some_and(|s| s.is_test)
    };
    // names the project calls at all (outside tests): a function nobody
    // calls here (a library's API, a handler a framework runs, a lone file)
    // gives no evidence that its delete is not the holder's
    // (sets: gathered per worker and merged)
    type Sets<'a> = (HashSet<&'a str>, HashSet<&'a str>);
    fn merge<'a>(mut a: Sets<'a>, b: Sets<'a>) -> Sets<'a> {
        a.0.extend(b.0);
        a.1.extend(b.1);
        a
    }
    let (called, mut held) = files
        .par_iter()
        .enumerate()
        .fold(Sets::default, |(mut called, mut held), (fi, f)| {
            for cs in &f.facts.link.calls {
                if !is_test(fi, cs.scope) {
                    called.insert(&*cs.callee);
                }
                let at = cs.name_span.start().max(cs.span.start());
                if first_take.get(&(fi, cs.scope)).is_some_and(|&t| t < at)
                    && *cs.callee != *name_of(fi, cs.scope)
                    && !is_test(fi, cs.scope)
                {
                    held.insert(&*cs.callee);
                }
            }
            (called, held)
        })
        .reduce(Sets::default, merge);
    for _ in 0..ROUNDS {
        let more: Vec<&str> = files
            .par_iter()
            .enumerate()
            .flat_map_iter(|(fi, f)| {
                let held = &held;
                f.facts.link.calls.iter().filter_map(move |cs| {
                    if held.contains(&*cs.callee) {
                        return None;
                    }
                    let caller = name_of(fi, cs.scope);
                    (!caller.is_empty() && held.contains(caller) && !is_test(fi, cs.scope))
                        .then_some(&*cs.callee)
                })
            })
            .collect();
        if more.is_empty() {
            break;
        }
        held.extend(more);
    }
    files
        .iter()
        .map(|f| {
            f.facts
                .scopes
                .iter()
                .enumerate()
                .filter(|(_, s)| {
                    !s.name.is_empty()
                        && (held.contains(s.name.as_str()) || !called.contains(s.name.as_str()))
                })
                .map(|(i, s)| (i as ScopeId, held.contains(s.name.as_str())))
                .collect()
        })
        .collect()
}

fn is_test_scope(f: &ProjectFile, sc: ScopeId) -> bool {
    f.facts.scopes.get(sc as usize).is_some_and(|s| s.is_test)
}
