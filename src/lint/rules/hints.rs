//! Rules: warnings beyond Triton's own checks. Each protects against a
//! config that Triton loads silently but that does not do what its author
//! most likely meant. None of them is an error: Triton accepts all of these.
//!
//! W0001–W0079 and N0001–N0099 live here; W0080–W0099 belong to the
//! stateful backend (`stateful.rs`). Backends the server may lack are
//! reported by `repository.rs` (W0704), not here.

use crate::diagnostics::Rule;
use crate::diagnostics::{Category, Diagnostic, Severity};
use crate::lint::registry::rule;
use crate::lint::ModelCtx;
use crate::schema::inference::model_config::SchedulingChoice;
use crate::schema::inference::model_instance_group::Kind;
use crate::schema::inference::model_queue_policy::TimeoutAction;
use crate::schema::inference::model_sequence_batching::StrategyChoice;
use crate::schema::inference::ModelQueuePolicy;
use std::collections::HashSet;
use std::path::PathBuf;

pub const RULES: &[Rule] = &[
    Rule {
        code: "W0001",
        name: "preferred-batch-size-unreachable",
        category: Category::Semantic,
        severity: Severity::Warning,
        summary: "A preferred batch size that the scheduler can never form",
        docs: "With the Oldest sequence strategy a batch holds at most one request per sequence, and an instance has at most `max_candidate_sequences` sequences to choose from. A preferred batch size above `max_candidate_sequences` can therefore never be formed, and the batcher waits the full `max_queue_delay_microseconds` for it every time. When no preferred size is given, Triton uses `max_batch_size`, so the same applies when `max_candidate_sequences < max_batch_size`.\n\n```\nmax_batch_size: 16\nsequence_batching { oldest { max_candidate_sequences: 4 preferred_batch_size: [ 8 ] } }   # warning\n```",
        triton_source: None,
    },
    Rule {
        code: "W0002",
        name: "preferred-batch-size-order",
        category: Category::Semantic,
        severity: Severity::Warning,
        summary: "preferred_batch_size lists a size twice or out of order",
        docs: "Triton keeps preferred batch sizes as a sorted set, so duplicates and order have no effect. A repeated or unsorted list usually means a size was mistyped.\n\n```\ndynamic_batching { preferred_batch_size: [ 8, 4, 8 ] }   # warning\n```",
        triton_source: None,
    },
    Rule {
        code: "W0003",
        name: "queue-delay-without-batching",
        category: Category::Semantic,
        severity: Severity::Warning,
        summary: "max_queue_delay_microseconds on a model without batching has no effect",
        docs: "With `max_batch_size: 0` every batch holds exactly one request, so the dynamic batcher never waits for more and `max_queue_delay_microseconds` does nothing. Set `max_batch_size` if the model can batch, or drop the delay.\n\n```\nmax_batch_size: 0\ndynamic_batching { max_queue_delay_microseconds: 100 }   # warning\n```",
        triton_source: None,
    },
    Rule {
        code: "W0004",
        name: "dynamic-batching-without-batching",
        category: Category::Semantic,
        severity: Severity::Warning,
        summary: "dynamic_batching on a model with max_batch_size 0 forms no batches",
        docs: "The dynamic batcher batches only up to `max_batch_size`; with `max_batch_size: 0` it sends every request on its own. Only its queue features (priorities, queue policies, `preserve_ordering`) still apply. If the model accepts a batch dimension, set `max_batch_size` (and drop the batch dimension from `dims`).\n\n```\nmax_batch_size: 0\ndynamic_batching { }   # warning: no batching happens\n```",
        triton_source: None,
    },
    Rule {
        code: "W0005",
        name: "short-sequence-idle-timeout",
        category: Category::Semantic,
        severity: Severity::Warning,
        summary: "max_sequence_idle_microseconds is shorter than 100 ms",
        docs: "When a sequence receives no request for `max_sequence_idle_microseconds`, Triton ends it and frees its slot; the client's next request then fails because the sequence is unknown. Values below 100 ms are shorter than ordinary gaps between a client's requests (network, pre-processing, user think time). The value is in microseconds: `1000` is 1 ms, not 1 s.\n\n```\nsequence_batching { max_sequence_idle_microseconds: 5000 }   # warning: 5 ms\n```",
        triton_source: None,
    },
    Rule {
        code: "W0006",
        name: "instance-count-not-positive",
        category: Category::Semantic,
        severity: Severity::Warning,
        summary: "instance_group count 0 or negative is silently replaced",
        docs: "Triton replaces a `count` below 1 with 1 instance (2 for `KIND_CPU` groups of the ONNX Runtime and TensorFlow backends). It does not disable the group. Write the count you want, or remove the group.\n\n```\ninstance_group [ { kind: KIND_GPU count: 0 } ]   # warning: Triton creates 1 instance per GPU\n```",
        triton_source: Some("core src/model_config_utils.cc (NormalizeInstanceGroup)"),
    },
    Rule {
        code: "W0007",
        name: "duplicate-gpu-id",
        category: Category::Semantic,
        severity: Severity::Warning,
        summary: "An instance group lists the same GPU more than once",
        docs: "Triton creates `count` instances for every entry of `gpus`, so a repeated id multiplies the instances on that GPU (and its memory use). Use `count` to ask for more instances.\n\n```\ninstance_group [ { kind: KIND_GPU count: 1 gpus: [ 0, 0 ] } ]   # warning: 2 instances on GPU 0\n```",
        triton_source: None,
    },
    Rule {
        code: "W0008",
        name: "decoupled-preserve-ordering",
        category: Category::Semantic,
        severity: Severity::Warning,
        summary: "preserve_ordering on a decoupled model holds back streamed responses",
        docs: "With `preserve_ordering` the dynamic batcher releases responses in request order. A decoupled model streams many responses per request, so every response of a later request waits until all earlier requests have finished, which defeats streaming (time to first token grows with the queue). Drop `preserve_ordering` unless responses must really arrive in request order.",
        triton_source: None,
    },
    Rule {
        code: "W0009",
        name: "platform-ignored",
        category: Category::Semantic,
        severity: Severity::Warning,
        summary: "platform has no effect (or a non-canonical value) for this backend",
        docs: "Triton checks `platform` against `backend` only for the backends it knows (`tensorflow`, `tensorrt`, `onnxruntime`, `pytorch`); for any other backend it accepts any platform string and ignores it. A value such as `onnxruntime` (instead of `onnxruntime_onnx`) therefore only loads because `backend` names another backend, and it misleads readers and tools. The Python backend's platform handlers (`platform: \"pytorch\"` or `\"tensorflow\"` with `backend: \"python\"`) are meaningful and not reported.\n\n```\nbackend: \"openvino\"\nplatform: \"onnxruntime\"   # warning: ignored\n```",
        triton_source: Some("core src/model_config_utils.cc (ValidateModelConfig)"),
    },
    Rule {
        code: "W0010",
        name: "default-model-file-missing",
        category: Category::Repository,
        severity: Severity::Warning,
        summary: "default_model_filename is missing from every version directory",
        docs: "The backend loads `<model>/<version>/<default_model_filename>`. When no version directory holds that file, the model cannot load (unless the backend builds the model some other way). Usually the file has another name, or `default_model_filename` has a typo. Checked when the model directory is known.",
        triton_source: None,
    },
    Rule {
        code: "W0012",
        name: "duplicate-state-name",
        category: Category::Semantic,
        severity: Severity::Warning,
        summary: "Two sequence states share an input_name or an output_name",
        docs: "Triton keys implicit states by name: a second `state` entry with an `input_name` or `output_name` already used is ignored, with a warning in the log.\n\n```\nstate [ { input_name: \"IN\" output_name: \"OUT\" ... }, { input_name: \"IN\" output_name: \"OUT2\" ... } ]\n# warning: Detected duplicate 'input_name' in the state configuration: 'IN.' This state configuration will be ignored.\n```",
        triton_source: Some("core src/sequence_state.cc (SequenceStates::Initialize)"),
    },
    Rule {
        code: "W0013",
        name: "queue-policy-without-timeout",
        category: Category::Semantic,
        severity: Severity::Warning,
        summary: "A queue policy's timeout_action or allow_timeout_override has no timeout to act on",
        docs: "A queue policy acts on requests that wait longer than `default_timeout_microseconds` (or the request's own timeout when `allow_timeout_override` is true). With a timeout of 0 and no override, no request ever times out, so `timeout_action: DELAY` does nothing.\n\n```\ndefault_queue_policy { timeout_action: DELAY }   # warning: no timeout set\n```",
        triton_source: None,
    },
    Rule {
        code: "W0014",
        name: "priority-settings-ignored",
        category: Category::Semantic,
        severity: Severity::Warning,
        summary: "Priority settings without priority_levels are ignored",
        docs: "`default_priority_level` and `priority_queue_policy` only take effect when `priority_levels` is set. Without it Triton has a single queue, skips its range checks for these fields and silently ignores them (including the timeouts and queue sizes of the per-priority policies).\n\n```\ndynamic_batching {\n  default_priority_level: 1                 # warning: ignored\n  priority_queue_policy { key: 1 value { max_queue_size: 8 } }\n}\n```\n\nAdd `priority_levels: <n>`, or use `default_queue_policy` for a single queue.",
        triton_source: None,
    },
    Rule {
        code: "N0002",
        name: "response-cache-needs-server-cache",
        category: Category::Semantic,
        severity: Severity::Note,
        summary: "response_cache works only when the server has a cache configured",
        docs: "`response_cache { enable: true }` opts the model in, but Triton caches responses only when the server is started with a cache (`--cache-config local,size=<bytes>` or another cache implementation). Without one the model loads and simply never hits the cache.",
        triton_source: None,
    },
    Rule {
        code: "N0001",
        name: "cpu-instances-default-two",
        category: Category::Semantic,
        severity: Severity::Note,
        summary: "A KIND_CPU group without count gets 2 instances for ONNX Runtime and TensorFlow",
        docs: "For the `onnxruntime` and `tensorflow` backends Triton creates 2 instances for a `KIND_CPU` group that gives no `count` (1 for every other backend and kind). Each instance holds its own copy of the model and its own thread pool. Write `count` to make the choice explicit.",
        triton_source: Some("core src/model_config_utils.cc (NormalizeInstanceGroup)"),
    },
];

