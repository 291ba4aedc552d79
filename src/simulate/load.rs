//! The config to simulate: read, parsed, bound, and turned into scheduler
//! settings the way Triton does it.

use super::Error;
use crate::batching::Settings;
use crate::config::normalize::DirFacts;
use crate::config::ParsedConfig;
use crate::diagnostics::Severity;
use crate::diagnostics::{FileReport, Report};
use crate::schema::inference::ModelConfig;
use std::path::{Path, PathBuf};

/// The config as read: its file, text and bound forms.
#[derive(Debug)]
pub struct Loaded {
    /// The config file (`config.pbtxt` inside a directory given).
    pub file: PathBuf,
    /// The model directory, when the config is a model's `config.pbtxt`.
    pub model_dir: Option<PathBuf>,
    /// Parsed and bound without errors.
    pub parsed: ParsedConfig,
    /// The target server's GPU ids (`--gpus`; none: a CPU-only server).
    pub gpus: Vec<i32>,
}

impl Loaded {
    /// The config file's name as messages show it.
    pub fn name(&self) -> String {
        self.file.display().to_string()
    }

    pub fn config(&self) -> &ModelConfig {
        self.parsed
            .config
            .as_ref()
            .expect("load_config returns clean configs only")
    }

    /// Scheduler settings of `cfg` (this config or a variant of it): the
    /// model name from the directory when the config names none, then
    /// Triton's normalization.
    pub fn settings(&self, cfg: &ModelConfig) -> Result<Settings, Error> {
        self.settings_of(cfg)
            .map_err(|e| Error::Input(format!("{}: {e}", self.name())))
    }

    /// [`settings`](Self::settings) with the bare reason on failure.
    pub fn settings_of(&self, cfg: &ModelConfig) -> Result<Settings, String> {
        Settings::from_config(&self.loaded(cfg).config)
    }

    /// `cfg` (this config or a variant of it) as Triton holds it after the
    /// load on the target server: the model name from the directory when
    /// the config names none, Triton's backend fields (as far as the
    /// directory tells them) and normalization, then the instance groups
    /// and instances (`model::LoadedModel`).
    pub fn loaded(&self, cfg: &ModelConfig) -> crate::model::LoadedModel {
        let mut cfg = cfg.clone();
        let dir_name = self
            .model_dir
            .as_deref()
            .and_then(crate::files::dir_name_of)
            .or_else(|| {
                self.file
                    .parent()
                    .and_then(|d| d.file_name())
                    .map(|n| n.to_string_lossy().into_owned())
            })
            .unwrap_or_default();
        let facts = self
            .model_dir
            .as_deref()
            .map(DirFacts::read)
            .unwrap_or_default();
        // A backend Triton cannot determine is refused by `validate`; the
        // scheduler does not need it (only default instance counts do).
        let mut filled = cfg.clone();
        if crate::config::normalize::autofill_backend_fields(&mut filled, &dir_name, &facts).is_ok()
        {
            cfg = filled;
        } else if cfg.name.is_empty() {
            cfg.name = dir_name.clone();
        }
        crate::config::normalize::normalize(&mut cfg);
        crate::model::LoadedModel::new(
            dir_name,
            self.model_dir.clone().unwrap_or_default(),
            cfg,
            Vec::new(),
            false,
            &self.gpus,
        )
    }
}

/// The rules on instance groups (`lint::rules::instance`): a config they
/// refuse on the target server is not simulated.
const INSTANCE_RULES: &[&str] = &["E0401", "E0402", "E0403", "E0404", "E0405"];

/// Reads, parses and binds the config at `path` (a `config.pbtxt` or a
/// model directory). Syntax or schema errors come back as
/// [`Error::Invalid`] with the report `validate` would show.
pub fn load_config(path: &Path, gpus: &[i32]) -> Result<Loaded, Error> {
    let (file, model_dir) = if path.is_dir() {
        let f = path.join("config.pbtxt");
        if !f.is_file() {
            return Err(Error::Input(format!(
                "{}: a directory without a config.pbtxt",
                path.display()
            )));
        }
        (f, Some(path.to_path_buf()))
    } else {
        // A file named on the command line: read wherever it leads.
        let dir =
            (path.file_name().is_some_and(|n| n == "config.pbtxt")).then(|| match path.parent() {
                Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
                _ => PathBuf::from("."),
            });
        (path.to_path_buf(), dir)
    };
    let name = file.display().to_string();
    let read = match model_dir.as_deref() {
        Some(dir) if path.is_dir() => crate::files::read_in(&file, dir),
        _ => crate::files::read_file(&file),
    };
    let bytes = read.map_err(|e| {
        Error::Input(format!(
            "{name}: cannot read: {}",
            crate::files::io_message(&e)
        ))
    })?;
    let parsed = ParsedConfig::from_bytes(bytes);
    let errors = parsed
        .diagnostics
        .iter()
        .any(|d| d.severity == Severity::Error);
    if errors || parsed.config.is_none() || parsed.message.is_none() {
        return Err(Error::Invalid(Box::new(Report {
            files: vec![FileReport {
                path: name,
                model: None,
                src: parsed.src,
                diagnostics: parsed.diagnostics,
            }],
        })));
    }
    let loaded = Loaded {
        file,
        model_dir,
        parsed,
        gpus: gpus.to_vec(),
    };
    // The instances are what Triton creates on the target server: where it
    // refuses the instance groups there (a GPU it does not have, ...), the
    // run would be of a model no server holds.
    let report = crate::validate::check_config_file(
        name.clone(),
        loaded.parsed.src.as_bytes().to_vec(),
        loaded.model_dir.as_deref(),
        &crate::lint::ServerOptions {
            gpus: gpus.to_vec(),
            ..crate::lint::ServerOptions::default()
        },
    );
    let refused: Vec<_> = report
        .diagnostics
        .into_iter()
        .filter(|d| d.severity == Severity::Error && INSTANCE_RULES.contains(&d.code()))
        .collect();
    if !refused.is_empty() {
        return Err(Error::Invalid(Box::new(Report {
            files: vec![FileReport {
                path: name,
                model: None,
                src: loaded.parsed.src.clone(),
                diagnostics: refused,
            }],
        })));
    }
    Ok(loaded)
}
