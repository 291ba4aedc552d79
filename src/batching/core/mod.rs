//! The clock-agnostic scheduler state machine ([`Scheduler`]).
//!
//! Nothing here reads a clock: every entry point takes the current time in
//! microseconds from its driver, so the same code runs under the virtual
//! clock of [`simulate`](super::simulate) and under a real clock. See the
//! module documentation of [`batching`](super) for the driving protocol.
//!
//! Implementation notes: requests waiting anywhere in the scheduler live in
//! one slab and queues hold slab indices, so a request is moved, not
//! copied, from arrival to its batch. Timers are not kept per event: the
//! scheduler keeps a few lower bounds (next queue-delay expiry per
//! instance, next request deadline, next backlog expiry, next possible
//! idle timeout) and [`Scheduler::next_deadline`] is their minimum. A wake-up
//! at a time when nothing is due changes nothing, so lower bounds that are
//! too early only cost an idle check. All time arithmetic saturates at
//! `u64::MAX`, and everything due at `u64::MAX` happens at `u64::MAX`.

use super::{
    BatchRecord, CorrId, QueuePolicy, Request, RequestRecord, SchedulerKind, Settings, Sink,
    SlotRecord, Status,
};
use std::collections::VecDeque;

const MSG_TIMEOUT: &str = "Request timeout expired";
const MSG_BACKLOG_TIMEOUT: &str = "timeout of the corresponding sequence has been expired";

/// Identifies one sequence while it holds a slot or waits in the backlog:
/// from the request that gave it a slot (or a backlog queue) until its END
/// executed, it was reaped for idleness, or its backlog queue timed out.
/// A request with START inside a live sequence (a restart without END)
/// keeps the handle; its row says `start`, so its state must be reset.
/// Handles are never reused within one [`Scheduler`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SeqHandle(pub u64);

/// Why a sequence's state can be dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReleaseReason {
    /// Its END request finished executing.
    End,
    /// It was idle for `max_sequence_idle_microseconds` and every request
    /// it had queued before that has executed.
    Idle,
    /// Its backlog queue timed out; it never executed, so it has no state.
    BacklogTimeout,
}

mod collections;
mod direct;
mod dynamic;
mod pipe;
mod sequence;

pub(crate) use collections::FxMap;
use collections::{Bits, Job, Slab};
use direct::SlotHeap;
use dynamic::DynQueue;
use pipe::{Cur, Pipe, BATCHER_IDLE_WAIT_US};
use sequence::{SeqState, Slot};

/// A sequence whose state (if any) the driver may free.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Release {
    pub sequence: SeqHandle,
    pub reason: ReleaseReason,
}

/// One entry of a dispatched batch, in batch order.
#[derive(Debug, Clone, Default)]
pub struct Row {
    /// The request; `None` for a Direct padding entry (READY false, inputs
    /// zero, a throw-away state). Taken out when the batch's records are
    /// emitted ([`Scheduler::record`] or [`Scheduler::complete`]).
    pub request: Option<Request>,
    /// Direct: the slot; Oldest: the candidate slot; else `None`.
    pub slot: Option<usize>,
    /// Sequence batching: the sequence the row belongs to (its state).
    pub sequence: Option<SeqHandle>,
    /// The request carries END (kept after `request` is taken).
    end: bool,
}

/// The batch running (or last run) on one instance.
#[derive(Debug, Clone, Default)]
pub struct Batch {
    pub id: u64,
    pub instance: usize,
    /// Time of the [`Scheduler::poll`] that formed it.
    pub start_us: u64,
    /// Executed batch size: Σ request batch sizes; Direct: `rows.len()`.
    pub size: u32,
    /// The executed entries in batch order (Direct: slots `0..=hi`, with
    /// padding).
    pub rows: Vec<Row>,
    /// Sequence batching (rows carry control values).
    sequence: bool,
    /// Direct: the number of slots of the instance (the batch record lists
    /// them all).
    slot_count: usize,
    /// preserve_ordering group.
    order: Option<usize>,
    recorded: bool,
}

