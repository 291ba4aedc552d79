//! `cargo bench`: parse and bind throughput of the library, without
//! process start-up or file reading. A plain `main` (no harness): it prints
//! one line per measurement.
//!
//! - a generated config of many `input { ... }` entries (size in MB from
//!   `TRITONCTL_BENCH_MB`, default 10);
//! - the real-world corpus in `../shared/corpus`, when it is there.
//!
//! Under `cargo test --all-targets` (no `--bench` argument) it only checks
//! that one small run works.
// Benchmarks and examples report on the terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::time::{Duration, Instant};
use tritonctl::config::ParsedConfig;

// The process allocates as `tritonctl` does (src/main.rs).
#[cfg(feature = "run")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A valid ModelConfig of about `bytes` bytes: mostly `input` entries.
fn large_config(bytes: usize) -> String {
    let mut s = String::with_capacity(bytes + 256);
    s.push_str("name: \"large\"\nplatform: \"onnxruntime_onnx\"\nmax_batch_size: 8\n");
    let mut i = 0usize;
    while s.len() < bytes {
        s.push_str(&format!(
            "input {{ name: \"INPUT_{i}\" data_type: TYPE_FP32 dims: [ -1, {}, 3 ] }} # entry {i}\n",
            i % 512 + 1
        ));
        i += 1;
    }
    s
}

/// Runs `f` until at least `min` has passed (and at least once); returns
/// the mean time of one run.
fn time(min: Duration, mut f: impl FnMut()) -> Duration {
    let start = Instant::now();
    let mut runs = 0u32;
    while runs == 0 || start.elapsed() < min {
        f();
        runs += 1;
    }
    start.elapsed() / runs
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        let p = ParsedConfig::parse(large_config(64 << 10));
        assert!(p.diagnostics.is_empty(), "the generated config is valid");
        println!("bench parse: smoke run passed (use `cargo bench` to measure)");
        return;
    }
    let mb: usize = std::env::var("TRITONCTL_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let text = large_config(mb << 20);
    let len = text.len();
    let t = time(Duration::from_secs(2), || {
        let p = ParsedConfig::parse(text.clone());
        assert!(p.diagnostics.is_empty(), "the generated config is valid");
    });
    println!(
        "large config ({:.1} MB): {:.1} ms per parse+bind, {:.1} MB/s",
        len as f64 / 1e6,
        t.as_secs_f64() * 1e3,
        len as f64 / 1e6 / t.as_secs_f64()
    );

    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    let Ok(manifest) = std::fs::read_to_string(corpus.join("manifest.tsv")) else {
        println!("corpus: skipped (../shared/corpus is not next to this checkout)");
        return;
    };
    let files: Vec<Vec<u8>> = manifest
        .lines()
        .skip(1)
        .filter_map(|l| l.split('\t').next())
        .map(|f| std::fs::read(corpus.join(f)).expect("corpus file"))
        .collect();
    let total: usize = files.iter().map(Vec::len).sum();
    let t = time(Duration::from_secs(2), || {
        for f in &files {
            std::hint::black_box(ParsedConfig::from_bytes(f.clone()));
        }
    });
    println!(
        "corpus ({} files, {:.1} MB): {:.1} ms per pass, {:.1} µs per file, {:.1} MB/s",
        files.len(),
        total as f64 / 1e6,
        t.as_secs_f64() * 1e3,
        t.as_secs_f64() * 1e6 / files.len() as f64,
        total as f64 / 1e6 / t.as_secs_f64()
    );
}
