//! [`ModelSession`]: one ONNX Runtime session (one model instance) that
//! runs host [`Tensor`]s.
//!
//! - [`ModelSession::run`] / [`ModelSession::run_into`]: inputs of
//!   fixed-size types are handed to ONNX Runtime as views of the caller's
//!   tensors (no copy in; BYTES are copied once), outputs are copied once
//!   into host tensors; `run_into` reuses the vectors of the previous
//!   result, so a steady loop allocates nothing for its outputs. Inputs are
//!   checked first (names, data types, ranks, fixed dims, element counts),
//!   and every error names the tensor.
//! - [`ModelSession::run_bound`]: for stateful models, the state tensors
//!   stay ONNX Runtime values between calls ([`BoundState`]): each call's
//!   state outputs become the next call's state inputs without a copy to
//!   the host (on CUDA they stay in device memory, through ONNX Runtime's
//!   I/O binding). On the CPU this path is tested; on CUDA it is not (no
//!   GPU on the test machines): there, only the memory placement differs.
//!
//! Sessions run on the CPU execution provider or, for [`Device::Cuda`],
//! the CUDA execution provider on that device (registration failures are
//! errors, never a silent CPU fallback). The CUDA branch is untested here.
//!
//! Threads: by default ([`SessionOptions::default`]) a session uses one
//! intra-op and one inter-op thread; `tritonctl run` sets them, with the
//! other session settings, from the model's config as its Triton backend
//! does (`run::session_config`).

use std::borrow::Borrow;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use ort::ep::ArbitrarilyConfigurableExecutionProvider;
use ort::memory::MemoryInfo;
use ort::session::builder::GraphOptimizationLevel;
use ort::session::Session;
use ort::value::DynValue;

use super::convert::{self, onnx_type_name};
use super::device::Device;
use super::{panic_text, runtime, tensor, SessionError, SessionTensor};
use crate::tensor::{element_count, DataType, Tensor};

mod binding;
mod bound;
mod reuse;
#[cfg(test)]
pub(crate) mod tests;

pub(crate) use binding::{run_c, Binding, CNames};
use bound::memory_info;
pub use bound::BoundState;
use reuse::Reuse;

/// ONNX Runtime's graph optimization levels (Triton's
/// `optimization { graph { level } }`: -1 basic, 0 default = all, 1 all).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GraphOptimization {
    Disable,
    Basic,
    Extended,
    /// ONNX Runtime's and Triton's default.
    #[default]
    All,
}

impl GraphOptimization {
    fn level(self) -> GraphOptimizationLevel {
        match self {
            GraphOptimization::Disable => GraphOptimizationLevel::Disable,
            GraphOptimization::Basic => GraphOptimizationLevel::Level1,
            GraphOptimization::Extended => GraphOptimizationLevel::Level2,
            GraphOptimization::All => GraphOptimizationLevel::All,
        }
    }
}

/// The most threads of either kind a session is given. Triton's
/// onnxruntime backend hands its thread-count parameters to ONNX Runtime as
/// they are, and ONNX Runtime starts that many threads for every session:
/// thousands of them hang a small host while the pool starts, a hundred
/// thousand fail to start at all (docs/commands/run.md, "Sessions").
pub const MAX_THREADS: usize = 1024;

