//! Rules: the custom batch strategy library and the sequence batcher's
//! implicit state (docs/spec/validation.md §3.4). Triton runs these checks
//! while it creates the model (batch strategy) and its scheduler (state and
//! `initial_state`); the growable-memory checks run when a sequence starts.

use crate::diagnostics::Rule;
use crate::diagnostics::{Category, Diagnostic, Severity};
use crate::lint::registry::rule;
use crate::lint::ModelCtx;
use crate::schema::inference::model_config::SchedulingChoice;
use crate::schema::inference::model_instance_group::Kind;
use crate::schema::inference::model_sequence_batching::initial_state::StateData;
use crate::schema::inference::{DataType, ModelSequenceBatching};
use std::collections::HashSet;
use std::path::{Component, Path};

const CORE: &str =
    "core src/sequence_batch_scheduler/sequence_batch_scheduler.cc (GenerateInitialStateData)";

pub const RULES: &[Rule] = &[
    Rule {
        code: "E0501",
        name: "batch-strategy-with-sequence-batching",
        category: Category::Semantic,
        severity: Severity::Error,
        summary: "TRITON_BATCH_STRATEGY_PATH is set on a model that uses the sequence batcher",
        docs: "A custom batching strategy library (parameter `TRITON_BATCH_STRATEGY_PATH`) plugs into the dynamic batcher only. On a model with `sequence_batching` Triton refuses to load the model, although its message says it would fall back to the default strategy.\n\n```\nsequence_batching { }\nparameters { key: \"TRITON_BATCH_STRATEGY_PATH\" value { string_value: \"/models/m/libbatch.so\" } }\n# error: TRITON_BATCH_STRATEGY_PATH cannot be specified with sequence batcher, using default batching strategy\n```\n\nRemove the parameter, or switch the model to `dynamic_batching`.",
        triton_source: Some("core src/backend_model.cc (TritonModel::Create)"),
    },
    Rule {
        code: "E0502",
        name: "batch-strategy-path-escapes",
        category: Category::Semantic,
        severity: Severity::Error,
        summary: "The custom batch strategy library lies outside the model directory",
        docs: "Triton only loads a custom batching library (`TRITON_BATCH_STRATEGY_PATH`) that lies inside the model's own directory. It compares canonical paths: a relative path is resolved against the server's working directory (not the model directory), and `..` components are resolved before the comparison. An empty path is refused outright.\n\n```\nparameters { key: \"TRITON_BATCH_STRATEGY_PATH\" value { string_value: \"../shared/libbatch.so\" } }\n# error: Batching library path escapes model repository.\n```\n\nPut the library in the model directory and give its absolute path as the server sees it, e.g. `/models/my_model/libbatch.so`.",
        triton_source: Some("core src/backend_model.cc (TritonModel::Create), src/filesystem/api.cc (IsChildPathEscapingParentPath)"),
    },
    Rule {
        code: "E0503",
        name: "batch-strategy-library-missing",
        category: Category::Repository,
        severity: Severity::Error,
        summary: "The custom batch strategy library does not exist",
        docs: "`TRITON_BATCH_STRATEGY_PATH` must name an existing file; otherwise Triton fails the load with `Batching library path not found: <path>`.\n\ntritonctl maps an absolute path that runs through a directory named like the model (`/models/<model>/libbatch.so`) onto the model directory it validates, and reports the library when it is not there. Paths it cannot map are not checked.",
        triton_source: Some("core src/backend_model.cc (TritonModel::Create)"),
    },
    Rule {
        code: "E0504",
        name: "initial-state-count",
        category: Category::Semantic,
        severity: Severity::Error,
        summary: "A sequence state lists more than one initial_state",
        docs: "Each `sequence_batching.state` entry may carry at most one `initial_state`; Triton refuses the model otherwise.\n\n```\nstate [ { input_name: \"IN\" output_name: \"OUT\" data_type: TYPE_INT32 dims: [ 1 ]\n          initial_state [ { name: \"a\" data_type: TYPE_INT32 dims: [ 1 ] zero_data: true },\n                          { name: \"b\" data_type: TYPE_INT32 dims: [ 1 ] zero_data: true } ] } ]\n# error: initial_state field for state input 'IN' must contain exactly one or zero element. Found '2' elements.\n```",
        triton_source: Some(CORE),
    },
    Rule {
        code: "E0505",
        name: "initial-state-data-type",
        category: Category::Semantic,
        severity: Severity::Error,
        summary: "initial_state data_type differs from the state's data_type",
        docs: "The initial value is copied into the state buffer byte for byte, so Triton requires `initial_state.data_type` to equal the state's `data_type`.\n\n```\nstate [ { input_name: \"IN\" ... data_type: TYPE_INT32\n          initial_state [ { name: \"init\" data_type: TYPE_FP32 dims: [ 1 ] zero_data: true } ] } ]\n# error: The data type used for 'initial_state' field of state 'IN' does not match the state data type.\n```",
        triton_source: Some(CORE),
    },
    Rule {
        code: "E0506",
        name: "initial-state-name",
        category: Category::Semantic,
        severity: Severity::Error,
        summary: "initial_state without a name",
        docs: "Triton requires a `name` on every `initial_state`.\n\n```\ninitial_state [ { data_type: TYPE_INT32 dims: [ 1 ] zero_data: true } ]\n# error: Field 'name' must be set when using initial_state for state input 'IN'.\n```",
        triton_source: Some(CORE),
    },
    Rule {
        code: "E0507",
        name: "initial-state-duplicate-input",
        category: Category::Semantic,
        severity: Severity::Error,
        summary: "Two states with the same input_name both carry an initial_state",
        docs: "Initial values are kept per state input name. When two `state` entries share an `input_name` and both give an `initial_state`, Triton refuses the model (`State input name '<in>' specified more than once.`). Give every state its own `input_name`.",
        triton_source: Some(CORE),
    },
    Rule {
        code: "E0508",
        name: "initial-state-rank",
        category: Category::Semantic,
        severity: Severity::Error,
        summary: "initial_state dims have a different rank than the state dims",
        docs: "`initial_state.dims` must have as many entries as the state's `dims` (neither includes the batch dimension).\n\n```\nstate [ { input_name: \"IN\" ... dims: [ 2, 3 ]\n          initial_state [ { name: \"init\" data_type: TYPE_INT32 dims: [ 6 ] zero_data: true } ] } ]\n# error: Number of dimensions in 'initial_state' doesn't match the size of 'state' dimensions for state input 'IN'. 1 != 2\n```",
        triton_source: Some(CORE),
    },
    Rule {
        code: "E0509",
        name: "initial-state-variable-dims",
        category: Category::Semantic,
        severity: Severity::Error,
        summary: "initial_state dims contain -1",
        docs: "The initial value is a concrete tensor, so its `dims` cannot contain `-1` even where the state's dims do. Give the size the state should start with.\n\n```\ninitial_state [ { name: \"init\" data_type: TYPE_INT32 dims: [ -1 ] zero_data: true } ]\n# error: 'initial_state' field for state input name 'IN' contains variable dimensions.\n```",
        triton_source: Some(CORE),
    },
    Rule {
        code: "E0510",
        name: "initial-state-dims-mismatch",
        category: Category::Semantic,
        severity: Severity::Error,
        summary: "An initial_state dim differs from a fixed state dim",
        docs: "Where the state's dimension is fixed, `initial_state` must use the same size (a state `-1` accepts any size). A negative dimension other than -1 is refused as invalid.\n\n```\nstate [ { input_name: \"IN\" ... dims: [ 4 ]\n          initial_state [ { name: \"init\" data_type: TYPE_INT32 dims: [ 3 ] zero_data: true } ] } ]\n# error: 'initial_state' dim for input name 'IN' doesn't match 'state' dim description. 3 != 4\n```",
        triton_source: Some(CORE),
    },
    Rule {
        code: "E0511",
        name: "initial-state-data-file-short",
        category: Category::Semantic,
        severity: Severity::Error,
        summary: "initial_state data_file holds fewer bytes than the initial tensor needs",
        docs: "`data_file` is read from `<model dir>/initial_state/<file>` as raw bytes. For fixed-size types it must hold at least element count × element size bytes (extra bytes are ignored). Checked when the model directory is known.\n\n```\ninitial_state [ { name: \"init\" data_type: TYPE_INT32 dims: [ 4 ] data_file: \"init.bin\" } ]\n# init.bin has 8 bytes\n# error: initial_state setting expects 16 bytes, but the data provided from init.binonly has 8 bytes.\n```\n\n(The missing space before `only` is Triton's.)",
        triton_source: Some(CORE),
    },
    Rule {
        code: "E0512",
        name: "initial-state-data-file-missing",
        category: Category::Repository,
        severity: Severity::Error,
        summary: "initial_state data_file does not exist",
        docs: "Triton reads `data_file` from the `initial_state` folder of the model directory (`<model dir>/initial_state/<file>`), not from a version directory, and fails the load when it cannot open it. Checked when the model directory is known.",
        triton_source: Some(CORE),
    },
    Rule {
        code: "E0513",
        name: "initial-state-no-data",
        category: Category::Semantic,
        severity: Severity::Error,
        summary: "initial_state has neither zero_data nor data_file",
        docs: "An `initial_state` must say where its value comes from: `zero_data: true` or `data_file: \"<file>\"`.\n\n```\ninitial_state [ { name: \"init\" data_type: TYPE_INT32 dims: [ 1 ] } ]\n# error: initial_state setting expects state'IN' to have state_data set\n```",
        triton_source: Some(CORE),
    },
    Rule {
        code: "E0514",
        name: "growable-memory-needs-single-buffer",
        category: Category::Semantic,
        severity: Severity::Error,
        summary: "use_growable_memory without use_same_buffer_for_input_output",
        docs: "Growable state memory works only when the state input and output share one buffer. The model loads, but Triton fails every sequence when it initialises the state, so the model is unusable.\n\n```\nstate [ { input_name: \"IN\" output_name: \"OUT\" ... use_growable_memory: true } ]\n# error (per sequence): In order to 'use_growable_memory', you must also enable 'use_single_buffer' for state input name 'IN'.\n```\n\nSet `use_same_buffer_for_input_output: true` on the state.",
        triton_source: Some("core src/sequence_state.cc (SequenceStates::Initialize)"),
    },
    Rule {
        code: "E0515",
        name: "growable-memory-needs-gpu",
        category: Category::Semantic,
        severity: Severity::Error,
        summary: "use_growable_memory on a model with CPU instances",
        docs: "Growable state memory is implemented for GPU memory only. On a `KIND_CPU` or `KIND_MODEL` instance every sequence fails when its state is initialised, although the model loads.\n\n```\nstate [ { ... use_same_buffer_for_input_output: true use_growable_memory: true } ]\ninstance_group [ { kind: KIND_CPU } ]\n# error (per sequence): 'use_growable_memory' can only work with KIND_GPU model instances right now. ...\n```",
        triton_source: Some("core src/sequence_state.cc (SequenceStates::Initialize)"),
    },
];

