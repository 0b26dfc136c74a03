//! The folder listing of the project root, kept between runs (SPEC §5: a
//! run on five named files of a large repository stays fast). Walking the
//! whole root is most of such a run when phase one comes from the cache:
//! one `open`/`getdents`/`close` per folder and the ignore files of each.
//!
//! The listing keeps, per folder the walk entered, its modification time,
//! the size and time of its own ignore files (`.gitignore`, `.ignore`,
//! `.git/info/exclude`) and the names of the files the walk took. A
//! folder's time changes whenever an entry is added, removed or renamed in
//! it (an editor that saves by renaming too), so the next run checks one
//! `stat` per folder instead of walking: a folder whose time or ignore
//! files changed is walked again with the same walker as a full walk
//! (`walk::builder`, which reads the ignore files of the folders above
//! it), together with everything below it. A folder changed less than
//! [`SETTLE`] before the listing was made is always walked again (a change
//! in the same clock tick, or during the walk, cannot hide). A change of
//! the ignore files above the root or of the global git excludes, another
//! root or other `exclude` globs, or a listing that cannot be read: a full
//! walk. The files' own changes are the phase-one cache's business.

use crate::config::Exclude;
use crate::walk::{self, Entry};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A folder changed less than this before the listing was made is walked
/// again next time.
const SETTLE: Duration = Duration::from_secs(2);

/// The ignore files the walker reads in a folder besides
/// `.git/info/exclude` (checked where the folder holds `.git`).
const IGNORE_FILES: &[&str] = &[".gitignore", ".ignore"];
const GIT_EXCLUDE: &str = ".git/info/exclude";

/// Size and modification time (ns) of a file, `None` when it is missing.
type FileStat = Option<(u64, u64)>;

#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Dir {
    mtime: u64,
    /// The ignore files to check, with their state: those present, and
    /// `.git/info/exclude` where there is a `.git` (a file added or removed
    /// in the folder itself changes the folder's time).
    ignores: Vec<(String, FileStat)>,
    /// Names of the files the walk took.
    files: Vec<String>,
}

#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Stored {
    /// The root as given and the `exclude` signature.
    key: String,
    /// When the walk that made it started (ns since the epoch).
    written: u64,
    /// Ignore and git config files outside the root (ancestors, global).
    outside: Vec<(String, FileStat)>,
    /// Folders by path relative to the root (`""`: the root), `/`-separated.
    dirs: BTreeMap<String, Dir>,
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

fn mtime_of(meta: &std::fs::Metadata) -> u64 {
    super::cache::Stat::of(meta).mtime
}

fn file_stat(path: &Path) -> FileStat {
    let m = std::fs::metadata(path).ok()?;
    Some((m.len(), mtime_of(&m)))
}

fn join(root: &Path, rel: &str) -> PathBuf {
    if rel.is_empty() {
        root.to_path_buf()
    } else {
        root.join(rel)
    }
}

/// The ignore and git config files outside the root that the walker reads:
/// those of every folder above it and the global git excludes.
fn outside_files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let abs = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    for dir in abs.ancestors().skip(1) {
        out.extend(
            IGNORE_FILES
                .iter()
                .chain([&GIT_EXCLUDE])
                .map(|f| dir.join(f)),
        );
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let xdg = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".config")));
    let mut configs = Vec::new();
    if let Some(x) = &xdg {
        configs.push(x.join("git/config"));
        out.push(x.join("git/ignore"));
    }
    if let Some(h) = &home {
        configs.push(h.join(".gitconfig"));
    }
    // `core.excludesFile` names the global excludes file
    for c in &configs {
        if let Ok(text) = std::fs::read_to_string(c) {
            for line in text.lines() {
                let Some((k, v)) = line.split_once('=') else {
                    continue;
                };
                if k.trim().eq_ignore_ascii_case("excludesfile") {
                    let v = v.trim().trim_matches('"');
                    out.push(match (v.strip_prefix("~/"), &home) {
                        (Some(rest), Some(h)) => h.join(rest),
                        _ => PathBuf::from(v),
                    });
                }
            }
        }
        out.push(c.clone());
    }
    out
}

