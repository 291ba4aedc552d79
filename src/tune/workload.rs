//! The requests a search replays: generated once (`--rate`, with the
//! generator of `trace generate`) or read once from a trace file
//! (`simulate`'s format, or the lines `perf --export-requests` writes),
//! then kept in memory for every candidate.

use crate::batching::{CorrId, Request};
use crate::simulate::{Error, TraceInput};
use crate::trace::GenerateOptions;
use std::path::Path;

/// The requests, in arrival order.
pub struct Workload {
    pub requests: Vec<Request>,
    /// What the requests are, for the report (`Poisson 200/s, 10000
    /// requests, seed 0`, a file name).
    pub source: String,
    /// Requests per second over the trace (first to last arrival).
    pub rate_per_s: f64,
}

impl Workload {
    fn new(requests: Vec<Request>, source: String) -> Result<Workload, Error> {
        if requests.is_empty() {
            return Err(Error::Input(format!(
                "{source}: the workload has no request"
            )));
        }
        let first = requests[0].arrival_us;
        let last = requests[requests.len() - 1].arrival_us;
        let span_s = last.saturating_sub(first) as f64 / 1e6;
        let rate_per_s = if span_s > 0.0 {
            (requests.len() - 1) as f64 / span_s
        } else {
            0.0
        };
        Ok(Workload {
            requests,
            source,
            rate_per_s,
        })
    }
}

/// Most requests a workload holds: they are kept in memory (about 150
/// bytes each) and replayed for every candidate (docs/spec/cli.md, `tune`).
pub const MAX_REQUESTS: u64 = 10_000_000;

/// Poisson arrivals (or sequences of them) from the options of `trace
/// generate`.
pub fn generated(opts: &GenerateOptions) -> Result<Workload, Error> {
    check_size(opts)?;
    let requests = crate::trace::requests(opts, MAX_REQUESTS).map_err(|e| match e {
        crate::trace::GenerateError::TooMany(max) => Error::Usage(format!(
            "the workload has more than {max} requests, the most tune keeps in memory: \
             lower --duration or --rate"
        )),
        e => Error::Usage(e.to_string()),
    })?;
    let mut source = format!("Poisson arrivals at {}/s", opts.rate);
    if opts.sequences > 0 {
        source.push_str(&format!(
            " of {} sequences of {} steps ({} µs apart)",
            opts.sequences, opts.sequence_length, opts.think_time_us
        ));
    }
    source.push_str(&format!(", seed {}", opts.seed));
    Workload::new(requests, source)
}

/// Refuses options that ask for more than [`MAX_REQUESTS`] requests,
/// naming the flag, before anything is generated (the generator stops at
/// the bound too, for a Poisson count above its mean).
fn check_size(opts: &GenerateOptions) -> Result<(), Error> {
    let max = MAX_REQUESTS;
    let too_many = |what: String| {
        Err(Error::Usage(format!(
            "{what}: more than {max} requests, the most tune keeps in memory"
        )))
    };
    if let Some(n) = opts.requests.filter(|&n| n > max) {
        return too_many(format!("--requests {n}"));
    }
    if opts.requests.is_some() {
        return Ok(());
    }
    // no --requests: the duration and the sequences bound the count
    let by_duration = opts
        .duration_s
        .filter(|d| d.is_finite() && *d >= 0.0)
        .map(|d| d * opts.rate);
    if opts.sequences == 0 {
        return match by_duration {
            Some(n) if n > max as f64 => too_many(format!(
                "--rate {} for --duration {} is about {n:.3e} requests",
                opts.rate,
                opts.duration_s.unwrap_or_default()
            )),
            _ => Ok(()),
        };
    }
    let longest = (opts.sequence_length as f64
        * (1.0 + opts.sequence_length_variation.clamp(0.0, 100.0) / 100.0))
        .round()
        .max(1.0);
    let starts = by_duration.map_or(opts.sequences as f64, |n| n.min(opts.sequences as f64));
    let n = starts * longest;
    if n > max as f64 {
        let what = if by_duration.is_some_and(|d| d < opts.sequences as f64) {
            format!(
                "--rate {} for --duration {} with --sequence-length {}",
                opts.rate,
                opts.duration_s.unwrap_or_default(),
                opts.sequence_length
            )
        } else {
            format!(
                "--sequences {} of --sequence-length {}",
                opts.sequences, opts.sequence_length
            )
        };
        return too_many(format!("{what} is about {n:.3e} requests"));
    }
    Ok(())
}

