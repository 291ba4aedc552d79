//! Per-sequence state for `tritonctl run --sequence`.
//!
//! Two ways a model carries state between the requests of a sequence:
//!
//! * **The stateful backend** (`backend: "stateful"`, stateful-backend.md):
//!   the `state_pairs` parameter names pairs `<<<In, Out>>>` of ONNX tensors;
//!   the backend keeps each sequence's state in its own storage, restores
//!   it into row *j* of `In` before a run and stores row *j* of `Out` after
//!   it. Sequences are stacked along the last dynamic dimension of the
//!   ONNX state tensor. The model resets itself on START (its reset input),
//!   so the value a new sequence starts from does not matter; we use zeros.
//! * **Triton's implicit state** (`sequence_batching.state`, schedulers.md
//!   §3.7): the first request of a sequence gets the `initial_state` (zeros
//!   for `zero_data`, the bytes of `<model dir>/initial_state/<data_file>`;
//!   zeros when none is configured, where Triton leaves the memory
//!   uninitialized), every later one the state output of the previous
//!   request. Batched along the first axis when `max_batch_size > 0`.
//!
//! [`StateStore`] keeps the states of live sequences under an opaque key
//! chosen by the runner: [`StateStore::reset`] at START,
//! [`StateStore::gather`] before a run, [`StateStore::scatter`] after it,
//! [`StateStore::release`] at END or idle timeout.

use super::stack::stack;
use crate::batching::FxMap;
use crate::inputs::codec::{decode_first, f16_to_f32, f32_to_f16, Shortfall};
use crate::schema::inference::model_config::SchedulingChoice;
use crate::schema::inference::model_sequence_batching::initial_state::StateData;
use crate::schema::inference::ModelConfig;
use crate::tensor::{element_count, DataType, Tensor, TensorData, TensorError};
use std::collections::HashSet;
use std::fmt;
use std::hash::Hash;
use std::path::Path;

/// The element types the stateful backend supports for state tensors.
pub const STATEFUL_STATE_TYPES: [DataType; 5] = [
    DataType::F32,
    DataType::F16,
    DataType::I32,
    DataType::I8,
    DataType::Bool,
];

/// Why states cannot be set up or moved.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StateError {
    /// The `state_pairs` parameter is missing or malformed.
    #[error("state_pairs: {0}")]
    StatePairs(String),
    /// A state definition the runner cannot use.
    #[error("{0}")]
    Config(String),
    /// An `initial_state` data file could not be used.
    #[error("initial state '{state}': {message}")]
    InitialFile { state: String, message: String },
    /// A batch names a sequence the store does not hold.
    #[error("sequence {0} has no state: it was not started or was already released")]
    UnknownSequence(String),
    /// A batch holds the same sequence twice.
    #[error("sequence {0} appears more than once in one batch")]
    DuplicateSequence(String),
    /// Tensors do not fit the batch (shapes, missing outputs).
    #[error("{0}")]
    Batch(String),
    #[error(transparent)]
    Tensor(#[from] TensorError),
}

/// One `<<<In, Out>>>` group of the stateful backend's `state_pairs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatePair {
    pub input: String,
    pub output: String,
}

/// Parses a `state_pairs` value the way the stateful backend does
/// (stateful-backend.md §3): groups `<<<IN, OUT>>>`, anything between
/// groups ignored, spaces around names dropped.
pub fn parse_state_pairs(text: &str) -> Result<Vec<StatePair>, StateError> {
    crate::lint::rules::stateful::parse_state_pairs(text)
        .map(|pairs| {
            pairs
                .into_iter()
                .map(|(input, output)| StatePair { input, output })
                .collect()
        })
        .map_err(StateError::StatePairs)
}

/// The state pairs of a stateful-backend config (its `state_pairs`
/// parameter). Reading the pairs from the ONNX graph description, which
/// the backend does when the parameter is empty, is not supported.
pub fn stateful_pairs(cfg: &ModelConfig) -> Result<Vec<StatePair>, StateError> {
    match cfg
        .parameters
        .get("state_pairs")
        .map(|p| p.string_value.trim())
    {
        Some(text) if !text.is_empty() => parse_state_pairs(text),
        _ => Err(StateError::StatePairs(
            "the parameter is missing or empty; give the state tensors as \
             \"<<<INPUT_STATE, OUTPUT_STATE>>>\" (reading them from the ONNX \
             graph description is not supported)"
                .into(),
        )),
    }
}

/// How one state tensor is laid out and where a sequence starts.
#[derive(Debug, Clone, PartialEq)]
pub struct StateSpec {
    /// The model input that receives the state.
    pub input_name: String,
    /// The model output that holds the next state.
    pub output_name: String,
    /// The per-sequence value a sequence starts from, without the batch
    /// axis.
    pub initial: Tensor,
    /// The axis of the model's state tensors along which the sequences of
    /// a batch are stacked; `None` when the model does not batch
    /// (`max_batch_size: 0`): one sequence per run, no batch axis.
    pub batch_axis: Option<usize>,
}

impl StateSpec {
    pub fn dtype(&self) -> DataType {
        self.initial.dtype()
    }

