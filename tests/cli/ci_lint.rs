//! CI adoption: the pre-commit hooks (`.pre-commit-hooks.yaml`) and the
//! composite GitHub Action (`action.yml`) run as pre-commit and GitHub
//! would run them, inline suppressions, and `tritonctl.toml`.

use crate::common::{crate_root, tritonctl, tritonctl_path};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// A valid model.
const GOOD: &str = r#"name: "good"
platform: "onnxruntime_onnx"
max_batch_size: 8
input [
  {
    name: "x"
    data_type: TYPE_FP32
    dims: [ 4 ]
  }
]
output [
  {
    name: "y"
    data_type: TYPE_FP32
    dims: [ 4 ]
  }
]
"#;

/// Three kinds of error: an unknown enum value, an unknown field and a
/// value of the wrong kind.
const BAD: &str = r#"name: "bad"
platform: "onnxruntime_onnx"
max_batch_size: 8
input [
  {
    name: "x"
    data_type: TYPE_FLOAT32
    dims: [ 4 ]
  }
]
output [
  {
    name: "y"
    data_type: TYPE_FP32
    dim: [ 4 ]
  }
]
dynamic_batching { max_queue_delay_microseconds: "100" }
"#;

/// The three errors of [`BAD`]: code and the text its span starts at.
const BAD_ERRORS: [(&str, &str); 3] = [
    ("E0103", "TYPE_FLOAT32"),
    ("E0101", "dim:"),
    ("E0102", "\"100\""),
];

/// 1-based line and column of the first occurrence of `needle`.
fn line_col(text: &str, needle: &str) -> (usize, usize) {
    let at = text.find(needle).expect("needle in text");
    let line = text[..at].matches('\n').count() + 1;
    let col = at - text[..at].rfind('\n').map_or(0, |i| i + 1) + 1;
    (line, col)
}

/// Writes `models/<name>/config.pbtxt` with a version directory.
fn add_model(root: &Path, name: &str, text: &str) {
    let dir = root.join("models").join(name);
    std::fs::create_dir_all(dir.join("1")).unwrap();
    std::fs::write(dir.join("1").join("model.onnx"), b"").unwrap();
    std::fs::write(dir.join("config.pbtxt"), text).unwrap();
}

/// A throwaway git repository holding the good and the bad model.
fn git_repo() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let st = Command::new("git")
        .args(["init", "-q", "."])
        .current_dir(tmp.path())
        .status()
        .expect("git runs");
    assert!(st.success());
    add_model(tmp.path(), "good", GOOD);
    add_model(tmp.path(), "bad", BAD);
    std::fs::write(tmp.path().join("README.md"), "models\n").unwrap();
    tmp
}

/// Every file under `root` (`.git` left out), relative, with `/`.
fn repo_files(root: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.file_name().is_some_and(|n| n == ".git") {
                continue;
            }
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap();
                let parts: Vec<String> = rel
                    .iter()
                    .map(|c| c.to_string_lossy().into_owned())
                    .collect();
                out.push(parts.join("/"));
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

/// One hook of `.pre-commit-hooks.yaml` (the keys this test needs).
#[derive(Debug, Default)]
struct Hook {
    id: String,
    entry: String,
    language: String,
    files: String,
    args: Vec<String>,
}

fn unquote(v: &str) -> String {
    let v = v.trim();
    if v.len() >= 2
        && ((v.starts_with('\'') && v.ends_with('\'')) || (v.starts_with('"') && v.ends_with('"')))
    {
        v[1..v.len() - 1].to_string()
    } else {
        v.to_string()
    }
}

/// A line-based reading of the hook list: `- id:` starts a hook, `key:
/// value` lines fill it.
fn hooks() -> Vec<Hook> {
    let text = std::fs::read_to_string(crate_root().join(".pre-commit-hooks.yaml")).unwrap();
    let mut out: Vec<Hook> = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('#') || t.is_empty() {
            continue;
        }
        let (t, new) = match t.strip_prefix("- ") {
            Some(rest) => (rest, true),
            None => (t, false),
        };
        if new {
            out.push(Hook::default());
        }
        let Some((key, value)) = t.split_once(':') else {
            continue;
        };
        let h = out.last_mut().expect("a hook starts with '- '");
        match key.trim() {
            "id" => h.id = unquote(value),
            "entry" => h.entry = unquote(value),
            "language" => h.language = unquote(value),
            "files" => h.files = unquote(value),
            "args" => {
                let v = value.trim().trim_start_matches('[').trim_end_matches(']');
                h.args = v
                    .split(',')
                    .map(unquote)
                    .filter(|s| !s.is_empty())
                    .collect();
            }
            _ => {}
        }
    }
    out
}

fn hook(id: &str) -> Hook {
    hooks()
        .into_iter()
        .find(|h| h.id == id)
        .unwrap_or_else(|| panic!("hook {id} in .pre-commit-hooks.yaml"))
}

/// A package index (a `--find-links` directory for pip) holding a wheel of
/// the freshly built binary, named and versioned as the release wheel of
/// this checkout (`tritonctl==CARGO_PKG_VERSION`, the version the release
/// hook and the Action install). Built once per test process; `None` when
/// python3 with pip is missing (outside CI: the caller says so and skips).
fn release_index() -> Option<&'static Path> {
    static INDEX: std::sync::OnceLock<Option<std::path::PathBuf>> = std::sync::OnceLock::new();
    INDEX
        .get_or_init(|| {
            let pip = Command::new("python3")
                .args(["-m", "pip", "--version"])
                .output()
                .is_ok_and(|o| o.status.success());
            if !pip {
                assert_ne!(
                    std::env::var("CI").as_deref(),
                    Ok("true"),
                    "python3 with pip is needed for the release hook and Action tests"
                );
                return None;
            }
            let dir = tritonctl_path()
                .parent()
                .unwrap()
                .join("ci-lint-release-index");
            let _ = std::fs::remove_dir_all(&dir);
            let st = Command::new("python3")
                .args(["-c", FAKE_WHEEL])
                .arg(tritonctl_path())
                .arg(&dir)
                .arg(env!("CARGO_PKG_VERSION"))
                .status()
                .expect("python3 runs");
            assert!(st.success(), "building the test wheel failed");
            Some(dir)
        })
        .as_deref()
}

