//! The whole pipeline (front-end, rules, positions, fingerprints) on any
//! text in any language; the first byte picks the language. Every finding
//! must point inside the text.
#![no_main]
use libfuzzer_sys::fuzz_target;
use locklint::facts::Language;

const LANGS: &[(Language, &str)] = &[
    (Language::Rust, "lock.rs"),
    (Language::Java, "Lock.java"),
    (Language::Kotlin, "Lock.kt"),
    (Language::Python, "lock.py"),
    (Language::JavaScript, "lock.js"),
    (Language::TypeScript, "lock.ts"),
    (Language::Go, "lock.go"),
    (Language::Ruby, "lock.rb"),
    (Language::Php, "Lock.php"),
    (Language::CSharp, "Lock.cs"),
    (Language::Lua, "release.lua"),
    (Language::Redis, "lock.redis"),
    (Language::Shell, "lock.sh"),
];

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let (lang, name) = LANGS[first as usize % LANGS.len()];
    let src = String::from_utf8_lossy(rest);
    let settings = locklint::Settings::default();
    for f in locklint::check_source(name, &src, lang, &settings) {
        let lines = src.lines().count().max(1);
        assert!(f.line >= 1 && f.line as usize <= lines + 1, "line {} of {lines}", f.line);
        assert!(f.column >= 1);
        assert!(f.end_line >= f.line);
    }
});
