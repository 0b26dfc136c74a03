#!/usr/bin/env python3
"""Generates the deterministic benchmark corpus for bench/run.sh.

A mixed-language monorepo: 20,480 source files and about 3.5 million lines
across .rs .java .kt .py .js .ts .go .rb .php .cs .lua .sh, about 1% of the
files with Redis lock code (right and wrong), a handful of large files, and
ordinary code full of the substrings a naive keyword search trips over
(`model`, `delete`, `description`, `block`, `clock`, mutexes, `expired`,
`settings`, `nginx`). The same seed always writes the same bytes.

usage: bench/gen.py OUT_DIR [--files N] [--seed S]
"""

import argparse
import os
import random
import shutil

LANGS = ["rs", "java", "kt", "py", "js", "ts", "go", "rb", "php", "cs", "lua", "sh"]
# Share of files per language (weights), roughly a polyglot monorepo.
WEIGHTS = [14, 12, 5, 14, 10, 12, 12, 5, 5, 6, 2, 3]

NOUNS = [
    "user", "order", "invoice", "model", "block", "clock", "payment", "session",
    "report", "account", "delta", "channel", "message", "profile", "settings",
    "asset", "dataset", "offset", "record", "ticket", "bucket", "schedule",
    "description", "delivery", "delegate", "registry", "template", "shipment",
]
VERBS = [
    "load", "save", "delete", "update", "render", "compute", "validate", "parse",
    "evaluate", "describe", "refresh", "sync", "encode", "decode", "merge", "reset",
    "retrieve", "schedule", "publish", "consume",
]
# Share of functions that take an in-process lock (mutex, synchronized, with lock).
LOCK_USE = 0.03

WORDS = [
    "the", "cache", "expired", "entries", "are", "removed", "before", "each", "javascript",
    "script", "description", "nginx", "proxy", "anxiety", "phoenix", "delay", "retry", "model",
    "unlocked", "blocking", "clockwise", "subscription", "evaluation", "next", "index",
]


def ident(rng, style):
    v, n = rng.choice(VERBS), rng.choice(NOUNS)
    if style == "snake":
        return f"{v}_{n}"
    if style == "camel":
        return v + n[:1].upper() + n[1:]
    return v[:1].upper() + v[1:] + n[:1].upper() + n[1:]


def comment(rng):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 9)))


# ---------------------------------------------------------------------------
# Ordinary code: one function (list of lines) per call, per language.

def fn_rs(rng, i):
    name, n = ident(rng, "snake"), rng.choice(NOUNS)
    lines = [f"/// {comment(rng)}", f"pub fn {name}_{i}(items: &[u64], limit: usize) -> Option<u64> {{",
             "    let mut total: u64 = 0;"]
    for k in range(rng.randint(4, 14)):
        r = rng.random()
        if r < 0.3:
            lines += [f"    for (idx, value) in items.iter().enumerate().take(limit) {{",
                      f"        total = total.wrapping_add(value.saturating_mul({k + 2}) ^ idx as u64);", "    }"]
        elif r < 0.5:
            lines += [f"    if total > {rng.randint(10, 9999)} {{", f"        return Some(total / {k + 1});", "    }"]
        elif r < 0.6:
            lines.append(f"    let {n}_{k} = {n.capitalize()}::new(\"{rng.choice(WORDS)}\", {k});")
        elif r < 0.7:
            lines.append(f"    // {comment(rng)}")
        elif r < 0.8:
            lines.append(f"    total += {k};")
        else:
            lines.append(f"    let text = format!(\"{{}}-{{}}\", total, \"{rng.choice(WORDS)}\");")
            lines.append("    total += text.len() as u64;")
    if rng.random() < LOCK_USE:
        # In-process locking: a lock word without Redis.
        lines[3:3] = [f"    let guard = self_{n}.lock().unwrap_or_else(|e| e.into_inner());",
                      "    total += guard.len() as u64;"]
    lines += ["    Some(total)", "}", ""]
    return lines


