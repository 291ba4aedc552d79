//! `tritonctl perf` against hostile servers (docs/hostile.md): an answer whose
//! Content-Length no memory holds, a chunked body that never ends, a byte
//! every 100 ms forever, input dims no memory holds, and a server that
//! accepts the connection but does not speak gRPC. Each run must end, within
//! a generous timeout that turns a hang into a failure, with a clear message
//! naming the limit and its flag; the responders count what they managed to
//! send, which must stay near the limit (a client reading everything would
//! take hundreds of MiB before the responder gives up).

use crate::common::tritonctl;
use serde_json::{json, Value};
use std::io::{BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A `tritonctl perf` run killed after this long fails as a hang.
const HANG: Duration = Duration::from_secs(60);

/// A responder stops sending after this many bytes (a client that reads
/// everything would otherwise read until its timeout).
const CAP: u64 = 512 << 20;

/// Far more than the socket buffers between a client that stops reading
/// and the responder, far less than [`CAP`].
const NEAR_THE_LIMIT: u64 = 48 << 20;

/// What the responder does on the hostile path.
#[derive(Clone, Copy, PartialEq)]
enum Hostile {
    /// `Content-Length: 10000000000`, then bytes until the client closes.
    HugeLength,
    /// A chunked body that never ends.
    EndlessChunks,
    /// `Content-Length: 1000000`, then a byte every 100 ms.
    Trickle,
    /// An HTTP/1.1 answer to whatever comes (a gRPC client's preface too).
    Http11,
    /// Garbage, then the connection is closed.
    Garbage,
}

struct Server {
    port: u16,
    /// Body bytes written on the hostile path.
    sent: Arc<AtomicU64>,
}

impl Server {
    /// A responder answering model `m`'s metadata and config (input X of
    /// `dims` without the batch dim, max_batch_size 8), misbehaving on
    /// `path`.
    fn start(path: &'static str, h: Hostile, dims: Vec<i64>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let sent = Arc::new(AtomicU64::new(0));
        let s = sent.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let (s, dims) = (s.clone(), dims.clone());
                std::thread::spawn(move || serve(stream, path, h, &dims, &s));
            }
        });
        Server { port, sent }
    }

    fn url(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn sent(&self) -> u64 {
        self.sent.load(Ordering::SeqCst)
    }
}

