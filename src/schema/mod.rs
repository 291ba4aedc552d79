//! The ModelConfig schema, from the one `proto/model_config.proto`.
//!
//! build.rs compiles that file with protox: the descriptor set drives the
//! binding of text to the schema (field names, kinds, enums, oneofs, maps),
//! and the prost-generated types in [`inference`] are the typed view the
//! semantic rules read.

pub mod bind;
pub use bind::RULES;
pub mod table;
pub mod wire;

use prost_reflect::{DescriptorPool, MessageDescriptor};
use std::sync::OnceLock;

/// Types generated from `proto/model_config.proto` (package `inference`).
#[allow(clippy::all, missing_docs)]
pub mod inference {
    include!(concat!(env!("OUT_DIR"), "/inference.rs"));
}

static FDS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/model_config.fds"));

/// The descriptor pool holding `inference.*`.
pub fn pool() -> &'static DescriptorPool {
    static POOL: OnceLock<DescriptorPool> = OnceLock::new();
    POOL.get_or_init(|| DescriptorPool::decode(FDS).expect("descriptor set built by build.rs"))
}

/// `inference.ModelConfig`.
pub fn model_config() -> MessageDescriptor {
    pool()
        .get_message_by_name("inference.ModelConfig")
        .expect("ModelConfig in the schema")
}

/// Enum value name for a number, e.g. `data_type_name(11) == "TYPE_FP32"`
/// (from the static tables: no descriptor pool needed).
pub fn enum_name(enum_full_name: &str, number: i32) -> String {
    table::enum_type(enum_full_name)
        .and_then(|e| e.name_of(number))
        .map_or_else(|| number.to_string(), str::to_string)
}

/// Name of an `inference.DataType` value (`TYPE_FP32`), or the number.
pub fn data_type_name(number: i32) -> String {
    enum_name("inference.DataType", number)
}
