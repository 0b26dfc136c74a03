//! Front-ends: one per language family. Each turns the text of one file into
//! [`FileFacts`]. A front-end never knows a rule; it only reports what the
//! code does to Redis.

pub mod lua;
pub mod pattern;
pub mod redis_cmd;
pub mod rust;

use crate::facts::{FileFacts, KeyExpr, KeyPart, Language, OpKind};
use std::path::Path;

/// Extracts the facts of one file. Never panics on any input; a file that a
/// front-end cannot fully understand yields the facts it could find and a note.
pub fn extract(path: &Path, src: &str, language: Language) -> FileFacts {
    let mut facts = match language {
        Language::Rust => rust::extract(src),
        Language::Lua => lua::extract_file(path, src),
        Language::Redis | Language::Shell => redis_cmd::extract(src, language),
        _ => pattern::extract(path, src, language),
    };
    script_built_keys(&mut facts);
    // The ops and their call sites are kept to the end of the run; those
    // front-ends that push them one by one left up to half their room spare
    // (20,000 redis-cli commands: 6.3 MB for 3.8 MB of them).
    facts.ops.shrink_to_fit();
    facts.call_sites.shrink_to_fit();
    facts.link.op_values.shrink_to_fit();
    facts
}

/// Whether a file's calls of other functions are recorded for the project
/// link ([`crate::facts::CallSite`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallSites {
    Record,
    /// Not recorded: a minified bundle named to be scanned, whose own ops
    /// are all read but whose calls are not followed (they were the
    /// largest of its facts; `crate::minified::REDUCED_NOTE`).
    Skip,
}

/// [`extract`], the call sites of the link facts left packed where the
/// front-end packs them as it goes (pattern mode and Rust;
/// `facts.link.calls` is then empty), as a whole-project run keeps them
/// until the link.
pub fn extract_packed(
    path: &Path,
    src: &str,
    language: Language,
    sites: CallSites,
) -> (FileFacts, Option<crate::project::calls::PackedCalls>) {
    let (mut facts, packed) = match language {
        Language::Lua | Language::Redis | Language::Shell => {
            return (extract(path, src, language), None);
        }
        Language::Rust => {
            let (mut facts, packed) = rust::extract_packed(src);
            facts.ops.shrink_to_fit();
            facts.call_sites.shrink_to_fit();
            (facts, packed)
        }
        _ => pattern::extract_packed(path, src, language, sites),
    };
    script_built_keys(&mut facts);
    // (pushed one by one, kept to the end of the run)
    facts.link.op_values.shrink_to_fit();
    (facts, packed)
}

/// A script run on a key that builds the key it touches from `KEYS[1]`
/// (`redis.call("del", "lock_" .. KEYS[1])`): the op's key becomes the
/// caller's key with the script's prefix and suffix, so the release meets
/// the acquire of `"lock_" . $key` elsewhere.
fn script_built_keys(facts: &mut FileFacts) {
    let scripts = &facts.scripts;
    for op in &mut facts.ops {
        let OpKind::Eval { script: Some(id) } = op.kind else {
            continue;
        };
        if op.key.is_unknown() {
            continue;
        }
        let Some((prefix, suffix)) = scripts
            .get(id as usize)
            .and_then(|s| lua::first_key_affix(&s.lua))
        else {
            continue;
        };
        let mut key = KeyExpr::lit(prefix);
        key.parts
            .retain(|p| !matches!(p, KeyPart::Lit(s) if s.is_empty()));
        key.append(std::mem::replace(&mut op.key, KeyExpr::unknown()));
        key.push(KeyPart::Lit(suffix.to_string().into()));
        op.key = key;
    }
}
