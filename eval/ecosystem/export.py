#!/usr/bin/env python3
"""Export the pinned commits of eval/ecosystem/repos.tsv into the corpus.

The mirrors come from the `fetch` tool: /work/.mirror/<owner>+<name>/repo
(bare git directories). Each pinned commit is written to
<corpus>/<owner>__<name>/. Snapshots lack blobs of 4 MiB and more, so a plain
`git archive` can fail; this script writes every blob the mirror has and
lists the ones it lacks. Symlinks and submodules are skipped.

  export.py [CORPUS_DIR]            export every pinned repo (skips existing dirs)
  export.py --pin OWNER/NAME...     print "repo<TAB>HEAD commit" for each mirror

Env: MIRROR_DIR (default /work/.mirror), CORPUS_DIR (default /work/eco/corpus),
     FORCE=1 re-exports directories that already exist.
"""
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MIRROR = os.environ.get("MIRROR_DIR", "/work/.mirror")


def gitdir(repo):
    return os.path.join(MIRROR, repo.replace("/", "+"), "repo")


def git(repo, *args, **kw):
    return subprocess.run(["git", "--git-dir=" + gitdir(repo), *args], check=True,
                          stdout=subprocess.PIPE, **kw).stdout


def export(repo, commit, dest):
    tree = git(repo, "ls-tree", "-r", "-z", "--full-tree", commit).split(b"\0")
    blobs = []
    for entry in tree:
        if not entry:
            continue
        meta, path = entry.split(b"\t", 1)
        mode, kind, oid = meta.split(b" ")
        if kind != b"blob" or mode == b"120000":
            continue
        blobs.append((oid, path))
    tmp = dest + ".partial"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    proc = subprocess.Popen(["git", "--git-dir=" + gitdir(repo), "cat-file", "--batch"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    missing = 0
    for oid, path in blobs:
        proc.stdin.write(oid + b"\n")
        proc.stdin.flush()
        header = proc.stdout.readline()
        if header.endswith(b" missing\n"):
            missing += 1
            continue
        size = int(header.split()[2])
        data = proc.stdout.read(size)
        proc.stdout.read(1)
        out = os.path.join(tmp.encode(), path)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "wb") as f:
            f.write(data)
    proc.stdin.close()
    proc.wait()
    shutil.rmtree(dest, ignore_errors=True)
    os.rename(tmp, dest)
    return len(blobs) - missing, missing


def main():
    args = sys.argv[1:]
    if args and args[0] == "--pin":
        for repo in args[1:]:
            head = git(repo, "rev-parse", "HEAD").decode().strip()
            print(f"{repo}\t{head}")
        return 0
    corpus = args[0] if args else os.environ.get("CORPUS_DIR", "/work/eco/corpus")
    os.makedirs(corpus, exist_ok=True)
    absent = []
    with open(os.path.join(HERE, "repos.tsv")) as f:
        for line in f:
            cols = line.rstrip("\n").split("\t")
            if not cols[0] or cols[0] == "repo" or cols[0].startswith("#"):
                continue
            repo, commit = cols[0], cols[1]
            dest = os.path.join(corpus, repo.replace("/", "__"))
            if os.path.isdir(dest) and not os.environ.get("FORCE"):
                continue
            ok = subprocess.run(["git", "--git-dir=" + gitdir(repo), "cat-file", "-e",
                                 commit + "^{commit}"], stderr=subprocess.DEVNULL).returncode == 0
            if not ok:
                absent.append(repo)
                print(f"missing: {repo}@{commit} (bring it with the fetch tool: github:{repo})",
                      file=sys.stderr)
                continue
            written, lacking = export(repo, commit, dest)
            note = f", {lacking} blobs absent from the snapshot" if lacking else ""
            print(f"exported {repo}@{commit[:12]}: {written} files{note}", file=sys.stderr)
    if absent:
        print(f"{len(absent)} repositories missing", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
