//! End to end through the binary: configuration files, exclusion, baselines,
//! `--changed-since` on a real git repository, `--stats`, the formats and
//! exit codes. Findings come from stale suppressions (LL100), which need no
//! front-end; the asserts on Redis findings run once the Rust front-end is
//! merged (see `gate_common::frontend_live`).

mod gate_common;

use gate_common::{git, json_findings, locklint, write, RELEASE_RS, STALE_RS, UNLOCK_LUA};
use predicates::str::contains;
use std::path::Path;

fn findings_in(dir: &Path, args: &[&str]) -> Vec<(String, String, u64)> {
    let out = locklint(dir)
        .args(["--format", "json"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.code().is_some_and(|c| c < 2),
        "exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    json_findings(&out.stdout)
}

#[test]
fn the_nearest_config_wins_and_flags_override_it() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    write(root, "locklint.toml", "[severity]\nLL100 = \"error\"\n");
    write(
        root,
        "sub/.locklint.toml",
        "ignore = [\"unused-suppression\"]\n",
    );
    write(root, "sub/src/cache.rs", STALE_RS);
    // From the root: the root config makes LL100 an error.
    locklint(root)
        .assert()
        .code(1)
        .stdout(contains("LL100"))
        .stdout(contains("unused-suppression"));
    // From sub/: its own config wins and ignores LL100.
    locklint(&root.join("sub"))
        .assert()
        .code(0)
        .stdout(contains("no findings"));
    // --no-config: defaults (a warning, which fails only with --fail-on warning).
    locklint(&root.join("sub"))
        .arg("--no-config")
        .assert()
        .code(0);
    locklint(&root.join("sub"))
        .args(["--no-config", "--fail-on", "warning"])
        .assert()
        .code(1);
    // --config FILE names one explicitly.
    locklint(&root.join("sub"))
        .args(["--config", "../locklint.toml"])
        .assert()
        .code(1);
    // CLI flags over the config: --fail-on never, --select.
    locklint(root).args(["--fail-on", "never"]).assert().code(0);
    locklint(root).args(["--select", "LL002"]).assert().code(0);
}

#[test]
fn pyproject_tool_locklint() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    write(
        root,
        "pyproject.toml",
        "[project]\nname = \"app\"\n\n[tool.locklint]\nfail-on = \"warning\"\n",
    );
    // A pyproject.toml without [tool.locklint] below it does not hide it.
    write(
        root,
        "pkg/pyproject.toml",
        "[tool.ruff]\nline-length = 100\n",
    );
    write(root, "pkg/cache.rs", STALE_RS);
    locklint(&root.join("pkg")).assert().code(1);
    locklint(&root.join("pkg"))
        .arg("--no-config")
        .assert()
        .code(0);
}

#[test]
fn config_errors_name_the_file_line_and_nearest_name() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    write(root, "cache.rs", STALE_RS);
    write(
        root,
        "locklint.toml",
        "tests = false\nselct = [\"LL002\"]\n",
    );
    locklint(root)
        .assert()
        .code(2)
        .stderr(contains("locklint.toml:2:1"))
        .stderr(contains("unknown key `selct`"))
        .stderr(contains("did you mean `select`?"));
    write(
        root,
        "locklint.toml",
        "ignore = [\n  \"LL009\",\n  \"unconditional-relase\",\n]\n",
    );
    locklint(root)
        .assert()
        .code(2)
        .stderr(contains("locklint.toml:3:"))
        .stderr(contains("did you mean `unconditional-release`?"));
    write(root, "locklint.toml", "fail-on = \"sometimes\"\n");
    locklint(root)
        .assert()
        .code(2)
        .stderr(contains("locklint.toml:1:"));
    // An unknown rule on the command line is a usage error too.
    locklint(root)
        .args(["--no-config", "--ignore", "LL02"])
        .assert()
        .code(2)
        .stderr(contains("did you mean `LL002`?"));
    // A missing --config file.
    locklint(root)
        .args(["--config", "nope.toml"])
        .assert()
        .code(2)
        .stderr(contains("nope.toml"));
}

