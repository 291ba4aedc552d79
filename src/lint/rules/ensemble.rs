//! Rules: ensembles (docs/spec/validation.md §3.5).
//!
//! `check` runs the static part Triton applies to one config
//! (`ValidateEnsembleSchedulingConfig`): steps, maps and the data flow
//! between ensemble tensors. [`check_composition`] is the part that needs
//! the composing models' completed configs (`ValidateEnsembleConfig`); the
//! repository rules call it once the dependencies are known to load. The
//! dependency rules themselves (missing models, cycles, versions) are
//! raised by `repository::check_repository` but documented here, as they
//! are about ensembles.

use crate::config::{FieldPath, ParsedConfig};
use crate::diagnostics::Rule;
use crate::diagnostics::{Category, Diagnostic, Severity};
use crate::lint::registry::rule;
use crate::lint::ModelCtx;
use crate::schema::data_type_name;
use crate::schema::inference::model_config::SchedulingChoice;
use crate::schema::inference::{ModelConfig, ModelEnsembling};
use std::collections::{BTreeSet, HashMap, VecDeque};

const fn rule(
    code: &'static str,
    name: &'static str,
    summary: &'static str,
    docs: &'static str,
    triton_source: &'static str,
) -> Rule {
    Rule {
        code,
        name,
        category: Category::Semantic,
        severity: Severity::Error,
        summary,
        docs,
        triton_source: Some(triton_source),
    }
}

const STATIC_SRC: &str = "core src/model_config_utils.cc (ValidateEnsembleSchedulingConfig)";
const COMPOSE_SRC: &str = "core src/ensemble_scheduler/ensemble_utils.cc (ValidateEnsembleConfig)";
const DEPEND_SRC: &str =
    "core src/model_repository_manager/model_repository_manager.cc (DependencyGraph)";

pub const RULES: &[Rule] = &[
    rule(
        "E0601",
        "ensemble-scheduling-without-ensemble-platform",
        "`ensemble_scheduling` on a model whose platform is not `ensemble`",
        "Only ensembles (`platform: \"ensemble\"`) may have an `ensemble_scheduling` section. A model served by a backend cannot also be a pipeline of other models, so Triton refuses the config.\n\nEither set `platform: \"ensemble\"` (and remove `backend`), or drop the `ensemble_scheduling` block.",
        STATIC_SRC,
    ),
    rule(
        "E0602",
        "ensemble-instance-group",
        "An ensemble with `instance_group`",
        "An ensemble runs no code of its own: its steps run on the instances of the composing models. Triton refuses an `instance_group` on an ensemble; set instance groups on the composing models instead.",
        STATIC_SRC,
    ),
    rule(
        "E0603",
        "ensemble-optimization",
        "An ensemble with `optimization`",
        "Optimization settings (CUDA graphs, accelerators, pinned memory) belong to the models that do the work. Triton refuses an `optimization` block on an ensemble; move it to the composing models.",
        STATIC_SRC,
    ),
    rule(
        "E0604",
        "ensemble-warmup",
        "An ensemble with `model_warmup`",
        "Warm-up runs against model instances, and an ensemble has none. Triton refuses `model_warmup` on an ensemble; warm up the composing models instead.",
        STATIC_SRC,
    ),
    rule(
        "E0605",
        "ensemble-no-steps",
        "An ensemble without any `step`",
        "`ensemble_scheduling` must list at least one step; an empty pipeline cannot produce the ensemble's outputs.\n\n```\nensemble_scheduling {\n  step [ { model_name: \"preprocess\" model_version: -1 input_map { key: \"IN\" value: \"RAW\" } output_map { key: \"OUT\" value: \"pixels\" } } ]\n}\n```",
        STATIC_SRC,
    ),
    rule(
        "E0606",
        "ensemble-step-incomplete",
        "A step without `model_name`, `input_map` or `output_map`",
        "Every step names the model it runs and maps at least one ensemble tensor to a model input (`input_map`, key = the model's input, value = the ensemble tensor) and at least one model output to an ensemble tensor (`output_map`, key = the model's output, value = the ensemble tensor). Triton counts steps from 0 in its message.",
        STATIC_SRC,
    ),
    rule(
        "E0607",
        "ensemble-tensor-written-twice",
        "Two output maps write the same ensemble tensor",
        "Each ensemble tensor has exactly one producer: an ensemble input, or one output of one step. Mapping two outputs (in one step or in different steps) to the same tensor name is refused. Give the second one its own name.",
        STATIC_SRC,
    ),
    rule(
        "E0608",
        "ensemble-input-unused",
        "An ensemble input that no step reads",
        "Every ensemble input must appear as a value in some step's `input_map`. Triton's message has an unbalanced quote (`for ensemble <m>' is not used`); that is its exact text. Remove the input or map it into a step.",
        STATIC_SRC,
    ),
    rule(
        "E0609",
        "ensemble-output-unused",
        "An ensemble output that no step map mentions",
        "Every ensemble output must be produced by some step's `output_map` (as a value). An output that appears in no map at all is refused as \"not used\" (sic, with Triton's unbalanced quote).",
        STATIC_SRC,
    ),
    rule(
        "E0610",
        "ensemble-output-not-written",
        "An ensemble output that cannot be computed from the ensemble inputs",
        "Triton marks the ensemble inputs as ready, then repeatedly marks a step's outputs ready once every tensor in its `input_map` is ready. An ensemble output that never becomes ready is refused. When it can, Triton names an upstream tensor that nothing produces (`at least one of its depending tensors, '<t>', is not connected`). Cycles between steps end up here too.",
        STATIC_SRC,
    ),
    rule(
        "E0611",
        "ensemble-tensor-unused",
        "An intermediate ensemble tensor that is never produced or never consumed",
        "Every ensemble tensor other than the ensemble outputs must be reachable from the ensemble inputs and must feed at least one step. A step output that nothing reads, or a step input that nothing produces, is refused. If a composing model has an output you do not need, leave it out of the `output_map`.",
        STATIC_SRC,
    ),
    rule(
        "E0620",
        "ensemble-batch-size-exceeds-step",
        "The ensemble's `max_batch_size` is larger than a composing model's",
        "A batch sent to the ensemble is passed whole to each step, so every batching composing model must accept the ensemble's `max_batch_size`. Composing models with `max_batch_size: 0` (no batching) are exempt: their shapes are compared with the batch dimension included.",
        COMPOSE_SRC,
    ),
    rule(
        "E0621",
        "ensemble-map-to-missing-input",
        "An `input_map` key that is not an input of the step's model",
        "`input_map` keys are input names of the composing model (after its auto-complete), values are ensemble tensors. A key the model does not have is refused. Check the spelling, or whether key and value are swapped.",
        COMPOSE_SRC,
    ),
    rule(
        "E0622",
        "ensemble-input-not-mapped",
        "A required input of a composing model is not fed by the step",
        "Every input of a composing model must appear as a key in the step's `input_map`, unless the input is declared `optional: true`.",
        COMPOSE_SRC,
    ),
    rule(
        "E0623",
        "ensemble-map-from-missing-output",
        "An `output_map` key that is not an output of the step's model",
        "`output_map` keys are output names of the composing model, values are ensemble tensors. A key the model does not have is refused.",
        COMPOSE_SRC,
    ),
    rule(
        "E0624",
        "ensemble-tensor-type-mismatch",
        "An ensemble tensor used with two different data types",
        "An ensemble tensor takes its data type from the first place that defines it (an ensemble input or output, or the first step that maps it) and every other use must agree. No conversion happens between steps.",
        COMPOSE_SRC,
    ),
    rule(
        "E0625",
        "ensemble-tensor-shape-mismatch",
        "An ensemble tensor used with two incompatible shapes",
        "Two uses of an ensemble tensor agree when their `dims` match, `-1` matching anything, or when their full shapes match: a batching model's full shape has a leading `-1` for the batch, so a non-batching `[-1, 16]` matches a batching `[16]`. Ensemble inputs and outputs use their `reshape` when they have one. Triton prints the full shapes.",
        COMPOSE_SRC,
    ),
    rule(
        "E0626",
        "ensemble-decoupled-branching",
        "A step combines tensors that descend from different decoupled models",
        "A decoupled model may send any number of responses per request, so tensors produced downstream of two different decoupled steps cannot be paired up. Triton refuses a step (or the set of ensemble outputs) that receives tensors originating from different decoupled models. An ensemble that contains a decoupled model is itself decoupled.",
        COMPOSE_SRC,
    ),
    rule(
        "E0630",
        "ensemble-model-missing",
        "A step names a model that is not in the repository",
        "Each step's `model_name` must be a model of the same repository (a directory next to the ensemble's). Triton refuses the ensemble and names the first missing model.",
        DEPEND_SRC,
    ),
    rule(
        "E0631",
        "ensemble-circular-dependency",
        "Ensembles that contain each other",
        "An ensemble may contain another ensemble, but the containment must not loop back (an ensemble that lists itself as a step, or A containing B containing A). Triton refuses every ensemble on the loop.",
        DEPEND_SRC,
    ),
    rule(
        "E0632",
        "ensemble-required-version-missing",
        "A step asks for a model version that will not be loaded",
        "`model_version: -1` uses the latest loaded version. Any other value must be one of the versions the composing model loads: a numeric version directory that its `version_policy` selects (by default only the highest version is loaded).",
        DEPEND_SRC,
    ),
];

