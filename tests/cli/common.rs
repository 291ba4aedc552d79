//! Helpers shared by the test modules.
#![allow(dead_code)]

use std::path::PathBuf;

/// The repository root of this crate.
pub fn crate_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `../shared` next to the checkout, when present (CI always has it). Tests
/// that need it print why they are skipped when it is absent, unless
/// `TRITONCTL_REQUIRE_SHARED=1` (set by scripts/test in CI), which makes
/// its absence a failure.
pub fn shared_dir() -> Option<PathBuf> {
    let d = crate_root().join("..").join("shared");
    if d.join("corpus").is_dir() {
        return Some(d);
    }
    if std::env::var("TRITONCTL_REQUIRE_SHARED").is_ok_and(|v| v == "1") {
        panic!("../shared is required (TRITONCTL_REQUIRE_SHARED=1) but missing");
    }
    eprintln!("skipped: ../shared (corpus and conformance data) is not next to this checkout");
    None
}

/// A command for the built `tritonctl` binary with a clean environment.
pub fn tritonctl() -> assert_cmd::Command {
    let mut c = assert_cmd::Command::cargo_bin("tritonctl").expect("binary built");
    c.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default());
    c
}

/// Whether `TRITONCTL_REQUIRE_ORT=1` (set by scripts/test): tests that need
/// ONNX Runtime must then fail instead of skipping.
pub fn require_ort() -> bool {
    std::env::var_os("TRITONCTL_REQUIRE_ORT").is_some_and(|v| v == "1")
}

/// The ONNX Runtime library the tests run with, or `None` after printing
/// why the test is skipped (a failure under [`require_ort`]).
#[cfg(feature = "run")]
pub fn ort_library() -> Option<tritonctl::runtime::OrtLibrary> {
    match tritonctl::runtime::probe() {
        Ok(lib) => Some(lib),
        Err(e) if require_ort() => {
            panic!("TRITONCTL_REQUIRE_ORT=1 but ONNX Runtime is not available: {e}")
        }
        Err(e) => {
            eprintln!("skipped: ONNX Runtime is not available: {e}");
            None
        }
    }
}
