//! What the stateful backend itself does around each batch, beyond moving
//! states (that is [`super::state`]): docs/spec/stateful-backend.md §4–§7.
//!
//! * **Storage and capacity** (§4; the backend's `ModelState::InitModelState`
//!   and its chunks of slots): every instance
//!   keeps its sequences in chunks of slots keyed by correlation id; only
//!   `floor(max_candidate_sequences × max_candidate_sequence_use_ratio)`
//!   sequences fit, fewer than Triton admits. A new sequence that finds no
//!   free slot fails with `Too many simultaneous connections`; its row is
//!   still computed (as padding here) but nothing is stored for it.
//! * **`infer_end_requests: "0"`** (§5 step 1, §6; the backend's
//!   `PreProcessRequests`): a request carrying END is not run; its
//!   sequence's slot is freed and it is answered at once with outputs of
//!   shape `[1, …, 1]` holding one (here zero) element.
//! * **Padding** (§5 step 2, the backend's
//!   `TRITONBACKEND_ModelInstanceExecute`): every ONNX Runtime run is
//!   padded to `max_batch_size` rows, or to the smallest preferred batch
//!   size that holds the batch when `always_pad_to_max_batch` is `"1"`.
//! * **Idle sweep** (§5 step 3): ids not used for
//!   `max_sequence_idle_microseconds` (measured from their last execution)
//!   lose their slot.
//! * **Correlation id kinds** (§6): a string id for a
//!   model whose CORRID control is not `TYPE_STRING` fails the request with
//!   `correlation ID in request is not an unsigned int`, and the reverse
//!   with `correlation ID in request is not a string`.
//! * **Warm-up** (§7, the backend's `TrtOnnxModel::Prepare`):
//!   every instance runs the model at load on zero inputs with every row
//!   reset, at `max_batch_size`, at 1 (unless `always_pad_to_max_batch`)
//!   and at each preferred batch size ([`StatefulBackend::warmup_batch_sizes`],
//!   [`warmup_inputs`]; the runner makes the runs).
//! * **GPU-only parameters** (§7, §8): `ort_ep`, `compute_precision`, TRT
//!   caching and CUDA graphs do nothing on CPU; [`gpu_only_notes`] says so.

use super::input::RunRequest;
use super::output::RunResult;
use crate::batching::{CorrId, FxMap};
use crate::schema::inference::model_config::SchedulingChoice;
use crate::schema::inference::model_sequence_batching::control::Kind as ControlKind;
use crate::schema::inference::model_sequence_batching::StrategyChoice;
use crate::schema::inference::{DataType as PbDataType, ModelConfig};
use crate::tensor::{DataType, Tensor};

/// The backend's error for a new sequence that finds no free slot.
pub const TOO_MANY: &str = "Too many simultaneous connections";
/// A string correlation id for a model with numeric ids.
pub const NOT_UNSIGNED: &str = "correlation ID in request is not an unsigned int";
/// A numeric correlation id for a model with string ids.
pub const NOT_STRING: &str = "correlation ID in request is not a string";

/// How the storage of one instance is sized (§4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sizing {
    /// Slots of the first chunk, allocated at load.
    pub initial: usize,
    /// Slots of every further chunk.
    pub subsequent: usize,
    /// A chunk is added after a batch when fewer slots than this are free.
    pub alloc_threshold: usize,
    /// The last chunk is released when more slots than this are free (and
    /// it is entirely free).
    pub dealloc_threshold: usize,
    pub max_chunks: usize,
}

impl Sizing {
    /// The most sequences one instance can hold.
    pub fn capacity(&self) -> usize {
        self.initial + (self.max_chunks - 1) * self.subsequent
    }
}

fn param<'a>(cfg: &'a ModelConfig, key: &str) -> Option<&'a str> {
    cfg.parameters.get(key).map(|p| p.string_value.trim())
}

