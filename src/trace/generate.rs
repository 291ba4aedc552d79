//! Synthetic traces: arrivals at a fixed rate, evenly spaced or as a
//! Poisson process, optionally grouped into sequences. A small
//! splitmix64 generator seeded by the user makes the output a pure
//! function of the options.

use serde::Serialize;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, Write};

use crate::batching::{CorrId, Request};
use crate::inputs::request::MAX_TIME_US;

/// Inter-arrival times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distribution {
    /// Exactly `1/rate` apart.
    Constant,
    /// Exponentially distributed with mean `1/rate`.
    Poisson,
}

/// What to generate.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerateOptions {
    /// Requests (or, with sequences, sequence starts) per second.
    pub rate: f64,
    pub distribution: Distribution,
    /// Only arrivals before this many seconds.
    pub duration_s: Option<f64>,
    /// At most this many requests.
    pub requests: Option<u64>,
    /// Group requests into this many sequences (0 = plain requests).
    pub sequences: u64,
    /// Mean number of requests per sequence.
    pub sequence_length: u64,
    /// Sequence lengths vary uniformly by up to this many percent.
    pub sequence_length_variation: f64,
    /// Time between the steps of a sequence.
    pub think_time_us: u64,
    /// Random priority 1..=K per request (0 = no priority field).
    pub priority_levels: u32,
    /// Sequence ids as strings (`"s1"`) instead of integers.
    pub string_ids: bool,
    pub seed: u64,
}

impl GenerateOptions {
    /// Plain requests at `rate` per second, evenly spaced, nothing else set.
    pub fn new(rate: f64) -> Self {
        GenerateOptions {
            rate,
            distribution: Distribution::Constant,
            duration_s: None,
            requests: None,
            sequences: 0,
            sequence_length: 1,
            sequence_length_variation: 0.0,
            think_time_us: 1000,
            priority_levels: 0,
            string_ids: false,
            seed: 0,
        }
    }

    fn check(&self) -> Result<(), String> {
        if !(self.rate.is_finite() && self.rate > 0.0) {
            return Err(format!(
                "--rate must be a positive number, not {}",
                self.rate
            ));
        }
        if let Some(d) = self.duration_s {
            if !(d.is_finite() && d >= 0.0) {
                return Err(format!("--duration must be a non-negative number, not {d}"));
            }
        }
        if !(self.sequence_length_variation.is_finite()
            && (0.0..=100.0).contains(&self.sequence_length_variation))
        {
            return Err("--sequence-length-variation must be between 0 and 100".into());
        }
        if self.sequences > 0 && self.sequence_length == 0 {
            return Err("--sequence-length must be at least 1".into());
        }
        if self.sequences == 0 && self.duration_s.is_none() && self.requests.is_none() {
            return Err("give --duration, --requests or --sequences".into());
        }
        let latest = self.latest_arrival_us();
        if latest > MAX_TIME_US as f64 {
            let sequences = if self.sequences > 0 {
                ", --sequences, --sequence-length or --think-time-us"
            } else {
                ""
            };
            return Err(format!(
                "--rate {} puts arrivals up to {latest:.3e} µs, past the {MAX_TIME_US} µs \
                 (about 36,000 years) a trace may hold for simulate: raise --rate or lower \
                 --duration, --requests{sequences}",
                short(self.rate)
            ));
        }
        Ok(())
    }

    /// An upper bound of the arrival times written (µs), from the options
    /// alone: the last start of the arrival process (a Poisson gap is at
    /// most `ln 2^54` means, from [`Rng::unit`]'s smallest value), then the
    /// steps of the longest sequence.
    fn latest_arrival_us(&self) -> f64 {
        let mean_gap = 1e6 / self.rate;
        let gap = match self.distribution {
            Distribution::Constant => mean_gap,
            Distribution::Poisson => mean_gap * 38.0,
        };
        let starts = if self.sequences > 0 {
            Some(
                self.requests
                    .map_or(self.sequences, |r| r.min(self.sequences)),
            )
        } else {
            self.requests
        };
        let by_count = match starts {
            Some(n) if n <= 1 => Some(0.0),
            Some(n) => Some((n - 1) as f64 * gap),
            None => None,
        };
        let by_duration = self.duration_s.map(|d| d * 1e6);
        let last_start = match (by_count, by_duration) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b).unwrap_or(f64::INFINITY),
        };
        if self.sequences == 0 {
            return last_start.round();
        }
        let longest = (self.sequence_length as f64
            * (1.0 + self.sequence_length_variation / 100.0))
            .round()
            .max(1.0);
        last_start.round() + (longest - 1.0) * self.think_time_us as f64
    }
}

