//! Raw redis commands: `.redis` files and `redis-cli` lines in shell scripts. Placeholder.
use crate::facts::{FileFacts, Language};

pub fn extract(_src: &str, language: Language) -> FileFacts {
    FileFacts::new(language)
}
