//! Hard run limits through the project (SPEC §2 "Expirable"): a lock whose
//! constant TTL is at least the hard time limit of every run that can hold
//! it never expires while held. Phase one knows the limit of the function
//! that takes the lock (a Celery task's `time_limit`) and of the file (a
//! route's `maxDuration`); this pass adds, before the link, what only the
//! project shows:
//! - constants of other files: a TTL or a `time_limit` written as a name
//!   (`settings.LOCK_TTL`) takes the value the project's module constants
//!   give that name (`FileFacts::int_consts`), when they give it one value;
//! - the limits of the callers: a function without a limit of its own whose
//!   every call in the project (by name, test code aside, up to
//!   [`super::link::ROUNDS`] callers deep) is made by a function with a
//!   known limit runs at most as long as the longest of those limits
//!   (a `FileFacts::task_limits` entry of its own). A call outside any
//!   function, a caller without a limit or no caller at all: nothing.

use super::calls::CallNames;
use crate::facts::{FileFacts, ScopeId};
use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, HashMap};

/// Most calls of one name weighed for a function's callers' limits.
const MAX_CALLERS: usize = 64;

/// Most names the chase for callers' limits follows at once
/// (`engine::read_callers`): past it the callers fan out (`setup`,
/// `install`, `handle` in a large project or vendored code) and the chase
/// stops, since reading every file that calls such a name costs seconds and
/// hundreds of megabytes for a limit that every one of those callers would
/// have to share.
pub const MAX_CHAIN: usize = MAX_CALLERS;

/// The names of the functions whose callers' limits this pass weighs, for
/// the files the Redis prefilter rejected that call them to be read too
/// (`engine::read_callers`; a task that only calls a lock function has no
/// Redis word): the functions of `files` with a timed acquire (a constant
/// or a name) and no limit of their own, and those without a limit of their
/// own that call one of `chain` (the names of the round before).
pub fn caller_names<'a>(
    files: impl IntoIterator<Item = (&'a FileFacts, Option<&'a CallNames>)>,
    chain: &BTreeSet<String>,
) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (f, packed) in files {
        // only Python (a Celery task's `time_limit`) and JavaScript or
        // TypeScript (a route's `maxDuration`) give a run a limit, and the
        // link joins calls within one language family: elsewhere no caller
        // can have one, and chasing callers there made a large project read
        // thousands of files for nothing
        if !has_limits(f.language) {
            continue;
        }
        let own = OwnLimits::of(f);
        let named: std::collections::HashSet<ScopeId> =
            f.task_limit_names.iter().map(|(t, _)| *t).collect();
        let has_limit = |s: ScopeId| own.get(s).is_some() || named.contains(&s);
        let at = if f.ttls.is_empty() {
            HashMap::new()
        } else {
            op_scopes(f)
        };
        let mut scopes: Vec<ScopeId> = f
            .ttls
            .iter()
            .filter(|t| t.ms.is_some() || t.sym.is_some())
            .filter_map(|t| at.get(&t.name_start).copied())
            .collect();
        if !chain.is_empty() {
            let calls: Box<dyn Iterator<Item = (&str, u32)>> = match packed {
                Some(names) => Box::new(names.iter()),
                None => Box::new(f.link.calls.iter().map(|c| (&*c.callee, c.scope))),
            };
            scopes.extend(calls.filter(|(c, _)| chain.contains(*c)).map(|(_, s)| s));
        }
        for s in scopes {
            if s == 0 || has_limit(s) {
                continue;
            }
            let Some(scope) = f.scopes.get(s as usize) else {
                continue;
            };
            let common = super::link::COMMON
                .iter()
                .any(|c| c.eq_ignore_ascii_case(&scope.name));
            if scope.name.len() >= 3 && !common && !scope.is_test {
                out.insert(scope.name.clone());
            }
        }
    }
    out
}

