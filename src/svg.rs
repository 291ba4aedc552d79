//! SVG pictures, the pieces every picture of tritonctl is drawn with: the
//! document, escaping of text for XML, colours, scales with round ticks
//! and their axes (values, or time in µs), and the shapes (line, polyline,
//! rect, dot, text). `simulate --timeline` and `perf --plot` use them; the
//! module uses nothing else of the crate.
//!
//! Every piece of text is escaped here ([`xml_escape`]): callers pass raw
//! text, and untrusted text (model names, URLs, request ids) cannot break
//! the document.

use std::fmt::Write as _;

/// Fill colours for sequences (light enough for dark labels).
pub const PALETTE: &[&str] = &[
    "#5b8fd6", "#f0a35e", "#e06c6c", "#6cc3b8", "#7cbf5a", "#e8cf52", "#b58ac9", "#f2a7c0",
    "#a98467", "#9fb0c2", "#c9d65b", "#5fc6e8", "#d98cf0", "#8fd6a0", "#e89f8f", "#8a96e8",
    "#d4a017", "#4fa3a5", "#c46b9b", "#b0b86a",
];

/// Stroke colours for lines on white (dark enough to tell apart from
/// each other and from the grid).
pub const STROKES: &[&str] = &[
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
];

/// Starts a standalone SVG document of `width` × `height` px: the XML
/// declaration, the root element with its `viewBox`, the document's title
/// (escaped) and a white background. [`end`] closes it.
pub fn begin(o: &mut String, width: f64, height: f64, title: &str) {
    let _ = writeln!(o, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
    let _ = writeln!(
        o,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" font-family=\"sans-serif\">"
    );
    let _ = writeln!(o, "<title>{}</title>", xml_escape(title));
    let _ = writeln!(
        o,
        "<rect class=\"background\" x=\"0\" y=\"0\" width=\"{width}\" height=\"{height}\" fill=\"#ffffff\"/>"
    );
}

/// Closes the document [`begin`] started.
pub fn end(o: &mut String) {
    let _ = writeln!(o, "</svg>");
}

/// The picture's title and the line under it, at `x` (both escaped).
pub fn heading(o: &mut String, x: f64, title: &str, subtitle: &str) {
    let _ = writeln!(
        o,
        "<text class=\"title\" x=\"{x}\" y=\"24\" font-size=\"16\" font-weight=\"bold\">{}</text>",
        xml_escape(title)
    );
    let _ = writeln!(
        o,
        "<text class=\"subtitle\" x=\"{x}\" y=\"42\" font-size=\"12\" fill=\"#444444\">{}</text>",
        xml_escape(subtitle)
    );
}

/// A legend entry: a 10 px square of `fill` and its label (escaped) with
/// the baseline at `y`.
pub fn legend_key(o: &mut String, x: f64, y: f64, fill: &str, label: &str) {
    let _ = writeln!(
        o,
        "<rect class=\"key\" x=\"{x:.1}\" y=\"{:.1}\" width=\"10\" height=\"10\" fill=\"{fill}\"/>",
        y - 9.0
    );
    let _ = writeln!(
        o,
        "<text x=\"{:.1}\" y=\"{y:.1}\">{}</text>",
        x + 14.0,
        xml_escape(label)
    );
}

/// Where text is anchored at its `x`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    Start,
    Middle,
    End,
}

impl Anchor {
    fn name(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }
}

/// A text element of class `class` (escaped content).
pub fn text(
    o: &mut String,
    class: &str,
    (x, y): (f64, f64),
    size: f64,
    anchor: Anchor,
    fill: &str,
    content: &str,
) {
    let _ = writeln!(
        o,
        "<text class=\"{class}\" x=\"{x:.1}\" y=\"{y:.1}\" font-size=\"{size}\" text-anchor=\"{}\" fill=\"{fill}\">{}</text>",
        anchor.name(),
        xml_escape(content)
    );
}

