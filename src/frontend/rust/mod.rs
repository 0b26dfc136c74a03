//! Rust front-end: a `syn` syntax tree of the file, walked once per
//! function scope (see [`visitor`]). A file syn cannot parse is split into
//! top-level items by a tolerant scanner ([`scan`]) and each item that parses
//! is still analysed; the rest is skipped with a note.
//!
//! Parsing runs on a thread of its own with a large stack: syn and the
//! visitor recurse over the tree, and a pathological file must not overflow
//! the caller's stack. The thread also owns proc-macro2's span table, which
//! is freed with it, so a long run does not accumulate source maps.

mod scan;
mod syntax;
pub(crate) mod visitor;

#[cfg(test)]
mod tests;

use crate::facts::{FileFacts, Language};
use crate::project::calls::PackedCalls;

/// Bracket nesting above which the file is not handed to syn at all.
const MAX_NESTING: usize = 500;
/// The same when parsing has to run on the caller's stack.
const MAX_NESTING_SMALL_STACK: usize = 64;
/// Stack of the parsing thread (reserved, not committed).
const STACK_BYTES: usize = 256 << 20;
/// Files larger than this are not parsed (generated code, dumps).
const MAX_SYN_BYTES: usize = 8 << 20;

/// Files larger than this are parsed in pieces of consecutive top-level
/// items (`visitor::run_by_pieces`): a whole file's syntax tree takes about
/// 100 bytes per byte of source (a 1.4 MB file peaked at 152 MB; real files
/// of 170 to 230 kB at 35 to 42 bytes a byte), a piece's only its own.
/// Each piece is parsed twice (collect, then walk): on files of 200 kB that
/// costs a fifth more time (31 → 37 ms), a file of many tiny items up to
/// half as much again; only a file of at most two pieces is parsed whole.
/// (Pieces of 8 kB instead of 16 took no more time on the corpus's 92 Rust
/// files of 100 kB or more, and brought 11 of them under 10 bytes a byte;
/// pieces of 2 kB instead of 8 took no more on its 8,022 Rust files, 96 MB,
/// and brought 14 of its 18 files of 50 to 100 kB over 10 bytes a byte
/// under it: an 8 kB piece's parse peaked near 0.45 MB.)
const PIECEWISE_BYTES: usize = 16 << 10;

/// Words one of which every Rust file that can produce a finding contains:
/// a client crate, a command-like method, a script or a raw command.
const NEEDLES: &[&str] = &[
    "redis",
    "fred",
    "rustis",
    "set_nx",
    "setnx",
    "expire",
    "del(",
    "del::",
    "del_ex",
    "delex",
    "unlink",
    "eval",
    "fcall",
    "Script",
    "set_ex",
    "setex",
    "set_options",
    "set_with_options",
    "cmd(",
    "getset",
    "get_set",
    "custom(",
    "NX",
];

/// Whether a Rust file can hold an op at all (one of [`NEEDLES`]). The
/// engine rejects the others before parsing, like its prefilter, so the
/// call-name scan still reads those that call a project function: their
/// call sites are facts too (`project::scan`).
pub fn has_needles(src: &[u8]) -> bool {
    NEEDLES
        .iter()
        .any(|n| memchr::memmem::find(src, n.as_bytes()).is_some())
}

/// Extracts the facts of one Rust source text, its call sites unpacked
/// (`facts.link.calls`). Never panics on any input.
pub fn extract(src: &str) -> FileFacts {
    let (mut facts, packed) = extract_packed(src);
    unpack_into(&mut facts, packed);
    facts
}

/// [`extract`], the call sites left packed as the walk packed them
/// (`facts.link.calls` empty), as a whole-project run keeps them.
pub fn extract_packed(src: &str) -> (FileFacts, Option<PackedCalls>) {
    let spawned = std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("locklint-syn".into())
            .stack_size(STACK_BYTES)
            .spawn_scoped(s, || extract_here(src, MAX_NESTING))
            .map(|h| h.join())
    });
    match spawned {
        Ok(Ok(done)) => done,
        Ok(Err(_)) => {
            let mut facts = FileFacts::new(Language::Rust);
            facts
                .notes
                .push("rust front-end failed on this file; it was skipped".into());
            (facts, None)
        }
        // No thread could be started: a tighter nesting guard keeps the
        // caller's (smaller) stack safe.
        Err(_) => extract_here(src, MAX_NESTING_SMALL_STACK),
    }
}

