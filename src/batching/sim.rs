//! The event loop and the scheduler state machines.
//!
//! At each timestamp: (1) batch completions in instance order, (2) arrivals
//! in trace order, (3) timers (queue delays, request deadlines, idle and
//! backlog timeouts), (4) batch formation for every idle instance in index
//! order ("idle dispatch" of schedulers.md §2.6).

use super::{
    BatchRecord, CorrId, Latency, QueuePolicy, Request, RequestRecord, SchedulerKind, Settings,
    Sink, SlotRecord, Status, TimeoutAction,
};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap, VecDeque};

const CLASS_COMPLETION: u8 = 0;
const CLASS_TIMER: u8 = 2;

const MSG_TIMEOUT: &str = "Request timeout expired";
const MSG_BACKLOG_TIMEOUT: &str = "timeout of the corresponding sequence has been expired";

/// Runs `trace` (sorted by `arrival_us`; an earlier arrival than the
/// previous one is treated as arriving with it) through the scheduler of
/// `settings`, streaming one [`RequestRecord`] per request and one
/// [`BatchRecord`] per execution into `sink`. Deterministic.
pub fn simulate<I>(settings: &Settings, latency: &Latency, trace: I, sink: &mut dyn Sink)
where
    I: IntoIterator<Item = Request>,
{
    simulate_per_instance(settings, std::slice::from_ref(latency), trace, sink);
}

/// [`simulate`] with one latency model per instance: instance `i` uses
/// `latencies[i % latencies.len()]` (an empty slice means zero service
/// time).
pub fn simulate_per_instance<I>(
    settings: &Settings,
    latencies: &[Latency],
    trace: I,
    sink: &mut dyn Sink,
) where
    I: IntoIterator<Item = Request>,
{
    let mut e = Engine::new(settings, latencies, sink);
    let mut trace = trace.into_iter().peekable();
    loop {
        let next_heap = e.heap.peek().map(|Reverse((t, _, _))| *t);
        let next_arrival = trace.peek().map(|r| r.arrival_us.max(e.now));
        let t = match (next_heap, next_arrival) {
            (None, None) => break,
            (Some(a), None) | (None, Some(a)) => a,
            (Some(a), Some(b)) => a.min(b),
        };
        e.now = t;
        // (1) completions.
        while let Some(&Reverse((tt, class, inst))) = e.heap.peek() {
            if tt != t || class != CLASS_COMPLETION {
                break;
            }
            e.heap.pop();
            e.complete(inst as usize);
        }
        // (2) arrivals.
        while trace.peek().is_some_and(|r| r.arrival_us.max(t) == t) {
            let r = trace.next().expect("peeked");
            e.arrive(r);
        }
        // (3) timers.
        while let Some(&Reverse((tt, class, _))) = e.heap.peek() {
            if tt != t || class != CLASS_TIMER {
                break;
            }
            e.heap.pop();
            e.timers.remove(&tt);
        }
        e.time_checks();
        // (4) batch formation.
        for i in 0..e.busy.len() {
            if !e.busy[i] {
                e.form(i);
            }
        }
    }
}

/// A request waiting in a dynamic-batcher queue.
struct Queued {
    req: Request,
    enq: u64,
    deadline: Option<u64>,
    /// Oldest: the candidate slot it came from.
    slot: usize,
}

