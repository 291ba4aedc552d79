//! Rules: model warmup (docs/spec/validation.md §3.8) and model metrics (§3.1,
//! the metric-family warning). Triton builds the warmup requests when it
//! creates each model instance and fails the load when one cannot be built.

use super::scheduler::{dims_string, dtype_size, element_count, WithMessage};
use crate::diagnostics::Rule;
use crate::diagnostics::{Category, Diagnostic, Severity};
use crate::lint::registry::rule;
use crate::lint::ModelCtx;
use crate::schema::inference::model_config::SchedulingChoice;
use crate::schema::inference::model_sequence_batching::control::Kind as ControlKind;
use crate::schema::inference::model_warmup::input::InputDataType;
use crate::schema::inference::model_warmup::Input as WarmupInput;
use crate::schema::inference::{DataType, ModelWarmup};
use std::path::Path;

const INSTANCE: &str = "core src/backend_model_instance.cc (GenerateWarmupData)";
const REQUEST: &str = "core src/infer_request.cc (InferenceRequest::Normalize)";
/// Prefix of request-level messages; warmup requests carry no id.
const REQ: &str = "[request id: <id_unknown>] ";

/// The one metric family that `model_metrics` can customise in Triton core.
pub const CUSTOMIZABLE_METRIC_FAMILIES: &[&str] = &["nv_inference_first_response_histogram_ms"];

