//! The pathological input shapes of the scaling benchmark (bench/scaling.py)
//! at a small size: each finishes and finds what it should. No timing here:
//! the benchmark measures how they scale.

use locklint::facts::Language;
use locklint::{check_source, Finding, Settings};
use std::collections::HashSet;

fn check(path: &str, src: &str, lang: Language) -> Vec<Finding> {
    check_source(path, src, lang, &Settings::default())
}

fn count(findings: &[Finding], code: &str) -> usize {
    findings.iter().filter(|f| f.code() == code).count()
}

/// 1-based line and character column of byte `offset` (the slow, obvious way).
fn position(src: &str, offset: usize) -> (usize, usize) {
    let before = &src[..offset];
    let line = before.matches('\n').count() + 1;
    let start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[start..].chars().count() + 1)
}

/// Byte offsets of every `pat` in `src`.
fn offsets(src: &str, pat: &str) -> Vec<usize> {
    src.match_indices(pat).map(|(i, _)| i).collect()
}

/// `n` calls: SETNX without a TTL (LL004) and SET NX PX (expirable, so its
/// DEL is LL002) take turns, each followed by its DEL.
fn js_calls(n: usize, sep: &str) -> String {
    (0..n)
        .map(|i| {
            if i % 4 == 0 {
                format!("await client.set('lock:o{i}',tok,'NX');")
            } else if i % 4 == 2 {
                format!("await client.set('lock:o{i}',tok,'NX','PX',1000);")
            } else {
                format!("await client.del('lock:o{}');", i - 1)
            }
        })
        .collect::<Vec<_>>()
        .join(sep)
}

#[test]
fn many_calls_on_one_long_line_are_all_found_at_their_columns() {
    // Multi-byte characters first, so columns are characters, not bytes,
    // far past the first line-index checkpoint.
    let pad = "var é = '日本語';".repeat(400);
    let src = format!(
        "{pad}async function f(client,tok){{{}}}\n",
        js_calls(400, "")
    );
    let found = check("bundle.js", &src, Language::JavaScript);
    assert_eq!(count(&found, "LL004"), 100, "{found:#?}");
    assert_eq!(count(&found, "LL002"), 100);
    let sets: Vec<(usize, usize)> = offsets(&src, ".set(")
        .into_iter()
        .map(|o| position(&src, o + 1))
        .collect();
    let dels: Vec<(usize, usize)> = offsets(&src, ".del(")
        .into_iter()
        .map(|o| position(&src, o + 1))
        .collect();
    for f in &found {
        let want = if f.code() == "LL004" { &sets } else { &dels };
        assert!(
            want.contains(&(f.line as usize, f.column as usize)),
            "{}:{}",
            f.line,
            f.column
        );
    }
    // One line, yet every fingerprint differs (occurrence index per code).
    let prints: HashSet<&str> = found.iter().map(|f| f.fingerprint.as_str()).collect();
    assert_eq!(prints.len(), found.len());
}

#[test]
fn many_lines_of_calls_in_one_scope() {
    let src = format!(
        "async function f(client, tok) {{\n{}\n}}\n",
        js_calls(400, "\n")
    );
    let found = check("lines.js", &src, Language::JavaScript);
    assert_eq!(count(&found, "LL004"), 100);
    assert_eq!(count(&found, "LL002"), 100);
    assert_eq!(found.len(), 200);
}

#[test]
fn fingerprints_of_many_finding_lines_follow_the_baseline_formula() {
    // 300 lines with a finding each, every third line the same text: the
    // engine keeps only a few lines' hash prefixes at once, and what it
    // lets go and works out again must give the same fingerprints — each
    // (code, line text) group holds occurrences 1..=k
    let lines: Vec<String> = (0..300)
        .map(|i| match i % 3 {
            0 => "  await client.set('lock:same',tok,'NX');".to_string(),
            _ => format!("  await client.set('lock:o{i}',tok,'NX');"),
        })
        .collect();
    let src = format!(
        "async function f(client, tok) {{\n{}\n}}\n",
        lines.join("\n")
    );
    let found = check("dir/many.js", &src, Language::JavaScript);
    assert_eq!(count(&found, "LL004"), 300);
    let text: Vec<&str> = src.lines().collect();
    let mut groups: std::collections::HashMap<(&str, &str), Vec<&str>> = Default::default();
    for f in &found {
        groups
            .entry((f.code(), text[f.line as usize - 1]))
            .or_default()
            .push(f.fingerprint.as_str());
    }
    assert!(groups.values().any(|g| g.len() == 100), "the repeated line");
    for ((code, line), got) in groups {
        let got: HashSet<&str> = got.into_iter().collect();
        let want: HashSet<String> = (1..=got.len())
            .map(|n| {
                locklint::filter::baseline::fingerprint(code, "dir/many.js", line, n).to_string()
            })
            .collect();
        assert_eq!(
            got,
            want.iter().map(String::as_str).collect(),
            "{code} {line}"
        );
    }
}

