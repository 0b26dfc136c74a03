//! Drives one run: read each file once, prefilter, extract facts, run the
//! rules, resolve positions and fingerprints, and gather a sorted report.

use crate::advice::Target;
use crate::facts::{FileFacts, Language, Span};
use crate::finding::{FileError, Finding, Label, LineIndex, Report, Severity};
use crate::rules::{self, Context};
use crate::walk::{self, Entry};
use crate::{filter, frontend, prefilter, words};
use rayon::prelude::*;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// Everything that changes what a run reports.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// Only these rule codes (`None` = all).
    pub select: Option<Vec<&'static str>>,
    /// Never these rule codes.
    pub ignore: Vec<&'static str>,
    /// Per-rule severity overrides.
    pub severity: HashMap<&'static str, Severity>,
    /// Report test code too.
    pub tests: bool,
    /// Extra lock-key patterns (config `lock-key-patterns`).
    pub lock_key_patterns: Vec<regex::Regex>,
    pub target: Target,
    /// Worker threads (0 = all cores).
    pub threads: usize,
    /// Config `exclude`/`extend-exclude` (folders walked only; named files are always read).
    pub exclude: Option<crate::config::Exclude>,
    /// The project the run links against (SPEC §5): its other files give
    /// summaries and key uses but no findings. `None`: only the paths given.
    pub project_root: Option<PathBuf>,
    /// Keep phase one's facts in `.locklint_cache/` under the project root.
    pub cache: bool,
    /// Scan minified JavaScript and TypeScript met in a folder walk too
    /// (`--include-minified`, config `include-minified`); by default they
    /// are skipped with a note ([`crate::minified`]). Named files are
    /// always scanned.
    pub include_minified: bool,
    /// Scan generated files met in a folder walk too (`--include-generated`,
    /// config `include-generated`); by default they are skipped with a
    /// note ([`crate::generated`]). Named files are always scanned.
    pub include_generated: bool,
}

impl Settings {
    pub fn rule_enabled(&self, code: &str) -> bool {
        self.select.as_ref().is_none_or(|s| s.contains(&code)) && !self.ignore.contains(&code)
    }

    /// Which machine-written files at `entry` are skipped: those met in a
    /// folder walk that the settings do not include.
    fn skips(&self, entry: &Entry) -> Skip {
        Skip {
            minified: !self.include_minified && !entry.explicit,
            generated: !self.include_generated && !entry.explicit,
        }
    }
}

/// Which machine-written files ([`crate::minified::machine_written`]) a run
/// skips at one path.
#[derive(Clone, Copy, Debug)]
struct Skip {
    minified: bool,
    generated: bool,
}

impl Skip {
    fn skips(self, why: &crate::minified::Why) -> bool {
        if why.is_generated() {
            self.generated
        } else {
            self.minified
        }
    }
}

/// A machine-written file skipped ([`Skip`]): the note that says why.
#[derive(Debug)]
struct Skipped {
    generated: bool,
    note: String,
}

impl Skipped {
    fn of(why: &crate::minified::Why) -> Skipped {
        Skipped {
            generated: why.is_generated(),
            note: why.note(),
        }
    }
}

/// Largest file read whole; larger files are scanned in pieces is not
/// supported, they are read up to this size and the rest is reported.
pub const MAX_FILE_BYTES: u64 = 256 * 1024 * 1024;

/// Checks one source text as if it were the file `display_path`.
pub fn check_source(
    display_path: &str,
    src: &str,
    language: Language,
    settings: &Settings,
) -> Vec<Finding> {
    if !settings.tests && words::is_test_path(Path::new(display_path)) {
        return Vec::new();
    }
    let facts = facts_for(Path::new(display_path), src, language, settings);
    let mut done = link_and_check(
        vec![Phase1::new(
            display_path.to_string(),
            PathBuf::from(display_path),
            src.to_string(),
            true,
            facts,
        )],
        settings,
        1,
    );
    done.pop().map(|(_, f)| f).unwrap_or_default()
}

/// Most Redis operations the rules correlate in one file. Rules compare ops
/// pairwise, so an adversarial or generated file with more is cut here (with
/// a note) instead of taking quadratic time.
pub const MAX_OPS_PER_FILE: usize = 20_000;

/// The facts the rules see for one file: the front-end's, without test code
/// (unless `tests = true`) and bounded in size.
fn facts_for(path: &Path, src: &str, language: Language, settings: &Settings) -> FileFacts {
    let sites = frontend::CallSites::Record;
    let (mut facts, packed) = packed_facts_for(path, src, language, settings, sites);
    if let Some(p) = packed {
        facts.link.calls = p.unpack(None, &mut facts.link.functions);
    }
    facts
}

/// [`facts_for`], the call sites left packed where the front-end packed
/// them as it went (`frontend::extract_packed`; `facts.link.calls` empty).
fn packed_facts_for(
    path: &Path,
    src: &str,
    language: Language,
    settings: &Settings,
    sites: frontend::CallSites,
) -> (FileFacts, Option<crate::project::calls::PackedCalls>) {
    let (mut facts, packed) = frontend::extract_packed(path, src, language, sites);
    if sites == frontend::CallSites::Skip {
        facts.notes.push(crate::minified::REDUCED_NOTE.to_string());
    }
    if !settings.tests {
        drop_test_code(&mut facts);
    }
    if facts.ops.len() > MAX_OPS_PER_FILE {
        facts.notes.push(format!(
            "{} Redis operations; only the first {MAX_OPS_PER_FILE} are analysed",
            facts.ops.len()
        ));
        facts.ops.truncate(MAX_OPS_PER_FILE);
        facts.ops.shrink_to_fit();
    }
    (facts, packed)
}

/// Removes the ops, scripts and fail-opens of test scopes: test code sets up
/// and cleans up lock keys on purpose.
fn drop_test_code(facts: &mut FileFacts) {
    let test: Vec<bool> = facts.scopes.iter().map(|s| s.is_test).collect();
    let is_test = |id: u32| test.get(id as usize).copied().unwrap_or(false);
    facts.ops.retain(|o| !is_test(o.scope));
    facts.fail_opens.retain(|f| !is_test(f.scope));
}

/// What the rules of one file found of the expiry of its ops, by the
/// start of the op's call (`rules::Context::expiry_verdicts`).
type Verdicts = Vec<u32>;

