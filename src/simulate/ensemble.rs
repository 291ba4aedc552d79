//! `simulate` on an ensemble: its composing models, found next to it in
//! the model repository, each with its own scheduler and instances, fed
//! as Triton's ensemble scheduler feeds them
//! ([`crate::batching::pipeline`], docs/spec/schedulers.md §5).
//!
//! [`plan`] is the one place that turns the configs into the steps and
//! models to simulate; [`latencies`] assigns `--latency MODEL=SPEC`;
//! [`simulate`] runs the trace and returns a [`Run`] that writes the JSON
//! document or the summary tables.

use super::load::{load_config, Loaded};
use super::replay::{replay_with, TraceInput};
use super::report::{self, ModelBatches};
use super::stats::{Percentiles, ReasonCount, Stats, Summary};
use super::{check_latency, read_latency, Error, Format};
use crate::batching::controls::ControlSpec;
use crate::batching::{
    simulate_pipeline, BatchRecord, Latency, Pipeline, PipelineModel, PipelineSink, PipelineStep,
    RequestRecord, Settings,
};
use crate::schema::inference::model_config::SchedulingChoice;
use crate::schema::inference::ModelConfig;
use crate::text::display::Untrusted;
use serde::Serialize;
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

/// Whether `cfg` is an ensemble (`ensemble_scheduling`).
pub fn is_ensemble(cfg: &ModelConfig) -> bool {
    matches!(
        cfg.scheduling_choice,
        Some(SchedulingChoice::EnsembleScheduling(_))
    )
}

/// A composing model as simulated.
pub struct Composing {
    pub name: String,
    pub settings: Settings,
    /// Its control tensors (sequence batching), for the JSON output.
    pub controls: Option<ControlSpec>,
}

/// An ensemble ready to run: its name, composing models (in the order
/// their steps first appear) and steps.
pub struct Plan {
    pub name: String,
    pub models: Vec<Composing>,
    pub steps: Vec<PipelineStep>,
}

/// Reads the composing models of the ensemble `base` from its repository
/// (the parent of its model directory) and derives the step graph from
/// the tensor names: a step waits for the steps producing its inputs that
/// are not ensemble inputs; a step producing an ensemble output is an
/// output step. A config with errors comes back as [`Error::Invalid`].
pub fn plan(base: &Loaded) -> Result<Plan, Error> {
    let cfg = base.config();
    let file = base.name();
    let name = if cfg.name.is_empty() {
        base.file
            .parent()
            .and_then(|d| d.file_name())
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
    } else {
        cfg.name.clone()
    };
    let Some(SchedulingChoice::EnsembleScheduling(es)) = &cfg.scheduling_choice else {
        return Err(Error::Input(format!("{file}: not an ensemble")));
    };
    let repo = match base.model_dir.as_deref().and_then(Path::parent) {
        Some(r) => {
            if r.as_os_str().is_empty() {
                Path::new(".")
            } else {
                r
            }
        }
        None => {
            return Err(Error::Usage(format!(
                "{file}: ensemble '{}': its composing models are looked up in its model repository; give the ensemble's model directory (--config REPO/{}) or its config.pbtxt inside it",
                Untrusted(&name),
                Untrusted(&name)
            )))
        }
    };
    if es.step.is_empty() {
        return Err(Error::Input(format!(
            "{file}: ensemble '{}' has no steps",
            Untrusted(&name)
        )));
    }
    let inputs: std::collections::HashSet<&str> =
        cfg.input.iter().map(|i| i.name.as_str()).collect();
    let outputs: std::collections::HashSet<&str> =
        cfg.output.iter().map(|o| o.name.as_str()).collect();
    let mut producer: HashMap<&str, usize> = HashMap::new();
    for (i, s) in es.step.iter().enumerate() {
        for t in s.output_map.values() {
            if let Some(j) = producer.insert(t.as_str(), i) {
                return Err(Error::Input(format!(
                    "{file}: ensemble '{}': steps {j} and {i} both produce tensor '{}'",
                    Untrusted(&name),
                    Untrusted(t)
                )));
            }
        }
    }
    let graph = crate::model::EnsembleGraph::of(cfg);
    let mut models: Vec<Composing> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    let mut steps = Vec::with_capacity(graph.steps.len());
    for (i, s) in graph.steps.iter().enumerate() {
        let model = match index.get(s.model.as_str()) {
            Some(&m) => m,
            None => {
                models.push(composing(repo, &base.gpus, &file, &name, i, &s.model)?);
                index.insert(s.model.as_str(), models.len() - 1);
                models.len() - 1
            }
        };
        if let Some((_, t)) = s
            .inputs
            .iter()
            .find(|(_, t)| !producer.contains_key(t.as_str()) && !inputs.contains(t.as_str()))
        {
            return Err(Error::Input(format!(
                "{file}: ensemble '{}': step {i} ('{}') reads tensor '{}', which is neither an ensemble input nor produced by a step",
                Untrusted(&name),
                Untrusted(&s.model),
                Untrusted(t)
            )));
        }
        let output = s.outputs.iter().any(|(_, t)| outputs.contains(t.as_str()));
        steps.push(PipelineStep {
            model,
            after: s.after.clone(),
            output,
        });
    }
    let plan = Plan {
        name,
        models,
        steps,
    };
    plan.pipeline(Vec::new())
        .check()
        .map_err(|e| Error::Input(format!("{file}: {e}")))?;
    Ok(plan)
}

