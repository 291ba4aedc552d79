//! Server-sent event streams as `tritonctl perf` reads them from
//! generative servers: split into frames anywhere, they must give the same
//! events, each within the limit, and no event may panic the readers of
//! Triton's and OpenAI-compatible responses.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    tritonctl::perf::generative::fuzz_stream(data);
});
