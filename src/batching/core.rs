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
    SlotRecord, Status, TimeoutAction,
};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

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

// ------------------------------------------------------------------ helpers

/// A small multiplicative hasher: correlation ids are hashed once per
/// arrival, SipHash's DoS protection is not needed for a local trace.
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher(u64);

impl FxHasher {
    #[inline]
    fn add(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(b));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    fn write_isize(&mut self, i: isize) {
        self.add(i as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

pub(crate) type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// A two-level bit set with ordered "next set bit" search.
#[derive(Default)]
struct Bits {
    words: Vec<u64>,
    top: Vec<u64>,
}

impl Bits {
    fn new(n: usize) -> Self {
        let words = n.div_ceil(64);
        Bits {
            words: vec![0; words],
            top: vec![0; words.div_ceil(64)],
        }
    }
    #[inline]
    fn set(&mut self, k: usize) {
        let w = k / 64;
        self.words[w] |= 1 << (k % 64);
        self.top[w / 64] |= 1 << (w % 64);
    }
    #[inline]
    fn clear(&mut self, k: usize) {
        let w = k / 64;
        self.words[w] &= !(1 << (k % 64));
        if self.words[w] == 0 {
            self.top[w / 64] &= !(1 << (w % 64));
        }
    }
    /// The smallest set bit `>= k`.
    fn next_from(&self, k: usize) -> Option<usize> {
        let w = k / 64;
        if w >= self.words.len() {
            return None;
        }
        let m = self.words[w] & (!0u64 << (k % 64));
        if m != 0 {
            return Some(w * 64 + m.trailing_zeros() as usize);
        }
        let next = w + 1;
        let mut t = next / 64;
        let mut mask = !0u64 << (next % 64);
        while t < self.top.len() {
            let m = self.top[t] & mask;
            if m != 0 {
                let w2 = t * 64 + m.trailing_zeros() as usize;
                return Some(w2 * 64 + self.words[w2].trailing_zeros() as usize);
            }
            t += 1;
            mask = !0;
        }
        None
    }
}

/// A request waiting somewhere in the scheduler.
struct Job {
    req: Request,
    seq: Option<SeqHandle>,
    /// When it entered its dynamic-batcher queue.
    enq: u64,
    deadline: Option<u64>,
    /// Oldest: the candidate slot it came from.
    slot: usize,
}

/// Storage of waiting requests; memory follows the live requests.
#[derive(Default)]
struct Slab {
    items: Vec<Option<Job>>,
    free: Vec<u32>,
}

impl Slab {
    fn insert(&mut self, job: Job) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.items[i as usize] = Some(job);
                i
            }
            None => {
                self.items.push(Some(job));
                (self.items.len() - 1) as u32
            }
        }
    }
    fn take(&mut self, i: u32) -> Job {
        let job = self.items[i as usize].take().expect("live job");
        self.free.push(i);
        job
    }
    #[inline]
    fn get(&self, i: u32) -> &Job {
        self.items[i as usize].as_ref().expect("live job")
    }
    #[inline]
    fn get_mut(&mut self, i: u32) -> &mut Job {
        self.items[i as usize].as_mut().expect("live job")
    }
}

// ------------------------------------------------------- dynamic batcher

struct Level {
    live: VecDeque<u32>,
    delayed: VecDeque<u32>,
    policy: QueuePolicy,
}

/// The queue and batch decision of one dynamic batcher (§2.4, P = 0).
struct DynQueue {
    levels: Vec<Level>,
    default_level: usize,
    pref: Vec<u32>,
    maxp: u32,
    mbs: u32,
    delay: u64,
    batching: bool,
    /// Compare shape signatures (§2.5).
    shapes: bool,
    /// Lower bound of the live requests' deadlines.
    expiry_at: Option<u64>,
    /// Bumped whenever the queue changes.
    version: u64,
    /// The last decision that depends on time only through its wait:
    /// `(version, Some(until))` for a wait, `(version, None)` for nothing.
    cached: Option<(u64, Option<u64>)>,
}

#[derive(Clone, Copy)]
enum Decision {
    Nothing,
    Send(usize),
    Wait(u64),
}

impl DynQueue {
    fn new(
        policies: Vec<QueuePolicy>,
        default_level: usize,
        pref: &[u32],
        mbs_cfg: u32,
        delay: u64,
        shapes: bool,
    ) -> Self {
        DynQueue {
            levels: policies
                .into_iter()
                .map(|policy| Level {
                    live: VecDeque::new(),
                    delayed: VecDeque::new(),
                    policy,
                })
                .collect(),
            default_level,
            pref: pref.to_vec(),
            maxp: pref.iter().copied().max().unwrap_or(0),
            mbs: mbs_cfg.max(1),
            delay,
            batching: mbs_cfg > 0,
            shapes,
            expiry_at: None,
            version: 0,
            cached: None,
        }
    }

    fn push(&mut self, level: usize, j: u32) {
        self.levels[level].live.push_back(j);
        self.version += 1;
    }

    #[inline]
    fn size_of(&self, r: &Request) -> u32 {
        if self.batching {
            r.batch_size.max(1)
        } else {
            1
        }
    }

