//! Requests to generative HTTP endpoints (`--endpoint`): Triton's generate
//! extension (`/generate`, and `/generate_stream` with server-sent events
//! for decoupled models) and OpenAI-compatible servers
//! (`/v1/chat/completions`, `/v1/completions`, streamed).

use super::client::{keeps_alive, read_body, Client, ClientTime, ErrorKind};
use super::exchange::{push_response, Cancel, Exchange, Tokens};
use super::model::ModelInfo;
use super::sse::{self, Fed};
use crate::tensor::DataType;
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::{Method, StatusCode};
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::borrow::Cow;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

/// The API requests go to (`--endpoint`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// KServe v2 inference (`/infer` over HTTP; gRPC `ModelInfer`, or
    /// `ModelStreamInfer` for decoupled models).
    Infer,
    /// Triton's generate extension: `/generate`, or `/generate_stream`
    /// for decoupled models.
    Generate,
    /// `/v1/chat/completions`, streamed.
    OpenAiChat,
    /// `/v1/completions`, streamed.
    OpenAiCompletions,
}

impl Api {
    /// The name `--endpoint` takes, also the report's `endpoint`.
    pub fn name(self) -> &'static str {
        match self {
            Api::Infer => "infer",
            Api::Generate => "generate",
            Api::OpenAiChat => "openai-chat",
            Api::OpenAiCompletions => "openai-completions",
        }
    }

    /// OpenAI-compatible: no KServe discovery, the model is named in the
    /// request.
    pub fn is_openai(self) -> bool {
        matches!(self, Api::OpenAiChat | Api::OpenAiCompletions)
    }
}

/// The request path of `api` for `model`.
pub fn path(api: Api, model: &str, version: Option<&str>, decoupled: bool) -> String {
    let base = match version {
        Some(v) => format!("/v2/models/{model}/versions/{v}"),
        None => format!("/v2/models/{model}"),
    };
    match api {
        Api::Infer => format!("{base}/infer"),
        Api::Generate if decoupled => format!("{base}/generate_stream"),
        Api::Generate => format!("{base}/generate"),
        Api::OpenAiChat => "/v1/chat/completions".into(),
        Api::OpenAiCompletions => "/v1/completions".into(),
    }
}

/// What the request bodies are made of.
pub struct BodySpec<'a> {
    pub api: Api,
    /// The model name (OpenAI requests carry it).
    pub model: &'a str,
    /// The model's inputs (generate endpoint; `None` for OpenAI servers).
    pub info: Option<&'a ModelInfo>,
    /// One body per prompt.
    pub prompts: &'a [String],
    pub max_tokens: Option<u64>,
}

/// The most elements one input of a generate request may have: the body
/// is JSON text, built once per prompt.
const MAX_GENERATE_ELEMENTS: u64 = 1 << 20;

/// The request bodies, one per prompt, sent in turn.
pub fn bodies(spec: &BodySpec<'_>) -> Result<Vec<Bytes>, String> {
    if spec.prompts.is_empty() {
        return Err(format!(
            "--endpoint {} needs at least one prompt",
            spec.api.name()
        ));
    }
    let body = |doc: Value| Bytes::from(serde_json::to_vec(&doc).expect("JSON serialises"));
    match spec.api {
        Api::Infer => Err("--endpoint infer sends tensors, not prompts".into()),
        Api::OpenAiChat | Api::OpenAiCompletions => Ok(spec
            .prompts
            .iter()
            .map(|p| body(openai_body(spec, p)))
            .collect()),
        Api::Generate => {
            let info = spec
                .info
                .ok_or("--endpoint generate needs the model's inputs")?;
            // Triton 2.51 passes sequence_id and the flags of a generate
            // request to the model as plain parameters, not as the
            // sequence's correlation id, and so refuses every request to
            // a sequence model (seen with Triton 2.51)
            if info.sequence {
                return Err(format!(
                    "model '{}' takes sequences, and Triton's generate endpoint does not carry sequence ids: use --endpoint infer (with -i grpc for a decoupled model)",
                    spec.model
                ));
            }
            let inputs = generate_inputs(info, spec.max_tokens)?;
            Ok(spec
                .prompts
                .iter()
                .map(|p| body(generate_body(&inputs, spec.max_tokens, p)))
                .collect())
        }
    }
}