/// How a session is set up. The defaults are one intra-op and one
/// inter-op thread, sequential execution, every graph optimization,
/// ONNX Runtime's memory patterns on and its CPU arena off (see
/// [`Self::cpu_arena`]); `tritonctl run` sets them from the model's config
/// as Triton's backends do (see `run::session_config`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionOptions {
    pub device: Device,
    /// Threads ONNX Runtime may use inside one operator; 0: ONNX
    /// Runtime's default (one per physical core).
    pub intra_threads: usize,
    /// Threads ONNX Runtime may use to run operators side by side (with
    /// [`Self::parallel_execution`]); 0: ONNX Runtime's default.
    pub inter_threads: usize,
    /// ONNX Runtime's parallel execution mode (operators of independent
    /// branches at once) instead of the sequential one.
    pub parallel_execution: bool,
    pub graph_optimization: GraphOptimization,
    /// ONNX Runtime's CPU memory arena (its `EnableCpuMemArena`). Off by
    /// default, where ONNX Runtime and Triton have it on: this process
    /// allocates with mimalloc (see `src/main.rs`), ONNX Runtime's `malloc`
    /// included, which keeps freed blocks for reuse per thread as the
    /// arena does, without the arena's lock and bookkeeping on every
    /// tensor allocation (a run is shorter without it; docs/commands/run.md,
    /// "Memory allocation"). The outputs are the
    /// same either way. Triton's onnxruntime backend takes it from the
    /// model parameter `enable_mem_arena`, which sets it here too.
    pub cpu_arena: bool,
    /// ONNX Runtime's memory patterns (its `EnableMemPattern`), on by
    /// default; the onnxruntime backend's parameter `enable_mem_pattern`.
    pub mem_pattern: bool,
    /// Session configuration entries (ONNX Runtime's
    /// `AddSessionConfigEntry`), key and value.
    pub config_entries: Vec<(String, String)>,
    /// Options of the CUDA execution provider (ONNX Runtime's
    /// `UpdateCUDAProviderOptions` keys and values), used on CUDA only.
    pub cuda_options: Vec<(String, String)>,
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            device: Device::Cpu,
            intra_threads: 1,
            inter_threads: 1,
            parallel_execution: false,
            graph_optimization: GraphOptimization::All,
            cpu_arena: false,
            mem_pattern: true,
            config_entries: Vec::new(),
            cuda_options: Vec::new(),
        }
    }
}

/// Why a run failed. Every variant names the tensor it is about, or
/// carries ONNX Runtime's own message (which names it when ONNX Runtime
/// does).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RunError {
    #[error("unknown input '{name}' (the model's inputs: {})", known.join(", "))]
    UnknownInput { name: String, known: Vec<String> },
    #[error("input '{name}' is given twice")]
    DuplicateInput { name: String },
    #[error("input '{name}' is missing")]
    MissingInput { name: String },
    #[error("input '{name}': data type {got} does not match the model's {expected}")]
    DataType {
        name: String,
        expected: DataType,
        got: DataType,
    },
    #[error(
        "input '{name}': shape {got:?} does not match the model's {expected:?} (-1: any size)"
    )]
    Shape {
        name: String,
        expected: Vec<i64>,
        got: Vec<i64>,
    },
    #[error("input '{name}': shape {shape:?} holds {expected} elements but the tensor has {got}")]
    Size {
        name: String,
        shape: Vec<i64>,
        expected: usize,
        got: usize,
    },
    #[error("input '{name}': {message}")]
    Input { name: String, message: String },
    #[error("output '{name}': {message}")]
    Output { name: String, message: String },
    #[error("state '{name}': {message}")]
    State { name: String, message: String },
    #[error("ONNX Runtime failed: {message}")]
    Ort { message: String },
}

/// One ONNX Runtime session.
pub struct ModelSession {
    /// Preallocated outputs for runs with the input shapes of the last
    /// runs (see [`Reuse`]). Declared before `session`, so that its
    /// binding is released before the session.
    reuse: Reuse,
    session: Session,
    model: PathBuf,
    device: Device,
    inputs: Vec<SessionTensor>,
    input_types: Vec<DataType>,
    outputs: Vec<SessionTensor>,
    /// Per input: the view of the caller's tensor from the last run.
    views: Vec<Option<convert::HostView>>,
    host_memory: MemoryInfo<'static>,
    /// The input and output names for [`run_named`](binding::run_named) (`None`: a
    /// name cannot be one, outputs are then not preallocated).
    c_names: Option<CNames>,
    /// Per session input: its position among the caller's inputs in the
    /// last run (see [`Self::run_into`]); empty after a refused call.
    order: Vec<usize>,
}

