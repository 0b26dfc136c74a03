//! Word-level helpers shared by front-ends and rules: "does this name read
//! like a lock", "is this function a deliberate force-release", "is this
//! value a unique or a weak token". Pure string functions, no language.

use crate::facts::ValueExpr;

/// Splits an identifier or literal into lower-case word parts on case
/// changes, digits boundaries and the separators `_ - : . / { } $ # space`.
/// `LOCK_PREFIX` → `lock prefix`, `lockKey` → `lock key`, `f"mutex:{id}"` →
/// `f mutex id`, `HTTPLock` → `http lock`.
pub fn word_parts(s: &str) -> Vec<String> {
    let mut parts = Vec::new();
    split_parts(s, |part| parts.push(std::mem::take(part)));
    parts
}

/// The word parts of [`word_parts`], each handed to `emit` in turn in one
/// buffer (emptied after each call unless `emit` took it): a caller that
/// only compares the parts allocates nothing per part.
fn split_parts(s: &str, mut emit: impl FnMut(&mut String)) {
    // One pass over the chars with the previous one and a peek at the next
    // (no `Vec<char>` of the whole text: this runs for every name and path
    // component), and ASCII lower-cased without the Unicode tables.
    let mut cur = String::new();
    let mut prev = ' ';
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        let before = std::mem::replace(&mut prev, c);
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                emit(&mut cur);
                cur.clear();
            }
            continue;
        }
        // `cur` is not empty only right after an alphanumeric char: `before`
        if c.is_uppercase() && !cur.is_empty() {
            let next_lower = chars.peek().is_some_and(|n| n.is_lowercase());
            if before.is_lowercase()
                || before.is_ascii_digit()
                || (before.is_uppercase() && next_lower)
            {
                emit(&mut cur);
                cur.clear();
            }
        }
        if c.is_ascii() {
            cur.push(c.to_ascii_lowercase());
        } else {
            cur.extend(c.to_lowercase());
        }
    }
    if !cur.is_empty() {
        emit(&mut cur);
    }
}

const LOCK_WORDS: &[&str] = &[
    "lock",
    "locks",
    "mutex",
    "mutexes",
    "lease",
    "leases",
    "semaphore",
    "semaphores",
    "redlock",
    "mutexkey",
    "lockkey",
];

/// True when one word part of `s` is a lock word (`lock`, `mutex`, `lease`,
/// `semaphore` or a plural). `blockKey`, `clock` and `release` are not.
pub fn reads_like_lock(s: &str) -> bool {
    word_parts(s)
        .iter()
        .any(|w| LOCK_WORDS.contains(&w.as_str()))
}

/// True when `s` names a time window rather than a lock (SPEC §1: dedup
/// windows, rate limiters and cooldowns are not locks): a word part says
/// `debounce`, `throttle`, `cooldown` or `rate limit` in one of their forms
/// (`RealtimeDebouncer`, `throttle_key`, `cool-down`, `RateLimiter`).
pub fn reads_like_window(s: &str) -> bool {
    let parts = word_parts(s);
    parts.iter().enumerate().any(|(i, w)| {
        let next = parts.get(i + 1).map(String::as_str);
        match w.as_str() {
            "debounce" | "debounced" | "debouncer" | "debouncers" | "debounces" | "debouncing"
            | "throttle" | "throttled" | "throttler" | "throttlers" | "throttles"
            | "throttling" | "cooldown" | "cooldowns" | "ratelimit" | "ratelimits"
            | "ratelimiter" | "ratelimiters" | "ratelimited" | "ratelimiting" => true,
            "rate" => matches!(
                next,
                Some("limit" | "limits" | "limiter" | "limiters" | "limited" | "limiting")
            ),
            "cool" => next == Some("down"),
            _ => false,
        }
    })
}

/// True when a TTL's name says the key lives for a period between two
/// runs, not for the length of a critical section: a window word
/// ([`reads_like_window`]) or `interval`/`window` (`REVALIDATION_INTERVAL`,
/// `WINDOW_SECONDS`).
pub fn ttl_reads_like_window(s: &str) -> bool {
    reads_like_window(s)
        || word_parts(s)
            .iter()
            .any(|w| matches!(w.as_str(), "interval" | "intervals" | "window" | "windows"))
}

/// A function whose name says its deletion is deliberate, or that it cleans
/// up dead holders: `forceRelease`, `force_unlock`, `reset_all`, `breakLock`,
/// `clearLocks`, `deleteAll`, `remove_stale_locks`, `reapOrphans`. Not
/// `clear_lock`/`clearLock`/`remove_lock`: they are ordinary releases.
pub fn is_deliberate_release_fn(name: &str) -> bool {
    let parts = word_parts(name);
    if parts.iter().any(|p| {
        matches!(
            p.as_str(),
            "ghost" | "ghosts" | "stale" | "orphan" | "orphans" | "orphaned"
        )
    }) {
        return true;
    }
    if parts.len() > 1 && parts.last().is_some_and(|p| p == "all") {
        return true;
    }
    match parts.first().map(String::as_str) {
        Some("force" | "reset" | "purge" | "wipe" | "flush" | "cleanup") => true,
        Some("clean") => parts.get(1).is_some_and(|p| p == "up"),
        // `clear_lock` is the ordinary release; `clearLocks`, `clear_cache` are wipes
        Some("clear") => parts.get(1).map(String::as_str) != Some("lock"),
        Some("break") => parts.iter().any(|p| p == "lock" || p == "locks"),
        _ => false,
    }
}

