//! Minified JavaScript and TypeScript (issue 9): vendored bundles
//! (`echarts.min.js`, a Vite `assets/index-3f2a.js`, `swagger-ui-bundle.js`)
//! that a folder walk meets beside the project's own code. They are machine
//! output, hold nothing a developer wrote or can fix, and cost most of a
//! scan of real code (one bundle of a few megabytes takes longer than a
//! thousand ordinary files), so a walked one is skipped with a note
//! (`engine`); a file named on the command line, or any file with
//! `include-minified`, is scanned in full.
//!
//! The test reads only properties of the bytes, in one linear pass (the
//! line breaks, found with `memchr`), and is built never to take a file a
//! person wrote:
//! - only JavaScript and TypeScript: in the other languages, files with
//!   very long lines are hand-written code holding data (a migration with
//!   a long SQL string, a test with a JSON literal, a prompt text) or
//!   generated code of ordinary shape, and cheap to scan;
//! - only a file of [`MIN_BYTES`] or more: a small file costs little
//!   whatever its shape;
//! - by its shape: at least half of its bytes sit on long lines of code
//!   (longer than [`LONG_LINE`] bytes, with at least one `(` per
//!   [`CODE_BYTES_PER_PAREN`] bytes: minified code calls and declares
//!   functions every few dozen bytes, while a long line of data — an
//!   inline SVG path or image, a JSON text, an icon set — has next to no
//!   parentheses), and less than a twentieth on ordinary lines (at most
//!   [`ORDINARY_LINE`] bytes). So hand-written code beside a data line of
//!   any length is scanned, and so is code with a few long lines among
//!   ordinary ones; a bundle keeps at most a licence comment on short
//!   lines;
//! - or by its name: `*.min.js` (and the other extensions), the
//!   convention minifiers write to.

use crate::facts::Language;
use std::path::Path;

/// Files smaller than this are never taken for minified.
pub const MIN_BYTES: usize = 32 * 1024;

/// A line longer than this many bytes (its line break aside) is long.
pub const LONG_LINE: usize = 1000;

/// A line of at most this many bytes is an ordinary line of code.
pub const ORDINARY_LINE: usize = 200;

/// A long line is code (not data) when it holds at least one `(` per this
/// many bytes. Minified bundles of real repositories hold one per 30–120
/// bytes; long data lines (SVG paths, base64 images, JSON texts) one per
/// 2,000 bytes or none.
pub const CODE_BYTES_PER_PAREN: usize = 256;

/// Why a file is taken for minified (the text of its note).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Why {
    /// At least half of its bytes on long lines of code, few on ordinary
    /// ones.
    Shape {
        /// Its size in bytes.
        bytes: usize,
        /// How many of them sit on lines of code over [`LONG_LINE`] bytes.
        on_long_lines: usize,
    },
    /// Named `*.min.<ext>`.
    Name,
    /// Not minified but generated ([`crate::generated`]): skipped or
    /// scanned by the `include-generated` setting, not `include-minified`.
    Generated(crate::generated::Marker),
}

impl Why {
    /// The note for a skipped file.
    pub fn note(&self) -> String {
        let what = match *self {
            Why::Shape {
                bytes,
                on_long_lines,
            } => format!(
                "{}% of its {bytes} bytes are on lines of code over {LONG_LINE} bytes",
                on_long_lines * 100 / bytes.max(1)
            ),
            Why::Name => "named `*.min.*`".to_string(),
            Why::Generated(m) => {
                return format!(
                    "skipped as generated ({}); `--include-generated` scans it",
                    m.says()
                )
            }
        };
        format!("skipped as minified ({what}); `--include-minified` scans it")
    }

    /// The file is generated, not minified.
    pub fn is_generated(&self) -> bool {
        matches!(self, Why::Generated(_))
    }
}

