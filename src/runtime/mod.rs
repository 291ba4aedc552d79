//! ONNX Runtime, loaded at run time (feature `run`).
//!
//! tritonctl never links ONNX Runtime and never downloads it: the shared
//! library the user has installed is found and opened when it is first
//! needed ([`probe`]):
//!
//! 1. `ORT_DYLIB_PATH`, when set: the library file itself, or a directory
//!    holding it (and nothing else is searched);
//! 2. otherwise the library inside the Python `onnxruntime` package
//!    (`pip install onnxruntime`, or `onnxruntime-gpu`, which installs the
//!    same package): `<package>/capi/libonnxruntime.so.<version>`, in the
//!    first Python environment that has it ([`discover`]):
//!    1. the one tritonctl itself is installed in (`pip install
//!       'tritonctl[run]'` puts the binary in `<prefix>/bin` and the
//!       package in `<prefix>/lib/python3.<minor>/site-packages`);
//!    2. the active virtual environment (`VIRTUAL_ENV`);
//!    3. the active conda environment (`CONDA_PREFIX`);
//!    4. the one of `python3` on `PATH` (asked, without importing the
//!       package).
//!
//! [`OrtLibrary::source`] records the rule that found the library
//! (`tritonctl doctor` shows it).
//!
//! A missing, unreadable or incompatible library is an error value that
//! says how to install one, never a panic. The library and ONNX Runtime's
//! environment are set up once per process (ONNX Runtime allows a single
//! environment); everything ONNX Runtime logs is discarded, since library
//! code does not print.
//!
//! `TRITONCTL_NO_ORT=1` makes the probe behave as if no library were
//! installed (for tests, and to compare with the fallbacks).
//!
//! On top of the library:
//! - [`report`](mod@report): what this machine offers (ONNX Runtime, its execution
//!   providers, the CUDA driver and devices), for `tritonctl doctor`;
//! - [`cuda`]: the CUDA driver probe (cudarc, loaded at run time), and
//!   device memory with CUDA IPC handles for `perf --shared-memory cuda`;
//! - [`device`]: resolving `--device` into a [`Device`];
//! - [`session`]: [`ModelSession`], one ONNX Runtime session per model
//!   instance, running host [`crate::tensor::Tensor`]s;
//! - [`bench`]: a bare ONNX Runtime loop, the baseline of the runner's
//!   per-step overhead.
//!
//! Untested (no GPU and no GPU build of ONNX Runtime on the test
//! machines): the CUDA driver queries past "no driver", loading the CUDA
//! execution provider library, sessions on the CUDA execution provider,
//! state kept in device memory, and the device memory of
//! `perf --shared-memory cuda` (its registration and request code is
//! tested with a fake device, `perf::device::fake`). These paths are small and sit behind
//! the probes; the CPU paths around them are tested.

pub mod bench;
mod convert;
pub mod cuda;
pub mod device;
pub mod discover;
pub mod report;
pub mod session;
#[doc(hidden)]
pub mod testmodel;

pub use device::{select_device, Device, DeviceError, DeviceRequest};
pub use discover::LibrarySource;
pub use report::{report, CudaProvider, RuntimeReport};
pub use session::{BoundState, GraphOptimization, ModelSession, RunError, SessionOptions};

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, OnceLock};

use ort::environment::Environment;
use ort::logging::LogLevel;
use ort::session::builder::GraphOptimizationLevel;
use ort::session::Session;
use ort::value::ValueType;

use crate::tensor::DataType;

/// How to get the library, for error messages.
pub const INSTALL_HINT: &str =
    "install it with `pip install onnxruntime` (or `onnxruntime-gpu`), or set ORT_DYLIB_PATH to the path of the ONNX Runtime shared library";

/// The ONNX Runtime library in use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrtLibrary {
    /// The shared library file that was loaded.
    pub path: PathBuf,
    /// ONNX Runtime's version (`1.31.1`), when the library tells it.
    pub version: Option<String>,
    /// The rule of the search that found it.
    pub source: LibrarySource,
}

/// Why ONNX Runtime cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProbeError {
    /// No library was found.
    #[error("the ONNX Runtime library was not found ({detail}); {INSTALL_HINT}")]
    NotFound { detail: String },
    /// A library file was found but could not be used.
    #[error("the ONNX Runtime library {} could not be loaded: {detail}; {INSTALL_HINT}", path.display())]
    Unusable { path: PathBuf, detail: String },
}

