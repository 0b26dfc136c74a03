//! Phase-one facts for the project link (SPEC §2 "Project summaries"):
//! each function's parameter names, the calls of non-client functions with
//! their arguments normalised as keys and values, and which variable an op
//! writes as its value. The link itself lives in `src/project/`.

use super::calls::Call;
use super::lexer::Kind;
use super::{failopen, paths, values, Analyzer};
use crate::facts::{
    ArgBranch, CallArg, CallFailOpen, CallSite, FileFacts, FnSig, KeyExpr, KeyPart, Op, OpKind,
    Span, ValueExpr,
};
use crate::project::calls::SitePacker;
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::HashMap;

/// Most call sites recorded per file (a generated file is cut here).
const MAX_CALL_SITES: usize = 50_000;

/// Longest argument (in tokens) whose key and value are worked out for the
/// link. A longer one (a callback body, an object literal, a minified
/// module passed to a loader) is no key or value a wrapper could use, and
/// normalising it at every call around it made the work grow with the
/// nesting depth times the file (quadratic on a bundle).
const MAX_ARG_TOKENS: usize = 64;

/// The calls [`record`] records: neither client calls, declarations nor
/// keywords; the first [`MAX_CALL_SITES`] of them.
fn recorded_calls<'c, 'x>(
    an: &'x Analyzer,
    all: &'c [Call],
    client_calls: &'x super::ClientCalls,
) -> impl Iterator<Item = (usize, &'c Call<'c>)> + 'x
where
    'c: 'x,
{
    let toks = an.toks;
    let st = an.st;
    all.iter()
        .enumerate()
        .filter(move |&(ci, c)| {
            let name = toks.at(c.name_tok());
            !client_calls.contains(&ci)
                && !st.decls.is_name(c.name_tok())
                && name.kind() == Kind::Ident
                && !is_keyword(name.text())
        })
        .take(MAX_CALL_SITES)
}

/// A Go method's call through its own receiver (`s.Delete(key)` in `func
/// (s *RedisStore) Unlock`) is a call on its own type, as
/// `this.delete(key)` is.
fn own_receiver(an: &Analyzer, c: &Call, scope: u32) -> bool {
    an.lang == crate::facts::Language::Go
        && c.recv().len() == 1
        && an.st.receivers.get(&scope).map(|r| r.as_str()) == c.recv().first().map(|r| &**r)
}

/// The scope and span of each call [`record`] records that the link may
/// resolve (the only calls where it can instantiate ops), in call order.
///
/// The link resolves a call only to a function of this file (a named,
/// non-test scope), to one whose name says Redis, or through a receiver
/// that may name the function's owner (`project::link::resolve`,
/// `project::calls::Reach`). A call that fits none of these is only a
/// name and a place to the project pass (`failure`), so `record` does not
/// work out its arguments. Worked out before `record` and `waits` (these
/// calls bound the critical sections `waits` looks in), so that `waits`
/// runs before the call sites are packed: on rueidis's `adapter.go` its
/// marks and the packed sites stood together at the front-end's peak.
pub fn resolvable(
    an: &Analyzer,
    all: &[Call],
    client_calls: &super::ClientCalls,
) -> Vec<super::waits::CallAt> {
    let toks = an.toks;
    let st = an.st;
    // (the scopes' indices sorted by name: four bytes a function, where a
    // set of names took 17 a slot and a minified bundle declares a
    // function every fifty bytes)
    let mut own_fns: Vec<u32> = (0..st.scopes.len() as u32)
        .filter(|&i| {
            st.scopes
                .get(i as usize)
                .is_some_and(|s| !s.is_test && !s.name.is_empty())
        })
        .collect();
    let fn_name = |i: &u32| st.scopes.name(*i as usize);
    own_fns.sort_unstable_by(|a, b| fn_name(a).cmp(fn_name(b)));
    own_fns.dedup_by(|a, b| fn_name(a) == fn_name(b));
    own_fns.shrink_to_fit();
    let own_fn = |name: &str| own_fns.binary_search_by(|i| fn_name(i).cmp(name)).is_ok();
    let owner_word = |r: &str| crate::project::link::receiver_word_len(r) >= 3;
    // per name: it says Redis or names a function of the file
    let mut name_words: FxHashMap<&str, bool> = FxHashMap::default();
    // per one-segment receiver text: whether it may name an owner
    let mut recv_words: FxHashMap<&str, bool> = FxHashMap::default();
    let mut out: Vec<super::waits::CallAt> = Vec::new();
    for (_, c) in recorded_calls(an, all, client_calls) {
        let name = toks.at(c.name_tok());
        let scope = st.tok_scope.get(c.name_tok()).copied().unwrap_or(0);
        let owner_recv = if own_receiver(an, c, scope) {
            owner_word("this")
        } else {
            match c.recv() {
                [] => false,
                [one] => *recv_words
                    .entry(&**one)
                    .or_insert_with(|| owner_word(&values::norm_name_cow(one))),
                _ => owner_word(&values::norm_name(&c.recv().join("."))),
            }
        };
        let named = *name_words.entry(name.text()).or_insert_with(|| {
            crate::project::link::says_redis(name.text()) || own_fn(name.text())
        });
        if !(named || owner_recv) {
            continue;
        }
        let end = toks
            .get(c.end().saturating_sub(1))
            .map(|t| t.end())
            .unwrap_or(name.end())
            .max(name.end());
        // (by quarters: it stands through `waits` and `record`, where
        // doubling left up to half of it spare)
        crate::facts::push_by_quarters(
            &mut out,
            super::waits::CallAt {
                scope,
                start: name.start() as u32,
                end: end as u32,
            },
        );
    }
    out.shrink_to_fit();
    out
}

