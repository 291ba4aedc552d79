//! Benchmark (`cargo bench --bench ort_loop`): per-step cost of running the
//! stateful accumulate model (`INPUT` FP32 [B, 4], state FP32 [B, 1],
//! `RESET` BOOL [B, 1]) through ONNX Runtime on the CPU:
//!
//! - `bare`: `runtime::bench::bare_loop`, a bare ONNX Runtime loop with
//!   preallocated inputs and outputs, the state output copied back as the next
//!   input (the baseline of the runner's target, within 1.2x of it);
//! - `run_into`: `ModelSession::run_into` with host tensors, the state
//!   copied out and fed back in from the host each step (what a runner
//!   keeping host state does);
//! - `run_bound`: `ModelSession::run_bound`, the state kept as ONNX
//!   Runtime values between steps.
//!
//! For 1 and 2 intra-op threads and batch sizes 1 and 8. Needs the ONNX
//! Runtime library (see `tritonctl doctor`); says so and exits 0 without
//! it. Under `cargo test` it is a smoke run.
// Benchmarks and examples report on the terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::time::{Duration, Instant};
use tritonctl::runtime::{bench, BoundState, ModelSession, SessionOptions};
use tritonctl::tensor::{DataType, Tensor, TensorData};

// The process allocates as `tritonctl` does (src/main.rs).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn per_step(elapsed: Duration, steps: usize) -> f64 {
    elapsed.as_secs_f64() * 1e6 / steps as f64
}

fn main() {
    let quick = !std::env::args().any(|a| a == "--bench");
    let steps = if quick { 200 } else { 50_000 };
    if let Err(e) = tritonctl::runtime::probe() {
        println!("ort_loop: skipped, ONNX Runtime is not available: {e}");
        return;
    }
    let dir = tempfile::tempdir().expect("temporary directory");
    let model = dir.path().join("accumulate.onnx");
    std::fs::write(&model, tritonctl::runtime::testmodel::accumulate()).expect("model written");

    println!("steps per loop: {steps}");
    println!(
        "{:<8} {:>6} {:>10} {:>10} {:>10} {:>8} {:>8}",
        "threads", "batch", "bare µs", "run_into", "run_bound", "into/b", "bound/b"
    );
    for threads in [1usize, 2] {
        for batch in [1i64, 8] {
            let options = SessionOptions {
                intra_threads: threads,
                ..SessionOptions::default()
            };
            let x = Tensor::new(
                vec![batch, 4],
                TensorData::F32((0..batch * 4).map(|i| i as f32).collect()),
            )
            .unwrap();
            let zero = Tensor::zeros(DataType::F32, vec![batch, 1]).unwrap();
            let keep = Tensor::zeros(DataType::Bool, vec![batch, 1]).unwrap();

            // Rounds interleave the three paths; each keeps its best
            // round (the machine is shared and noisy).
            let rounds = 5;
            let n = steps / rounds;
            let (mut b, mut i, mut r) = (f64::MAX, f64::MAX, f64::MAX);
            let mut into = ModelSession::open(&model, &options).expect("session");
            let mut bound_session = ModelSession::open(&model, &options).expect("session");
            let mut state = zero.clone();
            let mut out = Vec::new();
            let mut bound = BoundState::new(&[("STATE_IN", "STATE_OUT")]);
            bound.set("STATE_IN", &zero).unwrap();
            let mut bound_out = Vec::new();
            let mut bare_last = None;
            for round in 0..=rounds {
                let bare = bench::bare_loop(
                    &model,
                    &options,
                    &[("INPUT", &x), ("STATE_IN", &zero), ("RESET", &keep)],
                    &[("STATE_OUT", "STATE_IN")],
                    n,
                )
                .expect("bare loop");

                let start = Instant::now();
                for _ in 0..n {
                    into.run_into(
                        &[("INPUT", &x), ("STATE_IN", &state), ("RESET", &keep)],
                        &mut out,
                    )
                    .expect("run_into");
                    // The state output becomes the next state (swapped, so
                    // both vectors are reused).
                    std::mem::swap(&mut state, &mut out[1].1);
                }
                let into_time = start.elapsed();

                let start = Instant::now();
                for _ in 0..n {
                    bound_session
                        .run_bound(
                            &[("INPUT", &x), ("RESET", &keep)],
                            &mut bound,
                            &mut bound_out,
                        )
                        .expect("run_bound");
                }
                let bound_time = start.elapsed();
                // Round 0 warms up.
                if round > 0 {
                    b = b.min(per_step(bare.elapsed, n));
                    i = i.min(per_step(into_time, n));
                    r = r.min(per_step(bound_time, n));
                }
                bare_last = Some(bare);
            }

            // All three computed the same running sums.
            let sum_row: f32 = (0..4).map(|i| i as f32).sum();
            let first = |t: &Tensor| match &t.data {
                TensorData::F32(v) => v[0],
                _ => f32::NAN,
            };
            let bare = bare_last.expect("ran");
            assert_eq!(first(&bare.last_outputs[0].1), n as f32 * sum_row);
            let total = ((rounds + 1) * n) as f32 * sum_row;
            assert_eq!(first(&state), total);
            assert_eq!(first(&bound_out[0].1), total);

            println!(
                "{threads:<8} {batch:>6} {b:>10.2} {i:>10.2} {r:>10.2} {:>8.2} {:>8.2}",
                i / b,
                r / b
            );
        }
    }
}