/// Backends whose auto-complete may add inputs and outputs to a config.
const IO_AUTOCOMPLETE_BACKENDS: &[&str] = &[
    "onnxruntime",
    "tensorrt",
    "tensorflow",
    "openvino",
    "python",
];

pub(crate) fn ensemble_of(cfg: &ModelConfig) -> Option<&ModelEnsembling> {
    match &cfg.scheduling_choice {
        Some(SchedulingChoice::EnsembleScheduling(e)) => Some(e),
        _ => None,
    }
}

/// Whether the model is an ensemble as Triton sees it after stage 4.
pub fn is_ensemble(cfg: &ModelConfig) -> bool {
    cfg.platform == "ensemble" && ensemble_of(cfg).is_some()
}

fn step_path(i: usize) -> String {
    format!("ensemble_scheduling.step[{i}]")
}

/// The static checks (stage 4). Reports the first failing category as
/// Triton would, but every finding of that category.
pub fn check(ctx: &ModelCtx, out: &mut Vec<Diagnostic>) {
    let cfg = ctx.cfg;
    let Some(ens) = ensemble_of(cfg) else {
        return;
    };
    let m = ctx.name;
    if cfg.platform != "ensemble" {
        out.push(
            ctx.triton(
                rule!("E0601"),
                "ensemble_scheduling",
                format!("ensemble scheduling cannot be set for model '{m}' whose platform is not ensemble"),
            )
            .at_opt(ctx.name_span("ensemble_scheduling"))
            .help("set `platform: \"ensemble\"` (without `backend`), or remove `ensemble_scheduling`"),
        );
        return;
    }
    // Fields an ensemble may not carry: (present, code, field, Triton's text, help).
    let forbidden = [
        (
            !cfg.instance_group.is_empty(),
            rule!("E0602"),
            "instance_group",
            format!("instance group should not be specified for ensemble '{m}'"),
            "remove `instance_group`; set instances on the composing models",
        ),
        (
            cfg.optimization.is_some(),
            rule!("E0603"),
            "optimization",
            format!("optimization should not be specified for ensemble '{m}'"),
            "remove `optimization`; set it on the composing models",
        ),
        (
            !cfg.model_warmup.is_empty(),
            rule!("E0604"),
            "model_warmup",
            format!("model_warmup can not be specified for ensemble '{m}'"),
            "remove `model_warmup`; warm up the composing models instead",
        ),
    ];
    for (present, code, field, text, help) in forbidden {
        if present {
            out.push(
                ctx.triton(code, field, text)
                    .at_opt(ctx.name_span(field))
                    .help(help),
            );
        }
    }
    if ens.step.is_empty() {
        out.push(
            ctx.triton(
                rule!("E0605"),
                "ensemble_scheduling",
                format!("must specify 'step' for ensemble '{m}'"),
            )
            .at_opt(ctx.name_span("ensemble_scheduling"))
            .help("add the steps that compute the ensemble outputs from its inputs"),
        );
        return;
    }
    let mut incomplete = false;
    for (i, step) in ens.step.iter().enumerate() {
        let missing = if step.model_name.is_empty() {
            Some("model_name")
        } else if step.input_map.is_empty() {
            Some("input_map")
        } else if step.output_map.is_empty() {
            Some("output_map")
        } else {
            None
        };
        if let Some(field) = missing {
            incomplete = true;
            out.push(
                ctx.triton(
                    rule!("E0606"),
                    &step_path(i),
                    format!("must specify '{field}' in step {i} of ensemble '{m}'"),
                )
                .help(format!("add `{field}` to step {i}")),
            );
        }
    }
    if incomplete {
        return;
    }
    check_data_flow(ctx, ens, out);
}

