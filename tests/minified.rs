//! Minified JavaScript/TypeScript (issue 9, `src/minified.rs`): a bundle
//! met in a folder walk is skipped with a note (`-v`) and counted
//! (`--stats`); `--include-minified` or the config's `include-minified`
//! scans it; a file named on the command line is always scanned (one over
//! 256 KiB in reduced mode: its calls of other functions not followed); a
//! hand-written file with a long line is never taken for minified.

#[path = "gate_common/mod.rs"]
mod gate_common;

use gate_common::{
    cache_keeps_modes_apart, findings_without_cache as findings, json_findings, locklint,
    machine_written_caller_needs, write, JOBS_WRAPPER_TS,
};
use std::path::Path;

/// One line of dense generated code of about `bytes` bytes around `code`,
/// after a licence comment: the shape a minifier writes.
fn minified_line(code: &str, bytes: usize) -> String {
    let filler = "var q=function(a,b){return a*b+1},r=q(2,3);";
    let half = filler.repeat(bytes / 2 / filler.len());
    format!("/*! app v1.0.0 | MIT */\n{half}{code}{half}\n")
}

/// A bundled copy of `fixtures/javascript/ll002_bad_del.js`: the release
/// is a plain DEL of the key the class takes with a token.
const BUNDLED_DEFECT: &str = "class JobLock{async lock(j){this.token=crypto.randomUUID();return redis.set(\"job:lock:\"+j,this.token,\"NX\",\"EX\",30)}async unlock(j){await redis.del(\"job:lock:\"+j)}}";

fn bundle() -> String {
    minified_line(BUNDLED_DEFECT, 64 * 1024)
}

fn ll002_in(found: &[(String, String, u64)], path: &str) -> bool {
    found
        .iter()
        .any(|(code, p, line)| code == "LL002" && p.ends_with(path) && *line == 2)
}

