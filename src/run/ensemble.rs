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
//! and goes no further.
//!
//! A step whose model is itself an ensemble is replaced by that
//! ensemble's steps ([`flatten`]), their tensors renamed into the outer
//! ensemble's (the nested ensemble's inputs and outputs become the outer
//! tensors its step maps them to, its inner tensors get names no config
//! can write), so nested ensembles are pipelined per request too. The
//! top-level ensemble's `reshape`s apply to its inputs and outputs as for
//! any model ([`crate::run::reshape`]); a nested ensemble with a
//! `reshape` on its inputs or outputs is refused.
//!
//! Every composing model is checked before any request runs: a backend
//! `run` cannot execute stops the run naming the step's model and backend
//! ([`super::model::check_backend`]).

use super::input::RunRequest;
use super::model::{load_model, LoadedModel};
use super::output::RunResult;
use super::reshape::Reshape;
use super::runner::{
    run_model, run_model_owned, run_model_streaming, RunOptions, RunOutput, RunnerError,
};
use crate::schema::inference::model_config::SchedulingChoice;
use crate::tensor::NamedTensors;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::Duration;

/// Runs `requests` on `model`, an ensemble or a single model.
pub fn run(
    model: &LoadedModel,
    requests: &[RunRequest],
    opts: &RunOptions,
) -> Result<RunOutput, RunnerError> {
    if model.is_ensemble() {
        run_ensemble(model, requests, opts, None)
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
        run_ensemble(model, &requests, opts, None)
    } else {
        run_model_owned(model, requests, opts)
    }
}

/// What the router of an ensemble run did, in the order it did it (for
/// tests: the order in which requests went to the steps and came back,
/// which shows per-request pipelining without reading a clock).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepEvent {
    /// Request `request` (its index in the input) was handed to `step`
    /// (the step's label: nested steps as `outer/inner`).
    Sent { step: String, request: usize },
    /// `step` returned its result for `request`.
    Answered { step: String, request: usize },
}

/// [`run`] on an ensemble, recording [`StepEvent`]s into `log`.
pub fn run_logged(
    model: &LoadedModel,
    requests: &[RunRequest],
    opts: &RunOptions,
    log: &Mutex<Vec<StepEvent>>,
) -> Result<RunOutput, RunnerError> {
    run_ensemble(model, requests, opts, Some(log))
}

/// Ensembles nested deeper than this are refused.
const MAX_DEPTH: usize = 8;

/// At most this many executing steps once nested ensembles are expanded
/// (each has its own thread and sessions; an ensemble that uses a nested
/// ensemble several times at each level grows exponentially).
const MAX_STEPS: usize = 256;

/// A step that executes a model (nested ensembles expanded), its tensors
/// named as in the top-level ensemble.
struct Leaf {
    model: LoadedModel,
    /// (model input, ensemble tensor).
    inputs: Vec<(String, String)>,
    /// (model output, ensemble tensor).
    outputs: Vec<(String, String)>,
    /// The step's model name, after those of the nested ensembles' steps
    /// it is in (`inner/leaf`).
    label: String,
}

/// Marks the names of a nested ensemble's own tensors: `\0<n>\0<name>`
/// (no config can write a NUL), so that they never meet the outer ones.
const INNER: char = '\0';

/// A tensor's name as the user wrote it (without the mark of [`INNER`]).
fn shown(name: &str) -> &str {
    if name.starts_with(INNER) {
        name.rsplit(INNER).next().unwrap_or(name)
    } else {
        name
    }
}

