//! One entry point for the `perf_response` fuzz target
//! (`fuzz/fuzz_targets/perf_response.rs`) and its regressions
//! (`tests/cli/fuzz_regressions.rs`): arbitrary bytes through everything
//! perf reads from a server, as a hostile server could send them, and
//! what `perf merge` reads from a worker's document. Nothing may panic,
//! and nothing may allocate beyond the limits it is given.

use super::client::check_infer_body;
use super::grpc::{self, pb};
use super::inputs::{self, BodyOptions, InputData};
use super::model::ModelInfo;
use super::stats::Snapshot;
use serde_json::Value;

/// The input tensor limit while fuzzing (`--max-input-bytes`): small, so
/// that dims from the input cannot exhaust the fuzzer's memory unnoticed.
const MAX_INPUT_BYTES: u64 = 1 << 20;

/// Runs `data` through perf's response parsing: an HTTP inference answer
/// (JSON, and binary with the `Inference-Header-Content-Length` taken from
/// the first two bytes), the metadata and config documents (split at the
/// first NUL byte) as JSON and as gRPC messages, turned into the model's
/// inputs and request bodies, the statistics, gRPC inference answers, and
/// Triton's metrics page (`--collect-metrics`).
pub fn responses(data: &[u8]) {
    // the `--collect-metrics` page
    let page = super::metrics::parse(&String::from_utf8_lossy(data));
    assert!(page
        .values
        .iter()
        .all(|m| m.len() <= super::metrics::MAX_GPUS && m.values().all(|v| v.is_finite())));

    // HTTP inference answers
    let _ = check_infer_body(None, data);
    if let [a, b, rest @ ..] = data {
        let _ = check_infer_body(Some(usize::from(u16::from_le_bytes([*a, *b]))), rest);
    }
    let _ = super::client::parse_header_len(data);

    // metadata and config as JSON
    let (meta, config) = match data.iter().position(|b| *b == 0) {
        Some(i) => (&data[..i], Some(&data[i + 1..])),
        None => (data, None),
    };
    if let Ok(meta) = serde_json::from_slice::<Value>(meta) {
        let config = config.and_then(|c| serde_json::from_slice::<Value>(c).ok());
        for batched in [false, true] {
            model(&meta, config.as_ref(), batched);
        }
        let _ = Snapshot::parse(&meta, "m");
    }

    // gRPC messages
    use prost::Message;
    let _ = grpc::check_response_bytes(data);
    let _ = grpc::check_stream_reply_bytes(data);
    let _ = pb::ModelStreamInferResponse::decode(data);
    if let Ok(m) = pb::ModelMetadataResponse::decode(data) {
        let meta = grpc::metadata_json(&m);
        model(&meta, None, true);
    }
    if let Ok(c) = pb::ModelConfigResponse::decode(data) {
        if let Some(cfg) = c.config {
            if let Ok(json) = grpc::config_json(&cfg) {
                let meta = serde_json::json!({"name": "m", "inputs": [], "outputs": []});
                model(&meta, Some(&json), false);
            }
        }
    }
    if let Ok(s) = pb::ModelStatisticsResponse::decode(data) {
        let _ = Snapshot::parse(&grpc::statistics_json(&s), "m");
    }

    // what `perf merge` reads from a worker's document: the document, and
    // a level histogram as text and as the bytes under its base64
    merge_inputs(data);
}

/// The documents and histograms of `perf merge` (a worker's file is no
/// more trusted than a server's answer).
fn merge_inputs(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let _ = super::histogram::decode(&text);
    let _ = super::histogram::decode(&crate::inputs::codec::b64_encode(data));
    if let Ok(doc) = super::merge::parse("f", &text) {
        let _ = super::merge::merge(&[doc.clone(), doc]);
    }
}

/// What perf does with a model's documents before the load: its inputs,
/// the response limit, and one request body in each form.
fn model(meta: &Value, config: Option<&Value>, batched: bool) {
    let Ok(mut info) = ModelInfo::new(meta, config, batched) else {
        return;
    };
    let _ = info.default_response_limit(u64::MAX, false);
    if info.apply_shapes(&[], true).is_err() || info.check_batch(1).is_err() {
        return;
    }
    for binary in [true, false] {
        let body = inputs::build(
            &info,
            BodyOptions {
                batch: 1,
                data: InputData::Zero,
                seed: 0,
                binary_inputs: binary,
                binary_outputs: binary,
                max_input_bytes: MAX_INPUT_BYTES,
            },
        );
        if let Ok(body) = body {
            let _ = grpc::request_from_body(&body, "m", None);
        }
    }
}
