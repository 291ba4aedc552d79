//! A small HTTP/1.1 client for KServe v2 servers: keep-alive connections
//! kept in a pool (one per request in flight), every failure classified.

use super::grpc::GrpcClient;
use super::inputs::Body;
use super::tls::Connector;
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Frame, SizeHint};
use hyper::client::conn::http1::SendRequest;
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// The client's own share of one request's latency, as perf_analyzer's
/// CSV columns "Client Send" and "Client Recv" report it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientTime {
    /// HTTP: from the start of the request (building its body included)
    /// until the transport took the last piece of the body. gRPC: building
    /// and encoding (marshalling) the request message.
    pub send: Duration,
    /// HTTP: from the answer's head until its body is read and checked.
    /// gRPC: decoding (unmarshalling) and checking the answer.
    pub recv: Duration,
}

/// How much of a request body the transport takes at a time: it asks for
/// the next piece only once earlier ones are (nearly) written, so the time
/// the last piece is taken is close to the end of sending.
const BODY_PIECE: usize = 64 * 1024;

/// A request body handed over in pieces, remembering when the last piece
/// was taken.
pub(super) struct TimedBody {
    data: Bytes,
    sent: Arc<OnceLock<Instant>>,
}

impl hyper::body::Body for TimedBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if self.data.is_empty() {
            return Poll::Ready(None);
        }
        let n = self.data.len().min(BODY_PIECE);
        let piece = self.data.split_to(n);
        if self.data.is_empty() {
            let _ = self.sent.set(Instant::now());
        }
        Poll::Ready(Some(Ok(Frame::data(piece))))
    }

    fn is_end_stream(&self) -> bool {
        self.data.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.data.len() as u64)
    }
}

/// Why a request failed.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorKind {
    /// No TCP connection (refused, unreachable, reset while connecting).
    Connect,
    /// No complete answer within `--timeout`.
    Timeout,
    /// The connection broke while sending or receiving.
    Connection,
    /// An HTTP status other than 200.
    Http(u16),
    /// A 200 answer whose body is not a v2 inference response.
    Malformed,
    /// A gRPC status other than OK, by code number.
    Grpc(i32),
    /// A gRPC stream reply carrying an `error_message`.
    StreamError,
    /// An answer larger than this many bytes (`--max-response-bytes`): it
    /// is not read further.
    TooLarge(u64),
    /// A streamed request (decoupled model, generation) whose stream ended
    /// before its final response.
    StreamIncomplete,
    /// A streamed request that received an error (an error reply on a
    /// decoupled model's stream, an `{"error": ..}` event) before its
    /// final response.
    StreamFailed,
    /// Still streaming when its level ended: cut off by the client,
    /// counted as `cancelled`, not as an error.
    Cancelled,
    /// `--shared-memory`: no output region could be made or registered
    /// for the request.
    SharedMemory,
    /// A TLS handshake or certificate check failed (the sentence says
    /// why and which flag helps).
    Tls(String),
}

impl ErrorKind {
    /// The key in `errors_by_kind`.
    pub fn key(&self) -> String {
        match self {
            ErrorKind::Connect => "connect".into(),
            ErrorKind::Timeout => "timeout".into(),
            ErrorKind::Connection => "connection".into(),
            ErrorKind::Http(s) => format!("http_{s}"),
            ErrorKind::Malformed => "malformed".into(),
            ErrorKind::Grpc(c) => super::grpc::code_key(*c),
            ErrorKind::StreamError => "grpc_stream_error".into(),
            ErrorKind::TooLarge(_) => "response_too_large".into(),
            ErrorKind::StreamIncomplete => "stream_incomplete".into(),
            ErrorKind::StreamFailed => "stream_error".into(),
            ErrorKind::Cancelled => "cancelled".into(),
            ErrorKind::SharedMemory => "shared_memory".into(),
            ErrorKind::Tls(_) => "tls".into(),
        }
    }
}

/// Where the server is.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// `host:port` for connecting and for the Host header.
    pub authority: String,
    /// An `https://` URL: connections are TLS.
    pub tls: bool,
}

impl Endpoint {
    /// `HOST:PORT`, `http://HOST:PORT[/]`, `https://HOST[:PORT][/]` (port
    /// 443) or `HOST` (port 8000).
    pub fn parse(url: &str) -> Result<Self, String> {
        Self::parse_with_port(url, 8000)
    }

