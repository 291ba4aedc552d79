//! The virtual-clock driver for an ensemble: several [`Scheduler`]s (one
//! per composing model) fed by a trace of ensemble requests, as Triton's
//! ensemble scheduler feeds them (docs/spec/schedulers.md §5).
//!
//! The ensemble has no queue of its own. When an ensemble request arrives,
//! every step that waits for no other step gets a request to its composing
//! model at once; when a step's response leaves its model's scheduler, the
//! steps whose inputs are now all available are sent at that instant. The
//! ensemble request ends when every step producing an ensemble output has
//! answered; a step that is rejected or times out fails it there, with that
//! step's reason, and none of its later steps are sent. A step's request
//! carries the ensemble request's id, sequence id, START/END flags, batch
//! size, priority, timeout and shape signature.
//!
//! At each timestamp, as [`super::simulate`] does for one model:
//! (1) batch completions (model order, then instance order) and the step
//! responses they release, (2) new ensemble requests in trace order, then
//! every step request released at this instant, ordered by ensemble
//! request (trace order) and step, (3)+(4) `poll` of each model in model
//! order. Memory follows the ensemble requests alive at one time.

use super::core::{FxMap, Scheduler};
use super::{BatchRecord, CorrId, Latency, Request, RequestRecord, Settings, Sink, Status};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;

/// One composing model: its scheduler settings and latency model(s)
/// (instance `i` uses `latencies[i % len]`; empty means zero time).
#[derive(Debug, Clone)]
pub struct PipelineModel {
    pub settings: Settings,
    pub latencies: Vec<Latency>,
}

/// One step of the ensemble.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipelineStep {
    /// Index into [`Pipeline::models`].
    pub model: usize,
    /// The steps whose outputs this step reads (indices into
    /// [`Pipeline::steps`]); empty when it reads only ensemble inputs.
    pub after: Vec<usize>,
    /// Whether the step produces an ensemble output.
    pub output: bool,
}

/// An ensemble ready to simulate.
#[derive(Debug, Clone)]
pub struct Pipeline {
    /// The ensemble's name (in failure reasons, as Triton words them).
    pub name: String,
    pub models: Vec<PipelineModel>,
    pub steps: Vec<PipelineStep>,
}

/// Receives the results of a pipeline run as soon as they are final.
pub trait PipelineSink {
    /// A step's request left `model`'s scheduler (its `id` is the ensemble
    /// request's; `arrival_us` is when the step was sent).
    fn step_request(&mut self, model: usize, record: RequestRecord);
    /// An execution of `model`.
    fn step_batch(&mut self, model: usize, record: BatchRecord);
    /// An ensemble request ended: `end_us` is when its response (or error)
    /// was sent; `start_us`, `instance`, `slot` and `batch` are `None`;
    /// `tag` is its position in the trace.
    fn request(&mut self, record: RequestRecord);
    /// As [`Sink::batch_lists`].
    fn batch_lists(&self) -> bool {
        true
    }
}

impl Pipeline {
    /// Refuses a plan the driver cannot run: no steps, an index out of
    /// range, a step waiting for itself or on a cycle (its requests would
    /// never be sent).
    pub fn check(&self) -> Result<(), String> {
        if self.steps.is_empty() {
            return Err(format!("ensemble '{}' has no steps", self.name));
        }
        let n = self.steps.len();
        for (i, s) in self.steps.iter().enumerate() {
            if s.model >= self.models.len() {
                return Err(format!("step {i}: no model {}", s.model));
            }
            if let Some(&a) = s.after.iter().find(|&&a| a >= n || a == i) {
                return Err(format!("step {i} cannot wait for step {a}"));
            }
        }
        // Kahn's order (no recursion: the input decides the depth).
        let (dependents, mut waiting) = self.graph();
        let mut ready: Vec<usize> = (0..n).filter(|&i| waiting[i] == 0).collect();
        let mut seen = 0;
        while let Some(i) = ready.pop() {
            seen += 1;
            for &d in &dependents[i] {
                waiting[d] -= 1;
                if waiting[d] == 0 {
                    ready.push(d);
                }
            }
        }
        if seen < n {
            return Err(format!(
                "the steps of ensemble '{}' wait for each other in a cycle",
                self.name
            ));
        }
        Ok(())
    }

    /// Per step: the steps waiting for it, and how many steps it waits for.
    fn graph(&self) -> (Vec<Vec<usize>>, Vec<u32>) {
        let n = self.steps.len();
        let mut dependents = vec![Vec::new(); n];
        let mut waiting = vec![0u32; n];
        for (i, s) in self.steps.iter().enumerate() {
            let mut after = s.after.clone();
            after.sort_unstable();
            after.dedup();
            waiting[i] = after.len() as u32;
            for a in after {
                dependents[a].push(i);
            }
        }
        (dependents, waiting)
    }
}

