//! Rules: the model directory and the repository around it.
//!
//! Per model (`check`, needs the model directory): the config's name
//! against the directory name (docs/spec/validation.md §3.6), the version
//! directories and the version policy (§3.7), and whether the backend
//! library can be found (Triton's lookup, docs/spec/validation.md §7.1, the
//! end of the section). Across models (`check_repository`): the ensemble
//! dependency checks (missing models, cycles, required versions) and the
//! ensemble composition checks of `ensemble::check_composition`.
//!
//! Backend libraries: tritonctl cannot see the server's backend directory.
//! It takes Triton's standard backends (`lint::STANDARD_BACKENDS`) and the
//! `--known-backend` names as installed, and also accepts a
//! `libtriton_<backend>.so` in the model or version directory (Triton looks
//! there first). Any other backend is reported as a *warning* that carries
//! Triton's text (`unable to find backend library for backend ...`): on a
//! server without that backend this is exactly the load failure, but the
//! target server may have it installed. The same holds for a `runtime`
//! library that is not in the model directory. A `runtime` path that leaves
//! the directory it is found in fails on every server, so that one is an
//! error.

use crate::diagnostics::Rule;
use crate::diagnostics::{Category, Diagnostic, Severity};
use crate::lint::registry::rule;
use crate::lint::rules::ensemble::{self, StepModel};
use crate::lint::{CheckedModel, ModelCtx, ServerOptions, STANDARD_BACKENDS};
use crate::repo::versions::{scan_versions, IgnoredReason};
use crate::schema::inference::ModelConfig;
use std::collections::{HashMap, HashSet};
use std::path::Path;

const fn rule(
    code: &'static str,
    name: &'static str,
    severity: Severity,
    summary: &'static str,
    docs: &'static str,
    triton_source: Option<&'static str>,
) -> Rule {
    Rule {
        code,
        name,
        category: Category::Repository,
        severity,
        summary,
        docs,
        triton_source,
    }
}

const REPO_SRC: Option<&str> =
    Some("core src/model_repository_manager/model_repository_manager.cc");
const LIFECYCLE_SRC: Option<&str> =
    Some("core src/model_repository_manager/model_lifecycle.cc (VersionsToLoad)");
const BACKEND_SRC: Option<&str> = Some("core src/backend_model.cc (GetBackendLibraryProperties)");

