//! What Triton's ONNX Runtime backend does with a model and a config:
//! the session's view of the graph (docs/spec/autoconfig.md §3), auto-complete
//! (`AutoCompleteMaxBatch`, `AutoCompleteIO`, §5–§6) and the checks each
//! instance runs against the session when it is created
//! (docs/spec/validation.md §4).

use super::{LoadFailure, Note, Stage};
use crate::onnx::{Dim, Signature, TensorInfo};
use crate::schema::inference::model_config::SchedulingChoice;
use crate::schema::inference::model_sequence_batching::control::Kind as ControlKind;
use crate::schema::inference::{
    DataType, ModelConfig, ModelDynamicBatching, ModelInput, ModelOutput, ModelTensorReshape,
};
use std::collections::HashMap;

/// One input or output as the ORT C API reports it to Triton.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrtTensor {
    pub name: String,
    /// ONNX `TensorProto.DataType` id (0 when unknown).
    pub elem_type: i32,
    /// Fixed dims as they are, `-1` for symbolic and unknown dims; empty for
    /// rank 0 and for an unknown rank.
    pub dims: Vec<i64>,
    /// The name of the first dim when it is symbolic (`dim_param`).
    pub first_dim_name: Option<String>,
}

/// The session's inputs, outputs and overridable initializers.
#[derive(Debug, Clone, Default)]
pub struct SessionView {
    pub inputs: Vec<OrtTensor>,
    pub outputs: Vec<OrtTensor>,
    pub overridable: Vec<OrtTensor>,
}

fn tensor(t: &TensorInfo) -> Result<OrtTensor, String> {
    let dims = t
        .triton_dims()
        .ok_or_else(|| unsupported_type_text(t.onnx_type_name(), &t.name))?;
    let first_dim_name = match t.shape().and_then(|s| s.first()) {
        Some(Dim::Symbolic(s)) => Some(s.clone()),
        _ => None,
    };
    Ok(OrtTensor {
        name: t.name.clone(),
        elem_type: t.elem_type(),
        dims,
        first_dim_name,
    })
}

/// `Unsupported ONNX Type '<kind>' for I/O '<name>', expected 'ONNX_TYPE_TENSOR'.`
pub fn unsupported_type_text(kind: &str, name: &str) -> String {
    format!("Unsupported ONNX Type '{kind}' for I/O '{name}', expected 'ONNX_TYPE_TENSOR'.")
}

fn unsupported(text: String) -> LoadFailure {
    let mut f = LoadFailure::new(Stage::Autocomplete, "Unsupported", text);
    f.model_side = true;
    f.help(
        "Triton's ONNX Runtime backend only serves tensors: export the model so that its inputs and outputs are plain tensors (no sequence, map or optional types)",
    )
}

/// The session's inputs (ORT `InputInfos`); a non-tensor input fails as it
/// does in ORT.
pub fn session_inputs(sig: &Signature) -> Result<Vec<OrtTensor>, String> {
    sig.inputs.iter().map(tensor).collect()
}

/// The session's outputs (ORT `OutputInfos`).
pub fn session_outputs(sig: &Signature) -> Result<Vec<OrtTensor>, String> {
    sig.outputs.iter().map(tensor).collect()
}

/// The session's overridable initializers (always tensors).
pub fn session_overridable(sig: &Signature) -> Vec<OrtTensor> {
    sig.overridable_initializers
        .iter()
        .filter_map(|t| tensor(t).ok())
        .collect()
}

/// docs/spec/autoconfig.md §5.1: every input and every output has rank ≥ 1
/// and a variable first dim.
pub fn can_batch(inputs: &[OrtTensor], outputs: &[OrtTensor]) -> bool {
    inputs
        .iter()
        .chain(outputs)
        .all(|t| t.dims.first() == Some(&-1))
}

/// The WARN Triton logs when it picks the max batch size (sic "supporrted").
pub fn autofilled_text(mbs: i32, model: &str) -> String {
    format!(
        "autofilled max_batch_size to {mbs} for model '{model}' since batching is supporrted but no max_batch_size is specified in model configuration. Must specify max_batch_size to utilize autofill with a larger max batch size"
    )
}

