//! Rule unit tests over hand-built facts: the rules never see source text.

use super::*;
use crate::advice::Target;
use crate::facts::*;

struct B {
    facts: FileFacts,
    order: u32,
}

impl B {
    fn new() -> Self {
        B {
            facts: FileFacts::new(Language::Rust),
            order: 0,
        }
    }
    fn scope(&mut self, name: &str) -> ScopeId {
        self.facts.add_scope(Scope {
            name: name.into(),
            owner: None,
            is_test: false,
        })
    }
    fn op(
        &mut self,
        scope: ScopeId,
        kind: OpKind,
        key: KeyExpr,
        value: Option<ValueExpr>,
    ) -> &mut Op {
        self.order += 1;
        let at = self.order as usize * 10;
        let mut op = Op::new(
            kind,
            key,
            value,
            scope,
            Span::new(at, at + 5),
            Span::new(at, at + 3),
            Client::RedisRs,
        );
        op.order = self.order;
        self.facts.ops.push(op);
        self.facts.ops.last_mut().unwrap()
    }
    fn run(&self) -> Vec<(&'static str, usize)> {
        let cx = Context::new(&self.facts, "app", &[], Target::default());
        let mut v: Vec<_> = run_all(&cx, |_| true)
            .list
            .into_iter()
            .map(|d| (d.meta().code, d.span().start()))
            .collect();
        v.sort();
        v
    }
}

/// A counter's key held in a field: not named like a lock.
fn counter_key() -> KeyExpr {
    KeyExpr {
        parts: vec![KeyPart::Const("this.permittedNumberKey".into())].into(),
        idents: vec!["permittedNumberKey".to_string()].into(),
    }
}

fn lockkey() -> KeyExpr {
    let mut k = KeyExpr::lit("lock:");
    k.push(KeyPart::Var("id".into()));
    k.idents.push("id".into());
    k
}

#[test]
fn constant_value_and_plain_del() {
    let mut b = B::new();
    let f = b.scope("run");
    b.op(
        f,
        OpKind::Acquire { expiry: true },
        lockkey(),
        Some(ValueExpr::Constant("\"1\"".into())),
    );
    b.op(f, OpKind::Release { checked: false }, lockkey(), None);
    assert_eq!(b.run(), vec![("LL001", 10), ("LL002", 20)]);
}

#[test]
fn dedup_window_is_silent() {
    let mut b = B::new();
    let f = b.scope("handle");
    b.op(
        f,
        OpKind::Acquire { expiry: true },
        KeyExpr::lit("dedup:evt"),
        Some(ValueExpr::Constant("1".into())),
    );
    assert_eq!(b.run(), vec![]);
}

#[test]
fn cache_invalidation_is_silent() {
    let mut b = B::new();
    let f = b.scope("update_user");
    b.op(
        f,
        OpKind::Release { checked: false },
        KeyExpr::lit("user:42"),
        None,
    );
    assert_eq!(b.run(), vec![]);
}

#[test]
fn setnx_expire_is_ll003_not_ll004() {
    let mut b = B::new();
    let f = b.scope("acquire");
    b.op(
        f,
        OpKind::Acquire { expiry: false },
        lockkey(),
        Some(ValueExpr::Unique),
    );
    b.op(f, OpKind::Expire, lockkey(), None);
    assert_eq!(b.run(), vec![("LL003", 10)]);
}

#[test]
fn no_ttl_is_ll004() {
    let mut b = B::new();
    let f = b.scope("acquire");
    b.op(
        f,
        OpKind::Acquire { expiry: false },
        lockkey(),
        Some(ValueExpr::Unique),
    );
    assert_eq!(b.run(), vec![("LL004", 10)]);
}

#[test]
fn idempotency_marker_is_silent() {
    let mut b = B::new();
    let f = b.scope("process");
    b.op(
        f,
        OpKind::Acquire { expiry: false },
        KeyExpr::lit("processed:order"),
        Some(ValueExpr::Constant("1".into())),
    );
    assert_eq!(b.run(), vec![]);
}

