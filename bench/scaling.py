#!/usr/bin/env python3
"""Scaling benchmark: locklint on generated input shapes at size N and 2N.

Each shape is written twice (N and 2N) into a scratch folder (never into
the repository), checked with `locklint check --format json`, and timed
with /usr/bin/time (CPU time user + system, peak RSS). A shape whose time
more than doubles from N to 2N is super-linear: the target is
time(2N) <= 2.3 x time(N). Times are the minimum CPU time of --runs runs
(on a shared machine wall time mostly measures the others' load);
--callgrind counts instructions instead (valgrind; slower, but independent
of the load), and takes peak RSS from one extra plain run. --format times
another output format's renderer as well (the human one rendered each
excerpt by counting lines from the file's start until session 34:
quadratic in a file's findings, unseen with json).

    python3 bench/scaling.py [--bin target/release/locklint] [--runs 3]
                             [--scale 1.0] [--only shape,...] [--callgrind]
                             [--format json|human|sarif|rdjson|...]
                             [--out bench/scaling.md]
"""

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile


def js_call(i, key_same=False):
    key = "'lock:order'" if key_same else f"'lock:o{i}'"
    if i % 2 == 0:
        return f"await client.set({key},tok,'NX');"
    return f"await client.del({key});"


# Every generator returns {relative path: text}; `n` is the size knob.
def long_line(n):
    """One line of n bytes of minified code around a single lock call."""
    pad = "var ab" + "c" * 8 + "=1;"
    body = pad * (n // len(pad))
    call = "async function f(client,tok){await client.set('lock:o',tok,'NX');}"
    return {"long_line.js": body + call + "\n"}


def calls_on_one_line(n):
    """n set(NX)/del calls on one line (a minified bundle of a Redis app)."""
    calls = "".join(js_call(i) for i in range(n))
    return {"one_line.js": "async function f(client,tok){" + calls + "}\n"}


def suppression_above_long_line(n):
    """A suppression comment above a minified line of n set(NX)/del calls
    (each finding asks where its statement starts)."""
    calls = "".join(js_call(i) for i in range(n))
    return {
        "suppressed.js": "// locklint: allow(LL004)\n\n\nasync function f(client,tok){"
        + calls
        + "}\n"
    }


def fixable_calls_on_one_line(n):
    """n setnx/expire/delete triples on one Python line (every finding's fix
    reads the line of its call)."""
    body = "; ".join(
        f'r.setnx("lock:a{i}", "1"); r.expire("lock:a{i}", 10); r.delete("lock:a{i}")'
        for i in range(n)
    )
    return {"fixable.py": "import redis\nr = redis.Redis()\ndef f():\n    " + body + "\n"}


def lines_of_calls(n):
    """n lines of set(NX)/del calls in one function (many ops in one scope)."""
    calls = "\n".join("  " + js_call(i) for i in range(n))
    return {"lines.js": "async function f(client, tok) {\n" + calls + "\n}\n"}


def same_key_scope(n):
    """n ops on the same key in one function."""
    calls = "\n".join("  " + js_call(i, key_same=True) for i in range(n))
    return {"same_key.js": "async function f(client, tok) {\n" + calls + "\n}\n"}


def many_functions(n):
    """n Python functions, each taking and releasing the same lock key."""
    out = ["import redis", "r = redis.Redis()", ""]
    for i in range(n):
        name = "acquire" if i % 2 == 0 else "release"
        out.append(f"def {name}_{i}(tok):")
        if i % 2 == 0:
            out.append("    return r.set('jobs:refresh', tok, nx=True)")
        else:
            out.append("    r.delete('jobs:refresh')")
        out.append("")
    return {"many_fns.py": "\n".join(out) + "\n"}


def many_files(n):
    """n small Java files, one in eight with a lock."""
    files = {}
    for i in range(n):
        if i % 8 == 0:
            body = (
                "import redis.clients.jedis.Jedis;\n"
                f"class Lock{i} {{\n"
                "  void run(Jedis jedis) {\n"
                f"    jedis.setnx(\"lock:job{i}\", \"1\");\n"
                "    work();\n"
                f"    jedis.del(\"lock:job{i}\");\n"
                "  }\n}\n"
            )
        else:
            body = f"class Plain{i} {{\n  int add(int a, int b) {{ return a + b; }}\n}}\n"
        files[f"src/d{i // 500}/F{i}.java"] = body
    return files


def same_wrapper_name(n):
    """n small Python files, each defining the same two lock helpers and
    calling them (a name many files define: each call weighs them all)."""
    files = {}
    for i in range(n):
        files[f"m{i // 200}/w{i}.py"] = (
            "import redis\n\n"
            "def acquire_lock(r, key):\n"
            "    return r.set(key, \"1\", nx=True, ex=10)\n\n"
            "def release_lock(r, key):\n"
            "    r.delete(key)\n\n"
            f"def job{i}(r):\n"
            f"    if acquire_lock(r, \"lock:job{i}\"):\n"
            "        work()\n"
            f"        release_lock(r, \"lock:job{i}\")\n"
        )
    return files


def deep_nesting(n):
    """A lock call inside n nested blocks and n nested parentheses."""
    opens = "".join(f"if (a{i}) {{ " for i in range(n))
    closes = "}" * n
    parens = "(" * n + "1" + ")" * n
    return {
        "deep.js": "async function f(client, tok) {\n"
        + opens
        + "await client.set('lock:x', tok, 'NX');"
        + closes
        + "\n}\nconst v = "
        + parens
        + ";\n"
    }


def huge_string(n):
    """A string literal of n bytes full of lock words, beside one call."""
    words = "lock set del expire nx px eval redis "
    lit = (words * (n // len(words) + 1))[:n]
    return {
        "huge_string.py": "import redis\nr = redis.Redis()\n"
        f"DOC = \"{lit}\"\n"
        "def take(tok):\n    r.set('lock:a', tok, nx=True)\n"
    }


def minified_bundle(n):
    """A minified bundle of n bytes: short functions, one in ten using Redis."""
    rnd = random.Random(7)
    parts, size, i = [], 0, 0
    while size < n:
        if i % 10 == 0:
            p = f"function l{i}(c,t){{return c.set('lock:k{i}',t,'NX','PX',3e4)}}function u{i}(c){{c.del('lock:k{i}')}}"
        else:
            a, b = rnd.randint(0, 99), rnd.randint(0, 99)
            p = f"function g{i}(e,n){{var r=e+{a};return n?r*{b}:[r,\"x{i}\"].join(\"\")}}"
        parts.append(p)
        size += len(p)
        i += 1
    return {"bundle.min.js": ";".join(parts) + "\n"}


def ifs_on_one_line(n):
    """n braceless ifs on one minified line (each if's line end is looked up)."""
    body = "".join(f"if(a{i})client.del(lockKey{i});" for i in range(n))
    return {"ifs.min.js": "function f(client){" + body + "}\n"}


def nested_call_args(n):
    """n statements of calls nested five deep around a long argument."""
    arg = " + ".join(f"p{k}" for k in range(30))
    body = "".join(f"x{i}(y(z(w(q(r.del(lock + {i}, {arg}))))));" for i in range(n))
    return {"nested.min.js": "!function(){" + body + "}();\n"}


def rust_calls(n):
    """A Rust file (syn front-end) with n lock functions."""
    out = ["use redis::Commands;", ""]
    for i in range(n):
        out.append(
            f"fn take_{i}(con: &mut redis::Connection) -> redis::RedisResult<()> {{\n"
            f"    let _: bool = con.set_nx(\"lock:r{i}\", 1)?;\n"
            f"    let _: () = con.del(\"lock:r{i}\")?;\n"
            "    Ok(())\n}\n"
        )
    return {"calls.rs": "\n".join(out)}


def rust_chain(n):
    """A Rust fn whose one statement is a builder chain of n calls (an
    axum router), beside a lock function."""
    links = "".join(f'\n        .route("/r{i}", get(h{i}).post(p{i}))' for i in range(n))
    return {
        "chain.rs": "use redis::Commands;\n"
        "fn take(con: &mut redis::Connection) -> redis::RedisResult<()> {\n"
        "    let _: bool = con.set_nx(\"lock:a\", 1)?;\n    Ok(())\n}\n"
        "pub fn routes() -> Router {\n    let mut router = Router::new();\n"
        f"    router = router{links};\n    router\n}}\n"
    }


def rust_let_match(n):
    """A Rust fn binding a lock key from a `match` of n arms."""
    arms = "".join(f'        Kind::K{i} => "lock:k{i}",\n' for i in range(n))
    return {
        "let_match.rs": "use redis::Commands;\n"
        "fn take(con: &mut redis::Connection, k: Kind) -> redis::RedisResult<()> {\n"
        f"    let key = match k {{\n{arms}        _ => \"lock:other\",\n    }};\n"
        "    let _: bool = con.set_nx(key, 1)?;\n    Ok(())\n}\n"
    }


def rust_table(n):
    """A Rust const table of n rows (one item), beside a lock function."""
    rows = "".join(f'    ({i}, {i * 3}, "name{i}"),\n' for i in range(n))
    return {
        "table.rs": "use redis::Commands;\n"
        "fn take(con: &mut redis::Connection) -> redis::RedisResult<()> {\n"
        "    let _: bool = con.set_nx(\"lock:a\", 1)?;\n    Ok(())\n}\n"
        f"pub const TABLE: &[(u32, u32, &str)] = &[\n{rows}];\n"
    }


def shell_lines(n):
    """A shell script with n redis-cli lock lines."""
    out = ["#!/bin/sh"]
    for i in range(n):
        out.append(f"redis-cli SET lock:s{i} 1 NX")
        out.append(f"redis-cli DEL lock:s{i}")
    return {"locks.sh": "\n".join(out) + "\n"}


def lua_script(n):
    """A Lua script with n redis.call lines."""
    out = []
    for i in range(n):
        out.append(f"redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', {i})")
        out.append("if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end")
    return {"script.lua": "\n".join(out) + "\n"}


# name -> (generator, N, unit)
SHAPES = {
    "long line (bytes)": (long_line, 2_000_000),
    "calls on one line": (calls_on_one_line, 25_000),
    "suppression above a long line": (suppression_above_long_line, 10_000),
    "fixable calls on one line": (fixable_calls_on_one_line, 4_000),
    "lines of calls, one scope": (lines_of_calls, 10_000),
    "same key, one scope": (same_key_scope, 10_000),
    "many functions, same key": (many_functions, 5_000),
    "many files": (many_files, 2_000),
    "many files, one wrapper name": (same_wrapper_name, 2_000),
    "deep nesting": (deep_nesting, 2_000),
    "huge string literal (bytes)": (huge_string, 2_000_000),
    "minified bundle (bytes)": (minified_bundle, 1_000_000),
    "braceless ifs on one line": (ifs_on_one_line, 20_000),
    "nested calls, long arguments": (nested_call_args, 10_000),
    "rust functions (syn)": (rust_calls, 2_000),
    "rust builder chain (syn)": (rust_chain, 4_000),
    "rust let of a match (syn)": (rust_let_match, 4_000),
    "rust const table (syn)": (rust_table, 4_000),
    "redis-cli lines": (shell_lines, 10_000),
    "lua script lines": (lua_script, 5_000),
}


def write(root, files):
    total = 0
    for rel, text in files.items():
        p = os.path.join(root, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text)
        total += len(text.encode())
    return total


# The output format of the runs (`--format`): json by default, the one the
# findings are counted from; another format times its renderer too.
FORMAT = ["json"]


def run_once(binary, root, callgrind):
    # --include-minified: the long-line shapes are what a walk would skip
    # as minified; the benchmark measures the front-end on them
    cmd = [binary, "check", "--format", FORMAT[0], "--exit-zero", "--threads", "1",
           "--include-minified", root]
    if callgrind:
        out = os.path.join(root, "..", "cg.out")
        vg = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"] + cmd
        p = subprocess.run(vg, capture_output=True, text=True)
        ir = 0
        with open(out) as f:
            for line in f:
                if line.startswith("summary:") or line.startswith("totals:"):
                    ir = int(line.split()[1])
        os.remove(out)
        return ir, run_once(binary, root, False)[1], p.stdout
    t = ["/usr/bin/time", "-f", "%e %U %S %M"] + cmd
    p = subprocess.run(t, capture_output=True, text=True)
    last = p.stderr.strip().splitlines()[-1].split()
    return float(last[1]) + float(last[2]), int(last[3]) / 1024.0, p.stdout


def measure(binary, shape, n, runs, callgrind, scratch):
    gen, _ = SHAPES[shape]
    root = os.path.join(scratch, f"n{n}")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    size = write(root, gen(n))
    best, rss, findings, biggest = None, 0.0, 0, 0
    for _ in range(1 if callgrind else runs):
        t, r, out = run_once(binary, root, callgrind)
        best = t if best is None else min(best, t)
        rss = max(rss, r)
        try:
            findings = len(json.loads(out)["findings"])
        except (ValueError, KeyError):
            findings = -1
    for dirpath, _, names in os.walk(root):
        for name in names:
            biggest = max(biggest, os.path.getsize(os.path.join(dirpath, name)))
    shutil.rmtree(root, ignore_errors=True)
    return best, rss, findings, size, biggest


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/release/locklint")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--only", default="")
    ap.add_argument("--callgrind", action="store_true")
    ap.add_argument("--format", default="json",
                    help="output format of the runs (findings are counted with json only)")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    # shape names hold commas ("lines of calls, one scope"): a whole
    # name is taken as it is, else the list is split on commas; each
    # entry matches the shapes whose name contains it
    only = [args.only] if args.only in SHAPES else [s.strip() for s in args.only.split(",") if s.strip()]
    FORMAT[0] = args.format
    binary = os.path.abspath(args.bin)
    scratch = tempfile.mkdtemp(prefix="locklint-scaling-")
    unit = "instructions (callgrind)" if args.callgrind else "CPU s, user + system (min of %d runs)" % args.runs
    rows = [
        f"| shape | N | time(N) | time(2N) | ratio | findings N / 2N | peak RSS 2N | (RSS − empty run) / byte of the largest file |",
        "|---|---|---|---|---|---|---|---|",
    ]
    bad = []
    # The resident size of a run on an empty folder, subtracted before the
    # per-byte figure so that it measures what the input costs.
    empty = os.path.join(scratch, "empty")
    os.makedirs(empty)
    # (the smallest of five: the empty run's own RSS moves by a megabyte or
    # two from run to run, which alone moved a 700 kB file's figure by 3;
    # the smallest makes the per-byte figure the larger, never the kinder)
    base_rss = min(run_once(binary, empty, False)[1] for _ in range(5))
    try:
        for shape, (_, base) in SHAPES.items():
            if only and not any(o in shape for o in only):
                continue
            n = max(1, int(base * args.scale))
            t1, _, f1, _, _ = measure(binary, shape, n, args.runs, args.callgrind, scratch)
            t2, r2, f2, size2, big2 = measure(binary, shape, 2 * n, args.runs, args.callgrind, scratch)
            ratio = t2 / t1 if t1 else float("nan")
            # Peak RSS beyond the empty run's, per byte of the largest file.
            per_byte = (
                max(0.0, r2 - base_rss) * 1024 * 1024 / big2
                if big2
                else float("nan")
            )
            fmt = (lambda v: f"{v:,.0f}") if args.callgrind else (lambda v: f"{v:.3f}")
            rows.append(
                f"| {shape} | {n:,} | {fmt(t1)} | {fmt(t2)} | {ratio:.2f} | {f1} / {f2} | "
                f"{r2:.0f} MB | {per_byte:.1f} |"
            )
            print(rows[-1], flush=True)
            if ratio > 2.3:
                bad.append(shape)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    text = [f"Unit: {unit}; one thread (`--threads 1`).", ""] + rows
    if bad:
        text += ["", "Super-linear (ratio > 2.3): " + ", ".join(bad)]
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(text) + "\n")
    print("\n".join(text))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
