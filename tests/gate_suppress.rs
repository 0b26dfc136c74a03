//! Suppression comments (SPEC §7) and `LL100 unused-suppression`, on
//! findings built by hand so the filter is tested apart from the front-ends.

mod gate_common;

use locklint::facts::{Language, Span};
use locklint::filter::suppress;
use locklint::{Finding, Settings, Severity};

fn finding(code: &str, line: usize, end_line: usize) -> Finding {
    let meta = locklint::filter::lookup(code).expect("known rule");
    let mut f = Finding::new(meta, "src/x".into(), Language::Rust, "m", "l", "h", None);
    (f.line, f.column) = (line as u32, 5);
    (f.end_line, f.end_column) = (end_line as u32, 20);
    f.fingerprint = locklint::filter::baseline::fingerprint(code, "src/x", "", line);
    f.span = Span::new(0, 1);
    f
}

fn run(
    src: &str,
    lang: Language,
    findings: Vec<Finding>,
    settings: &Settings,
) -> Vec<(String, usize)> {
    suppress::apply("src/x", src, lang, findings, settings)
        .into_iter()
        .map(|f| (f.code().to_string(), f.line as usize))
        .collect()
}

fn ll002_at(line: usize) -> Vec<Finding> {
    vec![finding("LL002", line, line)]
}

#[test]
fn on_the_line_and_on_the_line_above() {
    let s = Settings::default();
    let same = "fn f() {\n    con.del(&lock_key)?; // locklint: allow(LL002)\n}\n";
    assert_eq!(run(same, Language::Rust, ll002_at(2), &s), vec![]);
    let above = "fn f() {\n    // locklint: allow(unconditional-release) -- janitor owns it\n    con.del(&lock_key)?;\n}\n";
    assert_eq!(run(above, Language::Rust, ll002_at(3), &s), vec![]);
}

#[test]
fn two_lines_above_does_not_count_and_is_reported_unused() {
    let s = Settings::default();
    let src = "fn f() {\n    // locklint: allow(LL002)\n\n    con.del(&lock_key)?;\n}\n";
    assert_eq!(
        run(src, Language::Rust, ll002_at(4), &s),
        vec![("LL100".to_string(), 2), ("LL002".to_string(), 4)]
    );
}

#[test]
fn the_first_line_of_a_call_split_over_lines() {
    let s = Settings::default();
    // The finding is where the method name stands (line 5); the comment is
    // above the statement's first line.
    let src = "fn f() {\n    // locklint: allow(LL002)\n    let _: () = con\n        .pipe()\n        .del(&lock_key)\n        .query(c)?;\n}\n";
    assert_eq!(
        run(src, Language::Rust, vec![finding("LL002", 5, 6)], &s),
        vec![]
    );
    // On a later line of the call itself.
    let src = "fn f() {\n    redis::cmd(\"DEL\")\n        .arg(&lock_key) // locklint: allow(LL002)\n        .query(c)?;\n}\n";
    assert_eq!(
        run(src, Language::Rust, vec![finding("LL002", 2, 4)], &s),
        vec![]
    );
    // Python: arguments on the following lines.
    let src = "# locklint: allow(LL002)\nr.delete(\n    lock_key,\n)\n";
    assert_eq!(
        run(src, Language::Python, vec![finding("LL002", 2, 4)], &s),
        vec![]
    );
}

#[test]
fn every_comment_syntax() {
    let s = Settings::default();
    for (src, lang) in [
        (
            "r.delete(lock_key)  # locklint: allow(LL002)\n",
            Language::Python,
        ),
        (
            "redis.call('del', KEYS[1]) -- locklint: allow(LL002)\n",
            Language::Lua,
        ),
        (
            "jedis.del(lockKey); /* locklint: allow(LL002) */\n",
            Language::Java,
        ),
        (
            "await redis.del(lockKey); // locklint: allow(LL002)\n",
            Language::TypeScript,
        ),
        (
            "$redis->del($lockKey); # locklint: allow(LL002)\n",
            Language::Php,
        ),
    ] {
        assert_eq!(run(src, lang, ll002_at(1), &s), vec![], "{src}");
    }
}

#[test]
fn a_marker_inside_a_string_is_not_a_suppression() {
    let s = Settings::default();
    let src = "fn f() {\n    let note = \"locklint: allow(LL002)\"; con.del(&lock_key)?;\n}\n";
    assert_eq!(
        run(src, Language::Rust, ll002_at(2), &s),
        vec![("LL002".to_string(), 2)]
    );
    let src = "note = '# locklint: allow(LL002)'; r.delete(lock_key)\n";
    assert_eq!(
        run(src, Language::Python, ll002_at(1), &s),
        vec![("LL002".to_string(), 1)]
    );
}

