//! Scheduler core of `tritonctl simulate` and `tritonctl run`: a
//! deterministic model of Triton's schedulers (default, dynamic batcher,
//! sequence batcher with the Direct and Oldest strategies).
//!
//! Inputs: [`Settings`] (derived from a typed model config with
//! [`Settings::from_config`]) and [`Request`]s. Results are streamed into a
//! [`Sink`] as soon as they are known, so memory stays proportional to the
//! requests that are alive at one time; [`CollectSink`] keeps everything
//! (tests), [`Stats`] only counts.
//!
//! # The clock-agnostic core
//!
//! [`Scheduler`] holds every queue, slot and timer and never reads a clock:
//! each call carries the current time in microseconds. Two drivers use it:
//! [`simulate`] on a virtual clock with service times from a [`Latency`]
//! model, and the local runner on a real clock with real executions.
//!
//! * [`Scheduler::arrive`]`(now, request, sink)`: a request arrives.
//!   Admission errors are emitted into the sink at once. [`Request::tag`]
//!   is opaque to the scheduler: the driver uses it to find the request's
//!   payload (its input tensors) when the request is dispatched.
//! * [`Scheduler::poll`]`(now, sink, &mut started)`: handles what is due
//!   (request timeouts, backlog timeouts, idle timeouts; their records go
//!   to the sink) and forms a batch for every idle instance that should run
//!   one now, in instance order; `started` receives those instances.
//!   [`Scheduler::batch`]`(instance)` is the [`Batch`]: its id, start time,
//!   executed size and [`Row`]s in batch order, each with its request
//!   (`None` for a Direct padding entry, which gets zero inputs and a
//!   throw-away state), its slot and, for sequence batching, the
//!   [`SeqHandle`] whose state it reads and updates (reset it on a row
//!   whose request has `start`). [`Batch::executed_slot_records`] gives the
//!   START/END/READY/CORRID values, which [`controls::ControlSpec::tensors`]
//!   turns into the control tensors in the configured data types.
//! * [`Scheduler::complete`]`(now, instance, sink)`: the batch on
//!   `instance` finished. Its records are emitted (one ok
//!   [`RequestRecord`] per request, then the [`BatchRecord`], with `now` as
//!   the end; with preserve_ordering they wait for earlier batches of the
//!   same batcher), the instance becomes idle and, for Oldest, the next
//!   requests of its sequences become eligible. Call `poll` afterwards.
//! * [`Scheduler::drain_releases`]: sequences whose state may be freed —
//!   after their END executed, when an idle-timeout reaping took effect
//!   (every request queued before it has run), or when their backlog queue
//!   timed out (they never ran).
//! * [`Scheduler::next_deadline`]: the earliest time a `poll` may have
//!   something to do without another arrival or completion (`None`: only
//!   those can change anything). A value at or before the last poll means
//!   "poll again now". A deadline can be early (a wake-up that finds
//!   nothing due is harmless) but never late.
//!
//! A real-clock driver is a loop over three event sources:
//!
//! ```no_run
//! use std::time::{Duration, Instant};
//! use tritonctl::batching::{CollectSink, Request, Scheduler, Settings};
//!
//! fn drive(settings: &Settings, incoming: std::sync::mpsc::Receiver<Request>) {
//!     let epoch = Instant::now();
//!     let now = || epoch.elapsed().as_micros() as u64;
//!     let mut sched = Scheduler::new(settings);
//!     let mut sink = CollectSink::default(); // the runner's own sink
//!     let mut started = Vec::new();
//!     // Executions finishing, reported by worker threads as (instance).
//!     let (done_tx, done_rx) = std::sync::mpsc::channel::<usize>();
//!     loop {
//!         // 1. Completions: store the output states of the batch's rows,
//!         //    then let the scheduler emit its records.
//!         while let Ok(instance) = done_rx.try_recv() {
//!             sched.complete(now(), instance, &mut sink);
//!         }
//!         for released in sched.drain_releases() {
//!             let _ = released.sequence; // drop that sequence's state
//!         }
//!         // 2. Arrivals (stamp `arrival_us` with the clock).
//!         while let Ok(mut r) = incoming.try_recv() {
//!             r.arrival_us = now();
//!             sched.arrive(r.arrival_us, r, &mut sink);
//!         }
//!         // 3. Timers and batch formation.
//!         sched.poll(now(), &mut sink, &mut started);
//!         for &instance in &started {
//!             let batch = sched.batch(instance);
//!             // Build inputs from the rows' tags, control tensors from
//!             // `batch.executed_slot_records()`, states from the rows'
//!             // sequence handles; run it on `instance`; send `instance` on
//!             // `done_tx` when it finishes.
//!             let _ = (batch, &done_tx);
//!         }
//!         // 4. Sleep until the next deadline, arrival or completion.
//!         let wait = sched
//!             .next_deadline()
//!             .map_or(Duration::from_millis(10), |d| {
//!                 Duration::from_micros(d.saturating_sub(now()))
//!             });
//!         std::thread::sleep(wait.min(Duration::from_millis(1)));
//!     }
//! }
//! ```
//!
//! The virtual-clock driver ([`simulate`]) knows a batch's end when it
//! starts, so it calls [`Scheduler::record`]`(instance, end, sink)` right
//! after `poll` (and `complete` at the end time, which then only frees the
//! instance); at one timestamp it runs completions in instance order, then
//! arrivals in trace order, then `poll` (docs/spec/schedulers.md §1).
//!
//! All time arithmetic saturates at `u64::MAX`; whatever is due at or
//! after the end of time happens at `u64::MAX`.

