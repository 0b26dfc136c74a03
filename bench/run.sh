#!/usr/bin/env bash
# The benchmark: locklint against `rg -i -c` with the same keyword list
# (bench/keywords.txt = locklint's prefilter::KEYWORDS) over the same tree.
#
#   bash bench/run.sh            # build, generate bench/corpus/ once, measure, write bench/results.md
#   BENCH_FILES=2000 bash bench/run.sh   # a smaller corpus for a quick look
#   BENCH_RUNS=5 ...             # hyperfine runs per command (default 10)
#   BENCH_REAL=/work/eco/corpus bash bench/run.sh   # also a real-code corpus (a folder
#                                # of checked-out repositories, outside this repository),
#                                # BENCH_REAL_RUNS hyperfine runs on it (default 3)
#                                # The real tree of the README's figures since session 26:
#                                # the 40 repositories of bench/real-repos.txt as one folder,
#                                # e.g. while read r; do cp -al /work/eco/corpus/${r/\//__} real/; done <bench/real-repos.txt
#   python3 bench/scaling.py     # the scaling benchmark of input shapes (N and 2N)
#
# Two environment variables of the binary, for measuring only:
#   LOCKLINT_PHASES=1   prints the wall time of each stage of a run on stderr,
#                       the CPU time all threads spent in it, the RSS at its end, the peak RSS so far and the
#                       bytes the allocator holds for the program (glibc);
#                       and per call-name scan round its names (with an
#                       anchor, by filter, or every file read), the rejected
#                       files left, read and found
#   LOCKLINT_NO_LINK=1  skips the project pass (call-name scan and link): what
#                       each file alone gives, to measure what the pass costs
#                       (findings that need the project are then missing)
#
# Needs python3; installs hyperfine and ripgrep from Debian's packages when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C

FILES=${BENCH_FILES:-20480}
RUNS=${BENCH_RUNS:-10}
REAL=${BENCH_REAL:-}
REAL_RUNS=${BENCH_REAL_RUNS:-3}
CORPUS=bench/corpus
OUT=bench/results.md
BIN=target/release/locklint

