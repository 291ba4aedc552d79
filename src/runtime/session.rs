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
use ort::memory::Allocator;
use ort::memory::{AllocationDevice, AllocatorType, MemoryInfo, MemoryType};
use ort::session::builder::GraphOptimizationLevel;
use ort::session::{IoBinding, Session, SessionInputValue};
use ort::value::{DynTensor, DynValue};
use ort::AsPointer;
use smallvec::SmallVec;
use std::ffi::c_char;

use super::convert::{self, onnx_type_name};
use super::device::Device;
use super::{panic_text, runtime, tensor, SessionError, SessionTensor};
use crate::tensor::{element_count, DataType, Tensor, TensorData};

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
    /// allocates with mimalloc (see `lib.rs`), ONNX Runtime's `malloc`
    /// included, which keeps freed blocks for reuse per thread as the
    /// arena does, without the arena's lock and bookkeeping on every
    /// tensor allocation (on the accumulate model of `benches/run.rs`, a run is
    /// about 0.35 µs shorter, a tenth, without it). The outputs are the
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
    /// The input and output names for [`run_named`] (`None`: a
    /// name cannot be one, outputs are then not preallocated).
    c_names: Option<CNames>,
    /// Per session input: its position among the caller's inputs in the
    /// last run (see [`Self::run_into`]); empty after a refused call.
    order: Vec<usize>,
}

/// Output reuse on the CPU: once two runs in a row had the same input
/// shapes, the outputs of the next runs with those shapes are preallocated
/// with the shapes ONNX Runtime gave them, so that it writes into them
/// instead of allocating, describing and releasing new values each run.
/// When the caller passes the same output vector again (with those
/// names, types and shapes), ONNX Runtime writes into the caller's tensors
/// themselves (views of their memory), so no output is copied at all.
/// A run whose outputs come out with other shapes fails in ONNX Runtime
/// and is repeated without preallocation (and reuse is turned off for
/// the session when that repeat succeeds, as the model's output shapes
/// then depend on more than its input shapes).
#[derive(Default)]
struct Reuse {
    /// The input shapes of the last run.
    shapes: Vec<Vec<i64>>,
    /// Runs in a row with those shapes.
    repeats: u32,
    /// Every output preallocated for those shapes (session order).
    values: Option<Vec<DynTensor>>,
    /// Per output (session order): where ONNX Runtime writes it when
    /// `values` are used.
    buffers: Vec<Preallocated>,
    /// The values of `values` as ONNX Runtime takes them (see
    /// [`ModelSession::run_again`]).
    value_ptrs: SmallVec<[*mut ort::sys::OrtValue; 8]>,
    /// Per output (session order): a view of the caller's output tensor
    /// that ONNX Runtime wrote into directly in the last run that did so
    /// (see [`view_outputs`]; checked again before every use), and the
    /// views as ONNX Runtime takes them.
    out_views: Vec<Option<convert::HostView>>,
    out_ptrs: SmallVec<[*mut ort::sys::OrtValue; 8]>,
    /// Set when the last run went through `values` and succeeded: its
    /// inputs are the ones viewed by `views`, so a run on the very same
    /// tensors can go straight to ONNX Runtime.
    armed: bool,
    off: bool,
    /// The values of those runs bound once (see [`Binding`]).
    binding: Option<Binding>,
}

/// An ONNX Runtime I/O binding for the runs that go straight to ONNX
/// Runtime ([`ModelSession::run_again`]): their input views and output
/// views are bound once, so that a run passes neither names nor values
/// (`RunWithBinding`, which ONNX Runtime runs as `Run` on the bound
/// values). On the CPU a bound value is the caller's memory itself: data
/// written into it in place is what the next run reads. The flags say
/// whether the bound inputs and outputs are still the current views; they
/// are cleared wherever a view may be made again, and what is bound is
/// used only while they are set.
pub(crate) struct Binding {
    ptr: std::ptr::NonNull<ort::sys::OrtIoBinding>,
    /// The run options of every run, made once (as Triton's onnxruntime
    /// and stateful backends keep theirs): ONNX Runtime makes a default
    /// one per run otherwise.
    options: std::ptr::NonNull<ort::sys::OrtRunOptions>,
    inputs: bool,
    outputs: bool,
}

impl Binding {
    /// A new binding of `session`, with nothing bound.
    pub(crate) fn new(session: &mut Session) -> Result<Binding, String> {
        let mut ptr: *mut ort::sys::OrtIoBinding = std::ptr::null_mut();
        // SAFETY: a live session; `ptr` receives the new binding.
        convert::status(unsafe { (ort::api().CreateIoBinding)(session.ptr_mut(), &mut ptr) })?;
        let ptr = std::ptr::NonNull::new(ptr).ok_or("ONNX Runtime made no binding")?;
        let mut options: *mut ort::sys::OrtRunOptions = std::ptr::null_mut();
        // SAFETY: `options` receives new run options.
        let made = convert::status(unsafe { (ort::api().CreateRunOptions)(&mut options) });
        let options = match made.map(|()| std::ptr::NonNull::new(options)) {
            Ok(Some(o)) => o,
            failed => {
                // SAFETY: made above, released once, here.
                unsafe { (ort::api().ReleaseIoBinding)(ptr.as_ptr()) };
                return Err(failed
                    .err()
                    .unwrap_or_else(|| "ONNX Runtime made no run options".into()));
            }
        };
        Ok(Binding {
            ptr,
            options,
            inputs: false,
            outputs: false,
        })
    }

    /// Binds input `names[i]` to `values[i]` (on the CPU, the value
    /// itself: no copy is made).
    ///
    /// # Safety
    /// Every name must be a NUL-terminated input name of the session and
    /// every value a live ONNX Runtime value; the binding keeps a
    /// reference to it, read by every run until it is bound again.
    pub(crate) unsafe fn bind_inputs(
        &mut self,
        names: &[*const c_char],
        values: &[*const ort::sys::OrtValue],
    ) -> Result<(), String> {
        // SAFETY: the caller's promise.
        unsafe { self.bind(ort::api().BindInput, names, values.iter().copied()) }
    }

    /// Binds output `names[i]` to `values[i]`, which runs write into.
    ///
    /// # Safety
    /// As for [`Self::bind_inputs`], with output names; each value's
    /// memory must be writable by every run until it is bound again.
    pub(crate) unsafe fn bind_outputs(
        &mut self,
        names: &[*const c_char],
        values: &[*mut ort::sys::OrtValue],
    ) -> Result<(), String> {
        let values = values.iter().map(|v| v.cast_const());
        // SAFETY: the caller's promise.
        unsafe { self.bind(ort::api().BindOutput, names, values) }
    }

    /// Binds each name to its value with `bind` (`BindInput` or
    /// `BindOutput`), as the caller promises.
    unsafe fn bind(
        &mut self,
        bind: unsafe extern "system" fn(
            *mut ort::sys::OrtIoBinding,
            *const c_char,
            *const ort::sys::OrtValue,
        ) -> ort::sys::OrtStatusPtr,
        names: &[*const c_char],
        values: impl Iterator<Item = *const ort::sys::OrtValue>,
    ) -> Result<(), String> {
        for (&name, value) in names.iter().zip(values) {
            // SAFETY: the caller's promise.
            convert::status(unsafe { bind(self.ptr.as_ptr(), name, value) })?;
        }
        Ok(())
    }

    /// Runs `session` (the session of [`Self::new`]) on the bound values.
    ///
    /// # Safety
    /// Every bound value must be live, and the outputs' memory writable,
    /// for the duration of the call.
    pub(crate) unsafe fn run(&self, session: &mut Session) -> Result<(), String> {
        // SAFETY: the caller's promise.
        convert::status(unsafe {
            (ort::api().RunWithBinding)(session.ptr_mut(), self.options.as_ptr(), self.ptr.as_ptr())
        })
    }
}

impl Drop for Binding {
    fn drop(&mut self) {
        // SAFETY: the binding was created by `CreateIoBinding` and the
        // options by `CreateRunOptions`; each is released once, here
        // (before the session: see `ModelSession`).
        unsafe {
            (ort::api().ReleaseIoBinding)(self.ptr.as_ptr());
            (ort::api().ReleaseRunOptions)(self.options.as_ptr());
        }
    }
}

// SAFETY: `value_ptrs` point to the ONNX Runtime values owned by `values`
// in the same struct, and `binding` is owned by it (they move with it and
// are only used through `&mut ModelSession`; ONNX Runtime's bindings and
// sessions may be used from any thread, one call at a time).
unsafe impl Send for Reuse {}

/// Whether `outputs` are the session's outputs by name, in session order,
/// one per entry of `mine`, each `same` as its entry.
fn outputs_match<T>(
    names: &CNames,
    outputs: &[(String, Tensor)],
    mine: &[T],
    same: impl Fn(&T, &Tensor) -> bool,
) -> bool {
    outputs.len() == names.outputs.len()
        && mine.len() == outputs.len()
        && outputs
            .iter()
            .zip(mine)
            .enumerate()
            .all(|(i, ((n, t), m))| n.as_bytes() == names.output(i) && same(m, t))
}