/// A wheel as maturin's `bindings = "bin"` lays it out: the binary under
/// `<name>.data/scripts/` (pip installs it as `bin/tritonctl`), with a
/// RECORD of SHA-256 digests, which pip checks.
const FAKE_WHEEL: &str = r#"
import base64, hashlib, os, sys, zipfile
binary, out, version = sys.argv[1:4]
name = f"tritonctl-{version}"
with open(binary, "rb") as f:
    files = {f"{name}.data/scripts/tritonctl": f.read()}
files[f"{name}.dist-info/METADATA"] = f"Metadata-Version: 2.1\nName: tritonctl\nVersion: {version}\n".encode()
files[f"{name}.dist-info/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: false\nTag: py3-none-any\n"
record = f"{name}.dist-info/RECORD"
lines = []
for path, data in files.items():
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    lines.append(f"{path},sha256={digest},{len(data)}")
lines.append(f"{record},,")
files[record] = ("\n".join(lines) + "\n").encode()
os.makedirs(out, exist_ok=True)
with zipfile.ZipFile(os.path.join(out, f"{name}-py3-none-any.whl"), "w", zipfile.ZIP_STORED) as z:
    for path, data in files.items():
        info = zipfile.ZipInfo(path)
        info.external_attr = (0o100755 if path.endswith("/scripts/tritonctl") else 0o100644) << 16
        z.writestr(info, data)
"#;

/// pip's settings that make it install from `index` only.
fn local_index_env(index: &Path) -> [(&'static str, std::ffi::OsString); 4] {
    [
        ("PIP_NO_INDEX", "1".into()),
        ("PIP_FIND_LINKS", index.as_os_str().to_owned()),
        ("PIP_DISABLE_PIP_VERSION_CHECK", "1".into()),
        ("PIP_ROOT_USER_ACTION", "ignore".into()),
    ]
}

/// Runs `hook` as pre-commit does: its entry, its args, then the files of
/// the repository its `files` pattern selects. A `system` or `rust` hook's
/// program is the built binary; a `script` hook's is the script in this
/// repository, which installs the release wheel from [`release_index`]
/// into `cache` (pre-commit's home). `None` when the hook cannot run here.
fn run_hook(hook: &Hook, repo: &Path, only: Option<&[&str]>) -> Option<(i32, String, Vec<String>)> {
    let cache = tempfile::tempdir().unwrap();
    run_hook_in(hook, repo, only, cache.path())
}

fn run_hook_in(
    hook: &Hook,
    repo: &Path,
    only: Option<&[&str]>,
    cache: &Path,
) -> Option<(i32, String, Vec<String>)> {
    let re = regex::Regex::new(&hook.files).expect("files is a regex");
    let files: Vec<String> = repo_files(repo)
        .into_iter()
        .filter(|f| re.is_match(f))
        .filter(|f| only.is_none_or(|o| o.contains(&f.as_str())))
        .collect();
    let mut words = hook.entry.split_whitespace();
    let program = words.next().unwrap();
    if hook.language == "script" {
        let Some(index) = release_index() else {
            eprintln!("skipped: hook {} (python3 with pip is missing)", hook.id);
            return None;
        };
        let out = Command::new(crate_root().join(program))
            .args(words)
            .args(&hook.args)
            .args(&files)
            .current_dir(repo)
            .env("NO_COLOR", "1")
            .env("PRE_COMMIT_HOME", cache)
            .envs(local_index_env(index))
            .output()
            .expect("the hook's script runs");
        let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&out.stderr));
        return Some((out.status.code().unwrap_or(-1), text, files));
    }
    assert_eq!(program, "tritonctl", "{}", hook.entry);
    let out = tritonctl()
        .args(words)
        .args(&hook.args)
        .args(&files)
        .current_dir(repo)
        .env("NO_COLOR", "1")
        .run();
    let (code, text) = out.combined();
    Some((code, text, files))
}

#[test]
fn pre_commit_hooks_are_declared() {
    let hooks = hooks();
    for (id, lang, entry) in [
        (
            "tritonctl-validate",
            "script",
            "scripts/pre-commit-tritonctl validate",
        ),
        (
            "tritonctl-fmt",
            "script",
            "scripts/pre-commit-tritonctl fmt --check",
        ),
        ("tritonctl-validate-source", "rust", "tritonctl validate"),
        ("tritonctl-fmt-source", "rust", "tritonctl fmt --check"),
        ("tritonctl-validate-system", "system", "tritonctl validate"),
        ("tritonctl-fmt-system", "system", "tritonctl fmt --check"),
    ] {
        let h = hooks
            .iter()
            .find(|h| h.id == id)
            .unwrap_or_else(|| panic!("{id}"));
        assert_eq!(h.language, lang, "{id}");
        assert_eq!(h.entry, entry, "{id}");
        let re = regex::Regex::new(&h.files).unwrap();
        assert!(re.is_match("config.pbtxt") && re.is_match("repo/m/config.pbtxt"));
        assert!(!re.is_match("m/config.pbtxt.bak") && !re.is_match("m/myconfig.pbtxt"));
    }
}

#[test]
fn validate_hook_reports_each_file_with_positions() {
    let repo = git_repo();
    for id in [
        "tritonctl-validate",
        "tritonctl-validate-source",
        "tritonctl-validate-system",
    ] {
        let h = hook(id);
        let Some((code, out, files)) = run_hook(&h, repo.path(), None) else {
            continue;
        };
        assert_eq!(
            files,
            ["models/bad/config.pbtxt", "models/good/config.pbtxt"],
            "{id}"
        );
        assert_eq!(code, 1, "{id}: {out}");
        for (rule, at) in BAD_ERRORS {
            let (l, c) = line_col(BAD, at);
            let loc = format!("models/bad/config.pbtxt:{l}:{c}");
            assert!(out.contains(&loc), "{id}: {loc} missing in:\n{out}");
            assert!(
                out.contains(&format!("error[{rule}]")),
                "{id}: {rule}\n{out}"
            );
        }
        assert!(!out.contains("models/good/config.pbtxt:"), "{out}");
        // Both files are reported on (one clean).
        assert!(out.contains("in 1 of 2 files"), "{out}");

        let (code, out, _) =
            run_hook(&h, repo.path(), Some(&["models/good/config.pbtxt"])).unwrap();
        assert_eq!(code, 0, "{id}: {out}");
    }
}