def fn_c_like(rng, i, lang):
    """Java, Kotlin, C#, JS, TS, Go, PHP share a brace syntax; small differences by language."""
    name, n = ident(rng, "camel"), rng.choice(NOUNS)
    decl = {
        "java": f"    public long {name}{i}(List<Long> items, int limit) {{",
        "kt": f"    fun {name}{i}(items: List<Long>, limit: Int): Long {{",
        "cs": f"    public long {ident(rng, 'pascal')}{i}(IList<long> items, int limit) {{",
        "js": f"  {name}{i}(items, limit) {{",
        "ts": f"  {name}{i}(items: number[], limit: number): number {{",
        "go": f"func {ident(rng, 'pascal')}{i}(items []int64, limit int) int64 {{",
        "php": f"    public function {name}{i}(array $items, int $limit): int {{",
    }[lang]
    ind = "\t" if lang == "go" else ("    " if lang in ("js", "ts") else "        ")
    var = "$total" if lang == "php" else "total"
    let = {"java": "long ", "kt": "var ", "cs": "long ", "js": "let ", "ts": "let ", "go": "", "php": ""}[lang]
    assign = ":=" if lang == "go" else "="
    end = "" if lang in ("go", "kt") else ";"
    lines = [f"{ind[:-4] if lang not in ('go',) else ''}// {comment(rng)}", decl, f"{ind}{let}{var} {assign} 0{end}"]
    for k in range(rng.randint(4, 14)):
        r = rng.random()
        if r < 0.3:
            lines += [f"{ind}if ({var} > {rng.randint(10, 9999)}) {{" if lang != "go" else f"{ind}if {var} > {rng.randint(10, 9999)} {{",
                      f"{ind}    {var} = {var} / {k + 1}{end}", f"{ind}}}"]
        elif r < 0.45:
            call = {"php": f"$this->{ident(rng, 'camel')}({var})", "go": f"{ident(rng, 'camel')}({var})"}.get(lang, f"this.{ident(rng, 'camel')}({var})")
            lines.append(f"{ind}{var} += {call}{end}")
        elif r < 0.55:
            lines.append(f"{ind}// {comment(rng)}")
        elif r < 0.62 and k == 0 and rng.random() < LOCK_USE * 5:
            # Ordinary in-process locking and map deletes: lock words without Redis.
            lines += {
                "go": [f"{ind}mu.Lock()", f"{ind}delete(cache, key{k})", f"{ind}mu.Unlock()"],
                "java": [f"{ind}synchronized (lock) {{ cache.remove(key{k}); }}"],
                "cs": [f"{ind}lock (_sync) {{ _cache.Remove(key{k}); }}"],
                "js": [f"{ind}delete this.cache[key{k}];"],
                "ts": [f"{ind}delete this.cache[key{k}];"],
                "kt": [f"{ind}mutex.withLock {{ cache.remove(key{k}) }}"],
                "php": [f"{ind}unset($this->cache[$key{k}]);"],
            }[lang]
        elif r < 0.8:
            s = "\"" + comment(rng) + "\""
            lines.append(f"{ind}{var} += {'strlen(' + s + ')' if lang == 'php' else ('len(' + s + ')' if lang == 'go' else s + '.length' + ('()' if lang == 'java' else ''))}{end}"
                         .replace(".length()", ".length()") if lang != "cs" else f"{ind}{var} += {s}.Length{end}")
            if lang == "kt":
                lines[-1] = f"{ind}{var} += {s}.length"
        else:
            lines.append(f"{ind}{var} += {k} * {rng.randint(1, 99)}{end}")
    lines += [f"{ind}return {var}{end}", "}" if lang == "go" else ind[:-4] + "}" if lang not in ("js", "ts") else "  }", ""]
    return lines