/// The steps of `model` with its nested ensembles expanded (see the module
/// documentation), each composing model loaded and checked. Walks the
/// nesting with an explicit stack.
fn flatten(model: &LoadedModel) -> Result<Vec<Leaf>, RunnerError> {
    let fail = |m: String| RunnerError::Setup(format!("ensemble '{}': {m}", model.name));
    let repo = model
        .dir
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default();
    struct Frame {
        model: LoadedModel,
        /// Its inputs and outputs: their names in the top-level ensemble.
        outer: BTreeMap<String, String>,
        /// Prefix of its own tensors' names (empty at the top level).
        prefix: String,
        label: String,
        depth: usize,
    }
    let mut stack = vec![Frame {
        model: model.clone(),
        outer: BTreeMap::new(),
        prefix: String::new(),
        label: String::new(),
        depth: 0,
    }];
    let mut leaves = Vec::new();
    let mut nested = 0usize;
    while let Some(f) = stack.pop() {
        let Some(SchedulingChoice::EnsembleScheduling(es)) = &f.model.cfg.scheduling_choice else {
            return Err(fail(format!(
                "ensemble '{}' has no ensemble_scheduling",
                f.model.name
            )));
        };
        let global = |name: &String| {
            f.outer
                .get(name)
                .cloned()
                .unwrap_or_else(|| format!("{}{name}", f.prefix))
        };
        for step in &es.step {
            let label = if f.label.is_empty() {
                step.model_name.clone()
            } else {
                format!("{}/{}", f.label, step.model_name)
            };
            let version = (step.model_version > 0).then_some(step.model_version as u64);
            let m = load_model(&repo.join(&step.model_name), version)
                .map_err(|e| fail(format!("composing model '{label}': {e}")))?;
            let inputs: Vec<(String, String)> = step
                .input_map
                .iter()
                .map(|(k, v)| (k.clone(), global(v)))
                .collect();
            let outputs: Vec<(String, String)> = step
                .output_map
                .iter()
                .map(|(k, v)| (k.clone(), global(v)))
                .collect();
            if m.is_ensemble() {
                if f.depth + 1 > MAX_DEPTH {
                    return Err(fail(format!(
                        "ensembles nested too deeply (more than {MAX_DEPTH} levels, at '{label}')"
                    )));
                }
                if !Reshape::inputs(&m.cfg).is_empty() || !Reshape::outputs(&m.cfg).is_empty() {
                    return Err(fail(format!(
                        "nested ensemble '{label}' has a reshape on its inputs or outputs, which tritonctl run does not support; move the reshape to the composing models"
                    )));
                }
                nested += 1;
                stack.push(Frame {
                    model: m,
                    outer: inputs.into_iter().chain(outputs).collect(),
                    prefix: format!("{INNER}{nested}{INNER}"),
                    label,
                    depth: f.depth + 1,
                });
            } else {
                leaves.push(Leaf {
                    model: m,
                    inputs,
                    outputs,
                    label,
                });
            }
            if leaves.len() + stack.len() > MAX_STEPS {
                return Err(fail(format!(
                    "more than {MAX_STEPS} steps once nested ensembles are expanded"
                )));
            }
        }
    }
    Ok(leaves)
}

fn run_ensemble(
    model: &LoadedModel,
    requests: &[RunRequest],
    opts: &RunOptions,
    log: Option<&Mutex<Vec<StepEvent>>>,
) -> Result<RunOutput, RunnerError> {
    let leaves = flatten(model)?;
    // Every step's inputs must come from somewhere (in data-flow order).
    let mut available: BTreeSet<&str> = model.cfg.input.iter().map(|i| i.name.as_str()).collect();
    let mut pending: Vec<usize> = (0..leaves.len()).collect();
    while !pending.is_empty() {
        let ready = pending.iter().position(|&s| {
            leaves[s]
                .inputs
                .iter()
                .all(|(_, v)| available.contains(v.as_str()))
        });
        let Some(p) = ready else {
            let s = &leaves[pending[0]];
            let missing: Vec<String> = s
                .inputs
                .iter()
                .filter(|(_, v)| !available.contains(v.as_str()))
                .map(|(_, v)| format!("'{}'", shown(v)))
                .collect();
            return Err(RunnerError::Setup(format!(
                "ensemble '{}': step '{}' waits for tensors no step produces: {}",
                model.name,
                s.label,
                missing.join(", ")
            )));
        };
        let s = pending.remove(p);
        available.extend(leaves[s].outputs.iter().map(|(_, v)| v.as_str()));
    }
    pipelined(model, &leaves, requests, opts, log)
}

/// The ensemble's own inputs as its steps see them: a `reshape` of an
/// ensemble input applies to the request's tensor (as for any model).
fn entry_pool(model: &LoadedModel, r: &RunRequest) -> Result<NamedTensors, String> {
    let mut pool = r.inputs.clone();
    let batched = model.cfg.max_batch_size > 0;
    for rs in Reshape::inputs(&model.cfg) {
        if let Some(t) = pool.get(&rs.name) {
            let shape = rs.to_model(&t.shape, batched)?;
            let t = crate::tensor::Tensor {
                shape,
                data: t.data.clone(),
            };
            pool.insert(rs.name, t);
        }
    }
    Ok(pool)
}

