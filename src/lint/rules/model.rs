//! Rules: Triton's `ValidateModelConfig` (docs/spec/validation.md §2, §3.1),
//! run on the config after the backend-field fill-in and normalization.
//!
//! Triton stops at the first failing check; these rules report every
//! problem, each with the text Triton prints when it is the first one. Rows
//! of §3.1 that cannot fail after Triton's own fill-in (an empty `name`, both
//! `platform` and `backend` empty after the "unexpected platform type" check,
//! a missing version policy) have no rule: Triton never prints them.

use crate::diagnostics::Rule;
use crate::diagnostics::{Category, Diagnostic, Severity};
use crate::lint::registry::rule;
use crate::lint::ModelCtx;
use crate::schema::inference::model_config::SchedulingChoice;
use crate::schema::inference::model_queue_policy::TimeoutAction;
use crate::schema::inference::model_sequence_batching::control::Kind as ControlKind;
use crate::schema::inference::model_sequence_batching::{Control, StrategyChoice};
use crate::schema::inference::{
    DataType, ModelConfig, ModelDynamicBatching, ModelMetrics, ModelQueuePolicy,
    ModelSequenceBatching,
};
use crate::text::Span;

const SRC: Option<&str> = Some("core src/model_config_utils.cc (ValidateModelConfig)");
const SRC_CONTROL: Option<&str> = Some(
    "core src/model_config_utils.cc (GetBooleanSequenceControlProperties, GetTypedSequenceControlProperties)",
);
const SRC_METRICS: Option<&str> = Some("core src/model_config_utils.cc (ValidateModelMetrics)");

