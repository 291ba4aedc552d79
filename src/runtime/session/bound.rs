//! Stateful runs: [`BoundState`], the state tensors a stateful model's
//! session keeps as ONNX Runtime values between calls, and
//! [`ModelSession::run_bound`], which feeds each call's state outputs to
//! the next call without a copy to the host.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

use ort::memory::{AllocationDevice, AllocatorType, MemoryInfo, MemoryType};
use ort::session::IoBinding;
use ort::value::DynValue;

use super::{store_output, ModelSession, RunError};
use crate::runtime::convert::{self, onnx_type_name};
use crate::runtime::device::Device;
use crate::runtime::panic_text;
use crate::tensor::Tensor;

impl ModelSession {
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

/// Where ONNX Runtime should put values for `device`.
pub(super) fn memory_info(device: Device) -> Result<MemoryInfo<'static>, String> {
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
pub(super) fn copy_to_host(v: &DynValue) -> Result<Tensor, String> {
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
    pub(super) values: Vec<Option<DynValue>>,
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
