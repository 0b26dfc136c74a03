#!/usr/bin/env python3
"""Memory per source byte: each large file of a tree checked alone.

Issue 9's target is at most 10 bytes of memory per source byte on any
single file. This finds every file locklint reads (by the extensions of
`Language::from_path`) of at least --min-bytes under ROOT, runs
`locklint check` on it alone under heaptrack (`--no-config --no-cache`,
JSON output), and records the peak heap heaptrack reports against the
file's size, less heaptrack's own (its preload library loads libstdc++,
whose exception pool is 72.7 kB even for `true`: measured once per run on
`true` and subtracted from every peak, the tool's cost and not locklint's).
It prints the worst files, how many are over the target,
the sum and median of the ratios; --compare names an earlier --out file
and lists the files that got worse or better by more than --tolerance.

A per-file sweep finds what the named-file benchmarks miss: in session
40 two SVG-sprite files went from 5.4 to 7.5 B/B after a change that made
every other figure better.

With --shapes it measures instead the single-file shapes of the scaling
benchmark (`bench/scaling.py`), each at its N and 2N, beside the run's
fixed cost (the peak on a one-line file: tables, the prefilter's automata,
a worker's read buffer). A small file's total is mostly that fixed cost,
so each row gives the ratio above it too, as scaling.py's RSS column does.

Needs heaptrack and heaptrack_print (`apt-get install heaptrack`).

    python3 bench/memory.py ROOT [--bin target/release/locklint]
                            [--min-bytes 256000] [--jobs 2] [--top 15]
                            [--out FILE.tsv] [--compare EARLIER.tsv]
                            [--tolerance 0.03]
    python3 bench/memory.py --shapes [--bin target/release/locklint]
                            [--only shape,...] [--scale 1.0]
"""

import argparse
import concurrent.futures
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

# The extensions locklint reads (`Language::from_path`), lower-cased.
EXTENSIONS = {
    "rs", "java", "kt", "kts", "py", "js", "mjs", "cjs", "jsx", "ts", "tsx",
    "mts", "cts", "go", "rb", "php", "cs", "lua", "redis", "sh", "bash",
}
# Folders a folder walk of real code never holds.
SKIP_DIRS = {".git", "node_modules", "target", ".locklint_cache"}
TARGET = 10.0
UNITS = {"": 1, "B": 1, "K": 1e3, "M": 1e6, "G": 1e9}
PEAK = re.compile(r"peak heap memory consumption:\s*([\d.]+)\s*([KMG]?)B?")


def files_of(root, min_bytes):
    """Every file under `root` locklint reads of at least `min_bytes`, sorted."""
    found = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
        for name in names:
            ext = name.rsplit(".", 1)[-1].lower() if "." in name else ""
            if ext not in EXTENSIONS:
                continue
            path = os.path.join(folder, name)
            try:
                if os.path.isfile(path) and not os.path.islink(path) and os.path.getsize(path) >= min_bytes:
                    found.append(path)
            except OSError:
                continue
    return sorted(found)


def heap_peak(cmd, scratch, tag):
    """heaptrack's peak heap of running `cmd`, in bytes (None if unread)."""
    out = os.path.join(scratch, f"ht.{os.getpid()}.{tag}")
    subprocess.run(["heaptrack", "-o", out, *cmd], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=False)
    data = [f for f in os.listdir(scratch) if f.startswith(os.path.basename(out))]
    try:
        if not data:
            return None
        report = subprocess.run(["heaptrack_print", "-f", os.path.join(scratch, data[0]),
                                 "--print-peaks", "0", "--print-allocators", "0",
                                 "--print-temporary", "0", "--print-leaks", "0"],
                                capture_output=True, text=True, check=False).stdout
        m = PEAK.search(report)
        return float(m.group(1)) * UNITS[m.group(2)] if m else None
    finally:
        for f in data:
            os.remove(os.path.join(scratch, f))


def tool_peak(scratch):
    """heaptrack's own peak heap: what it reports for `true`, in bytes."""
    return heap_peak([shutil.which("true") or "/bin/true"], scratch, "tool") or 0.0


def peak_of(binary, path, scratch, tool=0.0):
    """locklint's peak heap on `locklint check PATH`, heaptrack's own
    (`tool`) taken off, in bytes (None if unread)."""
    peak = heap_peak([binary, "check", "--no-config", "--no-cache", "--exit-zero",
                      "--format", "json", path], scratch, str(abs(hash(path))))
    return None if peak is None else max(peak - tool, 0.0)


def read_tsv(path):
    rows = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            peak, size, ratio, name = line.rstrip("\n").split("\t", 3)
            rows[name] = float(ratio)
    return rows