pub const RULES: &[Rule] = &[
    Rule {
        code: "E0201",
        name: "backend-undetermined",
        category: Category::Semantic,
        severity: Severity::Error,
        summary: "Triton cannot tell which backend serves the model",
        docs: "With no `backend`, no `platform` and no recognised model file, Triton takes the backend from the model name after its first `.` (`mymodel.identity` uses the `identity` backend). A name without a dot leaves it nothing to go on, and the load fails. Set `backend` (or `platform`) in the config.",
        triton_source: Some("core src/model_config_utils.cc (AutoCompleteBackendFields)"),
    },
    Rule::semantic_error(
        "E0202",
        "unexpected-platform",
        "No backend could be derived and the platform is not one Triton knows",
        "Triton fills `backend` from `platform`, from `default_model_filename` or from the model file it finds in the first version directory. When that leaves `backend` empty and the model is not an ensemble, the load fails with `unexpected platform type '<platform>' for <m>`.\n\nTypical causes: a misspelt platform (`onnxruntime` instead of `onnxruntime_onnx`), or a model file with a non-default name (`foo.onnx`) and neither `platform` nor `backend` set.\n\n```\nplatform: \"onnxruntime\"      # error: the platform is onnxruntime_onnx\nbackend: \"onnxruntime\"       # ok\n```\n\n(Triton also has `must specify 'platform' or 'backend'` and `model configuration must specify 'name'`; both are unreachable once Triton has filled in the name and passed this check.)",
        SRC
    ),
    Rule::semantic_error(
        "E0203",
        "ensemble-with-backend",
        "An ensemble names a backend",
        "An ensemble is served by Triton itself: `platform: \"ensemble\"` with any `backend` fails with `Ensemble model '<m>' must have platform type 'ensemble' and empty backend type`.\n\n```\nplatform: \"ensemble\"\nbackend: \"python\"    # error: remove it\n```",
        SRC
    ),
    Rule::semantic_error(
        "E0204",
        "platform-backend-mismatch",
        "The platform does not belong to the named backend",
        "For the backends Triton knows by name, the platform must be one of that backend's: `tensorflow` → `tensorflow_graphdef`/`tensorflow_savedmodel`, `tensorrt` → `tensorrt_plan`, `onnxruntime` → `onnxruntime_onnx`, `pytorch` → `pytorch_libtorch`. Other backends accept any platform. A mismatch fails with `unexpected 'platform' and 'backend' pair, got:<platform>, <backend>` (no space after the colon).\n\nNote: Triton maps the `pytorch` backend to the LibTorch family only, so `platform: \"torch_aoti\"` or `\"libtorch\"` with `backend: \"pytorch\"` is refused by this check.\n\n```\nbackend: \"onnxruntime\"\nplatform: \"onnxruntim\"   # error: the pair does not match\n```",
        SRC
    ),
    Rule::semantic_error(
        "E0205",
        "negative-max-batch-size",
        "`max_batch_size` is negative",
        "`max_batch_size` is 0 for a model that does not batch, or the largest batch it accepts. A negative value fails with `'max_batch_size' must be non-negative value for <m>`.\n\n```\nmax_batch_size: -1   # error\n```",
        SRC
    ),
    Rule::semantic_error(
        "E0206",
        "preferred-batch-size-not-positive",
        "A dynamic-batching preferred batch size is 0 or negative",
        "Every `dynamic_batching.preferred_batch_size` must be at least 1, else the load fails with `dynamic batching preferred size must be positive for <m>`.\n\n```\ndynamic_batching { preferred_batch_size: [ 0, 4 ] }   # error: 0\n```",
        SRC
    ),
    Rule::semantic_error(
        "E0207",
        "preferred-batch-size-too-large",
        "A dynamic-batching preferred batch size exceeds `max_batch_size`",
        "The dynamic batcher never forms a batch larger than `max_batch_size`, so Triton refuses a larger preferred size: `dynamic batching preferred size must be <= max batch size for <m>`. With `max_batch_size: 0` (or unset) every preferred size is too large.\n\n```\nmax_batch_size: 8\ndynamic_batching { preferred_batch_size: [ 4, 16 ] }   # error: 16 > 8\n```",
        SRC
    ),
    Rule::semantic_error(
        "E0208",
        "default-priority-level-out-of-range",
        "`default_priority_level` is not within `[1, priority_levels]`",
        "When `dynamic_batching.priority_levels` is set, requests without a priority get `default_priority_level`, which must be between 1 and `priority_levels` (0, the default, is not). Otherwise the load fails with `default priority level must be in range [1, <levels>] for <m>`.\n\n```\ndynamic_batching {\n  priority_levels: 3\n  default_priority_level: 2   # required, 1..3\n}\n```",
        SRC
    ),
    Rule::semantic_error(
        "E0209",
        "priority-queue-policy-level-out-of-range",
        "A `priority_queue_policy` key is not a valid priority level",
        "The keys of `dynamic_batching.priority_queue_policy` are priority levels and must lie in `[1, priority_levels]`, else the load fails with `priority queue policy must have priority level in range [1, <levels>] for <m>`.\n\n```\ndynamic_batching {\n  priority_levels: 2\n  default_priority_level: 1\n  priority_queue_policy { key: 3 value { } }   # error: only 1 and 2 exist\n}\n```",
        SRC
    ),
    Rule::semantic_error(
        "E0210",
        "preserve-ordering-with-priorities",
        "`preserve_ordering` with more than one priority level",
        "Responses cannot be returned in arrival order while requests are reordered by priority: `preserve_ordering: true` with `priority_levels > 1` fails with `Only one priority level is allowed when 'preserve_ordering' is true for <m>`.\n\n```\ndynamic_batching {\n  preserve_ordering: true\n  priority_levels: 2          # error: at most 1 with preserve_ordering\n  default_priority_level: 1\n}\n```",
        SRC
    ),
    Rule::semantic_error(
        "E0211",
        "preserve-ordering-with-delay",
        "`preserve_ordering` with a queue policy that delays timed-out requests",
        "A queue policy with a timeout and `timeout_action: DELAY` moves requests behind later ones, which `preserve_ordering` forbids. Triton checks `default_queue_policy` and every `priority_queue_policy` and fails with `Queue policy can not have DELAY as timeout action when 'preserve_ordering' is true for <m>`.\n\n```\ndynamic_batching {\n  preserve_ordering: true\n  default_queue_policy { timeout_action: DELAY default_timeout_microseconds: 1000 }  # error\n}\n```",
        SRC
    ),
    Rule::semantic_error(
        "E0212",
        "response-cache-with-sequence-batching",
        "The response cache is enabled for a sequence-batched model",
        "The response cache does not support the sequence batcher: `response_cache { enable: true }` together with `sequence_batching` fails with `Response Cache does not currently support model <m> with sequence batching scheduler. Please disable the response cache.`\n\n```\nsequence_batching { }\nresponse_cache { enable: true }   # error\n```",
        SRC
    ),
    Rule::semantic_error(
        "E0213",
        "control-input-without-name",
        "A sequence-batching `control_input` has no name",
        "Each `sequence_batching.control_input` names the model input that receives the control value. Without `name` the load fails with `sequence batching control tensor must have a name for <m>`.\n\n```\ncontrol_input [ { control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] } ]   # error: no name\n```",
        SRC_CONTROL
    ),
    Rule::semantic_error(
        "E0214",
        "control-input-name-repeated",
        "Two sequence-batching `control_input` entries use the same tensor",
        "Each control tensor may appear in only one `control_input` entry. A repeated name fails with `sequence batching control tensor '<name>' is specified for multiple control kinds for <m>`.\n\n```\ncontrol_input [\n  { name: \"START\" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] },\n  { name: \"START\" control [ { kind: CONTROL_SEQUENCE_READY int32_false_true: [ 0, 1 ] } ] }   # error\n]\n```\n\n(Listing two kinds inside one entry is accepted by Triton.)",
        SRC_CONTROL
    ),
    Rule::semantic_error(
        "E0215",
        "control-kind-repeated",
        "A sequence control kind is given for more than one tensor",
        "Each control kind (`CONTROL_SEQUENCE_START`, `_END`, `_READY`, `_CORRID`) may be given once. A second one fails with `sequence batching specifies multiple <KIND> tensors for <m>`. Triton looks the kinds up in the order START, END, READY, CORRID.\n\n```\ncontrol_input [\n  { name: \"START0\" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] },\n  { name: \"START1\" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] }   # error\n]\n```",
        SRC_CONTROL
    ),
    Rule::semantic_error(
        "E0216",
        "control-value-missing",
        "A START/END/READY control gives no false/true values",
        "The boolean controls need the values to send: one of `int32_false_true`, `fp32_false_true` or `bool_false_true` (which also decides the tensor type). Without one the load fails with `sequence batching must specify either 'int32_false_true', 'fp32_false_true' or 'bool_false_true' for <KIND> for <m>`.\n\n```\ncontrol [ { kind: CONTROL_SEQUENCE_READY int32_false_true: [ 0, 1 ] } ]\n```",
        SRC_CONTROL
    ),
    Rule::semantic_error(
        "E0217",
        "control-value-ambiguous",
        "A START/END/READY control gives more than one kind of false/true values",
        "Only one of `int32_false_true`, `fp32_false_true` and `bool_false_true` may be set on a control, else the load fails with `sequence batching specifies more than one from 'int32_false_true', 'fp32_false_true' and 'bool_false_true' for <KIND> for <m>`.\n\n```\ncontrol [ { kind: CONTROL_SEQUENCE_END int32_false_true: [ 0, 1 ] fp32_false_true: [ 0, 1 ] } ]   # error: pick one\n```",
        SRC_CONTROL
    ),
    Rule::semantic_error(
        "E0218",
        "control-value-count",
        "A false/true list does not have exactly two entries",
        "Entry 0 of the list is the value for *false*, entry 1 the value for *true*; any other length fails with `sequence batching control '<list>' must have exactly 2 entries for <KIND> for <m>`.\n\n```\ncontrol [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 1 ] } ]   # error: [ 0, 1 ]\n```",
        SRC_CONTROL
    ),
    Rule::semantic_error(
        "E0219",
        "corrid-control-with-values",
        "A CORRID control gives false/true values",
        "`CONTROL_SEQUENCE_CORRID` carries the correlation ID, not a flag: it takes a `data_type` and no `*_false_true` list. A list fails with `sequence batching must not specify either 'int32_false_true', 'fp32_false_true' or 'bool_false_true' for CONTROL_SEQUENCE_CORRID for <m>`.\n\n```\ncontrol [ { kind: CONTROL_SEQUENCE_CORRID int32_false_true: [ 0, 1 ] } ]   # error\ncontrol [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 } ]        # ok\n```",
        SRC_CONTROL
    ),
    Rule::semantic_error(
        "E0220",
        "corrid-control-data-type",
        "A CORRID control has a data type other than UINT64, INT64, UINT32, INT32 or STRING",
        "The correlation-ID control tensor must be `TYPE_UINT64`, `TYPE_INT64`, `TYPE_UINT32`, `TYPE_INT32` or `TYPE_STRING`; any other type, or none, fails with `unexpected data type for control CONTROL_SEQUENCE_CORRID for <m>. Allowed data types are TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 and TYPE_STRING`.\n\n```\ncontrol [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 } ]\n```",
        SRC
    ),
    Rule::semantic_error(
        "E0221",
        "oldest-preferred-batch-size-not-positive",
        "A preferred batch size of the oldest strategy is 0 or negative",
        "Every `sequence_batching.oldest.preferred_batch_size` must be at least 1, else the load fails with `sequence batching preferred batch size must be positive for <m>`.\n\n```\nsequence_batching { oldest { preferred_batch_size: [ 0 ] } }   # error\n```",
        SRC
    ),
    Rule::semantic_error(
        "E0222",
        "oldest-preferred-batch-size-too-large",
        "A preferred batch size of the oldest strategy exceeds `max_batch_size`",
        "A preferred batch size larger than `max_batch_size` can never be formed; Triton fails with `sequence batching preferred batch size must be <= max batch size for <m>`.\n\n```\nmax_batch_size: 4\nsequence_batching { oldest { preferred_batch_size: [ 8 ] } }   # error\n```",
        SRC
    ),
    Rule::semantic_error(
        "E0223",
        "minimum-slot-utilization-out-of-range",
        "`direct.minimum_slot_utilization` is outside 0.0..1.0",
        "The direct strategy's `minimum_slot_utilization` is a fraction of the batch slots. Values below 0.0 or above 1.0 fail with `sequence batching minimum slot utilization must be in range (0.0, 1.0] for <m>` (despite the text, 0.0 itself is accepted).\n\n```\nsequence_batching { direct { minimum_slot_utilization: 1.5 } }   # error\n```",
        SRC
    ),
    Rule::semantic_error(
        "E0224",
        "ensemble-scheduling-missing",
        "An ensemble without `ensemble_scheduling`",
        "`platform: \"ensemble\"` needs the steps in `ensemble_scheduling`; without it the load fails with `ensemble scheduling must be set for ensemble <m> whose platform is ensemble`.\n\n```\nplatform: \"ensemble\"\nensemble_scheduling { step [ { model_name: \"a\" model_version: -1 input_map { key: \"x\" value: \"IN\" } output_map { key: \"y\" value: \"OUT\" } } ] }\n```",
        SRC
    ),
    Rule::semantic_error(
        "E0225",
        "response-cache-with-decoupled",
        "The response cache is enabled for a decoupled model",
        "The response cache does not support decoupled models: `model_transaction_policy { decoupled: true }` with `response_cache { enable: true }` fails with `Response Cache does not currently support model <m> with 'decoupled' transaction policy. Please disable the response cache.`\n\n```\nmodel_transaction_policy { decoupled: true }\nresponse_cache { enable: true }   # error\n```",
        SRC
    ),
    Rule::semantic_error(
        "E0226",
        "metric-control-without-identifier",
        "A `model_metrics.metric_control` lacks `metric_identifier`",
        "Each metric control names the metric family it customises in `metric_identifier { family: ... }`. Without it the load fails with `metric control must specify 'metric_identifier'`.\n\n```\nmodel_metrics { metric_control [ { histogram_options { buckets: [ 1, 10 ] } } ] }   # error: no metric_identifier\n```",
        SRC_METRICS
    ),
    Rule::semantic_error(
        "E0227",
        "metric-family-empty",
        "A metric identifier has an empty `family`",
        "`metric_identifier.family` must name a metric family; an empty one fails with `metric identifier must specify non-empty 'family'`.\n\n```\nmetric_identifier { family: \"\" }   # error\n```",
        SRC_METRICS
    ),
    Rule::semantic_error(
        "E0228",
        "metric-control-without-histogram-options",
        "A `model_metrics.metric_control` lacks `histogram_options`",
        "A metric control must say how to customise the metric; without `histogram_options` the load fails with `metric control must specify 'histogram_options'`.\n\n```\nmetric_control [ { metric_identifier { family: \"nv_inference_first_response_histogram_ms\" } } ]   # error: no histogram_options\n```",
        SRC_METRICS
    ),
    Rule::semantic_error(
        "E0229",
        "histogram-buckets-empty",
        "`histogram_options` without buckets",
        "`histogram_options.buckets` lists the histogram bucket boundaries and must not be empty, else the load fails with `histogram options must specify non-empty 'buckets'`.\n\n```\nhistogram_options { buckets: [ 1, 10, 100 ] }\n```",
        SRC_METRICS
    ),
];

