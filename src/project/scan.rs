//! The second prefilter pass: a file with no Redis word may still call a
//! wrapper. Once phase one has read the files the Redis prefilter let
//! through, one Aho-Corasick automaton over the names of the functions that
//! can have a summary picks, among the files it rejected, those that call
//! one of them (`name(`); everything else stays unread.

use super::calls::CallNames;
use crate::facts::{FileFacts, Language};
use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};
use rustc_hash::FxHashSet as HashSet;
use std::collections::BTreeSet;

/// Names shorter than this are not worth a scan of the whole project.
const MIN_NAME: usize = 3;

/// Names of the functions of `files` that carry a summary (their ops take
/// key or value from a parameter), delete a key, or call one of `known` (a
/// name from an earlier round), so a chain of helpers is followed round by
/// round. A file's calls are read from its packed call names when it has
/// them (`super::calls`), else from its facts.
pub fn summarised_names<'a>(
    files: impl IntoIterator<Item = (&'a FileFacts, Option<&'a CallNames>)>,
    known: &HashSet<String>,
) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (f, packed) in files {
        let calls: Box<dyn Iterator<Item = (&str, u32)>> = match packed {
            Some(names) => Box::new(names.iter()),
            None => Box::new(f.link.calls.iter().map(|c| (&*c.callee, c.scope))),
        };
        // functions whose ops take their key or value from a parameter
        // (a function whose ops all act on fixed keys is reached only from
        // its own file: no other file's call of it is worth a read)
        let summarised: HashSet<u32> = super::summary::summarised_scopes(f);
        let busy: HashSet<u32> = summarised
            .iter()
            .copied()
            .chain(
                calls
                    .filter(|(callee, _)| known.contains(*callee))
                    .map(|(_, scope)| scope),
            )
            // and those that delete a key: whether every caller does so only
            // on a failure path decides a rollback (`project::failure`)
            .chain(
                f.ops
                    .iter()
                    .filter(|o| matches!(o.kind, crate::facts::OpKind::Release { .. }))
                    .map(|o| o.scope),
            )
            .collect();
        // (the signatures with no op of their own may be packed with the
        // calls: `CallNames::packed_functions`)
        let signatures = f
            .link
            .functions
            .iter()
            .map(|sig| (sig.scope, !sig.params.is_empty()))
            .chain(
                packed
                    .map(CallNames::packed_functions)
                    .unwrap_or_default()
                    .iter()
                    .copied(),
            );
        for (sig_scope, has_params) in signatures {
            if !has_params || !busy.contains(&sig_scope) {
                continue;
            }
            let Some(scope) = f.scopes.get(sig_scope as usize) else {
                continue;
            };
            // common names (`get`, `remove`, …) would make the scan read most
            // files; calls of them through a receiver that names the type
            // are linked when their file is read for another reason
            let common = super::link::COMMON
                .iter()
                .any(|c| c.eq_ignore_ascii_case(&scope.name));
            // and a function of another file links only through a receiver
            // naming its type or a name that says what it does to Redis
            // (`link::says_redis`): only the latter is worth reading every
            // rejected file for
            if scope.name.len() >= MIN_NAME
                && !common
                && super::link::says_redis(&scope.name)
                && !scope.is_test
                && !known.contains(&scope.name)
            {
                out.insert(scope.name.clone());
            }
        }
    }
    out
}

/// The identifier a name ends with (empty when it ends with another byte).
fn last_identifier(name: &str) -> &[u8] {
    let n = name.as_bytes();
    let tail = n.len()
        - n.iter()
            .rev()
            .take_while(|&&b| crate::prefilter::is_ident_byte(b))
            .count();
    &n[tail..]
}

/// Languages whose code can call each other's functions by name.
pub fn family(l: Language) -> u8 {
    match l {
        Language::Java | Language::Kotlin => 0,
        Language::JavaScript | Language::TypeScript => 1,
        other => 2 + other as u8,
    }
}

/// Which text counts as a call of a name (`prefilter::stands_before_call`),
/// in the cache's answers: changed when that rule changes.
const CALL_RULE: &str = "\u{2}call: ( or < after white space; Ruby: a space";

/// How a file's call-word signature (`prefilter::CallWords`) holds a
/// name's call: by the exact hash of the identifier it ends with, which
/// holds a call anchor; by a key of its Bloom filter; or not at all (no
/// identifier, one starting with a digit, or one too long).
enum Signed {
    Anchored(u32),
    Bloomed(u64),
    Not,
}

fn signed_as(name: &str) -> Signed {
    let word = last_identifier(name);
    if word.is_empty() || word.len() > crate::prefilter::MAX_CALL_WORD || word[0].is_ascii_digit() {
        Signed::Not
    } else if crate::prefilter::has_call_anchor(word) {
        Signed::Anchored(crate::prefilter::call_word_hash(word))
    } else {
        Signed::Bloomed(crate::prefilter::bloom_key(word))
    }
}