/// The version directories Triton would load, as (name, path), when the
/// model directory is known (Triton's rules: `repo::versions`).
pub(crate) fn loaded_versions(ctx: &ModelCtx) -> Option<Vec<(String, PathBuf)>> {
    let dir = ctx.dir?;
    Some(crate::repo::versions::scan_versions(dir, ctx.cfg).loaded_dirs(dir))
}

pub fn check(ctx: &ModelCtx, out: &mut Vec<Diagnostic>) {
    check_batching(ctx, out);
    if ctx.cfg.response_cache.as_ref().is_some_and(|c| c.enable) {
        out.push(
            ctx.diag(
                rule!("N0002"),
                "response_cache.enable",
                "responses are cached only if the server is started with a cache (--cache-config)",
            )
            .help("start tritonserver with e.g. --cache-config local,size=1048576"),
        );
    }
    check_instances(ctx, out);
    check_platform(ctx, out);
    check_model_file(ctx, out);
    check_states(ctx, out);
}

/// W0002 for one list of preferred sizes.
fn check_order(ctx: &ModelCtx, path: &str, sizes: &[i32], out: &mut Vec<Diagnostic>) {
    let mut seen = HashSet::new();
    for (k, &s) in sizes.iter().enumerate() {
        if !seen.insert(s) {
            out.push(
                ctx.diag(
                    rule!("W0002"),
                    &format!("{path}[{k}]"),
                    format!("preferred batch size {s} is listed more than once"),
                )
                .help("remove the duplicate"),
            );
            return;
        }
    }
    if let Some(k) = sizes.windows(2).position(|w| w[1] < w[0]) {
        let mut sorted = sizes.to_vec();
        sorted.sort_unstable();
        out.push(
            ctx.diag(
                rule!("W0002"),
                &format!("{path}[{}]", k + 1),
                format!(
                    "preferred batch sizes are not in increasing order ({} after {})",
                    sizes[k + 1],
                    sizes[k]
                ),
            )
            .help(format!(
                "Triton sorts them anyway; write {:?} to say what happens",
                sorted
            )),
        );
    }
}

