//! `tritonctl autoconfig`: the config Triton's ONNX Runtime backend
//! auto-completes (docs/spec/autoconfig.md), checked against
//!
//! * Triton's own test data (docs/spec/validation.md §7.1,
//!   docs/spec/autoconfig.md §8): the `autofill_noplatform/onnx` cases must
//!   fail with the expected text, the `autofill_noplatform_success/onnx`
//!   ones must give a config equal as a message to one of the expected
//!   files;
//! * the test vectors of docs/spec/autoconfig.md §13 and more, on the models
//!   that scripts/gen-autoconfig-models.py wrote into testdata/autoconfig/
//!   (expected values written by hand from the spec);
//! * ONNX Runtime's own view of those models (testdata/autoconfig/
//!   ort_view.json, written by the same script when onnxruntime is
//!   installed);
//! * bad inputs and `--write`.

use crate::common::{crate_root, shared_dir, tritonctl};
use std::path::{Path, PathBuf};
use tritonctl::config::ParsedConfig;
use tritonctl::schema::inference::model_config::SchedulingChoice;
use tritonctl::schema::inference::ModelConfig;

fn models() -> PathBuf {
    crate_root().join("testdata").join("autoconfig")
}

fn model(name: &str) -> PathBuf {
    models().join(name)
}

fn parse(text: &str) -> ModelConfig {
    let p = ParsedConfig::parse(text.to_string());
    assert!(
        p.diagnostics.is_empty(),
        "not a clean config: {:?}\n{text}",
        p.diagnostics
    );
    p.config.expect("typed config")
}

/// Runs and expects success; returns the printed config.
fn ok<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> (ModelConfig, String) {
    let r = tritonctl().arg("autoconfig").args(args).run();
    assert_eq!(
        r.code,
        0,
        "{:?}: stderr:\n{}",
        args.iter()
            .map(|a| a.as_ref().to_owned())
            .collect::<Vec<_>>(),
        r.stderr
    );
    (parse(&r.stdout), r.stderr)
}

/// Runs and expects exit 1 with Triton's `text` on standard error.
fn fails_with<S: AsRef<std::ffi::OsStr>>(args: &[S], text: &str) -> String {
    let r = tritonctl().arg("autoconfig").args(args).run();
    assert_eq!(r.code, 1, "expected exit 1; stderr:\n{}", r.stderr);
    assert!(
        r.stderr.contains(text),
        "stderr lacks `{text}`:\n{}",
        r.stderr
    );
    assert!(r.stdout.is_empty(), "printed a config on failure");
    r.stderr
}

/// (name, data type name, dims, has reshape with empty shape)
type Io = (String, String, Vec<i64>, bool);

fn inputs(c: &ModelConfig) -> Vec<Io> {
    c.input
        .iter()
        .map(|i| {
            (
                i.name.clone(),
                tritonctl::schema::data_type_name(i.data_type),
                i.dims.clone(),
                i.reshape.as_ref().is_some_and(|r| r.shape.is_empty()),
            )
        })
        .collect()
}

fn outputs(c: &ModelConfig) -> Vec<Io> {
    c.output
        .iter()
        .map(|o| {
            (
                o.name.clone(),
                tritonctl::schema::data_type_name(o.data_type),
                o.dims.clone(),
                o.reshape.as_ref().is_some_and(|r| r.shape.is_empty()),
            )
        })
        .collect()
}

fn io(name: &str, dt: &str, dims: &[i64], reshape: bool) -> Io {
    (name.into(), dt.into(), dims.to_vec(), reshape)
}

fn preferred(c: &ModelConfig) -> Option<Vec<i32>> {
    match &c.scheduling_choice {
        Some(SchedulingChoice::DynamicBatching(d)) => Some(d.preferred_batch_size.clone()),
        _ => None,
    }
}

fn has_dynamic_batching(c: &ModelConfig) -> bool {
    preferred(c).is_some()
}

fn warn_text(mbs: i32, m: &str) -> String {
    format!(
        "autofilled max_batch_size to {mbs} for model '{m}' since batching is supporrted but no max_batch_size is specified in model configuration. Must specify max_batch_size to utilize autofill with a larger max batch size"
    )
}

/// A partial config written to a temporary file.
fn partial(text: &str) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    std::io::Write::write_all(&mut f, text.as_bytes()).unwrap();
    f
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

// ---------------------------------------------------------------------
// Triton's QA cases.

/// An expected file's first line as literal text (the files escape `[`,
/// `]` and `.` for grep).
fn unescape(raw: &str) -> String {
    let line = raw.lines().next().unwrap_or("").trim_end();
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' && chars.peek().is_some_and(|n| "[].\\*$^".contains(*n)) {
            out.push(chars.next().unwrap());
        } else {
            out.push(c);
        }
    }
    out
}

fn expected_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("expected"))
        .map(|e| e.path())
        .collect();
    v.sort();
    v
}

