//! `tune`: the cheapest config of a model that meets a latency objective
//! at a workload, found on the virtual clock of `simulate`.
//!
//! * [`workload`]: the requests, generated or read once and kept in
//!   memory for every candidate.
//! * [`space`]: the settings searched and each candidate's config text,
//!   the model's config edited in place.
//! * [`search`]: the order of the candidates and the winner (exact: see
//!   there for what is pruned and why nothing better is missed).
//! * [`Tuner`]: evaluates one candidate: its config validated as
//!   `simulate --sweep` validates a setting, then the workload replayed
//!   through the scheduler core, stopping early once the objective is
//!   provably missed.
//! * [`tune`]: the whole search; [`report`] writes its result.
//!
//! The latency curve is a value given to [`tune`], whatever measured it;
//! a later check on a server gets [`Tuned::recommended`] and
//! [`Tuned::rejected`]. Nothing here prints.

pub mod report;
pub mod search;
pub mod space;
pub mod workload;

pub use search::{Objective, Outcome, Tried};
pub use space::{Setting, Space, SpaceOptions, Strategy};
pub use workload::Workload;

use crate::batching::{Latency, Request, RequestRecord, Settings, Sink, Status};
pub use crate::simulate::Error;
use crate::simulate::Loaded;
use serde::Serialize;
use std::cell::Cell;
use std::collections::{BTreeSet, HashMap};

/// Latency percentiles of the answered requests (µs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Latencies {
    pub p50: Option<u64>,
    pub p90: Option<u64>,
    pub p95: Option<u64>,
    pub p99: Option<u64>,
}

/// What a candidate is predicted to do on the workload.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Prediction {
    pub latency_us: Latencies,
    /// The objective's percentile over every request, an unanswered
    /// request counting as infinitely late (`None` when it falls on one).
    pub objective_us: Option<u64>,
    pub throughput_per_s: f64,
    /// Busy time over the run's duration, averaged over the instances
    /// given work (0 to 1).
    pub utilization: f64,
    pub requests: u64,
    pub ok: u64,
    pub mean_batch_size: f64,
}

/// Nearest rank of percentile `p` among `n` values (as `simulate`'s
/// statistics count it), 1-based.
fn rank(p: f64, n: usize) -> usize {
    (((p / 100.0) * n as f64).ceil() as usize).clamp(1, n.max(1))
}

/// Collects one run, and raises `stop` once more than `budget` requests
/// were later than `bound` (or unanswered).
struct Probe<'a> {
    latencies: Vec<u64>,
    ok: u64,
    first_arrival: u64,
    last_end: u64,
    busy_us: u64,
    batches: u64,
    elements: u64,
    bound: u64,
    budget: usize,
    over: usize,
    stop: &'a Cell<bool>,
    /// Added to every answered request's latency (see [`predict_at_client`]).
    overhead_us: u64,
}

impl Sink for Probe<'_> {
    fn request(&mut self, r: RequestRecord) {
        self.first_arrival = self.first_arrival.min(r.arrival_us);
        if let Some(e) = r.end_us {
            self.last_end = self.last_end.max(e);
        }
        let latency = match (r.status, r.end_us) {
            (Status::Ok, Some(e)) => {
                self.ok += 1;
                e.saturating_sub(r.arrival_us)
                    .saturating_add(self.overhead_us)
            }
            _ => u64::MAX,
        };
        self.latencies.push(latency);
        if latency > self.bound {
            self.over += 1;
            if self.over > self.budget {
                self.stop.set(true);
            }
        }
    }
    fn batch(&mut self, b: crate::batching::BatchRecord) {
        self.last_end = self.last_end.max(b.end_us);
        self.busy_us += b.end_us.saturating_sub(b.start_us);
        self.batches += 1;
        self.elements += u64::from(b.size);
    }
    fn batch_lists(&self) -> bool {
        false
    }
}