struct Level {
    live: VecDeque<Queued>,
    delayed: VecDeque<Queued>,
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
}

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
        }
    }

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

    fn iter(&self) -> impl Iterator<Item = &Queued> {
        self.levels
            .iter()
            .flat_map(|l| l.live.iter().chain(l.delayed.iter()))
    }

    /// Applies deadlines: returns the requests rejected by a REJECT policy.
    fn expire(&mut self, now: u64) -> Vec<Queued> {
        let mut out = Vec::new();
        for l in &mut self.levels {
            if !l.live.iter().any(|q| q.deadline.is_some_and(|d| now >= d)) {
                continue;
            }
            let live = std::mem::take(&mut l.live);
            for mut q in live {
                if q.deadline.is_some_and(|d| now >= d) {
                    match l.policy.timeout_action {
                        TimeoutAction::Reject => out.push(q),
                        TimeoutAction::Delay => {
                            q.deadline = None;
                            l.delayed.push_back(q);
                        }
                    }
                } else {
                    l.live.push_back(q);
                }
            }
        }
        out
    }

    fn decide(&self, now: u64) -> Decision {
        let (mut n, mut sum) = (0usize, 0u32);
        let mut mark: Option<usize> = None;
        let mut send_now = false;
        let mut earliest = u64::MAX;
        let mut first_shape: Option<&Option<String>> = None;
        for q in self.iter() {
            let b = self.size_of(&q.req);
            if n > 0 {
                if sum + b > self.maxp && mark.is_none() {
                    mark = Some(n);
                }
                if sum + b > self.mbs {
                    send_now = true;
                    break;
                }
                if self.shapes && first_shape != Some(&q.req.shape) {
                    send_now = true;
                    break;
                }
            } else {
                first_shape = Some(&q.req.shape);
            }
            n += 1;
            sum += b;
            earliest = earliest.min(q.enq);
            if self.pref.contains(&sum) {
                mark = Some(n);
            }
        }
        if n == 0 {
            return Decision::Nothing;
        }
        let expired = self.delay > 0 && now.saturating_sub(earliest) >= self.delay;
        if let Some(m) = mark {
            if !expired {
                return Decision::Send(m);
            }
        }
        if send_now || sum >= self.maxp || expired || self.delay == 0 {
            return Decision::Send(n);
        }
        Decision::Wait(earliest + self.delay)
    }

    fn take(&mut self, mut n: usize) -> Vec<Queued> {
        let mut out = Vec::with_capacity(n);
        for l in &mut self.levels {
            while n > 0 {
                let q = match l.live.pop_front() {
                    Some(q) => q,
                    None => match l.delayed.pop_front() {
                        Some(q) => q,
                        None => break,
                    },
                };
                out.push(q);
                n -= 1;
            }
        }
        out
    }
}

enum Item {
    Req(Request),
    Release,
}

#[derive(Default)]
struct Slot {
    queue: VecDeque<Item>,
    /// The live sequence mapped to this slot (None once its END arrived).
    owner: Option<CorrId>,
    last_seen: u64,
    /// Oldest: a request of this slot is in the dynamic batcher or running.
    in_flight: bool,
}

struct Backlog {
    id: CorrId,
    reqs: VecDeque<Request>,
    last_seen: u64,
    expiry: Option<u64>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Loc {
    Slot(usize, usize),
    Backlog(u64),
}

struct SeqState {
    slots: Vec<Vec<Slot>>,
    /// Free slots ordered by (slot index, instance).
    free: BTreeSet<(usize, usize)>,
    map: HashMap<CorrId, Loc>,
    backlog: BTreeMap<u64, Backlog>,
    next_backlog: u64,
    idle_us: u64,
    /// Slots (instance, slot) whose queue holds items; Oldest hands them
    /// over in this order, so events cost the live work, not the slot count.
    pending: BTreeSet<(usize, usize)>,
    /// No owned slot can be idle before this time (a lower bound on every
    /// owner's `last_seen + idle_us`); idle reaping scans only from then on.
    idle_check_at: u64,
}

impl SeqState {
    fn new(instances: usize, per_instance: usize, idle_us: u64) -> Self {
        let mut free = BTreeSet::new();
        for s in 0..per_instance {
            for i in 0..instances {
                free.insert((s, i));
            }
        }
        SeqState {
            slots: (0..instances)
                .map(|_| (0..per_instance).map(|_| Slot::default()).collect())
                .collect(),
            free,
            map: HashMap::new(),
            backlog: BTreeMap::new(),
            next_backlog: 0,
            idle_us,
            pending: BTreeSet::new(),
            idle_check_at: 0,
        }
    }

    /// Releases a slot: the first backlogged sequence moves in, else the
    /// slot returns to the pool. Returns a time at which the moved-in
    /// sequence must be checked for idleness.
    fn release(&mut self, inst: usize, s: usize) -> Option<u64> {
        let slot = &mut self.slots[inst][s];
        slot.owner = None;
        match self.backlog.pop_first() {
            Some((key, b)) => {
                slot.queue.extend(b.reqs.into_iter().map(Item::Req));
                self.pending.insert((inst, s));
                // The sequence brings its own (older) last_seen.
                self.idle_check_at = 0;
                if self.map.get(&b.id) == Some(&Loc::Backlog(key)) {
                    self.map.insert(b.id.clone(), Loc::Slot(inst, s));
                    slot.owner = Some(b.id);
                    slot.last_seen = b.last_seen;
                    return Some(b.last_seen + self.idle_us);
                }
                None
            }
            None => {
                self.free.insert((s, inst));
                None
            }
        }
    }
}

enum Sched {
    Default(VecDeque<Request>),
    Dynamic(DynQueue, bool),
    Direct(SeqState, u64, f32),
    Oldest(SeqState, Vec<DynQueue>, bool),
}

struct Engine<'a> {
    s: &'a Settings,
    lat: &'a [Latency],
    sink: &'a mut dyn Sink,
    now: u64,
    heap: BinaryHeap<Reverse<(u64, u8, u64)>>,
    timers: BTreeSet<u64>,
    busy: Vec<bool>,
    /// Oldest: candidate slots of the batch running on each instance.
    running: Vec<Vec<usize>>,
    next_batch: u64,
    /// preserve_ordering: the latest response time handed out so far, per
    /// batcher (one for the dynamic batcher, one per instance for Oldest).
    order_hold: Vec<u64>,
    sched: Sched,
}