/// `x` as a user would write it: `1e-30`, not thirty zeros.
fn short(x: f64) -> String {
    if x != 0.0 && !(1e-4..1e16).contains(&x.abs()) {
        format!("{x:e}")
    } else {
        x.to_string()
    }
}

/// splitmix64.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1).
    fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Uniform in 1..=k.
    fn level(&mut self, k: u32) -> u32 {
        1 + (self.next_u64() % u64::from(k)) as u32
    }
}

#[derive(Serialize)]
#[serde(untagged)]
enum SeqId {
    Int(u64),
    Str(String),
}

#[derive(Serialize)]
struct Line {
    id: String,
    arrival_us: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    sequence_id: Option<SeqId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    start: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    end: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    priority: Option<u32>,
}

/// Start times of the arrival process, in µs (rounded), lazily.
struct Arrivals {
    rng_time: f64,
    k: u64,
    opts_rate: f64,
    poisson: bool,
}

impl Arrivals {
    fn next(&mut self, rng: &mut Rng) -> f64 {
        let t = if self.poisson {
            if self.k > 0 {
                self.rng_time += -rng.unit().ln() / self.opts_rate * 1e6;
            }
            self.rng_time
        } else {
            self.k as f64 * 1e6 / self.opts_rate
        };
        self.k += 1;
        t
    }
}

/// One generated request, in arrival order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// 0-based position in the trace (the id is `r{index}`).
    pub index: u64,
    pub arrival_us: u64,
    /// `(sequence number from 1, start, end)` with sequences.
    pub sequence: Option<(u64, bool, bool)>,
    /// `1..=priority_levels` when they are asked for.
    pub priority: Option<u32>,
}

/// Writes the trace as JSON Lines, sorted by arrival (ties: earlier
/// sequence first). Memory is proportional to the sequences alive at once.
pub fn generate(opts: &GenerateOptions, out: &mut dyn Write) -> Result<(), GenerateError> {
    generate_steps(opts, &mut |step| {
        let line = Line {
            id: format!("r{}", step.index),
            arrival_us: step.arrival_us,
            sequence_id: step.sequence.map(|(s, _, _)| {
                if opts.string_ids {
                    SeqId::Str(format!("s{s}"))
                } else {
                    SeqId::Int(s)
                }
            }),
            start: step.sequence.map(|(_, st, _)| st),
            end: step.sequence.map(|(_, _, en)| en),
            priority: step.priority,
        };
        let text = serde_json::to_string(&line).map_err(io::Error::other)?;
        writeln!(out, "{text}")
    })?;
    out.flush()?;
    Ok(())
}

/// The requests [`generate`] writes, as the scheduler reads them (what
/// `simulate` gets from the written trace), for callers that replay the
/// same arrivals many times. They are kept in memory, so more than `max`
/// of them is [`GenerateError::TooMany`] (found before `max + 1` are kept).
pub fn requests(opts: &GenerateOptions, max: u64) -> Result<Vec<Request>, GenerateError> {
    let mut out = Vec::new();
    let result = generate_steps(opts, &mut |step| {
        if out.len() as u64 >= max {
            return Err(io::Error::other(TOO_MANY));
        }
        let mut r = Request::new(format!("r{}", step.index), step.arrival_us);
        if let Some((s, start, end)) = step.sequence {
            r.sequence_id = Some(if opts.string_ids {
                CorrId::Str(format!("s{s}"))
            } else {
                CorrId::Int(s)
            });
            r.start = start;
            r.end = end;
        }
        r.priority = step.priority.unwrap_or(0);
        r.tag = step.index;
        out.push(r);
        Ok(())
    });
    match result {
        Err(GenerateError::Io(e)) if e.to_string() == TOO_MANY => Err(GenerateError::TooMany(max)),
        other => other.map(|()| out),
    }
}

/// The marker of [`requests`] stopping at its bound.
const TOO_MANY: &str = "more requests than the bound";

