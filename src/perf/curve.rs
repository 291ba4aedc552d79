//! `tune`'s latency curve, measured once on a live Triton: for each batch
//! size the config allows, a few requests of that size one after another
//! (concurrency 1, so every execution holds exactly one request and its
//! batch is the request's batch size), and the compute time of each
//! execution from the statistics extension's `batch_stats` (input +
//! infer + output, the difference of the reads before and after each
//! request; docs/spec/v2-protocol.md section 8). A batch size's time is
//! the median of its executions' (a slow outlier on a busy machine does
//! not move it), with the mean beside it. The result converts to
//! `simulate`'s `--latency` spec.
//!
//! Requests are built as `perf` builds them ([`super::inputs`]); only
//! HTTP. Other clients of the model during the measurement add their
//! executions to the counts, so measure on a server nobody else loads.

use super::client::{PerfClient, Prepared};
use super::inputs::{self, BodyOptions, InputData};
use super::load::StartError;
use super::model::{lenient_int, ModelInfo};
use super::repository::{ready, runtime, Server};
use super::stats::{batch_compute, BatchCompute};
use crate::batching::Latency;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// What to measure and how long.
#[derive(Debug, Clone)]
pub struct CurveOptions {
    pub model: String,
    /// A numeric version (`None`: the statistics of every version loaded,
    /// requests to the latest).
    pub version: Option<String>,
    /// Requests per batch size, at most (at least 1 is sent).
    pub requests: u32,
    /// Requests per batch size sent before the measurement, not measured
    /// (a model's first executions are often slower).
    pub warmup: u32,
    /// No further request of a batch size after this long.
    pub time_per_size: Duration,
    /// Batch sizes to measure; empty: [`batch_sizes_of`] the server's
    /// config.
    pub batch_sizes: Vec<u64>,
    pub input_data: InputData,
    pub seed: u64,
    /// `perf --shape NAME:DIMS` for inputs with variable dims.
    pub shapes: Vec<String>,
}

impl CurveOptions {
    /// 20 requests or 2 s per batch size after 2 unmeasured ones, random
    /// inputs, seed 0.
    pub fn new(model: impl Into<String>) -> Self {
        CurveOptions {
            model: model.into(),
            version: None,
            requests: 20,
            warmup: 2,
            time_per_size: Duration::from_secs(2),
            batch_sizes: Vec::new(),
            input_data: InputData::Random,
            seed: 0,
            shapes: Vec::new(),
        }
    }
}

/// One batch size's measured compute time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CurvePoint {
    pub batch_size: u64,
    /// Compute input + infer + output of one execution, µs: the median
    /// of the executions measured one by one (the mean when no single one
    /// could be told apart).
    pub compute_us: f64,
    /// The same, the mean over all executions of the size.
    pub mean_us: f64,
    /// Executions of this size the server counted (the samples).
    pub executions: u64,
    /// Requests sent.
    pub requests: u64,
    /// The client's round trip of one request, µs (the median; 0 when not
    /// measured): the compute plus what the client sees beyond it.
    pub request_us: f64,
}

/// The measured curve, by batch size ascending.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Curve {
    pub model: String,
    pub points: Vec<CurvePoint>,
}

/// The column names of [`Curve::rows`].
pub const TABLE_HEADER: [&str; 6] = [
    "batch",
    "compute µs",
    "mean µs",
    "µs per item",
    "executions",
    "requests",
];

impl Curve {
    /// What a client sees beyond the compute, per request (µs): the median
    /// over the batch sizes of the round trip minus the compute, at least
    /// 0 (0 without round trips).
    pub fn overhead_us(&self) -> u64 {
        let mut gaps: Vec<f64> = self
            .points
            .iter()
            .filter(|p| p.request_us > 0.0)
            .map(|p| (p.request_us - p.compute_us).max(0.0))
            .collect();
        median(&mut gaps).map_or(0, |m| m.round() as u64)
    }

