//! A small Lua lexer: names, numbers, strings (short and long brackets, with
//! escapes decoded), operators; comments and whitespace are dropped. It never
//! fails: whatever it cannot read sets [`Lexed::partial`] and is skipped.
//!
//! A string literal's value is read from the text itself (see [`str_value`]);
//! only the short strings with an escape keep a decoded copy, in
//! [`Lexed::decoded`].

/// What a token is. Names include keywords; the analyser compares text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Name,
    Num,
    /// A string literal; its value is [`str_value`].
    Str,
    Sym,
}

/// Longest text lexed (1 GiB − 1): a token's end and kind share one `u32`.
/// Longer texts (never met: files are capped far below) are cut there and
/// marked partial.
const MAX_TEXT: usize = (1 << 30) - 1;

/// One token: its byte range, kind in the top two bits of the end, in 8
/// bytes (a script of calls has a token for every 2.4 bytes of text).
/// `start` always stands on an ASCII byte, and so does `end` unless it is
/// the end of the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tok {
    pub start: u32,
    end_kind: u32,
}

impl Tok {
    fn new(kind: Kind, start: usize, end: usize) -> Self {
        Tok {
            start: start as u32,
            end_kind: (end as u32 & MAX_TEXT as u32) | (kind as u32) << 30,
        }
    }

    pub fn end(self) -> u32 {
        self.end_kind & MAX_TEXT as u32
    }

    pub fn kind(self) -> Kind {
        match self.end_kind >> 30 {
            0 => Kind::Name,
            1 => Kind::Num,
            2 => Kind::Str,
            _ => Kind::Sym,
        }
    }
}

#[derive(Debug, Default)]
pub struct Lexed {
    pub toks: Vec<Tok>,
    /// The decoded value of each short string that holds an escape, by its
    /// token index (ascending); every other string's value is its text.
    pub decoded: Vec<(u32, String)>,
    /// Something was not understood (unterminated string or comment, a stray byte).
    pub partial: bool,
}

/// The value of the string literal `toks[i]` of `src` (as lexed by
/// [`lex`]): its decoded copy if it has one, else the text between its
/// quotes or long brackets (after the newline that may follow the opening
/// bracket). `None` when `toks[i]` is not a string.
pub fn str_value<'a>(
    src: &'a str,
    toks: &[Tok],
    decoded: &'a [(u32, String)],
    i: usize,
) -> Option<&'a str> {
    let t = *toks.get(i)?;
    if t.kind() != Kind::Str {
        return None;
    }
    if !decoded.is_empty() {
        if let Ok(k) = decoded.binary_search_by_key(&(i as u32), |d| d.0) {
            return Some(&decoded[k].1);
        }
    }
    let b = src.as_bytes();
    let (s, e) = (t.start as usize, t.end() as usize);
    let (from, to) = match b.get(s) {
        Some(&q @ (b'\'' | b'"')) => {
            let closed = e >= s + 2 && b.get(e - 1) == Some(&q);
            (s + 1, if closed { e - 1 } else { e })
        }
        _ => {
            let level = long_open(b, s).unwrap_or(0);
            let body = s + level + 2;
            // closed when the text ends with the closing bracket of the
            // level (an unclosed string runs to the end of the text, and
            // holds none)
            let closed = e >= body + level + 2
                && b.get(e - level - 2) == Some(&b']')
                && b.get(e - 1) == Some(&b']')
                && b.get(e - level - 1..e - 1)
                    .is_some_and(|x| x.iter().all(|&c| c == b'='));
            let body_end = if closed { e - level - 2 } else { e };
            // A newline right after the opening bracket is not part of the string.
            let mut from = body;
            if from < body_end && b.get(from) == Some(&b'\r') {
                from += 1;
            }
            if from < body_end && b.get(from) == Some(&b'\n') {
                from += 1;
            }
            (from.min(body_end), body_end)
        }
    };
    Some(src.get(from..to).unwrap_or(""))
}

/// Length of the multi-byte operator at `i` (`...`, `..`, `==`, `~=`,
/// `<=`, `>=`, `<<`, `>>`, `//`, `::`), or 1.
fn sym_len(b: &[u8], i: usize, n: usize) -> usize {
    let next = if i + 1 < n { b[i + 1] } else { 0 };
    match (b[i], next) {
        (b'.', b'.') => {
            if i + 2 < n && b[i + 2] == b'.' {
                3
            } else {
                2
            }
        }
        (b'=' | b'~' | b'<' | b'>', b'=')
        | (b'<', b'<')
        | (b'>', b'>')
        | (b'/', b'/')
        | (b':', b':') => 2,
        _ => 1,
    }
}
const SINGLE_SYMS: &[u8] = b"+-*/%^#&~|<>=(){}[];:,.";

