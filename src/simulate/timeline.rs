//! `simulate --timeline`: a picture of a simulated run as an SVG document,
//! in the manner of the sequence-batcher figures of Triton's documentation.
//!
//! * Sequence batching (Direct, Oldest): one lane per instance × slot
//!   (candidate slot for Oldest), time to the right, one rectangle per
//!   request execution in the lane of its slot, filled with the colour of
//!   its sequence and labelled with the request id (or its step in the
//!   sequence) when the label fits. Direct padding entries are not drawn.
//! * Dynamic batcher and default scheduler: one lane per instance, one
//!   rectangle per execution, shaded by batch size and labelled with it.
//! * Optionally every executed request's queue wait (arrival to start of
//!   its execution) as a thin bar under the execution, in the same lane.
//!
//! Memory stays bounded on long runs: [`Collector`] is a [`Sink`] that
//! keeps only executions overlapping a time window, at most
//! [`Options::max_batches`] of them (the first ones), and the requests they
//! ran; the picture says when executions were left out. [`render`] is a pure
//! function of the collected records and the settings: the same input gives
//! the same bytes. Colours come from a fixed palette, given to sequences in
//! the order they first appear in the picture, so sequences drawn near each
//! other never share a colour unless more than the palette's size are
//! drawn.

use crate::batching::{BatchRecord, CorrId, RequestRecord, SchedulerKind, Settings, Sink, Status};
use crate::svg::{self, cut, human_time, text_width, xml_escape, PALETTE};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;

/// Executions drawn at most unless told otherwise.
pub const DEFAULT_MAX_BATCHES: usize = 2000;

/// Lanes drawn when every lane is shown; with more lanes only the ones
/// used in the drawn window appear.
pub const MAX_LANES: usize = 128;

/// Sequences named in the legend at most.
pub const MAX_LEGEND: usize = 32;

/// A time range in µs: `[start_us, end_us)`, `end_us: None` = open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub start_us: u64,
    pub end_us: Option<u64>,
}

impl Window {
    /// Parses `START_US:END_US`; either side may be left empty
    /// (`:5000`, `1000:`).
    pub fn parse(text: &str) -> Result<Window, String> {
        let (a, b) = text
            .split_once(':')
            .ok_or_else(|| format!("expected START_US:END_US, got '{text}'"))?;
        let num = |s: &str, what: &str| -> Result<Option<u64>, String> {
            let s = s.trim();
            if s.is_empty() {
                return Ok(None);
            }
            s.parse::<u64>()
                .map(Some)
                .map_err(|_| format!("{what} '{s}' is not a whole number of microseconds"))
        };
        let start_us = num(a, "start")?.unwrap_or(0);
        let end_us = num(b, "end")?;
        if let Some(e) = end_us {
            if e <= start_us {
                return Err(format!(
                    "the end ({e}) must be later than the start ({start_us})"
                ));
            }
        }
        Ok(Window { start_us, end_us })
    }

    /// Whether an execution `[s, e)` is (partly) inside; an execution of
    /// no duration counts when its instant is.
    pub fn overlaps(&self, s: u64, e: u64) -> bool {
        let before_end = self.end_us.is_none_or(|end| s < end);
        before_end && (e > self.start_us || s >= self.start_us)
    }
}

/// What to draw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Only executions overlapping this range; `None` = all.
    pub window: Option<Window>,
    /// At most this many executions (the first ones in the window).
    pub max_batches: usize,
    /// Draw each request's queue wait as a thin bar.
    pub queue_waits: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            window: None,
            max_batches: DEFAULT_MAX_BATCHES,
            queue_waits: false,
        }
    }
}

/// The records a picture is drawn from.
#[derive(Debug, Clone, Default)]
pub struct Timeline {
    pub options: Options,
    /// The executions drawn.
    pub batches: Vec<BatchRecord>,
    /// The executed requests of those batches.
    pub requests: Vec<RequestRecord>,
    /// Executions overlapping the window, drawn or not.
    pub total_batches: u64,
    /// Requests rejected or timed out inside the window (not drawn).
    pub failed: u64,
}

