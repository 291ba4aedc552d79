//! `tritonctl autoconfig`: the configuration Triton ends up with when its
//! ONNX Runtime backend auto-completes a model's config
//! (docs/spec/autoconfig.md), derived from the `model.onnx` file alone.
//!
//! [`complete`] runs Triton's pipeline on a model and an optional partial
//! config:
//!
//! 1. core fill-in of the config as written (backend fields, normalization)
//!    and core's checks of it (the lint rules, with auto-complete on);
//! 2. instance-group normalization for the target server (`AutoconfigOptions::gpus`,
//!    none by default: a CPU-only host);
//! 3. the ORT backend's auto-complete (§2 skip rule, §5 max batch size and
//!    dynamic batching, §6 inputs and outputs) on ORT's view of the graph
//!    (§3, read by `crate::onnx`; output shapes the file does not fully
//!    declare come from ONNX Runtime's session metadata when the library is
//!    available, see [`shapes`]);
//! 4. core normalization again, core's checks of the completed config, and
//!    the checks each ORT instance runs against the session
//!    (docs/spec/validation.md §4).
//!
//! The first failure ends the run with Triton's exact text
//! ([`AutoconfigError::Load`]). On success the [`Outcome`] holds two views:
//! `full`, everything Triton reports for the model (what
//! `GET /v2/models/<m>/config` returns), and `minimal`, the config as
//! written plus only what auto-complete adds (name, platform and backend,
//! max_batch_size, input, output, an empty `dynamic_batching`) — a config
//! that, written to disk, makes Triton load the same `full` config.
//!
//! Decisions:
//!
//! * A model directory is read as Triton reads it: the version loaded is the
//!   numerically highest version the config's version policy selects
//!   (`latest { num_versions: 1 }` by default; only plain numbers name
//!   versions), the file is `<dir>/<version>/<default_model_filename>`
//!   (`model.onnx`), and the model's name is the directory's name.
//! * A file is the model itself. Its name is the file stem, unless the file
//!   sits in a Triton layout (`<dir>/<number>/<file>`), where it is `<dir>`.
//! * Sequence models (§10.1): by default the control tensors and state
//!   inputs named in the partial config's `sequence_batching` are left out of
//!   the completed `input` list (and state outputs out of `output`), with a
//!   note; [`AutoconfigOptions::triton_compatible`] lists them as Triton does, which
//!   then fails ORT's input count check exactly as Triton would.

mod fill;
pub mod ort;
pub mod shapes;

#[cfg(test)]
mod tests;

use crate::config::normalize::{self, DirFacts};
use crate::onnx::{self, OnnxError, ShapeSource, Signature, TensorInfo};
use crate::schema::inference::model_config::SchedulingChoice;
use crate::schema::inference::ModelConfig;
use prost::Message;
use prost_reflect::DynamicMessage;
use std::fmt;
use std::path::{Path, PathBuf};

pub use fill::normalize_instance_groups;
pub use ort::Completion;
pub use shapes::{Fallback, OutputShapes};

/// Settings the model file does not tell.
#[derive(Debug, Clone)]
pub struct AutoconfigOptions {
    /// Triton's `default-max-batch-size` backend setting (4 by default;
    /// negative values act as 0).
    pub default_max_batch_size: i64,
    /// GPU ids of the target server; empty means a CPU-only host.
    pub gpus: Vec<i32>,
    /// The server's `--min-supported-compute-capability`.
    pub min_compute_capability: f64,
    /// List sequence control and state tensors as ordinary inputs and
    /// outputs, as Triton does (§10.1).
    pub triton_compatible: bool,
}

impl Default for AutoconfigOptions {
    fn default() -> AutoconfigOptions {
        AutoconfigOptions {
            default_max_batch_size: 4,
            gpus: Vec::new(),
            min_compute_capability: 6.0,
            triton_compatible: false,
        }
    }
}

/// How loud a [`Note`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoteLevel {
    /// Triton logs it as a warning, or the result likely needs attention.
    Warning,
    /// Information (Triton's info log, or what tritonctl decided).
    Note,
}

/// Something to tell the user besides the config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub level: NoteLevel,
    pub text: String,
    /// The text is Triton's own log line.
    pub from_triton: bool,
}

