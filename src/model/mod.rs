//! The loaded model: what Triton holds once it has loaded a model, the one
//! form `validate --print-config`, `simulate`, `run` and `perf` share.
//!
//! [`LoadedModel`] is built by `validate::load` (which decides, with the
//! rules, whether Triton loads the model at all); this module only knows
//! the shape of the result and Triton's last fill-in steps that need the
//! target server: instance groups ([`normalize_instance_groups`],
//! docs/spec/validation.md §2.3) and the instances Triton creates from
//! them ([`instances_of`]). Ensembles carry their step graph
//! ([`EnsembleGraph`]); composing models are found by name in the
//! [`LoadedSet`] they were loaded with.

use crate::schema::inference::model_config::SchedulingChoice;
use crate::schema::inference::model_instance_group::Kind;
use crate::schema::inference::{ModelConfig, ModelInstanceGroup};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Where an instance runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Device {
    Cpu,
    Gpu(i32),
    /// `KIND_MODEL`: the model decides (its framework places it).
    Model,
}

impl std::fmt::Display for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Device::Cpu => f.write_str("cpu"),
            Device::Gpu(id) => write!(f, "gpu:{id}"),
            Device::Model => f.write_str("model"),
        }
    }
}

/// One model instance, as Triton creates it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instance {
    /// Triton's instance name: `<group name>_<k>` for the k-th of the
    /// group's `count` (the instances of one k on several GPUs share it).
    pub name: String,
    /// Index of its group in the normalized `instance_group`.
    pub group: usize,
    pub device: Device,
    /// Created and loaded, but never given requests by the scheduler.
    pub passive: bool,
}

/// Triton's `NormalizeInstanceGroup` for a server whose usable GPUs are
/// `gpus` (docs/spec/validation.md §2.3): a model without groups gets one
/// named after the model; unnamed groups are named `<model>_<i>`;
/// `KIND_AUTO` becomes `KIND_CPU` when the server has no usable GPU or a
/// listed GPU is not usable, else `KIND_GPU`; a count below 1 becomes 2
/// for CPU groups of the onnxruntime and tensorflow backends and 1
/// otherwise; a GPU group without `gpus` gets every usable GPU. None of
/// the backends tritonctl knows declares preferred groups, so none are
/// applied. Ensembles have no groups.
pub fn normalize_instance_groups(cfg: &mut ModelConfig, gpus: &[i32]) {
    if is_ensemble(cfg) {
        return;
    }
    let mut usable: Vec<i32> = gpus.to_vec();
    usable.sort_unstable();
    usable.dedup();
    if cfg.instance_group.is_empty() {
        cfg.instance_group.push(ModelInstanceGroup {
            name: cfg.name.clone(),
            ..ModelInstanceGroup::default()
        });
    }
    let model = cfg.name.clone();
    let backend = cfg.backend.clone();
    for (i, group) in cfg.instance_group.iter_mut().enumerate() {
        if group.name.is_empty() {
            group.name = format!("{model}_{i}");
        }
        if group.kind == Kind::Auto as i32 {
            let missing = group.gpus.iter().any(|g| usable.binary_search(g).is_err());
            group.kind = if usable.is_empty() || missing {
                Kind::Cpu as i32
            } else {
                Kind::Gpu as i32
            };
        }
        if group.count < 1 {
            let many = backend == "onnxruntime" || backend == "tensorflow";
            group.count = if group.kind == Kind::Cpu as i32 && many {
                2
            } else {
                1
            };
        }
        if group.kind == Kind::Gpu as i32 && group.gpus.is_empty() {
            group.gpus = usable.clone();
        }
    }
}

/// At most this many instances are listed ([`instances_of`]); a config
/// may ask for billions, which no server creates and no list should hold.
pub const MAX_LISTED_INSTANCES: usize = 1 << 16;

/// How many instances Triton creates from normalized groups, counted
/// without listing them (saturating).
pub fn instance_count(cfg: &ModelConfig) -> u64 {
    cfg.instance_group
        .iter()
        .map(|g| {
            let per_k = if g.kind == Kind::Gpu as i32 {
                g.gpus.len() as u64
            } else {
                1
            };
            (g.count.max(0) as u64).saturating_mul(per_k)
        })
        .fold(0u64, u64::saturating_add)
}

/// The instances Triton creates from normalized groups, in its order:
/// group by group, for each k below `count` one instance per listed GPU
/// (docs/spec/validation.md §2.3). The list stops at
/// [`MAX_LISTED_INSTANCES`]; [`instance_count`] tells the whole number.
pub fn instances_of(cfg: &ModelConfig) -> Vec<Instance> {
    let mut out = Vec::new();
    for (g, group) in cfg.instance_group.iter().enumerate() {
        let devices: Vec<Device> = if group.kind == Kind::Gpu as i32 {
            group.gpus.iter().map(|&id| Device::Gpu(id)).collect()
        } else if group.kind == Kind::Model as i32 {
            vec![Device::Model]
        } else {
            vec![Device::Cpu]
        };
        if devices.is_empty() {
            continue;
        }
        for k in 0..group.count.max(0) {
            let name = format!("{}_{k}", group.name);
            for &device in &devices {
                if out.len() >= MAX_LISTED_INSTANCES {
                    return out;
                }
                out.push(Instance {
                    name: name.clone(),
                    group: g,
                    device,
                    passive: group.passive,
                });
            }
        }
    }
    out
}

