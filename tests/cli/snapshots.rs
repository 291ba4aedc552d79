//! Snapshots of what users read: the human output of representative
//! findings (and the same files as GitHub annotations and JSON), a rule's
//! `explain` page and `validate --help`. The inputs are in
//! testdata/cli/snapshots/; the expected outputs are the committed files in
//! tests/cli/snapshots/. A change shows as a failing test with a diff; after
//! checking it, accept it with `cargo insta review` or by running the test
//! with `INSTA_UPDATE=always`.
//!
//! The binary runs in the inputs' directory on relative paths, so nothing
//! in its output depends on the machine and nothing is normalised.

use crate::common::{crate_root, tritonctl};
use std::path::PathBuf;

fn inputs() -> PathBuf {
    crate_root().join("testdata").join("cli").join("snapshots")
}

/// Every input, in a fixed order: the single files, then the repository.
const ALL: &[&str] = &[
    "syntax_error.pbtxt",
    "did_you_mean.pbtxt",
    "triton_message.pbtxt",
    "secondary_label.pbtxt",
    "warning_and_note.pbtxt",
    "control_characters.pbtxt",
    "multi_line_span.pbtxt",
    "repository",
];

/// `tritonctl ARGS` in the inputs' directory with NO_COLOR: its exit code,
/// stdout and stderr as one text.
fn shown(args: &[&str]) -> String {
    let out = tritonctl()
        .current_dir(inputs())
        .env("NO_COLOR", "1")
        .args(args)
        .run();
    format!(
        "exit code: {}\n----- stdout -----\n{}----- stderr -----\n{}",
        out.code, out.stdout, out.stderr
    )
}

fn validate_human(input: &str) -> String {
    shown(&["validate", input])
}

#[test]
fn human_syntax_error() {
    insta::assert_snapshot!(validate_human("syntax_error.pbtxt"));
}

#[test]
fn human_schema_error_with_did_you_mean() {
    insta::assert_snapshot!(validate_human("did_you_mean.pbtxt"));
}

#[test]
fn human_semantic_error_with_tritons_message() {
    insta::assert_snapshot!(validate_human("triton_message.pbtxt"));
}

#[test]
fn human_secondary_label_and_help() {
    insta::assert_snapshot!(validate_human("secondary_label.pbtxt"));
}

#[test]
fn human_warning_and_note() {
    insta::assert_snapshot!(validate_human("warning_and_note.pbtxt"));
}

#[test]
fn human_control_characters() {
    insta::assert_snapshot!(validate_human("control_characters.pbtxt"));
}

#[test]
fn human_multi_line_span() {
    insta::assert_snapshot!(validate_human("multi_line_span.pbtxt"));
}

#[test]
fn human_repository_ensemble_names_a_missing_model() {
    insta::assert_snapshot!(validate_human("repository"));
}

#[test]
fn human_all_inputs() {
    let mut args = vec!["validate"];
    args.extend_from_slice(ALL);
    insta::assert_snapshot!(shown(&args));
}

#[test]
fn github_all_inputs() {
    let mut args = vec!["validate", "--format", "github"];
    args.extend_from_slice(ALL);
    insta::assert_snapshot!(shown(&args));
}

#[test]
fn json_all_inputs() {
    let mut args = vec!["validate", "--format", "json"];
    args.extend_from_slice(ALL);
    insta::assert_snapshot!(shown(&args));
}

#[test]
fn explain_e0101() {
    insta::assert_snapshot!(shown(&["explain", "E0101"]));
}

#[test]
fn validate_help() {
    insta::assert_snapshot!(shown(&["validate", "--help"]));
}
