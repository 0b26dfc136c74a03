//! The phase-one cache (SPEC §5, in the spirit of ruff's `.ruff_cache`):
//! the facts of each file that passed the prefilter, keyed by a hash of its
//! content, the locklint version and the settings that change facts, in
//! `.locklint_cache/` under the project root with its own `.gitignore`.
//! A run on five named files of a large project then parses only those
//! five; the rest of the project comes from here.
//!
//! One file per run setting (`facts-<version>-<tests>.json`), read whole at
//! the start and rewritten (to a temporary file, then renamed) at the end
//! when anything changed. A cache that cannot be read is ignored; one that
//! cannot be written is skipped: the cache never changes what is reported.

use crate::facts::FileFacts;
use std::collections::HashMap;
use std::hash::Hasher;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub const DIR: &str = ".locklint_cache";

#[derive(serde::Serialize, serde::Deserialize, Default)]
struct Stored {
    /// content hash → facts
    entries: HashMap<String, FileFacts>,
}

pub struct Cache {
    file: PathBuf,
    old: HashMap<String, FileFacts>,
    /// Entries used or added by this run (what the rewritten cache keeps).
    now: Mutex<HashMap<String, FileFacts>>,
    added: Mutex<usize>,
}

/// The key of one file's content (64-bit SipHash of the bytes and length,
/// deterministic across runs).
pub fn key(bytes: &[u8]) -> String {
    #[allow(deprecated)]
    let mut h = std::hash::SipHasher::new_with_keys(0x6c6f_636b, 0x6c69_6e74);
    h.write(bytes);
    h.write_usize(bytes.len());
    format!("{:016x}", h.finish())
}

impl Cache {
    /// Opens (or starts) the cache of the project at `root`.
    pub fn open(root: &Path, tests: bool) -> Cache {
        let file = root.join(DIR).join(format!(
            "facts-{}-{}.json",
            env!("CARGO_PKG_VERSION"),
            if tests { "tests" } else { "code" }
        ));
        let old = std::fs::read(&file)
            .ok()
            .and_then(|b| serde_json::from_slice::<Stored>(&b).ok())
            .map(|s| s.entries)
            .unwrap_or_default();
        Cache {
            file,
            old,
            now: Mutex::new(HashMap::new()),
            added: Mutex::new(0),
        }
    }

    /// The facts stored for this content, if any.
    pub fn get(&self, key: &str) -> Option<FileFacts> {
        let f = self.old.get(key)?.clone();
        if let Ok(mut now) = self.now.lock() {
            now.insert(key.to_string(), f.clone());
        }
        Some(f)
    }

    pub fn put(&self, key: String, facts: &FileFacts) {
        if let (Ok(mut now), Ok(mut added)) = (self.now.lock(), self.added.lock()) {
            now.insert(key, facts.clone());
            *added += 1;
        }
    }

    /// Writes the entries of this run (plus, for a partial run, the old
    /// ones it did not visit) when anything was added.
    pub fn save(self, whole_project: bool) {
        let added = self.added.into_inner().unwrap_or(0);
        if added == 0 {
            return;
        }
        let mut entries = self.now.into_inner().unwrap_or_default();
        if !whole_project {
            for (k, v) in self.old {
                entries.entry(k).or_insert(v);
            }
        }
        let Some(dir) = self.file.parent() else {
            return;
        };
        if std::fs::create_dir_all(dir).is_err() {
            return;
        }
        let ignore = dir.join(".gitignore");
        if !ignore.exists() {
            let _ = std::fs::write(&ignore, "# created by locklint\n*\n");
        }
        let Ok(bytes) = serde_json::to_vec(&Stored { entries }) else {
            return;
        };
        let tmp = self
            .file
            .with_extension(format!("tmp{}", std::process::id()));
        if std::fs::write(&tmp, bytes).is_ok() && std::fs::rename(&tmp, &self.file).is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
    }
}
