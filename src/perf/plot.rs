//! `perf --plot`: a run's results as an SVG picture, drawn with
//! [`crate::svg`] (as `simulate --timeline` is).
//!
//! * Throughput against latency: x = inferences per second, y = latency
//!   in ms, one line per percentile (p50, p90, p95, p99 and the
//!   `--percentile` one), one point per level labelled with its load: the
//!   curve Model Analyzer and genai-perf reports show.
//! * The latency distribution of each level: its cumulative distribution,
//!   from the quantiles the level kept of its histogram
//!   ([`LevelResult::latency_cdf`], a fixed number of points per level).
//! * Runs whose requests may have many responses (decoupled models,
//!   generative endpoints): the same curve for the time to the first
//!   response.
//!
//! Levels without a successful request have no latency: a note names
//! them and they are not drawn. [`render`] is a pure function of the
//! report: the same report gives the same bytes. Text from the server or
//! the user (model name, URL) is escaped for XML by the primitives.

use super::report::{Latency, LevelResult, PerfReport};
use crate::svg::{self, Anchor, Scale};
use std::fmt::Write as _;

const WIDTH: f64 = 960.0;
const LEFT: f64 = 86.0;
/// Room right of the plots for the line labels and the legend.
const RIGHT: f64 = 170.0;
const PLOT_W: f64 = WIDTH - LEFT - RIGHT;
const PANEL_H: f64 = 280.0;
/// Space above a panel (its title) and below it (tick labels, axis title).
const PANEL_TOP: f64 = 34.0;
const PANEL_BOTTOM: f64 = 56.0;

/// Level distributions drawn at most (the first ones); a note says how
/// many more the run had.
pub const MAX_DISTRIBUTIONS: usize = 20;

/// Notes about levels shown at most.
const MAX_NOTES: usize = 6;

/// The load of a level as its label: `4` (concurrency) or `100/s`.
fn load_label(l: &LevelResult) -> String {
    match (l.concurrency, l.request_rate) {
        (Some(c), _) => c.to_string(),
        (_, Some(r)) => format!("{r}/s"),
        _ => "?".into(),
    }
}

/// The load of a level in words: `concurrency 4`, `rate 100/s`.
fn load_words(l: &LevelResult) -> String {
    match (l.concurrency, l.request_rate) {
        (Some(c), _) => format!("concurrency {c}"),
        (_, Some(r)) => format!("rate {r}/s"),
        _ => "level".into(),
    }
}

/// One line of a percentile panel: which percentile of a level's
/// latency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Series(u8);

impl Series {
    fn name(self) -> String {
        format!("p{}", self.0)
    }

    fn pick(self, p: &Latency) -> Option<u64> {
        match self.0 {
            50 => Some(p.p50),
            90 => Some(p.p90),
            95 => Some(p.p95),
            99 => Some(p.p99),
            c => p.chosen.filter(|(q, _)| *q == c).map(|(_, v)| v),
        }
    }
}