install_missing() {
  local missing=()
  command -v hyperfine >/dev/null 2>&1 || missing+=(hyperfine)
  command -v rg >/dev/null 2>&1 || missing+=(ripgrep)
  [ -x /usr/bin/time ] || missing+=(time)
  if [ ${#missing[@]} -gt 0 ]; then
    echo "installing ${missing[*]}" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}
install_missing

cargo build --release --quiet

# The corpus is regenerated only when the generator or the file count changed.
stamp="$(sha256sum bench/gen.py | cut -c1-16)-$FILES"
if [ "$(cat "$CORPUS/.stamp" 2>/dev/null)" != "$stamp" ]; then
  python3 bench/gen.py "$CORPUS" --files "$FILES"
  echo "$stamp" > "$CORPUS/.stamp"
fi

# Warm the page cache so both tools read from memory.
rg -c --no-messages zzzz_never "$CORPUS" >/dev/null || true

# Five named files, as a pre-commit hook passes them: two with Redis lock code,
# three ordinary ones, all of ordinary size (< 20 KB). They are linked against
# the whole corpus (--project-root; the warm-up runs fill .locklint_cache/).
mapfile -t redis_files < <(rg -l --sort path -F -e 'lock:' "$CORPUS" -g '*.{rs,py,java,go,ts}' --max-filesize 20K | head -n 2)
mapfile -t ordinary < <(find -H "$CORPUS" -path "$CORPUS/svc0*" -type f \( -name '*.rs' -o -name '*.py' -o -name '*.java' \) -size -20k | sort | head -n 6)
mapfile -t five < <(printf '%s\n' "${redis_files[@]}" "${ordinary[@]}" | awk 'NF && !seen[$0]++' | head -n 5)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# --project-root: the project is the corpus, as for rg (without it the project
# root is this checkout, and the link would also read the fixtures).
# Cold (--no-cache: every file read and parsed, the figure the targets
# are about) and warm (the cache its warm-up runs fill).
lock_cmd="$BIN check --format json --exit-zero --no-cache --project-root $CORPUS $CORPUS"
warm_cmd="$BIN check --format json --exit-zero --project-root $CORPUS $CORPUS"
rg_cmd="rg -i -c -F -f bench/keywords.txt $CORPUS"
hyperfine -N --warmup 2 --runs "$RUNS" --ignore-failure --export-json "$tmp/full.json" \
  -n locklint "$lock_cmd" -n "locklint (warm cache)" "$warm_cmd" -n rg "$rg_cmd"
# The same 5 files each alone (issue 9's "5 named files under 10 ms without
# project linking"): LOCKLINT_NO_LINK=1 skips the call-name scan, the link
# and the read of the rest of the project; --no-cache, so every file is
# read and parsed.
five_alone="env LOCKLINT_NO_LINK=1 $BIN check --format json --exit-zero --no-cache --project-root $CORPUS ${five[*]}"
hyperfine -N --warmup 5 --runs $((RUNS * 5)) --ignore-failure --export-json "$tmp/five.json" \
  -n "locklint (5 files)" "$BIN check --format json --exit-zero --project-root $CORPUS ${five[*]}" \
  -n "locklint (5 files, no project linking)" "$five_alone"

/usr/bin/time -v $lock_cmd >"$tmp/locklint.json" 2>"$tmp/locklint.time" || true
/usr/bin/time -v $warm_cmd >/dev/null 2>"$tmp/warm.time" || true
/usr/bin/time -v $rg_cmd >/dev/null 2>"$tmp/rg.time" || true
/usr/bin/time -v $BIN check --format json --exit-zero --project-root "$CORPUS" "${five[@]}" >/dev/null 2>"$tmp/five.time" || true

# The real-code corpus, side by side with rg in the same hyperfine run.
if [ -n "$REAL" ] && [ -d "$REAL" ]; then
  rg -c --no-messages zzzz_never "$REAL" >/dev/null || true
  # one project (--project-root, as for the generated corpus), cold
  # (--no-cache: every file read and parsed) and warm (the cache the cold
  # measurement's warm-up of the warm command fills, under $REAL)
  real_lock="$BIN check --format json --exit-zero --no-cache --project-root $REAL $REAL"
  real_warm="$BIN check --format json --exit-zero --project-root $REAL $REAL"
  real_rg="rg -i -c -F -f bench/keywords.txt $REAL"
  hyperfine -N --warmup 1 --runs "$REAL_RUNS" --ignore-failure --export-json "$tmp/real.json" \
    -n locklint "$real_lock" -n "locklint (warm cache)" "$real_warm" -n rg "$real_rg"
  /usr/bin/time -v $real_lock >"$tmp/real-locklint.json" 2>"$tmp/real-locklint.time" || true
  /usr/bin/time -v $real_warm >/dev/null 2>"$tmp/real-warm.time" || true
  /usr/bin/time -v $real_rg >/dev/null 2>"$tmp/real-rg.time" || true
elif [ -n "$REAL" ]; then
  echo "BENCH_REAL=$REAL is not a folder: the real-code benchmark is skipped" >&2
else
  echo "BENCH_REAL is not set: the real-code benchmark is skipped (e.g. BENCH_REAL=/work/eco/corpus)" >&2
fi

python3 - "$tmp" "$CORPUS" "$OUT" "$(nproc)" "$REAL" "${five[@]}" <<'PY'
import json, os, sys
tmp, corpus, out, cores, real, five = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6:]
full = {r["command"]: r for r in json.load(open(f"{tmp}/full.json"))["results"]}
fives = {r["command"]: r for r in json.load(open(f"{tmp}/five.json"))["results"]}
fiv, alone = fives["locklint (5 files)"], fives["locklint (5 files, no project linking)"]
report = json.load(open(f"{tmp}/locklint.json"))
def rss(name):
    for line in open(f"{tmp}/{name}.time"):
        if "Maximum resident set size" in line:
            return int(line.split(":")[1]) / 1024
    return float("nan")
exts = (".rs", ".java", ".kt", ".py", ".js", ".ts", ".go", ".rb", ".php", ".cs", ".lua", ".sh")
def measure_tree(top):
    files = size = lines = 0
    for root, dirs, names in os.walk(top):
        dirs[:] = [d for d in dirs if d not in ("node_modules", "target", ".git")]
        for n in names:
            if n.endswith(exts):
                p = os.path.join(root, n)
                try:
                    with open(p, "rb") as f:
                        data = f.read()
                except OSError:
                    continue
                files += 1
                size += len(data)
                lines += data.count(b"\n")
    return files, size, lines
files, size, lines = measure_tree(corpus)
mb = size / 1e6
ll, lw, rg = full["locklint"], full["locklint (warm cache)"], full["rg"]
def cpu(r):
    return r["user"] + r["system"]
rows = [
    ("locklint check --no-cache", ll["mean"], ll["stddev"], rss("locklint"), cpu(ll)),
    ("locklint check, warm cache", lw["mean"], lw["stddev"], rss("warm"), cpu(lw)),
    ("rg -i -c (same keywords)", rg["mean"], rg["stddev"], rss("rg"), cpu(rg)),
]
text = [
    f"Corpus: {files} files, {lines} lines, {mb:.1f} MB (bench/gen.py); machine: {cores} cores; "
    f"locklint scanned {report['summary']['files_scanned']} files, {len(report['findings'])} findings.",
    "",
    "| command | wall time (mean ± σ) | CPU user + sys (mean) | files/s | MB/s | peak RSS |",
    "|---|---|---|---|---|---|",
]
for name, mean, sd, r, c in rows:
    text.append(f"| {name} | {mean*1000:.0f} ms ± {sd*1000:.0f} | {c*1000:.0f} ms | {files/mean:,.0f} | {mb/mean:,.0f} | {r:.0f} MB |")
text += [
    "",
    f"Ratio locklint / rg: **{ll['mean']/rg['mean']:.2f}×** in wall time cold (target ≤ 1.2×), "
    f"{cpu(ll)/cpu(rg):.2f}× in CPU time (on a machine loaded by other jobs, wall time is mostly their load); "
    f"warm cache {lw['mean']/rg['mean']:.2f}×.",
    "",
    f"Pre-commit style run on 5 named files ({', '.join(os.path.basename(f) for f in five)}): "
    f"**{fiv['mean']*1000:.1f} ms** ± {fiv['stddev']*1000:.1f} (min {fiv['min']*1000:.1f} ms), peak RSS {rss('five'):.0f} MB, linked against the whole corpus (warm cache); "
    f"each file alone (`LOCKLINT_NO_LINK=1`, --no-cache): **{alone['mean']*1000:.1f} ms** ± {alone['stddev']*1000:.1f} "
    f"(min {alone['min']*1000:.1f} ms; target < 10 ms).",
]
if os.path.exists(f"{tmp}/real.json"):
    res = {r["command"]: r for r in json.load(open(f"{tmp}/real.json"))["results"]}
    rfiles, rsize, rlines = measure_tree(real)
    rmb = rsize / 1e6
    rep = json.load(open(f"{tmp}/real-locklint.json"))
    rl, rw, rr = res["locklint"], res["locklint (warm cache)"], res["rg"]
    text += [
        "",
        f"Real code: {real} ({len(os.listdir(real))} entries): {rfiles} source files, {rlines} lines, {rmb:.1f} MB "
        f"(counted by extension, outside .git/node_modules/target); locklint scanned {rep['summary']['files_scanned']} files, "
        f"{len(rep['findings'])} findings.",
        "",
        "| command | wall time (mean ± σ) | CPU user + sys (mean) | MB/s | peak RSS |",
        "|---|---|---|---|---|",
        f"| locklint check --no-cache | {rl['mean']*1000:.0f} ms ± {rl['stddev']*1000:.0f} | {cpu(rl)*1000:.0f} ms | {rmb/rl['mean']:,.0f} | {rss('real-locklint'):.0f} MB |",
        f"| locklint check, warm cache | {rw['mean']*1000:.0f} ms ± {rw['stddev']*1000:.0f} | {cpu(rw)*1000:.0f} ms | {rmb/rw['mean']:,.0f} | {rss('real-warm'):.0f} MB |",
        f"| rg -i -c (same keywords) | {rr['mean']*1000:.0f} ms ± {rr['stddev']*1000:.0f} | {cpu(rr)*1000:.0f} ms | {rmb/rr['mean']:,.0f} | {rss('real-rg'):.0f} MB |",
        "",
        f"Ratio locklint / rg on real code: **{rl['mean']/rr['mean']:.2f}×** in wall time cold (target ≤ 1.3×), {cpu(rl)/cpu(rr):.2f}× in CPU time; "
        f"warm cache {rw['mean']/rr['mean']:.2f}× (a warm run costs {rw['mean']/rl['mean']:.0%} of a cold one).",
    ]
# the table of this run replaces the one above the first "## " heading;
# the dated sections below it (the history of measurements) stay
history = ""
if os.path.exists(out):
    old = open(out).read()
    at = old.find("\n## ")
    history = old[at:] if at >= 0 else ""
open(out, "w").write("\n".join(text) + "\n" + history)
print("\n".join(text))
PY
