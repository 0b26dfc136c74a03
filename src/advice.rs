//! The fixes locklint recommends, as constants, and how each client library
//! spells them. The scripts here are exactly the ones the `help:` texts show;
//! `tests/real_redis.rs` runs them against a real redis-server.

use crate::facts::{Client, Language, Span};

/// Compare-and-delete: deletes the key only while it still holds our token.
/// KEYS[1] = lock key, ARGV[1] = token. Returns 1 when released, 0 otherwise.
pub const RELEASE_SCRIPT: &str = "if redis.call('get', KEYS[1]) == ARGV[1] then\n  return redis.call('del', KEYS[1])\nelse\n  return 0\nend";

/// Compare-and-extend: extends the lease only while it still holds our token.
/// KEYS[1] = lock key, ARGV[1] = token, ARGV[2] = new TTL in milliseconds.
pub const EXTEND_SCRIPT: &str = "if redis.call('get', KEYS[1]) == ARGV[1] then\n  return redis.call('pexpire', KEYS[1], ARGV[2])\nelse\n  return 0\nend";

/// The one note every lock finding may carry: a lease is not mutual exclusion.
pub const LEASE_NOTE: &str = "a Redis lock is a lease: a holder paused longer than the TTL (GC, scheduling, network) overlaps the next one. Use it to avoid duplicate work; where a double execution corrupts data, have the resource check a fencing token (a number that grows with every acquisition) or make the work idempotent";

/// What a finding's help may use on the server the user targets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Target {
    /// `--min-redis-version`: `DELEX … IFEQ` is offered from 8.4.
    pub min_redis: Option<(u32, u32)>,
}

impl Target {
    pub fn has_delex(&self) -> bool {
        self.min_redis.is_some_and(|v| v >= (8, 4))
    }
}

/// How to acquire with a unique token and a TTL in one command, per client.
pub fn acquire(client: Client) -> &'static str {
    match client {
        Client::RedisRs => "let token = uuid::Uuid::new_v4().to_string();\nlet ok: bool = redis::cmd(\"SET\").arg(&key).arg(&token).arg(\"NX\").arg(\"PX\").arg(ttl_ms).query(&mut con)?;\n(or con.set_options(&key, &token, SetOptions::default().conditional_set(ExistenceCheck::NX).with_expiration(SetExpiry::PX(ttl_ms))))",
        Client::Fred => "let token = uuid::Uuid::new_v4().to_string();\nclient.set(&key, &token, Some(Expiration::PX(ttl_ms)), Some(SetOptions::NX), false).await?",
        Client::Rustis => "let token = uuid::Uuid::new_v4().to_string();\nclient.set_with_options(&key, &token, SetCondition::NX, SetExpiration::Px(ttl_ms)).await?",
        Client::SpringData => "String token = UUID.randomUUID().toString();\nredisTemplate.opsForValue().setIfAbsent(key, token, Duration.ofMillis(ttlMs)) — or use Redisson's RLock / Spring Integration's RedisLockRegistry",
        Client::Jedis => "String token = UUID.randomUUID().toString();\njedis.set(key, token, SetParams.setParams().nx().px(ttlMs))",
        Client::Lettuce => "String token = UUID.randomUUID().toString();\ncommands.set(key, token, SetArgs.Builder.nx().px(ttlMs))",
        Client::RedisPy => "use the library lock: with r.lock(name, timeout=30, blocking_timeout=5): …\n(or token = secrets.token_hex(16); r.set(key, token, nx=True, px=ttl_ms))",
        Client::Ioredis => "const token = crypto.randomUUID();\nawait redis.set(key, token, 'PX', ttlMs, 'NX') — or use redlock",
        Client::NodeRedis => "const token = crypto.randomUUID();\nawait client.set(key, token, { NX: true, PX: ttlMs }) — or use redlock",
        Client::GoRedis => "token := uuid.NewString()\nok, err := rdb.SetNX(ctx, key, token, ttl).Result() // ttl > 0 sends SET NX PX — or use bsm/redislock or redsync",
        Client::Redigo => "token := uuid.NewString()\nreply, err := redis.String(conn.Do(\"SET\", key, token, \"NX\", \"PX\", ttlMs))",
        Client::Rueidis => "token := uuid.NewString()\nclient.Do(ctx, client.B().Set().Key(key).Value(token).Nx().Px(ttl).Build())",
        Client::RedisRb => "token = SecureRandom.uuid\nredis.set(key, token, nx: true, px: ttl_ms) — or use redlock-rb",
        Client::Phpredis => "$token = bin2hex(random_bytes(16));\n$redis->set($key, $token, ['nx', 'px' => $ttlMs]) — or use Symfony Lock / Laravel Cache::lock",
        Client::Predis => "$token = bin2hex(random_bytes(16));\n$client->set($key, $token, 'PX', $ttlMs, 'NX') — or use Symfony Lock / Laravel Cache::lock",
        Client::StackExchange => "var token = Guid.NewGuid().ToString();\ndb.LockTake(key, token, TimeSpan.FromSeconds(30)) — or StringSet(key, token, expiry, When.NotExists)",
        Client::RedisCli | Client::Lua | Client::Unknown => "SET key <unique-token> NX PX <ttl-ms>   (token: a UUID or 16+ random bytes, kept by the holder)",
    }
}

/// How to release with an atomic ownership check, per client.
pub fn release(client: Client, target: Target) -> String {
    let script = match client {
        Client::RedisRs => "static RELEASE: &str = \"if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end\";\nredis::Script::new(RELEASE).key(&key).arg(&token).invoke(&mut con)?",
        Client::Fred => "client.eval(RELEASE, vec![key], vec![token]).await? — RELEASE compares GET with ARGV[1] before DEL",
        Client::Rustis => "client.eval(CallBuilder::build(RELEASE).keys(key).args(token)).await? — RELEASE compares GET with ARGV[1] before DEL",
        Client::SpringData => "redisTemplate.execute(RELEASE_SCRIPT, List.of(key), token) with RELEASE_SCRIPT = new DefaultRedisScript<>(RELEASE, Long.class) — or Redisson's lock.unlock()",
        Client::Jedis => "jedis.eval(RELEASE, List.of(key), List.of(token))",
        Client::Lettuce => "commands.eval(RELEASE, ScriptOutputType.INTEGER, new String[]{key}, token)",
        Client::RedisPy => "lock.release() on r.lock(...) — or release = r.register_script(RELEASE); release(keys=[key], args=[token])",
        Client::Ioredis => "await redis.eval(RELEASE, 1, key, token) — or redlock's lock.release()",
        Client::NodeRedis => "await client.eval(RELEASE, { keys: [key], arguments: [token] }) — or redlock's lock.release()",
        Client::GoRedis => "redis.NewScript(RELEASE).Run(ctx, rdb, []string{key}, token) — or bsm/redislock's lock.Release(ctx)",
        Client::Redigo => "redis.NewScript(1, RELEASE).Do(conn, key, token)",
        Client::Rueidis => "rueidis.NewLuaScript(RELEASE).Exec(ctx, client, []string{key}, []string{token})",
        Client::RedisRb => "redis.eval(RELEASE, keys: [key], argv: [token])",
        Client::Phpredis => "$redis->eval(RELEASE, [$key, $token], 1)",
        Client::Predis => "$client->eval(RELEASE, 1, $key, $token)",
        Client::StackExchange => "db.LockRelease(key, token) with the same Guid token that LockTake wrote",
        Client::RedisCli | Client::Lua | Client::Unknown => "EVAL \"if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end\" 1 key <token>",
    };
    let mut out =
        format!("release only while the key still holds your token, in one atomic step:\n{script}");
    if target.has_delex() {
        out.push_str("\non Redis 8.4+ without a script: DELEX key IFEQ <token>");
        if client == Client::RedisRs {
            out.push_str(" (redis-rs: con.del_ex(&key, ValueComparison::ifeq(&token)))");
        } else if client == Client::Rustis {
            out.push_str(" (rustis: client.delex(&key, DelexCondition::IFEQ(token)))");
        }
    } else {
        out.push_str("\n(on Redis 8.4+: DELEX key IFEQ <token>)");
    }
    out
}

/// How to extend a lease with an atomic ownership check, per client.
pub fn extend(client: Client) -> String {
    let how = match client {
        Client::RedisRs => "redis::Script::new(EXTEND).key(&key).arg(&token).arg(ttl_ms).invoke(&mut con)?",
        Client::SpringData => "redisTemplate.execute(EXTEND_SCRIPT, List.of(key), token, String.valueOf(ttlMs))",
        Client::RedisPy => "lock.extend(additional_time) on r.lock(...) — or a registered EXTEND script",
        Client::GoRedis => "redis.NewScript(EXTEND).Run(ctx, rdb, []string{key}, token, ttl.Milliseconds()) — or bsm/redislock's lock.Refresh",
        Client::StackExchange => "db.LockExtend(key, token, expiry)",
        Client::Ioredis | Client::NodeRedis => "eval EXTEND with keys [key] and arguments [token, ttlMs] — or redlock's lock.extend(ttl)",
        Client::Jedis => "jedis.eval(EXTEND, List.of(key), List.of(token, String.valueOf(ttlMs)))",
        Client::Lettuce => "commands.eval(EXTEND, ScriptOutputType.INTEGER, new String[]{key}, token, String.valueOf(ttlMs))",
        Client::Redigo => "redis.NewScript(1, EXTEND).Do(conn, key, token, ttlMs)",
        Client::Rueidis => "rueidis.NewLuaScript(EXTEND).Exec(ctx, client, []string{key}, []string{token, ttlMs})",
        Client::RedisRb => "redis.eval(EXTEND, keys: [key], argv: [token, ttl_ms]) — or redlock-rb's lock(…, extend: lock_info)",
        Client::Phpredis => "$redis->eval(EXTEND, [$key, $token, $ttlMs], 1)",
        Client::Predis => "$client->eval(EXTEND, 1, $key, $token, $ttlMs)",
        _ => "EVAL EXTEND 1 key <token> <ttl-ms>",
    };
    format!("extend only while the key still holds your token:\n{how}\nwhere EXTEND is: if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end")
}