/// The packed call sites decoded into `facts.link.calls`.
fn unpack_into(facts: &mut FileFacts, packed: Option<PackedCalls>) {
    if let Some(p) = packed {
        facts.link.calls = p.unpack(None, &mut facts.link.functions);
    }
}

fn extract_here(src: &str, max_nesting: usize) -> (FileFacts, Option<PackedCalls>) {
    extract_packed_with(src, max_nesting, PIECEWISE_BYTES)
}

/// [`extract`] with a file larger than `piecewise_bytes` read item by
/// item (the tests compare both ways).
#[cfg(test)]
fn extract_with(src: &str, max_nesting: usize, piecewise_bytes: usize) -> FileFacts {
    let (mut facts, packed) = extract_packed_with(src, max_nesting, piecewise_bytes);
    unpack_into(&mut facts, packed);
    facts
}

/// [`extract_here`], a file larger than `piecewise_bytes` read item by item.
fn extract_packed_with(
    src: &str,
    max_nesting: usize,
    piecewise_bytes: usize,
) -> (FileFacts, Option<PackedCalls>) {
    let mut facts = FileFacts::new(Language::Rust);
    if src.len() > MAX_SYN_BYTES {
        facts.notes.push(format!(
            "file larger than {} MiB; Rust front-end skipped it",
            MAX_SYN_BYTES >> 20
        ));
        return (facts, None);
    }
    let depth = scan::max_nesting(src);
    if depth > max_nesting {
        facts.notes.push(format!(
            "brackets nested {depth} deep (more than {max_nesting}); Rust front-end skipped the file"
        ));
        return (facts, None);
    }
    let text = scan::blank_bom_and_shebang(src);
    // a large file item by item, when each piece parses alone
    if text.len() > piecewise_bytes {
        if let Some(packed) = visitor::run_by_pieces(
            &text,
            &scan::top_level_items(&text),
            &mut facts,
            piecewise_bytes.min(visitor::PIECE_BYTES),
        ) {
            return (facts, packed);
        }
    }
    let packed = match syn::parse_file(&text) {
        Ok(file) => {
            let units: Vec<visitor::Unit> = file
                .items
                .iter()
                .map(|item| visitor::Unit {
                    base: 0,
                    item,
                    owner: None,
                })
                .collect();
            visitor::run(&text, &units, &mut facts)
        }
        Err(err) => {
            let lc = err.span().start();
            facts.notes.push(format!(
                "syn could not parse: {err} at {}:{}; pattern fallback",
                lc.line,
                lc.column + 1
            ));
            let mut parsed: Vec<(usize, syn::Item, Option<String>)> = Vec::new();
            for chunk in scan::top_level_items(&text) {
                let Some(piece) = text.get(chunk.start..chunk.end) else {
                    continue;
                };
                if piece.trim().is_empty() {
                    continue;
                }
                if let Ok(item) = syn::parse_str::<syn::Item>(piece) {
                    parsed.push((chunk.start, item, None));
                    continue;
                }
                // The first chunk may start with inner attributes (`//!`, `#![..]`).
                if let Ok(file) = syn::parse_file(piece) {
                    parsed.extend(file.items.into_iter().map(|i| (chunk.start, i, None)));
                    continue;
                }
                // An impl, trait or module with a broken member: try its members.
                if let Some((owner, body)) = scan::container_body(piece) {
                    for inner in scan::top_level_items_in(piece, body) {
                        let Some(p) = piece.get(inner.start..inner.end) else {
                            continue;
                        };
                        if let Ok(item) = syn::parse_str::<syn::Item>(p) {
                            parsed.push((chunk.start + inner.start, item, owner.clone()));
                        }
                    }
                }
            }
            let units: Vec<visitor::Unit> = parsed
                .iter()
                .map(|(base, item, owner)| visitor::Unit {
                    base: *base,
                    item,
                    owner: owner.clone(),
                })
                .collect();
            visitor::run(&text, &units, &mut facts)
        }
    };
    (facts, packed)
}