    /// A state of the stateful backend. `dtype` and `onnx_dims` describe
    /// the ONNX input `pair.input` (negative = dynamic dimension). The last
    /// dynamic dimension is the batch axis; every other dimension must be
    /// fixed.
    pub fn stateful_backend(
        pair: &StatePair,
        dtype: DataType,
        onnx_dims: &[i64],
    ) -> Result<StateSpec, StateError> {
        let name = &pair.input;
        if !STATEFUL_STATE_TYPES.contains(&dtype) {
            return Err(StateError::Config(format!(
                "state tensor '{name}' has element type {dtype}; the stateful backend \
                 supports FP32, FP16, INT32, INT8 and BOOL states"
            )));
        }
        let dynamic: Vec<usize> = (0..onnx_dims.len()).filter(|&i| onnx_dims[i] < 0).collect();
        let Some(&axis) = dynamic.last() else {
            return Err(StateError::Config(format!(
                "No dynamic dimension in the ONNX model for a state tensor: '{name}' has \
                 shape {onnx_dims:?}; its batch dimension must be dynamic"
            )));
        };
        if dynamic.len() > 1 {
            return Err(StateError::Config(format!(
                "state tensor '{name}' has shape {onnx_dims:?} with {} dynamic dimensions; \
                 only its batch dimension may be dynamic",
                dynamic.len()
            )));
        }
        let mut dims = onnx_dims.to_vec();
        dims.remove(axis);
        Ok(StateSpec {
            input_name: pair.input.clone(),
            output_name: pair.output.clone(),
            initial: Tensor::zeros(dtype, dims)?,
            batch_axis: Some(axis),
        })
    }
}

/// The implicit states (`sequence_batching.state`) of a config, with their
/// initial values. `model_dir` is the model directory, whose
/// `initial_state/` folder holds `data_file`s.
pub fn implicit_states(cfg: &ModelConfig, model_dir: &Path) -> Result<Vec<StateSpec>, StateError> {
    let Some(SchedulingChoice::SequenceBatching(sb)) = &cfg.scheduling_choice else {
        return Ok(Vec::new());
    };
    let batch_axis = (cfg.max_batch_size > 0).then_some(0);
    let mut out = Vec::with_capacity(sb.state.len());
    for st in &sb.state {
        let name = &st.input_name;
        let dtype = DataType::from_config(st.data_type).ok_or_else(|| {
            StateError::Config(format!(
                "state '{name}' has data type {}, which has no tensor type",
                crate::schema::data_type_name(st.data_type)
            ))
        })?;
        let initial = match st.initial_state.as_slice() {
            [] => {
                let dims: Vec<i64> = st.dims.iter().map(|&d| if d < 0 { 1 } else { d }).collect();
                Tensor::zeros(dtype, dims).map_err(|e| in_state(name, e))?
            }
            [init] => {
                if DataType::from_config(init.data_type) != Some(dtype) {
                    return Err(StateError::Config(format!(
                        "The data type used for 'initial_state' field of state '{name}' does \
                         not match the state data type."
                    )));
                }
                if init.dims.iter().any(|&d| d < 0) {
                    return Err(StateError::Config(format!(
                        "'initial_state' field for state input name '{name}' contains \
                         variable dimensions."
                    )));
                }
                let dims = init.dims.clone();
                match &init.state_data {
                    Some(StateData::ZeroData(_)) => {
                        Tensor::zeros(dtype, dims).map_err(|e| in_state(name, e))?
                    }
                    Some(StateData::DataFile(file)) => {
                        let path = model_dir.join("initial_state").join(file);
                        initial_from_file(name, dtype, dims, file, &path)?
                    }
                    None => {
                        return Err(StateError::Config(format!(
                            "initial_state setting expects state'{name}' to have state_data set"
                        )))
                    }
                }
            }
            more => {
                return Err(StateError::Config(format!(
                    "initial_state field for state input '{name}' must contain exactly one \
                     or zero element. Found '{}' elements.",
                    more.len()
                )))
            }
        };
        out.push(StateSpec {
            input_name: st.input_name.clone(),
            output_name: st.output_name.clone(),
            initial,
            batch_axis,
        });
    }
    Ok(out)
}

/// `e`, about the initial value of state `name`.
fn in_state(name: &str, e: TensorError) -> StateError {
    StateError::Config(format!("state '{name}': {e}"))
}

fn initial_from_file(
    state: &str,
    dtype: DataType,
    dims: Vec<i64>,
    file: &str,
    path: &Path,
) -> Result<Tensor, StateError> {
    let err = |message: String| StateError::InitialFile {
        state: state.to_string(),
        message,
    };
    let bytes =
        std::fs::read(path).map_err(|e| err(format!("cannot read {}: {e}", path.display())))?;
    let count = element_count(&dims).ok_or_else(|| err(format!("invalid dims {dims:?}")))?;
    let data = decode_first(dtype, count, &bytes).map_err(|e| {
        err(match e {
            // Triton's text, including its missing space.
            Shortfall::Bytes { need, have } => format!(
                "initial_state setting expects {need} bytes, but the data provided from \
                 {file}only has {have} bytes"
            ),
            Shortfall::Strings { have } => {
                format!("{file} holds {have} strings, the initial state needs {count}")
            }
            Shortfall::Malformed(m) => m,
        })
    })?;
    Ok(Tensor::new(dims, data)?)
}

/// The states of the live sequences, keyed by an opaque sequence key.
///
/// Every sequence has its own copy of every state; batches are assembled
/// from (and taken apart into) those copies, so no row of one sequence can
/// reach another.
#[derive(Debug, Clone)]
pub struct StateStore<K> {
    specs: Vec<StateSpec>,
    fp16_storage: bool,
    /// Fx-hashed: sequence keys are the scheduler's handles, hashed on
    /// every step.
    seqs: FxMap<K, Vec<Tensor>>,
}

