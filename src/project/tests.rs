use super::*;
use crate::facts::{Language, OpKind};
use crate::frontend;
use rustc_hash::FxHashSet as HashSet;
use std::path::Path;

fn facts(name: &str, src: &str) -> FileFacts {
    let lang = Language::from_path(Path::new(name)).unwrap();
    frontend::extract(Path::new(name), src, lang)
}

fn link_all(files: &[(&str, &str)]) -> (Vec<FileFacts>, Vec<FileView>) {
    let fs: Vec<FileFacts> = files.iter().map(|(n, s)| facts(n, s)).collect();
    let stems: Vec<String> = files
        .iter()
        .map(|(n, _)| n.split('.').next().unwrap().to_string())
        .collect();
    let project: Vec<ProjectFile> = files
        .iter()
        .zip(&fs)
        .zip(&stems)
        .map(|(((n, _), f), stem)| ProjectFile {
            display: n,
            stem,
            facts: f,
        })
        .collect();
    let views = link_project(&project);
    (fs, views)
}

const UTIL: &str = r#"
public class RedisUtil {
    private StringRedisTemplate redisTemplate;
    public boolean tryLock(String key, String value, long seconds) {
        return redisTemplate.opsForValue().setIfAbsent(key, value, seconds, TimeUnit.SECONDS);
    }
    public void evict(String key) {
        redisTemplate.delete(key);
    }
}
"#;

const CALLER: &str = r#"
public class OrderService {
    private RedisUtil redisUtil;
    public void pay(String orderId) {
        String lockKey = "lock:order:" + orderId;
        if (redisUtil.tryLock(lockKey, "1", 30)) {
            redisUtil.evict(lockKey);
        }
    }
}
"#;

#[test]
fn wrapper_ops_are_instantiated_at_the_call_site_with_the_callers_arguments() {
    let (fs, views) = link_all(&[("RedisUtil.java", UTIL), ("OrderService.java", CALLER)]);
    assert!(!fs[0].link.functions.is_empty(), "{:?}", fs[0].link);
    let insts = &views[1].insts;
    assert_eq!(insts.len(), 2, "{:?}\n{:?}", fs[1].link.calls, insts);
    assert_eq!(insts[0].op.kind, OpKind::Acquire { expiry: true });
    assert_eq!(insts[0].op.key.display(), "lock:order:{orderId}");
    assert_eq!(
        insts[0].op.value().cloned(),
        Some(crate::facts::ValueExpr::Constant("\"1\"".into()))
    );
    assert_eq!(insts[1].op.kind, OpKind::Release { checked: false });
    assert_eq!(insts[1].op.key.display(), "lock:order:{orderId}");
    assert_eq!(insts[1].via, "RedisUtil.evict");
    // `evict` forwards its parameter: a facade; `tryLock` is named like a lock
    assert_eq!(views[0].facades.len(), 1);
}

#[test]
fn only_keys_that_name_the_same_thing_everywhere_correlate_across_files() {
    let acquire = |key: &str| {
        format!(
            "class A {{ void a() {{ redisTemplate.opsForValue().setIfAbsent({key}, token, 10, TimeUnit.SECONDS); }} }}"
        )
    };
    let release = |key: &str| format!("class B {{ void b() {{ redisTemplate.delete({key}); }} }}");
    for (key, shared) in [
        ("\"report:daily\"", true),
        ("REPORT_KEY", true),
        ("this.key", false),
        ("command.getKey()", false),
    ] {
        let (a, b) = (acquire(key), release(key));
        let (_, views) = link_all(&[("A.java", &a), ("B.java", &b)]);
        assert_eq!(
            !views[1].foreign.is_empty(),
            shared,
            "{key}: {:?}",
            views[1].foreign
        );
    }
}

