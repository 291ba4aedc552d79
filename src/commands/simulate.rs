//! `tritonctl simulate --config CONFIG --trace FILE|- --latency SPEC`.
//!
//! Parses and binds the config (syntax or schema errors are shown as
//! `validate` shows them, exit 1), derives the scheduler settings, streams
//! the trace through `crate::batching::simulate` and prints either summary
//! tables or one JSON document (every request, every batch, a summary).
//! A bad trace line stops the run with `FILE:LINE: message` and exit 2;
//! nothing is printed on standard output then.
//!
//! `--timeline FILE.svg` also draws the run (`crate::timeline`), keeping
//! only the records of the drawn window; the file is written through a
//! temporary file in the same directory and a rename.
//!
//! `--sweep KEY=V1,V2,...` (repeatable) runs the trace once per element of
//! the cross product of the values. KEY is a field path in the model
//! config, resolved against the schema before anything is read; each value
//! is read in config syntax by the same binder as the config itself, set in
//! the bound message, and the result printed and parsed again, so each
//! setting's config goes through exactly what a config file goes through.
//! Each setting is validated as `validate` would; errors the base config
//! does not also have mean Triton would refuse the setting, which is then
//! reported in its row instead of simulated (exit 1). Each run streams into
//! a constant-memory summary; the trace file is read again per setting, a
//! trace on standard input is read into memory once (at most
//! [`STDIN_LIMIT`] bytes).

use super::{CommandError, Context, ExitStatus};
use crate::batching::controls::{ControlKind, ControlSpec, ControlTensor};
use crate::batching::{
    self, BatchRecord, CorrId, Latency, Request, RequestRecord, SchedulerKind, Settings, Sink,
    SlotRecord, Status,
};
use crate::cli::{SimulateArgs, SimulateFormat};
use crate::config::ParsedConfig;
use crate::diagnostics::Severity;
use crate::schema::inference::ModelConfig;
use crate::timeline;
use crate::trace::{TraceError, TraceReader};
use crate::validate::{FileReport, Report};
use prost_reflect::{DynamicMessage, FieldDescriptor, Kind, MapKey, MessageDescriptor, Value};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};

/// Largest trace read from standard input for `--sweep`.
pub const STDIN_LIMIT: u64 = 256 << 20;

/// Most settings one `--sweep` run may ask for.
pub const MAX_SETTINGS: usize = 1000;

pub fn run(
    args: &SimulateArgs,
    ctx: &Context,
    out: &mut dyn Write,
) -> Result<ExitStatus, CommandError> {
    let latency = read_latency(&args.latency)?;
    let timeline_options = match &args.timeline {
        None => None,
        Some(_) => Some(timeline::Options {
            window: args
                .timeline_window
                .as_deref()
                .map(timeline::Window::parse)
                .transpose()
                .map_err(|e| CommandError::Usage(format!("--timeline-window: {e}")))?,
            max_batches: args.timeline_max_batches as usize,
            queue_waits: args.timeline_queue,
        }),
    };
    let axes = parse_axes(&args.sweep)?;
    let Some(base) = load_config(&args.config, ctx)? else {
        return Ok(ExitStatus::Failure);
    };
    if !axes.is_empty() {
        return run_sweep(args, ctx, out, &base, &axes, &latency);
    }
    let settings = base.settings(base.config())?;
    check_latency(&latency, &settings, None)?;
    let sequence = matches!(
        settings.kind,
        SchedulerKind::Direct(_) | SchedulerKind::Oldest(_)
    );
    // Sequence batching: the control tensors of every batch (JSON only).
    let controls = match args.format {
        SimulateFormat::Json => ControlSpec::from_config(base.config())
            .map_err(|e| CommandError::Input(format!("{}: {e}", base.name())))?
            .filter(|spec| !spec.is_empty()),
        SimulateFormat::Human => None,
    };
    let mut stats = Stats::new(settings.instances, args.format == SimulateFormat::Json);
    let mut collector = timeline_options.map(timeline::Collector::new);

    // JSON lists the requests in trace order: remember where each id came.
    let keep = stats.keep;
    let mut order: HashMap<String, VecDeque<usize>> = HashMap::new();
    let mut position = 0usize;
    {
        let mut sink = Tee {
            stats: &mut stats,
            timeline: collector.as_mut(),
        };
        let input = TraceInput::new(&args.trace);
        replay(
            &settings,
            &latency,
            &input,
            &mut sink,
            |r| {
                if keep {
                    order.entry(r.id.clone()).or_default().push_back(position);
                    position += 1;
                }
            },
            Some(ctx),
        )?;
    }
    if let (Some(c), Some(path)) = (collector, &args.timeline) {
        let svg = timeline::render(&settings, &c.finish());
        crate::files::write_atomic(path, svg.as_bytes(), crate::files::Replace::Allow).map_err(
            |e| {
                CommandError::Input(format!(
                    "{}: cannot write: {}",
                    path.display(),
                    crate::files::io_message(&e)
                ))
            },
        )?;
    }
    if keep {
        let mut requests = std::mem::take(&mut stats.requests);
        let mut keyed: Vec<(usize, RequestRecord)> = requests
            .drain(..)
            .map(|r| {
                let at = order
                    .get_mut(&r.id)
                    .and_then(VecDeque::pop_front)
                    .unwrap_or(usize::MAX);
                (at, r)
            })
            .collect();
        keyed.sort_by_key(|(at, _)| *at);
        stats.requests = keyed.into_iter().map(|(_, r)| r).collect();
    }
    let summary = stats.summary();
    match args.format {
        SimulateFormat::Json => write_json(out, &mut stats, &summary, sequence, controls.as_ref())?,
        SimulateFormat::Human => write_human(out, &settings, &summary)?,
    }
    out.flush()?;
    Ok(ExitStatus::Success)
}

/// Where the trace comes from.
enum TraceInput {
    Stdin,
    File(PathBuf),
    /// Standard input, read once (for `--sweep`).
    Memory(Vec<u8>),
}

impl TraceInput {
    fn new(path: &Path) -> TraceInput {
        if path.as_os_str() == "-" {
            TraceInput::Stdin
        } else {
            TraceInput::File(path.to_path_buf())
        }
    }

    /// Reads standard input into memory so that it can be replayed.
    fn replayable(self) -> Result<TraceInput, CommandError> {
        match self {
            TraceInput::Stdin => {
                let mut bytes = Vec::new();
                std::io::stdin()
                    .lock()
                    .take(STDIN_LIMIT + 1)
                    .read_to_end(&mut bytes)
                    .map_err(|e| {
                        CommandError::Input(format!(
                            "<stdin>: cannot read: {}",
                            crate::files::io_message(&e)
                        ))
                    })?;
                if bytes.len() as u64 > STDIN_LIMIT {
                    return Err(CommandError::Usage(format!(
                        "--sweep with --trace -: the trace on standard input is larger than {} MiB; write it to a file and pass its path, which is read again for each setting",
                        STDIN_LIMIT >> 20
                    )));
                }
                Ok(TraceInput::Memory(bytes))
            }
            other => Ok(other),
        }
    }

