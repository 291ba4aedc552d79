//! Request inputs, read once for every command that sends or runs
//! requests:
//!
//! - [`codec`]: one encoding per data type (base64, FP16 and BF16 rounded
//!   as numpy rounds, raw little-endian tensor bytes);
//! - [`json`]: JSON tensor values ↔ tensors;
//! - [`request`]: the fields of a JSON Lines request line (`simulate`'s
//!   traces and `run --input`), one list of known fields, one error type;
//!   [`fast_line`]: the common shape of a trace line read without building
//!   a JSON value (anything else goes to [`request`]);
//! - [`data_file`]: perf_analyzer's input-data JSON (`run --input`,
//!   `perf --input-data`).
//!
//! What is about a command stays with it, in the modules above this one:
//! the trace reader in `trace`, the requests of a run in `run::input`, the
//! request bodies of a load in `perf::inputs`. Nothing here needs
//! ONNX Runtime or a network, so `simulate` and trace reading work without
//! the `run` and `perf` features.

pub mod codec;
pub mod data_file;
pub mod fast_line;
pub mod json;
pub mod request;

use serde_json::Value;

/// A JSON value as messages name it: `the number 3`, `an array`, ...
pub(crate) fn kind(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => format!("the string {s:?}"),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}
