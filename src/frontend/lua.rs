//! Lua script analyser. Placeholder until it lands.
use crate::facts::{FileFacts, Language, LuaFacts};
use std::path::Path;

/// Analyses one Lua script text.
pub fn analyse(_text: &str) -> LuaFacts {
    LuaFacts::default()
}

/// A whole `.lua` file: one script named after the file stem.
pub fn extract_file(_path: &Path, _src: &str) -> FileFacts {
    FileFacts::new(Language::Lua)
}