#[test]
fn get_then_del_is_ll005_only() {
    let mut b = B::new();
    let f = b.scope("release");
    b.op(f, OpKind::Get, lockkey(), None);
    b.op(f, OpKind::Release { checked: false }, lockkey(), None);
    assert_eq!(b.run(), vec![("LL005", 20)]);
}

#[test]
fn watched_release_is_checked() {
    let mut b = B::new();
    let f = b.scope("release");
    b.op(f, OpKind::Get, lockkey(), None).set_watched(true);
    b.op(f, OpKind::Release { checked: false }, lockkey(), None)
        .set_watched(true);
    assert_eq!(b.run(), vec![]);
}

#[test]
fn force_release_is_deliberate() {
    let mut b = B::new();
    let f = b.scope("force_unlock");
    b.op(f, OpKind::Release { checked: false }, lockkey(), None);
    assert_eq!(b.run(), vec![]);
}

#[test]
fn bare_parameter_needs_a_lock_pair_across_functions() {
    let mut b = B::new();
    let put = b.scope("put_if_absent");
    let del = b.scope("delete");
    b.op(
        put,
        OpKind::Acquire { expiry: true },
        KeyExpr::var("key"),
        Some(ValueExpr::Unknown),
    );
    b.op(
        del,
        OpKind::Release { checked: false },
        KeyExpr::var("key"),
        None,
    );
    assert_eq!(b.run(), vec![]);

    let mut b = B::new();
    let lock = b.scope("try_lock");
    let unlock = b.scope("unlock");
    b.op(
        lock,
        OpKind::Acquire { expiry: true },
        KeyExpr::var("key"),
        Some(ValueExpr::Unknown),
    );
    b.op(
        unlock,
        OpKind::Release { checked: false },
        KeyExpr::var("key"),
        None,
    );
    assert_eq!(b.run(), vec![("LL002", 20)]);
}

#[test]
fn rollback_of_failed_expire_is_not_ll002() {
    let mut b = B::new();
    let f = b.scope("acquire");
    b.op(
        f,
        OpKind::Acquire { expiry: false },
        lockkey(),
        Some(ValueExpr::Unique),
    );
    b.op(f, OpKind::Expire, lockkey(), None);
    b.op(f, OpKind::Release { checked: false }, lockkey(), None)
        .set_depth(1);
    assert_eq!(b.run(), vec![("LL003", 10)]);
}

#[test]
fn bare_extend_is_ll007_and_weak_token_ll009() {
    // A weak value that nothing compares is not a token (SPEC §2 weak token).
    let mut b = B::new();
    let a = b.scope("acquire");
    let w = b.scope("watchdog");
    b.op(
        a,
        OpKind::Acquire { expiry: true },
        lockkey(),
        Some(ValueExpr::Weak("a thread id".into())),
    );
    b.op(w, OpKind::Expire, lockkey(), None);
    assert_eq!(b.run(), vec![("LL007", 20)]);
    // A checked release compares it: now it is a weak token.
    let r = b.scope("release");
    b.op(r, OpKind::Release { checked: true }, lockkey(), None);
    assert_eq!(b.run(), vec![("LL007", 20), ("LL009", 10)]);
}

#[test]
fn unsafe_release_script_is_ll006_only() {
    let mut b = B::new();
    let f = b.scope("unlock");
    b.facts.scripts.push(ScriptFact {
        name: Some("UNLOCK".into()),
        text: "return redis.call('del', KEYS[1])".into(),
        anchors: vec![(0, 100)],
        lua: LuaFacts {
            calls: vec![LuaCall {
                command: "del".into(),
                args: vec![LuaArg::Keys(1)],
                guarded: false,
                absent: false,
                span: Span::new(7, 33),
            }],
            partial: false,
        },
        client: Client::RedisRs,
    });
    b.op(f, OpKind::Eval { script: Some(0) }, lockkey(), None);
    assert_eq!(b.run(), vec![("LL006", 107)]);
    b.facts.scripts[0].lua.calls[0].guarded = true;
    assert_eq!(b.run(), vec![]);
}

