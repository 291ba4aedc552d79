//! BLS checks of Python models (`src/repo/bls.rs`) through the binary, on
//! testdata/bls_repository: `pipeline` calls a missing model, a stateful
//! model without sequence arguments and itself, and a correct stateless
//! target; `fixed` calls the stateful model correctly.

use crate::common::{crate_root, tritonctl};
use serde_json::Value;

/// `(code, path, line)` of every finding of `validate --format json ARG`.
fn findings(arg: &str) -> (i32, Vec<(String, String, u64)>) {
    let out = tritonctl()
        .current_dir(crate_root())
        .args(["validate", "--format", "json", arg])
        .run();
    let json: Value = serde_json::from_str(&out.stdout).expect("JSON report");
    let mut v = Vec::new();
    for f in json["files"].as_array().unwrap() {
        for d in f["diagnostics"].as_array().unwrap() {
            v.push((
                d["code"].as_str().unwrap().to_string(),
                f["path"].as_str().unwrap().to_string(),
                d["line"].as_u64().unwrap_or(0),
            ));
        }
    }
    (out.code, v)
}

fn model_py(model: &str) -> String {
    format!("testdata/bls_repository/{model}/1/model.py")
}

/// The 1-based line of `model`'s model.py that holds `needle`.
fn line_of(model: &str, needle: &str) -> u64 {
    let text = std::fs::read_to_string(crate_root().join(model_py(model))).unwrap();
    1 + text
        .lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("{needle} not in {model}")) as u64
}

#[test]
fn bls_findings_in_a_repository() {
    let (code, got) = findings("testdata/bls_repository");
    assert_eq!(code, 0, "warnings only: {got:?}");
    let py = model_py("pipeline");
    let expected = vec![
        (
            "W1101".to_string(),
            py.clone(),
            line_of("pipeline", "model_name=\"tokenizer\""),
        ),
        (
            "W1102".to_string(),
            py.clone(),
            line_of("pipeline", "model_name=\"tracker\""),
        ),
        (
            "W1103".to_string(),
            py.clone(),
            line_of("pipeline", "model_name='pipeline'"),
        ),
    ];
    assert_eq!(
        got, expected,
        "the correct calls (encoder, fixed→tracker) do not warn"
    );
}

#[test]
fn one_model_is_checked_against_its_repository() {
    // The targets are looked up next to the model, as for ensembles.
    let (_, got) = findings("testdata/bls_repository/pipeline");
    let codes: Vec<&str> = got.iter().map(|(c, _, _)| c.as_str()).collect();
    assert_eq!(codes, ["W1101", "W1102", "W1103"]);
    let (code, got) = findings("testdata/bls_repository/fixed");
    assert_eq!((code, got), (0, vec![]));
}

#[test]
fn bls_findings_can_be_made_errors() {
    let out = tritonctl()
        .current_dir(crate_root())
        .args(["validate", "--deny", "W1101", "testdata/bls_repository"])
        .run();
    assert_eq!(out.code, 1);
    let text = &out.stdout;
    assert!(text.contains("model.py:"), "{text}");
}
