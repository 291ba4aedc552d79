//! Benchmark (`cargo bench --bench tune`): `tune`'s search on a
//! 100,000-request Poisson workload, on one thread (the search is
//! sequential). Two models of testdata: `densenet_onnx` (dynamic
//! batching) and `accumulator` (sequence batching, Direct and Oldest).
//! Prints the wall time of the workload's generation and of the search
//! (best of `TUNE_RUNS`, default 3), the candidates simulated against the
//! grid, and exits 1 when a search takes 10 s or more (the target of
//! docs/commands/tune.md). `TUNE_REQUESTS` sets the workload's size.
// Benchmarks and examples report on the terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::Path;
use std::time::{Duration, Instant};
use tritonctl::trace::{Distribution, GenerateOptions};
use tritonctl::tune::{self, Goal, Objective, SpaceOptions, TuneOptions};

// The process allocates as `tritonctl` does (src/main.rs).
#[cfg(feature = "run")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn env(var: &str, default: u64) -> u64 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

struct Case {
    model: &'static str,
    latency: &'static str,
    rate: f64,
    sequences: bool,
    slo_ms: f64,
}

fn main() {
    let requests = env("TUNE_REQUESTS", 100_000);
    let runs = env("TUNE_RUNS", 3).max(1);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/model_repository");
    let cases = [
        Case {
            model: "densenet_onnx",
            latency: "2000+500*b",
            rate: 1500.0,
            sequences: false,
            slo_ms: 15.0,
        },
        Case {
            model: "accumulator",
            latency: "1000+200*b",
            rate: 400.0,
            sequences: true,
            slo_ms: 20.0,
        },
    ];
    let mut over = false;
    for case in &cases {
        let base = tritonctl::simulate::load_config(&root.join(case.model), &[]).unwrap();
        let latency = tritonctl::batching::Latency::parse(case.latency).unwrap();
        let mut o = GenerateOptions::new(case.rate);
        o.distribution = Distribution::Poisson;
        o.requests = Some(requests);
        if case.sequences {
            o.sequence_length = 4;
            o.sequences = requests.div_ceil(4);
            o.think_time_us = 2000;
        }
        let t = Instant::now();
        let workload = tune::workload::generated(&o).unwrap();
        let generated = t.elapsed();
        let opts = TuneOptions {
            space: SpaceOptions {
                max_instances: 8,
                max_batch_size: None,
                delays_us: tune::space::DEFAULT_DELAYS_US.to_vec(),
            },
            objective: Objective {
                percentile: 99.0,
                slo_us: (case.slo_ms * 1000.0) as u64,
            },
            goal: Goal::Instances,
            overhead_us: 0,
        };
        let mut best = Duration::MAX;
        let mut last = None;
        for _ in 0..runs {
            let t = Instant::now();
            let tuned = tune::tune(&base, &latency, &workload, &opts).unwrap();
            best = best.min(t.elapsed());
            last = Some(tuned);
        }
        let tuned = last.unwrap();
        over |= best >= Duration::from_secs(10);
        println!(
            "{}: {} requests ({:.0}/s): generated in {:.3} s; search {:.3} s (best of {runs}): \
             {} candidates simulated ({} stopped early) of a grid of {}; recommended {} instance(s), p99 {} µs{}",
            case.model,
            workload.requests.len(),
            case.rate,
            generated.as_secs_f64(),
            best.as_secs_f64(),
            tuned.simulated,
            tuned.stopped,
            tuned.grid(),
            tuned.recommended.instances,
            tuned.recommended.prediction.latency_us.p99.unwrap_or(0),
            if tuned.recommended.meets { "" } else { " (misses the objective)" },
        );
    }
    if over {
        eprintln!("a search took 10 s or more");
        std::process::exit(1);
    }
}