/// The percentile lines, lowest first: p50, p90, p95, p99, and the
/// `--percentile` one (`chosen`) when it is another.
fn percentile_series(chosen: Option<u8>) -> Vec<Series> {
    let mut s: Vec<Series> = [50, 90, 95, 99].into_iter().map(Series).collect();
    if let Some(c) = chosen.filter(|p| ![50, 90, 95, 99].contains(p)) {
        s.push(Series(c));
    }
    s.sort_by_key(|x| x.0);
    s
}

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// Draws `report` as a standalone SVG document.
pub fn render(report: &PerfReport) -> String {
    let levels = &report.levels;
    let drawn: Vec<&LevelResult> = levels.iter().filter(|l| l.latency_us.is_some()).collect();
    let streamed = report.is_streamed() && levels.iter().any(|l| l.first_response_us.is_some());

    let mut notes: Vec<String> = Vec::new();
    for l in levels {
        if l.latency_us.is_none() {
            notes.push(format!(
                "{}: no successful request of {} (not drawn)",
                load_words(l),
                l.requests
            ));
        } else if l.errors > 0 {
            notes.push(format!(
                "{}: {} of {} requests failed (latency of the successful ones)",
                load_words(l),
                l.errors,
                l.requests
            ));
        }
    }
    let with_cdf = drawn.iter().filter(|l| !l.latency_cdf.is_empty()).count();
    if with_cdf > MAX_DISTRIBUTIONS {
        notes.push(format!(
            "distributions of the first {MAX_DISTRIBUTIONS} of {with_cdf} levels drawn"
        ));
    }
    if notes.len() > MAX_NOTES {
        let more = notes.len() - (MAX_NOTES - 1);
        notes.truncate(MAX_NOTES - 1);
        notes.push(format!("… and {more} more notes"));
    }

    let panels = 2 + usize::from(streamed);
    let first_top = 60.0 + 16.0 * notes.len() as f64;
    let panel_span = PANEL_TOP + PANEL_H + PANEL_BOTTOM;
    let height = (first_top + panel_span * panels as f64 + 10.0).ceil();

    let model = svg::cut(&report.model, 60);
    let url = svg::cut(&report.url, 60);
    let title = format!("perf: {model}");
    let protocol = if report.protocol == "grpc" {
        "gRPC"
    } else {
        "HTTP"
    };
    let subtitle = format!(
        "{} over {protocol} at {url} · batch {} · {} · latency of successful requests",
        report.mode.replace('_', " "),
        report.batch_size,
        match levels.len() {
            1 => "1 level".to_string(),
            n => format!("{n} levels"),
        },
    );

    let mut o = String::with_capacity(8192 + levels.len() * 1024);
    svg::begin(&mut o, WIDTH, height, &title);
    svg::heading(&mut o, LEFT, &title, &subtitle);
    for (i, n) in notes.iter().enumerate() {
        svg::text(
            &mut o,
            "note",
            (LEFT, 58.0 + 16.0 * i as f64),
            12.0,
            Anchor::Start,
            "#b03a2e",
            n,
        );
    }

    let load_name = if report.mode == "concurrency" {
        "concurrency"
    } else {
        "request rate"
    };
    let mut top = first_top;
    percentile_panel(
        &mut o,
        top,
        (
            "latency",
            &format!("throughput against latency (points labelled with the {load_name})"),
            "latency",
        ),
        &drawn,
        levels
            .iter()
            .find_map(|l| l.latency_us.as_ref().and_then(|p| p.chosen))
            .map(|(p, _)| p),
        |l| l.latency_us.as_ref(),
    );
    top += panel_span;
    distribution_panel(&mut o, top, &drawn);
    if streamed {
        top += panel_span;
        let first: Vec<&LevelResult> = drawn
            .iter()
            .copied()
            .filter(|l| l.first_response_us.is_some())
            .collect();
        percentile_panel(
            &mut o,
            top,
            (
                "first-response",
                "throughput against time to first response",
                "time to first response",
            ),
            &first,
            None,
            |l| l.first_response_us.as_ref(),
        );
    }
    svg::end(&mut o);
    o
}

fn panel_title(o: &mut String, top: f64, title: &str) {
    let _ = writeln!(
        o,
        "<text class=\"panel-title\" x=\"{LEFT}\" y=\"{:.1}\" font-size=\"14\" font-weight=\"bold\" fill=\"#222222\">{}</text>",
        top + 20.0,
        svg::xml_escape(title)
    );
}

