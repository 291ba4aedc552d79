//! The gRPC side of `tritonctl perf` (`-i grpc`): the KServe v2 / Triton
//! service from `proto/grpc_service.proto` through a tonic client on one
//! HTTP/2 connection.
//!
//! - discovery (metadata, config, statistics) is turned into the same JSON
//!   documents the HTTP endpoints give, so [`super::model`] and
//!   [`super::stats`] read both protocols alike;
//! - requests always carry their tensors in `raw_input_contents`;
//! - unary `ModelInfer` by default; with `--streaming`, `ModelStreamInfer`
//!   over a pool of bidirectional streams (a request takes an idle stream or
//!   opens one, so there is one stream per request in flight, which is one
//!   per concurrency slot or live sequence), replies matched to requests by
//!   request id;
//! - failures are classified into the same [`ErrorKind`]s as HTTP.

use super::client::{ClientTime, Endpoint, ErrorKind};
use super::exchange::{push_response, Cancel, Exchange};
use super::inputs::Body;
use crate::inputs::codec::encode_le;
use crate::inputs::json::values_from_json;
use crate::tensor::DataType;
use bytes::Bytes;
use pb::grpc_inference_service_client::GrpcInferenceServiceClient;
use pb::infer_parameter::ParameterChoice;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::metadata::{AsciiMetadataKey, AsciiMetadataValue};
use tonic::transport::Channel;
use tonic::{Code, Status};

/// Messages, client and server generated from `proto/grpc_service.proto`
/// (the server is there for tests that stand in for Triton).
#[allow(clippy::all, missing_docs)]
pub mod pb {
    include!(concat!(env!("OUT_DIR"), "/grpc/inference.rs"));
}

/// Triton accepts messages up to 2 GiB; so does this client.
pub const MAX_MESSAGE_SIZE: usize = i32::MAX as usize;

/// An inference request message already encoded: the request built once
/// (`base`) followed by the fields of this request (`extra`: request
/// parameters, id). Protobuf reads concatenated messages as one message,
/// later scalar fields and map entries replacing earlier ones, so a
/// request is never re-encoded as a whole.
#[derive(Debug, Clone)]
pub struct Encoded {
    pub base: Bytes,
    pub extra: Bytes,
}

/// Sends [`Encoded`] messages as they are and receives messages as bytes,
/// so that (un)marshalling happens in the request's own task, where it is
/// timed (perf_analyzer's "Client Send" and "Client Recv" for gRPC).
#[derive(Debug, Clone, Copy, Default)]
struct RawCodec;

impl Codec for RawCodec {
    type Encode = Encoded;
    type Decode = Bytes;
    type Encoder = RawCodec;
    type Decoder = RawCodec;

    fn encoder(&mut self) -> RawCodec {
        RawCodec
    }

    fn decoder(&mut self) -> RawCodec {
        RawCodec
    }
}

impl Encoder for RawCodec {
    type Item = Encoded;
    type Error = Status;

    fn encode(&mut self, item: Encoded, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        use bytes::BufMut;
        dst.put_slice(&item.base);
        dst.put_slice(&item.extra);
        Ok(())
    }
}

impl Decoder for RawCodec {
    type Item = Bytes;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        use bytes::Buf;
        let n = src.remaining();
        Ok(Some(src.copy_to_bytes(n)))
    }
}

const MODEL_INFER: &str = "/inference.GRPCInferenceService/ModelInfer";
const MODEL_STREAM_INFER: &str = "/inference.GRPCInferenceService/ModelStreamInfer";

/// The encoded request fields of one request: its parameters (sequence id
/// and flags) and, on a stream, its id; `empty_final` asks for an empty
/// final response (decoupled models).
fn encode_extra(params: Option<&Map<String, Value>>, id: Option<&str>, empty_final: bool) -> Bytes {
    use prost::Message;
    let mut m = pb::ModelInferRequest::default();
    if let Some(p) = params {
        for (k, v) in p {
            if let Some(ip) = parameter(v) {
                m.parameters.insert(k.clone(), ip);
            }
        }
    }
    if empty_final {
        m.parameters.insert(
            ENABLE_EMPTY_FINAL.to_string(),
            pb::InferParameter {
                parameter_choice: Some(ParameterChoice::BoolParam(true)),
            },
        );
    }
    if let Some(id) = id {
        m.id = id.to_string();
    }
    if m.parameters.is_empty() && m.id.is_empty() {
        return Bytes::new();
    }
    Bytes::from(m.encode_to_vec())
}

/// Request fields with encoded requested outputs appended (protobuf
/// appends repeated fields of concatenated messages).
fn with_outputs(extra: Bytes, outputs: Option<&Bytes>) -> Bytes {
    match outputs {
        None => extra,
        Some(o) if extra.is_empty() => o.clone(),
        Some(o) => {
            let mut all = extra.to_vec();
            all.extend_from_slice(o);
            Bytes::from(all)
        }
    }
}

/// Decodes and checks an inference answer; with the time it took.
fn decode_response(bytes: &[u8]) -> (Result<(), ErrorKind>, Duration) {
    let t = Instant::now();
    let r = check_response_bytes(bytes);
    (r, t.elapsed())
}

/// Decodes and checks an encoded `ModelInferResponse`; a pure function of
/// the bytes, also fuzzed (`fuzz/fuzz_targets/perf_response.rs`).
pub fn check_response_bytes(bytes: &[u8]) -> Result<(), ErrorKind> {
    use prost::Message;
    match pb::ModelInferResponse::decode(bytes) {
        Ok(resp) => check_response(&resp),
        Err(_) => Err(ErrorKind::Malformed),
    }
}

/// A reply for a waiting stream request: its outcome and its decoding
/// time.
type Reply = Result<Duration, ErrorKind>;

/// The request parameter by which a client asks Triton for an empty final
/// response when a decoupled model ends a request without a response
/// (docs/spec/v2-protocol.md, "Decoupled models over the wire").
pub const ENABLE_EMPTY_FINAL: &str = "triton_enable_empty_final_response";
/// The response parameter that marks a request's last response.
pub const FINAL_RESPONSE: &str = "triton_final_response";

/// Replies of one decoupled request held between the stream's reader and
/// the request: a few, so that a request that stops reading holds the
/// reader back instead of memory growing.
const PARTS_IN_FLIGHT: usize = 64;

/// One reply to a decoupled model's request.
#[derive(Debug, Clone)]
struct Part {
    /// When its message arrived.
    at: Instant,
    /// Decoding and checking it.
    recv: Duration,
    outcome: Result<Piece, ErrorKind>,
}

/// What a well-formed reply to a decoupled request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    /// It carries outputs: a response, counted as one.
    pub output: bool,
    /// It carries the final-response flag: the request is over.
    pub last: bool,
}

