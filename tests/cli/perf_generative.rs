//! `tritonctl perf` against generative servers on the loopback interface
//! (a thread per connection, std only): an OpenAI-compatible server
//! streaming chat or completion chunks, and a Triton-like server with a
//! decoupled model behind `generate_stream`. Each streams a known number of
//! responses at known gaps, so the reported times can be checked against
//! them; faults (a stream cut off, an error event, a malformed event, an
//! endless stream, an HTTP error) are injected on chosen requests.

use crate::common::tritonctl;
use crate::perf::assert_matches_schema;
use serde_json::{json, Value};
use std::io::{BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Api {
    Chat,
    Completions,
    /// Triton's generate extension: a decoupled model `m` (BYTES input
    /// `text_input`, INT32 input `n`) at `/v2/models/m/generate_stream`.
    Triton,
    /// The same model, not decoupled: one JSON answer from
    /// `/v2/models/m/generate` (an error as `{"error": ..}` with status
    /// 200, as Triton 2.51 answers a decoupled model there).
    TritonPlain,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Fault {
    /// The server closes the connection in the middle of the stream.
    Stop,
    /// An error event in the middle of the stream.
    Error,
    /// An event that is not JSON in the middle of the stream.
    Malformed,
    /// The stream never ends (an event every gap).
    Endless,
    /// HTTP 500 instead of a stream.
    Status500,
    /// OpenAI: `[DONE]`, but the body does not end.
    NoEnd,
}

#[derive(Clone)]
struct Gen {
    api: Api,
    /// Responses (events with text) per request ...
    responses: usize,
    /// ... the first this long after the request arrived, the others this
    /// far apart.
    first: Duration,
    gap: Duration,
    /// OpenAI: end with a usage chunk of this many completion tokens.
    usage: Option<u64>,
    /// Lines end with CRLF (LF otherwise), with a comment line before
    /// every event.
    crlf: bool,
    /// This fault, after the first response, on the requests whose number
    /// (from 1) is a multiple of `fault_every`.
    fault: Option<Fault>,
    fault_every: u64,
}

impl Gen {
    fn new(api: Api) -> Gen {
        Gen {
            api,
            responses: 4,
            first: Duration::from_millis(30),
            gap: Duration::from_millis(20),
            usage: None,
            crlf: false,
            fault: None,
            fault_every: 1,
        }
    }
}

#[derive(Default)]
struct Seen {
    /// Request bodies of the generation requests, in arrival order.
    bodies: Mutex<Vec<Value>>,
    requests: AtomicU64,
    /// Connections that carried generation requests.
    connections: AtomicU64,
    /// Streams whose write failed: the client closed the connection.
    broken: AtomicU64,
}

struct Server {
    port: u16,
    seen: Arc<Seen>,
}

impl Server {
    fn start(g: Gen) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Seen::default());
        let s = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let (g, s) = (g.clone(), s.clone());
                std::thread::spawn(move || serve(stream, &g, &s));
            }
        });
        Server { port, seen }
    }

    fn url(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn bodies(&self) -> Vec<Value> {
        self.seen.bodies.lock().unwrap().clone()
    }
}

fn answer(s: &mut TcpStream, status: u16, body: &Value) -> bool {
    let body = body.to_string();
    let text = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(text.as_bytes()).is_ok()
}

/// One chunk of a chunked body, written at once.
fn chunk(s: &mut TcpStream, data: &str) -> bool {
    s.write_all(format!("{:x}\r\n{data}\r\n", data.len()).as_bytes())
        .and_then(|()| s.flush())
        .is_ok()
}

fn metadata() -> Value {
    json!({"name": "m", "versions": ["1"], "platform": "python",
        "inputs": [{"name": "text_input", "datatype": "BYTES", "shape": [-1]},
                   {"name": "n", "datatype": "INT32", "shape": [1]}],
        "outputs": [{"name": "text_output", "datatype": "BYTES", "shape": [-1]}]})
}

