//! Per-sequence state for `tritonctl run --sequence`.
//!
//! Two ways a model carries state between the requests of a sequence:
//!
//! * **The stateful backend** (`backend: "stateful"`,
//!   docs/spec/stateful-backend.md): the `state_pairs` parameter names pairs
//!   `<<<In, Out>>>` of ONNX tensors; the backend keeps each sequence's state
//!   in its own storage, restores it into row *j* of `In` before a run and
//!   stores row *j* of `Out` after it. Sequences are stacked along the last
//!   dynamic dimension of the ONNX state tensor. The model resets itself on
//!   START (its reset input), so the value a new sequence starts from does not
//!   matter; we use zeros.
//! * **Triton's implicit state** (`sequence_batching.state`,
//!   docs/spec/schedulers.md §3.7): the first request of a sequence gets the
//!   `initial_state` (zeros for `zero_data`, the bytes of
//!   `<model dir>/initial_state/<data_file>`; zeros when none is configured,
//!   where Triton leaves the memory uninitialized), every later one the state
//!   output of the previous request. Batched along the first axis when
//!   `max_batch_size > 0`.
//!
//! [`StateStore`] keeps the states of live sequences under an opaque key
//! chosen by the runner: [`StateStore::reset`] at START,
//! [`StateStore::gather`] before a run, [`StateStore::scatter`] after it,
//! [`StateStore::release`] at END or idle timeout.

use crate::inputs::codec::{decode_first, Shortfall};
use crate::schema::inference::model_config::SchedulingChoice;
use crate::schema::inference::model_sequence_batching::initial_state::StateData;
use crate::schema::inference::ModelConfig;
use crate::tensor::{element_count, DataType, Tensor, TensorError};
use std::path::Path;

mod store;
#[cfg(test)]
mod tests;

pub use store::StateStore;

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
/// (docs/spec/stateful-backend.md §3): groups `<<<IN, OUT>>>`, anything between
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
                        initial_from_file(name, dtype, dims, file, &path, model_dir)?
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
    model_dir: &Path,
) -> Result<Tensor, StateError> {
    let err = |message: String| StateError::InitialFile {
        state: state.to_string(),
        message,
    };
    let bytes = crate::files::read_in(path, model_dir)
        .map_err(|e| err(format!("cannot read {}: {e}", path.display())))?;
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