/// Loads composing model `model` of step `step` from `repo`.
fn composing(
    repo: &Path,
    gpus: &[i32],
    file: &str,
    ensemble: &str,
    step: usize,
    model: &str,
) -> Result<Composing, Error> {
    let bad = model.is_empty()
        || model == "."
        || model == ".."
        || model.contains(['/', '\\'])
        || model.contains('\0');
    let dir = repo.join(model);
    if bad || !dir.is_dir() {
        return Err(Error::Input(format!(
            "{file}: ensemble '{}': step {step}: composing model '{}' is not a model directory in {}",
            Untrusted(ensemble),
            Untrusted(model),
            crate::text::display::path(repo)
        )));
    }
    let loaded = load_config(&dir, gpus)?;
    if is_ensemble(loaded.config()) {
        return Err(Error::Input(format!(
            "{}: composing model '{}' is itself an ensemble; tritonctl simulates one level of ensemble",
            loaded.name(),
            Untrusted(model)
        )));
    }
    let settings = loaded.settings(loaded.config())?;
    let controls = ControlSpec::from_config(loaded.config())
        .map_err(|e| Error::Input(format!("{}: {e}", loaded.name())))?
        .filter(|spec| !spec.is_empty());
    Ok(Composing {
        // The name steps use, which is the directory's.
        name: model.to_string(),
        settings,
        controls,
    })
}

impl Plan {
    /// The driver's input, with one latency model per composing model.
    fn pipeline(&self, latencies: Vec<Latency>) -> Pipeline {
        let mut latencies = latencies.into_iter();
        Pipeline {
            name: self.name.clone(),
            models: self
                .models
                .iter()
                .map(|m| PipelineModel {
                    settings: m.settings.clone(),
                    latencies: latencies.next().into_iter().collect(),
                })
                .collect(),
            steps: self.steps.clone(),
        }
    }

