//! Compiles `proto/model_config.proto` with protox (pure Rust, no protoc):
//! the file descriptor set drives schema binding at run time, and prost-build
//! generates the typed structs the semantic rules read.
//!
//! With feature `perf`, also `proto/grpc_service.proto` (the KServe v2 /
//! Triton gRPC service): message types and a tonic client and server in
//! `OUT_DIR/grpc/inference.rs`, its `ModelConfig` being the type above.
// Build scripts talk to cargo through standard output.
#![allow(clippy::print_stdout, clippy::print_stderr)]
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=proto/model_config.proto");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let fds = protox::compile(["model_config.proto"], ["proto"])
        .expect("compile proto/model_config.proto");
    // The run-time copy drops source locations and comments: nothing reads
    // them, and decoding them costs start-up time.
    let mut runtime_fds = fds.clone();
    for f in &mut runtime_fds.file {
        f.source_code_info = None;
    }
    let bytes = prost::Message::encode_to_vec(&runtime_fds);
    std::fs::write(out.join("model_config.fds"), bytes).expect("write descriptor set");
    prost_build::Config::new()
        .btree_map(["."])
        .compile_fds(fds)
        .expect("generate ModelConfig types");
    if std::env::var_os("CARGO_FEATURE_PERF").is_some() {
        grpc(&out);
    }
    if std::env::var_os("CARGO_FEATURE_RUN").is_some() {
        export_operator_new();
    }
}

/// The gRPC service. The imported ModelConfig types are declared external
/// (taken from the schema module, not generated twice).
fn grpc(out: &std::path::Path) {
    println!("cargo:rerun-if-changed=proto/grpc_service.proto");
    let dir = out.join("grpc");
    std::fs::create_dir_all(&dir).expect("create OUT_DIR/grpc");
    let fds = protox::compile(["grpc_service.proto"], ["proto"])
        .expect("compile proto/grpc_service.proto");
    let mut b = tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .build_transport(false)
        .out_dir(&dir)
        .bytes(".");
    for f in fds
        .file
        .iter()
        .filter(|f| f.name.as_deref() == Some("model_config.proto"))
    {
        let names = f
            .message_type
            .iter()
            .map(|m| m.name().to_string())
            .chain(f.enum_type.iter().map(|e| e.name().to_string()));
        for name in names {
            b = b.extern_path(
                format!(".inference.{name}"),
                format!("crate::schema::inference::{name}"),
            );
        }
    }
    b.compile_fds(fds).expect("generate the gRPC service");
}

/// With feature `run`, mimalloc replaces `malloc` and `free` for the whole
/// process (see `src/main.rs`). Its build also defines C++'s `operator new`
/// and `operator delete` (by their mangled names on Linux), but a Rust
/// program does not export them, so ONNX Runtime's C++ allocations would
/// go through libstdc++'s operators and only then to `malloc`. Exporting
/// them lets the dynamic linker bind ONNX Runtime's calls to mimalloc's
/// directly, as it binds `malloc`.
fn export_operator_new() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("linux")
        || std::env::var("CARGO_CFG_TARGET_POINTER_WIDTH").as_deref() != Ok("64")
    {
        return;
    }
    const OPERATORS: [&str; 20] = [
        // new, new[]; nothrow; aligned; aligned nothrow
        "_Znwm",
        "_Znam",
        "_ZnwmRKSt9nothrow_t",
        "_ZnamRKSt9nothrow_t",
        "_ZnwmSt11align_val_t",
        "_ZnamSt11align_val_t",
        "_ZnwmSt11align_val_tRKSt9nothrow_t",
        "_ZnamSt11align_val_tRKSt9nothrow_t",
        // delete, delete[]; sized; aligned; sized aligned; nothrow;
        // aligned nothrow
        "_ZdlPv",
        "_ZdaPv",
        "_ZdlPvm",
        "_ZdaPvm",
        "_ZdlPvSt11align_val_t",
        "_ZdaPvSt11align_val_t",
        "_ZdlPvmSt11align_val_t",
        "_ZdaPvmSt11align_val_t",
        "_ZdlPvRKSt9nothrow_t",
        "_ZdaPvRKSt9nothrow_t",
        "_ZdlPvSt11align_val_tRKSt9nothrow_t",
        "_ZdaPvSt11align_val_tRKSt9nothrow_t",
    ];
    for name in OPERATORS {
        println!("cargo:rustc-link-arg=-Wl,--export-dynamic-symbol={name}");
    }
}