// --- fixes (issue 11): each client's spelling of a machine-applicable fix ---

/// A TTL as the expire that set it spelled it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ttl<'a> {
    /// A number of seconds (`EXPIRE`).
    Seconds(&'a str),
    /// A number of milliseconds (`PEXPIRE`).
    Millis(&'a str),
    /// The client's own duration argument(s), verbatim: a Go `time.Duration`,
    /// Spring's `timeout, unit` or `Duration`, a .NET `TimeSpan`.
    Native(&'a str),
}

/// What a fix changes: edits (byte span, replacement) and how safe they are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FixDraft {
    pub applicability: crate::finding::Applicability,
    pub message: String,
    pub edits: Vec<(Span, String)>,
}

fn text(src: &str, span: Span) -> &str {
    src.get(span.range()).unwrap_or("").trim()
}

/// The set-if-absent calls a fix knows how to rewrite, per client: the
/// method name (lower case) and where key and value stand.
fn set_if_absent_shape(client: Client, name: &str, nargs: usize) -> Option<(usize, usize)> {
    match (client, name, nargs) {
        (Client::GoRedis, "setnx", 4) => Some((1, 2)),
        (Client::SpringData, "setifabsent", 2) => Some((0, 1)),
        (Client::StackExchange, "stringset" | "stringsetasync", 3 | 4) => Some((0, 1)),
        (Client::RedisCli, "setnx", 2) => Some((0, 1)),
        (
            Client::RedisRs
            | Client::Jedis
            | Client::Lettuce
            | Client::RedisPy
            | Client::Ioredis
            | Client::NodeRedis
            | Client::RedisRb
            | Client::Phpredis
            | Client::Predis,
            "set_nx" | "setnx",
            2,
        ) => Some((0, 1)),
        _ => None,
    }
}

/// The TTL an expire call sets, as its client spells it (`None`: not a
/// relative TTL this module can move into a SET).
pub fn expire_ttl<'s>(src: &'s str, client: Client, name: &str, args: &[Span]) -> Option<Ttl<'s>> {
    let name = name.to_ascii_lowercase();
    match client {
        Client::GoRedis if (name == "expire" || name == "pexpire") && args.len() == 3 => {
            Some(Ttl::Native(text(src, args[2])))
        }
        Client::SpringData if name == "expire" && (2..=3).contains(&args.len()) => {
            let tail = Span::new(args[1].start(), args[args.len() - 1].end());
            Some(Ttl::Native(text(src, tail)))
        }
        Client::StackExchange
            if (name == "keyexpire" || name == "keyexpireasync") && args.len() == 2 =>
        {
            let t = text(src, args[1]);
            t.starts_with("TimeSpan.").then_some(Ttl::Native(t))
        }
        Client::GoRedis | Client::SpringData | Client::StackExchange => None,
        _ if args.len() == 2 => match name.as_str() {
            "expire" => Some(Ttl::Seconds(text(src, args[1]))),
            "pexpire" => Some(Ttl::Millis(text(src, args[1]))),
            _ => None,
        },
        _ => None,
    }
}

/// A TTL to suggest where the code has none (a display-only fix).
pub fn suggested_ttl(client: Client) -> Ttl<'static> {
    match client {
        Client::GoRedis => Ttl::Native("30*time.Second"),
        Client::SpringData => Ttl::Native("Duration.ofSeconds(30)"),
        Client::StackExchange => Ttl::Native("TimeSpan.FromSeconds(30)"),
        _ => Ttl::Seconds("30"),
    }
}

/// Whether the rewritten call returns what the original returned, for any
/// use of the reply (`true`), or only when the reply is tested for truth.
fn reply_kept(client: Client) -> bool {
    matches!(
        client,
        Client::RedisRs
            | Client::GoRedis
            | Client::SpringData
            | Client::StackExchange
            | Client::RedisRb
            | Client::Phpredis
    )
}

/// One set-if-absent with its TTL, in the client's own spelling: the text
/// that replaces the acquire from its method name to the end of the call.
/// `lead` is what stands before the key (go-redis: the context).
/// `None` when the client or the TTL form has no such spelling.
pub fn set_if_absent_with_ttl(
    client: Client,
    name: &str,
    lead: &str,
    key: &str,
    value: &str,
    ttl: Ttl,
) -> Option<String> {
    let (unit_up, unit_low, t) = match ttl {
        Ttl::Seconds(t) => ("EX", "ex", t),
        Ttl::Millis(t) => ("PX", "px", t),
        Ttl::Native(t) => ("", "", t),
    };
    let native = matches!(ttl, Ttl::Native(_));
    let needs_native = matches!(
        client,
        Client::GoRedis | Client::SpringData | Client::StackExchange
    );
    if native != needs_native {
        return None;
    }
    Some(match client {
        Client::RedisRs => format!(
            "set_options({key}, {value}, redis::SetOptions::default().conditional_set(redis::ExistenceCheck::NX).with_expiration(redis::SetExpiry::{unit_up}({t})))"
        ),
        Client::SpringData => format!("{name}({key}, {value}, {t})"),
        Client::Jedis => format!("set({key}, {value}, SetParams.setParams().nx().{unit_low}({t}))"),
        Client::Lettuce => format!("set({key}, {value}, SetArgs.Builder.nx().{unit_low}({t}))"),
        Client::RedisPy => format!("set({key}, {value}, nx=True, {unit_low}={t})"),
        Client::Ioredis => format!("set({key}, {value}, '{unit_up}', {t}, 'NX')"),
        Client::NodeRedis => format!("set({key}, {value}, {{ NX: true, {unit_up}: {t} }})"),
        Client::GoRedis => format!("{name}({lead}, {key}, {value}, {t})"),
        Client::RedisRb => format!("set({key}, {value}, nx: true, {unit_low}: {t})"),
        Client::Phpredis => format!("set({key}, {value}, ['nx', '{unit_low}' => {t}])"),
        Client::Predis => format!("set({key}, {value}, '{unit_up}', {t}, 'NX')"),
        Client::StackExchange => format!("{name}({key}, {value}, {t}, When.NotExists)"),
        Client::RedisCli => format!("SET {key} {value} NX {unit_up} {t}"),
        _ => return None,
    })
}

/// The text whose fixes are being worked out (its address and length)
/// and its line starts (their address and count).
type KnownStarts = (usize, usize, *const u32, usize);

