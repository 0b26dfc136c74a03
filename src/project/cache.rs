//! The phase-one cache (SPEC §5, in the spirit of ruff's `.ruff_cache`):
//! what phase one learnt about each file of the project, in
//! `.locklint_cache/` under the project root with its own `.gitignore`.
//! A run on five named files of a large project then parses only those
//! five, and reads no other file that did not change.
//!
//! Layout: one folder per locklint build (its version, and its commit when
//! built from git) and setting that changes facts
//! (`v<version>-<code|tests>-<plain|keys>/`), holding [`SHARDS`] shard files
//! (`NN.bin`, MessagePack through `rmp-serde`). A file's path (relative to
//! the project root) picks its shard. Each entry holds the file's size,
//! modification time and content hash, what phase one made of it (binary,
//! rejected by the prefilter, empty, or its facts, kept encoded until
//! asked for: a range of the shard's bytes as read, not a copy) and the
//! call-name scans' answer for a rejected file: whether it calls one of a
//! set of names, the sets kept in `names.bin` ([`names`]).
//!
//! Validation: a file whose size and modification time match its entry is
//! not read at all (when the entry was written at least [`SETTLE`] after
//! the file was last modified, so an edit in the same clock tick cannot
//! hide); otherwise it is read and its content hash decides. Only the
//! shards that changed are rewritten (to a temporary file, then renamed).
//! A cache that cannot be read is ignored; one that cannot be written is
//! skipped: the cache never changes what is reported.

use super::calls::PackedCalls;
use crate::facts::FileFacts;
use hashbrown::HashTable;
use rayon::prelude::*;
use std::borrow::Cow;
use std::hash::Hasher;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

mod names;
pub use names::{Answers, Names};

pub const DIR: &str = ".locklint_cache";

/// Shard files per setting.
const SHARDS: usize = 16;

/// A file modified less than this before the run started is always checked
/// by its content (file systems with coarse timestamps).
const SETTLE: Duration = Duration::from_secs(2);

/// A file's encoded facts: a range of a buffer shared by the entries of
/// one shard as it was read (a warm run copies no file's facts), or a
/// buffer of its own for facts made in this run. Written as MessagePack
/// bytes, like the `ByteBuf` it replaces (the shard format is unchanged).
/// (16 bytes: a shard of 74,000 entries holds one in most of them.)
#[derive(Clone, Debug)]
pub struct Blob {
    buf: Arc<Vec<u8>>,
    start: u32,
    end: u32,
}

impl Blob {
    /// `bytes` as a blob of their own (`None` beyond 4 GiB), their spare
    /// room given back: an encoder's buffer grows by doubling, and the
    /// facts of every file of the project wait in the cache until it is
    /// saved.
    fn own(mut bytes: Vec<u8>) -> Option<Blob> {
        bytes.shrink_to_fit();
        let end = u32::try_from(bytes.len()).ok()?;
        Some(Blob {
            buf: Arc::new(bytes),
            start: 0,
            end,
        })
    }

    /// `part`, borrowed from `buf`, as a range of it (`None` when it is not
    /// inside `buf`).
    fn within(buf: &Arc<Vec<u8>>, part: &[u8]) -> Option<Blob> {
        let (start, end) = range_within(buf, part)?;
        Some(Blob {
            buf: Arc::clone(buf),
            start,
            end,
        })
    }
}

/// Where `part`, borrowed from `buf`, lies in it (`None` when it is not
/// inside `buf`, or beyond 4 GiB).
fn range_within(buf: &[u8], part: &[u8]) -> Option<(u32, u32)> {
    let start = (part.as_ptr() as usize).checked_sub(buf.as_ptr() as usize)?;
    let end = start.checked_add(part.len())?;
    if end > buf.len() {
        return None;
    }
    Some((u32::try_from(start).ok()?, u32::try_from(end).ok()?))
}

impl Blob {
    /// `part` of this blob's bytes as a blob sharing its buffer (`None`
    /// when `part` is not inside the buffer).
    pub fn share(&self, part: &[u8]) -> Option<Blob> {
        Blob::within(&self.buf, part)
    }

    /// Its bytes are at least half of the buffer they are a range of.
    pub fn is_most_of_its_buffer(&self) -> bool {
        (self.end - self.start) as usize * 2 >= self.buf.len()
    }

    /// The address of the buffer this blob is a range of: the same for
    /// every blob of one shard as read.
    pub fn buffer_address(&self) -> usize {
        Arc::as_ptr(&self.buf) as usize
    }
}

impl std::ops::Deref for Blob {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.buf[self.start as usize..self.end as usize]
    }
}

impl PartialEq for Blob {
    fn eq(&self, other: &Blob) -> bool {
        **self == **other
    }
}

impl Eq for Blob {}

impl serde::Serialize for Blob {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(self)
    }
}

/// What phase one made of a file.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Outcome {
    /// A NUL byte near the start: skipped.
    Binary,
    /// No word a finding needs (the Redis prefilter).
    Rejected,
    /// Rejected, with the hashes of its call words that hold a call anchor
    /// (`prefilter::CallWords::anchored`, little-endian; `None`: it has
    /// none): a later call-name scan whose new names all hold an anchor
    /// needs no read of it ([`Outcome::signed`]).
    Signed(Option<Blob>),
    /// Empty after decoding.
    Empty,
    /// Its facts (MessagePack, decoded on demand).
    Facts(Blob),
    /// Minified JavaScript or TypeScript (`crate::minified`): the note a
    /// run that skips it gives, and its facts once a run scanned it (a
    /// named file, `include-minified`).
    Minified(Box<str>, Option<Blob>),
    /// A generated file (`crate::generated`), as [`Outcome::Minified`].
    Generated(Box<str>, Option<Blob>),
}

