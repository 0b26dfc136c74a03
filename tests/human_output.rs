//! Snapshot tests of what a user reads: the human diagnostics (no colour)
//! and the `explain` page. A wording change is a reviewed snapshot diff.

use assert_cmd::Command;

fn locklint(args: &[&str]) -> String {
    let out = Command::cargo_bin("locklint")
        .unwrap()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn unconditional_release_in_rust() {
    insta::assert_snapshot!(locklint(&[
        "check",
        "--color",
        "never",
        "--no-config",
        "fixtures/rust/ll002_bad_fred_del_after_work.rs"
    ]));
}

#[test]
fn transactional_setnx_then_expire_in_rust() {
    insta::assert_snapshot!(locklint(&[
        "check",
        "--color",
        "never",
        "--no-config",
        "fixtures/rust/ll003_bad_atomic_pipeline.rs"
    ]));
}

#[test]
fn delex_offered_from_redis_8_4() {
    let out = locklint(&[
        "check",
        "--color",
        "never",
        "--no-config",
        "--min-redis-version",
        "8.4",
        "fixtures/rust/ll002_bad_fred_del_after_work.rs",
    ]);
    assert!(
        out.contains("on Redis 8.4+ without a script: DELEX key IFEQ <token>"),
        "{out}"
    );
}

#[test]
fn explain_prints_the_rule_documentation() {
    let by_code = locklint(&["explain", "LL002"]);
    let by_name = locklint(&["explain", "unconditional-release"]);
    assert_eq!(by_code, by_name);
    insta::assert_snapshot!(by_code);
}