#[test]
fn a_function_forwarding_to_a_facade_is_a_facade_too() {
    let outer = r#"
public class Cache {
    private RedisUtil redisUtil;
    public void remove(String key) {
        redisUtil.evict(key);
    }
}
"#;
    let (_, views) = link_all(&[("RedisUtil.java", UTIL), ("Cache.java", outer)]);
    assert_eq!(views[1].insts.len(), 1);
    assert_eq!(views[1].facades, vec![views[1].insts[0].op.scope]);
}

#[test]
fn cached_facts_keep_their_calls_apart_and_give_them_back_unchanged() {
    let src = "import redis\nr = redis.Redis()\n\ndef acquire(key, owner):\n    return r.set(key, owner, nx=True, ex=30)\n\ndef handler(user):\n    if acquire('lock:' + user, user):\n        audit(user, 'locked')\n        helper.release('lock:' + user)\n";
    let mut f = facts("svc.py", src);
    assert!(f.link.calls.len() >= 2, "{:?}", f.link.calls);
    let whole = rmp_serde::to_vec(&f).unwrap();
    let Some(cache::Outcome::Facts(bytes)) = cache::encode(&mut f, None) else {
        panic!("facts not encoded");
    };
    // encoding leaves the facts as they were
    assert_eq!(rmp_serde::to_vec(&f).unwrap(), whole);
    let (mut back, packed) = cache::decode(&bytes).expect("decodes");
    assert!(back.link.calls.is_empty());
    let packed = packed.expect("the calls, packed");
    let names: Vec<&str> = packed.names.iter().map(|(n, _)| n).collect();
    assert!(
        names.contains(&"acquire") && names.contains(&"audit"),
        "{names:?}"
    );
    back.link.calls = packed.unpack(None, &mut back.link.functions);
    assert_eq!(rmp_serde::to_vec(&back).unwrap(), whole);
    // a file without calls has none packed
    let mut plain = facts("plain.py", "x = 1\n");
    let Some(cache::Outcome::Facts(bytes)) = cache::encode(&mut plain, None) else {
        panic!("facts not encoded");
    };
    assert!(cache::decode(&bytes).expect("decodes").1.is_none());
}

#[test]
fn cached_lua_facts_come_back_unchanged() {
    // every kind of argument, a boxed affixed key and literals read from
    // the text or decoded from escapes among them
    let src = "local k = KEYS[2]\nif redis.call('get', 'lock_' .. KEYS[1]) == ARGV[1] then\n  \
               redis.call('set', k .. ':x', ARGV[2], 'N\\x58', [[PX]], -1, 7, y)\n  \
               return redis.call(\"DEL\", 'lock_' .. KEYS[1])\nend\n";
    let mut f = facts("release.lua", src);
    let args = &f.scripts[0].lua.calls[1].args;
    assert!(
        matches!(&args[0], crate::facts::LuaArg::KeysAffixed(k) if k.index == 2 && k.suffix == ":x"),
        "{args:?}"
    );
    assert_eq!(args[2], crate::facts::LuaArg::Literal("NX".into()));
    let whole = f.clone();
    let Some(cache::Outcome::Facts(bytes)) = cache::encode(&mut f, None) else {
        panic!("facts not encoded");
    };
    let (back, _) = cache::decode(&bytes).expect("decodes");
    assert_eq!(back.scripts, whole.scripts);
}

