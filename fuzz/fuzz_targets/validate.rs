//! The whole `validate` pipeline (parse, bind, normalize, every rule) on one
//! config text, as `tritonctl validate -` runs it, then the human and JSON
//! renderers on its report: nothing may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tritonctl::diagnostics::render::{render, Format, RenderOptions};
use tritonctl::validate::{validate_stdin, ValidateOptions};

fuzz_target!(|data: &[u8]| {
    let report = validate_stdin(data.to_vec(), &ValidateOptions::default());
    for f in &report.files {
        for d in &f.diagnostics {
            if let Some(s) = d.span {
                let (a, b) = (s.start as usize, s.end as usize);
                assert!(
                    a <= b && b <= f.src.len(),
                    "{}: span {a}..{b} outside the text",
                    d.code()
                );
            }
        }
    }
    let opts = RenderOptions::default();
    let mut out = Vec::new();
    render(Format::Human, &mut out, &report, &opts).unwrap();
    render(Format::Json, &mut out, &report, &opts).unwrap();
});
