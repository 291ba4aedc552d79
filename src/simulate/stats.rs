//! Statistics of a simulated run: counts, nearest-rank percentiles in
//! bounded memory, and the summary both output formats show.

use crate::batching::{BatchRecord, RequestRecord, Sink, Status};
use serde::Serialize;
use std::collections::BTreeMap;

/// Counts as records arrive; keeps the records themselves only for JSON.
pub struct Stats {
    /// Whether the records themselves are kept.
    pub keep: bool,
    /// Whether request records are kept too (with `keep`).
    keep_requests: bool,
    /// Every request record, when kept, in the order they came.
    pub requests: Vec<RequestRecord>,
    /// Every batch record, when kept, in the order they came.
    pub batches: Vec<BatchRecord>,
    total: u64,
    ok: u64,
    rejected: u64,
    timed_out: u64,
    latency: Distribution,
    queue: Distribution,
    compute: Distribution,
    first_arrival: Option<u64>,
    last_end: u64,
    sizes: BTreeMap<u32, u64>,
    busy_us: Vec<u64>,
    instance_batches: Vec<u64>,
    reasons: BTreeMap<(&'static str, String), u64>,
}

/// Distinct rejection reasons listed one by one; the rest are counted
/// together (reasons name requests or sequences, so they are unbounded).
const MAX_REASONS: usize = 64;
const OTHER_REASONS: &str = "(other reasons)";

impl Stats {
    /// For a model of `instances` instances; `keep` keeps the records.
    pub fn new(instances: usize, keep: bool) -> Self {
        Stats {
            keep,
            keep_requests: true,
            requests: Vec::new(),
            batches: Vec::new(),
            total: 0,
            ok: 0,
            rejected: 0,
            timed_out: 0,
            latency: Distribution::default(),
            queue: Distribution::default(),
            compute: Distribution::default(),
            first_arrival: None,
            last_end: 0,
            sizes: BTreeMap::new(),
            busy_us: vec![0; instances],
            instance_batches: vec![0; instances],
            reasons: BTreeMap::new(),
        }
    }
}

impl Stats {
    /// As [`Stats::new`], keeping the batch records only (a composing
    /// model of an ensemble: the requests listed are the ensemble's).
    pub fn batches_only(instances: usize, keep: bool) -> Self {
        Stats {
            keep_requests: false,
            ..Stats::new(instances, keep)
        }
    }
}

impl Sink for Stats {
    fn request(&mut self, r: RequestRecord) {
        self.total += 1;
        self.first_arrival = Some(
            self.first_arrival
                .map_or(r.arrival_us, |a| a.min(r.arrival_us)),
        );
        if let Some(e) = r.end_us {
            self.last_end = self.last_end.max(e);
        }
        let label = match r.status {
            Status::Ok => {
                self.ok += 1;
                // An ensemble request has an end but no start of its own.
                if let Some(e) = r.end_us {
                    self.latency.push(e.saturating_sub(r.arrival_us));
                    if let Some(s) = r.start_us {
                        self.queue.push(s.saturating_sub(r.arrival_us));
                        self.compute.push(e.saturating_sub(s));
                    }
                }
                None
            }
            Status::Rejected => {
                self.rejected += 1;
                Some("rejected")
            }
            Status::TimedOut => {
                self.timed_out += 1;
                Some("timed_out")
            }
        };
        if let Some(label) = label {
            let mut key = (label, r.reason.clone().unwrap_or_default());
            if !self.reasons.contains_key(&key) && self.reasons.len() >= MAX_REASONS {
                key.1 = OTHER_REASONS.to_string();
            }
            *self.reasons.entry(key).or_default() += 1;
        }
        if self.keep && self.keep_requests {
            self.requests.push(r);
        }
    }

