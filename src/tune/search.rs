//! The search over a [`Space`](super::space::Space): which candidates are
//! simulated, in what order, and which one wins.
//!
//! Objective (`instances`): the fewest instances whose objective
//! percentile (over every request, a request that was not answered
//! counting as too late) is at most the SLO; among those, the lowest
//! value of that percentile; then the first setting in the space's order.
//!
//! Nothing here assumes that latency is monotone in the instance count or
//! the queue delay (with batching it need not be: more instances form
//! smaller batches). The search is exact by construction:
//! - counts are tried from 1 up, every setting at each count, and the
//!   search stops at the first count where one meets the objective, so no
//!   count above the answer is simulated;
//! - a simulation stops as soon as more requests have exceeded the bound
//!   than the percentile allows (the bound is the SLO, or the best value
//!   found at that count): its percentile is then provably above the
//!   bound, so it neither meets the objective nor wins the tie-break.
//!
//! [`exhaustive`] simulates the whole grid to the end; the property test
//! checks that both agree.

use super::Prediction;

/// What evaluating one candidate gave.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// `validate` refuses the candidate's config (its errors).
    Refused(Vec<String>),
    /// Stopped early: its objective percentile is above this bound.
    Above(u64),
    /// Simulated to the end.
    Done(Prediction),
}

/// One candidate tried.
#[derive(Debug, Clone)]
pub struct Tried {
    /// Index into the space's settings.
    pub setting: usize,
    /// Instance count of the group (per GPU for a GPU group).
    pub count: u32,
    pub outcome: Outcome,
}

/// Evaluates candidates (the simulator in [`super::Tuner`]; a model of it
/// in tests).
pub trait Evaluate {
    /// Evaluates `setting` with `count` instances per group on the
    /// workload with its arrival times multiplied by `time_scale`; may stop
    /// early once the objective percentile is provably above `stop_above`.
    fn evaluate(
        &mut self,
        setting: usize,
        count: u32,
        time_scale: f64,
        stop_above: Option<u64>,
    ) -> Outcome;
}

/// The objective: a percentile of the latency at most an SLO.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Objective {
    /// 0 < percentile ≤ 100.
    pub percentile: f64,
    pub slo_us: u64,
}

impl Objective {
    pub fn meets(&self, p: &Prediction) -> bool {
        p.objective_us.is_some_and(|v| v <= self.slo_us)
    }
}

/// The result of a search for the fewest instances.
#[derive(Debug, Clone)]
pub struct Found {
    /// Every candidate tried, in order.
    pub tried: Vec<Tried>,
    /// Index in `tried` of the winner (it meets the objective).
    pub best: Option<usize>,
}

/// The pruned search (module documentation).
pub fn fewest_instances(
    eval: &mut dyn Evaluate,
    settings: usize,
    max_count: u32,
    objective: Objective,
) -> Found {
    let mut tried = Vec::new();
    for count in 1..=max_count {
        let mut best: Option<(u64, usize)> = None;
        for setting in 0..settings {
            let bound = best.map_or(objective.slo_us, |(v, _)| v.min(objective.slo_us));
            let outcome = eval.evaluate(setting, count, 1.0, Some(bound));
            if let Outcome::Done(p) = &outcome {
                if objective.meets(p) {
                    let v = p.objective_us.unwrap_or(u64::MAX);
                    if best.is_none_or(|(b, _)| v < b) {
                        best = Some((v, tried.len()));
                    }
                }
            }
            tried.push(Tried {
                setting,
                count,
                outcome,
            });
        }
        if let Some((_, i)) = best {
            return Found {
                tried,
                best: Some(i),
            };
        }
    }
    Found { tried, best: None }
}

/// Every candidate of the grid simulated to the end; the same winner rule.
pub fn exhaustive(
    eval: &mut dyn Evaluate,
    settings: usize,
    max_count: u32,
    objective: Objective,
) -> Found {
    let mut tried = Vec::new();
    let mut best: Option<(u32, u64, usize)> = None;
    for count in 1..=max_count {
        for setting in 0..settings {
            let outcome = eval.evaluate(setting, count, 1.0, None);
            if let Outcome::Done(p) = &outcome {
                if objective.meets(p) {
                    let key = (count, p.objective_us.unwrap_or(u64::MAX));
                    if best.is_none_or(|(c, v, _)| key < (c, v)) {
                        best = Some((key.0, key.1, tried.len()));
                    }
                }
            }
            tried.push(Tried {
                setting,
                count,
                outcome,
            });
        }
    }
    Found {
        tried,
        best: best.map(|(_, _, i)| i),
    }
}

/// How good a prediction is when nothing meets the objective: the
/// objective percentile (unanswered requests last), then fewer failed
/// requests, then the p99 of the answered ones.
pub fn closeness(p: &Prediction) -> (u64, u64, u64) {
    (
        p.objective_us.unwrap_or(u64::MAX),
        p.requests - p.ok,
        p.latency_us.p99.unwrap_or(u64::MAX),
    )
}

/// The highest rate (requests per second, the workload's arrival times
/// scaled) at which one of the settings meets the objective with `count`
/// instances, and that setting: per setting, first whether it meets the
/// objective just above the best rate so far (else it cannot beat it),
/// then a bisection between that rate and `max_rate`. Assumes that a
/// setting that meets the objective at a rate also meets it at lower
/// rates (the bisection's premise); every rate reported was simulated and
/// met the objective.
pub fn highest_rate(
    eval: &mut dyn Evaluate,
    settings: usize,
    count: u32,
    base_rate: f64,
    max_rate: f64,
    objective: Objective,
    tried: &mut Vec<(Tried, f64)>,
) -> Option<(usize, f64)> {
    let mut best: Option<(usize, f64)> = None;
    let mut meets = |setting: usize, rate: f64, tried: &mut Vec<(Tried, f64)>| -> bool {
        let outcome = eval.evaluate(setting, count, base_rate / rate, Some(objective.slo_us));
        let ok = matches!(&outcome, Outcome::Done(p) if objective.meets(p));
        tried.push((
            Tried {
                setting,
                count,
                outcome,
            },
            rate,
        ));
        ok
    };
    let floor = max_rate / 4096.0;
    for setting in 0..settings {
        let lo_start = best.map_or(floor, |(_, r)| r * 1.01);
        // A refused setting, or one that cannot beat the best rate so far.
        if !meets(setting, lo_start, tried) {
            continue;
        }
        let (mut lo, mut hi) = (lo_start, max_rate);
        if meets(setting, hi, tried) {
            lo = hi;
        } else {
            // To 0.5% of the rate.
            while hi / lo > 1.005 {
                let mid = (lo * hi).sqrt();
                if meets(setting, mid, tried) {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
        }
        best = Some((setting, lo));
    }
    best
}
