//! `tritonctl perf` against a tiny KServe v2 responder on the loopback
//! interface (a thread per connection, std only). The responder checks
//! every inference request it gets (JSON or binary tensors, shapes and
//! sizes) and answers 400 when one is wrong, so a run without errors shows
//! the wire format is right; it can also stall once, answer 500, send a
//! malformed body or close the connection, to check how perf counts them.

use crate::common::{crate_root, send_signal, tritonctl};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the responder does.
#[derive(Clone, Default)]
pub(crate) struct Behaviour {
    /// Answer the config endpoint (as Triton does); otherwise 400, as a
    /// plain KServe v2 server without the extension.
    config: bool,
    /// Answer the statistics endpoint with counters of the requests served
    /// (2 µs queue, 5 µs compute per request).
    stats: bool,
    /// Metadata dims of input X (with the batch dim when batching).
    x_shape: Vec<i64>,
    max_batch_size: i64,
    /// The infer request with this number (from 1) holds the one model
    /// lock for this long: every other request waits behind it.
    stall: Option<(u64, Duration)>,
    /// By request number modulo 10: these fail with 500 ...
    fail_500: Vec<u64>,
    /// ... these get a malformed 200 ...
    malformed: Vec<u64>,
    /// ... and on these the connection is closed without an answer.
    close: Vec<u64>,
    /// A sequence model: the config has a sequence batcher, and every
    /// request must carry a sequence id and flags that Triton would accept.
    sequence: bool,
    /// Every infer request takes this long (holding the model lock) ...
    delay: Option<Duration>,
    /// ... plus this much more for each request before it.
    slowdown: Option<Duration>,
    /// Every answer says `Connection: close`, and the connection is closed
    /// after it.
    close_after_answer: bool,
    /// Answer `GET /v2` (server metadata) with these extensions.
    extensions: Option<Vec<&'static str>>,
    /// Wait this long after a request's head before reading its body.
    read_pause: Option<Duration>,
    /// Wait this long between an answer's head and its body.
    body_pause: Option<Duration>,
    /// The config says `model_transaction_policy { decoupled: true }`.
    decoupled: bool,
    /// The server dies when this infer request (from 1) comes: it
    /// answers nothing more, closes every connection and stops listening.
    die_at: Option<u64>,
    /// Model "m" is an ensemble of these composing models (see
    /// [`Pipeline`]); requests are checked as a sequence model's when a
    /// step is stateful.
    ensemble: Option<Pipeline>,
    /// Input X is BYTES (strings; `TYPE_STRING` in the config).
    strings: bool,
    /// The model answers under this name too (as "m" otherwise).
    alias: Option<&'static str>,
    /// Serve Triton's Prometheus page at `/metrics`: with GPU series that
    /// change with every read (true, see [`metrics_page`]), or without
    /// any, as Triton on a machine without GPUs (false).
    metrics_gpus: Option<bool>,
    /// `tune`'s live steps (see [`tune_like`]): the statistics carry
    /// `batch_stats` ...
    batch_stats: bool,
    /// ... counting every execution as batch size 1 (a server that splits
    /// requests) ...
    batch_stats_as_one: bool,
    /// ... and the repository extension loads and unloads model "m"
    /// (`/ready` answers 400 after an unload; a loaded `config` parameter
    /// is what `/config` answers afterwards).
    repository: bool,
}

/// The ensemble "m" of the responder, with composing models "pre"
/// (version -1; its statistics list version 3), "seq" (a sequence
/// batcher), "post" (pinned to version 1) and the ensemble "inner".
#[derive(Clone, Copy, PartialEq)]
enum Pipeline {
    /// m: pre -> post.
    Stateless,
    /// m: pre -> seq.
    Stateful,
    /// m: pre -> inner, inner: seq -> post.
    Nested,
    /// m: pre -> ghost, a model without a config.
    Missing,
    /// m: e1, e1: e2, ... without end (a hostile server).
    Chain,
}

impl Pipeline {
    /// The steps of an ensemble of this pipeline, as (model, version).
    fn steps(self, ensemble: &str) -> Option<Vec<(&'static str, i64)>> {
        Some(match (self, ensemble) {
            (Pipeline::Stateless, "m") => vec![("pre", -1), ("post", 1)],
            (Pipeline::Stateful, "m") => vec![("pre", -1), ("seq", -1)],
            (Pipeline::Nested, "m") => vec![("pre", -1), ("inner", -1)],
            (Pipeline::Nested, "inner") => vec![("seq", -1), ("post", 1)],
            (Pipeline::Missing, "m") => vec![("pre", -1), ("ghost", -1)],
            (Pipeline::Chain, "m") => vec![("e1", -1)],
            (Pipeline::Chain, e) => {
                let n: u64 = e.strip_prefix('e')?.parse().ok()?;
                let next: &'static str = format!("e{}", n + 1).leak();
                vec![(next, -1)]
            }
            _ => return None,
        })
    }

    fn stateful(self) -> bool {
        matches!(self, Pipeline::Stateful | Pipeline::Nested)
    }
}

/// Per request, in ns: queue, compute input, infer and output of a
/// composing model of the responder's ensembles. An ensemble's own
/// statistics have its steps' compute summed and no queue, as Triton 2.51
/// reports them (docs/spec/v2-protocol.md, section 8).
fn step_cost(model: &str) -> Option<[u64; 4]> {
    match model {
        "pre" => Some([1_000, 100, 3_000, 200]),
        "seq" => Some([4_000, 300, 7_000, 400]),
        "post" => Some([500, 50, 1_500, 60]),
        _ => None,
    }
}

/// The composing models of the ensemble "m" of `p` that have a config
/// and do work.
fn pipeline_leaves(p: Pipeline) -> Vec<&'static str> {
    match p {
        Pipeline::Stateless => vec!["pre", "post"],
        Pipeline::Stateful => vec!["pre", "seq"],
        Pipeline::Nested => vec!["pre", "seq", "post"],
        Pipeline::Missing => vec!["pre"],
        Pipeline::Chain => vec![],
    }
}

/// The config of a composing model or nested ensemble of `p`.
fn step_config(p: Pipeline, model: &str) -> Option<Value> {
    let tensors = json!({"max_batch_size": 8,
        "input": [{"name": "X", "data_type": "TYPE_FP32", "dims": ["4"]}],
        "output": [{"name": "Y", "data_type": "TYPE_FP32", "dims": ["4"]}]});
    let mut cfg = tensors;
    cfg["name"] = json!(model);
    if let Some(steps) = p.steps(model) {
        cfg["platform"] = json!("ensemble");
        cfg["ensemble_scheduling"] = json!({"step": steps.iter().map(|(m, v)| json!({
            "model_name": m, "model_version": v.to_string(),
            "input_map": {"X": "X"}, "output_map": {"Y": "Y"}})).collect::<Vec<_>>()});
        return Some(cfg);
    }
    cfg["backend"] = json!("python");
    match model {
        "seq" => cfg["sequence_batching"] = json!({"max_sequence_idle_microseconds": "1000000"}),
        "pre" | "post" => cfg["dynamic_batching"] = json!({}),
        _ => return None,
    }
    Some(cfg)
}

#[derive(Default)]
struct Counters {
    infer: AtomicU64,
    binary: AtomicU64,
    json: AtomicU64,
    bad: Mutex<Vec<String>>,
    /// Sequence id (a number or a string, as sent) -> (live, a step in
    /// flight, steps so far).
    sequences: Mutex<BTreeMap<String, (bool, bool, u64)>>,
    /// Ids sent as JSON strings.
    string_ids: AtomicU64,
    /// The number of steps of every ended sequence, in order.
    lengths: Mutex<Vec<u64>>,
    /// When each infer request arrived, in order.
    arrivals: Mutex<Vec<Instant>>,
    /// The values of input X of each infer request, in order.
    x_values: Mutex<Vec<Vec<f32>>>,
    /// The strings of a BYTES input X of each infer request, in order.
    x_strings: Mutex<Vec<Vec<String>>>,
    started: AtomicU64,
    ended: AtomicU64,
    /// Requests with the header `X-Test: yes`.
    with_header: AtomicU64,
    /// Set when the server died (see `Behaviour::die_at`).
    dead: AtomicBool,
    /// Infer requests that carried a `sequence_id` parameter.
    with_sequence_id: AtomicU64,
    /// The config and statistics paths asked for, in order.
    discovery: Mutex<Vec<String>>,
    /// Reads of `/metrics` answered.
    scrapes: AtomicU64,
    /// System shared-memory regions registered: name -> (key, byte size).
    regions: Mutex<BTreeMap<String, (String, u64)>>,
    /// Every key ever registered, and the count of (un)registrations.
    shm_keys: Mutex<Vec<String>>,
    registered: AtomicU64,
    unregistered: AtomicU64,
    /// Infer requests whose input came from a shared-memory region, and
    /// outputs written to one.
    shm_inputs: AtomicU64,
    shm_outputs: AtomicU64,
    /// The bodies of CUDA shared-memory registrations, and the regions
    /// unregistered, in order.
    cuda_registrations: Mutex<Vec<Value>>,
    cuda_unregistered: Mutex<Vec<String>>,
    /// Executions by batch size (the first dim of input X).
    batches: Mutex<BTreeMap<u64, u64>>,
    /// The bodies of repository load requests, in order.
    loads: Mutex<Vec<String>>,
    /// The config of the last load's `config` parameter.
    loaded_config: Mutex<Option<Value>>,
    /// Model "m" was unloaded (and not loaded since).
    unloaded: AtomicBool,
}

/// The memory object of a registered region.
fn region_file(c: &Counters, name: &str) -> Result<(crate::common::ShmRegion, u64), String> {
    crate::common::shm_region_file(&c.regions, name)
}

/// Triton's CUDA shared-memory extension: register (the device memory
/// opened through its IPC handle, as Triton does) and unregister.
fn cuda_shm_endpoint(
    method: &str,
    rest: &str,
    body: &[u8],
    c: &Counters,
) -> Option<(u16, Vec<u8>)> {
    let (name, action) = rest.strip_prefix("/region/")?.rsplit_once('/')?;
    let err = |m: String| Some((400, json!({ "error": m }).to_string().into_bytes()));
    match (method, action) {
        ("POST", "register") => {
            let v: Value = serde_json::from_slice(body).unwrap_or_default();
            c.cuda_registrations.lock().unwrap().push(v.clone());
            let (Some(b64), Some(_), Some(size)) = (
                v["raw_handle"]["b64"].as_str(),
                v["device_id"].as_i64(),
                v["byte_size"].as_u64(),
            ) else {
                return err(format!("bad register request {v}"));
            };
            match crate::common::open_cuda_handle(b64) {
                Ok(m) if m.lock().unwrap().len() as u64 >= size => {}
                Ok(_) => return err(format!("region '{name}' is larger than its memory")),
                Err(e) => return err(e),
            }
            let mut regions = c.regions.lock().unwrap();
            if regions.contains_key(name) {
                return err(format!("shared memory region '{name}' already in manager"));
            }
            let key = format!("{}{b64}", crate::common::CUDA_KEY);
            regions.insert(name.to_string(), (key, size));
            c.registered.fetch_add(1, Ordering::SeqCst);
            Some((200, Vec::new()))
        }
        ("POST", "unregister") => {
            // the memory must still be there: freed only after this
            if let Ok((crate::common::ShmRegion::File(_), _)) | Err(_) = region_file(c, name) {
                c.bad.lock().unwrap().push(format!(
                    "CUDA region '{name}' unregistered after its memory was freed, or unknown"
                ));
            }
            c.regions.lock().unwrap().remove(name);
            c.cuda_unregistered.lock().unwrap().push(name.to_string());
            c.unregistered.fetch_add(1, Ordering::SeqCst);
            Some((200, Vec::new()))
        }
        _ => err(format!("unknown shared-memory request {method} {rest}")),
    }
}

/// Triton's system shared-memory extension: register, unregister, status.
fn shm_endpoint(method: &str, path: &str, body: &[u8], c: &Counters) -> Option<(u16, Vec<u8>)> {
    if let Some(rest) = path.strip_prefix("/v2/cudasharedmemory") {
        return cuda_shm_endpoint(method, rest, body, c);
    }
    let rest = path.strip_prefix("/v2/systemsharedmemory")?;
    if method == "GET" && rest == "/status" {
        let list: Vec<Value> = c
            .regions
            .lock()
            .unwrap()
            .iter()
            .map(|(n, (k, b))| json!({"name": n, "key": k, "offset": 0, "byte_size": b}))
            .collect();
        return Some((200, Value::Array(list).to_string().into_bytes()));
    }
    let (name, action) = rest.strip_prefix("/region/")?.rsplit_once('/')?;
    let err = |m: String| Some((400, json!({ "error": m }).to_string().into_bytes()));
    match (method, action) {
        ("POST", "register") => {
            let v: Value = serde_json::from_slice(body).unwrap_or_default();
            let (Some(key), Some(size)) = (v["key"].as_str(), v["byte_size"].as_u64()) else {
                return err(format!("bad register request {v}"));
            };
            let on_disk = std::fs::metadata(format!("/dev/shm{key}")).map(|m| m.len());
            if v["offset"] != 0 || on_disk.map_or(true, |n| n < size) {
                return err(format!("Unable to open shared memory region: '{key}'"));
            }
            let mut regions = c.regions.lock().unwrap();
            if regions.contains_key(name) {
                return err(format!("shared memory region '{name}' already in manager"));
            }
            regions.insert(name.to_string(), (key.to_string(), size));
            c.shm_keys.lock().unwrap().push(key.to_string());
            c.registered.fetch_add(1, Ordering::SeqCst);
            Some((200, Vec::new()))
        }
        ("POST", "unregister") => {
            c.regions.lock().unwrap().remove(name);
            c.unregistered.fetch_add(1, Ordering::SeqCst);
            Some((200, Vec::new()))
        }
        _ => err(format!("unknown shared-memory request {method} {path}")),
    }
}

impl Counters {
    fn live_sequences(&self) -> usize {
        self.sequences
            .lock()
            .unwrap()
            .values()
            .filter(|s| s.0)
            .count()
    }
}

pub(crate) struct Responder {
    port: u16,
    counters: Arc<Counters>,
}

impl Responder {
    pub(crate) fn start(b: Behaviour) -> Responder {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let counters = Arc::new(Counters::default());
        let model_lock = Arc::new(Mutex::new(()));
        let c = counters.clone();
        // Polled, so that a dead server stops listening (its port then
        // refuses connections).
        listener.set_nonblocking(true).unwrap();
        std::thread::spawn(move || loop {
            if c.dead.load(Ordering::SeqCst) {
                return;
            }
            match listener.accept() {
                Ok((stream, _)) => {
                    stream.set_nonblocking(false).unwrap();
                    let (b, c, l) = (b.clone(), c.clone(), model_lock.clone());
                    std::thread::spawn(move || serve(stream, &b, &c, &l));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(1)),
            }
        });
        Responder { port, counters }
    }

