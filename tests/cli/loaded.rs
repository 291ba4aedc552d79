//! The loaded model (`src/model`, `validate::load`): what Triton holds after
//! a load, as `validate --print-config` prints it and `simulate` uses it.
//! Instance rules: docs/spec/validation.md §2.3.

use crate::common::{crate_root, tritonctl};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A model directory `<tmp>/<name>` with `config` and an empty version `1/`.
fn model_dir(root: &Path, name: &str, config: &str) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(dir.join("1")).unwrap();
    std::fs::write(dir.join("config.pbtxt"), config).unwrap();
    dir
}

fn print_config(dir: &Path, extra: &[&str]) -> Value {
    let out = tritonctl()
        .args(["validate", "--print-config"])
        .arg(dir)
        .args(extra)
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    serde_json::from_str(&out.stdout).expect("one JSON object")
}

/// (name, kind, count, gpus) of each normalized group.
fn groups(cfg: &Value) -> Vec<(String, String, i64, Vec<i64>)> {
    cfg["instance_group"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["name"].as_str().unwrap().to_string(),
                g["kind"].as_str().unwrap().to_string(),
                g["count"].as_i64().unwrap(),
                g["gpus"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_i64().unwrap())
                    .collect(),
            )
        })
        .collect()
}

fn group(name: &str, kind: &str, count: i64, gpus: &[i64]) -> (String, String, i64, Vec<i64>) {
    (name.into(), kind.into(), count, gpus.to_vec())
}

#[test]
fn print_config_fills_in_what_triton_fills_in() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = model_dir(
        tmp.path(),
        "m",
        r#"backend: "onnxruntime"
max_batch_size: 8
input [ { name: "X" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ 4 ] } ]
dynamic_batching { }
instance_group [ { kind: KIND_CPU }, { name: "g" count: 2 gpus: [ 0 ] } ]
"#,
    );
    // A CPU-only server: KIND_AUTO with a GPU listed is not allowed.
    let out = tritonctl()
        .args(["validate", "--print-config"])
        .arg(&dir)
        .run();
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    assert!(
        out.stderr.contains(
            "instance group g of model m has kind KIND_CPU but specifies one or more GPUs"
        ),
        "{}",
        out.stderr
    );

    let cfg = print_config(&dir, &["--gpus", "0,1"]);
    assert_eq!(cfg["name"], "m");
    assert_eq!(cfg["platform"], "onnxruntime_onnx");
    assert_eq!(cfg["default_model_filename"], "model.onnx");
    assert_eq!(cfg["version_policy"]["latest"]["num_versions"], 1);
    assert_eq!(
        cfg["dynamic_batching"]["preferred_batch_size"],
        serde_json::json!([8])
    );
    assert_eq!(cfg["optimization"]["input_pinned_memory"]["enable"], true);
    assert_eq!(
        groups(&cfg),
        vec![
            group("m_0", "KIND_CPU", 2, &[]),
            group("g", "KIND_GPU", 2, &[0]),
        ]
    );
    // 64-bit integers are numbers, as Triton prints them.
    assert!(cfg["input"][0]["dims"][0].is_i64());
}

#[test]
fn print_config_default_group_with_and_without_gpus() {
    let tmp = tempfile::tempdir().unwrap();
    let onnx = model_dir(tmp.path(), "o", "backend: \"onnxruntime\" max_batch_size: 0\ninput [ { name: \"X\" data_type: TYPE_FP32 dims: [ 1 ] } ]\noutput [ { name: \"Y\" data_type: TYPE_FP32 dims: [ 1 ] } ]\n");
    let python = model_dir(tmp.path(), "p", "backend: \"python\"\ninput [ { name: \"X\" data_type: TYPE_FP32 dims: [ 1 ] } ]\noutput [ { name: \"Y\" data_type: TYPE_FP32 dims: [ 1 ] } ]\n");
    assert_eq!(
        groups(&print_config(&onnx, &[])),
        vec![group("o", "KIND_CPU", 2, &[])]
    );
    assert_eq!(
        groups(&print_config(&python, &[])),
        vec![group("p", "KIND_CPU", 1, &[])]
    );
    assert_eq!(
        groups(&print_config(&onnx, &["--gpus", "1,0"])),
        vec![group("o", "KIND_GPU", 1, &[0, 1])]
    );
}