/// An ensemble request in flight.
struct Alive {
    id: String,
    sequence_id: Option<CorrId>,
    start: bool,
    end: bool,
    batch_size: u32,
    priority: u32,
    timeout_us: u64,
    shape: Option<Arc<str>>,
    arrival_us: u64,
    /// Per step: steps it still waits for.
    waiting: Box<[u32]>,
    /// Output steps that have not answered.
    outputs_left: u32,
    /// Steps that have not answered.
    steps_left: u32,
    /// Whether its response was sent.
    answered: bool,
}

/// A step's outcome as its scheduler reported it.
struct Outcome {
    tag: u64,
    ok: bool,
    status: Status,
    end_us: Option<u64>,
    reason: Option<String>,
}

/// Forwards one model's records and notes the outcomes of step requests.
struct Hook<'a> {
    model: usize,
    out: &'a mut dyn PipelineSink,
    outcomes: &'a mut Vec<Outcome>,
}

impl Sink for Hook<'_> {
    fn request(&mut self, r: RequestRecord) {
        let ok = r.status == Status::Ok;
        self.outcomes.push(Outcome {
            tag: r.tag,
            ok,
            status: r.status,
            end_us: r.end_us,
            reason: if ok { None } else { r.reason.clone() },
        });
        self.out.step_request(self.model, r);
    }
    fn batch(&mut self, b: BatchRecord) {
        self.out.step_batch(self.model, b);
    }
    fn batch_lists(&self) -> bool {
        self.out.batch_lists()
    }
}

/// The driver's state besides the schedulers.
struct Run<'p> {
    p: &'p Pipeline,
    n: u64,
    dependents: Vec<Vec<usize>>,
    waiting: Vec<u32>,
    outputs: u32,
    /// Per step: whether it produces an ensemble output.
    output: Vec<bool>,
    alive: FxMap<u64, Alive>,
    /// Step responses: (time, tag), earliest first, then by tag.
    answered: BinaryHeap<Reverse<(u64, u64)>>,
    /// Step requests to send at the current instant (tags).
    release: Vec<u64>,
    outcomes: Vec<Outcome>,
}

impl Run<'_> {
    /// Takes in what the last scheduler call reported.
    fn settle(&mut self, now: u64, out: &mut dyn PipelineSink) {
        for o in self.outcomes.drain(..) {
            if o.ok {
                let at = o.end_us.unwrap_or(now).max(now);
                self.answered.push(Reverse((at, o.tag)));
                continue;
            }
            let ens = o.tag / self.n;
            let Some(a) = self.alive.remove(&ens) else {
                continue;
            };
            if a.answered {
                continue;
            }
            let reason = format!(
                "in ensemble '{}', {}",
                self.p.name,
                o.reason.unwrap_or_default()
            );
            out.request(RequestRecord {
                id: a.id,
                sequence_id: a.sequence_id,
                arrival_us: a.arrival_us,
                status: o.status,
                reason: Some(reason),
                start_us: None,
                end_us: Some(o.end_us.unwrap_or(now)),
                instance: None,
                slot: None,
                batch: None,
                tag: ens,
            });
        }
    }

    /// Step responses due at `now`: release the steps now ready and answer
    /// the ensemble requests whose outputs are all there.
    fn responses(&mut self, now: u64, out: &mut dyn PipelineSink) {
        while let Some(&Reverse((at, tag))) = self.answered.peek() {
            if at > now {
                break;
            }
            self.answered.pop();
            let (ens, step) = (tag / self.n, (tag % self.n) as usize);
            let Some(a) = self.alive.get_mut(&ens) else {
                continue;
            };
            for &d in &self.dependents[step] {
                a.waiting[d] -= 1;
                if a.waiting[d] == 0 {
                    self.release.push(ens * self.n + d as u64);
                }
            }
            a.steps_left -= 1;
            if self.output[step] {
                a.outputs_left -= 1;
                if a.outputs_left == 0 {
                    a.answered = true;
                    out.request(RequestRecord {
                        id: a.id.clone(),
                        sequence_id: a.sequence_id.clone(),
                        arrival_us: a.arrival_us,
                        status: Status::Ok,
                        reason: None,
                        start_us: None,
                        end_us: Some(now),
                        instance: None,
                        slot: None,
                        batch: None,
                        tag: ens,
                    });
                }
            }
            if a.steps_left == 0 {
                self.alive.remove(&ens);
            }
        }
    }

    fn arrive(&mut self, ens: u64, r: Request) {
        let waiting: Box<[u32]> = self.waiting.clone().into_boxed_slice();
        for (i, &w) in waiting.iter().enumerate() {
            if w == 0 {
                self.release.push(ens * self.n + i as u64);
            }
        }
        self.alive.insert(
            ens,
            Alive {
                id: r.id,
                sequence_id: r.sequence_id,
                start: r.start,
                end: r.end,
                batch_size: r.batch_size,
                priority: r.priority,
                timeout_us: r.timeout_us,
                shape: r.shape,
                arrival_us: r.arrival_us,
                waiting,
                outputs_left: self.outputs,
                steps_left: self.n as u32,
                answered: false,
            },
        );
    }

    /// The request of step `tag` (None when its ensemble request failed).
    fn step_request(&self, tag: u64, now: u64) -> Option<(usize, Request)> {
        let a = self.alive.get(&(tag / self.n))?;
        let step = (tag % self.n) as usize;
        Some((
            self.p.steps[step].model,
            Request {
                id: a.id.clone(),
                arrival_us: now,
                sequence_id: a.sequence_id.clone(),
                start: a.start,
                end: a.end,
                batch_size: a.batch_size,
                priority: a.priority,
                timeout_us: a.timeout_us,
                shape: a.shape.clone(),
                tag,
            },
        ))
    }
}

