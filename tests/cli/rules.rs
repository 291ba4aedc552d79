//! Semantic rules: the per-code fixtures under `testdata/rules/<CODE>/` and
//! Triton's own `qa/L0_model_config` cases (docs/spec/validation.md §7).
//!
//! Fixture convention: every `fail_*.pbtxt` in `testdata/rules/<CODE>/` must
//! produce a diagnostic with that code, every `pass_*.pbtxt` must not. The
//! files are validated on their own (as from standard input, so they name
//! the model themselves) with the default options: a CPU-only target server
//! with auto-complete on.

use crate::common::{crate_root, shared_dir};
use std::path::{Path, PathBuf};
use tritonctl::diagnostics::Diagnostic;
use tritonctl::lint::ServerOptions;
use tritonctl::validate::check_config_file;

/// Diagnostics for one config text, validated without a model directory.
fn diagnostics_of(path: &Path, opts: &ServerOptions) -> Vec<Diagnostic> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    check_config_file(path.display().to_string(), bytes, None, opts).diagnostics
}

fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    v.sort();
    v
}

#[test]
fn rule_fixtures() {
    let root = crate_root().join("testdata").join("rules");
    if !root.is_dir() {
        eprintln!("no testdata/rules yet");
        return;
    }
    let opts = ServerOptions::default();
    let mut checked = 0;
    let mut failures = Vec::new();
    for dir in sorted_entries(&root) {
        if !dir.is_dir() {
            continue;
        }
        let code = dir.file_name().unwrap().to_string_lossy().into_owned();
        let Some(rule) = tritonctl::lint::registry::find(&code) else {
            failures.push(format!(
                "{code}: directory name is not a registered rule code"
            ));
            continue;
        };
        let code = rule.code;
        for file in sorted_entries(&dir) {
            let fname = file.file_name().unwrap().to_string_lossy().into_owned();
            if !fname.ends_with(".pbtxt") {
                continue;
            }
            let expect_hit = if fname.starts_with("fail_") {
                true
            } else if fname.starts_with("pass_") {
                false
            } else {
                failures.push(format!(
                    "{code}/{fname}: name must start with fail_ or pass_"
                ));
                continue;
            };
            let diags = diagnostics_of(&file, &opts);
            let hit = diags.iter().any(|d| d.code() == code);
            checked += 1;
            if hit != expect_hit {
                let got: Vec<String> = diags
                    .iter()
                    .map(|d| format!("{} {}", d.code(), d.message))
                    .collect();
                failures.push(format!(
                    "{code}/{fname}: expected {} {code}, got {got:#?}",
                    if expect_hit { "a" } else { "no" }
                ));
            }
        }
    }
    println!("rule fixtures checked: {checked}");
    assert!(
        failures.is_empty(),
        "{} fixture(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The pattern of an `expected` file as plain text: Triton's QA greps with
/// it, so brackets and dots may be escaped.
fn unescape_grep(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.trim_end_matches(['\n', '\r']).chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(n) = chars.next() {
                out.push(n);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The config of a `noautofill_platform` case as Triton's QA runs it: every
/// `platform:` line dropped and `platform: "<platform>"` appended.
fn with_platform(text: &str, platform: &str) -> String {
    let mut out: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("platform:"))
        .flat_map(|l| [l, "\n"])
        .collect();
    out.push_str(&format!("platform: \"{platform}\"\n"));
    out
}

/// Triton's `noautofill_platform` cases, in the `onnxruntime_onnx` trial:
/// each must be refused with the text of its `expected` file. Each case is
/// run with auto-complete off (as Triton's QA does) and on (our default);
/// all cases hold inputs and outputs, so both must agree.
#[test]
fn noautofill_platform_conformance() {
    let Some(shared) = shared_dir() else { return };
    let cases_dir = shared
        .join("conformance")
        .join("L0_model_config")
        .join("noautofill_platform");
    let tmp = tempfile::tempdir().expect("temporary directory");
    let mut passed = 0;
    let mut failed = Vec::new();
    let cases: Vec<PathBuf> = sorted_entries(&cases_dir)
        .into_iter()
        .filter(|d| d.join("config.pbtxt").is_file())
        .collect();
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(case.join("config.pbtxt")).expect("config.pbtxt");
        let expected =
            unescape_grep(&std::fs::read_to_string(case.join("expected")).expect("expected file"));
        let model_dir = tmp.path().join(&name);
        std::fs::create_dir_all(&model_dir).unwrap();
        if matches!(
            name.as_str(),
            "invalid_cpu" | "invalid_gpu" | "negative_gpu"
        ) {
            std::fs::create_dir_all(model_dir.join("1")).unwrap();
        }
        let config = with_platform(&text, "onnxruntime_onnx");
        let path = model_dir.join("config.pbtxt");
        std::fs::write(&path, &config).unwrap();
        let mut problems = Vec::new();
        for autocomplete in [false, true] {
            let opts = ServerOptions {
                autocomplete,
                ..ServerOptions::default()
            };
            let report = check_config_file(
                path.display().to_string(),
                config.clone().into_bytes(),
                Some(&model_dir),
                &opts,
            );
            let found = report.diagnostics.iter().any(|d| {
                d.triton_message
                    .as_deref()
                    .is_some_and(|m| m.contains(&expected))
            });
            if !found {
                let got: Vec<String> = report
                    .diagnostics
                    .iter()
                    .map(|d| {
                        format!(
                            "{} {}",
                            d.code(),
                            d.triton_message.as_deref().unwrap_or(&d.message)
                        )
                    })
                    .collect();
                problems.push(format!(
                    "autocomplete={autocomplete}: expected `{expected}`, got {got:?}"
                ));
            }
        }
        if problems.is_empty() {
            passed += 1;
        } else {
            failed.push(format!("{name}: {}", problems.join("; ")));
        }
    }
    println!(
        "noautofill_platform (onnxruntime_onnx): {passed}/{} cases pass",
        cases.len()
    );
    assert!(
        !cases.is_empty(),
        "no cases found in {}",
        cases_dir.display()
    );
    assert!(
        failed.is_empty(),
        "{} case(s) fail:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

/// Rules that read the model directory (data files, version directories,
/// backend libraries): each case builds a model directory and validates its
/// `config.pbtxt` with that directory known.
mod model_dir_rules {
    use std::path::Path;
    use tritonctl::lint::ServerOptions;
    use tritonctl::validate::check_config_file;

    /// Writes `files` (path relative to the model directory, bytes) and the
    /// config, then returns the codes reported.
    fn codes_in_dir(
        name: &str,
        config: &str,
        files: &[(&str, &[u8])],
        opts: &ServerOptions,
    ) -> Vec<&'static str> {
        let tmp = tempfile::tempdir().expect("temporary directory");
        let dir = tmp.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        for (rel, bytes) in files {
            let p = dir.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, bytes).unwrap();
        }
        let cfg_path = dir.join("config.pbtxt");
        std::fs::write(&cfg_path, config).unwrap();
        let report = check_config_file(
            cfg_path.display().to_string(),
            config.as_bytes().to_vec(),
            Some(Path::new(&dir)),
            opts,
        );
        report.diagnostics.iter().map(|d| d.code()).collect()
    }

    fn codes(name: &str, config: &str, files: &[(&str, &[u8])]) -> Vec<&'static str> {
        codes_in_dir(name, config, files, &ServerOptions::default())
    }

    const STATE_MODEL: &str = r#"
name: "seqm"
backend: "onnxruntime"
max_batch_size: 8
input [ { name: "INPUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
sequence_batching {
  state [ {
    input_name: "S_IN" output_name: "S_OUT" data_type: TYPE_INT32 dims: [ 4 ]
    initial_state [ { name: "init" data_type: TYPE_INT32 dims: [ 4 ] data_file: "init.bin" } ]
  } ]
}
"#;

    #[test]
    fn initial_state_data_file() {
        let model = &[("1/model.onnx", b"x".as_slice())];
        // 4 × INT32 needs 16 bytes.
        let short = codes(
            "seqm",
            STATE_MODEL,
            &[model[0], ("initial_state/init.bin", &[0u8; 8])],
        );
        assert!(short.contains(&"E0511"), "{short:?}");
        let enough = codes(
            "seqm",
            STATE_MODEL,
            &[model[0], ("initial_state/init.bin", &[0u8; 16])],
        );
        assert!(
            !enough.contains(&"E0511") && !enough.contains(&"E0512"),
            "{enough:?}"
        );
        // Triton reads the file from initial_state/, not from the version directory.
        let misplaced = codes("seqm", STATE_MODEL, &[model[0], ("1/init.bin", &[0u8; 16])]);
        assert!(misplaced.contains(&"E0512"), "{misplaced:?}");
    }

    const WARMUP_MODEL: &str = r#"
name: "wmd"
backend: "onnxruntime"
max_batch_size: 8
input [ { name: "A" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 4 ] } ]
model_warmup [ { name: "w" batch_size: 1 inputs { key: "A" value { data_type: TYPE_FP32 dims: [ 4 ] input_data_file: "a.raw" } } } ]
"#;

    #[test]
    fn warmup_data_file() {
        let model = ("1/model.onnx", b"x".as_slice());
        let short = codes("wmd", WARMUP_MODEL, &[model, ("warmup/a.raw", &[0u8; 15])]);
        assert!(short.contains(&"E0905"), "{short:?}");
        let enough = codes("wmd", WARMUP_MODEL, &[model, ("warmup/a.raw", &[0u8; 16])]);
        assert!(
            !enough.contains(&"E0905") && !enough.contains(&"E0906"),
            "{enough:?}"
        );
        let missing = codes("wmd", WARMUP_MODEL, &[model]);
        assert!(missing.contains(&"E0906"), "{missing:?}");
    }

    const STRING_WARMUP_MODEL: &str = r#"
name: "wms"
backend: "onnxruntime"
max_batch_size: 8
input [ { name: "TEXT" data_type: TYPE_STRING dims: [ 3 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 4 ] } ]
sequence_batching {
  control_input [ { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] } ]
}
model_warmup [ {
  name: "w" batch_size: 1
  inputs { key: "TEXT" value { data_type: TYPE_STRING dims: [ 3 ] input_data_file: "text" } }
  inputs { key: "START" value { data_type: TYPE_STRING dims: [ 1 ] input_data_file: "start" } }
} ]
"#;

    /// Triton's serialized strings: a 4-byte little-endian length before each.
    fn serialized(items: &[&str]) -> Vec<u8> {
        items
            .iter()
            .flat_map(|s| {
                let mut v = (s.len() as u32).to_le_bytes().to_vec();
                v.extend_from_slice(s.as_bytes());
                v
            })
            .collect()
    }

    /// E0911 and its message for the warmup file `text` of STRING_WARMUP_MODEL.
    fn string_file_messages(text: &[u8]) -> Vec<String> {
        let tmp = tempfile::tempdir().expect("temporary directory");
        let dir = tmp.path().join("wms");
        std::fs::create_dir_all(dir.join("warmup")).unwrap();
        std::fs::create_dir_all(dir.join("1")).unwrap();
        std::fs::write(dir.join("1/model.onnx"), b"x").unwrap();
        std::fs::write(dir.join("warmup/text"), text).unwrap();
        // a control input is passed to the backend unchecked: any bytes do
        std::fs::write(dir.join("warmup/start"), b"x").unwrap();
        std::fs::write(dir.join("config.pbtxt"), STRING_WARMUP_MODEL).unwrap();
        let report = check_config_file(
            "config.pbtxt".into(),
            STRING_WARMUP_MODEL.as_bytes().to_vec(),
            Some(Path::new(&dir)),
            &ServerOptions::default(),
        );
        report
            .diagnostics
            .iter()
            .filter(|d| d.code() == "E0911")
            .map(|d| d.triton_message.clone().unwrap_or_default())
            .collect()
    }

    /// The messages are those Triton 2.51 gave when it loaded these warmup
    /// files (a stand-in backend; the check is the core's request check).
    #[test]
    fn warmup_string_data_file() {
        assert!(string_file_messages(&serialized(&["a", "", "ccc"])).is_empty());
        assert_eq!(
            string_file_messages(&serialized(&["a", ""])),
            ["[request id: <id_unknown>] expected 3 string elements for inference input 'TEXT' for model 'wms', got 2"]
        );
        assert_eq!(
            string_file_messages(&serialized(&["a", "b", "c", "d"])),
            ["[request id: <id_unknown>] unexpected number of string elements 4 for inference input 'TEXT' for model 'wms', expecting 3"]
        );
        let mut partial = serialized(&["a"]);
        partial.extend_from_slice(&[0, 0]);
        assert_eq!(
            string_file_messages(&partial),
            ["[request id: <id_unknown>] incomplete string length indicator for inference input 'TEXT' for model 'wms', expecting 4 bytes but only 2 bytes available. Please make sure the string length indicator is in one buffer."]
        );
        assert_eq!(
            string_file_messages(b""),
            ["[request id: <id_unknown>] expected 3 string elements for inference input 'TEXT' for model 'wms', got 0"]
        );
    }

    const STATEFUL_MODEL: &str = r#"
name: "acc"
backend: "stateful"
max_batch_size: 16
sequence_batching {
  oldest { max_candidate_sequences: 1280 }
  control_input [
    { name: "ResetSequence" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] },
    { name: "EndSequence" control [ { kind: CONTROL_SEQUENCE_END int32_false_true: [ 0, 1 ] } ] }
  ]
}
input [ { name: "Input" data_type: TYPE_FP32 dims: [ 4, -1, 5 ] } ]
output [ { name: "Output" data_type: TYPE_FP32 dims: [ 4, -1, 5 ] } ]
parameters [
  { key: "onnx_file_name" value { string_value: "accumulate.onnx" } },
  { key: "state_pairs" value { string_value: "<<<Accumulate_In, Accumulate_Out>>>" } }
]
instance_group [ { count: 1 kind: KIND_CPU } ]
"#;

    #[test]
    fn stateful_onnx_file() {
        // Only the latest version is loaded by default: version 1 may lack the file.
        let present = codes(
            "acc",
            STATEFUL_MODEL,
            &[("1/other.onnx", b"x"), ("2/accumulate.onnx", b"x")],
        );
        assert!(!present.contains(&"E0802"), "{present:?}");
        let missing = codes("acc", STATEFUL_MODEL, &[("2/model.onnx", b"x")]);
        assert!(missing.contains(&"E0802"), "{missing:?}");
        // With `all`, every version needs it.
        let all = STATEFUL_MODEL.replace(
            "max_batch_size: 16",
            "max_batch_size: 16\nversion_policy { all { } }",
        );
        let older_missing = codes(
            "acc",
            &all,
            &[("1/other.onnx", b"x"), ("2/accumulate.onnx", b"x")],
        );
        assert!(older_missing.contains(&"E0802"), "{older_missing:?}");
    }

    #[test]
    fn default_model_filename_missing() {
        let config = r#"
name: "pt"
backend: "pytorch"
default_model_filename: "traced.pt"
max_batch_size: 8
input [ { name: "IN" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 4 ] } ]
"#;
        let missing = codes("pt", config, &[("1/model.pt", b"x")]);
        assert!(missing.contains(&"W0010"), "{missing:?}");
        let present = codes("pt", config, &[("1/traced.pt", b"x")]);
        assert!(!present.contains(&"W0010"), "{present:?}");
    }

    #[test]
    fn batch_strategy_library() {
        let config = |path: &str| {
            format!(
                r#"
name: "dyn"
backend: "onnxruntime"
max_batch_size: 8
input [ {{ name: "IN" data_type: TYPE_FP32 dims: [ 4 ] }} ]
output [ {{ name: "OUT" data_type: TYPE_FP32 dims: [ 4 ] }} ]
dynamic_batching {{ }}
parameters {{ key: "TRITON_BATCH_STRATEGY_PATH" value {{ string_value: "{path}" }} }}
"#
            )
        };
        let model = ("1/model.onnx", b"x".as_slice());
        let found = codes(
            "dyn",
            &config("/models/dyn/libbatch.so"),
            &[model, ("libbatch.so", b"x")],
        );
        assert!(
            !found.contains(&"E0502") && !found.contains(&"E0503"),
            "{found:?}"
        );
        let missing = codes("dyn", &config("/models/dyn/libbatch.so"), &[model]);
        assert!(missing.contains(&"E0503"), "{missing:?}");
        let outside = codes("dyn", &config("/opt/libs/libbatch.so"), &[model]);
        assert!(outside.contains(&"E0502"), "{outside:?}");
        let climbs = codes("dyn", &config("/models/dyn/../libbatch.so"), &[model]);
        assert!(climbs.contains(&"E0502"), "{climbs:?}");
    }
}