impl<K: Eq + Hash + Clone + fmt::Debug> StateStore<K> {
    pub fn new(specs: Vec<StateSpec>) -> Self {
        StateStore {
            specs,
            fp16_storage: false,
            seqs: FxMap::default(),
        }
    }

    /// Rounds stored FP32 states to FP16 precision, as the stateful
    /// backend's `store_states_as_fp16: "1"` does.
    pub fn with_fp16_storage(mut self, on: bool) -> Self {
        self.fp16_storage = on;
        self
    }

    pub fn specs(&self) -> &[StateSpec] {
        &self.specs
    }

    /// Number of live sequences.
    pub fn len(&self) -> usize {
        self.seqs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.seqs.is_empty()
    }

    pub fn contains(&self, key: &K) -> bool {
        self.seqs.contains_key(key)
    }

    /// The states of one sequence (per spec, without the batch axis).
    pub fn get(&self, key: &K) -> Option<&[Tensor]> {
        self.seqs.get(key).map(Vec::as_slice)
    }

    /// (Re)starts a sequence from the initial values. Returns whether the
    /// key held state before.
    pub fn reset(&mut self, key: K) -> bool {
        let fresh = self.specs.iter().map(|s| s.initial.clone()).collect();
        self.seqs.insert(key, fresh).is_some()
    }

    /// Forgets a sequence. Returns whether it was live.
    pub fn release(&mut self, key: &K) -> bool {
        self.seqs.remove(key).is_some()
    }

    fn check_unique(keys: &[Option<K>]) -> Result<(), StateError> {
        // Padded batches often hold one sequence: nothing to compare.
        if keys.iter().flatten().nth(1).is_none() {
            return Ok(());
        }
        // Batches are small: pairwise comparison, no set to allocate.
        if keys.len() <= 32 {
            for (j, k) in keys.iter().enumerate() {
                if let Some(k) = k {
                    if keys[..j].iter().flatten().any(|o| o == k) {
                        return Err(StateError::DuplicateSequence(format!("{k:?}")));
                    }
                }
            }
            return Ok(());
        }
        let mut seen = HashSet::with_capacity(keys.len());
        for k in keys.iter().flatten() {
            if !seen.insert(k) {
                return Err(StateError::DuplicateSequence(format!("{k:?}")));
            }
        }
        Ok(())
    }

    /// [`StateStore::gather`] into entries `k..` of `buf`, reusing the
    /// memory of the tensors already there (see [`super::stack::put`]).
    /// `zeros[i]` tells where entry `i` of `buf` holds zeros (see
    /// [`super::stack::Zeros`]): padding rows already zero are not written
    /// again. Returns the index after the last entry written.
    // Used by the runner (feature `run`) alone.
    #[cfg_attr(not(feature = "run"), allow(dead_code))]
    pub(crate) fn gather_into(
        &self,
        keys: &[Option<K>],
        buf: &mut Vec<(String, Tensor)>,
        k: usize,
        zeros: &mut Vec<super::stack::Zeros>,
    ) -> Result<usize, StateError> {
        if let [Some(key)] = keys {
            // One sequence: its states as they are, with a batch axis of 1.
            let states = self.states_of(key)?;
            // Shapes of up to 8 dimensions stay on the stack.
            let mut shape: smallvec::SmallVec<[i64; 8]> = smallvec::SmallVec::new();
            for (i, spec) in self.specs.iter().enumerate() {
                let t = &states[i];
                shape.clear();
                shape.extend_from_slice(&t.shape);
                if let Some(axis) = spec.batch_axis {
                    if axis > shape.len() {
                        return Err(StateError::Tensor(TensorError::Shape(t.shape.clone())));
                    }
                    shape.insert(axis, 1);
                }
                super::stack::Zeros::forget(zeros, k + i);
                super::stack::put(buf, k + i, &spec.input_name, &shape, &t.data)
                    .map_err(StateError::Batch)?;
            }
            return Ok(k + self.specs.len());
        }
        // Several rows: stacked in place into the buffer's tensors.
        Self::check_unique(keys)?;
        if zeros.len() < k + self.specs.len() {
            zeros.resize(k + self.specs.len(), Default::default());
        }
        // Batches of up to 16 rows keep these lists on the stack.
        let mut rows: smallvec::SmallVec<[Option<&Vec<Tensor>>; 16]> = smallvec::SmallVec::new();
        for k in keys {
            rows.push(match k {
                Some(k) => Some(self.states_of(k)?),
                None => None,
            });
        }
        for (i, spec) in self.specs.iter().enumerate() {
            let Some(axis) = spec.batch_axis else {
                return Err(StateError::Batch(format!(
                    "state '{}': a model without batching runs one sequence at a time, \
                     not a batch of {}",
                    spec.input_name,
                    keys.len()
                )));
            };
            let reference = rows
                .iter()
                .flatten()
                .map(|s| &s[i])
                .next()
                .unwrap_or(&spec.initial);
            for t in rows.iter().flatten().map(|s| &s[i]) {
                if !std::ptr::eq(t, reference)
                    && (t.shape != reference.shape || t.dtype() != reference.dtype())
                {
                    return Err(StateError::Batch(format!(
                        "state '{}' cannot be batched: sequences hold {} {:?} and {} {:?}",
                        spec.input_name,
                        reference.dtype(),
                        reference.shape,
                        t.dtype(),
                        t.shape
                    )));
                }
            }
            if axis > reference.shape.len() {
                return Err(StateError::Tensor(TensorError::Shape(
                    reference.shape.clone(),
                )));
            }
            let outer = crate::tensor::element_count(&reference.shape[..axis])
                .ok_or_else(|| StateError::Tensor(TensorError::Shape(reference.shape.clone())))?;
            let chunk = crate::tensor::element_count(&reference.shape[axis..])
                .ok_or_else(|| StateError::Tensor(TensorError::Shape(reference.shape.clone())))?;
            let mut parts: smallvec::SmallVec<[(Option<&TensorData>, usize); 16]> =
                smallvec::SmallVec::new();
            for r in &rows {
                parts.push((r.map(|s| &s[i].data), chunk));
            }
            let at = k + i;
            if !matches!(buf.get(at), Some((n, _)) if *n == spec.input_name) {
                let t = Tensor {
                    shape: Vec::new(),
                    data: TensorData::empty(reference.dtype()),
                };
                super::stack::Zeros::forget(zeros, at);
                match buf.get_mut(at) {
                    Some(slot) => *slot = (spec.input_name.clone(), t),
                    None => buf.push((spec.input_name.clone(), t)),
                }
            }
            let dst = &mut buf[at].1;
            super::stack::interleave_into(
                &mut dst.data,
                reference.dtype(),
                &parts,
                outer,
                &mut zeros[at],
            )?;
            dst.shape.clear();
            dst.shape.extend_from_slice(&reference.shape);
            dst.shape.insert(axis, keys.len() as i64);
        }
        Ok(k + self.specs.len())
    }