fn case_dirs(group: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(group)
        .unwrap_or_else(|e| panic!("{}: {e}", group.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    v.sort();
    v
}

#[test]
fn conformance_onnx_failures_give_tritons_message() {
    let Some(shared) = shared_dir() else { return };
    let group = shared.join("conformance/L0_model_config/autofill_noplatform/onnx");
    let cases = case_dirs(&group);
    assert_eq!(cases.len(), 7, "the group has 7 cases");
    for case in cases {
        let expected: Vec<String> = expected_files(&case)
            .iter()
            .map(|f| unescape(&std::fs::read_to_string(f).unwrap()))
            .collect();
        assert!(!expected.is_empty(), "{}: no expected file", case.display());
        let r = tritonctl()
            .arg("autoconfig")
            .args([
                case.as_os_str(),
                "--merge".as_ref(),
                case.join("config.pbtxt").as_os_str(),
            ])
            .run();
        assert_eq!(r.code, 1, "{}: stderr:\n{}", case.display(), r.stderr);
        assert!(
            expected.iter().any(|e| r.stderr.contains(e.as_str())),
            "{}: none of {expected:?} in:\n{}",
            case.display(),
            r.stderr
        );
    }
}

/// A config as Triton reports it, for comparison: `runtime` cleared (the
/// expected files print `runtime: ""`), inputs and outputs sorted by name
/// (their order from Triton is not deterministic).
fn comparable(mut c: ModelConfig) -> prost_reflect::DynamicMessage {
    c.runtime.clear();
    c.input.sort_by(|a, b| a.name.cmp(&b.name));
    c.output.sort_by(|a, b| a.name.cmp(&b.name));
    tritonctl::autoconfig::to_message(&c)
}

#[test]
fn conformance_onnx_successes_equal_an_expected_config() {
    let Some(shared) = shared_dir() else { return };
    let group = shared.join("conformance/L0_model_config/autofill_noplatform_success/onnx");
    let cases = case_dirs(&group);
    assert_eq!(cases.len(), 4, "the group has 4 cases");
    for case in cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        // cpu_instance's model is not in Triton's repository: ours is
        // generated (testdata/autoconfig/cpu_instance).
        let tmp = tempfile::tempdir().unwrap();
        let dir = if case.join("1").is_dir() {
            case.clone()
        } else {
            let d = tmp.path().join(&name);
            copy_dir(&case, &d);
            copy_dir(&model(&name).join("1"), &d.join("1"));
            d
        };
        let expected: Vec<PathBuf> = expected_files(&case);
        assert!(!expected.is_empty());
        let gpu = expected
            .iter()
            .any(|f| std::fs::read_to_string(f).unwrap().contains("KIND_GPU"));
        let mut args: Vec<std::ffi::OsString> = vec![dir.clone().into(), "--full".into()];
        if dir.join("config.pbtxt").is_file() {
            args.push("--merge".into());
            args.push(dir.join("config.pbtxt").into());
        }
        if gpu {
            args.push("--gpus".into());
            args.push("0".into());
        }
        let (ours, _) = ok(&args);
        let ours = comparable(ours);
        let matched = expected.iter().any(|f| {
            let theirs = comparable(parse(&std::fs::read_to_string(f).unwrap()));
            tritonctl::convert::messages_equal(&ours, &theirs)
        });
        assert!(
            matched,
            "{name}: no expected file equals\n{}",
            tritonctl::pbtxt::printer::print_message(&ours)
        );
    }
}

// ---------------------------------------------------------------------
// The test vectors of docs/spec/autoconfig.md §13 (D = 4, CPU host).

#[test]
fn a1_symbolic_batch_dim() {
    let (c, stderr) = ok(&[model("a1_symbolic")]);
    assert_eq!(c.name, "a1_symbolic");
    assert_eq!(c.platform, "onnxruntime_onnx");
    assert_eq!(c.backend, "onnxruntime");
    assert_eq!(c.max_batch_size, 4);
    assert_eq!(inputs(&c), [io("X", "TYPE_FP32", &[3, 8, 8], false)]);
    assert_eq!(outputs(&c), [io("Y", "TYPE_FP32", &[10], false)]);
    assert!(has_dynamic_batching(&c));
    assert!(stderr.contains(&warn_text(4, "a1_symbolic")), "{stderr}");
    // The minimal config holds nothing else.
    assert!(c.version_policy.is_none() && c.instance_group.is_empty());
    assert!(c.optimization.is_none() && c.default_model_filename.is_empty());

    let (full, _) = ok(&[model("a1_symbolic").as_os_str(), "--full".as_ref()]);
    assert_eq!(preferred(&full), Some(vec![4]));
    assert_eq!(full.default_model_filename, "model.onnx");
    let policy = format!("{:?}", full.version_policy);
    assert!(
        policy.contains("Latest(Latest { num_versions: 1 })"),
        "{policy}"
    );
    let g = &full.instance_group;
    assert_eq!(g.len(), 1);
    assert_eq!(
        (
            g[0].name.as_str(),
            g[0].count,
            g[0].kind,
            g[0].gpus.is_empty()
        ),
        ("a1_symbolic", 2, 2, true),
        "one group of 2 CPU instances"
    );
    let opt = full.optimization.unwrap();
    assert!(opt.input_pinned_memory.unwrap().enable);
    assert!(opt.output_pinned_memory.unwrap().enable);
}

#[test]
fn a2_fixed_batch_dim() {
    let (c, stderr) = ok(&[model("a2_fixed")]);
    assert_eq!(c.max_batch_size, 0);
    assert_eq!(inputs(&c), [io("X", "TYPE_FP32", &[1, 3, 8, 8], false)]);
    assert_eq!(outputs(&c), [io("Y", "TYPE_FP32", &[1, 10], false)]);
    assert!(!has_dynamic_batching(&c));
    assert!(!stderr.contains("autofilled"), "{stderr}");
}

#[test]
fn a3_batch_only_vectors_get_an_empty_reshape() {
    let (c, _) = ok(&[model("a3_vector")]);
    assert_eq!(c.max_batch_size, 4);
    assert_eq!(inputs(&c), [io("X", "TYPE_INT64", &[1], true)]);
    assert_eq!(outputs(&c), [io("Y", "TYPE_INT64", &[1], true)]);
}

#[test]
fn a4_scalars_without_batching_get_dims_one_and_no_reshape() {
    let (c, _) = ok(&[model("a4_scalar")]);
    assert_eq!(c.max_batch_size, 0);
    assert_eq!(inputs(&c), [io("X", "TYPE_FP32", &[1], false)]);
    assert_eq!(outputs(&c), [io("Y", "TYPE_FP32", &[1], false)]);
    assert!(c.input[0].reshape.is_none() && c.output[0].reshape.is_none());
}

#[test]
fn a5_one_fixed_first_dim_disables_batching() {
    let (c, _) = ok(&[model("a5_mixed")]);
    assert_eq!(c.max_batch_size, 0);
    assert_eq!(inputs(&c), [io("X", "TYPE_FP32", &[-1, 4], false)]);
    assert_eq!(outputs(&c), [io("Y", "TYPE_FP32", &[1, 4], false)]);
    assert!(!has_dynamic_batching(&c));
}

#[test]
fn a6_a7_default_max_batch_size() {
    let m = model("a1_symbolic");
    // A6.
    for flag in ["--max-batch-size", "--default-max-batch-size"] {
        let (c, _) = ok(&[m.as_os_str(), flag.as_ref(), "1".as_ref()]);
        assert_eq!(c.max_batch_size, 1);
        assert!(!has_dynamic_batching(&c));
        assert_eq!(inputs(&c), [io("X", "TYPE_FP32", &[3, 8, 8], false)]);
    }
    // A7, and a negative value behaving as 0.
    for n in ["0", "-3"] {
        let (c, stderr) = ok(&[m.as_os_str(), "--max-batch-size".as_ref(), n.as_ref()]);
        assert_eq!(c.max_batch_size, 0);
        assert_eq!(inputs(&c), [io("X", "TYPE_FP32", &[-1, 3, 8, 8], false)]);
        assert_eq!(outputs(&c), [io("Y", "TYPE_FP32", &[-1, 10], false)]);
        assert!(!has_dynamic_batching(&c));
        assert!(stderr.contains(&warn_text(0, "a1_symbolic")), "{stderr}");
    }
    // A larger default.
    let (c, _) = ok(&[
        m.as_os_str(),
        "--max-batch-size".as_ref(),
        "32".as_ref(),
        "--full".as_ref(),
    ]);
    assert_eq!((c.max_batch_size, preferred(&c)), (32, Some(vec![32])));
}

#[test]
fn a8_configured_max_batch_size_is_kept() {
    let p = partial("max_batch_size: 16");
    let (c, stderr) = ok(&[
        model("a1_symbolic").as_os_str(),
        "--merge".as_ref(),
        p.path().as_os_str(),
        "--full".as_ref(),
    ]);
    assert_eq!(c.max_batch_size, 16);
    assert_eq!(inputs(&c), [io("X", "TYPE_FP32", &[3, 8, 8], false)]);
    assert_eq!(preferred(&c), Some(vec![16]));
    assert!(!stderr.contains("autofilled"), "{stderr}");
}

#[test]
fn a9_unbatchable_model_with_max_batch_size_fails() {
    let p = partial("max_batch_size: 8");
    let stderr = fails_with(
        &[
            model("a2_fixed").as_os_str(),
            "--merge".as_ref(),
            p.path().as_os_str(),
        ],
        "autofill failed for model 'a2_fixed': model does not support batching while non-zero max_batch_size is specified",
    );
    // The error names the file to fix.
    assert!(stderr.contains(&p.path().display().to_string()), "{stderr}");
}

#[test]
fn a10_sequence_batching_gets_no_dynamic_batcher() {
    let p = partial("sequence_batching { }");
    let (c, _) = ok(&[
        model("a1_symbolic").as_os_str(),
        "--merge".as_ref(),
        p.path().as_os_str(),
        "--full".as_ref(),
    ]);
    assert_eq!(c.max_batch_size, 4);
    let Some(SchedulingChoice::SequenceBatching(sb)) = &c.scheduling_choice else {
        panic!("sequence batching lost: {:?}", c.scheduling_choice)
    };
    assert_eq!(sb.max_sequence_idle_microseconds, 1_000_000);
}

#[test]
fn a11_listed_io_skips_auto_complete_and_fails_the_shape_check() {
    let p = partial(
        "input [ { name: \"X\" data_type: TYPE_FP32 dims: [ 3, 8, 8 ] } ]\noutput [ { name: \"Y\" data_type: TYPE_FP32 dims: [ 10 ] } ]\n",
    );
    let stderr = fails_with(
        &[
            model("a1_symbolic").as_os_str(),
            "--merge".as_ref(),
            p.path().as_os_str(),
        ],
        "model 'a1_symbolic', tensor 'X': the model expects 4 dimensions (shape [-1,3,8,8]) but the model configuration specifies 3 dimensions (shape [3,8,8])",
    );
    assert!(
        stderr.contains("skipping model configuration auto-complete for 'a1_symbolic': inputs and outputs already specified"),
        "{stderr}"
    );
}

#[test]
fn a12_only_inputs_listed() {
    let p = partial("input [ { name: \"X\" data_type: TYPE_FP32 dims: [ 3, 8, 8 ] } ]");
    let (c, _) = ok(&[
        model("a1_symbolic").as_os_str(),
        "--merge".as_ref(),
        p.path().as_os_str(),
    ]);
    assert_eq!(c.max_batch_size, 4);
    assert_eq!(outputs(&c), [io("Y", "TYPE_FP32", &[10], false)]);
    assert!(has_dynamic_batching(&c));
}

#[test]
fn a13_overridable_initializers_are_not_inputs() {
    for m in ["a13_overridable", "ir3_initializer_input"] {
        let (c, _) = ok(&[model(m)]);
        assert_eq!(inputs(&c), [io("X", "TYPE_FP32", &[3], false)], "{m}");
        assert_eq!(c.max_batch_size, 4);
    }
    // With IR >= 4 the initializer may be listed, as an optional input of a
    // non-batching config.
    let p = partial(
        "input [ { name: \"X\" data_type: TYPE_FP32 dims: [ -1, 3 ] }, { name: \"W\" data_type: TYPE_FP32 dims: [ 3 ] optional: true } ]\noutput [ { name: \"Y\" data_type: TYPE_FP32 dims: [ -1, 3 ] } ]",
    );
    ok(&[
        model("a13_overridable").as_os_str(),
        "--merge".as_ref(),
        p.path().as_os_str(),
    ]);
    // With IR 3 it is unknown.
    fails_with(
        &[
            model("ir3_initializer_input").as_os_str(),
            "--merge".as_ref(),
            p.path().as_os_str(),
        ],
        "unexpected inference input 'W', allowed inputs are: X",
    );
}

#[test]
fn a14_output_shape_from_inference() {
    let (c, stderr) = ok(&[model("a14_relu_no_shape")]);
    assert_eq!(c.max_batch_size, 4);
    assert_eq!(outputs(&c), [io("Y", "TYPE_FP32", &[4], false)]);
    assert!(stderr.contains("output 'Y'"), "{stderr}");
}

#[test]
fn a15_strings() {
    let (c, _) = ok(&[model("a15_string")]);
    assert_eq!(inputs(&c), [io("X", "TYPE_STRING", &[1], true)]);
    assert_eq!(outputs(&c), [io("Y", "TYPE_STRING", &[1], true)]);
}

#[test]
fn a16_unmapped_output_type_fails_like_triton() {
    fails_with(
        &[model("a16_complex_output")],
        "model output 'Y' must specify 'data_type' for a16_complex_output",
    );
}

#[test]
fn a17_non_tensor_io_is_unsupported() {
    fails_with(
        &[model("a17_sequence_output")],
        "Unsupported ONNX Type 'ONNX_TYPE_SEQUENCE' for I/O 'Y', expected 'ONNX_TYPE_TENSOR'.",
    );
    fails_with(
        &[model("map_input")],
        "Unsupported ONNX Type 'ONNX_TYPE_MAP' for I/O 'M', expected 'ONNX_TYPE_TENSOR'.",
    );
    // ORT has no name for optional types in this message.
    fails_with(
        &[model("optional_output")],
        "Unsupported ONNX Type 'ONNX_TYPE_UNKNOWN' for I/O 'Y', expected 'ONNX_TYPE_TENSOR'.",
    );
}

// ---------------------------------------------------------------------
// More models.

#[test]
fn every_mapped_element_type() {
    let table = [
        ("BOOL", "TYPE_BOOL"),
        ("UINT8", "TYPE_UINT8"),
        ("UINT16", "TYPE_UINT16"),
        ("UINT32", "TYPE_UINT32"),
        ("UINT64", "TYPE_UINT64"),
        ("INT8", "TYPE_INT8"),
        ("INT16", "TYPE_INT16"),
        ("INT32", "TYPE_INT32"),
        ("INT64", "TYPE_INT64"),
        ("BFLOAT16", "TYPE_BF16"),
        ("FLOAT16", "TYPE_FP16"),
        ("FLOAT", "TYPE_FP32"),
        ("DOUBLE", "TYPE_FP64"),
        ("STRING", "TYPE_STRING"),
    ];
    let (c, _) = ok(&[model("all_types")]);
    assert_eq!(c.max_batch_size, 4);
    let want_in: Vec<Io> = table
        .iter()
        .map(|(o, t)| io(&format!("IN_{o}"), t, &[2], false))
        .collect();
    let want_out: Vec<Io> = table
        .iter()
        .map(|(o, t)| io(&format!("OUT_{o}"), t, &[2], false))
        .collect();
    assert_eq!(inputs(&c), want_in);
    assert_eq!(outputs(&c), want_out);
}

#[test]
fn unmapped_element_types_fail_with_the_data_type_message() {
    for (m, onnx) in [
        ("unmapped_complex128", "COMPLEX128"),
        ("unmapped_float8e4m3fn", "FLOAT8E4M3FN"),
        ("unmapped_float8e5m2", "FLOAT8E5M2"),
        ("unmapped_int4", "INT4"),
        ("unmapped_uint4", "UINT4"),
    ] {
        let stderr = fails_with(
            &[model(m)],
            &format!("model input 'X' must specify 'data_type' for {m}"),
        );
        assert!(
            stderr.contains(onnx),
            "{m}: the help names the type:\n{stderr}"
        );
    }
}

#[test]
fn mixed_batching_and_scalar_tensors() {
    let (c, _) = ok(&[model("mixed_scalar_output")]);
    assert_eq!(c.max_batch_size, 0);
    assert_eq!(inputs(&c), [io("X", "TYPE_FP32", &[-1, 4], false)]);
    assert_eq!(
        outputs(&c),
        [
            io("Y", "TYPE_FP32", &[-1, 4], false),
            io("Z", "TYPE_FP32", &[1], false)
        ]
    );
    // Asking for batching fails.
    let p = partial("max_batch_size: 2");
    fails_with(
        &[
            model("mixed_scalar_output").as_os_str(),
            "--merge".as_ref(),
            p.path().as_os_str(),
        ],
        "autofill failed for model 'mixed_scalar_output': model does not support batching while non-zero max_batch_size is specified",
    );
}

#[test]
fn symbolic_unknown_and_inner_variable_dims() {
    let (c, _) = ok(&[model("unknown_first_dim")]);
    assert_eq!(c.max_batch_size, 4);
    assert_eq!(inputs(&c), [io("X", "TYPE_FP32", &[5], false)]);
    let (c, stderr) = ok(&[model("variable_inner_dims")]);
    assert_eq!(c.max_batch_size, 4);
    assert_eq!(inputs(&c), [io("X", "TYPE_FP32", &[-1, 8], false)]);
    assert_eq!(outputs(&c), [io("Y", "TYPE_FP32", &[-1, 8], false)]);
    assert!(stderr.contains("allow_ragged_batch"), "{stderr}");
    // A zero dim is written as ORT reports it and refused by core.
    fails_with(
        &[model("zero_dim")],
        "model input 'X' dimension must be integer >= 1, or -1 to indicate a variable-size dimension for zero_dim",
    );
}

#[test]
fn several_inputs_and_outputs_in_graph_order() {
    let (c, stderr) = ok(&[model("multi_io")]);
    assert_eq!(c.max_batch_size, 4);
    assert_eq!(
        inputs(&c),
        [
            io("IDS", "TYPE_INT64", &[16], false),
            io("FEAT", "TYPE_FP32", &[3, 224, 224], false),
            io("MASK", "TYPE_BOOL", &[1], false)
        ]
    );
    assert_eq!(
        outputs(&c),
        [
            io("IDS_OUT", "TYPE_INT64", &[16], false),
            io("SCORE", "TYPE_FP32", &[3, 224, 224], false),
            io("MASK_OUT", "TYPE_BOOL", &[1], false)
        ]
    );
    // All first dims share one name: no warning about them.
    assert!(!stderr.contains("symbolic names"), "{stderr}");
}

#[test]
fn fifty_inputs() {
    let (c, _) = ok(&[model("many_inputs")]);
    let want: Vec<Io> = (0..50)
        .map(|i| io(&format!("X{i}"), "TYPE_FP32", &[1], false))
        .collect();
    assert_eq!(inputs(&c), want);
    assert_eq!(outputs(&c), [io("Y", "TYPE_FP32", &[1], false)]);
    assert_eq!(c.max_batch_size, 4);
}

#[test]
fn output_shapes_from_value_info_propagation_or_unknown() {
    let (c, stderr) = ok(&[model("value_info_declared")]);
    assert_eq!(outputs(&c), [io("Y", "TYPE_FP32", &[3], false)]);
    assert!(stderr.contains("declared value info used"), "{stderr}");
    let (c, _) = ok(&[model("value_info_output")]);
    assert_eq!(outputs(&c), [io("Y", "TYPE_FP32", &[3], false)]);
    // Nothing tells the output's shape: a scalar for Triton, so no
    // batching, and a warning that ONNX Runtime may know better.
    let (c, stderr) = ok(&[model("unknown_output_shape")]);
    assert_eq!(c.max_batch_size, 0);
    assert_eq!(outputs(&c), [io("Y", "TYPE_FP32", &[1], false)]);
    assert!(stderr.contains("warning:"), "{stderr}");
    assert!(stderr.contains("ONNX Runtime"), "{stderr}");
}

#[test]
fn opsets_and_ir_versions_do_not_change_the_config() {
    for m in [
        "opset7",
        "opset11",
        "opset13",
        "opset17",
        "opset21",
        "opset_domains",
    ] {
        let (c, _) = ok(&[model(m)]);
        assert_eq!(c.name, m);
        assert_eq!(c.max_batch_size, 4, "{m}");
        assert_eq!(inputs(&c), [io("X", "TYPE_FP32", &[4], false)], "{m}");
        assert_eq!(outputs(&c), [io("Y", "TYPE_FP32", &[4], false)], "{m}");
        assert!(has_dynamic_batching(&c), "{m}");
    }
}

#[test]
fn external_data_is_never_read() {
    let (c, stderr) = ok(&[model("external_data")]);
    assert_eq!(inputs(&c), [io("X", "TYPE_FP32", &[4], false)]);
    assert!(stderr.contains("weights.bin"), "{stderr}");
    // Without the weights file the config is the same; the warning says
    // ONNX Runtime would fail.
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("external_data");
    copy_dir(&model("external_data"), &d);
    std::fs::remove_file(d.join("1").join("weights.bin")).unwrap();
    let (c2, stderr) = ok(&[&d]);
    assert_eq!(c2, c);
    assert!(
        stderr.contains("warning:") && stderr.contains("missing"),
        "{stderr}"
    );
}

const SEQUENCE: &str = r#"
sequence_batching {
  control_input [
    { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] },
    { name: "READY" control [ { kind: CONTROL_SEQUENCE_READY int32_false_true: [ 0, 1 ] } ] },
    { name: "CORRID" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 } ] }
  ]
  state [ { input_name: "state_in" output_name: "state_out" data_type: TYPE_FP32 dims: [ 4 ] } ]
}
"#;

