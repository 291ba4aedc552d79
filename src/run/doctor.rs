//! What this machine offers the local runner: the ONNX Runtime library,
//! its execution providers, the CUDA execution provider and driver, the
//! devices, and what to install for each missing piece
//! ([`doctor_report`]). `tritonctl doctor` renders it. It lives here, and
//! not under `crate::runtime`, because a binary built without the `run`
//! feature (and so without `crate::runtime`) reports too.

use serde::Serialize;

/// Hints that concern running on a GPU start with this.
pub const GPU_PREFIX: &str = "for CUDA: ";

/// What `tritonctl doctor` reports: its `--format json` document (the
/// fields are described in the command's documentation, `crate::commands::doctor`).
#[derive(Debug, Serialize)]
pub struct DoctorReport {
    pub tritonctl_version: &'static str,
    pub run_feature: bool,
    pub can_run: bool,
    pub onnxruntime: OnnxRuntimeStatus,
    pub execution_providers: Vec<String>,
    pub cuda_execution_provider: CudaProviderStatus,
    pub cuda_driver: CudaDriverStatus,
    pub devices: Vec<CudaDevice>,
    pub default_device: Option<String>,
    pub hints: Vec<String>,
}

/// The ONNX Runtime library.
#[derive(Debug, Serialize)]
pub struct OnnxRuntimeStatus {
    pub found: bool,
    pub path: Option<String>,
    pub version: Option<String>,
    /// The rule that found the library (`crate::runtime::LibrarySource`'s
    /// code), null without one.
    pub source: Option<&'static str>,
    /// The same, in words, with the environment searched (`doctor`'s
    /// human output shows it; not in the JSON document).
    #[serde(skip)]
    pub found_by: Option<String>,
    pub error: Option<String>,
}

/// ONNX Runtime's CUDA execution provider.
#[derive(Debug, Serialize)]
pub struct CudaProviderStatus {
    pub available: bool,
    pub status: &'static str,
    pub library: Option<String>,
    pub error: Option<String>,
}

/// The CUDA driver.
#[derive(Debug, Serialize)]
pub struct CudaDriverStatus {
    pub found: bool,
    pub version: Option<String>,
    pub error: Option<String>,
}

/// One CUDA device.
#[derive(Debug, Serialize)]
pub struct CudaDevice {
    pub device: String,
    pub ordinal: u32,
    pub name: String,
    pub total_memory_bytes: u64,
    pub compute_capability: String,
}

/// Probes this machine (once per process: see `crate::runtime::report`).
#[cfg(feature = "run")]
pub fn doctor_report() -> DoctorReport {
    use crate::runtime::{self, CudaProvider as P};
    let r = runtime::report();
    let (status, library) = match &r.cuda_provider {
        P::Ready { path } => ("ready", Some(path)),
        P::NotBuilt => ("not_built", None),
        P::Missing { expected } => ("missing", Some(expected)),
        P::Unloadable { path, .. } => ("unloadable", Some(path)),
        P::NoOnnxRuntime => ("no_onnxruntime", None),
    };
    DoctorReport {
        tritonctl_version: env!("CARGO_PKG_VERSION"),
        run_feature: true,
        can_run: r.can_run(),
        onnxruntime: match &r.onnxruntime {
            Ok(lib) => OnnxRuntimeStatus {
                found: true,
                path: Some(lib.path.display().to_string()),
                version: lib.version.clone(),
                source: Some(lib.source.code()),
                found_by: Some(lib.source.to_string()),
                error: None,
            },
            Err(e) => OnnxRuntimeStatus {
                found: false,
                path: None,
                version: None,
                source: None,
                found_by: None,
                error: Some(e.to_string()),
            },
        },
        execution_providers: r.providers.clone(),
        cuda_execution_provider: CudaProviderStatus {
            available: r.cuda_provider.is_ready(),
            status,
            library: library.map(|p| p.display().to_string()),
            error: r.cuda_provider.problem(),
        },
        cuda_driver: match &r.cuda {
            Ok(d) => CudaDriverStatus {
                found: true,
                version: Some(d.version_text()),
                error: None,
            },
            Err(e) => CudaDriverStatus {
                found: false,
                version: None,
                error: Some(e.to_string()),
            },
        },
        devices: r
            .cuda
            .as_ref()
            .map(|d| {
                d.devices
                    .iter()
                    .map(|d| CudaDevice {
                        device: format!("cuda:{}", d.ordinal),
                        ordinal: d.ordinal,
                        name: d.name.clone(),
                        total_memory_bytes: d.total_memory,
                        compute_capability: format!(
                            "{}.{}",
                            d.compute_capability.0, d.compute_capability.1
                        ),
                    })
                    .collect()
            })
            .unwrap_or_default(),
        default_device: r.default_device().map(|d| d.to_string()),
        hints: r.hints(),
    }
}

/// Without the `run` feature: nothing can run, and the hint says why.
#[cfg(not(feature = "run"))]
pub fn doctor_report() -> DoctorReport {
    const WHY: &str = "this tritonctl was built without the `run` feature";
    DoctorReport {
        tritonctl_version: env!("CARGO_PKG_VERSION"),
        run_feature: false,
        can_run: false,
        onnxruntime: OnnxRuntimeStatus {
            found: false,
            path: None,
            version: None,
            source: None,
            found_by: None,
            error: Some(WHY.into()),
        },
        execution_providers: Vec::new(),
        cuda_execution_provider: CudaProviderStatus {
            available: false,
            status: "no_onnxruntime",
            library: None,
            error: Some(WHY.into()),
        },
        cuda_driver: CudaDriverStatus {
            found: false,
            version: None,
            error: Some(WHY.into()),
        },
        devices: Vec::new(),
        default_device: None,
        hints: vec![
            "rebuild tritonctl with the `run` feature (on by default: build without `--no-default-features`, or add `--features run`)"
                .into(),
        ],
    }
}