/// Throughput (x) against the percentiles of `latency` (y, ms): one line
/// per percentile, in the order of the levels; each point labelled with
/// its level's load once, above the highest line.
/// `(class, title, what)`: the panel's class, its title, and what its
/// y axis shows.
fn percentile_panel(
    o: &mut String,
    top: f64,
    (class, title, what): (&str, &str, &str),
    levels: &[&LevelResult],
    chosen: Option<u8>,
    latency: impl Fn(&LevelResult) -> Option<&Latency>,
) {
    panel_title(o, top, title);
    let plot_top = top + PANEL_TOP;
    let bottom = plot_top + PANEL_H;
    let series = percentile_series(chosen);
    let values: Vec<Vec<Option<f64>>> = series
        .iter()
        .map(|s| {
            levels
                .iter()
                .map(|l| latency(l).and_then(|p| s.pick(p)).map(ms))
                .collect()
        })
        .collect();
    let max_x = levels
        .iter()
        .map(|l| l.throughput_per_s)
        .fold(0.0f64, f64::max);
    let max_y = values
        .iter()
        .flatten()
        .flatten()
        .copied()
        .fold(0.0f64, f64::max);
    let (x, x_ticks, x_dec) = svg::value_axis(max_x * 1.05, LEFT, LEFT + PLOT_W, 8);
    let (y, y_ticks, y_dec) = svg::value_axis(max_y * 1.08, bottom, plot_top, 6);
    let _ = writeln!(o, "<g class=\"panel {class}\">");
    svg::axes(
        o,
        (&x, &x_ticks, x_dec, "throughput (infer/s)"),
        (&y, &y_ticks, y_dec, &format!("{what} (ms)")),
    );
    if levels.is_empty() {
        svg::text(
            o,
            "empty",
            (LEFT + PLOT_W / 2.0, (plot_top + bottom) / 2.0),
            13.0,
            Anchor::Middle,
            "#666666",
            "no level had a successful request",
        );
    }
    let mut ends: Vec<(f64, &str, String)> = Vec::new();
    for (k, s) in series.iter().enumerate() {
        let colour = svg::STROKES[k % svg::STROKES.len()];
        let points: Vec<(f64, f64)> = levels
            .iter()
            .zip(&values[k])
            .filter_map(|(l, v)| v.map(|v| (x.at(l.throughput_per_s), y.at(v))))
            .collect();
        svg::polyline(
            o,
            "series",
            &points,
            colour,
            2.0,
            &[("percentile", s.name().as_str())],
        );
        for ((l, v), p) in levels
            .iter()
            .zip(&values[k])
            .filter_map(|(l, v)| v.map(|v| (l, v)))
            .zip(&points)
        {
            svg::dot(
                o,
                *p,
                3.0,
                colour,
                &format!(
                    "{}: {:.1} infer/s, {} {v:.3} ms",
                    load_words(l),
                    l.throughput_per_s,
                    s.name()
                ),
            );
        }
        if let Some(&(_, py)) = points.last() {
            ends.push((py, colour, s.name()));
        }
    }
    // each line named right of the plot at the height of its last point,
    // the names kept apart and above the axis
    let mut ys = svg::spread(&ends.iter().map(|e| e.0 + 4.0).collect::<Vec<_>>(), 11.0);
    let over = ys.iter().fold(bottom, |m, &y| m.max(y)) - bottom;
    for y in &mut ys {
        *y -= over;
    }
    for ((_, colour, name), y) in ends.iter().zip(ys) {
        svg::text(
            o,
            "series-label",
            (LEFT + PLOT_W + 10.0, y),
            11.0,
            Anchor::Start,
            colour,
            name,
        );
    }
    // the load of each level, above its highest point
    for (i, l) in levels.iter().enumerate() {
        let highest = values.iter().filter_map(|v| v[i]).fold(f64::NAN, f64::max);
        if highest.is_nan() {
            continue;
        }
        svg::text(
            o,
            "level-label",
            (x.at(l.throughput_per_s), y.at(highest) - 8.0),
            10.0,
            Anchor::Middle,
            "#333333",
            &load_label(l),
        );
    }
    let _ = writeln!(o, "</g>");
}