/// Why ONNX Runtime gave no session for a model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    #[error(transparent)]
    Probe(#[from] ProbeError),
    /// ONNX Runtime refused the model (its own message).
    #[error("{message}")]
    Load {
        library: OrtLibrary,
        model: PathBuf,
        message: String,
    },
}

/// An input or output as an ONNX Runtime session reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionTensor {
    pub name: String,
    /// False for sequences, maps and optional values.
    pub is_tensor: bool,
    /// ONNX `TensorProto.DataType` id (0 for non-tensors and unknown
    /// types).
    pub elem_type: i32,
    /// The dims: fixed values as they are, `-1` for symbolic and unknown
    /// dims; empty for rank 0 and for a shape ONNX Runtime does not know.
    pub dims: Vec<i64>,
    /// The name of each dim (`dim_param`), empty when it has none.
    pub symbols: Vec<String>,
}

impl SessionTensor {
    /// The Triton data type of a tensor's elements (`None` for
    /// non-tensors and types Triton has no name for, like COMPLEX64).
    pub fn data_type(&self) -> Option<DataType> {
        if !self.is_tensor {
            return None;
        }
        convert::data_type_of(self.elem_type)
    }
}

/// What a session tells about a model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionInfo {
    pub library: OrtLibrary,
    pub inputs: Vec<SessionTensor>,
    pub outputs: Vec<SessionTensor>,
}

struct Runtime {
    library: OrtLibrary,
    env: Environment,
}

static RUNTIME: OnceLock<Result<Runtime, ProbeError>> = OnceLock::new();

/// Finds, loads and initializes the ONNX Runtime library (once per
/// process; later calls return the first result).
pub fn probe() -> Result<OrtLibrary, ProbeError> {
    runtime().map(|r| r.library.clone())
}

/// The loaded library and ONNX Runtime's environment (sessions need it).
fn runtime() -> Result<&'static Runtime, ProbeError> {
    RUNTIME
        .get_or_init(|| {
            let (path, source) = locate()?;
            load(&path, source)
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Environment variable that makes the probe report no library.
pub const NO_ORT_ENV: &str = "TRITONCTL_NO_ORT";

/// True when `TRITONCTL_NO_ORT` is set (to anything but `0`).
pub fn disabled_by_env() -> bool {
    std::env::var_os(NO_ORT_ENV).is_some_and(|v| !v.is_empty() && v != "0")
}

/// Where the library is, and which rule found it, without loading it
/// (the order is in the module docs).
pub fn locate() -> Result<(PathBuf, LibrarySource), ProbeError> {
    if disabled_by_env() {
        return Err(ProbeError::NotFound {
            detail: format!("{NO_ORT_ENV} is set"),
        });
    }
    if let Some(p) = std::env::var_os("ORT_DYLIB_PATH").filter(|p| !p.is_empty()) {
        return from_env(Path::new(&p)).map(|p| (p, LibrarySource::OrtDylibPath));
    }
    // The real file: a symbolic link to the binary (`~/bin/tritonctl`)
    // still leads to the environment it is installed in.
    let exe = std::env::current_exe()
        .ok()
        .map(|e| std::fs::canonicalize(&e).unwrap_or(e));
    let searched = match discover::in_environments(
        exe.as_deref(),
        std::env::var_os("VIRTUAL_ENV").as_deref(),
        std::env::var_os("CONDA_PREFIX").as_deref(),
    ) {
        Ok(found) => return Ok(found),
        Err(searched) => searched,
    };
    from_python()
        .map(|p| (p, LibrarySource::Python3))
        .map_err(|why| {
            let envs = if searched.is_empty() {
                String::new()
            } else {
                format!(
                    ", no onnxruntime package in {}",
                    discover::searched_text(&searched)
                )
            };
            ProbeError::NotFound {
                detail: format!("ORT_DYLIB_PATH is not set{envs}, and {why}"),
            }
        })
}

fn from_env(path: &Path) -> Result<PathBuf, ProbeError> {
    if path.is_dir() {
        return library_in(path).ok_or_else(|| ProbeError::NotFound {
            detail: format!(
                "ORT_DYLIB_PATH names the directory {}, which holds no ONNX Runtime library",
                path.display()
            ),
        });
    }
    if !path.is_file() {
        return Err(ProbeError::NotFound {
            detail: format!(
                "ORT_DYLIB_PATH names {}, which does not exist",
                path.display()
            ),
        });
    }
    Ok(path.to_path_buf())
}

/// The `onnxruntime` package of `python3`, found without importing it;
/// why not, as the end of a sentence.
fn from_python() -> Result<PathBuf, String> {
    const SCRIPT: &str = "import importlib.util as u\n\
        s = u.find_spec('onnxruntime')\n\
        print(s.submodule_search_locations[0] if s and s.submodule_search_locations else '')";
    let out = Command::new("python3")
        .args(["-c", SCRIPT])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map_err(|e| format!("python3 cannot run: {e}"))?;
    let dir = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || dir.is_empty() {
        return Err("python3 has no onnxruntime package".into());
    }
    let capi = Path::new(&dir).join("capi");
    library_in(&capi).ok_or_else(|| {
        format!(
            "the onnxruntime package of python3 has no ONNX Runtime library in {}",
            capi.display()
        )
    })
}

/// The ONNX Runtime library in `dir` (`libonnxruntime.so`,
/// `libonnxruntime.so.1.31.1`, `libonnxruntime.1.31.1.dylib`,
/// `onnxruntime.dll`; not the execution provider libraries); the highest
/// version when there are several.
fn library_in(dir: &Path) -> Option<PathBuf> {
    let mut found: Vec<(Vec<u64>, PathBuf)> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter(|e| e.path().is_file())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            library_version(&name).map(|v| (v, e.path()))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, p)| p)
}