fn display_id(id: &str) -> &str {
    if id.is_empty() {
        "<id_unknown>"
    } else {
        id
    }
}

impl<'a> Engine<'a> {
    fn new(s: &'a Settings, lat: &'a [Latency], sink: &'a mut dyn Sink) -> Self {
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
            ),
            SchedulerKind::Direct(d) => Sched::Direct(
                SeqState::new(n, s.max_batch_size.max(1) as usize, d.seq.idle_us),
                d.max_queue_delay_us,
                d.minimum_slot_utilization,
            ),
            SchedulerKind::Oldest(o) => Sched::Oldest(
                SeqState::new(n, o.max_candidate_sequences.max(1), o.seq.idle_us),
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
        Engine {
            s,
            lat,
            sink,
            now: 0,
            heap: BinaryHeap::new(),
            timers: BTreeSet::new(),
            busy: vec![false; n],
            running: vec![Vec::new(); n],
            next_batch: 0,
            order_hold: vec![0; n],
            sched,
        }
    }

    fn timer(&mut self, t: u64) {
        let t = t.max(self.now);
        if self.timers.insert(t) {
            self.heap.push(Reverse((t, CLASS_TIMER, 0)));
        }
    }

    fn fail(&mut self, r: Request, status: Status, reason: String) {
        self.sink.request(RequestRecord {
            id: r.id,
            sequence_id: r.sequence_id,
            arrival_us: r.arrival_us,
            status,
            reason: Some(reason),
            start_us: None,
            end_us: Some(self.now),
            instance: None,
            slot: None,
            batch: None,
        });
    }

    fn complete(&mut self, inst: usize) {
        self.busy[inst] = false;
        let slots = std::mem::take(&mut self.running[inst]);
        if let Sched::Oldest(st, ..) = &mut self.sched {
            for s in slots {
                st.slots[inst][s].in_flight = false;
            }
            self.forward_all();
        }
    }

    fn arrive(&mut self, r: Request) {
        let mbs = self.s.max_batch_size;
        if mbs > 0 && r.batch_size > mbs {
            let prefix = if matches!(self.s.kind, SchedulerKind::Dynamic(_)) {
                format!("[request id: {}] ", display_id(&r.id))
            } else {
                String::new()
            };
            let msg = format!(
                "{prefix}inference request batch-size must be <= {mbs} for '{}'",
                self.s.model
            );
            return self.fail(r, Status::Rejected, msg);
        }
        match &mut self.sched {
            Sched::Default(q) => q.push_back(r),
            Sched::Dynamic(dq, _) => {
                let level = dq.level_of(&r);
                let l = &mut dq.levels[level];
                let held = l.live.len() + l.delayed.len();
                if l.policy.max_queue_size > 0 && held >= l.policy.max_queue_size as usize {
                    let msg = format!(
                        "[request id: {}] Exceeds maximum queue size",
                        display_id(&r.id)
                    );
                    return self.fail(r, Status::Rejected, msg);
                }
                let timeout = l.policy.effective_timeout(r.timeout_us);
                let deadline = (timeout > 0).then(|| self.now + timeout);
                l.live.push_back(Queued {
                    req: r,
                    enq: self.now,
                    deadline,
                    slot: 0,
                });
                if let Some(d) = deadline {
                    self.timer(d);
                }
            }
            Sched::Direct(..) | Sched::Oldest(..) => self.arrive_seq(r),
        }
    }