pub const RULES: &[Rule] = &[
    rule(
        "N0701",
        "missing-config",
        Severity::Note,
        "A model directory without config.pbtxt",
        "Triton can load a model without `config.pbtxt` when auto-complete is on and the backend can derive the configuration from the model file (ONNX Runtime, TensorRT, OpenVINO, Python with `auto_complete_config`). Run `tritonctl autoconfig` to see and commit the config Triton would use.",
        REPO_SRC,
    ),
    rule(
        "E0702",
        "name-directory-mismatch",
        Severity::Error,
        "The config's `name` differs from the model directory's name",
        "Triton identifies a model by its directory. When the config sets `name`, it must be exactly the directory name (case included), otherwise the model is refused. Omitting `name` is allowed: Triton then uses the directory name.\n\n```\nmodels/resnet50/config.pbtxt:\nname: \"resnet\"    # error: directory is 'resnet50'\n```",
        REPO_SRC,
    ),
    rule(
        "E0703",
        "no-version-to-load",
        Severity::Error,
        "No version directory is selected by the version policy",
        "A model loads from numeric version directories (`1/`, `2/`, ...) inside its directory; ensembles need one too, even if it is empty. The `version_policy` picks among them: `latest { num_versions: n }` (default n = 1) the n highest, `all` every one, `specific { versions: [...] }` the listed ones that exist. When nothing is selected, Triton refuses the model.\n\n```\nmodels/my_model/config.pbtxt\nmodels/my_model/1/model.onnx\n```",
        LIFECYCLE_SRC,
    ),
    rule(
        "E0704",
        "runtime-escapes-backend-dir",
        Severity::Error,
        "`runtime` names a library path that leaves its directory",
        "`runtime` is a library file name, looked up in the version directory, the model directory and the backend's directory. A path that climbs out of the directory it is found in (`../other/libtriton_x.so`) is refused for safety.",
        BACKEND_SRC,
    ),
    rule(
        "E0705",
        "config-missing",
        Severity::Error,
        "No config.pbtxt while auto-complete is disabled",
        "With `--disable-auto-complete-config` (or the deprecated `--strict-model-config=true`) Triton requires every model directory to hold a `config.pbtxt`. Write one, or let Triton generate it by enabling auto-complete.",
        Some("core src/filesystem/implementations/local.h (ReadTextFile)"),
    ),
    rule(
        "W0701",
        "version-leading-zeros",
        Severity::Warning,
        "A version directory whose name starts with 0",
        "Triton ignores version directories such as `01` or `007` (it logs a warning and skips them), so the model may load fewer versions than expected, or none. Rename the directory to the plain number (`1`, `7`).",
        LIFECYCLE_SRC,
    ),
    rule(
        "W0702",
        "version-not-numeric",
        Severity::Warning,
        "A sub-directory of the model that is not a version number",
        "Every sub-directory of a model directory is taken as a version, except `warmup`, `initial_state` and `configs`. Others that do not start with a number (`v1`, `latest`, `.ipynb_checkpoints`) are ignored with a warning. Move extra files out of the model directory, or into a version directory.",
        LIFECYCLE_SRC,
    ),
    rule(
        "W0703",
        "specific-version-missing",
        Severity::Warning,
        "`version_policy.specific` lists a version without a directory",
        "Triton logs an error for each listed version that has no directory and loads the others; the missing ones are simply not available, so requests (and ensemble steps) asking for them fail.",
        LIFECYCLE_SRC,
    ),
    rule(
        "W0704",
        "backend-not-installed",
        Severity::Warning,
        "A backend that is not one of Triton's standard backends",
        "Triton loads `libtriton_<backend>.so` from the version directory, the model directory or `<backend-directory>/<backend>/` (or a Python-based backend's `model.py` there). tritonctl cannot see the server, so it accepts the standard backends (onnxruntime, tensorrt, pytorch, tensorflow, python, openvino), names given with `--known-backend`, and libraries inside the model directory. Other names are reported with the message Triton gives when the backend is missing. Pass `--known-backend <name>` if your server has it.",
        BACKEND_SRC,
    ),
    rule(
        "W0705",
        "runtime-not-found",
        Severity::Warning,
        "The `runtime` library is not in the model directory and not a known backend's library",
        "`runtime` overrides the library file Triton loads for the backend. It is searched in the version directory, the model directory and the backend's directory; `model.py` selects a Python-based backend. tritonctl accepts a file present in the model directory, `libtriton_<backend>.so` of an installed backend, and `model.py` for an installed backend; otherwise it warns with Triton's text, as the library must then come from the server's backend directory.",
        BACKEND_SRC,
    ),
    rule(
        "W0706",
        "hidden-directory-in-repository",
        Severity::Warning,
        "A hidden directory in the model repository",
        "Triton treats every sub-directory of a model repository as a model, hidden ones included (`.ipynb_checkpoints`, `.cache`). Such a directory fails to load, and by default a failed model stops the server from starting. tritonctl does not validate it as a model. Remove it from the repository.",
        REPO_SRC,
    ),
    rule(
        "N0703",
        "backend-undetermined-without-directory",
        Severity::Note,
        "A config checked on its own names neither platform nor backend",
        "Triton takes the backend from `backend`, `platform`, `default_model_filename`, the model file in the first version directory, or the model name (`name.<backend>`). A config read from standard input or from a file not named `config.pbtxt` has no directory to look into, so tritonctl cannot tell; it checks everything that does not depend on the backend. Validate the model directory, or pass `--platform-default`.",
        None,
    ),
    rule(
        "E0706",
        "symlink-leaves-repository",
        Severity::Error,
        "A model's file is a symbolic link that leads out of the directory being validated",
        "A `config.pbtxt`, `model.py` or other file of a model resolves, through a symbolic link, to a file outside the model repository (or model directory) being validated, such as `/etc/passwd` or `/proc/self/environ`. tritonctl does not read it, so that a repository from an untrusted pull request cannot make a CI log show files of the machine; the model is not checked. Triton follows such links, so the model may load on a server that has the file. Copy the file into the repository, or pass `--follow-symlinks` when the repository is trusted.",
        None,
    ),
    rule(
        "N0702",
        "ensemble-dependency-fails",
        Severity::Note,
        "An ensemble step uses a model that fails to load",
        "When a composing model fails to load, Triton refuses every ensemble that uses it. The composing model's own findings say why; fix those first. The ensemble's composition (maps, types, shapes) is checked once its models load.",
        REPO_SRC,
    ),
];