fn outside_stats(root: &Path) -> Vec<(String, FileStat)> {
    outside_files(root)
        .into_iter()
        .map(|p| {
            let s = file_stat(&p);
            (p.to_string_lossy().into_owned(), s)
        })
        .collect()
}

/// Walks `dir` (a folder of the root, `rel` from it) as the full walk
/// does, recording each folder entered.
fn walk_into(
    root: &Path,
    rel: &str,
    threads: usize,
    exclude: Option<&Exclude>,
    into: &mut BTreeMap<String, Dir>,
) {
    // (folder, the folder itself | a file's name in it)
    let found: Mutex<Vec<(String, Found)>> = Mutex::new(Vec::new());
    let top = join(root, rel);
    let rel_of = |p: &Path| -> Option<String> {
        let r = p.strip_prefix(root).ok()?;
        Some(r.to_string_lossy().replace('\\', "/"))
    };
    walk::builder(&top, threads, exclude)
        .build_parallel()
        .run(|| {
            Box::new(|res| {
                let Ok(entry) = res else {
                    return ignore::WalkState::Continue;
                };
                let Some(t) = entry.file_type() else {
                    return ignore::WalkState::Continue;
                };
                let path = entry.path();
                if t.is_dir() {
                    let (Some(r), Ok(meta)) = (rel_of(path), entry.metadata()) else {
                        return ignore::WalkState::Continue;
                    };
                    let mut ignores: Vec<(String, FileStat)> = IGNORE_FILES
                        .iter()
                        .filter_map(|f| Some((f.to_string(), Some(file_stat(&path.join(f))?))))
                        .collect();
                    if path.join(".git").exists() {
                        ignores.push((GIT_EXCLUDE.to_string(), file_stat(&path.join(GIT_EXCLUDE))));
                    }
                    let d = Dir {
                        mtime: mtime_of(&meta),
                        ignores,
                        files: Vec::new(),
                    };
                    found.lock().unwrap().push((r, Found::Dir(d)));
                } else if t.is_file() && crate::facts::Language::from_path(path).is_some() {
                    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
                        return ignore::WalkState::Continue;
                    };
                    if let Some(r) = rel_of(parent) {
                        let name = name.to_string_lossy().into_owned();
                        found.lock().unwrap().push((r, Found::File(name)));
                    }
                }
                ignore::WalkState::Continue
            })
        });
    let mut found = found.into_inner().unwrap_or_default();
    // folders first, so each file finds its folder
    found.sort_by_key(|(_, f)| matches!(f, Found::File(_)));
    for (r, f) in found {
        match f {
            Found::Dir(d) => {
                into.insert(r, d);
            }
            Found::File(name) => {
                if let Some(d) = into.get_mut(&r) {
                    d.files.push(name);
                }
            }
        }
    }
}

/// What the walk met in a folder.
enum Found {
    Dir(Dir),
    File(String),
}

/// The folders whose own state differs from the listing (time, ignore
/// files, gone), or that were not settled when it was made.
fn changed_dirs(root: &Path, stored: &Stored) -> Vec<String> {
    let settle = SETTLE.as_nanos() as u64;
    stored
        .dirs
        .par_iter()
        .filter(|(rel, d)| {
            let path = join(root, rel);
            let same = std::fs::symlink_metadata(&path)
                .ok()
                .filter(|m| m.is_dir())
                .is_some_and(|m| mtime_of(&m) == d.mtime);
            let ignores_same = || {
                d.ignores
                    .iter()
                    .all(|(f, then)| file_stat(&path.join(f)) == *then)
            };
            !(same && d.mtime.saturating_add(settle) < stored.written && ignores_same())
        })
        .map(|(rel, _)| rel.clone())
        .collect()
}

/// Under `top` (or `top` itself).
fn under(rel: &str, top: &str) -> bool {
    top.is_empty()
        || rel == top
        || (rel.len() > top.len() && rel.starts_with(top) && rel.as_bytes()[top.len()] == b'/')
}

