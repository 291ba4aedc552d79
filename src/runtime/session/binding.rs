//! The C-level fast path of a session: the I/O [`Binding`] the repeated
//! runs go through, the NUL-terminated input and output names
//! ([`CNames`]), and the unsafe calls into ONNX Runtime's C API that use
//! them ([`run_c`] and the runs by name or by binding). Kept apart so the
//! unsafe code sits in one file, with its safety comments.

use ort::memory::MemoryInfo;
use ort::session::Session;
use ort::value::DynValue;
use ort::AsPointer;
use smallvec::SmallVec;
use std::ffi::c_char;

use super::Reuse;
use crate::runtime::convert;
use crate::runtime::SessionTensor;
use crate::tensor::Tensor;

/// An ONNX Runtime I/O binding for the runs that go straight to ONNX
/// Runtime ([`ModelSession::run_again`](super::ModelSession::run_again)): their input views and output
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
    pub(super) inputs: bool,
    pub(super) outputs: bool,
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

/// The names of a session's inputs and outputs as C strings, made once
/// for [`run_named`]: all in one buffer (ONNX Runtime reads every
/// name on every run; together they take a cache line or two instead of
/// one allocation each).
pub(crate) struct CNames {
    /// The input names then the output names, each followed by a NUL.
    pub(super) buf: Box<[u8]>,
    /// Where each name starts in `buf`, and its length (without the NUL).
    inputs: SmallVec<[(u32, u32); 8]>,
    pub(super) outputs: SmallVec<[(u32, u32); 8]>,
    /// Pointers to the names of `inputs` and `outputs` in `buf` (its heap
    /// buffer does not move).
    pub(super) input_ptrs: CPtrs,
    pub(super) output_ptrs: CPtrs,
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
    pub(super) fn input(&self, i: usize) -> &[u8] {
        self.inputs.get(i).map_or(&[], |&r| self.name(r))
    }

    /// The name of output `i` (session order), without its NUL.
    pub(super) fn output(&self, i: usize) -> &[u8] {
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
pub(super) unsafe fn run_named(
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
pub(super) fn view_outputs(
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
pub(super) unsafe fn run_binding(
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
