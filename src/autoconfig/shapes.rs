//! Where the output shapes come from (docs/spec/autoconfig.md §3.2).
//!
//! Triton takes output shapes from ONNX Runtime's session metadata, where
//! ONNX Runtime has merged its own shape inference into the declared
//! shapes. When an output's shape is not fully declared in the file, and
//! tritonctl is built with feature `run` and finds the ONNX Runtime library
//! (see `crate::runtime`), the model is opened in a session and that
//! output's shape is taken from the session, as Triton does. Otherwise the
//! reader's own completion stays (declared value info and a small
//! propagation, `crate::onnx`), and a note says why ONNX Runtime was not
//! used. `TRITONCTL_NO_ORT=1` forces the fallback.

use crate::onnx::{ShapeSource, Signature, TensorInfo};
use std::path::PathBuf;

/// Environment variable that keeps ONNX Runtime out of autoconfig.
pub const NO_ORT_ENV: &str = "TRITONCTL_NO_ORT";

/// What was used for the outputs whose shape the file does not fully
/// declare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutputShapes {
    /// Every output shape is declared in the file: nothing to choose.
    Declared,
    /// ONNX Runtime's session metadata. `outputs` are the outputs whose
    /// type and shape were taken from the session; `file` is what the
    /// model file alone gives for them (declared shape, value info or
    /// tritonctl's propagation), in the same order. The outputs'
    /// `shape_source` still says where the file's view came from.
    OnnxRuntime {
        library: PathBuf,
        version: Option<String>,
        outputs: Vec<String>,
        file: Vec<TensorInfo>,
    },
    /// The file's declared value info and tritonctl's propagation; `why`
    /// ONNX Runtime was not used.
    File { why: Fallback },
}

/// Why ONNX Runtime's session metadata was not used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fallback {
    /// Built without feature `run`.
    NotBuilt,
    /// `TRITONCTL_NO_ORT` is set.
    Disabled,
    /// No usable library (the probe's message, with how to install one).
    NoLibrary(String),
    /// The library is there but refused the model.
    ModelRefused {
        library: PathBuf,
        version: Option<String>,
        message: String,
    },
}

/// True for an output whose shape (or element type) the file does not
/// fully declare.
fn needs_completion(t: &TensorInfo) -> bool {
    t.is_tensor() && (t.shape_source != ShapeSource::Declared || !t.is_fully_known())
}

/// Names of the outputs that need a shape source other than the file's
/// declaration.
pub fn incomplete_outputs(sig: &Signature) -> Vec<&str> {
    sig.outputs
        .iter()
        .filter(|t| needs_completion(t))
        .map(|t| t.name.as_str())
        .collect()
}

fn disabled_by_env() -> bool {
    std::env::var_os(NO_ORT_ENV).is_some_and(|v| !v.is_empty() && v != "0")
}

/// Chooses the source of the output shapes and, when it is ONNX Runtime,
/// puts the session's type and shape into `sig.outputs`.
pub fn choose(sig: &mut Signature) -> OutputShapes {
    if incomplete_outputs(sig).is_empty() {
        return OutputShapes::Declared;
    }
    if disabled_by_env() {
        return OutputShapes::File {
            why: Fallback::Disabled,
        };
    }
    from_runtime(sig)
}

#[cfg(not(feature = "run"))]
fn from_runtime(_sig: &mut Signature) -> OutputShapes {
    OutputShapes::File {
        why: Fallback::NotBuilt,
    }
}

#[cfg(feature = "run")]
fn from_runtime(sig: &mut Signature) -> OutputShapes {
    use crate::onnx::{Dim, TensorKind};
    use crate::runtime::{self, SessionError};
    let (library, outputs) = match runtime::session_outputs(&sig.path) {
        Ok(r) => r,
        Err(SessionError::Probe(e)) => {
            return OutputShapes::File {
                why: Fallback::NoLibrary(e.to_string()),
            }
        }
        Err(SessionError::Load {
            library, message, ..
        }) => {
            return OutputShapes::File {
                why: Fallback::ModelRefused {
                    library: library.path,
                    version: library.version,
                    message,
                },
            }
        }
    };
    let mut names = Vec::new();
    let mut file = Vec::new();
    for t in sig.outputs.iter_mut().filter(|t| needs_completion(t)) {
        let Some(s) = outputs.iter().find(|s| s.name == t.name && s.is_tensor) else {
            continue;
        };
        file.push(t.clone());
        names.push(t.name.clone());
        let known_rank = t.shape().is_some();
        let shape = if s.dims.is_empty() && !known_rank {
            // ONNX Runtime reports no dims for an unknown rank too.
            None
        } else {
            Some(
                s.dims
                    .iter()
                    .enumerate()
                    .map(|(i, &d)| match s.symbols.get(i) {
                        _ if d >= 0 => Dim::Fixed(d),
                        Some(sym) if !sym.is_empty() => Dim::Symbolic(sym.clone()),
                        _ => Dim::Unknown,
                    })
                    .collect(),
            )
        };
        let elem_type = if s.elem_type != 0 {
            s.elem_type
        } else {
            t.elem_type()
        };
        t.kind = TensorKind::Tensor { elem_type, shape };
    }
    sig.output_shapes_complete = sig
        .outputs
        .iter()
        .all(|t| !t.is_tensor() || t.is_fully_known());
    OutputShapes::OnnxRuntime {
        library: library.path,
        version: library.version,
        outputs: names,
        file,
    }
}

impl Fallback {
    /// Why ONNX Runtime was not used, for a note.
    pub fn text(&self) -> String {
        const WHY: &str =
            "ONNX Runtime's session metadata (what Triton uses) was not used for the output shapes";
        match self {
            Fallback::NotBuilt => format!(
                "{WHY}: this tritonctl is built without the `run` feature (rebuild with default features and install ONNX Runtime: `pip install onnxruntime`)"
            ),
            Fallback::Disabled => format!("{WHY}: {NO_ORT_ENV} is set"),
            Fallback::NoLibrary(e) => format!("{WHY}: {e}"),
            Fallback::ModelRefused {
                library,
                version,
                message,
            } => format!(
                "ONNX Runtime{} ({}) could not load the model, so its session metadata was not used for the output shapes: {message}. Triton's ONNX Runtime backend would fail to load the model the same way, unless its ONNX Runtime version differs or the model's custom operators are registered (model_operations {{ op_library_filename }})",
                version.as_deref().map(|v| format!(" {v}")).unwrap_or_default(),
                library.display()
            ),
        }
    }
}
