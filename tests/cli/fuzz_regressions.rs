//! Inputs on which the fuzz targets (fuzz/fuzz_targets/) once failed, under
//! testdata/fuzz-regressions/, through the same checks as the targets:
//! parsing (the fast parser and the grammar agree), the `fmt` round trip
//! (the printed text parses to the same document, and printing is
//! idempotent), the whole `validate` pipeline with its renderers and
//! perf's reading of server responses; the `.onnx` ones through the ONNX
//! model reader (target `onnx`).

use crate::common::crate_root;
use tritonctl::diagnostics::render::{render, Format, RenderOptions};
use tritonctl::format::{format_text, FormatError};
use tritonctl::pbtxt;
use tritonctl::validate::{validate_stdin, ValidateOptions};

fn inputs() -> Vec<(String, Vec<u8>)> {
    let dir = crate_root().join("testdata/fuzz-regressions");
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .expect("testdata/fuzz-regressions")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_none_or(|e| e != "md"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    v.sort();
    v
}

fn parse_check(name: &str, src: &str) {
    let parsed = pbtxt::parse(src);
    if pbtxt::parse_fast(src).is_some() {
        assert!(
            pbtxt::parse_with_pest(src).is_ok(),
            "{name}: the fast parser accepts a text the grammar refuses"
        );
        assert!(parsed.is_ok(), "{name}");
    }
}

fn roundtrip_check(name: &str, src: &str) {
    match format_text(src) {
        Ok(out) => match format_text(&out) {
            Ok(again) => assert_eq!(again, out, "{name}: formatting twice changes the text"),
            Err(FormatError::Syntax(d)) => {
                panic!("{name}: the formatted text does not parse: {}", d.message)
            }
            Err(FormatError::Internal(m)) => panic!("{name}: second format: {m}"),
        },
        Err(FormatError::Syntax(_)) => {}
        Err(FormatError::Internal(m)) => panic!("{name}: {m}"),
    }
}

fn validate_check(name: &str, bytes: &[u8]) {
    let report = validate_stdin(bytes.to_vec(), &ValidateOptions::default());
    for f in &report.files {
        for d in &f.diagnostics {
            for s in d.span.iter().chain(d.labels.iter().map(|l| &l.span)) {
                let (a, b) = (s.start as usize, s.end as usize);
                assert!(
                    a <= b && b <= f.src.len(),
                    "{name}: {} span {a}..{b} outside the text",
                    d.code()
                );
            }
        }
    }
    let opts = RenderOptions::default();
    let mut out = Vec::new();
    render(Format::Human, &mut out, &report, &opts).unwrap();
    render(Format::Json, &mut out, &report, &opts).unwrap();
}

/// The `onnx` target's checks: reading never panics, and every tensor's
/// Triton view can be taken.
fn onnx_check(bytes: &[u8]) {
    let Ok(sig) = tritonctl::onnx::read_signature_from(
        std::io::Cursor::new(bytes),
        bytes.len() as u64,
        std::path::Path::new("fuzz.onnx"),
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
        let _ = tritonctl::onnx::format_shape(t.shape());
        let _ = t.triton_dims();
        let _ = t.triton_data_type();
    }
}

#[test]
fn fuzz_findings_stay_fixed() {
    for (name, bytes) in inputs() {
        if name.ends_with(".onnx") {
            onnx_check(&bytes);
            continue;
        }
        if let Ok(src) = std::str::from_utf8(&bytes) {
            parse_check(&name, src);
            roundtrip_check(&name, src);
        }
        validate_check(&name, &bytes);
        // perf's reading of server responses (the perf_response target)
        #[cfg(feature = "perf")]
        tritonctl::perf::fuzz::responses(&bytes);
    }
}