    fn batch(&mut self, b: BatchRecord) {
        self.last_end = self.last_end.max(b.end_us);
        *self.sizes.entry(b.size).or_default() += 1;
        if b.instance >= self.busy_us.len() {
            self.busy_us.resize(b.instance + 1, 0);
            self.instance_batches.resize(b.instance + 1, 0);
        }
        self.busy_us[b.instance] += b.end_us.saturating_sub(b.start_us);
        self.instance_batches[b.instance] += 1;
        if self.keep {
            self.batches.push(b);
        }
    }
}

/// Counts of observed values for nearest-rank percentiles in bounded
/// memory: exact while there are at most [`EXACT_VALUES`] distinct values,
/// then in buckets of relative width 2^-11 (below 4096 still exact), each
/// reported at its middle.
#[derive(Debug, Default, Clone)]
pub struct Distribution {
    counts: BTreeMap<u64, u64>,
    n: u64,
    coarse: bool,
}

const EXACT_VALUES: usize = 1 << 16;
const BUCKET_BITS: u32 = 11;

impl Distribution {
    fn bucket(v: u64) -> u64 {
        if v < 1 << (BUCKET_BITS + 1) {
            return v;
        }
        // v >> shift keeps the top BUCKET_BITS + 1 bits (2^11 ≤ m < 2^12).
        let shift = 63 - v.leading_zeros() - BUCKET_BITS;
        (u64::from(shift) << (BUCKET_BITS + 1)) | (v >> shift)
    }

    fn bucket_value(key: u64) -> u64 {
        let shift = (key >> (BUCKET_BITS + 1)) as u32;
        if shift == 0 {
            return key;
        }
        let mantissa = key & ((1 << (BUCKET_BITS + 1)) - 1);
        (mantissa << shift) + (1 << (shift - 1))
    }

    pub fn push(&mut self, v: u64) {
        self.n += 1;
        let key = if self.coarse { Self::bucket(v) } else { v };
        *self.counts.entry(key).or_default() += 1;
        if !self.coarse && self.counts.len() > EXACT_VALUES {
            self.coarse = true;
            let exact = std::mem::take(&mut self.counts);
            for (v, c) in exact {
                *self.counts.entry(Self::bucket(v)).or_default() += c;
            }
        }
    }

    /// Nearest-rank percentile `p` (0 < p ≤ 100).
    pub fn percentile(&self, p: f64) -> Option<u64> {
        if self.n == 0 {
            return None;
        }
        let rank = ((p / 100.0) * self.n as f64).ceil() as u64;
        let rank = rank.clamp(1, self.n);
        let mut seen = 0u64;
        for (&k, &c) in &self.counts {
            seen += c;
            if seen >= rank {
                return Some(if self.coarse {
                    Self::bucket_value(k)
                } else {
                    k
                });
            }
        }
        None
    }

