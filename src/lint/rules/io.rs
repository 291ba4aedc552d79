//! Rules: Triton's `ValidateModelIOConfig` (docs/spec/validation.md §3.2): each
//! input, then each output, then `batch_input`/`batch_output`. Every message
//! gets ` for <m>` appended, as Triton does.
//!
//! Triton runs these checks on the config *after* the backend's
//! auto-complete when auto-complete is on (the default). So that nothing is
//! reported that auto-complete would repair, [`Finality`] says which parts
//! of the config are final: with auto-complete off, all of it; for ONNX
//! Runtime, the tensors as listed (ORT never repairs a listed tensor) but
//! `max_batch_size: 0` and an empty input or output list may still be
//! filled from the model; for other backends, which may also fill missing
//! `data_type`/`dims` of listed tensors, only what no auto-complete touches.

use super::model::{label_if, push_merged, triton_at};
use crate::diagnostics::Diagnostic;
use crate::diagnostics::Rule;
use crate::lint::registry::rule;
use crate::lint::ModelCtx;
use crate::schema::inference::model_input::Format;
use crate::schema::inference::{batch_input, batch_output, DataType, ModelTensorReshape};

const SRC: Option<&str> =
    Some("core src/model_config_utils.cc (ValidateModelIOConfig, ValidateIOShape)");
const SRC_BATCH: Option<&str> = Some("core src/model_config_utils.cc (ValidateBatchIO)");