    fn arrive_seq(&mut self, r: Request) {
        let model = self.s.model.clone();
        if r.batch_size > 1 {
            let msg = format!("inference request to model '{model}' must specify batch-size 1 due to requirements of sequence batcher");
            return self.fail(r, Status::Rejected, msg);
        }
        let id = match &r.sequence_id {
            Some(CorrId::Int(0)) | None => None,
            Some(CorrId::Str(s)) if s.is_empty() => None,
            Some(id) => Some(id.clone()),
        };
        let Some(id) = id else {
            let msg = format!("inference request to model '{model}' must specify a non-zero or non-empty correlation ID");
            return self.fail(r, Status::Rejected, msg);
        };
        let now = self.now;
        let (st, oldest) = match &mut self.sched {
            Sched::Direct(st, ..) => (st, false),
            Sched::Oldest(st, ..) => (st, true),
            _ => unreachable!("sequence arrival on a non-sequence scheduler"),
        };
        let loc = st.map.get(&id).copied();
        if loc.is_none() && !r.start {
            let msg = format!("inference request for sequence {id} to model '{model}' must specify the START flag on the first request of the sequence");
            return self.fail(r, Status::Rejected, msg);
        }
        let end = r.end;
        let timeout = r.timeout_us;
        let mut timers = Vec::new();
        let loc = match loc {
            Some(Loc::Slot(i, s)) => {
                let slot = &mut st.slots[i][s];
                slot.last_seen = now;
                slot.queue.push_back(Item::Req(r));
                st.pending.insert((i, s));
                timers.push(now + st.idle_us);
                Loc::Slot(i, s)
            }
            Some(Loc::Backlog(k)) => {
                let b = st.backlog.get_mut(&k).expect("mapped backlog exists");
                b.last_seen = now;
                b.reqs.push_back(r);
                if timeout > 0 {
                    let e = now + timeout;
                    b.expiry = Some(b.expiry.map_or(e, |x| x.min(e)));
                    timers.push(e);
                }
                Loc::Backlog(k)
            }
            None => match st.free.pop_first() {
                Some((s, i)) => {
                    let slot = &mut st.slots[i][s];
                    slot.owner = Some(id.clone());
                    slot.last_seen = now;
                    slot.queue.push_back(Item::Req(r));
                    st.pending.insert((i, s));
                    st.map.insert(id.clone(), Loc::Slot(i, s));
                    timers.push(now + st.idle_us);
                    Loc::Slot(i, s)
                }
                None => {
                    let k = st.next_backlog;
                    st.next_backlog += 1;
                    let expiry = (timeout > 0).then(|| now + timeout);
                    timers.extend(expiry);
                    st.backlog.insert(
                        k,
                        Backlog {
                            id: id.clone(),
                            reqs: VecDeque::from([r]),
                            last_seen: now,
                            expiry,
                        },
                    );
                    st.map.insert(id.clone(), Loc::Backlog(k));
                    Loc::Backlog(k)
                }
            },
        };
        if end {
            st.map.remove(&id);
            if let Loc::Slot(i, s) = loc {
                st.slots[i][s].owner = None;
            }
        }
        for t in timers {
            self.timer(t);
        }
        if oldest {
            self.forward_all();
        }
    }

    /// Oldest: hands the head request of every slot with nothing in flight
    /// to its instance's dynamic batcher; handles release markers.
    fn forward_all(&mut self) {
        let now = self.now;
        let Sched::Oldest(st, dqs, _) = &mut self.sched else {
            return;
        };
        let mut timers = Vec::new();
        let pending: Vec<(usize, usize)> = st.pending.iter().copied().collect();
        for (i, s) in pending {
            let dq = &mut dqs[i];
            {
                loop {
                    let slot = &mut st.slots[i][s];
                    if slot.in_flight {
                        break;
                    }
                    match slot.queue.pop_front() {
                        Some(Item::Release) => timers.extend(st.release(i, s)),
                        Some(Item::Req(r)) => {
                            slot.in_flight = true;
                            let end = r.end;
                            dq.levels[0].live.push_back(Queued {
                                req: r,
                                enq: now,
                                deadline: None,
                                slot: s,
                            });
                            if end {
                                timers.extend(st.release(i, s));
                            }
                            break;
                        }
                        None => break,
                    }
                }
            }
            if st.slots[i][s].queue.is_empty() {
                st.pending.remove(&(i, s));
            }
        }
        for t in timers {
            self.timer(t);
        }
    }