    pub(crate) fn url(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub(crate) fn bad(&self) -> Vec<String> {
        self.counters.bad.lock().unwrap().clone()
    }

    /// The bodies of the repository load requests received, in order.
    pub(crate) fn loads(&self) -> Vec<String> {
        self.counters.loads.lock().unwrap().clone()
    }

    /// Executions by batch size.
    pub(crate) fn batches(&self) -> BTreeMap<u64, u64> {
        self.counters.batches.lock().unwrap().clone()
    }
}

/// The compute time the responder's `batch_stats` give an execution of
/// `batch` rows: (input, infer, output) ns.
pub(crate) fn batch_cost_ns(batch: u64) -> (u64, u64, u64) {
    (10_000, 1_000_000 + 250_000 * batch, 5_000 * batch)
}

/// The statistics of `tune`'s live steps: `batch_stats` at
/// [`batch_cost_ns`] (all as batch size 1 with `as_one`), and the
/// repository extension.
pub(crate) fn tune_like(as_one: bool, delay: Option<Duration>) -> Behaviour {
    Behaviour {
        batch_stats: true,
        batch_stats_as_one: as_one,
        repository: true,
        delay,
        ..triton_like()
    }
}

/// The repository extension of the responder: load (with an optional
/// `config` parameter, a JSON text naming model "m") and unload.
fn repository_endpoint(
    method: &str,
    path: &str,
    body: &[u8],
    c: &Counters,
) -> Option<(u16, Vec<u8>)> {
    let action = path.strip_prefix("/v2/repository/models/")?;
    let err = |why: String| Some((400, json!({ "error": why }).to_string().into_bytes()));
    match (method, action) {
        ("POST", "m/load") => {
            c.loads
                .lock()
                .unwrap()
                .push(String::from_utf8_lossy(body).into_owned());
            let v: Value = match serde_json::from_slice(body) {
                Ok(v) => v,
                Err(e) => return err(format!("failed to parse the request JSON buffer: {e}")),
            };
            if let Some(text) = v["parameters"].get("config") {
                let Some(cfg) = text
                    .as_str()
                    .and_then(|t| serde_json::from_str::<Value>(t).ok())
                else {
                    return err(
                        "failed to load 'm': the config parameter is not a JSON text".into(),
                    );
                };
                if cfg.get("name").is_some_and(|n| n != "m") {
                    return err(format!(
                        "failed to load 'm': the config names model {}\u{1b}[31m",
                        cfg["name"]
                    ));
                }
                *c.loaded_config.lock().unwrap() = Some(cfg);
            }
            c.unloaded.store(false, Ordering::SeqCst);
            Some((200, Vec::new()))
        }
        ("POST", "m/unload") => {
            c.unloaded.store(true, Ordering::SeqCst);
            Some((200, Vec::new()))
        }
        _ => err(format!(
            "failed to load '{action}', no version is available"
        )),
    }
}

thread_local! {
    /// The responder thread answers with `Connection: close`.
    static CLOSING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// The responder thread pauses between an answer's head and body.
    static BODY_PAUSE: std::cell::Cell<Option<Duration>> = const { std::cell::Cell::new(None) };
}

fn respond(s: &mut TcpStream, status: u16, extra: &[(&str, String)], body: &[u8]) -> bool {
    let mut head = format!("HTTP/1.1 {status} X\r\nContent-Length: {}\r\n", body.len());
    if CLOSING.with(|c| c.get()) {
        head.push_str("Connection: close\r\n");
    }
    for (k, v) in extra {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    if let Some(pause) = BODY_PAUSE.with(|p| p.get()) {
        if s.write_all(head.as_bytes())
            .and_then(|()| s.flush())
            .is_err()
        {
            return false;
        }
        std::thread::sleep(pause);
        return s.write_all(body).is_ok();
    }
    // one write: a second small one would wait for a delayed ACK
    let mut all = head.into_bytes();
    all.extend_from_slice(body);
    s.write_all(&all).is_ok()
}

fn serve(stream: TcpStream, b: &Behaviour, c: &Counters, model_lock: &Mutex<()>) {
    let _ = stream.set_nodelay(true);
    CLOSING.with(|c| c.set(b.close_after_answer));
    BODY_PAUSE.with(|p| p.set(b.body_pause));
    let mut out = stream.try_clone().unwrap();
    let mut r = BufReader::new(stream);
    loop {
        if c.dead.load(Ordering::SeqCst) {
            return;
        }
        let Some((method, path, headers)) = crate::common::read_request_head(&mut r) else {
            return;
        };
        let path = match b
            .alias
            .and_then(|a| path.strip_prefix(&format!("/v2/models/{a}")))
        {
            Some(rest) if rest.is_empty() || rest.starts_with('/') => format!("/v2/models/m{rest}"),
            _ => path,
        };
        let len: usize = headers
            .get("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        if let Some(pause) = b.read_pause.filter(|_| len > 0) {
            std::thread::sleep(pause);
        }
        let mut body = vec![0; len];
        if r.read_exact(&mut body).is_err() {
            return;
        }
        if headers.get("x-test").is_some_and(|v| v == "yes") {
            c.with_header.fetch_add(1, Ordering::SeqCst);
        }
        if method == "GET" && (path.ends_with("/config") || path.ends_with("/stats")) {
            c.discovery.lock().unwrap().push(path.clone());
        }
        // an ensemble's composing models: /v2/models/M[/versions/V]/config|stats
        let step = b.ensemble.and_then(|p| {
            let rest = path.strip_prefix("/v2/models/")?;
            let (model, what) = rest.rsplit_once('/')?;
            let (model, version) = match model.split_once("/versions/") {
                Some((m, v)) => (m, Some(v)),
                None => (model, None),
            };
            (model != "m").then_some((
                p,
                model.to_string(),
                version.map(str::to_string),
                what.to_string(),
            ))
        });
        if let Some((p, model, version, what)) = step.filter(|_| method == "GET") {
            // "post" is only asked for as version 1, the others as the latest
            let right_version = version.as_deref() == (model == "post").then_some("1");
            let n = c.infer.load(Ordering::SeqCst);
            let answer = match (what.as_str(), step_config(p, &model)) {
                ("config", Some(cfg)) if right_version => Some(cfg),
                ("stats", Some(_)) if right_version => {
                    let [q, ci, cf, co] = step_cost(&model).unwrap_or_default();
                    let d = |per: u64| json!({"count": n, "ns": n * per});
                    let z = if step_cost(&model).is_some() { n } else { 0 };
                    let dz = |per: u64| json!({"count": z, "ns": z * per});
                    // every request passes each step once; "seq" runs
                    // alone, the others in pairs
                    let executions = if model == "seq" { n } else { n / 2 };
                    Some(json!({"model_stats": [{"name": model,
                        "version": if model == "pre" { "3" } else { "1" },
                        "inference_count": n, "execution_count": executions,
                        "inference_stats": {"success": d(q + ci + cf + co + 700), "fail": d(0),
                            "queue": d(q), "compute_input": dz(ci), "compute_infer": dz(cf),
                            "compute_output": dz(co)}}]}))
                }
                _ => None,
            };
            let ok = match answer {
                Some(doc) => respond(&mut out, 200, &[], doc.to_string().as_bytes()),
                None => respond(&mut out, 404, &[], br#"{"error":"not found"}"#),
            };
            if !ok || b.close_after_answer {
                return;
            }
            continue;
        }
        if let Some((status, answer)) = b
            .repository
            .then(|| repository_endpoint(&method, &path, &body, c))
            .flatten()
        {
            if !respond(&mut out, status, &[], &answer) || b.close_after_answer {
                return;
            }
            continue;
        }
        if let Some((status, answer)) = shm_endpoint(&method, &path, &body, c) {
            if !respond(&mut out, status, &[], &answer) || b.close_after_answer {
                return;
            }
            continue;
        }
        let ok = match (method.as_str(), path.as_str()) {
            ("GET", "/v2/models/m") => {
                let x_type = if b.strings { "BYTES" } else { "FP32" };
                let meta = json!({"name": "m", "platform": "test",
                    "inputs": [{"name": "X", "datatype": x_type, "shape": b.x_shape}],
                    "outputs": [{"name": "Y", "datatype": "FP32", "shape": b.x_shape}]});
                respond(&mut out, 200, &[], meta.to_string().as_bytes())
            }
            ("GET", "/v2/models/m/config") if b.config && b.ensemble.is_some() => {
                let p = b.ensemble.unwrap();
                let mut cfg = step_config(p, "m").unwrap();
                cfg["max_batch_size"] = json!(b.max_batch_size);
                respond(&mut out, 200, &[], cfg.to_string().as_bytes())
            }
            ("GET", "/v2/models/m/ready") if b.repository => {
                if c.unloaded.load(Ordering::SeqCst) {
                    respond(&mut out, 400, &[], br#"{"error":"model 'm' is not ready"}"#)
                } else {
                    respond(&mut out, 200, &[], b"")
                }
            }
            ("GET", "/v2/models/m/config")
                if b.repository && c.loaded_config.lock().unwrap().is_some() =>
            {
                let cfg = c.loaded_config.lock().unwrap().clone().unwrap();
                respond(&mut out, 200, &[], cfg.to_string().as_bytes())
            }
            ("GET", "/v2/models/m/config") if b.config => {
                let cfg = json!({"name": "m", "max_batch_size": b.max_batch_size,
                    "input": [{"name": "X", "data_type": "TYPE_FP32", "dims": ["4"]}],
                    "output": [{"name": "Y", "data_type": "TYPE_FP32", "dims": [4]}]});
                let mut cfg = cfg;
                if b.strings {
                    cfg["input"][0]["data_type"] = json!("TYPE_STRING");
                }
                if b.decoupled {
                    cfg["model_transaction_policy"] = json!({"decoupled": true});
                }
                if b.sequence {
                    cfg["sequence_batching"] = json!({"max_sequence_idle_microseconds": "1000000"});
                } else {
                    cfg["dynamic_batching"] = json!({});
                }
                respond(&mut out, 200, &[], cfg.to_string().as_bytes())
            }
            ("GET", "/v2/models/m/stats") if b.stats => {
                let n = c.infer.load(Ordering::SeqCst);
                let d = |per: u64| json!({"count": n, "ns": n * per});
                let mut doc = json!({"model_stats": [{"name": "m", "version": "1",
                    "inference_count": n, "execution_count": n,
                    "inference_stats": {"success": d(9000), "fail": d(0), "queue": d(2000),
                        "compute_input": d(500), "compute_infer": d(5000),
                        "compute_output": d(500)}}]});
                if let Some(p) = b.ensemble {
                    // an ensemble's own statistics: no queue, its steps'
                    // compute summed
                    let i = &mut doc["model_stats"][0]["inference_stats"];
                    i["queue"] = json!({"count": n, "ns": 0});
                    let leaves = pipeline_leaves(p);
                    for (k, name) in [
                        (1, "compute_input"),
                        (2, "compute_infer"),
                        (3, "compute_output"),
                    ] {
                        let per: u64 = leaves.iter().map(|m| step_cost(m).unwrap()[k]).sum();
                        i[name] = d(per);
                    }
                }
                if b.batch_stats {
                    let mut by_size: BTreeMap<u64, u64> = BTreeMap::new();
                    for (&size, &n) in c.batches.lock().unwrap().iter() {
                        *by_size
                            .entry(if b.batch_stats_as_one { 1 } else { size })
                            .or_default() += n;
                    }
                    let stats: Vec<Value> = by_size
                        .iter()
                        .map(|(&size, &n)| {
                            let (ci, cf, co) = batch_cost_ns(size);
                            json!({"batch_size": size,
                                "compute_input": {"count": n, "ns": n * ci},
                                "compute_infer": {"count": n, "ns": (n * cf).to_string()},
                                "compute_output": {"count": n, "ns": n * co}})
                        })
                        .collect();
                    doc["model_stats"][0]["batch_stats"] = json!(stats);
                }
                respond(&mut out, 200, &[], doc.to_string().as_bytes())
            }
            ("POST", "/v2/models/m/infer") => {
                c.arrivals.lock().unwrap().push(Instant::now());
                let n = c.infer.fetch_add(1, Ordering::SeqCst) + 1;
                if b.die_at.is_some_and(|at| n >= at) || c.dead.load(Ordering::SeqCst) {
                    c.dead.store(true, Ordering::SeqCst);
                    return;
                }
                let guard = model_lock.lock().unwrap();
                if let Some((at, d)) = b.stall {
                    if n == at {
                        std::thread::sleep(d);
                    }
                }
                if let Some(d) = b.delay {
                    std::thread::sleep(d);
                }
                if let Some(d) = b.slowdown {
                    std::thread::sleep(d * n as u32);
                }
                drop(guard);
                if b.close.contains(&(n % 10)) {
                    return;
                }
                if b.fail_500.contains(&(n % 10)) {
                    respond(&mut out, 500, &[], br#"{"error":"boom"}"#)
                } else if b.malformed.contains(&(n % 10)) {
                    respond(&mut out, 200, &[], b"{\"outputs\": [")
                } else {
                    infer(
                        &mut out,
                        &headers,
                        &body,
                        c,
                        b.sequence || b.ensemble.is_some_and(Pipeline::stateful),
                    )
                }
            }
            ("GET", "/metrics") if b.metrics_gpus.is_some() => {
                let k = c.scrapes.fetch_add(1, Ordering::SeqCst) + 1;
                let page = metrics_page(k, b.metrics_gpus == Some(true));
                respond(&mut out, 200, &[], page.as_bytes())
            }
            ("GET", "/v2") if b.extensions.is_some() => {
                let doc = json!({"name": "test", "version": "1", "extensions": b.extensions});
                respond(&mut out, 200, &[], doc.to_string().as_bytes())
            }
            // as MLServer: no config extension
            ("GET", p) if p.ends_with("/config") => {
                respond(&mut out, 404, &[], br#"{"error":"not found"}"#)
            }
            _ => respond(&mut out, 400, &[], br#"{"error":"unknown request"}"#),
        };
        if !ok || b.close_after_answer {
            return;
        }
    }
}

/// GPU utilization of the two GPUs at the k-th read of `/metrics`.
fn gpu_utilization(k: u64) -> (f64, f64) {
    let a = (k % 4) as f64 * 0.25;
    (a, 1.0 - a)
}

/// Triton's metrics page at the k-th read (from 1): counters of its own,
/// and with `gpus` two GPUs whose utilization, power and memory change
/// with k (`gpu_utilization`, power 100 + k W and 50 W, memory used
/// k MB on the first GPU, totals 16 GB and 8 GB).
fn metrics_page(k: u64, gpus: bool) -> String {
    let mut page = format!(
        "# HELP nv_inference_count Number of inferences performed\n\
# TYPE nv_inference_count counter\n\
nv_inference_count{{model=\"m\",version=\"1\"}} {k}\n\
nv_cpu_utilization 0.5\n"
    );
    if gpus {
        let (a, b) = gpu_utilization(k);
        page.push_str(&format!(
            "# HELP nv_gpu_utilization GPU utilization rate [0.0 - 1.0)\n\
# TYPE nv_gpu_utilization gauge\n\
nv_gpu_utilization{{gpu_uuid=\"GPU-aaaa\"}} {a}\n\
nv_gpu_utilization{{gpu_uuid=\"GPU-bbbb\"}} {b}\n\
nv_gpu_power_usage{{gpu_uuid=\"GPU-aaaa\"}} {}\n\
nv_gpu_power_usage{{gpu_uuid=\"GPU-bbbb\"}} 50\n\
nv_gpu_memory_used_bytes{{gpu_uuid=\"GPU-aaaa\"}} {}\n\
nv_gpu_memory_total_bytes{{gpu_uuid=\"GPU-aaaa\"}} 1.6e+10\n\
nv_gpu_memory_total_bytes{{gpu_uuid=\"GPU-bbbb\"}} 8e9\n",
            100 + k,
            k * 1_000_000
        ));
    }
    page
}

/// Checks one inference request and answers it (the output echoes the
/// input's shape, binary when asked).
fn infer(
    out: &mut TcpStream,
    headers: &BTreeMap<String, String>,
    body: &[u8],
    c: &Counters,
    sequence: bool,
) -> bool {
    let fail = |out: &mut TcpStream, why: String| {
        c.bad.lock().unwrap().push(why.clone());
        respond(
            out,
            400,
            &[],
            json!({ "error": why }).to_string().as_bytes(),
        )
    };
    let hlen = match headers.get("inference-header-content-length") {
        Some(v) => match v.parse::<usize>() {
            Ok(n) if n <= body.len() => Some(n),
            _ => return fail(out, format!("bad header length {v}")),
        },
        None => None,
    };
    let head = &body[..hlen.unwrap_or(body.len())];
    let mut tail = &body[hlen.unwrap_or(body.len())..];
    let mut req: Value = match serde_json::from_slice(head) {
        Ok(v) => v,
        Err(e) => return fail(out, format!("request JSON: {e}")),
    };
    // an input in a shared-memory region: read from there, then checked
    // as the same bytes sent binary would be
    let from_shm;
    let region_bytes;
    if let Some(region) = req["inputs"][0]["parameters"]["shared_memory_region"].as_str() {
        let p = &req["inputs"][0]["parameters"];
        let (size, off) = (
            p["shared_memory_byte_size"].as_u64().unwrap_or(0),
            p["shared_memory_offset"].as_u64().unwrap_or(0),
        );
        if hlen.is_some() || req["inputs"][0].get("data").is_some() {
            return fail(out, "tensor data sent besides shared memory".into());
        }
        let read = region_file(c, region).and_then(|(f, total)| {
            if off + size > total {
                return Err(format!(
                    "{off} + {size} beyond region '{region}' of {total}"
                ));
            }
            let mut buf = vec![0; size as usize];
            f.read_exact_at(&mut buf, off).map_err(|e| e.to_string())?;
            Ok(buf)
        });
        region_bytes = match read {
            Ok(b) => b,
            Err(e) => return fail(out, e),
        };
        tail = &region_bytes;
        req["inputs"][0]["parameters"] = json!({"binary_data_size": size});
        c.shm_inputs.fetch_add(1, Ordering::SeqCst);
        from_shm = true;
    } else {
        from_shm = false;
    }
    let x = &req["inputs"][0];
    let shape: Vec<i64> = x["shape"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_i64).collect())
        .unwrap_or_default();
    let elems: i64 = shape.iter().product();
    if x["name"] != "X"
        || !(x["datatype"] == "FP32" || x["datatype"] == "BYTES")
        || shape.is_empty()
    {
        return fail(out, format!("bad input {x}"));
    }
    *c.batches
        .lock()
        .unwrap()
        .entry(shape[0].max(0) as u64)
        .or_default() += 1;
    let mut own_x: Vec<f32> = Vec::new();
    if x["datatype"] == "BYTES" {
        // binary: each element's 4-byte little-endian length, then its bytes
        let strings: Option<Vec<String>> = match x["parameters"]["binary_data_size"].as_u64() {
            Some(_) => {
                let mut rest = tail;
                let mut all = Vec::new();
                while rest.len() >= 4 {
                    let n = u32::from_le_bytes(rest[..4].try_into().unwrap()) as usize;
                    let Some(s) = rest.get(4..4 + n) else { break };
                    all.push(String::from_utf8_lossy(s).into_owned());
                    rest = &rest[4 + n..];
                }
                rest.is_empty().then_some(all)
            }
            None => x["data"]
                .as_array()
                .and_then(|a| a.iter().map(|v| v.as_str().map(str::to_string)).collect()),
        };
        match strings {
            Some(s) if s.len() == elems as usize => c.x_strings.lock().unwrap().push(s),
            _ => return fail(out, format!("BYTES input does not fit shape {shape:?}")),
        }
    } else {
        let values: Vec<f32> = match x["parameters"]["binary_data_size"].as_u64() {
            Some(_) => tail
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
                .collect(),
            None => x["data"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_f64().map(|f| f as f32))
                        .collect()
                })
                .unwrap_or_default(),
        };
        own_x = values.clone();
        c.x_values.lock().unwrap().push(values);
        if req["parameters"].get("sequence_id").is_some() {
            c.with_sequence_id.fetch_add(1, Ordering::SeqCst);
        }
        match x["parameters"]["binary_data_size"].as_u64() {
            Some(size) => {
                if !from_shm {
                    c.binary.fetch_add(1, Ordering::SeqCst);
                }
                if size != elems as u64 * 4 || tail.len() as u64 != size {
                    return fail(
                        out,
                        format!(
                            "binary size {size} for shape {shape:?}, {} bytes",
                            tail.len()
                        ),
                    );
                }
            }
            None => {
                c.json.fetch_add(1, Ordering::SeqCst);
                if x["data"].as_array().map(Vec::len) != Some(elems as usize) || !tail.is_empty() {
                    return fail(out, format!("JSON data does not fit shape {shape:?}"));
                }
            }
        }
    }
    if sequence {
        if let Err(why) = sequence_step(&req["parameters"], c) {
            return fail(out, why);
        }
    }
    if let Some(region) = req["outputs"][0]["parameters"]["shared_memory_region"].as_str() {
        // Y = 2 X, written to the output's region
        let p = &req["outputs"][0]["parameters"];
        let (size, off) = (
            p["shared_memory_byte_size"].as_u64().unwrap_or(0),
            p["shared_memory_offset"].as_u64().unwrap_or(0),
        );
        let y: Vec<u8> = own_x.iter().flat_map(|v| (2.0 * v).to_le_bytes()).collect();
        if (y.len() as u64) > size {
            return fail(
                out,
                format!(
                    "shared memory size specified with the request for output 'Y' ({size} bytes) should be at least {} bytes to hold the results",
                    y.len()
                ),
            );
        }
        let written = region_file(c, region)
            .and_then(|(f, _)| f.write_all_at(&y, off).map_err(|e| e.to_string()));
        if let Err(e) = written {
            return fail(out, e);
        }
        c.shm_outputs.fetch_add(1, Ordering::SeqCst);
        let doc = json!({"model_name": "m", "outputs": [{"name": "Y", "datatype": "FP32",
            "shape": shape, "parameters": {"shared_memory_region": region,
            "shared_memory_byte_size": y.len()}}]});
        return respond(out, 200, &[], doc.to_string().as_bytes());
    }
    if req["parameters"]["binary_data_output"] == true {
        let bytes = vec![0u8; elems as usize * 4];
        let head = json!({"model_name": "m", "outputs": [{"name": "Y", "datatype": "FP32",
            "shape": shape, "parameters": {"binary_data_size": bytes.len()}}]})
        .to_string();
        let mut all = head.clone().into_bytes();
        all.extend_from_slice(&bytes);
        respond(
            out,
            200,
            &[("Inference-Header-Content-Length", head.len().to_string())],
            &all,
        )
    } else {
        let data = vec![0.0; elems as usize];
        let doc = json!({"model_name": "m", "outputs": [{"name": "Y", "datatype": "FP32",
            "shape": shape, "data": data}]});
        respond(out, 200, &[], doc.to_string().as_bytes())
    }
}

pub(crate) fn triton_like() -> Behaviour {
    Behaviour {
        config: true,
        stats: true,
        x_shape: vec![-1, 4],
        max_batch_size: 8,
        ..Behaviour::default()
    }
}

/// A `tritonctl perf` run killed after this long fails as a hang.
const HANG: Duration = Duration::from_secs(60);

fn perf_json(args: &[&str]) -> (i32, Value) {
    let mut a = args.to_vec();
    a.extend(["--format", "json"]);
    let (code, out, err) = tritonctl().arg("perf").args(&a).timeout(HANG).run().parts();
    let v: Value = serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{out}\nstderr:\n{err}"));
    assert_matches_schema(&v);
    (code, v)
}

pub(crate) fn assert_matches_schema(doc: &Value) {
    let text = std::fs::read_to_string(crate_root().join("schemas/perf.schema.json")).unwrap();
    let schema: Value = serde_json::from_str(&text).expect("schema is JSON");
    jsonschema::meta::validate(&schema).expect("schema is a valid JSON Schema");
    let v = jsonschema::validator_for(&schema).expect("schema compiles");
    let errors: Vec<String> = v
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(
        errors.is_empty(),
        "output does not match the schema:\n{}\n{doc:#}",
        errors.join("\n")
    );
}

fn u(v: &Value) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("{v} is not an unsigned integer"))
}

#[test]
fn closed_loop_counts_binary_and_json() {
    let r = Responder::start(triton_like());
    let url = r.url();
    let (code, doc) = perf_json(&[
        "-m",
        "m",
        "-u",
        &url,
        "--concurrency-range",
        "1:3:2",
        "--request-count",
        "150",
        "-b",
        "2",
    ]);
    assert_eq!(code, 0, "{doc:#}");
    assert!(r.bad().is_empty(), "{:?}", r.bad());
    assert_eq!(doc["mode"], "concurrency");
    assert_eq!(doc["input_tensor_format"], "binary");
    let levels = doc["levels"].as_array().unwrap();
    assert_eq!(levels.len(), 2);
    assert_eq!(levels[0]["concurrency"], 1);
    assert_eq!(levels[1]["concurrency"], 3);
    for l in levels {
        assert_eq!(u(&l["requests"]), 150);
        assert_eq!(u(&l["errors"]), 0);
        assert!(l["request_rate"].is_null());
        let lat = &l["latency_us"];
        assert!(
            u(&lat["p50"]) <= u(&lat["p99"]) && u(&lat["p99"]) <= u(&lat["max"]),
            "{lat}"
        );
        // 150 requests of batch 2 in duration_s
        let expect = 300.0 / l["duration_s"].as_f64().unwrap();
        let got = l["throughput_per_s"].as_f64().unwrap();
        assert!((got - expect).abs() / expect < 0.01, "{got} vs {expect}");
        // the statistics extension: 2 µs queue and 5 µs compute per request
        assert_eq!(l["server"]["queue_us"], 2.0, "{l:#}");
        assert_eq!(l["server"]["compute_infer_us"], 5.0);
        assert_eq!(l["server"]["overhead_us"], 1.0);
    }
    // every request went binary (the default), none as JSON
    assert_eq!(r.counters.json.load(Ordering::SeqCst), 0);
    assert_eq!(r.counters.binary.load(Ordering::SeqCst), 300);

    let (code, doc) = perf_json(&[
        "-m",
        "m",
        "-u",
        &url,
        "--request-count",
        "40",
        "--input-tensor-format",
        "json",
        "--output-tensor-format",
        "json",
        "--input-data",
        "zero",
    ]);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(u(&doc["levels"][0]["requests"]), 40);
    assert_eq!(r.counters.json.load(Ordering::SeqCst), 40);
    assert!(r.bad().is_empty(), "{:?}", r.bad());
}

#[test]
fn table_and_csv() {
    let r = Responder::start(triton_like());
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("out.csv");
    let (code, out, err) = tritonctl()
        .arg("perf")
        .args([
            "-m",
            "m",
            "-u",
            &r.url(),
            "--concurrency-range",
            "1:2",
            "--duration",
            "0.3",
            "-f",
            csv.to_str().unwrap(),
        ])
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("concurrency") && out.contains("p99 µs"),
        "{out}"
    );
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    // the columns Model Analyzer looks for
    for col in [
        "Concurrency",
        "Inferences/Second",
        "Server Queue",
        "Server Compute Infer",
        "p50 latency",
        "p90 latency",
        "p95 latency",
        "p99 latency",
        "Avg latency",
    ] {
        assert!(head.contains(&col), "{col} missing from {head:?}");
    }
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 2);
    let tput: Vec<f64> = rows.iter().map(|r| r[1].parse().unwrap()).collect();
    assert!(
        tput[0] <= tput[1],
        "rows by increasing throughput: {tput:?}"
    );
    assert!(tput[0] > 0.0);
}

