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