thread_local! {
    /// Set by [`with_line_starts`] while its closure runs.
    static LINE_STARTS: std::cell::Cell<Option<KnownStarts>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` with `starts`, the line starts of `src` (`0` and one past each
/// `\n`), known to [`line_around`] for `src`: the fixes of a file's
/// findings look up their lines instead of searching a line's ends from
/// each call (a minified line of 4,000 findings was read 4,000 times).
/// The starts are borrowed, not copied: the engine lends its
/// [`crate::finding::LineIndex`]'s (a second list of them, 64 kB on a
/// file of 8,000 lines, stood beside the rules' context).
pub fn with_line_starts<R>(src: &str, starts: &[u32], f: impl FnOnce() -> R) -> R {
    struct Restore(Option<KnownStarts>);
    impl Drop for Restore {
        fn drop(&mut self) {
            LINE_STARTS.with(|c| c.set(self.0));
        }
    }
    let known = (
        src.as_ptr() as usize,
        src.len(),
        starts.as_ptr(),
        starts.len(),
    );
    let _restore = Restore(LINE_STARTS.with(|c| c.replace(Some(known))));
    f()
}

/// The line start at or before `start` and the line end after `end`, from
/// the starts [`with_line_starts`] gave for `src` (none for another text).
fn known_line_ends(src: &str, start: usize, end: usize) -> Option<(usize, usize)> {
    let (at, len, ptr, count) = LINE_STARTS.with(|c| c.get())?;
    if at != src.as_ptr() as usize || len != src.len() {
        return None;
    }
    // SAFETY: set only by `with_line_starts`, from a slice borrowed for the
    // whole run of its closure, and put back to what it was when the
    // closure returns or unwinds: while it is set, the slice is alive and
    // unchanged (shared), and this thread is inside that closure
    let starts = unsafe { std::slice::from_raw_parts(ptr, count) };
    if starts.first() != Some(&0) {
        return None;
    }
    let ls = starts[starts.partition_point(|&s| s as usize <= start) - 1] as usize;
    let le = starts[starts.partition_point(|&s| s as usize <= end)..]
        .first()
        .map_or(src.len(), |&e| e as usize);
    Some((ls, le))
}

/// The line of `src` around `[start, end)`: (line start, text before, text after, line end after its newline).
fn line_around(src: &str, start: usize, end: usize) -> (usize, &str, &str, usize) {
    let (ls, le) = known_line_ends(src, start, end).unwrap_or_else(|| {
        let ls = src[..start].rfind('\n').map(|i| i + 1).unwrap_or(0);
        let le = src[end..]
            .find('\n')
            .map(|i| end + i + 1)
            .unwrap_or(src.len());
        (ls, le)
    });
    let after = src[end..le].trim_end_matches(['\n', '\r']);
    (ls, &src[ls..start], after, le)
}

/// The call is the whole condition of an `if` (`if r.setnx(k, v):`,
/// `if (await redis.setnx(k, v)) {`): its reply is only tested for truth.
fn is_condition(before: &str, after: &str) -> bool {
    let b = before.trim_end();
    let b = b.strip_suffix("await").map(str::trim_end).unwrap_or(b);
    let b = b.trim_end_matches('(').trim_end();
    let keyword = ["if", "elif", "unless"]
        .iter()
        .any(|k| b.ends_with(k) && empty_or_closing(&b[..b.len() - k.len()]));
    let a = after.trim_start_matches(')').trim();
    keyword && matches!(a, "" | ":" | "{" | "then")
}

/// Nothing, or the `}` / `} else` that closes a previous branch.
fn empty_or_closing(s: &str) -> bool {
    matches!(s.trim(), "" | "}" | "} else" | "else")
}

/// The edit that deletes a call standing alone as a statement on its
/// line(s), with its reply discarded; `None` when the call is part of a
/// larger expression or shares its line with other code.
fn delete_statement(
    src: &str,
    stmt_start: usize,
    call_end: usize,
    python: bool,
) -> Option<(Span, String)> {
    if stmt_start > call_end || call_end > src.len() || !src.is_char_boundary(stmt_start) {
        return None;
    }
    let (ls, before, after, le) = line_around(src, stmt_start, call_end);
    let prefix = before.trim();
    let prefix_ok = prefix.is_empty()
        || prefix == "await"
        || (prefix.starts_with("let _") && prefix.ends_with('=') && !prefix.contains('('));
    let suffix = after.trim();
    let suffix = suffix.strip_prefix(".await").unwrap_or(suffix);
    let suffix_ok = matches!(suffix.trim(), "" | ";" | "?" | "?;");
    if !prefix_ok || !suffix_ok {
        return None;
    }
    // A Python block whose only statement this is keeps a `pass`.
    let indent: String = before.chars().take_while(|c| c.is_whitespace()).collect();
    let prev = src[..ls].trim_end();
    let next_indent = src[le..]
        .lines()
        .find(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len());
    if python && prev.ends_with(':') && next_indent.is_none_or(|n| n < indent.len()) {
        return Some((Span::new(ls, le), format!("{indent}pass\n")));
    }
    Some((Span::new(ls, le), String::new()))
}

/// The edit that deletes `.name(args)`, a link of a method chain standing
/// alone on its line(s).
fn delete_chain_link(src: &str, name_start: usize, call_end: usize) -> Option<(Span, String)> {
    if name_start > call_end || call_end > src.len() || !src.is_char_boundary(name_start) {
        return None;
    }
    let (ls, before, after, le) = line_around(src, name_start, call_end);
    let lone = before.trim() == "." || before.trim() == "->";
    (lone && after.trim().is_empty()).then(|| (Span::new(ls, le), String::new()))
}

/// The variable the acquire's reply is bound to on its line (`ok` in
/// `let ok: bool =`, `Boolean ok =`, `ok, err :=`, `$ok =`, `var ok = await`).
fn bound_name(before: &str) -> Option<&str> {
    let b = before.trim_end();
    let b = b.strip_suffix("await").unwrap_or(b).trim_end();
    let b = b
        .strip_suffix(":=")
        .or_else(|| b.strip_suffix('='))?
        .trim_end();
    // `ok, err` → `ok`; `ok: bool` → `ok`.
    let b = b.split(',').next()?.split(':').next()?.trim();
    let name = b
        .rsplit(|c: char| !(c.is_alphanumeric() || c == '_'))
        .next()?;
    (!name.is_empty() && !name.starts_with(|c: char| c.is_ascii_digit())).then_some(name)
}

/// The expire runs exactly when the acquire succeeded, with nothing but the
/// success test between them: directly next; first in the block the acquire
/// is the condition of; first in `if <reply> {`; or after an early return on
/// failure (`if err != nil || !ok { return … }`). An expire in an `else`,
/// `ensure`, `finally`, a loop or under another condition is not.
fn expire_follows_success(src: &str, acquire: CallParts, expire: CallParts) -> bool {
    let (Some(between), true) = (
        src.get(acquire.end..expire.start),
        acquire.end <= expire.start,
    ) else {
        return false;
    };
    let (_, before, _, _) = line_around(src, acquire.start, acquire.end);
    // The rest of the acquire's line (`):`, `) {`, `?;`, `.Result()`), then the lines up to the expire.
    let (tail, rest) = between.split_once('\n').unwrap_or((between, ""));
    if [
        "else", "ensure", "rescue", "catch", "finally", "except", "for", "while",
    ]
    .iter()
    .any(|w| has_word(tail, w))
    {
        return false;
    }
    let rest = rest.split_whitespace().collect::<Vec<_>>().join(" ");
    // The expire's own `await` stands before its receiver.
    let rest = rest.strip_suffix("await").unwrap_or(&rest).trim_end();
    let rest = rest.trim_end_matches(['{', ':']).trim();
    if rest.is_empty() {
        return true;
    }
    let Some(var) = bound_name(before) else {
        return false;
    };
    let Some(cond) = rest.strip_prefix("if") else {
        return false;
    };
    let blocked = [
        "else", "ensure", "rescue", "catch", "finally", "except", "for", "while", "if",
    ];
    if blocked.iter().any(|w| has_word(cond, w))
        || !has_word(cond, var)
        || cond.contains(';') && !cond.contains("return")
    {
        return false;
    }
    match cond.split_once("return") {
        // An early return when the acquire failed: `if err != nil || !ok { return false, err }`.
        Some((test, body)) => {
            let body = body
                .trim()
                .trim_end_matches('}')
                .trim()
                .trim_end_matches(';');
            has_word(test, var) && !body.contains(['{', '}', ';'])
        }
        // `if ok {`, `if (Boolean.TRUE.equals(ok)) {`, `if ok == true:`: a test that it succeeded.
        None => !cond.contains('!') || cond.contains("!="),
    }
}

/// How far after the acquire a comparison of its reply is looked for.
const REPLY_USE_WINDOW: usize = 4096;

/// The reply is compared with a number (`== 1L`, `$ok === 1`, `ok != 0`):
/// a wrapper may answer 1/0 where `SET … NX` answers OK/nil or a boolean
/// (Laravel's phpredis connection casts SETNX to int), so the meaning of
/// the comparison would change.
fn compared_with_number(src: &str, acquire: CallParts, var: Option<&str>) -> bool {
    let end = acquire.end.min(src.len());
    let mut stop = (end + REPLY_USE_WINDOW).min(src.len());
    while !src.is_char_boundary(stop) {
        stop -= 1;
    }
    let after = &src[end..stop];
    let number_after = |rest: &str| {
        let r = rest.trim_start();
        let r = ["===", "!==", "==", "!="]
            .iter()
            .find_map(|op| r.strip_prefix(op));
        r.is_some_and(|r| {
            r.trim_start()
                .starts_with(|c: char| c.is_ascii_digit() || c == '-')
        })
    };
    if number_after(after.trim_start_matches(')')) {
        return true;
    }
    let Some(var) = var else {
        return false;
    };
    after.match_indices(var).any(|(i, _)| {
        let before_ok = !after[..i]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_');
        before_ok && number_after(&after[i + var.len()..])
    })
}

/// `word` stands in `text` as a whole word.
fn has_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(i, _)| {
        let ok = |c: Option<char>| !c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        ok(text[..i].chars().next_back()) && ok(text[i + word.len()..].chars().next())
    })
}

/// The parts of one call a fix reads: receiver, name and arguments.
#[derive(Clone, Copy, Debug)]
pub struct CallParts<'a> {
    pub client: Client,
    /// Where the statement of the call starts (its receiver, else its name).
    pub start: usize,
    pub name: Span,
    pub end: usize,
    pub args: crate::facts::Args<'a>,
}

/// The acquire's method name and where its key and value stand, when it is
/// a set-if-absent without TTL this module can rewrite (StackExchange's
/// expiry argument must be a literal `null`).
fn rewritable_acquire<'s>(src: &'s str, acquire: CallParts) -> Option<(&'s str, usize, usize)> {
    let name = text(src, acquire.name);
    let (ki, vi) = set_if_absent_shape(
        acquire.client,
        &name.to_ascii_lowercase(),
        acquire.args.len(),
    )?;
    let stackexchange_expiry = acquire.client == Client::StackExchange && acquire.args.len() == 4;
    if stackexchange_expiry && text(src, acquire.args.at(2)) != "null" {
        return None;
    }
    Some((name, ki, vi))
}

/// The arguments before the key, as written (go-redis: the context).
fn lead_args(src: &str, acquire: CallParts, key_index: usize) -> String {
    acquire
        .args
        .iter()
        .take(key_index)
        .map(|a| text(src, a))
        .collect::<Vec<_>>()
        .join(", ")
}

/// LL003: the set-if-absent and its expire merged into one set-if-absent
/// with the TTL, the expire removed. Safe when the two are `adjacent` (the
/// next Redis command of the function, same key, outside a transaction), the
/// expire stands alone, and the reply keeps its meaning; display-only otherwise.
pub fn merge_set_if_absent_and_expire(
    src: &str,
    acquire: CallParts,
    expire: CallParts,
    adjacent: bool,
) -> Option<FixDraft> {
    use crate::finding::Applicability;
    let (name, ki, vi) = rewritable_acquire(src, acquire)?;
    let ttl = expire_ttl(
        src,
        expire.client,
        text(src, expire.name),
        &expire.args.to_vec(),
    )?;
    let key = text(src, acquire.args.at(ki));
    let value = text(src, acquire.args.at(vi));
    let lead = lead_args(src, acquire, ki);
    let call = set_if_absent_with_ttl(acquire.client, name, &lead, key, value, ttl)?;
    let python = expire.client == Client::RedisPy;
    // The expire goes: as a statement of its own, or as a link of a chain
    // on its own line (`.expire(k, 30)` in a pipeline). Otherwise its reply
    // is used, and no fix is offered.
    let removal = delete_statement(src, expire.start, expire.end, python)
        .or_else(|| delete_chain_link(src, expire.name.start(), expire.end))?;
    let (_, before, after, _) = line_around(src, acquire.start, acquire.end);
    // A raw command alone on its line (a `.redis` file, a heredoc): no one reads its reply.
    let unread =
        acquire.client == Client::RedisCli && before.trim().is_empty() && after.trim().is_empty();
    let boolean = reply_kept(acquire.client) || unread || is_condition(before, after);
    let needs_import = matches!(acquire.client, Client::Jedis | Client::Lettuce);
    // redis-rs: a literal TTL fits whatever integer SetExpiry takes.
    let typed = acquire.client != Client::RedisRs
        || matches!(ttl, Ttl::Seconds(t) | Ttl::Millis(t) if t.bytes().all(|b| b.is_ascii_digit()));
    let mut edits = vec![(Span::new(acquire.name.start(), acquire.end), call)];
    let follows = expire_follows_success(src, acquire, expire)
        && !compared_with_number(src, acquire, bound_name(before));
    let applicability = if adjacent && follows && boolean && !needs_import && typed {
        Applicability::Safe
    } else {
        Applicability::DisplayOnly
    };
    edits.push(removal);
    Some(FixDraft {
        applicability,
        message: "set the key and its TTL in one command; remove the separate expire".into(),
        edits,
    })
}

/// LL004: a suggested TTL on the set-if-absent (display-only: the right TTL
/// is the author's choice).
pub fn add_ttl(src: &str, acquire: CallParts) -> Option<FixDraft> {
    let (name, ki, vi) = rewritable_acquire(src, acquire)?;
    let call = set_if_absent_with_ttl(
        acquire.client,
        name,
        &lead_args(src, acquire, ki),
        text(src, acquire.args.at(ki)),
        text(src, acquire.args.at(vi)),
        suggested_ttl(acquire.client),
    )?;
    Some(FixDraft {
        applicability: crate::finding::Applicability::DisplayOnly,
        message: "give the lock a TTL longer than the work it guards (30 s shown)".into(),
        edits: vec![(Span::new(acquire.name.start(), acquire.end), call)],
    })
}

/// Which argument of a set-if-absent is its value.
fn acquire_value_index(src: &str, acquire: CallParts) -> Option<usize> {
    let name = text(src, acquire.name).to_ascii_lowercase();
    let vi = match set_if_absent_shape(acquire.client, &name, acquire.args.len()) {
        Some((_, vi)) => vi,
        None if acquire.client == Client::GoRedis => 2,
        None => 1,
    };
    (vi < acquire.args.len()).then_some(vi)
}

/// Where the value of a set-if-absent stands among its arguments.
fn acquire_value<'s>(src: &'s str, acquire: CallParts) -> Option<&'s str> {
    let name = text(src, acquire.name).to_ascii_lowercase();
    let vi = match set_if_absent_shape(acquire.client, &name, acquire.args.len()) {
        Some((_, vi)) => vi,
        // `set(k, v, nx=True, …)` and the like: the value is the second argument.
        None if acquire.client == Client::GoRedis => 2,
        None => 1,
    };
    acquire.args.get(vi).map(|s| text(src, s))
}

/// A token text a release can reuse: a plain name in the same function, or
/// a field (`self.token`, `this.token`, `@token`, `$this->token`) from
/// another method of the same type.
fn reusable_token(token: &str, same_scope: bool) -> bool {
    let name = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
            && !s.starts_with(|c: char| c.is_ascii_digit())
    };
    let field = ["self.", "this.", "@", "$this->"]
        .iter()
        .find_map(|p| token.strip_prefix(p))
        .is_some_and(name);
    if same_scope {
        name(token) || field
    } else {
        field
    }
}

/// The release script as one line of source text, in double quotes.
fn release_script_literal() -> String {
    format!(
        "\"{}\"",
        RELEASE_SCRIPT
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    )
}

/// How far from where a fix declares a script an earlier declaration is looked for.
const DECLARATION_WINDOW: usize = 8192;

/// `src[from..to]`, clamped to the text and to character boundaries.
fn window(src: &str, from: usize, to: usize) -> &str {
    let mut to = to.min(src.len());
    while !src.is_char_boundary(to) {
        to -= 1;
    }
    let mut from = from.min(to);
    while !src.is_char_boundary(from) {
        from -= 1;
    }
    &src[from..to]
}

/// The name of the release-script constant a fix adds, per language.
fn release_constant_name(language: Language) -> &'static str {
    match language {
        Language::Go => "lockReleaseScript",
        _ => "LOCK_RELEASE_SCRIPT",
    }
}

/// Whether a line is blank or a comment (nothing a declaration must follow).
fn blank_or_comment(line: &str) -> bool {
    let t = line.trim();
    t.is_empty()
        || ["//", "#", "/*", "*", "--"]
            .iter()
            .any(|p| t.starts_with(p))
}

/// Where a top-level declaration goes: after the last top-level line that
/// `header` accepts (imports, requires, `package`), else after the leading
/// comment lines. `None` when a header line continues on the next line.
fn after_header(src: &str, header: impl Fn(&str) -> bool) -> Option<usize> {
    let mut at = None;
    let mut offset = 0;
    let mut in_block = false;
    for line in src.split_inclusive('\n') {
        let end = offset + line.len();
        let t = line.trim_end();
        if in_block {
            // A Go `import (` block ends at its `)`.
            if t == ")" {
                in_block = false;
                at = Some(end);
            }
        } else if t == "import (" {
            in_block = true;
        } else if !line.starts_with([' ', '\t']) && header(t) {
            if t.ends_with(['(', '\\', ',', '{']) {
                return None;
            }
            at = Some(end);
        } else if !blank_or_comment(line) {
            // The first line of code ends the header: the scan stays in the
            // file's head, so a file with many fixes is read once per fix
            // only that far.
            break;
        }
        offset = end;
    }
    if in_block {
        return None;
    }
    Some(at.unwrap_or_else(|| {
        // After the leading comments (a shebang, a magic comment, a licence).
        let mut offset = 0;
        for line in src.split_inclusive('\n') {
            if !blank_or_comment(line) || line.trim().is_empty() {
                break;
            }
            offset += line.len();
        }
        offset
    }))
}

/// The edit that declares `script` as the constant `name` once in the file,
/// or `None` when the file already declares it (a previous fix). `Err(())`:
/// no place for it in this file.
fn script_constant(
    src: &str,
    language: Language,
    name: &str,
    script: &str,
) -> Result<Option<(Span, String)>, ()> {
    // Declared by an earlier fix: where this one would put it (a bounded
    // window, so many fixes in one file stay linear).
    let declared = |from: usize, to: usize| {
        let w = window(src, from, to);
        w.match_indices(name).any(|(i, _)| {
            let rest = w[i + name.len()..].trim_start();
            rest.starts_with('=') || rest.starts_with(": &str")
        })
    };
    let line = match language {
        Language::Rust => format!("const {name}: &str = {script};\n"),
        Language::Kotlin => format!("private const val {name} = {script}\n"),
        Language::Python => format!("{name} = {script}\n"),
        Language::JavaScript | Language::TypeScript => format!("const {name} = {script};\n"),
        Language::Go => format!("const {name} = {script}\n"),
        Language::Ruby => format!("{name} = {script}.freeze\n"),
        Language::Php => format!("const {name} = {script};\n"),
        Language::Java => format!("    private static final String {name} = {script};\n"),
        _ => return Err(()),
    };
    let at = match language {
        // Items of a Rust file and top-level declarations of a Kotlin file
        // may stand in any order: the end of the file.
        Language::Rust | Language::Kotlin => {
            if declared(src.len().saturating_sub(DECLARATION_WINDOW), src.len()) {
                return Ok(None);
            }
            let sep = if src.ends_with('\n') { "\n" } else { "\n\n" };
            return Ok(Some((
                Span::new(src.len(), src.len()),
                format!("{sep}{line}"),
            )));
        }
        // A Java field: after the line that opens the file's first class.
        Language::Java => {
            let mut offset = 0;
            let mut found = None;
            for l in window(src, 0, 8 * DECLARATION_WINDOW).split_inclusive('\n') {
                if !blank_or_comment(l) && has_word(l, "class") && l.trim_end().ends_with('{') {
                    found = Some(offset + l.len());
                    break;
                }
                offset += l.len();
            }
            found.ok_or(())?
        }
        Language::Python => {
            after_header(src, |t| t.starts_with("import ") || t.starts_with("from ")).ok_or(())?
        }
        Language::JavaScript | Language::TypeScript => after_header(src, |t| {
            t.starts_with("import ")
                || t == "'use strict';"
                || t == "\"use strict\";"
                || (t.contains("require(")
                    && (t.starts_with("const ") || t.starts_with("let ") || t.starts_with("var ")))
        })
        .ok_or(())?,
        Language::Go => after_header(src, |t| {
            t.starts_with("package ") || t.starts_with("import ")
        })
        .ok_or(())?,
        Language::Ruby => after_header(src, |t| t.starts_with("require")).ok_or(())?,
        Language::Php => after_header(src, |t| {
            t.starts_with("<?php")
                || t.starts_with("namespace ")
                || t.starts_with("use ")
                || t.starts_with("declare(")
        })
        .filter(|&at| at > 0)
        .ok_or(())?,
        _ => return Err(()),
    };
    if at > src.len() {
        return Err(());
    }
    if declared(at.saturating_sub(256), at + DECLARATION_WINDOW) {
        return Ok(None);
    }
    let text = if matches!(language, Language::Java) {
        line
    } else {
        // A blank line before and after a top-level declaration.
        let before = if at == 0 || src[..at].ends_with("\n\n") {
            ""
        } else {
            "\n"
        };
        let next_blank = src[at..].starts_with('\n') || src[at..].starts_with("\r\n");
        let after = if next_blank { "" } else { "\n" };
        format!("{before}{line}{after}")
    };
    Ok(Some((Span::new(at, at), text)))
}

/// The release call stands alone as a statement (its reply discarded), so
/// a call with another reply type changes nothing around it.
fn release_is_statement(src: &str, release: CallParts, language: Language) -> bool {
    if release.start > release.end || release.end > src.len() {
        return false;
    }
    let (_, before, after, _) = line_around(src, release.start, release.end);
    let b = before.trim();
    let b = b.strip_suffix("await").unwrap_or(b).trim();
    let b = b.strip_suffix("return").unwrap_or(b).trim();
    let before_ok = b.is_empty()
        || b.ends_with('{')
        || b.ends_with("->")
        || b.ends_with(':')
        || (language == Language::Rust && b.starts_with("let _") && b.ends_with('='));
    let a = after.trim();
    let a = a.strip_prefix(".await").unwrap_or(a);
    let a = a.strip_prefix(".Err()").unwrap_or(a);
    let after_ok = matches!(a.trim(), "" | ";" | "?" | "?;" | "}" | ";}" | "; }");
    // A `return` of the reply keeps it only where the reply type does not matter.
    let returned = before.trim().contains("return");
    before_ok
        && after_ok
        && !(returned && matches!(language, Language::Java | Language::Kotlin | Language::Rust))
}

/// The token text the acquire wrote, when a release may reuse it.
pub fn acquire_token<'s>(src: &'s str, acquire: CallParts, same_scope: bool) -> Option<&'s str> {
    let token = acquire_value(src, acquire)?;
    let bare = token.trim_start_matches('&');
    reusable_token(bare, same_scope).then_some(token)
}

/// LL002 (unsafe): the plain delete becomes the checked release with the
/// token the lock was taken with. `None` when the client, the call or the
/// token does not fit.
pub fn checked_release(
    src: &str,
    acquire: CallParts,
    release: CallParts,
    same_scope: bool,
    language: Language,
    target: Target,
) -> Option<FixDraft> {
    let token = acquire_token(src, acquire, same_scope)?;
    release_with_token(src, token, release, language, target)
}

/// The token a GET-compare-DEL compares the read value with: the one name
/// of the `if` condition that is neither the GET's call nor its reply.
pub fn compared_token<'s>(src: &'s str, get: CallParts, release: CallParts) -> Option<&'s str> {
    if get.end > release.start || release.start > src.len() {
        return None;
    }
    let (_, get_before, _, _) = line_around(src, get.start, get.end);
    let reply = bound_name(get_before);
    // The condition: from the GET (when inside it) or from the `if` of the
    // line before the release, up to the release's line.
    let (rs, _, _, _) = line_around(src, release.start, release.end);
    let (gs, _, _, _) = line_around(src, get.start, get.end);
    if rs.saturating_sub(gs) > REPLY_USE_WINDOW {
        return None;
    }
    let region = &src[gs..rs.max(gs)];
    let word_char = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let cond_at = region
        .match_indices("if")
        .filter(|(i, _)| {
            !word_char(region[..*i].chars().next_back())
                && !word_char(region[i + 2..].chars().next())
        })
        .last()?
        .0;
    let cond_start = gs + cond_at + 2;
    let cond_end = rs.max(cond_start);
    // Only an equality test: the delete runs when the value is the token.
    let cond = format!(
        "{}{}",
        &src[cond_start..get.start.max(cond_start).min(cond_end)],
        &src[get.end.max(cond_start).min(cond_end)..cond_end]
    )
    .replace("->", "")
    .replace("=>", "");
    let equality = ["==", "equals(", "Equals("]
        .iter()
        .any(|e| cond.contains(e));
    let negated = cond.contains('<')
        || cond.contains('>')
        || cond.contains("!=")
        || cond.contains("!(")
        || cond.contains("(!")
        || has_word(&cond, "not")
        || has_word(&cond, "unless")
        || cond.trim_start().starts_with('!');
    if !equality || negated {
        return None;
    }
    let mut words: Vec<&str> = Vec::new();
    let bytes = src.as_bytes();
    let mut i = cond_start;
    while i < cond_end {
        if i >= get.start && i < get.end {
            i = get.end;
            continue;
        }
        let c = bytes[i];
        if c == b'"' || c == b'\'' || c == b'`' {
            return None; // a literal in the condition: not a plain comparison
        }
        if c.is_ascii_alphabetic() || c == b'_' || c == b'$' {
            let s = i;
            while i < cond_end
                && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' || bytes[i] == b'$')
            {
                i += 1;
            }
            let w = &src[s..i];
            let prev = src[..s].trim_end();
            let member = prev.ends_with('.') || prev.ends_with("->") || prev.ends_with("::");
            let called =
                src[i..].trim_start().starts_with('(') && !src[i..].trim_start().starts_with("()");
            let keyword = matches!(
                w,
                "if" | "not"
                    | "and"
                    | "or"
                    | "is"
                    | "None"
                    | "null"
                    | "nil"
                    | "Some"
                    | "true"
                    | "false"
                    | "True"
                    | "False"
                    | "await"
                    | "let"
                    | "then"
                    | "Ok"
                    | "err"
                    | "equals"
            );
            let candidate = !(member || keyword || called || Some(w) == reply);
            if candidate && !words.contains(&w) {
                words.push(w);
            }
            continue;
        }
        i += 1;
    }
    match words.as_slice() {
        [one] => Some(*one),
        _ => None,
    }
}