/// An automaton finding `name(`, `name <T>(` or `name arg` (Ruby) for any of the names,
/// for files of the language families the names were found in.
pub struct CallScan {
    ac: AhoCorasick,
    /// The sorted call-word hashes (`prefilter::call_word_hash`) of the
    /// identifiers the names end with that hold a call anchor: looked up in
    /// a rejected file's exact anchored hashes.
    anchored: Vec<u32>,
    /// The filter keys (`prefilter::bloom_key`) of the other names' last
    /// identifiers: looked up in the file's Bloom filter of call words.
    bloomed: Vec<u64>,
    /// A name ends with no identifier, or with one no signature holds (a
    /// digit first, or longer than `prefilter::MAX_CALL_WORD`): every file
    /// is read.
    every: bool,
    families: Vec<u8>,
    /// The names, sorted, with a tag of what counts as a call: what the
    /// cache keeps a rejected file's answer for (`cache::Answers`; a file
    /// calls a name or not whatever the families asked).
    pub names: super::cache::Names,
}

impl CallScan {
    pub fn new(names: &BTreeSet<String>, families: Vec<u8>) -> Option<CallScan> {
        if names.is_empty() {
            return None;
        }
        let ac = AhoCorasickBuilder::new()
            .match_kind(MatchKind::LeftmostLongest)
            .kind(Some(AhoCorasickKind::DFA))
            .build(names.iter().map(|n| n.as_bytes()))
            .ok()?;
        // (and what counts as a call: a cached answer of another rule is
        // not this one's; the tag sorts before every name)
        let tagged: super::cache::Names = std::iter::once(CALL_RULE.to_string())
            .chain(names.iter().cloned())
            .collect();
        let (mut anchored, mut bloomed, mut every) = (Vec::new(), Vec::new(), false);
        for n in names {
            match signed_as(n) {
                Signed::Anchored(h) => anchored.push(h),
                Signed::Bloomed(k) => bloomed.push(k),
                Signed::Not => every = true,
            }
        }
        anchored.sort_unstable();
        anchored.dedup();
        bloomed.sort_unstable();
        bloomed.dedup();
        Some(CallScan {
            ac,
            anchored,
            bloomed,
            every,
            families,
            names: tagged,
        })
    }

    /// Files of this language may call one of the names.
    pub fn wants(&self, l: Language) -> bool {
        self.families.contains(&family(l))
    }

    /// The call-word hashes (`prefilter::call_word_hash`) of the
    /// identifiers `names` end with, sorted, when each holds a call anchor
    /// (and is no tag of what counts as a call): what a signature of
    /// anchored words alone (`prefilter::CallWords::anchored_only`) can
    /// tell; `None` otherwise.
    pub fn anchored_hashes(names: &[String]) -> Option<Vec<u32>> {
        let mut out = Vec::with_capacity(names.len());
        for n in names {
            match signed_as(n) {
                Signed::Anchored(h) if n != CALL_RULE => out.push(h),
                _ => return None,
            }
        }
        out.sort_unstable();
        out.dedup();
        Some(out)
    }

    /// A rejected file with these call words (`prefilter::CallWords`) may
    /// call one of the names; false only when it calls none (it holds no
    /// identifier that ends a name's call).
    pub fn may_call(&self, words: &crate::prefilter::CallWords) -> bool {
        self.every
            || words
                .anchored()
                .iter()
                .any(|h| self.anchored.binary_search(h).is_ok())
            || self.bloomed.iter().any(|&k| words.may_hold(k))
    }

    /// How many names can be told only by reading each file (diagnostics,
    /// `LOCKLINT_PHASES=1`): with an anchor, by the filter, all of them.
    pub fn checks(&self) -> (usize, usize, bool) {
        (self.anchored.len(), self.bloomed.len(), self.every)
    }