    /// A server of `-u` with either protocol: as
    /// [`Endpoint::parse_with_port`], also taking gRPC's `grpc://` form.
    pub fn parse_server(url: &str, port: u16) -> Result<Self, String> {
        Self::parse_with_port(url.strip_prefix("grpc://").unwrap_or(url), port)
    }

    /// As [`Endpoint::parse`], with `port` when the URL has none.
    pub fn parse_with_port(url: &str, port: u16) -> Result<Self, String> {
        let (rest, tls, port) = if let Some(r) = url.strip_prefix("http://") {
            (r, false, port)
        } else if super::tls::is_https(url) {
            (&url[8..], true, 443)
        } else if url.contains("://") {
            return Err(format!(
                "-u {url}: only http:// and https:// URLs are supported"
            ));
        } else {
            (url, false, port)
        };
        let rest = rest.trim_end_matches('/');
        if rest.is_empty() || rest.contains('/') {
            return Err(format!("-u {url}: expected HOST:PORT"));
        }
        let authority = if rest
            .rsplit_once(':')
            .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
        {
            rest.to_string()
        } else if rest.contains(':') && !rest.starts_with('[') {
            return Err(format!("-u {url}: the port is not a number"));
        } else {
            format!("{rest}:{port}")
        };
        Ok(Endpoint { authority, tls })
    }

    /// The host, as written (an IPv6 address keeps its brackets).
    pub fn host(&self) -> &str {
        host_of(&self.authority)
    }

    /// `http` or `https`.
    pub fn scheme(&self) -> &'static str {
        if self.tls {
            "https"
        } else {
            "http"
        }
    }
}

pub(super) type Conn = SendRequest<TimedBody>;

/// Settings shared by every request.
#[derive(Debug)]
pub struct ClientConfig {
    pub endpoint: Endpoint,
    pub headers: Vec<(String, String)>,
    /// Bounds each request: connecting, sending, the answer's head and its
    /// whole body.
    pub timeout: Duration,
    /// The largest answer read from the discovery endpoints (metadata,
    /// config, statistics).
    pub max_response_bytes: u64,
    /// TLS, for an `https://` endpoint.
    pub tls: Option<Connector>,
}

/// The largest answer read from the metadata, config and statistics
/// endpoints when `--max-response-bytes` is not given: far above what a
/// model's documents take, far below what would exhaust memory.
pub const DEFAULT_DISCOVERY_RESPONSE_BYTES: u64 = 16 << 20;

/// A pool of keep-alive connections: a request takes an idle connection
/// or opens one, and gives it back when the answer was read completely.
#[derive(Clone)]
pub struct Client {
    cfg: Arc<ClientConfig>,
    idle: Arc<Mutex<Vec<Conn>>>,
    /// The largest inference answer read (see [`PerfClient::with_infer_limit`]).
    infer_limit: u64,
}

/// A full answer.
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub header_len: Option<usize>,
    pub body: Bytes,
    /// When the transport took the last piece of the request body (when
    /// the request had one).
    pub sent_at: Option<Instant>,
    /// When the answer's head arrived.
    pub head_at: Instant,
}

impl Client {
    pub fn new(cfg: ClientConfig) -> Self {
        let infer_limit = cfg.max_response_bytes;
        Client {
            cfg: Arc::new(cfg),
            idle: Arc::new(Mutex::new(Vec::new())),
            infer_limit,
        }
    }

    pub fn config(&self) -> &ClientConfig {
        &self.cfg
    }

    /// The largest inference answer read, in bytes.
    pub fn infer_limit(&self) -> u64 {
        self.infer_limit
    }

