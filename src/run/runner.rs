//! The local runner of `tritonctl run` (feature `run`): the scheduler core
//! ([`crate::batching::Scheduler`]) driven on a real clock, one ONNX
//! Runtime session per model instance, each on its own worker thread.
//!
//! The driving thread owns the scheduler and every sequence's state. For
//! each batch the scheduler starts, it assembles the model's inputs:
//!
//! * the client's tensors, stacked along the batch axis (axis 0 for
//!   ordinary models; for the stateful backend the leading batch
//!   dimension of each request is dropped and the requests are stacked
//!   along the config's `-1` axis, stateful-backend.md §5);
//! * the control tensors (START/END/READY/CORRID) in the configured data
//!   types; the stateful backend only passes the START control, as the
//!   model's boolean reset input;
//! * the states of the rows' sequences (reset on START rows, zeros on
//!   padding rows).
//!
//! It hands the batch to the instance's worker and, when the worker
//! reports back, stores the state outputs, splits the other outputs per
//! request and lets the scheduler complete the batch. Results come back in
//! input order, one per request; a request that fails (scheduler
//! rejection with Triton's message, ONNX Runtime error) fails alone (with
//! the requests of its batch for an execution error) and other sequences
//! keep running.

use super::input::RunRequest;
use super::model::LoadedModel;
use super::output::RunResult;
use super::stack::{concat_axis, split_axis};
use super::state::{implicit_states, stateful_pairs, StateSpec, StateStore};
use crate::batching::controls::{ControlSpec, ControlValues};
use crate::batching::{
    BatchRecord, Request, RequestRecord, Scheduler, SeqHandle, Settings, Sink, Status,
};
use crate::runtime::{Device, ModelSession, RunError, SessionOptions};
use crate::schema::inference::model_config::SchedulingChoice;
use crate::tensor::{Tensor, TensorData};
use std::collections::BTreeMap;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How to run.
pub struct RunOptions<'a> {
    pub device: Device,
    /// Called with (finished requests, all requests) whenever a request
    /// finishes.
    pub progress: Option<&'a (dyn Fn(usize, usize) + Sync)>,
}

impl Default for RunOptions<'_> {
    fn default() -> Self {
        RunOptions {
            device: Device::Cpu,
            progress: None,
        }
    }
}

/// What a run produced.
#[derive(Debug, Clone, Default)]
pub struct RunOutput {
    /// One per request, in input order.
    pub results: Vec<RunResult>,
    /// Execution times per executed batch size (µs), for `--profile`.
    pub executions: BTreeMap<u32, Vec<u64>>,
    /// Wall time from the first release to the last result (sessions are
    /// opened before it starts).
    pub elapsed: Duration,
}

impl RunOutput {
    /// The latency file `simulate --latency` reads: the median execution
    /// time of every batch size seen (`"1:2000,2:2400"`).
    pub fn latency_spec(&self) -> Option<String> {
        let parts: Vec<String> = self
            .executions
            .iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(b, v)| {
                let mut v = v.clone();
                v.sort_unstable();
                format!("{b}:{}", v[v.len() / 2].max(1))
            })
            .collect();
        (!parts.is_empty()).then(|| parts.join(","))
    }
}

/// Why a model cannot be run at all.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RunnerError {
    /// The model cannot be set up (session, states, controls, ...).
    #[error("{0}")]
    Setup(String),
}

fn setup(e: impl std::fmt::Display) -> RunnerError {
    RunnerError::Setup(e.to_string())
}

/// How the client's tensors of a batch are stacked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// `max_batch_size: 0`: one request per run, tensors as given.
    Single,
    /// Stacked along the leading (batch) dimension.
    Batch,
    /// Stateful backend: leading dimension dropped, stacked along the
    /// config's `-1` axis of each tensor (by name).
    Stateful,
}

