//! Benchmark (`cargo bench --bench run`): the local runner of
//! `tritonctl run` on the stateful-backend accumulate model of
//! testdata/run/accumulate (Input FP32 [4, -1, 5], state [batch, 5]).
//!
//! 1. Per-step cost of one sequence, one request at a time (a variant of
//!    the config with no queue delay, so nothing waits for a batch), with
//!    `max_batch_size: 1` (one row per run) and as committed (the stateful
//!    backend pads every run to 4 rows; the bare loop then runs 4 rows):
//!    - `runner`: `run::runner::run_model_owned` (scheduler on a real
//!      clock, control and state tensors, outputs split per request; it
//!      consumes the parsed requests as `tritonctl run` does), its wall
//!      time after the sessions are open;
//!    - `bare`: `runtime::bench::bare_loop`, ONNX Runtime alone with
//!      preallocated inputs and outputs and the state output copied back,
//!      through the `ort` crate's `run_with_options` (what a Rust program
//!      written with the crate does);
//!    - `bare C API`: the same loop through ONNX Runtime's C API `Run` with
//!      names and values gathered once (`BareCall::CApi`);
//!    - `bare bound`: the same loop through the C API's `RunWithBinding`
//!      on inputs and outputs bound once (`BareCall::Binding`), the way the
//!      runner calls ONNX Runtime once its tensors stay where they are:
//!      the ratio against it is the runner's own cost alone;
//!    - `python`: the same loop in Python onnxruntime (when python3 has it).
//!      Targets: runner within 1.2x of bare, at least 2x faster than Python.
//!
//!    Every loop opens the model with the session settings the runner
//!    takes from the config (the stateful backend's: one intra-op and one
//!    inter-op thread, basic graph optimization; ONNX Runtime's CPU arena
//!    off, as in every `tritonctl run` unless the config turns it on); the
//!    Python loop is also timed with the arena on, ONNX Runtime's default,
//!    for comparison. The runner and the bare loops run in this process,
//!    which allocates with mimalloc as `tritonctl` does (feature `run`;
//!    this benchmark sets the global allocator of `src/main.rs`), ONNX
//!    Runtime's own allocations included; the Python loop runs in Python,
//!    with glibc's
//!    `malloc`, as its users run it. The runner is timed as `tritonctl run`
//!    runs without `--profile` (one clock read per batch); ONNX Runtime's
//!    time inside it is read from one more run with `profile` on.
//!
//!    The loops alternate over 9 rounds; the wall ratios are the medians of
//!    each round's ratio (the machine's speed drifts between rounds).
//! 2. Throughput of 64 concurrent sequences under Oldest with batching (the
//!    config as committed) against the same sequences run one at a time.
//!
//! Needs the ONNX Runtime library; says so and exits 0 without it. Under
//! `cargo test` it is a smoke run.
// Benchmarks and examples report on the terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::time::Duration;
use tritonctl::run::input::{parse_input, InputSchema, ParseOptions, RunRequest};
use tritonctl::run::model::{load_model, LoadedModel};
use tritonctl::run::runner::{run_model_owned, RunOptions};
use tritonctl::run::session_config::session_options;
use tritonctl::runtime::bench::BareCall;
use tritonctl::runtime::{bench, Device};
use tritonctl::tensor::{DataType, Tensor, TensorData};

// The process allocates as `tritonctl` does (src/main.rs): mimalloc for
// Rust, and through its `override` build for ONNX Runtime too.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

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

/// The runner's wall time for a copy of `reqs` (sessions opened before
/// the clock starts).
fn timed(m: &LoadedModel, reqs: &[RunRequest]) -> Duration {
    let out = run_model_owned(m, reqs.to_vec(), &RunOptions::default()).expect("run");
    if let Some(bad) = out.results.iter().find(|r| !r.is_ok()) {
        let failed = out.results.iter().filter(|r| !r.is_ok()).count();
        panic!("{failed} requests failed, the first: {bad:?}");
    }
    out.elapsed
}

