//! Load testing of servers speaking the KServe v2 protocol with Triton's
//! extensions (`tritonctl perf`).
//!
//! - [`model`]: what the server says about the model (metadata, and the
//!   config when the server has that extension), shape overrides;
//! - [`ensemble`]: an ensemble's composing models (stateful steps, whose
//!   statistics to report);
//! - [`inputs`]: one request body, built once (JSON or binary tensors);
//! - [`prompts`]: prompts for generative endpoints (synthetic or from a
//!   file);
//! - [`schedule`]: load ranges and open-loop send schedules;
//! - [`shard`]: one load split over several workers (`--shard`), and
//!   their common start (`--start-at`);
//! - [`options`]: the checks that turn `tritonctl perf`'s arguments into
//!   the load's options;
//! - [`client`]: a keep-alive HTTP/1.1 connection pool, error kinds, and
//!   the client of either protocol the load uses;
//! - [`tls`]: the one place connections are opened, plain or TLS
//!   (rustls, `https://` and `--ssl-*`);
//! - [`grpc`]: the gRPC client (unary and streaming, decoupled models);
//! - [`generative`]: Triton's generate extension and OpenAI-compatible
//!   servers over HTTP;
//! - [`shm`]: `--shared-memory system|cuda`: tensors in registered POSIX
//!   shared-memory or GPU memory regions;
//! - [`device`]: GPU memory for `--shared-memory cuda` (the CUDA driver,
//!   or a fake for tests);
//! - [`sse`]: server-sent events, read with a bound on one event's size;
//! - [`exchange`]: what one request brought back (every response's
//!   arrival), and the signal that cancels streams at the end of a level;
//! - [`stats`]: the statistics extension, diffed around a level;
//! - [`metrics`]: Triton's Prometheus endpoint (GPU gauges) read during
//!   each level;
//! - [`load`]: closed and open loops, measured into HDR histograms;
//! - [`histogram`]: those histograms' range, percentiles and portable
//!   encoding in the JSON document;
//! - [`merge`]: `perf merge`, several workers' JSON documents combined
//!   into one report;
//! - [`report`]: results as a table, JSON and perf_analyzer's CSV;
//! - [`plot`]: results as an SVG picture (`--plot`);
//! - [`curve`]: `tune`'s latency curve by batch size, measured from the
//!   statistics' `batch_stats`;
//! - [`repository`]: the repository extension (load a model with a given
//!   config, unload it);
//! - [`verify`]: `tune --verify`'s open-loop Poisson level.
//!
//! Nothing here prints; progress is reported through a callback.

pub mod client;
pub mod curve;
pub mod device;
pub mod ensemble;
pub mod exchange;
#[doc(hidden)]
pub mod fuzz;
pub mod generative;
pub mod grpc;
pub mod histogram;
pub mod inputs;
pub mod load;
pub mod merge;
pub mod metrics;
pub mod model;
pub mod options;
pub mod plot;
pub mod prompts;
pub mod report;
pub mod repository;
pub mod rng;
pub mod schedule;
pub mod shard;
pub mod shm;
pub mod sse;
pub mod stats;
pub mod tls;
pub mod verify;