    /// Deadlines, backlog expiry and idle reaping at `now`.
    fn time_checks(&mut self) {
        let now = self.now;
        match &mut self.sched {
            Sched::Dynamic(dq, _) => {
                for q in dq.expire(now) {
                    self.fail(q.req, Status::TimedOut, MSG_TIMEOUT.to_string());
                }
            }
            Sched::Direct(st, ..) | Sched::Oldest(st, ..) => {
                let expired: Vec<u64> = st
                    .backlog
                    .iter()
                    .filter(|(_, b)| b.expiry.is_some_and(|e| now >= e))
                    .map(|(k, _)| *k)
                    .collect();
                let mut failed = Vec::new();
                for k in expired {
                    let b = st.backlog.remove(&k).expect("listed");
                    if st.map.get(&b.id) == Some(&Loc::Backlog(k)) {
                        st.map.remove(&b.id);
                    }
                    failed.extend(b.reqs);
                }
                let idle = st.idle_us;
                if now >= st.idle_check_at {
                    let mut next = now.saturating_add(idle);
                    for (i, slots) in st.slots.iter_mut().enumerate() {
                        for (s, slot) in slots.iter_mut().enumerate() {
                            if slot.owner.is_none() {
                                continue;
                            }
                            let due = slot.last_seen.saturating_add(idle);
                            if now >= due {
                                let id = slot.owner.take().expect("checked");
                                if st.map.get(&id) == Some(&Loc::Slot(i, s)) {
                                    st.map.remove(&id);
                                }
                                slot.queue.push_back(Item::Release);
                                st.pending.insert((i, s));
                            } else {
                                next = next.min(due);
                            }
                        }
                    }
                    st.idle_check_at = next;
                }
                for r in failed {
                    self.fail(r, Status::TimedOut, MSG_BACKLOG_TIMEOUT.to_string());
                }
                self.forward_all();
            }
            Sched::Default(_) => {}
        }
    }

    fn start_batch(&mut self, inst: usize, size: u32) -> (u64, u64, u64) {
        let id = self.next_batch;
        self.next_batch += 1;
        let service = match self.lat.len() {
            0 => 0,
            n => self.lat[inst % n].eval(size),
        };
        let end = self.now + service;
        self.busy[inst] = true;
        self.heap
            .push(Reverse((end, CLASS_COMPLETION, inst as u64)));
        (id, self.now, end)
    }

    fn ok(
        &mut self,
        r: &Request,
        inst: usize,
        slot: Option<usize>,
        batch: (u64, u64, u64),
        resp: u64,
    ) {
        self.sink.request(RequestRecord {
            id: r.id.clone(),
            sequence_id: r.sequence_id.clone(),
            arrival_us: r.arrival_us,
            status: Status::Ok,
            reason: None,
            start_us: Some(batch.1),
            end_us: Some(resp),
            instance: Some(inst),
            slot,
            batch: Some(batch.0),
        });
    }

    /// Forms a batch for idle instance `inst`, if the scheduler wants one.
    fn form(&mut self, inst: usize) {
        let now = self.now;
        match &mut self.sched {
            Sched::Default(q) => {
                let Some(r) = q.pop_front() else { return };
                let b = self.start_batch(inst, 1);
                self.ok(&r, inst, None, b, b.2);
                self.sink.batch(BatchRecord {
                    id: b.0,
                    instance: inst,
                    start_us: b.1,
                    end_us: b.2,
                    size: 1,
                    requests: vec![r.id],
                    slots: Vec::new(),
                });
            }
            Sched::Dynamic(dq, ordering) => {
                let ordering = *ordering;
                match dq.decide(now) {
                    Decision::Nothing => {}
                    Decision::Wait(t) => self.timer(t),
                    Decision::Send(n) => {
                        let taken = dq.take(n);
                        let size: u32 = taken.iter().map(|q| dq.size_of(&q.req)).sum();
                        self.emit_plain(inst, size, taken, ordering, false);
                    }
                }
            }
            Sched::Oldest(_, dqs, ordering) => match dqs[inst].decide(now) {
                Decision::Nothing => {}
                Decision::Wait(t) => self.timer(t),
                Decision::Send(n) => {
                    let ordering = *ordering;
                    let dq = &mut dqs[inst];
                    let taken = dq.take(n);
                    let size: u32 = taken.iter().map(|q| dq.size_of(&q.req)).sum();
                    self.emit_plain(inst, size, taken, ordering, true);
                }
            },
            Sched::Direct(..) => self.form_direct(inst),
        }
    }

