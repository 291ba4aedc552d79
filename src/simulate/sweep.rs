//! `--sweep KEY=V1,V2,...`: the trace run once per setting of the cross
//! product of the values.
//!
//! KEY is a [`FieldPath`] in the model config, resolved against the schema
//! before anything is read; each value is read in config syntax by the same
//! binder as the config itself, set in the bound message, and the result
//! printed and parsed again, so each setting's config goes through exactly
//! what a config file goes through. Each setting is validated as `validate`
//! would; errors the base config does not also have mean Triton would
//! refuse the setting, which is then reported in its row instead of
//! simulated. Each run streams into a constant-memory summary; the trace
//! file is read again per setting, a trace on standard input is read into
//! memory once (at most [`STDIN_LIMIT`](super::replay::STDIN_LIMIT) bytes).

use super::latency::check_latency;
use super::load::Loaded;
use super::replay::{replay, TraceInput};
use super::report::right_align;
use super::stats::{Stats, Summary};
use super::Error;
use crate::batching::{Latency, Settings};
use crate::config::path::{FieldPath, FieldTarget};
use crate::config::ParsedConfig;
use crate::diagnostics::Severity;
use crate::text::display::{self, Untrusted};
use prost_reflect::{Kind, MapKey, Value};
use serde::Serialize;
use std::collections::BTreeSet;
use std::io::Write;

/// Most settings one `--sweep` run may ask for.
pub const MAX_SETTINGS: usize = 1000;

/// One `--sweep KEY=V1,V2,...`.
pub struct Axis {
    /// The key as written.
    pub key: String,
    /// Where in the config the values go.
    pub target: FieldTarget,
    /// The kind of the values set (the element kind for a list), for JSON.
    pub kind: Kind,
    /// Each value as written and as bound.
    pub values: Vec<(String, Value)>,
}