/// The CSV's client columns of the level with this load.
fn csv_row(text: &str, load: &str) -> BTreeMap<String, f64> {
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let row: Vec<&str> = lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .find(|r| r[0] == load)
        .unwrap_or_else(|| panic!("no row for {load}:\n{text}"));
    // empty cells: values the level does not have
    head.iter()
        .zip(row)
        .filter(|(_, v)| !v.is_empty())
        .map(|(h, v)| (h.to_string(), v.parse().unwrap()))
        .collect()
}

#[test]
fn client_send_and_recv_are_measured() {
    // A server that waits 300 ms between an answer's head and its body:
    // the time is the client's receiving time, not the server's.
    let pause = Duration::from_millis(300);
    let r = Responder::start(Behaviour {
        body_pause: Some(pause),
        ..triton_like()
    });
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("out.csv");
    let (code, doc) = perf_json(&[
        "-m",
        "m",
        "-u",
        &r.url(),
        "--request-count",
        "3",
        "-f",
        csv.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{doc:#}");
    let l = &doc["levels"][0];
    let recv = l["client"]["recv_us"].as_f64().unwrap();
    let send = l["client"]["send_us"].as_f64().unwrap();
    let mean = l["latency_us"]["mean"].as_f64().unwrap();
    assert!(recv >= 290_000.0 && recv <= mean, "{l:#}");
    assert!(send > 0.0 && send < 100_000.0, "{l:#}");
    let row = csv_row(&std::fs::read_to_string(&csv).unwrap(), "1");
    assert_eq!(row["Client Recv"], recv.round(), "{row:?}");
    assert_eq!(row["Client Send"], send.round(), "{row:?}");
    assert_eq!(row["request/response"], (send + recv).round(), "{row:?}");
    let wait = mean - send - recv;
    assert!((row["response wait"] - wait).abs() <= 1.0, "{row:?}");
    // the server's queue and compute time (8 µs per request) come off
    // the wait
    assert!(
        (row["Network+Server Send/Recv"] - (wait - 8.0).max(0.0)).abs() <= 1.0,
        "{row:?}"
    );

    // A server that waits 300 ms before reading a 32 MB request body: the
    // client cannot hand over the whole body before the server reads, so
    // the time is the client's sending time.
    let r = Responder::start(Behaviour {
        config: false,
        stats: false,
        x_shape: vec![-1],
        read_pause: Some(pause),
        ..Behaviour::default()
    });
    let (code, doc) = perf_json(&[
        "-m",
        "m",
        "-u",
        &r.url(),
        "--shape",
        "X:8000000",
        "--input-data",
        "zero",
        "--request-count",
        "2",
    ]);
    assert_eq!(code, 0, "{doc:#} {:?}", r.bad());
    let l = &doc["levels"][0];
    let send = l["client"]["send_us"].as_f64().unwrap();
    let recv = l["client"]["recv_us"].as_f64().unwrap();
    assert!(send >= 200_000.0, "{l:#}");
    assert!(recv < send, "{l:#}");
}

#[test]
fn open_loop_corrects_coordinated_omission() {
    let stall = Duration::from_secs(1);
    let behaviour = Behaviour {
        stall: Some((50, stall)),
        ..triton_like()
    };
    // open loop, at most 4 in flight: during the stall the sends fall
    // behind, and their latency counts from when they were due
    let r = Responder::start(behaviour.clone());
    let (code, doc) = perf_json(&[
        "-m",
        "m",
        "-u",
        &r.url(),
        "--request-rate-range",
        "200",
        "--duration",
        "3",
        "--max-concurrency",
        "4",
    ]);
    assert_eq!(code, 0, "{doc:#}");
    let l = &doc["levels"][0];
    assert_eq!(doc["mode"], "request_rate");
    assert_eq!(l["request_rate"], 200.0);
    assert!(l["concurrency"].is_null());
    let requests = u(&l["requests"]);
    assert!((590..=610).contains(&requests), "{requests}");
    let p99 = u(&l["latency_us"]["p99"]);
    let p90 = u(&l["latency_us"]["p90"]);
    // ~200 requests were due during the 1 s stall: a third of the run
    // waited, the first almost the whole second
    assert!(p99 >= 800_000, "p99 {p99} µs does not show the 1 s stall");
    assert!(p90 >= 200_000, "p90 {p90} µs does not show the 1 s stall");
    let late = u(&l["late_sends"]);
    assert!(late >= 100, "late sends {late}");

    // no cap: nothing is sent late, but the latencies still show the stall
    let r = Responder::start(behaviour.clone());
    let (_, doc) = perf_json(&[
        "-m",
        "m",
        "-u",
        &r.url(),
        "--request-rate-range",
        "200",
        "--duration",
        "3",
        "--request-distribution",
        "poisson",
        "--seed",
        "3",
    ]);
    let l = &doc["levels"][0];
    assert!(u(&l["latency_us"]["p99"]) >= 800_000, "{l:#}");

    // the closed loop sends nothing while it waits: only one request sees
    // the stall (the omission the open loop corrects)
    let r = Responder::start(behaviour);
    let (_, doc) = perf_json(&["-m", "m", "-u", &r.url(), "--duration", "2"]);
    let l = &doc["levels"][0];
    assert!(u(&l["latency_us"]["max"]) >= 900_000, "{l:#}");
    assert!(u(&l["latency_us"]["p99"]) < 500_000, "{l:#}");
}

#[test]
fn unreachable_server_is_exit_2() {
    let port = crate::common::closed_port();
    let (code, out, err) = tritonctl()
        .arg("perf")
        .args([
            "-m",
            "m",
            "-u",
            &format!("127.0.0.1:{port}"),
            "--timeout",
            "2000",
        ])
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("cannot connect") && err.contains(&port.to_string()),
        "{err}"
    );
    assert!(out.is_empty());

    let r = Responder::start(triton_like());
    let (code, _, err) = tritonctl()
        .arg("perf")
        .args(["-m", "nope", "-u", &r.url()])
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 2);
    assert!(err.contains("'nope'") && err.contains("400"), "{err}");
}

#[test]
fn errors_are_counted_by_kind() {
    let r = Responder::start(Behaviour {
        fail_500: vec![3],
        malformed: vec![6],
        close: vec![9],
        ..triton_like()
    });
    let url = r.url();
    // every tenth request of each kind fails: exactly 20 of each in 200
    let args = [
        "-m",
        "m",
        "-u",
        &url,
        "--concurrency-range",
        "2",
        "--request-count",
        "200",
    ];
    let (code, doc) = perf_json(&args);
    assert_eq!(code, 1, "error rate 30 % is above the default 0");
    let l = &doc["levels"][0];
    assert_eq!(u(&l["requests"]), 200);
    assert_eq!(u(&l["errors"]), 60);
    assert_eq!(
        l["errors_by_kind"],
        json!({"http_500": 20, "malformed": 20, "connection": 20})
    );
    assert!(r.bad().is_empty(), "{:?}", r.bad());

    let mut a = args.to_vec();
    a.extend(["--max-error-rate", "0.35"]);
    assert_eq!(perf_json(&a).0, 0);
    let mut a = args.to_vec();
    a.extend(["--max-error-rate", "0.25"]);
    assert_eq!(perf_json(&a).0, 1);
}

#[test]
fn a_server_killed_mid_run_gives_counted_errors_not_a_hang() {
    // The server dies at its 100th request: the requests in flight break,
    // later ones are refused; the run goes on to its end.
    let r = Responder::start(Behaviour {
        die_at: Some(100),
        ..triton_like()
    });
    let url = r.url();
    let args = [
        "-m",
        "m",
        "-u",
        &url,
        "--concurrency-range",
        "2",
        "--duration",
        "1",
        "--warmup",
        "0",
    ];
    let started = Instant::now();
    let (code, doc) = perf_json(&args);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        code, 1,
        "errors above the default --max-error-rate 0: {doc:#}"
    );
    let l = &doc["levels"][0];
    assert_eq!(u(&l["requests"]) - u(&l["errors"]), 99, "{l:#}");
    let kinds = l["errors_by_kind"].as_object().unwrap();
    assert!(u(&kinds["connect"]) > 0, "{l:#}");
    assert!(
        kinds.keys().all(|k| k == "connect" || k == "connection"),
        "{l:#}"
    );
    assert!(u(&l["errors"]) >= 2, "{l:#}");
    assert!(r.counters.dead.load(Ordering::SeqCst));

    // The same with every error allowed: exit 0.
    let r = Responder::start(Behaviour {
        die_at: Some(100),
        ..triton_like()
    });
    let url = r.url();
    let mut a = args.to_vec();
    a[3] = &url;
    a.extend(["--max-error-rate", "1"]);
    let (code, doc) = perf_json(&a);
    assert_eq!(code, 0, "{doc:#}");
}

#[test]
fn decoupled_models_over_http_infer_are_refused_before_any_load() {
    let r = Responder::start(Behaviour {
        decoupled: true,
        ..triton_like()
    });
    let (code, _, err) = tritonctl()
        .arg("perf")
        .args(["-m", "m", "-u", &r.url(), "--request-count", "5"])
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 2, "{err}");
    // /infer cannot carry many responses: the message names the ways that can
    assert!(err.contains("model 'm' is decoupled"), "{err}");
    assert!(
        err.contains("-i grpc") && err.contains("--endpoint generate"),
        "{err}"
    );
    assert_eq!(r.counters.infer.load(Ordering::SeqCst), 0);
}

#[test]
fn timeouts_end_requests() {
    let r = Responder::start(Behaviour {
        stall: Some((3, Duration::from_secs(2))),
        ..triton_like()
    });
    let started = Instant::now();
    let (code, doc) = perf_json(&[
        "-m",
        "m",
        "-u",
        &r.url(),
        "--duration",
        "1",
        "--timeout",
        "200",
        "--max-error-rate",
        "1",
    ]);
    assert_eq!(code, 0);
    let l = &doc["levels"][0];
    assert!(u(&l["errors_by_kind"]["timeout"]) >= 1, "{l:#}");
    // the window is 1 s and requests give up after 0.2 s
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn without_config_endpoint_shapes_come_from_flags() {
    let r = Responder::start(Behaviour {
        config: false,
        stats: false,
        x_shape: vec![-1, -1],
        ..Behaviour::default()
    });
    let url = r.url();
    let (code, _, err) = tritonctl()
        .arg("perf")
        .args(["-m", "m", "-u", &url, "--request-count", "5"])
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 2);
    assert!(err.contains("--shape X:"), "{err}");
    // the leading -1 may be a batch dim
    assert!(err.contains("--batched --shape X:N"), "{err}");
    let (code, _, err) = tritonctl()
        .arg("perf")
        .args([
            "-m",
            "m",
            "-u",
            &url,
            "--shape",
            "X:4",
            "-b",
            "2",
            "--request-count",
            "5",
        ])
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 2, "no batch dim known without --batched");
    assert!(err.contains("--batched"), "{err}");
    let (code, doc) = perf_json(&[
        "-m",
        "m",
        "-u",
        &url,
        "--shape",
        "X:4",
        "-b",
        "3",
        "--batched",
        "--request-count",
        "5",
    ]);
    assert_eq!(code, 0, "{doc:#} {:?}", r.bad());
    assert!(r.bad().is_empty(), "{:?}", r.bad());
    let l = &doc["levels"][0];
    assert_eq!(u(&l["requests"]), 5);
    assert!(l["server"].is_null(), "no statistics extension");
}

#[test]
fn connection_close_answers_are_not_reused() {
    let r = Responder::start(Behaviour {
        close_after_answer: true,
        ..triton_like()
    });
    let (code, doc) = perf_json(&[
        "-m",
        "m",
        "-u",
        &r.url(),
        "--concurrency-range",
        "2",
        "--request-count",
        "60",
    ]);
    assert_eq!(code, 0, "{doc:#}");
    let l = &doc["levels"][0];
    assert_eq!(u(&l["requests"]), 60, "{l:#}");
    assert_eq!(u(&l["errors"]), 0, "{l:#}");
    assert!(r.bad().is_empty(), "{:?}", r.bad());
}

#[test]
fn config_source_is_reported() {
    let with = Responder::start(triton_like());
    let (code, doc) = perf_json(&["-m", "m", "-u", &with.url(), "--request-count", "3"]);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(doc["model_config_source"], "config");
    let (code, out, err) = tritonctl()
        .arg("perf")
        .args(["-m", "m", "-u", &with.url(), "--request-count", "3"])
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 0, "{out}{err}");
    assert!(!out.contains("no config endpoint"), "{out}");
    assert!(!err.contains("no model config endpoint"), "{err}");

    let without = Responder::start(Behaviour {
        x_shape: vec![4],
        ..Behaviour::default()
    });
    let args = ["-m", "m", "-u", &without.url(), "--request-count", "3"];
    let (code, doc) = perf_json(&args);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(doc["model_config_source"], "metadata");
    let (code, out, err) = tritonctl()
        .arg("perf")
        .args(args)
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("no config endpoint"), "{out}");
    assert!(
        err.contains("note:") && err.contains("no model config endpoint"),
        "{err}"
    );
    assert!(without.bad().is_empty(), "{:?}", without.bad());
}

#[test]
fn json_tensors_when_the_server_lacks_binary_tensor_data() {
    // as MLServer: GET /v2 lists no extensions
    let r = Responder::start(Behaviour {
        extensions: Some(vec![]),
        ..triton_like()
    });
    let url = r.url();
    let (code, out, err) = tritonctl()
        .arg("perf")
        .args([
            "-m",
            "m",
            "-u",
            &url,
            "--request-count",
            "4",
            "--format",
            "json",
        ])
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 0, "{out}{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_matches_schema(&doc);
    assert_eq!(doc["input_tensor_format"], "json");
    assert_eq!(doc["output_tensor_format"], "json");
    assert!(
        err.contains("note:") && err.contains("binary_tensor_data"),
        "{err}"
    );
    assert!(!err.contains("warning:"), "{err}");
    assert_eq!(r.counters.binary.load(Ordering::SeqCst), 0);
    assert_eq!(r.counters.json.load(Ordering::SeqCst), 4);

    // given explicitly: kept, with a warning
    let (code, out, err) = tritonctl()
        .arg("perf")
        .args([
            "-m",
            "m",
            "-u",
            &url,
            "--request-count",
            "4",
            "--input-tensor-format",
            "binary",
            "--format",
            "json",
        ])
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 0, "{out}{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["input_tensor_format"], "binary");
    assert_eq!(doc["output_tensor_format"], "json");
    assert!(
        err.contains("warning:") && err.contains("--input-tensor-format"),
        "{err}"
    );
    assert_eq!(r.counters.binary.load(Ordering::SeqCst), 4);

    // a server that lists the extension gets binary tensors, silently
    let t = Responder::start(Behaviour {
        extensions: Some(vec!["classification", "binary_tensor_data"]),
        ..triton_like()
    });
    let (code, out, err) = tritonctl()
        .arg("perf")
        .args([
            "-m",
            "m",
            "-u",
            &t.url(),
            "--request-count",
            "4",
            "--format",
            "json",
        ])
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 0, "{out}{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["input_tensor_format"], "binary");
    assert!(!err.contains("binary_tensor_data"), "{err}");
    assert_eq!(t.counters.binary.load(Ordering::SeqCst), 4);
}