#[derive(Default)]
struct FlowTensor {
    is_output: bool,
    ready: bool,
    prev: Vec<usize>,
    next: Vec<usize>,
}

/// Triton's `BuildEnsembleGraph` and data-flow check. Map entries are
/// visited in key order (Triton's order is its hash map's, which is why the
/// QA suite accepts several answers).
fn check_data_flow(ctx: &ModelCtx, ens: &ModelEnsembling, out: &mut Vec<Diagnostic>) {
    let m = ctx.name;
    let mut names: Vec<String> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut nodes: Vec<FlowTensor> = Vec::new();
    let mut node =
        |name: &str, nodes: &mut Vec<FlowTensor>, names: &mut Vec<String>| -> (usize, bool) {
            if let Some(&i) = index.get(name) {
                return (i, false);
            }
            index.insert(name.to_string(), nodes.len());
            names.push(name.to_string());
            nodes.push(FlowTensor::default());
            (nodes.len() - 1, true)
        };
    let mut written_twice = false;
    // Where each tensor is first written, for labels.
    let mut writer: HashMap<usize, (usize, String)> = HashMap::new();
    for (i, step) in ens.step.iter().enumerate() {
        let mut outs = Vec::new();
        for (key, value) in &step.output_map {
            let (t, created) = node(value, &mut nodes, &mut names);
            if !created && nodes[t].is_output {
                written_twice = true;
                let mut d = ctx
                    .triton(
                        rule!("E0607"),
                        &format!("{}.output_map{{{key}}}.value", step_path(i)),
                        format!(
                            "ensemble tensor '{value}' can appear in an output map only once for ensemble '{m}' step {i}"
                        ),
                    )
                    .help(format!("give this output its own ensemble tensor name instead of '{value}'"));
                if let Some((j, k)) = writer.get(&t) {
                    if let Some(s) =
                        ctx.exact_span(&format!("{}.output_map{{{k}}}.value", step_path(*j)))
                    {
                        d = d.label(s, "first written here");
                    }
                }
                out.push(d);
            }
            nodes[t].is_output = true;
            writer.entry(t).or_insert((i, key.clone()));
            outs.push(t);
        }
        for value in step.input_map.values() {
            let (t, _) = node(value, &mut nodes, &mut names);
            for &o in &outs {
                nodes[o].prev.push(t);
                nodes[t].next.push(o);
            }
        }
    }
    if written_twice {
        return;
    }

    // Inputs: each must be read somewhere; they start the flow.
    let mut queue = VecDeque::new();
    let mut input_unused = false;
    for (i, input) in ctx.cfg.input.iter().enumerate() {
        match index.get(&input.name) {
            None => {
                input_unused = true;
                out.push(
                    ctx.triton(
                        rule!("E0608"),
                        &format!("input[{i}].name"),
                        format!(
                            "ensemble input '{}' for ensemble {m}' is not used",
                            input.name
                        ),
                    )
                    .help("map this input into a step's `input_map` (as a value), or remove it"),
                );
            }
            Some(&t) => {
                nodes[t].ready = true;
                queue.push_back(t);
            }
        }
    }
    if input_unused {
        return;
    }
    while let Some(t) = queue.pop_front() {
        for n in nodes[t].next.clone() {
            if nodes[n].ready {
                continue;
            }
            if nodes[n].prev.iter().all(|&p| nodes[p].ready) {
                nodes[n].ready = true;
                queue.push_back(n);
            }
        }
    }

    // Outputs: each must be written and computable.
    let mut outputs = BTreeSet::new();
    let mut output_failed = false;
    for (i, output) in ctx.cfg.output.iter().enumerate() {
        let path = format!("output[{i}].name");
        let Some(&t) = index.get(&output.name) else {
            output_failed = true;
            out.push(
                ctx.triton(
                    rule!("E0609"),
                    &path,
                    format!("ensemble output '{}' for ensemble {m}' is not used", output.name),
                )
                .help("map a step output to this tensor (as a value in an `output_map`), or remove the output"),
            );
            continue;
        };
        if nodes[t].ready {
            outputs.insert(t);
            continue;
        }
        output_failed = true;
        let mut text = format!("output '{}' for ensemble '{m}' is not written", output.name);
        // Walk up through the first not-ready producer until none is left.
        let mut last = t;
        let mut seen = BTreeSet::new();
        let mut cur = Some(t);
        while let Some(c) = cur.take() {
            for &p in &nodes[c].prev {
                if !nodes[p].ready && seen.insert(names[p].clone()) {
                    last = p;
                    cur = Some(p);
                    break;
                }
            }
        }
        if last != t {
            text.push_str(&format!(
                ": at least one of its depending tensors, '{}', is not connected",
                names[last]
            ));
        }
        out.push(
            ctx.triton(rule!("E0610"), &path, text)
                .help("every step input on the way to this output must be an ensemble input or another step's output"),
        );
    }
    if output_failed {
        return;
    }

    // Every other tensor must be produced and consumed.
    let mut order: Vec<usize> = (0..nodes.len()).collect();
    order.sort_by(|a, b| names[*a].cmp(&names[*b]));
    let sites = Sites::new(ens);
    for t in order {
        if outputs.contains(&t) {
            continue;
        }
        if !nodes[t].ready || nodes[t].next.is_empty() {
            let (path, help) = sites.site(&names[t], nodes[t].ready);
            out.push(
                ctx.triton(
                    rule!("E0611"),
                    &path,
                    format!("ensemble tensor '{}' is unused in ensemble '{m}'", names[t]),
                )
                .help(help),
            );
        }
    }
}