/// An OpenAI-compatible request: streamed, with the usage chunk asked for.
fn openai_body(spec: &BodySpec<'_>, prompt: &str) -> Value {
    let mut doc = Map::new();
    doc.insert("model".into(), spec.model.into());
    if spec.api == Api::OpenAiChat {
        doc.insert(
            "messages".into(),
            json!([{"role": "user", "content": prompt}]),
        );
    } else {
        doc.insert("prompt".into(), prompt.into());
    }
    doc.insert("stream".into(), true.into());
    doc.insert("stream_options".into(), json!({"include_usage": true}));
    if let Some(n) = spec.max_tokens {
        doc.insert("max_tokens".into(), n.into());
    }
    Value::Object(doc)
}

/// What one input of a generate request gets.
#[derive(Debug, Clone, PartialEq)]
enum Fill {
    /// The prompt text (a BYTES input), this many times.
    Prompt(usize),
    /// This value, this many times.
    Value(Value, usize),
}

/// The inputs of a generate request, by name. Triton's generate
/// extension turns each top-level key named after an input into that
/// input (a scalar into shape `[1]`, an array of N into `[N]`, the batch
/// dim added for a batching model) and passes every other key as a request
/// parameter (seen with Triton 2.51).
/// BYTES inputs get the prompt, except one named `sampling_parameters`
/// (the vLLM backend's JSON text of sampling settings), which gets
/// `{"max_tokens": N}` with `--max-tokens`; an input named `max_tokens` gets
/// `--max-tokens`; a BOOL input named `stream` gets whether the model is
/// decoupled (the vLLM and TensorRT-LLM backends stream only when it is
/// true); other inputs get zeros (a flat array for several dims: Triton
/// 2.51 refuses nested arrays there).
fn generate_inputs(
    info: &ModelInfo,
    max_tokens: Option<u64>,
) -> Result<Vec<(String, Fill)>, String> {
    let mut out = Vec::with_capacity(info.inputs.len());
    for input in &info.inputs {
        // optional inputs are left out (the backend's defaults), except
        // the ones that carry --max-tokens and streaming
        let carries = match (input.datatype, input.name.as_str()) {
            (DataType::Bool, "stream") => true,
            (_, "max_tokens" | "sampling_parameters") => max_tokens.is_some(),
            _ => false,
        };
        if input.optional && !carries {
            continue;
        }
        // variable dims: one element (Triton checks the count against
        // the config's dims)
        let elements = input
            .dims
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(u64::try_from(d).unwrap_or(1)))
            .filter(|&n| n <= MAX_GENERATE_ELEMENTS)
            .ok_or_else(|| {
                format!(
                    "input '{}' has more than {MAX_GENERATE_ELEMENTS} elements, too many for a generate request",
                    input.name
                )
            })? as usize;
        let fill = match (input.datatype, input.name.as_str()) {
            (DataType::Bytes, "sampling_parameters") => {
                let p = match max_tokens {
                    Some(n) => json!({ "max_tokens": n }),
                    None => json!({}),
                };
                Fill::Value(p.to_string().into(), elements)
            }
            (DataType::Bytes, _) => Fill::Prompt(elements),
            (DataType::Bool, "stream") => Fill::Value(info.decoupled.into(), elements),
            (DataType::Bool, _) => Fill::Value(false.into(), elements),
            (_, "max_tokens") if max_tokens.is_some() => {
                Fill::Value(max_tokens.unwrap_or(0).into(), elements)
            }
            (DataType::F16 | DataType::F32 | DataType::F64 | DataType::Bf16, _) => {
                Fill::Value(0.0.into(), elements)
            }
            _ => Fill::Value(0.into(), elements),
        };
        out.push((input.name.clone(), fill));
    }
    Ok(out)
}