pub mod controls;
mod core;
pub mod pipeline;
mod sim;
#[cfg(test)]
mod tests;

pub(crate) use self::core::FxMap;
pub use self::core::{Batch, Release, ReleaseReason, Row, Scheduler, SeqHandle};
pub use pipeline::{simulate_pipeline, Pipeline, PipelineModel, PipelineSink, PipelineStep};
pub use sim::{simulate, simulate_per_instance};

use crate::schema::inference::model_config::SchedulingChoice;
use crate::schema::inference::model_queue_policy::TimeoutAction as PbTimeoutAction;
use crate::schema::inference::model_sequence_batching::StrategyChoice;
use crate::schema::inference::{ModelConfig, ModelQueuePolicy};
use serde::Serialize;
use std::fmt;

/// A sequence correlation id: Triton accepts unsigned integers or strings
/// (and `1` differs from `"1"`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(untagged)]
pub enum CorrId {
    Int(u64),
    Str(String),
}

impl fmt::Display for CorrId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CorrId::Int(v) => write!(f, "{v}"),
            CorrId::Str(s) => f.write_str(s),
        }
    }
}

/// One request of a trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub id: String,
    pub arrival_us: u64,
    pub sequence_id: Option<CorrId>,
    pub start: bool,
    pub end: bool,
    /// First dimension of the request (0 is read as 1).
    pub batch_size: u32,
    /// 0 = not set.
    pub priority: u32,
    /// The request's own timeout (0 = none).
    pub timeout_us: u64,
    /// Opaque signature of the inputs Triton compares before batching
    /// requests together (docs/spec/schedulers.md §2.5: shapes of variable-size
    /// inputs, contents of shape tensors, the set of optional inputs
    /// supplied). Only looked at when [`Settings::enforce_shapes`]; `None`
    /// means "the config dims". Shared: requests with one signature hold
    /// one copy.
    pub shape: Option<std::sync::Arc<str>>,
    /// Opaque to the scheduler: lets a driver find the request's payload
    /// (e.g. its input tensors) when the request is dispatched.
    pub tag: u64,
}

impl Request {
    /// A plain request of batch size 1 arriving at `arrival_us`.
    pub fn new(id: impl Into<String>, arrival_us: u64) -> Self {
        Request {
            id: id.into(),
            arrival_us,
            sequence_id: None,
            start: false,
            end: false,
            batch_size: 1,
            priority: 0,
            timeout_us: 0,
            shape: None,
            tag: 0,
        }
    }
}

/// Execution time of one batch as a function of its size.
#[derive(Debug, Clone, PartialEq)]
pub enum Latency {
    /// `(batch size, µs)` points sorted by size; linear interpolation
    /// between neighbours, extrapolation from the two nearest points
    /// outside the range, constant with a single point.
    Points(Vec<(u32, u64)>),
    /// `a + b * size` µs.
    Linear { a: f64, b: f64 },
}

impl Latency {
    /// The same time for every batch size.
    pub fn constant(us: u64) -> Self {
        Latency::Points(vec![(1, us)])
    }