/// The release hook installs the wheel of this checkout's version once
/// (a second run finds it in pre-commit's cache and needs no index), and
/// says which hooks to use instead when there is no such wheel.
#[test]
fn release_hook_installs_the_wheel_once_and_explains_a_missing_one() {
    let repo = git_repo();
    let h = hook("tritonctl-validate");
    let cache = tempfile::tempdir().unwrap();
    let only: &[&str] = &["models/good/config.pbtxt"];
    let Some((code, out, _)) = run_hook_in(&h, repo.path(), Some(only), cache.path()) else {
        return;
    };
    assert_eq!(code, 0, "{out}");
    let installed = cache
        .path()
        .join("tritonctl-release")
        .read_dir()
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect::<Vec<_>>();
    assert_eq!(installed.len(), 1, "{installed:?}");
    assert!(
        installed[0].starts_with(&format!("{}-", env!("CARGO_PKG_VERSION"))),
        "{installed:?}"
    );

    // Installed: the script runs it without asking pip (an index that does
    // not exist would make pip fail).
    let version = Command::new(crate_root().join("scripts/pre-commit-tritonctl"))
        .arg("--version")
        .env("PRE_COMMIT_HOME", cache.path())
        .env("PIP_NO_INDEX", "1")
        .env("PIP_FIND_LINKS", cache.path().join("no-such-index"))
        .output()
        .unwrap();
    assert!(version.status.success(), "{version:?}");
    assert_eq!(
        String::from_utf8_lossy(&version.stdout).trim(),
        format!("tritonctl {}", env!("CARGO_PKG_VERSION"))
    );

    // No wheel of that version: exit 2, and the way out.
    let empty = tempfile::tempdir().unwrap();
    let out = Command::new(crate_root().join("scripts/pre-commit-tritonctl"))
        .arg("--version")
        .env("PRE_COMMIT_HOME", empty.path())
        .envs(local_index_env(empty.path()))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "could not install the tritonctl=={} wheel",
            env!("CARGO_PKG_VERSION")
        )) && err.contains("tritonctl-validate-source"),
        "{err}"
    );
    // Nothing half-installed is left to be mistaken for an installation.
    let left: Vec<_> = empty
        .path()
        .join("tritonctl-release")
        .read_dir()
        .unwrap()
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn fmt_hook_fails_on_unformatted_files_only() {
    let repo = git_repo();
    // Formatted by tritonctl itself first, then left alone.
    let st = tritonctl()
        .args(["fmt", "models/good/config.pbtxt"])
        .current_dir(repo.path())
        .run();
    assert!(st.success());
    add_model(repo.path(), "messy", "name:\"messy\"   max_batch_size:4\n");
    for id in [
        "tritonctl-fmt",
        "tritonctl-fmt-source",
        "tritonctl-fmt-system",
    ] {
        let h = hook(id);
        let Some((code, out, files)) = run_hook(&h, repo.path(), None) else {
            continue;
        };
        assert_eq!(files.len(), 3);
        assert_eq!(code, 1, "{id}: {out}");
        assert!(out.contains("models/messy/config.pbtxt"), "{out}");
        assert!(!out.contains("models/good/config.pbtxt"), "{out}");
        let (code, out, _) =
            run_hook(&h, repo.path(), Some(&["models/good/config.pbtxt"])).unwrap();
        assert_eq!(code, 0, "{id}: {out}");
    }
}

// ------------------------------------------------------------------ action

/// One step of action.yml: a `run:` step with its `env:` mapping, or a
/// `uses:` step (which this harness cannot run; the action's only one is
/// the cache).
#[derive(Debug, Default)]
struct Step {
    name: String,
    id: String,
    uses: String,
    env: Vec<(String, String)>,
    run: String,
}

/// A line-based reading of action.yml: input defaults and the steps.
fn action() -> (BTreeMap<String, String>, Vec<Step>) {
    let text = std::fs::read_to_string(crate_root().join("action.yml")).unwrap();
    let indent = |l: &str| l.len() - l.trim_start().len();
    let mut defaults = BTreeMap::new();
    let mut steps: Vec<Step> = Vec::new();
    let mut section = "";
    let mut input = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if indent(line) == 0 {
            section = match t {
                "inputs:" => "inputs",
                "runs:" => "runs",
                _ => "",
            };
            continue;
        }
        match section {
            "inputs" if indent(line) == 2 => input = t.trim_end_matches(':').to_string(),
            "inputs" => {
                if let Some(v) = t.strip_prefix("default:") {
                    defaults.insert(input.clone(), unquote(v));
                }
            }
            "runs" => {
                if let Some(name) = t.strip_prefix("- name:") {
                    steps.push(Step {
                        name: name.trim().to_string(),
                        ..Step::default()
                    });
                } else if let Some(id) = t.strip_prefix("id:") {
                    steps.last_mut().unwrap().id = id.trim().to_string();
                } else if let Some(uses) = t.strip_prefix("uses:") {
                    steps.last_mut().unwrap().uses = uses.trim().to_string();
                } else if t == "env:" {
                    let base = indent(line);
                    while let Some(l) = lines.peek() {
                        if indent(l) <= base || l.trim().is_empty() {
                            break;
                        }
                        let (k, v) = l.trim().split_once(':').unwrap();
                        steps
                            .last_mut()
                            .unwrap()
                            .env
                            .push((k.to_string(), v.trim().to_string()));
                        lines.next();
                    }
                } else if t == "run: |" {
                    let base = indent(line);
                    let mut body = String::new();
                    while let Some(l) = lines.peek() {
                        if !l.trim().is_empty() && indent(l) <= base {
                            break;
                        }
                        body.push_str(l.get(base + 2..).unwrap_or(""));
                        body.push('\n');
                        lines.next();
                    }
                    steps.last_mut().unwrap().run = body;
                }
            }
            _ => {}
        }
    }
    (defaults, steps)
}

