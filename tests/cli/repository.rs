//! Model repositories: discovery, the model-directory rules (name,
//! versions, backend library) and the cross-model ensemble rules, on the
//! small repositories in `testdata/repos/` and the bundled example in
//! `testdata/model_repository/`.

use crate::common::{crate_root, tritonctl};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use tritonctl::config::normalize::prepare;
use tritonctl::config::normalize::DirFacts;
use tritonctl::config::ParsedConfig;
use tritonctl::diagnostics::Report;
use tritonctl::diagnostics::Severity;
use tritonctl::lint::ServerOptions;
use tritonctl::validate::{check_config_file, validate_paths, ValidateOptions};

fn repos() -> PathBuf {
    crate_root().join("testdata").join("repos")
}

fn run(path: &Path, opts: &ValidateOptions) -> Report {
    validate_paths(&[path.to_path_buf()], opts).expect("readable")
}

/// Whether a code belongs to the repository and ensemble rules (the
/// repositories with deliberate faults are compared on these only, so that
/// findings of other areas do not blur what is tested here).
fn repository_rule(code: &str) -> bool {
    ["E06", "E07", "W07", "N07"]
        .iter()
        .any(|p| code.starts_with(p))
}

/// Codes of the repository and ensemble rules per model.
fn own_codes(report: &Report) -> BTreeMap<String, Vec<&'static str>> {
    let mut all = codes(report);
    for v in all.values_mut() {
        v.retain(|c| repository_rule(c));
    }
    all
}

/// Codes per model (or per path for reports that belong to no model),
/// sorted.
fn codes(report: &Report) -> BTreeMap<String, Vec<&'static str>> {
    let mut out: BTreeMap<String, Vec<&'static str>> = BTreeMap::new();
    for f in &report.files {
        let key = f.model.clone().unwrap_or_else(|| {
            Path::new(&f.path)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        });
        let v = out.entry(key).or_default();
        v.extend(f.diagnostics.iter().map(|d| d.code()));
        v.sort();
    }
    out
}

