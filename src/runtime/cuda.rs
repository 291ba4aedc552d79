//! The CUDA driver and its devices, through cudarc's driver API loaded at
//! run time.
//!
//! Nothing here needs CUDA at build time. cudarc panics when it is asked
//! for the driver library and none is installed, so [`probe`] first checks
//! that `libcuda` can be opened (cudarc's own check) and only then calls
//! into it; what is left is wrapped in `catch_unwind`. No CUDA context is
//! created: the probe only asks the driver for its version and the
//! devices' properties, which costs no device memory.
//!
//! [`CudaContext`] and [`CudaBuffer`] place bytes in a GPU's memory and
//! give its CUDA IPC handle (`perf --shared-memory cuda`); they too start
//! with the probe.
//!
//! Untested here: everything past the "no driver" branch (no GPU is lent
//! to this project's tests).
//!
//! `TRITONCTL_NO_CUDA=1` makes the probe report no driver (tests use it on
//! machines that have one).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

use cudarc::driver::{result, sys};

/// Environment variable that makes the probe report no CUDA driver.
pub const NO_CUDA_ENV: &str = "TRITONCTL_NO_CUDA";

/// What the CUDA driver reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CudaDriver {
    /// The driver's CUDA version, as `cuDriverGetVersion` gives it
    /// (`12040` for 12.4).
    pub version: i32,
    pub devices: Vec<CudaDevice>,
}

impl CudaDriver {
    /// `12.4` for version 12040.
    pub fn version_text(&self) -> String {
        format!("{}.{}", self.version / 1000, (self.version % 1000) / 10)
    }
}

/// One CUDA device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CudaDevice {
    /// The device number (`cuda:N`).
    pub ordinal: u32,
    pub name: String,
    /// Total device memory in bytes.
    pub total_memory: u64,
    /// Compute capability (major, minor).
    pub compute_capability: (i32, i32),
}

/// Why the CUDA driver cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CudaError {
    /// `TRITONCTL_NO_CUDA` is set.
    #[error("{NO_CUDA_ENV} is set")]
    Disabled,
    /// No driver library (`libcuda.so.1`) could be opened.
    #[error(
        "the NVIDIA driver library ({}) was not found; install the NVIDIA driver",
        driver_library_name()
    )]
    NoDriver,
    /// The library is there but the driver failed (no device node, a
    /// driver/library version mismatch, ...).
    #[error("the CUDA driver failed: {0}")]
    Driver(String),
}

/// The file name of the driver library on this platform.
pub fn driver_library_name() -> &'static str {
    if cfg!(windows) {
        "nvcuda.dll"
    } else {
        "libcuda.so.1"
    }
}

fn disabled_by_env() -> bool {
    std::env::var_os(NO_CUDA_ENV).is_some_and(|v| !v.is_empty() && v != "0")
}

static PROBE: OnceLock<Result<CudaDriver, CudaError>> = OnceLock::new();

/// The CUDA driver and its devices (probed once per process). Never
/// panics; a driver without devices is `Ok` with no devices.
pub fn probe() -> Result<CudaDriver, CudaError> {
    PROBE.get_or_init(probe_now).clone()
}

fn probe_now() -> Result<CudaDriver, CudaError> {
    if disabled_by_env() {
        return Err(CudaError::Disabled);
    }
    // SAFETY: only tries to open the library (and closes it again).
    if !unsafe { sys::is_culib_present() } {
        return Err(CudaError::NoDriver);
    }
    match catch_unwind(AssertUnwindSafe(query)) {
        Ok(r) => r,
        Err(p) => Err(CudaError::Driver(super::panic_text(p.as_ref()))),
    }
}

fn driver_error(what: &str, e: result::DriverError) -> CudaError {
    CudaError::Driver(format!("{what}: {e}"))
}