/// A trace file: `simulate`'s JSON Lines, or `perf --export-requests`
/// lines (recognised by `scheduled_us` and no `arrival_us` on the first
/// line), whose scheduled send times become arrivals counted from the
/// first one. Warnings about the trace go to `warn`.
pub fn from_file(
    path: &Path,
    level: Option<u64>,
    warn: &mut dyn FnMut(&str),
) -> Result<Workload, Error> {
    let name = path.display().to_string();
    let bytes = crate::files::read_file(path).map_err(|e| {
        Error::Input(format!(
            "{name}: cannot read: {}",
            crate::files::io_message(&e)
        ))
    })?;
    let first = bytes
        .split(|&b| b == b'\n')
        .find(|l| !l.iter().all(u8::is_ascii_whitespace));
    let export = first
        .and_then(|l| serde_json::from_slice::<serde_json::Value>(l).ok())
        .is_some_and(|v| v.get("scheduled_us").is_some() && v.get("arrival_us").is_none());
    if export {
        return Workload::new(export_requests(&bytes, &name, level)?, name);
    }
    if level.is_some() {
        return Err(Error::Usage(format!(
            "{name}: --level selects a level of a `perf --export-requests` file, and this is a trace"
        )));
    }
    let mut requests = Vec::new();
    let input = TraceInput::File(path.to_path_buf());
    crate::simulate::replay::replay_with(
        &input,
        |_| {},
        Some(warn),
        |it| {
            requests.extend(it.take(MAX_REQUESTS as usize + 1));
        },
    )?;
    if requests.len() as u64 > MAX_REQUESTS {
        return Err(too_many_lines(&name));
    }
    Workload::new(requests, name)
}

/// The requests of `perf --export-requests` lines (docs/spec/cli.md):
/// one arrival per line at its `scheduled_us`, sorted, from the first, of
/// one level (`level`, or the only one in the file). Lines with a
/// `sequence_id` are the steps of that sequence: its first line (by
/// `scheduled_us`) starts it, its last ends it.
fn export_requests(bytes: &[u8], name: &str, level: Option<u64>) -> Result<Vec<Request>, Error> {
    let mut lines: Vec<(u64, Option<CorrId>)> = Vec::new();
    let mut levels = std::collections::BTreeSet::new();
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if lines.len() as u64 >= MAX_REQUESTS {
            return Err(too_many_lines(name));
        }
        let v: serde_json::Value = serde_json::from_slice(line).map_err(|e| {
            Error::Input(format!(
                "{name}:{}:{}: not a JSON line: {e}",
                i + 1,
                e.column()
            ))
        })?;
        let t = v
            .get("scheduled_us")
            .and_then(serde_json::Value::as_u64)
            .ok_or_else(|| {
                Error::Input(format!(
                    "{name}:{}: expected \"scheduled_us\" (microseconds, a non-negative integer) as `perf --export-requests` writes it",
                    i + 1
                ))
            })?;
        let l = match v.get("level") {
            None | Some(serde_json::Value::Null) => 0,
            Some(l) => l.as_u64().ok_or_else(|| {
                Error::Input(format!(
                    "{name}:{}: expected \"level\" to be a non-negative integer",
                    i + 1
                ))
            })?,
        };
        levels.insert(l);
        if level.is_some_and(|want| want != l) {
            continue;
        }
        let sequence = match v.get("sequence_id") {
            None | Some(serde_json::Value::Null) => None,
            Some(serde_json::Value::String(s)) => Some(CorrId::Str(s.clone())),
            Some(n) => Some(CorrId::Int(n.as_u64().ok_or_else(|| {
                Error::Input(format!(
                    "{name}:{}: expected \"sequence_id\" to be a non-negative integer, a string or null",
                    i + 1
                ))
            })?)),
        };
        lines.push((t, sequence));
    }
    match level {
        None if levels.len() > 1 => {
            return Err(Error::Usage(format!(
                "{name}: the export holds levels {}: choose one with --level I (each level is its own workload)",
                level_list(&levels)
            )))
        }
        Some(want) if !levels.contains(&want) => {
            return Err(Error::Usage(format!(
                "{name}: no line of level {want} (the export holds levels {})",
                level_list(&levels)
            )))
        }
        _ => {}
    }
    // stable: the lines of one time keep their order in the file
    lines.sort_by_key(|(t, _)| *t);
    let start = lines.first().map_or(0, |(t, _)| *t);
    let mut requests: Vec<Request> = lines
        .into_iter()
        .enumerate()
        .map(|(i, (t, sequence))| {
            let mut r = Request::new(format!("r{i}"), t - start);
            r.tag = i as u64;
            r.sequence_id = sequence;
            r
        })
        .collect();
    // first and last step of each sequence
    let mut first: std::collections::HashMap<CorrId, usize> = Default::default();
    let mut last: std::collections::HashMap<CorrId, usize> = Default::default();
    for (i, r) in requests.iter().enumerate() {
        if let Some(id) = &r.sequence_id {
            first.entry(id.clone()).or_insert(i);
            last.insert(id.clone(), i);
        }
    }
    for i in first.into_values() {
        requests[i].start = true;
    }
    for i in last.into_values() {
        requests[i].end = true;
    }
    Ok(requests)
}