fn messages(report: &Report, code: &str) -> Vec<String> {
    report
        .files
        .iter()
        .flat_map(|f| &f.diagnostics)
        .filter(|d| d.code() == code)
        .map(|d| {
            d.triton_message
                .clone()
                .unwrap_or_else(|| d.message.clone())
        })
        .collect()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

#[test]
fn bundled_model_repository_is_clean() {
    let root = crate_root().join("testdata").join("model_repository");
    let report = run(&root, &ValidateOptions::default());
    let found = codes(&report);
    assert_eq!(
        found.keys().collect::<Vec<_>>(),
        vec![
            "accumulator",
            "densenet_onnx",
            "image_classifier",
            "preprocess"
        ]
    );
    assert!(found.values().all(Vec::is_empty), "{found:?}");
    tritonctl()
        .arg("validate")
        .arg(&root)
        .run()
        .assert_success();
}

#[test]
fn bundled_ensemble_is_checked_against_its_models() {
    // Break the classifier's input shape in a copy: the ensemble, which is
    // otherwise clean, must now report the disagreement.
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("model_repository");
    copy_dir(
        &crate_root().join("testdata").join("model_repository"),
        &root,
    );
    let cfg = root.join("densenet_onnx").join("config.pbtxt");
    let text = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("[ 3, 224, 224 ]", "[ 3, 299, 299 ]");
    std::fs::write(&cfg, text).unwrap();
    let report = run(&root, &ValidateOptions::default());
    assert_eq!(own_codes(&report)["image_classifier"], vec!["E0625"]);
    assert_eq!(
        messages(&report, "E0625"),
        vec!["in ensemble image_classifier, ensemble tensor preprocessed_image: inconsistent shape: [-1,3,224,224] is inferred from model preprocess while [-1,3,299,299] is inferred from model densenet_onnx"]
    );
}

#[test]
fn layout_rules_on_a_repository() {
    let report = run(&repos().join("layout"), &ValidateOptions::default());
    let found = own_codes(&report);
    let want: BTreeMap<String, Vec<&str>> = [
        (".ipynb_checkpoints", vec!["W0706"]),
        ("autocomplete_onnx", vec!["N0701"]),
        ("custom.mybackend", vec!["N0701", "W0704"]),
        ("escape", vec!["E0704"]),
        ("local_lib", vec![]),
        ("no_versions", vec!["E0703"]),
        ("other_name", vec!["E0702"]),
        ("specific", vec!["W0703"]),
        ("versions", vec!["W0701", "W0702"]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(found, want);
    assert_eq!(
        messages(&report, "E0702"),
        vec!["unexpected directory name 'renamed' for model 'other_name', directory name must equal model name"]
    );
    assert_eq!(
        messages(&report, "E0703"),
        vec!["at least one version must be available under the version policy of model 'no_versions'"]
    );
    assert_eq!(
        messages(&report, "W0703"),
        vec![
            "version 4 is specified for model 'specific', but the version directory is not present"
        ]
    );
    assert_eq!(
        messages(&report, "W0701"),
        vec!["ignore version directory '01' which contains leading zeros in its directory name"]
    );
    assert_eq!(
        messages(&report, "W0702"),
        vec!["ignore version directory 'v2' which fails to convert to integral number"]
    );
    assert_eq!(
        messages(&report, "W0704"),
        vec!["unable to find backend library for backend 'mybackend', try specifying runtime on the model configuration."]
    );
    assert!(messages(&report, "E0704")[0].starts_with(
        "backend library name '../elsewhere/libtriton_python.so' escapes backend directory"
    ));
}

#[test]
fn known_backends_are_taken_as_installed() {
    let mut opts = ValidateOptions::default();
    opts.lint.known_backends = vec!["mybackend".into()];
    let report = run(&repos().join("layout").join("custom.mybackend"), &opts);
    assert_eq!(own_codes(&report)["custom.mybackend"], vec!["N0701"]);
}

#[test]
fn a_model_directory_without_config_is_one_model() {
    // Its only sub-directory is a version, so it is not a repository.
    let dir = repos().join("layout").join("autocomplete_onnx");
    let report = run(&dir, &ValidateOptions::default());
    assert_eq!(
        codes(&report).keys().collect::<Vec<_>>(),
        vec!["autocomplete_onnx"]
    );
    // Without auto-complete Triton needs the file.
    let mut opts = ValidateOptions::default();
    opts.lint.autocomplete = false;
    let report = run(&dir, &opts);
    assert_eq!(codes(&report)["autocomplete_onnx"], vec!["E0705"]);
    assert!(messages(&report, "E0705")[0].starts_with("failed to open text file for read "));
    assert!(messages(&report, "E0705")[0].ends_with(": No such file or directory"));
}

#[test]
fn the_name_check_applies_to_a_config_file_in_its_directory() {
    let file = repos().join("layout").join("renamed").join("config.pbtxt");
    let report = run(&file, &ValidateOptions::default());
    assert_eq!(own_codes(&report)["other_name"], vec!["E0702"]);
}

#[test]
fn ensembles_that_compose_cleanly() {
    let report = run(&repos().join("ensemble_ok"), &ValidateOptions::default());
    let found = codes(&report);
    assert_eq!(found.len(), 7);
    assert!(found.values().all(Vec::is_empty), "{found:?}");
}

#[test]
fn ensemble_dependency_and_composition_findings() {
    let report = run(
        &repos().join("ensemble_errors"),
        &ValidateOptions::default(),
    );
    let found = own_codes(&report);
    let want: BTreeMap<String, Vec<&str>> = [
        ("around_loop", vec!["N0702"]),
        ("deps", vec!["E0630", "E0632"]),
        ("fan_in", vec!["E0626"]),
        ("floaty", vec![]),
        ("gen", vec![]),
        ("join", vec![]),
        ("loop_a", vec!["E0631"]),
        ("loop_b", vec!["E0631"]),
        (
            "mapping",
            vec!["E0620", "E0621", "E0622", "E0623", "E0624", "E0625"],
        ),
        ("not_misnamed", vec!["E0702"]),
        ("simple", vec![]),
        ("small", vec![]),
        ("uses_misnamed", vec!["N0702"]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(found, want);
    assert_eq!(
        messages(&report, "E0630"),
        vec!["ensemble deps contains models that are not available or ambiguous: ghost"]
    );
    assert_eq!(
        messages(&report, "E0632"),
        vec!["ensemble 'deps' depends on 'simple' whose required version 3 is not loaded."]
    );
    assert_eq!(
        messages(&report, "E0631"),
        vec![
            "circular dependency between ensembles: loop_a -> ... -> loop_b -> loop_a",
            "circular dependency between ensembles: loop_b -> ... -> loop_a -> loop_b",
        ]
    );
    assert_eq!(
        messages(&report, "E0626"),
        vec!["in ensemble fan_in, step of model 'fan_in' receives inputs originated from different decoupled models"]
    );
    // Every error is located in the ensemble's own file.
    for f in &report.files {
        for d in &f.diagnostics {
            if d.severity == Severity::Error {
                assert!(d.span.is_some(), "{}: {} has no location", f.path, d.code());
            }
        }
    }
}

#[test]
fn a_single_ensemble_directory_finds_its_models_next_to_it() {
    let report = run(
        &repos().join("ensemble_errors").join("deps"),
        &ValidateOptions::default(),
    );
    // Only the ensemble is reported; `simple` is found (its version is
    // checked), `ghost` is not.
    assert_eq!(own_codes(&report).keys().collect::<Vec<_>>(), vec!["deps"]);
    assert_eq!(own_codes(&report)["deps"], vec!["E0630", "E0632"]);
}

#[test]
fn a_config_alone_without_backend_gets_a_note_not_an_error() {
    let cfg = "max_batch_size: -1\ninput [ { name: \"x\" data_type: TYPE_FP32 dims: [ 1 ] } ]\noutput [ { name: \"y\" data_type: TYPE_FP32 dims: [ 1 ] } ]\n";
    let report = check_config_file(
        "cfg.pbtxt".into(),
        cfg.as_bytes().to_vec(),
        None,
        &ServerOptions::default(),
    );
    let codes: Vec<&str> = report.diagnostics.iter().map(|d| d.code()).collect();
    assert!(codes.contains(&"N0703"), "{codes:?}");
    assert!(!codes.contains(&"E0201"), "{codes:?}");
    // The other rules still run (here: the negative max_batch_size).
    assert!(
        report
            .diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error),
        "{codes:?}"
    );

    // In a directory, Triton's own failure is reported.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("nodot");
    std::fs::create_dir_all(dir.join("1")).unwrap();
    std::fs::write(dir.join("config.pbtxt"), cfg).unwrap();
    let report = run(&dir, &ValidateOptions::default());
    assert!(messages(&report, "E0201")[0]
        .starts_with("Invalid model name: Could not determine backend for model 'nodot'"));
}

#[test]
fn the_default_platform_applies_only_when_nothing_else_tells() {
    let raw = ParsedConfig::parse("max_batch_size: 1".into())
        .config
        .unwrap();
    let opts = ServerOptions {
        platform_default: Some("tensorrt_plan".into()),
        ..ServerOptions::default()
    };
    let onnx_dir = DirFacts {
        has_subdir: true,
        first_subdir_files: vec!["model.onnx".into()],
        first_subdir_dirs: vec![],
    };
    let p = prepare(&raw, Some("m"), &onnx_dir, opts.platform_default.as_deref()).unwrap();
    assert_eq!(p.cfg.backend, "onnxruntime");
    let p = prepare(
        &raw,
        Some("m.identity"),
        &DirFacts::default(),
        opts.platform_default.as_deref(),
    )
    .unwrap();
    assert_eq!(p.cfg.backend, "identity");
    let p = prepare(
        &raw,
        Some("m"),
        &DirFacts::default(),
        opts.platform_default.as_deref(),
    )
    .unwrap();
    assert_eq!(
        (p.cfg.platform.as_str(), p.cfg.backend.as_str()),
        ("tensorrt_plan", "tensorrt")
    );
}
