//! Inputs whose size or depth an attacker chooses (docs/hostile.md): repositories
//! with chains of ensembles as long as the repository, and ensembles with
//! as many steps as the file holds. Each case must end with a verdict, not
//! a stack overflow, and in time linear in its size; the generous timeout
//! only turns a hang into a failure.

use crate::common::tritonctl;
use std::path::Path;
use std::time::Duration;

const IO: &str = "input [ { name: \"IN\" data_type: TYPE_FP32 dims: [ 4 ] } ]\n\
                  output [ { name: \"OUT\" data_type: TYPE_FP32 dims: [ 4 ] } ]\n";

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn ensemble(name: &str, steps: &[String]) -> String {
    let steps: Vec<String> = steps
        .iter()
        .enumerate()
        .map(|(i, m)| {
            format!(
                "{{ model_name: \"{m}\" model_version: -1 input_map {{ key: \"IN\" value: \"IN\" }} output_map {{ key: \"OUT\" value: \"{}\" }} }}",
                if i == 0 { "OUT".to_string() } else { format!("T{i}") }
            )
        })
        .collect();
    format!(
        "name: \"{name}\"\nplatform: \"ensemble\"\nmax_batch_size: 8\n{IO}ensemble_scheduling {{ step [ {} ] }}\n",
        steps.join(",\n")
    )
}

/// `n` ensembles `e0` .. `e{n-1}`, each using the next; the last uses
/// `last`. A Python model `leaf` is there too.
fn chain(root: &Path, n: usize, last: &str) {
    for i in 0..n {
        let next = if i + 1 < n {
            format!("e{}", i + 1)
        } else {
            last.to_string()
        };
        let dir = root.join(format!("e{i}"));
        write(
            &dir.join("config.pbtxt"),
            &ensemble(&format!("e{i}"), &[next]),
        );
        std::fs::create_dir(dir.join("1")).unwrap();
    }
    write(
        &root.join("leaf").join("config.pbtxt"),
        &format!("name: \"leaf\"\nbackend: \"python\"\nmax_batch_size: 8\n{IO}"),
    );
    write(&root.join("leaf").join("1").join("model.py"), "");
}

fn validate_chain(n: usize) {
    let tmp = tempfile::tempdir().unwrap();
    chain(tmp.path(), n, "leaf");
    let out = tritonctl()
        .arg("validate")
        .arg(tmp.path())
        .timeout(Duration::from_secs(600))
        .run();
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout
            .contains(&format!("All checks passed ({} files)", n + 1)),
        "{}",
        out.stdout
    );
}

#[test]
fn a_chain_of_20000_ensembles_validates() {
    validate_chain(20_000);
}

/// Ignored by a plain `cargo test` (300,000 files and directories to
/// write); `scripts/test` runs it.
#[test]
#[ignore = "writes 300,000 files and directories; scripts/test runs it"]
fn a_chain_of_100000_ensembles_validates() {
    validate_chain(100_000);
}

/// The chain closed into a loop: every ensemble is on it, each is reported
/// with the ensemble before it, and validating one of them alone loads the
/// whole loop as context.
#[test]
fn a_loop_of_20000_ensembles_is_reported_on_each() {
    let n = 20_000;
    let tmp = tempfile::tempdir().unwrap();
    chain(tmp.path(), n, "e0");
    let out = tritonctl()
        .args(["validate", "--format", "json"])
        .arg(tmp.path())
        .timeout(Duration::from_secs(600))
        .run();
    assert_eq!(out.code, 1, "{}", out.stderr);
    let report = out.json();
    let mut loops = 0;
    for f in report["files"].as_array().unwrap() {
        for d in f["diagnostics"].as_array().unwrap() {
            if d["code"] == "E0631" {
                loops += 1;
            }
        }
    }
    assert_eq!(loops, n);
    let text = out.stdout;
    assert!(
        text.contains("circular dependency between ensembles: e0 -> ... -> e19999 -> e0"),
        "{}",
        &text[..text.len().min(2000)]
    );
    assert!(text.contains("circular dependency between ensembles: e7 -> ... -> e6 -> e7"));

    let one = tritonctl()
        .arg("validate")
        .arg(tmp.path().join("e5"))
        .timeout(Duration::from_secs(600))
        .run();
    assert_eq!(one.code, 1, "{}", one.stderr);
    assert!(
        one.stdout
            .contains("circular dependency between ensembles: e5 -> ... -> e4 -> e5"),
        "{}",
        one.stdout
    );
}