/// Where each tensor first appears, per kind of map: (step, key), the
/// first key in the map's order for the first step that has the tensor.
/// Built once, so that reporting every tensor of a long ensemble stays
/// linear.
struct Sites<'a> {
    read: HashMap<&'a str, (usize, &'a str)>,
    written: HashMap<&'a str, (usize, &'a str)>,
}

impl<'a> Sites<'a> {
    fn new(ens: &'a ModelEnsembling) -> Sites<'a> {
        let mut read = HashMap::new();
        let mut written = HashMap::new();
        for (i, step) in ens.step.iter().enumerate() {
            for (k, v) in &step.input_map {
                read.entry(v.as_str()).or_insert((i, k.as_str()));
            }
            for (k, v) in &step.output_map {
                written.entry(v.as_str()).or_insert((i, k.as_str()));
            }
        }
        Sites { read, written }
    }

    /// Where an unused tensor is best shown, and what to do about it: the
    /// first step that maps it, looking at its output map first for a
    /// tensor that is produced, at its input map first otherwise.
    fn site(&self, tensor: &str, ready: bool) -> (String, String) {
        let out = self.written.get(tensor).map(|&(i, k)| (i, "output_map", k));
        let inp = self.read.get(tensor).map(|&(i, k)| (i, "input_map", k));
        let (first, second) = if ready { (out, inp) } else { (inp, out) };
        let best = match (first, second) {
            (Some(a), Some(b)) => Some(if b.0 < a.0 { b } else { a }),
            (a, b) => a.or(b),
        };
        match best {
            Some((i, field, k)) => (
                format!("{}.{field}{{{k}}}.value", step_path(i)),
                help_for(ready, tensor),
            ),
            None => ("ensemble_scheduling".into(), help_for(ready, tensor)),
        }
    }
}

fn help_for(ready: bool, tensor: &str) -> String {
    if ready {
        format!("no step reads '{tensor}': remove it from the `output_map`, or feed it to a step")
    } else {
        format!("nothing produces '{tensor}': make it an ensemble input or a step output")
    }
}

// ---------------------------------------------------------------------------
// Composition (ValidateEnsembleConfig), with the composing models' configs.

/// What the composition check knows about a step's model.
#[derive(Clone, Copy)]
pub struct StepModel<'a> {
    /// The composing model's config after Triton's fill-in.
    pub cfg: &'a ModelConfig,
    /// Whether it is decoupled (for an ensemble: as derived from its steps).
    pub decoupled: bool,
    /// Whether auto-complete may still add inputs and outputs (so names
    /// missing from the config are not evidence of a mistake).
    pub io_open: bool,
}

impl StepModel<'_> {
    /// Whether the backend's auto-complete can fill in the I/O this config
    /// leaves out.
    pub fn io_may_be_completed(cfg: &ModelConfig, autocomplete: bool) -> bool {
        autocomplete
            && (cfg.input.is_empty() || cfg.output.is_empty())
            && IO_AUTOCOMPLETE_BACKENDS.contains(&cfg.backend.as_str())
    }
}

#[derive(Clone)]
struct Tensor {
    /// The model the tensor's type and shape were first taken from.
    model: String,
    /// `None` when unknown (a composing model still to be auto-completed).
    dtype: Option<i32>,
    dims: Vec<i64>,
    full: Vec<i64>,
    decoupled: bool,
    label: usize,
    visited: bool,
    prev: Vec<usize>,
    next: Vec<usize>,
    sibling: Option<usize>,
    /// Where the tensor is produced, for locating findings.
    site: Option<String>,
}

impl Tensor {
    fn new(model: &str, batching: bool, dtype: Option<i32>, dims: &[i64]) -> Tensor {
        let mut full = Vec::with_capacity(dims.len() + 1);
        if batching {
            full.push(-1);
        }
        full.extend_from_slice(dims);
        Tensor {
            model: model.to_string(),
            dtype,
            dims: dims.to_vec(),
            full,
            decoupled: false,
            label: 0,
            visited: false,
            prev: Vec::new(),
            next: Vec::new(),
            sibling: None,
            site: None,
        }
    }
}

fn dims_agree(a: &[i64], b: &[i64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| *x == -1 || *y == -1 || x == y)
}