/// LL005 (unsafe): the delete of a GET-compare-DEL becomes the checked
/// release with the token the read value is compared with.
pub fn checked_release_of_compare(
    src: &str,
    get: CallParts,
    release: CallParts,
    language: Language,
    target: Target,
) -> Option<FixDraft> {
    let token = compared_token(src, get, release)?;
    let token_arg = if language == Language::Rust {
        format!("&{token}")
    } else {
        token.to_string()
    };
    let mut fix = release_with_token(src, &token_arg, release, language, target)?;
    fix.message =
        "compare and delete in one atomic step on the server (the GET before it may stay)".into();
    Some(fix)
}

/// The plain delete `release` rewritten as the client's checked release
/// with `token`: `DELEX key IFEQ token` where the target server has it and
/// the client a plain way to send it, else the release script (declared
/// once per file) or the client's own checked release.
fn release_with_token(
    src: &str,
    token: &str,
    release: CallParts,
    language: Language,
    target: Target,
) -> Option<FixDraft> {
    let name = text(src, release.name);
    let lower = name.to_ascii_lowercase();
    let (ctx, key) = match (release.client, release.args.to_vec().as_slice()) {
        (Client::GoRedis, [ctx, key]) => (text(src, *ctx), text(src, *key)),
        (Client::GoRedis, _) => return None,
        (_, [key]) => ("", text(src, *key)),
        _ => return None,
    };
    if !matches!(
        lower.as_str(),
        "del" | "delete" | "unlink" | "keydelete" | "keydeleteasync"
    ) {
        return None;
    }
    if !release_is_statement(src, release, language) {
        return None;
    }
    // Spring: RedisTemplate.delete; a RedisConnection's `del` has no execute.
    if release.client == Client::SpringData && lower != "delete" {
        return None;
    }
    let java = language == Language::Java;
    let delex = target.has_delex();
    let c = release_constant_name(language);
    let delex_call = match release.client {
        Client::RedisPy => Some(format!(
            "execute_command(\"DELEX\", {key}, \"IFEQ\", {token})"
        )),
        Client::Ioredis => Some(format!("call(\"DELEX\", {key}, \"IFEQ\", {token})")),
        Client::NodeRedis => Some(format!(
            "sendCommand([\"DELEX\", {key}, \"IFEQ\", {token}])"
        )),
        Client::GoRedis => Some(format!("Do({ctx}, \"DELEX\", {key}, \"IFEQ\", {token})")),
        Client::RedisRb => Some(format!("call(\"DELEX\", {key}, \"IFEQ\", {token})")),
        Client::Phpredis => Some(format!("rawCommand(\"DELEX\", {key}, \"IFEQ\", {token})")),
        Client::Predis => Some(format!("executeRaw([\"DELEX\", {key}, \"IFEQ\", {token}])")),
        _ => None,
    };
    let (call, needs_constant) = match release.client {
        _ if delex && delex_call.is_some() => (delex_call?, false),
        Client::RedisPy | Client::Ioredis | Client::Predis => {
            (format!("eval({c}, 1, {key}, {token})"), true)
        }
        Client::NodeRedis => (format!("eval({c}, {{ keys: [{key}], arguments: [{token}] }})"), true),
        Client::GoRedis => (format!("Eval({ctx}, {c}, []string{{{key}}}, {token})"), true),
        Client::RedisRb => (format!("eval({c}, keys: [{key}], argv: [{token}])"), true),
        Client::Phpredis => (format!("eval({c}, [{key}, {token}], 1)"), true),
        Client::StackExchange if lower.ends_with("async") => {
            (format!("LockReleaseAsync({key}, {token})"), false)
        }
        Client::StackExchange => (format!("LockRelease({key}, {token})"), false),
        Client::RedisRs => {
            // The reply type a turbofish named (`del::<_, ()>`) stays the script's.
            let between = src.get(release.name.end()..release.end).unwrap_or("");
            let fish = between
                .split_once('(')
                .map(|(f, _)| f.trim())
                .and_then(|f| f.strip_prefix("::<"))
                .and_then(|f| f.strip_suffix('>'))
                .and_then(|f| f.split_once(','))
                .map(|(_, rv)| format!("::<{}>", rv.trim()));
            // Without a type for the reply, the script's is `()`.
            let (_, before, _, _) = line_around(src, release.start, release.end);
            let typed = before.trim().starts_with("let _:");
            let fish = fish.unwrap_or_else(|| if typed { String::new() } else { "::<()>".into() });
            (
                format!("invoke_script{fish}(&redis::Script::new({c}).key({key}).arg({token}))"),
                true,
            )
        }
        Client::Jedis if java => (
            format!("eval({c}, java.util.List.of({key}), java.util.List.of({token}))"),
            true,
        ),
        Client::Jedis => (format!("eval({c}, listOf({key}), listOf({token}))"), true),
        Client::Lettuce if java => (
            format!("eval({c}, io.lettuce.core.ScriptOutputType.INTEGER, new String[]{{{key}}}, {token})"),
            true,
        ),
        Client::Lettuce => (
            format!("eval<Long>({c}, io.lettuce.core.ScriptOutputType.INTEGER, arrayOf({key}), {token})"),
            true,
        ),
        Client::SpringData if java => (
            format!("execute(new org.springframework.data.redis.core.script.DefaultRedisScript<>({c}, Long.class), java.util.List.of({key}), {token})"),
            true,
        ),
        Client::SpringData => (
            format!("execute(org.springframework.data.redis.core.script.DefaultRedisScript({c}, java.lang.Long::class.java), listOf({key}), {token})"),
            true,
        ),
        _ => return None,
    };
    let replace = (Span::new(release.name.start(), release.end), call);
    let decl = needs_constant.then(|| (release_constant_name(language), release_script_literal()));
    let edits = with_declaration(src, language, decl, replace)?;
    Some(FixDraft {
        applicability: crate::finding::Applicability::Unsafe,
        message:
            "delete the key only while it still holds this holder's token (compare-and-delete)"
                .into(),
        edits,
    })
}