#[test]
fn cached_calls_stay_in_the_shard_until_detached() {
    let src = "import redis\nr = redis.Redis()\n\ndef acquire(key, owner):\n    return r.set(key, owner, nx=True, ex=30)\n\ndef handler(user):\n    if acquire('lock:' + user, user):\n        audit(user, 'locked')\n";
    let mut f = facts("svc.py", src);
    let whole = rmp_serde::to_vec(&f).unwrap();
    let Some(cache::Outcome::Facts(blob)) = cache::encode(&mut f, None) else {
        panic!("facts not encoded");
    };
    let unpacked = |packed: calls::PackedCalls, keep: Option<&HashSet<String>>| {
        let (mut back, _) = cache::decode(&blob).expect("decodes");
        back.link.calls = packed.unpack(keep, &mut back.link.functions);
        back
    };
    // shared: the same calls as a copy gives
    let (_, packed) = cache::decode_shared(&blob).expect("decodes");
    let packed = packed.expect("the calls, packed");
    assert!(packed.is_shared());
    assert_eq!(rmp_serde::to_vec(&unpacked(packed, None)).unwrap(), whole);
    // detached for every call: copied, the same calls
    let (_, packed) = cache::decode_shared(&blob).expect("decodes");
    let mut packed = packed.expect("the calls, packed");
    packed.detach(None);
    assert!(!packed.is_shared());
    assert_eq!(rmp_serde::to_vec(&unpacked(packed, None)).unwrap(), whole);
    // detached for kept names: a kept one's calls are read as before
    let keep: HashSet<String> = ["audit".to_string()].into_iter().collect();
    let (_, packed) = cache::decode_shared(&blob).expect("decodes");
    let mut packed = packed.expect("the calls, packed");
    packed.detach(Some(&keep));
    assert!(!packed.is_shared());
    let calls = unpacked(packed, Some(&keep)).link.calls;
    assert_eq!(calls.len(), 1);
    assert_eq!(&*calls[0].callee, "audit");
    // the calls alone, the facts stepped over: what packing them again gives
    let alone = cache::packed_calls(&blob).expect("the calls, packed");
    assert!(alone.is_shared());
    let mut again = facts("svc.py", src);
    let taken = calls::PackedCalls::take(&mut again).expect("calls");
    assert_eq!(
        rmp_serde::to_vec(&alone).unwrap(),
        rmp_serde::to_vec(&taken).unwrap()
    );
    assert!(cache::packed_calls(&blob).is_some());
    // none kept: nothing is copied and nothing read
    let none: HashSet<String> = ["print".to_string()].into_iter().collect();
    let (_, packed) = cache::decode_shared(&blob).expect("decodes");
    let mut packed = packed.expect("the calls, packed");
    packed.detach(Some(&none));
    assert!(!packed.is_shared());
    assert!(unpacked(packed, Some(&none)).link.calls.is_empty());
}

#[test]
fn cached_facts_say_what_the_link_can_use_without_being_decoded() {
    let src = "import redis\nr = redis.Redis()\n\ndef acquire(key, owner):\n    return r.set(key, owner, nx=True, ex=30)\n\ndef handler(user):\n    if acquire('lock:' + user, user):\n        audit(user)\n";
    let mut f = facts("svc.py", src);
    let Some(cache::Outcome::Facts(bytes)) = cache::encode(&mut f, None) else {
        panic!("facts not encoded");
    };
    let uses = cache::uses(&bytes).expect("a head");
    assert_eq!(uses.language, Language::Python);
    assert!(uses.has_ops);
    let pairs: Vec<(u64, u64)> = uses.pairs().collect();
    let h = cache::name_hash;
    assert!(pairs.contains(&(h("acquire"), h("handler"))), "{pairs:?}");
    assert!(pairs.contains(&(h("audit"), h("handler"))), "{pairs:?}");
    assert_eq!(pairs, cache::call_pairs(&f));
    // a caller of `handler` in a file left encoded joins the closure, and so
    // does its caller; `print` and its caller do not
    let mut caller = facts(
        "jobs.py",
        "def run(u):\n    handler(u)\n\ndef main():\n    run(1)\n    print(2)\n\ndef other():\n    print(3)\n",
    );
    assert!(caller.ops.is_empty());
    let Some(cache::Outcome::Facts(lazy)) = cache::encode(&mut caller, None) else {
        panic!("facts not encoded");
    };
    let lazy_uses = cache::uses(&lazy).expect("a head");
    assert!(!lazy_uses.has_ops);
    let (read, _) = cache::decode(&bytes).expect("decodes");
    let used = calls::relevant_hashes(
        std::iter::once((&read, None)).chain(std::iter::once((&f, None))),
        &[lazy_uses],
    );
    for name in ["acquire", "handler", "run", "main"] {
        assert!(used.contains(&h(name)), "{name}");
    }
    for name in ["print", "other", "audit"] {
        assert!(!used.contains(&h(name)), "{name}");
    }
    // bytes of another layout or cut short: no head, never a panic
    assert!(cache::uses(&bytes[1..]).is_none());
    for cut in 0..8 {
        assert!(cache::uses(&bytes[..cut]).is_none(), "cut at {cut}");
        assert!(cache::decode(&bytes[..cut]).is_none(), "cut at {cut}");
    }
}

