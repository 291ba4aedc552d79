//! `--collect-metrics`: Triton's Prometheus endpoint (`/metrics`, port
//! 8002 by default), read during each level for the GPU gauges
//! (`nv_gpu_utilization`, `nv_gpu_power_usage`, `nv_gpu_memory_used_bytes`,
//! `nv_gpu_memory_total_bytes`, per `gpu_uuid` label), summed up per level
//! as a mean and a maximum per GPU (docs/spec/cli.md, `--collect-metrics`).
//!
//! The page is read through the HTTP client of [`super::client`] (bounded
//! in time and size) and parsed line by line without allocating per line
//! beyond the few series kept; a hostile page cannot make it panic or grow
//! without bound (at most [`MAX_GPUS`] GPUs per gauge are kept).

use super::client::{Client, ClientConfig, Endpoint};
use super::report::{Gauge, GpuMetrics};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Triton's default metrics port.
pub const DEFAULT_METRICS_PORT: u16 = 8002;

/// The most GPUs kept per gauge; further `gpu_uuid`s are ignored.
pub const MAX_GPUS: usize = 256;

/// The longest `gpu_uuid` kept (longer ones are cut).
const MAX_UUID_CHARS: usize = 128;

/// The gauges read, in the order of [`Sample::values`].
pub const GAUGES: [&str; 4] = [
    "nv_gpu_utilization",
    "nv_gpu_power_usage",
    "nv_gpu_memory_used_bytes",
    "nv_gpu_memory_total_bytes",
];

/// One scrape: per gauge of [`GAUGES`], the value per GPU.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sample {
    pub values: [BTreeMap<String, f64>; 4],
}

/// Parses Prometheus's text exposition format, keeping the samples of
/// [`GAUGES`]: `name{label="value",...} value [timestamp]`. Lines that do
/// not parse are skipped (comments, other metrics, broken lines), as are
/// values that are not finite numbers.
pub fn parse(text: &str) -> Sample {
    let mut sample = Sample::default();
    for line in text.lines() {
        let line = line.trim_start();
        if !line.starts_with("nv_gpu_") {
            continue;
        }
        let Some((gauge, uuid, value)) = parse_line(line) else {
            continue;
        };
        let map = &mut sample.values[gauge];
        if map.len() >= MAX_GPUS && !map.contains_key(&uuid) {
            continue;
        }
        map.insert(uuid, value);
    }
    sample
}

/// One line: the gauge's index in [`GAUGES`], the `gpu_uuid` label
/// (`unknown` without one) and the value.
fn parse_line(line: &str) -> Option<(usize, String, f64)> {
    let name_end = line
        .find(|c: char| c == '{' || c.is_ascii_whitespace())
        .unwrap_or(line.len());
    let gauge = GAUGES.iter().position(|g| *g == &line[..name_end])?;
    let mut rest = &line[name_end..];
    let mut uuid = None;
    if let Some(labels) = rest.strip_prefix('{') {
        let (pairs, after) = split_labels(labels)?;
        uuid = pairs
            .into_iter()
            .find(|(k, _)| *k == "gpu_uuid")
            .map(|(_, v)| v);
        rest = after;
    }
    let value = rest.split_ascii_whitespace().next()?;
    let value: f64 = match value {
        "NaN" | "+Inf" | "-Inf" | "Inf" => return None,
        v => v.parse().ok()?,
    };
    if !value.is_finite() {
        return None;
    }
    let uuid: String = uuid
        .unwrap_or_else(|| "unknown".to_string())
        .chars()
        .take(MAX_UUID_CHARS)
        .collect();
    Some((gauge, uuid, value))
}

/// The labels after `{` up to the closing `}`: `(name, unescaped value)`
/// pairs and the text after the brace; `None` when the braces or quotes do
/// not close.
fn split_labels(text: &str) -> Option<(Vec<(&str, String)>, &str)> {
    let mut pairs = Vec::new();
    let mut rest = text;
    loop {
        rest = rest.trim_start_matches(|c: char| c == ',' || c.is_ascii_whitespace());
        if let Some(after) = rest.strip_prefix('}') {
            return Some((pairs, after));
        }
        let eq = rest.find('=')?;
        let name = rest[..eq].trim();
        rest = rest[eq + 1..].trim_start().strip_prefix('"')?;
        let mut value = String::new();
        let mut chars = rest.char_indices();
        let end = loop {
            let (i, c) = chars.next()?;
            match c {
                '"' => break i,
                '\\' => match chars.next()?.1 {
                    'n' => value.push('\n'),
                    other => value.push(other),
                },
                c => value.push(c),
            }
        };
        rest = &rest[end + 1..];
        // at most a few labels matter; a line with thousands is skipped
        if pairs.len() >= 64 {
            return None;
        }
        pairs.push((name, value));
    }
}

