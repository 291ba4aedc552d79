//! `tritonctl run` through the binary, on the generated test models of
//! testdata/run. Tests that execute models need ONNX Runtime: they are
//! skipped with a message without it, unless `TRITONCTL_REQUIRE_ORT=1`.
//! Expected outputs are computed here from the models' definitions (the
//! running sum of a sequence), independently of tritonctl, and compared
//! with scripts/run-reference.py (Python onnxruntime) where python3 has
//! onnxruntime.

#[cfg(feature = "run")]
use crate::common::ort_library;
use crate::common::{crate_root, require_ort, tritonctl, Output, Tritonctl};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The ONNX Runtime library file, or `None` (test skipped).
#[cfg(feature = "run")]
fn ort() -> Option<PathBuf> {
    ort_library().map(|lib| lib.path)
}

#[cfg(not(feature = "run"))]
fn ort() -> Option<PathBuf> {
    eprintln!("skipped: built without the `run` feature");
    None
}

fn model(name: &str) -> PathBuf {
    crate_root().join("testdata").join("run").join(name)
}

/// `tritonctl run MODEL_DIR --input INPUT --format json` with ONNX Runtime
/// at `lib`.
fn run_json(lib: &Path, model_dir: &Path, input: &Path) -> Tritonctl {
    let mut c = tritonctl();
    c.env("ORT_DYLIB_PATH", lib)
        .arg("run")
        .arg(model_dir)
        .arg("--input")
        .arg(input)
        .args(["--format", "json"]);
    c
}

fn write_lines(dir: &Path, name: &str, lines: &[Value]) -> PathBuf {
    let p = dir.join(name);
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&p, text).unwrap();
    p
}

/// A small deterministic generator (64-bit LCG).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// A small integer value, exact in FP32 sums.
    fn value(&mut self) -> f64 {
        self.below(41) as f64 - 20.0
    }
}

/// `count` sequences (ids 1..=count) of 1..=max_len steps, interleaved at
/// random; each step has `width` values. Returns JSON Lines requests.
fn interleaved(seed: u64, count: u64, max_len: u64, width: usize) -> Vec<Value> {
    let mut rng = Lcg(seed);
    let mut left: Vec<(u64, u64, u64)> = (1..=count)
        .map(|s| (s, 1 + rng.below(max_len), 0))
        .collect();
    let mut out = Vec::new();
    while !left.is_empty() {
        let k = rng.below(left.len() as u64) as usize;
        let (seq, len, done) = left[k];
        let values: Vec<f64> = (0..width).map(|_| rng.value()).collect();
        out.push(json!({
            "id": format!("s{seq}.{done}"),
            "sequence_id": seq,
            "start": done == 0,
            "end": done + 1 == len,
            "inputs": {"Input": values},
        }));
        if done + 1 == len {
            left.remove(k);
        } else {
            left[k].2 += 1;
        }
    }
    out
}