/// The version numbers in a library file name, when `name` is an ONNX
/// Runtime library (empty for an unversioned name).
fn library_version(name: &str) -> Option<Vec<u64>> {
    let prefix = format!("{}onnxruntime", std::env::consts::DLL_PREFIX);
    let rest = name.strip_prefix(&prefix)?;
    let suffix = std::env::consts::DLL_SUFFIX;
    let version = if let Some(v) = rest.strip_prefix(suffix) {
        // libonnxruntime.so, libonnxruntime.so.1.31.1
        if v.is_empty() {
            ""
        } else {
            v.strip_prefix('.')?
        }
    } else {
        // libonnxruntime.1.31.1.dylib
        rest.strip_suffix(suffix)?.strip_prefix('.')?
    };
    if version.is_empty() {
        return Some(Vec::new());
    }
    version.split('.').map(|p| p.parse().ok()).collect()
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "ONNX Runtime panicked".into())
}

fn load(path: &Path, source: LibrarySource) -> Result<Runtime, ProbeError> {
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let unusable = |detail: String| ProbeError::Unusable {
        path: path.clone(),
        detail,
    };
    let built = catch_unwind(AssertUnwindSafe(|| -> Result<Environment, String> {
        let env = ort::init_from(&path)
            .map_err(|e| e.to_string())?
            .with_name("tritonctl")
            .with_telemetry(false)
            .with_logger(Arc::new(
                |_: LogLevel, _: &str, _: &str, _: &str, _: &str| {},
            ))
            .build()
            .map_err(|e| e.to_string())?;
        env.set_log_level(LogLevel::Fatal);
        Ok(env)
    }));
    let env = match built {
        Ok(Ok(env)) => env,
        Ok(Err(e)) => return Err(unusable(e)),
        Err(p) => return Err(unusable(panic_text(p.as_ref()))),
    };
    let version = catch_unwind(ort::info)
        .ok()
        .and_then(version_of)
        .or_else(|| version_from_file_name(&path));
    Ok(Runtime {
        library: OrtLibrary {
            path,
            version,
            source,
        },
        env,
    })
}

/// `1.31.1` from a library named `libonnxruntime.so.1.31.1`.
fn version_from_file_name(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_string_lossy();
    let v = library_version(&name)?;
    (!v.is_empty()).then(|| {
        v.iter()
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join(".")
    })
}