impl Batch {
    /// Sequence batching: the control values of the batch as in
    /// [`BatchRecord::slots`] (Direct: every slot of the instance, the first
    /// `rows.len()` executed; Oldest: one per row); empty otherwise. Only
    /// meaningful before the batch's records are emitted (the rows'
    /// requests are moved into them).
    pub fn slot_records(&self) -> Vec<SlotRecord> {
        if !self.sequence {
            return Vec::new();
        }
        let mut v: Vec<SlotRecord> = Vec::with_capacity(self.rows.len().max(self.slot_count));
        for r in &self.rows {
            v.push(slot_record(r.slot.unwrap_or(0), r.request.as_ref()));
        }
        for s in self.rows.len()..self.slot_count {
            v.push(slot_record(s, None));
        }
        v
    }

    /// Like [`Batch::slot_records`], but only the executed rows.
    pub fn executed_slot_records(&self) -> Vec<SlotRecord> {
        let mut v = self.slot_records();
        v.truncate(self.rows.len());
        v
    }
}

enum Sched {
    Default(VecDeque<Request>),
    /// The queue, preserve_ordering, and the pipelined state when Triton
    /// builds batches ahead.
    Dynamic(DynQueue, bool, Option<Pipe>),
    Direct(SeqState, u64, f32),
    Oldest(SeqState, Vec<DynQueue>, bool),
}

/// A batch whose records wait for an earlier batch of its
/// preserve_ordering group.
struct Held {
    batch: Batch,
    end_us: u64,
}

/// The scheduler of one model: queues, slots, batch formation and
/// records, driven by explicit calls with the current time.
pub struct Scheduler {
    model: String,
    mbs: u32,
    shapes: bool,
    dynamic: bool,
    jobs: Slab,
    busy: Vec<bool>,
    running: Vec<Batch>,
    /// Per instance: when its last (waiting) batch decision changes.
    wait: Vec<Option<u64>>,
    next_batch: u64,
    /// preserve_ordering: the latest response time handed out so far, per
    /// group (one for the dynamic batcher, one per instance for Oldest).
    order_hold: Vec<u64>,
    /// preserve_ordering: dispatched batches whose records are not out yet.
    order_queue: Vec<VecDeque<u64>>,
    held: Vec<Held>,
    releases: Vec<Release>,
    sched: Sched,
    scratch: Vec<u32>,
    entries: Vec<Option<u32>>,
}

fn display_id(id: &str) -> &str {
    if id.is_empty() {
        "<id_unknown>"
    } else {
        id
    }
}

fn fail(sink: &mut dyn Sink, now: u64, r: Request, status: Status, reason: String) {
    sink.request(RequestRecord {
        id: r.id,
        sequence_id: r.sequence_id,
        arrival_us: r.arrival_us,
        status,
        reason: Some(reason),
        start_us: None,
        end_us: Some(now),
        instance: None,
        slot: None,
        batch: None,
        tag: r.tag,
    });
}

fn slot_record(slot: usize, r: Option<&Request>) -> SlotRecord {
    match r {
        Some(r) => SlotRecord {
            slot,
            request: Some(r.id.clone()),
            sequence_id: r.sequence_id.clone(),
            start: r.start,
            end: r.end,
            ready: true,
            corrid: r.sequence_id.clone().unwrap_or(CorrId::Int(0)),
        },
        None => SlotRecord {
            slot,
            request: None,
            sequence_id: None,
            start: false,
            end: false,
            ready: false,
            corrid: CorrId::Int(0),
        },
    }
}

