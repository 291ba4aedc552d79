//! Sequence batcher state shared by Direct and Oldest ([`SeqState`]:
//! slots, the backlog, sequence handles and idle timeouts), and the
//! scheduler steps for sequences: arrival, forwarding to Oldest's dynamic
//! batchers, and the time checks (timeouts, idleness, backlog expiry).

use super::{
    fail, Bits, FxMap, Job, Release, ReleaseReason, Sched, Scheduler, SeqHandle, SlotHeap,
    MSG_BACKLOG_TIMEOUT, MSG_TIMEOUT,
};
use crate::batching::{CorrId, Request, Sink, Status};
use std::collections::{BTreeMap, VecDeque};

pub(super) enum Item {
    Req(u32),
    /// Idle-timeout marker of the sequence that owned the slot.
    Release(SeqHandle),
}

#[derive(Default)]
pub(super) struct Slot {
    pub(super) queue: VecDeque<Item>,
    /// The live sequence mapped to this slot (None once its END arrived).
    owner: Option<(CorrId, SeqHandle)>,
    last_seen: u64,
    /// Oldest: a request of this slot is in the dynamic batcher or running.
    pub(super) in_flight: bool,
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

pub(super) struct SeqState {
    pub(super) slots: Vec<Vec<Slot>>,
    per_instance: usize,
    /// Free slots in Triton's order (see [`SlotHeap`]).
    free: SlotHeap,
    map: FxMap<CorrId, Loc>,
    backlog: BTreeMap<u64, Backlog>,
    next_backlog: u64,
    /// Lower bound of the backlog queues' expiry times.
    pub(super) backlog_at: Option<u64>,
    idle_us: u64,
    /// Number of slots with an owner.
    pub(super) owned: usize,
    /// No owned slot can be idle before this time (a lower bound on every
    /// owner's `last_seen + idle_us`); idle reaping scans only from then on.
    pub(super) idle_check_at: u64,
    /// Oldest: slots (`instance * per_instance + slot`) with queued items
    /// and nothing in flight, i.e. those a forward step can move.
    ready: Bits,
    oldest: bool,
    next_handle: u64,
}

impl SeqState {
    pub(super) fn new(instances: usize, per_instance: usize, idle_us: u64, oldest: bool) -> Self {
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
    pub(super) fn touch(&mut self, i: usize, s: usize) {
        if self.oldest {
            let slot = &self.slots[i][s];
            if !slot.in_flight && !slot.queue.is_empty() {
                self.ready.set(i * self.per_instance + s);
            }
        }
    }

    /// Releases a slot: the first backlogged sequence moves in, else the
    /// slot returns to the pool.
    pub(super) fn release(&mut self, i: usize, s: usize) {
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

impl Scheduler {
    pub(super) fn arrive_seq(&mut self, now: u64, r: Request, sink: &mut dyn Sink) {
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
    pub(super) fn forward_all(&mut self, now: u64) {
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
    pub(super) fn time_checks(&mut self, now: u64, sink: &mut dyn Sink) {
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
}