pub const RULES: &[Rule] = &[
    Rule::semantic_error(
        "E0301",
        "tensor-without-name",
        "An input or output has no name",
        "Every `input` and `output` entry must name the model tensor, else the load fails with `model input must specify 'name' for <m>` (or `model output ...`).\n\n```\ninput [ { data_type: TYPE_FP32 dims: [ 4 ] } ]   # error: no name\n```",
        SRC
    ),
    Rule::semantic_error(
        "E0302",
        "tensor-without-data-type",
        "An input or output has no `data_type`",
        "Every listed tensor needs a `data_type`; without one (or with `TYPE_INVALID`) the load fails with `model input '<n>' must specify 'data_type' for <m>`. With auto-complete on, the ONNX Runtime backend does not repair a tensor you listed, so the error stands; the TensorRT and TensorFlow backends fill it in, and tritonctl then stays silent.\n\n```\ninput [ { name: \"x\" data_type: TYPE_FP32 dims: [ 3 ] } ]\n```",
        SRC
    ),
    Rule::semantic_error(
        "E0303",
        "tensor-without-dims",
        "An input or output has no `dims`",
        "Every listed tensor needs its shape in `dims` (without the batch dimension when `max_batch_size > 0`). A scalar is written `dims: [ 1 ]`. Without dims the load fails with `model input '<n>' must specify 'dims' for <m>`.\n\n```\ninput [ { name: \"x\" data_type: TYPE_FP32 } ]              # error\ninput [ { name: \"x\" data_type: TYPE_FP32 dims: [ 1 ] } ]   # ok: a scalar\n```",
        SRC
    ),
    Rule::semantic_error(
        "E0304",
        "empty-reshape-without-batching",
        "An empty `reshape` on a model that does not batch",
        "`reshape { shape: [ ] }` turns the tensor into a scalar, which is only possible when the batch dimension remains (`max_batch_size > 0`). Otherwise the load fails with `model input '<n>' cannot have empty reshape for non-batching model as scalar tensors are not supported for <m>`.\n\n```\nmax_batch_size: 0\ninput [ { name: \"x\" data_type: TYPE_FP32 dims: [ 1 ] reshape { shape: [ ] } } ]   # error\n```",
        SRC
    ),
    Rule::semantic_error(
        "E0305",
        "invalid-dimension",
        "A dimension is 0 or below -1",
        "Each entry of `dims` is a size of at least 1, or -1 for a variable-size dimension. Anything else fails with `model input '<n>' dimension must be integer >= 1, or -1 to indicate a variable-size dimension for <m>`.\n\n```\ndims: [ 1, 0, 28 ]   # error: 0\n```",
        SRC
    ),
    Rule::semantic_error(
        "E0306",
        "invalid-reshape-dimension",
        "A `reshape` dimension is 0 or below -1",
        "Each entry of `reshape.shape` is a size of at least 1, or -1. Anything else fails with `model input '<n>' reshape dimensions must be integer >= 1, or -1 to indicate a variable-size dimension for <m>`.\n\n```\ndims: [ 2, 2 ]\nreshape { shape: [ 0 ] }   # error: 0\n```",
        SRC
    ),
    Rule::semantic_error(
        "E0307",
        "element-count-overflow",
        "The element count of a shape does not fit in 64 bits",
        "When a tensor has a `reshape`, Triton multiplies out both shapes (up to the first -1); a product beyond 9223372036854775807 fails with `element count for tensor '<n> dims' exceeds maximum size of 9223372036854775807 for <m>` (`'<n> reshape'` for the reshape).\n\n```\ndims: [ 4611686018427387904, 4 ]\nreshape { shape: [ -1 ] }   # error: 2^64 elements\n```",
        SRC
    ),
    Rule::semantic_error(
        "E0308",
        "reshape-size-mismatch",
        "`dims` and `reshape` hold different numbers of elements",
        "A reshape only reinterprets the data, so both shapes must hold the same number of elements. A shape with a -1 counts as variable: both must then have one, and the fixed parts between the -1 entries must multiply to the same products (`[2,4,-1,6]` ↔ `[8,-1,1,6]` is fine: 8 and 6 on both sides). `dims: [ 1 ]` may reshape to `[ ]`. Otherwise the load fails with `model input '<n>' has different size for dims and reshape for <m>`.\n\n```\ndims: [ 1, 3, 2 ]\nreshape { shape: [ 5 ] }   # error: 6 elements vs 5\n```",
        SRC
    ),
    Rule::semantic_error(
        "E0309",
        "reshape-variable-dims-mismatch",
        "`dims` and `reshape` split at their -1 entries into different numbers of parts",
        "When both shapes have variable-size dimensions, each is split at its -1 entries; the two must give the same number of parts, else the load fails with `model input '<n>' has different number of variable-size dimensions for dims and reshape for <m>`.\n\n```\ndims: [ 2, -1 ]\nreshape { shape: [ 2, -1, -1 ] }   # error: 2 parts vs 3\n```",
        SRC
    ),
    Rule::semantic_error(
        "E0310",
        "image-format-needs-3-dims",
        "An input with format NHWC/NCHW does not have 3 dims",
        "`format: FORMAT_NHWC` and `FORMAT_NCHW` describe an image tensor of three dimensions (without the batch dimension). Other ranks fail with `model input NHWC/NCHW require 3 dims for <m>`.\n\n```\ninput [ { name: \"image\" data_type: TYPE_FP32 format: FORMAT_NCHW dims: [ 224, 224 ] } ]   # error: [ 3, 224, 224 ]\n```",
        SRC
    ),
    Rule::semantic_error(
        "E0311",
        "shape-tensor-not-tensorrt",
        "`is_shape_tensor` on a model that is not TensorRT",
        "Shape tensors exist only in TensorRT engines; on any other platform the load fails with `shape tensors are only supported for TensorRT platform for <m>`.\n\n```\nplatform: \"onnxruntime_onnx\"\ninput [ { name: \"shape\" data_type: TYPE_INT32 dims: [ 2 ] is_shape_tensor: true } ]   # error\n```",
        SRC
    ),
    Rule::semantic_error(
        "E0312",
        "non-linear-format-not-tensorrt",
        "`is_non_linear_format_io` on a model that is not TensorRT",
        "Non-linear I/O formats exist only in TensorRT; on any other platform the load fails with `Non-linear IO format is only supported for the TensorRT platform for <m>`.\n\n```\nplatform: \"onnxruntime_onnx\"\ninput [ { name: \"x\" data_type: TYPE_FP32 dims: [ 3, 8, 8 ] is_non_linear_format_io: true } ]   # error\n```",
        SRC
    ),
    Rule::semantic_error(
        "E0313",
        "non-linear-format-needs-3-dims",
        "A non-linear-format tensor does not have 3 dims",
        "A tensor with `is_non_linear_format_io: true` must have three dimensions, else the load fails with `Non-linear IO format input requires 3 dims for <m>` (or `output`).\n\n```\nplatform: \"tensorrt_plan\"\ninput [ { name: \"x\" data_type: TYPE_FP32 dims: [ 64 ] is_non_linear_format_io: true } ]   # error\n```",
        SRC
    ),
    Rule::semantic_error(
        "E0314",
        "batch-input-source-count",
        "A `batch_input` does not name exactly one source input",
        "Every batch input kind Triton knows derives its value from one request input, named in `source_input`. Zero or several fail with `batch input kind '<KIND>' expects 1 source input, got <k> for <m>`.\n\n```\nbatch_input [ { kind: BATCH_ELEMENT_COUNT target_name: \"N\" data_type: TYPE_FP32 source_input: \"INPUT\" } ]\n```",
        SRC_BATCH
    ),
    Rule::semantic_error(
        "E0315",
        "batch-input-unknown-kind",
        "A `batch_input` kind Triton does not know",
        "A numeric `kind` outside the defined values fails with `unknown batch input kind '<KIND>' for <m>` (the name is empty for such numbers).\n\n```\nbatch_input [ { kind: 17 target_name: \"N\" data_type: TYPE_INT32 source_input: \"x\" } ]   # error\n```",
        SRC_BATCH
    ),
    Rule::semantic_error(
        "E0316",
        "batch-input-data-type",
        "A `batch_input` whose data type is not INT32 or FP32",
        "Triton computes batch inputs as 32-bit integers or floats only: any other `data_type`, or none, fails with `batch input data type must be TYPE_INT32 or TYPE_FP32 for <m>`.\n\n```\nbatch_input [ { kind: BATCH_ELEMENT_COUNT target_name: \"N\" data_type: TYPE_INT64 source_input: \"x\" } ]   # error\n```",
        SRC_BATCH
    ),
    Rule::semantic_error(
        "E0317",
        "batch-io-unknown-source",
        "A `batch_input`/`batch_output` source is not a model input",
        "`source_input` must name an `input` of the config, else the load fails with `unknown source input name '<s>' for <m>`.\n\n```\ninput [ { name: \"INPUT\" data_type: TYPE_FP32 dims: [ -1 ] } ]\nbatch_input [ { kind: BATCH_ELEMENT_COUNT target_name: \"N\" data_type: TYPE_INT32 source_input: \"INPUT0\" } ]   # error\n```",
        SRC_BATCH
    ),
    Rule::semantic_error(
        "E0318",
        "batch-output-source-count",
        "A `batch_output` does not name exactly one source input",
        "`BATCH_SCATTER_WITH_INPUT_SHAPE` scatters the output by the shape of one input, named in `source_input`. Zero or several fail with `batch output kind 'BATCH_SCATTER_WITH_INPUT_SHAPE' expects 1 source input, got <k> for <m>`.\n\n```\nbatch_output [ { target_name: \"OUT\" kind: BATCH_SCATTER_WITH_INPUT_SHAPE } ]   # error: no source_input\n```",
        SRC_BATCH
    ),
    Rule::semantic_error(
        "E0319",
        "batch-output-unknown-kind",
        "A `batch_output` kind Triton does not know",
        "A numeric `kind` outside the defined values fails with `unknown batch output kind '<KIND>' for <m>`.\n\n```\nbatch_output [ { target_name: \"OUT\" kind: 3 source_input: \"IN\" } ]   # error\n```",
        SRC_BATCH
    ),
    Rule::semantic_error(
        "E0320",
        "batch-output-unknown-target",
        "A `batch_output` target is not a model output",
        "`target_name` must name an `output` of the config, else the load fails with `unknown target output name '<t>' for <m>`.\n\n```\noutput [ { name: \"OUTPUT\" data_type: TYPE_FP32 dims: [ -1 ] } ]\nbatch_output [ { target_name: \"OUTPUT1\" kind: BATCH_SCATTER_WITH_INPUT_SHAPE source_input: \"IN\" } ]   # error\n```",
        SRC_BATCH
    ),
    Rule::semantic_error(
        "E0321",
        "batch-output-target-repeated",
        "A `batch_output` lists the same target twice",
        "Each target may appear once in a batch output's `target_name`, else the load fails with `target output name '<t>' can only be specified once for <m>`.\n\n```\nbatch_output [ { target_name: [ \"OUT\", \"OUT\" ] kind: BATCH_SCATTER_WITH_INPUT_SHAPE source_input: \"IN\" } ]   # error\n```",
        SRC_BATCH
    ),
];

