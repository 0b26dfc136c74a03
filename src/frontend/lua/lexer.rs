//! A small Lua lexer: names, numbers, strings (short and long brackets, with
//! escapes decoded), operators; comments and whitespace are dropped. It never
//! fails: whatever it cannot read sets [`Lexed::partial`] and is skipped.

/// What a token is. Names include keywords; the analyser compares text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Name,
    Num,
    /// A string literal; its decoded text is `Lexed::strings[str_index]`.
    Str,
    Sym,
}

/// One token. Offsets are `u32` to keep the token vector small (files are
/// capped far below 4 GiB by the engine); `start` always stands on an ASCII
/// byte, and so does `end` unless it is the end of the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tok {
    pub kind: Kind,
    pub start: u32,
    pub end: u32,
    /// Index into `Lexed::strings` for `Kind::Str`.
    pub str_index: u32,
}

#[derive(Debug, Default)]
pub struct Lexed {
    pub toks: Vec<Tok>,
    pub strings: Vec<String>,
    /// Something was not understood (unterminated string or comment, a stray byte).
    pub partial: bool,
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

/// Lexes `text`. Texts longer than `u32::MAX` bytes are cut there (and
/// marked partial).
pub fn lex(text: &str) -> Lexed {
    let mut out = Lexed::default();
    let b = text.as_bytes();
    let n = if b.len() > u32::MAX as usize {
        out.partial = true;
        u32::MAX as usize
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
                out.push(Kind::Name, start, i, 0);
            }
            b'0'..=b'9' => i = number(b, i, n, &mut out),
            b'.' if b.get(i + 1).is_some_and(u8::is_ascii_digit) => i = number(b, i, n, &mut out),
            b'\'' | b'"' => i = short_string(b, i, n, &mut out),
            b'[' if long_open(b, i).is_some() => {
                let level = long_open(b, i).unwrap_or(0);
                let body = i + level + 2;
                let (end, body_end) = match long_close(b, body, level, n) {
                    Some(end) => (end, end - level - 2),
                    None => {
                        out.partial = true;
                        (n, n)
                    }
                };
                // A newline right after the opening bracket is not part of the string.
                let mut s = body;
                if s < body_end && b[s] == b'\r' {
                    s += 1;
                }
                if s < body_end && b[s] == b'\n' {
                    s += 1;
                }
                let value = String::from_utf8_lossy(&b[s.min(body_end)..body_end]).into_owned();
                let idx = out.strings.len() as u32;
                out.strings.push(value);
                out.push(Kind::Str, i, end, idx);
                i = end;
            }
            _ => {
                let len = sym_len(b, i, n);
                if len > 1 {
                    out.push(Kind::Sym, i, i + len, 0);
                    i += len;
                } else if SINGLE_SYMS.contains(&c) {
                    out.push(Kind::Sym, i, i + 1, 0);
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
    out.strings.shrink_to_fit();
    out
}

impl Lexed {
    fn push(&mut self, kind: Kind, start: usize, end: usize, str_index: u32) {
        self.toks.push(Tok {
            kind,
            start: start as u32,
            end: end as u32,
            str_index,
        });
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
    out.push(Kind::Num, start, i, 0);
    i
}

/// A `'…'` or `"…"` string with Lua escapes. An unterminated string ends at
/// the end of the line (partial).
fn short_string(b: &[u8], start: usize, n: usize, out: &mut Lexed) -> usize {
    let quote = b[start];
    let mut i = start + 1;
    let mut value: Vec<u8> = Vec::new();
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
            let run_end = b[i..n]
                .iter()
                .position(|&x| x == quote || x == b'\\' || x == b'\n' || x == b'\r')
                .map_or(n, |p| i + p);
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
    let idx = out.strings.len() as u32;
    out.strings
        .push(String::from_utf8_lossy(&value).into_owned());
    out.push(Kind::Str, start, i, idx);
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<(Kind, String)> {
        let l = lex(src);
        l.toks
            .iter()
            .map(|t| {
                let text = if t.kind == Kind::Str {
                    l.strings[t.str_index as usize].clone()
                } else {
                    src[t.start as usize..t.end as usize].to_string()
                };
                (t.kind, text)
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
