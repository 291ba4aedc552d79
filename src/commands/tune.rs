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
    let latency = match (&args.latency, &args.profile) {
        (Some(spec), _) => simulate::read_latency(spec)?,
        (None, Some(path)) => {
            if !path.is_file() {
                return Err(CommandError::Input(format!(
                    "{}: --profile: not a file (the latency file `run --profile` writes)",
                    crate::text::display::path(path)
                )));
            }
            simulate::read_latency(&path.to_string_lossy())?
        }
        (None, None) => return Err(CommandError::Usage("give --latency or --profile".into())),
    };
    let objective = objective(args)?;
    let base = match simulate::load_config(&args.model, &args.gpus) {
        Err(Error::Invalid(report)) => {
            super::convert::show_diagnostics(&report, ctx);
            return Ok(ExitStatus::Failure);
        }
        loaded => loaded?,
    };
    let mut warn = |w: &str| crate::term::warning(ctx.global.color, w);
    let workload = workload(args, &base, &mut warn)?;
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
    };
    let tuned = tune::tune(&base, &latency, &workload, &opts)?;
    let model = base
        .settings_of(base.config())
        .map(|s| s.model)
        .unwrap_or_default();
    let name = base.name();
    match args.format {
        SimulateFormat::Json => tune::report::write_json(out, &tuned, &model)?,
        SimulateFormat::Human => tune::report::write_human(out, &tuned, &model, &name)?,
    }
    out.flush()?;
    if args.write && tuned.recommended.meets && tuned.recommended.config_text != tuned.current_text
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
    Ok(if tuned.recommended.meets {
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
        return Ok(tune::workload::from_file(path, warn)?);
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