/// The names of `chain` that can get no callers' limit whatever else the
/// project holds, by the calls of `files` (read already): more than
/// [`MAX_CALLERS`] calls outside test code, or one at a file's top level
/// (`callers_limit` gives such a name nothing, and more files only add
/// calls). Their callers are not worth reading for the chase.
pub fn dead_names<'a>(
    files: impl IntoIterator<Item = (&'a FileFacts, Option<&'a CallNames>)>,
    chain: &BTreeSet<String>,
) -> BTreeSet<String> {
    let mut dead = BTreeSet::new();
    if chain.is_empty() {
        return dead;
    }
    // (a hash per call, not a walk of the sorted names)
    let mut count: rustc_hash::FxHashMap<&str, usize> =
        chain.iter().map(|n| (n.as_str(), 0)).collect();
    for (f, packed) in files {
        let calls: Box<dyn Iterator<Item = (&str, u32)>> = match packed {
            Some(names) => Box::new(names.iter()),
            None => Box::new(f.link.calls.iter().map(|c| (&*c.callee, c.scope))),
        };
        for (callee, scope) in calls {
            let Some(n) = count.get_mut(callee) else {
                continue;
            };
            // (as `inherit` counts them: a call in test code is no call)
            if f.scopes.get(scope as usize).is_some_and(|s| s.is_test) {
                continue;
            }
            *n += 1;
            if scope == 0 || *n > MAX_CALLERS {
                dead.insert(callee.to_string());
            }
        }
    }
    dead
}

/// The languages whose front-end reads a run limit (`FileFacts::task_limits`,
/// `FileFacts::run_limit_secs`).
fn has_limits(language: crate::facts::Language) -> bool {
    use crate::facts::Language;
    matches!(
        language,
        Language::Python | Language::JavaScript | Language::TypeScript
    )
}

/// Fills in the TTLs and task limits of `files` that only the project knows.
pub fn apply(files: &mut [&mut FileFacts]) {
    resolve_names(files);
    inherit(files);
}

/// Constant names of TTLs and task limits, resolved by the project's
/// module constants (one value per name, or none).
fn resolve_names(files: &mut [&mut FileFacts]) {
    let wanted = files
        .iter()
        .any(|f| !f.task_limit_names.is_empty() || f.ttls.iter().any(|t| t.sym.is_some()));
    if !wanted {
        return;
    }
    let mut consts: HashMap<&str, Option<u64>> = HashMap::new();
    for f in files.iter() {
        for (n, v) in &f.int_consts {
            consts
                .entry(n.as_str())
                .and_modify(|old| {
                    if *old != Some(*v) {
                        *old = None;
                    }
                })
                .or_insert(Some(*v));
        }
    }
    let consts: HashMap<String, u64> = consts
        .into_iter()
        .filter_map(|(n, v)| Some((n.to_string(), v?)))
        .collect();
    if consts.is_empty() {
        return;
    }
    for f in files.iter_mut() {
        for t in f.ttls.iter_mut() {
            if t.ms.is_none() {
                if let Some((n, unit)) = &t.sym {
                    t.ms = consts.get(n).and_then(|v| v.checked_mul(*unit));
                }
            }
        }
        let limited: std::collections::HashSet<ScopeId> =
            f.task_limits.iter().map(|(t, _)| *t).collect();
        let named: Vec<(ScopeId, u64)> = f
            .task_limit_names
            .iter()
            .filter(|(s, _)| !limited.contains(s))
            .filter_map(|(s, n)| Some((*s, *consts.get(n)?)))
            .collect();
        f.task_limits.extend(named);
    }
}

/// The functions' own hard limits, one file's: each task's limit (the
/// first given for it), else the file's. Asked per TTL and per call site,
/// a scan of the task limits each time was quadratic in a file of many
/// tasks.
struct OwnLimits {
    tasks: HashMap<ScopeId, u64>,
    file: Option<u64>,
}