/// Everything about the model the driving thread needs.
struct Plan {
    layout: Layout,
    /// Stateful backend: the stacking axis (within the config dims) per
    /// data input / output name.
    axes: BTreeMap<String, usize>,
    controls: Option<ControlSpec>,
    /// Stateful backend: the reset input (the START control's name).
    reset_input: Option<String>,
    /// The session's input names (controls it lacks are not passed).
    session_inputs: Vec<String>,
    /// Outputs reported to the client, in config order.
    outputs: Vec<String>,
    store: StateStore<SeqHandle>,
    max_batch_size: i64,
}

struct Job {
    inputs: Vec<(String, Tensor)>,
}

struct Done {
    instance: usize,
    outcome: Result<Vec<(String, Tensor)>, RunError>,
    elapsed: Duration,
}

/// One dispatched batch, remembered until it completes.
#[derive(Default)]
struct InFlight {
    /// Per row: the request index (None: padding).
    tags: Vec<Option<usize>>,
    keys: Vec<Option<SeqHandle>>,
    /// Per row: its rows along the batch axis.
    sizes: Vec<usize>,
    size: u32,
    /// Set when assembling the inputs failed (the batch is not run).
    failed: Option<String>,
}

/// Collects the scheduler's records.
#[derive(Default)]
struct Records {
    requests: Vec<RequestRecord>,
}

impl Sink for Records {
    fn request(&mut self, record: RequestRecord) {
        self.requests.push(record);
    }
    fn batch(&mut self, _record: BatchRecord) {}
    fn batch_lists(&self) -> bool {
        false
    }
}

fn control_data(v: ControlValues) -> TensorData {
    match v {
        ControlValues::Bool(v) => TensorData::Bool(v),
        ControlValues::Int32(v) => TensorData::I32(v),
        ControlValues::Fp32(v) => TensorData::F32(v),
        ControlValues::Int64(v) => TensorData::I64(v),
        ControlValues::Uint32(v) => TensorData::U32(v),
        ControlValues::Uint64(v) => TensorData::U64(v),
        ControlValues::Bytes(v) => {
            TensorData::Bytes(v.into_iter().map(String::into_bytes).collect())
        }
    }
}

/// Opens one session per instance on `opts.device`.
fn open_sessions(
    model: &LoadedModel,
    device: Device,
    n: usize,
) -> Result<Vec<ModelSession>, RunnerError> {
    let file = model
        .model_file
        .as_ref()
        .ok_or_else(|| setup(format!("model '{}' has no model file", model.name)))?;
    let options = SessionOptions {
        device,
        ..SessionOptions::default()
    };
    (0..n)
        .map(|_| ModelSession::open(file, &options).map_err(setup))
        .collect()
}

