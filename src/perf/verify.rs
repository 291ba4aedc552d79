//! `tune --verify`'s measurement: one open-loop level of `perf` at a
//! Poisson workload (rate, duration, seed), run by the load engine
//! ([`super::load::run`]) with `perf`'s defaults, and its latency
//! percentiles (from the scheduled send times, as every open-loop level).

use super::client::Protocol;
use super::inputs::{InputData, Strings};
use super::load::{self, PerfOptions, Progress, StartError, Window};
use super::report::LevelResult;
use super::repository::Server;
use super::schedule::{Distribution, Level};
use super::shm::SharedMemory;
use serde::Serialize;
use std::sync::Arc;
use std::time::Duration;

/// The workload of a verification.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Workload {
    /// Requests per second (Poisson arrivals).
    pub rate: f64,
    /// Requests sent within this time are measured.
    pub duration: Duration,
    /// Seed of the arrival times and of the random inputs.
    pub seed: u64,
    /// Requests before the measurement, not measured (the server's
    /// first executions of a freshly loaded model are often slower).
    pub warmup: Duration,
}

/// Latency percentiles, µs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Percentiles {
    pub p50: u64,
    pub p90: u64,
    pub p95: u64,
    pub p99: u64,
}

/// What one verification level measured.
#[derive(Debug, Clone)]
pub struct Measured {
    /// `None` when no request succeeded.
    pub latency_us: Option<Percentiles>,
    pub requests: u64,
    pub errors: u64,
    /// Successful requests per second.
    pub requests_per_s: f64,
    /// The whole level as `perf` reports it (server statistics, errors
    /// by kind, late sends, ...).
    pub level: LevelResult,
}

/// The `perf` options of one open-loop Poisson level of `workload` on
/// `model` at `server`, HTTP with binary tensors, batch size 1, random
/// inputs, and otherwise `perf`'s defaults (docs/spec/cli.md).
pub fn poisson_options(server: &Server, model: &str, workload: &Workload) -> PerfOptions {
    PerfOptions {
        model: model.to_string(),
        version: None,
        url: server.url.clone(),
        urls: vec![server.url.clone()],
        headers: server.headers.clone(),
        protocol: Protocol::Http,
        levels: vec![Level::Rate(workload.rate)],
        distribution: Distribution::Poisson,
        intervals: None,
        seed: workload.seed,
        shard: None,
        start_at: None,
        max_concurrency: 1024,
        window: Window::Time(workload.duration),
        percentile: None,
        strings: Strings::default(),
        warmup: workload.warmup,
        timeout: server.timeout,
        max_response_bytes: None,
        max_input_bytes: 1 << 30,
        input_data: InputData::Random,
        data_file: None,
        shapes: Vec::new(),
        batch: 1,
        binary_inputs: true,
        binary_outputs: true,
        tensor_formats_given: (false, false),
        batched: false,
        sequence_length: None,
        sequence_length_variation: 20.0,
        sequence_id_prefix: None,
        // fixed, so that a verification is repeatable
        sequence_ids: (1, 1 << 20),
        num_sequences: 4,
        api: super::generative::Api::Infer,
        prompts: None,
        prompt_words: None,
        max_tokens: None,
        shared_memory: SharedMemory::None,
        output_shm_size: 102_400,
        tls: server.tls.clone(),
        latency_threshold_ms: None,
        binary_search: None,
        metrics: None,
    }
}

/// Runs one open-loop Poisson level of `workload` against `model`
/// (blocking; not from inside an async runtime) and returns its
/// percentiles. The rate must be above 0 and finite, the duration above
/// 0 (usage errors otherwise).
pub fn measure_poisson(
    server: &Server,
    model: &str,
    workload: &Workload,
) -> Result<Measured, StartError> {
    if !(workload.rate.is_finite() && workload.rate > 0.0) {
        return Err(StartError::Usage(format!(
            "the workload's rate must be above 0 requests per second, not {}",
            workload.rate
        )));
    }
    if workload.duration.is_zero() {
        return Err(StartError::Usage(
            "the workload's duration must be above 0".into(),
        ));
    }
    measure(&poisson_options(server, model, workload))
}

/// Runs the one level of `opts` (as [`poisson_options`] makes them,
/// possibly changed by the caller) and returns its percentiles.
pub fn measure(opts: &PerfOptions) -> Result<Measured, StartError> {
    let report = load::run(opts, Arc::new(Progress::default()), None)?;
    let level = report.levels.into_iter().next().ok_or_else(|| {
        StartError::Unreachable(format!("no level was measured on model '{}'", opts.model))
    })?;
    Ok(Measured {
        latency_us: level.latency_us.as_ref().map(|l| Percentiles {
            p50: l.p50,
            p90: l.p90,
            p95: l.p95,
            p99: l.p99,
        }),
        requests: level.requests,
        errors: level.errors,
        requests_per_s: level.requests_per_s,
        level,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_open_loop_poisson_level_for_the_workload() {
        let w = Workload {
            rate: 150.0,
            duration: Duration::from_secs(3),
            seed: 7,
            warmup: Duration::from_millis(500),
        };
        let o = poisson_options(&Server::new("h:1"), "m", &w);
        assert_eq!(o.levels, vec![Level::Rate(150.0)]);
        assert_eq!(o.distribution, Distribution::Poisson);
        assert_eq!((o.seed, o.batch), (7, 1));
        assert_eq!(o.window, Window::Time(Duration::from_secs(3)));
        assert_eq!(o.warmup, Duration::from_millis(500));
        assert_eq!(o.urls, vec!["h:1".to_string()]);
    }

    #[test]
    fn a_workload_without_requests_is_refused() {
        let s = Server::new("127.0.0.1:1");
        for (rate, secs) in [(0.0, 1), (f64::NAN, 1), (-1.0, 1), (10.0, 0)] {
            let w = Workload {
                rate,
                duration: Duration::from_secs(secs),
                seed: 0,
                warmup: Duration::ZERO,
            };
            assert!(matches!(
                measure_poisson(&s, "m", &w),
                Err(StartError::Usage(_))
            ));
        }
    }
}