/// Size in bytes of one element of a fixed-size type; 0 for `TYPE_STRING`
/// and unknown types (Triton's `GetDataTypeByteSize`).
pub(crate) fn dtype_size(dt: i32) -> i64 {
    match DataType::try_from(dt) {
        Ok(DataType::TypeBool | DataType::TypeUint8 | DataType::TypeInt8) => 1,
        Ok(
            DataType::TypeUint16 | DataType::TypeInt16 | DataType::TypeFp16 | DataType::TypeBf16,
        ) => 2,
        Ok(DataType::TypeUint32 | DataType::TypeInt32 | DataType::TypeFp32) => 4,
        Ok(DataType::TypeUint64 | DataType::TypeInt64 | DataType::TypeFp64) => 8,
        _ => 0,
    }
}

/// Element count of a shape the way Triton's `GetElementCount` computes
/// it: `Err(true)` when a dim is -1, `Err(false)` for any other negative
/// dim, `None`-like overflow folded into `Err(false)`.
pub(crate) fn element_count(dims: &[i64]) -> Result<i64, bool> {
    let mut cnt: i64 = 0;
    for (i, &d) in dims.iter().enumerate() {
        if d == -1 {
            return Err(true);
        }
        if d < 0 {
            return Err(false);
        }
        cnt = if i == 0 {
            d
        } else {
            cnt.checked_mul(d).ok_or(false)?
        };
    }
    Ok(cnt)
}