    fn level_of(&self, r: &Request) -> usize {
        let n = self.levels.len() as u32;
        if n > 1 && (1..=n).contains(&r.priority) {
            (r.priority - 1) as usize
        } else {
            self.default_level
        }
    }

    /// Applies deadlines at `now`: appends the requests a REJECT policy
    /// times out to `out`, parks DELAY ones.
    fn expire(&mut self, now: u64, jobs: &mut Slab, out: &mut Vec<u32>) {
        if self.expiry_at.is_none_or(|d| now < d) {
            return;
        }
        let mut next: Option<u64> = None;
        for l in &mut self.levels {
            let due = |jobs: &Slab, j: u32| jobs.get(j).deadline.is_some_and(|d| now >= d);
            if l.live.iter().any(|&j| due(jobs, j)) {
                self.version += 1;
                let live = std::mem::take(&mut l.live);
                for j in live {
                    if due(jobs, j) {
                        match l.policy.timeout_action {
                            TimeoutAction::Reject => out.push(j),
                            TimeoutAction::Delay => {
                                jobs.get_mut(j).deadline = None;
                                l.delayed.push_back(j);
                            }
                        }
                    } else {
                        l.live.push_back(j);
                    }
                }
            }
            for &j in &l.live {
                if let Some(d) = jobs.get(j).deadline {
                    next = Some(next.map_or(d, |n| n.min(d)));
                }
            }
        }
        self.expiry_at = next;
    }

    /// The batch decision at `now`. A wait stays a wait with the same end
    /// until then, and an empty queue stays empty, as long as the queue
    /// does not change: such results are reused without a scan.
    fn decide(&mut self, now: u64, jobs: &Slab) -> Decision {
        match self.cached {
            Some((v, None)) if v == self.version => return Decision::Nothing,
            Some((v, Some(t))) if v == self.version && now < t => return Decision::Wait(t),
            _ => {}
        }
        let d = self.scan(now, jobs);
        self.cached = match d {
            Decision::Nothing => Some((self.version, None)),
            Decision::Wait(t) => Some((self.version, Some(t))),
            Decision::Send(_) => None,
        };
        d
    }

    fn scan(&self, now: u64, jobs: &Slab) -> Decision {
        let (mut n, mut sum) = (0usize, 0u32);
        let mut mark: Option<usize> = None;
        let mut send_now = false;
        let mut earliest = u64::MAX;
        let mut first_shape: Option<&Option<std::sync::Arc<str>>> = None;
        'scan: for l in &self.levels {
            for &j in l.live.iter().chain(l.delayed.iter()) {
                let q = jobs.get(j);
                let b = self.size_of(&q.req);
                if n > 0 {
                    let next = sum.saturating_add(b);
                    if next > self.maxp && mark.is_none() {
                        mark = Some(n);
                    }
                    if next > self.mbs {
                        send_now = true;
                        break 'scan;
                    }
                    if self.shapes && first_shape != Some(&q.req.shape) {
                        send_now = true;
                        break 'scan;
                    }
                } else {
                    first_shape = Some(&q.req.shape);
                }
                n += 1;
                sum = sum.saturating_add(b);
                earliest = earliest.min(q.enq);
                if self.pref.contains(&sum) {
                    mark = Some(n);
                }
            }
        }
        if n == 0 {
            return Decision::Nothing;
        }
        let due = earliest.saturating_add(self.delay);
        let expired = self.delay > 0 && now >= due;
        if let Some(m) = mark {
            if !expired {
                return Decision::Send(m);
            }
        }
        if send_now || sum >= self.maxp || expired || self.delay == 0 {
            return Decision::Send(n);
        }
        Decision::Wait(due)
    }

    fn is_empty(&self) -> bool {
        self.levels
            .iter()
            .all(|l| l.live.is_empty() && l.delayed.is_empty())
    }

    /// Triton's batch decision when the batch may join a payload of `p`
    /// batch elements already built and waiting for an instance (`rep`:
    /// the shape of that payload's first request). Unlike [`DynQueue::scan`]
    /// (`p = 0`, idle dispatch), it also reports whether the payload is
    /// saturated (the next requests start a new one) and the next preferred
    /// size Triton stores to decide whether an arrival wakes the batcher.
    fn pipe_scan(
        &self,
        now: u64,
        p: u32,
        rep: Option<&Option<std::sync::Arc<str>>>,
        jobs: &Slab,
    ) -> PipeScan {
        let (mut n, mut sum) = (0usize, 0u32);
        // The prefix Triton would send, as (requests, batch elements);
        // a size of 0 means "none" (also when it was set at position 0).
        let (mut best_n, mut best) = (0usize, 0u32);
        let mut out = PipeScan::default();
        let mut send_now = false;
        let mut earliest = u64::MAX;
        let mut first = rep;
        'scan: for l in &self.levels {
            for &j in l.live.iter().chain(l.delayed.iter()) {
                let q = jobs.get(j);
                let b = self.size_of(&q.req);
                if p == 0 && n == 0 {
                    first = Some(&q.req.shape);
                } else {
                    let next = p.saturating_add(sum).saturating_add(b);
                    if next > self.maxp && best == 0 {
                        (best_n, best) = (n, sum);
                        out.saturated = true;
                    }
                    if next > self.mbs {
                        send_now = true;
                        break 'scan;
                    }
                    if self.shapes && first != Some(&q.req.shape) {
                        out.shape_break = true;
                        send_now = true;
                        break 'scan;
                    }
                }
                n += 1;
                sum = sum.saturating_add(b);
                earliest = earliest.min(q.enq);
                if self.pref.contains(&p.saturating_add(sum)) {
                    (best_n, best) = (n, sum);
                }
            }
        }
        let total = p.saturating_add(sum);
        let expired = self.delay > 0 && n > 0 && now >= earliest.saturating_add(self.delay);
        if best != 0 && !expired {
            if self.delay == 0 {
                out.saturated = true;
            }
            out.take = best_n;
            return out;
        }
        out.take = n;
        if n == 0 {
            return out;
        }
        if send_now || total >= self.maxp {
            out.saturated = true;
            return out;
        }
        if expired || self.delay == 0 {
            return out;
        }
        let next = self.pref.iter().copied().find(|&v| v > total);
        let next = next.or_else(|| self.pref.first().copied()).unwrap_or(0);
        out.next_pref = Some(next.saturating_sub(p));
        // A payload that is waiting for an instance and has no preferred
        // size yet takes whatever fits now.
        if !out.saturated && p != 0 && !self.pref.contains(&p) {
            return out;
        }
        out.take = 0;
        out.wait = Some(earliest.saturating_add(self.delay));
        out
    }

    /// Removes the first `n` requests in scan order into `out`.
    fn take(&mut self, mut n: usize, out: &mut Vec<u32>) {
        self.version += 1;
        for l in &mut self.levels {
            while n > 0 {
                let Some(j) = l.live.pop_front().or_else(|| l.delayed.pop_front()) else {
                    break;
                };
                out.push(j);
                n -= 1;
            }
        }
    }
}

