//! The ONNX model reader on arbitrary bytes, as `autoconfig` uses it: the
//! streaming `ModelProto` decoder, the shape propagation over the graph and
//! the Triton view of every tensor. It must never panic, and memory stays
//! bounded by the input (libFuzzer's RSS limit catches an allocation the
//! input's sizes drive).
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::io::Cursor;
use std::path::Path;
use tritonctl::onnx;

fuzz_target!(|data: &[u8]| {
    let Ok(sig) = onnx::read_signature_from(
        Cursor::new(data),
        data.len() as u64,
        Path::new("fuzz.onnx"),
    ) else {
        return;
    };
    for t in sig
        .inputs
        .iter()
        .chain(&sig.outputs)
        .chain(&sig.overridable_initializers)
        .chain(&sig.value_info)
    {
        let _ = onnx::format_shape(t.shape());
        let _ = t.triton_dims();
        let _ = t.triton_data_type();
        let _ = t.onnx_type_name();
        let _ = t.is_fully_known();
    }
});