fn generate_body(inputs: &[(String, Fill)], max_tokens: Option<u64>, prompt: &str) -> Value {
    let spread = |v: Value, n: usize| {
        if n == 1 {
            v
        } else {
            Value::Array(vec![v; n])
        }
    };
    let mut doc = Map::new();
    for (name, fill) in inputs {
        let v = match fill {
            Fill::Prompt(n) => spread(prompt.into(), *n),
            Fill::Value(v, n) => spread(v.clone(), *n),
        };
        doc.insert(name.clone(), v);
    }
    if let Some(n) = max_tokens {
        // a request parameter, unless an input of that name took it
        doc.entry("max_tokens").or_insert(n.into());
    }
    Value::Object(doc)
}

/// `body` (a JSON object) with `params` (sequence id and flags) added as
/// top-level keys, where Triton's generate extension takes request
/// parameters.
fn with_params(body: &Bytes, params: &Map<String, Value>) -> Bytes {
    let text = body.trim_ascii_end();
    let Some(open) = text.strip_suffix(b"}") else {
        return body.clone();
    };
    let mut out = Vec::with_capacity(body.len() + 64);
    out.extend_from_slice(open);
    let mut empty = open.trim_ascii() == b"{";
    for (k, v) in params {
        if !empty {
            out.push(b',');
        }
        empty = false;
        serde_json::to_writer(&mut out, k).expect("JSON serialises");
        out.push(b':');
        serde_json::to_writer(&mut out, v).expect("JSON serialises");
    }
    out.push(b'}');
    Bytes::from(out)
}

/// How long to wait, after `[DONE]`, for the end of the body before the
/// connection is dropped instead of reused (servers end the body right
/// after it; one that does not must not hold the request).
const DONE_GRACE: Duration = Duration::from_millis(10);

/// What a request has brought back so far: kept when it is cut off.
#[derive(Debug, Default)]
struct Got {
    responses: Vec<Instant>,
    /// OpenAI: `usage.completion_tokens` of the last chunk that had it.
    usage: Option<u64>,
    /// OpenAI: `[DONE]` came; the request is complete even when it is
    /// cut off while the end of the body is awaited.
    done: bool,
    /// The client's send time, and its time parsing events.
    send: Duration,
    recv: Duration,
}

impl Got {
    fn response(&mut self, at: Instant) -> Result<(), ErrorKind> {
        push_response(&mut self.responses, at)
    }
}

/// Sends one request (`params`: sequence id and flags, added to the
/// body) and reads its answer or its stream of events until the end, an
/// error, `--timeout` or `cancel`. The connection goes back to the pool
/// only after a clean end of the body; a cancelled or failed request
/// drops it (which closes it).
pub async fn exchange(
    client: &Client,
    api: Api,
    path: &str,
    body: &Bytes,
    params: Option<&Map<String, Value>>,
    cancel: &Cancel,
) -> Exchange {
    let started = Instant::now();
    let deadline = tokio::time::Instant::from_std(started + client.config().timeout);
    let mut got = Got::default();
    let result = {
        let run = request(client, api, path, body, params, started, &mut got);
        tokio::pin!(run);
        tokio::select! {
            biased;
            r = tokio::time::timeout_at(deadline, &mut run) => r.unwrap_or(Err(ErrorKind::Timeout)),
            () = cancel.cancelled() => Err(ErrorKind::Cancelled),
        }
    };
    let result = if got.done { Ok(()) } else { result };
    match result {
        Ok(()) => {
            let tokens = api.is_openai().then_some(match got.usage {
                Some(count) => Tokens {
                    count,
                    from_usage: true,
                },
                None => Tokens {
                    count: got.responses.len() as u64,
                    from_usage: false,
                },
            });
            Exchange {
                result: Ok(()),
                time: ClientTime {
                    send: got.send,
                    recv: got.recv,
                },
                responses: got.responses,
                tokens,
            }
        }
        Err(k) => Exchange::failed(k, got.responses),
    }
}

