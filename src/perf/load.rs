//! Running the load: setup (metadata, config, statistics), then per level
//! a closed loop (N workers, each sends when its previous answer is in) or
//! an open loop (sends on a schedule, latency from the scheduled time),
//! measured into an HDR histogram (constant memory).

use super::client::{ErrorKind, PerfClient, Prepared, Protocol};
use super::ensemble;
use super::exchange::{Cancel, Canceller, Exchange};
use super::generative::{self, Api};
use super::inputs::{self, Body, BodyOptions, DataFile, InputData};
use super::model::ModelInfo;
use super::report::{ClientStats, Latency, LevelResult, PerRequest, PerfReport, TargetCount};
use super::rng::Rng;
use super::schedule::{Distribution, Level, Schedule};
use super::stats::{self, ComposingStats, ServerStats, Snapshot};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long each level measures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Window {
    /// Requests sent within this time after the warmup.
    Time(Duration),
    /// Exactly this many requests after the warmup.
    Count(u64),
    /// Windows of `interval` (requests counted by when they finish) until
    /// the last 3 are stable within `percentage`, at most `max_trials`.
    Stability {
        interval: Duration,
        percentage: f64,
        max_trials: u32,
    },
}

/// Everything a run needs (already checked for syntax by the caller).
#[derive(Debug, Clone)]
pub struct PerfOptions {
    pub model: String,
    pub version: Option<String>,
    pub url: String,
    /// Every server of `-u` (the first is `url`): connections and sends go
    /// round-robin over them.
    pub urls: Vec<String>,
    pub headers: Vec<(String, String)>,
    /// `-i` (and `--streaming` for gRPC).
    pub protocol: Protocol,
    pub levels: Vec<Level>,
    pub distribution: Distribution,
    /// `--request-intervals`: gaps in seconds, replayed cyclically.
    pub intervals: Option<Arc<Vec<f64>>>,
    pub seed: u64,
    pub max_concurrency: usize,
    pub window: Window,
    pub warmup: Duration,
    pub timeout: Duration,
    /// `--max-response-bytes`: the largest answer read (`None`: 16 MiB
    /// from the discovery endpoints, and for inference a default from the
    /// model's outputs, see [`ModelInfo::default_response_limit`]).
    pub max_response_bytes: Option<u64>,
    /// `--max-input-bytes`: the largest input tensor built.
    pub max_input_bytes: u64,
    pub input_data: InputData,
    /// `--input-data FILE`, parsed (checked against the model later).
    pub data_file: Option<DataFile>,
    pub shapes: Vec<String>,
    pub batch: u64,
    pub binary_inputs: bool,
    pub binary_outputs: bool,
    /// Whether `--input-tensor-format` / `--output-tensor-format` were
    /// given: when not, a server without the `binary_tensor_data`
    /// extension gets JSON tensors instead.
    pub tensor_formats_given: (bool, bool),
    /// No config endpoint: the first metadata dim is a batch dim.
    pub batched: bool,
    /// Sequence models: requests per sequence (`None`: 20, or the length
    /// of the data streams).
    pub sequence_length: Option<u64>,
    /// Sequence models: lengths vary within ± this many percent.
    pub sequence_length_variation: f64,
    /// Sequence models: string ids, this prefix and the number.
    pub sequence_id_prefix: Option<String>,
    /// Sequence ids: the first and how many (ids wrap around).
    pub sequence_ids: (u64, u64),
    /// Open loop, sequence models: sequences live at once.
    pub num_sequences: usize,
    /// `--endpoint`: the API requests go to.
    pub api: Api,
    /// Prompts from `--input-data FILE` when the file holds prompts (JSON
    /// Lines).
    pub prompts: Option<Arc<Vec<String>>>,
    /// `--prompt-words MEAN[:STDDEV]`: synthetic prompts' word counts.
    pub prompt_words: Option<(f64, f64)>,
    /// `--max-tokens`: passed where the endpoint takes it.
    pub max_tokens: Option<u64>,
}

/// Why a run could not start (exit status 2).
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Unreachable(String),
    /// Writing `--export-requests` failed.
    #[error("{0}")]
    Export(std::io::Error),
}

/// Live counters for a progress display.
#[derive(Debug, Default)]
pub struct Progress {
    /// Index of the level being run.
    pub level: AtomicU64,
    /// Measured requests finished in this level.
    pub done: AtomicU64,
    /// Of those, failed.
    pub errors: AtomicU64,
}

/// Late by more than this counts as a late send.
const LATE: Duration = Duration::from_millis(1);

struct Recorder {
    /// Latency of the successful requests: to their last response.
    hist: Histogram<u64>,
    /// Successful requests: to their first response, and the gaps between
    /// their responses.
    first_hist: Histogram<u64>,
    inter_hist: Histogram<u64>,
    /// Responses received by measured requests (cancelled and failed
    /// ones included).
    responses: u64,
    /// Responses of the successful requests, and the most one had.
    ok_responses: u64,
    max_responses: u64,
    /// Output tokens of the successful requests that reported them, how
    /// many did, and whether some were counted from responses.
    tokens: u64,
    with_tokens: u64,
    tokens_counted: bool,
    /// Measured requests cut off at the end of the level.
    cancelled: u64,
    /// First step sent to last step answered, per complete sequence.
    seq_hist: Histogram<u64>,
    errors: BTreeMap<String, u64>,
    ok: u64,
    /// Client send and receive time of the successful requests, summed.
    send_ns: u64,
    recv_ns: u64,
    late: u64,
    last_done: Option<Instant>,
    /// Measured requests per server (`-u` order).
    targets: Vec<u64>,
}

impl Recorder {
    fn new(targets: usize) -> Self {
        // 1 µs .. 1 hour, 3 significant digits
        let histogram =
            || Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("histogram bounds");
        Recorder {
            hist: histogram(),
            first_hist: histogram(),
            inter_hist: histogram(),
            responses: 0,
            ok_responses: 0,
            max_responses: 0,
            tokens: 0,
            with_tokens: 0,
            tokens_counted: false,
            cancelled: 0,
            seq_hist: histogram(),
            errors: BTreeMap::new(),
            ok: 0,
            send_ns: 0,
            recv_ns: 0,
            late: 0,
            last_done: None,
            targets: vec![0; targets],
        }
    }

    fn merge(&mut self, o: &Recorder) {
        let _ = self.hist.add(&o.hist);
        let _ = self.first_hist.add(&o.first_hist);
        let _ = self.inter_hist.add(&o.inter_hist);
        self.responses += o.responses;
        self.ok_responses += o.ok_responses;
        self.max_responses = self.max_responses.max(o.max_responses);
        self.tokens += o.tokens;
        self.with_tokens += o.with_tokens;
        self.tokens_counted |= o.tokens_counted;
        self.cancelled += o.cancelled;
        let _ = self.seq_hist.add(&o.seq_hist);
        for (k, n) in &o.errors {
            *self.errors.entry(k.clone()).or_insert(0) += n;
        }
        self.ok += o.ok;
        self.send_ns += o.send_ns;
        self.recv_ns += o.recv_ns;
        self.late += o.late;
        self.last_done = self.last_done.max(o.last_done);
        for (a, b) in self.targets.iter_mut().zip(&o.targets) {
            *a += b;
        }
    }
}