/// One preallocated output: its host buffer (address, element count) and
/// the shape and type it was made for.
struct Preallocated {
    addr: usize,
    len: usize,
    dtype: DataType,
    shape: Vec<i64>,
}

impl Reuse {
    /// Drops the preallocated outputs and the views of the caller's.
    fn forget_outputs(&mut self) {
        self.unbind_outputs();
        self.values = None;
        self.value_ptrs.clear();
        self.buffers.clear();
        self.out_views.clear();
        self.out_ptrs.clear();
    }

    /// The input views may be made again: runs stop going straight to
    /// ONNX Runtime until a run re-arms, and the bound inputs are stale.
    fn disarm(&mut self) {
        self.armed = false;
        if let Some(b) = &mut self.binding {
            b.inputs = false;
        }
    }

    /// The output views may be made again: the bound outputs are stale.
    fn unbind_outputs(&mut self) {
        if let Some(b) = &mut self.binding {
            b.outputs = false;
        }
    }

    /// [`view_outputs`] into `out_views` and `out_ptrs` (the bound
    /// outputs are then stale).
    fn view_outputs(
        &mut self,
        outputs: &[(String, Tensor)],
        memory: &MemoryInfo<'_>,
    ) -> Result<(), String> {
        self.unbind_outputs();
        view_outputs(outputs, &mut self.out_views, &mut self.out_ptrs, memory)
    }

    /// Whether the caller's `outputs` are, in session order, the tensors
    /// viewed by `out_views` (ONNX Runtime can write into them as they
    /// are).
    fn outputs_viewed(&self, names: &CNames, outputs: &[(String, Tensor)]) -> bool {
        outputs_match(names, outputs, &self.out_views, convert::is_view_of)
    }

    /// Whether the caller's `outputs` have the names, types and shapes of
    /// the preallocated ones (so that views of them can take their place).
    fn outputs_fit(&self, names: &CNames, outputs: &[(String, Tensor)]) -> bool {
        outputs_match(names, outputs, &self.buffers, |b, t| {
            t.dtype() == b.dtype && t.shape == b.shape
        })
    }

    /// Whether the `n` inputs `at(0..n)` have the shapes of the last run.
    fn same_shapes<'t>(&self, n: usize, at: &impl Fn(usize) -> &'t Tensor) -> bool {
        self.shapes.len() == n
            && self
                .shapes
                .iter()
                .enumerate()
                .all(|(i, s)| at(i).shape == *s)
    }

    fn remember<'t>(&mut self, n: usize, at: &impl Fn(usize) -> &'t Tensor) {
        self.forget_outputs();
        self.repeats = 1;
        self.shapes.clear();
        self.shapes.extend((0..n).map(|i| at(i).shape.clone()));
    }
}

/// The ONNX Runtime element type of a numeric Triton type.
fn element_type(d: DataType) -> Option<ort::value::TensorElementType> {
    use ort::value::TensorElementType as E;
    Some(match d {
        DataType::Bool => E::Bool,
        DataType::U8 => E::Uint8,
        DataType::U16 => E::Uint16,
        DataType::U32 => E::Uint32,
        DataType::U64 => E::Uint64,
        DataType::I8 => E::Int8,
        DataType::I16 => E::Int16,
        DataType::I32 => E::Int32,
        DataType::I64 => E::Int64,
        DataType::F16 => E::Float16,
        DataType::F32 => E::Float32,
        DataType::F64 => E::Float64,
        DataType::Bf16 => E::Bfloat16,
        DataType::Bytes => return None,
    })
}

/// Every output of `outputs` (the tensors of the last run, in session
/// order) preallocated on the CPU, with where each output's buffer is;
/// `None` when one cannot be (strings).
fn preallocated(
    names: &[SessionTensor],
    outputs: &[(String, Tensor)],
) -> Option<(Vec<DynTensor>, Vec<Preallocated>)> {
    if outputs.len() != names.len() {
        return None;
    }
    let allocator = Allocator::default();
    let mut values = Vec::with_capacity(outputs.len());
    let mut buffers = Vec::with_capacity(outputs.len());
    for (o, (name, t)) in names.iter().zip(outputs) {
        if o.name != *name {
            return None;
        }
        let elem = element_type(t.dtype())?;
        let value = ort::value::DynTensor::new(&allocator, elem, t.shape.clone()).ok()?;
        let len = element_count(&t.shape)?;
        let addr = if len > 0 {
            value.data_ptr() as usize
        } else {
            0
        };
        if len > 0 && addr == 0 {
            return None;
        }
        buffers.push(Preallocated {
            addr,
            len,
            dtype: t.dtype(),
            shape: t.shape.clone(),
        });
        values.push(value);
    }
    Some((values, buffers))
}

/// The names of a session's inputs and outputs as C strings, made once
/// for [`run_named`]: all in one buffer (ONNX Runtime reads every
/// name on every run; together they take a cache line or two instead of
/// one allocation each).
pub(crate) struct CNames {
    /// The input names then the output names, each followed by a NUL.
    buf: Box<[u8]>,
    /// Where each name starts in `buf`, and its length (without the NUL).
    inputs: SmallVec<[(u32, u32); 8]>,
    outputs: SmallVec<[(u32, u32); 8]>,
    /// Pointers to the names of `inputs` and `outputs` in `buf` (its heap
    /// buffer does not move).
    input_ptrs: CPtrs,
    output_ptrs: CPtrs,
}

// SAFETY: the pointers point into the buffer owned by the same struct,
// which is never changed.
unsafe impl Send for CNames {}
unsafe impl Sync for CNames {}

impl CNames {
    /// `None` when a name holds a NUL byte.
    pub(crate) fn new(inputs: &[SessionTensor], outputs: &[SessionTensor]) -> Option<Self> {
        let mut buf = Vec::new();
        let mut place = |ts: &[SessionTensor]| -> Option<SmallVec<[(u32, u32); 8]>> {
            ts.iter()
                .map(|t| {
                    let name = t.name.as_bytes();
                    if name.contains(&0) {
                        return None;
                    }
                    let at = u32::try_from(buf.len()).ok()?;
                    let len = u32::try_from(name.len()).ok()?;
                    buf.extend_from_slice(name);
                    buf.push(0);
                    Some((at, len))
                })
                .collect()
        };
        let inputs = place(inputs)?;
        let outputs = place(outputs)?;
        let buf = buf.into_boxed_slice();
        let p = |v: &[(u32, u32)]| -> CPtrs {
            v.iter()
                .map(|&(at, _)| buf[at as usize..].as_ptr().cast::<c_char>())
                .collect()
        };
        Some(CNames {
            input_ptrs: p(&inputs),
            output_ptrs: p(&outputs),
            buf,
            inputs,
            outputs,
        })
    }

    /// Pointers to the input names and to the output names, for
    /// [`run_c`]; valid while `self` is.
    pub(crate) fn pointers(&self) -> (&[*const c_char], &[*const c_char]) {
        (&self.input_ptrs, &self.output_ptrs)
    }

    fn name(&self, (at, len): (u32, u32)) -> &[u8] {
        &self.buf[at as usize..at as usize + len as usize]
    }

    /// The name of input `i` (session order), without its NUL.
    fn input(&self, i: usize) -> &[u8] {
        self.inputs.get(i).map_or(&[], |&r| self.name(r))
    }

    /// The name of output `i` (session order), without its NUL.
    fn output(&self, i: usize) -> &[u8] {
        self.outputs.get(i).map_or(&[], |&r| self.name(r))
    }
}

/// C string pointers (names of a session's inputs or outputs).
pub(crate) type CPtrs = SmallVec<[*const c_char; 8]>;

/// Runs `session` on `inputs` (every input, in session order) into the
/// values `outputs` points to (every output, in session order) through
/// ONNX Runtime's C API, with the names made once: the wrapper's own run
/// converts every name and wraps the outputs on every call.
///
/// # Safety
/// Every pointer of `outputs` must point to a live ONNX Runtime value
/// whose memory may be written for the duration of the call.
unsafe fn run_named(
    session: &mut Session,
    names: &CNames,
    inputs: &[&DynValue],
    outputs: &mut [*mut ort::sys::OrtValue],
) -> Result<(), String> {
    if inputs.len() != names.inputs.len() || outputs.len() != names.outputs.len() {
        return Err("inputs or outputs do not match the session".into());
    }
    let (input_names, output_names) = names.pointers();
    let input_values: SmallVec<[*const ort::sys::OrtValue; 8]> =
        inputs.iter().map(|v| v.ptr()).collect();
    // SAFETY: the names and input values are borrowed for the call; the
    // outputs are the caller's promise.
    unsafe { run_c(session, input_names, &input_values, output_names, outputs) }
}

