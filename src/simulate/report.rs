//! The outputs of one simulated run: one JSON document (every request,
//! every batch, the summary) or summary tables. Both write to a writer
//! and return errors; nothing here prints.

use super::stats::{Stats, Summary};
use super::Error;
use crate::batching::controls::{ControlKind, ControlSpec, ControlTensor};
use crate::batching::{
    BatchRecord, CorrId, RequestRecord, SchedulerKind, Settings, SlotRecord, Status,
};
use crate::text::display::{self, Untrusted};
use serde::Serialize;
use std::io::Write;

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
    /// The composing model (ensembles only).
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<&'a str>,
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

/// The JSON document: the requests in the order `stats` holds them, the
/// batches by id, with their slots for sequence batching and their control
/// tensors when `controls` is given too.
pub fn write_json(
    out: &mut dyn Write,
    stats: &mut Stats,
    summary: &Summary,
    settings: &Settings,
    controls: Option<&ControlSpec>,
) -> Result<(), Error> {
    // The scheduler numbers the instances it gives work to; the output
    // indexes every instance Triton creates (`summary.instances`).
    let listed = |i: usize| settings.active.get(i).copied().unwrap_or(i);
    stats.batches.sort_by_key(|b| b.id);
    let mut batches = Vec::with_capacity(stats.batches.len());
    for b in &stats.batches {
        batches.push(batch_out(b, None, settings, controls)?);
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
                instance: r.instance.map(listed),
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

/// One batch of the model of `settings` as the JSON output lists it: its
/// instance as an index into every instance Triton creates
/// (`summary.instances`), its slots for sequence batching, their control
/// tensors when `controls` is given too.
fn batch_out<'a>(
    b: &'a BatchRecord,
    model: Option<&'a str>,
    settings: &Settings,
    controls: Option<&ControlSpec>,
) -> Result<BatchOut<'a>, Error> {
    let sequence = matches!(
        settings.kind,
        SchedulerKind::Direct(_) | SchedulerKind::Oldest(_)
    );
    // The scheduler numbers the instances it gives work to.
    let listed = |i: usize| settings.active.get(i).copied().unwrap_or(i);
    let controls = match controls {
        Some(spec) if sequence => Some(
            spec.tensors(b.executed_slots())
                .map_err(|e| Error::Input(format!("batch {}: {e}", b.id)))?
                .into_iter()
                .map(ControlOut::new)
                .collect(),
        ),
        _ => None,
    };
    Ok(BatchOut {
        model,
        id: b.id,
        instance: listed(b.instance),
        start_us: b.start_us,
        end_us: b.end_us,
        size: b.size,
        requests: &b.requests,
        slots: sequence.then_some(b.slots.as_slice()),
        controls,
    })
}

/// A composing model's batches as [`write_ensemble_json`] lists them.
pub struct ModelBatches<'a> {
    pub model: &'a str,
    pub settings: &'a Settings,
    pub controls: Option<&'a ControlSpec>,
    pub batches: &'a [BatchRecord],
}

#[derive(Serialize)]
struct EnsembleRequestOut<'a> {
    id: &'a str,
    sequence_id: &'a Option<CorrId>,
    arrival_us: u64,
    end_us: Option<u64>,
    status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: &'a Option<String>,
}

#[derive(Serialize)]
struct EnsembleDocument<'a, S: Serialize> {
    requests: Vec<EnsembleRequestOut<'a>>,
    batches: Vec<BatchOut<'a>>,
    summary: &'a S,
}

/// The JSON document of an ensemble run: the ensemble requests in the
/// order given, every composing model's batches (each naming its model)
/// by start time, then model, then id, and the summary.
pub fn write_ensemble_json<S: Serialize>(
    out: &mut dyn Write,
    requests: &[RequestRecord],
    models: &[ModelBatches],
    summary: &S,
) -> Result<(), Error> {
    let mut keyed: Vec<(u64, usize, u64, BatchOut)> = Vec::new();
    for (m, mb) in models.iter().enumerate() {
        for b in mb.batches {
            keyed.push((
                b.start_us,
                m,
                b.id,
                batch_out(b, Some(mb.model), mb.settings, mb.controls)?,
            ));
        }
    }
    keyed.sort_by_key(|k| (k.0, k.1, k.2));
    let doc = EnsembleDocument {
        requests: requests
            .iter()
            .map(|r| EnsembleRequestOut {
                id: &r.id,
                sequence_id: &r.sequence_id,
                arrival_us: r.arrival_us,
                end_us: r.end_us,
                status: r.status,
                reason: &r.reason,
            })
            .collect(),
        batches: keyed.into_iter().map(|k| k.3).collect(),
        summary,
    };
    serde_json::to_writer_pretty(&mut *out, &doc).map_err(std::io::Error::other)?;
    writeln!(out)?;
    Ok(())
}

