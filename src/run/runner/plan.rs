//! What the runner works out once per model, before any request runs
//! ([`Plan`]): how each input is batched and padded, which control and
//! state tensors a batch carries, and the scheduler form of each request
//! (with its shape signature, [`Signatures`]).

use super::{setup, RunnerError};
use crate::batching::controls::ControlSpec;
use crate::batching::{Request, SeqHandle};
use crate::run::input::RunRequest;
use crate::run::model::LoadedModel;
use crate::run::reshape::Reshape;
use crate::run::state::{implicit_states, stateful_pairs, StateSpec, StateStore};
use crate::runtime::ModelSession;
use crate::schema::inference::model_config::SchedulingChoice;
use std::sync::Arc;

/// How the client's tensors of a batch are stacked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Layout {
    /// `max_batch_size: 0`: one request per run, tensors as given.
    Single,
    /// Stacked along the leading (batch) dimension.
    Batch,
    /// Stateful backend: leading dimension dropped, stacked along the
    /// config's `-1` axis of each tensor (by name).
    Stateful,
}

/// Everything about the model the driving thread needs.
pub(super) struct Plan {
    pub(super) layout: Layout,
    /// Stateful backend: the stacking axis (within the config dims) of
    /// each data input, by name (see [`Plan::input_axis`]).
    pub(super) input_axes: Vec<(String, usize)>,
    /// Stateful backend: the stacking axis of each of `outputs`.
    pub(super) output_axes: Vec<usize>,
    pub(super) controls: Option<ControlSpec>,
    /// Stateful backend: the reset input (the START control's name).
    pub(super) reset_input: Option<String>,
    /// The session's input names (controls it lacks are not passed).
    pub(super) session_inputs: Vec<String>,
    /// Outputs reported to the client, in config order.
    pub(super) outputs: Vec<String>,
    /// The session's outputs: how many, the index of each of `outputs`
    /// and of each state's output among them (a run gives its outputs in
    /// session order, see [`ModelSession::run_into`]).
    pub(super) session_outputs: usize,
    pub(super) output_at: Vec<usize>,
    pub(super) state_at: Vec<usize>,
    pub(super) store: StateStore<SeqHandle>,
    pub(super) max_batch_size: i64,
    /// The data inputs with a `reshape`: the batch ONNX Runtime gets is
    /// in the reshape shape ([`crate::run::reshape`]).
    pub(super) input_reshapes: Vec<Reshape>,
    /// Per entry of `outputs`: its `reshape`, by which the model's output
    /// is turned back into the `dims` shape for the client.
    pub(super) output_reshapes: Vec<Option<Reshape>>,
}