    /// Parses `"1:2000,2:2400,4:3100"` or `"2000+150*b"` (also a bare
    /// number, a constant).
    pub fn parse(text: &str) -> Result<Self, String> {
        let t: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        if t.is_empty() {
            return Err("empty latency specification".into());
        }
        if t.contains(':') {
            let mut pts = Vec::new();
            for part in t.split(',') {
                let (b, us) = part
                    .split_once(':')
                    .ok_or_else(|| format!("expected SIZE:MICROSECONDS, got '{part}'"))?;
                let b: u32 = b
                    .parse()
                    .map_err(|_| format!("invalid batch size '{b}' in '{part}'"))?;
                let us: u64 = us
                    .parse()
                    .map_err(|_| format!("invalid microseconds '{us}' in '{part}'"))?;
                if b == 0 {
                    return Err(format!("batch size must be at least 1 in '{part}'"));
                }
                pts.push((b, us));
            }
            pts.sort_unstable();
            if pts.windows(2).any(|w| w[0].0 == w[1].0) {
                return Err("a batch size is listed twice".into());
            }
            return Ok(Latency::Points(pts));
        }
        if let Some((a, rest)) = t.split_once('+') {
            let b = rest
                .strip_suffix("*b")
                .ok_or_else(|| format!("expected A+B*b, got '{t}'"))?;
            let a: f64 = a.parse().map_err(|_| format!("invalid constant '{a}'"))?;
            let b: f64 = b.parse().map_err(|_| format!("invalid slope '{b}'"))?;
            if !(a.is_finite() && b.is_finite()) || a < 0.0 || b < 0.0 {
                return Err(format!("latency terms must be non-negative in '{t}'"));
            }
            return Ok(Latency::Linear { a, b });
        }
        let us: u64 = t
            .parse()
            .map_err(|_| format!("invalid latency specification '{t}'"))?;
        Ok(Latency::constant(us))
    }

    /// Execution time in µs of a batch of `size` (0 when the model says
    /// so; saturates at `u64::MAX`).
    pub fn eval(&self, size: u32) -> u64 {
        let v = self.eval_f64(size);
        // NaN and negatives are 0; huge values (and +inf) saturate.
        if v > 0.0 {
            v.round() as u64
        } else {
            0
        }
    }

    /// Execution time in µs of a batch of `size` before rounding: may be
    /// negative, huge or infinite (`1e308+1e308*b`), which [`Self::eval`]
    /// clamps and a caller may want to refuse instead.
    pub fn eval_f64(&self, size: u32) -> f64 {
        let x = f64::from(size);
        match self {
            Latency::Linear { a, b } => a + b * x,
            Latency::Points(p) => match p.len() {
                0 => 0.0,
                1 => p[0].1 as f64,
                n => {
                    // Segment: the one containing x, else the nearest end.
                    let i = p
                        .iter()
                        .position(|&(b, _)| b >= size)
                        .unwrap_or(n - 1)
                        .max(1);
                    let (x0, y0) = (f64::from(p[i - 1].0), p[i - 1].1 as f64);
                    let (x1, y1) = (f64::from(p[i].0), p[i].1 as f64);
                    y0 + (y1 - y0) * (x - x0) / (x1 - x0)
                }
            },
        }
    }
}

/// What a queue does with a request whose timeout expired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeoutAction {
    Reject,
    Delay,
}

/// A dynamic-batcher queue policy (one per priority level).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuePolicy {
    pub timeout_action: TimeoutAction,
    pub default_timeout_us: u64,
    pub allow_timeout_override: bool,
    /// 0 = unlimited.
    pub max_queue_size: u32,
}

impl Default for QueuePolicy {
    fn default() -> Self {
        QueuePolicy {
            timeout_action: TimeoutAction::Reject,
            default_timeout_us: 0,
            allow_timeout_override: false,
            max_queue_size: 0,
        }
    }
}

impl QueuePolicy {
    fn from_pb(p: &ModelQueuePolicy) -> Self {
        QueuePolicy {
            timeout_action: if p.timeout_action == PbTimeoutAction::Delay as i32 {
                TimeoutAction::Delay
            } else {
                TimeoutAction::Reject
            },
            default_timeout_us: p.default_timeout_microseconds,
            allow_timeout_override: p.allow_timeout_override,
            max_queue_size: p.max_queue_size,
        }
    }

    /// The timeout that applies to a request carrying `own` (0 = none).
    pub fn effective_timeout(&self, own: u64) -> u64 {
        if self.allow_timeout_override && own != 0 && own < self.default_timeout_us {
            own
        } else {
            self.default_timeout_us
        }
    }
}