    async fn connect(&self) -> Result<Conn, ErrorKind> {
        let stream =
            super::tls::connect(&self.cfg.endpoint.authority, self.cfg.tls.as_ref()).await?;
        let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|_| ErrorKind::Connect)?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(send)
    }

    pub(super) async fn take(&self) -> Result<Conn, ErrorKind> {
        loop {
            let c = self.idle.lock().expect("pool lock").pop();
            match c {
                Some(c) if !c.is_closed() && c.is_ready() => return Ok(c),
                Some(_) => continue,
                None => return self.connect().await,
            }
        }
    }

    pub(super) fn give_back(&self, c: Conn) {
        if !c.is_closed() {
            self.idle.lock().expect("pool lock").push(c);
        }
    }

    /// Sends one request and reads the whole answer, within the timeout
    /// (which bounds the head and the body: a server trickling bytes
    /// cannot hold a request longer) and at most `limit` bytes of body.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        body: Bytes,
        content_type: Option<&str>,
        header_len: Option<usize>,
        limit: u64,
    ) -> Result<Answer, ErrorKind> {
        match tokio::time::timeout(
            self.cfg.timeout,
            self.send_inner(method, path, body, content_type, header_len, limit),
        )
        .await
        {
            Ok(r) => r,
            Err(_) => Err(ErrorKind::Timeout),
        }
    }

    async fn send_inner(
        &self,
        method: Method,
        path: &str,
        body: Bytes,
        content_type: Option<&str>,
        header_len: Option<usize>,
        limit: u64,
    ) -> Result<Answer, ErrorKind> {
        let mut conn = self.take().await?;
        let mut req = self.request(method, path);
        if let Some(ct) = content_type {
            req = req.header(hyper::header::CONTENT_TYPE, ct);
        }
        if let Some(n) = header_len {
            req = req.header("Inference-Header-Content-Length", n);
        }
        let (resp, head_at, sent_at) = self.start(&mut conn, req, body).await?;
        let (parts, body) = resp.into_parts();
        let body = read_body(body, limit).await?;
        // a connection the server is about to close is not reused: the
        // next request on it would fail
        if keeps_alive(parts.version, &parts.headers) {
            self.give_back(conn);
        }
        let header_len = parts
            .headers
            .get("inference-header-content-length")
            .and_then(|v| parse_header_len(v.as_bytes()));
        Ok(Answer {
            status: parts.status,
            header_len,
            body,
            sent_at,
            head_at,
        })
    }

    /// A request to `path` with the Host header and the `-H` headers.
    pub(super) fn request(&self, method: Method, path: &str) -> hyper::http::request::Builder {
        let mut req = Request::builder()
            .method(method)
            .uri(path)
            .header(hyper::header::HOST, &self.cfg.endpoint.authority);
        for (k, v) in &self.cfg.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        req
    }

    /// Sends `req` with `body` (handed over in pieces) on `conn` and waits
    /// for the answer's head; with when it came and when the transport took
    /// the last piece of the body.
    pub(super) async fn start(
        &self,
        conn: &mut Conn,
        req: hyper::http::request::Builder,
        body: Bytes,
    ) -> Result<
        (
            hyper::Response<hyper::body::Incoming>,
            Instant,
            Option<Instant>,
        ),
        ErrorKind,
    > {
        let sent = Arc::new(OnceLock::new());
        let req = req
            .body(TimedBody {
                data: body,
                sent: sent.clone(),
            })
            .map_err(|_| ErrorKind::Connection)?;
        conn.ready().await.map_err(|e| self.broken(&e))?;
        let resp = conn.send_request(req).await.map_err(|e| self.broken(&e))?;
        Ok((resp, Instant::now(), sent.get().copied()))
    }

    /// The kind of a broken connection: a TLS failure after the handshake
    /// (a server refusing the client certificate) says so.
    fn broken(&self, e: &hyper::Error) -> ErrorKind {
        self.cfg
            .tls
            .as_ref()
            .and_then(|t| t.kind_after_handshake(&self.cfg.endpoint.authority, e))
            .unwrap_or(ErrorKind::Connection)
    }

    /// GET `path`, bounded by the response limit of discovery answers.
    async fn get(&self, path: &str) -> Result<Answer, String> {
        self.send(
            Method::GET,
            path,
            Bytes::new(),
            None,
            None,
            self.cfg.max_response_bytes,
        )
        .await
        .map_err(|k| self.describe(&k))
    }

    /// GET a JSON document; `Ok(None)` for a 4xx/5xx answer.
    pub async fn get_json(&self, path: &str) -> Result<Option<Value>, String> {
        let a = self.get(path).await?;
        if !a.status.is_success() {
            return Ok(None);
        }
        serde_json::from_slice(&a.body).map(Some).map_err(|e| {
            let shown: String = String::from_utf8_lossy(&a.body).chars().take(200).collect();
            format!(
                "GET {}://{}{path}: the answer is not JSON ({e}): {shown:?}",
                self.cfg.endpoint.scheme(),
                self.cfg.endpoint.authority
            )
        })
    }

    /// GET and the HTTP status with the error text of a failed answer.
    pub async fn get_status(&self, path: &str) -> Result<(u16, String), String> {
        let a = self.get(path).await?;
        let text = serde_json::from_slice::<Value>(&a.body)
            .ok()
            .and_then(|v| v["error"].as_str().map(str::to_string))
            .unwrap_or_else(|| String::from_utf8_lossy(&a.body).chars().take(200).collect());
        Ok((a.status.as_u16(), text))
    }

    /// POST a JSON body (the repository extension's load and unload):
    /// the HTTP status and, for a failed answer, the server's error text.
    pub async fn post_json(&self, path: &str, body: Bytes) -> Result<(u16, String), String> {
        let a = self
            .send(
                Method::POST,
                path,
                body,
                Some("application/json"),
                None,
                self.cfg.max_response_bytes,
            )
            .await
            .map_err(|k| self.describe(&k))?;
        let text = if a.status.is_success() {
            String::new()
        } else {
            error_text(&a.body)
        };
        Ok((a.status.as_u16(), text))
    }

    /// POST to a shared-memory endpoint; the error quotes the server's.
    async fn post_shm(&self, path: &str, body: Bytes) -> Result<(), String> {
        let ct = (!body.is_empty()).then_some("application/json");
        let a = self
            .send(
                Method::POST,
                path,
                body,
                ct,
                None,
                self.cfg.max_response_bytes,
            )
            .await
            .map_err(|k| self.describe(&k))?;
        if a.status != StatusCode::OK {
            return Err(format!(
                "the server at {} answered HTTP {}: {}",
                self.cfg.endpoint.authority,
                a.status.as_u16(),
                error_text(&a.body)
            ));
        }
        Ok(())
    }

    /// A sentence for a failure before the load starts.
    pub fn describe(&self, k: &ErrorKind) -> String {
        let at = &self.cfg.endpoint.authority;
        match k {
            ErrorKind::Connect => {
                format!("cannot connect to the server at {at} (connection refused or unreachable)")
            }
            ErrorKind::Timeout => format!(
                "the server at {at} did not answer within {} ms",
                self.cfg.timeout.as_millis()
            ),
            ErrorKind::Connection if self.cfg.tls.is_some() => format!(
                "the TLS connection to {at} broke (a server that requires a client certificate closes it so: --ssl-https-client-certificate-file)"
            ),
            ErrorKind::Connection => format!("the connection to {at} broke"),
            ErrorKind::Http(s) => format!("the server at {at} answered HTTP {s}"),
            ErrorKind::Malformed => format!("the server at {at} sent a malformed answer"),
            ErrorKind::Grpc(c) => {
                format!("the server at {at} answered {}", super::grpc::code_key(*c))
            }
            ErrorKind::StreamError => format!("the server at {at} reported an error on the stream"),
            ErrorKind::TooLarge(n) => too_large(at, *n),
            ErrorKind::StreamIncomplete => {
                format!("the server at {at} ended a stream before its final response")
            }
            ErrorKind::StreamFailed => format!("the server at {at} sent an error on a stream"),
            ErrorKind::Cancelled => "the request was cancelled".into(),
            ErrorKind::SharedMemory => {
                "no shared-memory output region could be made or registered".into()
            }
            ErrorKind::Tls(m) => m.clone(),
        }
    }
}