/// The measurement of one level, shared by the requests to every server.
struct Meter {
    /// When the level's load starts, and when its measurement starts.
    start: Instant,
    t0: Instant,
    window: Window,
    /// Per window (one unless `Window::Stability`).
    windows: Mutex<Vec<Recorder>>,
    /// Set when a stability run has decided.
    stop: AtomicBool,
    progress: Arc<Progress>,
    targets: usize,
}

impl Meter {
    fn new(opts: &PerfOptions, targets: usize, progress: Arc<Progress>) -> Self {
        let start = Instant::now();
        Meter {
            start,
            t0: start + opts.warmup,
            window: opts.window,
            windows: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
            progress,
            targets,
        }
    }

    /// Whether a request sent at `at` is measured, and whether to stop
    /// sending (for `Window::Count`, `claimed` hands out the N measured
    /// slots).
    fn claim(&self, at: Instant, claimed: &AtomicU64) -> (bool, bool) {
        if let Window::Stability { .. } = self.window {
            return (at >= self.t0, self.stop.load(Ordering::Relaxed));
        }
        if at < self.t0 {
            return (false, false);
        }
        match self.window {
            Window::Time(d) => {
                if at >= self.t0 + d {
                    (false, true)
                } else {
                    (true, false)
                }
            }
            Window::Count(n) => {
                if claimed.fetch_add(1, Ordering::Relaxed) < n {
                    (true, false)
                } else {
                    (false, true)
                }
            }
            Window::Stability { .. } => unreachable!("handled above"),
        }
    }

    /// Runs `f` on the recorder of the window a request finished in
    /// (nothing after the last stability window).
    fn with(&self, done: Instant, f: impl FnOnce(&mut Recorder)) {
        let i = match self.window {
            Window::Stability {
                interval,
                max_trials,
                ..
            } => {
                let i = (done.saturating_duration_since(self.t0).as_nanos()
                    / interval.as_nanos().max(1)) as usize;
                if i >= max_trials.max(1) as usize {
                    return;
                }
                i
            }
            _ => 0,
        };
        let mut w = self.windows.lock().expect("recorder lock");
        while w.len() <= i {
            w.push(Recorder::new(self.targets));
        }
        f(&mut w[i]);
    }
}

/// How requests are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// One answer per request (`/infer`, gRPC `ModelInfer` or a stream).
    Unary,
    /// A decoupled model over gRPC `ModelStreamInfer`: responses until the
    /// final one.
    Decoupled,
    /// Triton's generate extension or an OpenAI-compatible server.
    Http(Api),
}

/// Where the lines of `--export-requests` go, and the clock that turns
/// instants into microseconds since the Unix epoch.
struct Export {
    /// Bounded: a slow disk slows the requests down instead of holding
    /// lines in memory.
    tx: std::sync::mpsc::SyncSender<Vec<u8>>,
    at: Instant,
    epoch_us: u64,
}

impl Export {
    fn us(&self, t: Instant) -> u64 {
        self.epoch_us + t.saturating_duration_since(self.at).as_micros() as u64
    }

    /// One request as a JSON line.
    fn line(&self, level: u64, scheduled: Instant, sent: Instant, ex: &Exchange) -> Vec<u8> {
        let responses: Vec<u64> = ex.responses.iter().map(|t| self.us(*t)).collect();
        let doc = serde_json::json!({
            "level": level,
            "scheduled_us": self.us(scheduled),
            "send_us": self.us(sent),
            "response_us": responses,
            "error": ex.result.as_ref().err().map(ErrorKind::key),
        });
        let mut line = serde_json::to_vec(&doc).expect("a JSON line");
        line.push(b'\n');
        line
    }
}

struct Shared {
    client: PerfClient,
    path: String,
    mode: Mode,
    /// The request body in the form the protocol sends.
    request: Prepared,
    /// `Mode::Http`: the request bodies (one per prompt), sent in turn.
    bodies: Arc<Vec<bytes::Bytes>>,
    meter: Arc<Meter>,
    /// Fires at the end of the level's measurement.
    cancel: Cancel,
    /// `--export-requests`, and the level's index.
    export: Option<Arc<Export>>,
    level: u64,
    /// This server's place in `-u` order, and its address.
    target: usize,
    url: String,
    /// `--input-data FILE`: a body per data entry (empty otherwise); plain
    /// requests take them in turn, across servers.
    data: Arc<Vec<Prepared>>,
    next_data: Arc<AtomicU64>,
    /// String sequence ids: this prefix and the number.
    id_prefix: Option<Arc<str>>,
}

impl Shared {
    async fn infer(&self) -> Exchange {
        match self.mode {
            Mode::Http(_) => self.send_body(self.next_body(), None).await,
            _ => self.send(self.next_request(), None).await,
        }
    }

    /// One step of a sequence (request parameters added to the request).
    async fn infer_step(&self, step: Step) -> Exchange {
        let mut p = serde_json::Map::new();
        p.insert(
            "sequence_id".into(),
            match &self.id_prefix {
                Some(prefix) => format!("{prefix}{}", step.id).into(),
                None => step.id.into(),
            },
        );
        p.insert("sequence_start".into(), step.start.into());
        p.insert("sequence_end".into(), step.end.into());
        if let Mode::Http(_) = self.mode {
            let body = match step.data {
                Some(i) if !self.bodies.is_empty() => &self.bodies[i % self.bodies.len()],
                _ => self.next_body(),
            };
            return self.send_body(body, Some(&p)).await;
        }
        let template = match step.data {
            Some(i) if !self.data.is_empty() => &self.data[i % self.data.len()],
            _ => &self.request,
        };
        self.send(template, Some(&p)).await
    }

    async fn send(
        &self,
        template: &Prepared,
        params: Option<&serde_json::Map<String, serde_json::Value>>,
    ) -> Exchange {
        match (self.mode, &self.client, &template.grpc) {
            (Mode::Decoupled, PerfClient::Grpc(g), Some(base)) => {
                g.infer_decoupled(base, params, &self.cancel).await
            }
            (Mode::Decoupled, ..) => Exchange::failed(ErrorKind::Malformed, Vec::new()),
            _ => {
                let r = self.client.infer(&self.path, template, params).await;
                Exchange::single(r, Instant::now())
            }
        }
    }

    async fn send_body(
        &self,
        body: &bytes::Bytes,
        params: Option<&serde_json::Map<String, serde_json::Value>>,
    ) -> Exchange {
        match (self.mode, &self.client) {
            (Mode::Http(api), PerfClient::Http(c)) => {
                generative::exchange(c, api, &self.path, body, params, &self.cancel).await
            }
            _ => Exchange::failed(ErrorKind::Malformed, Vec::new()),
        }
    }

    /// The next plain request.
    fn next_request(&self) -> &Prepared {
        if self.data.is_empty() {
            return &self.request;
        }
        let i = self.next_data.fetch_add(1, Ordering::Relaxed) as usize % self.data.len();
        &self.data[i]
    }

    /// The next body of `Mode::Http`.
    fn next_body(&self) -> &bytes::Bytes {
        let i = self.next_data.fetch_add(1, Ordering::Relaxed) as usize % self.bodies.len().max(1);
        &self.bodies[i]
    }

    fn record_sequence(&self, latency: Duration, done: Instant) {
        self.meter.with(done, |rec| {
            let us = (latency.as_micros() as u64).max(1);
            rec.seq_hist.saturating_record(us);
        });
    }

