//! The dynamic batcher's queue and batch decision ([`DynQueue`]: priority
//! levels, queue policies, preferred sizes, max queue delay, shape
//! signatures), and the scheduler steps that form a batch from it
//! (without the pipelined mode, which `pipe` holds).

use super::pipe::PipeScan;
use super::{Batch, Row, Sched, Scheduler, Slab};
use crate::batching::{QueuePolicy, Request, TimeoutAction};
use std::collections::VecDeque;

pub(super) struct Level {
    pub(super) live: VecDeque<u32>,
    pub(super) delayed: VecDeque<u32>,
    pub(super) policy: QueuePolicy,
}

/// The queue and batch decision of one dynamic batcher
/// (docs/spec/schedulers.md §2.4, P = 0).
pub(super) struct DynQueue {
    pub(super) levels: Vec<Level>,
    default_level: usize,
    pref: Vec<u32>,
    maxp: u32,
    pub(super) mbs: u32,
    pub(super) delay: u64,
    pub(super) batching: bool,
    /// Compare shape signatures (docs/spec/schedulers.md §2.5).
    pub(super) shapes: bool,
    /// Lower bound of the live requests' deadlines.
    pub(super) expiry_at: Option<u64>,
    /// Bumped whenever the queue changes.
    version: u64,
    /// The last decision that depends on time only through its wait:
    /// `(version, Some(until))` for a wait, `(version, None)` for nothing.
    cached: Option<(u64, Option<u64>)>,
}

#[derive(Clone, Copy)]
pub(super) enum Decision {
    Nothing,
    Send(usize),
    Wait(u64),
}

impl DynQueue {
    pub(super) fn new(
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

    pub(super) fn push(&mut self, level: usize, j: u32) {
        self.levels[level].live.push_back(j);
        self.version += 1;
    }

    #[inline]
    pub(super) fn size_of(&self, r: &Request) -> u32 {
        if self.batching {
            r.batch_size.max(1)
        } else {
            1
        }
    }

    pub(super) fn level_of(&self, r: &Request) -> usize {
        let n = self.levels.len() as u32;
        if n > 1 && (1..=n).contains(&r.priority) {
            (r.priority - 1) as usize
        } else {
            self.default_level
        }
    }

    /// Applies deadlines at `now`: appends the requests a REJECT policy
    /// times out to `out`, parks DELAY ones.
    pub(super) fn expire(&mut self, now: u64, jobs: &mut Slab, out: &mut Vec<u32>) {
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

    pub(super) fn is_empty(&self) -> bool {
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
    pub(super) fn pipe_scan(
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
    pub(super) fn take(&mut self, mut n: usize, out: &mut Vec<u32>) {
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

impl Scheduler {
    /// Marks `inst` busy and readies its batch slot for a new batch.
    pub(super) fn start_batch(
        &mut self,
        now: u64,
        inst: usize,
        order: Option<usize>,
    ) -> &mut Batch {
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
    pub(super) fn form(&mut self, now: u64, inst: usize) {
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

    pub(super) fn emit_plain(
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
}