fn data(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

/// Expected outputs of the accumulate_implicit/_direct models:
/// state += sum(Input); Output = Input + state.
fn expected_rowsum(requests: &[Value]) -> Vec<Vec<f64>> {
    let mut state = std::collections::HashMap::new();
    requests
        .iter()
        .map(|r| {
            let seq = r["sequence_id"].as_u64().unwrap();
            let x = data(&r["inputs"]["Input"]);
            let s = state.entry(seq).or_insert(0.0);
            if r["start"] == true {
                *s = 0.0;
            }
            *s += x.iter().sum::<f64>();
            x.iter().map(|v| v + *s).collect()
        })
        .collect()
}

/// Expected outputs of the stateful-backend accumulate model: Input is
/// [1, 4, 1, 5]; state[f] += Σ_s Input[s, f]; Output[s, f] = Input[s, f]
/// + state[f].
fn expected_stateful(requests: &[Value]) -> Vec<Vec<f64>> {
    let mut state = std::collections::HashMap::new();
    requests
        .iter()
        .map(|r| {
            let seq = r["sequence_id"].as_u64().unwrap();
            let x = data(&r["inputs"]["Input"]);
            let s = state.entry(seq).or_insert(vec![0.0; 5]);
            if r["start"] == true {
                *s = vec![0.0; 5];
            }
            for (i, v) in x.iter().enumerate() {
                s[i % 5] += v;
            }
            x.iter().enumerate().map(|(i, v)| v + s[i % 5]).collect()
        })
        .collect()
}

fn assert_outputs(out: &Output, requests: &[Value], expected: &[Vec<f64>], shape: &[i64]) {
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let lines = out.json_lines();
    assert_eq!(lines.len(), requests.len());
    for ((line, req), want) in lines.iter().zip(requests).zip(expected) {
        assert_eq!(line["id"], req["id"]);
        assert_eq!(line["sequence_id"], req["sequence_id"]);
        assert_eq!(line["status"], "ok", "{line}");
        let o = &line["outputs"]["Output"];
        assert_eq!(o["datatype"], "FP32");
        let got_shape: Vec<i64> = o["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_i64().unwrap())
            .collect();
        assert_eq!(got_shape, shape, "{line}");
        assert_eq!(&data(&o["data"]), want, "{line}");
    }
}

/// Whether scripts/run-reference.py can run here (python3 with
/// onnxruntime, numpy, protobuf; protoc).
fn reference_available() -> bool {
    let ok = std::process::Command::new("python3")
        .args(["-c", "import onnxruntime, numpy, google.protobuf"])
        .output()
        .is_ok_and(|o| o.status.success())
        && std::process::Command::new("protoc")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
    if !ok {
        if require_ort() {
            panic!("TRITONCTL_REQUIRE_ORT=1 but python3 lacks onnxruntime (or protoc is missing)");
        }
        eprintln!("skipped the Python comparison: python3 lacks onnxruntime or protoc is missing");
    }
    ok
}

fn assert_same_as_reference(model_dir: &Path, input: &Path, ours: &Output) {
    if !reference_available() {
        return;
    }
    let o = std::process::Command::new("python3")
        .arg(crate_root().join("scripts").join("run-reference.py"))
        .arg(model_dir)
        .arg(input)
        .arg("--sequence")
        .output()
        .expect("python3 runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let reference: Vec<Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(ours.json_lines(), reference);
}

fn sequences_case(model_name: &str, seed: u64, width: usize, stateful: bool) {
    let Some(lib) = ort() else { return };
    let dir = tempfile::tempdir().unwrap();
    let requests = interleaved(seed, 64, 6, width);
    let input = write_lines(dir.path(), "in.jsonl", &requests);
    let out = run_json(&lib, &model(model_name), &input)
        .args(["--sequence"])
        .run();
    if stateful {
        assert_outputs(
            &out,
            &requests,
            &expected_stateful(&requests),
            &[1, 4, 1, 5],
        );
    } else {
        assert_outputs(&out, &requests, &expected_rowsum(&requests), &[1, 4]);
    }
    assert_same_as_reference(&model(model_name), &input, &out);
}

#[test]
fn sixty_four_interleaved_sequences_implicit_state_oldest() {
    sequences_case("accumulate_implicit", 1, 4, false);
}

#[test]
fn sixty_four_interleaved_sequences_stateful_backend_oldest() {
    sequences_case("accumulate", 2, 20, true);
}

#[test]
fn sixty_four_interleaved_sequences_direct_two_instances() {
    sequences_case("accumulate_direct", 3, 4, false);
}

#[test]
fn more_sequences_than_slots_wait_in_the_backlog() {
    let Some(lib) = ort() else { return };
    let dir = tempfile::tempdir().unwrap();
    // accumulate_implicit has 4 candidate slots; 12 sequences start at once.
    let mut requests = Vec::new();
    for step in 0..3 {
        for seq in 1..=12u64 {
            requests.push(json!({
                "id": format!("s{seq}.{step}"),
                "arrival_us": 0,
                "sequence_id": seq,
                "start": step == 0,
                "end": step == 2,
                "inputs": {"Input": [seq as f64, step as f64, 0, 0]},
            }));
        }
    }
    let input = write_lines(dir.path(), "in.jsonl", &requests);
    let out = run_json(&lib, &model("accumulate_implicit"), &input)
        .args(["--sequence"])
        .run();
    assert_outputs(&out, &requests, &expected_rowsum(&requests), &[1, 4]);
}

/// A copy of accumulate_implicit with a short idle time.
fn short_idle_model(root: &Path, idle_us: u64) -> PathBuf {
    let src = model("accumulate_implicit");
    let dst = root.join("accumulate_implicit");
    std::fs::create_dir_all(dst.join("1")).unwrap();
    std::fs::copy(
        src.join("1").join("model.onnx"),
        dst.join("1").join("model.onnx"),
    )
    .unwrap();
    let cfg = std::fs::read_to_string(src.join("config.pbtxt")).unwrap();
    assert!(cfg.contains("max_sequence_idle_microseconds: 5000000"));
    let cfg = cfg.replace(
        "max_sequence_idle_microseconds: 5000000",
        &format!("max_sequence_idle_microseconds: {idle_us}"),
    );
    std::fs::write(dst.join("config.pbtxt"), cfg).unwrap();
    dst
}

const START_MESSAGE: &str = "must specify the START flag on the first request of the sequence";

#[test]
fn an_idle_sequence_is_released_and_its_next_request_fails() {
    let Some(lib) = ort() else { return };
    let dir = tempfile::tempdir().unwrap();
    let m = short_idle_model(dir.path(), 300_000);
    let requests = vec![
        json!({"id": "a0", "arrival_us": 0, "sequence_id": 1, "start": true, "inputs": {"Input": [1, 0, 0, 0]}}),
        json!({"id": "b0", "arrival_us": 0, "sequence_id": 2, "start": true, "inputs": {"Input": [2, 0, 0, 0]}}),
        json!({"id": "b1", "arrival_us": 50000, "sequence_id": 2, "inputs": {"Input": [2, 0, 0, 0]}}),
        json!({"id": "b2", "arrival_us": 100000, "sequence_id": 2, "inputs": {"Input": [2, 0, 0, 0]}}),
        json!({"id": "b3", "arrival_us": 150000, "sequence_id": 2, "end": true, "inputs": {"Input": [2, 0, 0, 0]}}),
        // Sequence 1 was idle for 1 s > 300 ms.
        json!({"id": "a1", "arrival_us": 1000000, "sequence_id": 1, "end": true, "inputs": {"Input": [1, 0, 0, 0]}}),
    ];
    let input = write_lines(dir.path(), "in.jsonl", &requests);
    let out = run_json(&lib, &m, &input).args(["--sequence"]).run();
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    let lines = out.json_lines();
    let a1 = &lines[5];
    assert_eq!(a1["status"], "error");
    assert_eq!(
        a1["error"],
        format!("inference request for sequence 1 to model 'accumulate_implicit' {START_MESSAGE}")
    );
    // The other sequence kept running, with its own state.
    for (k, line) in lines[1..5].iter().enumerate() {
        assert_eq!(line["status"], "ok", "{line}");
        let s = 2.0 * (k as f64 + 1.0);
        assert_eq!(
            data(&line["outputs"]["Output"]["data"]),
            vec![2.0 + s, s, s, s]
        );
    }
    assert_eq!(lines[0]["status"], "ok");
}

#[test]
fn a_request_of_an_unknown_sequence_without_start_fails_with_tritons_message() {
    let Some(lib) = ort() else { return };
    let dir = tempfile::tempdir().unwrap();
    let requests = vec![
        json!({"id": "x", "sequence_id": 42, "inputs": {"Input": [1, 2, 3, 4]}}),
        json!({"id": "y", "sequence_id": 43, "start": true, "end": true, "inputs": {"Input": [1, 2, 3, 4]}}),
    ];
    let input = write_lines(dir.path(), "in.jsonl", &requests);
    let out = run_json(&lib, &model("accumulate_implicit"), &input)
        .args(["--sequence"])
        .run();
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    let lines = out.json_lines();
    assert_eq!(lines[0]["status"], "error");
    assert_eq!(
        lines[0]["error"],
        format!("inference request for sequence 42 to model 'accumulate_implicit' {START_MESSAGE}")
    );
    assert_eq!(lines[1]["status"], "ok");
    assert_eq!(
        data(&lines[1]["outputs"]["Output"]["data"]),
        vec![11.0, 12.0, 13.0, 14.0]
    );
}

#[test]
fn scheduler_messages_name_the_request_by_its_own_id() {
    // The dynamic batcher refuses a request larger than max_batch_size
    // (8 for preprocess) with Triton's message, which carries the
    // request's id as the client gave it; the other requests run.
    let Some(lib) = ort() else { return };
    let dir = tempfile::tempdir().unwrap();
    let rows: Vec<Value> = (0..9).map(|_| json!([1, 2, 3, 4])).collect();
    let requests = vec![
        json!({"id": "first", "inputs": {"Input": [[0, 0, 0, 1]]}}),
        json!({"id": "too-big", "inputs": {"Input": rows}}),
        json!({"id": "last", "inputs": {"Input": [[1, 0, 0, 0]]}}),
    ];
    let input = write_lines(dir.path(), "in.jsonl", &requests);
    let out = run_json(&lib, &model("preprocess"), &input).run();
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    let lines = out.json_lines();
    assert_eq!(lines.len(), 3, "{}", out.stdout);
    assert_eq!(
        lines[1]["error"],
        "[request id: too-big] inference request batch-size must be <= 8 for 'preprocess'"
    );
    for (line, id, want) in [
        (&lines[0], "first", [1.0, 1.0, 1.0, 3.0]),
        (&lines[2], "last", [3.0, 1.0, 1.0, 1.0]),
    ] {
        assert_eq!(line["id"], id, "{line}");
        assert_eq!(line["status"], "ok", "{line}");
        assert_eq!(
            data(&line["outputs"]["Output"]["data"]),
            want.to_vec(),
            "{line}"
        );
    }
}

#[test]
fn sequences_never_see_each_others_state() {
    let Some(lib) = ort() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut requests = Vec::new();
    for step in 0..8u64 {
        for (seq, v) in [(1u64, 1_000_000.0), (2, 1.0)] {
            requests.push(json!({
                "id": format!("s{seq}.{step}"),
                "sequence_id": seq,
                "start": step == 0,
                "end": step == 7,
                "inputs": {"Input": [v, 0, 0, 0]},
            }));
        }
    }
    let input = write_lines(dir.path(), "in.jsonl", &requests);
    for m in ["accumulate_implicit", "accumulate_direct"] {
        let out = run_json(&lib, &model(m), &input).args(["--sequence"]).run();
        assert_eq!(out.code, 0, "{m}: {}{}", out.stdout, out.stderr);
        for (line, req) in out.json_lines().iter().zip(&requests) {
            let seq = req["sequence_id"].as_u64().unwrap();
            let step: f64 = req["id"].as_str().unwrap()[3..].parse().unwrap();
            let v = if seq == 1 { 1_000_000.0 } else { 1.0 };
            let state = v * (step + 1.0);
            assert_eq!(
                data(&line["outputs"]["Output"]["data"]),
                vec![v + state, state, state, state],
                "{m}: {line}"
            );
        }
    }
}

/// The single result line of `out`, which must be an error.
fn sole_error(out: &Output) -> String {
    let lines = out.json_lines();
    assert_eq!(lines.len(), 1, "{}", out.stdout);
    assert_eq!(lines[0]["status"], "error", "{}", out.stdout);
    lines[0]["error"].as_str().unwrap().to_string()
}

#[test]
fn bad_inputs_and_models_are_reported_with_exit_2() {
    let Some(lib) = ort() else { return };
    let dir = tempfile::tempdir().unwrap();
    // A bad tensor fails its request (exit 1), the run goes on.
    let wrong_shape = write_lines(
        dir.path(),
        "shape.jsonl",
        &[json!({"id": "r7", "inputs": {"Input": [1, 2, 3]}})],
    );
    let out = run_json(&lib, &model("preprocess"), &wrong_shape).run();
    assert_eq!(out.code, 1, "{}", out.stderr);
    let e = sole_error(&out);
    assert!(
        e.contains("shape.jsonl:1") && e.contains("request 'r7'") && e.contains("'Input'"),
        "{e}"
    );

    let unknown = write_lines(
        dir.path(),
        "unknown.jsonl",
        &[json!({"id": "r8", "inputs": {"Inptu": [1, 2, 3, 4]}})],
    );
    let out = run_json(&lib, &model("preprocess"), &unknown).run();
    assert_eq!(out.code, 1, "{}", out.stderr);
    let e = sole_error(&out);
    assert!(
        e.contains("request 'r8'") && e.contains("unknown input 'Inptu'"),
        "{e}"
    );

    // A file that is not JSON stops the run, naming line and column.
    let broken = dir.path().join("broken.jsonl");
    std::fs::write(
        &broken,
        "{\"id\": \"r1\", \"inputs\": {\"Input\": [1, 2, 3, 4]}}\n{\"id\": \"r2\", \"inputs\": {\n",
    )
    .unwrap();
    let out = run_json(&lib, &model("preprocess"), &broken).run();
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("broken.jsonl:2:") && out.stderr.contains("malformed JSON"),
        "{}",
        out.stderr
    );
    assert!(out.stdout.is_empty(), "{}", out.stdout);

    let ok = write_lines(
        dir.path(),
        "ok.jsonl",
        &[json!({"id": "r9", "inputs": {"Input": [1, 2, 3, 4]}})],
    );
    let bad = crate_root().join("testdata").join("run-bad");
    let out = run_json(&lib, &bad.join("broken"), &ok).run();
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("model.onnx") && out.stderr.contains("failed"),
        "{}",
        out.stderr
    );
    assert!(out.stdout.is_empty());

    let mismatch = write_lines(
        dir.path(),
        "mismatch.jsonl",
        &[json!({"id": "r9", "inputs": {"Inptu": [1, 2, 3, 4]}})],
    );
    let out = run_json(&lib, &bad.join("input_mismatch"), &mismatch).run();
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        // Triton's ONNX Runtime backend refuses the load with this text.
        out.stderr
            .contains("unexpected inference input 'Inptu', allowed inputs are: Input"),
        "{}",
        out.stderr
    );

    let missing = dir.path().join("missing.jsonl");
    let out = run_json(&lib, &model("preprocess"), &missing).run();
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("missing.jsonl"), "{}", out.stderr);
}

