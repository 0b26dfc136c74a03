//! A tolerant byte scanner for Rust text: skips comments, strings, raw
//! strings and char literals, and reports the code bytes in between. Used
//! for the nesting guard and to split a file syn rejects into items.

use std::ops::Range;

/// Calls `f(position, byte)` for every byte of code outside comments and literals.
fn for_each_code_byte(src: &str, mut f: impl FnMut(usize, u8)) {
    code_bytes_while(src, 0, |i, c| {
        f(i, c);
        true
    });
}

/// Calls `f(position, byte)` for the bytes of code outside comments and
/// literals from `from` (where code, not a literal, starts) until `f`
/// answers false.
fn code_bytes_while(src: &str, from: usize, mut f: impl FnMut(usize, u8) -> bool) {
    let b = src.as_bytes();
    let n = b.len();
    let mut i = from;
    while i < n {
        let c = b[i];
        match c {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < n && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => i = past_block_comment(b, i),
            b'"' => {
                i += 1;
                while i < n && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                i += 1;
            }
            b'r' if !prev_is_ident(b, i) || prefix_of_raw(b, i) => {
                // r"…", r#"…"#, and the `r` of br"…" / cr"…".
                let mut j = i + 1;
                let mut hashes = 0;
                while j < n && b[j] == b'#' {
                    hashes += 1;
                    j += 1;
                }
                if j < n && b[j] == b'"' && (hashes > 0 || b.get(i + 1) == Some(&b'"')) {
                    j += 1;
                    loop {
                        if j >= n {
                            break;
                        }
                        if b[j] == b'"'
                            && b.get(j + 1..j + 1 + hashes)
                                .is_some_and(|t| t.iter().all(|&h| h == b'#'))
                        {
                            j += 1 + hashes;
                            break;
                        }
                        j += 1;
                    }
                    i = j;
                } else {
                    if !f(i, c) {
                        return;
                    }
                    i += 1;
                }
            }
            b'\'' => {
                // A char literal or a lifetime.
                if b.get(i + 1) == Some(&b'\\') {
                    let mut j = i + 2;
                    while j < n && b[j] != b'\'' && b[j] != b'\n' {
                        j += 1;
                    }
                    i = j + 1;
                } else if let Some(ch) = src.get(i + 1..).and_then(|s| s.chars().next()) {
                    let after = i + 1 + ch.len_utf8();
                    if b.get(after) == Some(&b'\'') {
                        i = after + 1;
                    } else {
                        i += 1;
                    }
                } else {
                    i += 1;
                }
            }
            _ => {
                if !f(i, c) {
                    return;
                }
                i += 1;
            }
        }
    }
}

/// Just past the block comment (nested ones within) that opens at `i`
/// with `/*`; the end of `b` when it does not close.
fn past_block_comment(b: &[u8], mut i: usize) -> usize {
    let mut depth = 1usize;
    i += 2;
    while i < b.len() && depth > 0 {
        if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
            depth += 1;
            i += 2;
        } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
            depth -= 1;
            i += 2;
        } else {
            i += 1;
        }
    }
    i
}

fn prev_is_ident(b: &[u8], i: usize) -> bool {
    i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')
}

/// The `r` of `br"…"` or `cr"…"` (preceded by a lone `b`/`c`).
fn prefix_of_raw(b: &[u8], i: usize) -> bool {
    i > 0 && matches!(b[i - 1], b'b' | b'c') && !prev_is_ident(b, i - 1)
}

/// The deepest bracket nesting of the code.
pub fn max_nesting(src: &str) -> usize {
    let mut depth = 0usize;
    let mut max = 0usize;
    for_each_code_byte(src, |_, c| match c {
        b'(' | b'[' | b'{' => {
            depth += 1;
            max = max.max(depth);
        }
        b')' | b']' | b'}' => depth = depth.saturating_sub(1),
        _ => {}
    });
    max
}

/// Where the first `b` of the code stands (outside comments and literals).
pub fn first_code_byte(src: &str, b: u8) -> Option<usize> {
    let mut found = None;
    for_each_code_byte(src, |i, c| {
        if c == b && found.is_none() {
            found = Some(i);
        }
    });
    found
}