impl std::fmt::Debug for ModelSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelSession")
            .field("model", &self.model)
            .field("device", &self.device)
            .field("inputs", &self.inputs)
            .field("outputs", &self.outputs)
            .finish()
    }
}

fn ort_err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Checks that a model input or output is a tensor of a Triton type.
fn supported(kind: &str, t: &SessionTensor) -> Result<DataType, String> {
    if !t.is_tensor {
        return Err(format!(
            "{kind} '{}' is not a tensor (a sequence, map or optional value), which tritonctl cannot pass",
            t.name
        ));
    }
    t.data_type().ok_or_else(|| {
        format!(
            "{kind} '{}' has element type {}, which has no Triton data type",
            t.name,
            onnx_type_name(t.elem_type)
        )
    })
}

/// The execution providers of a session, in ONNX Runtime's order of
/// preference (it gives each node to the first one that can run it): on
/// CUDA the CUDA execution provider (with `options.cuda_options`; a
/// failure to register it is an error, never a silent fallback) and then
/// the CPU one for the nodes CUDA cannot run; on the CPU the CPU one
/// alone. The CPU one is registered explicitly for its arena setting.
fn execution_providers(options: &SessionOptions) -> Vec<ort::ep::ExecutionProviderDispatch> {
    let cpu = ort::ep::CPU::default()
        .with_arena_allocator(options.cpu_arena)
        .build();
    match options.device {
        Device::Cuda(n) => {
            // Untested here: no GPU on the test machines.
            let mut cuda = ort::ep::CUDA::default().with_device_id(n as i32);
            for (key, value) in &options.cuda_options {
                cuda = cuda.with_arbitrary_config(key, value);
            }
            vec![cuda.build().error_on_failure(), cpu]
        }
        Device::Cpu => vec![cpu],
    }
}

impl ModelSession {
    /// Opens `model` (an `.onnx` file) on `options.device`. Fails when ONNX
    /// Runtime is missing, refuses the model, cannot register the CUDA
    /// execution provider, or when an input or output is not a tensor of
    /// a Triton data type.
    pub fn open(model: &Path, options: &SessionOptions) -> Result<ModelSession, SessionError> {
        let rt = runtime()?;
        let load_error = |message: String| SessionError::Load {
            library: rt.library.clone(),
            model: model.to_path_buf(),
            message,
        };
        for (what, n) in [
            ("intra-op", options.intra_threads),
            ("inter-op", options.inter_threads),
        ] {
            if n > MAX_THREADS {
                return Err(load_error(format!(
                    "{n} {what} threads is more than a session may start (at most {MAX_THREADS})"
                )));
            }
        }
        let opened = catch_unwind(AssertUnwindSafe(|| -> Result<Session, String> {
            let mut b = Session::builder(&rt.env)
                .map_err(ort_err)?
                .with_optimization_level(options.graph_optimization.level())
                .map_err(ort_err)?
                .with_intra_threads(options.intra_threads)
                .map_err(ort_err)?
                .with_inter_threads(options.inter_threads)
                .map_err(ort_err)?
                .with_parallel_execution(options.parallel_execution)
                .map_err(ort_err)?
                .with_memory_pattern(options.mem_pattern)
                .map_err(ort_err)?
                .with_log_level(ort::logging::LogLevel::Fatal)
                .map_err(ort_err)?;
            for (key, value) in &options.config_entries {
                b = b
                    .with_config_entry(key, value)
                    .map_err(|e| format!("session option '{key}' = '{value}': {e}"))?;
            }
            for ep in execution_providers(options) {
                b = b
                    .with_execution_providers([ep])
                    .map_err(|e| match options.device {
                        Device::Cuda(n) => {
                            format!("cannot use the CUDA execution provider on cuda:{n}: {e}")
                        }
                        Device::Cpu => e.to_string(),
                    })?;
            }
            b.commit_from_file(model).map_err(ort_err)
        }));
        let session = match opened {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return Err(load_error(e)),
            Err(p) => return Err(load_error(panic_text(p.as_ref()))),
        };
        let inputs: Vec<SessionTensor> = session
            .inputs()
            .iter()
            .map(|o| tensor(o.name(), o.dtype()))
            .collect();
        let outputs: Vec<SessionTensor> = session
            .outputs()
            .iter()
            .map(|o| tensor(o.name(), o.dtype()))
            .collect();
        let input_types = inputs
            .iter()
            .map(|t| supported("input", t))
            .collect::<Result<Vec<_>, _>>()
            .map_err(load_error)?;
        for t in &outputs {
            supported("output", t).map_err(load_error)?;
        }
        let host_memory = memory_info(Device::Cpu).map_err(load_error)?;
        let c_names = CNames::new(&inputs, &outputs);
        Ok(ModelSession {
            session,
            model: model.to_path_buf(),
            device: options.device,
            views: inputs.iter().map(|_| None).collect(),
            inputs,
            input_types,
            outputs,
            host_memory,
            reuse: Reuse::default(),
            c_names,
            order: Vec::new(),
        })
    }

