//! Per-client tables: which method names are which Redis command, in which
//! argument order, with which expiry semantics (SPEC §2, CLIENTS.md).

use super::calls::{Arg, Call};
use super::lexer::Kind;
use super::{values, Analyzer, Draft};
use crate::facts::{Client, KeyExpr, Language, OpKind, ScriptId};
use rustc_hash::FxHashSet as HashSet;

/// Names that also belong to maps, ORMs, files and HTTP clients: they need
/// Redis evidence (SPEC §2 "client methods by name").
const AMBIGUOUS: &[&str] = &[
    "set", "get", "del", "delete", "remove", "exec", "execute", "call", "do", "send", "command",
    "exists", "exists?", "haskey", "unlink", "ttl", "pttl",
];

/// Receiver words that say "this is a Redis client / template / connection".
const REDIS_RECV: &[&str] = &[
    "redis",
    "jedis",
    "template",
    "rdb",
    "conn",
    "client",
    "commands",
    "ops",
    "pipe",
    "multi",
    "tx",
    "transaction",
    "lettuce",
    "predis",
    "valkey",
    "cmd",
    "getresource()",
    "sync()",
    "async()",
    "reactive()",
    "opsforvalue()",
    "boundvalueops()",
    "db",
];
/// Receiver words that say "this is not Redis".
const NOT_REDIS_RECV: &[&str] = &[
    "http",
    "session",
    "repo",
    "repository",
    "map",
    "file",
    "axios",
    "requests",
    "fetch",
    "dict",
    "os",
    "path",
    "em",
    "entitymanager",
    "dao",
    "router",
    "app",
    "fs",
    "storage",
    "s3",
    "request",
    "response",
    "api",
    "list",
    "array",
    "queue",
];

/// The rest of a script call after the script argument: numkeys, key lists, options.
fn list_first(an: &Analyzer, a: usize, e: usize) -> Option<(usize, usize)> {
    let toks = an.toks;
    if e <= a {
        return None;
    }
    let last = e - 1;
    if !(toks.at(last).is(")") || toks.at(last).is("]") || toks.at(last).is("}")) {
        return None;
    }
    let open = an.st.matching.get(&last)?;
    if open < a {
        return None;
    }
    if toks.at(open).is("(") {
        let ctor = open.checked_sub(1).map(|k| toks.at(k).text()).unwrap_or("");
        if !matches!(
            ctor,
            "of" | "asList"
                | "singletonList"
                | "singleton"
                | "listOf"
                | "arrayOf"
                | "mutableListOf"
                | "newArrayList"
                | "array"
                | "List"
                | "list"
                | "tuple"
                | "Arrays"
        ) {
            return None;
        }
    }
    let args = super::calls::split_args(toks, an.st, open, last);
    args.first().map(|x| (x.start(), x.end()))
}