/// What [`DynQueue::pipe_scan`] decided.
#[derive(Default)]
struct PipeScan {
    /// Requests (in scan order) that join the payload now.
    take: usize,
    /// Nothing joins; look again at this time.
    wait: Option<u64>,
    /// The payload can not grow any more: the next requests start a new one.
    saturated: bool,
    /// A request with another shape ended the scan (the payload is never
    /// merged with another).
    shape_break: bool,
    /// The new "next preferred size", when Triton computes one.
    next_pref: Option<u32>,
}

/// A batch built ahead, waiting for an instance.
struct Payload {
    jobs: Vec<u32>,
    size: u32,
    /// Ended by a shape break: not merged with the next payload.
    shape_break: bool,
    /// Earliest enqueue time of its requests.
    start: u64,
}

/// The payload the batcher thread is filling.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Cur {
    /// Empty.
    Fresh,
    /// The last payload of [`Pipe::waiting`]: it still grows.
    Queued,
    /// An instance took it (or began to): the next requests need a new one.
    Stale,
}

/// How long Triton's batcher thread sleeps with an empty queue before it
/// looks again by itself.
const BATCHER_IDLE_WAIT_US: u64 = 500_000;

/// Pipelined mode of the dynamic batcher (schedulers.md §2.6 and
/// schedulers-observed.md, Dynamic batcher): Triton's batcher thread
/// builds payloads while the instances are busy and hands them to a FIFO
/// the instances take from. The thread runs only when woken (an arrival
/// that brings the queue to the stored next preferred size, an instance
/// taking a payload, its own timer), and a payload waiting for an instance
/// may keep growing (even past the largest preferred size, up to
/// max_batch_size).
struct Pipe {
    waiting: VecDeque<Payload>,
    /// At most this many payloads wait (2 × instances).
    cap: usize,
    cur: Cur,
    /// Triton's `payload_saturated_`.
    saturated: bool,
    /// Triton's `next_preferred_batch_size_`.
    next_pref: u32,
    /// Batch elements in the queue (Triton's `queued_batch_size_`).
    queued: u64,
    /// The thread has been woken and runs at the next poll.
    notified: bool,
    /// The thread wakes up by itself at this time.
    timer: Option<u64>,
    /// `timer` is the empty-queue wait (repeats every
    /// [`BATCHER_IDLE_WAIT_US`] while nothing arrives).
    idle_timer: bool,
}

impl Pipe {
    fn new(instances: usize) -> Self {
        Pipe {
            waiting: VecDeque::new(),
            cap: 2 * instances.max(1),
            cur: Cur::Fresh,
            saturated: false,
            next_pref: 0,
            queued: 0,
            notified: false,
            timer: None,
            idle_timer: false,
        }
    }
}

// ------------------------------------------------------- sequence batcher

enum Item {
    Req(u32),
    /// Idle-timeout marker of the sequence that owned the slot.
    Release(SeqHandle),
}