#[test]
fn fail_open_needs_a_lock() {
    let mut b = B::new();
    let f = b.scope("acquire");
    b.facts.fail_opens.push(FailOpen {
        span: Span::new(50, 60),
        key: lockkey(),
        scope: f,
        client: Client::RedisRs,
    });
    assert_eq!(b.run(), vec![("LL008", 50)]);
    b.facts.fail_opens[0].key = KeyExpr::lit("ratelimit:ip");
    assert_eq!(b.run(), vec![]);
}

#[test]
fn every_rule_has_documented_sections() {
    for r in all() {
        let m = r.meta();
        for s in [
            "What it does",
            "Why is this bad?",
            "Example",
            "Use instead",
            "What the fix does not solve",
        ] {
            assert!(
                m.section(s).is_some_and(|t| !t.is_empty()),
                "{} lacks section {s}",
                m.code
            );
        }
    }
}

#[test]
fn the_acquire_sequence_expire_is_not_an_extension() {
    // setnx("lock:"+job, "1"); expire(..): LL003 only, not LL001 (nothing releases or extends it).
    let mut b = B::new();
    let f = b.scope("throttle");
    b.op(
        f,
        OpKind::Acquire { expiry: false },
        lockkey(),
        Some(ValueExpr::Constant("\"1\"".into())),
    );
    b.op(f, OpKind::Expire, lockkey(), None);
    assert_eq!(b.run(), vec![("LL003", 10)]);
}

#[test]
fn setnx_expire_marker_or_counter_is_not_a_lock() {
    let mut b = B::new();
    let f = b.scope("check_idempotency");
    b.op(
        f,
        OpKind::Acquire { expiry: false },
        KeyExpr::var("key"),
        Some(ValueExpr::Constant("\"processed\"".into())),
    );
    b.op(f, OpKind::Expire, KeyExpr::var("key"), None);
    assert_eq!(b.run(), vec![]);

    // A counter created with SETNX "0" + EXPIRE, later rewritten with SETEX.
    let mut b = B::new();
    let init = b.scope("init");
    let bump = b.scope("bump");
    b.op(
        init,
        OpKind::Acquire { expiry: false },
        counter_key(),
        Some(ValueExpr::Constant("\"0\"".into())),
    );
    b.op(init, OpKind::Expire, counter_key(), None);
    b.op(
        bump,
        OpKind::Set { expiry: true },
        counter_key(),
        Some(ValueExpr::Unknown),
    );
    assert_eq!(b.run(), vec![]);
}

#[test]
fn a_configured_no_ttl_branch_beside_a_ttl_acquire_is_not_ll004() {
    let mut b = B::new();
    let f = b.scope("acquire");
    b.op(
        f,
        OpKind::Acquire { expiry: true },
        lockkey(),
        Some(ValueExpr::Unknown),
    );
    b.op(
        f,
        OpKind::Acquire { expiry: false },
        lockkey(),
        Some(ValueExpr::Unknown),
    )
    .set_depth(1);
    assert_eq!(b.run(), vec![]);
}

#[test]
fn a_deliberate_reset_is_not_evidence_of_a_lock() {
    // A counter created with SETNX + EXPIRE and wiped in `reset()`: no lock.
    let mut b = B::new();
    let init = b.scope("enableQueue");
    let reset = b.scope("reset");
    b.op(
        init,
        OpKind::Acquire { expiry: false },
        counter_key(),
        Some(ValueExpr::Constant("\"0\"".into())),
    );
    b.op(init, OpKind::Expire, counter_key(), None);
    b.op(
        reset,
        OpKind::Release { checked: false },
        counter_key(),
        None,
    );
    assert_eq!(b.run(), vec![]);
}

#[test]
fn a_release_beside_the_expire_is_not_a_rollback() {
    // setnx(k); ensure: if timeout { expire(k) } else { del(k) }: the del runs
    // whether or not this process took the lock.
    let mut b = B::new();
    let f = b.scope("with_lock");
    b.op(
        f,
        OpKind::Acquire { expiry: false },
        lockkey(),
        Some(ValueExpr::Unique),
    );
    b.op(f, OpKind::Expire, lockkey(), None).set_depth(1);
    b.op(f, OpKind::Release { checked: false }, lockkey(), None)
        .set_depth(1);
    assert_eq!(b.run(), vec![("LL002", 30), ("LL003", 10)]);
}