/// The INFO Triton logs when the config already lists inputs and outputs.
pub fn skipping_text(model: &str) -> String {
    format!(
        "skipping model configuration auto-complete for '{model}': inputs and outputs already specified"
    )
}

/// What auto-complete changed, to apply to another copy of the config.
#[derive(Debug, Clone, Default)]
pub struct Completion {
    /// Auto-complete did nothing (docs/spec/autoconfig.md §2).
    pub skipped: bool,
    /// The final `max_batch_size`, when auto-complete set it.
    pub max_batch_size: Option<i32>,
    pub inputs: Option<Vec<ModelInput>>,
    pub outputs: Option<Vec<ModelOutput>>,
    /// An empty `dynamic_batching` was added.
    pub dynamic_batching: bool,
}

impl Completion {
    /// Applies the changes to `cfg` (what core keeps of the backend's
    /// answer: max_batch_size, input, output and a scheduler when there is
    /// none).
    pub fn apply(&self, cfg: &mut ModelConfig) {
        if let Some(m) = self.max_batch_size {
            cfg.max_batch_size = m;
        }
        if let Some(i) = &self.inputs {
            cfg.input = i.clone();
        }
        if let Some(o) = &self.outputs {
            cfg.output = o.clone();
        }
        if self.dynamic_batching && cfg.scheduling_choice.is_none() {
            cfg.scheduling_choice = Some(SchedulingChoice::DynamicBatching(
                ModelDynamicBatching::default(),
            ));
        }
    }
}

/// ORT's `AutoCompleteConfig` on `cfg` (already filled in and normalized by
/// core). `default_mbs` is the resolved `default-max-batch-size`.
pub fn autocomplete(
    cfg: &ModelConfig,
    sig: &Signature,
    model: &str,
    default_mbs: i64,
    notes: &mut Vec<Note>,
) -> Result<Completion, LoadFailure> {
    let in_cnt = cfg.input.len() + cfg.batch_input.len();
    let out_cnt = cfg.output.len();
    if in_cnt > 0 && out_cnt > 0 {
        notes.push(Note::triton_info(skipping_text(model)));
        return Ok(Completion {
            skipped: true,
            ..Completion::default()
        });
    }
    let inputs = session_inputs(sig).map_err(unsupported)?;
    let outputs = session_outputs(sig).map_err(unsupported)?;

    // AutoCompleteMaxBatch.
    let mut done = Completion::default();
    let mut mbs = cfg.max_batch_size;
    if can_batch(&inputs, &outputs) {
        if mbs == 0 {
            mbs = default_mbs.clamp(0, i64::from(i32::MAX)) as i32;
            done.max_batch_size = Some(mbs);
            notes.push(Note::triton_warning(autofilled_text(mbs, model)));
        }
        if mbs > 1 && cfg.scheduling_choice.is_none() {
            done.dynamic_batching = true;
        }
    } else if mbs != 0 {
        return Err(LoadFailure::new(
            Stage::Autocomplete,
            "Invalid argument",
            format!(
                "autofill failed for model '{model}': model does not support batching while non-zero max_batch_size is specified"
            ),
        )
        .help(not_batchable_help(&inputs, &outputs)));
    }

    // AutoCompleteIO.
    if in_cnt == 0 {
        done.inputs = Some(
            inputs
                .iter()
                .map(|t| {
                    let (dims, reshape) = config_dims(&t.dims, mbs);
                    ModelInput {
                        name: t.name.clone(),
                        data_type: data_type_of(t.elem_type),
                        dims,
                        reshape,
                        ..ModelInput::default()
                    }
                })
                .collect(),
        );
    }
    if out_cnt == 0 {
        done.outputs = Some(
            outputs
                .iter()
                .map(|t| {
                    let (dims, reshape) = config_dims(&t.dims, mbs);
                    ModelOutput {
                        name: t.name.clone(),
                        data_type: data_type_of(t.elem_type),
                        dims,
                        reshape,
                        ..ModelOutput::default()
                    }
                })
                .collect(),
        );
    }
    Ok(done)
}

