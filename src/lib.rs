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
pub mod lint;
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
pub mod tensor;
pub mod term;
pub mod text;
pub mod trace;
pub mod validate;

/// With feature `run`, the whole process allocates with mimalloc: the Rust
/// code through this global allocator; every C and C++ library of the
/// process through `malloc` and `free`, which the `override` build exports
/// in place of the C library's, and through C++'s `operator new` and
/// `operator delete`, which `build.rs` exports. That is the point: ONNX
/// Runtime allocates and frees dozens of small blocks in each run, and
/// glibc's `malloc` makes those cost more (docs/commands/run.md, "Memory
/// allocation"). Triton's own documentation likewise
/// suggests running the server with tcmalloc or jemalloc in place of
/// glibc's `malloc`.
#[cfg(feature = "run")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[cfg(all(test, feature = "run"))]
mod allocator_tests {
    use std::ffi::{c_char, c_void, CStr};

    extern "C" {
        // The C library's: it allocates its copy with `malloc`, called
        // through the dynamic linker as any shared library's call is.
        fn strdup(s: *const c_char) -> *mut c_char;
        fn free(p: *mut c_void);
        // mimalloc's (compiled in by the `mimalloc` crate).
        fn mi_is_in_heap_region(p: *const c_void) -> bool;
        // Its C++ `operator new`, exported by `build.rs` (64-bit Linux).
        #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
        fn _Znwm(n: usize) -> *mut c_void;
    }

    #[test]
    fn shared_libraries_allocate_with_mimalloc() {
        let text = c"ONNX Runtime allocates through malloc";
        // SAFETY: a NUL-terminated string; the copy is freed once.
        unsafe {
            let copy = strdup(text.as_ptr());
            assert!(!copy.is_null());
            assert_eq!(CStr::from_ptr(copy), text);
            assert!(
                mi_is_in_heap_region(copy as *const c_void),
                "a C library's malloc did not go to mimalloc"
            );
            free(copy as *mut c_void);
        }
        // The Rust side: the global allocator.
        let v: Box<[u8]> = vec![1u8; 100].into_boxed_slice();
        // SAFETY: a live allocation.
        assert!(unsafe { mi_is_in_heap_region(v.as_ptr() as *const c_void) });
    }

    // `build.rs` exports the operators on 64-bit Linux (their mangled
    // names depend on the width of `size_t`).
    #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
    #[test]
    fn shared_libraries_find_mimallocs_operator_new_first() {
        // What the dynamic linker finds for `operator new` in the global
        // scope (the program first, then the libraries in load order) is
        // what ONNX Runtime's `new` calls.
        let program = libloading::os::unix::Library::this();
        // SAFETY: the symbol is a function of this signature.
        let found = unsafe { program.get::<unsafe extern "C" fn(usize) -> *mut c_void>(b"_Znwm") }
            .expect("operator new is exported");
        assert_eq!(*found as *const (), _Znwm as *const ());
        // SAFETY: a live allocation of 16 bytes, freed once.
        unsafe {
            let p = found(16);
            assert!(mi_is_in_heap_region(p));
            free(p);
        }
    }
}
