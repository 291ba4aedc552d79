//! The outputs of a search: tables and a diff for people, one JSON
//! document for programs (docs/spec/cli.md, `tune`). Nothing here prints:
//! both write to the writer given.

use super::{Goal, Outcome, Pick, Prediction, Setting, Strategy, Tuned};
use crate::simulate::report::{new_table, right_align};
use crate::simulate::Error;
use crate::text::display::{self, Untrusted};
use serde_json::{json, Value};
use std::io::Write;

fn ms(us: Option<u64>) -> String {
    us.map_or("-".into(), |v| format!("{:.2}", v as f64 / 1000.0))
}

/// `max_batch_size 8, dynamic batching, delay 500 µs, preferred [2, 4, 8]`.
pub fn describe(s: &Setting) -> String {
    let mut parts = Vec::new();
    if let Some(m) = s.max_batch_size {
        parts.push(format!("max_batch_size {m}"));
    }
    match s.strategy {
        Strategy::Kept => parts.push("scheduler as configured".into()),
        Strategy::Dynamic => parts.push("dynamic batching".into()),
        Strategy::Direct => parts.push("sequence batching (direct)".into()),
        Strategy::Oldest {
            max_candidate_sequences,
        } => parts.push(format!(
            "sequence batching (oldest, max_candidate_sequences {max_candidate_sequences})"
        )),
    }
    if s.strategy != Strategy::Kept {
        parts.push(format!(
            "max_queue_delay_microseconds {}",
            s.max_queue_delay_microseconds
        ));
        if s.strategy != Strategy::Direct {
            parts.push(match &s.preferred_batch_size {
                None => "no preferred_batch_size".into(),
                Some(p) => format!("preferred_batch_size {p:?}"),
            });
        }
    }
    parts.join(", ")
}

fn objective_text(t: &Tuned) -> String {
    format!(
        "p{} ≤ {} ms",
        t.objective.percentile,
        t.objective.slo_us as f64 / 1000.0
    )
}

/// The recommended config against the current one, as a unified diff.
pub fn diff(t: &Tuned, name: &str) -> String {
    crate::format::unified_diff(
        &t.current_text,
        &t.recommended.config_text,
        &format!("{name} (current)"),
        &format!("{name} (recommended)"),
    )
}

/// Tables and the diff. `name` is the config file as shown.
pub fn write_human(out: &mut dyn Write, t: &Tuned, model: &str, name: &str) -> Result<(), Error> {
    let r = &t.recommended;
    writeln!(
        out,
        "model '{}': {} with {}",
        Untrusted(model),
        match t.goal {
            Goal::Instances => "the fewest instances",
            Goal::Throughput => "the highest rate one instance sustains",
        },
        objective_text(t)
    )?;
    let curve: Vec<String> = t.curve.iter().map(|(b, us)| format!("{b}:{us}")).collect();
    writeln!(out, "latency curve (batch size:µs): {}", curve.join(" "))?;
    if t.overhead_us > 0 {
        writeln!(
            out,
            "client overhead: {} µs per request, added to every predicted latency",
            t.overhead_us
        )?;
    }
    writeln!(
        out,
        "workload: {}: {} requests, {:.1}/s",
        Untrusted(&t.workload_source),
        t.workload_requests,
        t.workload_rate
    )?;
    writeln!(out)?;
    if !r.meets {
        writeln!(
            out,
            "no candidate meets the objective; the closest one (with {} instances):",
            r.instances
        )?;
    }
    match t.goal {
        Goal::Instances => writeln!(
            out,
            "recommended: {} instance{} (instance_group count {}), {}",
            r.instances,
            if r.instances == 1 { "" } else { "s" },
            r.count,
            describe(&r.setting)
        )?,
        Goal::Throughput => writeln!(
            out,
            "recommended: {:.1} requests/s on {} instance{}, {}",
            r.rate_per_s,
            r.instances,
            if r.instances == 1 { "" } else { "s" },
            describe(&r.setting)
        )?,
    }
    write_prediction(out, "predicted", &r.prediction)?;
    if let Some(x) = &t.rejected {
        match t.goal {
            Goal::Instances => writeln!(
                out,
                "with {} instance{} it would {}:",
                x.instances,
                if x.instances == 1 { "" } else { "s" },
                if x.meets {
                    "also meet the objective"
                } else {
                    "miss the objective"
                }
            )?,
            Goal::Throughput => writeln!(
                out,
                "at {:.1} requests/s it would {}:",
                x.rate_per_s,
                if x.meets {
                    "also meet the objective"
                } else {
                    "miss the objective"
                }
            )?,
        }
        write_prediction(out, "predicted", &x.prediction)?;
    }
    writeln!(out)?;
    let d = diff(t, name);
    if d.is_empty() {
        writeln!(out, "the current config is the recommended one")?;
    } else {
        for line in d.lines() {
            writeln!(out, "{}", display::escape(line))?;
        }
    }
    if !t.front.is_empty() {
        writeln!(out)?;
        writeln!(out, "instances against latency (the recommended settings):")?;
        let mut table = new_table();
        table.set_header([
            "instances",
            "p50 (ms)",
            "p99 (ms)",
            "throughput/s",
            "utilisation",
            "meets",
        ]);
        for p in &t.front {
            table.add_row([
                p.instances.to_string(),
                ms(p.prediction.latency_us.p50),
                ms(p.prediction.latency_us.p99),
                format!("{:.1}", p.prediction.throughput_per_s),
                format!("{:.0}%", p.prediction.utilization * 100.0),
                if p.meets { "yes" } else { "no" }.to_string(),
            ]);
        }
        right_align(&mut table, 0..5, comfy_table::CellAlignment::Right);
        writeln!(out, "{table}")?;
    }
    writeln!(out)?;
    let refused = t
        .tried
        .iter()
        .filter(|(x, _, _)| matches!(x.outcome, Outcome::Refused(_)))
        .count();
    writeln!(
        out,
        "candidates simulated: {} of a grid of {} ({} stopped early once they missed the objective; {} refused by validate)",
        t.simulated,
        t.grid(),
        t.stopped,
        refused
    )?;
    Ok(())
}

