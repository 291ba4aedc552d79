//! The checks and conversions that turn `tritonctl perf`'s arguments into
//! a [`PerfOptions`](super::load::PerfOptions): load levels, measurement
//! window, headers, input data, sequence ids, the default server. Each
//! returns the usage message the command shows (exit status 2); the
//! command calls them in the order of its arguments' checks.

use super::generative::Api;
use super::inputs::{DataFile, InputData};
use super::load::Window;
use super::rng::Rng;
use super::schedule::{self, Level};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The load levels to measure, and the send intervals when they come
/// from a file.
#[derive(Debug, Clone)]
pub struct LoadLevels {
    pub levels: Vec<Level>,
    /// `--request-intervals`: the gaps between sends, in seconds.
    pub intervals: Option<Arc<Vec<f64>>>,
}

/// The load levels: `--request-rate-range` wins over
/// `--concurrency-range`; without either, `--request-intervals` (a file
/// of gaps in seconds) gives one level at the file's mean rate and the
/// gaps themselves; without any, concurrency 1.
///
/// With `-l` (`latency_threshold`), END 0 means no end, as perf_analyzer's:
/// START, START + STEP, ... until a level does not meet the threshold, at
/// most [`MAX_OPEN_LEVELS`] levels.
pub fn levels(
    concurrency_range: Option<&str>,
    request_rate_range: Option<&str>,
    request_intervals: Option<&Path>,
    latency_threshold: bool,
) -> Result<LoadLevels, String> {
    let open = |text: &str, rate: bool| -> Result<Option<Vec<Level>>, String> {
        let parts: Vec<&str> = text.split(':').collect();
        if parts.len() < 2 || parts.len() > 3 || parts[1].trim().parse::<f64>().ok() != Some(0.0) {
            return Ok(None);
        }
        if !latency_threshold {
            return Err(format!(
                "range '{text}': END 0 (no end) needs -l/--latency-threshold, which ends the sweep"
            ));
        }
        // START and STEP checked as in any range
        let first = format!("{}:{}:{}", parts[0], parts[0], parts.get(2).unwrap_or(&"1"));
        let checked = if rate {
            schedule::rate_levels(&first)
        } else {
            schedule::concurrency_levels(&first)
        };
        checked.map_err(|e| e.replace(&first, text))?;
        let (start, _, step) = schedule::parse_range(&first)?;
        Ok(Some(
            (0..MAX_OPEN_LEVELS)
                .map(|i| {
                    let v = start + step * i as f64;
                    if rate {
                        Level::Rate(v)
                    } else {
                        Level::Concurrency(v as u64)
                    }
                })
                .take_while(|l| !matches!(l, Level::Concurrency(c) if *c > MAX_CONCURRENCY_LEVEL))
                .collect(),
        ))
    };
    let (levels, intervals) = match (concurrency_range, request_rate_range) {
        (_, Some(r)) => match open(r, true)? {
            Some(l) => (l, None),
            None => (schedule::rate_levels(r)?, None),
        },
        (Some(c), None) => match open(c, false)? {
            Some(l) => (l, None),
            None => (schedule::concurrency_levels(c)?, None),
        },
        (None, None) => match request_intervals {
            Some(path) => {
                let name = path.display().to_string();
                let text = crate::files::read_file_to_string(path)
                    .map_err(|e| format!("cannot read {name}: {e}"))?;
                let gaps = schedule::parse_intervals(&name, &text)?;
                // the level's rate is the file's mean
                let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
                (vec![Level::Rate(1.0 / mean)], Some(Arc::new(gaps)))
            }
            None => (vec![Level::Concurrency(1)], None),
        },
    };
    Ok(LoadLevels { levels, intervals })
}

/// The most levels of a range with END 0 (no end; with `-l`).
pub const MAX_OPEN_LEVELS: usize = 1024;

/// The highest concurrency a level may have: each request in flight is a
/// task and a connection (a client runs out of ports long before), so a
/// larger number is a mistake that would only exhaust memory.
pub const MAX_CONCURRENCY_LEVEL: u64 = 65_536;