impl Outcome {
    /// A rejected file with its anchored call-word hashes.
    pub fn signed(anchored: &[u32]) -> Outcome {
        if anchored.is_empty() {
            return Outcome::Signed(None);
        }
        let bytes = anchored.iter().flat_map(|h| h.to_le_bytes()).collect();
        Outcome::Signed(Blob::own(bytes))
    }

    /// The anchored hashes of [`Outcome::Signed`] (`None` for any other).
    pub fn anchored(&self) -> Option<Box<[u32]>> {
        match self {
            Outcome::Signed(None) => Some(Box::default()),
            Outcome::Signed(Some(b)) => Some(
                b.chunks_exact(4)
                    .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect(),
            ),
            _ => None,
        }
    }

    /// The outcome of a minified or generated file: the note a run that
    /// skips it gives, and its facts once a run scanned it.
    pub fn skipped(why: &crate::minified::Why, facts: Option<Blob>) -> Outcome {
        if why.is_generated() {
            Outcome::Generated(why.note().into(), facts)
        } else {
            Outcome::Minified(why.note().into(), facts)
        }
    }
}

/// [`Outcome`] as read from a shard, its facts borrowed from the shard's
/// bytes.
#[derive(serde::Deserialize)]
enum RawOutcome<'a> {
    Binary,
    Rejected,
    Signed(#[serde(borrow)] Option<&'a serde_bytes::Bytes>),
    Empty,
    Facts(#[serde(borrow)] &'a serde_bytes::Bytes),
    Minified(
        #[serde(borrow)] &'a str,
        #[serde(borrow)] Option<&'a serde_bytes::Bytes>,
    ),
    Generated(
        #[serde(borrow)] &'a str,
        #[serde(borrow)] Option<&'a serde_bytes::Bytes>,
    ),
}

/// [`Entry`] as read from a shard (the same fields in the same order).
#[derive(serde::Deserialize)]
struct RawEntry<'a> {
    size: u64,
    mtime: u64,
    settled: bool,
    hash: u64,
    #[serde(borrow)]
    outcome: RawOutcome<'a>,
    scan: Option<(u64, bool)>,
}

/// A shard's map as read: its entries in the order written, keys and facts
/// borrowed (no map is built to be taken apart again).
struct RawShard<'a>(Vec<(&'a str, RawEntry<'a>)>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for RawShard<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visit<'a> {
            type Value = RawShard<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a map of cache entries")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                mut map: M,
            ) -> Result<RawShard<'a>, M::Error> {
                // the size hint is the shard's own word: bounded before use
                let mut out = Vec::with_capacity(map.size_hint().unwrap_or(0).min(1 << 16));
                while let Some((k, v)) = map.next_entry::<&'a str, RawEntry<'a>>()? {
                    out.push((k, v));
                }
                Ok(RawShard(out))
            }
        }
        d.deserialize_map(Visit(std::marker::PhantomData))
    }
}

/// The entries of one shard file; `None` when it cannot be decoded (or
/// its keys and facts are not borrowed from `buf`).
fn read_shard(buf: Vec<u8>) -> Option<Shard> {
    let buf = Arc::new(buf);
    let RawShard(raw) = rmp_serde::from_slice(&buf).ok()?;
    // (the keys are ranges of `buf`: the table rehashes them from it)
    let mut shard = Shard {
        read: Some(Arc::clone(&buf)),
        entries: Vec::with_capacity(raw.len()),
        index: HashTable::with_capacity(raw.len()),
        ..Shard::default()
    };
    let blob = |b: &[u8]| Blob::within(&buf, b);
    // a note's facts, when it has some: `None` when they are not in `buf`
    let maybe = |b: Option<&serde_bytes::Bytes>| match b {
        Some(b) => blob(b).map(Some),
        None => Some(None),
    };
    for (key, e) in raw {
        let outcome = match e.outcome {
            RawOutcome::Binary => Outcome::Binary,
            RawOutcome::Rejected => Outcome::Rejected,
            RawOutcome::Signed(bytes) => Outcome::Signed(maybe(bytes)?),
            RawOutcome::Empty => Outcome::Empty,
            RawOutcome::Facts(bytes) => Outcome::Facts(blob(bytes)?),
            RawOutcome::Minified(note, bytes) => Outcome::Minified(note.into(), maybe(bytes)?),
            RawOutcome::Generated(note, bytes) => Outcome::Generated(note.into(), maybe(bytes)?),
        };
        let (start, end) = range_within(&buf, key.as_bytes())?;
        let mut entry = Entry {
            key: KeyAt {
                start,
                len: end - start,
                added: false,
            },
            size: e.size,
            mtime: e.mtime,
            settled: e.settled,
            hash: e.hash,
            outcome,
            scan_names: 0,
            scan_answer: 0,
            seen: false,
        };
        entry.set_scan(e.scan);
        shard.push(key_hash(key.as_bytes()), entry);
    }
    Some(shard)
}

/// Where an entry's key (its path relative to the project root, UTF-8) is:
/// a range of the shard's bytes as read, or of the keys added in this run
/// (a warm run makes no `String` per file of the project).
#[derive(Clone, Copy, Debug)]
struct KeyAt {
    start: u32,
    len: u32,
    added: bool,
}

#[derive(Clone, Debug)]
struct Entry {
    key: KeyAt,
    size: u64,
    /// Modification time in nanoseconds since the epoch.
    mtime: u64,
    /// Size and time were settled when the entry was written.
    settled: bool,
    /// This run looked it up or stored it (a whole-project run keeps only these).
    seen: bool,
    hash: u64,
    outcome: Outcome,
    /// The last call-name scan of a rejected file: the hash of its names
    /// and `scan`'s answer, [`Entry::scan`] (two fields: an
    /// `Option<(u64, bool)>` takes 16 bytes, these 9 beside the flags).
    scan_names: u64,
    /// 0: no scan, 1: no call of the names, 2: a call.
    scan_answer: u8,
}

