//! Every finding of every bundled bad fixture can be silenced by a
//! `locklint: allow(CODE)` comment on the line above it, in the file's own
//! comment syntax (for a line of a Lua script embedded in a string, Lua's
//! `--`), without the suppression being reported as unused. Where the line
//! above ends with a shell continuation `\\`, a comment cannot go between
//! the two: it goes above the statement's first line.

use locklint::facts::Language;
use locklint::{check_source, Settings};
use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = rd.map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files(&p, out);
        } else if Language::from_path(&p).is_some() {
            out.push(p);
        }
    }
}

fn comment_openers(lang: Language) -> &'static [&'static str] {
    match lang {
        Language::Python | Language::Ruby | Language::Shell | Language::Redis => &["#", "--"],
        Language::Lua => &["--"],
        Language::Php => &["//", "#", "--"],
        _ => &["//", "--"],
    }
}

#[test]
fn every_fixture_finding_can_be_suppressed_on_the_line_above() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut all = Vec::new();
    files(&root, &mut all);
    let settings = Settings::default();
    let mut checked = 0;
    let mut failures = Vec::new();
    for path in all
        .iter()
        .filter(|p| p.file_name().unwrap().to_string_lossy().contains("_bad_"))
    {
        let lang = Language::from_path(path).unwrap();
        let src = std::fs::read_to_string(path).unwrap();
        let display = path
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let before = check_source(&display, &src, lang, &settings);
        for f in &before {
            let lines: Vec<&str> = src.split_inclusive('\n').collect();
            let indent: String = lines[f.line as usize - 1]
                .chars()
                .take_while(|c| c.is_whitespace())
                .collect();
            let mut at = f.line as usize;
            while at > 1 && lines[at - 2].trim_end().ends_with('\\') {
                at -= 1;
            }
            let ok = comment_openers(lang).iter().any(|opener| {
                let mut edited = String::new();
                for (i, l) in lines.iter().enumerate() {
                    if i + 1 == at {
                        edited.push_str(&format!(
                            "{indent}{opener} locklint: allow({}) -- test\n",
                            f.code()
                        ));
                    }
                    edited.push_str(l);
                }
                let after = check_source(&display, &edited, lang, &settings);
                let silenced = !after
                    .iter()
                    .any(|g| g.code() == f.code() && g.line == f.line + 1);
                let no_stale = !after.iter().any(|g| g.code() == "LL100");
                silenced && no_stale
            });
            checked += 1;
            if !ok {
                failures.push(format!("{display}: {}@{}:{}", f.code(), f.line, f.column));
            }
        }
    }
    assert!(checked > 50, "only {checked} findings in the bad fixtures");
    assert!(
        failures.is_empty(),
        "not suppressible on the line above:\n{}",
        failures.join("\n")
    );
}