/// Lexes `text`. Texts longer than [`MAX_TEXT`] bytes are cut there (and
/// marked partial).
pub fn lex(text: &str) -> Lexed {
    let mut out = Lexed::default();
    let b = text.as_bytes();
    let n = if b.len() > MAX_TEXT {
        out.partial = true;
        MAX_TEXT
    } else {
        b.len()
    };
    out.toks.reserve(n / 4);
    let mut i = 0usize;
    while i < n {
        let c = b[i];
        match c {
            b' ' | b'\t' | b'\r' | b'\n' | 0x0b | 0x0c => i += 1,
            b'-' if b.get(i + 1) == Some(&b'-') => {
                i += 2;
                if let Some(level) = long_open(b, i) {
                    match long_close(b, i + level + 2, level, n) {
                        Some(end) => i = end,
                        None => {
                            out.partial = true;
                            i = n;
                        }
                    }
                } else {
                    i = memchr::memchr(b'\n', &b[i..n]).map_or(n, |p| i + p);
                }
            }
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                let start = i;
                while i < n && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                out.push(Kind::Name, start, i);
            }
            b'0'..=b'9' => i = number(b, i, n, &mut out),
            b'.' if b.get(i + 1).is_some_and(u8::is_ascii_digit) => i = number(b, i, n, &mut out),
            b'\'' | b'"' => i = short_string(b, i, n, &mut out),
            b'[' if long_open(b, i).is_some() => {
                let level = long_open(b, i).unwrap_or(0);
                let end = match long_close(b, i + level + 2, level, n) {
                    Some(end) => end,
                    None => {
                        out.partial = true;
                        n
                    }
                };
                out.push(Kind::Str, i, end);
                i = end;
            }
            _ => {
                let len = sym_len(b, i, n);
                if len > 1 {
                    out.push(Kind::Sym, i, i + len);
                    i += len;
                } else if SINGLE_SYMS.contains(&c) {
                    out.push(Kind::Sym, i, i + 1);
                    i += 1;
                } else {
                    // A stray byte (`!`, `$`, `@`, a non-ASCII character, …):
                    // skip the whole character.
                    out.partial = true;
                    i += 1;
                    while i < n && (b[i] & 0xC0) == 0x80 {
                        i += 1;
                    }
                }
            }
        }
    }
    // the tokens stand through the analysis: no room left from their
    // growth (a 654 kB script of calls held 1 MB of it)
    out.toks.shrink_to_fit();
    out.decoded.shrink_to_fit();
    out
}

impl Lexed {
    fn push(&mut self, kind: Kind, start: usize, end: usize) {
        self.toks.push(Tok::new(kind, start, end));
    }
}

/// `[[`, `[=[`, `[==[` … at `i`: the level (number of `=`).
fn long_open(b: &[u8], i: usize) -> Option<usize> {
    if b.get(i) != Some(&b'[') {
        return None;
    }
    let mut j = i + 1;
    while b.get(j) == Some(&b'=') {
        j += 1;
    }
    (b.get(j) == Some(&b'[')).then_some(j - i - 1)
}

/// The offset just past the closing `]=*]` of the given level, searching from `from`.
fn long_close(b: &[u8], from: usize, level: usize, n: usize) -> Option<usize> {
    let mut i = from;
    while i < n {
        let p = memchr::memchr(b']', &b[i..n])? + i;
        let mut j = p + 1;
        while j < n && b[j] == b'=' {
            j += 1;
        }
        if j < n && b[j] == b']' && j - p - 1 == level {
            return Some(j + 1);
        }
        // Resume at the next `]` (it may start the real closing bracket).
        i = if j > p + 1 { j } else { p + 1 };
    }
    None
}

fn number(b: &[u8], start: usize, n: usize, out: &mut Lexed) -> usize {
    let mut i = start;
    let hex = b[i] == b'0' && matches!(b.get(i + 1), Some(b'x' | b'X'));
    while i < n {
        let c = b[i];
        let exp = if hex {
            matches!(c, b'p' | b'P')
        } else {
            matches!(c, b'e' | b'E')
        };
        if c.is_ascii_alphanumeric() || c == b'.' || c == b'_' {
            i += 1;
            if exp && i < n && matches!(b[i], b'+' | b'-') {
                i += 1;
            }
        } else {
            break;
        }
    }
    out.push(Kind::Num, start, i);
    i
}