impl OwnLimits {
    fn of(f: &FileFacts) -> Self {
        let mut tasks = HashMap::with_capacity(f.task_limits.len());
        for &(s, l) in &f.task_limits {
            tasks.entry(s).or_insert(l);
        }
        OwnLimits {
            tasks,
            file: f.run_limit_secs,
        }
    }

    fn get(&self, scope: ScopeId) -> Option<u64> {
        self.tasks.get(&scope).copied().or(self.file)
    }
}

/// The scope of the op whose method name starts at each offset (the first
/// such op): where a TTL's acquire is, without a scan of the ops per TTL.
fn op_scopes(f: &FileFacts) -> HashMap<usize, ScopeId> {
    let mut at = HashMap::with_capacity(f.ops.len());
    for o in &f.ops {
        at.entry(o.name_span.start()).or_insert(o.scope);
    }
    at
}

/// Every call in the project by callee name: (file, calling scope, start
/// of the call's name), test code aside.
type Calls<'a> = HashMap<&'a str, Vec<(usize, ScopeId, usize)>>;

/// The callers' limits of the functions that take a lock with a constant
/// TTL and have no limit of their own. Where every caller has one, the
/// function gets the longest as its own, and so does each caller without a
/// limit of its own along the way; each call of it gets the shortest TTL
/// of its acquires (the acquire the link instantiates there is the same
/// lease, held by the same limited run).
fn inherit(files: &mut [&mut FileFacts]) {
    // the functions that need one: a timed acquire, no limit of their own,
    // with their shortest TTL
    let own: Vec<OwnLimits> = files.iter().map(|f| OwnLimits::of(f)).collect();
    let mut need: Vec<(usize, ScopeId, u64)> = Vec::new();
    let mut need_at: HashMap<(usize, ScopeId), usize> = HashMap::new();
    for (fi, f) in files.iter().enumerate() {
        if f.ttls.is_empty() {
            continue;
        }
        let at = op_scopes(f);
        for t in &f.ttls {
            let Some(ms) = t.ms else {
                continue;
            };
            let Some(&scope) = at.get(&t.name_start) else {
                continue;
            };
            if scope == 0 || own[fi].get(scope).is_some() {
                continue;
            }
            match need_at.entry((fi, scope)) {
                Entry::Occupied(i) => need[*i.get()].2 = need[*i.get()].2.min(ms),
                Entry::Vacant(v) => {
                    v.insert(need.len());
                    need.push((fi, scope, ms));
                }
            }
        }
    }
    if need.is_empty() {
        return;
    }
    let mut calls: Calls = HashMap::new();
    for (fi, f) in files.iter().enumerate() {
        for c in &f.link.calls {
            let test = f.scopes.get(c.scope as usize).is_some_and(|s| s.is_test);
            if !test {
                calls
                    .entry(&*c.callee)
                    .or_default()
                    .push((fi, c.scope, c.name_span.start()));
            }
        }
    }
    // (file, scope, limit) and (file, call name start, TTL ms) to add
    let mut limits: Vec<(usize, ScopeId, u64)> = Vec::new();
    let mut limited: std::collections::HashSet<(usize, ScopeId)> = Default::default();
    let mut ttls: Vec<(usize, usize, u64)> = Vec::new();
    for &(fi, scope, ms) in &need {
        if callers_limit(files, &own, &calls, fi, scope, super::link::ROUNDS).is_none() {
            continue;
        }
        // the function, and its callers without a limit of their own
        let mut todo = vec![(fi, scope, super::link::ROUNDS)];
        while let Some((f, s, depth)) = todo.pop() {
            if own[f].get(s).is_none() && !limited.contains(&(f, s)) {
                if let Some(l) = callers_limit(files, &own, &calls, f, s, depth) {
                    limits.push((f, s, l));
                    limited.insert((f, s));
                }
            }
            let Some(name) = files[f].scopes.get(s as usize).map(|x| x.name.as_str()) else {
                continue;
            };
            for &(cf, cs, at) in calls.get(name).into_iter().flatten() {
                ttls.push((cf, at, ms));
                if depth > 1 && cs != 0 && !(cf == f && cs == s) {
                    todo.push((cf, cs, depth - 1));
                }
            }
        }
    }
    for (fi, scope, l) in limits {
        files[fi].task_limits.push((scope, l));
    }
    // (the offsets each file has a TTL at, for the files that get one)
    let mut timed: HashMap<usize, std::collections::HashSet<usize>> = HashMap::new();
    for (fi, at, ms) in ttls {
        let f = &mut files[fi];
        let has = timed
            .entry(fi)
            .or_insert_with(|| f.ttls.iter().map(|t| t.name_start).collect());
        if has.insert(at) {
            f.ttls.push(crate::facts::OpTtl {
                name_start: at,
                ms: Some(ms),
                names: Vec::new(),
                sym: None,
            });
        }
    }
}

