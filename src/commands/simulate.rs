//! `tritonctl simulate --config CONFIG --trace FILE|- --latency SPEC`: the
//! recipe around [`crate::simulate`].
//!
//! Config errors are shown as `validate` shows them (exit 1); a bad trace
//! line stops the run with `FILE:LINE: message` and exit 2, with nothing
//! on standard output. `--sweep` prints one row per setting; a setting
//! Triton would refuse is reported in its row (exit 1).

use super::{CommandError, Context, ExitStatus};
use crate::cli::{SimulateArgs, SimulateFormat};
use crate::simulate::{self, timeline, Error, Format};
use std::io::Write;

impl From<Error> for CommandError {
    fn from(e: Error) -> CommandError {
        match e {
            Error::Usage(m) => CommandError::Usage(m),
            Error::Input(m) => CommandError::Input(m),
            Error::Output(e) => CommandError::Output(e),
            // Shown by the command before it gets here.
            Error::Invalid(_) => CommandError::Input(e.to_string()),
        }
    }
}

pub fn run(
    args: &SimulateArgs,
    ctx: &Context,
    out: &mut dyn Write,
) -> Result<ExitStatus, CommandError> {
    let latencies = simulate::ensemble::read_latencies(&args.latency)?;
    let timeline = match &args.timeline {
        None => None,
        Some(path) => Some((
            path.clone(),
            timeline::Options {
                window: args
                    .timeline_window
                    .as_deref()
                    .map(timeline::Window::parse)
                    .transpose()
                    .map_err(|e| CommandError::Usage(format!("--timeline-window: {e}")))?,
                max_batches: args.timeline_max_batches as usize,
                queue_waits: args.timeline_queue,
            },
        )),
    };
    let axes = simulate::parse_axes(&args.sweep)?;
    let base = match simulate::load_config(&args.config, &args.gpus) {
        Err(Error::Invalid(report)) => {
            super::convert::show_diagnostics(&report, ctx);
            return Ok(ExitStatus::Failure);
        }
        loaded => loaded?,
    };
    let mut warn = |w: &str| crate::term::warning(ctx.global.color, w);
    let format = match args.format {
        SimulateFormat::Human => Format::Human,
        SimulateFormat::Json => Format::Json,
    };

    if simulate::ensemble::is_ensemble(base.config()) {
        return ensemble(args, ctx, &base, latencies, format, out);
    }
    // The name only checks a MODEL= prefix; a config Triton refuses is
    // reported by the run itself.
    let name = base
        .settings_of(base.config())
        .map(|s| s.model)
        .unwrap_or_default();
    let latency = simulate::ensemble::single_latency(latencies, &name)?;

    if !axes.is_empty() {
        let trace = simulate::TraceInput::new(&args.trace);
        let sweep = simulate::run_sweep(&base, &axes, &latency, trace, &mut warn)?;
        match format {
            Format::Json => sweep.write_json(out)?,
            Format::Human => sweep.write_human(out)?,
        }
        out.flush()?;
        return Ok(if sweep.refused() {
            ExitStatus::Failure
        } else {
            ExitStatus::Success
        });
    }

    let options = simulate::Options {
        trace: &args.trace,
        latency: &latency,
        format,
        timeline,
    };
    let mut run = simulate::simulate(&base, &options, &mut warn)?;
    match format {
        Format::Json => run.write_json(out)?,
        Format::Human => run.write_human(out)?,
    }
    out.flush()?;
    Ok(ExitStatus::Success)
}

/// An ensemble: its composing models simulated together.
fn ensemble(
    args: &SimulateArgs,
    ctx: &Context,
    base: &simulate::Loaded,
    latencies: Vec<simulate::ensemble::LatencySpec>,
    format: Format,
    out: &mut dyn Write,
) -> Result<ExitStatus, CommandError> {
    if !args.sweep.is_empty() || args.timeline.is_some() {
        return Err(CommandError::Usage(
            "--sweep and --timeline simulate a single model; give one of the ensemble's composing models".into(),
        ));
    }
    let plan = match simulate::ensemble::plan(base) {
        Err(Error::Invalid(report)) => {
            super::convert::show_diagnostics(&report, ctx);
            return Ok(ExitStatus::Failure);
        }
        plan => plan?,
    };
    let latencies = simulate::ensemble::latencies(&plan, latencies)?;
    let mut warn = |w: &str| crate::term::warning(ctx.global.color, w);
    let run = simulate::ensemble::simulate(plan, latencies, &args.trace, format, &mut warn)?;
    match format {
        Format::Json => run.write_json(out)?,
        Format::Human => run.write_human(out)?,
    }
    out.flush()?;
    Ok(ExitStatus::Success)
}