/// The name of the extend-script constant a fix adds, per language.
fn extend_constant_name(language: Language) -> &'static str {
    match language {
        Language::Go => "lockExtendScript",
        _ => "LOCK_EXTEND_SCRIPT",
    }
}

/// A TTL in milliseconds, as an expression of the language.
fn millis(ttl: Ttl, language: Language) -> Option<String> {
    Some(match ttl {
        Ttl::Millis(t) => t.to_string(),
        Ttl::Seconds(t) if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) => {
            t.parse::<u64>().ok()?.checked_mul(1000)?.to_string()
        }
        Ttl::Seconds(t) if matches!(language, Language::Java | Language::Kotlin) => {
            format!("{t} * 1000L")
        }
        Ttl::Seconds(t) => format!("{t} * 1000"),
        Ttl::Native(t) if language == Language::Go => format!("({t}).Milliseconds()"),
        Ttl::Native(_) => return None,
    })
}

/// LL007: the bare EXPIRE/PEXPIRE of a lock becomes the compare-and-PEXPIRE
/// script (declared once per file), or StackExchange's `LockExtend`.
/// Unsafe with the acquire's `token` in scope and the call a statement of
/// its own; display-only (with `token` standing for the holder's token)
/// otherwise.
pub fn checked_extend(
    src: &str,
    token: Option<&str>,
    expire: CallParts,
    language: Language,
) -> Option<FixDraft> {
    use crate::finding::Applicability;
    let name = text(src, expire.name);
    let lower = name.to_ascii_lowercase();
    let ttl = expire_ttl(src, expire.client, name, &expire.args.to_vec())?;
    let (ctx, key) = match (expire.client, expire.args.to_vec().as_slice()) {
        (Client::GoRedis, [ctx, key, _]) => (text(src, *ctx), text(src, *key)),
        (Client::GoRedis, _) => return None,
        (_, [key, ..]) => ("", text(src, *key)),
        _ => return None,
    };
    let t = token.unwrap_or("token");
    let java = language == Language::Java;
    let c = extend_constant_name(language);
    // Spring: `expire(key, timeout, unit)` or `expire(key, duration)`.
    let spring_ms = || match expire.args.to_vec().as_slice() {
        [_, d] => Some(format!("{}.toMillis()", text(src, *d))),
        [_, n, unit] => Some(format!("{}.toMillis({})", text(src, *unit), text(src, *n))),
        _ => None,
    };
    let (call, needs_constant) = match expire.client {
        Client::StackExchange => {
            let Ttl::Native(ts) = ttl else { return None };
            let async_ = if lower.ends_with("async") {
                "Async"
            } else {
                ""
            };
            (format!("LockExtend{async_}({key}, {t}, {ts})"), false)
        }
        Client::SpringData => {
            let ms = spring_ms()?;
            if java {
                (format!("execute(new org.springframework.data.redis.core.script.DefaultRedisScript<>({c}, Long.class), java.util.List.of({key}), {t}, String.valueOf({ms}))"), true)
            } else {
                (format!("execute(org.springframework.data.redis.core.script.DefaultRedisScript({c}, java.lang.Long::class.java), listOf({key}), {t}, ({ms}).toString())"), true)
            }
        }
        client => {
            let ms = millis(ttl, language)?;
            let call = match client {
                Client::RedisPy | Client::Ioredis | Client::Predis => {
                    format!("eval({c}, 1, {key}, {t}, {ms})")
                }
                Client::NodeRedis => {
                    format!("eval({c}, {{ keys: [{key}], arguments: [{t}, String({ms})] }})")
                }
                Client::GoRedis => format!("Eval({ctx}, {c}, []string{{{key}}}, {t}, {ms})"),
                Client::RedisRb => format!("eval({c}, keys: [{key}], argv: [{t}, {ms}])"),
                Client::Phpredis => format!("eval({c}, [{key}, {t}, {ms}], 1)"),
                Client::RedisRs => {
                    let (_, before, _, _) = line_around(src, expire.start, expire.end);
                    let fish = if before.trim().starts_with("let _:") { "" } else { "::<()>" };
                    format!("invoke_script{fish}(&redis::Script::new({c}).key({key}).arg({t}).arg({ms}))")
                }
                Client::Jedis if java => format!(
                    "eval({c}, java.util.List.of({key}), java.util.List.of({t}, String.valueOf({ms})))"
                ),
                Client::Jedis => format!("eval({c}, listOf({key}), listOf({t}, ({ms}).toString()))"),
                Client::Lettuce if java => format!(
                    "eval({c}, io.lettuce.core.ScriptOutputType.INTEGER, new String[]{{{key}}}, {t}, String.valueOf({ms}))"
                ),
                Client::Lettuce => format!(
                    "eval<Long>({c}, io.lettuce.core.ScriptOutputType.INTEGER, arrayOf({key}), {t}, ({ms}).toString())"
                ),
                _ => return None,
            };
            (call, true)
        }
    };
    let script = format!(
        "\"{}\"",
        EXTEND_SCRIPT
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    );
    let replace = (Span::new(expire.name.start(), expire.end), call);
    let edits = with_declaration(
        src,
        language,
        needs_constant.then_some((c, script)),
        replace,
    )?;
    let mechanical = token.is_some() && release_is_statement(src, expire, language);
    Some(FixDraft {
        applicability: if mechanical {
            Applicability::Unsafe
        } else {
            Applicability::DisplayOnly
        },
        message: "extend the lease only while the key still holds this holder's token (compare-and-PEXPIRE)".into(),
        edits,
    })
}

