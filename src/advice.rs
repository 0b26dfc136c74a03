//! The fixes locklint recommends, as constants, and how each client library
//! spells them. The scripts here are exactly the ones the `help:` texts show;
//! `tests/real_redis.rs` runs them against a real redis-server.

use crate::facts::Client;

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

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn help_texts_use_the_tested_scripts() {
        // The one-line forms shown in help must be the same script as the constants.
        let one_line = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(release(Client::RedisRs, Target::default()).contains(&one_line(RELEASE_SCRIPT)));
        assert!(extend(Client::RedisRs).contains(&one_line(EXTEND_SCRIPT)));
    }
}