/// Classifies a decoupled model's stream reply: an error reply ends the
/// request as [`ErrorKind::StreamFailed`]; a reply without a response, with
/// outputs that do not match their raw contents, or with a final flag that
/// is not a boolean is [`ErrorKind::Malformed`]. A pure function of the
/// message.
fn classify(reply: &pb::ModelStreamInferResponse) -> Result<Piece, ErrorKind> {
    if !reply.error_message.is_empty() {
        return Err(ErrorKind::StreamFailed);
    }
    let Some(resp) = &reply.infer_response else {
        return Err(ErrorKind::Malformed);
    };
    check_response(resp)?;
    let last = match resp
        .parameters
        .get(FINAL_RESPONSE)
        .map(|p| &p.parameter_choice)
    {
        None => false,
        Some(Some(ParameterChoice::BoolParam(b))) => *b,
        Some(_) => return Err(ErrorKind::Malformed),
    };
    Ok(Piece {
        output: !resp.outputs.is_empty(),
        last,
    })
}

/// Decodes and classifies an encoded `ModelStreamInferResponse` as a reply
/// to a decoupled request.
pub fn check_stream_reply_bytes(bytes: &[u8]) -> Result<Piece, ErrorKind> {
    use prost::Message;
    match pb::ModelStreamInferResponse::decode(bytes) {
        Ok(r) => classify(&r),
        Err(_) => Err(ErrorKind::Malformed),
    }
}

/// A request waiting on a stream.
enum Waiter {
    /// One answer (a model that is not decoupled).
    One(oneshot::Sender<Reply>),
    /// A decoupled model's request: every reply until the final one.
    Many(mpsc::Sender<Part>),
}

type Pending = HashMap<String, Waiter>;

/// One `ModelStreamInfer` call: requests go in through `tx`, a reader task
/// hands every reply to the request with the same id.
struct InferStream {
    tx: mpsc::UnboundedSender<Encoded>,
    pending: Mutex<Pending>,
    /// The stream ended: no more requests.
    dead: AtomicBool,
    next_id: AtomicU64,
    /// Stops the reader, which drops the call: with the request side gone
    /// too (this stream dropped), the HTTP/2 stream is reset and the server
    /// sees the call cancelled.
    stop: Arc<tokio::sync::Notify>,
}

/// How a stream's end fails a decoupled request still waiting on it: a
/// refused connection, an answer above the limit or one that does not
/// decode keep their kind, and so does a status the server gave instead of
/// opening the stream; any other end (the server closing the stream, a
/// reset, a lost connection) comes before the final response.
fn end_of_stream_kind(kind: &ErrorKind, opened: bool) -> ErrorKind {
    match kind {
        ErrorKind::Connect | ErrorKind::TooLarge(_) | ErrorKind::Malformed => kind.clone(),
        ErrorKind::Grpc(_) if !opened => kind.clone(),
        _ => ErrorKind::StreamIncomplete,
    }
}

impl InferStream {
    /// Ends the stream for good, failing what is still waiting. `opened`:
    /// the call had been answered (its response headers came).
    fn fail_all(&self, kind: ErrorKind, opened: bool) {
        let waiting: Vec<_> = {
            let mut p = self.pending.lock().expect("stream lock");
            self.dead.store(true, Ordering::SeqCst);
            p.drain().map(|(_, w)| w).collect()
        };
        let many = end_of_stream_kind(&kind, opened);
        for w in waiting {
            match w {
                Waiter::One(tx) => {
                    let _ = tx.send(Err(kind.clone()));
                }
                // a full channel: the request reads on and then sees the
                // channel closed, which also ends it as incomplete
                Waiter::Many(tx) => {
                    let _ = tx.try_send(Part {
                        at: Instant::now(),
                        recv: Duration::ZERO,
                        outcome: Err(many.clone()),
                    });
                }
            }
        }
    }

    /// Ends the call from this side: no more requests, and the reader
    /// drops the call.
    fn kill(&self) {
        self.dead.store(true, Ordering::SeqCst);
        self.stop.notify_one();
    }

    /// Hands a raw `ModelStreamInferResponse` to the request it answers;
    /// a decoupled request's reply comes back to be sent on its channel
    /// (the reader waits there when the request is behind).
    fn deliver(&self, raw: &[u8]) -> Option<(mpsc::Sender<Part>, Part)> {
        use prost::Message;
        let t = Instant::now();
        let reply = match pb::ModelStreamInferResponse::decode(raw) {
            Ok(r) => r,
            // Which request it answers is unknown: the stream cannot go on.
            Err(_) => {
                self.fail_all(ErrorKind::Malformed, true);
                return None;
            }
        };
        let id = reply
            .infer_response
            .as_ref()
            .map(|r| r.id.as_str())
            .unwrap_or_default();
        let mut p = self.pending.lock().expect("stream lock");
        let key = if p.contains_key(id) {
            id.to_string()
        } else if id.is_empty() && p.len() == 1 {
            // a reply without id: only unambiguous with one request out
            p.keys().next().cloned().expect("one pending")
        } else {
            // a late reply to a request that timed out or was cancelled
            return None;
        };
        match p.get(&key) {
            Some(Waiter::Many(tx)) => {
                let outcome = classify(&reply);
                let tx = tx.clone();
                // the request is over with its final reply or an error
                if !matches!(outcome, Ok(Piece { last: false, .. })) {
                    p.remove(&key);
                }
                drop(p);
                let part = Part {
                    at: t,
                    recv: t.elapsed(),
                    outcome,
                };
                Some((tx, part))
            }
            _ => {
                let Some(Waiter::One(w)) = p.remove(&key) else {
                    return None;
                };
                drop(p);
                let r = if !reply.error_message.is_empty() {
                    Err(ErrorKind::StreamError)
                } else {
                    match &reply.infer_response {
                        Some(resp) => check_response(resp),
                        None => Err(ErrorKind::Malformed),
                    }
                };
                let _ = w.send(r.map(|()| t.elapsed()));
                None
            }
        }
    }
}

/// A gRPC connection to one server, shared by every request.
#[derive(Clone)]
pub struct GrpcClient {
    channel: Channel,
    client: GrpcInferenceServiceClient<Channel>,
    /// The same connection for inference, with messages sent and received
    /// as bytes (see [`RawCodec`]).
    raw: tonic::client::Grpc<Channel>,
    authority: String,
    headers: Arc<Vec<(AsciiMetadataKey, AsciiMetadataValue)>>,
    timeout: Duration,
    /// Idle streams, with `--streaming`.
    streams: Option<Arc<Mutex<Vec<Arc<InferStream>>>>>,
    /// Connections are TLS.
    tls: bool,
}

