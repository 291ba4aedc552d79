//! A bare ONNX Runtime loop: the baseline for the runner's per-step
//! overhead (the target: `run --sequence` within 1.2x of this; see
//! `cargo bench --bench run` in CONTRIBUTING.md, "Benchmarks").
//!
//! [`bare_loop`] opens the model as [`ModelSession`] would (same options),
//! turns the given tensors into ONNX Runtime values once, before the clock
//! starts, and then only runs the session in a tight loop. One untimed run
//! tells the output shapes; the outputs are then preallocated once and
//! ONNX Runtime writes into them, and each fed-back state output is copied
//! into its input value (a few bytes for the accumulate model). When the
//! outputs cannot be preallocated (strings, or a state output of another
//! size than its input), output values are created per run and fed back by
//! moving them. The outputs are never copied out. This is what a
//! hand-written Rust program with preallocated tensors does; the gap
//! between it and the runner is the runner's own cost (checks,
//! conversions, copies out, scheduling). The loop calls ONNX Runtime
//! through the `ort` crate's `run_with_options`, as a program written with
//! the crate does; [`bare_loop_with`] with [`BareCall::CApi`] calls its
//! C API `Run` directly instead, with every name and value gathered once
//! (the crate's own run converts the names and wraps the outputs on every
//! call), and with [`BareCall::Binding`] its `RunWithBinding` on values
//! bound once, as the runner does once its inputs and outputs stay where
//! they are.
//!
//! ```no_run
//! use tritonctl::runtime::{bench, SessionOptions};
//! use tritonctl::tensor::{Tensor, TensorData};
//! # fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! let x = Tensor::new(vec![1, 4], TensorData::F32(vec![1.0; 4]))?;
//! let state = Tensor::new(vec![1, 1], TensorData::F32(vec![0.0]))?;
//! let stats = bench::bare_loop(
//!     "accumulate.onnx".as_ref(),
//!     &SessionOptions::default(),
//!     &[("INPUT", &x), ("STATE_IN", &state)],
//!     &[("STATE_OUT", "STATE_IN")],
//!     10_000,
//! )?;
//! println!("{:?} per step", stats.per_step());
//! # Ok(())
//! # }
//! ```

use std::time::{Duration, Instant};

use ort::memory::Allocator;
use ort::session::{OutputSelector, RunOptions, Session, SessionInputValue};
use ort::value::{DynTensor, DynTensorValueType, DynValue, ValueType};
use ort::AsPointer;

use super::convert;
use super::session::{run_c, Binding, CNames, ModelSession, RunError, SessionOptions};
use crate::tensor::{element_count, Tensor};

/// What a loop measured.
#[derive(Debug, Clone)]
pub struct LoopStats {
    pub steps: usize,
    /// Wall time of all steps (not the set-up).
    pub elapsed: Duration,
    /// The outputs of the last step, copied to the host after the clock
    /// stopped (to check the loop computed what it should).
    pub last_outputs: Vec<(String, Tensor)>,
}

impl LoopStats {
    pub fn per_step(&self) -> Duration {
        if self.steps == 0 {
            Duration::ZERO
        } else {
            self.elapsed / self.steps as u32
        }
    }
}

/// How the bare loop calls ONNX Runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BareCall {
    /// The `ort` crate's `Session::run_with_options` with the outputs
    /// preallocated in the run options: what a Rust program written with
    /// the crate does.
    Crate,
    /// ONNX Runtime's C API `Run` with every name, input value and
    /// preallocated output value gathered once before the loop: the
    /// least a program can do per step (the way `tritonctl run` calls it
    /// once its outputs are preallocated). Without preallocated outputs
    /// it is [`BareCall::Crate`].
    CApi,
    /// ONNX Runtime's C API `RunWithBinding`, every input value and
    /// preallocated output value bound once before the loop (no names or
    /// values are passed per step): the call `tritonctl run` makes once
    /// its inputs and outputs stay where they are. Without preallocated
    /// outputs it is [`BareCall::Crate`].
    Binding,
}