impl Note {
    fn warning(text: impl Into<String>) -> Note {
        Note {
            level: NoteLevel::Warning,
            text: text.into(),
            from_triton: false,
        }
    }

    fn info(text: impl Into<String>) -> Note {
        Note {
            level: NoteLevel::Note,
            text: text.into(),
            from_triton: false,
        }
    }

    fn triton_warning(text: String) -> Note {
        Note {
            level: NoteLevel::Warning,
            text,
            from_triton: true,
        }
    }

    fn triton_info(text: String) -> Note {
        Note {
            level: NoteLevel::Note,
            text,
            from_triton: true,
        }
    }
}

/// Where in Triton's load a failure happens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Core's checks of the config before the backend sees it.
    Config,
    /// The backend's auto-complete.
    Autocomplete,
    /// Core's checks of the completed config.
    Validation,
    /// The checks an ORT instance runs against the session.
    Instance,
}

/// A model Triton would refuse to load, with Triton's text.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadFailure {
    pub stage: Stage,
    /// Triton's status code string (`Invalid argument`, `Unsupported`, ...).
    pub status: &'static str,
    /// Triton's message, byte for byte.
    pub text: String,
    /// The lint rule that found it, for core checks.
    pub code: Option<&'static str>,
    pub help: Option<String>,
    /// Notes gathered before the failure (Triton logs them too).
    pub notes: Vec<Note>,
    /// The model itself is at fault (a type Triton cannot serve), not a
    /// config that could be changed.
    pub model_side: bool,
}

impl LoadFailure {
    fn new(stage: Stage, status: &'static str, text: String) -> LoadFailure {
        LoadFailure {
            stage,
            status,
            text,
            code: None,
            help: None,
            notes: Vec::new(),
            model_side: false,
        }
    }

    fn help(mut self, help: impl Into<String>) -> LoadFailure {
        self.help = Some(help.into());
        self
    }

    fn at(mut self, stage: Stage) -> LoadFailure {
        self.stage = stage;
        self
    }

    fn from_diagnostic(stage: Stage, d: crate::diagnostics::Diagnostic) -> LoadFailure {
        LoadFailure {
            stage,
            status: "Invalid argument",
            code: Some(d.code()),
            text: d.triton_message.unwrap_or(d.message),
            help: d.help,
            notes: Vec::new(),
            model_side: false,
        }
    }
}

impl fmt::Display for LoadFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.status, self.text)
    }
}

/// Why no config came out.
#[derive(Debug, thiserror::Error)]
pub enum AutoconfigError {
    /// MODEL is missing, unreadable, or holds no model file.
    #[error("{}: {message}", path.display())]
    Input { path: PathBuf, message: String },
    /// The model file is not a readable ONNX model.
    #[error(transparent)]
    Onnx(#[from] OnnxError),
    /// The config selects another backend than ONNX Runtime.
    #[error("the configuration selects backend '{backend}' (platform '{platform}'); autoconfig completes ONNX Runtime models only")]
    NotOnnxRuntime { backend: String, platform: String },
    /// Triton would not load the model.
    #[error("{0}")]
    Load(Box<LoadFailure>),
}

impl AutoconfigError {
    /// Whether the error is about the input (exit 2) rather than a model
    /// Triton would refuse (exit 1).
    pub fn is_input_error(&self) -> bool {
        !matches!(self, AutoconfigError::Load(_))
    }
}

impl From<LoadFailure> for AutoconfigError {
    fn from(f: LoadFailure) -> AutoconfigError {
        AutoconfigError::Load(Box::new(f))
    }
}

/// A successful auto-complete.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The model's name (directory name, or file stem).
    pub name: String,
    /// The model directory: MODEL itself, or the layout a model file sits
    /// in. Where `--write` puts `config.pbtxt`.
    pub model_dir: Option<PathBuf>,
    /// The version directory read, for a model directory.
    pub version: Option<i64>,
    /// The ONNX file read.
    pub model_file: PathBuf,
    /// The model's signature; outputs completed by ONNX Runtime carry the
    /// session's type and shape (see `output_shapes`).
    pub signature: Signature,
    /// Where the shapes of outputs the file does not fully declare come
    /// from.
    pub output_shapes: OutputShapes,
    /// What auto-complete changed.
    pub completion: Completion,
    /// The config as written plus what auto-complete adds.
    pub minimal: ModelConfig,
    /// Everything Triton reports for the model.
    pub full: ModelConfig,
    /// Tensors left out of `input`/`output` because the config's
    /// `sequence_batching` names them (§10.1).
    pub excluded: Vec<String>,
    pub notes: Vec<Note>,
}