/// Whether `cfg` is an ensemble.
pub fn is_ensemble(cfg: &ModelConfig) -> bool {
    matches!(
        cfg.scheduling_choice,
        Some(SchedulingChoice::EnsembleScheduling(_))
    ) || cfg.platform == "ensemble"
}

/// One input or output as the client sees it and as the model gets it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Io {
    pub name: String,
    /// Triton's data type name without `TYPE_` (`FP32`, `BYTES`, ...).
    pub datatype: String,
    /// The shape a request carries, without the batch dimension.
    pub dims: Vec<i64>,
    /// The shape the model is given (or produces), without the batch
    /// dimension: `reshape.shape` when the config has one, else `dims`.
    pub model_dims: Vec<i64>,
    pub optional: bool,
}

impl Io {
    /// Whether the model sees another shape than the client sends.
    pub fn reshaped(&self) -> bool {
        self.dims != self.model_dims
    }
}

/// One step of an ensemble.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnsembleStep {
    /// The composing model, by name (see [`LoadedSet::get`]).
    pub model: String,
    /// The version the step asks for (-1: the latest served).
    pub version: i64,
    /// (model input, ensemble tensor) pairs.
    pub inputs: Vec<(String, String)>,
    /// (model output, ensemble tensor) pairs.
    pub outputs: Vec<(String, String)>,
    /// The steps whose outputs this step reads, ascending.
    pub after: Vec<usize>,
}

/// An ensemble's steps and how tensors flow between them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnsembleGraph {
    pub steps: Vec<EnsembleStep>,
}

impl EnsembleGraph {
    /// The graph of `cfg`'s `ensemble_scheduling` (empty when it has
    /// none). A step depends on the step that produces a tensor it reads;
    /// tensors nobody produces are ensemble inputs.
    pub fn of(cfg: &ModelConfig) -> EnsembleGraph {
        let Some(SchedulingChoice::EnsembleScheduling(es)) = &cfg.scheduling_choice else {
            return EnsembleGraph { steps: Vec::new() };
        };
        let mut producer: BTreeMap<&str, usize> = BTreeMap::new();
        for (i, s) in es.step.iter().enumerate() {
            for tensor in s.output_map.values() {
                producer.entry(tensor.as_str()).or_insert(i);
            }
        }
        let steps = es
            .step
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let mut inputs: Vec<(String, String)> = s
                    .input_map
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                inputs.sort();
                let mut outputs: Vec<(String, String)> = s
                    .output_map
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                outputs.sort();
                let mut after: Vec<usize> = inputs
                    .iter()
                    .filter_map(|(_, t)| producer.get(t.as_str()).copied())
                    .filter(|&p| p != i)
                    .collect();
                after.sort_unstable();
                after.dedup();
                EnsembleStep {
                    model: s.model_name.clone(),
                    version: s.model_version,
                    inputs,
                    outputs,
                    after,
                }
            })
            .collect();
        EnsembleGraph { steps }
    }
}

/// A model as Triton holds it after the load.
#[derive(Debug, Clone)]
pub struct LoadedModel {
    /// Triton's model name (the directory name).
    pub name: String,
    /// The model directory.
    pub dir: PathBuf,
    /// The config Triton reports for the model (`GET
    /// /v2/models/<m>/config`): backend fields, normalization, backend
    /// auto-complete and instance groups filled in.
    pub config: ModelConfig,
    /// Every instance Triton creates, passive ones included, in Triton's
    /// order (none for an ensemble).
    pub instances: Vec<Instance>,
    /// The versions Triton serves, highest first.
    pub versions: Vec<i64>,
    /// Whether the backend's auto-complete added to the config (the ONNX
    /// Runtime backend, from the model file).
    pub autocompleted: bool,
    /// The step graph of an ensemble.
    pub ensemble: Option<EnsembleGraph>,
}

impl LoadedModel {
    /// Builds the loaded form of a config that Triton's core has filled
    /// in (backend fields, normalization, backend auto-complete):
    /// instance groups are normalized for a server with `gpus`.
    pub fn new(
        name: String,
        dir: PathBuf,
        mut config: ModelConfig,
        versions: Vec<i64>,
        autocompleted: bool,
        gpus: &[i32],
    ) -> LoadedModel {
        if config.name.is_empty() {
            config.name = name.clone();
        }
        normalize_instance_groups(&mut config, gpus);
        let ensemble = is_ensemble(&config).then(|| EnsembleGraph::of(&config));
        let instances = if ensemble.is_some() {
            Vec::new()
        } else {
            instances_of(&config)
        };
        LoadedModel {
            name,
            dir,
            config,
            instances,
            versions,
            autocompleted,
            ensemble,
        }
    }

    pub fn is_ensemble(&self) -> bool {
        self.ensemble.is_some()
    }

