//! Inline suppressions: `locklint: allow(LL002)` or
//! `locklint: allow(unconditional-release, LL001) -- reason` in a comment of
//! any language (`//`, `#`, `--`, `/* */`), on the finding's line or the
//! line above it. For a call split over several lines the comment may also
//! stand above the first line of the statement, or on any line of the call.
//!
//! A suppression that silences nothing, or that names an unknown rule, is
//! reported as `LL100 unused-suppression`.

use super::{baseline, lookup, rule_hint, UNUSED_SUPPRESSION};
use crate::engine::Settings;
use crate::facts::{Language, Span};
use crate::finding::{Finding, LineIndex};
use std::collections::HashMap;

const MARKER: &str = "locklint:";

/// One entry of an `allow(…)` list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Allowed {
    /// As written.
    pub text: String,
    /// The rule code it names, if locklint knows it.
    pub code: Option<&'static str>,
}

/// One `locklint: allow(…)` comment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Suppression {
    /// 1-based line of the comment.
    pub line: usize,
    /// Byte span of `locklint: allow(…)` in the source.
    pub span: Span,
    pub allowed: Vec<Allowed>,
    /// The text after `--`, if any.
    pub reason: Option<String>,
}

/// Byte offset where a comment starts on `line`, outside string literals.
/// Openers: `//`, `/*`, `#`, `--` (every language's, accepted everywhere:
/// a false opener only matters when `locklint:` follows it).
pub fn comment_start(line: &str, language: Language) -> Option<usize> {
    let b = line.as_bytes();
    let mut i = 0;
    let mut quote: Option<u8> = None;
    while i < b.len() {
        let c = b[i];
        if let Some(q) = quote {
            if c == b'\\' {
                i += 2;
                continue;
            }
            if c == q {
                quote = None;
            }
            i += 1;
            continue;
        }
        match c {
            b'"' | b'`' => quote = Some(c),
            b'\'' => {
                // Rust: `'a` is a lifetime; only `'x'` / `'\n'` are literals.
                let is_char_lit = match b.get(i + 1) {
                    Some(b'\\') => true,
                    Some(_) => {
                        let rest = &line[i + 1..];
                        let mut cs = rest.chars();
                        cs.next();
                        cs.next() == Some('\'')
                    }
                    None => false,
                };
                if language != Language::Rust || is_char_lit {
                    quote = Some(c);
                }
            }
            b'/' if matches!(b.get(i + 1), Some(b'/') | Some(b'*')) => return Some(i),
            b'#' => return Some(i),
            b'-' if b.get(i + 1) == Some(&b'-') => return Some(i),
            _ => {}
        }
        i += 1;
    }
    None
}

/// Every suppression comment of a source text.
pub fn parse(src: &str, language: Language) -> Vec<Suppression> {
    let mut out = Vec::new();
    if memchr::memmem::find(src.as_bytes(), MARKER.as_bytes()).is_none() {
        return out;
    }
    let mut offset = 0usize;
    for (idx, raw) in src.split_inclusive('\n').enumerate() {
        let line_start = offset;
        offset += raw.len();
        let line = raw.trim_end_matches(['\n', '\r']);
        if !line.contains(MARKER) {
            continue;
        }
        let Some(c) = comment_start(line, language) else {
            continue;
        };
        // The first marker after the comment opener (one in a string before it does not count).
        let Some(rel) = line[c..].find(MARKER) else {
            continue;
        };
        let m = c + rel;
        if let Some(s) = parse_one(line, m, line_start, idx + 1) {
            out.push(s);
        }
    }
    out
}

fn parse_one(
    line: &str,
    marker_at: usize,
    line_start: usize,
    line_no: usize,
) -> Option<Suppression> {
    let after = &line[marker_at + MARKER.len()..];
    let rest = after.trim_start();
    let rest = rest.strip_prefix("allow")?;
    let rest = rest.trim_start();
    let list = rest.strip_prefix('(')?;
    let (items, tail) = match list.find(')') {
        Some(i) => (&list[..i], &list[i + 1..]),
        // No closing parenthesis: the list ends at a reason or a comment end.
        None => {
            let end = ["--", "*/"]
                .iter()
                .filter_map(|p| list.find(p))
                .min()
                .unwrap_or(list.len());
            (&list[..end], &list[end..])
        }
    };
    let end_in_line = line.len() - tail.len();
    let allowed: Vec<Allowed> = items
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| Allowed {
            text: s.to_string(),
            code: lookup(s).map(|m| m.code),
        })
        .collect();
    let reason = tail
        .trim_start()
        .strip_prefix("--")
        .map(|r| r.trim().trim_end_matches("*/").trim().to_string())
        .filter(|r| !r.is_empty());
    Some(Suppression {
        line: line_no,
        span: Span::new(line_start + marker_at, line_start + end_in_line),
        allowed,
        reason,
    })
}

/// The code part of a line (before any comment), trimmed.
fn code_part(line: &str, language: Language) -> &str {
    match comment_start(line, language) {
        Some(c) => line[..c].trim(),
        None => line.trim(),
    }
}

