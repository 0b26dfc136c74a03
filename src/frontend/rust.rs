//! Rust front-end (syn). Placeholder until the syn visitor lands.
use crate::facts::{FileFacts, Language};

pub fn extract(_src: &str) -> FileFacts {
    FileFacts::new(Language::Rust)
}
