//! Running the load: setup (metadata, config, statistics), then per level
//! a closed loop (N workers, each sends when its previous answer is in) or
//! an open loop (sends on a schedule, latency from the scheduled time),
//! measured into an HDR histogram (constant memory).

use super::client::{check_infer_answer, Client, ClientConfig, Endpoint, ErrorKind};
use super::inputs::{self, Body, BodyOptions, InputData};
use super::model::ModelInfo;
use super::report::{Latency, LevelResult, Report};
use super::schedule::{Distribution, Level, Schedule};
use super::stats::{self, Snapshot};
use bytes::Bytes;
use hdrhistogram::Histogram;
use hyper::Method;
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
}

/// Everything a run needs (already checked for syntax by the caller).
#[derive(Debug, Clone)]
pub struct PerfOptions {
    pub model: String,
    pub version: Option<String>,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub levels: Vec<Level>,
    pub distribution: Distribution,
    pub seed: u64,
    pub max_concurrency: usize,
    pub window: Window,
    pub warmup: Duration,
    pub timeout: Duration,
    pub input_data: InputData,
    pub shapes: Vec<String>,
    pub batch: u64,
    pub binary_inputs: bool,
    pub binary_outputs: bool,
    /// No config endpoint: the first metadata dim is a batch dim.
    pub batched: bool,
    /// Sequence models: requests per sequence.
    pub sequence_length: u64,
    /// Sequence ids: the first and how many (ids wrap around).
    pub sequence_ids: (u64, u64),
    /// Open loop, sequence models: sequences live at once.
    pub num_sequences: usize,
}

/// Why a run could not start (exit status 2).
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Unreachable(String),
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
    hist: Histogram<u64>,
    /// First step sent to last step answered, per complete sequence.
    seq_hist: Histogram<u64>,
    errors: BTreeMap<String, u64>,
    ok: u64,
    late: u64,
    last_done: Option<Instant>,
}

impl Recorder {
    fn new() -> Self {
        Recorder {
            // 1 µs .. 1 hour, 3 significant digits
            hist: Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("histogram bounds"),
            seq_hist: Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("histogram bounds"),
            errors: BTreeMap::new(),
            ok: 0,
            late: 0,
            last_done: None,
        }
    }
}

struct Shared {
    client: Client,
    path: String,
    template: Body,
    body: Bytes,
    content_type: &'static str,
    header_len: Option<usize>,
    rec: Mutex<Recorder>,
    progress: Arc<Progress>,
}

impl Shared {
    async fn infer(&self) -> Result<(), ErrorKind> {
        let a = self
            .client
            .send(
                Method::POST,
                &self.path,
                self.body.clone(),
                Some(self.content_type),
                self.header_len,
            )
            .await?;
        check_infer_answer(&a)
    }

    /// One step of a sequence (request parameters added to the header).
    async fn infer_step(&self, step: Step) -> Result<(), ErrorKind> {
        let mut p = serde_json::Map::new();
        p.insert("sequence_id".into(), step.id.into());
        p.insert("sequence_start".into(), step.start.into());
        p.insert("sequence_end".into(), step.end.into());
        let (body, header_len) = self.template.with_parameters(&p);
        let a = self
            .client
            .send(
                Method::POST,
                &self.path,
                Bytes::from(body),
                Some(self.content_type),
                header_len,
            )
            .await?;
        check_infer_answer(&a)
    }

    fn record_sequence(&self, latency: Duration) {
        let mut rec = self.rec.lock().expect("recorder lock");
        let us = (latency.as_micros() as u64).max(1);
        rec.seq_hist.saturating_record(us);
    }

    fn record(&self, latency: Duration, r: &Result<(), ErrorKind>, late: bool, done: Instant) {
        let mut rec = self.rec.lock().expect("recorder lock");
        match r {
            Ok(()) => {
                let us = (latency.as_micros() as u64).max(1);
                rec.hist.saturating_record(us);
                rec.ok += 1;
            }
            Err(k) => {
                *rec.errors.entry(k.key()).or_insert(0) += 1;
                self.progress.errors.fetch_add(1, Ordering::Relaxed);
            }
        }
        if late {
            rec.late += 1;
        }
        if rec.last_done.is_none_or(|d| d < done) {
            rec.last_done = Some(done);
        }
        self.progress.done.fetch_add(1, Ordering::Relaxed);
    }
}

fn model_path(model: &str, version: &Option<String>) -> String {
    match version {
        Some(v) => format!("/v2/models/{model}/versions/{v}"),
        None => format!("/v2/models/{model}"),
    }
}

/// Runs every level. Blocking: builds its own runtime.
pub fn run(opts: &PerfOptions, progress: Arc<Progress>) -> Result<Report, StartError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| StartError::Unreachable(format!("cannot start the async runtime: {e}")))?;
    rt.block_on(run_async(opts, progress))
}