/// Refuses a concurrency level above [`MAX_CONCURRENCY_LEVEL`].
pub fn check_concurrency(levels: &[Level]) -> Result<(), String> {
    match levels.iter().find_map(|l| match l {
        Level::Concurrency(c) if *c > MAX_CONCURRENCY_LEVEL => Some(*c),
        _ => None,
    }) {
        Some(c) => Err(format!(
            "concurrency {c} is above {MAX_CONCURRENCY_LEVEL}, the most one client can hold in flight; load from several clients instead"
        )),
        None => Ok(()),
    }
}

/// `-H Name:Value` headers, trimmed; each must be a valid HTTP header.
pub fn headers(given: &[String]) -> Result<Vec<(String, String)>, String> {
    let mut headers = Vec::new();
    for h in given {
        let (k, v) = h
            .split_once(':')
            .ok_or_else(|| format!("-H '{h}' is not Name:Value"))?;
        let (k, v) = (k.trim(), v.trim());
        if k.is_empty()
            || hyper::header::HeaderName::from_bytes(k.as_bytes()).is_err()
            || hyper::header::HeaderValue::from_str(v).is_err()
        {
            return Err(format!("-H '{h}' is not a valid HTTP header"));
        }
        headers.push((k.to_string(), v.to_string()));
    }
    Ok(headers)
}

/// The arguments that choose how long each level measures.
#[derive(Debug, Clone, Copy)]
pub struct WindowArgs {
    /// `--duration`, seconds.
    pub duration: Option<f64>,
    /// `--request-count`.
    pub request_count: Option<u64>,
    /// `--measurement-interval`, milliseconds.
    pub measurement_interval: u64,
    /// `--stability-percentage`.
    pub stability_percentage: f64,
    /// `--max-trials`.
    pub max_trials: u32,
    /// `--measurement-mode count_windows` with `--measurement-request-count`
    /// (perf_analyzer's default 50 when not given).
    pub count_windows: Option<Option<u64>>,
}

/// The measurement window: a request count, else a duration, else
/// stability windows.
pub fn window(a: WindowArgs) -> Result<Window, String> {
    Ok(match (a.duration, a.request_count) {
        (_, Some(0)) => return Err("--request-count must be at least 1".into()),
        (_, Some(n)) => Window::Count(n),
        (Some(d), None) if !(d > 0.0 && d.is_finite()) => {
            return Err("--duration must be above 0 seconds".into())
        }
        (Some(d), None) => Window::Time(Duration::from_secs_f64(d)),
        (None, None) if a.measurement_interval == 0 => {
            return Err("--measurement-interval must be above 0".into())
        }
        (None, None) if !(a.stability_percentage > 0.0 && a.stability_percentage.is_finite()) => {
            return Err("--stability-percentage must be above 0".into())
        }
        (None, None) if a.max_trials < 3 => {
            return Err(
                "--max-trials must be at least 3 (stability compares the last 3 windows)".into(),
            )
        }
        (None, None) => Window::Stability {
            interval: Duration::from_millis(a.measurement_interval),
            percentage: a.stability_percentage,
            max_trials: a.max_trials,
            count: match a.count_windows {
                None => None,
                Some(Some(0)) => {
                    return Err("--measurement-request-count must be at least 1".into())
                }
                Some(n) => Some(n.unwrap_or(DEFAULT_MEASUREMENT_REQUEST_COUNT)),
            },
        },
    })
}

/// perf_analyzer's default `--measurement-request-count`
/// (docs/spec/perf-anchors.md, measurement method).
pub const DEFAULT_MEASUREMENT_REQUEST_COUNT: u64 = 50;

/// `--measurement-mode` and `--measurement-request-count`: `None` for time
/// windows, else count windows of at least N requests (`Some(None)`:
/// perf_analyzer's default). The count needs count windows, and count
/// windows are stability windows (not with `--duration` or
/// `--request-count`).
pub fn measurement_mode(
    count_windows: bool,
    request_count: Option<u64>,
    fixed_window: bool,
) -> Result<Option<Option<u64>>, String> {
    if !count_windows {
        if request_count.is_some() {
            return Err(
                "--measurement-request-count needs --measurement-mode count_windows".into(),
            );
        }
        return Ok(None);
    }
    if fixed_window {
        return Err("--measurement-mode count_windows measures in stability windows: leave out --duration and --request-count".into());
    }
    Ok(Some(request_count))
}