    /// The composing models' names, quoted, for messages.
    fn names(&self) -> String {
        self.models
            .iter()
            .map(|m| format!("'{}'", Untrusted(&m.name)))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A `--latency` value: the composing model it names (`MODEL=SPEC`) or
/// none (every model), and the latency.
pub type LatencySpec = (Option<String>, Latency);

/// Reads the `--latency` values. A value without `=` (or naming an
/// existing file, whose name may hold `=`) is a bare spec; otherwise the
/// part before the first `=` names a model.
pub fn read_latencies(specs: &[String]) -> Result<Vec<LatencySpec>, Error> {
    specs
        .iter()
        .map(|spec| match spec.split_once('=') {
            Some((model, rest)) if !Path::new(spec).is_file() => {
                Ok((Some(model.to_string()), read_latency(rest)?))
            }
            _ => Ok((None, read_latency(spec)?)),
        })
        .collect()
}

/// The latency of a single model (not an ensemble) named `model`: one
/// `--latency`, bare or naming that model.
pub fn single_latency(specs: Vec<LatencySpec>, model: &str) -> Result<Latency, Error> {
    if specs.len() != 1 {
        return Err(Error::Usage(format!(
            "--latency is given {} times; model '{}' takes one (MODEL=SPEC names the composing models of an ensemble)",
            specs.len(),
            Untrusted(model)
        )));
    }
    let (named, latency) = specs.into_iter().next().expect("one");
    match named {
        Some(n) if n != model => Err(Error::Usage(format!(
            "--latency {}=...: the model simulated is '{}'",
            Untrusted(&n),
            Untrusted(model)
        ))),
        _ => Ok(latency),
    }
}

/// The latency of each composing model of `plan` from the `--latency`
/// values: `MODEL=SPEC` for one model, a bare spec for every model not
/// named. Every model needs one.
pub fn latencies(plan: &Plan, specs: Vec<LatencySpec>) -> Result<Vec<Latency>, Error> {
    let mut default = None;
    let mut named: Vec<Option<Latency>> = vec![None; plan.models.len()];
    for (model, latency) in specs {
        match model {
            None => {
                if default.is_some() {
                    return Err(Error::Usage(
                        "--latency: more than one specification without MODEL=; name the composing model of each (MODEL=SPEC)".into(),
                    ));
                }
                default = Some(latency);
            }
            Some(model) => {
                let Some(m) = plan.models.iter().position(|c| c.name == model) else {
                    return Err(Error::Usage(format!(
                        "--latency {}=...: ensemble '{}' has no composing model of that name; its models: {}",
                        Untrusted(&model),
                        Untrusted(&plan.name),
                        plan.names()
                    )));
                };
                if named[m].is_some() {
                    return Err(Error::Usage(format!(
                        "--latency: model '{}' is given twice",
                        Untrusted(&model)
                    )));
                }
                named[m] = Some(latency);
            }
        }
    }
    let mut out = Vec::with_capacity(named.len());
    for (m, l) in named.into_iter().enumerate() {
        let l = match (l, &default) {
            (Some(l), _) => l,
            (None, Some(d)) => d.clone(),
            (None, None) => {
                return Err(Error::Usage(format!(
                    "--latency: no latency for composing model '{}' of ensemble '{}'; give --latency {}=SPEC or a SPEC without MODEL= for every model (models: {})",
                    Untrusted(&plan.models[m].name),
                    Untrusted(&plan.name),
                    Untrusted(&plan.models[m].name),
                    plan.names()
                )))
            }
        };
        check_latency(&l, &plan.models[m].settings, None).map_err(|e| match e {
            Error::Usage(msg) => Error::Usage(format!(
                "{msg} (model '{}')",
                Untrusted(&plan.models[m].name)
            )),
            other => other,
        })?;
        out.push(l);
    }
    Ok(out)
}

/// Counts the ensemble requests and the steps of each composing model.
struct EnsembleSink<'a> {
    end_to_end: &'a mut Stats,
    models: &'a mut [Stats],
}

impl PipelineSink for EnsembleSink<'_> {
    fn step_request(&mut self, model: usize, r: RequestRecord) {
        crate::batching::Sink::request(&mut self.models[model], r);
    }
    fn step_batch(&mut self, model: usize, b: BatchRecord) {
        crate::batching::Sink::batch(&mut self.models[model], b);
    }
    fn request(&mut self, r: RequestRecord) {
        crate::batching::Sink::request(self.end_to_end, r);
    }
    fn batch_lists(&self) -> bool {
        self.end_to_end.keep
    }
}

/// The end-to-end part of an ensemble's summary.
#[derive(Serialize)]
pub struct EnsembleSummary {
    pub ensemble: String,
    pub requests: u64,
    pub ok: u64,
    pub rejected: u64,
    pub timed_out: u64,
    pub throughput_per_s: f64,
    /// From an ensemble request's arrival to its response.
    pub latency_us: Percentiles,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub approximate_percentiles: bool,
    pub duration_us: u64,
    pub reasons: Vec<ReasonCount>,
    /// One summary per composing model, as a single model's run has it
    /// (its requests are the steps sent to it).
    pub models: Vec<ModelSummary>,
}