    /// Records a measured request: `origin` is where its latency counts
    /// from (the scheduled send time in open loop, the send in closed
    /// loop), `sent` when it was sent, `end` when it was over.
    fn record(&self, origin: Instant, sent: Instant, ex: &Exchange, late: bool, end: Instant) {
        if let Some(x) = &self.export {
            // the receiver is gone only when writing failed; that is
            // reported once the run is over
            let _ = x.tx.send(x.line(self.level, origin, sent, ex));
        }
        let micros = |d: Duration| d.as_micros() as u64;
        let progress = &self.meter.progress;
        self.meter.with(end, |rec| {
            let n = ex.responses.len() as u64;
            rec.responses += n;
            match &ex.result {
                Ok(()) => {
                    let last = ex.last(end);
                    rec.hist
                        .saturating_record(micros(last.saturating_duration_since(origin)).max(1));
                    if let Some(first) = ex.responses.first() {
                        rec.first_hist.saturating_record(
                            micros(first.saturating_duration_since(origin)).max(1),
                        );
                    }
                    for w in ex.responses.windows(2) {
                        rec.inter_hist
                            .saturating_record(micros(w[1].saturating_duration_since(w[0])));
                    }
                    rec.ok += 1;
                    rec.ok_responses += n;
                    rec.max_responses = rec.max_responses.max(n);
                    rec.send_ns += ex.time.send.as_nanos() as u64;
                    rec.recv_ns += ex.time.recv.as_nanos() as u64;
                    if let Some(t) = ex.tokens {
                        rec.tokens += t.count;
                        rec.with_tokens += 1;
                        rec.tokens_counted |= !t.from_usage;
                    }
                }
                Err(ErrorKind::Cancelled) => rec.cancelled += 1,
                Err(k) => {
                    *rec.errors.entry(k.key()).or_insert(0) += 1;
                    progress.errors.fetch_add(1, Ordering::Relaxed);
                }
            }
            if late {
                rec.late += 1;
            }
            if rec.last_done.is_none_or(|d| d < end) {
                rec.last_done = Some(end);
            }
            if let Some(n) = rec.targets.get_mut(self.target) {
                *n += 1;
            }
            progress.done.fetch_add(1, Ordering::Relaxed);
        });
    }
}

fn model_path(model: &str, version: &Option<String>) -> String {
    match version {
        Some(v) => format!("/v2/models/{model}/versions/{v}"),
        None => format!("/v2/models/{model}"),
    }
}

/// Runs every level. Blocking: builds its own runtime. With `export`,
/// one JSON line per measured request is written to it as the run goes
/// (`--export-requests`); after a failed write the run goes on without
/// writing and ends with [`StartError::Export`].
pub fn run(
    opts: &PerfOptions,
    progress: Arc<Progress>,
    export: Option<&mut dyn std::io::Write>,
) -> Result<PerfReport, StartError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| StartError::Unreachable(format!("cannot start the async runtime: {e}")))?;
    let Some(w) = export else {
        return rt.block_on(run_async(opts, progress, None));
    };
    // The run goes on another thread; this one writes the lines (the
    // writer need not be Send).
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(4096);
    std::thread::scope(|scope| {
        let rt = &rt;
        let running = scope.spawn(move || rt.block_on(run_async(opts, progress, Some(tx))));
        let mut failed = None;
        for line in rx {
            if failed.is_none() {
                if let Err(e) = w.write_all(&line) {
                    failed = Some(e);
                }
            }
        }
        let report = running.join().unwrap_or_else(|_| {
            Err(StartError::Unreachable(
                "the load stopped unexpectedly".into(),
            ))
        });
        match failed {
            Some(e) => Err(StartError::Export(e)),
            None => report,
        }
    })
}

