//! Every file under `fixtures/` declares the exact findings it must produce
//! in a comment line `locklint-expect: LL002@12:9 LL001@5:13` (or
//! `locklint-expect: none`). This test runs the whole pipeline on each file
//! and compares the exact set of (code, line, column).

mod expect;
use locklint::facts::Language;

use locklint::{check_source, Settings};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn fixture_files(dir: &Path, out: &mut Vec<PathBuf>) {
    // fixtures/project/<case>/ are whole projects: tests/project.rs
    expect::source_files(dir, &["project"], out);
}

fn expected(src: &str, path: &Path) -> BTreeSet<(String, usize, usize)> {
    expect::declared(src, path)
}

#[test]
fn every_fixture_reports_exactly_what_it_declares() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut files = Vec::new();
    fixture_files(&root, &mut files);
    assert!(!files.is_empty(), "no fixtures found");
    let settings = Settings::default();
    let mut failures = Vec::new();
    for path in &files {
        let bytes = std::fs::read(path).unwrap();
        let src = String::from_utf8_lossy(&bytes).into_owned();
        let want = expected(&src, path);
        let rel = path.strip_prefix(&root).unwrap().display().to_string();
        let lang = Language::from_path(path).unwrap();
        let got: BTreeSet<(String, usize, usize)> = check_source(&rel, &src, lang, &settings)
            .into_iter()
            .map(|f| (f.code().to_string(), f.line as usize, f.column as usize))
            .collect();
        if got != want {
            failures.push(format!("{rel}:\n  expected {want:?}\n  got      {got:?}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} fixtures differ:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

/// Each rule that a language covers has bad fixtures (that produce it) and
/// good fixtures (named `*good*`, producing nothing) in that language.
#[test]
fn bad_fixtures_fire_and_good_fixtures_are_silent_by_name() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut files = Vec::new();
    fixture_files(&root, &mut files);
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let src = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
        let want = expected(&src, &path);
        if name.contains("good") {
            assert!(
                want.is_empty(),
                "{} is a good fixture but expects findings",
                path.display()
            );
        }
        if name.contains("bad") {
            assert!(
                !want.is_empty(),
                "{} is a bad fixture but expects nothing",
                path.display()
            );
        }
    }
}
