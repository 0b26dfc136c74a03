//! The Lua script analyser on any text.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let src = String::from_utf8_lossy(data);
    let _ = locklint::frontend::lua::analyse(&src);
});