#[test]
fn usage_errors_are_exit_2() {
    for args in [
        vec!["-m", "m", "--concurrency-range", "0:2"],
        vec!["-m", "m", "--request-rate-range", "x"],
        vec!["-m", "m", "--input-data", "/no/such/file.json"],
        vec!["-m", "m", "-i", "grpc"],
        vec!["-m", "m", "-u", "https://h:1"],
        vec!["-m", "m", "--max-error-rate", "2"],
        vec!["-m", "m", "--max-trials", "2"],
        vec!["-m", "m", "--stability-percentage", "0"],
        vec!["-m", "m", "--sequence-length-variation", "-1"],
        vec!["-m", "m", "--request-intervals", "/no/such/file"],
        vec![
            "-m",
            "m",
            "--request-intervals",
            "x",
            "--concurrency-range",
            "2",
        ],
    ] {
        let (code, _, err) = tritonctl()
            .arg("perf")
            .args(&args)
            .timeout(HANG)
            .run()
            .parts();
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.starts_with("error:"), "{args:?}: {err}");
    }
}

/// The sequence batcher's rules for one request (the step is over when
/// this returns: the answer follows).
fn sequence_step(p: &Value, c: &Counters) -> Result<(), String> {
    let id = match &p["sequence_id"] {
        Value::String(s) if !s.is_empty() => {
            c.string_ids.fetch_add(1, Ordering::SeqCst);
            s.clone()
        }
        v => v
            .as_u64()
            .filter(|id| *id > 0)
            .ok_or(format!("no sequence id in {p}"))?
            .to_string(),
    };
    let (start, end) = match (p["sequence_start"].as_bool(), p["sequence_end"].as_bool()) {
        (Some(s), Some(e)) => (s, e),
        _ => return Err(format!("sequence flags missing in {p}")),
    };
    {
        let mut seqs = c.sequences.lock().unwrap();
        let state = seqs.entry(id.clone()).or_insert((false, false, 0));
        if state.1 {
            return Err(format!("two steps of sequence {id} in flight"));
        }
        if start {
            if state.0 {
                return Err(format!("sequence {id} started again while live"));
            }
            c.started.fetch_add(1, Ordering::SeqCst);
        } else if !state.0 {
            return Err(format!("sequence {id}: must specify the START flag"));
        }
        state.1 = true;
    }
    // the step takes a moment, so a second step sent meanwhile is seen
    std::thread::sleep(Duration::from_millis(1));
    let mut seqs = c.sequences.lock().unwrap();
    let state = seqs.get_mut(&id).unwrap();
    let steps = if start { 1 } else { state.2 + 1 };
    *state = (!end, false, steps);
    if end {
        c.ended.fetch_add(1, Ordering::SeqCst);
        c.lengths.lock().unwrap().push(steps);
    }
    Ok(())
}

fn sequence_model() -> Behaviour {
    Behaviour {
        sequence: true,
        ..triton_like()
    }
}

#[test]
fn sequences_closed_loop() {
    let r = Responder::start(sequence_model());
    let (code, doc) = perf_json(&[
        "-m",
        "m",
        "-u",
        &r.url(),
        "--concurrency-range",
        "3",
        "--request-count",
        "100",
        "--sequence-length",
        "5",
        "--sequence-id-range",
        "100:200",
    ]);
    assert_eq!(code, 0, "{doc:#} {:?}", r.bad());
    assert!(r.bad().is_empty(), "{:?}", r.bad());
    let l = &doc["levels"][0];
    assert_eq!(u(&l["requests"]), 100);
    // 100 steps of 5 by three workers
    assert!(r.counters.started.load(Ordering::SeqCst) >= 20);
    // every sequence was ended, the ones cut off by the window too
    assert_eq!(r.counters.live_sequences(), 0);
    let ids: Vec<u64> = r
        .counters
        .sequences
        .lock()
        .unwrap()
        .keys()
        .map(|k| k.parse().unwrap())
        .collect();
    assert!(ids.iter().all(|id| (100..200).contains(id)), "{ids:?}");
    let seq = &l["sequence_latency_us"];
    assert!(u(&seq["p50"]) >= u(&l["latency_us"]["p50"]), "{l:#}");

    let (code, _, err) = tritonctl()
        .arg("perf")
        .args(["-m", "m", "-u", &r.url(), "-b", "2"])
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 2);
    assert!(err.contains("-b 1"), "{err}");
}

#[test]
fn sequences_open_loop_one_step_in_flight() {
    let r = Responder::start(sequence_model());
    let (code, doc) = perf_json(&[
        "-m",
        "m",
        "-u",
        &r.url(),
        "--request-rate-range",
        "300",
        "--duration",
        "1",
        "--num-of-sequences",
        "3",
        "--sequence-length",
        "4",
    ]);
    assert_eq!(code, 0, "{doc:#} {:?}", r.bad());
    assert!(r.bad().is_empty(), "{:?}", r.bad());
    let l = &doc["levels"][0];
    assert_eq!(u(&l["errors"]), 0);
    assert!(u(&l["requests"]) >= 290, "{l:#}");
    assert_eq!(r.counters.live_sequences(), 0);
    assert!(r.counters.started.load(Ordering::SeqCst) >= 70);
    assert!(!l["sequence_latency_us"].is_null());
}

#[test]
fn warmup_is_not_measured_and_headers_are_sent() {
    let r = Responder::start(triton_like());
    let (code, doc) = perf_json(&[
        "-m",
        "m",
        "-u",
        &r.url(),
        "--warmup",
        "0.3",
        "--request-count",
        "20",
        "-H",
        "X-Test: yes",
    ]);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(u(&doc["levels"][0]["requests"]), 20);
    let served = r.counters.infer.load(Ordering::SeqCst);
    assert!(
        served > 40,
        "0.3 s of warmup sent only {} requests",
        served - 20
    );
    // every request (metadata, config, statistics, inference) had it
    assert!(r.counters.with_header.load(Ordering::SeqCst) >= served + 3);
}

#[test]
fn load_is_spread_over_several_servers() {
    let a = Responder::start(triton_like());
    let b = Responder::start(triton_like());
    let (ua, ub) = (a.url(), b.url());
    // closed loop: the two workers' connections go one to each server
    let (code, doc) = perf_json(&[
        "-m",
        "m",
        "-u",
        &ua,
        "-u",
        &ub,
        "--concurrency-range",
        "2",
        "--request-count",
        "100",
    ]);
    assert_eq!(code, 0, "{doc:#}");
    assert!(a.bad().is_empty() && b.bad().is_empty());
    assert_eq!(doc["urls"], json!([ua, ub]));
    let l = &doc["levels"][0];
    assert_eq!(u(&l["requests"]), 100, "one row for both servers");
    let t = l["targets"].as_array().unwrap();
    assert_eq!(t.len(), 2);
    assert_eq!(t[0]["url"], ua.as_str());
    assert_eq!(u(&t[0]["requests"]) + u(&t[1]["requests"]), 100);
    let (na, nb) = (
        a.counters.infer.load(Ordering::SeqCst),
        b.counters.infer.load(Ordering::SeqCst),
    );
    // each worker is bound to one server, so both get requests; the split
    // follows each server's speed, which a loaded test machine skews
    assert!(na >= 1 && nb >= 1, "{na} and {nb}");
    // both servers have the statistics extension
    assert!(!l["server"].is_null(), "{l:#}");

    // open loop: the sends alternate
    let a = Responder::start(triton_like());
    let b = Responder::start(triton_like());
    let (code, doc) = perf_json(&[
        "-m",
        "m",
        "-u",
        &a.url(),
        "-u",
        &b.url(),
        "--request-rate-range",
        "200",
        "--request-count",
        "61",
    ]);
    assert_eq!(code, 0, "{doc:#}");
    let t = doc["levels"][0]["targets"].as_array().unwrap().clone();
    assert_eq!((u(&t[0]["requests"]), u(&t[1]["requests"])), (31, 30));
    assert_eq!(a.counters.infer.load(Ordering::SeqCst), 31);
    assert_eq!(b.counters.infer.load(Ordering::SeqCst), 30);

    // a second server without the model is refused before the load
    let port = crate::common::closed_port();
    let (code, _, err) = tritonctl()
        .arg("perf")
        .args([
            "-m",
            "m",
            "-u",
            &a.url(),
            "-u",
            &format!("127.0.0.1:{port}"),
            "--request-count",
            "5",
        ])
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&port.to_string()), "{err}");
}

#[test]
fn request_intervals_file_is_replayed() {
    let r = Responder::start(triton_like());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("gaps.txt");
    // 20 ms, then 60 ms, then again from the top
    std::fs::write(&file, "20000\n60000\n").unwrap();
    let (code, doc) = perf_json(&[
        "-m",
        "m",
        "-u",
        &r.url(),
        "--request-intervals",
        file.to_str().unwrap(),
        "--request-count",
        "9",
    ]);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(doc["mode"], "request_intervals");
    let l = &doc["levels"][0];
    assert_eq!(u(&l["requests"]), 9);
    // the mean gap is 40 ms
    assert!(
        (l["request_rate"].as_f64().unwrap() - 25.0).abs() < 1e-6,
        "{l:#}"
    );
    let arrivals = r.counters.arrivals.lock().unwrap().clone();
    assert_eq!(arrivals.len(), 9, "exactly the measured requests");
    let gaps: Vec<f64> = arrivals
        .windows(2)
        .map(|w| (w[1] - w[0]).as_secs_f64() * 1000.0)
        .collect();
    for (i, g) in gaps.iter().enumerate() {
        let want = if i % 2 == 0 { 20.0 } else { 60.0 };
        assert!(
            (g - want).abs() < 12.0,
            "gap {i}: {g:.1} ms, want {want}: {gaps:?}"
        );
    }

    let bad = dir.path().join("bad.txt");
    std::fs::write(&bad, "100\nsoon\n").unwrap();
    let (code, _, err) = tritonctl()
        .arg("perf")
        .args([
            "-m",
            "m",
            "-u",
            &r.url(),
            "--request-intervals",
            bad.to_str().unwrap(),
        ])
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 2);
    assert!(err.contains("bad.txt:2"), "{err}");
}

#[test]
fn input_data_file_values_are_sent_in_order() {
    let r = Responder::start(triton_like());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data.json");
    // three forms: a flat list, content with a shape, raw base64 (9..12 as
    // little-endian FP32)
    std::fs::write(
        &file,
        r#"{"data": [{"X": [1, 2, 3, 4]},
                     {"X": {"content": [[5, 6], [7, 8]], "shape": [4]}},
                     {"X": {"b64": "AAAQQQAAIEEAADBBAABAQQ=="}}]}"#,
    )
    .unwrap();
    let f = file.to_str().unwrap();
    let (code, doc) = perf_json(&[
        "-m",
        "m",
        "-u",
        &r.url(),
        "--input-data",
        f,
        "--request-count",
        "6",
    ]);
    assert_eq!(code, 0, "{doc:#} {:?}", r.bad());
    let e = [
        vec![1.0, 2.0, 3.0, 4.0],
        vec![5.0, 6.0, 7.0, 8.0],
        vec![9.0, 10.0, 11.0, 12.0],
    ];
    let want: Vec<Vec<f32>> = (0..6).map(|i| e[i % 3].clone()).collect();
    assert_eq!(*r.counters.x_values.lock().unwrap(), want);

    // as JSON tensors, batch 2: each entry twice per request
    let r = Responder::start(triton_like());
    let (code, doc) = perf_json(&[
        "-m",
        "m",
        "-u",
        &r.url(),
        "--input-data",
        f,
        "--request-count",
        "3",
        "-b",
        "2",
        "--input-tensor-format",
        "json",
    ]);
    assert_eq!(code, 0, "{doc:#} {:?}", r.bad());
    let want: Vec<Vec<f32>> = e.iter().map(|v| v.repeat(2)).collect();
    assert_eq!(*r.counters.x_values.lock().unwrap(), want);

    // errors name the file and the entry
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"data": [{"X": [1, 2, 3, 4]}, {"X": [1, 2, 3]}]}"#).unwrap();
    let (code, _, err) = tritonctl()
        .arg("perf")
        .args([
            "-m",
            "m",
            "-u",
            &r.url(),
            "--input-data",
            bad.to_str().unwrap(),
            "--request-count",
            "2",
        ])
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("bad.json: data[1]") && err.contains("3 values"),
        "{err}"
    );
    std::fs::write(&bad, r#"{"data": [{"Q": [1, 2, 3, 4]}]}"#).unwrap();
    let (code, _, err) = tritonctl()
        .arg("perf")
        .args([
            "-m",
            "m",
            "-u",
            &r.url(),
            "--input-data",
            bad.to_str().unwrap(),
            "--request-count",
            "2",
        ])
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("data[0]") && err.contains("'Q'"), "{err}");
    std::fs::write(&bad, r#"{"inputs": []}"#).unwrap();
    let (code, _, err) = tritonctl()
        .arg("perf")
        .args([
            "-m",
            "m",
            "-u",
            &r.url(),
            "--input-data",
            bad.to_str().unwrap(),
        ])
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("bad.json") && err.contains("\"data\""),
        "{err}"
    );
}

#[test]
fn input_data_streams_are_one_per_sequence() {
    let r = Responder::start(sequence_model());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("streams.json");
    let v = |x: f32| json!({"X": [x, x, x, x]});
    std::fs::write(
        &file,
        json!({"data": [[v(1.0), v(2.0), v(3.0)], [v(10.0), v(20.0)]]}).to_string(),
    )
    .unwrap();
    let (code, doc) = perf_json(&[
        "-m",
        "m",
        "-u",
        &r.url(),
        "--input-data",
        file.to_str().unwrap(),
        "--request-count",
        "10",
    ]);
    assert_eq!(code, 0, "{doc:#} {:?}", r.bad());
    assert!(r.bad().is_empty(), "{:?}", r.bad());
    // without --sequence-length a sequence is as long as its stream; the
    // streams take turns
    assert_eq!(*r.counters.lengths.lock().unwrap(), vec![3, 2, 3, 2]);
    let firsts: Vec<f32> = r
        .counters
        .x_values
        .lock()
        .unwrap()
        .iter()
        .map(|x| x[0])
        .collect();
    assert_eq!(
        firsts,
        vec![1.0, 2.0, 3.0, 10.0, 20.0, 1.0, 2.0, 3.0, 10.0, 20.0]
    );
}

#[test]
fn sequences_with_string_ids_and_varied_lengths() {
    let r = Responder::start(sequence_model());
    let (code, doc) = perf_json(&[
        "-m",
        "m",
        "-u",
        &r.url(),
        "--concurrency-range",
        "2",
        "--request-count",
        "300",
        "--sequence-length",
        "10",
        "--sequence-length-variation",
        "50",
        "--sequence-id-prefix",
        "run7-",
        "--sequence-id-range",
        "1:1000000",
    ]);
    assert_eq!(code, 0, "{doc:#} {:?}", r.bad());
    // the responder refuses two steps of one sequence in flight together
    assert!(r.bad().is_empty(), "{:?}", r.bad());
    let c = &r.counters;
    let served = c.infer.load(Ordering::SeqCst);
    assert_eq!(
        c.string_ids.load(Ordering::SeqCst),
        served,
        "every id a string"
    );
    let seqs = c.sequences.lock().unwrap();
    assert!(
        seqs.keys().all(|k| k.starts_with("run7-")),
        "{:?}",
        seqs.keys()
    );
    // unique: as many ids as sequences started
    assert_eq!(seqs.len() as u64, c.started.load(Ordering::SeqCst));
    drop(seqs);
    assert_eq!(c.live_sequences(), 0);
    let lengths = c.lengths.lock().unwrap().clone();
    assert!(lengths.iter().all(|n| *n <= 15), "{lengths:?}");
    // only the 2 sequences cut off at the end may be shorter than 5
    assert!(
        lengths.iter().filter(|n| **n < 5).count() <= 2,
        "{lengths:?}"
    );
    let distinct: std::collections::BTreeSet<u64> = lengths.iter().copied().collect();
    assert!(distinct.len() >= 4, "lengths do not vary: {lengths:?}");
    let l = &doc["levels"][0];
    let seq = &l["sequence_latency_us"];
    assert!(u(&seq["p50"]) > u(&l["latency_us"]["p50"]) * 3, "{l:#}");

    // no variation: every complete sequence has exactly the length
    let r = Responder::start(sequence_model());
    let (code, _) = perf_json(&[
        "-m",
        "m",
        "-u",
        &r.url(),
        "--request-count",
        "40",
        "--sequence-length",
        "4",
        "--sequence-length-variation",
        "0",
    ]);
    assert_eq!(code, 0);
    assert_eq!(*r.counters.lengths.lock().unwrap(), vec![4; 10]);
    assert_eq!(r.counters.string_ids.load(Ordering::SeqCst), 0);
}

#[test]
fn stability_windows() {
    // every request takes 5 ms: stable from the first 3 windows on
    let r = Responder::start(Behaviour {
        delay: Some(Duration::from_millis(5)),
        ..triton_like()
    });
    let (code, doc) = perf_json(&[
        "-m",
        "m",
        "-u",
        &r.url(),
        "-p",
        "200",
        "--stability-percentage",
        "30",
    ]);
    assert_eq!(code, 0, "{doc:#}");
    let l = &doc["levels"][0];
    assert_eq!(l["stable"], true, "{l:#}");
    assert_eq!(u(&l["windows"]), 3, "{l:#}");
    assert!((l["duration_s"].as_f64().unwrap() - 0.6).abs() < 1e-9);
    // about 600 ms / 5 ms of requests in the 3 windows
    let n = u(&l["requests"]);
    assert!((40..=125).contains(&n), "{n}");

    // every request slower than the one before: never stable
    let r = Responder::start(Behaviour {
        slowdown: Some(Duration::from_micros(300)),
        ..triton_like()
    });
    let (code, out, err) = tritonctl()
        .arg("perf")
        .args([
            "-m",
            "m",
            "-u",
            &r.url(),
            "-p",
            "150",
            "--max-trials",
            "4",
            "--format",
            "json",
        ])
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 0, "{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_matches_schema(&doc);
    let l = &doc["levels"][0];
    assert_eq!(l["stable"], false, "{l:#}");
    assert_eq!(u(&l["windows"]), 4);
    assert!(err.contains("did not stabilize"), "{err}");

    // a fixed window says nothing about stability
    let (_, doc) = perf_json(&["-m", "m", "-u", &r.url(), "--request-count", "3"]);
    assert!(doc["levels"][0]["stable"].is_null());
    assert_eq!(u(&doc["levels"][0]["windows"]), 1);
}