fn check_queue_policy(ctx: &ModelCtx, path: &str, p: &ModelQueuePolicy, out: &mut Vec<Diagnostic>) {
    if p.default_timeout_microseconds == 0
        && !p.allow_timeout_override
        && p.timeout_action == TimeoutAction::Delay as i32
    {
        out.push(
            ctx.diag(
                rule!("W0013"),
                &format!("{path}.timeout_action"),
                "timeout_action DELAY has no effect: the policy sets no timeout",
            )
            .help("set default_timeout_microseconds (or allow_timeout_override: true)"),
        );
    }
}

fn check_batching(ctx: &ModelCtx, out: &mut Vec<Diagnostic>) {
    let mbs = ctx.cfg.max_batch_size;
    let raw_choice = &ctx.raw.scheduling_choice;
    match &ctx.cfg.scheduling_choice {
        Some(SchedulingChoice::DynamicBatching(db)) => {
            if let Some(SchedulingChoice::DynamicBatching(raw)) = raw_choice {
                check_order(
                    ctx,
                    "dynamic_batching.preferred_batch_size",
                    &raw.preferred_batch_size,
                    out,
                );
            }
            if mbs == 0 {
                if db.max_queue_delay_microseconds > 0 {
                    out.push(
                        ctx.diag(
                            rule!("W0003"),
                            "dynamic_batching.max_queue_delay_microseconds",
                            "max_queue_delay_microseconds has no effect: with max_batch_size 0 every batch holds one request",
                        )
                        .help("set max_batch_size if the model can batch, or remove the delay"),
                    );
                }
                let queue_features = db.max_queue_delay_microseconds > 0
                    || db.priority_levels > 0
                    || db.default_queue_policy.is_some()
                    || !db.priority_queue_policy.is_empty()
                    || db.preserve_ordering;
                if !queue_features {
                    let mut d = ctx
                        .diag(
                            rule!("W0004"),
                            "dynamic_batching",
                            "dynamic_batching forms no batches on a model with max_batch_size 0",
                        )
                        .at_opt(ctx.name_span("dynamic_batching"))
                        .help("set max_batch_size (and drop the batch dimension from dims) if the model can batch");
                    if let Some(s) = ctx.exact_span("max_batch_size") {
                        d = d.label(s, "max_batch_size 0 here");
                    }
                    out.push(d);
                }
            }
            if db.preserve_ordering
                && ctx
                    .cfg
                    .model_transaction_policy
                    .as_ref()
                    .is_some_and(|t| t.decoupled)
            {
                let mut d = ctx
                    .diag(
                        rule!("W0008"),
                        "dynamic_batching.preserve_ordering",
                        "preserve_ordering on a decoupled model holds every streamed response until all earlier requests have finished",
                    )
                    .help("remove preserve_ordering unless responses must arrive in request order");
                if let Some(s) = ctx.exact_span("model_transaction_policy.decoupled") {
                    d = d.label(s, "decoupled here");
                }
                out.push(d);
            }
            if let Some(p) = &db.default_queue_policy {
                check_queue_policy(ctx, "dynamic_batching.default_queue_policy", p, out);
            }
            for (level, p) in &db.priority_queue_policy {
                check_queue_policy(
                    ctx,
                    &format!("dynamic_batching.priority_queue_policy{{{level}}}.value"),
                    p,
                    out,
                );
            }
            if db.priority_levels == 0 {
                let ignored = if db.default_priority_level != 0 {
                    Some("dynamic_batching.default_priority_level")
                } else if !db.priority_queue_policy.is_empty() {
                    Some("dynamic_batching.priority_queue_policy")
                } else {
                    None
                };
                if let Some(path) = ignored {
                    let field = path.rsplit('.').next().unwrap_or(path);
                    out.push(
                        ctx.diag(
                            rule!("W0014"),
                            path,
                            format!("{field} is ignored: priority_levels is not set"),
                        )
                        .at_opt(ctx.name_span(path))
                        .help("add priority_levels: <n>, or use default_queue_policy for a single queue"),
                    );
                }
            }
        }
        Some(SchedulingChoice::SequenceBatching(sb)) => {
            if let Some(SchedulingChoice::SequenceBatching(raw)) = raw_choice {
                let idle = raw.max_sequence_idle_microseconds;
                if idle > 0 && idle < 100_000 {
                    out.push(
                        ctx.diag(
                            rule!("W0005"),
                            "sequence_batching.max_sequence_idle_microseconds",
                            format!(
                                "sequences idle for more than {} ms are ended; clients that pause longer lose their sequence",
                                idle as f64 / 1000.0
                            ),
                        )
                        .help("the value is in microseconds; 1000000 (1 s) is Triton's default"),
                    );
                }
                if let Some(StrategyChoice::Oldest(o)) = &raw.strategy_choice {
                    check_order(
                        ctx,
                        "sequence_batching.oldest.preferred_batch_size",
                        &o.preferred_batch_size,
                        out,
                    );
                }
            }
            if let Some(StrategyChoice::Oldest(o)) = &sb.strategy_choice {
                let cand = o.max_candidate_sequences;
                if cand > 0 {
                    let explicit = matches!(
                        raw_choice,
                        Some(SchedulingChoice::SequenceBatching(r))
                            if matches!(&r.strategy_choice, Some(StrategyChoice::Oldest(ro)) if !ro.preferred_batch_size.is_empty())
                    );
                    if let Some((k, &s)) = o
                        .preferred_batch_size
                        .iter()
                        .enumerate()
                        .find(|(_, &s)| s > cand)
                    {
                        let (path, msg) = if explicit {
                            (
                                format!("sequence_batching.oldest.preferred_batch_size[{k}]"),
                                format!(
                                    "preferred batch size {s} can never form: a batch holds at most one request from each of the {cand} candidate sequences"
                                ),
                            )
                        } else {
                            (
                                "sequence_batching.oldest.max_candidate_sequences".to_string(),
                                format!(
                                    "batches of max_batch_size {s} can never form: a batch holds at most one request from each of the {cand} candidate sequences"
                                ),
                            )
                        };
                        let mut d = ctx
                            .diag(rule!("W0001"), &path, msg)
                            .help(format!(
                                "raise max_candidate_sequences to at least {s}, or list preferred sizes up to {cand}"
                            ));
                        if let Some(sp) =
                            ctx.exact_span("sequence_batching.oldest.max_candidate_sequences")
                        {
                            if explicit {
                                d = d.label(sp, "candidate sequences per instance");
                            }
                        }
                        out.push(d);
                    }
                }
            }
        }
        _ => {}
    }
}