/// `grpc_` and the status code in snake case, e.g. `grpc_unavailable`.
pub fn code_key(code: i32) -> String {
    let name = match Code::from_i32(code) {
        Code::Ok => "ok",
        Code::Cancelled => "cancelled",
        Code::Unknown => "unknown",
        Code::InvalidArgument => "invalid_argument",
        Code::DeadlineExceeded => "deadline_exceeded",
        Code::NotFound => "not_found",
        Code::AlreadyExists => "already_exists",
        Code::PermissionDenied => "permission_denied",
        Code::ResourceExhausted => "resource_exhausted",
        Code::FailedPrecondition => "failed_precondition",
        Code::Aborted => "aborted",
        Code::OutOfRange => "out_of_range",
        Code::Unimplemented => "unimplemented",
        Code::Internal => "internal",
        Code::Unavailable => "unavailable",
        Code::DataLoss => "data_loss",
        Code::Unauthenticated => "unauthenticated",
    };
    format!("grpc_{name}")
}

/// Classifies a failed call: no connection, a broken one, an answer that
/// does not decode, or a status the server sent.
pub fn kind_of(s: &Status) -> ErrorKind {
    let Some(mut src) = std::error::Error::source(s) else {
        if s.code() == Code::Internal && s.message().starts_with("failed to decode") {
            return ErrorKind::Malformed;
        }
        if let Some(limit) = too_large_limit(s) {
            return ErrorKind::TooLarge(limit);
        }
        return ErrorKind::Grpc(s.code() as i32);
    };
    // a failure on this side: find out whether a connection was made
    loop {
        if let Some(f) = src.downcast_ref::<super::tls::ConnectFailure>() {
            return f.0.clone();
        }
        // after the handshake: a server refusing the client certificate
        if let Some(r) = super::tls::rustls_error(src) {
            return ErrorKind::Tls(super::tls::explain_grpc(r));
        }
        // h2 keeps only the text of an I/O error's cause: rustls's alert
        if let Some(alert) = src.to_string().split("received fatal alert: ").nth(1) {
            return ErrorKind::Tls(super::tls::explain_grpc_alert(alert));
        }
        if let Some(io) = src.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind as Io;
            if matches!(
                io.kind(),
                Io::ConnectionRefused
                    | Io::HostUnreachable
                    | Io::NetworkUnreachable
                    | Io::AddrNotAvailable
                    | Io::NotFound
            ) {
                return ErrorKind::Connect;
            }
        }
        // hyper-util's connector names its failures ("tcp connect error",
        // "dns error"); errors once connected (an HTTP/2 "connection
        // error", a GOAWAY) are not failures to connect
        let text = src.to_string();
        if text.starts_with("tcp ") || text == "dns error" {
            return ErrorKind::Connect;
        }
        match src.source() {
            Some(next) => src = next,
            None => return ErrorKind::Connection,
        }
    }
}

/// Whether a failed call is a status the server sent (not a failure on
/// this side: no connection, a timeout, an answer above the limit).
fn from_server(s: &Status) -> bool {
    std::error::Error::source(s).is_none()
        && s.code() != Code::DeadlineExceeded
        && too_large_limit(s).is_none()
}

/// The limit named by tonic's refusal of a message above
/// `max_decoding_message_size`.
fn too_large_limit(s: &Status) -> Option<u64> {
    if s.code() != Code::OutOfRange {
        return None;
    }
    let rest = s
        .message()
        .strip_prefix("Error, decoded message length too large")?;
    let (_, limit) = rest.split_once("the limit is: ")?;
    limit.trim_end_matches(" bytes").trim().parse().ok()
}

/// Checks a reply: as many raw output buffers as outputs (when raw).
fn check_response(r: &pb::ModelInferResponse) -> Result<(), ErrorKind> {
    if !r.raw_output_contents.is_empty() && r.raw_output_contents.len() != r.outputs.len() {
        return Err(ErrorKind::Malformed);
    }
    Ok(())
}

/// A JSON request parameter as an `InferParameter`: booleans, integers
/// (as `int64_param`, the case Triton accepts for sequence ids), strings,
/// other numbers as doubles.
pub fn parameter(v: &Value) -> Option<pb::InferParameter> {
    let choice = match v {
        Value::Bool(b) => ParameterChoice::BoolParam(*b),
        Value::String(s) => ParameterChoice::StringParam(s.clone()),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => ParameterChoice::Int64Param(i),
            (None, Some(u), _) => ParameterChoice::Uint64Param(u),
            (_, _, Some(f)) => ParameterChoice::DoubleParam(f),
            _ => return None,
        },
        _ => return None,
    };
    Some(pb::InferParameter {
        parameter_choice: Some(choice),
    })
}

/// JSON tensor values as raw little-endian bytes (BYTES elements with
/// 4-byte length prefixes), through the encoder of `run` and of HTTP data
/// files, so that a value becomes the same bytes whichever path sends it
/// and values beyond the type are refused.
fn raw_from_json(name: &str, dt: DataType, data: &Value) -> Result<Vec<u8>, String> {
    let values = values_from_json(data, dt).map_err(|e| {
        if e.path.is_empty() {
            format!("input '{name}': {}", e.message)
        } else {
            format!(
                "input '{name}': at {}: {}",
                e.path.trim_start_matches('.'),
                e.message
            )
        }
    })?;
    Ok(encode_le(&values.data))
}