/// What MODEL names.
#[derive(Debug, Clone)]
struct Target {
    name: String,
    /// MODEL, when it is a model directory.
    dir: Option<PathBuf>,
    /// MODEL, when it is the model file (or a `model.onnx` directory).
    file: Option<PathBuf>,
    /// The model directory of a file in a Triton layout.
    layout_dir: Option<PathBuf>,
}

fn input_error(path: &Path, message: impl Into<String>) -> AutoconfigError {
    AutoconfigError::Input {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

/// Whether Triton takes a directory of this name as a version
/// (`repo::versions`).
fn is_version_name(name: &str) -> bool {
    crate::repo::versions::version_of(name).is_some()
}

impl Target {
    fn resolve(model: &Path, raw: &ModelConfig) -> Result<Target, AutoconfigError> {
        let meta = std::fs::metadata(model)
            .map_err(|e| input_error(model, crate::files::io_message(&e)))?;
        let is_onnx_dir = meta.is_dir()
            && model
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("onnx"));
        if meta.is_file() || is_onnx_dir {
            let parent = model.parent().filter(|p| !p.as_os_str().is_empty());
            let layout = parent.and_then(|p| {
                let v = p.file_name()?.to_str()?;
                if !is_version_name(v) {
                    return None;
                }
                let dir = p.parent().filter(|d| !d.as_os_str().is_empty());
                let dir = dir.map(Path::to_path_buf).unwrap_or_else(|| ".".into());
                crate::files::dir_name_of(&dir).map(|n| (n, dir))
            });
            let (name, layout_dir) = match layout {
                Some((n, d)) => (n, Some(d)),
                None => (
                    model
                        .file_stem()
                        .map(|s| s.to_string_lossy().into_owned())
                        .unwrap_or_else(|| "model".into()),
                    None,
                ),
            };
            return Ok(Target {
                name,
                dir: None,
                file: Some(model.to_path_buf()),
                layout_dir,
            });
        }
        if !meta.is_dir() {
            return Err(input_error(model, "not a file or directory"));
        }
        let name = crate::files::dir_name_of(model).unwrap_or_else(|| "model".into());
        let filename = if raw.default_model_filename.is_empty() {
            "model.onnx"
        } else {
            raw.default_model_filename.as_str()
        };
        let subdirs = crate::repo::versions::subdirs(model);
        let has_model = subdirs
            .iter()
            .filter(|v| is_version_name(v))
            .any(|v| model.join(v).join(filename).exists());
        if !has_model {
            let mut message = format!(
                "no model file: a model directory holds the model as <version>/{filename} (e.g. {})",
                model.join("1").join(filename).display()
            );
            if model.join(filename).exists() {
                message.push_str(&format!(
                    "; {filename} is directly in the directory: move it into a version directory such as 1/, or pass the file itself"
                ));
            } else if subdirs.iter().any(|m| {
                crate::repo::versions::subdirs(&model.join(m))
                    .iter()
                    .any(|v| is_version_name(v))
            }) {
                message.push_str(
                    "; this looks like a model repository: pass one model directory of it",
                );
            }
            return Err(input_error(model, message));
        }
        Ok(Target {
            name,
            dir: Some(model.to_path_buf()),
            file: None,
            layout_dir: None,
        })
    }

    /// What core's backend fill-in sees of the directory; a model file
    /// stands for a version directory holding `model.onnx`.
    fn facts(&self) -> DirFacts {
        match &self.dir {
            Some(d) => DirFacts::read(d),
            None => DirFacts {
                has_subdir: true,
                first_subdir_files: vec!["model.onnx".into()],
                first_subdir_dirs: Vec::new(),
            },
        }
    }

    /// The ONNX file Triton loads, and its version.
    fn model_file(&self, cfg: &ModelConfig) -> Result<(PathBuf, Option<i64>), AutoconfigError> {
        if let Some(f) = &self.file {
            return Ok((f.clone(), None));
        }
        let dir = self.dir.as_deref().expect("a file or a directory");
        let scan = crate::repo::versions::scan_versions(dir, cfg);
        let (Some(&v), Some((_, version_dir))) = (
            scan.loaded.first(),
            scan.loaded_dirs(dir).into_iter().next(),
        ) else {
            return Err(input_error(
                dir,
                "no version directory is selected by the version policy",
            ));
        };
        let path = version_dir.join(&cfg.default_model_filename);
        if !path.exists() {
            return Err(input_error(
                &path,
                format!(
                    "unable to find '{}' for model instance '{}'",
                    path.display(),
                    self.name
                ),
            ));
        }
        Ok((path, Some(v)))
    }
}

/// Completes `partial` (none: an empty config) for the ONNX model `model`
/// (a `.onnx` file or a model directory) the way Triton's ONNX Runtime
/// backend does; see the module documentation.
pub fn complete(
    model: &Path,
    partial: Option<&ModelConfig>,
    opts: &AutoconfigOptions,
) -> Result<Outcome, AutoconfigError> {
    let empty = ModelConfig::default();
    let raw = partial.unwrap_or(&empty);
    let target = Target::resolve(model, raw)?;
    let facts = target.facts();
    let lint_opts = crate::lint::ServerOptions {
        gpus: opts.gpus.clone(),
        min_compute_capability: opts.min_compute_capability,
        autocomplete: true,
        ..crate::lint::ServerOptions::default()
    };
    let name = if raw.name.is_empty() {
        target.name.clone()
    } else {
        raw.name.clone()
    };

    // Core: backend fields and normalization, then its checks of the
    // config as written (auto-complete on).
    let mut cfg = raw.clone();
    if let Err(text) = normalize::autofill_backend_fields(&mut cfg, &target.name, &facts) {
        return Err(LoadFailure::new(Stage::Config, "Invalid argument", text).into());
    }
    normalize::normalize(&mut cfg);
    if let Some(d) =
        fill::core_failure(raw, &target.name, target.dir.as_deref(), &facts, &lint_opts)
    {
        return Err(LoadFailure::from_diagnostic(Stage::Config, d).into());
    }
    if cfg.backend != "onnxruntime" {
        return Err(AutoconfigError::NotOnnxRuntime {
            backend: cfg.backend.clone(),
            platform: cfg.platform.clone(),
        });
    }

    let (model_file, version) = target.model_file(&cfg)?;
    // A model file found in a model directory is read only inside it.
    let root = if target.file.is_none() {
        target.dir.as_deref()
    } else {
        None
    };
    let mut signature = onnx::read_signature_in(&model_file, root)?;
    let output_shapes = shapes::choose(&mut signature);
    let mut notes = Vec::new();
    model_notes(&signature, &target, &output_shapes, &mut notes);

    // Stage 9: instance groups, then the backend.
    fill::normalize_instance_groups(&mut cfg, &opts.gpus);
    let with_notes = |f: LoadFailure, notes: &[Note]| -> AutoconfigError {
        let mut f = f;
        f.notes = notes.to_vec();
        f.into()
    };
    let mut completion = match ort::autocomplete(
        &cfg,
        &signature,
        &name,
        opts.default_max_batch_size,
        &mut notes,
    ) {
        Ok(c) => c,
        Err(f) => return Err(with_notes(f, &notes)),
    };
    let excluded = if opts.triton_compatible {
        Vec::new()
    } else {
        exclude_sequence_tensors(&cfg, &mut completion, &mut notes)
    };
    completion.apply(&mut cfg);
    normalize::normalize(&mut cfg);
    if !completion.skipped {
        batching_notes(&cfg, &signature, &completion, &mut notes);
    }

    // Core's checks of the completed config, then ORT's instance checks.
    let final_opts = crate::lint::ServerOptions {
        autocomplete: false,
        ..lint_opts
    };
    if let Some(d) = fill::core_failure(
        &cfg,
        &target.name,
        target.dir.as_deref(),
        &facts,
        &final_opts,
    ) {
        let mut f = LoadFailure::from_diagnostic(Stage::Validation, d);
        if let Some(h) = invalid_type_help(&f.text, &cfg, &signature) {
            f.help = Some(h);
            f.model_side = true;
        }
        return Err(with_notes(f, &notes));
    }
    if let Err(f) = ort::instance_checks(&cfg, &signature, &name) {
        return Err(with_notes(f, &notes));
    }

    let mut minimal = raw.clone();
    if minimal.name.is_empty() {
        minimal.name = name.clone();
    }
    if minimal.backend.is_empty() && minimal.platform.is_empty() {
        minimal.platform = cfg.platform.clone();
        minimal.backend = cfg.backend.clone();
    }
    completion.apply(&mut minimal);

    Ok(Outcome {
        name,
        model_dir: target.dir.clone().or(target.layout_dir.clone()),
        version,
        model_file,
        signature,
        output_shapes,
        completion,
        minimal,
        full: cfg,
        excluded,
        notes,
    })
}

/// For the failure that a `TYPE_INVALID` written by auto-complete causes
/// (docs/spec/autoconfig.md §4): why the type is invalid.
fn invalid_type_help(text: &str, cfg: &ModelConfig, sig: &Signature) -> Option<String> {
    let inputs = cfg.input.iter().map(|i| ("input", &i.name, i.data_type));
    let outputs = cfg.output.iter().map(|o| ("output", &o.name, o.data_type));
    let (_, name, _) = inputs.chain(outputs).find(|(what, name, dt)| {
        *dt == 0 && text.starts_with(&format!("model {what} '{name}' must specify 'data_type'"))
    })?;
    let t = sig
        .inputs
        .iter()
        .chain(&sig.outputs)
        .find(|t| t.name == *name)?;
    Some(format!(
        "the model's element type {} has no Triton data type, so ONNX Runtime's auto-complete writes TYPE_INVALID and the load fails; Triton cannot serve this tensor: change the model (e.g. Cast it to a supported type)",
        onnx::onnx_type_name(t.elem_type())
    ))
}

/// §10.1: drops the sequence control and state tensors from what
/// auto-complete lists, and says so.
fn exclude_sequence_tensors(
    cfg: &ModelConfig,
    completion: &mut Completion,
    notes: &mut Vec<Note>,
) -> Vec<String> {
    let Some(SchedulingChoice::SequenceBatching(sb)) = &cfg.scheduling_choice else {
        return Vec::new();
    };
    let in_names: Vec<&str> = sb
        .control_input
        .iter()
        .map(|c| c.name.as_str())
        .chain(sb.state.iter().map(|s| s.input_name.as_str()))
        .collect();
    let out_names: Vec<&str> = sb.state.iter().map(|s| s.output_name.as_str()).collect();
    let mut excluded = Vec::new();
    if let Some(inputs) = &mut completion.inputs {
        inputs.retain(|i| {
            let keep = !in_names.contains(&i.name.as_str());
            if !keep {
                excluded.push(i.name.clone());
            }
            keep
        });
    }
    let n_inputs = excluded.len();
    if let Some(outputs) = &mut completion.outputs {
        // Listing a state output is legal; leaving none at all is not.
        if outputs
            .iter()
            .any(|o| !out_names.contains(&o.name.as_str()))
        {
            outputs.retain(|o| {
                let keep = !out_names.contains(&o.name.as_str());
                if !keep {
                    excluded.push(o.name.clone());
                }
                keep
            });
        }
    }
    if !excluded.is_empty() {
        let quoted = |v: &[String]| {
            v.iter()
                .map(|n| format!("'{n}'"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut text = String::new();
        if n_inputs > 0 {
            text.push_str(&format!(
                "left out input(s) {} that sequence_batching feeds (control inputs and state)",
                quoted(&excluded[..n_inputs])
            ));
        }
        if excluded.len() > n_inputs {
            if !text.is_empty() {
                text.push_str("; ");
            }
            text.push_str(&format!(
                "left out state output(s) {}",
                quoted(&excluded[n_inputs..])
            ));
        }
        text.push_str(". Triton's own auto-complete lists them and the load then fails with `configuration expects <n> inputs, model provides <p>`; --triton-compatible reproduces that");
        notes.push(Note::info(text));
    }
    excluded
}

fn quoted_list<'a>(names: impl Iterator<Item = &'a str>) -> String {
    names
        .map(|n| format!("'{n}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Notes about what the file does not tell for sure: output shapes not
/// declared (and where they were taken from instead), external data, the
/// file's place.
fn model_notes(sig: &Signature, target: &Target, shapes: &OutputShapes, notes: &mut Vec<Note>) {
    match shapes {
        OutputShapes::OnnxRuntime {
            library,
            outputs,
            file,
            ..
        } => runtime_shape_notes(sig, library, outputs, file, notes),
        OutputShapes::Declared | OutputShapes::File { .. } => {
            file_shape_notes(sig, notes);
            if let OutputShapes::File { why } = shapes {
                let text = why.text();
                notes.push(match why {
                    Fallback::ModelRefused { .. } => Note::warning(text),
                    _ => Note::info(text),
                });
            }
            let refused = matches!(
                shapes,
                OutputShapes::File {
                    why: Fallback::ModelRefused { .. }
                }
            );
            unknown_shape_warning(sig, if refused { "refused" } else { "file" }, notes);
        }
    }
    if !sig.external_data.is_empty() {
        let base = sig.path.parent().unwrap_or(Path::new("."));
        let missing: Vec<&str> = sig
            .external_data
            .iter()
            .filter(|loc| !base.join(loc.as_str()).exists())
            .map(String::as_str)
            .collect();
        if missing.is_empty() {
            notes.push(Note::info(format!(
                "the model keeps tensor data in external file(s) {} (not read)",
                quoted_list(sig.external_data.iter().map(String::as_str))
            )));
        } else {
            notes.push(Note::warning(format!(
                "external data file(s) {} named by the model are missing next to {}; ONNX Runtime would fail to load the model",
                quoted_list(missing.into_iter()),
                sig.path.display()
            )));
        }
    }
    if let Some(file) = &target.file {
        if target.layout_dir.is_none() {
            notes.push(Note::info(format!(
                "Triton loads the model from <model repository>/{}/<version>/model.onnx, with config.pbtxt in {}/",
                target.name, target.name
            )));
        } else if file.file_name().is_some_and(|n| n != "model.onnx") {
            notes.push(Note::warning(format!(
                "Triton looks for model.onnx in the version directory, not {}: rename the file or set default_model_filename",
                file.display()
            )));
        }
    }
}

/// The notes of the fallback: output shapes as the file gives them.
fn file_shape_notes(sig: &Signature, notes: &mut Vec<Note>) {
    for t in &sig.outputs {
        let shape = onnx::format_shape(t.shape());
        match t.shape_source {
            ShapeSource::Declared => {}
            ShapeSource::ValueInfo => notes.push(Note::info(format!(
                "output '{}': the graph output declares no complete shape; declared value info used ({shape}). ONNX Runtime's own shape inference would be used when the ONNX Runtime library is available",
                t.name
            ))),
            ShapeSource::Propagated => notes.push(Note::info(format!(
                "output '{}': the graph output declares no complete shape; {shape} was inferred from the graph by tritonctl. ONNX Runtime's own shape inference would be used when the ONNX Runtime library is available",
                t.name
            ))),
        }
    }
}

/// The notes when ONNX Runtime's session metadata gave the shapes of
/// `names` (`file`: what the file alone gives for them).
fn runtime_shape_notes(
    sig: &Signature,
    library: &Path,
    names: &[String],
    file: &[TensorInfo],
    notes: &mut Vec<Note>,
) {
    for (name, before) in names.iter().zip(file) {
        let Some(t) = sig.outputs.iter().find(|t| &t.name == name) else {
            continue;
        };
        let was = onnx::format_shape(before.shape());
        let file_view = match before.shape_source {
            ShapeSource::ValueInfo => {
                format!("without ONNX Runtime, declared value info used: {was}")
            }
            ShapeSource::Propagated => format!("without ONNX Runtime, tritonctl infers {was}"),
            ShapeSource::Declared => format!("the file declares {was}"),
        };
        let text = format!(
            "output '{name}': the graph output declares no complete shape; ONNX Runtime reports {} ({file_view})",
            onnx::format_shape(t.shape())
        );
        let same = before.triton_dims() == t.triton_dims() && before.elem_type() == t.elem_type();
        notes.push(if same || before.shape_source == ShapeSource::Declared {
            Note::info(text)
        } else {
            Note::warning(format!(
                "{text}; tritonctl's own reading of the file differs, the config follows ONNX Runtime as Triton does"
            ))
        });
    }
    if !names.is_empty() {
        notes.push(Note::info(format!(
            "output shapes of {} taken from ONNX Runtime's session metadata ({})",
            quoted_list(names.iter().map(String::as_str)),
            library.display()
        )));
    }
    unknown_shape_warning(sig, "runtime", notes);
}

/// Warns about outputs whose shape stays not fully known; `source`:
/// `runtime` (ONNX Runtime's session metadata was used), `refused` (ONNX
/// Runtime refused the model) or `file`.
fn unknown_shape_warning(sig: &Signature, source: &str, notes: &mut Vec<Note>) {
    let unknown: Vec<&str> = sig
        .outputs
        .iter()
        .filter(|t| t.is_tensor() && !t.is_fully_known())
        .map(|t| t.name.as_str())
        .collect();
    if unknown.is_empty() {
        return;
    }
    let names = quoted_list(unknown.into_iter());
    notes.push(Note::warning(if source == "runtime" {
        format!(
            "the shape of output(s) {names} is not fully known to ONNX Runtime either (unknown dims are -1, an unknown rank a scalar, as in Triton): check these outputs"
        )
    } else if source == "refused" {
        format!(
            "the shape of output(s) {names} is not fully known from the model file (unknown dims taken as -1, an unknown rank as a scalar): check these outputs"
        )
    } else {
        format!(
            "the shape of output(s) {names} is not fully known from the model file (unknown dims taken as -1, an unknown rank as a scalar); ONNX Runtime may infer more when it loads the model (the ONNX Runtime library would be used when available): check these outputs"
        )
    }));
}

/// Pitfalls of the batching decision (§10.2, §10.5).
fn batching_notes(
    cfg: &ModelConfig,
    sig: &Signature,
    completion: &Completion,
    notes: &mut Vec<Note>,
) {
    if cfg.max_batch_size <= 0 {
        return;
    }
    let (Ok(inputs), Ok(outputs)) = (ort::session_inputs(sig), ort::session_outputs(sig)) else {
        return;
    };
    let mut names: Vec<&str> = inputs
        .iter()
        .chain(&outputs)
        .filter_map(|t| t.first_dim_name.as_deref())
        .collect();
    names.sort_unstable();
    names.dedup();
    if names.len() > 1 {
        notes.push(Note::warning(format!(
            "the first dimensions of the model's tensors have different symbolic names ({}); Triton takes every variable first dimension as the batch dimension: check that each really is the batch size (not, say, a sequence length)",
            quoted_list(names.into_iter())
        )));
    }
    if let Some(inputs) = &completion.inputs {
        let ragged: Vec<&str> = inputs
            .iter()
            .filter(|i| i.dims.contains(&-1))
            .map(|i| i.name.as_str())
            .collect();
        let batching = matches!(
            cfg.scheduling_choice,
            Some(SchedulingChoice::DynamicBatching(_))
        );
        if batching && !ragged.is_empty() {
            notes.push(Note::info(format!(
                "input(s) {} have variable-size dimensions: the dynamic batcher only batches requests whose shapes are equal (set allow_ragged_batch on inputs the model can take ragged)",
                quoted_list(ragged.into_iter())
            )));
        }
    }
}

/// `cfg` as a reflective message (for printing and JSON).
pub fn to_message(cfg: &ModelConfig) -> DynamicMessage {
    DynamicMessage::decode(
        crate::schema::model_config(),
        cfg.encode_to_vec().as_slice(),
    )
    .expect("a ModelConfig encodes to a valid ModelConfig")
}

/// `cfg` in text format, in the canonical layout.
pub fn to_pbtxt(cfg: &ModelConfig) -> String {
    crate::pbtxt::printer::print_message(&to_message(cfg))
}

/// `cfg` as Triton's JSON form.
pub fn to_json(cfg: &ModelConfig) -> String {
    crate::convert::to_json(&to_message(cfg))
}
