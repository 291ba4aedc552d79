//! The virtual-clock driver: [`simulate`] replays a trace through a
//! [`Scheduler`] with service times from a [`Latency`] model.
//!
//! At each timestamp: (1) batch completions in instance order, (2) arrivals
//! in trace order, (3) timers (queue delays, request deadlines, idle and
//! backlog timeouts) and (4) batch formation for every idle instance in
//! index order ("idle dispatch" of docs/spec/schedulers.md §2.6), both in
//! [`Scheduler::poll`]. The end of a batch is known when it starts, so its
//! records are emitted at once.

use super::core::Scheduler;
use super::{Latency, Request, Settings, Sink};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Runs `trace` (sorted by `arrival_us`; an earlier arrival than the
/// previous one is treated as arriving with it) through the scheduler of
/// `settings`, streaming one [`RequestRecord`](super::RequestRecord) per
/// request and one [`BatchRecord`](super::BatchRecord) per execution into
/// `sink`. Deterministic.
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
    let mut sched = Scheduler::new(settings);
    // Completions: (end, instance), earliest first, instance order at ties.
    let mut running: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::new();
    let mut started = Vec::new();
    let mut trace = trace.into_iter().peekable();
    let mut now = 0u64;
    loop {
        let mut next = running.peek().map(|Reverse((t, _))| *t);
        for t in [trace.peek().map(|r| r.arrival_us), sched.next_deadline()]
            .into_iter()
            .flatten()
        {
            next = Some(next.map_or(t, |n| n.min(t)));
        }
        let Some(t) = next else { break };
        let t = t.max(now);
        now = t;
        // (1) completions.
        while let Some(&Reverse((end, inst))) = running.peek() {
            if end != t {
                break;
            }
            running.pop();
            sched.complete(t, inst, sink);
        }
        // (2) arrivals.
        while trace.peek().is_some_and(|r| r.arrival_us <= t) {
            let r = trace.next().expect("peeked");
            sched.arrive(t, r, sink);
        }
        // (3) and (4).
        sched.poll(t, sink, &mut started);
        for &inst in &started {
            let b = sched.batch(inst);
            let service = match latencies.len() {
                0 => 0,
                n => latencies[inst % n].eval(b.size),
            };
            let end = t.saturating_add(service);
            running.push(Reverse((end, inst)));
            sched.record(inst, end, sink);
        }
        sched.clear_releases();
    }
}
