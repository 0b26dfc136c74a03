//! Functions run only on failure paths (SPEC §2 "Once-only marker", through
//! calls): a function every call site of which in the project sits in a
//! failure handler (`catch`/`except`/`rescue`, `if err != nil`, a
//! failed-result branch, `.catch`) of its caller, or in another such
//! function, runs only when something failed. A delete there is a rollback,
//! exactly as if it were written in the handler itself.
//!
//! Call sites are matched by name alone (not by the link's resolution), so a
//! call of any function of that name on a success path keeps the function a
//! normal one; a function with no call site in the project is never one.

use super::{FileView, ProjectFile};
use crate::facts::{OpKind, ScopeId, SpanIndex};
use rayon::prelude::*;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// Rounds of propagation (a rollback helper called from a failure-only helper).
const ROUNDS: usize = 4;

/// Per file, the scopes that run only on failure paths.
pub fn failure_only_scopes(files: &[ProjectFile], views: &[FileView]) -> Vec<Vec<ScopeId>> {
    // the candidates: named, non-test scopes that delete something (own or
    // linked ops), and the functions that call them (a rollback helper may
    // reach the delete through a call the link could not resolve)
    let mut relevant: HashSet<&str> = HashSet::default();
    for (fi, f) in files.iter().enumerate() {
        for o in super::own_and_linked_ops(f, views.get(fi)) {
            if matches!(o.kind, OpKind::Release { .. }) {
                if let Some(s) = f.facts.scopes.get(o.scope as usize) {
                    relevant.insert(s.name.as_str());
                }
            }
        }
    }
    // the callers of those, to the propagation depth (each round reads
    // every call: the files side by side; a set, whatever the order)
    for _ in 0..ROUNDS {
        let more: Vec<&str> = files
            .par_iter()
            .flat_map_iter(|f| {
                let relevant = &relevant;
                f.facts.link.calls.iter().filter_map(move |cs| {
                    if !relevant.contains(&*cs.callee) {
                        return None;
                    }
                    let s = f.facts.scopes.get(cs.scope as usize)?;
                    (!s.name.is_empty() && !relevant.contains(s.name.as_str()))
                        .then_some(s.name.as_str())
                })
            })
            .collect();
        if more.is_empty() {
            break;
        }
        relevant.extend(more);
    }
    // (only the relevant names: most scopes of a project are not)
    let mut cand: HashMap<&str, Vec<(usize, ScopeId)>> = HashMap::default();
    for (fi, f) in files.iter().enumerate() {
        for (si, s) in f.facts.scopes.iter().enumerate() {
            if s.name.is_empty() || s.is_test || !relevant.contains(s.name.as_str()) {
                continue;
            }
            cand.entry(s.name.as_str())
                .or_default()
                .push((fi, si as ScopeId));
        }
    }
    // every call site of a candidate name: (file, caller scope, position),
    // as `u32`s (a whole project's calls of common names are held at once;
    // positions are below the engine's 256 MiB file limit)
    // (the files side by side; the sites then kept in file order, so the
    // map is the same whatever the threads)
    let sites: Vec<Vec<(&str, ScopeId, u32)>> = files
        .par_iter()
        .map(|f| {
            f.facts
                .link
                .calls
                .iter()
                .filter(|cs| {
                    cand.contains_key(&*cs.callee)
                        && !f
                            .facts
                            .scopes
                            .get(cs.scope as usize)
                            .is_some_and(|s| s.is_test)
                })
                .map(|cs| {
                    let at = cs.name_span.start().max(cs.span.start());
                    (&*cs.callee, cs.scope, at as u32)
                })
                .collect()
        })
        .collect();
    let mut calls: HashMap<&str, Vec<(u32, ScopeId, u32)>> = HashMap::default();
    for (fi, file_sites) in sites.into_iter().enumerate() {
        for (callee, scope, at) in file_sites {
            calls
                .entry(callee)
                .or_default()
                .push((fi as u32, scope, at));
        }
    }
    // each file's failure spans indexed, for the files with a site
    let mut failure_at: HashMap<u32, SpanIndex> = HashMap::default();
    for sites in calls.values() {
        for &(fi, _, _) in sites {
            failure_at
                .entry(fi)
                .or_insert_with(|| SpanIndex::new(&files[fi as usize].facts.failure_spans));
        }
    }
    let mut only: HashSet<(usize, ScopeId)> = HashSet::default();
    for _ in 0..ROUNDS {
        let mut changed = false;
        for (name, sites) in &calls {
            let Some(defs) = cand.get(name) else {
                continue;
            };
            // A definition is failure-only when every site outside its own
            // scope (a recursive call says nothing of the callers) runs on
            // a failure path. The sites counted once per name, by caller:
            // all of them, and those not (yet) on a failure path; a
            // definition found failure-only makes the sites in it failing
            // for the definitions after it, as a walk per definition would.
            let mut per_caller: HashMap<(usize, ScopeId), (usize, usize)> = HashMap::default();
            let mut open = 0;
            for &(fi, sc, at) in sites {
                let fi = fi as usize;
                let failing =
                    only.contains(&(fi, sc)) || failure_at[&(fi as u32)].contains(at as usize);
                let c = per_caller.entry((fi, sc)).or_default();
                c.0 += 1;
                if !failing {
                    c.1 += 1;
                    open += 1;
                }
            }
            for &def in defs {
                if only.contains(&def) {
                    continue;
                }
                let (own, own_open) = per_caller.get(&def).copied().unwrap_or_default();
                if sites.len() == own || open > own_open {
                    continue;
                }
                only.insert(def);
                changed = true;
                if let Some(c) = per_caller.get_mut(&def) {
                    open -= c.1;
                    c.1 = 0;
                }
            }
        }
        if !changed {
            break;
        }
    }
    let mut out: Vec<Vec<ScopeId>> = files.iter().map(|_| Vec::new()).collect();
    for (fi, sc) in only {
        out[fi].push(sc);
    }
    for v in &mut out {
        v.sort_unstable();
    }
    out
}