/// Which parts of the config Triton validates as written (see module docs).
#[derive(Debug, Clone, Copy)]
struct Finality {
    /// `data_type`/`dims` of listed tensors are not filled in.
    listed: bool,
    /// `max_batch_size` stays as it is.
    max_batch_size: bool,
    /// The input list stays as it is.
    inputs: bool,
    /// The output list stays as it is.
    outputs: bool,
}

fn finality(ctx: &ModelCtx) -> Finality {
    let cfg = ctx.cfg;
    let all = Finality {
        listed: true,
        max_batch_size: true,
        inputs: true,
        outputs: true,
    };
    // Ensembles (and models without a backend) have no auto-complete.
    if !ctx.options.autocomplete || cfg.backend.is_empty() {
        return all;
    }
    let mbs_set = cfg.max_batch_size != 0;
    if cfg.backend == "onnxruntime" {
        let in_cnt = cfg.input.len() + cfg.batch_input.len();
        let out_cnt = cfg.output.len();
        if in_cnt > 0 && out_cnt > 0 {
            return all;
        }
        return Finality {
            listed: true,
            max_batch_size: mbs_set,
            inputs: in_cnt > 0,
            outputs: out_cnt > 0,
        };
    }
    Finality {
        listed: false,
        max_batch_size: mbs_set,
        inputs: false,
        outputs: false,
    }
}

