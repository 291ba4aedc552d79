//! Benchmark (`cargo bench --bench simulate`): the scheduler core on a
//! virtual clock. 1,000,000 requests from 10,000 interleaved sequences of
//! 100 steps each (one request every 10 µs, so each sequence sends a step
//! every 100 ms), sequence batcher Oldest, 4 instances, max_batch_size 8.
//! The trace is generated lazily and results go to a constant-size
//! statistics sink, so memory follows the live requests, not the trace.
//! Prints wall time (best of 3), events per second (events = request
//! arrivals + batch completions), requests per second and peak RSS.
//! A second run uses a sink that asks for the per-batch request and slot
//! lists (as the JSON output does), which [`Stats`] skips.
// Benchmarks and examples report on the terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::time::Instant;
use tritonctl::batching::{
    simulate, BatchRecord, CorrId, Latency, Request, RequestRecord, Settings, Sink, Stats,
};

// The process allocates as `tritonctl` does (src/main.rs).
#[cfg(feature = "run")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Counts like [`Stats`] but receives the full batch records.
#[derive(Default)]
struct Lists(Stats);

impl Sink for Lists {
    fn request(&mut self, r: RequestRecord) {
        self.0.request(r);
    }
    fn batch(&mut self, b: BatchRecord) {
        assert!(b.requests.len() <= 8 && !b.slots.is_empty());
        self.0.batch(b);
    }
}

/// Overridable for scaling checks: `SIM_SEQUENCES`, `SIM_STEPS`.
fn size(var: &str, default: u64) -> u64 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn config() -> tritonctl::schema::inference::ModelConfig {
    let text = "name: \"bench\" backend: \"onnxruntime\" max_batch_size: 8\n\
                instance_group [ { kind: KIND_CPU count: 4 } ]\n\
                sequence_batching { max_sequence_idle_microseconds: 5000000\n\
                  oldest { max_candidate_sequences: 4096 preferred_batch_size: [ 8 ] max_queue_delay_microseconds: 100 } }";
    tritonctl::config::ParsedConfig::parse(text.to_string())
        .config
        .expect("benchmark config binds")
}

fn trace(sequences: u64, steps: u64) -> impl Iterator<Item = Request> {
    (0..sequences * steps).map(move |i| {
        let seq = i % sequences;
        let step = i / sequences;
        let mut r = Request::new(i.to_string(), i * 10);
        r.sequence_id = Some(CorrId::Int(seq + 1));
        r.start = step == 0;
        r.end = step == steps - 1;
        r
    })
}

fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn main() {
    // `cargo bench` passes --bench; under `cargo test` this is a smoke run.
    let quick = !std::env::args().any(|a| a == "--bench");
    let (sequences, steps) = if quick {
        (size("SIM_SEQUENCES", 1_000), size("SIM_STEPS", 10))
    } else {
        (size("SIM_SEQUENCES", 10_000), size("SIM_STEPS", 100))
    };
    let settings = Settings::from_config(&config()).expect("settings");
    let latency = Latency::parse("1:50,8:200").expect("latency");
    let runs = if quick { 1 } else { 3 };
    let n = sequences * steps;
    for lists in [false, true] {
        let mut best = f64::INFINITY;
        let mut stats = Stats::default();
        for _ in 0..runs {
            let t = Instant::now();
            stats = if lists {
                let mut sink = Lists::default();
                simulate(&settings, &latency, trace(sequences, steps), &mut sink);
                sink.0
            } else {
                let mut sink = Stats::default();
                simulate(&settings, &latency, trace(sequences, steps), &mut sink);
                sink
            };
            best = best.min(t.elapsed().as_secs_f64());
        }
        assert_eq!(stats.requests, n, "every request ends exactly once");
        let events = n + stats.executions;
        println!(
            "simulate{}: {n} requests, {sequences} sequences, Oldest, 4 instances: {best:.3} s, {:.2} M events/s (arrivals + completions), {:.2} M requests/s, {} ok, {} executions, peak RSS {:.1} MB",
            if lists { " (batch lists)" } else { "" },
            events as f64 / best / 1e6,
            n as f64 / best / 1e6,
            stats.ok,
            stats.executions,
            peak_rss_kb() as f64 / 1024.0
        );
    }
}
