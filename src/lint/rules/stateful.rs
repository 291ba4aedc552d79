//! Rules: the Triton stateful backend (`backend: "stateful"`;
//! docs/spec/stateful-backend.md §2–§4).
//!
//! The backend reads its settings from the config's `parameters` and the
//! sequence batcher, keeps every live sequence's state in its own storage and
//! checks the storage configuration when an instance loads. Its load-time
//! messages are reproduced in `triton_message` (the backend appends
//! ` at <line> in file <source>` to them).
//!
//! Warnings of this module use the W0080–W0099 part of the W00xx block.

use super::scheduler::WithMessage;
use crate::diagnostics::Rule;
use crate::diagnostics::{Category, Diagnostic, Severity};
use crate::lint::registry::rule;
use crate::lint::ModelCtx;
use crate::schema::inference::model_config::SchedulingChoice;
use crate::schema::inference::model_sequence_batching::control::Kind as ControlKind;
use crate::schema::inference::model_sequence_batching::StrategyChoice;
use crate::schema::inference::{DataType, ModelSequenceBatching};

const BACKEND: &str = "stateful_backend src/stateful.cc (ModelState::InitModelState)";
const RUNNER: &str = "stateful_backend src/onnx_model_runner.cc (TrtOnnxModel::Prepare)";

/// The backend's maximum number of data inputs and of data outputs.
pub const MAX_IO: usize = 5;

/// Parameter keys the backend reads.
pub const KNOWN_PARAMETERS: &[&str] = &[
    "onnx_file_name",
    "state_pairs",
    "ort_ep",
    "compute_precision",
    "store_states_as_fp16",
    "always_pad_to_max_batch",
    "max_candidate_sequence_use_ratio",
    "infer_end_requests",
    "initial_buffer_size",
    "subsequent_buffer_size",
    "buffer_alloc_threshold",
    "buffer_dealloc_threshold",
    "enable_trt_caching",
    "trt_cache_dir",
    "enable_cuda_graph",
    "metric_logging_frequency_seconds",
    "logging_level",
    "batch_info_logging_level",
    "detailed_metrics_logging_level",
    "error_inject_rate",
];

const LAZY: [&str; 4] = [
    "initial_buffer_size",
    "subsequent_buffer_size",
    "buffer_alloc_threshold",
    "buffer_dealloc_threshold",
];