    fn states_of(&self, key: &K) -> Result<&Vec<Tensor>, StateError> {
        self.seqs
            .get(key)
            .ok_or_else(|| StateError::UnknownSequence(format!("{key:?}")))
    }

    /// The batched state inputs of one run, as `(input name, tensor)` in
    /// spec order. Row *j* (along each spec's batch axis) belongs to
    /// `keys[j]`; `None` is a padding row, filled with zeros.
    pub fn gather(&self, keys: &[Option<K>]) -> Result<Vec<(String, Tensor)>, StateError> {
        Self::check_unique(keys)?;
        let rows: Vec<Option<&Vec<Tensor>>> = keys
            .iter()
            .map(|k| k.as_ref().map(|k| self.states_of(k)).transpose())
            .collect::<Result<_, _>>()?;
        let mut out = Vec::with_capacity(self.specs.len());
        for (i, spec) in self.specs.iter().enumerate() {
            let Some(axis) = spec.batch_axis else {
                let [Some(states)] = rows.as_slice() else {
                    return Err(StateError::Batch(format!(
                        "state '{}': a model without batching runs one sequence at a time, \
                         not a batch of {}",
                        spec.input_name,
                        keys.len()
                    )));
                };
                out.push((spec.input_name.clone(), states[i].clone()));
                continue;
            };
            let real: Vec<&Tensor> = rows.iter().flatten().map(|s| &s[i]).collect();
            let reference = real.first().copied().unwrap_or(&spec.initial);
            for t in &real {
                if t.shape != reference.shape || t.dtype() != reference.dtype() {
                    return Err(StateError::Batch(format!(
                        "state '{}' cannot be batched: sequences hold {} {:?} and {} {:?}",
                        spec.input_name,
                        reference.dtype(),
                        reference.shape,
                        t.dtype(),
                        t.shape
                    )));
                }
            }
            let padding = Tensor::zeros(reference.dtype(), reference.shape.clone())?;
            let parts: Vec<&Tensor> = rows.iter().map(|r| r.map_or(&padding, |s| &s[i])).collect();
            out.push((spec.input_name.clone(), stack(&parts, axis)?));
        }
        Ok(out)
    }

