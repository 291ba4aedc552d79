//! The ONNX Runtime session options of a model, read from its config the
//! way the Triton backend that serves it sets them up:
//!
//! - the onnxruntime backend (its `ModelState`):
//!   - graph optimization from `optimization { graph { level } }`: -1
//!     basic, 1 extended, 2 none, anything else every optimization;
//!   - the parameters `execution_mode` (0 sequential, 1 parallel),
//!     `intra_op_thread_count` and `inter_op_thread_count` (ONNX Runtime's
//!     own default unless above 0), `enable_mem_arena`,
//!     `enable_mem_pattern`, and `session.use_device_allocator_for_initializers`
//!     (a session configuration entry, passed on as it is);
//!   - on CUDA only (as the backend reads them for GPU instances only),
//!     the CUDA execution provider's options: the parameters of a `cuda`
//!     entry of `optimization { execution_accelerators {
//!     gpu_execution_accelerator } }`, then, when the config has any
//!     parameters at all, the older parameters `cudnn_conv_algo_search`
//!     (0 exhaustive, 1 heuristic, 2 default), `gpu_mem_limit`,
//!     `arena_extend_strategy` (0 next power of two, 1 same as requested)
//!     and `do_copy_in_default_stream`, each with the backend's default
//!     when absent (which is ONNX Runtime's default), over the former;
//!     untested here (no GPU on the test machines) beyond what is set;
//!   - numbers and booleans are read as Triton's backend utilities read
//!     them, and a value they refuse stops the load with their words;
//! - the stateful backend (docs/spec/stateful-backend.md §7): one intra-op and
//!   one inter-op thread, basic graph optimization, whatever the config;
//! - any other backend: [`SessionOptions::default`].
//!
//! Thread counts are bounded before ONNX Runtime sees them (Triton's
//! backend passes them on as they are, and ONNX Runtime starts that many
//! threads per session): a count above [`MAX_THREADS`] is refused, and a
//! count above this host's CPUs is lowered to their number, since threads
//! beyond the cores only spin against each other (a few thousand of them
//! keep a small host busy for minutes before the first request). Neither
//! changes an output.
//!
//! One setting departs from Triton's defaults: ONNX Runtime's CPU arena is
//! off unless `enable_mem_arena` (onnxruntime backend) turns it on, since
//! this process allocates with mimalloc (see
//! [`SessionOptions::cpu_arena`]). It changes no output.

use std::collections::BTreeMap;

use crate::runtime::session::MAX_THREADS;
use crate::runtime::{Device, GraphOptimization, SessionOptions};
use crate::schema::inference::ModelConfig;

/// The session options of a model of `cfg` on `device`, or Triton's
/// message for a parameter value its backend refuses.
pub fn session_options(cfg: &ModelConfig, device: Device) -> Result<SessionOptions, String> {
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    session_options_on(cfg, device, cpus)
}

/// [`session_options`] on a host with `cpus` CPUs.
fn session_options_on(
    cfg: &ModelConfig,
    device: Device,
    cpus: usize,
) -> Result<SessionOptions, String> {
    let defaults = SessionOptions {
        device,
        ..SessionOptions::default()
    };
    match cfg.backend.as_str() {
        "onnxruntime" => onnxruntime(cfg, defaults, cpus),
        "stateful" => Ok(SessionOptions {
            intra_threads: 1,
            inter_threads: 1,
            graph_optimization: GraphOptimization::Basic,
            ..defaults
        }),
        _ => Ok(defaults),
    }
}