async fn run_async(opts: &PerfOptions, progress: Arc<Progress>) -> Result<Report, StartError> {
    let endpoint = Endpoint::parse(&opts.url).map_err(StartError::Usage)?;
    let client = Client::new(ClientConfig {
        endpoint,
        headers: opts.headers.clone(),
        timeout: opts.timeout,
    });
    let base = model_path(&opts.model, &opts.version);
    let meta = match client
        .get_json(&base)
        .await
        .map_err(StartError::Unreachable)?
    {
        Some(m) => m,
        None => {
            let (status, text) = client
                .get_status(&base)
                .await
                .map_err(StartError::Unreachable)?;
            return Err(StartError::Unreachable(format!(
                "model '{}' is not available at {}: HTTP {status}: {text}",
                opts.model,
                client.config().endpoint.authority
            )));
        }
    };
    let config = client
        .get_json(&format!("{base}/config"))
        .await
        .map_err(StartError::Unreachable)?;
    let mut info = ModelInfo::new(&meta, config.as_ref(), opts.batched)
        .map_err(|e| StartError::Unreachable(format!("model metadata of '{}': {e}", opts.model)))?;
    info.apply_shapes(&opts.shapes).map_err(StartError::Usage)?;
    info.check_batch(opts.batch).map_err(StartError::Usage)?;
    if info.decoupled {
        return Err(StartError::Usage(format!(
            "model '{}' is decoupled; it needs gRPC streaming, which perf does not support yet",
            opts.model
        )));
    }
    if info.sequence && opts.batch != 1 {
        return Err(StartError::Usage(format!(
            "model '{}' has a sequence batcher: requests carry one sequence step each, use -b 1",
            opts.model
        )));
    }
    let body: Body = inputs::build(
        &info,
        BodyOptions {
            batch: opts.batch,
            data: opts.input_data,
            seed: opts.seed,
            binary_inputs: opts.binary_inputs,
            binary_outputs: opts.binary_outputs,
        },
    )
    .map_err(StartError::Usage)?;
    let stats_path = format!("{base}/stats");
    let has_stats = matches!(client.get_json(&stats_path).await, Ok(Some(ref d)) if Snapshot::parse(d, &opts.model).is_some());

    let ids = Arc::new(SequenceIds::new(opts.sequence_ids));
    let mut levels = Vec::new();
    for (i, level) in opts.levels.iter().enumerate() {
        progress.level.store(i as u64, Ordering::Relaxed);
        progress.done.store(0, Ordering::Relaxed);
        progress.errors.store(0, Ordering::Relaxed);
        let shared = Arc::new(Shared {
            client: client.clone(),
            path: format!("{base}/infer"),
            body: Bytes::from(body.bytes.clone()),
            template: body.clone(),
            content_type: body.content_type(),
            header_len: body.header_len,
            rec: Mutex::new(Recorder::new()),
            progress: progress.clone(),
        });
        let result = run_level(
            opts,
            *level,
            shared,
            has_stats.then_some(stats_path.as_str()),
            i as u64,
            info.sequence.then_some(&ids),
        )
        .await;
        levels.push(result);
    }
    Ok(Report {
        model: opts.model.clone(),
        protocol: "http".into(),
        url: client.config().endpoint.authority.clone(),
        batch_size: opts.batch,
        input_tensor_format: if opts.binary_inputs { "binary" } else { "json" }.into(),
        output_tensor_format: if opts.binary_outputs {
            "binary"
        } else {
            "json"
        }
        .into(),
        mode: match opts.levels.first() {
            Some(Level::Rate(_)) => "request_rate",
            _ => "concurrency",
        }
        .into(),
        levels,
    })
}

async fn snapshot(client: &Client, path: &str, model: &str) -> Option<Snapshot> {
    match client.get_json(path).await {
        Ok(Some(d)) => Snapshot::parse(&d, model),
        _ => None,
    }
}