fn answer(out: &mut TcpStream, status: u16, body: &[u8]) -> bool {
    let mut all = format!(
        "HTTP/1.1 {status} X\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    all.extend_from_slice(body);
    out.write_all(&all).is_ok()
}

/// Writes `piece` until the client goes away (or [`CAP`]), counting.
fn flood(out: &mut TcpStream, piece: &[u8], sent: &AtomicU64) {
    while sent.load(Ordering::SeqCst) < CAP {
        if out.write_all(piece).is_err() {
            return;
        }
        sent.fetch_add(piece.len() as u64, Ordering::SeqCst);
    }
}

fn serve(stream: TcpStream, hostile_path: &str, h: Hostile, dims: &[i64], sent: &AtomicU64) {
    let mut out = stream.try_clone().unwrap();
    match h {
        Hostile::Garbage => {
            let _ = out.write_all(b"\x00\xffnot a protocol at all\r\n\r\n");
            return;
        }
        Hostile::Http11 => {
            // whatever was asked
            let mut buf = [0u8; 1024];
            let _ = out.read(&mut buf);
            let _ = out.write_all(
                b"HTTP/1.1 400 Bad Request\r\nContent-Length: 11\r\nConnection: close\r\n\r\nbad request",
            );
            std::thread::sleep(Duration::from_millis(200));
            return;
        }
        _ => {}
    }
    let mut r = BufReader::new(stream);
    loop {
        let Some((method, path, headers)) = crate::common::read_request_head(&mut r) else {
            return;
        };
        let len: usize = headers
            .get("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; len];
        if r.read_exact(&mut body).is_err() {
            return;
        }
        if path == hostile_path {
            let piece = vec![b'x'; 64 * 1024];
            match h {
                Hostile::HugeLength => {
                    let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 10000000000\r\n\r\n";
                    if out.write_all(head.as_bytes()).is_ok() {
                        flood(&mut out, &piece, sent);
                    }
                }
                Hostile::EndlessChunks => {
                    let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
                    let mut chunk = format!("{:x}\r\n", piece.len()).into_bytes();
                    chunk.extend_from_slice(&piece);
                    chunk.extend_from_slice(b"\r\n");
                    if out.write_all(head.as_bytes()).is_ok() {
                        flood(&mut out, &chunk, sent);
                    }
                }
                Hostile::Trickle => {
                    let head = "HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n";
                    if out.write_all(head.as_bytes()).is_err() {
                        return;
                    }
                    while sent.load(Ordering::SeqCst) < 1_000_000 {
                        std::thread::sleep(Duration::from_millis(100));
                        if out.write_all(b" ").is_err() {
                            return;
                        }
                        sent.fetch_add(1, Ordering::SeqCst);
                    }
                }
                Hostile::Http11 | Hostile::Garbage => unreachable!("handled above"),
            }
            return;
        }
        let mut shape = vec![-1];
        shape.extend_from_slice(dims);
        let ok = match (method.as_str(), path.as_str()) {
            ("GET", "/v2/models/m") => {
                let meta = json!({"name": "m", "platform": "test",
                    "inputs": [{"name": "X", "datatype": "FP32", "shape": shape}],
                    "outputs": [{"name": "Y", "datatype": "FP32", "shape": [-1, 4]}]});
                answer(&mut out, 200, meta.to_string().as_bytes())
            }
            ("GET", "/v2/models/m/config") => {
                let cfg = json!({"name": "m", "max_batch_size": 8,
                    "input": [{"name": "X", "data_type": "TYPE_FP32", "dims": dims}],
                    "output": [{"name": "Y", "data_type": "TYPE_FP32", "dims": [4]}]});
                answer(&mut out, 200, cfg.to_string().as_bytes())
            }
            _ => answer(&mut out, 404, br#"{"error":"not found"}"#),
        };
        if !ok {
            return;
        }
    }
}

fn perf(args: &[&str]) -> (i32, String, String) {
    tritonctl()
        .arg("perf")
        .args(args)
        .timeout(HANG)
        .run()
        .parts()
}

/// Exit 2 before any load, with a message naming the limit and the flag.
fn refused_at_setup(args: &[&str], limit: &str, flag: &str) -> String {
    let (code, out, err) = perf(args);
    assert_eq!(code, 2, "{args:?}: {out}{err}");
    assert!(
        err.starts_with("error:") && err.contains(limit) && err.contains(flag),
        "{args:?}: {err}"
    );
    err
}

#[test]
fn a_config_answer_with_a_huge_content_length_is_refused_unread() {
    let s = Server::start("/v2/models/m/config", Hostile::HugeLength, vec![4]);
    let url = s.url();
    // the default limit of the discovery endpoints: 16 MiB
    refused_at_setup(
        &["-m", "m", "-u", &url, "--timeout", "20000"],
        "16777216 bytes",
        "--max-response-bytes",
    );
    assert!(s.sent() < NEAR_THE_LIMIT, "{} bytes sent", s.sent());
    refused_at_setup(
        &[
            "-m",
            "m",
            "-u",
            &url,
            "--timeout",
            "20000",
            "--max-response-bytes",
            "100000",
        ],
        "100000 bytes",
        "--max-response-bytes",
    );
}

#[test]
fn an_endless_chunked_config_answer_stops_at_the_limit() {
    let s = Server::start("/v2/models/m/config", Hostile::EndlessChunks, vec![4]);
    let url = s.url();
    refused_at_setup(
        &[
            "-m",
            "m",
            "-u",
            &url,
            "--timeout",
            "20000",
            "--max-response-bytes",
            "100000",
        ],
        "100000 bytes",
        "--max-response-bytes",
    );
    assert!(s.sent() < NEAR_THE_LIMIT, "{} bytes sent", s.sent());
}

#[test]
fn a_metadata_answer_with_a_huge_content_length_is_refused_unread() {
    let s = Server::start("/v2/models/m", Hostile::HugeLength, vec![4]);
    refused_at_setup(
        &[
            "-m",
            "m",
            "-u",
            &s.url(),
            "--timeout",
            "20000",
            "--max-response-bytes",
            "4096",
        ],
        "4096 bytes",
        "--max-response-bytes",
    );
    assert!(s.sent() < NEAR_THE_LIMIT, "{} bytes sent", s.sent());
}

/// Inference answers above the limit are counted as `response_too_large`
/// (exit 1 as any failed request), with a warning naming the limit.
fn infer_answers_above_the_limit(h: Hostile) {
    let s = Server::start("/v2/models/m/infer", h, vec![4]);
    let (code, out, err) = perf(&[
        "-m",
        "m",
        "-u",
        &s.url(),
        "--timeout",
        "20000",
        "--request-count",
        "3",
        "--max-response-bytes",
        "100000",
        "--format",
        "json",
    ]);
    assert_eq!(code, 1, "{out}{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    crate::perf::assert_matches_schema(&doc);
    assert_eq!(
        doc["levels"][0]["errors_by_kind"],
        json!({"response_too_large": 3}),
        "{doc:#}"
    );
    assert!(
        err.contains("larger than 100000 bytes") && err.contains("--max-response-bytes"),
        "{err}"
    );
    assert!(s.sent() < NEAR_THE_LIMIT, "{} bytes sent", s.sent());
}

#[test]
fn an_infer_answer_with_a_huge_content_length_is_refused_unread() {
    infer_answers_above_the_limit(Hostile::HugeLength);
}

#[test]
fn an_endless_chunked_infer_answer_stops_at_the_limit() {
    infer_answers_above_the_limit(Hostile::EndlessChunks);
}

#[test]
fn a_trickled_answer_ends_at_the_timeout() {
    let s = Server::start("/v2/models/m/config", Hostile::Trickle, vec![4]);
    let (code, out, err) = perf(&["-m", "m", "-u", &s.url(), "--timeout", "1500"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("did not answer within 1500 ms"), "{err}");
    // the head came, and some bytes of the body
    assert!(s.sent() > 0);
}

#[test]
fn input_dims_no_memory_holds_are_refused_before_allocating() {
    // from the server's config
    let s = Server::start("", Hostile::HugeLength, vec![1_000_000_000_000]);
    let err = refused_at_setup(
        &["-m", "m", "-u", &s.url()],
        "1073741824 bytes",
        "--max-input-bytes",
    );
    assert!(
        err.contains("input 'X'")
            && err.contains("[1, 1000000000000]")
            && err.contains("4000000000000 bytes"),
        "{err}"
    );
    // from --shape, and with a limit given
    let s = Server::start("", Hostile::HugeLength, vec![4]);
    let url = s.url();
    let err = refused_at_setup(
        &["-m", "m", "-u", &url, "--shape", "X:1000000000000"],
        "1073741824 bytes",
        "--max-input-bytes",
    );
    assert!(err.contains("[1, 1000000000000]"), "{err}");
    // the batch size sent counts, not max_batch_size (8): 4 x 4 bytes fit
    // in 20 at -b 1, not at -b 2
    let (code, _, err) = perf(&["-m", "m", "-u", &url, "--max-input-bytes", "20", "-b", "2"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("[2, 4]") && err.contains("32 bytes") && err.contains("limit of 20 bytes"),
        "{err}"
    );
    // a dim beyond int64 is too large, not negative
    let (code, _, err) = perf(&["-m", "m", "-u", &url, "--shape", "X:18446744073709551615"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("too large") && !err.contains(">= 0"), "{err}");
}

#[test]
fn limits_of_zero_are_usage_errors() {
    for (flag, value) in [
        ("--max-concurrency", "0"),
        ("--max-response-bytes", "0"),
        ("--max-input-bytes", "0"),
    ] {
        let (code, _, err) = perf(&["-m", "m", "-u", "127.0.0.1:1", flag, value]);
        assert_eq!(code, 2, "{flag}: {err}");
        assert!(
            err.starts_with("error:") && err.contains(flag) && err.contains("at least 1"),
            "{flag}: {err}"
        );
    }
}

#[test]
fn a_server_that_does_not_speak_grpc_is_named_as_such() {
    for h in [Hostile::Http11, Hostile::Garbage] {
        let s = Server::start("", h, vec![4]);
        let (code, out, err) =
            perf(&["-m", "m", "-i", "grpc", "-u", &s.url(), "--timeout", "5000"]);
        assert_eq!(code, 2, "{out}{err}");
        assert!(
            err.contains("does not speak gRPC") && !err.contains("refused"),
            "{err}"
        );
    }
}
