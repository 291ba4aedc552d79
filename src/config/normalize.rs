//! What Triton fills in before it validates a config (docs/spec/validation.md
//! §2): the backend fields (stage 2, always run, even with auto-complete off)
//! and normalization (stage 3).

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
/// `platform` and `default_model_filename` as Triton does, in Triton's
/// order (TensorFlow, TensorRT, ONNX Runtime, OpenVINO, PyTorch, Python,
/// then a custom backend named after the model). The first family that
/// claims the model ends the fill-in. Returns Triton's error text when the
/// backend cannot be determined.
///
/// `model_name` is the model directory's name (Triton's model name), which
/// is what the custom-backend rule splits, even when the config names the
/// model differently.
pub fn autofill_backend_fields(
    cfg: &mut ModelConfig,
    model_name: &str,
    dir: &DirFacts,
) -> Result<(), String> {
    if cfg.name.is_empty() {
        cfg.name = model_name.to_string();
    }
    let has_version = dir.has_subdir;
    // Whether nothing in the config names the model file or its platform,
    // so the first version directory is looked at.
    let scan = |cfg: &ModelConfig| {
        cfg.platform.is_empty() && cfg.default_model_filename.is_empty() && has_version
    };

    // TensorFlow: the platform is decided first, from the file name or the
    // version directory (a graphdef file wins over a savedmodel directory
    // when both are present, as the later test overrides the earlier one).
    if cfg.platform.is_empty() && (cfg.backend.is_empty() || cfg.backend == "tensorflow") {
        match cfg.default_model_filename.as_str() {
            "model.savedmodel" => cfg.platform = "tensorflow_savedmodel".into(),
            "model.graphdef" => cfg.platform = "tensorflow_graphdef".into(),
            "" if has_version => {
                if dir.has_dir("model.savedmodel") {
                    cfg.platform = "tensorflow_savedmodel".into();
                }
                if dir.has_file("model.graphdef") {
                    cfg.platform = "tensorflow_graphdef".into();
                }
            }
            _ => {}
        }
    }
    if cfg.platform == "tensorflow_savedmodel" || cfg.platform == "tensorflow_graphdef" {
        fill(&mut cfg.backend, "tensorflow");
        let file = if cfg.platform == "tensorflow_savedmodel" {
            "model.savedmodel"
        } else {
            "model.graphdef"
        };
        fill(&mut cfg.default_model_filename, file);
        return Ok(());
    }

    // TensorRT.
    if cfg.backend.is_empty()
        && (cfg.platform == "tensorrt_plan"
            || cfg.default_model_filename == "model.plan"
            || (scan(cfg) && dir.has_file("model.plan")))
    {
        cfg.backend = "tensorrt".into();
    }
    if cfg.backend == "tensorrt" {
        fill(&mut cfg.platform, "tensorrt_plan");
        fill(&mut cfg.default_model_filename, "model.plan");
        return Ok(());
    }

    // ONNX Runtime (a model.onnx directory counts: large models).
    if cfg.backend.is_empty()
        && (cfg.platform == "onnxruntime_onnx"
            || cfg.default_model_filename == "model.onnx"
            || (scan(cfg) && dir.has_entry("model.onnx")))
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
        && (cfg.default_model_filename == "model.xml" || (scan(cfg) && dir.has_entry("model.xml")))
    {
        cfg.backend = "openvino".into();
    }
    if cfg.backend == "openvino" {
        fill(&mut cfg.default_model_filename, "model.xml");
        return Ok(());
    }

    // PyTorch (TorchScript and AOTInductor).
    if cfg.backend.is_empty() {
        if cfg.platform == "pytorch_libtorch"
            || cfg.platform == "libtorch"
            || cfg.default_model_filename == "model.pt"
            || cfg.platform == "torch_aoti"
            || cfg.default_model_filename == "model.pt2"
        {
            cfg.backend = "pytorch".into();
        } else if scan(cfg) {
            // Only the first of the two names present is looked at, and it
            // must be a file.
            if dir.has_entry("model.pt") {
                if dir.has_file("model.pt") {
                    cfg.backend = "pytorch".into();
                    cfg.platform = "pytorch_libtorch".into();
                }
            } else if dir.has_file("model.pt2") {
                cfg.backend = "pytorch".into();
                cfg.platform = "torch_aoti".into();
            }
        }
    }
    if cfg.backend == "pytorch" {
        if cfg.platform.is_empty() {
            // TorchScript is the default even for a `model.pt2` file name.
            cfg.platform = "pytorch_libtorch".into();
            fill(&mut cfg.default_model_filename, "model.pt");
        } else if cfg.platform == "torch_aoti" {
            fill(&mut cfg.default_model_filename, "model.pt2");
        }
        return Ok(());
    }

    // Python.
    if cfg.backend.is_empty()
        && (cfg.default_model_filename == "model.py" || (scan(cfg) && dir.has_entry("model.py")))
    {
        cfg.backend = "python".into();
    }
    if cfg.backend == "python" {
        fill(&mut cfg.default_model_filename, "model.py");
        return Ok(());
    }

    // Custom: the backend is the model name after its first '.' (possibly
    // empty, which §3.1 then refuses as an unexpected platform).
    if cfg.backend.is_empty() && cfg.platform.is_empty() && cfg.default_model_filename.is_empty() {
        match model_name.split_once('.') {
            Some((_, b)) => {
                cfg.backend = b.to_string();
                cfg.default_model_filename = format!("model.{b}");
            }
            None => {
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
///
/// Only a missing `version_policy` gets the default: a written but empty
/// `version_policy { }` stays as it is, and Triton then loads every version.
pub fn normalize(cfg: &mut ModelConfig) {
    if cfg.version_policy.is_none() {
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
        Some(SchedulingChoice::DynamicBatching(db))
            if db.preferred_batch_size.is_empty() && mbs > 0 =>
        {
            db.preferred_batch_size.push(mbs);
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
    // Pinned buffers default to on, except for ensembles (which take no
    // `optimization` at all).
    if !matches!(
        cfg.scheduling_choice,
        Some(SchedulingChoice::EnsembleScheduling(_))
    ) {
        use crate::schema::inference::model_optimization_policy::PinnedMemoryBuffer;
        let opt = cfg.optimization.get_or_insert_with(Default::default);
        opt.input_pinned_memory
            .get_or_insert(PinnedMemoryBuffer { enable: true });
        opt.output_pinned_memory
            .get_or_insert(PinnedMemoryBuffer { enable: true });
    }
}

/// A config after Triton's fill-in, ready for the rules.
pub struct Prepared {
    pub name: String,
    pub raw: ModelConfig,
    pub cfg: ModelConfig,
}

/// Stage 2 and 3 on a parsed config: backend fields, then normalization.
/// `dir_name` is the model directory's name when there is one;
/// `platform_default` stands in where Triton would find no platform.
pub fn prepare(
    raw: &ModelConfig,
    dir_name: Option<&str>,
    facts: &DirFacts,
    platform_default: Option<&str>,
) -> Result<Prepared, String> {
    let name = if raw.name.is_empty() {
        dir_name.unwrap_or("").to_string()
    } else {
        raw.name.clone()
    };
    let model_name = dir_name.unwrap_or(&name);
    let mut cfg = raw.clone();
    if let Err(text) = autofill_backend_fields(&mut cfg, model_name, facts) {
        // The default platform stands in only where Triton would find nothing.
        let Some(p) = platform_default else {
            return Err(text);
        };
        cfg = raw.clone();
        cfg.platform = p.to_string();
        autofill_backend_fields(&mut cfg, model_name, facts)?;
    }
    normalize(&mut cfg);
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
    fn backend_fields_follow_triton_order_and_quirks() {
        // A TensorFlow platform given without backend gets the backend.
        let c = filled("platform: \"tensorflow_savedmodel\"", "m", &[]).unwrap();
        assert_eq!(
            (c.backend.as_str(), c.default_model_filename.as_str()),
            ("tensorflow", "model.savedmodel")
        );
        // A graphdef file beats a savedmodel directory.
        let mut facts = DirFacts {
            has_subdir: true,
            first_subdir_files: vec!["model.graphdef".into()],
            first_subdir_dirs: vec!["model.savedmodel".into()],
        };
        let mut c = ModelConfig::default();
        autofill_backend_fields(&mut c, "m", &facts).unwrap();
        assert_eq!(c.platform, "tensorflow_graphdef");
        // A directory named model.plan is not a TensorRT plan.
        facts.first_subdir_files.clear();
        facts.first_subdir_dirs = vec!["model.plan".into()];
        let e = autofill_backend_fields(&mut ModelConfig::default(), "m", &facts).unwrap_err();
        assert!(e.starts_with("Invalid model name"), "{e}");
        // backend pytorch alone gets the TorchScript platform and file name.
        let c = filled("backend: \"pytorch\"", "m", &[]).unwrap();
        assert_eq!(
            (c.platform.as_str(), c.default_model_filename.as_str()),
            ("pytorch_libtorch", "model.pt")
        );
        // Triton's quirk: a model.pt2 file name without platform still gets
        // the TorchScript platform.
        let c = filled("default_model_filename: \"model.pt2\"", "m", &[]).unwrap();
        assert_eq!(
            (c.backend.as_str(), c.platform.as_str()),
            ("pytorch", "pytorch_libtorch")
        );
        let c = filled("", "m", &["model.pt2"]).unwrap();
        assert_eq!(
            (c.platform.as_str(), c.default_model_filename.as_str()),
            ("torch_aoti", "model.pt2")
        );
        // platform libtorch keeps the file name empty.
        let c = filled("platform: \"libtorch\"", "m", &[]).unwrap();
        assert_eq!(
            (c.backend.as_str(), c.default_model_filename.as_str()),
            ("pytorch", "")
        );
        let c = filled("backend: \"openvino\"", "m", &[]).unwrap();
        assert_eq!(c.default_model_filename, "model.xml");
        // The Python file name counts even with a platform written.
        let c = filled(
            "platform: \"x\" default_model_filename: \"model.py\"",
            "m",
            &[],
        )
        .unwrap();
        assert_eq!(c.backend, "python");
        // The custom rule splits the directory name, not the config name.
        let c = filled("name: \"other\"", "dir.identity", &[]).unwrap();
        assert_eq!((c.name.as_str(), c.backend.as_str()), ("other", "identity"));
        // A trailing dot gives an empty backend (refused later by §3.1).
        let c = filled("", "m.", &[]).unwrap();
        assert_eq!(
            (c.backend.as_str(), c.default_model_filename.as_str()),
            ("", "model.")
        );
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
        let pinned = c.optimization.unwrap().input_pinned_memory.unwrap();
        assert!(pinned.enable);

        // An empty policy stays empty (Triton then loads all versions).
        let mut c = crate::config::ParsedConfig::parse("version_policy { }".into())
            .config
            .unwrap();
        normalize(&mut c);
        assert_eq!(c.version_policy.unwrap().policy_choice, None);

        // Ensembles get no optimization block.
        let mut c = crate::config::ParsedConfig::parse(
            "platform: \"ensemble\" ensemble_scheduling { }".into(),
        )
        .config
        .unwrap();
        normalize(&mut c);
        assert!(c.optimization.is_none());
    }
}