pub const RULES: &[Rule] = &[
    Rule {
        code: "E0901",
        name: "warmup-variable-dims",
        category: Category::Semantic,
        severity: Severity::Error,
        summary: "A warmup input has a variable-size (-1) dimension",
        docs: "Warmup requests are built from the sample's own `dims`, so every dimension must be concrete; Triton fails the load otherwise.\n\n```\nmodel_warmup [ { name: \"w\" batch_size: 1 inputs { key: \"INPUT0\" value { data_type: TYPE_FP32 dims: [ -1 ] zero_data: true } } } ]\n# error: warmup setting expects all variable-size dimensions are specified for input 'INPUT0'\n```\n\nSamples with `batch_size: 0` are skipped and not checked.",
        triton_source: Some(INSTANCE),
    },
    Rule {
        code: "E0902",
        name: "warmup-missing-data-type",
        category: Category::Semantic,
        severity: Severity::Error,
        summary: "A warmup input has no data_type",
        docs: "Triton sizes the warmup data from `data_type` and `dims`. Without a `data_type` the size is unknown and Triton fails the load with the (misleading) variable-size message.\n\n```\ninputs { key: \"INPUT0\" value { dims: [ 4 ] zero_data: true } }\n# error: warmup setting expects all variable-size dimensions are specified for input 'INPUT0'\n```",
        triton_source: Some(INSTANCE),
    },
    Rule {
        code: "E0903",
        name: "warmup-invalid-dims",
        category: Category::Semantic,
        severity: Severity::Error,
        summary: "A warmup input has a negative dimension other than -1",
        docs: "Warmup dimensions must be non-negative; Triton refuses the model when it sizes the data.\n\n```\ninputs { key: \"INPUT0\" value { data_type: TYPE_FP32 dims: [ -2 ] zero_data: true } }\n# error: tensor 'INPUT0' contains an invalid dimension [-2]\n```",
        triton_source: Some(INSTANCE),
    },
    Rule {
        code: "E0904",
        name: "warmup-no-data-kind",
        category: Category::Semantic,
        severity: Severity::Error,
        summary: "A warmup input has neither zero_data, random_data nor input_data_file",
        docs: "Each warmup input must say where its data comes from: `zero_data: true`, `random_data: true` or `input_data_file: \"<file>\"`.\n\n```\ninputs { key: \"INPUT0\" value { data_type: TYPE_FP32 dims: [ 4 ] } }\n# error: [request id: <id_unknown>] warmup setting expects input 'INPUT0' to have input_data_type set\n```",
        triton_source: Some(INSTANCE),
    },
    Rule {
        code: "E0905",
        name: "warmup-data-file-short",
        category: Category::Semantic,
        severity: Severity::Error,
        summary: "A warmup input_data_file holds fewer bytes than the input needs",
        docs: "`input_data_file` is read from `<model dir>/warmup/<file>` as raw bytes for one request (without the batch dimension). For fixed-size types it must hold at least element count × element size bytes. Checked when the model directory is known.\n\n```\ninputs { key: \"INPUT0\" value { data_type: TYPE_FP32 dims: [ 4 ] input_data_file: \"in0\" } }\n# warmup/in0 has 8 bytes\n# error: [request id: <id_unknown>] warmup setting expects 16 bytes, but the data provided from in0only has 8 bytes\n```",
        triton_source: Some(INSTANCE),
    },
    Rule {
        code: "E0906",
        name: "warmup-data-file-missing",
        category: Category::Repository,
        severity: Severity::Error,
        summary: "A warmup input_data_file does not exist",
        docs: "Triton reads `input_data_file` from the `warmup` folder of the model directory (`<model dir>/warmup/<file>`) and fails the load when it cannot open it. Checked when the model directory is known.",
        triton_source: Some(INSTANCE),
    },
    Rule {
        code: "E0907",
        name: "warmup-missing-inputs",
        category: Category::Semantic,
        severity: Severity::Error,
        summary: "A warmup sample does not provide every required model input",
        docs: "Each warmup request goes through the same input checks as a client request, so a sample must provide every input that is not `optional`. Triton counts the model inputs the sample provides; too few fail the load.\n\n```\ninput [ { name: \"A\" ... }, { name: \"B\" ... } ]\nmodel_warmup [ { name: \"w\" batch_size: 1 inputs { key: \"A\" value { ... } } } ]\n# error: [request id: <id_unknown>] expected 2 inputs but got 1 inputs for model 'm'. Got input(s) ['A'], but missing required input(s) ['B']. Please provide all required input(s).\n```\n\nChecked when the config lists its inputs.",
        triton_source: Some(REQUEST),
    },
    Rule {
        code: "E0908",
        name: "warmup-data-type-mismatch",
        category: Category::Semantic,
        severity: Severity::Error,
        summary: "A warmup input's data_type differs from the model input's",
        docs: "A warmup input that names a model input must use that input's `data_type`.\n\n```\ninput [ { name: \"A\" data_type: TYPE_INT32 dims: [ 4 ] } ]\ninputs { key: \"A\" value { data_type: TYPE_FP32 dims: [ 4 ] zero_data: true } }\n# error: [request id: <id_unknown>] inference input 'A' data-type is 'FP32', but model 'm' expects 'INT32'\n```",
        triton_source: Some(REQUEST),
    },
    Rule {
        code: "E0909",
        name: "warmup-shape-mismatch",
        category: Category::Semantic,
        severity: Severity::Error,
        summary: "A warmup input's dims do not fit the model input's dims",
        docs: "Warmup `dims` are the shape of one request without the batch dimension (Triton prepends `1` when `max_batch_size > 0`). They must have the model input's rank and match every fixed dimension; `-1` in the model input accepts any size.\n\n```\nmax_batch_size: 8\ninput [ { name: \"A\" data_type: TYPE_FP32 dims: [ 4 ] } ]\ninputs { key: \"A\" value { data_type: TYPE_FP32 dims: [ 1, 4 ] zero_data: true } }\n# error: [request id: <id_unknown>] unexpected shape for input 'A' for model 'm'. Expected [-1,4], got [1,1,4]. NOTE: ...\n```\n\nDo not include the batch dimension in warmup dims.",
        triton_source: Some(REQUEST),
    },
    Rule {
        code: "E0910",
        name: "warmup-string-correlation-id",
        category: Category::Semantic,
        severity: Severity::Error,
        summary: "Warmup on a sequence model whose CORRID control is TYPE_STRING",
        docs: "Warmup requests carry the numeric correlation id 0. When the sequence batcher's `CONTROL_SEQUENCE_CORRID` control declares `TYPE_STRING`, the request check refuses that id and the load fails.\n\n```\nsequence_batching { control_input [ { name: \"CORRID\" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_STRING } ] } ] }\nmodel_warmup [ { name: \"w\" batch_size: 1 inputs { ... } } ]\n# error: [request id: <id_unknown>] sequence batching control 'CORRID' data-type is 'UINT64', but model 'm' expects 'BYTES'\n```",
        triton_source: Some("core src/infer_request.cc (ValidateCorrelationId)"),
    },
    Rule {
        code: "E0911",
        name: "warmup-string-data-file",
        category: Category::Semantic,
        severity: Severity::Error,
        summary: "A TYPE_STRING warmup input_data_file does not hold the input's elements",
        docs: "For a `TYPE_STRING` model input, Triton sends the whole `input_data_file` as the tensor's data, and the request check reads it as Triton's serialized strings: each element is a 4-byte little-endian length followed by that many bytes. The file must hold exactly as many elements as the input has (the product of the sample's `dims`); otherwise the load fails. A plain text file is read the same way, so its first four bytes become a length. Checked when the model directory is known.\n\n```\ninputs { key: \"TEXT\" value { data_type: TYPE_STRING dims: [ 3 ] input_data_file: \"text\" } }\n# warmup/text holds two serialized strings\n# error: [request id: <id_unknown>] expected 3 string elements for inference input 'TEXT' for model 'm', got 2\n```\n\nWrite the file with 4-byte length prefixes, for example in Python: `b\"\".join(struct.pack(\"<I\", len(s)) + s for s in items)`.",
        triton_source: Some("core src/infer_request.cc (InferenceRequest::ValidateBytesInputs)"),
    },
    Rule {
        code: "W0901",
        name: "metric-family-not-customizable",
        category: Category::Semantic,
        severity: Severity::Warning,
        summary: "model_metrics names a metric family Triton core does not let you customise",
        docs: "`model_metrics.metric_control` can only change the histogram buckets of `nv_inference_first_response_histogram_ms`. Triton logs a warning for any other family and ignores the entry (it is reserved for backend metrics).\n\n```\nmetric_identifier { family: \"nv_inference_request_success\" }\n# warning: Metric family 'nv_inference_request_success' in 'metric_identifier' is not a customizable metric in Triton core.\n```",
        triton_source: Some("core src/metric_model_reporter.cc (MetricReporterConfig::ParseConfig)"),
    },
    Rule {
        code: "W0902",
        name: "metric-buckets-unsorted",
        category: Category::Semantic,
        severity: Severity::Warning,
        summary: "Histogram bucket boundaries are not strictly increasing",
        docs: "Prometheus histograms need strictly increasing bucket boundaries; the Prometheus client library Triton uses refuses others when the histogram is created, which happens only when histogram metrics are enabled (`--metrics-config histogram_latencies=true`). Triton does not check the list when it loads the config.\n\n```\nhistogram_options { buckets: [ 10, 1, 100 ] }   # warning\n```",
        triton_source: None,
    },
    Rule {
        code: "W0903",
        name: "warmup-unknown-input",
        category: Category::Semantic,
        severity: Severity::Warning,
        summary: "A warmup input is neither a model input nor a sequence control input",
        docs: "Triton passes warmup inputs that are not model inputs to the backend unchecked (that is how sequence control tensors get there). Any other name is most likely a typo; the backend will reject the request or ignore the tensor, and then the sample does not warm what you meant to warm.",
        triton_source: None,
    },
    Rule {
        code: "W0904",
        name: "warmup-batch-too-large",
        category: Category::Semantic,
        severity: Severity::Warning,
        summary: "A warmup sample's batch_size exceeds what the backend accepts",
        docs: "A warmup sample sends `batch_size` requests of batch 1 to one instance in a single execution. Triton does not compare it with `max_batch_size`, but backends do: ONNX Runtime and TensorRT refuse a batch larger than `max_batch_size` (larger than 1 for a model without batching), and the load fails with `failed to run warmup sample`. Reported for the ONNX Runtime, TensorRT, PyTorch, TensorFlow and OpenVINO backends (the Python backend just receives more requests).",
        triton_source: None,
    },
    Rule {
        code: "W0905",
        name: "warmup-batch-zero",
        category: Category::Semantic,
        severity: Severity::Warning,
        summary: "A warmup sample with batch_size 0 is skipped",
        docs: "Triton skips warmup samples whose `batch_size` is 0 (the default) without a visible log line, so the sample warms nothing. Set `batch_size: 1` (or the batch size to warm).",
        triton_source: Some(INSTANCE),
    },
];

