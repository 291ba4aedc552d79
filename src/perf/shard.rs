//! Scale-out: one load split over N workers (`--shard I/N`), and workers
//! that start together (`--start-at`). The rules are in docs/spec/cli.md,
//! "Scale-out: --shard and --start-at"; everything here is a pure
//! function of the flags, so that N workers started anywhere agree.

use super::rng::Rng;
use super::schedule::Level;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The most workers a load may be split over: a larger N is a typo, and
/// each worker needs a share of every level.
pub const MAX_SHARDS: u64 = 10_000;

/// The furthest `--start-at` may be ahead: further is a typo (milliseconds
/// given as seconds), not a plan.
pub const MAX_START_AHEAD: Duration = Duration::from_secs(24 * 3600);

/// Sequence ids per worker when `--sequence-id-range` is not given: as
/// many as one unsharded run has.
pub const DEFAULT_IDS_PER_SHARD: u64 = 1 << 20;

/// This worker's place: shard `index` of `count` (0 <= index < count),
/// as the report holds it.
pub use super::report::Shard;

impl Shard {
    /// `--shard I/N`.
    pub fn parse(text: &str) -> Result<Shard, String> {
        let bad = || {
            format!("--shard '{text}' is not I/N with 0 <= I < N <= {MAX_SHARDS} (whole numbers)")
        };
        let (i, n) = text.split_once('/').ok_or_else(bad)?;
        let num = |s: &str| -> Result<u64, String> {
            let s = s.trim();
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            s.parse().map_err(|_| bad())
        };
        let (index, count) = (num(i)?, num(n)?);
        if count == 0 || count > MAX_SHARDS || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }

    /// This worker's share of `total` whole things (concurrency, live
    /// sequences): floor(total / N), plus one for the first total mod N
    /// shards. The shares of the N shards sum to `total`.
    pub fn share(&self, total: u64) -> u64 {
        total / self.count + u64::from(self.index < total % self.count)
    }

    /// This worker's part of a level: its share of a concurrency, or the
    /// rate divided by N.
    pub fn load(&self, level: Level) -> Level {
        match level {
            Level::Concurrency(c) => Level::Concurrency(self.share(c)),
            Level::Rate(r) => Level::Rate(r / self.count as f64),
        }
    }

    /// Refuses a concurrency below N: some worker would have nothing to
    /// keep in flight, and the workers' reports would not have the same
    /// levels (every worker checks every level, so all refuse alike).
    pub fn check_levels(&self, levels: &[Level]) -> Result<(), String> {
        match levels.iter().find_map(|l| match l {
            Level::Concurrency(c) if *c < self.count => Some(*c),
            _ => None,
        }) {
            Some(c) => Err(format!(
                "--shard {}/{n}: concurrency {c} is below the {n} workers, so some would keep no request in flight; give every level a concurrency of at least {n}",
                self.index,
                n = self.count
            )),
            None => Ok(()),
        }
    }

    /// The seed of this worker's Poisson stream: SplitMix64 (`Rng`) seeded
    /// with `seed XOR ((I + 1) * 0x9E3779B97F4A7C15)`, its first output.
    /// Distinct for distinct I (the multiplier is odd and SplitMix64's
    /// output function is a bijection), the same for the same (seed, I).
    pub fn seed(&self, seed: u64) -> u64 {
        Rng::new(seed ^ (self.index + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)).next_u64()
    }

    /// This worker's part of the sequence ids `(first, how many)`: the
    /// range cut into N contiguous parts, part I (the parts are disjoint
    /// and cover the range), sized as [`Shard::share`] sizes concurrency,
    /// so that the shard with one more live sequence also has one more
    /// id. A range of fewer than N ids is refused.
    pub fn ids(&self, (first, count): (u64, u64)) -> Result<(u64, u64), String> {
        if count < self.count {
            return Err(format!(
                "--shard {}/{n}: --sequence-id-range holds {count} ids, fewer than the {n} workers (each needs ids of its own)",
                self.index,
                n = self.count
            ));
        }
        let lo = self.index * (count / self.count) + self.index.min(count % self.count);
        Ok((first + lo, self.share(count)))
    }

