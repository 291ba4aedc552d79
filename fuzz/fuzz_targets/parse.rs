//! The text-format parser on arbitrary input: it must never panic, and the
//! fast parser and the pest grammar must agree on every text the fast
//! parser accepts.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tritonctl::pbtxt;

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    let parsed = pbtxt::parse(src);
    if pbtxt::parse_fast(src).is_some() {
        assert!(
            pbtxt::parse_with_pest(src).is_ok(),
            "the fast parser accepts a text the grammar refuses"
        );
        assert!(parsed.is_ok());
    }
});