/// The bits of a name's token in [`record`]'s table of names (the two
/// above them hold its flags).
const NAME_TOK: u32 = (1 << 30) - 1;

/// The hash of a name in [`record`]'s table of names.
fn text_hash(text: &str) -> u64 {
    crate::facts::fx_hash(text)
}

/// Fills `facts.link` from the calls of the file. `client_calls` are the
/// indices of the calls the client tables turned into ops; `resolvable`
/// what [`resolvable`] gives for them. Returns the packed call sites.
pub fn record(
    an: &Analyzer,
    all: &[Call],
    client_calls: &super::ClientCalls,
    facts: &mut FileFacts,
    record_sites: crate::frontend::CallSites,
    resolvable: &[super::waits::CallAt],
) -> SitePacker {
    let record_sites = record_sites == crate::frontend::CallSites::Record;
    let toks = an.toks;
    let st = an.st;
    // per function, its defaulted parameters and their defaults
    let mut defaults: HashMap<u32, Vec<(String, paths::Default)>> = HashMap::new();
    // the call sites' names and receivers and the functions' parameters,
    // one shared copy of each text
    let mut texts = crate::facts::CallTexts::default();
    // Without call sites nothing is linked into a function of this file,
    // so only a function with an op of its own gets a summary, and only
    // such a function's signature is read, by the summaries and the rules
    // (the engine forgets the others before the link:
    // `engine::forget_idle_functions`). A minified bundle declares a
    // function every few dozen bytes: their signatures were its largest
    // link facts.
    let busy: Option<FxHashSet<u32>> =
        (!record_sites).then(|| facts.ops.iter().map(|o| o.scope).collect());
    // (read twice from the structure, counted then walked: no list of them)
    let decls = || {
        st.decls
            .scopes()
            .filter(|(_, s)| busy.as_ref().is_none_or(|b| b.contains(s)))
    };
    // one signature a declaration, kept to the end of the run: no room
    // grown by doubling (a file of a thousand methods left half of it spare)
    facts.link.functions.reserve_exact(decls().count());
    for (n, scope) in decls() {
        let parens = an
            .vals
            .param_open(n)
            .and_then(|open| Some((open, st.matching.get(&open)?)))
            .filter(|(open, close)| close > open);
        let list = parens
            .map(|(open, close)| an.vals.param_list(open, close))
            .unwrap_or_default();
        let optional = parens
            .map(|(open, close)| an.vals.defaulted_params(open, close))
            .unwrap_or(0)
            .min(list.len());
        let with: Vec<(String, paths::Default)> = list
            .iter()
            .filter_map(|(p, d)| Some((p.to_string(), (*d)?)))
            .collect();
        if !with.is_empty() {
            defaults.entry(scope).or_insert(with);
        }
        let absent_defaults = list
            .iter()
            .filter(|(_, d)| matches!(d, Some(paths::Default::Null | paths::Default::False)))
            .map(|(p, _)| p.to_string())
            .collect();
        let params: Vec<std::sync::Arc<str>> = list.iter().map(|(p, _)| texts.get(p)).collect();
        let param_types = match parens {
            Some((open, close)) if typed(an.lang) => {
                let t = param_types(an, open, close);
                // aligned with the names, or not used at all (boxed at its
                // length: collected without knowing it, a list had room
                // for four at least, where most hold one or two; a facade
                // of 537 methods kept 28 kB of that room)
                // (the words shared: `string`, `Context`, `bool` again and
                // again, each an allocation of its own)
                if t.len() == params.len() {
                    t.into_iter().map(|w| w.map(|w| texts.get(&w))).collect()
                } else {
                    Box::default()
                }
            }
            _ => Box::default(),
        };
        let mut sig = crate::facts::FnSig::new(
            scope,
            params.into_boxed_slice(),
            u32::try_from(optional).unwrap_or(u32::MAX),
            param_types,
        );
        sig.set_absent_defaults(absent_defaults);
        facts.link.functions.push(sig);
    }
    drop(busy);
    if !defaults.is_empty() {
        let lines = paths::LineEnds::new(toks);
        facts.link.arg_branches = paths::arg_branches(an, &lines, &defaults)
            .into_iter()
            .map(|(scope, span, param)| ArgBranch { scope, span, param })
            .collect();
    }
    // (sorted by scope and deduplicated at the end; until then each
    // function's first declaration gives its parameters: (scope, index)
    // pairs sorted, the first of a scope kept — 8 bytes a function, where a
    // map took 28 for a file of 5,000)
    let mut params_of: Vec<(u32, u32)> = facts
        .link
        .functions
        .iter()
        .enumerate()
        .map(|(i, f)| (f.scope, crate::facts::offset32(i)))
        .collect();
    params_of.sort_unstable();
    params_of.dedup_by_key(|e| e.0);

    // the value variable of each op: a bare parameter argument of its call
    // that is not part of the key
    let mut value_names = crate::facts::OpValueNames::default();
    for op in &facts.ops {
        if !matches!(op.value(), Some(crate::facts::ValueExpr::Unknown)) {
            continue;
        }
        let Some(params) = params_of
            .binary_search_by_key(&op.scope, |e| e.0)
            .ok()
            .map(|at| &facts.link.functions[params_of[at].1 as usize].params)
        else {
            continue;
        };
        // the call whose name starts where the op's does (calls are sorted
        // by name token, so by start)
        let i = all.partition_point(|c| toks.at(c.name_tok()).start() < op.name_span.start());
        let Some(c) = all
            .get(i)
            .filter(|c| toks.at(c.name_tok()).start() == op.name_span.start())
        else {
            continue;
        };
        let in_key = |n: &str| {
            op.key
                .parts
                .iter()
                .any(|p| matches!(p, KeyPart::Var(v) if **v == *n))
        };
        // the value follows the key argument (`SetNX(ctx, key, val, ttl)`)
        let key_arg = c.args().iter().position(|a| {
            toks.slice(a.start()..a.end().min(toks.len()))
                .iter()
                .any(|t| t.is_ident() && in_key(&values::norm_name(t.text())))
        });
        let var = c
            .args()
            .iter()
            .skip(key_arg.map_or(0, |k| k + 1))
            .find_map(|a| {
                let n = bare_name(an, a.start(), a.end())
                    .or_else(|| converted_name(an, a.start(), a.end(), params))?;
                (params.iter().any(|p| **p == *n) && !in_key(&n)).then_some(n)
            });
        if let Some(var) = var {
            value_names.push(&mut facts.link, op.name_span.start(), &var);
        }
    }
    drop(params_of);
    drop(value_names);

    // call sites of everything that is not a client call nor a declaration
    let mut acquire_like: Vec<Op> = Vec::new();
    let mut bound = BindingRanges::new(an);
    // per name: (reads like an acquire, says Redis), as the name token of
    // its first call with the two flags in the top bits (4 bytes a name,
    // found by the token's text: a map keyed by the text took 24, 25.6 kB
    // for the 767 names of rueidis's mock adapter)
    let mut name_words: hashbrown::HashTable<u32> = hashbrown::HashTable::new();
    let word_of = |w: &u32| toks.at((w & NAME_TOK) as usize).text();
    // per one-segment receiver text: its normalised name
    let mut recv_words: FxHashMap<&str, std::sync::Arc<str>> = FxHashMap::default();
    // the declared types of locals, read once when an argument needs them,
    // and only for the names a one-identifier argument has
    let mut locals: Option<LocalTypes> = None;
    let asked = || -> FxHashSet<String> {
        let texts: FxHashSet<&str> = all
            .iter()
            .flat_map(|c| c.args())
            .filter(|a| a.end() == a.start() + 1 && toks.at(a.start()).kind() == Kind::Ident)
            .map(|a| toks.at(a.start()).text())
            .collect();
        texts.into_iter().map(values::norm_name).collect()
    };
    // (counted first: grown by doubling, the list of a file of dense calls
    // took up to twice its room, and a copy while it grew)
    let count = recorded_calls(an, all, client_calls).count();
    // (packed as they are made: `SitePacker`)
    let mut sites = SitePacker::with_capacity(if record_sites { count } else { 0 });
    for (ci, c) in recorded_calls(an, all, client_calls) {
        let name = toks.at(c.name_tok());
        let scope = st.tok_scope.get(c.name_tok()).copied().unwrap_or(0);
        let depth = st.tok_depth.get(c.name_tok()).unwrap_or(0);
        // the receiver
        let recv = if own_receiver(an, c, scope) {
            Some(texts.get("this"))
        } else {
            match c.recv() {
                [] => None,
                // (once per receiver text, and no joined copy)
                [one] => Some(std::sync::Arc::clone(
                    recv_words
                        .entry(&**one)
                        .or_insert_with(|| texts.get(&values::norm_name_cow(one))),
                )),
                // a chain's (`c.client.B().Get().Key`): its last segment,
                // all the link reads of it (`link::receiver_tail`; the
                // whole chain took 30 of the 35 kB of receiver text packed
                // on rueidis's mock adapter), not shared (the shared
                // texts' set cost the mock more than the copies it saved)
                _ => {
                    let joined = values::norm_name(&c.recv().join("."));
                    Some(crate::project::link::receiver_tail(&joined).into())
                }
            }
        };
        let word = match name_words.entry(
            text_hash(name.text()),
            |w| word_of(w) == name.text(),
            |w| text_hash(word_of(w)),
        ) {
            hashbrown::hash_table::Entry::Occupied(e) => *e.get(),
            hashbrown::hash_table::Entry::Vacant(e) => {
                // (token indices stay below 2^28: `calls::Call`)
                let w = c.name_tok() as u32 & NAME_TOK
                    | u32::from(crate::words::is_acquire_fn(name.text())) << 31
                    | u32::from(crate::project::link::says_redis(name.text())) << 30;
                *e.insert(w).get()
            }
        };
        let (acquire_fn, redis_name) = (word >> 31 != 0, word >> 30 & 1 != 0);
        // (both lists in call order, so by the name's start)
        let may_resolve = resolvable
            .binary_search_by_key(&(name.start() as u32), |r| r.start)
            .is_ok();
        // a slice of exactly the call's arguments (or none): collected at
        // their exact count, not from a filter's growing room
        let resolved_args = if may_resolve && record_sites {
            c.args()
        } else {
            &[]
        };
        let args = resolved_args
            .iter()
            .map(|a| {
                let short = a.end().saturating_sub(a.start()) <= MAX_ARG_TOKENS;
                CallArg {
                    // (not shared: the site is encoded at once, and shared
                    // again when decoded)
                    key: std::sync::Arc::new(if short {
                        an.vals.key(a.start(), a.end(), scope)
                    } else {
                        KeyExpr::unknown()
                    }),
                    value: if short {
                        an.vals.value(a.start(), a.end(), scope)
                    } else {
                        ValueExpr::Unknown
                    },
                    name: bare_name(an, a.start(), a.end()).map(|n| texts.arg_text(&n)),
                    keyword: a
                        .name(toks)
                        .map(|n| texts.arg_text(&values::norm_name_cow(n))),
                    ty: if typed(an.lang) && short {
                        let l = locals.get_or_insert_with(|| {
                            LocalTypes::new(an, &facts.link.functions, asked())
                        });
                        arg_type(an, l, scope, a.start(), a.end()).map(|t| texts.arg_text(&t))
                    } else {
                        None
                    },
                }
            })
            .collect();
        let end = toks
            .get(c.end().saturating_sub(1))
            .map(|t| t.end())
            .unwrap_or(name.end())
            .max(name.end());
        // a call that reads like an acquire: are failures taken as success?
        if acquire_fn || redis_name {
            acquire_like.push({
                // the call's index, to find it again below
                let mut op = Op::new(
                    OpKind::Acquire { expiry: true },
                    KeyExpr::lit(&ci.to_string()),
                    None,
                    scope,
                    Span::new(name.start(), end),
                    Span::new(name.start(), name.end()),
                    crate::facts::Client::Unknown,
                );
                op.order = c.name_tok() as u32;
                op.set_depth(depth);
                op
            });
        }
        // the whole right-hand side of a binding: the key form its local
        // takes in the caller's ops
        // (normalised through the local's name, exactly as an op's key
        // argument naming it is; a local bound more than once stays a bare
        // variable and is left alone)
        let result_key = Some(())
            .filter(|_| may_resolve && record_sites)
            .filter(|_| c.end() - c.recv_start() <= MAX_ARG_TOKENS)
            .and_then(|_| bound.name_of(c.recv_start(), c.end()))
            .map(|n| an.vals.key(n, n + 1, scope))
            .filter(|k| !k.is_unknown() && !matches!(k.parts.as_slice(), [KeyPart::Var(_)]))
            .map(Box::new);
        if !record_sites {
            continue;
        }
        sites.push(&CallSite {
            // (the packer's copy: the shared texts' set held every callee
            // name again, 35 kB of table on rueidis's mock adapter)
            callee: sites.callee(name.text()),
            recv,
            args,
            scope,
            order: an.exec_order(c.name_tok()) as u32,
            depth,
            span: Span::new(name.start(), end),
            name_span: Span::new(name.start(), name.end()),
            result_key,
        });
    }
    // (the loop's tables, let go before the returned keys are worked out:
    // the declared types of a typed file's locals stood at its peak)
    sites.shrink_to_fit();
    drop(locals);
    drop(bound);
    drop(texts);
    drop(recv_words);
    drop(name_words);
    // the keys functions return, for the functions whose summary can be
    // asked for them: those with an acquire of their own or a call the link
    // may resolve (`project::summary::summarise_called` reads `returns` only
    // against such an acquire's key)
    // (grown by the scopes met: collected, the set took room for every
    // resolvable call, 41 kB for rueidis's 5,800 calls in 600 functions)
    let mut needed: FxHashSet<u32> = FxHashSet::default();
    for c in resolvable {
        needed.insert(c.scope);
    }
    needed.extend(
        facts
            .ops
            .iter()
            .filter(|o| matches!(o.kind, OpKind::Acquire { .. }))
            .map(|o| o.scope),
    );
    // already in scope order as a rule: a stable sort would borrow
    // scratch room for half of them
    if !facts.link.functions.is_sorted_by_key(|f: &FnSig| f.scope) {
        facts.link.functions.sort_by_key(|f: &FnSig| f.scope);
    }
    facts.link.functions.dedup_by_key(|f| f.scope);
    returned_keys(an, all, client_calls, &mut facts.link.functions, &needed);
    // the LL008 shapes around those calls, by the same finder as for client
    // acquires (the link decides whether the callee returns an acquire's result)
    for f in failopen::find(an, all, &acquire_like) {
        let Some(ci) = f.key.parts.first().and_then(|p| match p {
            KeyPart::Lit(s) => s.parse::<usize>().ok(),
            _ => None,
        }) else {
            continue;
        };
        if let Some(c) = all.get(ci) {
            facts.link.fail_open_calls.push(CallFailOpen {
                name_start: toks.at(c.name_tok()).start(),
                span: f.span,
            });
        }
    }
    sites
}