/// A minified file of more bytes than this that is scanned (named, or
/// `include-minified`) is read in reduced mode ([`REDUCED_NOTE`]): every
/// op of its own read and checked, its calls of other functions not
/// recorded for the project link ([`crate::frontend::CallSites::Skip`]).
/// A bundle's call sites are the largest of its facts (a call every ten
/// bytes); without them a vendor bundle of hundreds of kilobytes is read
/// in under ten bytes of memory a source byte, with them in up to twelve.
/// A smaller bundle (an application's own code, whose calls of the
/// project's wrappers are worth following) is read in full.
pub const REDUCED_BYTES: usize = 256 * 1024;

/// The note (`-v`) of a minified file read in reduced mode.
pub const REDUCED_NOTE: &str = "minified and over 256 KiB: scanned in reduced mode (its own Redis calls are all checked; its calls of other functions are not followed through the project)";

/// Whether a file is machine output a folder walk skips: minified
/// ([`detect`]) or else generated ([`crate::generated::detect`]). A file
/// that is both is minified: the `include-minified` setting alone decides.
pub fn machine_written(path: &Path, language: Language, bytes: &[u8]) -> Option<Why> {
    detect(path, language, bytes)
        .or_else(|| crate::generated::detect(language, bytes).map(Why::Generated))
}

/// Whether `bytes`, the content of `path` in `language`, are minified
/// JavaScript or TypeScript, and why; `None` for every other file.
pub fn detect(path: &Path, language: Language, bytes: &[u8]) -> Option<Why> {
    if !matches!(language, Language::JavaScript | Language::TypeScript) || bytes.len() < MIN_BYTES {
        return None;
    }
    // the shape first: its note says more than the name
    match shape(bytes) {
        Some(on_long_lines) => Some(Why::Shape {
            bytes: bytes.len(),
            on_long_lines,
        }),
        None => min_name(path).then_some(Why::Name),
    }
}

/// The shape test of [`detect`] alone (whatever the size, language and
/// name): the bytes on long lines of code when they are at least half of
/// the file and less than a twentieth of it is on ordinary lines.
pub fn shape(bytes: &[u8]) -> Option<usize> {
    let (on_long_lines, on_ordinary_lines) = line_shares(bytes);
    (on_long_lines * 2 >= bytes.len() && on_ordinary_lines * 20 < bytes.len())
        .then_some(on_long_lines)
}

/// The bytes on lines of code longer than [`LONG_LINE`] and on lines of
/// at most [`ORDINARY_LINE`] (line breaks counted with their line; one
/// pass over the line breaks, and one over the long lines' bytes).
fn line_shares(bytes: &[u8]) -> (usize, usize) {
    let (mut long, mut ordinary) = (0usize, 0usize);
    let mut start = 0usize;
    let ends = memchr::memchr_iter(b'\n', bytes).chain(std::iter::once(bytes.len()));
    for end in ends {
        let len = end - start;
        if len > LONG_LINE {
            // (a plain count the compiler vectorises)
            let parens = bytes[start..end].iter().filter(|&&b| b == b'(').count();
            if parens * CODE_BYTES_PER_PAREN >= len {
                long += len;
            }
        } else if len <= ORDINARY_LINE {
            ordinary += len + usize::from(end < bytes.len());
        }
        start = end + 1;
    }
    (long, ordinary)
}

