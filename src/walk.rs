//! Turns the paths of the command line into the list of files to scan.
//! Folders are walked in parallel with the `ignore` crate (`.gitignore`,
//! `.ignore`, hidden files skipped); explicitly named files are always taken.

use crate::facts::Language;
use crate::finding::FileError;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A file to scan: the path to print, and to open ([`Entry::path`]).
/// (One string per file: a walk of a large monorepo holds ~100,000 entries
/// through the whole run.)
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Entry {
    pub display: String,
    /// The path to open when it is not `display`: a name that is not
    /// UTF-8, which `display` shows lossily.
    raw: Option<Box<Path>>,
    pub language: Language,
    /// Named on the command line (never excluded).
    pub explicit: bool,
}

impl Entry {
    pub fn new(path: PathBuf, language: Language, explicit: bool) -> Entry {
        let (display, raw) = match path.into_os_string().into_string() {
            // (a walk's path keeps the room its joins left: 10.8 MB of
            // buffers for 7.0 MB of paths on a tree of 74,211 files)
            Ok(mut s) => {
                s.shrink_to_fit();
                (s, None)
            }
            Err(os) => {
                let path = PathBuf::from(os);
                (path.display().to_string(), Some(path.into_boxed_path()))
            }
        };
        Entry {
            display,
            raw,
            language,
            explicit,
        }
    }

    /// The path to open.
    pub fn path(&self) -> &Path {
        self.raw
            .as_deref()
            .unwrap_or_else(|| Path::new(&self.display))
    }
}

/// Walks `paths` and returns the files locklint reads, sorted by display
/// path, plus an error for each path that does not exist or cannot be walked.
pub fn collect(paths: &[PathBuf], threads: usize) -> (Vec<Entry>, Vec<FileError>) {
    collect_excluding(paths, threads, None)
}

/// [`collect`], skipping what the config's `exclude` globs match below the
/// named folders (named files and folders themselves are always taken).
pub fn collect_excluding(
    paths: &[PathBuf],
    threads: usize,
    exclude: Option<&crate::config::Exclude>,
) -> (Vec<Entry>, Vec<FileError>) {
    let files = Mutex::new(Vec::new());
    let errors = Mutex::new(Vec::new());
    for root in paths {
        let meta = std::fs::metadata(root);
        match meta {
            Err(e) => errors.lock().unwrap().push(FileError {
                path: root.display().to_string(),
                message: io_cause(&e),
            }),
            Ok(m) if m.is_file() => {
                let language = Language::from_path(root).or_else(|| sniff_shell(root));
                if let Some(language) = language {
                    files
                        .lock()
                        .unwrap()
                        .push(Entry::new(root.clone(), language, true));
                }
            }
            Ok(_) => walk_dir(root, threads, exclude, &files, &errors),
        }
    }
    let mut files = files.into_inner().unwrap();
    let mut errors = errors.into_inner().unwrap();
    files.sort();
    // (one path given cannot list a file twice: the walk yields each once
    // and follows no links)
    if paths.len() > 1 {
        files.dedup_by(|a, b| a.path() == b.path());
    }
    // (the list lives through the whole run)
    files.shrink_to_fit();
    errors.sort();
    (files, errors)
}

fn walk_dir(
    root: &Path,
    threads: usize,
    exclude: Option<&crate::config::Exclude>,
    files: &Mutex<Vec<Entry>>,
    errors: &Mutex<Vec<FileError>>,
) {
    let walker = builder(root, threads, exclude).build_parallel();
    walker.run(|| {
        Box::new(|res| {
            match res {
                Ok(entry) => {
                    if entry.file_type().is_some_and(|t| t.is_file()) {
                        if let Some(language) = Language::from_path(entry.path()) {
                            let entry = Entry::new(entry.into_path(), language, false);
                            files.lock().unwrap().push(entry);
                        }
                    }
                }
                Err(e) => {
                    let path = match &e {
                        ignore::Error::WithPath { path, .. } => path.display().to_string(),
                        _ => root.display().to_string(),
                    };
                    errors.lock().unwrap().push(FileError {
                        path,
                        message: e.to_string(),
                    });
                }
            }
            ignore::WalkState::Continue
        })
    });
}

/// The walker of a folder: `.gitignore`, `.ignore`, `.git/info/exclude`
/// and the global git excludes, hidden files skipped, links not followed,
/// and the config's `exclude` (never the folder itself). The project's
/// folder listing (`project::listing`) walks changed folders with it too.
pub fn builder(
    root: &Path,
    threads: usize,
    exclude: Option<&crate::config::Exclude>,
) -> ignore::WalkBuilder {
    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .threads(threads.max(1))
        .follow_links(false)
        .require_git(false);
    if let Some(ex) = exclude {
        match ex.names_below(root) {
            Some(names) if names.is_empty() => {}
            Some(names) => {
                builder.filter_entry(move |e| e.depth() == 0 || !names.contains(e.file_name()));
            }
            None => {
                let ex = ex.clone();
                builder.filter_entry(move |e| {
                    e.depth() == 0
                        || !ex.is_excluded(e.path(), e.file_type().is_some_and(|t| t.is_dir()))
                });
            }
        }
    }
    builder
}

/// An explicitly named file without a known extension is read as a shell
/// script when its first line is a shell shebang.
fn sniff_shell(path: &Path) -> Option<Language> {
    use std::io::Read;
    let mut buf = [0u8; 64];
    let n = std::fs::File::open(path).ok()?.read(&mut buf).ok()?;
    let head = &buf[..n];
    (head.starts_with(b"#!") && (head.windows(2).any(|w| w == b"sh"))).then_some(Language::Shell)
}

/// A short human cause for an I/O error ("No such file or directory").
pub fn io_cause(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_opens_the_path_it_was_given() {
        let e = Entry::new(PathBuf::from("src/lock.rs"), Language::Rust, false);
        assert_eq!(e.display, "src/lock.rs");
        assert_eq!(e.path(), Path::new("src/lock.rs"));
        // a name that is not UTF-8: printed lossily, opened as it is
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            let raw = Path::new(std::ffi::OsStr::from_bytes(b"src/lo\xffck.py"));
            let e = Entry::new(raw.to_path_buf(), Language::Python, true);
            assert_eq!(e.display, "src/lo\u{fffd}ck.py");
            assert_eq!(e.path(), raw);
            assert_eq!(e.display, raw.display().to_string());
        }
    }
}