/// The arrival process: each request in arrival order to `emit`.
fn generate_steps(
    opts: &GenerateOptions,
    emit: &mut dyn FnMut(Step) -> io::Result<()>,
) -> Result<(), GenerateError> {
    opts.check().map_err(GenerateError::Options)?;
    let mut rng = Rng(opts.seed);
    let mut arrivals = Arrivals {
        rng_time: 0.0,
        k: 0,
        opts_rate: opts.rate,
        poisson: opts.distribution == Distribution::Poisson,
    };
    let limit_us = opts.duration_s.map(|d| d * 1e6);
    let mut written: u64 = 0;
    let mut emit = |written: &mut u64,
                    arrival_us: u64,
                    sequence: Option<(u64, bool, bool)>,
                    rng: &mut Rng|
     -> io::Result<()> {
        let step = Step {
            index: *written,
            arrival_us,
            sequence,
            priority: (opts.priority_levels > 0).then(|| rng.level(opts.priority_levels)),
        };
        *written += 1;
        emit(step)
    };

    if opts.sequences == 0 {
        loop {
            if opts.requests.is_some_and(|n| written >= n) {
                break;
            }
            let t = arrivals.next(&mut rng);
            if limit_us.is_some_and(|l| t >= l) {
                break;
            }
            emit(&mut written, t.round() as u64, None, &mut rng)?;
        }
        return Ok(());
    }

    // Pending steps: (arrival, sequence number, step, length).
    let mut pending: BinaryHeap<Reverse<(u64, u64, u64, u64)>> = BinaryHeap::new();
    let mut started = 0u64;
    loop {
        let next_start = if started < opts.sequences {
            let t = arrivals.next(&mut rng);
            if limit_us.is_some_and(|l| t >= l) {
                None
            } else {
                Some(t.round() as u64)
            }
        } else {
            None
        };
        // Flush every step due no later than the next sequence start.
        while let Some(&Reverse((t, s, step, len))) = pending.peek() {
            if next_start.is_some_and(|n| t > n) {
                break;
            }
            pending.pop();
            if opts.requests.is_some_and(|n| written >= n) {
                // nothing more is written: starting the remaining
                // sequences would only take time
                return Ok(());
            }
            emit(
                &mut written,
                t,
                Some((s, step == 0, step + 1 == len)),
                &mut rng,
            )?;
            if step + 1 < len {
                pending.push(Reverse((t + opts.think_time_us, s, step + 1, len)));
            }
        }
        let Some(t) = next_start else { break };
        started += 1;
        let v = opts.sequence_length_variation / 100.0;
        let len = (opts.sequence_length as f64 * (1.0 + v * (2.0 * rng.unit() - 1.0)))
            .round()
            .max(1.0) as u64;
        pending.push(Reverse((t, started, 0, len)));
    }
    Ok(())
}