/// Reads a whole answer body of at most `limit` bytes: a Content-Length
/// above the limit is refused unread; a chunked or endless body stops at
/// the limit (the connection is then not reused).
pub(super) async fn read_body(body: hyper::body::Incoming, limit: u64) -> Result<Bytes, ErrorKind> {
    if hyper::body::Body::size_hint(&body).lower() > limit {
        return Err(ErrorKind::TooLarge(limit));
    }
    Ok(
        http_body_util::Limited::new(body, usize::try_from(limit).unwrap_or(usize::MAX))
            .collect()
            .await
            .map_err(|e| {
                if e.is::<http_body_util::LengthLimitError>() {
                    ErrorKind::TooLarge(limit)
                } else {
                    ErrorKind::Connection
                }
            })?
            .to_bytes(),
    )
}

/// The sentence for an answer above `--max-response-bytes`.
pub fn too_large(at: &str, limit: u64) -> String {
    format!(
        "the server at {at} sent a response larger than {limit} bytes, the limit of --max-response-bytes (raise it if such responses are expected)"
    )
}

/// Whether the server keeps the connection open after this answer:
/// HTTP/1.1 unless it says `Connection: close`, HTTP/1.0 only with
/// `Connection: keep-alive`.
pub(super) fn keeps_alive(version: hyper::Version, headers: &hyper::HeaderMap) -> bool {
    let has = |token: &str| {
        headers
            .get_all(hyper::header::CONNECTION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    };
    if version <= hyper::Version::HTTP_10 {
        has("keep-alive")
    } else {
        !has("close")
    }
}

/// Checks that a 200 answer is a v2 inference response: a JSON header
/// (of `Inference-Header-Content-Length` bytes when binary outputs follow)
/// with an `outputs` array whose binary sizes add up to the rest.
pub fn check_infer_answer(a: &Answer) -> Result<(), ErrorKind> {
    if a.status != StatusCode::OK {
        return Err(ErrorKind::Http(a.status.as_u16()));
    }
    check_infer_body(a.header_len, &a.body)
}

/// The `Inference-Header-Content-Length` header's value, when it is a
/// number.
/// The host of `host:port`, as written (an IPv6 address keeps its
/// brackets); the whole text when it has no port.
pub fn host_of(authority: &str) -> &str {
    match authority.rsplit_once(':') {
        Some((h, p)) if p.parse::<u16>().is_ok() => h,
        _ => authority,
    }
}

pub fn parse_header_len(value: &[u8]) -> Option<usize> {
    std::str::from_utf8(value).ok()?.trim().parse().ok()
}

/// Checks the body of a 200 inference answer (see
/// [`check_infer_answer`]); a pure function of the bytes, also fuzzed
/// (`fuzz/fuzz_targets/perf_response.rs`).
pub fn check_infer_body(header_len: Option<usize>, body: &[u8]) -> Result<(), ErrorKind> {
    let (head, tail) = match header_len {
        Some(n) if n <= body.len() => (&body[..n], &body[n..]),
        Some(_) => return Err(ErrorKind::Malformed),
        None => (body, &[][..]),
    };
    let v: Value = serde_json::from_slice(head).map_err(|_| ErrorKind::Malformed)?;
    let outputs = v["outputs"].as_array().ok_or(ErrorKind::Malformed)?;
    // sizes from the server: summed without overflow
    let binary = outputs
        .iter()
        .filter_map(|o| o["parameters"]["binary_data_size"].as_u64())
        .try_fold(0u64, u64::checked_add)
        .ok_or(ErrorKind::Malformed)?;
    if binary != tail.len() as u64 {
        return Err(ErrorKind::Malformed);
    }
    Ok(())
}

/// Which protocol `perf` speaks (`-i`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Http,
    Grpc {
        /// `--streaming`: requests go over `ModelStreamInfer` streams.
        streaming: bool,
    },
}