#[test]
fn cuda_without_a_driver_is_a_clear_error() {
    let Some(lib) = ort() else { return };
    let out = {
        let mut c = tritonctl();
        c.env("ORT_DYLIB_PATH", &lib).env("TRITONCTL_NO_CUDA", "1");
        c.arg("run")
            .arg(model("preprocess"))
            .arg("--input")
            .arg(model("preprocess.json"))
            .args(["--device", "cuda"]);
        c.run()
    };
    let stderr = &out.stderr;
    assert_eq!(out.code, 2, "{stderr}");
    assert!(stderr.contains("cannot run on cuda"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn without_onnx_runtime_the_run_stops_with_exit_2_and_an_install_hint() {
    let out = tritonctl()
        .env("TRITONCTL_NO_ORT", "1")
        .arg("run")
        .arg(model("preprocess"))
        .arg("--input")
        .arg(model("preprocess.json"))
        .args(["--device", "cpu"])
        .run();
    let stderr = &out.stderr;
    assert_eq!(out.code, 2, "{stderr}");
    assert!(
        stderr.contains("onnxruntime") || stderr.contains("`run` feature"),
        "{stderr}"
    );
}

#[test]
fn the_ensemble_gives_what_its_steps_give_by_hand() {
    let Some(lib) = ort() else { return };
    let dir = tempfile::tempdir().unwrap();
    let requests = interleaved(9, 6, 4, 4);
    let input = write_lines(dir.path(), "in.jsonl", &requests);
    let pipeline = run_json(&lib, &model("pipeline"), &input)
        .args(["--sequence"])
        .run();
    assert_eq!(pipeline.code, 0, "{}", pipeline.stderr);
    let first = run_json(&lib, &model("preprocess"), &input).run();
    assert_eq!(first.code, 0, "{}", first.stderr);
    let second_in: Vec<Value> = requests
        .iter()
        .zip(first.json_lines())
        .map(|(r, o)| {
            let mut r = r.clone();
            r["inputs"]["Input"] = o["outputs"]["Output"]["data"].clone();
            r
        })
        .collect();
    let second_in = write_lines(dir.path(), "second.jsonl", &second_in);
    let second = run_json(&lib, &model("accumulate_implicit"), &second_in)
        .args(["--sequence"])
        .run();
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert_eq!(pipeline.json_lines(), second.json_lines());
    // And both are the running sums of the preprocessed values (2x + 1).
    let scaled: Vec<Value> = requests
        .iter()
        .map(|r| {
            let mut r = r.clone();
            let x: Vec<f64> = data(&r["inputs"]["Input"])
                .iter()
                .map(|v| 2.0 * v + 1.0)
                .collect();
            r["inputs"]["Input"] = json!(x);
            r
        })
        .collect();
    assert_outputs(&pipeline, &requests, &expected_rowsum(&scaled), &[1, 4]);
}

#[test]
fn profile_writes_a_latency_file_simulate_accepts() {
    let Some(lib) = ort() else { return };
    let dir = tempfile::tempdir().unwrap();
    let lat = dir.path().join("lat.txt");
    let out = run_json(&lib, &model("preprocess"), &model("preprocess.json"))
        .args(["--profile", lat.to_str().unwrap()])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let spec = std::fs::read_to_string(&lat).unwrap();
    let parsed = tritonctl::batching::Latency::parse(spec.trim()).expect("a latency spec");
    assert!(matches!(parsed, tritonctl::batching::Latency::Points(ref p) if !p.is_empty()));
}

/// The table of the lookup model (scripts/gen-run-models.py): Output =
/// running sum of TABLE[Index] over the sequence.
const LOOKUP_TABLE: [f64; 4] = [10.0, 20.0, 30.0, 40.0];

#[test]
fn an_onnx_runtime_error_fails_its_request_alone_and_other_sequences_keep_running() {
    let Some(lib) = ort() else { return };
    let dir = tempfile::tempdir().unwrap();
    // Six sequences of five steps, interleaved; two requests carry an
    // index the model's Gather cannot take.
    let bad: [(u64, u64, i64); 2] = [(3, 1, 9), (5, 3, -7)];
    let mut rng = Lcg(11);
    let mut steps = [0u64; 7];
    let mut requests = Vec::new();
    while steps[1..].iter().any(|&s| s < 5) {
        let seq = 1 + rng.below(6);
        let step = steps[seq as usize];
        if step == 5 {
            continue;
        }
        steps[seq as usize] += 1;
        let index = bad
            .iter()
            .find(|b| b.0 == seq && b.1 == step)
            .map_or(rng.below(4) as i64, |b| b.2);
        requests.push(json!({
            "id": format!("s{seq}.{step}"),
            "sequence_id": seq,
            "start": step == 0,
            "end": step == 4,
            "inputs": {"Index": [index]},
        }));
    }
    let input = write_lines(dir.path(), "in.jsonl", &requests);
    let out = run_json(&lib, &model("lookup"), &input)
        .args(["--sequence"])
        .run();
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    let lines = out.json_lines();
    assert_eq!(lines.len(), requests.len());
    let mut sums = std::collections::HashMap::new();
    let mut failed = Vec::new();
    for (line, req) in lines.iter().zip(&requests) {
        assert_eq!(line["id"], req["id"]);
        let seq = req["sequence_id"].as_u64().unwrap();
        let id = req["id"].as_str().unwrap();
        let index = req["inputs"]["Index"][0].as_i64().unwrap();
        if !(0..4).contains(&index) {
            assert_eq!(line["status"], "error", "{line}");
            let e = line["error"].as_str().unwrap();
            assert!(
                e.contains(&format!("request {id}"))
                    && e.contains("ONNX Runtime")
                    && e.contains("Table_Lookup"),
                "{e}"
            );
            failed.push(id.to_string());
            continue;
        }
        if bad.iter().any(|b| b.0 == seq) {
            // The failing sequences: not checked after their failure.
            continue;
        }
        let s = sums.entry(seq).or_insert(0.0);
        *s += LOOKUP_TABLE[index as usize];
        assert_eq!(line["status"], "ok", "{line}");
        assert_eq!(data(&line["outputs"]["Output"]["data"]), vec![*s], "{line}");
    }
    failed.sort();
    assert_eq!(failed, ["s3.1", "s5.3"]);
    assert_eq!(sums.len(), 4);
}

#[test]
fn wrong_types_and_missing_inputs_name_the_request_and_the_tensor() {
    let Some(lib) = ort() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, Value, &str, &str); 5] = [
        (
            "preprocess",
            json!({"id": "t1", "inputs": {"Input": [1, "two", 3, 4]}}),
            "'Input'",
            "expected a number for FP32",
        ),
        (
            "preprocess",
            json!({"id": "t2", "inputs": {"Input": [true, false, true, false]}}),
            "'Input'",
            "FP32",
        ),
        (
            "lookup",
            json!({"id": "t3", "sequence_id": 1, "start": true, "inputs": {"Index": [1.5]}}),
            "'Index'",
            "not an integer (INT64)",
        ),
        (
            "preprocess",
            json!({"id": "t4", "inputs": {}}),
            "'Input'",
            "missing input 'Input'",
        ),
        (
            "lookup",
            json!({"id": "t5", "sequence_id": 1, "start": true}),
            "'Index'",
            "missing input 'Index'",
        ),
    ];
    for (k, (m, req, tensor, what)) in cases.into_iter().enumerate() {
        let ok = json!({"id": "fine", "sequence_id": 2, "start": true, "inputs": {"Index": [0]}});
        let ok = if m == "lookup" {
            ok
        } else {
            json!({"id": "fine", "inputs": {"Input": [1, 2, 3, 4]}})
        };
        let id = req["id"].as_str().unwrap().to_string();
        let input = write_lines(dir.path(), &format!("case{k}.jsonl"), &[ok, req]);
        let extra: &[&str] = if m == "lookup" { &["--sequence"] } else { &[] };
        let out = run_json(&lib, &model(m), &input).args(extra).run();
        // The bad request fails alone; the good one runs.
        assert_eq!(out.code, 1, "{id}: {}{}", out.stdout, out.stderr);
        let lines = out.json_lines();
        assert_eq!(lines.len(), 2, "{}", out.stdout);
        assert_eq!(lines[0]["id"], "fine");
        assert_eq!(lines[0]["status"], "ok", "{}", lines[0]);
        assert_eq!(lines[1]["id"], id.as_str());
        assert_eq!(lines[1]["status"], "error", "{}", lines[1]);
        let e = lines[1]["error"].as_str().unwrap();
        assert!(
            e.contains(&format!("request '{id}'"))
                && e.contains(tensor)
                && e.contains(what)
                && e.contains(&format!("case{k}.jsonl:2")),
            "{id}: {e}"
        );
        assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    }
}

#[test]
fn a_bad_step_fails_the_rest_of_its_sequence_and_the_others_keep_running() {
    let Some(lib) = ort() else { return };
    let dir = tempfile::tempdir().unwrap();
    // perf_analyzer sequences: 4 sequences of 5 steps; step 2 of sequence
    // 3 (data[2][2]) has a string where FP32 values go.
    let value = |s: usize, k: usize, j: usize| (s * 10 + k) as f64 - j as f64;
    let seqs: Vec<Value> = (0..4)
        .map(|s| {
            Value::Array(
                (0..5)
                    .map(|k| {
                        let v: Vec<Value> = (0..4)
                            .map(|j| {
                                if (s, k, j) == (2, 2, 1) {
                                    json!("seven")
                                } else {
                                    json!(value(s, k, j))
                                }
                            })
                            .collect();
                        json!({ "Input": v })
                    })
                    .collect(),
            )
        })
        .collect();
    let input = dir.path().join("seq.json");
    std::fs::write(&input, json!({ "data": seqs }).to_string()).unwrap();
    let out = run_json(&lib, &model("accumulate_implicit"), &input)
        .args(["--sequence"])
        .run();
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    let lines = out.json_lines();
    assert_eq!(lines.len(), 20, "{}", out.stdout);
    for s in 0..4 {
        // state += sum(Input); Output = Input + state.
        let mut state = 0.0;
        for k in 0..5 {
            let line = &lines[s * 5 + k];
            assert_eq!(line["id"], (s * 5 + k).to_string(), "{line}");
            assert_eq!(line["sequence_id"], s as u64 + 1, "{line}");
            if s == 2 && k >= 2 {
                assert_eq!(line["status"], "error", "{line}");
                let e = line["error"].as_str().unwrap();
                if k == 2 {
                    assert!(
                        e.contains("seq.json: at data[2][2].Input[1]")
                            && e.contains("request 12, input 'Input'")
                            && e.contains("expected a number for FP32"),
                        "{e}"
                    );
                } else {
                    assert!(
                        e.contains(&format!("request {}", s * 5 + k))
                            && e.contains("sequence 3 was aborted")
                            && e.contains("bad request 12"),
                        "{e}"
                    );
                }
                continue;
            }
            let x: Vec<f64> = (0..4).map(|j| value(s, k, j)).collect();
            state += x.iter().sum::<f64>();
            let want: Vec<f64> = x.iter().map(|v| v + state).collect();
            assert_eq!(line["status"], "ok", "{line}");
            assert_eq!(data(&line["outputs"]["Output"]["data"]), want, "{line}");
        }
    }
}

/// A copy of the stateful-backend accumulate model whose config is
/// changed by `edit`.
fn accumulate_variant(root: &Path, edit: impl Fn(String) -> String) -> PathBuf {
    model_variant("accumulate", root, edit)
}

/// A copy of test model `name` under `root`, its config edited.
fn model_variant(name: &str, root: &Path, edit: impl Fn(String) -> String) -> PathBuf {
    let src = model(name);
    let dst = root.join(name);
    std::fs::create_dir_all(dst.join("1")).unwrap();
    std::fs::copy(
        src.join("1").join("model.onnx"),
        dst.join("1").join("model.onnx"),
    )
    .unwrap();
    let cfg = std::fs::read_to_string(src.join("config.pbtxt")).unwrap();
    let changed = edit(cfg.clone());
    assert_ne!(changed, cfg, "the edit changed nothing");
    std::fs::write(dst.join("config.pbtxt"), changed).unwrap();
    dst
}

/// A model parameter, to append to a config.
fn parameter(key: &str, value: &str) -> String {
    format!("parameters {{ key: \"{key}\" value {{ string_value: \"{value}\" }} }}\n")
}

fn accumulate_request(id: &str, seq: Value, start: bool, end: bool, base: f64) -> Value {
    let values: Vec<f64> = (0..20).map(|j| base + j as f64).collect();
    json!({"id": id, "arrival_us": 0, "sequence_id": seq, "start": start, "end": end,
           "inputs": {"Input": values}})
}

#[test]
fn the_stateful_backend_holds_fewer_sequences_than_triton_admits() {
    let Some(lib) = ort() else { return };
    let dir = tempfile::tempdir().unwrap();
    // max_candidate_sequences 8 with the default use ratio 0.9: the backend
    // stores 7 sequences, Triton admits 8 (docs/spec/stateful-backend.md §4,
    // §6).
    let m = accumulate_variant(dir.path(), |c| {
        c.replace(
            "max_candidate_sequence_use_ratio\"\n    value { string_value: \"1.0\" }",
            "max_candidate_sequence_use_ratio\"\n    value { string_value: \"0.9\" }",
        )
    });
    let mut requests = Vec::new();
    for step in 0..2 {
        for seq in 1..=8u64 {
            let base = 100.0 * seq as f64 + 1000.0 * step as f64;
            requests.push(accumulate_request(
                &format!("s{seq}.{step}"),
                json!(seq),
                step == 0,
                step == 1,
                base,
            ));
        }
    }
    let input = write_lines(dir.path(), "in.jsonl", &requests);
    let out = run_json(&lib, &m, &input).args(["--sequence"]).run();
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    let lines = out.json_lines();
    let too_many: Vec<&Value> = lines.iter().filter(|l| l["status"] == "error").collect();
    assert_eq!(too_many.len(), 1, "{}", out.stdout);
    let failed = too_many[0]["id"].as_str().unwrap().to_string();
    assert!(failed.ends_with(".0"), "{failed}");
    assert_eq!(
        too_many[0]["error"],
        format!("request {failed}: Too many simultaneous connections")
    );
    // The seven stored sequences are unaffected.
    let failed_seq = too_many[0]["sequence_id"].clone();
    let kept: Vec<Value> = requests
        .iter()
        .filter(|r| r["sequence_id"] != failed_seq)
        .cloned()
        .collect();
    let want = expected_stateful(&kept);
    let got: Vec<&Value> = lines
        .iter()
        .filter(|l| l["sequence_id"] != failed_seq)
        .collect();
    assert_eq!(got.len(), 14);
    for (line, w) in got.iter().zip(&want) {
        assert_eq!(line["status"], "ok", "{line}");
        assert_eq!(&data(&line["outputs"]["Output"]["data"]), w, "{line}");
    }
    // With the committed ratio 1.0 all eight fit.
    let out = run_json(&lib, &model("accumulate"), &input)
        .args(["--sequence"])
        .run();
    assert_outputs(
        &out,
        &requests,
        &expected_stateful(&requests),
        &[1, 4, 1, 5],
    );
}

#[test]
fn infer_end_requests_0_answers_end_requests_without_running_them() {
    let Some(lib) = ort() else { return };
    let dir = tempfile::tempdir().unwrap();
    let m = accumulate_variant(dir.path(), |c| c + &parameter("infer_end_requests", "0"));
    // Two sequences of two data requests each, then an END-only request
    // (as the backend's example client sends them).
    let mut requests = Vec::new();
    for step in 0..3 {
        for seq in 1..=2u64 {
            requests.push(accumulate_request(
                &format!("s{seq}.{step}"),
                json!(seq),
                step == 0,
                step == 2,
                10.0 * seq as f64 + 100.0 * step as f64,
            ));
        }
    }
    let input = write_lines(dir.path(), "in.jsonl", &requests);
    let out = run_json(&lib, &m, &input).args(["--sequence"]).run();
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let lines = out.json_lines();
    let want = expected_stateful(&requests);
    for (k, line) in lines.iter().enumerate() {
        assert_eq!(line["status"], "ok", "{line}");
        let o = &line["outputs"]["Output"];
        if k < 4 {
            assert_eq!(o["shape"], json!([1, 4, 1, 5]), "{line}");
            assert_eq!(data(&o["data"]), want[k], "{line}");
        } else {
            // Not run: one element, every dimension 1.
            assert_eq!(o["shape"], json!([1, 1, 1, 1]), "{line}");
            assert_eq!(o["data"].as_array().unwrap().len(), 1, "{line}");
        }
    }
    // The default (infer_end_requests 1) runs them.
    let out = run_json(&lib, &model("accumulate"), &input)
        .args(["--sequence"])
        .run();
    assert_outputs(&out, &requests, &want, &[1, 4, 1, 5]);
}

#[test]
fn a_string_correlation_id_for_a_numeric_corrid_fails_with_the_backends_message() {
    let Some(lib) = ort() else { return };
    let dir = tempfile::tempdir().unwrap();
    let requests = vec![
        accumulate_request("n0", json!(1), true, false, 0.0),
        accumulate_request("t0", json!("abc"), true, false, 50.0),
        accumulate_request("n1", json!(1), false, true, 100.0),
        accumulate_request("t1", json!("abc"), false, true, 150.0),
    ];
    let input = write_lines(dir.path(), "in.jsonl", &requests);
    let out = run_json(&lib, &model("accumulate"), &input)
        .args(["--sequence"])
        .run();
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    let lines = out.json_lines();
    for k in [1, 3] {
        let id = requests[k]["id"].as_str().unwrap();
        assert_eq!(
            lines[k]["error"],
            format!("request {id}: correlation ID in request is not an unsigned int"),
            "{}",
            lines[k]
        );
    }
    let numeric = vec![requests[0].clone(), requests[2].clone()];
    let want = expected_stateful(&numeric);
    for (k, w) in [0, 2].into_iter().zip(&want) {
        assert_eq!(lines[k]["status"], "ok", "{}", lines[k]);
        assert_eq!(&data(&lines[k]["outputs"]["Output"]["data"]), w);
    }
    // And the reverse with a TYPE_STRING CORRID.
    let m = accumulate_variant(dir.path(), |c| {
        c.replace(
            "kind: CONTROL_SEQUENCE_CORRID\n          data_type: TYPE_UINT64",
            "kind: CONTROL_SEQUENCE_CORRID\n          data_type: TYPE_STRING",
        )
    });
    let out = run_json(&lib, &m, &input).args(["--sequence"]).run();
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    let lines = out.json_lines();
    assert_eq!(
        lines[0]["error"],
        "request n0: correlation ID in request is not a string"
    );
    assert_eq!(lines[1]["status"], "ok", "{}", lines[1]);
}

/// Triton runs an onnxruntime-backend model's `model_warmup` samples on
/// every instance when it loads the model: good samples leave the outputs
/// as they are; a sample the backend refuses (a batch above
/// max_batch_size) or that ONNX Runtime fails (an input the model does not
/// have) stops the run before any request, with Triton's words. A
/// stateful-backend model's samples are not run, and a note says so.
#[test]
fn warmup_samples_run_at_load_and_a_failing_one_stops_the_run() {
    let Some(lib) = ort() else { return };
    let dir = tempfile::tempdir().unwrap();
    let input = write_lines(
        dir.path(),
        "in.jsonl",
        &[json!({"id": "a", "inputs": {"Input": [1, 2, 3, 4]}})],
    );
    let sample = |name: &str, batch: u32, extra: &str| {
        format!(
            "model_warmup [ {{ name: \"{name}\" batch_size: {batch} count: 2 \
             inputs {{ key: \"Input\" value {{ data_type: TYPE_FP32 dims: [ 4 ] random_data: true }} }} {extra} }} ]\n"
        )
    };
    let variant = |label: &str, warmup: String| {
        model_variant("preprocess", &dir.path().join(label), move |cfg| {
            cfg + &warmup
        })
    };
    let good = run_json(&lib, &variant("good", sample("w", 8, "")), &input).run();
    assert_eq!(good.code, 0, "{}", good.stderr);
    assert_eq!(
        data(&good.json_lines()[0]["outputs"]["Output"]["data"]),
        vec![3.0, 5.0, 7.0, 9.0]
    );
    let big = run_json(&lib, &variant("big", sample("big", 9, "")), &input).run();
    assert_eq!(big.code, 2, "{}", big.stderr);
    let refusal = "batch size 9 for 'preprocess', max allowed is 8; ";
    assert!(
        big.stderr
            .contains(&format!("failed to run warmup sample 'big': {refusal}"))
            && big.stderr.matches(refusal).count() == 9,
        "{}",
        big.stderr
    );
    assert!(big.stdout.is_empty(), "{}", big.stdout);
    let extra =
        "inputs { key: \"Extra\" value { data_type: TYPE_FP32 dims: [ 1 ] zero_data: true } }";
    let odd = run_json(&lib, &variant("odd", sample("odd", 1, extra)), &input).run();
    assert_eq!(odd.code, 2, "{}", odd.stderr);
    assert!(
        odd.stderr.contains("failed to run warmup sample 'odd': ")
            && odd.stderr.contains("'Extra'"),
        "{}",
        odd.stderr
    );
    assert!(odd.stdout.is_empty(), "{}", odd.stdout);
    // The stateful backend: not run, and said.
    let stateful = model_variant("accumulate", &dir.path().join("stateful"), |cfg| {
        cfg + "model_warmup [ { name: \"w\" batch_size: 1 inputs { key: \"Input\" value { data_type: TYPE_FP32 dims: [ 4, 1, 5 ] zero_data: true } } } ]\n"
    });
    let seq = write_lines(
        dir.path(),
        "seq.jsonl",
        &[accumulate_request("s", json!(1), true, true, 1.0)],
    );
    let out = run_json(&lib, &stateful, &seq).args(["--sequence"]).run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("model_warmup is not run for a stateful-backend model"),
        "{}",
        out.stderr
    );
}