async fn run_level(
    opts: &PerfOptions,
    level: Level,
    shared: Arc<Shared>,
    stats_path: Option<&str>,
    index: u64,
    sequences: Option<&Arc<SequenceIds>>,
) -> LevelResult {
    let start = Instant::now();
    let t0 = start + opts.warmup;
    // the "before" snapshot is taken when the measurement starts
    let before = stats_path.map(|p| {
        let client = shared.client.clone();
        let p = p.to_string();
        let model = opts.model.clone();
        tokio::spawn(async move {
            tokio::time::sleep_until(t0.into()).await;
            snapshot(&client, &p, &model).await
        })
    });
    match (level, sequences) {
        (Level::Concurrency(n), None) => closed_loop(opts, n, &shared, start, t0).await,
        (Level::Rate(r), None) => open_loop(opts, r, &shared, start, t0, index).await,
        (Level::Concurrency(n), Some(ids)) => {
            closed_loop_sequences(opts, n, &shared, t0, ids).await
        }
        (Level::Rate(r), Some(ids)) => {
            open_loop_sequences(opts, r, &shared, start, t0, index, ids).await
        }
    }
    let before = match before {
        Some(h) => h.await.ok().flatten(),
        None => None,
    };
    let server = match (before, stats_path) {
        (Some(b), Some(p)) => snapshot(&shared.client, p, &opts.model)
            .await
            .and_then(|a| stats::diff(&b, &a)),
        _ => None,
    };
    let rec = shared.rec.lock().expect("recorder lock");
    let errors: u64 = rec.errors.values().sum();
    let requests = rec.ok + errors;
    let duration = match opts.window {
        Window::Time(d) => d,
        Window::Count(_) => rec
            .last_done
            .map(|d| d.saturating_duration_since(t0))
            .unwrap_or_default(),
    };
    let secs = duration.as_secs_f64().max(1e-9);
    let h = &rec.hist;
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
        latency_us: (rec.ok > 0).then(|| Latency {
            p50: h.value_at_quantile(0.50),
            p90: h.value_at_quantile(0.90),
            p95: h.value_at_quantile(0.95),
            p99: h.value_at_quantile(0.99),
            max: h.max(),
            mean: h.mean(),
        }),
        sequence_latency_us: (sequences.is_some() && !rec.seq_hist.is_empty()).then(|| {
            let h = &rec.seq_hist;
            Latency {
                p50: h.value_at_quantile(0.50),
                p90: h.value_at_quantile(0.90),
                p95: h.value_at_quantile(0.95),
                p99: h.value_at_quantile(0.99),
                max: h.max(),
                mean: h.mean(),
            }
        }),
        late_sends: rec.late,
        server,
    }
}