/// The gRPC request carrying the same tensors as an HTTP body (binary
/// chunks or JSON `data`), all as `raw_input_contents`.
pub fn request_from_body(
    body: &Body,
    model: &str,
    version: Option<&str>,
) -> Result<pb::ModelInferRequest, String> {
    let mut req = pb::ModelInferRequest {
        model_name: model.to_string(),
        model_version: version.unwrap_or_default().to_string(),
        ..Default::default()
    };
    // slices of the body's bytes, shared rather than copied
    let mut tail: Bytes = match body.header_len {
        Some(n) if n <= body.bytes.len() => body.bytes.slice(n..),
        _ => Bytes::new(),
    };
    let empty = Vec::new();
    let inputs = body
        .header
        .get("inputs")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    for t in inputs {
        let name = t["name"].as_str().unwrap_or_default().to_string();
        let datatype = t["datatype"].as_str().unwrap_or_default().to_string();
        let dt = DataType::parse(&datatype)
            .ok_or_else(|| format!("input '{name}': unknown datatype '{datatype}'"))?;
        let shape: Vec<i64> = t["shape"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_i64).collect())
            .unwrap_or_default();
        if let Some(p) = t["parameters"]
            .as_object()
            .filter(|p| p.contains_key("shared_memory_region"))
        {
            // in shared memory (`--shared-memory`): no contents
            req.inputs.push(pb::model_infer_request::InferInputTensor {
                name,
                datatype,
                shape,
                parameters: p
                    .iter()
                    .filter_map(|(k, v)| Some((k.clone(), parameter(v)?)))
                    .collect(),
                ..Default::default()
            });
            continue;
        }
        let raw = match t["parameters"]["binary_data_size"].as_u64() {
            Some(n) => {
                let n = n as usize;
                if n > tail.len() {
                    return Err(format!("input '{name}': binary data is cut short"));
                }
                tail.split_to(n)
            }
            None => Bytes::from(raw_from_json(&name, dt, &t["data"])?),
        };
        req.inputs.push(pb::model_infer_request::InferInputTensor {
            name,
            datatype,
            shape,
            ..Default::default()
        });
        req.raw_input_contents.push(raw);
    }
    if let Some(outs) = body.header.get("outputs").and_then(Value::as_array) {
        for o in outs {
            if let Some(name) = o["name"].as_str() {
                req.outputs
                    .push(pb::model_infer_request::InferRequestedOutputTensor {
                        name: name.to_string(),
                        ..Default::default()
                    });
            }
        }
    }
    // request parameters, except the HTTP-only binary output switch
    if let Some(p) = body.header.get("parameters").and_then(Value::as_object) {
        for (k, v) in p {
            if k == "binary_data_output" {
                continue;
            }
            if let Some(ip) = parameter(v) {
                req.parameters.insert(k.clone(), ip);
            }
        }
    }
    Ok(req)
}

fn tensor_json(t: &pb::model_metadata_response::TensorMetadata) -> Value {
    json!({"name": t.name, "datatype": t.datatype, "shape": t.shape})
}

fn duration_json(d: &Option<pb::StatisticDuration>) -> Value {
    let d = d.unwrap_or_default();
    json!({"count": d.count, "ns": d.ns})
}

/// A statistics answer as the HTTP endpoint's JSON document.
pub fn statistics_json(r: &pb::ModelStatisticsResponse) -> Value {
    let models: Vec<Value> = r
        .model_stats
        .iter()
        .map(|m| {
            let i = m.inference_stats.unwrap_or_default();
            json!({
                "name": m.name,
                "version": m.version,
                "last_inference": m.last_inference,
                "inference_count": m.inference_count,
                "execution_count": m.execution_count,
                "inference_stats": {
                    "success": duration_json(&i.success),
                    "fail": duration_json(&i.fail),
                    "queue": duration_json(&i.queue),
                    "compute_input": duration_json(&i.compute_input),
                    "compute_infer": duration_json(&i.compute_infer),
                    "compute_output": duration_json(&i.compute_output),
                    "cache_hit": duration_json(&i.cache_hit),
                    "cache_miss": duration_json(&i.cache_miss),
                },
            })
        })
        .collect();
    json!({ "model_stats": models })
}

/// A metadata answer as the HTTP endpoint's JSON document.
pub fn metadata_json(m: &pb::ModelMetadataResponse) -> Value {
    json!({
        "name": m.name,
        "versions": m.versions,
        "platform": m.platform,
        "inputs": m.inputs.iter().map(tensor_json).collect::<Vec<_>>(),
        "outputs": m.outputs.iter().map(tensor_json).collect::<Vec<_>>(),
    })
}

/// A model config as the HTTP config endpoint's JSON (proto field names,
/// defaults left out).
pub fn config_json(c: &crate::schema::inference::ModelConfig) -> Result<Value, String> {
    use prost::Message;
    use prost_reflect::{DynamicMessage, SerializeOptions};
    let msg = DynamicMessage::decode(crate::schema::model_config(), c.encode_to_vec().as_slice())
        .map_err(|e| format!("the model config does not decode: {e}"))?;
    let opts = SerializeOptions::new()
        .use_proto_field_name(true)
        .stringify_64_bit_integers(false);
    msg.serialize_with_options(serde_json::value::Serializer, &opts)
        .map_err(|e| format!("the model config does not convert to JSON: {e}"))
}

/// A message size limit as tonic takes it (at most Triton's 2 GiB).
fn decoding_limit(bytes: u64) -> usize {
    usize::try_from(bytes).map_or(MAX_MESSAGE_SIZE, |b| b.min(MAX_MESSAGE_SIZE))
}

/// The inference client: messages as bytes, answers of at most `limit`
/// bytes.
fn raw_client(channel: &Channel, limit: u64) -> tonic::client::Grpc<Channel> {
    tonic::client::Grpc::new(channel.clone())
        .max_decoding_message_size(decoding_limit(limit))
        .max_encoding_message_size(MAX_MESSAGE_SIZE)
}

impl GrpcClient {
    /// A client for `url` (`HOST:PORT`, `grpc://`, `http://` or
    /// `https://HOST:PORT`, port 8001 by default; TLS with `tls`).
    /// Connects lazily: a refused connection shows on the first call. Must
    /// be called inside a tokio runtime.
    pub fn new(
        url: &str,
        headers: &[(String, String)],
        timeout: Duration,
        streaming: bool,
        max_response_bytes: u64,
        tls: Option<&super::tls::Connector>,
    ) -> Result<Self, String> {
        let url = if super::tls::is_https(url) {
            &url[8..]
        } else {
            url
        };
        let authority = Endpoint::parse_server(url, 8001)?.authority;
        let mut meta = Vec::new();
        for (k, v) in headers {
            let key = AsciiMetadataKey::from_bytes(k.to_ascii_lowercase().as_bytes())
                .map_err(|_| format!("-H '{k}' is not a valid gRPC metadata key"))?;
            let value = AsciiMetadataValue::try_from(v.as_str())
                .map_err(|_| format!("-H '{k}: {v}' is not a valid gRPC metadata value"))?;
            meta.push((key, value));
        }
        let scheme = if tls.is_some() { "https" } else { "http" };
        // every connection through the one connector of `perf` (plain or
        // TLS, src/perf/tls.rs); tonic's own TLS stays off
        let channel = tonic::transport::Endpoint::from_shared(format!("{scheme}://{authority}"))
            .map_err(|e| format!("-u {url}: {e}"))?
            .connect_timeout(timeout)
            .http2_adaptive_window(true)
            .connect_with_connector_lazy(super::tls::grpc_connector(
                authority.clone(),
                tls.cloned(),
            ));
        // tonic refuses a message whose length prefix is above the limit
        // before reading it
        let client = GrpcInferenceServiceClient::new(channel.clone())
            .max_decoding_message_size(decoding_limit(max_response_bytes))
            .max_encoding_message_size(MAX_MESSAGE_SIZE);
        Ok(GrpcClient {
            raw: raw_client(&channel, max_response_bytes),
            channel,
            client,
            authority,
            headers: Arc::new(meta),
            timeout,
            streams: streaming.then(|| Arc::new(Mutex::new(Vec::new()))),
            tls: tls.is_some(),
        })
    }