fn plan(model: &LoadedModel, session: &ModelSession) -> Result<Plan, RunnerError> {
    let cfg = &model.cfg;
    let session_inputs: Vec<String> = session.inputs().iter().map(|t| t.name.clone()).collect();
    let stateful = model.is_stateful_backend();
    // Every client input of the config must be a model input (Triton's
    // ONNX Runtime backend refuses the model otherwise).
    for i in &cfg.input {
        if !session_inputs.contains(&i.name) {
            return Err(setup(format!(
                "model '{}': configuration input '{}' is not an input of the ONNX model {} (its inputs: {})",
                model.name,
                i.name,
                model.model_file.as_deref().unwrap_or(model.dir.as_path()).display(),
                session_inputs.join(", ")
            )));
        }
    }
    let specs: Vec<StateSpec> = if stateful {
        let pairs = stateful_pairs(cfg).map_err(setup)?;
        let mut specs = Vec::new();
        for p in &pairs {
            let t = session
                .inputs()
                .iter()
                .find(|t| t.name == p.input)
                .ok_or_else(|| {
                    setup(format!(
                        "state_pairs: '{}' is not an input of the ONNX model",
                        p.input
                    ))
                })?;
            let dtype = t.data_type().ok_or_else(|| {
                setup(format!(
                    "state '{}' has an unsupported element type",
                    p.input
                ))
            })?;
            specs.push(StateSpec::stateful_backend(p, dtype, &t.dims).map_err(setup)?);
        }
        specs
    } else {
        implicit_states(cfg, &model.dir).map_err(setup)?
    };
    for s in &specs {
        if !session.outputs().iter().any(|o| o.name == s.output_name) {
            return Err(setup(format!(
                "state output '{}' is not an output of the ONNX model",
                s.output_name
            )));
        }
    }
    let state_outputs: Vec<&str> = specs.iter().map(|s| s.output_name.as_str()).collect();
    let outputs: Vec<String> = if cfg.output.is_empty() {
        session
            .outputs()
            .iter()
            .map(|o| o.name.clone())
            .filter(|n| !state_outputs.contains(&n.as_str()))
            .collect()
    } else {
        cfg.output.iter().map(|o| o.name.clone()).collect()
    };
    for o in &outputs {
        if !session.outputs().iter().any(|t| &t.name == o) {
            return Err(setup(format!(
                "model '{}': configuration output '{o}' is not an output of the ONNX model",
                model.name
            )));
        }
    }
    let controls = ControlSpec::from_config(cfg).map_err(setup)?;
    let mut axes = BTreeMap::new();
    let mut reset_input = None;
    let layout = if stateful {
        for t in cfg
            .input
            .iter()
            .map(|i| (&i.name, &i.dims))
            .chain(cfg.output.iter().map(|o| (&o.name, &o.dims)))
        {
            let axis = t.1.iter().rposition(|&d| d < 0).ok_or_else(|| {
                setup(format!(
                    "'{}' has no -1 dimension: the stateful backend stacks the sequences of a batch along it",
                    t.0
                ))
            })?;
            axes.insert(t.0.clone(), axis);
        }
        if let Some(SchedulingChoice::SequenceBatching(sb)) = &cfg.scheduling_choice {
            reset_input = sb
                .control_input
                .iter()
                .find(|c| {
                    c.control.iter().any(|k| {
                        k.kind
                            == crate::schema::inference::model_sequence_batching::control::Kind::ControlSequenceStart as i32
                    })
                })
                .and_then(|c| {
                    session_inputs
                        .iter()
                        .find(|n| n.eq_ignore_ascii_case(&c.name))
                        .cloned()
                });
        }
        if reset_input.is_none() {
            return Err(setup(
                "the stateful backend needs a CONTROL_SEQUENCE_START control whose name is the model's reset input",
            ));
        }
        Layout::Stateful
    } else if cfg.max_batch_size > 0 {
        Layout::Batch
    } else {
        Layout::Single
    };
    let fp16 = stateful
        && cfg
            .parameters
            .get("store_states_as_fp16")
            .is_some_and(|p| p.string_value.trim() == "1");
    Ok(Plan {
        layout,
        axes,
        controls,
        reset_input,
        session_inputs,
        outputs,
        store: StateStore::new(specs).with_fp16_storage(fp16),
        max_batch_size: i64::from(cfg.max_batch_size),
    })
}

/// The scheduler's view of a request: `id` is its index (records are
/// matched back by it), `tag` too.
fn sched_request(index: usize, r: &RunRequest, mbs: i64, enforce: bool, sequence: bool) -> Request {
    let mut q = Request::new(index.to_string(), 0);
    // Models without a sequence batcher ignore the sequence fields.
    if sequence {
        q.sequence_id = r.sequence_id.clone();
        q.start = r.start;
        q.end = r.end;
    }
    q.batch_size = r.batch_size(mbs);
    q.priority = r.priority;
    q.timeout_us = r.timeout_us;
    q.tag = index as u64;
    if enforce {
        let sig: Vec<String> = r
            .inputs
            .iter()
            .map(|(n, t)| format!("{n}{:?}", t.shape))
            .collect();
        q.shape = Some(sig.join(";"));
    }
    q
}