def fn_py(rng, i):
    name = ident(rng, "snake")
    lines = [f"def {name}_{i}(items, limit):", f"    \"\"\"{comment(rng)}.\"\"\"", "    total = 0"]
    for k in range(rng.randint(4, 14)):
        r = rng.random()
        if r < 0.3:
            lines += ["    for idx, value in enumerate(items[:limit]):", f"        total += value * {k + 2} ^ idx"]
        elif r < 0.45:
            lines += [f"    if total > {rng.randint(10, 9999)}:", f"        return total // {k + 1}"]
        elif r < 0.55:
            lines.append(f"    # {comment(rng)}")
        elif r < 0.6:
            lines += ["    with self._lock:", f"        del self._cache[key_{k}]"] if rng.random() < LOCK_USE else [f"    del items[{k}:{k + 1}]"]
        else:
            lines.append(f"    total += len(\"{comment(rng)}\")")
    lines += ["    return total", "", ""]
    return lines


def fn_rb(rng, i):
    name = ident(rng, "snake")
    lines = [f"  # {comment(rng)}", f"  def {name}_{i}(items, limit)", "    total = 0"]
    for k in range(rng.randint(4, 14)):
        r = rng.random()
        if r < 0.3:
            lines += ["    items.first(limit).each_with_index do |value, idx|", f"      total += value * {k + 2} ^ idx", "    end"]
        elif r < 0.5:
            lines.append(f"    return total / {k + 1} if total > {rng.randint(10, 9999)}")
        elif r < 0.6:
            lines.append(f"    # {comment(rng)}")
        else:
            lines.append(f"    total += \"{comment(rng)}\".length")
    lines += ["    total", "  end", ""]
    return lines


def fn_lua(rng, i):
    name = ident(rng, "snake")
    lines = [f"-- {comment(rng)}", f"local function {name}_{i}(items, limit)", "  local total = 0"]
    for k in range(rng.randint(4, 14)):
        r = rng.random()
        if r < 0.35:
            lines += ["  for idx = 1, math.min(#items, limit) do", f"    total = total + items[idx] * {k + 2}", "  end"]
        elif r < 0.55:
            lines += [f"  if total > {rng.randint(10, 9999)} then", f"    return total / {k + 1}", "  end"]
        else:
            lines.append(f"  total = total + #\"{comment(rng)}\"")
    lines += ["  return total", "end", ""]
    return lines


def fn_sh(rng, i):
    name = ident(rng, "snake")
    lines = [f"# {comment(rng)}", f"{name}_{i}() {{", "  local total=0"]
    for k in range(rng.randint(4, 14)):
        r = rng.random()
        if r < 0.3:
            lines += [f"  for f in \"$@\"; do", f"    total=$((total + {k + 2}))", "  done"]
        elif r < 0.5:
            lines += [f"  if [ \"$total\" -gt {rng.randint(10, 9999)} ]; then", f"    echo \"{comment(rng)}\"", "  fi"]
        else:
            lines.append(f"  echo \"{comment(rng)}\" >> \"$LOG_DIR/{rng.choice(NOUNS)}.log\"")
    lines += ["  echo \"$total\"", "}", ""]
    return lines


def header(lang, rng, idx):
    n = rng.choice(NOUNS)
    return {
        "rs": [f"//! The {n} module: {comment(rng)}.", "use std::collections::HashMap;", ""],
        "java": [f"package com.example.{n};", "", "import java.util.List;", "", f"public class {n.capitalize()}Service{idx} {{"],
        "kt": [f"package com.example.{n}", "", f"class {n.capitalize()}Repo{idx} {{"],
        "cs": ["using System.Collections.Generic;", "", f"namespace Example.{n.capitalize()} {{", f"public class {n.capitalize()}Handler{idx} {{"],
        "js": [f"// {comment(rng)}", f"export class {n.capitalize()}Store{idx} {{"],
        "ts": [f"// {comment(rng)}", f"export class {n.capitalize()}View{idx} {{"],
        "go": [f"package {n}", "", "import \"fmt\"", ""],
        "rb": [f"# {comment(rng)}", f"class {n.capitalize()}Job{idx}"],
        "php": ["<?php", "", f"namespace App\\{n.capitalize()};", "", f"class {n.capitalize()}Controller{idx}", "{"],
        "py": [f"\"\"\"{comment(rng)}.\"\"\"", "import os", "", ""],
        "lua": [f"-- {comment(rng)}", "local M = {}", ""],
        "sh": ["#!/usr/bin/env bash", "set -euo pipefail", ""],
    }[lang]