/// `[a,b,c]` as Triton prints dims.
pub(crate) fn dims_string(dims: &[i64]) -> String {
    let v: Vec<String> = dims.iter().map(i64::to_string).collect();
    format!("[{}]", v.join(","))
}

fn sequence_batching<'a>(ctx: &'a ModelCtx) -> Option<&'a ModelSequenceBatching> {
    match &ctx.cfg.scheduling_choice {
        Some(SchedulingChoice::SequenceBatching(sb)) => Some(sb),
        _ => None,
    }
}

pub fn check(ctx: &ModelCtx, out: &mut Vec<Diagnostic>) {
    check_batch_strategy(ctx, out);
    if let Some(sb) = sequence_batching(ctx) {
        check_states(ctx, sb, out);
    }
}

const STRATEGY_KEY: &str = "TRITON_BATCH_STRATEGY_PATH";

fn check_batch_strategy(ctx: &ModelCtx, out: &mut Vec<Diagnostic>) {
    let Some(param) = ctx.cfg.parameters.get(STRATEGY_KEY) else {
        return;
    };
    let key_path = format!("parameters{{{STRATEGY_KEY}}}.key");
    let value_path = format!("parameters{{{STRATEGY_KEY}}}.value.string_value");
    if sequence_batching(ctx).is_some() {
        let mut d = ctx
            .triton(
                rule!("E0501"),
                &key_path,
                "TRITON_BATCH_STRATEGY_PATH cannot be specified with sequence batcher, using default batching strategy",
            )
            .help("custom batching strategies apply to the dynamic batcher only; remove this parameter");
        if let Some(s) = ctx.name_span("sequence_batching") {
            d = d.label(s, "the model uses the sequence batcher");
        }
        out.push(d);
        return;
    }
    let path = param.string_value.as_str();
    if path.is_empty() {
        out.push(
            ctx.triton(
                rule!("E0502"),
                &value_path,
                "Parent path and child path must be non-empty",
            )
            .help("give the absolute path of the library inside the model directory"),
        );
        return;
    }
    let p = Path::new(path);
    if !p.is_absolute() {
        out.push(
            ctx.triton(rule!("E0502"), &value_path, "Batching library path escapes model repository.")
                .with_message(format!(
                    "batch strategy library path '{path}' is relative: Triton resolves it against the server's working directory, not the model directory"
                ))
                .help("give the absolute path of the library inside the model directory, e.g. '/models/<model>/libbatch.so'"),
        );
        return;
    }
    // Map `/.../<model dir name>/<rest>` onto the local model directory.
    let Some(dir) = ctx.dir else { return };
    let dir_name = crate::files::dir_name_of(dir).unwrap_or_else(|| ctx.name.to_string());
    let comps: Vec<Component> = p.components().collect();
    let starts: Vec<usize> = comps
        .iter()
        .enumerate()
        .filter(|(_, c)| matches!(c, Component::Normal(n) if n.to_string_lossy() == dir_name))
        .map(|(i, _)| i + 1)
        .collect();
    let Some(&last) = starts.last() else {
        out.push(
            ctx.triton(
                rule!("E0502"),
                &value_path,
                "Batching library path escapes model repository.",
            )
            .with_message(format!(
                "batch strategy library path '{path}' does not lie inside the model directory '{dir_name}'"
            ))
            .help("move the library into the model directory and point the parameter at it"),
        );
        return;
    };
    // The path relative to the model directory, when it stays inside it.
    let relative = |from: usize| {
        let mut rel = std::path::PathBuf::new();
        for c in &comps[from..] {
            match c {
                Component::ParentDir if !rel.pop() => return None,
                Component::ParentDir => {}
                Component::Normal(n) => rel.push(n),
                _ => {}
            }
        }
        Some(rel)
    };
    if starts
        .iter()
        .filter_map(|&s| relative(s))
        .any(|rel| dir.join(rel).is_file())
    {
        return;
    }
    match relative(last) {
        None => out.push(
            ctx.triton(
                rule!("E0502"),
                &value_path,
                "Batching library path escapes model repository.",
            )
            .help("remove the '..' components; the library must lie inside the model directory"),
        ),
        Some(rel) => out.push(
            ctx.triton(
                rule!("E0503"),
                &value_path,
                format!("Batching library path not found: {path}"),
            )
            .help(format!("'{}' is not in the model directory", rel.display())),
        ),
    }
}

