//! The one integration-test binary: each module drives the real `tritonctl`
//! binary or the library against files on disk.
// Tests say on standard error what they skipped; their helpers are shared
// between modules of this one binary.
#![allow(clippy::print_stdout, clippy::print_stderr, unreachable_pub)]

mod architecture;
mod autoconfig;
mod bls;
mod ci_lint;
mod codec;
mod common;
mod conformance;
mod corpus;
mod differential;
mod doctor;
mod fidelity;
mod fmt;
mod formats;
mod fuzz_regressions;
mod generated;
mod loaded;
mod paths;
#[cfg(feature = "perf")]
mod perf;
#[cfg(feature = "perf")]
mod perf_generative;
#[cfg(feature = "perf")]
mod perf_grpc;
#[cfg(feature = "perf")]
mod perf_hostile;
#[cfg(feature = "perf")]
mod perf_merge;
#[cfg(feature = "perf")]
mod perf_tls;
mod properties;
mod repository;
mod rule_docs;
mod rules;
mod run;
mod scale;
mod scale_out;
mod simulate;
mod snapshots;
mod tune;
#[cfg(feature = "perf")]
mod tune_live;
mod untrusted_text;