/// Pushes `d`, or, when a diagnostic of the same code with the same Triton
/// text is already there (Triton prints one line for all of them), adds
/// `d`'s location to it as a secondary label instead.
pub(crate) fn push_merged(out: &mut Vec<Diagnostic>, d: Diagnostic, label: &str) {
    let same = out.iter_mut().find(|o| {
        o.code() == d.code() && o.triton_message.is_some() && o.triton_message == d.triton_message
    });
    match same {
        Some(o) => {
            if let Some(span) = d.span {
                if o.span != Some(span) && !o.labels.iter().any(|l| l.span == span) {
                    o.labels.push(crate::diagnostics::Label {
                        span,
                        message: label.to_string(),
                    });
                }
            }
        }
        None => out.push(d),
    }
}

/// The span of the first of `paths` written in the file.
pub(crate) fn first_exact(ctx: &ModelCtx, paths: &[&str]) -> Option<Span> {
    paths.iter().find_map(|p| ctx.exact_span(p))
}

/// A Triton diagnostic at the first written path of `paths`, else at the
/// closest existing ancestor of the last one.
pub(crate) fn triton_at(
    ctx: &ModelCtx,
    code: &'static Rule,
    paths: &[&str],
    text: String,
) -> Diagnostic {
    let span = first_exact(ctx, paths).or_else(|| paths.last().and_then(|p| ctx.span(p)));
    Diagnostic::new(code, String::new())
        .triton(text)
        .at_opt(span)
}

