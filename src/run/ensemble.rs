//! Ensembles for `tritonctl run` (feature `run`).
//!
//! An ensemble has no scheduler of its own: each request's tensors flow
//! through the steps of `ensemble_scheduling`. A step starts once every
//! tensor its `input_map` names is available (the ensemble's inputs, or
//! the `output_map` results of earlier steps); steps are therefore run in
//! data-flow order, each on its composing model (looked up next to the
//! ensemble, in the same model repository) with that model's own
//! scheduler and state. Every request of the step goes through the
//! composing model's scheduler, so batching and sequence order work as for
//! a request sent to it directly; the ensemble request's sequence id and
//! START/END flags are passed on, so a stateful composing model keeps its
//! state per sequence. A request that fails in a step fails as a whole,
//! with the step named.

use super::input::RunRequest;
use super::model::{load_model, LoadedModel};
use super::output::RunResult;
use super::runner::{run_model, RunOptions, RunOutput, RunnerError};
use crate::schema::inference::model_config::SchedulingChoice;
use crate::tensor::Tensor;
use std::collections::{BTreeMap, BTreeSet};

/// Runs `requests` on `model`, an ensemble or a single model.
pub fn run(
    model: &LoadedModel,
    requests: &[RunRequest],
    opts: &RunOptions,
) -> Result<RunOutput, RunnerError> {
    if model.is_ensemble() {
        run_ensemble(model, requests, opts, 0)
    } else {
        run_model(model, requests, opts)
    }
}

fn run_ensemble(
    model: &LoadedModel,
    requests: &[RunRequest],
    opts: &RunOptions,
    depth: usize,
) -> Result<RunOutput, RunnerError> {
    if depth > 8 {
        return Err(RunnerError::Setup(format!(
            "ensemble '{}': ensembles nested too deeply",
            model.name
        )));
    }
    let Some(SchedulingChoice::EnsembleScheduling(es)) = &model.cfg.scheduling_choice else {
        return Err(RunnerError::Setup(format!(
            "ensemble '{}' has no ensemble_scheduling",
            model.name
        )));
    };
    let repo = model
        .dir
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default();
    // Data-flow order.
    let mut available: BTreeSet<String> = model.cfg.input.iter().map(|i| i.name.clone()).collect();
    let mut pending: Vec<usize> = (0..es.step.len()).collect();
    let mut order = Vec::new();
    while !pending.is_empty() {
        let ready = pending
            .iter()
            .position(|&s| es.step[s].input_map.values().all(|v| available.contains(v)));
        let Some(p) = ready else {
            let s = &es.step[pending[0]];
            let missing: Vec<&String> = s
                .input_map
                .values()
                .filter(|v| !available.contains(*v))
                .collect();
            return Err(RunnerError::Setup(format!(
                "ensemble '{}': step '{}' waits for tensors no step produces: {}",
                model.name,
                s.model_name,
                missing
                    .iter()
                    .map(|m| format!("'{m}'"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        };
        let s = pending.remove(p);
        available.extend(es.step[s].output_map.values().cloned());
        order.push(s);
    }
    // Load the composing models.
    let mut models = Vec::with_capacity(es.step.len());
    for step in &es.step {
        let version = (step.model_version > 0).then_some(step.model_version as u64);
        let m = load_model(&repo.join(&step.model_name), version).map_err(|e| {
            RunnerError::Setup(format!(
                "ensemble '{}': composing model '{}': {e}",
                model.name, step.model_name
            ))
        })?;
        models.push(m);
    }

    let n = requests.len();
    let mut pools: Vec<BTreeMap<String, Tensor>> =
        requests.iter().map(|r| r.inputs.clone()).collect();
    let mut errors: Vec<Option<String>> = vec![None; n];
    let mut executions: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    let mut elapsed = std::time::Duration::ZERO;
    for &s in &order {
        let step = &es.step[s];
        let alive: Vec<usize> = (0..n).filter(|&i| errors[i].is_none()).collect();
        if alive.is_empty() {
            break;
        }
        let mut sub = Vec::with_capacity(alive.len());
        for &i in &alive {
            let r = &requests[i];
            let mut inputs = BTreeMap::new();
            for (inner, outer) in &step.input_map {
                if let Some(t) = pools[i].get(outer) {
                    inputs.insert(inner.clone(), t.clone());
                }
            }
            sub.push(RunRequest {
                inputs,
                ..r.clone()
            });
        }
        let out = run_inner(&models[s], &sub, opts, depth)?;
        elapsed += out.elapsed;
        if depth == 0 {
            for (b, v) in out.executions {
                executions.entry(b).or_default().extend(v);
            }
        }
        for (k, res) in out.results.into_iter().enumerate() {
            let i = alive[k];
            match res.outcome {
                Ok(outs) => {
                    for (inner, outer) in &step.output_map {
                        match outs.iter().find(|(n, _)| n == inner) {
                            Some((_, t)) => {
                                pools[i].insert(outer.clone(), t.clone());
                            }
                            None => {
                                errors[i] = Some(format!(
                                    "ensemble step '{}': the model returned no output '{inner}'",
                                    step.model_name
                                ))
                            }
                        }
                    }
                }
                Err(e) => errors[i] = Some(format!("ensemble step '{}': {e}", step.model_name)),
            }
        }
    }
    let results = requests
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let outcome = match errors[i].take() {
                Some(e) => Err(e),
                None => model
                    .cfg
                    .output
                    .iter()
                    .map(|o| {
                        pools[i]
                            .get(&o.name)
                            .map(|t| (o.name.clone(), t.clone()))
                            .ok_or_else(|| format!("no step produced output '{}'", o.name))
                    })
                    .collect(),
            };
            RunResult {
                id: r.id.clone(),
                sequence_id: r.sequence_id.clone(),
                outcome,
            }
        })
        .collect();
    Ok(RunOutput {
        results,
        executions,
        elapsed,
    })
}

fn run_inner(
    model: &LoadedModel,
    requests: &[RunRequest],
    opts: &RunOptions,
    depth: usize,
) -> Result<RunOutput, RunnerError> {
    let inner = RunOptions {
        device: opts.device,
        progress: None,
    };
    if model.is_ensemble() {
        run_ensemble(model, requests, &inner, depth + 1)
    } else {
        run_model(model, requests, &inner)
    }
}