/// The kinds of the ops instantiated in `view` at the call on `line`
/// (1-based) of `src`.
fn insts_on_line(view: &FileView, src: &str, line: usize) -> Vec<OpKind> {
    let start: usize = src.lines().take(line - 1).map(|l| l.len() + 1).sum();
    let end = start + src.lines().nth(line - 1).map_or(0, str::len);
    view.insts
        .iter()
        .filter(|i| (start..end).contains(&i.op.name_span.start()))
        .map(|i| i.op.kind.clone())
        .collect()
}

const TS_CACHE: &str = r#"import Redis from "ioredis";
export class RedisCache {
  constructor(private readonly redis: Redis) {}
  async acquireKey<T = unknown>(key: string, value: T, opts: Options = {}): Promise<boolean> {
    if (opts.ttl) {
      return this.redis.set(key, JSON.stringify(value), "PX", opts.ttl, "NX");
    }
    return this.redis.set(key, JSON.stringify(value), "NX");
  }
}
"#;

const TS_JOBS: &str = r#"import { RedisCache } from "./redisCache";
export class Jobs {
  constructor(private readonly cache: RedisCache) {}
  async run(id: string) {
    await this.cache.acquireKey(`lock:${id}`, token);
    await this.cache.acquireKey(`lock:${id}`, token, { ttl: 3000 });
  }
}
"#;

#[test]
fn an_op_in_a_branch_on_a_defaulted_argument_is_not_performed_by_a_call_that_leaves_it_out() {
    let (_, views) = link_all(&[("redisCache.ts", TS_CACHE), ("jobs.ts", TS_JOBS)]);
    // `opts = {}` left out: `opts.ttl` is absent, only the plain SETNX runs
    assert_eq!(
        insts_on_line(&views[1], TS_JOBS, 5),
        vec![OpKind::Acquire { expiry: false }]
    );
    // passed: both branches may run
    assert_eq!(insts_on_line(&views[1], TS_JOBS, 6).len(), 2);
}

const PY_CACHE: &str = r#"import redis
class RedisCache:
    def acquire_key(self, key, value, ttl=None):
        if ttl is not None:
            return self.client.set(key, value, nx=True, px=ttl)
        return self.client.set(key, value, nx=True)
"#;

const PY_JOBS: &str = r#"from redis_cache import RedisCache
def run(cache, job_id):
    cache.acquire_key("lock:" + job_id, token)
    cache.acquire_key("lock:" + job_id, token, ttl=3000)
    cache.acquire_key("lock:" + job_id, token, 3000)
"#;

#[test]
fn a_defaulted_argument_passed_by_keyword_or_position_counts_as_passed() {
    let (_, views) = link_all(&[("redis_cache.py", PY_CACHE), ("jobs.py", PY_JOBS)]);
    assert_eq!(
        insts_on_line(&views[1], PY_JOBS, 3),
        vec![OpKind::Acquire { expiry: false }]
    );
    assert_eq!(insts_on_line(&views[1], PY_JOBS, 4).len(), 2);
    assert_eq!(insts_on_line(&views[1], PY_JOBS, 5).len(), 2);
}

const KT_OPS: &str = r#"import org.springframework.data.redis.core.RedisTemplate
class RedisOperation(private val redisTemplate: RedisTemplate<String, String>) {
    fun addSetValue(key: String, item: String, isCluster: Boolean? = false): Boolean {
        return redisTemplate.opsForSet().add(finalKey(key, isCluster), item) == 1L
    }
    fun removeSetValue(key: String, item: String, prefix: String = "p:"): Boolean {
        return redisTemplate.opsForSet().remove(finalKey(prefix, key), item) == 1L
    }
}
"#;