    fn open(&self) -> Result<(Box<dyn BufRead + '_>, String), CommandError> {
        Ok(match self {
            TraceInput::Stdin => (Box::new(std::io::stdin().lock()), "<stdin>".into()),
            TraceInput::Memory(b) => (Box::new(b.as_slice()), "<stdin>".into()),
            TraceInput::File(path) => {
                let name = path.display().to_string();
                let f = std::fs::File::open(path).map_err(|e| {
                    CommandError::Input(format!(
                        "{name}: cannot read: {}",
                        crate::files::io_message(&e)
                    ))
                })?;
                (Box::new(std::io::BufReader::new(f)), name)
            }
        })
    }
}

/// Streams the trace through the scheduler into `sink`; `seen` is called
/// for each request read. Warnings about the trace are shown when `warn`
/// is given. A bad line ends the run with its `FILE:LINE` error.
fn replay(
    settings: &Settings,
    latency: &Latency,
    input: &TraceInput,
    sink: &mut dyn Sink,
    mut seen: impl FnMut(&Request),
    warn: Option<&Context>,
) -> Result<(), CommandError> {
    let (reader, name) = input.open()?;
    let mut reader = TraceReader::new(reader, name);
    let mut failure: Option<TraceError> = None;
    {
        let requests = std::iter::from_fn(|| match reader.next_request()? {
            Ok(r) => {
                seen(&r);
                Some(r)
            }
            Err(e) => {
                failure = Some(e);
                None
            }
        });
        batching::simulate(settings, latency, requests, sink);
    }
    if let Some(ctx) = warn {
        for w in reader.warnings() {
            crate::term::warning(ctx.global.color, w);
        }
        if reader.warning_count() > reader.warnings().len() {
            crate::term::warning(
                ctx.global.color,
                &format!(
                    "{} more warnings about the trace",
                    reader.warning_count() - reader.warnings().len()
                ),
            );
        }
    }
    match failure {
        Some(e) => Err(CommandError::Input(e.to_string())),
        None => Ok(()),
    }
}

/// Feeds the summary and, when drawing, the timeline.
struct Tee<'a> {
    stats: &'a mut Stats,
    timeline: Option<&'a mut timeline::Collector>,
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

