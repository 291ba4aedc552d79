//! Load testing of servers speaking the KServe v2 protocol with Triton's
//! extensions (`tritonctl perf`).
//!
//! - [`model`]: what the server says about the model (metadata, and the
//!   config when the server has that extension), shape overrides;
//! - [`ensemble`]: an ensemble's composing models (stateful steps, whose
//!   statistics to report);
//! - [`inputs`]: one request body, built once (JSON or binary tensors);
//! - [`schedule`]: load ranges and open-loop send schedules;
//! - [`options`]: the checks that turn `tritonctl perf`'s arguments into
//!   the load's options;
//! - [`client`]: a keep-alive HTTP/1.1 connection pool, error kinds, and
//!   the client of either protocol the load uses;
//! - [`grpc`]: the gRPC client (unary and streaming);
//! - [`stats`]: the statistics extension, diffed around a level;
//! - [`load`]: closed and open loops, measured into HDR histograms;
//! - [`report`]: results as a table, JSON and perf_analyzer's CSV.
//!
//! Nothing here prints; progress is reported through a callback.

pub mod client;
pub mod ensemble;
#[doc(hidden)]
pub mod fuzz;
pub mod grpc;
pub mod inputs;
pub mod load;
pub mod model;
pub mod options;
pub mod report;
pub mod rng;
pub mod schedule;
pub mod stats;
