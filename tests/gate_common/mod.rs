//! Helpers shared by the `cli_*` and `gate_*` integration tests.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

/// A Rust file with one stale suppression (LL100 on line 2, column 8) and
/// a cache invalidation that no rule flags, with or without front-ends.
pub const STALE_RS: &str =
    "pub fn invalidate(con: &mut redis::Connection, id: u64) -> redis::RedisResult<()> {
    // locklint: allow(LL003) -- left over from an old SETNX
    con.del(format!(\"cache:user:{id}\"))
}
";

/// A Rust release of a lock with a plain DEL: LL002 at line 5, column 17
/// once the Rust front-end is merged.
pub const RELEASE_RS: &str = "const LOCK_KEY: &str = \"lock:invoice\";

pub fn release(con: &mut redis::Connection) -> redis::RedisResult<()> {
    let _: () = redis::cmd(\"SET\").arg(LOCK_KEY).arg(\"1\").arg(\"NX\").arg(\"PX\").arg(30000).query(con)?;
    redis::cmd(\"DEL\").arg(LOCK_KEY).query(con)
}
";

/// True once a front-end produces findings for [`RELEASE_RS`]: the asserts
/// that need real findings run only then (they start passing when the Rust
/// front-end lands on main).
pub fn frontend_live() -> bool {
    let live = !locklint::check_source(
        "src/release.rs",
        RELEASE_RS,
        locklint::facts::Language::Rust,
        &locklint::Settings::default(),
    )
    .is_empty();
    if !live {
        eprintln!(
            "note: the Rust front-end yields no findings yet; asserts on real findings skipped"
        );
    }
    live
}

/// Whether a missing external tool must fail the test (in CI) or skip it.
pub fn tools_required() -> bool {
    let on = |v: &str| std::env::var(v).is_ok_and(|s| s == "true" || s == "1");
    on("CI") || on("LOCKLINT_REQUIRE_TOOLS")
}

/// Runs git in `dir` with a fixed identity; panics with its stderr on failure.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args([
            "-c",
            "user.name=locklint-test",
            "-c",
            "user.email=test@example.invalid",
        ])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The locklint binary, run in `dir`, without colour and without any
/// config from the folders above the temporary directory.
pub fn locklint(dir: &Path) -> assert_cmd::Command {
    let mut c = assert_cmd::Command::cargo_bin("locklint").expect("binary builds");
    c.current_dir(dir).env("NO_COLOR", "1");
    c
}

pub fn write(dir: &Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(p, text).unwrap();
}

/// Parses stdout as the JSON report and returns (code, path, line) per finding.
pub fn json_findings(stdout: &[u8]) -> Vec<(String, String, u64)> {
    let v: serde_json::Value = serde_json::from_slice(stdout).expect("JSON report");
    v["findings"]
        .as_array()
        .expect("findings array")
        .iter()
        .map(|f| {
            (
                f["code"].as_str().unwrap().to_string(),
                f["path"].as_str().unwrap().to_string(),
                f["line"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// A Lua release script that deletes without comparing: LL006 at line 3,
/// column 8 (the Lua front-end is on main).
pub const UNLOCK_LUA: &str = "-- Releases the job lock.
local key = KEYS[1]
return redis.call('DEL', key)
";

// --- packaging (issue 10): helpers for tests/gate_action.rs and tests/gate_precommit.rs ---

/// A YAML file as JSON, read by python3 with PyYAML (which `pre-commit`
/// brings along); None when that is not available.
pub fn yaml_json(path: &Path) -> Option<serde_json::Value> {
    let out = Command::new("python3")
        .args([
            "-c",
            "import json, sys, yaml; json.dump(yaml.safe_load(open(sys.argv[1])), sys.stdout)",
        ])
        .arg(path)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    serde_json::from_slice(&out.stdout).ok()
}

/// The folder `.ci/run` put the locklint wheel in (LOCKLINT_WHEEL_DIR, with
/// the build requirements pip needs offline), when it has one and python3
/// has PyYAML; otherwise None (the test skips, or fails in CI).
pub fn wheel_dir() -> Option<std::path::PathBuf> {
    let dir = std::env::var_os("LOCKLINT_WHEEL_DIR").map(std::path::PathBuf::from);
    let has_wheel = dir.as_ref().is_some_and(|d| {
        std::fs::read_dir(d).is_ok_and(|it| {
            it.flatten().any(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                n.starts_with("locklint-") && n.ends_with(".whl")
            })
        })
    });
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    if has_wheel && yaml_json(&manifest.join("action.yml")).is_some() {
        return dir;
    }
    assert!(
        !tools_required(),
        "LOCKLINT_WHEEL_DIR must name a folder with the locklint wheel and python3 needs PyYAML (.ci/run sets both up)"
    );
    eprintln!("skipped: no LOCKLINT_WHEEL_DIR with a locklint wheel (bash .ci/run builds one)");
    None
}

/// The fenced code block of `markdown` whose first line is `first_line`
/// (without the fences).
pub fn readme_block(markdown: &str, first_line: &str) -> Option<String> {
    let mut lines = markdown.lines();
    while let Some(l) = lines.next() {
        if !l.starts_with("```") {
            continue;
        }
        let body: Vec<&str> = lines
            .by_ref()
            .take_while(|l| !l.starts_with("```"))
            .collect();
        if body.first().is_some_and(|f| f.trim() == first_line) {
            return Some(body.join("\n") + "\n");
        }
    }
    None
}
// --- end packaging ---

/// A TypeScript wrapper (`src/jobs.ts`) whose `grabJob` and `dropJob` take
/// and release a lock on the caller's key with the caller's value.
pub const JOBS_WRAPPER_TS: &str = "import Redis from \"ioredis\";
export class Jobs {
  constructor(private redis: Redis) {}
  async grabJob(key: string, value: string, ms: number) {
    return this.redis.set(key, value, \"PX\", ms, \"NX\");
  }
  async dropJob(key: string) {
    return this.redis.del(key);
  }
}
";

/// With [`JOBS_WRAPPER_TS`] at `src/jobs.ts` and a machine-written caller
/// of it at `caller` (both written by the test; the caller has no Redis
/// word, so only the call-name scan would read it): its LL001 at `line` is
/// found with `include` (`--include-minified`, `--include-generated`), and
/// without it the caller is skipped with the note `skipped as {kind}`.
pub fn machine_written_caller_needs(
    root: &Path,
    caller: &str,
    line: u64,
    include: &str,
    kind: &str,
) {
    let run = |args: &[&str]| {
        locklint(root)
            .args(["--format", "json", "--exit-zero", "--no-cache"])
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&[include, "."]);
    let found = json_findings(&out.stdout);
    assert!(
        found
            .iter()
            .any(|(c, p, l)| c == "LL001" && p.ends_with(caller) && *l == line),
        "{found:?}"
    );
    let out = run(&["-v", "."]);
    let found = json_findings(&out.stdout);
    assert!(!found.iter().any(|f| f.1.ends_with(caller)), "{found:?}");
    let note = format!("note: ./{caller}: skipped as {kind}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&note),
        "{out:?}"
    );
}

/// Every file of `fixtures/` in a language locklint reads: its path,
/// language and bytes.
pub fn fixture_files() -> Vec<(std::path::PathBuf, locklint::facts::Language, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if let Some(lang) = locklint::facts::Language::from_path(&p) {
                let bytes = std::fs::read(&p).unwrap();
                out.push((p, lang, bytes));
            }
        }
    }
    out
}

/// In a project at `root` (with a `.git`: the cache is on) whose
/// machine-written file `path` has an LL002 at `line`: cold and warm runs
/// skip it with the note `skipped as {kind}`; `include` scans it, from the
/// cache too; each of `others` (another kind's setting) leaves it skipped;
/// a run naming it scans it; a walk after each skips it again.
pub fn cache_keeps_modes_apart(
    root: &Path,
    path: &str,
    line: u64,
    include: &str,
    kind: &str,
    others: &[&str],
) {
    let run = |args: &[&str]| {
        let out = locklint(root)
            .args(["--format", "json", "--exit-zero", "-v"])
            .args(args)
            .output()
            .unwrap();
        let found = json_findings(&out.stdout);
        let noted = String::from_utf8_lossy(&out.stderr).contains(&format!("skipped as {kind}"));
        (found, noted)
    };
    let ll002 = |found: &[(String, String, u64)]| {
        found
            .iter()
            .any(|(c, p, l)| c == "LL002" && p.ends_with(path) && *l == line)
    };
    let skipped = |args: &[&str]| {
        let (found, noted) = run(args);
        assert!(found.is_empty() && noted, "{args:?}: {found:?}");
    };
    let scanned = |args: &[&str]| {
        let (found, noted) = run(args);
        assert!(ll002(&found) && !noted, "{args:?}: {found:?}");
    };
    // cold, warm (the file unread), scanned, then skipped again
    skipped(&["."]);
    skipped(&["."]);
    scanned(&[include, "."]);
    scanned(&[include, "."]);
    skipped(&["."]);
    for other in others {
        skipped(&[other, "."]);
    }
    // named, from the same cache
    scanned(&[path]);
    skipped(&["."]);
}

/// The findings of a JSON run with `args` in `dir`, without the cache
/// (exit 0 asserted: `--exit-zero`).
pub fn findings_without_cache(dir: &Path, args: &[&str]) -> Vec<(String, String, u64)> {
    let out = locklint(dir)
        .args(["--format", "json", "--exit-zero", "--no-cache"])
        .args(args)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    json_findings(&out.stdout)
}
