#!/usr/bin/env bash
# The benchmark: locklint against `rg -i -c` with the same keyword list
# (bench/keywords.txt = locklint's prefilter::KEYWORDS) over the same tree.
#
#   bash bench/run.sh            # build, generate bench/corpus/ once, measure, write bench/results.md
#   BENCH_FILES=2000 bash bench/run.sh   # a smaller corpus for a quick look
#   BENCH_RUNS=5 ...             # hyperfine runs per command (default 10)
#
# Needs python3; installs hyperfine and ripgrep from Debian's packages when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C

FILES=${BENCH_FILES:-20480}
RUNS=${BENCH_RUNS:-10}
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
mapfile -t ordinary < <(find "$CORPUS" -path "$CORPUS/svc0*" -type f \( -name '*.rs' -o -name '*.py' -o -name '*.java' \) -size -20k | sort | head -n 6)
mapfile -t five < <(printf '%s\n' "${redis_files[@]}" "${ordinary[@]}" | awk 'NF && !seen[$0]++' | head -n 5)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

lock_cmd="$BIN check --format json --exit-zero $CORPUS"
rg_cmd="rg -i -c -F -f bench/keywords.txt $CORPUS"
hyperfine -N --warmup 2 --runs "$RUNS" --ignore-failure --export-json "$tmp/full.json" \
  -n locklint "$lock_cmd" -n rg "$rg_cmd"
hyperfine -N --warmup 5 --runs $((RUNS * 5)) --ignore-failure --export-json "$tmp/five.json" \
  -n "locklint (5 files)" "$BIN check --format json --exit-zero --project-root $CORPUS ${five[*]}"

/usr/bin/time -v $lock_cmd >"$tmp/locklint.json" 2>"$tmp/locklint.time" || true
/usr/bin/time -v $rg_cmd >/dev/null 2>"$tmp/rg.time" || true
/usr/bin/time -v $BIN check --format json --exit-zero --project-root "$CORPUS" "${five[@]}" >/dev/null 2>"$tmp/five.time" || true

python3 - "$tmp" "$CORPUS" "$OUT" "$(nproc)" "${five[@]}" <<'PY'
import json, os, sys
tmp, corpus, out, cores, five = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
full = {r["command"]: r for r in json.load(open(f"{tmp}/full.json"))["results"]}
fiv = json.load(open(f"{tmp}/five.json"))["results"][0]
report = json.load(open(f"{tmp}/locklint.json"))
def rss(name):
    for line in open(f"{tmp}/{name}.time"):
        if "Maximum resident set size" in line:
            return int(line.split(":")[1]) / 1024
    return float("nan")
exts = (".rs", ".java", ".kt", ".py", ".js", ".ts", ".go", ".rb", ".php", ".cs", ".lua", ".sh")
files = size = lines = 0
for root, dirs, names in os.walk(corpus):
    dirs[:] = [d for d in dirs if d not in ("node_modules", "target")]
    for n in names:
        if n.endswith(exts):
            p = os.path.join(root, n)
            files += 1
            size += os.path.getsize(p)
            with open(p, "rb") as f:
                lines += f.read().count(b"\n")
mb = size / 1e6
ll, rg = full["locklint"], full["rg"]
rows = [
    ("locklint check", ll["mean"], ll["stddev"], rss("locklint")),
    ("rg -i -c (same keywords)", rg["mean"], rg["stddev"], rss("rg")),
]
text = [
    f"Corpus: {files} files, {lines} lines, {mb:.1f} MB (bench/gen.py); machine: {cores} cores; "
    f"locklint scanned {report['summary']['files_scanned']} files, {len(report['findings'])} findings.",
    "",
    "| command | wall time (mean ± σ) | files/s | MB/s | peak RSS |",
    "|---|---|---|---|---|",
]
for name, mean, sd, r in rows:
    text.append(f"| {name} | {mean*1000:.0f} ms ± {sd*1000:.0f} | {files/mean:,.0f} | {mb/mean:,.0f} | {r:.0f} MB |")
text += [
    "",
    f"Ratio locklint / rg: **{ll['mean']/rg['mean']:.2f}×** (target ≤ 1.5×).",
    "",
    f"Pre-commit style run on 5 named files ({', '.join(os.path.basename(f) for f in five)}): "
    f"**{fiv['mean']*1000:.1f} ms** ± {fiv['stddev']*1000:.1f} (min {fiv['min']*1000:.1f} ms), peak RSS {rss('five'):.0f} MB (target < 20 ms).",
]
open(out, "w").write("\n".join(text) + "\n")
print("\n".join(text))
PY
