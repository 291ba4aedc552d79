//! Results of a run and their renderings: a table per run, the JSON
//! document of schemas/perf.schema.json, perf_analyzer's CSV columns.

use super::stats::{ComposingStats, ServerStats};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Latency percentiles in microseconds (successful requests only).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Latency {
    pub p50: u64,
    pub p90: u64,
    pub p95: u64,
    pub p99: u64,
    pub max: u64,
    pub mean: f64,
    /// `--percentile P`: P and the pP latency, for the table's `pP µs`
    /// column (in the JSON document as the level's
    /// `percentile_latency_us`, not inside `latency_us`, whose fields
    /// docs/spec/cli.md lists).
    #[serde(skip)]
    pub chosen: Option<(u8, u64)>,
}

/// One load level.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LevelResult {
    /// Closed loop: requests kept in flight (null for open loop).
    pub concurrency: Option<u64>,
    /// Open loop: scheduled requests per second (null for closed loop).
    pub request_rate: Option<f64>,
    /// Length of the measurement in seconds.
    pub duration_s: f64,
    /// Measured requests, failed ones included.
    pub requests: u64,
    pub errors: u64,
    pub errors_by_kind: BTreeMap<String, u64>,
    /// Successful inferences (requests x batch size) per second, like
    /// perf_analyzer's "Inferences/Second".
    pub throughput_per_s: f64,
    /// Successful requests per second.
    pub requests_per_s: f64,
    /// Null when no request succeeded. Open loop: from the scheduled send
    /// time (coordinated omission corrected).
    pub latency_us: Option<Latency>,
    /// Not in the JSON level: the latency distribution for `--plot`, as
    /// (quantile, latency µs) at [`CDF_QUANTILES`] (empty when no request
    /// succeeded): a fixed size per level, whatever the run's length.
    #[serde(skip)]
    pub latency_cdf: Vec<(f64, u64)>,
    /// Measured requests still streaming when the level ended, cut off by
    /// the client (not errors, not in `requests`).
    pub cancelled: u64,
    /// Responses received by the measured requests (one per request for
    /// a model that answers once; an empty final response is not one).
    pub responses: u64,
    /// Successful requests: to the first response (from the same origin
    /// as `latency_us`), and the gaps between consecutive responses (null
    /// when no request had two).
    pub first_response_us: Option<Latency>,
    pub inter_response_us: Option<Latency>,
    /// Responses per successful request.
    pub responses_per_request: Option<PerRequest>,
    /// Output tokens of the successful requests per second, where the
    /// server's answers give them (OpenAI-compatible endpoints).
    pub output_tokens_per_s: Option<f64>,
    /// Not in the JSON level: where the level's token counts came from
    /// (`usage` or `responses`); the report's `output_tokens` sums it up.
    #[serde(skip)]
    pub output_tokens_source: Option<String>,
    pub sequence_latency_us: Option<Latency>,
    /// Open loop: sends more than 1 ms behind schedule.
    pub late_sends: u64,
    /// The client's own time per successful request (null when none
    /// succeeded).
    pub client: Option<ClientStats>,
    /// From the statistics extension (null when the server has none).
    pub server: Option<ServerStats>,
    /// Stability windows: whether the last 3 agreed (null with
    /// `--duration` or `--request-count`).
    pub stable: Option<bool>,
    /// Measurement windows run (1 with `--duration` or `--request-count`).
    pub windows: u32,
    /// Measured requests per server, in `-u` order.
    pub targets: Vec<TargetCount>,
    /// `--percentile P`: the pP latency (null without the flag or when no
    /// request succeeded).
    pub percentile_latency_us: Option<u64>,
    /// `-l`: whether the level's latency (pP with `--percentile`, else the
    /// mean) is below the threshold and the level is usable (stable, when
    /// measured in stability windows); null without `-l`.
    pub latency_threshold_met: Option<bool>,
    /// `--collect-metrics`: the server's GPU metrics during the level
    /// (null without the flag).
    pub metrics: Option<GpuMetrics>,
    /// What `perf merge` needs to combine levels of several workers
    /// exactly (docs/spec/cli.md, "Mergeable results"). Each is
    /// `#[serde(default)]` so that a document of an older tritonctl still
    /// reads, and `perf merge` can say what it lacks.
    ///
    /// Successful requests, and their inferences (requests x batch size).
    #[serde(default)]
    pub successful_requests: u64,
    #[serde(default)]
    pub inferences: u64,
    /// Responses of the successful requests (`responses_per_request`'s
    /// mean is this over `successful_requests`).
    #[serde(default)]
    pub successful_responses: u64,
    /// Output tokens of the successful requests (null when unknown).
    #[serde(default)]
    pub output_token_count: Option<u64>,
    /// The client's send and receive time of the successful requests,
    /// summed (µs; `client` holds them per request).
    #[serde(default)]
    pub client_send_total_us: f64,
    #[serde(default)]
    pub client_recv_total_us: f64,
    /// The measurement window, in microseconds since the Unix epoch (the
    /// host's clock); `duration_s` is their difference.
    #[serde(default)]
    pub window_start_us: u64,
    #[serde(default)]
    pub window_end_us: u64,
    /// The level's histograms (always written; missing only in documents
    /// of an older tritonctl).
    #[serde(default)]
    pub histograms: Option<Histograms>,
}

