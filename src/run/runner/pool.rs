//! The instances: one ONNX Runtime session each, opened and warmed up
//! before the clock starts, run inline with one instance or on worker
//! threads with more ([`run_inner`]), and the driving loop that hands
//! batches to them ([`drive`]).

use super::assemble::Spare;
use super::driver::{receive, spin, Driver, InFlight, Records, SPIN, STREAM_POLL, WINDOW};
use super::plan::{plan, sched_request, Plan, Signatures};
use super::{setup, Activity, RunOptions, RunOutput, RunnerError};
use crate::batching::{Scheduler, Settings};
use crate::run::input::RunRequest;
use crate::run::model::LoadedModel;
use crate::run::output::RunResult;
use crate::run::session_config::session_options;
use crate::runtime::{Device, ModelSession, RunError};
use crate::tensor::Tensor;
use std::borrow::Cow;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The tensors of one instance's runs, reused from batch to batch: the
/// assembled inputs are refilled in place (so the session keeps its views
/// of their memory) and the output vectors are refilled by
/// [`ModelSession::run_into`].
#[derive(Default)]
pub(super) struct Io {
    pub(super) inputs: Vec<(String, Tensor)>,
    /// Per input: where it holds zeros (padding rows written once).
    pub(super) zeros: Vec<crate::run::stack::Zeros>,
    pub(super) outputs: Vec<(String, Tensor)>,
}

/// A batch for a worker: its tensors, and whether to run them (false when
/// assembling the inputs failed).
pub(super) struct Job {
    pub(super) io: Io,
    pub(super) run: bool,
}

/// A batch a worker finished.
pub(super) struct Done {
    pub(super) instance: usize,
    pub(super) io: Io,
    pub(super) outcome: Result<(), RunError>,
    /// How long it ran, when measured ([`RunOptions::profile`]).
    pub(super) elapsed: Option<Duration>,
}

/// Runs the inputs of `io` on `session` into its outputs.
fn execute(session: &mut ModelSession, io: &mut Io) -> Result<(), RunError> {
    session.run_into(&io.inputs, &mut io.outputs)
}

/// Opens one session per instance the scheduler gives work to, instance
/// `i` on `devices[i]` (all on `device` when `devices` is empty), each set
/// up from the model's config as its Triton backend would (see
/// [`crate::run::session_config`]).
fn open_sessions(
    model: &LoadedModel,
    device: Device,
    devices: &[Device],
    n: usize,
) -> Result<Vec<ModelSession>, RunnerError> {
    let file = model
        .model_file
        .as_ref()
        .ok_or_else(|| setup(format!("model '{}' has no model file", model.name)))?;
    let mut options: Vec<(Device, _)> = Vec::new();
    (0..n)
        .map(|i| {
            let on = devices.get(i).copied().unwrap_or(device);
            let at = match options.iter().position(|(d, _)| *d == on) {
                Some(at) => at,
                None => {
                    let o = session_options(&model.cfg, on)
                        .map_err(|e| setup(format!("model '{}': {e}", model.name)))?;
                    options.push((on, o));
                    options.len() - 1
                }
            };
            ModelSession::open(file, &options[at].1).map_err(setup)
        })
        .collect()
}