async fn request(
    client: &Client,
    api: Api,
    path: &str,
    body: &Bytes,
    params: Option<&Map<String, Value>>,
    started: Instant,
    got: &mut Got,
) -> Result<(), ErrorKind> {
    let body = match params {
        Some(p) => with_params(body, p),
        None => body.clone(),
    };
    let streamed = api != Api::Generate || path.ends_with("/generate_stream");
    let mut conn = client.take().await?;
    let mut req = client
        .request(Method::POST, path)
        .header(hyper::header::CONTENT_TYPE, "application/json");
    if streamed {
        req = req.header(hyper::header::ACCEPT, "text/event-stream");
    }
    let (resp, head_at, sent) = client.start(&mut conn, req, body).await?;
    got.send = sent.unwrap_or(head_at).saturating_duration_since(started);
    let (parts, mut body) = resp.into_parts();
    let limit = client.infer_limit();
    let reusable = keeps_alive(parts.version, &parts.headers);
    if parts.status != StatusCode::OK {
        // read (bounded) so that the connection can serve the next request
        let read = read_body(body, limit).await;
        if read.is_ok() && reusable {
            client.give_back(conn);
        }
        return Err(ErrorKind::Http(parts.status.as_u16()));
    }
    if !streamed {
        // one JSON answer, one response
        let bytes = read_body(body, limit).await?;
        let at = Instant::now();
        let r = triton_event(&bytes);
        got.recv = at.elapsed();
        if reusable {
            client.give_back(conn);
        }
        r?;
        got.responses.push(at);
        return Ok(());
    }
    let event_stream = parts
        .headers
        .get(hyper::header::CONTENT_TYPE)
        .is_none_or(|v| v.as_bytes().starts_with(b"text/event-stream"));
    if !event_stream {
        return Err(ErrorKind::Malformed);
    }
    let mut parser = sse::Parser::new(limit);
    let mut outcome: Option<Result<(), ErrorKind>> = None;
    loop {
        let frame = match outcome {
            // after [DONE]: the end of the body, briefly
            Some(Ok(())) => match tokio::time::timeout(DONE_GRACE, body.frame()).await {
                Ok(f) => f,
                Err(_) => return Ok(()),
            },
            _ => body.frame().await,
        };
        let data = match frame {
            None => break,
            Some(Err(_)) if outcome.is_some() => return Ok(()),
            Some(Err(_)) => return Err(ErrorKind::StreamIncomplete),
            Some(Ok(f)) => match f.into_data() {
                Ok(d) => d,
                Err(_) => continue,
            },
        };
        if outcome.is_some() {
            // events after [DONE] are not read
            continue;
        }
        let at = Instant::now();
        let fed = parser.feed(&data, |e| {
            let r = if e.kind == b"error" {
                Err(ErrorKind::StreamFailed)
            } else if api == Api::Generate {
                triton_event(e.data).and_then(|()| got.response(at))
            } else if e.data.trim_ascii() == b"[DONE]" {
                outcome = Some(Ok(()));
                got.done = true;
                return ControlFlow::Break(());
            } else {
                openai_event(api, e.data, at, got)
            };
            match r {
                Ok(()) => ControlFlow::Continue(()),
                Err(k) => {
                    outcome = Some(Err(k));
                    ControlFlow::Break(())
                }
            }
        });
        got.recv += at.elapsed();
        match fed {
            Err(sse::TooLarge) => return Err(ErrorKind::TooLarge(limit)),
            Ok(Fed::Stopped) => {
                if let Some(Err(k)) = outcome {
                    return Err(k);
                }
            }
            Ok(Fed::More) => {}
        }
    }
    // the body ended cleanly
    let r = match outcome {
        Some(r) => r,
        // OpenAI streams end with [DONE]; Triton's end after their last
        // event
        None if api.is_openai() || parser.in_event() => Err(ErrorKind::StreamIncomplete),
        None => Ok(()),
    };
    if r.is_ok() && reusable {
        client.give_back(conn);
    }
    r
}

/// A response of Triton's generate extension (an answer of `/generate`
/// or an event of `/generate_stream`): a JSON object, an error when it
/// has `error`.
fn triton_event(data: &[u8]) -> Result<(), ErrorKind> {
    #[derive(Deserialize)]
    struct Response {
        error: Option<IgnoredAny>,
    }
    if data.trim_ascii_start().first() != Some(&b'{') {
        return Err(ErrorKind::Malformed);
    }
    match serde_json::from_slice::<Response>(data) {
        Ok(Response { error: Some(_) }) => Err(ErrorKind::StreamFailed),
        Ok(_) => Ok(()),
        Err(_) => Err(ErrorKind::Malformed),
    }
}