    fn emit_plain(
        &mut self,
        inst: usize,
        size: u32,
        taken: Vec<Queued>,
        ordering: bool,
        oldest: bool,
    ) {
        let b = self.start_batch(inst, size);
        let mut resp = b.2;
        if ordering {
            let k = if oldest { inst } else { 0 };
            resp = resp.max(self.order_hold[k]);
            self.order_hold[k] = resp;
        }
        let mut requests = Vec::with_capacity(taken.len());
        let mut slots = Vec::new();
        for q in &taken {
            let slot = oldest.then_some(q.slot);
            self.ok(&q.req, inst, slot, b, resp);
            requests.push(q.req.id.clone());
            if oldest {
                self.running[inst].push(q.slot);
                slots.push(SlotRecord {
                    slot: q.slot,
                    request: Some(q.req.id.clone()),
                    sequence_id: q.req.sequence_id.clone(),
                    start: q.req.start,
                    end: q.req.end,
                    ready: true,
                    corrid: q.req.sequence_id.clone().unwrap_or(CorrId::Int(0)),
                });
            }
        }
        self.sink.batch(BatchRecord {
            id: b.0,
            instance: inst,
            start_us: b.1,
            end_us: b.2,
            size,
            requests,
            slots,
        });
    }

    fn form_direct(&mut self, inst: usize) {
        let now = self.now;
        let mbs = self.s.max_batch_size.max(1);
        let shapes = self.s.enforce_shapes;
        let Sched::Direct(st, delay, util) = &mut self.sched else {
            return;
        };
        let (delay, util) = (*delay, *util);
        let mut timers = Vec::new();
        let n = st.slots[inst].len();
        for s in 0..n {
            while matches!(st.slots[inst][s].queue.front(), Some(Item::Release)) {
                st.slots[inst][s].queue.pop_front();
                timers.extend(st.release(inst, s));
            }
        }
        let ready: Vec<usize> = (0..n)
            .filter(|&s| matches!(st.slots[inst][s].queue.front(), Some(Item::Req(_))))
            .collect();
        let mut entries: Vec<Option<Request>> = Vec::new();
        if let Some(&hi) = ready.last() {
            let mut send = true;
            if delay > 0 && util > 0.0 {
                let earliest = ready
                    .iter()
                    .filter_map(|&s| match st.slots[inst][s].queue.front() {
                        Some(Item::Req(r)) => Some(r.arrival_us),
                        _ => None,
                    })
                    .min()
                    .unwrap_or(now);
                let full = ready.len() as f32 / mbs as f32 >= util;
                if !(now.saturating_sub(earliest) > delay || full) {
                    send = false;
                    timers.push(earliest + delay + 1);
                }
            }
            if send {
                // Heads whose shapes differ from the first ready head's are
                // padded and stay queued (§3.8 rule 4).
                let rep = match st.slots[inst][ready[0]].queue.front() {
                    Some(Item::Req(r)) => r.shape.clone(),
                    _ => None,
                };
                for s in 0..=hi {
                    match st.slots[inst][s].queue.front() {
                        Some(Item::Req(r)) if shapes && r.shape != rep => entries.push(None),
                        Some(Item::Req(_)) => match st.slots[inst][s].queue.pop_front() {
                            Some(Item::Req(r)) => entries.push(Some(r)),
                            _ => unreachable!(),
                        },
                        _ => entries.push(None),
                    }
                }
                for (s, e) in entries.iter().enumerate() {
                    if e.as_ref().is_some_and(|r| r.end) {
                        timers.extend(st.release(inst, s));
                    }
                }
            }
        }
        for t in timers {
            self.timer(t);
        }
        if entries.is_empty() {
            return;
        }
        let size = entries.len() as u32;
        let b = self.start_batch(inst, size);
        let mut requests = Vec::new();
        let mut slots = Vec::with_capacity(n);
        for s in 0..n {
            match entries.get(s) {
                Some(Some(r)) => {
                    self.ok(r, inst, Some(s), b, b.2);
                    requests.push(r.id.clone());
                    slots.push(SlotRecord {
                        slot: s,
                        request: Some(r.id.clone()),
                        sequence_id: r.sequence_id.clone(),
                        start: r.start,
                        end: r.end,
                        ready: true,
                        corrid: r.sequence_id.clone().unwrap_or(CorrId::Int(0)),
                    });
                }
                _ => slots.push(SlotRecord {
                    slot: s,
                    request: None,
                    sequence_id: None,
                    start: false,
                    end: false,
                    ready: false,
                    corrid: CorrId::Int(0),
                }),
            }
        }
        self.sink.batch(BatchRecord {
            id: b.0,
            instance: inst,
            start_us: b.1,
            end_us: b.2,
            size,
            requests,
            slots,
        });
    }
}