fn findings_for(
    display_path: &str,
    src: &str,
    facts: &mut FileFacts,
    foreign: &[crate::facts::Op],
    plain_writes: &[Vec<Option<String>>],
    held_scopes: &[(crate::facts::ScopeId, bool)],
    settings: &Settings,
) -> (Vec<Finding>, Verdicts, Vec<(usize, &'static str)>) {
    // Every rule reads the file's ops, scripts or fail-open sites
    // (`rules::run_all`): a file with none of them (most files a full scan
    // parses) has no finding but an unused suppression, without the
    // per-file indexes of `Context` (each scope's name traits) and lines.
    if facts.ops.is_empty() && facts.scripts.is_empty() && facts.fail_opens.is_empty() {
        return (
            filter::suppress::apply(display_path, src, facts.language, Vec::new(), settings),
            Verdicts::new(),
            Vec::new(),
        );
    }
    let file_name = Path::new(display_path)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let fielded = rules::lock_type_fields(facts, &file_name);
    let read = fielded.as_ref().unwrap_or(facts);
    let cx = Context::new(
        read,
        &file_name,
        &settings.lock_key_patterns,
        settings.target,
    )
    .with_project(foreign)
    .with_plain_writes(plain_writes)
    .with_held_scopes(held_scopes);
    let mut reports = rules::run_all(&cx, |code| settings.rule_enabled(code));
    let diags = std::mem::take(&mut reports.list);
    let verdicts = cx.expiry_verdicts();
    let index = LineIndex::new(src);
    // The fixes first, while the rules' context stands (they ask it which
    // ops rewrite together); then the context, its indexes of every op,
    // is let go before the findings grow (at 12,000 findings it stood
    // through them: 1.5 MB).
    // (only the diagnostics that have one, by their place in `diags`: a
    // slot per diagnostic took 8 bytes each, and dense findings most
    // often have no fix)
    let mut fixes: Vec<(u32, Box<crate::finding::Fix>)> = Vec::new();
    {
        let fixer = rules::fixes::Fixer::new(&cx);
        // the fixes read the lines of their calls: the index's line starts,
        // lent (a list of their own, 64 kB on a file of 8,000 lines, stood
        // beside the index and the rules' context)
        crate::advice::with_line_starts(src, index.starts(), || {
            fixes.extend(diags.iter().enumerate().filter_map(|(i, d)| {
                let draft = fixer.fix_for(d.meta().code, &cx, d, src)?;
                Some((
                    crate::facts::offset32(i),
                    Box::new(crate::fix::resolve(draft, &index)),
                ))
            }));
        });
    }
    let language = read.language;
    drop(cx);
    drop(fielded);
    // Nothing reads the file's facts again (the caller lets them go, or
    // puts back its own ops of before the link): the largest lists go now,
    // before the findings grow beside them (a file of 10,000 commands held
    // 3 MB of ops and call sites through its findings).
    facts.ops = Vec::new();
    facts.call_sites = Default::default();
    facts.link = Default::default();
    // The diagnostics are let go as they become findings, which are grown
    // to their count by quarters: the two full lists stood side by side
    // (136 and 240 bytes an entry; 10,000 findings held 1 MB more). Taken
    // from the end of the reversed list, they keep their order.
    let mut diags = diags;
    let mut out: Vec<Finding> = Vec::new();
    // Each line with a finding is normalised once (an id per distinct
    // normalised text) and hashed once per rule code, so a minified line
    // with thousands of findings costs its length once, not per finding.
    let path_norm = filter::baseline::normalise_path(display_path);
    // one copy of the path for all the findings of the file
    let shared_path: std::sync::Arc<str> = display_path.into();
    // per line with a finding, the id of its normalised text: lines that
    // read alike (whitespace aside) share one, found by a hash of that
    // text and compared word by word (no copy of a line: a minified one
    // is megabytes long)
    let mut line_ids = LineIds::default();
    // (a memo of the hash state after the code, path and line, for the
    // findings that share a line: a minified line holds thousands. Only
    // the last few lines' are kept — a state is over a hundred bytes, and a
    // file of a finding per line held one per finding — and a state let
    // go is worked out again, the same.)
    let mut prefixes: HashMap<(&str, usize), sha2::Sha256> = HashMap::new();
    // where the findings of a function's own flow start (`Diagnostic::own_flow`)
    let own_flow: Vec<(usize, &'static str)> = diags
        .iter()
        .filter(|d| d.own_flow())
        .map(|d| (d.span().start(), d.meta().code))
        .collect();
    diags.reverse();
    fixes.reverse();
    // (the place in `diags` of the one popped: taken from the end of the
    // reversed list, they come in their order)
    let mut at: u32 = 0;
    while let Some(d) = diags.pop() {
        let meta = d.meta();
        let span = d.span();
        let fix = if fixes.last().is_some_and(|(i, _)| *i == at) {
            fixes.pop().map(|(_, fix)| fix)
        } else {
            None
        };
        at += 1;
        if diags.capacity() > 64 && diags.len() <= diags.capacity() / 4 * 3 {
            diags.shrink_to_fit();
            fixes.shrink_to_fit();
        }
        if out.len() == out.capacity() {
            // (at least 16, at most the rest: `diags` no longer holds this one)
            out.reserve_exact((out.len() / 4).max(16).min(diags.len() + 1));
        }
        let (line, column) = index.line_col(span.start());
        let (end_line, end_column) = index.line_col(span.end().max(span.start()));
        // (at their exact count: collected through a filter, one label
        // took room for four — 2.7 MB for a file of 12,000 findings)
        let own_labels = reports.labels(&d);
        let mut labels = Vec::with_capacity(own_labels.len());
        labels.extend(
            own_labels
                .into_iter()
                // ops of other files (the project key index) have no span here
                .filter(|(span, _)| *span != Span::default())
                .map(|(span, text)| {
                    let (line, column) = index.line_col(span.start());
                    Label {
                        span,
                        line: crate::facts::offset32(line),
                        column: crate::facts::offset32(column),
                        text,
                    }
                }),
        );
        let (message_quote, label_quote, label_quotes_message) = reports.quotes(&d);
        let text_id = line_ids.id(line, &index);
        let n = line_ids.count(meta.code, text_id);
        if prefixes.len() >= PREFIX_MEMO && !prefixes.contains_key(&(meta.code, line)) {
            prefixes.clear();
        }
        let prefix = prefixes.entry((meta.code, line)).or_insert_with(|| {
            filter::baseline::fingerprint_prefix(meta.code, &path_norm, index.line_text(line))
        });
        let fingerprint = filter::baseline::fingerprint_finish(prefix, n);
        out.push(Finding {
            wording: d.wording(),
            message_quote,
            label_quote,
            label_quotes_message,
            severity: settings
                .severity
                .get(meta.code)
                .copied()
                .unwrap_or(meta.severity),
            path: std::sync::Arc::clone(&shared_path),
            line: crate::facts::offset32(line),
            column: crate::facts::offset32(column),
            end_line: crate::facts::offset32(end_line),
            end_column: crate::facts::offset32(end_column),
            language,
            fingerprint,
            span: Span::new(span.start(), span.end().max(span.start())),
            labels,
            fix,
        });
    }
    crate::finding::sort_findings(&mut out);
    out.dedup_by(|a, b| a.code() == b.code() && a.line == b.line && a.column == b.column);
    (
        filter::suppress::apply(display_path, src, language, out, settings),
        verdicts,
        own_flow,
    )
}

/// Outcome of reading one file.
pub enum Loaded {
    Text(String),
    /// Binary files are skipped silently.
    Binary,
    /// No word a finding needs (see [`prefilter`]): never decoded nor parsed.
    Rejected,
    /// Minified JavaScript or TypeScript ([`crate::minified`]) or a
    /// generated file ([`crate::generated`]), found by the prefilter: not
    /// decoded (the caller decides whether it is read).
    Minified(crate::minified::Why),
}

/// How many leading bytes decide "binary" (a NUL byte among them).
const BINARY_PROBE: usize = 8192;

/// Reads a file once: binary files (a NUL byte in the first 8 KiB) are
/// skipped, files the prefilter rejects are not decoded, invalid UTF-8 is
/// decoded lossily, a leading BOM is dropped.
pub fn load(path: &Path) -> Result<Loaded, String> {
    load_with(path, false)
}

/// As [`load`]; `custom_lock_keys` when the configuration adds lock-key
/// patterns (the prefilter then lets a release without a lock word through).
pub fn load_with(path: &Path, custom_lock_keys: bool) -> Result<Loaded, String> {
    let dialect =
        Language::from_path(path).map_or(prefilter::Dialect::Other, prefilter::Dialect::of);
    with_file_bytes(path, |bytes, _| {
        classify(bytes, custom_lock_keys, dialect, None, None)
    })?
}

/// Opens and reads a file once (into this thread's reusable buffer: most
/// files are rejected right after, so they cost no allocation and no fresh
/// page faults) and hands its bytes and metadata to `f`.
fn with_file_bytes<R>(
    path: &Path,
    f: impl FnOnce(&[u8], &std::fs::Metadata) -> R,
) -> Result<R, String> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).map_err(|e| walk::io_cause(&e))?;
    let meta = file.metadata().map_err(|e| walk::io_cause(&e))?;
    if meta.is_dir() {
        return Err("is a directory, not a source file".into());
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(format!(
            "file is larger than {} MiB; skipped",
            MAX_FILE_BYTES / (1024 * 1024)
        ));
    }
    // `take` bounds a file that grows while it is read.
    READ_BUFFER.with(|cell| {
        let mut buf = cell.borrow_mut();
        buf.clear();
        buf.reserve(meta.len() as usize + 1);
        let read = (&mut file)
            .take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut buf)
            .map_err(|e| walk::io_cause(&e));
        let out = read.map(|_| f(&buf, &meta));
        // A huge file's buffer is not kept for the rest of the run.
        if buf.capacity() > KEEP_BUFFER_BYTES {
            *buf = Vec::new();
        }
        out
    })
}

/// A file's text as phase one decodes it (lossy UTF-8, BOM dropped).
fn decode_text(bytes: &[u8]) -> String {
    let bytes = bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(bytes);
    // valid UTF-8 (nearly every file) is checked by the word-at-a-time
    // validator; the lossy decoder walks the bytes one by one
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_owned(),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    }
}

/// The numbering of a file's findings for their fingerprints: each line
/// with a finding gets the id of its normalised text (lines that read
/// alike, whitespace aside, share one), and each (rule, id) counts its
/// findings. A dense file has a finding on every line: three hash maps
/// keyed by line, hash and (code, id) took 1.6 MB for 10,000 of them.
#[derive(Default)]
struct LineIds {
    /// The last line asked and its id: a rule's findings come in source
    /// order, so a line's findings ask in a row (a minified line's
    /// thousands hash it once per rule).
    last: Option<(usize, u32)>,
    /// Per distinct normalised text: its hash, a line reading so, its id.
    texts: hashbrown::HashTable<(u64, usize, u32)>,
    keyed: std::collections::hash_map::RandomState,
    /// Per rule code, the findings counted so far of each text id.
    counts: Vec<(&'static str, Vec<u32>)>,
}

impl LineIds {
    fn id(&mut self, line: usize, index: &LineIndex) -> u32 {
        if let Some((l, id)) = self.last {
            if l == line {
                return id;
            }
        }
        let text = index.line_text(line);
        let hash = filter::baseline::normalised_hash(text, &self.keyed);
        let next = self.texts.len() as u32;
        let id = match self.texts.entry(
            hash,
            |&(h, l, _)| h == hash && filter::baseline::reads_alike(index.line_text(l), text),
            |&(h, _, _)| h,
        ) {
            hashbrown::hash_table::Entry::Occupied(e) => e.get().2,
            hashbrown::hash_table::Entry::Vacant(e) => {
                e.insert((hash, line, next));
                next
            }
        };
        self.last = Some((line, id));
        id
    }

    /// One more finding of `code` on a line of text `id`: how many so far.
    fn count(&mut self, code: &'static str, id: u32) -> usize {
        let at = match self.counts.iter().position(|(c, _)| *c == code) {
            Some(at) => at,
            None => {
                self.counts.push((code, Vec::new()));
                self.counts.len() - 1
            }
        };
        let counts = &mut self.counts[at].1;
        let i = id as usize;
        if counts.len() <= i {
            counts.resize(i + 1, 0);
        }
        counts[i] += 1;
        counts[i] as usize
    }
}

/// Most fingerprint prefixes [`findings_for`] keeps at once.
const PREFIX_MEMO: usize = 64;

/// Largest read buffer a worker thread keeps between files. A larger one
/// is let go once its file is decoded: kept, it would stand beside that
/// file's text, tokens and facts through the analysis (one byte per source
/// byte more at the peak of any file above this size, measured on files of
/// 100 kB, and of 50 to 64 kB when this was 64 kB; most files of real code
/// are smaller, so the buffer is still reused between them, and a larger
/// file's analysis costs far more than allocating its buffer again).
const KEEP_BUFFER_BYTES: usize = 16 << 10;

thread_local! {
    static READ_BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Binary, rejected by the prefilter, or decoded text (lossily; BOM dropped).
/// With `call_words`, a file the prefilter rejects leaves its call-word
/// signature there (`prefilter::may_match_signed`; cleared otherwise).
/// With `minified`, the path and language of the file, a file the
/// prefilter lets through that is minified is `Loaded::Minified`, not
/// decoded.
fn classify(
    bytes: &[u8],
    custom_lock_keys: bool,
    dialect: prefilter::Dialect,
    call_words: Option<(&mut Vec<u32>, bool)>,
    minified: Option<(&Path, Language)>,
) -> Result<Loaded, String> {
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(format!(
            "file is larger than {} MiB; skipped",
            MAX_FILE_BYTES / (1024 * 1024)
        ));
    }
    if memchr::memchr(0, &bytes[..bytes.len().min(BINARY_PROBE)]).is_some() {
        return Ok(Loaded::Binary);
    }
    let pass = match call_words {
        Some((sig, spaced)) => {
            let pass = prefilter::may_match_signed(bytes, custom_lock_keys, dialect, spaced, sig);
            if pass {
                sig.clear();
            }
            pass
        }
        None => prefilter::may_match_in(bytes, custom_lock_keys, dialect),
    };
    if !pass {
        return Ok(Loaded::Rejected);
    }
    if let Some(why) =
        minified.and_then(|(path, lang)| crate::minified::machine_written(path, lang, bytes))
    {
        return Ok(Loaded::Minified(why));
    }
    Ok(Loaded::Text(decode_text(bytes)))
}

/// Phase one's result for one file: its text and facts.
struct Phase1 {
    display: String,
    path: PathBuf,
    /// The text; empty until needed for a file of the project that is not
    /// reported and came from the cache unread (see `loaded`).
    src: String,
    loaded: bool,
    facts: FileFacts,
    /// Findings are reported for this file (it was among the paths given).
    report: bool,
    /// Its call sites, packed until the link (`project::calls`; a
    /// whole-project run only): `facts.link.calls` is empty meanwhile.
    packed: Option<crate::project::calls::PackedCalls>,
    /// The hash of the text phase one read, when the text was let go after
    /// phase one ([`let_text_go`]): the text read again for the rules must
    /// be the same.
    src_hash: Option<u64>,
    /// The file changed on disk between phase one and the rules.
    changed: bool,
    /// The facts as this run stored them in the cache: their calls are
    /// packed there already ([`let_text_go`] shares them).
    stored: Option<crate::project::cache::Blob>,
}

impl Phase1 {
    /// A file whose findings are reported, its calls unpacked and its text
    /// (when `loaded`) held.
    fn new(display: String, path: PathBuf, src: String, loaded: bool, facts: FileFacts) -> Phase1 {
        Phase1 {
            display,
            path,
            src,
            loaded,
            facts,
            report: true,
            packed: None,
            src_hash: None,
            changed: false,
            stored: None,
        }
    }