/// Dynamic batcher settings after Triton's normalization.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DynamicSettings {
    /// Preferred batch sizes; `[max_batch_size]` when none were listed and
    /// `max_batch_size > 0`.
    pub preferred: Vec<u32>,
    pub max_queue_delay_us: u64,
    pub preserve_ordering: bool,
    /// One policy per priority level (exactly one when `priority_levels`
    /// is 0); index 0 is level 1.
    pub levels: Vec<QueuePolicy>,
    /// 0-based index into `levels` for requests without a valid priority.
    pub default_level: usize,
    /// Whether Triton builds batches ahead while the instances are busy
    /// ("pipelined mode", docs/spec/schedulers.md §2.6): no priority levels and
    /// a default policy without timeout, timeout override or max_queue_size
    /// (Triton's `PriorityQueue::SupportPrefetching`). Otherwise a batch
    /// is formed only for an idle instance.
    pub prefetch: bool,
}

/// Settings shared by both sequence batching strategies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SequenceSettings {
    /// `max_sequence_idle_microseconds` (Triton's default 1 s when 0).
    pub idle_us: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DirectSettings {
    pub seq: SequenceSettings,
    pub max_queue_delay_us: u64,
    pub minimum_slot_utilization: f32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct OldestSettings {
    pub seq: SequenceSettings,
    /// Candidate slots per instance.
    pub max_candidate_sequences: usize,
    pub preferred: Vec<u32>,
    pub max_queue_delay_us: u64,
    pub preserve_ordering: bool,
}

/// Which scheduler a model uses.
#[derive(Debug, Clone, PartialEq)]
pub enum SchedulerKind {
    /// One request per execution, FIFO over free instances.
    Default,
    Dynamic(DynamicSettings),
    Direct(DirectSettings),
    Oldest(OldestSettings),
}

/// Everything the simulator needs to know about a model.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub model: String,
    /// As configured (0 = the model does not batch).
    pub max_batch_size: u32,
    /// Number of instances the scheduler gives work to (at least 1): the
    /// instances that are not passive.
    pub instances: usize,
    /// Every instance Triton creates, passive ones included, in Triton's
    /// order (`model::instances_of`).
    pub instance_list: Vec<crate::model::Instance>,
    /// For each scheduler instance (`0..instances`), its index in
    /// `instance_list`.
    pub active: Vec<usize>,
    /// Whether requests must have equal [`Request::shape`] signatures to
    /// share a batch: some input is a shape tensor, has a -1 dimension
    /// without `allow_ragged_batch`, or is optional.
    pub enforce_shapes: bool,
    pub kind: SchedulerKind,
}

/// Triton's default `max_sequence_idle_microseconds`.
pub const DEFAULT_IDLE_US: u64 = 1_000_000;

fn normalized_preferred(listed: &[i32], mbs: u32) -> Vec<u32> {
    let mut p: Vec<u32> = listed
        .iter()
        .filter(|&&v| v > 0)
        .map(|&v| v as u32)
        .collect();
    if p.is_empty() && mbs > 0 {
        p.push(mbs);
    }
    p.sort_unstable();
    p.dedup();
    p
}

/// At most this many model instances are run or simulated.
pub const MAX_INSTANCES: usize = 4096;
/// At most this many sequence slots (all instances together) are held.
pub const MAX_SEQUENCE_SLOTS: usize = 1 << 20;

/// Refuses sizes that would take more memory than any machine has (every
/// instance and every sequence slot is made up front, as in Triton, which
/// does not survive such sizes either) with a message instead of an
/// abort.
fn check_size(instances: usize, kind: &SchedulerKind, mbs: u32) -> Result<(), String> {
    if instances > MAX_INSTANCES {
        return Err(format!(
            "instance_group asks for {instances} model instances; tritonctl runs and simulates at most {MAX_INSTANCES}"
        ));
    }
    let (per_instance, from) = match kind {
        SchedulerKind::Oldest(o) => (o.max_candidate_sequences, "max_candidate_sequences"),
        SchedulerKind::Direct(_) => (mbs.max(1) as usize, "max_batch_size"),
        _ => return Ok(()),
    };
    let total = per_instance.saturating_mul(instances);
    if total > MAX_SEQUENCE_SLOTS {
        return Err(format!(
            "the sequence batcher would hold {total} sequence slots ({per_instance} per instance from {from}, {instances} instance(s)); tritonctl holds at most {MAX_SEQUENCE_SLOTS}"
        ));
    }
    Ok(())
}