/// Running sums of the scrapes of one level (constant size in the number
/// of scrapes).
#[derive(Debug, Default)]
pub struct Accumulator {
    scrapes: u64,
    failed: u64,
    error: Option<String>,
    /// Per gauge, per GPU: (running mean, count, max). A running mean, not
    /// a sum: hostile values near f64::MAX cannot overflow it to infinity
    /// (which JSON cannot hold).
    sums: [BTreeMap<String, (f64, u64, f64)>; 4],
}

impl Accumulator {
    pub fn add(&mut self, scrape: Result<Sample, String>) {
        match scrape {
            Ok(s) => {
                self.scrapes += 1;
                for (sums, values) in self.sums.iter_mut().zip(s.values) {
                    for (uuid, v) in values {
                        if sums.len() >= MAX_GPUS && !sums.contains_key(&uuid) {
                            continue;
                        }
                        let e = sums.entry(uuid).or_insert((0.0, 0, f64::MIN));
                        e.1 += 1;
                        // a weighted mean of two finite numbers: finite
                        let n = e.1 as f64;
                        e.0 = e.0 * ((n - 1.0) / n) + v / n;
                        e.2 = e.2.max(v);
                    }
                }
            }
            Err(e) => {
                self.failed += 1;
                self.error.get_or_insert(e);
            }
        }
    }

    /// Scrapes that answered.
    pub fn scrapes(&self) -> u64 {
        self.scrapes
    }

    /// The level's summary.
    pub fn summary(&self) -> GpuMetrics {
        let gauges = |i: usize| -> BTreeMap<String, Gauge> {
            self.sums[i]
                .iter()
                .map(|(k, (sum, n, max))| {
                    (
                        k.clone(),
                        Gauge {
                            mean: if *n == 0 { 0.0 } else { *sum },
                            max: *max,
                        },
                    )
                })
                .collect()
        };
        GpuMetrics {
            scrapes: self.scrapes,
            gpu_utilization: gauges(0),
            gpu_power_usage: gauges(1),
            gpu_memory_used_bytes: gauges(2),
            gpu_memory_total_bytes: gauges(3),
            failed_scrapes: self.failed,
            error: self.error.clone(),
        }
    }
}

/// `--metrics-url`: `[http://]HOST[:PORT][/PATH]` (port 8002, path
/// `/metrics` when left out), or by default the host of the first server
/// with port 8002. Returns the endpoint and the path.
pub fn metrics_url(given: Option<&str>, server: &str) -> Result<(Endpoint, String), String> {
    let Some(url) = given else {
        let host = super::client::host_of(server);
        let endpoint = Endpoint {
            authority: format!("{host}:{DEFAULT_METRICS_PORT}"),
            tls: false,
        };
        return Ok((endpoint, "/metrics".into()));
    };
    let bare = url.strip_prefix("http://").unwrap_or(url);
    if bare.contains("://") {
        return Err(format!(
            "--metrics-url {url}: only http:// URLs are supported"
        ));
    }
    let (authority, path) = match bare.find('/') {
        Some(i) => (&bare[..i], &bare[i..]),
        None => (bare, "/metrics"),
    };
    let path = if path == "/" { "/metrics" } else { path };
    if path.chars().any(|c| c.is_control() || c == ' ') {
        return Err(format!(
            "--metrics-url {url}: the path is not a valid URL path"
        ));
    }
    let endpoint = Endpoint::parse_with_port(authority, DEFAULT_METRICS_PORT)
        .map_err(|e| e.replacen("-u ", "--metrics-url ", 1))?;
    Ok((endpoint, path.to_string()))
}

/// The metrics endpoint and how often it is read.
#[derive(Clone)]
pub struct Scraper {
    client: Client,
    path: String,
    /// `HOST:PORT/PATH`, for reports.
    pub url: String,
    pub interval: Duration,
    limit: u64,
}

impl Scraper {
    /// A scraper of `endpoint` + `path` every `interval`; each read is
    /// bounded by `timeout` and at most `limit` bytes.
    pub fn new(
        endpoint: Endpoint,
        path: String,
        interval: Duration,
        timeout: Duration,
        limit: u64,
    ) -> Scraper {
        let url = format!("{}{path}", endpoint.authority);
        Scraper {
            client: Client::new(ClientConfig {
                endpoint,
                headers: Vec::new(),
                timeout,
                max_response_bytes: limit,
                tls: None,
            }),
            path,
            url,
            interval,
            limit,
        }
    }