/// Emits the records of a finished batch: one ok record per request, then
/// the batch record.
fn emit(sink: &mut dyn Sink, b: &mut Batch, end_us: u64, resp_us: u64) {
    let lists = sink.batch_lists();
    let slots = if lists { b.slot_records() } else { Vec::new() };
    let mut requests = Vec::with_capacity(if lists { b.rows.len() } else { 0 });
    for row in &mut b.rows {
        let Some(r) = row.request.take() else {
            continue;
        };
        if lists {
            requests.push(r.id.clone());
        }
        sink.request(RequestRecord {
            id: r.id,
            sequence_id: r.sequence_id,
            arrival_us: r.arrival_us,
            status: Status::Ok,
            reason: None,
            start_us: Some(b.start_us),
            end_us: Some(resp_us),
            instance: Some(b.instance),
            slot: row.slot,
            batch: Some(b.id),
            tag: r.tag,
        });
    }
    sink.batch(BatchRecord {
        id: b.id,
        instance: b.instance,
        start_us: b.start_us,
        end_us,
        size: b.size,
        requests,
        slots,
    });
}

impl Scheduler {
    /// A scheduler for `settings` with every instance idle.
    pub fn new(settings: &Settings) -> Self {
        let s = settings;
        let n = s.instances.max(1);
        let sched = match &s.kind {
            SchedulerKind::Default => Sched::Default(VecDeque::new()),
            SchedulerKind::Dynamic(d) => Sched::Dynamic(
                DynQueue::new(
                    d.levels.clone(),
                    d.default_level,
                    &d.preferred,
                    s.max_batch_size,
                    d.max_queue_delay_us,
                    s.enforce_shapes,
                ),
                d.preserve_ordering,
                d.prefetch.then(|| Pipe::new(n)),
            ),
            SchedulerKind::Direct(d) => Sched::Direct(
                SeqState::new(n, s.max_batch_size.max(1) as usize, d.seq.idle_us, false),
                d.max_queue_delay_us,
                d.minimum_slot_utilization,
            ),
            SchedulerKind::Oldest(o) => Sched::Oldest(
                SeqState::new(n, o.max_candidate_sequences.max(1), o.seq.idle_us, true),
                (0..n)
                    .map(|_| {
                        DynQueue::new(
                            vec![QueuePolicy::default()],
                            0,
                            &o.preferred,
                            s.max_batch_size,
                            o.max_queue_delay_us,
                            s.enforce_shapes,
                        )
                    })
                    .collect(),
                o.preserve_ordering,
            ),
        };
        Scheduler {
            model: s.model.clone(),
            mbs: s.max_batch_size,
            shapes: s.enforce_shapes,
            dynamic: matches!(s.kind, SchedulerKind::Dynamic(_)),
            jobs: Slab::default(),
            busy: vec![false; n],
            running: (0..n)
                .map(|i| Batch {
                    instance: i,
                    recorded: true,
                    ..Batch::default()
                })
                .collect(),
            wait: vec![None; n],
            next_batch: 0,
            order_hold: vec![0; n],
            order_queue: vec![VecDeque::new(); n],
            held: Vec::new(),
            releases: Vec::new(),
            sched,
            scratch: Vec::new(),
            entries: Vec::new(),
        }
    }

    /// Number of instances.
    pub fn instances(&self) -> usize {
        self.busy.len()
    }

    /// Whether `instance` is executing a batch.
    pub fn is_busy(&self, instance: usize) -> bool {
        self.busy[instance]
    }

    /// The batch most recently dispatched to `instance` (the running one
    /// while [`Scheduler::is_busy`]).
    pub fn batch(&self, instance: usize) -> &Batch {
        &self.running[instance]
    }