/// Makes `views` views of the caller's `outputs` (made or kept, see
/// [`convert::refresh_view`]) and `ptrs` those views as ONNX Runtime takes
/// them, so that a run writes into the memory of `outputs` without a
/// copy. Fails (both cleared) for an output that cannot be viewed.
fn view_outputs(
    outputs: &[(String, Tensor)],
    views: &mut Vec<Option<convert::HostView>>,
    ptrs: &mut SmallVec<[*mut ort::sys::OrtValue; 8]>,
    memory: &MemoryInfo<'_>,
) -> Result<(), String> {
    views.resize_with(outputs.len(), || None);
    ptrs.clear();
    for (view, (_, t)) in views.iter_mut().zip(outputs) {
        let made = convert::refresh_view(view, t, memory);
        match (made, view.as_mut()) {
            (Ok(true), Some(v)) => ptrs.push(v.value_mut().ptr_mut()),
            (made, _) => {
                views.clear();
                ptrs.clear();
                return Err(made
                    .err()
                    .unwrap_or_else(|| "an output cannot be viewed".into()));
            }
        }
    }
    Ok(())
}

/// ONNX Runtime's C API `Run` on `session`: input `i` is named
/// `input_names[i]` with value `inputs[i]`, output `j` `output_names[j]`
/// with value `outputs[j]` (not null: ONNX Runtime writes into it, and
/// fails when the output comes out with another shape).
///
/// # Safety
/// Every name must point to a NUL-terminated string and every value to a
/// live ONNX Runtime value, for the duration of the call.
pub(crate) unsafe fn run_c(
    session: &mut Session,
    input_names: &[*const c_char],
    inputs: &[*const ort::sys::OrtValue],
    output_names: &[*const c_char],
    outputs: &mut [*mut ort::sys::OrtValue],
) -> Result<(), String> {
    if input_names.len() != inputs.len() || output_names.len() != outputs.len() {
        return Err("as many names as values are needed".into());
    }
    // SAFETY: the caller's promise, and each array holds as many entries
    // as the length given with it.
    let status = unsafe {
        (ort::api().Run)(
            session.ptr_mut(),
            std::ptr::null(),
            input_names.as_ptr(),
            inputs.as_ptr(),
            inputs.len(),
            output_names.as_ptr(),
            output_names.len(),
            outputs.as_mut_ptr(),
        )
    };
    convert::status(status)
}

/// Runs `session` on the input values `inputs` (session order) into the
/// output views of `reuse` through its [`Binding`], made on first use,
/// binding the inputs and outputs first where the bound ones are stale.
///
/// # Safety
/// As for [`run_c`]: every value of `inputs` and `reuse.out_ptrs` must be
/// live, the outputs writable, for the duration of the call; and, while
/// the binding's flags are set, the bound values must be these.
unsafe fn run_binding(
    session: &mut Session,
    reuse: &mut Reuse,
    names: &CNames,
    inputs: &[*const ort::sys::OrtValue],
) -> Result<(), String> {
    if inputs.len() != names.input_ptrs.len() || reuse.out_ptrs.len() != names.output_ptrs.len() {
        return Err("inputs or outputs do not match the session".into());
    }
    let binding = match &mut reuse.binding {
        Some(b) => b,
        None => reuse.binding.insert(Binding::new(session)?),
    };
    if !binding.inputs {
        // SAFETY: the session's names, and live values (the caller's
        // promise); they stay bound only while the flag is set.
        unsafe { binding.bind_inputs(&names.input_ptrs, inputs) }?;
        binding.inputs = true;
    }
    if !binding.outputs {
        // SAFETY: as above.
        unsafe { binding.bind_outputs(&names.output_ptrs, &reuse.out_ptrs) }?;
        binding.outputs = true;
    }
    // SAFETY: the bound values are `inputs` and the output views (the
    // flags are set), live for the call.
    unsafe { binding.run(session) }
}