#[test]
fn sequence_models_leave_out_controls_and_state_unless_triton_compatible() {
    let p = partial(SEQUENCE);
    let m = model("sequence_model");
    let (c, stderr) = ok(&[
        m.as_os_str(),
        "--merge".as_ref(),
        p.path().as_os_str(),
        "--full".as_ref(),
    ]);
    assert_eq!(inputs(&c), [io("INPUT", "TYPE_FP32", &[4], false)]);
    assert_eq!(outputs(&c), [io("OUTPUT", "TYPE_FP32", &[4], false)]);
    assert_eq!(c.max_batch_size, 4);
    assert!(matches!(
        c.scheduling_choice,
        Some(SchedulingChoice::SequenceBatching(_))
    ));
    for name in ["START", "READY", "CORRID", "state_in", "state_out"] {
        assert!(stderr.contains(&format!("'{name}'")), "{name}: {stderr}");
    }
    // Triton lists them and then counts them twice.
    fails_with(
        &[
            m.as_os_str(),
            "--merge".as_ref(),
            p.path().as_os_str(),
            "--triton-compatible".as_ref(),
        ],
        "unable to load model 'sequence_model', configuration expects 9 inputs, model provides 5",
    );
    // Without a sequence batcher every input is a plain input.
    let (c, _) = ok(&[&m]);
    assert_eq!(c.input.len(), 5);
    assert_eq!(c.output.len(), 2);
}