/// The first line of the statement that contains `line`, found cheaply by
/// walking up while the lines read as one expression (a line that starts
/// with `.`/`?.`/`->`/`)` continues the one above; a line that ends with
/// `(`, `,`, `=`, `.`, `\`, `+`, `&&`, `||`, `[` continues on the next).
fn statement_start(index: &LineIndex, line: usize, language: Language) -> usize {
    let mut cur = line;
    for _ in 0..8 {
        if cur <= 1 {
            break;
        }
        let here = code_part(index.line_text(cur), language);
        let above = code_part(index.line_text(cur - 1), language);
        if above.is_empty() {
            break;
        }
        let continues = [".", "?.", "->", ")", "]", "+", "&&", "||", "|"]
            .iter()
            .any(|p| here.starts_with(p))
            || ["(", ",", "=", ".", "\\", "+", "&&", "||", "["]
                .iter()
                .any(|p| above.ends_with(p));
        if !continues {
            break;
        }
        cur -= 1;
    }
    cur
}

/// Does the comment on line `s` cover a finding that spans `line..=end_line`
/// and whose statement starts at `stmt`?
fn covers(s: usize, line: usize, end_line: usize, stmt: usize) -> bool {
    (s + 1 >= line && s <= end_line.max(line)) || (s + 1 >= stmt && s <= stmt)
}

/// Removes the findings silenced by suppression comments of `src` and adds
/// an `LL100 unused-suppression` finding for each allow entry that silences
/// nothing (only for rules that ran) or names an unknown rule.
/// The result is sorted like [`crate::Report::sort`].
pub fn apply(
    display_path: &str,
    src: &str,
    language: Language,
    findings: Vec<Finding>,
    settings: &Settings,
) -> Vec<Finding> {
    let sups = parse(src, language);
    if sups.is_empty() {
        return findings;
    }
    let index = LineIndex::new(src);
    let mut used: Vec<Vec<bool>> = sups.iter().map(|s| vec![false; s.allowed.len()]).collect();
    // each finding line's statement start, read once: findings share
    // lines, and reading one means reading its line and those above (a
    // minified line of 5,000 findings under a comment was read 5,000
    // times: 4 s)
    let mut starts: HashMap<usize, usize> = HashMap::new();
    // (in place, in order: a second list stood beside the findings, 2.4 MB
    // for 10,000 of them)
    let mut keep = findings;
    keep.retain(|f| !silence(f, &sups, &mut used, &index, language, &mut starts));

    let mut unused = Vec::new();
    if settings.rule_enabled(UNUSED_SUPPRESSION.code) {
        let mut seen: HashMap<String, usize> = HashMap::new();
        for (si, s) in sups.iter().enumerate() {
            for (ai, a) in s.allowed.iter().enumerate() {
                let help = match a.code {
                    None => "write a rule code or name from `locklint rules`, or remove the comment",
                    Some(_) => "remove this comment, or move it onto the line of the finding it is meant for (or the line above it)",
                };
                let message = match a.code {
                    None => format!(
                        "`{}` in this suppression is not a locklint rule ({})",
                        a.text,
                        rule_hint(&a.text)
                    ),
                    Some(code) if code == UNUSED_SUPPRESSION.code => continue,
                    Some(_) if used[si][ai] => continue,
                    Some(code) if !settings.rule_enabled(code) => continue,
                    Some(code) => format!(
                        "this suppression of `{}` silences nothing: no {code} finding on this line or the next",
                        a.text
                    ),
                };
                let (line, _) = index.line_col(s.span.start());
                let text = index.line_text(line);
                let norm = baseline::normalise_line(text);
                let n = seen.entry(norm).or_insert(0);
                *n += 1;
                let mut f = Finding::new(
                    &UNUSED_SUPPRESSION,
                    display_path.into(),
                    language,
                    &message,
                    "silences nothing",
                    help,
                    None,
                );
                if let Some(&severity) = settings.severity.get(UNUSED_SUPPRESSION.code) {
                    f.severity = severity;
                }
                (f.line, f.column) = index.place(s.span.start());
                (f.end_line, f.end_column) = index.place(s.span.end());
                f.fingerprint = baseline::fingerprint(
                    UNUSED_SUPPRESSION.code,
                    display_path,
                    &format!("{text}\0{}", a.text),
                    *n,
                );
                f.span = s.span;
                unused.push(f);
            }
        }
    }
    // `allow(LL100)` silences the unused-suppression findings it covers.
    // (room for them at once: pushed to a full list, one doubled it)
    keep.reserve_exact(unused.len());
    for f in unused {
        if !silence(&f, &sups, &mut used, &index, language, &mut starts) {
            keep.push(f);
        }
    }
    crate::finding::sort_findings(&mut keep);
    keep
}