#[test]
fn many_ops_on_one_key_in_one_scope() {
    let calls: Vec<String> = (0..300)
        .map(|i| match i % 3 {
            0 => "  await client.set('lock:order', tok, 'NX');".to_string(),
            1 => "  await client.expire('lock:order', 30);".to_string(),
            _ => "  await client.del('lock:order');".to_string(),
        })
        .collect();
    let src = format!(
        "async function f(client, tok) {{\n{}\n}}\n",
        calls.join("\n")
    );
    let found = check("same_key.js", &src, Language::JavaScript);
    // Every SETNX is followed by its EXPIRE (LL003, not LL004).
    assert_eq!(count(&found, "LL003"), 100, "{found:#?}");
    assert_eq!(count(&found, "LL004"), 0);
    // Each DEL right after an acquire + EXPIRE is a release of the lock.
    assert!(count(&found, "LL002") > 0);
}

#[test]
fn many_functions_sharing_one_key() {
    let mut src = String::from("import redis\nr = redis.Redis()\n\n");
    for i in 0..200 {
        if i % 2 == 0 {
            src.push_str(&format!(
                "def acquire_{i}(tok):\n    return r.set('jobs:refresh', tok, nx=True, px=30000)\n\n"
            ));
        } else {
            src.push_str(&format!(
                "def release_{i}():\n    r.delete('jobs:refresh')\n\n"
            ));
        }
    }
    let found = check("jobs.py", &src, Language::Python);
    // Acquire/release function pairs make the key a lock across functions.
    assert_eq!(count(&found, "LL002"), 100, "{found:#?}");
    assert_eq!(count(&found, "LL004"), 0);
}

#[test]
fn one_call_after_a_long_line_of_other_code() {
    let pad = "var abcdefghij=1;".repeat(20_000);
    let src =
        format!("{pad}async function f(client,tok){{await client.set('lock:o',tok,'NX');}}\n");
    let found = check("long.js", &src, Language::JavaScript);
    assert_eq!(found.len(), 1);
    let at = src.find(".set(").unwrap() + 1;
    assert_eq!(
        (found[0].line as usize, found[0].column as usize),
        position(&src, at)
    );
}

#[test]
fn deep_nesting_and_huge_strings_finish() {
    let opens: String = (0..3000).map(|i| format!("if (a{i}) {{ ")).collect();
    let src = format!(
        "async function f(client, tok) {{\n{opens}await client.set('lock:x', tok, 'NX');{}\n}}\nconst v = {}1{};\n",
        "}".repeat(3000),
        "(".repeat(3000),
        ")".repeat(3000)
    );
    let found = check("deep.js", &src, Language::JavaScript);
    assert_eq!(count(&found, "LL004"), 1);

    let words = "lock set del expire nx px eval redis ".repeat(20_000);
    let src = format!(
        "import redis\nr = redis.Redis()\nDOC = \"{words}\"\ndef take(tok):\n    r.set('lock:a', tok, nx=True)\n"
    );
    let found = check("doc.py", &src, Language::Python);
    assert_eq!(count(&found, "LL004"), 1);
    assert_eq!(found[0].line, 5);
}

#[test]
fn many_suppressions_and_findings_in_one_file() {
    // Every other release is suppressed: the comment search per finding is
    // a window, and it still silences exactly the covered ones.
    let mut src = String::from("async function f(client, tok) {\n");
    for i in 0..300 {
        src.push_str(&format!(
            "  await client.set('lock:s{i}', tok, 'NX', 'PX', 1000);\n"
        ));
        if i % 2 == 0 {
            src.push_str("  // locklint: allow(LL002)\n");
        }
        src.push_str(&format!("  await client.del('lock:s{i}');\n"));
    }
    src.push_str("}\n");
    let found = check("sup.js", &src, Language::JavaScript);
    assert_eq!(count(&found, "LL002"), 150, "{found:#?}");
    assert_eq!(count(&found, "LL100"), 0);
}

#[test]
fn a_suppression_above_a_long_line_of_findings() {
    // Each finding of a line asks where its statement starts (read once
    // per line). The comment above a chain covers every finding of the
    // chain's long last line, not the statement after it; three lines
    // above a long line it covers none.
    let calls = (0..300)
        .map(|i| format!(" await client.set('lock:c{i}',tok,'NX');"))
        .collect::<String>();
    let chained = format!(
        "async function f(client, tok) {{\n  // locklint: allow(LL004)\n  await client\n    .set('lock:a', tok, 'NX');{calls}\n  await client.set('lock:z', tok, 'NX');\n}}\n"
    );
    let found = check("chain.js", &chained, Language::JavaScript);
    assert_eq!(count(&found, "LL004"), 1, "{found:#?}");
    assert_eq!(found[0].line, 5);
    assert_eq!(count(&found, "LL100"), 0);
    let apart = format!("// locklint: allow(LL004)\n\n\nasync function f(client,tok){{{calls}}}\n");
    let found = check("apart.js", &apart, Language::JavaScript);
    assert_eq!(count(&found, "LL004"), 300, "{found:#?}");
    assert_eq!(count(&found, "LL100"), 1);
}

#[test]
fn many_redis_cli_lines() {
    let mut sh = String::from("#!/bin/sh\n");
    for i in 0..300 {
        sh.push_str(&format!(
            "redis-cli SET lock:s{i} 1 NX PX 1000\nredis-cli DEL lock:s{i}\n"
        ));
    }
    let found = check("locks.sh", &sh, Language::Shell);
    // A constant value on an expirable lock that is released: LL001 + LL002.
    assert_eq!(count(&found, "LL001"), 300, "{found:#?}");
    assert_eq!(count(&found, "LL002"), 300);
}