pub const RULES: &[Rule] = &[
    Rule {
        code: "E0801",
        name: "stateful-onnx-file-name",
        category: Category::Semantic,
        severity: Severity::Error,
        summary: "The stateful backend needs the onnx_file_name parameter",
        docs: "The stateful backend runs an ONNX model whose file name it takes from the `onnx_file_name` parameter (the file lives in the version directory, `<model>/<version>/<file>`). It has no default; without it the model does not load.\n\n```\nbackend: \"stateful\"\nparameters { key: \"onnx_file_name\" value { string_value: \"model.onnx\" } }\n```",
        triton_source: Some(BACKEND),
    },
    Rule {
        code: "E0802",
        name: "stateful-onnx-file-missing",
        category: Category::Repository,
        severity: Severity::Error,
        summary: "The ONNX file named by onnx_file_name is missing from a version directory",
        docs: "The stateful backend opens `<model>/<version>/<onnx_file_name>` for every version Triton loads; a missing file fails the instance. Checked when the model directory is known, for the versions the version policy selects.",
        triton_source: Some("stateful_backend src/stateful.cc (TRITONBACKEND_ModelInstanceInitialize)"),
    },
    Rule {
        code: "E0803",
        name: "stateful-state-pairs-syntax",
        category: Category::Semantic,
        severity: Severity::Error,
        summary: "The state_pairs parameter is malformed",
        docs: "`state_pairs` lists the model's state tensors as groups `<<<INPUT_STATE, OUTPUT_STATE>>>`; text between groups is ignored, so groups may be separated by spaces or commas. In each group the input name runs to the first `,` and the output name to the next `>>>`; spaces around the names are dropped. A group without the comma or the closing `>>>` makes the backend read past the group (undefined behaviour), and a non-empty value without any group fails with `Could not find any state tensors`.\n\n```\nstate_pairs: \"<<<Accumulate_In, Accumulate_Out>>>\"            # ok\nstate_pairs: \"<<<h_in, h_out>>> <<<c_in, c_out>>>\"           # ok, two pairs\nstate_pairs: \"Accumulate_In, Accumulate_Out\"                 # error: no group\n```\n\nAn empty or absent `state_pairs` makes the backend read the pairs from the ONNX graph's description instead.",
        triton_source: Some("stateful_backend src/onnx_model_runner.h (StateTensor::InitTensorNames)"),
    },
    Rule {
        code: "E0804",
        name: "stateful-state-listed-as-io",
        category: Category::Semantic,
        severity: Severity::Error,
        summary: "A state tensor (or the reset tensor) is listed as a config input or output",
        docs: "State tensors never travel to or from the client: the backend restores and stores them itself. It classifies each ONNX input by checking the config `input` names first (case-insensitively), then the START control tensor, then `state_pairs`; so a state listed in `input`/`output` is treated as client data and the state is never kept. List only the model's data tensors in `input` and `output`.",
        triton_source: Some(RUNNER),
    },
    Rule {
        code: "E0805",
        name: "stateful-missing-reset",
        category: Category::Semantic,
        severity: Severity::Error,
        summary: "No CONTROL_SEQUENCE_START control names the model's reset input",
        docs: "The stateful backend resets a sequence's state through a boolean input of the ONNX model (the *ResetSequence* tensor). It finds that input through the `CONTROL_SEQUENCE_START` control: the control's tensor name must equal the reset input's name and must not also be a config input. Without it the load fails.\n\n```\ncontrol_input [ { name: \"ResetSequence\" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] } ]\n```\n\nThe backend looks only at the first `control` of each `control_input`.",
        triton_source: Some(RUNNER),
    },
    Rule {
        code: "E0806",
        name: "stateful-missing-end",
        category: Category::Semantic,
        severity: Severity::Error,
        summary: "No CONTROL_SEQUENCE_END control",
        docs: "The stateful backend reads the END control of every request to free a finished sequence's storage; without a `CONTROL_SEQUENCE_END` control every request fails. Add one (`int32_false_true: [ 0, 1 ]`). The backend looks only at the first `control` of each `control_input`.",
        triton_source: Some("stateful_backend src/request_util.cc (PreProcessRequests)"),
    },
    Rule {
        code: "E0807",
        name: "stateful-control-int32",
        category: Category::Semantic,
        severity: Severity::Error,
        summary: "START/END controls of the stateful backend must use int32_false_true",
        docs: "The backend reads the START and END control tensors as 32-bit integers. `fp32_false_true` happens to work for START only (any non-zero bit pattern counts as true) but breaks the END test, and `bool_false_true` makes it read past a 1-byte value.\n\n```\ncontrol [ { kind: CONTROL_SEQUENCE_END int32_false_true: [ 0, 1 ] } ]\n```",
        triton_source: Some("stateful_backend src/request_util.cc (PreProcessRequests)"),
    },
    Rule {
        code: "E0808",
        name: "stateful-needs-sequence-batching",
        category: Category::Semantic,
        severity: Severity::Error,
        summary: "The stateful backend requires sequence_batching",
        docs: "The backend keys each sequence's state by correlation id, which only the sequence batcher provides; it reads `sequence_batching` from the config and fails the load when it is absent. Use `sequence_batching { oldest { max_candidate_sequences: N } ... }`.",
        triton_source: Some(BACKEND),
    },
    Rule {
        code: "E0809",
        name: "stateful-buffer-config",
        category: Category::Semantic,
        severity: Severity::Error,
        summary: "The stateful backend's state storage configuration is inconsistent",
        docs: "Each instance stores the states of up to `max_conn = floor(max_candidate_sequences × max_candidate_sequence_use_ratio)` sequences in chunks. Without the lazy-allocation parameters the first chunk holds `min(max_candidate_sequences, max_conn)` slots and later chunks `max_batch_size` slots; with them the first chunk holds `min(initial_buffer_size, max_conn)` slots and later chunks `subsequent_buffer_size`. When an instance loads the backend requires: first chunk ≥ `max_batch_size`; `subsequent_buffer_size` ≥ `max_batch_size`; `buffer_alloc_threshold` ≥ `max_batch_size` and ≤ the first chunk.\n\n**Gotcha:** Triton hands the config to the backend with every field filled in, so `oldest { }` without `max_candidate_sequences` arrives as 0, not as the backend's default 1280. The storage then has no slot and the load fails:\n\n```\nmax_batch_size: 16\nsequence_batching { oldest { } ... }\n# error: Initial buffer size must be larger than or equal to the max batch size\n```\n\nAlways set `max_candidate_sequences` (at least `max_batch_size / ratio`, rounded up).",
        triton_source: Some(RUNNER),
    },
    Rule {
        code: "E0810",
        name: "stateful-lazy-parameters",
        category: Category::Semantic,
        severity: Severity::Error,
        summary: "Lazy buffer parameters are incomplete, negative or not integers",
        docs: "`initial_buffer_size`, `subsequent_buffer_size`, `buffer_alloc_threshold` and `buffer_dealloc_threshold` switch on lazy allocation of state storage. Give all four or none (`initial_buffer_size` alone makes the backend look for the others and fail), as non-negative integers (a negative value fails with ``Invalid value for `<key>` ``). A value that is not a number makes the backend's integer conversion throw while the model loads.",
        triton_source: Some(BACKEND),
    },
    Rule {
        code: "E0811",
        name: "stateful-batch-axis",
        category: Category::Semantic,
        severity: Severity::Error,
        summary: "A stateful-backend input or output does not have exactly one -1 dimension",
        docs: "For the stateful backend, `dims` give the ONNX tensor's full shape (no implicit Triton batch dimension) with exactly one `-1`, which marks the axis along which the backend stacks the requests of a batch. Without a `-1` the load fails (`Cannot infer the batch dimension based on the Triton model configuration`); with several, only the first is treated as the batch axis and the others reach ONNX Runtime unresolved.\n\n```\ninput [ { name: \"Input\" data_type: TYPE_FP32 dims: [ 4, -1, 5 ] } ]\n```",
        triton_source: Some(RUNNER),
    },
    Rule {
        code: "E0812",
        name: "stateful-too-many-io",
        category: Category::Semantic,
        severity: Severity::Error,
        summary: "More than 5 inputs or outputs for the stateful backend",
        docs: "The backend keeps fixed tables for at most 5 data inputs and 5 data outputs (state and reset tensors do not count) and fails the load beyond that (`Max number of inputs supported by the backend is exceeded`).",
        triton_source: Some(RUNNER),
    },
    Rule {
        code: "E0813",
        name: "stateful-data-type",
        category: Category::Semantic,
        severity: Severity::Error,
        summary: "A data type the stateful backend does not support",
        docs: "The backend handles `TYPE_FP32`, `TYPE_FP16`, `TYPE_INT32`, `TYPE_INT8` and `TYPE_BOOL` inputs and outputs. Other types are silently treated as FP32 (wrong element sizes and conversions) or abort an assertion.",
        triton_source: Some("stateful_backend src/onnx_model_runner.h (TritonTensorInfo)"),
    },
    Rule {
        code: "E0814",
        name: "stateful-max-batch-size",
        category: Category::Semantic,
        severity: Severity::Error,
        summary: "The stateful backend needs max_batch_size ≥ 1",
        docs: "`max_batch_size` is the number of sequences the backend stacks into one ONNX Runtime run and sizes its buffers; with 0 it allocates no rows at all. Set it to the largest batch the model should run (the backend's example uses 16).",
        triton_source: Some(RUNNER),
    },
    Rule {
        code: "E0815",
        name: "stateful-no-io",
        category: Category::Semantic,
        severity: Severity::Error,
        summary: "The stateful backend needs at least one input and one output",
        docs: "The backend reads the first configured input and output while the model loads; a config without inputs or outputs makes it read out of bounds. List the model's data tensors (not the state or reset tensors).",
        triton_source: Some(BACKEND),
    },
    Rule {
        code: "W0080",
        name: "stateful-unknown-parameter",
        category: Category::Semantic,
        severity: Severity::Warning,
        summary: "A parameter the stateful backend does not read",
        docs: "The backend reads a fixed set of parameter keys and silently ignores all others, so a misspelt key (`initial_buffer_sise`) leaves the default in force. Known keys: `onnx_file_name`, `state_pairs`, `ort_ep`, `compute_precision`, `store_states_as_fp16`, `always_pad_to_max_batch`, `max_candidate_sequence_use_ratio`, `infer_end_requests`, `initial_buffer_size`, `subsequent_buffer_size`, `buffer_alloc_threshold`, `buffer_dealloc_threshold`, `enable_trt_caching`, `trt_cache_dir`, `enable_cuda_graph`, `metric_logging_frequency_seconds`, `logging_level`, `batch_info_logging_level`, `detailed_metrics_logging_level` (and `error_inject_rate` in debug builds).",
        triton_source: Some(BACKEND),
    },
    Rule {
        code: "W0081",
        name: "stateful-direct-strategy",
        category: Category::Semantic,
        severity: Severity::Warning,
        summary: "The stateful backend supports only the Oldest sequence strategy",
        docs: "The backend documents support for the Oldest strategy only, and it sizes its state storage from `oldest.max_candidate_sequences`. With `direct` (or no strategy, which is Direct) it falls back to 1280 candidate sequences while Triton uses `max_batch_size` slots per instance. Use `oldest { max_candidate_sequences: N }`.",
        triton_source: Some(BACKEND),
    },
    Rule {
        code: "W0082",
        name: "stateful-parameter-value",
        category: Category::Semantic,
        severity: Severity::Warning,
        summary: "A stateful-backend parameter value the backend does not understand",
        docs: "The backend compares most parameters with fixed strings and silently falls back otherwise: flags are on only for `\"1\"` (`\"true\"` means off), `infer_end_requests` is off only for `\"0\"`, `ort_ep` is `trt` unless it is `\"cuda\"`, `compute_precision` is FP16 only for `\"fp16\"`, logging levels are `NONE`, `INFO` or `VERBOSE`. `max_candidate_sequence_use_ratio` must be a number (it is meant to be in (0, 1]) and `metric_logging_frequency_seconds` an integer; the backend logs a warning and uses its default otherwise.",
        triton_source: Some(BACKEND),
    },
    Rule {
        code: "W0083",
        name: "stateful-dealloc-threshold",
        category: Category::Semantic,
        severity: Severity::Warning,
        summary: "buffer_dealloc_threshold is not above buffer_alloc_threshold",
        docs: "After every batch the backend adds a storage chunk when fewer than `buffer_alloc_threshold` slots are free and releases the last chunk when more than `buffer_dealloc_threshold` are free. With the release threshold at or below the allocation threshold the backend warns (`WARNING: Deallocation threshold should be larger than allocation threshold.`) and chunks may be allocated and released over and over.",
        triton_source: Some(RUNNER),
    },
];