/// `--latency`: a specification, or a file holding one (one point or
/// term per line, `#` comments allowed).
fn read_latency(spec: &str) -> Result<Latency, CommandError> {
    let path = Path::new(spec);
    if !spec.is_empty() && path.is_file() {
        let text = std::fs::read_to_string(path).map_err(|e| {
            CommandError::Input(format!(
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
            .map_err(|e| CommandError::Input(format!("{spec}: invalid latency: {e}")));
    }
    Latency::parse(spec).map_err(|e| CommandError::Usage(format!("--latency: {e}")))
}

/// The latency model must keep every batch time on the simulator's clock.
fn check_latency(
    latency: &Latency,
    settings: &Settings,
    setting: Option<&str>,
) -> Result<(), CommandError> {
    let largest = settings.max_batch_size.clamp(1, 4096);
    if let Some(b) = (1..=largest).find(|&b| latency.eval(b) > crate::trace::MAX_TIME_US) {
        return Err(CommandError::Usage(format!(
            "--latency: {} µs for a batch of {b} is too large (at most {}){}",
            latency.eval(b),
            crate::trace::MAX_TIME_US,
            setting.map_or(String::new(), |s| format!(" with {s}"))
        )));
    }
    Ok(())
}

/// The config as read: its file, text and bound forms.
struct Loaded {
    /// The config file (`config.pbtxt` inside a directory given).
    file: PathBuf,
    /// The model directory, when the config is a model's `config.pbtxt`.
    model_dir: Option<PathBuf>,
    parsed: ParsedConfig,
}

impl Loaded {
    fn name(&self) -> String {
        self.file.display().to_string()
    }

    fn config(&self) -> &ModelConfig {
        self.parsed
            .config
            .as_ref()
            .expect("load_config returns clean configs only")
    }

    /// Scheduler settings of `cfg` (this config or a variant of it): the
    /// model name from the directory when the config names none, then
    /// Triton's normalization.
    fn settings(&self, cfg: &ModelConfig) -> Result<Settings, CommandError> {
        self.settings_of(cfg)
            .map_err(|e| CommandError::Input(format!("{}: {e}", self.name())))
    }

    fn settings_of(&self, cfg: &ModelConfig) -> Result<Settings, String> {
        let mut cfg = cfg.clone();
        if cfg.name.is_empty() {
            if let Some(dir) = self.file.parent().and_then(|d| d.file_name()) {
                cfg.name = dir.to_string_lossy().into_owned();
            }
        }
        crate::config::normalize::normalize(&mut cfg);
        Settings::from_config(&cfg)
    }
}

/// Reads, parses and binds the config; `None` after showing its errors.
fn load_config(path: &Path, ctx: &Context) -> Result<Option<Loaded>, CommandError> {
    let (file, model_dir) = if path.is_dir() {
        let f = path.join("config.pbtxt");
        if !f.is_file() {
            return Err(CommandError::Input(format!(
                "{}: a directory without a config.pbtxt",
                path.display()
            )));
        }
        (f, Some(path.to_path_buf()))
    } else {
        let dir =
            (path.file_name().is_some_and(|n| n == "config.pbtxt")).then(|| match path.parent() {
                Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
                _ => PathBuf::from("."),
            });
        (path.to_path_buf(), dir)
    };
    let name = file.display().to_string();
    let bytes = std::fs::read(&file).map_err(|e| {
        CommandError::Input(format!(
            "{name}: cannot read: {}",
            crate::files::io_message(&e)
        ))
    })?;
    let parsed = ParsedConfig::from_bytes(bytes);
    let errors = parsed
        .diagnostics
        .iter()
        .any(|d| d.severity == Severity::Error);
    if errors || parsed.config.is_none() || parsed.message.is_none() {
        let report = Report {
            files: vec![FileReport {
                path: name,
                model: None,
                src: parsed.src,
                diagnostics: parsed.diagnostics,
            }],
        };
        super::convert::show_diagnostics(&report, ctx);
        return Ok(None);
    }
    Ok(Some(Loaded {
        file,
        model_dir,
        parsed,
    }))
}

/// Counts as records arrive; keeps the records themselves only for JSON.
struct Stats {
    keep: bool,
    requests: Vec<RequestRecord>,
    batches: Vec<BatchRecord>,
    total: u64,
    ok: u64,
    rejected: u64,
    timed_out: u64,
    latency: Distribution,
    queue: Distribution,
    compute: Distribution,
    first_arrival: Option<u64>,
    last_end: u64,
    sizes: BTreeMap<u32, u64>,
    busy_us: Vec<u64>,
    instance_batches: Vec<u64>,
    reasons: BTreeMap<(&'static str, String), u64>,
}

/// Distinct rejection reasons listed one by one; the rest are counted
/// together (reasons name requests or sequences, so they are unbounded).
const MAX_REASONS: usize = 64;
const OTHER_REASONS: &str = "(other reasons)";

impl Stats {
    fn new(instances: usize, keep: bool) -> Self {
        Stats {
            keep,
            requests: Vec::new(),
            batches: Vec::new(),
            total: 0,
            ok: 0,
            rejected: 0,
            timed_out: 0,
            latency: Distribution::default(),
            queue: Distribution::default(),
            compute: Distribution::default(),
            first_arrival: None,
            last_end: 0,
            sizes: BTreeMap::new(),
            busy_us: vec![0; instances],
            instance_batches: vec![0; instances],
            reasons: BTreeMap::new(),
        }
    }
}

impl Sink for Stats {
    fn request(&mut self, r: RequestRecord) {
        self.total += 1;
        self.first_arrival = Some(
            self.first_arrival
                .map_or(r.arrival_us, |a| a.min(r.arrival_us)),
        );
        if let Some(e) = r.end_us {
            self.last_end = self.last_end.max(e);
        }
        let label = match r.status {
            Status::Ok => {
                self.ok += 1;
                if let (Some(s), Some(e)) = (r.start_us, r.end_us) {
                    self.latency.push(e.saturating_sub(r.arrival_us));
                    self.queue.push(s.saturating_sub(r.arrival_us));
                    self.compute.push(e.saturating_sub(s));
                }
                None
            }
            Status::Rejected => {
                self.rejected += 1;
                Some("rejected")
            }
            Status::TimedOut => {
                self.timed_out += 1;
                Some("timed_out")
            }
        };
        if let Some(label) = label {
            let mut key = (label, r.reason.clone().unwrap_or_default());
            if !self.reasons.contains_key(&key) && self.reasons.len() >= MAX_REASONS {
                key.1 = OTHER_REASONS.to_string();
            }
            *self.reasons.entry(key).or_default() += 1;
        }
        if self.keep {
            self.requests.push(r);
        }
    }

    fn batch(&mut self, b: BatchRecord) {
        self.last_end = self.last_end.max(b.end_us);
        *self.sizes.entry(b.size).or_default() += 1;
        if b.instance >= self.busy_us.len() {
            self.busy_us.resize(b.instance + 1, 0);
            self.instance_batches.resize(b.instance + 1, 0);
        }
        self.busy_us[b.instance] += b.end_us.saturating_sub(b.start_us);
        self.instance_batches[b.instance] += 1;
        if self.keep {
            self.batches.push(b);
        }
    }
}

/// Counts of observed values for nearest-rank percentiles in bounded
/// memory: exact while there are at most [`EXACT_VALUES`] distinct values,
/// then in buckets of relative width 2^-11 (below 4096 still exact), each
/// reported at its middle.
#[derive(Debug, Default, Clone)]
struct Distribution {
    counts: BTreeMap<u64, u64>,
    n: u64,
    coarse: bool,
}

const EXACT_VALUES: usize = 1 << 16;
const BUCKET_BITS: u32 = 11;

impl Distribution {
    fn bucket(v: u64) -> u64 {
        if v < 1 << (BUCKET_BITS + 1) {
            return v;
        }
        // v >> shift keeps the top BUCKET_BITS + 1 bits (2^11 ≤ m < 2^12).
        let shift = 63 - v.leading_zeros() - BUCKET_BITS;
        (u64::from(shift) << (BUCKET_BITS + 1)) | (v >> shift)
    }

    fn bucket_value(key: u64) -> u64 {
        let shift = (key >> (BUCKET_BITS + 1)) as u32;
        if shift == 0 {
            return key;
        }
        let mantissa = key & ((1 << (BUCKET_BITS + 1)) - 1);
        (mantissa << shift) + (1 << (shift - 1))
    }

    fn push(&mut self, v: u64) {
        self.n += 1;
        let key = if self.coarse { Self::bucket(v) } else { v };
        *self.counts.entry(key).or_default() += 1;
        if !self.coarse && self.counts.len() > EXACT_VALUES {
            self.coarse = true;
            let exact = std::mem::take(&mut self.counts);
            for (v, c) in exact {
                *self.counts.entry(Self::bucket(v)).or_default() += c;
            }
        }
    }

    /// Nearest-rank percentile `p` (0 < p ≤ 100).
    fn percentile(&self, p: f64) -> Option<u64> {
        if self.n == 0 {
            return None;
        }
        let rank = ((p / 100.0) * self.n as f64).ceil() as u64;
        let rank = rank.clamp(1, self.n);
        let mut seen = 0u64;
        for (&k, &c) in &self.counts {
            seen += c;
            if seen >= rank {
                return Some(if self.coarse {
                    Self::bucket_value(k)
                } else {
                    k
                });
            }
        }
        None
    }

    fn percentiles(&self) -> Percentiles {
        Percentiles {
            p50: self.percentile(50.0),
            p90: self.percentile(90.0),
            p95: self.percentile(95.0),
            p99: self.percentile(99.0),
        }
    }
}

#[derive(Serialize, Clone, Copy)]
struct Percentiles {
    p50: Option<u64>,
    p90: Option<u64>,
    p95: Option<u64>,
    p99: Option<u64>,
}

#[derive(Serialize)]
struct SizeCount {
    size: u32,
    count: u64,
}

#[derive(Serialize)]
struct InstanceUse {
    instance: usize,
    batches: u64,
    busy_us: u64,
    utilization: f64,
}

#[derive(Serialize)]
struct ReasonCount {
    status: &'static str,
    reason: String,
    count: u64,
}

#[derive(Serialize)]
struct Summary {
    requests: u64,
    ok: u64,
    rejected: u64,
    timed_out: u64,
    throughput_per_s: f64,
    latency_us: Percentiles,
    queue_us: Percentiles,
    compute_us: Percentiles,
    /// Present (true) when a distribution had so many distinct values that
    /// its percentiles are rounded (to within 0.05%).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    approximate_percentiles: bool,
    /// From the first arrival to the last response.
    duration_us: u64,
    batches: u64,
    /// Mean executed batch size (0 without executions).
    mean_batch_size: f64,
    batch_sizes: Vec<SizeCount>,
    instances: Vec<InstanceUse>,
    reasons: Vec<ReasonCount>,
}

impl Stats {
    fn summary(&mut self) -> Summary {
        let duration_us = self
            .first_arrival
            .map_or(0, |a| self.last_end.saturating_sub(a));
        let secs = duration_us as f64 / 1e6;
        let throughput_per_s = if duration_us > 0 {
            self.ok as f64 / secs
        } else {
            0.0
        };
        let batches: u64 = self.sizes.values().sum();
        let elements: u64 = self.sizes.iter().map(|(&s, &c)| u64::from(s) * c).sum();
        Summary {
            requests: self.total,
            ok: self.ok,
            rejected: self.rejected,
            timed_out: self.timed_out,
            throughput_per_s,
            latency_us: self.latency.percentiles(),
            queue_us: self.queue.percentiles(),
            compute_us: self.compute.percentiles(),
            approximate_percentiles: self.latency.coarse
                || self.queue.coarse
                || self.compute.coarse,
            duration_us,
            batches,
            mean_batch_size: if batches > 0 {
                elements as f64 / batches as f64
            } else {
                0.0
            },
            batch_sizes: self
                .sizes
                .iter()
                .map(|(&size, &count)| SizeCount { size, count })
                .collect(),
            instances: self
                .busy_us
                .iter()
                .zip(&self.instance_batches)
                .enumerate()
                .map(|(instance, (&busy_us, &batches))| InstanceUse {
                    instance,
                    batches,
                    busy_us,
                    utilization: if duration_us > 0 {
                        busy_us as f64 / duration_us as f64
                    } else {
                        0.0
                    },
                })
                .collect(),
            reasons: self
                .reasons
                .iter()
                .map(|((status, reason), &count)| ReasonCount {
                    status,
                    reason: reason.clone(),
                    count,
                })
                .collect(),
        }
    }
}

#[derive(Serialize)]
struct RequestOut<'a> {
    id: &'a str,
    sequence_id: &'a Option<CorrId>,
    arrival_us: u64,
    start_us: Option<u64>,
    end_us: Option<u64>,
    instance: Option<usize>,
    slot: Option<usize>,
    batch: Option<u64>,
    status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: &'a Option<String>,
}

#[derive(Serialize)]
struct BatchOut<'a> {
    id: u64,
    instance: usize,
    start_us: u64,
    end_us: u64,
    size: u32,
    requests: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    slots: Option<&'a [SlotRecord]>,
    /// The control inputs the model receives with the batch.
    #[serde(skip_serializing_if = "Option::is_none")]
    controls: Option<Vec<ControlOut>>,
}

/// A control tensor in the JSON output: `data` nested like `shape`
/// (`[[true], [true]]` for shape `[2, 1]`).
#[derive(Serialize)]
struct ControlOut {
    name: String,
    kind: ControlKind,
    datatype: &'static str,
    shape: Vec<i64>,
    data: serde_json::Value,
}

impl ControlOut {
    fn new(t: ControlTensor) -> Self {
        let flat = match serde_json::to_value(&t.data) {
            Ok(serde_json::Value::Array(v)) => v,
            _ => Vec::new(),
        };
        let data = match t.shape.as_slice() {
            [_, inner] if *inner > 0 => serde_json::Value::Array(
                flat.chunks(*inner as usize)
                    .map(|c| serde_json::Value::Array(c.to_vec()))
                    .collect(),
            ),
            _ => serde_json::Value::Array(flat),
        };
        ControlOut {
            name: t.name,
            kind: t.kind,
            datatype: t.datatype,
            shape: t.shape,
            data,
        }
    }
}

#[derive(Serialize)]
struct Document<'a> {
    requests: Vec<RequestOut<'a>>,
    batches: Vec<BatchOut<'a>>,
    summary: &'a Summary,
}

fn write_json(
    out: &mut dyn Write,
    stats: &mut Stats,
    summary: &Summary,
    sequence: bool,
    controls: Option<&ControlSpec>,
) -> Result<(), CommandError> {
    stats.batches.sort_by_key(|b| b.id);
    let mut batches = Vec::with_capacity(stats.batches.len());
    for b in &stats.batches {
        let controls = match controls {
            Some(spec) if sequence => Some(
                spec.tensors(b.executed_slots())
                    .map_err(|e| CommandError::Input(format!("batch {}: {e}", b.id)))?
                    .into_iter()
                    .map(ControlOut::new)
                    .collect(),
            ),
            _ => None,
        };
        batches.push(BatchOut {
            id: b.id,
            instance: b.instance,
            start_us: b.start_us,
            end_us: b.end_us,
            size: b.size,
            requests: &b.requests,
            slots: sequence.then_some(b.slots.as_slice()),
            controls,
        });
    }
    let doc = Document {
        requests: stats
            .requests
            .iter()
            .map(|r| RequestOut {
                id: &r.id,
                sequence_id: &r.sequence_id,
                arrival_us: r.arrival_us,
                start_us: r.start_us,
                end_us: r.end_us,
                instance: r.instance,
                slot: r.slot,
                batch: r.batch,
                status: r.status,
                reason: &r.reason,
            })
            .collect(),
        batches,
        summary,
    };
    serde_json::to_writer_pretty(&mut *out, &doc).map_err(std::io::Error::other)?;
    writeln!(out)?;
    Ok(())
}

fn write_human(out: &mut dyn Write, settings: &Settings, s: &Summary) -> Result<(), CommandError> {
    use comfy_table::{presets, CellAlignment, Table};
    let new_table = || {
        let mut t = Table::new();
        t.load_preset(presets::UTF8_FULL_CONDENSED);
        t
    };
    let scheduler = match &settings.kind {
        SchedulerKind::Default => "default (no batching)",
        SchedulerKind::Dynamic(_) => "dynamic batching",
        SchedulerKind::Direct(_) => "sequence batching (direct)",
        SchedulerKind::Oldest(_) => "sequence batching (oldest)",
    };
    writeln!(
        out,
        "model '{}': {scheduler}, max_batch_size {}, {} instance{}",
        settings.model,
        settings.max_batch_size,
        settings.instances,
        if settings.instances == 1 { "" } else { "s" }
    )?;
    let mut t = new_table();
    t.set_header(vec![
        "requests",
        "ok",
        "rejected",
        "timed out",
        "batches",
        "throughput/s",
    ]);
    t.add_row(vec![
        s.requests.to_string(),
        s.ok.to_string(),
        s.rejected.to_string(),
        s.timed_out.to_string(),
        s.batches.to_string(),
        format!("{:.1}", s.throughput_per_s),
    ]);
    writeln!(out, "{t}")?;

    let cell = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
    let mut t = new_table();
    t.set_header(vec!["latency (µs)", "p50", "p90", "p95", "p99"]);
    for (name, p) in [
        ("total", s.latency_us),
        ("queue", s.queue_us),
        ("compute", s.compute_us),
    ] {
        t.add_row(vec![
            name.to_string(),
            cell(p.p50),
            cell(p.p90),
            cell(p.p95),
            cell(p.p99),
        ]);
    }
    right_align(&mut t, 1..5, CellAlignment::Right);
    writeln!(out, "{t}")?;

    if !s.batch_sizes.is_empty() {
        let mut t = new_table();
        t.set_header(vec!["batch size", "batches", "share"]);
        for sc in &s.batch_sizes {
            t.add_row(vec![
                sc.size.to_string(),
                sc.count.to_string(),
                format!("{:.1}%", 100.0 * sc.count as f64 / s.batches.max(1) as f64),
            ]);
        }
        right_align(&mut t, 0..3, CellAlignment::Right);
        writeln!(out, "{t}")?;
    }

    let mut t = new_table();
    t.set_header(vec!["instance", "batches", "busy (µs)", "utilisation"]);
    for i in &s.instances {
        t.add_row(vec![
            i.instance.to_string(),
            i.batches.to_string(),
            i.busy_us.to_string(),
            format!("{:.1}%", 100.0 * i.utilization),
        ]);
    }
    right_align(&mut t, 0..4, CellAlignment::Right);
    writeln!(out, "{t}")?;

    if !s.reasons.is_empty() {
        let mut t = new_table();
        t.set_header(vec!["status", "count", "reason"]);
        for r in &s.reasons {
            t.add_row(vec![
                r.status.replace('_', " "),
                r.count.to_string(),
                r.reason.clone(),
            ]);
        }
        writeln!(out, "{t}")?;
    }
    Ok(())
}

fn right_align(
    t: &mut comfy_table::Table,
    cols: std::ops::Range<usize>,
    a: comfy_table::CellAlignment,
) {
    for c in cols {
        if let Some(col) = t.column_mut(c) {
            col.set_cell_alignment(a);
        }
    }
}

// ---------------------------------------------------------------------------
// --sweep

/// One step of a sweep key, resolved against the schema.
#[derive(Debug, Clone)]
enum Seg {
    Field(FieldDescriptor),
    Index(usize),
    Key(MapKey, String),
}

/// What the last step of a key names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Leaf {
    /// A whole field (a whole list for a repeated field).
    Field,
    /// One element of a repeated field: `dims[1]`.
    Element,
    /// The value of one map entry: `parameters{KEY}`.
    MapValue,
}

/// One `--sweep KEY=V1,V2,...`.
struct Axis {
    key: String,
    path: Vec<Seg>,
    /// The kind of the values set (the element kind for a list), for JSON.
    kind: Kind,
    /// Each value as written and as bound.
    values: Vec<(String, Value)>,
}

fn parse_axes(args: &[String]) -> Result<Vec<Axis>, CommandError> {
    let mut axes: Vec<Axis> = Vec::new();
    for a in args {
        let axis = parse_axis(a).map_err(|e| CommandError::Usage(format!("--sweep: {e}")))?;
        if axes.iter().any(|x| x.key == axis.key) {
            return Err(CommandError::Usage(format!(
                "--sweep: '{}' is given twice; list all its values in one --sweep",
                axis.key
            )));
        }
        axes.push(axis);
    }
    let total = axes
        .iter()
        .try_fold(1usize, |n, a| n.checked_mul(a.values.len()))
        .unwrap_or(usize::MAX);
    if total > MAX_SETTINGS {
        return Err(CommandError::Usage(format!(
            "--sweep: {} settings asked for, at most {MAX_SETTINGS} are allowed",
            if total == usize::MAX {
                "too many".to_string()
            } else {
                total.to_string()
            }
        )));
    }
    Ok(axes)
}

fn parse_axis(arg: &str) -> Result<Axis, String> {
    let Some((key, values)) = arg.split_once('=') else {
        return Err(format!(
            "'{arg}': expected KEY=V1,V2,... (for example dynamic_batching.max_queue_delay_microseconds=0,100,500)"
        ));
    };
    let key = key.trim().to_string();
    let (path, fd, leaf) = resolve_key(&key)?;
    let kind = match leaf {
        Leaf::MapValue => match fd.kind() {
            Kind::Message(entry) => entry.map_entry_value_field().kind(),
            k => k,
        },
        _ => fd.kind(),
    };
    let mut parsed = Vec::new();
    for text in split_values(values).map_err(|e| format!("'{key}': {e}"))? {
        // Strings may be written without quotes.
        let literal =
            if matches!(kind, Kind::String | Kind::Bytes) && !text.starts_with(['"', '\'', '[']) {
                crate::pbtxt::printer::quote_bytes(text.as_bytes())
            } else {
                text.clone()
            };
        let v = parse_value(&fd, leaf, &literal).map_err(|e| {
            let mut m = format!("'{key}': invalid value '{text}': {e}");
            match &kind {
                Kind::Enum(en) => {
                    let names: Vec<String> = en.values().map(|v| v.name().to_string()).collect();
                    m.push_str(&format!(" (one of: {})", names.join(", ")));
                }
                Kind::Bool => m.push_str(" (true or false)"),
                _ => {}
            }
            m
        })?;
        parsed.push((text, v));
    }
    Ok(Axis {
        key,
        path,
        kind,
        values: parsed,
    })
}

/// Splits `V1,V2,...` at the commas outside brackets, braces and quotes.
fn split_values(text: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut cur = String::new();
    for c in text.chars() {
        if let Some(q) = quote {
            cur.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            '[' | '{' | '<' => depth += 1,
            ']' | '}' | '>' => depth -= 1,
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    out.push(cur);
    if quote.is_some() || depth != 0 {
        return Err(format!("unbalanced quotes or brackets in '{text}'"));
    }
    let out: Vec<String> = out.into_iter().map(|v| v.trim().to_string()).collect();
    if out.iter().any(String::is_empty) {
        return Err(format!(
            "empty value in '{text}' (values are separated by commas; a list is written [4,8])"
        ));
    }
    Ok(out)
}

enum RawSeg {
    Name(String),
    Index(usize),
    Key(String),
}

fn split_key(key: &str) -> Result<Vec<RawSeg>, String> {
    let bad = || {
        format!("'{key}' is not a field path (NAME, NAME.NAME, NAME[INDEX] or NAME{{KEY}}, for example instance_group[0].count)")
    };
    let mut out = Vec::new();
    let mut name_next = true;
    let mut rest = key;
    while let Some(c) = rest.chars().next() {
        match c {
            '.' if !name_next => {
                name_next = true;
                rest = &rest[1..];
            }
            '[' | '{' if !name_next => {
                let close = if c == '[' { ']' } else { '}' };
                let end = rest.find(close).ok_or_else(bad)?;
                let inner = rest[1..end].trim();
                out.push(if c == '[' {
                    RawSeg::Index(inner.parse().map_err(|_| {
                        format!("'{key}': the index '{inner}' is not a whole number")
                    })?)
                } else {
                    RawSeg::Key(inner.to_string())
                });
                rest = &rest[end + 1..];
            }
            c if name_next && (c.is_ascii_alphanumeric() || c == '_') => {
                let end = rest
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(rest.len());
                out.push(RawSeg::Name(rest[..end].to_string()));
                rest = &rest[end..];
                name_next = false;
            }
            _ => return Err(bad()),
        }
    }
    if name_next {
        return Err(bad());
    }
    Ok(out)
}

fn join_path(at: &str, name: &str) -> String {
    if at.is_empty() {
        name.to_string()
    } else {
        format!("{at}.{name}")
    }
}

fn unknown_field(msg: &MessageDescriptor, name: &str, at: &str) -> String {
    let names: Vec<String> = msg.fields().map(|f| f.name().to_string()).collect();
    let near = crate::text::suggestions(name, names.iter().map(String::as_str));
    let place = if at.is_empty() {
        "the model config".to_string()
    } else {
        format!("'{at}'")
    };
    let mut m = format!("{place} has no field '{name}'");
    if let Some(first) = near.first() {
        m.push_str(&format!("; did you mean '{}'?", join_path(at, first)));
    }
    m.push_str(&format!(" Fields of {place}: {}", names.join(", ")));
    m
}

/// Resolves a key against the ModelConfig schema: the steps, the field of
/// the last step and what of it is set.
fn resolve_key(key: &str) -> Result<(Vec<Seg>, FieldDescriptor, Leaf), String> {
    let raw = split_key(key)?;
    let mut segs = Vec::new();
    let mut msg = crate::schema::model_config();
    let mut at = String::new();
    let mut it = raw.into_iter().peekable();
    while let Some(seg) = it.next() {
        let RawSeg::Name(name) = seg else {
            return Err(format!("'{key}': one index or key per field"));
        };
        let fd = msg
            .get_field_by_name(&name)
            .ok_or_else(|| unknown_field(&msg, &name, &at))?;
        at = join_path(&at, &name);
        segs.push(Seg::Field(fd.clone()));
        let mut leaf = Leaf::Field;
        let mut inner = fd.kind();
        match it.peek() {
            Some(RawSeg::Index(i)) => {
                if !fd.is_list() {
                    return Err(format!("'{at}' is not a list; leave out the [{i}]"));
                }
                at = format!("{at}[{i}]");
                segs.push(Seg::Index(*i));
                leaf = Leaf::Element;
                it.next();
            }
            Some(RawSeg::Key(k)) => {
                let Kind::Message(entry) = fd.kind().clone() else {
                    return Err(format!("'{at}' is not a map; leave out the {{{k}}}"));
                };
                if !fd.is_map() {
                    return Err(format!("'{at}' is not a map; leave out the {{{k}}}"));
                }
                let mk = parse_map_key(&entry, k)
                    .map_err(|e| format!("'{at}{{{k}}}': invalid key: {e}"))?;
                at = format!("{at}{{{k}}}");
                segs.push(Seg::Key(mk, k.clone()));
                inner = entry.map_entry_value_field().kind();
                leaf = Leaf::MapValue;
                it.next();
            }
            _ => {}
        }
        match it.peek() {
            None => {
                if leaf == Leaf::Field && fd.is_map() {
                    return Err(format!(
                        "'{at}' is a map; name one entry, for example {at}{{KEY}}"
                    ));
                }
                return Ok((segs, fd, leaf));
            }
            Some(RawSeg::Name(next)) => {
                if leaf == Leaf::Field && fd.is_list() {
                    return Err(format!(
                        "'{at}' is a list; pick one element, for example {at}[0].{next}"
                    ));
                }
                match inner {
                    Kind::Message(m) => msg = m,
                    _ => return Err(format!("'{at}' is not a message; it has no field '{next}'")),
                }
            }
            Some(_) => return Err(format!("'{key}': one index or key per field")),
        }
    }
    Err(format!("'{key}' is not a field path"))
}

/// A map key written in the key's own syntax (strings need no quotes).
fn parse_map_key(entry: &MessageDescriptor, text: &str) -> Result<MapKey, String> {
    let kf = entry.map_entry_key_field();
    let lit = if matches!(kf.kind(), Kind::String) && !text.starts_with(['"', '\'']) {
        crate::pbtxt::printer::quote_bytes(text.as_bytes())
    } else {
        text.to_string()
    };
    let snippet = format!("key: {lit}");
    let v = bind_snippet(&snippet, entry)?.get_field(&kf).into_owned();
    v.into_map_key()
        .ok_or_else(|| "not a valid map key".to_string())
}

/// Binds a one-field text against `desc`, as a config file is bound.
fn bind_snippet(snippet: &str, desc: &MessageDescriptor) -> Result<DynamicMessage, String> {
    let doc = crate::pbtxt::parse(snippet).map_err(|d| d.message.clone())?;
    if doc.fields.len() != 1 {
        return Err("expected one value".into());
    }
    let (msg, diags) = crate::schema::bind::bind(snippet, &doc, desc);
    if let Some(d) = diags
        .iter()
        .find(|d| d.severity == Severity::Error)
        .or(diags.first())
    {
        return Err(d.message.clone());
    }
    Ok(msg)
}

/// A value in config syntax for the field (or element, or map value) `fd`.
fn parse_value(fd: &FieldDescriptor, leaf: Leaf, text: &str) -> Result<Value, String> {
    match leaf {
        Leaf::Field => {
            let snippet = format!("{}: {text}", fd.name());
            let msg = bind_snippet(&snippet, &fd.parent_message().clone())?;
            Ok(msg.get_field(fd).into_owned())
        }
        Leaf::Element => {
            let snippet = format!("{}: [ {text} ]", fd.name());
            let msg = bind_snippet(&snippet, &fd.parent_message().clone())?;
            match msg.get_field(fd).into_owned() {
                Value::List(mut l) if l.len() == 1 => Ok(l.remove(0)),
                _ => Err("expected one element".into()),
            }
        }
        Leaf::MapValue => {
            let Kind::Message(entry) = fd.kind() else {
                return Err("not a map".into());
            };
            let vf = entry.map_entry_value_field();
            let snippet = format!("value: {text}");
            let msg = bind_snippet(&snippet, &entry)?;
            Ok(msg.get_field(&vf).into_owned())
        }
    }
}

/// Refuses to switch a `oneof` (the scheduler, the sequence strategy, ...)
/// to another member than the config's.
fn check_oneof(msg: &DynamicMessage, fd: &FieldDescriptor, at: &str) -> Result<(), String> {
    let Some(o) = fd.containing_oneof() else {
        return Ok(());
    };
    if let Some(other) = o
        .fields()
        .find(|f| f.number() != fd.number() && msg.has_field(f))
    {
        let names: Vec<String> = o.fields().map(|f| join_path(at, f.name())).collect();
        return Err(format!(
            "'{}' cannot be set: the config uses '{}', and a config holds only one of {}",
            join_path(at, fd.name()),
            join_path(at, other.name()),
            names.join(", ")
        ));
    }
    Ok(())
}

/// Sets `value` at `segs` in `msg` (`at` is the path of `msg`).
fn apply(msg: &mut DynamicMessage, segs: &[Seg], value: &Value, at: &str) -> Result<(), String> {
    let Some((Seg::Field(fd), rest)) = segs.split_first() else {
        return Err("a key starts with a field name".into());
    };
    check_oneof(msg, fd, at)?;
    let here = join_path(at, fd.name());
    match rest {
        [] => msg
            .try_set_field(fd, value.clone())
            .map_err(|e| e.to_string()),
        [Seg::Index(i), more @ ..] => {
            let n = match msg.get_field(fd).as_ref() {
                Value::List(l) => l.len(),
                _ => 0,
            };
            if *i >= n {
                return Err(format!(
                    "'{here}[{i}]': the config has {} (indices start at 0)",
                    match n {
                        0 => format!("no {here}"),
                        1 => format!("1 {here} entry"),
                        n => format!("{n} {here} entries"),
                    }
                ));
            }
            let Value::List(items) = msg.get_field_mut(fd) else {
                return Err(format!("'{here}' is not a list"));
            };
            let item = &mut items[*i];
            if more.is_empty() {
                *item = value.clone();
                return Ok(());
            }
            match item {
                Value::Message(m) => apply(m, more, value, &format!("{here}[{i}]")),
                _ => Err(format!("'{here}[{i}]' is not a message")),
            }
        }
        [Seg::Key(k, written), more @ ..] => {
            let Kind::Message(entry) = fd.kind() else {
                return Err(format!("'{here}' is not a map"));
            };
            let value_kind = entry.map_entry_value_field().kind();
            let Value::Map(map) = msg.get_field_mut(fd) else {
                return Err(format!("'{here}' is not a map"));
            };
            let slot = map
                .entry(k.clone())
                .or_insert_with(|| value_kind.default_value());
            if more.is_empty() {
                *slot = value.clone();
                return Ok(());
            }
            match slot {
                Value::Message(m) => apply(m, more, value, &format!("{here}{{{written}}}")),
                _ => Err(format!("'{here}{{{written}}}' is not a message")),
            }
        }
        more => match msg.get_field_mut(fd) {
            Value::Message(m) => apply(m, more, value, &here),
            _ => Err(format!("'{here}' is not a message")),
        },
    }
}

/// A bound value as JSON (enum values by name, messages as objects).
fn value_json(v: &Value, kind: &Kind) -> serde_json::Value {
    use serde_json::Value as J;
    match v {
        Value::Bool(b) => J::Bool(*b),
        Value::I32(x) => (*x).into(),
        Value::I64(x) => (*x).into(),
        Value::U32(x) => (*x).into(),
        Value::U64(x) => (*x).into(),
        // Through the shortest text of the f32, so 0.1 stays 0.1.
        Value::F32(x) => x
            .to_string()
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map_or_else(|| J::String(x.to_string()), J::Number),
        Value::F64(x) => {
            serde_json::Number::from_f64(*x).map_or_else(|| J::String(x.to_string()), J::Number)
        }
        Value::String(s) => J::String(s.clone()),
        Value::Bytes(b) => J::String(String::from_utf8_lossy(b).into_owned()),
        Value::EnumNumber(n) => match kind {
            Kind::Enum(e) => e
                .get_value(*n)
                .map_or_else(|| (*n).into(), |v| J::String(v.name().to_string())),
            _ => (*n).into(),
        },
        Value::Message(m) => {
            let options = prost_reflect::SerializeOptions::new().use_proto_field_name(true);
            m.serialize_with_options(serde_json::value::Serializer, &options)
                .unwrap_or(J::Null)
        }
        Value::List(items) => J::Array(items.iter().map(|i| value_json(i, kind)).collect()),
        Value::Map(map) => {
            let mut keys: Vec<&MapKey> = map.keys().collect();
            keys.sort();
            J::Object(
                keys.into_iter()
                    .map(|k| {
                        let name = match k {
                            MapKey::String(s) => s.clone(),
                            MapKey::Bool(b) => b.to_string(),
                            MapKey::I32(x) => x.to_string(),
                            MapKey::I64(x) => x.to_string(),
                            MapKey::U32(x) => x.to_string(),
                            MapKey::U64(x) => x.to_string(),
                        };
                        (name, value_json(&map[k], kind))
                    })
                    .collect(),
            )
        }
    }
}

/// One row of a sweep.
struct SweepRow {
    /// The value index per axis.
    choice: Vec<usize>,
    outcome: Result<Summary, Vec<String>>,
}

/// `(code, message)` of every error `validate` reports for a config text.
fn config_errors(base: &Loaded, text: &str) -> BTreeSet<(String, String)> {
    let report = crate::validate::check_config_file(
        base.name(),
        text.as_bytes().to_vec(),
        base.model_dir.as_deref(),
        &crate::lint::ServerOptions::default(),
    );
    report
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| (d.code().to_string(), d.message.clone()))
        .collect()
}

fn run_sweep(
    args: &SimulateArgs,
    ctx: &Context,
    out: &mut dyn Write,
    base: &Loaded,
    axes: &[Axis],
    latency: &Latency,
) -> Result<ExitStatus, CommandError> {
    let base_settings = base.settings(base.config())?;
    let base_msg = base
        .parsed
        .message
        .clone()
        .expect("load_config returns bound configs only");
    // Every key must fit the config (indices in range, no other scheduler)
    // before anything runs.
    for a in axes {
        let mut m = base_msg.clone();
        apply(&mut m, &a.path, &a.values[0].1, "")
            .map_err(|e| CommandError::Usage(format!("--sweep: {e}")))?;
    }
    let base_errors = config_errors(base, &crate::pbtxt::printer::print_message(&base_msg));
    let input = TraceInput::new(&args.trace).replayable()?;

    let mut rows = Vec::new();
    let mut choice = vec![0usize; axes.len()];
    let mut warned = false;
    loop {
        let label: Vec<String> = axes
            .iter()
            .zip(&choice)
            .map(|(a, &i)| format!("{}={}", a.key, a.values[i].0))
            .collect();
        let label = label.join(" ");
        let mut msg = base_msg.clone();
        for (a, &i) in axes.iter().zip(&choice) {
            apply(&mut msg, &a.path, &a.values[i].1, "")
                .map_err(|e| CommandError::Usage(format!("--sweep {label}: {e}")))?;
        }
        let text = crate::pbtxt::printer::print_message(&msg);
        let parsed = ParsedConfig::parse(text.clone());
        let mut refused: Vec<String> = parsed
            .diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .map(|d| format!("{}: {}", d.code(), d.message))
            .collect();
        let mut settings = None;
        if let (true, Some(cfg)) = (refused.is_empty(), &parsed.config) {
            refused.extend(
                config_errors(base, &text)
                    .difference(&base_errors)
                    .map(|(code, m)| format!("{code}: {m}")),
            );
            match base.settings_of(cfg) {
                Ok(s) => settings = Some(s),
                Err(e) => refused.push(e),
            }
        }
        let outcome = match settings {
            Some(s) if refused.is_empty() => {
                check_latency(latency, &s, Some(&label))?;
                let mut stats = Stats::new(s.instances, false);
                replay(
                    &s,
                    latency,
                    &input,
                    &mut stats,
                    |_| {},
                    (!warned).then_some(ctx),
                )?;
                warned = true;
                Ok(stats.summary())
            }
            _ => Err(refused),
        };
        rows.push(SweepRow {
            choice: choice.clone(),
            outcome,
        });
        // Next combination, the last key fastest.
        let mut k = axes.len();
        loop {
            if k == 0 {
                break;
            }
            k -= 1;
            choice[k] += 1;
            if choice[k] < axes[k].values.len() {
                break;
            }
            choice[k] = 0;
            if k == 0 {
                k = usize::MAX;
                break;
            }
        }
        if k == usize::MAX {
            break;
        }
    }

    match args.format {
        SimulateFormat::Json => write_sweep_json(out, axes, &rows)?,
        SimulateFormat::Human => write_sweep_human(out, &base_settings, axes, &rows)?,
    }
    out.flush()?;
    Ok(if rows.iter().any(|r| r.outcome.is_err()) {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}

fn write_sweep_json(
    out: &mut dyn Write,
    axes: &[Axis],
    rows: &[SweepRow],
) -> Result<(), CommandError> {
    #[derive(Serialize)]
    struct RowOut<'a> {
        settings: serde_json::Map<String, serde_json::Value>,
        summary: Option<&'a Summary>,
        #[serde(skip_serializing_if = "Option::is_none")]
        refused: Option<&'a [String]>,
    }
    let doc: Vec<RowOut> = rows
        .iter()
        .map(|r| RowOut {
            settings: axes
                .iter()
                .zip(&r.choice)
                .map(|(a, &i)| (a.key.clone(), value_json(&a.values[i].1, &a.kind)))
                .collect(),
            summary: r.outcome.as_ref().ok(),
            refused: r.outcome.as_ref().err().map(Vec::as_slice),
        })
        .collect();
    serde_json::to_writer_pretty(&mut *out, &doc).map_err(std::io::Error::other)?;
    writeln!(out)?;
    Ok(())
}

fn write_sweep_human(
    out: &mut dyn Write,
    base: &Settings,
    axes: &[Axis],
    rows: &[SweepRow],
) -> Result<(), CommandError> {
    use comfy_table::{presets, CellAlignment, Table};
    let refused = rows.iter().filter(|r| r.outcome.is_err()).count();
    writeln!(
        out,
        "model '{}': {} of the same trace{}",
        base.model,
        if rows.len() == 1 {
            "1 setting".to_string()
        } else {
            format!("{} settings", rows.len())
        },
        match refused {
            0 => String::new(),
            1 => ", 1 refused".to_string(),
            n => format!(", {n} refused"),
        }
    )?;
    let mut t = Table::new();
    t.load_preset(presets::UTF8_FULL_CONDENSED);
    let mut header: Vec<String> = axes.iter().map(|a| a.key.clone()).collect();
    let stats_cols = [
        "throughput/s",
        "p50 (µs)",
        "p99 (µs)",
        "queue p50",
        "queue p99",
        "mean batch",
        "ok",
        "rejected",
        "timed out",
    ];
    header.extend(stats_cols.iter().map(|s| s.to_string()));
    if refused > 0 {
        header.push("refused".into());
    }
    t.set_header(header);
    let cell = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
    for r in rows {
        let mut row: Vec<String> = axes
            .iter()
            .zip(&r.choice)
            .map(|(a, &i)| a.values[i].0.clone())
            .collect();
        match &r.outcome {
            Ok(s) => {
                row.extend([
                    format!("{:.1}", s.throughput_per_s),
                    cell(s.latency_us.p50),
                    cell(s.latency_us.p99),
                    cell(s.queue_us.p50),
                    cell(s.queue_us.p99),
                    format!("{:.2}", s.mean_batch_size),
                    s.ok.to_string(),
                    s.rejected.to_string(),
                    s.timed_out.to_string(),
                ]);
                if refused > 0 {
                    row.push(String::new());
                }
            }
            Err(why) => {
                row.extend(stats_cols.iter().map(|_| "-".to_string()));
                let mut note = why.first().cloned().unwrap_or_default();
                if why.len() > 1 {
                    note.push_str(&format!(" (and {} more)", why.len() - 1));
                }
                row.push(note);
            }
        }
        t.add_row(row);
    }
    right_align(
        &mut t,
        axes.len()..axes.len() + stats_cols.len(),
        CellAlignment::Right,
    );
    writeln!(out, "{t}")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_exact_until_many_distinct_values() {
        let mut d = Distribution::default();
        for v in [5, 1, 4, 2, 3] {
            d.push(v);
        }
        assert_eq!(d.percentile(50.0), Some(3));
        assert_eq!(d.percentile(99.0), Some(5));
        assert_eq!(d.percentile(1.0), Some(1));
        assert!(Distribution::default().percentile(50.0).is_none());

        // Past the limit: within 2^-11 of the exact nearest-rank value.
        let mut d = Distribution::default();
        let n = (EXACT_VALUES as u64) * 2;
        for i in 0..n {
            d.push(i * 37 + 1_000_000);
        }
        assert!(d.coarse);
        for p in [50.0, 90.0, 99.0] {
            let rank = ((p / 100.0) * n as f64).ceil() as u64;
            let exact = (rank - 1) * 37 + 1_000_000;
            let got = d.percentile(p).unwrap();
            let err = (got as f64 - exact as f64).abs() / exact as f64;
            assert!(err <= 1.0 / 2048.0, "p{p}: {got} vs {exact}");
        }
    }

    #[test]
    fn buckets_keep_order() {
        let mut last = 0;
        for v in (0..200_000u64).step_by(7).chain([u64::MAX / 3, u64::MAX]) {
            let b = Distribution::bucket(v);
            assert!(b >= last, "{v}");
            last = b;
            let back = Distribution::bucket_value(b);
            let err = (back as f64 - v as f64).abs() / (v.max(1) as f64);
            assert!(err <= 1.0 / 2048.0, "{v} -> {back}");
        }
        assert_eq!(Distribution::bucket(4095), 4095);
    }

    #[test]
    fn sweep_values_split_outside_brackets_and_quotes() {
        assert_eq!(split_values("0, 100 ,500").unwrap(), ["0", "100", "500"]);
        assert_eq!(
            split_values("[4,8],[2],{a: 1, b: 2},\"x,y\"").unwrap(),
            ["[4,8]", "[2]", "{a: 1, b: 2}", "\"x,y\""]
        );
        assert!(split_values("1,,2").is_err());
        assert!(split_values("[1,2").is_err());
        assert!(split_values("\"open").is_err());
    }

    #[test]
    fn sweep_keys_resolve_against_the_schema() {
        let (segs, fd, leaf) = resolve_key("instance_group[0].count").unwrap();
        assert_eq!(segs.len(), 3);
        assert_eq!(fd.name(), "count");
        assert_eq!(leaf, Leaf::Field);
        let (_, fd, leaf) = resolve_key("input[1].dims[0]").unwrap();
        assert_eq!((fd.name(), leaf), ("dims", Leaf::Element));
        let (_, fd, leaf) = resolve_key("parameters{k}.string_value").unwrap();
        assert_eq!((fd.name(), leaf), ("string_value", Leaf::Field));
        let (_, _, leaf) = resolve_key("dynamic_batching.priority_queue_policy{2}").unwrap();
        assert_eq!(leaf, Leaf::MapValue);
        for bad in [
            "",
            ".a",
            "a..b",
            "max_batch_size[0]",
            "instance_group.count",
            "parameters",
            "dynamic_batching.priority_queue_policy{x}",
            "max_batch_size.x",
            "input[0][1]",
            "input[a]",
        ] {
            assert!(resolve_key(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sweep_values_set_the_config() {
        let parsed = ParsedConfig::parse(
            "max_batch_size: 8\ninstance_group [ { count: 1 }, { count: 2 } ]\ndynamic_batching { }\n"
                .into(),
        );
        let base = parsed.message.unwrap();
        let axis = parse_axis("instance_group[1].count=5").unwrap();
        let mut m = base.clone();
        apply(&mut m, &axis.path, &axis.values[0].1, "").unwrap();
        let text = crate::pbtxt::printer::print_message(&m);
        let cfg = ParsedConfig::parse(text).config.unwrap();
        assert_eq!(cfg.instance_group[1].count, 5);
        assert_eq!(cfg.instance_group[0].count, 1);

        let axis =
            parse_axis("dynamic_batching.priority_queue_policy{2}.max_queue_size=3").unwrap();
        let mut m = base.clone();
        apply(&mut m, &axis.path, &axis.values[0].1, "").unwrap();
        let cfg = ParsedConfig::parse(crate::pbtxt::printer::print_message(&m))
            .config
            .unwrap();
        let Some(crate::schema::inference::model_config::SchedulingChoice::DynamicBatching(d)) =
            cfg.scheduling_choice
        else {
            panic!("dynamic batching kept");
        };
        assert_eq!(d.priority_queue_policy[&2].max_queue_size, 3);

        let axis = parse_axis("sequence_batching.direct.max_queue_delay_microseconds=1").unwrap();
        let mut m = base.clone();
        let err = apply(&mut m, &axis.path, &axis.values[0].1, "").unwrap_err();
        assert!(err.contains("dynamic_batching"), "{err}");
    }
}