/// Each level's latency distribution: the share of its successful
/// requests (y, %) answered within a latency (x, ms).
fn distribution_panel(o: &mut String, top: f64, levels: &[&LevelResult]) {
    panel_title(
        o,
        top,
        "latency distribution per level (share of requests within a latency)",
    );
    let plot_top = top + PANEL_TOP;
    let bottom = plot_top + PANEL_H;
    let shown: Vec<&LevelResult> = levels
        .iter()
        .copied()
        .filter(|l| !l.latency_cdf.is_empty())
        .take(MAX_DISTRIBUTIONS)
        .collect();
    // latency on a logarithmic axis: a fast median and a slow tail both
    // stay readable
    let all = || {
        shown
            .iter()
            .flat_map(|l| l.latency_cdf.iter().map(|&(_, v)| ms(v)))
            .filter(|v| *v > 0.0)
    };
    let min_x = all().fold(f64::INFINITY, f64::min);
    let max_x = all().fold(0.0f64, f64::max);
    let (x, x_ticks) = svg::log_axis(min_x, max_x, LEFT, LEFT + PLOT_W);
    let y = Scale {
        lo: 0.0,
        hi: 100.0,
        from: bottom,
        to: plot_top,
        log: false,
    };
    let y_ticks: Vec<f64> = (0..=5).map(|i| f64::from(i) * 20.0).collect();
    let _ = writeln!(o, "<g class=\"panel distribution\">");
    svg::axes(
        o,
        (&x, &x_ticks, 0, "latency (ms, logarithmic)"),
        (&y, &y_ticks, 0, "requests within (%)"),
    );
    let mut legend = String::new();
    for (i, l) in shown.iter().enumerate() {
        let colour = svg::STROKES[i % svg::STROKES.len()];
        // a step function: at each kept quantile the latency reaches it
        let points: Vec<(f64, f64)> = l
            .latency_cdf
            .iter()
            .map(|&(q, v)| (x.at(ms(v)), y.at(q * 100.0)))
            .collect();
        let label = load_words(l);
        svg::polyline(
            o,
            "cdf",
            &points,
            colour,
            1.5,
            &[("level", load_label(l).as_str())],
        );
        svg::legend_key(
            &mut legend,
            LEFT + PLOT_W + 20.0,
            plot_top + 10.0 + 16.0 * i as f64,
            colour,
            &label,
        );
    }
    let _ = writeln!(o, "<g class=\"legend\" font-size=\"11\" fill=\"#333333\">");
    o.push_str(&legend);
    let _ = writeln!(o, "</g>");
    let _ = writeln!(o, "</g>");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::report::CDF_QUANTILES;

    fn lat(base: u64) -> Latency {
        Latency {
            p50: base,
            p90: base * 2,
            p95: base * 3,
            p99: base * 4,
            max: base * 5,
            mean: base as f64,
            chosen: None,
        }
    }

    fn level(c: u64, tput: f64, latency: Option<Latency>) -> LevelResult {
        LevelResult {
            concurrency: Some(c),
            requests: 10,
            errors: if latency.is_some() { 0 } else { 10 },
            throughput_per_s: tput,
            requests_per_s: tput,
            latency_cdf: latency
                .as_ref()
                .map(|l| {
                    CDF_QUANTILES
                        .iter()
                        .map(|&q| (q, (q * l.max as f64) as u64))
                        .collect()
                })
                .unwrap_or_default(),
            first_response_us: latency.clone(),
            latency_us: latency,
            responses: 10,
            ..crate::perf::report::fixture::level()
        }
    }

    fn report(levels: Vec<LevelResult>) -> PerfReport {
        PerfReport {
            model: "<m>&\"x\u{1b}".into(),
            url: "http://h:1/?a=<b>".into(),
            urls: Vec::new(),
            ..crate::perf::report::fixture::report(levels)
        }
    }

    #[test]
    fn untrusted_names_are_escaped_and_failed_levels_noted() {
        let r = report(vec![
            level(1, 100.0, Some(lat(1_000))),
            level(2, 0.0, None),
            level(4, 180.0, Some(lat(2_000))),
        ]);
        let svg = render(&r);
        assert!(!svg.contains("<m>") && !svg.contains("<b>"), "{svg}");
        assert!(svg.contains("perf: &lt;m&gt;&amp;&quot;x\u{fffd}"), "{svg}");
        assert!(svg.contains("concurrency 2: no successful request of 10 (not drawn)"));
        // two drawn levels on each of the four lines
        let series: Vec<&str> = svg
            .lines()
            .filter(|l| l.starts_with("<polyline class=\"series\""))
            .collect();
        assert_eq!(series.len(), 4);
        for l in &series {
            let pts = l
                .split("points=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap();
            assert_eq!(pts.split(' ').count(), 2, "{l}");
        }
        assert_eq!(svg.matches("class=\"cdf\"").count(), 2);
        // an infer run of single answers: no first-response panel
        assert!(!svg.contains("panel first-response"));
        assert_eq!(render(&r), svg, "deterministic");
    }

    #[test]
    fn streamed_runs_add_the_first_response_and_many_levels_stay_bounded() {
        let mut r = report(
            (1..=50)
                .map(|c| level(c, c as f64 * 10.0, Some(lat(c * 100))))
                .collect(),
        );
        r.decoupled = true;
        let svg = render(&r);
        assert!(svg.contains("<g class=\"panel first-response\">"));
        assert_eq!(svg.matches("class=\"cdf\"").count(), MAX_DISTRIBUTIONS);
        assert!(svg.contains("distributions of the first 20 of 50 levels drawn"));
        assert!(svg.len() < 200_000, "{}", svg.len());
        // --percentile 75: a fifth line, between p50 and p90
        for l in &mut r.levels {
            let p = l.latency_us.as_mut().unwrap();
            p.chosen = Some((75, p.p50 + 1));
        }
        let svg = render(&r);
        let names: Vec<&str> = svg
            .match_indices("data-percentile=\"")
            .map(|(i, m)| svg[i + m.len()..].split('"').next().unwrap())
            .collect();
        assert_eq!(
            names,
            ["p50", "p75", "p90", "p95", "p99", "p50", "p90", "p95", "p99"]
        );
    }
}
