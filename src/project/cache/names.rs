//! The names behind the cache's call-name scan answers. A rejected file's
//! answer is kept under the id of a set of names (`super::names_hash` of
//! the sorted names): "it calls one of them", or "it calls none of them".
//! The second stays true of any subset, so it is kept for the union of
//! every set the file was found calling none of, and a later scan whose
//! names are all in that union needs no read of the file. (A run that
//! fills the cache and the run after it ask slightly different names: the
//! files the first one's scan found are phase-one files in the second.
//! Under one hash per set of names, the second run read every rejected
//! file of the project again.) The sets are kept in `names.bin` beside the
//! shards, those no entry refers to dropped at each save.

use rustc_hash::{FxHashMap, FxHashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// A set of names, sorted, each once.
pub type Names = Arc<[String]>;

/// Most names a union keeps: past it a file's answer is kept for the last
/// scan's names alone.
const MAX_NAMES: usize = 4096;

/// The sets of names the cache's answers refer to, by id.
#[derive(Default)]
pub struct NameSets {
    sets: Mutex<FxHashMap<u64, Names>>,
    /// Sets were added since they were read.
    added: std::sync::atomic::AtomicBool,
}

impl NameSets {
    /// The sets written at `path`; none when it cannot be read.
    pub fn read(path: &Path) -> NameSets {
        let sets: FxHashMap<u64, Names> = std::fs::read(path)
            .ok()
            .and_then(|b| rmp_serde::from_slice::<Vec<(u64, Vec<String>)>>(&b).ok())
            .unwrap_or_default()
            .into_iter()
            // (an id that is not its names' is a damaged file: left out)
            .filter(|(id, names)| *id == super::names_hash(names.iter()))
            .map(|(id, names)| (id, Names::from(names)))
            .collect();
        NameSets {
            sets: Mutex::new(sets),
            added: Default::default(),
        }
    }

    fn add(&self, id: u64, names: &Names) {
        let mut sets = self.sets.lock().unwrap_or_else(|e| e.into_inner());
        if let std::collections::hash_map::Entry::Vacant(slot) = sets.entry(id) {
            slot.insert(Names::clone(names));
            self.added.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// The set of this id, if known.
    fn get(&self, id: u64) -> Option<Names> {
        let sets = self.sets.lock().unwrap_or_else(|e| e.into_inner());
        sets.get(&id).cloned()
    }

    /// What the answers kept say of a scan of `names` (sorted, each once),
    /// which is added to the sets.
    pub fn answers(&self, names: Names) -> Answers<'_> {
        let id = super::names_hash(names.iter());
        self.add(id, &names);
        let covered = self
            .sets
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|(_, set)| is_subset(&names, set))
            .map(|(&sid, _)| sid)
            .collect();
        Answers {
            id,
            names,
            covered,
            unions: Mutex::default(),
            beyond: Mutex::default(),
            sets: self,
        }
    }

    /// Writes the sets of `keep` to `path` when sets were added or some
    /// are no longer referred to (to a temporary file, then renamed).
    pub fn write(&self, path: &Path, keep: &FxHashSet<u64>) {
        let sets = self.sets.lock().unwrap_or_else(|e| e.into_inner());
        let added = self.added.load(std::sync::atomic::Ordering::Relaxed);
        if !added && sets.keys().all(|id| keep.contains(id)) {
            return;
        }
        let mut out: Vec<(u64, &[String])> = sets
            .iter()
            .filter(|(id, _)| keep.contains(id))
            .map(|(&id, names)| (id, &names[..]))
            .collect();
        out.sort_unstable_by_key(|(id, _)| *id);
        let Ok(bytes) = rmp_serde::to_vec(&out) else {
            return;
        };
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        if std::fs::write(&tmp, bytes).is_err() || std::fs::rename(&tmp, path).is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
    }
}

/// Every name of `small` is in `big` (both sorted).
fn is_subset(small: &[String], big: &[String]) -> bool {
    if small.len() > big.len() {
        return false;
    }
    let mut big = big.iter();
    small.iter().all(|n| big.by_ref().any(|b| b == n))
}

/// The union of two sorted sets.
fn union(a: &[String], b: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => {
                out.push(a[i].clone());
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                out.push(b[j].clone());
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                out.push(a[i].clone());
                i += 1;
                j += 1;
            }
        }
    }
    out.extend(a[i..].iter().cloned());
    out.extend(b[j..].iter().cloned());
    out
}

