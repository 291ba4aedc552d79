//! `simulate`: a model config's scheduler run on a virtual clock over a
//! trace of requests (`crate::batching` is the scheduler itself).
//!
//! * [`load_config`]: the config as `validate` reads it (errors come back
//!   as the report `validate` would show); [`read_latency`]: the
//!   execution time of a batch by size.
//! * [`simulate`]: one run streamed through the scheduler into the
//!   statistics ([`stats`]) and, optionally, a [`timeline`] picture; the
//!   [`Run`] it returns writes one JSON document (every request, every
//!   batch, a summary) or summary tables.
//! * [`sweep`]: the trace run once per setting of config fields.
//!
//! A bad trace line stops a run with `FILE:LINE: message`. Nothing here
//! prints: output goes to the writer given, warnings about the trace to
//! the callback given.

pub mod ensemble;
pub mod latency;
pub mod load;
pub mod replay;
pub mod report;
pub mod stats;
pub mod sweep;
pub mod timeline;

pub use latency::{check_latency, read_latency};
pub use load::{load_config, Loaded};
pub use replay::{replay, Tee, TraceInput, STDIN_LIMIT};
pub use stats::{Distribution, Stats, Summary};
pub use sweep::{parse_axes, run_sweep, Axis, Sweep, MAX_SETTINGS};

use crate::batching::controls::ControlSpec;
use crate::batching::{Latency, Settings};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Why a simulation did not run to its end.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The options do not make sense (a bad `--latency` or `--sweep`, ...).
    #[error("{0}")]
    Usage(String),
    /// An input could not be read or is invalid (a bad trace line, ...).
    #[error("{0}")]
    Input(String),
    /// The config has syntax or schema errors: the report `validate` shows.
    #[error("the config has errors")]
    Invalid(Box<crate::diagnostics::Report>),
    /// Writing the output failed.
    #[error(transparent)]
    Output(#[from] std::io::Error),
}

/// The form of the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Summary tables.
    Human,
    /// One JSON document: every request, every batch and a summary.
    Json,
}

/// One run.
pub struct Options<'a> {
    /// The trace (JSON Lines); `-` is standard input.
    pub trace: &'a Path,
    pub latency: &'a Latency,
    /// What the run is written as: JSON keeps every record.
    pub format: Format,
    /// Also draw the run into this SVG file.
    pub timeline: Option<(PathBuf, timeline::Options)>,
}

/// A finished run, ready to be written.
pub struct Run {
    pub settings: Settings,
    pub stats: Stats,
    pub summary: Summary,
    /// Sequence batching: the control tensors of every batch (JSON only).
    controls: Option<ControlSpec>,
}

/// Streams the trace through the scheduler of `base`; warnings about the
/// trace go to `warn`. With a timeline, its SVG file is written (through
/// [`crate::files::write_atomic`]) before this returns.
pub fn simulate(base: &Loaded, opts: &Options, warn: &mut dyn FnMut(&str)) -> Result<Run, Error> {
    let settings = base.settings(base.config())?;
    check_latency(opts.latency, &settings, None)?;
    let controls = match opts.format {
        Format::Json => ControlSpec::from_config(base.config())
            .map_err(|e| Error::Input(format!("{}: {e}", base.name())))?
            .filter(|spec| !spec.is_empty()),
        Format::Human => None,
    };
    let mut stats = Stats::new(settings.instances, opts.format == Format::Json);
    let mut collector = opts
        .timeline
        .as_ref()
        .map(|(_, o)| timeline::Collector::new(o.clone()));

    let keep = stats.keep;
    {
        let mut sink = Tee {
            stats: &mut stats,
            timeline: collector.as_mut(),
        };
        let input = TraceInput::new(opts.trace);
        replay(
            &settings,
            opts.latency,
            &input,
            &mut sink,
            |_| {},
            Some(warn),
        )?;
    }
    if let (Some(c), Some((path, _))) = (collector, &opts.timeline) {
        let svg = timeline::render(&settings, &c.finish());
        crate::files::write_atomic(path, svg.as_bytes(), crate::files::Replace::Allow).map_err(
            |e| {
                Error::Input(format!(
                    "{}: cannot write: {}",
                    path.display(),
                    crate::files::io_message(&e)
                ))
            },
        )?;
    }
    if keep {
        // JSON lists the requests in trace order: `replay` tags each
        // request with its position.
        stats.requests.sort_unstable_by_key(|r| r.tag);
    }
    let mut summary = stats.summary();
    stats::place_instances(&mut summary, &settings);
    Ok(Run {
        settings,
        stats,
        summary,
        controls,
    })
}

impl Run {
    /// The JSON document (a run made with [`Format::Json`] holds the
    /// records it lists).
    pub fn write_json(&mut self, out: &mut dyn Write) -> Result<(), Error> {
        report::write_json(
            out,
            &mut self.stats,
            &self.summary,
            &self.settings,
            self.controls.as_ref(),
        )
    }

    /// The summary tables.
    pub fn write_human(&self, out: &mut dyn Write) -> Result<(), Error> {
        report::write_human(out, &self.settings, &self.summary)
    }
}