/// Triton's onnxruntime backend sets its ONNX Runtime session from the
/// config (CPU arena, memory patterns, thread counts, execution mode,
/// graph optimization level): every setting gives the same outputs; a
/// value the backend refuses stops the run before any request, with
/// Triton's words.
#[test]
fn the_onnxruntime_backends_session_settings_keep_the_outputs_and_a_bad_value_stops_the_run() {
    let Some(lib) = ort() else { return };
    let dir = tempfile::tempdir().unwrap();
    let input = write_lines(
        dir.path(),
        "in.jsonl",
        &[
            json!({"id": "a", "inputs": {"Input": [1, 2, 3, 4]}}),
            json!({"id": "b", "inputs": {"Input": [-1.5, 0, 0.25, 8]}}),
        ],
    );
    let variant = |label: &str, settings: &str| {
        let settings = settings.to_string();
        model_variant("preprocess", &dir.path().join(label), move |cfg| {
            cfg + &settings
        })
    };
    let good = [
        ("arena-on", parameter("enable_mem_arena", "1")),
        ("arena-off", parameter("enable_mem_arena", "off")),
        (
            "threads",
            parameter("intra_op_thread_count", "2")
                + &parameter("inter_op_thread_count", "2")
                + &parameter("execution_mode", "1"),
        ),
        // More threads than this host has CPUs: lowered to their number.
        (
            "many-threads",
            parameter("intra_op_thread_count", "1024")
                + &parameter("inter_op_thread_count", "1024")
                + &parameter("execution_mode", "1"),
        ),
        (
            "plain",
            parameter("enable_mem_pattern", "false") + "optimization { graph { level: 2 } }\n",
        ),
        (
            "basic",
            "optimization { graph { level: -1 } }\n".to_string(),
        ),
    ];
    for (label, settings) in good {
        let out = run_json(&lib, &variant(label, &settings), &input).run();
        assert_eq!(out.code, 0, "{label}: {}", out.stderr);
        let got: Vec<Vec<f64>> = out
            .json_lines()
            .iter()
            .map(|l| data(&l["outputs"]["Output"]["data"]))
            .collect();
        // Output = 2 * Input + 1 (testdata/run/preprocess).
        assert_eq!(
            got,
            vec![vec![3.0, 5.0, 7.0, 9.0], vec![-2.0, 1.0, 1.5, 17.0]],
            "{label}"
        );
    }
    let bad = [
        (
            parameter("enable_mem_arena", "sometimes"),
            "parameter enable_mem_arena: failed to convert 'sometimes' to boolean",
        ),
        (
            parameter("intra_op_thread_count", "lots"),
            "parameter intra_op_thread_count: failed to convert 'lots' to integral number",
        ),
        (
            parameter("execution_mode", "3"),
            "Expected values for  execution_mode are 0 or 1 but got 3 .",
        ),
        // Issue 28: these hung or crashed inside ONNX Runtime.
        (
            parameter("intra_op_thread_count", "2000"),
            "parameter intra_op_thread_count: 2000 threads is more than tritonctl starts",
        ),
        (
            parameter("inter_op_thread_count", "100000"),
            "parameter inter_op_thread_count: 100000 threads is more than tritonctl starts",
        ),
    ];
    for (i, (settings, message)) in bad.iter().enumerate() {
        let out = run_json(&lib, &variant(&format!("bad{i}"), settings), &input).run();
        assert_eq!(out.code, 2, "{settings}: {}", out.stderr);
        assert!(
            out.stderr.contains("model 'preprocess'") && out.stderr.contains(message),
            "{settings}: {}",
            out.stderr
        );
        assert!(out.stdout.is_empty(), "{}", out.stdout);
    }
}