fn check_instances(ctx: &ModelCtx, out: &mut Vec<Diagnostic>) {
    if ctx.cfg.platform == "ensemble" {
        return;
    }
    let two_for_cpu = matches!(ctx.cfg.backend.as_str(), "onnxruntime" | "tensorflow");
    for (i, g) in ctx.cfg.instance_group.iter().enumerate() {
        let p = format!("instance_group[{i}]");
        let written = ctx.exact_span(&format!("{p}.count"));
        let cpu = g.kind == Kind::Cpu as i32;
        if g.count < 1 && written.is_some() {
            let n = if cpu && two_for_cpu { 2 } else { 1 };
            out.push(
                ctx.diag(
                    rule!("W0006"),
                    &format!("{p}.count"),
                    format!(
                        "count {} is replaced by {n}: Triton does not disable the group",
                        g.count
                    ),
                )
                .help("write the number of instances you want, or remove the group"),
            );
        } else if g.count < 1 && cpu && two_for_cpu {
            out.push(
                ctx.diag(
                    rule!("N0001"),
                    &p,
                    format!(
                        "this KIND_CPU group gets 2 instances (Triton's default for the {} backend)",
                        ctx.cfg.backend
                    ),
                )
                .help("write count to make the number of instances explicit"),
            );
        }
        let mut seen = HashSet::new();
        for (k, id) in g.gpus.iter().enumerate() {
            if !seen.insert(id) {
                out.push(
                    ctx.diag(
                        rule!("W0007"),
                        &format!("{p}.gpus[{k}]"),
                        format!(
                            "GPU {id} is listed twice: Triton creates the group's instances once per entry"
                        ),
                    )
                    .help("list each GPU once and use count for more instances"),
                );
                break;
            }
        }
    }
}