/// Just past each `;` of the code in `range` of `src` outside any bracket
/// opened in that range (a block's statements), offsets relative to `src`.
pub fn semicolons_at_level(src: &str, range: Range<usize>) -> Vec<usize> {
    let Some(part) = src.get(range.clone()) else {
        return Vec::new();
    };
    let mut depth = 0usize;
    let mut out = Vec::new();
    for_each_code_byte(part, |i, c| match c {
        b'(' | b'[' | b'{' => depth += 1,
        b')' | b']' | b'}' => depth = depth.saturating_sub(1),
        b';' if depth == 0 => out.push(range.start + i + 1),
        _ => {}
    });
    out
}

/// Just past each `,`, `;` and `=>` of the code in `range` of `src`
/// outside any bracket opened in that range (where a macro body's
/// expressions end), offsets relative to `src`.
pub fn separators_at_level(src: &str, range: Range<usize>) -> Vec<usize> {
    let Some(part) = src.get(range.clone()) else {
        return Vec::new();
    };
    let bytes = part.as_bytes();
    let mut depth = 0usize;
    let mut out = Vec::new();
    for_each_code_byte(part, |i, c| match c {
        b'(' | b'[' | b'{' => depth += 1,
        b')' | b']' | b'}' => depth = depth.saturating_sub(1),
        b',' | b';' if depth == 0 => out.push(range.start + i + 1),
        b'=' if depth == 0 && bytes.get(i + 1) == Some(&b'>') => out.push(range.start + i + 2),
        _ => {}
    });
    out
}

