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
//! A third run drives a two-step ensemble (`batching::pipeline`): the same
//! trace through a dynamic-batching model (max_batch_size 8, 2 instances)
//! whose responses feed the same Oldest sequence batcher; it reports
//! ensemble requests per second.
// Benchmarks and examples report on the terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::time::Instant;
use tritonctl::batching::{
    simulate, simulate_pipeline, BatchRecord, CorrId, Latency, Pipeline, PipelineModel,
    PipelineSink, PipelineStep, Request, RequestRecord, Settings, Sink, Stats,
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
    parse(
        "name: \"bench\" backend: \"onnxruntime\" max_batch_size: 8\n\
         instance_group [ { kind: KIND_CPU count: 4 } ]\n\
         sequence_batching { max_sequence_idle_microseconds: 5000000\n\
           oldest { max_candidate_sequences: 4096 preferred_batch_size: [ 8 ] max_queue_delay_microseconds: 100 } }",
    )
}

fn parse(text: &str) -> tritonctl::schema::inference::ModelConfig {
    tritonctl::config::ParsedConfig::parse(text.to_string())
        .config
        .expect("benchmark config binds")
}

/// Counts the ensemble requests and every step's records.
#[derive(Default)]
struct EnsembleCount {
    requests: Stats,
    steps: Stats,
}

impl PipelineSink for EnsembleCount {
    fn step_request(&mut self, _: usize, r: RequestRecord) {
        self.steps.request(r);
    }
    fn step_batch(&mut self, _: usize, b: BatchRecord) {
        self.steps.batch(b);
    }
    fn request(&mut self, r: RequestRecord) {
        self.requests.request(r);
    }
    fn batch_lists(&self) -> bool {
        false
    }
}

/// The two-step ensemble: a dynamic batcher feeding the Oldest model.
fn pipeline() -> Pipeline {
    let pre = parse(
        "name: \"pre\" max_batch_size: 8 instance_group [ { count: 2 } ]\n\
         dynamic_batching { max_queue_delay_microseconds: 50 }",
    );
    let model = |cfg, lat: &str| PipelineModel {
        settings: Settings::from_config(&cfg).expect("settings"),
        latencies: vec![Latency::parse(lat).expect("latency")],
    };
    Pipeline {
        name: "bench".into(),
        models: vec![model(pre, "1:30,8:80"), model(config(), "1:50,8:200")],
        steps: vec![
            PipelineStep {
                model: 0,
                after: vec![],
                output: false,
            },
            PipelineStep {
                model: 1,
                after: vec![0],
                output: true,
            },
        ],
    }
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
    let p = pipeline();
    let mut best = f64::INFINITY;
    let mut counted = EnsembleCount::default();
    for _ in 0..runs {
        let t = Instant::now();
        let mut sink = EnsembleCount::default();
        simulate_pipeline(&p, trace(sequences, steps), &mut sink);
        best = best.min(t.elapsed().as_secs_f64());
        counted = sink;
    }
    assert_eq!(
        counted.requests.requests, n,
        "every ensemble request ends once"
    );
    assert_eq!(counted.steps.requests, 2 * n, "two steps per request");
    println!(
        "simulate (two-step ensemble): {n} requests, {sequences} sequences, dynamic (2 instances) then Oldest (4 instances): {best:.3} s, {:.2} M requests/s, {:.2} M step requests/s, {} ok, {} executions, peak RSS {:.1} MB",
        n as f64 / best / 1e6,
        2.0 * n as f64 / best / 1e6,
        counted.requests.ok,
        counted.steps.executions,
        peak_rss_kb() as f64 / 1024.0
    );
}