/// How [`run_action_with`] sets up the runner.
struct Runner<'a> {
    /// Put the built binary first on PATH (the install step then finds it).
    binary_on_path: bool,
    /// More environment for every step.
    env: Vec<(&'static str, std::ffi::OsString)>,
    /// Stop after the step with this id.
    until: Option<&'a str>,
}

/// Runs the action's steps in order as the runner would (`bash -eo
/// pipefail`), with `${{ inputs.x }}` in `env:` replaced by `inputs` or the
/// default, `${{ steps.ID.outputs.KEY }}` by what that step wrote to
/// `GITHUB_OUTPUT`, `${{ github.action_path }}` by this checkout, and the
/// directories steps append to `GITHUB_PATH` put first on PATH for the
/// steps after them. Returns the first failing step's exit code (0 when all
/// pass), the output, and every step's outputs.
fn run_action_with(
    dir: &Path,
    inputs: &[(&str, &str)],
    runner: &Runner,
) -> (i32, String, BTreeMap<String, BTreeMap<String, String>>) {
    let (defaults, steps) = action();
    assert!(steps.len() >= 2, "{steps:?}");
    // Without the built binary, PATH has no tritonctl at all, as on a fresh
    // runner.
    let mut path = std::env::join_paths(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
            .filter(|d| !d.join("tritonctl").exists()),
    )
    .unwrap()
    .to_string_lossy()
    .into_owned();
    if runner.binary_on_path {
        let bin_dir = tritonctl_path().parent().unwrap().to_path_buf();
        path = format!("{}:{path}", bin_dir.display());
    }
    let output_file = dir.join(".github_output");
    let path_file = dir.join(".github_path");
    let mut outputs: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut all = String::new();
    for step in &steps {
        assert!(!step.name.is_empty());
        if step.run.is_empty() {
            assert!(!step.uses.is_empty(), "{step:?}");
            continue;
        }
        std::fs::write(&output_file, "").unwrap();
        std::fs::write(&path_file, "").unwrap();
        let mut cmd = Command::new("bash");
        cmd.args(["--noprofile", "--norc", "-eo", "pipefail", "-c", &step.run])
            .current_dir(dir)
            .env_clear()
            .env("PATH", &path)
            .env("HOME", dir)
            .env("RUNNER_TOOL_CACHE", dir.join(".tool-cache"))
            .env("GITHUB_OUTPUT", &output_file)
            .env("GITHUB_PATH", &path_file)
            .envs(runner.env.iter().map(|(k, v)| (k, v)));
        for (k, v) in &step.env {
            let expr = v
                .trim()
                .strip_prefix("${{ ")
                .and_then(|r| r.strip_suffix(" }}"))
                .unwrap_or_else(|| panic!("{k}: {v}"));
            let value = if let Some(name) = expr.strip_prefix("inputs.") {
                inputs
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| v.to_string())
                    .or_else(|| defaults.get(name).cloned())
                    .unwrap_or_else(|| panic!("input {name} has no default"))
            } else if let Some(rest) = expr.strip_prefix("steps.") {
                let (id, key) = rest.split_once(".outputs.").unwrap();
                outputs
                    .get(id)
                    .and_then(|o| o.get(key))
                    .cloned()
                    .unwrap_or_default()
            } else if expr == "github.action_path" {
                crate_root().display().to_string()
            } else {
                // Other `github.*` context: only the source build needs it.
                String::new()
            };
            cmd.env(k, value);
        }
        let out = cmd.output().unwrap();
        all.push_str(&String::from_utf8_lossy(&out.stdout));
        all.push_str(&String::from_utf8_lossy(&out.stderr));
        let written = std::fs::read_to_string(&output_file).unwrap();
        let step_outputs = outputs.entry(step.id.clone()).or_default();
        for line in written.lines() {
            let (k, v) = line.split_once('=').expect("KEY=VALUE in GITHUB_OUTPUT");
            step_outputs.insert(k.to_string(), v.to_string());
        }
        for added in std::fs::read_to_string(&path_file).unwrap().lines() {
            path = format!("{added}:{path}");
        }
        let code = out.status.code().unwrap_or(-1);
        if code != 0 || runner.until == Some(step.id.as_str()) {
            return (code, all, outputs);
        }
    }
    (0, all, outputs)
}

/// [`run_action_with`] with the built binary on PATH (nothing installed).
fn run_action(dir: &Path, inputs: &[(&str, &str)]) -> (i32, String) {
    let runner = Runner {
        binary_on_path: true,
        env: Vec::new(),
        until: None,
    };
    let (code, out, _) = run_action_with(dir, inputs, &runner);
    (code, out)
}

fn sarif_validator() -> jsonschema::Validator {
    let path = crate_root().join("testdata/sarif/sarif-schema-2.1.0.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::validator_for(&schema).expect("the SARIF schema compiles")
}

#[test]
fn action_writes_annotations_and_valid_sarif() {
    let repo = git_repo();
    let (code, out) = run_action(repo.path(), &[("paths", "models")]);
    assert_eq!(code, 1, "{out}");
    for (rule, at) in BAD_ERRORS {
        let (l, c) = line_col(BAD, at);
        let prefix = format!("::error file=models/bad/config.pbtxt,line={l},col={c},");
        let line = out
            .lines()
            .find(|x| x.starts_with(&prefix))
            .unwrap_or_else(|| panic!("{prefix} missing in:\n{out}"));
        assert!(line.contains(&format!("title={rule}::")), "{line}");
    }
    assert!(!out.contains("file=models/good/"), "{out}");

    let sarif_path = repo.path().join("tritonctl.sarif");
    let sarif: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&sarif_path).expect("SARIF written"))
            .expect("SARIF is JSON");
    let v = sarif_validator();
    let errors: Vec<String> = v.iter_errors(&sarif).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "SARIF fails the schema: {errors:#?}");
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    let mut ids: Vec<&str> = results
        .iter()
        .map(|r| r["ruleId"].as_str().unwrap())
        .collect();
    ids.sort();
    assert_eq!(ids, ["E0101", "E0102", "E0103"]);

    // The schema is not a rubber stamp.
    let mut broken = sarif.clone();
    broken["runs"][0]["results"][0]["level"] = "fatal".into();
    assert!(!v.is_valid(&broken));
}