impl<'a> Analyzer<'a> {
    fn arg_text(&self, a: &Arg) -> &'a str {
        self.vals.text(a.start(), a.end())
    }

    fn is_ctx(&self, a: &Arg) -> bool {
        let t = self.arg_text(a).to_ascii_lowercase();
        t.contains("ctx") || t.contains("context")
    }

    /// The receiver object of a call, comparable across calls: segments
    /// joined, `this.`/`self.`/`$this->` normalised, a Go method receiver as
    /// `this`, and trailing Spring/Lettuce accessors (`opsForValue()`,
    /// `sync()`) dropped. `None` for a bare `this`/`self`.
    pub fn recv_root(&self, c: &Call) -> Option<String> {
        let mut segs: Vec<&str> = c.recv().iter().map(|s| &**s).collect();
        while segs.len() > 1
            && segs.last().is_some_and(|s| {
                let l = s.to_ascii_lowercase();
                (l.starts_with("opsfor") && l.ends_with("()"))
                    || matches!(l.as_str(), "sync()" | "async()" | "reactive()")
            })
        {
            segs.pop();
        }
        if self.lang == Language::Go {
            let scope = self.st.tok_scope.get(c.name_tok()).copied().unwrap_or(0);
            if let (Some(r), Some(first)) = (self.st.receivers.get(&scope), segs.first_mut()) {
                if r.as_str() == *first {
                    *first = "this";
                }
            }
        }
        let root = values::norm_name(&segs.join("."));
        if root.is_empty() || matches!(root.as_str(), "this" | "self" | "$this" | "this.") {
            return None;
        }
        Some(root)
    }

    /// Positional arguments, without Go's leading context.
    fn positional<'c>(&self, c: &'c Call<'a>) -> Vec<&'c Arg> {
        let mut pos: Vec<&Arg> = c.args().iter().filter(|a| !a.is_named()).collect();
        if self.lang == Language::Go && pos.first().is_some_and(|a| self.is_ctx(a)) {
            pos.remove(0);
        }
        // C# async APIs take a CancellationToken last (`GetValueAsync(k, ct)`)
        if self.lang == Language::CSharp && pos.len() > 1 {
            let last = pos[pos.len() - 1];
            let t = self.arg_text(last).to_ascii_lowercase();
            if t == "ct" || t.contains("cancellation") {
                pos.pop();
            }
        }
        pos
    }

    /// Receivers that run a command only Redis has: their ambiguous calls
    /// (`cache.del(k)` next to `cache.setnx(k, v)`) are Redis calls too.
    pub fn collect_redis_receivers(&mut self, all: &[Call]) {
        let mut found = HashSet::default();
        for c in all {
            if c.recv().is_empty() {
                continue;
            }
            let mut lname = c.name(self.toks).to_ascii_lowercase().replace('_', "");
            if self.lang == Language::CSharp && lname.len() > 5 && lname.ends_with("async") {
                lname.truncate(lname.len() - 5);
            }
            let evidence = match lname.as_str() {
                "setnx"
                | "setifabsent"
                | "locktake"
                | "lockrelease"
                | "lockextend"
                | "msetnx"
                | "setex"
                | "psetex"
                | "getset"
                | "getdel"
                | "expire"
                | "pexpire"
                | "expireat"
                | "pexpireat"
                | "stringset"
                | "stringget"
                | "stringgetset"
                | "keydelete"
                | "keyexpire"
                | "scriptevaluate"
                | "setvalueifnotexists"
                | "expireentryin"
                | "expireentryat" => !self.classify(c, all).is_empty(),
                // eval of a script text this file holds
                // a cache framework's tested `add(k, v, ttl)` (see `cache_add`)
                "add" => self.cache_add(c, &lname),
                "eval" => self
                    .classify(c, all)
                    .iter()
                    .any(|d| matches!(d.kind, OpKind::Eval { script: Some(_) })),
                // SET … NX in any spelling (`nx=True`, `'NX'`, `{NX: true}`)
                "set" => {
                    let pos = self.positional(c);
                    let vpos = if self.bound_key(c).is_some() { 0 } else { 1 };
                    self.set_options(c, &pos, vpos + 1).0
                }
                _ => false,
            };
            if evidence {
                if let Some(r) = self.recv_root(c) {
                    found.insert(r);
                }
            }
        }
        self.redis_recvs = found;
    }

    /// The receiver (or the file) says Redis.
    pub fn redis_receiver(&self, c: &Call) -> bool {
        if self
            .recv_root(c)
            .is_some_and(|r| self.redis_recvs.contains(&r))
        {
            return true;
        }
        if !self.has_redis || c.recv().is_empty() {
            return false;
        }
        let segs: Vec<String> = c.recv().iter().map(|s| s.to_ascii_lowercase()).collect();
        let last = segs.last().cloned().unwrap_or_default();
        let words = crate::words::word_parts(&c.recv().join("."));
        if words.iter().any(|w| NOT_REDIS_RECV.contains(&w.as_str())) {
            return false;
        }
        if segs
            .iter()
            .any(|s| REDIS_RECV.iter().any(|w| s.contains(w)))
        {
            return true;
        }
        if matches!(
            last.as_str(),
            "r" | "rc" | "red" | "$r" | "cli" | "$this->redis"
        ) {
            return true;
        }
        let first = values::norm_name(&c.recv()[0]);
        let joined = values::norm_name(&c.recv().join("."));
        self.redis_vars.contains(&first) || self.redis_vars.contains(&joined)
    }

    fn client_for(&self, c: &Call, lname: &str) -> Client {
        // a cache framework's store (`cache_add`): no Redis client's API to
        // spell a fix in
        if matches!(lname, "add" | "forget" | "delete")
            && matches!(self.lang, Language::Python | Language::Php)
            && self.cache_receiver(c)
        {
            return Client::Unknown;
        }
        let recv = c.recv().join(".").to_ascii_lowercase();
        match self.lang {
            Language::Java | Language::Kotlin => {
                let args_text = self.vals.text(c.open(), c.end());
                if recv.contains("opsforvalue")
                    || recv.contains("boundvalueops")
                    || lname == "setifabsent"
                    || lname == "setifpresent"
                {
                    Client::SpringData
                } else if args_text.contains("SetParams") {
                    Client::Jedis
                } else if args_text.contains("SetArgs") || args_text.contains("ScriptOutputType") {
                    Client::Lettuce
                } else if recv.contains("jedis") {
                    Client::Jedis
                } else {
                    self.default_client
                }
            }
            Language::JavaScript | Language::TypeScript => {
                if c.name(self.toks) == "setNX"
                    || c.name(self.toks) == "pExpire"
                    || self.vals.text(c.open(), c.end()).contains("NX:")
                {
                    Client::NodeRedis
                } else {
                    self.default_client
                }
            }
            Language::Php => {
                if recv.contains("predis") {
                    Client::Predis
                } else {
                    self.default_client
                }
            }
            _ => self.default_client,
        }
    }

    /// `boundValueOps(key)` in the receiver chain: its key argument.
    fn bound_key(&self, c: &Call) -> Option<(usize, usize)> {
        for k in c.recv_start()..c.name_tok() {
            let t = self.toks.at(k);
            if t.is_ident()
                && matches!(
                    t.text(),
                    "boundValueOps" | "boundHashOps" | "boundSetOps" | "getBucket"
                )
                && self.toks.get(k + 1).is_some_and(|x| x.is("("))
            {
                let close = self.st.matching.get(&(k + 1))?;
                let args = super::calls::split_args(self.toks, self.st, k + 1, close);
                return args.first().map(|a| (a.start(), a.end()));
            }
        }
        None
    }

    /// The call's receiver chain binds a hash key (`boundHashOps(k)`).
    fn bound_hash(&self, c: &Call) -> bool {
        (c.recv_start()..c.name_tok())
            .any(|k| self.toks.at(k).is_ident() && self.toks.at(k).text() == "boundHashOps")
    }

    pub fn classify(&self, c: &Call, all: &[Call]) -> Vec<Draft> {
        let _ = all;
        if self.st.decls.is_name(c.name_tok()) {
            return Vec::new();
        }
        let toks = self.toks;
        // a declaration without a body: `Boolean setIfAbsent(String k, …);`, `def del(self, k)`
        if c.recv().is_empty() && c.name_tok() > 0 {
            let p = toks.at(c.name_tok() - 1);
            let decl_prev = (p.is_ident()
                && !matches!(
                    p.text(),
                    "return"
                        | "await"
                        | "yield"
                        | "throw"
                        | "else"
                        | "do"
                        | "in"
                        | "of"
                        | "not"
                        | "and"
                        | "or"
                        | "if"
                        | "then"
                        | "new"
                        | "echo"
                        | "print"
                        | "go"
                        | "defer"
                        | "is"
                ))
                || p.is(">")
                || p.is("]");
            if decl_prev {
                return Vec::new();
            }
        }
        let mut lname = c.name(self.toks).to_ascii_lowercase().replace('_', "");
        if self.lang == Language::CSharp && lname.len() > 5 && lname.ends_with("async") {
            lname.truncate(lname.len() - 5);
        }
        // script object invocation: `release_script(keys=[k], args=[t])`, `script.Run(ctx, rdb, keys)`
        if let Some(d) = self.script_invocation(c, &lname) {
            return vec![d];
        }
        // rueidis builder: client.B().Set().Key(k).Value(v).Nx().Px(ttl).Build()
        if c.recv().last().is_some_and(|r| r == "B()") {
            return self.rueidis(c, &lname).into_iter().collect();
        }
        // A bare call is a local function, a builtin (PHP `unlink`, JS `eval`)
        // or a declaration: client commands are always called on something.
        if c.recv().is_empty() {
            return Vec::new();
        }
        // go-redis methods take a context first: `c.Del(ctx, key)` is Redis evidence enough
        let go_ctx = self.lang == Language::Go
            && self.has_redis
            && c.name(self.toks)
                .starts_with(|ch: char| ch.is_ascii_uppercase())
            && c.args().first().is_some_and(|a| self.is_ctx(a));
        if AMBIGUOUS.contains(&lname.as_str()) && !go_ctx && !self.redis_receiver(c) {
            return Vec::new();
        }
        let client = self.client_for(c, &lname);
        // positional args (Go: without the leading ctx)
        let mut pos = self.positional(c);
        // keyword key/value: redis-py `set(name=k, value=v, nx=True)`, C# `key:`/`value:`
        let named = |names: &[&str]| {
            c.args()
                .iter()
                .find(|a| a.name(toks).is_some_and(|n| names.contains(&n)))
        };
        if pos.is_empty() {
            if let Some(k) = named(&["name", "key", "lock_key"]) {
                pos.push(k);
            }
        }
        if pos.len() == 1 {
            if let Some(v) = named(&["value", "val"]) {
                pos.push(v);
            }
        }
        let scope = self.st.tok_scope.get(c.name_tok()).copied().unwrap_or(0);
        let key_of = |a: &Arg| self.vals.key(a.start(), a.end(), scope);
        let bound = self.bound_key(c);
        let mk = |kind: OpKind, key: KeyExpr, value| Draft {
            kind,
            key,
            value,
            name_tok: c.name_tok(),
            end_tok: c.end(),
            client,
        };
        // (key, value arg, rest) for key-first commands, honouring boundValueOps(k)
        // (worked out only for a command that takes it: most calls are none)
        let (key_at, vpos): (Option<(usize, usize)>, usize) = match bound {
            Some(ab) => (Some(ab), 0),
            None => (pos.first().map(|a| (a.start(), a.end())), 1),
        };
        let key = || key_at.map(|(a, b)| self.vals.key(a, b, scope));
        let value_at = |i: usize| {
            pos.get(i)
                .map(|a| self.vals.value(a.start(), a.end(), scope))
        };
        let raw_first = pos
            .first()
            .filter(|a| a.end() == a.start() + 1 && toks.at(a.start()).kind() == Kind::Str);
        let lname = if self.cache_add(c, &lname) {
            "setnx".to_string()
        } else {
            lname
        };
        match lname.as_str() {
            // ServiceStack.Redis `SetValueIfNotExists(k, v[, expireIn])`
            "setnx" | "setifabsent" | "locktake" | "msetnx" | "setvalueifnotexists" => {
                let Some(key) = key() else { return Vec::new() };
                let ttl = pos.get(vpos + 1);
                let expiry = match ttl {
                    Some(t) => !self.vals.is_zero_ttl(t.start(), t.end()),
                    None => false,
                };
                let expiry = expiry
                    || c.args().iter().any(|a| {
                        a.name(toks)
                            .is_some_and(|n| matches!(n, "expiry" | "timeout" | "ttl"))
                            && !self.vals.is_zero_ttl(a.start(), a.end())
                    });
                let value = self.own_key_value(&key, pos.get(vpos).copied(), value_at(vpos));
                vec![mk(OpKind::Acquire { expiry }, key, value)]
            }
            // Redisson RBucket: getBucket(k).trySet(v[, ttl, unit])
            "tryset" if bound.is_some() => {
                let Some(key) = key() else { return Vec::new() };
                let expiry = pos
                    .get(1)
                    .is_some_and(|t| !self.vals.is_zero_ttl(t.start(), t.end()));
                vec![mk(OpKind::Acquire { expiry }, key, value_at(0))]
            }
            // ServiceStack.Redis `SetValueIfExists(k, v, expireIn)`: SET … XX PX
            "setifpresent" | "setvalueifexists" => {
                let Some(key) = key() else { return Vec::new() };
                if pos.len() > vpos + 1 {
                    vec![mk(OpKind::Expire, key, None)]
                } else {
                    Vec::new()
                }
            }
            // ServiceStack.Redis `SetValue(k, v[, expireIn])`
            "set" | "stringset" | "setargs" | "setvalue" => {
                if raw_first.is_some()
                    && self.toks.at(raw_first.map(|a| a.start()).unwrap_or(0))
                        .text()
                        .eq_ignore_ascii_case("set")
                    && c.args().len() > 3
                {
                    // `call('set', k, v, …)` style handled as a raw command
                    return self.raw(c, client, scope);
                }
                let Some(key) = key() else { return Vec::new() };
                let (nx, xx, mut expiry) = self.set_options(c, &pos, vpos + 1);
                // The positional form `set(k, v, nxxx, expx, time)` (Jedis 2/3,
                // Predis, ioredis) with the unit held in a variable: three
                // option arguments after the value, one of them NX, and a
                // non-zero time last — a TTL given as an expression (SPEC §2).
                if nx && expiry.is_none() && pos.len() == vpos + 4 {
                    let last = pos[vpos + 3];
                    expiry = Some(!self.vals.is_zero_ttl(last.start(), last.end()));
                }
                if !nx && !xx && expiry.is_none() {
                    expiry = self.spring_set_timeout(&pos, vpos + 1);
                }
                let value = self.own_key_value(&key, pos.get(vpos).copied(), value_at(vpos));
                match set_kind(nx, xx, expiry) {
                    Some(kind @ OpKind::Expire) => vec![mk(kind, key, None)],
                    Some(kind) => vec![mk(kind, key, value)],
                    None => Vec::new(),
                }
            }
            "setex" | "psetex" => match key() {
                Some(key) => vec![mk(OpKind::Set { expiry: true }, key, None)],
                None => Vec::new(),
            },
            "getset" | "stringgetset" | "getandset" | "getandsetvalue" => key()
                .map(|k| vec![mk(OpKind::GetSet, k, None)])
                .unwrap_or_default(),
            "get" | "stringget" | "getvalue" => {
                if pos.len() != 1 && bound.is_none() {
                    return Vec::new();
                }
                key().map(|k| vec![mk(OpKind::Get, k, None)])
                    .unwrap_or_default()
            }
            // EXISTS of one key (Spring `hasKey`, redis-rb `exists?`, StackExchange
            // `KeyExists`); a `TTL`/`PTTL` (Spring `getExpire`) reads -2 when
            // the key is absent: the same check when its reply is compared
            // (the guard finder reads which comparison says absent)
            "exists" | "exists?" | "haskey" | "keyexists" | "ttl" | "pttl" | "getexpire" => {
                if pos.len() != 1 || bound.is_some() {
                    return Vec::new();
                }
                key().map(|k| vec![mk(OpKind::Exists, k, None)])
                    .unwrap_or_default()
            }
            "getdel" | "stringgetdelete" => key()
                .map(|k| vec![mk(OpKind::GetDel, k, None)])
                .unwrap_or_default(),
            // counters: Spring `increment`/`decrement`, C# `StringIncrement`, `incr`, `hincrby`, …
            "incr" | "incrby" | "incrbyfloat" | "decr" | "decrby" | "hincrby" | "hincrbyfloat"
            | "increment" | "decrement" | "stringincrement" | "stringdecrement"
            | "hashincrement"
            // ServiceStack.Redis
            | "incrementvalue"
            | "incrementvalueby"
            | "decrementvalue"
            | "decrementvalueby" => key()
                .map(|k| vec![mk(OpKind::Incr, k, None)])
                .unwrap_or_default(),
            // collections: ZADD/SADD/LPUSH…, StackExchange `SortedSetAdd`/`SetAdd`/`ListLeftPush`, …
            "zadd"
            | "zincrby"
            | "zrem"
            | "zremrangebyscore"
            | "zremrangebyrank"
            | "sadd"
            | "srem"
            | "lpush"
            | "rpush"
            | "lrem"
            | "sortedsetadd"
            | "sortedsetincrement"
            | "sortedsetremove"
            | "sortedsetremoverangebyscore"
            | "sortedsetremoverangebyrank"
            | "setadd"
            | "setremove"
            | "listleftpush"
            | "listrightpush"
            | "listremove" => key()
                .map(|k| vec![mk(OpKind::Members, k, None)])
                .unwrap_or_default(),
            // HSETNX (Jedis, Lettuce, redis-py, ioredis `hsetnx`, phpredis
            // `hSetNx`, node-redis `hSetNX`, go-redis `HSetNX`), Spring
            // `opsForHash().putIfAbsent(k, f, v)` / `boundHashOps(k).putIfAbsent(f, v)`
            "hsetnx" if pos.len() == vpos + 2 => key()
                .map(|k| vec![mk(OpKind::FieldAcquire, k, None)])
                .unwrap_or_default(),
            "putifabsent"
                if pos.len() == vpos + 2
                    && (bound.is_some_and(|_| self.bound_hash(c))
                        || c.recv().last().is_some_and(|r| &**r == "opsForHash()")) =>
            {
                key().map(|k| vec![mk(OpKind::FieldAcquire, k, None)])
                    .unwrap_or_default()
            }
            // StackExchange.Redis `HashSet(k, f, v, When.NotExists)` (also `…Async`)
            "hashset"
                if pos.len() >= 3
                    && c.args()
                        .iter()
                        .any(|a| self.arg_text(a).contains("When.NotExists")) =>
            {
                key().map(|k| vec![mk(OpKind::FieldAcquire, k, None)])
                    .unwrap_or_default()
            }
            // Spring `opsForZSet().add(k, m, score)`, `opsForSet().add`, `opsForList().leftPush`, …
            "add" | "remove" | "incrementscore" | "removerangebyscore" | "leftpush"
            | "rightpush" | "leftpushall" | "rightpushall"
                if c.recv().last().is_some_and(|r| {
                    matches!(&**r, "opsForZSet()" | "opsForSet()" | "opsForList()")
                }) =>
            {
                key().map(|k| vec![mk(OpKind::Members, k, None)])
                    .unwrap_or_default()
            }
            // ServiceStack.Redis `Remove(k)`, `RemoveEntry(params keys)`
            "del" | "delete" | "unlink" | "keydelete" | "removeentry" => {
                let text = self.vals.text(c.open(), c.end());
                let checked = text.contains("ifEquals") || text.contains("IfEquals");
                if let Some((a, b)) = bound {
                    return vec![mk(
                        OpKind::Release { checked },
                        self.vals.key(a, b, scope),
                        None,
                    )];
                }
                // a receiver that also runs a Redis-only command (`setnx`,
                // `expire`, …) deletes Redis keys, whatever they are called
                let proven = self
                    .recv_root(c)
                    .is_some_and(|r| self.redis_recvs.contains(&r));
                let mut out = Vec::new();
                for a in &pos {
                    if toks.at(a.start()).is("new")
                        || toks.at(a.start()).is("{")
                        // a lambda (`k -> …`, `x => …`); in PHP `->` is member
                        // access (`del($this->lockName($job))`), its arrow fn `fn() =>`
                        || (a.start()..a.end()).any(|k| {
                            (toks.at(k).is("->") && self.lang != Language::Php) || toks.at(k).is("=>")
                        })
                    {
                        continue;
                    }
                    // a list of keys: its first element
                    let k = match list_first(self, a.start(), a.end()) {
                        Some((s, e)) => self.vals.key(s, e, scope),
                        None => key_of(a),
                    };
                    if matches!(lname.as_str(), "del" | "delete") && !proven && !self.keyish(&k) {
                        continue;
                    }
                    out.push(mk(OpKind::Release { checked }, k, None));
                }
                out
            }
            // Laravel `Cache::forget($k)`, `cache()->forget($k)`: a DEL
            // ServiceStack.Redis `IRedisClient.Remove(k)`: a DEL, on a receiver
            // that names Redis (`redisClient`, `((IRedisClient)c)`) or runs
            // a Redis-only command too (a collection's `Remove` is not one)
            "remove"
                if self.lang == Language::CSharp
                    && pos.len() == 1
                    && bound.is_none()
                    && (c.recv().iter().any(|r| r.to_ascii_lowercase().contains("redis"))
                        || self
                            .recv_root(c)
                            .is_some_and(|r| self.redis_recvs.contains(&r))) =>
            {
                key().map(|k| vec![mk(OpKind::Release { checked: false }, k, None)])
                    .unwrap_or_default()
            }
            "forget" if self.lang == Language::Php && self.cache_receiver(c) && pos.len() == 1 => {
                key().map(|k| vec![mk(OpKind::Release { checked: false }, k, None)])
                    .unwrap_or_default()
            }
            "delex" | "delifeq" | "delexargs" | "lockrelease" => key()
                .map(|k| vec![mk(OpKind::Release { checked: true }, k, None)])
                .unwrap_or_default(),
            "lockextend" => key()
                .map(|k| vec![mk(OpKind::CheckedExtend, k, None)])
                .unwrap_or_default(),
            // ServiceStack.Redis `ExpireEntryIn(k, ttl)`, `ExpireEntryAt(k, at)`
            "expire" | "pexpire" | "expireat" | "pexpireat" | "keyexpire" | "expireentryin"
            | "expireentryat" => {
                if pos.len() < 2 && bound.is_none() {
                    return Vec::new();
                }
                key().map(|k| vec![mk(OpKind::Expire, k, None)])
                    .unwrap_or_default()
            }
            "eval" | "evalsha" | "evalro" | "evalsharo" | "scriptevaluate" | "fcall" => {
                if c.recv().is_empty() {
                    return Vec::new();
                }
                let Some(script) = pos.first() else {
                    return Vec::new();
                };
                let sid = self.script_ref(script.start(), script.end());
                let key = self.eval_key(c, &pos[1..], scope);
                vec![mk(OpKind::Eval { script: sid }, key, None)]
            }
            "execute" if self.lang == Language::Java || self.lang == Language::Kotlin => {
                let Some(script) = pos.first() else {
                    return Vec::new();
                };
                let sid = self.script_ref(script.start(), script.end());
                let text = self.arg_text(script);
                if sid.is_none()
                    && !text.contains("Script")
                    && !text.to_ascii_lowercase().contains("script")
                {
                    return Vec::new();
                }
                let key = self.eval_key(c, &pos[1..], scope);
                vec![mk(OpKind::Eval { script: sid }, key, None)]
            }
            "do" | "send" | "executecommand" | "call" | "sendcommand" | "rawcommand"
            | "executeraw" | "command" | "execute" => self.raw(c, client, scope),
            // radix (v3, v4): `radix.Cmd(&rcv, "SET", k, v, "NX", "EX", n)`,
            // `radix.FlatCmd(nil, "DEL", k)`: a raw command after the receiver
            "cmd" | "flatcmd"
                if self.lang == Language::Go && c.recv().last().is_some_and(|r| r == "radix") =>
            {
                self.raw(c, client, scope)
            }
            _ => Vec::new(),
        }
    }

    /// The receiver is a cache framework's store, as the prefilter anchors
    /// on it: in Python a name ending with `cache` (`cache`,
    /// `self.default_cache`), in PHP Laravel's facade `Cache::` or helper
    /// `cache()` (a `$this->cache` is the project's own object, linked to
    /// its class).
    fn cache_receiver(&self, c: &Call) -> bool {
        c.recv().last().is_some_and(|r| match self.lang {
            Language::Python => r.to_ascii_lowercase().ends_with("cache"),
            Language::Php => r.eq_ignore_ascii_case("cache") || r.eq_ignore_ascii_case("cache()"),
            _ => false,
        })
    }

    /// A cache framework's add used as an acquire: Django's and
    /// Flask-Caching's `cache.add(k, v, timeout)`, Laravel's `Cache::add($k,
    /// $v, $ttl)` write only when the key is absent (SET NX EX on a Redis
    /// back-end) and say whether they did. Read as a set-if-absent only with
    /// a TTL written out (a missing one is the back-end's default or
    /// forever) and only where the result is tested or kept: a cache is
    /// also filled with `add` as a statement, a lock's acquire is always
    /// looked at. A cache decorator's own `add` that forwards to the inner
    /// store is a pass-through: its callers are linked to it.
    fn cache_add(&self, c: &Call, lname: &str) -> bool {
        if lname != "add"
            || !matches!(self.lang, Language::Python | Language::Php)
            || !self.cache_receiver(c)
        {
            return false;
        }
        let scope = self.st.tok_scope.get(c.name_tok()).copied().unwrap_or(0) as usize;
        if self
            .st
            .scopes
            .get(scope)
            .is_some_and(|s| s.name.eq_ignore_ascii_case("add"))
        {
            return false;
        }
        let pos = self.positional(c);
        let ttl = pos.len() == 3
            || (pos.len() == 2
                && c.args().iter().any(|a| {
                    a.name(self.toks)
                        .is_some_and(|n| matches!(n, "timeout" | "ttl"))
                }));
        if !ttl {
            return false;
        }
        let Some(prev) = c.recv_start().checked_sub(1).map(|k| self.toks.at(k)) else {
            return false;
        };
        // returned: an acquire only from a function named like one
        // (`acquire_lock`), not from a generic write helper (`set_status`)
        if prev.is("return") {
            return self.st.scopes.get(scope).is_some_and(|s| {
                crate::words::is_acquire_fn(s.name) || crate::words::reads_like_lock(s.name)
            });
        }
        prev.kind() == Kind::Punct && matches!(prev.text(), "(" | "=" | "!" | "&&" | "||" | ":=")
            || prev.is_ident()
                && matches!(prev.text(), "if" | "elif" | "not" | "and" | "or" | "while")
    }

    /// SPEC §2 constant value: a value that is one of the key's own
    /// variables (`setIfAbsent("lock:bid:" + auctionId, auctionId)`) is the
    /// same for every holder of that key.
    fn own_key_value(
        &self,
        key: &KeyExpr,
        arg: Option<&Arg>,
        value: Option<crate::facts::ValueExpr>,
    ) -> Option<crate::facts::ValueExpr> {
        use crate::facts::{KeyPart, ValueExpr};
        let (Some(a), Some(ValueExpr::Unknown)) = (arg, &value) else {
            return value;
        };
        // the value's own normalised form: only variables, all of them the key's
        let scope = self.st.tok_scope.get(a.start()).copied().unwrap_or(0);
        let vk = self.vals.key(a.start(), a.end(), scope);
        let from_key = !vk.is_unknown()
            && vk.parts.iter().all(|p| match p {
                KeyPart::Var(v) | KeyPart::Const(v) => key
                    .parts
                    .iter()
                    .any(|q| matches!(q, KeyPart::Var(w) | KeyPart::Const(w) if w == v)),
                _ => false,
            })
            && key.parts.iter().any(|p| matches!(p, KeyPart::Lit(_)));
        if from_key {
            let name = self.vals.text(a.start(), a.end()).trim();
            return Some(crate::words::constant(&format!(
                "`{name}` (derived from the key's own variables)"
            )));
        }
        value
    }

    /// A key worth a `del`/`delete`: a literal, a concatenation, a key-named variable.
    fn keyish(&self, k: &KeyExpr) -> bool {
        if k.is_unknown() {
            return false;
        }
        if k.has_constant_part() {
            return true;
        }
        k.idents.iter().any(|i| {
            let w = crate::words::word_parts(i);
            w.iter().any(|p| {
                matches!(
                    p.as_str(),
                    "key" | "keys" | "k" | "name" | "lock" | "id" | "resource" | "mutex" | "lease"
                )
            }) || crate::words::reads_like_lock(i)
        })
    }

    /// SET options: (nx, xx, expiry) where expiry is None when absent, Some(false) for a zero/null TTL.
    fn set_options(&self, c: &Call, pos: &[&Arg], from: usize) -> (bool, bool, Option<bool>) {
        let toks = self.toks;
        let mut nx = false;
        let mut xx = false;
        let mut expiry: Option<bool> = None;
        let set_exp = |v: bool, expiry: &mut Option<bool>| {
            *expiry = Some(expiry.unwrap_or(false) || v);
        };
        let scope_of = |k: usize| self.st.tok_scope.get(k).copied().unwrap_or(0);
        let falsy = |s: usize, e: usize| {
            matches!(
                self.vals.text(s, e).trim(),
                "false" | "False" | "nil" | "None" | "null" | "0"
            )
        };
        // named arguments
        for a in c.args() {
            let Some(n) = a.name(toks) else { continue };
            let n = n.to_ascii_lowercase();
            let txt = self.vals.text(a.start(), a.end());
            match n.as_str() {
                "nx" if !falsy(a.start(), a.end()) => nx = true,
                "xx" if !falsy(a.start(), a.end()) => xx = true,
                "px" | "ex" | "pxat" | "exat" | "expiry" | "ttl" | "expiration" | "timeout"
                | "expire" | "pexpire" => {
                    set_exp(!self.vals.is_zero_ttl(a.start(), a.end()), &mut expiry)
                }
                "exist" if txt.contains("NOT_EXIST") => nx = true,
                "exist" if txt.contains("IF_EXIST") => xx = true,
                "when" | "condition" | "mode" => {
                    if txt.contains("NotExists") || txt.to_ascii_lowercase().contains("nx") {
                        nx = true;
                    } else if txt.contains("Exists") || txt.to_ascii_lowercase().contains("xx") {
                        xx = true;
                    }
                }
                _ => {}
            }
        }
        // positional expiry (C# StringSet(k, v, expiry, when), Go Set(ctx, k, v, ttl))
        if matches!(self.lang, Language::CSharp | Language::Go) {
            if let Some(a) = pos.get(from) {
                let t = self.arg_text(a);
                if !t.contains("When.")
                    && !t.contains('{')
                    && !(a.start()..a.end()).any(|k| toks.at(k).kind() == Kind::Str)
                {
                    set_exp(!self.vals.is_zero_ttl(a.start(), a.end()), &mut expiry);
                }
            }
        }
        // flags inside the option arguments
        let start = pos.get(from).map(|a| a.start()).unwrap_or(c.end());
        let mut k = start;
        let end = c.end().saturating_sub(1).max(start);
        while k < end {
            let t = toks.at(k);
            // a constant bound to a flag literal: `SET_IF_NOT_EXIST = "NX"`
            let resolved = self.flag_const(k, scope_of(k));
            let low = resolved
                .clone()
                .unwrap_or_else(|| t.text().to_ascii_lowercase());
            let next = toks.get(k + 1);
            let followed_value =
                next.is_some_and(|n| n.is(":") || n.is("=") || n.is("=>") || n.is(","));
            let is_flag_tok = t.kind() == Kind::Str
                || resolved.is_some()
                || (t.is_ident()
                    && (next.is_some_and(|n| n.is("(") || n.is(":") || n.is("="))
                        || (k > 0 && toks.at(k - 1).is("."))));
            if is_flag_tok {
                match low.as_str() {
                    "nx" | "notexists" | "ifnotexists" => {
                        // `NX: false` / `nx => false`
                        let neg = followed_value
                            && !next.is_some_and(|n| n.is(","))
                            && toks.get(k + 2).is_some_and(|v| {
                                matches!(v.text(), "false" | "False" | "nil" | "null")
                            });
                        if !neg {
                            nx = true;
                        }
                    }
                    "xx" | "exists" => xx = true,
                    "px" | "ex" | "pxat" | "exat" | "ttl" | "expiration" | "expiry" => {
                        // value: builder `(v)`, `: v`, `=> v`, or the next positional arg
                        let vs = k + 2;
                        let ve = if next.is_some_and(|n| n.is("(")) {
                            self.st.matching.get(&(k + 1)).unwrap_or(vs)
                        } else {
                            let mut j = vs;
                            while j < end
                                && !toks.at(j).is(",")
                                && !toks.at(j).is("}")
                                && !toks.at(j).is("]")
                                && !toks.at(j).is(")")
                            {
                                j += 1;
                            }
                            j
                        };
                        if next.is_some() && ve > vs {
                            set_exp(!self.vals.is_zero_ttl(vs, ve), &mut expiry);
                        } else if t.is_ident() && next.is_some_and(|n| n.is("(")) {
                            set_exp(true, &mut expiry);
                        }
                    }
                    "keepttl" => set_exp(true, &mut expiry),
                    _ => {}
                }
            }
            if t.is_ident()
                && t.text() == "When"
                && toks.get(k + 2).is_some_and(|n| n.text() == "NotExists")
            {
                nx = true;
            }
            // Spring RedisConnection: SetOption.SET_IF_ABSENT / ifAbsent(), Expiration.seconds(n)
            if t.is_ident() {
                match t.text() {
                    "SET_IF_ABSENT" | "ifAbsent" => nx = true,
                    "SET_IF_PRESENT" | "ifPresent" => xx = true,
                    "Expiration" if toks.get(k + 1).is_some_and(|n| n.is(".")) => {
                        let how = toks.get(k + 2).map(|n| n.text()).unwrap_or("");
                        let zero = toks.get(k + 4).is_some_and(|v| v.text() == "0")
                            && toks.get(k + 5).is_some_and(|v| v.is(")"));
                        set_exp(
                            !matches!(how, "persistent" | "keepTtl") && !zero,
                            &mut expiry,
                        );
                    }
                    _ => {}
                }
            }
            k += 1;
        }
        // An expiry handed over in a variable or field named like one
        // (Spring `set(k, v, SetCondition.ifAbsent(), expiration)`,
        // `set(k, v, expiration, SetOption.ifAbsent())`): a TTL given as an
        // expression (SPEC §2).
        if expiry.is_none() {
            for a in pos.iter().skip(from) {
                if (a.start()..a.end()).any(|j| toks.at(j).kind() == Kind::Str)
                    || self.vals.is_zero_ttl(a.start(), a.end())
                {
                    continue;
                }
                let named_expiry = (a.start()..a.end()).any(|j| {
                    toks.at(j).is_ident()
                        && !(j + 1 < a.end() && toks.at(j + 1).is("("))
                        && crate::words::word_parts(toks.at(j).text()).iter().any(|w| {
                            matches!(
                                w.as_str(),
                                "expiration" | "expiry" | "ttl" | "timeout" | "expire" | "lease"
                            )
                        })
                });
                if named_expiry {
                    set_exp(true, &mut expiry);
                }
            }
        }
        (nx, xx, expiry)
    }

    /// Spring Data Redis `opsForValue().set(k, v, timeout, unit)` (a
    /// `TimeUnit`, a `ChronoUnit`, or a variable named like a unit) and
    /// `set(k, v, duration)` (`Duration.ofSeconds(n)`, a `…Duration`
    /// variable, Kotlin `toJavaDuration()`): a SET with a TTL (`SETEX`), from
    /// the arguments after the value (`from`). `Some(false)` for a zero
    /// timeout, `None` when the arguments are not one of those shapes — a
    /// bare number third is `set(k, v, offset)`, a SETRANGE, not a TTL.
    fn spring_set_timeout(&self, pos: &[&Arg], from: usize) -> Option<bool> {
        if !matches!(self.lang, Language::Java | Language::Kotlin) {
            return None;
        }
        let toks = self.toks;
        let has_str = |a: &Arg| (a.start()..a.end()).any(|j| toks.at(j).kind() == Kind::Str);
        let idents = |a: &Arg| {
            (a.start()..a.end())
                .filter(|&j| toks.at(j).is_ident())
                .map(|j| toks.at(j).text())
                .collect::<Vec<&str>>()
        };
        let words_of = |a: &Arg| {
            idents(a)
                .iter()
                .flat_map(|i| crate::words::word_parts(i))
                .collect::<Vec<String>>()
        };
        match pos.len().checked_sub(from)? {
            2 => {
                let (timeout, unit) = (pos[from], pos[from + 1]);
                if has_str(timeout) || has_str(unit) {
                    return None;
                }
                let unit_ids = idents(unit);
                let is_unit = unit_ids.iter().any(|i| {
                    matches!(*i, "TimeUnit" | "ChronoUnit") || super::ttl::time_unit_ns(i).is_some()
                }) || (unit_ids.len() == 1
                    && words_of(unit).iter().any(|w| w == "unit"));
                is_unit.then(|| !self.vals.is_zero_ttl(timeout.start(), timeout.end()))
            }
            1 => {
                let d = pos[from];
                if has_str(d) || self.vals.is_zero_ttl(d.start(), d.end()) {
                    return None;
                }
                let duration = idents(d)
                    .iter()
                    .any(|i| *i == "Duration" || *i == "toJavaDuration")
                    || words_of(d).iter().any(|w| w == "duration");
                duration.then_some(true)
            }
            _ => None,
        }
    }

    /// An identifier bound once to a short string literal (`"NX"`, `"PX"`): its lower-cased text.
    fn flag_const(&self, k: usize, scope: u32) -> Option<String> {
        let t = self.toks.get(k)?;
        if !t.is_ident() || self.toks.get(k + 1).is_some_and(|n| n.is("(")) {
            return None;
        }
        let b = self.vals.lookup(scope, t.text())?;
        if b.end != b.start + 1 {
            return None;
        }
        let v = self.toks.get(b.start).filter(|v| v.kind() == Kind::Str)?;
        let low = v.text().to_ascii_lowercase();
        matches!(
            low.as_str(),
            "nx" | "xx" | "px" | "ex" | "pxat" | "exat" | "keepttl"
        )
        .then_some(low)
    }

    /// The script an argument refers to: a literal group, a named script or
    /// script object, or `new DefaultRedisScript<>(X)` inline.
    pub fn script_ref(&self, s: usize, e: usize) -> Option<ScriptId> {
        for k in s..e {
            if let Some(&id) = self.script_at.get(&k) {
                return Some(id);
            }
        }
        for k in s..e {
            let t = self.toks.at(k);
            if t.is_ident() {
                let mut name = t.text().to_string();
                if k >= 2
                    && self.toks.at(k - 1).is(".")
                    && matches!(self.toks.at(k - 2).text(), "this" | "self")
                {
                    name = format!("this.{name}");
                }
                let n = values::norm_name(&name);
                if let Some(&id) = self
                    .script_names
                    .get(&n)
                    .or_else(|| self.script_objs.get(&n))
                {
                    if id.is_some() {
                        return id;
                    }
                }
            }
        }
        None
    }

    /// The first key handed to a script call (after the script argument).
    fn eval_key(&self, c: &Call, rest: &[&Arg], scope: u32) -> KeyExpr {
        let toks = self.toks;
        for a in c.args() {
            if a.name(toks).is_some_and(|n| n.eq_ignore_ascii_case("keys")) {
                if let Some((s, e)) = list_first(self, a.start(), a.end()) {
                    return self.vals.key(s, e, scope);
                }
            }
        }
        let mut i = 0;
        while i < rest.len() {
            let a = rest[i];
            // node-redis `{ keys: [k], arguments: [..] }`
            if toks.at(a.start()).is("{") {
                for k in a.start()..a.end() {
                    if toks.at(k).text() == "keys" && toks.get(k + 1).is_some_and(|x| x.is(":")) {
                        let vs = k + 2;
                        if toks.get(vs).is_some_and(|x| x.is("[")) {
                            if let Some(m) = self.st.matching.get(&vs) {
                                if let Some((s, e)) = list_first(self, vs, m + 1) {
                                    return self.vals.key(s, e, scope);
                                }
                            }
                        }
                    }
                }
                i += 1;
                continue;
            }
            if let Some((s, e)) = list_first(self, a.start(), a.end()) {
                return self.vals.key(s, e, scope);
            }
            if a.end() == a.start() + 1 && toks.at(a.start()).kind() == Kind::Num {
                if toks.at(a.start()).text() == "0" {
                    return KeyExpr::unknown();
                }
                if let Some(n) = rest.get(i + 1) {
                    return self.vals.key(n.start(), n.end(), scope);
                }
            }
            i += 1;
        }
        KeyExpr::unknown()
    }

    /// A call of a script object: `script(keys=[k])`, `script.Run(ctx, rdb, []string{k})`,
    /// `script.Do(conn, k, t)`, `redis.releaseLock(k, t)` (ioredis defineCommand).
    fn script_invocation(&self, c: &Call, lname: &str) -> Option<Draft> {
        let scope = self.st.tok_scope.get(c.name_tok()).copied().unwrap_or(0);
        let pos: Vec<&Arg> = c.args().iter().filter(|a| !a.is_named()).collect();
        let own = if c.recv().len() == 1 && matches!(&*c.recv()[0], "self" | "this" | "$this") {
            format!("this.{}", c.name(self.toks))
        } else {
            c.name(self.toks).to_string()
        };
        let sid_key = if c.recv().is_empty() || own.starts_with("this.") {
            let sid = *self.script_objs.get(&values::norm_name(&own))?;
            (sid, self.eval_key(c, &pos, scope))
        } else if matches!(
            lname,
            "run" | "exec" | "do" | "eval" | "evalsha" | "evalro" | "execute" | "evaluate" | "call"
        ) {
            let r = values::norm_name(&c.recv().join("."));
            let sid = *self.script_objs.get(&r)?;
            let key = if lname == "do" && self.lang == Language::Go {
                pos.get(1)
                    .map(|a| self.vals.key(a.start(), a.end(), scope))
                    .unwrap_or_else(KeyExpr::unknown)
            } else {
                self.eval_key(c, &pos, scope)
            };
            (sid, key)
        } else if self.script_objs.contains_key(c.name(self.toks)) && self.lang != Language::Python
        {
            // ioredis custom command: redis.releaseLock(key, token)
            let sid = *self.script_objs.get(c.name(self.toks))?;
            let key = pos
                .first()
                .map(|a| self.vals.key(a.start(), a.end(), scope))
                .unwrap_or_else(KeyExpr::unknown);
            (sid, key)
        } else {
            return None;
        };
        Some(Draft {
            kind: OpKind::Eval { script: sid_key.0 },
            key: sid_key.1,
            value: None,
            name_tok: c.name_tok(),
            end_tok: c.end(),
            client: self.default_client,
        })
    }

    /// Raw command calls: `Do("SET", k, v, "NX", "PX", ms)`, `execute_command('DEL', k)`,
    /// `call('del', k)`, `sendCommand(['SET', …])`, `rawCommand('SET', …)`.
    fn raw(&self, c: &Call, client: Client, scope: u32) -> Vec<Draft> {
        let toks = self.toks;
        let mut items: Vec<(usize, usize)> = c
            .args()
            .iter()
            .filter(|a| !a.is_named())
            .map(|a| (a.start(), a.end()))
            .collect();
        if self.lang == Language::Go
            && items
                .first()
                .is_some_and(|&(s, e)| self.vals.text(s, e).to_ascii_lowercase().contains("ctx"))
        {
            items.remove(0);
        }
        // radix `Cmd`/`FlatCmd`: the reply's receiver (`nil`, `&out`) comes first
        if self.lang == Language::Go
            && matches!(c.name(self.toks), "Cmd" | "FlatCmd")
            && !items.is_empty()
        {
            items.remove(0);
        }
        // Go: `Do("SET", args...)` with `args := []interface{}{key, v, "NX"}`
        // (and `args = append(args, "PX", ttl)`) built just before
        if self.lang == Language::Go {
            if let Some(&(s, e)) = items.last() {
                if e == s + 2 && toks.at(s).is_ident() && toks.at(s + 1).is("...") {
                    if let Some(spread) = self.go_arg_list(toks.at(s).text(), s, scope) {
                        items.pop();
                        items.extend(spread);
                    }
                }
            }
        }
        // an array of the whole command
        if items.len() == 1 && toks.at(items[0].0).is("[") {
            if let Some(m) = self.st.matching.get(&items[0].0) {
                items = super::calls::split_args(toks, self.st, items[0].0, m)
                    .into_iter()
                    .map(|a| (a.start(), a.end()))
                    .collect();
            }
        }
        let Some(&(cs, ce)) = items.first() else {
            return Vec::new();
        };
        if ce != cs + 1 || toks.at(cs).kind() != Kind::Str {
            return Vec::new();
        }
        let cmd = toks.at(cs).text().to_ascii_lowercase();
        let args = &items[1..];
        let mk = |kind: OpKind, key: KeyExpr, value| Draft {
            kind,
            key,
            value,
            name_tok: c.name_tok(),
            end_tok: c.end(),
            client,
        };
        let key = || args.first().map(|&(s, e)| self.vals.key(s, e, scope));
        let word = |i: usize| {
            args.get(i)
                .filter(|&&(s, e)| e == s + 1)
                .and_then(|&(s, _)| {
                    if toks.at(s).kind() == Kind::Str {
                        Some(toks.at(s).text().to_ascii_lowercase())
                    } else {
                        self.flag_const(s, scope)
                    }
                })
        };
        match cmd.as_str() {
            "set" => {
                let Some(k) = key() else { return Vec::new() };
                let value = args.get(1).map(|&(s, e)| self.vals.value(s, e, scope));
                let (mut nx, mut xx, mut exp) = (false, false, None);
                let mut i = 2;
                while i < args.len() {
                    match word(i).as_deref() {
                        Some("nx") => nx = true,
                        Some("xx") => xx = true,
                        Some("px" | "ex" | "pxat" | "exat") => {
                            let z = args
                                .get(i + 1)
                                .is_some_and(|&(s, e)| self.vals.is_zero_ttl(s, e));
                            exp = Some(exp.unwrap_or(false) || !z);
                            i += 1;
                        }
                        Some("keepttl") => exp = Some(true),
                        _ => {}
                    }
                    i += 1;
                }
                match set_kind(nx, xx, exp) {
                    Some(kind @ OpKind::Expire) => vec![mk(kind, k, None)],
                    Some(kind) => vec![mk(kind, k, value)],
                    None => Vec::new(),
                }
            }
            "setnx" => key()
                .map(|k| {
                    vec![mk(
                        OpKind::Acquire { expiry: false },
                        k,
                        args.get(1).map(|&(s, e)| self.vals.value(s, e, scope)),
                    )]
                })
                .unwrap_or_default(),
            "del" | "unlink" => args
                .iter()
                .map(|&(s, e)| {
                    mk(
                        OpKind::Release { checked: false },
                        self.vals.key(s, e, scope),
                        None,
                    )
                })
                .collect(),
            "delex" | "delifeq" => key()
                .map(|k| vec![mk(OpKind::Release { checked: true }, k, None)])
                .unwrap_or_default(),
            "expire" | "pexpire" | "expireat" | "pexpireat" => key()
                .map(|k| vec![mk(OpKind::Expire, k, None)])
                .unwrap_or_default(),
            "get" => key()
                .map(|k| vec![mk(OpKind::Get, k, None)])
                .unwrap_or_default(),
            "getdel" => key()
                .map(|k| vec![mk(OpKind::GetDel, k, None)])
                .unwrap_or_default(),
            "getset" => key()
                .map(|k| vec![mk(OpKind::GetSet, k, None)])
                .unwrap_or_default(),
            "hsetnx" => key()
                .map(|k| vec![mk(OpKind::FieldAcquire, k, None)])
                .unwrap_or_default(),
            "exists" if args.len() == 1 => key()
                .map(|k| vec![mk(OpKind::Exists, k, None)])
                .unwrap_or_default(),
            "incr" | "incrby" | "incrbyfloat" | "decr" | "decrby" | "hincrby" | "hincrbyfloat" => {
                key()
                    .map(|k| vec![mk(OpKind::Incr, k, None)])
                    .unwrap_or_default()
            }
            "zadd" | "zincrby" | "zrem" | "zremrangebyscore" | "zremrangebyrank" | "sadd"
            | "srem" | "lpush" | "rpush" | "lrem" => key()
                .map(|k| vec![mk(OpKind::Members, k, None)])
                .unwrap_or_default(),
            "eval" | "evalsha" => {
                let Some(&(s, e)) = args.first() else {
                    return Vec::new();
                };
                let sid = self.script_ref(s, e);
                let key = match args.get(1) {
                    Some(&(ns, ne))
                        if ne == ns + 1
                            && toks.at(ns).kind() == Kind::Num
                            && toks.at(ns).text() != "0" =>
                    {
                        args.get(2)
                            .map(|&(a, b)| self.vals.key(a, b, scope))
                            .unwrap_or_else(KeyExpr::unknown)
                    }
                    _ => KeyExpr::unknown(),
                };
                vec![mk(OpKind::Eval { script: sid }, key, None)]
            }
            _ => Vec::new(),
        }
    }

    /// The elements of a Go argument slice spread into a call at token `at`:
    /// `name := []interface{}{a, b}` (or `[]any{…}`) in the same function,
    /// then every `name = append(name, c, d)` before the call, in order.
    fn go_arg_list(&self, name: &str, at: usize, scope: u32) -> Option<Vec<(usize, usize)>> {
        let toks = self.toks;
        let lo = at.saturating_sub(600);
        let in_scope = |k: usize| self.st.tok_scope.get(k) == Some(&scope);
        // the literal that starts the list
        let mut start = None;
        for k in (lo..at).rev() {
            if !in_scope(k) {
                break;
            }
            if toks.at(k).text() == name
                && toks.at(k).is_ident()
                && toks.get(k + 1).is_some_and(|t| t.is(":=") || t.is("="))
                && toks.get(k + 2).is_some_and(|t| t.is("["))
                && toks.get(k + 3).is_some_and(|t| t.is("]"))
            {
                start = Some(k);
                break;
            }
        }
        let k = start?;
        // `[]interface{}{` or `[]any{`: the last `{` before the elements
        let mut open = k + 4;
        let stop = (k + 10).min(at);
        let mut body = None;
        while open < stop {
            if toks.at(open).is("{") {
                let m = self.st.matching.get(&open)?;
                if m == open + 1 && toks.get(m + 1).is_some_and(|t| t.is("{")) {
                    open = m + 1; // `interface{}` then the literal's `{`
                    continue;
                }
                body = Some((open, m));
                break;
            }
            open += 1;
        }
        let (o, m) = body?;
        if m >= at {
            return None;
        }
        let mut out: Vec<(usize, usize)> = super::calls::split_args(toks, self.st, o, m)
            .into_iter()
            .map(|a| (a.start(), a.end()))
            .collect();
        // appends between the literal and the call
        let mut j = m;
        while j + 4 < at {
            if toks.at(j).text() == name
                && toks.at(j + 1).is("=")
                && toks.at(j + 2).is("append")
                && toks.at(j + 3).is("(")
                && toks.get(j + 4).is_some_and(|t| t.text() == name)
            {
                if let Some(close) = self.st.matching.get(&(j + 3)) {
                    let args = super::calls::split_args(toks, self.st, j + 3, close);
                    out.extend(args.iter().skip(1).map(|a| (a.start(), a.end())));
                    j = close;
                }
            }
            j += 1;
        }
        Some(out)
    }

    /// rueidis: `B().Set().Key(k).Value(v).Nx().Px(ttl).Build()`, `B().Del().Key(k).Build()`.
    fn rueidis(&self, c: &Call, lname: &str) -> Option<Draft> {
        let toks = self.toks;
        let scope = self.st.tok_scope.get(c.name_tok()).copied().unwrap_or(0);
        // walk the chain forward
        let mut k = c.end();
        let mut key = None;
        let mut value = None;
        let mut nx = false;
        let mut xx = false;
        let mut exp = false;
        let mut end = c.end();
        let mut guard = 0;
        while guard < 32
            && toks.get(k).is_some_and(|t| t.is("."))
            && toks.get(k + 2).is_some_and(|t| t.is("("))
        {
            guard += 1;
            let name = toks.at(k + 1).text().to_ascii_lowercase();
            let open = k + 2;
            let close = self.st.matching.get(&open)?;
            let inner = (open + 1, close);
            match name.as_str() {
                "key" if key.is_none() => key = Some(self.vals.key(inner.0, inner.1, scope)),
                "value" => value = Some(self.vals.value(inner.0, inner.1, scope)),
                "nx" => nx = true,
                "xx" => xx = true,
                // `name` is lower-cased: rueidis spells the TTL options
                // `Ex(d)`/`Px(d)`, `ExSeconds(n)`/`PxMilliseconds(n)`,
                // `Exat(t)`/`Pxat(t)`, `ExatTimestamp(n)`/
                // `PxatMillisecondsTimestamp(n)` and `Keepttl()`
                "px"
                | "ex"
                | "pxat"
                | "exat"
                | "exseconds"
                | "pxmilliseconds"
                | "exattimestamp"
                | "pxatmillisecondstimestamp"
                | "keepttl" => exp = !self.vals.is_zero_ttl(inner.0, inner.1) || name == "keepttl",
                _ => {}
            }
            end = close + 1;
            k = close + 1;
            if name == "build" {
                break;
            }
        }
        let key = key?;
        let kind = match lname {
            "set" if nx => OpKind::Acquire { expiry: exp },
            "set" if xx && exp => OpKind::Expire,
            "set" => OpKind::Set { expiry: exp },
            "setnx" => OpKind::Acquire { expiry: false },
            "del" | "unlink" => OpKind::Release { checked: false },
            "expire" | "pexpire" => OpKind::Expire,
            "get" => OpKind::Get,
            "getdel" => OpKind::GetDel,
            _ => return None,
        };
        Some(Draft {
            kind,
            key,
            value: if matches!(lname, "set" | "setnx") {
                value
            } else {
                None
            },
            name_tok: c.name_tok(),
            end_tok: end,
            client: Client::Rueidis,
        })
    }
}

/// What a SET with these options does to a lock: NX is an acquire (with or
/// without TTL), XX with a TTL an extend, XX alone nothing we track, and a
/// plain SET an overwrite (with or without TTL).
fn set_kind(nx: bool, xx: bool, expiry: Option<bool>) -> Option<OpKind> {
    let expiry_set = expiry.unwrap_or(false);
    if nx {
        Some(OpKind::Acquire { expiry: expiry_set })
    } else if xx && expiry == Some(true) {
        Some(OpKind::Expire)
    } else if xx {
        None
    } else {
        Some(OpKind::Set { expiry: expiry_set })
    }
}