/// A line from `a` to `b`.
pub fn line(o: &mut String, a: (f64, f64), b: (f64, f64), stroke: &str, width: f64) {
    let _ = writeln!(
        o,
        "<line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"{stroke}\" stroke-width=\"{width}\"/>",
        a.0, a.1, b.0, b.1
    );
}

/// A filled rectangle with a tooltip (escaped) when `title` is not empty.
pub fn rect(
    o: &mut String,
    class: &str,
    (x, y, w, h): (f64, f64, f64, f64),
    fill: &str,
    title: &str,
) {
    let _ = write!(
        o,
        "<rect class=\"{class}\" x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{h:.1}\" fill=\"{fill}\""
    );
    if title.is_empty() {
        let _ = writeln!(o, "/>");
    } else {
        let _ = writeln!(o, "><title>{}</title></rect>", xml_escape(title));
    }
}

/// An open line through `points`, with `data` attributes (names are
/// trusted, values escaped) so that readers of the file find the series.
pub fn polyline(
    o: &mut String,
    class: &str,
    points: &[(f64, f64)],
    stroke: &str,
    width: f64,
    data: &[(&str, &str)],
) {
    let _ = write!(o, "<polyline class=\"{class}\"");
    for (k, v) in data {
        let _ = write!(o, " data-{k}=\"{}\"", xml_escape(v));
    }
    let _ = write!(o, " points=\"");
    for (i, (x, y)) in points.iter().enumerate() {
        if i > 0 {
            o.push(' ');
        }
        let _ = write!(o, "{x:.1},{y:.1}");
    }
    let _ = writeln!(
        o,
        "\" fill=\"none\" stroke=\"{stroke}\" stroke-width=\"{width}\" stroke-linejoin=\"round\"/>"
    );
}

/// A dot at `(x, y)` with a tooltip (escaped).
pub fn dot(o: &mut String, (x, y): (f64, f64), r: f64, fill: &str, title: &str) {
    let _ = writeln!(
        o,
        "<circle class=\"point\" cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"{r}\" fill=\"{fill}\"><title>{}</title></circle>",
        xml_escape(title)
    );
}

/// Round ticks for values in `[lo, hi]`: a step of 1, 2 or 5 × a power
/// of ten giving at most about `target` intervals, the first tick at or
/// below `lo`, the last at or above `hi`, and the decimals a label needs.
/// Non-finite or reversed bounds give the ticks of `[0, 1]`.
pub fn nice_ticks(lo: f64, hi: f64, target: usize) -> (Vec<f64>, usize) {
    let (lo, hi) = if lo.is_finite() && hi.is_finite() && lo <= hi {
        (lo, hi)
    } else {
        (0.0, 1.0)
    };
    let hi = if hi > lo { hi } else { lo + lo.abs().max(1.0) };
    let raw = (hi - lo) / target.max(1) as f64;
    // step = m · 10^e
    let mut e = raw.log10().floor() as i32;
    let mut m = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .find(|m| m * 10f64.powi(e) >= raw * (1.0 - 1e-9))
        .unwrap_or(10.0);
    if m == 10.0 {
        m = 1.0;
        e += 1;
    }
    // n · m / 10^-e: exact for round ticks (0.6, not 0.6000000000000001)
    let tick = |n: f64| {
        if e < 0 {
            n * m / 10f64.powi(-e)
        } else {
            n * m * 10f64.powi(e)
        }
    };
    let step = tick(1.0);
    let first = (lo / step).floor();
    let last = (hi / step).ceil().max(first + 1.0);
    // at most a few hundred ticks whatever the floats do
    let n = ((last - first) as usize).min(256);
    let ticks = (0..=n).map(|i| tick(first + i as f64)).collect();
    (ticks, e.min(0).unsigned_abs() as usize)
}

/// Maps values `[lo, hi]` to pixels `[from, to]` (`to < from` for a y
/// axis growing upwards), linearly or, with `log`, by their logarithm
/// (then `0 < lo`).
#[derive(Debug, Clone, Copy)]
pub struct Scale {
    pub lo: f64,
    pub hi: f64,
    pub from: f64,
    pub to: f64,
    pub log: bool,
}

