//! Decides from the raw bytes of a file, before any decoding or parsing,
//! whether it can hold a finding at all. Most files of a repository never
//! talk to Redis: they are rejected here after one pass over their bytes.
//!
//! The test is derived from what the rules need (see `rules/`): every finding
//! needs
//! - an acquire (LL001, LL003, LL004, LL008, LL009 — and an acquire's key is
//!   a lock key for LL002, LL005, LL007), spelled with a set-if-absent word:
//!   `NX`/`SETNX`/`SetNX`/`set_nx`/`.nx()`, `setIfAbsent`, Spring's
//!   `SetOption.SET_IF_ABSENT`/`SetOption.ifAbsent()`, `LockTake`,
//!   `When.NotExists`, a cache framework's `cache.add(`/`Cache::add(`; or
//! - a Lua script (LL006), whose text always contains `redis.call` or
//!   `redis.pcall` (`server.call` on Valkey); or
//! - a release or extend (`DEL`, `delete`, `unlink`, `expire`, `pexpire`, a
//!   plain `SET … PX`, Laravel's `forget`) of a key that reads like a lock, which needs a lock
//!   word (`lock`, `mutex`, `lease`, `semaphore`, a plural) somewhere in the
//!   file — unless the configuration adds lock-key patterns.
//!
//! A few spellings of a lock word or release word are the language's own
//! in-process lock or statement, never a Redis key or command, and count
//! for nothing when the file's language is known ([`Dialect`]): Java's and
//! Kotlin's `synchronized (lock)`, C#'s `lock (x)` statement, a monitor
//! declared `Object lock` / `object _lock`, Python's `with self._lock:`,
//! `self._lock = threading.Lock()` and its `del` statement.
//!
//! Words are matched case-insensitively and only as word parts (the way
//! [`crate::words::word_parts`] splits names): `del` matches `DEL`, `del(`,
//! `KeyDelete`, `delete_key` but not `model`, `delay` or `delta`; `lock`
//! matches `lockKey`, `LOCK_PREFIX`, `"lock:"` but not `block` or `clock`;
//! `nx` matches `SetNX`, `setnx`, `"NX"` but not `nginx` or `anxiety`.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};
use std::sync::OnceLock;

mod candidates;

/// The anchor words of the prefilter (case-insensitive). The benchmark gives
/// `rg -i -c` the same list (`bench/keywords.txt`).
pub const KEYWORDS: &[&str] = &[
    "nx",
    "setifabsent",
    "ifabsent",
    "if_absent",
    "setifpresent",
    "locktake",
    "lockextend",
    "lockrelease",
    "notexists",
    "redis.call",
    "redis.pcall",
    "server.call",
    "server.pcall",
    // A suppression comment: a stale one (its Redis call gone) is still reported as LL100.
    "locklint:",
    "del",
    "unlink",
    "expire",
    "lock",
    "mutex",
    "lease",
    "semaphore",
    "redlock",
    // A cache framework's set-if-absent (Django, Flask-Caching: `cache.add(`;
    // Laravel's facade and helper: `Cache::add(`, `cache()->add(`) and
    // Laravel's delete (`Cache::forget`).
    "cache.add(",
    "cache::add(",
    "cache()->add(",
    "forget",
];

/// Words that may spell a plain `SET` with a TTL (LL007 on a lock-named key);
/// only looked for in files that have a lock word but no release word.
const SET_WORDS: &[&str] = &["set"];

/// The language of a file as far as the prefilter reads it: the in-process
/// spellings of a lock word or release word it lets go
/// ([`in_process`]). [`Dialect::Other`] lets none go (any language).
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub enum Dialect {
    #[default]
    Other,
    /// Java, Kotlin: `synchronized (lock)`, `Object lock`.
    Jvm,
    /// C#: the `lock (x)` statement, `object _lock`.
    CSharp,
    /// `with self._lock:`, `_lock = threading.Lock()`, the `del` statement.
    Python,
    /// `sync.Mutex`, `lock sync.RWMutex`, `s.lock.Lock()`.
    Go,
}

impl Dialect {
    pub fn of(language: crate::facts::Language) -> Dialect {
        use crate::facts::Language;
        match language {
            Language::Java | Language::Kotlin => Dialect::Jvm,
            Language::CSharp => Dialect::CSharp,
            Language::Python => Dialect::Python,
            Language::Go => Dialect::Go,
            _ => Dialect::Other,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    /// Enough on its own: an acquire or a script.
    Strong,
    /// A release or an extend.
    Release,
    /// A lock word.
    Lock,
    /// Only an anchor of the call-word signature ([`CALL_ANCHORS`]).
    Anchor,
}

/// The word-part rule a raw match of a word must pass ([`accept`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Rule {
    Nx,
    Del,
    Expire,
    /// A whole word part (`unlink`, `forget`).
    Whole,
    /// `.ifAbsent` (a member).
    IfAbsent,
    /// `SET_IF_ABSENT`.
    SetIfAbsent,
    /// A lock word, its plurals and `…key`, not an in-process lock.
    LockWord,
    /// Distinctive enough as it is.
    Any,
}

fn rule_of(word: &str) -> Rule {
    match word {
        "nx" => Rule::Nx,
        "del" => Rule::Del,
        "expire" => Rule::Expire,
        "unlink" | "forget" => Rule::Whole,
        "ifabsent" => Rule::IfAbsent,
        "if_absent" => Rule::SetIfAbsent,
        "lock" | "mutex" | "lease" | "semaphore" | "redlock" => Rule::LockWord,
        _ => Rule::Any,
    }
}

fn class_of(pattern: usize) -> Class {
    if pattern >= KEYWORDS.len() {
        return Class::Anchor;
    }
    match KEYWORDS[pattern] {
        "del" | "unlink" | "expire" | "setifpresent" | "forget" => Class::Release,
        "lock" | "mutex" | "lease" | "semaphore" | "redlock" => Class::Lock,
        _ => Class::Strong,
    }
}

/// What a match of one word (of [`KEYWORDS`] and then [`CALL_ANCHORS`])
/// means, worked out once: a match is then handled without comparing
/// strings.
#[derive(Clone, Copy)]
struct WordInfo {
    class: Class,
    rule: Rule,
    /// It anchors call words ([`anchors_calls`]) and is made of identifier
    /// bytes only (an anchor with another byte inside can never stand in a
    /// call word: [`note_call_word`] would remember nothing).
    signs: bool,
}

fn word_infos() -> &'static [WordInfo] {
    static T: OnceLock<Vec<WordInfo>> = OnceLock::new();
    T.get_or_init(|| {
        KEYWORDS
            .iter()
            .chain(CALL_ANCHORS)
            .enumerate()
            .map(|(i, w)| WordInfo {
                class: class_of(i),
                rule: if i < KEYWORDS.len() {
                    rule_of(w)
                } else {
                    Rule::Any
                },
                signs: anchors_calls()[i] && w.bytes().all(is_ident_byte),
            })
            .collect()
    })
}

fn build(words: &[&str]) -> AhoCorasick {
    AhoCorasickBuilder::new()
        .ascii_case_insensitive(true)
        .match_kind(MatchKind::Standard)
        .kind(Some(AhoCorasickKind::DFA))
        .build(words)
        .expect("static keyword list builds")
}

/// Columns per state of [`Dfa`]: a power of two, so that a state
/// (premultiplied by it) or'ed with a column is an index of the table.
const STRIDE: usize = 32;

/// A state: the first of its row in [`Dfa`]'s table (its index among the
/// states times [`STRIDE`]) in the low 16 bits ([`ROW`]), [`MATCH`] when it
/// ends a word, and its depth (the length of its string) from this bit on.
/// The table holds the rows of the states only: a few kB, where a table
/// indexed by every `u16` took 128 KiB.
const DEPTH_SHIFT: u32 = 17;

/// The bit of a state set when the state ends at least one word.
const MATCH: u32 = 1 << 16;

/// The row bits of a state.
const ROW: u32 = 0xffff;

/// A dense Aho-Corasick DFA over ASCII-case-folded bytes that reports every
/// occurrence of every word (overlapping), as `find_overlapping_iter` of the
/// `aho-corasick` crate does, with a tighter loop: per byte a class load, an
/// `or` and a table load, and one bit test (a state holds its depth and a
/// match bit beside its row). The prefilter's scan does not walk it: it
/// tests the candidates of a SIMD search ([`candidates`]) against the
/// words ([`Dfa::each_match`]); the walk over every byte
/// ([`Dfa::each_match_full`]) reads names ([`has_call_anchor`]) and is the
/// tests' oracle.
struct Dfa {
    /// Byte → column of the transition table (0: a byte no word holds; an
    /// upper-case letter shares its lower-case letter's column).
    class: [u8; 256],
    /// `row | class` → next state (see [`DEPTH_SHIFT`]).
    next: Box<[u32]>,
    /// For match state `s`: its words are `words[ends[k]..ends[k + 1]]`,
    /// `k = out[row / STRIDE]`.
    out: Box<[u16]>,
    ends: Vec<u32>,
    words: Vec<u16>,
    /// Length of each word.
    lens: Vec<usize>,
    /// Where the words may start.
    finder: candidates::Finder,
    /// Which of them start there.
    verifier: candidates::Verifier,
}

impl Dfa {
    fn new(words: &[&str]) -> Dfa {
        const NONE: u32 = u32::MAX;
        let mut class = [0u8; 256];
        let mut columns = 1usize;
        for w in words {
            for &b in w.as_bytes() {
                let b = b.to_ascii_lowercase();
                if class[b as usize] == 0 {
                    class[b as usize] = u8::try_from(columns).expect("fewer than 256 columns");
                    class[b.to_ascii_uppercase() as usize] = class[b as usize];
                    columns += 1;
                }
            }
        }
        assert!(
            columns <= STRIDE,
            "the words hold at most {STRIDE} distinct bytes"
        );
        let stride = STRIDE;
        // The trie: `goto[node * stride + column]`, its words per node.
        let mut goto = vec![NONE; stride];
        let mut out: Vec<Vec<u16>> = vec![Vec::new()];
        let mut node_depth = vec![0u8];
        for (id, w) in words.iter().enumerate() {
            let mut node = 0usize;
            for &b in w.as_bytes() {
                let c = class[b as usize] as usize;
                if goto[node * stride + c] == NONE {
                    goto[node * stride + c] = out.len() as u32;
                    goto.extend(std::iter::repeat_n(NONE, stride));
                    out.push(Vec::new());
                    node_depth.push(node_depth[node] + 1);
                }
                node = goto[node * stride + c] as usize;
            }
            out[node].push(u16::try_from(id).expect("fewer than 65536 words"));
        }
        // Failure links breadth first, turning the trie into a full DFA.
        let count = out.len();
        assert!(
            count * stride <= ROW as usize + 1,
            "at most {} states",
            (ROW as usize + 1) / stride
        );
        let mut delta = vec![0u32; count * stride];
        let mut fail = vec![0usize; count];
        let mut queue = std::collections::VecDeque::new();
        for c in 0..stride {
            let v = goto[c];
            if v != NONE {
                delta[c] = v;
                queue.push_back(v as usize);
            }
        }
        while let Some(u) = queue.pop_front() {
            let inherited = out[fail[u]].clone();
            out[u].extend(inherited);
            for c in 0..stride {
                let v = goto[u * stride + c];
                let via_fail = delta[fail[u] * stride + c];
                if v == NONE {
                    delta[u * stride + c] = via_fail;
                } else {
                    fail[v as usize] = via_fail as usize;
                    delta[u * stride + c] = v;
                    queue.push_back(v as usize);
                }
            }
        }
        // A state's row is its number in the trie; beside it, its depth
        // and whether it ends a word (see `DEPTH_SHIFT`, `MATCH`).
        let state_of = |u: usize| {
            let d = u32::from(node_depth[u]);
            assert!(d < 1 << (32 - DEPTH_SHIFT), "words of at most 32767 bytes");
            (u * stride) as u32 | d << DEPTH_SHIFT | if out[u].is_empty() { 0 } else { MATCH }
        };
        let mut next = vec![0u32; count * stride].into_boxed_slice();
        let mut ends = vec![0u32];
        let mut list = Vec::new();
        let mut out_of = vec![0u16; count].into_boxed_slice();
        for u in 0..count {
            for (c, &v) in delta[u * stride..(u + 1) * stride].iter().enumerate() {
                next[u * stride + c] = state_of(v as usize);
            }
            if !out[u].is_empty() {
                out_of[u] = u16::try_from(ends.len() - 1).expect("few states");
                list.extend_from_slice(&out[u]);
                ends.push(list.len() as u32);
            }
        }
        Dfa {
            class,
            next,
            out: out_of,
            ends,
            words: list,
            lens: words.iter().map(|w| w.len()).collect(),
            finder: candidates::Finder::new(words),
            verifier: candidates::Verifier::new(words),
        }
    }