/// How many bytes of `body` (a module's text inside its braces) its inner
/// attributes and inner doc comments take (`#![allow(…)]`, `//! …`),
/// with the plain comments between them; 0 when it opens with neither.
pub fn inner_attributes_len(body: &str) -> usize {
    let b = body.as_bytes();
    let mut end = 0;
    let mut i = 0;
    loop {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        let rest = &body[i..];
        if rest.starts_with("//") && !rest.starts_with("///") || rest.starts_with("////") {
            i += rest.find('\n').unwrap_or(rest.len());
            if rest.starts_with("//!") {
                end = i;
            }
        } else if rest.starts_with("/*!") {
            let Some(e) = rest.find("*/") else {
                return end;
            };
            i += e + 2;
            end = i;
        } else if rest.starts_with("#![") {
            // to the bracket that closes it, past strings
            let mut depth = 0usize;
            let mut j = 2;
            let mut closed = false;
            while j < rest.len() {
                match rest.as_bytes()[j] {
                    b'[' => depth += 1,
                    b']' => {
                        depth -= 1;
                        if depth == 0 {
                            closed = true;
                            break;
                        }
                    }
                    b'"' => {
                        j += 1;
                        while j < rest.len() && rest.as_bytes()[j] != b'"' {
                            if rest.as_bytes()[j] == b'\\' {
                                j += 1;
                            }
                            j += 1;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            if !closed {
                return end;
            }
            i += j + 1;
            end = i;
        } else {
            return end;
        }
    }
}

/// The text with a leading BOM and a shebang line replaced by spaces, so that
/// byte offsets stay those of the original.
pub fn blank_bom_and_shebang(src: &str) -> std::borrow::Cow<'_, str> {
    let bom = src.starts_with('\u{feff}');
    let rest = src.trim_start_matches('\u{feff}').trim_start_matches(' ');
    let shebang = rest.starts_with("#!") && !rest[2..].trim_start().starts_with('[');
    if !bom && !shebang {
        // (nearly every file: no copy of its text)
        return std::borrow::Cow::Borrowed(src);
    }
    let mut out = src.to_string();
    if bom {
        out.replace_range(0..3, "   ");
    }
    let rest = out.trim_start_matches(' ');
    let at = out.len() - rest.len();
    if rest.starts_with("#!") && !rest[2..].trim_start().starts_with('[') {
        let end = out[at..].find('\n').map(|e| at + e).unwrap_or(out.len());
        let blanks = " ".repeat(end - at);
        out.replace_range(at..end, &blanks);
    }
    std::borrow::Cow::Owned(out)
}

/// Splits the whole text into top-level items (brace-balanced; an item ends
/// at a `;` or a closing `}` at depth 0).
pub fn top_level_items(src: &str) -> Vec<Range<usize>> {
    top_level_items_in(src, 0..src.len())
}

/// The same inside `range` of `src` (offsets relative to `src`).
pub fn top_level_items_in(src: &str, range: Range<usize>) -> Vec<Range<usize>> {
    let Some(part) = src.get(range.clone()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    // Braces decide where items end; parentheses and brackets only keep a
    // `;` inside them from ending one, and are forgotten at a closing brace
    // so that one unbalanced `(` does not swallow the rest of the file —
    // unless the outer brace opened inside them and what follows it goes on
    // inside them (`static M: Lazy<T> = Lazy::new(|| { … });`,
    // `#[schema(example = json!({ … }))]`): that one ends no item.
    let bytes = part.as_bytes();
    let mut braces = 0usize;
    let mut parens = 0usize;
    let mut parens_at_open = 0usize;
    let mut start = 0usize;
    let mut ends: Vec<usize> = Vec::new();
    for_each_code_byte(part, |i, c| match c {
        b'{' => {
            if braces == 0 {
                parens_at_open = parens;
            }
            braces += 1;
        }
        b'(' | b'[' => parens += 1,
        b')' | b']' => parens = parens.saturating_sub(1),
        b'}' => {
            braces = braces.saturating_sub(1);
            if braces == 0 {
                let next = bytes[i + 1..].iter().find(|b| !b.is_ascii_whitespace());
                if parens_at_open > 0 && next.is_some_and(|b| b")],.?".contains(b)) {
                    parens = parens_at_open;
                } else {
                    parens = 0;
                    ends.push(i + 1);
                }
            }
        }
        b';' if braces == 0 && parens == 0 => ends.push(i + 1),
        _ => {}
    });
    let mut k = 0;
    while k < ends.len() {
        let mut end = ends[k];
        // `const X: T = T { … };` — keep the `;` that follows a closing brace.
        let mut j = end;
        while j < bytes.len() && bytes[j].is_ascii_whitespace() {
            j += 1;
        }
        if j < bytes.len() && bytes[j] == b';' && ends.get(k + 1) == Some(&(j + 1)) {
            end = j + 1;
            k += 1;
        }
        if end > start {
            out.push(range.start + start..range.start + end);
        }
        start = end;
        k += 1;
    }
    out
}

/// For an `impl`/`trait`/`mod` item text: the owner name and the range inside its braces.
pub fn container_body(piece: &str) -> Option<(Option<String>, Range<usize>)> {
    let open = first_code_byte(piece, b'{')?;
    let close = piece.rfind('}')?;
    if close <= open {
        return None;
    }
    let header = piece.get(..open)?;
    let words: Vec<&str> = header
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    let kw = words
        .iter()
        .position(|w| matches!(*w, "impl" | "trait" | "mod"))?;
    // `impl Trait for Type` names the type; otherwise the first name.
    let owner = if let Some(f) = words.iter().position(|w| *w == "for") {
        words.get(f + 1)
    } else {
        words.get(kw + 1)
    }
    .map(|s| s.to_string());
    Some((owner, open + 1..close))
}

/// Where code resumes at or after `i`: past white space and comments.
pub fn skip_blank(src: &str, mut i: usize) -> usize {
    let b = src.as_bytes();
    loop {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if b.get(i) != Some(&b'/') {
            return i;
        }
        match b.get(i + 1) {
            Some(b'/') => i = src[i..].find('\n').map_or(b.len(), |e| i + e),
            Some(b'*') => i = past_block_comment(b, i),
            _ => return i,
        }
    }
}

/// The identifier (or keyword) that starts at `i`, empty when none does.
fn word_at(src: &str, i: usize) -> &str {
    let rest = src.get(i..).unwrap_or("");
    let len = rest
        .bytes()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == b'_')
        .count();
    &rest[..len]
}

/// Where the bracket that the one at `open` opens is closed.
pub fn closing(src: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut found = None;
    code_bytes_while(src, open, |i, c| {
        match c {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    found = Some(i);
                    return false;
                }
            }
            _ => {}
        }
        true
    });
    found
}

/// The first `{` at or after `from` outside parentheses and brackets: the
/// body of `for … in …`, `while …`, `match …`, `if …` (none when a `;` or
/// an unopened `}` comes first).
fn body_brace(src: &str, from: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut found = None;
    code_bytes_while(src, from, |i, c| match c {
        b'(' | b'[' => {
            depth += 1;
            true
        }
        b')' | b']' => {
            depth = depth.saturating_sub(1);
            true
        }
        b'{' if depth == 0 => {
            found = Some(i);
            false
        }
        b';' | b'}' if depth == 0 => false,
        _ => true,
    });
    found
}

/// What a block-like statement is ([`block_statement`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockKind {
    /// `for`, `while`, `loop`, `unsafe` or a bare block: a body of statements.
    Body,
    /// `match`: a body of arms.
    Match,
    /// `if … else …`: a body of statements, then its `else`s.
    If,
}

