//! The process's allocator.
//!
//! With feature `mimalloc` (on by default), mimalloc is linked into the
//! executable with its `malloc`, `free` and the rest defined there, so the
//! whole process allocates through it: Rust code (through the system
//! allocator) and the C and C++ libraries it loads later, ONNX Runtime
//! among them. ONNX Runtime allocates about a hundred small blocks per run;
//! mimalloc serves them faster than the C library's malloc. Sessions then
//! leave ONNX Runtime's own CPU arena off (see
//! [`crate::runtime::SessionOptions::cpu_arena`]): the arena would only put
//! a lock and its bookkeeping in front of an allocator that caches freed
//! blocks already.

/// Whether `malloc` is mimalloc's (feature `mimalloc`).
pub const MIMALLOC: bool = cfg!(feature = "mimalloc");

/// Whether ONNX Runtime sessions use its CPU arena unless a model says
/// otherwise: off with mimalloc, ONNX Runtime's own default (on) without.
pub const ORT_CPU_ARENA_DEFAULT: bool = !MIMALLOC;

/// mimalloc's option `purge_delay` (`mi_option_reset_delay` in older
/// releases): how long freed memory stays committed before it goes back
/// to the system. The crate names the options either side of it only.
#[cfg(feature = "mimalloc")]
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
#[cfg(feature = "mimalloc")]
const _: () = assert!(
    PURGE_DELAY == libmimalloc_sys::mi_option_eager_commit_delay + 1
        && PURGE_DELAY + 1 == libmimalloc_sys::mi_option_use_numa_nodes
);

/// Keeps freed memory for reuse instead of giving it back to the system
/// after mimalloc's default 10 ms: with ONNX Runtime's arena off, a large
/// model's buffers are freed after every run and allocated again for the
/// next, and memory given back in between would be faulted in again on
/// every run (latency measured with `--profile` would show it). The arena
/// keeps its memory the same way. Does nothing without feature `mimalloc`.
pub fn keep_freed_memory() {
    #[cfg(feature = "mimalloc")]
    // SAFETY: sets one of mimalloc's global options, which mimalloc allows
    // at any time (a thread reading it meanwhile sees the old value or the
    // new one).
    unsafe {
        libmimalloc_sys::mi_option_set(PURGE_DELAY, -1);
    }
}

/// mimalloc's current purge delay in milliseconds (-1: never); `None`
/// without feature `mimalloc`.
pub fn purge_delay_ms() -> Option<i64> {
    #[cfg(feature = "mimalloc")]
    // SAFETY: reads one of mimalloc's global options.
    return Some(unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) } as i64);
    #[cfg(not(feature = "mimalloc"))]
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freed_memory_is_kept_once_asked() {
        keep_freed_memory();
        let expected = if MIMALLOC { Some(-1) } else { None };
        assert_eq!(purge_delay_ms(), expected);
    }

    /// `malloc` as the libraries loaded at run time see it (looked up in
    /// the process's global scope, as the dynamic linker binds ONNX
    /// Runtime's calls) is mimalloc's: the memory it returns belongs to
    /// mimalloc's heap.
    #[cfg(all(feature = "mimalloc", target_os = "linux"))]
    #[test]
    fn libraries_loaded_later_allocate_through_mimalloc() {
        use std::ffi::{c_char, c_void};
        extern "C" {
            fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
        }
        // glibc's RTLD_DEFAULT.
        let default = std::ptr::null_mut();
        // SAFETY: NUL-terminated names; the symbols found are the C
        // library's malloc and free signatures; one block, freed once.
        unsafe {
            let m = dlsym(default, c"malloc".as_ptr());
            let f = dlsym(default, c"free".as_ptr());
            assert!(!m.is_null() && !f.is_null());
            let malloc: extern "C" fn(usize) -> *mut c_void = std::mem::transmute(m);
            let free: extern "C" fn(*mut c_void) = std::mem::transmute(f);
            let p = malloc(64);
            assert!(!p.is_null());
            assert!(libmimalloc_sys::mi_is_in_heap_region(p));
            free(p);
        }
    }
}
