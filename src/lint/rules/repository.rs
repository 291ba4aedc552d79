//! Rules: repository layout and cross-model checks (to be filled in).

use crate::diagnostics::{Category, Diagnostic, Severity};
use crate::lint::registry::Rule;
use crate::lint::{ModelCtx, Options};
use crate::repo::LoadedModel;

pub const RULES: &[Rule] = &[Rule {
    code: "N0701",
    name: "missing-config",
    category: Category::Repository,
    severity: Severity::Note,
    summary: "A model directory without config.pbtxt",
    docs: "Triton can load a model without `config.pbtxt` when auto-complete is on and the backend can derive the configuration from the model file (ONNX Runtime, TensorRT, OpenVINO, Python with `auto_complete_config`). Run `tritonctl autoconfig` to see and commit the config Triton would use.",
    triton_source: Some("core src/model_repository_manager/model_repository_manager.cc"),
}];

pub fn check(_ctx: &ModelCtx, _out: &mut Vec<Diagnostic>) {}

/// Cross-model rules; returns the findings per model, in `models` order.
pub fn check_repository(models: &[LoadedModel], _opts: &Options) -> Vec<Vec<Diagnostic>> {
    models.iter().map(|_| Vec::new()).collect()
}