    /// Whether it declares a function (its signature perhaps packed).
    fn has_functions(&self) -> bool {
        !self.facts.link.functions.is_empty()
            || self
                .call_names()
                .is_some_and(|n| !n.packed_functions().is_empty())
    }

    /// The names of its calls, when they are packed.
    fn call_names(&self) -> Option<&crate::project::calls::CallNames> {
        self.packed.as_ref().map(|p| &p.names)
    }
}

/// The hash that tells a text read again from the one phase one read
/// (within one run, never stored): a fast one, as every file of the
/// project that is not reported is hashed once (the cache's SipHash took
/// about 3 instructions a byte).
fn text_hash(bytes: &[u8]) -> u64 {
    use std::hash::Hasher;
    let mut h = rustc_hash::FxHasher::default();
    h.write(bytes);
    h.write_usize(bytes.len());
    h.finish()
}

/// Memory of a whole-project run: until the rules run, a file's text is
/// not needed (it is read again then, checked against this hash) and its
/// call sites wait packed.
fn let_text_go(p: &mut Phase1) {
    if p.loaded && p.src_hash.is_none() {
        p.src_hash = Some(text_hash(p.src.as_bytes()));
        p.src = String::new();
        p.loaded = false;
    }
    // the calls the cache entry just made packed (not packed again)
    let stored = p
        .stored
        .take()
        .and_then(|b| crate::project::cache::packed_calls(&b));
    match &p.packed {
        // packed by the front-end: the cache entry holds the same bytes,
        // a range of its buffer is kept instead (one copy, not two)
        Some(own) if !own.is_shared() => {
            if let Some(k) = stored.filter(|k| k.names.len() == own.names.len()) {
                p.packed = Some(k);
            }
        }
        Some(_) => {}
        None => {
            p.packed = match stored.filter(|k| k.names.len() == p.facts.link.calls.len()) {
                Some(k) => {
                    p.facts.link.calls = Vec::new();
                    Some(k)
                }
                None => crate::project::calls::PackedCalls::take(&mut p.facts),
            };
        }
    }
    // and the signatures only the link reads (a file with no call keeps
    // its few)
    if let Some(packed) = p.packed.as_mut() {
        packed.take_idle_functions(&mut p.facts);
    }
}

/// The signatures the link and the rules can read are those of functions
/// with an op of their own or a call the link keeps: a summary needs one
/// or the other (`project::summary`, which instantiates a linked op in its
/// call's scope), and a rule reads the signature of an op's function. The
/// others (most functions of a large project) are let go before the link.
fn forget_idle_functions(facts: &mut FileFacts) {
    let busy: rustc_hash::FxHashSet<crate::facts::ScopeId> = facts
        .ops
        .iter()
        .map(|o| o.scope)
        .chain(facts.link.calls.iter().map(|c| c.scope))
        .collect();
    let functions = &mut facts.link.functions;
    functions.retain(|s| busy.contains(&s.scope));
    functions.shrink_to_fit();
}

/// Unpacks the calls the link can use (`project::calls::relevant`), once
/// the whole project is read.
fn unpack_calls(files: &mut [Phase1], threads: usize) {
    if files.iter().all(|f| f.packed.is_none()) {
        return;
    }
    // every file's calls count for the closure: pack the few still unpacked
    for f in files.iter_mut().filter(|f| f.packed.is_none()) {
        f.packed = crate::project::calls::PackedCalls::take(&mut f.facts);
    }
    let empty = crate::project::calls::CallNames::default();
    let named: Vec<_> = files
        .iter()
        .map(|f| (&f.facts, f.call_names().unwrap_or(&empty)))
        .collect();
    let keep = in_pool(threads, || crate::project::calls::relevant(&named));
    drop(named);
    // which kept calls could resolve: the others need no arguments
    let reach = crate::project::calls::Reach::of(files.iter().map(|f| &f.facts));
    // calls still in the cache's shards (a warm run) are copied out (or
    // dropped) first, one shard after another: each shard's buffer goes
    // before the next one's calls are copied, and all before the unpacked
    // calls come (copied all at once, 28 MB of them stood beside the 41 MB
    // of shards of the real-code benchmark for a moment: its peak RSS)
    let mut shared: Vec<_> = files
        .iter_mut()
        .filter_map(|f| {
            let p = f.packed.as_mut()?;
            Some((p.shared_buffer()?, p))
        })
        .collect();
    shared.sort_unstable_by_key(|(buffer, _)| *buffer);
    in_pool(threads, || {
        for group in shared.chunk_by_mut(|a, b| a.0 == b.0) {
            group
                .par_iter_mut()
                .for_each(|(_, p)| p.detach(keep.as_ref()));
        }
    });
    if !shared.is_empty() {
        drop(shared);
        // (the shards' buffers just let go: handed back before the
        // unpacked calls take their place)
        release_freed_memory();
    }
    let run = || {
        files.par_iter_mut().enumerate().for_each(|(i, f)| {
            if let Some(p) = f.packed.take() {
                f.facts.link.calls = p.unpack_reaching(
                    keep.as_ref(),
                    Some((&reach, i)),
                    &mut f.facts.link.functions,
                );
            }
            forget_idle_functions(&mut f.facts);
        })
    };
    in_pool(threads, run)
}

/// Files larger than this are analysed one at a time (see [`check_entry`]).
const BIG_FILE_BYTES: usize = 1 << 20;

static BIG_FILE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Hands freed memory back to the system: glibc keeps it in the arena of
/// the thread that freed it otherwise. After a big file's analysis, each
/// worker would hold the high-water mark of the biggest file it saw (two
/// workers with a 4 MB bundle each: twice the peak of one); after the
/// unpacking and the link of a whole project, the next stage's
/// allocations land on other pages than those freed (peak RSS of the
/// real-code benchmark 100 → 94 MB, a few ms).
fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn malloc_trim(pad: usize) -> std::ffi::c_int;
        }
        // SAFETY: malloc_trim takes no pointer; it only returns free pages
        // of the allocator's heaps to the system.
        unsafe {
            malloc_trim(0);
        }
    }
}

#[derive(Default)]
struct FileOutcome {
    /// Boxed: most files are rejected by the prefilter, and an outcome
    /// lives for every file walked until phase one ends.
    phase1: Option<Box<Phase1>>,
    /// What is said of it, when anything is (boxed, as `phase1`: the
    /// outcomes of a walk of 74,000 files took 11 MB unboxed).
    said: Option<Box<Said>>,
    /// The Redis prefilter rejected it (it may still call a wrapper).
    rejected: bool,
    /// Its call-word signature when the prefilter rejected it in this run
    /// (`prefilter::may_match_signed`): the call-name scan reads it again
    /// only when it may call a summarised name.
    call_words: Option<prefilter::CallWords>,
    /// Its cached facts, left encoded (no ops of its own; see `Cached::Lazy`).
    lazy: Option<crate::project::cache::Blob>,
}

/// The errors and notes of one file's [`FileOutcome`].
#[derive(Default)]
struct Said {
    error: Option<FileError>,
    notes: Vec<(String, String)>,
    /// Minified or generated, and skipped ([`crate::minified`]): the note
    /// that says why.
    skipped: Option<Skipped>,
}

impl FileOutcome {
    fn said(&mut self) -> &mut Said {
        self.said.get_or_insert_with(Box::default)
    }

    /// Its facts' notes (for `-v`), each with its path.
    fn note_facts(&mut self, entry: &Entry, facts: &FileFacts) {
        if facts.notes.is_empty() {
            return;
        }
        self.said().notes = facts
            .notes
            .iter()
            .map(|n| (entry.display.clone(), n.clone()))
            .collect();
    }
}

type Cache<'a> = Option<&'a crate::project::cache::Cache>;

/// Where a freshly parsed file's facts go in the cache: its key, stat and
/// content hash.
type Store<'a> = Option<(
    &'a crate::project::cache::Cache,
    &'a str,
    crate::project::cache::Stat,
    u64,
)>;

/// The front-end on one file's text (a big file while no other big file
/// is: the front-ends hold tens of bytes per source byte, and two vendored
/// multi-megabyte bundles at once would double the peak); the facts are
/// stored in the cache.
fn parse(
    entry: &Entry,
    src: &str,
    settings: &Settings,
    store: Store,
    minified: Option<crate::minified::Why>,
) -> (
    FileFacts,
    Option<crate::project::calls::PackedCalls>,
    Option<crate::project::cache::Blob>,
) {
    let one_big_file =
        (src.len() > BIG_FILE_BYTES).then(|| BIG_FILE.lock().unwrap_or_else(|e| e.into_inner()));
    // a large minified file is read in reduced mode: no call sites
    let sites = match minified {
        Some(why) if !why.is_generated() && src.len() > crate::minified::REDUCED_BYTES => {
            frontend::CallSites::Skip
        }
        _ => frontend::CallSites::Record,
    };
    let (facts, packed) = packed_facts_for(entry.path(), src, entry.language, settings, sites);
    if one_big_file.is_some() {
        release_freed_memory();
    }
    drop(one_big_file);
    let mut facts = facts;
    let mut stored = None;
    if let Some((c, key, stat, h)) = store {
        if let Some(out) = crate::project::cache::encode(&mut facts, packed.as_ref()) {
            if let crate::project::cache::Outcome::Facts(blob) = &out {
                stored = Some(blob.clone());
            }
            // a minified or generated file's facts serve only the runs
            // that scan it
            let out = match (minified, out) {
                (Some(why), crate::project::cache::Outcome::Facts(blob)) => {
                    crate::project::cache::Outcome::skipped(&why, Some(blob))
                }
                (_, out) => out,
            };
            c.put(key, stat, h, out);
        }
    }
    (facts, packed, stored)
}