/// What Triton's element count gives for a shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Count {
    /// A -1 before any overflow.
    Variable,
    /// A negative dimension other than -1.
    Invalid,
    Overflow,
    Fixed(i64),
}

fn element_count(dims: &[i64]) -> Count {
    let mut count: Option<i64> = None;
    for &d in dims {
        if d == -1 {
            return Count::Variable;
        }
        if d < 0 {
            return Count::Invalid;
        }
        count = Some(match count {
            None => d,
            Some(c) if d != 0 && c > i64::MAX / d => return Count::Overflow,
            Some(c) => c * d,
        });
    }
    Count::Fixed(count.unwrap_or(0))
}

impl Count {
    /// The value Triton compares (-1 for a variable shape).
    fn as_i64(self) -> i64 {
        match self {
            Count::Variable => -1,
            Count::Fixed(n) => n,
            Count::Invalid => -2,
            Count::Overflow => -3,
        }
    }
}

/// Products of the fixed runs between -1 entries.
fn runs(dims: &[i64]) -> Vec<i64> {
    let mut out = Vec::new();
    let mut cur: i64 = 1;
    for &d in dims {
        if d == -1 {
            out.push(cur);
            cur = 1;
        } else {
            cur = cur.wrapping_mul(d);
        }
    }
    out.push(cur);
    out
}

fn dims_text(dims: &[i64]) -> String {
    let v: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
    format!("[{}]", v.join(","))
}

struct Tensor<'a> {
    /// `input` or `output`.
    field: &'static str,
    index: usize,
    name: &'a str,
    data_type: i32,
    dims: &'a [i64],
    reshape: Option<&'a ModelTensorReshape>,
    is_shape_tensor: bool,
    is_non_linear_format_io: bool,
    /// Inputs only.
    format: i32,
}