/// LL011 (display-only): the plain SET of a check-then-set acquire becomes
/// one set-if-absent with its TTL; the check before it, and what the code
/// does with the reply, are the author's to rewrite.
pub fn set_if_absent_instead(src: &str, set: CallParts) -> Option<FixDraft> {
    let name = text(src, set.name);
    let lower = name.to_ascii_lowercase();
    let arg = |i: usize| set.args.get(i).map(|a| text(src, a));
    let kwarg = |prefix: &str| set.args.iter().any(|a| text(src, a).starts_with(prefix));
    let call = match (set.client, lower.as_str(), set.args.len()) {
        // SETEX key seconds value / PSETEX key ms value.
        (_, "setex" | "psetex", 3) => {
            let ttl = if lower == "setex" {
                Ttl::Seconds(arg(1)?)
            } else {
                Ttl::Millis(arg(1)?)
            };
            set_if_absent_with_ttl(set.client, name, "", arg(0)?, arg(2)?, ttl)?
        }
        (Client::RedisRs, "set_ex" | "pset_ex", 3) => {
            let ttl = if lower == "set_ex" {
                Ttl::Seconds(arg(2)?)
            } else {
                Ttl::Millis(arg(2)?)
            };
            set_if_absent_with_ttl(set.client, name, "", arg(0)?, arg(1)?, ttl)?
        }
        (Client::GoRedis, "set", 4) => {
            format!("SetNX({}, {}, {}, {})", arg(0)?, arg(1)?, arg(2)?, arg(3)?)
        }
        (Client::SpringData, "set", 3 | 4) => {
            let rest: Vec<&str> = set.args.iter().map(|a| text(src, a)).collect();
            format!("setIfAbsent({})", rest.join(", "))
        }
        (Client::StackExchange, "stringset" | "stringsetasync", 3) => {
            format!(
                "{name}({}, {}, {}, When.NotExists)",
                arg(0)?,
                arg(1)?,
                arg(2)?
            )
        }
        (Client::RedisPy, "set", _) if kwarg("ex=") || kwarg("px=") => {
            let all: Vec<&str> = set.args.iter().map(|a| text(src, a)).collect();
            format!("set({}, nx=True)", all.join(", "))
        }
        (Client::RedisRb, "set", _) if kwarg("ex:") || kwarg("px:") => {
            let all: Vec<&str> = set.args.iter().map(|a| text(src, a)).collect();
            format!("set({}, nx: true)", all.join(", "))
        }
        _ => return None,
    };
    Some(FixDraft {
        applicability: crate::finding::Applicability::DisplayOnly,
        message: "take the lock with one SET … NX with its TTL and test its reply instead of the separate check".into(),
        edits: vec![(Span::new(set.name.start(), set.end), call)],
    })
}

/// Farthest apart an acquire and its release may be for a fresh-token fix,
/// and how far around them the token's name must be free.
const FRESH_TOKEN_SPAN: usize = 16 * 1024;

/// A name for the fresh token that the code around the lock does not use yet.
fn fresh_token_name(src: &str, language: Language) -> Option<&'static str> {
    let names: &[&'static str] = match language {
        Language::Php => &["$token", "$lockToken"],
        Language::Python | Language::Ruby | Language::Rust => &["token", "lock_token"],
        _ => &["token", "lockToken"],
    };
    names
        .iter()
        .copied()
        .find(|n| !has_word(src, n.trim_start_matches('$')))
}

