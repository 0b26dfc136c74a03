//! locklint: finds misuse of Redis as a distributed lock.
//!
//! Pipeline: [`walk`] → [`prefilter`] → [`frontend`] (per language) →
//! [`facts`] (language-neutral) → [`rules`] → filters → [`report`].
//! See `ARCHITECTURE.md` at the repository root.

pub mod advice;
pub mod config;
pub mod engine;
pub mod facts;
pub mod filter;
pub mod finding;
pub mod fix;
pub mod frontend;
pub mod generated;
pub mod minified;
pub mod prefilter;
pub mod project;
pub mod report;
pub mod rules;
pub mod server;
pub mod vercel;
pub mod walk;
pub mod words;

pub use engine::{check_paths, check_source, Settings};
pub use finding::{FileError, Finding, Report, Severity};