/// `1.31.1` from ONNX Runtime's build info (`... git-branch=rel-1.31.1, ...`).
fn version_of(info: &str) -> Option<String> {
    let start = info.find("git-branch=rel-")? + "git-branch=rel-".len();
    let v: String = info[start..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    (!v.is_empty()).then_some(v)
}

fn tensor(name: &str, ty: &ValueType) -> SessionTensor {
    match ty {
        ValueType::Tensor {
            ty,
            shape,
            dimension_symbols,
        } => SessionTensor {
            name: name.to_string(),
            is_tensor: true,
            elem_type: ort::sys::ONNXTensorElementDataType::from(*ty) as i32,
            dims: shape.iter().map(|d| if *d < 0 { -1 } else { *d }).collect(),
            symbols: dimension_symbols.iter().cloned().collect(),
        },
        _ => SessionTensor {
            name: name.to_string(),
            is_tensor: false,
            elem_type: 0,
            dims: Vec::new(),
            symbols: Vec::new(),
        },
    }
}

/// Opens `model` in an ONNX Runtime session (CPU, graph optimizations off,
/// one thread) and returns its inputs and outputs as the session reports
/// them: with ONNX Runtime's shape inference merged into the declared
/// shapes, as Triton's ONNX Runtime backend sees them.
pub fn session_info(model: &Path) -> Result<SessionInfo, SessionError> {
    let rt = runtime()?;
    let load_error = |message: String| SessionError::Load {
        library: rt.library.clone(),
        model: model.to_path_buf(),
        message,
    };
    let opened = catch_unwind(AssertUnwindSafe(|| -> Result<SessionInfo, String> {
        let session = Session::builder(&rt.env)
            .map_err(|e| e.to_string())?
            .with_optimization_level(GraphOptimizationLevel::Disable)
            .map_err(|e| e.to_string())?
            .with_intra_threads(1)
            .map_err(|e| e.to_string())?
            .with_inter_threads(1)
            .map_err(|e| e.to_string())?
            .with_log_level(LogLevel::Fatal)
            .map_err(|e| e.to_string())?
            .commit_from_file(model)
            .map_err(|e| e.to_string())?;
        Ok(SessionInfo {
            library: rt.library.clone(),
            inputs: session
                .inputs()
                .iter()
                .map(|o| tensor(o.name(), o.dtype()))
                .collect(),
            outputs: session
                .outputs()
                .iter()
                .map(|o| tensor(o.name(), o.dtype()))
                .collect(),
        })
    }));
    match opened {
        Ok(Ok(info)) => Ok(info),
        Ok(Err(e)) => Err(load_error(e)),
        Err(p) => Err(load_error(panic_text(p.as_ref()))),
    }
}

/// The outputs of `model` as an ONNX Runtime session reports them (see
/// [`session_info`]).
pub fn session_outputs(model: &Path) -> Result<(OrtLibrary, Vec<SessionTensor>), SessionError> {
    session_info(model).map(|i| (i.library, i.outputs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_os = "linux")]
    fn library_file_names() {
        assert_eq!(library_version("libonnxruntime.so"), Some(vec![]));
        assert_eq!(
            library_version("libonnxruntime.so.1.31.1"),
            Some(vec![1, 31, 1])
        );
        assert_eq!(library_version("libonnxruntime_providers_shared.so"), None);
        assert_eq!(library_version("libonnxruntime.so.1.x"), None);
        assert_eq!(library_version("onnxruntime_pybind11_state.so"), None);
        assert_eq!(library_version("libonnxruntime.sox"), None);
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn the_highest_version_in_a_directory() {
        let d = tempfile::tempdir().unwrap();
        for f in [
            "libonnxruntime.so.1.9.0",
            "libonnxruntime.so.1.31.1",
            "libonnxruntime_providers_shared.so",
        ] {
            std::fs::write(d.path().join(f), b"").unwrap();
        }
        assert_eq!(
            library_in(d.path()),
            Some(d.path().join("libonnxruntime.so.1.31.1"))
        );
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(library_in(empty.path()), None);
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn version_from_the_file_name() {
        assert_eq!(
            version_from_file_name(Path::new("/a/libonnxruntime.so.1.31.1")),
            Some("1.31.1".into())
        );
        assert_eq!(
            version_from_file_name(Path::new("/a/libonnxruntime.so")),
            None
        );
    }

    #[test]
    fn version_from_build_info() {
        assert_eq!(
            version_of("ORT Build Info: git-branch=rel-1.31.1, git-commit-id=abc"),
            Some("1.31.1".into())
        );
        assert_eq!(version_of("ORT Build Info: git-branch=main"), None);
    }

    #[test]
    fn a_missing_env_path_is_an_error_with_the_install_hint() {
        let e = from_env(Path::new("/nonexistent/libonnxruntime.so")).unwrap_err();
        let text = e.to_string();
        assert!(text.contains("ORT_DYLIB_PATH"), "{text}");
        assert!(text.contains("pip install onnxruntime"), "{text}");
    }
}