#[test]
fn exclude_globs_prune_the_walk_but_named_files_are_read() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    for f in [
        "src/cache.rs",
        "generated/cache.rs",
        "vendor/cache.rs",
        "src/x.gen.rs",
    ] {
        write(root, f, STALE_RS);
    }
    write(
        root,
        "locklint.toml",
        "extend-exclude = [\"generated/\", \"*.gen.rs\"]\n",
    );
    let paths: Vec<String> = findings_in(root, &[]).into_iter().map(|f| f.1).collect();
    assert_eq!(paths, vec!["./src/cache.rs"]);
    // Named explicitly (pre-commit passes files): always scanned.
    let paths: Vec<String> = findings_in(root, &["generated/cache.rs", "src"])
        .into_iter()
        .map(|f| f.1)
        .collect();
    assert_eq!(paths, vec!["generated/cache.rs", "src/cache.rs"]);
    // `exclude` replaces the default list (which has vendor/).
    write(root, "locklint.toml", "exclude = [\"generated\"]\n");
    let paths: Vec<String> = findings_in(root, &[]).into_iter().map(|f| f.1).collect();
    assert_eq!(
        paths,
        vec!["./src/cache.rs", "./src/x.gen.rs", "./vendor/cache.rs"]
    );
}

#[test]
fn a_baseline_survives_unrelated_edits_and_catches_changed_lines() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    write(root, "src/cache.rs", STALE_RS);
    locklint(root)
        .args([
            "--write-baseline",
            "locklint-baseline.json",
            "--fail-on",
            "warning",
        ])
        .assert()
        .code(0)
        .stderr(contains("wrote 1 finding(s)"));
    let text = std::fs::read_to_string(root.join("locklint-baseline.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["findings"][0]["code"], "LL100");
    assert_eq!(v["findings"][0]["path"], "src/cache.rs");

    let gate = |args: &[&str]| {
        let mut all = vec![
            "--baseline",
            "locklint-baseline.json",
            "--fail-on",
            "warning",
        ];
        all.extend_from_slice(args);
        findings_in(root, &all)
    };
    assert!(gate(&[]).is_empty());
    // The path spelt differently on the command line.
    assert!(gate(&["src"]).is_empty());
    assert!(gate(&["src/cache.rs"]).is_empty());
    // Lines inserted above the finding: still in the baseline.
    write(
        root,
        "src/cache.rs",
        &format!("use std::fmt;\n\n// helpers\n{STALE_RS}"),
    );
    assert!(gate(&[]).is_empty());
    locklint(root)
        .args([
            "--baseline",
            "locklint-baseline.json",
            "--fail-on",
            "warning",
        ])
        .assert()
        .code(0);
    // The offending line changes: new again.
    let changed = STALE_RS.replace("allow(LL003)", "allow(LL004)");
    write(root, "src/cache.rs", &changed);
    assert_eq!(
        gate(&[]),
        vec![("LL100".into(), "./src/cache.rs".into(), 2)]
    );
    locklint(root)
        .args([
            "--baseline",
            "locklint-baseline.json",
            "--fail-on",
            "warning",
        ])
        .assert()
        .code(1);
    // The same finding in another file is new.
    write(root, "src/cache.rs", STALE_RS);
    write(root, "src/other.rs", STALE_RS);
    assert_eq!(
        gate(&[]),
        vec![("LL100".into(), "./src/other.rs".into(), 2)]
    );
    // A second identical finding in the same file is new too.
    write(root, "src/other.rs", "");
    write(
        root,
        "src/cache.rs",
        &format!(
            "{STALE_RS}{}",
            STALE_RS.replace("invalidate", "invalidate2")
        ),
    );
    assert_eq!(
        gate(&[]),
        vec![("LL100".into(), "./src/cache.rs".into(), 6)]
    );
    // A broken baseline is an error.
    write(root, "bad.json", "{}");
    locklint(root)
        .args(["--baseline", "bad.json"])
        .assert()
        .code(2)
        .stderr(contains("bad.json"));
}

#[test]
fn a_baseline_of_real_findings() {
    if !gate_common::frontend_live() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    write(root, "src/release.rs", RELEASE_RS);
    locklint(root).assert().code(1).stdout(contains("LL002"));
    locklint(root)
        .args(["--write-baseline", "b.json"])
        .assert()
        .code(0);
    write(
        root,
        "src/release.rs",
        &format!("// a header\n\n{RELEASE_RS}"),
    );
    locklint(root)
        .args(["--baseline", "b.json"])
        .assert()
        .code(0);
    write(
        root,
        "src/release.rs",
        &RELEASE_RS.replace(
            "redis::cmd(\"DEL\").arg(LOCK_KEY)",
            "redis::cmd(\"UNLINK\").arg(LOCK_KEY)",
        ),
    );
    let found = findings_in(root, &["--baseline", "b.json"]);
    assert!(
        found.iter().any(|f| f.0 == "LL002" && f.2 == 5),
        "{found:?}"
    );
}

#[test]
fn changed_since_reports_only_added_or_changed_lines() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    git(root, &["init", "-q"]);
    write(root, "src/old.rs", STALE_RS);
    write(root, "src/untouched.rs", STALE_RS);
    git(root, &["add", "."]);
    git(root, &["commit", "-q", "-m", "legacy"]);
    let base = git(root, &["rev-parse", "HEAD"]).trim().to_string();

    // Before any change: nothing is new.
    assert!(findings_in(root, &["--changed-since", "HEAD"]).is_empty());
    // An edit that adds a function with a stale suppression at the end of
    // old.rs, and a new untracked file.
    write(
        root,
        "src/old.rs",
        &format!(
            "{STALE_RS}\n{}",
            STALE_RS.replace("invalidate", "invalidate_all")
        ),
    );
    write(root, "src/new.rs", STALE_RS);
    let found = findings_in(root, &["--changed-since", "HEAD"]);
    assert_eq!(
        found,
        vec![
            ("LL100".into(), "./src/new.rs".into(), 2),
            ("LL100".into(), "./src/old.rs".into(), 7),
        ]
    );
    // Without the gate, everything.
    assert_eq!(findings_in(root, &[]).len(), 4);
    // Committed on a branch: the PR gate compares with the base.
    git(root, &["checkout", "-q", "-b", "feature"]);
    git(root, &["add", "."]);
    git(root, &["commit", "-q", "-m", "feature"]);
    let found = findings_in(root, &["--changed-since", &base]);
    assert_eq!(found.len(), 2, "{found:?}");
    locklint(root)
        .args(["--changed-since", &base, "--fail-on", "warning"])
        .assert()
        .code(1);
    locklint(root)
        .args(["--changed-since", "HEAD", "--fail-on", "warning"])
        .assert()
        .code(0);
    // From a sub-folder, with paths relative to it.
    let found = findings_in(&root.join("src"), &["--changed-since", &base, "."]);
    assert_eq!(
        found
            .iter()
            .map(|f| (f.1.as_str(), f.2))
            .collect::<Vec<_>>(),
        vec![("./new.rs", 2), ("./old.rs", 7)]
    );
    // A changed line of an old finding makes it reported.
    write(
        root,
        "src/untouched.rs",
        &STALE_RS.replace("-- left over", "-- still left over"),
    );
    let found = findings_in(root, &["--changed-since", "HEAD"]);
    assert_eq!(
        found,
        vec![("LL100".into(), "./src/untouched.rs".into(), 2)]
    );
    // An unknown revision is an error.
    locklint(root)
        .args(["--changed-since", "no-such-rev"])
        .assert()
        .code(2)
        .stderr(contains("unknown git revision `no-such-rev`"));
}