/// Most keys recorded as returned by one function.
const MAX_RETURNS: usize = 8;

/// The keys each function's `return` statements hand back: the returned
/// expression, and each branch of a conditional in it apart (`ok ? lockKey
/// : null`, `lock_key if ok else None`, `$key ?? null`), normalised as keys.
/// Whether one of them is the key the function locked is the link's
/// question; a piece that is no key (`null`, a flag) normalises to nothing.
fn returned_keys<'a>(
    an: &Analyzer<'a>,
    all: &[Call],
    client_calls: &super::ClientCalls,
    functions: &mut [FnSig],
    needed: &FxHashSet<u32>,
) {
    let toks = an.toks;
    let st = an.st;
    // A piece that is a client call (`return r.set(key, token, nx=True)`,
    // `return await client.get(k)`) hands back the command's reply, never
    // a key: read as a key, the call stood for its arguments (`key` and
    // `token` joined), a key no acquire has.
    let client_call = |s: usize, e: usize| -> bool {
        if !toks.at(e - 1).is(")") {
            return false;
        }
        let Some(o) = st.matching.get(&(e - 1)).filter(|&o| o > s) else {
            return false;
        };
        super::waits::call_index(all, o - 1).is_some_and(|i| {
            let from = all[i].recv_start();
            (from == s || (from == s + 1 && toks.at(s).is("await"))) && client_calls.contains(&i)
        })
    };
    // the function of a needed scope (`functions` are sorted by scope, one
    // a scope: found by a binary search, where a map of them took 40 bytes
    // a function)
    debug_assert!(functions.is_sorted_by_key(|f| f.scope));
    if !functions.iter().any(|f| needed.contains(&f.scope)) {
        return;
    }
    let slot = |functions: &[FnSig], scope: u32| -> Option<usize> {
        let at = functions.binary_search_by_key(&scope, |f| f.scope).ok()?;
        needed.contains(&scope).then_some(at)
    };
    // (the memo of the current function's: a key depends on the scope, so
    // one function's returns are all it serves, and kept for the whole
    // file it held a key per `return ret` of rueidis's 500-method
    // pipeline, 0.2 MB)
    let mut ident_keys: IdentKeys = FxHashMap::default();
    let mut memo_scope = None;
    for (i, t) in toks.iter().enumerate() {
        if !(t.is_ident() && t.is("return")) {
            continue;
        }
        let scope = st.tok_scope.get(i).copied().unwrap_or(0);
        let Some(fi) = slot(functions, scope) else {
            continue;
        };
        if memo_scope != Some(scope) {
            ident_keys.clear();
            memo_scope = Some(scope);
        }
        if functions[fi].returns().len() >= MAX_RETURNS {
            continue;
        }
        let b = i + 1;
        let e = values::expr_end(toks, st, an.lang, b);
        if e <= b || e - b > MAX_ARG_TOKENS {
            continue;
        }
        // split at the top level of the expression (brackets skipped)
        let mut pieces = Vec::new();
        let (mut from, mut k) = (b, b);
        while k < e {
            let x = toks.at(k);
            if x.is("(") || x.is("[") || x.is("{") {
                if let Some(m) = st.matching.get(&k).filter(|&m| m > k) {
                    k = m + 1;
                    continue;
                }
            }
            let cut = matches!(
                x.text(),
                "?" | ":" | "??" | "?:" | "||" | "if" | "else" | "or" | "and" | "&&"
            ) && (x.kind() == Kind::Punct || x.is_ident());
            if cut {
                pieces.push((from, k));
                from = k + 1;
            }
            k += 1;
        }
        pieces.push((from, e));
        for (s, e) in pieces {
            if e <= s || functions[fi].returns().len() >= MAX_RETURNS || client_call(s, e) {
                continue;
            }
            let key = if e == s + 1 && toks.at(s).kind() == Kind::Ident {
                ident_key(an, &mut ident_keys, s, scope)
            } else {
                an.vals.key(s, e, scope)
            };
            if !key.is_unknown() && !functions[fi].returns().contains(&key) {
                // (at most `MAX_RETURNS`)
                functions[fi].push_return(key);
            }
        }
    }
}