/// A `'…'` or `"…"` string with Lua escapes. An unterminated string ends at
/// the end of the line (partial). Only a string with an escape keeps a
/// decoded copy.
fn short_string(b: &[u8], start: usize, n: usize, out: &mut Lexed) -> usize {
    let quote = b[start];
    let stop = |x: u8| x == quote || x == b'\\' || x == b'\n' || x == b'\r';
    let mut i = start + 1;
    // The run of plain bytes up to the closing quote, an escape or the line end.
    i = b[i..n].iter().position(|&x| stop(x)).map_or(n, |p| i + p);
    if i == n || b[i] != b'\\' {
        // No escape: the value is the text itself.
        let closed = i < n && b[i] == quote;
        if closed {
            i += 1;
        } else {
            out.partial = true;
        }
        out.push(Kind::Str, start, i);
        return i;
    }
    let mut value: Vec<u8> = b[start + 1..i].to_vec();
    let mut closed = false;
    while i < n {
        let c = b[i];
        if c == quote {
            i += 1;
            closed = true;
            break;
        }
        if c == b'\n' || c == b'\r' {
            break;
        }
        if c != b'\\' {
            // Copy a run of plain bytes at once.
            let run_end = b[i..n].iter().position(|&x| stop(x)).map_or(n, |p| i + p);
            value.extend_from_slice(&b[i..run_end]);
            i = run_end;
            continue;
        }
        i += 1;
        let Some(&e) = b.get(i).filter(|_| i < n) else {
            break;
        };
        i += 1;
        match e {
            b'n' => value.push(b'\n'),
            b't' => value.push(b'\t'),
            b'r' => value.push(b'\r'),
            b'a' => value.push(7),
            b'b' => value.push(8),
            b'f' => value.push(12),
            b'v' => value.push(11),
            b'\\' | b'"' | b'\'' => value.push(e),
            b'\n' | b'\r' => {
                value.push(b'\n');
                if i < n && (b[i] == b'\n' || b[i] == b'\r') && b[i] != e {
                    i += 1;
                }
            }
            b'z' => {
                while i < n && b[i].is_ascii_whitespace() {
                    i += 1;
                }
            }
            b'x' => {
                let mut v: u32 = 0;
                let mut k = 0;
                while k < 2 && i < n && b[i].is_ascii_hexdigit() {
                    v = v * 16 + (b[i] as char).to_digit(16).unwrap_or(0);
                    i += 1;
                    k += 1;
                }
                value.push(v as u8);
            }
            b'0'..=b'9' => {
                let mut v: u32 = (e - b'0') as u32;
                let mut k = 1;
                while k < 3 && i < n && b[i].is_ascii_digit() {
                    v = v * 10 + (b[i] - b'0') as u32;
                    i += 1;
                    k += 1;
                }
                value.push(v.min(255) as u8);
            }
            b'u' if i < n && b[i] == b'{' => {
                i += 1;
                let mut v: u32 = 0;
                while i < n && b[i].is_ascii_hexdigit() {
                    v = v.saturating_mul(16) + (b[i] as char).to_digit(16).unwrap_or(0);
                    i += 1;
                }
                if i < n && b[i] == b'}' {
                    i += 1;
                }
                let ch = char::from_u32(v).unwrap_or('\u{fffd}');
                let mut buf = [0u8; 4];
                value.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
            }
            _ => {
                // Unknown escape: keep it as written (and step back over a
                // non-ASCII byte so offsets stay on char boundaries).
                value.push(b'\\');
                i -= 1;
            }
        }
    }
    if !closed {
        out.partial = true;
    }
    let index = out.toks.len() as u32;
    out.decoded
        .push((index, String::from_utf8_lossy(&value).into_owned()));
    out.push(Kind::Str, start, i);
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<(Kind, String)> {
        let l = lex(src);
        l.toks
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let text = match str_value(src, &l.toks, &l.decoded, i) {
                    Some(v) => v.to_string(),
                    None => src[t.start as usize..t.end() as usize].to_string(),
                };
                (t.kind(), text)
            })
            .collect()
    }

    #[test]
    fn names_strings_numbers_symbols() {
        let k = kinds("local x = redis.call('GET', KEYS[1]) ~= \"a\\tb\" .. 0x1F + 1e-3");
        let texts: Vec<&str> = k.iter().map(|(_, s)| s.as_str()).collect();
        assert_eq!(
            texts,
            vec![
                "local", "x", "=", "redis", ".", "call", "(", "GET", ",", "KEYS", "[", "1", "]",
                ")", "~=", "a\tb", "..", "0x1F", "+", "1e-3"
            ]
        );
    }

    #[test]
    fn comments_are_dropped() {
        let k = kinds(
            "-- redis.call('del', KEYS[1])\nx --[[ redis.call('del')\n ]] y --[==[ ]] ]==] z",
        );
        let texts: Vec<&str> = k.iter().map(|(_, s)| s.as_str()).collect();
        assert_eq!(texts, vec!["x", "y", "z"]);
    }

    #[test]
    fn long_strings() {
        let k = kinds("a = [[\nline]] b = [==[x]]y]==]");
        assert_eq!(k[2], (Kind::Str, "line".into()));
        assert_eq!(k[5], (Kind::Str, "x]]y".into()));
    }

    #[test]
    fn broken_input_is_partial_not_a_panic() {
        for src in ["'abc", "--[[ never", "[[ never", "x ! y", "é'\\", "\"\\"] {
            let l = lex(src);
            assert!(l.partial, "{src}");
        }
        assert_eq!(kinds("'\\u{ffffffff}\\x4'")[0].1, "\u{fffd}\u{4}");
    }
}
