//! Applying fixes: the edits of each finding's [`Fix`], a unified diff of
//! the result, a check that the fixed file still parses, and the atomic
//! rewrite of the file. The fixes themselves come from the rules
//! (`rules/fixes.rs`, which ops) and `advice` (each client's spelling).

use crate::advice::FixDraft;
use crate::engine::{self, Settings};
use crate::facts::{Language, Span};
use crate::finding::{Applicability, Edit, Finding, Fix, LineIndex, Text};
use std::collections::{BTreeMap, HashSet};
use std::path::Path;

/// A draft with its edits sorted and their lines and columns resolved.
pub fn resolve(draft: FixDraft, index: &LineIndex) -> Fix {
    let mut edits: Vec<Edit> = draft
        .edits
        .into_iter()
        .map(|(span, replacement)| {
            let (line, column) = index.place(span.start());
            let (end_line, end_column) = index.place(span.end().max(span.start()));
            Edit {
                span: Span::new(span.start(), span.end().max(span.start())),
                replacement: Text::code(&replacement),
                line,
                column,
                end_line,
                end_column,
            }
        })
        .collect();
    edits.sort_by_key(|e| (e.span.start(), e.span.end()));
    Fix {
        applicability: draft.applicability,
        message: Text::new(&draft.message),
        edits,
    }
}

/// The edit lies in `src` (in order, on character boundaries).
fn edit_fits(src: &str, e: &Edit) -> bool {
    e.span.start() <= e.span.end()
        && e.span.end() <= src.len()
        && src.is_char_boundary(e.span.start())
        && src.is_char_boundary(e.span.end())
}

/// The fix's edits follow one another without overlapping.
fn edits_in_order(fix: &Fix) -> bool {
    fix.edits
        .windows(2)
        .all(|w| w[0].span.end() <= w[1].span.start())
}

/// Applies `fixes` to `src` in order, skipping a fix whose edits overlap
/// one already taken, or fall outside the text. Returns the new text and
/// how many fixes were applied.
pub fn apply(src: &str, fixes: &[&Fix]) -> (String, usize) {
    let mut taken: Vec<&Edit> = Vec::new();
    // the taken edits by (start, end): they never overlap, so the one of
    // greatest start before an edit's end also has the greatest end, and
    // it alone can overlap the edit (a list of them all made a file of
    // 10,000 fixes quadratic)
    let mut spans: BTreeMap<(usize, usize), Vec<&Edit>> = BTreeMap::new();
    let mut applied = 0;
    for fix in fixes {
        // An edit another fix already makes (the release script declared
        // once per file) is shared, not a conflict.
        let shared = |spans: &BTreeMap<(usize, usize), Vec<&Edit>>, e: &Edit| {
            spans
                .get(&(e.span.start(), e.span.end()))
                .is_some_and(|v| v.iter().any(|t| t.replacement == e.replacement))
        };
        let clear = |e: &Edit| {
            spans
                .range(..(e.span.end(), 0))
                .next_back()
                .is_none_or(|(&(_, end), _)| end <= e.span.start())
        };
        let fits = fix
            .edits
            .iter()
            .all(|e| edit_fits(src, e) && (shared(&spans, e) || clear(e)));
        if fits && edits_in_order(fix) && !fix.edits.is_empty() {
            let new: Vec<&Edit> = fix.edits.iter().filter(|e| !shared(&spans, e)).collect();
            for &e in &new {
                spans
                    .entry((e.span.start(), e.span.end()))
                    .or_default()
                    .push(e);
            }
            taken.extend(new);
            applied += 1;
        }
    }
    // (by end too: an insertion where a replaced span starts goes first,
    // whichever fix took it first — by start alone the other order
    // sliced the text backwards and panicked)
    taken.sort_by_key(|e| (e.span.start(), e.span.end()));
    let mut out = String::with_capacity(src.len());
    let mut at = 0;
    for e in taken {
        out.push_str(&src[at..e.span.start()]);
        e.replacement.push_to(&mut out);
        at = e.span.end();
    }
    out.push_str(&src[at..]);
    (out, applied)
}

/// The text a fix produces for the lines it touches (for the human `help:`).
pub fn preview(src: &str, fix: &Fix, path: &str) -> String {
    let (new, _) = apply(src, &[fix]);
    unified_diff(path, src, &new)
}