/// The files of the project root, as `walk::collect_excluding(&[root])`
/// finds them, from the listing at `file` when the folders did not change
/// (see the module documentation); the listing is brought up to date.
pub fn collect(root: &Path, threads: usize, exclude: Option<&Exclude>, file: &Path) -> Vec<Entry> {
    let key = format!(
        "{}|{}",
        root.display(),
        exclude.map(|e| e.signature()).unwrap_or_default()
    );
    let started = now_ns();
    let stored = std::fs::read(file)
        .ok()
        .and_then(|b| rmp_serde::from_slice::<Stored>(&b).ok())
        .filter(|s| s.key == key && s.outside == outside_stats(root));
    let (dirs, dirty) = match stored {
        Some(mut s) => {
            let changed = changed_dirs(root, &s);
            // only the topmost of the changed folders are walked again
            let mut tops: Vec<&String> = Vec::new();
            for rel in &changed {
                if !tops.iter().any(|t| under(rel, t)) {
                    tops.retain(|t| !under(t, rel));
                    tops.push(rel);
                }
            }
            let before = (!tops.is_empty()).then(|| s.dirs.clone());
            for top in &tops {
                s.dirs.retain(|rel, _| !under(rel, top));
                walk_into(root, top, threads, exclude, &mut s.dirs);
            }
            // rewritten when it changed, or when a folder that was too
            // recent to trust is settled now (a warm run writes nothing)
            let settle = SETTLE.as_nanos() as u64;
            let dirty = before.is_some_and(|b| {
                b != s.dirs
                    || changed.iter().any(|rel| {
                        s.dirs
                            .get(rel)
                            .is_some_and(|d| d.mtime.saturating_add(settle) < started)
                    })
            });
            (s.dirs, dirty)
        }
        None => {
            // the cache's folder first: made during the walk, it would
            // change the root's time and send the next run walking again
            if let Some(dir) = file.parent() {
                super::cache::make_dir(dir);
            }
            let mut dirs = BTreeMap::new();
            walk_into(root, "", threads, exclude, &mut dirs);
            (dirs, true)
        }
    };
    let listed: Vec<(&String, &Dir)> = dirs.iter().collect();
    let mut entries: Vec<Entry> = listed
        .par_iter()
        .flat_map_iter(|(rel, d)| {
            let dir = join(root, rel);
            d.files.iter().filter_map(move |name| {
                // the file's language is its name's
                let language = crate::facts::Language::from_path(Path::new(name))?;
                let path = dir.join(name);
                Some(Entry {
                    // what `Path::display` prints
                    display: path.to_string_lossy().into_owned(),
                    path,
                    language,
                    explicit: false,
                })
            })
        })
        .collect();
    // the order of `Entry` (by display path first): no two entries are equal
    entries.sort_unstable_by(|a, b| a.display.cmp(&b.display).then_with(|| a.cmp(b)));
    // the paths are built alike (root, folder, name): equal paths are
    // equal bytes
    entries.dedup_by(|a, b| a.path.as_os_str() == b.path.as_os_str());
    if dirty {
        let stored = Stored {
            key,
            written: started,
            outside: outside_stats(root),
            dirs,
        };
        if let (Some(dir), Ok(bytes)) = (file.parent(), rmp_serde::to_vec(&stored)) {
            let tmp = file.with_extension(format!("tmp{}", std::process::id()));
            if !super::cache::make_dir(dir)
                || std::fs::write(&tmp, bytes).is_err()
                || std::fs::rename(&tmp, file).is_err()
            {
                let _ = std::fs::remove_file(&tmp);
            }
        }
    }
    entries
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(entries: &[Entry]) -> Vec<String> {
        entries.iter().map(|e| e.display.clone()).collect()
    }

    fn walked(root: &Path, exclude: Option<&Exclude>) -> Vec<String> {
        names(&walk::collect_excluding(&[root.to_path_buf()], 2, exclude).0)
    }

    /// Makes every folder under `root` look settled (older than SETTLE).
    fn age(root: &Path) {
        let old = SystemTime::now() - Duration::from_secs(60);
        let mut stack = vec![root.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                if e.file_type().unwrap().is_dir() {
                    stack.push(e.path());
                }
            }
            let f = std::fs::File::open(&d).unwrap();
            f.set_modified(old).unwrap();
        }
    }

    #[test]
    fn listing_follows_the_walk_through_changes() {
        let tmp = std::env::temp_dir().join(format!("locklint-listing-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        let root = tmp.join("proj");
        for d in ["a/b/c", "a/gen", "d", ".hidden", "skipme"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        for f in [
            "top.py",
            "a/one.rs",
            "a/b/two.go",
            "a/b/c/three.java",
            "a/gen/out.py",
            "d/x.ts",
            ".hidden/h.py",
            "skipme/s.py",
            "a/notes.txt",
        ] {
            std::fs::write(root.join(f), "x").unwrap();
        }
        // `!*` first: a `.gitignore` above the temporary folder may ignore all
        std::fs::write(root.join(".gitignore"), "!*\ngen/\n").unwrap();
        let ex = Exclude::new(&["skipme/".to_string()], &root, &root).unwrap();
        let ex = Some(&ex);
        // in a cache folder of its own: the listing makes `.gitignore` one level up
        let file = tmp.join(".locklint_cache/v/walk.bin");
        age(&root);
        let first = names(&collect(&root, 2, ex, &file));
        assert_eq!(first, walked(&root, ex));
        assert!(first.iter().any(|n| n.ends_with("three.java")), "{first:?}");
        assert!(!first
            .iter()
            .any(|n| n.contains("gen/") || n.contains("skipme")));
        // warm: the same, from the listing (it is not rewritten)
        let written = std::fs::metadata(&file).unwrap().modified().unwrap();
        assert_eq!(names(&collect(&root, 2, ex, &file)), first);
        assert_eq!(
            std::fs::metadata(&file).unwrap().modified().unwrap(),
            written
        );
        // a file added deep down, one removed, a folder added
        std::fs::write(root.join("a/b/c/four.py"), "x").unwrap();
        std::fs::remove_file(root.join("d/x.ts")).unwrap();
        std::fs::create_dir_all(root.join("a/new")).unwrap();
        std::fs::write(root.join("a/new/n.rb"), "x").unwrap();
        let after = names(&collect(&root, 2, ex, &file));
        assert_eq!(after, walked(&root, ex));
        assert!(after.iter().any(|n| n.ends_with("four.py")));
        assert!(after.iter().any(|n| n.ends_with("n.rb")));
        assert!(!after.iter().any(|n| n.ends_with("x.ts")));
        // an ignore file edited in place (the folder's time kept)
        age(&root);
        assert_eq!(names(&collect(&root, 2, ex, &file)), walked(&root, ex));
        std::fs::write(root.join(".gitignore"), "!*\ngen/\nc/\n").unwrap();
        let ignored = names(&collect(&root, 2, ex, &file));
        assert_eq!(ignored, walked(&root, ex));
        assert!(!ignored.iter().any(|n| n.contains("/c/")));
        // a nested ignore file appears (its folder's time changes)
        std::fs::write(root.join("a/b/.ignore"), "two.go\n").unwrap();
        let nested = names(&collect(&root, 2, ex, &file));
        assert_eq!(nested, walked(&root, ex));
        assert!(!nested.iter().any(|n| n.ends_with("two.go")));
        // other exclude globs: a full walk
        let ex2 = Exclude::new(&["a/".to_string()], &root, &root).unwrap();
        assert_eq!(
            names(&collect(&root, 2, Some(&ex2), &file)),
            walked(&root, Some(&ex2))
        );
        // a listing that cannot be read: a full walk
        std::fs::write(&file, b"not a listing").unwrap();
        assert_eq!(names(&collect(&root, 2, ex, &file)), walked(&root, ex));
        let _ = std::fs::remove_dir_all(&tmp);
    }
}