    /// One read of the page.
    pub async fn scrape(&self) -> Result<Sample, String> {
        let a = self
            .client
            .send(
                hyper::Method::GET,
                &self.path,
                bytes::Bytes::new(),
                None,
                None,
                self.limit,
            )
            .await
            .map_err(|k| self.client.describe(&k))?;
        if !a.status.is_success() {
            return Err(format!(
                "GET http://{} answered HTTP {}",
                self.url,
                a.status.as_u16()
            ));
        }
        Ok(parse(&String::from_utf8_lossy(&a.body)))
    }

    /// Reads the page at `at` and then every interval until
    /// [`Running::finish`].
    pub fn start(&self, at: std::time::Instant) -> Running {
        let acc = Arc::new(Mutex::new(Accumulator::default()));
        let stop = Arc::new(tokio::sync::Notify::new());
        let (a, s, halt) = (acc.clone(), self.clone(), stop.clone());
        let task = tokio::spawn(async move {
            let mut next = tokio::time::Instant::from_std(at);
            loop {
                tokio::select! {
                    _ = tokio::time::sleep_until(next) => {}
                    _ = halt.notified() => return,
                }
                let r = s.scrape().await;
                a.lock().expect("metrics lock").add(r);
                next += s.interval;
            }
        });
        Running {
            acc,
            task,
            stop,
            scraper: self.clone(),
        }
    }
}

/// How long the end of a level waits for a read under way.
const FINISH_GRACE: Duration = Duration::from_secs(1);

/// A level's scraping, in progress.
pub struct Running {
    acc: Arc<Mutex<Accumulator>>,
    task: tokio::task::JoinHandle<()>,
    stop: Arc<tokio::sync::Notify>,
    scraper: Scraper,
}