    pub fn authority(&self) -> &str {
        &self.authority
    }

    /// The same connection with inference answers bounded by `limit`
    /// bytes.
    pub fn with_infer_limit(&self, limit: u64) -> Self {
        GrpcClient {
            raw: raw_client(&self.channel, limit),
            ..self.clone()
        }
    }

    fn request<T>(&self, msg: T) -> tonic::Request<T> {
        let mut r = tonic::Request::new(msg);
        for (k, v) in self.headers.iter() {
            r.metadata_mut().insert(k.clone(), v.clone());
        }
        r
    }

    /// A sentence for a failure before the load starts.
    pub fn describe(&self, s: &Status) -> String {
        let at = &self.authority;
        match kind_of(s) {
            ErrorKind::Tls(m) if m.contains(at.as_str()) => m,
            ErrorKind::Tls(m) => format!("{at}: {m}"),
            ErrorKind::Connect => {
                format!(
                    "cannot connect to the gRPC server at {at} (connection refused or unreachable)"
                )
            }
            // over TLS the handshake went through: a server that requires
            // a client certificate breaks the connection after it (TLS 1.3),
            // and the alert's cause does not reach this error
            ErrorKind::Connection if self.tls => format!(
                "the TLS connection to the gRPC server at {at} broke: {}; a server that requires a client certificate ends it so (--ssl-grpc-certificate-chain-file and --ssl-grpc-private-key-file)",
                s.message()
            ),
            // before the load, the first calls: a server that takes the
            // connection but breaks the call is not speaking gRPC (an
            // HTTP/1.1 port, another protocol, or a crash)
            ErrorKind::Connection => format!(
                "the server at {at} accepted the connection but does not speak gRPC (HTTP/2): {}; is it an HTTP port? (Triton's gRPC port is 8001)",
                s.message()
            ),
            ErrorKind::TooLarge(n) => super::client::too_large(at, n),
            _ => format!(
                "the gRPC server at {at} answered {}: {}",
                code_key(s.code() as i32)
                    .trim_start_matches("grpc_")
                    .to_uppercase(),
                s.message()
            ),
        }
    }

    async fn within<T>(
        &self,
        f: impl std::future::Future<Output = Result<T, Status>>,
    ) -> Result<T, Status> {
        match tokio::time::timeout(self.timeout, f).await {
            Ok(r) => r,
            Err(_) => Err(Status::deadline_exceeded(format!(
                "no answer within {} ms",
                self.timeout.as_millis()
            ))),
        }
    }

    /// The model metadata as JSON (the HTTP document's shape).
    pub async fn metadata(&self, model: &str, version: Option<&str>) -> Result<Value, String> {
        let req = self.request(pb::ModelMetadataRequest {
            name: model.to_string(),
            version: version.unwrap_or_default().to_string(),
        });
        let mut c = self.client.clone();
        match self.within(c.model_metadata(req)).await {
            Ok(r) => Ok(metadata_json(r.get_ref())),
            Err(s) if from_server(&s) => Err(format!(
                "model '{model}' is not available at {}: gRPC {}: {}",
                self.authority,
                code_key(s.code() as i32)
                    .trim_start_matches("grpc_")
                    .to_uppercase(),
                s.message()
            )),
            Err(s) => Err(self.describe(&s)),
        }
    }

    /// The model config as JSON; `None` when the server has none to give.
    pub async fn config(
        &self,
        model: &str,
        version: Option<&str>,
    ) -> Result<Option<Value>, String> {
        let req = self.request(pb::ModelConfigRequest {
            name: model.to_string(),
            version: version.unwrap_or_default().to_string(),
        });
        let mut c = self.client.clone();
        match self.within(c.model_config(req)).await {
            Ok(r) => match &r.get_ref().config {
                Some(cfg) => config_json(cfg).map(Some),
                None => Ok(None),
            },
            Err(s) if from_server(&s) => Ok(None),
            Err(s) => Err(self.describe(&s)),
        }
    }

    /// The statistics as JSON; `None` on any failure.
    pub async fn statistics(&self, model: &str, version: Option<&str>) -> Option<Value> {
        let req = self.request(pb::ModelStatisticsRequest {
            name: model.to_string(),
            version: version.unwrap_or_default().to_string(),
        });
        let mut c = self.client.clone();
        self.within(c.model_statistics(req))
            .await
            .ok()
            .map(|r| statistics_json(r.get_ref()))
    }

    /// Sends one inference request (`base`, an encoded `ModelInferRequest`,
    /// with extra request parameters, e.g. the sequence id and flags) and
    /// waits for its answer.
    /// `outputs`: encoded requested outputs appended to the message
    /// (`--shared-memory`).
    pub async fn infer(
        &self,
        base: &Bytes,
        params: Option<&Map<String, Value>>,
        outputs: Option<&Bytes>,
    ) -> Result<ClientTime, ErrorKind> {
        let started = Instant::now();
        match &self.streams {
            None => {
                let msg = Encoded {
                    base: base.clone(),
                    extra: with_outputs(encode_extra(params, None, false), outputs),
                };
                let send = started.elapsed();
                let mut g = self.raw.clone();
                let call = async {
                    g.ready()
                        .await
                        .map_err(|e| Status::from_error(Box::new(e)))?;
                    g.unary(
                        self.request(msg),
                        tonic::codegen::http::uri::PathAndQuery::from_static(MODEL_INFER),
                        RawCodec,
                    )
                    .await
                };
                match tokio::time::timeout(self.timeout, call).await {
                    Err(_) => Err(ErrorKind::Timeout),
                    Ok(Err(s)) => Err(kind_of(&s)),
                    Ok(Ok(r)) => {
                        let (r, recv) = decode_response(r.get_ref());
                        r.map(|()| ClientTime { send, recv })
                    }
                }
            }
            Some(pool) => {
                self.infer_streamed(pool, base, params, outputs, started)
                    .await
            }
        }
    }

    /// One unary request; the error is the server's status text.
    pub async fn try_infer(&self, base: &Bytes, outputs: Option<&Bytes>) -> Result<(), String> {
        use prost::Message;
        let mut all = base.to_vec();
        all.extend_from_slice(outputs.map_or(&[][..], |o| &o[..]));
        let req = pb::ModelInferRequest::decode(&all[..]).map_err(|e| e.to_string())?;
        let mut c = self.client.clone();
        match self.within(c.model_infer(self.request(req))).await {
            Ok(r) => check_response(r.get_ref())
                .map_err(|_| format!("the server at {} sent a malformed answer", self.authority)),
            Err(s) if from_server(&s) => Err(format!(
                "gRPC {}: {}",
                code_key(s.code() as i32)
                    .trim_start_matches("grpc_")
                    .to_uppercase(),
                s.message()
            )),
            Err(s) => Err(self.describe(&s)),
        }
    }