/// A [`Sink`] that keeps what [`render`] needs and nothing more.
#[derive(Debug, Default)]
pub struct Collector {
    tl: Timeline,
    kept: HashSet<u64>,
    /// Executed requests whose batch record has not come yet.
    pending: Vec<RequestRecord>,
}

impl Collector {
    pub fn new(options: Options) -> Self {
        Collector {
            tl: Timeline {
                options,
                ..Timeline::default()
            },
            kept: HashSet::new(),
            pending: Vec::new(),
        }
    }

    fn window(&self) -> Window {
        self.tl.options.window.unwrap_or(Window {
            start_us: 0,
            end_us: None,
        })
    }

    fn full(&self) -> bool {
        self.tl.batches.len() >= self.tl.options.max_batches
    }

    pub fn observe_request(&mut self, r: &RequestRecord) {
        let w = self.window();
        if r.status != Status::Ok {
            let at = r.end_us.unwrap_or(r.arrival_us);
            if w.overlaps(at, at) {
                self.tl.failed += 1;
            }
            return;
        }
        let (Some(batch), Some(s)) = (r.batch, r.start_us) else {
            return;
        };
        if self.kept.contains(&batch) {
            self.tl.requests.push(r.clone());
        } else if !self.full() && w.overlaps(s, r.end_us.unwrap_or(s)) {
            self.pending.push(r.clone());
        }
    }

    pub fn observe_batch(&mut self, b: &BatchRecord) {
        let keep = if self.window().overlaps(b.start_us, b.end_us) {
            self.tl.total_batches += 1;
            !self.full()
        } else {
            false
        };
        if keep {
            self.kept.insert(b.id);
            self.tl.batches.push(b.clone());
        }
        if !self.pending.is_empty() {
            let pending = std::mem::take(&mut self.pending);
            for r in pending {
                if r.batch != Some(b.id) {
                    self.pending.push(r);
                } else if keep {
                    self.tl.requests.push(r);
                }
            }
        }
    }

    pub fn finish(self) -> Timeline {
        self.tl
    }
}

impl Sink for Collector {
    fn request(&mut self, r: RequestRecord) {
        self.observe_request(&r);
    }
    fn batch(&mut self, b: BatchRecord) {
        self.observe_batch(&b);
    }
}

/// Palette colours for the sequences of `batches`, in order of first
/// appearance (the palette repeats after [`PALETTE`]`.len()` sequences).
pub fn sequence_colours<'a>(
    batches: impl IntoIterator<Item = &'a BatchRecord>,
) -> HashMap<CorrId, &'static str> {
    let mut colours = HashMap::new();
    for b in batches {
        for e in &b.slots {
            if let (Some(_), Some(id)) = (&e.request, &e.sequence_id) {
                let next = PALETTE[colours.len() % PALETTE.len()];
                colours.entry(id.clone()).or_insert(next);
            }
        }
    }
    colours
}

/// Fill for a batch of `size` on a light-to-dark blue scale up to `max`,
/// and whether a label on it should be white.
pub fn size_colour(size: u32, max: u32) -> (String, bool) {
    let max = max.max(1);
    let t = if max == 1 {
        1.0
    } else {
        f64::from(size.clamp(1, max) - 1) / f64::from(max - 1)
    };
    svg::shade(t)
}

const WIDTH: f64 = 1200.0;
const LEFT: f64 = 130.0;
const RIGHT: f64 = 24.0;
const PLOT_W: f64 = WIDTH - LEFT - RIGHT;
const BAR_H: f64 = 16.0;
const LABEL_SIZE: f64 = 10.0;

/// One drawn lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct Lane {
    instance: usize,
    /// `None` for instance lanes (dynamic batcher, default scheduler).
    slot: Option<usize>,
}