fn write_prediction(out: &mut dyn Write, label: &str, p: &Prediction) -> Result<(), Error> {
    writeln!(
        out,
        "  {label}: p50 {} ms, p90 {} ms, p95 {} ms, p99 {} ms; {:.1} requests/s, utilisation {:.0}%, mean batch {:.2}{}",
        ms(p.latency_us.p50),
        ms(p.latency_us.p90),
        ms(p.latency_us.p95),
        ms(p.latency_us.p99),
        p.throughput_per_s,
        p.utilization * 100.0,
        p.mean_batch_size,
        if p.ok < p.requests {
            format!(", {} of {} requests not answered", p.requests - p.ok, p.requests)
        } else {
            String::new()
        }
    )?;
    Ok(())
}

fn prediction_json(p: &Prediction) -> Value {
    json!({
        "latency_us": p.latency_us,
        "objective_us": p.objective_us,
        "throughput_per_s": p.throughput_per_s,
        "utilization": p.utilization,
        "requests": p.requests,
        "ok": p.ok,
        "mean_batch_size": p.mean_batch_size,
    })
}

/// The config text in Triton's JSON form (null when it does not parse).
pub fn config_json(text: &str) -> Value {
    let parsed = crate::config::ParsedConfig::parse(text.to_string());
    parsed
        .message
        .as_ref()
        .and_then(|m| serde_json::from_str(&crate::convert::to_json(m)).ok())
        .unwrap_or(Value::Null)
}

fn pick_json(p: &Pick) -> Value {
    json!({
        "config": config_json(&p.config_text),
        "instances": p.instances,
        "count": p.count,
        "settings": p.setting,
        "rate_per_s": p.rate_per_s,
        "meets_objective": p.meets,
        "predicted": prediction_json(&p.prediction),
    })
}

/// The JSON document.
pub fn write_json(out: &mut dyn Write, t: &Tuned, model: &str) -> Result<(), Error> {
    write_doc(out, &json_doc(t, model))
}

/// Writes a JSON document (pretty, one trailing newline).
pub fn write_doc(out: &mut dyn Write, doc: &Value) -> Result<(), Error> {
    serde_json::to_writer_pretty(&mut *out, doc).map_err(std::io::Error::other)?;
    writeln!(out)?;
    Ok(())
}

/// The JSON document of docs/spec/cli.md (`tune --format json`).
pub fn json_doc(t: &Tuned, model: &str) -> Value {
    let candidates: Vec<Value> = t
        .tried
        .iter()
        .map(|(x, rate, instances)| {
            let mut c = json!({
                "settings": t.space.settings[x.setting],
                "count": x.count,
                "instances": instances,
                "rate_per_s": rate,
            });
            let o = c.as_object_mut().expect("an object");
            match &x.outcome {
                Outcome::Refused(why) => {
                    o.insert("refused".into(), json!(why));
                    o.insert("predicted".into(), Value::Null);
                    o.insert("meets_objective".into(), json!(false));
                }
                Outcome::Above(bound) => {
                    o.insert("predicted".into(), Value::Null);
                    o.insert("stopped_above_us".into(), json!(bound));
                    o.insert("meets_objective".into(), json!(false));
                }
                Outcome::Done(p) => {
                    o.insert("predicted".into(), prediction_json(p));
                    o.insert("meets_objective".into(), json!(t.objective.meets(p)));
                }
            }
            c
        })
        .collect();
    let doc = json!({
        "model": model,
        "objective": {
            "goal": match t.goal { Goal::Instances => "instances", Goal::Throughput => "throughput" },
            "percentile": t.objective.percentile,
            "slo_us": t.objective.slo_us,
        },
        "latency_curve": t.curve.iter().map(|(b, us)| json!({"batch_size": b, "us": us})).collect::<Vec<_>>(),
        "overhead_us": t.overhead_us,
        "workload": {
            "source": t.workload_source,
            "requests": t.workload_requests,
            "rate_per_s": t.workload_rate,
        },
        "meets_objective": t.recommended.meets,
        "recommended": pick_json(&t.recommended),
        "rejected": t.rejected.as_ref().map(pick_json),
        "front": t.front.iter().map(|p| json!({
            "instances": p.instances,
            "count": p.count,
            "meets_objective": p.meets,
            "predicted": prediction_json(&p.prediction),
        })).collect::<Vec<_>>(),
        "candidates": candidates,
        "simulated": t.simulated,
        "stopped_early": t.stopped,
        "grid": t.grid(),
    });
    doc
}