#[test]
fn a_walked_bundle_is_skipped_with_a_note_and_counted() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    write(root, "dist/app.js", &bundle());
    assert!(findings(root, &["."]).is_empty());
    // -v names it and says why (machine formats: on stderr)
    let out = locklint(root)
        .args(["--format", "json", "--no-cache", "-v", "."])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("note: ./dist/app.js: skipped as minified (")
            && stderr.contains("bytes are on lines of code over 1000 bytes")
            && stderr.contains("--include-minified"),
        "{stderr}"
    );
    // the human format prints the note on stdout
    let out = locklint(root).args(["--no-cache", "-v"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("note: ./dist/app.js: skipped as minified"),
        "{stdout}"
    );
    // without -v, no note
    let out = locklint(root).args(["--no-cache"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&out.stdout).contains("minified"));
    // --stats counts it, in the table (human) or on stderr (machine formats)
    let out = locklint(root)
        .args(["--no-cache", "--stats"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("1 minified file(s) skipped"), "{stdout}");
    let out = locklint(root)
        .args(["--no-cache", "--stats", "--format", "json"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("1 minified file(s) skipped"));
    assert!(json_findings(&out.stdout).is_empty());
}

#[test]
fn include_minified_scans_the_bundle() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    write(root, "dist/app.js", &bundle());
    assert!(ll002_in(
        &findings(root, &["--include-minified", "."]),
        "dist/app.js"
    ));
    // the same from the configuration
    write(root, "locklint.toml", "include-minified = true\n");
    assert!(ll002_in(&findings(root, &["."]), "dist/app.js"));
    write(root, "locklint.toml", "include-minified = false\n");
    assert!(findings(root, &["."]).is_empty());
    // a misspelt key is an error that names the right one
    write(root, "locklint.toml", "include-minifed = true\n");
    locklint(root)
        .arg(".")
        .assert()
        .code(2)
        .stderr(predicates::str::contains("include-minified"));
}

#[test]
fn a_bundle_read_only_for_its_calls_is_skipped_too() {
    // no Redis word in the bundle: the prefilter rejects it, and the
    // call-name scan would read it for its calls of the project's wrapper
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    write(root, "src/jobs.ts", JOBS_WRAPPER_TS);
    write(
        root,
        "dist/calls.js",
        &minified_line(
            "async function h(i){const k=\"job:\"+i;if(await jobs.grabJob(k,\"1\",5e3)){try{await w(i)}finally{await jobs.dropJob(k)}}}",
            64 * 1024,
        ),
    );
    machine_written_caller_needs(root, "dist/calls.js", 2, "--include-minified", "minified");
}

#[test]
fn a_named_bundle_is_scanned_in_full() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    write(root, "dist/app.js", &bundle());
    write(root, "dist/vendor.min.js", &bundle());
    let found = findings(root, &["dist/app.js", "dist/vendor.min.js"]);
    assert!(ll002_in(&found, "dist/app.js"), "{found:?}");
    assert!(ll002_in(&found, "dist/vendor.min.js"), "{found:?}");
    // its folder walked: both skipped
    let out = locklint(root)
        .args(["--no-cache", "--stats", "dist"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("2 minified file(s) skipped"),
        "{out:?}"
    );
}

#[test]
fn a_large_bundle_is_scanned_in_reduced_mode() {
    // over 256 KiB: its own ops are all checked, its calls of the
    // project's wrappers are not followed; a note and a count say so
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    write(root, "src/jobs.ts", JOBS_WRAPPER_TS);
    let calls = "async function h(i){const k=\"job:\"+i;if(await jobs.grabJob(k,\"1\",5e3)){try{await w(i)}finally{await jobs.dropJob(k)}}}";
    write(root, "dist/small.js", &minified_line(calls, 64 * 1024));
    write(root, "dist/large.js", &minified_line(calls, 300 * 1024));
    write(
        root,
        "dist/vendor.js",
        &minified_line(BUNDLED_DEFECT, 300 * 1024),
    );
    let named = [
        "dist/small.js",
        "dist/large.js",
        "dist/vendor.js",
        "src/jobs.ts",
    ];
    let found = findings(root, &named);
    // the large bundle's own defect is found as in a small one
    assert!(ll002_in(&found, "dist/vendor.js"), "{found:?}");
    // the wrapper call is followed from the small bundle only
    let ll001_at = |path: &str| {
        found
            .iter()
            .any(|(c, p, l)| c == "LL001" && p.ends_with(path) && *l == 2)
    };
    assert!(ll001_at("dist/small.js"), "{found:?}");
    assert!(!ll001_at("dist/large.js"), "{found:?}");
    // the same with the cache, cold and warm
    for _ in 0..2 {
        let out = locklint(root)
            .args(["--format", "json", "--exit-zero"])
            .args(named)
            .output()
            .unwrap();
        assert_eq!(gate_common::json_findings(&out.stdout), found);
    }
    // `-v` names both large bundles, `--stats` counts them
    let out = locklint(root)
        .args(["--no-cache", "-v", "--stats", "--exit-zero"])
        .args(named)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    for f in ["dist/large.js", "dist/vendor.js"] {
        assert!(
            text.contains(&format!("{f}: {}", locklint::minified::REDUCED_NOTE)),
            "{text}"
        );
    }
    assert!(!text.contains(&format!(
        "dist/small.js: {}",
        locklint::minified::REDUCED_NOTE
    )));
    assert!(
        text.contains("2 minified file(s) scanned in reduced mode"),
        "{text}"
    );
}

#[test]
fn a_hand_written_file_with_a_long_line_is_scanned() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    // fixtures/javascript/ll002_bad_del.js with a 60 KB inline icon on one line
    let icon = format!(
        "const ICON = \"data:image/svg+xml;base64,{}\";\n",
        "PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciLz4".repeat(1_100)
    );
    let fixture = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/javascript/ll002_bad_del.js"),
    )
    .unwrap();
    let text = format!("{fixture}{icon}");
    assert!(text.len() > 60_000);
    write(root, "src/lock.js", &text);
    let found = findings(root, &["."]);
    assert!(
        found
            .iter()
            .any(|(c, p, l)| c == "LL002" && p.ends_with("src/lock.js") && *l == 14),
        "{found:?}"
    );
    let out = locklint(root)
        .args(["--no-cache", "--stats", "-v", "."])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stdout).contains("minified"));
}

#[test]
fn the_cache_keeps_each_mode_apart() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    std::fs::create_dir(root.join(".git")).unwrap();
    write(root, "dist/app.js", &bundle());
    cache_keeps_modes_apart(
        root,
        "dist/app.js",
        2,
        "--include-minified",
        "minified",
        &[],
    );
}

#[test]
fn no_fixture_is_taken_for_minified() {
    let fixtures = gate_common::fixture_files();
    for (p, lang, bytes) in &fixtures {
        assert_eq!(
            locklint::minified::detect(p, *lang, bytes),
            None,
            "{}",
            p.display()
        );
        // nor by its shape alone, at whatever size
        assert_eq!(locklint::minified::shape(bytes), None, "{}", p.display());
    }
    assert!(fixtures.len() > 500, "{} fixtures", fixtures.len());
}
