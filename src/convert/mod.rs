//! A ModelConfig message to and from Triton's JSON form, the document
//! `GET /v2/models/<model>/config` returns.
//!
//! Triton builds that document (`ModelConfigToJson`; docs/spec/v2-protocol.md
//! §6) with protobuf's JSON printer and then rewrites some fields. Its
//! conventions, which [`to_json`] follows:
//!
//! - keys are the field names of the proto (`max_batch_size`, not
//!   `maxBatchSize`), in declaration order;
//! - enum values are their names as strings (`"TYPE_FP32"`);
//! - primitive fields are printed even at their default value (`"name": ""`,
//!   `"max_batch_size": 0`, `"format": "FORMAT_NONE"`), and so are repeated
//!   and map fields (`[]`, `{}`); a message field, or a member of a oneof, is
//!   printed only when it is set;
//! - maps are objects whose keys are strings (`"priority_queue_policy":
//!   {"1": {...}}`);
//! - 64-bit integers are JSON numbers, not protobuf's quoted strings.
//!   Triton converts the 64-bit fields it knows back to numbers after
//!   printing (`dims`, `reshape.shape`, `version_policy.specific.versions`,
//!   the `dynamic_batching` and `sequence_batching` delays, timeouts and
//!   priority levels, `ensemble_scheduling.step.model_version`,
//!   `model_warmup.inputs.dims`, `sequence_batching.state.dims`); a few it
//!   misses (`optimization.cuda.graph_spec` dims, `secondary_devices.device_id`,
//!   `sequence_batching.state.initial_state.dims`) stay strings in its
//!   output. Here every 64-bit integer is a number (docs/spec/cli.md), and
//!   [`from_json`] takes either form;
//! - floats are numbers, with `"NaN"`, `"Infinity"` and `"-Infinity"` as
//!   strings (protobuf's JSON mapping), bytes as base64.
//!
//! Triton answers an all-default config with an empty body; [`to_json`]
//! prints the object of defaults instead, so its output is always JSON.
//!
//! [`from_json`] reads that form back (protobuf's JSON mapping: proto or
//! lowerCamel field names, enum names or numbers, 64-bit integers as numbers
//! or strings, `null` for "not set"; unknown fields and enum names are
//! errors), reporting errors with their line and column.

use prost_reflect::{DeserializeOptions, DynamicMessage, Kind, MapKey, ReflectMessage, Value};
use std::fmt::Write as _;

/// The message as Triton's JSON form, pretty-printed (two-space indent,
/// arrays of scalars on one line), with a final newline.
pub fn to_json(msg: &DynamicMessage) -> String {
    let mut out = String::new();
    write_json(&message_json(msg), 0, &mut out);
    out.push('\n');
    out
}

/// A JSON value with keys in insertion order.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    /// A number, already in its JSON text.
    Number(String),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

/// The message as a JSON tree (see the module documentation).
pub fn message_json(msg: &DynamicMessage) -> Json {
    let mut members = Vec::new();
    let desc = msg.descriptor();
    // Declaration order, as protobuf's JSON printer (prost-reflect lists
    // fields by number).
    let declared = desc
        .descriptor_proto()
        .field
        .iter()
        .filter_map(|f| desc.get_field_by_name(f.name()));
    for fd in declared {
        let present = msg.has_field(&fd);
        let has_presence = fd.containing_oneof().is_some()
            || (matches!(fd.kind(), Kind::Message(_)) && !fd.is_list() && !fd.is_map());
        if has_presence && !present {
            continue;
        }
        let value = msg.get_field(&fd);
        members.push((fd.name().to_string(), value_json(&value, &fd.kind())));
    }
    Json::Object(members)
}

