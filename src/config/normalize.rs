//! What Triton fills in before it validates a config (validation.md §2):
//! the backend fields (stage 2, always run, even with auto-complete off) and
//! normalization (stage 3).

use crate::schema::inference::{model_version_policy, ModelConfig, ModelVersionPolicy};
use std::path::Path;

/// What the model directory holds, as far as stage 2 looks at it.
#[derive(Debug, Default, Clone)]
pub struct DirFacts {
    /// Whether any sub-directory exists (Triton looks into the
    /// lexicographically first one).
    pub has_subdir: bool,
    /// Names of files in the lexicographically first sub-directory.
    pub first_subdir_files: Vec<String>,
    /// Names of directories in the lexicographically first sub-directory.
    pub first_subdir_dirs: Vec<String>,
}

impl DirFacts {
    /// Reads the facts from a model directory; unreadable parts count as absent.
    pub fn read(model_dir: &Path) -> DirFacts {
        let mut subdirs: Vec<String> = std::fs::read_dir(model_dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        subdirs.sort();
        let mut facts = DirFacts {
            has_subdir: !subdirs.is_empty(),
            ..DirFacts::default()
        };
        if let Some(first) = subdirs.first() {
            for e in std::fs::read_dir(model_dir.join(first))
                .into_iter()
                .flatten()
                .flatten()
            {
                let name = e.file_name().to_string_lossy().into_owned();
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    facts.first_subdir_dirs.push(name);
                } else {
                    facts.first_subdir_files.push(name);
                }
            }
        }
        facts
    }

    fn has_file(&self, name: &str) -> bool {
        self.first_subdir_files.iter().any(|f| f == name)
    }

    fn has_dir(&self, name: &str) -> bool {
        self.first_subdir_dirs.iter().any(|f| f == name)
    }

    fn has_entry(&self, name: &str) -> bool {
        self.has_file(name) || self.has_dir(name)
    }
}

/// Stage 2 (`AutoCompleteBackendFields`): fills `name`, `backend`,
/// `platform` and `default_model_filename` as Triton does. Returns Triton's
/// error text when the backend cannot be determined.
pub fn autofill_backend_fields(
    cfg: &mut ModelConfig,
    model_name: &str,
    dir: &DirFacts,
) -> Result<(), String> {
    if cfg.name.is_empty() {
        cfg.name = model_name.to_string();
    }
    let scan = cfg.platform.is_empty() && cfg.default_model_filename.is_empty() && dir.has_subdir;

    // TensorFlow.
    if cfg.platform.is_empty() && (cfg.backend.is_empty() || cfg.backend == "tensorflow") {
        let file = cfg.default_model_filename.as_str();
        let platform = if file == "model.savedmodel"
            || (file.is_empty() && dir.has_subdir && dir.has_dir("model.savedmodel"))
        {
            Some("tensorflow_savedmodel")
        } else if file == "model.graphdef"
            || (file.is_empty() && dir.has_subdir && dir.has_file("model.graphdef"))
        {
            Some("tensorflow_graphdef")
        } else {
            None
        };
        if let Some(p) = platform {
            cfg.platform = p.into();
            cfg.backend = "tensorflow".into();
            if cfg.default_model_filename.is_empty() {
                cfg.default_model_filename = if p == "tensorflow_savedmodel" {
                    "model.savedmodel"
                } else {
                    "model.graphdef"
                }
                .into();
            }
            return Ok(());
        }
    }
    // TensorRT.
    if cfg.backend.is_empty()
        && (cfg.platform == "tensorrt_plan"
            || cfg.default_model_filename == "model.plan"
            || (scan && dir.has_file("model.plan")))
    {
        cfg.backend = "tensorrt".into();
    }
    if cfg.backend == "tensorrt" {
        fill(&mut cfg.platform, "tensorrt_plan");
        fill(&mut cfg.default_model_filename, "model.plan");
        return Ok(());
    }
    // ONNX Runtime.
    if cfg.backend.is_empty()
        && (cfg.platform == "onnxruntime_onnx"
            || cfg.default_model_filename == "model.onnx"
            || (scan && dir.has_entry("model.onnx")))
    {
        cfg.backend = "onnxruntime".into();
    }
    if cfg.backend == "onnxruntime" {
        fill(&mut cfg.platform, "onnxruntime_onnx");
        fill(&mut cfg.default_model_filename, "model.onnx");
        return Ok(());
    }
    // OpenVINO.
    if cfg.backend.is_empty()
        && (cfg.default_model_filename == "model.xml" || (scan && dir.has_entry("model.xml")))
    {
        cfg.backend = "openvino".into();
        fill(&mut cfg.default_model_filename, "model.xml");
        return Ok(());
    }
    // PyTorch (TorchScript and AOTInductor).
    if cfg.backend.is_empty() {
        let libtorch = cfg.platform == "pytorch_libtorch"
            || cfg.platform == "libtorch"
            || cfg.default_model_filename == "model.pt";
        let aoti = cfg.platform == "torch_aoti" || cfg.default_model_filename == "model.pt2";
        if libtorch || (scan && dir.has_file("model.pt")) {
            cfg.backend = "pytorch".into();
            fill(&mut cfg.platform, "pytorch_libtorch");
            fill(&mut cfg.default_model_filename, "model.pt");
            return Ok(());
        }
        if aoti || (scan && dir.has_file("model.pt2")) {
            cfg.backend = "pytorch".into();
            fill(&mut cfg.platform, "torch_aoti");
            fill(&mut cfg.default_model_filename, "model.pt2");
            return Ok(());
        }
    }
    // Python.
    if cfg.backend.is_empty()
        && cfg.platform.is_empty()
        && (cfg.default_model_filename == "model.py" || (scan && dir.has_file("model.py")))
    {
        cfg.backend = "python".into();
        fill(&mut cfg.default_model_filename, "model.py");
        return Ok(());
    }
    // Custom: the backend is the model name after its first '.'.
    if cfg.backend.is_empty() && cfg.platform.is_empty() && cfg.default_model_filename.is_empty() {
        match model_name.split_once('.') {
            Some((_, b)) if !b.is_empty() => {
                cfg.backend = b.to_string();
                cfg.default_model_filename = format!("model.{b}");
            }
            _ => {
                return Err(format!(
                    "Invalid model name: Could not determine backend for model '{model_name}' with no backend in model configuration. Expected model name of the form 'model.<backend_name>'."
                ))
            }
        }
    }
    Ok(())
}

