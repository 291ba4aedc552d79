//! `tritonctl simulate --config CONFIG --trace FILE|- --latency SPEC`.
//!
//! Parses and binds the config (syntax or schema errors are shown as
//! `validate` shows them, exit 1), derives the scheduler settings, streams
//! the trace through `crate::batching::simulate` and prints either summary
//! tables or one JSON document (every request, every batch, a summary).
//! A bad trace line stops the run with `FILE:LINE: message` and exit 2;
//! nothing is printed on standard output then.

use super::{CommandError, Context, ExitStatus};
use crate::batching::{
    self, BatchRecord, CorrId, Latency, RequestRecord, SchedulerKind, Settings, Sink, SlotRecord,
    Status,
};
use crate::cli::{SimulateArgs, SimulateFormat};
use crate::config::ParsedConfig;
use crate::diagnostics::Severity;
use crate::trace::{TraceError, TraceReader};
use crate::validate::{FileReport, Report};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::{BufRead, Write};
use std::path::Path;

pub fn run(
    args: &SimulateArgs,
    ctx: &Context,
    out: &mut dyn Write,
) -> Result<ExitStatus, CommandError> {
    let latency = read_latency(&args.latency)?;
    let Some(settings) = load_settings(&args.config, ctx)? else {
        return Ok(ExitStatus::Failure);
    };
    let largest = settings.max_batch_size.clamp(1, 4096);
    if let Some(b) = (1..=largest).find(|&b| latency.eval(b) > crate::trace::MAX_TIME_US) {
        return Err(CommandError::Usage(format!(
            "--latency: {} µs for a batch of {b} is too large (at most {})",
            latency.eval(b),
            crate::trace::MAX_TIME_US
        )));
    }
    let sequence = matches!(
        settings.kind,
        SchedulerKind::Direct(_) | SchedulerKind::Oldest(_)
    );
    let mut stats = Stats::new(settings.instances, args.format == SimulateFormat::Json);

    let (input, name): (Box<dyn BufRead>, String) = if args.trace.as_os_str() == "-" {
        (Box::new(std::io::stdin().lock()), "<stdin>".into())
    } else {
        let name = args.trace.display().to_string();
        let f = std::fs::File::open(&args.trace).map_err(|e| {
            CommandError::Input(format!(
                "{name}: cannot read: {}",
                super::convert::io_words(&e)
            ))
        })?;
        (Box::new(std::io::BufReader::new(f)), name)
    };
    let mut reader = TraceReader::new(input, name);
    let mut failure: Option<TraceError> = None;
    // JSON lists the requests in trace order: remember where each id came.
    let keep = stats.keep;
    let mut order: HashMap<String, VecDeque<usize>> = HashMap::new();
    let mut position = 0usize;
    {
        let requests = std::iter::from_fn(|| match reader.next_request()? {
            Ok(r) => {
                if keep {
                    order.entry(r.id.clone()).or_default().push_back(position);
                    position += 1;
                }
                Some(r)
            }
            Err(e) => {
                failure = Some(e);
                None
            }
        });
        batching::simulate(&settings, &latency, requests, &mut stats);
    }
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
    if let Some(e) = failure {
        return Err(CommandError::Input(e.to_string()));
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
        SimulateFormat::Json => write_json(out, &mut stats, &summary, sequence)?,
        SimulateFormat::Human => write_human(out, &settings, &summary)?,
    }
    out.flush()?;
    Ok(ExitStatus::Success)
}

/// `--latency`: a specification, or a file holding one (one point or
/// term per line, `#` comments allowed).
fn read_latency(spec: &str) -> Result<Latency, CommandError> {
    let path = Path::new(spec);
    if !spec.is_empty() && path.is_file() {
        let text = std::fs::read_to_string(path).map_err(|e| {
            CommandError::Input(format!(
                "{spec}: cannot read: {}",
                super::convert::io_words(&e)
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

/// Reads, parses and binds the config; `None` after showing its errors.
fn load_settings(path: &Path, ctx: &Context) -> Result<Option<Settings>, CommandError> {
    let file = if path.is_dir() {
        let f = path.join("config.pbtxt");
        if !f.is_file() {
            return Err(CommandError::Input(format!(
                "{}: a directory without a config.pbtxt",
                path.display()
            )));
        }
        f
    } else {
        path.to_path_buf()
    };
    let name = file.display().to_string();
    let bytes = std::fs::read(&file).map_err(|e| {
        CommandError::Input(format!(
            "{name}: cannot read: {}",
            super::convert::io_words(&e)
        ))
    })?;
    let parsed = ParsedConfig::from_bytes(bytes);
    let errors = parsed
        .diagnostics
        .iter()
        .any(|d| d.severity == Severity::Error);
    let Some(mut cfg) = parsed.config.clone().filter(|_| !errors) else {
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
    };
    if cfg.name.is_empty() {
        if let Some(dir) = file.parent().and_then(|d| d.file_name()) {
            cfg.name = dir.to_string_lossy().into_owned();
        }
    }
    crate::config::normalize::normalize(&mut cfg);
    Settings::from_config(&cfg)
        .map(Some)
        .map_err(|e| CommandError::Input(format!("{name}: {e}")))
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
    latency: Vec<u64>,
    queue: Vec<u64>,
    compute: Vec<u64>,
    first_arrival: Option<u64>,
    last_end: u64,
    sizes: BTreeMap<u32, u64>,
    busy_us: Vec<u64>,
    instance_batches: Vec<u64>,
    reasons: BTreeMap<(&'static str, String), u64>,
}

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
            latency: Vec::new(),
            queue: Vec::new(),
            compute: Vec::new(),
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
            let reason = r.reason.clone().unwrap_or_default();
            *self.reasons.entry((label, reason)).or_default() += 1;
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

#[derive(Serialize, Clone, Copy)]
struct Percentiles {
    p50: Option<u64>,
    p90: Option<u64>,
    p95: Option<u64>,
    p99: Option<u64>,
}

/// Nearest-rank percentiles.
fn percentiles(v: &mut [u64]) -> Percentiles {
    v.sort_unstable();
    let at = |p: f64| -> Option<u64> {
        if v.is_empty() {
            return None;
        }
        let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
        Some(v[rank.clamp(1, v.len()) - 1])
    };
    Percentiles {
        p50: at(50.0),
        p90: at(90.0),
        p95: at(95.0),
        p99: at(99.0),
    }
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
    /// From the first arrival to the last response.
    duration_us: u64,
    batches: u64,
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
        Summary {
            requests: self.total,
            ok: self.ok,
            rejected: self.rejected,
            timed_out: self.timed_out,
            throughput_per_s,
            latency_us: percentiles(&mut self.latency),
            queue_us: percentiles(&mut self.queue),
            compute_us: percentiles(&mut self.compute),
            duration_us,
            batches: self.sizes.values().sum(),
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
) -> Result<(), CommandError> {
    stats.batches.sort_by_key(|b| b.id);
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
        batches: stats
            .batches
            .iter()
            .map(|b| BatchOut {
                id: b.id,
                instance: b.instance,
                start_us: b.start_us,
                end_us: b.end_us,
                size: b.size,
                requests: &b.requests,
                slots: sequence.then_some(b.slots.as_slice()),
            })
            .collect(),
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