/// `--sequence-length-variation`: a percentage from 0 to 100.
pub fn check_sequence_length_variation(v: f64) -> Result<(), String> {
    if !(0.0..=100.0).contains(&v) {
        return Err("--sequence-length-variation must be a percentage from 0 to 100".into());
    }
    Ok(())
}

/// `--input-data`: `random`, `zero`, a JSON data file in perf_analyzer's
/// format (then the tensors it does not give are random), or a file of
/// prompts as JSON Lines (see [`parse_prompts`]) for the generative
/// endpoints. Returns the values, the data file and the prompts; a file
/// that does not fit `api` is refused.
#[allow(clippy::type_complexity)]
pub fn input_data(
    spec: &str,
    api: Api,
) -> Result<(InputData, Option<DataFile>, Option<Vec<String>>), String> {
    if let Ok(d) = InputData::parse(spec) {
        return Ok((d, None, None));
    }
    let path = std::path::Path::new(spec);
    if path.is_dir() {
        if api != Api::Infer {
            return Err(format!(
                "--input-data '{spec}' is a directory of tensors; --endpoint {} takes prompts as JSON Lines (one {{\"text\": \"...\"}} per line)",
                api.name()
            ));
        }
        return Ok((InputData::Random, Some(read_data_dir(path)?), None));
    }
    let text = crate::files::read_file_to_string(std::path::Path::new(spec)).map_err(|e| {
        format!("--input-data '{spec}' is not 'random', 'zero' or a readable JSON file: {e}")
    })?;
    if holds_prompts(&text) {
        if api == Api::Infer {
            return Err(format!(
                "--input-data '{spec}' holds prompts (JSON Lines), which only the generative endpoints take (--endpoint generate, openai-chat or openai-completions)"
            ));
        }
        return Ok((InputData::Random, None, Some(parse_prompts(spec, &text)?)));
    }
    if api != Api::Infer {
        return Err(format!(
            "--input-data '{spec}' is perf_analyzer's input-data JSON; --endpoint {} takes prompts as JSON Lines (one {{\"text\": \"...\"}} per line)",
            api.name()
        ));
    }
    Ok((InputData::Random, Some(DataFile::parse(spec, &text)?), None))
}

/// The most files `--input-data DIR` may hold.
pub const MAX_DATA_DIR_FILES: usize = 4096;

/// `--input-data DIR`, perf_analyzer's directory form: one file per input
/// named after it (checked against the model by
/// [`DataFile::bodies`](super::inputs::DataFile::bodies)). Each file is
/// read through [`crate::files::read_in`] (a regular file inside DIR, at
/// most `--max-file-bytes`); subdirectories and hidden files are skipped.
/// The files together are bounded by `--max-file-bytes` too: they are the
/// inputs of one request.
pub fn read_data_dir(dir: &Path) -> Result<DataFile, String> {
    let limit = crate::files::read_policy().max_file_bytes;
    let mut total = 0u64;
    let shown = crate::text::display::path(dir).to_string();
    let listing = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read {shown}: {}", crate::files::io_message(&e)))?;
    let mut files = Vec::new();
    for entry in listing {
        let entry =
            entry.map_err(|e| format!("cannot read {shown}: {}", crate::files::io_message(&e)))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if name.starts_with('.') || path.is_dir() {
            continue;
        }
        if files.len() >= MAX_DATA_DIR_FILES {
            return Err(format!(
                "--input-data {shown}: more than {MAX_DATA_DIR_FILES} files (one per input is expected)"
            ));
        }
        let bytes = crate::files::read_in(&path, dir).map_err(|e| {
            format!(
                "cannot read {}: {}",
                crate::text::display::path(&path),
                crate::files::io_message(&e)
            )
        })?;
        total = total.saturating_add(bytes.len() as u64);
        if total > limit {
            return Err(format!(
                "--input-data {shown}: its files hold more than --max-file-bytes ({limit} bytes) together"
            ));
        }
        files.push((name, bytes));
    }
    files.sort();
    Ok(DataFile::from_dir(&shown, files))
}

