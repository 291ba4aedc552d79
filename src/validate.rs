//! `validate`: files, model directories and model repositories in, a report
//! out. Nothing here prints; renderers in `diagnostics::render` do.

use crate::config::normalize::{self, DirFacts};
use crate::config::ParsedConfig;
use crate::diagnostics::{Diagnostic, Severity};
use crate::files::{dir_name_of, io_message};
use crate::lint::{self, ModelCtx, Options};
use crate::repo;
use crate::schema::inference::ModelConfig;
use std::path::{Path, PathBuf};

/// Findings for one file (a `config.pbtxt`, standard input, or a model
/// directory without a config).
#[derive(Debug, Clone)]
pub struct FileReport {
    /// The path as the user would write it (relative to the argument given).
    pub path: String,
    /// The model's name, when the file belongs to a model.
    pub model: Option<String>,
    /// The text, for rendering source lines (empty when there is none).
    pub src: String,
    pub diagnostics: Vec<Diagnostic>,
}

#[derive(Debug, Clone, Default)]
pub struct Report {
    pub files: Vec<FileReport>,
}

impl Report {
    pub fn count(&self, severity: Severity) -> usize {
        self.files
            .iter()
            .flat_map(|f| &f.diagnostics)
            .filter(|d| d.severity == severity)
            .count()
    }

    pub fn errors(&self) -> usize {
        self.count(Severity::Error)
    }

    pub fn warnings(&self) -> usize {
        self.count(Severity::Warning)
    }
}

/// Severity settings from the command line.
#[derive(Debug, Clone, Default)]
pub struct SeverityOverrides {
    /// Warnings count as errors.
    pub strict: bool,
    /// Codes (or rule names) whose findings are dropped.
    pub allow: Vec<String>,
    /// Codes (or rule names) whose findings become errors.
    pub deny: Vec<String>,
    /// Severities from `tritonctl.toml` (`[rules]`), applied before the
    /// command-line flags, which win.
    pub levels: Vec<(&'static str, crate::settings::Level)>,
}

impl SeverityOverrides {
    /// Codes given that the registry does not know.
    pub fn unknown_codes(&self) -> Vec<String> {
        self.allow
            .iter()
            .chain(&self.deny)
            .filter(|c| lint::registry::find(c).is_none())
            .cloned()
            .collect()
    }

    fn matches(list: &[String], d: &Diagnostic) -> bool {
        list.iter()
            .any(|c| lint::registry::find(c).is_some_and(|r| r.code == d.code))
    }

    pub fn apply(&self, report: &mut Report) {
        use crate::settings::Level;
        for f in &mut report.files {
            f.diagnostics.retain_mut(|d| {
                match self.levels.iter().find(|(c, _)| *c == d.code) {
                    Some((_, Level::Off)) => return false,
                    Some((_, Level::Severity(s))) => d.severity = *s,
                    None => {}
                }
                true
            });
            f.diagnostics.retain(|d| !Self::matches(&self.allow, d));
            for d in &mut f.diagnostics {
                if Self::matches(&self.deny, d) || (self.strict && d.severity == Severity::Warning)
                {
                    d.severity = Severity::Error;
                }
            }
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct ValidateOptions {
    pub lint: Options,
    pub overrides: SeverityOverrides,
    /// The `tritonctl.toml` in effect, for its exclude patterns.
    pub settings: Option<std::sync::Arc<crate::settings::Settings>>,
    /// Report suppression entries that silence nothing (W1002, opt-in).
    pub report_unused_suppressions: bool,
}

impl ValidateOptions {
    /// Whether a path met while walking a repository is excluded by the
    /// settings file.
    fn excluded(&self, path: &Path, walked: &Path) -> bool {
        self.settings
            .as_ref()
            .is_some_and(|s| s.excludes(path, walked))
    }

    /// Inline suppressions, then severity overrides.
    fn finish(&self, report: &mut Report) {
        for f in &mut report.files {
            crate::suppress::apply(f, self.report_unused_suppressions);
        }
        self.overrides.apply(report);
    }
}

/// An input that could not be read at all (exit code 2).
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("{path}: {message}")]
    Unreadable { path: String, message: String },
}

/// Validates text read from standard input (`-`): no directory, so no
/// layout or name checks.
pub fn validate_stdin(bytes: Vec<u8>, opts: &ValidateOptions) -> Report {
    let mut report = Report {
        files: vec![check_config_file("<stdin>".into(), bytes, None, &opts.lint)],
    };
    opts.finish(&mut report);
    report
}

/// Validates each path: a config file, a model directory or a repository.
pub fn validate_paths(paths: &[PathBuf], opts: &ValidateOptions) -> Result<Report, InputError> {
    let mut report = Report::default();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|e| InputError::Unreadable {
            path: p.display().to_string(),
            message: io_message(&e),
        })?;
        if meta.is_file() {
            let bytes = std::fs::read(p).map_err(|e| InputError::Unreadable {
                path: p.display().to_string(),
                message: io_message(&e),
            })?;
            // A file named config.pbtxt inside a directory is that model's config.
            let model_dir = (p.file_name().is_some_and(|n| n == "config.pbtxt"))
                .then(|| {
                    p.parent().map(|d| {
                        if d.as_os_str().is_empty() {
                            Path::new(".")
                        } else {
                            d
                        }
                    })
                })
                .flatten();
            match model_dir {
                // As its model directory would be, ensemble steps included.
                Some(dir) => {
                    let entry = repo::ModelEntry {
                        name: dir_name_of(dir).unwrap_or_default(),
                        dir: dir.to_path_buf(),
                        config_path: p.clone(),
                    };
                    report
                        .files
                        .extend(repo::validate_repository(&[entry], &opts.lint));
                }
                None => report.files.push(check_config_file(
                    p.display().to_string(),
                    bytes,
                    None,
                    &opts.lint,
                )),
            }
        } else if meta.is_dir() {
            let mut models = repo::discover(p).map_err(|e| InputError::Unreadable {
                path: p.display().to_string(),
                message: io_message(&e),
            })?;
            models.retain(|m| !opts.excluded(&m.dir, p));
            report
                .files
                .extend(repo::validate_repository(&models, &opts.lint));
            report.files.extend(
                repo::hidden_dirs(p)
                    .iter()
                    .filter(|d| !opts.excluded(d, p))
                    .map(|d| repo::hidden_dir_report(d)),
            );
        }
    }
    opts.finish(&mut report);
    Ok(report)
}

