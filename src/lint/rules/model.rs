//! Rules: ValidateModelConfig (validation.md §2, §3.1) (to be filled in).

use crate::diagnostics::{Category, Diagnostic, Severity};
use crate::lint::registry::Rule;
use crate::lint::ModelCtx;

pub const RULES: &[Rule] = &[Rule {
    code: "E0201",
    name: "backend-undetermined",
    category: Category::Semantic,
    severity: Severity::Error,
    summary: "Triton cannot tell which backend serves the model",
    docs: "With no `backend`, no `platform` and no recognised model file, Triton takes the backend from the model name after its first `.` (`mymodel.identity` uses the `identity` backend). A name without a dot leaves it nothing to go on, and the load fails. Set `backend` (or `platform`) in the config.",
    triton_source: Some("core src/model_config_utils.cc (AutoCompleteBackendFields)"),
}];

pub fn check(_ctx: &ModelCtx, _out: &mut Vec<Diagnostic>) {}