// ---------------------------------------------------------------------
// Consistency, options, model locations.

/// The minimal config, written as config.pbtxt, makes Triton end with the
/// same config as auto-complete from nothing.
#[test]
fn minimal_config_loads_as_the_full_one() {
    for m in [
        "a1_symbolic",
        "a2_fixed",
        "a3_vector",
        "a4_scalar",
        "a5_mixed",
        "a15_string",
        "all_types",
        "multi_io",
        "many_inputs",
        "mixed_scalar_output",
        "variable_inner_dims",
    ] {
        let minimal = tritonctl().arg("autoconfig").args(&[model(m)]).run();
        assert_eq!(minimal.code, 0, "{m}: {}", minimal.stderr);
        let p = partial(&minimal.stdout);
        let (full, _) = ok(&[model(m).as_os_str(), "--full".as_ref()]);
        let (merged, stderr) = ok(&[
            model(m).as_os_str(),
            "--merge".as_ref(),
            p.path().as_os_str(),
            "--full".as_ref(),
        ]);
        assert_eq!(merged, full, "{m}");
        assert!(!stderr.contains("autofilled"), "{m}: {stderr}");
    }
}

#[test]
fn gpus_decide_the_instance_group() {
    let (c, _) = ok(&[
        model("a1_symbolic").as_os_str(),
        "--full".as_ref(),
        "--gpus".as_ref(),
        "0,1".as_ref(),
    ]);
    let g = &c.instance_group[0];
    assert_eq!(
        (g.name.as_str(), g.count, g.kind, g.gpus.clone()),
        ("a1_symbolic", 1, 1, vec![0, 1])
    );
    // A KIND_GPU group on a CPU-only host: Triton's instance-group error.
    let p = partial("instance_group [ { kind: KIND_GPU } ]");
    fails_with(
        &[
            model("a1_symbolic").as_os_str(),
            "--merge".as_ref(),
            p.path().as_os_str(),
        ],
        "instance group a1_symbolic_0 of model a1_symbolic has kind KIND_GPU but no GPUs are available",
    );
}

