//! The raw-command front-end (`.redis` files and `redis-cli` lines in shell scripts).
#![no_main]
use libfuzzer_sys::fuzz_target;
use locklint::facts::Language;

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let lang = if first & 1 == 0 {
        Language::Redis
    } else {
        Language::Shell
    };
    let src = String::from_utf8_lossy(rest);
    let _ = locklint::frontend::redis_cmd::extract(&src, lang);
});