/// The storage sizing of a stateful-backend config, with the backend's
/// load-time checks (their messages, without the source location).
pub fn sizing(cfg: &ModelConfig) -> Result<Sizing, String> {
    let b = usize::try_from(cfg.max_batch_size.max(0)).unwrap_or(0);
    let n = match &cfg.scheduling_choice {
        Some(SchedulingChoice::SequenceBatching(sb)) => match &sb.strategy_choice {
            Some(StrategyChoice::Oldest(o)) => {
                usize::try_from(o.max_candidate_sequences.max(0)).unwrap_or(0)
            }
            _ => 0,
        },
        _ => 0,
    };
    // A ratio that is not a number leaves the default in force.
    let ratio = param(cfg, "max_candidate_sequence_use_ratio")
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(0.9);
    let max_conn = (n as f64 * ratio).floor().max(0.0) as usize;
    let lazy_keys = [
        "initial_buffer_size",
        "subsequent_buffer_size",
        "buffer_alloc_threshold",
        "buffer_dealloc_threshold",
    ];
    let (initial, subsequent, a_th, d_th) = if cfg.parameters.contains_key(lazy_keys[0]) {
        let mut v = [0usize; 4];
        for (slot, key) in v.iter_mut().zip(lazy_keys) {
            let text = param(cfg, key).ok_or_else(|| {
                format!("parameter '{key}' is missing: the four lazy buffer parameters go together")
            })?;
            let x: i64 = text
                .parse()
                .map_err(|_| format!("Invalid value for `{key}`"))?;
            *slot = usize::try_from(x).map_err(|_| format!("Invalid value for `{key}`"))?;
        }
        if max_conn < v[0] {
            return Err(
                "Initial buffer size cannot be larger than maximum allowed connections.".into(),
            );
        }
        (v[0].min(max_conn), v[1], v[2], v[3])
    } else {
        (n.min(max_conn), b, b, n)
    };
    if initial < b {
        return Err(
            "Initial buffer size must be larger than or equal to the max batch size".into(),
        );
    }
    if subsequent < b {
        // The backend's spelling.
        return Err(
            "Sbusequent buffer size must be larger than or equal to the max batch size.".into(),
        );
    }
    if a_th < b {
        return Err(
            "Buffer allocation threshold size must be larger than or equal to the max batch size."
                .into(),
        );
    }
    if a_th > initial {
        return Err("Initial buffer size cannot be smaller than allocation threshold.".into());
    }
    let max_chunks = (max_conn - initial)
        .checked_div(subsequent)
        .map_or(1, |extra| 1 + extra);
    Ok(Sizing {
        initial,
        subsequent,
        alloc_threshold: a_th,
        dealloc_threshold: d_th,
        max_chunks,
    })
}

/// The slots of one instance: chunks of slots, each free or held by a
/// correlation id.
#[derive(Debug, Clone)]
pub struct Slots {
    sizing: Sizing,
    /// Per chunk, per slot: whether it is held.
    chunks: Vec<Vec<bool>>,
    /// id → (chunk, slot, last execution in µs); Fx-hashed (looked up on
    /// every step).
    held: FxMap<CorrId, (usize, usize, u64)>,
}

impl Slots {
    pub fn new(sizing: Sizing) -> Self {
        Slots {
            sizing,
            chunks: vec![vec![false; sizing.initial]],
            held: FxMap::default(),
        }
    }

    /// Sequences holding a slot.
    pub fn len(&self) -> usize {
        self.held.len()
    }

    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// Allocated slots (all chunks).
    pub fn allocated(&self) -> usize {
        self.chunks.iter().map(Vec::len).sum()
    }

    pub fn holds(&self, id: &CorrId) -> bool {
        self.held.contains_key(id)
    }

    /// The slot of `id`, taking the lowest free one for a new id; `false`
    /// when none is free.
    pub fn lookup(&mut self, id: &CorrId, now_us: u64) -> bool {
        if let Some(h) = self.held.get_mut(id) {
            h.2 = now_us;
            return true;
        }
        for (c, chunk) in self.chunks.iter_mut().enumerate() {
            if let Some(s) = chunk.iter().position(|&held| !held) {
                chunk[s] = true;
                self.held.insert(id.clone(), (c, s, now_us));
                return true;
            }
        }
        false
    }