async fn run_async(
    opts: &PerfOptions,
    progress: Arc<Progress>,
    export: Option<std::sync::mpsc::SyncSender<Vec<u8>>>,
) -> Result<PerfReport, StartError> {
    let export = export.map(|tx| {
        let epoch_us = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_micros() as u64)
            .unwrap_or(0);
        Arc::new(Export {
            tx,
            at: Instant::now(),
            epoch_us,
        })
    });
    let version = opts.version.as_deref();
    let discovery_limit = opts
        .max_response_bytes
        .unwrap_or(super::client::DEFAULT_DISCOVERY_RESPONSE_BYTES);
    let client = PerfClient::new(
        opts.protocol,
        &opts.url,
        &opts.headers,
        opts.timeout,
        discovery_limit,
    )
    .map_err(StartError::Usage)?;
    let base = model_path(&opts.model, &opts.version);
    // the other servers of `-u`: same settings, the model must be there
    let mut clients = vec![(client.authority().to_string(), client.clone())];
    for url in opts.urls.iter().skip(1) {
        let c = PerfClient::new(
            opts.protocol,
            url,
            &opts.headers,
            opts.timeout,
            discovery_limit,
        )
        .map_err(StartError::Usage)?;
        if !opts.api.is_openai() {
            c.metadata(&opts.model, version)
                .await
                .map_err(StartError::Unreachable)?;
        }
        clients.push((c.authority().to_string(), c));
    }
    if opts.api.is_openai() {
        return run_openai(opts, &client, clients, progress, export).await;
    }
    let meta = client
        .metadata(&opts.model, version)
        .await
        .map_err(StartError::Unreachable)?;
    let config = client
        .config(&opts.model, version)
        .await
        .map_err(StartError::Unreachable)?;
    let mut notes = Vec::new();
    let mut warnings = Vec::new();
    if config.is_none() {
        notes.push(format!(
            "the server has no model config endpoint for '{}'; batching and dims come from the model metadata{}",
            opts.model,
            if opts.batched { " (--batched: its first dim is the batch dim)" } else { "" }
        ));
    }
    let (mut binary_inputs, mut binary_outputs) = (opts.binary_inputs, opts.binary_outputs);
    if binary_inputs || binary_outputs {
        if let Some(ext) = client.server_extensions().await {
            if !ext.iter().any(|e| e == "binary_tensor_data") {
                let at = client.authority().to_string();
                let (in_given, out_given) = opts.tensor_formats_given;
                let mut switched = Vec::new();
                let mut kept = Vec::new();
                for (on, given, flag) in [
                    (&mut binary_inputs, in_given, "--input-tensor-format"),
                    (&mut binary_outputs, out_given, "--output-tensor-format"),
                ] {
                    if !*on {
                        continue;
                    }
                    if given {
                        kept.push(flag);
                    } else {
                        *on = false;
                        switched.push(flag);
                    }
                }
                if !switched.is_empty() {
                    notes.push(format!(
                        "the server at {at} does not list the binary_tensor_data extension; sending JSON tensors (give {} binary to force binary)",
                        switched.join(" / ")
                    ));
                }
                if !kept.is_empty() {
                    warnings.push(format!(
                        "the server at {at} does not list the binary_tensor_data extension, but {} binary was given; requests may fail",
                        kept.join(" / ")
                    ));
                }
            }
        }
    }
    let mut info = ModelInfo::new(&meta, config.as_ref(), opts.batched)
        .map_err(|e| StartError::Unreachable(format!("model metadata of '{}': {e}", opts.model)))?;
    // an ensemble with a stateful step takes sequence flags, as a
    // sequence model does (perf_analyzer's ENSEMBLE_SEQUENCE)
    let ensemble = match &config {
        Some(cfg) => ensemble::discover(&client, &opts.model, cfg)
            .await
            .map_err(StartError::Unreachable)?,
        None => None,
    };
    let stateful_steps: Vec<String> = ensemble
        .iter()
        .flat_map(|e| e.stateful())
        .map(|m| format!("'{}'", m.name))
        .collect();
    if !stateful_steps.is_empty() && !info.sequence {
        info.sequence = true;
        notes.push(format!(
            "ensemble '{}' has stateful steps ({}, with a sequence batcher): every request carries a sequence id and the start and end flags",
            opts.model,
            stateful_steps.join(", ")
        ));
    }
    // data entries may give the shapes of variable dims themselves; the
    // generate endpoint's bodies take a variable dim as 1 (no tensor is
    // built from the dims)
    let generate = opts.api == Api::Generate;
    info.apply_shapes(&opts.shapes, opts.data_file.is_none() && !generate)
        .map_err(StartError::Usage)?;
    info.check_batch(opts.batch).map_err(StartError::Usage)?;
    let mode = match opts.api {
        Api::Infer if info.decoupled => match opts.protocol {
            Protocol::Http => {
                return Err(StartError::Usage(format!(
                    "model '{}' is decoupled (any number of responses per request): its responses stream over gRPC (-i grpc) or Triton's generate endpoint (--endpoint generate), not over /infer",
                    opts.model
                )))
            }
            Protocol::Grpc { streaming } => {
                if !streaming {
                    notes.push(format!(
                        "model '{}' is decoupled: requests go over ModelStreamInfer streams, each read until its final response",
                        opts.model
                    ));
                }
                Mode::Decoupled
            }
        },
        Api::Infer => Mode::Unary,
        api => Mode::Http(api),
    };
    if info.sequence && opts.batch != 1 {
        return Err(StartError::Usage(if stateful_steps.is_empty() {
            format!(
                "model '{}' has a sequence batcher: requests carry one sequence step each, use -b 1",
                opts.model
            )
        } else {
            format!(
                "ensemble '{}' has stateful steps ({}): requests carry one sequence step each, use -b 1",
                opts.model,
                stateful_steps.join(", ")
            )
        }));
    }
    let body: Body = if generate {
        // the requests are the bodies of `generative::bodies`
        Body::default()
    } else {
        inputs::build(
            &info,
            BodyOptions {
                batch: opts.batch,
                data: opts.input_data,
                seed: opts.seed,
                binary_inputs,
                binary_outputs,
                max_input_bytes: opts.max_input_bytes,
            },
        )
        .map_err(StartError::Usage)?
    };
    let (data, streams) = match &opts.data_file {
        Some(file) => file
            .bodies(
                &info,
                opts.batch,
                binary_inputs,
                binary_outputs,
                opts.max_input_bytes,
            )
            .map_err(StartError::Usage)?,
        None => (Vec::new(), Vec::new()),
    };
    let data: Arc<Vec<Prepared>> = Arc::new(
        data.into_iter()
            .map(|b| client.prepare(b, &opts.model, version))
            .collect::<Result<_, _>>()
            .map_err(StartError::Usage)?,
    );
    let request = client
        .prepare(body, &opts.model, version)
        .map_err(StartError::Usage)?;
    // inference answers: the limit given, else one from the outputs
    let infer_limit = opts
        .max_response_bytes
        .unwrap_or_else(|| info.default_response_limit(opts.batch, binary_outputs));
    let clients: Vec<(String, PerfClient)> = clients
        .into_iter()
        .map(|(u, c)| {
            let c = c.with_infer_limit(infer_limit);
            match mode {
                Mode::Decoupled => (u, c.streaming()),
                _ => (u, c),
            }
        })
        .collect();
    let bodies = match mode {
        Mode::Http(api) => {
            let prompts = prompts_of(opts);
            generative::bodies(&generative::BodySpec {
                api,
                model: &opts.model,
                info: Some(&info),
                prompts: &prompts,
                max_tokens: opts.max_tokens,
            })
            .map_err(StartError::Usage)?
        }
        _ => Vec::new(),
    };
    let stats_path = format!("{base}/stats");
    let mut has_stats = true;
    for (_, c) in &clients {
        has_stats &= matches!(c.statistics_at(&stats_path).await, Some(ref d) if Snapshot::parse(d, &opts.model).is_some());
    }
    // an ensemble's composing models: the ones every server has
    // statistics for
    let mut composing = Vec::new();
    for m in ensemble.iter().flat_map(|e| &e.models) {
        let path = format!("{}/stats", model_path(&m.name, &m.version));
        let mut listed = None;
        let mut all = true;
        for (_, c) in &clients {
            match c.statistics_at(&path).await {
                Some(d) if Snapshot::parse(&d, &m.name).is_some() => {
                    listed.get_or_insert_with(|| stats::versions(&d, &m.name));
                }
                _ => all = false,
            }
        }
        if !all {
            notes.push(format!(
                "the server has no statistics for '{}', a composing model of '{}'; it is left out of the per-model server times",
                m.name, opts.model
            ));
            continue;
        }
        composing.push(Watched {
            path,
            model: m.name.clone(),
            version: m
                .version
                .clone()
                .or_else(|| listed.filter(|v| !v.is_empty()).map(|v| v.join(","))),
        });
    }
    let watched = StatsPlan {
        main: has_stats.then(|| Watched {
            path: stats_path.clone(),
            model: opts.model.clone(),
            version: None,
        }),
        composing,
    };

    let plan = LevelPlan {
        path: match mode {
            Mode::Http(api) => generative::path(api, &opts.model, version, info.decoupled),
            _ => format!("{base}/infer"),
        },
        mode,
        request,
        bodies: Arc::new(bodies),
        data,
        streams,
        sequence: info.sequence,
        watched,
    };
    let levels = run_levels(opts, &clients, plan, &progress, export).await;
    warnings.extend(too_large_warning(&levels, infer_limit));
    Ok(PerfReport {
        model: opts.model.clone(),
        protocol: client.protocol_name().into(),
        url: client.authority().to_string(),
        urls: clients.iter().map(|(u, _)| u.clone()).collect(),
        batch_size: opts.batch,
        input_tensor_format: if binary_inputs { "binary" } else { "json" }.into(),
        output_tensor_format: if binary_outputs { "binary" } else { "json" }.into(),
        mode: mode_name(opts).into(),
        model_config_source: if info.has_config {
            "config"
        } else {
            "metadata"
        }
        .into(),
        endpoint: opts.api.name().into(),
        decoupled: info.decoupled,
        output_tokens: output_tokens(&levels),
        levels,
        notes,
        warnings,
    })
}

/// The warning when answers (or events) above `--max-response-bytes`
/// were not read.
fn too_large_warning(levels: &[LevelResult], limit: u64) -> Option<String> {
    let n: u64 = levels
        .iter()
        .filter_map(|l| l.errors_by_kind.get(&ErrorKind::TooLarge(0).key()))
        .sum();
    (n > 0).then(|| format!(
        "{n} responses were larger than {limit} bytes, the limit of --max-response-bytes, and were not read (raise it if such responses are expected)"
    ))
}

/// The prompts of a generative run: those of `--input-data FILE`, else
/// synthetic ones (`--prompt-words`).
fn prompts_of(opts: &PerfOptions) -> Arc<Vec<String>> {
    match &opts.prompts {
        Some(p) => p.clone(),
        None => Arc::new(super::prompts::synthetic(
            opts.prompt_words.unwrap_or(super::prompts::DEFAULT_WORDS),
            opts.seed,
            super::prompts::SYNTHETIC_PROMPTS,
        )),
    }
}