/// The text input has a variable dim, as TensorRT-LLM's `text_input`:
/// the generate endpoint needs no `--shape` for it.
fn config(decoupled: bool) -> Value {
    json!({"name": "m", "backend": "python", "max_batch_size": 0,
        "input": [{"name": "text_input", "data_type": "TYPE_STRING", "dims": ["-1"]},
                  {"name": "n", "data_type": "TYPE_INT32", "dims": ["1"]}],
        "output": [{"name": "text_output", "data_type": "TYPE_STRING", "dims": ["-1"]}],
        "model_transaction_policy": {"decoupled": decoupled}})
}

fn serve(stream: TcpStream, g: &Gen, seen: &Seen) {
    let _ = stream.set_nodelay(true);
    let mut out = stream.try_clone().unwrap();
    let mut r = BufReader::new(stream);
    let mut counted = false;
    loop {
        let Some((method, path, headers)) = crate::common::read_request_head(&mut r) else {
            return;
        };
        let arrived = Instant::now();
        let len: usize = headers
            .get("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; len];
        if r.read_exact(&mut body).is_err() {
            return;
        }
        let alive = match (g.api, method.as_str(), path.as_str()) {
            (Api::Triton | Api::TritonPlain, "GET", "/v2/models/m") => {
                answer(&mut out, 200, &metadata())
            }
            (Api::Triton | Api::TritonPlain, "GET", "/v2/models/m/config") => {
                answer(&mut out, 200, &config(g.api == Api::Triton))
            }
            (Api::TritonPlain, "POST", "/v2/models/m/generate") => {
                let doc = serde_json::from_slice(&body).unwrap_or(Value::Null);
                seen.bodies.lock().unwrap().push(doc);
                if !counted {
                    counted = true;
                    seen.connections.fetch_add(1, Ordering::SeqCst);
                }
                let n = seen.requests.fetch_add(1, Ordering::SeqCst) + 1;
                std::thread::sleep(g.first);
                let answer_doc = match g.fault.filter(|_| n.is_multiple_of(g.fault_every)) {
                    Some(Fault::Error) => {
                        json!({"error": "generate expects model to produce exactly 1 response"})
                    }
                    _ => json!({"model_name": "m", "model_version": "1", "text_output": "hello"}),
                };
                answer(&mut out, 200, &answer_doc)
            }
            (Api::Triton, "POST", "/v2/models/m/generate_stream")
            | (Api::Chat, "POST", "/v1/chat/completions")
            | (Api::Completions, "POST", "/v1/completions") => {
                let doc = serde_json::from_slice(&body).unwrap_or(Value::Null);
                seen.bodies.lock().unwrap().push(doc);
                if !counted {
                    counted = true;
                    seen.connections.fetch_add(1, Ordering::SeqCst);
                }
                let n = seen.requests.fetch_add(1, Ordering::SeqCst) + 1;
                let fault = g.fault.filter(|_| n.is_multiple_of(g.fault_every));
                match stream_events(&mut out, g, fault, arrived) {
                    Ok(true) => true,
                    Ok(false) => return,
                    Err(()) => {
                        seen.broken.fetch_add(1, Ordering::SeqCst);
                        return;
                    }
                }
            }
            _ => answer(&mut out, 404, &json!({"error": "not found"})),
        };
        if !alive {
            return;
        }
    }
}

/// Streams one request's events; `Ok(false)` when the server closed the
/// connection on purpose, `Err` when a write failed.
fn stream_events(
    s: &mut TcpStream,
    g: &Gen,
    fault: Option<Fault>,
    arrived: Instant,
) -> Result<bool, ()> {
    if fault == Some(Fault::Status500) {
        return answer(s, 500, &json!({"error": "overloaded"}))
            .then_some(true)
            .ok_or(());
    }
    let nl = if g.crlf { "\r\n" } else { "\n" };
    let event = |data: &str| {
        let comment = if g.crlf {
            format!(": ping{nl}")
        } else {
            String::new()
        };
        format!("{comment}data: {data}{nl}{nl}")
    };
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nTransfer-Encoding: chunked\r\n\r\n";
    s.write_all(head.as_bytes()).map_err(|_| ())?;
    let ok = |b: bool| if b { Ok(()) } else { Err(()) };
    if g.api == Api::Chat {
        // the role chunk: no text, not a response
        ok(chunk(
            s,
            &event(r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#),
        ))?;
    }
    let text = |i: usize| match g.api {
        Api::Chat => format!(r#"{{"choices":[{{"index":0,"delta":{{"content":"tok{i} "}}}}]}}"#),
        Api::Completions => format!(r#"{{"choices":[{{"index":0,"text":"tok{i} "}}]}}"#),
        Api::Triton | Api::TritonPlain => {
            format!(r#"{{"model_name":"m","model_version":"1","text_output":"tok{i}"}}"#)
        }
    };
    let mut i = 0;
    loop {
        let due = arrived + g.first + g.gap * i as u32;
        std::thread::sleep(due.saturating_duration_since(Instant::now()));
        if i == 1 {
            match fault {
                Some(Fault::Stop) => {
                    let _ = s.shutdown(Shutdown::Both);
                    return Ok(false);
                }
                Some(Fault::Error) => {
                    let e = match g.api {
                        Api::Triton | Api::TritonPlain => r#"{"error":"boom"}"#,
                        _ => r#"{"error":{"message":"boom","type":"internal","code":500}}"#,
                    };
                    ok(chunk(s, &event(e)))?;
                }
                Some(Fault::Malformed) => ok(chunk(s, &event("{not json")))?,
                _ => {}
            }
        }
        if i >= g.responses && fault != Some(Fault::Endless) {
            break;
        }
        ok(chunk(s, &event(&text(i))))?;
        i += 1;
    }
    if matches!(g.api, Api::Chat | Api::Completions) {
        ok(chunk(
            s,
            &event(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}"#),
        ))?;
        if let Some(t) = g.usage {
            ok(chunk(
                s,
                &event(&format!(
                    r#"{{"choices":[],"usage":{{"prompt_tokens":5,"completion_tokens":{t},"total_tokens":{}}}}}"#,
                    t + 5
                )),
            ))?;
        }
        ok(chunk(s, &event("[DONE]")))?;
        if fault == Some(Fault::NoEnd) {
            std::thread::sleep(Duration::from_secs(3));
            return Ok(false);
        }
    }
    // the end of the chunked body
    s.write_all(b"0\r\n\r\n").map_err(|_| ())?;
    Ok(true)
}

/// A `tritonctl perf` run killed after this long fails as a hang.
const HANG: Duration = Duration::from_secs(60);

fn perf(args: &[&str]) -> (i32, Value, String) {
    let mut a = args.to_vec();
    a.extend(["--format", "json", "--progress", "never"]);
    let (code, out, err) = tritonctl().arg("perf").args(&a).timeout(HANG).run().parts();
    let v: Value = serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{out}\nstderr:\n{err}"));
    assert_matches_schema(&v);
    (code, v, err)
}

fn u(v: &Value) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("{v} is not an unsigned integer"))
}

/// `v` (µs) is `want` (ms) or up to `slack` ms later: a sleeping server
/// thread wakes late, never early.
fn near(v: &Value, want_ms: u64, slack_ms: u64) {
    let us = u(v);
    assert!(
        us >= want_ms * 1000 - 500 && us <= (want_ms + slack_ms) * 1000,
        "{us} µs is not within {want_ms}..{} ms",
        want_ms + slack_ms
    );
}

fn words(prompt: &Value) -> usize {
    prompt.as_str().unwrap().split(' ').count()
}

#[test]
fn openai_chat_stream_with_usage() {
    let mut g = Gen::new(Api::Chat);
    g.usage = Some(11);
    g.first = Duration::from_millis(40);
    g.gap = Duration::from_millis(25);
    let s = Server::start(g);
    let url = s.url();
    let (code, v, err) = perf(&[
        "-m",
        "llm",
        "-u",
        &url,
        "--endpoint",
        "openai-chat",
        "--request-count",
        "6",
        "--prompt-words",
        "7",
        "--max-tokens",
        "16",
    ]);
    assert_eq!(code, 0, "{v:#}\n{err}");
    assert_eq!(v["endpoint"], "openai-chat");
    assert_eq!(v["output_tokens"], "usage");
    assert_eq!(v["decoupled"], false);
    let l = &v["levels"][0];
    assert_eq!(
        (u(&l["requests"]), u(&l["errors"]), u(&l["cancelled"])),
        (6, 0, 0)
    );
    assert_eq!(u(&l["responses"]), 24, "4 chunks with text per request");
    assert_eq!(l["responses_per_request"], json!({"mean": 4.0, "max": 4}));
    near(&l["first_response_us"]["p50"], 40, 30);
    near(&l["inter_response_us"]["p50"], 25, 15);
    // the last response: 40 + 3 * 25 ms after the send
    near(&l["latency_us"]["p50"], 115, 60);
    // 11 tokens per request from usage, over the measured time
    let rate = l["output_tokens_per_s"].as_f64().unwrap();
    let secs = l["duration_s"].as_f64().unwrap();
    assert!(
        (rate * secs - 66.0).abs() < 0.01,
        "{rate} tokens/s over {secs} s"
    );
    // the bodies as sent; one connection, reused after each clean end
    let bodies = s.bodies();
    assert_eq!(bodies.len(), 6);
    for b in &bodies {
        assert_eq!(b["model"], "llm");
        assert_eq!(b["stream"], true);
        assert_eq!(b["stream_options"], json!({"include_usage": true}));
        assert_eq!(b["max_tokens"], 16);
        assert_eq!(b["messages"][0]["role"], "user");
        assert_eq!(words(&b["messages"][0]["content"]), 7);
    }
    assert_eq!(s.seen.connections.load(Ordering::SeqCst), 1);
}

#[test]
fn openai_completions_without_usage_counts_chunks_and_takes_prompts_in_order() {
    let mut g = Gen::new(Api::Completions);
    g.responses = 3;
    g.crlf = true;
    let s = Server::start(g);
    let url = s.url();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("prompts.jsonl");
    std::fs::write(
        &file,
        "{\"text\": \"first prompt\"}\n\n\"second\"\r\n{\"prompt\": \"third one here\"}\n",
    )
    .unwrap();
    let (code, v, err) = perf(&[
        "-m",
        "llm",
        "-u",
        &url,
        "--endpoint",
        "openai-completions",
        "--request-count",
        "5",
        "--input-data",
        file.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{v:#}\n{err}");
    assert_eq!(v["output_tokens"], "responses");
    assert!(err.contains("counted as responses"), "{err}");
    let l = &v["levels"][0];
    assert_eq!(u(&l["errors"]), 0);
    assert_eq!(u(&l["responses"]), 15);
    let rate = l["output_tokens_per_s"].as_f64().unwrap();
    let secs = l["duration_s"].as_f64().unwrap();
    assert!(
        (rate * secs - 15.0).abs() < 0.01,
        "{rate} tokens/s over {secs} s"
    );
    near(&l["first_response_us"]["p50"], 30, 30);
    near(&l["inter_response_us"]["p50"], 20, 15);
    let prompts: Vec<&str> = s
        .bodies()
        .iter()
        .map(|b| {
            assert!(b.get("max_tokens").is_none(), "no --max-tokens: {b}");
            assert_eq!(b["stream"], true);
            b["prompt"].as_str().unwrap().to_string()
        })
        .collect::<Vec<_>>()
        .iter()
        .map(|p| match p.as_str() {
            "first prompt" => "1",
            "second" => "2",
            "third one here" => "3",
            _ => "?",
        })
        .collect();
    assert_eq!(prompts, ["1", "2", "3", "1", "2"]);
}

#[test]
fn triton_generate_stream_of_a_decoupled_model() {
    let mut g = Gen::new(Api::Triton);
    g.responses = 5;
    let s = Server::start(g);
    let url = s.url();
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("requests.jsonl");
    let (code, v, err) = perf(&[
        "-m",
        "m",
        "-u",
        &url,
        "--endpoint",
        "generate",
        "--request-count",
        "4",
        "--prompt-words",
        "3",
        "--max-tokens",
        "8",
        "--export-requests",
        export.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{v:#}\n{err}");
    assert_eq!(v["endpoint"], "generate");
    assert_eq!(v["decoupled"], true);
    assert_eq!(v["output_tokens"], Value::Null);
    let l = &v["levels"][0];
    assert_eq!((u(&l["requests"]), u(&l["errors"])), (4, 0));
    assert_eq!(l["responses_per_request"], json!({"mean": 5.0, "max": 5}));
    assert_eq!(l["output_tokens_per_s"], Value::Null);
    near(&l["first_response_us"]["p50"], 30, 30);
    near(&l["inter_response_us"]["p50"], 20, 15);
    // inputs by name from the config, --max-tokens as a request parameter
    for b in s.bodies() {
        let keys: Vec<&String> = b.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["max_tokens", "n", "text_input"], "{b}");
        assert_eq!(words(&b["text_input"]), 3);
        assert_eq!((&b["n"], &b["max_tokens"]), (&json!(0), &json!(8)));
    }
    // one line per request: 5 increasing response times after the send
    let lines: Vec<Value> = std::fs::read_to_string(&export)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4);
    for line in &lines {
        assert_eq!(line["error"], Value::Null);
        let times: Vec<u64> = line["response_us"]
            .as_array()
            .unwrap()
            .iter()
            .map(u)
            .collect();
        assert_eq!(times.len(), 5, "{line}");
        assert!(times.windows(2).all(|w| w[0] < w[1]), "{line}");
        assert!(u(&line["send_us"]) + 29_000 <= times[0], "{line}");
    }
    assert_eq!(s.seen.connections.load(Ordering::SeqCst), 1);
}

#[test]
fn triton_generate_of_a_model_that_is_not_decoupled() {
    let mut g = Gen::new(Api::TritonPlain);
    g.fault = Some(Fault::Error);
    g.fault_every = 3;
    let s = Server::start(g);
    let url = s.url();
    let (code, v, err) = perf(&[
        "-m",
        "m",
        "-u",
        &url,
        "--endpoint",
        "generate",
        "--request-count",
        "6",
        "--max-error-rate",
        "0.4",
    ]);
    assert_eq!(code, 0, "{v:#}\n{err}");
    assert_eq!(v["decoupled"], false);
    let l = &v["levels"][0];
    assert_eq!(l["errors_by_kind"], json!({"stream_error": 2}), "{l}");
    assert_eq!(u(&l["responses"]), 4);
    assert_eq!(l["responses_per_request"], json!({"mean": 1.0, "max": 1}));
    // one response: the first is the last
    assert_eq!(l["first_response_us"], l["latency_us"]);
    near(&l["latency_us"]["p50"], 30, 30);
    assert_eq!(l["inter_response_us"], Value::Null);
    // synthetic prompts of 100 words by default
    for b in s.bodies() {
        assert_eq!(words(&b["text_input"]), 100);
        assert!(b.get("max_tokens").is_none());
    }
    assert_eq!(s.seen.connections.load(Ordering::SeqCst), 1);
}

/// Runs `perf` against a server with `fault` on every other request and
/// returns the report, after checking that the other requests succeeded.
fn faulty(api: Api, fault: Fault, kind: &str, extra: &[&str]) -> (i32, Value) {
    let mut g = Gen::new(api);
    g.responses = 3;
    g.fault = Some(fault);
    g.fault_every = 2;
    let s = Server::start(g);
    let url = s.url();
    let (endpoint, model) = match api {
        Api::Chat => ("openai-chat", "llm"),
        Api::Completions => ("openai-completions", "llm"),
        Api::Triton | Api::TritonPlain => ("generate", "m"),
    };
    let mut args = vec![
        "-m",
        model,
        "-u",
        &url,
        "--endpoint",
        endpoint,
        "--request-count",
        "6",
        "--prompt-words",
        "2",
    ];
    args.extend(extra);
    let (code, v, err) = perf(&args);
    let l = &v["levels"][0];
    assert_eq!(u(&l["requests"]), 6, "{v:#}\n{err}");
    assert_eq!(
        l["errors_by_kind"],
        json!({kind: 3}),
        "{api:?} {fault:?}: {v:#}"
    );
    assert_eq!(u(&l["cancelled"]), 0);
    // the requests without the fault are whole; the responses of failed
    // ones before their failure are counted too
    assert_eq!(l["responses_per_request"], json!({"mean": 3.0, "max": 3}));
    assert!(u(&l["responses"]) >= 9, "{l}");
    (code, v)
}

#[test]
fn a_stream_cut_off_is_stream_incomplete_and_the_exit_code_follows_max_error_rate() {
    for api in [Api::Chat, Api::Triton] {
        let (code, _) = faulty(api, Fault::Stop, "stream_incomplete", &[]);
        assert_eq!(code, 1, "error rate 0.5 is above the default 0");
        let (code, _) = faulty(
            api,
            Fault::Stop,
            "stream_incomplete",
            &["--max-error-rate", "0.5"],
        );
        assert_eq!(code, 0);
        let (code, _) = faulty(
            api,
            Fault::Stop,
            "stream_incomplete",
            &["--max-error-rate", "0.4"],
        );
        assert_eq!(code, 1);
    }
}

#[test]
fn an_error_event_is_stream_error() {
    for api in [Api::Chat, Api::Completions, Api::Triton] {
        faulty(
            api,
            Fault::Error,
            "stream_error",
            &["--max-error-rate", "0.5"],
        );
    }
}

#[test]
fn an_event_that_is_not_json_is_malformed() {
    for api in [Api::Chat, Api::Triton] {
        faulty(
            api,
            Fault::Malformed,
            "malformed",
            &["--max-error-rate", "0.5"],
        );
    }
}

#[test]
fn done_without_the_end_of_the_body_is_complete_but_the_connection_is_not_reused() {
    let mut g = Gen::new(Api::Chat);
    g.fault = Some(Fault::NoEnd);
    let s = Server::start(g);
    let url = s.url();
    let started = Instant::now();
    let (code, v, err) = perf(&[
        "-m",
        "llm",
        "-u",
        &url,
        "--endpoint",
        "openai-chat",
        "--request-count",
        "3",
    ]);
    assert_eq!(code, 0, "{v:#}\n{err}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "no request waited for the end"
    );
    let l = &v["levels"][0];
    assert_eq!(
        (u(&l["requests"]), u(&l["errors"]), u(&l["responses"])),
        (3, 0, 12)
    );
    assert_eq!(s.seen.connections.load(Ordering::SeqCst), 3);
}

#[test]
fn an_http_error_is_counted_by_status() {
    let (code, _) = faulty(Api::Chat, Fault::Status500, "http_500", &[]);
    assert_eq!(code, 1);
}

#[test]
fn a_stream_that_never_ends_times_out_with_its_responses_so_far() {
    let mut g = Gen::new(Api::Chat);
    g.fault = Some(Fault::Endless);
    let s = Server::start(g);
    let url = s.url();
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("requests.jsonl");
    let started = Instant::now();
    let (code, v, err) = perf(&[
        "-m",
        "llm",
        "-u",
        &url,
        "--endpoint",
        "openai-chat",
        "--request-count",
        "2",
        "--timeout",
        "300",
        "--export-requests",
        export.to_str().unwrap(),
    ]);
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(code, 1, "{v:#}\n{err}");
    let l = &v["levels"][0];
    assert_eq!(l["errors_by_kind"], json!({"timeout": 2}));
    let text = std::fs::read_to_string(&export).unwrap();
    for line in text.lines() {
        let line: Value = serde_json::from_str(line).unwrap();
        assert_eq!(line["error"], "timeout");
        // 30 ms, then every 20 ms until 300 ms: about 14 responses
        let n = line["response_us"].as_array().unwrap().len();
        assert!((5..=15).contains(&n), "{line}");
    }
}

#[test]
fn a_request_still_streaming_at_the_end_of_a_level_is_cancelled_not_an_error() {
    let mut g = Gen::new(Api::Triton);
    g.fault = Some(Fault::Endless);
    let s = Server::start(g);
    let url = s.url();
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("requests.jsonl");
    let started = Instant::now();
    let (code, v, err) = perf(&[
        "--export-requests",
        export.to_str().unwrap(),
        "-m",
        "m",
        "-u",
        &url,
        "--endpoint",
        "generate",
        "--duration",
        "0.4",
        "--concurrency-range",
        "2",
    ]);
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(code, 0, "{v:#}\n{err}");
    let l = &v["levels"][0];
    assert_eq!((u(&l["errors"]), u(&l["cancelled"])), (0, 2), "{l}");
    assert_eq!(l["errors_by_kind"], json!({}));
    assert!(u(&l["responses"]) >= 2, "the responses before the cut: {l}");
    let lines: Vec<Value> = std::fs::read_to_string(&export)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    for line in &lines {
        assert_eq!(line["error"], "cancelled", "{line}");
        // 30 ms, then every 20 ms until 400 ms: about 19 responses
        let n = line["response_us"].as_array().unwrap().len();
        assert!((5..=20).contains(&n), "{line}");
    }
    // the client closed both connections: the server's writes fail
    let deadline = Instant::now() + Duration::from_secs(5);
    while s.seen.broken.load(Ordering::SeqCst) < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(s.seen.broken.load(Ordering::SeqCst), 2);
}

#[test]
fn an_event_above_max_response_bytes_is_not_read() {
    let s = Server::start(Gen::new(Api::Chat));
    let url = s.url();
    // the role chunk's line takes 73 bytes, the others fewer
    let args = |limit: &'static str| {
        vec![
            "-m".to_string(),
            "llm".into(),
            "-u".into(),
            url.clone(),
            "--endpoint".into(),
            "openai-chat".into(),
            "--request-count".into(),
            "2".into(),
            "--max-response-bytes".into(),
            limit.into(),
        ]
    };
    let a = args("72");
    let (code, v, _) = perf(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 1);
    assert_eq!(
        v["levels"][0]["errors_by_kind"],
        json!({"response_too_large": 2})
    );
    let a = args("73");
    let (code, v, err) = perf(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 0, "{v:#}\n{err}");
    assert_eq!(u(&v["levels"][0]["responses"]), 8);
}

#[test]
fn prompt_files_and_endpoints_must_match() {
    let dir = tempfile::tempdir().unwrap();
    let prompts = dir.path().join("p.jsonl");
    std::fs::write(&prompts, "{\"text\": \"a\"}\n{\"text\": 1}\n").unwrap();
    let data = dir.path().join("d.json");
    std::fs::write(&data, r#"{"data": [{"X": [1]}]}"#).unwrap();
    let run = |args: &[&str]| {
        tritonctl()
            .arg("perf")
            .args(args)
            .timeout(HANG)
            .run()
            .parts()
    };
    let p = prompts.to_str().unwrap();
    let (code, _, err) = run(&["-m", "m", "-u", "127.0.0.1:1", "--input-data", p]);
    assert_eq!(code, 2);
    assert!(err.contains("holds prompts (JSON Lines)"), "{err}");
    let (code, _, err) = run(&[
        "-m",
        "m",
        "-u",
        "127.0.0.1:1",
        "--endpoint",
        "openai-chat",
        "--input-data",
        p,
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("p.jsonl:2:1: expected"), "{err}");
    let d = data.to_str().unwrap();
    let (code, _, err) = run(&[
        "-m",
        "m",
        "-u",
        "127.0.0.1:1",
        "--endpoint",
        "openai-completions",
        "--input-data",
        d,
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("perf_analyzer's input-data JSON"), "{err}");
    std::fs::write(&prompts, "{\"text\": \"a\"}\n").unwrap();
    let (code, _, err) = run(&[
        "-m",
        "m",
        "-u",
        "127.0.0.1:1",
        "--endpoint",
        "generate",
        "--input-data",
        p,
        "--prompt-words",
        "5",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("leave it out when --input-data gives a prompt file"),
        "{err}"
    );
}
