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

/// A listing as read back, its names borrowed from the listing's bytes (a
/// warm run with no folder changed allocates nothing per file for it).
#[derive(serde::Deserialize)]
struct StoredRef<'a> {
    key: &'a str,
    written: u64,
    #[serde(borrow)]
    outside: Vec<(&'a str, FileStat)>,
    #[serde(borrow)]
    dirs: Listed<'a>,
}

/// A [`Dir`] read back.
#[derive(serde::Deserialize)]
struct DirRef<'a> {
    mtime: u64,
    #[serde(borrow)]
    ignores: Vec<(&'a str, FileStat)>,
    #[serde(borrow)]
    files: Vec<&'a str>,
}

impl DirRef<'_> {
    fn to_owned(&self) -> Dir {
        Dir {
            mtime: self.mtime,
            ignores: self
                .ignores
                .iter()
                .map(|(f, s)| (f.to_string(), *s))
                .collect(),
            files: self.files.iter().map(|f| f.to_string()).collect(),
        }
    }
}

/// The folders of a listing read back, in the stored (sorted) order.
struct Listed<'a>(Vec<(&'a str, DirRef<'a>)>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for Listed<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visit<'a> {
            type Value = Listed<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a map of folders")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                mut m: M,
            ) -> Result<Listed<'a>, M::Error> {
                let mut out = Vec::with_capacity(m.size_hint().unwrap_or(0).min(1 << 16));
                while let Some(pair) = m.next_entry::<&'de str, DirRef<'de>>()? {
                    out.push(pair);
                }
                Ok(Listed(out))
            }
        }
        d.deserialize_map(Visit(std::marker::PhantomData))
    }
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
    // each folder's names sorted (the walk's order is the threads')
    for d in into.values_mut() {
        d.files.sort_unstable();
    }
}

/// What the walk met in a folder.
enum Found {
    Dir(Dir),
    File(String),
}

/// The folders whose own state differs from the listing (time, ignore
/// files, gone), or that were not settled when it was made.
fn changed_dirs(root: &Path, stored: &StoredRef) -> Vec<String> {
    let settle = SETTLE.as_nanos() as u64;
    stored
        .dirs
        .0
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
        .map(|(rel, _)| rel.to_string())
        .collect()
}

/// Under `top` (or `top` itself).
fn under(rel: &str, top: &str) -> bool {
    top.is_empty()
        || rel == top
        || (rel.len() > top.len() && rel.starts_with(top) && rel.as_bytes()[top.len()] == b'/')
}

/// The entries of the files listed per folder (`rel` from the root), as a
/// walk gives them: sorted by display path. Each path is built once, as a
/// string, when the root's path is UTF-8 (`root.join(rel).join(name)`
/// byte for byte, `display` equal to it); the folders come in the stored
/// order, so the sort is skipped when they are already in display order.
fn entries_of<S: AsRef<str> + Sync>(root: &Path, listed: &[(&str, &[S])]) -> Vec<Entry> {
    let root_str = root.to_str();
    let mut entries: Vec<Entry> = listed
        .par_iter()
        .flat_map_iter(|(rel, files)| {
            // the folder as `join` makes it, when it is UTF-8
            let dir_str = root_str.map(|r| {
                let mut d = String::with_capacity(r.len() + 1 + rel.len());
                d.push_str(r);
                push_part(&mut d, rel);
                d
            });
            let dir = root_str.is_none().then(|| join(root, rel));
            files.iter().filter_map(move |name| {
                let name = name.as_ref();
                // the file's language is its name's
                let language = crate::facts::Language::from_path(Path::new(name))?;
                let path = match &dir_str {
                    Some(d) => {
                        let mut s = String::with_capacity(d.len() + 1 + name.len());
                        s.push_str(d);
                        push_part(&mut s, name);
                        PathBuf::from(s)
                    }
                    None => dir.as_ref()?.join(name),
                };
                Some(Entry::new(path, language, false))
            })
        })
        .collect();
    // the order of `Entry` (by display path first): no two entries are equal
    let order = |a: &Entry, b: &Entry| a.display.cmp(&b.display).then_with(|| a.cmp(b));
    if !entries
        .windows(2)
        .all(|w| order(&w[0], &w[1]) != std::cmp::Ordering::Greater)
    {
        // runs of sorted entries (a folder's files): the stable sort
        // merges them
        entries.sort_by(order);
    }
    // the paths are built alike (root, folder, name): equal paths are
    // equal bytes
    entries.dedup_by(|a, b| a.path().as_os_str() == b.path().as_os_str());
    entries
}