fn onnxruntime(
    cfg: &ModelConfig,
    defaults: SessionOptions,
    cpus: usize,
) -> Result<SessionOptions, String> {
    let level = cfg
        .optimization
        .as_ref()
        .and_then(|o| o.graph.as_ref())
        .map_or(0, |g| g.level);
    let graph_optimization = match level {
        -1 => GraphOptimization::Basic,
        1 => GraphOptimization::Extended,
        2 => GraphOptimization::Disable,
        _ => GraphOptimization::All,
    };
    let p = Params(cfg);
    let execution_mode = p.int("execution_mode")?;
    if execution_mode != 0 && execution_mode != 1 {
        return Err(format!(
            "Invalid configuration value provided. Expected values for  execution_mode are 0 or 1 but got {execution_mode} ."
        ));
    }
    // Zero or below: ONNX Runtime picks (the backend sets only counts
    // above 0). Above the limit: refused; above the CPUs: lowered (see the
    // module documentation).
    let threads = |key: &str| -> Result<usize, String> {
        let n = usize::try_from(p.int(key)?).unwrap_or(0);
        if n > MAX_THREADS {
            return Err(format!(
                "parameter {key}: {n} threads is more than tritonctl starts for a session \
                 (at most {MAX_THREADS}; ONNX Runtime would start every one of them)"
            ));
        }
        Ok(n.min(cpus.max(1)))
    };
    let mut config_entries = Vec::new();
    const INITIALIZERS: &str = "session.use_device_allocator_for_initializers";
    if let Some(v) = p.get(INITIALIZERS) {
        config_entries.push((INITIALIZERS.to_string(), v.to_string()));
    }
    let cuda_options = match defaults.device {
        Device::Cuda(_) => cuda_options(cfg)?,
        Device::Cpu => Vec::new(),
    };
    Ok(SessionOptions {
        intra_threads: threads("intra_op_thread_count")?,
        inter_threads: threads("inter_op_thread_count")?,
        parallel_execution: execution_mode == 1,
        graph_optimization,
        cpu_arena: p.boolean("enable_mem_arena", defaults.cpu_arena)?,
        mem_pattern: p.boolean("enable_mem_pattern", defaults.mem_pattern)?,
        config_entries,
        cuda_options,
        ..defaults
    })
}

/// The CUDA execution provider's options of an onnxruntime-backend model
/// (see the module documentation), by key.
fn cuda_options(cfg: &ModelConfig) -> Result<Vec<(String, String)>, String> {
    let mut options: BTreeMap<String, String> = BTreeMap::new();
    let accelerators = cfg
        .optimization
        .as_ref()
        .and_then(|o| o.execution_accelerators.as_ref())
        .map_or(&[][..], |e| &e.gpu_execution_accelerator[..]);
    for a in accelerators.iter().filter(|a| a.name == "cuda") {
        for (key, value) in &a.parameters {
            if key == "do_copy_in_default_stream" || key == "use_ep_level_unified_stream" {
                parse_bool(value).map_err(|e| format!("cuda accelerator parameter {key}: {e}"))?;
            }
            if !value.is_empty() {
                options.insert(key.clone(), value.clone());
            }
        }
    }
    if !cfg.parameters.is_empty() {
        let p = Params(cfg);
        let search = match p.int("cudnn_conv_algo_search")? {
            0 => "EXHAUSTIVE",
            1 => "HEURISTIC",
            2 => "DEFAULT",
            n => {
                return Err(format!(
                    "unsupported cudnn_conv_algo_search value '{n}' is requested"
                ))
            }
        };
        let arena = match p.int("arena_extend_strategy")? {
            0 => "kNextPowerOfTwo",
            1 => "kSameAsRequested",
            n => {
                return Err(format!(
                    "unsupported arena_extend_strategy value '{n}' is requested"
                ))
            }
        };
        let limit = p
            .get("gpu_mem_limit")
            .map_or_else(|| usize::MAX.to_string(), str::to_string);
        let copy = p.get("do_copy_in_default_stream").unwrap_or("1");
        for (key, value) in [
            ("cudnn_conv_algo_search", search),
            ("gpu_mem_limit", limit.as_str()),
            ("arena_extend_strategy", arena),
            ("do_copy_in_default_stream", copy),
        ] {
            options.insert(key.to_string(), value.to_string());
        }
    }
    Ok(options.into_iter().collect())
}

/// A config's `parameters`, read as the onnxruntime backend reads them.
struct Params<'a>(&'a ModelConfig);