/// Keys of one-identifier expressions by (scope, identifier text).
type IdentKeys<'a> = FxHashMap<(u32, &'a str), KeyExpr>;

/// The key of the one-identifier expression at token `at` in `scope`
/// ([`values::Values::key`] of it, which depends only on its text and the
/// scope), worked out once per file.
fn ident_key<'a>(an: &Analyzer<'a>, keys: &mut IdentKeys<'a>, at: usize, scope: u32) -> KeyExpr {
    keys.entry((scope, an.toks.at(at).text()))
        .or_insert_with(|| an.vals.key(at, at + 1, scope))
        .clone()
}

/// The right-hand sides of the bindings (`k = f(…)`) of at most
/// `MAX_ARG_TOKENS` tokens, as `(start, end)` token ranges sorted by start
/// (a binding's start is the token after its `=`: one binding per start;
/// the name it binds is the token before that `=`). Built only when a call
/// asks: a file whose calls the link cannot use never pays for it.
struct BindingRanges<'a> {
    an: &'a Analyzer<'a>,
    ranges: Option<Vec<(u32, u32)>>,
}

impl<'a> BindingRanges<'a> {
    fn new(an: &'a Analyzer<'a>) -> Self {
        BindingRanges { an, ranges: None }
    }

    /// The name token of the binding whose right-hand side is `[start, end)`.
    fn name_of(&mut self, start: usize, end: usize) -> Option<usize> {
        let an = self.an;
        let ranges = self.ranges.get_or_insert_with(|| {
            let mut r: Vec<(u32, u32)> = an
                .vals
                .bindings()
                .map(|(_, _, b)| b)
                .filter(|b| b.eq() >= 1 && b.end - b.start <= MAX_ARG_TOKENS)
                .map(|b| (b.start as u32, b.end as u32))
                .collect();
            r.sort_unstable();
            r
        });
        let i = ranges.partition_point(|&(s, _)| (s as usize) < start);
        ranges[i..]
            .iter()
            .take_while(|&&(s, _)| s as usize == start)
            .any(|&(_, e)| e as usize == end)
            .then(|| start - 2)
    }
}