    pub fn percentiles(&self) -> Percentiles {
        Percentiles {
            p50: self.percentile(50.0),
            p90: self.percentile(90.0),
            p95: self.percentile(95.0),
            p99: self.percentile(99.0),
        }
    }
}

#[derive(Serialize, Clone, Copy)]
pub struct Percentiles {
    pub p50: Option<u64>,
    pub p90: Option<u64>,
    pub p95: Option<u64>,
    pub p99: Option<u64>,
}

#[derive(Serialize)]
pub struct SizeCount {
    pub size: u32,
    pub count: u64,
}

#[derive(Serialize)]
pub struct InstanceUse {
    /// Index in the model's instance list (`Settings::instance_list`).
    pub instance: usize,
    /// Triton's instance name (`<group>_<k>`).
    pub name: String,
    /// `cpu`, `gpu:N` or `model` (`KIND_MODEL`).
    pub device: String,
    /// Created but never given work.
    pub passive: bool,
    pub batches: u64,
    pub busy_us: u64,
    pub utilization: f64,
}

#[derive(Serialize)]
pub struct ReasonCount {
    pub status: &'static str,
    pub reason: String,
    pub count: u64,
}

#[derive(Serialize)]
pub struct Summary {
    pub requests: u64,
    pub ok: u64,
    pub rejected: u64,
    pub timed_out: u64,
    pub throughput_per_s: f64,
    pub latency_us: Percentiles,
    pub queue_us: Percentiles,
    pub compute_us: Percentiles,
    /// Present (true) when a distribution had so many distinct values that
    /// its percentiles are rounded (to within 0.05%).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub approximate_percentiles: bool,
    /// From the first arrival to the last response.
    pub duration_us: u64,
    pub batches: u64,
    /// Mean executed batch size (0 without executions).
    pub mean_batch_size: f64,
    pub batch_sizes: Vec<SizeCount>,
    pub instances: Vec<InstanceUse>,
    pub reasons: Vec<ReasonCount>,
}

impl Stats {
    pub fn summary(&mut self) -> Summary {
        let duration_us = self
            .first_arrival
            .map_or(0, |a| self.last_end.saturating_sub(a));
        let secs = duration_us as f64 / 1e6;
        let throughput_per_s = if duration_us > 0 {
            self.ok as f64 / secs
        } else {
            0.0
        };
        let batches: u64 = self.sizes.values().sum();
        let elements: u64 = self.sizes.iter().map(|(&s, &c)| u64::from(s) * c).sum();
        Summary {
            requests: self.total,
            ok: self.ok,
            rejected: self.rejected,
            timed_out: self.timed_out,
            throughput_per_s,
            latency_us: self.latency.percentiles(),
            queue_us: self.queue.percentiles(),
            compute_us: self.compute.percentiles(),
            approximate_percentiles: self.latency.coarse
                || self.queue.coarse
                || self.compute.coarse,
            duration_us,
            batches,
            mean_batch_size: if batches > 0 {
                elements as f64 / batches as f64
            } else {
                0.0
            },
            batch_sizes: self
                .sizes
                .iter()
                .map(|(&size, &count)| SizeCount { size, count })
                .collect(),
            instances: self
                .busy_us
                .iter()
                .zip(&self.instance_batches)
                .enumerate()
                .map(|(instance, (&busy_us, &batches))| InstanceUse {
                    instance,
                    name: String::new(),
                    device: String::new(),
                    passive: false,
                    batches,
                    busy_us,
                    utilization: if duration_us > 0 {
                        busy_us as f64 / duration_us as f64
                    } else {
                        0.0
                    },
                })
                .collect(),
            reasons: self
                .reasons
                .iter()
                .map(|((status, reason), &count)| ReasonCount {
                    status,
                    reason: reason.clone(),
                    count,
                })
                .collect(),
        }
    }
}

/// Turns the per-scheduler-instance use of `summary` into one entry per
/// instance Triton creates (`settings.instance_list`), passive ones (which
/// never get work) included, with their names and devices.
pub fn place_instances(summary: &mut Summary, settings: &crate::batching::Settings) {
    if settings.instance_list.is_empty() {
        return;
    }
    let mut used: Vec<Option<InstanceUse>> = std::mem::take(&mut summary.instances)
        .into_iter()
        .map(Some)
        .collect();
    summary.instances = settings
        .instance_list
        .iter()
        .enumerate()
        .map(|(i, inst)| {
            let from = settings
                .active
                .iter()
                .position(|&a| a == i)
                .and_then(|k| used.get_mut(k).and_then(Option::take));
            let (batches, busy_us, utilization) =
                from.map_or((0, 0, 0.0), |u| (u.batches, u.busy_us, u.utilization));
            InstanceUse {
                instance: i,
                name: inst.name.clone(),
                device: inst.device.to_string(),
                passive: inst.passive,
                batches,
                busy_us,
                utilization,
            }
        })
        .collect();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_exact_until_many_distinct_values() {
        let mut d = Distribution::default();
        for v in [5, 1, 4, 2, 3] {
            d.push(v);
        }
        assert_eq!(d.percentile(50.0), Some(3));
        assert_eq!(d.percentile(99.0), Some(5));
        assert_eq!(d.percentile(1.0), Some(1));
        assert!(Distribution::default().percentile(50.0).is_none());

        // Past the limit: within 2^-11 of the exact nearest-rank value.
        let mut d = Distribution::default();
        let n = (EXACT_VALUES as u64) * 2;
        for i in 0..n {
            d.push(i * 37 + 1_000_000);
        }
        assert!(d.coarse);
        for p in [50.0, 90.0, 99.0] {
            let rank = ((p / 100.0) * n as f64).ceil() as u64;
            let exact = (rank - 1) * 37 + 1_000_000;
            let got = d.percentile(p).unwrap();
            let err = (got as f64 - exact as f64).abs() / exact as f64;
            assert!(err <= 1.0 / 2048.0, "p{p}: {got} vs {exact}");
        }
    }

    #[test]
    fn buckets_keep_order() {
        let mut last = 0;
        for v in (0..200_000u64).step_by(7).chain([u64::MAX / 3, u64::MAX]) {
            let b = Distribution::bucket(v);
            assert!(b >= last, "{v}");
            last = b;
            let back = Distribution::bucket_value(b);
            let err = (back as f64 - v as f64).abs() / (v.max(1) as f64);
            assert!(err <= 1.0 / 2048.0, "{v} -> {back}");
        }
        assert_eq!(Distribution::bucket(4095), 4095);
    }
}