    /// Frees the slot of `id`; `false` when it held none.
    pub fn free(&mut self, id: &CorrId) -> bool {
        match self.held.remove(id) {
            Some((c, s, _)) => {
                self.chunks[c][s] = false;
                true
            }
            None => false,
        }
    }

    /// Frees the slots of ids unused for more than `idle_us`, except those
    /// for which `keep` is true.
    pub fn sweep(&mut self, now_us: u64, idle_us: u64, keep: impl Fn(&CorrId) -> bool) {
        if self
            .held
            .values()
            .all(|h| now_us.saturating_sub(h.2) <= idle_us)
        {
            return;
        }
        let stale: Vec<CorrId> = self
            .held
            .iter()
            .filter(|(id, h)| now_us.saturating_sub(h.2) > idle_us && !keep(id))
            .map(|(id, _)| id.clone())
            .collect();
        for id in stale {
            self.free(&id);
        }
    }

    /// The lazy allocation step after a batch: add a chunk when few slots
    /// are free, or release the last chunk when it is unused and many are.
    pub fn after_batch(&mut self) {
        let free = self.allocated() - self.held.len();
        let z = &self.sizing;
        if self.chunks.len() < z.max_chunks && free < z.alloc_threshold {
            self.chunks.push(vec![false; z.subsequent]);
        } else if self.chunks.len() > 1
            && free > z.dealloc_threshold
            && self.chunks.last().is_some_and(|c| c.iter().all(|&h| !h))
        {
            self.chunks.pop();
        }
    }
}

/// The stateful backend's per-batch behaviour for one model (all its
/// instances).
#[derive(Debug, Clone)]
pub struct StatefulBackend {
    max_batch_size: usize,
    infer_end_requests: bool,
    always_pad: bool,
    /// Ascending.
    preferred: Vec<usize>,
    string_ids: bool,
    idle_us: u64,
    /// Per instance.
    slots: Vec<Slots>,
    /// The `[1, …, 1]` zero outputs of an END request that is not run.
    end_outputs: Vec<(String, Tensor)>,
    /// Reused by [`Self::apply`].
    fates: Vec<Fate>,
}

/// What happens to one row of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fate {
    /// Run normally.
    Infer,
    /// Answered without running (`infer_end_requests: "0"`).
    EndOnly,
    /// Failed with this message (computed as padding, nothing stored).
    Error(String),
}

/// One request of a batch as the backend sees it.
#[derive(Debug, Clone, Copy)]
pub struct Row<'a> {
    pub corrid: Option<&'a CorrId>,
    pub end: bool,
}

impl StatefulBackend {
    /// `None` unless the config uses the stateful backend.
    pub fn from_config(cfg: &ModelConfig, instances: usize) -> Result<Option<Self>, String> {
        if cfg.backend != "stateful" {
            return Ok(None);
        }
        let sizing = sizing(cfg)?;
        let mut preferred = Vec::new();
        let mut idle_us = 1_000_000;
        let mut string_ids = false;
        if let Some(SchedulingChoice::SequenceBatching(sb)) = &cfg.scheduling_choice {
            idle_us = sb.max_sequence_idle_microseconds;
            if let Some(StrategyChoice::Oldest(o)) = &sb.strategy_choice {
                preferred = o
                    .preferred_batch_size
                    .iter()
                    .filter_map(|&p| usize::try_from(p).ok())
                    .collect();
            }
            string_ids = sb.control_input.iter().any(|c| {
                c.control.iter().any(|k| {
                    k.kind == ControlKind::ControlSequenceCorrid as i32
                        && k.data_type == PbDataType::TypeString as i32
                })
            });
        }
        let b = usize::try_from(cfg.max_batch_size.max(0)).unwrap_or(0);
        if preferred.is_empty() {
            preferred.push(b);
        }
        preferred.sort_unstable();
        let mut end_outputs = Vec::with_capacity(cfg.output.len());
        for o in &cfg.output {
            let dtype = DataType::from_config(o.data_type).unwrap_or(DataType::F32);
            // The leading 1 is the batch dimension the runner restores.
            let shape = vec![1i64; o.dims.len() + 1];
            let t = Tensor::zeros(dtype, shape).map_err(|e| e.to_string())?;
            end_outputs.push((o.name.clone(), t));
        }
        Ok(Some(StatefulBackend {
            max_batch_size: b,
            infer_end_requests: param(cfg, "infer_end_requests") != Some("0"),
            always_pad: param(cfg, "always_pad_to_max_batch") == Some("1"),
            preferred,
            string_ids,
            idle_us,
            slots: (0..instances.max(1)).map(|_| Slots::new(sizing)).collect(),
            end_outputs,
            fates: Vec::new(),
        }))
    }