/// The argument is one identifier (`key`, `$key`, `@key`, `this.key`).
fn bare_name(an: &Analyzer, s: usize, e: usize) -> Option<String> {
    let toks = an.toks;
    match e.checked_sub(s)? {
        1 if toks.at(s).is_ident() => Some(values::norm_name(toks.at(s).text())),
        2 if toks.at(s).is("@") && toks.at(s + 1).is_ident() => {
            Some(values::norm_name(&format!("@{}", toks.at(s + 1).text())))
        }
        _ => None,
    }
}

/// The argument only converts one parameter to bytes or text
/// (`valBytes(value)`, `value.getBytes(UTF_8)`, `JSON.stringify(value)`):
/// a constant stays constant and a token stays unique through it, so the
/// value is the caller's. No operator may mix in anything else.
fn converted_name(
    an: &Analyzer,
    s: usize,
    e: usize,
    params: &[std::sync::Arc<str>],
) -> Option<String> {
    let toks = an.toks;
    if e <= s + 1 || e - s > 12 {
        return None;
    }
    let mut found: Option<String> = None;
    for k in s..e {
        let t = toks.at(k);
        if t.is_ident() {
            let n = values::norm_name(t.text());
            let member = k > s && toks.at(k - 1).is(".");
            let called = toks.get(k + 1).is_some_and(|x| x.is("("));
            if !member && !called && params.iter().any(|p| **p == *n) {
                if found.as_ref().is_some_and(|f| *f != n) {
                    return None;
                }
                found = Some(n);
            }
        } else if !(t.is("(")
            || t.is(")")
            || t.is(".")
            || t.is(",")
            || t.is("::")
            || t.kind() == super::lexer::Kind::Str)
        {
            return None;
        }
    }
    found
}