/// The longest hard limit of the runs that call function `scope` of file
/// `fi`, when every call of its name is made by a function with a known
/// limit (its own, or its callers', `depth` levels up).
fn callers_limit(
    files: &[&mut FileFacts],
    own: &[OwnLimits],
    calls: &Calls,
    fi: usize,
    scope: ScopeId,
    depth: usize,
) -> Option<u64> {
    if depth == 0 {
        return None;
    }
    let name = files[fi].scopes.get(scope as usize)?.name.as_str();
    if name.is_empty() {
        return None;
    }
    let sites = calls.get(name)?;
    // a name called from everywhere says nothing of one function's runs
    if sites.len() > MAX_CALLERS {
        return None;
    }
    let mut max = 0u64;
    for &(cf, cs, _) in sites {
        // a run at import time has no limit; a recursive call adds none
        if cs == 0 {
            return None;
        }
        if cf == fi && cs == scope {
            continue;
        }
        let l = own[cf]
            .get(cs)
            .or_else(|| callers_limit(files, own, calls, cf, cs, depth - 1))?;
        max = max.max(l);
    }
    (max > 0).then_some(max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::{CallSite, Language, Scope, Span};

    fn call(callee: &str, scope: ScopeId) -> CallSite {
        CallSite {
            callee: callee.into(),
            recv: None,
            args: Vec::new(),
            scope,
            order: 0,
            depth: 0,
            span: Span::default(),
            name_span: Span::default(),
            result_key: None,
        }
    }

    #[test]
    fn a_name_called_too_often_or_at_a_top_level_gets_no_callers_limit() {
        let mut f = FileFacts::new(Language::Python);
        let run = f.add_scope(Scope {
            name: "run".into(),
            owner: None,
            is_test: false,
        });
        let test = f.add_scope(Scope {
            name: "test_it".into(),
            owner: None,
            is_test: true,
        });
        f.link.calls.push(call("at_top", 0));
        f.link.calls.push(call("in_test", 0).clone());
        f.link.calls.last_mut().expect("call").scope = test;
        for _ in 0..=MAX_CALLERS {
            f.link.calls.push(call("everywhere", run));
            f.link.calls.push(call("in_tests", test));
        }
        for _ in 0..MAX_CALLERS {
            f.link.calls.push(call("often", run));
        }
        let chain: BTreeSet<String> = [
            "at_top",
            "in_test",
            "everywhere",
            "in_tests",
            "often",
            "never",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let dead = dead_names([(&f, None)], &chain);
        let dead: Vec<&str> = dead.iter().map(String::as_str).collect();
        // test code calls nothing; 64 calls are still weighed
        assert_eq!(dead, ["at_top", "everywhere"]);
        // and the packed call names count the same
        let packed = super::super::calls::PackedCalls::take(&mut f).expect("calls");
        let again = dead_names([(&f, Some(&packed.names))], &chain);
        assert_eq!(again.iter().map(String::as_str).collect::<Vec<_>>(), dead);
    }
}