/// A function that is part of a lock API by its name: it reads like a lock
/// (`releaseLock`, `setLock`, `acquire_mutex`) or says `unlock`/`trylock`/
/// `acquire`/`release`.
pub fn is_lock_fn(name: &str) -> bool {
    reads_like_lock(name)
        || word_parts(name).iter().any(|p| {
            matches!(
                p.as_str(),
                "unlock" | "trylock" | "relock" | "acquire" | "release"
            )
        })
}

/// The two halves of a lock API: names that read like taking a lock.
pub fn is_acquire_fn(name: &str) -> bool {
    let parts = word_parts(name);
    parts.iter().any(|p| {
        matches!(
            p.as_str(),
            "lock" | "acquire" | "obtain" | "take" | "grab" | "claim" | "trylock" | "enter"
        )
    }) && !is_release_fn(name)
}

/// Names that read like giving a lock back.
pub fn is_release_fn(name: &str) -> bool {
    word_parts(name).iter().any(|p| {
        matches!(
            p.as_str(),
            "unlock" | "release" | "free" | "drop" | "exit" | "leave" | "relinquish"
        )
    })
}

/// Names of scripts or files that release or extend a lock.
pub fn is_release_or_extend_name(name: &str) -> bool {
    word_parts(name).iter().any(|p| {
        matches!(
            p.as_str(),
            "release"
                | "unlock"
                | "extend"
                | "renew"
                | "refresh"
                | "prolong"
                | "touch"
                | "heartbeat"
        )
    }) || name.to_ascii_lowercase().contains("unlock")
}

/// Classifies a value by the words of the call or identifier that produced
/// it: `Uuid::new_v4()`, `UUID.randomUUID()`, `uuid4()`, `crypto.randomUUID()`,
/// `nanoid()`, `secrets.token_hex(16)` are unique; thread ids, pids, host
/// names, clocks and counters are weak. `None` when the words say nothing.
pub fn classify_value_words(text: &str) -> Option<ValueExpr> {
    with_ascii_lower(text, |lower| classify_value_words_lower(text, lower))
}

/// The bit of a word [`classify_value_words`] looks for among the word
/// parts (0 for any other word).
fn value_part_bit(word: &str) -> u32 {
    match word {
        "thread" => 1 << 0,
        "id" => 1 << 1,
        "current" => 1 << 2,
        "ident" => 1 << 3,
        "name" => 1 << 4,
        "pid" => 1 << 5,
        "getpid" => 1 << 6,
        "hostname" => 1 << 7,
        "gethostname" => 1 << 8,
        "ip" => 1 << 9,
        "ipv4" => 1 << 10,
        "now" => 1 << 11,
        "time" => 1 << 12,
        "millis" => 1 << 13,
        "nanos" => 1 << 14,
        "timestamp" => 1 << 15,
        "expire" => 1 << 16,
        "expires" => 1 << 17,
        "expiry" => 1 << 18,
        "expiration" => 1 << 19,
        "deadline" => 1 << 20,
        "rand" => 1 << 21,
        "mt_rand" => 1 << 22,
        "randint" => 1 << 23,
        "counter" => 1 << 24,
        "increment_and_get" => 1 << 25,
        _ => 0,
    }
}

/// Hands `f` the ASCII lower-case form of `text`: in a buffer on the stack
/// when it is short (these run for every argument of every call of a file),
/// else in a new `String`.
pub(crate) fn with_ascii_lower<R>(text: &str, f: impl FnOnce(&str) -> R) -> R {
    let mut buf = [0u8; 192];
    if let Some(dst) = buf.get_mut(..text.len()) {
        dst.copy_from_slice(text.as_bytes());
        dst.make_ascii_lowercase();
        // lower-casing ASCII letters keeps UTF-8 valid
        if let Ok(lower) = std::str::from_utf8(dst) {
            return f(lower);
        }
    }
    f(&text.to_ascii_lowercase())
}

/// Every word the value tables ([`classify_value_words`],
/// [`is_serialised_data`] and the pattern front-end's `values::classify`)
/// look for anywhere in a lower-cased text. [`Needles::of`] finds which of
/// them a text holds in one pass, instead of one substring search per word
/// (an argument can be a whole callback of a minified bundle).
const VALUE_NEEDLES: &[&str] = &[
    // unique values
    "uuid",
    "guid",
    "nanoid",
    "ulid",
    "cuid",
    "ksuid",
    "xid",
    "snowflake",
    "random_uuid",
    "randomuuid",
    "token_hex",
    "token_urlsafe",
    "token_bytes",
    "urandom",
    "randombytes",
    "random_bytes",
    "securerandom",
    "fill_bytes",
    "thread_rng().gen",
    "rand::random",
    "getrandomvalues",
    "newguid",
    "str::random",
    "bin2hex",
    "randomnumbergenerator",
    "crypto/rand",
    // weak values
    "threadid",
    "get_ident",
    "gettid",
    "process::id",
    "process.pid",
    "host_name",
    "hostaddress",
    "localip",
    "local_ip",
    "remote_addr",
    "currenttimemillis",
    "nanotime",
    "unixnano",
    "unix_epoch",
    "microtime",
    "math.random",
    "incrementandget",
    "fetch_add",
    "machinename",
    "getlocalhost",
    "os.hostname",
    "gethostname",
    "processid",
    "getpid",
    "mypid",
    "$$",
    "managedthreadid",
    "goid",
    "ticks",
    "datetime",
    "date.now",
    "new date(",
    "time.time",
    // serialised data
    "json.dumps(",
    "json.stringify(",
    "json_encode(",
    "serialize(",
    "pickle.dumps(",
    "marshal(",
    "writevalueasstring(",
    "tojson(",
    "tojsonstring(",
    "msgpack.",
    "to_json",
];