fn query() -> Result<CudaDriver, CudaError> {
    result::init().map_err(|e| driver_error("cuInit", e))?;
    let mut version = 0i32;
    // SAFETY: writes one int.
    unsafe { sys::cuDriverGetVersion(&mut version) }
        .result()
        .map_err(|e| driver_error("cuDriverGetVersion", e))?;
    let count = result::device::get_count().map_err(|e| driver_error("cuDeviceGetCount", e))?;
    let mut devices = Vec::new();
    for ordinal in 0..count.max(0) {
        let dev = result::device::get(ordinal).map_err(|e| driver_error("cuDeviceGet", e))?;
        let name = result::device::get_name(dev).map_err(|e| driver_error("cuDeviceGetName", e))?;
        // SAFETY: `dev` came from cuDeviceGet.
        let total_memory = unsafe { result::device::total_mem(dev) }
            .map_err(|e| driver_error("cuDeviceTotalMem", e))?;
        let attr = |a| {
            // SAFETY: as above.
            unsafe { result::device::get_attribute(dev, a) }
                .map_err(|e| driver_error("cuDeviceGetAttribute", e))
        };
        let major = attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
        let minor = attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
        devices.push(CudaDevice {
            ordinal: ordinal as u32,
            name,
            total_memory: total_memory as u64,
            compute_capability: (major, minor),
        });
    }
    Ok(CudaDriver { version, devices })
}

/// A GPU's primary context, for placing tensors in its memory
/// (`perf --shared-memory cuda`). The context is retained while this
/// lives and made current on the calling thread before each driver call
/// (the calls come from any thread of the async runtime).
pub struct CudaContext {
    ordinal: u32,
    dev: sys::CUdevice,
    ctx: sys::CUcontext,
}

// SAFETY: a CUDA context may be made current on any thread; every use
// below makes it current first.
unsafe impl Send for CudaContext {}
// SAFETY: as above; the driver serializes calls on one context.
unsafe impl Sync for CudaContext {}

impl std::fmt::Debug for CudaContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CudaContext(cuda:{})", self.ordinal)
    }
}

/// Runs a driver call, turning a panic of the bindings (a symbol missing
/// from an old driver) into an error.
fn guarded<T>(
    what: &str,
    f: impl FnOnce() -> Result<T, result::DriverError>,
) -> Result<T, CudaError> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r.map_err(|e| driver_error(what, e)),
        Err(p) => Err(CudaError::Driver(format!(
            "{what}: {}",
            super::panic_text(p.as_ref())
        ))),
    }
}

impl CudaContext {
    /// Retains the primary context of GPU `ordinal`. The driver is probed
    /// first ([`probe`]): without one this is [`CudaError::NoDriver`],
    /// never a panic.
    pub fn open(ordinal: u32) -> Result<std::sync::Arc<CudaContext>, CudaError> {
        let driver = probe()?;
        if ordinal as usize >= driver.devices.len() {
            return Err(CudaError::Driver(format!(
                "no GPU {ordinal}: the driver reports {} GPU{}",
                driver.devices.len(),
                if driver.devices.len() == 1 { "" } else { "s" }
            )));
        }
        let dev = guarded("cuDeviceGet", || result::device::get(ordinal as i32))?;
        // SAFETY: `dev` came from cuDeviceGet.
        let ctx = guarded("cuDevicePrimaryCtxRetain", || unsafe {
            result::primary_ctx::retain(dev)
        })?;
        Ok(std::sync::Arc::new(CudaContext { ordinal, dev, ctx }))
    }

    /// The device number (Triton's `device_id`).
    pub fn ordinal(&self) -> u32 {
        self.ordinal
    }

    fn bind(&self) -> Result<(), CudaError> {
        // SAFETY: `ctx` is retained until `self` drops.
        guarded("cuCtxSetCurrent", || unsafe {
            result::ctx::set_current(self.ctx)
        })
    }

    /// Allocates `size` bytes of device memory (`cuMemAlloc`), freed when
    /// the buffer drops.
    pub fn alloc(self: &std::sync::Arc<Self>, size: u64) -> Result<CudaBuffer, CudaError> {
        self.bind()?;
        let n = usize::try_from(size.max(1))
            .map_err(|_| CudaError::Driver(format!("{size} bytes do not fit this host")))?;
        // SAFETY: the context is current; the memory is only reached
        // through the bounds-checked methods of `CudaBuffer`.
        let ptr = guarded("cuMemAlloc", || unsafe { result::malloc_sync(n) })?;
        Ok(CudaBuffer {
            ctx: self.clone(),
            ptr,
            size,
        })
    }
}