/// Resolved instance kinds that are certainly not GPU (explicit
/// `KIND_CPU`/`KIND_MODEL`), with their paths.
fn non_gpu_groups(ctx: &ModelCtx) -> Vec<(usize, &'static str)> {
    ctx.cfg
        .instance_group
        .iter()
        .enumerate()
        .filter_map(|(i, g)| match Kind::try_from(g.kind) {
            Ok(Kind::Cpu) => Some((i, "KIND_CPU")),
            Ok(Kind::Model) => Some((i, "KIND_MODEL")),
            _ => None,
        })
        .collect()
}

fn check_states(ctx: &ModelCtx, sb: &ModelSequenceBatching, out: &mut Vec<Diagnostic>) {
    let mut with_initial: HashSet<&str> = HashSet::new();
    for (i, state) in sb.state.iter().enumerate() {
        let sp = format!("sequence_batching.state[{i}]");
        let input = state.input_name.as_str();
        // Runtime checks (per sequence), independent of initial_state.
        if state.use_growable_memory {
            if !state.use_same_buffer_for_input_output {
                out.push(
                    ctx.triton(
                        rule!("E0514"),
                        &format!("{sp}.use_growable_memory"),
                        format!("In order to 'use_growable_memory', you must also enable 'use_single_buffer' for state input name '{input}'."),
                    )
                    .help("set 'use_same_buffer_for_input_output: true' on this state"),
                );
            } else if let Some(&(g, kind)) = non_gpu_groups(ctx).first() {
                let mut d = ctx
                    .triton(
                        rule!("E0515"),
                        &format!("{sp}.use_growable_memory"),
                        format!("'use_growable_memory' can only work with KIND_GPU model instances right now. Please either change the instance type to KIND_GPU or set 'use_growable_memory' to false for state input '{input}'."),
                    )
                    .help("use KIND_GPU instances or drop 'use_growable_memory'");
                if let Some(s) = ctx.span(&format!("instance_group[{g}].kind")) {
                    d = d.label(s, format!("{kind} instances"));
                }
                out.push(d);
            }
        }

        if state.initial_state.len() > 1 {
            out.push(
                ctx.triton(
                    rule!("E0504"),
                    &format!("{sp}.initial_state[1]"),
                    format!(
                        "initial_state field for state input '{input}' must contain exactly one or zero element. Found '{}' elements.",
                        state.initial_state.len()
                    ),
                )
                .help("keep a single initial_state for this state"),
            );
            continue;
        }
        let Some(init) = state.initial_state.first() else {
            continue;
        };
        let ip = format!("{sp}.initial_state[0]");
        if init.data_type != state.data_type {
            let mut d = ctx
                .triton(
                    rule!("E0505"),
                    &format!("{ip}.data_type"),
                    format!("The data type used for 'initial_state' field of state '{input}' does not match the state data type."),
                )
                .help(format!(
                    "use data_type: {} in the initial_state",
                    crate::schema::data_type_name(state.data_type)
                ));
            if let Some(s) = ctx.exact_span(&format!("{sp}.data_type")) {
                d = d.label(s, "state data type");
            }
            out.push(d);
            continue;
        }
        if init.name.is_empty() {
            out.push(
                ctx.triton(
                    rule!("E0506"),
                    &ip,
                    format!("Field 'name' must be set when using initial_state for state input '{input}'."),
                )
                .help("add name: \"<any name>\" to the initial_state"),
            );
            continue;
        }
        if with_initial.contains(input) {
            out.push(
                ctx.triton(
                    rule!("E0507"),
                    &format!("{sp}.input_name"),
                    format!("State input name '{input}' specified more than once."),
                )
                .help("give every state its own input_name"),
            );
            continue;
        }
        if init.dims.len() != state.dims.len() {
            let mut d = ctx
                .triton(
                    rule!("E0508"),
                    &format!("{ip}.dims"),
                    format!(
                        "Number of dimensions in 'initial_state' doesn't match the size of 'state' dimensions for state input '{input}'. {} != {}",
                        init.dims.len(),
                        state.dims.len()
                    ),
                )
                .help(format!(
                    "the state has {} dimension(s); give the initial_state as many",
                    state.dims.len()
                ));
            if let Some(s) = ctx.exact_span(&format!("{sp}.dims")) {
                d = d.label(s, "state dims");
            }
            out.push(d);
            continue;
        }
        with_initial.insert(input);
        if !check_initial_dims(ctx, &sp, &ip, input, &state.dims, &init.dims, out) {
            continue;
        }
        match &init.state_data {
            None => out.push(
                ctx.triton(
                    rule!("E0513"),
                    &ip,
                    format!("initial_state setting expects state'{input}' to have state_data set"),
                )
                .help("add 'zero_data: true' or 'data_file: \"<file>\"'"),
            ),
            Some(StateData::ZeroData(_)) => {}
            Some(StateData::DataFile(file)) => {
                check_data_file(ctx, &ip, init.data_type, &init.dims, file, out);
            }
        }
    }
}