/// A request body built once and sent many times, in the form each
/// protocol sends.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The HTTP body (and the template for added request parameters).
    pub body: Body,
    pub bytes: Bytes,
    /// The same tensors as an encoded gRPC `ModelInferRequest` (with
    /// `-i grpc`).
    pub grpc: Option<Bytes>,
}

/// A client of one server in either protocol: discovery and inference
/// with the same shapes and error kinds.
#[derive(Clone)]
pub enum PerfClient {
    Http(Client),
    Grpc(Box<GrpcClient>),
}

fn version_path(model: &str, version: Option<&str>) -> String {
    match version {
        Some(v) => format!("/v2/models/{model}/versions/{v}"),
        None => format!("/v2/models/{model}"),
    }
}

impl PerfClient {
    /// A client for the server at `url`; nothing is sent yet. Must be
    /// called inside a tokio runtime.
    /// `max_response_bytes` bounds every answer until
    /// [`PerfClient::with_infer_limit`] sets the one for inference.
    /// `tls` (from [`super::tls::Tls::for_url`]) makes the connections TLS.
    pub fn new(
        protocol: Protocol,
        url: &str,
        headers: &[(String, String)],
        timeout: Duration,
        max_response_bytes: u64,
        tls: Option<&Connector>,
    ) -> Result<Self, String> {
        match protocol {
            Protocol::Http => Ok(PerfClient::Http(Client::new(ClientConfig {
                endpoint: Endpoint::parse(url)?,
                headers: headers.to_vec(),
                timeout,
                max_response_bytes,
                tls: tls.cloned(),
            }))),
            Protocol::Grpc { streaming } => {
                GrpcClient::new(url, headers, timeout, streaming, max_response_bytes, tls)
                    .map(|g| PerfClient::Grpc(Box::new(g)))
            }
        }
    }

    /// The same client (and connections) with inference answers bounded
    /// by `limit` bytes (once the model's outputs are known).
    pub fn with_infer_limit(&self, limit: u64) -> Self {
        match self {
            PerfClient::Http(c) => PerfClient::Http(Client {
                infer_limit: limit,
                ..c.clone()
            }),
            PerfClient::Grpc(g) => PerfClient::Grpc(Box::new(g.with_infer_limit(limit))),
        }
    }