/// [`preview`] read from the lines around the fix's edits only: the same
/// diff, its line numbers those of the whole file. `line_starts` are the
/// offsets after each `\n` of `src`, 0 first. (A diff of the whole file per
/// finding was quadratic: 5,000 fixable findings in one file, 2.9 s.)
pub fn preview_near(src: &str, line_starts: &[usize], fix: &Fix, path: &str) -> String {
    let (Some(first), Some(last)) = (fix.edits.first(), fix.edits.last()) else {
        return preview(src, fix, path);
    };
    // a fix `apply` would refuse (out of the text, off a character
    // boundary, edits out of order) is left to it
    let fits = fix.edits.iter().all(|e| edit_fits(src, e)) && edits_in_order(fix);
    if !fits || line_starts.first() != Some(&0) {
        return preview(src, fix, path);
    }
    let line_of = |at: usize| line_starts.partition_point(|&s| s <= at) - 1;
    // the hunks' three lines of context, and one more each side
    let from_line = line_of(first.span.start()).saturating_sub(DIFF_CONTEXT + 1);
    let to_line = line_of(last.span.end()) + DIFF_CONTEXT + 2;
    let from = line_starts[from_line];
    let to = line_starts.get(to_line).copied().unwrap_or(src.len());
    let near = Fix {
        applicability: fix.applicability,
        message: "".into(),
        edits: fix
            .edits
            .iter()
            .map(|e| Edit {
                span: Span::new(e.span.start() - from, e.span.end() - from),
                ..e.clone()
            })
            .collect(),
    };
    let window = &src[from..to];
    let (new, _) = apply(window, &[&near]);
    unified_diff_from(path, window, &new, from_line)
}

/// Which fixes a run applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Safe,
    Unsafe,
}

impl Level {
    pub fn allows(self, a: Applicability) -> bool {
        match self {
            Level::Safe => a == Applicability::Safe,
            Level::Unsafe => a >= Applicability::Unsafe,
        }
    }
}

/// The outcome of fixing one file.
#[derive(Clone, Debug, Default)]
pub struct FileFix {
    pub original: String,
    pub fixed: String,
    /// Fixes applied, by rule code.
    pub applied: BTreeMap<&'static str, usize>,
    /// Fixes not applied because the result would not parse (or would
    /// raise a new finding): (line, code).
    pub refused: Vec<(u32, &'static str)>,
}

impl FileFix {
    pub fn changed(&self) -> bool {
        self.original != self.fixed
    }
}

/// Most rounds of fix → re-check on one file (a fix may uncover another).
const MAX_ROUNDS: usize = 8;

/// Fixes one source text: applies the fixes `level` allows, re-checks, and
/// repeats until nothing is left to fix. A round whose result no longer
/// parses (Rust: `syn::parse_file`), or that raises a finding the file did
/// not have, is undone and its fixes are reported as refused.
pub fn fix_source(
    display: &str,
    src: &str,
    language: Language,
    settings: &Settings,
    level: Level,
) -> FileFix {
    let mut out = FileFix {
        original: src.to_string(),
        fixed: src.to_string(),
        ..FileFix::default()
    };
    let mut refused_fp: HashSet<String> = HashSet::new();
    for _ in 0..MAX_ROUNDS {
        let findings = engine::check_source(display, &out.fixed, language, settings);
        let candidates: Vec<&Finding> = findings
            .iter()
            .filter(|f| {
                f.fix
                    .as_ref()
                    .is_some_and(|x| level.allows(x.applicability))
                    && !refused_fp.contains(&*f.fingerprint)
            })
            .collect();
        if candidates.is_empty() {
            break;
        }
        // All at once first; when that fails, one at a time, so one bad fix
        // does not hold back the others.
        let all: Vec<&Fix> = candidates.iter().filter_map(|f| f.fix.as_deref()).collect();
        let (text, _) = apply(&out.fixed, &all);
        if acceptable(display, &out.fixed, &text, language, settings, &findings) {
            for f in &candidates {
                *out.applied.entry(f.code()).or_insert(0) += 1;
            }
            out.fixed = text;
            continue;
        }
        let first = candidates[0];
        let fix = first.fix.as_deref().map(|f| vec![f]).unwrap_or_default();
        let (text, n) = apply(&out.fixed, &fix);
        if n == 1 && acceptable(display, &out.fixed, &text, language, settings, &findings) {
            *out.applied.entry(first.code()).or_insert(0) += 1;
            out.fixed = text;
        } else {
            refused_fp.insert(first.fingerprint.to_string());
            out.refused.push((first.line, first.code()));
        }
    }
    out
}

/// The fixed text still parses, and raises no finding the old text lacked.
fn acceptable(
    display: &str,
    old: &str,
    new: &str,
    language: Language,
    settings: &Settings,
    old_findings: &[Finding],
) -> bool {
    if language == Language::Rust && syn::parse_file(old).is_ok() && syn::parse_file(new).is_err() {
        return false;
    }
    if pattern_mode(language) && balanced(old, language) && !balanced(new, language) {
        return false;
    }
    let count = |fs: &[Finding]| {
        let mut m: BTreeMap<&str, usize> = BTreeMap::new();
        for f in fs {
            *m.entry(f.code()).or_insert(0) += 1;
        }
        m
    };
    let before = count(old_findings);
    let new_findings = engine::check_source(display, new, language, settings);
    count(&new_findings)
        .iter()
        .all(|(code, n)| *n <= before.get(code).copied().unwrap_or(0))
}

fn pattern_mode(language: Language) -> bool {
    !matches!(
        language,
        Language::Rust | Language::Lua | Language::Redis | Language::Shell
    )
}

/// The brackets of a file read in pattern mode nest, by the front-end's own
/// lexer (comments and strings are not counted).
fn balanced(src: &str, language: Language) -> bool {
    use crate::frontend::pattern::lexer::{self, Kind};
    let mut open: Vec<char> = Vec::new();
    let lexed = lexer::lex(src, language);
    for t in lexed.toks() {
        if t.kind() != Kind::Punct {
            continue;
        }
        let want = match t.text() {
            "(" | "[" | "{" => {
                open.extend(t.text().chars());
                continue;
            }
            ")" => '(',
            "]" => '[',
            "}" => '{',
            _ => continue,
        };
        if open.pop() != Some(want) {
            return false;
        }
    }
    open.is_empty()
}

/// Writes `text` to `path` atomically: a temporary file beside it, then a
/// rename over it, so a reader sees the old file or the new, never a part.
/// The file's permissions are kept.
pub fn write_atomic(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.locklint-fix.{}", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        if let Ok(meta) = std::fs::metadata(path) {
            std::fs::set_permissions(&tmp, meta.permissions())?;
        }
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

// --- unified diff ----------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Line {
    Same(usize, usize),
    Del(usize),
    Ins(usize),
}