#[test]
fn action_inputs_reach_validate() {
    let repo = git_repo();
    // Extra args: the three errors allowed, the step passes; SARIF elsewhere.
    let (code, out) = run_action(
        repo.path(),
        &[
            ("paths", "models/good models/bad"),
            ("args", "--allow E0101 --allow E0102 --allow E0103"),
            ("sarif-file", "out.sarif"),
        ],
    );
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("::error"), "{out}");
    assert!(repo.path().join("out.sarif").is_file());
    assert!(!repo.path().join("tritonctl.sarif").exists());

    // strict: a warning fails the step.
    let warn = GOOD.replace("name: \"good\"", "name: \"warn\"").replace(
        "max_batch_size: 8",
        "max_batch_size: 8\ndynamic_batching { preferred_batch_size: [ 4, 2 ] }",
    );
    add_model(repo.path(), "warn", &warn);
    let (code, out) = run_action(repo.path(), &[("paths", "models/warn")]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("::warning file=models/warn/config.pbtxt"),
        "{out}"
    );
    let (code, out) = run_action(repo.path(), &[("paths", "models/warn"), ("strict", "true")]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("::error file=models/warn/config.pbtxt"),
        "{out}"
    );

    // A path that does not exist: exit 2 (from the SARIF step).
    let (code, _) = run_action(repo.path(), &[("paths", "nope")]);
    assert_eq!(code, 2);
}

/// How the action installs tritonctl: the one on PATH, the release wheel
/// of the pinned version (a version number, with or without `v`; by
/// default this checkout's Cargo.toml version, i.e. the tag `uses:` names),
/// or a source build (`install: source`, or a `version` that is a commit
/// or branch, which is what `version` meant before releases had wheels).
#[test]
fn action_resolves_how_to_install() {
    let dir = tempfile::tempdir().unwrap();
    let resolve = |inputs: &[(&str, &str)], binary_on_path: bool| {
        let runner = Runner {
            binary_on_path,
            env: Vec::new(),
            until: Some("resolve"),
        };
        let (code, out, outputs) = run_action_with(dir.path(), inputs, &runner);
        assert_eq!(code, 0, "{inputs:?}: {out}");
        outputs.get("resolve").cloned().unwrap_or_default()
    };
    let ours = env!("CARGO_PKG_VERSION");
    for (inputs, on_path, mode, version) in [
        (&[][..], true, "path", None),
        (&[("install", "never")][..], false, "path", None),
        (&[][..], false, "release", Some(ours)),
        (&[("install", "always")][..], true, "release", Some(ours)),
        // `auto` with tritonctl on PATH uses it, whatever the version.
        (&[("version", "v1.2.3")][..], true, "path", None),
        (
            &[("version", "v1.2.3"), ("install", "always")][..],
            true,
            "release",
            Some("1.2.3"),
        ),
        (
            &[("version", "1.2.3-rc.1")][..],
            false,
            "release",
            Some("1.2.3-rc.1"),
        ),
        (&[("version", "0a1b2c3")][..], false, "source", None),
        (&[("version", "main")][..], false, "source", None),
        (&[("install", "source")][..], true, "source", None),
        (
            &[("install", "source"), ("version", "v1.2.3")][..],
            false,
            "source",
            None,
        ),
    ] {
        let got = resolve(inputs, on_path);
        assert_eq!(
            got.get("mode").map(String::as_str),
            Some(mode),
            "{inputs:?}: {got:?}"
        );
        if let Some(v) = version {
            assert_eq!(
                got.get("version").map(String::as_str),
                Some(v),
                "{inputs:?}"
            );
            let d = got.get("dir").unwrap();
            assert!(
                d.starts_with(
                    &dir.path()
                        .join(".tool-cache")
                        .join("tritonctl")
                        .join(v)
                        .display()
                        .to_string()
                ),
                "{d}"
            );
        }
    }
    let runner = Runner {
        binary_on_path: true,
        env: Vec::new(),
        until: Some("resolve"),
    };
    let (code, out, _) = run_action_with(dir.path(), &[("install", "sometimes")], &runner);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("install must be auto, always, never or source, not 'sometimes'"),
        "{out}"
    );
}

/// A fresh runner: the action installs the release wheel of its own version
/// (from a local index standing in for PyPI), validates with it, and a
/// second run takes it from the tool cache without pip. A version that has
/// no release fails the step and says how to build instead.
#[test]
fn action_installs_the_release_and_reuses_it() {
    let Some(index) = release_index() else {
        eprintln!("skipped: action install (python3 with pip is missing)");
        return;
    };
    let repo = git_repo();
    let with_index = Runner {
        binary_on_path: false,
        env: local_index_env(index).into(),
        until: None,
    };
    let (code, out, outputs) =
        run_action_with(repo.path(), &[("paths", "models/good")], &with_index);
    assert_eq!(code, 0, "{out}");
    let installed = Path::new(&outputs["resolve"]["dir"])
        .join("bin")
        .join("tritonctl");
    assert!(installed.is_file(), "{out}");
    assert!(
        out.contains(&format!("tritonctl {}", env!("CARGO_PKG_VERSION"))),
        "{out}"
    );

    let no_index = Runner {
        binary_on_path: false,
        env: vec![
            ("PIP_NO_INDEX", "1".into()),
            ("PIP_FIND_LINKS", repo.path().join("no-such-index").into()),
        ],
        until: None,
    };
    let (code, out, _) = run_action_with(repo.path(), &[("paths", "models/bad")], &no_index);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("::error file=models/bad/config.pbtxt"),
        "{out}"
    );

    let (code, out, _) = run_action_with(
        repo.path(),
        &[("paths", "models/good"), ("version", "v9.9.9")],
        &with_index,
    );
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("could not install tritonctl==9.9.9 from PyPI")
            && out.contains("install: source"),
        "{out}"
    );
}