/// The index of `word` in [`VALUE_NEEDLES`] (at compile time: a word not
/// in the table does not build).
pub(crate) const fn needle(word: &str) -> usize {
    let w = word.as_bytes();
    let mut i = 0;
    while i < VALUE_NEEDLES.len() {
        let n = VALUE_NEEDLES[i].as_bytes();
        if n.len() == w.len() {
            let mut k = 0;
            while k < n.len() && n[k] == w[k] {
                k += 1;
            }
            if k == n.len() {
                return i;
            }
        }
        i += 1;
    }
    panic!("not a word of VALUE_NEEDLES")
}

/// `lower.contains(word)` for a word of [`VALUE_NEEDLES`], from the
/// [`Needles`] of `lower`.
macro_rules! holds {
    ($needles:expr, $word:literal) => {
        $needles.has(const { $crate::words::needle($word) })
    };
}
pub(crate) use holds;

/// Which words of [`VALUE_NEEDLES`] a lower-cased text holds, one bit each.
#[derive(Clone, Copy)]
pub(crate) struct Needles(u128);

impl Needles {
    pub(crate) fn of(lower: &str) -> Needles {
        use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};
        static AC: std::sync::OnceLock<AhoCorasick> = std::sync::OnceLock::new();
        // (a contiguous NFA: the texts are short values, and a DFA of the
        // needles was 135 kB of every run's heap, 0.2 bytes a source byte
        // of a 700 kB file)
        let ac = AC.get_or_init(|| {
            AhoCorasick::builder()
                .match_kind(MatchKind::Standard)
                .kind(Some(AhoCorasickKind::ContiguousNFA))
                .build(VALUE_NEEDLES)
                .expect("static word list builds")
        });
        const _: () = assert!(VALUE_NEEDLES.len() <= 128);
        let mut bits = 0u128;
        for m in ac.find_overlapping_iter(lower) {
            bits |= 1 << m.pattern().as_usize();
        }
        Needles(bits)
    }

    #[inline]
    pub(crate) fn has(self, index: usize) -> bool {
        self.0 >> index & 1 != 0
    }
}

/// [`classify_value_words`] with `lower` = `text` ASCII lower-cased.
pub(crate) fn classify_value_words_lower(text: &str, lower: &str) -> Option<ValueExpr> {
    classify_value_words_found(text, lower, Needles::of(lower))
}

/// [`classify_value_words_lower`] with the [`Needles`] of `lower` known.
pub(crate) fn classify_value_words_found(
    text: &str,
    lower: &str,
    found: Needles,
) -> Option<ValueExpr> {
    // which of the words are word parts (one bit each), without a
    // `String` per part
    let mut seen = 0u32;
    split_parts(text, |part| seen |= value_part_bit(part));
    let has = |w: &str| seen & value_part_bit(w) != 0;
    const UNIQUE_FOUND: [usize; 8] = [
        needle("uuid"),
        needle("guid"),
        needle("nanoid"),
        needle("ulid"),
        needle("cuid"),
        needle("ksuid"),
        needle("xid"),
        needle("snowflake"),
    ];
    if UNIQUE_FOUND.iter().any(|&i| found.has(i))
        || holds!(found, "random_uuid")
        || holds!(found, "randomuuid")
        || holds!(found, "token_hex")
        || holds!(found, "token_urlsafe")
        || holds!(found, "token_bytes")
        || holds!(found, "urandom")
        || holds!(found, "randombytes")
        || holds!(found, "random_bytes")
        || holds!(found, "securerandom")
        || holds!(found, "fill_bytes")
        || holds!(found, "thread_rng().gen")
        || holds!(found, "rand::random")
        || holds!(found, "getrandomvalues")
        || holds!(found, "newguid")
        || holds!(found, "str::random")
        || holds!(found, "bin2hex")
    {
        return Some(ValueExpr::Unique);
    }
    // a full-width random number (`Math.random()` as it comes, not cut to
    // a few digits) makes the whole value unique, whatever else it holds
    // (`${pid}-${Date.now()}-${Math.random()}`); SPEC §2 weak token is a
    // random number *formatted to a few digits*
    if holds!(found, "math.random") && full_width_random(lower) {
        return Some(ValueExpr::Unique);
    }
    if has("thread") && (has("id") || has("current") || has("ident") || has("name"))
        || holds!(found, "threadid")
        || holds!(found, "get_ident")
        || holds!(found, "gettid")
    {
        return Some(ValueExpr::Weak("a thread id".into()));
    }
    if has("pid") || has("getpid") || holds!(found, "process::id") || holds!(found, "process.pid") {
        return Some(ValueExpr::Weak("a process id".into()));
    }
    if has("hostname") || has("gethostname") || holds!(found, "host_name") {
        return Some(ValueExpr::Weak("a host name".into()));
    }
    if has("ip")
        || has("ipv4")
        || holds!(found, "hostaddress")
        || holds!(found, "localip")
        || holds!(found, "local_ip")
        || holds!(found, "remote_addr")
    {
        return Some(ValueExpr::Weak("a node IP address".into()));
    }
    if has("now")
        || has("time")
        || has("millis")
        || has("nanos")
        || has("timestamp")
        || holds!(found, "currenttimemillis")
        || holds!(found, "nanotime")
        || holds!(found, "unixnano")
        || holds!(found, "unix_epoch")
        || holds!(found, "microtime")
    {
        return Some(ValueExpr::Weak("the current time".into()));
    }
    // a deadline computed ahead (`newLockExpire`, `expiresAt`, `deadline`):
    // a time too, the value of a lock with a logical expiry
    if has("expire") || has("expires") || has("expiry") || has("expiration") || has("deadline") {
        return Some(ValueExpr::Weak("the expiry time".into()));
    }
    if holds!(found, "math.random") || has("rand") || has("mt_rand") || has("randint") {
        return Some(ValueExpr::Weak("a small random number".into()));
    }
    if has("counter")
        || has("increment_and_get")
        || holds!(found, "incrementandget")
        || holds!(found, "fetch_add")
    {
        return Some(ValueExpr::Weak("a process-local counter".into()));
    }
    None
}