/// Reads every `--sweep` argument: keys resolved, values bound, each key
/// once, at most [`MAX_SETTINGS`] settings in all.
pub fn parse_axes(args: &[String]) -> Result<Vec<Axis>, Error> {
    let mut axes: Vec<Axis> = Vec::new();
    for a in args {
        let axis = parse_axis(a).map_err(|e| Error::Usage(format!("--sweep: {e}")))?;
        if axes.iter().any(|x| x.key == axis.key) {
            return Err(Error::Usage(format!(
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
        return Err(Error::Usage(format!(
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

/// Reads one `KEY=V1,V2,...`.
pub fn parse_axis(arg: &str) -> Result<Axis, String> {
    let Some((key, values)) = arg.split_once('=') else {
        return Err(format!(
            "'{arg}': expected KEY=V1,V2,... (for example dynamic_batching.max_queue_delay_microseconds=0,100,500)"
        ));
    };
    let key = key.trim().to_string();
    let target = key
        .parse::<FieldPath>()
        .and_then(|p| p.resolve_config())
        .map_err(|e| e.to_string())?;
    let kind = target.value_kind();
    let mut parsed = Vec::new();
    for text in split_values(values).map_err(|e| format!("'{key}': {e}"))? {
        // Strings may be written without quotes.
        let literal =
            if matches!(kind, Kind::String | Kind::Bytes) && !text.starts_with(['"', '\'', '[']) {
                crate::pbtxt::printer::quote_bytes(text.as_bytes())
            } else {
                text.clone()
            };
        let v = target.parse_value(&literal).map_err(|e| {
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
        target,
        kind,
        values: parsed,
    })
}

/// Splits `V1,V2,...` at the commas outside brackets, braces and quotes.
pub fn split_values(text: &str) -> Result<Vec<String>, String> {
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
pub struct SweepRow {
    /// The value index per axis.
    pub choice: Vec<usize>,
    /// The run's summary, or why Triton would refuse the setting.
    pub outcome: Result<Summary, Vec<String>>,
}

/// A sweep run: one row per setting, the last axis varying fastest.
pub struct Sweep<'a> {
    /// The settings of the config without the sweep's changes.
    pub base: Settings,
    pub axes: &'a [Axis],
    pub rows: Vec<SweepRow>,
}

impl Sweep<'_> {
    /// Whether some setting was refused.
    pub fn refused(&self) -> bool {
        self.rows.iter().any(|r| r.outcome.is_err())
    }
}

/// The scheduler settings of a variant of `base` written as `text`, or
/// why Triton would refuse it: its syntax or schema errors, else the
/// errors `validate` reports for it that `base_errors` (those of the
/// config without the change, [`config_errors`]) does not hold, or why no
/// scheduler can be made from it. Each `"CODE: message"`.
pub fn check_setting(
    base: &Loaded,
    base_errors: &BTreeSet<(String, String)>,
    text: String,
) -> Result<Settings, Vec<String>> {
    let parsed = ParsedConfig::parse(text);
    let mut refused: Vec<String> = parsed
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| format!("{}: {}", d.code(), d.message))
        .collect();
    let mut settings = None;
    if let (true, Some(cfg)) = (refused.is_empty(), &parsed.config) {
        refused.extend(
            config_errors(base, &parsed.src)
                .difference(base_errors)
                .map(|(code, m)| format!("{code}: {m}")),
        );
        match base.settings_of(cfg) {
            Ok(s) => settings = Some(s),
            Err(e) => refused.push(e),
        }
    }
    match settings {
        Some(s) if refused.is_empty() => Ok(s),
        _ => Err(refused),
    }
}

/// `(code, message)` of every error `validate` reports for a config text.
pub fn config_errors(base: &Loaded, text: &str) -> BTreeSet<(String, String)> {
    let report = crate::validate::check_config_file(
        base.name(),
        text.as_bytes().to_vec(),
        base.model_dir.as_deref(),
        &crate::lint::ServerOptions {
            gpus: base.gpus.clone(),
            ..crate::lint::ServerOptions::default()
        },
    );
    report
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| (d.code().to_string(), d.message.clone()))
        .collect()
}

/// Runs `trace` once per setting of `axes` over `base`. Warnings about
/// the trace go to `warn` (from its first reading only).
pub fn run_sweep<'a>(
    base: &Loaded,
    axes: &'a [Axis],
    latency: &Latency,
    trace: TraceInput,
    warn: &mut dyn FnMut(&str),
) -> Result<Sweep<'a>, Error> {
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
        a.target
            .set(&mut m, &a.values[0].1)
            .map_err(|e| Error::Usage(format!("--sweep: {e}")))?;
    }
    let base_errors = config_errors(base, &crate::pbtxt::printer::print_message(&base_msg));
    let input = trace.replayable()?;

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
            a.target
                .set(&mut msg, &a.values[i].1)
                .map_err(|e| Error::Usage(format!("--sweep {label}: {e}")))?;
        }
        let text = crate::pbtxt::printer::print_message(&msg);
        let outcome = match check_setting(base, &base_errors, text) {
            Ok(s) => {
                check_latency(latency, &s, Some(&label))?;
                let mut stats = Stats::new(s.instances, false);
                let first: Option<&mut dyn FnMut(&str)> =
                    if warned { None } else { Some(&mut *warn) };
                replay(&s, latency, &input, &mut stats, |_| {}, first)?;
                warned = true;
                let mut summary = stats.summary();
                super::stats::place_instances(&mut summary, &s);
                Ok(summary)
            }
            Err(refused) => Err(refused),
        };
        rows.push(SweepRow {
            choice: choice.clone(),
            outcome,
        });
        if !next_choice(&mut choice, axes) {
            break;
        }
    }
    Ok(Sweep {
        base: base_settings,
        axes,
        rows,
    })
}

/// Steps to the next combination, the last axis fastest; false after the
/// last one.
fn next_choice(choice: &mut [usize], axes: &[Axis]) -> bool {
    for k in (0..axes.len()).rev() {
        choice[k] += 1;
        if choice[k] < axes[k].values.len() {
            return true;
        }
        choice[k] = 0;
    }
    false
}

impl Sweep<'_> {
    /// One JSON array: per setting its values, its summary (`null` when
    /// refused) and, when refused, why.
    pub fn write_json(&self, out: &mut dyn Write) -> Result<(), Error> {
        write_sweep_json(out, self.axes, &self.rows)
    }

    /// One line about the sweep and one table row per setting.
    pub fn write_human(&self, out: &mut dyn Write) -> Result<(), Error> {
        write_sweep_human(out, &self.base, self.axes, &self.rows)
    }
}

fn write_sweep_json(out: &mut dyn Write, axes: &[Axis], rows: &[SweepRow]) -> Result<(), Error> {
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
) -> Result<(), Error> {
    use comfy_table::CellAlignment;
    let refused = rows.iter().filter(|r| r.outcome.is_err()).count();
    writeln!(
        out,
        "model '{}': {} of the same trace{}",
        Untrusted(&base.model),
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
    let mut t = super::report::new_table();
    let mut header: Vec<String> = axes
        .iter()
        .map(|a| display::escape(&a.key).into_owned())
        .collect();
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
            .map(|(a, &i)| display::escape(&a.values[i].0).into_owned())
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
                let mut note = why
                    .first()
                    .map(|w| display::escape(w).into_owned())
                    .unwrap_or_default();
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
    fn sweep_values_set_the_config() {
        let parsed = ParsedConfig::parse(
            "max_batch_size: 8\ninstance_group [ { count: 1 }, { count: 2 } ]\ndynamic_batching { }\n"
                .into(),
        );
        let base = parsed.message.unwrap();
        let axis = parse_axis("instance_group[1].count=5").unwrap();
        let mut m = base.clone();
        axis.target.set(&mut m, &axis.values[0].1).unwrap();
        let text = crate::pbtxt::printer::print_message(&m);
        let cfg = ParsedConfig::parse(text).config.unwrap();
        assert_eq!(cfg.instance_group[1].count, 5);
        assert_eq!(cfg.instance_group[0].count, 1);

        let axis =
            parse_axis("dynamic_batching.priority_queue_policy{2}.max_queue_size=3").unwrap();
        let mut m = base.clone();
        axis.target.set(&mut m, &axis.values[0].1).unwrap();
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
        let err = axis
            .target
            .set(&mut m, &axis.values[0].1)
            .unwrap_err()
            .to_string();
        assert!(err.contains("dynamic_batching"), "{err}");
    }
}