fn scheduler_name(kind: &SchedulerKind) -> &'static str {
    match kind {
        SchedulerKind::Default => "default scheduler (no batching)",
        SchedulerKind::Dynamic(_) => "dynamic batching",
        SchedulerKind::Direct(_) => "sequence batching (direct)",
        SchedulerKind::Oldest(_) => "sequence batching (oldest)",
    }
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Draws `tl` for the model of `settings` as a standalone SVG document.
pub fn render(settings: &Settings, tl: &Timeline) -> String {
    let sequence_slots = match &settings.kind {
        SchedulerKind::Direct(_) => Some(settings.max_batch_size.max(1) as usize),
        SchedulerKind::Oldest(o) => Some(o.max_candidate_sequences.max(1)),
        _ => None,
    };
    let mut batches: Vec<&BatchRecord> = tl.batches.iter().collect();
    batches.sort_by_key(|b| (b.start_us, b.id));
    let requests: HashMap<&str, &RequestRecord> =
        tl.requests.iter().map(|r| (r.id.as_str(), r)).collect();

    // Lanes: every one, unless there are too many.
    let instances = settings.instances.max(1);
    let per_instance = sequence_slots.unwrap_or(1);
    let all_lanes = instances.saturating_mul(per_instance);
    let lane_of_entry = |inst: usize, slot: usize| Lane {
        instance: inst,
        slot: sequence_slots.map(|_| slot),
    };
    let lanes: Vec<Lane> = if all_lanes <= MAX_LANES {
        (0..instances)
            .flat_map(|i| (0..per_instance).map(move |s| (i, s)))
            .map(|(i, s)| lane_of_entry(i, s))
            .collect()
    } else {
        let mut used = BTreeSet::new();
        for b in &batches {
            if sequence_slots.is_some() {
                for e in b.slots.iter().filter(|e| e.request.is_some()) {
                    used.insert(lane_of_entry(b.instance, e.slot));
                }
            } else {
                used.insert(lane_of_entry(b.instance, 0));
            }
        }
        used.into_iter().collect()
    };
    let lane_index: HashMap<Lane, usize> = lanes.iter().enumerate().map(|(i, &l)| (l, i)).collect();

    // Time range.
    let window = tl.options.window;
    let waits = tl.options.queue_waits;
    let first = batches.iter().map(|b| b.start_us).min();
    let earliest_arrival = if waits {
        tl.requests.iter().map(|r| r.arrival_us).min()
    } else {
        None
    };
    let t0 = match (window, first, earliest_arrival) {
        (Some(w), ..) => w.start_us,
        (None, Some(a), Some(b)) => a.min(b),
        (None, Some(a), None) => a,
        (None, None, _) => 0,
    };
    let last = batches.iter().map(|b| b.end_us.max(b.start_us)).max();
    let t1 = match window.and_then(|w| w.end_us) {
        Some(e) => e,
        None => last.unwrap_or(t0),
    };
    let t1 = if t1 <= t0 { t0 + 1_000 } else { t1 };
    let g = svg::TimeScale {
        t0,
        t1,
        left: LEFT,
        width: PLOT_W,
    };

    // Header.
    let title = format!(
        "model '{}': {}",
        settings.model,
        scheduler_name(&settings.kind)
    );
    let mut sub = format!(
        "max_batch_size {}, {}",
        settings.max_batch_size,
        plural(instances as u64, "instance", "instances")
    );
    if let Some(n) = sequence_slots {
        let _ = write!(sub, " × {}", plural(n as u64, "slot", "slots"));
    }
    let _ = write!(
        sub,
        "; {} from {} to {}",
        plural(batches.len() as u64, "execution", "executions"),
        human_time(t0),
        human_time(t1)
    );
    let mut notes = Vec::new();
    if (batches.len() as u64) < tl.total_batches {
        notes.push(format!(
            "Only the first {} of {} executions{} are drawn (the cap on drawn executions was reached).",
            batches.len(),
            tl.total_batches,
            if window.is_some() { " in the window" } else { "" }
        ));
    }
    if lanes.len() < all_lanes {
        notes.push(format!(
            "{} of {} lanes are drawn: the ones used in this picture.",
            lanes.len(),
            all_lanes
        ));
    }
    if tl.failed > 0 {
        notes.push(format!(
            "{} rejected or timed out (not drawn).",
            plural(tl.failed, "request was", "requests were")
        ));
    }

    let lane_h = if waits { 28.0 } else { 24.0 };
    let gap = if sequence_slots.is_some() { 8.0 } else { 0.0 };
    let top = 58.0 + 16.0 * notes.len() as f64;
    let mut lane_y = Vec::with_capacity(lanes.len());
    let mut y = top;
    for (i, l) in lanes.iter().enumerate() {
        if i > 0 && lanes[i - 1].instance != l.instance {
            y += gap;
        }
        lane_y.push(y);
        y += lane_h;
    }
    let plot_bottom = y;

    // Legend entries: sequences in order of first appearance, or sizes.
    let mut legend: Vec<(String, String)> = Vec::new();
    let mut legend_more = 0usize;
    let max_size = settings
        .max_batch_size
        .max(batches.iter().map(|b| b.size).max().unwrap_or(1));
    let colours = sequence_colours(batches.iter().copied());
    if sequence_slots.is_some() {
        let mut seen = HashSet::new();
        for b in &batches {
            for e in &b.slots {
                if let (Some(_), Some(id)) = (&e.request, &e.sequence_id) {
                    if seen.insert(id.clone()) {
                        if legend.len() < MAX_LEGEND {
                            legend.push((
                                colours[id].to_string(),
                                format!("sequence {}", cut(&id.to_string(), 14)),
                            ));
                        } else {
                            legend_more += 1;
                        }
                    }
                }
            }
        }
    } else {
        let sizes: BTreeSet<u32> = batches.iter().map(|b| b.size).collect();
        for s in sizes {
            if legend.len() < MAX_LEGEND {
                legend.push((size_colour(s, max_size).0, format!("batch size {s}")));
            } else {
                legend_more += 1;
            }
        }
    }
    let per_row = 7usize;
    let legend_top = plot_bottom + 56.0;
    let legend_rows = legend.len().div_ceil(per_row) + usize::from(legend_more > 0);
    let height = (legend_top + 18.0 * legend_rows as f64 + 14.0).ceil();

    let mut o = String::with_capacity(4096 + batches.len() * 256);
    svg::begin(&mut o, WIDTH, height, &title);
    svg::heading(&mut o, LEFT, &title, &sub);
    for (i, n) in notes.iter().enumerate() {
        let _ = writeln!(
            o,
            "<text class=\"note\" x=\"{LEFT}\" y=\"{}\" font-size=\"12\" fill=\"#b03a2e\">{}</text>",
            58 + 16 * i,
            xml_escape(n)
        );
    }

    // Lane backgrounds and names.
    let _ = writeln!(o, "<g class=\"lanes-background\">");
    for (i, l) in lanes.iter().enumerate() {
        let fill = if i % 2 == 0 { "#f4f5f7" } else { "#fafbfc" };
        let _ = writeln!(
            o,
            "<rect x=\"{LEFT}\" y=\"{:.1}\" width=\"{PLOT_W}\" height=\"{lane_h}\" fill=\"{fill}\"/>",
            lane_y[i]
        );
        // Lanes are the scheduler's instances; the label numbers them as
        // `summary.instances` does (passive instances included).
        let listed = settings
            .active
            .get(l.instance)
            .copied()
            .unwrap_or(l.instance);
        let name = match l.slot {
            Some(s) => format!("instance {listed} · slot {s}"),
            None => format!("instance {listed}"),
        };
        let _ = writeln!(
            o,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"end\" fill=\"#333333\">{}</text>",
            LEFT - 8.0,
            lane_y[i] + 3.0 + BAR_H * 0.75,
            xml_escape(&name)
        );
    }
    let _ = writeln!(o, "</g>");

    // Grid and axis.
    let axis_y = plot_bottom + 6.0;
    svg::time_axis(&mut o, &g, top, axis_y);

    // Executions (and waits), lane by lane.
    let mut per_lane: Vec<String> = vec![String::new(); lanes.len()];
    let mut step_of: HashMap<&CorrId, u64> = HashMap::new();
    for b in &batches {
        let x0 = g.x(b.start_us);
        let x1 = g.x(b.end_us.max(b.start_us));
        let w = (x1 - x0).max(0.8);
        let span = format!("{}–{} µs", b.start_us, b.end_us);
        if sequence_slots.is_some() {
            for e in &b.slots {
                let Some(req) = &e.request else { continue };
                let lane = lane_of_entry(b.instance, e.slot);
                let Some(&li) = lane_index.get(&lane) else {
                    continue;
                };
                let y = lane_y[li] + 3.0;
                let out = &mut per_lane[li];
                let step = e.sequence_id.as_ref().map(|id| {
                    let n = step_of.entry(id).or_insert(0);
                    *n = if e.start { 1 } else { *n + 1 };
                    *n
                });
                if waits {
                    if let Some(r) = requests.get(req.as_str()) {
                        push_wait(out, &g, r.arrival_us, b.start_us, y + BAR_H + 2.0);
                    }
                }
                let fill = e
                    .sequence_id
                    .as_ref()
                    .and_then(|id| colours.get(id).copied())
                    .unwrap_or("#cccccc");
                let seq = e
                    .sequence_id
                    .as_ref()
                    .map_or(String::new(), ToString::to_string);
                let mut flags = String::new();
                if e.start {
                    flags.push_str(" · START");
                }
                if e.end {
                    flags.push_str(" · END");
                }
                let _ = write!(
                    out,
                    "<rect class=\"exec\" data-batch=\"{}\" data-request=\"{}\" data-sequence=\"{}\" x=\"{x0:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{BAR_H}\" fill=\"{fill}\" stroke=\"#ffffff\" stroke-width=\"0.5\">",
                    b.id,
                    xml_escape(req),
                    xml_escape(&seq)
                );
                let _ = writeln!(
                    out,
                    "<title>{}</title></rect>",
                    xml_escape(&format!(
                        "request {req} · sequence {seq}{} · {span}{flags}",
                        step.map_or(String::new(), |n| format!(" step {n}"))
                    ))
                );
                let label = [Some(req.clone()), step.map(|n| n.to_string())]
                    .into_iter()
                    .flatten()
                    .find(|l| text_width(l, LABEL_SIZE) + 4.0 <= w);
                if let Some(l) = label {
                    push_label(out, x0 + w / 2.0, y, &l, "#1a1a1a");
                }
            }
        } else {
            let lane = lane_of_entry(b.instance, 0);
            let Some(&li) = lane_index.get(&lane) else {
                continue;
            };
            let y = lane_y[li] + 3.0;
            let out = &mut per_lane[li];
            if waits {
                for id in &b.requests {
                    if let Some(r) = requests.get(id.as_str()) {
                        push_wait(out, &g, r.arrival_us, b.start_us, y + BAR_H + 2.0);
                    }
                }
            }
            let (fill, dark) = size_colour(b.size, max_size);
            let mut ids: Vec<&str> = b.requests.iter().take(16).map(String::as_str).collect();
            if b.requests.len() > 16 {
                ids.push("…");
            }
            let _ = write!(
                out,
                "<rect class=\"exec\" data-batch=\"{}\" data-size=\"{}\" x=\"{x0:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{BAR_H}\" fill=\"{fill}\" stroke=\"#ffffff\" stroke-width=\"0.5\">",
                b.id, b.size
            );
            let _ = writeln!(
                out,
                "<title>{}</title></rect>",
                xml_escape(&format!(
                    "batch {} · size {} · {span} · {}",
                    b.id,
                    b.size,
                    ids.join(" ")
                ))
            );
            let l = b.size.to_string();
            if text_width(&l, LABEL_SIZE) + 4.0 <= w {
                push_label(
                    out,
                    x0 + w / 2.0,
                    y,
                    &l,
                    if dark { "#ffffff" } else { "#1a1a1a" },
                );
            }
        }
    }
    for (i, l) in lanes.iter().enumerate() {
        let _ = write!(o, "<g class=\"lane\" data-instance=\"{}\"", l.instance);
        if let Some(s) = l.slot {
            let _ = write!(o, " data-slot=\"{s}\"");
        }
        let _ = writeln!(o, ">");
        o.push_str(&per_lane[i]);
        let _ = writeln!(o, "</g>");
    }

    // Legend.
    let _ = writeln!(o, "<g class=\"legend\" font-size=\"11\" fill=\"#333333\">");
    let col_w = PLOT_W / per_row as f64;
    for (i, (fill, label)) in legend.iter().enumerate() {
        let x = LEFT + (i % per_row) as f64 * col_w;
        let y = legend_top + (i / per_row) as f64 * 18.0;
        svg::legend_key(&mut o, x, y, fill, label);
    }
    if legend_more > 0 {
        let y = legend_top + legend.len().div_ceil(per_row) as f64 * 18.0;
        let what = if sequence_slots.is_some() {
            "sequences"
        } else {
            "batch sizes"
        };
        let _ = writeln!(
            o,
            "<text class=\"legend-more\" x=\"{LEFT}\" y=\"{y:.1}\">… and {legend_more} more {what}</text>"
        );
    }
    let _ = writeln!(o, "</g>");
    svg::end(&mut o);
    o
}