#[test]
fn json_output() {
    let r = tritonctl()
        .arg("autoconfig")
        .args([
            model("a3_vector").as_os_str(),
            "--format".as_ref(),
            "json".as_ref(),
        ])
        .run();
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["name"], "a3_vector");
    assert_eq!(v["max_batch_size"], 4);
    assert_eq!(v["input"][0]["data_type"], "TYPE_INT64");
    assert_eq!(v["input"][0]["dims"], serde_json::json!([1]));
    assert_eq!(v["input"][0]["reshape"]["shape"], serde_json::json!([]));
    assert!(v["dynamic_batching"].is_object());
}

#[test]
fn merge_keeps_what_the_partial_config_says() {
    let p = partial(
        "# ours\nmax_batch_size: 8\ndynamic_batching { max_queue_delay_microseconds: 500 }\nparameters { key: \"k\" value { string_value: \"v\" } }\n",
    );
    let (c, _) = ok(&[
        model("a1_symbolic").as_os_str(),
        "--merge".as_ref(),
        p.path().as_os_str(),
    ]);
    assert_eq!(c.max_batch_size, 8);
    let Some(SchedulingChoice::DynamicBatching(db)) = &c.scheduling_choice else {
        panic!()
    };
    assert_eq!(db.max_queue_delay_microseconds, 500);
    assert!(db.preferred_batch_size.is_empty(), "minimal: as written");
    assert_eq!(c.parameters["k"].string_value, "v");
    assert_eq!(inputs(&c), [io("X", "TYPE_FP32", &[3, 8, 8], false)]);
}