#[derive(Default)]
struct Slot {
    queue: VecDeque<Item>,
    /// The live sequence mapped to this slot (None once its END arrived).
    owner: Option<(CorrId, SeqHandle)>,
    last_seen: u64,
    /// Oldest: a request of this slot is in the dynamic batcher or running.
    in_flight: bool,
}

struct Backlog {
    id: CorrId,
    seq: SeqHandle,
    reqs: VecDeque<u32>,
    last_seen: u64,
    expiry: Option<u64>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Loc {
    Slot(usize, usize),
    Backlog(u64),
}

/// The free `(slot, instance)` pairs, in the order Triton hands them out.
///
/// Triton keeps them in a `std::priority_queue` whose comparison looks at
/// the slot index only, so which instance's slot comes first among equal
/// indices depends on how the underlying binary heap moves its elements
/// (libstdc++'s heap algorithms; schedulers-observed.md, Direct). This is
/// a binary heap in an array (children of `k` at `2k+1` and `2k+2`) that
/// moves elements the same way:
///
/// * push: the new pair goes to the end and climbs while its parent has a
///   strictly larger slot index (an equal parent stops it);
/// * pop: the last pair is set aside, the hole left at the root walks down
///   to a leaf, each step taking the child with the smaller slot index and
///   the right-hand one when both are equal (a lone left child at the
///   bottom is taken too), then the set-aside pair climbs from the hole as
///   in push.
#[derive(Default)]
struct SlotHeap {
    /// `(slot, instance)`.
    items: Vec<(usize, usize)>,
}

impl SlotHeap {
    fn push(&mut self, item: (usize, usize)) {
        self.items.push(item);
        let hole = self.items.len() - 1;
        self.climb(hole, item);
    }

    /// Moves `item` up from the empty position `hole` while the parent's
    /// slot is strictly larger, and stores it where it stops.
    fn climb(&mut self, mut hole: usize, item: (usize, usize)) {
        while hole > 0 {
            let parent = (hole - 1) / 2;
            if self.items[parent].0 <= item.0 {
                break;
            }
            self.items[hole] = self.items[parent];
            hole = parent;
        }
        self.items[hole] = item;
    }

    fn pop(&mut self) -> Option<(usize, usize)> {
        let last = self.items.pop()?;
        if self.items.is_empty() {
            return Some(last);
        }
        let top = self.items[0];
        let len = self.items.len();
        let mut hole = 0;
        // Down to a leaf, always through a child.
        loop {
            let right = 2 * hole + 2;
            if right < len {
                let left = right - 1;
                let child = if self.items[right].0 > self.items[left].0 {
                    left
                } else {
                    right
                };
                self.items[hole] = self.items[child];
                hole = child;
            } else {
                if right == len {
                    // Only a left child.
                    self.items[hole] = self.items[right - 1];
                    hole = right - 1;
                }
                break;
            }
        }
        self.climb(hole, last);
        Some(top)
    }
}

struct SeqState {
    slots: Vec<Vec<Slot>>,
    per_instance: usize,
    /// Free slots in Triton's order (see [`SlotHeap`]).
    free: SlotHeap,
    map: FxMap<CorrId, Loc>,
    backlog: BTreeMap<u64, Backlog>,
    next_backlog: u64,
    /// Lower bound of the backlog queues' expiry times.
    backlog_at: Option<u64>,
    idle_us: u64,
    /// Number of slots with an owner.
    owned: usize,
    /// No owned slot can be idle before this time (a lower bound on every
    /// owner's `last_seen + idle_us`); idle reaping scans only from then on.
    idle_check_at: u64,
    /// Oldest: slots (`instance * per_instance + slot`) with queued items
    /// and nothing in flight, i.e. those a forward step can move.
    ready: Bits,
    oldest: bool,
    next_handle: u64,
}

impl SeqState {
    fn new(instances: usize, per_instance: usize, idle_us: u64, oldest: bool) -> Self {
        // Triton pushes every slot of instance 0, then of instance 1, ...
        // (SequenceBatchScheduler::CreateBatchers).
        let mut free = SlotHeap::default();
        for i in 0..instances {
            for s in 0..per_instance {
                free.push((s, i));
            }
        }
        SeqState {
            slots: (0..instances)
                .map(|_| (0..per_instance).map(|_| Slot::default()).collect())
                .collect(),
            per_instance,
            free,
            map: FxMap::default(),
            backlog: BTreeMap::new(),
            next_backlog: 0,
            backlog_at: None,
            idle_us,
            owned: 0,
            idle_check_at: 0,
            ready: if oldest {
                Bits::new(instances * per_instance)
            } else {
                Bits::default()
            },
            oldest,
            next_handle: 1,
        }
    }

    fn handle(&mut self) -> SeqHandle {
        let h = SeqHandle(self.next_handle);
        self.next_handle += 1;
        h
    }

    fn set_owner(&mut self, i: usize, s: usize, owner: Option<(CorrId, SeqHandle)>) {
        let slot = &mut self.slots[i][s];
        match (slot.owner.is_some(), owner.is_some()) {
            (false, true) => self.owned += 1,
            (true, false) => self.owned -= 1,
            _ => {}
        }
        slot.owner = owner;
    }

