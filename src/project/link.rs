//! Resolving call sites to summaries and instantiating their ops.

use super::summary::{self, Summary, TPart, VSrc};
use super::{FileView, Inst, ProjectFile};
use crate::facts::{CallSite, KeyExpr, KeyPart, Op, OpKind};
use rayon::prelude::*;
use rustc_hash::{FxHashMap as HashMap, FxHashSet};
use std::collections::hash_map::Entry;

/// Link rounds: a helper chain resolves up to this many calls deep.
pub const ROUNDS: usize = 4;

/// Most ops instantiated at one call site, and in one file.
pub(crate) const MAX_PER_CALL: usize = 16;
const MAX_PER_FILE: usize = 20_000;

/// Names too common to link through a receiver that does not name the
/// wrapper's type (`map.remove(k)`, `file.delete()`, `list.add(x)`).
pub const COMMON: &[&str] = &[
    "get",
    "set",
    "put",
    "remove",
    "delete",
    "add",
    "clear",
    "contains",
    "del",
    "pop",
    "push",
    "insert",
    "update",
    "save",
    "close",
    "load",
    "write",
    "read",
    "send",
    "run",
    "execute",
    "call",
    "apply",
    "accept",
    "exists",
    "has",
    "expire",
    "lock",
    "unlock",
    "acquire",
    "release",
    "evict",
    "invalidate",
    "take",
    "offer",
    "poll",
    "submit",
    "start",
    "stop",
    "open",
];

