//! Loading a model directory for `tritonctl run`: the model as Triton
//! holds it after the load (`validate::load`, the one loader: `validate`'s
//! checks, errors stop the run; Triton's fill-in; a missing or partial
//! `config.pbtxt` of an ONNX model auto-completed as Triton's ONNX Runtime
//! backend would; instance groups normalized for the target server's GPUs),
//! plus the version directory to run (the highest served, or the one asked
//! for) and its model file.

use crate::lint::ServerOptions;
use crate::schema::inference::ModelConfig;
use std::path::{Path, PathBuf};

/// A model ready to run: its normalized config and files.
#[derive(Debug, Clone)]
pub struct LoadedModel {
    pub name: String,
    /// The model directory.
    pub dir: PathBuf,
    /// The config after Triton's fill-in and normalization (instance
    /// groups included).
    pub cfg: ModelConfig,
    /// Every instance Triton creates, passive ones included
    /// (`model::instances_of`).
    pub instances: Vec<crate::model::Instance>,
    /// The version directory chosen (`None` when the model has none, which
    /// only an ensemble may lack).
    pub version: Option<u64>,
    /// The ONNX file of that version (`None` for an ensemble).
    pub model_file: Option<PathBuf>,
    /// Whether ONNX Runtime's auto-complete added to the config (no or a
    /// partial `config.pbtxt`).
    pub autocompleted: bool,
    /// Things the user should know before the run, e.g. stateful-backend
    /// parameters that only matter on a GPU (see
    /// [`super::stateful::gpu_only_notes`]).
    pub notes: Vec<String>,
}

impl LoadedModel {
    pub fn is_ensemble(&self) -> bool {
        crate::model::is_ensemble(&self.cfg)
    }

    /// Whether the model uses the stateful backend (`state_pairs`).
    pub fn is_stateful_backend(&self) -> bool {
        self.cfg.backend == "stateful"
    }
}

/// Why a model cannot be loaded: the one loader's error (the report of
/// the models Triton would not load, or another reason).
pub use crate::validate::load::LoadError;

/// The backends whose models `run` executes: both run an ONNX file in ONNX
/// Runtime (the stateful backend as docs/spec/stateful-backend.md
/// describes).
pub const RUNNABLE_BACKENDS: [&str; 2] = ["onnxruntime", "stateful"];

/// Refuses a model whose backend `run` cannot execute (python, tensorrt,
/// pytorch, tensorflow, openvino, a custom backend...), naming the model,
/// its backend and what to do instead. A config that names no backend
/// (Triton would pick one from the file name) is left to the file lookup.
pub fn check_backend(model: &LoadedModel) -> Result<(), String> {
    let backend = model.cfg.backend.as_str();
    if backend.is_empty() || RUNNABLE_BACKENDS.contains(&backend) {
        return Ok(());
    }
    let platform = if model.cfg.platform.is_empty() {
        String::new()
    } else {
        format!(" (platform '{}')", model.cfg.platform)
    };
    Err(format!(
        "model '{}' uses backend '{backend}'{platform}, which tritonctl run cannot execute \
         (it runs ONNX models with ONNX Runtime: backends onnxruntime and stateful); \
         use tritonctl perf against a Triton server, or export the model to ONNX",
        model.name
    ))
}

/// Loads `dir` for a CPU-only server (see [`load_model_on`]).
pub fn load_model(dir: &Path, version: Option<u64>) -> Result<LoadedModel, LoadError> {
    load_model_on(dir, version, &ServerOptions::default())
}

/// Loads `dir` as Triton would on the server `server` (see the module
/// documentation). `version`: the version to run, default the highest.
pub fn load_model_on(
    dir: &Path,
    version: Option<u64>,
    server: &ServerOptions,
) -> Result<LoadedModel, LoadError> {
    if !dir.is_dir() {
        return Err(LoadError::Other(format!(
            "{}: not a model directory",
            dir.display()
        )));
    }
    let set = crate::validate::load::load_model(dir, server)?;
    let loaded = set.models.into_iter().next().expect("the model asked for");
    let cfg = loaded.config;
    let autocompleted = loaded.autocompleted;
    let instances = loaded.instances;
    let name = loaded.name;
    // The versions Triton serves: its reading of the directory names and
    // the version policy (`repo::versions`).
    let scan = crate::repo::versions::scan_versions(dir, &cfg);
    let served: Vec<(u64, String)> = scan
        .loaded
        .iter()
        .filter_map(|v| Some((u64::try_from(*v).ok()?, scan.dir_names.get(v)?.clone())))
        .collect();
    let chosen = match version {
        Some(v) => match served.iter().find(|(s, _)| *s == v) {
            Some(found) => Some(found.clone()),
            None => {
                let list = if served.is_empty() {
                    "none".to_string()
                } else {
                    served
                        .iter()
                        .map(|(v, _)| v.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                let why = if i64::try_from(v).is_ok_and(|v| scan.existing.contains(&v)) {
                    format!("version {v} is not selected by the version policy")
                } else {
                    format!("there is no version directory {v}")
                };
                return Err(LoadError::Other(format!(
                    "{}: {why} (versions Triton serves: {list})",
                    dir.display()
                )));
            }
        },
        // The highest version served, as Triton answers a request that
        // names no version.
        None => served.first().cloned(),
    };
    let mut notes = super::stateful::gpu_only_notes(&cfg);
    if cfg.backend == "stateful" && !cfg.model_warmup.is_empty() {
        notes.push(
            "model_warmup is not run for a stateful-backend model (Triton sends its samples \
             through the backend when it loads the model)"
                .to_string(),
        );
    }
    let mut model = LoadedModel {
        name,
        dir: dir.to_path_buf(),
        cfg,
        instances,
        version: chosen.as_ref().map(|(v, _)| *v),
        model_file: None,
        notes,
        autocompleted,
    };
    if model.is_ensemble() {
        return Ok(model);
    }
    // Refused before the model file is looked for: a python or TensorRT
    // model has no model.onnx, and "file missing" would hide the reason.
    check_backend(&model).map_err(LoadError::Other)?;
    let Some((_, version_dir)) = chosen else {
        return Err(LoadError::Other(format!(
            "{}: no numeric version directory (expected e.g. {}/1/model.onnx)",
            dir.display(),
            dir.display()
        )));
    };
    let file_name = model
        .cfg
        .parameters
        .get("onnx_file_name")
        .map(|p| p.string_value.clone())
        .filter(|s| !s.is_empty())
        .or_else(|| Some(model.cfg.default_model_filename.clone()).filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "model.onnx".to_string());
    let file = dir.join(version_dir).join(&file_name);
    if !file.exists() {
        return Err(LoadError::Other(format!(
            "{}: the model file is missing",
            file.display()
        )));
    }
    // ONNX Runtime opens the file itself: check first that it is a regular
    // file inside the model directory (`files`), so that a FIFO or a link
    // out of the directory is refused with a message.
    crate::files::open_regular(&file, Some(dir)).map_err(|e| {
        LoadError::Other(format!(
            "{}: cannot read: {}",
            file.display(),
            crate::files::io_message(&e)
        ))
    })?;
    model.model_file = Some(file);
    Ok(model)
}
