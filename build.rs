//! Sets `LOCKLINT_VERSION` for `locklint --version`: the package version,
//! followed by the commit and its date when this crate is built from its own
//! git checkout ("0.1.0 (6a26a6f1c 2026-12-01)"). A build from a crates.io
//! package or a wheel's sdist has no `.git` of its own and gets the plain
//! version; so does a build where `git` is missing or fails.

use std::path::{Path, PathBuf};
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

/// The commit and date, only when the manifest folder is the top of a git
/// work tree (not when an unpacked package sits inside someone else's repo).
fn commit(manifest: &Path) -> Option<String> {
    let top = PathBuf::from(git(manifest, &["rev-parse", "--show-toplevel"])?);
    let same = match (top.canonicalize(), manifest.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if !same {
        return None;
    }
    // Rebuild when HEAD moves: the HEAD file, the branch it names, packed
    // refs (only files that exist: cargo reruns every time for a missing one).
    let mut watch = vec!["HEAD".to_string(), "packed-refs".to_string()];
    watch.extend(git(manifest, &["symbolic-ref", "-q", "HEAD"]));
    for name in &watch {
        if let Some(p) = git(manifest, &["rev-parse", "--git-path", name]) {
            let p = manifest.join(p);
            if p.is_file() {
                println!("cargo:rerun-if-changed={}", p.display());
            }
        }
    }
    git(
        manifest,
        &[
            "log",
            "-1",
            "--no-show-signature",
            "--format=%h %cs",
            "--abbrev=9",
        ],
    )
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let full = match commit(&manifest) {
        Some(c) => format!("{version} ({c})"),
        None => version,
    };
    println!("cargo:rustc-env=LOCKLINT_VERSION={full}");
}