/// A stateful-backend model over the hand-written accumulate model that
/// runs at most two rows (`runtime::testmodel`), its runs padded to the
/// preferred batch size 2 (`always_pad_to_max_batch`), with
/// `max_batch_size` as given.
#[cfg(feature = "run")]
fn two_row_model(root: &Path, max_batch_size: u32) -> PathBuf {
    let dir = root.join(format!("two_rows_{max_batch_size}"));
    std::fs::create_dir_all(dir.join("1")).unwrap();
    std::fs::write(
        dir.join("1").join("model.onnx"),
        tritonctl::runtime::testmodel::accumulate_at_most_two_rows(),
    )
    .unwrap();
    let cfg = format!(
        r#"name: "two_rows_{max_batch_size}"
backend: "stateful"
max_batch_size: {max_batch_size}
input [ {{ name: "INPUT" data_type: TYPE_FP32 dims: [ -1, 4 ] }} ]
output [ {{ name: "OUTPUT" data_type: TYPE_FP32 dims: [ -1, 1 ] }} ]
instance_group [ {{ count: 1 kind: KIND_CPU }} ]
sequence_batching {{
  max_sequence_idle_microseconds: 5000000
  oldest {{ max_candidate_sequences: 4 preferred_batch_size: [ 2 ] }}
  control_input [
    {{ name: "RESET" control [ {{ kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] }} ] }},
    {{ name: "END" control [ {{ kind: CONTROL_SEQUENCE_END int32_false_true: [ 0, 1 ] }} ] }}
  ]
}}
parameters {{ key: "onnx_file_name" value {{ string_value: "model.onnx" }} }}
parameters {{ key: "state_pairs" value {{ string_value: "<<<STATE_IN, STATE_OUT>>>" }} }}
parameters {{ key: "always_pad_to_max_batch" value {{ string_value: "1" }} }}
parameters {{ key: "max_candidate_sequence_use_ratio" value {{ string_value: "1.0" }} }}
"#
    );
    std::fs::write(dir.join("config.pbtxt"), cfg).unwrap();
    dir
}