    /// Registers a system shared-memory region (offset 0 in the object
    /// `key`).
    pub async fn register_system_shm(
        &self,
        name: &str,
        key: &str,
        byte_size: u64,
    ) -> Result<(), String> {
        let req = self.request(pb::SystemSharedMemoryRegisterRequest {
            name: name.to_string(),
            key: key.to_string(),
            offset: 0,
            byte_size,
        });
        let mut c = self.client.clone();
        self.within(c.system_shared_memory_register(req))
            .await
            .map(|_| ())
            .map_err(|s| self.describe(&s))
    }

    /// Unregisters a system shared-memory region.
    pub async fn unregister_system_shm(&self, name: &str) -> Result<(), String> {
        let req = self.request(pb::SystemSharedMemoryUnregisterRequest {
            name: name.to_string(),
        });
        let mut c = self.client.clone();
        self.within(c.system_shared_memory_unregister(req))
            .await
            .map(|_| ())
            .map_err(|s| self.describe(&s))
    }

    /// Registers a CUDA shared-memory region (`handle`: the CUDA IPC
    /// handle of the device memory).
    pub async fn register_cuda_shm(
        &self,
        name: &str,
        handle: &[u8],
        device_id: i64,
        byte_size: u64,
    ) -> Result<(), String> {
        let req = self.request(pb::CudaSharedMemoryRegisterRequest {
            name: name.to_string(),
            raw_handle: bytes::Bytes::copy_from_slice(handle),
            device_id,
            byte_size,
        });
        let mut c = self.client.clone();
        self.within(c.cuda_shared_memory_register(req))
            .await
            .map(|_| ())
            .map_err(|s| self.describe(&s))
    }

    /// Unregisters a CUDA shared-memory region.
    pub async fn unregister_cuda_shm(&self, name: &str) -> Result<(), String> {
        let req = self.request(pb::CudaSharedMemoryUnregisterRequest {
            name: name.to_string(),
        });
        let mut c = self.client.clone();
        self.within(c.cuda_shared_memory_unregister(req))
            .await
            .map(|_| ())
            .map_err(|s| self.describe(&s))
    }

    /// The same connection, sending requests over `ModelStreamInfer`
    /// streams (decoupled models need them).
    pub fn streaming(&self) -> GrpcClient {
        match self.streams {
            Some(_) => self.clone(),
            None => GrpcClient {
                streams: Some(Arc::new(Mutex::new(Vec::new()))),
                ..self.clone()
            },
        }
    }

    /// Sends one request to a decoupled model over a stream and receives
    /// its responses until the final one (or an error, `--timeout` or
    /// `cancel`).
    pub async fn infer_decoupled(
        &self,
        base: &Bytes,
        params: Option<&Map<String, Value>>,
        cancel: &Cancel,
    ) -> Exchange {
        let started = Instant::now();
        let Some(pool) = &self.streams else {
            return Exchange::failed(ErrorKind::Malformed, Vec::new());
        };
        // the level is over before this request went out
        if cancel.is_cancelled() {
            return Exchange::failed(ErrorKind::Cancelled, Vec::new());
        }
        let stream = self.idle_stream(pool);
        let id = stream.next_id.fetch_add(1, Ordering::Relaxed).to_string();
        let msg = Encoded {
            base: base.clone(),
            extra: encode_extra(params, Some(&id), true),
        };
        let send = started.elapsed();
        let (tx, mut rx) = mpsc::channel(PARTS_IN_FLIGHT);
        {
            let mut p = stream.pending.lock().expect("stream lock");
            if stream.dead.load(Ordering::SeqCst) {
                return Exchange::failed(ErrorKind::Connection, Vec::new());
            }
            p.insert(id.clone(), Waiter::Many(tx));
        }
        if stream.tx.send(msg).is_err() {
            stream.pending.lock().expect("stream lock").remove(&id);
            return Exchange::failed(ErrorKind::Connection, Vec::new());
        }
        let mut responses = Vec::new();
        let mut recv = Duration::ZERO;
        let deadline = tokio::time::sleep(self.timeout);
        tokio::pin!(deadline);
        let result = loop {
            let part = tokio::select! {
                biased;
                _ = cancel.cancelled() => break Err(ErrorKind::Cancelled),
                _ = &mut deadline => break Err(ErrorKind::Timeout),
                part = rx.recv() => part,
            };
            // the reader is gone without a word: the stream ended
            let Some(part) = part else {
                break Err(ErrorKind::StreamIncomplete);
            };
            recv += part.recv;
            match part.outcome {
                Ok(piece) => {
                    if piece.output {
                        if let Err(k) = push_response(&mut responses, part.at) {
                            break Err(k);
                        }
                    }
                    if piece.last {
                        break Ok(());
                    }
                }
                Err(k) => break Err(k),
            }
        };
        match &result {
            // the request is over, the stream can take the next one
            Ok(()) if !stream.dead.load(Ordering::SeqCst) => {
                pool.lock().expect("stream pool lock").push(stream);
            }
            Ok(()) => {}
            // the request may still run on the server (cut off here, an
            // error reply, no final response in time): the call is
            // cancelled so that the server stops, and the stream is not
            // used again
            Err(_) => {
                stream.pending.lock().expect("stream lock").remove(&id);
                stream.kill();
            }
        }
        Exchange {
            result,
            time: ClientTime { send, recv },
            responses,
            tokens: None,
        }
    }

    /// An idle stream of the pool, or a new one.
    fn idle_stream(&self, pool: &Arc<Mutex<Vec<Arc<InferStream>>>>) -> Arc<InferStream> {
        loop {
            let s = pool.lock().expect("stream pool lock").pop();
            match s {
                Some(s) if !s.dead.load(Ordering::SeqCst) => break s,
                Some(_) => continue,
                None => break self.open_stream(),
            }
        }
    }

