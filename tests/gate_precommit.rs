//! The pre-commit hook end to end with the real `pre-commit` tool (from
//! PyPI; `.ci/run` installs it), without a Rust toolchain in the hook: the
//! hook repository users name is `packaging/pre-commit/` (published as its
//! own repository), a `language: python` hook whose package pins the
//! `locklint` wheel. A temporary git repository gets the README's
//! configuration lines (only the URL points at a local copy of that folder,
//! tagged with the README's `rev`), and `pre-commit run` installs the wheel
//! `.ci/run` built (PIP_FIND_LINKS, PIP_NO_INDEX: no network) and fails on a
//! staged file with a finding, passes on a clean one.

mod gate_common;

use gate_common::{git, readme_block, tools_required, wheel_dir, write, yaml_json, UNLOCK_LUA};
use std::path::Path;
use std::process::Command;

const MIRROR_URL: &str = "https://github.com/locklint/locklint-pre-commit";

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

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn readme_config() -> String {
    let readme = std::fs::read_to_string(manifest().join("README.md")).unwrap();
    readme_block(&readme, &format!("- repo: {MIRROR_URL}"))
        .expect("the README has the pre-commit lines for the hook repository")
}

fn run_hooks(repo: &Path, home: &Path, wheels: &Path) -> (i32, String) {
    let out = pre_commit()
        .expect("pre-commit is available")
        .current_dir(repo)
        .args(["run", "--color", "never"])
        .env("PRE_COMMIT_HOME", home)
        .env("PIP_NO_INDEX", "1")
        .env("PIP_FIND_LINKS", wheels)
        .env("NO_COLOR", "1")
        .output()
        .expect("pre-commit runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn the_python_hook_fails_on_a_staged_finding_and_passes_on_a_clean_file() {
    let Some(wheels) = wheel_dir() else { return };
    if pre_commit().is_none() {
        assert!(
            !tools_required(),
            "`pre-commit` is not on PATH: .ci/run installs it with `pip install pre-commit`"
        );
        eprintln!("skipped: `pre-commit` is not installed (pip install pre-commit)");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // The hook repository: packaging/pre-commit/ as its own git repository,
    // tagged with the version the README's `rev:` names.
    let mirror = tmp.path().join("locklint-pre-commit");
    std::fs::create_dir(&mirror).unwrap();
    for name in [".pre-commit-hooks.yaml", "pyproject.toml", "README.md"] {
        std::fs::copy(
            manifest().join("packaging/pre-commit").join(name),
            mirror.join(name),
        )
        .unwrap();
    }
    git(&mirror, &["init", "-q"]);
    git(&mirror, &["add", "."]);
    git(&mirror, &["commit", "-q", "-m", "hook"]);
    let tag = format!("v{}", env!("CARGO_PKG_VERSION"));
    git(&mirror, &["tag", &tag]);

    let config = readme_config();
    assert!(
        config.contains(&format!("rev: {tag}\n")),
        "the README's rev is not {tag}:\n{config}"
    );
    assert_eq!(config.lines().count(), 3, "three lines:\n{config}");
    let config = format!(
        "repos:\n{}",
        config.replace(MIRROR_URL, mirror.to_str().unwrap())
    );

    let repo = tmp.path().join("app");
    let home = tmp.path().join("pre-commit-home");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    write(&repo, ".pre-commit-config.yaml", &config);
    write(&repo, "README.md", "# app\n");
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "init"]);

    // A staged Lua release script that deletes without comparing: LL006.
    write(&repo, "scripts/unlock.lua", UNLOCK_LUA);
    git(&repo, &["add", "scripts/unlock.lua"]);
    let (code, out) = run_hooks(&repo, &home, &wheels);
    assert_eq!(code, 1, "the hook must fail on a finding:\n{out}");
    assert!(
        out.contains("LL006"),
        "no LL006 in the hook's output:\n{out}"
    );
    assert!(out.contains("scripts/unlock.lua"), "{out}");
    assert!(out.contains("Failed"), "{out}");

    // Fixed, with an unrelated file staged beside it.
    write(
        &repo,
        "scripts/unlock.lua",
        "-- Releases the job lock if this caller still holds it.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
",
    );
    write(&repo, "notes.txt", "DEL lock:x is fine in prose\n");
    git(&repo, &["add", "scripts/unlock.lua", "notes.txt"]);
    let (code, out) = run_hooks(&repo, &home, &wheels);
    assert_eq!(code, 0, "the hook must pass on clean files:\n{out}");
    assert!(out.contains("Passed"), "{out}");
}

/// The hook package pins this version of the wheel, and the hook built from
/// source (the root `.pre-commit-hooks.yaml`) is the same hook but for its
/// language.
#[test]
fn the_hook_definitions_agree_and_pin_this_version() {
    let version = env!("CARGO_PKG_VERSION");
    let py =
        std::fs::read_to_string(manifest().join("packaging/pre-commit/pyproject.toml")).unwrap();
    let py: toml::Table = toml::from_str(&py).unwrap();
    assert_eq!(py["project"]["version"].as_str(), Some(version));
    let deps = py["project"]["dependencies"].as_array().unwrap();
    assert_eq!(deps.len(), 1);
    assert_eq!(
        deps[0].as_str(),
        Some(format!("locklint=={version}").as_str())
    );

    let (Some(wheel_hook), Some(rust_hook)) = (
        yaml_json(&manifest().join("packaging/pre-commit/.pre-commit-hooks.yaml")),
        yaml_json(&manifest().join(".pre-commit-hooks.yaml")),
    ) else {
        assert!(!tools_required(), "python3 with PyYAML is needed");
        return;
    };
    let (mut a, mut b) = (wheel_hook[0].clone(), rust_hook[0].clone());
    assert_eq!(a["language"], "python");
    assert_eq!(b["language"], "rust");
    a["language"] = serde_json::Value::Null;
    b["language"] = serde_json::Value::Null;
    assert_eq!(
        a, b,
        "the two hook definitions differ beyond their language"
    );
}