    /// The instances the scheduler gives work to (not passive), as indexes
    /// into [`instances`](Self::instances).
    pub fn active_instances(&self) -> Vec<usize> {
        (0..self.instances.len())
            .filter(|&i| !self.instances[i].passive)
            .collect()
    }

    /// The inputs, as clients send them and as the model gets them.
    pub fn inputs(&self) -> Vec<Io> {
        inputs_of(&self.config)
    }

    /// The outputs, as the model produces them and as clients get them.
    pub fn outputs(&self) -> Vec<Io> {
        outputs_of(&self.config)
    }

    /// The config as Triton's `GET /v2/models/<m>/config` returns it: the
    /// protobuf JSON form with field names as in the proto and every
    /// primitive field printed (`convert`).
    pub fn config_json(&self) -> String {
        use prost::Message;
        let msg = prost_reflect::DynamicMessage::decode(
            crate::schema::model_config(),
            self.config.encode_to_vec().as_slice(),
        )
        .expect("a ModelConfig encodes to a valid ModelConfig");
        crate::convert::to_json(&msg)
    }
}

/// The inputs of `cfg`, as clients send them and as the model gets them.
pub fn inputs_of(cfg: &ModelConfig) -> Vec<Io> {
    cfg.input
        .iter()
        .map(|i| Io {
            name: i.name.clone(),
            datatype: datatype_name(i.data_type),
            dims: i.dims.clone(),
            model_dims: i
                .reshape
                .as_ref()
                .map_or(i.dims.clone(), |r| r.shape.clone()),
            optional: i.optional,
        })
        .collect()
}

/// The outputs of `cfg`, as the model produces them and as clients get
/// them.
pub fn outputs_of(cfg: &ModelConfig) -> Vec<Io> {
    cfg.output
        .iter()
        .map(|o| Io {
            name: o.name.clone(),
            datatype: datatype_name(o.data_type),
            dims: o.dims.clone(),
            model_dims: o
                .reshape
                .as_ref()
                .map_or(o.dims.clone(), |r| r.shape.clone()),
            optional: false,
        })
        .collect()
}

fn datatype_name(code: i32) -> String {
    crate::schema::inference::DataType::try_from(code)
        .map(|t| {
            let name = t.as_str_name();
            name.strip_prefix("TYPE_").unwrap_or(name).to_string()
        })
        .unwrap_or_else(|_| format!("<{code}>"))
}

/// Models loaded together: the ones asked for and, after them, the models
/// their ensembles compose (transitively), each once.
#[derive(Debug, Clone, Default)]
pub struct LoadedSet {
    pub models: Vec<LoadedModel>,
    /// How many of `models` were asked for (the first ones).
    pub requested: usize,
}

impl LoadedSet {
    /// The first model of that name.
    pub fn get(&self, name: &str) -> Option<&LoadedModel> {
        self.models.iter().find(|m| m.name == name)
    }

    /// Sets every ensemble's `model_transaction_policy` as Triton does when
    /// it validates the ensemble's graph (docs/spec/validation.md §3.5): the
    /// field is always set, and `decoupled` is true exactly when a step
    /// that maps outputs runs a decoupled model (a composed ensemble counts
    /// with its own computed value). Iterative, as chains of ensembles may
    /// be deep; a cycle (refused by the checks) counts as not decoupled.
    pub fn mark_decoupled_ensembles(&mut self) {
        use crate::schema::inference::ModelTransactionPolicy;
        let mut index: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        for (i, m) in self.models.iter().enumerate() {
            index.entry(m.name.as_str()).or_insert(i);
        }
        let n = self.models.len();
        // 0 unvisited, 1 on the stack, 2 done
        let mut state = vec![0u8; n];
        let mut decoupled = vec![false; n];
        let producing_steps = |m: &LoadedModel| -> Vec<usize> {
            m.ensemble
                .iter()
                .flat_map(|g| &g.steps)
                .filter(|s| !s.outputs.is_empty())
                .filter_map(|s| index.get(s.model.as_str()).copied())
                .collect()
        };
        for root in 0..n {
            let mut stack = vec![(root, false)];
            while let Some((j, expanded)) = stack.pop() {
                if state[j] == 2 {
                    continue;
                }
                let m = &self.models[j];
                if !expanded {
                    if state[j] == 1 {
                        continue;
                    }
                    state[j] = 1;
                    stack.push((j, true));
                    for k in producing_steps(m) {
                        if state[k] == 0 {
                            stack.push((k, false));
                        }
                    }
                    continue;
                }
                decoupled[j] = if m.is_ensemble() {
                    producing_steps(m).into_iter().any(|k| decoupled[k])
                } else {
                    m.config
                        .model_transaction_policy
                        .as_ref()
                        .is_some_and(|p| p.decoupled)
                };
                state[j] = 2;
            }
        }
        for (m, d) in self.models.iter_mut().zip(decoupled) {
            if m.is_ensemble() {
                m.config.model_transaction_policy = Some(ModelTransactionPolicy { decoupled: d });
            }
        }
    }
}

#[cfg(test)]
mod tests;