    async fn infer_streamed(
        &self,
        pool: &Arc<Mutex<Vec<Arc<InferStream>>>>,
        base: &Bytes,
        params: Option<&Map<String, Value>>,
        outputs: Option<&Bytes>,
        started: Instant,
    ) -> Result<ClientTime, ErrorKind> {
        let stream = self.idle_stream(pool);
        let id = stream.next_id.fetch_add(1, Ordering::Relaxed).to_string();
        let msg = Encoded {
            base: base.clone(),
            extra: with_outputs(encode_extra(params, Some(&id), false), outputs),
        };
        let send = started.elapsed();
        let (tx, rx) = oneshot::channel();
        {
            let mut p = stream.pending.lock().expect("stream lock");
            if stream.dead.load(Ordering::SeqCst) {
                return Err(ErrorKind::Connection);
            }
            p.insert(id.clone(), Waiter::One(tx));
        }
        if stream.tx.send(msg).is_err() {
            stream.pending.lock().expect("stream lock").remove(&id);
            return Err(ErrorKind::Connection);
        }
        let r = match tokio::time::timeout(self.timeout, rx).await {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => Err(ErrorKind::Connection),
            Err(_) => {
                stream.pending.lock().expect("stream lock").remove(&id);
                Err(ErrorKind::Timeout)
            }
        };
        if !stream.dead.load(Ordering::SeqCst) {
            pool.lock().expect("stream pool lock").push(stream);
        }
        r.map(|recv| ClientTime { send, recv })
    }