pub fn check(ctx: &ModelCtx, out: &mut Vec<Diagnostic>) {
    check_metrics(ctx, out);
    if ctx.cfg.platform == "ensemble" {
        return;
    }
    for (i, w) in ctx.cfg.model_warmup.iter().enumerate() {
        check_sample(ctx, i, w, out);
    }
}

fn check_metrics(ctx: &ModelCtx, out: &mut Vec<Diagnostic>) {
    let Some(m) = &ctx.cfg.model_metrics else {
        return;
    };
    for (i, mc) in m.metric_control.iter().enumerate() {
        let p = format!("model_metrics.metric_control[{i}]");
        if let Some(id) = &mc.metric_identifier {
            // An empty family is an error raised by ValidateModelConfig.
            if !id.family.is_empty() && !CUSTOMIZABLE_METRIC_FAMILIES.contains(&id.family.as_str())
            {
                let help = match crate::schema::bind::suggest(
                    &id.family,
                    CUSTOMIZABLE_METRIC_FAMILIES.iter().map(|s| s.to_string()),
                ) {
                    Some(s) => format!("did you mean '{s}'?"),
                    None => format!(
                        "only {} can be customised",
                        CUSTOMIZABLE_METRIC_FAMILIES.join(", ")
                    ),
                };
                out.push(
                    ctx.triton(
                        rule!("W0901"),
                        &format!("{p}.metric_identifier.family"),
                        format!(
                            "Metric family '{}' in 'metric_identifier' is not a customizable metric in Triton core.",
                            id.family
                        ),
                    )
                    .help(help),
                );
            }
        }
        if let Some(crate::schema::inference::model_metrics::metric_control::MetricOptions::HistogramOptions(h)) =
            &mc.metric_options
        {
            if let Some(k) = h.buckets.windows(2).position(|w| w[1] <= w[0] || w[0].is_nan()) {
                out.push(
                    ctx.diag(
                        rule!("W0902"),
                        &format!("{p}.histogram_options.buckets[{}]", k + 1),
                        format!(
                            "histogram bucket boundary {} does not exceed the one before it ({})",
                            h.buckets[k + 1],
                            h.buckets[k]
                        ),
                    )
                    .help("list bucket boundaries in strictly increasing order"),
                );
            }
        }
    }
}