/// Why a model cannot batch, for the help line: the first tensor whose
/// first dim is fixed, or that has rank 0.
fn not_batchable_help(inputs: &[OrtTensor], outputs: &[OrtTensor]) -> String {
    let culprit = inputs
        .iter()
        .map(|t| ("input", t))
        .chain(outputs.iter().map(|t| ("output", t)))
        .find(|(_, t)| t.dims.first() != Some(&-1));
    match culprit {
        Some((what, t)) if t.dims.is_empty() => format!(
            "{what} '{}' is a scalar (rank 0), so the model cannot batch; remove max_batch_size (or set it to 0), or export the model with a variable first (batch) dimension on every input and output",
            t.name
        ),
        Some((what, t)) => format!(
            "{what} '{}' has the fixed first dimension {} (shape {}), so the model cannot batch; remove max_batch_size (or set it to 0), or export the model with a variable first (batch) dimension on every input and output",
            t.name,
            t.dims[0],
            shape_text(&t.dims)
        ),
        None => "remove max_batch_size (or set it to 0)".into(),
    }
}

/// docs/spec/autoconfig.md §6: model dims to config dims: the first dim
/// dropped when the model batches; an empty result becomes `[1]`, with an
/// empty reshape only when the model batches.
pub fn config_dims(model_dims: &[i64], mbs: i32) -> (Vec<i64>, Option<ModelTensorReshape>) {
    let skip = usize::from(mbs > 0);
    let mut dims: Vec<i64> = model_dims.iter().skip(skip).copied().collect();
    let mut reshape = None;
    if dims.is_empty() {
        dims.push(1);
        if mbs > 0 {
            reshape = Some(ModelTensorReshape { shape: Vec::new() });
        }
    }
    (dims, reshape)
}

/// docs/spec/autoconfig.md §4: the config data type for an ONNX element
/// type; `TYPE_INVALID` (0) for the rest.
pub fn data_type_of(elem_type: i32) -> i32 {
    DataType::from_str_name(crate::onnx::triton_data_type(elem_type))
        .map(|d| d as i32)
        .unwrap_or(0)
}

/// ORT `ModelConfigDataTypeToOnnxDataType`: the ONNX element type of a
/// config data type, `None` when there is none (TYPE_INVALID).
pub fn onnx_type_of(data_type: i32) -> Option<i32> {
    let d = DataType::try_from(data_type).ok()?;
    Some(match d {
        DataType::TypeBool => 9,
        DataType::TypeUint8 => 2,
        DataType::TypeUint16 => 4,
        DataType::TypeUint32 => 12,
        DataType::TypeUint64 => 13,
        DataType::TypeInt8 => 3,
        DataType::TypeInt16 => 5,
        DataType::TypeInt32 => 6,
        DataType::TypeInt64 => 7,
        DataType::TypeBf16 => 16,
        DataType::TypeFp16 => 10,
        DataType::TypeFp32 => 1,
        DataType::TypeFp64 => 11,
        DataType::TypeString => 8,
        DataType::TypeInvalid => return None,
    })
}

/// How ORT error messages name the model's element type: Triton API names
/// (`TYPE_BYTES` for strings), `TYPE_INVALID` for unmapped types.
fn api_type_name(elem_type: i32) -> &'static str {
    match elem_type {
        8 => "TYPE_BYTES",
        e => crate::onnx::triton_data_type(e),
    }
}

/// ORT `OnnxDataTypeName` (used in sequence-control messages; sic
/// `COMPLEX64` for COMPLEX128).
fn ort_onnx_type_name(elem_type: i32) -> &'static str {
    match elem_type {
        14 | 15 => "COMPLEX64",
        1..=13 | 16 => crate::onnx::onnx_type_name(elem_type),
        _ => "UNDEFINED",
    }
}

/// `[-1,16]`, as the backends print shapes.
pub fn shape_text(dims: &[i64]) -> String {
    let parts: Vec<String> = dims.iter().map(i64::to_string).collect();
    format!("[{}]", parts.join(","))
}

