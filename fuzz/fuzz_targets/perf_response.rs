//! Everything `tritonctl perf` reads from a server (HTTP inference answers
//! with and without binary tensors, metadata, config and statistics as JSON
//! and as gRPC messages, gRPC inference answers), turned into the model's
//! inputs and request bodies under a small input limit: nothing may panic
//! or allocate without bound.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    tritonctl::perf::fuzz::responses(data);
});