#[test]
fn lock_named_key_needs_corroboration() {
    // Only deleted, never acquired, in a function that is not a lock function.
    let mut b = B::new();
    let f = b.scope("verified");
    b.op(f, OpKind::Release { checked: false }, lockkey(), None);
    assert_eq!(b.run(), vec![]);
    // The same release in a lock function is a lock release.
    let mut b = B::new();
    let f = b.scope("releaseLock");
    b.op(f, OpKind::Release { checked: false }, lockkey(), None);
    assert_eq!(b.run(), vec![("LL002", 10)]);
}

#[test]
fn once_only_marker_rollback_is_silent() {
    let mut b = B::new();
    let f = b.scope("enqueue");
    b.op(
        f,
        OpKind::Acquire { expiry: true },
        KeyExpr::lit("enqueued:job"),
        Some(ValueExpr::Constant("1".into())),
    );
    b.op(
        f,
        OpKind::Release { checked: false },
        KeyExpr::lit("enqueued:job"),
        None,
    );
    b.facts.failure_spans.push(Span::new(15, 25));
    assert_eq!(b.run(), vec![]);
    // A delete on the success path too: it is a lock.
    b.op(
        f,
        OpKind::Release { checked: false },
        KeyExpr::lit("enqueued:job"),
        None,
    );
    assert_eq!(b.run(), vec![("LL001", 10), ("LL002", 20), ("LL002", 30)]);
}

#[test]
fn counter_initialised_with_set_if_absent_is_not_a_lock() {
    let mut b = B::new();
    let f = b.scope("init");
    let g = b.scope("bump");
    b.op(
        f,
        OpKind::Acquire { expiry: false },
        KeyExpr::lit("seq:order"),
        Some(ValueExpr::Constant("0".into())),
    );
    b.op(g, OpKind::Incr, KeyExpr::lit("seq:order"), None);
    b.op(g, OpKind::Expire, KeyExpr::lit("seq:order"), None);
    b.op(
        g,
        OpKind::Release { checked: false },
        KeyExpr::lit("seq:order"),
        None,
    );
    assert_eq!(b.run(), vec![]);
}

#[test]
fn sorted_set_semaphore_expire_is_not_a_lock_extend() {
    // ZADD slots token; PEXPIRE slots; ZREM slots token: a slot pool whose
    // key reads like a lock. A bare-local namesake in another function stays a lock.
    let mut b = B::new();
    let f = b.scope("acquire_slot");
    let g = b.scope("keep_lock");
    let slots = KeyExpr::lit("jobs:semaphore:slots");
    b.op(f, OpKind::Members, slots.clone(), None);
    b.op(f, OpKind::Expire, slots.clone(), None);
    b.op(f, OpKind::Release { checked: false }, slots.clone(), None);
    assert_eq!(b.run(), vec![]);
    b.op(g, OpKind::Expire, KeyExpr::lit("jobs:lock"), None);
    assert_eq!(b.run(), vec![("LL007", 40)]);
    // a local `lock_key` written as a collection in another function
    let h = b.scope("pool");
    b.op(h, OpKind::Members, KeyExpr::var("lock_key"), None);
    b.op(
        g,
        OpKind::Acquire { expiry: true },
        KeyExpr::var("lock_key"),
        Some(ValueExpr::Constant("1".into())),
    );
    b.op(
        g,
        OpKind::Release { checked: false },
        KeyExpr::var("lock_key"),
        None,
    );
    assert_eq!(b.run(), vec![("LL001", 60), ("LL002", 70), ("LL007", 40)]);
}

#[test]
fn release_behind_validity_guard_is_silent() {
    let mut b = B::new();
    let f = b.scope("work");
    b.op(
        f,
        OpKind::Acquire { expiry: true },
        lockkey(),
        Some(ValueExpr::Constant("1".into())),
    );
    b.op(f, OpKind::Release { checked: false }, lockkey(), None);
    b.facts.validity_spans.push(Span::new(15, 25));
    assert_eq!(b.run(), vec![]);
}

