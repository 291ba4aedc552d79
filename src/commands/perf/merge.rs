//! `tritonctl perf merge A.json B.json ...`: the results of several perf
//! workers as one report (see `crate::perf::merge`).
//!
//! Exit status: 0 merged; 2 a file that cannot be read, is not a document
//! of `perf --format json`, has no histograms, or is not part of the same
//! load as the others.

use super::super::{CommandError, Context, ExitStatus};
use crate::cli::PerfMergeArgs;
use std::io::Write;

#[cfg(not(feature = "perf"))]
pub fn run(
    _args: &PerfMergeArgs,
    _ctx: &Context,
    _out: &mut dyn Write,
) -> Result<ExitStatus, CommandError> {
    Err(CommandError::Usage(
        "this tritonctl was built without the `perf` feature; rebuild with `--features perf`"
            .into(),
    ))
}

#[cfg(feature = "perf")]
pub fn run(
    args: &PerfMergeArgs,
    ctx: &Context,
    out: &mut dyn Write,
) -> Result<ExitStatus, CommandError> {
    use crate::cli::PerfMergeFormat;
    use crate::perf::merge;
    let mut inputs = Vec::with_capacity(args.files.len());
    for path in &args.files {
        let text = crate::files::read_file_to_string(path).map_err(|e| {
            CommandError::Input(format!(
                "cannot read {}: {}",
                crate::text::display::path(path),
                crate::files::io_message(&e)
            ))
        })?;
        // the message names the file as given; term::error escapes it
        let input = merge::parse(&path.display().to_string(), &text)
            .map_err(|e| CommandError::Input(e.0))?;
        inputs.push(input);
    }
    let report = merge::merge(&inputs).map_err(|e| CommandError::Input(e.0))?;
    super::notes_and_csv(&report, ctx, args.csv.as_deref())?;
    match args.format {
        PerfMergeFormat::Json => writeln!(out, "{}", report.to_json())?,
        PerfMergeFormat::Table => write!(out, "{}", report.table())?,
        PerfMergeFormat::Csv => write!(out, "{}", report.csv())?,
    }
    out.flush()?;
    Ok(ExitStatus::Success)
}