/// The state pairs of a `state_pairs` value, parsed the way the backend
/// does (`StateTensor::InitTensorNames`), or why the text is malformed.
pub fn parse_state_pairs(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut pairs = Vec::new();
    for line in text.split('\n') {
        let b = line.as_bytes();
        let at = |i: usize| b.get(i).copied().unwrap_or(0);
        let mut next = line.find("<<<");
        while let Some(pos) = next {
            let mut begin_first = pos + 3;
            while at(begin_first) == b' ' {
                begin_first += 1;
            }
            let Some(comma) = line[pos..].find(',').map(|c| c + pos) else {
                return Err(format!(
                    "the group at '{}' has no ',' between the input and the output state name",
                    &line[pos..]
                ));
            };
            let mut end_first = comma - 1;
            let mut begin_second = comma + 1;
            while end_first > 0 && at(end_first) == b' ' {
                end_first -= 1;
            }
            while at(begin_second) == b' ' {
                begin_second += 1;
            }
            let Some(close) = line[end_first..].find(">>>").map(|c| c + end_first) else {
                return Err(format!(
                    "the group at '{}' is not closed with '>>>'",
                    &line[pos..]
                ));
            };
            let mut end_second = close.saturating_sub(1);
            while end_second > 0 && at(end_second) == b' ' {
                end_second -= 1;
            }
            let first = slice(line, begin_first, end_first);
            let second = slice(line, begin_second, end_second);
            for (what, name) in [("input", &first), ("output", &second)] {
                if name.is_empty() || name.contains(['<', '>', ',']) {
                    return Err(format!(
                        "the group at '{}' has no valid {what} state name",
                        &line[pos..]
                    ));
                }
            }
            pairs.push((first, second));
            next = line
                .get(end_second..)
                .and_then(|rest| rest.find("<<<"))
                .map(|c| c + end_second)
                .filter(|&n| n > pos);
        }
    }
    if pairs.is_empty() {
        return Err("Could not find any state tensors".into());
    }
    Ok(pairs)
}