#[test]
fn lock_that_cannot_expire_is_ll003_not_ll002() {
    // SETNX k (no TTL); work; MULTI EXPIRE k; DEL k EXEC: it never expires
    // while held, so no one else can hold it when it is deleted.
    let mut b = B::new();
    let f = b.scope("run");
    b.op(
        f,
        OpKind::Acquire { expiry: false },
        lockkey(),
        Some(ValueExpr::Constant("1".into())),
    );
    b.op(f, OpKind::Expire, lockkey(), None).set_atomic(true);
    b.op(f, OpKind::Release { checked: false }, lockkey(), None)
        .set_atomic(true);
    assert_eq!(b.run(), vec![("LL003", 10)]);
    // With a TTL of its own it can change hands: LL001 and LL002.
    b.facts.ops[0].kind = OpKind::Acquire { expiry: true };
    assert_eq!(b.run(), vec![("LL001", 10), ("LL002", 30), ("LL007", 20)]);
}

#[test]
fn legacy_takeover_is_ll010_only() {
    // SETNX k <deadline>; GET k; GETSET k <deadline>: LL010, not LL004/LL009.
    let mut b = B::new();
    let f = b.scope("try_lock");
    b.op(
        f,
        OpKind::Acquire { expiry: false },
        lockkey(),
        Some(ValueExpr::Weak("the current time".into())),
    );
    b.op(f, OpKind::Get, lockkey(), None);
    b.op(f, OpKind::GetSet, lockkey(), None);
    assert_eq!(b.run(), vec![("LL010", 10)]);
    // A GETSET without a set-if-absent of the key swaps a value: nothing.
    let mut b = B::new();
    let f = b.scope("swap");
    b.op(f, OpKind::GetSet, counter_key(), None);
    assert_eq!(b.run(), vec![]);
    // A set-if-absent without a takeover is still LL004.
    let mut b = B::new();
    let f = b.scope("try_lock");
    b.op(
        f,
        OpKind::Acquire { expiry: false },
        lockkey(),
        Some(ValueExpr::Unique),
    );
    b.op(f, OpKind::Get, lockkey(), None);
    assert_eq!(b.run(), vec![("LL004", 10)]);
}

#[test]
fn check_then_set_is_ll011_not_ll007() {
    let build = |key: KeyExpr, fn_name: &str, guard: bool| {
        let mut b = B::new();
        let f = b.scope(fn_name);
        let check = b.op(f, OpKind::Exists, key.clone(), None).name_span;
        let write = b
            .op(
                f,
                OpKind::Set { expiry: true },
                key,
                Some(ValueExpr::Unique),
            )
            .name_span;
        if guard {
            b.facts.absence_guards.push(AbsenceGuard { check, write });
        }
        b
    };
    // A lock-named key taken by an acquire function: LL011 at the SET, and no LL007 for it.
    assert_eq!(
        build(lockkey(), "tryAcquire", true).run(),
        vec![("LL011", 20)]
    );
    // Unguarded (the SET runs whether or not the key was there): LL007 as before.
    assert_eq!(
        build(lockkey(), "tryAcquire", false).run(),
        vec![("LL007", 20)]
    );
    // A lock-named key that is never released nor acquired, written by a
    // function that is no lock function (a rate limit, an attempt lockout):
    // not LL011, and (uncorroborated, SPEC §2 lock key) no lock at all.
    assert_eq!(build(lockkey(), "checkRateLimit", true).run(), vec![]);
    // ... unless something releases it: then it is used as a lock.
    let mut b = build(lockkey(), "checkRateLimit", true);
    let done = b.scope("finish");
    b.op(done, OpKind::Release { checked: true }, lockkey(), None);
    assert_eq!(b.run(), vec![("LL011", 20)]);
    // A cache key: a read-through, not a lock.
    assert_eq!(build(counter_key(), "load", true).run(), vec![]);
    // A bare key in a function named like a lock.
    assert_eq!(
        build(KeyExpr::var("key"), "tryLock", true).run(),
        vec![("LL011", 20)]
    );
    // Under WATCH the check and the write are one optimistic transaction.
    let mut b = build(lockkey(), "tryAcquire", true);
    b.facts.ops[0].set_watched(true);
    b.facts.ops[1].set_watched(true);
    assert_eq!(b.run(), vec![]);
}

