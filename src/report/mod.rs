//! Reporters: each output format is one file behind [`Emitter`]. They take
//! the sorted report and never change what was found.

pub mod github;
pub mod gitlab;
pub mod human;
pub mod json;
pub mod rdjson;
pub mod sarif;

use crate::finding::Report;
use std::io::{self, Write};

/// Options every emitter may read.
#[derive(Clone, Debug, Default)]
pub struct EmitOptions {
    pub color: bool,
    pub quiet: bool,
    /// Per-rule counts after the findings (`--stats`).
    pub stats: bool,
    pub verbose: bool,
}

pub trait Emitter {
    fn emit(&self, report: &Report, opts: &EmitOptions, out: &mut dyn Write) -> io::Result<()>;
}

/// The `--format` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Human,
    Json,
    /// SARIF 2.1.0 (GitHub code scanning, most review tools).
    Sarif,
    /// GitHub Actions workflow commands (annotations on the pull request).
    Github,
    /// GitLab Code Quality report.
    Gitlab,
    /// reviewdog's Diagnostic Format (rdjson).
    Rdjson,
}

pub fn emitter(format: Format) -> Box<dyn Emitter> {
    match format {
        Format::Human => Box::new(human::Human),
        Format::Json => Box::new(json::Json),
        Format::Sarif => Box::new(sarif::Sarif),
        Format::Github => Box::new(github::Github),
        Format::Gitlab => Box::new(gitlab::Gitlab),
        Format::Rdjson => Box::new(rdjson::Rdjson),
    }
}