/// `line[begin..=end]`, or the rest of the line when the range is empty
/// (how C++ `substr` treats the wrapped length).
fn slice(line: &str, begin: usize, end: usize) -> String {
    if end + 1 < begin {
        line.get(begin..).unwrap_or("").to_string()
    } else {
        line.get(begin..=end.min(line.len().saturating_sub(1)))
            .unwrap_or("")
            .to_string()
    }
}

/// A parameter's string value.
fn param<'a>(ctx: &'a ModelCtx, key: &str) -> Option<&'a str> {
    ctx.cfg.parameters.get(key).map(|p| p.string_value.as_str())
}

fn param_path(key: &str) -> String {
    format!("parameters{{{key}}}.value.string_value")
}

/// What the backend sees of the control inputs: the first control of each
/// `control_input` (name, control index in the list).
struct Controls<'a> {
    start: Option<(usize, &'a str)>,
    end: Option<(usize, &'a str)>,
}

fn backend_controls(sb: &ModelSequenceBatching) -> Controls<'_> {
    let mut c = Controls {
        start: None,
        end: None,
    };
    for (i, ci) in sb.control_input.iter().enumerate() {
        let Some(first) = ci.control.first() else {
            continue;
        };
        if first.kind == ControlKind::ControlSequenceStart as i32 {
            c.start = Some((i, ci.name.as_str()));
        } else if first.kind == ControlKind::ControlSequenceEnd as i32 {
            c.end = Some((i, ci.name.as_str()));
        }
    }
    c
}

pub fn check(ctx: &ModelCtx, out: &mut Vec<Diagnostic>) {
    if ctx.cfg.backend != "stateful" {
        return;
    }
    check_io(ctx, out);
    check_parameters(ctx, out);
    let sb = match &ctx.cfg.scheduling_choice {
        Some(SchedulingChoice::SequenceBatching(sb)) => Some(sb),
        _ => None,
    };
    let Some(sb) = sb else {
        let mut d = ctx
            .triton(
                rule!("E0808"),
                "backend",
                "attempt to access non-existing object member 'sequence_batching'",
            )
            .with_message("the stateful backend requires sequence_batching".into())
            .help("add sequence_batching { oldest { max_candidate_sequences: N } control_input [ ... ] }");
        if let Some(s) = ctx.name_span("dynamic_batching") {
            d = d.label(s, "dynamic batching cannot carry sequence state");
        }
        out.push(d);
        return;
    };
    check_controls(ctx, sb, out);
    check_state_pairs(ctx, sb, out);
    check_buffers(ctx, sb, out);
}