fn too_many_lines(name: &str) -> Error {
    Error::Usage(format!(
        "{name}: more than {MAX_REQUESTS} requests, the most tune keeps in memory: \
         use a part of the trace"
    ))
}

/// The levels of an export for a message: the first 10, then how many more.
fn level_list(levels: &std::collections::BTreeSet<u64>) -> String {
    let mut shown: Vec<String> = levels.iter().take(10).map(u64::to_string).collect();
    if levels.len() > 10 {
        shown.push(format!("and {} more", levels.len() - 10));
    }
    shown.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exported_requests_become_arrivals_from_the_first() {
        let lines = b"{\"level\": 0, \"scheduled_us\": 1700000000002000, \"send_us\": 1700000000002100, \"response_us\": [1700000000003000], \"error\": null}\n\
{\"level\": 0, \"scheduled_us\": 1700000000000000, \"send_us\": 1700000000000050, \"response_us\": [], \"error\": \"cancelled\"}\n\n";
        let r = export_requests(lines, "x.jsonl", None).unwrap();
        let t: Vec<u64> = r.iter().map(|r| r.arrival_us).collect();
        assert_eq!(t, [0, 2000]);
        let e = export_requests(b"{\"scheduled_us\": -1}\n", "x.jsonl", None).unwrap_err();
        assert!(e.to_string().starts_with("x.jsonl:1: expected"), "{e}");
        let e = export_requests(b"{\"scheduled_us\": 1}\n{oops\n", "x.jsonl", None).unwrap_err();
        assert!(
            e.to_string().starts_with("x.jsonl:2:2: not a JSON line"),
            "{e}"
        );
    }

    #[test]
    fn an_export_of_several_levels_needs_level() {
        let lines = b"{\"level\": 0, \"scheduled_us\": 100}\n{\"level\": 1, \"scheduled_us\": 5000000}\n{\"level\": 1, \"scheduled_us\": 5000300}\n";
        let e = export_requests(lines, "x.jsonl", None).unwrap_err();
        assert!(matches!(e, Error::Usage(_)), "{e}");
        assert!(
            e.to_string().contains("--level") && e.to_string().contains("0, 1"),
            "{e}"
        );
        let r = export_requests(lines, "x.jsonl", Some(1)).unwrap();
        let t: Vec<u64> = r.iter().map(|r| r.arrival_us).collect();
        assert_eq!(t, [0, 300]);
        let e = export_requests(lines, "x.jsonl", Some(2)).unwrap_err();
        assert!(e.to_string().contains("no line of level 2"), "{e}");
    }

    #[test]
    fn exported_sequence_ids_become_sequences() {
        // sequence 7: three steps (written out of order), sequence "a": one
        let lines = b"{\"scheduled_us\": 30, \"sequence_id\": 7}\n{\"scheduled_us\": 10, \"sequence_id\": 7}\n{\"scheduled_us\": 15, \"sequence_id\": \"a\"}\n{\"scheduled_us\": 20, \"sequence_id\": 7}\n{\"scheduled_us\": 25, \"sequence_id\": null}\n";
        let r = export_requests(lines, "x.jsonl", None).unwrap();
        let got: Vec<(u64, Option<CorrId>, bool, bool)> = r
            .iter()
            .map(|r| (r.arrival_us, r.sequence_id.clone(), r.start, r.end))
            .collect();
        let s7 = Some(CorrId::Int(7));
        assert_eq!(
            got,
            [
                (0, s7.clone(), true, false),
                (5, Some(CorrId::Str("a".into())), true, true),
                (10, s7.clone(), false, false),
                (15, None, false, false),
                (20, s7, false, true),
            ]
        );
    }
}