impl Entry {
    /// The last call-name scan: (names hash, whether the file calls one).
    fn scan(&self) -> Option<(u64, bool)> {
        (self.scan_answer != 0).then_some((self.scan_names, self.scan_answer == 2))
    }

    fn set_scan(&mut self, scan: Option<(u64, bool)>) {
        (self.scan_names, self.scan_answer) = match scan {
            Some((names, calls)) => (names, 1 + u8::from(calls)),
            None => (0, 0),
        };
    }
}

/// An entry as a shard file holds it, under its key (the fields of
/// [`RawEntry`], in its order).
#[derive(serde::Serialize)]
struct WrittenEntry<'a> {
    size: u64,
    mtime: u64,
    settled: bool,
    hash: u64,
    outcome: &'a Outcome,
    scan: Option<(u64, bool)>,
}

/// One shard's entries: a table of indices into a list, the keys in the
/// bytes they were read from or in one string of the keys added (about 90
/// bytes an entry beside its key; a map of keys and entries took 230 on a
/// tree of 74,000 files, the most of a run that fills the cache).
#[derive(Default)]
struct Shard {
    /// The shard file's bytes as read: the keys of the entries read.
    read: Option<Arc<Vec<u8>>>,
    /// The keys of the entries added in this run, one after another.
    added: String,
    entries: Vec<Entry>,
    /// Indices into `entries`, by [`key_hash`].
    index: HashTable<u32>,
    dirty: bool,
    /// Entries a whole-project save keeps (`seen`).
    kept: usize,
}

/// The hash of a key in a shard's table (within one run, never stored).
fn key_hash(key: &[u8]) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    h.write(key);
    h.finish()
}

/// The bytes of the key at `at`.
fn key_of<'s>(read: &'s Option<Arc<Vec<u8>>>, added: &'s str, at: KeyAt) -> &'s [u8] {
    let bytes = if at.added {
        added.as_bytes()
    } else {
        read.as_deref().map_or(&[][..], |b| &b[..])
    };
    let start = at.start as usize;
    bytes
        .get(start..start + at.len as usize)
        .unwrap_or_default()
}

impl Shard {
    /// Room for `files` entries in all, their keys `bytes` long in all.
    /// Nothing when it holds half of them already (a warm run: growing the
    /// list it was read into would copy it, and not every file walked gets
    /// an entry: test code is left out unless asked for).
    fn reserve(&mut self, files: usize, bytes: usize) {
        if self.entries.len() >= files / 2 {
            return;
        }
        let missing = files - self.entries.len();
        self.entries.reserve(missing);
        self.added
            .reserve((bytes.saturating_mul(missing) / files).saturating_sub(self.added.len()));
        let (read, added, entries) = (&self.read, &self.added, &self.entries);
        self.index.reserve(missing, |&j| {
            key_hash(key_of(read, added, entries[j as usize].key))
        });
    }

    /// Appends an entry whose key is not in the table yet.
    fn push(&mut self, hash: u64, entry: Entry) {
        let Ok(i) = u32::try_from(self.entries.len()) else {
            return;
        };
        self.kept += usize::from(entry.seen);
        self.entries.push(entry);
        let (read, added, entries) = (&self.read, &self.added, &self.entries);
        self.index.insert_unique(hash, i, |&j| {
            key_hash(key_of(read, added, entries[j as usize].key))
        });
    }

    fn find(&self, key: &[u8]) -> Option<usize> {
        let (read, added, entries) = (&self.read, &self.added, &self.entries);
        self.index
            .find(key_hash(key), |&j| {
                key_of(read, added, entries[j as usize].key) == key
            })
            .map(|&j| j as usize)
    }

    fn get(&self, key: &str) -> Option<&Entry> {
        self.find(key.as_bytes()).map(|i| &self.entries[i])
    }

    fn get_mut(&mut self, key: &str) -> Option<&mut Entry> {
        let i = self.find(key.as_bytes())?;
        Some(&mut self.entries[i])
    }

    /// Marks an entry seen by this run.
    fn see(&mut self, i: usize) {
        if !self.entries[i].seen {
            self.entries[i].seen = true;
            self.kept += 1;
        }
    }

    /// Stores `entry` under `key`, in place of the entry it had.
    fn insert(&mut self, key: &str, mut entry: Entry) {
        if let Some(i) = self.find(key.as_bytes()) {
            let old = &mut self.entries[i];
            entry.key = old.key;
            self.kept -= usize::from(old.seen);
            self.kept += usize::from(entry.seen);
            *old = entry;
            return;
        }
        let (Ok(start), Ok(len)) = (u32::try_from(self.added.len()), u32::try_from(key.len()))
        else {
            return;
        };
        if start.checked_add(len).is_none() {
            return;
        }
        self.added.push_str(key);
        entry.key = KeyAt {
            start,
            len,
            added: true,
        };
        self.push(key_hash(key.as_bytes()), entry);
    }

    /// Its entries as a shard file holds them: all of them, or only those
    /// this run saw (the tests' reading; a save writes to the file).
    #[cfg(test)]
    fn write(&self, only_seen: bool) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        self.write_to(&mut out, only_seen).then_some(out)
    }

    /// [`Shard::write`] into `out` (a file: a shard of the real-code
    /// benchmark is 2–5 MB, built in a buffer it doubled twice more).
    fn write_to(&self, out: &mut impl std::io::Write, only_seen: bool) -> bool {
        let written = Written {
            shard: self,
            only_seen,
        };
        rmp_serde::encode::write(out, &written).is_ok()
    }
}

/// A shard as written: a map of keys to entries.
struct Written<'a> {
    shard: &'a Shard,
    only_seen: bool,
}