#[test]
fn progress_only_on_a_terminal_or_when_forced() {
    let r = Responder::start(triton_like());
    let url = r.url();
    let args = [
        "-m",
        "m",
        "-u",
        url.as_str(),
        "--concurrency-range",
        "1:2",
        "--duration",
        "0.4",
    ];
    // standard error is a pipe here
    let (code, _, err) = tritonctl()
        .arg("perf")
        .args(args)
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 0);
    assert!(!err.contains("level 1"), "{err}");
    let mut a = args.to_vec();
    a.extend(["--progress", "always"]);
    let (code, doc) = perf_json(&a);
    assert_eq!(code, 0);
    assert_eq!(doc["levels"].as_array().unwrap().len(), 2);
    let (_, out, err) = tritonctl()
        .arg("perf")
        .args([a.as_slice(), &["--format", "json"]].concat())
        .timeout(HANG)
        .run()
        .parts();
    assert!(
        out.trim_start().starts_with('{') && !out.contains("level 1/2"),
        "{out}"
    );
    // on a pipe: a plain line per finished level, no escape sequences
    assert!(err.contains("perf: level 1 concurrency=1 done: "), "{err}");
    assert!(err.contains("perf: level 2 concurrency=2 done: "), "{err}");
    assert!(!err.contains('\r') && !err.contains('\u{1b}'), "{err:?}");
}

fn ensemble(p: Pipeline) -> Behaviour {
    Behaviour {
        ensemble: Some(p),
        ..triton_like()
    }
}

/// Checks the composing models' server times of a level against what the
/// responder reports for them: `(model, version)` in step order, each
/// with as many requests as the ensemble itself (every request passes
/// every step) and its own per-request times.
fn assert_composing(l: &Value, expected: &[(&str, &str)]) {
    let server = &l["server"];
    let steps = server["composing_models"]
        .as_array()
        .unwrap_or_else(|| panic!("no composing_models in {server:#}"));
    let got: Vec<(&str, &str)> = steps
        .iter()
        .map(|s| (s["model"].as_str().unwrap(), s["version"].as_str().unwrap()))
        .collect();
    assert_eq!(got, expected, "{server:#}");
    // the snapshots are taken before the load and after it ended (ends of
    // cut-off sequences included), so the server counted at least the
    // measured requests
    let requests = u(&server["requests"]);
    assert!(requests >= u(&l["requests"]), "{l:#}");
    // the ensemble's own statistics have no queue time; its steps' do
    assert_eq!(server["queue_us"], 0.0, "{server:#}");
    let infer: u64 = expected.iter().map(|(m, _)| step_cost(m).unwrap()[2]).sum();
    assert_eq!(
        server["compute_infer_us"].as_f64(),
        Some(infer as f64 / 1000.0)
    );
    for s in steps {
        let model = s["model"].as_str().unwrap();
        let [q, ci, cf, co] = step_cost(model).unwrap();
        assert_eq!(u(&s["requests"]), requests, "{s:#}");
        assert_eq!(u(&s["inference_count"]), requests, "{s:#}");
        // the responder's ns per request, in µs
        assert_eq!(s["queue_us"].as_f64(), Some(q as f64 / 1000.0), "{s:#}");
        assert_eq!(
            s["compute_input_us"].as_f64(),
            Some(ci as f64 / 1000.0),
            "{s:#}"
        );
        assert_eq!(
            s["compute_infer_us"].as_f64(),
            Some(cf as f64 / 1000.0),
            "{s:#}"
        );
        assert_eq!(
            s["compute_output_us"].as_f64(),
            Some(co as f64 / 1000.0),
            "{s:#}"
        );
        // success is 700 ns more than queue and compute
        let overhead = s["overhead_us"].as_f64().unwrap();
        assert!((overhead - 0.7).abs() < 1e-9, "{s:#}");
        assert!(s.get("composing_models").is_none(), "{s:#}");
    }
}

/// Every sequence the responder saw started with START, ended with END,
/// and had no step in flight with another (the responder fails a request
/// that breaks this, so no error also shows it).
fn assert_sequences_complete(r: &Responder) {
    assert!(r.bad().is_empty(), "{:?}", r.bad());
    let c = &r.counters;
    assert_eq!(c.live_sequences(), 0);
    assert!(c.started.load(Ordering::SeqCst) > 0);
    assert_eq!(
        c.started.load(Ordering::SeqCst),
        c.ended.load(Ordering::SeqCst)
    );
    // every request carried a sequence id and flags
    assert_eq!(
        c.with_sequence_id.load(Ordering::SeqCst),
        c.infer.load(Ordering::SeqCst)
    );
    let steps: u64 = c.lengths.lock().unwrap().iter().sum();
    assert_eq!(steps, c.infer.load(Ordering::SeqCst));
}

#[test]
fn ensemble_with_a_stateful_step_sends_sequence_flags() {
    let r = Responder::start(ensemble(Pipeline::Stateful));
    let (code, doc) = perf_json(&[
        "-m",
        "m",
        "-u",
        &r.url(),
        "--concurrency-range",
        "3",
        "--request-count",
        "60",
        "--sequence-length",
        "4",
        "--sequence-length-variation",
        "0",
        "--sequence-id-range",
        "500:600",
    ]);
    assert_eq!(code, 0, "{doc:#} {:?}", r.bad());
    let l = &doc["levels"][0];
    assert_eq!(u(&l["requests"]), 60);
    assert_eq!(u(&l["errors"]), 0);
    assert_sequences_complete(&r);
    // --sequence-length and --sequence-id-range hold as for a sequence model
    let ids: Vec<u64> = r
        .counters
        .sequences
        .lock()
        .unwrap()
        .keys()
        .map(|k| k.parse().unwrap())
        .collect();
    assert!(ids.iter().all(|id| (500..600).contains(id)), "{ids:?}");
    let lengths = r.counters.lengths.lock().unwrap().clone();
    // only the 3 sequences cut off at the end may be shorter
    assert!(
        lengths.iter().filter(|&&n| n != 4).count() <= 3,
        "{lengths:?}"
    );
    assert!(l["sequence_latency_us"].is_object(), "{l:#}");
    assert_composing(l, &[("pre", "3"), ("seq", "1")]);
    // the composing configs were read once each, "pre" as the latest
    let asked = r.counters.discovery.lock().unwrap().clone();
    for p in ["/v2/models/pre/config", "/v2/models/seq/config"] {
        assert_eq!(asked.iter().filter(|a| *a == p).count(), 1, "{asked:?}");
    }

    // as for a sequence model, one step per request
    let (code, _, err) = tritonctl()
        .arg("perf")
        .args(["-m", "m", "-u", &r.url(), "-b", "2"])
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("ensemble 'm' has stateful steps ('seq')") && err.contains("-b 1"),
        "{err}"
    );
}

#[test]
fn ensemble_open_loop_and_table() {
    let r = Responder::start(ensemble(Pipeline::Stateful));
    let (code, out, err) = tritonctl()
        .arg("perf")
        .args([
            "-m",
            "m",
            "-u",
            &r.url(),
            "--request-rate-range",
            "200",
            "--duration",
            "0.5",
            "--num-of-sequences",
            "3",
            "--sequence-length",
            "5",
        ])
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 0, "{out}\n{err}\n{:?}", r.bad());
    assert_sequences_complete(&r);
    assert!(
        err.contains("note: ensemble 'm' has stateful steps ('seq', with a sequence batcher)"),
        "{err}"
    );
    assert!(out.contains("server time per composing model"), "{out}");
    let row = |model: &str| {
        out.lines()
            .find(|l| l.split_whitespace().any(|w| w == model))
            .unwrap_or_else(|| panic!("no row for {model}:\n{out}"))
            .split_whitespace()
            .filter(|w| w.chars().all(|c| c.is_ascii_digit() || c == '.'))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    // rate, version, requests, executions, queue, input, infer, output
    let seq = row("seq");
    assert_eq!(seq[1], "1", "{out}");
    assert_eq!(seq[2], seq[3], "seq runs alone: {out}");
    assert_eq!(&seq[4..], ["4", "0", "7", "0"], "{out}");
    let pre = row("pre");
    assert_eq!(pre[1], "3", "{out}");
    assert_eq!(&pre[4..], ["1", "0", "3", "0"], "{out}");
    // the main table's queue and compute for an ensemble are the sums
    // over its steps: queue 1 + 4 µs, compute 3.3 + 7.7 µs
    let head = out.lines().find(|l| l.contains("queue µs")).unwrap();
    let main = out
        .lines()
        .find(|l| l.trim_start().starts_with("│ 200") || l.trim_start().starts_with("200"))
        .unwrap_or_else(|| panic!("no level row:\n{out}"));
    let cells: Vec<&str> = main.split_whitespace().filter(|w| *w != "│").collect();
    assert!(head.contains("compute µs"), "{out}");
    assert_eq!(&cells[cells.len() - 2..], ["5", "11"], "{out}");
}

#[test]
fn nested_ensemble_with_a_stateful_step() {
    let r = Responder::start(ensemble(Pipeline::Nested));
    let (code, doc) = perf_json(&[
        "-m",
        "m",
        "-u",
        &r.url(),
        "--concurrency-range",
        "2",
        "--request-count",
        "40",
        "--sequence-length",
        "3",
    ]);
    assert_eq!(code, 0, "{doc:#} {:?}", r.bad());
    assert_sequences_complete(&r);
    let l = &doc["levels"][0];
    // the models that do the work, in step order through "inner"
    assert_composing(l, &[("pre", "3"), ("seq", "1"), ("post", "1")]);
    let asked = r.counters.discovery.lock().unwrap().clone();
    assert!(
        asked.contains(&"/v2/models/inner/config".to_string()),
        "{asked:?}"
    );
    assert!(
        asked.contains(&"/v2/models/post/versions/1/config".to_string()),
        "{asked:?}"
    );
    assert!(
        asked.contains(&"/v2/models/post/versions/1/stats".to_string()),
        "{asked:?}"
    );
    // a nested ensemble has no compute of its own: no statistics asked
    assert!(
        !asked.contains(&"/v2/models/inner/stats".to_string()),
        "{asked:?}"
    );
}

#[test]
fn ensemble_without_stateful_steps_sends_no_flags() {
    let r = Responder::start(ensemble(Pipeline::Stateless));
    let (code, out, err) = tritonctl()
        .arg("perf")
        .args([
            "-m",
            "m",
            "-u",
            &r.url(),
            "--concurrency-range",
            "2",
            "--request-count",
            "30",
            "-b",
            "2",
            "--format",
            "json",
        ])
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 0, "{out}\n{err}\n{:?}", r.bad());
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_matches_schema(&doc);
    assert!(r.bad().is_empty(), "{:?}", r.bad());
    assert_eq!(r.counters.with_sequence_id.load(Ordering::SeqCst), 0);
    assert!(!err.contains("stateful"), "{err}");
    let l = &doc["levels"][0];
    assert!(l["sequence_latency_us"].is_null(), "{l:#}");
    assert_composing(l, &[("pre", "3"), ("post", "1")]);
    // a plain model has no composing_models
    let r = Responder::start(triton_like());
    let (_, doc) = perf_json(&["-m", "m", "-u", &r.url(), "--request-count", "5"]);
    let server = &doc["levels"][0]["server"];
    assert!(
        server.is_object() && server.get("composing_models").is_none(),
        "{server:#}"
    );
}

#[test]
fn ensemble_step_without_config_is_exit_2() {
    let r = Responder::start(ensemble(Pipeline::Missing));
    let (code, _, err) = tritonctl()
        .arg("perf")
        .args(["-m", "m", "-u", &r.url(), "--request-count", "5"])
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("no config for model 'ghost' (a step of ensemble 'm')"),
        "{err}"
    );
    assert_eq!(r.counters.infer.load(Ordering::SeqCst), 0);
}

#[test]
fn an_endless_chain_of_ensembles_is_refused_after_256_lookups() {
    let r = Responder::start(ensemble(Pipeline::Chain));
    let (code, _, err) = tritonctl()
        .arg("perf")
        .args(["-m", "m", "-u", &r.url(), "--request-count", "5"])
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("ensemble 'm' has more than 256 composing models"),
        "{err}"
    );
    // m's config and 256 composing ones, nothing more, and no load
    let asked = r.counters.discovery.lock().unwrap().len();
    assert_eq!(asked, 257, "{err}");
    assert_eq!(r.counters.infer.load(Ordering::SeqCst), 0);
}

/// The lines of an `--export-requests` file.
fn export_lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn every_measured_request_is_exported_with_one_response() {
    let r = Responder::start(Behaviour {
        fail_500: vec![4],
        delay: Some(Duration::from_millis(2)),
        ..triton_like()
    });
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("requests.jsonl");
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64;
    let (code, doc) = perf_json(&[
        "-m",
        "m",
        "-u",
        &r.url(),
        "--concurrency-range",
        "1:2",
        "--request-count",
        "30",
        "--max-error-rate",
        "0.5",
        "--export-requests",
        export.to_str().unwrap(),
    ]);
    let after = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64;
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(doc["endpoint"], "infer");
    assert_eq!(doc["decoupled"], false);
    assert!(doc["output_tokens"].is_null());
    let lines = export_lines(&export);
    assert_eq!(lines.len(), 60, "30 measured requests per level");
    for (i, l) in doc["levels"].as_array().unwrap().iter().enumerate() {
        let mine: Vec<&Value> = lines.iter().filter(|x| x["level"] == i).collect();
        assert_eq!(mine.len(), 30);
        let failed = mine.iter().filter(|x| x["error"] == "http_500").count() as u64;
        assert_eq!(failed, u(&l["errors"]));
        assert!(failed > 0, "every tenth request fails");
        let mut latencies = Vec::new();
        for x in &mine {
            let (sched, send) = (u(&x["scheduled_us"]), u(&x["send_us"]));
            // closed loop: a request is due when it is sent
            assert_eq!(sched, send, "{x}");
            assert!(
                before <= send && send <= after,
                "{x}: not µs since the epoch"
            );
            let resp = x["response_us"].as_array().unwrap();
            if x["error"].is_null() {
                assert_eq!(resp.len(), 1, "{x}");
                let at = u(&resp[0]);
                assert!(send < at && at <= after, "{x}");
                latencies.push(at - send);
            } else {
                assert!(resp.is_empty(), "{x}");
            }
        }
        // one response per successful request: the first response is the
        // last, and there are no gaps
        let ok = u(&l["requests"]) - u(&l["errors"]);
        assert_eq!(u(&l["responses"]), ok, "{l:#}");
        assert_eq!(l["responses_per_request"], json!({"mean": 1.0, "max": 1}));
        assert_eq!(l["first_response_us"], l["latency_us"]);
        assert!(l["inter_response_us"].is_null());
        assert!(l["output_tokens_per_s"].is_null());
        assert_eq!(u(&l["cancelled"]), 0);
        // the exported times give the level's latency (within the
        // histogram's precision and a microsecond of rounding)
        let max = *latencies.iter().max().unwrap() as f64;
        let reported = u(&l["latency_us"]["max"]) as f64;
        assert!(
            (max - reported).abs() <= reported * 0.002 + 2.0,
            "{max} vs {reported}"
        );
    }
}

