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
//!   along the config's `-1` axis, docs/spec/stateful-backend.md §5);
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
use crate::runtime::Device;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::mpsc;
use std::time::{Duration, Instant};

mod assemble;
mod driver;
mod plan;
mod pool;
#[cfg(test)]
mod tests;

use pool::run_inner;

/// How to run.
pub struct RunOptions<'a> {
    /// Where every instance runs, unless `instance_devices` says otherwise.
    pub device: Device,
    /// Where each instance the scheduler gives work to runs, in scheduler
    /// order (see [`crate::run::devices::place`]); empty: all on `device`.
    /// Composing models of an ensemble run on `device`.
    pub instance_devices: Vec<Device>,
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
            instance_devices: Vec::new(),
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