/// Where the report's output token counts come from: `usage` when the
/// server reported them for every request, `responses` when some were
/// counted from responses, `None` when no request had any.
fn output_tokens(levels: &[LevelResult]) -> Option<String> {
    let known: Vec<&str> = levels
        .iter()
        .filter_map(|l| l.output_tokens_source.as_deref())
        .collect();
    if known.is_empty() {
        None
    } else if known.contains(&"responses") {
        Some("responses".into())
    } else {
        Some("usage".into())
    }
}

/// An OpenAI-compatible server: no KServe discovery or statistics; the
/// model is named in each request.
async fn run_openai(
    opts: &PerfOptions,
    client: &PerfClient,
    clients: Vec<(String, PerfClient)>,
    progress: Arc<Progress>,
    export: Option<Arc<Export>>,
) -> Result<PerfReport, StartError> {
    let limit = opts
        .max_response_bytes
        .unwrap_or(super::client::DEFAULT_DISCOVERY_RESPONSE_BYTES);
    let clients: Vec<(String, PerfClient)> = clients
        .into_iter()
        .map(|(u, c)| (u, c.with_infer_limit(limit)))
        .collect();
    let prompts = prompts_of(opts);
    let bodies = generative::bodies(&generative::BodySpec {
        api: opts.api,
        model: &opts.model,
        info: None,
        prompts: &prompts,
        max_tokens: opts.max_tokens,
    })
    .map_err(StartError::Usage)?;
    let plan = LevelPlan {
        path: generative::path(opts.api, &opts.model, None, true),
        mode: Mode::Http(opts.api),
        request: Prepared {
            body: Body::default(),
            bytes: bytes::Bytes::new(),
            grpc: None,
        },
        bodies: Arc::new(bodies),
        data: Arc::new(Vec::new()),
        streams: Vec::new(),
        sequence: false,
        watched: StatsPlan::default(),
    };
    let levels = run_levels(opts, &clients, plan, &progress, export).await;
    let mut notes = Vec::new();
    if levels
        .iter()
        .any(|l| l.output_tokens_source.as_deref() == Some("responses"))
    {
        notes.push(
            "the server did not report usage for every request: output tokens were counted as responses (streamed chunks)"
                .into(),
        );
    }
    Ok(PerfReport {
        model: opts.model.clone(),
        protocol: client.protocol_name().into(),
        url: client.authority().to_string(),
        urls: clients.iter().map(|(u, _)| u.clone()).collect(),
        batch_size: opts.batch,
        input_tensor_format: "json".into(),
        output_tensor_format: "json".into(),
        mode: mode_name(opts).into(),
        model_config_source: "none".into(),
        endpoint: opts.api.name().into(),
        decoupled: false,
        output_tokens: output_tokens(&levels),
        warnings: too_large_warning(&levels, limit).into_iter().collect(),
        levels,
        notes,
    })
}

/// `concurrency`, `request_rate` or `request_intervals`.
fn mode_name(opts: &PerfOptions) -> &'static str {
    match opts.levels.first() {
        Some(Level::Rate(_)) if opts.intervals.is_some() => "request_intervals",
        Some(Level::Rate(_)) => "request_rate",
        _ => "concurrency",
    }
}

/// What every level sends and watches, decided before the load.
struct LevelPlan {
    path: String,
    mode: Mode,
    request: Prepared,
    bodies: Arc<Vec<bytes::Bytes>>,
    data: Arc<Vec<Prepared>>,
    /// Data streams of sequence models (indexes into `data`).
    streams: Vec<Vec<usize>>,
    sequence: bool,
    watched: StatsPlan,
}

/// Runs the levels one after the other.
async fn run_levels(
    opts: &PerfOptions,
    clients: &[(String, PerfClient)],
    plan: LevelPlan,
    progress: &Arc<Progress>,
    export: Option<Arc<Export>>,
) -> Vec<LevelResult> {
    let ids = Arc::new(SequenceIds::new(
        opts.sequence_ids,
        opts.sequence_length,
        opts.sequence_length_variation,
        opts.seed,
        plan.streams,
    ));
    let next_data = Arc::new(AtomicU64::new(0));
    let id_prefix: Option<Arc<str>> = opts.sequence_id_prefix.as_deref().map(Arc::from);
    let mut levels = Vec::new();
    for (i, level) in opts.levels.iter().enumerate() {
        progress.level.store(i as u64, Ordering::Relaxed);
        progress.done.store(0, Ordering::Relaxed);
        progress.errors.store(0, Ordering::Relaxed);
        let meter = Arc::new(Meter::new(opts, clients.len(), progress.clone()));
        let (canceller, cancel) = Canceller::new();
        let targets: Vec<Arc<Shared>> = clients
            .iter()
            .enumerate()
            .map(|(target, (url, client))| {
                Arc::new(Shared {
                    client: client.clone(),
                    path: plan.path.clone(),
                    mode: plan.mode,
                    request: plan.request.clone(),
                    bodies: plan.bodies.clone(),
                    meter: meter.clone(),
                    cancel: cancel.clone(),
                    export: export.clone(),
                    level: i as u64,
                    target,
                    url: url.clone(),
                    data: plan.data.clone(),
                    next_data: next_data.clone(),
                    id_prefix: id_prefix.clone(),
                })
            })
            .collect();
        let result = run_level(
            opts,
            *level,
            targets,
            meter,
            canceller,
            &plan.watched,
            i as u64,
            plan.sequence.then_some(&ids),
        )
        .await;
        levels.push(result);
    }
    levels
}

async fn snapshot(client: &PerfClient, path: &str, model: &str) -> Option<Snapshot> {
    match client.statistics_at(path).await {
        Some(d) => Snapshot::parse(&d, model),
        None => None,
    }
}

/// The statistics of every server, summed (`None` when one has none).
async fn snapshot_all(targets: &[Arc<Shared>], path: &str, model: &str) -> Option<Snapshot> {
    let mut sum = Snapshot::default();
    for t in targets {
        sum = sum.plus(&snapshot(&t.client, path, model).await?);
    }
    Some(sum)
}

/// One model whose statistics are read around each level.
#[derive(Debug, Clone)]
struct Watched {
    /// `/v2/models/M[/versions/V]/stats`.
    path: String,
    model: String,
    /// The version shown for a composing model.
    version: Option<String>,
}

/// The models whose statistics are read: the model itself (when the
/// server has statistics for it) and an ensemble's composing models.
#[derive(Debug, Clone, Default)]
struct StatsPlan {
    main: Option<Watched>,
    composing: Vec<Watched>,
}

impl StatsPlan {
    fn is_empty(&self) -> bool {
        self.main.is_none() && self.composing.is_empty()
    }

    /// A snapshot of every watched model (the model itself first), summed
    /// over the servers.
    async fn snapshot(&self, targets: &[Arc<Shared>]) -> Vec<Option<Snapshot>> {
        let mut out = Vec::with_capacity(1 + self.composing.len());
        out.push(match &self.main {
            Some(w) => snapshot_all(targets, &w.path, &w.model).await,
            None => None,
        });
        for w in &self.composing {
            out.push(snapshot_all(targets, &w.path, &w.model).await);
        }
        out
    }