const KT_SCOPE: &str = r#"
class AgentScope(private val redisOperation: RedisOperation) {
    fun lock(id: String) {
        redisOperation.addSetValue(LOCK_KEY, id)
        redisOperation.removeSetValue(LOCK_KEY, id)
    }
}
"#;

#[test]
fn an_argument_left_at_its_default_is_a_stable_key_part() {
    let (_, views) = link_all(&[("RedisOperation.kt", KT_OPS), ("AgentScope.kt", KT_SCOPE)]);
    let key_on = |line: usize| {
        let start: usize = KT_SCOPE.lines().take(line - 1).map(|l| l.len() + 1).sum();
        let end = start + KT_SCOPE.lines().nth(line - 1).map_or(0, str::len);
        views[1]
            .insts
            .iter()
            .find(|i| (start..end).contains(&i.op.name_span.start()))
            .map(|i| i.op.key.display())
    };
    // a flag left at `false` adds nothing
    assert_eq!(key_on(4).as_deref(), Some("{LOCK_KEY}"));
    // a text default left out is the same part at every such call
    assert_eq!(key_on(5).as_deref(), Some("{prefix=default}{LOCK_KEY}"));
}

const PY_OWN_HELPER: &str = r#"import redis
def acquire_lock(r, key):
    return r.set(key, "1", nx=True, ex=10)
def job(r):
    acquire_lock(r, "lock:job")
"#;

const PY_OTHER_HELPER: &str = r#"import redis
def acquire_lock(r, key):
    return r.set(key, "1", nx=True, ex=10)
"#;

const PY_NO_HELPER: &str = r#"import redis
def job(r):
    acquire_lock(r, "lock:job")
"#;

const JAVA_OTHER_LOCK: &str = r#"
public class OtherUtil {
    private StringRedisTemplate redisTemplate;
    public boolean tryLock(String key, String value, long seconds) {
        return redisTemplate.opsForValue().setIfAbsent(key, value, seconds, TimeUnit.SECONDS);
    }
}
"#;

/// A name several files define: the call resolves to its own file's, to
/// the one its receiver names, or to none — whichever of the candidates
/// fit and however many there are (the search stops at a second fit).
#[test]
fn a_name_many_files_define_resolves_by_file_or_receiver_or_not_at_all() {
    let mut files = vec![
        ("own.py", PY_OWN_HELPER),
        ("none.py", PY_NO_HELPER),
        ("RedisUtil.java", UTIL),
        ("OrderService.java", CALLER),
        ("OtherUtil.java", JAVA_OTHER_LOCK),
    ];
    let others: Vec<String> = (0..40).map(|i| format!("helper{i}.py")).collect();
    for name in &others {
        files.push((name.as_str(), PY_OTHER_HELPER));
    }
    let (_, views) = link_all(&files);
    // its own file's `acquire_lock`, among 41
    assert_eq!(
        insts_on_line(&views[0], PY_OWN_HELPER, 5),
        vec![OpKind::Acquire { expiry: true }]
    );
    // none of 41 in other files is the one it calls
    assert!(insts_on_line(&views[1], PY_NO_HELPER, 3).is_empty());
    // `redisUtil.tryLock` is RedisUtil's, not OtherUtil's
    assert_eq!(
        insts_on_line(&views[3], CALLER, 6),
        vec![OpKind::Acquire { expiry: true }]
    );
    // with one helper alone in the project, the call without one reaches it
    let (_, views) = link_all(&[("none.py", PY_NO_HELPER), ("helper.py", PY_OTHER_HELPER)]);
    assert_eq!(
        insts_on_line(&views[0], PY_NO_HELPER, 3),
        vec![OpKind::Acquire { expiry: true }]
    );
}