/// One ensemble of 100,000 steps, none of whose models exists: one finding
/// per step, each located at its own step (the spans come from an index of
/// the step list, not a walk of it per finding).
#[test]
fn an_ensemble_of_100000_missing_steps_is_reported_per_step() {
    let n = 100_000;
    let tmp = tempfile::tempdir().unwrap();
    let steps: Vec<String> = (0..n).map(|i| format!("m{i}")).collect();
    write(
        &tmp.path().join("big").join("config.pbtxt"),
        &ensemble("big", &steps),
    );
    std::fs::create_dir(tmp.path().join("big").join("1")).unwrap();
    let out = tritonctl()
        .args(["validate", "--format", "json"])
        .arg(tmp.path().join("big"))
        .timeout(Duration::from_secs(600))
        .run();
    assert_eq!(out.code, 1, "{}", out.stderr);
    let report = out.json();
    let diags: Vec<&serde_json::Value> = report["files"][0]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "E0630")
        .collect();
    assert_eq!(diags.len(), n);
    // Each finding on its own line (one step per line in the file).
    let mut lines: Vec<u64> = diags
        .iter()
        .map(|d| d["line"].as_u64().unwrap_or(0))
        .collect();
    lines.dedup();
    assert_eq!(lines.len(), n, "{}", diags[0]);
}

// A minimal protobuf writer for the ONNX model below.
fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn field_bytes(out: &mut Vec<u8>, field: u64, b: &[u8]) {
    varint(out, (field << 3) | 2);
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn field_int(out: &mut Vec<u8>, field: u64, v: u64) {
    varint(out, field << 3);
    varint(out, v);
}

/// An ONNX model of `n` Identity nodes, `X{i}` -> `Y{i}`, each tensor
/// FLOAT of shape [N, 4].
fn identity_model(n: usize) -> Vec<u8> {
    // TypeProto { tensor_type { elem_type: FLOAT shape { dim { dim_param: "N" } dim { dim_value: 4 } } } }
    let mut shape = Vec::new();
    let mut d = Vec::new();
    field_bytes(&mut d, 2, b"N");
    field_bytes(&mut shape, 1, &d);
    let mut d = Vec::new();
    field_int(&mut d, 1, 4);
    field_bytes(&mut shape, 1, &d);
    let mut tensor = Vec::new();
    field_int(&mut tensor, 1, 1);
    field_bytes(&mut tensor, 2, &shape);
    let mut ty = Vec::new();
    field_bytes(&mut ty, 1, &tensor);
    let value = |name: &str| {
        let mut v = Vec::new();
        field_bytes(&mut v, 1, name.as_bytes());
        field_bytes(&mut v, 2, &ty);
        v
    };
    let mut graph = Vec::new();
    for i in 0..n {
        let mut node = Vec::new();
        field_bytes(&mut node, 1, format!("X{i}").as_bytes());
        field_bytes(&mut node, 2, format!("Y{i}").as_bytes());
        field_bytes(&mut node, 4, b"Identity");
        field_bytes(&mut graph, 1, &node);
    }
    field_bytes(&mut graph, 2, b"g");
    for i in 0..n {
        field_bytes(&mut graph, 11, &value(&format!("X{i}")));
    }
    for i in 0..n {
        field_bytes(&mut graph, 12, &value(&format!("Y{i}")));
    }
    let mut model = Vec::new();
    field_int(&mut model, 1, 8);
    let mut opset = Vec::new();
    field_int(&mut opset, 2, 13);
    field_bytes(&mut model, 8, &opset);
    field_bytes(&mut model, 7, &graph);
    model
}

/// 100,000 graph inputs and outputs: every one is in the config, found by
/// name rather than by a walk of the others.
#[test]
fn autoconfig_of_a_model_with_100000_inputs() {
    let n = 100_000;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("wide");
    std::fs::create_dir_all(dir.join("1")).unwrap();
    std::fs::write(dir.join("1").join("model.onnx"), identity_model(n)).unwrap();
    let out = tritonctl()
        .arg("autoconfig")
        .arg(&dir)
        .timeout(Duration::from_secs(600))
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let config = out.stdout;
    assert!(config.contains("name: \"X99999\""), "{}", &config[..2000]);
    assert!(config.contains("name: \"Y99999\""));
    assert_eq!(config.matches("name: \"X").count(), n);
}