// ----------------------------------------------------------- suppressions

#[test]
fn end_of_line_and_previous_line_suppressions() {
    let repo = git_repo();
    let text = BAD
        .replace(
            "TYPE_FLOAT32\n",
            "TYPE_FLOAT32 # tritonctl: ignore=unknown-enum-value\n",
        )
        .replace(
            "output [\n",
            "# tritonctl: ignore=E0101 (the whole output field)\noutput [\n",
        );
    add_model(repo.path(), "bad", &text);
    let (code, out) = tritonctl()
        .current_dir(repo.path())
        .arg("validate")
        .args(["models/bad"])
        .run()
        .combined();
    assert_eq!(code, 1, "{out}");
    assert!(!out.contains("E0103"), "end-of-line form: {out}");
    assert!(!out.contains("E0101"), "previous-line form: {out}");
    // Outside both: still reported.
    let (l, c) = line_col(&text, "\"100\"");
    assert!(
        out.contains("error[E0102]") && out.contains(&format!(":{l}:{c}")),
        "{out}"
    );

    // A suppression only covers its own line / field.
    let text = BAD.replace(
        "name: \"bad\"\n",
        "name: \"bad\" # tritonctl: ignore=E0101,E0102,E0103\n",
    );
    add_model(repo.path(), "bad", &text);
    let (code, out) = tritonctl()
        .current_dir(repo.path())
        .arg("validate")
        .args(["models/bad"])
        .run()
        .combined();
    assert_eq!(code, 1);
    for (rule, _) in BAD_ERRORS {
        assert!(out.contains(&format!("error[{rule}]")), "{out}");
    }
}

#[test]
fn unknown_code_in_suppression_is_reported_at_its_span() {
    let repo = git_repo();
    let text = BAD.replace(
        "    dim: [ 4 ]\n",
        "    # tritonctl: ignore=E0101, no-such-rule\n    dim: [ 4 ]\n",
    );
    add_model(repo.path(), "bad", &text);
    let (_, out) = tritonctl()
        .current_dir(repo.path())
        .arg("validate")
        .args(["--format", "json", "models/bad"])
        .run()
        .combined();
    let doc: serde_json::Value = serde_json::from_str(&out).expect(&out);
    let diags = doc["files"][0]["diagnostics"].as_array().unwrap();
    let w = diags
        .iter()
        .find(|d| d["code"] == "W1001")
        .unwrap_or_else(|| panic!("W1001 missing: {out}"));
    let (l, c) = line_col(&text, "no-such-rule");
    assert_eq!(w["severity"], "warning");
    assert_eq!(
        (w["line"].as_u64(), w["column"].as_u64()),
        (Some(l as u64), Some(c as u64))
    );
    assert_eq!(
        w["end_column"].as_u64(),
        Some((c + "no-such-rule".len()) as u64)
    );
    assert!(diags.iter().all(|d| d["code"] != "E0101"), "{out}");
}

// ------------------------------------------------------------ tritonctl.toml

/// `exclude` patterns are globs with alternation and classes:
/// `{a,b}` excludes `a` and `b`, `[c]` excludes `c`, and nothing else is
/// excluded (`d`, `cc`).
#[test]
fn exclude_globs_with_alternation_and_classes() {
    let tmp = tempfile::tempdir().unwrap();
    for name in ["a", "b", "c", "cc"] {
        add_model(
            tmp.path(),
            name,
            &BAD.replace("\"bad\"", &format!("\"{name}\"")),
        );
    }
    add_model(tmp.path(), "d", &GOOD.replace("\"good\"", "\"d\""));
    std::fs::write(
        tmp.path().join("tritonctl.toml"),
        "exclude = [\"{a,b}\", \"[c]\"]\n",
    )
    .unwrap();
    let (_, out) = tritonctl()
        .current_dir(tmp.path())
        .arg("validate")
        .args(["--format", "json", "models"])
        .run()
        .combined();
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let mut paths: Vec<&str> = doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    paths.sort_unstable();
    assert_eq!(
        paths,
        ["models/cc/config.pbtxt", "models/d/config.pbtxt"],
        "{out}"
    );
}