/// Replays `requests` (arrival times multiplied by `time_scale`) through
/// the scheduler of `settings`. With `stop_above`, gives `None` as soon as
/// the `percentile` over all requests is provably above it. `overhead_us`
/// is added to every answered request's latency: what a client sees beyond
/// the server's queue and compute (the network, the protocol, the server's
/// own handling), measured with the curve (docs/spec/cli.md, `tune -u`);
/// 0 for the server's own view.
pub fn predict_at_client(
    settings: &Settings,
    latency: &Latency,
    requests: &[Request],
    time_scale: f64,
    percentile: f64,
    stop_above: Option<u64>,
    overhead_us: u64,
) -> Option<Prediction> {
    let n = requests.len();
    let stop = Cell::new(false);
    let mut probe = Probe {
        latencies: Vec::with_capacity(n),
        ok: 0,
        first_arrival: u64::MAX,
        last_end: 0,
        busy_us: 0,
        batches: 0,
        elements: 0,
        bound: stop_above.unwrap_or(u64::MAX),
        budget: n.saturating_sub(rank(percentile, n)),
        over: 0,
        stop: &stop,
        overhead_us,
    };
    let scaled = requests.iter().take_while(|_| !stop.get()).map(|r| {
        let mut r = r.clone();
        if time_scale != 1.0 {
            r.arrival_us = (r.arrival_us as f64 * time_scale).round() as u64;
        }
        r
    });
    crate::batching::simulate(settings, latency, scaled, &mut probe);
    if stop.get() && stop_above.is_some() {
        return None;
    }
    let mut all = probe.latencies;
    all.sort_unstable();
    let at = |v: &[u64], p: f64| (!v.is_empty()).then(|| v[rank(p, v.len()) - 1]);
    let answered = &all[..probe.ok as usize];
    let objective_us = at(&all, percentile).filter(|&v| v != u64::MAX);
    let duration = probe.last_end.saturating_sub(probe.first_arrival);
    let secs = duration as f64 / 1e6;
    Some(Prediction {
        latency_us: Latencies {
            p50: at(answered, 50.0),
            p90: at(answered, 90.0),
            p95: at(answered, 95.0),
            p99: at(answered, 99.0),
        },
        objective_us,
        throughput_per_s: if duration > 0 {
            probe.ok as f64 / secs
        } else {
            0.0
        },
        utilization: if duration > 0 {
            probe.busy_us as f64 / (duration as f64 * settings.instances.max(1) as f64)
        } else {
            0.0
        },
        requests: all.len() as u64,
        ok: probe.ok,
        mean_batch_size: if probe.batches > 0 {
            probe.elements as f64 / probe.batches as f64
        } else {
            0.0
        },
    })
}

/// A candidate's config after the checks.
enum Checked {
    Refused(Vec<String>),
    Accepted(Box<Settings>),
}

/// Evaluates candidates of one model on one workload with one latency
/// curve; validates each candidate once.
pub struct Tuner<'a> {
    pub base: &'a Loaded,
    pub latency: &'a Latency,
    pub requests: &'a [Request],
    pub space: &'a Space,
    pub percentile: f64,
    base_errors: BTreeSet<(String, String)>,
    checked: HashMap<(usize, u32), Checked>,
    /// Full predictions at the workload's own rate.
    predicted: HashMap<(usize, u32), Prediction>,
    /// Candidates simulated (to the end or stopped early).
    pub simulated: usize,
    /// Of those, stopped early.
    pub stopped: usize,
    /// Added to every predicted latency ([`predict_at_client`]); 0 unless
    /// set after [`Tuner::new`].
    pub overhead_us: u64,
}

impl<'a> Tuner<'a> {
    pub fn new(
        base: &'a Loaded,
        latency: &'a Latency,
        requests: &'a [Request],
        space: &'a Space,
        percentile: f64,
    ) -> Self {
        let base_errors = crate::simulate::sweep::config_errors(base, &base.parsed.src);
        Tuner {
            base,
            latency,
            requests,
            space,
            percentile,
            base_errors,
            checked: HashMap::new(),
            predicted: HashMap::new(),
            simulated: 0,
            stopped: 0,
            overhead_us: 0,
        }
    }

    /// The config text of a candidate.
    pub fn config_text(&self, setting: usize, count: u32) -> Result<String, String> {
        space::config_text(&self.base.parsed.src, &self.space.settings[setting], count)
            .map_err(|e| format!("cannot edit the config: {e}"))
    }