    /// The text calls one of the names: the name stands alone (not inside
    /// a longer identifier) and before a call (`prefilter::stands_before_call`;
    /// `spaced`: a language with paren-less calls, Ruby).
    pub fn calls_any(&self, bytes: &[u8], spaced: bool) -> bool {
        let ident = crate::prefilter::is_ident_byte;
        self.ac.find_iter(bytes).any(|m| {
            let before = m.start().checked_sub(1).map(|i| bytes[i]);
            !before.is_some_and(ident)
                && crate::prefilter::stands_before_call(bytes, m.end(), spaced)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signature(text: &str, ruby: bool) -> crate::prefilter::CallWords {
        let mut sig = Vec::new();
        assert!(!crate::prefilter::may_match_signed(
            text.as_bytes(),
            false,
            crate::prefilter::Dialect::Other,
            ruby,
            &mut sig
        ));
        crate::prefilter::CallWords::of(text.as_bytes(), &sig, ruby)
    }

    #[test]
    fn anchored_words_alone_tell_the_names_that_hold_an_anchor() {
        let n = |list: &[&str]| -> Vec<String> { list.iter().map(|s| s.to_string()).collect() };
        let h = |w: &str| crate::prefilter::call_word_hash(w.as_bytes());
        let mut want = vec![h("claimSlot"), h("releaseLock")];
        want.sort_unstable();
        assert_eq!(
            CallScan::anchored_hashes(&n(&["svc.releaseLock", "claimSlot", "releaseLock"])),
            Some(want)
        );
        // a name without an anchor, or the tag of the call rule: not by
        // anchored words alone
        assert_eq!(
            CallScan::anchored_hashes(&n(&["handler", "claimSlot"])),
            None
        );
        assert_eq!(CallScan::anchored_hashes(&n(&[CALL_RULE])), None);
        assert_eq!(CallScan::anchored_hashes(&[]), Some(vec![]));
        // and a signature of anchored words alone says "maybe" for the others
        let names: BTreeSet<String> = ["claimSlot", "handler"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let scan = CallScan::new(&names, vec![0]).expect("names");
        let none = crate::prefilter::CallWords::anchored_only(Box::default());
        assert!(scan.may_call(&none), "handler: unknown");
        let only: BTreeSet<String> = ["claimSlot"].iter().map(|s| s.to_string()).collect();
        let scan = CallScan::new(&only, vec![0]).expect("names");
        assert!(!scan.may_call(&none));
        assert!(scan.may_call(&crate::prefilter::CallWords::anchored_only(
            vec![h("claimSlot")].into()
        )));
    }

    #[test]
    fn a_signature_tells_the_files_that_call_a_name() {
        let names: BTreeSet<String> = ["acquireRedisLock", "claimSlot"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let scan = CallScan::new(&names, vec![0]).expect("names");
        assert_eq!(scan.checks(), (2, 0, false));
        for (text, ruby, calls) in [
            ("void run() { svc.acquireRedisLock(id); }", false, true),
            ("x = claimSlot <T>", false, true),
            ("void run() { svc.acquireRedisLock (id); }", false, true),
            ("def run\n  svc.claimSlot key\nend", true, true),
            // the name inside a longer word, or not called
            ("void run() { svc.tryacquireRedisLock(id); }", false, false),
            ("String s = acquireRedisLock;", false, false),
            ("void run() { render(model); }", false, false),
            // a word before a space is a call in Ruby only
            (
                "// claimSlot is taken by acquireRedisLock below",
                false,
                false,
            ),
        ] {
            let sig = signature(text, ruby);
            assert_eq!(scan.calls_any(text.as_bytes(), ruby), calls, "{text}");
            // never false where the scan finds a call
            assert_eq!(scan.may_call(&sig), calls, "{text}");
        }
        // a name without a call anchor is looked up in the filter of all
        // call words
        let plain: BTreeSet<String> = ["renderModel".to_string(), "app.handler".to_string()].into();
        let scan = CallScan::new(&plain, vec![0]).expect("names");
        assert_eq!(scan.checks(), (0, 2, false));
        for (text, calls) in [
            ("void run() { renderModel(x); }", true),
            ("x.app.handler (y)", true),
            ("void run() { x(); }", false),
            ("renderModel=handler;", false),
            ("the app.handler is renderModel here", false),
        ] {
            assert_eq!(scan.calls_any(text.as_bytes(), false), calls, "{text}");
            assert_eq!(scan.may_call(&signature(text, false)), calls, "{text}");
        }
        // a name ending with an identifier longer than a signature holds,
        // or with no identifier: every file may call it
        let long = format!("acquire{}", "x".repeat(crate::prefilter::MAX_CALL_WORD));
        for name in [long.clone(), "valid?".to_string()] {
            let scan = CallScan::new(&[name].into(), vec![0]).expect("names");
            assert_eq!(scan.checks(), (0, 0, true));
            assert!(scan.may_call(&signature("void run() { x(); }", false)));
        }
        let scan = CallScan::new(&[long.clone()].into(), vec![0]).expect("names");
        let text = format!("void run() {{ {long}(); }}");
        assert!(scan.calls_any(text.as_bytes(), false));
        assert!(scan.may_call(&signature(&text, false)));
    }

    /// Never a file the scan finds a call in that its call words rule out:
    /// names and texts from the same small alphabet.
    #[test]
    fn call_words_never_hide_a_call() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let pick = |alphabet: &[u8], len: u64, next: &mut dyn FnMut(u64) -> u64| {
            (0..len)
                .map(|_| alphabet[next(alphabet.len() as u64) as usize] as char)
                .collect::<String>()
        };
        for _ in 0..300 {
            let names: BTreeSet<String> = (0..3)
                .map(|_| {
                    let l = 1 + next(4);
                    pick(b"abl", l, &mut next)
                })
                .collect();
            let Some(scan) = CallScan::new(&names, vec![0]) else {
                continue;
            };
            let text = pick(b"abl (<.\n\t", 60, &mut next);
            for ruby in [false, true] {
                let mut sig = Vec::new();
                if crate::prefilter::may_match_signed(
                    text.as_bytes(),
                    false,
                    crate::prefilter::Dialect::Other,
                    ruby,
                    &mut sig,
                ) {
                    continue;
                }
                let words = crate::prefilter::CallWords::of(text.as_bytes(), &sig, ruby);
                if scan.calls_any(text.as_bytes(), ruby) {
                    assert!(scan.may_call(&words), "{names:?} {text:?} (Ruby: {ruby})");
                }
            }
        }
    }
}