    /// Sequences whose state may be dropped, oldest first, since the last
    /// call. Drivers without state may ignore them (they are also cleared
    /// by [`Scheduler::clear_releases`]).
    pub fn drain_releases(&mut self) -> std::vec::Drain<'_, Release> {
        self.releases.drain(..)
    }

    /// Forgets the pending release notices.
    pub fn clear_releases(&mut self) {
        self.releases.clear();
    }

    /// The earliest time at which [`Scheduler::poll`] may have something to
    /// do without another arrival or completion (queue delays, request
    /// deadlines, backlog timeouts, idle timeouts); `None` when only an
    /// arrival or a completion can change anything. May be at or before
    /// the last poll's time: then poll again at once.
    pub fn next_deadline(&self) -> Option<u64> {
        let mut d = self.wait.iter().flatten().copied().min();
        let mut add = |t: Option<u64>| {
            if let Some(t) = t {
                d = Some(d.map_or(t, |x| x.min(t)));
            }
        };
        match &self.sched {
            Sched::Default(_) => {}
            Sched::Dynamic(dq, _, pipe) => {
                add(dq.expiry_at);
                if let Some(pipe) = pipe {
                    if pipe.notified {
                        add(Some(0));
                    } else if !dq.is_empty() {
                        add(pipe.timer);
                    }
                }
            }
            Sched::Direct(st, ..) | Sched::Oldest(st, ..) => {
                add(st.backlog_at);
                if st.owned > 0 {
                    add(Some(st.idle_check_at));
                }
            }
        }
        d
    }

    /// A request arrives at `now_us` (its `arrival_us` is reported in its
    /// record; `now_us` drives queue delays and idle times). Admission
    /// errors are emitted into `sink` at once.
    pub fn arrive(&mut self, now_us: u64, r: Request, sink: &mut dyn Sink) {
        let now = now_us;
        let mbs = self.mbs;
        if mbs > 0 && r.batch_size > mbs {
            let prefix = if self.dynamic {
                format!("[request id: {}] ", display_id(&r.id))
            } else {
                String::new()
            };
            let msg = format!(
                "{prefix}inference request batch-size must be <= {mbs} for '{}'",
                self.model
            );
            return fail(sink, now, r, Status::Rejected, msg);
        }
        match &mut self.sched {
            Sched::Default(q) => q.push_back(r),
            Sched::Dynamic(dq, _, pipe) => {
                let level = dq.level_of(&r);
                let l = &mut dq.levels[level];
                let held = l.live.len() + l.delayed.len();
                if l.policy.max_queue_size > 0 && held >= l.policy.max_queue_size as usize {
                    let msg = format!(
                        "[request id: {}] Exceeds maximum queue size",
                        display_id(&r.id)
                    );
                    return fail(sink, now, r, Status::Rejected, msg);
                }
                let timeout = l.policy.effective_timeout(r.timeout_us);
                let deadline = (timeout > 0).then(|| now.saturating_add(timeout));
                let j = self.jobs.insert(Job {
                    req: r,
                    seq: None,
                    enq: now,
                    deadline,
                    slot: 0,
                });
                let size = u64::from(dq.size_of(&self.jobs.get(j).req));
                dq.push(level, j);
                if let Some(d) = deadline {
                    dq.expiry_at = Some(dq.expiry_at.map_or(d, |x| x.min(d)));
                }
                if let Some(pipe) = pipe {
                    // DynamicBatchScheduler::Enqueue: wake the batcher only
                    // if a payload may be built and it could change
                    // something.
                    pipe.queued = pipe.queued.saturating_add(size);
                    let wake = pipe.waiting.len() < pipe.cap
                        && (dq.shapes
                            || pipe.saturated
                            || pipe.cur == Cur::Stale
                            || pipe.queued >= u64::from(pipe.next_pref));
                    if wake {
                        pipe.notified = true;
                    } else if let (true, Some(t)) = (pipe.idle_timer, pipe.timer) {
                        // The empty-queue wait repeats; the thread notices
                        // the request at the first wake-up from now on.
                        if t < now {
                            let k = (now - t).div_ceil(BATCHER_IDLE_WAIT_US);
                            pipe.timer =
                                Some(t.saturating_add(k.saturating_mul(BATCHER_IDLE_WAIT_US)));
                        }
                    }
                }
            }
            Sched::Direct(..) | Sched::Oldest(..) => self.arrive_seq(now, r, sink),
        }
    }

    /// Runs what is due at `now_us` (request timeouts, backlog timeouts,
    /// idle timeouts) and forms a batch for every idle instance that the
    /// scheduler wants to run now, in instance order. The instances that
    /// received a batch are appended to `started` (cleared first); read each
    /// with [`Scheduler::batch`]. Timeouts are emitted into `sink`; the
    /// records of the new batches are not (see [`Scheduler::record`]).
    pub fn poll(&mut self, now_us: u64, sink: &mut dyn Sink, started: &mut Vec<usize>) {
        started.clear();
        self.time_checks(now_us, sink);
        if matches!(self.sched, Sched::Dynamic(_, _, Some(_))) {
            let idle: Vec<usize> = (0..self.busy.len()).filter(|&i| !self.busy[i]).collect();
            self.run_pipe(now_us);
            started.extend(idle.into_iter().filter(|&i| self.busy[i]));
            return;
        }
        for i in 0..self.busy.len() {
            if !self.busy[i] {
                self.wait[i] = None;
                self.form(now_us, i);
                if self.busy[i] {
                    started.push(i);
                }
            }
        }
    }

    /// Emits the records of the batch on `instance` (one ok
    /// [`RequestRecord`] per request, then the [`BatchRecord`]) with the
    /// given end of execution; a driver that knows the end when the batch
    /// starts (a virtual clock) calls this right after [`Scheduler::poll`],
    /// a real-clock driver leaves it to [`Scheduler::complete`]. With
    /// preserve_ordering, records wait until every earlier batch of the
    /// same batcher has been recorded, and a response never leaves before
    /// an earlier one. Does nothing if the records are already out.
    pub fn record(&mut self, instance: usize, end_us: u64, sink: &mut dyn Sink) {
        let b = &mut self.running[instance];
        if b.recorded {
            return;
        }
        b.recorded = true;
        let Some(g) = b.order else {
            return emit(sink, b, end_us, end_us);
        };
        if self.order_queue[g].front() != Some(&b.id) {
            // An earlier batch of the group is still running: hold a copy
            // of what the records need (the rows stay for `complete`).
            let batch = Batch {
                id: b.id,
                instance: b.instance,
                start_us: b.start_us,
                size: b.size,
                rows: b
                    .rows
                    .iter_mut()
                    .map(|r| Row {
                        request: r.request.take(),
                        slot: r.slot,
                        sequence: r.sequence,
                        end: r.end,
                    })
                    .collect(),
                sequence: b.sequence,
                slot_count: b.slot_count,
                order: b.order,
                recorded: true,
            };
            self.held.push(Held { batch, end_us });
            return;
        }
        self.order_queue[g].pop_front();
        let resp = end_us.max(self.order_hold[g]);
        self.order_hold[g] = resp;
        emit(sink, b, end_us, resp);
        while let Some(&next) = self.order_queue[g].front() {
            let Some(p) = self.held.iter().position(|h| h.batch.id == next) else {
                break;
            };
            let mut h = self.held.swap_remove(p);
            self.order_queue[g].pop_front();
            let resp = h.end_us.max(self.order_hold[g]);
            self.order_hold[g] = resp;
            emit(sink, &mut h.batch, h.end_us, resp);
        }
    }

    /// The batch on `instance` finished executing at `now_us`: the
    /// instance becomes idle, its records are emitted (unless
    /// [`Scheduler::record`] did already, then with `now_us` as the end),
    /// sequences whose END ran are reported released and, for Oldest, the
    /// next requests of its sequences become eligible. Call
    /// [`Scheduler::poll`] afterwards to start new batches.
    pub fn complete(&mut self, now_us: u64, instance: usize, sink: &mut dyn Sink) {
        let inst = instance;
        if !self.busy[inst] {
            return;
        }
        self.busy[inst] = false;
        let b = &self.running[inst];
        for row in &b.rows {
            if row.end {
                if let Some(h) = row.sequence {
                    self.releases.push(Release {
                        sequence: h,
                        reason: ReleaseReason::End,
                    });
                }
            }
        }
        if let Sched::Oldest(st, ..) = &mut self.sched {
            for row in &b.rows {
                let s = row.slot.expect("oldest rows have a slot");
                st.slots[inst][s].in_flight = false;
                st.touch(inst, s);
            }
        }
        self.record(inst, now_us, sink);
        self.forward_all(now_us);
    }
}
