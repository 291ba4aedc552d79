//! Triton core's part around the backend's auto-complete: instance-group
//! normalization (docs/spec/validation.md §2.3) and the core checks, which are
//! the lint rules run on a config as Triton holds it at that point.

use crate::config::normalize::DirFacts;
use crate::config::ParsedConfig;
use crate::diagnostics::{Diagnostic, Severity};
use crate::lint::registry::rule;
use crate::lint::{self, ModelCtx};
use crate::schema::inference::model_config::SchedulingChoice;
use crate::schema::inference::model_instance_group::Kind;
use crate::schema::inference::{ModelConfig, ModelInstanceGroup};
use std::collections::BTreeSet;
use std::path::Path;

/// `NormalizeInstanceGroup` for a server whose usable GPUs are `gpus`
/// (ORT declares no preferred groups): a default group named after the
/// model, unnamed groups `<m>_<i>`, `KIND_AUTO` resolved, default counts
/// (2 for CPU groups of ONNX Runtime and TensorFlow models, else 1), empty
/// GPU lists of GPU groups filled with every usable GPU.
pub fn normalize_instance_groups(cfg: &mut ModelConfig, gpus: &[i32]) {
    if matches!(
        cfg.scheduling_choice,
        Some(SchedulingChoice::EnsembleScheduling(_))
    ) {
        return;
    }
    let supported: BTreeSet<i32> = gpus.iter().copied().collect();
    if cfg.instance_group.is_empty() {
        cfg.instance_group.push(ModelInstanceGroup {
            name: cfg.name.clone(),
            ..ModelInstanceGroup::default()
        });
    }
    let many_cpu = cfg.backend == "onnxruntime" || cfg.backend == "tensorflow";
    for (i, g) in cfg.instance_group.iter_mut().enumerate() {
        if g.name.is_empty() {
            g.name = format!("{}_{i}", cfg.name);
        }
        if g.kind == Kind::Auto as i32 {
            let missing = g.gpus.iter().any(|id| !supported.contains(id));
            g.kind = if supported.is_empty() || missing {
                Kind::Cpu as i32
            } else {
                Kind::Gpu as i32
            };
        }
        if g.count < 1 {
            g.count = if g.kind == Kind::Cpu as i32 && many_cpu {
                2
            } else {
                1
            };
        }
        if g.kind == Kind::Gpu as i32 && g.gpus.is_empty() {
            g.gpus = supported.iter().copied().collect();
        }
    }
}

/// The first load failure Triton's core reports for `raw` (a config as
/// written, or as completed), found by the lint rules: the errors that
/// carry Triton's text. `dir` is the model directory, when there is one;
/// `name` the model's name (the directory's, or the file's stem).
pub(super) fn core_failure(
    raw: &ModelConfig,
    name: &str,
    dir: Option<&Path>,
    facts: &DirFacts,
    opts: &lint::ServerOptions,
) -> Option<Diagnostic> {
    let prepared = match crate::config::normalize::prepare(
        raw,
        Some(name),
        facts,
        opts.platform_default.as_deref(),
    ) {
        Ok(p) => p,
        Err(text) => return Some(Diagnostic::new(rule!("E0201"), String::new()).triton(text)),
    };
    // No text: spans are not needed, the failure is reported by its text.
    let file = ParsedConfig {
        src: String::new(),
        doc: None,
        message: None,
        config: Some(raw.clone()),
        diagnostics: Vec::new(),
        paths: Default::default(),
    };
    let ctx = ModelCtx {
        name: &prepared.name,
        dir,
        raw: &prepared.raw,
        cfg: &prepared.cfg,
        file: &file,
        options: opts,
    };
    let mut out = Vec::new();
    lint::check_model(&ctx, &mut out);
    out.into_iter()
        .find(|d| d.severity == Severity::Error && d.triton_message.is_some())
}