fn silence(
    f: &Finding,
    sups: &[Suppression],
    used: &mut [Vec<bool>],
    index: &LineIndex,
    language: Language,
    starts: &mut HashMap<usize, usize>,
) -> bool {
    let mut stmt = None;
    let mut hit = false;
    // Only comments from 9 lines above on can cover the finding (its line,
    // the line above, or above a statement start at most 8 lines up):
    // the comments are in line order, so the search starts there.
    let (line, end_line) = (f.line as usize, f.end_line as usize);
    let first = sups.partition_point(|s| s.line + 9 < line);
    for (si, s) in sups.iter().enumerate().skip(first) {
        if s.line > end_line.max(line) {
            break;
        }
        let Some(ai) = s.allowed.iter().position(|a| a.code == Some(f.code())) else {
            continue;
        };
        // The statement start is looked up only when a comment could need it.
        let direct = s.line + 1 >= line && s.line <= end_line.max(line);
        let ok = direct || {
            let st = *stmt.get_or_insert_with(|| {
                *starts
                    .entry(line)
                    .or_insert_with(|| statement_start(index, line, language))
            });
            covers(s.line, line, end_line, st)
        };
        if ok {
            used[si][ai] = true;
            hit = true;
        }
    }
    hit
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codes(s: &Suppression) -> Vec<Option<&'static str>> {
        s.allowed.iter().map(|a| a.code).collect()
    }

    #[test]
    fn parses_every_comment_syntax() {
        for (src, lang) in [
            ("con.del(k); // locklint: allow(LL002)", Language::Rust),
            ("r.delete(k)  # locklint: allow(LL002)", Language::Python),
            (
                "redis.call('del', KEYS[1]) -- locklint: allow(LL002)",
                Language::Lua,
            ),
            ("jedis.del(k); /* locklint: allow(LL002) */", Language::Java),
            ("DEL k # locklint: allow(LL002)", Language::Redis),
        ] {
            let s = parse(src, lang);
            assert_eq!(s.len(), 1, "{src}");
            assert_eq!(codes(&s[0]), vec![Some("LL002")], "{src}");
        }
    }

    #[test]
    fn names_codes_and_reasons() {
        let s = parse(
            "# locklint: allow(unconditional-release, LL001) -- the janitor owns it\n",
            Language::Python,
        );
        assert_eq!(codes(&s[0]), vec![Some("LL002"), Some("LL001")]);
        assert_eq!(s[0].reason.as_deref(), Some("the janitor owns it"));
        let s = parse("// locklint: allow(LL02)\n", Language::Go);
        assert_eq!(codes(&s[0]), vec![None]);
    }

    #[test]
    fn a_marker_in_a_string_is_not_a_suppression() {
        assert!(parse(r#"let s = "locklint: allow(LL002)";"#, Language::Rust).is_empty());
        assert!(parse(r##"s = "# locklint: allow(LL002)""##, Language::Python).is_empty());
        assert!(parse(r#"x = 'a // locklint: allow(LL002)'"#, Language::JavaScript).is_empty());
        // A Rust lifetime is not a quote.
        let s = parse(
            "fn f<'a>(k: &'a str) { con.del(k) } // locklint: allow(LL002)",
            Language::Rust,
        );
        assert_eq!(s.len(), 1);
        // The fixture marker is something else.
        assert!(parse("// locklint-expect: LL002@3:5", Language::Rust).is_empty());
        // A marker in a string, then a real one in the comment.
        let s = parse(
            r#"let s = "locklint: allow(LL001)"; // locklint: allow(LL002)"#,
            Language::Rust,
        );
        assert_eq!(s.len(), 1);
        assert_eq!(codes(&s[0]), vec![Some("LL002")]);
    }

    #[test]
    fn odd_input_never_panics() {
        for src in [
            "// locklint: allow(",
            "// locklint: allow",
            "// locklint:",
            "# locklint: allow(LL002 -- no closing paren",
            "/* locklint: allow(LL002, , ,) */",
            "'\\ // locklint: allow(LL002)",
            "\"é\\\" // locklint: allow(ünïcode, LL001) -- ß",
            "'é' // locklint: allow(LL001)",
            "\u{feff}// locklint: allow(LL001)\r\n",
        ] {
            for lang in [Language::Rust, Language::Python, Language::Lua] {
                let _ = parse(src, lang);
                let f = apply("x", src, lang, Vec::new(), &Settings::default());
                assert!(f.iter().all(|f| f.code() == "LL100"));
            }
        }
        let s = parse("/* locklint: allow(LL002, , ,) */", Language::Java);
        assert_eq!(codes(&s[0]), vec![Some("LL002")]);
        let s = parse(
            "# locklint: allow(LL002 -- no closing paren",
            Language::Python,
        );
        assert_eq!(s.len(), 1);
    }

    #[test]
    fn statement_start_walks_up_a_call_chain() {
        let src =
            "fn f() {\n    redis::cmd(\"DEL\")\n        .arg(&key)\n        .query(&mut c);\n}\n";
        let index = LineIndex::new(src);
        assert_eq!(statement_start(&index, 3, Language::Rust), 2);
        assert_eq!(statement_start(&index, 2, Language::Rust), 2);
        let src = "x = 1\nr.delete(\n    key,\n)\n";
        let index = LineIndex::new(src);
        assert_eq!(statement_start(&index, 3, Language::Python), 2);
    }
}
