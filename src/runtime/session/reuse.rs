//! Output reuse: the preallocated outputs of [`ModelSession`] runs whose
//! input shapes repeat ([`Reuse`]), and the runs that use them
//! ([`ModelSession::run_ordered`], and [`ModelSession::run_again`], which
//! goes straight to ONNX Runtime when the inputs are the very tensors of
//! the last run). Kept apart from the session because this is the part
//! that trades clarity for speed: everything here is about not copying
//! or allocating.

use std::borrow::Borrow;
use std::panic::{catch_unwind, AssertUnwindSafe};

use ort::memory::Allocator;
use ort::memory::MemoryInfo;
use ort::session::SessionInputValue;
use ort::value::{DynTensor, DynValue};
use ort::AsPointer;
use smallvec::SmallVec;

use super::binding::{run_binding, run_named, view_outputs};
use super::{run_c, store_outputs, Binding, CNames, ModelSession, RunError};
use crate::runtime::convert;
use crate::runtime::device::Device;
use crate::runtime::{panic_text, SessionTensor};
use crate::tensor::{element_count, DataType, Tensor, TensorData};

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
pub(super) struct Reuse {
    /// The input shapes of the last run.
    shapes: Vec<Vec<i64>>,
    /// Runs in a row with those shapes.
    repeats: u32,
    /// Every output preallocated for those shapes (session order).
    pub(super) values: Option<Vec<DynTensor>>,
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
    pub(super) out_ptrs: SmallVec<[*mut ort::sys::OrtValue; 8]>,
    /// Set when the last run went through `values` and succeeded: its
    /// inputs are the ones viewed by `views`, so a run on the very same
    /// tensors can go straight to ONNX Runtime.
    pub(super) armed: bool,
    pub(super) off: bool,
    /// The values of those runs bound once (see [`Binding`]).
    pub(super) binding: Option<Binding>,
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
    pub(super) fn disarm(&mut self) {
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
    pub(super) fn outputs_viewed(&self, names: &CNames, outputs: &[(String, Tensor)]) -> bool {
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

impl ModelSession {
    /// [`Self::run_into`] when the last run went through the preallocated
    /// outputs and `inputs` are the very tensors it ran on (names in the
    /// same places; memory, size, element type and shape as viewed): they
    /// passed every check then, so ONNX Runtime is called at once with
    /// the kept views (through the session's [`Binding`] when the outputs
    /// are written in place, so that a run passes no names or values).
    /// Returns false (nothing done) in any other case, or
    /// when ONNX Runtime refuses the run: [`Self::run_into`] then takes
    /// its general path, which tells why.
    pub(super) fn run_again<N: AsRef<str>, T: Borrow<Tensor>>(
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
    pub(super) fn run_ordered<'t>(
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
}
