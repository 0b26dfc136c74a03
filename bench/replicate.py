#!/usr/bin/env python3
"""Looks for super-linear stages by replicating each fixture in one file.

Usage: python3 bench/replicate.py [--bin BIN] [--bytes N] [--only TEXT]

For every file under fixtures/ (or those whose path contains TEXT), writes
the fixture repeated until it is about N bytes (default 200,000), then
twice that, into a scratch folder, and checks each alone (`--threads 1
--no-cache --include-minified`, JSON). Prints the CPU time (user + system,
best of two runs) at both sizes and their ratio; a ratio above 2.5 where
the larger run takes 0.06 s or more is marked `<==`, and the worst fifteen
are listed at the end. A replicated fixture is many functions of one shape
in one file, often with one name and one key: the shapes a generated
file or a file of many similar handlers takes. Confirm a mark at a larger
size (CPU time at 10 ms resolution is noisy) before reading a profile.
"""
import argparse
import glob
import os
import shutil
import subprocess
import tempfile


def cpu_time(binary, path):
    best, peak = None, 0
    for _ in range(2):
        p = subprocess.run(
            ["/usr/bin/time", "-f", "%U %S %M", binary, "check", "--no-cache",
             "--include-minified", "--format", "json", "--exit-zero",
             "--threads", "1", path],
            capture_output=True, text=True)
        user, system, rss = p.stderr.strip().splitlines()[-1].split()
        t = float(user) + float(system)
        best = t if best is None else min(best, t)
        peak = max(peak, int(rss))
    return best, peak


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/release/locklint")
    ap.add_argument("--bytes", type=int, default=200_000)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    binary = os.path.abspath(args.bin)
    files = [f for f in sorted(glob.glob("fixtures/*/*"))
             if os.path.isfile(f) and args.only in f]
    scratch = tempfile.mkdtemp(prefix="locklint-replicate-")
    rows = []
    try:
        for f in files:
            with open(f, errors="replace") as fh:
                text = fh.read()
            if not text.strip():
                continue
            k = max(1, args.bytes // len(text))
            times = []
            for mult in (1, 2):
                p = os.path.join(scratch, os.path.basename(f))
                with open(p, "w") as out:
                    out.write(text * (k * mult))
                times.append(cpu_time(binary, p))
                os.remove(p)
            (t1, _), (t2, rss2) = times
            ratio = t2 / t1 if t1 > 0 else float("nan")
            mark = "  <==" if t2 >= 0.06 and ratio > 2.5 else ""
            rows.append((ratio if t2 >= 0.06 else 0.0, f, t1, t2, rss2))
            print(f"{f}: x{k} {t1:.2f} -> {t2:.2f} s ({ratio:.2f}), "
                  f"{rss2 // 1024} MB{mark}", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print("\nworst:")
    for ratio, f, t1, t2, rss2 in sorted(rows, reverse=True)[:15]:
        print(f"{ratio:.2f}  {f}  {t1:.2f} -> {t2:.2f} s, {rss2 // 1024} MB")


if __name__ == "__main__":
    main()