/// `PathBuf::push` of a relative part on a string: a `/` between unless
/// the string is empty or ends with one; an empty part adds nothing.
fn push_part(s: &mut String, part: &str) {
    if part.is_empty() {
        return;
    }
    if !s.is_empty() && !s.ends_with('/') {
        s.push('/');
    }
    s.push_str(part);
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
    let bytes = std::fs::read(file).ok();
    let mut stored = bytes
        .as_deref()
        .and_then(|b| rmp_serde::from_slice::<StoredRef>(b).ok())
        .filter(|s| {
            let now = outside_stats(root);
            s.key == key
                && s.outside.len() == now.len()
                && s.outside
                    .iter()
                    .zip(&now)
                    .all(|(a, b)| a.0 == b.0 && a.1 == b.1)
        });
    let changed = stored.as_ref().map(|s| changed_dirs(root, s));
    if let (Some(s), Some(changed)) = (&mut stored, &changed) {
        if changed.is_empty() {
            // nothing changed: the files as listed, nothing to write (each
            // folder's names sorted: then the entries come in display order
            // where no folder holds both files and folders)
            for (_, d) in &mut s.dirs.0 {
                d.files.sort_unstable();
            }
            let listed: Vec<(&str, &[&str])> = s
                .dirs
                .0
                .iter()
                .map(|(rel, d)| (*rel, &d.files[..]))
                .collect();
            return entries_of(root, &listed);
        }
    }
    let (dirs, dirty) = match stored.zip(changed) {
        Some((s, changed)) => {
            let mut dirs: BTreeMap<String, Dir> = s
                .dirs
                .0
                .iter()
                .map(|(rel, d)| (rel.to_string(), d.to_owned()))
                .collect();
            // only the topmost of the changed folders are walked again
            let mut tops: Vec<&String> = Vec::new();
            for rel in &changed {
                if !tops.iter().any(|t| under(rel, t)) {
                    tops.retain(|t| !under(t, rel));
                    tops.push(rel);
                }
            }
            let before = (!tops.is_empty()).then(|| dirs.clone());
            for top in &tops {
                dirs.retain(|rel, _| !under(rel, top));
                walk_into(root, top, threads, exclude, &mut dirs);
            }
            // rewritten when it changed, or when a folder that was too
            // recent to trust is settled now (a warm run writes nothing)
            let settle = SETTLE.as_nanos() as u64;
            let dirty = before.is_some_and(|b| {
                b != dirs
                    || changed.iter().any(|rel| {
                        dirs.get(rel)
                            .is_some_and(|d| d.mtime.saturating_add(settle) < started)
                    })
            });
            (dirs, dirty)
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
    let listed: Vec<(&str, &[String])> = dirs
        .iter()
        .map(|(rel, d)| (rel.as_str(), &d.files[..]))
        .collect();
    let entries = entries_of(root, &listed);
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
    fn entries_are_built_as_join_builds_them_and_sorted() {
        let listed: Vec<(&str, &[&str])> = vec![
            ("", &["z.py", "notes.txt"]),
            ("a", &["b.rs", "a.go"]),
            ("a-b", &["x.java"]),
            ("a/c", &["d.py"]),
        ];
        for root in ["proj", "proj/", "/tmp/p", ""] {
            let got = entries_of(Path::new(root), &listed);
            let mut want: Vec<(String, PathBuf)> = listed
                .iter()
                .flat_map(|(rel, files)| {
                    files
                        .iter()
                        .filter(|f| !f.ends_with(".txt"))
                        .map(move |f| join(Path::new(root), rel).join(f))
                })
                .map(|p| (p.to_string_lossy().into_owned(), p))
                .collect();
            want.sort();
            let got: Vec<(String, PathBuf)> = got
                .into_iter()
                .map(|e| (e.display.clone(), e.path().to_path_buf()))
                .collect();
            assert_eq!(got, want, "{root}");
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
