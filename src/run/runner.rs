//! The local runner of `tritonctl run` (feature `run`): the scheduler core
//! ([`crate::batching::Scheduler`]) driven on a real clock, one ONNX
//! Runtime session per model instance (with more than one instance, each
//! on its own worker thread).
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
//! It runs the batch (on the driving thread itself when the model has one
//! instance, else on the instance's worker) and, when it is done, stores
//! the state outputs, splits the other outputs per
//! request and lets the scheduler complete the batch. Results come back in
//! input order, one per request; a request that fails (scheduler
//! rejection with Triton's message, ONNX Runtime error) fails alone (with
//! the requests of its batch for an execution error) and other sequences
//! keep running.

use super::input::RunRequest;
use super::model::LoadedModel;
use super::output::RunResult;
use super::session_config::session_options;
use super::stack::{copy_data, put, slice_axis_into};
use super::state::{implicit_states, stateful_pairs, StateSpec, StateStore};
use crate::batching::controls::{ControlSpec, ControlValues};
use crate::batching::{
    BatchRecord, Request, RequestRecord, Scheduler, SeqHandle, Settings, Sink, Status,
};
use crate::runtime::{Device, ModelSession, RunError};
use crate::schema::inference::model_config::SchedulingChoice;
use crate::tensor::{Tensor, TensorData};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// How to run.
pub struct RunOptions<'a> {
    pub device: Device,
    /// Called with (finished requests, all requests) whenever a request
    /// finishes.
    pub progress: Option<&'a (dyn Fn(usize, usize) + Sync)>,
    /// Measure every execution (for `--profile`: [`RunOutput::executions`]
    /// and [`RunOutput::latency_spec`]). It takes a second read of the
    /// clock per batch, before it runs; without it the runner reads the
    /// clock once, when the batch ends.
    pub profile: bool,
}

impl Default for RunOptions<'_> {
    fn default() -> Self {
        RunOptions {
            device: Device::Cpu,
            progress: None,
            profile: false,
        }
    }
}

/// What a run produced.
#[derive(Debug, Clone, Default)]
pub struct RunOutput {
    /// One per request, in input order.
    pub results: Vec<RunResult>,
    /// Execution times per executed batch size (µs), for `--profile`
    /// (empty unless [`RunOptions::profile`]).
    pub executions: BTreeMap<u32, Vec<u64>>,
    /// Wall time from the first release to the last result (sessions are
    /// opened before it starts).
    pub elapsed: Duration,
    /// When each model executed (one entry per model that ran; an
    /// ensemble lists its steps).
    pub activity: Vec<Activity>,
}

/// When a model executed during a run.
#[derive(Debug, Clone)]
pub struct Activity {
    pub model: String,
    /// Start of its first execution.
    pub first_start: Instant,
    /// End of its last execution (µs precision).
    pub last_end: Instant,
    pub executions: usize,
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
    /// Stateful backend: the stacking axis (within the config dims) of
    /// each data input, by name (see [`Plan::input_axis`]).
    input_axes: Vec<(String, usize)>,
    /// Stateful backend: the stacking axis of each of `outputs`.
    output_axes: Vec<usize>,
    controls: Option<ControlSpec>,
    /// Stateful backend: the reset input (the START control's name).
    reset_input: Option<String>,
    /// The session's input names (controls it lacks are not passed).
    session_inputs: Vec<String>,
    /// Outputs reported to the client, in config order.
    outputs: Vec<String>,
    /// The session's outputs: how many, the index of each of `outputs`
    /// and of each state's output among them (a run gives its outputs in
    /// session order, see [`ModelSession::run_into`]).
    session_outputs: usize,
    output_at: Vec<usize>,
    state_at: Vec<usize>,
    store: StateStore<SeqHandle>,
    max_batch_size: i64,
}

/// The tensors of one instance's runs, reused from batch to batch: the
/// assembled inputs are refilled in place (so the session keeps its views
/// of their memory) and the output vectors are refilled by
/// [`ModelSession::run_into`].
#[derive(Default)]
struct Io {
    inputs: Vec<(String, Tensor)>,
    /// Per input: where it holds zeros (padding rows written once).
    zeros: Vec<super::stack::Zeros>,
    outputs: Vec<(String, Tensor)>,
}

/// A batch for a worker: its tensors, and whether to run them (false when
/// assembling the inputs failed).
struct Job {
    io: Io,
    run: bool,
}

/// A batch a worker finished.
struct Done {
    instance: usize,
    io: Io,
    outcome: Result<(), RunError>,
    /// How long it ran, when measured ([`RunOptions::profile`]).
    elapsed: Option<Duration>,
}

/// Runs the inputs of `io` on `session` into its outputs.
fn execute(session: &mut ModelSession, io: &mut Io) -> Result<(), RunError> {
    session.run_into(&io.inputs, &mut io.outputs)
}