    pub fn model(&self) -> &Path {
        &self.model
    }

    pub fn device(&self) -> Device {
        self.device
    }

    /// The model's inputs, in ONNX Runtime's order (all are tensors of a
    /// Triton data type).
    pub fn inputs(&self) -> &[SessionTensor] {
        &self.inputs
    }

    /// The model's outputs, in ONNX Runtime's order (the order of every
    /// result).
    pub fn outputs(&self) -> &[SessionTensor] {
        &self.outputs
    }

    /// The ONNX Runtime session inside (for the bare benchmark loop).
    pub(super) fn into_session(self) -> Session {
        self.session
    }

    /// Runs the model; the outputs come in [`Self::outputs`] order.
    pub fn run(&mut self, inputs: &[(&str, &Tensor)]) -> Result<Vec<(String, Tensor)>, RunError> {
        let mut out = Vec::with_capacity(self.outputs.len());
        self.run_into(inputs, &mut out)?;
        Ok(out)
    }

    /// Runs the model and writes the outputs into `outputs`, reusing the
    /// tensors it holds from a previous call (same names in the same
    /// order: their vectors are refilled without allocating when large
    /// enough). `inputs` are `(name, tensor)` pairs in any order (`&str`
    /// or `String` names, borrowed or owned tensors). Nothing is allocated
    /// when the inputs have the names, memory and shapes of the last call.
    pub fn run_into<N: AsRef<str>, T: Borrow<Tensor>>(
        &mut self,
        inputs: &[(N, T)],
        outputs: &mut Vec<(String, Tensor)>,
    ) -> Result<(), RunError> {
        if self.run_again(inputs, outputs) {
            return Ok(());
        }
        self.order_into(inputs, &[])?;
        let order = std::mem::take(&mut self.order);
        let r = self.run_ordered(|i| inputs[order[i]].1.borrow(), outputs);
        self.order = order;
        r
    }