/// A seeded generator for the randomised tests: `next(n)` draws below `n`
/// (a linear congruential sequence: the same draws on every run).
fn seeded(mut seed: u64) -> impl FnMut(u64) -> usize {
    move |n: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((seed >> 33) % n) as usize
    }
}

/// The span index answers as a scan of every span does, for nested,
/// overlapping, empty and repeated spans, at every offset around them.
#[test]
fn the_span_index_answers_as_a_scan_of_the_spans() {
    let mut next = seeded(7);
    for round in 0..300 {
        let count = round % 12;
        let spans: Vec<Span> = (0..count)
            .map(|_| {
                let start = next(60);
                Span::new(start, start + next(25))
            })
            .collect();
        let index = SpanIndex::new(&spans);
        for at in 0..90 {
            let scan = spans.iter().any(|s| s.start() <= at && at < s.end());
            assert_eq!(index.contains(at), scan, "{spans:?} at {at}");
        }
    }
}

/// The deferred index finds the first deferred op (in start order) holding
/// an offset, as a scan of the list does: nested, repeated and empty spans,
/// at every offset around them.
#[test]
fn the_deferred_index_answers_as_a_scan_of_the_list() {
    let mut next = seeded(11);
    for round in 0..300 {
        let count = round % 12;
        let mut list: Vec<crate::facts::Deferred> = (0..count)
            .map(|_| {
                let start = next(60);
                crate::facts::Deferred {
                    span: Span::new(start, start + next(25)),
                    scope: 0,
                    runs_at: 0,
                }
            })
            .collect();
        list.sort_by_key(|d| d.span);
        for (i, d) in list.iter_mut().enumerate() {
            d.scope = i as ScopeId;
        }
        let index = DeferredIndex::new(&list);
        for at in 0..90 {
            let scan = list
                .iter()
                .position(|d| d.span.start() <= at && at < d.span.end());
            let found = index.at(at).map(|d| d.scope as usize);
            assert_eq!(
                found,
                scan,
                "{:?} at {at}",
                list.iter().map(|d| d.span).collect::<Vec<_>>()
            );
        }
    }
}

/// The acquire whose token a release's or an extend's fix uses is the
/// first, in the facts' order, of the token-writing acquires on the key
/// earlier in the op's function or in another method of its type, as a
/// walk of the key group finds it — also where ops linked in later
/// (appended to the facts) come earlier in a scope's order, and where
/// methods pair as the same key by their names rather than by evidence.
#[test]
fn the_token_acquire_of_a_fix_is_the_one_a_walk_of_the_group_finds() {
    let mut next = {
        let mut draw = seeded(5);
        move |n: u64| draw(n) as u32
    };
    for round in 0..400 {
        let mut b = B::new();
        let mut scopes = Vec::new();
        for (name, owner) in [
            ("run", None),
            ("tryLock", Some("Worker")),
            ("unlock", Some("Worker")),
            ("refresh", Some("Worker")),
            ("tryLock", Some("Other")),
            ("work", None),
        ] {
            scopes.push(b.facts.add_scope(Scope {
                name: name.into(),
                owner: owner.map(String::from),
                is_test: false,
            }));
        }
        for _ in 0..(round % 16) {
            let kind = match next(3) {
                0 => OpKind::Acquire { expiry: true },
                1 => OpKind::Release { checked: false },
                _ => OpKind::Expire,
            };
            let value = match next(3) {
                0 => Some(ValueExpr::Constant("\"1\"".into())),
                1 => Some(ValueExpr::Unique),
                _ => None,
            };
            let scope = scopes[next(scopes.len() as u64) as usize];
            // a key with evidence, one without, another key
            let key = match next(4) {
                0 => KeyExpr::lit("other"),
                1 => KeyExpr::var("k"),
                _ => lockkey(),
            };
            let order = next(20);
            b.op(scope, kind, key, value).order = order;
        }
        let cx = Context::new(&b.facts, "app", &[], Target::default());
        for op in cx.ops() {
            let owner = &cx.facts.scope(op.scope).owner;
            let walk = cx.key_group(op).iter().find(|a| {
                matches!(a.kind, OpKind::Acquire { .. })
                    && !matches!(a.value(), Some(ValueExpr::Constant(_)))
                    && ((a.scope == op.scope && a.order < op.order)
                        || (a.scope != op.scope
                            && owner.is_some()
                            && cx.facts.scope(a.scope).owner == *owner))
                    && cx.same_key(a, op)
            });
            assert_eq!(
                fixes::token_acquire(&cx, op).map(|a| a as *const Op),
                walk.map(|a| a as *const Op),
                "round {round}, op at order {} in scope {}",
                op.order,
                op.scope
            );
        }
    }
}