/// Triton's `model_metrics` QA cases: `partial.pbtxt` is appended to a
/// decoupled Python model's config. The `valid_config_with_warn` case must
/// produce the metric-family warning with Triton's text, the valid case
/// must not.
#[test]
fn model_metrics_warning_conformance() {
    let Some(shared) = crate::common::shared_dir() else {
        return;
    };
    let base = "name: \"m\"\nbackend: \"python\"\nmax_batch_size: 0\n\
                input [ { name: \"IN\" data_type: TYPE_FP32 dims: [ 1 ] } ]\n\
                output [ { name: \"OUT\" data_type: TYPE_FP32 dims: [ 1 ] } ]\n\
                model_transaction_policy { decoupled: true }\n";
    let group = shared.join("conformance/L0_model_config/model_metrics");
    let run = |case: &std::path::Path| {
        let partial = std::fs::read_to_string(case.join("partial.pbtxt")).expect("partial.pbtxt");
        let text = format!("{base}{partial}");
        tritonctl::validate::check_config_file(
            case.display().to_string(),
            text.into_bytes(),
            None,
            &tritonctl::lint::ServerOptions::default(),
        )
        .diagnostics
    };
    let warn_case = group.join("valid_config_with_warn/unknown_metric_family");
    let expected = std::fs::read_to_string(warn_case.join("expected")).expect("expected");
    let diags = run(&warn_case);
    assert!(
        diags.iter().any(
            |d| d.code() == "W0901" && d.triton_message.as_deref() == Some(expected.trim_end())
        ),
        "{diags:#?}"
    );
    let valid = run(&group.join("valid_config/valid_model_metrics"));
    assert!(!valid.iter().any(|d| d.code() == "W0901"), "{valid:#?}");
}