pub fn check(ctx: &ModelCtx, out: &mut Vec<Diagnostic>) {
    let cfg = ctx.cfg;
    let fin = finality(ctx);
    for (i, io) in cfg.input.iter().enumerate() {
        let t = Tensor {
            field: "input",
            index: i,
            name: &io.name,
            data_type: io.data_type,
            dims: &io.dims,
            reshape: io.reshape.as_ref(),
            is_shape_tensor: io.is_shape_tensor,
            is_non_linear_format_io: io.is_non_linear_format_io,
            format: io.format,
        };
        check_tensor(ctx, &t, fin, out);
    }
    for (i, io) in cfg.output.iter().enumerate() {
        let t = Tensor {
            field: "output",
            index: i,
            name: &io.name,
            data_type: io.data_type,
            dims: &io.dims,
            reshape: io.reshape.as_ref(),
            is_shape_tensor: io.is_shape_tensor,
            is_non_linear_format_io: io.is_non_linear_format_io,
            format: Format::None as i32,
        };
        check_tensor(ctx, &t, fin, out);
    }
    check_batch_io(ctx, fin, out);
}

fn check_tensor(ctx: &ModelCtx, t: &Tensor, fin: Finality, out: &mut Vec<Diagnostic>) {
    let m = ctx.name;
    let base = format!("{}[{}]", t.field, t.index);
    let p = if t.field == "input" {
        "model input "
    } else {
        "model output "
    };
    let sfx = format!(" for {m}");

    if t.name.is_empty() {
        let d = triton_at(
            ctx,
            rule!("E0301"),
            &[&format!("{base}.name"), &base],
            format!("{p}must specify 'name'{sfx}"),
        )
        .help(format!("set `name` to the model's {} tensor", t.field));
        push_merged(out, d, "also without a name");
        // Every further message would name the tensor.
        return;
    }
    let pn = format!("{p}'{}' ", t.name);

    if t.data_type == DataType::TypeInvalid as i32 && fin.listed {
        out.push(
            triton_at(
                ctx,
                rule!("E0302"),
                &[&format!("{base}.data_type"), &base],
                format!("{pn}must specify 'data_type'{sfx}"),
            )
            .help("add `data_type`, e.g. TYPE_FP32"),
        );
    }
    if t.dims.is_empty() {
        if fin.listed {
            out.push(
                triton_at(
                    ctx,
                    rule!("E0303"),
                    &[&format!("{base}.dims"), &base],
                    format!("{pn}must specify 'dims'{sfx}"),
                )
                .help("add `dims` (without the batch dimension); a scalar is `dims: [ 1 ]`"),
            );
        }
        // Shape comparisons need dims.
        check_flags(ctx, t, &base, &sfx, out);
        return;
    }

    let mut shapes_ok = true;
    let mbs = ctx.cfg.max_batch_size;
    if let Some(r) = t.reshape {
        if r.shape.is_empty() && mbs == 0 {
            shapes_ok = false;
            if fin.max_batch_size {
                let d = triton_at(
                    ctx,
                    rule!("E0304"),
                    &[&format!("{base}.reshape")],
                    format!(
                        "{pn}cannot have empty reshape for non-batching model as scalar tensors are not supported{sfx}"
                    ),
                );
                out.push(d.help("remove the reshape, or give the model a batch dimension (`max_batch_size > 0`)"));
            }
        }
    }

    let bad_dims: Vec<usize> = (0..t.dims.len())
        .filter(|&k| t.dims[k] < 1 && t.dims[k] != -1)
        .collect();
    if let Some(&k0) = bad_dims.first() {
        shapes_ok = false;
        let mut d = triton_at(
            ctx,
            rule!("E0305"),
            &[&format!("{base}.dims[{k0}]"), &format!("{base}.dims")],
            format!("{pn}dimension must be integer >= 1, or -1 to indicate a variable-size dimension{sfx}"),
        );
        for &k in &bad_dims[1..] {
            d = label_if(ctx, d, &format!("{base}.dims[{k}]"), "also invalid");
        }
        out.push(d.help("use a size of at least 1, or -1 for a variable-size dimension"));
    }

    let Some(reshape) = t.reshape else {
        check_flags(ctx, t, &base, &sfx, out);
        return;
    };
    let shape = &reshape.shape;
    let bad_reshape: Vec<usize> = (0..shape.len())
        .filter(|&k| shape[k] < 1 && shape[k] != -1)
        .collect();
    if let Some(&k0) = bad_reshape.first() {
        shapes_ok = false;
        let mut d = triton_at(
            ctx,
            rule!("E0306"),
            &[&format!("{base}.reshape.shape[{k0}]"), &format!("{base}.reshape")],
            format!(
                "{pn}reshape dimensions must be integer >= 1, or -1 to indicate a variable-size dimension{sfx}"
            ),
        );
        for &k in &bad_reshape[1..] {
            d = label_if(
                ctx,
                d,
                &format!("{base}.reshape.shape[{k}]"),
                "also invalid",
            );
        }
        out.push(d.help("use a size of at least 1, or -1 for a variable-size dimension"));
    }

    if shapes_ok {
        let dc = element_count(t.dims);
        let rc = element_count(shape);
        for (c, what, path) in [
            (dc, "dims", format!("{base}.dims")),
            (rc, "reshape", format!("{base}.reshape")),
        ] {
            if c == Count::Overflow {
                shapes_ok = false;
                out.push(
                    triton_at(
                        ctx,
                        rule!("E0307"),
                        &[&path],
                        format!(
                            "element count for tensor '{} {what}' exceeds maximum size of {}{sfx}",
                            t.name,
                            i64::MAX
                        ),
                    )
                    .help("no tensor can be this large; check the dimensions"),
                );
            }
        }
        if shapes_ok {
            check_reshape_sizes(
                ctx,
                t,
                shape,
                dc.as_i64(),
                rc.as_i64(),
                &base,
                &pn,
                &sfx,
                out,
            );
        }
    }
    check_flags(ctx, t, &base, &sfx, out);
}