#[test]
fn config_file_overrides_severities_and_excludes() {
    let repo = git_repo();
    // Only the unknown field is left in the bad model.
    let one = BAD
        .replace("TYPE_FLOAT32", "TYPE_FP32")
        .replace("\"100\"", "100");
    add_model(repo.path(), "bad", &one);
    let (code, out) = tritonctl()
        .current_dir(repo.path())
        .arg("validate")
        .args(["models"])
        .run()
        .combined();
    assert_eq!(code, 1, "{out}");

    let toml = repo.path().join("tritonctl.toml");
    std::fs::write(&toml, "[rules]\nunknown-field = \"warning\"\n").unwrap();
    let (code, out) = tritonctl()
        .current_dir(repo.path())
        .arg("validate")
        .args(["models"])
        .run()
        .combined();
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("warning[E0101]"), "{out}");
    // From a sub-directory, the file is found by walking up.
    let (code, _) = tritonctl()
        .current_dir(repo.path().join("models"))
        .arg("validate")
        .args(["bad/config.pbtxt"])
        .run()
        .combined();
    assert_eq!(code, 0);
    // Flags win over the file.
    let (code, _) = tritonctl()
        .current_dir(repo.path())
        .arg("validate")
        .args(["--strict", "models"])
        .run()
        .combined();
    assert_eq!(code, 1);
    let (code, _) = tritonctl()
        .current_dir(repo.path())
        .arg("validate")
        .args(["--no-config", "models"])
        .run()
        .combined();
    assert_eq!(code, 1);

    std::fs::write(&toml, "[rules]\nE0101 = \"off\"\n").unwrap();
    let (code, out) = tritonctl()
        .current_dir(repo.path())
        .arg("validate")
        .args(["models"])
        .run()
        .combined();
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("E0101"), "{out}");

    std::fs::write(&toml, "exclude = [\"models/ba?\"]\n").unwrap();
    let (code, out) = tritonctl()
        .current_dir(repo.path())
        .arg("validate")
        .args(["--format", "json", "models"])
        .run()
        .combined();
    assert_eq!(code, 0, "{out}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let paths: Vec<&str> = doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["models/good/config.pbtxt"]);
    let (code, _) = tritonctl()
        .current_dir(repo.path())
        .arg("validate")
        .args(["--no-config", "models"])
        .run()
        .combined();
    assert_eq!(code, 1);
    // A model named on the command line is validated all the same.
    let (code, _) = tritonctl()
        .current_dir(repo.path())
        .arg("validate")
        .args(["models/bad"])
        .run()
        .combined();
    assert_eq!(code, 1);
    // A pattern without '/' matches a directory name anywhere below.
    std::fs::write(&toml, "exclude = [\"ba*\"]\n").unwrap();
    let (code, out) = tritonctl()
        .current_dir(repo.path())
        .arg("validate")
        .args(["models"])
        .run()
        .combined();
    assert_eq!(code, 0, "{out}");
    let (code, _) = tritonctl()
        .current_dir(repo.path().join("models"))
        .arg("validate")
        .args(["."])
        .run()
        .combined();
    assert_eq!(code, 0);

    // --config names another file.
    std::fs::remove_file(&toml).unwrap();
    let other = repo.path().join("ci.toml");
    std::fs::write(&other, "[rules]\nE0101 = \"note\"\n").unwrap();
    let (code, out) = tritonctl()
        .current_dir(repo.path())
        .arg("validate")
        .args(["--config", "ci.toml", "models"])
        .run()
        .combined();
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("note[E0101]"), "{out}");
}

#[test]
fn config_file_search_stops_at_the_git_root() {
    let outer = tempfile::tempdir().unwrap();
    std::fs::write(
        outer.path().join("tritonctl.toml"),
        "[rules]\nE0101 = \"off\"\n",
    )
    .unwrap();
    let repo = outer.path().join("repo");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    add_model(
        &repo,
        "bad",
        &BAD.replace("TYPE_FLOAT32", "TYPE_FP32")
            .replace("\"100\"", "100"),
    );
    let (code, out) = tritonctl()
        .current_dir(&repo)
        .arg("validate")
        .args(["models"])
        .run()
        .combined();
    assert_eq!(code, 1, "the file above the git root must not apply: {out}");
    // Without .git, it is found.
    std::fs::remove_dir(repo.join(".git")).unwrap();
    let (code, out) = tritonctl()
        .current_dir(&repo)
        .arg("validate")
        .args(["models"])
        .run()
        .combined();
    assert_eq!(code, 0, "{out}");
}

#[test]
fn bad_config_file_is_a_usage_error_with_position() {
    let repo = git_repo();
    let toml = repo.path().join("tritonctl.toml");
    for (text, needle) in [
        ("[rules]\nE0101 = \"loud\"\n", "\"loud\""),
        (
            "exclude = [\"a\"]\n[rules]\nno-such-rule = \"off\"\n",
            "no-such-rule",
        ),
        ("\nplatfrom = \"onnxruntime_onnx\"\n", "platfrom"),
        // Issue 28: invalid globs were accepted silently.
        ("exclude = [\"ok\", \"[z-a]\"]\n", "\"[z-a]\""),
        ("exclude = [\"{a,b\"]\n", "\"{a,b\""),
    ] {
        std::fs::write(&toml, text).unwrap();
        let (code, out) = tritonctl()
            .current_dir(repo.path())
            .arg("validate")
            .args(["models"])
            .run()
            .combined();
        assert_eq!(code, 2, "{text}: {out}");
        if needle.contains('[') || needle.contains('{') {
            let pattern = needle.trim_matches('"');
            assert!(
                out.contains(&format!(
                    "exclude pattern '{pattern}' is not a valid glob: "
                )),
                "{text}: {out}"
            );
        }
        let (l, c) = line_col(text, needle);
        assert!(
            out.contains(&format!("tritonctl.toml:{l}:{c}")),
            "{text}: expected {l}:{c} in {out}"
        );
    }
    // Broken TOML syntax: a position on the right line.
    std::fs::write(&toml, "[rules]\nE0101 = = \"off\"\n").unwrap();
    let (code, out) = tritonctl()
        .current_dir(repo.path())
        .arg("validate")
        .args(["models"])
        .run()
        .combined();
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("tritonctl.toml:2:"), "{out}");
    // --no-config does not read it.
    let (code, _) = tritonctl()
        .current_dir(repo.path())
        .arg("validate")
        .args(["--no-config", "models/good"])
        .run()
        .combined();
    assert_eq!(code, 0);
}

#[test]
fn default_platform_from_config_file() {
    let repo = git_repo();
    // No platform or backend, and no model file that reveals one.
    let text = GOOD
        .replace("name: \"good\"", "name: \"noplat\"")
        .replace("platform: \"onnxruntime_onnx\"\n", "");
    let dir = repo.path().join("models").join("noplat");
    std::fs::create_dir_all(dir.join("1")).unwrap();
    std::fs::write(dir.join("config.pbtxt"), &text).unwrap();
    let (code, out) = tritonctl()
        .current_dir(repo.path())
        .arg("validate")
        .args(["models/noplat"])
        .run()
        .combined();
    assert_eq!(code, 1, "{out}");
    std::fs::write(
        repo.path().join("tritonctl.toml"),
        "default-platform = \"onnxruntime_onnx\"\n",
    )
    .unwrap();
    let (code, out) = tritonctl()
        .current_dir(repo.path())
        .arg("validate")
        .args(["models/noplat"])
        .run()
        .combined();
    assert_eq!(code, 0, "{out}");
}