    /// Calls `f(word, start, end)` for every occurrence of every word, by
    /// start (those starting together in the order of the words); stops
    /// and answers true as soon as `f` does. The same occurrences as
    /// [`Dfa::each_match_full`], in another order.
    ///
    /// Every word starts at a candidate of the SIMD search
    /// ([`candidates::Finder`]); each candidate is tested against the
    /// words of its first byte ([`candidates::Verifier`]).
    #[inline]
    fn each_match(&self, bytes: &[u8], f: impl FnMut(usize, usize, usize) -> bool) -> bool {
        #[cfg(target_arch = "x86_64")]
        if self.finder.kernel() == candidates::Kernel::Avx2 {
            // SAFETY: the processor runs AVX2
            return unsafe { self.each_match_avx2(bytes, f) };
        }
        self.each_match_by(bytes, |from| self.finder.next(bytes, from), f)
    }

    /// [`Dfa::each_match`] compiled for AVX2, the block search inlined
    /// into the loop over the candidates.
    ///
    /// # Safety
    /// The processor runs AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn each_match_avx2(
        &self,
        bytes: &[u8],
        f: impl FnMut(usize, usize, usize) -> bool,
    ) -> bool {
        self.each_match_by(
            bytes,
            |from| self.finder.next_with(candidates::Kernel::Avx2, bytes, from),
            f,
        )
    }

    /// [`Dfa::each_match`] with the candidate blocks from `next` (the
    /// tests give each SIMD kernel).
    #[inline(always)]
    fn each_match_by(
        &self,
        bytes: &[u8],
        mut next: impl FnMut(usize) -> Option<(usize, u32)>,
        mut f: impl FnMut(usize, usize, usize) -> bool,
    ) -> bool {
        let mut from = 0usize;
        while let Some((block, mut mask)) = next(from) {
            while mask != 0 {
                let c = block + mask.trailing_zeros() as usize;
                mask &= mask - 1;
                if self.verifier.each_at(bytes, c, &mut f) {
                    return true;
                }
            }
            from = block + 32;
        }
        false
    }

    /// Calls `f(word, start, end)` for every occurrence of every word, by
    /// end; stops and answers true as soon as `f` does. The walk over
    /// every byte, as it was before the candidate search: for short texts
    /// ([`has_call_anchor`]), and the tests' oracle of [`Dfa::each_match`].
    fn each_match_full(
        &self,
        bytes: &[u8],
        mut f: impl FnMut(usize, usize, usize) -> bool,
    ) -> bool {
        // The hot loop holds nothing but the walk: the matches (one in
        // about 70 bytes of code) are handled out of line.
        let next: &[u32] = &self.next;
        let class = &self.class;
        let mut state = 0u32;
        // eight bytes a round: the loop's own count and test once per eight
        let mut rounds = bytes.chunks_exact(8);
        let mut end = 0;
        for q in rounds.by_ref() {
            for (k, &b) in q.iter().enumerate() {
                // a row is a multiple of STRIDE and a class is below it:
                // `|` adds them
                state = next[(state & ROW | u32::from(class[usize::from(b)])) as usize];
                if state & MATCH != 0 && self.report(state, end + k + 1, &mut f) {
                    return true;
                }
            }
            end += 8;
        }
        for (k, &b) in rounds.remainder().iter().enumerate() {
            state = next[(state & ROW | u32::from(class[usize::from(b)])) as usize];
            if state & MATCH != 0 && self.report(state, end + k + 1, &mut f) {
                return true;
            }
        }
        false
    }

    /// The words of match state `state` ending at `end`, to `f`.
    #[inline(never)]
    fn report(
        &self,
        state: u32,
        end: usize,
        f: &mut impl FnMut(usize, usize, usize) -> bool,
    ) -> bool {
        let k = usize::from(self.out[(state & ROW) as usize / STRIDE]);
        let (from, to) = (self.ends[k] as usize, self.ends[k + 1] as usize);
        self.words[from..to].iter().any(|&w| {
            let w = w as usize;
            f(w, end - self.lens[w], end)
        })
    }
}

fn dfa() -> &'static Dfa {
    static D: OnceLock<Dfa> = OnceLock::new();
    D.get_or_init(|| Dfa::new(KEYWORDS))
}

/// The keywords and then the call anchors, for a scan that also gathers
/// the call-word signature.
fn dfa_with_anchors() -> &'static Dfa {
    static D: OnceLock<Dfa> = OnceLock::new();
    D.get_or_init(|| {
        let words: Vec<&str> = KEYWORDS.iter().chain(CALL_ANCHORS).copied().collect();
        Dfa::new(&words)
    })
}

/// The same words in the `aho-corasick` crate's automaton: the tests'
/// oracle of [`dfa_with_anchors`] and [`has_call_anchor`].
#[cfg(test)]
fn automaton_with_anchors() -> &'static AhoCorasick {
    static AC: OnceLock<AhoCorasick> = OnceLock::new();
    AC.get_or_init(|| {
        let words: Vec<&str> = KEYWORDS.iter().chain(CALL_ANCHORS).copied().collect();
        build(&words)
    })
}

/// Words (case-insensitive, anywhere in a name) of which the names the
/// project pass scans for (`project::scan`, names that say what they do to
/// a lock or a Redis key) nearly always hold one. While the prefilter reads
/// a file, every identifier holding one of them that stands before a call
/// ([`stands_before_call`]) is remembered ([`call_word_hash`]), so the call-name
/// scan can tell that a rejected file calls none of the names without
/// reading it again. A name without an anchor makes the scan read every
/// file, as before.
pub const CALL_ANCHORS: &[&str] = &[
    "acquire",
    "release",
    "claim",
    "obtain",
    "grab",
    "free",
    "drop",
    "exit",
    "leave",
    "relinquish",
    "absent",
    "present",
    "setex",
    "getset",
    "getdel",
    "haskey",
];

/// Every word of `KEYWORDS` and `CALL_ANCHORS` that a name can hold counts as
/// an anchor of it: `name` holds one (ASCII case-insensitive).
///
/// Through [`dfa_with_anchors`] walked over every byte (a name is short:
/// no candidate search); the crate's automaton of the same words, built
/// for this alone, took 122 kB of a run's heap.
pub fn has_call_anchor(name: &[u8]) -> bool {
    dfa_with_anchors().each_match_full(name, |w, _, _| anchors_calls()[w])
}

/// The keywords that also anchor call words (whatever their class).
const ANCHOR_KEYWORDS: &[&str] = &[
    "nx",
    "setifabsent",
    "setifpresent",
    "unlink",
    "expire",
    "lock",
    "mutex",
    "lease",
    "semaphore",
];

/// A byte of an identifier, as the call-name scan sees it.
#[inline]
pub fn is_ident_byte(b: u8) -> bool {
    IDENT[usize::from(b)]
}

/// [`is_ident_byte`] as a table: one load per byte on the hot paths.
static IDENT: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = c.is_ascii_alphanumeric() || c == b'_' || c == b'$';
        b += 1;
    }
    t
};

/// The hash of an identifier in a call-word signature.
pub fn call_word_hash(word: &[u8]) -> u32 {
    use std::hash::Hasher;
    let mut h = rustc_hash::FxHasher::default();
    h.write(word);
    let h = h.finish();
    (h ^ (h >> 32)) as u32
}

/// For each word of [`dfa_with_anchors`]: it anchors call words.
fn anchors_calls() -> &'static [bool] {
    static T: OnceLock<Vec<bool>> = OnceLock::new();
    T.get_or_init(|| {
        KEYWORDS
            .iter()
            .map(|k| ANCHOR_KEYWORDS.contains(k))
            .chain(CALL_ANCHORS.iter().map(|_| true))
            .collect()
    })
}

/// What the call-name scan (`project::scan`) knows of a file the prefilter
/// rejected without reading it again: the exact hashes of its call words
/// that hold a call anchor ([`may_match_signed`]), and a Bloom filter over
/// all its call words — every identifier of at most [`MAX_CALL_WORD`] bytes,
/// not starting with a digit, that stands before a call
/// ([`stands_before_call`]) — so that a name without an anchor (`handler`,
/// `getUsage`) no longer makes the scan read every rejected file. A filter answers "maybe" for a
/// word it holds and, for one it does not, "no" but for about one word in
/// two thousand ([`BLOOM_BITS_PER_WORD`], [`BLOOM_PROBES`]): a false
/// "maybe" only costs a read.
///
/// One allocation: `[number of anchored hashes, anchored hashes…, filter
/// bits…]`. A file's signature as the cache keeps it is its anchored
/// hashes alone ([`CallWords::anchored_only`]): the filter unknown, it
/// answers "maybe" for every word.
pub struct CallWords(Box<[u32]>, Filter);

/// Whether a [`CallWords`] holds its filter.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Filter {
    Held,
    Unknown,
}

/// Filter bits per distinct call word of a file.
const BLOOM_BITS_PER_WORD: usize = 16;
/// Bits set (and tested) per word.
const BLOOM_PROBES: u32 = 8;