/// A chunk of an OpenAI-compatible stream: a response when it carries
/// generated text; `usage` when it counts the tokens.
fn openai_event(api: Api, data: &[u8], at: Instant, got: &mut Got) -> Result<(), ErrorKind> {
    #[derive(Deserialize)]
    struct Chunk<'a> {
        #[serde(default, borrow)]
        choices: Option<Vec<Choice<'a>>>,
        usage: Option<Usage>,
        error: Option<IgnoredAny>,
    }
    #[derive(Deserialize)]
    struct Choice<'a> {
        #[serde(borrow)]
        delta: Option<Delta<'a>>,
        #[serde(borrow)]
        text: Option<Cow<'a, str>>,
    }
    #[derive(Deserialize)]
    struct Delta<'a> {
        #[serde(borrow)]
        content: Option<Cow<'a, str>>,
        #[serde(borrow)]
        reasoning_content: Option<Cow<'a, str>>,
    }
    #[derive(Deserialize)]
    struct Usage {
        completion_tokens: Option<u64>,
    }
    if data.trim_ascii_start().first() != Some(&b'{') {
        return Err(ErrorKind::Malformed);
    }
    let chunk: Chunk<'_> = serde_json::from_slice(data).map_err(|_| ErrorKind::Malformed)?;
    if chunk.error.is_some() {
        return Err(ErrorKind::StreamFailed);
    }
    if let Some(n) = chunk.usage.and_then(|u| u.completion_tokens) {
        got.usage = Some(n);
    }
    let nonempty = |s: &Option<Cow<'_, str>>| s.as_deref().is_some_and(|s| !s.is_empty());
    let text = chunk
        .choices
        .iter()
        .flatten()
        .next()
        .is_some_and(|c| match api {
            Api::OpenAiChat => c
                .delta
                .as_ref()
                .is_some_and(|d| nonempty(&d.content) || nonempty(&d.reasoning_content)),
            _ => nonempty(&c.text),
        });
    if text {
        got.response(at)?;
    }
    Ok(())
}

