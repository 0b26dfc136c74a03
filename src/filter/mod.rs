//! Filters applied after the rules: inline suppressions (per file, in the
//! engine), then the baseline and the changed-lines gate (on the whole
//! report, in the command line).
//!
//! This module also owns the one finding that is not about Redis:
//! `LL100 unused-suppression`, so that stale `locklint: allow(…)` comments
//! get cleaned up. [`all_metas`] and [`lookup`] are the rule catalogue the
//! command line, `locklint rules`, `locklint explain` and SARIF read.

pub mod baseline;
pub mod diff;
pub mod suppress;

use crate::finding::Severity;
use crate::rules::{self, RuleMeta};

/// `LL100 unused-suppression`: a `locklint: allow(…)` comment that silences nothing.
pub static UNUSED_SUPPRESSION: RuleMeta = RuleMeta {
    code: "LL100",
    name: "unused-suppression",
    severity: Severity::Warning,
    summary: "a `locklint: allow(...)` comment silences nothing (or names an unknown rule)",
    doc: include_str!("ll100_unused_suppression.md"),
};

/// Every rule locklint can report, in code order: LL001–LL009, then LL100.
pub fn all_metas() -> Vec<&'static RuleMeta> {
    let mut v: Vec<&'static RuleMeta> = rules::all().iter().map(|r| r.meta()).collect();
    v.push(&UNUSED_SUPPRESSION);
    v
}

/// Finds any rule (LL100 included) by code, in any case, or by name.
pub fn lookup(code_or_name: &str) -> Option<&'static RuleMeta> {
    let s = code_or_name.trim();
    rules::lookup(s).or_else(|| {
        (UNUSED_SUPPRESSION.code.eq_ignore_ascii_case(s) || UNUSED_SUPPRESSION.name == s)
            .then_some(&UNUSED_SUPPRESSION)
    })
}

/// Edit distance (Levenshtein) between two short words, for "did you mean".
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The candidate nearest to `word`, if it is close enough to be a typo.
pub fn nearest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let w = word.to_ascii_lowercase();
    candidates
        .into_iter()
        .map(|c| (edit_distance(&w, &c.to_ascii_lowercase()), c))
        .filter(|(d, c)| *d <= (c.chars().count() / 3).max(2))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// A hint for an unknown rule name: "did you mean `LL002`?" or the catalogue.
pub fn rule_hint(word: &str) -> String {
    let metas = all_metas();
    let names = metas.iter().flat_map(|m| [m.code, m.name]);
    match nearest(word, names) {
        Some(n) => format!("did you mean `{n}`?"),
        None => "see `locklint rules`".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_knows_ll100_and_the_redis_rules() {
        assert_eq!(lookup("ll100").map(|m| m.code), Some("LL100"));
        assert_eq!(lookup("unused-suppression").map(|m| m.code), Some("LL100"));
        assert_eq!(
            lookup("unconditional-release").map(|m| m.code),
            Some("LL002")
        );
        assert!(lookup("LL999").is_none());
        assert_eq!(all_metas().len(), rules::all().len() + 1);
    }

    #[test]
    fn suggestions() {
        assert_eq!(edit_distance("selct", "select"), 1);
        assert_eq!(nearest("selct", ["select", "ignore"]), Some("select"));
        assert_eq!(nearest("zzzzzz", ["select", "ignore"]), None);
        assert_eq!(
            rule_hint("unconditional-relase"),
            "did you mean `unconditional-release`?"
        );
        assert_eq!(rule_hint("LL02"), "did you mean `LL002`?");
    }
}
