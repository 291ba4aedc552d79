//! Pieces of `tritonctl run` that need no ONNX Runtime: reading the
//! requests of an input file ([`input`]), keeping per-sequence state
//! ([`state`]), stacking tensors along any axis ([`stack`]) and printing
//! results ([`output`]).
//!
//! The runner itself (scheduler core on a real clock + ONNX Runtime
//! sessions) is assembled from these in the `run` command.

#[cfg(feature = "run")]
pub mod devices;
pub mod doctor;
#[cfg(feature = "run")]
pub mod ensemble;
pub mod input;
pub mod model;
pub mod output;
pub mod reshape;
#[cfg(feature = "run")]
pub mod runner;
#[cfg(feature = "run")]
pub mod session_config;
pub mod stack;
pub mod state;
pub mod stateful;
#[cfg(feature = "run")]
pub mod warmup;

#[cfg(test)]
mod tests;
