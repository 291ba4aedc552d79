//! The driving thread's state ([`Driver`]): requests admitted on the real
//! clock, batches started from the scheduler and finished when their
//! instance is done, results and sequence states, and the scheduler's
//! records ([`Records`]).

use super::assemble::Spare;
use super::plan::{sched_request, Plan, Signatures};
use super::pool::{Done, Io, Job};
use crate::batching::{BatchRecord, Request, RequestRecord, Scheduler, SeqHandle, Sink, Status};
use crate::run::input::RunRequest;
use crate::run::output::RunResult;
use crate::tensor::Tensor;
use std::borrow::Cow;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// One dispatched batch, remembered until it completes.
#[derive(Default)]
pub(super) struct InFlight {
    /// Per row: the request index (None: padding).
    pub(super) tags: Vec<Option<usize>>,
    pub(super) keys: Vec<Option<SeqHandle>>,
    /// Per row: its rows along the batch axis.
    pub(super) sizes: Vec<usize>,
    size: u32,
    /// Set when assembling the inputs failed (the batch is not run).
    failed: Option<String>,
}

/// Collects the scheduler's records: of requests it refused or timed out
/// (the others get their results from their batch), and of the requests
/// it answered, whose ids move into their results (see
/// [`Driver::finish`]).
#[derive(Default)]
pub(super) struct Records {
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

/// How many requests without an arrival time may be released ahead of
/// the finished ones (raised when nothing runs and nothing is due, so that
/// sequences waiting for a slot cannot hold up the ones that own one).
pub(super) const WINDOW: usize = 256;

/// How often a streaming run looks for new requests while batches run on
/// worker threads.
pub(super) const STREAM_POLL: Duration = Duration::from_micros(200);

/// How long a waiting thread polls its channel before it blocks.
pub(super) const SPIN: Duration = Duration::from_micros(200);

/// Receives a message, polling until `until` before blocking; `None` when
/// the sender is gone.
pub(super) fn receive<T>(rx: &mpsc::Receiver<T>, until: Instant) -> Option<T> {
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
pub(super) fn spin<T>(rx: &mpsc::Receiver<T>, wait: Duration) -> Option<T> {
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
pub(super) struct Driver<'r> {
    /// Owned when streaming or given by [`run_model_owned`](super::run_model_owned): the tensors
    /// of an owned request are freed once they are in its batch.
    pub(super) requests: Cow<'r, [RunRequest]>,
    pub(super) plan: Plan,
    pub(super) sched: Scheduler,
    pub(super) sink: Records,
    pub(super) started: Vec<usize>,
    pub(super) flights: Vec<InFlight>,
    /// Per instance: its buffers, `None` while a worker holds them.
    pub(super) ios: Vec<Option<Io>>,
    pub(super) results: Vec<Option<RunResult>>,
    /// Execution times (µs), indexed by the executed batch size.
    pub(super) executions: Vec<Vec<u64>>,
    /// Per request: its release time.
    pub(super) arrivals: Vec<u64>,
    /// Request indices in release order.
    pub(super) order: Vec<usize>,
    /// Position in `order` of the next request to release.
    pub(super) next: usize,
    pub(super) done_count: usize,
    pub(super) window: usize,
    pub(super) busy: usize,
    pub(super) epoch: Instant,
    /// Set when the scheduler compares input shapes.
    pub(super) sigs: Option<Signatures>,
    pub(super) sequence: bool,
    /// Per request: its scheduler form, built before the clock starts
    /// (taken when it is released).
    pub(super) pending: Vec<Option<Request>>,
    /// An emptied [`InFlight`] and start-flag buffer for the next batch.
    pub(super) spare: InFlight,
    pub(super) starts: Vec<bool>,
    /// Reused by [`Plan::outputs`].
    pub(super) per_row: Vec<Option<Vec<(String, Tensor)>>>,
    /// Memory of requests already run, for results.
    pub(super) recycled: Spare,
    /// The stateful backend's own per-batch rules (`crate::run::stateful`).
    pub(super) stateful: Option<crate::run::stateful::StatefulBackend>,
    /// Streaming (see [`run_model_streaming`](super::run_model_streaming)): where more requests come
    /// from (`None` once the sender is gone) and where each result goes.
    pub(super) inbox: Option<mpsc::Receiver<RunRequest>>,
    pub(super) outbox: Option<&'r (dyn Fn(usize, RunResult) + Sync)>,
    /// Start of the first execution, end of the last (since `epoch`), and
    /// the number of executions.
    pub(super) first_start: Option<Duration>,
    pub(super) last_end_us: u64,
    pub(super) executed: usize,
    /// See [`Driver::clock`].
    pub(super) hint: Option<u64>,
}

/// Asks the processor to bring the `bytes` bytes at `p` (at most four
/// cache lines) into its caches, ahead of their use (x86-64; elsewhere it
/// does nothing). Never faults, whatever the address.
#[inline(always)]
pub(super) fn prefetch(p: *const u8, bytes: usize) {
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
pub(super) fn prefetch_of<T>(v: &T) {
    prefetch((v as *const T).cast(), std::mem::size_of::<T>());
}

impl Driver<'_> {
    /// Prefetches the memory the next request to be released will need
    /// (see [`prefetch`]): called before a batch runs, whose run hides the
    /// time the processor takes to fetch it.
    pub(super) fn prefetch_next(&self) {
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

    pub(super) fn now(&self) -> u64 {
        self.epoch.elapsed().as_micros() as u64
    }

    /// The time of `hint` when set (inline execution: the end of the batch
    /// that just ran, nothing having happened since), else [`Self::now`].
    /// Saves reading the clock several times per step.
    pub(super) fn clock(&self) -> u64 {
        self.hint.unwrap_or_else(|| self.now())
    }

    /// Whether the request at `order[next]` is held back by the window.
    pub(super) fn held(&self) -> bool {
        self.requests[self.order[self.next]].arrival_us.is_none()
            && self.next - self.done_count >= self.window
    }

    /// The release time of the next request, unless none is left or it is
    /// held back.
    pub(super) fn next_arrival(&self) -> Option<u64> {
        (self.next < self.requests.len() && !self.held())
            .then(|| self.arrivals[self.order[self.next]])
    }

    /// Releases the requests due at `t`. Requests without an arrival time
    /// are released as fast as possible, but at most `window` ahead of the
    /// finished ones (the scheduler's queues stay short).
    pub(super) fn admit(&mut self, t: u64) {
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
    pub(super) fn take_inbox(&mut self, block: Option<Duration>) -> bool {
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
    pub(super) fn finish(&mut self, d: Done) {
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
    pub(super) fn start(&mut self, instance: usize) -> Job {
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
    pub(super) fn catch_up(&mut self, from: u64, end: u64) {
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
    pub(super) fn refusals(&mut self) {
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