fn protocol_name(dt: i32) -> &'static str {
    match DataType::try_from(dt) {
        Ok(DataType::TypeBool) => "BOOL",
        Ok(DataType::TypeUint8) => "UINT8",
        Ok(DataType::TypeUint16) => "UINT16",
        Ok(DataType::TypeUint32) => "UINT32",
        Ok(DataType::TypeUint64) => "UINT64",
        Ok(DataType::TypeInt8) => "INT8",
        Ok(DataType::TypeInt16) => "INT16",
        Ok(DataType::TypeInt32) => "INT32",
        Ok(DataType::TypeInt64) => "INT64",
        Ok(DataType::TypeFp16) => "FP16",
        Ok(DataType::TypeFp32) => "FP32",
        Ok(DataType::TypeFp64) => "FP64",
        Ok(DataType::TypeString) => "BYTES",
        Ok(DataType::TypeBf16) => "BF16",
        _ => "<invalid>",
    }
}

/// Names of the sequence batcher's control tensors, and the CORRID
/// control's name when it is declared `TYPE_STRING`.
fn controls<'a>(ctx: &ModelCtx<'a>) -> (Vec<&'a str>, Option<&'a str>) {
    let Some(SchedulingChoice::SequenceBatching(sb)) = &ctx.cfg.scheduling_choice else {
        return (Vec::new(), None);
    };
    let names = sb.control_input.iter().map(|c| c.name.as_str()).collect();
    let string_corrid = sb
        .control_input
        .iter()
        .find(|c| {
            c.control.iter().any(|k| {
                k.kind == ControlKind::ControlSequenceCorrid as i32
                    && k.data_type == DataType::TypeString as i32
            })
        })
        .map(|c| c.name.as_str());
    (names, string_corrid)
}

