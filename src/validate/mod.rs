//! `validate`: files, model directories and model repositories in, a report
//! out. Nothing here prints; renderers in `diagnostics::render` do.

use crate::config::normalize::{self, prepare, DirFacts};
use crate::config::ParsedConfig;
use crate::diagnostics::{Diagnostic, FileReport, Report, Severity};
use crate::files::{dir_name_of, io_message};
use crate::lint::registry::rule;
use crate::lint::{self, ServerOptions};
use crate::repo;
use crate::settings::{self, Settings};

pub mod load;
mod repository;
pub use repository::{hidden_dir_report, load_model, validate_repository};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
            .any(|c| lint::registry::find(c).is_some_and(|r| r.code == d.code()))
    }

    pub fn apply(&self, report: &mut Report) {
        use crate::settings::Level;
        for f in &mut report.files {
            f.diagnostics.retain_mut(|d| {
                match self.levels.iter().find(|(c, _)| *c == d.code()) {
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
    pub lint: ServerOptions,
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

/// The `tritonctl.toml` in effect for each path: the one given with
/// `--config`, none with `--no-config`, else the nearest one found by
/// walking up (each file read once).
pub struct SettingsLookup {
    explicit: Option<Arc<Settings>>,
    disabled: bool,
    loaded: HashMap<PathBuf, Arc<Settings>>,
}

impl SettingsLookup {
    /// `explicit`: the file given with `--config`; `disabled`: `--no-config`.
    pub fn new(explicit: Option<&Path>, disabled: bool) -> Result<SettingsLookup, String> {
        let explicit = match (explicit, disabled) {
            (Some(f), false) => Some(Arc::new(Settings::load(f).map_err(|e| e.to_string())?)),
            _ => None,
        };
        Ok(SettingsLookup {
            explicit,
            disabled,
            loaded: HashMap::new(),
        })
    }

    fn settings_for(&mut self, path: &Path) -> Result<Option<Arc<Settings>>, String> {
        if self.disabled {
            return Ok(None);
        }
        if let Some(s) = &self.explicit {
            return Ok(Some(s.clone()));
        }
        let Some(file) = settings::discover(path) else {
            return Ok(None);
        };
        if let Some(s) = self.loaded.get(&file) {
            return Ok(Some(s.clone()));
        }
        let s = Arc::new(Settings::load(&file).map_err(|e| e.to_string())?);
        self.loaded.insert(file, s.clone());
        Ok(Some(s))
    }

    /// The command-line options with the settings for `path` underneath:
    /// flags win over the file (`platform_flag`: `--platform-default` was
    /// given).
    pub fn options_for(
        &mut self,
        path: &Path,
        base: &ValidateOptions,
        platform_flag: bool,
    ) -> Result<ValidateOptions, String> {
        let mut opts = base.clone();
        if let Some(s) = self.settings_for(path)? {
            opts.overrides.levels = s.rules.clone();
            if !platform_flag {
                opts.lint.platform_default = s.default_platform.clone();
            }
            opts.report_unused_suppressions =
                matches!(s.level("W1002"), Some(settings::Level::Severity(_)));
            opts.settings = Some(s);
        }
        Ok(opts)
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
            path: crate::text::display::path(p).into_owned(),
            message: io_message(&e),
        })?;
        if !meta.is_dir() {
            // Named on the command line: read wherever it leads, but only a
            // regular file (a FIFO or a device is refused, never waited on).
            let bytes = crate::files::read_file(p).map_err(|e| InputError::Unreadable {
                path: crate::text::display::path(p).into_owned(),
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
                        root: None,
                    };
                    report
                        .files
                        .extend(validate_repository(&[entry], &opts.lint));
                }
                None => report.files.push(check_config_file(
                    crate::text::display::path(p).into_owned(),
                    bytes,
                    None,
                    &opts.lint,
                )),
            }
        } else {
            let mut models = repo::discover(p).map_err(|e| InputError::Unreadable {
                path: crate::text::display::path(p).into_owned(),
                message: io_message(&e),
            })?;
            models.retain(|m| !opts.excluded(&m.dir, p));
            report
                .files
                .extend(validate_repository(&models, &opts.lint));
            report.files.extend(
                repo::hidden_dirs(p)
                    .iter()
                    .filter(|d| !opts.excluded(d, p))
                    .map(|d| hidden_dir_report(d)),
            );
        }
    }
    opts.finish(&mut report);
    Ok(report)
}

/// Parses, binds and checks one config file on its own.
pub fn check_config_file(
    path: String,
    bytes: Vec<u8>,
    model_dir: Option<&Path>,
    opts: &ServerOptions,
) -> FileReport {
    let parsed = ParsedConfig::from_bytes_checked(bytes);
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
        let prepared = match prepare(
            raw,
            dir_name.as_deref(),
            &facts,
            opts.platform_default.as_deref(),
        ) {
            Ok(p) => Ok(p),
            // Without the directory the model file is out of sight, so an
            // unknown backend proves nothing: note it and check the rest.
            Err(_) if model_dir.is_none() => {
                diagnostics.push(
                    Diagnostic::new(
                        rule!("N0703"),
                        "the config names no platform or backend; Triton would take them from the model file in the model directory, which is not available here",
                    )
                    .at_opt(parsed.span(&"name".into()))
                    .help("validate the model directory instead, or pass --platform-default <platform>"),
                );
                let mut undetermined = raw.clone();
                undetermined.backend = normalize::UNDETERMINED_BACKEND.into();
                prepare(
                    &undetermined,
                    None,
                    &facts,
                    opts.platform_default.as_deref(),
                )
            }
            Err(text) => Err(text),
        };
        model = lint::check_prepared(&parsed, prepared, model_dir, opts, &mut diagnostics)
            .map(|p| p.name);
    }
    FileReport {
        path,
        model,
        src: parsed.src,
        diagnostics,
    }
}