    /// The same client, with gRPC requests sent over `ModelStreamInfer`
    /// streams (HTTP is unchanged).
    pub fn streaming(&self) -> Self {
        match self {
            PerfClient::Http(_) => self.clone(),
            PerfClient::Grpc(g) => PerfClient::Grpc(Box::new(g.streaming())),
        }
    }

    /// `http` or `grpc`.
    pub fn protocol_name(&self) -> &'static str {
        match self {
            PerfClient::Http(_) => "http",
            PerfClient::Grpc(_) => "grpc",
        }
    }

    /// `host:port` of the server.
    pub fn authority(&self) -> &str {
        match self {
            PerfClient::Http(c) => &c.config().endpoint.authority,
            PerfClient::Grpc(g) => g.authority(),
        }
    }

    /// The model metadata as the HTTP endpoint's JSON; the error says why
    /// the model cannot be used.
    pub async fn metadata(&self, model: &str, version: Option<&str>) -> Result<Value, String> {
        match self {
            PerfClient::Http(c) => {
                let base = version_path(model, version);
                if let Some(m) = c.get_json(&base).await? {
                    return Ok(m);
                }
                let (status, text) = c.get_status(&base).await?;
                Err(format!(
                    "model '{model}' is not available at {}: HTTP {status}: {text}",
                    c.config().endpoint.authority
                ))
            }
            PerfClient::Grpc(g) => g.metadata(model, version).await,
        }
    }

    /// The extensions the server lists in its metadata (`GET /v2`);
    /// `None` when that is unknown (no answer, or gRPC, where tensors
    /// are always binary).
    pub async fn server_extensions(&self) -> Option<Vec<String>> {
        match self {
            PerfClient::Http(c) => {
                let doc = c.get_json("/v2").await.ok()??;
                let list = doc.get("extensions")?.as_array()?;
                Some(
                    list.iter()
                        .filter_map(|e| e.as_str().map(str::to_string))
                        .collect(),
                )
            }
            PerfClient::Grpc(_) => None,
        }
    }

    /// The model config as JSON, `None` when the server does not give it.
    pub async fn config(
        &self,
        model: &str,
        version: Option<&str>,
    ) -> Result<Option<Value>, String> {
        match self {
            PerfClient::Http(c) => {
                c.get_json(&format!("{}/config", version_path(model, version)))
                    .await
            }
            PerfClient::Grpc(g) => g.config(model, version).await,
        }
    }

    /// The statistics document as JSON, `None` on any failure.
    pub async fn statistics(&self, model: &str, version: Option<&str>) -> Option<Value> {
        match self {
            PerfClient::Http(c) => c
                .get_json(&format!("{}/stats", version_path(model, version)))
                .await
                .ok()
                .flatten(),
            PerfClient::Grpc(g) => g.statistics(model, version).await,
        }
    }

    /// The statistics document at an HTTP path
    /// (`/v2/models/M[/versions/V]/stats`; over gRPC the same model and
    /// version), `None` on any failure.
    pub async fn statistics_at(&self, path: &str) -> Option<Value> {
        match self {
            PerfClient::Http(c) => c.get_json(path).await.ok().flatten(),
            PerfClient::Grpc(g) => {
                let rest = path.strip_prefix("/v2/models/")?.strip_suffix("/stats")?;
                let (model, version) = match rest.split_once("/versions/") {
                    Some((m, v)) => (m, Some(v)),
                    None => (rest, None),
                };
                g.statistics(model, version).await
            }
        }
    }

    /// Readies a body for sending to `model`.
    pub fn prepare(
        &self,
        body: Body,
        model: &str,
        version: Option<&str>,
    ) -> Result<Prepared, String> {
        let grpc = match self {
            PerfClient::Http(_) => None,
            PerfClient::Grpc(_) => {
                use prost::Message;
                let r = super::grpc::request_from_body(&body, model, version)?;
                Some(Bytes::from(r.encode_to_vec()))
            }
        };
        Ok(Prepared {
            bytes: body.bytes.clone(),
            body,
            grpc,
        })
    }

    /// Sends one inference request to `path` (HTTP; gRPC names the model
    /// in the request), with request parameters added (sequence id and
    /// flags), and checks the answer.
    /// With `outputs` (`--shared-memory`: the slot whose regions the
    /// outputs go to), the request names them.
    pub async fn infer(
        &self,
        path: &str,
        req: &Prepared,
        params: Option<&serde_json::Map<String, Value>>,
        outputs: Option<&super::shm::Slot>,
    ) -> Result<ClientTime, ErrorKind> {
        match self {
            PerfClient::Http(c) => {
                let started = Instant::now();
                let (bytes, header_len) = match (params, outputs) {
                    (None, None) => (req.bytes.clone(), req.body.header_len),
                    (p, o) => {
                        let (b, h) = req.body.with_extra(o.map(|s| &s.http_outputs), p);
                        (Bytes::from(b), h)
                    }
                };
                let a = c
                    .send(
                        Method::POST,
                        path,
                        bytes,
                        Some(req.body.content_type()),
                        header_len,
                        c.infer_limit,
                    )
                    .await?;
                check_infer_answer(&a)?;
                let done = Instant::now();
                Ok(ClientTime {
                    send: a
                        .sent_at
                        .unwrap_or(a.head_at)
                        .saturating_duration_since(started),
                    recv: done.saturating_duration_since(a.head_at),
                })
            }
            PerfClient::Grpc(g) => match &req.grpc {
                Some(r) => g.infer(r, params, outputs.map(|s| &s.grpc_outputs)).await,
                None => Err(ErrorKind::Malformed),
            },
        }
    }

    /// Registers a system shared-memory region (`key`: the `shm_open`
    /// name, the region starting at offset 0); the error quotes the
    /// server's.
    pub async fn register_system_shm(
        &self,
        name: &str,
        key: &str,
        byte_size: u64,
    ) -> Result<(), String> {
        match self {
            PerfClient::Http(c) => {
                let body = serde_json::json!({"key": key, "offset": 0, "byte_size": byte_size});
                c.post_shm(
                    &format!("/v2/systemsharedmemory/region/{name}/register"),
                    Bytes::from(body.to_string()),
                )
                .await
                .map_err(|e| format!("cannot register shared-memory region '{name}': {e}"))
            }
            PerfClient::Grpc(g) => g
                .register_system_shm(name, key, byte_size)
                .await
                .map_err(|e| format!("cannot register shared-memory region '{name}': {e}")),
        }
    }

    /// Unregisters a system shared-memory region.
    pub async fn unregister_system_shm(&self, name: &str) -> Result<(), String> {
        match self {
            PerfClient::Http(c) => c
                .post_shm(
                    &format!("/v2/systemsharedmemory/region/{name}/unregister"),
                    Bytes::new(),
                )
                .await
                .map_err(|e| format!("cannot unregister shared-memory region '{name}': {e}")),
            PerfClient::Grpc(g) => g
                .unregister_system_shm(name)
                .await
                .map_err(|e| format!("cannot unregister shared-memory region '{name}': {e}")),
        }
    }

    /// Registers a CUDA shared-memory region: `handle`, the 64-byte CUDA
    /// IPC handle of device memory on GPU `device_id`
    /// (docs/spec/v2-protocol.md §7a); the error quotes the server's.
    pub async fn register_cuda_shm(
        &self,
        name: &str,
        handle: &[u8],
        device_id: i64,
        byte_size: u64,
    ) -> Result<(), String> {
        let r = match self {
            PerfClient::Http(c) => {
                let body = serde_json::json!({
                    "raw_handle": {"b64": crate::inputs::codec::b64_encode(handle)},
                    "device_id": device_id,
                    "byte_size": byte_size,
                });
                c.post_shm(
                    &format!("/v2/cudasharedmemory/region/{name}/register"),
                    Bytes::from(body.to_string()),
                )
                .await
            }
            PerfClient::Grpc(g) => {
                g.register_cuda_shm(name, handle, device_id, byte_size)
                    .await
            }
        };
        r.map_err(|e| format!("cannot register CUDA shared-memory region '{name}': {e}"))
    }

    /// Unregisters a CUDA shared-memory region.
    pub async fn unregister_cuda_shm(&self, name: &str) -> Result<(), String> {
        let r = match self {
            PerfClient::Http(c) => {
                c.post_shm(
                    &format!("/v2/cudasharedmemory/region/{name}/unregister"),
                    Bytes::new(),
                )
                .await
            }
            PerfClient::Grpc(g) => g.unregister_cuda_shm(name).await,
        };
        r.map_err(|e| format!("cannot unregister CUDA shared-memory region '{name}': {e}"))
    }

    /// Sends one inference request and returns the server's error text
    /// when it fails (the request before a `--shared-memory` load, whose
    /// refusal is the clearest account of what is wrong).
    pub async fn try_infer(
        &self,
        path: &str,
        req: &Prepared,
        outputs: Option<&super::shm::Slot>,
    ) -> Result<(), String> {
        match self {
            PerfClient::Http(c) => {
                let (b, h) = req.body.with_extra(outputs.map(|s| &s.http_outputs), None);
                let a = c
                    .send(
                        Method::POST,
                        path,
                        Bytes::from(b),
                        Some(req.body.content_type()),
                        h,
                        c.infer_limit,
                    )
                    .await
                    .map_err(|k| c.describe(&k))?;
                if a.status != StatusCode::OK {
                    return Err(format!(
                        "HTTP {}: {}",
                        a.status.as_u16(),
                        error_text(&a.body)
                    ));
                }
                check_infer_answer(&a).map_err(|k| c.describe(&k))
            }
            PerfClient::Grpc(g) => match &req.grpc {
                Some(r) => g.try_infer(r, outputs.map(|s| &s.grpc_outputs)).await,
                None => Err("no gRPC request".into()),
            },
        }
    }
}