/// `--binary-search`: the range of `--concurrency-range` or
/// `--request-rate-range` as START, END and STEP (both given explicitly,
/// as perf_analyzer requires).
pub fn binary_range(
    concurrency_range: Option<&str>,
    request_rate_range: Option<&str>,
) -> Result<super::load::BinaryRange, String> {
    let (text, rate) = match (request_rate_range, concurrency_range) {
        (Some(r), _) => (r, true),
        (None, Some(c)) => (c, false),
        (None, None) => {
            return Err(
                "--binary-search needs --concurrency-range START:END[:STEP] or --request-rate-range START:END[:STEP]".into(),
            )
        }
    };
    if text.split(':').count() < 2 {
        return Err(format!(
            "--binary-search searches between START and END: give both ('{text}' has no END)"
        ));
    }
    let (start, end, step) = schedule::parse_range(text)?;
    if rate {
        Ok(super::load::BinaryRange {
            start: Level::Rate(start),
            end: Level::Rate(end),
            step,
        })
    } else {
        if [start, end, step].iter().any(|v| v.fract() != 0.0) {
            return Err(format!("concurrency range '{text}': whole numbers only"));
        }
        Ok(super::load::BinaryRange {
            start: Level::Concurrency(start as u64),
            end: Level::Concurrency(end as u64),
            step,
        })
    }
}

/// `-l`: above 0 milliseconds.
pub fn check_latency_threshold(ms: Option<f64>) -> Result<(), String> {
    match ms {
        Some(v) if !(v > 0.0 && v.is_finite()) => {
            Err("--latency-threshold must be above 0 milliseconds".into())
        }
        _ => Ok(()),
    }
}

/// Whether a file's text is prompts as JSON Lines rather than
/// perf_analyzer's input-data JSON (one document with `data`): its first
/// line that is not blank is a JSON document of its own that is a string
/// or an object with `text` or `prompt`, or a document of its own that the
/// whole text is not.
fn holds_prompts(text: &str) -> bool {
    let Some(first) = text.lines().map(str::trim).find(|l| !l.is_empty()) else {
        return false;
    };
    match serde_json::from_str::<Value>(first) {
        Ok(Value::String(_)) => true,
        Ok(Value::Object(o)) => {
            o.contains_key("text")
                || o.contains_key("prompt")
                || serde_json::from_str::<Value>(text).is_err()
        }
        Ok(_) => serde_json::from_str::<Value>(text).is_err(),
        Err(_) => false,
    }
}

/// Prompts as JSON Lines: each line `{"text": "..."}`, `{"prompt":
/// "..."}` or a JSON string; blank lines are skipped. An error names
/// `FILE:LINE:COL`.
pub fn parse_prompts(name: &str, text: &str) -> Result<Vec<String>, String> {
    let mut prompts = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = |col: usize| format!("{name}:{}:{col}", i + 1);
        let v: Value = serde_json::from_str(line).map_err(|e| {
            // serde's text ends with its own position
            let msg = e.to_string();
            let msg = msg
                .rsplit_once(" at line ")
                .map_or(msg.as_str(), |(m, _)| m);
            format!("{}: not JSON: {msg}", at(e.column().max(1)))
        })?;
        let col = line.len() - line.trim_start().len() + 1;
        let prompt = match v {
            Value::String(s) => s,
            Value::Object(mut o) => match o.remove("text").or_else(|| o.remove("prompt")) {
                Some(Value::String(s)) => s,
                _ => {
                    return Err(format!(
                    "{}: expected {{\"text\": \"...\"}}, {{\"prompt\": \"...\"}} or a JSON string",
                    at(col)
                ))
                }
            },
            _ => {
                return Err(format!(
                    "{}: expected {{\"text\": \"...\"}}, {{\"prompt\": \"...\"}} or a JSON string",
                    at(col)
                ))
            }
        };
        prompts.push(prompt);
    }
    if prompts.is_empty() {
        return Err(format!(
            "{name}: no prompts (JSON Lines, one {{\"text\": \"...\"}} per line)"
        ));
    }
    Ok(prompts)
}