/// A level's latency histograms in HDR histogram's compressed V2
/// encoding, base64 with padding (what HdrHistogram's `encode` writes;
/// docs/spec/cli.md, "Mergeable results"), each null when it holds no
/// sample: `perf merge` adds them up.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Histograms {
    pub latency_us: Option<String>,
    pub first_response_us: Option<String>,
    pub inter_response_us: Option<String>,
    pub sequence_latency_us: Option<String>,
}

/// `--shard I/N`: this worker's share of a load split over N workers.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

/// A gauge sampled during a level: its mean and maximum over the scrapes.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Gauge {
    pub mean: f64,
    pub max: f64,
}

/// Triton's GPU metrics during a level, per GPU (keyed by the `gpu_uuid`
/// label), from `--collect-metrics` (docs/spec/cli.md names the fields).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct GpuMetrics {
    /// Scrapes of the metrics endpoint that answered during the level.
    pub scrapes: u64,
    /// `nv_gpu_utilization`: 0 to 1.
    pub gpu_utilization: BTreeMap<String, Gauge>,
    /// `nv_gpu_power_usage`: watts.
    pub gpu_power_usage: BTreeMap<String, Gauge>,
    /// `nv_gpu_memory_used_bytes`.
    pub gpu_memory_used_bytes: BTreeMap<String, Gauge>,
    /// `nv_gpu_memory_total_bytes`.
    pub gpu_memory_total_bytes: BTreeMap<String, Gauge>,
    /// Scrapes that failed (no answer, an HTTP error, a body above the
    /// limit).
    pub failed_scrapes: u64,
    /// The first failure's message (not in the JSON document).
    #[serde(skip)]
    pub error: Option<String>,
}

impl GpuMetrics {
    /// Whether any GPU series was seen.
    pub fn has_gpus(&self) -> bool {
        !(self.gpu_utilization.is_empty()
            && self.gpu_power_usage.is_empty()
            && self.gpu_memory_used_bytes.is_empty()
            && self.gpu_memory_total_bytes.is_empty())
    }
}

/// A level's load: a concurrency or a request rate.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum LoadValue {
    Concurrency(u64),
    Rate(f64),
}

impl std::fmt::Display for LoadValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadValue::Concurrency(c) => write!(f, "concurrency {c}"),
            LoadValue::Rate(r) => write!(f, "request rate {r}/s"),
        }
    }
}

/// `--binary-search`: what the search found.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BinarySearch {
    /// The highest concurrency or request rate measured that met `-l`
    /// (null when even the range's start did not).
    pub highest_passing: Option<LoadValue>,
    /// Levels measured (the range's start and end, then the midpoints).
    pub levels_measured: u64,
}