#[allow(clippy::too_many_arguments)]
fn check_reshape_sizes(
    ctx: &ModelCtx,
    t: &Tensor,
    shape: &[i64],
    dims_size: i64,
    reshape_size: i64,
    base: &str,
    pn: &str,
    sfx: &str,
    out: &mut Vec<Diagnostic>,
) {
    let dims_path = format!("{base}.dims");
    let reshape_path = format!("{base}.reshape");
    let size_text = format!("{pn}has different size for dims and reshape{sfx}");
    if dims_size != reshape_size && (reshape_size != 0 || dims_size != 1) {
        let d = triton_at(ctx, rule!("E0308"), &[&reshape_path], size_text);
        let d = label_if(ctx, d, &dims_path, "dims set here");
        let help = match (dims_size, reshape_size) {
            (-1, _) | (_, -1) => format!(
                "dims {} and reshape {} must both have a variable-size dimension (-1), or neither",
                dims_text(t.dims),
                dims_text(shape)
            ),
            _ => format!(
                "dims {} hold {dims_size} elements, reshape {} holds {reshape_size}",
                dims_text(t.dims),
                dims_text(shape)
            ),
        };
        out.push(d.help(help));
        return;
    }
    if dims_size == -1 {
        let dr = runs(t.dims);
        let rr = runs(shape);
        if dr.len() != rr.len() {
            let d = triton_at(
                ctx,
                rule!("E0309"),
                &[&reshape_path],
                format!("{pn}has different number of variable-size dimensions for dims and reshape{sfx}"),
            );
            let d = label_if(ctx, d, &dims_path, "dims set here");
            out.push(d.help(format!(
                "dims {} has {} variable-size dimension(s), reshape {} has {}",
                dims_text(t.dims),
                dr.len() - 1,
                dims_text(shape),
                rr.len() - 1
            )));
        } else if dr != rr {
            let d = triton_at(ctx, rule!("E0308"), &[&reshape_path], size_text);
            let d = label_if(ctx, d, &dims_path, "dims set here");
            out.push(d.help(format!(
                "the fixed sizes between the -1 entries must multiply to the same products: {dr:?} for dims vs {rr:?} for reshape"
            )));
        }
    }
}