    fn check(&mut self, setting: usize, count: u32) -> &Checked {
        if !self.checked.contains_key(&(setting, count)) {
            let checked = match self.config_text(setting, count) {
                Err(e) => Checked::Refused(vec![e]),
                Ok(text) => {
                    match crate::simulate::sweep::check_setting(self.base, &self.base_errors, text)
                    {
                        Err(why) => Checked::Refused(why),
                        Ok(s) => match crate::simulate::check_latency(self.latency, &s, None) {
                            Err(e) => Checked::Refused(vec![e.to_string()]),
                            Ok(()) => Checked::Accepted(Box::new(s)),
                        },
                    }
                }
            };
            self.checked.insert((setting, count), checked);
        }
        &self.checked[&(setting, count)]
    }

    /// The number of instances given work, when the candidate is valid.
    pub fn instances(&mut self, setting: usize, count: u32) -> Option<usize> {
        match self.check(setting, count) {
            Checked::Accepted(s) => Some(s.instances),
            Checked::Refused(_) => None,
        }
    }

    /// A full prediction (cached at the workload's own rate).
    pub fn full(&mut self, setting: usize, count: u32, time_scale: f64) -> Outcome {
        self.evaluate_inner(setting, count, time_scale, None)
    }

    fn evaluate_inner(
        &mut self,
        setting: usize,
        count: u32,
        time_scale: f64,
        stop_above: Option<u64>,
    ) -> Outcome {
        let own_rate = time_scale == 1.0;
        if own_rate {
            if let Some(p) = self.predicted.get(&(setting, count)) {
                return Outcome::Done(p.clone());
            }
        }
        let settings = match self.check(setting, count) {
            Checked::Refused(why) => return Outcome::Refused(why.clone()),
            Checked::Accepted(s) => (**s).clone(),
        };
        self.simulated += 1;
        match predict_at_client(
            &settings,
            self.latency,
            self.requests,
            time_scale,
            self.percentile,
            stop_above,
            self.overhead_us,
        ) {
            Some(p) => {
                if own_rate {
                    self.predicted.insert((setting, count), p.clone());
                }
                Outcome::Done(p)
            }
            None => {
                self.stopped += 1;
                Outcome::Above(stop_above.unwrap_or(u64::MAX))
            }
        }
    }
}

impl search::Evaluate for Tuner<'_> {
    fn evaluate(
        &mut self,
        setting: usize,
        count: u32,
        time_scale: f64,
        stop_above: Option<u64>,
    ) -> Outcome {
        self.evaluate_inner(setting, count, time_scale, stop_above)
    }
}

/// What to optimise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Goal {
    /// The fewest instances meeting the objective at the workload.
    Instances,
    /// The highest rate one instance sustains under the objective.
    Throughput,
}

/// The options of a search.
#[derive(Debug, Clone)]
pub struct TuneOptions {
    pub space: SpaceOptions,
    pub objective: Objective,
    pub goal: Goal,
    /// Added to every predicted latency ([`predict_at_client`]).
    pub overhead_us: u64,
}

/// One candidate picked for the report.
#[derive(Debug, Clone)]
pub struct Pick {
    pub setting: Setting,
    /// The instance group's count.
    pub count: u32,
    /// Instances given work (count × GPUs for a GPU group).
    pub instances: usize,
    /// The config as edited.
    pub config_text: String,
    pub prediction: Prediction,
    pub meets: bool,
    /// The rate it was predicted at (requests per second).
    pub rate_per_s: f64,
}

/// A finished search.
pub struct Tuned {
    pub space: Space,
    pub objective: Objective,
    pub goal: Goal,
    /// The latency curve at the batch sizes the space can form.
    pub curve: Vec<(u32, u64)>,
    /// Added to every predicted latency ([`TuneOptions::overhead_us`]).
    pub overhead_us: u64,
    pub workload_source: String,
    pub workload_requests: usize,
    pub workload_rate: f64,
    /// Every candidate tried, with the rate it was tried at.
    pub tried: Vec<(Tried, f64, Option<usize>)>,
    /// The winner, or (when nothing meets the objective) the closest.
    pub recommended: Pick,
    /// The same setting with one instance fewer (or, for throughput, at a
    /// rate 10% higher): the cheaper candidate that misses the objective.
    pub rejected: Option<Pick>,
    /// Instances against latency and throughput for the recommended
    /// setting, without rows another row dominates.
    pub front: Vec<Pick>,
    /// Candidates of `tried` simulated (to the end or stopped early).
    pub simulated: usize,
    /// Of those, stopped early.
    pub stopped: usize,
    /// The original config text.
    pub current_text: String,
}

