//! `tritonctl trace generate`: a synthetic trace for `simulate`, on
//! standard output or in `-o FILE`.

use super::{CommandError, ExitStatus};
use crate::cli::{ArrivalDistribution, TraceArgs, TraceCommand, TraceGenerateArgs};
use crate::trace::{self, Distribution, GenerateOptions};
use std::io::Write;

pub fn run(args: &TraceArgs, out: &mut dyn Write) -> Result<ExitStatus, CommandError> {
    match &args.command {
        TraceCommand::Generate(a) => generate(a, out),
    }
}

fn generate(a: &TraceGenerateArgs, out: &mut dyn Write) -> Result<ExitStatus, CommandError> {
    let opts = GenerateOptions {
        rate: a.rate,
        distribution: match a.distribution {
            ArrivalDistribution::Constant => Distribution::Constant,
            ArrivalDistribution::Poisson => Distribution::Poisson,
        },
        duration_s: a.duration,
        requests: a.requests,
        sequences: a.sequences,
        sequence_length: a.sequence_length,
        sequence_length_variation: a.sequence_length_variation,
        think_time_us: a.think_time_us,
        priority_levels: a.priority_levels,
        string_ids: a.string_ids,
        seed: a.seed,
    };
    let result = match &a.output {
        None => trace::generate(&opts, out),
        Some(path) => {
            // The trace error is carried out of the writer to keep its kind.
            let mut failed = None;
            let written =
                crate::files::write_atomic_with(path, crate::files::Replace::Allow, |w| {
                    trace::generate(&opts, w).map_err(|e| match e {
                        trace::GenerateError::Io(e) => e,
                        other => {
                            failed = Some(other);
                            std::io::Error::other("the trace was not generated")
                        }
                    })
                });
            match (failed, written) {
                (Some(e), _) => Err(e),
                (None, Ok(())) => Ok(()),
                (None, Err(e)) => {
                    return Err(CommandError::Input(format!(
                        "{}: cannot write: {}",
                        path.display(),
                        crate::files::io_message(&e)
                    )))
                }
            }
        }
    };
    match result {
        Ok(()) => Ok(ExitStatus::Success),
        Err(trace::GenerateError::Options(m)) => Err(CommandError::Usage(m)),
        Err(trace::GenerateError::Io(e)) => Err(CommandError::Output(e)),
        // `generate` writes as it goes: it has no bound
        Err(e @ trace::GenerateError::TooMany(_)) => Err(CommandError::Usage(e.to_string())),
    }
}
