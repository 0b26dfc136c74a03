//! What a packaged CLI is expected to offer: `--version` with the commit when
//! built from git (build.rs), `locklint completions <shell>` and
//! `locklint man`.

use assert_cmd::Command;
use std::path::Path;

fn locklint() -> Command {
    Command::cargo_bin("locklint").unwrap()
}

fn git_in_manifest(args: &[&str]) -> Option<String> {
    let out = std::process::Command::new("git")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

#[test]
fn version_names_the_commit_when_built_from_git() {
    let out = locklint().arg("--version").assert().success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let expected_start = format!("locklint {}", env!("CARGO_PKG_VERSION"));
    assert!(text.starts_with(&expected_start), "{text}");
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"))
        .canonicalize()
        .unwrap();
    let top = git_in_manifest(&["rev-parse", "--show-toplevel"])
        .and_then(|t| Path::new(&t).canonicalize().ok());
    if top.as_deref() == Some(manifest.as_path()) {
        let commit = git_in_manifest(&["log", "-1", "--format=%h %cs", "--abbrev=9"]).unwrap();
        assert_eq!(text.trim(), format!("{expected_start} ({commit})"));
    } else {
        // A build from a package (no .git of its own): the plain version.
        assert_eq!(text.trim(), expected_start);
    }
}

#[test]
fn completions_for_each_shell_name_the_subcommands_and_flags() {
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let out = locklint().args(["completions", shell]).assert().success();
        let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
        for word in ["explain", "completions", "changed-since", "fail-on"] {
            assert!(text.contains(word), "{shell}: no `{word}` in\n{text}");
        }
    }
    // The bash script is valid bash and registers a completion for locklint.
    let script = locklint()
        .args(["completions", "bash"])
        .output()
        .unwrap()
        .stdout;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("locklint.bash");
    std::fs::write(&file, &script).unwrap();
    let check = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "source '{}' && complete -p locklint",
            file.display()
        ))
        .output();
    if let Ok(out) = check {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("locklint"));
    }
    locklint()
        .args(["completions", "tcsh"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("possible values"));
}

#[test]
fn man_page_is_roff_with_the_commands_and_options() {
    let out = locklint().arg("man").assert().success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(text.contains(".TH locklint 1"), "{text}");
    assert!(text.contains(".SH NAME"), "{text}");
    assert!(text.contains(".SH SYNOPSIS"), "{text}");
    assert!(text.contains("Redis"), "{text}");
    // roff escapes the dashes of options.
    assert!(text.contains(r"\-\-changed\-since"), "{text}");
    assert!(text.contains("explain"), "{text}");
}