fn is_keyword(s: &str) -> bool {
    matches!(
        s,
        "if" | "for"
            | "while"
            | "switch"
            | "catch"
            | "return"
            | "new"
            | "function"
            | "def"
            | "fun"
            | "func"
            | "synchronized"
            | "using"
            | "foreach"
            | "elif"
            | "when"
            | "print"
            | "println"
            | "assert"
            | "typeof"
            | "sizeof"
            | "await"
            | "not"
            | "and"
            | "or"
    )
}

/// The languages whose parameter types the link compares with arguments.
fn typed(lang: crate::facts::Language) -> bool {
    use crate::facts::Language as L;
    matches!(
        lang,
        L::Java | L::Kotlin | L::CSharp | L::Go | L::TypeScript
    )
}

/// Modifiers and keywords that stand before a Java/C# parameter's type.
const TYPE_MODIFIERS: &[&str] = &[
    "final",
    "ref",
    "out",
    "in",
    "params",
    "this",
    "scoped",
    "readonly",
    "const",
    "var",
    "val",
    "let",
    "vararg",
    "noinline",
    "crossinline",
    "public",
    "private",
    "protected",
];

/// The type word ([`crate::facts::type_word`]) of a type written as the
/// tokens `r`: its dotted head name before generic arguments, an array
/// when `[]` follows or leads (Go), `None` for anything that is not one
/// named type (a union, a function type, a tuple, an unbalanced generic
/// list cut at a comma).
fn type_of_tokens(r: super::lexer::Toks) -> Option<String> {
    let mut i = 0;
    // annotations `@Nonnull`, `@Ann(x)`, and modifiers
    while i < r.len() {
        let t = r.at(i);
        if t.is("@") {
            i += 1;
            while i < r.len() && (r.at(i).is_ident() || r.at(i).is(".")) {
                i += 1;
            }
            if i < r.len() && r.at(i).is("(") {
                let mut d = 0;
                while i < r.len() {
                    if r.at(i).is("(") {
                        d += 1;
                    } else if r.at(i).is(")") {
                        d -= 1;
                        if d == 0 {
                            i += 1;
                            break;
                        }
                    }
                    i += 1;
                }
            }
        } else if t.is_ident() && TYPE_MODIFIERS.contains(&t.text()) {
            i += 1;
        } else {
            break;
        }
    }
    let r = r.slice(i..);
    let (lt, gt) = r.iter().fold((0, 0), |(l, g), t| {
        (
            l + t.text().matches('<').count(),
            g + t.text().matches('>').count(),
        )
    });
    if lt != gt
        || r.iter().any(|t| {
            matches!(
                t.text(),
                "|" | "&" | "=>" | "->" | "(" | "{" | "," | "func" | "fn" | "typeof" | "keyof"
            ) || t.kind() == Kind::Str
        })
    {
        return None;
    }
    let mut j = 0;
    let mut array = false;
    // Go `[]T`, `*T`, `...T`
    while j < r.len() && matches!(r.at(j).text(), "*" | "[" | "]" | "..." | "." | "&") {
        if r.at(j).is("[") {
            array = true;
        }
        j += 1;
    }
    let mut head = String::new();
    while j < r.len() && (r.at(j).is_ident() || (r.at(j).is(".") && !head.is_empty())) {
        head.push_str(r.at(j).text());
        j += 1;
    }
    if head.is_empty() || head.ends_with('.') {
        return None;
    }
    if head == "interface" {
        return Some("interface{}".into());
    }
    // what follows the head: generic arguments, `?`, `[]`, `...`
    let rest = r.slice(j..);
    if rest.iter().any(|t| t.is("[") || t.is("...")) {
        array = true;
    }
    let mut w = crate::facts::type_word(&head);
    if array {
        w.push_str("[]");
    }
    Some(w)
}

