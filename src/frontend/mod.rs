//! Front-ends: one per language family. Each turns the text of one file into
//! [`FileFacts`]. A front-end never knows a rule; it only reports what the
//! code does to Redis.

pub mod lua;
pub mod pattern;
pub mod redis_cmd;
pub mod rust;

use crate::facts::{FileFacts, Language};
use std::path::Path;

/// Extracts the facts of one file. Never panics on any input; a file that a
/// front-end cannot fully understand yields the facts it could find and a note.
pub fn extract(path: &Path, src: &str, language: Language) -> FileFacts {
    match language {
        Language::Rust => rust::extract(src),
        Language::Lua => lua::extract_file(path, src),
        Language::Redis | Language::Shell => redis_cmd::extract(src, language),
        _ => pattern::extract(path, src, language),
    }
}