fn push_wait(out: &mut String, g: &svg::TimeScale, arrival: u64, start: u64, y: f64) {
    if start <= arrival {
        return;
    }
    let x0 = g.x(arrival);
    let x1 = g.x(start);
    if x1 <= x0 {
        return;
    }
    let _ = writeln!(
        out,
        "<rect class=\"wait\" x=\"{x0:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"3\" fill=\"#8a8f98\" fill-opacity=\"0.6\"><title>queued {} µs</title></rect>",
        x1 - x0,
        start - arrival
    );
}

fn push_label(out: &mut String, x: f64, y: f64, text: &str, fill: &str) {
    let _ = writeln!(
        out,
        "<text class=\"label\" x=\"{x:.1}\" y=\"{:.1}\" font-size=\"{LABEL_SIZE}\" text-anchor=\"middle\" fill=\"{fill}\">{}</text>",
        y + BAR_H * 0.72,
        xml_escape(text)
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batching::{simulate, Latency, Request, SlotRecord};

    fn settings(cfg: &str) -> Settings {
        let parsed = crate::config::ParsedConfig::parse(cfg.to_string());
        let mut c = parsed.config.expect("config binds");
        crate::config::normalize::normalize(&mut c);
        Settings::from_config(&c).unwrap()
    }

    #[test]
    fn windows_parse_and_overlap() {
        let w = Window::parse("100:200").unwrap();
        assert_eq!(
            w,
            Window {
                start_us: 100,
                end_us: Some(200)
            }
        );
        assert!(w.overlaps(50, 150));
        assert!(w.overlaps(150, 150));
        assert!(!w.overlaps(200, 300));
        assert!(!w.overlaps(0, 100));
        assert!(w.overlaps(100, 100));
        assert_eq!(Window::parse(":5").unwrap().start_us, 0);
        assert_eq!(Window::parse("5:").unwrap().end_us, None);
        for bad in ["", "5", "a:b", "10:10", "10:5", "-1:5"] {
            assert!(Window::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn colours_are_stable_and_spread() {
        let slot = |id: u64| crate::batching::SlotRecord {
            slot: 0,
            request: Some(format!("r{id}")),
            sequence_id: Some(CorrId::Int(id)),
            start: false,
            end: false,
            ready: true,
            corrid: CorrId::Int(id),
        };
        let batch = |ids: &[u64]| BatchRecord {
            id: 0,
            instance: 0,
            start_us: 0,
            end_us: 1,
            size: ids.len() as u32,
            requests: Vec::new(),
            slots: ids.iter().map(|&i| slot(i)).collect(),
        };
        let bs = [
            batch(&[9, 3]),
            batch(&[3, 40]),
            batch(&(100..130).collect::<Vec<_>>()),
        ];
        let c = sequence_colours(&bs);
        // First appearance order: 9, 3, 40, then 100.. .
        assert_eq!(c[&CorrId::Int(9)], PALETTE[0]);
        assert_eq!(c[&CorrId::Int(3)], PALETTE[1]);
        assert_eq!(c[&CorrId::Int(40)], PALETTE[2]);
        let first: HashSet<&str> = [9, 3, 40]
            .into_iter()
            .chain(100..100 + PALETTE.len() as u64 - 3)
            .map(|i| c[&CorrId::Int(i)])
            .collect();
        assert_eq!(
            first.len(),
            PALETTE.len(),
            "the first sequences never share"
        );
        let (light, dark_label) = size_colour(1, 8);
        let (dark, white_label) = size_colour(8, 8);
        assert_ne!(light, dark);
        assert!(!dark_label && white_label);
    }

    #[test]
    fn the_collector_keeps_the_first_batches_of_the_window() {
        let s = settings(
            "name: \"m\" max_batch_size: 4 dynamic_batching { } instance_group [ { count: 1 kind: KIND_CPU } ]",
        );
        let trace: Vec<Request> = (0..100)
            .map(|i| Request::new(format!("r{i}"), i * 1_000))
            .collect();
        let mut c = Collector::new(Options {
            window: Some(Window {
                start_us: 10_000,
                end_us: Some(60_000),
            }),
            max_batches: 20,
            queue_waits: true,
        });
        simulate(&s, &Latency::constant(500), trace, &mut c);
        let tl = c.finish();
        // One execution per request, 500 µs each, at 0, 1000, ...: those
        // starting at 10000..=59000 overlap the window: 50 of them.
        assert_eq!(tl.total_batches, 50);
        assert_eq!(tl.batches.len(), 20);
        assert_eq!(tl.batches[0].start_us, 10_000);
        assert_eq!(tl.requests.len(), 20);
        let svg = render(&s, &tl);
        assert!(svg.contains("Only the first 20 of 50 executions"), "{svg}");
        assert_eq!(svg.matches("class=\"exec\"").count(), 20);
        assert_eq!(render(&s, &tl), svg, "deterministic");
    }

    #[test]
    fn padding_entries_are_not_drawn() {
        let s = settings(
            "name: \"m\" max_batch_size: 2 sequence_batching { direct { } } instance_group [ { count: 1 kind: KIND_CPU } ]",
        );
        let pad = |slot| SlotRecord {
            slot,
            request: None,
            sequence_id: None,
            start: false,
            end: false,
            ready: false,
            corrid: CorrId::Int(0),
        };
        let tl = Timeline {
            batches: vec![BatchRecord {
                id: 0,
                instance: 0,
                start_us: 0,
                end_us: 10,
                size: 2,
                requests: vec!["a".into()],
                slots: vec![
                    pad(0),
                    SlotRecord {
                        slot: 1,
                        request: Some("a".into()),
                        sequence_id: Some(CorrId::Str("s<1>".into())),
                        start: true,
                        end: false,
                        ready: true,
                        corrid: CorrId::Str("s<1>".into()),
                    },
                ],
            }],
            total_batches: 1,
            ..Timeline::default()
        };
        let svg = render(&s, &tl);
        assert_eq!(svg.matches("class=\"exec\"").count(), 1);
        assert!(
            svg.contains("data-slot=\"1\">\n<rect class=\"exec\""),
            "{svg}"
        );
        assert!(svg.contains("s&lt;1&gt;"));
    }
}
