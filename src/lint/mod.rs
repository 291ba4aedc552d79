//! Semantic rules: Triton's load-time checks (and warnings beyond them),
//! run on the typed config after Triton's own fill-in (`config::normalize`).

pub mod docs;
pub mod registry;
pub mod rules;

use crate::config::normalize::Prepared;
use crate::config::{FieldPath, ParsedConfig};
use crate::diagnostics::{Diagnostic, Rule};
use crate::schema::inference::ModelConfig;
use crate::text::Span;
use std::path::Path;

/// Settings that the config alone does not tell.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Platform assumed when a config names neither platform nor backend and
    /// no model file reveals it (`--platform-default`).
    pub platform_default: Option<String>,
    /// Backends taken as installed on the target server, besides Triton's
    /// standard ones (`--known-backend`).
    pub known_backends: Vec<String>,
    /// GPU ids of the target server (`--gpus`); empty means a CPU-only server.
    pub gpus: Vec<i32>,
    /// `--min-supported-compute-capability` of the target server.
    pub min_compute_capability: f64,
    /// Whether the server runs with auto-complete on (Triton's default).
    pub autocomplete: bool,
}

impl Default for ServerOptions {
    fn default() -> ServerOptions {
        ServerOptions {
            platform_default: None,
            known_backends: Vec::new(),
            gpus: Vec::new(),
            min_compute_capability: 6.0,
            autocomplete: true,
        }
    }
}

/// Backends every Triton release ships.
pub const STANDARD_BACKENDS: &[&str] = &[
    "onnxruntime",
    "tensorrt",
    "pytorch",
    "tensorflow",
    "python",
    "openvino",
];

/// One model, as the rules see it.
pub struct ModelCtx<'a> {
    /// The model's name after Triton's fill-in (config `name`, else the directory name).
    pub name: &'a str,
    /// The model directory, when the config came from one.
    pub dir: Option<&'a Path>,
    /// The config as written.
    pub raw: &'a ModelConfig,
    /// The config after backend-field fill-in and normalization (what Triton validates).
    pub cfg: &'a ModelConfig,
    /// The text and tree, for spans.
    pub file: &'a ParsedConfig,
    pub options: &'a ServerOptions,
}

impl ModelCtx<'_> {
    /// Span of the value at `path` (or of its closest existing ancestor).
    pub fn span(&self, path: &str) -> Option<Span> {
        self.file.span(&FieldPath::parse(path))
    }

    /// Span of the field name at `path` (or of its closest existing ancestor).
    pub fn name_span(&self, path: &str) -> Option<Span> {
        self.file.name_span(&FieldPath::parse(path))
    }

    /// Span of `path` only when it is written in the file.
    pub fn exact_span(&self, path: &str) -> Option<Span> {
        self.file.exact_span(&FieldPath::parse(path))
    }

    /// A diagnostic for rule `code` carrying Triton's text, located at `path`.
    /// The message is Triton's text unless the caller replaces it.
    pub fn triton(&self, code: &'static Rule, path: &str, text: impl Into<String>) -> Diagnostic {
        Diagnostic::new(code, String::new())
            .triton(text)
            .at_opt(self.span(path))
    }

    /// A diagnostic for rule `code` with our own message, located at `path`.
    pub fn diag(&self, code: &'static Rule, path: &str, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(code, message).at_opt(self.span(path))
    }
}

/// A model of the repository after parsing, Triton's fill-in and its own
/// checks: what the cross-model rules look at.
pub struct CheckedModel {
    pub entry: crate::repo::ModelEntry,
    /// The config as read (an empty one when the file is missing and
    /// auto-complete is on); `None` when it could not be read.
    pub parsed: Option<ParsedConfig>,
    pub prepared: Option<Prepared>,
    /// Whether the model's own checks found errors, so Triton would not
    /// load it.
    pub has_errors: bool,
}

/// Runs every per-model rule.
pub fn check_model(ctx: &ModelCtx, out: &mut Vec<Diagnostic>) {
    rules::check_model(ctx, out);
}

/// Runs every per-model rule on a config after Triton's fill-in, or reports
/// why the fill-in failed (E0201, with Triton's text).
pub fn check_prepared(
    parsed: &ParsedConfig,
    prepared: Result<Prepared, String>,
    dir: Option<&Path>,
    opts: &ServerOptions,
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
            check_model(&ctx, out);
            Some(p)
        }
        Err(text) => {
            out.push(
                Diagnostic::new(registry::rule!("E0201"), String::new())
                    .triton(text)
                    .at_opt(parsed.span(&"backend".into())),
            );
            None
        }
    }
}