/// Adds a secondary label at `path` when it is written in the file.
pub(crate) fn label_if(ctx: &ModelCtx, d: Diagnostic, path: &str, message: &str) -> Diagnostic {
    match ctx.exact_span(path) {
        Some(s) if d.span != Some(s) => d.label(s, message),
        _ => d,
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Family {
    TensorFlow,
    TensorRt,
    OnnxRuntime,
    PyTorch,
    TorchAoti,
}

/// Backends Triton knows by name (`GetBackendType`); `pytorch` maps to the
/// LibTorch family only.
fn backend_family(backend: &str) -> Option<Family> {
    match backend {
        "tensorflow" => Some(Family::TensorFlow),
        "tensorrt" => Some(Family::TensorRt),
        "onnxruntime" => Some(Family::OnnxRuntime),
        "pytorch" => Some(Family::PyTorch),
        _ => None,
    }
}

fn platform_family(platform: &str) -> Option<Family> {
    match platform {
        "tensorflow_graphdef" | "tensorflow_savedmodel" => Some(Family::TensorFlow),
        "tensorrt_plan" => Some(Family::TensorRt),
        "onnxruntime_onnx" => Some(Family::OnnxRuntime),
        "pytorch_libtorch" => Some(Family::PyTorch),
        "torch_aoti" => Some(Family::TorchAoti),
        _ => None,
    }
}

fn family_platforms(f: Family) -> &'static str {
    match f {
        Family::TensorFlow => "\"tensorflow_graphdef\" or \"tensorflow_savedmodel\"",
        Family::TensorRt => "\"tensorrt_plan\"",
        Family::OnnxRuntime => "\"onnxruntime_onnx\"",
        Family::PyTorch => "\"pytorch_libtorch\"",
        Family::TorchAoti => "\"torch_aoti\"",
    }
}

pub fn check(ctx: &ModelCtx, out: &mut Vec<Diagnostic>) {
    let cfg = ctx.cfg;
    let m = ctx.name;
    check_platform_backend(ctx, cfg, out);

    if cfg.max_batch_size < 0 {
        out.push(
            triton_at(
                ctx,
                rule!("E0205"),
                &["max_batch_size"],
                format!("'max_batch_size' must be non-negative value for {m}"),
            )
            .help("use 0 for a model that does not batch, or the largest batch size it accepts"),
        );
    }

    match &cfg.scheduling_choice {
        Some(SchedulingChoice::DynamicBatching(db)) => check_dynamic_batching(ctx, db, out),
        Some(SchedulingChoice::SequenceBatching(sb)) => check_sequence_batching(ctx, sb, out),
        Some(SchedulingChoice::EnsembleScheduling(_)) => {}
        None => {}
    }

    let is_ensemble_scheduled = matches!(
        cfg.scheduling_choice,
        Some(SchedulingChoice::EnsembleScheduling(_))
    );
    if !is_ensemble_scheduled && cfg.platform == "ensemble" {
        out.push(
            triton_at(
                ctx,
                rule!("E0224"),
                &["platform"],
                format!(
                    "ensemble scheduling must be set for ensemble {m} whose platform is ensemble"
                ),
            )
            .help("add `ensemble_scheduling { step [ ... ] }` listing the composing models"),
        );
    }

    let cache_on = cfg.response_cache.as_ref().is_some_and(|c| c.enable);
    let decoupled = cfg
        .model_transaction_policy
        .as_ref()
        .is_some_and(|p| p.decoupled);
    if decoupled && cache_on {
        let d = triton_at(
            ctx,
            rule!("E0225"),
            &["response_cache.enable", "response_cache"],
            format!(
                "Response Cache does not currently support model {m} with 'decoupled' transaction policy. Please disable the response cache."
            ),
        );
        let d = label_if(
            ctx,
            d,
            "model_transaction_policy.decoupled",
            "decoupled set here",
        );
        out.push(d.help("remove `response_cache` or set `enable: false`"));
    }

    if let Some(metrics) = &cfg.model_metrics {
        check_model_metrics(ctx, metrics, out);
    }
}

fn check_platform_backend(ctx: &ModelCtx, cfg: &ModelConfig, out: &mut Vec<Diagnostic>) {
    let m = ctx.name;
    if cfg.backend.is_empty() {
        if cfg.platform != "ensemble" {
            let mut d = triton_at(
                ctx,
                rule!("E0202"),
                &["platform", "default_model_filename", "name"],
                format!("unexpected platform type '{}' for {m}", cfg.platform),
            );
            let known_as_backend = backend_family(&cfg.platform).or(match cfg.platform.as_str() {
                "onnx" => Some(Family::OnnxRuntime),
                "libtorch" | "torch" => Some(Family::PyTorch),
                "tensorrt_engine" | "trt" => Some(Family::TensorRt),
                _ => None,
            });
            d = match known_as_backend {
                Some(f) => d.help(format!(
                    "the platform for this backend is {}; or write `backend: \"{}\"` instead",
                    family_platforms(f),
                    match f {
                        Family::TensorFlow => "tensorflow",
                        Family::TensorRt => "tensorrt",
                        Family::OnnxRuntime => "onnxruntime",
                        Family::PyTorch | Family::TorchAoti => "pytorch",
                    }
                )),
                None => d.help(
                    "set `backend` (e.g. \"onnxruntime\", \"python\"), or a platform Triton recognises: tensorrt_plan, tensorflow_graphdef, tensorflow_savedmodel, onnxruntime_onnx, pytorch_libtorch, ensemble",
                ),
            };
            out.push(d);
        }
    } else if cfg.platform == "ensemble" {
        let d = triton_at(
            ctx,
            rule!("E0203"),
            &["backend"],
            format!(
                "Ensemble model '{m}' must have platform type '{}' and empty backend type",
                cfg.platform
            ),
        );
        let d = label_if(ctx, d, "platform", "platform set here");
        out.push(d.help("remove `backend`: ensembles are run by Triton itself"));
    }

    if let Some(f) = backend_family(&cfg.backend) {
        if platform_family(&cfg.platform) != Some(f) {
            let d = triton_at(
                ctx,
                rule!("E0204"),
                &["platform", "backend"],
                format!(
                    "unexpected 'platform' and 'backend' pair, got:{}, {}",
                    cfg.platform, cfg.backend
                ),
            );
            let d = label_if(ctx, d, "backend", "backend set here");
            let help = if cfg.platform.is_empty() {
                format!(
                    "backend \"{}\" needs platform {}",
                    cfg.backend,
                    family_platforms(f)
                )
            } else {
                format!(
                    "backend \"{}\" serves platform {}; fix `platform` or remove it",
                    cfg.backend,
                    family_platforms(f)
                )
            };
            out.push(d.help(help));
        }
    }
}

fn check_dynamic_batching(ctx: &ModelCtx, db: &ModelDynamicBatching, out: &mut Vec<Diagnostic>) {
    let m = ctx.name;
    let mbs = ctx.cfg.max_batch_size;
    for (k, &size) in db.preferred_batch_size.iter().enumerate() {
        let path = format!("dynamic_batching.preferred_batch_size[{k}]");
        if size <= 0 {
            let d = triton_at(
                ctx,
                rule!("E0206"),
                &[&path],
                format!("dynamic batching preferred size must be positive for {m}"),
            )
            .help("preferred batch sizes must be at least 1");
            push_merged(out, d, "also not positive");
        } else if size > mbs {
            let d = triton_at(
                ctx,
                rule!("E0207"),
                &[&path],
                format!("dynamic batching preferred size must be <= max batch size for {m}"),
            );
            let d = label_if(ctx, d, "max_batch_size", "max_batch_size set here");
            let d = if mbs == 0 {
                d.help("with max_batch_size 0 the model does not batch: remove the preferred sizes or set max_batch_size")
            } else {
                d.help(format!(
                    "use preferred sizes of at most {mbs}, or raise max_batch_size"
                ))
            };
            push_merged(out, d, "also larger than max_batch_size");
        }
    }

    let levels = db.priority_levels;
    if levels != 0 {
        if db.default_priority_level == 0 || db.default_priority_level > levels {
            let d = triton_at(
                ctx,
                rule!("E0208"),
                &[
                    "dynamic_batching.default_priority_level",
                    "dynamic_batching.priority_levels",
                ],
                format!("default priority level must be in range [1, {levels}] for {m}"),
            );
            let d = label_if(
                ctx,
                d,
                "dynamic_batching.priority_levels",
                "priority_levels set here",
            );
            out.push(d.help(format!(
                "set `default_priority_level` to a level between 1 and {levels}"
            )));
        }
        for &key in db.priority_queue_policy.keys() {
            if key == 0 || key > levels {
                let entry = format!("dynamic_batching.priority_queue_policy{{{key}}}");
                let d = triton_at(
                    ctx,
                    rule!("E0209"),
                    &[&format!("{entry}.key"), &entry],
                    format!("priority queue policy must have priority level in range [1, {levels}] for {m}"),
                );
                let d = label_if(
                    ctx,
                    d,
                    "dynamic_batching.priority_levels",
                    "priority_levels set here",
                );
                push_merged(
                    out,
                    d.help(format!("priority levels run from 1 to {levels}")),
                    "also out of range",
                );
            }
        }
    }

    if db.preserve_ordering {
        if levels > 1 {
            let d = triton_at(
                ctx,
                rule!("E0210"),
                &["dynamic_batching.priority_levels"],
                format!(
                    "Only one priority level is allowed when 'preserve_ordering' is true for {m}"
                ),
            );
            let d = label_if(
                ctx,
                d,
                "dynamic_batching.preserve_ordering",
                "preserve_ordering set here",
            );
            out.push(d.help("drop `priority_levels` or `preserve_ordering`"));
        }
        let delays = |p: &ModelQueuePolicy| {
            p.default_timeout_microseconds != 0 && p.timeout_action == TimeoutAction::Delay as i32
        };
        let text = format!(
            "Queue policy can not have DELAY as timeout action when 'preserve_ordering' is true for {m}"
        );
        let mut policies: Vec<String> = Vec::new();
        if db.default_queue_policy.as_ref().is_some_and(delays) {
            policies.push("dynamic_batching.default_queue_policy".into());
        }
        for (key, p) in &db.priority_queue_policy {
            if delays(p) {
                policies.push(format!(
                    "dynamic_batching.priority_queue_policy{{{key}}}.value"
                ));
            }
        }
        for p in policies {
            let d = triton_at(
                ctx,
                rule!("E0211"),
                &[&format!("{p}.timeout_action"), &p],
                text.clone(),
            );
            let d = label_if(
                ctx,
                d,
                "dynamic_batching.preserve_ordering",
                "preserve_ordering set here",
            );
            push_merged(
                out,
                d.help("use `timeout_action: REJECT`, or turn `preserve_ordering` off"),
                "also DELAY",
            );
        }
    }
}

fn kind_name(kind: ControlKind) -> &'static str {
    kind.as_str_name()
}