/// The declared type of each parameter of the list `(open … close)`, in
/// the order [`values::Values::param_list`] gives the names.
fn param_types(an: &Analyzer, open: usize, close: usize) -> Vec<Option<String>> {
    use crate::facts::Language as L;
    let toks = an.toks;
    super::calls::split_args(toks, an.st, open, close)
        .iter()
        .filter_map(|a| {
            let r = toks.slice(a.start().saturating_sub(if a.is_named() { 2 } else { 0 })..a.end());
            // the parameter's name, as `param_list` finds it
            let (name_at, ty) = if let Some(c) = r.iter().position(|t| t.is(":")) {
                let n = r.slice(..c).iter().rposition(|t| t.is_ident());
                let end = r.iter().position(|t| t.is("=")).unwrap_or(r.len());
                (n, (c + 1 < end).then(|| r.slice(c + 1..end)))
            } else if an.lang == L::Go {
                let n = r.iter().position(|t| t.is_ident());
                (n, n.filter(|&n| n + 1 < r.len()).map(|n| r.slice(n + 1..)))
            } else {
                let end = r.iter().position(|t| t.is("=")).unwrap_or(r.len());
                let n = r.slice(..end).iter().rposition(|t| t.is_ident());
                (n, n.filter(|&n| n > 0).map(|n| r.slice(..n)))
            };
            let name = values::norm_name(r.get(name_at?)?.text());
            if name == "self" || name == "cls" {
                return None;
            }
            Some(ty.and_then(type_of_tokens))
        })
        .collect()
}

/// The declared types of the locals and parameters of a file's functions,
/// by (scope, name): a parameter's from its list, a local's from its
/// declaration (`String k = …`, `val k: String`, `var k string`, `let k:
/// string`) or its initialiser when that says the type (`var l = new
/// Lock(…)`, `k := "…"`, `l := &Lock{…}`). In TypeScript a named type may
/// be an alias of a text (`type Key = string`): only `new T(…)` and the
/// three built-in words count there.
///
/// Names and types are held once each (a facade of a thousand methods
/// declares `key` in every one): the map is of ids, 12 bytes an entry,
/// sorted (a hash map's room, twice its entries at worst, was 26.6 kB on
/// rueidis's mock adapter, beside the call sites being packed).
pub(super) struct LocalTypes {
    /// (scope, name id, type id) sorted by scope and name, one entry a
    /// pair; the type [`UNKNOWN_TYPE`] when unknown.
    map: Vec<(u32, u32, u32)>,
    /// The names asked for, by their id.
    names: FxHashMap<String, u32>,
    types: Vec<Box<str>>,
}

/// [`LocalTypes`]'s type id of a name whose type is not known.
const UNKNOWN_TYPE: u32 = u32::MAX;