/// `--warmup` (seconds), `--max-error-rate` and `--timeout` (ms).
pub fn check_limits(warmup: f64, max_error_rate: f64, timeout_ms: u64) -> Result<(), String> {
    if !(warmup >= 0.0 && warmup.is_finite()) {
        return Err("--warmup must be 0 or more seconds".into());
    }
    if !(0.0..=1.0).contains(&max_error_rate) {
        return Err("--max-error-rate must be between 0 and 1".into());
    }
    if timeout_ms == 0 {
        return Err("--timeout must be above 0 ms".into());
    }
    Ok(())
}

/// `--max-concurrency`, `--max-response-bytes` and `--max-input-bytes`:
/// at least 1 (0 has no meaning, and would be a limit nothing passes).
pub fn check_maxima(
    max_concurrency: usize,
    max_response_bytes: Option<u64>,
    max_input_bytes: u64,
) -> Result<(), String> {
    if max_concurrency == 0 {
        return Err("--max-concurrency must be at least 1".into());
    }
    if max_response_bytes == Some(0) {
        return Err("--max-response-bytes must be at least 1".into());
    }
    if max_input_bytes == 0 {
        return Err("--max-input-bytes must be at least 1".into());
    }
    Ok(())
}

/// The servers to load: the given ones, else Triton's default HTTP or
/// gRPC port on this machine.
pub fn urls(given: &[String], grpc: bool) -> Vec<String> {
    if given.is_empty() {
        vec![if grpc {
            "localhost:8001"
        } else {
            "localhost:8000"
        }
        .to_string()]
    } else {
        given.to_vec()
    }
}

/// `--sequence-length` and `--num-of-sequences`: at least 1.
pub fn check_sequences(
    sequence_length: Option<u64>,
    num_of_sequences: usize,
) -> Result<(), String> {
    if sequence_length == Some(0) || num_of_sequences == 0 {
        return Err("--sequence-length and --num-of-sequences must be at least 1".into());
    }
    Ok(())
}

/// `--sequence-id-range START[:END]` as (first id, how many); without it a
/// random base (from the clock and the process id) and 2^20 ids.
pub fn sequence_ids(range: Option<&str>) -> Result<(u64, u64), String> {
    const MAX: u64 = 1 << 62;
    match range {
        None => {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0);
            let mut r = Rng::new(nanos ^ ((std::process::id() as u64) << 32));
            Ok((1 + r.below(1 << 40), 1 << 20))
        }
        Some(text) => {
            let bad =
                || format!("--sequence-id-range '{text}' is not START[:END] with 1 <= START < END");
            let (a, b) = match text.split_once(':') {
                Some((a, b)) => (a, Some(b)),
                None => (text, None),
            };
            let start: u64 = a.trim().parse().map_err(|_| bad())?;
            let end: u64 = match b {
                Some(b) => b.trim().parse().map_err(|_| bad())?,
                None => MAX,
            };
            if start == 0 || end <= start || end > MAX {
                return Err(bad());
            }
            Ok((start, end - start))
        }
    }
}

/// The sequence ids of this worker with `--shard`: its part of
/// `--sequence-id-range`, else of a default range every worker derives
/// from `--seed` and `--start-at` ([`super::shard::default_ids`]).
pub fn shard_sequence_ids(
    range: Option<&str>,
    shard: super::shard::Shard,
    seed: u64,
    start_at: Option<std::time::SystemTime>,
) -> Result<(u64, u64), String> {
    let all = match range {
        Some(_) => sequence_ids(range)?,
        None => super::shard::default_ids(shard, seed, start_at),
    };
    shard.ids(all)
}

