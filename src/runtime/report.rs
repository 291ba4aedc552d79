//! What this machine offers the local runner: the ONNX Runtime library,
//! its execution providers, the CUDA driver and devices ([`report`]), and
//! what to install for each missing piece ([`RuntimeReport::hints`]).
//!
//! The CUDA execution provider counts as available when the library lists
//! it (`GetAvailableProviders`: the `onnxruntime-gpu` build does, the CPU
//! `onnxruntime` does not) and its shared library
//! (`libonnxruntime_providers_cuda.so`), which sits next to ONNX Runtime's,
//! can be opened; opening it also opens the CUDA runtime, cuBLAS and cuDNN
//! libraries it needs, so a missing one shows here, by name, rather than
//! when a session is created. Untested here (no GPU build of ONNX Runtime
//! on the test machines): the branches past "not built in".

use std::ffi::{c_char, c_int, CStr};
use std::path::{Path, PathBuf};
use std::ptr;
use std::sync::OnceLock;

use super::cuda::{self, CudaDriver, CudaError};
use super::device::{self, Device, DeviceRequest};
use super::{OrtLibrary, ProbeError};

/// The name ONNX Runtime gives its CUDA execution provider.
pub const CUDA_PROVIDER: &str = "CUDAExecutionProvider";

/// The state of ONNX Runtime's CUDA execution provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CudaProvider {
    /// No ONNX Runtime library to ask.
    NoOnnxRuntime,
    /// The library was built without it (the CPU-only `onnxruntime`
    /// package).
    NotBuilt,
    /// Built in, but its library is not next to ONNX Runtime's.
    Missing { expected: PathBuf },
    /// Its library is there but cannot be opened (usually a CUDA or cuDNN
    /// library it needs is not found).
    Unloadable { path: PathBuf, error: String },
    /// Ready to use.
    Ready { path: PathBuf },
}

impl CudaProvider {
    pub fn is_ready(&self) -> bool {
        matches!(self, CudaProvider::Ready { .. })
    }

    /// What is wrong, in a few words (`None` when ready).
    pub fn problem(&self) -> Option<String> {
        Some(match self {
            CudaProvider::Ready { .. } => return None,
            CudaProvider::NoOnnxRuntime => "ONNX Runtime is missing".into(),
            CudaProvider::NotBuilt => {
                "this ONNX Runtime has no CUDA execution provider (it is the CPU-only build)".into()
            }
            CudaProvider::Missing { expected } => format!(
                "the CUDA execution provider library {} is missing",
                expected.display()
            ),
            CudaProvider::Unloadable { path, error } => format!(
                "the CUDA execution provider library {} cannot be loaded: {error}",
                path.display()
            ),
        })
    }

    /// How to fix it (`None` when ready or when ONNX Runtime itself is
    /// missing, which has its own hint).
    pub fn hint(&self) -> Option<&'static str> {
        match self {
            CudaProvider::Ready { .. } | CudaProvider::NoOnnxRuntime => None,
            CudaProvider::NotBuilt => Some(
                "install the GPU build: `pip uninstall onnxruntime && pip install onnxruntime-gpu`, or set ORT_DYLIB_PATH to an ONNX Runtime library built with CUDA",
            ),
            CudaProvider::Missing { .. } => {
                Some("reinstall the GPU build: `pip install --force-reinstall onnxruntime-gpu`")
            }
            CudaProvider::Unloadable { .. } => Some(
                "install the CUDA and cuDNN libraries this ONNX Runtime was built for (`pip install onnxruntime-gpu[cuda,cudnn]` installs them under site-packages/nvidia/*/lib) and add their directories to LD_LIBRARY_PATH",
            ),
        }
    }
}

/// Everything the probes found.
#[derive(Debug, Clone)]
pub struct RuntimeReport {
    /// The ONNX Runtime library, or why there is none.
    pub onnxruntime: Result<OrtLibrary, ProbeError>,
    /// The execution providers compiled into the library, as it lists them
    /// (empty without a library).
    pub providers: Vec<String>,
    pub cuda_provider: CudaProvider,
    /// The CUDA driver and its devices, or why there is none.
    pub cuda: Result<CudaDriver, CudaError>,
}