/// The advice of two findings, in two files checked one after the other,
/// is one shared text; a text met once more is the same copy.
#[test]
fn advice_texts_are_one_copy_for_the_run() {
    let two_files = || {
        let mut b = B::new();
        let s = b.scope("take_and_release");
        b.op(
            s,
            OpKind::Acquire { expiry: true },
            lockkey(),
            Some(ValueExpr::Constant("1".into())),
        );
        b.op(s, OpKind::Release { checked: false }, lockkey(), None);
        let cx = Context::new(&b.facts, "app", &[], Target::default());
        run_all(&cx, |_| true)
            .list
            .into_iter()
            .map(|d| (d.meta().code, d.wording().help.clone()))
            .collect::<Vec<_>>()
    };
    let (first, second) = (two_files(), two_files());
    assert!(!first.is_empty());
    assert_eq!(first.len(), second.len());
    for ((c1, h1), (c2, h2)) in first.iter().zip(&second) {
        assert_eq!(c1, c2);
        assert!(
            std::sync::Arc::ptr_eq(h1, h2),
            "{c1}: the advice is copied per file"
        );
    }
    let facts = FileFacts::new(Language::Go);
    let cx = Context::new(&facts, "app", &[], Target::default());
    let a = cx.text("a text of its own for this test");
    assert!(std::sync::Arc::ptr_eq(
        &a,
        &cx.text("a text of its own for this test")
    ));
}

/// A shape set finds a key by its shape (the literal parts, or what
/// `write_shape` keeps), given as a key or part by part as a slice is.
#[test]
fn shape_sets_find_keys_by_their_shape() {
    let key = |parts: Vec<KeyPart>| KeyExpr {
        parts: parts.into(),
        idents: Default::default(),
    };
    let lit = |s: &str| KeyPart::Lit(s.into());
    let var = |s: &str| KeyPart::Var(s.into());
    let mut b = B::new();
    let s = b.scope("f");
    b.op(
        s,
        OpKind::Acquire { expiry: true },
        key(vec![lit("lock:"), var("id")]),
        None,
    );
    b.op(
        s,
        OpKind::Acquire { expiry: true },
        key(vec![var("a")]),
        None,
    );
    let ops: Vec<&Op> = b.facts.ops.iter().collect();
    let mut literal = ShapeSet::new(ShapeOf::Literal, &b.facts.ops);
    let mut write = ShapeSet::new(ShapeOf::Write, &b.facts.ops);
    for op in &ops {
        literal.insert(op);
        literal.insert(op);
        write.insert(op);
    }
    assert_eq!(literal.table.len(), 2, "one entry a shape");
    // the variable's name is not part of either shape of a key with a literal
    assert!(literal.contains(&key(vec![lit("lock:"), var("order")])));
    assert!(write.contains(&key(vec![lit("lock:"), var("order")])));
    assert!(!literal.contains(&key(vec![lit("lock:")])));
    assert!(!literal.contains(&key(vec![lit("lock:"), var("id"), lit(":x")])));
    // a key of variables alone keeps their names in its write shape
    assert!(write.contains(&key(vec![var("a")])));
    assert!(!write.contains(&key(vec![var("b")])));
    assert!(literal.contains(&key(vec![var("b")])));
    assert!(write.contains_parts([Some("lock:"), None].into_iter()));
    assert!(!write.contains_parts([Some("lock:")].into_iter()));
}