fn check_io(ctx: &ModelCtx, out: &mut Vec<Diagnostic>) {
    let cfg = ctx.cfg;
    if cfg.max_batch_size < 1 {
        let at = if ctx.exact_span("max_batch_size").is_some() {
            "max_batch_size"
        } else {
            "backend"
        };
        out.push(
            ctx.diag(
                rule!("E0814"),
                at,
                format!(
                    "the stateful backend needs max_batch_size >= 1 (it is {})",
                    cfg.max_batch_size
                ),
            )
            .help("set max_batch_size to the largest number of sequences to run together"),
        );
    }
    if cfg.input.is_empty() || cfg.output.is_empty() {
        let what = if cfg.input.is_empty() {
            "input"
        } else {
            "output"
        };
        out.push(
            ctx.diag(
                rule!("E0815"),
                "backend",
                format!("the stateful backend needs at least one configured {what}"),
            )
            .help("list the model's data tensors (not its state or reset tensors)"),
        );
    }
    for (kind, len) in [("inputs", cfg.input.len()), ("outputs", cfg.output.len())] {
        if len > MAX_IO {
            let field = &kind[..kind.len() - 1];
            out.push(
                ctx.triton(
                    rule!("E0812"),
                    &format!("{field}[{MAX_IO}]"),
                    format!("Max number of {kind} supported by the backend is exceeded"),
                )
                .with_message(format!(
                    "the stateful backend supports at most {MAX_IO} {kind}; the config has {len}"
                ))
                .help(
                    "the model's state and reset tensors do not count; merge or drop data tensors",
                ),
            );
        }
    }
    let tensors = cfg
        .input
        .iter()
        .map(|t| (&t.name, t.data_type, &t.dims))
        .enumerate()
        .map(|(i, t)| ("input", i, t))
        .chain(
            cfg.output
                .iter()
                .map(|t| (&t.name, t.data_type, &t.dims))
                .enumerate()
                .map(|(i, t)| ("output", i, t)),
        );
    for (field, i, (name, dt, dims)) in tensors {
        let p = format!("{field}[{i}]");
        let wild: Vec<usize> = dims
            .iter()
            .enumerate()
            .filter(|(_, &d)| d == -1)
            .map(|(k, _)| k)
            .collect();
        if wild.is_empty() {
            out.push(
                ctx.triton(
                    rule!("E0811"),
                    &format!("{p}.dims"),
                    "Cannot infer the batch dimension based on the Triton model configuration",
                )
                .with_message(format!(
                    "{field} '{name}' has no -1 dimension to mark the axis the stateful backend batches along"
                ))
                .help("write the ONNX tensor's full shape with -1 at its batch axis, e.g. [ 4, -1, 5 ]"),
            );
        } else if wild.len() > 1 {
            out.push(
                ctx.diag(
                    rule!("E0811"),
                    &format!("{p}.dims[{}]", wild[1]),
                    format!(
                        "{field} '{name}' has more than one -1 dimension; the stateful backend needs exactly one (its batch axis)"
                    ),
                )
                .help("fix every dimension except the batch axis"),
            );
        }
        let supported = [
            DataType::TypeFp32,
            DataType::TypeFp16,
            DataType::TypeInt32,
            DataType::TypeInt8,
            DataType::TypeBool,
        ];
        if dt != 0 && !supported.iter().any(|&s| s as i32 == dt) {
            out.push(
                ctx.diag(
                    rule!("E0813"),
                    &format!("{p}.data_type"),
                    format!(
                        "the stateful backend does not support {} ({field} '{name}')",
                        crate::schema::data_type_name(dt)
                    ),
                )
                .help("use TYPE_FP32, TYPE_FP16, TYPE_INT32, TYPE_INT8 or TYPE_BOOL (cast inside the model)"),
            );
        }
    }
}

fn check_parameters(ctx: &ModelCtx, out: &mut Vec<Diagnostic>) {
    if !ctx.cfg.parameters.contains_key("onnx_file_name") {
        out.push(
            ctx.triton(
                rule!("E0801"),
                "backend",
                "attempt to access non-existing object member 'onnx_file_name'",
            )
            .with_message("the stateful backend requires the 'onnx_file_name' parameter".into())
            .help("add parameters { key: \"onnx_file_name\" value { string_value: \"<file>.onnx\" } }"),
        );
    } else if let Some(file) = param(ctx, "onnx_file_name") {
        check_onnx_file(ctx, file, out);
    }
    for key in ctx.cfg.parameters.keys() {
        if KNOWN_PARAMETERS.contains(&key.as_str()) || key.starts_with("TRITON_") {
            continue;
        }
        let mut d = ctx.diag(
            rule!("W0080"),
            &format!("parameters{{{key}}}.key"),
            format!("the stateful backend ignores parameter '{key}'"),
        );
        if let Some(s) =
            crate::schema::bind::suggest(key, KNOWN_PARAMETERS.iter().map(|s| s.to_string()))
        {
            d = d.help(format!("did you mean '{s}'?"));
        }
        out.push(d);
    }
    // (key, the one value the backend tests for, the other documented
    // value, what any other value means).
    let flag =
        |key: &str, tested: &str, other: &str, otherwise: &str, out: &mut Vec<Diagnostic>| {
            if let Some(v) = param(ctx, key) {
                if v != tested && v != other {
                    out.push(
                        ctx.diag(
                            rule!("W0082"),
                            &param_path(key),
                            format!(
                                "the stateful backend reads '{key}' = \"{v}\" as \"{otherwise}\""
                            ),
                        )
                        .help(format!("use \"{tested}\" or \"{other}\"")),
                    );
                }
            }
        };
    for key in [
        "store_states_as_fp16",
        "always_pad_to_max_batch",
        "enable_trt_caching",
        "enable_cuda_graph",
    ] {
        flag(key, "1", "0", "0", out);
    }
    flag("infer_end_requests", "0", "1", "1", out);
    flag("ort_ep", "cuda", "trt", "trt", out);
    flag("compute_precision", "fp16", "fp32", "fp32", out);
    for key in [
        "logging_level",
        "batch_info_logging_level",
        "detailed_metrics_logging_level",
    ] {
        if let Some(v) = param(ctx, key) {
            if !matches!(v, "NONE" | "INFO" | "VERBOSE") {
                out.push(
                    ctx.diag(
                        rule!("W0082"),
                        &param_path(key),
                        format!("the stateful backend ignores {key} \"{v}\""),
                    )
                    .help("use \"NONE\", \"INFO\" or \"VERBOSE\""),
                );
            }
        }
    }
    if let Some(v) = param(ctx, "max_candidate_sequence_use_ratio") {
        match float_prefix(v) {
            None if !v.is_empty() => out.push(
                ctx.triton(
                    rule!("W0082"),
                    &param_path("max_candidate_sequence_use_ratio"),
                    "Invalid value in 'max_candidate_sequence_use_ratio'.",
                )
                .help("give a number in (0, 1]; the backend uses 0.9"),
            ),
            Some(r) if !(r > 0.0 && r <= 1.0) => out.push(
                ctx.diag(
                    rule!("W0082"),
                    &param_path("max_candidate_sequence_use_ratio"),
                    format!("max_candidate_sequence_use_ratio {r} is outside (0, 1]"),
                )
                .help("the backend holds at most this fraction of the candidate sequences"),
            ),
            _ => {}
        }
    }
    if let Some(v) = param(ctx, "metric_logging_frequency_seconds") {
        if !v.is_empty() && int_prefix(v).is_none() {
            out.push(
                ctx.triton(
                    rule!("W0082"),
                    &param_path("metric_logging_frequency_seconds"),
                    "Invalid value in 'metric_logging_frequency_seconds'.",
                )
                .help("give a whole number of seconds (0 disables the logs)"),
            );
        }
    }
}

