//! Ensembles for `tritonctl run` (feature `run`).
//!
//! An ensemble has no scheduler of its own: each request's tensors flow
//! through the steps of `ensemble_scheduling`. A step of a request starts
//! as soon as every tensor its `input_map` names is available for that
//! request (the ensemble's inputs, or the `output_map` results of earlier
//! steps), as Triton's ensemble scheduler does: every composing model
//! (looked up next to the ensemble, in the same model repository) runs on
//! its own thread with its own scheduler and state, fed request by request
//! ([`super::runner::run_model_streaming`]), so that while the first step
//! works on later requests the second already runs the earlier ones. Each
//! step receives the requests in the ensemble's request order, so batching
//! and sequence order work as for requests sent to the composing model
//! directly; the ensemble request's sequence id and START/END flags are
//! passed on, so a stateful composing model keeps its state per sequence.
//! A request that fails in a step fails as a whole, with the step named,
//! and goes no further. (Nested ensembles run step after step over all
//! requests instead.)

use super::input::RunRequest;
use super::model::{load_model, LoadedModel};
use super::output::RunResult;
use super::runner::{
    run_model, run_model_owned, run_model_streaming, RunOptions, RunOutput, RunnerError,
};
use crate::schema::inference::model_config::SchedulingChoice;
use crate::schema::inference::ModelEnsembling;
use crate::tensor::NamedTensors;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

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

