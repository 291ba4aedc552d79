//! Pipelined mode of the dynamic batcher ([`Pipe`]): payloads built
//! ahead while the instances are busy, as Triton's batcher thread does,
//! and the scheduler steps that feed and take them.

use super::{Sched, Scheduler};
use std::collections::VecDeque;

/// What [`DynQueue::pipe_scan`](super::dynamic::DynQueue::pipe_scan) decided.
#[derive(Default)]
pub(super) struct PipeScan {
    /// Requests (in scan order) that join the payload now.
    pub(super) take: usize,
    /// Nothing joins; look again at this time.
    pub(super) wait: Option<u64>,
    /// The payload can not grow any more: the next requests start a new one.
    pub(super) saturated: bool,
    /// A request with another shape ended the scan (the payload is never
    /// merged with another).
    pub(super) shape_break: bool,
    /// The new "next preferred size", when Triton computes one.
    pub(super) next_pref: Option<u32>,
}

/// A batch built ahead, waiting for an instance.
pub(super) struct Payload {
    jobs: Vec<u32>,
    size: u32,
    /// Ended by a shape break: not merged with the next payload.
    shape_break: bool,
    /// Earliest enqueue time of its requests.
    start: u64,
}

/// The payload the batcher thread is filling.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Cur {
    /// Empty.
    Fresh,
    /// The last payload of [`Pipe::waiting`]: it still grows.
    Queued,
    /// An instance took it (or began to): the next requests need a new one.
    Stale,
}

/// How long Triton's batcher thread sleeps with an empty queue before it
/// looks again by itself.
pub(super) const BATCHER_IDLE_WAIT_US: u64 = 500_000;

/// Pipelined mode of the dynamic batcher (docs/spec/schedulers.md §2.6 and
/// docs/spec/schedulers-observed.md, Dynamic batcher): Triton's batcher thread
/// builds payloads while the instances are busy and hands them to a FIFO
/// the instances take from. The thread runs only when woken (an arrival
/// that brings the queue to the stored next preferred size, an instance
/// taking a payload, its own timer), and a payload waiting for an instance
/// may keep growing (even past the largest preferred size, up to
/// max_batch_size).
pub(super) struct Pipe {
    pub(super) waiting: VecDeque<Payload>,
    /// At most this many payloads wait (2 × instances).
    pub(super) cap: usize,
    pub(super) cur: Cur,
    /// Triton's `payload_saturated_`.
    pub(super) saturated: bool,
    /// Triton's `next_preferred_batch_size_`.
    pub(super) next_pref: u32,
    /// Batch elements in the queue (Triton's `queued_batch_size_`).
    pub(super) queued: u64,
    /// The thread has been woken and runs at the next poll.
    pub(super) notified: bool,
    /// The thread wakes up by itself at this time.
    pub(super) timer: Option<u64>,
    /// `timer` is the empty-queue wait (repeats every
    /// [`BATCHER_IDLE_WAIT_US`] while nothing arrives).
    pub(super) idle_timer: bool,
}

impl Pipe {
    pub(super) fn new(instances: usize) -> Self {
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

impl Scheduler {
    /// Pipelined dynamic batcher at `now`: idle instances take waiting
    /// payloads, then the batcher thread runs if it was woken or its timer
    /// is due, until it waits again.
    pub(super) fn run_pipe(&mut self, now: u64) {
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
}