impl Scale {
    /// The pixel of `v` (clamped to the range).
    pub fn at(&self, v: f64) -> f64 {
        let (lo, hi, v) = if self.log {
            (self.lo.log10(), self.hi.log10(), v.max(self.lo).log10())
        } else {
            (self.lo, self.hi, v)
        };
        let span = hi - lo;
        if span.is_nan() || span <= 0.0 || !v.is_finite() {
            return self.from;
        }
        let t = ((v - lo) / span).clamp(0.0, 1.0);
        self.from + t * (self.to - self.from)
    }
}

/// A logarithmic axis for values in `[lo, hi]` (`0 < lo`): ticks at 1, 2
/// and 5 × each power of ten (1 only when the range spans more than four
/// of them), and the scale from the last tick at or below `lo` to the
/// first at or above `hi` for pixels `[from, to]`. Values at or below 0
/// are drawn at the axis' start.
pub fn log_axis(lo: f64, hi: f64, from: f64, to: f64) -> (Scale, Vec<f64>) {
    let lo = if lo.is_finite() && lo > 0.0 { lo } else { 1.0 };
    let hi = if hi.is_finite() && hi > lo {
        hi
    } else {
        lo * 10.0
    };
    let (e0, e1) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let e1 = e1.max(e0 + 1).min(e0 + 300);
    let at = |m: f64, e: i32| {
        if e < 0 {
            m / 10f64.powi(-e)
        } else {
            m * 10f64.powi(e)
        }
    };
    let steps: &[f64] = if e1 - e0 > 4 {
        &[1.0]
    } else {
        &[1.0, 2.0, 5.0]
    };
    let mut ticks = Vec::new();
    for e in e0..e1 {
        ticks.extend(steps.iter().map(|&m| at(m, e)));
    }
    ticks.push(at(1.0, e1));
    // the axis runs from the last tick at or below `lo` to the first at
    // or above `hi`
    let first = ticks.iter().rposition(|&t| t <= lo).unwrap_or(0);
    let last = ticks
        .iter()
        .position(|&t| t >= hi)
        .unwrap_or(ticks.len() - 1);
    let ticks = ticks[first..=last].to_vec();
    let scale = Scale {
        lo: ticks[0],
        hi: ticks[ticks.len() - 1],
        from,
        to,
        log: true,
    };
    (scale, ticks)
}

/// A value axis: the scale over `[0, max]` (the ticks' round range) for
/// pixels `[from, to]`, its ticks and the decimals their labels need.
pub fn value_axis(max: f64, from: f64, to: f64, target: usize) -> (Scale, Vec<f64>, usize) {
    let max = if max.is_finite() && max > 0.0 {
        max
    } else {
        1.0
    };
    let (ticks, decimals) = nice_ticks(0.0, max, target);
    let hi = ticks.last().copied().unwrap_or(1.0);
    (
        Scale {
            lo: 0.0,
            hi,
            from,
            to,
            log: false,
        },
        ticks,
        decimals,
    )
}

/// A tick's label: with `decimals` on a linear scale; on a logarithmic
/// one the shortest form (0.05, 2, 100), as its ticks are round.
fn tick_label(scale: &Scale, t: f64, decimals: usize) -> String {
    if scale.log {
        format!("{t}")
    } else {
        format!("{t:.decimals$}")
    }
}

/// Spreads labels placed at `ys` (any order) so that neighbours are at
/// least `gap` px apart, moving them as little as this simple pass can:
/// sorted, each pushed below the one above it. Returns the new y of each.
pub fn spread(ys: &[f64], gap: f64) -> Vec<f64> {
    let mut order: Vec<usize> = (0..ys.len()).collect();
    order.sort_by(|&a, &b| ys[a].total_cmp(&ys[b]));
    let mut out = ys.to_vec();
    let mut last = f64::NEG_INFINITY;
    for i in order {
        out[i] = out[i].max(last + gap);
        last = out[i];
    }
    out
}