/// The kept answers as one scan reads and writes them
/// ([`NameSets::answers`]).
pub struct Answers<'a> {
    /// The id of the scan's names.
    id: u64,
    names: Names,
    /// The ids of the sets holding every name of the scan.
    covered: FxHashSet<u64>,
    /// The union of each set with the scan's names, made once.
    unions: Mutex<FxHashMap<u64, u64>>,
    /// Per set, what [`Answers::beyond`] made of the names it lacks.
    beyond: Mutex<FxHashMap<u64, Option<Arc<[u32]>>>>,
    sets: &'a NameSets,
}

impl Answers<'_> {
    /// What a kept answer (set id, whether the file calls one of its
    /// names) says of this scan: it calls one of its names when it called
    /// one of the same names, none when it called none of a set holding
    /// them all; `None` when it cannot tell.
    pub fn of(&self, kept: Option<(u64, bool)>) -> Option<bool> {
        match kept? {
            (sid, true) => (sid == self.id).then_some(true),
            (sid, false) => (sid == self.id || self.covered.contains(&sid)).then_some(false),
        }
    }

    /// For a kept "none" of a set this scan's names are not all in, what
    /// `judge` makes of the names it lacks (once per set): `None` when the
    /// answer kept is no "none" or of a set unknown.
    pub fn beyond(
        &self,
        kept: Option<(u64, bool)>,
        judge: impl FnOnce(&[String]) -> Option<Vec<u32>>,
    ) -> Option<Arc<[u32]>> {
        let (sid, false) = kept? else {
            return None;
        };
        let mut memo = self.beyond.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(got) = memo.get(&sid) {
            return got.clone();
        }
        let set = self.sets.get(sid);
        let got = set.and_then(|set| {
            let lacking: Vec<String> = self
                .names
                .iter()
                .filter(|n| set.binary_search(n).is_err())
                .cloned()
                .collect();
            judge(&lacking).map(Arc::from)
        });
        memo.insert(sid, got.clone());
        got
    }

    /// The answer to keep when this scan found the file calling one of its
    /// names or none (`calls`), given the one kept before: a "none" joins
    /// an earlier "none" (the file did not change: a changed file's entry
    /// holds no answer).
    pub fn to_keep(&self, kept: Option<(u64, bool)>, calls: bool) -> (u64, bool) {
        let earlier = match kept {
            Some((sid, false)) if !calls => sid,
            _ => return (self.id, calls),
        };
        if earlier == self.id || self.covered.contains(&earlier) {
            return (earlier, false);
        }
        let mut unions = self.unions.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&u) = unions.get(&earlier) {
            return (u, false);
        }
        let set = self.sets.get(earlier);
        let id = match set {
            Some(set) if set.len() + self.names.len() <= MAX_NAMES => {
                let both = Names::from(union(&set, &self.names));
                let id = super::names_hash(both.iter());
                self.sets.add(id, &both);
                id
            }
            // (an earlier set unknown, or a union too large: this scan's)
            _ => self.id,
        };
        unions.insert(earlier, id);
        (id, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Names {
        let mut v: Vec<String> = list.iter().map(|s| s.to_string()).collect();
        v.sort();
        v.dedup();
        Names::from(v)
    }

    #[test]
    fn a_none_holds_for_every_subset_and_joins_the_next_none() {
        let sets = NameSets::default();
        let first = sets.answers(names(&["acquireLock", "releaseLock", "setNx"]));
        let kept = first.to_keep(None, false);
        assert_eq!(first.of(Some(kept)), Some(false));
        // a later scan of fewer names: no read
        let fewer = sets.answers(names(&["releaseLock", "setNx"]));
        assert_eq!(fewer.of(Some(kept)), Some(false));
        assert_eq!(
            fewer.to_keep(Some(kept), false),
            kept,
            "the larger set stays"
        );
        // one name more: unknown, and once read, both sets in one
        let more = sets.answers(names(&["claimSlot", "setNx"]));
        assert_eq!(more.of(Some(kept)), None);
        let joined = more.to_keep(Some(kept), false);
        assert_ne!(joined.0, kept.0);
        for scan in [&first, &fewer, &more] {
            assert_eq!(scan.of(Some(joined)), None, "answers made before the union");
        }
        let all = sets.answers(names(&["acquireLock", "claimSlot", "releaseLock", "setNx"]));
        assert_eq!(all.of(Some(joined)), Some(false));
        assert_eq!(all.of(Some(kept)), None);
        // the same union made once for every file
        assert_eq!(more.to_keep(Some(kept), false), joined);
    }

    #[test]
    fn the_names_beyond_a_kept_none_are_judged_once_per_set() {
        let sets = NameSets::default();
        let first = sets.answers(names(&["acquireLock", "setNx"]));
        let kept = first.to_keep(None, false);
        drop(first);
        let more = sets.answers(names(&["acquireLock", "claimSlot", "grabLease", "setNx"]));
        let asked = std::cell::Cell::new(0);
        let judge = |lacking: &[String]| {
            asked.set(asked.get() + 1);
            assert_eq!(lacking, ["claimSlot", "grabLease"]);
            Some(vec![2, 1])
        };
        assert_eq!(more.beyond(Some(kept), judge).as_deref(), Some(&[2, 1][..]));
        assert_eq!(
            more.beyond(Some(kept), |_| None).as_deref(),
            Some(&[2, 1][..])
        );
        assert_eq!(asked.get(), 1, "once per set");
        // no "none" kept, or of a set never seen: nothing to judge
        assert!(more
            .beyond(Some((kept.0, true)), |_| Some(vec![]))
            .is_none());
        assert!(more.beyond(None, |_| Some(vec![])).is_none());
        assert!(more.beyond(Some((7, false)), |_| Some(vec![])).is_none());
    }

    #[test]
    fn a_call_holds_for_the_same_names_only() {
        let sets = NameSets::default();
        let scan = sets.answers(names(&["acquireLock", "setNx"]));
        let kept = scan.to_keep(Some((7, false)), true);
        assert_eq!(
            kept,
            (
                super::super::names_hash(names(&["acquireLock", "setNx"]).iter()),
                true
            )
        );
        assert_eq!(scan.of(Some(kept)), Some(true));
        assert_eq!(sets.answers(names(&["setNx"])).of(Some(kept)), None);
        assert_eq!(scan.of(None), None);
        // an earlier "none" of a set never seen: kept for this scan alone
        assert_eq!(scan.to_keep(Some((7, false)), false), (scan.id, false));
    }

    #[test]
    fn the_sets_are_written_and_read_back_as_referred_to() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("names.bin");
        let sets = NameSets::default();
        let a = sets.answers(names(&["acquireLock"])).id;
        let b = sets.answers(names(&["acquireLock", "setNx"])).id;
        sets.write(&path, &[a, b].into_iter().collect());
        let back = NameSets::read(&path);
        assert_eq!(back.answers(names(&["acquireLock"])).covered.len(), 2);
        // written again without the sets no entry refers to
        back.write(&path, &[b].into_iter().collect());
        let again = NameSets::read(&path);
        let scan = again.answers(names(&["setNx"]));
        assert!(scan.covered.contains(&b) && !scan.covered.contains(&a));
        // a damaged file: no sets
        std::fs::write(&path, b"\x93\x01").unwrap();
        assert!(NameSets::read(&path).sets.lock().unwrap().is_empty());
    }
}