#[test]
fn merge_refuses_broken_or_foreign_configs() {
    // Not text format: the syntax error, exit 1.
    let p = partial("max_batch_size 8\n");
    let r = tritonctl()
        .arg("autoconfig")
        .args([
            model("a1_symbolic").as_os_str(),
            "--merge".as_ref(),
            p.path().as_os_str(),
        ])
        .run();
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains(&p.path().display().to_string()),
        "{}",
        r.stderr
    );
    // Another backend: not ours to complete, exit 2.
    let p = partial("platform: \"tensorrt_plan\"");
    let r = tritonctl()
        .arg("autoconfig")
        .args([
            model("a1_symbolic").as_os_str(),
            "--merge".as_ref(),
            p.path().as_os_str(),
        ])
        .run();
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("ONNX Runtime models only"),
        "{}",
        r.stderr
    );
    // A name that is not the directory's.
    let p = partial("name: \"other\"");
    fails_with(
        &[
            model("a1_symbolic").as_os_str(),
            "--merge".as_ref(),
            p.path().as_os_str(),
        ],
        "unexpected directory name 'a1_symbolic' for model 'other', directory name must equal model name",
    );
    // A missing merge file.
    let r = tritonctl()
        .arg("autoconfig")
        .args([
            model("a1_symbolic").as_os_str(),
            "--merge".as_ref(),
            "no/such/config.pbtxt".as_ref(),
        ])
        .run();
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("no/such/config.pbtxt"), "{}", r.stderr);
}

#[test]
fn model_files_and_versions() {
    let tmp = tempfile::tempdir().unwrap();
    let a1 = model("a1_symbolic").join("1").join("model.onnx");
    let a2 = model("a2_fixed").join("1").join("model.onnx");
    // A bare file: named after its stem.
    let bare = tmp.path().join("resnet.onnx");
    std::fs::copy(&a1, &bare).unwrap();
    let (c, _) = ok(&[&bare]);
    assert_eq!(c.name, "resnet");
    assert_eq!(c.max_batch_size, 4);
    // A file in a model directory: named after the directory.
    let (c, _) = ok(&[&a1]);
    assert_eq!(c.name, "a1_symbolic");
    // The numerically highest version is read (10, not 9).
    let m = tmp.path().join("versions");
    for (v, f) in [("9", &a2), ("10", &a1)] {
        std::fs::create_dir_all(m.join(v)).unwrap();
        std::fs::copy(f, m.join(v).join("model.onnx")).unwrap();
    }
    let (c, _) = ok(&[&m]);
    assert_eq!((c.name.as_str(), c.max_batch_size), ("versions", 4));
    // Unless the version policy picks another.
    let p = partial("version_policy { specific { versions: [ 9 ] } }");
    let (c, _) = ok(&[m.as_os_str(), "--merge".as_ref(), p.path().as_os_str()]);
    assert_eq!(c.max_batch_size, 0);
    // A directory holding model.onnx as a directory (large models).
    let d = tmp.path().join("dir_model");
    std::fs::create_dir_all(d.join("1").join("model.onnx")).unwrap();
    std::fs::copy(&a1, d.join("1").join("model.onnx").join("model.onnx")).unwrap();
    let (c, _) = ok(&[&d]);
    assert_eq!(c.max_batch_size, 4);
}

// ---------------------------------------------------------------------
// Bad input: exit 2, naming the file.

fn exit2_naming(path: &Path, what: &str) {
    let r = tritonctl().arg("autoconfig").args([path]).run();
    assert_eq!(r.code, 2, "{}: stderr:\n{}", path.display(), r.stderr);
    assert!(r.stdout.is_empty());
    assert!(
        r.stderr.contains(&path.display().to_string()),
        "{}: the message names the file:\n{}",
        path.display(),
        r.stderr
    );
    assert!(r.stderr.contains(what), "`{what}` in:\n{}", r.stderr);
}

#[test]
fn bad_model_files() {
    let tmp = tempfile::tempdir().unwrap();
    let m = tmp.path().join("m").join("1");
    std::fs::create_dir_all(&m).unwrap();
    let f = m.join("model.onnx");
    // Not ONNX.
    std::fs::write(&f, "name: \"m\"\nmax_batch_size: 8\n").unwrap();
    exit2_naming(&f, "not an ONNX model");
    // Truncated.
    let bytes = std::fs::read(model("a1_symbolic").join("1").join("model.onnx")).unwrap();
    std::fs::write(&f, &bytes[..bytes.len() / 2]).unwrap();
    exit2_naming(&f, "truncated");
    // Empty.
    std::fs::write(&f, b"").unwrap();
    exit2_naming(&f, "empty");
    // Through the model directory, the message still names the file.
    let r = tritonctl()
        .arg("autoconfig")
        .args(&[tmp.path().join("m")])
        .run();
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains(&f.display().to_string()), "{}", r.stderr);
    // Missing.
    exit2_naming(&tmp.path().join("nothing.onnx"), "no such file");
}