/// For the `perf_sse` fuzz target (`fuzz/fuzz_targets/perf_sse.rs`): an
/// event stream (the first byte picks the event limit, the second how the
/// rest is split into frames) read whole and frame by frame, which must
/// give the same events, none above the limit; each event's data is read
/// as both kinds of server would send it. Panics on a difference.
#[doc(hidden)]
pub fn fuzz_stream(data: &[u8]) {
    let [a, b, rest @ ..] = data else {
        return;
    };
    let limit = u64::from(*a) * 4 + 1;
    let step = usize::from(*b).max(1);
    let read = |frames: &mut dyn Iterator<Item = &[u8]>| {
        let mut p = sse::Parser::new(limit);
        let mut events = Vec::new();
        for f in frames {
            let r = p.feed(f, |e| {
                assert!(e.data.len() as u64 <= limit, "an event above the limit");
                events.push((e.kind.to_vec(), e.data.to_vec()));
                ControlFlow::Continue(())
            });
            if r.is_err() {
                return (events, None);
            }
        }
        (events, Some(p.in_event()))
    };
    let whole = read(&mut std::iter::once(rest));
    let split = read(&mut rest.chunks(step));
    assert_eq!(whole, split, "the events depend on how the stream is split");
    let at = Instant::now();
    for (_, data) in &whole.0 {
        let _ = triton_event(data);
        for api in [Api::OpenAiChat, Api::OpenAiCompletions] {
            let _ = openai_event(api, data, at, &mut Got::default());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::exchange::MAX_RESPONSES;
    use crate::perf::model::InputSpec;

    fn info(inputs: &[(&str, DataType, &[i64])]) -> ModelInfo {
        ModelInfo {
            name: "m".into(),
            max_batch_size: 0,
            inputs: inputs
                .iter()
                .map(|(n, t, d)| InputSpec {
                    name: n.to_string(),
                    datatype: *t,
                    dims: d.to_vec(),
                    optional: n.starts_with("opt_"),
                })
                .collect(),
            outputs: vec!["text_output".into()],
            output_sizes: vec![None],
            sequence: false,
            decoupled: true,
            has_config: true,
        }
    }

    fn docs(spec: &BodySpec<'_>) -> Vec<Value> {
        bodies(spec)
            .unwrap()
            .iter()
            .map(|b| serde_json::from_slice(b).unwrap())
            .collect()
    }

    #[test]
    fn openai_bodies() {
        let prompts = ["a b".to_string(), "c".to_string()];
        let mut spec = BodySpec {
            api: Api::OpenAiChat,
            model: "llm",
            info: None,
            prompts: &prompts,
            max_tokens: Some(7),
        };
        assert_eq!(
            docs(&spec),
            vec![
                json!({"model": "llm", "messages": [{"role": "user", "content": "a b"}], "stream": true, "stream_options": {"include_usage": true}, "max_tokens": 7}),
                json!({"model": "llm", "messages": [{"role": "user", "content": "c"}], "stream": true, "stream_options": {"include_usage": true}, "max_tokens": 7}),
            ]
        );
        spec.api = Api::OpenAiCompletions;
        spec.max_tokens = None;
        assert_eq!(
            docs(&spec)[1],
            json!({"model": "llm", "prompt": "c", "stream": true, "stream_options": {"include_usage": true}})
        );
        spec.prompts = &[];
        assert!(bodies(&spec).is_err());
    }

    #[test]
    fn generate_bodies_follow_the_inputs() {
        let m = info(&[
            ("text_input", DataType::Bytes, &[1]),
            ("n", DataType::I32, &[1]),
            ("f", DataType::F32, &[2]),
            ("stream", DataType::Bool, &[1]),
            ("max_tokens", DataType::U32, &[-1]),
        ]);
        let prompts = ["hello there".to_string()];
        let mut spec = BodySpec {
            api: Api::Generate,
            model: "m",
            info: Some(&m),
            prompts: &prompts,
            max_tokens: Some(12),
        };
        assert_eq!(
            docs(&spec),
            vec![
                json!({"text_input": "hello there", "n": 0, "f": [0.0, 0.0], "stream": true, "max_tokens": 12})
            ]
        );
        let mut plain = m.clone();
        plain.decoupled = false;
        spec.info = Some(&plain);
        assert_eq!(
            docs(&spec)[0]["stream"],
            false,
            "not decoupled: not streamed"
        );
        // the vLLM backend's inputs
        let vllm = info(&[
            ("text_input", DataType::Bytes, &[1]),
            ("stream", DataType::Bool, &[1]),
            ("sampling_parameters", DataType::Bytes, &[1]),
        ]);
        spec.info = Some(&vllm);
        assert_eq!(
            docs(&spec),
            vec![
                json!({"text_input": "hello there", "stream": true, "sampling_parameters": "{\"max_tokens\":12}", "max_tokens": 12})
            ]
        );
        // optional inputs are left out unless they carry --max-tokens or
        // streaming
        let opt = info(&[
            ("text_input", DataType::Bytes, &[1]),
            ("opt_bad_words", DataType::Bytes, &[1]),
            ("opt_top_p", DataType::F32, &[1]),
        ]);
        spec.info = Some(&opt);
        assert_eq!(
            docs(&spec),
            vec![json!({"text_input": "hello there", "max_tokens": 12})]
        );
        // without an input of that name, max_tokens is a request parameter
        let m = info(&[("PROMPT", DataType::Bytes, &[2])]);
        spec.info = Some(&m);
        assert_eq!(
            docs(&spec),
            vec![json!({"PROMPT": ["hello there", "hello there"], "max_tokens": 12})]
        );
        spec.max_tokens = None;
        assert_eq!(
            docs(&spec),
            vec![json!({"PROMPT": ["hello there", "hello there"]})]
        );
        let huge = info(&[("x", DataType::F32, &[1 << 20, 2])]);
        spec.info = Some(&huge);
        assert!(bodies(&spec).unwrap_err().contains("'x'"));
        spec.info = None;
        assert!(bodies(&spec).is_err());
        let mut seq = info(&[("text_input", DataType::Bytes, &[1])]);
        seq.sequence = true;
        spec.info = Some(&seq);
        assert!(bodies(&spec).unwrap_err().contains("takes sequences"));
    }

    #[test]
    fn sequence_parameters_are_top_level_keys() {
        let mut p = Map::new();
        p.insert("sequence_id".into(), 5.into());
        p.insert("sequence_start".into(), true.into());
        let b = with_params(&Bytes::from_static(br#"{"a":"}"} "#), &p);
        let v: Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(
            v,
            json!({"a": "}", "sequence_id": 5, "sequence_start": true})
        );
        let b = with_params(&Bytes::from_static(b"{ }"), &p);
        let v: Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(v, json!({"sequence_id": 5, "sequence_start": true}));
    }

    #[test]
    fn fuzz_entry_agrees_on_random_streams() {
        // bytes drawn from the characters that matter to the format
        let alphabet = b"data: event:\r\n\n{}\"[DONE]error,choices";
        let mut rng = crate::perf::rng::Rng::new(7);
        for _ in 0..2000 {
            let len = rng.below(200) as usize;
            let mut input = vec![rng.below(64) as u8, rng.below(8) as u8];
            input.extend((0..len).map(|_| alphabet[rng.below(alphabet.len() as u64) as usize]));
            fuzz_stream(&input);
        }
    }

    #[test]
    fn events() {
        assert_eq!(triton_event(br#"{"text_output":"x"}"#), Ok(()));
        assert_eq!(
            triton_event(br#" {"error":"boom"}"#),
            Err(ErrorKind::StreamFailed)
        );
        assert_eq!(triton_event(br#"{"error":null}"#), Ok(()));
        for bad in [&b"[]"[..], b"\"x\"", b"{\"a\":", b"", b"null"] {
            assert_eq!(triton_event(bad), Err(ErrorKind::Malformed), "{bad:?}");
        }
        let at = Instant::now();
        let mut got = Got::default();
        let chat =
            |data: &str, got: &mut Got| openai_event(Api::OpenAiChat, data.as_bytes(), at, got);
        // the role chunk and an empty content carry no text
        chat(
            r#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#,
            &mut got,
        )
        .unwrap();
        chat(
            r#"{"choices":[{"delta":{"content":"Hi \"x\""}}]}"#,
            &mut got,
        )
        .unwrap();
        chat(
            r#"{"choices":[{"delta":{"reasoning_content":"hm"}}]}"#,
            &mut got,
        )
        .unwrap();
        chat(
            r#"{"choices":[{"delta":{"content":null},"finish_reason":"stop"}]}"#,
            &mut got,
        )
        .unwrap();
        chat(
            r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":9}}"#,
            &mut got,
        )
        .unwrap();
        assert_eq!((got.responses.len(), got.usage), (2, Some(9)));
        assert_eq!(
            chat(r#"{"error":{"message":"x"}}"#, &mut got),
            Err(ErrorKind::StreamFailed)
        );
        assert_eq!(chat("not json", &mut got), Err(ErrorKind::Malformed));
        assert_eq!(
            chat(r#"{"choices":"x"}"#, &mut got),
            Err(ErrorKind::Malformed)
        );
        // a stream of responses without end is cut off
        let mut got = Got {
            responses: vec![at; MAX_RESPONSES - 1],
            ..Got::default()
        };
        chat(r#"{"choices":[{"delta":{"content":"x"}}]}"#, &mut got).unwrap();
        assert_eq!(
            chat(r#"{"choices":[{"delta":{"content":"x"}}]}"#, &mut got),
            Err(ErrorKind::Malformed)
        );
        assert_eq!(got.responses.len(), MAX_RESPONSES);
        let mut got = Got::default();
        openai_event(
            Api::OpenAiCompletions,
            br#"{"choices":[{"text":"a"}]}"#,
            at,
            &mut got,
        )
        .unwrap();
        openai_event(
            Api::OpenAiCompletions,
            br#"{"choices":[{"text":""}]}"#,
            at,
            &mut got,
        )
        .unwrap();
        assert_eq!((got.responses.len(), got.usage), (1, None));
    }
}