/// Runs `model` `steps` times with `inputs` (every model input, by name)
/// prepared once; `feedback` lists `(output, input)` pairs whose output
/// value replaces the input value for the next step.
pub fn bare_loop(
    model: &std::path::Path,
    options: &SessionOptions,
    inputs: &[(&str, &Tensor)],
    feedback: &[(&str, &str)],
    steps: usize,
) -> Result<LoopStats, Box<dyn std::error::Error + Send + Sync>> {
    bare_loop_with(model, options, inputs, feedback, steps, BareCall::Crate)
}

/// [`bare_loop`] calling ONNX Runtime as `call` says.
pub fn bare_loop_with(
    model: &std::path::Path,
    options: &SessionOptions,
    inputs: &[(&str, &Tensor)],
    feedback: &[(&str, &str)],
    steps: usize,
    call: BareCall,
) -> Result<LoopStats, Box<dyn std::error::Error + Send + Sync>> {
    let ms = ModelSession::open(model, options)?;
    // Validate and order the inputs exactly as the runner would.
    let names: Vec<String> = ms.inputs().iter().map(|t| t.name.clone()).collect();
    let outputs: Vec<String> = ms.outputs().iter().map(|t| t.name.clone()).collect();
    let mut values: Vec<Option<DynValue>> = Vec::new();
    values.resize_with(names.len(), || None);
    for (name, t) in inputs {
        let i = names
            .iter()
            .position(|n| n == name)
            .ok_or_else(|| RunError::UnknownInput {
                name: name.to_string(),
                known: names.clone(),
            })?;
        values[i] = Some(convert::owned_value(t).map_err(|message| RunError::Input {
            name: name.to_string(),
            message,
        })?);
    }
    let mut values: Vec<DynValue> = values
        .into_iter()
        .zip(&names)
        .map(|(v, n)| v.ok_or_else(|| RunError::MissingInput { name: n.clone() }))
        .collect::<Result<_, _>>()?;
    let mut routes = Vec::new();
    for (out, inp) in feedback {
        let o = outputs
            .iter()
            .position(|n| n == out)
            .ok_or_else(|| format!("feedback: the model has no output '{out}'"))?;
        let i = names
            .iter()
            .position(|n| n == inp)
            .ok_or_else(|| format!("feedback: the model has no input '{inp}'"))?;
        routes.push((o, i));
    }
    let c_names = CNames::new(ms.inputs(), ms.outputs());
    let mut session: Session = ms.into_session();
    // One untimed run tells the output shapes; when they allow it, every
    // output is preallocated once (ONNX Runtime writes into it) and a
    // fed-back output is copied into its input value, as a program with
    // preallocated tensors does. Otherwise output values are created per
    // run and fed back by moving them.
    let warm: Vec<DynValue> = {
        let refs: Vec<SessionInputValue<'_>> = values.iter().map(SessionInputValue::from).collect();
        session
            .run(&refs[..])?
            .into_iter()
            .map(|(_, v)| v)
            .collect()
    };
    let pre = preallocated(&outputs, &warm, &values, &routes);
    drop(warm);
    let mut sink = 0usize;
    let mut last: Vec<DynValue> = Vec::new();
    let mut start = Instant::now();
    if let Some(pre) = pre {
        // (output buffer, input buffer, bytes) per fed-back output.
        let copies: Vec<(*const u8, *mut u8, usize)> = pre
            .copies
            .iter()
            .filter_map(|&(src, i, n)| Some((src, host_ptr_mut(&mut values[i])?, n)))
            .collect();
        if call != BareCall::Crate {
            let c_names = c_names.ok_or("a name of the model holds a NUL byte")?;
            let (input_name_ptrs, output_name_ptrs) = c_names.pointers();
            let input_ptrs: Vec<*const ort::sys::OrtValue> =
                values.iter().map(|v| v.ptr()).collect();
            let mut outs: Vec<DynTensor> = pre.values;
            let mut output_ptrs: Vec<*mut ort::sys::OrtValue> =
                outs.iter_mut().map(|v| v.ptr_mut()).collect();
            let binding = match call {
                BareCall::Binding => {
                    let mut b = Binding::new(&mut session)?;
                    // SAFETY: the session's names; the input values and
                    // the preallocated output values outlive the binding
                    // (dropped before them, below).
                    unsafe {
                        b.bind_inputs(input_name_ptrs, &input_ptrs)?;
                        b.bind_outputs(output_name_ptrs, &output_ptrs)?;
                    }
                    Some(b)
                }
                _ => None,
            };
            start = Instant::now();
            for _ in 0..steps {
                match &binding {
                    // SAFETY: the bound values are live (see above).
                    Some(b) => unsafe { b.run(&mut session) }?,
                    // SAFETY: the names, input values and preallocated
                    // output values outlive the loop.
                    None => unsafe {
                        run_c(
                            &mut session,
                            input_name_ptrs,
                            &input_ptrs,
                            output_name_ptrs,
                            &mut output_ptrs,
                        )
                    }?,
                }
                for &(src, dst, n) in &copies {
                    // SAFETY: as in the loop below.
                    unsafe { std::ptr::copy_nonoverlapping(src, dst, n) };
                }
            }
            let elapsed = start.elapsed();
            drop(binding);
            let outs: Vec<DynValue> = outs.into_iter().map(DynTensor::into_dyn).collect();
            let last_outputs = finish_outputs(&outputs, &routes, &values, &outs)?;
            return Ok(LoopStats {
                steps,
                elapsed,
                last_outputs,
            });
        }
        let mut selector = OutputSelector::default();
        for (name, value) in outputs.iter().zip(pre.values) {
            selector = selector.preallocate(name.clone(), value);
        }
        let options = RunOptions::new()?.with_outputs(selector);
        start = Instant::now();
        for step in 0..steps {
            let refs: Vec<SessionInputValue<'_>> =
                values.iter().map(SessionInputValue::from).collect();
            let result = session.run_with_options(&refs[..], &options)?;
            drop(refs);
            if step + 1 == steps {
                last = result.into_iter().map(|(_, v)| v).collect();
            } else {
                drop(result);
            }
            for &(src, dst, n) in &copies {
                // SAFETY: both are host buffers of n bytes (checked when
                // the outputs were preallocated): the output's belongs to
                // the run options, the input's to its value; neither
                // moves or is freed during the loop.
                unsafe { std::ptr::copy_nonoverlapping(src, dst, n) };
            }
        }
    } else {
        for _ in 0..steps {
            let refs: Vec<SessionInputValue<'_>> =
                values.iter().map(SessionInputValue::from).collect();
            let result = session.run(&refs[..])?;
            drop(refs);
            let mut outs: Vec<DynValue> = result.into_iter().map(|(_, v)| v).collect();
            for v in &outs {
                if let Some((p, _)) = host_bytes(v) {
                    sink = sink.wrapping_add(p as usize);
                }
            }
            for &(o, i) in &routes {
                // The output value moves into the input slot; a placeholder
                // of the old input takes its place among the outputs.
                std::mem::swap(&mut values[i], &mut outs[o]);
            }
            last = outs;
        }
    }
    let elapsed = start.elapsed();
    std::hint::black_box(sink);
    let last_outputs = finish_outputs(&outputs, &routes, &values, &last)?;
    Ok(LoopStats {
        steps,
        elapsed,
        last_outputs,
    })
}