    /// The level's server statistics from the snapshots before and after
    /// it; the composing models' go inside the model's own (an entry is
    /// left out when a snapshot is missing or a counter went backwards).
    fn diff(&self, before: &[Option<Snapshot>], after: &[Option<Snapshot>]) -> Option<ServerStats> {
        let pair = |i: usize| match (before.get(i), after.get(i)) {
            (Some(Some(b)), Some(Some(a))) => Some((*b, *a)),
            _ => None,
        };
        let (b, a) = pair(0)?;
        let mut own = stats::diff(&b, &a)?;
        if !self.composing.is_empty() {
            own.composing_models = Some(
                self.composing
                    .iter()
                    .enumerate()
                    .filter_map(|(i, w)| {
                        let (b, a) = pair(i + 1)?;
                        Some(ComposingStats {
                            model: w.model.clone(),
                            version: w.version.clone(),
                            stats: stats::diff_counts(&b, &a)?,
                        })
                    })
                    .collect(),
            );
        }
        Some(own)
    }
}

fn latency(h: &Histogram<u64>) -> Latency {
    Latency {
        p50: h.value_at_quantile(0.50),
        p90: h.value_at_quantile(0.90),
        p95: h.value_at_quantile(0.95),
        p99: h.value_at_quantile(0.99),
        max: h.max(),
        mean: h.mean(),
    }
}

/// Whether windows `n-3 .. n` are stable: throughput and mean latency
/// each within max/min <= 1 + percentage/100, and every window had a
/// successful request.
fn stable(windows: &[Recorder], n: usize, percentage: f64) -> bool {
    if n < 3 || windows.len() < n {
        return false;
    }
    let last = &windows[n - 3..n];
    if last.iter().any(|w| w.ok == 0) {
        return false;
    }
    let within = |v: Vec<f64>| {
        let max = v.iter().copied().fold(f64::MIN, f64::max);
        let min = v.iter().copied().fold(f64::MAX, f64::min);
        min > 0.0 && max / min <= 1.0 + percentage / 100.0
    };
    within(last.iter().map(|w| w.ok as f64).collect())
        && within(last.iter().map(|w| w.hist.mean()).collect())
}

#[allow(clippy::too_many_arguments)]
async fn run_level(
    opts: &PerfOptions,
    level: Level,
    targets: Vec<Arc<Shared>>,
    meter: Arc<Meter>,
    canceller: Canceller,
    watched: &StatsPlan,
    index: u64,
    sequences: Option<&Arc<SequenceIds>>,
) -> LevelResult {
    let start = meter.start;
    let t0 = meter.t0;
    // the end of the measurement cancels requests still streaming: at the
    // end of a time window, or when stability windows have decided (a
    // count window waits for its requests)
    let canceller = Arc::new(canceller);
    let timer = match opts.window {
        Window::Time(d) => {
            let c = canceller.clone();
            Some(tokio::spawn(async move {
                tokio::time::sleep_until((t0 + d).into()).await;
                c.cancel();
            }))
        }
        _ => None,
    };
    // the "before" snapshot is taken when the measurement starts: right
    // now, before any load, when there is no warm-up (a short run could
    // otherwise end before a spawned snapshot is taken); else at t0
    let before_now = if !watched.is_empty() && std::time::Instant::now() >= t0 {
        Some(watched.snapshot(&targets).await)
    } else {
        None
    };
    let before = (!watched.is_empty() && before_now.is_none()).then(|| {
        let targets = targets.clone();
        let watched = watched.clone();
        tokio::spawn(async move {
            tokio::time::sleep_until(t0.into()).await;
            watched.snapshot(&targets).await
        })
    });
    // stability windows: decide after each window whether to go on
    let monitor = match opts.window {
        Window::Stability {
            interval,
            percentage,
            max_trials,
        } => {
            let m = meter.clone();
            let c = canceller.clone();
            Some(tokio::spawn(async move {
                for k in 1..=max_trials.max(1) as usize {
                    tokio::time::sleep_until((t0 + interval * k as u32).into()).await;
                    let done = stable(&m.windows.lock().expect("recorder lock"), k, percentage);
                    if done {
                        m.stop.store(true, Ordering::Relaxed);
                        c.cancel();
                        return (true, k);
                    }
                }
                m.stop.store(true, Ordering::Relaxed);
                c.cancel();
                (false, max_trials.max(1) as usize)
            }))
        }
        _ => None,
    };
    match (level, sequences) {
        (Level::Concurrency(n), None) => closed_loop(opts, n, &targets).await,
        (Level::Rate(r), None) => open_loop(opts, r, &targets, start, index).await,
        (Level::Concurrency(n), Some(ids)) => closed_loop_sequences(opts, n, &targets, ids).await,
        (Level::Rate(r), Some(ids)) => {
            open_loop_sequences(opts, r, &targets, start, index, ids).await
        }
    }
    if let Some(t) = timer {
        t.abort();
    }
    let (stable, windows) = match monitor {
        Some(h) => match h.await {
            Ok((s, k)) => (Some(s), k),
            Err(_) => (Some(false), 0),
        },
        None => (None, 1),
    };
    let before = match (before_now, before) {
        (Some(b), _) => Some(b),
        (None, Some(h)) => h.await.ok(),
        (None, None) => None,
    };
    let server = match before {
        Some(b) => watched.diff(&b, &watched.snapshot(&targets).await),
        None => None,
    };
    // the measured windows, merged: the last 3 of a stability run
    let recs = meter.windows.lock().expect("recorder lock");
    let used = match opts.window {
        Window::Stability { .. } => {
            windows.min(recs.len()).saturating_sub(3)..windows.min(recs.len())
        }
        _ => 0..recs.len().min(1),
    };
    let mut rec = Recorder::new(targets.len());
    for w in &recs[used.clone()] {
        rec.merge(w);
    }
    let errors: u64 = rec.errors.values().sum();
    let requests = rec.ok + errors;
    let duration = match opts.window {
        Window::Time(d) => d,
        Window::Stability { interval, .. } => interval * used.len() as u32,
        Window::Count(_) => rec
            .last_done
            .map(|d| d.saturating_duration_since(t0))
            .unwrap_or_default(),
    };
    let secs = duration.as_secs_f64().max(1e-9);
    LevelResult {
        concurrency: match level {
            Level::Concurrency(n) => Some(n),
            Level::Rate(_) => None,
        },
        request_rate: match level {
            Level::Rate(r) => Some(r),
            Level::Concurrency(_) => None,
        },
        duration_s: duration.as_secs_f64(),
        requests,
        errors,
        errors_by_kind: rec.errors.clone(),
        throughput_per_s: rec.ok as f64 * opts.batch as f64 / secs,
        requests_per_s: rec.ok as f64 / secs,
        latency_us: (rec.ok > 0).then(|| latency(&rec.hist)),
        cancelled: rec.cancelled,
        responses: rec.responses,
        first_response_us: (!rec.first_hist.is_empty()).then(|| latency(&rec.first_hist)),
        inter_response_us: (!rec.inter_hist.is_empty()).then(|| latency(&rec.inter_hist)),
        responses_per_request: (rec.ok > 0).then(|| PerRequest {
            mean: rec.ok_responses as f64 / rec.ok as f64,
            max: rec.max_responses,
        }),
        output_tokens_per_s: (rec.with_tokens > 0).then(|| rec.tokens as f64 / secs),
        output_tokens_source: (rec.with_tokens > 0).then(|| {
            if rec.tokens_counted || rec.with_tokens < rec.ok {
                "responses"
            } else {
                "usage"
            }
            .to_string()
        }),
        sequence_latency_us: (sequences.is_some() && !rec.seq_hist.is_empty())
            .then(|| latency(&rec.seq_hist)),
        late_sends: rec.late,
        client: (rec.ok > 0).then(|| ClientStats {
            send_us: rec.send_ns as f64 / rec.ok as f64 / 1000.0,
            recv_us: rec.recv_ns as f64 / rec.ok as f64 / 1000.0,
        }),
        server,
        stable,
        windows: windows as u32,
        targets: targets
            .iter()
            .zip(&rec.targets)
            .map(|(t, n)| TargetCount {
                url: t.url.clone(),
                requests: *n,
            })
            .collect(),
    }
}

