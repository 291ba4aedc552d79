//! The one integration-test binary: each module drives the real `tritonctl`
//! binary or the library against files on disk.

mod autoconfig;
mod common;
mod conformance;
mod corpus;
mod differential;
mod doctor;
mod fidelity;
mod fmt;
mod formats;
mod generated;
#[cfg(feature = "perf")]
mod perf;
mod properties;
mod repository;
mod rules;
mod run;
mod simulate;