/// The statement binding a fresh random token, in the language's standard
/// spelling, and the import it needs (`None`: none, or already there).
fn fresh_token_binding(
    src: &str,
    client: Client,
    language: Language,
    name: &str,
) -> Option<(String, Option<(Span, String)>)> {
    let import = |line: &str, header: &dyn Fn(&str) -> bool| -> Option<Option<(Span, String)>> {
        let at = after_header(src, header)?;
        if src[..at].lines().any(|l| l.trim() == line.trim()) {
            return Some(None);
        }
        Some(Some((Span::new(at, at), format!("{line}\n"))))
    };
    Some(match language {
        Language::Python => (
            format!("{name} = secrets.token_hex(16)"),
            import("import secrets", &|t: &str| {
                t.starts_with("import ") || t.starts_with("from ")
            })?,
        ),
        Language::Ruby => (
            format!("{name} = SecureRandom.uuid"),
            import("require \"securerandom\"", &|t: &str| {
                t.starts_with("require")
            })?,
        ),
        Language::JavaScript | Language::TypeScript => {
            (format!("const {name} = crypto.randomUUID();"), None)
        }
        Language::Java => (
            format!("String {name} = java.util.UUID.randomUUID().toString();"),
            None,
        ),
        Language::Kotlin => (
            format!("val {name} = java.util.UUID.randomUUID().toString()"),
            None,
        ),
        Language::Rust => (
            format!("let {name} = uuid::Uuid::new_v4().to_string();"),
            None,
        ),
        Language::Php => (format!("{name} = bin2hex(random_bytes(16));"), None),
        Language::CSharp => (
            format!("var {name} = System.Guid.NewGuid().ToString();"),
            None,
        ),
        Language::Go if client == Client::GoRedis || client == Client::Redigo => {
            let line = "\t\"github.com/google/uuid\"";
            let head = window(src, 0, DECLARATION_WINDOW);
            let edit = if head.contains("\"github.com/google/uuid\"") {
                None
            } else {
                let open = head.find("\nimport (\n")? + "\nimport (\n".len();
                Some((Span::new(open, open), format!("{line}\n")))
            };
            (format!("{name} := uuid.NewString()"), edit)
        }
        _ => return None,
    })
}

