//! What the fixture tests share: finding the fixture files and reading the
//! `locklint-expect: LL002@12:9 LL001@5:13` (or `none`) lines they declare.

use locklint::facts::Language;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Every file locklint reads under `dir`, sorted, skipping folders named in `skip`.
pub fn source_files(dir: &Path, skip: &[&str], out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            if !p.file_name().is_some_and(|n| skip.iter().any(|s| n == *s)) {
                source_files(&p, skip, out);
            }
        } else if Language::from_path(&p).is_some() {
            out.push(p);
        }
    }
}

/// The (code, line, column) set a file declares; panics when it declares none.
pub fn declared(src: &str, path: &Path) -> BTreeSet<(String, usize, usize)> {
    let mut set = BTreeSet::new();
    let mut declared = false;
    for line in src.lines() {
        let Some(i) = line.find("locklint-expect:") else {
            continue;
        };
        declared = true;
        for item in line[i + "locklint-expect:".len()..].split_whitespace() {
            if item == "none" {
                continue;
            }
            let parse = || -> Option<(String, usize, usize)> {
                let (code, pos) = item.split_once('@')?;
                let (l, c) = pos.split_once(':')?;
                Some((
                    code.to_string(),
                    l.parse().ok()?,
                    c.trim_end_matches(',').parse().ok()?,
                ))
            };
            match parse() {
                Some(t) => {
                    set.insert(t);
                }
                None => break, // prose after the expectations
            }
        }
    }
    assert!(
        declared,
        "{} has no `locklint-expect:` line",
        path.display()
    );
    set
}