async fn closed_loop(opts: &PerfOptions, n: u64, targets: &[Arc<Shared>]) {
    let claimed = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut workers = Vec::new();
    for i in 0..n {
        // the workers' connections go round-robin over the servers
        let shared = targets[i as usize % targets.len()].clone();
        let claimed = claimed.clone();
        let stop = stop.clone();
        let _ = opts;
        workers.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let sent = Instant::now();
                let (measured, done) = shared.meter.claim(sent, &claimed);
                if done {
                    stop.store(true, Ordering::Relaxed);
                    break;
                }
                let ex = shared.infer().await;
                let end = Instant::now();
                if measured {
                    shared.record(sent, sent, &ex, false, end);
                }
                if matches!(ex.result, Err(ErrorKind::Connect)) {
                    // do not spin on a refused connection
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
        }));
    }
    for w in workers {
        let _ = w.await;
    }
}

/// The open-loop send times of a level: `--request-intervals` or the
/// rate's schedule.
fn schedule_of(opts: &PerfOptions, rate: f64, index: u64) -> Schedule {
    match &opts.intervals {
        Some(gaps) => Schedule::intervals(gaps.clone()),
        None => Schedule::new(rate, opts.distribution, opts.seed.wrapping_add(index)),
    }
}

async fn open_loop(
    opts: &PerfOptions,
    rate: f64,
    targets: &[Arc<Shared>],
    start: Instant,
    index: u64,
) {
    let permits = opts.max_concurrency.max(1);
    let sem = Arc::new(tokio::sync::Semaphore::new(permits));
    let schedule = schedule_of(opts, rate, index);
    let handle = tokio::runtime::Handle::current();
    let pacer_sem = sem.clone();
    let targets = targets.to_vec();
    // The pacer is a thread of its own: the runtime's timer rounds sleeps
    // up to whole milliseconds, which would make every send late.
    let pacer = tokio::task::spawn_blocking(move || {
        let claimed = AtomicU64::new(0);
        for (k, at) in schedule.enumerate() {
            let intended = start + Duration::from_secs_f64(at);
            let shared = targets[k % targets.len()].clone();
            let (measured, done) = shared.meter.claim(intended, &claimed);
            if done {
                break;
            }
            wait_until(intended);
            let permit = match pacer_sem.clone().try_acquire_owned() {
                Ok(p) => p,
                Err(_) => handle
                    .block_on(pacer_sem.clone().acquire_owned())
                    .expect("semaphore open"),
            };
            let late = Instant::now() > intended + LATE;
            handle.spawn(async move {
                let sent = Instant::now();
                let ex = shared.infer().await;
                let end = Instant::now();
                if measured {
                    // from the scheduled send time: waiting for a free slot
                    // or behind a stalled server counts
                    shared.record(intended, sent, &ex, late, end);
                }
                drop(permit);
            });
        }
    });
    let _ = pacer.await;
    // every request in flight has finished (or timed out)
    let _ = sem.acquire_many(permits as u32).await;
}

/// Sleeps until `t`: the OS sleep for most of it, a short spin at the end.
fn wait_until(t: Instant) {
    const SPIN: Duration = Duration::from_micros(60);
    loop {
        let now = Instant::now();
        if now >= t {
            return;
        }
        let left = t - now;
        if left > SPIN {
            std::thread::sleep(left - SPIN);
        } else {
            std::hint::spin_loop();
        }
    }
}

/// Hands out sequences: ids `first + (n mod count)`, lengths (drawn within
/// ±variation % of the base, or the length of a data stream) and data
/// streams (round-robin).
pub struct SequenceIds {
    first: u64,
    count: u64,
    next: AtomicU64,
    /// Base length; `None`: the length of the sequence's data stream.
    length: Option<u64>,
    /// ±percent.
    variation: f64,
    rng: Mutex<Rng>,
    /// Per data stream, the indexes of its entries in `Shared::data`.
    streams: Vec<Vec<usize>>,
}

impl SequenceIds {
    pub fn new(
        (first, count): (u64, u64),
        length: Option<u64>,
        variation: f64,
        seed: u64,
        streams: Vec<Vec<usize>>,
    ) -> Self {
        SequenceIds {
            first,
            count: count.max(1),
            next: AtomicU64::new(0),
            length,
            variation: variation.max(0.0),
            rng: Mutex::new(Rng::new(seed ^ 0x5E0)),
            streams,
        }
    }

    /// The next sequence's id, length and data stream.
    fn take(&self) -> (u64, u64, Option<usize>) {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let id = self.first + n % self.count;
        let stream = (!self.streams.is_empty()).then(|| n as usize % self.streams.len());
        let len = match (self.length, stream) {
            (None, Some(s)) => self.streams[s].len() as u64,
            (base, _) => {
                let (lo, hi) = length_bounds(base.unwrap_or(20), self.variation);
                lo + self.rng.lock().expect("rng lock").below(hi - lo + 1)
            }
        };
        (id, len.max(1), stream)
    }

    /// The data entry of step `step` of a sequence on `stream` (streams
    /// shorter than the sequence are looped).
    fn data(&self, stream: Option<usize>, step: u64) -> Option<usize> {
        let s = &self.streams[stream?];
        (!s.is_empty()).then(|| s[step as usize % s.len()])
    }
}

/// The shortest and longest sequence for a base length and a variation in
/// percent (at least 1).
pub fn length_bounds(base: u64, variation: f64) -> (u64, u64) {
    let v = variation.max(0.0) / 100.0;
    let lo = ((base as f64 * (1.0 - v)).round().max(1.0)) as u64;
    let hi = ((base as f64 * (1.0 + v)).round() as u64).max(lo);
    (lo, hi)
}

/// One request of a sequence.
#[derive(Debug, Clone, Copy)]
struct Step {
    id: u64,
    start: bool,
    end: bool,
    /// Index into `Shared::data` (`--input-data FILE`).
    data: Option<usize>,
}

/// A live sequence: its id, the next step, when its first step was due.
#[derive(Debug, Clone, Copy)]
struct Live {
    id: u64,
    len: u64,
    stream: Option<usize>,
    next: u64,
    first_at: Option<Instant>,
    measured: bool,
    failed: bool,
}

impl Live {
    fn new(ids: &SequenceIds) -> Self {
        let (id, len, stream) = ids.take();
        Live {
            id,
            len,
            stream,
            next: 0,
            first_at: None,
            measured: true,
            failed: false,
        }
    }

    fn step(&self, ids: &SequenceIds) -> Step {
        Step {
            id: self.id,
            start: self.next == 0,
            end: self.next + 1 >= self.len,
            data: ids.data(self.stream, self.next),
        }
    }