#[test]
fn only_the_named_rules_are_silenced_and_each_unused_entry_is_reported() {
    let s = Settings::default();
    let src = "fn f() {\n    // locklint: allow(LL002, constant-lock-value)\n    con.del(&lock_key)?;\n}\n";
    let findings = vec![finding("LL002", 3, 3), finding("LL005", 3, 3)];
    let out = suppress::apply("src/x", src, Language::Rust, findings, &s);
    let got: Vec<_> = out.iter().map(|f| (f.code(), f.line)).collect();
    assert_eq!(got, vec![("LL100", 2), ("LL005", 3)]);
    assert!(
        out[0].message().to_string().contains("constant-lock-value"),
        "{}",
        out[0].message()
    );
    assert_eq!(out[0].severity, Severity::Warning);
    assert_eq!((out[0].line, out[0].column), (2, 8));
}

#[test]
fn an_unknown_rule_is_reported_with_a_suggestion() {
    let s = Settings::default();
    let src = "fn f() {\n    con.del(&lock_key)?; // locklint: allow(LL02)\n}\n";
    let out = suppress::apply("src/x", src, Language::Rust, ll002_at(2), &s);
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].code(), "LL002");
    assert_eq!(out[1].code(), "LL100");
    assert!(
        out[1]
            .message()
            .to_string()
            .contains("did you mean `LL002`?"),
        "{}",
        out[1].message()
    );
}

#[test]
fn rules_that_did_not_run_are_not_called_unused_and_ll100_can_be_ignored() {
    let src = "fn f() {\n    // locklint: allow(LL002)\n    con.del(&cache_key)?;\n}\n";
    let ignoring_ll002 = Settings {
        ignore: vec!["LL002"],
        ..Settings::default()
    };
    assert_eq!(run(src, Language::Rust, vec![], &ignoring_ll002), vec![]);
    let ignoring_ll100 = Settings {
        ignore: vec!["LL100"],
        ..Settings::default()
    };
    assert_eq!(run(src, Language::Rust, vec![], &ignoring_ll100), vec![]);
    let severity = Settings {
        severity: [("LL100", Severity::Error)].into_iter().collect(),
        ..Settings::default()
    };
    let out = suppress::apply("src/x", src, Language::Rust, vec![], &severity);
    assert_eq!(out[0].severity, Severity::Error);
    // `allow(LL100)` silences the report of a stale suppression on its line.
    let src2 = "fn f() {\n    // locklint: allow(LL100)\n    con.del(&cache_key)?; // locklint: allow(LL002)\n}\n";
    assert_eq!(
        run(src2, Language::Rust, vec![], &Settings::default()),
        vec![]
    );
}

#[test]
fn the_pipeline_applies_suppressions_and_reports_stale_ones() {
    // Through `check_source`: the LL100 of a stale suppression needs no front-end.
    let out = locklint::check_source(
        "src/cache.rs",
        gate_common::STALE_RS,
        Language::Rust,
        &Settings::default(),
    );
    let got: Vec<_> = out.iter().map(|f| (f.code(), f.line, f.column)).collect();
    assert_eq!(got, vec![("LL100", 2, 8)]);
    assert_eq!(out[0].fingerprint.len(), 16);
}

#[test]
fn real_findings_are_silenced_in_the_pipeline() {
    if !gate_common::frontend_live() {
        return;
    }
    let src = gate_common::RELEASE_RS.replace(
        "    redis::cmd(\"DEL\")",
        "    // locklint: allow(LL002) -- test\n    redis::cmd(\"DEL\")",
    );
    let before = locklint::check_source(
        "src/release.rs",
        gate_common::RELEASE_RS,
        Language::Rust,
        &Settings::default(),
    );
    assert!(before.iter().any(|f| f.code() == "LL002"), "{before:?}");
    let after =
        locklint::check_source("src/release.rs", &src, Language::Rust, &Settings::default());
    assert!(
        after
            .iter()
            .all(|f| f.code() != "LL002" && f.code() != "LL100"),
        "{after:?}"
    );
}

#[test]
fn a_real_call_split_over_lines_is_silenced_above_its_first_line() {
    if !gate_common::frontend_live() {
        return;
    }
    let src = "use redis::Commands;
const LOCK_KEY: &str = \"lock:invoice\";

pub fn release(con: &mut redis::Connection, token: &str) -> redis::RedisResult<()> {
    let _: () = redis::cmd(\"SET\").arg(LOCK_KEY).arg(token).arg(\"NX\").arg(\"PX\").arg(30000).query(con)?;
    let _: () = con
        .del(LOCK_KEY)?;
    Ok(())
}
";
    let s = Settings::default();
    let before = locklint::check_source("src/release.rs", src, Language::Rust, &s);
    let got: Vec<_> = before.iter().map(|f| (f.code(), f.line)).collect();
    assert_eq!(
        got,
        vec![("LL002", 7)],
        "the finding stands where the method name is"
    );
    let edited = src.replace(
        "    let _: () = con\n",
        "    // locklint: allow(LL002) -- test\n    let _: () = con\n",
    );
    let after = locklint::check_source("src/release.rs", &edited, Language::Rust, &s);
    assert!(after.is_empty(), "{after:?}");
}