#[test]
fn changed_since_outside_a_repository_is_an_error() {
    let t = tempfile::tempdir().unwrap();
    write(t.path(), "a.rs", STALE_RS);
    locklint(t.path())
        .env("GIT_CEILING_DIRECTORIES", t.path().parent().unwrap())
        .args(["--changed-since", "HEAD"])
        .assert()
        .code(2)
        .stderr(contains("git repository"));
}

#[test]
fn stats_count_findings_per_rule() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    write(root, "a.rs", STALE_RS);
    write(
        root,
        "b.rs",
        &format!("{STALE_RS}// locklint: allow(LL007) -- and another\n"),
    );
    write(root, "c.rs", &STALE_RS.replace("LL003", "LL03"));
    let out = locklint(root).arg("--stats").output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.starts_with("4  LL100  unused-suppression  warning\n"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("silences nothing"),
        "--stats prints counts, not findings:\n{stdout}"
    );
    assert!(
        stdout.contains("0 errors, 4 warnings in 3 of 3 files"),
        "{stdout}"
    );
    // Machine formats keep stdout machine-readable; the table goes to stderr.
    let out = locklint(root)
        .args(["--stats", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(json_findings(&out.stdout).len(), 4);
    assert!(String::from_utf8_lossy(&out.stderr).contains("4  LL100  unused-suppression"));
}

#[test]
fn every_format_from_the_command_line() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    write(root, "src/cache.rs", STALE_RS);
    let run = |fmt: &str| {
        let out = locklint(root)
            .args(["--format", fmt, "src"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{fmt}");
        String::from_utf8(out.stdout).unwrap()
    };
    let sarif: serde_json::Value = serde_json::from_str(&run("sarif")).unwrap();
    let r = &sarif["runs"][0]["results"][0];
    assert_eq!(r["ruleId"], "LL100");
    assert_eq!(
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "src/cache.rs"
    );
    assert_eq!(
        r["locations"][0]["physicalLocation"]["region"]["startLine"],
        2
    );
    assert!(run("github").starts_with(
        "::warning file=src/cache.rs,line=2,col=8,endLine=2,endColumn=30,title=LL100 unused-suppression::"
    ));
    let gl: serde_json::Value = serde_json::from_str(&run("gitlab")).unwrap();
    assert_eq!(gl[0]["location"]["path"], "src/cache.rs");
    let rd: serde_json::Value = serde_json::from_str(&run("rdjson")).unwrap();
    assert_eq!(
        rd["diagnostics"][0]["location"]["range"]["start"]["line"],
        2
    );
    // --output FILE.
    locklint(root)
        .args(["--format", "sarif", "-o", "out.sarif"])
        .assert()
        .code(0)
        .stdout("");
    let text = std::fs::read_to_string(root.join("out.sarif")).unwrap();
    assert!(text.contains("\"version\": \"2.1.0\""));
}

#[test]
fn exit_codes() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    write(root, "a.rs", STALE_RS);
    locklint(root).assert().code(0);
    locklint(root)
        .args(["--fail-on", "warning"])
        .assert()
        .code(1);
    locklint(root)
        .args(["--fail-on", "warning", "--exit-zero"])
        .assert()
        .code(0);
    // A missing path: exit 2, the other files still reported.
    locklint(root)
        .args(["a.rs", "missing.rs", "--format", "json"])
        .assert()
        .code(2)
        .stdout(contains("LL100"))
        .stderr(contains("missing.rs"));
}

#[test]
fn rules_and_explain_know_unused_suppression() {
    let t = tempfile::tempdir().unwrap();
    locklint(t.path())
        .arg("rules")
        .assert()
        .code(0)
        .stdout(contains("LL100  unused-suppression"));
    locklint(t.path())
        .args(["rules", "--format", "json"])
        .assert()
        .stdout(contains("\"unused-suppression\""));
    locklint(t.path())
        .args(["explain", "unused-suppression"])
        .assert()
        .code(0)
        .stdout(contains("## What it does"));
    locklint(t.path())
        .args(["explain", "LL02"])
        .assert()
        .code(2)
        .stderr(contains("did you mean `LL002`?"));
}

// Real findings from the Lua front-end (LL006 in a release script).

#[test]
fn lua_finding_suppressed_in_lua_comment_syntax() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    write(root, "scripts/unlock.lua", UNLOCK_LUA);
    assert_eq!(
        findings_in(root, &[]),
        vec![("LL006".into(), "./scripts/unlock.lua".into(), 3)]
    );
    locklint(root).assert().code(1);
    // On the line above, by code, with a reason.
    write(
        root,
        "scripts/unlock.lua",
        &UNLOCK_LUA.replace(
            "return",
            "-- locklint: allow(LL006) -- the caller compares first\nreturn",
        ),
    );
    assert!(findings_in(root, &[]).is_empty());
    locklint(root).assert().code(0);
    // On the line itself, by name.
    write(
        root,
        "scripts/unlock.lua",
        &UNLOCK_LUA.replace("key)\n", "key) -- locklint: allow(unsafe-release-script)\n"),
    );
    assert!(findings_in(root, &[]).is_empty());
    // Naming another rule silences nothing: the finding stays and LL100 reports the comment.
    write(
        root,
        "scripts/unlock.lua",
        &UNLOCK_LUA.replace("key)\n", "key) -- locklint: allow(LL002)\n"),
    );
    assert_eq!(
        findings_in(root, &[]),
        vec![
            ("LL006".into(), "./scripts/unlock.lua".into(), 3),
            ("LL100".into(), "./scripts/unlock.lua".into(), 3),
        ]
    );
}