fn check_onnx_file(ctx: &ModelCtx, file: &str, out: &mut Vec<Diagnostic>) {
    let Some(versions) = super::hints::loaded_versions(ctx) else {
        return;
    };
    let missing: Vec<&str> = versions
        .iter()
        .filter(|(_, dir)| !dir.join(file).is_file())
        .map(|(v, _)| v.as_str())
        .collect();
    if !missing.is_empty() {
        out.push(
            ctx.diag(
                rule!("E0802"),
                &param_path("onnx_file_name"),
                format!(
                    "'{file}' is missing from version director{} {}",
                    if missing.len() == 1 { "y" } else { "ies" },
                    missing.join(", ")
                ),
            )
            .help(format!("put the ONNX model at <model>/<version>/{file}")),
        );
    }
}

/// The value `std::stof` would parse from the start of `s`.
fn float_prefix(s: &str) -> Option<f32> {
    let t = s.trim_start();
    let end = t
        .char_indices()
        .take_while(|(_, c)| c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E'))
        .map(|(i, c)| i + c.len_utf8())
        .last()?;
    (1..=end).rev().find_map(|k| t[..k].parse::<f32>().ok())
}

/// The value `std::stol` would parse from the start of `s`.
fn int_prefix(s: &str) -> Option<i64> {
    let t = s.trim_start();
    let end = t
        .char_indices()
        .take_while(|(i, c)| c.is_ascii_digit() || (*i == 0 && matches!(c, '-' | '+')))
        .map(|(i, c)| i + c.len_utf8())
        .last()?;
    t[..end].parse().ok()
}

fn check_controls(ctx: &ModelCtx, sb: &ModelSequenceBatching, out: &mut Vec<Diagnostic>) {
    let c = backend_controls(sb);
    let hidden = |kind: ControlKind| {
        sb.control_input
            .iter()
            .position(|ci| ci.control.iter().skip(1).any(|k| k.kind == kind as i32))
    };
    match c.start {
        None => {
            let mut d = ctx
                .triton(
                    rule!("E0805"),
                    "sequence_batching",
                    "The model should include ResetSequence tensor to reset the state tensors",
                )
                .at_opt(ctx.name_span("sequence_batching"))
                .with_message("no CONTROL_SEQUENCE_START control: the stateful backend cannot find the model's reset input".into())
                .help("add a control_input named like the model's reset input with kind CONTROL_SEQUENCE_START and int32_false_true: [ 0, 1 ]");
            if let Some(i) = hidden(ControlKind::ControlSequenceStart) {
                d = d.help("the backend reads only the first control of each control_input; give START its own control_input");
                if let Some(s) = ctx.span(&format!("sequence_batching.control_input[{i}]")) {
                    d = d.label(s, "START is not the first control here");
                }
            }
            out.push(d);
        }
        Some((i, name)) => {
            if let Some(k) = ctx
                .cfg
                .input
                .iter()
                .position(|inp| inp.name.eq_ignore_ascii_case(name))
            {
                let mut d = ctx
                    .triton(
                        rule!("E0804"),
                        &format!("input[{k}].name"),
                        "The model should include ResetSequence tensor to reset the state tensors",
                    )
                    .with_message(format!(
                        "the reset tensor '{name}' (CONTROL_SEQUENCE_START) is also listed as a config input"
                    ))
                    .help("remove it from 'input'; the backend fills it from the START control");
                if let Some(s) = ctx.span(&format!("sequence_batching.control_input[{i}].name")) {
                    d = d.label(s, "START control tensor");
                }
                out.push(d);
            }
        }
    }
    if c.end.is_none() {
        let mut d = ctx
            .diag(
                rule!("E0806"),
                "sequence_batching",
                "no CONTROL_SEQUENCE_END control: the stateful backend reads END from every request",
            )
            .at_opt(ctx.name_span("sequence_batching"))
            .help("add a control_input with kind CONTROL_SEQUENCE_END and int32_false_true: [ 0, 1 ]");
        if let Some(i) = hidden(ControlKind::ControlSequenceEnd) {
            d = d.help("the backend reads only the first control of each control_input; give END its own control_input");
            if let Some(s) = ctx.span(&format!("sequence_batching.control_input[{i}]")) {
                d = d.label(s, "END is not the first control here");
            }
        }
        out.push(d);
    }
    for (kind, found) in [("START", c.start), ("END", c.end)] {
        let Some((i, _)) = found else { continue };
        let ctl = &sb.control_input[i].control[0];
        if ctl.int32_false_true.is_empty() {
            let used = if !ctl.fp32_false_true.is_empty() {
                "fp32_false_true"
            } else if !ctl.bool_false_true.is_empty() {
                "bool_false_true"
            } else {
                "no *_false_true"
            };
            out.push(
                ctx.diag(
                    rule!("E0807"),
                    &format!("sequence_batching.control_input[{i}].control[0]"),
                    format!("the stateful backend reads the {kind} control as INT32, but it uses {used}"),
                )
                .help("use int32_false_true: [ 0, 1 ]"),
            );
        }
    }
}

fn check_state_pairs(ctx: &ModelCtx, sb: &ModelSequenceBatching, out: &mut Vec<Diagnostic>) {
    let Some(text) = param(ctx, "state_pairs").filter(|t| !t.is_empty()) else {
        return;
    };
    let vp = param_path("state_pairs");
    let pairs = match parse_state_pairs(text) {
        Ok(p) => p,
        Err(msg) => {
            let d = if msg == "Could not find any state tensors" {
                ctx.triton(rule!("E0803"), &vp, msg)
            } else {
                ctx.diag(rule!("E0803"), &vp, format!("malformed state_pairs: {msg}"))
            };
            out.push(d.help("write each pair as <<<INPUT_STATE, OUTPUT_STATE>>>"));
            return;
        }
    };
    let start = backend_controls(sb).start.map(|(_, n)| n);
    for (si, so) in &pairs {
        if let Some(k) = ctx
            .cfg
            .input
            .iter()
            .position(|t| t.name.eq_ignore_ascii_case(si))
        {
            let mut d = ctx
                .diag(
                    rule!("E0804"),
                    &format!("input[{k}].name"),
                    format!("'{si}' is a state input (state_pairs) and must not be listed as a config input"),
                )
                .help("remove it from 'input'; the backend restores state tensors itself");
            if let Some(s) = ctx.span(&vp) {
                d = d.label(s, "declared as state here");
            }
            out.push(d);
        }
        if let Some(k) = ctx
            .cfg
            .output
            .iter()
            .position(|t| t.name.eq_ignore_ascii_case(so))
        {
            let mut d = ctx
                .diag(
                    rule!("E0804"),
                    &format!("output[{k}].name"),
                    format!("'{so}' is a state output (state_pairs) and must not be listed as a config output"),
                )
                .help("remove it from 'output'; the backend stores state tensors itself");
            if let Some(s) = ctx.span(&vp) {
                d = d.label(s, "declared as state here");
            }
            out.push(d);
        }
        if start.is_some_and(|n| n.eq_ignore_ascii_case(si)) {
            out.push(
                ctx.diag(
                    rule!("E0804"),
                    &vp,
                    format!("state input '{si}' is also the CONTROL_SEQUENCE_START (reset) tensor"),
                )
                .help("the reset input and the state inputs must be different tensors"),
            );
        }
    }
}

/// The storage numbers of docs/spec/stateful-backend.md §4.
struct Buffers {
    max_conn: i64,
    init: i64,
    sub: i64,
    alloc: i64,
    dealloc: i64,
    lazy: bool,
}

fn check_buffers(ctx: &ModelCtx, sb: &ModelSequenceBatching, out: &mut Vec<Diagnostic>) {
    let b = i64::from(ctx.cfg.max_batch_size);
    let (n, n_path) = match &sb.strategy_choice {
        Some(StrategyChoice::Oldest(o)) => (
            i64::from(o.max_candidate_sequences),
            "sequence_batching.oldest.max_candidate_sequences",
        ),
        _ => {
            out.push(
                ctx.diag(
                    rule!("W0081"),
                    "sequence_batching.direct",
                    "the stateful backend supports only the Oldest sequence batching strategy",
                )
                .help("use sequence_batching { oldest { max_candidate_sequences: N } }"),
            );
            (1280, "sequence_batching")
        }
    };
    // Lazy parameters.
    let mut lazy_vals = [0i64; 4];
    let lazy = param(ctx, LAZY[0]).is_some();
    if lazy {
        let mut bad = false;
        for (k, key) in LAZY.iter().enumerate() {
            let Some(v) = param(ctx, key) else {
                out.push(
                    ctx.triton(
                        rule!("E0810"),
                        &param_path(LAZY[0]),
                        format!("attempt to access non-existing object member '{key}'"),
                    )
                    .with_message(format!(
                        "'initial_buffer_size' is set but '{key}' is not: the lazy buffer parameters go together"
                    ))
                    .help(format!("add '{key}' or remove all four lazy buffer parameters")),
                );
                bad = true;
                break;
            };
            match int_prefix(v) {
                None => {
                    out.push(
                        ctx.diag(
                            rule!("E0810"),
                            &param_path(key),
                            format!("'{key}' = \"{v}\" is not an integer; the backend's conversion throws while the model loads"),
                        )
                        .help("give a non-negative whole number"),
                    );
                    bad = true;
                    break;
                }
                Some(x) if x < 0 => {
                    out.push(
                        ctx.triton(
                            rule!("E0810"),
                            &param_path(key),
                            format!("Invalid value for `{key}`"),
                        )
                        .help("give a non-negative whole number"),
                    );
                    bad = true;
                    break;
                }
                Some(x) => lazy_vals[k] = x,
            }
        }
        if bad {
            return;
        }
    } else if let Some(key) = LAZY[1..].iter().find(|k| param(ctx, k).is_some()) {
        out.push(
            ctx.diag(
                rule!("E0810"),
                &format!("parameters{{{key}}}.key"),
                format!("'{key}' has no effect without 'initial_buffer_size'"),
            )
            .help("give all four lazy buffer parameters or none"),
        );
    }
    let ratio = param(ctx, "max_candidate_sequence_use_ratio")
        .filter(|v| !v.is_empty())
        .and_then(float_prefix)
        .unwrap_or(0.9);
    let max_conn = (n as f32 * ratio) as i64;
    let buf = if lazy {
        Buffers {
            max_conn,
            init: lazy_vals[0].min(max_conn),
            sub: lazy_vals[1],
            alloc: lazy_vals[2],
            dealloc: lazy_vals[3],
            lazy,
        }
    } else {
        Buffers {
            max_conn,
            init: n.min(max_conn),
            sub: b,
            alloc: b,
            dealloc: n,
            lazy,
        }
    };
    let explain = format!(
        "max_candidate_sequences {n} × ratio {ratio} allows {} sequence(s); the first storage chunk holds {}",
        buf.max_conn, buf.init
    );
    let init_path = if buf.lazy && lazy_vals[0] <= max_conn {
        param_path(LAZY[0])
    } else {
        n_path.to_string()
    };
    let err =
        |path: &str, text: &str, help: String| ctx.triton(rule!("E0809"), path, text).help(help);
    if buf.max_conn < buf.init {
        out.push(err(
            &init_path,
            "Initial buffer size cannot be larger than maximum allowed connections.",
            explain.clone(),
        ));
    } else if buf.init < b {
        let mut help = format!("{explain}, fewer than max_batch_size {b}");
        if n == 0 && matches!(sb.strategy_choice, Some(StrategyChoice::Oldest(_))) {
            help = format!(
                "oldest.max_candidate_sequences is unset, and Triton passes it to the backend as 0; set it explicitly (at least {})",
                ((b as f32) / ratio).ceil() as i64
            );
        }
        out.push(err(
            &init_path,
            "Initial buffer size must be larger than or equal to the max batch size",
            help,
        ));
    } else if buf.sub < b {
        out.push(err(
            &param_path(LAZY[1]),
            "Sbusequent buffer size must be larger than or equal to the max batch size.",
            format!(
                "subsequent_buffer_size {} is below max_batch_size {b}",
                buf.sub
            ),
        ));
    } else if buf.alloc < b {
        out.push(err(
            &param_path(LAZY[2]),
            "Buffer allocation threshold size must be larger than or equal to the max batch size.",
            format!(
                "buffer_alloc_threshold {} is below max_batch_size {b}",
                buf.alloc
            ),
        ));
    } else if buf.alloc > buf.init {
        out.push(err(
            &param_path(LAZY[2]),
            "Initial buffer size cannot be smaller than allocation threshold.",
            format!(
                "buffer_alloc_threshold {} exceeds the first chunk ({})",
                buf.alloc, buf.init
            ),
        ));
    } else if buf.lazy && buf.dealloc <= buf.alloc {
        out.push(
            ctx.triton(
                rule!("W0083"),
                &param_path(LAZY[3]),
                "WARNING: Deallocation threshold should be larger than allocation threshold.",
            )
            .help(format!(
                "buffer_dealloc_threshold {} is not above buffer_alloc_threshold {}",
                buf.dealloc, buf.alloc
            )),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(a: &str, b: &str) -> (String, String) {
        (a.to_string(), b.to_string())
    }

    #[test]
    fn state_pairs_parse_like_the_backend() {
        assert_eq!(
            parse_state_pairs("<<<Accumulate_In, Accumulate_Out>>>").unwrap(),
            vec![p("Accumulate_In", "Accumulate_Out")]
        );
        assert_eq!(
            parse_state_pairs("<<<a_in,a_out>>>,<<< b_in ,  b_out >>>").unwrap(),
            vec![p("a_in", "a_out"), p("b_in", "b_out")]
        );
        assert_eq!(
            parse_state_pairs("<<<x, y>>>\n<<<u, v>>>").unwrap(),
            vec![p("x", "y"), p("u", "v")]
        );
        assert_eq!(
            parse_state_pairs("Accumulate_In, Accumulate_Out").unwrap_err(),
            "Could not find any state tensors"
        );
        assert!(parse_state_pairs("<<<a b>>>").is_err());
        assert!(parse_state_pairs("<<<a, b").is_err());
        assert!(parse_state_pairs("<<<, b>>>").is_err());
    }

    #[test]
    fn number_prefixes_follow_stol_and_stof() {
        assert_eq!(int_prefix("512"), Some(512));
        assert_eq!(int_prefix("-3"), Some(-3));
        assert_eq!(int_prefix("12abc"), Some(12));
        assert_eq!(int_prefix("abc"), None);
        assert_eq!(float_prefix("0.9"), Some(0.9));
        assert_eq!(float_prefix("0.5x"), Some(0.5));
        assert_eq!(float_prefix("x"), None);
    }
}