def footer(lang):
    return {"java": ["}"], "kt": ["}"], "cs": ["}", "}"], "js": ["}"], "ts": ["}"], "rb": ["end"],
            "php": ["}"], "lua": ["return M"], "go": ["var _ = fmt.Sprintf"]}.get(lang, [])


def function(lang, rng, i):
    if lang == "rs":
        return fn_rs(rng, i)
    if lang == "py":
        return fn_py(rng, i)
    if lang == "rb":
        return fn_rb(rng, i)
    if lang == "lua":
        return fn_lua(rng, i)
    if lang == "sh":
        return fn_sh(rng, i)
    return fn_c_like(rng, i, lang)


# ---------------------------------------------------------------------------
# Redis lock code: about 1% of the files get one of these, right or wrong.

REDIS = {
    "rs": [
        """pub fn acquire_lock_{i}(con: &mut redis::Connection, job: &str) -> redis::RedisResult<bool> {
    let key = format!("lock:job:{{}}", job);
    let ok: bool = redis::cmd("SET").arg(&key).arg("1").arg("NX").arg("PX").arg(30000).query(con)?;
    Ok(ok)
}}

pub fn release_lock_{i}(con: &mut redis::Connection, job: &str) -> redis::RedisResult<()> {
    let key = format!("lock:job:{{}}", job);
    let _: () = con.del(&key)?;
    Ok(())
}}
""",
        """const RELEASE_{i}: &str = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

pub fn unlock_{i}(con: &mut redis::Connection, key: &str, token: &str) -> redis::RedisResult<i32> {
    redis::Script::new(RELEASE_{i}).key(key).arg(token).invoke(con)
}}
""",
    ],
    "py": [
        """def acquire_lock_{i}(r, name):
    key = f"lock:{{name}}"
    return r.set(key, "1", nx=True, px=30000)


def release_lock_{i}(r, name):
    key = f"lock:{{name}}"
    r.delete(key)

""",
        """def with_lock_{i}(r, name):
    with r.lock(f"report:{{name}}", timeout=30):
        return compute(name)

""",
    ],
    "java": [
        """    public boolean tryLock{i}(String id) {{
        String lockKey = "lock:order:" + id;
        Boolean ok = redisTemplate.opsForValue().setIfAbsent(lockKey, "locked");
        redisTemplate.expire(lockKey, 30, TimeUnit.SECONDS);
        return Boolean.TRUE.equals(ok);
    }}

    public void unlock{i}(String id) {{
        redisTemplate.delete("lock:order:" + id);
    }}
""",
    ],
    "kt": [
        """    fun acquire{i}(id: String): Boolean {{
        val lockKey = "lock:sync:$id"
        return redis.opsForValue().setIfAbsent(lockKey, UUID.randomUUID().toString(), Duration.ofSeconds(30)) == true
    }}
""",
    ],
    "cs": [
        """    public bool Acquire{i}(IDatabase db, string id) {{
        return db.LockTake("lock:" + id, Guid.NewGuid().ToString(), TimeSpan.FromSeconds(30));
    }}
    public void Release{i}(IDatabase db, string id) {{
        db.KeyDelete("lock:" + id);
    }}
""",
    ],
    "js": [
        """  async acquire{i}(id) {{
    const lockKey = `lock:${{id}}`;
    return this.redis.set(lockKey, 'locked', 'NX', 'PX', 30000);
  }}
  async release{i}(id) {{
    await this.redis.del(`lock:${{id}}`);
  }}
""",
    ],
    "ts": [
        """  async acquire{i}(id: string): Promise<boolean> {{
    const ok = await this.client.set(`lock:${{id}}`, crypto.randomUUID(), {{ NX: true, PX: 30000 }});
    return ok === 'OK';
  }}
""",
    ],
    "go": [
        """func AcquireLock{i}(ctx context.Context, rdb *redis.Client, id string) (bool, error) {{
	key := "lock:" + id
	ok, err := rdb.SetNX(ctx, key, 1, 0).Result()
	if err != nil {{
		return false, err
	}}
	rdb.Expire(ctx, key, 30*time.Second)
	return ok, nil
}}

""",
    ],
    "rb": [
        """  def acquire_lock_{i}(id)
    redis.set("lock:#{{id}}", Process.pid, nx: true, px: 30_000)
  end

  def release_lock_{i}(id)
    redis.del("lock:#{{id}}")
  end
""",
    ],
    "php": [
        """    public function acquire{i}(string $id): bool
    {{
        return (bool) $this->redis->set('lock:' . $id, 1, ['nx', 'px' => 30000]);
    }}

    public function release{i}(string $id): void
    {{
        $this->redis->del('lock:' . $id);
    }}
""",
    ],
    "lua": [
        """-- release {i}
if redis.call('exists', KEYS[1]) == 1 then
  return redis.call('del', KEYS[1])
end
return 0
""",
    ],
    "sh": [
        """deploy_lock_{i}() {{
  redis-cli SET lock:deploy "$HOSTNAME" NX EX 600
  run_deploy
  redis-cli DEL lock:deploy
}}
""",
    ],
}