/// Where Triton looks for backends by default (`--backend-directory`).
const BACKEND_DIR: &str = "/opt/tritonserver/backends";

/// Whether the server is taken to have backend `b` installed.
pub fn backend_known(b: &str, opts: &ServerOptions) -> bool {
    STANDARD_BACKENDS.contains(&b) || opts.known_backends.iter().any(|k| k == b)
}

/// Whether `runtime` (a path relative to `base`, as Triton joins it) ends
/// up outside `base` once `.` and `..` are resolved.
fn runtime_escapes(base: &str, runtime: &str) -> bool {
    let mut stack: Vec<&str> = base.split('/').filter(|c| !c.is_empty()).collect();
    let depth = stack.len();
    for c in runtime.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                stack.pop();
            }
            other => stack.push(other),
        }
    }
    let base_parts: Vec<&str> = base.split('/').filter(|c| !c.is_empty()).collect();
    stack.len() < depth || stack[..depth] != base_parts[..]
}

pub fn check(ctx: &ModelCtx, out: &mut Vec<Diagnostic>) {
    let Some(dir) = ctx.dir else {
        check_backend_library(ctx, None, &[], out);
        return;
    };
    let dir_name = crate::files::dir_name_of(dir).unwrap_or_default();

    // docs/spec/validation.md §3.6: only a name written in the config can
    // differ.
    if !ctx.raw.name.is_empty() && ctx.cfg.name != dir_name {
        out.push(
            ctx.triton(
                rule!("E0702"),
                "name",
                format!(
                    "unexpected directory name '{dir_name}' for model '{}', directory name must equal model name",
                    ctx.cfg.name
                ),
            )
            .help(format!(
                "rename the directory to '{}', or set `name: \"{dir_name}\"` (or remove `name`)",
                ctx.cfg.name
            )),
        );
    }

    // docs/spec/validation.md §3.7.
    let scan = scan_versions(dir, ctx.cfg);
    for ignored in &scan.ignored {
        let code = match ignored.reason {
            IgnoredReason::LeadingZeros => rule!("W0701"),
            IgnoredReason::NotANumber => rule!("W0702"),
        };
        out.push(
            Diagnostic::new(code, String::new())
                .triton(ignored.triton_text.clone())
                .help("version directories are plain numbers: 1, 2, 3, ..."),
        );
    }
    for (i, v) in &scan.missing_specific {
        out.push(
            ctx.triton(
                rule!("W0703"),
                &format!("version_policy.specific.versions[{i}]"),
                format!("version {v} is specified for model '{dir_name}', but the version directory is not present"),
            )
            .help(format!("create the directory '{v}/' with the model file, or remove {v} from the list")),
        );
    }
    if scan.loaded.is_empty() {
        let help = if scan.existing.is_empty() {
            "create a version directory such as `1/` next to config.pbtxt (an empty one for an ensemble)".to_string()
        } else {
            let have: Vec<String> = scan.existing.iter().map(i64::to_string).collect();
            format!(
                "the version directories present are {}; change version_policy to select one",
                have.join(", ")
            )
        };
        out.push(
            ctx.triton(
                rule!("E0703"),
                "version_policy",
                format!("at least one version must be available under the version policy of model '{dir_name}'"),
            )
            .at_opt(ctx.exact_span("version_policy").and(ctx.name_span("version_policy")))
            .help(help),
        );
    }
    check_backend_library(ctx, Some(dir), &scan.loaded, out);
}