impl Params<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.parameters.get(key).map(|p| p.string_value.as_str())
    }

    /// An integer parameter, 0 when absent.
    fn int(&self, key: &str) -> Result<i32, String> {
        self.get(key).map_or(Ok(0), |v| {
            parse_int(v).map_err(|e| format!("parameter {key}: {e}"))
        })
    }

    /// A boolean parameter, `default` when absent.
    fn boolean(&self, key: &str, default: bool) -> Result<bool, String> {
        self.get(key).map_or(Ok(default), |v| {
            parse_bool(v).map_err(|e| format!("parameter {key}: {e}"))
        })
    }
}

/// A boolean parameter as Triton's backends read it: `true`, `on`, `1`,
/// `false`, `off`, `0`, in any case.
fn parse_bool(v: &str) -> Result<bool, String> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "on" | "1" => Ok(true),
        "false" | "off" | "0" => Ok(false),
        _ => Err(format!("failed to convert '{v}' to boolean")),
    }
}

/// An integer parameter as Triton's backends read it (C++'s `stoi`):
/// leading white space, an optional sign and at least one decimal digit;
/// whatever follows the digits is ignored (`"4 threads"` is 4). A value
/// out of `int`'s range is refused too (Triton's backend does not catch
/// that case at all).
fn parse_int(v: &str) -> Result<i32, String> {
    crate::text::stoll(v)
        .and_then(|n| i32::try_from(n).ok())
        .ok_or_else(|| format!("failed to convert '{v}' to integral number"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(text: &str) -> ModelConfig {
        crate::config::ParsedConfig::parse(format!("name: \"m\" max_batch_size: 0 {text}"))
            .config
            .unwrap()
    }

    fn param(key: &str, value: &str) -> String {
        format!("parameters {{ key: \"{key}\" value {{ string_value: \"{value}\" }} }}")
    }

    fn ort(extra: &str) -> Result<SessionOptions, String> {
        ort_on(extra, 64)
    }

    fn ort_on(extra: &str, cpus: usize) -> Result<SessionOptions, String> {
        session_options_on(
            &cfg(&format!("backend: \"onnxruntime\" {extra}")),
            Device::Cpu,
            cpus,
        )
    }

    /// Regression (docs/hostile.md): huge thread counts hung or crashed inside ONNX Runtime.
    /// They are refused above the limit, and lowered to the host's CPUs
    /// below it, before any ONNX Runtime call sees them.
    #[test]
    fn thread_counts_are_bounded_before_onnx_runtime_sees_them() {
        for key in ["intra_op_thread_count", "inter_op_thread_count"] {
            for n in ["2000", "100000", "2147483647"] {
                let e = ort(&param(key, n)).unwrap_err();
                assert!(
                    e.starts_with(&format!("parameter {key}: {n} threads"))
                        && e.contains(&format!("at most {MAX_THREADS}")),
                    "{e}"
                );
            }
            let at_limit = ort_on(&param(key, &MAX_THREADS.to_string()), 4096).unwrap();
            assert_eq!(
                at_limit.intra_threads.max(at_limit.inter_threads),
                MAX_THREADS
            );
        }
        let o = ort_on(
            &(param("intra_op_thread_count", "48") + &param("inter_op_thread_count", "3")),
            2,
        )
        .unwrap();
        assert_eq!((o.intra_threads, o.inter_threads), (2, 2));
        let o = ort_on(&param("intra_op_thread_count", "3"), 8).unwrap();
        assert_eq!(o.intra_threads, 3);
    }

    #[test]
    fn an_onnxruntime_model_without_settings_leaves_threads_to_onnx_runtime() {
        let o = ort("").unwrap();
        assert_eq!((o.intra_threads, o.inter_threads), (0, 0));
        assert!(!o.parallel_execution);
        assert_eq!(o.graph_optimization, GraphOptimization::All);
        // Memory patterns as in Triton; the CPU arena off (tritonctl's
        // process allocates with mimalloc), unless asked for.
        assert!(!o.cpu_arena && o.mem_pattern);
        assert!(ort(&param("enable_mem_arena", "on")).unwrap().cpu_arena);
        assert!(o.config_entries.is_empty());
        assert_eq!(o.device, Device::Cpu);
    }

    #[test]
    fn the_onnxruntime_backends_parameters_set_the_session() {
        let o = ort(&[
            param("intra_op_thread_count", "3"),
            param("inter_op_thread_count", " +2"),
            param("execution_mode", "1"),
            param("enable_mem_arena", "OFF"),
            param("enable_mem_pattern", "0"),
            param("session.use_device_allocator_for_initializers", "1"),
            "optimization { graph { level: 1 } }".to_string(),
        ]
        .join(" "))
        .unwrap();
        assert_eq!((o.intra_threads, o.inter_threads), (3, 2));
        assert!(o.parallel_execution);
        assert_eq!(o.graph_optimization, GraphOptimization::Extended);
        assert!(!o.cpu_arena && !o.mem_pattern);
        assert_eq!(
            o.config_entries,
            vec![(
                "session.use_device_allocator_for_initializers".to_string(),
                "1".to_string()
            )]
        );
        // Zero or below leaves the count to ONNX Runtime.
        let o = ort(&param("intra_op_thread_count", "-4")).unwrap();
        assert_eq!(o.intra_threads, 0);
    }

    #[test]
    fn graph_levels_map_as_in_the_onnxruntime_backend() {
        for (level, expected) in [
            (-1, GraphOptimization::Basic),
            (0, GraphOptimization::All),
            (1, GraphOptimization::Extended),
            (2, GraphOptimization::Disable),
            (3, GraphOptimization::All),
        ] {
            let o = ort(&format!("optimization {{ graph {{ level: {level} }} }}")).unwrap();
            assert_eq!(o.graph_optimization, expected, "level {level}");
        }
    }

    #[test]
    fn booleans_are_read_as_triton_reads_them() {
        for (v, on) in [
            ("1", true),
            ("On", true),
            ("TRUE", true),
            ("0", false),
            ("off", false),
            ("False", false),
        ] {
            let o = ort(&param("enable_mem_arena", v)).unwrap();
            assert_eq!(o.cpu_arena, on, "{v}");
        }
        assert_eq!(
            ort(&param("enable_mem_arena", "yes")).unwrap_err(),
            "parameter enable_mem_arena: failed to convert 'yes' to boolean"
        );
        assert_eq!(
            ort(&param("enable_mem_pattern", "")).unwrap_err(),
            "parameter enable_mem_pattern: failed to convert '' to boolean"
        );
    }

    #[test]
    fn integers_are_read_as_cs_stoi_reads_them() {
        for (v, n) in [
            ("4", 4),
            ("  7", 7),
            ("+5", 5),
            ("-2", -2),
            ("4 threads", 4),
            ("2.5", 2),
            ("0x10", 0),
            ("000", 0),
            ("2147483647", i32::MAX),
            ("-2147483648", i32::MIN),
        ] {
            assert_eq!(parse_int(v), Ok(n), "{v:?}");
        }
        for v in [
            "",
            " ",
            "four",
            "-",
            "+x",
            "2147483648",
            "99999999999999999999",
        ] {
            assert_eq!(
                parse_int(v),
                Err(format!("failed to convert '{v}' to integral number")),
                "{v:?}"
            );
        }
        assert_eq!(
            ort(&param("intra_op_thread_count", "many")).unwrap_err(),
            "parameter intra_op_thread_count: failed to convert 'many' to integral number"
        );
    }

    #[test]
    fn execution_mode_is_0_or_1_with_tritons_message_otherwise() {
        assert!(
            !ort(&param("execution_mode", "0"))
                .unwrap()
                .parallel_execution
        );
        assert_eq!(
            ort(&param("execution_mode", "2")).unwrap_err(),
            "Invalid configuration value provided. Expected values for  execution_mode are 0 or 1 but got 2 ."
        );
    }

    fn on_cuda(extra: &str) -> Result<Vec<(String, String)>, String> {
        session_options(
            &cfg(&format!("backend: \"onnxruntime\" {extra}")),
            Device::Cuda(0),
        )
        .map(|o| o.cuda_options)
    }

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn cuda_options_come_from_the_accelerator_and_the_older_parameters_on_cuda_only() {
        let accelerator = "optimization { execution_accelerators { gpu_execution_accelerator: [ \
            { name: \"cuda\" parameters { key: \"cudnn_conv_use_max_workspace\" value: \"1\" } \
              parameters { key: \"cudnn_conv_algo_search\" value: \"HEURISTIC\" } } ] } }";
        // No parameters at all: the accelerator's options alone.
        assert_eq!(
            on_cuda(accelerator).unwrap(),
            pairs(&[
                ("cudnn_conv_algo_search", "HEURISTIC"),
                ("cudnn_conv_use_max_workspace", "1"),
            ])
        );
        // Any parameter: the older four are set too, with their defaults,
        // over what the accelerator said.
        let max = usize::MAX.to_string();
        assert_eq!(
            on_cuda(&format!(
                "{accelerator} {}",
                param("enable_mem_pattern", "1")
            ))
            .unwrap(),
            pairs(&[
                ("arena_extend_strategy", "kNextPowerOfTwo"),
                ("cudnn_conv_algo_search", "EXHAUSTIVE"),
                ("cudnn_conv_use_max_workspace", "1"),
                ("do_copy_in_default_stream", "1"),
                ("gpu_mem_limit", &max),
            ])
        );
        assert_eq!(
            on_cuda(
                &[
                    param("cudnn_conv_algo_search", "2"),
                    param("arena_extend_strategy", "1"),
                    param("gpu_mem_limit", "4294967296"),
                    param("do_copy_in_default_stream", "0"),
                ]
                .join(" ")
            )
            .unwrap(),
            pairs(&[
                ("arena_extend_strategy", "kSameAsRequested"),
                ("cudnn_conv_algo_search", "DEFAULT"),
                ("do_copy_in_default_stream", "0"),
                ("gpu_mem_limit", "4294967296"),
            ])
        );
        assert_eq!(
            on_cuda(&param("cudnn_conv_algo_search", "3")).unwrap_err(),
            "unsupported cudnn_conv_algo_search value '3' is requested"
        );
        assert_eq!(
            on_cuda(&param("arena_extend_strategy", "2")).unwrap_err(),
            "unsupported arena_extend_strategy value '2' is requested"
        );
        let bad_copy = "optimization { execution_accelerators { gpu_execution_accelerator: [ \
            { name: \"cuda\" parameters { key: \"do_copy_in_default_stream\" value: \"maybe\" } } ] } }";
        assert_eq!(
            on_cuda(bad_copy).unwrap_err(),
            "cuda accelerator parameter do_copy_in_default_stream: failed to convert 'maybe' to boolean"
        );
        // On the CPU none of this is read, as Triton reads it for GPU
        // instances only.
        let cpu = ort(&format!(
            "{bad_copy} {}",
            param("cudnn_conv_algo_search", "3")
        ))
        .unwrap();
        assert!(cpu.cuda_options.is_empty());
    }

    #[test]
    fn the_stateful_backend_sets_its_own_session_whatever_the_parameters() {
        let c = cfg(&format!(
            "backend: \"stateful\" {} {} optimization {{ graph {{ level: 2 }} }}",
            param("intra_op_thread_count", "8"),
            param("enable_mem_arena", "not a boolean"),
        ));
        let o = session_options(&c, Device::Cpu).unwrap();
        assert_eq!((o.intra_threads, o.inter_threads), (1, 1));
        assert_eq!(o.graph_optimization, GraphOptimization::Basic);
        assert!(!o.cpu_arena && o.mem_pattern);
    }

    #[test]
    fn another_backend_gets_the_defaults_on_the_device_asked_for() {
        let c = cfg(&format!(
            "backend: \"python\" {}",
            param("execution_mode", "7")
        ));
        let o = session_options(&c, Device::Cuda(1)).unwrap();
        assert_eq!(
            o,
            SessionOptions {
                device: Device::Cuda(1),
                ..SessionOptions::default()
            }
        );
    }
}
