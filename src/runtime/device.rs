//! The execution device: resolving `--device` (`cpu`, `cuda`, `cuda:N`, or
//! nothing for automatic) against what the probes found.
//!
//! Automatic picks `cuda:0` when the CUDA driver shows a device and ONNX
//! Runtime's CUDA execution provider is ready, else the CPU. An explicit
//! `cuda` or `cuda:N` that cannot be honoured is an error that says what
//! is missing (no driver, no such device, no CUDA provider), never a
//! silent fallback to the CPU.

use std::fmt;

use super::cuda::CudaError;
use super::report::{CudaProvider, RuntimeReport};

/// Where a model runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Device {
    Cpu,
    /// The CUDA device with this ordinal.
    Cuda(u32),
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Cpu => f.write_str("cpu"),
            Device::Cuda(n) => write!(f, "cuda:{n}"),
        }
    }
}

/// What `--device` asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceRequest {
    /// No `--device`: CUDA when it is usable, else the CPU.
    Auto,
    Cpu,
    /// `cuda` (`None`: device 0) or `cuda:N`.
    Cuda(Option<u32>),
}

impl DeviceRequest {
    /// Parses a `--device` value (`None` is automatic).
    pub fn parse(spec: Option<&str>) -> Result<DeviceRequest, DeviceError> {
        let Some(spec) = spec else {
            return Ok(DeviceRequest::Auto);
        };
        let s = spec.trim().to_ascii_lowercase();
        match s.as_str() {
            "cpu" => return Ok(DeviceRequest::Cpu),
            "cuda" => return Ok(DeviceRequest::Cuda(None)),
            _ => {}
        }
        if let Some(n) = s.strip_prefix("cuda:") {
            if let Ok(n) = n.parse::<u32>() {
                return Ok(DeviceRequest::Cuda(Some(n)));
            }
        }
        Err(DeviceError::Invalid(spec.to_string()))
    }
}

/// Why the requested device cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeviceError {
    #[error("invalid device '{0}': expected cpu, cuda or cuda:N")]
    Invalid(String),
    #[error("cannot run on {requested}: ONNX Runtime is missing ({why})")]
    NoOnnxRuntime { requested: String, why: String },
    #[error("cannot run on {requested}: no CUDA driver: {why}")]
    NoDriver { requested: String, why: String },
    #[error("cannot run on {requested}: {}", no_device_text(*.ordinal, .available))]
    NoDevice {
        requested: String,
        ordinal: u32,
        /// The devices there are (`cuda:0 (NVIDIA A100)`).
        available: Vec<String>,
    },
    #[error("cannot run on {requested}: {problem}; {hint}")]
    NoProvider {
        requested: String,
        problem: String,
        hint: String,
    },
}

fn no_device_text(ordinal: u32, available: &[String]) -> String {
    if available.is_empty() {
        format!("there is no CUDA device {ordinal}: the CUDA driver sees no device")
    } else {
        format!(
            "there is no CUDA device {ordinal}: this machine has {} ({})",
            available.len(),
            available.join(", ")
        )
    }
}

/// Resolves `--device` with the probes of this process ([`super::report()`];
/// `cpu` needs no probe).
pub fn select_device(spec: Option<&str>) -> Result<Device, DeviceError> {
    match DeviceRequest::parse(spec)? {
        DeviceRequest::Cpu => Ok(Device::Cpu),
        request => choose(request, &super::report()),
    }
}