    /// Opens a `ModelStreamInfer` call; its reader task runs until the
    /// server ends the stream or the stream is dropped.
    fn open_stream(&self) -> Arc<InferStream> {
        let (tx, rx) = mpsc::unbounded_channel();
        let stop = Arc::new(tokio::sync::Notify::new());
        let stream = Arc::new(InferStream {
            tx,
            pending: Mutex::new(HashMap::new()),
            dead: AtomicBool::new(false),
            next_id: AtomicU64::new(1),
            stop: stop.clone(),
        });
        let reader = Arc::downgrade(&stream);
        let req = self.request(tokio_stream::wrappers::UnboundedReceiverStream::new(rx));
        let mut g = self.raw.clone();
        tokio::spawn(async move {
            let opened = async {
                g.ready()
                    .await
                    .map_err(|e| Status::from_error(Box::new(e)))?;
                g.streaming(
                    req,
                    tonic::codegen::http::uri::PathAndQuery::from_static(MODEL_STREAM_INFER),
                    RawCodec,
                )
                .await
            };
            let opened = tokio::select! {
                _ = stop.notified() => return,
                r = opened => r,
            };
            let (end, was_open) = match opened {
                Err(s) => (kind_of(&s), false),
                Ok(resp) => {
                    let mut inbound = resp.into_inner();
                    let end = loop {
                        let m = tokio::select! {
                            _ = stop.notified() => return,
                            m = inbound.message() => m,
                        };
                        match m {
                            Ok(Some(raw)) => {
                                let part = match reader.upgrade() {
                                    Some(s) => s.deliver(&raw),
                                    None => return,
                                };
                                if let Some((tx, part)) = part {
                                    // a request that is gone (over,
                                    // cancelled) no longer reads
                                    let _ = tx.send(part).await;
                                }
                            }
                            Ok(None) => break ErrorKind::Connection,
                            Err(s) => break kind_of(&s),
                        }
                    };
                    (end, true)
                }
            };
            if let Some(s) = reader.upgrade() {
                s.fail_all(end, was_open);
            }
        });
        stream
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::inputs::{self, BodyOptions, InputData};
    use crate::perf::model::{InputSpec, ModelInfo};

    fn info() -> ModelInfo {
        ModelInfo {
            name: "m".into(),
            max_batch_size: 4,
            inputs: vec![
                InputSpec {
                    name: "X".into(),
                    datatype: DataType::I32,
                    dims: vec![3],
                    optional: false,
                },
                InputSpec {
                    name: "S".into(),
                    datatype: DataType::Bytes,
                    dims: vec![1],
                    optional: false,
                },
            ],
            outputs: vec!["Y".into()],
            output_sizes: vec![Some((3, 4))],
            sequence: false,
            decoupled: false,
            has_config: true,
        }
    }

    fn body(binary: bool) -> Body {
        inputs::build(
            &info(),
            BodyOptions {
                batch: 2,
                data: InputData::Random,
                seed: 7,
                binary_inputs: binary,
                binary_outputs: binary,
                max_input_bytes: 1 << 20,
            },
        )
        .unwrap()
    }

    #[test]
    fn json_and_binary_bodies_give_the_same_raw_tensors() {
        let a = request_from_body(&body(true), "m", Some("2")).unwrap();
        let b = request_from_body(&body(false), "m", None).unwrap();
        assert_eq!(a.model_version, "2");
        assert_eq!(a.inputs.len(), 2);
        assert_eq!(a.inputs[0].shape, vec![2, 3]);
        assert_eq!(a.inputs[1].datatype, "BYTES");
        // 6 INT32 values, 2 strings with 4-byte length prefixes
        assert_eq!(a.raw_input_contents[0].len(), 24);
        let s = &a.raw_input_contents[1];
        let first = u32::from_le_bytes([s[0], s[1], s[2], s[3]]) as usize;
        assert_eq!(s.len(), 2 * (4 + first));
        assert_eq!(a.raw_input_contents, b.raw_input_contents);
        assert_eq!(b.outputs[0].name, "Y");
        // the HTTP-only switch does not go over gRPC
        assert!(!a.parameters.contains_key("binary_data_output"));
    }

    /// A JSON body's values reach gRPC encoded as `run` and HTTP data files
    /// encode them (one encoder): FP16 rounded once from the JSON number
    /// (numpy's `np.float64(1.0004882812509095).astype(np.float16)` is
    /// 1.0009765625, bits 0x3c01), values beyond the type refused naming
    /// the input.
    #[test]
    fn json_bodies_are_encoded_by_the_shared_encoder() {
        let raw = |datatype: &str, data: Value| {
            let header = json!({"inputs": [
                {"name": "X", "shape": [3], "datatype": datatype, "data": data}
            ]});
            let body = Body {
                bytes: Bytes::from(serde_json::to_vec(&header).unwrap()),
                header_len: None,
                header: header.as_object().unwrap().clone(),
            };
            request_from_body(&body, "m", None).map(|r| r.raw_input_contents[0].to_vec())
        };
        let halves = |raw: Vec<u8>| -> Vec<u16> {
            raw.chunks(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .collect()
        };
        let got = raw("FP16", json!([1.0004882812509095, 0.5, 65504])).unwrap();
        assert_eq!(halves(got), [0x3c01, 0x3800, 0x7bff]);
        let x = 1.0 + 2f64.powi(-8) + 2f64.powi(-40);
        let got = raw("BF16", json!([x, 1, -2])).unwrap();
        assert_eq!(halves(got), [0x3f81, 0x3f80, 0xc000]);
        let e = raw("FP16", json!([1, 2, 70000])).unwrap_err();
        assert!(
            e.contains("input 'X'") && e.contains("70000 does not fit FP16"),
            "{e}"
        );
        let e = raw("FP32", json!([1, 2, 1e40])).unwrap_err();
        assert!(
            e.contains("input 'X'") && e.contains("does not fit FP32"),
            "{e}"
        );
        let e = raw("UINT8", json!([1, 2, 300])).unwrap_err();
        assert!(
            e.contains("input 'X'") && e.contains("300 does not fit UINT8"),
            "{e}"
        );
    }

    #[test]
    fn parameters_use_the_cases_triton_accepts() {
        let p = |v: Value| parameter(&v).unwrap().parameter_choice.unwrap();
        assert_eq!(p(json!(5)), ParameterChoice::Int64Param(5));
        assert_eq!(p(json!(true)), ParameterChoice::BoolParam(true));
        assert_eq!(p(json!("abc")), ParameterChoice::StringParam("abc".into()));
        assert_eq!(p(json!(0.5)), ParameterChoice::DoubleParam(0.5));
        assert!(parameter(&json!(null)).is_none());
    }

    #[test]
    fn request_fields_appended_to_an_encoded_request_are_one_message() {
        use prost::Message;
        let mut base = request_from_body(&body(true), "m", Some("2")).unwrap();
        base.parameters
            .insert("priority".into(), parameter(&json!(1)).unwrap());
        let bytes = Bytes::from(base.encode_to_vec());
        assert!(encode_extra(None, None, false).is_empty());
        let mut p = Map::new();
        p.insert("sequence_id".into(), json!(42));
        p.insert("sequence_start".into(), json!(true));
        let extra = encode_extra(Some(&p), Some("7"), false);
        let mut whole = bytes.to_vec();
        whole.extend_from_slice(&extra);
        let got = pb::ModelInferRequest::decode(&whole[..]).unwrap();
        let mut want = base.clone();
        want.id = "7".into();
        want.parameters
            .insert("sequence_id".into(), parameter(&json!(42)).unwrap());
        want.parameters
            .insert("sequence_start".into(), parameter(&json!(true)).unwrap());
        assert_eq!(got, want);
        assert_eq!(got.raw_input_contents, base.raw_input_contents);
    }

    #[test]
    fn decoupled_replies_are_classified() {
        use prost::Message;
        let flag = |v: ParameterChoice| {
            let mut p = HashMap::new();
            p.insert(
                FINAL_RESPONSE.to_string(),
                pb::InferParameter {
                    parameter_choice: Some(v),
                },
            );
            p
        };
        let output = pb::model_infer_response::InferOutputTensor {
            name: "Y".into(),
            ..Default::default()
        };
        let reply = |outputs: Vec<_>, parameters, error: &str| {
            pb::ModelStreamInferResponse {
                error_message: error.into(),
                infer_response: Some(pb::ModelInferResponse {
                    id: "1".into(),
                    outputs,
                    parameters,
                    ..Default::default()
                }),
            }
            .encode_to_vec()
        };
        let check = |b: Vec<u8>| check_stream_reply_bytes(&b);
        // a response, not the last
        assert_eq!(
            check(reply(vec![output.clone()], HashMap::new(), "")),
            Ok(Piece {
                output: true,
                last: false
            })
        );
        assert_eq!(
            check(reply(
                vec![output.clone()],
                flag(ParameterChoice::BoolParam(false)),
                ""
            )),
            Ok(Piece {
                output: true,
                last: false
            })
        );
        // the last response, with outputs or empty
        assert_eq!(
            check(reply(
                vec![output.clone()],
                flag(ParameterChoice::BoolParam(true)),
                ""
            )),
            Ok(Piece {
                output: true,
                last: true
            })
        );
        assert_eq!(
            check(reply(vec![], flag(ParameterChoice::BoolParam(true)), "")),
            Ok(Piece {
                output: false,
                last: true
            })
        );
        // an error reply, whatever else it carries
        assert_eq!(
            check(reply(
                vec![],
                flag(ParameterChoice::BoolParam(true)),
                "boom"
            )),
            Err(ErrorKind::StreamFailed)
        );
        // malformed: a flag that is not a boolean, no response, bad bytes
        assert_eq!(
            check(reply(vec![], flag(ParameterChoice::Int64Param(1)), "")),
            Err(ErrorKind::Malformed)
        );
        assert_eq!(
            check(pb::ModelStreamInferResponse::default().encode_to_vec()),
            Err(ErrorKind::Malformed)
        );
        assert_eq!(check(vec![0xff, 0xff]), Err(ErrorKind::Malformed));
    }

    #[test]
    fn decoupled_requests_ask_for_an_empty_final_response() {
        use prost::Message;
        let extra = encode_extra(None, Some("3"), true);
        let m = pb::ModelInferRequest::decode(&extra[..]).unwrap();
        assert_eq!(m.id, "3");
        assert_eq!(
            m.parameters[ENABLE_EMPTY_FINAL].parameter_choice,
            Some(ParameterChoice::BoolParam(true))
        );
    }

    #[test]
    fn how_a_stream_end_fails_a_decoupled_request() {
        use ErrorKind as K;
        assert_eq!(end_of_stream_kind(&K::Connect, false), K::Connect);
        assert_eq!(end_of_stream_kind(&K::Grpc(12), false), K::Grpc(12));
        assert_eq!(end_of_stream_kind(&K::Grpc(13), true), K::StreamIncomplete);
        assert_eq!(
            end_of_stream_kind(&K::Connection, true),
            K::StreamIncomplete
        );
        assert_eq!(
            end_of_stream_kind(&K::Connection, false),
            K::StreamIncomplete
        );
        assert_eq!(end_of_stream_kind(&K::TooLarge(9), true), K::TooLarge(9));
    }

    #[test]
    fn status_classification() {
        assert_eq!(
            kind_of(&Status::invalid_argument("x")),
            ErrorKind::Grpc(Code::InvalidArgument as i32)
        );
        assert_eq!(
            kind_of(&Status::internal(
                "failed to decode Protobuf message: buffer underflow"
            )),
            ErrorKind::Malformed
        );
        assert_eq!(code_key(14), "grpc_unavailable");
        assert_eq!(ErrorKind::Grpc(3).key(), "grpc_invalid_argument");
    }

    #[test]
    fn config_as_http_json() {
        use crate::schema::inference::{ModelConfig, ModelInput, ModelSequenceBatching};
        let c = ModelConfig {
            name: "m".into(),
            max_batch_size: 8,
            input: vec![ModelInput {
                name: "X".into(),
                dims: vec![4],
                ..Default::default()
            }],
            scheduling_choice: Some(
                crate::schema::inference::model_config::SchedulingChoice::SequenceBatching(
                    ModelSequenceBatching::default(),
                ),
            ),
            ..Default::default()
        };
        let v = config_json(&c).unwrap();
        assert_eq!(v["max_batch_size"], 8);
        assert_eq!(v["input"][0]["dims"], json!([4]));
        assert!(v["sequence_batching"].is_object());
    }
}