thread_local! {
    /// The keys of a file's call words, and the table that keeps them once each.
    static BLOOM_SCRATCH: std::cell::RefCell<(Vec<u64>, Vec<u64>)> =
        const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

/// Keeps the first of each key of `keys`, in order: an open-addressing set
/// over `table` (linear, where a sort was n log n and most of the work of
/// a rejected file's signature).
fn dedup_keys(keys: &mut Vec<u64>, table: &mut Vec<u64>) {
    let slots = (keys.len() * 2).next_power_of_two().max(16);
    let shift = 64 - slots.trailing_zeros();
    table.clear();
    table.resize(slots, 0);
    // (0 marks an empty slot: the key 0 is kept apart)
    let mut zero = false;
    let mut n = 0;
    for i in 0..keys.len() {
        let k = keys[i];
        let fresh = if k == 0 {
            !std::mem::replace(&mut zero, true)
        } else {
            let mut at = (k.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> shift) as usize;
            loop {
                match table[at] {
                    0 => {
                        table[at] = k;
                        break true;
                    }
                    t if t == k => break false,
                    _ => at = (at + 1) & (slots - 1),
                }
            }
        };
        if fresh {
            keys[n] = k;
            n += 1;
        }
    }
    keys.truncate(n);
}

impl CallWords {
    /// The call words of `bytes`, given the signature the prefilter left
    /// (`anchored`, sorted).
    pub fn of(bytes: &[u8], anchored: &[u32], spaced: bool) -> CallWords {
        BLOOM_SCRATCH.with(|scratch| {
            let (keys, table) = &mut *scratch.borrow_mut();
            keys.clear();
            each_call_word(bytes, spaced, |w| keys.push(bloom_key(w)));
            dedup_keys(keys, table);
            let bits = (keys.len() * BLOOM_BITS_PER_WORD).div_ceil(32) * 32;
            let mut out = vec![0u32; 1 + anchored.len() + bits / 32];
            out[0] = anchored.len() as u32;
            out[1..=anchored.len()].copy_from_slice(anchored);
            let filter = &mut out[1 + anchored.len()..];
            for &k in keys.iter() {
                for bit in probes(k, bits) {
                    filter[bit / 32] |= 1 << (bit % 32);
                }
            }
            if keys.capacity() > 1 << 16 {
                *keys = Vec::new();
            }
            if table.capacity() > 1 << 17 {
                *table = Vec::new();
            }
            CallWords(out.into_boxed_slice(), Filter::Held)
        })
    }

    /// The signature of a file known only by its anchored hashes (sorted,
    /// as [`CallWords::anchored`] gives them; no allocation when there are
    /// none): any other word it may call.
    pub fn anchored_only(anchored: Box<[u32]>) -> CallWords {
        CallWords(anchored, Filter::Unknown)
    }

    /// The sorted hashes of the call words holding an anchor
    /// ([`call_word_hash`]).
    pub fn anchored(&self) -> &[u32] {
        match self.1 {
            Filter::Held => &self.0[1..=self.0[0] as usize],
            Filter::Unknown => &self.0,
        }
    }

    /// The file may call a word of this [`bloom_key`]: false only when it
    /// holds no such call word.
    pub fn may_hold(&self, key: u64) -> bool {
        if self.1 == Filter::Unknown {
            return true;
        }
        let filter = &self.0[1 + self.0[0] as usize..];
        let bits = filter.len() * 32;
        bits > 0 && probes(key, bits).all(|bit| filter[bit / 32] & (1 << (bit % 32)) != 0)
    }
}

/// Whether an identifier ending right before `at` stands before a call:
/// `(` or `<` (`name<T>(`), right after it or after white space that
/// starts with a space (`name (x)`, `name <T>`); in a language with
/// paren-less calls (`spaced`: Ruby, `recv.name arg`) a space alone. A word
/// before a space in prose or code (`the handler is`, `return handler;`)
/// is none. The look-ahead reads at most [`MAX_CALL_GAP`] bytes of white
/// space: the prefilter asks once per anchor match, and the anchors
/// inside one identifier would otherwise each read the same long run.
pub fn stands_before_call(bytes: &[u8], at: usize, spaced: bool) -> bool {
    match bytes.get(at) {
        Some(b'(' | b'<') => true,
        Some(b' ') if spaced => true,
        Some(b' ') => bytes[at + 1..]
            .iter()
            .take(MAX_CALL_GAP)
            .find(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
            .is_some_and(|b| matches!(b, b'(' | b'<')),
        _ => false,
    }
}

/// The most white space after a name's first space that still lets a
/// `(` make it a call (a call written `name (x)`, or across a line break).
pub const MAX_CALL_GAP: usize = 256;

/// Calls `f` with each call word of `bytes` (see [`CallWords`]), in order,
/// repeats included. Branch-free over the bytes: 64 at a time become bit
/// masks ([`Masks`]), and only the ends of identifiers before a call are
/// visited — right before `(` or `<`, or before a space whose run of white
/// space ends at one ([`stands_before_call`]) — so that an identifier
/// before a plain space (`int total`, `return x`) costs nothing. A run of
/// white space that goes on into the next 64 bytes is left to
/// [`stands_before_call`] itself (its bound, [`MAX_CALL_GAP`], included).
pub fn each_call_word<'a>(bytes: &'a [u8], spaced: bool, f: impl FnMut(&'a [u8])) {
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx2") {
        // SAFETY: the processor runs AVX2
        return unsafe { each_call_word_avx2(bytes, spaced, f) };
    }
    call_words_by(bytes, spaced, f, class_masks_64);
}

/// [`each_call_word`] compiled for AVX2, its masks 32 bytes at a time.
///
/// # Safety
/// The processor runs AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn each_call_word_avx2<'a>(bytes: &'a [u8], spaced: bool, f: impl FnMut(&'a [u8])) {
    // SAFETY: the processor runs AVX2 (this function's own requirement)
    call_words_by(bytes, spaced, f, |chunk| unsafe {
        class_masks_64_avx2(chunk)
    });
}

/// [`each_call_word`] with the masks of 64 bytes from `masks` (the tests
/// give each kernel).
#[inline(always)]
fn call_words_by<'a>(
    bytes: &'a [u8],
    spaced: bool,
    mut f: impl FnMut(&'a [u8]),
    masks: impl Fn(&[u8; 64]) -> Masks,
) {
    let class_masks = |bytes: &[u8], at: usize| {
        let rest = &bytes[at..];
        if rest.len() >= 64 {
            masks(rest[..64].try_into().expect("64 bytes"))
        } else {
            let mut chunk = [0u8; 64];
            chunk[..rest.len()].copy_from_slice(rest);
            masks(&chunk)
        }
    };
    let chunks = bytes.len().div_ceil(64);
    let mut cur = class_masks(bytes, 0);
    // where the identifier running into the current chunk began
    let mut run_start = 0usize;
    let mut carry = false;
    for k in 0..chunks {
        let base = k * 64;
        let next = if k + 1 < chunks {
            class_masks(bytes, base + 64)
        } else {
            Masks::default()
        };
        // bit i: byte i + 1 (of this chunk, then the next one's first)
        let after = |mask: u64, next_first: u64| (mask >> 1) | ((next_first & 1) << 63);
        let (sure, maybe) = if spaced {
            // Ruby: a space alone may start a call's arguments
            (after(cur.paren | cur.space, next.paren | next.space), 0)
        } else {
            let paren_after = after(cur.paren, next.paren);
            // white bytes whose run ends right before `(` or `<`: the last
            // byte of each such run, filled back to the run's start
            let white = cur.white;
            let seeds = white & paren_after;
            // (most chunks have no such run: their three bit reversals,
            // a fifth of this pass, are skipped)
            let to_paren = if seeds == 0 {
                0
            } else {
                fill_back(white, seeds)
            };
            // the run that reaches this chunk's end and goes on: unknown here
            let open = if next.white & 1 == 1 {
                fill_back(white, white & (1 << 63))
            } else {
                0
            };
            (
                after(cur.paren | (cur.space & to_paren), next.paren),
                after(cur.space & open, next.space),
            )
        };
        let ident = cur.ident;
        let starts = ident & !((ident << 1) | u64::from(carry));
        // an identifier byte followed by a call ends a call word
        let mut ends = ident & (sure | maybe);
        while ends != 0 {
            let e = ends.trailing_zeros() as usize;
            let below = starts & (u64::MAX >> (63 - e));
            let s = if below != 0 {
                base + 63 - below.leading_zeros() as usize
            } else {
                run_start
            };
            let word = &bytes[s..base + e + 1];
            if word.len() <= MAX_CALL_WORD
                && !word[0].is_ascii_digit()
                && (sure >> e & 1 == 1 || stands_before_call(bytes, base + e + 1, false))
            {
                f(word);
            }
            ends &= ends - 1;
        }
        if starts != 0 {
            run_start = base + 63 - starts.leading_zeros() as usize;
        }
        carry = ident >> 63 == 1;
        cur = next;
    }
}

/// The bits of the runs of ones of `runs` from each of their first bit up
/// to a bit of `seeds` (a subset of `runs`, at most one per run: its
/// last bit that matters), as one addition on the bit-reversed masks.
#[inline]
fn fill_back(runs: u64, seeds: u64) -> u64 {
    let (r, s) = (runs.reverse_bits(), seeds.reverse_bits());
    // the carry of a seed runs through the rest of its run (reversed)
    (r.wrapping_add(s) ^ r).reverse_bits() & runs
}

/// Bytes of 64 (bit `i`: byte `i`) that a call word's search tells apart.
#[derive(Clone, Copy, Default)]
struct Masks {
    /// [`is_ident_byte`].
    ident: u64,
    /// `(` and `<`.
    paren: u64,
    /// ` `.
    space: u64,
    /// ` `, `\t`, `\r`, `\n`.
    white: u64,
}

/// The [`Masks`] of 64 bytes, with AVX2.
///
/// # Safety
/// The processor runs AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn class_masks_64_avx2(chunk: &[u8; 64]) -> Masks {
    use std::arch::x86_64::*;
    // `x - lo < n` unsigned as a signed comparison of `x + (128 - lo)`
    // with `n - 128`
    let within = |v: __m256i, lo: u8, n: u8| {
        _mm256_cmpgt_epi8(
            _mm256_set1_epi8(n.wrapping_sub(128) as i8),
            _mm256_add_epi8(v, _mm256_set1_epi8(128u8.wrapping_sub(lo) as i8)),
        )
    };
    let is = |v: __m256i, b: u8| _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b as i8));
    let bits = |m: __m256i, i: usize| u64::from(_mm256_movemask_epi8(m) as u32) << (i * 32);
    let mut m = Masks::default();
    for i in 0..2 {
        // SAFETY: a 32-byte load at offset 0 or 32 of a 64-byte array
        let v = unsafe { _mm256_loadu_si256(chunk.as_ptr().add(i * 32).cast()) };
        let lower = _mm256_or_si256(v, _mm256_set1_epi8(0x20));
        let id = _mm256_or_si256(
            _mm256_or_si256(within(lower, b'a', 26), within(v, b'0', 10)),
            _mm256_or_si256(is(v, b'_'), is(v, b'$')),
        );
        let space = is(v, b' ');
        // `\t`, `\n` and `\r` are 9, 10 and 13: 9..=13 but 11 and 12
        let controls =
            _mm256_andnot_si256(_mm256_or_si256(is(v, 11), is(v, 12)), within(v, b'\t', 5));
        m.ident |= bits(id, i);
        m.paren |= bits(_mm256_or_si256(is(v, b'('), is(v, b'<')), i);
        m.space |= bits(space, i);
        m.white |= bits(_mm256_or_si256(space, controls), i);
    }
    m
}