/// Resolves a request against a report (pure; see [`select_device`]).
pub fn choose(request: DeviceRequest, report: &RuntimeReport) -> Result<Device, DeviceError> {
    let (ordinal, requested) = match request {
        DeviceRequest::Cpu => return Ok(Device::Cpu),
        DeviceRequest::Auto => {
            let usable = report.can_run()
                && report.cuda_provider.is_ready()
                && report.cuda.as_ref().is_ok_and(|d| !d.devices.is_empty());
            return Ok(if usable { Device::Cuda(0) } else { Device::Cpu });
        }
        DeviceRequest::Cuda(None) => (0, "cuda".to_string()),
        DeviceRequest::Cuda(Some(n)) => (n, format!("cuda:{n}")),
    };
    let driver = match &report.cuda {
        Ok(d) => d,
        Err(e) => {
            let why = match e {
                CudaError::NoDriver => e.to_string(),
                CudaError::Disabled => e.to_string(),
                CudaError::Driver(_) => format!("{e}; check the NVIDIA driver (`nvidia-smi`)"),
            };
            return Err(DeviceError::NoDriver { requested, why });
        }
    };
    if !driver.devices.iter().any(|d| d.ordinal == ordinal) {
        return Err(DeviceError::NoDevice {
            requested,
            ordinal,
            available: driver
                .devices
                .iter()
                .map(|d| format!("cuda:{} ({})", d.ordinal, d.name))
                .collect(),
        });
    }
    if let Err(e) = &report.onnxruntime {
        return Err(DeviceError::NoOnnxRuntime {
            requested,
            why: e.to_string(),
        });
    }
    match &report.cuda_provider {
        CudaProvider::Ready { .. } => Ok(Device::Cuda(ordinal)),
        p => Err(DeviceError::NoProvider {
            requested,
            problem: p.problem().unwrap_or_default(),
            hint: p.hint().unwrap_or_default().to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::super::cuda::{CudaDevice, CudaDriver};
    use super::super::{OrtLibrary, ProbeError};
    use super::*;
    use std::path::PathBuf;

    fn gpu(n: u32) -> CudaDevice {
        CudaDevice {
            ordinal: n,
            name: format!("GPU {n}"),
            total_memory: 1 << 34,
            compute_capability: (8, 6),
        }
    }

    fn report(provider: CudaProvider, cuda: Result<CudaDriver, CudaError>) -> RuntimeReport {
        RuntimeReport {
            onnxruntime: Ok(OrtLibrary {
                path: PathBuf::from("/x/libonnxruntime.so"),
                version: None,
                source: super::super::LibrarySource::OrtDylibPath,
            }),
            providers: Vec::new(),
            cuda_provider: provider,
            cuda,
        }
    }

    fn ready() -> CudaProvider {
        CudaProvider::Ready {
            path: PathBuf::from("/x/libonnxruntime_providers_cuda.so"),
        }
    }

    fn two_gpus() -> Result<CudaDriver, CudaError> {
        Ok(CudaDriver {
            version: 12040,
            devices: vec![gpu(0), gpu(1)],
        })
    }

    #[test]
    fn parse() {
        assert_eq!(DeviceRequest::parse(None), Ok(DeviceRequest::Auto));
        assert_eq!(DeviceRequest::parse(Some("cpu")), Ok(DeviceRequest::Cpu));
        assert_eq!(
            DeviceRequest::parse(Some("CUDA")),
            Ok(DeviceRequest::Cuda(None))
        );
        assert_eq!(
            DeviceRequest::parse(Some("cuda:3")),
            Ok(DeviceRequest::Cuda(Some(3)))
        );
        for bad in ["", "gpu", "cuda:", "cuda:x", "cuda:-1", "cuda0"] {
            let e = DeviceRequest::parse(Some(bad)).unwrap_err();
            assert!(
                e.to_string().contains("expected cpu, cuda or cuda:N"),
                "{e}"
            );
        }
    }

    #[test]
    fn auto_takes_cuda_only_when_everything_is_there() {
        let r = report(ready(), two_gpus());
        assert_eq!(choose(DeviceRequest::Auto, &r), Ok(Device::Cuda(0)));
        let r = report(CudaProvider::NotBuilt, two_gpus());
        assert_eq!(choose(DeviceRequest::Auto, &r), Ok(Device::Cpu));
        let r = report(ready(), Err(CudaError::NoDriver));
        assert_eq!(choose(DeviceRequest::Auto, &r), Ok(Device::Cpu));
        let r = report(
            ready(),
            Ok(CudaDriver {
                version: 12040,
                devices: Vec::new(),
            }),
        );
        assert_eq!(choose(DeviceRequest::Auto, &r), Ok(Device::Cpu));
        let mut r = report(ready(), two_gpus());
        r.onnxruntime = Err(ProbeError::NotFound { detail: "x".into() });
        assert_eq!(choose(DeviceRequest::Auto, &r), Ok(Device::Cpu));
    }

    #[test]
    fn explicit_cuda_says_what_is_missing() {
        let r = report(ready(), two_gpus());
        assert_eq!(choose(DeviceRequest::Cuda(None), &r), Ok(Device::Cuda(0)));
        assert_eq!(
            choose(DeviceRequest::Cuda(Some(1)), &r),
            Ok(Device::Cuda(1))
        );

        let e = choose(DeviceRequest::Cuda(Some(2)), &r).unwrap_err();
        let t = e.to_string();
        assert!(
            t.starts_with("cannot run on cuda:2: there is no CUDA device 2"),
            "{t}"
        );
        assert!(t.contains("cuda:0 (GPU 0), cuda:1 (GPU 1)"), "{t}");

        let r = report(ready(), Err(CudaError::NoDriver));
        let t = choose(DeviceRequest::Cuda(None), &r)
            .unwrap_err()
            .to_string();
        assert!(t.contains("no CUDA driver"), "{t}");
        assert!(t.contains("install the NVIDIA driver"), "{t}");

        let r = report(CudaProvider::NotBuilt, two_gpus());
        let t = choose(DeviceRequest::Cuda(None), &r)
            .unwrap_err()
            .to_string();
        assert!(t.contains("no CUDA execution provider"), "{t}");
        assert!(t.contains("pip install onnxruntime-gpu"), "{t}");

        let r = report(
            CudaProvider::Unloadable {
                path: PathBuf::from("/x/libonnxruntime_providers_cuda.so"),
                error: "libcudnn.so.9: cannot open shared object file".into(),
            },
            two_gpus(),
        );
        let t = choose(DeviceRequest::Cuda(Some(1)), &r)
            .unwrap_err()
            .to_string();
        assert!(t.contains("libcudnn.so.9"), "{t}");
        assert!(t.contains("LD_LIBRARY_PATH"), "{t}");

        // CPU never needs anything.
        assert_eq!(choose(DeviceRequest::Cpu, &r), Ok(Device::Cpu));
    }

    #[test]
    fn this_machine() {
        // Whatever is installed, `cpu` resolves and automatic never fails.
        assert_eq!(select_device(Some("cpu")), Ok(Device::Cpu));
        assert!(select_device(None).is_ok());
        assert!(select_device(Some("npu")).is_err());
    }
}