fn check_sample(ctx: &ModelCtx, i: usize, w: &ModelWarmup, out: &mut Vec<Diagnostic>) {
    let sp = format!("model_warmup[{i}]");
    let mbs = ctx.cfg.max_batch_size;
    if w.batch_size == 0 {
        out.push(
            ctx.diag(
                rule!("W0905"),
                &format!("{sp}.batch_size"),
                format!("warmup sample '{}' has batch_size 0 and is skipped", w.name),
            )
            .help("set batch_size: 1 (or the batch size to warm)"),
        );
        return;
    }
    let limit = mbs.max(1) as u32;
    // Backends built on Triton's backend utilities refuse larger batches;
    // the Python backend simply receives more requests.
    let strict = matches!(
        ctx.cfg.backend.as_str(),
        "onnxruntime" | "tensorrt" | "pytorch" | "tensorflow" | "openvino"
    );
    if strict && w.batch_size > limit {
        out.push(
            ctx.diag(
                rule!("W0904"),
                &format!("{sp}.batch_size"),
                format!(
                    "warmup sample '{}' runs a batch of {} but the model accepts at most {limit}",
                    w.name, w.batch_size
                ),
            )
            .help(format!("use a batch_size of at most {limit}")),
        );
    }
    let (control_names, string_corrid) = controls(ctx);
    let model_inputs = &ctx.cfg.input;

    // First pass: sizes.
    let mut failed = false;
    for (name, inp) in &w.inputs {
        let ip = format!("{sp}.inputs{{{name}}}.value");
        if let Some(d) = first_pass(ctx, &ip, name, inp) {
            out.push(d);
            failed = true;
        }
    }
    if failed {
        return;
    }
    // Second pass: data.
    for (name, inp) in &w.inputs {
        let ip = format!("{sp}.inputs{{{name}}}.value");
        match &inp.input_data_type {
            None => {
                out.push(
                    ctx.triton(
                        rule!("E0904"),
                        &ip,
                        format!("{REQ}warmup setting expects input '{name}' to have input_data_type set"),
                    )
                    .help("add 'zero_data: true', 'random_data: true' or 'input_data_file: \"<file>\"'"),
                );
                failed = true;
            }
            Some(InputDataType::InputDataFile(file)) => {
                if let Some(d) = check_data_file(ctx, &ip, inp, file) {
                    out.push(d);
                    failed = true;
                }
            }
            Some(_) => {}
        }
    }
    if failed {
        return;
    }
    // Unknown names are passed to the backend unchecked.
    if !model_inputs.is_empty() {
        for name in w.inputs.keys() {
            if !model_inputs.iter().any(|m| &m.name == name)
                && !control_names.contains(&name.as_str())
            {
                let mut d = ctx.diag(
                    rule!("W0903"),
                    &format!("{sp}.inputs{{{name}}}.key"),
                    format!("warmup input '{name}' is neither a model input nor a sequence control input"),
                );
                if let Some(s) =
                    crate::schema::bind::suggest(name, model_inputs.iter().map(|m| m.name.clone()))
                {
                    d = d.help(format!("did you mean '{s}'?"));
                }
                out.push(d);
            }
        }
    } else {
        return;
    }
    // The request checks (InferenceRequest::Normalize).
    let given: Vec<&str> = w
        .inputs
        .keys()
        .filter(|n| model_inputs.iter().any(|m| &m.name == *n))
        .map(String::as_str)
        .collect();
    let required = model_inputs.iter().filter(|m| !m.optional).count();
    let missing: Vec<&str> = model_inputs
        .iter()
        .filter(|m| !m.optional && !given.contains(&m.name.as_str()))
        .map(|m| m.name.as_str())
        .collect();
    if given.len() < required {
        let quote = |v: &[&str]| {
            let q: Vec<String> = v.iter().map(|s| format!("'{s}'")).collect();
            format!("[{}]", q.join(","))
        };
        let head = if model_inputs.len() == required {
            format!("expected {} inputs", model_inputs.len())
        } else {
            format!(
                "expected number of inputs between {required} and {}",
                model_inputs.len()
            )
        };
        out.push(
            ctx.triton(
                rule!("E0907"),
                &sp,
                format!(
                    "{REQ}{head} but got {} inputs for model '{}'. Got input(s) {}, but missing required input(s) {}. Please provide all required input(s).",
                    given.len(),
                    ctx.name,
                    quote(&given),
                    quote(&missing)
                ),
            )
            .help(format!("add {} to the warmup sample", quote(&missing))),
        );
        return;
    }
    if !missing.is_empty() {
        out.push(
            ctx.diag(
                rule!("E0907"),
                &sp,
                format!(
                    "warmup sample '{}' does not provide the required input(s) {}; the backend will refuse the request",
                    w.name,
                    missing.join(", ")
                ),
            )
            .help("provide every input that is not optional"),
        );
        return;
    }
    for name in &given {
        let inp = &w.inputs[*name];
        let cfg_in = model_inputs
            .iter()
            .find(|m| &m.name == name)
            .expect("given input");
        let ip = format!("{sp}.inputs{{{name}}}.value");
        if inp.data_type != cfg_in.data_type {
            out.push(
                ctx.triton(
                    rule!("E0908"),
                    &format!("{ip}.data_type"),
                    format!(
                        "{REQ}inference input '{name}' data-type is '{}', but model '{}' expects '{}'",
                        protocol_name(inp.data_type),
                        ctx.name,
                        protocol_name(cfg_in.data_type)
                    ),
                )
                .help(format!(
                    "use data_type: {}",
                    crate::schema::data_type_name(cfg_in.data_type)
                )),
            );
            failed = true;
            continue;
        }
        if cfg_in.is_shape_tensor {
            continue;
        }
        let string_file = match &inp.input_data_type {
            Some(InputDataType::InputDataFile(file))
                if cfg_in.data_type == DataType::TypeString as i32 =>
            {
                Some(file)
            }
            _ => None,
        };
        let fits = inp.dims.len() == cfg_in.dims.len()
            && inp
                .dims
                .iter()
                .zip(&cfg_in.dims)
                .all(|(&d, &c)| c == -1 || c == d);
        if !fits {
            let mut full = Vec::new();
            let mut got = Vec::new();
            let mut note = "";
            if mbs > 0 {
                full.push(-1);
                got.push(1);
                note = "NOTE: Setting a non-zero max_batch_size in the model config requires a batch dimension to be prepended to each input shape. If you want to specify the full shape including the batch dim in your input dims config, try setting max_batch_size to zero. See the model configuration docs for more info on max_batch_size.";
            }
            full.extend(&cfg_in.dims);
            got.extend(&inp.dims);
            let help = if mbs > 0 && inp.dims.len() == cfg_in.dims.len() + 1 {
                "warmup dims must not include the batch dimension; Triton prepends it".to_string()
            } else {
                format!(
                    "use dims {} (without the batch dimension)",
                    dims_string(&cfg_in.dims)
                )
            };
            out.push(
                ctx.triton(
                    rule!("E0909"),
                    &format!("{ip}.dims"),
                    format!(
                        "{REQ}unexpected shape for input '{name}' for model '{}'. Expected {}, got {}. {note}",
                        ctx.name,
                        dims_string(&full),
                        dims_string(&got)
                    ),
                )
                .with_message(format!(
                    "warmup input '{name}' has dims {} but the model input has dims {}",
                    dims_string(&inp.dims),
                    dims_string(&cfg_in.dims)
                ))
                .help(help),
            );
            failed = true;
            continue;
        }
        if let Some(file) = string_file {
            if let Some(d) = check_string_file(ctx, &ip, name, inp, cfg_in, file) {
                out.push(d);
                failed = true;
            }
        }
    }
    if failed {
        return;
    }
    if let Some(corrid) = string_corrid {
        out.push(
            ctx.triton(
                rule!("E0910"),
                &sp,
                format!(
                    "{REQ}sequence batching control '{corrid}' data-type is 'UINT64', but model '{}' expects 'BYTES'",
                    ctx.name
                ),
            )
            .help("warmup requests use the numeric correlation id 0; drop the warmup or use a numeric CORRID type"),
        );
    }
}

