//! Benchmark (`cargo bench --bench run`): the local runner of
//! `tritonctl run` on the stateful-backend accumulate model of
//! testdata/run/accumulate (Input FP32 [4, -1, 5], state [batch, 5]).
//!
//! 1. Per-step cost of one sequence, one request at a time (a variant of
//!    the config with no queue delay, so nothing waits for a batch):
//!    - `runner`: `run::runner::run_model` (scheduler on a real clock,
//!      worker thread, control and state tensors, outputs split per
//!      request), its wall time after the sessions are open;
//!    - `bare`: `runtime::bench::bare_loop`, ONNX Runtime alone with
//!      preallocated values and the state output fed back;
//!    - `python`: the same loop in Python onnxruntime (when python3 has it).
//!      Targets: runner within 1.2x of bare, at least 2x faster than Python.
//! 2. Throughput of 64 concurrent sequences under Oldest with batching (the
//!    config as committed) against the same sequences run one at a time.
//!
//! Needs the ONNX Runtime library; says so and exits 0 without it. Under
//! `cargo test` it is a smoke run.

use std::path::{Path, PathBuf};
use std::time::Duration;
use tritonctl::run::input::{parse_input, InputSchema, ParseOptions, RunRequest};
use tritonctl::run::model::{load_model, LoadedModel};
use tritonctl::run::runner::{run_model, RunOptions};
use tritonctl::runtime::{bench, SessionOptions};
use tritonctl::tensor::{DataType, Tensor, TensorData};

fn model_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join("run")
        .join("accumulate")
}

/// The accumulate model with `max_queue_delay_microseconds: 0`; with
/// `unbatched`, `max_batch_size: 1` (one request per execution) and 2
/// candidate sequences.
fn no_delay_copy(root: &Path, unbatched: bool) -> PathBuf {
    let src = model_dir();
    let dst = root.join(format!("u{unbatched}")).join("accumulate");
    std::fs::create_dir_all(dst.join("1")).unwrap();
    std::fs::copy(
        src.join("1").join("model.onnx"),
        dst.join("1").join("model.onnx"),
    )
    .unwrap();
    let cfg = std::fs::read_to_string(src.join("config.pbtxt")).unwrap();
    let cfg = cfg.replace(
        "max_queue_delay_microseconds: 1000",
        "max_queue_delay_microseconds: 0",
    );
    let cfg = if unbatched {
        cfg.replace("max_candidate_sequences: 8", "max_candidate_sequences: 2")
            .replace("max_batch_size: 4", "max_batch_size: 1")
    } else {
        cfg
    };
    std::fs::write(dst.join("config.pbtxt"), cfg).unwrap();
    dst
}

/// `sequences` sequences of `steps` requests, interleaved round-robin.
fn requests(m: &LoadedModel, sequences: usize, steps: usize) -> Vec<RunRequest> {
    let mut text = String::new();
    for step in 0..steps {
        for seq in 1..=sequences {
            let values: Vec<String> = (0..20).map(|i| ((i + step) % 7).to_string()).collect();
            text.push_str(&format!(
                "{{\"id\": \"s{seq}.{step}\", \"sequence_id\": {seq}, \"start\": {}, \"end\": {}, \"inputs\": {{\"Input\": [{}]}}}}\n",
                step == 0,
                step + 1 == steps,
                values.join(", ")
            ));
        }
    }
    let schema = InputSchema::from_config(&m.cfg).unwrap();
    parse_input(&text, "bench", &schema, &ParseOptions { sequence: true })
        .unwrap()
        .requests
}

/// The runner's wall time for `reqs` (sessions opened before the clock
/// starts).
fn timed(m: &LoadedModel, reqs: &[RunRequest]) -> Duration {
    let out = run_model(m, reqs, &RunOptions::default()).expect("run");
    assert!(out.results.iter().all(|r| r.is_ok()));
    out.elapsed
}