pub(super) fn plan(model: &LoadedModel, session: &ModelSession) -> Result<Plan, RunnerError> {
    let cfg = &model.cfg;
    let session_inputs: Vec<String> = session.inputs().iter().map(|t| t.name.clone()).collect();
    let stateful = model.is_stateful_backend();
    // Every client input of the config must be a model input (Triton's
    // ONNX Runtime backend refuses the model otherwise).
    for i in &cfg.input {
        if !session_inputs.contains(&i.name) {
            return Err(setup(format!(
                "model '{}': configuration input '{}' is not an input of the ONNX model {} (its inputs: {})",
                model.name,
                i.name,
                model.model_file.as_deref().unwrap_or(model.dir.as_path()).display(),
                session_inputs.join(", ")
            )));
        }
    }
    let specs: Vec<StateSpec> = if stateful {
        let pairs = stateful_pairs(cfg).map_err(setup)?;
        let mut specs = Vec::new();
        for p in &pairs {
            let t = session
                .inputs()
                .iter()
                .find(|t| t.name == p.input)
                .ok_or_else(|| {
                    setup(format!(
                        "state_pairs: '{}' is not an input of the ONNX model",
                        p.input
                    ))
                })?;
            let dtype = t.data_type().ok_or_else(|| {
                setup(format!(
                    "state '{}' has an unsupported element type",
                    p.input
                ))
            })?;
            specs.push(StateSpec::stateful_backend(p, dtype, &t.dims).map_err(setup)?);
        }
        specs
    } else {
        implicit_states(cfg, &model.dir).map_err(setup)?
    };
    for s in &specs {
        if !session.outputs().iter().any(|o| o.name == s.output_name) {
            return Err(setup(format!(
                "state output '{}' is not an output of the ONNX model",
                s.output_name
            )));
        }
    }
    let state_outputs: Vec<&str> = specs.iter().map(|s| s.output_name.as_str()).collect();
    let outputs: Vec<String> = if cfg.output.is_empty() {
        session
            .outputs()
            .iter()
            .map(|o| o.name.clone())
            .filter(|n| !state_outputs.contains(&n.as_str()))
            .collect()
    } else {
        cfg.output.iter().map(|o| o.name.clone()).collect()
    };
    for o in &outputs {
        if !session.outputs().iter().any(|t| &t.name == o) {
            return Err(setup(format!(
                "model '{}': configuration output '{o}' is not an output of the ONNX model",
                model.name
            )));
        }
    }
    let controls = ControlSpec::from_config(cfg).map_err(setup)?;
    let mut axes = Vec::new();
    let mut reset_input = None;
    let layout = if stateful {
        for t in cfg
            .input
            .iter()
            .map(|i| (&i.name, &i.dims))
            .chain(cfg.output.iter().map(|o| (&o.name, &o.dims)))
        {
            let axis = t.1.iter().rposition(|&d| d < 0).ok_or_else(|| {
                setup(format!(
                    "'{}' has no -1 dimension: the stateful backend stacks the sequences of a batch along it",
                    t.0
                ))
            })?;
            axes.push((t.0.clone(), axis));
        }
        if let Some(SchedulingChoice::SequenceBatching(sb)) = &cfg.scheduling_choice {
            reset_input = sb
                .control_input
                .iter()
                .find(|c| {
                    c.control.iter().any(|k| {
                        k.kind
                            == crate::schema::inference::model_sequence_batching::control::Kind::ControlSequenceStart as i32
                    })
                })
                .and_then(|c| {
                    session_inputs
                        .iter()
                        .find(|n| n.eq_ignore_ascii_case(&c.name))
                        .cloned()
                });
        }
        if reset_input.is_none() {
            return Err(setup(
                "the stateful backend needs a CONTROL_SEQUENCE_START control whose name is the model's reset input",
            ));
        }
        Layout::Stateful
    } else if cfg.max_batch_size > 0 {
        Layout::Batch
    } else {
        Layout::Single
    };
    // Every name was found among the session's outputs above.
    let position = |name: &str| {
        session
            .outputs()
            .iter()
            .position(|o| o.name == name)
            .ok_or_else(|| setup(format!("'{name}' is not an output of the ONNX model")))
    };
    let output_at = outputs
        .iter()
        .map(|o| position(o))
        .collect::<Result<_, _>>()?;
    let state_at = specs
        .iter()
        .map(|s| position(&s.output_name))
        .collect::<Result<_, _>>()?;
    let fp16 = stateful
        && cfg
            .parameters
            .get("store_states_as_fp16")
            .is_some_and(|p| p.string_value.trim() == "1");
    // (Stateful backend: `axes` holds the inputs', then the outputs'.)
    let output_axes = outputs
        .iter()
        .map(|o| {
            axes.get(cfg.input.len()..)
                .unwrap_or(&[])
                .iter()
                .find(|(n, _)| n == o)
                .map_or(0, |&(_, a)| a)
        })
        .collect();
    axes.truncate(cfg.input.len());
    let input_reshapes = Reshape::inputs(cfg);
    let mut with_reshape = Reshape::outputs(cfg);
    if stateful && (!input_reshapes.is_empty() || !with_reshape.is_empty()) {
        // The stateful backend stacks along the -1 axis of `dims`, which a
        // reshape would move; tritonctl does not model that combination.
        return Err(setup(format!(
            "model '{}': tritonctl run does not support `reshape` on a stateful-backend model; remove the reshape",
            model.name
        )));
    }
    let output_reshapes = outputs
        .iter()
        .map(|o| {
            with_reshape
                .iter()
                .position(|r| &r.name == o)
                .map(|k| with_reshape.swap_remove(k))
        })
        .collect();
    Ok(Plan {
        layout,
        input_axes: axes,
        output_axes,
        controls,
        reset_input,
        session_inputs,
        outputs,
        session_outputs: session.outputs().len(),
        output_at,
        state_at,
        store: StateStore::new(specs).with_fp16_storage(fp16),
        max_batch_size: i64::from(cfg.max_batch_size),
        input_reshapes,
        output_reshapes,
    })
}
/// The scheduler's view of a request: its id (for the scheduler's
/// messages; moved into the result when it is answered), its index as
/// `tag` (records are matched back by it) and, when the scheduler compares
/// shapes (`sigs`), the signature of its inputs.
pub(super) fn sched_request(
    index: usize,
    r: &RunRequest,
    mbs: i64,
    sigs: Option<&mut Signatures>,
    sequence: bool,
) -> Request {
    let mut q = Request::new(r.id.clone(), 0);
    // Models without a sequence batcher ignore the sequence fields.
    if sequence {
        q.sequence_id = r.sequence_id.clone();
        q.start = r.start;
        q.end = r.end;
    }
    q.batch_size = r.batch_size(mbs);
    q.priority = r.priority;
    q.timeout_us = r.timeout_us;
    q.tag = index as u64;
    if let Some(sigs) = sigs {
        q.shape = Some(sigs.of(r));
    }
    q
}

/// The input signatures of the requests (names and shapes), one shared
/// copy per distinct signature.
#[derive(Default)]
pub(super) struct Signatures {
    seen: std::collections::HashSet<Arc<str>>,
    buf: String,
    /// The input names and shapes of the last request, and its signature:
    /// a request with the same ones (as a sequence's requests usually
    /// are) gets it without formatting or hashing.
    last: Vec<(String, Vec<i64>)>,
    last_sig: Option<Arc<str>>,
}

impl Signatures {
    pub(super) fn of(&mut self, r: &RunRequest) -> Arc<str> {
        if let Some(sig) = &self.last_sig {
            let same = self.last.len() == r.inputs.len()
                && self
                    .last
                    .iter()
                    .zip(r.inputs.iter())
                    .all(|((n, s), (rn, t))| n == rn && *s == t.shape);
            if same {
                return sig.clone();
            }
        }
        let sig = self.format(r);
        self.last.resize_with(r.inputs.len(), Default::default);
        for ((n, s), (rn, t)) in self.last.iter_mut().zip(r.inputs.iter()) {
            n.clone_from(rn);
            s.clone_from(&t.shape);
        }
        self.last_sig = Some(sig.clone());
        sig
    }

    /// The signature of `r`, its names and shapes as text, shared.
    fn format(&mut self, r: &RunRequest) -> Arc<str> {
        use std::fmt::Write;
        self.buf.clear();
        for (k, (n, t)) in r.inputs.iter().enumerate() {
            if k > 0 {
                self.buf.push(';');
            }
            let _ = write!(self.buf, "{n}{:?}", t.shape);
        }
        if let Some(a) = self.seen.get(self.buf.as_str()) {
            return a.clone();
        }
        let a: Arc<str> = Arc::from(self.buf.as_str());
        self.seen.insert(a.clone());
        a
    }
}
