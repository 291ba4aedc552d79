//! Load levels (`START:END:STEP` ranges) and open-loop send schedules.

use super::rng::Rng;

/// One load level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Level {
    /// Closed loop: this many requests outstanding.
    Concurrency(u64),
    /// Open loop: this many requests per second.
    Rate(f64),
}

/// Parses `START[:END[:STEP]]` (STEP defaults to 1; END to START).
pub fn parse_range(text: &str) -> Result<(f64, f64, f64), String> {
    let parts: Vec<&str> = text.split(':').collect();
    if parts.is_empty() || parts.len() > 3 {
        return Err(format!("range '{text}' is not START[:END[:STEP]]"));
    }
    let num = |s: &str| -> Result<f64, String> {
        s.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| format!("range '{text}': '{s}' is not a number"))
    };
    let start = num(parts[0])?;
    let end = if parts.len() > 1 {
        num(parts[1])?
    } else {
        start
    };
    let step = if parts.len() > 2 { num(parts[2])? } else { 1.0 };
    if start <= 0.0 {
        return Err(format!("range '{text}': START must be above 0"));
    }
    if end < start {
        return Err(format!("range '{text}': END must not be below START"));
    }
    if step <= 0.0 {
        return Err(format!("range '{text}': STEP must be above 0"));
    }
    Ok((start, end, step))
}

/// The most levels a range may sweep: each level is measured for seconds,
/// so more is a mistyped STEP, and the list would take unbounded memory.
pub const MAX_SWEEP_LEVELS: f64 = 10_000.0;

/// Refuses a range of more than [`MAX_SWEEP_LEVELS`] levels.
fn check_count(text: &str, start: f64, end: f64, step: f64) -> Result<(), String> {
    let n = ((end - start) / step).floor() + 1.0;
    if n > MAX_SWEEP_LEVELS {
        return Err(format!(
            "range '{text}' has {n:.0} levels, more than {MAX_SWEEP_LEVELS:.0}: give a larger STEP (with -l, --binary-search searches a range without measuring every level)"
        ));
    }
    Ok(())
}

/// The concurrency levels of `--concurrency-range`.
pub fn concurrency_levels(text: &str) -> Result<Vec<Level>, String> {
    let (start, end, step) = parse_range(text)?;
    check_count(text, start, end, step)?;
    for v in [start, end, step] {
        if v.fract() != 0.0 {
            return Err(format!("concurrency range '{text}': whole numbers only"));
        }
    }
    let mut out = Vec::new();
    let mut c = start as u64;
    while c as f64 <= end {
        out.push(Level::Concurrency(c));
        c += step as u64;
    }
    Ok(out)
}

/// The rates of `--request-rate-range`.
pub fn rate_levels(text: &str) -> Result<Vec<Level>, String> {
    let (start, end, step) = parse_range(text)?;
    check_count(text, start, end, step)?;
    let mut out = Vec::new();
    let mut i = 0u64;
    loop {
        let r = start + step * i as f64;
        // a little slack so that 0.1:0.3:0.1 includes 0.3
        if r > end + step * 1e-9 {
            break;
        }
        out.push(Level::Rate(r));
        i += 1;
    }
    Ok(out)
}

/// Gaps between open-loop sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distribution {
    Constant,
    Poisson,
}

/// Intended send times, in seconds from the start of a level.
#[derive(Debug, Clone)]
pub struct Schedule {
    rate: f64,
    dist: Distribution,
    rng: Rng,
    next: f64,
    /// `--request-intervals`: these gaps in turn instead.
    gaps: Option<std::sync::Arc<Vec<f64>>>,
    turn: usize,
    /// Constant rate: the index of the next arrival (its time is
    /// `k / rate`, so that every shard computes the same times).
    k: u64,
    /// `--shard I/N` ([`Schedule::shard`]): the arrivals of index I mod N
    /// only (1 without it).
    stride: u64,
}

impl Schedule {
    pub fn new(rate: f64, dist: Distribution, seed: u64) -> Self {
        Schedule {
            rate,
            dist,
            rng: Rng::new(seed),
            next: 0.0,
            gaps: None,
            turn: 0,
            k: 0,
            stride: 1,
        }
    }

    /// The arrivals of this schedule whose index is `index` mod `count`
    /// (`--shard`): the times are the full schedule's, bit for bit. For a
    /// deterministic schedule (constant rate, `--request-intervals`); a
    /// Poisson worker draws a stream of its own instead.
    pub fn shard(mut self, index: u64, count: u64) -> Self {
        self.stride = count.max(1);
        for _ in 0..index {
            self.advance();
        }
        self
    }