impl Settings {
    /// Derives scheduler settings from a (normalized) model config. The
    /// instances are those Triton creates (`model::instances_of`) from
    /// groups normalized for the target server's GPUs; groups left
    /// unnormalized are normalized here for a server without GPUs. Passive
    /// instances are listed but given no work. Ensemble scheduling has no
    /// scheduler of its own and is an error.
    pub fn from_config(cfg: &ModelConfig) -> Result<Self, String> {
        let mbs = cfg.max_batch_size.max(0) as u32;
        let mut groups = cfg.clone();
        crate::model::normalize_instance_groups(&mut groups, &[]);
        // Counted before they are listed: a count of billions is refused,
        // not allocated.
        let total = crate::model::instance_count(&groups);
        if total > MAX_INSTANCES as u64 {
            return Err(format!(
                "instance_group asks for {total} model instances; tritonctl runs and simulates at most {MAX_INSTANCES}"
            ));
        }
        let instance_list = crate::model::instances_of(&groups);
        let active: Vec<usize> = (0..instance_list.len())
            .filter(|&i| !instance_list[i].passive)
            .collect();
        let instances = active.len();
        if instances == 0 && !crate::model::is_ensemble(cfg) {
            return Err(if instance_list.is_empty() {
                format!(
                    "model '{}' has no instance: its GPU instance groups list no GPU (pass the server's GPUs with --gpus)",
                    cfg.name
                )
            } else {
                format!(
                    "model '{}' has only passive instances, which Triton never gives requests",
                    cfg.name
                )
            });
        }
        let kind = match &cfg.scheduling_choice {
            None => SchedulerKind::Default,
            Some(SchedulingChoice::EnsembleScheduling(_)) => {
                return Err("ensemble models cannot be simulated".into())
            }
            Some(SchedulingChoice::DynamicBatching(d)) => {
                let default_policy = d
                    .default_queue_policy
                    .as_ref()
                    .map(QueuePolicy::from_pb)
                    .unwrap_or_default();
                // Without priority levels Triton's queue has one level with
                // the default policy; `priority_queue_policy` is ignored
                // (docs/spec/schedulers.md §2.2).
                let levels = if d.priority_levels == 0 {
                    vec![default_policy]
                } else {
                    (1..=d.priority_levels)
                        .map(|l| {
                            d.priority_queue_policy
                                .get(&l)
                                .map(QueuePolicy::from_pb)
                                .unwrap_or_else(|| default_policy.clone())
                        })
                        .collect::<Vec<_>>()
                };
                let default_level = if d.priority_levels == 0 {
                    0
                } else {
                    (d.default_priority_level.clamp(1, d.priority_levels) - 1) as usize
                };
                let prefetch = d.priority_levels == 0 && {
                    let p = &levels[0];
                    p.default_timeout_us == 0 && !p.allow_timeout_override && p.max_queue_size == 0
                };
                SchedulerKind::Dynamic(DynamicSettings {
                    prefetch,
                    preferred: normalized_preferred(&d.preferred_batch_size, mbs),
                    max_queue_delay_us: d.max_queue_delay_microseconds,
                    preserve_ordering: d.preserve_ordering,
                    levels,
                    default_level,
                })
            }
            Some(SchedulingChoice::SequenceBatching(s)) => {
                let seq = SequenceSettings {
                    idle_us: if s.max_sequence_idle_microseconds == 0 {
                        DEFAULT_IDLE_US
                    } else {
                        s.max_sequence_idle_microseconds
                    },
                };
                match &s.strategy_choice {
                    Some(StrategyChoice::Oldest(o)) => SchedulerKind::Oldest(OldestSettings {
                        seq,
                        max_candidate_sequences: if o.max_candidate_sequences > 0 {
                            o.max_candidate_sequences as usize
                        } else {
                            mbs.max(1) as usize
                        },
                        preferred: normalized_preferred(&o.preferred_batch_size, mbs),
                        max_queue_delay_us: o.max_queue_delay_microseconds,
                        preserve_ordering: o.preserve_ordering,
                    }),
                    Some(StrategyChoice::Direct(d)) => SchedulerKind::Direct(DirectSettings {
                        seq,
                        max_queue_delay_us: d.max_queue_delay_microseconds,
                        minimum_slot_utilization: d.minimum_slot_utilization,
                    }),
                    None => SchedulerKind::Direct(DirectSettings {
                        seq,
                        max_queue_delay_us: 0,
                        minimum_slot_utilization: 0.0,
                    }),
                }
            }
        };
        let enforce_shapes = cfg.input.iter().any(|i| {
            i.is_shape_tensor || i.optional || (i.dims.contains(&-1) && !i.allow_ragged_batch)
        });
        check_size(instances, &kind, mbs)?;
        Ok(Settings {
            model: cfg.name.clone(),
            max_batch_size: mbs,
            instances,
            instance_list,
            active,
            enforce_shapes,
            kind,
        })
    }
}