    /// The slots of one instance.
    pub fn slots(&self, instance: usize) -> &Slots {
        &self.slots[instance]
    }

    /// The number of rows a run of `r` requests is padded to (§5 step 2).
    pub fn padded_size(&self, r: usize) -> usize {
        if r == 0 {
            return 0;
        }
        let p = if self.always_pad {
            self.preferred
                .iter()
                .copied()
                .find(|&p| p >= r)
                .unwrap_or(r)
        } else {
            self.max_batch_size
        };
        p.max(r)
    }

    /// The batch sizes of the warm-up runs the backend makes when it loads
    /// an instance (§7; the backend's `TrtOnnxModel::Prepare`), in its
    /// order: the maximum batch size; 1, unless
    /// `always_pad_to_max_batch` is `"1"`; then every preferred batch size
    /// other than the maximum, ascending.
    pub fn warmup_batch_sizes(&self) -> Vec<usize> {
        let mut sizes = vec![self.max_batch_size];
        if !self.always_pad {
            sizes.push(1);
        }
        sizes.extend(
            self.preferred
                .iter()
                .copied()
                .filter(|&p| p != self.max_batch_size),
        );
        sizes
    }

    /// The outputs of an END request that is not run.
    pub fn end_outputs(&self) -> &[(String, Tensor)] {
        &self.end_outputs
    }

    /// Decides the fate of every row of a batch on `instance` at `now_us`
    /// (§5 steps 1, 3, 4, 11, 12) and returns it with the padded size.
    pub fn plan(&mut self, instance: usize, now_us: u64, rows: &[Row]) -> (Vec<Fate>, usize) {
        let mut fates = Vec::with_capacity(rows.len());
        let padded = self.plan_into(instance, now_us, rows.len(), |j| rows[j], &mut fates);
        (fates, padded)
    }