/// Warms every instance up before the first request, as Triton does when
/// it loads the model:
///
/// * onnxruntime backend: the config's `model_warmup` samples (see
///   [`crate::run::warmup`]);
/// * stateful backend: its own warm-up runs (zero inputs, every row
///   starting a sequence, at the batch sizes of
///   [`crate::run::stateful::StatefulBackend::warmup_batch_sizes`]; see
///   [`crate::run::stateful::warmup_inputs`]). Its `model_warmup` samples go
///   through the backend in Triton; `tritonctl` does not send them (a load
///   note says so).
///
/// A failure stops the run before any request, as it fails Triton's load.
fn warm_up(
    model: &LoadedModel,
    plan: &Plan,
    stateful: Option<&crate::run::stateful::StatefulBackend>,
    sessions: &mut [ModelSession],
) -> Result<(), RunnerError> {
    let failed = |e: String| setup(format!("model '{}': {e}", model.name));
    if let Some(backend) = stateful {
        let reset = plan.reset_input.as_deref().unwrap_or_default();
        let states: Vec<&str> = plan
            .store
            .specs()
            .iter()
            .map(|s| s.input_name.as_str())
            .collect();
        // The instances open the same model: one set of inputs per batch
        // size serves them all.
        let Some(first) = sessions.first() else {
            return Ok(());
        };
        let model_inputs: Vec<crate::run::stateful::ModelInput> = first
            .inputs()
            .iter()
            .map(|t| crate::run::stateful::ModelInput {
                name: &t.name,
                dtype: t.data_type(),
                dims: &t.dims,
            })
            .collect();
        let at = |b: usize, e: String| {
            failed(format!(
                "the stateful backend's warm-up run at batch size {b} failed: {e}"
            ))
        };
        let runs = backend
            .warmup_batch_sizes()
            .into_iter()
            .map(|b| {
                crate::run::stateful::warmup_inputs(&model.cfg, &model_inputs, reset, &states, b)
                    .map(|inputs| (b, inputs))
                    .map_err(|e| at(b, e))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut outputs = Vec::new();
        for session in sessions {
            for (b, inputs) in &runs {
                session
                    .run_into(inputs, &mut outputs)
                    .map_err(|e| at(*b, e.to_string()))?;
            }
        }
        return Ok(());
    }
    if model.cfg.backend != "onnxruntime" || model.cfg.model_warmup.is_empty() {
        return Ok(());
    }
    let samples = crate::run::warmup::samples(&model.cfg, &model.dir).map_err(failed)?;
    for session in sessions {
        crate::run::warmup::run(session, &samples).map_err(failed)?;
    }
    Ok(())
}
pub(super) fn run_inner<'r>(
    model: &LoadedModel,
    requests: Cow<'r, [RunRequest]>,
    inbox: Option<mpsc::Receiver<RunRequest>>,
    outbox: Option<&'r (dyn Fn(usize, RunResult) + Sync)>,
    ready: Option<&(dyn Fn() + Sync)>,
    opts: &RunOptions,
) -> Result<RunOutput, RunnerError> {
    let settings = Settings::from_config(&model.cfg).map_err(setup)?;
    let instances = settings.instances.max(1);
    let stateful =
        crate::run::stateful::StatefulBackend::from_config(&model.cfg, instances).map_err(setup)?;
    let mut sessions = open_sessions(
        model,
        opts.device,
        &opts.instance_devices,
        settings.instances,
    )?;
    let plan = plan(model, &sessions[0])?;
    warm_up(model, &plan, stateful.as_ref(), &mut sessions)?;
    if let Some(ready) = ready {
        ready();
    }
    let n = requests.len();
    if n == 0 && inbox.is_none() {
        return Ok(RunOutput::default());
    }

    // The per-request lists below are reserved up front, and fallibly: a
    // huge input ends with a message instead of an aborted allocation
    // (docs/hostile.md).
    let mut arrivals = per_request(n)?;
    let mut order = per_request(n)?;
    let mut pending = per_request(n)?;
    let mut results = per_request(n)?;
    // Release order: given offsets; a request without one follows the
    // previous request at once.
    let mut last = 0u64;
    for r in requests.iter() {
        let a = r.arrival_us.unwrap_or(last);
        arrivals.push(a);
        last = a;
    }
    order.extend(0..n);
    order.sort_by_key(|&i| arrivals[i]);

    let sequence = matches!(
        settings.kind,
        crate::batching::SchedulerKind::Direct(_) | crate::batching::SchedulerKind::Oldest(_)
    );
    let mut sigs = settings.enforce_shapes.then(Signatures::default);
    pending.extend(requests.iter().enumerate().map(|(i, r)| {
        Some(sched_request(
            i,
            r,
            plan.max_batch_size,
            sigs.as_mut(),
            sequence,
        ))
    }));
    results.resize(n, None);

    let mut drv = Driver {
        stateful,
        requests,
        inbox,
        outbox,
        first_start: None,
        last_end_us: 0,
        executed: 0,
        hint: None,
        plan,
        sched: Scheduler::new(&settings),
        sink: Records::default(),
        started: Vec::new(),
        flights: (0..instances).map(|_| InFlight::default()).collect(),
        ios: (0..instances).map(|_| Some(Io::default())).collect(),
        results,
        executions: Vec::new(),
        arrivals,
        order,
        next: 0,
        done_count: 0,
        window: WINDOW,
        busy: 0,
        epoch: Instant::now(),
        sigs,
        sequence,
        pending,
        spare: InFlight::default(),
        starts: Vec::new(),
        per_row: Vec::new(),
        recycled: Spare::default(),
    };

    let elapsed;
    if sessions.len() == 1 {
        let mut session = sessions.into_iter().next().expect("one session");
        drv.epoch = Instant::now();
        let profile = opts.profile;
        drive(
            &mut drv,
            opts,
            |drv, instance, mut job| {
                // The start is read only to measure the execution: the
                // replay below may start from the last look at the clock
                // (the driver's work since then changed nothing).
                let t0 = profile.then(Instant::now);
                let outcome = if job.run {
                    execute(&mut session, &mut job.io)
                } else {
                    Ok(())
                };
                let t1 = Instant::now();
                let since = |t: Instant| t.duration_since(drv.epoch).as_micros() as u64;
                let end = since(t1);
                let from = match t0 {
                    Some(t0) => since(t0),
                    None => drv.hint.unwrap_or(end).min(end),
                };
                drv.catch_up(from, end);
                // Nothing happens between here and the next look at the
                // clock: the end of the batch stands for it.
                drv.hint = Some(end);
                drv.finish(Done {
                    instance,
                    io: job.io,
                    outcome,
                    elapsed: t0.map(|t0| t1 - t0),
                });
                Ok(())
            },
            |_, _| unreachable!("inline batches finish at once"),
        )?;
        elapsed = drv.epoch.elapsed();
    } else {
        let (done_tx, done_rx) = mpsc::channel::<Done>();
        elapsed = std::thread::scope(|scope| -> Result<Duration, RunnerError> {
            let mut job_txs: Vec<mpsc::Sender<Job>> = Vec::new();
            for (instance, mut session) in sessions.into_iter().enumerate() {
                let (tx, rx) = mpsc::channel::<Job>();
                job_txs.push(tx);
                let done = done_tx.clone();
                let profile = opts.profile;
                scope.spawn(move || {
                    while let Some(mut job) = receive(&rx, Instant::now() + SPIN) {
                        let t0 = profile.then(Instant::now);
                        let outcome = if job.run {
                            execute(&mut session, &mut job.io)
                        } else {
                            Ok(())
                        };
                        let elapsed = t0.map(|t0| t0.elapsed());
                        let d = Done {
                            instance,
                            io: job.io,
                            outcome,
                            elapsed,
                        };
                        if done.send(d).is_err() {
                            break;
                        }
                    }
                });
            }
            drop(done_tx);
            drv.epoch = Instant::now();
            let driven = drive(
                &mut drv,
                opts,
                |_, instance, job| {
                    job_txs[instance]
                        .send(job)
                        .map_err(|_| setup("a worker thread stopped"))
                },
                |drv, wait| {
                    // Completions that are there already, else a short spin
                    // (a step of a small model takes tens of microseconds,
                    // less than putting the thread to sleep and waking it
                    // up again), then a blocking wait.
                    let first = match done_rx.try_recv() {
                        Ok(d) => Some(d),
                        Err(_) if wait.is_zero() => None,
                        Err(_) => match spin(&done_rx, wait) {
                            Some(d) => Some(d),
                            None => match done_rx.recv_timeout(wait.saturating_sub(SPIN)) {
                                Ok(d) => Some(d),
                                Err(mpsc::RecvTimeoutError::Timeout) => None,
                                Err(mpsc::RecvTimeoutError::Disconnected) => {
                                    return Err(setup("the worker threads stopped"))
                                }
                            },
                        },
                    };
                    if let Some(d) = first {
                        drv.finish(d);
                        while let Ok(d) = done_rx.try_recv() {
                            drv.finish(d);
                        }
                    }
                    Ok(())
                },
            );
            let elapsed = drv.epoch.elapsed();
            drop(job_txs);
            driven.map(|()| elapsed)
        })?;
    }
    let activity = match drv.first_start {
        Some(first) if drv.executed > 0 => vec![Activity {
            model: model.name.clone(),
            first_start: drv.epoch + first,
            last_end: drv.epoch + Duration::from_micros(drv.last_end_us),
            executions: drv.executed,
        }],
        _ => Vec::new(),
    };
    let Driver {
        results,
        executions,
        requests,
        ..
    } = drv;
    let results = results
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            r.unwrap_or_else(|| RunResult {
                id: requests[i].id.clone(),
                sequence_id: requests[i].sequence_id.clone(),
                outcome: Err("the request was never scheduled".to_string()),
            })
        })
        .collect();
    let executions = executions
        .into_iter()
        .enumerate()
        .filter(|(_, v)| !v.is_empty())
        .map(|(size, v)| (size as u32, v))
        .collect();
    Ok(RunOutput {
        results,
        executions,
        elapsed,
        activity,
    })
}

