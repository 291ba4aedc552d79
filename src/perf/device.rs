//! GPU memory for `perf --shared-memory cuda`, behind a small trait so
//! that the registration and request code ([`super::shm`]) runs the same
//! against the CUDA driver ([`cuda`], feature `run`) and against
//! [`fake`], host memory that the tests' loopback servers reach through
//! the handle as Triton reaches device memory through a CUDA IPC handle.

use std::sync::Arc;

/// A GPU whose memory holds tensors.
pub trait Device: Send + Sync + std::fmt::Debug {
    /// The device number the server is told (`device_id`).
    fn id(&self) -> i64;
    /// `size` bytes of device memory, freed when the buffer drops.
    fn alloc(&self, size: u64) -> Result<Box<dyn Buffer>, String>;
}

/// One allocation of device memory.
pub trait Buffer: Send + Sync {
    fn size(&self) -> u64;
    /// Copies `bytes` from the host to `offset`.
    fn write(&self, offset: u64, bytes: &[u8]) -> Result<(), String>;
    /// Copies from `offset` to the host.
    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), String>;
    /// The 64-byte CUDA IPC handle the server opens
    /// (docs/spec/v2-protocol.md §7a, `raw_handle`).
    fn ipc_handle(&self) -> Result<[u8; 64], String>;
}

/// The CUDA driver's GPU `ordinal`; a clear error where there is no
/// driver, no such GPU, or (without feature `run`) no driver binding.
pub fn cuda(ordinal: u32) -> Result<Arc<dyn Device>, String> {
    #[cfg(feature = "run")]
    {
        cuda::open(ordinal)
    }
    #[cfg(not(feature = "run"))]
    {
        let _ = ordinal;
        Err(
            "this tritonctl was built without feature `run`, which holds the CUDA driver binding"
                .into(),
        )
    }
}

/// [`Device`] on the CUDA driver (cudarc, loaded at run time).
#[cfg(feature = "run")]
pub mod cuda {
    use super::{Buffer, Device};
    use crate::runtime::cuda::{CudaBuffer, CudaContext};
    use std::sync::Arc;

    #[derive(Debug)]
    struct Gpu(Arc<CudaContext>);

    /// Retains GPU `ordinal`'s context (after probing the driver).
    pub fn open(ordinal: u32) -> Result<Arc<dyn Device>, String> {
        let ctx = CudaContext::open(ordinal).map_err(|e| e.to_string())?;
        Ok(Arc::new(Gpu(ctx)))
    }

    impl Device for Gpu {
        fn id(&self) -> i64 {
            self.0.ordinal() as i64
        }
        fn alloc(&self, size: u64) -> Result<Box<dyn Buffer>, String> {
            let b = self
                .0
                .alloc(size)
                .map_err(|e| format!("cannot allocate {size} bytes on GPU {}: {e}", self.id()))?;
            Ok(Box::new(Mem(b)))
        }
    }

    struct Mem(CudaBuffer);

    impl Buffer for Mem {
        fn size(&self) -> u64 {
            self.0.size()
        }
        fn write(&self, offset: u64, bytes: &[u8]) -> Result<(), String> {
            self.0.write(offset, bytes).map_err(|e| e.to_string())
        }
        fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), String> {
            self.0.read(offset, out).map_err(|e| e.to_string())
        }
        fn ipc_handle(&self) -> Result<[u8; 64], String> {
            self.0.ipc_handle().map_err(|e| e.to_string())
        }
    }
}

/// A [`Device`] in host memory for tests: each allocation gets a unique
/// 64-byte handle, and [`fake::open_handle`] gives what Triton's
/// `cudaIpcOpenMemHandle` would: the same bytes, until the buffer is
/// freed.
#[doc(hidden)]
pub mod fake {
    use super::{Buffer, Device};
    use std::collections::BTreeMap;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, Mutex};

    type Memory = Arc<Mutex<Vec<u8>>>;

    /// Live allocations of every fake device, by handle.
    fn live() -> &'static Mutex<BTreeMap<[u8; 64], Memory>> {
        static LIVE: std::sync::OnceLock<Mutex<BTreeMap<[u8; 64], Memory>>> =
            std::sync::OnceLock::new();
        LIVE.get_or_init(Default::default)
    }

    /// A fake GPU with the number `id`.
    #[derive(Debug, Default)]
    pub struct FakeDevice {
        id: i64,
        /// Allocations made and freed.
        pub allocated: AtomicU64,
        pub freed: Arc<AtomicU64>,
    }

    impl FakeDevice {
        pub fn new(id: i64) -> Arc<FakeDevice> {
            Arc::new(FakeDevice {
                id,
                ..Default::default()
            })
        }
    }

    /// The memory behind a handle, while its buffer lives.
    pub fn open_handle(handle: &[u8]) -> Option<Arc<Mutex<Vec<u8>>>> {
        let h: [u8; 64] = handle.try_into().ok()?;
        live().lock().ok()?.get(&h).cloned()
    }

    struct FakeBuffer {
        handle: [u8; 64],
        mem: Memory,
        freed: Arc<AtomicU64>,
    }

    impl Device for FakeDevice {
        fn id(&self) -> i64 {
            self.id
        }
        fn alloc(&self, size: u64) -> Result<Box<dyn Buffer>, String> {
            static N: AtomicU64 = AtomicU64::new(1);
            let mut handle = [0xa5u8; 64];
            handle[..8].copy_from_slice(&N.fetch_add(1, Ordering::Relaxed).to_le_bytes());
            handle[8..16].copy_from_slice(&std::process::id().to_le_bytes().repeat(2));
            let n = usize::try_from(size).map_err(|_| "too large".to_string())?;
            let mem = Arc::new(Mutex::new(vec![0u8; n]));
            live()
                .lock()
                .expect("fake device lock")
                .insert(handle, mem.clone());
            self.allocated.fetch_add(1, Ordering::SeqCst);
            Ok(Box::new(FakeBuffer {
                handle,
                mem,
                freed: self.freed.clone(),
            }))
        }
    }

    impl FakeBuffer {
        fn span(
            &self,
            offset: u64,
            len: usize,
            size: usize,
        ) -> Result<std::ops::Range<usize>, String> {
            let start = usize::try_from(offset).map_err(|e| e.to_string())?;
            match start.checked_add(len) {
                Some(end) if end <= size => Ok(start..end),
                _ => Err(format!("{len} bytes at {offset} outside {size}")),
            }
        }
    }

    impl Buffer for FakeBuffer {
        fn size(&self) -> u64 {
            self.mem.lock().expect("fake buffer lock").len() as u64
        }
        fn write(&self, offset: u64, bytes: &[u8]) -> Result<(), String> {
            let mut m = self.mem.lock().expect("fake buffer lock");
            let r = self.span(offset, bytes.len(), m.len())?;
            m[r].copy_from_slice(bytes);
            Ok(())
        }
        fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), String> {
            let m = self.mem.lock().expect("fake buffer lock");
            let r = self.span(offset, out.len(), m.len())?;
            out.copy_from_slice(&m[r]);
            Ok(())
        }
        fn ipc_handle(&self) -> Result<[u8; 64], String> {
            Ok(self.handle)
        }
    }

    impl Drop for FakeBuffer {
        fn drop(&mut self) {
            if let Ok(mut l) = live().lock() {
                l.remove(&self.handle);
            }
            self.freed.fetch_add(1, Ordering::SeqCst);
        }
    }
}