/// A cached phase-one outcome, decoded.
enum Cached {
    /// Binary or empty.
    Nothing,
    /// Rejected by the prefilter: its anchored call-word hashes when the
    /// cache kept them (`cache::Outcome::Signed`).
    Rejected(Option<Box<[u32]>>),
    /// The facts (their calls empty) and the calls, packed.
    Facts(Box<FileFacts>, Option<crate::project::calls::PackedCalls>),
    /// Facts without ops of their own, left encoded until the link says
    /// whether it can use them (`cache::Uses`; the rest of the project).
    Lazy(crate::project::cache::Blob),
    /// Minified or generated, skipped: the note that says why.
    Skipped(Skipped),
}

impl Cached {
    /// `None` when the facts cannot be decoded or are of another language,
    /// or when a minified or generated file is to be scanned and was never
    /// scanned. `lazy`: facts without ops stay encoded (nothing when the
    /// file makes no call either: the link cannot use it). `skip`: which
    /// machine-written files are skipped (`Settings::skips`).
    fn of(
        out: &crate::project::cache::Outcome,
        language: Language,
        lazy: bool,
        skip: Skip,
    ) -> Option<Cached> {
        use crate::project::cache::{self, Outcome};
        Some(match out {
            Outcome::Binary | Outcome::Empty => Cached::Nothing,
            Outcome::Rejected => Cached::Rejected(None),
            Outcome::Signed(_) => Cached::Rejected(out.anchored()),
            Outcome::Minified(note, _) if skip.minified => Cached::Skipped(Skipped {
                generated: false,
                note: note.to_string(),
            }),
            Outcome::Generated(note, _) if skip.generated => Cached::Skipped(Skipped {
                generated: true,
                note: note.to_string(),
            }),
            Outcome::Minified(_, None) | Outcome::Generated(_, None) => return None,
            Outcome::Facts(bytes)
            | Outcome::Minified(_, Some(bytes))
            | Outcome::Generated(_, Some(bytes)) => {
                let uses = cache::uses(bytes).filter(|u| u.language == language && !u.has_ops);
                if let Some(u) = uses.filter(|_| lazy) {
                    return Some(match u.pairs().next() {
                        None => Cached::Nothing,
                        Some(_) => Cached::Lazy(bytes.clone()),
                    });
                }
                let (facts, packed) =
                    cache::decode_shared(bytes).filter(|(f, _)| f.language == language)?;
                Cached::Facts(Box::new(facts), packed)
            }
        })
    }
}

/// Phase one for one file: its facts (or that it is binary, rejected or
/// empty), from the cache when the file did not change (its calls then
/// come packed: `Phase1::packed`). `need_src`: the
/// text is wanted even when the facts come from the cache (a file to report).
/// `sign_calls`: a file the prefilter rejects keeps its call-word signature.
fn read_entry(
    entry: &Entry,
    settings: &Settings,
    cache: Cache,
    need_src: bool,
    sign_calls: bool,
) -> FileOutcome {
    thread_local! {
        /// Each worker's folder verdicts: its files come in path order,
        /// folder by folder.
        static TEST_PATHS: std::cell::RefCell<words::TestPaths> =
            std::cell::RefCell::new(words::TestPaths::default());
    }
    if !settings.tests && TEST_PATHS.with(|t| t.borrow_mut().is_test_path(entry.path())) {
        return FileOutcome::default();
    }
    read_code_entry(entry, settings, cache, need_src, sign_calls, false)
}

/// [`read_entry`] for a file known not to be left out as test code.
/// `lazy`: cached facts without ops stay encoded (`FileOutcome::lazy`).
fn read_code_entry(
    entry: &Entry,
    settings: &Settings,
    cache: Cache,
    need_src: bool,
    sign_calls: bool,
    lazy: bool,
) -> FileOutcome {
    use crate::project::cache::{self, Outcome, Stat};
    let mut outcome = FileOutcome::default();
    let custom_keys = !settings.lock_key_patterns.is_empty();
    // What to do with a cached outcome, decoded.
    let from_cache = |got: Cached, src: Option<String>, outcome: &mut FileOutcome| match got {
        Cached::Nothing => {}
        Cached::Rejected(anchored) => {
            outcome.rejected = true;
            outcome.call_words = anchored.map(prefilter::CallWords::anchored_only);
        }
        Cached::Lazy(blob) => outcome.lazy = Some(blob),
        Cached::Skipped(skipped) => outcome.said().skipped = Some(skipped),
        Cached::Facts(facts, packed) => {
            outcome.note_facts(entry, &facts);
            let loaded = src.is_some();
            let mut p = Phase1::new(
                entry.display.clone(),
                entry.path().to_path_buf(),
                src.unwrap_or_default(),
                loaded,
                *facts,
            );
            p.packed = packed;
            outcome.phase1 = Some(Box::new(p));
        }
    };
    let key = cache.map(|c| c.key(entry.path()));
    let skip = settings.skips(entry);
    if let (Some(c), Some(key)) = (cache, key.as_deref()) {
        // unchanged size and time: the file is not read unless reported
        if let Some(got) = std::fs::metadata(entry.path())
            .ok()
            .filter(|m| m.is_file())
            .and_then(|m| {
                c.by_stat_with(key, Stat::of(&m), |out| {
                    Cached::of(out, entry.language, lazy && !need_src, skip)
                })
            })
        {
            let wanted = need_src && matches!(got, Cached::Facts(..));
            let src = if wanted {
                with_file_bytes(entry.path(), |b, _| decode_text(b)).ok()
            } else {
                None
            };
            if !wanted || src.is_some() {
                from_cache(got, src, &mut outcome);
                return outcome;
            }
        }
    }
    // Read it; a known content hash still spares the front-end.
    let read = with_file_bytes(entry.path(), |bytes, meta| {
        // a Rust file without a Redis needle is rejected like the prefilter
        // does (one with a suppression comment is kept: LL100; the
        // prefilter passed it, so it has no call-word signature)
        let mut sig = sign_calls.then(Vec::new);
        let spaced = entry.language.has_paren_less_calls();
        let minified = Some((entry.path(), entry.language));
        let mut classify = |bytes: &[u8], custom_keys| {
            let signed = sig.as_mut().map(|s| (s, spaced));
            let dialect = prefilter::Dialect::of(entry.language);
            let loaded = match classify(bytes, custom_keys, dialect, signed, minified) {
                Ok(Loaded::Text(_))
                    if entry.language == Language::Rust
                        && !frontend::rust::has_needles(bytes)
                        && memchr::memmem::find(bytes, b"locklint:").is_none() =>
                {
                    sig = None;
                    Ok(Loaded::Rejected)
                }
                other => other,
            };
            // a minified or generated file to scan is decoded now; its
            // facts are cached as such a file's
            match loaded {
                Ok(Loaded::Minified(why)) if !skip.skips(&why) => {
                    (Ok(Loaded::Text(decode_text(bytes))), Some(why))
                }
                Ok(Loaded::Minified(why)) => (Ok(Loaded::Minified(why)), Some(why)),
                other => (other, None),
            }
        };
        // a rejected file's call words, for the call-name scan
        let words = |loaded: &Result<Loaded, String>, sig: &Option<Vec<u32>>| match loaded {
            Ok(Loaded::Rejected) => sig
                .as_deref()
                .map(|s| prefilter::CallWords::of(bytes, s, spaced)),
            _ => None,
        };
        let (Some(c), Some(key)) = (cache, key.as_deref()) else {
            let (loaded, why) = classify(bytes, custom_keys);
            let words = words(&loaded, &sig);
            return (loaded, None, words, why);
        };
        let stat = Stat::of(meta);
        let h = cache::hash(bytes);
        if let Some(got) = c
            .by_hash(key, stat, h)
            .and_then(|out| Cached::of(&out, entry.language, false, skip))
        {
            let src = matches!(got, Cached::Facts(..)).then(|| decode_text(bytes));
            let mut done = FileOutcome::default();
            from_cache(got, src, &mut done);
            return (Ok(Loaded::Binary), Some(Err(done)), None, None);
        }
        let (loaded, why) = classify(bytes, custom_keys);
        match &loaded {
            Ok(Loaded::Binary) => c.put(key, stat, h, Outcome::Binary),
            // (with its anchored call words when the prefilter gave them:
            // a later scan of new anchored names needs no read of it)
            Ok(Loaded::Rejected) => {
                let out = sig.as_deref().map_or(Outcome::Rejected, Outcome::signed);
                c.put(key, stat, h, out)
            }
            Ok(Loaded::Text(t)) if t.is_empty() => c.put(key, stat, h, Outcome::Empty),
            Ok(Loaded::Minified(why)) => c.put(key, stat, h, Outcome::skipped(why, None)),
            _ => {}
        }
        let words = words(&loaded, &sig);
        (loaded, Some(Ok((stat, h))), words, why)
    });
    let (loaded, seen, sig, why) = match read {
        Ok(x) => x,
        Err(message) => (Err(message), None, None, None),
    };
    let store = match seen {
        Some(Err(done)) => return done,
        Some(Ok(seen)) => cache
            .zip(key.as_deref())
            .map(|(c, k)| (c, k, seen.0, seen.1)),
        None => None,
    };
    match loaded {
        Err(message) => {
            outcome.said().error = Some(FileError {
                path: entry.display.clone(),
                message,
            })
        }
        Ok(Loaded::Binary) => {}
        Ok(Loaded::Rejected) => {
            outcome.rejected = true;
            outcome.call_words = sig;
        }
        Ok(Loaded::Minified(why)) => outcome.said().skipped = Some(Skipped::of(&why)),
        Ok(Loaded::Text(src)) if src.is_empty() => {}
        Ok(Loaded::Text(src)) => {
            let (facts, packed, stored) = parse(entry, &src, settings, store, why);
            outcome.note_facts(entry, &facts);
            let mut p = Phase1::new(
                entry.display.clone(),
                entry.path().to_path_buf(),
                src,
                true,
                facts,
            );
            p.packed = packed;
            p.stored = stored;
            outcome.phase1 = Some(Box::new(p));
        }
    }
    outcome
}

// ---- Phase two: link the project, then the rules per file -----------------