/// The [`Masks`] of 64 bytes, with SSE2.
#[cfg(target_arch = "x86_64")]
#[inline]
fn class_masks_64(chunk: &[u8; 64]) -> Masks {
    use std::arch::x86_64::*;
    // SAFETY: SSE2 is part of every x86_64 target; the loads read 16 bytes
    // at offsets 0, 16, 32 and 48 of a 64-byte array.
    unsafe {
        // `x - lo < n` unsigned as a signed comparison of `x + (128 - lo)`
        // with `n - 128`
        let within = |v: __m128i, lo: u8, n: u8| {
            _mm_cmplt_epi8(
                _mm_add_epi8(v, _mm_set1_epi8(128u8.wrapping_sub(lo) as i8)),
                _mm_set1_epi8(n.wrapping_sub(128) as i8),
            )
        };
        let is = |v: __m128i, b: u8| _mm_cmpeq_epi8(v, _mm_set1_epi8(b as i8));
        let bits = |m: __m128i, i: usize| u64::from(_mm_movemask_epi8(m) as u16) << (i * 16);
        let mut m = Masks::default();
        for i in 0..4 {
            let v = _mm_loadu_si128(chunk.as_ptr().add(i * 16).cast());
            let lower = _mm_or_si128(v, _mm_set1_epi8(0x20));
            let id = _mm_or_si128(
                _mm_or_si128(within(lower, b'a', 26), within(v, b'0', 10)),
                _mm_or_si128(is(v, b'_'), is(v, b'$')),
            );
            let space = is(v, b' ');
            // `\t`, `\n` and `\r` are 9, 10 and 13: 9..=13 but 11 and 12
            let controls =
                _mm_andnot_si128(_mm_or_si128(is(v, 11), is(v, 12)), within(v, b'\t', 5));
            m.ident |= bits(id, i);
            m.paren |= bits(_mm_or_si128(is(v, b'('), is(v, b'<')), i);
            m.space |= bits(space, i);
            m.white |= bits(_mm_or_si128(space, controls), i);
        }
        m
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn class_masks_64(chunk: &[u8; 64]) -> Masks {
    let mut m = Masks::default();
    for (i, &b) in chunk.iter().enumerate() {
        m.ident |= u64::from(IDENT[usize::from(b)]) << i;
        m.paren |= u64::from(matches!(b, b'(' | b'<')) << i;
        m.space |= u64::from(b == b' ') << i;
        m.white |= u64::from(matches!(b, b' ' | b'\t' | b'\r' | b'\n')) << i;
    }
    m
}

/// The key a word is looked up by in a [`CallWords`] filter.
pub fn bloom_key(word: &[u8]) -> u64 {
    use std::hash::Hasher;
    let mut h = rustc_hash::FxHasher::default();
    h.write(word);
    // a finaliser: Fx's low bits are weak, the probes use all of them
    let mut k = h.finish();
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^ (k >> 33)
}

/// The filter bits (below `bits`) of a key: double hashing.
fn probes(key: u64, bits: usize) -> impl Iterator<Item = usize> {
    let (a, b) = (key as u32, ((key >> 32) as u32) | 1);
    (0..BLOOM_PROBES).map(move |i| {
        let h = a.wrapping_add(i.wrapping_mul(b));
        ((u64::from(h) * bits as u64) >> 32) as usize
    })
}

/// Longest identifier a call-word signature holds: the work per anchor
/// match is bounded (a minified file's huge identifier full of `lock`s
/// stays linear); a name ending with a longer identifier makes the
/// call-name scan read every file (`project::scan`).
pub const MAX_CALL_WORD: usize = 128;

/// Remembers the identifier around an anchor match `start..end` when it
/// stands before a call ([`stands_before_call`]; `spaced`: in a language
/// with paren-less calls). The anchor is made of identifier bytes
/// ([`WordInfo::signs`]).
#[inline]
fn note_call_word(bytes: &[u8], start: usize, end: usize, spaced: bool, sig: &mut Vec<u32>) {
    // the end first: most words do not stand before a call's byte
    let ceiling = (start + MAX_CALL_WORD + 1).min(bytes.len());
    let mut e = end;
    while e < ceiling && is_ident_byte(bytes[e]) {
        e += 1;
    }
    // a word not followed by a call's byte (an identifier cut at the
    // ceiling is followed by an identifier byte)
    if !stands_before_call(bytes, e, spaced) {
        return;
    }
    let floor = end.saturating_sub(MAX_CALL_WORD + 1);
    let mut s = start;
    while s > floor && is_ident_byte(bytes[s - 1]) {
        s -= 1;
    }
    // one longer than the bound
    if (s == 0 || !is_ident_byte(bytes[s - 1])) && e - s <= MAX_CALL_WORD {
        sig.push(call_word_hash(&bytes[s..e]));
    }
}

fn set_automaton() -> &'static AhoCorasick {
    static AC: OnceLock<AhoCorasick> = OnceLock::new();
    AC.get_or_init(|| build(SET_WORDS))
}

#[inline]
fn at(bytes: &[u8], i: usize) -> u8 {
    bytes.get(i).copied().unwrap_or(b' ')
}

#[inline]
fn before(bytes: &[u8], start: usize) -> u8 {
    if start == 0 {
        b' '
    } else {
        bytes[start - 1]
    }
}

/// The match at `start` begins a word part: the byte before is not a letter,
/// or the case changes there (`keyDelete`, `SetNX`), or an upper-case run
/// ends there (`HTTPLock`).
#[inline]
fn starts_part(bytes: &[u8], start: usize) -> bool {
    let prev = before(bytes, start);
    let first = at(bytes, start);
    if !prev.is_ascii_alphabetic() {
        return true;
    }
    if prev.is_ascii_lowercase() && first.is_ascii_uppercase() {
        return true;
    }
    prev.is_ascii_uppercase()
        && first.is_ascii_uppercase()
        && at(bytes, start + 1).is_ascii_lowercase()
}

/// The word part ends at `end`: no lower-case letter follows (`DEL`,
/// `del(`, `deleteLock`, `expire_at`).
#[inline]
fn ends_part(bytes: &[u8], end: usize) -> bool {
    !at(bytes, end).is_ascii_lowercase()
}

/// Case-insensitive "the bytes at `i` start with `word`".
#[inline]
fn continues_with(bytes: &[u8], i: usize, word: &str) -> bool {
    bytes
        .get(i..i + word.len())
        .is_some_and(|s| s.eq_ignore_ascii_case(word.as_bytes()))
}

/// Checks one raw match of a word against the word-part rules of its keyword.
#[cfg(test)]
fn accept(bytes: &[u8], word: &str, start: usize, end: usize) -> bool {
    check(bytes, rule_of(word), start, end)
}

/// Checks one raw match of a word against a word-part rule.
fn check(bytes: &[u8], rule: Rule, start: usize, end: usize) -> bool {
    match rule {
        // `NX`, `SetNX`, `set_nx`, `.Nx()`, `setnx`, `MSETNX`, `HSETNX`.
        Rule::Nx => {
            let set_before = start >= 3 && bytes[start - 3..start].eq_ignore_ascii_case(b"set");
            (set_before || starts_part(bytes, start)) && !at(bytes, end).is_ascii_lowercase()
        }
        // `DEL`, `del(`, `Del`, `delete`, `KeyDelete`, `deleteAsync`, `DELEX`,
        // `DELIFEQ` — not `deleted`, `deleter`, `delegate`.
        Rule::Del => {
            starts_part(bytes, start)
                && (ends_part(bytes, end)
                    || ["ete", "ex", "ifeq"]
                        .iter()
                        .any(|w| continues_with(bytes, end, w) && ends_part(bytes, end + w.len())))
        }
        // `expire`, `PEXPIRE`, `pexpire`, `KeyExpire`, `expireat`, `pExpireAt`
        // — not `expired`, `expires`, `expiration`.
        Rule::Expire => {
            (starts_part(bytes, start)
                || (matches!(before(bytes, start), b'p' | b'P') && starts_part(bytes, start - 1)))
                && (ends_part(bytes, end)
                    || (continues_with(bytes, end, "at") && ends_part(bytes, end + 2)))
        }
        Rule::Whole => starts_part(bytes, start) && ends_part(bytes, end),
        // Spring's `SetOption.ifAbsent()`/`SetCondition.ifAbsent()` (a
        // member, not `putIfAbsent`) and `SetOption.SET_IF_ABSENT`.
        Rule::IfAbsent => before(bytes, start) == b'.' && ends_part(bytes, end),
        Rule::SetIfAbsent => {
            start >= 4
                && bytes[start - 4..start].eq_ignore_ascii_case(b"set_")
                && starts_part(bytes, start - 4)
                && !at(bytes, end).is_ascii_alphanumeric()
        }
        // Lock words as whole word parts, plurals and the `lockkey`/`mutexkey` spellings.
        Rule::LockWord => {
            if !starts_part(bytes, start) {
                return false;
            }
            // `m.lock()`, `mu.Lock()`, `Mutex<T>`, `RwLock<T>`: taking an
            // in-process lock or naming its type, never a Redis key.
            if continues_with(bytes, end, "()") || at(bytes, end) == b'<' {
                return false;
            }
            if !at(bytes, end).is_ascii_lowercase() {
                return true;
            }
            let rest = if continues_with(bytes, end, "es") {
                end + 2
            } else if continues_with(bytes, end, "s") {
                end + 1
            } else if continues_with(bytes, end, "key") {
                end + 3
            } else {
                return false;
            };
            !at(bytes, rest).is_ascii_lowercase()
        }
        // Distinctive enough as they are.
        Rule::Any => true,
    }
}

/// A match of a lock word or release word that its language spells for an
/// in-process lock or a statement of its own ([`Dialect`]): it counts for
/// nothing. Asked only of a match [`check`] accepted; reads a bounded
/// number of bytes around it (one identifier of at most [`MAX_CALL_WORD`]
/// bytes, a few dotted parts, a line's indentation).
fn in_process(bytes: &[u8], rule: Rule, start: usize, end: usize, dialect: Dialect) -> bool {
    match (rule, dialect) {
        (Rule::LockWord, Dialect::Jvm) => {
            operand_of(bytes, start, end, b"synchronized") || typed(bytes, start, end, b"Object")
        }
        (Rule::LockWord, Dialect::CSharp) => {
            lock_statement(bytes, start, end)
                || operand_of(bytes, start, end, b"lock")
                || typed(bytes, start, end, b"object")
        }
        (Rule::LockWord, Dialect::Python) => {
            with_target(bytes, start, end)
                || threading_target(bytes, start, end)
                || threading_type(bytes, start, end)
        }
        (Rule::Del, Dialect::Python) => del_statement(bytes, start, end),
        (Rule::LockWord, Dialect::Go) => {
            sync_type(bytes, start, end)
                || typed_sync(bytes, start, end)
                || sync_method_receiver(bytes, start, end)
        }
        _ => false,
    }
}

/// The identifier holding `start..end`: `(first byte, end)`, or `None`
/// when it is longer than [`MAX_CALL_WORD`].
fn ident_around(bytes: &[u8], start: usize, end: usize) -> Option<(usize, usize)> {
    let floor = start.saturating_sub(MAX_CALL_WORD);
    let ceiling = (end + MAX_CALL_WORD).min(bytes.len());
    let mut s = start;
    while s > floor && is_ident_byte(bytes[s - 1]) {
        s -= 1;
    }
    let mut e = end;
    while e < ceiling && is_ident_byte(bytes[e]) {
        e += 1;
    }
    let whole =
        (s == 0 || !is_ident_byte(bytes[s - 1])) && (e == bytes.len() || !is_ident_byte(bytes[e]));
    (whole && e - s <= MAX_CALL_WORD).then_some((s, e))
}

/// Where a dotted path ending with the identifier at `s` begins
/// (`this.lock`, `self._lock`, `Foo.LOCK`): at most four parts more.
fn path_start(bytes: &[u8], mut s: usize) -> usize {
    for _ in 0..4 {
        if s < 2 || bytes[s - 1] != b'.' || !is_ident_byte(bytes[s - 2]) {
            break;
        }
        let floor = (s - 1).saturating_sub(MAX_CALL_WORD);
        let mut p = s - 1;
        while p > floor && is_ident_byte(bytes[p - 1]) {
            p -= 1;
        }
        s = p;
    }
    s
}

/// `i` moved back over spaces and tabs (at most [`MAX_CALL_GAP`]).
fn blank_back(bytes: &[u8], mut i: usize) -> usize {
    let floor = i.saturating_sub(MAX_CALL_GAP);
    while i > floor && matches!(bytes[i - 1], b' ' | b'\t') {
        i -= 1;
    }
    i
}

/// `i` moved on over spaces and tabs (at most [`MAX_CALL_GAP`]).
fn blank_on(bytes: &[u8], mut i: usize) -> usize {
    let ceiling = (i + MAX_CALL_GAP).min(bytes.len());
    while i < ceiling && matches!(bytes[i], b' ' | b'\t') {
        i += 1;
    }
    i
}

/// The keyword `word` (exact case, a whole word, not a member) ends at `i`.
fn keyword_before(bytes: &[u8], i: usize, word: &[u8]) -> bool {
    i >= word.len()
        && &bytes[i - word.len()..i] == word
        && !matches!(before(bytes, i - word.len()), b'.' | b'@' | b'$')
        && !is_ident_byte(before(bytes, i - word.len()))
}

/// The match is in the only operand of `keyword (…)`, a dotted path:
/// `synchronized (lock)`, `synchronized (this.lockObj)`, C#'s `lock (_lock)`.
fn operand_of(bytes: &[u8], start: usize, end: usize, keyword: &[u8]) -> bool {
    let Some((s, e)) = ident_around(bytes, start, end) else {
        return false;
    };
    let open = blank_back(bytes, path_start(bytes, s));
    at(bytes, blank_on(bytes, e)) == b')'
        && before(bytes, open) == b'('
        && keyword_before(bytes, blank_back(bytes, open - 1), keyword)
}

/// C#'s `lock (x)` statement: the keyword `lock` itself before its `(`.
fn lock_statement(bytes: &[u8], start: usize, end: usize) -> bool {
    keyword_before(bytes, end, b"lock")
        && start + 4 == end
        && at(bytes, blank_on(bytes, end)) == b'('
}

/// A monitor declared with the type `Object` (Java; a Kotlin `object` is a
/// class) or `object` (C#): `private final Object lock = …`,
/// `static readonly object _lock = …`.
fn typed(bytes: &[u8], start: usize, end: usize, object: &[u8]) -> bool {
    let Some((s, _)) = ident_around(bytes, start, end) else {
        return false;
    };
    let gap = blank_back(bytes, s);
    gap < s && keyword_before(bytes, gap, object)
}

/// Python's `with self._lock:` (and `async with`): a context manager
/// named by a dotted path alone. A Redis lock's object is made elsewhere
/// (`r.lock(`, `Lock(r, …)`), a lock word the file still holds.
fn with_target(bytes: &[u8], start: usize, end: usize) -> bool {
    let Some((s, e)) = ident_around(bytes, start, end) else {
        return false;
    };
    let p = path_start(bytes, s);
    let gap = blank_back(bytes, p);
    at(bytes, blank_on(bytes, e)) == b':' && gap < p && keyword_before(bytes, gap, b"with")
}

/// Go's `sync.Mutex`, `sync.RWMutex`, `*sync.Mutex` (not `redsync.Mutex`).
fn sync_type(bytes: &[u8], start: usize, end: usize) -> bool {
    let Some((s, _)) = ident_around(bytes, start, end) else {
        return false;
    };
    keyword_before(bytes, s.saturating_sub(1), b"sync") && before(bytes, s) == b'.'
}

/// A Go name declared of a `sync` type or given one: a field or variable
/// `lock sync.Mutex`, `mu *sync.RWMutex`, `cacheMutex = &sync.RWMutex{}`,
/// `lock := new(sync.Mutex)`.
fn typed_sync(bytes: &[u8], start: usize, end: usize) -> bool {
    let Some((_, e)) = ident_around(bytes, start, end) else {
        return false;
    };
    let mut ty = blank_on(bytes, e);
    if bytes[ty..].starts_with(b":=") {
        ty = blank_on(bytes, ty + 2);
    } else if at(bytes, ty) == b'=' && at(bytes, ty + 1) != b'=' {
        ty = blank_on(bytes, ty + 1);
    }
    if bytes[ty..].starts_with(b"new(") {
        ty += 4;
    } else if matches!(at(bytes, ty), b'*' | b'&') {
        ty += 1;
    }
    ty > e && bytes[ty..].starts_with(b"sync.") && !is_ident_byte(before(bytes, ty))
}

/// A Go name whose method is one of `sync`'s locks' own:
/// `s.lock.Lock()`, `c.mutex.RUnlock()`, `mu.TryLock()`. (A Redis lock's
/// object — `redsync`'s `Mutex` — has `Lock()` too, but it is made with a
/// lock word the file still holds: `NewMutex(`.)
fn sync_method_receiver(bytes: &[u8], start: usize, end: usize) -> bool {
    let Some((_, e)) = ident_around(bytes, start, end) else {
        return false;
    };
    at(bytes, e) == b'.'
        && [
            &b"Lock()"[..],
            b"Unlock()",
            b"RLock()",
            b"RUnlock()",
            b"TryLock()",
            b"TryRLock()",
        ]
        .iter()
        .any(|m| bytes[e + 1..].starts_with(m))
}

/// Python's modules of in-process locks.
const THREADING: [&[u8]; 3] = [b"threading.", b"asyncio.", b"multiprocessing."];

/// A lock type of the standard library: `threading.Lock(`,
/// `asyncio.Semaphore(4)`, `multiprocessing.RLock`.
fn threading_type(bytes: &[u8], start: usize, end: usize) -> bool {
    let Some((s, _)) = ident_around(bytes, start, end) else {
        return false;
    };
    THREADING.iter().any(|m| {
        s >= m.len() && &bytes[s - m.len()..s] == *m && !is_ident_byte(before(bytes, s - m.len()))
    })
}

/// A name assigned a lock of the standard library: `self._lock =
/// threading.Lock()`, `sem = asyncio.Semaphore(4)`,
/// `mutex = multiprocessing.RLock()`.
fn threading_target(bytes: &[u8], start: usize, end: usize) -> bool {
    let Some((_, e)) = ident_around(bytes, start, end) else {
        return false;
    };
    let eq = blank_on(bytes, e);
    if at(bytes, eq) != b'=' || at(bytes, eq + 1) == b'=' {
        return false;
    }
    let value = &bytes[blank_on(bytes, eq + 1)..];
    THREADING.iter().any(|m| value.starts_with(m))
}

/// Python's `del` statement (`del self._cache[key]`): `del` first on its
/// line, a keyword Python lets nothing else be named. (The prefilter reads
/// no strings: a line of a multi-line string starting `del ` is let go
/// too; a command Python sends is spelled in a call, `r.delete(`,
/// `execute_command("DEL"`.)
fn del_statement(bytes: &[u8], start: usize, end: usize) -> bool {
    let line = blank_back(bytes, start);
    end == start + 3
        && &bytes[start..end] == b"del"
        && (line == 0 || matches!(bytes[line - 1], b'\n' | b'\r'))
        && matches!(at(bytes, end), b' ' | b'\t' | b'(')
}

/// A word part `set` that can name a write with a TTL, as a call or a
/// command: `SET k`, `set(`, `Set(ctx`, `cmd("SET")`, `StringSet(`,
/// `setex(`, `psetex`, `SetArgs(`, `setIfPresent(`, `set_options(` — not a
/// type such as `HashSet<…>` or `BTreeSet::new()`.
fn set_word(bytes: &[u8], start: usize, end: usize) -> bool {
    let starts = starts_part(bytes, start)
        || (matches!(before(bytes, start), b'p' | b'P') && starts_part(bytes, start - 1));
    if !starts {
        return false;
    }
    let mut after = end;
    for suffix in [
        "_with_options",
        "_options",
        "options",
        "ifpresent",
        "async",
        "args",
        "_ex",
        "ex",
    ] {
        if continues_with(bytes, after, suffix) {
            after += suffix.len();
            break;
        }
    }
    if continues_with(bytes, after, "async") {
        after += "async".len();
    }
    matches!(at(bytes, after), b'(' | b'"' | b'\'' | b'`' | b' ' | b'\t')
}

/// True when the bytes may hold a finding (see the module doc). Never false
/// for a file that can produce one with the default configuration.
pub fn may_match(bytes: &[u8]) -> bool {
    may_match_with(bytes, false)
}

/// As [`may_match`]; `custom_lock_keys` when the configuration adds
/// lock-key patterns, so that a release or extend counts without a lock word.
pub fn may_match_with(bytes: &[u8], custom_lock_keys: bool) -> bool {
    may_match_in(bytes, custom_lock_keys, Dialect::Other)
}

/// As [`may_match_with`], for a file of a known [`Dialect`]: its in-process
/// spellings of a lock word or release word count for nothing.
pub fn may_match_in(bytes: &[u8], custom_lock_keys: bool, dialect: Dialect) -> bool {
    scan(bytes, custom_lock_keys, dialect, None)
}

/// As [`may_match_with`]; when it answers false (the file is rejected),
/// `sig` holds its call-word signature: the sorted hashes of the
/// identifiers holding a call anchor that stand before a call
/// ([`stands_before_call`]; `spaced`: a language with paren-less calls, see
/// [`CALL_ANCHORS`]). The same single pass over the bytes.
pub fn may_match_signed(
    bytes: &[u8],
    custom_lock_keys: bool,
    dialect: Dialect,
    spaced: bool,
    sig: &mut Vec<u32>,
) -> bool {
    sig.clear();
    let found = scan(bytes, custom_lock_keys, dialect, Some((sig, spaced)));
    sig.sort_unstable();
    sig.dedup();
    found
}

/// How [`scan_by`] walks a file: [`AtCandidates`] in the program, [`Full`] the
/// tests' oracle.
trait Walk {
    fn walk(dfa: &Dfa, bytes: &[u8], f: impl FnMut(usize, usize, usize) -> bool) -> bool;
}

/// The test of the SIMD candidates ([`Dfa::each_match`]).
struct AtCandidates;

impl Walk for AtCandidates {
    #[inline]
    fn walk(dfa: &Dfa, bytes: &[u8], f: impl FnMut(usize, usize, usize) -> bool) -> bool {
        dfa.each_match(bytes, f)
    }
}

fn scan(
    bytes: &[u8],
    custom_lock_keys: bool,
    dialect: Dialect,
    sig: Option<(&mut Vec<u32>, bool)>,
) -> bool {
    scan_by::<AtCandidates>(bytes, custom_lock_keys, dialect, sig)
}

fn scan_by<W: Walk>(
    bytes: &[u8],
    custom_lock_keys: bool,
    dialect: Dialect,
    mut sig: Option<(&mut Vec<u32>, bool)>,
) -> bool {
    let mut release = false;
    let mut lock = custom_lock_keys;
    let dfa = if sig.is_some() {
        dfa_with_anchors()
    } else {
        dfa()
    };
    // Overlapping: `lock` inside `LockTake` must not hide `locktake`.
    let infos = word_infos();
    let found = W::walk(dfa, bytes, |pattern, start, end| {
        let info = infos[pattern];
        if let Some((sig, spaced)) = sig.as_mut() {
            if info.signs {
                note_call_word(bytes, start, end, *spaced, sig);
            }
            if info.class == Class::Anchor {
                return false;
            }
        }
        // Already known: skip the boundary check.
        if (info.class == Class::Release && release) || (info.class == Class::Lock && lock) {
            return false;
        }
        if !check(bytes, info.rule, start, end)
            || (dialect != Dialect::Other && in_process(bytes, info.rule, start, end, dialect))
        {
            return false;
        }
        match info.class {
            Class::Strong => return true,
            Class::Release => release = true,
            Class::Lock => lock = true,
            Class::Anchor => {}
        }
        release && lock
    });
    if found {
        return true;
    }
    // A lock word without a release word: a plain `SET … PX` of a lock key is LL007.
    lock && set_automaton()
        .find_iter(bytes)
        .any(|m| set_word(bytes, m.start(), m.end()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every [`Dialect`].
    const DIALECTS: [Dialect; 5] = [
        Dialect::Other,
        Dialect::Jvm,
        Dialect::CSharp,
        Dialect::Python,
        Dialect::Go,
    ];

    #[test]
    fn call_word_keys_are_kept_once_each_in_order() {
        let mut table = Vec::new();
        let mut keys = vec![7, 0, 7, 3, 0, u64::MAX, 3, 9, 7];
        dedup_keys(&mut keys, &mut table);
        assert_eq!(keys, [7, 0, 3, u64::MAX, 9]);
        // many keys, colliding slots included: the same set as sort + dedup
        let mut keys: Vec<u64> = (0..5000u64).map(|i| (i % 1234) << 40).collect();
        let mut want = keys.clone();
        want.sort_unstable();
        want.dedup();
        dedup_keys(&mut keys, &mut table);
        assert_eq!(keys.len(), 1234);
        keys.sort_unstable();
        assert_eq!(keys, want);
        let mut none = Vec::new();
        dedup_keys(&mut none, &mut table);
        assert!(none.is_empty());
    }

    fn pass(s: &str) -> bool {
        may_match(s.as_bytes())
    }

    /// In-process locks and language statements of a file's language are
    /// no lock word nor release word; in another language, or with an
    /// unknown one, the same bytes still pass.
    #[test]
    fn in_process_spellings_count_in_their_language_only() {
        let let_go = [
            (
                Dialect::Jvm,
                "synchronized (lock) { cache.remove(k); }\nvoid deleteUser() {}",
            ),
            (
                Dialect::Jvm,
                "synchronized(this.lockObj) {}\nrepo.delete(id);",
            ),
            (
                Dialect::Jvm,
                "private final Object LOCK = new Object();\nrepo.delete(id);",
            ),
            (
                Dialect::Jvm,
                "synchronized ( Foo.MUTEX ) { }\nfiles.delete(p);",
            ),
            (
                Dialect::CSharp,
                "lock (_sync) { _cache.Remove(k); }\nrepo.Delete(id);",
            ),
            (
                Dialect::CSharp,
                "private readonly object _lock = new object();\nlock(_lock) { }\nDelete(x);",
            ),
            (
                Dialect::Python,
                "with self._lock:\n    del self._cache[key]\n",
            ),
            (
                Dialect::Python,
                "self._lock = threading.Lock()\nasync with self._lock:\n    os.unlink(p)\n",
            ),
            (Dialect::Python, "sem = asyncio.Semaphore(4)\nx.delete(k)\n"),
            (
                Dialect::Python,
                "lease_lock = lock_of(k)\n\tdel(items[0])\n",
            ),
            (Dialect::Go, "type s struct {\n\tlock sync.Mutex\n}\nfunc (c *s) f() {\n\tc.lock.Lock()\n\tdefer c.lock.Unlock()\n\tdelete(c.m, k)\n}"),
            (Dialect::Go, "var cacheMutex = &sync.RWMutex{}\ncacheMutex.RLock()\ndelete(m, k)"),
            (Dialect::Go, "mu *sync.Mutex\nx.mu.Lock()\nrdb.Del(ctx, k)"),
        ];
        for (dialect, s) in let_go {
            assert!(
                !may_match_in(s.as_bytes(), false, dialect),
                "{dialect:?}: {s}"
            );
            assert!(may_match_in(s.as_bytes(), false, Dialect::Other), "{s}");
        }
        // The same words where they can be Redis: still lock and release words.
        let kept = [
            (
                Dialect::Jvm,
                "synchronized (lock) { }\nredis.delete(lockKey);",
            ),
            (
                Dialect::Jvm,
                "synchronized (locks.get(k)) { }\nrepo.delete(id);",
            ),
            (
                Dialect::Jvm,
                "object RedisLock { fun release() = redis.delete(key) }",
            ),
            (
                Dialect::Jvm,
                "String lock = \"lock:\" + id; redis.delete(lock);",
            ),
            (Dialect::CSharp, "db.KeyDelete(_lock);"),
            (Dialect::CSharp, "x.lock (k); db.KeyDelete(k);"),
            (
                Dialect::CSharp,
                "var @lock = new RedisLock(db); db.KeyDelete(k);",
            ),
            (
                Dialect::Python,
                "with r.lock(\"report\"):\n    r.delete(k)\n",
            ),
            (
                Dialect::Python,
                "self._lock = RedisLock(r)\nwith self._lock:\n    r.delete(k)\n",
            ),
            (
                Dialect::Python,
                "lock = acquire(k)\nr.execute_command('del', lock)\n",
            ),
            (Dialect::Python, "LOCK_KEY = 'x'\n    x = y; del z\n"),
            (Dialect::Python, "LOCK_KEY = 'x'\n    r.x()  # del\n"),
            (Dialect::Python, "if locked == lock: r.delete(lock)\n"),
            (
                Dialect::Go,
                "m := rs.NewMutex(\"job\")\nm.Lock()\nrdb.Del(ctx, k)",
            ),
            (
                Dialect::Go,
                "func f(m *redsync.Mutex) { m.Lock(); rdb.Del(ctx, k) }",
            ),
            (
                Dialect::Go,
                "lockKey := \"lock:\" + id\nrdb.Del(ctx, lockKey)",
            ),
            (Dialect::Go, "s.lock.Acquire(ctx)\nrdb.Del(ctx, k)"),
            (
                Dialect::Other,
                "with self._lock:\n    del self._cache[key]\n",
            ),
            (Dialect::Other, "lock (_sync) { }\nrepo.Delete(id);"),
        ];
        for (dialect, s) in kept {
            assert!(
                may_match_in(s.as_bytes(), false, dialect),
                "{dialect:?}: {s}"
            );
        }
        // every cut of every example, in every dialect: the look-arounds
        // stop at both ends of the bytes
        for (_, s) in let_go.iter().chain(&kept) {
            let b = s.as_bytes();
            for i in 0..=b.len() {
                for d in DIALECTS {
                    let _ = may_match_in(&b[..i], false, d);
                    let _ = may_match_in(&b[i..], false, d);
                }
            }
        }
    }

    #[test]
    fn rejects_unrelated_text() {
        assert!(!pass("fn main() { println!(\"hello\"); }"));
        // Common substrings of the keywords are not words.
        assert!(!pass("let model = Model::new(); delay(delta); deliver();"));
        assert!(!pass("// javascript description, evaluate the script"));
        assert!(!pass(
            "server { listen 80; } # nginx config, anxiety, phoenix, LYNX"
        ));
        assert!(!pass("let block = clock.now(); unlocked(); blocking_io();"));
        assert!(
            !pass("cache.putIfAbsent(k, v); map.computeIfAbsent(k, f); RESET_IF_ABSENTEE"),
            "map methods are no set-if-absent"
        );
        assert!(
            !pass("x.expired; y.delete(z);"),
            "a release without a lock word"
        );
        // Ordinary words around a lock word are not releases.
        assert!(!pass(
            "let g = m.lock(); // the entry expired, deleted, expires soon"
        ));
        assert!(!pass("mu.Lock(); unlinked = true; delegate(deleter)"));
        assert!(!pass(
            "let seen: HashSet<u32> = HashSet::new(); let g = m.lock();"
        ));
        assert!(!pass(
            "static M: Mutex<u32> = make(); set(m.lock(), 1); delete_user();"
        ));
        assert!(!pass(
            "let mu = sync.Mutex{}; mu.Lock(); offset = reset(asset);"
        ));
    }

    #[test]
    fn accepts_every_client_spelling() {
        for s in [
            "con.set_nx(k, v)",
            "rdb.SetNX(ctx, k, v, 0)",
            "jedis.setnx(k, v)",
            "MSETNX a 1 b 2",
            "r.set(k, v, nx=True)",
            "redis.set(k, v, nx: true)",
            "client.set(k, v, { NX: true })",
            "conn.Do(\"SET\", k, v, \"NX\", \"PX\", 3000)",
            "client.B().Set().Key(k).Value(v).Nx().Px(ttl)",
            ".conditional_set(ExistenceCheck::NX)",
            "ops.setIfAbsent(k, v)",
            "con.set(k, v, Expiration.seconds(t), SetOption.SET_IF_ABSENT)",
            "con.set(k, v, SetCondition.ifAbsent(), expiration)",
            "db.LockTake(k, v, t)",
            "db.StringSet(k, v, e, When.NotExists)",
            "if redis.call('get', KEYS[1]) == ARGV[1]",
            "local ok = redis.pcall('del', KEYS[1])",
            "SET lock:x 1 NX PX 3000",
        ] {
            assert!(pass(s), "{s}");
        }
    }

    #[test]
    fn release_or_extend_needs_a_lock_word() {
        for s in [
            "con.del(LOCK_KEY)",
            "redisTemplate.delete(lockKey)",
            "db.KeyDelete(\"mutex:\" + id)",
            "r.unlink(f\"lease:{id}\")",
            "con.pexpire(LOCK, 3000)",
            "jedis.expire(lockName, 30)",
            "DEL locks:jobs",
            "DELEX lock:x IFEQ token",
            "redis_lock.delete(name)",
            "HTTPLock.del(k)",
            "r.set(lock_key, v, px=3000)",
            "rdb.Set(ctx, lockKey, v, 10*time.Second)",
            "jedis.psetex(LOCK, 3000, v)",
            "redis.expireat(lock_key, ts)",
            "await db.KeyDeleteAsync(lockKey)",
            "commands.pexpireAt(LOCK, t)",
            "client.deleteLock(x)",
            "db.StringSetAsync(redlock, v, ttl)",
        ] {
            assert!(pass(s), "{s}");
        }
        assert!(!may_match_with(b"con.del(key)", false));
        assert!(may_match_with(b"con.del(key)", true));
    }

    #[test]
    fn matches_only_whole_word_parts() {
        fn b(s: &str) -> &[u8] {
            s.as_bytes()
        }
        assert!(accept(b("x.del(k)"), "del", 2, 5));
        assert!(accept(b("KeyDelete"), "del", 3, 6));
        assert!(!accept(b("model"), "del", 2, 5));
        assert!(!accept(b("delay"), "del", 0, 3));
        assert!(accept(b("lockKey"), "lock", 0, 4));
        assert!(accept(b("LOCK_PREFIX"), "lock", 0, 4));
        assert!(accept(b("locks"), "lock", 0, 4));
        assert!(accept(b("lockkey"), "lock", 0, 4));
        assert!(!accept(b("blockKey"), "lock", 1, 5));
        assert!(!accept(b("locked"), "lock", 0, 4));
        assert!(accept(b("SetNX"), "nx", 3, 5));
        assert!(!accept(b("nginx"), "nx", 3, 5));
        // Matches at the very start and end of the input never index out of bounds.
        assert!(accept(b("nx"), "nx", 0, 2));
        assert!(accept(b("del"), "del", 0, 3));
        assert!(accept(b("expire"), "expire", 0, 6));
    }

    #[test]
    fn dfa_reports_what_the_crate_reports() {
        let words: Vec<&str> = KEYWORDS.iter().chain(CALL_ANCHORS).copied().collect();
        let ours = Dfa::new(&words);
        let theirs = build(&words);
        for s in [
            &b""[..],
            b"LockTake lockRelease REDLOCK locklint: x.del(k) model nginx SETNX setIfAbsent",
            b"cache()->add( Cache::add( cache.add( redis.pcall server.call getdel haskey \xff",
            b"releases leases unlinked expireAt pexpire semaphores MUTEX_KEY if_absent",
            b"lockextendlockreleaselocktakenxnxnx",
        ] {
            let want = agree(&ours, &theirs, s);
            assert!(want > 0 || s.is_empty());
        }
    }

    /// Asserts that the DFA finds exactly the crate automaton's overlapping
    /// matches in `s`; returns how many there are.
    fn agree(ours: &Dfa, theirs: &AhoCorasick, s: &[u8]) -> usize {
        let mut got = Vec::new();
        ours.each_match_full(s, |w, start, end| {
            got.push((end, start, w));
            false
        });
        let mut near = Vec::new();
        ours.each_match(s, |w, start, end| {
            near.push((end, start, w));
            false
        });
        near.sort_unstable();
        let mut want: Vec<_> = theirs
            .find_overlapping_iter(s)
            .map(|m| (m.end(), m.start(), m.pattern().as_usize()))
            .collect();
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(got, want, "{}", String::from_utf8_lossy(s));
        assert_eq!(near, want, "{}", String::from_utf8_lossy(s));
        want.len()
    }

    /// The DFA against the crate's automaton on every prefix and suffix
    /// of texts with words at the very start and end, in upper and mixed
    /// case, around multi-byte UTF-8 and across the walk's eight-byte
    /// rounds (a word split by a round's end, the rest after the rounds).
    #[test]
    fn dfa_agrees_at_every_boundary() {
        let words: Vec<&str> = KEYWORDS.iter().chain(CALL_ANCHORS).copied().collect();
        let ours = Dfa::new(&words);
        let theirs = build(&words);
        let texts: [&[u8]; 5] = [
            b"lockdel NX expire",
            "é lock·DEL—Mutex ü SETNX ñ \u{feff}Semaphore 日本 release".as_bytes(),
            b"LOCKTAKE,LockExtend;lOcKrElEaSe:REDIS.CALL(server.PCALL)",
            b"Cache::Add(cache()->ADD(CACHE.add(x)forgetFORGET",
            b"xxxxxxxlockxxxxxxxdelxxxxxxnxxxxxxx",
        ];
        for text in texts {
            for cut in 0..=text.len() {
                for s in [&text[..cut], &text[cut..]] {
                    agree(&ours, &theirs, s);
                }
            }
        }
    }

    /// The call-word signature as first written (`note_call_word` of
    /// every anchor match, through the crate's automaton): the one the
    /// prefilter gathers must be the same set.
    fn reference_signature(bytes: &[u8], spaced: bool) -> Vec<u32> {
        let mut sig = Vec::new();
        for m in automaton_with_anchors().find_overlapping_iter(bytes) {
            if !anchors_calls()[m.pattern().as_usize()] {
                continue;
            }
            let (start, end) = (m.start(), m.end());
            let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'$';
            let floor = end.saturating_sub(MAX_CALL_WORD + 1);
            let mut s = start;
            while s > floor && ident(bytes[s - 1]) {
                s -= 1;
            }
            let ceiling = (start + MAX_CALL_WORD + 1).min(bytes.len());
            let mut e = end;
            while e < ceiling && ident(bytes[e]) {
                e += 1;
            }
            if bytes[start..end].iter().all(|&b| ident(b))
                && reference_before_call(bytes, e, spaced)
                && (s == 0 || !ident(bytes[s - 1]))
                && e - s <= MAX_CALL_WORD
            {
                sig.push(call_word_hash(&bytes[s..e]));
            }
        }
        sig.sort_unstable();
        sig.dedup();
        sig
    }

    /// [`stands_before_call`] as a plain loop.
    fn reference_before_call(bytes: &[u8], mut e: usize, spaced: bool) -> bool {
        if bytes.get(e) == Some(&b' ') {
            if spaced {
                return true;
            }
            let gap_end = e + 1 + MAX_CALL_GAP;
            e += 1;
            while e < bytes.len() && b" \t\r\n".contains(&bytes[e]) {
                e += 1;
            }
            if e >= gap_end {
                return false;
            }
        }
        matches!(bytes.get(e), Some(b'(' | b'<'))
    }

    #[test]
    fn a_call_is_a_word_before_a_parenthesis_or_a_space_in_ruby() {
        for (text, call, ruby) in [
            ("handler(x)", true, true),
            ("handler<T>(x)", true, true),
            ("handler (x)", true, true),
            ("handler  \n\t (x)", true, true),
            ("handler <T>", true, true),
            ("handler x", false, true),
            ("the handler is", false, true),
            ("return handler;", false, false),
            ("handler\t(x)", false, false),
            ("handler\n(x)", false, false),
            ("handler ", false, true),
            ("handler", false, false),
        ] {
            let at = text.find("handler").unwrap() + "handler".len();
            assert_eq!(
                stands_before_call(text.as_bytes(), at, false),
                call,
                "{text:?}"
            );
            assert_eq!(
                stands_before_call(text.as_bytes(), at, true),
                ruby,
                "{text:?} (Ruby)"
            );
        }
        // white space filling the bound but for the `(`, and all of it
        for (gap, call) in [(MAX_CALL_GAP - 1, true), (MAX_CALL_GAP, false)] {
            let text = format!("handler {}(x)", " ".repeat(gap));
            assert_eq!(stands_before_call(text.as_bytes(), 7, false), call, "{gap}");
            assert_eq!(
                reference_before_call(text.as_bytes(), 7, false),
                call,
                "{gap}"
            );
        }
    }

    /// The call words by a plain loop over the bytes: what
    /// [`each_call_word`]'s masks must find.
    fn reference_call_words(bytes: &[u8], spaced: bool) -> Vec<&[u8]> {
        let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'$';
        let mut out = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            if !ident(bytes[i]) {
                i += 1;
                continue;
            }
            let start = i;
            while i < bytes.len() && ident(bytes[i]) {
                i += 1;
            }
            if i - start <= MAX_CALL_WORD
                && !bytes[start].is_ascii_digit()
                && reference_before_call(bytes, i, spaced)
            {
                out.push(&bytes[start..i]);
            }
        }
        out
    }

    #[test]
    fn call_words_are_the_reference_ones() {
        let mut texts: Vec<Vec<u8>> = vec![
            b"handler(x) run_job <T> 9lives( getUsage\n $el (a) b \n\t (c) d e\t(".to_vec(),
            "é claimÜ(x) ñ freeze( 日本obtain( _exit<"
                .as_bytes()
                .to_vec(),
            b"(((   <<<   a".to_vec(),
            b"".to_vec(),
            (0u8..=255).collect(),
        ];
        // identifiers across the 64-byte chunks, at every offset, and
        // longer than a chunk and than the bound
        for len in [1, 63, 64, 65, 127, 128, 129, 200] {
            for pad in 0..70 {
                let mut t = vec![b' '; pad];
                t.extend(std::iter::repeat_n(b'a', len));
                t.push(b'(');
                t.extend_from_slice(b"b c(");
                texts.push(t);
            }
        }
        // a name, a space and a run of white space before `(` that ends in
        // this chunk, the next one or further, across the bound and not
        for gap in [0, 1, 2, 30, 62, 63, 64, 65, 127, 200, 255, 256, 257, 300] {
            for pad in [0, 1, 31, 60, 61, 62, 63, 64, 65] {
                let mut t = vec![b'x'; pad];
                t.extend_from_slice(b" name ");
                t.extend((0..gap).map(|i| [b' ', b'\n', b'\t', b'\r'][i % 4]));
                t.extend_from_slice(b"(a) b \x0b(c)");
                texts.push(t);
            }
        }
        // a pseudo-random mix of the bytes that matter
        let alphabet = b"ab_$9( <.\n\t\r\x0b\xc3";
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..200 {
            let t: Vec<u8> = (0..300)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    alphabet[(x % alphabet.len() as u64) as usize]
                })
                .collect();
            texts.push(t);
        }
        for t in &texts {
            for spaced in [false, true] {
                let want = reference_call_words(t, spaced);
                let mut got = Vec::new();
                each_call_word(t, spaced, |w| got.push(w));
                assert_eq!(
                    got,
                    want,
                    "{} (spaced: {spaced})",
                    String::from_utf8_lossy(t)
                );
                // the kernel this processor does not take by itself
                let mut sse = Vec::new();
                call_words_by(t, spaced, |w| sse.push(w), class_masks_64);
                assert_eq!(sse, want, "SSE2: {}", String::from_utf8_lossy(t));
            }
        }
    }

    #[test]
    fn call_words_hold_every_call_word() {
        let text = b"def run\n  handler key\n  svc.getUsage(id)\nend\n x = a<b>";
        // Ruby: a word before a space may be a call
        let words = CallWords::of(text, &[7, 9], true);
        assert_eq!(words.anchored(), &[7, 9]);
        for w in ["handler", "getUsage", "a", "def", "x"] {
            assert!(words.may_hold(bloom_key(w.as_bytes())), "{w}");
        }
        // no false "maybe" for these (the filter is deterministic)
        for w in ["run", "key", "id", "end", "b", "processOrder", "cronJob"] {
            assert!(!words.may_hold(bloom_key(w.as_bytes())), "{w}");
        }
        // elsewhere only a word before `(` or `<`
        let words = CallWords::of(text, &[], false);
        for w in ["getUsage", "a"] {
            assert!(words.may_hold(bloom_key(w.as_bytes())), "{w}");
        }
        for w in ["handler", "def", "x", "run", "key"] {
            assert!(!words.may_hold(bloom_key(w.as_bytes())), "{w}");
        }
        // a file without call words answers no
        let none = CallWords::of(b"x", &[], false);
        assert!(!none.may_hold(bloom_key(b"x")));
        assert!(none.anchored().is_empty());
    }

    #[test]
    fn signature_is_the_reference_one() {
        let long = format!("x{}Acquire(", "a".repeat(MAX_CALL_WORD - 8));
        let longer = format!("x{}Acquire(", "a".repeat(MAX_CALL_WORD - 7));
        let texts = [
            "acquire(x)".to_string(),
            "svc.acquireSlot(id) then releaseAll <T> grab ".to_string(),
            "unlocked clockwise blocking nginx anxiety expired\n".to_string(),
            "é claimÜ(x) ñ freeze( 日本obtain( $dropIt( _exit<".to_string(),
            "RELEASE(k) Leave (x) relinquishAll(y) haskey ( getset(z)".to_string(),
            "lockreleaseX( mutexes( semaphore< leases ".to_string(),
            "acquireIt \n (x) releaseIt\t(y) claimIt (z)".to_string(),
            "acquire".to_string(),
            long,
            longer,
        ];
        for t in &texts {
            let bytes = t.as_bytes();
            for cut in 0..=bytes.len() {
                for s in [&bytes[..cut], &bytes[cut..]] {
                    for spaced in [false, true] {
                        let mut sig = Vec::new();
                        if !may_match_signed(s, false, Dialect::Other, spaced, &mut sig) {
                            assert_eq!(
                                sig,
                                reference_signature(s, spaced),
                                "{} (spaced: {spaced})",
                                String::from_utf8_lossy(s)
                            );
                        }
                    }
                }
            }
        }
    }

    /// The walk over every byte, as the prefilter was before the SIMD
    /// candidates: the oracle.
    struct Full;

    impl Walk for Full {
        fn walk(dfa: &Dfa, bytes: &[u8], f: impl FnMut(usize, usize, usize) -> bool) -> bool {
            dfa.each_match_full(bytes, f)
        }
    }

    /// A small deterministic generator (xorshift64*).
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }

        fn pick<'a, T>(&mut self, from: &'a [T]) -> &'a T {
            &from[self.below(from.len())]
        }
    }

    fn all_words() -> Vec<&'static str> {
        KEYWORDS.iter().chain(CALL_ANCHORS).copied().collect()
    }

    /// What stands next to words: word-part separators, the bytes the
    /// rules look at after a word (`s`, `es`, `key`, `()`, `<`, `ete`,
    /// `at`), `set`/`p` before one, UTF-8, NUL, bytes that fold onto
    /// others (`_` onto DEL, `@` onto a backquote).
    const AROUND: &[&str] = &[
        "", " ", ".", "_", "(", ")", "<", ">", "::", ":", "\n", "\t", "-", "$", "\"", "'", "`",
        "a", "B", "x", "X", "s", "es", "key", "KEY", "()", "set", "SET_", "p", "P", "ete", "ex",
        "ifeq", "at", "Async", "é", "日本", "\u{feff}", "\0", "\x7f", "@", "[", "{", "1", "m.",
    ];

    /// `word` in a random case.
    fn random_case(rng: &mut Rng, word: &str) -> String {
        word.chars()
            .map(|c| {
                if rng.below(2) == 0 {
                    c.to_ascii_uppercase()
                } else {
                    c
                }
            })
            .collect()
    }

    /// Random texts: random bytes; random mixes of words in random case
    /// and what stands around them, shifted across the 32-byte blocks;
    /// words alone at the start and end of a buffer.
    fn generated(count: usize) -> Vec<Vec<u8>> {
        let words = all_words();
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut out = Vec::new();
        for n in 0..count {
            let mut t = Vec::new();
            match n % 4 {
                0 => {
                    // random bytes, some of them only letters of the words
                    let len = rng.below(300);
                    let letters = b"nxsetifabpruockldmgvwhqLOCKDELNXSETi_.:()->";
                    let only_letters = rng.below(2) == 0;
                    for _ in 0..len {
                        t.push(if only_letters {
                            *rng.pick(letters)
                        } else {
                            rng.next() as u8
                        });
                    }
                }
                1 | 2 => {
                    // a mix
                    for _ in 0..rng.below(40) {
                        t.extend_from_slice(rng.pick(AROUND).as_bytes());
                        let w = *rng.pick(&words);
                        // sometimes only the first bytes of a word
                        let w = if rng.below(5) == 0 {
                            &w[..1 + rng.below(w.len())]
                        } else {
                            w
                        };
                        t.extend_from_slice(random_case(&mut rng, w).as_bytes());
                        for _ in 0..rng.below(3) {
                            t.push(*rng.pick(b" xa_.(\n"));
                        }
                    }
                }
                _ => {
                    // one word, padded to any offset, at the end or not
                    let pad = rng.below(80);
                    t.extend(std::iter::repeat_n(*rng.pick(b" xe.lS"), pad));
                    t.extend_from_slice(rng.pick(AROUND).as_bytes());
                    let w = *rng.pick(&words);
                    t.extend_from_slice(random_case(&mut rng, w).as_bytes());
                    if rng.below(2) == 0 {
                        t.extend_from_slice(rng.pick(AROUND).as_bytes());
                    }
                }
            }
            out.push(t);
        }
        out
    }

    /// Every word next to everything of `AROUND`, on both sides, at every
    /// offset across the first two blocks, at the end of the buffer or not.
    fn every_word_around() -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for w in all_words() {
            for variant in [w.to_string(), w.to_ascii_uppercase()] {
                for a in AROUND {
                    for pad in [0, 1, 2, 13, 29, 30, 31, 32, 33, 34, 61, 62, 63, 64, 65] {
                        let head = format!("{}{a}{variant}", "z".repeat(pad));
                        out.push(head.clone().into_bytes());
                        out.push(format!("{head}{a}").into_bytes());
                        out.push(format!("{head}{a}{}", " ".repeat(pad)).into_bytes());
                    }
                }
            }
        }
        out
    }

    /// What a walk answered, and the calls `f` got.
    type Calls = (bool, Vec<(usize, usize, usize)>);

    /// The calls `f` gets from a walk, `f` answering true at call `stop`.
    fn calls(
        walk: impl FnOnce(&mut dyn FnMut(usize, usize, usize) -> bool) -> bool,
        stop: usize,
    ) -> Calls {
        let mut seen = Vec::new();
        let found = walk(&mut |w, start, end| {
            seen.push((w, start, end));
            seen.len() == stop
        });
        (found, seen)
    }

    /// The candidates' test of every SIMD kernel makes the calls of the
    /// walk over every byte, by start, and stops right after the call
    /// that answers true.
    #[test]
    fn candidates_tested_are_the_full_walk() {
        let kernels = candidates::Kernel::available();
        let dfas = [dfa(), dfa_with_anchors()];
        let mut texts = generated(4000);
        texts.extend(every_word_around());
        let mut checked = 0usize;
        let by_start_and_word = |calls: &mut Vec<(usize, usize, usize)>| {
            calls.sort_unstable_by_key(|&(w, start, _)| (start, w));
        };
        for t in &texts {
            for d in dfas {
                let (_, mut want) = calls(|f| d.each_match_full(t, f), usize::MAX);
                by_start_and_word(&mut want);
                checked += want.len();
                let mut runs: Vec<Box<dyn Fn(usize) -> Calls>> =
                    vec![Box::new(|stop| calls(|f| d.each_match(t, f), stop))];
                for &k in &kernels {
                    runs.push(Box::new(move |stop| {
                        calls(
                            |f| d.each_match_by(t, |from| d.finder.next_with(k, t, from), f),
                            stop,
                        )
                    }));
                }
                for run in &runs {
                    let (found, all) = run(usize::MAX);
                    assert!(!found);
                    assert!(all.windows(2).all(|p| p[0].1 <= p[1].1), "by start");
                    let mut sorted = all.clone();
                    by_start_and_word(&mut sorted);
                    assert_eq!(sorted, want, "{:?}", String::from_utf8_lossy(t));
                    for stop in [1, want.len() / 2 + 1, want.len()] {
                        if (1..=want.len()).contains(&stop) {
                            assert_eq!(run(stop), (true, all[..stop].to_vec()));
                        }
                    }
                }
            }
        }
        // the texts hold words
        assert!(checked > 100_000, "{checked}");
    }

    /// The verdict and, for a file it rejects, everything the scan
    /// gathers (the call words, as [`may_match_signed`] keeps them: sorted,
    /// once each) are those of the full walk.
    #[test]
    fn scan_is_the_full_scan() {
        let mut texts = generated(4000);
        texts.extend(every_word_around());
        let (mut passed, mut signed) = (0, 0);
        for (i, t) in texts.iter().enumerate() {
            let dialect = DIALECTS[i % DIALECTS.len()];
            for custom in [false, true] {
                let want = scan_by::<Full>(t, custom, dialect, None);
                assert_eq!(scan_by::<AtCandidates>(t, custom, dialect, None), want);
                let (mut sig_full, mut sig_near) = (Vec::new(), Vec::new());
                let spaced = custom; // (both kinds of call word, on half the runs each)
                let want = scan_by::<Full>(t, custom, dialect, Some((&mut sig_full, spaced)));
                let got =
                    scan_by::<AtCandidates>(t, custom, dialect, Some((&mut sig_near, spaced)));
                // (a signature is kept only for a file the scan rejects:
                // once it accepts, the words seen so far depend on the order)
                for sig in [&mut sig_full, &mut sig_near] {
                    sig.sort_unstable();
                    sig.dedup();
                    if want {
                        sig.clear();
                    }
                }
                assert_eq!(
                    (got, &sig_near),
                    (want, &sig_full),
                    "{:?}",
                    String::from_utf8_lossy(t)
                );
                passed += usize::from(want);
                signed += usize::from(!sig_full.is_empty());
            }
        }
        // both verdicts, and signatures, are exercised
        assert!(passed > 1000 && passed < texts.len() * 2 - 1000, "{passed}");
        assert!(signed > 1000, "{signed}");
    }

    /// The candidates of a buffer, block by block from the start.
    fn candidate_set(finder: &candidates::Finder, k: candidates::Kernel, t: &[u8]) -> Vec<usize> {
        let mut got = Vec::new();
        let mut from = 0;
        while let Some((block, mut mask)) = finder.next_with(k, t, from) {
            assert!(block >= from && mask != 0);
            while mask != 0 {
                got.push(block + mask.trailing_zeros() as usize);
                mask &= mask - 1;
            }
            from = block + 32;
        }
        got
    }

    /// [`has_call_anchor`] (the DFA walked over every byte) says what the
    /// crate's automaton of the same words says: every word upper- and
    /// lower-case among other bytes, and generated texts, whole and cut
    /// to name lengths.
    #[test]
    fn has_call_anchor_agrees_with_the_crate_automaton() {
        let theirs = |t: &[u8]| {
            automaton_with_anchors()
                .find_overlapping_iter(t)
                .any(|m| anchors_calls()[m.pattern().as_usize()])
        };
        let mut texts = every_word_around();
        texts.extend(generated(500));
        let (mut yes, mut all) = (0, 0);
        for t in &texts {
            for cut in [t.len(), t.len().min(24), t.len().min(7)] {
                let name = &t[..cut];
                let want = theirs(name);
                assert_eq!(
                    has_call_anchor(name),
                    want,
                    "{:?}",
                    String::from_utf8_lossy(name)
                );
                yes += usize::from(want);
                all += 1;
            }
        }
        // both answers met many times
        assert!(yes > 100 && all - yes > 100, "{yes} of {all}");
    }

    /// Every kernel finds the same candidates as the scalar one, from any
    /// start, and every position where a word starts is one of them.
    #[test]
    fn kernels_agree_and_miss_no_word() {
        let words = all_words();
        let finder = &dfa_with_anchors().finder;
        let theirs = automaton_with_anchors();
        let mut texts = generated(2000);
        texts.extend(every_word_around().into_iter().step_by(7));
        for t in &texts {
            let want = candidate_set(finder, candidates::Kernel::Scalar, t);
            assert!(want.iter().all(|&c| c < t.len()));
            for m in theirs.find_overlapping_iter(t.as_slice()) {
                assert!(
                    want.binary_search(&m.start()).is_ok(),
                    "{} at {} in {:?}",
                    words[m.pattern().as_usize()],
                    m.start(),
                    String::from_utf8_lossy(t)
                );
            }
            for k in candidates::Kernel::available() {
                assert_eq!(candidate_set(finder, k, t), want, "{k:?}");
                // from an odd start, the blocks need not be aligned
                for from in [1, 5, 31, 33] {
                    let mut got = Vec::new();
                    let mut at = from;
                    while let Some((block, mut mask)) = finder.next_with(k, t, at) {
                        while mask != 0 {
                            got.push(block + mask.trailing_zeros() as usize);
                            mask &= mask - 1;
                        }
                        at = block + 32;
                    }
                    let tail: Vec<usize> = want.iter().copied().filter(|&c| c >= from).collect();
                    assert_eq!(got, tail, "{k:?} from {from}");
                }
            }
        }
    }

    /// Most bytes of ordinary code are no candidate (the search is worth
    /// it), and every word's own bucket holds it.
    #[test]
    fn candidates_are_sparse_in_code() {
        let code = "fn main() { let items = vec![1, 2, 3]; for item in items.iter() {\n\
                    println!(\"{}\", item * 2); } let total: u32 = items.into_iter().sum(); }\n"
            .repeat(20);
        let finder = &dfa_with_anchors().finder;
        let found = candidate_set(finder, candidates::Kernel::Scalar, code.as_bytes()).len();
        assert!(found * 8 < code.len(), "{found} of {}", code.len());
    }

    #[test]
    fn ident_table_is_the_predicate() {
        for b in 0..=255u8 {
            assert_eq!(
                is_ident_byte(b),
                b.is_ascii_alphanumeric() || b == b'_' || b == b'$',
                "{b}"
            );
        }
    }

    #[test]
    fn never_panics_on_odd_bytes() {
        for s in [
            &b""[..],
            b"\xff\xfe",
            b"p",
            b"pexpire",
            b"Pset",
            b"\x00del\x00",
            b"s",
        ] {
            let _ = may_match(s);
            let _ = may_match_with(s, true);
        }
    }
}