    /// Checks `inputs` (every session input exactly once, except those
    /// named in `skip`, which come from elsewhere; known names, types,
    /// shapes and sizes) and sets `self.order[i]` to the position in
    /// `inputs` of session input `i` (`usize::MAX` for a skipped one). The
    /// order of the last call is kept when nothing is skipped and the names
    /// are where they were.
    fn order_into<N: AsRef<str>, T: Borrow<Tensor>>(
        &mut self,
        inputs: &[(N, T)],
        skip: &[&str],
    ) -> Result<(), RunError> {
        const UNSET: usize = usize::MAX;
        let n = self.inputs.len();
        let same = skip.is_empty()
            && inputs.len() == n
            && self.order.len() == n
            && self
                .order
                .iter()
                .zip(&self.inputs)
                .all(|(&k, spec)| inputs.get(k).is_some_and(|i| i.0.as_ref() == spec.name));
        if !same {
            self.order.clear();
            self.order.resize(n, UNSET);
            for (k, (name, _)) in inputs.iter().enumerate() {
                let name = name.as_ref();
                let Some(i) = self.inputs.iter().position(|s| s.name == name) else {
                    self.order.clear();
                    return Err(RunError::UnknownInput {
                        name: name.to_string(),
                        known: self.inputs.iter().map(|s| s.name.clone()).collect(),
                    });
                };
                if self.order[i] != UNSET || skip.contains(&name) {
                    self.order.clear();
                    return Err(RunError::DuplicateInput {
                        name: name.to_string(),
                    });
                }
                self.order[i] = k;
            }
            let missing = self
                .order
                .iter()
                .zip(&self.inputs)
                .find(|(&k, spec)| k == UNSET && !skip.contains(&spec.name.as_str()));
            if let Some((_, spec)) = missing {
                let name = spec.name.clone();
                self.order.clear();
                return Err(RunError::MissingInput { name });
            }
        }
        for (i, spec) in self.inputs.iter().enumerate() {
            if let Some((_, t)) = inputs.get(self.order[i]) {
                let t = t.borrow();
                // A tensor still viewed by this input passed these checks
                // when its view was made (they depend only on its element
                // type and shape, which the view records).
                if !convert::is_view_of(&self.views[i], t) {
                    check_input(spec, self.input_types[i], t)?;
                }
            }
        }
        Ok(())
    }
}

fn check_input(spec: &SessionTensor, expected: DataType, t: &Tensor) -> Result<(), RunError> {
    let name = || spec.name.clone();
    if t.dtype() != expected {
        return Err(RunError::DataType {
            name: name(),
            expected,
            got: t.dtype(),
        });
    }
    let shape_ok = spec.dims.is_empty()
        || (spec.dims.len() == t.shape.len()
            && spec
                .dims
                .iter()
                .zip(&t.shape)
                .all(|(&d, &g)| d < 0 || d == g));
    if !shape_ok || t.shape.iter().any(|&d| d < 0) {
        return Err(RunError::Shape {
            name: name(),
            expected: spec.dims.clone(),
            got: t.shape.clone(),
        });
    }
    let n = element_count(&t.shape).ok_or_else(|| RunError::Shape {
        name: name(),
        expected: spec.dims.clone(),
        got: t.shape.clone(),
    })?;
    if n != t.data.len() {
        return Err(RunError::Size {
            name: name(),
            shape: t.shape.clone(),
            expected: n,
            got: t.data.len(),
        });
    }
    Ok(())
}

/// Writes output `name` into slot `i` of `outputs`, reusing the tensor
/// there when it is the same output.
/// Copies the values of one run into `outputs` (see
/// [`ModelSession::run_into`]).
fn store_outputs(
    outputs: &mut Vec<(String, Tensor)>,
    names: &[SessionTensor],
    result: ort::session::SessionOutputs<'_>,
) -> Result<(), RunError> {
    let mut n = 0;
    for (i, (name, value)) in result.into_iter().enumerate() {
        store_output(outputs, i, name, &value)?;
        n = i + 1;
    }
    debug_assert_eq!(n, names.len());
    outputs.truncate(n);
    Ok(())
}

fn store_output(
    outputs: &mut Vec<(String, Tensor)>,
    i: usize,
    name: &str,
    value: &DynValue,
) -> Result<(), RunError> {
    let err = |message: String| RunError::Output {
        name: name.to_string(),
        message,
    };
    match outputs.get_mut(i) {
        Some((n, t)) if n == name => convert::read_value(value, t).map_err(err),
        _ => {
            let t = convert::to_tensor(value).map_err(err)?;
            outputs.truncate(i);
            outputs.push((name.to_string(), t));
            Ok(())
        }
    }
}

#[cfg(test)]
mod send {
    // Sessions and their state move to the instance threads that run them.
    fn send<T: Send>() {}
    #[test]
    fn sessions_and_state_are_send() {
        send::<super::ModelSession>();
        send::<super::BoundState>();
    }
}