#[test]
fn open_loop_exports_the_scheduled_time() {
    // a stall: requests due during it are sent late, and their latency
    // counts from when they were due
    let r = Responder::start(Behaviour {
        stall: Some((20, Duration::from_millis(400))),
        ..triton_like()
    });
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("open.jsonl");
    let (code, doc) = perf_json(&[
        "-m",
        "m",
        "-u",
        &r.url(),
        "--request-rate-range",
        "100",
        "--request-count",
        "100",
        "--max-concurrency",
        "2",
        "--export-requests",
        export.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{doc:#}");
    let lines = export_lines(&export);
    assert_eq!(lines.len(), 100);
    let mut sched: Vec<u64> = lines.iter().map(|x| u(&x["scheduled_us"])).collect();
    sched.sort_unstable();
    // due every 10 ms (a constant schedule)
    for w in sched.windows(2) {
        let gap = w[1] - w[0];
        assert!((9_000..=11_000).contains(&gap), "gap {gap} µs");
    }
    let late = lines
        .iter()
        .filter(|x| u(&x["send_us"]) > u(&x["scheduled_us"]) + 50_000)
        .count();
    assert!(
        late >= 10,
        "{late} requests sent 50 ms late or more during the stall"
    );
    let worst = lines
        .iter()
        .map(|x| u(&x["response_us"][0]) - u(&x["scheduled_us"]))
        .max()
        .unwrap() as f64;
    let reported = u(&doc["levels"][0]["latency_us"]["max"]) as f64;
    assert!(
        (worst - reported).abs() <= reported * 0.002 + 2.0,
        "{worst} vs {reported}"
    );
    assert!(worst >= 300_000.0, "{worst}");
}

#[test]
fn export_file_is_written_whole_or_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("kept.jsonl");
    std::fs::write(&export, "earlier run\n").unwrap();
    // a run that cannot start leaves the file as it was, and no temporary
    // file behind
    let port = crate::common::closed_port();
    let (code, _, err) = tritonctl()
        .arg("perf")
        .args([
            "-m",
            "m",
            "-u",
            &format!("127.0.0.1:{port}"),
            "--export-requests",
            export.to_str().unwrap(),
        ])
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cannot connect"), "{err}");
    assert_eq!(std::fs::read_to_string(&export).unwrap(), "earlier run\n");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    // a directory that does not exist: exit 2, naming the file
    let r = Responder::start(triton_like());
    let missing = dir.path().join("no/such/dir/x.jsonl");
    let (code, _, err) = tritonctl()
        .arg("perf")
        .args([
            "-m",
            "m",
            "-u",
            &r.url(),
            "--request-count",
            "3",
            "--export-requests",
            missing.to_str().unwrap(),
        ])
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("x.jsonl"), "{err}");
}

#[test]
fn csv_adds_the_response_columns_at_the_end() {
    let r = Responder::start(triton_like());
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("out.csv");
    let (code, doc) = perf_json(&[
        "-m",
        "m",
        "-u",
        &r.url(),
        "--request-count",
        "20",
        "-f",
        csv.to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    let text = std::fs::read_to_string(&csv).unwrap();
    let head: Vec<&str> = text.lines().next().unwrap().split(',').collect();
    // perf_analyzer's columns first, as Model Analyzer reads them
    assert_eq!(head[0], "Concurrency");
    assert_eq!(head[15], "response wait");
    assert_eq!(head[16], "Responses");
    assert_eq!(*head.last().unwrap(), "Cancelled");
    let mut lines = text.lines();
    lines.next();
    let row: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(row.len(), head.len());
    let col = |name: &str| row[head.iter().position(|h| *h == name).unwrap()];
    assert_eq!(col("Responses"), "20");
    assert_eq!(col("Responses/Request"), "1.00");
    let l = &doc["levels"][0];
    // the first response of a one-answer request is its latency (the
    // run's own JSON: a second run would measure other times)
    assert!(col("p50 first response").parse::<u64>().unwrap() > 0);
    assert_eq!(col("p50 inter response"), "", "no gaps with one response");
    assert_eq!(col("Output Tokens/Second"), "");
    assert_eq!(col("Cancelled"), "0");
    assert!(l["inter_response_us"].is_null());
}

#[test]
fn generative_flags_are_checked_before_any_load() {
    for (args, says) in [
        (vec!["--max-tokens", "5"], "--max-tokens"),
        (vec!["--prompt-words", "10"], "--prompt-words"),
        (
            vec!["--endpoint", "generate", "-i", "grpc"],
            "HTTP endpoint",
        ),
        (
            vec!["--endpoint", "openai-chat", "--prompt-words", "0"],
            "--prompt-words '0'",
        ),
        (
            vec!["--endpoint", "openai-chat", "--max-tokens", "0"],
            "--max-tokens",
        ),
        (vec!["--endpoint", "openai-chat", "-b", "2"], "-b 1"),
    ] {
        let mut a = vec!["perf", "-m", "m", "-u", "127.0.0.1:1"];
        a.extend(&args);
        let (code, _, err) = tritonctl().args(&a).timeout(HANG).run().parts();
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn protocol_is_case_insensitive_as_perf_analyzer_spells_it() {
    // perf_analyzer's documentation writes `-i gRPC` and `-i HTTP`
    let r = Responder::start(triton_like());
    let (code, doc) = perf_json(&[
        "-m",
        "m",
        "-u",
        &r.url(),
        "-i",
        "HTTP",
        "--request-count",
        "3",
    ]);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(u(&doc["levels"][0]["requests"]), 3, "{doc:#}");
    // gRPC is parsed as grpc: the check that needs gRPC speaks, not clap
    let (code, _, err) = tritonctl()
        .arg("perf")
        .args(["-m", "m", "-i", "gRPC", "--endpoint", "generate"])
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("leave out -i grpc"), "{err}");
}

/// A `tritonctl perf` run: exit status, standard output and error.
fn perf_run(args: &[&str]) -> (i32, String, String) {
    tritonctl()
        .arg("perf")
        .args(args)
        .timeout(HANG)
        .run()
        .parts()
}

#[test]
fn async_sync_and_max_threads_are_accepted_with_a_note() {
    let r = Responder::start(triton_like());
    let url = r.url();
    for extra in [
        vec!["-a"],
        vec!["--async"],
        vec!["--sync"],
        vec!["--max-threads", "4"],
    ] {
        let mut args = vec!["-m", "m", "-u", &url, "--request-count", "3"];
        args.extend(&extra);
        let (code, out, err) = perf_run(&args);
        assert_eq!(code, 0, "{extra:?}: {err}");
        assert!(out.contains("p99 µs"), "{extra:?}: {out}");
        let what = if extra[0] == "--max-threads" {
            "no thread per request"
        } else {
            "always asynchronous"
        };
        assert!(
            err.contains("note: ") && err.contains(what),
            "{extra:?}: {err}"
        );
    }
    // --sync and --async contradict each other, as in perf_analyzer
    let (code, _, err) = perf_run(&["-m", "m", "-u", &url, "-a", "--sync"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = perf_run(&["-m", "m", "-u", &url, "--max-threads", "0"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn measurement_modes_time_and_count_windows() {
    let r = Responder::start(Behaviour {
        delay: Some(Duration::from_millis(5)),
        ..triton_like()
    });
    let (code, doc) = perf_json(&[
        "-m",
        "m",
        "-u",
        &r.url(),
        "-p",
        "200",
        "--stability-percentage",
        "30",
        "--measurement-mode",
        "time_windows",
    ]);
    assert_eq!(code, 0, "{doc:#}");
    let l = &doc["levels"][0];
    assert_eq!(l["stable"], true, "{l:#}");
    assert_eq!(u(&l["windows"]), 3, "{l:#}");
    assert!((l["duration_s"].as_f64().unwrap() - 0.6).abs() < 1e-9);

    // count windows: each ends when it has 300 finished requests (at least
    // 1.5 s at 5 ms a request, one at a time), the last 3 are reported
    let (code, doc) = perf_json(&[
        "-m",
        "m",
        "-u",
        &r.url(),
        "--stability-percentage",
        "30",
        "--measurement-mode",
        "count_windows",
        "--measurement-request-count",
        "300",
    ]);
    assert_eq!(code, 0, "{doc:#}");
    let l = &doc["levels"][0];
    assert_eq!(l["stable"], true, "{l:#}");
    assert_eq!(u(&l["windows"]), 3, "{l:#}");
    let n = u(&l["requests"]);
    let d = l["duration_s"].as_f64().unwrap();
    assert!(n >= 900, "{l:#}");
    assert!(d >= 0.005 * n as f64, "{l:#}");
    // the windows' own lengths: throughput is requests over their sum
    let tput = l["throughput_per_s"].as_f64().unwrap();
    assert!((tput - n as f64 / d).abs() <= tput * 1e-6, "{l:#}");
    // few requests: the window lasts perf_analyzer's 1 s all the same
    let (code, doc) = perf_json(&[
        "-m",
        "m",
        "-u",
        &r.url(),
        "--stability-percentage",
        "30",
        "--measurement-mode",
        "count_windows",
        "--measurement-request-count",
        "5",
    ]);
    assert_eq!(code, 0, "{doc:#}");
    let l = &doc["levels"][0];
    assert_eq!(u(&l["windows"]), 3, "{l:#}");
    let d = l["duration_s"].as_f64().unwrap();
    assert!((3.0..3.5).contains(&d), "{l:#}");
    assert!(u(&l["requests"]) > 3 * 5 * 10, "{l:#}");

    // the request count needs count windows; count windows are stability
    // windows; a mode that does not exist is a usage error
    for args in [
        vec!["--measurement-request-count", "50"],
        vec![
            "--measurement-mode",
            "count_windows",
            "--measurement-request-count",
            "0",
        ],
        vec![
            "--measurement-mode",
            "count_windows",
            "--request-count",
            "5",
        ],
        vec!["--measurement-mode", "windows"],
    ] {
        let mut a = vec!["-m", "m", "-u", "127.0.0.1:1"];
        a.extend(&args);
        let (code, _, err) = perf_run(&a);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.starts_with("error:"), "{args:?}: {err}");
    }
}

#[test]
fn percentile_is_shown_in_the_table_and_checked() {
    let r = Responder::start(Behaviour {
        delay: Some(Duration::from_millis(2)),
        ..triton_like()
    });
    let (code, out, err) = perf_run(&[
        "-m",
        "m",
        "-u",
        &r.url(),
        "-p",
        "200",
        "--stability-percentage",
        "50",
        "--percentile",
        "97",
    ]);
    assert_eq!(code, 0, "{err}");
    let head = out
        .lines()
        .find(|l| l.contains("p50 µs"))
        .unwrap_or_default();
    assert!(head.contains("p97 µs"), "{out}");
    // without --percentile there is no such column
    let (code, out, _) = perf_run(&["-m", "m", "-u", &r.url(), "--request-count", "5"]);
    assert_eq!(code, 0);
    assert!(!out.contains("p97"), "{out}");
    for p in ["0", "101", "x"] {
        let (code, _, err) = perf_run(&["-m", "m", "-u", &r.url(), "--percentile", p]);
        assert_eq!(code, 2, "{p}: {err}");
    }
}

#[test]
fn profile_export_file_is_export_requests() {
    let r = Responder::start(triton_like());
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("profile.jsonl");
    let (code, doc) = perf_json(&[
        "-m",
        "m",
        "-u",
        &r.url(),
        "--request-count",
        "7",
        "--profile-export-file",
        export.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{doc:#}");
    let lines = export_lines(&export);
    assert_eq!(lines.len(), 7);
    assert!(lines
        .iter()
        .all(|l| l["level"] == 0 && l["error"].is_null()));
}

/// The perf_analyzer command lines of
/// `testdata/perf-analyzer-command-lines.txt` (shared with
/// scripts/perf-harness/run, which runs them against real Triton).
fn perf_analyzer_command_lines() -> Vec<String> {
    let path = crate_root().join("testdata/perf-analyzer-command-lines.txt");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// How many levels `--concurrency-range START[:END[:STEP]]` has (1 without
/// it).
fn levels_of(line: &str) -> usize {
    let words: Vec<&str> = line.split(' ').collect();
    let Some(i) = words.iter().position(|w| *w == "--concurrency-range") else {
        return 1;
    };
    let n: Vec<usize> = words[i + 1]
        .split(':')
        .map(|n| n.parse().unwrap())
        .collect();
    match n[..] {
        [_] => 1,
        [a, b] => b - a + 1,
        [a, b, s] => (b - a) / s + 1,
        _ => panic!("{line}"),
    }
}

#[test]
fn perf_analyzer_command_lines_run_unchanged() {
    // perf_analyzer's command lines with their own spellings, over HTTP
    // against the responder and over gRPC against the gRPC server
    let r = Responder::start(Behaviour {
        delay: Some(Duration::from_millis(3)),
        ..triton_like()
    });
    let g = crate::perf_grpc::Server::start(Default::default());
    let lines = perf_analyzer_command_lines();
    assert!(lines.len() >= 4, "{lines:?}");
    for line in &lines {
        let grpc = line.to_ascii_lowercase().contains("-i grpc");
        let url = if grpc { g.url() } else { r.url() };
        let args: Vec<&str> = line
            .split(' ')
            .map(|a| match a {
                "URL" => url.as_str(),
                "MODEL" => "m",
                a => a,
            })
            .collect();
        let (code, out, err) = perf_run(&args);
        assert_eq!(code, 0, "{line}: {err}");
        let rows: Vec<&str> = out
            .lines()
            .filter(|l| {
                l.trim_start_matches(['│', ' '])
                    .starts_with(|c: char| c.is_ascii_digit())
            })
            .collect();
        assert_eq!(rows.len(), levels_of(line), "{line}:\n{out}");
        // every row measured requests and no errors
        for row in rows {
            // the table has no inner borders: cells are separated by blanks
            let cells: Vec<&str> = row
                .split(|c: char| c == '│' || c.is_whitespace())
                .filter(|c| !c.is_empty())
                .collect();
            let requests: u64 = cells[1].parse().unwrap();
            assert!(requests > 0, "{line}: {row}");
            assert_eq!(cells[2], "0", "{line}: {row}");
        }
        if line.contains("--percentile 95") {
            // p95 is a column already: not shown twice
            let head = out.lines().find(|l| l.contains("p50 µs")).unwrap();
            assert_eq!(head.matches("p95 µs").count(), 1, "{out}");
        }
    }
    assert!(r.bad().is_empty(), "{:?}", r.bad());
    assert!(g.bad().is_empty(), "{:?}", g.bad());
}

#[test]
fn string_length_and_string_data_make_the_generated_strings() {
    let r = Responder::start(Behaviour {
        strings: true,
        ..triton_like()
    });
    let url = r.url();
    let sent = |args: &[&str]| -> Vec<Vec<String>> {
        r.counters.x_strings.lock().unwrap().clear();
        let mut a = vec!["-m", "m", "-u", &url, "--request-count", "2"];
        a.extend(args);
        let (code, doc) = perf_json(&a);
        assert_eq!(code, 0, "{args:?}: {doc:#}");
        assert!(r.counters.bad.lock().unwrap().is_empty());
        std::mem::take(&mut *r.counters.x_strings.lock().unwrap())
    };
    // perf_analyzer's default: 128 characters; 4 per request (shape [1, 4])
    for (args, len) in [(vec![], 128), (vec!["--string-length", "5"], 5)] {
        for json in [false, true] {
            let mut a = args.clone();
            if json {
                a.extend(["--input-tensor-format", "json"]);
            }
            let got = sent(&a);
            assert_eq!(got.len(), 2, "{a:?}");
            for s in got.iter().flatten() {
                assert_eq!(s.len(), len, "{a:?}: {s}");
                assert!(s.bytes().all(|b| b.is_ascii_lowercase()), "{s}");
            }
        }
    }
    // --string-data: that text in every element, over the wire either way
    for format in ["binary", "json"] {
        let got = sent(&[
            "--string-data",
            "grüße \"x\"",
            "--string-length",
            "3",
            "--input-tensor-format",
            format,
        ]);
        assert_eq!(got, vec![vec!["grüße \"x\"".to_string(); 4]; 2], "{format}");
    }
    // the size check counts the strings' length
    let (code, _, err) = perf_run(&[
        "-m",
        "m",
        "-u",
        &url,
        "--string-length",
        "1000",
        "--max-input-bytes",
        "4000",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--max-input-bytes"), "{err}");
}

// ------------------------------------------------------------------ --plot

/// An element of a parsed SVG document.
#[derive(Debug, Default)]
struct Node {
    name: String,
    attrs: BTreeMap<String, String>,
    /// The text directly inside (entities resolved).
    text: String,
    children: Vec<Node>,
}

impl Node {
    /// Every element below (and including) this one, in document order.
    fn all(&self) -> Vec<&Node> {
        let mut out = vec![self];
        for c in &self.children {
            out.extend(c.all());
        }
        out
    }

    fn attr(&self, k: &str) -> &str {
        self.attrs
            .get(k)
            .unwrap_or_else(|| panic!("<{}> has no {k}: {:?}", self.name, self.attrs))
    }

    fn class(&self) -> &str {
        self.attrs.get("class").map_or("", String::as_str)
    }
}

/// Parses an XML document with quick-xml into a tree; any well-formedness
/// error fails the test.
fn parse_xml(text: &str) -> Node {
    use quick_xml::events::{BytesStart, Event};
    fn open(e: &BytesStart) -> Node {
        Node {
            name: String::from_utf8(e.name().as_ref().to_vec()).unwrap(),
            attrs: e
                .attributes()
                .map(|a| {
                    let a = a.expect("well-formed attribute");
                    (
                        String::from_utf8(a.key.as_ref().to_vec()).unwrap(),
                        a.unescape_value().expect("attribute value").into_owned(),
                    )
                })
                .collect(),
            ..Node::default()
        }
    }
    let mut reader = quick_xml::Reader::from_str(text);
    reader.config_mut().check_end_names = true;
    let mut stack: Vec<Node> = vec![Node::default()];
    loop {
        match reader
            .read_event()
            .unwrap_or_else(|e| panic!("not well-formed XML: {e}"))
        {
            Event::Start(e) => stack.push(open(&e)),
            Event::Empty(e) => {
                let n = open(&e);
                stack.last_mut().unwrap().children.push(n);
            }
            Event::End(_) => {
                let n = stack.pop().unwrap();
                stack.last_mut().expect("balanced").children.push(n);
            }
            Event::Text(t) => stack
                .last_mut()
                .unwrap()
                .text
                .push_str(&t.decode().unwrap()),
            Event::GeneralRef(r) => stack
                .last_mut()
                .unwrap()
                .text
                .push(crate::common::xml_entity(&r)),
            Event::Eof => break,
            _ => {}
        }
    }
    assert_eq!(stack.len(), 1, "unclosed elements");
    let mut doc = stack.pop().unwrap();
    assert_eq!(doc.children.len(), 1, "one root element");
    doc.children.pop().unwrap()
}

/// The points of a polyline, in order.
fn points(n: &Node) -> Vec<(f64, f64)> {
    n.attr("points")
        .split_whitespace()
        .map(|p| {
            let (x, y) = p.split_once(',').expect("x,y");
            (x.parse().unwrap(), y.parse().unwrap())
        })
        .collect()
}

/// The root of a `perf --plot` picture, checked to be an SVG document.
fn read_plot(path: &std::path::Path) -> Node {
    let text = std::fs::read_to_string(path).expect("the plot is written");
    let root = parse_xml(&text);
    assert_eq!(root.name, "svg");
    assert_eq!(root.attr("xmlns"), "http://www.w3.org/2000/svg");
    let vb: Vec<f64> = root
        .attr("viewBox")
        .split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect();
    assert_eq!(vb.len(), 4);
    assert!(vb[2] > 0.0 && vb[3] > 0.0, "{vb:?}");
    root
}

#[test]
fn plot_draws_throughput_against_latency_percentiles() {
    // requests queue behind one model lock: latency grows with
    // concurrency
    let r = Responder::start(Behaviour {
        delay: Some(Duration::from_millis(1)),
        alias: Some("m&x'y"),
        ..triton_like()
    });
    let dir = tempfile::tempdir().unwrap();
    let plot = dir.path().join("plot.svg");
    let csv = dir.path().join("plot.csv");
    let (code, doc) = perf_json(&[
        "-m",
        "m&x'y",
        "-u",
        &r.url(),
        "--concurrency-range",
        "1:3",
        "--request-count",
        "60",
        "--percentile",
        "75",
        "--plot",
        plot.to_str().unwrap(),
        "-f",
        csv.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{doc:#}");
    assert!(r.bad().is_empty(), "{:?}", r.bad());
    assert!(csv.is_file(), "--plot and --csv together");
    let levels = doc["levels"].as_array().unwrap();
    assert_eq!(levels.len(), 3);
    let root = read_plot(&plot);
    let raw = std::fs::read_to_string(&plot).unwrap();
    // the model name is escaped, and reads back as given
    assert!(raw.contains("m&amp;x&apos;y"), "{raw}");
    let all = root.all();
    let title = all.iter().find(|n| n.name == "title").unwrap();
    assert_eq!(title.text, "perf: m&x'y");

    let panel = all
        .iter()
        .find(|n| n.name == "g" && n.class() == "panel latency")
        .expect("the throughput-latency panel");
    let lines: Vec<&Node> = panel
        .all()
        .into_iter()
        .filter(|n| n.name == "polyline" && n.class() == "series")
        .collect();
    let names: Vec<&str> = lines.iter().map(|n| n.attr("data-percentile")).collect();
    assert_eq!(names, ["p50", "p75", "p90", "p95", "p99"]);
    let pts: Vec<Vec<(f64, f64)>> = lines.iter().map(|n| points(n)).collect();
    for p in &pts {
        assert_eq!(p.len(), levels.len(), "one point per level: {p:?}");
    }
    // x follows the report's throughput: levels ordered by throughput
    // have non-decreasing x, on every line
    let tput: Vec<f64> = levels
        .iter()
        .map(|l| l["throughput_per_s"].as_f64().unwrap())
        .collect();
    let mut order: Vec<usize> = (0..levels.len()).collect();
    order.sort_by(|&a, &b| tput[a].total_cmp(&tput[b]));
    for p in &pts {
        for w in order.windows(2) {
            assert!(p[w[0]].0 <= p[w[1]].0, "{tput:?} vs {p:?}");
        }
        assert!(p.iter().all(|&(x, _)| x > 0.0));
    }
    // a higher percentile is never below a lower one (y grows downwards),
    // and the p99 line is drawn from the report's p99 values: the level
    // with the highest p99 has the highest point
    for i in 0..levels.len() {
        for k in 1..pts.len() {
            assert!(pts[k][i].1 <= pts[k - 1][i].1, "level {i}: {pts:?}");
        }
    }
    let p99: Vec<u64> = levels.iter().map(|l| u(&l["latency_us"]["p99"])).collect();
    let highest = (0..3).max_by_key(|&i| p99[i]).unwrap();
    let top_y = pts[4].iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    assert_eq!(pts[4][highest].1, top_y, "{p99:?} {:?}", pts[4]);
    // every level is labelled with its concurrency, every line with its
    // percentile
    let labels: Vec<&str> = panel
        .all()
        .into_iter()
        .filter(|n| n.class() == "level-label")
        .map(|n| n.text.as_str())
        .collect();
    assert_eq!(labels, ["1", "2", "3"]);
    let series: Vec<&str> = panel
        .all()
        .into_iter()
        .filter(|n| n.class() == "series-label")
        .map(|n| n.text.as_str())
        .collect();
    assert_eq!(series, ["p50", "p75", "p90", "p95", "p99"]);
    let axis_titles: Vec<&str> = panel
        .all()
        .into_iter()
        .filter(|n| n.class() == "axis-title")
        .map(|n| n.text.as_str())
        .collect();
    assert_eq!(axis_titles, ["throughput (infer/s)", "latency (ms)"]);

    // one distribution per level, each rising from left to right
    let cdfs: Vec<&Node> = all
        .iter()
        .copied()
        .filter(|n| n.name == "polyline" && n.class() == "cdf")
        .collect();
    let which: Vec<&str> = cdfs.iter().map(|n| n.attr("data-level")).collect();
    assert_eq!(which, ["1", "2", "3"]);
    for c in &cdfs {
        let p = points(c);
        assert!(p.len() >= 10, "{p:?}");
        for w in p.windows(2) {
            assert!(w[0].0 <= w[1].0 && w[0].1 >= w[1].1, "{p:?}");
        }
    }
    // an HTTP infer run of single answers: no first-response panel
    assert!(!all.iter().any(|n| n.class() == "panel first-response"));
}

#[test]
fn plot_is_written_when_levels_fail_and_in_the_table_format() {
    let r = Responder::start(Behaviour {
        fail_500: (0..10).collect(),
        ..triton_like()
    });
    let dir = tempfile::tempdir().unwrap();
    let plot = dir.path().join("failed.svg");
    let (code, out, err) = perf_run(&[
        "-m",
        "m",
        "-u",
        &r.url(),
        "--concurrency-range",
        "1:2",
        "--request-count",
        "5",
        "--plot",
        plot.to_str().unwrap(),
    ]);
    // every request failed: above --max-error-rate, and still plotted
    assert_eq!(code, 1, "{err}");
    assert!(out.contains("p99 µs"), "{out}");
    let root = read_plot(&plot);
    let notes: Vec<&str> = root
        .all()
        .into_iter()
        .filter(|n| n.class() == "note")
        .map(|n| n.text.as_str())
        .collect();
    assert_eq!(
        notes,
        [
            "concurrency 1: no successful request of 5 (not drawn)",
            "concurrency 2: no successful request of 5 (not drawn)"
        ]
    );
    let lines = root
        .all()
        .into_iter()
        .filter(|n| n.name == "polyline")
        .map(points)
        .collect::<Vec<_>>();
    assert!(lines.iter().all(Vec::is_empty), "{lines:?}");
}

#[test]
fn plot_into_a_missing_directory_is_refused_before_the_load() {
    let r = Responder::start(triton_like());
    let dir = tempfile::tempdir().unwrap();
    let plot = dir.path().join("no-such-dir").join("p.svg");
    let (code, _, err) = perf_run(&[
        "-m",
        "m",
        "-u",
        &r.url(),
        "--request-count",
        "5",
        "--plot",
        plot.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--plot") && err.contains("no-such-dir") && err.contains("does not exist"),
        "{err}"
    );
    assert_eq!(r.counters.infer.load(Ordering::SeqCst), 0, "no load ran");
    // a directory is not a file to write
    let (code, _, err) = perf_run(&[
        "-m",
        "m",
        "-u",
        &r.url(),
        "--plot",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(r.counters.infer.load(Ordering::SeqCst), 0, "no load ran");
}

#[path = "perf_measure.rs"]
mod measure;

/// A responder that lists the system shared-memory extension.
fn with_shm(b: Behaviour) -> Behaviour {
    Behaviour {
        extensions: Some(vec!["binary_tensor_data", "system_shared_memory"]),
        ..b
    }
}

/// Every memory object the responder was given is gone and every region
/// was unregistered.
fn assert_no_shm_left(r: &Responder) {
    let c = &r.counters;
    assert!(
        c.regions.lock().unwrap().is_empty(),
        "still registered: {:?}",
        c.regions
    );
    assert_eq!(
        c.registered.load(Ordering::SeqCst),
        c.unregistered.load(Ordering::SeqCst)
    );
    for key in c.shm_keys.lock().unwrap().iter() {
        assert!(key.starts_with("/tritonctl_"), "{key}");
        let path = format!("/dev/shm{key}");
        assert!(!std::path::Path::new(&path).exists(), "{path} left behind");
    }
}

#[test]
fn shared_memory_system_carries_inputs_and_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data.json");
    std::fs::write(
        &file,
        r#"{"data": [{"X": [1, 2, 3, 4]}, {"X": [5, 6, 7, 8]}]}"#,
    )
    .unwrap();
    let f = file.to_str().unwrap();
    for (conc, batch) in [("1", "1"), ("3", "2")] {
        let r = Responder::start(with_shm(triton_like()));
        let (code, doc) = perf_json(&[
            "-m",
            "m",
            "-u",
            &r.url(),
            "--input-data",
            f,
            "--shared-memory",
            "system",
            "--concurrency-range",
            conc,
            "-b",
            batch,
            "--request-count",
            "20",
        ]);
        assert_eq!(code, 0, "{doc:#} {:?}", r.bad());
        let c = &r.counters;
        let n = c.infer.load(Ordering::SeqCst);
        // every request (the one before the load included) took its input
        // from shared memory and wrote its output there: no tensor bytes
        // in any request or answer
        assert!(n >= 21, "{n}");
        assert_eq!(c.shm_inputs.load(Ordering::SeqCst), n);
        assert_eq!(c.shm_outputs.load(Ordering::SeqCst), n);
        assert_eq!(c.binary.load(Ordering::SeqCst), 0);
        assert_eq!(c.json.load(Ordering::SeqCst), 0);
        // the bytes of --input-data, entry after entry, each copied for
        // the batch
        let b: usize = batch.parse().unwrap();
        let e = [vec![1.0, 2.0, 3.0, 4.0], vec![5.0, 6.0, 7.0, 8.0]];
        for v in c.x_values.lock().unwrap().iter() {
            assert!(
                e.iter().any(|want| *v == want.repeat(b)),
                "{v:?} is not an entry"
            );
        }
        if conc == "1" {
            // one request at a time: the one before the load (the first
            // entry), then the entries in the file's order
            let want: Vec<Vec<f32>> = std::iter::once(e[0].clone())
                .chain((0..n as usize - 1).map(|i| e[i % 2].clone()))
                .collect();
            assert_eq!(*c.x_values.lock().unwrap(), want);
        }
        // one input region, one output region per request in flight
        let conc_n: u64 = conc.parse().unwrap();
        assert_eq!(c.registered.load(Ordering::SeqCst), 1 + conc_n);
        let shm = &doc["shared_memory"];
        assert_eq!(shm["kind"], "system");
        assert_eq!(u(&shm["output_size"]), 102_400);
        assert_eq!(u(&shm["output_regions"]), conc_n);
        // two entries of 4 FP32 values per batch element, 64-byte aligned
        assert_eq!(u(&shm["input_bytes"]), 64 + 16 * b as u64);
        // each answered request's output (16 bytes per batch element, from
        // the config) read back; the request before the load is not read
        assert_eq!(u(&shm["output_bytes_read"]), (n - 1) * 16 * b as u64);
        assert_no_shm_left(&r);
    }
}

#[test]
fn shared_memory_output_too_small_is_refused_clearly() {
    // the config gives the output's size: refused before any region
    let r = Responder::start(with_shm(triton_like()));
    let (code, _, err) = perf_run(&[
        "-m",
        "m",
        "-u",
        &r.url(),
        "--shared-memory",
        "system",
        "--output-shared-memory-size",
        "20",
        "-b",
        "2",
        "--request-count",
        "5",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("output 'Y' takes 32 bytes at batch size 2")
            && err.contains("--output-shared-memory-size 20"),
        "{err}"
    );
    assert_eq!(r.counters.registered.load(Ordering::SeqCst), 0);
    // no config (a variable output dim): the server's refusal of the
    // first request is the error, and the regions are released
    let r = Responder::start(with_shm(Behaviour {
        x_shape: vec![-1],
        ..Behaviour::default()
    }));
    let (code, _, err) = perf_run(&[
        "-m",
        "m",
        "-u",
        &r.url(),
        "--shape",
        "X:4",
        "--shared-memory",
        "system",
        "--output-shared-memory-size",
        "8",
        "--request-count",
        "5",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("refused a request with its tensors in shared memory")
            && err.contains("should be at least 16 bytes")
            && err.contains("--output-shared-memory-size 8"),
        "{err}"
    );
    assert_eq!(r.counters.infer.load(Ordering::SeqCst), 1);
    assert!(r.counters.registered.load(Ordering::SeqCst) >= 2);
    assert_no_shm_left(&r);
}

#[test]
fn shared_memory_combinations_that_cannot_work_are_exit_2() {
    let r = Responder::start(triton_like());
    let url = r.url();
    // a server without the extension
    let r2 = Responder::start(Behaviour {
        extensions: Some(vec!["binary_tensor_data"]),
        ..triton_like()
    });
    let url2 = r2.url();
    let cases: [(&str, &[&str], &str); 5] = [
        (
            &url,
            &["--shared-memory", "system", "--endpoint", "generate"],
            "leave out --endpoint generate",
        ),
        (
            &url,
            &[
                "--shared-memory",
                "system",
                "--output-shared-memory-size",
                "0",
            ],
            "at least 1",
        ),
        (&url, &["--shared-memory", "gpu"], "invalid value 'gpu'"),
        (
            &url,
            &["--shared-memory", "CUDA"],
            "--shared-memory cuda needs a CUDA GPU and driver on this host",
        ),
        (
            &url2,
            &["--shared-memory", "system"],
            "does not list the system_shared_memory extension",
        ),
    ];
    for (at, extra, want) in cases {
        let mut args = vec!["perf", "-m", "m", "-u", at, "--request-count", "2"];
        args.extend_from_slice(extra);
        let (code, _, err) = tritonctl()
            .args(&args)
            .env("TRITONCTL_NO_CUDA", "1")
            .timeout(HANG)
            .run()
            .parts();
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    assert_eq!(r.counters.infer.load(Ordering::SeqCst), 0);
    assert_eq!(r2.counters.registered.load(Ordering::SeqCst), 0);
}

#[test]
#[cfg(unix)]
fn shared_memory_is_released_when_perf_is_interrupted() {
    let r = Responder::start(with_shm(Behaviour {
        delay: Some(Duration::from_millis(5)),
        ..triton_like()
    }));
    let mut child = tritonctl()
        .args([
            "perf",
            "-m",
            "m",
            "-u",
            &r.url(),
            "--shared-memory",
            "system",
        ])
        .args([
            "--concurrency-range",
            "2",
            "--duration",
            "60",
            "--progress",
            "never",
        ])
        .command_with_default_signals()
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while r.counters.infer.load(Ordering::SeqCst) < 10 {
        assert!(start.elapsed() < HANG, "no load");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(r.counters.registered.load(Ordering::SeqCst), 3);
    send_signal(&child, "INT");
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{status:?}");
    assert_no_shm_left(&r);
}

/// Options of a `perf` run through the library, with its tensors in the
/// memory of `device` (`--shared-memory cuda` with a fake GPU: the
/// command line opens the real driver, which these machines lack):
/// `--input-data FILE`, `-b batch`, `--concurrency-range conc`,
/// `--request-count 20`.
pub(crate) fn cuda_options(
    url: &str,
    protocol: tritonctl::perf::client::Protocol,
    device: std::sync::Arc<dyn tritonctl::perf::device::Device>,
    data: &std::path::Path,
    conc: u64,
    batch: u64,
) -> tritonctl::perf::load::PerfOptions {
    use tritonctl::perf::generative::Api;
    use tritonctl::perf::load::{PerfOptions, Window};
    let (input_data, data_file, _) =
        tritonctl::perf::options::input_data(data.to_str().unwrap(), Api::Infer).unwrap();
    PerfOptions {
        model: "m".into(),
        version: None,
        url: url.into(),
        urls: vec![url.into()],
        headers: Vec::new(),
        protocol,
        levels: vec![tritonctl::perf::schedule::Level::Concurrency(conc)],
        distribution: tritonctl::perf::schedule::Distribution::Constant,
        intervals: None,
        seed: 1,
        shard: None,
        start_at: None,
        max_concurrency: 16,
        window: Window::Count(20),
        percentile: None,
        strings: tritonctl::perf::inputs::Strings::default(),
        warmup: Duration::ZERO,
        timeout: Duration::from_secs(30),
        max_response_bytes: None,
        max_input_bytes: 1 << 30,
        input_data,
        data_file,
        shapes: Vec::new(),
        batch,
        binary_inputs: true,
        binary_outputs: true,
        tensor_formats_given: (false, false),
        batched: false,
        sequence_length: None,
        sequence_length_variation: 0.0,
        sequence_id_prefix: None,
        sequence_ids: (1, 1 << 20),
        num_sequences: 4,
        api: Api::Infer,
        prompts: None,
        prompt_words: None,
        max_tokens: None,
        shared_memory: tritonctl::perf::shm::SharedMemory::Cuda(device),
        output_shm_size: 102_400,
        tls: Default::default(),
        latency_threshold_ms: None,
        binary_search: None,
        metrics: None,
    }
}

/// What a CUDA region registration must say: a 64-byte handle of live
/// device memory of the fake GPU, its device id, and the region's size.
fn check_cuda_registration(handle: &[u8], device_id: i64, byte_size: u64, want_device: i64) {
    assert_eq!(handle.len(), 64, "CUipcMemHandle is 64 bytes");
    assert_eq!(device_id, want_device);
    assert!(byte_size > 0);
}

#[test]
fn shared_memory_cuda_registers_device_memory_and_frees_it_after_unregistering() {
    use tritonctl::perf::device::fake::FakeDevice;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data.json");
    std::fs::write(
        &file,
        r#"{"data": [{"X": [1, 2, 3, 4]}, {"X": [5, 6, 7, 8]}]}"#,
    )
    .unwrap();
    for (conc, batch) in [(1u64, 1u64), (3, 2)] {
        let r = Responder::start(Behaviour {
            extensions: Some(vec!["binary_tensor_data", "cuda_shared_memory"]),
            ..triton_like()
        });
        let dev = FakeDevice::new(1);
        let opts = cuda_options(
            &r.url(),
            tritonctl::perf::client::Protocol::Http,
            dev.clone(),
            &file,
            conc,
            batch,
        );
        let report = tritonctl::perf::load::run(&opts, Default::default(), None)
            .unwrap_or_else(|e| panic!("{e} {:?}", r.bad()));
        assert!(r.bad().is_empty(), "{:?}", r.bad());
        let c = &r.counters;
        let n = c.infer.load(Ordering::SeqCst);
        // every request took its input from device memory and wrote its
        // output there: no tensor bytes in any request or answer
        assert!(n >= 21, "{n}");
        assert_eq!(c.shm_inputs.load(Ordering::SeqCst), n);
        assert_eq!(c.shm_outputs.load(Ordering::SeqCst), n);
        assert_eq!(c.binary.load(Ordering::SeqCst), 0);
        assert_eq!(c.json.load(Ordering::SeqCst), 0);
        // the bytes of --input-data, as the server read them through the
        // IPC handle
        let e = [vec![1.0, 2.0, 3.0, 4.0], vec![5.0, 6.0, 7.0, 8.0]];
        for v in c.x_values.lock().unwrap().iter() {
            assert!(
                e.iter().any(|want| *v == want.repeat(batch as usize)),
                "{v:?} is not an entry"
            );
        }
        // the registration bodies: the handle as base64 of 64 bytes, the
        // device, the region's size (the input region: two entries of
        // 16 bytes per batch element, 64-byte aligned; each output
        // region: --output-shared-memory-size for the one output)
        let regs = c.cuda_registrations.lock().unwrap().clone();
        assert_eq!(regs.len() as u64, 1 + conc, "{regs:?}");
        for v in &regs {
            let raw =
                tritonctl::inputs::codec::b64_decode(v["raw_handle"]["b64"].as_str().unwrap())
                    .unwrap();
            check_cuda_registration(
                &raw,
                v["device_id"].as_i64().unwrap(),
                v["byte_size"].as_u64().unwrap(),
                1,
            );
            assert_eq!(v.as_object().unwrap().len(), 3, "{v}");
        }
        let sizes: Vec<u64> = regs
            .iter()
            .map(|v| v["byte_size"].as_u64().unwrap())
            .collect();
        assert_eq!(sizes[0], 64 + 16 * batch);
        assert!(sizes[1..].iter().all(|s| *s == 102_400), "{sizes:?}");
        // every region unregistered (while its memory was alive: the
        // responder checks), then every allocation freed
        assert_eq!(c.cuda_unregistered.lock().unwrap().len() as u64, 1 + conc);
        assert!(c.regions.lock().unwrap().is_empty());
        assert_eq!(dev.allocated.load(Ordering::SeqCst), 1 + conc);
        assert_eq!(dev.freed.load(Ordering::SeqCst), 1 + conc);
        let shm = report.shared_memory.as_ref().unwrap();
        assert_eq!(shm.kind, "cuda");
        assert_eq!(shm.device_id, Some(1));
        assert_eq!(shm.output_regions, conc);
        assert_eq!(shm.input_bytes, 64 + 16 * batch);
        // each answered request's output read back from device memory;
        // the request before the load is not read
        assert_eq!(shm.output_bytes_read, (n - 1) * 16 * batch);
        let doc = serde_json::to_value(&report).unwrap();
        assert_matches_schema(&doc);
        assert_eq!(doc["shared_memory"]["device_id"], 1);
    }
}

#[test]
fn shared_memory_cuda_needs_the_servers_extension() {
    use tritonctl::perf::device::fake::FakeDevice;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data.json");
    std::fs::write(&file, r#"{"data": [{"X": [1, 2, 3, 4]}]}"#).unwrap();
    // a server with only the system extension
    let r = Responder::start(with_shm(triton_like()));
    let dev = FakeDevice::new(0);
    let opts = cuda_options(
        &r.url(),
        tritonctl::perf::client::Protocol::Http,
        dev.clone(),
        &file,
        1,
        1,
    );
    let e = tritonctl::perf::load::run(&opts, Default::default(), None).unwrap_err();
    assert!(
        e.to_string()
            .contains("does not list the cuda_shared_memory extension"),
        "{e}"
    );
    assert_eq!(r.counters.infer.load(Ordering::SeqCst), 0);
    assert_eq!(dev.allocated.load(Ordering::SeqCst), 0);
}

#[test]
fn shared_memory_cuda_without_a_driver_is_exit_2_before_any_request() {
    // this machine has no CUDA driver (TRITONCTL_NO_CUDA makes any other
    // machine answer the same)
    let r = Responder::start(Behaviour {
        extensions: Some(vec!["binary_tensor_data", "cuda_shared_memory"]),
        ..triton_like()
    });
    for extra in [&[][..], &["--shared-memory-device", "1"][..]] {
        let (code, _out, err) = tritonctl()
            .env("TRITONCTL_NO_CUDA", "1")
            .args(["perf", "-m", "m", "-u", &r.url(), "--shared-memory", "cuda"])
            .args(extra)
            .timeout(HANG)
            .run()
            .parts();
        assert_eq!(code, 2, "{err}");
        assert!(
            err.contains("--shared-memory cuda needs a CUDA GPU and driver on this host")
                && err.contains("use --shared-memory system"),
            "{err}"
        );
    }
    let (code, _out, err) = tritonctl()
        .args([
            "perf",
            "-m",
            "m",
            "-u",
            &r.url(),
            "--shared-memory-device",
            "0",
        ])
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--shared-memory-device 0 is for --shared-memory cuda"),
        "{err}"
    );
    // nothing was asked of the server
    assert_eq!(r.counters.infer.load(Ordering::SeqCst), 0);
    assert!(r.counters.discovery.lock().unwrap().is_empty());
}

#[test]
fn shared_memory_with_a_sequence_model() {
    // no request before the load (it would be a sequence step); every
    // step's input in shared memory, the flags as Triton accepts them
    let r = Responder::start(with_shm(sequence_model()));
    let (code, doc) = perf_json(&[
        "-m",
        "m",
        "-u",
        &r.url(),
        "--shared-memory",
        "system",
        "--concurrency-range",
        "2",
        "--request-count",
        "20",
        "--sequence-length",
        "4",
    ]);
    assert_eq!(code, 0, "{doc:#} {:?}", r.bad());
    let c = &r.counters;
    let n = c.infer.load(Ordering::SeqCst);
    assert!(n >= 20, "{n}");
    assert_eq!(c.shm_inputs.load(Ordering::SeqCst), n);
    assert_eq!(c.binary.load(Ordering::SeqCst), 0);
    assert_eq!(c.with_sequence_id.load(Ordering::SeqCst), n);
    assert_eq!(u(&doc["shared_memory"]["output_bytes_read"]), n * 16);
    assert_no_shm_left(&r);
}

/// Seconds since the Unix epoch, now.
fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// Runs `tritonctl perf` once per argument list, all at once (a process
/// each); their exit codes, JSON documents and standard errors.
fn perf_workers(runs: Vec<Vec<String>>) -> Vec<(i32, Value, String)> {
    let handles: Vec<_> = runs
        .into_iter()
        .map(|args| {
            std::thread::spawn(move || {
                let (code, out, err) = tritonctl()
                    .arg("perf")
                    .args(&args)
                    .args(["--format", "json"])
                    .timeout(HANG)
                    .run()
                    .parts();
                let v: Value = serde_json::from_str(&out)
                    .unwrap_or_else(|e| panic!("not JSON ({e}):\n{out}\nstderr:\n{err}"));
                (code, v, err)
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

/// The sequence ids of an export's requests.
fn exported_ids(lines: &[Value]) -> std::collections::BTreeSet<u64> {
    lines
        .iter()
        .map(|l| {
            l["sequence_id"]
                .as_u64()
                .unwrap_or_else(|| panic!("no sequence id: {l}"))
        })
        .collect()
}

#[test]
fn three_shards_started_together_send_one_open_loop_sequence_load() {
    let r = Responder::start(sequence_model());
    let dir = tempfile::tempdir().unwrap();
    // far enough ahead for three processes to start on a busy machine
    let start = (unix_now() + 3.0).floor();
    let start_at = format!("{start:.3}");
    let runs: Vec<Vec<String>> = (0..3)
        .map(|i| {
            let export = dir.path().join(format!("w{i}.jsonl"));
            [
                "-m",
                "m",
                "-u",
                &r.url(),
                "--request-rate-range",
                "300",
                "--duration",
                "2",
                "--num-of-sequences",
                "6",
                "--sequence-length",
                "4",
                "--shard",
                &format!("{i}/3"),
                "--start-at",
                &start_at,
                "--export-requests",
                export.to_str().unwrap(),
            ]
            .map(String::from)
            .to_vec()
        })
        .collect();
    let results = perf_workers(runs);
    // the responder refuses a step of a live sequence sent by another
    // worker (started again while live, two steps in flight): 0 errors
    // means no id was shared while live
    assert!(r.bad().is_empty(), "{:?}", r.bad());
    assert_eq!(r.counters.live_sequences(), 0);
    let mut total = 0;
    let mut latencies: Vec<u64> = Vec::new();
    let mut ids = Vec::new();
    for (i, (code, doc, err)) in results.iter().enumerate() {
        assert_eq!(*code, 0, "worker {i}: {doc:#}\n{err}");
        assert_matches_schema(doc);
        assert!(!err.contains("warning"), "worker {i}: {err}");
        assert_eq!(doc["shard"], json!({"index": i, "count": 3}));
        let l = &doc["levels"][0];
        // each worker reports its own share of the rate
        assert_eq!(l["request_rate"], json!(100.0));
        assert_eq!(u(&l["errors"]), 0, "worker {i}: {l:#}");
        // the full schedule's arrivals k/300 s with k < 600 fall in the 2 s
        // window; worker i has those with k mod 3 = i: exactly 200
        assert_eq!(u(&l["requests"]), 200, "worker {i}: {l:#}");
        total += u(&l["requests"]);
        let lines = export_lines(&dir.path().join(format!("w{i}.jsonl")));
        assert_eq!(lines.len(), 200);
        latencies.extend(lines.iter().filter(|x| x["error"].is_null()).map(|x| {
            u(x["response_us"].as_array().unwrap().last().unwrap()) - u(&x["scheduled_us"])
        }));
        // nothing was sent before --start-at; the first arrival, i/300 s
        // after it, was due promptly
        let start_us = (start * 1e6) as u64;
        let first_send = lines.iter().map(|x| u(&x["send_us"])).min().unwrap();
        let first_due = lines.iter().map(|x| u(&x["scheduled_us"])).min().unwrap();
        assert!(
            first_send >= start_us,
            "worker {i}: {first_send} < {start_us}"
        );
        assert!(
            first_due >= start_us,
            "worker {i}: {first_due} < {start_us}"
        );
        assert!(first_due - start_us < 500_000, "worker {i}: {first_due}");
        // its 2 of the 6 sequences live at once
        ids.push(exported_ids(&lines));
    }
    // as many as one worker at the full rate sends in the window
    assert_eq!(total, 600);
    // perf merge reads the shards back as one load
    let files: Vec<std::path::PathBuf> = results
        .iter()
        .enumerate()
        .map(|(i, (_, doc, _))| {
            let f = dir.path().join(format!("w{i}.json"));
            std::fs::write(&f, doc.to_string()).unwrap();
            f
        })
        .collect();
    let (code, out, err) = tritonctl()
        .args(["perf", "merge", "--format", "json"])
        .args(&files)
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 0, "{err}");
    let merged: Value = serde_json::from_str(&out).unwrap();
    let l = &merged["levels"][0];
    assert_eq!(u(&l["requests"]), 600, "{l:#}");
    assert_eq!(u(&l["errors"]), 0);
    assert_eq!(l["request_rate"], json!(300.0), "{l:#}");
    let (code, alone) = perf_json(&[
        "-m",
        "m",
        "-u",
        &r.url(),
        "--request-rate-range",
        "300",
        "--duration",
        "2",
        "--num-of-sequences",
        "6",
        "--sequence-length",
        "4",
    ]);
    assert_eq!(code, 0, "{alone:#}");
    assert_eq!(u(&alone["levels"][0]["requests"]), total);
    // the merged rate is one worker's at the full rate (within 5 %)
    let (merged_rate, alone_rate) = (
        l["requests_per_s"].as_f64().unwrap(),
        alone["levels"][0]["requests_per_s"].as_f64().unwrap(),
    );
    assert!(
        (merged_rate - alone_rate).abs() <= alone_rate * 0.05,
        "merged {merged_rate}/s, alone {alone_rate}/s"
    );
    // the merged p99 is the p99 of every exported request (nearest rank),
    // within the histogram's precision (3 significant digits: a value and
    // its bucket's highest equivalent differ by at most 1/1024 of it; the
    // export and the histogram read the clock separately)
    latencies.sort_unstable();
    let exported = latencies[(latencies.len() * 99).div_ceil(100) - 1];
    let p99 = u(&l["latency_us"]["p99"]);
    assert!(
        p99.abs_diff(exported) <= exported / 512 + 2,
        "merged p99 {p99} µs, exported requests' p99 {exported} µs"
    );
    for a in 0..3 {
        for b in a + 1..3 {
            assert!(
                ids[a].is_disjoint(&ids[b]),
                "workers {a} and {b} share ids: {:?}",
                ids[a].intersection(&ids[b]).collect::<Vec<_>>()
            );
        }
    }
}

#[test]
fn sharded_closed_loop_splits_concurrency_and_the_id_range() {
    let r = Responder::start(sequence_model());
    let dir = tempfile::tempdir().unwrap();
    let runs: Vec<Vec<String>> = (0..3)
        .map(|i| {
            let export = dir.path().join(format!("c{i}.jsonl"));
            [
                "-m",
                "m",
                "-u",
                &r.url(),
                "--concurrency-range",
                "7",
                "--request-count",
                "60",
                "--sequence-length",
                "3",
                "--sequence-id-range",
                "1000:1030",
                "--shard",
                &format!("{i}/3"),
                "--export-requests",
                export.to_str().unwrap(),
            ]
            .map(String::from)
            .to_vec()
        })
        .collect();
    let results = perf_workers(runs);
    assert!(r.bad().is_empty(), "{:?}", r.bad());
    assert_eq!(r.counters.live_sequences(), 0);
    let mut concurrency = 0;
    for (i, (code, doc, err)) in results.iter().enumerate() {
        assert_eq!(*code, 0, "worker {i}: {doc:#}\n{err}");
        let l = &doc["levels"][0];
        // 7 over 3: 3, 2, 2
        assert_eq!(u(&l["concurrency"]), [3, 2, 2][i], "worker {i}");
        concurrency += u(&l["concurrency"]);
        assert_eq!(u(&l["requests"]), 60);
        assert_eq!(u(&l["errors"]), 0);
        // 30 ids over 3 workers: 10 each, in order
        let lo = 1000 + 10 * i as u64;
        let ids = exported_ids(&export_lines(&dir.path().join(format!("c{i}.jsonl"))));
        assert!(
            ids.iter().all(|id| (lo..lo + 10).contains(id)),
            "worker {i}: {ids:?}"
        );
    }
    assert_eq!(concurrency, 7);
    // every id the server saw is in the range
    let seen: Vec<u64> = r
        .counters
        .sequences
        .lock()
        .unwrap()
        .keys()
        .map(|k| k.parse().unwrap())
        .collect();
    assert!(seen.iter().all(|id| (1000..1030).contains(id)), "{seen:?}");
}

#[test]
fn sharded_id_parts_follow_the_concurrency_shares() {
    let r = Responder::start(sequence_model());
    let dir = tempfile::tempdir().unwrap();
    let url = r.url();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "-m",
            "m",
            "-u",
            url.as_str(),
            "--request-count",
            "30",
            "--sequence-length",
            "3",
        ]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>();
        args.extend(extra.iter().map(|s| s.to_string()));
        tritonctl()
            .arg("perf")
            .args(&args)
            .timeout(HANG)
            .run()
            .parts()
    };
    // 8 ids (1:9) over 3: 3, 3, 2 ids, extras first as for concurrency;
    // shard 0 has ids 1..4 (a floor cut gave it 2 ids). Concurrency 3:
    // one live sequence per worker, so ids are reused in turn
    let export = dir.path().join("s0.jsonl");
    let (code, _, err) = run(&[
        "--concurrency-range",
        "3",
        "--sequence-id-range",
        "1:9",
        "--shard",
        "0/3",
        "--export-requests",
        export.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let ids = exported_ids(&export_lines(&export));
    assert_eq!(ids, (1..4).collect(), "{ids:?}");
    // concurrency 9: shard 2 keeps 3 sequences live on its 2 ids
    let (code, _, err) = run(&[
        "--concurrency-range",
        "9",
        "--sequence-id-range",
        "1:9",
        "--shard",
        "2/3",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--shard 2/3: this worker has 2 sequence ids but keeps 3"),
        "{err}"
    );
    // without --shard too
    let (code, _, err) = run(&["--concurrency-range", "4", "--sequence-id-range", "10:13"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("holds 3 ids but 4 sequences are live"),
        "{err}"
    );
    assert!(r.bad().is_empty(), "{:?}", r.bad());
}

#[test]
fn sharded_input_data_entries_are_divided() {
    let r = Responder::start(triton_like());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("entries.json");
    let v = |x: f32| json!({"X": [x, x, x, x]});
    std::fs::write(
        &file,
        json!({"data": [v(0.0), v(1.0), v(2.0), v(3.0), v(4.0)]}).to_string(),
    )
    .unwrap();
    let (code, doc) = perf_json(&[
        "-m",
        "m",
        "-u",
        &r.url(),
        "--input-data",
        file.to_str().unwrap(),
        "--concurrency-range",
        "2",
        "--request-count",
        "6",
        "--shard",
        "1/2",
    ]);
    assert_eq!(code, 0, "{doc:#} {:?}", r.bad());
    // shard 1 of 2 takes entries 1 and 3, in turn
    let mut firsts: Vec<f32> = r
        .counters
        .x_values
        .lock()
        .unwrap()
        .iter()
        .map(|x| x[0])
        .collect();
    assert!(firsts.len() >= 6, "{firsts:?}");
    firsts.sort_by(f32::total_cmp);
    firsts.dedup();
    assert_eq!(firsts, [1.0, 3.0]);
    assert_eq!(u(&doc["levels"][0]["concurrency"]), 1);
    // 5 entries cannot feed 6 shards: shard 5 has none
    let (code, _, err) = tritonctl()
        .arg("perf")
        .args(["-m", "m", "-u", &r.url(), "--input-data"])
        .arg(&file)
        .args(["--concurrency-range", "6", "--shard", "5/6"])
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--shard 5/6") && err.contains("has 5 entries, none for shard 5"),
        "{err}"
    );
}

#[test]
fn shard_table_line_and_a_start_at_in_the_past() {
    let r = Responder::start(triton_like());
    let (code, out, err) = tritonctl()
        .arg("perf")
        .args([
            "-m",
            "m",
            "-u",
            &r.url(),
            "--request-rate-range",
            "40",
            "--duration",
            "0.5",
            "--shard",
            "1/4",
            "--start-at",
            "2020-01-01T00:00:00Z",
        ])
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("\nshard 1 of 4 "), "{out}");
    assert!(
        err.contains("warning: --start-at 2020-01-01T00:00:00Z is ")
            && err.contains("s in the past; starting at once"),
        "{err}"
    );
    // the rate column holds its share, 40/4 per second
    assert!(out.contains("│ 10 "), "{out}");
    // without --shard the document says so
    let (_, doc) = perf_json(&["-m", "m", "-u", &r.url(), "--request-count", "1"]);
    assert!(doc["shard"].is_null(), "{doc:#}");
}

#[test]
fn bad_shard_and_start_at_values_are_exit_2() {
    // a closed port: these are refused before any connection
    let url = format!("127.0.0.1:{}", crate::common::closed_port());
    let tomorrow_and_more = format!("{:.0}", unix_now() + 25.0 * 3600.0);
    for (args, want) in [
        (vec!["--shard", "3/3"], "--shard '3/3' is not I/N"),
        (vec!["--shard", "0/0"], "--shard '0/0' is not I/N"),
        (vec!["--shard", "1"], "--shard '1' is not I/N"),
        (vec!["--shard", "0/10001"], "<= 10000"),
        (vec!["--shard=-1/2"], "--shard '-1/2' is not I/N"),
        (
            vec!["--shard", "0/4", "--concurrency-range", "2:8:2"],
            "concurrency 2 is below the 4 workers",
        ),
        (
            vec!["--shard", "1/2", "-l", "5"],
            "-l and --binary-search choose the next level",
        ),
        (
            vec![
                "--shard",
                "0/4",
                "--concurrency-range",
                "4",
                "--sequence-id-range",
                "10:13",
            ],
            "holds 3 ids, fewer than the 4 workers",
        ),
        (
            vec!["--start-at", "2026-02-29T10:00:00Z"],
            "2026-02 has no day 29",
        ),
        (vec!["--start-at", "2026-11-29T10:00:00"], "no offset"),
        (vec!["--start-at", "tomorrow"], "--start-at 'tomorrow'"),
        (vec!["--start-at", &tomorrow_and_more], "more than 24 hours"),
    ] {
        let (code, _, err) = tritonctl()
            .arg("perf")
            .args(["-m", "m", "-u", &url])
            .args(&args)
            .timeout(HANG)
            .run()
            .parts();
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            err.starts_with("error:") && err.contains(want),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn the_wait_for_start_at_ends_on_ctrl_c() {
    let r = Responder::start(triton_like());
    let start_at = format!("{:.0}", unix_now() + 60.0);
    let mut child = tritonctl()
        .arg("perf")
        .args(["-m", "m", "-u", &r.url(), "--start-at", &start_at])
        .command_with_default_signals()
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // connected, the model read (its config asked for), and waiting:
    // no inference sent yet
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        r.counters
            .discovery
            .lock()
            .unwrap()
            .iter()
            .any(|p| p.ends_with("/config")),
        "{:?}",
        r.counters.discovery.lock().unwrap()
    );
    assert_eq!(r.counters.infer.load(Ordering::SeqCst), 0);
    let sent = Instant::now();
    send_signal(&child, "INT");
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            sent.elapsed() < Duration::from_secs(10),
            "still waiting after Ctrl-C"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    // 128 + SIGINT, as a shell reports a process the signal ended
    assert_eq!(status.code(), Some(130), "{status:?}");
    assert_eq!(r.counters.infer.load(Ordering::SeqCst), 0);
}
