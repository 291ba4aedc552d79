//! Model-repository discovery (the way Triton finds models) and the
//! cross-model checks that need more than one config.

pub mod bls;

use crate::config::normalize::DirFacts;
use crate::config::ParsedConfig;
use crate::diagnostics::{Diagnostic, Severity};
use crate::files::dir_name_of;
use crate::lint::{self, Options};
use crate::validate::{prepare, FileReport, Prepared};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// One model directory found on disk.
#[derive(Debug, Clone)]
pub struct ModelEntry {
    /// The directory name (Triton's model name when the config has none).
    pub name: String,
    pub dir: PathBuf,
    /// `<dir>/config.pbtxt`, shown in reports.
    pub config_path: PathBuf,
}

/// Whether `path` is a model directory rather than a repository: it holds
/// a `config.pbtxt`, or (a model relying on auto-complete) it holds no
/// config but every sub-directory is named like a version (`1`, `2`, ...).
/// Triton itself would take such sub-directories as models named `1`...,
/// which is almost never what a user pointing at one model means.
pub fn is_model_dir(path: &Path) -> bool {
    if path.join("config.pbtxt").is_file() {
        return true;
    }
    let subdirs = visible_subdirs(path).unwrap_or_default();
    !subdirs.is_empty()
        && subdirs
            .iter()
            .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

fn visible_subdirs(path: &Path) -> std::io::Result<Vec<String>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(path)? {
        let e = e?;
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || !e.path().is_dir() {
            continue;
        }
        out.push(name);
    }
    out.sort();
    Ok(out)
}

/// Models under `path`: the directory itself when it is a model directory
/// (see [`is_model_dir`]), else each of its sub-directories, as Triton
/// polls a repository (files are ignored). Hidden directories are skipped
/// here; [`hidden_dirs`] lists them.
pub fn discover(path: &Path) -> std::io::Result<Vec<ModelEntry>> {
    if is_model_dir(path) {
        let name = dir_name_of(path).unwrap_or_default();
        return Ok(vec![entry(path.to_path_buf(), name)]);
    }
    Ok(visible_subdirs(path)?
        .into_iter()
        .map(|name| entry(path.join(&name), name))
        .collect())
}

/// Hidden sub-directories of a repository (none for a model directory).
/// Triton would try to load each of them as a model.
pub fn hidden_dirs(path: &Path) -> Vec<PathBuf> {
    if is_model_dir(path) {
        return Vec::new();
    }
    let mut out: Vec<PathBuf> = std::fs::read_dir(path)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with('.') && e.path().is_dir())
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

/// The report for a hidden directory of a repository.
pub fn hidden_dir_report(dir: &Path) -> FileReport {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    FileReport {
        path: dir.display().to_string(),
        model: None,
        src: String::new(),
        diagnostics: vec![Diagnostic::new(
            "W0706",
            format!("hidden directory '{name}' in the model repository: Triton tries to load it as a model named '{name}' and fails"),
        )
        .help(format!("move '{name}' out of the model repository"))],
    }
}

fn entry(dir: PathBuf, name: String) -> ModelEntry {
    ModelEntry {
        config_path: dir.join("config.pbtxt"),
        name,
        dir,
    }
}

/// A model of the repository after parsing and Triton's fill-in.
pub struct LoadedModel {
    pub entry: ModelEntry,
    /// The config as read (an empty one when the file is missing and
    /// auto-complete is on); `None` when it could not be read.
    pub parsed: Option<ParsedConfig>,
    pub prepared: Option<Prepared>,
    /// Whether the model's own checks found errors, so Triton would not
    /// load it.
    pub has_errors: bool,
}

