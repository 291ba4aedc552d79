//! `tritonctl tune MODEL_DIR`: the recipe around [`crate::tune`].
//!
//! The steps: the model's config (as `simulate` loads it), the latency
//! curve (`--latency` or `--profile`; a later source, a live server, gives
//! the same value), the workload, the search, the output, then `--write`.
//! A later check of the result on a server takes `recommended` and
//! `rejected` of the [`crate::tune::Tuned`] the search returns.
//!
//! Exit codes: 0 a recommendation that meets the objective; 1 no candidate
//! meets it (the closest is shown), or the config has errors (shown as
//! `validate` shows them); 2 a usage error or unreadable input.

use super::{CommandError, Context, ExitStatus};
use crate::cli::{SimulateFormat, TuneArgs, TuneObjective};
use crate::simulate::{self, Error};
use crate::trace::{Distribution, GenerateOptions};
use crate::tune::{self, Goal, Objective, SpaceOptions, TuneOptions};
use std::io::Write;

/// Requests generated for `--rate` without `--requests` or `--duration`.
const DEFAULT_REQUESTS: u64 = 10_000;

pub fn run(
    args: &TuneArgs,
    ctx: &Context,
    out: &mut dyn Write,
) -> Result<ExitStatus, CommandError> {
    let objective = objective(args)?;
    if args.verify && !(0.001..=86_400.0).contains(&args.verify_duration) {
        return Err(CommandError::Usage(format!(
            "--verify-duration must be 0.001 to 86400 seconds, not {}",
            args.verify_duration
        )));
    }
    let base = match simulate::load_config(&args.model, &args.gpus) {
        Err(Error::Invalid(report)) => {
            super::convert::show_diagnostics(&report, ctx);
            return Ok(ExitStatus::Failure);
        }
        loaded => loaded?,
    };
    let model = match base.settings_of(base.config()) {
        Ok(s) => s.model,
        // an ensemble (refused by the search): not measured first
        Err(e) if args.url.is_some() => return Err(CommandError::Usage(e)),
        Err(_) => String::new(),
    };
    let server_model = args.server_model.clone().unwrap_or_else(|| model.clone());
    let mut warn = |w: &str| crate::term::warning(ctx.global.color, w);
    // before the curve is measured on a server: a bad workload fails fast
    let workload = workload(args, &base, &mut warn)?;
    let (latency, measured) = match (&args.latency, &args.profile, &args.url) {
        (Some(spec), _, _) => (simulate::read_latency(spec)?, None),
        (None, Some(path), _) => {
            if !path.is_file() {
                return Err(CommandError::Input(format!(
                    "{}: --profile: not a file (the latency file `run --profile` writes)",
                    crate::text::display::path(path)
                )));
            }
            (simulate::read_latency(&path.to_string_lossy())?, None)
        }
        (None, None, Some(url)) => {
            let curve = live::measure_curve(url, &server_model)?;
            (live::latency(&curve), Some(curve))
        }
        (None, None, None) => {
            return Err(CommandError::Usage(
                "give --latency, --profile, or -u URL to measure the curve on a server".into(),
            ))
        }
    };
    if args.verify && measured.is_none() {
        warn("--verify with --latency or --profile: the predictions leave out what a client sees beyond the compute (measured only with the curve, from -u alone); expect the server's latencies above them");
    }
    let opts = TuneOptions {
        space: SpaceOptions {
            max_instances: args.max_instances,
            max_batch_size: args.max_batch_size,
            delays_us: args.queue_delays.clone(),
        },
        objective,
        goal: match args.objective {
            TuneObjective::Instances => Goal::Instances,
            TuneObjective::Throughput => Goal::Throughput,
        },
        // predictions are of what the client sees when the curve was
        // measured from one
        overhead_us: measured.as_ref().map_or(0, live::overhead_us),
    };
    let tuned = tune::tune(&base, &latency, &workload, &opts)?;
    let verified = match (&args.url, args.verify) {
        (Some(url), true) => Some(live::verify(
            url,
            &server_model,
            &tuned,
            args.verify_duration,
            args.seed,
            &mut warn,
        )?),
        _ => None,
    };
    let name = base.name();
    match args.format {
        SimulateFormat::Json => {
            let mut doc = tune::report::json_doc(&tuned, &model);
            if let Some(curve) = &measured {
                doc["measured_curve"] = live::curve_json(curve, args.url.as_deref());
            }
            if let Some(v) = &verified {
                doc["verify"] = live::verified_json(v);
            }
            tune::report::write_doc(out, &doc)?;
        }
        SimulateFormat::Human => {
            if let Some(curve) = &measured {
                live::write_curve(out, curve, args.url.as_deref().unwrap_or_default())?;
            }
            tune::report::write_human(out, &tuned, &model, &name)?;
            if let Some(v) = &verified {
                live::write_verified(out, v, &tuned)?;
            }
        }
    }
    out.flush()?;
    let verified_ok = verified.as_ref().is_none_or(live::recommended_meets);
    if args.write && !verified_ok {
        crate::term::note(
            ctx.global.color,
            &format!(
                "{}: left as it is: the recommendation misses the objective on the server",
                crate::text::display::path(&base.file)
            ),
        );
    } else if args.write
        && tuned.recommended.meets
        && tuned.recommended.config_text != tuned.current_text
    {
        write_config(&base, &tuned.recommended.config_text)?;
        crate::term::note(
            ctx.global.color,
            &format!("{}: written", crate::text::display::path(&base.file)),
        );
    } else if args.write && !tuned.recommended.meets {
        crate::term::note(
            ctx.global.color,
            &format!(
                "{}: left as it is: no candidate meets the objective",
                crate::text::display::path(&base.file)
            ),
        );
    }
    Ok(if tuned.recommended.meets && verified_ok {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}

fn objective(args: &TuneArgs) -> Result<Objective, CommandError> {
    let (ms, percentile) = match (args.slo_p99_ms, args.slo_ms) {
        (Some(ms), _) => (ms, 99.0),
        (None, Some(ms)) => (ms, args.slo_percentile),
        (None, None) => {
            return Err(CommandError::Usage(
                "give --slo-p99-ms MS, or --slo-ms MS with --slo-percentile P".into(),
            ))
        }
    };
    if !(ms.is_finite() && ms > 0.0 && ms * 1000.0 <= crate::trace::MAX_TIME_US as f64) {
        return Err(CommandError::Usage(format!(
            "the latency objective must be a positive number of milliseconds, not {ms}"
        )));
    }
    if !(percentile > 0.0 && percentile <= 100.0) {
        return Err(CommandError::Usage(format!(
            "--slo-percentile must be above 0 and at most 100, not {percentile}"
        )));
    }
    Ok(Objective {
        percentile,
        slo_us: (ms * 1000.0).round() as u64,
    })
}

fn workload(
    args: &TuneArgs,
    base: &simulate::Loaded,
    warn: &mut dyn FnMut(&str),
) -> Result<tune::Workload, CommandError> {
    if let Some(path) = &args.trace {
        return Ok(tune::workload::from_file(path, args.level, warn)?);
    }
    let Some(rate) = args.rate else {
        return Err(CommandError::Usage("give --rate or --trace".into()));
    };
    let sequence = matches!(
        base.config().scheduling_choice,
        Some(crate::schema::inference::model_config::SchedulingChoice::SequenceBatching(_))
    );
    let requests = match (args.requests, args.duration) {
        (None, None) => Some(DEFAULT_REQUESTS),
        (r, _) => r,
    };
    let sequences = match args.sequences {
        Some(n) => n,
        None if sequence => match requests {
            Some(n) => n.div_ceil(args.sequence_length.max(1)),
            None => u64::MAX,
        },
        None => 0,
    };
    let opts = GenerateOptions {
        rate,
        distribution: Distribution::Poisson,
        duration_s: args.duration,
        requests,
        sequences,
        sequence_length: args.sequence_length,
        sequence_length_variation: args.sequence_length_variation,
        think_time_us: args.think_time_us,
        priority_levels: 0,
        string_ids: false,
        seed: args.seed,
    };
    Ok(tune::workload::generated(&opts)?)
}

/// `--write`: the config file replaced atomically by the edited text,
/// which was parsed and validated as a candidate.
fn write_config(base: &simulate::Loaded, text: &str) -> Result<(), CommandError> {
    let replace = crate::files::Replace::Allow;
    let written = match &base.model_dir {
        Some(dir) => crate::files::write_atomic_in(&base.file, dir, text.as_bytes(), replace),
        None => crate::files::write_atomic(&base.file, text.as_bytes(), replace),
    };
    written.map_err(|e| {
        CommandError::Input(format!(
            "{}: cannot write: {}",
            crate::text::display::path(&base.file),
            crate::files::io_message(&e)
        ))
    })
}

/// The live-server steps (`-u`, `--verify`): the curve measured on the
/// server and the proof of the recommendation (docs/spec/cli.md, `tune`).
#[cfg(feature = "perf")]
mod live {
    use super::CommandError;
    use crate::batching::Latency;
    use crate::perf::curve::{self, Curve, CurveOptions};
    use crate::perf::load::StartError;
    use crate::perf::repository::{self, Server};
    use crate::perf::verify::{self, Measured};
    use crate::text::display::Untrusted;
    use crate::tune::{Pick, Tuned};
    use serde_json::{json, Value};
    use std::io::Write;
    use std::time::Duration;

    fn error(e: StartError) -> CommandError {
        match e {
            StartError::Usage(m) => CommandError::Usage(m),
            StartError::Unreachable(m) => CommandError::Input(m),
            StartError::Export(e) => CommandError::Input(e.to_string()),
        }
    }

    pub(super) fn measure_curve(url: &str, model: &str) -> Result<Curve, CommandError> {
        curve::measure_curve(&Server::new(url), &CurveOptions::new(model)).map_err(error)
    }

    pub(super) fn latency(curve: &Curve) -> Latency {
        curve.latency()
    }

    pub(super) fn overhead_us(curve: &Curve) -> u64 {
        curve.overhead_us()
    }

    pub(super) fn curve_json(curve: &Curve, url: Option<&str>) -> Value {
        json!({"url": url, "points": curve.points, "overhead_us": curve.overhead_us()})
    }

    pub(super) fn write_curve(
        out: &mut dyn Write,
        curve: &Curve,
        url: &str,
    ) -> std::io::Result<()> {
        writeln!(
            out,
            "latency curve measured on {} (model '{}', concurrency 1):",
            Untrusted(url),
            Untrusted(&curve.model)
        )?;
        for p in &curve.points {
            writeln!(
                out,
                "  batch {:>4}: compute {:>9.0} µs (mean {:.0}), round trip {:.0} µs, {} executions",
                p.batch_size, p.compute_us, p.mean_us, p.request_us, p.executions
            )?;
        }
        Ok(())
    }

    /// One config measured on the server.
    pub(super) struct Check {
        pub(super) instances: usize,
        pub(super) rate: f64,
        pub(super) measured: Measured,
        /// The objective's percentile of the measured requests (µs).
        pub(super) objective_us: Option<u64>,
        /// Within the objective, with no failed request.
        pub(super) meets: bool,
        pub(super) predicted_objective_us: Option<u64>,
        pub predicted_p99_us: Option<u64>,
    }

    pub(super) struct Verified {
        pub(super) url: String,
        pub(super) rate: f64,
        pub(super) duration_s: f64,
        pub(super) recommended: Check,
        pub(super) rejected: Option<Check>,
    }

    pub(super) fn recommended_meets(v: &Verified) -> bool {
        v.recommended.meets
    }

    /// Triton's JSON form of a candidate's config text, named `model`
    /// (the name the load request gives).
    fn config_json(text: &str, model: &str) -> Result<String, CommandError> {
        let mut doc = crate::tune::report::config_json(text);
        if doc.is_null() {
            return Err(CommandError::Input(
                "the recommended config does not parse (a bug: it was validated)".into(),
            ));
        }
        doc["name"] = json!(model);
        Ok(doc.to_string())
    }

    fn check(
        server: &Server,
        model: &str,
        tuned: &Tuned,
        pick: &Pick,
        workload: &verify::Workload,
    ) -> Result<Check, CommandError> {
        repository::load_model(server, model, Some(&config_json(&pick.config_text, model)?))
            .map_err(error)?;
        // each candidate at the rate it was predicted at: the workload's,
        // or with --objective throughput the rate found (and above it)
        let workload = verify::Workload {
            rate: pick.rate_per_s,
            ..*workload
        };
        let measured = verify::measure_poisson(server, model, &workload).map_err(error)?;
        let objective_us = measured
            .level
            .histograms
            .as_ref()
            .and_then(|h| h.latency_us.as_deref())
            .and_then(|t| crate::perf::histogram::decode(t).ok())
            .map(|h| h.value_at_quantile(tuned.objective.percentile / 100.0));
        let meets = measured.errors == 0
            && measured.requests > 0
            && objective_us.is_some_and(|v| v <= tuned.objective.slo_us);
        Ok(Check {
            instances: pick.instances,
            rate: pick.rate_per_s,
            measured,
            objective_us,
            meets,
            predicted_objective_us: pick.prediction.objective_us,
            predicted_p99_us: pick.prediction.latency_us.p99,
        })
    }

    /// Loads the recommended config, measures it, then the rejected one
    /// (one instance fewer); the server's own config of the model is loaded
    /// back at the end, also after a failure.
    pub(super) fn verify(
        url: &str,
        model: &str,
        tuned: &Tuned,
        duration_s: f64,
        seed: u64,
        warn: &mut dyn FnMut(&str),
    ) -> Result<Verified, CommandError> {
        for pick in std::iter::once(&tuned.recommended).chain(&tuned.rejected) {
            // checked before anything is loaded into the server
            if !(pick.rate_per_s.is_finite() && pick.rate_per_s > 0.0) {
                return Err(CommandError::Usage(format!(
                    "--verify: the workload's rate is {}/s: nothing to measure",
                    pick.rate_per_s
                )));
            }
        }
        let server = Server::new(url);
        let original = repository::model_config(&server, model).map_err(error)?;
        let workload = verify::Workload {
            rate: tuned.workload_rate,
            duration: Duration::from_secs_f64(duration_s),
            seed,
            warmup: Duration::from_secs(1),
        };
        let original = original.to_string();
        repository::restore_on_signal_later(&server, model, &original);
        let recommended = check(&server, model, tuned, &tuned.recommended, &workload);
        let rejected = match (&recommended, &tuned.rejected) {
            (Ok(_), Some(pick)) => Some(check(&server, model, tuned, pick, &workload)),
            _ => None,
        };
        let restored = repository::load_model(&server, model, Some(&original));
        repository::forget_restore();
        if let Err(e) = restored {
            // said first: the server still runs a candidate
            let why = e.to_string();
            let also = match (&recommended, &rejected) {
                (Err(e), _) | (_, Some(Err(e))) => format!("; before that: {e}"),
                _ => String::new(),
            };
            return Err(CommandError::Input(format!(
                "the server's config of model '{model}' was NOT loaded back (it runs a candidate of --verify): {why}{also}"
            )));
        }
        let recommended = recommended?;
        let rejected = match rejected {
            Some(Err(e)) => {
                warn(&format!(
                    "the candidate with one instance fewer was not measured: {e}"
                ));
                None
            }
            Some(Ok(c)) => Some(c),
            None => None,
        };
        Ok(Verified {
            url: url.to_string(),
            rate: tuned.workload_rate,
            duration_s,
            recommended,
            rejected,
        })
    }

    fn check_json(c: &Check) -> Value {
        json!({
            "instances": c.instances,
            "rate_per_s": c.rate,
            "measured": {
                "latency_us": c.measured.latency_us,
                "objective_us": c.objective_us,
                "requests": c.measured.requests,
                "errors": c.measured.errors,
                "requests_per_s": c.measured.requests_per_s,
            },
            "predicted": {"objective_us": c.predicted_objective_us, "p99_us": c.predicted_p99_us},
            "meets_objective": c.meets,
        })
    }

    pub(super) fn verified_json(v: &Verified) -> Value {
        json!({
            "url": v.url,
            "rate_per_s": v.rate,
            "duration_s": v.duration_s,
            "recommended": check_json(&v.recommended),
            "rejected": v.rejected.as_ref().map(check_json),
        })
    }

    pub(super) fn write_verified(
        out: &mut dyn Write,
        v: &Verified,
        t: &Tuned,
    ) -> std::io::Result<()> {
        writeln!(
            out,
            "verified on {}: Poisson arrivals for {} s per config",
            Untrusted(&v.url),
            v.duration_s
        )?;
        let p = t.objective.percentile;
        let ms = |us: Option<u64>| {
            us.map_or("-".to_string(), |v| format!("{:.2} ms", v as f64 / 1000.0))
        };
        for (what, c) in [
            ("recommended", Some(&v.recommended)),
            ("rejected", v.rejected.as_ref()),
        ] {
            let Some(c) = c else { continue };
            let off = match (c.objective_us, c.predicted_objective_us) {
                (Some(m), Some(pr)) if pr > 0 => {
                    format!(" ({:+.1} %)", (m as f64 - pr as f64) / pr as f64 * 100.0)
                }
                _ => String::new(),
            };
            writeln!(
                out,
                "  {what} ({} instance{}, {:.1}/s): measured p{p} {}, predicted {}{off}; {} requests, {} errors: {} the objective",
                c.instances,
                if c.instances == 1 { "" } else { "s" },
                c.rate,
                ms(c.objective_us),
                ms(c.predicted_objective_us),
                c.measured.requests,
                c.measured.errors,
                if c.meets { "meets" } else { "misses" }
            )?;
        }
        Ok(())
    }
}

/// Without the `perf` feature: `-u` and `--verify` are refused.
#[cfg(not(feature = "perf"))]
mod live {
    use super::CommandError;
    use crate::batching::Latency;
    use crate::tune::Tuned;
    use serde_json::Value;
    use std::io::Write;

    pub(super) enum Never {}
    pub(super) type Curve = Never;
    pub(super) type Verified = Never;

    fn unavailable() -> CommandError {
        CommandError::Usage(
            "-u and --verify need a live server: this tritonctl was built without the `perf` feature"
                .into(),
        )
    }
    pub(super) fn measure_curve(_: &str, _: &str) -> Result<Curve, CommandError> {
        Err(unavailable())
    }
    pub(super) fn verify(
        _: &str,
        _: &str,
        _: &Tuned,
        _: f64,
        _: u64,
        _: &mut dyn FnMut(&str),
    ) -> Result<Verified, CommandError> {
        Err(unavailable())
    }
    pub(super) fn latency(c: &Curve) -> Latency {
        match *c {}
    }
    pub(super) fn overhead_us(c: &Curve) -> u64 {
        match *c {}
    }
    pub(super) fn curve_json(c: &Curve, _: Option<&str>) -> Value {
        match *c {}
    }
    pub(super) fn write_curve(_: &mut dyn Write, c: &Curve, _: &str) -> std::io::Result<()> {
        match *c {}
    }
    pub(super) fn verified_json(v: &Verified) -> Value {
        match *v {}
    }
    pub(super) fn write_verified(
        _: &mut dyn Write,
        v: &Verified,
        _: &Tuned,
    ) -> std::io::Result<()> {
        match *v {}
    }
    pub(super) fn recommended_meets(v: &Verified) -> bool {
        match *v {}
    }
}