/// Triton's backend-library lookup (docs/spec/validation.md §7.1), as far
/// as it can be decided without the server (see the module documentation).
fn check_backend_library(
    ctx: &ModelCtx,
    dir: Option<&Path>,
    versions: &[i64],
    out: &mut Vec<Diagnostic>,
) {
    let cfg = ctx.cfg;
    let b = cfg.backend.as_str();
    if b.is_empty()
        || b == crate::config::normalize::UNDETERMINED_BACKEND
        || cfg.platform == "ensemble"
    {
        return;
    }
    let m = cfg.name.as_str();
    let backend_path = format!("{BACKEND_DIR}/{b}");
    let in_model_dir = |file: &str| {
        dir.is_some_and(|d| {
            d.join(file).is_file()
                || versions
                    .iter()
                    .any(|v| d.join(v.to_string()).join(file).is_file())
        })
    };
    let known = backend_known(b, ctx.options);
    let rt = cfg.runtime.as_str();
    if rt.is_empty() {
        if !known && !in_model_dir(&format!("libtriton_{b}.so")) {
            out.push(
                ctx.triton(
                    rule!("W0704"),
                    "backend",
                    format!("unable to find backend library for backend '{b}', try specifying runtime on the model configuration."),
                )
                // The backend may come from the directory name or a model
                // file rather than from the text.
                .at_opt(ctx.exact_span("backend"))
                .help(format!(
                    "if the server has this backend installed, pass `--known-backend {b}`; otherwise install it under {backend_path}/"
                )),
            );
        }
        return;
    }
    if rt == "model.py" {
        if !known {
            out.push(
                ctx.triton(
                    rule!("W0705"),
                    "runtime",
                    format!(
                        "unable to find Python backend based backend library '{rt}' for model '{m}', searched: '{backend_path}/model.py'"
                    ),
                )
                .help(format!(
                    "a Python-based backend needs {backend_path}/model.py on the server; pass `--known-backend {b}` if it is there"
                )),
            );
        }
        return;
    }
    if runtime_escapes(&backend_path, rt) {
        out.push(
            ctx.triton(
                rule!("E0704"),
                "runtime",
                format!(
                    "backend library name '{rt}' escapes backend directory '{backend_path}', for model '{m}', check model config runtime field"
                ),
            )
            .help("set `runtime` to a library file name (e.g. `libtriton_<backend>.so`) without `..`"),
        );
        return;
    }
    let Some(dir) = dir else {
        return;
    };
    let found = in_model_dir(rt) || (known && rt == format!("libtriton_{b}.so"));
    if !found {
        let version = versions.first().copied().unwrap_or(1);
        let shown = dir.display().to_string();
        out.push(
            ctx.triton(
                rule!("W0705"),
                "runtime",
                format!(
                    "unable to find backend library '{rt}' for model '{m}', searched: '{shown}/{version}' '{shown}' '{backend_path}' "
                ),
            )
            .help(format!(
                "put {rt} in the model directory, remove `runtime` to use the backend's own library, or make sure the server has {backend_path}/{rt}"
            )),
        );
    }
}

// ---------------------------------------------------------------------------
// Cross-model checks.

fn model_cfg(m: &CheckedModel) -> Option<&ModelConfig> {
    m.prepared.as_ref().map(|p| &p.cfg)
}

fn at(m: &CheckedModel, path: &str) -> Option<crate::text::Span> {
    m.parsed
        .as_ref()
        .and_then(|p| p.span(&crate::config::FieldPath::parse(path)))
}

/// The ensemble's step models, as indices into `models` (`None` when absent).
fn step_targets(
    models: &[CheckedModel],
    by_name: &HashMap<&str, usize>,
    e: usize,
) -> Vec<Option<usize>> {
    let Some(sched) = model_cfg(&models[e]).and_then(ensemble::ensemble_of) else {
        return Vec::new();
    };
    sched
        .step
        .iter()
        .map(|s| by_name.get(s.model_name.as_str()).copied())
        .collect()
}

/// The loops between ensembles: for each model, the strongly connected
/// component of the ensemble graph it belongs to (Tarjan's algorithm, with
/// an explicit stack: a chain of ensembles as deep as the repository is
/// large must not use the call stack). Only edges between ensembles count.
fn ensemble_components(targets: &[Vec<Option<usize>>], is_ens: &[bool]) -> Vec<usize> {
    const NONE: usize = usize::MAX;
    let n = targets.len();
    let mut index = vec![NONE; n];
    let mut low = vec![0usize; n];
    let mut on_stack = vec![false; n];
    let mut comp = vec![NONE; n];
    let mut stack = Vec::new();
    let mut next_index = 0;
    let mut next_comp = 0;
    // (node, next step to look at)
    let mut work: Vec<(usize, usize)> = Vec::new();
    for root in 0..n {
        if index[root] != NONE {
            continue;
        }
        index[root] = next_index;
        low[root] = next_index;
        next_index += 1;
        stack.push(root);
        on_stack[root] = true;
        work.push((root, 0));
        while let Some(top) = work.last_mut() {
            let v = top.0;
            let out = if is_ens[v] { &targets[v][..] } else { &[] };
            if let Some(t) = out.get(top.1) {
                top.1 += 1;
                let Some(w) = *t else { continue };
                if !is_ens[w] {
                    continue;
                }
                if index[w] == NONE {
                    index[w] = next_index;
                    low[w] = next_index;
                    next_index += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    comp[w] = next_comp;
                    if w == v {
                        break;
                    }
                }
                next_comp += 1;
            }
        }
    }
    comp
}