/// A diagnostic keeps its quotes' lengths in 16 bits: a quote longer than
/// that stays in its text, and every text reads back as it was given.
#[test]
fn diagnostics_read_back_their_texts_whatever_their_quotes() {
    let mut diags = Diags {
        out: Reports::default(),
        meta: all()[0].meta(),
        wordings: HashMap::new(),
        label_words: HashMap::new(),
    };
    let long = "k".repeat(70_000);
    let cases = [
        (
            format!("lock `{long}` is held"),
            "the `lock:a` label".to_string(),
        ),
        (
            "lock `lock:a` is held".to_string(),
            format!("`{long}` here"),
        ),
        (
            "lock `lock:b` is held".to_string(),
            "key `lock:b`".to_string(),
        ),
        ("no quote".to_string(), "none".to_string()),
        (
            "lock `lock:c` is held".to_string(),
            "other `lock:d`".to_string(),
        ),
    ];
    for (message, label) in &cases {
        diags.push(Diagnostic {
            span: Span::new(1, 2),
            own_flow: false,
            message: message.clone(),
            label: label.clone(),
            help: crate::finding::shared("help"),
            note: None,
            labels: vec![(Span::new(3, 4), format!("see `{long}`"))],
        });
    }
    let reports = diags.out;
    assert_eq!(reports.list.len(), cases.len());
    for (d, (message, label)) in reports.list.iter().zip(&cases) {
        let (mq, lq, same) = reports.quotes(d);
        let w = d.wording();
        let lq = if same { mq.clone() } else { lq };
        assert_eq!(
            Text::from_parts(w.message.clone(), mq).to_string(),
            *message
        );
        assert_eq!(Text::from_parts(w.label.clone(), lq).to_string(), *label);
        let labels = reports.labels(d);
        assert_eq!(labels.len(), 1);
        assert_eq!(labels[0].1.to_string(), format!("see `{long}`"));
    }
}

/// An expiry verdict as one u32 orders as the (offset, unknown) pair did,
/// and tells the pairs apart.
#[test]
fn expiry_verdicts_order_as_their_pairs() {
    let pairs: Vec<(usize, bool)> = [0usize, 1, 2, 7, 1 << 20, (1 << 28) - 1]
        .iter()
        .flat_map(|&at| [(at, false), (at, true)])
        .collect();
    for &a in &pairs {
        for &b in &pairs {
            assert_eq!(
                a.cmp(&b),
                expiry_verdict(a.0, a.1).cmp(&expiry_verdict(b.0, b.1)),
                "{a:?} {b:?}"
            );
        }
    }
}

/// `earlier_token_acquire` gives the first token-writing acquire of the
/// scope's ops on the key before the op, whether the list is short (walked
/// each time) or long (remembered), asked once or again.
#[test]
fn earlier_token_acquire_is_the_same_for_short_and_long_key_lists() {
    for n in [3usize, 8, 9, 24] {
        let mut b = B::new();
        let f = b.scope("f");
        for i in 0..n {
            let (kind, value) = match i % 4 {
                0 => (OpKind::Release { checked: false }, None),
                1 => (
                    OpKind::Acquire { expiry: true },
                    Some(ValueExpr::Constant("1".into())),
                ),
                2 => (OpKind::Acquire { expiry: true }, Some(ValueExpr::Unique)),
                _ => (OpKind::Expire, None),
            };
            b.op(f, kind, KeyExpr::lit("lock:a"), value);
        }
        let cx = Context::new(&b.facts, "app", &[], Target::default());
        let ops = &b.facts.ops;
        for round in 0..2 {
            for op in ops {
                let want = ops.iter().find(|a| {
                    a.order < op.order
                        && matches!(a.kind, OpKind::Acquire { .. })
                        && a.value() == Some(&ValueExpr::Unique)
                });
                let got = cx.earlier_token_acquire(op);
                assert_eq!(
                    got.map(|a| a.order),
                    want.map(|a| a.order),
                    "{n} ops, round {round}, op {}",
                    op.order
                );
            }
        }
    }
}