#[test]
fn lua_finding_baseline_and_changed_since() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    git(root, &["init", "-q"]);
    write(root, "scripts/unlock.lua", UNLOCK_LUA);
    git(root, &["add", "."]);
    git(root, &["commit", "-q", "-m", "legacy"]);
    locklint(root)
        .args(["--write-baseline", "baseline.json"])
        .assert()
        .code(0);
    // Lines inserted above: still known.
    write(
        root,
        "scripts/unlock.lua",
        &format!("-- Owned by the jobs team.\n-- See RUNBOOK.md.\n{UNLOCK_LUA}"),
    );
    locklint(root)
        .args(["--baseline", "baseline.json"])
        .assert()
        .code(0)
        .stderr(contains("1 more finding(s) in the baseline not shown"));
    // Not on a changed line: not reported by the review gate either.
    assert!(findings_in(root, &["--changed-since", "HEAD"]).is_empty());
    // The offending line changes: new for the baseline and for the review gate.
    write(
        root,
        "scripts/unlock.lua",
        &UNLOCK_LUA.replace("redis.call('DEL', key)", "redis.call('UNLINK', key)"),
    );
    locklint(root)
        .args(["--baseline", "baseline.json"])
        .assert()
        .code(1)
        .stdout(contains("LL006"));
    assert_eq!(
        findings_in(root, &["--changed-since", "HEAD"]),
        vec![("LL006".into(), "./scripts/unlock.lua".into(), 3)]
    );
    // SARIF of a real finding.
    let out = locklint(root).args(["--format", "sarif"]).output().unwrap();
    let sarif: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = &sarif["runs"][0]["results"][0];
    assert_eq!(r["ruleId"], "LL006");
    assert_eq!(r["level"], "error");
    assert_eq!(
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "scripts/unlock.lua"
    );
    assert_eq!(
        r["locations"][0]["physicalLocation"]["region"]["startLine"],
        3
    );
    assert_eq!(
        r["locations"][0]["physicalLocation"]["region"]["startColumn"],
        8
    );
}