/// Why generation stopped.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    #[error("{0}")]
    Options(String),
    #[error(transparent)]
    Io(#[from] io::Error),
    /// More requests than the bound of [`requests`].
    #[error("more than {0} requests")]
    TooMany(u64),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(opts: &GenerateOptions) -> Vec<serde_json::Value> {
        let mut out = Vec::new();
        generate(opts, &mut out).unwrap();
        String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn constant_rate_is_evenly_spaced() {
        let mut o = GenerateOptions::new(1000.0);
        o.requests = Some(3);
        let l = lines(&o);
        let t: Vec<u64> = l
            .iter()
            .map(|v| v["arrival_us"].as_u64().unwrap())
            .collect();
        assert_eq!(t, [0, 1000, 2000]);
        assert_eq!(l[2]["id"], "r2");
    }

    #[test]
    fn sequences_are_complete_and_sorted() {
        let mut o = GenerateOptions::new(500.0);
        o.sequences = 4;
        o.sequence_length = 3;
        o.think_time_us = 1500;
        let l = lines(&o);
        assert_eq!(l.len(), 12);
        let t: Vec<u64> = l
            .iter()
            .map(|v| v["arrival_us"].as_u64().unwrap())
            .collect();
        assert!(t.windows(2).all(|w| w[0] <= w[1]));
        for s in 1..=4u64 {
            let steps: Vec<_> = l.iter().filter(|v| v["sequence_id"] == s).collect();
            assert_eq!(steps.len(), 3);
            assert_eq!(steps[0]["start"], true);
            assert_eq!(steps[2]["end"], true);
            assert_eq!(steps[1]["start"], false);
        }
    }

    /// Regression (docs/hostile.md): `--rate 1e-30` wrote arrival times that simulate refuses.
    #[test]
    fn arrivals_past_what_simulate_reads_are_refused_naming_the_flags() {
        let mut o = GenerateOptions::new(1e-30);
        o.requests = Some(3);
        let e = generate(&o, &mut Vec::new()).unwrap_err().to_string();
        assert!(
            e.starts_with("--rate 1e-30 puts arrivals up to")
                && e.contains(&MAX_TIME_US.to_string()),
            "{e}"
        );
        // One request, or a duration that keeps them in range, is fine.
        o.requests = Some(1);
        assert_eq!(lines(&o).len(), 1);
        o.requests = None;
        o.duration_s = Some(10.0);
        assert_eq!(lines(&o).len(), 1);
        // Sequences whose steps run past the range.
        let mut o = GenerateOptions::new(1.0);
        o.sequences = 2;
        o.sequence_length = 3;
        o.think_time_us = u64::MAX;
        let e = generate(&o, &mut Vec::new()).unwrap_err().to_string();
        assert!(e.contains("--think-time-us"), "{e}");
    }

    /// A value spread over many orders of magnitude, `10^lo ..= 10^hi`.
    fn log_range(lo: f64, hi: f64) -> impl proptest::strategy::Strategy<Value = f64> {
        use proptest::prelude::*;
        (lo..=hi).prop_map(|e: f64| 10f64.powf(e))
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 400, ..proptest::prelude::ProptestConfig::default()
        })]

        /// Whatever `trace generate` writes, the reader of `simulate`
        /// accepts, however extreme the rate, duration and counts; what it
        /// cannot write within simulate's range it refuses up front.
        #[test]
        fn every_generated_trace_is_read_by_simulate(
            rate in proptest::prop_oneof![log_range(-40.0, 40.0), proptest::prelude::Just(f64::MIN_POSITIVE)],
            poisson in proptest::prelude::any::<bool>(),
            duration in proptest::option::of(proptest::prop_oneof![log_range(-9.0, 30.0), proptest::prelude::Just(0.0)]),
            requests in proptest::option::of(0u64..40),
            sequences in 0u64..4,
            sequence_length in 1u64..6,
            variation in 0.0f64..=100.0,
            think_time_us in proptest::prop_oneof![0u64..5000, proptest::prelude::Just(1u64 << 59), proptest::prelude::Just(u64::MAX)],
            priority_levels in 0u32..3,
            seed in proptest::prelude::any::<u64>(),
        ) {
            let mut o = GenerateOptions::new(rate);
            o.distribution = if poisson { Distribution::Poisson } else { Distribution::Constant };
            o.duration_s = duration;
            // Plain requests are bounded by a count, so the trace stays small.
            o.requests = requests.or((sequences == 0).then_some(20));
            o.sequences = sequences;
            o.sequence_length = sequence_length;
            o.sequence_length_variation = variation;
            o.think_time_us = think_time_us;
            o.priority_levels = priority_levels;
            o.seed = seed;
            let mut out = Vec::new();
            match generate(&o, &mut out) {
                Err(GenerateError::Options(m)) => proptest::prop_assert!(out.is_empty(), "{m}"),
                Err(e) => proptest::prop_assert!(false, "{e}"),
                Ok(()) => {
                    let mut n = 0;
                    for r in crate::trace::TraceReader::new(&out[..], "gen.jsonl") {
                        let r = r.map_err(|e| proptest::test_runner::TestCaseError::fail(e.to_string()))?;
                        proptest::prop_assert!(r.arrival_us <= MAX_TIME_US);
                        n += 1;
                    }
                    proptest::prop_assert_eq!(n, out.iter().filter(|&&b| b == b'\n').count());
                }
            }
        }
    }

    /// The requests given to a caller in memory are the ones `simulate`
    /// reads from the written trace.
    #[test]
    fn requests_in_memory_are_the_written_trace_read_back() {
        let mut o = GenerateOptions::new(800.0);
        o.distribution = Distribution::Poisson;
        o.sequences = 5;
        o.sequence_length = 3;
        o.sequence_length_variation = 50.0;
        o.priority_levels = 2;
        o.seed = 7;
        for string_ids in [false, true] {
            o.string_ids = string_ids;
            let mut out = Vec::new();
            generate(&o, &mut out).unwrap();
            let read: Vec<Request> = crate::trace::TraceReader::new(&out[..], "t")
                .enumerate()
                .map(|(i, r)| {
                    let mut r = r.unwrap();
                    r.tag = i as u64;
                    r
                })
                .collect();
            assert!(read.len() >= 5);
            assert_eq!(requests(&o, u64::MAX).unwrap(), read);
        }
    }

    #[test]
    fn requests_stop_at_their_bound() {
        let mut o = GenerateOptions::new(1e6);
        o.duration_s = Some(1e8);
        let e = requests(&o, 1000).unwrap_err();
        assert!(matches!(e, GenerateError::TooMany(1000)), "{e}");
        o.duration_s = None;
        o.requests = Some(1000);
        assert_eq!(requests(&o, 1000).unwrap().len(), 1000);
        o.requests = Some(1001);
        assert!(matches!(
            requests(&o, 1000),
            Err(GenerateError::TooMany(1000))
        ));
    }

    #[test]
    fn many_sequences_and_few_requests_end_at_the_requests() {
        // before: every one of the sequences was started (hours)
        let mut o = GenerateOptions::new(1000.0);
        o.sequences = u64::MAX;
        o.sequence_length = 2;
        o.requests = Some(10);
        let t = std::time::Instant::now();
        assert_eq!(requests(&o, 100).unwrap().len(), 10);
        assert!(t.elapsed() < std::time::Duration::from_secs(5));
    }

    #[test]
    fn bad_options_are_errors() {
        let o = GenerateOptions::new(0.0);
        assert!(generate(&o, &mut Vec::new()).is_err());
        let o = GenerateOptions::new(10.0);
        assert!(generate(&o, &mut Vec::new()).is_err());
    }
}
