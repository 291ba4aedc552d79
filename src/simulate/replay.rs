//! Streaming a trace through the scheduler.

use super::stats::Stats;
use super::timeline;
use super::Error;
use crate::batching::{self, BatchRecord, Latency, Request, RequestRecord, Settings, Sink};
use crate::trace::{TraceError, TraceReader};
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

/// Largest trace read from standard input for `--sweep`.
pub const STDIN_LIMIT: u64 = 256 << 20;

/// The read buffer of a trace: lines are parsed in place in it, so fewer,
/// larger reads.
const READ_BUFFER: usize = 256 << 10;

/// Where the trace comes from.
pub enum TraceInput {
    Stdin,
    File(PathBuf),
    /// Standard input, read once (for `--sweep`).
    Memory(Vec<u8>),
}

impl TraceInput {
    /// `-` is standard input.
    pub fn new(path: &Path) -> TraceInput {
        if path.as_os_str() == "-" {
            TraceInput::Stdin
        } else {
            TraceInput::File(path.to_path_buf())
        }
    }

    /// Reads standard input into memory so that it can be replayed.
    pub fn replayable(self) -> Result<TraceInput, Error> {
        match self {
            TraceInput::Stdin => {
                let mut bytes = Vec::new();
                std::io::stdin()
                    .lock()
                    .take(STDIN_LIMIT + 1)
                    .read_to_end(&mut bytes)
                    .map_err(|e| {
                        Error::Input(format!(
                            "<stdin>: cannot read: {}",
                            crate::files::io_message(&e)
                        ))
                    })?;
                if bytes.len() as u64 > STDIN_LIMIT {
                    return Err(Error::Usage(format!(
                        "--sweep with --trace -: the trace on standard input is larger than {} MiB; write it to a file and pass its path, which is read again for each setting",
                        STDIN_LIMIT >> 20
                    )));
                }
                Ok(TraceInput::Memory(bytes))
            }
            other => Ok(other),
        }
    }

    fn open(&self) -> Result<(Box<dyn BufRead + '_>, String), Error> {
        Ok(match self {
            TraceInput::Stdin => (
                Box::new(std::io::BufReader::with_capacity(
                    READ_BUFFER,
                    crate::files::Limited::new(std::io::stdin().lock()),
                )),
                "<stdin>".into(),
            ),
            TraceInput::Memory(b) => (Box::new(b.as_slice()), "<stdin>".into()),
            TraceInput::File(path) => {
                let name = path.display().to_string();
                let f = crate::files::open_regular(path, None).map_err(|e| {
                    Error::Input(format!(
                        "{name}: cannot read: {}",
                        crate::files::io_message(&e)
                    ))
                })?;
                (
                    Box::new(std::io::BufReader::with_capacity(
                        READ_BUFFER,
                        crate::files::Limited::new(f),
                    )),
                    name,
                )
            }
        })
    }
}

/// Streams the trace through the scheduler into `sink`; `seen` is called
/// for each request read. Each request's [`Request::tag`] is its 0-based
/// position in the trace (so records can be put back in trace order
/// without keeping anything per request on the side). Warnings about the trace go to `warn` when
/// given, before any error. A bad line ends the run with its `FILE:LINE`
/// error.
pub fn replay(
    settings: &Settings,
    latency: &Latency,
    input: &TraceInput,
    sink: &mut dyn Sink,
    seen: impl FnMut(&Request),
    warn: Option<&mut dyn FnMut(&str)>,
) -> Result<(), Error> {
    replay_with(input, seen, warn, |requests| {
        batching::simulate(settings, latency, requests, sink)
    })
}

/// Reads the trace for `run`, which gets the requests as an iterator;
/// `seen`, `warn` and errors as in [`replay`].
pub fn replay_with(
    input: &TraceInput,
    mut seen: impl FnMut(&Request),
    warn: Option<&mut dyn FnMut(&str)>,
    run: impl FnOnce(&mut dyn Iterator<Item = Request>),
) -> Result<(), Error> {
    let (reader, name) = input.open()?;
    let mut reader = TraceReader::new(reader, name);
    let mut failure: Option<TraceError> = None;
    let mut position = 0u64;
    {
        let mut requests = std::iter::from_fn(|| match reader.next_request()? {
            Ok(mut r) => {
                r.tag = position;
                position += 1;
                seen(&r);
                Some(r)
            }
            Err(e) => {
                failure = Some(e);
                None
            }
        });
        run(&mut requests);
    }
    if let Some(warn) = warn {
        for w in reader.warnings() {
            warn(w);
        }
        if reader.warning_count() > reader.warnings().len() {
            warn(&format!(
                "{} more warnings about the trace",
                reader.warning_count() - reader.warnings().len()
            ));
        }
    }
    match failure {
        Some(e) => Err(Error::Input(e.to_string())),
        None => Ok(()),
    }
}

/// Feeds the summary and, when drawing, the timeline.
pub struct Tee<'a> {
    pub stats: &'a mut Stats,
    pub timeline: Option<&'a mut timeline::Collector>,
}

impl Sink for Tee<'_> {
    fn request(&mut self, r: RequestRecord) {
        if let Some(t) = self.timeline.as_deref_mut() {
            t.observe_request(&r);
        }
        self.stats.request(r);
    }
    fn batch(&mut self, b: BatchRecord) {
        if let Some(t) = self.timeline.as_deref_mut() {
            t.observe_batch(&b);
        }
        self.stats.batch(b);
    }
}
