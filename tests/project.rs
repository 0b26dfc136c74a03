//! Cross-file cases of the project link (SPEC §2 "Project summaries").
//! Each folder under `fixtures/project/` is one project: every file in it
//! declares its exact findings in a `locklint-expect:` comment, and the
//! whole folder is checked in one run so the files link with each other
//! (and only with each other: `fixtures/project/` is skipped by the
//! one-file-at-a-time fixtures test).

mod expect;
use locklint::facts::Language;

use locklint::{check_paths, Settings};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

type Expect = BTreeSet<(String, String, u32, u32)>;

fn files_in(dir: &Path, out: &mut Vec<PathBuf>) {
    expect::source_files(dir, &[], out);
}

fn expected(case: &Path) -> Expect {
    let mut files = Vec::new();
    files_in(case, &mut files);
    let mut set = Expect::new();
    for path in files {
        let rel = path.strip_prefix(case).unwrap().display().to_string();
        let src = std::fs::read_to_string(&path).unwrap();
        for (code, l, c) in expect::declared(&src, &path) {
            set.insert((rel.clone(), code, l as u32, c as u32));
        }
    }
    set
}

fn got(case: &Path, paths: &[PathBuf]) -> Expect {
    let settings = Settings {
        threads: 2,
        ..Settings::default()
    };
    let report = check_paths(paths, &settings);
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    report
        .findings
        .iter()
        .map(|f| {
            let rel = Path::new(&*f.path)
                .strip_prefix(case)
                .unwrap_or(Path::new(&*f.path))
                .display()
                .to_string();
            (rel, f.code().to_string(), f.line, f.column)
        })
        .collect()
}

fn cases() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/project");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    cases
}