fn check_sequence_batching(ctx: &ModelCtx, sb: &ModelSequenceBatching, out: &mut Vec<Diagnostic>) {
    let m = ctx.name;
    let mbs = ctx.cfg.max_batch_size;
    if ctx.cfg.response_cache.as_ref().is_some_and(|c| c.enable) {
        let d = triton_at(
            ctx,
            rule!("E0212"),
            &["response_cache.enable", "response_cache"],
            format!(
                "Response Cache does not currently support model {m} with sequence batching scheduler. Please disable the response cache."
            ),
        );
        let d = match ctx
            .exact_span("sequence_batching")
            .and_then(|_| ctx.name_span("sequence_batching"))
        {
            Some(s) => d.label(s, "sequence batcher set here"),
            None => d,
        };
        out.push(d.help("remove `response_cache` or set `enable: false`"));
    }

    check_controls(ctx, sb, out);

    match &sb.strategy_choice {
        Some(StrategyChoice::Oldest(oldest)) => {
            for (k, &size) in oldest.preferred_batch_size.iter().enumerate() {
                let path = format!("sequence_batching.oldest.preferred_batch_size[{k}]");
                if size <= 0 {
                    let d = triton_at(
                        ctx,
                        rule!("E0221"),
                        &[&path],
                        format!("sequence batching preferred batch size must be positive for {m}"),
                    )
                    .help("preferred batch sizes must be at least 1");
                    push_merged(out, d, "also not positive");
                } else if size > mbs {
                    let d = triton_at(
                        ctx,
                        rule!("E0222"),
                        &[&path],
                        format!("sequence batching preferred batch size must be <= max batch size for {m}"),
                    );
                    let d = label_if(ctx, d, "max_batch_size", "max_batch_size set here");
                    push_merged(
                        out,
                        d.help(format!(
                            "use preferred sizes of at most {mbs}, or raise max_batch_size"
                        )),
                        "also larger than max_batch_size",
                    );
                }
            }
        }
        Some(StrategyChoice::Direct(direct)) => {
            let u = direct.minimum_slot_utilization;
            if !(0.0..=1.0).contains(&u) && !u.is_nan() {
                out.push(
                    triton_at(
                        ctx,
                        rule!("E0223"),
                        &["sequence_batching.direct.minimum_slot_utilization"],
                        format!("sequence batching minimum slot utilization must be in range (0.0, 1.0] for {m}"),
                    )
                    .help("use a fraction between 0.0 and 1.0"),
                );
            }
        }
        None => {}
    }
}