    /// Moves to the next arrival of the full schedule.
    fn advance(&mut self) {
        if let Some(g) = &self.gaps {
            self.next += g[self.turn % g.len()];
            self.turn += 1;
            return;
        }
        match self.dist {
            Distribution::Constant => {
                self.k += 1;
                self.next = self.k as f64 / self.rate;
            }
            Distribution::Poisson => self.next += self.rng.exponential(1.0 / self.rate),
        }
    }

    /// The first send at 0, then the gaps (seconds, not all 0) in turn,
    /// from the first again after the last.
    pub fn intervals(gaps: std::sync::Arc<Vec<f64>>) -> Self {
        let mut s = Schedule::new(1.0, Distribution::Constant, 0);
        s.gaps = Some(gaps);
        s
    }
}

impl Iterator for Schedule {
    type Item = f64;

    fn next(&mut self) -> Option<f64> {
        let at = self.next;
        for _ in 0..self.stride {
            self.advance();
        }
        Some(at)
    }
}

/// Reads perf_analyzer's `--request-intervals` file: one gap in
/// microseconds per line (blank lines skipped). Returns the gaps in
/// seconds.
pub fn parse_intervals(name: &str, text: &str) -> Result<Vec<f64>, String> {
    let mut gaps = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let us: f64 = line
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| {
                format!(
                    "{name}:{}: '{line}' is not an interval in microseconds",
                    i + 1
                )
            })?;
        gaps.push(us / 1e6);
    }
    if gaps.is_empty() {
        return Err(format!("{name}: no intervals"));
    }
    if gaps.iter().all(|g| *g == 0.0) {
        return Err(format!("{name}: every interval is 0"));
    }
    Ok(gaps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sweep_of_more_than_the_most_levels_is_refused() {
        let e = concurrency_levels("1:1000000000").unwrap_err();
        assert!(e.contains("1000000000 levels, more than 10000"), "{e}");
        let e = rate_levels("1:1000000:0.001").unwrap_err();
        assert!(e.contains("more than 10000"), "{e}");
        assert_eq!(concurrency_levels("1:10000").unwrap().len(), 10_000);
    }

    #[test]
    fn ranges() {
        assert_eq!(
            concurrency_levels("1:4:2").unwrap(),
            vec![Level::Concurrency(1), Level::Concurrency(3)]
        );
        assert_eq!(
            concurrency_levels("2").unwrap(),
            vec![Level::Concurrency(2)]
        );
        assert_eq!(rate_levels("0.1:0.3:0.1").unwrap().len(), 3);
        assert!(concurrency_levels("0:2").is_err());
        assert!(concurrency_levels("1.5").is_err());
        assert!(rate_levels("5:1").is_err());
        assert!(rate_levels("1:2:0").is_err());
        assert!(rate_levels("a").is_err());
    }

    #[test]
    fn schedules() {
        let c: Vec<f64> = Schedule::new(4.0, Distribution::Constant, 0)
            .take(3)
            .collect();
        assert_eq!(c, vec![0.0, 0.25, 0.5]);
        let p1: Vec<f64> = Schedule::new(100.0, Distribution::Poisson, 3)
            .take(10_001)
            .collect();
        let p2: Vec<f64> = Schedule::new(100.0, Distribution::Poisson, 3)
            .take(10_001)
            .collect();
        assert_eq!(p1, p2);
        // 10,000 gaps of mean 10 ms: about 100 s
        assert!((p1[10_000] - 100.0).abs() < 5.0, "{}", p1[10_000]);
        let p3: Vec<f64> = Schedule::new(100.0, Distribution::Poisson, 4)
            .take(3)
            .collect();
        assert_ne!(p1[..3], p3[..]);
    }

    #[test]
    fn interval_files() {
        let g = parse_intervals("f", "1000\n\n3000\n").unwrap();
        assert_eq!(g, vec![0.001, 0.003]);
        let at: Vec<f64> = Schedule::intervals(std::sync::Arc::new(g))
            .take(5)
            .collect();
        let want = [0.0, 0.001, 0.004, 0.005, 0.008];
        for (a, w) in at.iter().zip(want) {
            assert!((a - w).abs() < 1e-12, "{at:?}");
        }
        assert!(parse_intervals("f", "10\nx\n").unwrap_err().contains("f:2"));
        assert!(parse_intervals("f", "").is_err());
        assert!(parse_intervals("f", "0\n0").is_err());
        assert!(parse_intervals("f", "-5").is_err());
    }
}