/// `--shard` with `-l` or `--binary-search`: refused, since each worker
/// would pick its next level from its own latency, and the workers'
/// levels would part.
pub fn check_shard_sweep(latency_threshold: bool) -> Result<(), String> {
    if latency_threshold {
        return Err("--shard splits a fixed set of levels: -l and --binary-search choose the next level from one worker's latency, so the workers would measure different levels; sweep the levels without -l and merge the results".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concurrency_is_bounded() {
        let e =
            check_concurrency(&[Level::Concurrency(1), Level::Concurrency(70_000)]).unwrap_err();
        assert!(e.contains("concurrency 70000 is above 65536"), "{e}");
        assert!(check_concurrency(&[Level::Concurrency(65_536), Level::Rate(1e9)]).is_ok());
        // a range without END stops below the bound
        let l = levels(Some("1:0:1000"), None, None, true).unwrap().levels;
        assert_eq!(l.len(), 66, "{l:?}");
        assert!(check_concurrency(&l).is_ok());
        // a binary search's range is not expanded, its END is checked
        let r = binary_range(Some("1:1000000000:1"), None).unwrap();
        assert_eq!(r.end, Level::Concurrency(1_000_000_000));
    }

    #[test]
    fn end_0_means_no_end_with_a_latency_threshold() {
        let l = levels(Some("2:0:3"), None, None, true).unwrap().levels;
        assert_eq!(l.len(), MAX_OPEN_LEVELS);
        assert_eq!(&l[..3], [2, 5, 8].map(Level::Concurrency));
        let l = levels(None, Some("10:0"), None, true).unwrap().levels;
        assert_eq!(&l[..2], [Level::Rate(10.0), Level::Rate(11.0)]);
        // as perf_analyzer: END and the threshold cannot both be 0
        let e = levels(Some("1:0:1"), None, None, false).unwrap_err();
        assert!(e.contains("--latency-threshold"), "{e}");
        let e = levels(Some("1.5:0"), None, None, true).unwrap_err();
        assert!(e.contains("'1.5:0'") && e.contains("whole numbers"), "{e}");
        // an END that is not 0 is a range as before
        assert_eq!(
            levels(Some("1:3"), None, None, true).unwrap().levels.len(),
            3
        );
    }

    #[test]
    fn prompts_as_json_lines() {
        let text = "{\"text\": \"a b\"}\n\n  \r\n\"plain\"\r\n{\"prompt\": \"p\", \"x\": 1}\n";
        assert!(holds_prompts(text));
        assert_eq!(parse_prompts("f", text).unwrap(), ["a b", "plain", "p"]);
        let e = parse_prompts("f.jsonl", "\"ok\"\n\n  {\"text\": 3}\n").unwrap_err();
        assert!(e.starts_with("f.jsonl:3:3: expected"), "{e}");
        let e = parse_prompts("f.jsonl", "\"ok\"\n{\"text\": \"x\",,}\n").unwrap_err();
        assert!(e.starts_with("f.jsonl:2:14: not JSON: "), "{e}");
        assert!(!e.contains(" at line "), "{e}");
        assert!(parse_prompts("f", "\n \n")
            .unwrap_err()
            .contains("no prompts"));
    }

    #[test]
    fn prompt_files_and_data_files_are_told_apart() {
        // perf_analyzer's input-data JSON, on one line or pretty-printed
        assert!(!holds_prompts(r#"{"data": [{"X": [1]}]}"#));
        assert!(!holds_prompts(
            "{\n  \"data\": [\n    {\"X\": [1]}\n  ]\n}\n"
        ));
        // a broken data file is reported as one (by DataFile::parse)
        assert!(!holds_prompts("{\n  \"data\": [\n"));
        assert!(!holds_prompts(""));
        // prompts, even a single one, or a bad line after a good one
        assert!(holds_prompts("{\"text\": \"x\"}"));
        assert!(holds_prompts("\"x\"\n{bad\n"));
        assert!(holds_prompts("{\"other\": 1}\n{\"other\": 2}\n"));
    }
}