pub fn link(files: &[ProjectFile]) -> Vec<FileView> {
    let mut views: Vec<FileView> = files.iter().map(|_| FileView::default()).collect();
    let mut sums: Vec<Summary> = Vec::new();
    // the names calls use: a summary of any other name is never looked up
    let called: FxHashSet<&str> = files
        .iter()
        .flat_map(|f| f.facts.link.calls.iter().map(|c| &*c.callee))
        .collect();
    for round in 0..ROUNDS {
        // the last round's summaries are not read again: freed before the
        // new ones are made (a file of many functions held three copies)
        drop(std::mem::take(&mut sums));
        // each file's summaries and then its instantiations depend only on
        // the last round's: the files side by side, kept in file order
        let mut per_file: Vec<Vec<Summary>> = files
            .par_iter()
            .enumerate()
            .map(|(i, f)| {
                summary::summarise_called(i, f.stem, f.facts, &views[i].insts, Some(&called))
            })
            .collect();
        // the last round's instantiations served only those summaries (and
        // their count the test for a change): let go before the new ones
        // are made, not held beside them (a project of many wrapper calls
        // held two rounds of them at the link's peak)
        let before: Vec<usize> = views
            .iter_mut()
            .map(|v| std::mem::take(&mut v.insts).len())
            .collect();
        // joined at their exact count (one file's are taken as they are)
        sums = if per_file.len() == 1 {
            per_file.pop().unwrap_or_default()
        } else {
            let mut all = Vec::with_capacity(per_file.iter().map(Vec::len).sum());
            for s in per_file {
                all.extend(s);
            }
            all
        };
        let by_name = Candidates::by_name(&sums);
        let found: Vec<Vec<Inst>> = files
            .par_iter()
            .enumerate()
            .map(|(fi, f)| {
                let mut insts = Vec::new();
                for cs in &f.facts.link.calls {
                    if insts.len() >= MAX_PER_FILE {
                        break;
                    }
                    let Some(cands) = by_name.get(&*cs.callee) else {
                        continue;
                    };
                    let Some(si) = resolve(files, &sums, cands, fi, cs) else {
                        continue;
                    };
                    instantiate(
                        fi,
                        &sums[si],
                        cs,
                        own_object_call(fi, &sums[si], cs),
                        &mut insts,
                    );
                }
                insts
            })
            .collect();
        let mut changed = false;
        for ((view, insts), n) in views.iter_mut().zip(found).zip(before) {
            if insts.len() != n {
                changed = true;
            }
            view.insts = insts;
        }
        if !changed && round > 0 {
            break;
        }
    }
    // a function that forwards under the same name to a facade is one too
    // (`SetIfNotExistFuncLock(…) { return cache().SetIfNotExistFuncLock(…) }`)
    for _ in 0..ROUNDS {
        let facades: FxHashSet<String> = sums
            .iter()
            .filter(|s| s.facade)
            .map(|s| match &s.owner {
                Some(o) => format!("{o}.{}", s.name),
                None => s.name.clone(),
            })
            .collect();
        let mut changed = false;
        for s in sums.iter_mut() {
            if !s.facade && s.facade_if.as_ref().is_some_and(|v| facades.contains(v)) {
                s.facade = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    for s in &sums {
        if s.facade {
            views[s.file].facades.push(s.scope);
        }
    }
    if sums.iter().any(|s| s.returns_key.is_some()) {
        let by_name = Candidates::by_name(&sums);
        for (fi, view) in views.iter_mut().enumerate() {
            view.key_rewrites = returned_keys(files, &sums, &by_name, fi);
        }
    }
    for (fi, view) in views.iter_mut().enumerate() {
        fail_opens_at_calls(files, fi, view);
    }
    views
}

/// A call of an acquire helper whose failure the caller takes as success:
/// the front-end saw the LL008 shape around the call; the link says the
/// call performs an acquire (the callee reads like an acquire, so its
/// result is the acquire's). The finding goes where the fix goes, the caller;
/// when the function of the client acquire already takes failure as
/// success, the defect is there (reported once, in it).
fn fail_opens_at_calls(files: &[ProjectFile], fi: usize, view: &mut FileView) {
    let f = &files[fi];
    if f.facts.link.fail_open_calls.is_empty() {
        return;
    }
    let mut at: HashMap<usize, Vec<crate::facts::Span>> = HashMap::default();
    for c in &f.facts.link.fail_open_calls {
        at.entry(c.name_start).or_default().push(c.span);
    }
    let mut done = FxHashSet::default();
    for inst in &view.insts {
        if !matches!(inst.op.kind, OpKind::Acquire { .. }) {
            continue;
        }
        let fails_open_inside = inst.chain.first().is_some_and(|r| {
            let Some(root) = files.get(r.file) else {
                return false;
            };
            root.facts
                .ops
                .iter()
                .find(|o| o.name_span.start() == r.at)
                .is_some_and(|o| root.facts.fail_opens.iter().any(|x| x.scope == o.scope))
        });
        if fails_open_inside {
            continue;
        }
        for span in at.get(&inst.op.name_span.start()).into_iter().flatten() {
            if done.insert(span.start()) {
                view.fail_opens.push(crate::facts::FailOpen {
                    span: *span,
                    key: inst.op.key.clone(),
                    scope: inst.op.scope,
                    client: inst.op.client,
                });
            }
        }
    }
}

/// A function name that says by itself that it works a lock or a Redis
/// key: a lock API of two words or more (`tryLock`, `releaseLock`,
/// `acquire_mutex`; a lone `acquire`, `exit` or `free` says nothing) or a
/// client command's spelling (`setNx`, `setIfAbsent`, `expire`, `hasKey`).
pub(crate) fn says_redis(name: &str) -> bool {
    const COMMANDS: &[&str] = &[
        "setnx",
        "ifabsent",
        "ifpresent",
        "expire",
        "setex",
        "getset",
        "getdel",
        "unlink",
        "haskey",
    ];
    /// Lock verbs that say enough alone (`claim`, `unlock`), unlike `exit`,
    /// `free`, `drop`, `take` or a bare `lock` (every mutex has one).
    const VERBS: &[&str] = &[
        "acquire", "release", "unlock", "trylock", "relock", "claim", "obtain", "grab",
    ];
    // lower case without `_` and `-`, built in one pass
    let lower: String = name
        .chars()
        .filter(|c| !matches!(c, '_' | '-'))
        .map(|c| c.to_ascii_lowercase())
        .collect();
    // (a byte window compare: cheaper than `str::contains`'s searcher on
    // a name of a few bytes)
    let has = |c: &str| lower.as_bytes().windows(c.len()).any(|w| w == c.as_bytes());
    if COMMANDS.iter().any(|c| has(c)) {
        return true;
    }
    // the word parts once for all the word tests below
    let parts = crate::words::word_parts(name);
    match parts.as_slice() {
        [] => false,
        [one] => VERBS.contains(&one.as_str()),
        // `words::is_lock_fn` or `words::is_release_fn`, on these parts
        _ => {
            parts.iter().any(|p| {
                matches!(
                    p.as_str(),
                    "unlock"
                        | "trylock"
                        | "relock"
                        | "acquire"
                        | "release"
                        | "free"
                        | "drop"
                        | "exit"
                        | "leave"
                        | "relinquish"
                )
            }) || crate::words::reads_like_lock(name)
        }
    }
}

/// A call's receiver as [`resolve`] compares it with a type: its last
/// segment, without `$`/`@` sigils and underscores, lower case
/// (`this.lock_store` → `lockstore`).
pub(crate) fn receiver_word(r: &str) -> String {
    receiver_tail(r)
        .trim_start_matches(['$', '@'])
        .replace('_', "")
        .to_ascii_lowercase()
}

/// The last segment of a receiver's text, all [`receiver_word`] reads of
/// it (`self.pool.lock` → `lock`): a front-end may keep only that.
pub(crate) fn receiver_tail(r: &str) -> &str {
    r.rsplit(['.', ':']).next().unwrap_or(r)
}

/// The length of [`receiver_word`]`(r)`, without building it.
pub(crate) fn receiver_word_len(r: &str) -> usize {
    // (bytes: the cut and the trimmed sigils are ASCII)
    let b = r.as_bytes();
    let from = b
        .iter()
        .rposition(|&c| c == b'.' || c == b':')
        .map_or(0, |i| i + 1);
    let w = &b[from..];
    let sigils = w.iter().take_while(|&&c| c == b'$' || c == b'@').count();
    w[sigils..].iter().filter(|&&c| c != b'_').count()
}

/// A summary's owner type as [`resolve`] compares it (see [`receiver_word`]).
pub(crate) fn owner_word(owner: &str) -> String {
    owner.replace('_', "").to_ascii_lowercase()
}

/// Whether a receiver word names an owner word: one contains the other, and
/// the receiver is not a one- or two-letter variable.
pub(crate) fn names_owner_word(recv: &str, owner: &str) -> bool {
    recv.len() >= 3 && (owner.contains(recv) || recv.contains(owner))
}

/// The call runs the summarised function on the caller's own object in the
/// same file (`this.f()`, `self.f()`, a Go method through its receiver, a
/// bare call): its ops on fixed keys ([`summary::SumOp::own_object`]) are
/// the caller's keys too.
fn own_object_call(file: usize, s: &Summary, cs: &CallSite) -> bool {
    // (a "call" outside every function is no run of it: a Go interface's
    // method list reads like calls)
    s.file == file
        && cs.scope != 0
        && cs
            .recv
            .as_deref()
            .is_none_or(|r| matches!(receiver_word(r).as_str(), "this" | "self" | "static"))
}

/// An argument of the call whose known type cannot be passed to the
/// parameter it binds, as declared ([`crate::facts::type_mismatch`]): the
/// call means another function of that name (an overload, a method of
/// another type). Unknown on either side: no mismatch, name and arity decide.
fn args_mismatch(s: &Summary, cs: &CallSite, lang: crate::facts::Language) -> bool {
    if s.param_types.is_empty() {
        return false;
    }
    (0..s.params.len()).any(|i| {
        let (Some(a), Some(Some(p))) = (arg_of(cs, &s.params, i), s.param_types.get(i)) else {
            return false;
        };
        a.ty.as_deref()
            .is_some_and(|t| crate::facts::type_mismatch(t, p, lang))
    })
}

/// The one summary a call site means, or `None` when none or several fit.
/// How many candidates of a call fit it ([`resolve`]).
enum Fitting {
    None,
    One(usize),
    Several,
}

/// The summaries of one name: all of them (in file order), and those of
/// each owner, by owner word ([`owner_word`], in first-seen order): a call
/// through a receiver tests only the owners its receiver names, not every
/// summary of the name (a file of many classes with a `done` method made
/// each `self.hooks.done()` walk them all: quadratic).
struct Candidates {
    all: Vec<usize>,
    by_owner: Vec<(String, Vec<usize>)>,
}

impl Candidates {
    fn by_name(sums: &[Summary]) -> HashMap<&str, Candidates> {
        let mut by_name: HashMap<&str, Candidates> = HashMap::default();
        // where each (name, owner word) is in its name's `by_owner`
        let mut slot: HashMap<(&str, String), usize> = HashMap::default();
        for (si, s) in sums.iter().enumerate() {
            let c = by_name
                .entry(s.name.as_str())
                .or_insert_with(|| Candidates {
                    all: Vec::new(),
                    by_owner: Vec::new(),
                });
            c.all.push(si);
            if let Some(owner) = s.owner.as_deref() {
                let word = owner_word(owner);
                match slot.entry((s.name.as_str(), word)) {
                    Entry::Occupied(at) => c.by_owner[*at.get()].1.push(si),
                    Entry::Vacant(v) => {
                        let word = v.key().1.clone();
                        v.insert(c.by_owner.len());
                        c.by_owner.push((word, vec![si]));
                    }
                }
            }
        }
        by_name
    }
}

fn resolve(
    files: &[ProjectFile],
    sums: &[Summary],
    cands: &Candidates,
    file: usize,
    cs: &CallSite,
) -> Option<usize> {
    let by_owner = &cands.by_owner;
    let cands = cands.all.as_slice();
    let arity = cs.args.len();
    let fits = |si: usize| {
        let s = &sums[si];
        (s.min_arity..=s.arity).contains(&arity)
            && !args_mismatch(s, cs, files[file].facts.language)
            && !(s.file == file && s.scope == cs.scope)
            && (!s.own_object_only || own_object_call(file, s, cs))
    };
    // Whether none, one or several of the candidates given fit: the test
    // stops at a second (a name that many files define, `acquire_lock` in
    // each module, made every call test them all: quadratic).
    let count = |it: &mut dyn Iterator<Item = usize>| -> Fitting {
        let mut it = it.filter(|&si| fits(si));
        match (it.next(), it.next()) {
            (None, _) => Fitting::None,
            (Some(one), None) => Fitting::One(one),
            _ => Fitting::Several,
        }
    };
    let unique = |it: &mut dyn Iterator<Item = usize>| match count(it) {
        Fitting::One(one) => Some(one),
        _ => None,
    };
    let recv = cs.recv.as_deref().map(receiver_word);
    let own_type = matches!(recv.as_deref(), Some("this" | "self" | "static"));
    let names_owner = |si: usize| {
        let Some(r) = recv.as_deref() else {
            return false;
        };
        let Some(owner) = sums[si].owner.as_deref() else {
            return false;
        };
        names_owner_word(r, &owner_word(owner))
    };
    // the candidates of the calling file: summaries come in file order, so
    // they are one run of the list
    debug_assert!(cands.windows(2).all(|w| sums[w[0]].file <= sums[w[1]].file));
    let same_file = || {
        let lo = cands.partition_point(|&si| sums[si].file < file);
        let hi = lo + cands[lo..].partition_point(|&si| sums[si].file <= file);
        unique(&mut cands[lo..hi].iter().copied())
    };
    let one = match count(&mut cands.iter().copied()) {
        Fitting::None => None,
        Fitting::One(one) => Some(one),
        Fitting::Several if own_type || recv.is_none() => same_file(),
        Fitting::Several => {
            // (the summaries whose owner the receiver names: which one fits
            // does not depend on their order)
            let named = by_owner
                .iter()
                .filter(|(word, _)| recv.as_deref().is_some_and(|r| names_owner_word(r, word)));
            unique(&mut named.flat_map(|(_, list)| list.iter().copied())).or_else(same_file)
        }
    }?;
    // a common name through a receiver that does not name the type: not ours
    let common = COMMON.iter().any(|c| c.eq_ignore_ascii_case(&cs.callee));
    if common && recv.is_some() && !own_type && !names_owner(one) {
        return None;
    }
    // Unless the receiver names the wrapper's type, a function of another
    // file is reached only when its name says what it does to Redis:
    // `factory.create(cfg)` is not the one `create` of a crontab mutex
    // elsewhere in the project, `redisService.setNx(k, v)` is the `setNx`.
    // The same holds for `this.create()` and a bare `create()`: a parent
    // class or an import may define it elsewhere, but nothing here says so.
    if sums[one].file != file && !names_owner(one) && !says_redis(&cs.callee) {
        return None;
    }
    // a receiver-less call of a method from another file cannot reach it
    if recv.is_none() && sums[one].file != file && sums[one].owner.is_some() {
        let lang = files[file].facts.language;
        let free_fns = !matches!(
            lang,
            crate::facts::Language::Java
                | crate::facts::Language::Kotlin
                | crate::facts::Language::CSharp
        );
        if !free_fns {
            return None;
        }
    }
    Some(one)
}

/// SPEC §2 constant value, through a wrapper: the argument the wrapper
/// writes as the value is made only of variables of the key it writes at
/// this call (`lock($key, $key)` of a `lock($key, $value)` that takes
/// `"lock_" . $key`): every holder of that key writes the same value. As
/// at a client call (`own_key_value` of the pattern front-end), the key
/// must also carry a fixed part, so a generic `set(k, k)` says nothing.
fn own_key_value(key: &KeyExpr, arg: &crate::facts::CallArg) -> bool {
    if !matches!(arg.value, crate::facts::ValueExpr::Unknown) || arg.key.is_unknown() {
        return false;
    }
    arg.key.parts.iter().all(|p| match p {
        KeyPart::Var(v) | KeyPart::Const(v) => key
            .parts
            .iter()
            .any(|q| matches!(q, KeyPart::Var(w) | KeyPart::Const(w) if w == v)),
        _ => false,
    }) && key.parts.iter().any(|p| matches!(p, KeyPart::Lit(_)))
}

/// The argument a call passes for parameter `i` of `params`: the `i`-th,
/// or the one passed by that name (`ttl=30`, `ttl: 30`) when the call has
/// fewer. `None`: the call leaves the parameter at its default.
fn arg_of<'a>(cs: &'a CallSite, params: &[String], i: usize) -> Option<&'a crate::facts::CallArg> {
    cs.args.get(i).or_else(|| {
        let p = params.get(i)?;
        cs.args
            .iter()
            .find(|a| a.keyword.as_deref() == Some(p.as_str()))
    })
}

/// A summarised key with the call site's arguments in place of the
/// parameters. A parameter the call leaves at its default is the same
/// part at every call that leaves it out (`{prefix=default}`), so two such
/// calls act on one key; one whose default is an absence (`null`, `false`:
/// a flag such as `getFinalKey(key, isCluster)`'s) adds nothing.
fn key_at(parts: &[TPart], idents: &[String], s: &Summary, cs: &CallSite) -> KeyExpr {
    let mut key = KeyExpr::default();
    for p in parts {
        match p {
            TPart::Part(part) => key.push(part.clone()),
            TPart::Param(i) => match (arg_of(cs, &s.params, *i), s.params.get(*i)) {
                (Some(a), _) => key.append(KeyExpr::clone(&a.key)),
                (None, Some(name)) if s.absent_defaults.contains(name) => {}
                (None, Some(name)) => key.push(KeyPart::Var(format!("{name}=default").into())),
                (None, None) => key.push(KeyPart::Unknown),
            },
        }
    }
    if key.parts.is_empty() {
        key.push(KeyPart::Unknown);
    }
    key.idents.extend(idents.iter().cloned());
    key
}

/// Locals bound to the result of a function that returns the key it locked
/// (`k = tryLockCallback(id)` … `del(k)`): in the caller's scope, an op on
/// the local's key form is an op on the key the function locked, with the
/// caller's arguments (SPEC §2 "Project summaries": whether it returns the
/// acquire's result or a handle).
fn returned_keys(
    files: &[ProjectFile],
    sums: &[Summary],
    by_name: &HashMap<&str, Candidates>,
    fi: usize,
) -> Vec<super::KeyRewrite> {
    let mut out = Vec::new();
    for cs in &files[fi].facts.link.calls {
        let Some(from) = &cs.result_key else {
            continue;
        };
        let Some(cands) = by_name.get(&*cs.callee) else {
            continue;
        };
        let Some(si) = resolve(files, sums, cands, fi, cs) else {
            continue;
        };
        let (Some((parts, idents)), Some(own)) = (&sums[si].returns_key, &sums[si].returns_own)
        else {
            continue;
        };
        // A key with a fixed part of its own (`PREFIX + id`) is the one the
        // function locked, as it wrote it: the caller's release correlates
        // with that acquire, and a defect of the acquire stays reported in
        // the function that wrote it. A key made only of the caller's
        // arguments is the caller's key.
        let mut to = if own.has_constant_part() {
            own.clone()
        } else {
            key_at(parts, idents, &sums[si], cs)
        };
        if to.is_unknown() || to.parts == from.parts {
            continue;
        }
        to.idents.extend(from.idents.iter().cloned());
        out.push(super::KeyRewrite {
            scope: cs.scope,
            from: from.parts.clone(),
            to,
        });
    }
    out
}

/// The summary's ops performed at the call site with its arguments.
fn instantiate(file: usize, s: &Summary, cs: &CallSite, own: bool, out: &mut Vec<Inst>) {
    let via = match &s.owner {
        Some(o) => format!("{o}.{}", s.name),
        None => s.name.clone(),
    };
    let ops = s.ops.iter().filter(|so| own || !so.own_object);
    for (k, so) in ops.take(MAX_PER_CALL).enumerate() {
        // an op in a branch taken only when a defaulted argument is passed
        // is not performed by a call that leaves it out (a wrapper's `if
        // (opts.ttl) { SET … PX }` at a call with no options)
        if so.needs.iter().any(|&i| arg_of(cs, &s.params, i).is_none()) {
            continue;
        }
        let key = key_at(&so.key, &so.idents, s, cs);
        let (value, value_var) = match &so.value {
            VSrc::Fixed(v) => (v.clone(), None),
            VSrc::Param(i) => match arg_of(cs, &s.params, *i) {
                Some(a) if own_key_value(&key, a) => (
                    Some(crate::words::constant(&format!(
                        "`{}` (derived from the key's own variables)",
                        a.name.as_deref().unwrap_or("the key's variable")
                    ))),
                    None,
                ),
                Some(a) => (Some(a.value.clone()), a.name.as_deref().map(String::from)),
                None => (None, None),
            },
        };
        // a script id means something only in the file that holds the script
        let kind = match &so.kind {
            OpKind::Eval { .. } if so.chain.first().is_none_or(|r| r.file != file) => {
                OpKind::Eval { script: None }
            }
            k => k.clone(),
        };
        out.push(Inst {
            op: {
                let mut op = Op::new(kind, key, value, cs.scope, cs.span, cs.name_span, so.client);
                op.order = cs.order;
                op.set_depth(cs.depth);
                op.set_atomic(so.atomic);
                op
            },
            value_var,
            chain: so.chain.clone(),
            via: via.clone(),
            via_file: s.file,
            seq: k as u32,
        });
    }
}

#[cfg(test)]
mod word_tests {
    use super::{receiver_word, receiver_word_len, says_redis};

    #[test]
    fn says_redis_is_the_word_tests_it_names() {
        for name in [
            "tryLock",
            "releaseLock",
            "acquire_mutex",
            "acquire",
            "exit",
            "free",
            "lock",
            "claim",
            "setNx",
            "set_if_absent",
            "expire",
            "has-key",
            "unlockAll",
            "dropTable",
            "leaveRoom",
            "getLease",
            "renderRecord",
            "updateClock",
            "blockKey",
            "Release",
            "relinquish_lease",
            "",
            "_",
            "x",
            "getSet",
            "ÄrgerLock",
        ] {
            let lower = name.to_ascii_lowercase().replace(['_', '-'], "");
            let parts = crate::words::word_parts(name);
            let old = [
                "setnx",
                "ifabsent",
                "ifpresent",
                "expire",
                "setex",
                "getset",
            ]
            .iter()
            .chain(&["getdel", "unlink", "haskey"])
            .any(|c| lower.contains(c))
                || (parts.len() == 1
                    && [
                        "acquire", "release", "unlock", "trylock", "relock", "claim", "obtain",
                        "grab",
                    ]
                    .contains(&parts[0].as_str()))
                || (parts.len() >= 2
                    && (crate::words::is_lock_fn(name) || crate::words::is_release_fn(name)));
            assert_eq!(says_redis(name), old, "{name}");
        }
    }

    #[test]
    fn receiver_word_len_is_its_length() {
        for r in [
            "this",
            "this.lock_store",
            "$this->redis_client",
            "@lock",
            "self::$_x",
            "a.b:c_d",
            "__",
            "",
            "lockStore",
            "s",
            "ÉtatLock_",
        ] {
            assert_eq!(receiver_word_len(r), receiver_word(r).len(), "{r}");
        }
    }
}