fn python_per_step(model: &Path, steps: usize) -> Option<f64> {
    let script = r#"
import sys, time
import numpy as np
import onnxruntime as ort
so = ort.SessionOptions()
so.intra_op_num_threads = 1
so.inter_op_num_threads = 1
s = ort.InferenceSession(sys.argv[1], so, providers=["CPUExecutionProvider"])
n = int(sys.argv[2])
x = np.arange(20, dtype=np.float32).reshape(4, 1, 5)
state = np.zeros((1, 5), dtype=np.float32)
reset = np.zeros((1, 1), dtype=bool)
for _ in range(min(n, 100)):
    s.run(None, {"Input": x, "Accumulate_In": state, "ResetSequence": reset})
t = time.perf_counter()
for _ in range(n):
    out, state = s.run(None, {"Input": x, "Accumulate_In": state, "ResetSequence": reset})
print((time.perf_counter() - t) * 1e6 / n)
"#;
    let o = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(model)
        .arg(steps.to_string())
        .output()
        .ok()?;
    if !o.status.success() {
        return None;
    }
    String::from_utf8_lossy(&o.stdout).trim().parse().ok()
}

fn main() {
    let quick = !std::env::args().any(|a| a == "--bench");
    if let Err(e) = tritonctl::runtime::probe() {
        println!("run: skipped, ONNX Runtime is not available: {e}");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let no_delay = load_model(&no_delay_copy(tmp.path(), false), None).expect("model loads");
    let steps = if quick { 50 } else { 20_000 };

    // 1. Per-step overhead, one sequence.
    let long = requests(&no_delay, 1, steps);
    let rounds = if quick { 1 } else { 5 };
    let mut runner = f64::MAX;
    let mut exec = f64::MAX;
    let mut bare = f64::MAX;
    let file = no_delay.model_file.clone().unwrap();
    let x = Tensor::new(
        vec![4, 1, 5],
        TensorData::F32((0..20).map(|i| i as f32).collect()),
    )
    .unwrap();
    let state = Tensor::zeros(DataType::F32, vec![1, 5]).unwrap();
    let reset = Tensor::zeros(DataType::Bool, vec![1, 1]).unwrap();
    for _ in 0..rounds {
        let out = run_model(&no_delay, &long, &RunOptions::default()).expect("run");
        assert!(out.results.iter().all(|r| r.is_ok()));
        let per = out.elapsed.as_secs_f64() * 1e6 / steps as f64;
        let mut times: Vec<u64> = out.executions.values().flatten().copied().collect();
        times.sort_unstable();
        exec = exec.min(times[times.len() / 2] as f64);
        runner = runner.min(per);
        let b = bench::bare_loop(
            &file,
            &SessionOptions::default(),
            &[
                ("Input", &x),
                ("Accumulate_In", &state),
                ("ResetSequence", &reset),
            ],
            &[("Accumulate_Out", "Accumulate_In")],
            steps,
        )
        .expect("bare loop");
        bare = bare.min(b.per_step().as_secs_f64() * 1e6);
    }
    println!("per step, one sequence of {steps} requests (best of {rounds}):");
    println!("  runner  {runner:8.2} µs   (of which ModelSession::run_into, median: {exec:.0} µs)");
    println!(
        "  bare    {bare:8.2} µs   runner/bare {:.2}x (target ≤ 1.2x)",
        runner / bare
    );
    match python_per_step(&file, steps) {
        Some(py) => println!(
            "  python  {py:8.2} µs   python/runner {:.2}x (target ≥ 2x)",
            py / runner
        ),
        None => println!("  python  skipped (python3 without onnxruntime)"),
    }

    // 2. Throughput: 64 sequences batched under Oldest vs one at a time.
    let batched = load_model(&model_dir(), None).expect("model loads");
    let (seqs, len) = if quick { (8, 3) } else { (64, 50) };
    let all = requests(&batched, seqs, len);
    let together = timed(&batched, &all);
    // One request per execution.
    let single = load_model(&no_delay_copy(tmp.path(), true), None).expect("model loads");
    let alone = timed(&single, &all);
    let n = (seqs * len) as f64;
    println!("{seqs} sequences x {len} requests:");
    println!(
        "  batched (Oldest)  {:8.0} requests/s",
        n / together.as_secs_f64()
    );
    println!(
        "  one at a time     {:8.0} requests/s   batched/alone {:.2}x",
        n / alone.as_secs_f64(),
        alone.as_secs_f64() / together.as_secs_f64()
    );
}