    /// The extra last step of a sequence cut off by the end of a level.
    fn cut_off(&self, ids: &SequenceIds) -> Step {
        Step {
            id: self.id,
            start: false,
            end: true,
            data: ids.data(self.stream, self.next),
        }
    }
}

/// Each worker runs one sequence after the other, one step in flight; at
/// the end of the window a sequence in the middle gets a last request
/// with the END flag (not measured).
async fn closed_loop_sequences(
    opts: &PerfOptions,
    n: u64,
    targets: &[Arc<Shared>],
    ids: &Arc<SequenceIds>,
) {
    let claimed = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut workers = Vec::new();
    let _ = opts;
    for i in 0..n {
        // a worker's sequences stay on its server (the state lives there)
        let shared = targets[i as usize % targets.len()].clone();
        let (claimed, stop, ids) = (claimed.clone(), stop.clone(), ids.clone());
        workers.push(tokio::spawn(async move {
            let mut live = Live::new(&ids);
            loop {
                let sent = Instant::now();
                let (measured, done) = if stop.load(Ordering::Relaxed) {
                    (false, true)
                } else {
                    shared.meter.claim(sent, &claimed)
                };
                if done {
                    stop.store(true, Ordering::Relaxed);
                    if live.next > 0 {
                        let _ = shared.infer_step(live.cut_off(&ids)).await;
                    }
                    break;
                }
                let step = live.step(&ids);
                if step.start {
                    live.first_at = Some(sent);
                    live.measured = measured;
                }
                let ex = shared.infer_step(step).await;
                let end = Instant::now();
                live.failed |= ex.result.is_err();
                if measured {
                    shared.record(sent, sent, &ex, false, end);
                }
                live.next += 1;
                if step.end {
                    if live.measured && !live.failed {
                        if let Some(first) = live.first_at {
                            shared.record_sequence(end - first, end);
                        }
                    }
                    live = Live::new(&ids);
                }
                if matches!(ex.result, Err(ErrorKind::Connect)) {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
        }));
    }
    for w in workers {
        let _ = w.await;
    }
}

/// Sends on the schedule, each send going to a live sequence that has no
/// step in flight (serial per sequence); when every one of the
/// `--num-of-sequences` has a step in flight the send waits and is late.
async fn open_loop_sequences(
    opts: &PerfOptions,
    rate: f64,
    targets: &[Arc<Shared>],
    start: Instant,
    index: u64,
    ids: &Arc<SequenceIds>,
) {
    let slots = opts.num_sequences.max(1);
    // None while a step of that sequence is in flight
    let live: Arc<Mutex<Vec<Option<Live>>>> = Arc::new(Mutex::new(
        (0..slots).map(|_| Some(Live::new(ids))).collect(),
    ));
    let idle = Arc::new(tokio::sync::Semaphore::new(slots));
    let schedule = schedule_of(opts, rate, index);
    let handle = tokio::runtime::Handle::current();
    let targets = targets.to_vec();
    let p_targets = targets.clone();
    let (p_live, p_idle, p_ids) = (live.clone(), idle.clone(), ids.clone());
    let pacer = tokio::task::spawn_blocking(move || {
        let claimed = AtomicU64::new(0);
        let mut turn = 0usize;
        let meter = p_targets[0].meter.clone();
        for at in schedule {
            let intended = start + Duration::from_secs_f64(at);
            let (measured, done) = meter.claim(intended, &claimed);
            if done {
                break;
            }
            wait_until(intended);
            let permit = match p_idle.clone().try_acquire_owned() {
                Ok(p) => p,
                Err(_) => handle
                    .block_on(p_idle.clone().acquire_owned())
                    .expect("semaphore open"),
            };
            // a permit means some sequence is idle
            let (slot, mut seq) = {
                let mut l = p_live.lock().expect("sequences lock");
                let i = (0..slots)
                    .map(|k| (turn + k) % slots)
                    .find(|&k| l[k].is_some())
                    .expect("an idle sequence per free permit");
                turn = i + 1;
                (i, l[i].take().expect("idle"))
            };
            let late = Instant::now() > intended + LATE;
            let step = seq.step(&p_ids);
            if step.start {
                seq.first_at = Some(intended);
                seq.measured = measured;
            }
            // a slot's sequences stay on one server
            let shared = p_targets[slot % p_targets.len()].clone();
            let (live, ids) = (p_live.clone(), p_ids.clone());
            handle.spawn(async move {
                let sent = Instant::now();
                let ex = shared.infer_step(step).await;
                let end = Instant::now();
                if measured {
                    shared.record(intended, sent, &ex, late, end);
                }
                seq.failed |= ex.result.is_err();
                seq.next += 1;
                if step.end {
                    if seq.measured && !seq.failed {
                        if let Some(first) = seq.first_at {
                            shared.record_sequence(end - first, end);
                        }
                    }
                    seq = Live::new(&ids);
                }
                live.lock().expect("sequences lock")[slot] = Some(seq);
                drop(permit);
            });
        }
    });
    let _ = pacer.await;
    let _ = idle.acquire_many(slots as u32).await;
    // end the sequences cut off by the end of the window
    let open: Vec<(usize, Live)> = live
        .lock()
        .expect("sequences lock")
        .iter()
        .enumerate()
        .filter_map(|(i, s)| s.filter(|s| s.next > 0).map(|s| (i, s)))
        .collect();
    let mut ends = Vec::new();
    for (slot, s) in open {
        let shared = targets[slot % targets.len()].clone();
        let step = s.cut_off(ids);
        ends.push(tokio::spawn(async move {
            let _ = shared.infer_step(step).await;
        }));
    }
    for e in ends {
        let _ = e.await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_lengths() {
        assert_eq!(length_bounds(20, 20.0), (16, 24));
        assert_eq!(length_bounds(5, 0.0), (5, 5));
        assert_eq!(length_bounds(1, 50.0), (1, 2));
        let ids = SequenceIds::new((10, 3), Some(10), 50.0, 1, Vec::new());
        let taken: Vec<(u64, u64, Option<usize>)> = (0..200).map(|_| ids.take()).collect();
        assert!(taken.iter().all(|t| (5..=15).contains(&t.1)));
        assert!(taken.iter().any(|t| t.1 != taken[0].1));
        assert_eq!(taken[3].0, 10);
        let ids = SequenceIds::new((1, 100), None, 20.0, 1, vec![vec![0, 1], vec![2, 3, 4]]);
        assert_eq!(ids.take(), (1, 2, Some(0)));
        assert_eq!(ids.take(), (2, 3, Some(1)));
        assert_eq!(ids.data(Some(1), 4), Some(3));
    }

    fn window(ok: u64, latency_us: u64) -> Recorder {
        let mut r = Recorder::new(1);
        for _ in 0..ok {
            r.hist.saturating_record(latency_us);
        }
        r.ok = ok;
        r
    }

    #[test]
    fn stability() {
        let w = vec![
            window(50, 900),
            window(100, 1000),
            window(104, 1040),
            window(98, 990),
        ];
        assert!(!stable(&w, 2, 10.0));
        assert!(!stable(&w, 3, 10.0), "50 vs 104");
        assert!(stable(&w, 4, 10.0));
        assert!(!stable(&w, 4, 3.0));
        let z = vec![window(0, 1), window(0, 1), window(0, 1)];
        assert!(!stable(&z, 3, 10.0));
    }
}