impl Tuned {
    /// The size of the full grid: every setting at every instance count
    /// (for throughput, every setting with one instance).
    pub fn grid(&self) -> usize {
        match self.goal {
            Goal::Instances => self.space.grid(),
            Goal::Throughput => self.space.settings.len(),
        }
    }
}

fn pick(tuner: &mut Tuner, objective: &Objective, s: usize, c: u32, scale: f64) -> Option<Pick> {
    let prediction = match tuner.full(s, c, scale) {
        Outcome::Done(p) => p,
        _ => return None,
    };
    Some(Pick {
        setting: tuner.space.settings[s].clone(),
        count: c,
        instances: tuner.instances(s, c)?,
        config_text: tuner.config_text(s, c).ok()?,
        meets: objective.meets(&prediction),
        prediction,
        rate_per_s: 0.0,
    })
}

/// Runs the search of `opts` for the model `base` with `latency` on
/// `workload`.
pub fn tune(
    base: &Loaded,
    latency: &Latency,
    workload: &Workload,
    opts: &TuneOptions,
) -> Result<Tuned, Error> {
    let space = space::space(base.config(), &opts.space)?;
    let objective = opts.objective;
    if !(objective.percentile > 0.0 && objective.percentile <= 100.0) {
        return Err(Error::Usage(
            "--slo-percentile must be above 0 and at most 100".into(),
        ));
    }
    let largest = space
        .settings
        .iter()
        .filter_map(|s| s.max_batch_size)
        .max()
        .unwrap_or(1);
    let mut sizes: Vec<u32> = (0..32)
        .map(|k| 1u32 << k)
        .take_while(|&b| b < largest)
        .collect();
    sizes.push(largest);
    let curve: Vec<(u32, u64)> = sizes.iter().map(|&b| (b, latency.eval(b))).collect();
    let n = space.settings.len();
    let mut tuner = Tuner::new(
        base,
        latency,
        &workload.requests,
        &space,
        objective.percentile,
    );
    tuner.overhead_us = opts.overhead_us;
    let base_rate = workload.rate_per_s;
    let mut tried = Vec::new();
    let (recommended, rejected, front) = match opts.goal {
        Goal::Instances => {
            let found = search::fewest_instances(&mut tuner, n, space.max_instances, objective);
            let chosen = found
                .best
                .map(|i| (found.tried[i].setting, found.tried[i].count));
            tried.extend(found.tried.into_iter().map(|t| (t, base_rate)));
            let (s, c) = match chosen {
                Some(sc) => sc,
                None => {
                    // Nothing meets the objective: the closest at the most
                    // instances.
                    let c = space.max_instances;
                    let mut best: Option<((u64, u64, u64), usize)> = None;
                    for s in 0..n {
                        let out = tuner.full(s, c, 1.0);
                        if let Outcome::Done(p) = &out {
                            let key = search::closeness(p);
                            if best.is_none_or(|(k, _)| key < k) {
                                best = Some((key, s));
                            }
                        }
                        tried.push((
                            Tried {
                                setting: s,
                                count: c,
                                outcome: out,
                            },
                            base_rate,
                        ));
                    }
                    let Some((_, s)) = best else {
                        return Err(refused_everywhere(&tried));
                    };
                    // the closest answers the most requests: none means
                    // the workload is not one this model can serve
                    if let Outcome::Done(p) = &tuner.full(s, c, 1.0) {
                        if p.ok == 0 {
                            return Err(Error::Input(format!(
                                "no request of the workload was answered under any candidate \
                                 (all {} rejected or timed out, also with {c} instances): \
                                 check that the workload fits the model (sequence ids and \
                                 start/end flags for a sequence model)",
                                p.requests
                            )));
                        }
                    }
                    (s, c)
                }
            };
            let mut rec = pick(&mut tuner, &objective, s, c, 1.0).ok_or_else(|| {
                Error::Input("the recommended candidate cannot be simulated".into())
            })?;
            rec.rate_per_s = base_rate;
            let mut front: Vec<Pick> = Vec::new();
            let top = space.max_instances.min(c.saturating_add(2));
            for k in 1..=top {
                if let Some(mut p) = pick(&mut tuner, &objective, s, k, 1.0) {
                    p.rate_per_s = base_rate;
                    let key = |p: &Pick| search::closeness(&p.prediction);
                    if front.iter().all(|f| key(&p) < key(f)) {
                        front.push(p);
                    }
                }
            }
            let rejected = if rec.meets && c > 1 {
                pick(&mut tuner, &objective, s, c - 1, 1.0).map(|mut p| {
                    p.rate_per_s = base_rate;
                    p
                })
            } else {
                None
            };
            (rec, rejected, front)
        }
        Goal::Throughput => {
            if base_rate <= 0.0 {
                return Err(Error::Usage(
                    "--objective throughput: the workload needs arrivals spread over time (at least two distinct arrival times)".into(),
                ));
            }
            // No instance serves more than its best batch allows; twice
            // that bounds the bisection.
            let per_instance = curve
                .iter()
                .map(|&(b, us)| f64::from(b) * 1e6 / us.max(1) as f64)
                .fold(0.0, f64::max);
            let instances = (0..n).find_map(|s| tuner.instances(s, 1)).unwrap_or(1);
            let max_rate = 2.0 * per_instance * instances as f64;
            let mut log = Vec::new();
            let best =
                search::highest_rate(&mut tuner, n, 1, base_rate, max_rate, objective, &mut log);
            tried.extend(log);
            let (s, rate) = match best {
                Some(b) => b,
                None => {
                    if tried
                        .iter()
                        .all(|(t, _)| matches!(t.outcome, Outcome::Refused(_)))
                    {
                        return Err(refused_everywhere(&tried));
                    }
                    // Nothing meets it even at the lowest rate tried.
                    let lowest = max_rate / 4096.0;
                    let s = (0..n)
                        .find(|&s| tuner.instances(s, 1).is_some())
                        .unwrap_or(0);
                    (s, lowest)
                }
            };
            let mut rec =
                pick(&mut tuner, &objective, s, 1, base_rate / rate).ok_or_else(|| {
                    Error::Input("the recommended candidate cannot be simulated".into())
                })?;
            rec.rate_per_s = rate;
            let faster = rate * 1.1;
            let rejected = if rec.meets {
                pick(&mut tuner, &objective, s, 1, base_rate / faster).map(|mut p| {
                    p.rate_per_s = faster;
                    p
                })
            } else {
                None
            };
            (rec, rejected, Vec::new())
        }
    };
    // What the search simulated (the runs for the front and the rejected
    // candidate come on top, and may repeat candidates tried).
    let simulated = tried
        .iter()
        .filter(|(t, _)| !matches!(t.outcome, Outcome::Refused(_)))
        .count();
    let stopped = tried
        .iter()
        .filter(|(t, _)| matches!(t.outcome, Outcome::Above(_)))
        .count();
    let tried = tried
        .into_iter()
        .map(|(t, rate)| {
            let inst = tuner.instances(t.setting, t.count);
            (t, rate, inst)
        })
        .collect();
    Ok(Tuned {
        objective,
        goal: opts.goal,
        curve,
        overhead_us: opts.overhead_us,
        workload_source: workload.source.clone(),
        workload_requests: workload.requests.len(),
        workload_rate: base_rate,
        tried,
        recommended,
        rejected,
        front,
        simulated,
        stopped,
        current_text: base.parsed.src.clone(),
        space,
    })
}

/// Every candidate was refused: the first reason.
fn refused_everywhere(tried: &[(Tried, f64)]) -> Error {
    let why = tried
        .iter()
        .find_map(|(t, _)| match &t.outcome {
            Outcome::Refused(w) => w.first().cloned(),
            _ => None,
        })
        .unwrap_or_default();
    Error::Input(format!(
        "validate refuses every candidate of the search, for example: {why}"
    ))
}

#[cfg(test)]
mod tests;