/// Triton's first pass over one warmup input: its byte size.
fn first_pass(ctx: &ModelCtx, ip: &str, name: &str, inp: &WarmupInput) -> Option<Diagnostic> {
    let wildcard = format!(
        "warmup setting expects all variable-size dimensions are specified for input '{name}'"
    );
    match element_count(&inp.dims) {
        Err(true) => {
            let k = inp.dims.iter().position(|&d| d == -1).unwrap_or(0);
            return Some(
                ctx.triton(rule!("E0901"), &format!("{ip}.dims[{k}]"), wildcard)
                    .help("give the concrete size to warm up with"),
            );
        }
        Err(false) => {
            let k = inp.dims.iter().position(|&d| d < -1).unwrap_or(0);
            let text = if inp.data_type == DataType::TypeString as i32 {
                format!(
                    "tensor '{name}' contains an invalid dimension in shape {}",
                    dims_string(&inp.dims)
                )
            } else {
                format!(
                    "tensor '{name}' contains an invalid dimension {}",
                    dims_string(&inp.dims)
                )
            };
            return Some(
                ctx.triton(rule!("E0903"), &format!("{ip}.dims[{k}]"), text)
                    .help("dimensions must be non-negative"),
            );
        }
        Ok(_) => {}
    }
    if inp.data_type != DataType::TypeString as i32 && dtype_size(inp.data_type) == 0 {
        return Some(
            ctx.triton(rule!("E0902"), &format!("{ip}.data_type"), wildcard)
                .with_message(format!("warmup input '{name}' has no valid data_type"))
                .help("set data_type to the model input's type"),
        );
    }
    None
}