fn dims_text(d: &[i64]) -> String {
    let parts: Vec<String> = d.iter().map(|x| x.to_string()).collect();
    format!("[{}]", parts.join(","))
}

/// Triton's consistency test between the tensor as first seen (`lhs`) and
/// a new use (`rhs`); returns (code, text).
fn consistency(
    ens: &str,
    name: &str,
    lhs: &Tensor,
    rhs: &Tensor,
) -> Option<(&'static Rule, String)> {
    let (Some(lt), Some(rt)) = (lhs.dtype, rhs.dtype) else {
        return None;
    };
    let prefix = format!("in ensemble {ens}, ensemble tensor {name}: ");
    if lt != rt {
        return Some((
            rule!("E0624"),
            format!(
                "{prefix}inconsistent data type: {} is inferred from model {} while {} is inferred from model {}",
                data_type_name(lt),
                lhs.model,
                data_type_name(rt),
                rhs.model
            ),
        ));
    }
    if !dims_agree(&lhs.dims, &rhs.dims) && !dims_agree(&lhs.full, &rhs.full) {
        return Some((
            rule!("E0625"),
            format!(
                "{prefix}inconsistent shape: {} is inferred from model {} while {} is inferred from model {}",
                dims_text(&lhs.full),
                lhs.model,
                dims_text(&rhs.full),
                rhs.model
            ),
        ));
    }
    None
}

/// The result of [`check_composition`].
pub struct Composition {
    pub diagnostics: Vec<Diagnostic>,
    /// Whether the ensemble is decoupled (some decoupled step is reached).
    pub decoupled: bool,
}