/// Backends whose platform Triton checks, and their platforms.
const PLATFORM_FAMILIES: &[(&str, &[&str])] = &[
    (
        "tensorflow",
        &["tensorflow_graphdef", "tensorflow_savedmodel"],
    ),
    ("tensorrt", &["tensorrt_plan"]),
    ("onnxruntime", &["onnxruntime_onnx"]),
    ("pytorch", &["pytorch_libtorch"]),
];

fn check_platform(ctx: &ModelCtx, out: &mut Vec<Diagnostic>) {
    let platform = ctx.raw.platform.as_str();
    let backend = ctx.cfg.backend.as_str();
    if platform.is_empty() || backend.is_empty() || platform == "ensemble" {
        return;
    }
    if PLATFORM_FAMILIES.iter().any(|(b, _)| *b == backend) {
        return;
    }
    if backend == "python" && matches!(platform, "pytorch" | "tensorflow") {
        return;
    }
    let canonical = match platform {
        "onnxruntime" | "onnx" | "ort" => Some("onnxruntime_onnx"),
        "tensorrt" | "trt" | "plan" => Some("tensorrt_plan"),
        "pytorch" | "libtorch" | "torch" => Some("pytorch_libtorch"),
        "tensorflow" | "savedmodel" => Some("tensorflow_savedmodel"),
        "graphdef" => Some("tensorflow_graphdef"),
        _ => None,
    };
    let msg = match canonical {
        Some(c) => format!(
            "platform '{platform}' is not a Triton platform (did you mean '{c}'?); Triton ignores it because backend '{backend}' is set"
        ),
        None => format!("platform '{platform}' is ignored for backend '{backend}'"),
    };
    let mut d = ctx
        .diag(rule!("W0009"), "platform", msg)
        .help("remove 'platform'; 'backend' alone selects the backend");
    if let Some(s) = ctx.exact_span("backend") {
        d = d.label(s, "backend set here");
    }
    out.push(d);
}

