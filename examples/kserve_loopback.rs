//! A minimal KServe v2 / Triton HTTP responder for client benchmarks
//! (scripts/perf-bench/client-efficiency): it serves one identity model
//! (`INPUT0` -> `OUTPUT0`, FP32, dims [16], max_batch_size 8) and answers
//! the endpoints load testers call: server and model readiness, server and
//! model metadata, the model configuration, statistics (with real request
//! counts) and infer, with JSON tensors or the binary tensor extension.
//!
//! It does as little as possible per request (no JSON parser: it looks up
//! the few fields it needs in the request header), so that the client, not
//! this server, is the bottleneck. One thread per connection, HTTP/1.1
//! keep-alive.
//!
//! Standard library only: `rustc --edition 2021 -O examples/kserve_loopback.rs`
//! builds it without the crate.
//!
//! Usage: kserve_loopback [--port P] [--model NAME]
//! (port 0, the default, lets the kernel choose; the first line on
//! standard output is `listening 127.0.0.1:PORT`).
// Benchmarks and examples report on the terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    inferences: AtomicU64,
    failures: AtomicU64,
}

struct Server {
    model: String,
    counters: Counters,
}

struct Request<'a> {
    method: &'a str,
    path: &'a str,
    header_len: Option<usize>,
    body: &'a [u8],
}

struct Response {
    status: u16,
    content_type: &'static str,
    header_len: Option<usize>,
    body: Vec<u8>,
}

impl Response {
    fn json(status: u16, body: String) -> Self {
        Response {
            status,
            content_type: "application/json",
            header_len: None,
            body: body.into_bytes(),
        }
    }

    fn error(status: u16, msg: &str) -> Self {
        Response::json(
            status,
            format!("{{\"error\":\"{}\"}}", msg.replace('"', "'")),
        )
    }
}

/// The position just after `"key"` followed by optional spaces and a colon.
fn value_start(text: &[u8], key: &str) -> Option<usize> {
    let pat = format!("\"{key}\"");
    let pat = pat.as_bytes();
    let at = text.windows(pat.len()).position(|w| w == pat)?;
    let mut i = at + pat.len();
    while i < text.len() && (text[i] == b' ' || text[i] == b':') {
        i += 1;
    }
    Some(i)
}

/// The JSON array value of the first `"key"`, brackets included.
fn array_value<'a>(text: &'a [u8], key: &str) -> Option<&'a [u8]> {
    let start = value_start(text, key)?;
    if text.get(start) != Some(&b'[') {
        return None;
    }
    let mut depth = 0usize;
    for (i, &c) in text[start..].iter().enumerate() {
        match c {
            b'[' => depth += 1,
            b']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(&text[start..=start + i]);
                }
            }
            _ => {}
        }
    }
    None
}

fn bool_value(text: &[u8], key: &str) -> bool {
    value_start(text, key).is_some_and(|i| text[i..].starts_with(b"true"))
}

/// The JSON string value of the first `"key"`, quotes included.
fn string_value<'a>(text: &'a [u8], key: &str) -> Option<&'a [u8]> {
    let start = value_start(text, key)?;
    if text.get(start) != Some(&b'"') {
        return None;
    }
    let len = text[start + 1..].iter().position(|&c| c == b'"')?;
    Some(&text[start..start + len + 2])
}

/// The numbers of a (possibly nested) JSON array, as f32.
fn parse_numbers(array: &[u8]) -> Option<Vec<f32>> {
    let text = std::str::from_utf8(array).ok()?;
    text.split(|c: char| c == '[' || c == ']' || c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<f32>().ok())
        .collect()
}

fn format_numbers(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 3 + 2);
    out.push('[');
    for (i, c) in bytes.chunks_exact(4).enumerate() {
        if i > 0 {
            out.push(',');
        }
        let v = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        out.push_str(&v.to_string());
    }
    out.push(']');
    out
}

impl Server {
    fn model_path_ok(&self, rest: &str) -> Option<String> {
        // NAME or NAME/versions/V, followed by the returned suffix
        let rest = rest.strip_prefix(self.model.as_str())?;
        let rest = match rest.strip_prefix("/versions/") {
            Some(v) => &v[v.find('/').unwrap_or(v.len())..],
            None => rest,
        };
        Some(rest.to_string())
    }

