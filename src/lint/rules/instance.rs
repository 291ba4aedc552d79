//! Rules: instance groups (docs/spec/validation.md §2.3 and §3.3). Triton first
//! normalizes the groups (`NormalizeInstanceGroup`: names `<m>_<i>`,
//! `KIND_AUTO` resolved against the server's GPUs, empty GPU lists filled)
//! and then validates them (`ValidateInstanceGroup`). Both depend on the
//! target server, which `Options::gpus` describes (empty: no usable GPU) and
//! `Options::min_compute_capability`. Ensembles have no instance groups.

use super::model::{label_if, push_merged, triton_at};
use crate::diagnostics::Diagnostic;
use crate::diagnostics::Rule;
use crate::lint::registry::rule;
use crate::lint::ModelCtx;
use crate::schema::inference::model_config::SchedulingChoice;
use crate::schema::inference::model_instance_group::Kind;
use std::collections::BTreeSet;

const SRC: Option<&str> =
    Some("core src/model_config_utils.cc (NormalizeInstanceGroup, ValidateInstanceGroup)");
const SRC_PROFILE: Option<&str> =
    Some("core src/model_config_utils.cc (ValidateInstanceGroup, GetProfileIndex)");

pub const RULES: &[Rule] = &[
    Rule::semantic_error(
        "E0401",
        "model-kind-with-gpus",
        "A KIND_MODEL instance group lists GPUs",
        "With `KIND_MODEL` the model places its instances itself, so `gpus` is not allowed: `instance group <g> of model <m> has kind KIND_MODEL but specifies one or more GPUs`. Unnamed groups are called `<m>_<i>` (i counts all groups from 0).\n\n```\ninstance_group [ { kind: KIND_MODEL gpus: [ 0 ] } ]   # error\n```",
        SRC
    ),
    Rule::semantic_error(
        "E0402",
        "gpu-kind-without-gpus",
        "A KIND_GPU instance group on a server without usable GPUs",
        "A `KIND_GPU` group without `gpus` runs on every usable GPU of the server; when there is none the load fails with `instance group <g> of model <m> has kind KIND_GPU but no GPUs are available`. tritonctl takes the server's GPUs from `--gpus` (none by default, i.e. a CPU-only server). A Triton build without GPU support says `... has kind KIND_GPU but server does not support GPUs` instead.\n\nUse `KIND_CPU`, or leave `kind` out (`KIND_AUTO` picks the GPUs when there are any and the CPU otherwise).\n\n```\ninstance_group [ { kind: KIND_GPU } ]   # error on a CPU-only server\n```",
        SRC
    ),
    Rule::semantic_error(
        "E0403",
        "invalid-gpu-id",
        "An instance group lists a GPU the server does not have",
        "Every id in `gpus` must be a usable GPU of the server: one that exists and has at least the minimum compute capability (`--min-supported-compute-capability`, 6.0 by default). Otherwise the load fails with `instance group <g> of model <m> specifies invalid or unsupported gpu id <id>. GPUs with at least the minimum required CUDA compute compatibility of <cc> are: <ids>`. tritonctl takes the server's GPUs from `--gpus` (none by default).\n\n```\ninstance_group [ { kind: KIND_GPU gpus: [ 42 ] } ]   # error unless GPU 42 exists\n```",
        SRC
    ),
    Rule::semantic_error(
        "E0404",
        "cpu-kind-with-gpus",
        "A KIND_CPU instance group lists GPUs",
        "CPU instances do not use GPUs, so `gpus` is not allowed: `instance group <g> of model <m> has kind KIND_CPU but specifies one or more GPUs`. This also hits a group without `kind` (KIND_AUTO) that lists GPUs when the server has no GPUs or lacks one of those listed: Triton then makes the group KIND_CPU.\n\n```\ninstance_group [ { kind: KIND_CPU gpus: [ 0 ] } ]   # error\n```",
        SRC
    ),
    Rule::semantic_error(
        "E0405",
        "unknown-instance-kind",
        "An instance group kind given as a number Triton does not know",
        "`kind` written as a number other than 0..3 is accepted by the parser but not by Triton: `instance group <g> of model <m> has unexpected kind KIND_AUTO` (an internal error). Write the kind by name: KIND_AUTO, KIND_GPU, KIND_CPU or KIND_MODEL.\n\n```\ninstance_group [ { kind: 7 } ]   # error\n```",
        SRC
    ),
    Rule::semantic_error(
        "E0406",
        "profile-not-tensorrt",
        "An instance group names TensorRT optimization profiles on another platform",
        "`profile` selects TensorRT optimization profiles and is refused for any other platform: `instance group <g> of model <m> and platform <p>specifies profile field which is only supported for TensorRT models` (sic, no space before \"specifies\").\n\n```\nplatform: \"onnxruntime_onnx\"\ninstance_group [ { kind: KIND_GPU profile: [ \"0\" ] } ]   # error\n```",
        SRC
    ),
    Rule::semantic_error(
        "E0407",
        "profile-empty",
        "An empty string in an instance group's `profile` list",
        "Each `profile` entry is the index of a TensorRT optimization profile, written as a string; an empty one fails with `profile name must not be empty`.\n\n```\ninstance_group [ { kind: KIND_GPU profile: [ \"\" ] } ]   # error\n```",
        SRC_PROFILE
    ),
    Rule::semantic_error(
        "E0408",
        "profile-not-integer",
        "An instance group `profile` entry that is not a number",
        "Triton reads each `profile` entry with C++ `stoi` (leading blanks and a sign allowed, anything after the digits ignored); an entry without leading digits fails with `unable to parse '<p>': stoi`.\n\n```\nprofile: [ \"0\", \"first\" ]   # error: \"first\"\n```",
        SRC_PROFILE
    ),
    Rule::semantic_error(
        "E0409",
        "profile-negative",
        "A negative instance group `profile` entry",
        "Profile indices start at 0; a negative one fails with `instance group <g> of model <m> and platform <p> specifies invalid profile <p>. The field should contain the string representation of a non-negative integer.`\n\n```\ninstance_group [ { kind: KIND_GPU profile: [ \"-1\" ] } ]   # error\n```",
        SRC_PROFILE
    ),
];

