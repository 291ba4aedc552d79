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
