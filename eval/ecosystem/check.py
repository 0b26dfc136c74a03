#!/usr/bin/env python3
"""The body of check.sh (see there for the options); standard library only."""
import argparse
import collections
import concurrent.futures
import json
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def read_tsv(path):
    rows = []
    if not os.path.exists(path):
        return rows
    with open(path, encoding="utf-8") as f:
        header = None
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            cols = line.split("\t")
            if header is None:
                header = cols
                continue
            rows.append(dict(zip(header, cols + [""] * (len(header) - len(cols)))))
    return rows


def clean(text, limit=None):
    text = " ".join(str(text).split())
    return text[:limit] if limit else text


def run_repo(binary, repo_dir):
    # --no-cache: a build from uncommitted changes has the version (and so the
    # cache folder) of its commit, and would read facts cached by another build
    cmd = [binary, "check", "--format", "json", "--no-config", "--no-cache", "--exit-zero", "."]
    proc = subprocess.run(cmd, cwd=repo_dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if proc.returncode not in (0, 1):
        return None, proc.stderr.decode("utf-8", "replace").strip()[:300]
    try:
        return json.loads(proc.stdout), None
    except ValueError as err:
        return None, f"unreadable JSON: {err}"


def precision(tp, fp):
    return f"{tp / (tp + fp):.3f}" if tp + fp else "n/a"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--corpus", default=os.environ.get("CORPUS_DIR", "/work/eco/corpus"))
    ap.add_argument("--out", default=os.environ.get("ECO_OUT", "/work/eco/findings.tsv"))
    ap.add_argument("--list", type=int, default=None)
    ap.add_argument("--repo", action="append", default=[])
    ap.add_argument("--to-judge", default=None)
    ap.add_argument("--judged", default=os.path.join(HERE, "judged.tsv"))
    ap.add_argument("--jobs", type=int, default=int(os.environ.get("ECO_JOBS", "3")))
    opts = ap.parse_args()
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)

    repos = read_tsv(os.path.join(HERE, "repos.tsv"))
    if opts.repo:
        wanted = set(opts.repo)
        repos = [r for r in repos if r["repo"] in wanted]
    if not os.path.isdir(opts.corpus):
        print(f"no corpus at {opts.corpus} (see eval/ecosystem/README.md)", file=sys.stderr)
        return 2

    start = time.time()
    findings = []  # (repo, path, line, column, code, message, language)
    scanned, absent, failed = [], [], []
    files = 0
    present = []
    for r in repos:
        repo_dir = os.path.join(opts.corpus, r["repo"].replace("/", "__"))
        if os.path.isdir(repo_dir):
            present.append((r, repo_dir))
        else:
            absent.append(r["repo"])
    # A few repositories at a time: much of a run is reading files.
    with concurrent.futures.ThreadPoolExecutor(max_workers=opts.jobs) as pool:
        reports = list(pool.map(lambda p: run_repo(opts.bin, p[1]), present))
    for (r, _), (report, err) in zip(present, reports):
        if report is None:
            failed.append((r["repo"], err))
            continue
        scanned.append(r["repo"])
        files += report.get("summary", {}).get("files_scanned", 0)
        for f in report.get("findings", []):
            path = f["path"][2:] if f["path"].startswith("./") else f["path"]
            findings.append((r["repo"], path, int(f["line"]), int(f["column"]), f["code"],
                             clean(f["message"], 100), f.get("language", "?")))
    elapsed = time.time() - start
    findings.sort(key=lambda x: (x[0], x[1], x[2], x[3], x[4]))

    os.makedirs(os.path.dirname(os.path.abspath(opts.out)), exist_ok=True)
    with open(opts.out, "w", encoding="utf-8") as f:
        f.write("repo\tpath\tline\tcolumn\tcode\tmessage\tlanguage\n")
        for repo, path, line, col, code, msg, lang in findings:
            f.write(f"{repo}\t{path}\t{line}\t{col}\t{code}\t{msg}\t{lang}\n")

    judged = {}
    for j in read_tsv(opts.judged):
        try:
            key = (j["repo"], j["path"], int(j["line"]), j["code"])
        except (KeyError, ValueError):
            continue
        judged[key] = (j.get("verdict", "").strip().upper(), j.get("reason", ""))

    kind_of_repo = {r["repo"]: r.get("kind", "?") for r in repos}
    now = set()
    counts = collections.Counter()
    by_lang = collections.defaultdict(collections.Counter)
    by_kind = collections.defaultdict(collections.Counter)
    appeared = []
    for repo, path, line, col, code, msg, lang in findings:
        key = (repo, path, line, code)
        if key in now:
            continue  # two findings of one rule on one line are one judged row
        now.add(key)
        verdict = judged.get(key, ("UNJUDGED", ""))[0]
        if verdict not in ("TP", "FP", "UNSURE"):
            verdict = "UNJUDGED"
        counts[verdict] += 1
        by_lang[lang][verdict] += 1
        by_kind[kind_of_repo.get(repo, "?")][verdict] += 1
        if verdict == "UNJUDGED":
            appeared.append((repo, path, line, col, code, msg))
    scanned_set = set(scanned)
    vanished = [(k, v) for k, v in sorted(judged.items())
                if k not in now and k[0] in scanned_set]
    unscanned_judged = sum(1 for k in judged if k[0] not in scanned_set)

    rules = collections.Counter(x[4] for x in findings)
    langs = collections.Counter(x[6] for x in findings)
    print(f"locklint: {opts.bin}")
    print(f"corpus: {opts.corpus}: {len(scanned)} repos scanned, {files} files, "
          f"{len(findings)} findings ({len(now)} distinct repo+path+line+code), {elapsed:.1f} s")
    if absent:
        print(f"not in the corpus ({len(absent)}): {' '.join(absent)}")
    for repo, err in failed:
        print(f"locklint failed on {repo}: {err}")
    print("per rule: " + ", ".join(f"{c} {n}" for c, n in sorted(rules.items())))
    print("per language: " + ", ".join(f"{c} {n}" for c, n in sorted(langs.items())))
    print()
    tp, fp = counts["TP"], counts["FP"]
    print(f"precision {precision(tp, fp)}  (TP {tp}, FP {fp}, UNSURE {counts['UNSURE']}, "
          f"unjudged {counts['UNJUDGED']}; judged rows {len(judged)}, vanished {len(vanished)}"
          + (f", in repos not scanned {unscanned_judged}" if unscanned_judged else "") + ")")
    print("per language (of the finding):")
    for lang in sorted(by_lang):
        c = by_lang[lang]
        print(f"  {lang:<11} precision {precision(c['TP'], c['FP']):>5}  TP {c['TP']:>3}  "
              f"FP {c['FP']:>3}  UNSURE {c['UNSURE']:>3}  unjudged {c['UNJUDGED']:>3}")
    print("per kind of repository:")
    for kind in sorted(by_kind):
        c = by_kind[kind]
        print(f"  {kind:<11} precision {precision(c['TP'], c['FP']):>5}  TP {c['TP']:>3}  "
              f"FP {c['FP']:>3}  UNSURE {c['UNSURE']:>3}  unjudged {c['UNJUDGED']:>3}")

    if opts.to_judge:
        # The unjudged findings in judged.tsv's column order (verdict and reason
        # left empty), then context for the judge.
        with open(opts.to_judge, "w", encoding="utf-8") as f:
            f.write("repo\tpath\tline\tcode\tverdict\treason\tcolumn\tkind\tmessage\n")
            for repo, path, line, col, code, msg in appeared:
                f.write(f"{repo}\t{path}\t{line}\t{code}\t\t\t{col}\t"
                        f"{kind_of_repo.get(repo, '?')}\t{msg}\n")

    limit = opts.list if opts.list is not None else len(appeared) + len(vanished)
    print()
    print(f"APPEARED ({len(appeared)}): produced now, not in judged.tsv")
    for row in appeared[:limit]:
        repo, path, line, col, code, msg = row
        print(f"  + {repo}\t{path}:{line}:{col}\t{code}\t{msg}")
    if len(appeared) > limit:
        print(f"  … {len(appeared) - limit} more in {opts.out}")
    print(f"VANISHED ({len(vanished)}): judged, no longer produced")
    for (repo, path, line, code), (verdict, reason) in vanished[:limit]:
        print(f"  - {repo}\t{path}:{line}\t{code}\t{verdict}\t{clean(reason, 100)}")
    if len(vanished) > limit:
        print(f"  … {len(vanished) - limit} more")
    return 0


if __name__ == "__main__":
    sys.exit(main())