/// The quantiles a level keeps of its latency histogram for `--plot`:
/// every 5% and the tail, where the distributions of loaded servers
/// differ most.
pub const CDF_QUANTILES: [f64; 30] = [
    0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8,
    0.85, 0.9, 0.925, 0.95, 0.96, 0.97, 0.98, 0.99, 0.995, 0.999, 0.9995, 0.9999, 1.0,
];

/// Responses per successful request.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PerRequest {
    pub mean: f64,
    pub max: u64,
}

/// Mean client time per successful request, in microseconds: what
/// perf_analyzer's CSV reports as "Client Send" and "Client Recv".
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ClientStats {
    /// HTTP: building the request until the transport took the last of
    /// its body. gRPC: building and encoding the request message.
    pub send_us: f64,
    /// HTTP: the answer's head until its body is read and checked. gRPC:
    /// decoding and checking the answer.
    pub recv_us: f64,
}

/// Measured requests sent to one server.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TargetCount {
    pub url: String,
    pub requests: u64,
}

impl LevelResult {
    pub fn error_rate(&self) -> f64 {
        if self.requests == 0 {
            0.0
        } else {
            self.errors as f64 / self.requests as f64
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PerfReport {
    pub model: String,
    pub protocol: String,
    /// The first server.
    pub url: String,
    /// Every server the load was spread over.
    pub urls: Vec<String>,
    pub batch_size: u64,
    pub input_tensor_format: String,
    pub output_tensor_format: String,
    /// "config" when the server's config endpoint answered, "metadata"
    /// when batching and dims came from the model metadata alone.
    pub model_config_source: String,
    /// "concurrency", "request_rate" or "request_intervals".
    pub mode: String,
    /// `--endpoint`: "infer", "generate", "openai-chat" or
    /// "openai-completions".
    pub endpoint: String,
    /// The model's config says `decoupled: true` (its requests are read
    /// until their final response).
    pub decoupled: bool,
    /// Where output token counts come from: "usage" (the server's, for
    /// every request), "responses" (streamed chunks counted), or null
    /// when unknown.
    pub output_tokens: Option<String>,
    /// `--percentile`: the latency percentile stability windows and `-l`
    /// use (null: the mean).
    pub percentile: Option<u8>,
    /// `-l`/`--latency-threshold` in milliseconds (null without it).
    pub latency_threshold_ms: Option<f64>,
    /// `--binary-search` (null without it).
    pub binary_search: Option<BinarySearch>,
    /// `--collect-metrics`: the Prometheus endpoint scraped (null without
    /// it).
    pub metrics_url: Option<String>,
    /// `--shared-memory`: where the tensors were and how much went
    /// through them (left out without the flag).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shared_memory: Option<super::shm::ShmReport>,
    /// Open loop with `--request-rate-range`: "constant" or "poisson"
    /// (null otherwise).
    #[serde(default)]
    pub request_distribution: Option<String>,
    /// `--shard I/N` (null without it): each level's concurrency or rate
    /// is this worker's share.
    #[serde(default)]
    pub shard: Option<Shard>,
    /// `perf merge`: the files merged, in order (left out otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged_from: Option<Vec<String>>,
    pub levels: Vec<LevelResult>,
    /// Notes about the setup for the user (not in the JSON document).
    #[serde(skip)]
    pub notes: Vec<String>,
    /// Warnings about the setup (not in the JSON document).
    #[serde(skip)]
    pub warnings: Vec<String>,
}

fn us(v: f64) -> String {
    format!("{v:.0}")
}

/// Queue, compute input, infer and output per request as the table and
/// the CSV show them: for an ensemble the sums over its composing models
/// (each request passes through each step), as perf_analyzer reports
/// them, since an ensemble's own statistics leave out its steps' queue
/// time (docs/spec/v2-protocol.md, section 8); else the model's own.
fn breakdown(s: &ServerStats) -> (f64, f64, f64, f64) {
    match s.composing_models.as_deref() {
        Some(steps) if !steps.is_empty() => steps.iter().fold((0.0, 0.0, 0.0, 0.0), |acc, c| {
            (
                acc.0 + c.stats.queue_us,
                acc.1 + c.stats.compute_input_us,
                acc.2 + c.stats.compute_infer_us,
                acc.3 + c.stats.compute_output_us,
            )
        }),
        _ => (
            s.queue_us,
            s.compute_input_us,
            s.compute_infer_us,
            s.compute_output_us,
        ),
    }
}

/// The CSV columns after perf_analyzer's: responses, responses per
/// request, the first response and the gaps between responses
/// (percentiles and mean, µs), output tokens per second (empty when
/// unknown) and cancelled requests.
pub const GENERATIVE_CSV_COLUMNS: [&str; 15] = [
    "Responses",
    "Responses/Request",
    "Max Responses/Request",
    "p50 first response",
    "p90 first response",
    "p95 first response",
    "p99 first response",
    "Avg first response",
    "p50 inter response",
    "p90 inter response",
    "p95 inter response",
    "p99 inter response",
    "Avg inter response",
    "Output Tokens/Second",
    "Cancelled",
];

/// `--collect-metrics`: perf_analyzer's GPU columns of `--verbose-csv`,
/// after `response wait`.
pub const GPU_CSV_COLUMNS: [&str; 4] = [
    "Avg GPU Utilization",
    "Avg GPU Power Usage",
    "Max GPU Memory Usage",
    "Total GPU Memory",
];

/// The GPU cells of a CSV row, as perf_analyzer writes them: per column
/// `uuid:value;` for each GPU (utilization 0 to 1, power in W, memory in
/// bytes); empty cells without metrics.
fn gpu_cells(m: Option<&GpuMetrics>) -> String {
    let Some(m) = m else {
        return ",,,".into();
    };
    // a uuid holding the CSV's or the cell's separators would break the
    // row: those characters are left out
    let cell = |g: &BTreeMap<String, Gauge>, f: fn(&Gauge) -> f64| -> String {
        g.iter()
            .map(|(k, v)| {
                let k: String = k
                    .chars()
                    .filter(|c| !matches!(c, ',' | ';' | ':' | '"' | '\n' | '\r'))
                    .collect();
                format!("{k}:{};", f(v))
            })
            .collect()
    };
    format!(
        "{},{},{},{}",
        cell(&m.gpu_utilization, |g| g.mean),
        cell(&m.gpu_power_usage, |g| g.mean),
        cell(&m.gpu_memory_used_bytes, |g| g.max),
        cell(&m.gpu_memory_total_bytes, |g| g.max),
    )
}

impl PerfReport {
    /// The highest error rate of any level (0 without levels).
    pub fn worst_error_rate(&self) -> f64 {
        self.levels
            .iter()
            .map(|l| l.error_rate())
            .fold(0.0f64, f64::max)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("report serialises")
    }

    /// A summary table (one row per level).
    pub fn table(&self) -> String {
        let mut t = comfy_table::Table::new();
        t.load_preset(comfy_table::presets::UTF8_BORDERS_ONLY);
        let load = if self.mode == "concurrency" {
            "concurrency"
        } else {
            "rate/s"
        };
        let has_server = self.levels.iter().any(|l| l.server.is_some());
        let streamed = self.is_streamed();
        let has_tokens = self.levels.iter().any(|l| l.output_tokens_per_s.is_some());
        let has_cancelled = self.levels.iter().any(|l| l.cancelled > 0);
        // `--percentile P` adds a column unless pP is one already
        let chosen = self
            .levels
            .iter()
            .find_map(|l| l.latency_us.as_ref().and_then(|p| p.chosen))
            .map(|(p, _)| p)
            .filter(|p| ![50, 90, 95, 99].contains(p));
        let chosen_head = chosen.map(|p| format!("p{p} µs"));
        let mut head = vec![
            load, "requests", "errors", "infer/s", "p50 µs", "p90 µs", "p95 µs", "p99 µs",
        ];
        head.extend(chosen_head.as_deref());
        head.extend(["max µs", "mean µs"]);
        if self.mode != "concurrency" {
            head.push("late");
        }
        if has_cancelled {
            head.push("cancelled");
        }
        if streamed {
            head.extend([
                "resp/req",
                "first p50 µs",
                "first p99 µs",
                "gap p50 µs",
                "gap p99 µs",
            ]);
        }
        if has_tokens {
            head.push("tokens/s");
        }
        if has_server {
            head.extend(["queue µs", "compute µs"]);
        }
        t.set_header(head);
        for l in &self.levels {
            let mut row = vec![
                match (l.concurrency, l.request_rate) {
                    (Some(c), _) => c.to_string(),
                    (_, Some(r)) => format!("{r}"),
                    _ => String::new(),
                },
                l.requests.to_string(),
                if l.errors == 0 {
                    "0".into()
                } else {
                    let kinds: Vec<String> = l
                        .errors_by_kind
                        .iter()
                        // kinds may come from a server's status text, or a
                        // merged file: escaped as untrusted
                        .map(|(k, n)| format!("{} {n}", crate::text::display::Untrusted(k)))
                        .collect();
                    format!("{} ({})", l.errors, kinds.join(", "))
                },
                format!("{:.1}", l.throughput_per_s),
            ];
            match &l.latency_us {
                Some(p) => {
                    row.extend([
                        p.p50.to_string(),
                        p.p90.to_string(),
                        p.p95.to_string(),
                        p.p99.to_string(),
                    ]);
                    if chosen.is_some() {
                        row.push(p.chosen.map_or("-".to_string(), |(_, v)| v.to_string()));
                    }
                    row.extend([p.max.to_string(), us(p.mean)]);
                }
                None => row.extend(std::iter::repeat_n(
                    "-".to_string(),
                    6 + usize::from(chosen.is_some()),
                )),
            }
            if self.mode != "concurrency" {
                row.push(l.late_sends.to_string());
            }
            if has_cancelled {
                row.push(l.cancelled.to_string());
            }
            if streamed {
                let pick = |p: &Option<Latency>, f: fn(&Latency) -> u64| {
                    p.as_ref().map_or("-".to_string(), |p| f(p).to_string())
                };
                row.extend([
                    l.responses_per_request
                        .as_ref()
                        .map_or("-".to_string(), |r| format!("{:.1}", r.mean)),
                    pick(&l.first_response_us, |p| p.p50),
                    pick(&l.first_response_us, |p| p.p99),
                    pick(&l.inter_response_us, |p| p.p50),
                    pick(&l.inter_response_us, |p| p.p99),
                ]);
            }
            if has_tokens {
                row.push(
                    l.output_tokens_per_s
                        .map_or("-".to_string(), |t| format!("{t:.1}")),
                );
            }
            if has_server {
                match l.server.as_ref().map(breakdown) {
                    Some((q, ci, cf, co)) => row.extend([us(q), us(ci + cf + co)]),
                    None => row.extend(["-".to_string(), "-".to_string()]),
                }
            }
            t.add_row(row);
        }
        let source = if self.model_config_source == "metadata" {
            "model config: none (the server has no config endpoint; shapes and batching from the model metadata)\n"
        } else {
            ""
        };
        let composing = self.composing_table(load);
        let gpus = self.gpu_table(load);
        let threshold = self.threshold_line();
        let what = match self.endpoint.as_str() {
            "infer" => format!(
                "inputs {}, outputs {}, batch {}{}",
                self.input_tensor_format,
                self.output_tensor_format,
                self.batch_size,
                if self.decoupled { ", decoupled" } else { "" }
            ),
            e => format!(
                "endpoint {e}{}{}",
                if self.decoupled { ", decoupled" } else { "" },
                match self.output_tokens.as_deref() {
                    Some("responses") => ", tokens counted as responses",
                    Some(_) => ", tokens from usage",
                    None => "",
                }
            ),
        };
        let shard = match self.shard {
            Some(s) => format!(
                "shard {} of {} (each level shows this worker's part of the load)\n",
                s.index, s.count
            ),
            None => String::new(),
        };
        format!(
            "model {} at {} ({} over {}, {what})\n{shard}{source}{t}\n{threshold}{composing}{gpus}",
            crate::text::display::Untrusted(&self.model),
            crate::text::display::Untrusted(&self.url),
            self.mode.replace('_', " "),
            if self.protocol == "grpc" {
                "gRPC"
            } else {
                "HTTP"
            },
        )
    }

    /// Whether requests may have many responses (a decoupled model or a
    /// generative endpoint), or some request had: then the table shows the
    /// responses per request, the first response and the gaps.
    pub fn is_streamed(&self) -> bool {
        self.decoupled
            || self.endpoint != "infer"
            || self
                .levels
                .iter()
                .any(|l| l.responses_per_request.as_ref().is_some_and(|r| r.max > 1))
    }

    /// `-l`: the line under the table that says which levels met the
    /// threshold (empty without `-l`).
    fn threshold_line(&self) -> String {
        let Some(ms) = self.latency_threshold_ms else {
            return String::new();
        };
        let which = match self.percentile {
            Some(p) => format!("p{p} latency"),
            None => "mean latency".into(),
        };
        let load_of = |l: &LevelResult| match (l.concurrency, l.request_rate) {
            (Some(c), _) => LoadValue::Concurrency(c).to_string(),
            (_, Some(r)) => LoadValue::Rate(r).to_string(),
            _ => String::new(),
        };
        let what = match &self.binary_search {
            Some(b) => format!(
                "binary search over {} levels: {}",
                b.levels_measured,
                match b.highest_passing {
                    Some(v) => format!("the highest within it is {v}"),
                    None => match self.levels.first() {
                        Some(l) => format!("none is within it ({} is not)", load_of(l)),
                        None => "none is within it".into(),
                    },
                }
            ),
            None => match self
                .levels
                .iter()
                .find(|l| l.latency_threshold_met == Some(false))
            {
                Some(l) => format!(
                    "the sweep stopped at {}, {}",
                    load_of(l),
                    if l.latency_us.is_none() {
                        "where no request succeeded"
                    } else if l.stable == Some(false) {
                        "which did not stabilize"
                    } else {
                        "which is above it"
                    }
                ),
                None => "every level measured is within it".into(),
            },
        };
        format!("latency threshold {ms} ms ({which}): {what}\n")
    }

    /// `--collect-metrics`: the GPU metrics per level and GPU (empty when
    /// no level has any).
    fn gpu_table(&self, load: &str) -> String {
        let rows: Vec<(&LevelResult, &String)> = self
            .levels
            .iter()
            .flat_map(|l| {
                l.metrics.iter().flat_map(move |m| {
                    let mut gpus: Vec<&String> = m
                        .gpu_utilization
                        .keys()
                        .chain(m.gpu_power_usage.keys())
                        .chain(m.gpu_memory_used_bytes.keys())
                        .chain(m.gpu_memory_total_bytes.keys())
                        .collect();
                    gpus.sort();
                    gpus.dedup();
                    gpus.into_iter().map(move |g| (l, g))
                })
            })
            .collect();
        if rows.is_empty() {
            return String::new();
        }
        let mut t = comfy_table::Table::new();
        t.load_preset(comfy_table::presets::UTF8_BORDERS_ONLY);
        t.set_header(vec![
            load,
            "GPU",
            "util mean %",
            "util max %",
            "power mean W",
            "power max W",
            "memory max MiB",
            "memory total MiB",
        ]);
        for (l, gpu) in rows {
            let m = l.metrics.as_ref().expect("rows have metrics");
            let get = |g: &BTreeMap<String, Gauge>, f: fn(&Gauge) -> f64, scale: f64| {
                g.get(gpu)
                    .map_or("-".to_string(), |v| format!("{:.1}", f(v) * scale))
            };
            let mib = 1.0 / f64::from(1 << 20);
            t.add_row(vec![
                match (l.concurrency, l.request_rate) {
                    (Some(c), _) => c.to_string(),
                    (_, Some(r)) => format!("{r}"),
                    _ => String::new(),
                },
                crate::text::display::Untrusted(gpu).to_string(),
                get(&m.gpu_utilization, |g| g.mean, 100.0),
                get(&m.gpu_utilization, |g| g.max, 100.0),
                get(&m.gpu_power_usage, |g| g.mean, 1.0),
                get(&m.gpu_power_usage, |g| g.max, 1.0),
                get(&m.gpu_memory_used_bytes, |g| g.max, mib),
                get(&m.gpu_memory_total_bytes, |g| g.max, mib),
            ]);
        }
        format!("GPU metrics per level (--collect-metrics):\n{t}\n")
    }

    /// Ensembles: the server's time per composing model and level (empty
    /// when no level has one).
    fn composing_table(&self, load: &str) -> String {
        let rows: Vec<(&LevelResult, &ComposingStats)> = self
            .levels
            .iter()
            .flat_map(|l| {
                l.server
                    .iter()
                    .flat_map(|s| s.composing_models.iter().flatten())
                    .map(move |c| (l, c))
            })
            .collect();
        if rows.is_empty() {
            return String::new();
        }
        let mut t = comfy_table::Table::new();
        t.load_preset(comfy_table::presets::UTF8_BORDERS_ONLY);
        t.set_header(vec![
            load,
            "model",
            "version",
            "requests",
            "executions",
            "queue µs",
            "input µs",
            "infer µs",
            "output µs",
        ]);
        for (l, c) in rows {
            let s = &c.stats;
            t.add_row(vec![
                match (l.concurrency, l.request_rate) {
                    (Some(c), _) => c.to_string(),
                    (_, Some(r)) => format!("{r}"),
                    _ => String::new(),
                },
                crate::text::display::Untrusted(&c.model).to_string(),
                c.version.as_deref().map_or("-".to_string(), |v| {
                    crate::text::display::Untrusted(v).to_string()
                }),
                s.requests.to_string(),
                s.execution_count.to_string(),
                us(s.queue_us),
                us(s.compute_input_us),
                us(s.compute_infer_us),
                us(s.compute_output_us),
            ]);
        }
        format!("server time per composing model (per request):\n{t}\n")
    }

    /// perf_analyzer's CSV (rows by increasing throughput, times in µs).
    pub fn csv(&self) -> String {
        let first = if self.mode == "concurrency" {
            "Concurrency"
        } else {
            "Request Rate"
        };
        // As perf_analyzer's: `--percentile P` adds its column among the
        // others in increasing order (when it is not one of them) and drops
        // Avg latency; `--collect-metrics` adds the GPU columns after
        // response wait (docs/spec/cli.md, CSV).
        let extra = self.percentile.filter(|p| ![50, 90, 95, 99].contains(p));
        let mut percentiles: Vec<u8> = vec![50, 90, 95, 99];
        percentiles.extend(extra);
        percentiles.sort_unstable();
        let with_avg = self.percentile.is_none();
        let with_gpus = self.metrics_url.is_some();
        let mut head = format!(
            "{first},Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv"
        );
        for p in &percentiles {
            head.push_str(&format!(",p{p} latency"));
        }
        if with_avg {
            head.push_str(",Avg latency");
        }
        head.push_str(",request/response,response wait");
        if with_gpus {
            head.push(',');
            head.push_str(&GPU_CSV_COLUMNS.join(","));
        }
        let mut out = format!("{head},{}\n", GENERATIVE_CSV_COLUMNS.join(","));
        let mut rows: Vec<&LevelResult> = self.levels.iter().collect();
        rows.sort_by(|a, b| a.throughput_per_s.total_cmp(&b.throughput_per_s));
        for l in rows {
            let load = match (l.concurrency, l.request_rate) {
                (Some(c), _) => c.to_string(),
                (_, Some(r)) => format!("{r}"),
                _ => String::new(),
            };
            let mean = l.latency_us.as_ref().map_or(0.0, |p| p.mean);
            let at = |p: u8| match (&l.latency_us, p) {
                (None, _) => 0,
                (Some(lat), 50) => lat.p50,
                (Some(lat), 90) => lat.p90,
                (Some(lat), 95) => lat.p95,
                (Some(lat), 99) => lat.p99,
                (Some(_), _) => l.percentile_latency_us.unwrap_or(0),
            };
            let mut latencies: String = percentiles
                .iter()
                .map(|p| at(*p).to_string())
                .collect::<Vec<_>>()
                .join(",");
            if with_avg {
                latencies.push_str(&format!(",{}", us(mean)));
            }
            let gpus = if with_gpus {
                format!(",{}", gpu_cells(l.metrics.as_ref()))
            } else {
                String::new()
            };
            let (q, ci, cf, co) = l.server.as_ref().map_or((0.0, 0.0, 0.0, 0.0), breakdown);
            let (send, recv) = l
                .client
                .as_ref()
                .map_or((0.0, 0.0), |c| (c.send_us, c.recv_us));
            // As perf_analyzer: the client's wait is the latency less its
            // own send and receive time; the network's share is that wait
            // less the server's time, floored at 0.
            let wait = (mean - send - recv).max(0.0);
            let network = (wait - q - ci - cf - co).max(0.0);
            let first = l.first_response_us.as_ref();
            let inter = l.inter_response_us.as_ref();
            let per = |p: Option<&Latency>| match p {
                Some(p) => format!("{},{},{},{},{}", p.p50, p.p90, p.p95, p.p99, us(p.mean)),
                None => ",,,,".into(),
            };
            let generative = format!(
                "{},{},{},{},{},{},{}",
                l.responses,
                l.responses_per_request
                    .as_ref()
                    .map_or(String::new(), |r| format!("{:.2}", r.mean)),
                l.responses_per_request
                    .as_ref()
                    .map_or(String::new(), |r| r.max.to_string()),
                per(first),
                per(inter),
                l.output_tokens_per_s
                    .map_or(String::new(), |t| format!("{t:.2}")),
                l.cancelled,
            );
            out.push_str(&format!(
                "{load},{:.2},{},{},{},{},{},{},{},{latencies},{},{}{gpus},{generative}\n",
                l.throughput_per_s,
                us(send),
                us(network),
                us(q),
                us(ci),
                us(cf),
                us(co),
                us(recv),
                us(send + recv),
                us(wait),
            ));
        }
        out
    }
}

/// Test fixtures: a level and a report with every field at its empty
/// value, for tests to override what they look at (struct update syntax),
/// so that a new field is added here once.
#[cfg(test)]
pub(crate) mod fixture {
    use super::*;

    /// A closed-loop level at concurrency 1, 1 s, nothing measured.
    pub(crate) fn level() -> LevelResult {
        LevelResult {
            concurrency: Some(1),
            request_rate: None,
            duration_s: 1.0,
            requests: 0,
            errors: 0,
            errors_by_kind: BTreeMap::new(),
            throughput_per_s: 0.0,
            requests_per_s: 0.0,
            latency_us: None,
            latency_cdf: Vec::new(),
            cancelled: 0,
            responses: 0,
            first_response_us: None,
            inter_response_us: None,
            responses_per_request: None,
            output_tokens_per_s: None,
            output_tokens_source: None,
            sequence_latency_us: None,
            late_sends: 0,
            client: None,
            server: None,
            stable: None,
            windows: 1,
            targets: Vec::new(),
            percentile_latency_us: None,
            latency_threshold_met: None,
            metrics: None,
            successful_requests: 0,
            inferences: 0,
            successful_responses: 0,
            output_token_count: None,
            client_send_total_us: 0.0,
            client_recv_total_us: 0.0,
            window_start_us: 0,
            window_end_us: 0,
            histograms: None,
        }
    }

    /// A report of `levels`: model "m" at h:8000 over HTTP, batch 1,
    /// binary tensors, closed loop.
    pub(crate) fn report(levels: Vec<LevelResult>) -> PerfReport {
        PerfReport {
            model: "m".into(),
            protocol: "http".into(),
            url: "h:8000".into(),
            urls: vec!["h:8000".into()],
            batch_size: 1,
            input_tensor_format: "binary".into(),
            output_tensor_format: "binary".into(),
            model_config_source: "config".into(),
            mode: "concurrency".into(),
            endpoint: "infer".into(),
            decoupled: false,
            output_tokens: None,
            percentile: None,
            latency_threshold_ms: None,
            binary_search: None,
            metrics_url: None,
            shared_memory: None,
            request_distribution: None,
            shard: None,
            merged_from: None,
            levels,
            notes: Vec::new(),
            warnings: Vec::new(),
        }
    }
}