#[test]
fn directories_without_a_model() {
    let tmp = tempfile::tempdir().unwrap();
    // No version directory at all.
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    exit2_naming(&empty, "no model file");
    // A version directory without the file.
    let v = tmp.path().join("noversion");
    std::fs::create_dir_all(v.join("1")).unwrap();
    exit2_naming(&v, "no model file");
    // model.onnx next to where config.pbtxt goes.
    let flat = tmp.path().join("flat");
    std::fs::create_dir(&flat).unwrap();
    std::fs::copy(
        model("a1_symbolic").join("1").join("model.onnx"),
        flat.join("model.onnx"),
    )
    .unwrap();
    exit2_naming(&flat, "version directory");
    // A model repository rather than a model.
    exit2_naming(&models(), "model repository");
}

// ---------------------------------------------------------------------
// --write.

#[test]
fn write_creates_config_pbtxt_and_refuses_to_overwrite() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("a1_symbolic");
    copy_dir(&model("a1_symbolic"), &d);
    let printed = tritonctl().arg("autoconfig").args([&d]).run();
    let r = tritonctl()
        .arg("autoconfig")
        .args([d.as_os_str(), "--write".as_ref()])
        .run();
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.is_empty());
    let target = d.join("config.pbtxt");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), printed.stdout);
    // Again: refused, file unchanged.
    std::fs::write(&target, "max_batch_size: 2\n").unwrap();
    let r = tritonctl()
        .arg("autoconfig")
        .args([d.as_os_str(), "--write".as_ref()])
        .run();
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--force"), "{}", r.stderr);
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "max_batch_size: 2\n"
    );
    // --force replaces it; merging completes what it says.
    let r = tritonctl()
        .arg("autoconfig")
        .args([
            d.as_os_str(),
            "--write".as_ref(),
            "--force".as_ref(),
            "--merge".as_ref(),
            target.as_os_str(),
            "--full".as_ref(),
        ])
        .run();
    assert_eq!(r.code, 0, "{}", r.stderr);
    let written = parse(&std::fs::read_to_string(&target).unwrap());
    assert_eq!(written.max_batch_size, 2);
    assert_eq!(written.instance_group.len(), 1);
    // Nothing but the config and the version directory is left.
    let mut names: Vec<String> = std::fs::read_dir(&d)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["1", "config.pbtxt"]);
    // JSON cannot be written; a bare file has no model directory.
    let r = tritonctl()
        .arg("autoconfig")
        .args([
            d.as_os_str(),
            "--write".as_ref(),
            "--force".as_ref(),
            "--format".as_ref(),
            "json".as_ref(),
        ])
        .run();
    assert_eq!(r.code, 2);
    let bare = tmp.path().join("bare.onnx");
    std::fs::copy(d.join("1").join("model.onnx"), &bare).unwrap();
    let r = tritonctl()
        .arg("autoconfig")
        .args([bare.as_os_str(), "--write".as_ref()])
        .run();
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(!tmp.path().join("config.pbtxt").exists());
}

/// In a container tritonctl often runs as PID 1: a temporary file left by
/// an earlier run under a name made from the process id (as
/// `.config.pbtxt.tritonctl-1.tmp` once was) must neither make `--write`
/// fail nor be deleted by it (the writer's temporary names are unique).
/// Run as PID 1 in a new PID namespace (`unshare --pid --fork`); skipped
/// where that is not allowed.
#[test]
fn write_as_pid_1_ignores_and_keeps_a_stale_temporary_file() {
    let can_unshare = std::process::Command::new("unshare")
        .args(["--pid", "--fork", "sh", "-c", "test $$ = 1"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !can_unshare {
        eprintln!("skipped: cannot run a process as PID 1 here (unshare --pid --fork)");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("a1_symbolic");
    copy_dir(&model("a1_symbolic"), &d);
    let stale = d.join(".config.pbtxt.tritonctl-1.tmp");
    std::fs::write(&stale, "not tritonctl's\n").unwrap();
    let printed = tritonctl().arg("autoconfig").args([&d]).run();
    assert_eq!(printed.code, 0, "{}", printed.stderr);
    let o = std::process::Command::new("unshare")
        .args(["--pid", "--fork"])
        .arg(crate::common::tritonctl_path())
        .args(["autoconfig".as_ref(), d.as_os_str(), "--write".as_ref()])
        .env_clear()
        .envs(std::env::var_os("PATH").map(|p| ("PATH", p)))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(d.join("config.pbtxt")).unwrap(),
        printed.stdout
    );
    assert_eq!(
        std::fs::read_to_string(&stale).unwrap(),
        "not tritonctl's\n"
    );
    let mut names = leftovers(&d);
    names.sort();
    assert_eq!(names, [".config.pbtxt.tritonctl-1.tmp", "config.pbtxt"]);
}

fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "1")
        .collect()
}

#[test]
fn failed_writes_leave_nothing_behind() {
    let tmp = tempfile::tempdir().unwrap();
    // The target name is taken by a directory: the rename fails.
    let d = tmp.path().join("a1_symbolic");
    copy_dir(&model("a1_symbolic"), &d);
    std::fs::create_dir_all(d.join("config.pbtxt").join("x")).unwrap();
    let r = tritonctl()
        .arg("autoconfig")
        .args([d.as_os_str(), "--write".as_ref(), "--force".as_ref()])
        .run();
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("config.pbtxt"), "{}", r.stderr);
    assert_eq!(leftovers(&d), ["config.pbtxt"]);
    assert!(d.join("config.pbtxt").is_dir());

    // A read-only model directory.
    use std::os::unix::fs::PermissionsExt;
    let ro = tmp.path().join("ro").join("a1_symbolic");
    copy_dir(&model("a1_symbolic"), &ro);
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
    let probe = ro.join("probe");
    let writable = std::fs::write(&probe, b"").is_ok();
    if writable {
        // Root ignores permissions: nothing to test here.
        std::fs::remove_file(&probe).unwrap();
        eprintln!("skipped: read-only directories are writable for this user");
    } else {
        let r = tritonctl()
            .arg("autoconfig")
            .args([ro.as_os_str(), "--write".as_ref()])
            .run();
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert!(r.stderr.contains("config.pbtxt"), "{}", r.stderr);
        assert!(leftovers(&ro).is_empty(), "{:?}", leftovers(&ro));
    }
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o755)).unwrap();
}

// ---------------------------------------------------------------------
// ONNX Runtime's own view of the models.