/// How the release that follows an LL001/LL009 acquire is rewritten.
pub enum FollowingRelease<'a> {
    /// A plain delete: it becomes the checked release with the new token.
    Plain(CallParts<'a>),
    /// A checked release (a script call, `LockRelease`): the argument that
    /// repeated the old value takes the new token.
    Checked(CallParts<'a>),
}

/// LL001 / LL009 (unsafe): a fresh random token bound just before the
/// acquire, written by it, and used by the release that follows in the
/// same function. `None` when the acquire is not a statement that starts
/// its own line, the value or the release does not fit.
pub fn fresh_token(
    src: &str,
    acquire: CallParts,
    release: FollowingRelease,
    language: Language,
    target: Target,
) -> Option<FixDraft> {
    let value_at = match acquire_value_index(src, acquire) {
        Some(i) => acquire.args.get(i)?,
        None => return None,
    };
    let old = text(src, value_at);
    if old.is_empty() {
        return None;
    }
    let release_end = match &release {
        FollowingRelease::Plain(r) | FollowingRelease::Checked(r) => r.end,
    };
    if release_end < acquire.start || release_end - acquire.start > FRESH_TOKEN_SPAN {
        return None;
    }
    // The name is free around the acquire and the release (the function).
    let around = window(
        src,
        acquire.start.saturating_sub(FRESH_TOKEN_SPAN),
        release_end + FRESH_TOKEN_SPAN,
    );
    let name = fresh_token_name(around, language)?;
    let (binding, import) = fresh_token_binding(src, acquire.client, language, name)?;
    // The acquire's statement starts its line, and the line before ends a
    // statement or opens a block (not a continuation, not `elif`/`else`).
    if acquire.start > src.len() || !src.is_char_boundary(acquire.start) {
        return None;
    }
    let (ls, before, _, _) = line_around(src, acquire.start, acquire.start);
    let lead = before.trim_start();
    let indent = &before[..before.len() - lead.len()];
    let first_word = lead
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .next()
        .unwrap_or("");
    if matches!(first_word, "elif" | "else" | "elsif" | "when" | "case")
        || lead.starts_with('}')
        || lead.starts_with('.')
    {
        return None;
    }
    let prev = src[..ls].trim_end();
    if [
        "(", ",", "\\", "=", "+", ".", "&&", "||", "[", "->", "?", "and", "or",
    ]
    .iter()
    .any(|e| prev.ends_with(e))
    {
        return None;
    }
    // The value is a local bound just before in the same block: bind it to
    // the fresh token instead (no second name, the release keeps it).
    if let Some(rebind) = rebind_local(src, ls, indent, old, &binding, language) {
        let mut edits: Vec<(Span, String)> = import.into_iter().collect();
        edits.push(rebind);
        match release {
            FollowingRelease::Plain(r) => {
                edits.extend(release_with_token(src, old, r, language, target)?.edits)
            }
            FollowingRelease::Checked(r) => {
                r.args.iter().find(|a| text(src, *a) == old)?;
            }
        }
        edits.sort_by_key(|e| (e.0.start(), e.0.end()));
        if edits.windows(2).any(|w| w[0].0.end() > w[1].0.start()) {
            return None;
        }
        return Some(FixDraft {
            applicability: crate::finding::Applicability::Unsafe,
            message: "bind the lock's token to a fresh random value".into(),
            edits,
        });
    }
    let arg = if language == Language::Rust {
        format!("&{name}")
    } else {
        name.to_string()
    };
    let mut edits: Vec<(Span, String)> = Vec::new();
    if let Some(i) = import {
        edits.push(i);
    }
    edits.push((Span::new(ls, ls), format!("{indent}{binding}\n")));
    edits.push((value_at, arg.clone()));
    match release {
        FollowingRelease::Plain(r) => {
            let fix = release_with_token(src, &arg, r, language, target)?;
            edits.extend(fix.edits);
        }
        FollowingRelease::Checked(r) => {
            let at = r.args.iter().rev().find(|a| text(src, *a) == old)?;
            edits.push((at, arg.clone()));
        }
    }
    edits.sort_by_key(|e| (e.0.start(), e.0.end()));
    // Edits must not overlap (an import and a declaration at one point are fine).
    if edits.windows(2).any(|w| w[0].0.end() > w[1].0.start()) {
        return None;
    }
    Some(FixDraft {
        applicability: crate::finding::Applicability::Unsafe,
        message: "take the lock with a fresh random token and release it only with that token"
            .into(),
        edits,
    })
}

/// The edit that binds the local `old`, assigned on one line of the block
/// before the acquire (line start `ls`, indent `indent`), to the fresh
/// token expression of `binding` instead of its weak value.
fn rebind_local(
    src: &str,
    ls: usize,
    indent: &str,
    old: &str,
    binding: &str,
    language: Language,
) -> Option<(Span, String)> {
    let ident = old.trim_start_matches('$');
    if ident.is_empty()
        || !ident.chars().all(|c| c.is_alphanumeric() || c == '_')
        || ident.starts_with(|c: char| c.is_ascii_digit())
    {
        return None;
    }
    let expr = binding
        .split_once(" := ")
        .or_else(|| binding.split_once(" = "))?
        .1
        .trim_end_matches(';');
    let decls: &[&str] = match language {
        Language::JavaScript | Language::TypeScript => &["const ", "let ", "var "],
        Language::Java => &["final String ", "String ", "final var ", "var "],
        Language::Kotlin => &["val ", "var "],
        Language::Rust => &["let "],
        Language::CSharp => &["var ", "string "],
        _ => &[""],
    };
    let semicolon = matches!(
        language,
        Language::Java
            | Language::JavaScript
            | Language::TypeScript
            | Language::Php
            | Language::Rust
            | Language::CSharp
    );
    let from = ls.saturating_sub(FRESH_TOKEN_SPAN);
    let region = window(src, from, ls);
    let base = ls - region.len();
    let mut lines: Vec<(usize, &str)> = Vec::new();
    let mut at = 0;
    for l in region.split_inclusive('\n') {
        lines.push((at, l.trim_end_matches(['\n', '\r'])));
        at += l.len();
    }
    for &(start, line) in lines.iter().rev() {
        if start == 0 && from > 0 {
            return None; // a line cut by the window
        }
        if line.trim().is_empty() {
            continue;
        }
        let line_indent = line.len() - line.trim_start().len();
        if line_indent < indent.len() {
            return None; // left the block
        }
        if line_indent != indent.len() {
            continue;
        }
        let t = line.trim();
        let rest = decls
            .iter()
            .find_map(|d| t.strip_prefix(d).and_then(|r| r.strip_prefix(old)))
            .map(str::trim_start);
        let Some(rest) = rest else {
            continue;
        };
        let rhs = rest
            .strip_prefix(":=")
            .or_else(|| rest.strip_prefix('=').filter(|r| !r.starts_with('=')))?;
        let body = rhs.trim();
        let complete = if semicolon {
            body.ends_with(';')
        } else {
            !body.ends_with(['(', ',', '\\', '+', '[', '{'])
        };
        if !complete || body.trim_end_matches(';').is_empty() {
            return None;
        }
        let rhs_at = base + start + (line.len() - rhs.len()) + (rhs.len() - rhs.trim_start().len());
        let rhs_end = base + start + line.trim_end().len() - usize::from(semicolon);
        return (rhs_at < rhs_end).then(|| (Span::new(rhs_at, rhs_end), expr.to_string()));
    }
    None
}

/// The edits of a rewritten call: `replace`, and before it in file order
/// the declaration of the script constant `decl` (name, literal) when the
/// file does not declare it yet. `None`: the file has no place for it.
fn with_declaration(
    src: &str,
    language: Language,
    decl: Option<(&str, String)>,
    replace: (Span, String),
) -> Option<Vec<(Span, String)>> {
    let mut edits = Vec::new();
    if let Some((name, script)) = decl {
        if let Some(d) = script_constant(src, language, name, &script).ok()? {
            edits.push(d);
        }
    }
    if edits
        .first()
        .is_some_and(|e| e.0.start() > replace.0.start())
    {
        edits.insert(0, replace);
    } else {
        edits.push(replace);
    }
    Some(edits)
}

// --- end fixes ---

#[cfg(test)]
mod tests {
    use super::*;

    /// `line_around` gives the same line from the starts handed to it as
    /// from its own search, at every cut of texts with `\r\n`, empty lines,
    /// multi-byte characters and no final newline; for another text (a
    /// piece of the one whose starts it has) it searches.
    #[test]
    fn line_around_from_given_starts_is_its_own_search() {
        for src in [
            "a\r\n\nbé = f(x);\n  g()\n\n",
            "one line, no newline",
            "\n\n\n",
            "x\ny\nzz\n日本\nend",
        ] {
            let cuts: Vec<usize> = (0..=src.len())
                .filter(|&i| src.is_char_boundary(i))
                .collect();
            let mut pairs = Vec::new();
            for &a in &cuts {
                for &b in cuts.iter().filter(|&&b| b >= a) {
                    pairs.push((a, b, line_around(src, a, b)));
                }
            }
            let starts: Vec<u32> = std::iter::once(0)
                .chain(src.match_indices('\n').map(|(i, _)| (i + 1) as u32))
                .collect();
            with_line_starts(src, &starts, || {
                for &(a, b, want) in &pairs {
                    assert!(known_line_ends(src, a, b).is_some());
                    assert_eq!(line_around(src, a, b), want, "{src:?} {a}..{b}");
                }
                // a piece of the text is another text: searched
                if src.len() > 2 {
                    let piece = &src[..src.len() - 1];
                    if piece.is_char_boundary(piece.len()) {
                        assert!(known_line_ends(piece, 0, 0).is_none());
                    }
                }
            });
            assert!(known_line_ends(src, 0, 0).is_none(), "forgotten after");
        }
    }

    #[test]
    fn delex_only_from_8_4() {
        assert!(!Target {
            min_redis: Some((7, 2))
        }
        .has_delex());
        assert!(Target {
            min_redis: Some((8, 4))
        }
        .has_delex());
        assert!(release(
            Client::RedisRs,
            Target {
                min_redis: Some((8, 4))
            }
        )
        .contains("del_ex"));
        assert!(!release(Client::RedisRs, Target::default()).contains("del_ex"));
    }

    fn parts(src: &str, call: &str, client: Client) -> CallParts<'static> {
        // Test helper: a one-argument-list call `recv.name(a, b)` found by text.
        let at = src.find(call).unwrap();
        let open = call.find('(').unwrap();
        let dot = call[..open].rfind(['.', '>']).unwrap();
        let name = Span::new(at + dot + 1, at + open);
        let mut sites = crate::facts::CallSites::default();
        let mut args = Vec::new();
        let mut start = at + open + 1;
        for piece in call[open + 1..call.len() - 1].split(", ") {
            args.push(Span::new(start, start + piece.len()));
            start += piece.len() + 2;
        }
        sites.push(Span::new(at, at + call.len()), Span::default(), args);
        let sites: &'static crate::facts::CallSites = Box::leak(Box::new(sites));
        let site = sites.iter().next().expect("the site just pushed");
        CallParts {
            client,
            start: at,
            name,
            end: at + call.len(),
            args: sites.args(site),
        }
    }

    fn merged(src: &str, acquire: &str, expire: &str, client: Client) -> Option<FixDraft> {
        merge_set_if_absent_and_expire(
            src,
            parts(src, acquire, client),
            parts(src, expire, client),
            true,
        )
    }

    #[test]
    fn merge_is_safe_only_when_the_expire_follows_success() {
        use crate::finding::Applicability::{DisplayOnly, Safe};
        let ok = "def f(k, v):\n    if r.setnx(k, v):\n        r.expire(k, 30)\n        return v\n";
        let fix = merged(ok, "r.setnx(k, v)", "r.expire(k, 30)", Client::RedisPy).unwrap();
        assert_eq!(fix.applicability, Safe);
        assert_eq!(fix.edits[0].1, "set(k, v, nx=True, ex=30)");
        let bound = "let ok: bool = con.set_nx(k, v)?;\nif ok {\n    let _: bool = con.expire(k, 30)?;\n}\n";
        let negated = bound.replace("if ok {", "if !ok {");
        // (source, acquire, expire, client, expected applicability; None: no fix)
        let cases = [
            // Under another condition the TTL is not always set.
            ("def f(k, v, t):\n    if r.setnx(k, v):\n        if t:\n            r.expire(k, t)\n",
             "r.setnx(k, v)", "r.expire(k, t)", Client::RedisPy, Some(DisplayOnly)),
            // In an `ensure` branch (Ruby).
            ("def f(k)\n  yield if redis.setnx(k, v)\nensure\n  redis.expire(k, 9)\nend\n",
             "redis.setnx(k, v)", "redis.expire(k, 9)", Client::RedisRb, Some(DisplayOnly)),
            // Bound, then tested: safe; tested for failure: not.
            (bound, "con.set_nx(k, v)", "con.expire(k, 30)", Client::RedisRs, Some(Safe)),
            (&negated, "con.set_nx(k, v)", "con.expire(k, 30)", Client::RedisRs, Some(DisplayOnly)),
            // The reply compared with a number (a wrapper answering 1/0).
            ("$ok = $c->setnx($k, 1);\nif ($ok === 1) {\n    $c->expire($k, 60);\n}\nreturn $ok === 1;\n",
             "$c->setnx($k, 1)", "$c->expire($k, 60)", Client::Phpredis, Some(DisplayOnly)),
            // The expire's reply is used: no fix at all.
            ("if r.setnx(k, v):\n    done = r.expire(k, 30)\n",
             "r.setnx(k, v)", "r.expire(k, 30)", Client::RedisPy, None),
        ];
        for (src, acquire, expire, client, want) in cases {
            let got = merged(src, acquire, expire, client).map(|f| f.applicability);
            assert_eq!(got, want, "{src}");
        }
    }

    #[test]
    fn ttl_suggestion_keeps_the_go_context() {
        let src = "ok := rdb.SetNX(context.Background(), key, v, 0).Val()\n";
        let fix = add_ttl(
            src,
            parts(
                src,
                "rdb.SetNX(context.Background(), key, v, 0)",
                Client::GoRedis,
            ),
        )
        .unwrap();
        assert_eq!(
            fix.edits[0].1,
            "SetNX(context.Background(), key, v, 30*time.Second)"
        );
        assert_eq!(
            fix.applicability,
            crate::finding::Applicability::DisplayOnly
        );
    }

    #[test]
    fn checked_release_needs_the_token_in_scope() {
        let same = "import redis\n\nt = new_token()\nr.set(k, t, nx=True, ex=5)\nr.delete(k)\n";
        let fix = |same_scope, target| {
            checked_release(
                same,
                parts(same, "r.set(k, t, nx=True, ex=5)", Client::RedisPy),
                parts(same, "r.delete(k)", Client::RedisPy),
                same_scope,
                Language::Python,
                target,
            )
        };
        let script = fix(true, Target::default()).unwrap();
        assert_eq!(script.applicability, crate::finding::Applicability::Unsafe);
        // The script is declared once, after the imports, and the call uses it.
        let one_line = RELEASE_SCRIPT
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(
            script.edits[0],
            (
                Span::new(13, 13),
                format!("\nLOCK_RELEASE_SCRIPT = \"{one_line}\"\n")
            )
        );
        assert_eq!(script.edits[1].1, "eval(LOCK_RELEASE_SCRIPT, 1, k, t)");
        // Redis 8.4+: DELEX, no script.
        let delex = fix(
            true,
            Target {
                min_redis: Some((8, 4)),
            },
        )
        .unwrap();
        assert_eq!(delex.edits.len(), 1);
        assert_eq!(
            delex.edits[0].1,
            "execute_command(\"DELEX\", k, \"IFEQ\", t)"
        );
        // A local of another function is not in scope; a field is.
        assert!(fix(false, Target::default()).is_none());
        assert!(reusable_token("self.token", false) && reusable_token("$this->token", false));
        assert!(!reusable_token("uuid4().hex", true));
    }

    fn release_constant(src: &str, language: Language) -> Result<Option<(Span, String)>, ()> {
        script_constant(
            src,
            language,
            release_constant_name(language),
            &release_script_literal(),
        )
    }

    #[test]
    fn release_constant_is_declared_once_where_the_language_allows() {
        let java = "// c\nimport a.B;\n\npublic class L {\n    void f() {}\n}\n";
        let (span, text) = release_constant(java, Language::Java).unwrap().unwrap();
        assert_eq!(
            &java[..span.start()],
            "// c\nimport a.B;\n\npublic class L {\n"
        );
        assert!(text.starts_with("    private static final String LOCK_RELEASE_SCRIPT = \""));
        let fixed = format!("{}{text}{}", &java[..span.start()], &java[span.start()..]);
        assert_eq!(release_constant(&fixed, Language::Java), Ok(None));
        let go = "package l\n\nimport (\n\t\"context\"\n)\n\nfunc f() {}\n";
        let (span, _) = release_constant(go, Language::Go).unwrap().unwrap();
        assert_eq!(&go[span.start()..], "\nfunc f() {}\n");
        let rs = "use redis::Commands;\nfn f() {}\n";
        let (span, text) = release_constant(rs, Language::Rust).unwrap().unwrap();
        assert_eq!(span.start(), rs.len());
        assert!(text.starts_with("\nconst LOCK_RELEASE_SCRIPT: &str = "));
    }

    #[test]
    fn compared_token_is_the_one_other_name_of_the_condition() {
        let py = "def release(name, token):\n    if r.get(key) == token.encode():\n        r.delete(key)\n";
        let get = parts(py, "r.get(key)", Client::RedisPy);
        let del = parts(py, "r.delete(key)", Client::RedisPy);
        assert_eq!(compared_token(py, get, del), Some("token"));
        let java = "String current = jedis.get(key);\nif (token.equals(current)) {\n    jedis.del(key);\n}\n";
        let get = parts(java, "jedis.get(key)", Client::Jedis);
        let del = parts(java, "jedis.del(key)", Client::Jedis);
        assert_eq!(compared_token(java, get, del), Some("token"));
        // Two candidate names: no guess.
        let two = "v = r.get(key)\nif v == a or v == b:\n    r.delete(key)\n";
        let get = parts(two, "r.get(key)", Client::RedisPy);
        let del = parts(two, "r.delete(key)", Client::RedisPy);
        assert_eq!(compared_token(two, get, del), None);
    }

    #[test]
    fn help_texts_use_the_tested_scripts() {
        // The one-line forms shown in help must be the same script as the constants.
        let one_line = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(release(Client::RedisRs, Target::default()).contains(&one_line(RELEASE_SCRIPT)));
        assert!(extend(Client::RedisRs).contains(&one_line(EXTEND_SCRIPT)));
    }
}