/// For each ensemble on a loop, the loop it is reported with: the last
/// ensemble before it on the loop and its step the loop leaves through
/// (the first step whose model is on the same loop). The last ensemble is
/// the ensemble itself for a step naming its own ensemble, otherwise the
/// first other ensemble of the loop, in `models` order, with a step naming
/// it. Linear in the number of steps.
fn find_cycles(targets: &[Vec<Option<usize>>], is_ens: &[bool]) -> Vec<Option<(usize, usize)>> {
    let n = targets.len();
    let comp = ensemble_components(targets, is_ens);
    let mut first_pred: Vec<Option<usize>> = vec![None; n];
    for p in (0..n).filter(|&p| is_ens[p]) {
        for d in targets[p].iter().flatten() {
            if *d != p && is_ens[*d] && comp[*d] == comp[p] && first_pred[*d].is_none() {
                first_pred[*d] = Some(p);
            }
        }
    }
    (0..n)
        .map(|e| {
            if !is_ens[e] {
                return None;
            }
            let (i, d) = targets[e].iter().enumerate().find_map(|(i, t)| {
                t.filter(|d| is_ens[*d] && comp[*d] == comp[e])
                    .map(|d| (i, d))
            })?;
            if d == e {
                Some((e, i))
            } else {
                first_pred[e].map(|last| (last, i))
            }
        })
        .collect()
}

