//! parse → print (what `tritonctl fmt` writes) → parse: every text that
//! parses must print to a text that parses again to the same fields and
//! values and binds to an equal ModelConfig.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tritonctl::format::{format_text, FormatError};

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    match format_text(src) {
        Ok(out) => {
            // Formatting is idempotent.
            match format_text(&out) {
                Ok(again) => assert_eq!(again, out, "formatting twice changes the text"),
                Err(FormatError::Syntax(d)) => {
                    panic!("formatted text does not parse: {}", d.message)
                }
                Err(FormatError::Internal(m)) => panic!("second format: {m}"),
            }
        }
        Err(FormatError::Syntax(_)) => {}
        Err(FormatError::Internal(m)) => panic!("{m}"),
    }
});