/// Format, shape-tensor and non-linear-format checks.
fn check_flags(ctx: &ModelCtx, t: &Tensor, base: &str, sfx: &str, out: &mut Vec<Diagnostic>) {
    let platform = ctx.cfg.platform.as_str();
    // Without its model directory a config that names neither platform nor
    // backend may still be a TensorRT model.
    let not_tensorrt = platform != "tensorrt_plan" && !platform_unknown(ctx);
    if (t.format == Format::Nhwc as i32 || t.format == Format::Nchw as i32) && t.dims.len() != 3 {
        let d = triton_at(
            ctx,
            rule!("E0310"),
            &[&format!("{base}.format")],
            format!("model input NHWC/NCHW require 3 dims{sfx}"),
        );
        let d = label_if(ctx, d, &format!("{base}.dims"), "dims set here");
        out.push(d.help("give three dims (without the batch dimension), or remove `format`"));
    }
    if t.is_shape_tensor && not_tensorrt {
        let d = triton_at(
            ctx,
            rule!("E0311"),
            &[&format!("{base}.is_shape_tensor")],
            format!("shape tensors are only supported for TensorRT platform{sfx}"),
        );
        push_merged(
            out,
            d.help("remove `is_shape_tensor`"),
            "also a shape tensor",
        );
    }
    if t.is_non_linear_format_io {
        let path = format!("{base}.is_non_linear_format_io");
        if not_tensorrt {
            let d = triton_at(
                ctx,
                rule!("E0312"),
                &[&path],
                format!("Non-linear IO format is only supported for the TensorRT platform{sfx}"),
            );
            push_merged(
                out,
                d.help("remove `is_non_linear_format_io`"),
                "also non-linear",
            );
        } else if platform == "tensorrt_plan" && t.dims.len() != 3 {
            let d = triton_at(
                ctx,
                rule!("E0313"),
                &[&path],
                format!("Non-linear IO format {} requires 3 dims{sfx}", t.field),
            );
            let d = label_if(ctx, d, &format!("{base}.dims"), "dims set here");
            push_merged(
                out,
                d.help("give three dims (without the batch dimension)"),
                "also not 3 dims",
            );
        }
    }
}

/// Whether the platform is unknown because the config was checked without
/// its model directory and names neither platform nor backend.
pub(crate) fn platform_unknown(ctx: &ModelCtx) -> bool {
    ctx.cfg.backend == crate::config::normalize::UNDETERMINED_BACKEND
}