def shapes(binary, only, scale):
    """Peak heap of each single-file scaling shape at N and 2N."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import scaling
    with tempfile.TemporaryDirectory() as scratch:
        tiny = os.path.join(scratch, "tiny.js")
        with open(tiny, "w") as f:
            f.write("async function f(c, t) { await c.set('lock:a', t, 'NX', 'PX', 30000) }\n")
        tool = tool_peak(scratch)
        print(f"heaptrack's own peak (on `true`, taken off every peak): {tool / 1e3:.1f} kB")
        fixed = peak_of(binary, tiny, scratch, tool) or 0.0
        print(f"fixed cost (a one-line file): {fixed / 1e6:.2f} MB")
        print("| shape | size | peak heap | bytes per source byte | above the fixed cost |")
        print("|---|---|---|---|---|")
        worst = 0.0
        for name, (gen, n) in scaling.SHAPES.items():
            if only and not any(o in name for o in only):
                continue
            for k in (1, 2):
                files = gen(max(1, int(n * scale)) * k)
                if len(files) != 1:
                    break
                folder = os.path.join(scratch, "shape")
                shutil.rmtree(folder, ignore_errors=True)
                os.makedirs(folder)
                scaling.write(folder, files)
                path = os.path.join(folder, next(iter(files)))
                size = os.path.getsize(path)
                peak = peak_of(binary, path, scratch, tool)
                if peak is None:
                    print(f"memory.py: no heaptrack peak for {name}", file=sys.stderr)
                    continue
                above = (peak - fixed) / size
                worst = max(worst, above)
                print(f"| {name}{' (2N)' if k == 2 else ''} | {size / 1e3:.0f} kB | "
                      f"{peak / 1e6:.2f} MB | {peak / size:.2f} | {above:.2f} |")
        print(f"largest above the fixed cost: {worst:.2f} B/B (target {TARGET:g})")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", nargs="?")
    ap.add_argument("--shapes", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--bin", default="target/release/locklint")
    ap.add_argument("--min-bytes", type=int, default=256_000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--out")
    ap.add_argument("--compare")
    ap.add_argument("--tolerance", type=float, default=0.03)
    args = ap.parse_args()
    for prog in ("heaptrack", "heaptrack_print"):
        if shutil.which(prog) is None:
            sys.exit(f"memory.py: {prog} is not installed (apt-get install heaptrack)")
    binary = os.path.abspath(args.bin)
    if args.shapes:
        shapes(binary, [o.strip() for o in args.only.split(",") if o.strip()], args.scale)
        return
    if args.root is None:
        sys.exit("memory.py: name a ROOT folder, or --shapes")
    root = os.path.abspath(args.root)
    files = files_of(root, args.min_bytes)
    if not files:
        sys.exit(f"memory.py: no file of {args.min_bytes} bytes or more under {root}")
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        tool = tool_peak(scratch)
        print(f"heaptrack's own peak (on `true`, taken off every peak): {tool / 1e3:.1f} kB")
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            peaks = pool.map(lambda p: peak_of(binary, p, scratch, tool), files)
            for path, peak in zip(files, peaks):
                size = os.path.getsize(path)
                name = os.path.relpath(path, root)
                if peak is None:
                    print(f"memory.py: no heaptrack peak for {name}", file=sys.stderr)
                    continue
                rows.append((peak, size, peak / size, name))
    rows.sort(key=lambda r: (-r[2], r[3]))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            for peak, size, ratio, name in rows:
                f.write(f"{peak:.0f}\t{size}\t{ratio:.2f}\t{name}\n")
    print(f"{len(rows)} files of {args.min_bytes} bytes or more under {root}, each checked alone")
    print("| peak heap | size | bytes per source byte | file |")
    print("|---|---|---|---|")
    for peak, size, ratio, name in rows[: args.top]:
        print(f"| {peak / 1e6:.2f} MB | {size / 1e3:.0f} kB | {ratio:.2f} | {name} |")
    over = sum(1 for r in rows if r[2] > TARGET)
    ratios = [r[2] for r in rows]
    print(f"over {TARGET:g} B/B: {over}; sum of peaks {sum(r[0] for r in rows) / 1e6:.0f} MB; "
          f"median {statistics.median(ratios):.2f}; max {max(ratios):.2f}")
    if args.compare:
        before = read_tsv(args.compare)
        worse = [(r[2] - before[r[3]], r) for r in rows if r[3] in before and r[2] - before[r[3]] > args.tolerance]
        better = [r for r in rows if r[3] in before and before[r[3]] - r[2] > args.tolerance]
        print(f"against {args.compare}: {len(better)} better, {len(worse)} worse by more than {args.tolerance}")
        for delta, (peak, size, ratio, name) in sorted(worse, reverse=True):
            print(f"  worse {before[name]:.2f} -> {ratio:.2f} (+{delta:.2f}) {name}")


if __name__ == "__main__":
    main()