impl LocalTypes {
    /// The types of the names in `asked` (normalised names; no other name
    /// is looked up), from the parameters of the typed functions among
    /// `fns` and the declarations of the file.
    pub(super) fn new(an: &Analyzer, fns: &[FnSig], asked: FxHashSet<String>) -> Self {
        use crate::facts::Language as L;
        let toks = an.toks;
        let st = an.st;
        // every declaration met, merged once sorted
        let mut map: Vec<(u32, u32, u32)> = Vec::new();
        let mut names: FxHashMap<String, u32> = FxHashMap::default();
        names.extend(asked.into_iter().zip(0..));
        let mut types: Vec<Box<str>> = Vec::new();
        let mut type_ids: FxHashMap<Box<str>, u32> = FxHashMap::default();
        let ts = an.lang == L::TypeScript;
        let keep = |w: Option<String>, from_new: bool| {
            w.filter(|w| from_new || !ts || matches!(w.as_str(), "string" | "number" | "bool"))
        };
        let mut put = |map: &mut Vec<(u32, u32, u32)>, k: (u32, u32), v: Option<String>| {
            let v = v.map_or(UNKNOWN_TYPE, |w| match type_ids.get(w.as_str()) {
                Some(&id) => id,
                None => {
                    let id = types.len() as u32;
                    types.push(w.as_str().into());
                    type_ids.insert(w.into_boxed_str(), id);
                    id
                }
            });
            map.push((k.0, k.1, v));
        };
        for f in fns.iter().filter(|f| !f.param_types.is_empty()) {
            for (n, t) in f.params.iter().zip(&f.param_types) {
                if let Some(&id) = names.get(&**n) {
                    put(
                        &mut map,
                        (f.scope, id),
                        keep(t.as_deref().map(str::to_string), false),
                    );
                }
            }
        }
        for i in 1..toks.len() {
            let t = toks.at(i);
            if !t.is_ident() {
                continue;
            }
            let scope = st.tok_scope.get(i).copied().unwrap_or(0);
            if scope == 0 {
                continue;
            }
            let next = toks.get(i + 1);
            let prev = toks.at(i - 1);
            // worked out only for a declaration (one allocation); `None` for
            // a name no argument has
            let name = || names.get(&*values::norm_name_cow(t.text())).copied();
            match an.lang {
                L::Java | L::CSharp => {
                    // `Type name =` / `Type name;` (a statement's start before the type)
                    if !next.is_some_and(|n| n.is("=") || n.is(";")) || !prev.is_ident() {
                        continue;
                    }
                    let before = i.checked_sub(2).map(|b| toks.at(b));
                    let starts = before.is_none_or(|b| {
                        matches!(b.text(), ";" | "{" | "}" | "(" | ")" | "final")
                            || (b.is_ident() && TYPE_MODIFIERS.contains(&b.text()))
                    });
                    if !starts || is_keyword(prev.text()) || prev.text() == "return" {
                        continue;
                    }
                    let ty = if matches!(prev.text(), "var" | "let" | "val") {
                        new_type(an, i + 2).map(|w| (w, true))
                    } else {
                        type_of_tokens(toks.slice(i - 1..i)).map(|w| (w, false))
                    };
                    if let Some(n) = name() {
                        put(&mut map, (scope, n), ty.map(|(w, _)| w));
                    }
                }
                L::Kotlin | L::TypeScript => {
                    if !matches!(prev.text(), "val" | "var" | "let" | "const") {
                        continue;
                    }
                    let ty = match next {
                        Some(c) if c.is(":") => {
                            let end = (i + 2..toks.len().min(i + 12))
                                .find(|&k| {
                                    toks.at(k).is("=")
                                        || toks.at(k).is(";")
                                        || (k > i + 2 && toks.at(k).nl())
                                })
                                .unwrap_or(i + 2);
                            keep(type_of_tokens(toks.slice(i + 2..end)), false)
                        }
                        Some(e) if e.is("=") => keep(new_type(an, i + 2), true),
                        _ => continue,
                    };
                    if let Some(n) = name() {
                        put(&mut map, (scope, n), ty);
                    }
                }
                L::Go => {
                    let ty = if prev.is("var") {
                        let end = (i + 1..toks.len().min(i + 10))
                            .find(|&k| toks.at(k).is("=") || toks.at(k).nl() || toks.at(k).is(";"))
                            .unwrap_or(i + 1);
                        if end == i + 1 {
                            new_type(an, i + 2)
                        } else {
                            type_of_tokens(toks.slice(i + 1..end))
                        }
                    } else if next.is_some_and(|n| n.is(":=")) && !prev.is(",") {
                        new_type(an, i + 2)
                    } else {
                        continue;
                    };
                    if let Some(n) = name() {
                        put(&mut map, (scope, n), ty);
                    }
                }
                _ => {}
            }
        }
        // a name declared twice with different types in one scope: unknown
        map.sort_unstable();
        map.dedup_by(|later, kept| {
            let same = (later.0, later.1) == (kept.0, kept.1);
            if same && later.2 != kept.2 {
                kept.2 = UNKNOWN_TYPE;
            }
            same
        });
        map.shrink_to_fit();
        LocalTypes { map, names, types }
    }

    fn get(&self, scope: u32, name: &str) -> Option<String> {
        let id = *self.names.get(name)?;
        let at = self
            .map
            .binary_search_by_key(&(scope, id), |&(s, n, _)| (s, n))
            .ok()?;
        let t = self.map[at].2;
        self.types.get(t as usize).map(|t| t.to_string())
    }
}

/// The type an expression starting at token `s` plainly has when it is a
/// whole initialiser or argument: a string literal, `new T(…)`, a Go
/// `T{…}` or `&T{…}`. Only the first tokens are read; the caller checks
/// that the expression ends where the construct does when that matters.
fn new_type(an: &Analyzer, s: usize) -> Option<String> {
    use crate::facts::Language as L;
    let toks = an.toks;
    let t = toks.get(s)?;
    if t.kind() == Kind::Str {
        return Some("string".into());
    }
    let (mut j, go) = match an.lang {
        L::Go => (if t.is("&") { s + 1 } else { s }, true),
        L::Java | L::CSharp | L::TypeScript | L::JavaScript if t.is("new") => (s + 1, false),
        _ => return None,
    };
    let mut head = String::new();
    while j < toks.len() && (toks.at(j).is_ident() || (toks.at(j).is(".") && !head.is_empty())) {
        head.push_str(toks.at(j).text());
        j += 1;
    }
    if head.is_empty() || head == "new" {
        return None;
    }
    let opener = toks.get(super::calls::skip_type_params(toks, j, an.lang))?;
    let ok = if go { opener.is("{") } else { opener.is("(") };
    ok.then(|| crate::facts::type_word(&head))
}

/// The known type of the argument `a..b` in `scope` (see [`CallArg::ty`]).
fn arg_type(an: &Analyzer, locals: &LocalTypes, scope: u32, a: usize, b: usize) -> Option<String> {
    let toks = an.toks;
    if b <= a {
        return None;
    }
    if b == a + 1 {
        let t = toks.at(a);
        if t.kind() == Kind::Str {
            return Some("string".into());
        }
        if t.is_ident() {
            return locals.get(scope, &values::norm_name(t.text()));
        }
        return None;
    }
    let w = new_type(an, a)?;
    // the construct must be the whole argument: its closing bracket is last
    let last = b - 1;
    let close_first = (a..b).find(|&k| toks.at(k).is("(") || toks.at(k).is("{"))?;
    (an.st.matching.get(&close_first) == Some(last)).then_some(w)
}