/// A statement that is a block-like expression: where its body opens
/// (just past its `{`) and closes (at its `}`; an `if`'s first body),
/// where the statement ends (past its `else`s and a `;` that follows,
/// `semi`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockStmt {
    pub kind: BlockKind,
    pub open: usize,
    pub close: usize,
    pub end: usize,
    pub semi: bool,
}

/// The block-like expression statement of `src` whose first code byte
/// (an outer attribute's `#`, a label's `'` or its keyword) stands at `at`
/// and that ends before `limit`: `for`, `while`, `loop`, `unsafe`,
/// `match`, `if` (with its `else`s) and bare blocks. Such a statement ends
/// at its block (syn and rustc alike), unless a `.` or `?` goes on from
/// it (`unsafe { … }.len()`): none then. A `let` whose value is a `match`
/// or an `if` and nothing more (`let s = match k { … };`) is one too.
pub fn block_statement(src: &str, at: usize, limit: usize) -> Option<BlockStmt> {
    let text = src.get(..limit)?;
    let b = text.as_bytes();
    let mut i = at;
    while b.get(i) == Some(&b'#') && b.get(i + 1) == Some(&b'[') {
        i = skip_blank(text, closing(text, i + 1)? + 1);
    }
    // a `let` of a `match` or an `if`: where its value starts
    let is_let = word_at(text, i) == "let";
    if is_let {
        i = let_value(text, i + 3)?;
    }
    if b.get(i) == Some(&b'\'') {
        let name = word_at(text, i + 1);
        let colon = i + 1 + name.len();
        if name.is_empty() || b.get(colon) != Some(&b':') || b.get(colon + 1) == Some(&b':') {
            return None;
        }
        i = skip_blank(text, colon + 1);
    }
    let word = word_at(text, i);
    let after = skip_blank(text, i + word.len());
    let (kind, open) = match word {
        "" if b.get(i) == Some(&b'{') => (BlockKind::Body, i),
        "loop" | "unsafe" if b.get(after) == Some(&b'{') => (BlockKind::Body, after),
        "for" | "while" => (BlockKind::Body, body_brace(text, after)?),
        "match" => (BlockKind::Match, body_brace(text, after)?),
        "if" => (BlockKind::If, body_brace(text, after)?),
        _ => return None,
    };
    if is_let && !matches!(kind, BlockKind::Match | BlockKind::If) {
        return None;
    }
    let body_close = closing(text, open)?;
    let mut close = body_close;
    if kind == BlockKind::If {
        loop {
            let e = skip_blank(text, close + 1);
            if word_at(text, e) != "else" {
                break;
            }
            let k = skip_blank(text, e + 4);
            let o = if word_at(text, k) == "if" {
                body_brace(text, k + 2)?
            } else if b.get(k) == Some(&b'{') {
                k
            } else {
                return None;
            };
            close = closing(text, o)?;
        }
    }
    let next = skip_blank(text, close + 1);
    let (end, semi) = match b.get(next) {
        Some(b'.' | b'?') => return None,
        Some(b';') => (next + 1, true),
        _ if is_let => return None,
        _ => (close + 1, false),
    };
    Some(BlockStmt {
        kind,
        open: open + 1,
        close: body_close,
        end,
        semi,
    })
}

/// Where the value of the `let` whose pattern starts at `from` starts
/// (past the binding's `=` and blanks).
fn let_value(text: &str, from: usize) -> Option<usize> {
    Some(skip_blank(text, binding_eq(text, from)? + 1))
}

/// The `=` of the binding whose pattern (or name and type) starts at
/// `from`: the first outside brackets before a `;`.
fn binding_eq(text: &str, from: usize) -> Option<usize> {
    let b = text.as_bytes();
    // the `=` of the binding: outside brackets, not part of `==`, `=>`,
    // `<=`, `>=`, `!=` (a pattern's `..=` is not one either)
    let mut depth = 0usize;
    let mut eq = None;
    code_bytes_while(text, from, |i, c| match c {
        b'(' | b'[' | b'{' => {
            depth += 1;
            true
        }
        b')' | b']' | b'}' => {
            if depth == 0 {
                return false;
            }
            depth -= 1;
            true
        }
        b';' if depth == 0 => false,
        b'=' if depth == 0 => {
            let next = b.get(i + 1).copied();
            let prev = i.checked_sub(1).and_then(|p| b.get(p)).copied();
            if matches!(next, Some(b'=' | b'>'))
                || matches!(prev, Some(b'=' | b'<' | b'>' | b'!' | b'.'))
            {
                return true;
            }
            eq = Some(i);
            false
        }
        _ => true,
    });
    eq
}