/// The driving loop. `dispatch` hands a job to an instance (inline: runs it
/// and finishes it); `wait` waits at most the given time for completions
/// and finishes them (only called while batches are in flight).
fn drive<'r>(
    drv: &mut Driver<'r>,
    opts: &RunOptions,
    mut dispatch: impl FnMut(&mut Driver<'r>, usize, Job) -> Result<(), RunnerError>,
    mut wait_done: impl FnMut(&mut Driver<'r>, Duration) -> Result<(), RunnerError>,
) -> Result<(), RunnerError> {
    let mut finished = 0usize;
    let mut open = drv.inbox.is_some();
    loop {
        // 0. Streaming: the requests that came in.
        if open {
            open = drv.take_inbox(None);
        }
        let n = drv.requests.len();
        // 1. Arrivals (completions were finished as they came).
        let t = drv.clock();
        drv.hint = Some(t);
        drv.admit(t);
        // 2. Timers and batches (at the time of the arrivals).
        let now = t;
        let mut started = std::mem::take(&mut drv.started);
        drv.sched.poll(now, &mut drv.sink, &mut started);
        let ran = !started.is_empty();
        for &instance in &started {
            let job = drv.start(instance);
            drv.prefetch_next();
            dispatch(drv, instance, job)?;
        }
        started.clear();
        drv.started = started;
        // Records of requests that will not run (and confirmations).
        drv.refusals();
        if drv.done_count != finished {
            finished = drv.done_count;
            if let Some(p) = opts.progress {
                p(finished, n);
            }
        }
        if finished == n && drv.busy == 0 && !open {
            return Ok(());
        }
        if ran && drv.busy == 0 {
            // Inline: the batch is done; look again at once.
            continue;
        }
        // 3. Wait for a completion, the next arrival or a deadline.
        if drv.busy == 0 && drv.next < n && drv.held() {
            // Nothing runs and the window is full: the requests released
            // so far cannot make progress without more (e.g. sequences
            // waiting for a slot whose owner's next request is held).
            drv.window += WINDOW;
            continue;
        }
        drv.hint = None;
        let t = drv.now();
        let mut wake: Option<u64> = drv.sched.next_deadline();
        if let Some(a) = drv.next_arrival() {
            wake = Some(wake.map_or(a, |w| w.min(a)));
        }
        if drv.busy == 0 && wake.is_none() {
            if !open {
                // Nothing can change any more.
                return Ok(());
            }
            // Streaming: nothing to do until more requests come.
            open = drv.take_inbox(Some(Duration::from_secs(3600)));
            continue;
        }
        let wait = wake.map_or(Duration::from_secs(3600), |w| {
            Duration::from_micros(w.saturating_sub(t))
        });
        if open {
            // Streaming: wait for the next request as well, looking at the
            // inbox at least every `STREAM_POLL` while batches run.
            if drv.busy > 0 {
                wait_done(drv, wait.min(STREAM_POLL))?;
            } else if !wait.is_zero() {
                open = drv.take_inbox(Some(wait));
            }
            continue;
        }
        if drv.busy > 0 {
            wait_done(drv, wait)?;
        } else if !wait.is_zero() {
            std::thread::sleep(wait);
        }
    }
}

/// An empty list with room for `n` requests, or an error when there is not
/// enough memory for it.
pub(super) fn per_request<T>(n: usize) -> Result<Vec<T>, RunnerError> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| {
        RunnerError::Setup(format!(
            "not enough memory to run {n} requests at once; split the input into smaller files"
        ))
    })?;
    Ok(v)
}
