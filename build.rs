//! Compiles `proto/model_config.proto` with protox (pure Rust, no protoc):
//! the file descriptor set drives schema binding at run time, and prost-build
//! generates the typed structs the semantic rules read.
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=proto/model_config.proto");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let fds = protox::compile(["model_config.proto"], ["proto"])
        .expect("compile proto/model_config.proto");
    let bytes = prost::Message::encode_to_vec(&fds);
    std::fs::write(out.join("model_config.fds"), bytes).expect("write descriptor set");
    prost_build::Config::new()
        .btree_map(["."])
        .compile_fds(fds)
        .expect("generate ModelConfig types");
}