#[test]
fn a_stale_suppression_is_reported_even_when_no_redis_code_is_left() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    // The DEL was replaced by a library call: no Redis keyword is left in the file.
    write(
        root,
        "src/jobs.rs",
        "pub fn finish(lock: Lock) {\n    // locklint: allow(LL002) -- janitor\n    lock.release();\n}\n",
    );
    assert_eq!(
        findings_in(root, &[]),
        vec![("LL100".into(), "./src/jobs.rs".into(), 2)]
    );
}

#[test]
fn config_keys_change_what_is_reported() {
    if !gate_common::frontend_live() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    let jobs = "use redis::Commands;\n\npub fn finish(con: &mut redis::Connection, id: u64) -> redis::RedisResult<()> {\n    con.del(format!(\"job:{id}:owner\"))\n}\n";
    write(root, "src/jobs.rs", jobs);
    write(root, "tests/release.rs", RELEASE_RS);
    let codes = |args: &[&str]| -> Vec<(String, String)> {
        findings_in(root, args)
            .into_iter()
            .map(|f| (f.0, f.1))
            .collect()
    };
    // Defaults: the key is not named like a lock; test code is not reported.
    assert!(codes(&[]).is_empty());
    // lock-key-patterns makes `job:…` a lock key.
    write(root, "locklint.toml", "lock-key-patterns = [\"^job:\"]\n");
    assert_eq!(codes(&[]), vec![("LL002".into(), "./src/jobs.rs".into())]);
    // min-redis-version = 8.4: the help offers DELEX without a script.
    write(
        root,
        "locklint.toml",
        "lock-key-patterns = [\"^job:\"]\nmin-redis-version = \"8.4\"\n",
    );
    let out = locklint(root).args(["--format", "json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["findings"][0]["help"]
        .as_str()
        .unwrap()
        .contains("8.4+ without a script"));
    // tests = true reports test code too; select/ignore by name.
    write(
        root,
        "locklint.toml",
        "tests = true\nselect = [\"unconditional-release\"]\n",
    );
    assert_eq!(
        codes(&[]),
        vec![("LL002".into(), "./tests/release.rs".into())]
    );
    write(
        root,
        "locklint.toml",
        "tests = true\nignore = [\"LL001\", \"LL002\"]\n",
    );
    assert!(codes(&[]).is_empty());
    // severity overrides the exit code.
    write(
        root,
        "locklint.toml",
        "tests = true\nselect = [\"LL002\"]\n[severity]\nLL002 = \"warning\"\n",
    );
    locklint(root).assert().code(0);
    locklint(root)
        .args(["--fail-on", "warning"])
        .assert()
        .code(1);
}

/// A Python lock taken with a constant value and released with a plain
/// DEL: one LL001 and one LL002.
const JOB_PY: &str = "import redis\nr = redis.Redis()\n\ndef job():\n    r.set(\"lock:a\", \"1\", nx=True, ex=10)\n    work()\n    r.delete(\"lock:a\")\n";

/// The report is streamed to its destination as it is rendered: what
/// `--output FILE` holds is exactly what stdout gets, in every format and
/// with the human format's `--stats` table above it.
#[test]
fn the_report_written_to_a_file_is_the_one_printed() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    write(root, "src/job.py", JOB_PY);
    // (the run's duration is the one line two runs may disagree on)
    let steady = |text: &str| -> String {
        text.lines()
            .filter(|l| !l.contains("duration_ms"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    for (fmt, extra) in [
        ("json", None),
        ("human", None),
        ("human", Some("--stats")),
        ("sarif", None),
        ("rdjson", None),
        ("github", None),
        ("gitlab", None),
    ] {
        let mut args = vec!["--format", fmt];
        args.extend(extra);
        let printed = locklint(root).args(&args).arg("src").output().unwrap();
        assert_eq!(printed.status.code(), Some(1), "{fmt} {extra:?}");
        let printed = String::from_utf8(printed.stdout).unwrap();
        assert!(
            printed.contains("LL001") && printed.contains("LL002"),
            "{fmt} {extra:?}: {printed}"
        );
        locklint(root)
            .args(&args)
            .args(["-o", "report.out", "src"])
            .assert()
            .code(1)
            .stdout("");
        let written = std::fs::read_to_string(root.join("report.out")).unwrap();
        assert_eq!(steady(&written), steady(&printed), "{fmt} {extra:?}");
    }
}

/// Runs locklint in `dir` with `args`, its stdout closed before it writes
/// (a reader that went away): the exit code and what it said on stderr.
fn run_with_closed_stdout(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_locklint"))
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // closed before the run is done: its first write fails
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A reader that stops reading (`locklint check | head`) ends the report
/// quietly: no "Broken pipe" error, and the exit code still tells of the
/// findings.
#[test]
fn a_reader_that_goes_away_is_no_error() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    write(root, "src/job.py", JOB_PY);
    for fmt in ["human", "json"] {
        let (code, err) = run_with_closed_stdout(root, &["--format", fmt, "src"]);
        assert!(
            !err.contains("Broken pipe") && !err.contains("cannot write"),
            "{fmt}: {err}"
        );
        assert_eq!(code, Some(1), "{fmt}: {err}");
    }
}

/// The other commands that print (`rules`, `explain`, `man`,
/// `completions`) end quietly too when their reader goes away: no panic
/// (`println!` panicked on a broken pipe), no error, exit 0; `--diff`
/// stops, and still exits 1 for the fixes it has.
#[test]
fn printing_commands_survive_a_reader_that_goes_away() {
    let t = tempfile::tempdir().unwrap();
    write(t.path(), "src/job.py", JOB_PY);
    let runs: [(&[&str], i32); 6] = [
        (&["rules"], 0),
        (&["rules", "--format", "json"], 0),
        (&["explain", "LL002"], 0),
        (&["man"], 0),
        (&["completions", "bash"], 0),
        (&["check", "--diff", "--unsafe-fixes", "src"], 1),
    ];
    for (args, want) in runs {
        let (code, err) = run_with_closed_stdout(t.path(), args);
        assert!(
            !err.contains("panicked") && !err.contains("Broken pipe"),
            "{args:?}: {err}"
        );
        assert_eq!(code, Some(want), "{args:?}: {err}");
    }
}