    /// [`Self::plan`] of the `n` rows `row(0..n)` into `fates`.
    fn plan_into<'r>(
        &mut self,
        instance: usize,
        now_us: u64,
        n: usize,
        row: impl Fn(usize) -> Row<'r>,
        fates: &mut Vec<Fate>,
    ) -> usize {
        fates.clear();
        for j in 0..n {
            let row = row(j);
            fates.push(match row.corrid {
                Some(CorrId::Str(_)) if !self.string_ids => Fate::Error(NOT_UNSIGNED.into()),
                Some(CorrId::Int(_)) if self.string_ids => Fate::Error(NOT_STRING.into()),
                _ if row.end && !self.infer_end_requests => Fate::EndOnly,
                _ => Fate::Infer,
            });
        }
        let slots = &mut self.slots[instance];
        // END requests that are not run free their sequence at once (an id
        // without a slot is left alone, unlike the backend, which would
        // free slot 0 of chunk 0).
        for (j, fate) in fates.iter().enumerate() {
            if let (Fate::EndOnly, Some(k)) = (fate, row(j).corrid) {
                slots.free(k);
            }
        }
        let r = fates
            .iter()
            .filter(|f| !matches!(f, Fate::EndOnly | Fate::Error(_)))
            .count();
        slots.sweep(now_us, self.idle_us, |id| {
            (0..n).any(|j| row(j).corrid == Some(id))
        });
        for (j, fate) in fates.iter_mut().enumerate() {
            if let (Fate::Infer, Some(k)) = (&*fate, row(j).corrid) {
                if !slots.lookup(k, now_us) {
                    *fate = Fate::Error(TOO_MANY.into());
                }
            }
        }
        for (j, fate) in fates.iter().enumerate() {
            let row = row(j);
            if let (Fate::Infer, Some(k), true) = (fate, row.corrid, row.end) {
                slots.free(k);
            }
        }
        slots.after_batch();
        self.padded_size(r)
    }

    /// Applies [`Self::plan`] to a batch the runner assembled (parallel
    /// per-row vectors): END requests that are not run and requests with a
    /// correlation id of the wrong kind leave the batch; a request that
    /// found no slot becomes a padding row (computed, nothing restored or
    /// stored, reset set); the batch is padded. The answers of the rows
    /// taken out are returned as `(request index, result)`.
    #[allow(clippy::too_many_arguments)]
    pub fn apply<K>(
        &mut self,
        instance: usize,
        now_us: u64,
        requests: &[RunRequest],
        tags: &mut Vec<Option<usize>>,
        keys: &mut Vec<Option<K>>,
        sizes: &mut Vec<usize>,
        starts: &mut Vec<bool>,
    ) -> Vec<(usize, RunResult)> {
        let mut fates = std::mem::take(&mut self.fates);
        let padded = {
            let t: &[Option<usize>] = tags;
            self.plan_into(
                instance,
                now_us,
                t.len(),
                |j| Row {
                    corrid: t[j].and_then(|i| requests[i].sequence_id.as_ref()),
                    end: t[j].is_some_and(|i| requests[i].end),
                },
                &mut fates,
            )
        };
        let mut answers = Vec::new();
        let mut drop: Vec<bool> = Vec::new();
        for (j, fate) in fates.drain(..).enumerate() {
            let Some(i) = tags[j] else { continue };
            let r = &requests[i];
            let (outcome, out) = match fate {
                Fate::Infer => continue,
                Fate::EndOnly => (Ok(self.end_outputs.clone()), true),
                // Only a request that found no slot is still computed.
                Fate::Error(e) => (Err(format!("request {}: {e}", r.id)), e != TOO_MANY),
            };
            if out {
                drop.resize(tags.len(), false);
                drop[j] = true;
            }
            answers.push((
                i,
                RunResult {
                    id: r.id.clone(),
                    sequence_id: r.sequence_id.clone(),
                    outcome,
                },
            ));
            tags[j] = None;
            keys[j] = None;
            starts[j] = true;
        }
        self.fates = fates;
        if !drop.is_empty() {
            retain_unmarked(tags, &drop);
            retain_unmarked(keys, &drop);
            retain_unmarked(sizes, &drop);
            retain_unmarked(starts, &drop);
        }
        if padded > tags.len() && tags.iter().any(Option::is_some) {
            tags.resize(padded, None);
            keys.resize_with(padded, || None);
            sizes.resize(padded, 1);
            starts.resize(padded, true);
        }
        answers
    }
}

/// Drops the marked rows of a per-row vector.
fn retain_unmarked<T>(v: &mut Vec<T>, drop: &[bool]) {
    let mut j = 0;
    v.retain(|_| {
        j += 1;
        !drop.get(j - 1).copied().unwrap_or(false)
    });
}

/// One input of the ONNX model, as a session describes it: name, element
/// type (`None` when unsupported) and dims (`-1` where not fixed).
#[derive(Debug, Clone, Copy)]
pub struct ModelInput<'a> {
    pub name: &'a str,
    pub dtype: Option<DataType>,
    pub dims: &'a [i64],
}