/// The frame of a plot: a grid line and label per tick of `x` (at the
/// bottom) and of `y` (at the left), the axis lines and the titles.
pub fn axes(
    o: &mut String,
    (x, x_ticks, x_decimals, x_title): (&Scale, &[f64], usize, &str),
    (y, y_ticks, y_decimals, y_title): (&Scale, &[f64], usize, &str),
) {
    let (left, right) = (x.from, x.to);
    let (bottom, top) = (y.from, y.to);
    let _ = writeln!(o, "<g class=\"axis\" font-size=\"11\" fill=\"#333333\">");
    for &t in x_ticks {
        let px = x.at(t);
        line(o, (px, top), (px, bottom + 4.0), "#d0d4da", 0.5);
        let _ = writeln!(
            o,
            "<text class=\"tick\" x=\"{px:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            bottom + 17.0,
            tick_label(x, t, x_decimals)
        );
    }
    for &t in y_ticks {
        let py = y.at(t);
        line(o, (left - 4.0, py), (right, py), "#d0d4da", 0.5);
        let _ = writeln!(
            o,
            "<text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            left - 7.0,
            py + 4.0,
            tick_label(y, t, y_decimals)
        );
    }
    line(o, (left, bottom), (right, bottom), "#333333", 1.0);
    line(o, (left, top), (left, bottom), "#333333", 1.0);
    let _ = writeln!(
        o,
        "<text class=\"axis-title\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
        (left + right) / 2.0,
        bottom + 34.0,
        xml_escape(x_title)
    );
    let (tx, ty) = (left - 48.0, (top + bottom) / 2.0);
    let _ = writeln!(
        o,
        "<text class=\"axis-title\" x=\"{tx:.1}\" y=\"{ty:.1}\" text-anchor=\"middle\" transform=\"rotate(-90 {tx:.1} {ty:.1})\">{}</text>",
        xml_escape(y_title)
    );
    let _ = writeln!(o, "</g>");
}

/// Fill at `t` (0 to 1) on a light-to-dark blue scale, and whether a
/// label on it should be white.
pub fn shade(t: f64) -> (String, bool) {
    let lo = [0xd6, 0xe6, 0xf5];
    let hi = [0x16, 0x4a, 0x8a];
    let c: Vec<u8> = (0..3)
        .map(|i| (f64::from(lo[i]) + (f64::from(hi[i]) - f64::from(lo[i])) * t).round() as u8)
        .collect();
    (format!("#{:02x}{:02x}{:02x}", c[0], c[1], c[2]), t > 0.55)
}

/// Text for XML content and attribute values: markup characters escaped,
/// characters XML 1.0 does not allow replaced by U+FFFD.
pub fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// Axis ticks for `[t0, t1]` µs: the step (1, 2 or 5 × a power of ten, about
/// eight ticks), the unit name, its size in µs and the decimals a label
/// needs.
pub fn tick_step(t0: u64, t1: u64) -> (u64, &'static str, u64, usize) {
    let span = t1.saturating_sub(t0).max(1);
    let target = span as f64 / 8.0;
    let mut step = 1u64;
    let mut k = 0u32;
    'outer: loop {
        for m in [1u64, 2, 5] {
            let s = m.saturating_mul(10u64.saturating_pow(k));
            if s as f64 >= target || s == u64::MAX {
                step = s;
                break 'outer;
            }
        }
        k += 1;
        if k > 19 {
            break;
        }
    }
    let (unit, div, d) = if step < 1_000 {
        ("µs", 1, 0)
    } else if step < 1_000_000 {
        ("ms", 1_000, 3)
    } else {
        ("s", 1_000_000, 6)
    };
    // step = m·10^k: a label needs d − k decimals.
    let decimals = (d as u32).saturating_sub(k) as usize;
    (step, unit, div, decimals)
}

/// `t` µs in units of `div` µs with `decimals` decimals (see [`tick_step`]).
pub fn format_time(t: u64, div: u64, decimals: usize) -> String {
    if div == 1 {
        return t.to_string();
    }
    let whole = t / div;
    if decimals == 0 {
        return whole.to_string();
    }
    let frac = t % div;
    let digits = format!("{frac:0width$}", width = div.ilog10() as usize);
    format!("{whole}.{}", &digits[..decimals.min(digits.len())])
}

