//! Every pattern-mode language on any text; the first byte picks the language.
#![no_main]
use libfuzzer_sys::fuzz_target;
use locklint::facts::Language;
use std::path::Path;

const LANGS: &[(Language, &str)] = &[
    (Language::Java, "Lock.java"),
    (Language::Kotlin, "Lock.kt"),
    (Language::Python, "lock.py"),
    (Language::JavaScript, "lock.js"),
    (Language::TypeScript, "lock.ts"),
    (Language::Go, "lock.go"),
    (Language::Ruby, "lock.rb"),
    (Language::Php, "Lock.php"),
    (Language::CSharp, "Lock.cs"),
];

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let (lang, name) = LANGS[first as usize % LANGS.len()];
    let src = String::from_utf8_lossy(rest);
    let _ = locklint::frontend::pattern::extract(Path::new(name), &src, lang);
});