#[test]
fn every_project_case_reports_exactly_what_it_declares() {
    let cases = cases();
    assert!(cases.len() >= 6, "project cases missing");
    let mut failures = Vec::new();
    for case in &cases {
        let want = expected(case);
        let have = got(case, std::slice::from_ref(case));
        if want != have {
            failures.push(format!(
                "{}:\n  expected {want:?}\n  got      {have:?}",
                case.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The link is not an accident of one file: each case's call-site files,
/// checked alone, lose the findings that come through another file.
#[test]
fn call_site_findings_need_the_other_files() {
    let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/project/java_wrapper");
    let alone = std::fs::read_to_string(case.join("OrderService.java")).unwrap();
    let findings = locklint::check_source(
        "OrderService.java",
        &alone,
        Language::Java,
        &Settings::default(),
    );
    assert!(
        findings.iter().all(|f| f.code() != "LL001"),
        "LL001 needs RedisUtil.tryLock's summary: {findings:?}"
    );
}

/// A run on one named file (pre-commit) reports that file only, but links
/// it against the whole project: the wrapper in another file is seen.
#[test]
fn one_named_file_is_linked_against_its_project() {
    let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/project/java_wrapper");
    let caller = case.join("OrderService.java");
    let settings = Settings {
        threads: 1,
        project_root: Some(case.clone()),
        ..Settings::default()
    };
    let report = check_paths(std::slice::from_ref(&caller), &settings);
    let got: Vec<(String, u32)> = report
        .findings
        .iter()
        .map(|f| (f.code().to_string(), f.line))
        .collect();
    assert_eq!(got, [("LL001".to_string(), 8), ("LL002".to_string(), 12)]);
    assert!(report
        .findings
        .iter()
        .all(|f| f.path.ends_with("OrderService.java")));
    // without the project, the call sites are plain method calls
    let alone = check_paths(
        &[caller],
        &Settings {
            threads: 1,
            ..Settings::default()
        },
    );
    assert!(alone.findings.is_empty(), "{:?}", alone.findings);
}

/// In every language: a run on the call-site file alone, linked against
/// its project, reports what that file declares (the wrapper is elsewhere).
#[test]
fn each_wrapper_case_links_one_named_file_against_its_project() {
    let wrappers: Vec<PathBuf> = cases()
        .into_iter()
        .filter(|c| c.to_string_lossy().ends_with("_wrapper"))
        .collect();
    assert!(wrappers.len() >= 9, "a wrapper case per language");
    let mut failures = Vec::new();
    for case in &wrappers {
        let want = expected(case);
        let callers: BTreeSet<&String> = want.iter().map(|(f, ..)| f).collect();
        assert!(!callers.is_empty(), "{}: no call-site file", case.display());
        for caller in callers {
            let settings = Settings {
                threads: 1,
                project_root: Some(case.clone()),
                cache: false,
                ..Settings::default()
            };
            let report = check_paths(&[case.join(caller)], &settings);
            let have: Expect = report
                .findings
                .iter()
                .map(|f| {
                    let rel = Path::new(&*f.path).strip_prefix(case).unwrap();
                    (
                        rel.display().to_string(),
                        f.code().to_string(),
                        f.line,
                        f.column,
                    )
                })
                .collect();
            let mine: Expect = want.iter().filter(|w| &w.0 == caller).cloned().collect();
            if have != mine {
                failures.push(format!("{caller}: expected {mine:?}, got {have:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The CLI finds the project root by its `.git` (or `--project-root`).
#[test]
fn the_cli_finds_the_project_root() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::create_dir_all(root.join("src/util")).unwrap();
    std::fs::create_dir_all(root.join("src/app")).unwrap();
    let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/project/java_wrapper");
    std::fs::copy(
        case.join("RedisUtil.java"),
        root.join("src/util/RedisUtil.java"),
    )
    .unwrap();
    std::fs::copy(
        case.join("OrderService.java"),
        root.join("src/app/OrderService.java"),
    )
    .unwrap();
    let run = |args: &[&str]| {
        let out = assert_cmd::Command::cargo_bin("locklint")
            .unwrap()
            .current_dir(root)
            .args(["check", "--no-config", "--format", "json"])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let found = run(&["src/app/OrderService.java"]);
    assert!(
        found.contains("LL001") && found.contains("LL002"),
        "{found}"
    );
    let isolated = run(&["--project-root", "src/app", "src/app/OrderService.java"]);
    assert!(!isolated.contains("LL001"), "{isolated}");
}

/// Phase one is cached in `.locklint_cache/` under the project root (with
/// its own `.gitignore`), keyed by content: an edited file is read again;
/// `--no-cache` neither reads nor writes it.
#[test]
fn the_phase_one_cache_follows_file_content() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/project/java_wrapper");
    for f in ["RedisUtil.java", "OrderService.java"] {
        std::fs::copy(case.join(f), root.join(f)).unwrap();
    }
    let run = |args: &[&str]| {
        let out = assert_cmd::Command::cargo_bin("locklint")
            .unwrap()
            .current_dir(root)
            .args(["check", "--no-config", "--format", "json"])
            .args(args)
            .output()
            .unwrap();
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        json["findings"].to_string()
    };
    let cache = root.join(".locklint_cache");
    let plain = run(&["--no-cache", "OrderService.java"]);
    assert!(plain.contains("LL001"), "{plain}");
    assert!(!cache.exists());
    assert_eq!(run(&["OrderService.java"]), plain);
    assert!(cache.join(".gitignore").is_file());
    // warm: the same answer from the cache
    assert_eq!(run(&["OrderService.java"]), plain);
    // the folder of another build is removed when this build writes; a
    // folder that is not a build's is left alone
    let stale = cache.join("v0.0.1-0123456789-code-plain");
    std::fs::create_dir_all(&stale).unwrap();
    std::fs::write(stale.join("00.bin"), b"old").unwrap();
    std::fs::create_dir_all(cache.join("notes")).unwrap();
    std::fs::write(root.join("Extra.java"), "class Extra {}\n").unwrap();
    assert_eq!(run(&["OrderService.java"]), plain);
    assert!(!stale.exists(), "a stale build's cache folder stayed");
    assert!(cache.join("notes").is_dir());
    let own: Vec<_> = std::fs::read_dir(&cache)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with('v'))
        .collect();
    assert_eq!(own.len(), 1, "this build's folder is kept");
    // the wrapper changes: its cached facts are not used
    let util = std::fs::read_to_string(root.join("RedisUtil.java")).unwrap();
    std::fs::write(
        root.join("RedisUtil.java"),
        util.replace("tryLock(", "tryAcquire("),
    )
    .unwrap();
    let after = run(&["OrderService.java"]);
    assert!(!after.contains("LL001"), "{after}");
}

/// A file whose size and modification time match its cache entry is not
/// read again (its cached facts stand); a new time sends it back to its
/// content. A warm run that changes nothing writes nothing.
#[test]
fn the_cache_trusts_size_and_time_then_content() {
    use std::time::{Duration, SystemTime};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/project/java_wrapper");
    let old = SystemTime::now() - Duration::from_secs(3600);
    let set_time = |name: &str, t: SystemTime| {
        let f = std::fs::File::options()
            .write(true)
            .open(root.join(name))
            .unwrap();
        f.set_modified(t).unwrap();
    };
    for f in ["RedisUtil.java", "OrderService.java"] {
        std::fs::copy(case.join(f), root.join(f)).unwrap();
        set_time(f, old);
    }
    let run = || {
        let out = assert_cmd::Command::cargo_bin("locklint")
            .unwrap()
            .current_dir(root)
            .args(["check", "--no-config", "--format", "json"])
            .arg("OrderService.java")
            .output()
            .unwrap();
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        json["findings"].to_string()
    };
    assert!(run().contains("LL001"));
    let shards = |()| -> Vec<(PathBuf, SystemTime)> {
        let mut v: Vec<(PathBuf, SystemTime)> = walk_files(&root.join(".locklint_cache"))
            .into_iter()
            .map(|p| {
                let t = std::fs::metadata(&p).unwrap().modified().unwrap();
                (p, t)
            })
            .collect();
        v.sort();
        v
    };
    let written = shards(());
    assert!(written
        .iter()
        .any(|(p, _)| p.extension().is_some_and(|e| e == "bin")));
    assert!(run().contains("LL001"));
    assert_eq!(shards(()), written, "a warm run rewrote the cache");
    // same size, same time: trusted without reading
    let util = std::fs::read_to_string(root.join("RedisUtil.java")).unwrap();
    std::fs::write(
        root.join("RedisUtil.java"),
        util.replace("tryLock(", "tryLook("),
    )
    .unwrap();
    set_time("RedisUtil.java", old);
    assert!(run().contains("LL001"));
    // a new time: the content decides
    set_time("RedisUtil.java", SystemTime::now());
    assert!(!run().contains("LL001"));
}

fn walk_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk_files(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// The platform limit from vercel.json is applied after the per-file
/// cache: an edit of vercel.json alone changes the findings of a file
/// whose facts come from the cache unchanged.
#[test]
fn vercel_json_edits_are_seen_through_a_warm_cache() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join(".git")).unwrap();
    let route = root.join("app/api/cron/retry");
    std::fs::create_dir_all(&route).unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/project/ts_vercel_limit/app/api/cron/retry/route.ts");
    std::fs::copy(src, route.join("route.ts")).unwrap();
    let config = |secs: u64| {
        let json =
            format!(r#"{{"functions": {{"app/api/cron/**/*.ts": {{"maxDuration": {secs}}}}}}}"#);
        std::fs::write(root.join("vercel.json"), json).unwrap();
    };
    let settings = Settings {
        threads: 1,
        project_root: Some(root.to_path_buf()),
        cache: true,
        ..Settings::default()
    };
    let codes = || {
        let report = check_paths(&[root.to_path_buf()], &settings);
        assert!(report.errors.is_empty(), "{:?}", report.errors);
        let mut c: Vec<&str> = report.findings.iter().map(|f| f.code()).collect();
        c.sort_unstable();
        c
    };
    config(600);
    assert_eq!(codes(), Vec::<&str>::new());
    // the same file, a longer platform limit: its 600 s lease can expire
    config(900);
    assert_eq!(codes(), vec!["LL001", "LL002"]);
    config(600);
    assert_eq!(codes(), Vec::<&str>::new());
    assert!(root.join(".locklint_cache").exists());
}

/// A named-file run with a warm cache trusts the folder listing (one
/// `stat` per folder) and each file's size and time: a wrapper removed,
/// added or edited in place deep elsewhere in the project still changes
/// the named file's findings, and a warm run that changes nothing rewrites
/// neither the listing nor the shards.
#[test]
fn a_warm_named_run_sees_a_wrapper_removed_added_or_edited_elsewhere() {
    use std::time::{Duration, SystemTime};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("proj");
    let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/project/java_wrapper");
    for d in [".git", "app/orders", "lib/deep/util", "lib/other/x"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    // `!*`: an ignore file above the temporary folder must not hide the project
    std::fs::write(root.join(".gitignore"), "!*\n").unwrap();
    let caller = root.join("app/orders/OrderService.java");
    std::fs::copy(case.join("OrderService.java"), &caller).unwrap();
    let wrapper = root.join("lib/deep/util/RedisUtil.java");
    std::fs::copy(case.join("RedisUtil.java"), &wrapper).unwrap();
    // every file and folder an hour old: settled, so the listing and the
    // cache entries are trusted by their times
    let age = || {
        let old = SystemTime::now() - Duration::from_secs(3600);
        for p in walk_files(&root) {
            std::fs::File::options()
                .write(true)
                .open(&p)
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
        let mut dirs = vec![root.clone()];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                if e.file_type().unwrap().is_dir() {
                    dirs.push(e.path());
                }
            }
            std::fs::File::open(&d).unwrap().set_modified(old).unwrap();
        }
    };
    let settings = Settings {
        threads: 2,
        project_root: Some(root.clone()),
        cache: true,
        ..Settings::default()
    };
    let ll001 = || {
        let report = check_paths(std::slice::from_ref(&caller), &settings);
        assert!(report.errors.is_empty(), "{:?}", report.errors);
        report.findings.iter().any(|f| f.code() == "LL001")
    };
    let cache_files = || -> Vec<(PathBuf, SystemTime)> {
        let mut v: Vec<(PathBuf, SystemTime)> = walk_files(&root.join(".locklint_cache"))
            .into_iter()
            .map(|p| {
                let t = std::fs::metadata(&p).unwrap().modified().unwrap();
                (p, t)
            })
            .collect();
        v.sort();
        v
    };
    age();
    assert!(ll001(), "the wrapper in another folder is linked");
    // the cache's own folder changed the root's time: settle it again, and
    // let one run bring the listing up to date
    age();
    assert!(ll001());
    let written = cache_files();
    assert!(
        written.iter().any(|(p, _)| p.ends_with("walk.bin")),
        "{written:?}"
    );
    assert!(ll001());
    assert_eq!(cache_files(), written, "a warm run rewrote the cache");
    // removed: its folder's time changes, the folder is listed again
    std::fs::remove_file(&wrapper).unwrap();
    assert!(!ll001(), "a removed wrapper is still linked");
    // added in another settled folder, as an editor saves (write, rename)
    age();
    assert!(!ll001());
    let moved = root.join("lib/other/x/RedisUtil.java");
    let tmp = root.join("lib/other/x/.RedisUtil.java.swp");
    std::fs::copy(case.join("RedisUtil.java"), &tmp).unwrap();
    std::fs::rename(&tmp, &moved).unwrap();
    assert!(ll001(), "an added wrapper is not linked");
    // edited in place in a settled folder: the folder's time stays, the
    // file's changes
    age();
    assert!(ll001());
    let folder_time = || {
        std::fs::metadata(root.join("lib/other/x"))
            .unwrap()
            .modified()
            .unwrap()
    };
    let before = folder_time();
    let util = std::fs::read_to_string(&moved).unwrap();
    std::fs::write(&moved, util.replace("tryLock(", "tryAcquire(")).unwrap();
    assert_eq!(folder_time(), before, "the edit was not in place");
    assert!(!ll001(), "an edited wrapper's cached summary is used");
    std::fs::write(&moved, util).unwrap();
    assert!(ll001(), "the wrapper edited back is not linked again");
}

/// Sets every file and folder under `root` an hour back: settled, so a
/// warm run trusts the cache entries and the listing by their times.
fn age_all(root: &Path) {
    use std::time::{Duration, SystemTime};
    let old = SystemTime::now() - Duration::from_secs(3600);
    let mut dirs = vec![root.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                dirs.push(e.path());
            } else {
                std::fs::File::options()
                    .write(true)
                    .open(e.path())
                    .unwrap()
                    .set_modified(old)
                    .unwrap();
            }
        }
        std::fs::File::open(&d).unwrap().set_modified(old).unwrap();
    }
}

/// A warm named-file run links against the cached facts of the rest of the
/// project, decoding only the files the link can use (`engine`'s lazy rest
/// of the project): what it reports for each named file is exactly what a
/// whole-project run reports there — findings, messages and labels. One
/// project holds every project case in its own folder (wrappers, three-deep
/// chains, acquire and release in different files, rollback helpers run
/// only on failure paths, facades, ambiguous names) and files that call
/// things without any Redis op, which the link never needs.
#[test]
fn a_warm_named_run_reports_what_the_whole_project_run_reports() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("proj");
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::write(root.join(".gitignore"), "!*\n").unwrap();
    let mut files = Vec::new();
    for case in cases() {
        let name = case.file_name().unwrap().to_owned();
        let mut src = Vec::new();
        files_in(&case, &mut src);
        for f in src {
            let rel = Path::new("cases")
                .join(&name)
                .join(f.strip_prefix(&case).unwrap());
            std::fs::create_dir_all(root.join(&rel).parent().unwrap()).unwrap();
            std::fs::copy(&f, root.join(&rel)).unwrap();
            files.push(rel);
        }
    }
    // calls, but nothing the link can use
    std::fs::create_dir_all(root.join("plain")).unwrap();
    for i in 0..40 {
        std::fs::write(
            root.join(format!("plain/util_{i}.py")),
            format!(
                "import redis\n\ndef compute_{i}(items):\n    total = sum_items(items)\n    return render(total, 'cache')\n"
            ),
        )
        .unwrap();
    }
    files.push(PathBuf::from("plain/util_0.py"));
    age_all(&root);
    let settings = Settings {
        threads: 2,
        project_root: Some(root.clone()),
        cache: true,
        ..Settings::default()
    };
    let by_file = |report: &locklint::Report| {
        let mut m: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        for f in &report.findings {
            m.entry(f.path.to_string())
                .or_default()
                .push(format!("{f:?}"));
        }
        m
    };
    let whole = check_paths(std::slice::from_ref(&root), &settings);
    assert!(whole.errors.is_empty(), "{:?}", whole.errors);
    let whole = by_file(&whole);
    assert!(whole.len() > 20, "{}", whole.len());
    // the cache folder changed the root's time: settled again, the cache warm
    age_all(&root);
    assert_eq!(
        by_file(&check_paths(std::slice::from_ref(&root), &settings)),
        whole
    );
    let mut failures = Vec::new();
    for rel in &files {
        let path = root.join(rel);
        let named = check_paths(std::slice::from_ref(&path), &settings);
        assert!(named.errors.is_empty(), "{:?}", named.errors);
        let got = by_file(&named);
        let key = path.display().to_string();
        let want: Vec<String> = whole.get(&key).cloned().unwrap_or_default();
        let have: Vec<String> = got.get(&key).cloned().unwrap_or_default();
        if got.len() > usize::from(!have.is_empty()) {
            failures.push(format!("{}: other files reported", rel.display()));
        }
        if want != have {
            failures.push(format!(
                "{}:\n  whole project {want:?}\n  named         {have:?}",
                rel.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