impl serde::Serialize for Written<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let shard = self.shard;
        let n = if self.only_seen {
            shard.kept
        } else {
            shard.entries.len()
        };
        let mut map = s.serialize_map(Some(n))?;
        for e in &shard.entries {
            if self.only_seen && !e.seen {
                continue;
            }
            // always UTF-8: added as a `&str`, or read as one from a shard
            let key = std::str::from_utf8(key_of(&shard.read, &shard.added, e.key))
                .map_err(serde::ser::Error::custom)?;
            map.serialize_entry(
                key,
                &WrittenEntry {
                    size: e.size,
                    mtime: e.mtime,
                    settled: e.settled,
                    hash: e.hash,
                    outcome: &e.outcome,
                    scan: e.scan(),
                },
            )?;
        }
        map.end()
    }
}

pub struct Cache {
    dir: PathBuf,
    root: PathBuf,
    shards: Vec<Mutex<Shard>>,
    started: u64,
    /// The names the call-name scan answers refer to (`names.bin`).
    names: names::NameSets,
}

/// A file's size and modification time, as the cache compares them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stat {
    pub size: u64,
    pub mtime: u64,
}

impl Stat {
    pub fn of(meta: &std::fs::Metadata) -> Stat {
        let mtime = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        Stat {
            size: meta.len(),
            mtime,
        }
    }
}

/// The hash of one file's content (64-bit SipHash of the bytes and length,
/// deterministic across runs).
pub fn hash(bytes: &[u8]) -> u64 {
    #[allow(deprecated)]
    let mut h = std::hash::SipHasher::new_with_keys(0x6c6f_636b, 0x6c69_6e74);
    h.write(bytes);
    h.write_usize(bytes.len());
    h.finish()
}

/// The hash of a set of names (the call-name scan's automaton).
pub fn names_hash<'a>(names: impl IntoIterator<Item = &'a String>) -> u64 {
    #[allow(deprecated)]
    let mut h = std::hash::SipHasher::new_with_keys(0x6e61_6d65, 0x7363_616e);
    for n in names {
        h.write(n.as_bytes());
        h.write_u8(0);
    }
    h.finish()
}

fn shard_of(key: &str) -> usize {
    (hash(key.as_bytes()) % SHARDS as u64) as usize
}

/// The first byte of an encoded file's facts (the layout of [`encode`]).
const FACTS_MAGIC: u8 = b'L';

/// Bytes before the pairs of a file's [`Uses`]: magic, language, own ops,
/// pair count (u32, little-endian).
const USES_HEAD: usize = 7;

/// The hash of a function name as [`Uses`] keeps it (never 0: 0 stands
/// for a call outside every named function).
pub fn name_hash(name: &str) -> u64 {
    #[allow(deprecated)]
    let mut h = std::hash::SipHasher::new_with_keys(0x7573_6573, 0x6e61_6d65);
    h.write(name.as_bytes());
    h.finish().max(1)
}

/// What the link can use of a file, readable without decoding its facts
/// (the head of [`encode`]'s bytes): its language, whether it has Redis
/// ops of its own, and each distinct (callee, caller) pair of its calls
/// as [`name_hash`]es (caller 0: a call outside every named function).
/// A file without ops none of whose callees the link's closure of names
/// reaches (`engine`'s lazy rest of the project) contributes nothing to
/// the link: its facts are never decoded.
pub struct Uses<'a> {
    pub language: crate::facts::Language,
    pub has_ops: bool,
    pairs: &'a [u8],
}

impl Uses<'_> {
    /// The (callee, caller) pairs.
    pub fn pairs(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.pairs.chunks_exact(16).map(|c| {
            let (a, b) = c.split_at(8);
            (
                u64::from_le_bytes(a.try_into().unwrap_or_default()),
                u64::from_le_bytes(b.try_into().unwrap_or_default()),
            )
        })
    }
}

/// The (callee, caller) name-hash pairs of a file's calls, sorted, once each.
pub fn call_pairs(facts: &FileFacts) -> Vec<(u64, u64)> {
    pairs_of(
        facts,
        facts.link.calls.iter().map(|c| (&*c.callee, c.scope)),
    )
}

/// [`call_pairs`] of the calls given as (callee, caller scope).
fn pairs_of<'a>(
    facts: &FileFacts,
    calls: impl Iterator<Item = (&'a str, crate::facts::ScopeId)>,
) -> Vec<(u64, u64)> {
    let mut pairs: Vec<(u64, u64)> = calls
        .map(|(callee, scope)| {
            let caller = facts
                .scopes
                .get(scope as usize)
                .filter(|s| !s.name.is_empty())
                .map_or(0, |s| name_hash(&s.name));
            (name_hash(callee), caller)
        })
        .collect();
    pairs.sort_unstable();
    pairs.dedup();
    pairs
}

/// A file's facts as the cache keeps them: a [`Uses`] head, then the facts
/// (MessagePack) with their calls apart, packed (`calls::PackedCalls`), so
/// that a run taking the facts from the cache decodes only the calls the
/// link can use, and a file the link cannot use not at all. `packed`: the
/// calls already packed (`facts.link.calls` is then empty).
pub fn encode(facts: &mut FileFacts, packed: Option<&PackedCalls>) -> Option<Outcome> {
    let own;
    let packed = match packed {
        Some(p) => Some(p),
        None => {
            own = PackedCalls::of(&facts.link.calls);
            if own.is_none() && !facts.link.calls.is_empty() {
                return None;
            }
            own.as_ref()
        }
    };
    let pairs = match packed {
        Some(p) if facts.link.calls.is_empty() => pairs_of(facts, p.names.iter()),
        _ => call_pairs(facts),
    };
    let mut bytes = Vec::with_capacity(USES_HEAD + 16 * pairs.len());
    bytes.push(FACTS_MAGIC);
    bytes.push(facts.language as u8);
    // (a file of time constants is read like one with ops: another file's
    // TTL or task limit may name one, `project::limits`)
    bytes.push(u8::from(
        !facts.ops.is_empty() || !facts.int_consts.is_empty(),
    ));
    bytes.extend_from_slice(&u32::try_from(pairs.len()).ok()?.to_le_bytes());
    for (a, b) in pairs {
        bytes.extend_from_slice(&a.to_le_bytes());
        bytes.extend_from_slice(&b.to_le_bytes());
    }
    let calls = std::mem::take(&mut facts.link.calls);
    let done = rmp_serde::encode::write(&mut bytes, &(&*facts, packed)).ok();
    facts.link.calls = calls;
    done?;
    Some(Outcome::Facts(Blob::own(bytes)?))
}