fn value_json(v: &Value, kind: &Kind) -> Json {
    match v {
        Value::Bool(x) => Json::Bool(*x),
        Value::I32(x) => Json::Number(x.to_string()),
        Value::I64(x) => Json::Number(x.to_string()),
        Value::U32(x) => Json::Number(x.to_string()),
        Value::U64(x) => Json::Number(x.to_string()),
        Value::F32(x) => float_json(*x as f64, x.to_string()),
        Value::F64(x) => float_json(*x, x.to_string()),
        Value::String(s) => Json::String(s.clone()),
        Value::Bytes(b) => Json::String(base64(b)),
        Value::EnumNumber(n) => match kind {
            Kind::Enum(e) => match e.get_value(*n) {
                Some(ev) => Json::String(ev.name().to_string()),
                None => Json::Number(n.to_string()),
            },
            _ => Json::Number(n.to_string()),
        },
        Value::Message(m) => message_json(m),
        Value::List(items) => Json::Array(items.iter().map(|x| value_json(x, kind)).collect()),
        Value::Map(map) => {
            let value_kind = match kind {
                Kind::Message(entry) => entry.map_entry_value_field().kind(),
                k => k.clone(),
            };
            let mut keys: Vec<&MapKey> = map.keys().collect();
            keys.sort();
            Json::Object(
                keys.into_iter()
                    .map(|k| (map_key_string(k), value_json(&map[k], &value_kind)))
                    .collect(),
            )
        }
    }
}

fn float_json(x: f64, display: String) -> Json {
    if x.is_nan() {
        Json::String("NaN".into())
    } else if x.is_infinite() {
        Json::String(if x > 0.0 { "Infinity" } else { "-Infinity" }.into())
    } else {
        Json::Number(display)
    }
}

fn map_key_string(k: &MapKey) -> String {
    match k {
        MapKey::Bool(x) => x.to_string(),
        MapKey::I32(x) => x.to_string(),
        MapKey::I64(x) => x.to_string(),
        MapKey::U32(x) => x.to_string(),
        MapKey::U64(x) => x.to_string(),
        MapKey::String(s) => s.clone(),
    }
}

fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for c in bytes.chunks(3) {
        let n = (c[0] as u32) << 16
            | (*c.get(1).unwrap_or(&0) as u32) << 8
            | *c.get(2).unwrap_or(&0) as u32;
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if i <= c.len() {
                s.push(A[(n >> shift) as usize & 63] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

fn is_scalar(j: &Json) -> bool {
    !matches!(j, Json::Array(_) | Json::Object(_))
}

fn indent(depth: usize, out: &mut String) {
    for _ in 0..depth {
        out.push_str("  ");
    }
}

/// Writes `j` pretty-printed at nesting `depth`.
pub fn write_json(j: &Json, depth: usize, out: &mut String) {
    match j {
        Json::Null => out.push_str("null"),
        Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Json::Number(n) => out.push_str(n),
        Json::String(s) => out.push_str(&json_string(s)),
        Json::Array(items) if items.is_empty() => out.push_str("[]"),
        Json::Array(items) if items.iter().all(is_scalar) => {
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_json(x, depth, out);
            }
            out.push(']');
        }
        Json::Array(items) => {
            out.push_str("[\n");
            for (i, x) in items.iter().enumerate() {
                indent(depth + 1, out);
                write_json(x, depth + 1, out);
                out.push_str(if i + 1 < items.len() { ",\n" } else { "\n" });
            }
            indent(depth, out);
            out.push(']');
        }
        Json::Object(members) if members.is_empty() => out.push_str("{}"),
        Json::Object(members) => {
            out.push_str("{\n");
            for (i, (k, v)) in members.iter().enumerate() {
                indent(depth + 1, out);
                let _ = write!(out, "{}: ", json_string(k));
                write_json(v, depth + 1, out);
                out.push_str(if i + 1 < members.len() { ",\n" } else { "\n" });
            }
            indent(depth, out);
            out.push('}');
        }
    }
}

/// A JSON document that is not a ModelConfig: where and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{line}:{column}: {message}")]
pub struct JsonError {
    /// 1-based; 0 when the position is unknown.
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl From<serde_json::Error> for JsonError {
    fn from(e: serde_json::Error) -> JsonError {
        let (line, column) = (e.line(), e.column());
        let full = e.to_string();
        let suffix = format!(" at line {line} column {column}");
        let message = full.strip_suffix(&suffix).unwrap_or(&full).to_string();
        JsonError {
            line,
            column,
            message,
        }
    }
}

/// Reads a ModelConfig from its JSON form. Refused besides what the schema
/// refuses: a document that is not an object, and a key given twice in one
/// object (serde_json would keep the last one silently; protobuf's JSON
/// parser refuses it too).
pub fn from_json(text: &str) -> Result<DynamicMessage, JsonError> {
    let start = text.len() - text.trim_start_matches(JSON_BLANKS).len();
    if text[start..].starts_with('[') {
        let index = crate::text::LineIndex::new(text);
        let at = index.line_col(text, start);
        return Err(JsonError {
            line: at.line,
            column: at.column,
            message: "expected a JSON object (a ModelConfig), found an array".into(),
        });
    }
    let mut de = serde_json::Deserializer::from_str(text);
    serde::de::DeserializeSeed::deserialize(NoDuplicateKeys, &mut de)?;
    let mut de = serde_json::Deserializer::from_str(text);
    let msg = DynamicMessage::deserialize_with_options(
        crate::schema::model_config(),
        &mut de,
        &DeserializeOptions::new().deny_unknown_fields(true),
    )?;
    de.end()?;
    Ok(msg)
}

const JSON_BLANKS: [char; 5] = ['\u{feff}', ' ', '\t', '\r', '\n'];

/// Walks a JSON document and fails at the first key repeated within one
/// object, naming it (serde_json adds the position, just after the key).
struct NoDuplicateKeys;

impl<'de> serde::de::DeserializeSeed<'de> for NoDuplicateKeys {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for NoDuplicateKeys {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(NoDuplicateKeys)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                return Err(serde::de::Error::custom(format!(
                    "the key '{}' is given twice in one object",
                    key.escape_debug()
                )));
            }
            map.next_value_seed(NoDuplicateKeys)?;
        }
        Ok(())
    }
}

/// Whether a config text is JSON rather than text format: its first
/// character that is not a blank is `{`, or `[` opening an array (a
/// text-format document starts with a field name, a `#` comment or `[` and
/// the name of an extension).
pub fn looks_like_json(text: &str) -> bool {
    let rest = text.trim_start_matches(JSON_BLANKS);
    if rest.starts_with('{') {
        return true;
    }
    let Some(inner) = rest.strip_prefix('[') else {
        return false;
    };
    let inner = inner.trim_start_matches(JSON_BLANKS);
    inner.starts_with([
        '{', '[', '"', ']', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9',
    ]) || ["true", "false", "null"].iter().any(|w| {
        inner.strip_prefix(w).is_some_and(|r| {
            !r.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        })
    })
}

/// Whether two messages are equal field by field: the same fields set, with
/// equal values (floats by their bits, any NaN equal to any NaN; maps
/// regardless of order).
pub fn messages_equal(a: &DynamicMessage, b: &DynamicMessage) -> bool {
    if a.descriptor() != b.descriptor() {
        return false;
    }
    a.descriptor().fields().all(|fd| {
        let (ha, hb) = (a.has_field(&fd), b.has_field(&fd));
        ha == hb && (!ha || values_equal(&a.get_field(&fd), &b.get_field(&fd)))
    })
}

fn values_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::F32(x), Value::F32(y)) => (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits(),
        (Value::F64(x), Value::F64(y)) => (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits(),
        (Value::Message(x), Value::Message(y)) => messages_equal(x, y),
        (Value::List(x), Value::List(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| values_equal(p, q))
        }
        (Value::Map(x), Value::Map(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| values_equal(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ParsedConfig;

    fn bind(src: &str) -> DynamicMessage {
        let p = ParsedConfig::parse(src.to_string());
        assert!(p.diagnostics.is_empty(), "{src}: {:?}", p.diagnostics);
        p.message.unwrap()
    }

    #[test]
    fn json_has_triton_conventions() {
        let m = bind(
            "name: \"m\" max_batch_size: 8 input { name: \"x\" data_type: TYPE_FP32 dims: [ -1, 16 ] } \
             dynamic_batching { max_queue_delay_microseconds: 100 priority_queue_policy { key: 2 value { } } }",
        );
        let v: serde_json::Value = serde_json::from_str(&to_json(&m)).unwrap();
        assert_eq!(v["name"], "m");
        assert_eq!(v["platform"], "");
        assert_eq!(v["input"][0]["data_type"], "TYPE_FP32");
        assert_eq!(v["input"][0]["format"], "FORMAT_NONE");
        assert_eq!(v["input"][0]["dims"], serde_json::json!([-1, 16]));
        assert_eq!(v["output"], serde_json::json!([]));
        assert_eq!(v["parameters"], serde_json::json!({}));
        assert_eq!(v["dynamic_batching"]["max_queue_delay_microseconds"], 100);
        assert!(v["dynamic_batching"]["priority_queue_policy"]["2"].is_object());
        // Unset messages and oneof members are left out.
        assert!(v.get("version_policy").is_none());
        assert!(v.get("sequence_batching").is_none());
    }

    #[test]
    fn json_round_trip_and_errors() {
        let m = bind(
            "name: \"m\" input { name: \"x\" dims: [ 3 ] } optimization { cuda { graphs: true } }",
        );
        let back = from_json(&to_json(&m)).unwrap();
        assert!(messages_equal(&m, &back));
        let quoted = from_json("{\"input\": [{\"dims\": [\"3\", 4]}]}").unwrap();
        assert!(to_json(&quoted).contains("[3, 4]"), "{}", to_json(&quoted));
        let e = from_json("{\n  \"nmae\": \"x\"\n}").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("nmae"), "{}", e.message);
        assert!(from_json("{} x").is_err());
        assert!(from_json("{\"input\": [{\"data_type\": \"TYPE_F32\"}]}").is_err());
    }

    /// Regression (docs/hostile.md): duplicate keys were accepted silently (the last one won)
    /// and an array was read as text format.
    #[test]
    fn duplicate_keys_and_arrays_are_refused_with_their_position() {
        let e = from_json("{\n  \"name\": \"a\",\n  \"name\": \"b\"\n}").unwrap_err();
        assert_eq!(e.line, 3, "{e}");
        assert!(e.message.contains("the key 'name' is given twice"), "{e}");
        let e = from_json("{\"input\": [{\"name\": \"x\", \"dims\": [1], \"dims\": [2]}]}")
            .unwrap_err();
        assert!(e.message.contains("'dims'"), "{e}");
        // The same key in two objects is fine.
        assert!(from_json("{\"input\": [{\"name\": \"x\"}, {\"name\": \"y\"}]}").is_ok());
        for text in ["[{\"name\": \"m\"}]", "\n  [ ]", "[1, 2]", "[true]"] {
            assert!(looks_like_json(text), "{text}");
            let e = from_json(text).unwrap_err();
            assert_eq!(
                e.message, "expected a JSON object (a ModelConfig), found an array",
                "{text}"
            );
            assert_eq!(
                (e.line, e.column),
                if text.starts_with('\n') {
                    (2, 3)
                } else {
                    (1, 1)
                }
            );
        }
        // A text-format extension field is not JSON.
        assert!(!looks_like_json("[ext.name]: 1"));
        assert!(!looks_like_json("[truely.x]: 1"));
    }

    #[test]
    fn detects_json() {
        assert!(looks_like_json("\n  {\"name\": 1}"));
        assert!(!looks_like_json("# {\nname: \"x\""));
        assert!(!looks_like_json("name: \"x\""));
    }

    #[test]
    fn base64_pads() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
    }
}