fn check_data_file(ctx: &ModelCtx, ip: &str, inp: &WarmupInput, file: &str) -> Option<Diagnostic> {
    let dir = ctx.dir?;
    let path = dir.join("warmup").join(file);
    let fp = format!("{ip}.input_data_file");
    let len = match std::fs::metadata(&path) {
        Ok(m) if m.is_file() => m.len(),
        _ => {
            return Some(
                ctx.triton(
                    rule!("E0906"),
                    &fp,
                    format!(
                        "failed to open text file for read {}: No such file or directory",
                        path.display()
                    ),
                )
                .help(format!(
                    "put the file in the model's 'warmup' directory ({})",
                    Path::new("warmup").join(file).display()
                )),
            );
        }
    };
    if inp.data_type == DataType::TypeString as i32 {
        return None;
    }
    let count = element_count(&inp.dims).ok()?;
    let need = count.checked_mul(dtype_size(inp.data_type))?;
    ((len as i64) < need).then(|| {
        ctx.triton(
            rule!("E0905"),
            &fp,
            format!("{REQ}warmup setting expects {need} bytes, but the data provided from {file}only has {len} bytes"),
        )
        .help(format!(
            "{count} element(s) of {} need {need} bytes of raw data",
            crate::schema::data_type_name(inp.data_type)
        ))
    })
}

/// The request check on a `TYPE_STRING` model input whose warmup data comes
/// from a file: Triton hands the file over as one buffer and walks it as
/// 4-byte little-endian lengths, each followed by that many bytes, counting
/// elements against the shape with the batch dimension, after the reshape
/// (docs/spec/validation.md §3.8).
fn check_string_file(
    ctx: &ModelCtx,
    ip: &str,
    name: &str,
    inp: &WarmupInput,
    cfg_in: &crate::schema::inference::ModelInput,
    file: &str,
) -> Option<Diagnostic> {
    let dir = ctx.dir?;
    // A file that cannot be read here (absent, outside the model directory,
    // too large) is reported by E0906 or not at all.
    let bytes = crate::files::read_in(&dir.join("warmup").join(file), dir).ok()?;
    let expected = string_element_count(ctx.cfg.max_batch_size, &inp.dims, cfg_in)?;
    let problem = string_elements(&bytes, expected).err()?;
    let model = ctx.name;
    let text = match problem {
        StringFileProblem::Incomplete(available) => format!(
            "{REQ}incomplete string length indicator for inference input '{name}' for model '{model}', expecting 4 bytes but only {available} bytes available. Please make sure the string length indicator is in one buffer."
        ),
        StringFileProblem::TooMany(n) => format!(
            "{REQ}unexpected number of string elements {n} for inference input '{name}' for model '{model}', expecting {expected}"
        ),
        StringFileProblem::Count(n) => format!(
            "{REQ}expected {expected} string elements for inference input '{name}' for model '{model}', got {n}"
        ),
    };
    Some(
        ctx.triton(rule!("E0911"), &format!("{ip}.input_data_file"), text).help(format!(
            "write {expected} string element(s) to warmup/{file}, each as a 4-byte little-endian length followed by its bytes"
        )),
    )
}

/// The element count Triton checks a string input against: the shape of one
/// request with the batch dimension (`[1, ...]` when `max_batch_size > 0`),
/// after the input's reshape (a `-1` in the reshape takes the request's size
/// at the matching `-1` of `dims`). None when the reshape does not keep the
/// element count: that is an error of its own (E0304, E0308).
fn string_element_count(
    max_batch_size: i32,
    dims: &[i64],
    cfg_in: &crate::schema::inference::ModelInput,
) -> Option<i64> {
    let with_batch = |shape: &[i64]| {
        let mut v = Vec::with_capacity(shape.len() + 1);
        if max_batch_size > 0 {
            v.push(1);
        }
        v.extend_from_slice(shape);
        element_count(&v).ok()
    };
    let count = with_batch(dims)?;
    let Some(r) = &cfg_in.reshape else {
        return Some(count);
    };
    let mut variable = dims
        .iter()
        .zip(&cfg_in.dims)
        .filter(|(_, &c)| c == -1)
        .map(|(&d, _)| d);
    let mut shape = Vec::with_capacity(r.shape.len());
    for &d in &r.shape {
        shape.push(if d == -1 { variable.next()? } else { d });
    }
    (with_batch(&shape)? == count).then_some(count)
}

