//! Conformance with Triton's own test data (the `qa/L0_model_config` suite,
//! docs/spec/validation.md §7 and §7.1; the tests read a copy under
//! `../shared/conformance/`): for every failure case that the
//! configs alone decide, validating the case as a model repository must
//! give a diagnostic whose `triton_message` holds the text of one of the
//! case's `expected*` files.
//!
//! Staging follows the upstream script: a case holding `config.pbtxt` is one
//! model in an otherwise empty repository, under the case's name; any
//! other case directory is a whole repository. The script creates an
//! (empty) version directory `1/` for the models that load that far; we do
//! the same for every model directory without a numeric sub-directory,
//! except in `common/no_version`, whose point is to have none.

use crate::common::shared_dir;
use std::path::{Path, PathBuf};
use tritonctl::validate::{validate_paths, ValidateOptions};

struct Case {
    /// `group/name`, for messages.
    id: String,
    dir: PathBuf,
    expected: Vec<String>,
}

/// An expected file's line as the literal text grep would match: the
/// upstream files escape `[`, `]` and `.` for grep, nothing else.
fn expected_text(raw: &str) -> String {
    let line = raw.lines().next().unwrap_or("").trim_end();
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(&n) = chars.peek() {
                if matches!(n, '[' | ']' | '.' | '\\' | '*' | '$' | '^') {
                    out.push(n);
                    chars.next();
                    continue;
                }
            }
        }
        out.push(c);
    }
    out
}

fn cases_in(group_dir: &Path, group: &str, only: Option<&[&str]>) -> Vec<Case> {
    let mut names: Vec<String> = std::fs::read_dir(group_dir)
        .unwrap_or_else(|e| panic!("{}: {e}", group_dir.display()))
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| only.is_none_or(|o| o.contains(&n.as_str())))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let dir = group_dir.join(&name);
            let mut expected: Vec<String> = std::fs::read_dir(&dir)
                .unwrap()
                .flatten()
                .filter(|e| {
                    e.file_name().to_string_lossy().starts_with("expected") && e.path().is_file()
                })
                .map(|e| expected_text(&std::fs::read_to_string(e.path()).unwrap()))
                .collect();
            expected.sort();
            Case {
                id: format!("{group}/{name}"),
                dir,
                expected,
            }
        })
        .collect()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

fn add_version_dir(model_dir: &Path) {
    let has_version = std::fs::read_dir(model_dir).unwrap().flatten().any(|e| {
        e.path().is_dir()
            && e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
    });
    if !has_version {
        std::fs::create_dir(model_dir.join("1")).unwrap();
    }
}

/// Copies the case into a fresh repository and returns (temp dir, repository).
fn stage(case: &Case) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("models");
    std::fs::create_dir(&repo).unwrap();
    let name = case.dir.file_name().unwrap();
    let model_dirs: Vec<PathBuf> = if case.dir.join("config.pbtxt").is_file() {
        let target = repo.join(name);
        copy_dir(&case.dir, &target);
        vec![target]
    } else {
        let mut v = Vec::new();
        for e in std::fs::read_dir(&case.dir).unwrap().flatten() {
            if e.path().is_dir() {
                let target = repo.join(e.file_name());
                copy_dir(&e.path(), &target);
                v.push(target);
            }
        }
        v
    };
    if name != "no_version" {
        for d in &model_dirs {
            add_version_dir(d);
        }
    }
    (tmp, repo)
}

/// Runs the cases; returns the failures with what was reported instead.
fn run(cases: &[Case], opts_for: impl Fn(&Case) -> ValidateOptions) -> Vec<String> {
    let mut failures = Vec::new();
    for case in cases {
        assert!(!case.expected.is_empty(), "{}: no expected file", case.id);
        let (_tmp, repo) = stage(case);
        let report =
            validate_paths(&[repo], &opts_for(case)).unwrap_or_else(|e| panic!("{}: {e}", case.id));
        let messages: Vec<String> = report
            .files
            .iter()
            .flat_map(|f| &f.diagnostics)
            .filter_map(|d| d.triton_message.clone())
            .collect();
        let hit = case.expected.iter().any(|want| {
            // Some files hold the status code prefix, which the diagnostics
            // leave out.
            let bare = want.strip_prefix("Invalid argument: ").unwrap_or(want);
            messages.iter().any(|m| m.contains(bare))
        });
        if !hit {
            failures.push(format!(
                "{}\n    expected one of: {:?}\n    reported: {:?}",
                case.id, case.expected, messages
            ));
        }
    }
    failures
}