/// The stateful backend warms every instance up when it loads it
/// (docs/spec/stateful-backend.md §7): zero inputs, every row starting a
/// sequence, at max_batch_size, at 1 (unless runs are padded to the preferred
/// sizes) and at each preferred batch size. A model that cannot run at
/// its max_batch_size fails there, before any request, although the
/// padded runs would succeed; with max_batch_size 2 the same model runs.
#[cfg(feature = "run")]
#[test]
fn the_stateful_backend_warms_up_at_load_and_a_model_that_cannot_run_its_max_batch_fails_there() {
    let Some(lib) = ort() else { return };
    let dir = tempfile::tempdir().unwrap();
    let requests: Vec<Value> = (0..3)
        .map(|step| {
            json!({"id": format!("s.{step}"), "sequence_id": 7, "start": step == 0,
                   "end": step == 2, "inputs": {"INPUT": [1.0, 2.0, 3.0, f64::from(step)]}})
        })
        .collect();
    let input = write_lines(dir.path(), "in.jsonl", &requests);

    let fits = run_json(&lib, &two_row_model(dir.path(), 2), &input)
        .args(["--sequence"])
        .run();
    assert_eq!(fits.code, 0, "{}{}", fits.stdout, fits.stderr);
    let sums: Vec<Vec<f64>> = fits
        .json_lines()
        .iter()
        .map(|l| data(&l["outputs"]["OUTPUT"]["data"]))
        .collect();
    assert_eq!(sums, [vec![6.0], vec![13.0], vec![21.0]]);

    let too_big = run_json(&lib, &two_row_model(dir.path(), 4), &input)
        .args(["--sequence"])
        .run();
    assert_eq!(too_big.code, 2, "{}{}", too_big.stdout, too_big.stderr);
    assert!(too_big.stdout.is_empty(), "{}", too_big.stdout);
    assert!(
        too_big.stderr.contains(
            "model 'two_rows_4': the stateful backend's warm-up run at batch size 4 failed: "
        ) && too_big.stderr.contains("ONNX Runtime"),
        "{}",
        too_big.stderr
    );
    assert!(!too_big.stderr.contains("panicked"), "{}", too_big.stderr);
}