/// `ValidateEnsembleConfig` for ensemble `ens` (its name `name`, its file
/// for spans), given each step's model (`None` for steps to skip). Reports
/// every mapping problem; the decoupled analysis runs only when the
/// mappings are clean, as in Triton.
pub fn check_composition(
    name: &str,
    ens: &ModelConfig,
    file: &ParsedConfig,
    steps: &[Option<StepModel>],
) -> Composition {
    let mut diags = Vec::new();
    let span = |p: &str| file.span(&FieldPath::parse(p));
    let exact = |p: &str| file.exact_span(&FieldPath::parse(p));
    // A type or shape disagreement, shown at the new use, with the place
    // the tensor was first defined as a label.
    let emit = |diags: &mut Vec<Diagnostic>,
                code: &'static Rule,
                path: &str,
                text: String,
                first: &Tensor| {
        let what = if code.code == "E0624" {
            first.dtype.map(data_type_name).unwrap_or_default()
        } else {
            dims_text(&first.full)
        };
        let mut d = Diagnostic::new(code, String::new())
            .triton(text)
            .at_opt(span(path))
            .help(format!(
                "the tensor is {what} where {} defines it; make the two models agree, or put a conversion step between them",
                first.model
            ));
        if let Some(s) = first.site.as_deref().and_then(exact) {
            d = d.label(s, format!("{what} from {}", first.model));
        }
        diags.push(d);
    };
    let Some(sched) = ensemble_of(ens) else {
        return Composition {
            diagnostics: diags,
            decoupled: false,
        };
    };
    let batching = ens.max_batch_size > 0;
    let mut tensors: Vec<Tensor> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for (i, input) in ens.input.iter().enumerate() {
        let dims = input.reshape.as_ref().map_or(&input.dims, |r| &r.shape);
        if !index.contains_key(&input.name) {
            let mut t = Tensor::new(name, batching, Some(input.data_type), dims);
            t.site = Some(format!("input[{i}].name"));
            index.insert(input.name.clone(), tensors.len());
            tensors.push(t);
        }
    }
    let mut sink = Tensor::new(name, false, None, &[]);
    sink.site = Some("output".into());
    let sink_id = usize::MAX;
    let mut output_ids = Vec::new();
    for (i, output) in ens.output.iter().enumerate() {
        let dims = output.reshape.as_ref().map_or(&output.dims, |r| &r.shape);
        let id = *index.entry(output.name.clone()).or_insert_with(|| {
            let mut t = Tensor::new(name, batching, Some(output.data_type), dims);
            t.site = Some(format!("output[{i}].name"));
            tensors.push(t);
            tensors.len() - 1
        });
        output_ids.push(id);
    }
    for &id in &output_ids {
        sink.prev.push(id);
        tensors[id].next.push(sink_id);
    }

    let mut clean = true;
    for (i, step) in sched.step.iter().enumerate() {
        let sp = step_path(i);
        let Some(model) = steps.get(i).copied().flatten() else {
            clean = false;
            continue;
        };
        let mc = model.cfg;
        let s = step.model_name.as_str();
        if mc.max_batch_size != 0 && mc.max_batch_size < ens.max_batch_size {
            let mut d = Diagnostic::new(rule!("E0620"), String::new())
                .triton(format!(
                    "ensemble {name} allows maximum batch size {}, but it contains model {s} which only allows maximum batch size to be {}",
                    ens.max_batch_size, mc.max_batch_size
                ))
                .at_opt(span(&format!("{sp}.model_name")))
                .help(format!(
                    "lower the ensemble's max_batch_size to {} or raise {s}'s",
                    mc.max_batch_size
                ));
            if let Some(l) = exact("max_batch_size") {
                d = d.label(l, "the ensemble's max_batch_size is set here");
            }
            diags.push(d);
            clean = false;
        }
        let step_batching = mc.max_batch_size > 0;
        let mut step_ok = true;
        for (key, value) in &step.input_map {
            if !mc.input.iter().any(|x| &x.name == key) && !model.io_open {
                step_ok = false;
                let names: Vec<&str> = mc.input.iter().map(|x| x.name.as_str()).collect();
                diags.push(
                    Diagnostic::new(rule!("E0621"), String::new())
                        .triton(format!(
                            "in ensemble {name}, ensemble tensor {value} is mapping to non-existing input {key} in model {s}"
                        ))
                        .at_opt(span(&format!("{sp}.input_map{{{key}}}.key")))
                        .help(format!("the inputs of {s} are: {}", names.join(", "))),
                );
            }
        }
        let mut link_inputs = Vec::new();
        for input in &mc.input {
            match step.input_map.get(&input.name) {
                Some(value) => {
                    let rhs = Tensor::new(s, step_batching, Some(input.data_type), &input.dims);
                    let id = match index.get(value) {
                        Some(&id) => {
                            if let Some((code, text)) = consistency(name, value, &tensors[id], &rhs)
                            {
                                step_ok = false;
                                let path = format!("{sp}.input_map{{{}}}.value", input.name);
                                emit(&mut diags, code, &path, text, &tensors[id]);
                            }
                            id
                        }
                        None => {
                            index.insert(value.clone(), tensors.len());
                            tensors.push(rhs);
                            tensors.len() - 1
                        }
                    };
                    link_inputs.push(id);
                }
                None if input.optional => {}
                None => {
                    step_ok = false;
                    diags.push(
                        Diagnostic::new(rule!("E0622"), String::new())
                            .triton(format!(
                                "in ensemble {name}, input {} in model {s} is not mapped to any ensemble tensors",
                                input.name
                            ))
                            .at_opt(span(&format!("{sp}.model_name")))
                            .help(format!(
                                "add `input_map {{ key: \"{}\" value: \"<ensemble tensor>\" }}` to this step",
                                input.name
                            )),
                    );
                }
            }
        }
        // Map entries for inputs the config does not list (auto-complete
        // may add them): unknown type, linked all the same.
        if model.io_open {
            for (key, value) in &step.input_map {
                if !mc.input.iter().any(|x| &x.name == key) {
                    let id = *index.entry(value.clone()).or_insert_with(|| {
                        tensors.push(Tensor::new(s, step_batching, None, &[]));
                        tensors.len() - 1
                    });
                    link_inputs.push(id);
                }
            }
        }
        for (key, value) in &step.output_map {
            if !mc.output.iter().any(|x| &x.name == key) && !model.io_open {
                step_ok = false;
                let names: Vec<&str> = mc.output.iter().map(|x| x.name.as_str()).collect();
                diags.push(
                    Diagnostic::new(rule!("E0623"), String::new())
                        .triton(format!(
                            "in ensemble {name}, ensemble tensor {value} is mapped from non-existing output {key} in model {s}"
                        ))
                        .at_opt(span(&format!("{sp}.output_map{{{key}}}.key")))
                        .help(format!("the outputs of {s} are: {}", names.join(", "))),
                );
            }
        }
        let sibling = tensors.len();
        tensors.push(Tensor::new(s, false, None, &[]));
        let mut link_outputs = Vec::new();
        for (key, value) in &step.output_map {
            let found = mc.output.iter().find(|x| &x.name == key);
            let rhs = match found {
                Some(o) => Tensor::new(s, step_batching, Some(o.data_type), &o.dims),
                None if model.io_open => Tensor::new(s, step_batching, None, &[]),
                None => continue,
            };
            let value_path = format!("{sp}.output_map{{{key}}}.value");
            let id = match index.get(value) {
                Some(&id) => {
                    if let Some((code, text)) = consistency(name, value, &tensors[id], &rhs) {
                        step_ok = false;
                        emit(&mut diags, code, &value_path, text, &tensors[id]);
                    }
                    id
                }
                None => {
                    index.insert(value.clone(), tensors.len());
                    tensors.push(rhs);
                    tensors.len() - 1
                }
            };
            tensors[id].sibling = Some(sibling);
            tensors[id].decoupled = model.decoupled;
            tensors[id].site = Some(value_path);
            link_outputs.push(id);
        }
        if !step_ok {
            clean = false;
        }
        for &o in &link_outputs {
            for &p in &link_inputs {
                tensors[o].prev.push(p);
                tensors[p].next.push(o);
            }
        }
    }

    if !clean {
        return Composition {
            diagnostics: diags,
            decoupled: false,
        };
    }

    // Walk from the inputs, labelling tensors by the decoupled step they
    // descend from; a step whose inputs carry different labels is refused.
    let mut label = 0usize;
    let mut queue: VecDeque<usize> = VecDeque::new();
    for input in &ens.input {
        if let Some(&id) = index.get(&input.name) {
            tensors[id].visited = true;
            queue.push_back(id);
        }
    }
    let get = |tensors: &Vec<Tensor>, sink: &Tensor, id: usize| -> (bool, usize) {
        if id == sink_id {
            (sink.visited, sink.label)
        } else {
            (tensors[id].visited, tensors[id].label)
        }
    };
    while let Some(cur) = queue.pop_front() {
        let nexts = if cur == sink_id {
            Vec::new()
        } else {
            tensors[cur].next.clone()
        };
        for n in nexts {
            let node = if n == sink_id { &sink } else { &tensors[n] };
            if node.visited {
                continue;
            }
            if !node.prev.iter().all(|&p| get(&tensors, &sink, p).0) {
                continue;
            }
            let first = get(&tensors, &sink, node.prev[0]).1;
            if node
                .prev
                .iter()
                .any(|&p| get(&tensors, &sink, p).1 != first)
            {
                let path = node
                    .site
                    .clone()
                    .unwrap_or_else(|| "ensemble_scheduling".into());
                diags.push(
                    Diagnostic::new(rule!("E0626"), String::new())
                        .triton(format!(
                            "in ensemble {name}, step of model '{}' receives inputs originated from different decoupled models",
                            node.model
                        ))
                        .at_opt(span(&path))
                        .help("feed each step from at most one decoupled model's responses"),
                );
                return Composition {
                    diagnostics: diags,
                    decoupled: label != 0,
                };
            }
            let (decoupled, sibling) = (node.decoupled, node.sibling);
            let new_label = match sibling {
                Some(sb) if tensors[sb].visited => tensors[sb].label,
                Some(sb) => {
                    let l = if decoupled {
                        label += 1;
                        label
                    } else {
                        first
                    };
                    tensors[sb].label = l;
                    tensors[sb].visited = true;
                    l
                }
                None => {
                    if decoupled {
                        label += 1;
                        label
                    } else {
                        first
                    }
                }
            };
            let node = if n == sink_id {
                &mut sink
            } else {
                &mut tensors[n]
            };
            node.label = new_label;
            node.visited = true;
            queue.push_back(n);
        }
    }
    Composition {
        diagnostics: diags,
        decoupled: label != 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lint::ServerOptions;

    fn static_findings(src: &str) -> Vec<Diagnostic> {
        let parsed = ParsedConfig::parse(src.to_string());
        let raw = parsed.config.clone().expect("parses");
        let mut cfg = raw.clone();
        crate::config::normalize::normalize(&mut cfg);
        let opts = ServerOptions::default();
        let ctx = ModelCtx {
            name: &cfg.name,
            dir: None,
            raw: &raw,
            cfg: &cfg,
            file: &parsed,
            options: &opts,
        };
        let mut out = Vec::new();
        check(&ctx, &mut out);
        out
    }

    fn texts(d: &[Diagnostic]) -> Vec<String> {
        d.iter()
            .map(|d| d.triton_message.clone().unwrap_or_default())
            .collect()
    }

    const IO: &str = "input [ { name: \"IN\" data_type: TYPE_FP32 dims: [ 4 ] } ]\noutput [ { name: \"OUT\" data_type: TYPE_FP32 dims: [ 4 ] } ]\n";

    #[test]
    fn a_valid_chain_has_no_findings() {
        let src = format!(
            "name: \"e\" platform: \"ensemble\"\n{IO}ensemble_scheduling {{ step [\n{{ model_name: \"a\" model_version: -1 input_map {{ key: \"x\" value: \"IN\" }} output_map {{ key: \"y\" value: \"mid\" }} }},\n{{ model_name: \"b\" model_version: -1 input_map {{ key: \"x\" value: \"mid\" }} output_map {{ key: \"y\" value: \"OUT\" }} }} ] }}"
        );
        assert!(static_findings(&src).is_empty());
    }

    #[test]
    fn steps_and_maps_must_be_complete() {
        let d = static_findings(&format!(
            "name: \"e\" platform: \"ensemble\"\n{IO}ensemble_scheduling {{ }}"
        ));
        assert_eq!(texts(&d), vec!["must specify 'step' for ensemble 'e'"]);
        let d = static_findings(&format!(
            "name: \"e\" platform: \"ensemble\"\n{IO}ensemble_scheduling {{ step [ {{ model_name: \"a\" input_map {{ key: \"x\" value: \"IN\" }} output_map {{ key: \"y\" value: \"OUT\" }} }}, {{ model_name: \"b\" output_map {{ key: \"y\" value: \"z\" }} }} ] }}"
        ));
        assert_eq!(
            texts(&d),
            vec!["must specify 'input_map' in step 1 of ensemble 'e'"]
        );
        // The step is the primary location.
        assert!(d[0].span.is_some());
    }

    #[test]
    fn non_ensemble_platform_and_forbidden_sections() {
        let d = static_findings("name: \"m\" backend: \"python\" ensemble_scheduling { }");
        assert_eq!(
            texts(&d),
            vec!["ensemble scheduling cannot be set for model 'm' whose platform is not ensemble"]
        );
        let d = static_findings(&format!(
            "name: \"e\" platform: \"ensemble\"\n{IO}instance_group [ {{ kind: KIND_CPU }} ]\noptimization {{ }}\nmodel_warmup [ {{ name: \"w\" }} ]\nensemble_scheduling {{ step [ {{ model_name: \"a\" input_map {{ key: \"x\" value: \"IN\" }} output_map {{ key: \"y\" value: \"OUT\" }} }} ] }}"
        ));
        assert_eq!(
            texts(&d),
            vec![
                "instance group should not be specified for ensemble 'e'",
                "optimization should not be specified for ensemble 'e'",
                "model_warmup can not be specified for ensemble 'e'",
            ]
        );
    }

    #[test]
    fn data_flow_findings() {
        // Output written twice.
        let d = static_findings(&format!(
            "name: \"e\" platform: \"ensemble\"\n{IO}ensemble_scheduling {{ step [ {{ model_name: \"a\" input_map {{ key: \"x\" value: \"IN\" }} output_map {{ key: \"y\" value: \"OUT\" }} }}, {{ model_name: \"b\" input_map {{ key: \"x\" value: \"IN\" }} output_map {{ key: \"y\" value: \"OUT\" }} }} ] }}"
        ));
        assert_eq!(
            texts(&d),
            vec!["ensemble tensor 'OUT' can appear in an output map only once for ensemble 'e' step 1"]
        );
        assert_eq!(d[0].labels.len(), 1);
        // An input nobody reads (Triton's unbalanced quote kept).
        let d = static_findings(&format!(
            "name: \"e\" platform: \"ensemble\"\n{IO}input [ {{ name: \"SPARE\" data_type: TYPE_FP32 dims: [ 1 ] }} ]\nensemble_scheduling {{ step [ {{ model_name: \"a\" input_map {{ key: \"x\" value: \"IN\" }} output_map {{ key: \"y\" value: \"OUT\" }} }} ] }}"
        ));
        assert_eq!(
            texts(&d),
            vec!["ensemble input 'SPARE' for ensemble e' is not used"]
        );
        // An output fed from a tensor that nothing produces.
        let d = static_findings(&format!(
            "name: \"e\" platform: \"ensemble\"\n{IO}ensemble_scheduling {{ step [ {{ model_name: \"a\" input_map {{ key: \"x\" value: \"IN\" }} output_map {{ key: \"y\" value: \"t1\" }} }}, {{ model_name: \"b\" input_map {{ key: \"x\" value: \"t1\" }} input_map {{ key: \"z\" value: \"ghost\" }} output_map {{ key: \"y\" value: \"OUT\" }} }} ] }}"
        ));
        assert_eq!(
            texts(&d),
            vec!["output 'OUT' for ensemble 'e' is not written: at least one of its depending tensors, 'ghost', is not connected"]
        );
        // A step output that nobody reads.
        let d = static_findings(&format!(
            "name: \"e\" platform: \"ensemble\"\n{IO}ensemble_scheduling {{ step [ {{ model_name: \"a\" input_map {{ key: \"x\" value: \"IN\" }} output_map {{ key: \"y\" value: \"OUT\" }} output_map {{ key: \"w\" value: \"extra\" }} }} ] }}"
        ));
        assert_eq!(
            texts(&d),
            vec!["ensemble tensor 'extra' is unused in ensemble 'e'"]
        );
        // A cycle between two steps leaves the output unwritten.
        let d = static_findings(&format!(
            "name: \"e\" platform: \"ensemble\"\n{IO}ensemble_scheduling {{ step [ {{ model_name: \"a\" input_map {{ key: \"x\" value: \"IN\" }} input_map {{ key: \"z\" value: \"back\" }} output_map {{ key: \"y\" value: \"fwd\" }} }}, {{ model_name: \"b\" input_map {{ key: \"x\" value: \"fwd\" }} output_map {{ key: \"y\" value: \"back\" }} output_map {{ key: \"o\" value: \"OUT\" }} }} ] }}"
        ));
        assert_eq!(d.len(), 1);
        assert!(texts(&d)[0].starts_with("output 'OUT' for ensemble 'e' is not written"));
    }

    fn cfg(src: &str) -> (ModelConfig, ParsedConfig) {
        let p = ParsedConfig::parse(src.to_string());
        (p.config.clone().expect("parses"), p)
    }

    #[test]
    fn composition_maps_types_and_shapes() {
        let (ens, file) = cfg(&format!(
            "name: \"e\" platform: \"ensemble\" max_batch_size: 8\n{IO}ensemble_scheduling {{ step [ {{ model_name: \"a\" input_map {{ key: \"x\" value: \"IN\" }} output_map {{ key: \"y\" value: \"OUT\" }} }} ] }}"
        ));
        let (a, _) = cfg("name: \"a\" max_batch_size: 4 input [ { name: \"x\" data_type: TYPE_INT32 dims: [ 4 ] } ] output [ { name: \"y\" data_type: TYPE_FP32 dims: [ 2, 2 ] } ]");
        let step = StepModel {
            cfg: &a,
            decoupled: false,
            io_open: false,
        };
        let c = check_composition("e", &ens, &file, &[Some(step)]);
        assert_eq!(
            texts(&c.diagnostics),
            vec![
                "ensemble e allows maximum batch size 8, but it contains model a which only allows maximum batch size to be 4",
                "in ensemble e, ensemble tensor IN: inconsistent data type: TYPE_FP32 is inferred from model e while TYPE_INT32 is inferred from model a",
                "in ensemble e, ensemble tensor OUT: inconsistent shape: [-1,4] is inferred from model e while [-1,2,2] is inferred from model a",
            ]
        );
        // A non-batching [-1, 4] matches a batching [4] through full shapes.
        let (a, _) = cfg("name: \"a\" input [ { name: \"x\" data_type: TYPE_FP32 dims: [ -1, 4 ] } ] output [ { name: \"y\" data_type: TYPE_FP32 dims: [ -1, 4 ] } ]");
        let step = StepModel {
            cfg: &a,
            decoupled: false,
            io_open: false,
        };
        let c = check_composition("e", &ens, &file, &[Some(step)]);
        assert!(c.diagnostics.is_empty(), "{:?}", texts(&c.diagnostics));
        assert!(!c.decoupled);
        // Decoupled steps make the ensemble decoupled.
        let c = check_composition(
            "e",
            &ens,
            &file,
            &[Some(StepModel {
                decoupled: true,
                ..step
            })],
        );
        assert!(c.decoupled);
        // Unknown and unmapped names.
        let (a, _) = cfg("name: \"a\" input [ { name: \"p\" data_type: TYPE_FP32 dims: [ -1, 4 ] } ] output [ { name: \"q\" data_type: TYPE_FP32 dims: [ -1, 4 ] } ]");
        let step = StepModel {
            cfg: &a,
            decoupled: false,
            io_open: false,
        };
        let c = check_composition("e", &ens, &file, &[Some(step)]);
        assert_eq!(
            texts(&c.diagnostics),
            vec![
                "in ensemble e, ensemble tensor IN is mapping to non-existing input x in model a",
                "in ensemble e, input p in model a is not mapped to any ensemble tensors",
                "in ensemble e, ensemble tensor OUT is mapped from non-existing output y in model a",
            ]
        );
        // ...unless auto-complete may still add them.
        let c = check_composition(
            "e",
            &ens,
            &file,
            &[Some(StepModel {
                io_open: true,
                ..step
            })],
        );
        assert_eq!(
            texts(&c.diagnostics),
            vec!["in ensemble e, input p in model a is not mapped to any ensemble tensors"]
        );
    }
}