fn check_model_file(ctx: &ModelCtx, out: &mut Vec<Diagnostic>) {
    let file = ctx.raw.default_model_filename.as_str();
    if file.is_empty() || ctx.cfg.platform == "ensemble" {
        return;
    }
    let Some(dir) = ctx.dir else { return };
    let all: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|e| {
            let n = e.file_name();
            let n = n.to_string_lossy();
            !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())
        })
        .map(|e| e.path())
        .collect();
    if all.is_empty() {
        return;
    }
    // cc_model_filenames can name the file per GPU architecture instead.
    if all.iter().any(|v| {
        v.join(file).exists()
            || ctx
                .cfg
                .cc_model_filenames
                .values()
                .any(|f| v.join(f).exists())
    }) {
        return;
    }
    out.push(
        ctx.diag(
            rule!("W0010"),
            "default_model_filename",
            format!("no version directory contains '{file}'"),
        )
        .help("check the file name, or put the model file at <model>/<version>/<file>"),
    );
}

fn check_states(ctx: &ModelCtx, out: &mut Vec<Diagnostic>) {
    let Some(SchedulingChoice::SequenceBatching(sb)) = &ctx.cfg.scheduling_choice else {
        return;
    };
    let mut inputs = HashSet::new();
    let mut outputs = HashSet::new();
    for (i, s) in sb.state.iter().enumerate() {
        if !inputs.insert(s.input_name.as_str()) {
            out.push(
                ctx.triton(
                    rule!("W0012"),
                    &format!("sequence_batching.state[{i}].input_name"),
                    format!(
                        "Detected duplicate 'input_name' in the state configuration: '{}.' This state configuration will be ignored.",
                        s.input_name
                    ),
                )
                .help("give every state its own input_name"),
            );
        } else if !outputs.insert(s.output_name.as_str()) {
            out.push(
                ctx.triton(
                    rule!("W0012"),
                    &format!("sequence_batching.state[{i}].output_name"),
                    format!(
                        "Detected duplicate 'output_name' in the state configuration: '{}'. This state configuration will be ignored.",
                        s.output_name
                    ),
                )
                .help("give every state its own output_name"),
            );
        }
    }
}