/// The [`Uses`] head of [`encode`]'s bytes and the rest; `None` for bytes
/// of another layout.
fn split_uses(bytes: &[u8]) -> Option<(Uses<'_>, &[u8])> {
    let head = bytes.get(..USES_HEAD)?;
    if head[0] != FACTS_MAGIC {
        return None;
    }
    let language = crate::facts::Language::ALL
        .iter()
        .copied()
        .find(|l| *l as u8 == head[1])?;
    let n = u32::from_le_bytes(head[3..7].try_into().ok()?) as usize;
    let end = n.checked_mul(16)?.checked_add(USES_HEAD)?;
    let pairs = bytes.get(USES_HEAD..end)?;
    Some((
        Uses {
            language,
            has_ops: head[2] != 0,
            pairs,
        },
        &bytes[end..],
    ))
}

/// The [`Uses`] of [`encode`]'s bytes, their facts left encoded.
pub fn uses(bytes: &[u8]) -> Option<Uses<'_>> {
    split_uses(bytes).map(|(u, _)| u)
}

/// What [`encode`] kept: the facts (their calls empty) and the calls,
/// copied out of `bytes` (the tests' reading of any slice; a run reads
/// through [`decode_shared`]).
#[cfg(test)]
pub fn decode(bytes: &[u8]) -> Option<(FileFacts, Option<PackedCalls>)> {
    rmp_serde::from_slice(split_uses(bytes)?.1).ok()
}

/// The packed calls of [`encode`]'s bytes alone (the facts stepped over),
/// a range of `blob`'s buffer: what [`super::calls::PackedCalls::take`] would
/// make of the facts the bytes were made of, without packing them again.
pub fn packed_calls(blob: &Blob) -> Option<PackedCalls> {
    let (_, raw): (
        serde::de::IgnoredAny,
        Option<super::calls::RawPackedCalls<'_>>,
    ) = rmp_serde::from_slice(split_uses(blob)?.1).ok()?;
    Some(raw?.into_packed(|part| blob.share(part)))
}

/// [`decode`], the packed calls left a range of `blob`'s buffer (a warm
/// run then holds each file's calls once, in the shard they were read
/// from, not a copy beside it).
pub fn decode_shared(blob: &Blob) -> Option<(FileFacts, Option<PackedCalls>)> {
    let (facts, raw): (FileFacts, Option<super::calls::RawPackedCalls<'_>>) =
        rmp_serde::from_slice(split_uses(blob)?.1).ok()?;
    Some((facts, raw.map(|r| r.into_packed(|part| blob.share(part)))))
}

/// A cache folder of another build than `build` (`v0.1.0-abc123`): named
/// `v…-{tests|code}-{keys|plain}` with a different version part.
fn stale_build_dir(name: &str, build: &str) -> bool {
    let mut parts = name.rsplitn(3, '-');
    let (Some(keys), Some(tests), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    version.starts_with('v')
        && matches!(tests, "tests" | "code")
        && matches!(keys, "keys" | "plain")
        && version != build
}

/// Creates a cache folder (`DIR/<setting>`) and `DIR`'s own `.gitignore`.
pub(crate) fn make_dir(dir: &Path) -> bool {
    if std::fs::create_dir_all(dir).is_err() {
        return false;
    }
    if let Some(top) = dir.parent() {
        let ignore = top.join(".gitignore");
        if !ignore.exists() {
            let _ = std::fs::write(&ignore, "# created by locklint\n*\n");
        }
    }
    true
}

/// The cache folder of the project at `root` for these settings.
fn setting_dir(root: &Path, tests: bool, custom_keys: bool) -> PathBuf {
    // the build's version names its commit when built from git, so a
    // development build never reads facts of another build's shape
    let version: String = env!("LOCKLINT_VERSION")
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '.'))
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    root.join(DIR).join(format!(
        "v{version}-{}-{}",
        if tests { "tests" } else { "code" },
        if custom_keys { "keys" } else { "plain" }
    ))
}

/// What [`Cache::key`] makes of `path` when it is `root`, `/` and a plain
/// relative path (no empty or `.` part, no trailing `/`: the walk's paths
/// under the root), found by its bytes instead of part by part; `None`
/// for any other path.
#[cfg(unix)]
fn plain_rel<'p>(path: &'p Path, root: &Path) -> Option<Cow<'p, str>> {
    use std::os::unix::ffi::OsStrExt;
    let rest = path
        .as_os_str()
        .as_bytes()
        .strip_prefix(root.as_os_str().as_bytes())?
        .strip_prefix(b"/")?;
    let plain = !rest.is_empty()
        && rest
            .split(|&b| b == b'/')
            .all(|part| !part.is_empty() && part != b".");
    plain.then(|| String::from_utf8_lossy(rest))
}

#[cfg(not(unix))]
fn plain_rel<'p>(_path: &'p Path, _root: &Path) -> Option<Cow<'p, str>> {
    None
}

/// Where the folder listing of the project at `root` is kept for these
/// settings (`project::listing`), beside the shards.
pub fn listing_file(root: &Path, tests: bool, custom_keys: bool) -> PathBuf {
    setting_dir(root, tests, custom_keys).join("walk.bin")
}

