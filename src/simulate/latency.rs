//! `--latency`: the execution time of a batch by its size.

use super::Error;
use crate::batching::{Latency, Settings};
use std::path::Path;

/// A specification (`1:2000,2:2400`, `2000+150*b`), or a file holding one
/// (one point or term per line, `#` comments allowed).
pub fn read_latency(spec: &str) -> Result<Latency, Error> {
    let path = Path::new(spec);
    if !spec.is_empty() && path.is_file() {
        let text = crate::files::read_file_to_string(path).map_err(|e| {
            Error::Input(format!(
                "{spec}: cannot read: {}",
                crate::files::io_message(&e)
            ))
        })?;
        let joined: Vec<&str> = text
            .lines()
            .map(|l| l.split('#').next().unwrap_or("").trim())
            .filter(|l| !l.is_empty())
            .collect();
        return Latency::parse(&joined.join(","))
            .map_err(|e| Error::Input(format!("{spec}: invalid latency: {e}")));
    }
    Latency::parse(spec).map_err(|e| Error::Usage(format!("--latency: {e}")))
}

/// The latency model must keep every batch time on the simulator's clock;
/// `setting` names the sweep setting checked, if any.
pub fn check_latency(
    latency: &Latency,
    settings: &Settings,
    setting: Option<&str>,
) -> Result<(), Error> {
    let largest = settings.max_batch_size.clamp(1, 4096);
    let max = crate::trace::MAX_TIME_US;
    // On the unrounded value: a result past u64 (or infinite, where the
    // terms overflow) would otherwise show as u64::MAX.
    let too_large = |b: u32| {
        let v = latency.eval_f64(b);
        (v.is_nan() || v > max as f64).then_some(v)
    };
    if let Some((b, v)) = (1..=largest).find_map(|b| too_large(b).map(|v| (b, v))) {
        let time = if v.is_finite() {
            format!("{v:.3e} µs")
        } else {
            "an infinite time (its terms overflow)".to_string()
        };
        return Err(Error::Usage(format!(
            "--latency: a batch of {b} takes {time}, more than the simulator's clock holds \
             (at most {max} µs){}",
            setting.map_or(String::new(), |s| format!(" with {s}"))
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batching::{Latency, SchedulerKind};

    fn check(spec: &str) -> Result<(), String> {
        let settings = Settings {
            model: "m".into(),
            max_batch_size: 8,
            instances: 1,
            instance_list: Vec::new(),
            active: Vec::new(),
            enforce_shapes: false,
            kind: SchedulerKind::Default,
        };
        check_latency(&Latency::parse(spec).unwrap(), &settings, None).map_err(|e| e.to_string())
    }

    /// Regression (docs/hostile.md): `1e308+1e308*b` was shown as 18446744073709551615 µs, the
    /// saturated value, rather than as what it is.
    #[test]
    fn latencies_past_the_clock_are_refused_naming_the_flag_and_the_limit() {
        assert_eq!(check("2000+150*b"), Ok(()));
        for (spec, time) in [
            ("1e308+1e308*b", "an infinite time (its terms overflow)"),
            ("1e300+0*b", "1.000e300 µs"),
            ("0+1e18*b", "2.000e18 µs"),
            ("1:0,2:18446744073709551615", "1.845e19 µs"),
        ] {
            let e = check(spec).unwrap_err();
            assert!(
                e.starts_with("--latency: a batch of ")
                    && e.contains(time)
                    && e.contains(&format!("at most {} µs", crate::trace::MAX_TIME_US))
                    && !e.contains(&u64::MAX.to_string()),
                "{spec}: {e}"
            );
        }
    }
}