#[test]
fn unused_suppressions_are_reported_only_when_enabled() {
    let repo = git_repo();
    let text = GOOD.replace(
        "max_batch_size: 8\n",
        "max_batch_size: 8 # tritonctl: ignore=E0101\n",
    );
    add_model(repo.path(), "good", &text);
    let (code, out) = tritonctl()
        .current_dir(repo.path())
        .arg("validate")
        .args(["models/good"])
        .run()
        .combined();
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("W1002"), "off by default: {out}");
    std::fs::write(
        repo.path().join("tritonctl.toml"),
        "[rules]\nunused-suppression = \"error\"\n",
    )
    .unwrap();
    let (code, out) = tritonctl()
        .current_dir(repo.path())
        .arg("validate")
        .args(["models/good"])
        .run()
        .combined();
    assert_eq!(code, 1, "{out}");
    let (l, c) = line_col(&text, "E0101");
    assert!(out.contains("error[W1002]"), "{out}");
    assert!(
        out.contains(&format!("models/good/config.pbtxt:{l}:{c}")),
        "{out}"
    );
}

// --------------------------------------------------------- container image

/// `.dockerignore` lets only named paths into the image's build context:
/// every file the build reads must be among them, or `docker build` fails
/// far from here. The build reads Cargo's targets, the files `build.rs`
/// names (every string literal that is a path in this checkout) and the
/// files the sources include at compile time.
#[test]
fn dockerignore_keeps_what_the_build_reads() {
    let root = crate_root();
    let text = std::fs::read_to_string(root.join(".dockerignore")).unwrap();
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    assert_eq!(lines.first(), Some(&"*"), "an allowlist: '*' first");
    let allowed: Vec<&str> = lines[1..]
        .iter()
        .map(|l| {
            l.strip_prefix('!')
                .unwrap_or_else(|| panic!("{l}"))
                .trim_end_matches('/')
        })
        .collect();
    let is_allowed = |p: &str| {
        allowed
            .iter()
            .any(|a| p == *a || p.starts_with(&format!("{a}/")))
    };

    let mut read: Vec<String> = vec!["Cargo.toml".into(), "Cargo.lock".into()];
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let path_re = regex::Regex::new(r#"(?m)^(?:path|build)\s*=\s*"([^"]+)""#).unwrap();
    read.extend(path_re.captures_iter(&manifest).map(|c| c[1].to_string()));
    let bench_re = regex::Regex::new(r#"(?m)^\[\[bench\]\]\s*\nname\s*=\s*"([^"]+)""#).unwrap();
    read.extend(
        bench_re
            .captures_iter(&manifest)
            .map(|c| format!("benches/{}.rs", &c[1])),
    );
    let literal = regex::Regex::new(r#""([^"\s]+)""#).unwrap();
    let build = std::fs::read_to_string(root.join("build.rs")).unwrap();
    for c in literal.captures_iter(&build) {
        let p = c[1].trim_start_matches("cargo:rerun-if-changed=");
        // "." (the crate root, e.g. an include directory) says nothing.
        if !p.is_empty() && p != "." && root.join(p).exists() {
            read.push(p.to_string());
        }
    }
    let include = regex::Regex::new(r#"(?:include_str!|include_bytes!)\(\s*"([^"]+)""#).unwrap();
    let grammar = regex::Regex::new(r#"#\[grammar\s*=\s*"([^"]+)""#).unwrap();
    fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                rust_files(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut sources = Vec::new();
    rust_files(&root.join("src"), &mut sources);
    let relative = |p: &Path| {
        p.strip_prefix(&root)
            .unwrap()
            .iter()
            .map(|c| c.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/")
    };
    for file in &sources {
        let text = std::fs::read_to_string(file).unwrap();
        for c in include.captures_iter(&text) {
            let target = file.parent().unwrap().join(&c[1]);
            let target = target.canonicalize().unwrap_or(target);
            read.push(relative(&target));
        }
        for c in grammar.captures_iter(&text) {
            // pest_derive looks in src/ first, then in the crate root.
            let target = [root.join("src").join(&c[1]), root.join(&c[1])]
                .into_iter()
                .find(|p| p.exists())
                .unwrap_or_else(|| panic!("grammar {} not found", &c[1]));
            read.push(relative(&target));
        }
    }
    // The reading above finds what it should: the grammar, a proto file.
    assert!(read.iter().any(|p| p.ends_with(".pest")), "{read:?}");
    assert!(read.iter().any(|p| p.starts_with("proto/")), "{read:?}");
    let missing: Vec<&String> = read.iter().filter(|p| !is_allowed(p)).collect();
    assert!(
        missing.is_empty(),
        "the build reads these, which .dockerignore leaves out: {missing:?}"
    );
}

/// The image builds with the toolchain Cargo.toml names: the Dockerfile's
/// default `RUST_VERSION` is Cargo.toml's `rust-version` (the release
/// workflow also passes it as a build argument).
#[test]
fn dockerfile_rust_version_is_cargo_tomls() {
    let root = crate_root();
    let cargo = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let want = cargo
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = \""))
        .and_then(|r| r.strip_suffix('"'))
        .expect("Cargo.toml has a rust-version");
    let docker = std::fs::read_to_string(root.join("Dockerfile")).unwrap();
    let got = docker
        .lines()
        .find_map(|l| l.strip_prefix("ARG RUST_VERSION="))
        .expect("the Dockerfile has ARG RUST_VERSION=...");
    assert_eq!(got, want);
    let workflow = std::fs::read_to_string(root.join(".github/workflows/release.yml")).unwrap();
    assert_eq!(
        workflow
            .matches("build-args: RUST_VERSION=${{ needs.meta.outputs.rust }}")
            .count(),
        2,
        "both image builds take Cargo.toml's rust-version"
    );
}