    fn handle(&self, req: &Request) -> Response {
        let path = req.path.split('?').next().unwrap_or("");
        match (req.method, path) {
            ("GET", "/v2/health/live") | ("GET", "/v2/health/ready") => {
                return Response::json(200, String::new())
            }
            ("GET", "/v2") => {
                return Response::json(
                    200,
                    "{\"name\":\"kserve_loopback\",\"version\":\"2.51.0\",\"extensions\":[\"model_configuration\",\"binary_tensor_data\",\"statistics\"]}".into(),
                )
            }
            ("GET", "/v2/models/stats") => return self.stats(),
            _ => {}
        }
        let Some(rest) = path.strip_prefix("/v2/models/") else {
            return Response::error(404, "not found");
        };
        let Some(suffix) = self.model_path_ok(rest) else {
            return Response::error(404, "unknown model");
        };
        match (req.method, suffix.as_str()) {
            ("POST", "/infer") => self.infer(req),
            ("GET", "/ready") => Response::json(200, String::new()),
            ("GET", "") => Response::json(
                200,
                format!(
                    "{{\"name\":\"{}\",\"versions\":[\"1\"],\"platform\":\"loopback\",\
                     \"inputs\":[{{\"name\":\"INPUT0\",\"datatype\":\"FP32\",\"shape\":[-1,16]}}],\
                     \"outputs\":[{{\"name\":\"OUTPUT0\",\"datatype\":\"FP32\",\"shape\":[-1,16]}}]}}",
                    self.model
                ),
            ),
            ("GET", "/config") => Response::json(
                200,
                format!(
                    "{{\"name\":\"{}\",\"platform\":\"\",\"backend\":\"python\",\
                     \"version_policy\":{{\"latest\":{{\"num_versions\":1}}}},\"max_batch_size\":8,\
                     \"input\":[{{\"name\":\"INPUT0\",\"data_type\":\"TYPE_FP32\",\"format\":\"FORMAT_NONE\",\
                     \"dims\":[16],\"is_shape_tensor\":false,\"allow_ragged_batch\":false,\"optional\":false}}],\
                     \"output\":[{{\"name\":\"OUTPUT0\",\"data_type\":\"TYPE_FP32\",\"dims\":[16],\
                     \"label_filename\":\"\",\"is_shape_tensor\":false}}],\
                     \"instance_group\":[{{\"name\":\"{0}\",\"kind\":\"KIND_CPU\",\"count\":1}}],\
                     \"model_transaction_policy\":{{\"decoupled\":false}}}}",
                    self.model
                ),
            ),
            ("GET", "/stats") => self.stats(),
            _ => Response::error(404, "not found"),
        }
    }

    fn stats(&self) -> Response {
        let n = self.counters.inferences.load(Ordering::Relaxed);
        let f = self.counters.failures.load(Ordering::Relaxed);
        let d = |ns: u64| format!("{{\"count\":{n},\"ns\":{}}}", n * ns);
        Response::json(
            200,
            format!(
                "{{\"model_stats\":[{{\"name\":\"{}\",\"version\":\"1\",\"last_inference\":0,\
                 \"inference_count\":{n},\"execution_count\":{n},\"inference_stats\":{{\
                 \"success\":{},\"fail\":{{\"count\":{f},\"ns\":0}},\"queue\":{},\
                 \"compute_input\":{},\"compute_infer\":{},\"compute_output\":{},\
                 \"cache_hit\":{{\"count\":0,\"ns\":0}},\"cache_miss\":{{\"count\":0,\"ns\":0}}}},\
                 \"batch_stats\":[]}}]}}",
                self.model,
                d(4000),
                d(1000),
                d(500),
                d(1000),
                d(500)
            ),
        )
    }

