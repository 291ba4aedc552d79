//! `tritonctl doctor`: what this machine offers the local runner (`run`),
//! and what to install for each missing piece.
//!
//! It reports the ONNX Runtime library (found as `crate::runtime`
//! describes: `ORT_DYLIB_PATH`, else the Python `onnxruntime` package of
//! tritonctl's own environment, `VIRTUAL_ENV`, `CONDA_PREFIX` or
//! `python3`) and the rule that found it, the
//! execution providers compiled into it, whether ONNX Runtime's CUDA
//! execution provider can be loaded, the CUDA driver and its devices, and
//! the device `run` picks by default.
//!
//! Exit status: 0 when `run` can run models (on the CPU at least), 1 when
//! it cannot (ONNX Runtime missing or unusable, or a binary built without
//! the `run` feature), 2 on internal errors (output cannot be written).
//! `TRITONCTL_NO_ORT=1` makes it behave as if ONNX Runtime were absent,
//! `TRITONCTL_NO_CUDA=1` as if the CUDA driver were.
//!
//! `--format json` prints one object:
//!
//! | field | type | meaning |
//! |---|---|---|
//! | `tritonctl_version` | string | version of this binary |
//! | `run_feature` | bool | built with the `run` feature (ONNX Runtime support) |
//! | `can_run` | bool | `run` can run models (same as exit status 0) |
//! | `onnxruntime.found` | bool | a usable ONNX Runtime library was loaded |
//! | `onnxruntime.path` | string or null | the library file loaded |
//! | `onnxruntime.version` | string or null | its version (`1.31.1`) |
//! | `onnxruntime.source` | string or null | the rule that found it: `ORT_DYLIB_PATH`, `executable_prefix` (the Python environment tritonctl is installed in), `VIRTUAL_ENV`, `CONDA_PREFIX`, `python3` |
//! | `onnxruntime.error` | string or null | why there is none |
//! | `execution_providers` | array of strings | providers compiled into the library, as it lists them |
//! | `cuda_execution_provider.available` | bool | CUDA execution provider ready to use |
//! | `cuda_execution_provider.status` | string | `ready`, `not_built` (CPU-only build), `missing` (its library is absent), `unloadable` (its library or a CUDA/cuDNN library it needs cannot be loaded), `no_onnxruntime` |
//! | `cuda_execution_provider.library` | string or null | the provider library (when there is one) |
//! | `cuda_execution_provider.error` | string or null | what is wrong |
//! | `cuda_driver.found` | bool | the CUDA driver loaded and initialized |
//! | `cuda_driver.version` | string or null | CUDA version the driver supports (`12.4`) |
//! | `cuda_driver.error` | string or null | why there is none |
//! | `devices` | array | CUDA devices: `device` (`cuda:0`), `ordinal`, `name`, `total_memory_bytes`, `compute_capability` (`8.6`) |
//! | `default_device` | string or null | what `run` uses without `--device` (`cpu`, `cuda:0`); null when it cannot run |
//! | `hints` | array of strings | what to install or change; GPU-only ones start with `for CUDA: ` |

use super::{CommandError, Context, ExitStatus};
use crate::cli::{DoctorArgs, SimulateFormat};
use crate::run::doctor::{doctor_report, DoctorReport, GPU_PREFIX};
use std::io::Write;

pub fn run(
    args: &DoctorArgs,
    _ctx: &Context,
    out: &mut dyn Write,
) -> Result<ExitStatus, CommandError> {
    let f = doctor_report();
    match args.format {
        SimulateFormat::Json => {
            let text = serde_json::to_string_pretty(&f)
                .map_err(|e| CommandError::Input(format!("cannot encode the report: {e}")))?;
            writeln!(out, "{text}")?;
        }
        SimulateFormat::Human => write_human(&f, out)?,
    }
    Ok(if f.can_run {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}

fn line(out: &mut dyn Write, label: &str, text: &str) -> std::io::Result<()> {
    writeln!(out, "{label:<17}{text}")
}

fn write_human(f: &DoctorReport, out: &mut dyn Write) -> std::io::Result<()> {
    if !f.run_feature {
        line(out, "ONNX Runtime", "not supported by this binary")?;
        writeln!(out)?;
        writeln!(
            out,
            "`tritonctl run` cannot run models: this tritonctl was built without the `run` feature."
        )?;
        return write_hints(f, out);
    }
    let ort = &f.onnxruntime;
    let ort_text = match (&ort.path, &ort.error) {
        (Some(path), _) => match &ort.version {
            Some(v) => format!("{v} ({path})"),
            None => format!("unknown version ({path})"),
        },
        (None, Some(e)) => format!("missing: {e}"),
        (None, None) => "missing".into(),
    };
    line(out, "ONNX Runtime", &ort_text)?;
    if let Some(by) = &ort.found_by {
        line(out, "found by", by)?;
    }
    if ort.found {
        let p = if f.execution_providers.is_empty() {
            "none listed".to_string()
        } else {
            f.execution_providers.join(", ")
        };
        line(out, "providers", &p)?;
    }
    let cp = &f.cuda_execution_provider;
    let cp_text = if cp.available {
        format!("ready ({})", cp.library.as_deref().unwrap_or(""))
    } else {
        format!(
            "not available: {}",
            cp.error.as_deref().unwrap_or("unknown reason")
        )
    };
    line(out, "CUDA provider", &cp_text)?;
    let d = &f.cuda_driver;
    let d_text = match (&d.version, &d.error) {
        (Some(v), _) => format!("CUDA {v}"),
        (None, Some(e)) => format!("not found: {e}"),
        (None, None) => "not found".into(),
    };
    line(out, "CUDA driver", &d_text)?;
    if d.found {
        if f.devices.is_empty() {
            line(out, "CUDA devices", "none")?;
        }
        for (i, dev) in f.devices.iter().enumerate() {
            let text = format!(
                "{}: {}, {:.1} GiB, compute capability {}",
                dev.device,
                dev.name,
                dev.total_memory_bytes as f64 / f64::from(1u32 << 30),
                dev.compute_capability
            );
            line(out, if i == 0 { "CUDA devices" } else { "" }, &text)?;
        }
    }
    if let Some(dev) = &f.default_device {
        line(out, "default device", dev)?;
    }
    writeln!(out)?;
    match (&f.default_device, f.can_run) {
        (Some(dev), true) if dev.starts_with("cuda") => writeln!(
            out,
            "`tritonctl run` can run models on the GPU ({dev}) and on the CPU."
        )?,
        (_, true) => writeln!(out, "`tritonctl run` can run models on the CPU.")?,
        (_, false) => writeln!(
            out,
            "`tritonctl run` cannot run models: ONNX Runtime is missing."
        )?,
    }
    write_hints(f, out)
}

fn write_hints(f: &DoctorReport, out: &mut dyn Write) -> std::io::Result<()> {
    let (gpu, general): (Vec<&String>, Vec<&String>) =
        f.hints.iter().partition(|h| h.starts_with(GPU_PREFIX));
    if !general.is_empty() {
        writeln!(out)?;
        writeln!(out, "To fix:")?;
        for h in general {
            writeln!(out, "  - {h}")?;
        }
    }
    if !gpu.is_empty() {
        writeln!(out)?;
        writeln!(out, "To run on a GPU:")?;
        for h in gpu {
            writeln!(out, "  - {}", &h[GPU_PREFIX.len()..])?;
        }
    }
    Ok(())
}