/// A config after Triton's fill-in, ready for the rules.
pub struct Prepared {
    pub name: String,
    pub raw: ModelConfig,
    pub cfg: ModelConfig,
}

/// Stage 2 and 3 on a parsed config: backend fields, then normalization.
/// `dir_name` is the model directory's name when there is one.
pub fn prepare(
    raw: &ModelConfig,
    dir_name: Option<&str>,
    facts: &DirFacts,
    opts: &Options,
) -> Result<Prepared, String> {
    let name = if raw.name.is_empty() {
        dir_name.unwrap_or("").to_string()
    } else {
        raw.name.clone()
    };
    let model_name = dir_name.unwrap_or(&name);
    let mut cfg = raw.clone();
    if let Err(text) = normalize::autofill_backend_fields(&mut cfg, model_name, facts) {
        // The default platform stands in only where Triton would find nothing.
        let Some(p) = &opts.platform_default else {
            return Err(text);
        };
        cfg = raw.clone();
        cfg.platform = p.clone();
        normalize::autofill_backend_fields(&mut cfg, model_name, facts)?;
    }
    normalize::normalize(&mut cfg);
    Ok(Prepared {
        name,
        raw: raw.clone(),
        cfg,
    })
}

/// The backend given to a config checked without its model directory when
/// nothing in the config tells the backend (see `N0703`). Rules treat it
/// as a custom backend they know nothing about.
pub const UNDETERMINED_BACKEND: &str = "<undetermined>";

/// Parses, binds and checks one config file on its own.
pub fn check_config_file(
    path: String,
    bytes: Vec<u8>,
    model_dir: Option<&Path>,
    opts: &Options,
) -> FileReport {
    let parsed = ParsedConfig::from_bytes(bytes);
    let mut diagnostics = parsed.diagnostics.clone();
    let mut model = None;
    if let Some(raw) = &parsed.config {
        // Without a model directory, a config that names no model is
        // reported under its file's stem (`<unnamed>` for standard input),
        // so messages never read "for " with nothing after it.
        let dir_name = model_dir.and_then(dir_name_of).or_else(|| {
            Some(match Path::new(&path).file_stem() {
                Some(stem) if path != "<stdin>" => stem.to_string_lossy().into_owned(),
                _ => "<unnamed>".to_string(),
            })
        });
        let facts = model_dir.map(DirFacts::read).unwrap_or_default();
        let prepared = match prepare(raw, dir_name.as_deref(), &facts, opts) {
            Ok(p) => Ok(p),
            // Without the directory the model file is out of sight, so an
            // unknown backend proves nothing: note it and check the rest.
            Err(_) if model_dir.is_none() => {
                diagnostics.push(
                    Diagnostic::new(
                        "N0703",
                        "the config names no platform or backend; Triton would take them from the model file in the model directory, which is not available here",
                    )
                    .at_opt(parsed.span(&"name".into()))
                    .help("validate the model directory instead, or pass --platform-default <platform>"),
                );
                let mut undetermined = raw.clone();
                undetermined.backend = UNDETERMINED_BACKEND.into();
                prepare(&undetermined, None, &facts, opts)
            }
            Err(text) => Err(text),
        };
        model =
            check_prepared(&parsed, prepared, model_dir, opts, &mut diagnostics).map(|p| p.name);
    }
    FileReport {
        path,
        model,
        src: parsed.src,
        diagnostics,
    }
}

/// Runs every per-model rule on a config after Triton's fill-in, or reports
/// why the fill-in failed (E0201, with Triton's text).
pub(crate) fn check_prepared(
    parsed: &ParsedConfig,
    prepared: Result<Prepared, String>,
    dir: Option<&Path>,
    opts: &Options,
    out: &mut Vec<Diagnostic>,
) -> Option<Prepared> {
    match prepared {
        Ok(p) => {
            let ctx = ModelCtx {
                name: &p.name,
                dir,
                raw: &p.raw,
                cfg: &p.cfg,
                file: parsed,
                options: opts,
            };
            lint::check_model(&ctx, out);
            Some(p)
        }
        Err(text) => {
            out.push(
                Diagnostic::new("E0201", String::new())
                    .triton(text)
                    .at_opt(parsed.span(&"backend".into())),
            );
            None
        }
    }
}
