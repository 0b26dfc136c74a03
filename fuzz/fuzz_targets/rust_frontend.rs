//! The Rust front-end (syn) on any text: no panic, no hang, bounded stack.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let src = String::from_utf8_lossy(data);
    let _ = locklint::frontend::rust::extract(&src);
});
