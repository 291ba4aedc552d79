//! The sequence-batcher control tensors a model receives with a batch
//! (docs/spec/schedulers.md §3.6, example S10).
//!
//! `sequence_batching.control_input` names an input per control kind:
//! START, END and READY carry the 1st (false) or 2nd (true) entry of
//! `int32_false_true` (INT32), `fp32_false_true` (FP32) or
//! `bool_false_true` (BOOL); CORRID carries the request's correlation id in
//! the configured `data_type`. Every control has one element per batch
//! entry: shape `[batch, 1]` when `max_batch_size > 0`, `[1]` otherwise.
//!
//! Values follow Triton's sequence batcher: a Direct padding entry
//! (`ready: false`) gets false for START/END/READY and the id 0; an integer
//! id is stored as its low-order bytes, so an INT32/UINT32 CORRID holds the
//! id truncated to 32 bits (and INT32/INT64 reinterpret the bits as
//! signed); a TYPE_STRING CORRID holds string ids, and a padding entry gets
//! the empty string. A string id with a numeric CORRID, or an integer id
//! with a TYPE_STRING CORRID, makes Triton write malformed data; here it is
//! an error.
//!
//! Use [`ControlSpec::from_config`] once per model and
//! [`ControlSpec::tensors`] per batch, or [`control_tensors`] for both.

use super::{CorrId, SlotRecord};
use crate::schema::inference::model_config::SchedulingChoice;
use crate::schema::inference::model_sequence_batching::control::Kind;
use crate::schema::inference::model_sequence_batching::Control;
use crate::schema::inference::{DataType as PbDataType, ModelConfig};
use serde::Serialize;

/// Which sequence signal a control tensor carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ControlKind {
    Start,
    End,
    Ready,
    Corrid,
}

/// The elements of a control tensor, row-major (one per batch entry).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ControlValues {
    Bool(Vec<bool>),
    Int32(Vec<i32>),
    Fp32(Vec<f32>),
    Int64(Vec<i64>),
    Uint32(Vec<u32>),
    Uint64(Vec<u64>),
    /// BYTES (`TYPE_STRING`) elements.
    Bytes(Vec<String>),
}