/// The outputs of the last step as host tensors: fed-back outputs sit in
/// their input slots after the loop, the others in `last`.
fn finish_outputs(
    outputs: &[String],
    routes: &[(usize, usize)],
    values: &[DynValue],
    last: &[DynValue],
) -> Result<Vec<(String, Tensor)>, RunError> {
    let mut last_outputs = Vec::new();
    for (o, name) in outputs.iter().enumerate() {
        let v: &DynValue = match routes.iter().find(|r| r.0 == o) {
            Some(&(_, i)) => &values[i],
            None => match last.get(o) {
                Some(v) => v,
                None => continue,
            },
        };
        let t = convert::to_tensor(v).map_err(|message| RunError::Output {
            name: name.clone(),
            message,
        })?;
        last_outputs.push((name.clone(), t));
    }
    Ok(last_outputs)
}

/// The data pointer and byte length of a host tensor value (`None` for
/// other values, strings included).
fn host_bytes(v: &DynValue) -> Option<(*const u8, usize)> {
    let (elem, shape) = convert::value_elem(v)?;
    let size = convert::data_type_of(elem)?.element_size()?;
    let n = element_count(shape)? * size;
    let t = v.view().downcast::<DynTensorValueType>().ok()?;
    Some((t.data_ptr().cast(), n))
}