    /// `simulate`'s `--latency` spec: `SIZE:MICROSECONDS` pairs, the
    /// times rounded to whole µs (what [`Latency::parse`] reads).
    pub fn latency_spec(&self) -> String {
        self.points
            .iter()
            .map(|p| format!("{}:{}", p.batch_size, p.compute_us.round() as u64))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The curve as the simulator's latency model (the same points as
    /// [`Curve::latency_spec`]).
    pub fn latency(&self) -> Latency {
        Latency::Points(
            self.points
                .iter()
                .map(|p| {
                    (
                        u32::try_from(p.batch_size).unwrap_or(u32::MAX),
                        p.compute_us.round() as u64,
                    )
                })
                .collect(),
        )
    }

    /// The table's rows (columns [`TABLE_HEADER`]); values are numbers,
    /// nothing from the server's text.
    pub fn rows(&self) -> Vec<[String; 6]> {
        self.points
            .iter()
            .map(|p| {
                [
                    p.batch_size.to_string(),
                    format!("{:.0}", p.compute_us),
                    format!("{:.0}", p.mean_us),
                    format!("{:.1}", p.compute_us / p.batch_size.max(1) as f64),
                    p.executions.to_string(),
                    p.requests.to_string(),
                ]
            })
            .collect()
    }
}

/// The batch sizes a curve measures for a model: 1, the powers of two
/// below `max_batch_size`, the preferred sizes within it, and
/// `max_batch_size`, ascending; `[1]` for a model that does not batch
/// (`max_batch_size` 0).
pub fn batch_sizes(max_batch_size: u64, preferred: &[u64]) -> Vec<u64> {
    if max_batch_size == 0 {
        return vec![1];
    }
    let mut out: Vec<u64> = std::iter::successors(Some(1u64), |p| p.checked_mul(2))
        .take_while(|p| *p <= max_batch_size)
        .chain(
            preferred
                .iter()
                .copied()
                .filter(|p| (1..=max_batch_size).contains(p)),
        )
        .chain([max_batch_size])
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// [`batch_sizes`] of a config in Triton's JSON form (the server's
/// `/config` answer or `convert`'s output): `max_batch_size` and
/// `dynamic_batching.preferred_batch_size`, integers as numbers or
/// strings.
pub fn batch_sizes_of(config: &Value) -> Vec<u64> {
    let max = lenient_int(&config["max_batch_size"]).map_or(0, |m| m.max(0) as u64);
    let preferred: Vec<u64> = config["dynamic_batching"]["preferred_batch_size"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(lenient_int)
                .filter_map(|p| u64::try_from(p).ok())
                .collect()
        })
        .unwrap_or_default();
    batch_sizes(max, &preferred)
}

/// One batch size from two statistics reads: the executions and compute
/// time per execution in µs (median and mean both the mean of the
/// interval); the error says what the server counted instead when it
/// counted no execution of that size.
pub fn point_from_stats(
    model: &str,
    batch_size: u64,
    before: &BTreeMap<u64, BatchCompute>,
    after: &BTreeMap<u64, BatchCompute>,
    requests: u64,
) -> Result<CurvePoint, String> {
    let delta = |size: u64| {
        let a = after.get(&size).copied().unwrap_or_default();
        let b = before.get(&size).copied().unwrap_or_default();
        // counters from the server: no overflow whatever they hold
        (
            a.executions.saturating_sub(b.executions),
            a.compute_ns.saturating_sub(b.compute_ns),
        )
    };
    let (executions, ns) = delta(batch_size);
    if executions < 0 || ns < 0 {
        return Err(format!(
            "the statistics of model '{model}' went backwards for batch size {batch_size} (was it reloaded during the measurement?)"
        ));
    }
    if executions == 0 {
        let others: Vec<String> = after
            .keys()
            .filter(|s| **s != batch_size && delta(**s).0 > 0)
            .map(|s| format!("{s} ({}×)", delta(*s).0))
            .collect();
        return Err(format!(
            "the server counted no execution of batch size {batch_size} for model '{model}' in its batch_stats after {requests} requests of that size{}",
            if others.is_empty() {
                " (does it report batch_stats?)".to_string()
            } else {
                format!(
                    "; it counted executions of batch size {} instead",
                    others.join(", ")
                )
            }
        ));
    }
    let mean = ns as f64 / executions as f64 / 1000.0;
    Ok(CurvePoint {
        batch_size,
        compute_us: mean,
        mean_us: mean,
        executions: executions as u64,
        requests,
        request_us: 0.0,
    })
}

/// The middle value (the mean of the two middle ones for an even count).
fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// How many times, and how long apart, the statistics are read again
/// when the server has not yet counted the last execution.
const STATS_WAITS: u32 = 20;
const STATS_WAIT: Duration = Duration::from_millis(10);

/// The statistics once they count `n` executions of `batch` more than
/// `since`, read again at most [`STATS_WAITS`] times (then as they are: the
/// point's execution count says what was counted).
async fn counted<F, Fut>(
    read: &F,
    since: &BTreeMap<u64, BatchCompute>,
    batch: u64,
    n: u64,
) -> Result<BTreeMap<u64, BatchCompute>, StartError>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<BTreeMap<u64, BatchCompute>, StartError>>,
{
    let executions = |s: &BTreeMap<u64, BatchCompute>| s.get(&batch).map_or(0, |c| c.executions);
    let mut now = read().await?;
    for _ in 0..STATS_WAITS {
        if executions(&now).saturating_sub(executions(since)) >= n as i64 {
            break;
        }
        tokio::time::sleep(STATS_WAIT).await;
        now = read().await?;
    }
    Ok(now)
}

/// The largest input tensor built for the curve's requests (as `perf`'s
/// `--max-input-bytes` default).
const MAX_INPUT_BYTES: u64 = 1 << 30;

/// Measures the curve of `opts.model` on `server` (blocking). Errors:
/// [`StartError::Usage`] for what the model or options cannot do (a
/// sequence or decoupled model, a batch size above the model's maximum,
/// variable dims without shapes), [`StartError::Unreachable`] for the
/// server (unreachable, model not ready, no config or statistics, a
/// request refused or timed out, no `batch_stats` for a size).
pub fn measure_curve(server: &Server, opts: &CurveOptions) -> Result<Curve, StartError> {
    let c = server.client()?;
    runtime()?.block_on(async {
        let pc = PerfClient::Http(c.clone());
        let at = c.config().endpoint.authority.clone();
        let model = opts.model.as_str();
        let version = opts.version.as_deref();
        let base = match version {
            Some(v) => format!("/v2/models/{model}/versions/{v}"),
            None => format!("/v2/models/{model}"),
        };
        if let Err(why) = ready(&c, model).await? {
            return Err(StartError::Unreachable(format!(
                "model '{model}' is not ready at {at}: {why}"
            )));
        }
        let meta = pc
            .metadata(model, version)
            .await
            .map_err(StartError::Unreachable)?;
        let Some(config) = pc
            .config(model, version)
            .await
            .map_err(StartError::Unreachable)?
        else {
            return Err(StartError::Unreachable(format!(
                "the server at {at} gives no config for model '{model}' (Triton's model configuration extension): the curve needs its batch sizes"
            )));
        };
        let mut info = ModelInfo::new(&meta, Some(&config), false).map_err(|e| {
            StartError::Unreachable(format!("model metadata of '{model}': {e}"))
        })?;
        if info.sequence || info.decoupled {
            return Err(StartError::Usage(format!(
                "model '{model}' is {}: its latency curve cannot be measured with independent requests",
                if info.sequence {
                    "a sequence model (its batches are formed across sequences)"
                } else {
                    "decoupled"
                }
            )));
        }
        info.apply_shapes(&opts.shapes, true)
            .map_err(StartError::Usage)?;
        let sizes = if opts.batch_sizes.is_empty() {
            batch_sizes_of(&config)
        } else {
            let mut s = opts.batch_sizes.clone();
            s.sort_unstable();
            s.dedup();
            s
        };
        for &b in &sizes {
            info.check_batch(b).map_err(StartError::Usage)?;
        }
        let stats_path = format!("{base}/stats");
        let read_stats = || async {
            let doc = pc.statistics_at(&stats_path).await.ok_or_else(|| {
                StartError::Unreachable(format!(
                    "the server at {at} gives no statistics for model '{model}' (Triton's statistics extension)"
                ))
            })?;
            batch_compute(&doc, model).ok_or_else(|| {
                StartError::Unreachable(format!(
                    "the statistics from {at} have no entry for model '{model}'"
                ))
            })
        };
        let infer_path = format!("{base}/infer");
        let mut points = Vec::new();
        for &b in &sizes {
            let body = inputs::build(
                &info,
                BodyOptions {
                    batch: b,
                    data: opts.input_data,
                    seed: opts.seed,
                    binary_inputs: true,
                    binary_outputs: true,
                    max_input_bytes: MAX_INPUT_BYTES,
                },
            )
            .map_err(StartError::Usage)?;
            let client = pc.with_infer_limit(info.default_response_limit(b, true));
            let req: Prepared = client
                .prepare(body, model, version)
                .map_err(StartError::Usage)?;
            let send = || async {
                client
                    .try_infer(&infer_path, &req, None)
                    .await
                    .map_err(|e| {
                        StartError::Unreachable(format!(
                            "a request of batch size {b} to model '{model}' at {at} failed: {e}"
                        ))
                    })
            };
            let pre = read_stats().await?;
            for _ in 0..opts.warmup {
                send().await?;
            }
            // Triton counts an execution after its answer: the warm-up's
            // must be in before the measured ones start
            let first = counted(&read_stats, &pre, b, u64::from(opts.warmup)).await?;
            let mut prev = first.clone();
            let mut samples = Vec::new();
            let mut trips = Vec::new();
            let start = Instant::now();
            let mut sent = 0u64;
            while sent < u64::from(opts.requests.max(1))
                && (sent == 0 || start.elapsed() < opts.time_per_size)
            {
                let t0 = Instant::now();
                send().await?;
                trips.push(t0.elapsed().as_secs_f64() * 1e6);
                sent += 1;
                let now = read_stats().await?;
                // the server may count an execution after its answer: an
                // interval without one is no sample, one with two gives
                // their mean
                if let Ok(p) = point_from_stats(model, b, &prev, &now, 1) {
                    samples.push(p.compute_us);
                }
                prev = now;
            }
            // the last execution counted late: wait a little for it
            let prev = counted(&read_stats, &first, b, sent).await?;
            let mut point = point_from_stats(model, b, &first, &prev, sent)
                .map_err(StartError::Unreachable)?;
            if let Some(m) = median(&mut samples) {
                point.compute_us = m;
            }
            point.request_us = median(&mut trips).unwrap_or(0.0);
            points.push(point);
        }
        Ok(Curve {
            model: model.to_string(),
            points,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn batch_sizes_are_one_powers_of_two_preferred_and_max() {
        assert_eq!(batch_sizes(0, &[4]), vec![1]);
        assert_eq!(batch_sizes(1, &[]), vec![1]);
        assert_eq!(batch_sizes(16, &[]), vec![1, 2, 4, 8, 16]);
        // 12 is no power of two: it is there as the maximum; 6 as preferred;
        // 20 is above the maximum and 0 is no size
        assert_eq!(batch_sizes(12, &[6, 20, 0, 4]), vec![1, 2, 4, 6, 8, 12]);
        // the doubling stops without overflow
        let big = batch_sizes(u64::MAX, &[]);
        assert_eq!(big.len(), 65);
        assert_eq!(big.last(), Some(&u64::MAX));
    }

    #[test]
    fn batch_sizes_from_a_json_config() {
        let cfg = json!({"max_batch_size": "24",
            "dynamic_batching": {"preferred_batch_size": [3, "12", -1, "x"]}});
        assert_eq!(batch_sizes_of(&cfg), vec![1, 2, 3, 4, 8, 12, 16, 24]);
        assert_eq!(batch_sizes_of(&json!({})), vec![1]);
        assert_eq!(batch_sizes_of(&json!({"max_batch_size": -3})), vec![1]);
    }

    fn stats(pairs: &[(u64, i64, i64)]) -> BTreeMap<u64, BatchCompute> {
        pairs
            .iter()
            .map(|&(s, executions, compute_ns)| {
                (
                    s,
                    BatchCompute {
                        executions,
                        compute_ns,
                    },
                )
            })
            .collect()
    }

    #[test]
    fn a_point_is_the_compute_delta_over_the_execution_delta() {
        let before = stats(&[(1, 10, 1_000_000), (4, 3, 0)]);
        // 20 more executions of size 4 took 60 ms: 3 ms each
        let after = stats(&[(1, 10, 1_000_000), (4, 23, 60_000_000)]);
        let p = point_from_stats("m", 4, &before, &after, 20).unwrap();
        assert_eq!(
            p,
            CurvePoint {
                batch_size: 4,
                compute_us: 3000.0,
                mean_us: 3000.0,
                executions: 20,
                requests: 20,
                request_us: 0.0,
            }
        );
        // size 1 did not run in between
        let e = point_from_stats("m", 1, &before, &after, 20).unwrap_err();
        assert!(
            e.contains("no execution of batch size 1") && e.contains("batch size 4 (20×) instead"),
            "{e}"
        );
        // the server batched nothing at all
        let e = point_from_stats("m", 8, &before, &before, 5).unwrap_err();
        assert!(e.contains("does it report batch_stats?"), "{e}");
        // counters reset by a reload
        let e = point_from_stats("m", 4, &after, &before, 5).unwrap_err();
        assert!(e.contains("went backwards"), "{e}");
        // hostile counters do not overflow
        let low = stats(&[(4, i64::MIN, i64::MIN)]);
        let high = stats(&[(4, i64::MAX, i64::MAX)]);
        let p = point_from_stats("m", 4, &low, &high, 1).unwrap();
        assert_eq!((p.executions, p.compute_us), (i64::MAX as u64, 1e-3));
        assert!(point_from_stats("m", 4, &high, &low, 1).is_err());
    }

    #[test]
    fn medians() {
        assert_eq!(median(&mut []), None);
        assert_eq!(median(&mut [3.0, 1.0, 200.0]), Some(3.0));
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 100.0]), Some(3.0));
    }

    #[test]
    fn the_curve_is_a_latency_spec_and_a_table() {
        let curve = Curve {
            model: "m".into(),
            points: vec![
                CurvePoint {
                    batch_size: 1,
                    compute_us: 2500.4,
                    mean_us: 2600.0,
                    executions: 20,
                    requests: 20,
                    request_us: 3000.4,
                },
                CurvePoint {
                    batch_size: 4,
                    compute_us: 3999.6,
                    mean_us: 4100.0,
                    executions: 19,
                    requests: 20,
                    request_us: 5099.6,
                },
            ],
        };
        assert_eq!(curve.latency_spec(), "1:2500,4:4000");
        // round trips 500 and 1100 µs above the compute: their median
        assert_eq!(curve.overhead_us(), 800);
        let parsed = Latency::parse(&curve.latency_spec()).unwrap();
        assert_eq!(parsed, curve.latency());
        // between measured sizes the simulator interpolates: 2 is a third
        // of the way from 1 to 4
        assert_eq!(parsed.eval(2), 3000);
        assert_eq!(
            curve.rows()[1],
            ["4", "4000", "4100", "999.9", "19", "20"].map(String::from)
        );
        assert_eq!(TABLE_HEADER.len(), curve.rows()[0].len());
    }
}