/// GPU instances of the target server (`--gpus`) run on this machine's
/// CUDA devices when it has them; without CUDA they run on the CPU and a
/// note says why. Without `--gpus` the server has no GPU and Triton
/// refuses the groups, so `run` does too.
#[test]
fn gpu_instances_are_placed_or_explained() {
    let Some(lib) = ort() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("preprocess");
    std::fs::create_dir_all(dir.join("1")).unwrap();
    std::fs::copy(
        model("preprocess").join("1").join("model.onnx"),
        dir.join("1").join("model.onnx"),
    )
    .unwrap();
    let cfg = std::fs::read_to_string(model("preprocess").join("config.pbtxt"))
        .unwrap()
        .replace(
            "count: 1\n    kind: KIND_CPU",
            "count: 2\n    kind: KIND_GPU\n    gpus: [ 0, 1 ]",
        );
    assert!(cfg.contains("KIND_GPU"));
    std::fs::write(dir.join("config.pbtxt"), cfg).unwrap();
    let input = write_lines(
        tmp.path(),
        "in.jsonl",
        &[json!({"id": "r1", "inputs": {"Input": [1, 2, 3, 4]}})],
    );

    let out = run_json(&lib, &dir, &input)
        .env("TRITONCTL_NO_CUDA", "1")
        .run();
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("specifies invalid or unsupported gpu id 0"),
        "{}",
        out.stderr
    );

    let out = run_json(&lib, &dir, &input)
        .env("TRITONCTL_NO_CUDA", "1")
        .args(["--gpus", "0,1"])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains(
            "GPU instance(s) preprocess_0_0 (gpu:0), preprocess_0_0 (gpu:1), preprocess_0_1 (gpu:0), preprocess_0_1 (gpu:1) run on the CPU: this machine has no usable CUDA device"
        ),
        "{}",
        out.stderr
    );
    // The config is complete: auto-complete changes nothing worth a warning.
    assert!(!out.stderr.contains("auto-complete"), "{}", out.stderr);
    let results = out.json_lines();
    assert_eq!(
        results[0]["outputs"]["Output"]["data"],
        json!([3.0, 5.0, 7.0, 9.0])
    );
}

/// A copy of the ONNX file of test model `name` under `root`, without a
/// config (`autoconfig --write` writes it).
fn bare_copy(name: &str, root: &Path) -> PathBuf {
    let dst = root.join(name);
    std::fs::create_dir_all(dst.join("1")).unwrap();
    std::fs::copy(
        model(name).join("1").join("model.onnx"),
        dst.join("1").join("model.onnx"),
    )
    .unwrap();
    dst
}