/// Cross-model rules; returns the findings per model, in `models` order.
/// `CheckedModel::has_errors` tells which models fail on their own.
pub fn check_repository(models: &[CheckedModel], opts: &ServerOptions) -> Vec<Vec<Diagnostic>> {
    let n = models.len();
    let mut out: Vec<Vec<Diagnostic>> = vec![Vec::new(); n];
    let by_name: HashMap<&str, usize> = models
        .iter()
        .enumerate()
        .map(|(i, m)| (m.entry.name.as_str(), i))
        .collect();
    let is_ens: Vec<bool> = models
        .iter()
        .map(|m| model_cfg(m).is_some_and(ensemble::is_ensemble))
        .collect();
    let targets: Vec<Vec<Option<usize>>> =
        (0..n).map(|e| step_targets(models, &by_name, e)).collect();
    let loaded: Vec<Vec<i64>> = models
        .iter()
        .map(|m| {
            model_cfg(m)
                .map(|c| scan_versions(&m.entry.dir, c).loaded)
                .unwrap_or_default()
        })
        .collect();

    // Dependency part: every step model present, loadable, in the version
    // asked for, and no loops between ensembles.
    let mut fails: Vec<bool> = models
        .iter()
        .map(|m| m.has_errors || m.prepared.is_none())
        .collect();
    let mut blocked = vec![false; n];
    let mut in_cycle = vec![false; n];
    let cycles = find_cycles(&targets, &is_ens);
    for e in (0..n).filter(|&e| is_ens[e]) {
        let ename = models[e].entry.name.as_str();
        let sched = model_cfg(&models[e])
            .and_then(ensemble::ensemble_of)
            .expect("ensemble");
        let mut reported = HashSet::new();
        for (i, step) in sched.step.iter().enumerate() {
            if step.model_name.is_empty() {
                blocked[e] = true;
                continue;
            }
            let sp = format!("ensemble_scheduling.step[{i}]");
            let dep = step.model_name.as_str();
            match targets[e][i] {
                None => {
                    blocked[e] = true;
                    if reported.insert(dep) {
                        out[e].push(
                            Diagnostic::new(rule!("E0630"), String::new())
                                .triton(format!("ensemble {ename} contains models that are not available or ambiguous: {dep}"))
                                .at_opt(at(&models[e], &format!("{sp}.model_name")))
                                .help(format!(
                                    "add the model directory '{dep}/' to the repository, or fix the name (it must match a model directory)"
                                )),
                        );
                    }
                }
                Some(d) => {
                    if step.model_version != -1
                        && !loaded[d].is_empty()
                        && !loaded[d].contains(&step.model_version)
                    {
                        blocked[e] = true;
                        let have: Vec<String> = loaded[d].iter().map(i64::to_string).collect();
                        out[e].push(
                            Diagnostic::new(rule!("E0632"), String::new())
                                .triton(format!(
                                    "ensemble '{ename}' depends on '{dep}' whose required version {} is not loaded.",
                                    step.model_version
                                ))
                                .at_opt(at(&models[e], &format!("{sp}.model_version")))
                                .help(format!(
                                    "'{dep}' loads version(s) {}; use one of them, or -1 for the latest",
                                    have.join(", ")
                                )),
                        );
                    }
                }
            }
        }
        if let Some((last, i)) = cycles[e] {
            blocked[e] = true;
            in_cycle[e] = true;
            let lname = &models[last].entry.name;
            out[e].push(
                Diagnostic::new(rule!("E0631"), String::new())
                    .triton(format!(
                        "circular dependency between ensembles: {ename} -> ... -> {lname} -> {ename}"
                    ))
                    .at_opt(at(&models[e], &format!("ensemble_scheduling.step[{i}].model_name")))
                    .help("an ensemble cannot contain itself, directly or through other ensembles"),
            );
        }
    }
    for e in 0..n {
        if blocked[e] {
            fails[e] = true;
        }
    }

    // Composition part, inner ensembles first, so that an ensemble that
    // fails makes the ensembles around it fail too.
    let decoupled: Vec<bool> = models
        .iter()
        .map(|m| {
            model_cfg(m)
                .and_then(|c| c.model_transaction_policy.as_ref())
                .is_some_and(|p| p.decoupled)
        })
        .collect();
    /// Checks ensemble `e` once the ensembles its steps use are checked.
    fn finish(
        e: usize,
        ctx: &mut Walk,
        models: &[CheckedModel],
        targets: &[Vec<Option<usize>>],
        is_ens: &[bool],
        opts: &ServerOptions,
    ) {
        let m = &models[e];
        let ename = m.entry.name.as_str();
        let sched = model_cfg(m)
            .and_then(ensemble::ensemble_of)
            .expect("ensemble");
        // Steps whose model fails: a note each, and no composition check.
        let mut noted = HashSet::new();
        let mut dep_fails = false;
        for (i, t) in targets[e].iter().enumerate() {
            let Some(d) = *t else { continue };
            if d != e && ctx.fails[d] {
                dep_fails = true;
                let dep = &models[d].entry.name;
                if noted.insert(d) && !ctx.blocked[e] {
                    ctx.out[e].push(
                        Diagnostic::new(
                            rule!("N0702"),
                            format!("ensemble '{ename}' cannot load: the model '{dep}' it uses fails to load"),
                        )
                        .at_opt(at(m, &format!("ensemble_scheduling.step[{i}].model_name")))
                        .help(format!("fix the findings reported for '{dep}'")),
                    );
                }
            }
        }
        if dep_fails {
            ctx.fails[e] = true;
        }
        if ctx.fails[e] {
            return;
        }
        let steps: Vec<Option<StepModel>> = targets[e]
            .iter()
            .map(|t| {
                t.and_then(|d| {
                    model_cfg(&models[d]).map(|c| StepModel {
                        cfg: c,
                        decoupled: ctx.decoupled[d],
                        io_open: !is_ens[d] && StepModel::io_may_be_completed(c, opts.autocomplete),
                    })
                })
            })
            .collect();
        debug_assert_eq!(steps.len(), sched.step.len());
        let Some(file) = m.parsed.as_ref() else {
            return;
        };
        let cfg = model_cfg(m).expect("prepared");
        let comp = ensemble::check_composition(ename, cfg, file, &steps);
        if !comp.diagnostics.is_empty() {
            ctx.fails[e] = true;
        }
        ctx.decoupled[e] = comp.decoupled;
        ctx.out[e].extend(comp.diagnostics);
    }
    struct Walk {
        /// 0 not visited, 1 in progress, 2 done.
        state: Vec<u8>,
        fails: Vec<bool>,
        blocked: Vec<bool>,
        in_cycle: Vec<bool>,
        decoupled: Vec<bool>,
        out: Vec<Vec<Diagnostic>>,
    }
    let mut walk = Walk {
        state: vec![0; n],
        fails,
        blocked,
        in_cycle,
        decoupled,
        out,
    };
    // Depth first, inner ensembles first, with an explicit stack of
    // (ensemble, next step to look at): the depth of a chain of ensembles is
    // the repository's to choose.
    let mut stack: Vec<(usize, usize)> = Vec::new();
    for root in (0..n).filter(|&e| is_ens[e]) {
        if walk.in_cycle[root] || walk.state[root] != 0 {
            continue;
        }
        walk.state[root] = 1;
        stack.push((root, 0));
        while let Some(top) = stack.last_mut() {
            let e = top.0;
            if let Some(t) = targets[e].get(top.1) {
                top.1 += 1;
                if let Some(d) = *t {
                    if is_ens[d] && !walk.in_cycle[d] && walk.state[d] == 0 {
                        walk.state[d] = 1;
                        stack.push((d, 0));
                    }
                }
                continue;
            }
            stack.pop();
            walk.state[e] = 2;
            finish(e, &mut walk, models, &targets, &is_ens, opts);
        }
    }
    walk.out
}