fn type_name(data_type: i32) -> String {
    crate::schema::data_type_name(data_type)
}

fn invalid(text: String) -> LoadFailure {
    LoadFailure::new(Stage::Instance, "Invalid argument", text)
}

fn internal(text: String) -> LoadFailure {
    LoadFailure::new(Stage::Instance, "Internal", text)
}

/// A sequence control the config names: tensor name and the data type the
/// config implies for it.
struct ControlTensor {
    name: String,
    data_type: String,
}

fn control_of(cfg: &ModelConfig, kind: ControlKind) -> Option<ControlTensor> {
    let Some(SchedulingChoice::SequenceBatching(sb)) = &cfg.scheduling_choice else {
        return None;
    };
    for ci in &sb.control_input {
        for c in &ci.control {
            if c.kind != kind as i32 {
                continue;
            }
            let data_type = if kind == ControlKind::ControlSequenceCorrid {
                type_name(c.data_type)
            } else if !c.int32_false_true.is_empty() {
                "TYPE_INT32".into()
            } else if !c.fp32_false_true.is_empty() {
                "TYPE_FP32".into()
            } else {
                "TYPE_BOOL".into()
            };
            return Some(ControlTensor {
                name: ci.name.clone(),
                data_type,
            });
        }
    }
    None
}

/// ORT `CompareDimsSupported`.
fn compare_dims(
    model: &str,
    tensor: &str,
    model_shape: &[i64],
    dims: &[i64],
    mbs: i32,
    exact: bool,
) -> Result<(), LoadFailure> {
    let matches = |full: &[i64]| {
        model_shape.len() == full.len()
            && model_shape
                .iter()
                .zip(full)
                .all(|(m, c)| (!exact && *m == -1) || m == c)
    };
    if mbs > 0 {
        if model_shape.first() != Some(&-1) {
            return Err(invalid(format!(
                "model '{model}', tensor '{tensor}': for the model to support batching the shape should have at least 1 dimension and the first dimension must be -1; but shape expected by the model is {}",
                shape_text(model_shape)
            ))
            .help("set max_batch_size to 0: the model has no variable batch dimension on this tensor"));
        }
        let mut full = vec![-1];
        full.extend_from_slice(dims);
        if !matches(&full) {
            let mut f = invalid(format!(
                "model '{model}', tensor '{tensor}': the model expects {} dimensions (shape {}) but the model configuration specifies {} dimensions (an initial batch dimension because max_batch_size > 0 followed by the explicit tensor shape, making complete shape {})",
                model_shape.len(),
                shape_text(model_shape),
                full.len(),
                shape_text(&full)
            ));
            f.help = Some(format!(
                "with max_batch_size > 0 the config's dims leave out the batch dimension: use dims: {}",
                shape_text(&model_shape[1..])
            ));
            return Err(f);
        }
    } else if !matches(dims) {
        let mut f = invalid(format!(
            "model '{model}', tensor '{tensor}': the model expects {} dimensions (shape {}) but the model configuration specifies {} dimensions (shape {})",
            model_shape.len(),
            shape_text(model_shape),
            dims.len(),
            shape_text(dims)
        ));
        f.help = Some(format!(
            "without batching (max_batch_size 0) the config's dims are the model's full shape: use dims: {}",
            shape_text(model_shape)
        ));
        return Err(f);
    }
    Ok(())
}

fn scalar_check(model: &str, tensor: &str, dims: &[i64]) -> Result<(), LoadFailure> {
    if dims.iter().any(|d| *d != 1) {
        return Err(invalid(format!(
            "unable to load model '{model}', scalar tensor '{tensor}', should only provide 1 in the model configuration when the model doesn't support batching. Model configuration provided: {}.",
            shape_text(dims)
        ))
        .help("the model's tensor is a scalar: use dims: [ 1 ]"));
    }
    Ok(())
}

fn sorted_names<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let mut v: Vec<&str> = names.collect();
    v.sort_unstable();
    v.dedup();
    v.join(", ")
}

