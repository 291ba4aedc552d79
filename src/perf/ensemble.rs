//! Ensembles: the composing models of an ensemble, found through the
//! server's config endpoint, as perf_analyzer finds them (see
//! docs/spec/perf-anchors.md, "Sequence support" and "Server-side
//! breakdown").
//!
//! An ensemble whose steps (nested ensembles walked through) include a
//! model with `sequence_batching` is stateful: every request to it carries
//! a sequence id and flags, as for a sequence model (perf_analyzer's
//! ENSEMBLE_SEQUENCE). The models that do the work (every composing model
//! that is not itself an ensemble) get their own server statistics.

use super::client::PerfClient;
use super::model::lenient_int;
use serde_json::Value;
use std::collections::BTreeSet;

/// At most this many composing models (nested ones included) are looked
/// up: far above real pipelines, and a bound on the requests a hostile
/// config can cause.
pub const MAX_COMPOSING_MODELS: usize = 256;

/// One model an ensemble runs (not an ensemble itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComposingModel {
    pub name: String,
    /// The step's `model_version`; `None` for -1 (the server's latest).
    pub version: Option<String>,
    /// Its config has `sequence_batching`.
    pub sequence: bool,
}

/// The composing models of an ensemble, in the order of its steps (depth
/// first through nested ensembles), each `(name, version)` once.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ensemble {
    pub models: Vec<ComposingModel>,
}

impl Ensemble {
    /// The composing models with a sequence batcher.
    pub fn stateful(&self) -> impl Iterator<Item = &ComposingModel> {
        self.models.iter().filter(|m| m.sequence)
    }
}

/// Whether a config (as the config endpoint's JSON) is an ensemble's.
pub fn is_ensemble(cfg: &Value) -> bool {
    cfg["platform"].as_str() == Some("ensemble") || cfg["ensemble_scheduling"].is_object()
}

/// The `(model_name, version)` of every step of an ensemble config
/// (version `None` for -1 or absent); an error names what is wrong.
pub fn steps(cfg: &Value, ensemble: &str) -> Result<Vec<(String, Option<String>)>, String> {
    let steps = match &cfg["ensemble_scheduling"]["step"] {
        Value::Array(a) => a.as_slice(),
        Value::Null => &[],
        other => {
            return Err(format!(
                "the config of ensemble '{ensemble}' has ensemble_scheduling.step {}, not a list",
                short(other)
            ))
        }
    };
    if steps.is_empty() {
        return Err(format!(
            "the config of ensemble '{ensemble}' has no ensemble_scheduling steps"
        ));
    }
    steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let name = s["model_name"]
                .as_str()
                .filter(|n| !n.is_empty())
                .ok_or_else(|| {
                    format!("step {} of ensemble '{ensemble}' has no model_name", i + 1)
                })?;
            let version = match s.get("model_version") {
                None | Some(Value::Null) => None,
                Some(v) => match lenient_int(v) {
                    Some(-1) => None,
                    Some(n) if n >= 0 => Some(n.to_string()),
                    _ => {
                        return Err(format!(
                            "step {} of ensemble '{ensemble}' has model_version {}, not -1 or a version number",
                            i + 1,
                            short(v)
                        ))
                    }
                },
            };
            Ok((name.to_string(), version))
        })
        .collect()
}

/// A JSON value shown in a message, cut to 80 characters.
fn short(v: &Value) -> String {
    let s = v.to_string();
    match s.char_indices().nth(80) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s,
    }
}

fn shown_version(v: &Option<String>) -> String {
    match v {
        Some(v) => format!(" version {v}"),
        None => String::new(),
    }
}

/// The composing models of the ensemble `name` whose config is `cfg`,
/// each config fetched from the server (`None` when `cfg` is not an
/// ensemble's). Walks nested ensembles with an explicit stack; each
/// `(model, version)` is fetched once, so a cycle ends.
pub async fn discover(
    client: &PerfClient,
    name: &str,
    cfg: &Value,
) -> Result<Option<Ensemble>, String> {
    if !is_ensemble(cfg) {
        return Ok(None);
    }
    let mut seen: BTreeSet<(String, Option<String>)> = BTreeSet::new();
    seen.insert((name.to_string(), None));
    let mut ensemble = Ensemble::default();
    // (parent ensemble, step model, version), next step on top
    let mut stack: Vec<(String, String, Option<String>)> = Vec::new();
    let push = |stack: &mut Vec<_>, parent: &str, cfg: &Value| -> Result<(), String> {
        for (m, v) in steps(cfg, parent)?.into_iter().rev() {
            stack.push((parent.to_string(), m, v));
        }
        Ok(())
    };
    push(&mut stack, name, cfg)?;
    let mut fetched = 0usize;
    while let Some((parent, model, version)) = stack.pop() {
        if !seen.insert((model.clone(), version.clone())) {
            continue;
        }
        fetched += 1;
        if fetched > MAX_COMPOSING_MODELS {
            return Err(format!(
                "ensemble '{name}' has more than {MAX_COMPOSING_MODELS} composing models"
            ));
        }
        let sub = client
            .config(&model, version.as_deref())
            .await
            .map_err(|e| {
                format!(
                    "the config of model '{model}'{} (a step of ensemble '{parent}'): {e}",
                    shown_version(&version)
                )
            })?
            .ok_or_else(|| {
                format!(
                    "the server gave no config for model '{model}'{} (a step of ensemble '{parent}'); perf needs it to know whether the step is stateful",
                    shown_version(&version)
                )
            })?;
        if is_ensemble(&sub) {
            push(&mut stack, &model, &sub)?;
            continue;
        }
        ensemble.models.push(ComposingModel {
            sequence: sub.get("sequence_batching").is_some_and(Value::is_object),
            name: model,
            version,
        });
    }
    Ok(Some(ensemble))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn steps_are_read_with_their_versions() {
        let cfg = json!({"platform": "ensemble", "ensemble_scheduling": {"step": [
            {"model_name": "a", "model_version": "-1"},
            {"model_name": "b", "model_version": 3},
            {"model_name": "c"}]}});
        assert!(is_ensemble(&cfg));
        assert_eq!(
            steps(&cfg, "e").unwrap(),
            vec![
                ("a".to_string(), None),
                ("b".to_string(), Some("3".to_string())),
                ("c".to_string(), None)
            ]
        );
        assert!(!is_ensemble(&json!({"platform": "onnxruntime_onnx"})));
    }

    #[test]
    fn bad_steps_are_named() {
        let e = steps(
            &json!({"ensemble_scheduling": {"step": [{"model_version": 1}]}}),
            "e",
        )
        .unwrap_err();
        assert!(
            e.contains("step 1 of ensemble 'e' has no model_name"),
            "{e}"
        );
        let e = steps(
            &json!({"ensemble_scheduling": {"step": [{"model_name": "a", "model_version": -7}]}}),
            "e",
        )
        .unwrap_err();
        assert!(e.contains("model_version -7"), "{e}");
        let e = steps(
            &json!({"ensemble_scheduling": {"step": "x".repeat(500)}}),
            "e",
        )
        .unwrap_err();
        assert!(e.contains("not a list") && e.len() < 200, "{e}");
        let e = steps(&json!({"platform": "ensemble"}), "e").unwrap_err();
        assert!(e.contains("no ensemble_scheduling steps"), "{e}");
    }
}