/// Links the files (`crate::project`), runs the rules on each with its
/// instantiated and foreign ops, and drops a finding at a call site when
/// the op it came from already has the same finding where it is (a defect
/// inside a lock function is reported there, not again at each caller).
/// Returns the findings of each reported file with its text.
fn link_and_check(
    mut files: Vec<Phase1>,
    settings: &Settings,
    threads: usize,
) -> Vec<(Phase1, Vec<Finding>)> {
    let found = link_and_check_all(&mut files, settings, threads);
    // the files not reported are let go on all workers (their facts are
    // many small allocations), and so are the facts of the reported ones:
    // only their names, texts and findings are read from here on
    in_pool(threads, || {
        files
            .into_par_iter()
            .zip(found)
            .filter(|(f, _)| f.report)
            .map(|(mut f, found)| {
                f.facts = FileFacts::new(f.facts.language);
                (f, found)
            })
            .collect()
    })
}

/// [`link_and_check`] on borrowed files: the findings of every file, in order.
fn link_and_check_all(
    files: &mut [Phase1],
    settings: &Settings,
    threads: usize,
) -> Vec<Vec<Finding>> {
    // the platform's run limits, after the (cached) facts
    crate::vercel::apply(
        files.iter_mut().map(|f| (f.path.as_path(), &mut f.facts)),
        settings.project_root.as_deref(),
    );
    // the TTLs and hard limits only the project knows (other files'
    // constants, the callers' limits)
    if !link_off() {
        let mut all: Vec<&mut FileFacts> = files.iter_mut().map(|f| &mut f.facts).collect();
        crate::project::limits::apply(&mut all);
    }
    let stems: Vec<String> = files
        .iter()
        .map(|f| {
            Path::new(&f.display)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
        .collect();
    let project: Vec<crate::project::ProjectFile> = files
        .iter()
        .zip(&stems)
        .map(|(f, stem)| crate::project::ProjectFile {
            display: &f.display,
            stem,
            facts: &f.facts,
        })
        .collect();
    let views = if link_off() {
        vec![crate::project::FileView::default(); project.len()]
    } else {
        in_pool(threads, || crate::project::link_project(&project))
    };
    drop(project);
    // (the link's scratch, freed on both workers' heaps: the rules' own
    // allocations would not all fit back into it — peak RSS)
    release_freed_memory();
    // The rules run on the reported files and on the files their linked
    // ops come from (a finding there drops the same one at the call site);
    // the text of such a file that came from the cache unread is read now.
    let mut needed: Vec<bool> = files.iter().map(|f| f.report).collect();
    for (i, view) in views.iter().enumerate() {
        if files[i].report {
            for r in view.insts.iter().flat_map(|inst| &inst.chain) {
                if let Some(n) = needed.get_mut(r.file) {
                    *n = true;
                }
            }
        }
    }
    // where the labels below point (a linked op's client call): the
    // lines of these offsets of each file are taken while its text is read
    let mut roots: Vec<Vec<usize>> = vec![Vec::new(); files.len()];
    for (i, view) in views.iter().enumerate() {
        if needed[i] {
            for r in view.insts.iter().filter_map(|inst| inst.chain.first()) {
                if let Some(x) = roots.get_mut(r.file) {
                    x.push(r.at);
                }
            }
        }
    }
    for offsets in &mut roots {
        offsets.sort_unstable();
        offsets.dedup();
    }
    // A text is read when its rules run (unless phase one kept it) and let
    // go again unless it has findings (a label needs only some of its line
    // numbers, taken before); one read again must be the text phase one
    // read.
    let load = |f: &mut Phase1| -> bool {
        if f.loaded {
            return true;
        }
        let Ok(src) = with_file_bytes(&f.path, |b, _| decode_text(b)) else {
            return false;
        };
        if f.src_hash.is_some_and(|h| h != text_hash(src.as_bytes())) {
            f.changed = true;
            return false;
        }
        f.src = src;
        f.loaded = true;
        true
    };
    let run = || {
        files
            .par_iter_mut()
            .zip(views.par_iter())
            .zip(needed.par_iter())
            .zip(roots.par_iter())
            .map(|(((f, view), n), root)| {
                if !n || !load(f) {
                    return (Vec::new(), Vec::new(), Vec::new(), Vec::new());
                }
                // (the linked facts are the file's with ops added, made in
                // place and undone after: the rest is not copied)
                let undo = view.link_into(&mut f.facts);
                let (found, verdicts, own_flow) = findings_for(
                    &f.display,
                    &f.src,
                    &mut f.facts,
                    &view.foreign,
                    &view.plain_writes,
                    &view.held_scopes,
                    settings,
                );
                if let Some(u) = undo {
                    u.restore(&mut f.facts);
                }
                let lines: Vec<(usize, usize)> = if root.is_empty() {
                    Vec::new()
                } else {
                    let idx = LineIndex::new(&f.src);
                    root.iter().map(|&at| (at, idx.line_col(at).0)).collect()
                };
                if found.is_empty() && f.src_hash.is_some() {
                    f.src = String::new();
                    f.loaded = false;
                }
                (found, verdicts, own_flow, lines)
            })
            .collect::<Vec<_>>()
    };
    let mut found: Vec<Vec<Finding>> = Vec::new();
    let mut verdicts: Vec<Verdicts> = Vec::new();
    let mut own_flow: Vec<Vec<(usize, &str)>> = Vec::new();
    // (file, offset) → line of each place a label points to
    let mut label_lines: HashMap<(usize, usize), usize> = HashMap::new();
    for (i, (f, v, o, lines)) in in_pool(threads, run).into_iter().enumerate() {
        found.push(f);
        verdicts.push(v);
        own_flow.push(o);
        label_lines.extend(lines.into_iter().map(|(at, line)| ((i, at), line)));
    }
    // Whether the rules of `file` found that the lock of the op at `at`
    // cannot expire (`unknown` false: SPEC §2 Expirable lock), or counted
    // it expirable only because nothing there showed how the key is taken
    // (`unknown` true): each file's verdicts are sorted
    // (`rules::Context::expiry_verdicts`), looked up where they are (sets
    // of them all took 0.8 MB beside a file of 10,000 findings).
    let verdict_is = |file: usize, at: usize, unknown: bool| {
        let Some(v) = verdicts.get(file) else {
            return false;
        };
        v.binary_search(&rules::expiry_verdict(at, unknown)).is_ok()
    };
    // (file, byte offset, code) of every finding of a file along some
    // call's chain, for the once-only rule (of every finding, it took 67
    // bytes each in a file of dense findings that no call reaches)
    let chained: std::collections::HashSet<usize> = views
        .iter()
        .flat_map(|v| {
            v.insts
                .iter()
                .flat_map(|inst| inst.chain.iter().map(|r| r.file))
        })
        .collect();
    let at: std::collections::HashSet<(usize, usize, &str)> = found
        .iter()
        .enumerate()
        .filter(|(i, _)| chained.contains(i))
        .flat_map(|(i, fs)| fs.iter().map(move |f| (i, f.span.start(), f.code())))
        .collect();
    drop(chained);
    let mut line_index: HashMap<usize, LineIndex> = HashMap::new();
    for (i, fs) in found.iter_mut().enumerate() {
        if views[i].insts.is_empty() {
            continue;
        }
        let mut by_call: HashMap<usize, Vec<&crate::project::Inst>> = HashMap::new();
        for inst in &views[i].insts {
            by_call
                .entry(inst.op.name_span.start())
                .or_default()
                .push(inst);
        }
        // A call that instantiates several of a wrapper's ops (its SETNX
        // and its EXPIRE) repeats the wrapper's finding when any of them
        // already carries it there.
        // A finding that needs an expirable lock (LL001, LL002, LL005) at a
        // call site that shows nothing of how the key is taken stands or
        // falls with the wrapper: where the rules of a file along the
        // chain found that the lock behind the op cannot expire (its lock
        // type takes its locks without a TTL), the call site has nothing
        // to add.
        let needs_expiry = |code: &str| matches!(code, "LL001" | "LL002" | "LL005");
        // A finding of the call site's own flow (a release deferred before
        // the acquire's result is tested) is another defect than the
        // wrapper's, with its fix at the call site: it stays.
        let own = &own_flow[i];
        fs.retain(|f| {
            own.contains(&(f.span.start(), f.code()))
                || by_call.get(&f.span.start()).is_none_or(|insts| {
                    !insts.iter().any(|inst| {
                        inst.chain.iter().any(|r| {
                            at.contains(&(r.file, r.at, f.code()))
                                || (needs_expiry(f.code())
                                    && verdict_is(i, f.span.start(), true)
                                    && verdict_is(r.file, r.at, false))
                        })
                    })
                })
        });
        for f in fs.iter_mut() {
            let Some((inst, r)) = by_call
                .get(&f.span.start())
                .and_then(|v| v.first())
                .and_then(|i| Some((i, i.chain.first()?)))
            else {
                continue;
            };
            let Some(root) = files.get(r.file) else {
                continue;
            };
            // (a text that could not be read again has no line taken)
            let line = match label_lines.get(&(r.file, r.at)) {
                Some(&line) => line,
                None => {
                    line_index
                        .entry(r.file)
                        .or_insert_with(|| LineIndex::new(&root.src))
                        .line_col(r.at)
                        .0
                }
            };
            let (cl, cc) = (f.line, f.column);
            f.labels.push(Label {
                span: Span::new(f.span.start(), f.span.start()),
                line: cl,
                column: cc,
                text: format!(
                    "through `{}`: the Redis call is at {}:{}",
                    inst.via, root.display, line
                )
                .into(),
            });
        }
    }
    found
}

/// Runs `run` on `threads` workers: on rayon's global pool when it has
/// that many (the default, one per core: no threads started per stage),
/// else on a pool of its own.
fn in_pool<R: Send>(threads: usize, run: impl FnOnce() -> R + Send) -> R {
    if rayon::current_num_threads() == threads {
        return run();
    }
    match rayon::ThreadPoolBuilder::new().num_threads(threads).build() {
        Ok(pool) => pool.install(run),
        Err(_) => run(),
    }
}

/// `--threads`, or one per core when it is 0.
fn worker_threads(settings: &Settings) -> usize {
    if settings.threads == 0 {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    } else {
        settings.threads
    }
}

/// The project cache under `root` for these settings.
fn open_cache(root: &Path, settings: &Settings) -> crate::project::cache::Cache {
    crate::project::cache::Cache::open(root, settings.tests, !settings.lock_key_patterns.is_empty())
}

/// A project held in memory between checks (the language server): phase
/// one of every file under the project root, read once (through the
/// project cache), then one file's text refreshed at a time and checked
/// linked against the rest — what `locklint <file>` reports for that file
/// from the same root, without reading the project again.
pub struct Workspace {
    files: Vec<Phase1>,
    /// The slot of each file in `files`, by canonical path.
    slots: HashMap<PathBuf, usize>,
}

fn canonical(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

impl Workspace {
    /// Reads phase one of the files under `root` (as `check_paths` reads
    /// the rest of the project: files with nothing for a finding are left).
    pub fn load(root: &Path, settings: &Settings) -> Workspace {
        let threads = worker_threads(settings);
        let (entries, _) =
            walk::collect_excluding(&[root.to_path_buf()], threads, settings.exclude.as_ref());
        let cache = settings.cache.then(|| open_cache(root, settings));
        let run = || {
            entries
                .par_iter()
                .filter_map(|e| {
                    let mut p = *read_entry(e, settings, cache.as_ref(), false, false).phase1?;
                    p.report = false;
                    // the link of one file's check takes every call
                    if let Some(packed) = p.packed.take() {
                        p.facts.link.calls = packed.unpack(None, &mut p.facts.link.functions);
                    }
                    Some((canonical(e.path()), p))
                })
                .collect::<Vec<_>>()
        };
        let read = in_pool(threads, run);
        if let Some(c) = cache {
            c.save(true);
        }
        let mut ws = Workspace {
            files: Vec::with_capacity(read.len()),
            slots: HashMap::new(),
        };
        for (path, p) in read {
            ws.slots.insert(path, ws.files.len());
            ws.files.push(p);
        }
        ws
    }

    /// How many files the workspace holds.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Replaces the file at `path` with `src` (or adds it) and checks it
    /// linked against the rest of the workspace.
    pub fn check_source(
        &mut self,
        path: &Path,
        display_path: &str,
        src: &str,
        language: Language,
        settings: &Settings,
    ) -> Vec<Finding> {
        if !settings.tests && words::is_test_path(Path::new(display_path)) {
            return Vec::new();
        }
        let p = Phase1::new(
            display_path.to_string(),
            path.to_path_buf(),
            src.to_string(),
            true,
            facts_for(Path::new(display_path), src, language, settings),
        );
        let key = canonical(path);
        let slot = match self.slots.get(&key) {
            Some(&i) => {
                self.files[i] = p;
                i
            }
            None => {
                self.slots.insert(key, self.files.len());
                self.files.push(p);
                self.files.len() - 1
            }
        };
        let threads = settings.threads.max(1);
        let mut found = link_and_check_all(&mut self.files, settings, threads);
        self.files[slot].report = false;
        found.swap_remove(slot)
    }
}

/// The prefilter must not hide call sites: round by round, the files the
/// Redis prefilter rejected that call a function with a summary (found by
/// one automaton over those names) are read too (`project::scan`); a file
/// whose call-word signature from phase one shows none of the names is
/// not read again. Beside them, the notes of the minified or generated
/// files among them that were skipped (`Settings::skips`).
fn read_callers(
    rejected: &[(&Entry, Option<prefilter::CallWords>)],
    read: &[Phase1],
    settings: &Settings,
    threads: usize,
    cache: Cache,
) -> (Vec<Phase1>, Vec<(String, Skipped)>) {
    let mut known = rustc_hash::FxHashSet::default();
    let mut names = crate::project::scan::summarised_names(
        read.iter().map(|f| (&f.facts, f.call_names())),
        &known,
    );
    // and the callers of the functions whose callers' hard limits the
    // project weighs (`project::limits`)
    let mut chain = crate::project::limits::caller_names(
        read.iter().map(|f| (&f.facts, f.call_names())),
        &std::collections::BTreeSet::new(),
    );
    if chain.len() > crate::project::limits::MAX_CHAIN {
        chain.clear();
    }
    // (a name the files read already call too often, or at a top level,
    // gets no callers' limit: its callers are not chased)
    let dead =
        crate::project::limits::dead_names(read.iter().map(|f| (&f.facts, f.call_names())), &chain);
    chain.retain(|n| !dead.contains(n));
    names.extend(chain.iter().filter(|n| !known.contains(*n)).cloned());
    let mut left: Vec<(&Entry, Option<&prefilter::CallWords>)> =
        rejected.iter().map(|(e, w)| (*e, w.as_ref())).collect();
    let mut out: Vec<Phase1> = Vec::new();
    let mut skipped: Vec<(String, Skipped)> = Vec::new();
    for _ in 0..crate::project::link::ROUNDS {
        let mut families: Vec<u8> = read
            .iter()
            .chain(&out)
            .filter(|f| f.has_functions() && !f.facts.ops.is_empty())
            .map(|f| crate::project::scan::family(f.facts.language))
            .collect();
        families.sort_unstable();
        families.dedup();
        let Some(scan) = crate::project::scan::CallScan::new(&names, families) else {
            break;
        };
        let reads = std::sync::atomic::AtomicUsize::new(0);
        // what the cache's answers say of this round's names
        let answers = cache.map(|c| c.answers(std::sync::Arc::clone(&scan.names)));
        let run = || {
            left.par_iter()
                .map(|(e, words)| {
                    // (its text and unpacked calls let go at once, not
                    // after the whole round is read; boxed: one slot per
                    // file left, most of them empty)
                    read_if_calls(e, *words, &scan, settings, cache, answers.as_ref(), &reads).map(
                        |r| {
                            r.map(|mut p| {
                                let_text_go(&mut p);
                                Box::new(p)
                            })
                        },
                    )
                })
                .collect::<Vec<_>>()
        };
        let round_start = Instant::now();
        let got = in_pool(threads, run);
        if std::env::var_os("LOCKLINT_PHASES").is_some_and(|v| v == "1") {
            let (anchored, bloomed, every) = scan.checks();
            eprintln!(
                "locklint call-name round: {} names ({anchored} anchored, {bloomed} by filter, every file read: {every}), {} files left, {} read, {} found, {:.1} ms",
                names.len(),
                left.len(),
                reads.load(std::sync::atomic::Ordering::Relaxed),
                got.iter().filter(|g| matches!(g, Some(Ok(_)))).count(),
                round_start.elapsed().as_secs_f64() * 1e3
            );
        }
        if reads.load(std::sync::atomic::Ordering::Relaxed) > 0 {
            // (the texts and the front-ends' scratch of the files read,
            // freed on both workers' heaps)
            release_freed_memory();
        }
        let mut found = Vec::new();
        let mut still = Vec::new();
        for (e, g) in left.iter().zip(got) {
            match g {
                Some(Ok(p)) => found.push(*p),
                Some(Err(note)) => skipped.push((e.0.display.clone(), note)),
                None => still.push(*e),
            }
        }
        if found.is_empty() {
            break;
        }
        known.extend(names);
        names = crate::project::scan::summarised_names(
            found.iter().map(|f| (&f.facts, f.call_names())),
            &known,
        );
        chain = crate::project::limits::caller_names(
            found.iter().map(|f| (&f.facts, f.call_names())),
            &chain,
        );
        if chain.len() > crate::project::limits::MAX_CHAIN {
            chain.clear();
        }
        out.extend(found);
        let dead = crate::project::limits::dead_names(
            read.iter().chain(&out).map(|f| (&f.facts, f.call_names())),
            &chain,
        );
        chain.retain(|n| !dead.contains(n));
        names.extend(chain.iter().filter(|n| !known.contains(*n)).cloned());
        left = still;
    }
    (out, skipped)
}

/// A TTL or task limit written as another module's constant
/// (`settings.LOCK_TTL`) is resolved by the project's module constants
/// (`project::limits`); the module that defines it usually has no Redis
/// word, so the prefilter rejected it. The rejected files not read yet
/// whose language has such constants (`FileFacts::int_consts`) and that
/// assign one of the names wanted at the start of a line are read too.
fn read_const_files(
    rejected: &[(&Entry, Option<prefilter::CallWords>)],
    read: &[Phase1],
    settings: &Settings,
    threads: usize,
) -> Vec<Phase1> {
    let mut names: Vec<&str> = read
        .iter()
        .filter(|f| f.facts.language == Language::Python)
        .flat_map(|f| {
            f.facts
                .ttls
                .iter()
                .filter(|t| t.ms.is_none())
                .filter_map(|t| t.sym.as_ref().map(|(n, _)| n.as_str()))
                .chain(f.facts.task_limit_names.iter().map(|(_, n)| n.as_str()))
        })
        .collect();
    names.sort_unstable();
    names.dedup();
    if names.is_empty() {
        return Vec::new();
    }
    let Ok(ac) = aho_corasick::AhoCorasick::new(&names) else {
        return Vec::new();
    };
    let seen: rustc_hash::FxHashSet<&Path> = read.iter().map(|f| f.path.as_path()).collect();
    let left: Vec<&Entry> = rejected
        .iter()
        .map(|(e, _)| *e)
        .filter(|e| e.language == Language::Python && !seen.contains(e.path()))
        .collect();
    let ident = crate::prefilter::is_ident_byte;
    // `NAME =` at the start of a line (not `==`)
    let defines = |bytes: &[u8]| {
        ac.find_iter(bytes).any(|m| {
            let line_start = m.start() == 0 || bytes[m.start() - 1] == b'\n';
            let rest = &bytes[m.end()..];
            let rest = &rest[rest
                .iter()
                .take_while(|&&b| b == b' ' || b == b'\t')
                .count()..];
            line_start
                && !rest.first().copied().is_some_and(ident)
                && rest.first() == Some(&b'=')
                && rest.get(1) != Some(&b'=')
        })
    };
    let run = || {
        left.par_iter()
            .filter_map(|e| {
                read_rejected(e, settings, |bytes, _, text| {
                    (text && defines(bytes)).then_some(None)
                })
                .and_then(Result::ok)
                .map(|mut p| {
                    let_text_go(&mut p);
                    p
                })
            })
            .collect::<Vec<_>>()
    };
    in_pool(threads, run)
}

/// Reads a file the Redis prefilter rejected when it calls one of the names
/// (an unchanged file the cache's answers say calls none of them — found
/// calling none of a set holding them all, `cache::Answers` — or whose
/// call-word signature from phase one has none of them, is not read
/// again).
fn read_if_calls(
    entry: &Entry,
    call_words: Option<&prefilter::CallWords>,
    scan: &crate::project::scan::CallScan,
    settings: &Settings,
    cache: Cache,
    answers: Option<&crate::project::cache::Answers>,
    reads: &std::sync::atomic::AtomicUsize,
) -> Option<Result<Phase1, Skipped>> {
    use crate::project::cache::{self, Stat};
    if !scan.wants(entry.language) {
        return None;
    }
    let key = cache.map(|c| c.key(entry.path()));
    let cache = cache.zip(answers);
    if call_words.is_some_and(|w| !scan.may_call(w)) {
        if let (Some((c, a)), Some(key)) = (cache, key.as_deref()) {
            c.put_scan(key, a, false);
        }
        return None;
    }
    if let (Some((c, a)), Some(key)) = (cache, key.as_deref()) {
        // (a file phase one found unchanged is not asked for its size and
        // time again: 59,000 `stat`s a round on the real-code benchmark)
        let kept = c.kept_answer(key, || {
            std::fs::metadata(entry.path()).ok().map(|m| Stat::of(&m))
        });
        match a.of(kept) {
            Some(false) => return None,
            Some(true) => {}
            // the names beyond a kept "none" all hold an anchor, and the
            // file's anchored call words (from phase one or the cache)
            // hold none of them: it calls none of these names either
            None => {
                let beyond = |w: &prefilter::CallWords| {
                    a.beyond(kept, crate::project::scan::CallScan::anchored_hashes)
                        .is_some_and(|b| !w.anchored().iter().any(|h| b.binary_search(h).is_ok()))
                };
                if call_words.is_some_and(beyond) {
                    c.put_scan(key, a, false);
                    return None;
                }
            }
        }
    }
    reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    read_rejected(entry, settings, |bytes, meta, text| {
        let calls = text && scan.calls_any(bytes, entry.language.has_paren_less_calls());
        if let (Some((c, a)), Some(key)) = (cache, key.as_deref()) {
            c.put_scan(key, a, calls);
        }
        calls.then(|| {
            cache
                .zip(key.as_deref())
                .map(|((c, _), k)| (c, k, Stat::of(meta), cache::hash(bytes)))
        })
    })
}

/// Reads a file the Redis prefilter rejected, in full, and runs phase one
/// on it when `wanted` — given its bytes, their metadata and whether they
/// are text (no NUL in the first bytes) — says so; `wanted` also gives the
/// cache entry the facts are stored under, if any. A wanted file that is
/// minified or generated and skipped (`Settings::skips`) is the note that
/// says why; nothing of it is cached, so the next run's call-name scan
/// finds it again.
fn read_rejected<'c>(
    entry: &Entry,
    settings: &Settings,
    wanted: impl FnOnce(&[u8], &std::fs::Metadata, bool) -> Option<Store<'c>>,
) -> Option<Result<Phase1, Skipped>> {
    let read = with_file_bytes(entry.path(), |bytes, meta| {
        let text = memchr::memchr(0, &bytes[..bytes.len().min(BINARY_PROBE)]).is_none();
        let store = wanted(bytes, meta, text)?;
        let why = crate::minified::machine_written(entry.path(), entry.language, bytes);
        if let Some(why) = why.filter(|w| settings.skips(entry).skips(w)) {
            return Some(Err(Skipped::of(&why)));
        }
        Some(Ok((decode_text(bytes), store, why)))
    })
    .ok()??;
    let (src, store, why) = match read {
        Ok(x) => x,
        Err(note) => return Some(Err(note)),
    };
    let (facts, packed, stored) = parse(entry, &src, settings, store, why);
    let mut p = Phase1::new(
        entry.display.clone(),
        entry.path().to_path_buf(),
        src,
        true,
        facts,
    );
    p.packed = packed;
    p.stored = stored;
    Some(Ok(p))
}

/// The files of the project root when the paths given do not cover it
/// (SPEC §5), as a walk of the root finds them: from the cache's folder
/// listing when there is a cache (a `stat` per folder, not a walk).
fn list_rest_of_project(
    paths: &[PathBuf],
    settings: &Settings,
    threads: usize,
) -> Option<Vec<Entry>> {
    let root = settings.project_root.as_deref()?;
    // (`LOCKLINT_NO_LINK=1`: the rest of the project is read only for the
    // project pass)
    if link_off() || crate::project::root::covered_by(root, paths) {
        return None;
    }
    Some(if settings.cache {
        crate::project::listing::collect(
            root,
            threads,
            settings.exclude.as_ref(),
            &crate::project::cache::listing_file(
                root,
                settings.tests,
                !settings.lock_key_patterns.is_empty(),
            ),
        )
    } else {
        walk::collect_excluding(&[root.to_path_buf()], threads, settings.exclude.as_ref()).0
    })
}

/// `path.file_name()`, found by the bytes after the last `/` when they
/// are a plain name (no parse of the path's parts per file of the
/// project).
fn file_name_by_bytes(path: &Path) -> Option<&std::ffi::OsStr> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let bytes = path.as_os_str().as_bytes();
        let name = memchr::memrchr(b'/', bytes).map_or(bytes, |i| &bytes[i + 1..]);
        if !matches!(name, b"" | b"." | b"..") {
            return Some(std::ffi::OsStr::from_bytes(name));
        }
    }
    path.file_name()
}