#[test]
fn print_config_of_several_models_is_json_lines_in_argument_order() {
    let repo = crate_root().join("testdata").join("model_repository");
    let out = tritonctl()
        .args(["validate", "--print-config"])
        .arg(repo.join("preprocess"))
        .arg(repo.join("accumulator"))
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let names: Vec<String> = out
        .json_lines()
        .iter()
        .map(|v| v["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["preprocess", "accumulator"]);
    // Not a model directory: a usage error.
    let out = tritonctl()
        .args(["validate", "--print-config"])
        .arg(&repo)
        .run();
    assert_eq!(out.code, 2, "{}", out.stderr);
}

/// Requests at one instant, more than every instance can take at once.
fn burst(n: usize) -> String {
    (0..n)
        .map(|i| format!("{{\"id\": \"r{i}\", \"arrival_us\": 0}}\n"))
        .collect()
}

/// `simulate` of one request, in human form (for its exit code and errors).
fn simulate_one_request(config: &Path) -> crate::common::Output {
    tritonctl()
        .args(["simulate", "--config"])
        .arg(config)
        .args(["--trace", "-", "--latency", "1000"])
        .stdin(burst(1))
        .run()
}

fn simulate(config: &Path, trace: &str, extra: &[&str]) -> Value {
    let out = tritonctl()
        .args(["simulate", "--config"])
        .arg(config)
        .args(["--trace", "-", "--latency", "1000", "--format", "json"])
        .args(extra)
        .stdin(trace.to_string())
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap()
}

fn instances(doc: &Value) -> Vec<(String, String, bool, u64)> {
    doc["summary"]["instances"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, v)| {
            assert_eq!(v["instance"], i, "{v}");
            (
                v["name"].as_str().unwrap().to_string(),
                v["device"].as_str().unwrap().to_string(),
                v["passive"].as_bool().unwrap(),
                v["batches"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn inst(name: &str, device: &str, passive: bool, batches: u64) -> (String, String, bool, u64) {
    (name.into(), device.into(), passive, batches)
}

#[test]
fn simulate_creates_count_instances_per_listed_gpu() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = model_dir(
        tmp.path(),
        "m",
        "backend: \"python\"\nmax_batch_size: 0\ninstance_group [ { count: 2 kind: KIND_GPU gpus: [ 1, 2 ] } ]\n",
    );
    // The seed's example: 4 instances, each one takes one request at once.
    let doc = simulate(&dir, &burst(4), &["--gpus", "0,1,2"]);
    assert_eq!(
        instances(&doc),
        vec![
            inst("m_0_0", "gpu:1", false, 1),
            inst("m_0_0", "gpu:2", false, 1),
            inst("m_0_1", "gpu:1", false, 1),
            inst("m_0_1", "gpu:2", false, 1),
        ]
    );
    let mut used: Vec<u64> = doc["batches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["instance"].as_u64().unwrap())
        .collect();
    used.sort_unstable();
    assert_eq!(used, [0, 1, 2, 3]);
    // On a CPU-only server Triton refuses those groups: so does simulate.
    let out = simulate_one_request(&dir);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("specifies invalid or unsupported gpu id 1"),
        "{}",
        out.stderr
    );
}

#[test]
fn simulate_uses_default_counts_per_backend_and_kind() {
    let tmp = tempfile::tempdir().unwrap();
    for (backend, expected) in [("onnxruntime", 2), ("tensorflow", 2), ("python", 1)] {
        let dir = model_dir(
            tmp.path(),
            backend,
            &format!("backend: \"{backend}\"\nmax_batch_size: 0\ninstance_group [ {{ kind: KIND_CPU }} ]\n"),
        );
        let doc = simulate(&dir, &burst(4), &[]);
        let list = instances(&doc);
        assert_eq!(list.len(), expected, "{backend}: {list:?}");
        assert!(list.iter().all(|i| i.1 == "cpu" && !i.2), "{list:?}");
        // Requests at one instant are spread over every instance.
        assert!(list.iter().all(|i| i.3 > 0), "{list:?}");
    }
}

#[test]
fn simulate_default_group_with_and_without_gpus() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = model_dir(
        tmp.path(),
        "m",
        "backend: \"onnxruntime\"\nmax_batch_size: 0\n",
    );
    let doc = simulate(&dir, &burst(4), &[]);
    assert_eq!(
        instances(&doc),
        vec![inst("m_0", "cpu", false, 2), inst("m_1", "cpu", false, 2)]
    );
    let doc = simulate(&dir, &burst(4), &["--gpus", "0,1,2"]);
    assert_eq!(
        instances(&doc),
        vec![
            inst("m_0", "gpu:0", false, 2),
            inst("m_0", "gpu:1", false, 1),
            inst("m_0", "gpu:2", false, 1),
        ]
    );
}

#[test]
fn simulate_never_gives_passive_instances_work() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = model_dir(
        tmp.path(),
        "m",
        "backend: \"python\"\nmax_batch_size: 0\ninstance_group [ { count: 2 kind: KIND_CPU passive: true }, { count: 1 kind: KIND_CPU } ]\n",
    );
    let doc = simulate(&dir, &burst(6), &[]);
    assert_eq!(
        instances(&doc),
        vec![
            inst("m_0_0", "cpu", true, 0),
            inst("m_0_1", "cpu", true, 0),
            inst("m_1_0", "cpu", false, 6),
        ]
    );
    for b in doc["batches"].as_array().unwrap() {
        assert_eq!(b["instance"], 2, "{b}");
    }
    for r in doc["requests"].as_array().unwrap() {
        assert_eq!(r["instance"], 2, "{r}");
    }
    // Only passive instances: nothing would ever run.
    let only = model_dir(
        tmp.path(),
        "q",
        "backend: \"python\"\nmax_batch_size: 0\ninstance_group [ { count: 1 kind: KIND_CPU passive: true } ]\n",
    );
    let out = simulate_one_request(&only);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("only passive instances"),
        "{}",
        out.stderr
    );
}

/// Copies the directory `from` (files one level deep and in `1/`) to `to`.
fn copy_model(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.join("1")).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let p = entry.unwrap().path();
        if p.is_file() {
            std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
        }
    }
}

