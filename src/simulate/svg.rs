//! Pieces of SVG pictures over time: a time scale and its axis, text
//! escaping, labels fitted to boxes, fill colours. The simulate timeline
//! is drawn with them; other plots over a run's time can be too.

use std::fmt::Write as _;

/// Fill colours for sequences (light enough for dark labels).
pub const PALETTE: &[&str] = &[
    "#5b8fd6", "#f0a35e", "#e06c6c", "#6cc3b8", "#7cbf5a", "#e8cf52", "#b58ac9", "#f2a7c0",
    "#a98467", "#9fb0c2", "#c9d65b", "#5fc6e8", "#d98cf0", "#8fd6a0", "#e89f8f", "#8a96e8",
    "#d4a017", "#4fa3a5", "#c46b9b", "#b0b86a",
];

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