/// `path` is `root`, a `/` and more, by its bytes (so it is below `root`
/// part by part too); `false` when that cannot be told so.
fn below_by_bytes(path: &Path, root: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        path.as_os_str()
            .as_bytes()
            .strip_prefix(root.as_os_str().as_bytes())
            .is_some_and(|rest| rest.len() > 1 && rest[0] == b'/')
    }
    #[cfg(not(unix))]
    {
        let _ = (path, root);
        false
    }
}

/// A file of the rest of the project whose cached facts stay encoded
/// until the link's closure of names says whether it can use them
/// ([`decode_used`]).
struct Pending<'a> {
    /// How many files read of the rest of the project come before it.
    at: usize,
    entry: &'a Entry,
    facts: crate::project::cache::Blob,
}

/// The files of the project root that the paths given do not cover
/// (`all`, from [`list_rest_of_project`]): read for their summaries and
/// key uses, never reported. Cached facts without ops of their own come
/// back encoded, in order among the others ([`Pending`]).
fn read_rest_of_project<'a>(
    all: &'a [Entry],
    entries: &[Entry],
    settings: &Settings,
    threads: usize,
    cache: Cache,
) -> (Vec<Phase1>, Vec<Pending<'a>>) {
    let Some(root) = settings.project_root.as_deref() else {
        return (Vec::new(), Vec::new());
    };
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let given: std::collections::HashSet<PathBuf> =
        entries.iter().map(|e| canon(e.path())).collect();
    // only a file of the same name can be one of them
    let given_names: std::collections::HashSet<&std::ffi::OsStr> =
        given.iter().filter_map(|p| p.file_name()).collect();
    // the walk's paths start with the root: one canonical root, not one
    // `realpath` per file of the project
    let canon_root = canon(root);
    let not_given = |e: &Entry| {
        // below the root by its bytes (no part-by-part strip) and its name
        // is none of theirs
        if below_by_bytes(e.path(), root)
            && file_name_by_bytes(e.path()).is_some_and(|n| !given_names.contains(n))
        {
            return true;
        }
        match e.path().strip_prefix(root) {
            Ok(rel) => {
                !(rel.file_name().is_none_or(|n| given_names.contains(n))
                    && given.contains(&canon_root.join(rel)))
            }
            Err(_) => !given.contains(&canon(e.path())),
        }
    };
    // test code is left out as `read_entry` does, each folder judged once
    // per chunk (the listing comes folder by folder)
    let run = || {
        all.par_chunks(512)
            .flat_map_iter(|chunk| {
                let mut judge = words::TestPaths::default();
                chunk
                    .iter()
                    .filter(|e| not_given(e))
                    .filter(move |e| settings.tests || !judge.is_test_path(e.path()))
                    .filter_map(|e| {
                        let o = read_code_entry(e, settings, cache, false, false, true);
                        if let Some(facts) = o.lazy {
                            return Some(Err((e, facts)));
                        }
                        let mut p = *o.phase1?;
                        p.report = false;
                        let_text_go(&mut p);
                        Some(Ok(p))
                    })
            })
            .collect::<Vec<_>>()
    };
    let mut read = Vec::new();
    let mut pending = Vec::new();
    for r in in_pool(threads, run) {
        match r {
            Ok(p) => read.push(p),
            Err((entry, facts)) => pending.push(Pending {
                at: read.len(),
                entry,
                facts,
            }),
        }
    }
    (read, pending)
}