impl Drop for CudaContext {
    fn drop(&mut self) {
        // SAFETY: `dev` came from cuDeviceGet and was retained once.
        let _ = guarded("cuDevicePrimaryCtxRelease", || unsafe {
            result::primary_ctx::release(self.dev)
        });
    }
}

/// Device memory from [`CudaContext::alloc`]; `cuMemFree` when dropped.
pub struct CudaBuffer {
    ctx: std::sync::Arc<CudaContext>,
    ptr: sys::CUdeviceptr,
    size: u64,
}

impl std::fmt::Debug for CudaBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CudaBuffer({} bytes on {:?})", self.size, self.ctx)
    }
}

impl CudaBuffer {
    fn range(&self, offset: u64, len: usize) -> Result<sys::CUdeviceptr, CudaError> {
        match offset.checked_add(len as u64) {
            Some(end) if end <= self.size => Ok(self.ptr + offset),
            _ => Err(CudaError::Driver(format!(
                "{len} bytes at offset {offset} are outside a buffer of {} bytes",
                self.size
            ))),
        }
    }

    /// Bytes of this buffer.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Copies `bytes` to `offset` (`cuMemcpyHtoD`).
    pub fn write(&self, offset: u64, bytes: &[u8]) -> Result<(), CudaError> {
        let at = self.range(offset, bytes.len())?;
        self.ctx.bind()?;
        // SAFETY: `at..at + len` lies inside this live allocation.
        guarded("cuMemcpyHtoD", || unsafe {
            result::memcpy_htod_sync(at, bytes)
        })
    }

    /// Copies from `offset` into `out` (`cuMemcpyDtoH`).
    pub fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), CudaError> {
        let at = self.range(offset, out.len())?;
        self.ctx.bind()?;
        // SAFETY: as in `write`; the copy is synchronous.
        guarded("cuMemcpyDtoH", || unsafe {
            result::memcpy_dtoh_sync(out, at)
        })
    }

    /// The CUDA IPC handle of this allocation (`cuIpcGetMemHandle`,
    /// `CU_IPC_HANDLE_SIZE` bytes), which another process on this host
    /// opens to reach the same memory.
    pub fn ipc_handle(&self) -> Result<[u8; 64], CudaError> {
        self.ctx.bind()?;
        let mut h = sys::CUipcMemHandle_st { reserved: [0; 64] };
        // SAFETY: writes one handle for a live allocation.
        guarded("cuIpcGetMemHandle", || unsafe {
            sys::cuIpcGetMemHandle(&mut h, self.ptr).result()
        })?;
        Ok(h.reserved.map(|c| c as u8))
    }
}

impl Drop for CudaBuffer {
    fn drop(&mut self) {
        if self.ctx.bind().is_ok() {
            // SAFETY: allocated by cuMemAlloc, freed once, no copy in
            // flight (the copies are synchronous).
            let _ = guarded("cuMemFree", || unsafe { result::free_sync(self.ptr) });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_text() {
        let d = CudaDriver {
            version: 12040,
            devices: Vec::new(),
        };
        assert_eq!(d.version_text(), "12.4");
        let d = CudaDriver {
            version: 11080,
            devices: Vec::new(),
        };
        assert_eq!(d.version_text(), "11.8");
    }

    #[test]
    fn opening_a_gpu_without_a_driver_is_an_error_not_a_panic() {
        if let Err(CudaError::NoDriver) = probe() {
            assert_eq!(CudaContext::open(0).unwrap_err(), CudaError::NoDriver);
        }
    }

    #[test]
    fn the_probe_never_panics_and_names_the_driver_when_missing() {
        // Whatever this machine has, probing twice gives the same answer,
        // and a missing driver says what to install.
        let a = probe();
        assert_eq!(a, probe());
        if let Err(CudaError::NoDriver) = &a {
            let text = a.unwrap_err().to_string();
            assert!(text.contains("install the NVIDIA driver"), "{text}");
            assert!(text.contains(driver_library_name()), "{text}");
        }
    }
}
