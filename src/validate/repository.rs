//! Validation of model repositories: each model on its own, then the
//! cross-model rules (ensembles, BLS) that need more than one config.

use crate::config::normalize::{prepare, DirFacts};
use crate::config::ParsedConfig;
use crate::diagnostics::{Diagnostic, FileReport, Severity};
use crate::lint::registry::rule;
use crate::lint::rules::bls;
use crate::lint::{self, CheckedModel, ServerOptions};
use crate::repo::ModelEntry;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The report for a hidden directory of a repository.
pub fn hidden_dir_report(dir: &Path) -> FileReport {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    FileReport {
        path: crate::text::display::path(dir).into_owned(),
        model: None,
        src: String::new(),
        diagnostics: vec![Diagnostic::new(
            rule!("W0706"),
            format!("hidden directory '{name}' in the model repository: Triton tries to load it as a model named '{name}' and fails"),
        )
        .help(format!("move '{name}' out of the model repository"))],
    }
}

/// Reads, prepares and checks one model on its own.
pub fn load_model(m: &ModelEntry, opts: &ServerOptions) -> (CheckedModel, FileReport) {
    let mut diagnostics = Vec::new();
    let mut missing = false;
    let parsed = match m.read(&m.config_path) {
        Ok(bytes) => Some(ParsedConfig::from_bytes_checked(bytes)),
        Err(e) if crate::files::outside_root(&e).is_some() => {
            let outside = crate::files::outside_root(&e).expect("checked");
            diagnostics.push(lint::rules::repository::symlink_leaves_repository(
                &m.config_path,
                outside,
            ));
            None
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && opts.autocomplete => {
            // Triton starts from an empty config and lets auto-complete fill it.
            missing = true;
            Some(ParsedConfig::parse(String::new()))
        }
        Err(e) => {
            let reason = match e.kind() {
                std::io::ErrorKind::NotFound if e.get_ref().is_none() => {
                    "No such file or directory".to_string()
                }
                std::io::ErrorKind::PermissionDenied if e.get_ref().is_none() => {
                    "Permission denied".to_string()
                }
                _ => e.to_string(),
            };
            let mut d = Diagnostic::new(rule!("E0705"), String::new()).triton(format!(
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
            let prep = prepare(raw, Some(&m.name), &facts, opts.platform_default.as_deref());
            if let (Ok(prep), true) = (&prep, missing) {
                let backend = if prep.cfg.backend.is_empty() {
                    prep.cfg.platform.as_str()
                } else {
                    prep.cfg.backend.as_str()
                };
                diagnostics.push(
                    Diagnostic::new(
                        rule!("N0701"),
                        format!(
                            "model '{}' has no config.pbtxt; Triton will auto-complete one for backend '{backend}'",
                            m.name
                        ),
                    )
                    .help("run `tritonctl autoconfig` to see the config Triton would use, and commit it"),
                );
            }
            prepared = lint::check_prepared(p, prep, Some(&m.dir), opts, &mut diagnostics);
        }
    }
    let has_errors = diagnostics.iter().any(|d| d.severity == Severity::Error);
    let report = FileReport {
        path: crate::text::display::path(&m.config_path).into_owned(),
        model: Some(prepared.as_ref().map_or(m.name.clone(), |p| p.name.clone())),
        src,
        diagnostics,
    };
    (
        CheckedModel {
            entry: m.clone(),
            parsed,
            prepared,
            has_errors,
        },
        report,
    )
}

/// Model names that ensembles among `loaded` use but that are not in
/// `known`, each once, in the order the steps name them.
fn unresolved_steps(loaded: &[CheckedModel], known: &HashSet<String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
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
                && seen.insert(s.model_name.as_str())
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
pub fn validate_repository(models: &[ModelEntry], opts: &ServerOptions) -> Vec<FileReport> {
    check_models(models, opts).reports
}

/// What [`check_models`] found.
pub(super) struct Checked {
    /// One report per model asked for (cross-model findings included),
    /// then the BLS reports.
    pub reports: Vec<FileReport>,
    /// The models asked for, then the context models ensembles reach.
    pub models: Vec<CheckedModel>,
    /// The reports of the context models (`models[n..]`), by position.
    pub context_reports: Vec<FileReport>,
}

/// [`validate_repository`], keeping the checked models and the reports of
/// the context models (for `validate::load`).
pub(super) fn check_models(models: &[ModelEntry], opts: &ServerOptions) -> Checked {
    let mut reports = Vec::new();
    let mut loaded = Vec::new();
    let mut context_reports = Vec::new();
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
    // Context models, transitively (an ensemble inside an ensemble). Each
    // round looks only at the models the round before loaded: a chain of
    // ensembles adds one model per round.
    let mut from = 0;
    loop {
        let wanted = unresolved_steps(&loaded[from..], &known);
        from = loaded.len();
        let mut added = false;
        for name in wanted {
            known.insert(name.clone());
            if name.starts_with('.') || name.contains(['/', '\\']) || name == ".." {
                continue;
            }
            if let Some((root, dir)) = roots
                .iter()
                .map(|r| (r.clone(), r.join(&name)))
                .find(|(_, d)| d.is_dir())
            {
                let (lm, report) = load_model(&ModelEntry::new(dir, name).within(&root), opts);
                loaded.push(lm);
                context_reports.push(report);
                added = true;
            }
        }
        if !added {
            break;
        }
    }
    let cross = lint::rules::repository::check_repository(&loaded, opts);
    let mut cross = cross.into_iter();
    for (report, ds) in reports.iter_mut().zip(cross.by_ref()) {
        report.diagnostics.extend(ds);
    }
    for (report, ds) in context_reports.iter_mut().zip(cross) {
        report.diagnostics.extend(ds);
    }
    reports.extend(bls_reports(&loaded[..models.len()], &loaded, &roots, opts));
    Checked {
        reports,
        models: loaded,
        context_reports,
    }
}

/// The BLS checks (`bls`) of the Python models among `checked`: their
/// targets are looked up among `loaded`, then in the repositories `roots`
/// (loaded for reference only).
fn bls_reports(
    checked: &[CheckedModel],
    loaded: &[CheckedModel],
    roots: &[PathBuf],
    opts: &ServerOptions,
) -> Vec<FileReport> {
    let mut extra: std::collections::HashMap<String, Option<bool>> = Default::default();
    // The first model of each name.
    let mut by_name: std::collections::HashMap<&str, &CheckedModel> = Default::default();
    for m in loaded {
        by_name.entry(m.entry.name.as_str()).or_insert(m);
    }
    let mut lookup = |name: &str| -> Option<bool> {
        if let Some(m) = by_name.get(name) {
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
            let (root, dir) = roots
                .iter()
                .map(|r| (r, r.join(name)))
                .find(|(_, d)| d.is_dir())?;
            let (lm, _) = load_model(&ModelEntry::new(dir, name.to_string()).within(root), opts);
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
            root: m.entry.root.as_deref(),
            cfg: m.prepared.as_ref().map(|p| &p.cfg),
        };
        out.extend(bls::check_model(&info, &mut lookup));
    }
    out
}