    /// Of `len` things taken in turn (data streams, data entries), the
    /// indexes this worker takes: those with index mod N = I.
    pub fn of(&self, len: usize) -> Vec<usize> {
        (self.index as usize..len)
            .step_by(self.count as usize)
            .collect()
    }
}

/// Refuses a worker with fewer sequence ids than the sequences it keeps
/// live at once (its largest concurrency share, or its `--num-of-sequences`
/// share at a rate): ids wrap around, so two live sequences would share a
/// correlation id. `shard` is `None` without `--shard`.
pub fn check_ids(
    shard: Option<Shard>,
    ids: u64,
    levels: &[Level],
    num_sequences: u64,
) -> Result<(), String> {
    let part = |total: u64| shard.map_or(total, |s| s.share(total));
    let live = levels
        .iter()
        .map(|l| match l {
            Level::Concurrency(c) => (part(*c), "concurrency"),
            Level::Rate(_) => (part(num_sequences), "--num-of-sequences"),
        })
        .max_by_key(|(n, _)| *n);
    match live {
        Some((n, what)) if n > ids => Err(match shard {
            Some(s) => format!(
                "--shard {}/{}: this worker has {ids} sequence ids but keeps {n} sequences live (its share of {what}), so two would share an id; give --sequence-id-range at least {n} ids per worker",
                s.index, s.count
            ),
            None => format!(
                "--sequence-id-range holds {ids} ids but {n} sequences are live at once ({what}), so two would share an id; give a range of at least {n} ids"
            ),
        }),
        _ => Ok(()),
    }
}

/// The default sequence ids of a sharded run: N x 2^20 ids from a base
/// every worker derives alike, from `--seed` and the `--start-at` instant
/// (so that two sharded runs with different start times do not collide),
/// then [`Shard::ids`] gives each worker 2^20 of them.
pub fn default_ids(shard: Shard, seed: u64, start_at: Option<SystemTime>) -> (u64, u64) {
    let at = start_at
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as u64);
    let base = 1 + Rng::new(seed ^ at ^ 0x005A_A2D5_EED0_F1D5_u64).below(1 << 40);
    (base, shard.count * DEFAULT_IDS_PER_SHARD)
}

/// `--start-at TIME`: RFC 3339 (`2026-11-29T10:00:00Z`,
/// `2026-11-29T11:00:00.250+01:00`; `t`, `z` and a space for `T` also
/// taken, a leap second `:60` is the next second) or Unix seconds
/// (`1795946400`, `1795946400.25`).
pub fn parse_start_at(text: &str) -> Result<SystemTime, String> {
    let t = text.trim();
    let bad = |why: &str| {
        format!(
            "--start-at '{text}': {why} (give RFC 3339 like 2026-11-29T10:00:00Z or Unix seconds like 1795946400.5)"
        )
    };
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        let (secs, frac) = t.split_once('.').unwrap_or((t, ""));
        if secs.is_empty() || (t.contains('.') && frac.is_empty()) {
            return Err(bad("not a number of seconds"));
        }
        let secs: u64 = secs.parse().map_err(|_| bad("too large"))?;
        let nanos = fraction_nanos(frac).ok_or_else(|| bad("not a number of seconds"))?;
        return UNIX_EPOCH
            .checked_add(Duration::new(secs, nanos))
            .ok_or_else(|| bad("too large"));
    }
    let nanos = rfc3339_nanos(t).map_err(|why| bad(&why))?;
    let d = Duration::new(
        nanos.unsigned_abs() as u64 / 1_000_000_000,
        (nanos.unsigned_abs() % 1_000_000_000) as u32,
    );
    if nanos >= 0 {
        UNIX_EPOCH.checked_add(d)
    } else {
        UNIX_EPOCH.checked_sub(d)
    }
    .ok_or_else(|| bad("out of range"))
}

/// Digits after a decimal point as nanoseconds (digits past the ninth
/// are dropped); `None` when one is not a digit.
fn fraction_nanos(frac: &str) -> Option<u32> {
    if !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut n = 0u32;
    for k in 0..9 {
        n = n * 10 + frac.as_bytes().get(k).map_or(0, |b| u32::from(b - b'0'));
    }
    Some(n)
}