/// Python onnxruntime's (wall, CPU) µs per step, with ONNX Runtime's CPU
/// arena on or off; CPU is the time of the thread running the loop, as the
/// runner's is (the process's would count Python's and ONNX Runtime's
/// start-up threads still busy when it starts).
fn python_per_step(model: &Path, steps: usize, arena: bool) -> Option<(f64, f64)> {
    let script = r#"
import sys, time
import numpy as np
import onnxruntime as ort
so = ort.SessionOptions()
so.intra_op_num_threads = 1
so.inter_op_num_threads = 1
so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
so.enable_cpu_mem_arena = sys.argv[3] == "1"
s = ort.InferenceSession(sys.argv[1], so, providers=["CPUExecutionProvider"])
n = int(sys.argv[2])
x = np.arange(20, dtype=np.float32).reshape(4, 1, 5)
state = np.zeros((1, 5), dtype=np.float32)
reset = np.zeros((1, 1), dtype=bool)
for _ in range(min(n, 100)):
    s.run(None, {"Input": x, "Accumulate_In": state, "ResetSequence": reset})
t = time.perf_counter()
c = time.thread_time()
for _ in range(n):
    out, state = s.run(None, {"Input": x, "Accumulate_In": state, "ResetSequence": reset})
print((time.perf_counter() - t) * 1e6 / n, (time.thread_time() - c) * 1e6 / n)
"#;
    let o = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(model)
        .arg(steps.to_string())
        .arg(if arena { "1" } else { "0" })
        .output()
        .ok()?;
    if !o.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&o.stdout);
    let mut it = text.split_whitespace().map(|v| v.parse::<f64>().ok());
    Some((it.next()??, it.next()??))
}

/// CPU time of the calling thread, from `CLOCK_THREAD_CPUTIME_ID` (64-bit
/// Linux; `None` elsewhere). It counts to the nanosecond: the kernel adds
/// the time since the thread's last accounting, which
/// `/proc/thread-self/schedstat` does not (on a kernel that accounts at
/// each tick, that file moves in steps of 4 ms, 0.2 µs per step of these
/// loops).
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
fn thread_cpu() -> Option<Duration> {
    #[repr(C)]
    struct Timespec {
        sec: i64,
        nsec: i64,
    }
    extern "C" {
        fn clock_gettime(clock: i32, t: *mut Timespec) -> i32;
    }
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
    let mut t = Timespec { sec: 0, nsec: 0 };
    // SAFETY: `t` is a valid timespec for the call to fill.
    let ok = unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut t) } == 0;
    (ok && t.sec >= 0 && t.nsec >= 0)
        .then(|| Duration::new(t.sec as u64, 0) + Duration::from_nanos(t.nsec as u64))
}

