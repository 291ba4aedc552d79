//! The one loader of models as Triton loads them, for every command that
//! uses a model directory (`validate --print-config`, `simulate`, `run`).
//!
//! [`load_models`] runs `validate`'s checks on the model directories given
//! and on the models their ensembles compose (looked up next to them, in
//! the same repository), for the target server described by
//! [`ServerOptions`]. Where Triton would refuse a load, the result is the
//! report `validate` shows; otherwise each model's [`LoadedModel`]: the
//! config after Triton's fill-in, the ONNX Runtime backend's auto-complete
//! when the model file is there and auto-complete is on, the normalized
//! instance groups and the instances, the versions served and, for an
//! ensemble, its step graph.

use super::repository::check_models;
use crate::diagnostics::{FileReport, Report, Severity};
use crate::lint::{CheckedModel, ServerOptions};
use crate::model::{LoadedModel, LoadedSet};
use crate::repo::ModelEntry;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Why models could not be loaded.
#[derive(Debug)]
pub enum LoadError {
    /// Triton would refuse the load: the report `validate` shows (the
    /// models with errors only).
    Invalid(Box<Report>),
    /// Not a model directory, or a model file ONNX Runtime's auto-complete
    /// cannot use.
    Other(String),
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Invalid(r) => {
                let n = r
                    .files
                    .iter()
                    .flat_map(|f| &f.diagnostics)
                    .filter(|d| d.severity == Severity::Error)
                    .count();
                let first = r.files.first().map(|f| f.path.as_str()).unwrap_or("");
                write!(f, "{first}: the configuration has {n} error(s)")
            }
            LoadError::Other(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for LoadError {}

fn has_errors(r: &FileReport) -> bool {
    r.diagnostics.iter().any(|d| d.severity == Severity::Error)
}

/// Loads the model directories `dirs` and the models their ensembles
/// compose; see the module documentation.
pub fn load_models(dirs: &[PathBuf], opts: &ServerOptions) -> Result<LoadedSet, LoadError> {
    let mut entries = Vec::with_capacity(dirs.len());
    for d in dirs {
        if !d.is_dir() {
            return Err(LoadError::Other(format!(
                "{}: not a model directory",
                crate::text::display::path(d)
            )));
        }
        let name = crate::files::dir_name_of(d).unwrap_or_default();
        entries.push(ModelEntry::new(d.clone(), name));
    }
    let checked = check_models(&entries, opts);
    let failed: Vec<FileReport> = checked
        .reports
        .iter()
        .filter(|r| has_errors(r))
        .cloned()
        .collect();
    if !failed.is_empty() {
        return Err(LoadError::Invalid(Box::new(Report { files: failed })));
    }

    // The composing models the requested ones reach, each once.
    let by_name = |name: &str| checked.models.iter().position(|m| m.entry.name == name);
    let mut order: Vec<usize> = (0..entries.len()).collect();
    let mut seen: HashSet<usize> = order.iter().copied().collect();
    let mut at = 0;
    while at < order.len() {
        let m = &checked.models[order[at]];
        at += 1;
        let Some(cfg) = m.prepared.as_ref().map(|p| &p.cfg) else {
            continue;
        };
        let Some(es) = crate::lint::rules::ensemble::ensemble_of(cfg) else {
            continue;
        };
        for step in &es.step {
            let Some(i) = by_name(&step.model_name) else {
                return Err(LoadError::Other(format!(
                    "ensemble '{}': step model '{}' is not in the repository",
                    m.entry.name, step.model_name
                )));
            };
            if seen.insert(i) {
                order.push(i);
            }
        }
    }
    // A composing model Triton cannot load fails its ensembles' loads.
    let mut failed: Vec<FileReport> = Vec::new();
    for &i in &order[entries.len()..] {
        let report = checked.context_reports.get(i - entries.len());
        if checked.models[i].has_errors || report.is_some_and(has_errors) {
            failed.extend(report.cloned());
        }
    }
    if !failed.is_empty() {
        return Err(LoadError::Invalid(Box::new(Report { files: failed })));
    }

    let mut set = LoadedSet {
        models: Vec::with_capacity(order.len()),
        requested: entries.len(),
    };
    for &i in &order {
        set.models.push(loaded_form(&checked.models[i], opts)?);
    }
    set.mark_decoupled_ensembles();
    Ok(set)
}

/// Loads one model directory (see [`load_models`]); the set holds it
/// first, then its composing models.
pub fn load_model(dir: &Path, opts: &ServerOptions) -> Result<LoadedSet, LoadError> {
    load_models(&[dir.to_path_buf()], opts)
}

/// The loaded form of a model that passed its checks.
fn loaded_form(m: &CheckedModel, opts: &ServerOptions) -> Result<LoadedModel, LoadError> {
    let prepared = m.prepared.as_ref().ok_or_else(|| {
        LoadError::Other(format!(
            "{}: cannot be loaded",
            crate::text::display::path(&m.entry.config_path)
        ))
    })?;
    let mut cfg = prepared.cfg.clone();
    let mut autocompleted = false;
    // Auto-complete leaves the version policy alone: one scan serves both.
    let scan = crate::repo::versions::scan_versions(&m.entry.dir, &cfg);
    if cfg.backend == "onnxruntime"
        && opts.autocomplete
        && model_file_present(&m.entry.dir, &cfg, &scan)
    {
        let ac = crate::autoconfig::AutoconfigOptions {
            gpus: opts.gpus.clone(),
            min_compute_capability: opts.min_compute_capability,
            // What Triton lists: control and state tensors as inputs too.
            triton_compatible: true,
            ..crate::autoconfig::AutoconfigOptions::default()
        };
        let outcome =
            crate::autoconfig::complete(&m.entry.dir, Some(&prepared.raw), &ac).map_err(|e| {
                LoadError::Other(format!(
                    "{}: Triton's ONNX Runtime backend cannot load the model (its auto-complete failed): {e}",
                    crate::text::display::path(&m.entry.dir)
                ))
            })?;
        // Auto-complete also fills the instance groups, which the loaded
        // form normalizes anyway: only other changes count.
        let groups = |c: &crate::schema::inference::ModelConfig| {
            let mut c = c.clone();
            crate::model::normalize_instance_groups(&mut c, &opts.gpus);
            c
        };
        autocompleted = groups(&outcome.full) != groups(&cfg);
        cfg = outcome.full;
    }
    Ok(LoadedModel::new(
        m.entry.name.clone(),
        m.entry.dir.clone(),
        cfg,
        scan.loaded,
        autocompleted,
        &opts.gpus,
    ))
}

/// Whether the model file of the version Triton would read first is in
/// the model directory (corpus checks and stand-in backends have none;
/// there the config stays as Triton's core leaves it).
fn model_file_present(
    dir: &Path,
    cfg: &crate::schema::inference::ModelConfig,
    scan: &crate::repo::versions::VersionScan,
) -> bool {
    let file = if cfg.default_model_filename.is_empty() {
        "model.onnx"
    } else {
        cfg.default_model_filename.as_str()
    };
    scan.loaded_dirs(dir)
        .first()
        .is_some_and(|(_, d)| d.join(file).exists())
}