/// Triton's dims walk; false when it reported a problem.
fn check_initial_dims(
    ctx: &ModelCtx,
    sp: &str,
    ip: &str,
    input: &str,
    state_dims: &[i64],
    init_dims: &[i64],
    out: &mut Vec<Diagnostic>,
) -> bool {
    for (k, (&d, &s)) in init_dims.iter().zip(state_dims).enumerate() {
        if d == -1 {
            out.push(
                ctx.triton(
                    rule!("E0509"),
                    &format!("{ip}.dims[{k}]"),
                    format!("'initial_state' field for state input name '{input}' contains variable dimensions."),
                )
                .help("give the concrete size the state starts with"),
            );
            return false;
        }
        if s != -1 && d != s {
            let mut diag = ctx
                .triton(
                    rule!("E0510"),
                    &format!("{ip}.dims[{k}]"),
                    format!("'initial_state' dim for input name '{input}' doesn't match 'state' dim description. {d} != {s}"),
                )
                .help(format!("use {s} here, as the state does"));
            if let Some(span) = ctx.exact_span(&format!("{sp}.dims[{k}]")) {
                diag = diag.label(span, "state dim");
            }
            out.push(diag);
            return false;
        }
    }
    if let Err(false) = element_count(init_dims) {
        out.push(
            ctx.triton(
                rule!("E0510"),
                &format!("{ip}.dims"),
                format!(
                    "tensor '{input}' contains an invalid dimension {}",
                    dims_string(init_dims)
                ),
            )
            .help("dimensions must be non-negative"),
        );
        return false;
    }
    true
}