/// A `const` or `static` item whose value is an array, or a reference to
/// one, of elements separated by commas ([`const_array`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArrayItem {
    /// Just past the array's `[`.
    pub open: usize,
    /// Just past each `,` between its elements.
    pub commas: Vec<usize>,
    /// The value, from just past the `=` to the `;`.
    pub value: Range<usize>,
}

/// The item at `r` of `src` when it is a `const` or `static` (outer
/// attributes and visibility before it) whose whole value is `[…]` or
/// `&[…]` of elements separated by commas (not `[x; n]`), nothing after
/// the `;` but blanks: a table, which can be read a run of its elements
/// at a time.
pub fn const_array(src: &str, r: Range<usize>) -> Option<ArrayItem> {
    let text = src.get(..r.end)?;
    let b = text.as_bytes();
    let mut i = skip_blank(text, r.start);
    while b.get(i) == Some(&b'#') {
        i = skip_blank(text, closing(text, i + 1)? + 1);
    }
    if word_at(text, i) == "pub" {
        i = skip_blank(text, i + 3);
        if b.get(i) == Some(&b'(') {
            i = skip_blank(text, closing(text, i)? + 1);
        }
    }
    match word_at(text, i) {
        "const" => i += 5,
        "static" => i += 6,
        _ => return None,
    }
    let eq = binding_eq(text, i)?;
    let mut v = skip_blank(text, eq + 1);
    if b.get(v) == Some(&b'&') {
        v = skip_blank(text, v + 1);
    }
    if b.get(v) != Some(&b'[') {
        return None;
    }
    let close = closing(text, v)?;
    let semi = skip_blank(text, close + 1);
    if b.get(semi) != Some(&b';') || skip_blank(text, semi + 1) < r.end {
        return None;
    }
    let body = v + 1..close;
    let mut depth = 0usize;
    let mut commas = Vec::new();
    let mut repeat = false;
    for_each_code_byte(text.get(body.clone())?, |k, c| match c {
        b'(' | b'[' | b'{' => depth += 1,
        b')' | b']' | b'}' => depth = depth.saturating_sub(1),
        b',' if depth == 0 => commas.push(body.start + k + 1),
        b';' if depth == 0 => repeat = true,
        _ => {}
    });
    (!repeat && !commas.is_empty()).then_some(ArrayItem {
        open: v + 1,
        commas,
        value: eq + 1..semi,
    })
}

/// A statement that is one long builder chain of a single method
/// ([`chain_statement`]): where each call of it starts (its `.`) and
/// where the statement ends (past its `;`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainStmt {
    /// Where the receiver the calls are chained on starts.
    pub head: usize,
    pub links: Vec<usize>,
    pub end: usize,
}

/// Methods whose calls the Rust front-end reads as Redis commands, as
/// steps of a command, pipeline or script, or as tests of a result: a
/// chain of one of them is never cut ([`chain_statement`]).
const CHAIN_KEPT: &[&str] = &[
    "arg",
    "atomic",
    "cmd",
    "decr",
    "del",
    "eval",
    "evalsha",
    "exec",
    "exists",
    "expire",
    "fcall",
    "get",
    "getdel",
    "getset",
    "hset_nx",
    "hsetnx",
    "ignore",
    "incr",
    "invoke",
    "invoke_async",
    "key",
    "multi",
    "or",
    "or_else",
    "pexpire",
    "pipe",
    "prepare_invoke",
    "psetex",
    "query",
    "query_async",
    "set",
    "set_ex",
    "set_nx",
    "set_options",
    "setex",
    "setnx",
    "unlink",
    "unwrap_or",
    "unwrap_or_else",
    "watch",
];