/// Final state of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    Rejected,
    TimedOut,
}

/// What happened to one request. Emitted once per request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RequestRecord {
    pub id: String,
    pub sequence_id: Option<CorrId>,
    pub arrival_us: u64,
    pub status: Status,
    /// Triton's message for rejected / timed-out requests.
    pub reason: Option<String>,
    /// Start of the execution of its batch (ok only).
    pub start_us: Option<u64>,
    /// When the response leaves the scheduler: the end of its batch, later
    /// with `preserve_ordering`; the rejection time otherwise.
    pub end_us: Option<u64>,
    pub instance: Option<usize>,
    /// Direct: the slot; Oldest: the candidate slot.
    pub slot: Option<usize>,
    pub batch: Option<u64>,
    /// The request's [`Request::tag`] (not reported).
    #[serde(skip)]
    pub tag: u64,
}

/// One entry of a sequence batch (the control tensor values of one row).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SlotRecord {
    pub slot: usize,
    pub request: Option<String>,
    pub sequence_id: Option<CorrId>,
    pub start: bool,
    pub end: bool,
    pub ready: bool,
    /// CORRID value (`Int(0)` for a padding entry).
    pub corrid: CorrId,
}

/// One execution on one instance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BatchRecord {
    pub id: u64,
    pub instance: usize,
    pub start_us: u64,
    pub end_us: u64,
    /// Executed batch size: Σ request batch sizes; for Direct the number of
    /// entries including padding (highest busy slot + 1).
    pub size: u32,
    pub requests: Vec<String>,
    /// Sequence batching only. Direct: every slot of the instance (entries
    /// above `size` are not part of the execution; empty slots have
    /// `ready: false`). Oldest: one entry per request, `slot` = its
    /// candidate slot.
    pub slots: Vec<SlotRecord>,
}

impl BatchRecord {
    /// The slots of the entries that were executed (Direct lists every
    /// slot of the instance, only the first `size` ran): what
    /// [`controls::control_tensors`] expects.
    pub fn executed_slots(&self) -> &[SlotRecord] {
        &self.slots[..self.slots.len().min(self.size as usize)]
    }
}

/// Receives results as soon as they are final.
pub trait Sink {
    fn request(&mut self, record: RequestRecord);
    fn batch(&mut self, record: BatchRecord);
    /// Whether [`BatchRecord::requests`] and [`BatchRecord::slots`] are
    /// wanted. A sink that only counts may answer `false`; it then receives
    /// them empty and the scheduler saves building them.
    fn batch_lists(&self) -> bool {
        true
    }
}

/// Triton-style statistics accumulated from a run (constant memory).
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct Stats {
    pub requests: u64,
    pub ok: u64,
    pub rejected: u64,
    pub timed_out: u64,
    /// Number of executions.
    pub executions: u64,
    /// `{batch size: executions}` as in Triton's statistics.
    pub batch_sizes: std::collections::BTreeMap<u32, u64>,
    /// Last batch end (µs), the run's makespan.
    pub last_end_us: u64,
}

impl Sink for Stats {
    fn request(&mut self, r: RequestRecord) {
        self.requests += 1;
        match r.status {
            Status::Ok => self.ok += 1,
            Status::Rejected => self.rejected += 1,
            Status::TimedOut => self.timed_out += 1,
        }
    }
    fn batch_lists(&self) -> bool {
        false
    }
    fn batch(&mut self, b: BatchRecord) {
        self.executions += 1;
        *self.batch_sizes.entry(b.size).or_insert(0) += 1;
        self.last_end_us = self.last_end_us.max(b.end_us);
    }
}

/// A sink that keeps every record (for tests and small traces).
#[derive(Debug, Default, Clone)]
pub struct CollectSink {
    pub requests: Vec<RequestRecord>,
    pub batches: Vec<BatchRecord>,
}

impl Sink for CollectSink {
    fn request(&mut self, record: RequestRecord) {
        self.requests.push(record);
    }
    fn batch(&mut self, record: BatchRecord) {
        self.batches.push(record);
    }
}