/// `lower` holds a call of `math.random()` whose result is used at full
/// width: not scaled (`* 1000`), rounded (`Math.floor(…)`, `.toFixed(3)`)
/// or cut (`.slice(2, 6)`, `.substring(2, 8)`; a cut with one argument,
/// `.toString(36).substring(2)`, only drops the `0.`).
fn full_width_random(lower: &str) -> bool {
    const CALL: &str = "math.random()";
    let mut from = 0;
    while let Some(at) = lower[from..].find(CALL).map(|i| i + from) {
        from = at + CALL.len();
        let before = lower[..at].trim_end();
        let before = before.strip_suffix('(').unwrap_or(before);
        if [
            "floor",
            "round",
            "ceil",
            "trunc",
            "parseint",
            "parsefloat",
            "~~",
        ]
        .iter()
        .any(|w| before.ends_with(w))
        {
            continue;
        }
        let mut rest = lower[from..].trim_start();
        if let Some(r) = rest.strip_prefix(".tostring(") {
            let Some(close) = r.find(')') else { continue };
            rest = r[close + 1..].trim_start();
        }
        let cut = [".slice(", ".substr(", ".substring("]
            .iter()
            .find_map(|m| rest.strip_prefix(m));
        if let Some(args) = cut {
            if args.split(')').next().is_some_and(|a| !a.contains(',')) {
                return true;
            }
            continue;
        }
        if rest.starts_with('*')
            || rest.starts_with(".tofixed(")
            || rest.starts_with(".toprecision(")
        {
            continue;
        }
        return true;
    }
    false
}

/// A value that is serialised data (`json.dumps(result)`,
/// `JSON.stringify(v)`, `json_encode($v)`, `serialize($v)`, `pickle.dumps`,
/// `writeValueAsString`, `json.Marshal`): what a cache stores, never a token.
pub fn is_serialised_data(text: &str) -> bool {
    with_ascii_lower(text, is_serialised_data_lower)
}

/// [`is_serialised_data`] of a text already ASCII lower-cased.
pub(crate) fn is_serialised_data_lower(lower: &str) -> bool {
    is_serialised_data_found(Needles::of(lower))
}

/// [`is_serialised_data_lower`] from the [`Needles`] of the text.
pub(crate) fn is_serialised_data_found(found: Needles) -> bool {
    holds!(found, "json.dumps(")
        || holds!(found, "json.stringify(")
        || holds!(found, "json_encode(")
        || holds!(found, "serialize(")
        || holds!(found, "pickle.dumps(")
        || holds!(found, "marshal(")
        || holds!(found, "writevalueasstring(")
        || holds!(found, "tojson(")
        || holds!(found, "tojsonstring(")
        || holds!(found, "msgpack.")
        || holds!(found, "to_json")
}

/// The longest constant text kept whole (see [`constant`]).
pub const CONSTANT_MAX: usize = 256;
/// How much of a longer one is kept: its first bytes (at most this many,
/// cut at a character boundary).
const CONSTANT_HEAD: usize = 64;

/// A literal that is a constant lock value: any literal at all. Kept as a
/// function so front-ends agree on what text is stored. A literal longer
/// than [`CONSTANT_MAX`] bytes (an SVG sprite, a template) is stored as
/// its head, `…` and its closing quote: what a message can show of it,
/// and a fact every call passing it along would otherwise copy whole.
pub fn constant(text: &str) -> ValueExpr {
    if text.len() <= CONSTANT_MAX {
        return ValueExpr::Constant(text.into());
    }
    let mut cut = CONSTANT_HEAD;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let close = text
        .chars()
        .last()
        .filter(|c| matches!(c, '"' | '\'' | '`'));
    let mut short = String::with_capacity(cut + 4);
    short.push_str(&text[..cut]);
    short.push('…');
    short.extend(close);
    ValueExpr::Constant(short.into())
}

/// [`constant`] of `text` in double quotes, without a copy of all of a
/// long `text` first.
pub fn quoted_constant(text: &str) -> ValueExpr {
    if text.len() + 2 <= CONSTANT_MAX {
        return ValueExpr::Constant(format!("\"{text}\"").into());
    }
    // the head `constant` keeps: the opening quote and the text's first bytes
    let mut cut = CONSTANT_HEAD - 1;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    ValueExpr::Constant(format!("\"{}…\"", &text[..cut]).into())
}