/// The finding for a file of a model that `files` refused to read because
/// it resolves outside the directory being validated.
pub fn symlink_leaves_repository(path: &Path, outside: &crate::files::OutsideRoot) -> Diagnostic {
    Diagnostic::new(
        rule!("E0706"),
        format!(
            "{} is a symbolic link to {}, outside {}; it was not read",
            path.display(),
            outside.resolved.display(),
            outside.root.display()
        ),
    )
    .help(
        "copy the file into the repository, or pass --follow-symlinks if the repository is trusted",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_names_read_like_stoll() {
        assert_eq!(crate::text::stoll("12"), Some(12));
        assert_eq!(crate::text::stoll("3abc"), Some(3));
        assert_eq!(crate::text::stoll("-2"), Some(-2));
        assert_eq!(crate::text::stoll("v1"), None);
        assert_eq!(crate::text::stoll(""), None);
        assert_eq!(crate::text::stoll("99999999999999999999"), None);
    }

    #[test]
    fn runtime_escape_is_lexical_within_the_base() {
        let base = "/opt/tritonserver/backends/identity";
        assert!(runtime_escapes(
            base,
            "../dummy_runtime/libtriton_identity.so"
        ));
        assert!(runtime_escapes(base, "a/../../x.so"));
        assert!(!runtime_escapes(base, "../identity/libtriton_identity.so"));
        assert!(!runtime_escapes(base, "libtriton_identity.so"));
        assert!(!runtime_escapes(base, "/abs/libx.so"));
    }

    fn policy_cfg(src: &str) -> ModelConfig {
        let mut c = crate::config::ParsedConfig::parse(src.into())
            .config
            .unwrap();
        crate::config::normalize::normalize(&mut c);
        c
    }

    #[test]
    fn version_policies_select_like_triton() {
        let tmp = tempfile::tempdir().unwrap();
        for d in ["1", "2", "10", "007", "v3", "warmup", "configs"] {
            std::fs::create_dir(tmp.path().join(d)).unwrap();
        }
        let s = scan_versions(tmp.path(), &policy_cfg(""));
        assert_eq!(s.loaded, vec![10]);
        assert_eq!(
            s.existing.iter().copied().collect::<Vec<_>>(),
            vec![1, 2, 10]
        );
        let codes: Vec<&str> = s
            .ignored
            .iter()
            .map(|x| match x.reason {
                IgnoredReason::LeadingZeros => "W0701",
                IgnoredReason::NotANumber => "W0702",
            })
            .collect();
        assert_eq!(codes, vec!["W0701", "W0702"]);
        let s = scan_versions(
            tmp.path(),
            &policy_cfg("version_policy { latest { num_versions: 2 } }"),
        );
        assert_eq!(s.loaded, vec![10, 2]);
        let s = scan_versions(tmp.path(), &policy_cfg("version_policy { all { } }"));
        assert_eq!(s.loaded, vec![10, 2, 1]);
        let s = scan_versions(tmp.path(), &policy_cfg("version_policy { }"));
        assert_eq!(s.loaded, vec![10, 2, 1]);
        let s = scan_versions(
            tmp.path(),
            &policy_cfg("version_policy { specific { versions: [ 2, 5 ] } }"),
        );
        assert_eq!(s.loaded, vec![2]);
        assert_eq!(s.missing_specific, vec![(1, 5)]);
    }
}