/// [`run`] on requests it may consume (see [`run_model_owned`]: a single
/// model frees each request's tensors once they are in a batch).
pub fn run_owned(
    model: &LoadedModel,
    requests: Vec<RunRequest>,
    opts: &RunOptions,
) -> Result<RunOutput, RunnerError> {
    if model.is_ensemble() {
        run_ensemble(model, &requests, opts, 0)
    } else {
        run_model_owned(model, requests, opts)
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

    if !models.iter().any(LoadedModel::is_ensemble) {
        return pipelined(model, es, &models, requests, opts);
    }

    let n = requests.len();
    let mut pools: Vec<NamedTensors> = requests.iter().map(|r| r.inputs.clone()).collect();
    let mut errors: Vec<Option<String>> = vec![None; n];
    let mut executions: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    let mut activity = Vec::new();
    let mut elapsed = std::time::Duration::ZERO;
    for &s in &order {
        let step = &es.step[s];
        let alive: Vec<usize> = (0..n).filter(|&i| errors[i].is_none()).collect();
        if alive.is_empty() {
            break;
        }
        let mut sub = Vec::with_capacity(alive.len());
        for &i in &alive {
            sub.push(step_request(step, &requests[i], &pools[i]));
        }
        let out = run_inner(&models[s], &sub, opts, depth)?;
        elapsed += out.elapsed;
        activity.extend(out.activity);
        if depth == 0 {
            for (b, v) in out.executions {
                executions.entry(b).or_default().extend(v);
            }
        }
        for (k, res) in out.results.into_iter().enumerate() {
            let i = alive[k];
            absorb(step, res, &mut pools[i], &mut errors[i]);
        }
    }
    Ok(RunOutput {
        results: final_results(model, requests, &pools, errors),
        executions,
        elapsed,
        activity,
    })
}

/// The request step `step` gets for ensemble request `r`, whose tensors
/// so far are `pool`.
fn step_request(
    step: &crate::schema::inference::model_ensembling::Step,
    r: &RunRequest,
    pool: &NamedTensors,
) -> RunRequest {
    let inputs = step
        .input_map
        .iter()
        .filter_map(|(inner, outer)| pool.get(outer).map(|t| (inner.clone(), t.clone())))
        .collect();
    RunRequest {
        inputs,
        ..r.clone()
    }
}

/// Takes a step's result for one request: its `output_map` tensors join
/// the request's `pool`, or the request fails (first error kept).
fn absorb(
    step: &crate::schema::inference::model_ensembling::Step,
    res: RunResult,
    pool: &mut NamedTensors,
    error: &mut Option<String>,
) {
    match res.outcome {
        Ok(outs) => {
            for (inner, outer) in &step.output_map {
                match outs.iter().find(|(n, _)| n == inner) {
                    Some((_, t)) => {
                        pool.insert(outer.clone(), t.clone());
                    }
                    None => {
                        error.get_or_insert_with(|| {
                            format!(
                                "ensemble step '{}': the model returned no output '{inner}'",
                                step.model_name
                            )
                        });
                    }
                }
            }
        }
        Err(e) => {
            error.get_or_insert_with(|| format!("ensemble step '{}': {e}", step.model_name));
        }
    }
}

/// The ensemble's results, in request order: its outputs from each
/// request's pool, or the request's error.
fn final_results(
    model: &LoadedModel,
    requests: &[RunRequest],
    pools: &[NamedTensors],
    errors: Vec<Option<String>>,
) -> Vec<RunResult> {
    requests
        .iter()
        .zip(errors)
        .enumerate()
        .map(|(i, (r, error))| {
            let outcome = match error {
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
        .collect()
}

fn run_inner(
    model: &LoadedModel,
    requests: &[RunRequest],
    opts: &RunOptions,
    depth: usize,
) -> Result<RunOutput, RunnerError> {
    // Composing models run on the run's device.
    let inner = RunOptions {
        progress: None,
        instance_devices: Vec::new(),
        ..*opts
    };
    if model.is_ensemble() {
        run_ensemble(model, requests, &inner, depth + 1)
    } else {
        run_model(model, requests, &inner)
    }
}

/// One step's result for the router: (step, request number within the
/// step, result).
type StepResult = (usize, usize, RunResult);

/// The request number of a step's message saying that the step failed as
/// a whole (its error as the outcome).
const STEP_FAILED: usize = usize::MAX;

/// The request number of a step's message saying that its sessions are
/// open.
const STEP_READY: usize = usize::MAX - 1;

/// Runs the steps concurrently, each request going on to the next step as
/// soon as its inputs are there (see the module docs).
fn pipelined(
    model: &LoadedModel,
    es: &ModelEnsembling,
    models: &[LoadedModel],
    requests: &[RunRequest],
    opts: &RunOptions,
) -> Result<RunOutput, RunnerError> {
    let n = requests.len();
    let steps = es.step.len();
    let mut pools: Vec<NamedTensors> = requests.iter().map(|r| r.inputs.clone()).collect();
    let mut errors: Vec<Option<String>> = vec![None; n];
    // Per step: the next request to consider (requests go to a step in
    // order), and which request each of its numbers is.
    let mut cursor = vec![0usize; steps];
    let mut sent: Vec<Vec<usize>> = vec![Vec::new(); steps];
    let mut outstanding = 0usize;
    // Per request: results still to come from its steps; finished requests
    // (all steps returned, or failed) for the progress callback.
    let mut left = vec![steps; n];
    let mut finished = 0usize;
    let (done_tx, done_rx) = std::sync::mpsc::channel::<StepResult>();
    // Composing models run on the run's device.
    let inner = RunOptions {
        progress: None,
        instance_devices: Vec::new(),
        ..*opts
    };
    let (outputs, started) = std::thread::scope(|scope| -> Result<_, RunnerError> {
        let mut inboxes = Vec::with_capacity(steps);
        let mut handles = Vec::with_capacity(steps);
        for (s, m) in models.iter().enumerate() {
            let (tx, rx) = std::sync::mpsc::channel::<RunRequest>();
            inboxes.push(Some(tx));
            let done = done_tx.clone();
            let inner = &inner;
            handles.push(scope.spawn(move || {
                let send = |k: usize, r: RunResult| {
                    // The router is gone only when it failed itself.
                    let _ = done.send((s, k, r));
                };
                let ready = || {
                    send(
                        STEP_READY,
                        RunResult {
                            id: String::new(),
                            sequence_id: None,
                            outcome: Ok(Vec::new()),
                        },
                    )
                };
                let out = run_model_streaming(m, rx, &send, &ready, inner);
                if let Err(e) = &out {
                    // Tells the router, which would otherwise wait for the
                    // results of this step's requests.
                    send(
                        STEP_FAILED,
                        RunResult {
                            id: String::new(),
                            sequence_id: None,
                            outcome: Err(e.to_string()),
                        },
                    );
                }
                out
            }));
        }
        drop(done_tx);
        // Every step opens its sessions first (as Triton loads the
        // composing models before the ensemble serves), so that the clock
        // and the first requests start together.
        let mut waiting = steps;
        while waiting > 0 {
            match done_rx.recv() {
                Ok((_, STEP_READY, _)) => waiting -= 1,
                Ok((s, STEP_FAILED, res)) => {
                    return Err(RunnerError::Setup(format!(
                        "ensemble '{}': step '{}': {}",
                        model.name,
                        es.step[s].model_name,
                        res.outcome.err().unwrap_or_default()
                    )))
                }
                Ok(_) | Err(_) => {
                    return Err(RunnerError::Setup(format!(
                        "ensemble '{}': a step stopped before it was ready",
                        model.name
                    )))
                }
            }
        }
        let started = std::time::Instant::now();
        // Hands each step the requests that are ready for it, in order;
        // closes a step's inbox once every request went to it or failed.
        let dispatch = |cursor: &mut Vec<usize>,
                        sent: &mut Vec<Vec<usize>>,
                        inboxes: &mut Vec<Option<std::sync::mpsc::Sender<RunRequest>>>,
                        pools: &[NamedTensors],
                        errors: &[Option<String>],
                        outstanding: &mut usize,
                        released: usize| {
            for s in 0..steps {
                let step = &es.step[s];
                while cursor[s] < released {
                    let i = cursor[s];
                    if errors[i].is_none() {
                        if !step.input_map.values().all(|v| pools[i].contains_key(v)) {
                            break;
                        }
                        let sub = step_request(step, &requests[i], &pools[i]);
                        if let Some(tx) = &inboxes[s] {
                            if tx.send(sub).is_ok() {
                                sent[s].push(i);
                                *outstanding += 1;
                            }
                        }
                    }
                    cursor[s] += 1;
                }
                if cursor[s] == n {
                    inboxes[s] = None;
                }
            }
        };
        // Requests are released at their arrival times (in request order;
        // without one, at once); later steps get them as soon as their
        // inputs are there.
        let mut release_at = Vec::with_capacity(n);
        let mut last = 0u64;
        for r in requests {
            last = last.max(r.arrival_us.unwrap_or(0));
            release_at.push(last);
        }
        let release = |released: &mut usize| {
            let now = started.elapsed().as_micros() as u64;
            while *released < n && release_at[*released] <= now {
                *released += 1;
            }
        };
        let mut released = 0;
        release(&mut released);
        dispatch(
            &mut cursor,
            &mut sent,
            &mut inboxes,
            &pools,
            &errors,
            &mut outstanding,
            released,
        );
        while outstanding > 0 || released < n {
            let msg = if released < n {
                let now = started.elapsed().as_micros() as u64;
                let wait = Duration::from_micros(release_at[released].saturating_sub(now));
                match done_rx.recv_timeout(wait) {
                    Ok(m) => Some(m),
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => None,
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
                }
            } else {
                match done_rx.recv() {
                    Ok(m) => Some(m),
                    Err(_) => break,
                }
            };
            let Some((s, k, res)) = msg else {
                release(&mut released);
                dispatch(
                    &mut cursor,
                    &mut sent,
                    &mut inboxes,
                    &pools,
                    &errors,
                    &mut outstanding,
                    released,
                );
                continue;
            };
            let step = &es.step[s];
            if k == STEP_READY {
                continue;
            }
            if k == STEP_FAILED {
                let e = res.outcome.err().unwrap_or_default();
                return Err(RunnerError::Setup(format!(
                    "ensemble '{}': step '{}': {e}",
                    model.name, step.model_name
                )));
            }
            outstanding -= 1;
            let i = sent[s][k];
            absorb(step, res, &mut pools[i], &mut errors[i]);
            if left[i] > 0 {
                left[i] -= 1;
                if left[i] == 0 || errors[i].is_some() {
                    left[i] = 0;
                    finished += 1;
                    if let Some(p) = opts.progress {
                        p(finished, n);
                    }
                }
            }
            release(&mut released);
            dispatch(
                &mut cursor,
                &mut sent,
                &mut inboxes,
                &pools,
                &errors,
                &mut outstanding,
                released,
            );
        }
        // Every inbox is closed by now (each cursor reached the end), so
        // every step returns.
        inboxes.clear();
        handles
            .into_iter()
            .zip(&es.step)
            .map(|(h, step)| {
                h.join()
                    .unwrap_or_else(|_| Err(RunnerError::Setup("it panicked".into())))
                    .map_err(|e| {
                        RunnerError::Setup(format!(
                            "ensemble '{}': step '{}': {e}",
                            model.name, step.model_name
                        ))
                    })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(|outputs| (outputs, started))
    })?;
    let mut executions: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    let mut activity = Vec::new();
    for out in outputs {
        for (b, v) in out.executions {
            executions.entry(b).or_default().extend(v);
        }
        activity.extend(out.activity);
    }
    Ok(RunOutput {
        results: final_results(model, requests, &pools, errors),
        executions,
        elapsed: started.elapsed(),
        activity,
    })
}