fn fill(field: &mut String, value: &str) {
    if field.is_empty() {
        *field = value.to_string();
    }
}

/// Stage 3 (`NormalizeModelConfig`).
pub fn normalize(cfg: &mut ModelConfig) {
    if cfg
        .version_policy
        .as_ref()
        .is_none_or(|p| p.policy_choice.is_none())
    {
        cfg.version_policy = Some(ModelVersionPolicy {
            policy_choice: Some(model_version_policy::PolicyChoice::Latest(
                model_version_policy::Latest { num_versions: 1 },
            )),
        });
    }
    use crate::schema::inference::model_config::SchedulingChoice;
    use crate::schema::inference::model_sequence_batching::StrategyChoice;
    let mbs = cfg.max_batch_size;
    match &mut cfg.scheduling_choice {
        Some(SchedulingChoice::DynamicBatching(db)) => {
            if db.preferred_batch_size.is_empty() && mbs > 0 {
                db.preferred_batch_size.push(mbs);
            }
        }
        Some(SchedulingChoice::SequenceBatching(sb)) => {
            if sb.max_sequence_idle_microseconds == 0 {
                sb.max_sequence_idle_microseconds = 1_000_000;
            }
            if let Some(StrategyChoice::Oldest(o)) = &mut sb.strategy_choice {
                if o.preferred_batch_size.is_empty() && mbs > 0 {
                    o.preferred_batch_size.push(mbs);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filled(cfg: &str, name: &str, files: &[&str]) -> Result<ModelConfig, String> {
        let mut c = crate::config::ParsedConfig::parse(cfg.to_string())
            .config
            .unwrap();
        let facts = DirFacts {
            has_subdir: true,
            first_subdir_files: files.iter().map(|s| s.to_string()).collect(),
            first_subdir_dirs: vec![],
        };
        autofill_backend_fields(&mut c, name, &facts).map(|_| c)
    }

    #[test]
    fn backend_fields() {
        let c = filled("platform: \"onnxruntime_onnx\"", "m", &[]).unwrap();
        assert_eq!(
            (
                c.backend.as_str(),
                c.default_model_filename.as_str(),
                c.name.as_str()
            ),
            ("onnxruntime", "model.onnx", "m")
        );
        let c = filled("", "m", &["model.onnx"]).unwrap();
        assert_eq!(
            (c.backend.as_str(), c.platform.as_str()),
            ("onnxruntime", "onnxruntime_onnx")
        );
        let c = filled("", "m", &["model.py"]).unwrap();
        assert_eq!(c.backend, "python");
        let c = filled("", "m.identity", &[]).unwrap();
        assert_eq!(c.backend, "identity");
        let e = filled("", "nodot", &[]).unwrap_err();
        assert!(e.starts_with("Invalid model name: Could not determine backend for model 'nodot'"));
        let c = filled(
            "backend: \"onnxruntime\" platform: \"onnxruntim\"",
            "m",
            &[],
        )
        .unwrap();
        assert_eq!(c.platform, "onnxruntim");
    }

    #[test]
    fn normalization() {
        let mut c =
            crate::config::ParsedConfig::parse("max_batch_size: 8 dynamic_batching { }".into())
                .config
                .unwrap();
        normalize(&mut c);
        use crate::schema::inference::model_config::SchedulingChoice;
        let Some(SchedulingChoice::DynamicBatching(db)) = &c.scheduling_choice else {
            panic!()
        };
        assert_eq!(db.preferred_batch_size, vec![8]);
        assert!(c.version_policy.is_some());
    }
}