/// The request step `step` gets for ensemble request `r`, whose tensors
/// so far are `pool`.
fn step_request(step: &Leaf, r: &RunRequest, pool: &NamedTensors) -> RunRequest {
    let inputs = step
        .inputs
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
fn absorb(step: &Leaf, res: RunResult, pool: &mut NamedTensors, error: &mut Option<String>) {
    match res.outcome {
        Ok(outs) => {
            for (inner, outer) in &step.outputs {
                match outs.iter().find(|(n, _)| n == inner) {
                    Some((_, t)) => {
                        pool.insert(outer.clone(), t.clone());
                    }
                    None => {
                        error.get_or_insert_with(|| {
                            format!(
                                "ensemble step '{}': the model returned no output '{inner}'",
                                step.label
                            )
                        });
                    }
                }
            }
        }
        Err(e) => {
            error.get_or_insert_with(|| format!("ensemble step '{}': {e}", step.label));
        }
    }
}

/// The ensemble's results, in request order: its outputs from each
/// request's pool (a `reshape` of an ensemble output turned back into its
/// `dims`), or the request's error.
fn final_results(
    model: &LoadedModel,
    requests: &[RunRequest],
    pools: &[NamedTensors],
    errors: Vec<Option<String>>,
) -> Vec<RunResult> {
    let reshapes = Reshape::outputs(&model.cfg);
    let batched = model.cfg.max_batch_size > 0;
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
                        let mut t = pools[i]
                            .get(&o.name)
                            .cloned()
                            .ok_or_else(|| format!("no step produced output '{}'", o.name))?;
                        if let Some(rs) = reshapes.iter().find(|rs| rs.name == o.name) {
                            t.shape = rs.to_client(&t.shape, batched)?;
                        }
                        Ok((o.name.clone(), t))
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
    leaves: &[Leaf],
    requests: &[RunRequest],
    opts: &RunOptions,
    log: Option<&Mutex<Vec<StepEvent>>>,
) -> Result<RunOutput, RunnerError> {
    let n = requests.len();
    let steps = leaves.len();
    let mut pools: Vec<NamedTensors> = Vec::with_capacity(n);
    let mut errors: Vec<Option<String>> = Vec::with_capacity(n);
    for r in requests {
        match entry_pool(model, r) {
            Ok(p) => {
                pools.push(p);
                errors.push(None);
            }
            Err(e) => {
                pools.push(NamedTensors::default());
                errors.push(Some(format!("request {}: {e}", r.id)));
            }
        }
    }
    let note = |e: StepEvent| {
        if let Some(log) = log {
            if let Ok(mut v) = log.lock() {
                v.push(e);
            }
        }
    };
    // Per step: the next request to consider (requests go to a step in
    // order), and which request each of its numbers is.
    let mut cursor = vec![0usize; steps];
    let mut sent: Vec<Vec<usize>> = vec![Vec::new(); steps];
    let mut outstanding = 0usize;
    // Per request: results still to come from its steps; finished requests
    // (all steps returned, or failed) for the progress callback.
    let mut left: Vec<usize> = errors
        .iter()
        .map(|e| if e.is_some() { 0 } else { steps })
        .collect();
    let mut finished = errors.iter().filter(|e| e.is_some()).count();
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
        for (s, m) in leaves.iter().map(|l| &l.model).enumerate() {
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
                        leaves[s].label,
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
                let step = &leaves[s];
                while cursor[s] < released {
                    let i = cursor[s];
                    if errors[i].is_none() {
                        if !step.inputs.iter().all(|(_, v)| pools[i].contains_key(v)) {
                            break;
                        }
                        let sub = step_request(step, &requests[i], &pools[i]);
                        if let Some(tx) = &inboxes[s] {
                            if tx.send(sub).is_ok() {
                                sent[s].push(i);
                                *outstanding += 1;
                                note(StepEvent::Sent {
                                    step: step.label.clone(),
                                    request: i,
                                });
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
            let step = &leaves[s];
            if k == STEP_READY {
                continue;
            }
            if k == STEP_FAILED {
                let e = res.outcome.err().unwrap_or_default();
                return Err(RunnerError::Setup(format!(
                    "ensemble '{}': step '{}': {e}",
                    model.name, step.label
                )));
            }
            outstanding -= 1;
            let i = sent[s][k];
            note(StepEvent::Answered {
                step: step.label.clone(),
                request: i,
            });
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
            .zip(leaves)
            .map(|(h, step)| {
                h.join()
                    .unwrap_or_else(|_| Err(RunnerError::Setup("it panicked".into())))
                    .map_err(|e| {
                        RunnerError::Setup(format!(
                            "ensemble '{}': step '{}': {e}",
                            model.name, step.label
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