/// Days from 1970-01-01 to a date of the proleptic Gregorian calendar.
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    // March-based years put the leap day last
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = i64::from((m + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// An RFC 3339 date-time as nanoseconds since the Unix epoch.
fn rfc3339_nanos(t: &str) -> Result<i128, String> {
    let b = t.as_bytes();
    let num = |range: std::ops::Range<usize>, what: &str| -> Result<u32, String> {
        let s = b.get(range).ok_or_else(|| format!("no {what}"))?;
        if !s.iter().all(u8::is_ascii_digit) {
            return Err(format!("the {what} is not a number"));
        }
        Ok(s.iter().fold(0, |n, d| n * 10 + u32::from(d - b'0')))
    };
    let sep = |i: usize, want: &[u8]| b.get(i).is_some_and(|c| want.contains(c));
    if !(sep(4, b"-") && sep(7, b"-") && sep(10, b"Tt ") && sep(13, b":") && sep(16, b":")) {
        return Err("not YYYY-MM-DDTHH:MM:SS with an offset".into());
    }
    let year = i64::from(num(0..4, "year")?);
    let month = num(5..7, "month")?;
    let day = num(8..10, "day")?;
    let (hour, minute, second) = (
        num(11..13, "hour")?,
        num(14..16, "minute")?,
        num(17..19, "second")?,
    );
    if !(1..=12).contains(&month) {
        return Err(format!("month {month} is not 1 to 12"));
    }
    if day == 0 || day > days_in_month(year, month) {
        return Err(format!("{year:04}-{month:02} has no day {day}"));
    }
    if hour > 23 || minute > 59 || second > 60 {
        return Err(format!(
            "{hour:02}:{minute:02}:{second:02} is not a time of day"
        ));
    }
    let mut rest = &t[19..];
    let mut nanos = 0u32;
    if let Some(f) = rest.strip_prefix('.') {
        let end = f.find(|c: char| !c.is_ascii_digit()).unwrap_or(f.len());
        if end == 0 {
            return Err("no digits after the decimal point".into());
        }
        nanos = fraction_nanos(&f[..end]).unwrap_or(0);
        rest = &f[end..];
    }
    let offset_s: i64 = match rest {
        "Z" | "z" => 0,
        _ => {
            let o = rest.as_bytes();
            if o.len() != 6 || !matches!(o[0], b'+' | b'-') || o[3] != b':' {
                return Err(if rest.is_empty() {
                    "no offset (Z or +HH:MM)".into()
                } else {
                    format!("'{rest}' is not an offset (Z or +HH:MM)")
                });
            }
            let digits = |s: &[u8]| -> Option<i64> {
                s.iter()
                    .all(u8::is_ascii_digit)
                    .then(|| s.iter().fold(0, |n, d| n * 10 + i64::from(d - b'0')))
            };
            let (Some(h), Some(m)) = (digits(&o[1..3]), digits(&o[4..6])) else {
                return Err(format!("'{rest}' is not an offset (Z or +HH:MM)"));
            };
            if h > 23 || m > 59 {
                return Err(format!("'{rest}' is not an offset (Z or +HH:MM)"));
            }
            let s = h * 3600 + m * 60;
            if o[0] == b'-' {
                -s
            } else {
                s
            }
        }
    };
    let secs = days_from_civil(year, month, day) * 86_400
        + i64::from(hour) * 3600
        + i64::from(minute) * 60
        + i64::from(second)
        - offset_s;
    Ok(i128::from(secs) * 1_000_000_000 + i128::from(nanos))
}

/// How `--start-at` stands against `now`: `Ok(None)` when it is ahead,
/// `Ok(Some(d))` when it passed `d` ago, an error when it is more than
/// [`MAX_START_AHEAD`] ahead.
pub fn check_start_at(at: SystemTime, now: SystemTime) -> Result<Option<Duration>, String> {
    match at.duration_since(now) {
        Ok(ahead) if ahead > MAX_START_AHEAD => Err(format!(
            "--start-at is {:.0} s ahead, more than 24 hours: a typo? (Unix seconds, not milliseconds)",
            ahead.as_secs_f64()
        )),
        Ok(_) => Ok(None),
        Err(e) => Ok(Some(e.duration())),
    }
}

/// Sleeps until `at` on the host clock, in steps of at most a second
/// (the clock is read again after each, so a clock set meanwhile is
/// followed). Returns how late `at` already was when called (zero when it
/// was ahead). Blocking, never spinning; a signal ends the process as
/// during the load.
pub fn wait_until(at: SystemTime) -> Duration {
    let mut first = true;
    loop {
        match at.duration_since(SystemTime::now()) {
            Ok(left) if !left.is_zero() => {
                std::thread::sleep(left.min(Duration::from_secs(1)));
                first = false;
            }
            Ok(_) => return Duration::ZERO,
            Err(e) if first => return e.duration(),
            Err(_) => return Duration::ZERO,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::schedule::{Distribution, Schedule};
    use std::collections::BTreeSet;

    fn shard(i: u64, n: u64) -> Shard {
        Shard { index: i, count: n }
    }

    #[test]
    fn shard_flags() {
        assert_eq!(Shard::parse("0/1").unwrap(), shard(0, 1));
        assert_eq!(Shard::parse(" 2/3").unwrap(), shard(2, 3));
        assert_eq!(Shard::parse("9999/10000").unwrap(), shard(9999, 10_000));
        for bad in [
            "",
            "1",
            "3/3",
            "4/3",
            "0/0",
            "-1/3",
            "+1/3",
            "1/+3",
            "a/3",
            "1/3/4",
            "0/10001",
            "1.0/3",
            "/3",
            "1/",
            "0/99999999999999999999",
        ] {
            let e = Shard::parse(bad).unwrap_err();
            assert!(e.contains("is not I/N"), "{bad}: {e}");
        }
    }

    #[test]
    fn closed_loop_shares_sum_to_the_concurrency() {
        for n in 1..=12u64 {
            for c in 0..=50u64 {
                let shares: Vec<u64> = (0..n).map(|i| shard(i, n).share(c)).collect();
                assert_eq!(shares.iter().sum::<u64>(), c, "{c} over {n}: {shares:?}");
                // floor(C/N), one more for the first C mod N
                for (i, s) in shares.iter().enumerate() {
                    let want = c / n + u64::from((i as u64) < c % n);
                    assert_eq!(*s, want);
                }
            }
        }
        assert_eq!(
            shard(0, 3).load(Level::Concurrency(10)),
            Level::Concurrency(4)
        );
        assert_eq!(
            shard(2, 3).load(Level::Concurrency(10)),
            Level::Concurrency(3)
        );
        assert_eq!(shard(1, 4).load(Level::Rate(100.0)), Level::Rate(25.0));
        // a concurrency below N is refused by every shard alike
        for i in 0..4 {
            let e = shard(i, 4)
                .check_levels(&[Level::Concurrency(8), Level::Concurrency(3)])
                .unwrap_err();
            assert!(e.contains("concurrency 3 is below the 4 workers"), "{e}");
            assert!(shard(i, 4)
                .check_levels(&[Level::Concurrency(4), Level::Rate(0.5)])
                .is_ok());
        }
    }

    #[test]
    fn constant_rate_shards_partition_the_schedule_exactly() {
        for (rate, n) in [(100.0, 3u64), (7.3, 4), (1000.0, 1), (0.5, 7), (333.33, 10)] {
            let full: Vec<f64> = Schedule::new(rate, Distribution::Constant, 0)
                .take(1000)
                .collect();
            let horizon = full[999];
            let mut union: Vec<(f64, u64)> = Vec::new();
            for i in 0..n {
                let s = shard(i, n);
                let mine: Vec<f64> = Schedule::new(rate, Distribution::Constant, 0)
                    .shard(s.index, s.count)
                    .take_while(|t| *t <= horizon)
                    .collect();
                // this shard's are the full schedule's of index I mod N,
                // bit for bit
                let want: Vec<f64> = full
                    .iter()
                    .copied()
                    .skip(i as usize)
                    .step_by(n as usize)
                    .collect();
                assert_eq!(mine, want, "rate {rate}, shard {i}/{n}");
                union.extend(mine.into_iter().map(|t| (t, i)));
            }
            union.sort_by(|a, b| a.0.total_cmp(&b.0));
            let times: Vec<f64> = union.iter().map(|u| u.0).collect();
            assert_eq!(times, full, "rate {rate} over {n}");
            // no arrival twice (the times strictly increase)
            assert!(times.windows(2).all(|w| w[0] < w[1]));
        }
    }

    #[test]
    fn interval_schedules_are_split_the_same_way() {
        let gaps = std::sync::Arc::new(vec![0.001, 0.003, 0.0005]);
        let full: Vec<f64> = Schedule::intervals(gaps.clone()).take(99).collect();
        let mut union = Vec::new();
        for i in 0..4 {
            let mine: Vec<f64> = Schedule::intervals(gaps.clone())
                .shard(i, 4)
                .take_while(|t| *t <= full[98])
                .collect();
            union.extend(mine);
        }
        union.sort_by(f64::total_cmp);
        assert_eq!(union, full);
    }

    #[test]
    fn poisson_shards_have_rate_r_over_n_and_differ() {
        let (rate, n, seed) = (600.0, 3u64, 42u64);
        let mut firsts = BTreeSet::new();
        for i in 0..n {
            let s = shard(i, n);
            let a: Vec<f64> = Schedule::new(rate / n as f64, Distribution::Poisson, s.seed(seed))
                .take(20_001)
                .collect();
            // 20,000 gaps of mean N/R = 5 ms: about 100 s (sd 0.7 s)
            assert!((a[20_000] - 100.0).abs() < 4.0, "{i}: {}", a[20_000]);
            // the same (seed, I) reproduces
            let b: Vec<f64> = Schedule::new(rate / n as f64, Distribution::Poisson, s.seed(seed))
                .take(20_001)
                .collect();
            assert_eq!(a, b);
            firsts.insert(a[1].to_bits());
        }
        assert_eq!(firsts.len(), n as usize, "the shards' streams differ");
        // the seeds of every shard of 10,000 differ, and from another --seed
        let seeds: BTreeSet<u64> = (0..MAX_SHARDS)
            .map(|i| shard(i, MAX_SHARDS).seed(7))
            .collect();
        assert_eq!(seeds.len(), MAX_SHARDS as usize);
        assert_ne!(shard(0, 2).seed(7), shard(0, 2).seed(8));
    }

    #[test]
    fn id_ranges_are_disjoint_and_inside_the_range() {
        for (first, count, n) in [
            (100u64, 100u64, 3u64),
            (1, 10, 10),
            (5, 1 << 62, 7),
            (1, 1_000_003, 9999),
        ] {
            let parts: Vec<(u64, u64)> = (0..n)
                .map(|i| shard(i, n).ids((first, count)).unwrap())
                .collect();
            // contiguous, in order, covering [first, first + count)
            let mut at = first;
            for (i, (f, c)) in parts.iter().enumerate() {
                assert_eq!(*f, at, "part {i}");
                assert!(*c >= count / n && *c <= count / n + 1, "part {i}: {c}");
                at += c;
            }
            assert_eq!(at, first + count);
        }
        // extras go to the first shards, as concurrency shares do: 8 ids
        // over 3 shards are 3, 3, 2
        let p: Vec<(u64, u64)> = (0..3).map(|i| shard(i, 3).ids((1, 8)).unwrap()).collect();
        assert_eq!(p, [(1, 3), (4, 3), (7, 2)]);
        for i in 0..3 {
            assert_eq!(p[i as usize].1, shard(i, 3).share(8));
        }
        let e = shard(0, 4).ids((1, 3)).unwrap_err();
        assert!(e.contains("3 ids, fewer than the 4 workers"), "{e}");
        // the default: the same base for every shard, 2^20 ids each
        let at = Some(UNIX_EPOCH + Duration::from_secs(1_800_000_000));
        let bases: BTreeSet<(u64, u64)> = (0..5).map(|i| default_ids(shard(i, 5), 3, at)).collect();
        assert_eq!(bases.len(), 1);
        let (base, count) = default_ids(shard(0, 5), 3, at);
        assert_eq!(count, 5 << 20);
        assert!((1..=1 << 40).contains(&base));
        let p: Vec<(u64, u64)> = (0..5)
            .map(|i| shard(i, 5).ids((base, count)).unwrap())
            .collect();
        assert!(p.iter().all(|(_, c)| *c == 1 << 20));
        // another --seed or start instant moves the base
        assert_ne!(default_ids(shard(0, 5), 4, at).0, base);
        assert_ne!(default_ids(shard(0, 5), 3, None).0, base);
    }

    #[test]
    fn too_few_ids_for_the_live_sequences_are_refused() {
        // --sequence-id-range 1:9 --concurrency-range 8 over 3 workers: 3, 3
        // and 2 ids for 3, 3 and 2 live sequences
        for i in 0..3 {
            let (_, ids) = shard(i, 3).ids((1, 8)).unwrap();
            check_ids(Some(shard(i, 3)), ids, &[Level::Concurrency(8)], 4).unwrap();
        }
        // concurrency 9 on 8 ids: shard 1 keeps 3 live on 3 ids (fine),
        // shard 2 keeps 3 live on its 2 ids
        let (_, ids) = shard(2, 3).ids((1, 8)).unwrap();
        let e = check_ids(Some(shard(2, 3)), ids, &[Level::Concurrency(9)], 4).unwrap_err();
        assert!(
            e.contains("--shard 2/3: this worker has 2 sequence ids but keeps 3"),
            "{e}"
        );
        // at a rate, the --num-of-sequences share counts
        let levels = [Level::Rate(10.0)];
        check_ids(Some(shard(0, 3)), 3, &levels, 9).unwrap();
        let e = check_ids(Some(shard(0, 3)), 3, &levels, 10).unwrap_err();
        assert!(e.contains("keeps 4 sequences live"), "{e}");
        // without --shard too: 3 ids for concurrency 4 would wrap
        check_ids(None, 4, &[Level::Concurrency(4)], 4).unwrap();
        let e = check_ids(None, 3, &[Level::Concurrency(2), Level::Concurrency(4)], 1).unwrap_err();
        assert!(e.contains("holds 3 ids but 4 sequences are live"), "{e}");
        let e = check_ids(None, 3, &[Level::Rate(1.0)], 5).unwrap_err();
        assert!(e.contains("(--num-of-sequences)"), "{e}");
    }

    #[test]
    fn streams_and_entries_partition() {
        for n in 1..=6u64 {
            for len in 0..20usize {
                let mut seen = vec![0; len];
                for i in 0..n {
                    for k in shard(i, n).of(len) {
                        assert_eq!(k as u64 % n, i);
                        seen[k] += 1;
                    }
                }
                assert!(seen.iter().all(|s| *s == 1), "{len} over {n}: {seen:?}");
            }
        }
        assert_eq!(shard(1, 3).of(8), [1, 4, 7]);
        assert!(shard(3, 4).of(3).is_empty());
    }

    fn unix(t: SystemTime) -> f64 {
        match t.duration_since(UNIX_EPOCH) {
            Ok(d) => d.as_secs_f64(),
            Err(e) => -e.duration().as_secs_f64(),
        }
    }

    fn nanos(text: &str) -> i128 {
        let t = parse_start_at(text).unwrap_or_else(|e| panic!("{e}"));
        match t.duration_since(UNIX_EPOCH) {
            Ok(d) => d.as_nanos() as i128,
            Err(e) => -(e.duration().as_nanos() as i128),
        }
    }

    #[test]
    fn start_at_rfc3339() {
        // `date -u -d 2026-11-29T10:00:00Z +%s` is 1795946400
        assert_eq!(nanos("2026-11-29T10:00:00Z"), 1_795_946_400_000_000_000);
        assert_eq!(nanos("1970-01-01T00:00:00Z"), 0);
        assert_eq!(nanos("1970-01-01t00:00:01z"), 1_000_000_000);
        assert_eq!(nanos("1970-01-01 00:00:01Z"), 1_000_000_000);
        // offsets: the same instant
        assert_eq!(
            nanos("2026-11-29T11:30:00+01:30"),
            nanos("2026-11-29T10:00:00Z")
        );
        assert_eq!(
            nanos("2026-11-29T05:00:00-05:00"),
            nanos("2026-11-29T10:00:00Z")
        );
        assert_eq!(
            nanos("2026-11-29T10:00:00-00:00"),
            nanos("2026-11-29T10:00:00Z")
        );
        // fractions, digits past nanoseconds dropped
        assert_eq!(nanos("1970-01-01T00:00:00.5Z"), 500_000_000);
        assert_eq!(nanos("1970-01-01T00:00:00.000000001Z"), 1);
        assert_eq!(nanos("1970-01-01T00:00:00.1234567899Z"), 123_456_789);
        // leap years: 2000 and 2024 have Feb 29, 1900 and 2100 do not
        // (2000-03-01 is day 11017 since 1970: 30 years of 365 days and 7
        // leap days, plus Jan 31 and Feb 29)
        assert_eq!(
            nanos("2000-03-01T00:00:00Z") / 1_000_000_000,
            11_017 * 86_400
        );
        assert_eq!(
            nanos("2000-03-01T00:00:00Z") - nanos("2000-02-28T00:00:00Z"),
            2 * 86_400 * 1_000_000_000
        );
        assert_eq!(
            nanos("2100-03-01T00:00:00Z") - nanos("2100-02-28T00:00:00Z"),
            86_400 * 1_000_000_000
        );
        assert!(parse_start_at("2024-02-29T00:00:00Z").is_ok());
        for bad in [
            "2023-02-29T00:00:00Z",
            "1900-02-29T00:00:00Z",
            "2026-04-31T00:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-00-01T00:00:00Z",
            "2026-01-00T00:00:00Z",
            "2026-01-01T24:00:00Z",
            "2026-01-01T00:60:00Z",
            "2026-01-01T00:00:61Z",
            "2026-01-01T00:00:00",
            "2026-01-01T00:00:00+1:00",
            "2026-01-01T00:00:00+24:00",
            "2026-01-01T00:00:00+01:60",
            "2026-01-01T00:00:00.Z",
            "2026-01-01T00:00:00ZZ",
            "2026-01-01",
            "2026-1-01T00:00:00Z",
            "20261-01-01T00:00:00Z",
            "2026-01-01T00:00:00 Z",
            "+026-01-01T00:00:00Z",
            "",
            "now",
            "1.2.3",
            "1.",
            ".5",
            "-5",
            "99999999999999999999999",
            "2026-01-01T00:00:0\u{e9}Z",
        ] {
            let e = parse_start_at(bad).unwrap_err();
            assert!(e.starts_with("--start-at '"), "{bad}: {e}");
        }
        // a leap second is the next second
        assert_eq!(nanos("2016-12-31T23:59:60Z"), nanos("2017-01-01T00:00:00Z"));
        // before 1970 is a time in the past, not an error
        assert!(unix(parse_start_at("1969-12-31T23:59:59Z").unwrap()) < 0.0);
    }

    #[test]
    fn start_at_unix_seconds() {
        assert_eq!(nanos("1795860000"), 1_795_860_000_000_000_000);
        assert_eq!(nanos("1795860000.25"), 1_795_860_000_250_000_000);
        assert_eq!(nanos(" 0.000001 "), 1_000);
        assert_eq!(nanos("12.3456789012"), 12_345_678_901);
    }

    #[test]
    fn start_at_ahead_or_past() {
        let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        assert_eq!(check_start_at(now + Duration::from_secs(5), now), Ok(None));
        assert_eq!(check_start_at(now + MAX_START_AHEAD, now), Ok(None));
        assert_eq!(
            check_start_at(now - Duration::from_millis(1500), now),
            Ok(Some(Duration::from_millis(1500)))
        );
        let e = check_start_at(now + MAX_START_AHEAD + Duration::from_secs(1), now).unwrap_err();
        assert!(e.contains("more than 24 hours"), "{e}");
        // a time already past returns at once, with how late it is
        let late = wait_until(SystemTime::now() - Duration::from_secs(3));
        assert!(late >= Duration::from_secs(3), "{late:?}");
        let at = SystemTime::now() + Duration::from_millis(30);
        assert_eq!(wait_until(at), Duration::ZERO);
        assert!(SystemTime::now() >= at);
    }
}