/// `name.min.js`, `name.min.mjs`, …: the extension follows a `.min` part.
fn min_name(path: &Path) -> bool {
    path.file_stem()
        .and_then(|s| s.to_str())
        .is_some_and(|stem| {
            stem.len() > 4 && {
                let tail = &stem.as_bytes()[stem.len() - 4..];
                tail.eq_ignore_ascii_case(b".min")
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn js(path: &str, text: &str) -> Option<Why> {
        detect(Path::new(path), Language::JavaScript, text.as_bytes())
    }

    /// A bundle: a licence comment, then one line of dense code.
    fn bundle(size: usize) -> String {
        let mut s = String::from("/*! lib v1.0 | MIT */\n");
        while s.len() < size {
            s.push_str("function a(b,c){return b.set(c,1,\"NX\")}var d=a(e,f);");
        }
        s.push('\n');
        s
    }

    #[test]
    fn a_bundle_is_minified_by_its_shape() {
        let text = bundle(64 * 1024);
        match js("lib/app.js", &text) {
            Some(Why::Shape {
                bytes,
                on_long_lines,
            }) => {
                assert_eq!(bytes, text.len());
                assert!(on_long_lines > bytes * 9 / 10);
            }
            other => panic!("{other:?}"),
        }
        // the same in TypeScript; another language never
        assert!(detect(Path::new("a.ts"), Language::TypeScript, text.as_bytes()).is_some());
        for lang in [
            Language::Python,
            Language::Java,
            Language::Rust,
            Language::Php,
        ] {
            assert_eq!(detect(Path::new("a.x"), lang, text.as_bytes()), None);
        }
    }

    #[test]
    fn a_small_file_is_never_minified() {
        let text = bundle(MIN_BYTES - 200);
        assert!(text.len() < MIN_BYTES);
        assert_eq!(js("app.js", &text), None);
        assert_eq!(js("app.min.js", &text), None);
    }

    #[test]
    fn hand_written_code_with_a_long_data_line_is_not_minified() {
        // 40 KB of data on one line, and 3 KB of code around it: more than
        // a twentieth of the file on ordinary lines
        let mut text = String::from("const ICON = \"");
        text.push_str(&"M0 0h24v24H0z ".repeat(40_000 / 14));
        text.push_str("\";\n");
        for i in 0..100 {
            text.push_str(&format!(
                "  await redis.set(`lock:${{id}}`, token{i}, 'NX');\n"
            ));
        }
        assert!(text.len() > MIN_BYTES);
        assert_eq!(js("icons.js", &text), None);
        // a few lines of code beside 60 KB of data: the data line is no
        // line of code
        let mut text = String::from("const LOGO = \"data:image/png;base64,");
        text.push_str(
            &"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk".repeat(1_000),
        );
        text.push_str("\";\nasync function release(id) {\n  await redis.del(`lock:${id}`);\n}\n");
        assert_eq!(js("logo.js", &text), None);
        // code of ordinary lines only, however large
        let code = "if (ok) { await redis.del(key); }\n".repeat(5_000);
        assert_eq!(js("big.js", &code), None);
    }

    #[test]
    fn a_min_name_is_minified_whatever_its_shape() {
        let code = "if (ok) { await redis.del(key); }\n".repeat(2_000);
        assert_eq!(js("vendor/jquery.min.js", &code), Some(Why::Name));
        assert_eq!(js("vendor/jquery.MIN.mjs", &code), Some(Why::Name));
        assert_eq!(js("vendor/admin.js", &code), None);
        assert_eq!(js("vendor/.min.js", &code), None);
        assert_eq!(js("vendor/min.js", &code), None);
    }

    #[test]
    fn line_shares_count_each_line_once() {
        let long = "f(x);".repeat(LONG_LINE / 5 + 1);
        let mid = "y".repeat(ORDINARY_LINE + 1);
        let text = format!("ab\n{long}\n{mid}\ncd");
        // "ab\n" and "cd" are ordinary (3 + 2 bytes), the long line counts
        // without its break, the middle one in neither
        assert_eq!(line_shares(text.as_bytes()), (long.len(), 5));
        assert_eq!(line_shares(b""), (0, 0));
        // a long line of data is no long line of code
        let data = "x".repeat(CODE_BYTES_PER_PAREN * 10);
        assert_eq!(line_shares(data.as_bytes()), (0, 0));
        let sparse = format!("{}(", "x".repeat(CODE_BYTES_PER_PAREN * 4));
        assert_eq!(line_shares(sparse.as_bytes()), (0, 0));
        let dense = format!("{}((((((", "x".repeat(CODE_BYTES_PER_PAREN * 4));
        assert_eq!(line_shares(dense.as_bytes()), (dense.len(), 0));
    }

    #[test]
    fn the_note_says_why() {
        let n = Why::Shape {
            bytes: 1000,
            on_long_lines: 970,
        }
        .note();
        assert!(n.contains("97% of its 1000 bytes"), "{n}");
        assert!(n.contains("--include-minified"), "{n}");
        assert!(Why::Name.note().contains("*.min.*"));
    }
}
