//! Model-repository discovery (the way Triton finds models) and the
//! cross-model checks that need more than one config.

use crate::config::normalize::DirFacts;
use crate::config::ParsedConfig;
use crate::diagnostics::Diagnostic;
use crate::lint::{self, ModelCtx, Options};
use crate::validate::{dir_name_of, prepare, FileReport, Prepared};
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

/// Models under `path`: the directory itself when it holds a
/// `config.pbtxt`, else each of its sub-directories (a model repository).
/// Hidden directories are skipped.
pub fn discover(path: &Path) -> std::io::Result<Vec<ModelEntry>> {
    if path.join("config.pbtxt").is_file() {
        let name = dir_name_of(path).unwrap_or_default();
        return Ok(vec![entry(path.to_path_buf(), name)]);
    }
    let mut out = Vec::new();
    for e in std::fs::read_dir(path)? {
        let e = e?;
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || !e.file_type()?.is_dir() {
            continue;
        }
        out.push(entry(e.path(), name));
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
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
    pub parsed: Option<ParsedConfig>,
    pub prepared: Option<Prepared>,
}

/// Validates every model, then the cross-model rules.
pub fn validate_repository(models: &[ModelEntry], opts: &Options) -> Vec<FileReport> {
    let mut reports = Vec::new();
    let mut loaded = Vec::new();
    for m in models {
        let mut diagnostics = Vec::new();
        let parsed = match std::fs::read(&m.config_path) {
            Ok(bytes) => Some(ParsedConfig::from_bytes(bytes)),
            Err(_) => None,
        };
        let mut prepared = None;
        let src;
        match &parsed {
            None => {
                diagnostics.push(Diagnostic::new(
                    "N0701",
                    format!("model '{}' has no config.pbtxt; Triton will auto-complete one from the model file if its backend can", m.name),
                ));
                src = String::new();
            }
            Some(p) => {
                diagnostics.extend(p.diagnostics.iter().cloned());
                src = p.src.clone();
                if let Some(raw) = &p.config {
                    let facts = DirFacts::read(&m.dir);
                    match prepare(raw, Some(&m.name), &facts, opts) {
                        Ok(prep) => {
                            let ctx = ModelCtx {
                                name: &prep.name,
                                dir: Some(&m.dir),
                                raw: &prep.raw,
                                cfg: &prep.cfg,
                                file: p,
                                options: opts,
                            };
                            lint::check_model(&ctx, &mut diagnostics);
                            prepared = Some(prep);
                        }
                        Err(text) => diagnostics.push(
                            Diagnostic::new("E0201", String::new())
                                .triton(text)
                                .at_opt(p.span(&"backend".into())),
                        ),
                    }
                }
            }
        }
        reports.push(FileReport {
            path: m.config_path.display().to_string(),
            model: Some(prepared.as_ref().map_or(m.name.clone(), |p| p.name.clone())),
            src,
            diagnostics,
        });
        loaded.push(LoadedModel {
            entry: m.clone(),
            parsed,
            prepared,
        });
    }
    let cross = lint::rules::repository::check_repository(&loaded, opts);
    for (i, ds) in cross.into_iter().enumerate() {
        reports[i].diagnostics.extend(ds);
    }
    reports
}
