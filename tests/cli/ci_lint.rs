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

/// Runs `hook` as pre-commit does: its entry, its args, then the files of
/// the repository its `files` pattern selects. The entry's program is the
/// built binary.
fn run_hook(hook: &Hook, repo: &Path, only: Option<&[&str]>) -> (i32, String, Vec<String>) {
    let re = regex::Regex::new(&hook.files).expect("files is a regex");
    let files: Vec<String> = repo_files(repo)
        .into_iter()
        .filter(|f| re.is_match(f))
        .filter(|f| only.is_none_or(|o| o.contains(&f.as_str())))
        .collect();
    let mut words = hook.entry.split_whitespace();
    assert_eq!(words.next(), Some("tritonctl"), "{}", hook.entry);
    let out = tritonctl()
        .args(words)
        .args(&hook.args)
        .args(&files)
        .current_dir(repo)
        .env("NO_COLOR", "1")
        .run();
    let (code, text) = out.combined();
    (code, text, files)
}

#[test]
fn pre_commit_hooks_are_declared() {
    let hooks = hooks();
    for (id, lang, entry) in [
        ("tritonctl-validate", "rust", "tritonctl validate"),
        ("tritonctl-fmt", "rust", "tritonctl fmt --check"),
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
    for id in ["tritonctl-validate", "tritonctl-validate-system"] {
        let h = hook(id);
        let (code, out, files) = run_hook(&h, repo.path(), None);
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

        let (code, out, _) = run_hook(&h, repo.path(), Some(&["models/good/config.pbtxt"]));
        assert_eq!(code, 0, "{id}: {out}");
    }
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
    for id in ["tritonctl-fmt", "tritonctl-fmt-system"] {
        let h = hook(id);
        let (code, out, files) = run_hook(&h, repo.path(), None);
        assert_eq!(files.len(), 3);
        assert_eq!(code, 1, "{id}: {out}");
        assert!(out.contains("models/messy/config.pbtxt"), "{out}");
        assert!(!out.contains("models/good/config.pbtxt"), "{out}");
        let (code, out, _) = run_hook(&h, repo.path(), Some(&["models/good/config.pbtxt"]));
        assert_eq!(code, 0, "{id}: {out}");
    }
}

// ------------------------------------------------------------------ action

/// One `run:` step of action.yml with its `env:` mapping.
#[derive(Debug, Default)]
struct Step {
    name: String,
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

/// Runs the action's steps in order as the runner would (`bash -eo
/// pipefail`), with `${{ inputs.x }}` in `env:` replaced by `inputs` or the
/// default, and the built binary first on PATH (so the install step finds
/// it and installs nothing). Returns the first failing step's exit code
/// (0 when all pass) and the output.
fn run_action(dir: &Path, inputs: &[(&str, &str)]) -> (i32, String) {
    let (defaults, steps) = action();
    assert!(steps.len() >= 2, "{steps:?}");
    let bin_dir = tritonctl_path().parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output_file = dir.join(".github_output");
    let mut all = String::new();
    for step in &steps {
        let mut cmd = Command::new("bash");
        cmd.args(["--noprofile", "--norc", "-eo", "pipefail", "-c", &step.run])
            .current_dir(dir)
            .env_clear()
            .env("PATH", &path)
            .env("HOME", dir)
            .env("GITHUB_OUTPUT", &output_file);
        for (k, v) in &step.env {
            let v = v.trim();
            let value = match v
                .strip_prefix("${{ inputs.")
                .and_then(|r| r.strip_suffix(" }}"))
            {
                Some(name) => inputs
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| v.to_string())
                    .or_else(|| defaults.get(name).cloned())
                    .unwrap_or_else(|| panic!("input {name} has no default")),
                // `github.*` context: not needed when nothing is installed.
                None => String::new(),
            };
            cmd.env(k, value);
        }
        let out = cmd.output().unwrap();
        all.push_str(&String::from_utf8_lossy(&out.stdout));
        all.push_str(&String::from_utf8_lossy(&out.stderr));
        let code = out.status.code().unwrap_or(-1);
        if code != 0 {
            return (code, all);
        }
        assert!(!step.name.is_empty());
    }
    (0, all)
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