/// Decodes the [`Pending`] files the link can use and puts them in their
/// places among the files of the rest of the project (`files[rest..]`,
/// before the callers `read_callers` added at `callers`): those calling a
/// name of the closure of `project::calls::relevant`, by name hashes
/// (`project::calls::relevant_hashes`). The others have no ops and no call
/// that the link, the key index or the failure-path analysis can use:
/// leaving them out changes nothing they compute, and their facts are
/// never decoded.
fn decode_used(
    files: Vec<Phase1>,
    rest: usize,
    callers: usize,
    pending: Vec<Pending>,
    settings: &Settings,
    threads: usize,
    cache: Cache,
) -> Vec<Phase1> {
    if pending.is_empty() {
        return files;
    }
    let uses: Vec<crate::project::cache::Uses> = pending
        .iter()
        .filter_map(|p| crate::project::cache::uses(&p.facts))
        .collect();
    let used = crate::project::calls::relevant_hashes(
        files.iter().map(|f| (&f.facts, f.call_names())),
        &uses,
    );
    drop(uses);
    let decode = |p: &Pending| -> Option<Phase1> {
        let wanted = crate::project::cache::uses(&p.facts)
            .is_none_or(|u| u.pairs().any(|(callee, _)| used.contains(&callee)));
        if !wanted {
            return None;
        }
        let e = p.entry;
        let mut p = match crate::project::cache::decode_shared(&p.facts) {
            Some((facts, packed)) => {
                let mut p = Phase1::new(
                    e.display.clone(),
                    e.path().to_path_buf(),
                    String::new(),
                    false,
                    facts,
                );
                p.packed = packed;
                p
            }
            // (cannot be: read it as a changed file would be)
            None => *read_code_entry(e, settings, cache, false, false, false).phase1?,
        };
        p.report = false;
        let_text_go(&mut p);
        Some(p)
    };
    let got: Vec<(usize, Option<Phase1>)> = in_pool(threads, || {
        pending.par_iter().map(|p| (p.at, decode(p))).collect()
    });
    let mut out = Vec::with_capacity(files.len() + got.len());
    let mut files = files.into_iter();
    out.extend(files.by_ref().take(rest));
    let mut got = got.into_iter().peekable();
    for (i, f) in files.by_ref().take(callers - rest).enumerate() {
        while let Some((_, p)) = got.next_if(|(at, _)| *at <= i) {
            out.extend(p);
        }
        out.push(f);
    }
    out.extend(got.flat_map(|(_, p)| p));
    out.extend(files);
    out
}