/// The sets of names of the call-name scans' answers ([`names`]), beside
/// the shards.
const NAMES_FILE: &str = "names.bin";

/// Drops the shards on all workers (each holds thousands of entries).
fn let_go(shards: Vec<Shard>) {
    shards.into_par_iter().for_each(drop);
}

impl Cache {
    /// Opens (or starts) the cache of the project at `root` for these
    /// settings; the shards are read in parallel.
    pub fn open(root: &Path, tests: bool, custom_keys: bool) -> Cache {
        let dir = setting_dir(root, tests, custom_keys);
        let shards = (0..SHARDS)
            .into_par_iter()
            .map(|i| {
                let shard = std::fs::read(dir.join(format!("{i:02}.bin")))
                    .ok()
                    .and_then(read_shard)
                    .unwrap_or_default();
                Mutex::new(shard)
            })
            .collect();
        let started = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        let names = names::NameSets::read(&dir.join(NAMES_FILE));
        Cache {
            dir,
            root: root.to_path_buf(),
            shards,
            started,
            names,
        }
    }

    /// Makes room, in a cache nearly empty, for the entries of `paths`: a
    /// tenth more than an even share per shard (grown by doubling, a
    /// shard's list, keys and table were copied at each step while the
    /// facts piled up: a first run on the real-code benchmark peaked 2 MB
    /// higher).
    pub fn expect<'p>(&self, paths: impl Iterator<Item = &'p Path>) {
        let (mut files, mut bytes) = (0usize, 0usize);
        for p in paths {
            files += 1;
            bytes += self.key(p).len();
        }
        let share = |n: usize| n / SHARDS + n / SHARDS / 10 + 1;
        let (files, bytes) = (share(files), share(bytes));
        for shard in &self.shards {
            if let Ok(mut s) = shard.lock() {
                s.reserve(files, bytes);
            }
        }
    }

    /// The key of a path: relative to the project root, `/`-separated.
    pub fn key<'p>(&self, path: &'p Path) -> Cow<'p, str> {
        if let Some(rel) = plain_rel(path, &self.root) {
            return rel;
        }
        let rel = path.strip_prefix(&self.root).unwrap_or(path);
        let rel = rel.strip_prefix(".").unwrap_or(rel);
        let rel = rel.to_string_lossy();
        if rel.contains('\\') {
            Cow::Owned(rel.replace('\\', "/"))
        } else {
            rel
        }
    }

    fn shard(&self, key: &str) -> Option<std::sync::MutexGuard<'_, Shard>> {
        self.shards[shard_of(key)].lock().ok()
    }

    /// What phase one made of the file when its size and modification time
    /// say it did not change (the file is not read).
    pub fn by_stat(&self, key: &str, stat: Stat) -> Option<Outcome> {
        self.by_stat_with(key, stat, |out| Some(out.clone()))
    }

    /// [`Cache::by_stat`], `use_it` given the outcome in place (a file's
    /// facts are decoded without copying their bytes first).
    pub fn by_stat_with<R>(
        &self,
        key: &str,
        stat: Stat,
        use_it: impl FnOnce(&Outcome) -> Option<R>,
    ) -> Option<R> {
        let mut shard = self.shard(key)?;
        let i = shard.find(key.as_bytes())?;
        let e = &shard.entries[i];
        if !(e.settled && e.size == stat.size && e.mtime == stat.mtime) {
            return None;
        }
        shard.see(i);
        use_it(&shard.entries[i].outcome)
    }

    /// What phase one made of this content (the file was read: its size or
    /// time changed, or were not settled); the entry's stat is refreshed.
    pub fn by_hash(&self, key: &str, stat: Stat, hash: u64) -> Option<Outcome> {
        let settled = self.settled(stat);
        let mut shard = self.shard(key)?;
        let i = shard.find(key.as_bytes())?;
        if shard.entries[i].hash != hash {
            return None;
        }
        shard.see(i);
        let e = &mut shard.entries[i];
        let out = e.outcome.clone();
        if (e.size, e.mtime, e.settled) != (stat.size, stat.mtime, settled) {
            (e.size, e.mtime, e.settled) = (stat.size, stat.mtime, settled);
            shard.dirty = true;
        }
        Some(out)
    }

    fn settled(&self, stat: Stat) -> bool {
        stat.mtime.saturating_add(SETTLE.as_nanos() as u64) < self.started
    }

    /// Stores what phase one made of the file.
    pub fn put(&self, key: &str, stat: Stat, hash: u64, outcome: Outcome) {
        let settled = self.settled(stat);
        let Some(mut shard) = self.shard(key) else {
            return;
        };
        shard.insert(
            key,
            Entry {
                key: KeyAt {
                    start: 0,
                    len: 0,
                    added: true,
                },
                size: stat.size,
                mtime: stat.mtime,
                settled,
                hash,
                outcome,
                scan_names: 0,
                scan_answer: 0,
                seen: true,
            },
        );
        shard.dirty = true;
    }

    /// The kept answers as a call-name scan of `names` (sorted, each once)
    /// reads and writes them.
    pub fn answers(&self, names: Names) -> Answers<'_> {
        self.names.answers(names)
    }

    /// What the call-name scans' answers kept for this unchanged file say
    /// of the scan of `answers` ([`Answers::of`]).
    pub fn scan(&self, key: &str, stat: Stat, answers: &Answers) -> Option<bool> {
        let shard = self.shard(key)?;
        let e = shard.get(key)?;
        if !(e.settled && e.size == stat.size && e.mtime == stat.mtime) {
            return None;
        }
        answers.of(e.scan())
    }

    /// The call-name scans' answer kept for this file (set id, whether it
    /// calls one of its names), when its entry is current: this run found
    /// it so already, or `stat` (asked only then) matches it.
    pub fn kept_answer(
        &self,
        key: &str,
        stat: impl FnOnce() -> Option<Stat>,
    ) -> Option<(u64, bool)> {
        let seen = {
            let shard = self.shard(key)?;
            let e = shard.get(key)?;
            if e.seen {
                return e.scan();
            }
            (e.settled, e.size, e.mtime)
        };
        // (the shard is not held while the file is asked for its size)
        let stat = stat()?;
        if !(seen.0 && seen.1 == stat.size && seen.2 == stat.mtime) {
            return None;
        }
        self.shard(key)?.get(key)?.scan()
    }

    /// Keeps the answer of the scan of `answers` for this file: whether it
    /// calls one of the names ([`Answers::to_keep`]).
    pub fn put_scan(&self, key: &str, answers: &Answers, calls: bool) {
        let Some(mut shard) = self.shard(key) else {
            return;
        };
        let Some(e) = shard.get_mut(key) else {
            return;
        };
        let keep = answers.to_keep(e.scan(), calls);
        if e.scan() != Some(keep) {
            e.set_scan(Some(keep));
            shard.dirty = true;
        }
    }

    /// Writes the shards that changed. A run over the whole project also
    /// forgets the files it did not see (deleted or now ignored); a partial
    /// run keeps them.
    pub fn save(self, whole_project: bool) {
        let mut shards: Vec<Shard> = self
            .shards
            .into_iter()
            .filter_map(|m| m.into_inner().ok())
            .collect();
        if whole_project {
            for s in &mut shards {
                s.dirty |= s.kept != s.entries.len();
            }
        }
        if !shards.iter().any(|s| s.dirty) || !make_dir(&self.dir) {
            let_go(shards);
            return;
        }
        if let Some(top) = self.dir.parent() {
            // The one-file JSON cache of earlier builds and the folders of
            // other builds (`v<version>-<tests>-<keys>`) are never read again
            // by this build; the folders of its other settings stay.
            let own = self
                .dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let build = own.rsplitn(3, '-').nth(2).unwrap_or(&own).to_string();
            for e in std::fs::read_dir(top).into_iter().flatten().flatten() {
                let name = e.file_name();
                let name = name.to_string_lossy();
                if name.starts_with("facts-") && name.ends_with(".json") {
                    let _ = std::fs::remove_file(e.path());
                } else if stale_build_dir(&name, &build) && e.path().is_dir() {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
        // the sets of names the answers written refer to
        let keep: rustc_hash::FxHashSet<u64> = shards
            .iter()
            .flat_map(|s| &s.entries)
            .filter(|e| e.seen || !whole_project)
            .filter_map(|e| e.scan())
            .filter(|(_, calls)| !calls)
            .map(|(id, _)| id)
            .collect();
        self.names.write(&self.dir.join(NAMES_FILE), &keep);
        let dir = &self.dir;
        shards.par_iter().enumerate().for_each(|(i, s)| {
            if !s.dirty {
                return;
            }
            let file = dir.join(format!("{i:02}.bin"));
            let tmp = dir.join(format!("{i:02}.tmp{}", std::process::id()));
            let written = std::fs::File::create(&tmp).is_ok_and(|f| {
                let mut out = std::io::BufWriter::with_capacity(1 << 16, f);
                s.write_to(&mut out, whole_project) && out.flush().is_ok()
            });
            if !written || std::fs::rename(&tmp, &file).is_err() {
                let _ = std::fs::remove_file(&tmp);
            }
        });
        let_go(shards);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(outcome: Outcome) -> Entry {
        let mut e = Entry {
            key: KeyAt {
                start: 0,
                len: 0,
                added: true,
            },
            size: 12,
            mtime: 34,
            settled: true,
            hash: 56,
            outcome,
            scan_names: 0,
            scan_answer: 0,
            seen: true,
        };
        e.set_scan(Some((7, true)));
        e
    }

    #[test]
    fn a_key_by_bytes_is_the_key_part_by_part() {
        // the key as the path's parts give it
        fn by_parts(root: &Path, path: &Path) -> String {
            let rel = path.strip_prefix(root).unwrap_or(path);
            let rel = rel.strip_prefix(".").unwrap_or(rel);
            rel.to_string_lossy().replace('\\', "/")
        }
        for root in ["corpus", "./corpus", "/abs/corpus", "corpus/", "."] {
            let cache = Cache {
                dir: PathBuf::new(),
                root: PathBuf::from(root),
                shards: Vec::new(),
                started: 0,
                names: Default::default(),
            };
            for rel in [
                "a.py",
                "src/a.py",
                "src/./a.py",
                "./src/a.py",
                "src//a.py",
                "src/a/",
                "src/.",
                "../up.py",
                ".hidden/a.py",
                "a..b/c.py",
            ] {
                for path in [
                    format!("{root}/{rel}"),
                    format!("{root}{rel}"),
                    rel.to_string(),
                ] {
                    let path = PathBuf::from(path);
                    assert_eq!(
                        cache.key(&path),
                        by_parts(&cache.root, &path),
                        "{root} {}",
                        path.display()
                    );
                }
            }
        }
    }

    #[test]
    fn a_shard_reads_back_its_facts_borrowed_and_a_damaged_one_is_ignored() {
        let made = [
            ("a.py", Outcome::Facts(Blob::own(vec![1, 2, 3]).unwrap())),
            ("b.go", Outcome::Rejected),
            ("b2.go", Outcome::signed(&[])),
            ("b3.go", Outcome::signed(&[7, u32::MAX])),
            ("src/c.rs", Outcome::Facts(Blob::own(vec![9; 300]).unwrap())),
            ("d.bin", Outcome::Binary),
            ("e.js", Outcome::Minified("minified".into(), None)),
        ];
        let mut shard = Shard::default();
        for (k, out) in &made {
            shard.insert(k, entry(Outcome::Rejected));
            // stored again: in place of the first
            shard.insert(k, entry(out.clone()));
        }
        assert_eq!((shard.entries.len(), shard.kept), (made.len(), made.len()));
        let bytes = shard.write(false).unwrap();
        let mut back = read_shard(bytes.clone()).expect("reads");
        assert_eq!((back.entries.len(), back.kept), (made.len(), 0));
        for (k, out) in &made {
            let b = back.get(k).expect(k);
            assert_eq!(&b.outcome, out, "{k}");
            assert_eq!((b.size, b.mtime, b.settled, b.hash), (12, 34, true, 56));
            assert_eq!(b.scan(), Some((7, true)));
            assert!(!b.seen);
        }
        assert!(back.get("a.p").is_none() && back.get("src").is_none());
        // a rejected file's anchored hashes come back as they went
        let anchored = |k: &str| back.get(k).and_then(|e| e.outcome.anchored());
        assert_eq!(anchored("b.go"), None, "not signed");
        assert_eq!(anchored("b2.go").as_deref(), Some(&[][..]));
        assert_eq!(anchored("b3.go").as_deref(), Some(&[7, u32::MAX][..]));
        // the facts are ranges of the one buffer read
        let read = back.read.clone().expect("read");
        for k in ["a.py", "src/c.rs"] {
            let Outcome::Facts(x) = &back.get(k).unwrap().outcome else {
                panic!("facts lost");
            };
            assert!(Arc::ptr_eq(&x.buf, &read));
        }
        // and so are the keys
        assert!(back.added.is_empty() && back.entries.iter().all(|e| !e.key.added));
        // one seen, one added: a whole-project save keeps those two
        back.see(back.find(b"src/c.rs").unwrap());
        back.insert("f/new.rb", entry(Outcome::Empty));
        let kept = read_shard(back.write(true).unwrap()).expect("reads");
        let mut keys: Vec<&str> = kept
            .entries
            .iter()
            .map(|e| std::str::from_utf8(key_of(&kept.read, &kept.added, e.key)).unwrap())
            .collect();
        keys.sort_unstable();
        assert_eq!(keys, ["f/new.rb", "src/c.rs"]);
        // a partial one keeps them all
        assert_eq!(
            read_shard(back.write(false).unwrap())
                .expect("reads")
                .entries
                .len(),
            made.len() + 1
        );
        // truncated or damaged: ignored, never a panic
        for cut in 0..bytes.len() {
            assert!(read_shard(bytes[..cut].to_vec()).is_none(), "cut at {cut}");
        }
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0xff;
            let _ = read_shard(bad);
        }
    }

    #[test]
    fn a_shard_finds_each_of_many_keys_and_no_other() {
        let mut shard = Shard::default();
        let keys: Vec<String> = (0..5000).map(|i| format!("src/m{i}/f.py")).collect();
        for (i, k) in keys.iter().enumerate() {
            if i == 100 {
                // room made with entries in (the table rehashes them)
                shard.reserve(keys.len(), keys.iter().map(|k| k.len()).sum());
                assert!(shard.entries.capacity() >= keys.len());
            }
            let mut e = entry(Outcome::Rejected);
            e.hash = i as u64;
            shard.insert(k, e);
        }
        let mut back = read_shard(shard.write(false).unwrap()).expect("reads");
        for s in [&shard, &back] {
            for (i, k) in keys.iter().enumerate() {
                assert_eq!(s.get(k).map(|e| e.hash), Some(i as u64), "{k}");
            }
            assert!(s.get("src/m5000/f.py").is_none() && s.get("").is_none());
        }
        // keys added to a shard as read: its table grows, rehashing the
        // keys read from their bytes
        for i in 5000..12000u64 {
            let mut e = entry(Outcome::Empty);
            e.hash = i;
            back.insert(&format!("src/m{i}/f.py"), e);
        }
        for i in 0..12000u64 {
            assert_eq!(back.get(&format!("src/m{i}/f.py")).map(|e| e.hash), Some(i));
        }
    }

    #[test]
    fn a_scan_answer_of_none_serves_the_next_run_for_fewer_names() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let names = |list: &[&str]| -> Names { list.iter().map(|s| s.to_string()).collect() };
        let stat = Stat { size: 10, mtime: 1 };
        let first = Cache::open(root, false, false);
        first.put("a.go", stat, 5, Outcome::Rejected);
        first.put("b.go", stat, 6, Outcome::Rejected);
        let scan = first.answers(names(&["acquireLock", "claimSlot"]));
        first.put_scan("a.go", &scan, false);
        first.put_scan("b.go", &scan, true);
        drop(scan);
        first.save(true);
        // the next run asks one name fewer (or one other)
        let next = Cache::open(root, false, false);
        let fewer = next.answers(names(&["claimSlot"]));
        assert_eq!(next.scan("a.go", stat, &fewer), Some(false));
        assert_eq!(
            next.scan("b.go", stat, &fewer),
            None,
            "a call of which name?"
        );
        let other = next.answers(names(&["claimSlot", "grabLease"]));
        assert_eq!(next.scan("a.go", stat, &other), None);
        // a changed file: no answer
        assert_eq!(next.scan("a.go", Stat { size: 11, mtime: 1 }, &fewer), None);
        // found calling none of the other names too: both sets in one
        next.put_scan("a.go", &other, false);
        drop((fewer, other));
        // (a partial run: the entries it did not look up are kept)
        next.save(false);
        let last = Cache::open(root, false, false);
        let all = last.answers(names(&["acquireLock", "claimSlot", "grabLease"]));
        assert_eq!(last.scan("a.go", stat, &all), Some(false));
    }

    #[test]
    fn an_entry_keeps_each_scan_answer() {
        let mut e = entry(Outcome::Rejected);
        for scan in [
            None,
            Some((0, false)),
            Some((u64::MAX, true)),
            Some((9, false)),
            None,
        ] {
            e.set_scan(scan);
            assert_eq!(e.scan(), scan);
        }
    }
}