    /// Stores the state outputs of one run: `output(name)` gives the
    /// model's output tensor `name`; row *j* goes to `keys[j]`, padding
    /// rows (`None`) are dropped. Nothing is stored when an error is
    /// returned.
    pub fn scatter<'a>(
        &mut self,
        keys: &[Option<K>],
        output: impl Fn(&str) -> Option<&'a Tensor>,
    ) -> Result<(), StateError> {
        self.scatter_with(keys, |_, name| output(name))
    }

    /// [`StateStore::scatter`] with `output(i, name)` giving the output of
    /// spec `i` (named `name`).
    pub fn scatter_with<'a>(
        &mut self,
        keys: &[Option<K>],
        output: impl Fn(usize, &str) -> Option<&'a Tensor>,
    ) -> Result<(), StateError> {
        if let [Some(key)] = keys {
            if self.scatter_one(key, &output)? {
                return Ok(());
            }
        }
        Self::check_unique(keys)?;
        for k in keys.iter().flatten() {
            self.states_of(k)?;
        }
        // Every check first, so that an error leaves the store as it was;
        // then the rows are copied into the stored tensors in place.
        let mut outputs: smallvec::SmallVec<[&Tensor; 4]> = smallvec::SmallVec::new();
        for (i, spec) in self.specs.iter().enumerate() {
            let t = output(i, &spec.output_name).ok_or_else(|| {
                StateError::Batch(format!(
                    "the model did not return the state output '{}'",
                    spec.output_name
                ))
            })?;
            match spec.batch_axis {
                None if keys.len() != 1 => {
                    return Err(StateError::Batch(format!(
                        "state '{}': a model without batching runs one sequence at a \
                         time, not a batch of {}",
                        spec.output_name,
                        keys.len()
                    )));
                }
                None => {}
                Some(axis) => {
                    if t.shape.get(axis) != Some(&(keys.len() as i64)) {
                        return Err(StateError::Batch(format!(
                            "state output '{}' has shape {:?}; expected {} rows along axis {axis}",
                            spec.output_name,
                            t.shape,
                            keys.len()
                        )));
                    }
                    if crate::tensor::element_count(&t.shape) != Some(t.data.len()) {
                        return Err(StateError::Tensor(TensorError::Shape(t.shape.clone())));
                    }
                }
            }
            outputs.push(t);
        }
        let fp16 = self.fp16_storage;
        for (i, (spec, t)) in self.specs.iter().zip(outputs).enumerate() {
            for (j, key) in keys.iter().enumerate() {
                let Some(states) = key.as_ref().and_then(|k| self.seqs.get_mut(k)) else {
                    continue;
                };
                let dst = &mut states[i];
                match spec.batch_axis {
                    None => {
                        if !super::stack::copy_data(&mut dst.data, &t.data) {
                            dst.data = t.data.clone();
                        }
                        if dst.shape != t.shape {
                            dst.shape.clone_from(&t.shape);
                        }
                    }
                    Some(axis) => {
                        super::stack::slice_axis_into(
                            &mut dst.data,
                            &t.data,
                            &t.shape,
                            axis,
                            j,
                            1,
                        )?;
                        dst.shape.clear();
                        dst.shape.extend(
                            t.shape
                                .iter()
                                .enumerate()
                                .filter(|&(d, _)| d != axis)
                                .map(|(_, &v)| v),
                        );
                    }
                }
                if fp16 {
                    if let TensorData::F32(v) = &mut dst.data {
                        for x in v.iter_mut() {
                            *x = f16_to_f32(f32_to_f16(*x));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// [`StateStore::scatter`] of a single sequence, copying the outputs
    /// into the stored tensors in place. `Ok(false)` (nothing stored) when
    /// the general path has to handle it (errors, changed types or sizes).
    fn scatter_one<'a>(
        &mut self,
        key: &K,
        output: &impl Fn(usize, &str) -> Option<&'a Tensor>,
    ) -> Result<bool, StateError> {
        let Some(states) = self.seqs.get_mut(key) else {
            return Err(StateError::UnknownSequence(format!("{key:?}")));
        };
        for (i, spec) in self.specs.iter().enumerate() {
            let Some(t) = output(i, &spec.output_name) else {
                return Ok(false);
            };
            let fits = match spec.batch_axis {
                None => true,
                Some(axis) => t.shape.get(axis) == Some(&1),
            };
            if !fits
                || t.data.dtype() != states[i].data.dtype()
                || t.data.len() != states[i].data.len()
            {
                return Ok(false);
            }
        }
        let fp16 = self.fp16_storage;
        for (i, spec) in self.specs.iter().enumerate() {
            let Some(t) = output(i, &spec.output_name) else {
                continue;
            };
            let dst = &mut states[i];
            super::stack::copy_data(&mut dst.data, &t.data);
            let rank = t.shape.len() - usize::from(spec.batch_axis.is_some());
            if dst.shape.len() != rank
                || t.shape
                    .iter()
                    .enumerate()
                    .filter(|(d, _)| Some(*d) != spec.batch_axis)
                    .zip(&dst.shape)
                    .any(|((_, a), b)| a != b)
            {
                dst.shape = t
                    .shape
                    .iter()
                    .enumerate()
                    .filter(|(d, _)| Some(*d) != spec.batch_axis)
                    .map(|(_, &v)| v)
                    .collect();
            }
            if fp16 {
                if let TensorData::F32(v) = &mut dst.data {
                    for x in v.iter_mut() {
                        *x = f16_to_f32(f32_to_f16(*x));
                    }
                }
            }
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ParsedConfig;

    fn f32s(shape: &[i64], v: &[f32]) -> Tensor {
        Tensor::new(shape.to_vec(), TensorData::F32(v.to_vec())).unwrap()
    }

    /// One FP32 state of `n` elements, batched on axis 0.
    fn store(n: i64) -> StateStore<u64> {
        StateStore::new(vec![StateSpec {
            input_name: "S_IN".into(),
            output_name: "S_OUT".into(),
            initial: Tensor::zeros(DataType::F32, vec![n]).unwrap(),
            batch_axis: Some(0),
        }])
    }

    fn values(t: &Tensor) -> Vec<f32> {
        match &t.data {
            TensorData::F32(v) => v.clone(),
            other => panic!("not FP32: {other:?}"),
        }
    }

    /// What a model "computes": state out = state in + x per row.
    fn step(s: &mut StateStore<u64>, keys: &[Option<u64>], x: &[f32]) -> Vec<f32> {
        let gathered = s.gather(keys).unwrap();
        assert_eq!(gathered[0].0, "S_IN");
        let input = values(&gathered[0].1);
        let n = input.len() / keys.len();
        let next: Vec<f32> = input
            .iter()
            .enumerate()
            .map(|(e, v)| v + x[e / n])
            .collect();
        let out = f32s(&gathered[0].1.shape, &next);
        s.scatter(keys, |name| (name == "S_OUT").then_some(&out))
            .unwrap();
        input
    }

    #[test]
    fn gather_into_matches_gather_and_reuses_the_buffer() {
        let mut s = store(3);
        s.reset(1);
        s.reset(2);
        step(&mut s, &[Some(1), Some(2)], &[1.0, 2.0]);
        let mut buf = vec![("X".to_string(), f32s(&[1], &[9.0]))];
        for keys in [vec![Some(1)], vec![Some(2), None, Some(1)], vec![Some(2)]] {
            let end = s.gather_into(&keys, &mut buf, 1, &mut Vec::new()).unwrap();
            assert_eq!(end, 2);
            assert_eq!(buf[0].0, "X", "entries before k are kept");
            assert_eq!(buf[1..], s.gather(&keys).unwrap()[..]);
        }
        // The single-sequence buffer keeps its memory from step to step.
        let ptr = |b: &Vec<(String, Tensor)>| match &b[1].1.data {
            TensorData::F32(v) => v.as_ptr(),
            _ => unreachable!(),
        };
        let before = ptr(&buf);
        step(&mut s, &[Some(2)], &[5.0]);
        s.gather_into(&[Some(2)], &mut buf, 1, &mut Vec::new())
            .unwrap();
        assert_eq!(ptr(&buf), before);
        assert_eq!(values(&buf[1].1), vec![7.0, 7.0, 7.0]);
        assert_eq!(buf[1].1.shape, vec![1, 3]);
    }

    #[test]
    fn interleaved_sequences_keep_their_own_state() {
        let mut s = store(1);
        s.reset(1);
        s.reset(2);
        // Sequence 1 adds 1 per step, sequence 2 adds 100, in varying
        // batch positions and batch sizes.
        step(&mut s, &[Some(1), Some(2)], &[1.0, 100.0]);
        step(&mut s, &[Some(2), Some(1)], &[100.0, 1.0]);
        step(&mut s, &[Some(2)], &[100.0]);
        let seen = step(&mut s, &[Some(1), Some(2)], &[1.0, 100.0]);
        assert_eq!(seen, vec![2.0, 300.0]);
        assert_eq!(values(&s.get(&1).unwrap()[0]), vec![3.0]);
        assert_eq!(values(&s.get(&2).unwrap()[0]), vec![400.0]);
    }

    #[test]
    fn a_released_and_restarted_key_starts_from_the_initial_state() {
        let mut s = store(2);
        s.reset(5);
        step(&mut s, &[Some(5)], &[7.0]);
        assert!(s.release(&5));
        assert!(!s.contains(&5));
        assert!(matches!(
            s.gather(&[Some(5)]),
            Err(StateError::UnknownSequence(_))
        ));
        assert!(!s.reset(5));
        assert_eq!(step(&mut s, &[Some(5)], &[1.0]), vec![0.0, 0.0]);
        // START on a live sequence restarts it too.
        assert!(s.reset(5));
        assert_eq!(step(&mut s, &[Some(5)], &[0.0]), vec![0.0, 0.0]);
        assert!(!s.release(&6));
    }

    #[test]
    fn padding_rows_are_zero_and_never_stored() {
        let mut s = store(2);
        s.reset(1);
        s.reset(2);
        step(&mut s, &[Some(1), Some(2)], &[1.0, 2.0]);
        let g = s.gather(&[None, Some(2), None, Some(1)]).unwrap();
        assert_eq!(g[0].1.shape, vec![4, 2]);
        assert_eq!(
            values(&g[0].1),
            vec![0.0, 0.0, 2.0, 2.0, 0.0, 0.0, 1.0, 1.0]
        );
        // The model writes garbage into the padding rows: nobody gets it.
        let out = f32s(&[4, 2], &[9.0, 9.0, 20.0, 20.0, 9.0, 9.0, 10.0, 10.0]);
        s.scatter(&[None, Some(2), None, Some(1)], |_| Some(&out))
            .unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(values(&s.get(&1).unwrap()[0]), vec![10.0, 10.0]);
        assert_eq!(values(&s.get(&2).unwrap()[0]), vec![20.0, 20.0]);
        // A batch of padding only is zeros shaped like the initial state.
        let g = s.gather(&[None, None]).unwrap();
        assert_eq!(g[0].1.shape, vec![2, 2]);
        assert_eq!(values(&g[0].1), vec![0.0; 4]);
    }

    #[test]
    fn bad_batches_are_errors_and_leave_the_store_unchanged() {
        let mut s = store(1);
        s.reset(1);
        s.reset(2);
        assert!(matches!(
            s.gather(&[Some(1), Some(1)]),
            Err(StateError::DuplicateSequence(_))
        ));
        let out = f32s(&[2, 1], &[5.0, 6.0]);
        assert!(matches!(
            s.scatter(&[Some(1), Some(1)], |_| Some(&out)),
            Err(StateError::DuplicateSequence(_))
        ));
        // One unknown key: no row is stored, not even the known one.
        assert!(matches!(
            s.scatter(&[Some(1), Some(3)], |_| Some(&out)),
            Err(StateError::UnknownSequence(_))
        ));
        // Wrong number of rows, missing output.
        assert!(s.scatter(&[Some(1)], |_| Some(&out)).is_err());
        assert!(s.scatter(&[Some(1), Some(2)], |_| None).is_err());
        assert_eq!(values(&s.get(&1).unwrap()[0]), vec![0.0]);
        assert_eq!(values(&s.get(&2).unwrap()[0]), vec![0.0]);
    }

    #[test]
    fn several_states_and_a_middle_batch_axis() {
        // Like an LSTM: h [layers=2, batch, 3] and a flag [batch].
        let pair = |a: &str, b: &str| StatePair {
            input: a.into(),
            output: b.into(),
        };
        let h = StateSpec::stateful_backend(&pair("h_in", "h_out"), DataType::F32, &[2, -1, 3])
            .unwrap();
        assert_eq!(h.batch_axis, Some(1));
        assert_eq!(h.initial.shape, vec![2, 3]);
        let f = StateSpec::stateful_backend(&pair("f_in", "f_out"), DataType::Bool, &[-1]).unwrap();
        let mut s: StateStore<&str> = StateStore::new(vec![h, f]);
        s.reset("a");
        s.reset("b");
        // h_out[l][j][k] = 100 l + 10 j + k, f_out = [true, false].
        let h_out = f32s(
            &[2, 2, 3],
            &[
                0.0, 1.0, 2.0, 10.0, 11.0, 12.0, 100.0, 101.0, 102.0, 110.0, 111.0, 112.0,
            ],
        );
        let f_out = Tensor::new(vec![2], TensorData::Bool(vec![true, false])).unwrap();
        s.scatter(&[Some("a"), Some("b")], |n| match n {
            "h_out" => Some(&h_out),
            "f_out" => Some(&f_out),
            _ => None,
        })
        .unwrap();
        assert_eq!(
            values(&s.get(&"a").unwrap()[0]),
            vec![0.0, 1.0, 2.0, 100.0, 101.0, 102.0]
        );
        assert_eq!(
            values(&s.get(&"b").unwrap()[0]),
            vec![10.0, 11.0, 12.0, 110.0, 111.0, 112.0]
        );
        // Reversed order, with a padding row in the middle.
        let g = s.gather(&[Some("b"), None, Some("a")]).unwrap();
        assert_eq!(g[0].0, "h_in");
        assert_eq!(g[0].1.shape, vec![2, 3, 3]);
        assert_eq!(
            values(&g[0].1),
            vec![
                10.0, 11.0, 12.0, 0.0, 0.0, 0.0, 0.0, 1.0, 2.0, //
                110.0, 111.0, 112.0, 0.0, 0.0, 0.0, 100.0, 101.0, 102.0
            ]
        );
        assert_eq!(g[1].1.data, TensorData::Bool(vec![false, false, true]));
    }

    #[test]
    fn unbatched_models_take_one_sequence() {
        let mut s: StateStore<u64> = StateStore::new(vec![StateSpec {
            input_name: "S".into(),
            output_name: "S_OUT".into(),
            initial: f32s(&[2], &[1.0, 2.0]),
            batch_axis: None,
        }]);
        s.reset(1);
        s.reset(2);
        let g = s.gather(&[Some(1)]).unwrap();
        assert_eq!(g[0].1, f32s(&[2], &[1.0, 2.0]));
        assert!(s.gather(&[Some(1), Some(2)]).is_err());
        assert!(s.gather(&[None]).is_err());
        // A state whose shape changes (Triton follows the output's shape).
        let out = f32s(&[3], &[4.0, 5.0, 6.0]);
        s.scatter(&[Some(1)], |_| Some(&out)).unwrap();
        assert_eq!(s.gather(&[Some(1)]).unwrap()[0].1, out);
        assert_eq!(s.get(&2).unwrap()[0], f32s(&[2], &[1.0, 2.0]));
    }

    #[test]
    fn sequences_of_different_state_shapes_do_not_batch() {
        let mut s = store(1);
        s.reset(1);
        s.reset(2);
        let wide = f32s(&[1, 2], &[1.0, 2.0]);
        s.scatter(&[Some(1)], |_| Some(&wide)).unwrap();
        assert!(matches!(
            s.gather(&[Some(1), Some(2)]),
            Err(StateError::Batch(_))
        ));
    }

    #[test]
    fn fp16_storage_rounds_fp32_states() {
        let mut s = store(1).with_fp16_storage(true);
        s.reset(1);
        let out = f32s(&[1, 1], &[0.1]);
        s.scatter(&[Some(1)], |_| Some(&out)).unwrap();
        // 0.1 in binary16 is 0x2e66 = 0.0999755859375.
        assert_eq!(values(&s.get(&1).unwrap()[0]), vec![0.099_975_586]);
    }

    #[test]
    fn state_pairs_from_the_config() {
        let cfg = |params: &str| {
            ParsedConfig::parse(format!("name: \"m\"\nbackend: \"stateful\"\n{params}"))
                .config
                .unwrap()
        };
        let c = cfg(
            "parameters { key: \"state_pairs\" value { string_value: \"<<<h_in, h_out>>> <<<c_in,c_out>>>\" } }",
        );
        assert_eq!(
            stateful_pairs(&c).unwrap(),
            vec![
                StatePair {
                    input: "h_in".into(),
                    output: "h_out".into()
                },
                StatePair {
                    input: "c_in".into(),
                    output: "c_out".into()
                }
            ]
        );
        assert!(matches!(
            stateful_pairs(&cfg("")),
            Err(StateError::StatePairs(_))
        ));
        let bad =
            cfg("parameters { key: \"state_pairs\" value { string_value: \"h_in, h_out\" } }");
        let e = stateful_pairs(&bad).unwrap_err().to_string();
        assert!(e.contains("Could not find any state tensors"), "{e}");
        assert!(parse_state_pairs("<<<a, b").is_err());
    }

    #[test]
    fn stateful_backend_state_shapes() {
        let p = StatePair {
            input: "s".into(),
            output: "t".into(),
        };
        let e = StateSpec::stateful_backend(&p, DataType::F32, &[4, 5]).unwrap_err();
        assert!(e
            .to_string()
            .starts_with("No dynamic dimension in the ONNX model for a state tensor"));
        assert!(StateSpec::stateful_backend(&p, DataType::F32, &[-1, -1]).is_err());
        assert!(StateSpec::stateful_backend(&p, DataType::I64, &[-1]).is_err());
        let s = StateSpec::stateful_backend(&p, DataType::F16, &[3, -1]).unwrap();
        assert_eq!((s.batch_axis, s.initial.shape.clone()), (Some(1), vec![3]));
        assert_eq!(s.initial.data, TensorData::F16(vec![0; 3]));
    }

    fn implicit_config(mbs: i64, state: &str) -> ModelConfig {
        ParsedConfig::parse(format!(
            "name: \"m\"\nbackend: \"onnxruntime\"\nmax_batch_size: {mbs}\n\
             sequence_batching {{ state [ {state} ] }}"
        ))
        .config
        .unwrap()
    }

    #[test]
    fn implicit_initial_states() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("initial_state")).unwrap();
        let mut bytes = Vec::new();
        for v in [1i32, -2, 3, 99] {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        std::fs::write(dir.path().join("initial_state").join("three.bin"), &bytes).unwrap();
        std::fs::write(
            dir.path().join("initial_state").join("words.bin"),
            [2, 0, 0, 0, b'h', b'i', 1, 0, 0, 0, b'!'],
        )
        .unwrap();
        let cfg = implicit_config(
            4,
            "{ input_name: \"A\" output_name: \"A_OUT\" data_type: TYPE_INT32 dims: [ 3 ]
               initial_state { name: \"i\" data_type: TYPE_INT32 dims: [ 3 ] data_file: \"three.bin\" } },
             { input_name: \"B\" output_name: \"B_OUT\" data_type: TYPE_FP32 dims: [ -1, 2 ]
               initial_state { name: \"z\" data_type: TYPE_FP32 dims: [ 0, 2 ] zero_data: true } },
             { input_name: \"C\" output_name: \"C_OUT\" data_type: TYPE_INT64 dims: [ -1, 2 ] },
             { input_name: \"D\" output_name: \"D_OUT\" data_type: TYPE_STRING dims: [ 2 ]
               initial_state { name: \"w\" data_type: TYPE_STRING dims: [ 2 ] data_file: \"words.bin\" } }",
        );
        let specs = implicit_states(&cfg, dir.path()).unwrap();
        assert_eq!(specs.len(), 4);
        // Extra bytes in the file are ignored, as Triton does.
        assert_eq!(
            specs[0].initial,
            Tensor::new(vec![3], TensorData::I32(vec![1, -2, 3])).unwrap()
        );
        assert_eq!(specs[0].batch_axis, Some(0));
        assert_eq!(specs[1].initial.shape, vec![0, 2]);
        assert_eq!(
            specs[2].initial,
            Tensor::zeros(DataType::I64, vec![1, 2]).unwrap()
        );
        assert_eq!(
            specs[3].initial.data,
            TensorData::Bytes(vec![b"hi".to_vec(), b"!".to_vec()])
        );
        let unbatched = implicit_states(
            &implicit_config(
                0,
                "{ input_name: \"C\" output_name: \"C_OUT\" data_type: TYPE_INT64 dims: [ 1 ] }",
            ),
            dir.path(),
        )
        .unwrap();
        assert_eq!(unbatched[0].batch_axis, None);
    }

    #[test]
    fn implicit_initial_state_errors() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("initial_state")).unwrap();
        std::fs::write(dir.path().join("initial_state").join("short.bin"), [0u8; 8]).unwrap();
        let err = |state: &str| {
            implicit_states(&implicit_config(4, state), dir.path())
                .unwrap_err()
                .to_string()
        };
        let e = err(
            "{ input_name: \"A\" output_name: \"O\" data_type: TYPE_INT32 dims: [ 4 ]
               initial_state { name: \"i\" data_type: TYPE_INT32 dims: [ 4 ] data_file: \"short.bin\" } }",
        );
        assert!(
            e.contains("initial_state setting expects 16 bytes, but the data provided from short.binonly has 8 bytes"),
            "{e}"
        );
        let e = err(
            "{ input_name: \"A\" output_name: \"O\" data_type: TYPE_INT32 dims: [ 4 ]
               initial_state { name: \"i\" data_type: TYPE_INT32 dims: [ 4 ] data_file: \"missing.bin\" } }",
        );
        assert!(
            e.contains("cannot read") && e.contains("missing.bin"),
            "{e}"
        );
        let e = err(
            "{ input_name: \"A\" output_name: \"O\" data_type: TYPE_INT32 dims: [ 4 ]
               initial_state { name: \"i\" data_type: TYPE_FP32 dims: [ 4 ] zero_data: true } }",
        );
        assert!(e.contains("does not match the state data type"), "{e}");
        let e = err(
            "{ input_name: \"A\" output_name: \"O\" data_type: TYPE_INT32 dims: [ 4 ]
               initial_state { name: \"i\" data_type: TYPE_INT32 dims: [ 4 ] } }",
        );
        assert!(e.contains("to have state_data set"), "{e}");
        let e = err(
            "{ input_name: \"A\" output_name: \"O\" data_type: TYPE_INT32 dims: [ -1 ]
               initial_state { name: \"i\" data_type: TYPE_INT32 dims: [ -1 ] zero_data: true } }",
        );
        assert!(e.contains("contains variable dimensions"), "{e}");
        // More than any memory: an error naming the state, not an abort.
        let e = err(
            "{ input_name: \"A\" output_name: \"O\" data_type: TYPE_INT32 dims: [ -1 ]
               initial_state { name: \"i\" data_type: TYPE_INT32 dims: [ 100000000000000000 ] zero_data: true } }",
        );
        assert_eq!(
            e,
            "state 'A': cannot allocate 100000000000000000 elements of INT32: not enough memory"
        );
    }
}