impl Plan {
    /// Assembles the inputs of one batch.
    fn inputs(
        &mut self,
        requests: &[RunRequest],
        flight: &InFlight,
        records: &[crate::batching::SlotRecord],
        starts: &[bool],
    ) -> Result<Vec<(String, Tensor)>, String> {
        let real: Vec<&RunRequest> = flight
            .tags
            .iter()
            .flatten()
            .map(|&i| &requests[i])
            .collect();
        let first = *real.first().ok_or("a batch without requests")?;
        let mut out: Vec<(String, Tensor)> = Vec::new();
        for (name, sample) in &first.inputs {
            let mut parts: Vec<Tensor> = Vec::with_capacity(flight.tags.len());
            for tag in &flight.tags {
                let t = match tag {
                    Some(i) => requests[*i].inputs.get(name).cloned().ok_or_else(|| {
                        format!(
                            "request {}: input '{name}' is missing (other requests of its batch have it)",
                            requests[*i].id
                        )
                    })?,
                    None => Tensor::zeros(sample.dtype(), sample.shape.clone())
                        .map_err(|e| e.to_string())?,
                };
                parts.push(t);
            }
            let t = match self.layout {
                Layout::Single => parts.swap_remove(0),
                Layout::Batch => {
                    let refs: Vec<&Tensor> = parts.iter().collect();
                    Tensor::concat(&refs).map_err(|e| format!("input '{name}': {e}"))?
                }
                Layout::Stateful => {
                    let axis = self.axes.get(name).copied().unwrap_or(0);
                    let stripped: Vec<Tensor> = parts
                        .into_iter()
                        .zip(&flight.tags)
                        .map(|(t, tag)| {
                            if t.shape.first() != Some(&1) {
                                return Err(format!(
                                    "request {}: input '{name}' has shape {:?}; the stateful backend takes requests of batch size 1",
                                    tag.map_or("padding".to_string(), |i| requests[i].id.clone()),
                                    t.shape
                                ));
                            }
                            Ok(Tensor {
                                shape: t.shape[1..].to_vec(),
                                data: t.data,
                            })
                        })
                        .collect::<Result<_, _>>()?;
                    let refs: Vec<&Tensor> = stripped.iter().collect();
                    concat_axis(&refs, axis).map_err(|e| format!("input '{name}': {e}"))?
                }
            };
            out.push((name.clone(), t));
        }
        if let Some(reset) = &self.reset_input {
            let n = flight.tags.len() as i64;
            let data: Vec<bool> = starts.to_vec();
            out.push((
                reset.clone(),
                Tensor::new(vec![n, 1], TensorData::Bool(data)).map_err(|e| e.to_string())?,
            ));
        } else if let Some(spec) = &self.controls {
            for c in spec.tensors(records)? {
                if !self.session_inputs.contains(&c.name) {
                    continue;
                }
                let t = Tensor::new(c.shape, control_data(c.data)).map_err(|e| e.to_string())?;
                out.push((c.name, t));
            }
        }
        if !self.store.specs().is_empty() {
            let states = self.store.gather(&flight.keys).map_err(|e| e.to_string())?;
            out.extend(states);
        }
        Ok(out)
    }