/// Reads, prepares and checks one model on its own.
pub fn load_model(m: &ModelEntry, opts: &Options) -> (LoadedModel, FileReport) {
    let mut diagnostics = Vec::new();
    let mut missing = false;
    let parsed = match std::fs::read(&m.config_path) {
        Ok(bytes) => Some(ParsedConfig::from_bytes(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && opts.autocomplete => {
            // Triton starts from an empty config and lets auto-complete fill it.
            missing = true;
            Some(ParsedConfig::parse(String::new()))
        }
        Err(e) => {
            let reason = match e.kind() {
                std::io::ErrorKind::NotFound => "No such file or directory".to_string(),
                std::io::ErrorKind::PermissionDenied => "Permission denied".to_string(),
                _ => e.to_string(),
            };
            let mut d = Diagnostic::new("E0705", String::new()).triton(format!(
                "failed to open text file for read {}: {reason}",
                m.config_path.display()
            ));
            if e.kind() != std::io::ErrorKind::NotFound {
                // Not about auto-complete: the file is there but unreadable.
                d.message = format!("cannot read {}: {reason}", m.config_path.display());
            } else {
                d = d.help("write a config.pbtxt, or enable auto-complete on the server");
            }
            diagnostics.push(d);
            None
        }
    };
    let mut prepared = None;
    let mut src = String::new();
    if let Some(p) = &parsed {
        diagnostics.extend(p.diagnostics.iter().cloned());
        src = p.src.clone();
        if let Some(raw) = &p.config {
            let facts = DirFacts::read(&m.dir);
            let prep = prepare(raw, Some(&m.name), &facts, opts);
            if let (Ok(prep), true) = (&prep, missing) {
                let backend = if prep.cfg.backend.is_empty() {
                    prep.cfg.platform.as_str()
                } else {
                    prep.cfg.backend.as_str()
                };
                diagnostics.push(
                    Diagnostic::new(
                        "N0701",
                        format!(
                            "model '{}' has no config.pbtxt; Triton will auto-complete one for backend '{backend}'",
                            m.name
                        ),
                    )
                    .help("run `tritonctl autoconfig` to see the config Triton would use, and commit it"),
                );
            }
            prepared =
                crate::validate::check_prepared(p, prep, Some(&m.dir), opts, &mut diagnostics);
        }
    }
    let has_errors = diagnostics.iter().any(|d| d.severity == Severity::Error);
    let report = FileReport {
        path: m.config_path.display().to_string(),
        model: Some(prepared.as_ref().map_or(m.name.clone(), |p| p.name.clone())),
        src,
        diagnostics,
    };
    (
        LoadedModel {
            entry: m.clone(),
            parsed,
            prepared,
            has_errors,
        },
        report,
    )
}

/// Model names that ensembles among `loaded` use but that are not loaded.
fn unresolved_steps(loaded: &[LoadedModel], known: &HashSet<String>) -> Vec<String> {
    let mut out = Vec::new();
    for m in loaded {
        let Some(cfg) = m.prepared.as_ref().map(|p| &p.cfg) else {
            continue;
        };
        let Some(sched) = lint::rules::ensemble::ensemble_of(cfg) else {
            continue;
        };
        for s in &sched.step {
            if !s.model_name.is_empty()
                && !known.contains(&s.model_name)
                && !out.contains(&s.model_name)
            {
                out.push(s.model_name.clone());
            }
        }
    }
    out
}

/// The repository a model directory sits in (its parent), resolved so
/// that `.` works.
fn repository_of(dir: &Path) -> Option<PathBuf> {
    std::fs::canonicalize(dir)
        .ok()?
        .parent()
        .map(Path::to_path_buf)
}

/// Validates every model, then the cross-model rules. Models that
/// ensembles use but that are not among `models` are looked up next to
/// them in the repository (so a single ensemble directory can be
/// validated), loaded for reference only and not reported on.
pub fn validate_repository(models: &[ModelEntry], opts: &Options) -> Vec<FileReport> {
    let mut reports = Vec::new();
    let mut loaded = Vec::new();
    for m in models {
        let (lm, report) = load_model(m, opts);
        loaded.push(lm);
        reports.push(report);
    }
    let mut known: HashSet<String> = models.iter().map(|m| m.name.clone()).collect();
    let roots: Vec<PathBuf> = {
        let mut r: Vec<PathBuf> = models
            .iter()
            .filter_map(|m| repository_of(&m.dir))
            .collect();
        r.dedup();
        r
    };
    // Context models, transitively (an ensemble inside an ensemble).
    loop {
        let wanted = unresolved_steps(&loaded, &known);
        let mut added = false;
        for name in wanted {
            known.insert(name.clone());
            if name.starts_with('.') || name.contains(['/', '\\']) || name == ".." {
                continue;
            }
            if let Some(dir) = roots.iter().map(|r| r.join(&name)).find(|d| d.is_dir()) {
                let (lm, _) = load_model(&entry(dir, name), opts);
                loaded.push(lm);
                added = true;
            }
        }
        if !added {
            break;
        }
    }
    let cross = lint::rules::repository::check_repository(&loaded, opts);
    for (report, ds) in reports.iter_mut().zip(cross) {
        report.diagnostics.extend(ds);
    }
    reports.extend(bls_reports(&loaded[..models.len()], &loaded, &roots, opts));
    reports
}

/// The BLS checks (`bls`) of the Python models among `checked`: their
/// targets are looked up among `loaded`, then in the repositories `roots`
/// (loaded for reference only).
fn bls_reports(
    checked: &[LoadedModel],
    loaded: &[LoadedModel],
    roots: &[PathBuf],
    opts: &Options,
) -> Vec<FileReport> {
    let mut extra: std::collections::HashMap<String, Option<bool>> = Default::default();
    let mut lookup = |name: &str| -> Option<bool> {
        if let Some(m) = loaded.iter().find(|m| m.entry.name == name) {
            return Some(
                m.prepared
                    .as_ref()
                    .is_some_and(|p| bls::is_stateful(&p.cfg)),
            );
        }
        if name.is_empty() || name.starts_with('.') || name.contains(['/', '\\']) {
            return None;
        }
        *extra.entry(name.to_string()).or_insert_with(|| {
            let dir = roots.iter().map(|r| r.join(name)).find(|d| d.is_dir())?;
            let (lm, _) = load_model(&entry(dir, name.to_string()), opts);
            Some(
                lm.prepared
                    .as_ref()
                    .is_some_and(|p| bls::is_stateful(&p.cfg)),
            )
        })
    };
    let mut out = Vec::new();
    for m in checked {
        let info = bls::ModelInfo {
            name: &m.entry.name,
            dir: &m.entry.dir,
            cfg: m.prepared.as_ref().map(|p| &p.cfg),
        };
        out.extend(bls::check_model(&info, &mut lookup));
    }
    out
}