/// Copies the outputs of a run with preallocated outputs from their
/// buffers into `outputs` (as [`store_outputs`] does, without asking ONNX
/// Runtime for their types and shapes: they are the ones preallocated).
fn copy_preallocated(
    outputs: &mut Vec<(String, Tensor)>,
    names: &[SessionTensor],
    buffers: &[Preallocated],
) {
    for (i, (spec, b)) in names.iter().zip(buffers).enumerate() {
        if !matches!(outputs.get(i), Some((n, _)) if *n == spec.name) {
            outputs.truncate(i);
            outputs.push((
                spec.name.clone(),
                Tensor {
                    shape: Vec::new(),
                    data: TensorData::empty(b.dtype),
                },
            ));
        }
        let t = &mut outputs[i].1;
        if t.dtype() != b.dtype {
            t.data = TensorData::empty(b.dtype);
        }
        if t.shape != b.shape {
            t.shape.clone_from(&b.shape);
        }
        // SAFETY: the buffer holds `len` elements of `dtype` (a numeric
        // type: strings are never preallocated), written by the run that
        // just succeeded; it lives as long as the run options that own it.
        unsafe { convert::fill_from_raw(&mut t.data, b.addr as *const _, b.len) };
    }
    outputs.truncate(names.len().min(buffers.len()));
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

    /// [`Self::run_into`] when the last run went through the preallocated
    /// outputs and `inputs` are the very tensors it ran on (names in the
    /// same places; memory, size, element type and shape as viewed): they
    /// passed every check then, so ONNX Runtime is called at once with
    /// the kept views (through the session's [`Binding`] when the outputs
    /// are written in place, so that a run passes no names or values).
    /// Returns false (nothing done) in any other case, or
    /// when ONNX Runtime refuses the run: [`Self::run_into`] then takes
    /// its general path, which tells why.
    fn run_again<N: AsRef<str>, T: Borrow<Tensor>>(
        &mut self,
        inputs: &[(N, T)],
        outputs: &mut Vec<(String, Tensor)>,
    ) -> bool {
        let reuse = &mut self.reuse;
        let n = self.inputs.len();
        if !reuse.armed || inputs.len() != n || self.order.len() != n {
            return false;
        }
        let Some(names) = self.c_names.as_ref() else {
            return false;
        };
        // `order` is a permutation (set by a successful `order_into`), so
        // every input is used exactly once.
        let mut values: SmallVec<[*const ort::sys::OrtValue; 8]> = SmallVec::new();
        // (Names are compared with `names`, which ONNX Runtime reads anyway.)
        for (i, (view, &k)) in self.views.iter().zip(&self.order).enumerate() {
            let Some((name, t)) = inputs.get(k) else {
                return false;
            };
            let Some(v) = view else {
                return false;
            };
            if name.as_ref().as_bytes() != names.input(i) || !convert::is_view_of(view, t.borrow())
            {
                return false;
            }
            values.push(v.value().ptr());
        }
        // Into the caller's outputs when they are the tensors viewed last
        // time (or can be viewed now), else into the preallocated ones
        // (then copied).
        let in_place = reuse.outputs_viewed(names, outputs)
            || (reuse.outputs_fit(names, outputs)
                && reuse.view_outputs(outputs, &self.host_memory).is_ok());
        // SAFETY: the names live in `names`; the input values are the
        // views of `inputs`' memory (borrowed for the call); the output
        // values are views of the memory of `outputs` (borrowed mutably
        // for the call), or are owned by `reuse.values`.
        let ran = if in_place {
            unsafe { run_binding(&mut self.session, reuse, names, &values) }
        } else {
            unsafe {
                run_c(
                    &mut self.session,
                    &names.input_ptrs,
                    &values,
                    &names.output_ptrs,
                    &mut reuse.value_ptrs,
                )
            }
        };
        if ran.is_err() {
            reuse.disarm();
            return false;
        }
        if !in_place {
            copy_preallocated(outputs, &self.outputs, &reuse.buffers);
        }
        true
    }

    /// [`Self::run_into`] once the inputs are checked and `at(i)` gives
    /// the tensor of session input `i`.
    fn run_ordered<'t>(
        &mut self,
        at: impl Fn(usize) -> &'t Tensor,
        outputs: &mut Vec<(String, Tensor)>,
    ) -> Result<(), RunError> {
        let n = self.inputs.len();
        self.reuse.disarm();
        // Views of the caller's tensors (kept from the last run when the
        // tensors are the same), copies for BYTES.
        let mut owned: Vec<Option<DynValue>> = Vec::new();
        for i in 0..n {
            let t = at(i);
            let input_error = |message: String| RunError::Input {
                name: self.inputs[i].name.clone(),
                message,
            };
            if !convert::refresh_view(&mut self.views[i], t, &self.host_memory)
                .map_err(input_error)?
            {
                if owned.is_empty() {
                    owned.resize_with(n, || None);
                }
                owned[i] = convert::bytes_value(t).map_err(input_error)?;
            }
        }
        let mut refs: SmallVec<[&DynValue; 8]> = SmallVec::with_capacity(n);
        for (i, view) in self.views.iter().enumerate() {
            refs.push(match (view, owned.get(i).and_then(Option::as_ref)) {
                (_, Some(v)) => v,
                (Some(view), None) => view.value(),
                (None, None) => unreachable!("every input has a value"),
            });
        }
        let values = || -> SmallVec<[SessionInputValue<'_>; 8]> {
            refs.iter().map(|&v| SessionInputValue::from(v)).collect()
        };
        let output_names = &self.outputs;
        let session = &mut self.session;
        let reuse = &mut self.reuse;
        let c_names = self.c_names.as_ref();
        let cpu = self.device == Device::Cpu;
        let host_memory = &self.host_memory;
        let ran = catch_unwind(AssertUnwindSafe(|| -> Result<(), RunError> {
            let same = cpu && !reuse.off && reuse.same_shapes(n, &at);
            if same {
                if let (true, Some(names)) = (reuse.values.is_some(), c_names) {
                    // Outputs that have the preallocated layout already (a
                    // caller reusing its output vector) are written in
                    // place; the others are filled from the preallocated
                    // ones, and written in place from the next run on.
                    let done = if reuse.outputs_fit(names, outputs) {
                        reuse
                            .view_outputs(outputs, host_memory)
                            // SAFETY: the pointers are views of the memory of
                            // `outputs`, borrowed mutably for the call.
                            .and_then(|()| unsafe {
                                run_named(session, names, &refs, &mut reuse.out_ptrs)
                            })
                    } else {
                        // SAFETY: the pointers are the values owned by
                        // `reuse.values` (set: checked above).
                        unsafe { run_named(session, names, &refs, &mut reuse.value_ptrs) }
                            .map(|()| copy_preallocated(outputs, output_names, &reuse.buffers))
                    };
                    if done.is_ok() {
                        reuse.armed = true;
                        return Ok(());
                    }
                    // Another output shape (or a run-time error): the plain
                    // run below tells which.
                    let r = session.run(&values()[..]).map_err(|e| RunError::Ort {
                        message: e.to_string(),
                    });
                    if r.is_ok() {
                        reuse.off = true;
                        reuse.forget_outputs();
                    }
                    return store_outputs(outputs, output_names, r?);
                }
            }
            let result = session.run(&values()[..]).map_err(|e| RunError::Ort {
                message: e.to_string(),
            })?;
            store_outputs(outputs, output_names, result)?;
            if cpu && !reuse.off {
                if same {
                    reuse.repeats += 1;
                    if reuse.repeats >= 2 {
                        match preallocated(output_names, outputs) {
                            Some((mut values, buffers)) if c_names.is_some() => {
                                reuse.value_ptrs = values.iter_mut().map(|v| v.ptr_mut()).collect();
                                reuse.values = Some(values);
                                reuse.buffers = buffers;
                            }
                            // Strings cannot be preallocated (nor outputs
                            // of a session whose names are no C strings).
                            _ => reuse.off = true,
                        }
                    }
                } else {
                    reuse.remember(n, &at);
                }
            }
            Ok(())
        }));
        match ran {
            Ok(r) => r,
            Err(p) => Err(RunError::Ort {
                message: panic_text(p.as_ref()),
            }),
        }
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

    /// Runs a stateful model whose state inputs and outputs are kept in
    /// `state` (see [`BoundState`]): `inputs` are the other inputs; the
    /// outputs other than the state outputs are written into `outputs` as
    /// in [`Self::run_into`]; the state outputs replace the state for the
    /// next call, without a copy (and, on CUDA, without leaving the
    /// device). Untested on CUDA.
    pub fn run_bound(
        &mut self,
        inputs: &[(&str, &Tensor)],
        state: &mut BoundState,
        outputs: &mut Vec<(String, Tensor)>,
    ) -> Result<(), RunError> {
        self.reuse.disarm();
        state.check(self)?;
        let state_inputs: Vec<&str> = state.pairs.iter().map(|p| p.input.as_str()).collect();
        self.order_into(inputs, &state_inputs)?;
        // Host inputs are copied into ONNX Runtime values: a binding keeps
        // its inputs beyond the call, so it must own them.
        let mut host = Vec::with_capacity(self.order.len());
        for (i, &k) in self.order.iter().enumerate() {
            if let Some((_, t)) = inputs.get(k) {
                let v = convert::owned_value(t).map_err(|message| RunError::Input {
                    name: self.inputs[i].name.clone(),
                    message,
                })?;
                host.push((i, v));
            }
        }
        if state.binding.is_none() {
            let mut binding = self.session.create_binding().map_err(|e| RunError::Ort {
                message: e.to_string(),
            })?;
            let host_mem = memory_info(Device::Cpu).map_err(|message| RunError::Ort { message })?;
            let device_mem =
                memory_info(self.device).map_err(|message| RunError::Ort { message })?;
            for o in &self.outputs {
                let mem = if state.pairs.iter().any(|p| p.output == o.name) {
                    &device_mem
                } else {
                    &host_mem
                };
                binding
                    .bind_output_to_device(o.name.clone(), mem)
                    .map_err(|e| RunError::Output {
                        name: o.name.clone(),
                        message: e.to_string(),
                    })?;
            }
            state.binding = Some(binding);
        }
        let binding = state.binding.as_mut().expect("bound above");
        binding.clear_inputs();
        for (i, v) in &host {
            let name = &self.inputs[*i].name;
            binding
                .bind_input(name.clone(), v)
                .map_err(|e| RunError::Input {
                    name: name.clone(),
                    message: e.to_string(),
                })?;
        }
        for (p, v) in state.pairs.iter().zip(&state.values) {
            let v = v.as_ref().ok_or_else(|| RunError::State {
                name: p.input.clone(),
                message: "no value: set it before the first run".into(),
            })?;
            binding
                .bind_input(p.input.clone(), v)
                .map_err(|e| RunError::State {
                    name: p.input.clone(),
                    message: e.to_string(),
                })?;
        }
        let session = &mut self.session;
        let pairs = &state.pairs;
        let values = &mut state.values;
        let binding = &*binding;
        let ran = catch_unwind(AssertUnwindSafe(|| -> Result<(), RunError> {
            let result = session.run_binding(binding).map_err(|e| RunError::Ort {
                message: e.to_string(),
            })?;
            let mut n = 0;
            for (name, value) in result.into_iter() {
                if let Some(j) = pairs.iter().position(|p| p.output == name) {
                    values[j] = Some(value);
                } else {
                    store_output(outputs, n, name, &value)?;
                    n += 1;
                }
            }
            outputs.truncate(n);
            Ok(())
        }));
        // The host copies are dropped here; the state values stay.
        let r = match ran {
            Ok(r) => r,
            Err(p) => Err(RunError::Ort {
                message: panic_text(p.as_ref()),
            }),
        };
        if let Some(b) = state.binding.as_mut() {
            b.clear_inputs();
        }
        r
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

/// Where ONNX Runtime should put values for `device`.
fn memory_info(device: Device) -> Result<MemoryInfo<'static>, String> {
    match device {
        Device::Cpu => MemoryInfo::new(
            AllocationDevice::CPU,
            0,
            AllocatorType::Device,
            MemoryType::Default,
        ),
        // Untested here.
        Device::Cuda(n) => MemoryInfo::new(
            AllocationDevice::CUDA,
            n as i32,
            AllocatorType::Device,
            MemoryType::Default,
        ),
    }
    .map_err(|e| e.to_string())
}

/// A host copy of a tensor in device memory (ONNX Runtime copies it with
/// a one-node session of its own). Used on CUDA only (untested there; the
/// CPU-to-CPU copy is tested).
fn copy_to_host(v: &DynValue) -> Result<Tensor, String> {
    let t = v
        .view()
        .downcast::<ort::value::DynTensorValueType>()
        .map_err(|e| e.to_string())?;
    let host = t.to(AllocationDevice::CPU, 0).map_err(|e| e.to_string())?;
    convert::to_tensor(&host.into_dyn())
}

/// One state input/output pair of a [`BoundState`].
#[derive(Debug, Clone, PartialEq, Eq)]
struct StatePair {
    input: String,
    output: String,
}

/// The state of a stateful model between [`ModelSession::run_bound`]
/// calls: for each (state input, state output) pair, the value the next
/// call feeds to the input, kept as an ONNX Runtime value where the
/// session's device keeps it (device memory on CUDA).
///
/// Set every state before the first run ([`Self::set`], a copy from the
/// host); after each run the state outputs take their place. [`Self::get`]
/// copies a state back to the host (for example to reset the rows of
/// sequences that ended, then [`Self::set`] it again). A `BoundState`
/// belongs to the session it first ran with.
pub struct BoundState {
    pairs: Vec<StatePair>,
    values: Vec<Option<DynValue>>,
    binding: Option<IoBinding>,
    checked: Option<PathBuf>,
}

impl std::fmt::Debug for BoundState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BoundState")
            .field("pairs", &self.pairs)
            .field(
                "set",
                &self.values.iter().map(Option::is_some).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl BoundState {
    /// State for `(input, output)` pairs: each call's `output` is fed to
    /// `input` on the next call.
    pub fn new(pairs: &[(&str, &str)]) -> BoundState {
        BoundState {
            pairs: pairs
                .iter()
                .map(|(i, o)| StatePair {
                    input: i.to_string(),
                    output: o.to_string(),
                })
                .collect(),
            values: pairs.iter().map(|_| None).collect(),
            binding: None,
            checked: None,
        }
    }

    fn index(&self, input: &str) -> Result<usize, RunError> {
        self.pairs
            .iter()
            .position(|p| p.input == input)
            .ok_or_else(|| RunError::State {
                name: input.to_string(),
                message: "not a state input".into(),
            })
    }

    /// Sets the state that feeds `input` on the next run (a copy of `t`;
    /// ONNX Runtime moves it to the device).
    pub fn set(&mut self, input: &str, t: &Tensor) -> Result<(), RunError> {
        let j = self.index(input)?;
        let v = convert::owned_value(t).map_err(|message| RunError::State {
            name: input.to_string(),
            message,
        })?;
        self.values[j] = Some(v);
        Ok(())
    }

    /// A host copy of the state that feeds `input` (`None` before it is
    /// set). Copies from the device on CUDA (untested).
    pub fn get(&self, input: &str) -> Result<Option<Tensor>, RunError> {
        let j = self.index(input)?;
        let Some(v) = &self.values[j] else {
            return Ok(None);
        };
        let on_host = v
            .view()
            .downcast::<ort::value::DynTensorValueType>()
            .map(|t| t.memory_info().is_cpu_accessible())
            .unwrap_or(false);
        let read = if on_host {
            convert::to_tensor(v)
        } else {
            copy_to_host(v)
        };
        read.map(Some).map_err(|message| RunError::State {
            name: input.to_string(),
            message,
        })
    }

    /// Checks the pairs against the session (once).
    fn check(&mut self, s: &ModelSession) -> Result<(), RunError> {
        if self.checked.as_deref() == Some(s.model.as_path()) {
            return Ok(());
        }
        for p in &self.pairs {
            let input = s.inputs.iter().find(|t| t.name == p.input);
            let output = s.outputs.iter().find(|t| t.name == p.output);
            let Some(input) = input else {
                return Err(RunError::State {
                    name: p.input.clone(),
                    message: "the model has no such input".into(),
                });
            };
            let Some(output) = output else {
                return Err(RunError::State {
                    name: p.input.clone(),
                    message: format!("the model has no output '{}'", p.output),
                });
            };
            if input.elem_type != output.elem_type {
                return Err(RunError::State {
                    name: p.input.clone(),
                    message: format!(
                        "its type {} differs from the type {} of output '{}'",
                        onnx_type_name(input.elem_type),
                        onnx_type_name(output.elem_type),
                        p.output
                    ),
                });
            }
        }
        self.checked = Some(s.model.clone());
        self.binding = None;
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::tensor::TensorData;

    /// True when ONNX Runtime is there; otherwise says so and skips, unless
    /// `TRITONCTL_REQUIRE_ORT=1`, which makes its absence a failure.
    pub(crate) fn have_ort() -> bool {
        match super::super::probe() {
            Ok(_) => true,
            Err(e) => {
                if std::env::var_os("TRITONCTL_REQUIRE_ORT").is_some_and(|v| v == "1") {
                    panic!("TRITONCTL_REQUIRE_ORT=1 but ONNX Runtime is not available: {e}");
                }
                eprintln!("skipped: ONNX Runtime is not available: {e}");
                false
            }
        }
    }

    pub(crate) fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("testdata/onnx")
            .join(name)
    }

    #[test]
    fn on_cuda_onnx_runtime_prefers_the_cuda_execution_provider_to_the_cpu_one() {
        // ONNX Runtime gives each node to the first provider that can run
        // it: with the CPU one first, a CUDA session would run on the CPU.
        let names = |device| {
            let options = SessionOptions {
                device,
                ..SessionOptions::default()
            };
            execution_providers(&options)
                .iter()
                .map(|ep| ep.name())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names(Device::Cuda(1)),
            ["CUDAExecutionProvider", "CPUExecutionProvider"]
        );
        assert_eq!(names(Device::Cpu), ["CPUExecutionProvider"]);
    }

    fn open(name: &str) -> ModelSession {
        ModelSession::open(&fixture(name), &SessionOptions::default())
            .unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    fn t(shape: &[i64], data: TensorData) -> Tensor {
        Tensor::new(shape.to_vec(), data).unwrap()
    }

    /// A [3, 2] tensor of distinctive values of every data type.
    fn sample(d: DataType) -> Tensor {
        let data = match d {
            DataType::Bool => TensorData::Bool(vec![true, false, false, true, true, true]),
            DataType::U8 => TensorData::U8(vec![0, 1, 127, 128, 254, 255]),
            DataType::U16 => TensorData::U16(vec![0, 1, 300, 40000, 65534, 65535]),
            DataType::U32 => TensorData::U32(vec![0, 1, 70000, 1 << 31, u32::MAX - 1, u32::MAX]),
            DataType::U64 => TensorData::U64(vec![0, 1, 1 << 40, 1 << 63, u64::MAX - 1, u64::MAX]),
            DataType::I8 => TensorData::I8(vec![i8::MIN, -1, 0, 1, 100, i8::MAX]),
            DataType::I16 => TensorData::I16(vec![i16::MIN, -300, 0, 1, 300, i16::MAX]),
            DataType::I32 => TensorData::I32(vec![i32::MIN, -70000, 0, 1, 70000, i32::MAX]),
            DataType::I64 => TensorData::I64(vec![i64::MIN, -(1 << 40), 0, 1, 1 << 40, i64::MAX]),
            // 1.0, -2.0, max finite, smallest subnormal, -0.0, +inf.
            DataType::F16 => TensorData::F16(vec![0x3C00, 0xC000, 0x7BFF, 0x0001, 0x8000, 0x7C00]),
            DataType::F32 => {
                TensorData::F32(vec![1.5, -2.25, f32::MAX, f32::MIN_POSITIVE, -0.0, 1e-30])
            }
            DataType::F64 => {
                TensorData::F64(vec![1.5, -2.25, f64::MAX, f64::MIN_POSITIVE, -0.0, 1e-300])
            }
            DataType::Bf16 => {
                TensorData::Bf16(vec![0x3F80, 0xC000, 0x7F7F, 0x0001, 0x8000, 0x7F80])
            }
            DataType::Bytes => TensorData::Bytes(vec![
                Vec::new(),
                b"a".to_vec(),
                b"\0nul\0inside".to_vec(),
                vec![0xff, 0xfe, 0x00, 0x80],
                "unicod\u{e9}".as_bytes().to_vec(),
                vec![b'x'; 1000],
            ]),
        };
        t(&[3, 2], data)
    }

    fn onnx_name(d: DataType) -> &'static str {
        match d {
            DataType::Bool => "BOOL",
            DataType::U8 => "UINT8",
            DataType::U16 => "UINT16",
            DataType::U32 => "UINT32",
            DataType::U64 => "UINT64",
            DataType::I8 => "INT8",
            DataType::I16 => "INT16",
            DataType::I32 => "INT32",
            DataType::I64 => "INT64",
            DataType::F16 => "FLOAT16",
            DataType::F32 => "FLOAT",
            DataType::F64 => "DOUBLE",
            DataType::Bf16 => "BFLOAT16",
            DataType::Bytes => "STRING",
        }
    }

    #[test]
    fn every_data_type_goes_through_an_identity_model_unchanged() {
        if !have_ort() {
            return;
        }
        let mut s = open("all_types.onnx");
        assert_eq!(s.inputs().len(), DataType::ALL.len());
        let names: Vec<String> = DataType::ALL
            .iter()
            .map(|d| format!("IN_{}", onnx_name(*d)))
            .collect();
        let tensors: Vec<Tensor> = DataType::ALL.iter().map(|d| sample(*d)).collect();
        for (name, d) in names.iter().zip(DataType::ALL) {
            let spec = s.inputs().iter().find(|i| &i.name == name).unwrap();
            assert_eq!(spec.data_type(), Some(d), "{name}");
        }
        let inputs: Vec<(&str, &Tensor)> = names
            .iter()
            .map(String::as_str)
            .zip(tensors.iter())
            .collect();
        let out = s.run(&inputs).unwrap();
        let out_names: Vec<&str> = out.iter().map(|(n, _)| n.as_str()).collect();
        let want_names: Vec<&str> = s.outputs().iter().map(|o| o.name.as_str()).collect();
        assert_eq!(out_names, want_names);
        for (d, t) in DataType::ALL.iter().zip(&tensors) {
            let name = format!("OUT_{}", onnx_name(*d));
            let (_, got) = out.iter().find(|(n, _)| *n == name).unwrap();
            assert_eq!(got, t, "{name}");
        }

        // Again into the same buffers: same values, and the output vectors
        // are refilled in place (no new allocation).
        let mut again = out.clone();
        let before: Vec<usize> = again.iter().map(|(_, t)| data_ptr(&t.data)).collect();
        s.run_into(&inputs, &mut again).unwrap();
        assert_eq!(again, out);
        let after: Vec<usize> = again.iter().map(|(_, t)| data_ptr(&t.data)).collect();
        assert_eq!(before, after);

        // Zero rows are fine too.
        let empty: Vec<Tensor> = DataType::ALL
            .iter()
            .map(|d| Tensor::zeros(*d, vec![0, 2]).unwrap())
            .collect();
        let inputs: Vec<(&str, &Tensor)> =
            names.iter().map(String::as_str).zip(empty.iter()).collect();
        let out = s.run(&inputs).unwrap();
        for (_, t) in &out {
            assert_eq!(t.shape, vec![0, 2]);
            assert!(t.data.is_empty());
        }
    }

    fn data_ptr(d: &TensorData) -> usize {
        match d {
            TensorData::Bool(v) => v.as_ptr() as usize,
            TensorData::U8(v) => v.as_ptr() as usize,
            TensorData::U16(v) | TensorData::F16(v) | TensorData::Bf16(v) => v.as_ptr() as usize,
            TensorData::U32(v) => v.as_ptr() as usize,
            TensorData::U64(v) => v.as_ptr() as usize,
            TensorData::I8(v) => v.as_ptr() as usize,
            TensorData::I16(v) => v.as_ptr() as usize,
            TensorData::I32(v) => v.as_ptr() as usize,
            TensorData::I64(v) => v.as_ptr() as usize,
            TensorData::F32(v) => v.as_ptr() as usize,
            TensorData::F64(v) => v.as_ptr() as usize,
            TensorData::Bytes(v) => v.as_ptr() as usize,
        }
    }

    #[test]
    fn a_model_computes() {
        if !have_ort() {
            return;
        }
        // Y = X + W with W = [1, 1, 1] (an initializer).
        let mut s = open("init_input_ir8.onnx");
        assert_eq!(s.device(), Device::Cpu);
        assert_eq!(s.inputs()[0].dims, vec![-1, 3]);
        let x = t(
            &[2, 3],
            TensorData::F32(vec![1.0, 2.0, 3.0, -4.0, 0.5, 0.0]),
        );
        let out = s.run(&[("X", &x)]).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].0, "Y");
        assert_eq!(
            out[0].1,
            t(
                &[2, 3],
                TensorData::F32(vec![2.0, 3.0, 4.0, -3.0, 1.5, 1.0])
            )
        );
    }

    #[test]
    fn bad_inputs_name_the_tensor() {
        if !have_ort() {
            return;
        }
        let mut s = open("init_input_ir8.onnx");
        let good = t(&[1, 3], TensorData::F32(vec![0.0; 3]));
        let err = |inputs: &[(&str, &Tensor)], s: &mut ModelSession| s.run(inputs).unwrap_err();

        let e = err(&[("X", &good), ("Z", &good)], &mut s);
        assert!(
            matches!(&e, RunError::UnknownInput { name, .. } if name == "Z"),
            "{e}"
        );
        assert_eq!(e.to_string(), "unknown input 'Z' (the model's inputs: X)");

        let e = err(&[], &mut s);
        assert_eq!(e.to_string(), "input 'X' is missing");

        let e = err(&[("X", &good), ("X", &good)], &mut s);
        assert_eq!(e.to_string(), "input 'X' is given twice");

        let ints = t(&[1, 3], TensorData::I32(vec![0; 3]));
        let e = err(&[("X", &ints)], &mut s);
        assert_eq!(
            e.to_string(),
            "input 'X': data type INT32 does not match the model's FP32"
        );

        let rank3 = t(&[1, 3, 1], TensorData::F32(vec![0.0; 3]));
        let e = err(&[("X", &rank3)], &mut s);
        assert!(
            matches!(&e, RunError::Shape { name, .. } if name == "X"),
            "{e}"
        );
        assert!(e.to_string().contains("[1, 3, 1]"), "{e}");

        let wide = t(&[1, 4], TensorData::F32(vec![0.0; 4]));
        let e = err(&[("X", &wide)], &mut s);
        assert!(
            e.to_string()
                .starts_with("input 'X': shape [1, 4] does not match the model's [-1, 3]"),
            "{e}"
        );

        let short = Tensor {
            shape: vec![2, 3],
            data: TensorData::F32(vec![0.0; 5]),
        };
        let e = err(&[("X", &short)], &mut s);
        assert_eq!(
            e.to_string(),
            "input 'X': shape [2, 3] holds 6 elements but the tensor has 5"
        );

        // The session still works after refusing inputs.
        assert!(s.run(&[("X", &good)]).is_ok());
    }

    /// Writes a hand-made model into a temporary directory.
    pub(crate) fn write_model(bytes: &[u8]) -> (tempfile::TempDir, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("model.onnx");
        std::fs::write(&p, bytes).unwrap();
        (d, p)
    }

    /// A session on the model `bytes` (written to a directory that lives
    /// as long as the returned guard).
    fn open_bytes(bytes: &[u8]) -> (tempfile::TempDir, ModelSession) {
        let (d, path) = write_model(bytes);
        let s = ModelSession::open(&path, &SessionOptions::default()).unwrap();
        (d, s)
    }

    #[test]
    fn onnx_runtime_errors_carry_its_message() {
        if !have_ort() {
            return;
        }
        // No declared shapes: ONNX Runtime is the one to refuse
        // mismatched inner dims.
        let (_d, mut s) = open_bytes(&super::super::testmodel::matmul_unknown_shapes());
        assert!(s.inputs()[0].dims.is_empty());
        let a = t(&[2, 3], TensorData::F32(vec![1.0; 6]));
        let b = t(&[4, 5], TensorData::F32(vec![1.0; 20]));
        let e = s.run(&[("A", &a), ("B", &b)]).unwrap_err();
        assert!(matches!(e, RunError::Ort { .. }), "{e}");
        assert!(e.to_string().contains("MatMul"), "{e}");
        // And it still runs good inputs.
        let b = t(&[3, 1], TensorData::F32(vec![1.0, 2.0, 3.0]));
        let out = s.run(&[("A", &a), ("B", &b)]).unwrap();
        assert_eq!(out[0].1, t(&[2, 1], TensorData::F32(vec![6.0, 6.0])));
    }

    #[test]
    fn preallocated_outputs_give_the_same_results_and_fall_back_when_shapes_change() {
        if !have_ort() {
            return;
        }
        // Outputs are preallocated from the third run with the same input
        // shapes on; every run must give what a fresh session gives.
        let (_d, mut s) = open_bytes(&super::super::testmodel::accumulate());
        let mut state = Tensor::zeros(DataType::F32, vec![2, 1]).unwrap();
        let keep = t(&[2, 1], TensorData::Bool(vec![false, false]));
        let mut out = Vec::new();
        let mut expected = [0f32, 0.0];
        for step in 0..6 {
            let v = step as f32;
            let x = t(
                &[2, 4],
                TensorData::F32(vec![v, v, v, v, 1.0, 1.0, 1.0, 1.0]),
            );
            s.run_into(
                &[("INPUT", &x), ("STATE_IN", &state), ("RESET", &keep)],
                &mut out,
            )
            .unwrap();
            expected[0] += 4.0 * v;
            expected[1] += 4.0;
            assert_eq!(
                out[0].1,
                t(&[2, 1], TensorData::F32(expected.to_vec())),
                "step {step}"
            );
            state = out[1].1.clone();
        }
        assert!(s.reuse.values.is_some(), "outputs are preallocated by now");

        // NonZero: the output's shape depends on the values. The same input
        // shape with another count of nonzero values must still be right,
        // and reuse is turned off for the session.
        let (_d2, mut s) = open_bytes(&super::super::testmodel::nonzero());
        let x = |v: Vec<i64>| t(&[4], TensorData::I64(v));
        for _ in 0..3 {
            s.run_into(&[("X", &x(vec![0, 5, 0, 7]))], &mut out)
                .unwrap();
            assert_eq!(out[0].1, t(&[1, 2], TensorData::I64(vec![1, 3])));
        }
        assert!(s.reuse.values.is_some());
        s.run_into(&[("X", &x(vec![1, 5, 0, 7]))], &mut out)
            .unwrap();
        assert_eq!(out[0].1, t(&[1, 3], TensorData::I64(vec![0, 1, 3])));
        assert!(s.reuse.off && s.reuse.values.is_none());
        s.run_into(&[("X", &x(vec![0, 0, 0, 2]))], &mut out)
            .unwrap();
        assert_eq!(out[0].1, t(&[1, 1], TensorData::I64(vec![3])));
    }

    #[test]
    fn c_names_hold_every_name_once_nul_terminated_in_one_buffer() {
        let st = |name: &str| SessionTensor {
            name: name.to_string(),
            is_tensor: true,
            elem_type: 1,
            dims: Vec::new(),
            symbols: Vec::new(),
        };
        let ins = [st("INPUT"), st(""), st("état_in")];
        let outs = [st("OUTPUT"), st("STATE_OUT")];
        let c = CNames::new(&ins, &outs).unwrap();
        let (ip, op) = c.pointers();
        assert_eq!((ip.len(), op.len()), (3, 2));
        for (i, t) in ins.iter().enumerate() {
            assert_eq!(c.input(i), t.name.as_bytes());
            // SAFETY: the pointers point to NUL-terminated names in `c`.
            let read = unsafe { std::ffi::CStr::from_ptr(ip[i]) };
            assert_eq!(read.to_bytes(), t.name.as_bytes());
        }
        for (i, t) in outs.iter().enumerate() {
            assert_eq!(c.output(i), t.name.as_bytes());
            // SAFETY: as above.
            let read = unsafe { std::ffi::CStr::from_ptr(op[i]) };
            assert_eq!(read.to_bytes(), t.name.as_bytes());
        }
        assert_eq!((c.input(3), c.output(2)), (&[][..], &[][..]));
        let total: usize = ins.iter().chain(&outs).map(|t| t.name.len() + 1).sum();
        assert_eq!(c.buf.len(), total, "one buffer, no gaps");
        assert!(CNames::new(&[st("A\0B")], &outs).is_none());
        assert!(CNames::new(&ins, &[st("\0")]).is_none());
    }

    /// Two rows of the accumulate test model's input (row sums 10 and 2).
    fn accumulate_input() -> Tensor {
        t(
            &[2, 4],
            TensorData::F32(vec![1.0, 2.0, 3.0, 4.0, 0.5, 0.5, 0.5, 0.5]),
        )
    }

    #[test]
    fn outputs_are_written_in_place_into_an_output_vector_the_caller_reuses() {
        if !have_ort() {
            return;
        }
        let (_d, mut s) = open_bytes(&super::super::testmodel::accumulate());
        let x = accumulate_input();
        let state = t(&[2, 1], TensorData::F32(vec![10.0, 20.0]));
        let keep = t(&[2, 1], TensorData::Bool(vec![false, false]));
        let inputs = [("INPUT", &x), ("STATE_IN", &state), ("RESET", &keep)];
        let want = t(&[2, 1], TensorData::F32(vec![20.0, 22.0]));
        let data_ptr = |o: &Vec<(String, Tensor)>| match &o[0].1.data {
            TensorData::F32(v) => v.as_ptr(),
            other => panic!("{other:?}"),
        };
        let mut out = Vec::new();
        let mut seen = Vec::new();
        for step in 0..6 {
            s.run_into(&inputs, &mut out).unwrap();
            assert_eq!(out[0].1, want, "step {step}");
            assert_eq!(out[1].1, want, "step {step}");
            seen.push(data_ptr(&out));
        }
        // From the fourth run on ONNX Runtime writes into the caller's
        // tensors: their memory stays where it is.
        assert!(
            s.reuse.outputs_viewed(s.c_names.as_ref().unwrap(), &out),
            "written in place"
        );
        assert!(seen[3..].iter().all(|&p| p == seen[3]), "{seen:?}");
        // Another output vector (here a new one, then the first again
        // with one tensor replaced) gets the right values too.
        let mut other = Vec::new();
        for _ in 0..2 {
            s.run_into(&inputs, &mut other).unwrap();
            assert_eq!(other[0].1, want);
            s.run_into(&inputs, &mut out).unwrap();
            assert_eq!(out[0].1, want);
            assert_eq!(out[1].1, want);
        }
        out[1].1 = t(&[2, 1], TensorData::F32(vec![-1.0, -1.0]));
        s.run_into(&inputs, &mut out).unwrap();
        assert_eq!(out[1].1, want);
        s.run_into(&inputs, &mut out).unwrap();
        assert_eq!(out[1].1, want);
        assert!(s.reuse.outputs_viewed(s.c_names.as_ref().unwrap(), &out));
        // A caller that gives a new vector every time (`run`) as well.
        for _ in 0..3 {
            let o = s.run(&inputs).unwrap();
            assert_eq!(o[0].1, want);
        }
    }

    #[test]
    fn the_accumulate_model_keeps_a_running_sum() {
        if !have_ort() {
            return;
        }
        let (_d, mut s) = open_bytes(&super::super::testmodel::accumulate());
        let x = accumulate_input();
        let mut state = BoundState::new(&[("STATE_IN", "STATE_OUT")]);
        state
            .set(
                "STATE_IN",
                &Tensor::zeros(DataType::F32, vec![2, 1]).unwrap(),
            )
            .unwrap();
        let keep = t(&[2, 1], TensorData::Bool(vec![false, false]));
        let reset_second = t(&[2, 1], TensorData::Bool(vec![false, true]));
        let mut out = Vec::new();
        for _ in 0..3 {
            s.run_bound(&[("INPUT", &x), ("RESET", &keep)], &mut state, &mut out)
                .unwrap();
        }
        assert_eq!(out.len(), 1);
        assert_eq!(
            out[0],
            (
                "OUTPUT".to_string(),
                t(&[2, 1], TensorData::F32(vec![30.0, 6.0]))
            )
        );
        s.run_bound(
            &[("INPUT", &x), ("RESET", &reset_second)],
            &mut state,
            &mut out,
        )
        .unwrap();
        assert_eq!(out[0].1, t(&[2, 1], TensorData::F32(vec![40.0, 2.0])));
        // The same with host state through `run`.
        let st = state.get("STATE_IN").unwrap().unwrap();
        let r = s
            .run(&[("INPUT", &x), ("STATE_IN", &st), ("RESET", &keep)])
            .unwrap();
        assert_eq!(r[0].1, t(&[2, 1], TensorData::F32(vec![50.0, 4.0])));
        assert_eq!(r[1].0, "STATE_OUT");
        assert_eq!(r[1].1, r[0].1);
    }

    #[test]
    fn inputs_in_any_order_and_after_a_refused_call_are_matched_by_name() {
        // run_into keeps the order of the last call's inputs; a call with
        // them in another order, a refused call and a call after it must
        // still pair every tensor with its own input.
        if !have_ort() {
            return;
        }
        let (_d, mut s) = open_bytes(&super::super::testmodel::accumulate());
        let x = t(&[1, 4], TensorData::F32(vec![1.0, 2.0, 3.0, 4.0]));
        let state = t(&[1, 1], TensorData::F32(vec![100.0]));
        let keep = t(&[1, 1], TensorData::Bool(vec![false]));
        let want = t(&[1, 1], TensorData::F32(vec![110.0]));
        let mut out = Vec::new();
        for _ in 0..4 {
            s.run_into(
                &[("INPUT", &x), ("STATE_IN", &state), ("RESET", &keep)],
                &mut out,
            )
            .unwrap();
            assert_eq!(out[0].1, want);
        }
        s.run_into(
            &[("RESET", &keep), ("INPUT", &x), ("STATE_IN", &state)],
            &mut out,
        )
        .unwrap();
        assert_eq!(out[0].1, want);
        let bad = s.run_into(&[("RESET", &keep), ("INPUT", &x), ("INPUT", &x)], &mut out);
        assert!(
            matches!(bad, Err(RunError::DuplicateInput { .. })),
            "{bad:?}"
        );
        let bad = s.run_into(&[("INPUT", &x), ("RESET", &keep)], &mut out);
        assert!(
            matches!(&bad, Err(RunError::MissingInput { name }) if name == "STATE_IN"),
            "{bad:?}"
        );
        // Owned pairs, as the runner passes them.
        let owned = vec![
            ("STATE_IN".to_string(), state.clone()),
            ("RESET".to_string(), keep.clone()),
            ("INPUT".to_string(), x.clone()),
        ];
        s.run_into(&owned, &mut out).unwrap();
        assert_eq!(out[0].1, want);
        assert_eq!(out[1], ("STATE_OUT".to_string(), want.clone()));
    }

    #[test]
    fn runs_on_the_same_tensors_go_straight_to_onnx_runtime_and_stay_right() {
        // From the fourth run on the same tensors, `run_again` calls ONNX
        // Runtime at once; values changed in place, inputs in another
        // order and other tensors must all still give the right sums.
        if !have_ort() {
            return;
        }
        let (_d, mut s) = open_bytes(&super::super::testmodel::accumulate());
        let mut x = t(&[1, 4], TensorData::F32(vec![1.0, 2.0, 3.0, 4.0]));
        let state = t(&[1, 1], TensorData::F32(vec![100.0]));
        let keep = t(&[1, 1], TensorData::Bool(vec![false]));
        // The inputs of a run in the session's order, `x` as INPUT.
        fn feed<'a>(
            x: &'a Tensor,
            state: &'a Tensor,
            keep: &'a Tensor,
        ) -> [(&'a str, &'a Tensor); 3] {
            [("INPUT", x), ("STATE_IN", state), ("RESET", keep)]
        }
        let mut out = Vec::new();
        for _ in 0..3 {
            s.run_into(&feed(&x, &state, &keep), &mut out).unwrap();
        }
        assert!(
            s.reuse.armed,
            "the third run went through the preallocated outputs"
        );
        let sum = |out: &[(String, Tensor)]| out[0].1.clone();
        // New values in the same memory.
        if let TensorData::F32(v) = &mut x.data {
            v[0] = 11.0;
        }
        assert!(s.run_again(&feed(&x, &state, &keep), &mut out));
        assert_eq!(sum(&out), t(&[1, 1], TensorData::F32(vec![120.0])));
        // Another tensor (other memory) with the same shape.
        let mut y = t(&[1, 4], TensorData::F32(vec![0.5; 4]));
        assert!(!s.run_again(&feed(&y, &state, &keep), &mut out));
        s.run_into(&feed(&y, &state, &keep), &mut out).unwrap();
        assert_eq!(sum(&out), t(&[1, 1], TensorData::F32(vec![102.0])));
        // Runs on it go straight to ONNX Runtime again, reading its
        // memory (not that of the tensor bound before).
        if let TensorData::F32(v) = &mut y.data {
            v[0] = 2.5;
        }
        assert!(s.run_again(&feed(&y, &state, &keep), &mut out));
        assert_eq!(sum(&out), t(&[1, 1], TensorData::F32(vec![104.0])));
        // Another output vector of the same layout is written in place,
        // not the one bound before.
        let mut other = out.clone();
        if let TensorData::F32(v) = &mut y.data {
            v[0] = 4.5;
        }
        assert!(s.run_again(&feed(&y, &state, &keep), &mut other));
        assert_eq!(sum(&other), t(&[1, 1], TensorData::F32(vec![106.0])));
        assert_eq!(sum(&out), t(&[1, 1], TensorData::F32(vec![104.0])));
        // Another order of the same tensors: not the order the session
        // kept, so the general path matches them by name (and re-arms).
        s.run_into(
            &[("RESET", &keep), ("INPUT", &x), ("STATE_IN", &state)],
            &mut out,
        )
        .unwrap();
        assert_eq!(sum(&out), t(&[1, 1], TensorData::F32(vec![120.0])));
        // That order is kept now; a wrong name in its place is never run.
        assert!(s.run_again(
            &[("RESET", &keep), ("INPUT", &x), ("STATE_IN", &state)],
            &mut out
        ));
        assert!(!s.run_again(
            &[("RESET_", &keep), ("INPUT", &x), ("STATE_IN", &state)],
            &mut out
        ));
    }

    #[test]
    fn inputs_changed_in_place_after_a_run_are_checked_again() {
        // The views of the inputs and the preallocated outputs are kept
        // from call to call: an input whose shape, type or memory changed
        // is checked again, and after a refused call the shapes the
        // preallocated outputs were made for are not trusted.
        if !have_ort() {
            return;
        }
        let (_d, mut s) = open_bytes(&super::super::testmodel::accumulate());
        let mut x = t(&[1, 4], TensorData::F32(vec![1.0, 2.0, 3.0, 4.0]));
        let mut state = t(&[1, 1], TensorData::F32(vec![100.0]));
        let keep = t(&[1, 1], TensorData::Bool(vec![false]));
        let mut out = Vec::new();
        let mut run = |x: &Tensor, state: &Tensor, reset: &Tensor, out: &mut Vec<_>| {
            s.run_into(&[("INPUT", x), ("STATE_IN", state), ("RESET", reset)], out)?;
            Ok::<_, RunError>(s.reuse.off)
        };
        for _ in 0..4 {
            run(&x, &state, &keep, &mut out).unwrap();
            assert_eq!(out[0].1, t(&[1, 1], TensorData::F32(vec![110.0])));
        }
        // The same memory with another shape.
        x.shape = vec![4, 1];
        let bad = run(&x, &state, &keep, &mut out);
        assert!(
            matches!(&bad, Err(RunError::Shape { name, .. }) if name == "INPUT"),
            "{bad:?}"
        );
        x.shape = vec![1, 4];
        // Another type.
        let wrong = t(&[1, 1], TensorData::U8(vec![0]));
        let bad = run(&x, &state, &wrong, &mut out);
        assert!(
            matches!(&bad, Err(RunError::DataType { name, .. }) if name == "RESET"),
            "{bad:?}"
        );
        // Two rows for INPUT and STATE_IN with a RESET of the wrong type
        // are refused ...
        x = t(&[2, 4], TensorData::F32(vec![1.0; 8]));
        state = t(&[2, 1], TensorData::F32(vec![5.0, 6.0]));
        let wrong = t(&[2, 1], TensorData::U8(vec![0, 1]));
        let bad = run(&x, &state, &wrong, &mut out);
        assert!(
            matches!(&bad, Err(RunError::DataType { name, .. }) if name == "RESET"),
            "{bad:?}"
        );
        // ... and with the first RESET again (broadcast over the rows) they
        // run: the outputs preallocated for one row must not be used
        // (using them would fail and turn preallocation off).
        for _ in 0..3 {
            let off = run(&x, &state, &keep, &mut out).unwrap();
            assert_eq!(out[0].1, t(&[2, 1], TensorData::F32(vec![9.0, 10.0])));
            assert!(!off, "preallocated outputs of another shape were used");
        }
        // Back to one row: the outputs follow.
        x = t(&[1, 4], TensorData::F32(vec![1.0, 2.0, 3.0, 4.0]));
        state = t(&[1, 1], TensorData::F32(vec![100.0]));
        run(&x, &state, &keep, &mut out).unwrap();
        assert_eq!(out[0].1, t(&[1, 1], TensorData::F32(vec![110.0])));
    }

    #[test]
    fn models_tritonctl_cannot_feed_are_refused_at_open() {
        if !have_ort() {
            return;
        }
        let o = SessionOptions::default();
        let e = ModelSession::open(&fixture("sequence_output.onnx"), &o).unwrap_err();
        assert!(e.to_string().contains("output 'Y' is not a tensor"), "{e}");
        // ONNX Runtime refuses COMPLEX64 itself.
        let e = ModelSession::open(&fixture("complex64.onnx"), &o).unwrap_err();
        assert!(e.to_string().contains("complex64"), "{e}");
        // A corrupt file: ONNX Runtime's message.
        let d = tempfile::tempdir().unwrap();
        let junk = d.path().join("model.onnx");
        std::fs::write(&junk, b"this is not a protobuf").unwrap();
        let e = ModelSession::open(&junk, &o).unwrap_err();
        assert!(
            matches!(&e, SessionError::Load { model, .. } if *model == junk),
            "{e}"
        );
        assert!(!e.to_string().is_empty());
        let e = ModelSession::open(&d.path().join("missing.onnx"), &o).unwrap_err();
        assert!(matches!(e, SessionError::Load { .. }), "{e}");
    }

    #[test]
    fn bound_state_feeds_each_output_to_the_next_run() {
        if !have_ort() {
            return;
        }
        // Y = X + 1 with Y fed back to X: after k runs the state is k.
        let mut s = open("init_input_ir8.onnx");
        let mut state = BoundState::new(&[("X", "Y")]);
        assert_eq!(state.get("X"), Ok(None));
        let mut out = Vec::new();
        let e = s.run_bound(&[], &mut state, &mut out).unwrap_err();
        assert!(
            matches!(&e, RunError::State { name, .. } if name == "X"),
            "{e}"
        );
        state
            .set("X", &Tensor::zeros(DataType::F32, vec![2, 3]).unwrap())
            .unwrap();
        for _ in 0..5 {
            s.run_bound(&[], &mut state, &mut out).unwrap();
            assert!(out.is_empty(), "Y is a state output: {out:?}");
        }
        assert_eq!(
            state.get("X").unwrap().unwrap(),
            t(&[2, 3], TensorData::F32(vec![5.0; 6]))
        );
        // Resetting one row from the host, then going on.
        let mut x = state.get("X").unwrap().unwrap();
        if let TensorData::F32(v) = &mut x.data {
            v[..3].fill(0.0);
        }
        state.set("X", &x).unwrap();
        s.run_bound(&[], &mut state, &mut out).unwrap();
        assert_eq!(
            state.get("X").unwrap().unwrap(),
            t(&[2, 3], TensorData::F32(vec![1.0, 1.0, 1.0, 6.0, 6.0, 6.0]))
        );
        // Host inputs may not name a state input.
        let x = Tensor::zeros(DataType::F32, vec![2, 3]).unwrap();
        let e = s.run_bound(&[("X", &x)], &mut state, &mut out).unwrap_err();
        assert_eq!(e.to_string(), "input 'X' is given twice");
        assert!(state.set("Q", &x).is_err());

        let mut wrong = BoundState::new(&[("X", "NOPE")]);
        let e = s.run_bound(&[], &mut wrong, &mut out).unwrap_err();
        assert!(e.to_string().contains("no output 'NOPE'"), "{e}");
    }

    #[test]
    fn bound_state_passes_other_outputs_to_the_host() {
        if !have_ort() {
            return;
        }
        // Identity per type: BOOL's output feeds its input back; every
        // other input is given and comes back unchanged.
        let mut s = open("all_types.onnx");
        let mut state = BoundState::new(&[("IN_BOOL", "OUT_BOOL")]);
        state.set("IN_BOOL", &sample(DataType::Bool)).unwrap();
        let tensors: Vec<(String, Tensor)> = DataType::ALL[1..]
            .iter()
            .map(|d| (format!("IN_{}", onnx_name(*d)), sample(*d)))
            .collect();
        let inputs: Vec<(&str, &Tensor)> = tensors.iter().map(|(n, t)| (n.as_str(), t)).collect();
        let mut out = Vec::new();
        for _ in 0..3 {
            s.run_bound(&inputs, &mut state, &mut out).unwrap();
            assert_eq!(out.len(), DataType::ALL.len() - 1);
            for (name, got) in &out {
                let input = name.replace("OUT_", "IN_");
                let (_, want) = tensors.iter().find(|(n, _)| *n == input).unwrap();
                assert_eq!(got, want, "{name}");
            }
        }
        assert_eq!(
            state.get("IN_BOOL").unwrap().unwrap(),
            sample(DataType::Bool)
        );
    }

    #[test]
    fn the_device_to_host_copy_works_on_host_values() {
        if !have_ort() {
            return;
        }
        // The copy `BoundState::get` makes of CUDA values, tried on a CPU
        // value (the only device here).
        let mut state = BoundState::new(&[("X", "Y")]);
        let x = sample(DataType::F32);
        state.set("X", &x).unwrap();
        let v = state.values[0].as_ref().unwrap();
        assert_eq!(copy_to_host(v).unwrap(), x);
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