/// A duration for captions: `850 µs`, `12.5 ms`, `3.2 s`.
pub fn human_time(us: u64) -> String {
    if us < 1_000 {
        format!("{us} µs")
    } else if us < 1_000_000 {
        trim_float(us as f64 / 1e3, "ms")
    } else {
        trim_float(us as f64 / 1e6, "s")
    }
}

fn trim_float(v: f64, unit: &str) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s} {unit}")
}

/// `s` cut to `max` characters, an ellipsis marking the cut.
pub fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// Approximate width in px of `text` at font size `size`.
pub fn text_width(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * size * 0.6
}

/// Maps `[t0, t1]` µs (t0 < t1) to `[left, left + width]` px.
#[derive(Debug, Clone, Copy)]
pub struct TimeScale {
    pub t0: u64,
    pub t1: u64,
    pub left: f64,
    pub width: f64,
}

impl TimeScale {
    /// The x of time `t` (clamped to the range).
    pub fn x(&self, t: u64) -> f64 {
        let t = t.clamp(self.t0, self.t1);
        self.left + (t - self.t0) as f64 / (self.t1 - self.t0) as f64 * self.width
    }
}

/// The time axis at `axis_y` under a plot starting at `top`: the axis
/// line, a grid line and label per tick (round steps, see [`tick_step`])
/// and the axis title with the unit.
pub fn time_axis(o: &mut String, g: &TimeScale, top: f64, axis_y: f64) {
    let (t0, t1) = (g.t0, g.t1);
    let (step, unit, div, decimals) = tick_step(t0, t1);
    let first_tick = t0.div_ceil(step).saturating_mul(step);
    let _ = writeln!(o, "<g class=\"axis\" font-size=\"11\" fill=\"#333333\">");
    let _ = writeln!(
        o,
        "<line x1=\"{}\" y1=\"{axis_y:.1}\" x2=\"{:.1}\" y2=\"{axis_y:.1}\" stroke=\"#333333\" stroke-width=\"1\"/>",
        g.left,
        g.left + g.width
    );
    let mut t = first_tick;
    let mut ticks = 0;
    while t <= t1 && ticks < 64 {
        let x = g.x(t);
        let _ = writeln!(
            o,
            "<line x1=\"{x:.1}\" y1=\"{top:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"#d0d4da\" stroke-width=\"0.5\"/>",
            axis_y + 4.0
        );
        let _ = writeln!(
            o,
            "<text class=\"tick\" x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            axis_y + 17.0,
            format_time(t, div, decimals)
        );
        ticks += 1;
        match t.checked_add(step) {
            Some(n) => t = n,
            None => break,
        }
    }
    let _ = writeln!(
        o,
        "<text class=\"axis-title\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">time ({unit})</text>",
        g.left + g.width / 2.0,
        axis_y + 34.0
    );
    let _ = writeln!(o, "</g>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_use_round_steps_and_fitting_units() {
        assert_eq!(tick_step(0, 800), (100, "µs", 1, 0));
        assert_eq!(tick_step(0, 10_000), (2_000, "ms", 1_000, 0));
        assert_eq!(tick_step(0, 4_000), (500, "µs", 1, 0));
        assert_eq!(tick_step(0, 12_000), (2_000, "ms", 1_000, 0));
        assert_eq!(tick_step(0, 3_000_000), (500_000, "ms", 1_000, 0));
        assert_eq!(tick_step(0, 30_000_000), (5_000_000, "s", 1_000_000, 0));
        assert_eq!(tick_step(0, 12_000_000), (2_000_000, "s", 1_000_000, 0));
        assert_eq!(format_time(2_500, 1_000, 1), "2.5");
        assert_eq!(format_time(1_500_000, 1_000_000, 1), "1.5");
        assert_eq!(format_time(7, 1, 0), "7");
        // 0.1 s steps: 1 decimal.
        let (step, unit, div, dec) = tick_step(0, 800_000);
        assert_eq!((step, unit, dec), (100_000, "ms", 0));
        assert_eq!(format_time(300_000, div, dec), "300");
        let (step, unit, _, dec) = tick_step(1_000, 1_000_000_000);
        assert_eq!((step, unit, dec), (200_000_000, "s", 0));
    }

    #[test]
    fn escaping_keeps_the_document_well_formed() {
        assert_eq!(xml_escape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&apos;");
        assert_eq!(xml_escape("x\u{0}y\u{1b}"), "x\u{fffd}y\u{fffd}");
    }

    #[test]
    fn nice_ticks_are_round_and_cover_the_range() {
        let (t, d) = nice_ticks(0.0, 9.3, 5);
        assert_eq!(t, [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(d, 0);
        let (t, d) = nice_ticks(0.0, 0.37, 4);
        assert_eq!(t.len(), 5);
        assert!(
            (t[1] - 0.1).abs() < 1e-12 && (t[4] - 0.4).abs() < 1e-12,
            "{t:?}"
        );
        assert_eq!(d, 1);
        let (t, d) = nice_ticks(0.0, 12_345.0, 8);
        assert_eq!((t[1], *t.last().unwrap(), d), (2_000.0, 14_000.0, 0));
        // an empty or broken range still gives an axis
        assert_eq!(nice_ticks(0.0, 0.0, 5).0, [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]);
        assert_eq!(nice_ticks(f64::NAN, 1.0, 5).0.len(), 6);
        assert_eq!(nice_ticks(5.0, 1.0, 5).0.len(), 6);
        // huge spans stay bounded
        assert!(nice_ticks(0.0, 1e300, 1_000_000).0.len() <= 257);
    }

    #[test]
    fn log_axes_cover_the_values_with_round_ticks() {
        let (s, t) = log_axis(0.42, 81.0, 0.0, 300.0);
        assert_eq!((s.lo, s.hi), (0.2, 100.0));
        assert_eq!(t, [0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0]);
        assert_eq!(s.at(0.2), 0.0);
        assert_eq!(s.at(100.0), 300.0);
        // equal ratios, equal distances
        let d = |a: f64, b: f64| s.at(b) - s.at(a);
        assert!((d(1.0, 10.0) - d(10.0, 100.0)).abs() < 1e-9);
        assert!(d(1.0, 10.0) > 0.0);
        let (s, t) = log_axis(1.0, 10.0, 0.0, 1.0);
        assert_eq!((s.lo, s.hi, t.len()), (1.0, 10.0, 4));
        // 0 and below sit at the start; wide ranges keep one tick a decade
        assert_eq!(s.at(0.0), 0.0);
        let (_, t) = log_axis(0.001, 1e6, 0.0, 1.0);
        assert_eq!(t.len(), 10);
        assert_eq!((t[0], t[9]), (0.001, 1e6));
        let (s, _) = log_axis(0.0, f64::NAN, 0.0, 1.0);
        assert_eq!((s.lo, s.hi), (1.0, 10.0));
        assert_eq!(tick_label(&s, 0.05, 0), "0.05");
    }

    #[test]
    fn spread_labels_keep_their_order_and_a_gap() {
        assert_eq!(
            spread(&[10.0, 12.0, 50.0, 11.0], 5.0),
            [10.0, 20.0, 50.0, 15.0]
        );
        assert_eq!(spread(&[], 5.0), Vec::<f64>::new());
    }

    #[test]
    fn scales_map_and_clamp() {
        let (x, ticks, _) = value_axis(93.0, 100.0, 300.0, 5);
        assert_eq!(x.hi, 100.0);
        assert_eq!(*ticks.last().unwrap(), 100.0);
        assert_eq!(x.at(0.0), 100.0);
        assert_eq!(x.at(50.0), 200.0);
        assert_eq!(x.at(1e9), 300.0);
        assert_eq!(x.at(-5.0), 100.0);
        assert_eq!(x.at(f64::NAN), 100.0);
        // a y axis grows upwards: higher values have smaller y
        let (y, _, _) = value_axis(10.0, 400.0, 100.0, 5);
        assert!(y.at(8.0) < y.at(2.0));
        // nothing to show: [0, 1]
        let (z, _, _) = value_axis(0.0, 0.0, 10.0, 5);
        assert_eq!((z.lo, z.hi), (0.0, 1.0));
    }

    /// Every element name and attribute of a document, parsed by a real
    /// XML reader (any well-formedness error fails), and its text.
    fn parse(doc: &str) -> (Vec<String>, String) {
        use quick_xml::events::Event;
        let mut r = quick_xml::Reader::from_str(doc);
        let (mut names, mut text) = (Vec::new(), String::new());
        loop {
            match r.read_event().expect("well-formed") {
                Event::Start(e) | Event::Empty(e) => {
                    names.push(String::from_utf8(e.name().as_ref().to_vec()).unwrap());
                    for a in e.attributes() {
                        let a = a.expect("attribute");
                        text.push_str(&a.unescape_value().unwrap());
                        text.push('|');
                    }
                }
                Event::Text(t) => text.push_str(&t.decode().unwrap()),
                Event::GeneralRef(g) => {
                    let name: &[u8] = g.as_ref();
                    text.push_str(match name {
                        b"amp" => "&",
                        b"lt" => "<",
                        b"gt" => ">",
                        b"quot" => "\"",
                        b"apos" => "'",
                        other => panic!("entity {other:?}"),
                    });
                }
                Event::Eof => break,
                _ => {}
            }
        }
        (names, text)
    }

    #[test]
    fn a_document_of_every_piece_is_well_formed_with_hostile_text() {
        let evil = "</text><script>alert('x')</script>&amp;\"\u{1b}";
        let mut o = String::new();
        begin(&mut o, 300.0, 200.0, evil);
        heading(&mut o, 10.0, evil, evil);
        legend_key(&mut o, 10.0, 60.0, STROKES[0], evil);
        text(&mut o, "t", (1.0, 2.0), 10.0, Anchor::End, "#000000", evil);
        line(&mut o, (0.0, 0.0), (1.0, 1.0), "#000000", 1.0);
        rect(&mut o, "r", (0.0, 0.0, 5.0, 5.0), PALETTE[0], evil);
        rect(&mut o, "r", (0.0, 0.0, 5.0, 5.0), PALETTE[0], "");
        polyline(
            &mut o,
            "p",
            &[(1.0, 2.0), (3.25, 4.0)],
            "#123456",
            2.0,
            &[("level", evil)],
        );
        dot(&mut o, (1.0, 2.0), 3.0, "#123456", evil);
        let (x, xt, xd) = value_axis(10.0, 40.0, 280.0, 5);
        let (y, yt, yd) = value_axis(0.9, 180.0, 80.0, 5);
        axes(&mut o, (&x, &xt, xd, evil), (&y, &yt, yd, "y (ms)"));
        time_axis(
            &mut o,
            &TimeScale {
                t0: 0,
                t1: 5_000,
                left: 40.0,
                width: 240.0,
            },
            80.0,
            190.0,
        );
        end(&mut o);
        assert!(!o.contains("<script"), "{o}");
        let (names, text) = parse(&o);
        assert_eq!(names[0], "svg");
        assert!(o.contains("viewBox=\"0 0 300 200\""), "{o}");
        for n in ["title", "text", "rect", "line", "polyline", "circle", "g"] {
            assert!(names.iter().any(|m| m == n), "{n} in {names:?}");
        }
        // the hostile text reads back as given (the control character
        // replaced: XML 1.0 has no way to carry it)
        let back = evil.replace('\u{1b}', "\u{fffd}");
        assert!(text.matches(back.as_str()).count() >= 8, "{text}");
        assert!(
            o.contains("points=\"1.0,2.0 3.2,4.0\"") || o.contains("points=\"1.0,2.0 3.3,4.0\"")
        );
        // axis labels: round ticks with the decimals they need
        assert!(o.contains(">0.4</text>") && o.contains(">10</text>"), "{o}");
    }
}