/// Makes entry `k` of `buf` the tensor `t` (moved; copied into the memory
/// already there when it fits, see [`put`]).
fn put_tensor(buf: &mut Vec<(String, Tensor)>, k: usize, name: &str, t: Tensor) {
    match buf.get_mut(k) {
        Some((n, old)) if n == name => {
            if copy_data(&mut old.data, &t.data) {
                old.shape = t.shape;
            } else {
                *old = t;
            }
        }
        Some(slot) => *slot = (name.to_string(), t),
        None => buf.push((name.to_string(), t)),
    }
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

/// The memory of owned requests whose tensors are in a batch already,
/// kept to hold results: a result built in it needs no new memory, and
/// the request's is not freed (see [`Driver::start`]). A kept tensor holds
/// at most twice the memory its result needs, or [`Spare::SMALL`] bytes.
#[derive(Default)]
struct Spare {
    /// Emptied lists of tensors.
    lists: Vec<Vec<(String, Tensor)>>,
    /// Names and tensors whose contents are to be overwritten.
    tensors: Vec<(String, Tensor)>,
}

impl Spare {
    /// At most this many lists and tensors are kept (the rest is freed).
    const KEEP: usize = 64;
    /// Memory any result may keep, whatever its size.
    const SMALL: usize = 256;

    fn give(&mut self, mut list: Vec<(String, Tensor)>) {
        let room = Self::KEEP.saturating_sub(self.tensors.len());
        self.tensors.extend(list.drain(..).take(room));
        if list.capacity() > 0 && self.lists.len() < Self::KEEP {
            self.lists.push(list);
        }
    }

    /// An empty list for `n` tensors.
    fn list(&mut self, n: usize) -> Vec<(String, Tensor)> {
        self.lists.pop().unwrap_or_else(|| Vec::with_capacity(n))
    }

    /// An entry named `name` with an empty shape, and data whose memory
    /// may be reused for `bytes` bytes (its contents are to be replaced).
    fn take(&mut self, name: &str, bytes: usize) -> (String, Tensor) {
        let Some((mut n, mut t)) = self.tensors.pop() else {
            return (
                name.to_string(),
                Tensor {
                    shape: Vec::new(),
                    data: TensorData::U8(Vec::new()),
                },
            );
        };
        if n.capacity() >= name.len() {
            n.clear();
            n.push_str(name);
        } else {
            n = name.to_string();
        }
        t.shape.clear();
        if t.data.capacity_bytes() > Self::SMALL.max(bytes.saturating_mul(2)) {
            t.data = TensorData::U8(Vec::new());
        }
        (n, t)
    }

    /// `name` with a copy of `data`, its shape the concatenation of
    /// `shape`.
    fn tensor(&mut self, name: &str, shape: &[&[i64]], data: &TensorData) -> (String, Tensor) {
        let bytes = data.len() * data.dtype().element_size().unwrap_or(0);
        let (n, mut t) = self.take(name, bytes);
        for s in shape {
            t.shape.extend_from_slice(s);
        }
        t.data.assign(data);
        (n, t)
    }
}

/// Collects the scheduler's records: of requests it refused or timed out
/// (the others get their results from their batch), and of the requests
/// it answered, whose ids move into their results (see
/// [`Driver::finish`]).
#[derive(Default)]
struct Records {
    requests: Vec<RequestRecord>,
    /// `(tag, id)` of the answered requests.
    ok: Vec<(u64, String)>,
}

impl Sink for Records {
    fn request(&mut self, record: RequestRecord) {
        if record.status == Status::Ok {
            self.ok.push((record.tag, record.id));
        } else {
            self.requests.push(record);
        }
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

/// Opens one session per instance on `device`, set up from the model's
/// config as its Triton backend would (see [`super::session_config`]).
fn open_sessions(
    model: &LoadedModel,
    device: Device,
    n: usize,
) -> Result<Vec<ModelSession>, RunnerError> {
    let file = model
        .model_file
        .as_ref()
        .ok_or_else(|| setup(format!("model '{}' has no model file", model.name)))?;
    let options = session_options(&model.cfg, device)
        .map_err(|e| setup(format!("model '{}': {e}", model.name)))?;
    (0..n)
        .map(|_| ModelSession::open(file, &options).map_err(setup))
        .collect()
}

/// Warms every instance up before the first request, as Triton does when
/// it loads the model:
///
/// * onnxruntime backend: the config's `model_warmup` samples (see
///   [`super::warmup`]);
/// * stateful backend: its own warm-up runs (zero inputs, every row
///   starting a sequence, at the batch sizes of
///   [`super::stateful::StatefulBackend::warmup_batch_sizes`]; see
///   [`super::stateful::warmup_inputs`]). Its `model_warmup` samples go
///   through the backend in Triton; `tritonctl` does not send them (a load
///   note says so).
///
/// A failure stops the run before any request, as it fails Triton's load.
fn warm_up(
    model: &LoadedModel,
    plan: &Plan,
    stateful: Option<&super::stateful::StatefulBackend>,
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
        let model_inputs: Vec<super::stateful::ModelInput> = first
            .inputs()
            .iter()
            .map(|t| super::stateful::ModelInput {
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
                super::stateful::warmup_inputs(&model.cfg, &model_inputs, reset, &states, b)
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
    let samples = super::warmup::samples(&model.cfg, &model.dir).map_err(failed)?;
    for session in sessions {
        super::warmup::run(session, &samples).map_err(failed)?;
    }
    Ok(())
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
    let mut axes = Vec::new();
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
            axes.push((t.0.clone(), axis));
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
    // Every name was found among the session's outputs above.
    let position = |name: &str| {
        session
            .outputs()
            .iter()
            .position(|o| o.name == name)
            .ok_or_else(|| setup(format!("'{name}' is not an output of the ONNX model")))
    };
    let output_at = outputs
        .iter()
        .map(|o| position(o))
        .collect::<Result<_, _>>()?;
    let state_at = specs
        .iter()
        .map(|s| position(&s.output_name))
        .collect::<Result<_, _>>()?;
    let fp16 = stateful
        && cfg
            .parameters
            .get("store_states_as_fp16")
            .is_some_and(|p| p.string_value.trim() == "1");
    // (Stateful backend: `axes` holds the inputs', then the outputs'.)
    let output_axes = outputs
        .iter()
        .map(|o| {
            axes.get(cfg.input.len()..)
                .unwrap_or(&[])
                .iter()
                .find(|(n, _)| n == o)
                .map_or(0, |&(_, a)| a)
        })
        .collect();
    axes.truncate(cfg.input.len());
    Ok(Plan {
        layout,
        input_axes: axes,
        output_axes,
        controls,
        reset_input,
        session_inputs,
        outputs,
        session_outputs: session.outputs().len(),
        output_at,
        state_at,
        store: StateStore::new(specs).with_fp16_storage(fp16),
        max_batch_size: i64::from(cfg.max_batch_size),
    })
}
/// The scheduler's view of a request: its id (for the scheduler's
/// messages; moved into the result when it is answered), its index as
/// `tag` (records are matched back by it) and, when the scheduler compares
/// shapes (`sigs`), the signature of its inputs.
fn sched_request(
    index: usize,
    r: &RunRequest,
    mbs: i64,
    sigs: Option<&mut Signatures>,
    sequence: bool,
) -> Request {
    let mut q = Request::new(r.id.clone(), 0);
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
    if let Some(sigs) = sigs {
        q.shape = Some(sigs.of(r));
    }
    q
}

/// The input signatures of the requests (names and shapes), one shared
/// copy per distinct signature.
#[derive(Default)]
struct Signatures {
    seen: std::collections::HashSet<Arc<str>>,
    buf: String,
    /// The input names and shapes of the last request, and its signature:
    /// a request with the same ones (as a sequence's requests usually
    /// are) gets it without formatting or hashing.
    last: Vec<(String, Vec<i64>)>,
    last_sig: Option<Arc<str>>,
}

impl Signatures {
    fn of(&mut self, r: &RunRequest) -> Arc<str> {
        if let Some(sig) = &self.last_sig {
            let same = self.last.len() == r.inputs.len()
                && self
                    .last
                    .iter()
                    .zip(r.inputs.iter())
                    .all(|((n, s), (rn, t))| n == rn && *s == t.shape);
            if same {
                return sig.clone();
            }
        }
        let sig = self.format(r);
        self.last.resize_with(r.inputs.len(), Default::default);
        for ((n, s), (rn, t)) in self.last.iter_mut().zip(r.inputs.iter()) {
            n.clone_from(rn);
            s.clone_from(&t.shape);
        }
        self.last_sig = Some(sig.clone());
        sig
    }

    /// The signature of `r`, its names and shapes as text, shared.
    fn format(&mut self, r: &RunRequest) -> Arc<str> {
        use std::fmt::Write;
        self.buf.clear();
        for (k, (n, t)) in r.inputs.iter().enumerate() {
            if k > 0 {
                self.buf.push(';');
            }
            let _ = write!(self.buf, "{n}{:?}", t.shape);
        }
        if let Some(a) = self.seen.get(self.buf.as_str()) {
            return a.clone();
        }
        let a: Arc<str> = Arc::from(self.buf.as_str());
        self.seen.insert(a.clone());
        a
    }
}

impl Plan {
    /// Stateful backend: the stacking axis of data input `name`; 0 for a
    /// name the config lacks.
    fn input_axis(&self, name: &str) -> usize {
        self.input_axes
            .iter()
            .find(|(n, _)| n == name)
            .map_or(0, |&(_, a)| a)
    }

    /// Assembles the inputs of one batch into `buf` (see [`Io`]).
    fn inputs_into(
        &mut self,
        requests: &[RunRequest],
        flight: &InFlight,
        batch: &crate::batching::Batch,
        starts: &[bool],
        buf: &mut Vec<(String, Tensor)>,
        zeros: &mut Vec<super::stack::Zeros>,
    ) -> Result<(), String> {
        // Every entry written below other than by stacking forgets where
        // it held zeros.
        use super::stack::Zeros;
        let first = flight
            .tags
            .iter()
            .flatten()
            .map(|&i| &requests[i])
            .next()
            .ok_or("a batch without requests")?;
        let mut k = 0;
        for (name, sample) in &first.inputs {
            // A batch of one request: its tensor as it is (copied into the
            // buffer, no intermediate tensors).
            if let [Some(_)] = flight.tags.as_slice() {
                let axis = self.input_axis(name);
                let shape = match self.layout {
                    Layout::Single => Some(&sample.shape[..]),
                    Layout::Batch if !sample.shape.is_empty() => Some(&sample.shape[..]),
                    Layout::Stateful
                        if sample.shape.first() == Some(&1) && axis + 1 < sample.shape.len() =>
                    {
                        Some(&sample.shape[1..])
                    }
                    // Errors come from the general path.
                    _ => None,
                };
                if let Some(shape) = shape {
                    Zeros::forget(zeros, k);
                    put(buf, k, name, shape, &sample.data)?;
                    k += 1;
                    continue;
                }
            }
            if self.layout == Layout::Single {
                let t = match flight.tags.first() {
                    Some(Some(i)) => requests[*i].inputs.get(name).cloned().ok_or_else(|| {
                        format!("request {}: input '{name}' is missing", requests[*i].id)
                    })?,
                    _ => return Err("a batch without requests".into()),
                };
                Zeros::forget(zeros, k);
                put_tensor(buf, k, name, t);
                k += 1;
                continue;
            }
            // Rows stacked in place into the buffer's tensor: along axis 0,
            // or (stateful backend) with each request's leading batch
            // dimension of 1 dropped, along the config's -1 axis; padding
            // rows are zeros shaped like the first request's tensor.
            let stateful = self.layout == Layout::Stateful;
            let axis = if stateful { self.input_axis(name) } else { 0 };
            let pad_shape: &[i64] = if stateful {
                sample.shape.get(1..).unwrap_or(&[])
            } else {
                &sample.shape
            };
            // Batches of up to 16 rows keep this list on the stack.
            let mut parts: smallvec::SmallVec<[(&[i64], Option<&TensorData>); 16]> =
                smallvec::SmallVec::new();
            for tag in &flight.tags {
                let Some(i) = tag else {
                    parts.push((pad_shape, None));
                    continue;
                };
                let t = requests[*i].inputs.get(name).ok_or_else(|| {
                    format!(
                        "request {}: input '{name}' is missing (other requests of its batch have it)",
                        requests[*i].id
                    )
                })?;
                if stateful {
                    if t.shape.first() != Some(&1) {
                        return Err(format!(
                            "request {}: input '{name}' has shape {:?}; the stateful backend takes requests of batch size 1",
                            requests[*i].id, t.shape
                        ));
                    }
                    parts.push((&t.shape[1..], Some(&t.data)));
                } else {
                    parts.push((&t.shape, Some(&t.data)));
                }
            }
            if !matches!(buf.get(k), Some((n, _)) if n == name) {
                let t = Tensor {
                    shape: Vec::new(),
                    data: TensorData::empty(sample.dtype()),
                };
                Zeros::forget(zeros, k);
                match buf.get_mut(k) {
                    Some(slot) => *slot = (name.clone(), t),
                    None => buf.push((name.clone(), t)),
                }
            }
            if zeros.len() <= k {
                zeros.resize(k + 1, Default::default());
            }
            super::stack::concat_parts_into(
                &mut buf[k].1,
                sample.dtype(),
                &parts,
                axis,
                &mut zeros[k],
            )
            .map_err(|e| format!("input '{name}': {e}"))?;
            k += 1;
        }
        if let Some(reset) = &self.reset_input {
            let n = starts.len() as i64;
            // Copied in place when the buffer holds a reset tensor of this
            // size already.
            Zeros::forget(zeros, k);
            let fits = matches!(buf.get(k), Some((nm, t)) if nm == reset
                && matches!(&t.data, TensorData::Bool(v) if v.len() == starts.len()));
            if fits {
                let (_, t) = &mut buf[k];
                if let TensorData::Bool(v) = &mut t.data {
                    v.copy_from_slice(starts);
                }
                if t.shape != [n, 1] {
                    t.shape = vec![n, 1];
                }
            } else {
                let t = Tensor::new(vec![n, 1], TensorData::Bool(starts.to_vec()))
                    .map_err(|e| e.to_string())?;
                put_tensor(buf, k, reset, t);
            }
            k += 1;
        } else if let Some(spec) = &self.controls {
            let records = batch.executed_slot_records();
            for c in spec.tensors(&records)? {
                if !self.session_inputs.contains(&c.name) {
                    continue;
                }
                let t = Tensor::new(c.shape, control_data(c.data)).map_err(|e| e.to_string())?;
                Zeros::forget(zeros, k);
                put_tensor(buf, k, &c.name, t);
                k += 1;
            }
        }
        if !self.store.specs().is_empty() {
            k = self
                .store
                .gather_into(&flight.keys, buf, k, zeros)
                .map_err(|e| e.to_string())?;
        }
        buf.truncate(k);
        zeros.truncate(k);
        Ok(())
    }

    /// Splits the outputs of one batch per row into `per_row` (one entry
    /// per row of the batch, `None` for padding rows); stores the states.
    fn outputs(
        &mut self,
        flight: &InFlight,
        outs: &[(String, Tensor)],
        per_row: &mut Vec<Option<Vec<(String, Tensor)>>>,
        spare: &mut Spare,
    ) -> Result<(), String> {
        per_row.clear();
        if outs.len() != self.session_outputs {
            return Err(format!(
                "the model returned {} outputs instead of {}",
                outs.len(),
                self.session_outputs
            ));
        }
        if !self.store.specs().is_empty() {
            let at = &self.state_at;
            self.store
                .scatter_with(&flight.keys, |i, name| {
                    let (n, t) = &outs[at[i]];
                    debug_assert_eq!(n, name);
                    Some(t)
                })
                .map_err(|e| e.to_string())?;
        }
        let rows = flight.tags.len();
        let n = self.outputs.len();
        per_row.extend(flight.tags.iter().map(|t| t.map(|_| spare.list(n))));
        for ((name, &at), &axis) in self
            .outputs
            .iter()
            .zip(&self.output_at)
            .zip(&self.output_axes)
        {
            let (n, t) = &outs[at];
            debug_assert_eq!(n, name);
            match self.layout {
                Layout::Single => {
                    if let Some(Some(o)) = per_row.first_mut() {
                        o.push(spare.tensor(name, &[&t.shape], &t.data));
                    }
                }
                Layout::Batch => {
                    let mut start = 0;
                    for (&s, o) in flight.sizes.iter().zip(per_row.iter_mut()) {
                        let piece = t.rows(start, s).map_err(|e| {
                            format!("output '{name}' with shape {:?}: {e}", t.shape)
                        })?;
                        start += s;
                        if let Some(o) = o {
                            o.push((name.clone(), piece));
                        }
                    }
                }
                Layout::Stateful => {
                    // Each real row's piece (padding rows are dropped), with
                    // the request's batch axis of 1 put back.
                    if rows == 1 && t.shape.get(axis) == Some(&1) {
                        // One row: the whole tensor.
                        if let Some(Some(o)) = per_row.first_mut() {
                            o.push(spare.tensor(name, &[&[1], &t.shape], &t.data));
                        }
                        continue;
                    }
                    if t.shape.get(axis) != Some(&(rows as i64)) {
                        return Err(format!(
                            "output '{name}' with shape {:?}: expected {rows} rows along axis {axis}",
                            t.shape
                        ));
                    }
                    let bytes = (t.data.len() / rows) * t.dtype().element_size().unwrap_or(0);
                    for (j, o) in per_row.iter_mut().enumerate() {
                        let Some(o) = o else {
                            continue;
                        };
                        let (n, mut piece) = spare.take(name, bytes);
                        slice_axis_into(&mut piece.data, &t.data, &t.shape, axis, j, 1).map_err(
                            |e| format!("output '{name}' with shape {:?}: {e}", t.shape),
                        )?;
                        piece.shape.push(1);
                        piece.shape.extend_from_slice(&t.shape);
                        piece.shape[axis + 1] = 1;
                        o.push((n, piece));
                    }
                }
            }
        }
        Ok(())
    }
}

/// How many requests without an arrival time may be released ahead of
/// the finished ones (raised when nothing runs and nothing is due, so that
/// sequences waiting for a slot cannot hold up the ones that own one).
const WINDOW: usize = 256;

/// How often a streaming run looks for new requests while batches run on
/// worker threads.
const STREAM_POLL: Duration = Duration::from_micros(200);

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

/// The driving thread's state: the scheduler, the requests and their
/// results, the batches in flight.
struct Driver<'r> {
    /// Owned when streaming or given by [`run_model_owned`]: the tensors
    /// of an owned request are freed once they are in its batch.
    requests: Cow<'r, [RunRequest]>,
    plan: Plan,
    sched: Scheduler,
    sink: Records,
    started: Vec<usize>,
    flights: Vec<InFlight>,
    /// Per instance: its buffers, `None` while a worker holds them.
    ios: Vec<Option<Io>>,
    results: Vec<Option<RunResult>>,
    /// Execution times (µs), indexed by the executed batch size.
    executions: Vec<Vec<u64>>,
    /// Per request: its release time.
    arrivals: Vec<u64>,
    /// Request indices in release order.
    order: Vec<usize>,
    /// Position in `order` of the next request to release.
    next: usize,
    done_count: usize,
    window: usize,
    busy: usize,
    epoch: Instant,
    /// Set when the scheduler compares input shapes.
    sigs: Option<Signatures>,
    sequence: bool,
    /// Per request: its scheduler form, built before the clock starts
    /// (taken when it is released).
    pending: Vec<Option<Request>>,
    /// An emptied [`InFlight`] and start-flag buffer for the next batch.
    spare: InFlight,
    starts: Vec<bool>,
    /// Reused by [`Plan::outputs`].
    per_row: Vec<Option<Vec<(String, Tensor)>>>,
    /// Memory of requests already run, for results.
    recycled: Spare,
    /// The stateful backend's own per-batch rules (`crate::run::stateful`).
    stateful: Option<super::stateful::StatefulBackend>,
    /// Streaming (see [`run_model_streaming`]): where more requests come
    /// from (`None` once the sender is gone) and where each result goes.
    inbox: Option<mpsc::Receiver<RunRequest>>,
    outbox: Option<&'r (dyn Fn(usize, RunResult) + Sync)>,
    /// Start of the first execution, end of the last (since `epoch`), and
    /// the number of executions.
    first_start: Option<Duration>,
    last_end_us: u64,
    executed: usize,
    /// See [`Driver::clock`].
    hint: Option<u64>,
}

/// Asks the processor to bring the `bytes` bytes at `p` (at most four
/// cache lines) into its caches, ahead of their use (x86-64; elsewhere it
/// does nothing). Never faults, whatever the address.
#[inline(always)]
fn prefetch(p: *const u8, bytes: usize) {
    #[cfg(target_arch = "x86_64")]
    for line in 0..bytes.div_ceil(64).min(4) {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch is a hint: it reads nothing and cannot fault.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(line * 64).cast()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (p, bytes);
}

/// [`prefetch`] of the memory of `v` itself (not of what it points to).
fn prefetch_of<T>(v: &T) {
    prefetch((v as *const T).cast(), std::mem::size_of::<T>());
}

impl Driver<'_> {
    /// Prefetches the memory the next request to be released will need
    /// (see [`prefetch`]): called before a batch runs, whose run hides the
    /// time the processor takes to fetch it.
    fn prefetch_next(&self) {
        let Some(&j) = self.order.get(self.next) else {
            return;
        };
        if let Some(r) = self.requests.get(j) {
            prefetch_of(r);
            prefetch(r.id.as_ptr(), r.id.len());
            for (name, t) in r.inputs.iter() {
                prefetch(name.as_ptr(), name.len());
                prefetch(t.shape.as_ptr().cast(), std::mem::size_of_val(&t.shape[..]));
                let (p, n) = t.data.memory();
                prefetch(p, n);
            }
        }
        if let Some(Some(p)) = self.pending.get(j) {
            prefetch_of(p);
            prefetch(p.id.as_ptr(), p.id.len());
        }
        if let Some(a) = self.arrivals.get(j) {
            prefetch_of(a);
        }
        if let Some(r) = self.results.get(j) {
            prefetch_of(r);
        }
    }

    fn now(&self) -> u64 {
        self.epoch.elapsed().as_micros() as u64
    }

    /// The time of `hint` when set (inline execution: the end of the batch
    /// that just ran, nothing having happened since), else [`Self::now`].
    /// Saves reading the clock several times per step.
    fn clock(&self) -> u64 {
        self.hint.unwrap_or_else(|| self.now())
    }

    /// Whether the request at `order[next]` is held back by the window.
    fn held(&self) -> bool {
        self.requests[self.order[self.next]].arrival_us.is_none()
            && self.next - self.done_count >= self.window
    }

    /// The release time of the next request, unless none is left or it is
    /// held back.
    fn next_arrival(&self) -> Option<u64> {
        (self.next < self.requests.len() && !self.held())
            .then(|| self.arrivals[self.order[self.next]])
    }

    /// Releases the requests due at `t`. Requests without an arrival time
    /// are released as fast as possible, but at most `window` ahead of the
    /// finished ones (the scheduler's queues stay short).
    fn admit(&mut self, t: u64) {
        while self.next_arrival().is_some_and(|a| a <= t) {
            let i = self.order[self.next];
            let r = match self.pending.get_mut(i).and_then(Option::take) {
                Some(r) => r,
                None => sched_request(
                    i,
                    &self.requests[i],
                    self.plan.max_batch_size,
                    self.sigs.as_mut(),
                    self.sequence,
                ),
            };
            self.sched.arrive(t, r, &mut self.sink);
            self.next += 1;
        }
    }

    fn set_result(&mut self, i: usize, outcome: Result<Vec<(String, Tensor)>, String>) {
        let id = self.requests[i].id.clone();
        self.set_result_with_id(i, outcome, id);
    }

    /// [`Self::set_result`] with the request's id given (moved from the
    /// scheduler's record instead of copied).
    fn set_result_with_id(
        &mut self,
        i: usize,
        outcome: Result<Vec<(String, Tensor)>, String>,
        id: String,
    ) {
        self.done_count += usize::from(self.results[i].is_none());
        let result = RunResult {
            id,
            sequence_id: self.requests[i].sequence_id.clone(),
            outcome,
        };
        match self.outbox {
            // Streaming: the result leaves; an empty marker stays.
            Some(out) => {
                self.results[i] = Some(RunResult {
                    id: String::new(),
                    sequence_id: None,
                    outcome: Ok(Vec::new()),
                });
                out(i, result);
            }
            None => self.results[i] = Some(result),
        }
    }

    /// Streaming: takes the requests that came in (released at once, in
    /// the order they came). Returns false once the inbox is closed and
    /// empty.
    fn take_inbox(&mut self, block: Option<Duration>) -> bool {
        let Some(rx) = &self.inbox else {
            return false;
        };
        let mut got = Vec::new();
        let mut open = true;
        if let Some(wait) = block {
            match rx.recv_timeout(wait) {
                Ok(r) => got.push(r),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => open = false,
            }
        }
        while open {
            match rx.try_recv() {
                Ok(r) => got.push(r),
                Err(mpsc::TryRecvError::Empty) => break,
                Err(mpsc::TryRecvError::Disconnected) => open = false,
            }
        }
        if !open {
            self.inbox = None;
        }
        if !got.is_empty() {
            let now = self.now();
            let requests = self.requests.to_mut();
            for mut r in got {
                r.arrival_us = None;
                let i = requests.len();
                self.pending.push(Some(sched_request(
                    i,
                    &r,
                    self.plan.max_batch_size,
                    self.sigs.as_mut(),
                    self.sequence,
                )));
                requests.push(r);
                self.arrivals.push(now);
                self.order.push(i);
                self.results.push(None);
            }
        }
        open
    }

    /// Adds an execution time to [`Self::executions`].
    fn record_execution(&mut self, size: u32, elapsed: Option<Duration>) {
        let Some(elapsed) = elapsed else {
            return;
        };
        let size = size as usize;
        if self.executions.len() <= size {
            self.executions.resize_with(size + 1, Vec::new);
        }
        self.executions[size].push(elapsed.as_micros() as u64);
    }

    /// A batch finished: its results, then the scheduler's completion.
    fn finish(&mut self, d: Done) {
        self.busy -= 1;
        let flight = std::mem::take(&mut self.flights[d.instance]);
        let io = d.io;
        let mut per_row = std::mem::take(&mut self.per_row);
        let outcome = match (&flight.failed, d.outcome) {
            (Some(e), _) => Err(e.clone()),
            (None, Ok(())) => {
                self.record_execution(flight.size, d.elapsed);
                self.plan
                    .outputs(&flight, &io.outputs, &mut per_row, &mut self.recycled)
            }
            (None, Err(e)) => {
                self.record_execution(flight.size, d.elapsed);
                Err(e.to_string())
            }
        };
        self.ios[d.instance] = Some(io);
        // The scheduler's completion first: its records of the answered
        // requests carry their ids, which move into the results.
        let now = self.clock();
        self.last_end_us = now;
        self.executed += 1;
        self.sched.complete(now, d.instance, &mut self.sink);
        for released in self.sched.drain_releases() {
            self.plan.store.release(&released.sequence);
        }
        match outcome {
            Ok(()) => {
                for (tag, o) in flight.tags.iter().zip(per_row.drain(..)) {
                    let (Some(i), Some(o)) = (*tag, o) else {
                        continue;
                    };
                    match self.sink.ok.iter().position(|r| r.0 == i as u64) {
                        Some(k) => {
                            let id = self.sink.ok.swap_remove(k).1;
                            self.set_result_with_id(i, Ok(o), id);
                        }
                        None => self.set_result(i, Ok(o)),
                    }
                }
            }
            Err(e) => {
                let ids: Vec<&str> = flight
                    .tags
                    .iter()
                    .flatten()
                    .map(|&i| self.requests[i].id.as_str())
                    .collect();
                let msgs: Vec<(usize, String)> = flight
                    .tags
                    .iter()
                    .flatten()
                    .map(|&i| {
                        let msg = if ids.len() > 1 {
                            format!(
                                "request {}: {e} (in a batch with requests {})",
                                self.requests[i].id,
                                ids.join(", ")
                            )
                        } else {
                            format!("request {}: {e}", self.requests[i].id)
                        };
                        (i, msg)
                    })
                    .collect();
                for (i, msg) in msgs {
                    self.set_result(i, Err(msg));
                }
            }
        }
        self.sink.ok.clear();
        per_row.clear();
        self.per_row = per_row;
        let mut flight = flight;
        flight.tags.clear();
        flight.keys.clear();
        flight.sizes.clear();
        flight.size = 0;
        flight.failed = None;
        self.spare = flight;
    }

    /// Forms the job of the batch the scheduler started on `instance`.
    fn start(&mut self, instance: usize) -> Job {
        if self.first_start.is_none() {
            self.first_start = Some(self.epoch.elapsed());
        }
        let batch = self.sched.batch(instance);
        // The vectors of a finished batch, emptied, are reused.
        let mut flight = std::mem::take(&mut self.spare);
        flight.size = batch.size;
        let mut starts = std::mem::take(&mut self.starts);
        starts.clear();
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
                if start || !self.plan.store.contains(&k) {
                    self.plan.store.reset(k);
                }
            }
        }
        let now = self.clock();
        let answers = match self.stateful.as_mut() {
            Some(b) => {
                let f = &mut flight;
                b.apply(
                    instance,
                    now,
                    &self.requests,
                    &mut f.tags,
                    &mut f.keys,
                    &mut f.sizes,
                    &mut starts,
                )
            }
            None => Vec::new(),
        };
        let mut io = self.ios[instance].take().unwrap_or_default();
        let assembled = self.plan.inputs_into(
            &self.requests,
            &flight,
            batch,
            &starts,
            &mut io.inputs,
            &mut io.zeros,
        );
        if let Err(e) = assembled {
            flight.failed = Some(e);
        }
        // The requests' tensors are in the batch now. Owned requests give
        // their memory to the results of this batch (see [`Spare`]),
        // instead of freeing it while the results take fresh memory.
        if let Cow::Owned(requests) = &mut self.requests {
            for &i in flight.tags.iter().flatten() {
                if let Some(r) = requests.get_mut(i) {
                    self.recycled.give(std::mem::take(&mut r.inputs).into_vec());
                }
            }
        }
        let run = flight.failed.is_none();
        self.flights[instance] = flight;
        self.starts = starts;
        for (i, r) in answers {
            self.set_result(i, r.outcome);
        }
        self.busy += 1;
        Job { io, run }
    }

    /// Inline execution: replays what happened while the batch ran (from
    /// `from` to now) in time order, as a driver thread watching the clock
    /// would have seen it: releases at their times, scheduler timers at
    /// their deadlines.
    fn catch_up(&mut self, from: u64, end: u64) {
        let mut last = from;
        let mut started = Vec::new();
        loop {
            let a = self.next_arrival();
            let d = self.sched.next_deadline().filter(|&d| d > last);
            let e = match (a, d) {
                (Some(a), Some(d)) => Some(a.min(d)),
                (x, None) | (None, x) => x,
            };
            let Some(e) = e.filter(|&e| e <= end) else {
                break;
            };
            let at = e.max(last);
            self.admit(at);
            self.sched.poll(at, &mut self.sink, &mut started);
            // The only instance is running: nothing can start.
            debug_assert!(started.is_empty());
            last = at;
        }
    }

    /// Results for the requests the scheduler refused or timed out.
    fn refusals(&mut self) {
        // Records of answered requests not matched by their batch's
        // completion (responses held back and released later) are not
        // needed: their results are set already.
        self.sink.ok.clear();
        if self.sink.requests.is_empty() {
            return;
        }
        let records = std::mem::take(&mut self.sink.requests);
        for rec in records {
            let i = rec.tag as usize;
            if i < self.results.len() && rec.status != Status::Ok && self.results[i].is_none() {
                let reason = rec.reason.unwrap_or_else(|| match rec.status {
                    Status::TimedOut => "request timed out".to_string(),
                    _ => "request rejected".to_string(),
                });
                self.set_result(i, Err(reason));
            }
        }
    }
}

/// Runs `requests` on a single (non-ensemble) model.
///
/// With one instance the batches run on the calling thread (no hand-offs:
/// while a batch runs nothing else can start, and what happened meanwhile
/// is replayed in time order when it returns); with more, each instance has
/// a worker thread.
pub fn run_model(
    model: &LoadedModel,
    requests: &[RunRequest],
    opts: &RunOptions,
) -> Result<RunOutput, RunnerError> {
    run_inner(model, Cow::Borrowed(requests), None, None, None, opts)
}

/// [`run_model`] on requests it may consume: each request's input tensors
/// are freed as soon as they are copied into its batch, so that the
/// results reuse their memory. The requests' other fields are kept; the
/// results are those [`run_model`] gives.
pub fn run_model_owned(
    model: &LoadedModel,
    requests: Vec<RunRequest>,
    opts: &RunOptions,
) -> Result<RunOutput, RunnerError> {
    run_inner(model, Cow::Owned(requests), None, None, None, opts)
}

/// Runs requests on a single (non-ensemble) model as they come: each
/// request received from `inbox` is released at once (in the order they
/// come), and each result is passed to `outbox` with the request's number
/// (its position in the order received) as soon as it is known. Returns
/// when the sender of `inbox` is gone and every request received has its
/// result; the returned [`RunOutput::results`] are then empty markers.
/// `ready` is called once the sessions are open (not when setting up
/// fails).
pub fn run_model_streaming(
    model: &LoadedModel,
    inbox: mpsc::Receiver<RunRequest>,
    outbox: &(dyn Fn(usize, RunResult) + Sync),
    ready: &(dyn Fn() + Sync),
    opts: &RunOptions,
) -> Result<RunOutput, RunnerError> {
    run_inner(
        model,
        Cow::Borrowed(&[]),
        Some(inbox),
        Some(outbox),
        Some(ready),
        opts,
    )
}

fn run_inner<'r>(
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
        super::stateful::StatefulBackend::from_config(&model.cfg, instances).map_err(setup)?;
    let mut sessions = open_sessions(model, opts.device, settings.instances)?;
    let plan = plan(model, &sessions[0])?;
    warm_up(model, &plan, stateful.as_ref(), &mut sessions)?;
    if let Some(ready) = ready {
        ready();
    }
    let n = requests.len();
    if n == 0 && inbox.is_none() {
        return Ok(RunOutput::default());
    }

    // Release order: given offsets; a request without one follows the
    // previous request at once.
    let mut arrivals = Vec::with_capacity(n);
    let mut last = 0u64;
    for r in requests.iter() {
        let a = r.arrival_us.unwrap_or(last);
        arrivals.push(a);
        last = a;
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| arrivals[i]);

    let sequence = matches!(
        settings.kind,
        crate::batching::SchedulerKind::Direct(_) | crate::batching::SchedulerKind::Oldest(_)
    );
    let mut sigs = settings.enforce_shapes.then(Signatures::default);
    let pending: Vec<Option<Request>> = requests
        .iter()
        .enumerate()
        .map(|(i, r)| {
            Some(sched_request(
                i,
                r,
                plan.max_batch_size,
                sigs.as_mut(),
                sequence,
            ))
        })
        .collect();

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
        results: vec![None; n],
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

#[cfg(test)]
mod tests {
    use super::*;

    fn f32s(shape: &[i64], v: Vec<f32>) -> Tensor {
        Tensor::new(shape.to_vec(), TensorData::F32(v)).unwrap()
    }

    fn addr(t: &Tensor) -> *const f32 {
        match &t.data {
            TensorData::F32(v) => v.as_ptr(),
            _ => std::ptr::null(),
        }
    }

    #[test]
    fn a_requests_signature_is_its_names_and_shapes_shared_between_equal_ones() {
        let req = |inputs: &[(&str, &[i64])]| RunRequest {
            id: String::new(),
            index: 0,
            origin: String::new(),
            arrival_us: None,
            sequence_id: None,
            start: false,
            end: false,
            priority: 0,
            timeout_us: 0,
            inputs: inputs
                .iter()
                .map(|(n, s)| {
                    let len = s.iter().product::<i64>() as usize;
                    (n.to_string(), f32s(s, vec![0.0; len]))
                })
                .collect(),
        };
        let a = req(&[("X", &[1, 2]), ("Y", &[3])]);
        let b = req(&[("X", &[2, 1]), ("Y", &[3])]);
        let c = req(&[("X", &[1, 2]), ("Z", &[3])]);
        let mut sigs = Signatures::default();
        let first = sigs.of(&a);
        assert_eq!(&*first, "X[1, 2];Y[3]");
        // The same names and shapes: the same shared text.
        assert!(Arc::ptr_eq(&sigs.of(&a.clone()), &first));
        let other = sigs.of(&b);
        assert_eq!(&*other, "X[2, 1];Y[3]");
        assert_eq!(&*sigs.of(&c), "X[1, 2];Z[3]");
        // Back to the first: found again, shared, after others.
        assert!(Arc::ptr_eq(&sigs.of(&a), &first));
        assert!(Arc::ptr_eq(&sigs.of(&b), &other));
        assert_eq!(&*sigs.of(&req(&[("X", &[1, 2])])), "X[1, 2]");
        assert_eq!(&*sigs.of(&req(&[])), "");
    }

    #[test]
    fn prefetching_any_address_is_harmless() {
        // A hint only: no address, mapped or not, may fault.
        for addr in [0usize, 8, 4096, usize::MAX - 63, 0xdead_0000] {
            prefetch(addr as *const u8, 256);
        }
        prefetch(std::ptr::null(), 0);
        let v = vec![7u8; 1000];
        prefetch(v.as_ptr(), v.len());
        prefetch_of(&v);
        assert_eq!(v[999], 7);
    }

    #[test]
    fn spare_memory_holds_results_of_the_right_contents_and_never_too_much_memory() {
        let mut spare = Spare::default();
        let small = f32s(&[1, 20], vec![7.0; 20]);
        let small_at = addr(&small);
        let big = f32s(&[1, 100_000], vec![1.0; 100_000]);
        spare.give(vec![("Input".to_string(), small)]);
        spare.give(vec![("Big".to_string(), big)]);

        // The last tensor given is taken first: 400 kB are not kept for a
        // result of 20 bytes.
        let out = f32s(&[1, 5], vec![1.0, 2.0, 3.0, 4.0, 5.0]);
        let (name, t) = spare.tensor("Output", &[&[1], &out.shape], &out.data);
        assert_eq!(name, "Output");
        assert_eq!(t.shape, vec![1, 1, 5]);
        assert_eq!(t.data, out.data);
        assert!(
            t.data.capacity_bytes() < 1000,
            "{}",
            t.data.capacity_bytes()
        );

        // 80 bytes are (they are under the small size any result may keep).
        let (name, t) = spare.tensor("Out", &[&out.shape], &out.data);
        assert_eq!((name.as_str(), &t.shape[..]), ("Out", &[1i64, 5][..]));
        assert_eq!(t.data, out.data);
        assert_eq!(addr(&t), small_at, "the request's memory holds the result");

        // Other types and an empty pool give plain copies.
        let ints = Tensor::new(vec![2], TensorData::I64(vec![3, 4])).unwrap();
        spare.give(vec![("X".to_string(), f32s(&[1], vec![0.0]))]);
        let (_, t) = spare.tensor("I", &[&ints.shape], &ints.data);
        assert_eq!(t, ints);
        let (name, t) = spare.tensor("J", &[&ints.shape], &ints.data);
        assert_eq!((name.as_str(), t), ("J", ints));

        // Lists keep their memory; at most `KEEP` of each are held.
        for _ in 0..Spare::KEEP + 10 {
            spare.give(vec![("A".to_string(), f32s(&[1], vec![0.0]))]);
        }
        assert_eq!(spare.tensors.len(), Spare::KEEP);
        assert_eq!(spare.lists.len(), Spare::KEEP);
        assert!(spare.list(3).capacity() >= 1);
    }
}