impl Running {
    /// Stops reading (a read under way may finish within [`FINISH_GRACE`],
    /// else it is dropped) and sums up the level; a level shorter than
    /// one read gets one read now.
    pub async fn finish(mut self) -> GpuMetrics {
        self.stop.notify_one();
        if tokio::time::timeout(FINISH_GRACE, &mut self.task)
            .await
            .is_err()
        {
            self.task.abort();
        }
        let empty = {
            let a = self.acc.lock().expect("metrics lock");
            a.scrapes() == 0 && a.failed == 0
        };
        if empty {
            let r = self.scraper.scrape().await;
            self.acc.lock().expect("metrics lock").add(r);
        }
        let summary = self.acc.lock().expect("metrics lock").summary();
        summary
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triton_page() {
        let page = "# HELP nv_gpu_utilization GPU utilization rate [0.0 - 1.0)\n\
# TYPE nv_gpu_utilization gauge\n\
nv_gpu_utilization{gpu_uuid=\"GPU-a\"} 0.25\n\
nv_gpu_utilization{gpu_uuid=\"GPU-b\"} 1\n\
nv_gpu_memory_total_bytes{gpu_uuid=\"GPU-a\"} 1.6e+10\n\
nv_gpu_memory_used_bytes{gpu_uuid=\"GPU-a\"} 123456789 1700000000000\n\
nv_gpu_power_usage{gpu_uuid=\"GPU-a\",other=\"x,}\\\"\"} 70.5\n\
nv_gpu_power_limit{gpu_uuid=\"GPU-a\"} 300\n\
nv_inference_count{model=\"m\",version=\"1\"} 5\n";
        let s = parse(page);
        assert_eq!(s.values[0].get("GPU-a"), Some(&0.25));
        assert_eq!(s.values[0].get("GPU-b"), Some(&1.0));
        assert_eq!(s.values[1].get("GPU-a"), Some(&70.5));
        assert_eq!(s.values[2].get("GPU-a"), Some(&123456789.0));
        assert_eq!(s.values[3].get("GPU-a"), Some(&1.6e10));
        assert_eq!(s.values.iter().map(BTreeMap::len).sum::<usize>(), 5);
    }

    #[test]
    fn escapes_in_labels_and_missing_uuid() {
        let s = parse(
            "nv_gpu_utilization{gpu_uuid=\"a\\\"b\\\\c\\nd\"} 0.5\nnv_gpu_utilization 0.75\n",
        );
        assert_eq!(s.values[0].get("a\"b\\c\nd"), Some(&0.5));
        assert_eq!(s.values[0].get("unknown"), Some(&0.75));
    }

    #[test]
    fn broken_lines_are_skipped() {
        for line in [
            "nv_gpu_utilization{gpu_uuid=\"a\" 0.5",
            "nv_gpu_utilization{gpu_uuid=\"a} 0.5",
            "nv_gpu_utilization{gpu_uuid=a} 0.5",
            "nv_gpu_utilization{gpu_uuid=\"a\"}",
            "nv_gpu_utilization{gpu_uuid=\"a\"} NaN",
            "nv_gpu_utilization{gpu_uuid=\"a\"} +Inf",
            "nv_gpu_utilization{gpu_uuid=\"a\"} 1e999",
            "nv_gpu_utilization{gpu_uuid=\"a\"} x",
            "nv_gpu_utilizationX{gpu_uuid=\"a\"} 1",
            "nv_gpu_utilization{\"} 1",
            "nv_gpu_utilization{gpu_uuid=\"a\\",
        ] {
            assert_eq!(parse(line), Sample::default(), "{line}");
        }
    }

    /// Hostile pages: random bytes, deep label lists, many GPUs, huge
    /// lines. Never a panic, at most MAX_GPUS GPUs per gauge.
    #[test]
    fn hostile_pages_never_panic_and_stay_bounded() {
        let mut r = super::super::rng::Rng::new(7);
        let alphabet: Vec<char> = "nv_gpu_utilization{}\"\\=, \n0.5e+-Inf#\u{1b}\u{fffd}ä"
            .chars()
            .collect();
        for _ in 0..2000 {
            let n = r.below(400) as usize;
            let text: String = (0..n)
                .map(|_| alphabet[r.below(alphabet.len() as u64) as usize])
                .collect();
            let s = parse(&text);
            assert!(s.values.iter().all(|m| m.len() <= MAX_GPUS));
            assert!(s
                .values
                .iter()
                .flat_map(|m| m.values())
                .all(|v| v.is_finite()));
        }
        let many: String = (0..10_000)
            .map(|i| format!("nv_gpu_utilization{{gpu_uuid=\"g{i}\"}} 1\n"))
            .collect();
        assert_eq!(parse(&many).values[0].len(), MAX_GPUS);
        let labels: String = (0..100_000).map(|i| format!("l{i}=\"v\",")).collect();
        let s = parse(&format!("nv_gpu_utilization{{{labels}gpu_uuid=\"a\"}} 1\n"));
        assert_eq!(s, Sample::default());
        let long = format!(
            "nv_gpu_utilization{{gpu_uuid=\"{}\"}} 1\n",
            "u".repeat(1_000_000)
        );
        let s = parse(&long);
        assert_eq!(
            s.values[0].keys().next().map(String::len),
            Some(MAX_UUID_CHARS)
        );
    }

    #[test]
    fn accumulator_means_and_maxima() {
        let mut a = Accumulator::default();
        a.add(Ok(parse("nv_gpu_utilization{gpu_uuid=\"g\"} 0.2\n")));
        a.add(Ok(parse("nv_gpu_utilization{gpu_uuid=\"g\"} 0.6\n")));
        a.add(Err("down".into()));
        let m = a.summary();
        assert_eq!(m.scrapes, 2);
        assert_eq!(m.failed_scrapes, 1);
        let g = &m.gpu_utilization["g"];
        assert!((g.mean - 0.4).abs() < 1e-12 && g.max == 0.6, "{g:?}");
        assert!(m.has_gpus());
    }

    #[test]
    fn hostile_values_keep_the_mean_finite() {
        let mut a = Accumulator::default();
        for v in ["1.7e308", "1.7e308", "-1.7e308", "1.7e308"] {
            a.add(Ok(parse(&format!(
                "nv_gpu_power_usage{{gpu_uuid=\"g\"}} {v}\n"
            ))));
        }
        let g = &a.summary().gpu_power_usage["g"];
        assert!(g.mean.is_finite() && g.max.is_finite(), "{g:?}");
        assert!((g.mean - 0.85e308).abs() < 1e295, "{g:?}");
        // and it goes into JSON as a number
        let v = serde_json::to_value(a.summary()).unwrap();
        assert!(v["gpu_power_usage"]["g"]["mean"].is_number(), "{v}");
    }

    #[test]
    fn urls() {
        let (e, p) = metrics_url(None, "10.0.0.1:8000").unwrap();
        assert_eq!(
            (e.authority.as_str(), p.as_str()),
            ("10.0.0.1:8002", "/metrics")
        );
        let (e, p) = metrics_url(None, "[::1]:8001").unwrap();
        assert_eq!(
            (e.authority.as_str(), p.as_str()),
            ("[::1]:8002", "/metrics")
        );
        let (e, p) = metrics_url(Some("localhost:8002/metrics"), "x:1").unwrap();
        assert_eq!(
            (e.authority.as_str(), p.as_str()),
            ("localhost:8002", "/metrics")
        );
        let (e, p) = metrics_url(Some("http://h/custom/path"), "x:1").unwrap();
        assert_eq!(
            (e.authority.as_str(), p.as_str()),
            ("h:8002", "/custom/path")
        );
        assert!(metrics_url(Some("https://h"), "x:1").is_err());
        assert!(metrics_url(Some("h:x/metrics"), "x:1").is_err());
    }
}