/// Runs the ensemble requests of `trace` (sorted by `arrival_us`; an
/// earlier arrival than the previous one arrives with it) through the
/// composing models of `p`, streaming every step's records and one record
/// per ensemble request into `sink`. Deterministic. `p` must pass
/// [`Pipeline::check`] (otherwise nothing is run).
pub fn simulate_pipeline<I>(p: &Pipeline, trace: I, sink: &mut dyn PipelineSink)
where
    I: IntoIterator<Item = Request>,
{
    if p.check().is_err() {
        return;
    }
    let (dependents, waiting) = p.graph();
    // Without a step marked as output, every step is one.
    let any = p.steps.iter().any(|s| s.output);
    let output: Vec<bool> = p.steps.iter().map(|s| s.output || !any).collect();
    let mut run = Run {
        p,
        n: p.steps.len() as u64,
        dependents,
        waiting,
        outputs: output.iter().filter(|&&o| o).count() as u32,
        output,
        alive: FxMap::default(),
        answered: BinaryHeap::new(),
        release: Vec::new(),
        outcomes: Vec::new(),
    };
    let mut scheds: Vec<Scheduler> = p
        .models
        .iter()
        .map(|m| Scheduler::new(&m.settings))
        .collect();
    // Completions: (end, model, instance), earliest first.
    let mut running: BinaryHeap<Reverse<(u64, usize, usize)>> = BinaryHeap::new();
    let mut started = Vec::new();
    let mut trace = trace.into_iter().peekable();
    let mut next_ens = 0u64;
    let mut now = 0u64;
    loop {
        let mut next = running.peek().map(|Reverse((t, _, _))| *t);
        let candidates = [
            run.answered.peek().map(|Reverse((t, _))| *t),
            trace.peek().map(|r| r.arrival_us),
        ];
        for t in candidates
            .into_iter()
            .chain(scheds.iter().map(Scheduler::next_deadline))
            .flatten()
        {
            next = Some(next.map_or(t, |n| n.min(t)));
        }
        let Some(t) = next else { break };
        let t = t.max(now);
        now = t;
        // (1) completions, then the responses due now.
        while let Some(&Reverse((end, m, inst))) = running.peek() {
            if end != t {
                break;
            }
            running.pop();
            let mut hook = Hook {
                model: m,
                out: sink,
                outcomes: &mut run.outcomes,
            };
            scheds[m].complete(t, inst, &mut hook);
            run.settle(t, sink);
        }
        run.responses(t, sink);
        // (2) new ensemble requests, then every step request released now.
        while trace.peek().is_some_and(|r| r.arrival_us <= t) {
            let r = trace.next().expect("peeked");
            run.arrive(next_ens, r);
            next_ens += 1;
        }
        let mut release = std::mem::take(&mut run.release);
        release.sort_unstable();
        for &tag in &release {
            let Some((m, r)) = run.step_request(tag, t) else {
                continue;
            };
            let mut hook = Hook {
                model: m,
                out: sink,
                outcomes: &mut run.outcomes,
            };
            scheds[m].arrive(t, r, &mut hook);
            run.settle(t, sink);
        }
        release.clear();
        run.release = release;
        // (3) and (4), model by model.
        for (m, sched) in scheds.iter_mut().enumerate() {
            let mut hook = Hook {
                model: m,
                out: sink,
                outcomes: &mut run.outcomes,
            };
            sched.poll(t, &mut hook, &mut started);
            for &inst in &started {
                let b = sched.batch(inst);
                let lat = &p.models[m].latencies;
                let service = match lat.len() {
                    0 => 0,
                    k => lat[inst % k].eval(b.size),
                };
                let end = t.saturating_add(service);
                running.push(Reverse((end, m, inst)));
                sched.record(inst, end, &mut hook);
            }
            sched.clear_releases();
            run.settle(t, sink);
        }
    }
}
