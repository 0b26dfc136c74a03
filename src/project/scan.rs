//! The second prefilter pass: a file with no Redis word may still call a
//! wrapper. Once phase one has read the files the Redis prefilter let
//! through, one Aho-Corasick automaton over the names of the functions that
//! can have a summary picks, among the files it rejected, those that call
//! one of them (`name(`); everything else stays unread.

use crate::facts::FileFacts;
use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use std::collections::{BTreeSet, HashSet};

/// Names shorter than this are not worth a scan of the whole project.
const MIN_NAME: usize = 3;

/// Names of the functions of `files` that may carry a summary: they take
/// parameters and either perform Redis ops or call one of `known` (a name
/// from an earlier round), so a chain of helpers is followed round by round.
pub fn summarised_names<'a>(
    files: impl IntoIterator<Item = &'a FileFacts>,
    known: &HashSet<String>,
) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for f in files {
        let busy: HashSet<u32> = f
            .ops
            .iter()
            .map(|o| o.scope)
            .chain(
                f.link
                    .calls
                    .iter()
                    .filter(|c| known.contains(&c.callee))
                    .map(|c| c.scope),
            )
            .collect();
        for sig in &f.link.functions {
            if sig.params.is_empty() || !busy.contains(&sig.scope) {
                continue;
            }
            let Some(scope) = f.scopes.get(sig.scope as usize) else {
                continue;
            };
            if scope.name.len() >= MIN_NAME && !scope.is_test && !known.contains(&scope.name) {
                out.insert(scope.name.clone());
            }
        }
    }
    out
}

/// An automaton finding `name(` or `name ` (Ruby) for any of the names.
pub struct CallScan {
    ac: AhoCorasick,
}

impl CallScan {
    pub fn new(names: &BTreeSet<String>) -> Option<CallScan> {
        if names.is_empty() {
            return None;
        }
        let ac = AhoCorasickBuilder::new()
            .match_kind(MatchKind::Standard)
            .build(names.iter().map(|n| n.as_bytes()))
            .ok()?;
        Some(CallScan { ac })
    }

    /// The text calls one of the names: the name stands alone (not inside
    /// a longer identifier) and is followed by `(` or a space.
    pub fn calls_any(&self, bytes: &[u8]) -> bool {
        let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'$';
        self.ac.find_overlapping_iter(bytes).any(|m| {
            let before = m.start().checked_sub(1).map(|i| bytes[i]);
            let after = bytes.get(m.end()).copied();
            !before.is_some_and(ident) && matches!(after, Some(b'(' | b' ' | b'<'))
        })
    }
}