impl RuntimeReport {
    /// True when `tritonctl run` can run models (on the CPU at least).
    pub fn can_run(&self) -> bool {
        self.onnxruntime.is_ok()
    }

    /// The device `--device` defaults to (`None` without ONNX Runtime).
    pub fn default_device(&self) -> Option<Device> {
        if !self.can_run() {
            return None;
        }
        device::choose(DeviceRequest::Auto, self).ok()
    }

    /// What to install or change, one item per missing piece: first for
    /// ONNX Runtime itself, then for running on a GPU.
    pub fn hints(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Err(e) = &self.onnxruntime {
            if super::disabled_by_env() {
                out.push(format!("unset {} to use ONNX Runtime", super::NO_ORT_ENV));
            }
            if matches!(e, ProbeError::Unusable { .. }) {
                out.push(format!("the library found cannot be used: {e}"));
            }
            out.push(
                "install ONNX Runtime: `pip install onnxruntime` (CPU) or `pip install onnxruntime-gpu` (CUDA), or set ORT_DYLIB_PATH to the path of the ONNX Runtime shared library"
                    .into(),
            );
        }
        if let Some(h) = self.cuda_provider.hint() {
            out.push(format!("for CUDA: {h}"));
        }
        match &self.cuda {
            Err(CudaError::NoDriver) => out.push(format!(
                "for CUDA: install the NVIDIA driver (it provides {})",
                cuda::driver_library_name()
            )),
            Err(CudaError::Driver(e)) => out.push(format!(
                "for CUDA: check the NVIDIA driver (`nvidia-smi`): {e}"
            )),
            Err(CudaError::Disabled) => out.push(format!(
                "for CUDA: unset {} to use the CUDA driver",
                cuda::NO_CUDA_ENV
            )),
            Ok(d) if d.devices.is_empty() => out.push(
                "for CUDA: the driver sees no device (check `nvidia-smi` and CUDA_VISIBLE_DEVICES)"
                    .into(),
            ),
            Ok(_) => {}
        }
        out
    }
}

/// Probes everything (ONNX Runtime is loaded; the CUDA provider library is
/// opened when it is there). Never panics; the result is the same for the
/// whole process.
pub fn report() -> RuntimeReport {
    static REPORT: OnceLock<RuntimeReport> = OnceLock::new();
    REPORT
        .get_or_init(|| {
            let onnxruntime = super::probe();
            let providers = match &onnxruntime {
                Ok(_) => available_providers().unwrap_or_default(),
                Err(_) => Vec::new(),
            };
            let cuda_provider = match &onnxruntime {
                Ok(lib) => cuda_provider(lib, &providers),
                Err(_) => CudaProvider::NoOnnxRuntime,
            };
            RuntimeReport {
                onnxruntime,
                providers,
                cuda_provider,
                cuda: cuda::probe(),
            }
        })
        .clone()
}

/// The execution providers the loaded library was built with.
fn available_providers() -> Result<Vec<String>, String> {
    let mut list: *mut *mut c_char = ptr::null_mut();
    let mut n: c_int = 0;
    // SAFETY: ONNX Runtime fills `list` with `n` C strings, read here and
    // released with the matching call.
    unsafe {
        super::convert::status((ort::api().GetAvailableProviders)(&mut list, &mut n))?;
        if list.is_null() {
            return Ok(Vec::new());
        }
        let names = (0..n.max(0) as usize)
            .map(|i| CStr::from_ptr(*list.add(i)).to_string_lossy().into_owned())
            .collect();
        let _ = super::convert::status((ort::api().ReleaseAvailableProviders)(list, n));
        Ok(names)
    }
}