/// Checks every file under `paths`.
pub fn check_paths(paths: &[PathBuf], settings: &Settings) -> Report {
    let start = Instant::now();
    let threads = worker_threads(settings);
    let mut phases = Phases::from_env(start);
    let (entries, walk_errors) = walk::collect_excluding(paths, threads, settings.exclude.as_ref());
    phases.mark("walk of the paths given");
    // the cache's shards and the project's folder listing are read side
    // by side (each is partly serial decoding)
    let (cache, rest) = rayon::join(
        || {
            settings
                .project_root
                .as_deref()
                .filter(|_| settings.cache)
                .map(|root| {
                    let cache = open_cache(root, settings);
                    cache.expect(entries.iter().map(|e| e.path()));
                    cache
                })
        },
        || list_rest_of_project(paths, settings, threads),
    );
    phases.mark("cache opened, walk of the project root");
    let run = || {
        entries
            .par_iter()
            .map(|e| {
                let mut o = read_entry(e, settings, cache.as_ref(), true, !link_off());
                if let Some(p) = o.phase1.as_mut() {
                    let_text_go(p);
                }
                o
            })
            .collect::<Vec<_>>()
    };
    let outcomes = in_pool(threads, run);
    phases.mark("phase one of the paths given");
    let mut report = Report {
        files_scanned: entries.len(),
        errors: walk_errors,
        ..Report::default()
    };
    // (sized first: grown by doubling, both lists took 5 MB of fresh pages
    // at the peak of a warm run while the outcomes were freed)
    let mut files = Vec::with_capacity(outcomes.iter().filter(|o| o.phase1.is_some()).count());
    let mut pending = Vec::new();
    let mut rejected: Vec<(&Entry, Option<prefilter::CallWords>)> =
        Vec::with_capacity(outcomes.iter().filter(|o| o.rejected).count());
    for (i, o) in outcomes.into_iter().enumerate() {
        if let Some(said) = o.said {
            let Said {
                error,
                notes,
                skipped,
            } = *said;
            report.errors.extend(error);
            if notes
                .iter()
                .any(|(_, n)| n == crate::minified::REDUCED_NOTE)
            {
                report.minified_reduced += 1;
            }
            report.notes.extend(notes);
            if let Some(skipped) = skipped {
                report.count_skipped(skipped.generated);
                report
                    .notes
                    .push((entries[i].display.clone(), skipped.note));
            }
        }
        files.extend(o.phase1.map(|p| *p));
        if o.rejected {
            rejected.push((&entries[i], o.call_words));
        }
    }
    // (the outcomes of every file walked, freed on both workers' heaps:
    // handed back before the call-name scan reads and parses more)
    release_freed_memory();
    let rest_at = files.len();
    if let Some(all) = rest.as_deref() {
        let (read, lazy) = read_rest_of_project(all, &entries, settings, threads, cache.as_ref());
        files.extend(read);
        pending = lazy;
    }
    phases.mark("rest of the project");
    let callers_at = files.len();
    if !link_off() {
        let (callers, skipped) = read_callers(&rejected, &files, settings, threads, cache.as_ref());
        for (path, skipped) in skipped {
            report.count_skipped(skipped.generated);
            report.notes.push((path, skipped.note));
        }
        // (a file of the paths given, read for its calls: a large bundle's
        // reduced mode is said as for one the prefilter let through)
        for p in &callers {
            if p.facts
                .notes
                .iter()
                .any(|n| n == crate::minified::REDUCED_NOTE)
            {
                report.minified_reduced += 1;
                let note = crate::minified::REDUCED_NOTE.to_string();
                report.notes.push((p.display.clone(), note));
            }
        }
        files.extend(callers.into_iter().map(|mut p| {
            let_text_go(&mut p);
            p
        }));
        let consts = read_const_files(&rejected, &files, settings, threads);
        files.extend(consts.into_iter().map(|mut p| {
            let_text_go(&mut p);
            p
        }));
    }
    phases.mark("call-name scan");
    let files = decode_used(
        files,
        rest_at,
        callers_at,
        pending,
        settings,
        threads,
        cache.as_ref(),
    );
    // the rejected files' call words are not needed by the link, nor is
    // the walk's list (each file read keeps its own paths)
    drop(rejected);
    in_pool(threads, || {
        // let go on all workers (an allocation per file walked)
        entries.into_par_iter().for_each(drop);
        if let Some(all) = rest {
            all.into_par_iter().for_each(drop);
        }
    });
    phases.mark("files the link uses decoded");
    if let (Some(c), Some(root)) = (cache, settings.project_root.as_deref()) {
        c.save(crate::project::root::covered_by(root, paths));
    }
    phases.mark("cache saved");
    let mut files = files;
    unpack_calls(&mut files, threads);
    // (the packed calls just freed, on the heaps of the workers that
    // unpacked them: handed back before the link's peak)
    release_freed_memory();
    phases.mark("calls the link can use unpacked");
    for (f, findings) in link_and_check(files, settings, threads) {
        if f.changed {
            report.errors.push(FileError {
                path: f.display.clone(),
                message: "changed while it was checked; run again".to_string(),
            });
        }
        if !findings.is_empty() {
            report.sources.insert(f.display, Arc::from(f.src));
        }
        // (moved in whole when it is the first: extended, the list of a
        // file of 12,000 findings stood twice, 3 MB each)
        if report.findings.is_empty() {
            report.findings = findings;
        } else {
            report.findings.extend(findings);
        }
    }
    phases.mark("link and rules");
    report.sort();
    report.duration_ms = start.elapsed().as_millis() as u64;
    report
}

/// `LOCKLINT_NO_LINK=1` (benchmarks only, see bench/run.sh): no call-name
/// scan, no link and no reading of the rest of the project (for a run of
/// named files), each file alone as before the project pass, to
/// measure what the project pass costs. Not a user option: findings that
/// need the project are missing.
fn link_off() -> bool {
    static OFF: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OFF.get_or_init(|| std::env::var_os("LOCKLINT_NO_LINK").is_some_and(|v| v == "1"))
}

/// The resident set size now and its peak so far (`VmRSS`, `VmHWM` of
/// /proc/self/status; empty where there is none), and the bytes the
/// allocator has handed out and not taken back (glibc's `mallinfo2`), for
/// `LOCKLINT_PHASES=1`: RSS far above the heap is memory freed but kept.
fn rss_now() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_string())
    };
    let mut out = String::new();
    if let (Some(rss), Some(hwm)) = (field("VmRSS:"), field("VmHWM:")) {
        out = format!("RSS {rss} (peak {hwm})");
    }
    if let Some(heap) = heap_in_use() {
        out.push_str(&format!(", heap {} kB", heap / 1024));
    }
    out
}

/// The bytes in use on the allocator's heaps and in its own mappings
/// (glibc only; `mallinfo`, whose counters are `int`s, as `mallinfo2`
/// needs glibc 2.33: right below 2 GiB).
fn heap_in_use() -> Option<usize> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use std::ffi::c_int;
        /// glibc's `struct mallinfo` (all `int`).
        #[repr(C)]
        struct MallInfo {
            arena: c_int,
            ordblks: c_int,
            smblks: c_int,
            hblks: c_int,
            hblkhd: c_int,
            usmblks: c_int,
            fsmblks: c_int,
            uordblks: c_int,
            fordblks: c_int,
            keepcost: c_int,
        }
        extern "C" {
            fn mallinfo() -> MallInfo;
        }
        // SAFETY: mallinfo takes nothing and returns a plain struct of
        // counters.
        let m = unsafe { mallinfo() };
        Some(m.uordblks as u32 as usize + m.hblkhd as u32 as usize)
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        None
    }
}

/// `LOCKLINT_PHASES=1` (benchmarks, see bench/run.sh): the wall time of each
/// stage of a run on stderr, the CPU time of all threads in it, and the
/// resident set size at its end.
struct Phases {
    last: Option<Instant>,
    /// The process's CPU time at the last mark.
    cpu: Option<std::time::Duration>,
}

/// The CPU time of the whole process so far, all threads (Linux).
fn process_cpu() -> Option<std::time::Duration> {
    #[cfg(target_os = "linux")]
    {
        #[repr(C)]
        struct Timespec {
            sec: i64,
            nsec: i64,
        }
        extern "C" {
            fn clock_gettime(clock: std::ffi::c_int, tp: *mut Timespec) -> std::ffi::c_int;
        }
        /// `CLOCK_PROCESS_CPUTIME_ID`
        const PROCESS_CPU: std::ffi::c_int = 2;
        let mut t = Timespec { sec: 0, nsec: 0 };
        // SAFETY: clock_gettime writes one timespec (two 64-bit fields on
        // the 64-bit Linux targets) to the pointer it is given.
        let ok =
            cfg!(target_pointer_width = "64") && unsafe { clock_gettime(PROCESS_CPU, &mut t) } == 0;
        ok.then(|| std::time::Duration::new(t.sec as u64, t.nsec as u32))
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

impl Phases {
    fn from_env(start: Instant) -> Phases {
        let on = std::env::var_os("LOCKLINT_PHASES").is_some_and(|v| v == "1");
        Phases {
            last: on.then_some(start),
            cpu: process_cpu().filter(|_| on),
        }
    }

    fn mark(&mut self, what: &str) {
        if let Some(last) = self.last {
            let now = Instant::now();
            let cpu = process_cpu();
            // (the CPU time all threads spent in the stage: against the
            // wall time, how much of it ran side by side)
            let spent = cpu
                .zip(self.cpu)
                .map(|(c, l)| format!(" (CPU {:.1} ms)", (c.saturating_sub(l)).as_secs_f64() * 1e3))
                .unwrap_or_default();
            eprintln!(
                "locklint phase: {what}: {:.1} ms{spent}, {}",
                (now - last).as_secs_f64() * 1e3,
                rss_now()
            );
            self.last = Some(now);
            self.cpu = cpu;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_by_bytes_are_the_paths_own() {
        for p in [
            "a/b.py", "b.py", "/b.py", "a//b.py", "a/b/", "a/b/.", "a/..", "..", ".", "", "/",
            "./b.rs", "a/.b",
        ] {
            let p = Path::new(p);
            assert_eq!(file_name_by_bytes(p), p.file_name(), "{p:?}");
        }
    }
}