    fn infer(&self, req: &Request) -> Response {
        let (header, binary) = match req.header_len {
            Some(n) if n <= req.body.len() => (&req.body[..n], &req.body[n..]),
            Some(_) => return self.fail("Inference-Header-Content-Length beyond the body"),
            None => (req.body, &req.body[..0]),
        };
        let Some(shape) = array_value(header, "shape") else {
            return self.fail("no input shape");
        };
        let shape = std::str::from_utf8(shape).unwrap_or("[]");
        let elements: usize = shape
            .trim_matches(|c| c == '[' || c == ']')
            .split(',')
            .map(|d| d.trim().parse::<usize>().unwrap_or(0))
            .product();
        let json_data = array_value(header, "data");
        let binary_out =
            bool_value(header, "binary_data_output") || bool_value(header, "binary_data");
        let data_bytes: Vec<u8>;
        let raw: &[u8] = match json_data {
            Some(arr) if binary_out => {
                let Some(v) = parse_numbers(arr) else {
                    return self.fail("input data is not numbers");
                };
                data_bytes = v.iter().flat_map(|x| x.to_le_bytes()).collect();
                &data_bytes
            }
            Some(_) => &[],
            None => binary,
        };
        if json_data.is_none() && binary.len() != elements * 4 {
            return self.fail("binary input size does not match the shape");
        }
        let n = shape
            .trim_start_matches('[')
            .split(',')
            .next()
            .and_then(|d| d.trim().trim_end_matches(']').parse::<u64>().ok())
            .unwrap_or(1);
        self.counters.inferences.fetch_add(n, Ordering::Relaxed);
        // the request id comes back (asynchronous clients match on it)
        let id = match string_value(header, "id") {
            Some(id) => format!("\"id\":{},", String::from_utf8_lossy(id)),
            None => String::new(),
        };
        if binary_out {
            let mut body = format!(
                "{{{id}\"model_name\":\"{}\",\"model_version\":\"1\",\"outputs\":[{{\"name\":\"OUTPUT0\",\
                 \"datatype\":\"FP32\",\"shape\":{shape},\"parameters\":{{\"binary_data_size\":{}}}}}]}}",
                self.model,
                raw.len()
            )
            .into_bytes();
            let header_len = body.len();
            body.extend_from_slice(raw);
            Response {
                status: 200,
                content_type: "application/octet-stream",
                header_len: Some(header_len),
                body,
            }
        } else {
            let data = match json_data {
                Some(arr) => String::from_utf8_lossy(arr).into_owned(),
                None => format_numbers(binary),
            };
            Response::json(
                200,
                format!(
                    "{{{id}\"model_name\":\"{}\",\"model_version\":\"1\",\"outputs\":[{{\"name\":\"OUTPUT0\",\
                     \"datatype\":\"FP32\",\"shape\":{shape},\"data\":{data}}}]}}",
                    self.model
                ),
            )
        }
    }

    fn fail(&self, msg: &str) -> Response {
        self.counters.failures.fetch_add(1, Ordering::Relaxed);
        Response::error(400, msg)
    }
}

fn find_header_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4)
}

fn header_value<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.split("\r\n").skip(1).find_map(|line| {
        let (k, v) = line.split_once(':')?;
        k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

fn serve(server: Arc<Server>, mut stream: TcpStream) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let mut buf: Vec<u8> = Vec::with_capacity(16 * 1024);
    let mut out: Vec<u8> = Vec::with_capacity(16 * 1024);
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        // the request head
        let head_end = loop {
            if let Some(e) = find_header_end(&buf) {
                break e;
            }
            let n = stream.read(&mut chunk)?;
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        let mut first = head.split("\r\n").next().unwrap_or("").split(' ');
        let method = first.next().unwrap_or("").to_string();
        let path = first.next().unwrap_or("").to_string();
        let length: usize = header_value(&head, "content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let header_len: Option<usize> =
            header_value(&head, "inference-header-content-length").and_then(|v| v.parse().ok());
        let close =
            header_value(&head, "connection").is_some_and(|v| v.eq_ignore_ascii_case("close"));
        if header_value(&head, "expect").is_some_and(|v| v.eq_ignore_ascii_case("100-continue"))
            && buf.len() < head_end + length
        {
            stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
        }
        while buf.len() < head_end + length {
            let n = stream.read(&mut chunk)?;
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        server.counters.requests.fetch_add(1, Ordering::Relaxed);
        let resp = server.handle(&Request {
            method: &method,
            path: &path,
            header_len,
            body: &buf[head_end..head_end + length],
        });
        buf.drain(..head_end + length);
        out.clear();
        let reason = match resp.status {
            200 => "OK",
            400 => "Bad Request",
            _ => "Not Found",
        };
        write!(
            out,
            "HTTP/1.1 {} {reason}\r\nContent-Type: {}\r\nContent-Length: {}\r\n",
            resp.status,
            resp.content_type,
            resp.body.len()
        )?;
        if let Some(n) = resp.header_len {
            write!(out, "Inference-Header-Content-Length: {n}\r\n")?;
        }
        if close {
            out.extend_from_slice(b"Connection: close\r\n");
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&resp.body);
        stream.write_all(&out)?;
        if close {
            return Ok(());
        }
    }
}

fn main() {
    let mut port = 0u16;
    let mut model = "loopback".to_string();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--port" => port = args.next().and_then(|p| p.parse().ok()).expect("--port N"),
            "--model" => model = args.next().expect("--model NAME"),
            other => {
                eprintln!("kserve_loopback: unknown argument {other}");
                std::process::exit(2);
            }
        }
    }
    let listener = TcpListener::bind(("127.0.0.1", port)).expect("bind 127.0.0.1");
    println!(
        "listening {}",
        listener.local_addr().expect("local address")
    );
    let server = Arc::new(Server {
        model,
        counters: Counters::default(),
    });
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let server = Arc::clone(&server);
        std::thread::spawn(move || {
            let _ = serve(server, stream);
        });
    }
}