enum StringFileProblem {
    /// Fewer than 4 bytes left where a length should start.
    Incomplete(usize),
    /// More elements than expected (counted up to the first extra one).
    TooMany(i64),
    /// A different number of elements.
    Count(i64),
}

/// Walks `data` as Triton's serialized strings (one buffer). An element whose
/// length runs past the end is counted, as Triton counts it.
fn string_elements(data: &[u8], expected: i64) -> Result<(), StringFileProblem> {
    let mut rest = data;
    let mut checked: i64 = 0;
    while !rest.is_empty() {
        let Some((len, tail)) = rest.split_first_chunk::<4>() else {
            return Err(StringFileProblem::Incomplete(rest.len()));
        };
        checked += 1;
        if checked > expected {
            return Err(StringFileProblem::TooMany(checked));
        }
        let len = u32::from_le_bytes(*len) as usize;
        rest = tail.get(len..).unwrap_or(&[]);
    }
    if checked != expected {
        return Err(StringFileProblem::Count(checked));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serialized(items: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for s in items {
            out.extend_from_slice(&(s.len() as u32).to_le_bytes());
            out.extend_from_slice(s);
        }
        out
    }

    fn problem(data: &[u8], expected: i64) -> Option<String> {
        string_elements(data, expected).err().map(|p| match p {
            StringFileProblem::Incomplete(n) => format!("incomplete {n}"),
            StringFileProblem::TooMany(n) => format!("too many {n}"),
            StringFileProblem::Count(n) => format!("count {n}"),
        })
    }

    // The cases below were loaded into Triton 2.51 as warmup files of a
    // TYPE_STRING input (see docs/spec/validation.md §3.8 for the messages).
    #[test]
    fn serialized_strings_are_counted_as_triton_counts_them() {
        assert_eq!(problem(&serialized(&[b"hello", b""]), 2), None);
        assert_eq!(
            problem(&serialized(&[b"hello", b""]), 3),
            Some("count 2".into())
        );
        assert_eq!(
            problem(&serialized(&[b"hello", b""]), 1),
            Some("too many 2".into())
        );
        assert_eq!(problem(b"", 1), Some("count 0".into()));
        assert_eq!(problem(b"", 0), None);
        // a length, one byte, then two bytes where the next length starts
        assert_eq!(
            problem(&[1, 0, 0, 0, b'h', 0, 0], 2),
            Some("incomplete 2".into())
        );
    }

    #[test]
    fn an_element_running_past_the_end_still_counts() {
        // Triton accepted both as one element: the first four bytes of plain
        // text are read as a (huge) length.
        assert_eq!(problem(b"hello world", 1), None);
        assert_eq!(problem(&[50, 0, 0, 0, b'h', b'i'], 1), None);
    }

    #[test]
    fn the_count_includes_the_batch_dimension_and_follows_the_reshape() {
        let input =
            |dims: Vec<i64>, reshape: Option<Vec<i64>>| crate::schema::inference::ModelInput {
                dims,
                reshape: reshape
                    .map(|shape| crate::schema::inference::ModelTensorReshape { shape }),
                ..Default::default()
            };
        assert_eq!(
            string_element_count(4, &[3], &input(vec![3], None)),
            Some(3)
        );
        assert_eq!(
            string_element_count(0, &[2, 3], &input(vec![-1, 3], None)),
            Some(6)
        );
        // a batching model with a reshape to a scalar: the shape is [1]
        assert_eq!(
            string_element_count(8, &[1], &input(vec![1], Some(vec![]))),
            Some(1)
        );
        // dims [-1, 4] reshaped to [-1, 2, 2], sample dims [3, 4]: Triton
        // 2.51 wanted 12 elements
        assert_eq!(
            string_element_count(8, &[3, 4], &input(vec![-1, 4], Some(vec![-1, 2, 2]))),
            Some(12)
        );
        // a reshape that changes the element count is reported elsewhere
        assert_eq!(
            string_element_count(8, &[3, 2], &input(vec![-1, 2], Some(vec![4, -1]))),
            None
        );
        assert_eq!(
            string_element_count(0, &[1], &input(vec![1], Some(vec![]))),
            None
        );
    }
}
