//! `perf merge`: the JSON documents of several `perf` workers that loaded
//! one server together, combined into the report of the whole load
//! (docs/spec/cli.md, "Mergeable results").
//!
//! Percentiles cannot be combined, histograms can: each level carries its
//! histograms ([`super::histogram::encode`]), which are added up, and the
//! percentiles are read from the sum, so they are those of the union of
//! every worker's samples. Counters are summed; the window is the union
//! of the workers' windows.

use super::histogram::{cdf, decode, encode, latency, new_histogram};
use super::load::meets_threshold;
use super::report::{
    BinarySearch, ClientStats, Histograms, LevelResult, LoadValue, PerRequest, PerfReport,
    TargetCount,
};
use hdrhistogram::Histogram;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};

/// Why the files cannot be merged: the message names the files.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct MergeError(pub String);

/// One worker's document and the name it is shown under (its path).
#[derive(Debug, Clone)]
pub struct Input {
    pub name: String,
    pub report: PerfReport,
}

/// Reads `text` (the file `name`) as a document of `perf --format json`
/// with histograms in every level.
pub fn parse(name: &str, text: &str) -> Result<Input, MergeError> {
    let at = |e: serde_json::Error| {
        // serde_json's message ends with its position, given here first
        let msg = e.to_string();
        let suffix = format!(" at line {} column {}", e.line(), e.column());
        let msg = msg.strip_suffix(&suffix).unwrap_or(&msg).to_string();
        MergeError(format!("{name}:{}:{}: {msg}", e.line(), e.column()))
    };
    let doc: Value = serde_json::from_str(text).map_err(at)?;
    if !(doc.get("model").is_some_and(Value::is_string)
        && doc.get("levels").is_some_and(Value::is_array))
    {
        return Err(MergeError(format!(
            "{name}: not a document of `tritonctl perf --format json` (no \"model\" and \"levels\")"
        )));
    }
    let report: PerfReport = serde_json::from_str(text).map_err(at)?;
    if let Some(i) = report.levels.iter().position(|l| l.histograms.is_none()) {
        return Err(MergeError(format!(
            "{name}: level {} has no \"histograms\": the file was written by a tritonctl older than `perf merge`; run the load again with this one",
            i + 1
        )));
    }
    known_values(name, &report)?;
    Ok(Input {
        name: name.to_string(),
        report,
    })
}

/// The fields that `perf` writes from a fixed set (and the table shows or
/// branches on) hold one of those values; anything else is not a
/// document of `perf`, and is refused rather than shown.
fn known_values(name: &str, r: &PerfReport) -> Result<(), MergeError> {
    let fields: [(&str, Option<&str>, &[&str]); 6] = [
        ("protocol", Some(&r.protocol), &["http", "grpc"]),
        (
            "mode",
            Some(&r.mode),
            &["concurrency", "request_rate", "request_intervals"],
        ),
        (
            "endpoint",
            Some(&r.endpoint),
            &["infer", "generate", "openai-chat", "openai-completions"],
        ),
        (
            "input_tensor_format",
            Some(&r.input_tensor_format),
            &["binary", "json"],
        ),
        (
            "output_tensor_format",
            Some(&r.output_tensor_format),
            &["binary", "json"],
        ),
        (
            "request_distribution",
            r.request_distribution.as_deref(),
            &["constant", "poisson"],
        ),
    ];
    for (field, value, known) in fields {
        if let Some(v) = value.filter(|v| !known.contains(v)) {
            return Err(MergeError(format!(
                "{name}: \"{field}\" is '{}', not one of {}: not a document of `tritonctl perf --format json`",
                crate::text::display::Untrusted(v),
                known.join(", ")
            )));
        }
    }
    // --percentile takes 1 to 100
    if let Some(p) = r.percentile.filter(|p| !(1..=100).contains(p)) {
        return Err(MergeError(format!(
            "{name}: \"percentile\" is {p}, outside the 1 to 100 that --percentile takes"
        )));
    }
    Ok(())
}