/// The checks each ORT instance runs against the session when it is
/// created (docs/spec/validation.md §4), in ORT's order: sequence controls,
/// input count, each input, each output, each state output.
pub fn instance_checks(cfg: &ModelConfig, sig: &Signature, model: &str) -> Result<(), LoadFailure> {
    let mbs = cfg.max_batch_size;
    let inputs = session_inputs(sig).map_err(|t| unsupported(t).at(Stage::Instance))?;

    // Sequence controls.
    let mut expected = cfg.input.iter().filter(|i| !i.optional).count() + cfg.batch_input.len();
    if let Some(SchedulingChoice::SequenceBatching(sb)) = &cfg.scheduling_choice {
        for kind in [
            ControlKind::ControlSequenceStart,
            ControlKind::ControlSequenceEnd,
            ControlKind::ControlSequenceReady,
            ControlKind::ControlSequenceCorrid,
        ] {
            let Some(c) = control_of(cfg, kind) else {
                continue;
            };
            let Some(t) = inputs.iter().find(|t| t.name == c.name) else {
                return Err(internal(format!(
                    "configuration specified sequence control '{}', but model does not provide that input",
                    c.name
                ))
                .help("control tensors are model inputs: name one the model has, or remove the control"));
            };
            let skip = usize::from(mbs > 0);
            let debatched: Vec<i64> = t.dims.iter().skip(skip).copied().collect();
            if debatched != [1] {
                return Err(invalid(format!(
                    "unable to load model '{model}', sequence control '{}' in model has dims {} but dims [1] is expected",
                    c.name,
                    shape_text(&debatched)
                )));
            }
            if onnx_type_of_name(&c.data_type) != Some(t.elem_type) {
                return Err(invalid(format!(
                    "unable to load model '{model}', sequence control '{}', the model expects data-type {} but the model configuration specifies data-type {}",
                    c.name,
                    ort_onnx_type_name(t.elem_type),
                    c.data_type
                )));
            }
            expected += 1;
        }
        expected += sb.state.len();
    }

    // Inputs.
    if inputs.len() != expected {
        return Err(invalid(format!(
            "unable to load model '{model}', configuration expects {expected} inputs, model provides {}",
            inputs.len()
        ))
        .help(count_help(cfg, &inputs)));
    }
    let overridable = session_overridable(sig);
    let known: Vec<&OrtTensor> = inputs.iter().chain(overridable.iter()).collect();
    // By name, the last of a name winning: a model may have as many inputs
    // as its file lists, so each lookup must not walk them all.
    let known_by_name: HashMap<&str, &OrtTensor> =
        known.iter().map(|t| (t.name.as_str(), *t)).collect();
    for io in &cfg.input {
        if io.optional && mbs != 0 {
            return Err(invalid(format!(
                "unable to load model '{model}', optional input '{}' is not supported for models that support batching",
                io.name
            )));
        }
        // Overridable initializers replace inputs of the same name.
        let Some(t) = known_by_name.get(io.name.as_str()) else {
            let allowed = sorted_names(known.iter().map(|t| t.name.as_str()));
            return Err(invalid(format!(
                "unexpected inference input '{}', allowed inputs are: {allowed}",
                io.name
            ))
            .help(name_help(
                "input",
                &io.name,
                known.iter().map(|t| t.name.as_str()),
            )));
        };
        check_dtype(model, "input", &io.name, io.data_type, t)?;
        let dims = io.reshape.as_ref().map(|r| &r.shape).unwrap_or(&io.dims);
        if io.optional && io.allow_ragged_batch {
            return Err(invalid(format!(
                "unable to load model '{model}', configuration expects model provides input with shape [-1] for ragged input '{}', which is not supported for optional input",
                io.name
            )));
        }
        if io.allow_ragged_batch {
            if t.dims != [-1] {
                return Err(invalid(format!(
                    "unable to load model '{model}', configuration expects model provides input with shape [-1]  for ragged input '{}', model provides {}",
                    io.name,
                    shape_text(&t.dims)
                )));
            }
        } else if !t.dims.is_empty() {
            compare_dims(model, &io.name, &t.dims, dims, mbs, false)?;
        } else {
            scalar_check(model, &io.name, dims)?;
        }
    }

    // Outputs.
    let outputs = session_outputs(sig).map_err(|t| unsupported(t).at(Stage::Instance))?;
    // By name, the first of a name winning.
    let mut outputs_by_name: HashMap<&str, &OrtTensor> = HashMap::new();
    for t in &outputs {
        outputs_by_name.entry(t.name.as_str()).or_insert(t);
    }
    for io in &cfg.output {
        let Some(t) = outputs_by_name.get(io.name.as_str()) else {
            return Err(unknown_output(&io.name, &outputs));
        };
        check_dtype(model, "output", &io.name, io.data_type, t)?;
        let dims = io.reshape.as_ref().map(|r| &r.shape).unwrap_or(&io.dims);
        let batch_target = cfg
            .batch_output
            .iter()
            .any(|b| b.target_name.contains(&io.name));
        if batch_target {
            continue;
        }
        if !t.dims.is_empty() {
            compare_dims(model, &io.name, &t.dims, dims, mbs, true)?;
        } else {
            scalar_check(model, &io.name, dims)?;
        }
    }
    if let Some(SchedulingChoice::SequenceBatching(sb)) = &cfg.scheduling_choice {
        for st in &sb.state {
            let Some(t) = outputs_by_name.get(st.output_name.as_str()) else {
                return Err(unknown_output(&st.output_name, &outputs));
            };
            check_dtype(model, "output state", &st.output_name, st.data_type, t)?;
        }
    }
    Ok(())
}