fn check_data_file(
    ctx: &ModelCtx,
    ip: &str,
    data_type: i32,
    dims: &[i64],
    file: &str,
    out: &mut Vec<Diagnostic>,
) {
    let Some(dir) = ctx.dir else { return };
    let path = dir.join("initial_state").join(file);
    let fpath = format!("{ip}.data_file");
    let len = match std::fs::metadata(&path) {
        Ok(m) if m.is_file() => m.len(),
        Ok(_) | Err(_) => {
            out.push(
                ctx.triton(
                    rule!("E0512"),
                    &fpath,
                    format!(
                        "failed to open text file for read {}: No such file or directory",
                        path.display()
                    ),
                )
                .help(format!(
                    "put the file in the model's 'initial_state' directory ({})",
                    Path::new("initial_state").join(file).display()
                )),
            );
            return;
        }
    };
    if data_type == DataType::TypeString as i32 {
        return;
    }
    let size = dtype_size(data_type);
    let Ok(count) = element_count(dims) else {
        return;
    };
    if size == 0 {
        return;
    }
    let Some(need) = count.checked_mul(size) else {
        return;
    };
    if (len as i64) < need {
        out.push(
            ctx.triton(
                rule!("E0511"),
                &fpath,
                format!("initial_state setting expects {need} bytes, but the data provided from {file}only has {len} bytes."),
            )
            .help(format!(
                "{} element(s) of {} need {need} bytes of raw data",
                count,
                crate::schema::data_type_name(data_type)
            )),
        );
    }
}

/// Replaces the message while keeping Triton's text.
pub(crate) trait WithMessage {
    fn with_message(self, m: String) -> Self;
}

impl WithMessage for Diagnostic {
    fn with_message(mut self, m: String) -> Diagnostic {
        self.message = m;
        self
    }
}