/// Whether a request sent at `at` is measured, and whether to stop sending
/// (for `Window::Count`, `claimed` hands out the N measured slots).
fn claim(window: Window, t0: Instant, at: Instant, claimed: &AtomicU64) -> (bool, bool) {
    if at < t0 {
        return (false, false);
    }
    match window {
        Window::Time(d) => {
            if at >= t0 + d {
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
    }
}

async fn closed_loop(
    opts: &PerfOptions,
    n: u64,
    shared: &Arc<Shared>,
    _start: Instant,
    t0: Instant,
) {
    let claimed = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut workers = Vec::new();
    for _ in 0..n {
        let shared = shared.clone();
        let claimed = claimed.clone();
        let stop = stop.clone();
        let window = opts.window;
        workers.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let sent = Instant::now();
                let (measured, done) = claim(window, t0, sent, &claimed);
                if done {
                    stop.store(true, Ordering::Relaxed);
                    break;
                }
                let r = shared.infer().await;
                let end = Instant::now();
                if measured {
                    shared.record(end - sent, &r, false, end);
                }
                if matches!(r, Err(ErrorKind::Connect)) {
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

async fn open_loop(
    opts: &PerfOptions,
    rate: f64,
    shared: &Arc<Shared>,
    start: Instant,
    t0: Instant,
    index: u64,
) {
    let permits = opts.max_concurrency.max(1);
    let sem = Arc::new(tokio::sync::Semaphore::new(permits));
    let schedule = Schedule::new(rate, opts.distribution, opts.seed.wrapping_add(index));
    let handle = tokio::runtime::Handle::current();
    let window = opts.window;
    let pacer_sem = sem.clone();
    let shared = shared.clone();
    // The pacer is a thread of its own: the runtime's timer rounds sleeps
    // up to whole milliseconds, which would make every send late.
    let pacer = tokio::task::spawn_blocking(move || {
        let claimed = AtomicU64::new(0);
        for at in schedule {
            let intended = start + Duration::from_secs_f64(at);
            let (measured, done) = claim(window, t0, intended, &claimed);
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
            let shared = shared.clone();
            handle.spawn(async move {
                let r = shared.infer().await;
                let end = Instant::now();
                if measured {
                    // from the scheduled send time: waiting for a free slot
                    // or behind a stalled server counts
                    shared.record(end - intended, &r, late, end);
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

/// Hands out sequence ids: `first + (n mod count)`.
pub struct SequenceIds {
    first: u64,
    count: u64,
    next: AtomicU64,
}

impl SequenceIds {
    pub fn new((first, count): (u64, u64)) -> Self {
        SequenceIds {
            first,
            count: count.max(1),
            next: AtomicU64::new(0),
        }
    }

    fn take(&self) -> u64 {
        self.first + self.next.fetch_add(1, Ordering::Relaxed) % self.count
    }
}

/// One request of a sequence.
#[derive(Debug, Clone, Copy)]
struct Step {
    id: u64,
    start: bool,
    end: bool,
}

/// A live sequence: its id, the next step, when its first step was due.
#[derive(Debug, Clone, Copy)]
struct Live {
    id: u64,
    next: u64,
    first_at: Option<Instant>,
    measured: bool,
    failed: bool,
}

impl Live {
    fn new(ids: &SequenceIds) -> Self {
        Live {
            id: ids.take(),
            next: 0,
            first_at: None,
            measured: true,
            failed: false,
        }
    }

    fn step(&self, len: u64) -> Step {
        Step {
            id: self.id,
            start: self.next == 0,
            end: self.next + 1 >= len,
        }
    }
}

/// Each worker runs one sequence after the other, one step in flight; at
/// the end of the window a sequence in the middle gets a last request
/// with the END flag (not measured).
async fn closed_loop_sequences(
    opts: &PerfOptions,
    n: u64,
    shared: &Arc<Shared>,
    t0: Instant,
    ids: &Arc<SequenceIds>,
) {
    let claimed = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let len = opts.sequence_length.max(1);
    let mut workers = Vec::new();
    for _ in 0..n {
        let (shared, claimed, stop, ids) =
            (shared.clone(), claimed.clone(), stop.clone(), ids.clone());
        let window = opts.window;
        workers.push(tokio::spawn(async move {
            let mut live = Live::new(&ids);
            loop {
                let sent = Instant::now();
                let (measured, done) = if stop.load(Ordering::Relaxed) {
                    (false, true)
                } else {
                    claim(window, t0, sent, &claimed)
                };
                if done {
                    stop.store(true, Ordering::Relaxed);
                    if live.next > 0 {
                        let step = Step {
                            id: live.id,
                            start: false,
                            end: true,
                        };
                        let _ = shared.infer_step(step).await;
                    }
                    break;
                }
                let step = live.step(len);
                if step.start {
                    live.first_at = Some(sent);
                    live.measured = measured;
                }
                let r = shared.infer_step(step).await;
                let end = Instant::now();
                live.failed |= r.is_err();
                if measured {
                    shared.record(end - sent, &r, false, end);
                }
                live.next += 1;
                if step.end {
                    if live.measured && !live.failed {
                        if let Some(first) = live.first_at {
                            shared.record_sequence(end - first);
                        }
                    }
                    live = Live::new(&ids);
                }
                if matches!(r, Err(ErrorKind::Connect)) {
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
    shared: &Arc<Shared>,
    start: Instant,
    t0: Instant,
    index: u64,
    ids: &Arc<SequenceIds>,
) {
    let slots = opts.num_sequences.max(1);
    let len = opts.sequence_length.max(1);
    // None while a step of that sequence is in flight
    let live: Arc<Mutex<Vec<Option<Live>>>> = Arc::new(Mutex::new(
        (0..slots).map(|_| Some(Live::new(ids))).collect(),
    ));
    let idle = Arc::new(tokio::sync::Semaphore::new(slots));
    let schedule = Schedule::new(rate, opts.distribution, opts.seed.wrapping_add(index));
    let handle = tokio::runtime::Handle::current();
    let window = opts.window;
    let (p_live, p_shared, p_idle, p_ids) =
        (live.clone(), shared.clone(), idle.clone(), ids.clone());
    let pacer = tokio::task::spawn_blocking(move || {
        let claimed = AtomicU64::new(0);
        let mut turn = 0usize;
        for at in schedule {
            let intended = start + Duration::from_secs_f64(at);
            let (measured, done) = claim(window, t0, intended, &claimed);
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
            let step = seq.step(len);
            if step.start {
                seq.first_at = Some(intended);
                seq.measured = measured;
            }
            let (shared, live, ids) = (p_shared.clone(), p_live.clone(), p_ids.clone());
            handle.spawn(async move {
                let r = shared.infer_step(step).await;
                let end = Instant::now();
                if measured {
                    shared.record(end - intended, &r, late, end);
                }
                seq.failed |= r.is_err();
                seq.next += 1;
                if step.end {
                    if seq.measured && !seq.failed {
                        if let Some(first) = seq.first_at {
                            shared.record_sequence(end - first);
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
    let open: Vec<Live> = live
        .lock()
        .expect("sequences lock")
        .iter()
        .flatten()
        .filter(|s| s.next > 0)
        .copied()
        .collect();
    let mut ends = Vec::new();
    for s in open {
        let shared = shared.clone();
        ends.push(tokio::spawn(async move {
            let step = Step {
                id: s.id,
                start: false,
                end: true,
            };
            let _ = shared.infer_step(step).await;
        }));
    }
    for e in ends {
        let _ = e.await;
    }
}