/// §3.1.1: Triton scans every `control_input` once per kind (START, END,
/// READY, then CORRID), checking the entries' names during each scan and
/// the controls of the kind it looks for.
fn check_controls(ctx: &ModelCtx, sb: &ModelSequenceBatching, out: &mut Vec<Diagnostic>) {
    let m = ctx.name;
    let base = "sequence_batching.control_input";

    // Entry names (the same for every scan, so reported once).
    let mut first_use: Vec<(&str, usize)> = Vec::new();
    for (i, ci) in sb.control_input.iter().enumerate() {
        if ci.name.is_empty() {
            let d = triton_at(
                ctx,
                rule!("E0213"),
                &[&format!("{base}[{i}].name"), &format!("{base}[{i}]")],
                format!("sequence batching control tensor must have a name for {m}"),
            )
            .help("set `name` to the model input that receives this control");
            push_merged(out, d, "also without a name");
            continue;
        }
        if let Some(&(_, first)) = first_use.iter().find(|(n, _)| *n == ci.name) {
            let d = triton_at(
                ctx,
                rule!("E0214"),
                &[&format!("{base}[{i}].name"), &format!("{base}[{i}]")],
                format!(
                    "sequence batching control tensor '{}' is specified for multiple control kinds for {m}",
                    ci.name
                ),
            );
            let d = label_if(ctx, d, &format!("{base}[{first}].name"), "first used here");
            push_merged(
                out,
                d.help("list every control of one tensor in a single `control_input` entry, or use distinct tensors"),
                "used again here",
            );
        } else {
            first_use.push((&ci.name, i));
        }
    }

    for kind in [
        ControlKind::ControlSequenceStart,
        ControlKind::ControlSequenceEnd,
        ControlKind::ControlSequenceReady,
        ControlKind::ControlSequenceCorrid,
    ] {
        let kname = kind_name(kind);
        let mut first: Option<String> = None;
        for (i, ci) in sb.control_input.iter().enumerate() {
            for (j, c) in ci.control.iter().enumerate() {
                if c.kind != kind as i32 {
                    continue;
                }
                let cpath = format!("{base}[{i}].control[{j}]");
                match &first {
                    Some(fp) => {
                        let d = triton_at(
                            ctx,
                            rule!("E0215"),
                            &[&format!("{cpath}.kind"), &cpath],
                            format!("sequence batching specifies multiple {kname} tensors for {m}"),
                        );
                        let d = label_if(ctx, d, &format!("{fp}.kind"), "first given here");
                        push_merged(
                            out,
                            d.help(format!("give {kname} for one tensor only")),
                            "given again here",
                        );
                    }
                    None => first = Some(cpath.clone()),
                }
                if kind == ControlKind::ControlSequenceCorrid {
                    check_corrid_control(ctx, c, &cpath, out);
                } else {
                    check_boolean_control(ctx, c, &cpath, kname, out);
                }
            }
        }
    }
}