fn report(label: &str, total: usize, failures: &[String]) {
    println!(
        "conformance {label}: {}/{total} cases pass",
        total - failures.len()
    );
    for f in failures {
        println!("  FAIL {f}");
    }
    assert!(
        failures.is_empty(),
        "{} of {total} {label} cases fail:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn l0() -> Option<PathBuf> {
    Some(shared_dir()?.join("conformance").join("L0_model_config"))
}

#[test]
fn conformance_autofill_noplatform_common_and_custom() {
    let Some(root) = l0() else { return };
    let mut cases = cases_in(&root.join("autofill_noplatform/common"), "common", None);
    cases.extend(cases_in(
        &root.join("autofill_noplatform/custom"),
        "custom",
        None,
    ));
    assert_eq!(cases.len(), 3, "common has 1 case, custom 2");
    let failures = run(&cases, |_| ValidateOptions::default());
    report(
        "autofill_noplatform/{common,custom}",
        cases.len(),
        &failures,
    );
}

#[test]
fn conformance_autofill_noplatform_ensemble() {
    let Some(root) = l0() else { return };
    let cases = cases_in(&root.join("autofill_noplatform/ensemble"), "ensemble", None);
    assert_eq!(cases.len(), 32, "the ensemble group has 32 cases");
    let failures = run(&cases, |_| ValidateOptions::default());
    report("autofill_noplatform/ensemble", cases.len(), &failures);
}

#[test]
fn conformance_special_cases() {
    let Some(root) = l0() else { return };
    let cases = cases_in(
        &root.join("special_cases"),
        "special_cases",
        Some(&["invalid_platform", "invalid_runtime", "runtime_escape"]),
    );
    assert_eq!(cases.len(), 3);
    // Upstream runs invalid_platform with auto-complete disabled.
    let failures = run(&cases, |c| {
        let mut o = ValidateOptions::default();
        o.lint.autocomplete = !c.id.ends_with("invalid_platform");
        o
    });
    report("special_cases", cases.len(), &failures);
}

#[test]
fn conformance_expected_files_are_unescaped_for_grep() {
    assert_eq!(
        expected_text("shape: \\[-1,16\\] x\\.y\n"),
        "shape: [-1,16] x.y"
    );
    assert_eq!(expected_text("plain 'text'"), "plain 'text'");
}

/// `model_metrics/invalid_config`: upstream appends each case's
/// `partial.pbtxt` to a decoupled python model's config; the load must fail
/// with the case's `expected` line.
#[test]
fn conformance_model_metrics_invalid_config() {
    let Some(root) = l0() else { return };
    let group = root.join("model_metrics/invalid_config");
    let mut names: Vec<_> = std::fs::read_dir(&group)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names.len(), 6, "model_metrics/invalid_config has 6 cases");
    let base = "name: \"metrics_model\"\nbackend: \"python\"\nmax_batch_size: 0\n\
                model_transaction_policy { decoupled: true }\n\
                input [ { name: \"IN\" data_type: TYPE_FP32 dims: [ 1 ] } ]\n\
                output [ { name: \"OUT\" data_type: TYPE_FP32 dims: [ 1 ] } ]\n";
    let mut failures = Vec::new();
    for name in &names {
        let dir = group.join(name);
        let partial = std::fs::read_to_string(dir.join("partial.pbtxt")).unwrap();
        let want = expected_text(&std::fs::read_to_string(dir.join("expected")).unwrap());
        let tmp = tempfile::tempdir().unwrap();
        let model = tmp.path().join("metrics_model");
        std::fs::create_dir_all(model.join("1")).unwrap();
        std::fs::write(model.join("1/model.py"), "").unwrap();
        std::fs::write(model.join("config.pbtxt"), format!("{base}{partial}")).unwrap();
        let report =
            validate_paths(&[tmp.path().to_path_buf()], &ValidateOptions::default()).unwrap();
        let hit = report.files.iter().flat_map(|f| &f.diagnostics).any(|d| {
            d.triton_message
                .as_deref()
                .is_some_and(|m| m.contains(&want))
        });
        if !hit {
            failures.push(format!("{name}: expected {want:?}"));
        }
    }
    report("model_metrics/invalid_config", names.len(), &failures);
}