/// C++ `std::to_string(double)` (`%f`).
fn cpp_double(x: f64) -> String {
    if x.is_nan() {
        if x.is_sign_negative() { "-nan" } else { "nan" }.to_string()
    } else {
        format!("{x:.6}")
    }
}

/// What C++ `std::stoi` makes of a string.
#[derive(Debug, PartialEq, Eq)]
enum Stoi {
    Value(i64),
    /// No digits: `std::invalid_argument`.
    Invalid,
    /// Outside `int`: `std::out_of_range`, which Triton does not catch.
    OutOfRange,
}

fn stoi(s: &str) -> Stoi {
    let t = s.trim_start_matches([' ', '\t', '\n', '\u{b}', '\u{c}', '\r']);
    let (neg, rest) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let digits: &str = &rest[..rest.bytes().take_while(u8::is_ascii_digit).count()];
    if digits.is_empty() {
        return Stoi::Invalid;
    }
    match digits.parse::<i64>() {
        Ok(v) => {
            let v = if neg { -v } else { v };
            if v < i64::from(i32::MIN) || v > i64::from(i32::MAX) {
                Stoi::OutOfRange
            } else {
                Stoi::Value(v)
            }
        }
        Err(_) => Stoi::OutOfRange,
    }
}

pub fn check(ctx: &ModelCtx, out: &mut Vec<Diagnostic>) {
    let cfg = ctx.cfg;
    if matches!(
        cfg.scheduling_choice,
        Some(SchedulingChoice::EnsembleScheduling(_))
    ) {
        return;
    }
    // Without any group Triton adds one that cannot fail: KIND_CPU without
    // GPUs, or KIND_GPU on all usable GPUs.
    let m = ctx.name;
    let supported: BTreeSet<i32> = ctx.options.gpus.iter().copied().collect();
    let supported_list = supported
        .iter()
        .map(|g| g.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let cc = cpp_double(ctx.options.min_compute_capability);

    for (i, group) in cfg.instance_group.iter().enumerate() {
        let base = format!("instance_group[{i}]");
        let g = if group.name.is_empty() {
            format!("{}_{i}", cfg.name)
        } else {
            group.name.clone()
        };
        // KIND_AUTO: the CPU when the server has no usable GPU or one of the
        // listed GPUs is not usable, else the GPU.
        let auto = group.kind == Kind::Auto as i32;
        let missing_gpu = group.gpus.iter().find(|id| !supported.contains(id));
        let kind = if auto {
            if supported.is_empty() || missing_gpu.is_some() {
                Kind::Cpu as i32
            } else {
                Kind::Gpu as i32
            }
        } else {
            group.kind
        };
        let gpus_path = format!("{base}.gpus");

        if kind == Kind::Model as i32 {
            if !group.gpus.is_empty() {
                let d = triton_at(
                    ctx,
                    rule!("E0401"),
                    &[&gpus_path, &base],
                    format!("instance group {g} of model {m} has kind KIND_MODEL but specifies one or more GPUs"),
                );
                let d = label_if(ctx, d, &format!("{base}.kind"), "kind set here");
                out.push(d.help("remove `gpus`, or use KIND_GPU"));
            }
        } else if kind == Kind::Gpu as i32 {
            if group.gpus.is_empty() {
                if supported.is_empty() {
                    let d = triton_at(
                        ctx,
                        rule!("E0402"),
                        &[&format!("{base}.kind"), &base],
                        format!("instance group {g} of model {m} has kind KIND_GPU but no GPUs are available"),
                    );
                    out.push(d.help(
                        "tritonctl checks for a CPU-only server unless told otherwise: pass --gpus with the target server's GPU ids (e.g. --gpus 0), or use KIND_CPU, or leave `kind` out to let Triton choose",
                    ));
                }
            } else {
                for (k, id) in group.gpus.iter().enumerate() {
                    if supported.contains(id) {
                        continue;
                    }
                    let d = triton_at(
                        ctx,
                        rule!("E0403"),
                        &[&format!("{gpus_path}[{k}]"), &gpus_path, &base],
                        format!(
                            "instance group {g} of model {m} specifies invalid or unsupported gpu id {id}. GPUs with at least the minimum required CUDA compute compatibility of {cc} are: {supported_list}"
                        ),
                    );
                    let d = if supported.is_empty() {
                        d.help("the target server has no usable GPU (see --gpus): use KIND_CPU")
                    } else {
                        d.help(format!("use GPU ids the server has: {supported_list}"))
                    };
                    push_merged(out, d, "also here");
                }
            }
        } else if kind == Kind::Cpu as i32 {
            if !group.gpus.is_empty() {
                let d = triton_at(
                    ctx,
                    rule!("E0404"),
                    &[&gpus_path, &base],
                    format!("instance group {g} of model {m} has kind KIND_CPU but specifies one or more GPUs"),
                );
                let d = label_if(ctx, d, &format!("{base}.kind"), "kind set here");
                let help = if !auto {
                    "remove `gpus`, or use KIND_GPU".to_string()
                } else if supported.is_empty() {
                    "`kind` is not set, so Triton picks KIND_CPU on a server without usable GPUs (see --gpus); remove `gpus` or set the kind".to_string()
                } else {
                    format!(
                        "`kind` is not set and GPU {} is not usable on the server, so Triton picks KIND_CPU; use GPU ids the server has: {supported_list}",
                        missing_gpu.copied().unwrap_or_default()
                    )
                };
                out.push(d.help(help));
            }
        } else {
            let d = triton_at(
                ctx,
                rule!("E0405"),
                &[&format!("{base}.kind"), &base],
                format!("instance group {g} of model {m} has unexpected kind KIND_AUTO"),
            );
            out.push(d.help("write the kind by name: KIND_AUTO, KIND_GPU, KIND_CPU or KIND_MODEL"));
        }

        check_profiles(ctx, group.profile.as_slice(), &base, &g, out);
    }
}

fn check_profiles(
    ctx: &ModelCtx,
    profiles: &[String],
    base: &str,
    g: &str,
    out: &mut Vec<Diagnostic>,
) {
    if profiles.is_empty() {
        return;
    }
    let m = ctx.name;
    let p = ctx.cfg.platform.as_str();
    // Without the model directory a config naming neither platform nor
    // backend may still be TensorRT: only its entries are checked then.
    if p != "tensorrt_plan" && !super::io::platform_unknown(ctx) {
        let d = triton_at(
            ctx,
            rule!("E0406"),
            &[&format!("{base}.profile"), base],
            format!(
                "instance group {g} of model {m} and platform {p}specifies profile field which is only supported for TensorRT models"
            ),
        );
        out.push(d.help("remove `profile`: optimization profiles exist only in TensorRT engines"));
        return;
    }
    for (k, prof) in profiles.iter().enumerate() {
        let path = format!("{base}.profile[{k}]");
        if prof.is_empty() {
            let d = triton_at(
                ctx,
                rule!("E0407"),
                &[&path],
                "profile name must not be empty".to_string(),
            )
            .help("give the profile index, e.g. \"0\"");
            push_merged(out, d, "also empty");
            continue;
        }
        match stoi(prof) {
            Stoi::Invalid => {
                let d = triton_at(
                    ctx,
                    rule!("E0408"),
                    &[&path],
                    format!("unable to parse '{prof}': stoi"),
                )
                .help("give the profile index as a decimal number, e.g. \"0\"");
                out.push(d);
            }
            Stoi::Value(v) if v < 0 => {
                let d = triton_at(
                    ctx,
                    rule!("E0409"),
                    &[&path],
                    format!(
                        "instance group {g} of model {m} and platform {p} specifies invalid profile {prof}. The field should contain the string representation of a non-negative integer."
                    ),
                )
                .help("profile indices start at 0");
                out.push(d);
            }
            Stoi::Value(_) | Stoi::OutOfRange => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stoi_like_cpp() {
        assert_eq!(stoi("3"), Stoi::Value(3));
        assert_eq!(stoi("  -2"), Stoi::Value(-2));
        assert_eq!(stoi("+7abc"), Stoi::Value(7));
        assert_eq!(stoi("1.5"), Stoi::Value(1));
        assert_eq!(stoi("abc"), Stoi::Invalid);
        assert_eq!(stoi("-"), Stoi::Invalid);
        assert_eq!(stoi(" "), Stoi::Invalid);
        assert_eq!(stoi("99999999999"), Stoi::OutOfRange);
    }

    #[test]
    fn compute_capability_like_to_string() {
        assert_eq!(cpp_double(6.0), "6.000000");
        assert_eq!(cpp_double(7.5), "7.500000");
    }
}