fn check_boolean_control(
    ctx: &ModelCtx,
    c: &Control,
    cpath: &str,
    kname: &str,
    out: &mut Vec<Diagnostic>,
) {
    let m = ctx.name;
    let lists = [
        ("int32_false_true", c.int32_false_true.len()),
        ("fp32_false_true", c.fp32_false_true.len()),
        ("bool_false_true", c.bool_false_true.len()),
    ];
    let given: Vec<&(&str, usize)> = lists.iter().filter(|(_, n)| *n > 0).collect();
    match given.as_slice() {
        [] => {
            let d = triton_at(
                ctx,
                rule!("E0216"),
                &[cpath],
                format!(
                    "sequence batching must specify either 'int32_false_true', 'fp32_false_true' or 'bool_false_true' for {kname} for {m}"
                ),
            )
            .help("add e.g. `int32_false_true: [ 0, 1 ]` (the values sent for false and true)");
            push_merged(out, d, "also without values");
        }
        [_, second, ..] => {
            let d = triton_at(
                ctx,
                rule!("E0217"),
                &[&format!("{cpath}.{}", second.0), cpath],
                format!(
                    "sequence batching specifies more than one from 'int32_false_true', 'fp32_false_true' and 'bool_false_true' for {kname} for {m}"
                ),
            )
            .help("keep one list; it also decides the control tensor's type");
            push_merged(out, d, "also ambiguous");
        }
        [_] => {}
    }
    // Triton looks at the first non-empty list, in this order.
    if let Some((list, n)) = given.first() {
        if *n != 2 {
            let d = triton_at(
                ctx,
                rule!("E0218"),
                &[&format!("{cpath}.{list}"), cpath],
                format!("sequence batching control '{list}' must have exactly 2 entries for {kname} for {m}"),
            )
            .help("give two values: the one for false, then the one for true");
            push_merged(out, d, "also not 2 entries");
        }
    }
}

