//! Requests to generative HTTP endpoints (`--endpoint`): Triton's generate
//! extension (`/generate`, and `/generate_stream` with server-sent events
//! for decoupled models) and OpenAI-compatible servers
//! (`/v1/chat/completions`, `/v1/completions`, streamed).

use super::client::{Client, ErrorKind};
use super::exchange::{Cancel, Exchange};
use super::model::ModelInfo;
use bytes::Bytes;
use serde_json::{Map, Value};

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

/// The request bodies, one per prompt, sent in turn.
pub fn bodies(spec: &BodySpec<'_>) -> Result<Vec<Bytes>, String> {
    let _ = spec;
    Err(format!(
        "--endpoint {} is not available in this build yet",
        spec.api.name()
    ))
}

/// Sends one request (`params`: sequence id and flags, added to the
/// body) and reads its answer or its stream of events until the end, an
/// error, `--timeout` or `cancel`.
pub async fn exchange(
    client: &Client,
    api: Api,
    path: &str,
    body: &Bytes,
    params: Option<&Map<String, Value>>,
    cancel: &Cancel,
) -> Exchange {
    let _ = (client, api, path, body, params, cancel);
    Exchange::failed(ErrorKind::Malformed, Vec::new())
}