#[derive(Serialize)]
pub struct ModelSummary {
    pub model: String,
    #[serde(flatten)]
    pub summary: Summary,
}

/// A finished ensemble run, ready to be written.
pub struct Run {
    plan: Plan,
    end_to_end: Stats,
    models: Vec<Stats>,
    pub summary: EnsembleSummary,
}

/// Streams the trace at `trace` through the ensemble of `plan`, one
/// latency per composing model; warnings about the trace go to `warn`.
pub fn simulate(
    plan: Plan,
    latencies: Vec<Latency>,
    trace: &Path,
    format: Format,
    warn: &mut dyn FnMut(&str),
) -> Result<Run, Error> {
    let keep = format == Format::Json;
    let pipeline = plan.pipeline(latencies);
    let mut end_to_end = Stats::new(0, keep);
    let mut models: Vec<Stats> = plan
        .models
        .iter()
        .map(|m| Stats::batches_only(m.settings.instances, keep))
        .collect();
    {
        let mut sink = EnsembleSink {
            end_to_end: &mut end_to_end,
            models: &mut models,
        };
        let input = TraceInput::new(trace);
        replay_with(
            &input,
            |_| {},
            Some(warn),
            |requests| simulate_pipeline(&pipeline, requests, &mut sink),
        )?;
    }
    // JSON lists the ensemble requests in trace order (their tag).
    end_to_end.requests.sort_by_key(|r| r.tag);
    let e = end_to_end.summary();
    let summary = EnsembleSummary {
        ensemble: plan.name.clone(),
        requests: e.requests,
        ok: e.ok,
        rejected: e.rejected,
        timed_out: e.timed_out,
        throughput_per_s: e.throughput_per_s,
        latency_us: e.latency_us,
        approximate_percentiles: e.approximate_percentiles,
        duration_us: e.duration_us,
        reasons: e.reasons,
        models: plan
            .models
            .iter()
            .zip(models.iter_mut())
            .map(|(m, s)| {
                let mut summary = s.summary();
                super::stats::place_instances(&mut summary, &m.settings);
                ModelSummary {
                    model: m.name.clone(),
                    summary,
                }
            })
            .collect(),
    };
    Ok(Run {
        plan,
        end_to_end,
        models,
        summary,
    })
}

impl Run {
    /// The JSON document (a run made with [`Format::Json`] holds the
    /// records it lists).
    pub fn write_json(&self, out: &mut dyn Write) -> Result<(), Error> {
        let batches: Vec<ModelBatches> = self
            .plan
            .models
            .iter()
            .zip(&self.models)
            .map(|(m, s)| ModelBatches {
                model: &m.name,
                settings: &m.settings,
                controls: m.controls.as_ref(),
                batches: &s.batches,
            })
            .collect();
        report::write_ensemble_json(out, &self.end_to_end.requests, &batches, &self.summary)
    }

    /// The end-to-end summary, then one block of tables per composing
    /// model.
    pub fn write_human(&self, out: &mut dyn Write) -> Result<(), Error> {
        let s = &self.summary;
        writeln!(
            out,
            "ensemble '{}': {} step{} over {} composing model{} ({})",
            Untrusted(&self.plan.name),
            self.plan.steps.len(),
            if self.plan.steps.len() == 1 { "" } else { "s" },
            self.plan.models.len(),
            if self.plan.models.len() == 1 { "" } else { "s" },
            self.plan.names()
        )?;
        let mut t = report::new_table();
        t.set_header(vec![
            "requests",
            "ok",
            "rejected",
            "timed out",
            "throughput/s",
        ]);
        t.add_row(vec![
            s.requests.to_string(),
            s.ok.to_string(),
            s.rejected.to_string(),
            s.timed_out.to_string(),
            format!("{:.1}", s.throughput_per_s),
        ]);
        writeln!(out, "{t}")?;
        report::write_latency_table(out, &[("end to end", s.latency_us)])?;
        report::write_reasons_table(out, &s.reasons)?;
        for (m, ms) in self.plan.models.iter().zip(&s.models) {
            writeln!(out)?;
            report::write_human(out, &m.settings, &ms.summary)?;
        }
        Ok(())
    }
}