/// Test files by path convention (SPEC §1): `tests/`, `test/`, `spec/`,
/// `__tests__/`, `*_test.go`, `*Test.java`, `*Tests.cs`, `test_*.py`,
/// `*_spec.rb`, `*.test.ts`, `*.spec.ts` and the like.
pub fn is_test_path(path: &std::path::Path) -> bool {
    // Folder names above the directory locklint runs in say nothing about
    // the code (`/home/ci/shop-tests/app/lock.py` checked from inside
    // `shop-tests`): an absolute path is judged below the working directory.
    is_test_path_below(path, cwd())
}

/// The working directory, below which absolute paths are judged.
fn cwd() -> Option<&'static std::path::Path> {
    static CWD: std::sync::OnceLock<Option<std::path::PathBuf>> = std::sync::OnceLock::new();
    CWD.get_or_init(|| std::env::current_dir().ok()).as_deref()
}

/// An absolute `path` below `base`, from it; any other as it is.
fn below<'a>(path: &'a std::path::Path, base: Option<&std::path::Path>) -> &'a std::path::Path {
    match base {
        Some(base) if path.is_absolute() => path.strip_prefix(base).unwrap_or(path),
        _ => path,
    }
}

/// [`is_test_path`] with an absolute `path` judged below `base` (the
/// working directory) when it lies there.
fn is_test_path_below(path: &std::path::Path, base: Option<&std::path::Path>) -> bool {
    let path = below(path, base);
    path.parent()
        .is_some_and(|dir| dir.components().any(is_test_folder))
        || path.file_name().is_some_and(is_test_file_name)
}

/// Test code by one folder of its path: `tests/`, or a test-support
/// package or crate (`kitsune-test/`, `foo_testing/`, `test-utils/`,
/// `shop-test-support/`).
fn is_test_folder(comp: std::path::Component) -> bool {
    match comp {
        std::path::Component::Normal(c) => is_test_folder_part(c),
        _ => false,
    }
}

/// [`is_test_folder`] of a normal part of a path.
fn is_test_folder_part(c: &std::ffi::OsStr) -> bool {
    // every name below holds `test` or `spec` (word parts are ASCII
    // lower-cased, and no other char lower-cases to those letters): a
    // folder name without either is judged without its word parts
    let bytes = c.as_encoded_bytes();
    if !contains_ascii_ci(bytes, b"test") && !contains_ascii_ci(bytes, b"spec") {
        return false;
    }
    let c = c.to_string_lossy();
    if is_test_folder_name(&c) {
        return true;
    }
    let parts = word_parts(&c);
    let last = parts.last().map(String::as_str);
    let support = parts.iter().any(|p| p == "test" || p == "tests")
        && parts.iter().any(|p| {
            matches!(
                p.as_str(),
                "utils" | "util" | "support" | "helpers" | "fixtures" | "harness"
            )
        });
    parts.len() > 1 && (support || matches!(last, Some("test" | "tests" | "testing" | "testkit")))
}

fn is_test_folder_name(c: &str) -> bool {
    matches!(
        c,
        "tests" | "test" | "spec" | "specs" | "__tests__" | "testing" | "testdata"
    )
}

/// Test code by its file name.
fn is_test_file_name(name: &std::ffi::OsStr) -> bool {
    is_test_file_bytes(name.as_encoded_bytes())
}

/// [`is_test_file_name`] on the name's bytes: every test is of ASCII
/// text, which reading the name as lossy UTF-8 leaves in place (an
/// invalid sequence never holds an ASCII byte), so no copy or UTF-8 check
/// per file.
fn is_test_file_bytes(name: &[u8]) -> bool {
    let stem = name.split(|&b| b == b'.').next().unwrap_or_default();
    matches!(
        name,
        b"tests" | b"test" | b"spec" | b"specs" | b"__tests__" | b"testing" | b"testdata"
    ) || stem.ends_with(b"_test")
        || stem.ends_with(b"Test")
        || stem.ends_with(b"Tests")
        || stem.ends_with(b"IT")
        || stem.ends_with(b"_spec")
        || stem.starts_with(b"test_")
        || stem.ends_with(b"_tests")
        // as the ASCII lower-cased name would hold `.test.` or `.spec.`
        || memchr::memchr_iter(b'.', name).any(|i| {
            name.get(i + 1..i + 6).is_some_and(|w| {
                (w[..4].eq_ignore_ascii_case(b"test") || w[..4].eq_ignore_ascii_case(b"spec"))
                    && w[4] == b'.'
            })
        })
        || name.eq_ignore_ascii_case(b"conftest.py")
}

/// `hay` holds `needle` (ASCII lower case) with ASCII letters of any case.
fn contains_ascii_ci(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle))
}

/// [`is_test_path`] for the many files of a project, each folder judged
/// once (files come folder by folder, in order).
#[derive(Default)]
pub struct TestPaths {
    /// The last file's folder, as bytes.
    last_dir: Vec<u8>,
    /// For each part of `last_dir`: where it ends and whether it or a
    /// part before it is a test folder.
    parts: Vec<(usize, bool)>,
}

impl TestPaths {
    pub fn is_test_path(&mut self, path: &std::path::Path) -> bool {
        self.is_test_path_below(path, cwd())
    }

