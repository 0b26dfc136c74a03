//! One Aho-Corasick automaton over the bytes of a file: a file that contains
//! none of the words every finding needs is never parsed.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use std::sync::OnceLock;

/// Every finding needs one of these (case-insensitive): a set-if-absent, a
/// delete, an expire, a script, or a raw command. `del` also covers
/// `delete`/`KeyDelete`, `expire` covers `pexpire`/`KeyExpire`, `nx` covers
/// `setnx`/`SetNX`/`NotExists`-free spellings.
pub const KEYWORDS: &[&str] = &[
    "nx",
    "setifabsent",
    "locktake",
    "notexists",
    "del",
    "unlink",
    "expire",
    "eval",
    "redis.call",
    "redis.pcall",
    "script",
    "lockrelease",
    "fcall",
    // A suppression comment: a stale one (its Redis call gone) is still reported as LL100.
    "locklint:",
];

fn automaton() -> &'static AhoCorasick {
    static AC: OnceLock<AhoCorasick> = OnceLock::new();
    AC.get_or_init(|| {
        AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::LeftmostFirst)
            .build(KEYWORDS)
            .expect("static keyword list builds")
    })
}

/// True when the bytes contain at least one keyword.
pub fn may_match(bytes: &[u8]) -> bool {
    automaton().is_match(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_unrelated_text() {
        assert!(!may_match(b"fn main() { println!(\"hello\"); }"));
        assert!(may_match(b"con.set_nx(k, v)"));
        assert!(may_match(b"jedis.DEL(key)"));
        assert!(may_match(b"redis.call('get', KEYS[1])"));
    }
}