/// The `error` of a JSON error answer, else its first 200 characters.
fn error_text(body: &[u8]) -> String {
    serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v["error"].as_str().map(str::to_string))
        .unwrap_or_else(|| String::from_utf8_lossy(body).chars().take(200).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints() {
        assert_eq!(
            Endpoint::parse("localhost:8000").unwrap().authority,
            "localhost:8000"
        );
        assert_eq!(Endpoint::parse("http://h:1/").unwrap().authority, "h:1");
        assert_eq!(Endpoint::parse("h").unwrap().authority, "h:8000");
        let e = Endpoint::parse("https://h:1").unwrap();
        assert_eq!((e.authority.as_str(), e.tls), ("h:1", true));
        assert_eq!(Endpoint::parse("https://h/").unwrap().authority, "h:443");
        assert!(!Endpoint::parse("h:1").unwrap().tls);
        assert!(Endpoint::parse("ftp://h:1").is_err());
        assert!(Endpoint::parse("h:x").is_err());
        assert!(Endpoint::parse("h:1/v2").is_err());
    }

    #[test]
    fn keep_alive() {
        let mut h = hyper::HeaderMap::new();
        assert!(keeps_alive(hyper::Version::HTTP_11, &h));
        assert!(!keeps_alive(hyper::Version::HTTP_10, &h));
        h.insert(hyper::header::CONNECTION, "Keep-Alive".parse().unwrap());
        assert!(keeps_alive(hyper::Version::HTTP_10, &h));
        h.insert(hyper::header::CONNECTION, "foo, Close".parse().unwrap());
        assert!(!keeps_alive(hyper::Version::HTTP_11, &h));
    }

    fn answer(status: u16, header_len: Option<usize>, body: &[u8]) -> Answer {
        let head_at = Instant::now();
        Answer {
            status: StatusCode::from_u16(status).unwrap(),
            header_len,
            body: Bytes::copy_from_slice(body),
            sent_at: None,
            head_at,
        }
    }

    #[test]
    fn infer_answers() {
        let ok = br#"{"outputs":[{"name":"Y","parameters":{"binary_data_size":4}}]}"#;
        let mut b = ok.to_vec();
        b.extend_from_slice(&[0, 0, 0, 0]);
        assert_eq!(check_infer_answer(&answer(200, Some(ok.len()), &b)), Ok(()));
        assert_eq!(
            check_infer_answer(&answer(200, Some(ok.len()), ok)),
            Err(ErrorKind::Malformed)
        );
        assert_eq!(
            check_infer_answer(&answer(200, None, br#"{"outputs":[]}"#)),
            Ok(())
        );
        assert_eq!(
            check_infer_answer(&answer(200, None, b"{\"outp")),
            Err(ErrorKind::Malformed)
        );
        assert_eq!(
            check_infer_answer(&answer(500, None, b"{}")),
            Err(ErrorKind::Http(500))
        );
        assert_eq!(ErrorKind::Http(503).key(), "http_503");
    }

    #[test]
    fn binary_sizes_from_the_server_do_not_overflow() {
        let head = br#"{"outputs":[{"parameters":{"binary_data_size":18446744073709551615}},{"parameters":{"binary_data_size":2}}]}"#;
        let mut b = head.to_vec();
        b.push(0);
        assert_eq!(
            check_infer_body(Some(head.len()), &b),
            Err(ErrorKind::Malformed)
        );
        assert_eq!(parse_header_len(b" 12 "), Some(12));
        assert_eq!(parse_header_len(b"\xff"), None);
        assert_eq!(ErrorKind::TooLarge(5).key(), "response_too_large");
    }
}