/// The inputs of one warm-up run at batch size `b`, bound as the backend
/// binds them when it loads an instance (docs/spec/stateful-backend.md §7;
/// the backend's `TrtOnnxModel::Prepare` and `setBindings`), in the model's
/// input order:
///
/// * a client input of the config: its config dims, the first `-1` (the
///   backend's batch dimension) set to `b`; zeros;
/// * the reset input (`reset`, the START control's name, compared without
///   case): the model's dims with the first set to `b`, which must be the
///   model's only variable one; ones (every row starts a sequence);
/// * a state input (`states`): the model's dims, the last `-1` set to `b`;
///   zeros;
/// * any other input is refused with the backend's words.
///
/// A shape still holding a `-1` (a config or model with a second variable
/// dimension) is refused: ONNX Runtime cannot make a tensor of it, so the
/// backend's warm-up, and the model's load, fail.
pub fn warmup_inputs(
    cfg: &ModelConfig,
    model_inputs: &[ModelInput],
    reset: &str,
    states: &[&str],
    b: usize,
) -> Result<Vec<(String, Tensor)>, String> {
    let b = i64::try_from(b).map_err(|_| format!("batch size {b} is too large"))?;
    let mut out = Vec::with_capacity(model_inputs.len());
    for m in model_inputs {
        let dtype = m.dtype.ok_or_else(|| {
            format!(
                "input '{}' has an element type tritonctl cannot make",
                m.name
            )
        })?;
        let (shape, one) = if let Some(c) = cfg.input.iter().find(|i| i.name == m.name) {
            let mut shape = c.dims.clone();
            let batch = shape.iter().position(|&d| d == -1).ok_or(
                "Cannot infer the batch dimension based on the Triton model configuration",
            )?;
            shape[batch] = b;
            (shape, false)
        } else if m.name.eq_ignore_ascii_case(reset) {
            if m.dims.iter().rposition(|&d| d < 0) != Some(0) {
                return Err(
                    "Batch dimension should always be the first dimension for reset sequence tensor"
                        .to_string(),
                );
            }
            let mut shape = m.dims.to_vec();
            shape[0] = b;
            (shape, true)
        } else if states.contains(&m.name) {
            let mut shape = m.dims.to_vec();
            let batch = shape
                .iter()
                .rposition(|&d| d < 0)
                .ok_or("No dynamic dimension in the ONNX model for a state tensor")?;
            shape[batch] = b;
            (shape, false)
        } else {
            return Err(format!(
                "Model configuration does not match ONNX model for tensor name: {}",
                m.name
            ));
        };
        if shape.iter().any(|&d| d < 0) {
            return Err(format!(
                "input '{}' would have shape {shape:?} at batch size {b}: a second variable dimension, which ONNX Runtime cannot make a tensor of",
                m.name
            ));
        }
        let mut t = Tensor::zeros(dtype, shape).map_err(|e| format!("input '{}': {e}", m.name))?;
        if one {
            t.data = match t.data {
                crate::tensor::TensorData::Bool(v) => {
                    crate::tensor::TensorData::Bool(vec![true; v.len()])
                }
                _ => {
                    return Err(format!(
                        "reset input '{}' is {} in the model; the backend passes booleans",
                        m.name,
                        dtype.config_name()
                    ))
                }
            };
        }
        out.push((m.name.to_string(), t));
    }
    Ok(out)
}

/// Notes for parameters of a stateful-backend config that have no effect
/// on a CPU run (§7, §8).
pub fn gpu_only_notes(cfg: &ModelConfig) -> Vec<String> {
    if cfg.backend != "stateful" {
        return Vec::new();
    }
    let mut notes = Vec::new();
    for (key, what) in [
        (
            "ort_ep",
            "selects the GPU execution provider (TensorRT or CUDA)",
        ),
        ("compute_precision", "sets TensorRT's precision"),
        ("enable_trt_caching", "caches TensorRT engines"),
        ("trt_cache_dir", "is the TensorRT engine cache directory"),
        (
            "enable_cuda_graph",
            "captures CUDA graphs in the TensorRT execution provider",
        ),
    ] {
        if cfg.parameters.contains_key(key) {
            notes.push(format!(
                "parameter '{key}' {what}; it has no effect on a CPU run and is ignored"
            ));
        }
    }
    notes
}

#[cfg(test)]
mod tests;