/// Most edit distance (in lines) diffed exactly; past it the changed
/// middle is shown as removed and added whole.
const MAX_DIFF_D: usize = 2000;

/// Myers' O((N+M)·D) line diff of `a` and `b`.
fn diff_lines(a: &[&str], b: &[&str]) -> Vec<Line> {
    // Common prefix and suffix first: fixes touch few lines.
    let pre = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let suf = a[pre..]
        .iter()
        .rev()
        .zip(b[pre..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (am, bm) = (&a[pre..a.len() - suf], &b[pre..b.len() - suf]);
    let mut out: Vec<Line> = (0..pre).map(|i| Line::Same(i, i)).collect();
    let middle = myers(am, bm).unwrap_or_else(|| {
        (0..am.len())
            .map(Line::Del)
            .chain((0..bm.len()).map(Line::Ins))
            .collect()
    });
    out.extend(middle.into_iter().map(|l| match l {
        Line::Same(i, j) => Line::Same(i + pre, j + pre),
        Line::Del(i) => Line::Del(i + pre),
        Line::Ins(j) => Line::Ins(j + pre),
    }));
    out.extend((0..suf).map(|k| Line::Same(a.len() - suf + k, b.len() - suf + k)));
    out
}

fn myers(a: &[&str], b: &[&str]) -> Option<Vec<Line>> {
    let (n, m) = (a.len() as isize, b.len() as isize);
    let max = (n + m) as usize;
    // v[k] for k in -(d+1)..=(d+1), kept per step d for the backtrack.
    let mut trace: Vec<Vec<isize>> = Vec::new();
    let mut v: Vec<isize> = vec![0; 3];
    let at = |v: &Vec<isize>, d: isize, k: isize| v[(k + d + 1) as usize];
    for d in 0..=max.min(MAX_DIFF_D) as isize {
        let mut next = vec![0isize; (2 * d + 3) as usize];
        let prev_d = (d - 1).max(0);
        let get = |k: isize| {
            if k < -(prev_d + 1) || k > prev_d + 1 {
                0
            } else {
                at(&v, prev_d, k)
            }
        };
        let mut done = false;
        let mut k = -d;
        while k <= d {
            let mut x = if k == -d || (k != d && get(k - 1) < get(k + 1)) {
                get(k + 1)
            } else {
                get(k - 1) + 1
            };
            let mut y = x - k;
            while x < n && y < m && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
            }
            next[(k + d + 1) as usize] = x;
            if x >= n && y >= m {
                done = true;
            }
            k += 2;
        }
        trace.push(v);
        v = next;
        if done {
            trace.push(v);
            return Some(backtrack(&trace, n, m));
        }
    }
    None
}

/// `trace[d + 1]` holds v after step d (window `-(d+1)..=d+1`); `trace[0]` the start.
fn backtrack(trace: &[Vec<isize>], n: isize, m: isize) -> Vec<Line> {
    let mut out = Vec::new();
    let (mut x, mut y) = (n, m);
    let last = trace.len() as isize - 2;
    for d in (0..=last).rev() {
        let prev_d = (d - 1).max(0);
        let v = &trace[d as usize];
        let get = |k: isize| {
            if k < -(prev_d + 1) || k > prev_d + 1 {
                0
            } else {
                v[(k + prev_d + 1) as usize]
            }
        };
        let k = x - y;
        let prev_k = if k == -d || (k != d && get(k - 1) < get(k + 1)) {
            k + 1
        } else {
            k - 1
        };
        let (px, py) = if d == 0 {
            (0, 0)
        } else {
            let px = get(prev_k);
            (px, px - prev_k)
        };
        while x > px && y > py {
            out.push(Line::Same((x - 1) as usize, (y - 1) as usize));
            x -= 1;
            y -= 1;
        }
        if d > 0 {
            if x == px {
                out.push(Line::Ins((y - 1) as usize));
            } else {
                out.push(Line::Del((x - 1) as usize));
            }
        }
        x = px;
        y = py;
    }
    out.reverse();
    out
}

/// Lines of context around a diff's changes.
const DIFF_CONTEXT: usize = 3;

/// A unified diff (`--- a/path`, `+++ b/path`, hunks with 3 lines of
/// context) of `old` → `new`; empty when they are equal.
pub fn unified_diff(path: &str, old: &str, new: &str) -> String {
    unified_diff_from(path, old, new, 0)
}

/// [`unified_diff`] of texts that start at 0-based line `line0` of their
/// files (the hunks' line numbers are the files').
fn unified_diff_from(path: &str, old: &str, new: &str, line0: usize) -> String {
    if old == new {
        return String::new();
    }
    let a: Vec<&str> = old.split_inclusive('\n').collect();
    let b: Vec<&str> = new.split_inclusive('\n').collect();
    let lines = diff_lines(&a, &b);
    const CONTEXT: usize = DIFF_CONTEXT;
    let changed: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| !matches!(l, Line::Same(..)))
        .map(|(i, _)| i)
        .collect();
    let path = path.strip_prefix("./").unwrap_or(path);
    let mut out = format!("--- a/{path}\n+++ b/{path}\n");
    let mut i = 0;
    while i < changed.len() {
        let start = changed[i].saturating_sub(CONTEXT);
        let mut end = changed[i];
        while i < changed.len() && changed[i] <= end + 2 * CONTEXT + 1 {
            end = changed[i];
            i += 1;
        }
        let end = (end + CONTEXT + 1).min(lines.len());
        let hunk = &lines[start..end];
        let a_start = hunk
            .iter()
            .find_map(|l| match l {
                Line::Same(x, _) | Line::Del(x) => Some(*x),
                Line::Ins(_) => None,
            })
            .unwrap_or(a.len());
        let b_start = hunk
            .iter()
            .find_map(|l| match l {
                Line::Same(_, y) | Line::Ins(y) => Some(*y),
                Line::Del(_) => None,
            })
            .unwrap_or(b.len());
        let a_len = hunk.iter().filter(|l| !matches!(l, Line::Ins(_))).count();
        let b_len = hunk.iter().filter(|l| !matches!(l, Line::Del(_))).count();
        let shown = |start: usize, len: usize| line0 + if len == 0 { start } else { start + 1 };
        out.push_str(&format!(
            "@@ -{},{} +{},{} @@\n",
            shown(a_start, a_len),
            a_len,
            shown(b_start, b_len),
            b_len
        ));
        for l in hunk {
            let (sign, text) = match *l {
                Line::Same(x, _) => (' ', a[x]),
                Line::Del(x) => ('-', a[x]),
                Line::Ins(y) => ('+', b[y]),
            };
            out.push(sign);
            out.push_str(text.trim_end_matches(['\n', '\r']));
            out.push('\n');
            if !text.ends_with('\n') {
                out.push_str("\\ No newline at end of file\n");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Which fixes `apply` takes, against the pairwise check over every
    /// edit taken before (what it did until session 34), on random fixes
    /// of one to three edits, empty ones and shared ones included.
    #[test]
    fn the_fixes_taken_are_the_pairwise_checks() {
        fn pairwise(src: &str, fixes: &[&Fix]) -> Vec<bool> {
            let mut taken: Vec<&Edit> = Vec::new();
            let mut out = Vec::new();
            for fix in fixes {
                let shared = |taken: &Vec<&Edit>, e: &Edit| {
                    taken
                        .iter()
                        .any(|t| t.span == e.span && t.replacement == e.replacement)
                };
                let fits = fix.edits.iter().all(|e| {
                    e.span.end() <= src.len()
                        && (shared(&taken, e)
                            || taken.iter().all(|t| {
                                e.span.end() <= t.span.start() || t.span.end() <= e.span.start()
                            }))
                });
                let inner = fix
                    .edits
                    .windows(2)
                    .all(|w| w[0].span.end() <= w[1].span.start());
                let ok = fits && inner && !fix.edits.is_empty();
                if ok {
                    let new: Vec<&Edit> = fix.edits.iter().filter(|e| !shared(&taken, e)).collect();
                    taken.extend(new);
                }
                out.push(ok);
            }
            out
        }
        let src = "abcdefghijklmnopqrstuvwxyz0123456789";
        // an insertion where an earlier fix's replacement starts
        let (a, b) = (
            Fix {
                applicability: Applicability::Safe,
                message: "".into(),
                edits: vec![edit(5, 10, "X")],
            },
            Fix {
                applicability: Applicability::Safe,
                message: "".into(),
                edits: vec![edit(5, 5, "y")],
            },
        );
        assert_eq!(
            apply(src, &[&a, &b]),
            ("abcdeyXklmnopqrstuvwxyz0123456789".to_string(), 2)
        );
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n) as usize
        };
        for _ in 0..300 {
            let fixes: Vec<Fix> = (0..12)
                .map(|_| {
                    let mut at = next(20);
                    let edits = (0..1 + next(3))
                        .map(|_| {
                            let start = at + next(4);
                            let end = start + next(4);
                            at = end;
                            edit(start, end, ["", "x", "yy"][next(3)])
                        })
                        .collect();
                    Fix {
                        applicability: Applicability::Safe,
                        message: "".into(),
                        edits,
                    }
                })
                .collect();
            let refs: Vec<&Fix> = fixes.iter().collect();
            let want = pairwise(src, &refs);
            // each prefix of the list: `apply` counts what it takes
            for n in 0..=refs.len() {
                let (_, applied) = apply(src, &refs[..n]);
                assert_eq!(
                    applied,
                    want[..n].iter().filter(|&&t| t).count(),
                    "{:?}",
                    &fixes[..n]
                );
            }
        }
    }

    /// The diff read near the edits is the diff of the whole file, for
    /// edits at every line of texts with and without a final newline,
    /// `\r\n` lines, edits that add or remove lines, and two edits far
    /// apart (a script declared at the top, a call rewritten below).
    #[test]
    fn a_preview_near_the_edits_is_the_whole_files() {
        let body: String = (0..40)
            .map(|i| format!("line {i} = call(k{i})\n"))
            .collect();
        let texts = [
            body.clone(),
            body.trim_end().to_string(),
            body.replace('\n', "\r\n"),
            format!("x\r{body}"),
            "one".to_string(),
            String::new(),
        ];
        let mut compared = 0;
        for text in &texts {
            let starts: Vec<usize> = std::iter::once(0)
                .chain(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1))
                .collect();
            let cuts: Vec<usize> = (0..=text.len())
                .filter(|&i| text.is_char_boundary(i))
                .collect();
            for (n, &at) in cuts.iter().enumerate().step_by(7) {
                let end = cuts[(n + 9).min(cuts.len() - 1)];
                for edits in [
                    vec![edit(at, end, "new()")],
                    vec![edit(at, at, "added\nlines\n")],
                    vec![edit(at, end, "")],
                    vec![edit(0, 0, "SCRIPT = 1\n"), edit(at, end, "x")],
                    vec![edit(at, end, "x"), edit(end, end, "\ntail")],
                ] {
                    let fix = Fix {
                        applicability: Applicability::Safe,
                        message: "".into(),
                        edits,
                    };
                    assert_eq!(
                        preview_near(text, &starts, &fix, "a.py"),
                        preview(text, &fix, "a.py"),
                        "{text:?} {:?}",
                        fix.edits
                    );
                    compared += 1;
                }
            }
        }
        assert!(compared > 500, "{compared}");
    }

    fn edit(start: usize, end: usize, text: &str) -> Edit {
        Edit {
            span: Span::new(start, end),
            replacement: Text::code(text),
            line: 0,
            column: 0,
            end_line: 0,
            end_column: 0,
        }
    }

    fn fix(edits: Vec<Edit>) -> Fix {
        Fix {
            applicability: Applicability::Safe,
            message: "".into(),
            edits,
        }
    }

    #[test]
    fn overlapping_fixes_are_skipped() {
        let src = "abcdef";
        let a = fix(vec![edit(0, 2, "X")]);
        let b = fix(vec![edit(1, 3, "Y")]);
        let c = fix(vec![edit(4, 6, "Z")]);
        let (out, n) = apply(src, &[&a, &b, &c]);
        assert_eq!((out.as_str(), n), ("XcdZ", 2));
    }

    #[test]
    fn an_edit_two_fixes_make_identically_is_made_once() {
        // Two releases in one file both declare the script: declared once.
        let src = "ab\ncd\n";
        let a = fix(vec![edit(0, 0, "S\n"), edit(3, 4, "C")]);
        let b = fix(vec![edit(0, 0, "S\n"), edit(4, 5, "D")]);
        let (out, n) = apply(src, &[&a, &b]);
        assert_eq!((out.as_str(), n), ("S\nab\nCD\n", 2));
        // A different insertion at the same point is not shared.
        let c = fix(vec![edit(0, 0, "T\n")]);
        let (out, n) = apply(src, &[&a, &c]);
        assert_eq!((out.as_str(), n), ("S\nT\nab\nCd\n", 2));
    }

    #[test]
    fn diff_of_two_distant_changes_has_two_hunks() {
        let old: String = (1..=30).map(|i| format!("line {i}\n")).collect();
        let new = old
            .replace("line 3\n", "line three\n")
            .replace("line 25\n", "");
        let d = unified_diff("f.txt", &old, &new);
        assert_eq!(d.matches("@@ -").count(), 2, "{d}");
        assert!(d.contains("-line 3\n+line three\n"), "{d}");
        assert!(d.contains("@@ -22,7 +22,6 @@"), "{d}");
        assert!(d.contains("-line 25\n"), "{d}");
        assert_eq!(unified_diff("f", "a\n", "a\n"), "");
    }

    #[test]
    fn diff_matches_a_hand_made_patch() {
        let d = unified_diff("x", "a\nb\nc\n", "a\nB\nc\nd");
        assert_eq!(
            d,
            "--- a/x\n+++ b/x\n@@ -1,3 +1,4 @@\n a\n-b\n+B\n c\n+d\n\\ No newline at end of file\n"
        );
    }

    #[test]
    fn a_result_that_no_longer_parses_is_refused() {
        let settings = Settings::default();
        let rs = "fn f() { let x = 1; }\n";
        assert!(acceptable("a.rs", rs, rs, Language::Rust, &settings, &[]));
        assert!(!acceptable(
            "a.rs",
            rs,
            "fn f() { let x = ; }\n",
            Language::Rust,
            &settings,
            &[]
        ));
        let js = "function f() { if (a) { b(\"}\"); } }\n";
        assert!(acceptable(
            "a.js",
            js,
            js,
            Language::JavaScript,
            &settings,
            &[]
        ));
        let broken = "function f() { if (a) { b(\"}\"); }\n";
        assert!(!acceptable(
            "a.js",
            js,
            broken,
            Language::JavaScript,
            &settings,
            &[]
        ));
    }

    #[test]
    fn safe_level_takes_only_safe_fixes() {
        assert!(Level::Safe.allows(Applicability::Safe));
        assert!(!Level::Safe.allows(Applicability::Unsafe));
        assert!(Level::Unsafe.allows(Applicability::Unsafe));
        assert!(!Level::Unsafe.allows(Applicability::DisplayOnly));
    }
}
