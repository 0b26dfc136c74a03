//! Reporters: each output format is one file behind [`Emitter`]. They take
//! the sorted report and never change what was found.

pub mod human;
pub mod json;

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
}

pub fn emitter(format: Format) -> Box<dyn Emitter> {
    match format {
        Format::Human => Box::new(human::Human),
        Format::Json => Box::new(json::Json),
    }
}