#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
fn thread_cpu() -> Option<Duration> {
    None
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
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

    // `TRITONCTL_BENCH_PROFILE=<steps>`: run one sequence of that many
    // steps through the runner once and stop (for callgrind/perf); padded
    // to 4 rows as committed, or one row with `TRITONCTL_BENCH_ROWS=1`;
    // `TRITONCTL_BENCH_BARE=crate` (or `1`), `capi` or `bound` runs that
    // bare loop instead (see `BareCall`), at as many rows.
    if let Some(n) = std::env::var("TRITONCTL_BENCH_PROFILE")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        let one_row = std::env::var("TRITONCTL_BENCH_ROWS").as_deref() == Ok("1");
        let bare = match std::env::var("TRITONCTL_BENCH_BARE").as_deref() {
            Ok("1" | "crate") => Some(BareCall::Crate),
            Ok("capi") => Some(BareCall::CApi),
            Ok("bound") => Some(BareCall::Binding),
            _ => None,
        };
        if let Some(call) = bare {
            let rows: i64 = if one_row { 1 } else { 4 };
            let x = Tensor::new(
                vec![4, rows, 5],
                TensorData::F32((0..20 * rows).map(|i| (i % 20) as f32).collect()),
            )
            .unwrap();
            let state = Tensor::zeros(DataType::F32, vec![rows, 5]).unwrap();
            let reset = Tensor::zeros(DataType::Bool, vec![rows, 1]).unwrap();
            let stats = bench::bare_loop_with(
                no_delay.model_file.as_ref().unwrap(),
                &session_options(&no_delay.cfg, Device::Cpu).unwrap(),
                &[
                    ("Input", &x),
                    ("Accumulate_In", &state),
                    ("ResetSequence", &reset),
                ],
                &[("Accumulate_Out", "Accumulate_In")],
                n,
                call,
            )
            .expect("bare loop");
            println!(
                "profile: bare, {n} steps, {:.2} µs/step",
                stats.per_step().as_secs_f64() * 1e6
            );
            return;
        }
        let m = if one_row {
            load_model(&no_delay_copy(tmp.path(), true), None).expect("model loads")
        } else {
            no_delay
        };
        let reqs = requests(&m, 1, n);
        let d = timed(&m, &reqs);
        println!(
            "profile: {n} steps, {:.2} µs/step",
            d.as_secs_f64() * 1e6 / n as f64
        );
        return;
    }

    // 1. Per-step overhead, one sequence, in two set-ups that give ONNX
    // Runtime the same work on both sides:
    //   - unpadded: `max_batch_size: 1`, so every step runs one row, against
    //     the bare loop at batch 1;
    //   - padded: the committed `max_batch_size: 4`; the stateful backend
    //     pads every run to max_batch_size (docs/spec/stateful-backend.md §5),
    //     so the bare loop runs batch-4 tensors.
    // Wall time per step is the runner's own clock (sessions open before
    // it starts) and the bare loop's; CPU time per step is the difference
    // between a long and a short run divided by the extra steps, which
    // cancels the fixed costs (opening sessions). The runner runs a
    // one-instance model on the calling thread, so the thread's CPU time
    // is all of it.
    let unpadded = load_model(&no_delay_copy(tmp.path(), true), None).expect("model loads");
    // Rounds alternate the loops (runner, bare, and Python for the
    // unpadded set-up) so that each round's ratios compare loops measured
    // seconds apart; the medians of those ratios are reported.
    let rounds = if quick { 1 } else { 9 };
    let file = no_delay.model_file.clone().unwrap();
    // The bare loops open the model with the runner's session options
    // (the stateful backend's: one thread, basic graph optimization).
    let options = session_options(&no_delay.cfg, Device::Cpu).unwrap();
    for (label, m, rows) in [("unpadded", &unpadded, 1i64), ("padded", &no_delay, 4)] {
        let long = requests(m, 1, steps);
        let short_steps = steps / 10;
        let short = requests(m, 1, short_steps);
        let extra = (steps - short_steps) as f64;
        let (mut runner, mut runner_cpu) = (Vec::new(), Vec::new());
        let (mut bare, mut bare_cpu) = (Vec::new(), Vec::new());
        let mut bare_c = Vec::new();
        let (mut bare_b, mut runner_bare_b) = (Vec::new(), Vec::new());
        let (mut py, mut py_cpu) = (Vec::new(), Vec::new());
        let (mut py_arena, mut py_arena_runner) = (Vec::new(), Vec::new());
        let (mut runner_bare, mut py_runner) = (Vec::new(), Vec::new());
        let x = Tensor::new(
            vec![4, rows, 5],
            TensorData::F32((0..20 * rows).map(|i| (i % 20) as f32).collect()),
        )
        .unwrap();
        let state = Tensor::zeros(DataType::F32, vec![rows, 5]).unwrap();
        let reset = Tensor::zeros(DataType::Bool, vec![rows, 1]).unwrap();
        let bare_with = |n: usize, call: BareCall| {
            bench::bare_loop_with(
                &file,
                &options,
                &[
                    ("Input", &x),
                    ("Accumulate_In", &state),
                    ("ResetSequence", &reset),
                ],
                &[("Accumulate_Out", "Accumulate_In")],
                n,
                call,
            )
            .expect("bare loop")
        };
        let bare_run = |n: usize| bare_with(n, BareCall::Crate);
        let cpu_of = |f: &mut dyn FnMut()| {
            let c = thread_cpu();
            f();
            c.zip(thread_cpu())
                .map(|(a, b)| (b - a).as_secs_f64() * 1e6)
        };
        for _ in 0..rounds {
            // The runner consumes its requests: a copy, made before the
            // CPU clock starts.
            let mut out = None;
            let mut given = Some(long.clone());
            let long_cpu = cpu_of(&mut || {
                let reqs = given.take().expect("one run");
                out = Some(run_model_owned(m, reqs, &RunOptions::default()).expect("run"))
            });
            let out = out.expect("ran");
            assert!(out.results.iter().all(|r| r.is_ok()));
            runner.push(out.elapsed.as_secs_f64() * 1e6 / steps as f64);
            let mut given = Some(short.clone());
            let short_cpu = cpu_of(&mut || {
                let reqs = given.take().expect("one run");
                run_model_owned(m, reqs, &RunOptions::default()).expect("run");
            });
            if let (Some(l), Some(s)) = (long_cpu, short_cpu) {
                runner_cpu.push((l - s) / extra);
            }
            let mut b = None;
            let long_cpu = cpu_of(&mut || b = Some(bare_run(steps)));
            bare.push(b.expect("ran").per_step().as_secs_f64() * 1e6);
            let short_cpu = cpu_of(&mut || {
                bare_run(short_steps);
            });
            if let (Some(l), Some(s)) = (long_cpu, short_cpu) {
                bare_cpu.push((l - s) / extra);
            }
            runner_bare.push(runner[runner.len() - 1] / bare[bare.len() - 1]);
            bare_c.push(bare_with(steps, BareCall::CApi).per_step().as_secs_f64() * 1e6);
            bare_b.push(bare_with(steps, BareCall::Binding).per_step().as_secs_f64() * 1e6);
            runner_bare_b.push(runner[runner.len() - 1] / bare_b[bare_b.len() - 1]);
            if rows == 1 {
                let last = runner[runner.len() - 1];
                if let Some((w, c)) = python_per_step(&file, steps, options.cpu_arena) {
                    py.push(w);
                    py_cpu.push(c);
                    py_runner.push(w / last);
                }
                if !options.cpu_arena {
                    if let Some((w, _)) = python_per_step(&file, steps, true) {
                        py_arena.push(w);
                        py_arena_runner.push(w / last);
                    }
                }
            }
        }
        // The time of ONNX Runtime's call inside the runner, from a run
        // that measures its executions (`--profile`, which reads the clock
        // twice per batch instead of once: not one of the timed runs).
        let profiled = RunOptions {
            profile: true,
            ..RunOptions::default()
        };
        let out = run_model_owned(m, long.clone(), &profiled).expect("run");
        let mut times: Vec<f64> = out
            .executions
            .values()
            .flatten()
            .map(|&t| t as f64)
            .collect();
        let exec = median(&mut times);
        let (runner, bare) = (median(&mut runner), median(&mut bare));
        let cpu = |v: &mut Vec<f64>| (!v.is_empty()).then(|| median(v));
        let (runner_cpu, bare_cpu) = (cpu(&mut runner_cpu), cpu(&mut bare_cpu));
        let python = cpu(&mut py).zip(cpu(&mut py_cpu));
        let (runner_bare, py_runner) = (median(&mut runner_bare), cpu(&mut py_runner));
        let bare_c = median(&mut bare_c);
        let (bare_b, runner_bare_b) = (median(&mut bare_b), median(&mut runner_bare_b));
        let show = |v: Option<f64>| v.map_or("     n/a".to_string(), |v| format!("{v:8.2}"));
        println!("{label}: {rows} row(s) per run, one sequence of {steps} requests (median of {rounds}; CPU: thread time of {steps} minus {short_steps} steps):");
        println!("             wall µs   CPU µs");
        println!(
            "  runner    {runner:8.2} {}   (ModelSession::run_into inside it, median: {exec:.0} µs)",
            show(runner_cpu)
        );
        println!("  bare      {bare:8.2} {}", show(bare_cpu));
        let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => format!("{:.2}x", a / b),
            _ => "n/a".to_string(),
        };
        println!(
            "  runner/bare    wall {runner_bare:.2}x  CPU {}   (target ≤ 1.2x; wall: median of the rounds' ratios)",
            ratio(runner_cpu, bare_cpu)
        );
        println!("  bare C API {bare_c:8.2}            (ONNX Runtime's Run with names and values gathered once)");
        println!("  bare bound {bare_b:8.2}            (ONNX Runtime's RunWithBinding on values bound once: the runner's call)");
        println!("  runner/bare bound  wall {runner_bare_b:.2}x   (the runner's own cost alone)");
        if rows == 1 {
            match python {
                Some((py, py_cpu)) => {
                    println!("  python    {py:8.2} {py_cpu:8.2}   (the same loop, batch 1, the same session settings)");
                    println!(
                        "  python/runner  wall {}  CPU {}   (target ≥ 2x; wall: median of the rounds' ratios)",
                        py_runner.map_or("n/a".to_string(), |r| format!("{r:.2}x")),
                        ratio(Some(py_cpu), runner_cpu)
                    );
                    if let (Some(w), Some(r)) = (cpu(&mut py_arena), cpu(&mut py_arena_runner)) {
                        println!("  python with ONNX Runtime's CPU arena on (its default) {w:.2}, /runner wall {r:.2}x");
                    }
                }
                None => println!("  python    skipped (python3 without onnxruntime)"),
            }
        }
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
