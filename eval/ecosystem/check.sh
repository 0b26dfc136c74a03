#!/usr/bin/env bash
# Ecosystem check: run a locklint build over the pinned corpus and compare the
# findings with the judged list.
#
#   eval/ecosystem/check.sh [--bin PATH] [--corpus DIR] [--out FILE] [--list N] [--repo OWNER/NAME]...
#
#   --bin     locklint binary (env LOCKLINT; default target/release/locklint of
#             this checkout, built with `cargo build --release` when missing)
#   --corpus  corpus directory made by export.py (env CORPUS_DIR; default /work/eco/corpus)
#   --out     where to write every finding as TSV (env ECO_OUT; default
#             /work/eco/findings.tsv): repo, path, line, column, code, message[:100]
#   --list    print at most N rows of APPEARED and of VANISHED (default: all)
#   --repo    only this repository (repeatable); VANISHED then covers only these
#   --jobs    repositories checked at once (env ECO_JOBS; default 3)
#   --judged  the verdicts to compare with (default eval/ecosystem/judged.tsv)
#   --to-judge FILE  also write the unjudged findings to FILE in judged.tsv's
#             columns (verdict and reason empty), then column, kind, message
#
# Compares with eval/ecosystem/judged.tsv (repo, path, line, code, verdict, reason;
# matched on repo+path+line+code) and prints precision = TP/(TP+FP) over the
# judged findings still produced, the counts, the findings that APPEARED (not
# judged) and VANISHED (judged, no longer produced), and per-language figures.
# Exit 0 unless the binary or the corpus cannot be used.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="${LOCKLINT:-}"
args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    --bin=*) bin="${1#*=}"; shift ;;
    *) args+=("$1"); shift ;;
  esac
done
if [[ -z "$bin" ]]; then
  bin="$root/target/release/locklint"
  if [[ ! -x "$bin" ]]; then
    echo "building $bin ..." >&2
    (cd "$root" && cargo build --release --quiet) >&2
  fi
fi
[[ -x "$bin" ]] || { echo "no locklint binary at $bin" >&2; exit 2; }
exec python3 "$here/check.py" --bin "$bin" "${args[@]+"${args[@]}"}"