#[test]
fn session_view_matches_onnx_runtime() {
    let text = std::fs::read_to_string(models().join("ort_view.json")).unwrap();
    let view: serde_json::Value = serde_json::from_str(&text).unwrap();
    let view = view.as_object().unwrap();
    assert!(view.len() >= 20, "the oracle covers the loadable models");
    let side = |list: &[tritonctl::autoconfig::ort::OrtTensor]| -> serde_json::Value {
        list.iter()
            .map(|t| serde_json::json!({"name": t.name, "elem_type": t.elem_type, "dims": t.dims}))
            .collect()
    };
    for (name, want) in view {
        let sig = tritonctl::onnx::read_signature(&model(name).join("1").join("model.onnx"))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let ins = tritonctl::autoconfig::ort::session_inputs(&sig).unwrap();
        let outs = tritonctl::autoconfig::ort::session_outputs(&sig).unwrap();
        assert_eq!(side(&ins), want["inputs"], "{name}: inputs");
        assert_eq!(side(&outs), want["outputs"], "{name}: outputs");
    }
}

// ---------------------------------------------------------------------
// Output shapes from ONNX Runtime's session metadata (feature `run`).

/// The models of ort_view.json whose output shapes the file does not
/// fully declare (no shape, or an unknown dim), with ONNX Runtime's dims.
const UNDECLARED_OUTPUT_SHAPES: &[&str] = &[
    "a14_relu_no_shape",
    "unknown_first_dim",
    "value_info_declared",
    "value_info_output",
];

#[cfg(feature = "run")]
#[test]
fn output_shapes_from_onnx_runtime_session_metadata() {
    let lib = match tritonctl::runtime::probe() {
        Ok(lib) => lib,
        Err(e) if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("CI installs onnxruntime (scripts/test), but: {e}")
        }
        Err(e) => {
            eprintln!("skipped: ONNX Runtime is not available: {e}");
            return;
        }
    };
    let text = std::fs::read_to_string(models().join("ort_view.json")).unwrap();
    let view: serde_json::Value = serde_json::from_str(&text).unwrap();
    let lib_env = [("ORT_DYLIB_PATH", lib.path.as_os_str())];
    for name in UNDECLARED_OUTPUT_SHAPES {
        let m = model(name);
        let r = tritonctl()
            .arg("autoconfig")
            .args([m.as_os_str(), "--format".as_ref(), "json".as_ref()])
            .envs(&lib_env)
            .run();
        assert_eq!(r.code, 0, "{name}: {}", r.stderr);
        let cfg: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        let batching = cfg["max_batch_size"].as_i64().unwrap_or(0) > 0;
        let want = view[*name]["outputs"].as_array().expect(name);
        let got = cfg["output"].as_array().expect("outputs");
        assert_eq!(got.len(), want.len(), "{name}");
        for (g, w) in got.iter().zip(want) {
            // The config leaves out the batch dim; a scalar is [1].
            let mut dims: Vec<i64> = w["dims"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_i64().unwrap())
                .collect();
            if batching {
                dims.remove(0);
            }
            if dims.is_empty() {
                dims.push(1);
            }
            assert_eq!(g["name"], w["name"], "{name}");
            assert_eq!(g["dims"], serde_json::json!(dims), "{name}");
        }
        let note = format!(
            "output shapes of 'Y' taken from ONNX Runtime's session metadata ({})",
            lib.path.display()
        );
        assert!(r.stderr.contains(&note), "{name}: {}", r.stderr);
        assert!(!r.stderr.contains("was not used"), "{name}: {}", r.stderr);
    }
    // ONNX Runtime cannot load a model with an unknown custom operator:
    // the fallback, with a warning carrying ONNX Runtime's message.
    let r = tritonctl()
        .arg("autoconfig")
        .args([model("unknown_output_shape").as_os_str()])
        .envs(&lib_env)
        .run();
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("could not load the model") && r.stderr.contains("Mystery"),
        "{}",
        r.stderr
    );
    assert!(
        !r.stderr.contains("taken from ONNX Runtime"),
        "{}",
        r.stderr
    );
    // Fully declared outputs need no session: no note about the source.
    let r = tritonctl()
        .arg("autoconfig")
        .args([model("a1_symbolic").as_os_str()])
        .envs(&lib_env)
        .run();
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stderr.contains("session metadata"), "{}", r.stderr);
}

#[test]
fn output_shapes_fall_back_to_the_file_without_onnx_runtime() {
    let text = std::fs::read_to_string(models().join("ort_view.json")).unwrap();
    let view: serde_json::Value = serde_json::from_str(&text).unwrap();
    let missing = std::env::temp_dir().join("tritonctl-no-such-dir/libonnxruntime.so");
    let not_a_library = models().join("ort_view.json");
    let cases: [(&str, &std::ffi::OsStr, &str); 3] = [
        ("TRITONCTL_NO_ORT", "1".as_ref(), "TRITONCTL_NO_ORT is set"),
        (
            "ORT_DYLIB_PATH",
            missing.as_os_str(),
            "pip install onnxruntime",
        ),
        (
            "ORT_DYLIB_PATH",
            not_a_library.as_os_str(),
            "pip install onnxruntime",
        ),
    ];
    for (key, value, why) in cases {
        for name in UNDECLARED_OUTPUT_SHAPES {
            let r = tritonctl()
                .arg("autoconfig")
                .args([model(name).as_os_str()])
                .envs(&[(key, value)])
                .run();
            assert_eq!(r.code, 0, "{name} {key}: {}", r.stderr);
            assert!(
                r.stderr.contains(
                    "ONNX Runtime's session metadata (what Triton uses) was not used for the output shapes"
                ) && r.stderr.contains(why),
                "{name} {key}: {}",
                r.stderr
            );
            assert!(
                !r.stderr.contains("taken from ONNX Runtime"),
                "{}",
                r.stderr
            );
            assert!(view.get(*name).is_some(), "{name} is in ort_view.json");
        }
    }
    // The fallback's own notes stay.
    let r = tritonctl()
        .arg("autoconfig")
        .args([model("value_info_declared").as_os_str()])
        .env("TRITONCTL_NO_ORT", "1")
        .run();
    assert!(
        r.stderr.contains("declared value info used"),
        "{}",
        r.stderr
    );
}