fn check_corrid_control(ctx: &ModelCtx, c: &Control, cpath: &str, out: &mut Vec<Diagnostic>) {
    let m = ctx.name;
    let list = ["int32_false_true", "fp32_false_true", "bool_false_true"]
        .into_iter()
        .zip([
            c.int32_false_true.is_empty(),
            c.fp32_false_true.is_empty(),
            c.bool_false_true.is_empty(),
        ])
        .find(|(_, empty)| !empty)
        .map(|(n, _)| n);
    if let Some(list) = list {
        let d = triton_at(
            ctx,
            rule!("E0219"),
            &[&format!("{cpath}.{list}"), cpath],
            format!(
                "sequence batching must not specify either 'int32_false_true', 'fp32_false_true' or 'bool_false_true' for CONTROL_SEQUENCE_CORRID for {m}"
            ),
        )
        .help("remove the list and set `data_type` (e.g. TYPE_UINT64) instead");
        push_merged(out, d, "also here");
    }
    let allowed = [
        DataType::TypeUint64,
        DataType::TypeInt64,
        DataType::TypeUint32,
        DataType::TypeInt32,
        DataType::TypeString,
    ];
    if !allowed.iter().any(|t| *t as i32 == c.data_type) {
        let d = triton_at(
            ctx,
            rule!("E0220"),
            &[&format!("{cpath}.data_type"), cpath],
            format!(
                "unexpected data type for control CONTROL_SEQUENCE_CORRID for {m}. Allowed data types are TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 and TYPE_STRING"
            ),
        );
        let d = if c.data_type == DataType::TypeInvalid as i32 {
            d.help("set `data_type`, e.g. TYPE_UINT64")
        } else {
            d.help(format!(
                "{} is not allowed; use TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 or TYPE_STRING",
                crate::schema::data_type_name(c.data_type)
            ))
        };
        push_merged(out, d, "also here");
    }
}

fn check_model_metrics(ctx: &ModelCtx, metrics: &ModelMetrics, out: &mut Vec<Diagnostic>) {
    use crate::schema::inference::model_metrics::metric_control::MetricOptions;
    for (i, mc) in metrics.metric_control.iter().enumerate() {
        let path = format!("model_metrics.metric_control[{i}]");
        match &mc.metric_identifier {
            None => {
                let d = triton_at(
                    ctx,
                    rule!("E0226"),
                    &[&path],
                    "metric control must specify 'metric_identifier'".to_string(),
                )
                .help("add `metric_identifier { family: \"<metric family>\" }`");
                push_merged(out, d, "also without metric_identifier");
            }
            Some(id) if id.family.is_empty() => {
                let d = triton_at(
                    ctx,
                    rule!("E0227"),
                    &[
                        &format!("{path}.metric_identifier.family"),
                        &format!("{path}.metric_identifier"),
                    ],
                    "metric identifier must specify non-empty 'family'".to_string(),
                )
                .help("name the metric family to customise");
                push_merged(out, d, "also empty");
            }
            Some(_) => {}
        }
        match &mc.metric_options {
            None => {
                let d = triton_at(
                    ctx,
                    rule!("E0228"),
                    &[&path],
                    "metric control must specify 'histogram_options'".to_string(),
                )
                .help("add `histogram_options { buckets: [ ... ] }`");
                push_merged(out, d, "also without histogram_options");
            }
            Some(MetricOptions::HistogramOptions(h)) if h.buckets.is_empty() => {
                let d = triton_at(
                    ctx,
                    rule!("E0229"),
                    &[
                        &format!("{path}.histogram_options.buckets"),
                        &format!("{path}.histogram_options"),
                    ],
                    "histogram options must specify non-empty 'buckets'".to_string(),
                )
                .help("list the bucket boundaries, e.g. `buckets: [ 1, 10, 100 ]`");
                push_merged(out, d, "also without buckets");
            }
            Some(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// Every rule of model.rs, io.rs and instance.rs has at least one
    /// `fail_*` and one `pass_*` fixture (run by tests/cli/rules.rs).
    #[test]
    fn every_rule_has_fixtures() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("testdata")
            .join("rules");
        let mut missing = Vec::new();
        for r in super::RULES
            .iter()
            .chain(super::super::io::RULES)
            .chain(super::super::instance::RULES)
        {
            // E0201 comes from the fill-in before the rules, and only with a
            // model directory; fixtures are checked without one.
            if r.code == "E0201" {
                continue;
            }
            let names: Vec<String> = std::fs::read_dir(root.join(r.code))
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            for prefix in ["fail_", "pass_"] {
                if !names
                    .iter()
                    .any(|n| n.starts_with(prefix) && n.ends_with(".pbtxt"))
                {
                    missing.push(format!("{} has no {prefix}*.pbtxt", r.code));
                }
            }
        }
        assert!(missing.is_empty(), "{missing:#?}");
    }
}