/// The summary tables of one run of the model of `settings`; names and
/// reasons from the input are shown escaped ([`crate::text::display`]).
pub fn write_human(out: &mut dyn Write, settings: &Settings, s: &Summary) -> Result<(), Error> {
    use comfy_table::CellAlignment;
    let scheduler = match &settings.kind {
        SchedulerKind::Default => "default (no batching)",
        SchedulerKind::Dynamic(_) => "dynamic batching",
        SchedulerKind::Direct(_) => "sequence batching (direct)",
        SchedulerKind::Oldest(_) => "sequence batching (oldest)",
    };
    let passive = settings
        .instance_list
        .len()
        .saturating_sub(settings.instances);
    writeln!(
        out,
        "model '{}': {scheduler}, max_batch_size {}, {} instance{}{}",
        Untrusted(&settings.model),
        settings.max_batch_size,
        settings.instances,
        if settings.instances == 1 { "" } else { "s" },
        if passive > 0 {
            format!(" (and {passive} passive, never given work)")
        } else {
            String::new()
        }
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

    write_latency_table(
        out,
        &[
            ("total", s.latency_us),
            ("queue", s.queue_us),
            ("compute", s.compute_us),
        ],
    )?;

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
    t.set_header(vec![
        "instance",
        "name",
        "device",
        "batches",
        "busy (µs)",
        "utilisation",
    ]);
    for i in &s.instances {
        let name = if i.passive {
            format!("{} (passive)", display::escape(&i.name))
        } else {
            display::escape(&i.name).into_owned()
        };
        t.add_row(vec![
            i.instance.to_string(),
            name,
            i.device.clone(),
            i.batches.to_string(),
            i.busy_us.to_string(),
            format!("{:.1}%", 100.0 * i.utilization),
        ]);
    }
    right_align(&mut t, 0..1, CellAlignment::Right);
    right_align(&mut t, 3..6, CellAlignment::Right);
    writeln!(out, "{t}")?;

    write_reasons_table(out, &s.reasons)?;
    Ok(())
}

/// A summary table in the layout every simulate table uses.
pub fn new_table() -> comfy_table::Table {
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
    t
}

/// The latency table: one row per (name, percentiles).
pub fn write_latency_table(
    out: &mut dyn Write,
    rows: &[(&str, super::stats::Percentiles)],
) -> Result<(), Error> {
    let cell = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
    let mut t = new_table();
    t.set_header(vec!["latency (µs)", "p50", "p90", "p95", "p99"]);
    for (name, p) in rows {
        t.add_row(vec![
            name.to_string(),
            cell(p.p50),
            cell(p.p90),
            cell(p.p95),
            cell(p.p99),
        ]);
    }
    right_align(&mut t, 1..5, comfy_table::CellAlignment::Right);
    writeln!(out, "{t}")?;
    Ok(())
}

/// The table of rejection and timeout reasons (nothing when there are
/// none). Reasons quote the trace (a sequence's id) and the config, so
/// they are shown escaped.
pub fn write_reasons_table(
    out: &mut dyn Write,
    reasons: &[super::stats::ReasonCount],
) -> Result<(), Error> {
    if reasons.is_empty() {
        return Ok(());
    }
    let mut t = new_table();
    t.set_header(vec!["status", "count", "reason"]);
    for r in reasons {
        t.add_row(vec![
            r.status.replace('_', " "),
            r.count.to_string(),
            display::escape(&r.reason).into_owned(),
        ]);
    }
    writeln!(out, "{t}")?;
    Ok(())
}

/// Aligns the cells of the columns `cols`.
pub fn right_align(
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
