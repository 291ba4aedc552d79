//! tritonctl: validate, auto-configure, simulate, run and load-test models
//! for NVIDIA Triton Inference Server.
//!
//! The library never prints; the binary (`src/main.rs`) parses arguments,
//! calls in here and maps the outcome to an exit code.

pub mod autoconfig;
pub mod batching;
pub mod cli;
pub mod commands;
pub mod config;
pub mod convert;
pub mod diagnostics;
pub mod files;
pub mod format;
pub mod inputs;
pub mod interrupt;
pub mod lint;
pub mod model;
pub mod onnx;
pub mod pbtxt;
#[cfg(feature = "perf")]
pub mod perf;
pub mod repo;
pub mod run;
#[cfg(feature = "run")]
pub mod runtime;
pub mod schema;
pub mod settings;
pub mod simulate;
pub mod suppress;
pub mod svg;
pub mod tensor;
pub mod term;
pub mod text;
pub mod trace;
pub mod tune;
pub mod validate;