impl ControlValues {
    /// Triton's protocol name of the element type (`"BOOL"`, `"INT32"`,
    /// `"FP32"`, `"INT64"`, `"UINT32"`, `"UINT64"`, `"BYTES"`).
    pub fn datatype(&self) -> &'static str {
        match self {
            ControlValues::Bool(_) => "BOOL",
            ControlValues::Int32(_) => "INT32",
            ControlValues::Fp32(_) => "FP32",
            ControlValues::Int64(_) => "INT64",
            ControlValues::Uint32(_) => "UINT32",
            ControlValues::Uint64(_) => "UINT64",
            ControlValues::Bytes(_) => "BYTES",
        }
    }

    pub fn len(&self) -> usize {
        match self {
            ControlValues::Bool(v) => v.len(),
            ControlValues::Int32(v) => v.len(),
            ControlValues::Fp32(v) => v.len(),
            ControlValues::Int64(v) => v.len(),
            ControlValues::Uint32(v) => v.len(),
            ControlValues::Uint64(v) => v.len(),
            ControlValues::Bytes(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One control input of a batch, as the model receives it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ControlTensor {
    /// The model input's name.
    pub name: String,
    pub kind: ControlKind,
    /// Triton's protocol name of the element type (e.g. `"INT32"`).
    pub datatype: &'static str,
    /// `[batch, 1]`, or `[1]` for a model with `max_batch_size: 0`.
    pub shape: Vec<i64>,
    pub data: ControlValues,
}

/// The false/true values of a START, END or READY control.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Truth {
    Int32(i32, i32),
    Fp32(f32, f32),
    Bool(bool, bool),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CorridType {
    Uint64,
    Int64,
    Uint32,
    Int32,
    String,
}

#[derive(Debug, Clone, PartialEq)]
enum Encoding {
    Flag(Truth),
    Corrid(CorridType),
}

/// The control inputs of one model, read from its config.
#[derive(Debug, Clone, PartialEq)]
pub struct ControlSpec {
    batched: bool,
    controls: Vec<(String, ControlKind, Encoding)>,
}

fn kind_name(k: ControlKind) -> &'static str {
    match k {
        ControlKind::Start => "CONTROL_SEQUENCE_START",
        ControlKind::End => "CONTROL_SEQUENCE_END",
        ControlKind::Ready => "CONTROL_SEQUENCE_READY",
        ControlKind::Corrid => "CONTROL_SEQUENCE_CORRID",
    }
}

fn encoding(name: &str, kind: ControlKind, c: &Control) -> Result<Encoding, String> {
    let what = || format!("control input '{name}' ({})", kind_name(kind));
    if kind == ControlKind::Corrid {
        let t = match PbDataType::try_from(c.data_type) {
            Ok(PbDataType::TypeUint64) => CorridType::Uint64,
            Ok(PbDataType::TypeInt64) => CorridType::Int64,
            Ok(PbDataType::TypeUint32) => CorridType::Uint32,
            Ok(PbDataType::TypeInt32) => CorridType::Int32,
            Ok(PbDataType::TypeString) => CorridType::String,
            _ => {
                return Err(format!(
                    "{}: data_type must be TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 or TYPE_STRING, not {}",
                    what(),
                    crate::schema::data_type_name(c.data_type)
                ))
            }
        };
        return Ok(Encoding::Corrid(t));
    }
    let lists = [
        !c.int32_false_true.is_empty(),
        !c.fp32_false_true.is_empty(),
        !c.bool_false_true.is_empty(),
    ];
    if lists.iter().filter(|&&set| set).count() != 1 {
        return Err(format!(
            "{}: exactly one of int32_false_true, fp32_false_true and bool_false_true must be given",
            what()
        ));
    }
    let pair = |n: usize| {
        if n == 2 {
            Ok(())
        } else {
            Err(format!(
                "{}: the false/true list must have exactly 2 entries, not {n}",
                what()
            ))
        }
    };
    Ok(Encoding::Flag(if lists[0] {
        pair(c.int32_false_true.len())?;
        Truth::Int32(c.int32_false_true[0], c.int32_false_true[1])
    } else if lists[1] {
        pair(c.fp32_false_true.len())?;
        Truth::Fp32(c.fp32_false_true[0], c.fp32_false_true[1])
    } else {
        pair(c.bool_false_true.len())?;
        Truth::Bool(c.bool_false_true[0], c.bool_false_true[1])
    }))
}

impl ControlSpec {
    /// Reads `sequence_batching.control_input` of a (normalized) model
    /// config: `Ok(None)` when the model does not use the sequence batcher,
    /// an error for control inputs Triton would not load (unnamed, a kind
    /// given twice, missing or ambiguous false/true values, an unsupported
    /// CORRID data type). Tensors are listed in config order.
    pub fn from_config(cfg: &ModelConfig) -> Result<Option<ControlSpec>, String> {
        let Some(SchedulingChoice::SequenceBatching(sb)) = &cfg.scheduling_choice else {
            return Ok(None);
        };
        let mut controls: Vec<(String, ControlKind, Encoding)> = Vec::new();
        for input in &sb.control_input {
            if input.name.is_empty() {
                return Err("a sequence batching control input has no name".into());
            }
            for c in &input.control {
                let kind = match Kind::try_from(c.kind) {
                    Ok(Kind::ControlSequenceStart) => ControlKind::Start,
                    Ok(Kind::ControlSequenceEnd) => ControlKind::End,
                    Ok(Kind::ControlSequenceReady) => ControlKind::Ready,
                    Ok(Kind::ControlSequenceCorrid) => ControlKind::Corrid,
                    Err(_) => {
                        return Err(format!(
                            "control input '{}': unknown control kind {}",
                            input.name, c.kind
                        ))
                    }
                };
                if controls.iter().any(|(_, k, _)| *k == kind) {
                    return Err(format!(
                        "more than one control input carries {}",
                        kind_name(kind)
                    ));
                }
                controls.push((input.name.clone(), kind, encoding(&input.name, kind, c)?));
            }
        }
        Ok(Some(ControlSpec {
            batched: cfg.max_batch_size > 0,
            controls,
        }))
    }

    /// Whether the model has any control input.
    pub fn is_empty(&self) -> bool {
        self.controls.is_empty()
    }

    /// The control tensors of a batch whose executed entries are `rows`
    /// in batch order (for a batch record, its first `size` slots; see
    /// [`super::BatchRecord::executed_slots`]).
    pub fn tensors(&self, rows: &[SlotRecord]) -> Result<Vec<ControlTensor>, String> {
        let shape = if self.batched {
            vec![rows.len() as i64, 1]
        } else {
            vec![1]
        };
        let mut out = Vec::with_capacity(self.controls.len());
        for (name, kind, enc) in &self.controls {
            let data = match enc {
                Encoding::Flag(truth) => {
                    let flag = |r: &SlotRecord| match kind {
                        ControlKind::Start => r.start,
                        ControlKind::End => r.end,
                        _ => r.ready,
                    };
                    let pick = |r| flag(r) as usize;
                    match *truth {
                        Truth::Int32(f, t) => {
                            ControlValues::Int32(rows.iter().map(|r| [f, t][pick(r)]).collect())
                        }
                        Truth::Fp32(f, t) => {
                            ControlValues::Fp32(rows.iter().map(|r| [f, t][pick(r)]).collect())
                        }
                        Truth::Bool(f, t) => {
                            ControlValues::Bool(rows.iter().map(|r| [f, t][pick(r)]).collect())
                        }
                    }
                }
                Encoding::Corrid(t) => corrid_values(name, *t, rows)?,
            };
            out.push(ControlTensor {
                name: name.clone(),
                kind: *kind,
                datatype: data.datatype(),
                shape: shape.clone(),
                data,
            });
        }
        Ok(out)
    }
}

/// The CORRID value of an entry: padding (and a missing id) is 0.
fn entry_id(r: &SlotRecord) -> &CorrId {
    const ZERO: &CorrId = &CorrId::Int(0);
    if r.ready {
        &r.corrid
    } else {
        ZERO
    }
}

fn corrid_values(name: &str, t: CorridType, rows: &[SlotRecord]) -> Result<ControlValues, String> {
    let mismatch = |r: &SlotRecord, id: &CorrId| {
        let (what, dtype) = match id {
            CorrId::Str(_) => ("string", "a numeric data_type"),
            CorrId::Int(_) => ("integer", "data_type TYPE_STRING"),
        };
        format!(
            "slot {}: {what} correlation id {id} cannot be passed in CORRID control input '{name}' with {dtype} (Triton would send malformed data)",
            r.slot
        )
    };
    let ints = |rows: &[SlotRecord]| -> Result<Vec<u64>, String> {
        rows.iter()
            .map(|r| match entry_id(r) {
                CorrId::Int(v) => Ok(*v),
                id => Err(mismatch(r, id)),
            })
            .collect()
    };
    Ok(match t {
        CorridType::Uint64 => ControlValues::Uint64(ints(rows)?),
        // The low-order bytes of the 64-bit id, read as the element type.
        CorridType::Int64 => {
            ControlValues::Int64(ints(rows)?.into_iter().map(|v| v as i64).collect())
        }
        CorridType::Uint32 => {
            ControlValues::Uint32(ints(rows)?.into_iter().map(|v| v as u32).collect())
        }
        CorridType::Int32 => {
            ControlValues::Int32(ints(rows)?.into_iter().map(|v| v as u32 as i32).collect())
        }
        CorridType::String => ControlValues::Bytes(
            rows.iter()
                .map(|r| match entry_id(r) {
                    CorrId::Str(s) => Ok(s.clone()),
                    CorrId::Int(0) => Ok(String::new()),
                    id => Err(mismatch(r, id)),
                })
                .collect::<Result<_, _>>()?,
        ),
    })
}

/// The control tensors a model configured by `cfg` receives for a batch
/// whose executed entries are `rows` ([`ControlSpec::from_config`] then
/// [`ControlSpec::tensors`]); empty for a model without the sequence
/// batcher or without control inputs.
pub fn control_tensors(
    cfg: &ModelConfig,
    rows: &[SlotRecord],
) -> Result<Vec<ControlTensor>, String> {
    match ControlSpec::from_config(cfg)? {
        Some(spec) => spec.tensors(rows),
        None => Ok(Vec::new()),
    }
}