    /// Splits the outputs of one batch per row; stores the states.
    #[allow(clippy::type_complexity)]
    fn outputs(
        &mut self,
        flight: &InFlight,
        mut outs: Vec<(String, Tensor)>,
    ) -> Result<Vec<Option<Vec<(String, Tensor)>>>, String> {
        if !self.store.specs().is_empty() {
            self.store
                .scatter(&flight.keys, |name| {
                    outs.iter().find(|(n, _)| n == name).map(|(_, t)| t)
                })
                .map_err(|e| e.to_string())?;
        }
        let rows = flight.tags.len();
        let mut per_row: Vec<Vec<(String, Tensor)>> = vec![Vec::new(); rows];
        for name in &self.outputs {
            let pos = outs
                .iter()
                .position(|(n, _)| n == name)
                .ok_or_else(|| format!("the model did not return output '{name}'"))?;
            let (_, t) = outs.swap_remove(pos);
            let pieces: Vec<Tensor> = match self.layout {
                Layout::Single => vec![t],
                Layout::Batch => {
                    let mut v = Vec::with_capacity(rows);
                    let mut start = 0;
                    for &s in &flight.sizes {
                        v.push(t.rows(start, s).map_err(|e| {
                            format!("output '{name}' with shape {:?}: {e}", t.shape)
                        })?);
                        start += s;
                    }
                    v
                }
                Layout::Stateful => {
                    let axis = self.axes.get(name).copied().unwrap_or(0);
                    let ones = vec![1usize; rows];
                    split_axis(&t, axis, &ones)
                        .map_err(|e| format!("output '{name}' with shape {:?}: {e}", t.shape))?
                        .into_iter()
                        .map(|mut p| {
                            p.shape.insert(0, 1);
                            p
                        })
                        .collect()
                }
            };
            for (j, p) in pieces.into_iter().enumerate() {
                per_row[j].push((name.clone(), p));
            }
        }
        Ok(flight
            .tags
            .iter()
            .zip(per_row)
            .map(|(t, o)| t.map(|_| o))
            .collect())
    }
}

/// How many requests without an arrival time may be released ahead of
/// the finished ones.
const WINDOW: usize = 256;

/// How long a waiting thread polls its channel before it blocks.
const SPIN: Duration = Duration::from_micros(200);

/// Receives a message, polling until `until` before blocking; `None` when
/// the sender is gone.
fn receive<T>(rx: &mpsc::Receiver<T>, until: Instant) -> Option<T> {
    loop {
        match rx.try_recv() {
            Ok(v) => return Some(v),
            Err(mpsc::TryRecvError::Disconnected) => return None,
            Err(mpsc::TryRecvError::Empty) if Instant::now() < until => std::hint::spin_loop(),
            Err(mpsc::TryRecvError::Empty) => return rx.recv().ok(),
        }
    }
}

/// Polls `rx` for at most `SPIN` (and at most `wait`).
fn spin<T>(rx: &mpsc::Receiver<T>, wait: Duration) -> Option<T> {
    let until = Instant::now() + SPIN.min(wait);
    loop {
        if let Ok(v) = rx.try_recv() {
            return Some(v);
        }
        if Instant::now() >= until {
            return None;
        }
        std::hint::spin_loop();
    }
}

