//! The pre-commit hook end to end with the real `pre-commit` tool (from
//! PyPI; `.ci/run` installs it): `pre-commit try-repo` of this repository on
//! a temporary git repository fails with the finding on a bad staged file
//! and passes on a good one. The hook is built by pre-commit itself
//! (`language: rust` → `cargo install --path .`); the build reuses
//! `target/pre-commit-build` and skips optimisation to stay quick.

mod gate_common;

use gate_common::{git, tools_required, write, STALE_RS, UNLOCK_LUA};
use locklint::facts::Language;
use std::path::Path;
use std::process::Command;

/// `pre-commit`, or `python3 -m pre_commit` when pip put no script on PATH.
fn pre_commit() -> Option<Command> {
    let candidates: [(&str, &[&str]); 2] =
        [("pre-commit", &[]), ("python3", &["-m", "pre_commit"])];
    for (program, pre) in candidates {
        let works = Command::new(program)
            .args(pre)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if works {
            let mut c = Command::new(program);
            c.args(pre);
            return Some(c);
        }
    }
    None
}

fn try_repo(repo: &Path, home: &Path) -> (bool, String) {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = pre_commit()
        .expect("pre-commit is available")
        .current_dir(repo)
        .args([
            "try-repo",
            manifest.to_str().unwrap(),
            "locklint",
            "--color",
            "never",
        ])
        .env("PRE_COMMIT_HOME", home)
        .env(
            "CARGO_TARGET_DIR",
            manifest.join("target").join("pre-commit-build"),
        )
        .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "0")
        .env("CARGO_PROFILE_RELEASE_DEBUG", "false")
        .env("CARGO_PROFILE_RELEASE_INCREMENTAL", "true")
        .env("NO_COLOR", "1")
        .output()
        .expect("pre-commit runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn pre_commit_try_repo_fails_on_a_bad_file_and_passes_on_a_good_one() {
    if pre_commit().is_none() {
        assert!(
            !tools_required(),
            "`pre-commit` is not on PATH: .ci/run installs it with `pip install pre-commit`"
        );
        eprintln!("skipped: `pre-commit` is not installed (pip install pre-commit)");
        return;
    }
    let repo = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let root = repo.path();
    git(root, &["init", "-q"]);
    write(root, "README.md", "# app\n");
    git(root, &["add", "README.md"]);
    git(root, &["commit", "-q", "-m", "init"]);

    // The bad file: a Lua release script that deletes without comparing
    // (LL006, an error). Should the Lua front-end ever yield nothing, a
    // stale suppression made an error by the project's config stands in.
    let lua_live = locklint::check_source(
        "scripts/unlock.lua",
        UNLOCK_LUA,
        Language::Lua,
        &locklint::Settings::default(),
    )
    .iter()
    .any(|f| f.code == "LL006");
    let (bad_path, bad, code) = if lua_live {
        ("scripts/unlock.lua", UNLOCK_LUA.to_string(), "LL006")
    } else {
        eprintln!("note: the Lua front-end yields no LL006; using a stale suppression");
        write(root, "locklint.toml", "[severity]\nLL100 = \"error\"\n");
        git(root, &["add", "locklint.toml"]);
        ("src/cache.rs", STALE_RS.to_string(), "LL100")
    };
    write(root, bad_path, &bad);
    git(root, &["add", bad_path]);
    let (ok, out) = try_repo(root, home.path());
    assert!(!ok, "the hook passed on a bad file:\n{out}");
    assert!(out.contains(code), "no {code} in the hook's output:\n{out}");
    assert!(
        out.contains(bad_path),
        "the hook does not name {bad_path}:\n{out}"
    );

    // The good file: fixed (and an unrelated file staged beside it).
    let good = if code == "LL006" {
        "-- Releases the job lock if this caller still holds it.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"
        .to_string()
    } else {
        STALE_RS.replace(
            "    // locklint: allow(LL003) -- left over from an old SETNX\n",
            "",
        )
    };
    write(root, bad_path, &good);
    write(root, "notes.txt", "DEL lock:x is fine in prose\n");
    git(root, &["add", bad_path, "notes.txt"]);
    let (ok, out) = try_repo(root, home.path());
    assert!(ok, "the hook failed on a good file:\n{out}");
    assert!(out.contains("Passed"), "{out}");
}