    /// Oldest: marks the slot forwardable if it has work and nothing in
    /// flight.
    #[inline]
    fn touch(&mut self, i: usize, s: usize) {
        if self.oldest {
            let slot = &self.slots[i][s];
            if !slot.in_flight && !slot.queue.is_empty() {
                self.ready.set(i * self.per_instance + s);
            }
        }
    }

    /// Releases a slot: the first backlogged sequence moves in, else the
    /// slot returns to the pool.
    fn release(&mut self, i: usize, s: usize) {
        self.set_owner(i, s, None);
        match self.backlog.pop_first() {
            Some((key, b)) => {
                let slot = &mut self.slots[i][s];
                slot.queue.extend(b.reqs.into_iter().map(Item::Req));
                // The sequence brings its own (older) last_seen.
                self.idle_check_at = 0;
                if self.map.get(&b.id) == Some(&Loc::Backlog(key)) {
                    self.map.insert(b.id.clone(), Loc::Slot(i, s));
                    self.slots[i][s].last_seen = b.last_seen;
                    self.set_owner(i, s, Some((b.id, b.seq)));
                }
                self.touch(i, s);
            }
            None => self.free.push((s, i)),
        }
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

    fn arrive_seq(&mut self, now: u64, r: Request, sink: &mut dyn Sink) {
        if r.batch_size > 1 {
            let msg = format!("inference request to model '{}' must specify batch-size 1 due to requirements of sequence batcher", self.model);
            return fail(sink, now, r, Status::Rejected, msg);
        }
        let valid = match &r.sequence_id {
            Some(CorrId::Int(0)) | None => false,
            Some(CorrId::Str(s)) => !s.is_empty(),
            Some(CorrId::Int(_)) => true,
        };
        if !valid {
            let msg = format!("inference request to model '{}' must specify a non-zero or non-empty correlation ID", self.model);
            return fail(sink, now, r, Status::Rejected, msg);
        }
        let (st, oldest) = match &mut self.sched {
            Sched::Direct(st, ..) => (st, false),
            Sched::Oldest(st, ..) => (st, true),
            _ => unreachable!("sequence arrival on a non-sequence scheduler"),
        };
        let id = r.sequence_id.as_ref().expect("validated");
        let loc = st.map.get(id).copied();
        if loc.is_none() && !r.start {
            let msg = format!("inference request for sequence {id} to model '{}' must specify the START flag on the first request of the sequence", self.model);
            return fail(sink, now, r, Status::Rejected, msg);
        }
        let new_id = loc.is_none().then(|| id.clone());
        let end = r.end;
        let timeout = r.timeout_us;
        let job = |seq| Job {
            req: r,
            seq: Some(seq),
            enq: now,
            deadline: None,
            slot: 0,
        };
        match loc {
            Some(Loc::Slot(i, s)) => {
                let seq = st.slots[i][s]
                    .owner
                    .as_ref()
                    .expect("mapped slot is owned")
                    .1;
                let j = self.jobs.insert(job(seq));
                let slot = &mut st.slots[i][s];
                slot.last_seen = now;
                slot.queue.push_back(Item::Req(j));
                st.touch(i, s);
                if end {
                    let id = self
                        .jobs
                        .get(j)
                        .req
                        .sequence_id
                        .as_ref()
                        .expect("validated");
                    st.map.remove(id);
                    st.set_owner(i, s, None);
                }
            }
            Some(Loc::Backlog(k)) => {
                let b = st.backlog.get_mut(&k).expect("mapped backlog exists");
                let j = self.jobs.insert(job(b.seq));
                b.last_seen = now;
                b.reqs.push_back(j);
                if timeout > 0 {
                    let e = now.saturating_add(timeout);
                    b.expiry = Some(b.expiry.map_or(e, |x| x.min(e)));
                    st.backlog_at = Some(st.backlog_at.map_or(e, |x| x.min(e)));
                }
                if end {
                    let id = self
                        .jobs
                        .get(j)
                        .req
                        .sequence_id
                        .as_ref()
                        .expect("validated");
                    st.map.remove(id);
                }
            }
            None => {
                let id = new_id.expect("no location");
                let seq = st.handle();
                let j = self.jobs.insert(job(seq));
                match st.free.pop() {
                    Some((s, i)) => {
                        let slot = &mut st.slots[i][s];
                        slot.last_seen = now;
                        slot.queue.push_back(Item::Req(j));
                        st.touch(i, s);
                        // A request with START and END runs in the slot
                        // without making the sequence its owner.
                        if !end {
                            st.map.insert(id.clone(), Loc::Slot(i, s));
                            st.set_owner(i, s, Some((id, seq)));
                        }
                    }
                    None => {
                        let k = st.next_backlog;
                        st.next_backlog += 1;
                        let expiry = (timeout > 0).then(|| now.saturating_add(timeout));
                        if let Some(e) = expiry {
                            st.backlog_at = Some(st.backlog_at.map_or(e, |x| x.min(e)));
                        }
                        if !end {
                            st.map.insert(id.clone(), Loc::Backlog(k));
                        }
                        st.backlog.insert(
                            k,
                            Backlog {
                                id,
                                seq,
                                reqs: VecDeque::from([j]),
                                last_seen: now,
                                expiry,
                            },
                        );
                    }
                }
            }
        }
        if oldest {
            self.forward_all(now);
        }
    }

    /// Oldest: hands the head request of every slot with nothing in flight
    /// to its instance's dynamic batcher; handles release markers.
    fn forward_all(&mut self, now: u64) {
        let Sched::Oldest(st, dqs, _) = &mut self.sched else {
            return;
        };
        let per = st.per_instance;
        let mut pos = 0;
        while let Some(k) = st.ready.next_from(pos) {
            let (i, s) = (k / per, k % per);
            loop {
                let slot = &mut st.slots[i][s];
                if slot.in_flight {
                    break;
                }
                match slot.queue.pop_front() {
                    Some(Item::Release(h)) => {
                        self.releases.push(Release {
                            sequence: h,
                            reason: ReleaseReason::Idle,
                        });
                        st.release(i, s);
                    }
                    Some(Item::Req(j)) => {
                        slot.in_flight = true;
                        let job = self.jobs.get_mut(j);
                        job.enq = now;
                        job.deadline = None;
                        job.slot = s;
                        let end = job.req.end;
                        dqs[i].push(0, j);
                        if end {
                            st.release(i, s);
                        }
                        break;
                    }
                    None => break,
                }
            }
            st.ready.clear(k);
            pos = k + 1;
        }
    }

    /// Deadlines, backlog expiry and idle reaping at `now`.
    fn time_checks(&mut self, now: u64, sink: &mut dyn Sink) {
        match &mut self.sched {
            Sched::Dynamic(dq, _, _) => {
                let mut out = std::mem::take(&mut self.scratch);
                dq.expire(now, &mut self.jobs, &mut out);
                for &j in &out {
                    let job = self.jobs.take(j);
                    fail(
                        sink,
                        now,
                        job.req,
                        Status::TimedOut,
                        MSG_TIMEOUT.to_string(),
                    );
                }
                out.clear();
                self.scratch = out;
            }
            Sched::Direct(st, ..) | Sched::Oldest(st, ..) => {
                let mut failed = std::mem::take(&mut self.scratch);
                if st.backlog_at.is_some_and(|d| now >= d) {
                    let expired: Vec<u64> = st
                        .backlog
                        .iter()
                        .filter(|(_, b)| b.expiry.is_some_and(|e| now >= e))
                        .map(|(k, _)| *k)
                        .collect();
                    for k in expired {
                        let b = st.backlog.remove(&k).expect("listed");
                        if st.map.get(&b.id) == Some(&Loc::Backlog(k)) {
                            st.map.remove(&b.id);
                        }
                        self.releases.push(Release {
                            sequence: b.seq,
                            reason: ReleaseReason::BacklogTimeout,
                        });
                        failed.extend(b.reqs);
                    }
                    st.backlog_at = st.backlog.values().filter_map(|b| b.expiry).min();
                }
                let idle = st.idle_us;
                if now >= st.idle_check_at {
                    let mut next = now.saturating_add(idle);
                    if st.owned > 0 {
                        for i in 0..st.slots.len() {
                            for s in 0..st.per_instance {
                                let slot = &mut st.slots[i][s];
                                let Some((_, h)) = &slot.owner else {
                                    continue;
                                };
                                let due = slot.last_seen.saturating_add(idle);
                                if now >= due {
                                    let h = *h;
                                    slot.queue.push_back(Item::Release(h));
                                    let (id, _) = slot.owner.take().expect("checked");
                                    st.owned -= 1;
                                    if st.map.get(&id) == Some(&Loc::Slot(i, s)) {
                                        st.map.remove(&id);
                                    }
                                    st.touch(i, s);
                                } else {
                                    next = next.min(due);
                                }
                            }
                        }
                    }
                    st.idle_check_at = next;
                }
                for &j in &failed {
                    let job = self.jobs.take(j);
                    fail(
                        sink,
                        now,
                        job.req,
                        Status::TimedOut,
                        MSG_BACKLOG_TIMEOUT.to_string(),
                    );
                }
                failed.clear();
                self.scratch = failed;
                self.forward_all(now);
            }
            Sched::Default(_) => {}
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

    /// Marks `inst` busy and readies its batch slot for a new batch.
    fn start_batch(&mut self, now: u64, inst: usize, order: Option<usize>) -> &mut Batch {
        let id = self.next_batch;
        self.next_batch += 1;
        self.busy[inst] = true;
        self.wait[inst] = None;
        if let Some(g) = order {
            self.order_queue[g].push_back(id);
        }
        let b = &mut self.running[inst];
        b.id = id;
        b.instance = inst;
        b.start_us = now;
        b.size = 0;
        b.rows.clear();
        b.sequence = false;
        b.slot_count = 0;
        b.order = order;
        b.recorded = false;
        b
    }

    /// Forms a batch for idle instance `inst`, if the scheduler wants one.
    fn form(&mut self, now: u64, inst: usize) {
        match &mut self.sched {
            Sched::Default(q) => {
                let Some(r) = q.pop_front() else { return };
                let b = self.start_batch(now, inst, None);
                b.size = 1;
                b.rows.push(Row {
                    request: Some(r),
                    slot: None,
                    sequence: None,
                    end: false,
                });
            }
            Sched::Dynamic(dq, ordering, _) => match dq.decide(now, &self.jobs) {
                Decision::Nothing => {}
                Decision::Wait(t) => self.wait[inst] = Some(t),
                Decision::Send(n) => {
                    let order = ordering.then_some(0);
                    let mut taken = std::mem::take(&mut self.scratch);
                    dq.take(n, &mut taken);
                    let batching = dq.batching;
                    self.emit_plain(now, inst, &mut taken, batching, order, false);
                    taken.clear();
                    self.scratch = taken;
                }
            },
            Sched::Oldest(_, dqs, ordering) => {
                let dq = &mut dqs[inst];
                match dq.decide(now, &self.jobs) {
                    Decision::Nothing => {}
                    Decision::Wait(t) => self.wait[inst] = Some(t),
                    Decision::Send(n) => {
                        let order = ordering.then_some(inst);
                        let mut taken = std::mem::take(&mut self.scratch);
                        dq.take(n, &mut taken);
                        let batching = dq.batching;
                        self.emit_plain(now, inst, &mut taken, batching, order, true);
                        taken.clear();
                        self.scratch = taken;
                    }
                }
            }
            Sched::Direct(..) => self.form_direct(now, inst),
        }
    }

    /// Pipelined dynamic batcher at `now`: idle instances take waiting
    /// payloads, then the batcher thread runs if it was woken or its timer
    /// is due, until it waits again.
    fn run_pipe(&mut self, now: u64) {
        self.pipe_feed_idle(now);
        {
            let Sched::Dynamic(_, _, Some(pipe)) = &mut self.sched else {
                return;
            };
            if !(pipe.notified || pipe.timer.is_some_and(|t| now >= t)) {
                return;
            }
            pipe.notified = false;
            pipe.timer = None;
            pipe.idle_timer = false;
        }
        loop {
            let Sched::Dynamic(dq, _, Some(pipe)) = &mut self.sched else {
                return;
            };
            if pipe.saturated || pipe.cur == Cur::Stale {
                pipe.cur = Cur::Fresh;
                pipe.next_pref = 0;
                pipe.saturated = false;
            }
            if dq.is_empty() {
                pipe.timer = Some(now.saturating_add(BATCHER_IDLE_WAIT_US));
                pipe.idle_timer = true;
                return;
            }
            if pipe.waiting.len() >= pipe.cap {
                // Blocked until an instance takes a payload (which wakes it).
                return;
            }
            let back = if pipe.cur == Cur::Queued {
                pipe.waiting.back_mut()
            } else {
                None
            };
            let (p, rep) = match &back {
                Some(b) => (b.size, Some(&self.jobs.get(b.jobs[0]).req.shape)),
                None => (0, None),
            };
            let d = dq.pipe_scan(now, p, rep, &self.jobs);
            if let Some(b) = back {
                b.shape_break |= d.shape_break;
            }
            pipe.saturated |= d.saturated;
            if let Some(np) = d.next_pref {
                pipe.next_pref = np;
            }
            if let Some(t) = d.wait {
                pipe.timer = Some(t);
                return;
            }
            if d.take == 0 {
                if pipe.saturated {
                    continue;
                }
                // Triton spins until an instance takes the payload.
                return;
            }
            let mut taken = Vec::with_capacity(d.take);
            dq.take(d.take, &mut taken);
            let mut size = 0u32;
            let mut start = u64::MAX;
            for &j in &taken {
                let job = self.jobs.get(j);
                size = size.saturating_add(dq.size_of(&job.req));
                start = start.min(job.enq);
            }
            pipe.queued = pipe.queued.saturating_sub(u64::from(size));
            match pipe.waiting.back_mut() {
                Some(b) if pipe.cur == Cur::Queued => {
                    b.jobs.extend(taken);
                    b.size = b.size.saturating_add(size);
                    b.start = b.start.min(start);
                }
                _ => {
                    pipe.waiting.push_back(Payload {
                        jobs: taken,
                        size,
                        shape_break: d.shape_break,
                        start,
                    });
                    pipe.cur = Cur::Queued;
                }
            }
            // A waiting instance takes it at once; the thread is running,
            // so the wake-up that comes with it is lost.
            self.pipe_feed_idle(now);
            if let Sched::Dynamic(_, _, Some(pipe)) = &mut self.sched {
                pipe.notified = false;
            }
        }
    }

    /// Idle instances, in index order, take the oldest waiting payloads.
    fn pipe_feed_idle(&mut self, now: u64) {
        for i in 0..self.busy.len() {
            if !self.busy[i] && !self.pipe_take(now, i) {
                return;
            }
        }
    }

    /// Idle instance `inst` takes the oldest waiting payload, merged with
    /// the following ones whose requests waited longer than the queue
    /// delay (Triton's instance queue), and wakes the batcher thread.
    fn pipe_take(&mut self, now: u64, inst: usize) -> bool {
        let Sched::Dynamic(dq, ordering, Some(pipe)) = &mut self.sched else {
            return false;
        };
        let Some(mut p) = pipe.waiting.pop_front() else {
            return false;
        };
        if pipe.waiting.is_empty() && pipe.cur == Cur::Queued {
            pipe.cur = Cur::Stale;
        }
        if dq.delay > 0 && dq.mbs > 1 && !p.shape_break {
            while let Some(f) = pipe.waiting.front() {
                if f.shape_break || now.saturating_sub(f.start) <= dq.delay {
                    break;
                }
                // Triton marks it as executing before it checks the size.
                if pipe.waiting.len() == 1 && pipe.cur == Cur::Queued {
                    pipe.cur = Cur::Stale;
                }
                if p.size.saturating_add(f.size) > dq.mbs {
                    break;
                }
                let f = pipe.waiting.pop_front().expect("front exists");
                p.jobs.extend(f.jobs);
                p.size = p.size.saturating_add(f.size);
            }
        }
        pipe.notified = true;
        let order = ordering.then_some(0);
        let batching = dq.batching;
        self.emit_plain(now, inst, &mut p.jobs, batching, order, false);
        true
    }

    fn emit_plain(
        &mut self,
        now: u64,
        inst: usize,
        taken: &mut [u32],
        batching: bool,
        order: Option<usize>,
        oldest: bool,
    ) {
        let mut size = 0u32;
        let mut rows = std::mem::take(&mut self.running[inst].rows);
        rows.clear();
        for &j in taken.iter() {
            let job = self.jobs.take(j);
            size = size.saturating_add(if batching {
                job.req.batch_size.max(1)
            } else {
                1
            });
            rows.push(Row {
                end: job.req.end,
                request: Some(job.req),
                slot: oldest.then_some(job.slot),
                sequence: job.seq,
            });
        }
        let b = self.start_batch(now, inst, order);
        b.size = size;
        b.rows = rows;
        b.sequence = oldest;
    }

    fn form_direct(&mut self, now: u64, inst: usize) {
        let mbs = self.mbs.max(1);
        let shapes = self.shapes;
        let Sched::Direct(st, delay, util) = &mut self.sched else {
            return;
        };
        let (delay, util) = (*delay, *util);
        let n = st.slots[inst].len();
        for s in 0..n {
            while let Some(Item::Release(h)) = st.slots[inst][s].queue.front() {
                let h = *h;
                st.slots[inst][s].queue.pop_front();
                self.releases.push(Release {
                    sequence: h,
                    reason: ReleaseReason::Idle,
                });
                st.release(inst, s);
            }
        }
        let head = |slot: &Slot| match slot.queue.front() {
            Some(Item::Req(j)) => Some(*j),
            _ => None,
        };
        let mut count = 0usize;
        let mut first = None;
        let mut hi = None;
        let mut earliest = u64::MAX;
        for (s, slot) in st.slots[inst].iter().enumerate() {
            if let Some(j) = head(slot) {
                count += 1;
                first.get_or_insert(j);
                hi = Some(s);
                earliest = earliest.min(self.jobs.get(j).req.arrival_us);
            }
        }
        let Some(hi) = hi else { return };
        if delay > 0 && util > 0.0 {
            let due = earliest.saturating_add(delay).saturating_add(1);
            let full = count as f32 / mbs as f32 >= util;
            if !(now >= due || full) {
                self.wait[inst] = Some(due);
                return;
            }
        }
        // Heads whose shapes differ from the first ready head's are padded
        // and stay queued (§3.8 rule 4).
        let mut entries = std::mem::take(&mut self.entries);
        entries.clear();
        let rep = &self.jobs.get(first.expect("a ready slot")).req.shape;
        for s in 0..=hi {
            let e = match head(&st.slots[inst][s]) {
                Some(j) if shapes && self.jobs.get(j).req.shape != *rep => None,
                Some(j) => {
                    st.slots[inst][s].queue.pop_front();
                    Some(j)
                }
                None => None,
            };
            entries.push(e);
        }
        for (s, e) in entries.iter().enumerate() {
            if e.is_some_and(|j| self.jobs.get(j).req.end) {
                st.release(inst, s);
            }
        }
        let mut rows = std::mem::take(&mut self.running[inst].rows);
        rows.clear();
        for (s, e) in entries.iter().enumerate() {
            rows.push(match e {
                Some(j) => {
                    let job = self.jobs.take(*j);
                    Row {
                        end: job.req.end,
                        request: Some(job.req),
                        slot: Some(s),
                        sequence: job.seq,
                    }
                }
                None => Row {
                    request: None,
                    slot: Some(s),
                    sequence: None,
                    end: false,
                },
            });
        }
        let size = entries.len() as u32;
        self.entries = entries;
        let b = self.start_batch(now, inst, None);
        b.size = size;
        b.rows = rows;
        b.sequence = true;
        b.slot_count = n;
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