#[test]
fn an_ensemble_loads_with_its_composing_models_or_not_at_all() {
    let src = crate_root().join("testdata").join("model_repository");
    let tmp = tempfile::tempdir().unwrap();
    for m in ["image_classifier", "preprocess", "densenet_onnx"] {
        copy_model(&src.join(m), &tmp.path().join(m));
    }
    let cfg = print_config(&tmp.path().join("image_classifier"), &[]);
    // Ensembles get no instance groups, and the transaction policy Triton
    // always sets for them.
    assert_eq!(cfg["instance_group"], serde_json::json!([]));
    assert_eq!(cfg["model_transaction_policy"]["decoupled"], false);
    assert_eq!(
        cfg["ensemble_scheduling"]["step"][1]["model_name"],
        "densenet_onnx"
    );

    // A composing model Triton cannot load fails the ensemble's load, with
    // that model's findings.
    let broken = tmp.path().join("densenet_onnx").join("config.pbtxt");
    let text = std::fs::read_to_string(&broken).unwrap();
    std::fs::write(
        &broken,
        text.replace("max_batch_size: 8", "max_batch_size: -3"),
    )
    .unwrap();
    let out = tritonctl()
        .args(["validate", "--print-config"])
        .arg(tmp.path().join("image_classifier"))
        .run();
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    assert!(out.stderr.contains("densenet_onnx"), "{}", out.stderr);
}

/// A config may ask for billions of instances: `simulate` refuses it with
/// the number, `--print-config` prints it; neither tries to hold them.
#[test]
fn a_huge_instance_count_is_refused_not_allocated() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = model_dir(
        tmp.path(),
        "m",
        "backend: \"python\"\nmax_batch_size: 0\ninstance_group [ { count: 2000000000 kind: KIND_CPU } ]\n",
    );
    let out = simulate_one_request(&dir);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("asks for 2000000000 model instances"),
        "{}",
        out.stderr
    );
    let cfg = print_config(&dir, &[]);
    assert_eq!(cfg["instance_group"][0]["count"], 2000000000);
}