    fn is_test_path_below(
        &mut self,
        path: &std::path::Path,
        base: Option<&std::path::Path>,
    ) -> bool {
        let path = below(path, base);
        // the folder and the name split at the last `/` (no parse of the
        // path's parts per file): when the name is a plain one, the
        // folder's normal parts are the parent's, so their verdict is the
        // same
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            let bytes = path.as_os_str().as_bytes();
            let (dir, name) = match memchr::memrchr(b'/', bytes) {
                Some(i) => (&bytes[..i], &bytes[i + 1..]),
                None => (&bytes[..0], bytes),
            };
            if !matches!(name, b"" | b"." | b"..") {
                return self.folder(dir) || is_test_file_bytes(name);
            }
        }
        is_test_path_below(path, None)
    }

    /// Whether a normal part of the folder `dir` (a path's bytes, `/`
    /// between parts) is a test folder: the parts it shares with the last
    /// folder keep their verdicts, the others are judged.
    #[cfg(unix)]
    fn folder(&mut self, dir: &[u8]) -> bool {
        use std::os::unix::ffi::OsStrExt;
        if dir == self.last_dir.as_slice() {
            if let Some(&(_, test)) = self.parts.last() {
                return test;
            }
        }
        let same = dir
            .iter()
            .zip(&self.last_dir)
            .take_while(|(a, b)| a == b)
            .count();
        // a kept part ends within the shared bytes, where a part of `dir`
        // ends too
        while let Some(&(end, _)) = self.parts.last() {
            if end < same || (end == same && dir.get(end).is_none_or(|&b| b == b'/')) {
                break;
            }
            self.parts.pop();
        }
        let mut at = self.parts.last().map_or(0, |&(end, _)| end);
        let mut test = self.parts.last().is_some_and(|&(_, t)| t);
        while at < dir.len() {
            let start = if dir[at] == b'/' { at + 1 } else { at };
            let end = memchr::memchr(b'/', &dir[start..]).map_or(dir.len(), |i| start + i);
            let part = &dir[start..end];
            // `Path::components` leaves out empty and `.` parts, and `..`
            // is no normal part
            if !matches!(part, b"" | b"." | b"..") {
                test = test || is_test_folder_part(std::ffi::OsStr::from_bytes(part));
            }
            self.parts.push((end, test));
            at = end;
        }
        self.last_dir.clear();
        self.last_dir.extend_from_slice(dir);
        test
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quoted_constant_is_the_constant_of_its_quoted_text() {
        for text in [
            String::new(),
            "a".repeat(CONSTANT_MAX - 2),
            "a".repeat(CONSTANT_MAX - 1),
            "<svg>".repeat(2000),
            "é".repeat(CONSTANT_MAX),
            format!("x{}", "é".repeat(CONSTANT_MAX)),
        ] {
            assert_eq!(
                quoted_constant(&text),
                constant(&format!("\"{text}\"")),
                "{} bytes",
                text.len()
            );
        }
    }

    #[test]
    fn a_long_constant_keeps_its_head_and_closing_quote() {
        let text = |v: ValueExpr| match v {
            ValueExpr::Constant(t) => t.to_string(),
            other => panic!("not a constant: {other:?}"),
        };
        // up to the limit: whole
        let whole = format!("\"{}\"", "a".repeat(CONSTANT_MAX - 2));
        assert_eq!(text(constant(&whole)), whole);
        // longer: the head, `…`, the closing quote
        let long = format!("'{}'", "<svg>".repeat(2000));
        let short = text(constant(&long));
        assert!(short.len() < 80, "{short}");
        assert!(
            short.starts_with("'<svg><svg>") && short.ends_with("…'"),
            "{short}"
        );
        // cut at a character boundary; no closing quote to keep
        let wide = "é".repeat(CONSTANT_MAX);
        let short = text(constant(&wide));
        assert!(short.starts_with("éé") && short.ends_with('…'), "{short}");
    }

    #[test]
    fn the_needles_of_a_text_are_the_words_it_contains() {
        // every needle alone, inside other text, overlapping its
        // neighbours, and texts of pieces of several needles
        let mut texts: Vec<String> = vec![String::new(), "x".into(), "$".into(), "$$$".into()];
        for (i, w) in VALUE_NEEDLES.iter().enumerate() {
            let next = VALUE_NEEDLES[(i + 1) % VALUE_NEEDLES.len()];
            texts.push(w.to_string());
            texts.push(format!("a{w}b"));
            texts.push(format!("{w}{next}"));
            texts.push(w[..w.len() - 1].to_string());
            texts.push(format!("{}{}", &w[1..], &next[..next.len() / 2]));
            texts.push(format!("é{w}ü"));
        }
        texts.push(VALUE_NEEDLES.concat());
        texts.push("JSON.stringify(randomUUID())".to_ascii_lowercase());
        for t in &texts {
            let found = Needles::of(t);
            for (i, w) in VALUE_NEEDLES.iter().enumerate() {
                assert_eq!(found.has(i), t.contains(w), "{w:?} in {t:?}");
            }
        }
        assert_eq!(needle("to_json"), VALUE_NEEDLES.len() - 1);
    }

    #[test]
    fn a_full_width_random_part_makes_a_value_unique_and_a_cut_one_weak() {
        let weak = |t: &str| matches!(classify_value_words(t), Some(ValueExpr::Weak(_)));
        let unique = |t: &str| classify_value_words(t) == Some(ValueExpr::Unique);
        assert!(unique("`${process.pid}-${Date.now()}-${Math.random()}`"));
        assert!(unique("os.hostname() + ':' + Math.random()"));
        assert!(unique("Math.random().toString(36).substring(2)"));
        assert!(unique("Math.random()"));
        assert!(weak("Math.random().toString().slice(2, 6)"));
        assert!(weak("Math.random().toString(36).substr(2, 5)"));
        assert!(weak("Math.floor(Math.random() * 1000)"));
        assert!(weak("`${process.pid}-${Math.random() * 100}`"));
        assert!(weak("Math.random().toFixed(4)"));
        assert!(weak("Math.random"));
        // a cut random number beside a full one: the full one decides
        assert!(unique("Math.random().toFixed(2) + Math.random()"));
        assert!(weak("`${process.pid}-${Date.now()}`"));
    }

    #[test]
    fn test_names_are_judged_as_by_their_word_parts_and_lower_case_copy() {
        // the judgements before the shortcuts: every folder by its word
        // parts, every file name by an ASCII lower-cased copy
        fn folder_by_parts(c: &str) -> bool {
            let parts = word_parts(c);
            let last = parts.last().map(String::as_str);
            let support = parts.iter().any(|p| p == "test" || p == "tests")
                && parts.iter().any(|p| {
                    matches!(
                        p.as_str(),
                        "utils" | "util" | "support" | "helpers" | "fixtures" | "harness"
                    )
                });
            is_test_folder_name(c)
                || (parts.len() > 1
                    && (support || matches!(last, Some("test" | "tests" | "testing" | "testkit"))))
        }
        fn file_by_copy(name: &str) -> bool {
            let stem = name.split('.').next().unwrap_or("");
            let lower = name.to_ascii_lowercase();
            is_test_folder_name(name)
                || stem.ends_with("_test")
                || stem.ends_with("Test")
                || stem.ends_with("Tests")
                || stem.ends_with("IT")
                || stem.ends_with("_spec")
                || stem.starts_with("test_")
                || stem.ends_with("_tests")
                || lower.contains(".test.")
                || lower.contains(".spec.")
                || lower == "conftest.py"
        }
        for name in [
            "tests",
            "test",
            "Tests",
            "spec",
            "__tests__",
            "testdata",
            "src",
            "lib",
            "kitsune-test",
            "foo_testing",
            "test-utils",
            "shop-test-support",
            "TestUtils",
            "SPEC",
            "latest",
            "inspect",
            "MyTESTs",
            "prospects",
            "a.TEST.ts",
            "b.Spec.js",
            "CONFTEST.py",
            "conftest.py",
            "x_test.go",
            "FooTest.java",
            "FooIT.kt",
            "test_a.py",
            "a.py",
            "\u{212a}test",
            "t\u{e9}st-utils",
            "\u{130}test_helpers",
            "te",
            "",
            ".test.",
            "api.test",
            "redis_lock.py",
        ] {
            let os = std::ffi::OsStr::new(name);
            assert_eq!(
                is_test_folder(std::path::Component::Normal(os)),
                folder_by_parts(name),
                "folder {name}"
            );
            assert_eq!(is_test_file_name(os), file_by_copy(name), "file {name}");
        }
    }

    #[test]
    fn value_part_words_have_one_bit_each() {
        let words = [
            "thread",
            "id",
            "current",
            "ident",
            "name",
            "pid",
            "getpid",
            "hostname",
            "gethostname",
            "ip",
            "ipv4",
            "now",
            "time",
            "millis",
            "nanos",
            "timestamp",
            "expire",
            "expires",
            "expiry",
            "expiration",
            "deadline",
            "rand",
            "mt_rand",
            "randint",
            "counter",
            "increment_and_get",
        ];
        let mut all = 0u32;
        for w in words {
            let bit = value_part_bit(w);
            assert_eq!(bit.count_ones(), 1, "{w}");
            assert_eq!(all & bit, 0, "{w}");
            all |= bit;
        }
        assert_eq!(value_part_bit("lock"), 0);
        // the same answers as comparing the collected word parts
        for text in [
            "Thread.currentThread().getId()",
            "os.getpid()",
            "socket.gethostname()",
            "System.currentTimeMillis()",
            "newLockExpire",
            "rand.Intn(100)",
            "counter.incrementAndGet()",
            "K\u{212A}elvin_id",
            "userId",
        ] {
            let parts = word_parts(text);
            let mut seen = 0u32;
            split_parts(text, |p| seen |= value_part_bit(p));
            for w in words {
                assert_eq!(
                    parts.iter().any(|p| p == w),
                    seen & value_part_bit(w) != 0,
                    "{text} {w}"
                );
            }
        }
    }

    #[test]
    fn splits_words() {
        assert_eq!(word_parts("LOCK_PREFIX"), vec!["lock", "prefix"]);
        assert_eq!(word_parts("lockKey"), vec!["lock", "key"]);
        assert_eq!(word_parts("HTTPLock"), vec!["http", "lock"]);
        assert_eq!(word_parts("f\"mutex:{id}\""), vec!["f", "mutex", "id"]);
    }

    #[test]
    fn lock_words() {
        for yes in [
            "LOCK_PREFIX",
            "lockKey",
            "lock:",
            "mutex:{id}",
            "locks",
            "job-lease",
            "Semaphore",
        ] {
            assert!(reads_like_lock(yes), "{yes}");
        }
        for no in [
            "blockKey",
            "clock",
            "release",
            "user:42",
            "unlocked_at",
            "deadlock_count",
        ] {
            assert!(!reads_like_lock(no), "{no}");
        }
    }

    #[test]
    fn window_words() {
        for yes in [
            "RealtimeDebouncer",
            "realtime_debouncer",
            "throttleKey",
            "sso:throttle:",
            "COOLDOWN_PREFIX",
            "cool-down",
            "RateLimiter",
            "rate_limit_key",
            "getDebounceRedisKey",
        ] {
            assert!(reads_like_window(yes), "{yes}");
        }
        for no in [
            "lockKey", "rate", "coolant", "limiter", "interval", "refresh",
        ] {
            assert!(!reads_like_window(no), "{no}");
        }
        assert!(ttl_reads_like_window("REVALIDATION_INTERVAL_SECONDS"));
        assert!(ttl_reads_like_window("windowSeconds"));
        assert!(!ttl_reads_like_window("LOCK_TTL_SECONDS"));
    }

    #[test]
    fn deliberate() {
        assert!(is_deliberate_release_fn("forceRelease"));
        assert!(is_deliberate_release_fn("reset_all"));
        assert!(is_deliberate_release_fn("breakLock"));
        assert!(!is_deliberate_release_fn("release"));
        assert!(!is_deliberate_release_fn("unlock"));
        assert!(is_deliberate_release_fn("remove_stale_locks"));
        assert!(is_deliberate_release_fn("deleteAll"));
        assert!(is_deliberate_release_fn("clearLocks"));
        assert!(!is_deliberate_release_fn("clear_lock"));
        assert!(!is_deliberate_release_fn("clearLock"));
        assert!(!is_deliberate_release_fn("remove_lock"));
        assert!(!is_deliberate_release_fn("install"));
        assert!(is_lock_fn("setLock"));
        assert!(is_lock_fn("unlock"));
        assert!(!is_lock_fn("setIfAbsent"));
    }

    #[test]
    fn values() {
        assert_eq!(
            classify_value_words("Uuid::new_v4().to_string()"),
            Some(ValueExpr::Unique)
        );
        assert_eq!(
            classify_value_words("UUID.randomUUID().toString()"),
            Some(ValueExpr::Unique)
        );
        assert!(matches!(
            classify_value_words("Thread.currentThread().getId()"),
            Some(ValueExpr::Weak(_))
        ));
        assert!(matches!(
            classify_value_words("std::process::id()"),
            Some(ValueExpr::Weak(_))
        ));
        assert!(matches!(
            classify_value_words("System.currentTimeMillis()"),
            Some(ValueExpr::Weak(_))
        ));
        assert_eq!(classify_value_words("token"), None);
    }

    #[test]
    fn test_paths() {
        use std::path::Path;
        assert!(is_test_path(Path::new("src/tests/a.rs")));
        assert!(is_test_path(Path::new("x/lock_test.go")));
        assert!(is_test_path(Path::new("LockTest.java")));
        assert!(is_test_path(Path::new("test_lock.py")));
        assert!(is_test_path(Path::new("lock.spec.ts")));
        assert!(!is_test_path(Path::new("src/lock.rs")));
        assert!(!is_test_path(Path::new("src/latest.rs")));
        assert!(is_test_path(Path::new("crates/kitsune-test/src/redis.rs")));
        assert!(is_test_path(Path::new("shop-test-support/src/Lock.java")));
        assert!(is_test_path(Path::new("pkg/test_utils/redis.go")));
        assert!(!is_test_path(Path::new("crates/contest/src/lock.rs")));
        assert!(!is_test_path(Path::new("crates/test-runner/src/lock.rs")));
        assert!(!is_test_path(Path::new("kitsune-test.rs")));
        // folders above the working directory do not count
        let base = Some(Path::new("/home/ci/shop-tests"));
        assert!(!is_test_path_below(
            Path::new("/home/ci/shop-tests/app/lock.py"),
            base
        ));
        assert!(is_test_path_below(
            Path::new("/home/ci/shop-tests/app/tests/lock.py"),
            base
        ));
        assert!(is_test_path_below(
            Path::new("/elsewhere/shop-tests/app/lock.py"),
            base
        ));
    }

    #[test]
    fn test_paths_judged_folder_by_folder_agree() {
        use std::path::Path;
        let paths = [
            "src/tests/a.rs",
            "src/tests/b.rs",
            "src/lock.rs",
            "src/a/b/c.rs",
            "src/a/b/d_test.go",
            "crates/kitsune-test/src/redis.rs",
            "crates/kitsune-test/src/deep/x.rs",
            "crates/contest/src/lock.rs",
            "./pkg/test_utils/redis.go",
            "./pkg/test_utils/inner/redis.go",
            "./pkg/ok/redis.go",
            "a/tests",
            "a/b/..",
            "a/b/.",
            "a/./spec/x.rb",
            "x.py",
            "conftest.py",
            "/",
            "",
            "/home/ci/shop-tests/app/lock.py",
            "/home/ci/shop-tests/app/tests/lock.py",
            "/elsewhere/shop-tests/app/lock.py",
            "/elsewhere/shop-tests/app/sub/lock.py",
            "a//tests//x.py",
            "a//b.py",
            "src/tests/",
            "src/x/",
            "/x.py",
            "./x.py",
            "..",
            "a/b/../lock_Test.java",
            "web/App.TEST.tsx",
            "web/app.spec.",
            "web/app.spe.c",
            "web/.test",
            "lib/Conftest.PY",
            "lib/testing",
            "a/tes/x.py",
            "a/test/x.py",
            "a/testx/y.py",
            "a/test/sub/z.py",
            "a/test//sub/z.py",
            "a/tests/x.py",
            "a/tests-x/y.py",
            "/a/tests/x.py",
            "a/te/st/x.py",
            "lib/x.py",
        ];
        let base = Some(Path::new("/home/ci/shop-tests"));
        let mut judge = TestPaths::default();
        for p in paths.iter().chain(paths.iter().rev()) {
            let p = Path::new(p);
            assert_eq!(
                judge.is_test_path_below(p, base),
                is_test_path_below(p, base),
                "{p:?}"
            );
        }
    }
}