/// The fields that must agree for two documents to be parts of one load.
fn setup(r: &PerfReport) -> [(&'static str, String); 8] {
    [
        ("model", r.model.clone()),
        ("protocol", r.protocol.clone()),
        ("endpoint", r.endpoint.clone()),
        ("mode", r.mode.clone()),
        (
            "request distribution",
            r.request_distribution.clone().unwrap_or("-".into()),
        ),
        ("batch size", r.batch_size.to_string()),
        (
            "--percentile",
            r.percentile.map_or("-".into(), |p| p.to_string()),
        ),
        (
            "latency threshold (ms)",
            r.latency_threshold_ms.map_or("-".into(), |t| t.to_string()),
        ),
    ]
}

/// A level's load as the messages show it.
fn load_of(l: &LevelResult) -> String {
    match (l.concurrency, l.request_rate) {
        (Some(c), _) => format!("concurrency {c}"),
        (_, Some(r)) => format!("rate {r}/s"),
        _ => "-".into(),
    }
}

fn loads(r: &PerfReport) -> String {
    r.levels.iter().map(load_of).collect::<Vec<_>>().join(", ")
}

/// Whether the workers split one load with `--shard` (then each level is
/// a share, and the merged level is the sum), checked: every file or none
/// carries a shard, of one count, each index once.
fn sharded(inputs: &[Input]) -> Result<bool, MergeError> {
    let first = &inputs[0];
    let mut seen: BTreeMap<u64, &str> = BTreeMap::new();
    for i in inputs {
        match (first.report.shard, i.report.shard) {
            (None, None) => continue,
            (Some(_), None) | (None, Some(_)) => {
                let (with, without) = if first.report.shard.is_some() {
                    (&first.name, &i.name)
                } else {
                    (&i.name, &first.name)
                };
                return Err(MergeError(format!(
                    "{with} is one shard of a load (--shard) and {without} is not: they do not belong together"
                )));
            }
            (Some(a), Some(b)) => {
                if a.count != b.count {
                    return Err(MergeError(format!(
                        "{} and {} split the load into different numbers of shards ({} and {})",
                        first.name, i.name, a.count, b.count
                    )));
                }
                if b.index >= b.count {
                    return Err(MergeError(format!(
                        "{}: shard {} of {} does not exist (indexes start at 0)",
                        i.name, b.index, b.count
                    )));
                }
                if let Some(other) = seen.insert(b.index, &i.name) {
                    return Err(MergeError(format!(
                        "{other} and {} are the same shard ({} of {}): a merge takes each shard once",
                        i.name, b.index, b.count
                    )));
                }
            }
        }
    }
    Ok(first.report.shard.is_some())
}

/// Refuses documents that are not parts of one load (exit 2): another
/// model, mode or level set.
fn check(inputs: &[Input], sharded: bool) -> Result<(), MergeError> {
    let first = &inputs[0];
    let want = setup(&first.report);
    for i in &inputs[1..] {
        for ((what, a), (_, b)) in want.iter().zip(setup(&i.report)) {
            if *a != b {
                return Err(MergeError(format!(
                    "{} and {} are not parts of one load: {what} {a:?} and {b:?}",
                    first.name, i.name
                )));
            }
        }
        let (la, lb) = (&first.report.levels, &i.report.levels);
        // with shards each file holds its share of every level: the same
        // number of levels of the same kind; without, the same levels
        let same = la.len() == lb.len()
            && la.iter().zip(lb).all(|(a, b)| {
                if sharded {
                    a.concurrency.is_some() == b.concurrency.is_some()
                        && a.request_rate.is_some() == b.request_rate.is_some()
                } else {
                    a.concurrency == b.concurrency
                        && a.request_rate.map(f64::to_bits) == b.request_rate.map(f64::to_bits)
                }
            });
        if !same {
            return Err(MergeError(format!(
                "{} and {} measured different levels ({} and {}): they are not parts of one load",
                first.name,
                i.name,
                loads(&first.report),
                loads(&i.report)
            )));
        }
    }
    if sharded {
        check_shares(inputs)?;
    }
    Ok(())
}

/// With shards, each level of each file must be its shard's part of one
/// load (docs/spec/cli.md, "Scale-out"): the same rate R/N in every file,
/// and concurrencies that are the shares of one C (floor(C/N), plus one
/// for the first C mod N shards). A file of another load with the same
/// number of levels is refused here, naming the files.
fn check_shares(inputs: &[Input]) -> Result<(), MergeError> {
    let first = &inputs[0];
    for k in 0..first.report.levels.len() {
        if let Some(a) = first.report.levels[k].request_rate {
            for i in &inputs[1..] {
                let b = i.report.levels[k].request_rate.unwrap_or(f64::NAN);
                // a NaN is not close to anything: refused too
                let close = (a - b).abs() <= 1e-9 * a.abs().max(b.abs());
                if !close {
                    return Err(MergeError(format!(
                        "{} and {} are not shards of one load: level {} is rate {a}/s in one and {b}/s in the other (each shard sends R/N)",
                        first.name,
                        i.name,
                        k + 1
                    )));
                }
            }
        }
        if first.report.levels[k].concurrency.is_none() {
            continue;
        }
        // (index, concurrency, file) of each shard
        let shares: Vec<(u64, u64, &str)> = inputs
            .iter()
            .map(|i| {
                (
                    i.report.shard.map_or(0, |s| s.index),
                    i.report.levels[k].concurrency.unwrap_or(0),
                    i.name.as_str(),
                )
            })
            .collect();
        let lo = shares.iter().min_by_key(|s| s.1).expect("one input");
        let hi = shares.iter().max_by_key(|s| s.1).expect("one input");
        // the shares of one C differ by at most one, and the larger ones
        // are those of the lowest indexes
        let bad = if hi.1 - lo.1 > 1 {
            Some((lo, hi))
        } else {
            let last_big = shares.iter().filter(|s| s.1 > lo.1).max_by_key(|s| s.0);
            let first_small = shares.iter().filter(|s| s.1 == lo.1).min_by_key(|s| s.0);
            match (last_big, first_small) {
                (Some(b), Some(s)) if b.0 > s.0 => Some((s, b)),
                _ => None,
            }
        };
        if let Some((a, b)) = bad {
            return Err(MergeError(format!(
                "{} and {} are not shards of one load: at level {} shard {} has concurrency {} and shard {} has {}, which are not the shares of one concurrency",
                a.2,
                b.2,
                k + 1,
                a.0,
                a.1,
                b.0,
                b.1
            )));
        }
    }
    Ok(())
}

/// Adds the histogram `text` (one of `file`'s) into `sum`.
fn add(
    sum: &mut Histogram<u64>,
    text: Option<&String>,
    file: &str,
    level: usize,
    what: &str,
) -> Result<(), MergeError> {
    let Some(text) = text else {
        return Ok(());
    };
    let bad = |e: String| MergeError(format!("{file}: level {level}: histogram {what}: {e}"));
    let h = decode(text).map_err(bad)?;
    sum.add(&h)
        .map_err(|_| bad("it holds values above 1 hour, the range of perf's histograms".into()))
}

/// The level at index `k` of every input, merged.
fn merge_level(
    inputs: &[Input],
    k: usize,
    sharded: bool,
    percentile: Option<u8>,
) -> Result<LevelResult, MergeError> {
    let parts: Vec<(&str, &LevelResult)> = inputs
        .iter()
        .map(|i| (i.name.as_str(), &i.report.levels[k]))
        .collect();
    let first = parts[0].1;
    let mut hist = [
        new_histogram(),
        new_histogram(),
        new_histogram(),
        new_histogram(),
    ];
    for (name, l) in &parts {
        let h = l.histograms.as_ref().expect("checked by parse");
        let texts = [
            (&h.latency_us, "latency_us"),
            (&h.first_response_us, "first_response_us"),
            (&h.inter_response_us, "inter_response_us"),
            (&h.sequence_latency_us, "sequence_latency_us"),
        ];
        for (sum, (text, what)) in hist.iter_mut().zip(texts) {
            add(sum, text.as_ref(), name, k + 1, what)?;
        }
    }
    let [lat, first_resp, inter, seq] = hist;
    // counters from a file may be anything: a sum past u64 is refused,
    // naming the file that overflows it
    let overflow = |name: &str, what: &str| {
        MergeError(format!(
            "{name}: level {}: \"{what}\" is too large to add to the other files' (not a count of a real run)",
            k + 1
        ))
    };
    let sum = |what: &str, f: fn(&LevelResult) -> u64| -> Result<u64, MergeError> {
        parts.iter().try_fold(0u64, |acc, (name, l)| {
            acc.checked_add(f(l)).ok_or_else(|| overflow(name, what))
        })
    };
    let sum_f = |f: fn(&LevelResult) -> f64| parts.iter().map(|(_, l)| f(l)).sum::<f64>();
    let ok = sum("successful_requests", |l| l.successful_requests)?;
    let start = parts
        .iter()
        .map(|(_, l)| l.window_start_us)
        .min()
        .unwrap_or(0);
    let end = parts
        .iter()
        .map(|(_, l)| l.window_end_us)
        .max()
        .unwrap_or(0);
    let duration_s = end.saturating_sub(start) as f64 / 1e6;
    let secs = duration_s.max(1e-9);
    let mut errors_by_kind: BTreeMap<String, u64> = BTreeMap::new();
    for (name, l) in &parts {
        for (kind, n) in &l.errors_by_kind {
            let e = errors_by_kind.entry(kind.clone()).or_insert(0);
            *e = e
                .checked_add(*n)
                .ok_or_else(|| overflow(name, "errors_by_kind"))?;
        }
    }
    // in the order first seen; the index keeps the merge linear in the
    // number of targets
    let mut targets: Vec<TargetCount> = Vec::new();
    let mut at: HashMap<&str, usize> = HashMap::new();
    for (name, l) in &parts {
        for t in &l.targets {
            match at.get(t.url.as_str()) {
                Some(&j) => {
                    targets[j].requests = targets[j]
                        .requests
                        .checked_add(t.requests)
                        .ok_or_else(|| overflow(name, "targets"))?;
                }
                None => {
                    at.insert(&t.url, targets.len());
                    targets.push(t.clone());
                }
            }
        }
    }
    let mut tokens: Option<u64> = None;
    for (name, l) in &parts {
        if let Some(n) = l.output_token_count {
            tokens = Some(
                tokens
                    .unwrap_or(0)
                    .checked_add(n)
                    .ok_or_else(|| overflow(name, "output_token_count"))?,
            );
        }
    }
    let stable = if parts.iter().any(|(_, l)| l.stable == Some(false)) {
        Some(false)
    } else if parts.iter().all(|(_, l)| l.stable == Some(true)) {
        Some(true)
    } else {
        None
    };
    let (concurrency, request_rate) = if sharded {
        (
            match first.concurrency {
                Some(_) => Some(sum("concurrency", |l| l.concurrency.unwrap_or(0))?),
                None => None,
            },
            // every shard's rate is R/N (checked): R is one of them times
            // the shards merged, rounded to 12 significant digits so that
            // the division and this product leave no float noise
            first
                .request_rate
                .map(|r| round_rate(r * parts.len() as f64)),
        )
    } else {
        (first.concurrency, first.request_rate)
    };
    let send_total = sum_f(|l| l.client_send_total_us);
    let recv_total = sum_f(|l| l.client_recv_total_us);
    let successful_responses = sum("successful_responses", |l| l.successful_responses)?;
    let inferences = sum("inferences", |l| l.inferences)?;
    Ok(LevelResult {
        concurrency,
        request_rate,
        duration_s,
        requests: sum("requests", |l| l.requests)?,
        errors: sum("errors", |l| l.errors)?,
        errors_by_kind,
        throughput_per_s: inferences as f64 / secs,
        requests_per_s: ok as f64 / secs,
        latency_us: (!lat.is_empty()).then(|| latency(&lat, percentile)),
        latency_cdf: if lat.is_empty() {
            Vec::new()
        } else {
            cdf(&lat)
        },
        cancelled: sum("cancelled", |l| l.cancelled)?,
        responses: sum("responses", |l| l.responses)?,
        first_response_us: (!first_resp.is_empty()).then(|| latency(&first_resp, None)),
        inter_response_us: (!inter.is_empty()).then(|| latency(&inter, None)),
        responses_per_request: (ok > 0).then(|| PerRequest {
            mean: successful_responses as f64 / ok as f64,
            max: parts
                .iter()
                .filter_map(|(_, l)| l.responses_per_request.as_ref().map(|r| r.max))
                .max()
                .unwrap_or(0),
        }),
        output_tokens_per_s: tokens.map(|t| t as f64 / secs),
        output_tokens_source: None,
        sequence_latency_us: (!seq.is_empty()).then(|| latency(&seq, None)),
        late_sends: sum("late_sends", |l| l.late_sends)?,
        client: (ok > 0).then(|| ClientStats {
            send_us: send_total / ok as f64,
            recv_us: recv_total / ok as f64,
        }),
        // the server's statistics and GPU metrics are the server's, not the
        // worker's: each worker's diff already counts the other workers'
        // requests when their windows overlap, so they are not summed
        server: None,
        stable,
        windows: parts.iter().map(|(_, l)| l.windows).max().unwrap_or(0),
        targets,
        percentile_latency_us: percentile
            .filter(|_| !lat.is_empty())
            .map(|p| lat.value_at_quantile(f64::from(p) / 100.0)),
        latency_threshold_met: None,
        metrics: None,
        successful_requests: ok,
        inferences,
        successful_responses,
        output_token_count: tokens,
        client_send_total_us: send_total,
        client_recv_total_us: recv_total,
        window_start_us: start,
        window_end_us: end,
        histograms: Some(Histograms {
            latency_us: encode(&lat),
            first_response_us: encode(&first_resp),
            inter_response_us: encode(&inter),
            sequence_latency_us: encode(&seq),
        }),
    })
}

/// `rate` rounded to 12 significant digits: a rate given on the command
/// line, divided over the shards and multiplied back, is itself again.
fn round_rate(rate: f64) -> f64 {
    format!("{rate:.11e}").parse().unwrap_or(rate)
}

/// The documents of `inputs` (at least one), merged into one report: the
/// document `perf --format json` writes for the whole load, with
/// `merged_from` naming the files, so that it can be merged again.
pub fn merge(inputs: &[Input]) -> Result<PerfReport, MergeError> {
    let Some(first) = inputs.first() else {
        return Err(MergeError(
            "nothing to merge: name the JSON files of the workers".into(),
        ));
    };
    let sharded = sharded(inputs)?;
    check(inputs, sharded)?;
    let r0 = &first.report;
    let levels = (0..r0.levels.len())
        .map(|k| {
            let mut l = merge_level(inputs, k, sharded, r0.percentile)?;
            l.latency_threshold_met = r0.latency_threshold_ms.map(|t| meets_threshold(&l, t));
            Ok(l)
        })
        .collect::<Result<Vec<_>, MergeError>>()?;
    let mut notes = Vec::new();
    let mut warnings = Vec::new();
    if let (true, Some(s)) = (sharded, r0.shard) {
        if (inputs.len() as u64) < s.count {
            let mut have: Vec<u64> = inputs
                .iter()
                .filter_map(|i| i.report.shard.map(|s| s.index))
                .collect();
            have.sort_unstable();
            let have: Vec<String> = have.iter().map(u64::to_string).collect();
            warnings.push(format!(
                "{} of {} shards merged (indexes {}): the report is of part of the load",
                inputs.len(),
                s.count,
                have.join(", ")
            ));
        }
    }
    if inputs.len() > 1 {
        for (k, _) in r0.levels.iter().enumerate() {
            let latest_start = inputs
                .iter()
                .map(|i| i.report.levels[k].window_start_us)
                .max();
            let earliest_end = inputs
                .iter()
                .map(|i| i.report.levels[k].window_end_us)
                .min();
            if latest_start >= earliest_end {
                warnings.push(format!(
                    "level {}: the workers' measurement windows do not overlap; the rates are over the span from the first start to the last end (start the workers together, e.g. with --start-at)",
                    k + 1
                ));
                break;
            }
        }
    }
    if inputs.iter().any(|i| {
        i.report
            .levels
            .iter()
            .any(|l| l.server.is_some() || l.metrics.is_some())
    }) {
        notes.push("the server's statistics and GPU metrics are left out of a merge: each worker's include the other workers' load".into());
    }
    let mut urls: Vec<String> = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    for u in inputs.iter().flat_map(|i| &i.report.urls) {
        if seen.insert(u) {
            urls.push(u.clone());
        }
    }
    let tokens: Vec<&str> = inputs
        .iter()
        .filter_map(|i| i.report.output_tokens.as_deref())
        .collect();
    let output_tokens = if tokens.contains(&"responses") {
        Some("responses".to_string())
    } else {
        tokens.first().map(|t| t.to_string())
    };
    let binary_search = r0.binary_search.as_ref().map(|_| BinarySearch {
        highest_passing: levels
            .iter()
            .filter(|l| l.latency_threshold_met == Some(true))
            .filter_map(|l| match (l.concurrency, l.request_rate) {
                (Some(c), _) => Some(LoadValue::Concurrency(c)),
                (_, Some(r)) => Some(LoadValue::Rate(r)),
                _ => None,
            })
            .reduce(|a, b| match (a, b) {
                (LoadValue::Concurrency(x), LoadValue::Concurrency(y)) => {
                    LoadValue::Concurrency(x.max(y))
                }
                (LoadValue::Rate(x), LoadValue::Rate(y)) => LoadValue::Rate(x.max(y)),
                (a, _) => a,
            }),
        levels_measured: levels.len() as u64,
    });
    Ok(PerfReport {
        model: r0.model.clone(),
        protocol: r0.protocol.clone(),
        url: r0.url.clone(),
        urls,
        batch_size: r0.batch_size,
        input_tensor_format: r0.input_tensor_format.clone(),
        output_tensor_format: r0.output_tensor_format.clone(),
        model_config_source: r0.model_config_source.clone(),
        mode: r0.mode.clone(),
        endpoint: r0.endpoint.clone(),
        decoupled: inputs.iter().any(|i| i.report.decoupled),
        output_tokens,
        percentile: r0.percentile,
        latency_threshold_ms: r0.latency_threshold_ms,
        binary_search,
        metrics_url: None,
        shared_memory: None,
        request_distribution: r0.request_distribution.clone(),
        shard: None,
        merged_from: Some(inputs.iter().map(|i| i.name.clone()).collect()),
        levels,
        notes,
        warnings,
    })
}

#[cfg(test)]
mod tests;