/// Where ONNX Runtime looks for the CUDA provider library: next to itself.
pub fn cuda_provider_path(library: &Path) -> PathBuf {
    let name = format!(
        "{}onnxruntime_providers_cuda{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    );
    library
        .parent()
        .map(|d| d.join(&name))
        .unwrap_or_else(|| PathBuf::from(name))
}

fn cuda_provider(lib: &OrtLibrary, providers: &[String]) -> CudaProvider {
    if !providers.iter().any(|p| p == CUDA_PROVIDER) {
        return CudaProvider::NotBuilt;
    }
    let path = cuda_provider_path(&lib.path);
    if !path.is_file() {
        return CudaProvider::Missing { expected: path };
    }
    // SAFETY: opening ONNX Runtime's own provider library runs its
    // initializers, as ONNX Runtime does when it loads it. It stays loaded
    // (ONNX Runtime opens it again for CUDA sessions; unloading CUDA
    // libraries at exit is a known source of crashes).
    match unsafe { libloading::Library::new(&path) } {
        Ok(l) => {
            std::mem::forget(l);
            CudaProvider::Ready { path }
        }
        Err(e) => CudaProvider::Unloadable {
            path,
            error: e.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lib() -> OrtLibrary {
        OrtLibrary {
            path: PathBuf::from("/x/capi/libonnxruntime.so.1.31.1"),
            version: Some("1.31.1".into()),
            source: super::super::LibrarySource::OrtDylibPath,
        }
    }

    #[test]
    fn the_cpu_build_has_no_cuda_provider() {
        let p = cuda_provider(&lib(), &["CPUExecutionProvider".into()]);
        assert_eq!(p, CudaProvider::NotBuilt);
        assert!(p.hint().unwrap().contains("pip install onnxruntime-gpu"));
        assert!(p.problem().unwrap().contains("no CUDA execution provider"));
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_listed_provider_needs_its_library_next_to_onnx_runtime() {
        let p = cuda_provider(
            &lib(),
            &[CUDA_PROVIDER.into(), "CPUExecutionProvider".into()],
        );
        assert_eq!(
            p,
            CudaProvider::Missing {
                expected: PathBuf::from("/x/capi/libonnxruntime_providers_cuda.so")
            }
        );
        // A file that is not a library: unloadable, with the loader's
        // message.
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("libonnxruntime_providers_cuda.so"), b"junk").unwrap();
        let l = OrtLibrary {
            path: d.path().join("libonnxruntime.so.1.31.1"),
            version: None,
            source: super::super::LibrarySource::Python3,
        };
        match cuda_provider(&l, &[CUDA_PROVIDER.into()]) {
            CudaProvider::Unloadable { path, error } => {
                assert!(path.ends_with("libonnxruntime_providers_cuda.so"));
                assert!(!error.is_empty());
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn hints_name_what_to_install() {
        let r = RuntimeReport {
            onnxruntime: Err(ProbeError::NotFound {
                detail: "nothing".into(),
            }),
            providers: Vec::new(),
            cuda_provider: CudaProvider::NoOnnxRuntime,
            cuda: Err(CudaError::NoDriver),
        };
        assert!(!r.can_run());
        assert_eq!(r.default_device(), None);
        let h = r.hints().join("\n");
        assert!(h.contains("pip install onnxruntime"), "{h}");
        assert!(h.contains("ORT_DYLIB_PATH"), "{h}");
        assert!(h.contains("install the NVIDIA driver"), "{h}");

        let r = RuntimeReport {
            onnxruntime: Ok(lib()),
            providers: vec!["CPUExecutionProvider".into()],
            cuda_provider: CudaProvider::NotBuilt,
            cuda: Ok(CudaDriver {
                version: 12040,
                devices: Vec::new(),
            }),
        };
        assert!(r.can_run());
        assert_eq!(r.default_device(), Some(Device::Cpu));
        let h = r.hints().join("\n");
        assert!(!h.contains("install ONNX Runtime"), "{h}");
        assert!(h.contains("onnxruntime-gpu"), "{h}");
        assert!(h.contains("sees no device"), "{h}");
    }
}