fn check_batch_io(ctx: &ModelCtx, fin: Finality, out: &mut Vec<Diagnostic>) {
    let cfg = ctx.cfg;
    let m = ctx.name;
    let sfx = format!(" for {m}");
    let inputs: Vec<&str> = cfg.input.iter().map(|i| i.name.as_str()).collect();
    let outputs: Vec<&str> = cfg.output.iter().map(|o| o.name.as_str()).collect();

    for (i, bi) in cfg.batch_input.iter().enumerate() {
        let base = format!("batch_input[{i}]");
        match batch_input::Kind::try_from(bi.kind) {
            Ok(kind) => {
                let n = bi.source_input.len();
                if n != 1 {
                    let d = triton_at(
                        ctx,
                        rule!("E0314"),
                        &[
                            &format!("{base}.source_input"),
                            &format!("{base}.kind"),
                            &base,
                        ],
                        format!(
                            "batch input kind '{}' expects 1 source input, got {n}{sfx}",
                            kind.as_str_name()
                        ),
                    );
                    out.push(d.help("name exactly one model input in `source_input`"));
                }
            }
            Err(_) => {
                out.push(
                    triton_at(
                        ctx,
                        rule!("E0315"),
                        &[&format!("{base}.kind"), &base],
                        format!("unknown batch input kind ''{sfx}"),
                    )
                    .help("use one of the BATCH_* kinds by name"),
                );
            }
        }
        if bi.data_type != DataType::TypeInt32 as i32 && bi.data_type != DataType::TypeFp32 as i32 {
            let d = triton_at(
                ctx,
                rule!("E0316"),
                &[&format!("{base}.data_type"), &base],
                format!("batch input data type must be TYPE_INT32 or TYPE_FP32{sfx}"),
            )
            .help("use TYPE_INT32 or TYPE_FP32");
            push_merged(out, d, "also here");
        }
        if fin.inputs {
            for (k, s) in bi.source_input.iter().enumerate() {
                unknown_source(
                    ctx,
                    &inputs,
                    s,
                    &format!("{base}.source_input[{k}]"),
                    &sfx,
                    out,
                );
            }
        }
    }

    for (i, bo) in cfg.batch_output.iter().enumerate() {
        let base = format!("batch_output[{i}]");
        match batch_output::Kind::try_from(bo.kind) {
            Ok(kind) => {
                let n = bo.source_input.len();
                if n != 1 {
                    let d = triton_at(
                        ctx,
                        rule!("E0318"),
                        &[
                            &format!("{base}.source_input"),
                            &format!("{base}.kind"),
                            &base,
                        ],
                        format!(
                            "batch output kind '{}' expects 1 source input, got {n}{sfx}",
                            kind.as_str_name()
                        ),
                    );
                    out.push(d.help("name exactly one model input in `source_input`"));
                }
            }
            Err(_) => {
                out.push(
                    triton_at(
                        ctx,
                        rule!("E0319"),
                        &[&format!("{base}.kind"), &base],
                        format!("unknown batch output kind ''{sfx}"),
                    )
                    .help("use BATCH_SCATTER_WITH_INPUT_SHAPE"),
                );
            }
        }
        if fin.inputs {
            for (k, s) in bo.source_input.iter().enumerate() {
                unknown_source(
                    ctx,
                    &inputs,
                    s,
                    &format!("{base}.source_input[{k}]"),
                    &sfx,
                    out,
                );
            }
        }
        let mut seen: Vec<(&str, usize)> = Vec::new();
        for (k, t) in bo.target_name.iter().enumerate() {
            let path = format!("{base}.target_name[{k}]");
            if fin.outputs && !outputs.contains(&t.as_str()) {
                let d = triton_at(
                    ctx,
                    rule!("E0320"),
                    &[&path, &base],
                    format!("unknown target output name '{t}'{sfx}"),
                );
                let d = match suggestion(t, &outputs) {
                    Some(s) => d.help(format!(
                        "did you mean '{s}'? targets must be outputs of the config"
                    )),
                    None => d.help("targets must be outputs of the config"),
                };
                push_merged(out, d, "also here");
            }
            if let Some(&(_, first)) = seen.iter().find(|(n, _)| *n == t.as_str()) {
                let d = triton_at(
                    ctx,
                    rule!("E0321"),
                    &[&path, &base],
                    format!("target output name '{t}' can only be specified once{sfx}"),
                );
                let d = label_if(
                    ctx,
                    d,
                    &format!("{base}.target_name[{first}]"),
                    "first listed here",
                );
                push_merged(out, d.help("remove the repeated name"), "listed again here");
            } else {
                seen.push((t, k));
            }
        }
    }
}

fn unknown_source(
    ctx: &ModelCtx,
    inputs: &[&str],
    s: &str,
    path: &str,
    sfx: &str,
    out: &mut Vec<Diagnostic>,
) {
    if inputs.contains(&s) {
        return;
    }
    let d = triton_at(
        ctx,
        rule!("E0317"),
        &[path],
        format!("unknown source input name '{s}'{sfx}"),
    );
    let d = match suggestion(s, inputs) {
        Some(c) => d.help(format!(
            "did you mean '{c}'? sources must be inputs of the config"
        )),
        None => d.help("sources must be inputs of the config"),
    };
    push_merged(out, d, "also here");
}

/// A listed name that differs from `name` only in case, if any.
fn suggestion<'a>(name: &str, names: &[&'a str]) -> Option<&'a str> {
    names.iter().copied().find(|n| n.eq_ignore_ascii_case(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn element_counts_follow_triton() {
        assert_eq!(element_count(&[]), Count::Fixed(0));
        assert_eq!(element_count(&[2, 3]), Count::Fixed(6));
        assert_eq!(element_count(&[2, -1, 0]), Count::Variable);
        assert_eq!(element_count(&[i64::MAX, 2]), Count::Overflow);
        // Counting stops at the first -1, as in Triton.
        assert_eq!(element_count(&[-1, i64::MAX, 2]), Count::Variable);
        assert_eq!(runs(&[2, 4, -1, 6]), vec![8, 6]);
        assert_eq!(runs(&[8, -1, 1, 6]), vec![8, 6]);
        assert_eq!(runs(&[2, -1, -1]), vec![2, 1, 1]);
    }
}