/// Runs `requests` on a single (non-ensemble) model.
pub fn run_model(
    model: &LoadedModel,
    requests: &[RunRequest],
    opts: &RunOptions,
) -> Result<RunOutput, RunnerError> {
    let settings = Settings::from_config(&model.cfg).map_err(setup)?;
    let sessions = open_sessions(model, opts.device, settings.instances)?;
    let mut plan = plan(model, &sessions[0])?;
    let n = requests.len();
    let mut results: Vec<Option<RunResult>> = vec![None; n];
    let mut executions: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    if n == 0 {
        return Ok(RunOutput::default());
    }

    // Release order: given offsets; a request without one follows the
    // previous request at once.
    let mut arrivals = Vec::with_capacity(n);
    let mut last = 0u64;
    for r in requests {
        let a = r.arrival_us.unwrap_or(last);
        arrivals.push(a);
        last = a;
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| arrivals[i]);

    let mut elapsed = Duration::ZERO;
    let (done_tx, done_rx) = mpsc::channel::<Done>();
    std::thread::scope(|scope| -> Result<(), RunnerError> {
        let mut job_txs: Vec<mpsc::Sender<Job>> = Vec::new();
        for (instance, mut session) in sessions.into_iter().enumerate() {
            let (tx, rx) = mpsc::channel::<Job>();
            job_txs.push(tx);
            let done = done_tx.clone();
            scope.spawn(move || {
                let mut outputs = Vec::new();
                while let Some(job) = receive(&rx, Instant::now() + SPIN) {
                    let refs: Vec<(&str, &Tensor)> =
                        job.inputs.iter().map(|(n, t)| (n.as_str(), t)).collect();
                    let t0 = Instant::now();
                    let r = session.run_into(&refs, &mut outputs);
                    let elapsed = t0.elapsed();
                    let outcome = r.map(|()| std::mem::take(&mut outputs));
                    if done
                        .send(Done {
                            instance,
                            outcome,
                            elapsed,
                        })
                        .is_err()
                    {
                        break;
                    }
                }
            });
        }
        drop(done_tx);

        let mut sched = Scheduler::new(&settings);
        let mut sink = Records::default();
        let mut started = Vec::new();
        let mut flights: Vec<InFlight> = (0..settings.instances)
            .map(|_| InFlight::default())
            .collect();
        let mut busy = 0usize;
        let mut next = 0usize;
        let mut finished = 0usize;
        let mut done_count = 0usize;
        let mut inbox: Vec<Done> = Vec::new();
        let epoch = Instant::now();
        let now = || epoch.elapsed().as_micros() as u64;
        let enforce = settings.enforce_shapes;
        let sequence = matches!(
            settings.kind,
            crate::batching::SchedulerKind::Direct(_) | crate::batching::SchedulerKind::Oldest(_)
        );

        let driven: Result<(), RunnerError> = 'drive: loop {
            // 1. Completions.
            while let Ok(d) = done_rx.try_recv() {
                inbox.push(d);
            }
            for d in inbox.drain(..) {
                busy -= 1;
                let flight = std::mem::take(&mut flights[d.instance]);
                executions
                    .entry(flight.size)
                    .or_default()
                    .push(d.elapsed.as_micros() as u64);
                let outcome = match (flight.failed.clone(), d.outcome) {
                    (Some(e), _) => Err(e),
                    (None, Ok(outs)) => plan.outputs(&flight, outs),
                    (None, Err(e)) => Err(e.to_string()),
                };
                match outcome {
                    Ok(rows) => {
                        for (tag, o) in flight.tags.iter().zip(rows) {
                            if let (Some(i), Some(o)) = (tag, o) {
                                done_count += usize::from(results[*i].is_none());
                                results[*i] = Some(RunResult {
                                    id: requests[*i].id.clone(),
                                    sequence_id: requests[*i].sequence_id.clone(),
                                    outcome: Ok(o),
                                });
                            }
                        }
                    }
                    Err(e) => {
                        let ids: Vec<&str> = flight
                            .tags
                            .iter()
                            .flatten()
                            .map(|&i| requests[i].id.as_str())
                            .collect();
                        for &i in flight.tags.iter().flatten() {
                            let msg = if ids.len() > 1 {
                                format!(
                                    "request {}: {e} (in a batch with requests {})",
                                    requests[i].id,
                                    ids.join(", ")
                                )
                            } else {
                                format!("request {}: {e}", requests[i].id)
                            };
                            done_count += usize::from(results[i].is_none());
                            results[i] = Some(RunResult {
                                id: requests[i].id.clone(),
                                sequence_id: requests[i].sequence_id.clone(),
                                outcome: Err(msg),
                            });
                        }
                    }
                }
                sched.complete(now(), d.instance, &mut sink);
            }
            for released in sched.drain_releases() {
                plan.store.release(&released.sequence);
            }
            // 2. Arrivals.
            let t = now();
            // Requests without an arrival time are released as fast as
            // possible, but at most WINDOW ahead of the finished ones (the
            // scheduler's queues stay short).
            let held = |next: usize, done: usize| {
                requests[order[next]].arrival_us.is_none() && next - done >= WINDOW
            };
            while next < n && arrivals[order[next]] <= t && !held(next, done_count) {
                let i = order[next];
                sched.arrive(
                    t,
                    sched_request(i, &requests[i], plan.max_batch_size, enforce, sequence),
                    &mut sink,
                );
                next += 1;
            }
            // 3. Timers and batches.
            sched.poll(now(), &mut sink, &mut started);
            for &instance in &started {
                let batch = sched.batch(instance);
                let records = batch.executed_slot_records();
                let mut flight = InFlight {
                    size: batch.size,
                    ..InFlight::default()
                };
                let mut starts = Vec::with_capacity(batch.rows.len());
                for row in &batch.rows {
                    let tag = row.request.as_ref().map(|r| r.tag as usize);
                    flight.tags.push(tag);
                    flight.sizes.push(
                        row.request
                            .as_ref()
                            .map_or(1, |r| r.batch_size.max(1) as usize),
                    );
                    let key = if tag.is_some() { row.sequence } else { None };
                    flight.keys.push(key);
                    let start = row.request.as_ref().is_some_and(|r| r.start);
                    starts.push(start || tag.is_none());
                    if let Some(k) = key {
                        if start || !plan.store.contains(&k) {
                            plan.store.reset(k);
                        }
                    }
                }
                let job = match plan.inputs(requests, &flight, &records, &starts) {
                    Ok(inputs) => Job { inputs },
                    Err(e) => {
                        flight.failed = Some(e);
                        Job { inputs: Vec::new() }
                    }
                };
                flights[instance] = flight;
                busy += 1;
                if job_txs[instance].send(job).is_err() {
                    break 'drive Err(setup("a worker thread stopped"));
                }
            }
            started.clear();
            // Records of requests that will not run (and confirmations).
            for rec in sink.requests.drain(..) {
                let Ok(i) = rec.id.parse::<usize>() else {
                    continue;
                };
                if rec.status != Status::Ok && results[i].is_none() {
                    let reason = rec.reason.unwrap_or_else(|| match rec.status {
                        Status::TimedOut => "request timed out".to_string(),
                        _ => "request rejected".to_string(),
                    });
                    done_count += 1;
                    results[i] = Some(RunResult {
                        id: requests[i].id.clone(),
                        sequence_id: requests[i].sequence_id.clone(),
                        outcome: Err(reason),
                    });
                }
            }
            let done_now = done_count;
            if done_now != finished {
                finished = done_now;
                if let Some(p) = opts.progress {
                    p(finished, n);
                }
            }
            if finished == n && busy == 0 {
                break Ok(());
            }
            // 4. Wait for a completion, the next arrival or a deadline.
            let t = now();
            let mut wake: Option<u64> = sched.next_deadline();
            if next < n && !held(next, done_count) {
                let a = arrivals[order[next]];
                wake = Some(wake.map_or(a, |w| w.min(a)));
            }
            if busy == 0 && wake.is_none() {
                // Nothing can change any more.
                break Ok(());
            }
            let wait = wake.map_or(Duration::from_secs(3600), |w| {
                Duration::from_micros(w.saturating_sub(t))
            });
            if wait.is_zero() {
                continue;
            }
            if busy > 0 {
                // A short spin first: a step of a small model takes tens of
                // microseconds, less than putting the thread to sleep and
                // waking it up again.
                if let Some(d) = spin(&done_rx, wait) {
                    inbox.push(d);
                    continue;
                }
                match done_rx.recv_timeout(wait.saturating_sub(SPIN)) {
                    Ok(d) => inbox.push(d),
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                    Err(mpsc::RecvTimeoutError::Disconnected) => {
                        break Err(setup("the worker threads stopped"))
                    }
                }
            } else {
                std::thread::sleep(wait);
            }
        };
        elapsed = epoch.elapsed();
        drop(job_txs);
        driven
    })?;
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
    Ok(RunOutput {
        results,
        executions,
        elapsed,
    })
}