def write_file(path, lines):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(lines))
        f.write("\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--files", type=int, default=20480)
    ap.add_argument("--seed", type=int, default=20261129)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    if os.path.exists(args.out):
        shutil.rmtree(args.out)
    os.makedirs(args.out)
    # Ignored folders both tools must skip (the corpus has its own .gitignore).
    write_file(os.path.join(args.out, ".gitignore"), ["node_modules/", "target/", "*.min.js"])
    for ignored in ("node_modules/left-pad", "target/debug"):
        d = os.path.join(args.out, ignored)
        os.makedirs(d)
        for k in range(20):
            write_file(os.path.join(d, f"gen{k}.js"), ["redis.set(lockKey, 1, 'NX');"] * 50)
    files = lines_total = redis_files = 0
    big = set(rng.sample(range(args.files), 16))
    for idx in range(args.files):
        lang = rng.choices(LANGS, WEIGHTS)[0]
        service, pkg = f"svc{idx % 40:02d}", f"{rng.choice(NOUNS)}{idx % 11}"
        d = os.path.join(args.out, service, "src", pkg)
        os.makedirs(d, exist_ok=True)
        lines = header(lang, rng, idx)
        # Small files are typical; 16 large generated-looking files of ~25-40k lines.
        target = rng.randint(25_000, 40_000) if idx in big else int(rng.lognormvariate(4.7, 0.6))
        i = 0
        while len(lines) < target:
            lines += function(lang, rng, i)
            i += 1
        if rng.random() < 0.01:
            redis_files += 1
            snippet = rng.choice(REDIS[lang]).replace("{i}", str(i)).replace("{{", "{").replace("}}", "}")
            lines += snippet.rstrip("\n").split("\n")
        lines += footer(lang)
        write_file(os.path.join(d, f"{rng.choice(VERBS)}_{rng.choice(NOUNS)}_{idx}.{lang}"), lines)
        files += 1
        lines_total += len(lines)
    print(f"corpus: {files} files, {lines_total} lines, {redis_files} with Redis lock code -> {args.out}")


if __name__ == "__main__":
    main()