/// The statement at `at` (before `limit`) when it is a builder chain of
/// one method called again and again on a plain receiver:
/// `[let PAT =] [place =] head .m(…) .m(…) … ;`, where `head` is a name
/// or path (`router`, `self.app`) or a call of one without arguments
/// (`Router::new()`), every call of the chain is of the same method `m`
/// (not one the front-end reads: [`CHAIN_KEPT`]) and nothing else
/// follows but the `;` (no `?`, no `.await`, no field). Such a
/// statement can be cut between its calls: each part read on the same
/// head is a call of `m` like any other (an axum router of 170
/// `.route(…)` calls in one statement was a third of its file's peak).
pub fn chain_statement(src: &str, at: usize, limit: usize) -> Option<ChainStmt> {
    let text = src.get(..limit)?;
    let b = text.as_bytes();
    let mut i = at;
    if word_at(text, i) == "let" {
        i = let_value(text, i + 3)?;
    } else {
        // a place assigned (`router = …`, `self.app = …`)
        let place_end = skip_path(text, i)?;
        let eq = skip_blank(text, place_end);
        if b.get(eq) == Some(&b'=') && !matches!(b.get(eq + 1), Some(b'=' | b'>')) {
            i = skip_blank(text, eq + 1);
        }
    }
    // the head: a path, then at most an empty `()`
    let head = i;
    let mut k = skip_path(text, i)?;
    let after = skip_blank(text, k);
    if b.get(after) == Some(&b'(') {
        let close = closing(text, after)?;
        if skip_blank(text, after + 1) != close {
            return None;
        }
        k = close + 1;
    }
    let mut links = Vec::new();
    let mut method: Option<&str> = None;
    loop {
        let d = skip_blank(text, k);
        match b.get(d) {
            Some(b';') => {
                let name = method?;
                return (links.len() >= 2 && !CHAIN_KEPT.contains(&name)).then_some(ChainStmt {
                    head,
                    links,
                    end: d + 1,
                });
            }
            Some(b'.') => {
                let n = skip_blank(text, d + 1);
                let name = word_at(text, n);
                if name.is_empty() || method.is_some_and(|m| m != name) {
                    return None;
                }
                method = Some(name);
                let open = skip_blank(text, n + name.len());
                if b.get(open) != Some(&b'(') {
                    return None;
                }
                links.push(d);
                k = closing(text, open)? + 1;
            }
            _ => return None,
        }
    }
}

/// Past the path that starts at `i` (`a`, `a::b`, `self.a.b`): its
/// names joined by `::` or by a `.` not followed by a call; `None` when
/// no name starts there.
fn skip_path(text: &str, i: usize) -> Option<usize> {
    let b = text.as_bytes();
    let first = word_at(text, i);
    if first.is_empty() || first.as_bytes()[0].is_ascii_digit() || first == "let" {
        return None;
    }
    let mut end = i + first.len();
    loop {
        let d = skip_blank(text, end);
        let sep = match b.get(d..d + 2) {
            Some(b"::") => 2,
            _ if b.get(d) == Some(&b'.') => 1,
            _ => return Some(end),
        };
        let n = skip_blank(text, d + sep);
        let name = word_at(text, n);
        if name.is_empty() {
            return Some(end);
        }
        // (a `.name(` is the chain's first call, not part of the path)
        if sep == 1 && b.get(skip_blank(text, n + name.len())) == Some(&b'(') {
            return Some(end);
        }
        end = n + name.len();
    }
}

/// Just past each arm of the `match` body at `range` of `src`: after a
/// `,` outside any bracket, and after the `}` of an arm whose body is a
/// block with no comma after it (`Some(x) => { … }`). An arm whose body
/// is another block-like expression (`A => match y { … }`) with no comma
/// goes with the next: a cut missed, never a wrong one.
pub fn arm_ends(src: &str, range: Range<usize>) -> Vec<usize> {
    let Some(part) = src.get(range.clone()) else {
        return Vec::new();
    };
    let bytes = part.as_bytes();
    let mut depth = 0usize;
    let mut out = Vec::new();
    // just past `=>`, before the arm's body; inside a block body; the end
    // of a block body not yet known to be the arm's
    let (mut arrow, mut block_arm, mut pending) = (false, false, None);
    for_each_code_byte(part, |i, c| {
        if c.is_ascii_whitespace() {
            return;
        }
        if let Some(p) = pending.take() {
            if c == b',' {
                out.push(range.start + i + 1);
                return;
            }
            if c != b'.' && c != b'?' {
                out.push(range.start + p);
            }
        }
        match c {
            b'=' if depth == 0 && bytes.get(i + 1) == Some(&b'>') => {
                arrow = true;
                return;
            }
            b'>' if arrow && i > 0 && bytes[i - 1] == b'=' => return,
            b'{' if depth == 0 && arrow => {
                block_arm = true;
                depth += 1;
            }
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 && c == b'}' && block_arm {
                    block_arm = false;
                    pending = Some(i + 1);
                }
            }
            b',' if depth == 0 => out.push(range.start + i + 1),
            _ => {}
        }
        arrow = false;
    });
    out
}
