//! Loading a model directory for `tritonctl run`: the config is parsed,
//! checked with the `validate` rules (errors stop the run) and filled in
//! the way Triton does at load time; a missing `config.pbtxt` of an ONNX
//! model is auto-completed as Triton's ONNX Runtime backend would. The
//! version directory is the highest numeric one, or the one asked for.

use crate::config::normalize::DirFacts;
use crate::config::ParsedConfig;
use crate::diagnostics::FileReport;
use crate::diagnostics::Severity;
use crate::schema::inference::model_config::SchedulingChoice;
use crate::schema::inference::ModelConfig;
use std::path::{Path, PathBuf};

/// A model ready to run: its normalized config and files.
#[derive(Debug, Clone)]
pub struct LoadedModel {
    pub name: String,
    /// The model directory.
    pub dir: PathBuf,
    /// The config after Triton's fill-in and normalization.
    pub cfg: ModelConfig,
    /// The version directory chosen (`None` when the model has none, which
    /// only an ensemble may lack).
    pub version: Option<u64>,
    /// The ONNX file of that version (`None` for an ensemble).
    pub model_file: Option<PathBuf>,
    /// Whether the config was auto-completed (no `config.pbtxt`).
    pub autocompleted: bool,
    /// Things the user should know before the run, e.g. stateful-backend
    /// parameters that only matter on a GPU (see
    /// [`super::stateful::gpu_only_notes`]).
    pub notes: Vec<String>,
}

impl LoadedModel {
    pub fn is_ensemble(&self) -> bool {
        matches!(
            self.cfg.scheduling_choice,
            Some(SchedulingChoice::EnsembleScheduling(_))
        ) || self.cfg.platform == "ensemble"
    }

    /// Whether the model uses the stateful backend (`state_pairs`).
    pub fn is_stateful_backend(&self) -> bool {
        self.cfg.backend == "stateful"
    }
}

/// Why a model cannot be loaded.
#[derive(Debug)]
pub enum LoadError {
    /// The config has errors (the report holds the diagnostics).
    Invalid(Box<FileReport>),
    /// A file is missing or unreadable, or the model cannot be used.
    Other(String),
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Invalid(r) => {
                let n = r
                    .diagnostics
                    .iter()
                    .filter(|d| d.severity == Severity::Error)
                    .count();
                write!(f, "{}: the configuration has {n} error(s)", r.path)
            }
            LoadError::Other(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for LoadError {}

/// Loads `dir` (see the module documentation). `version`: the version to
/// run, default the highest.
pub fn load_model(dir: &Path, version: Option<u64>) -> Result<LoadedModel, LoadError> {
    if !dir.is_dir() {
        return Err(LoadError::Other(format!(
            "{}: not a model directory",
            dir.display()
        )));
    }
    let config_path = dir.join("config.pbtxt");
    let dir_name = crate::files::dir_name_of(dir);
    let (cfg, autocompleted) = if config_path.is_file() {
        let bytes = crate::files::read_in(&config_path, dir).map_err(|e| {
            LoadError::Other(format!(
                "{}: cannot read: {}",
                config_path.display(),
                crate::files::io_message(&e)
            ))
        })?;
        let opts = crate::lint::ServerOptions::default();
        let report = crate::validate::check_config_file(
            config_path.display().to_string(),
            bytes.clone(),
            Some(dir),
            &opts,
        );
        if report
            .diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error)
        {
            return Err(LoadError::Invalid(Box::new(report)));
        }
        let parsed = ParsedConfig::from_bytes(bytes);
        let raw = parsed.config.ok_or_else(|| {
            LoadError::Other(format!("{}: cannot be parsed", config_path.display()))
        })?;
        let prepared = crate::config::normalize::prepare(
            &raw,
            dir_name.as_deref(),
            &DirFacts::read(dir),
            opts.platform_default.as_deref(),
        )
        .map_err(|e| LoadError::Other(format!("{}: {e}", config_path.display())))?;
        let mut cfg = prepared.cfg;
        if cfg.name.is_empty() {
            cfg.name = prepared.name;
        }
        (cfg, false)
    } else {
        let outcome = crate::autoconfig::complete(
            dir,
            None,
            &crate::autoconfig::AutoconfigOptions::default(),
        )
        .map_err(|e| {
            LoadError::Other(format!(
                "{}: no config.pbtxt, and auto-complete failed: {e}",
                dir.display()
            ))
        })?;
        (outcome.full, true)
    };
    let name = if cfg.name.is_empty() {
        dir_name.unwrap_or_default()
    } else {
        cfg.name.clone()
    };
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
        version: chosen.as_ref().map(|(v, _)| *v),
        model_file: None,
        notes,
        autocompleted,
    };
    if model.is_ensemble() {
        return Ok(model);
    }
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