/// The mutable data pointer of a host tensor value.
fn host_ptr_mut(v: &mut DynValue) -> Option<*mut u8> {
    // The buffer belongs to ONNX Runtime (GetTensorMutableData); holding
    // `&mut v` makes this the only access to it.
    Some(host_bytes(v)?.0.cast_mut())
}

/// Preallocated outputs: the run options holding them and, per fed-back
/// output, the copy to make after each run (output buffer, input index,
/// bytes).
struct Preallocated {
    /// The preallocated output values (session order).
    values: Vec<DynTensor>,
    copies: Vec<(*const u8, usize, usize)>,
}

/// Outputs preallocated like those of `warm` (one run's outputs), when
/// every output is a host tensor and every fed-back output has the byte
/// size of its input.
fn preallocated(
    names: &[String],
    warm: &[DynValue],
    inputs: &[DynValue],
    routes: &[(usize, usize)],
) -> Option<Preallocated> {
    if warm.len() != names.len() {
        return None;
    }
    let allocator = Allocator::default();
    let mut buffers = Vec::with_capacity(warm.len());
    let mut values = Vec::with_capacity(warm.len());
    for v in warm {
        let (_, n) = host_bytes(v)?;
        let ValueType::Tensor { ty, shape, .. } = v.dtype() else {
            return None;
        };
        let value = DynTensor::new(&allocator, *ty, shape.to_vec()).ok()?;
        buffers.push((value.data_ptr().cast::<u8>(), n));
        values.push(value);
    }
    let mut copies = Vec::with_capacity(routes.len());
    for &(o, i) in routes {
        let (src, n) = buffers[o];
        if host_bytes(&inputs[i])?.1 != n {
            return None;
        }
        copies.push((src, i, n));
    }
    Some(Preallocated { values, copies })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::session::tests::{have_ort, write_model};
    use crate::tensor::{DataType, TensorData};

    #[test]
    fn the_bare_loop_feeds_state_back() {
        if !have_ort() {
            return;
        }
        let (_d, path) = write_model(&crate::runtime::testmodel::accumulate());
        let x = Tensor::new(vec![2, 4], TensorData::F32(vec![1.0; 8])).unwrap();
        let zero = Tensor::zeros(DataType::F32, vec![2, 1]).unwrap();
        let keep = Tensor::zeros(DataType::Bool, vec![2, 1]).unwrap();
        let want = Tensor::new(vec![2, 1], TensorData::F32(vec![40.0, 40.0])).unwrap();
        // Through the crate, through the C API (ONNX Runtime writes into
        // the buffers the feedback copies read), and through a binding (a
        // bound input is the input's memory, so the state copied into it is
        // what the next run reads), the state is fed back the same way.
        for call in [BareCall::Crate, BareCall::CApi, BareCall::Binding] {
            let stats = bare_loop_with(
                &path,
                &SessionOptions::default(),
                &[("INPUT", &x), ("STATE_IN", &zero), ("RESET", &keep)],
                &[("STATE_OUT", "STATE_IN")],
                10,
                call,
            )
            .unwrap();
            assert_eq!(stats.steps, 10, "{call:?}");
            assert!(stats.per_step() > Duration::ZERO, "{call:?}");
            assert_eq!(stats.last_outputs.len(), 2, "{call:?}");
            for (name, t) in &stats.last_outputs {
                assert_eq!(t, &want, "{call:?}: {name}");
            }
        }
        // Every input must be given; feedback must name real tensors.
        let e = bare_loop(
            &path,
            &SessionOptions::default(),
            &[("INPUT", &x), ("RESET", &keep)],
            &[],
            1,
        )
        .unwrap_err();
        assert!(e.to_string().contains("'STATE_IN' is missing"), "{e}");
        let e = bare_loop(
            &path,
            &SessionOptions::default(),
            &[("INPUT", &x), ("STATE_IN", &zero), ("RESET", &keep)],
            &[("NOPE", "STATE_IN")],
            1,
        )
        .unwrap_err();
        assert!(e.to_string().contains("no output 'NOPE'"), "{e}");
    }
}