fn unknown_output(name: &str, outputs: &[OrtTensor]) -> LoadFailure {
    let allowed = sorted_names(outputs.iter().map(|t| t.name.as_str()));
    invalid(format!(
        "unexpected inference output '{name}', allowed outputs are: {allowed}"
    ))
    .help(name_help(
        "output",
        name,
        outputs.iter().map(|t| t.name.as_str()),
    ))
}

fn onnx_type_of_name(name: &str) -> Option<i32> {
    DataType::from_str_name(name).and_then(|d| onnx_type_of(d as i32))
}

fn check_dtype(
    model: &str,
    what: &str,
    name: &str,
    data_type: i32,
    t: &OrtTensor,
) -> Result<(), LoadFailure> {
    let config = type_name(data_type);
    match onnx_type_of(data_type) {
        None => Err(internal(format!(
            "unsupported datatype {config} for {what} '{name}' for model '{model}'"
        ))),
        Some(e) if e != t.elem_type => {
            let mut f = invalid(format!(
                "unable to load model '{model}', configuration expects datatype {config} for {what} '{name}', model provides {}",
                api_type_name(t.elem_type)
            ));
            let suggested = crate::onnx::triton_data_type(t.elem_type);
            if suggested != "TYPE_INVALID" {
                f.help = Some(format!("use data_type: {suggested}"));
            }
            Err(f)
        }
        Some(_) => Ok(()),
    }
}

fn name_help<'a>(what: &str, name: &str, known: impl Iterator<Item = &'a str>) -> String {
    let known: Vec<&str> = known.collect();
    let near = crate::text::suggestions(name, known.iter().copied());
    match near.first() {
        Some(n) => format!("did you mean '{n}'? The model's {what}s are named by the ONNX graph"),
        None => format!("the model's {what}s are named by the ONNX graph; use one of those names"),
    }
}

fn count_help(cfg: &ModelConfig, inputs: &[OrtTensor]) -> String {
    let listed: Vec<&str> = cfg.input.iter().map(|i| i.name.as_str()).collect();
    let missing: Vec<&str> = inputs
        .iter()
        .map(|t| t.name.as_str())
        .filter(|n| !listed.contains(n))
        .collect();
    let mut h = String::from(
        "ONNX Runtime counts the config's inputs (without optional ones) plus batch inputs, sequence controls and states, and compares with the model's inputs",
    );
    if !missing.is_empty() && cfg.input.len() < inputs.len() {
        h.push_str(&format!(
            "; inputs of the model that the config does not list: {}",
            missing.join(", ")
        ));
    }
    h
}