#[test]
fn a_batch_shaped_model_runs_with_the_config_autoconfig_writes() {
    // testdata/run/double_batch: Output = 2 * Input, both FP32 [batch].
    // Triton's auto-complete gives it dims [1] with an empty reshape (the model
    // sees [n], the client sends and receives [b, 1]); validate accepts
    // that, and run must take and give those shapes.
    let Some(lib) = ort() else { return };
    let dir = tempfile::tempdir().unwrap();
    let m = bare_copy("double_batch", dir.path());
    let w = tritonctl()
        .env("ORT_DYLIB_PATH", &lib)
        .arg("autoconfig")
        .arg(&m)
        .arg("--write")
        .run();
    assert_eq!(w.code, 0, "{}", w.stderr);
    let cfg = std::fs::read_to_string(m.join("config.pbtxt")).unwrap();
    let compact: String = cfg.split_whitespace().collect::<Vec<_>>().join(" ");
    // (An empty reshape is printed `reshape { }`: `shape: [ ]` is its
    // default.)
    assert!(
        compact.contains("dims: [ 1 ] reshape { }") && compact.contains("max_batch_size: 4"),
        "{cfg}"
    );
    let v = tritonctl().arg("validate").arg(&m).run();
    assert_eq!(v.code, 0, "{}{}", v.stdout, v.stderr);

    // Requests of batch size 1 and 2 (nested lists: [b, 1]), arriving
    // together so that the dynamic batcher may stack them.
    let requests = [
        json!({"id": "a", "inputs": {"Input": [1.5]}}),
        json!({"id": "b", "inputs": {"Input": [[3], [-4]]}}),
        json!({"id": "c", "inputs": {"Input": [0.25]}}),
        json!({"id": "d", "inputs": {"Input": {"content": [7, 8], "shape": [2, 1]}}}),
    ];
    let input = write_lines(dir.path(), "in.jsonl", &requests);
    let out = run_json(&lib, &m, &input).run();
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let lines = out.json_lines();
    let want: [(&str, Vec<i64>, Vec<f64>); 4] = [
        ("a", vec![1, 1], vec![3.0]),
        ("b", vec![2, 1], vec![6.0, -8.0]),
        ("c", vec![1, 1], vec![0.5]),
        ("d", vec![2, 1], vec![14.0, 16.0]),
    ];
    assert_eq!(lines.len(), want.len(), "{}", out.stdout);
    for (line, (id, shape, values)) in lines.iter().zip(want) {
        assert_eq!(line["id"], id, "{line}");
        assert_eq!(line["status"], "ok", "{line}");
        let o = &line["outputs"]["Output"];
        assert_eq!(o["shape"], json!(shape), "{line}");
        assert_eq!(data(&o["data"]), values, "{line}");
    }

    // The request checks use dims: a request of shape [1, 2] is refused
    // as Triton refuses it (dims [1]), not handed to the model as [2].
    let wrong = write_lines(
        dir.path(),
        "wrong.jsonl",
        &[json!({"id": "w", "inputs": {"Input": {"content": [1, 2], "shape": [2]}}})],
    );
    let out = run_json(&lib, &m, &wrong).run();
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    let e = sole_error(&out);
    assert!(e.contains("request 'w'") && e.contains("'Input'"), "{e}");
}

/// A model directory `root/name` with `config` and the file `file` in
/// version 1.
fn model_with(root: &Path, name: &str, config: &str, file: &str) -> PathBuf {
    let d = root.join(name);
    std::fs::create_dir_all(d.join("1")).unwrap();
    std::fs::write(d.join("config.pbtxt"), config).unwrap();
    if !file.is_empty() {
        std::fs::write(d.join("1").join(file), b"").unwrap();
    }
    d
}

const IO4: &str = "input [ { name: \"Input\" data_type: TYPE_FP32 dims: [ 4 ] } ]\n\
                   output [ { name: \"Output\" data_type: TYPE_FP32 dims: [ 4 ] } ]\n";

#[test]
fn backends_run_cannot_execute_are_refused_before_any_request() {
    let Some(lib) = ort() else { return };
    let dir = tempfile::tempdir().unwrap();
    let input = write_lines(
        dir.path(),
        "in.jsonl",
        &[json!({"id": "r1", "inputs": {"Input": [1, 2, 3, 4]}})],
    );
    let refused = |m: &Path, model: &str, backend: &str| {
        let out = run_json(&lib, m, &input).run();
        assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
        assert!(out.stdout.is_empty(), "{}", out.stdout);
        let e = &out.stderr;
        assert!(
            e.contains(&format!("model '{model}' uses backend '{backend}'"))
                && e.contains("cannot execute")
                && e.contains("tritonctl perf")
                && e.contains("export the model to ONNX"),
            "{e}"
        );
        assert!(!e.contains("missing"), "{e}");
        out.stderr
    };
    let python = model_with(
        dir.path(),
        "py",
        &format!("name: \"py\"\nbackend: \"python\"\nmax_batch_size: 4\n{IO4}"),
        "model.py",
    );
    refused(&python, "py", "python");
    let trt = model_with(
        dir.path(),
        "trt",
        &format!("name: \"trt\"\nplatform: \"tensorrt_plan\"\nmax_batch_size: 4\n{IO4}"),
        "model.plan",
    );
    let e = refused(&trt, "trt", "tensorrt");
    assert!(e.contains("platform 'tensorrt_plan'"), "{e}");
    let torch = model_with(
        dir.path(),
        "torch",
        &format!("name: \"torch\"\nbackend: \"pytorch\"\nmax_batch_size: 4\n{IO4}"),
        "model.pt",
    );
    refused(&torch, "torch", "pytorch");

    // An ensemble whose second step is a python model: refused before any
    // request runs, naming the step's model and backend.
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let src = model("preprocess");
    let pre = repo.join("preprocess");
    std::fs::create_dir_all(pre.join("1")).unwrap();
    std::fs::copy(src.join("config.pbtxt"), pre.join("config.pbtxt")).unwrap();
    std::fs::copy(
        src.join("1").join("model.onnx"),
        pre.join("1").join("model.onnx"),
    )
    .unwrap();
    model_with(
        &repo,
        "post",
        &format!("name: \"post\"\nbackend: \"python\"\nmax_batch_size: 8\n{IO4}"),
        "model.py",
    );
    let ens = model_with(
        &repo,
        "ens",
        &format!(
            "name: \"ens\"\nplatform: \"ensemble\"\nmax_batch_size: 4\n{IO4}\
             ensemble_scheduling {{ step [ \
               {{ model_name: \"preprocess\" model_version: -1 \
                  input_map {{ key: \"Input\" value: \"Input\" }} \
                  output_map {{ key: \"Output\" value: \"mid\" }} }}, \
               {{ model_name: \"post\" model_version: -1 \
                  input_map {{ key: \"Input\" value: \"mid\" }} \
                  output_map {{ key: \"Output\" value: \"Output\" }} }} ] }}\n"
        ),
        "",
    );
    let e = refused(&ens, "post", "python");
    assert!(
        e.contains("ensemble 'ens'") && e.contains("composing model 'post'"),
        "{e}"
    );
}
