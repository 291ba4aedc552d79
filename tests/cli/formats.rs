//! `tritonctl validate` output formats, exit codes and CLI plumbing,
//! driven through the real binary. Inputs are syntax/schema errors from
//! testdata/cli/ so that these tests do not depend on the semantic rules.

use crate::common::{crate_root, tritonctl};
use serde_json::Value;
use std::io::Read;
use std::path::PathBuf;
use std::process::Stdio;

fn data_dir() -> PathBuf {
    crate_root().join("testdata").join("cli")
}

fn json_of(args: &[&str]) -> (i32, Value) {
    let mut a = vec!["validate", "--format", "json"];
    a.extend_from_slice(args);
    let (code, out, err) = tritonctl().current_dir(data_dir()).args(&a).run().parts();
    let v = serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{out}\nstderr:\n{err}"));
    (code, v)
}

fn diagnostics(doc: &Value) -> Vec<&Value> {
    doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| f["diagnostics"].as_array().unwrap())
        .collect()
}

fn codes(doc: &Value) -> Vec<String> {
    diagnostics(doc)
        .iter()
        .map(|d| d["code"].as_str().unwrap().to_string())
        .collect()
}

/// A repository holding model `m` with an ONNX file but no config.pbtxt:
/// Triton auto-completes it, tritonctl notes that (N0701, file-level).
fn model_without_config() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("m/1")).unwrap();
    std::fs::write(tmp.path().join("m/1/model.onnx"), b"").unwrap();
    tmp
}

fn schema_validator() -> jsonschema::Validator {
    let text = std::fs::read_to_string(crate_root().join("schemas/validate.schema.json")).unwrap();
    let schema: Value = serde_json::from_str(&text).expect("schema is JSON");
    jsonschema::meta::validate(&schema).expect("schema is a valid JSON Schema");
    jsonschema::validator_for(&schema).expect("schema compiles")
}

fn assert_matches_schema(v: &jsonschema::Validator, doc: &Value) {
    let errors: Vec<String> = v
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(
        errors.is_empty(),
        "output does not match the schema:\n{}\n{doc:#}",
        errors.join("\n")
    );
}

// ---------------------------------------------------------------- json

#[test]
fn json_output_matches_the_committed_schema() {
    let v = schema_validator();
    let inputs: &[&[&str]] = &[
        &["clean.pbtxt"],
        &["unknown_field.pbtxt"],
        &["two_errors.pbtxt", "syntax_error.pbtxt", "multiline.pbtxt"],
        &["repo"],
        &["--strict", "repo", "clean.pbtxt"],
    ];
    for args in inputs {
        let (_, doc) = json_of(args);
        assert_matches_schema(&v, &doc);
    }
    // A model directory without config.pbtxt: a file-level finding.
    let tmp = model_without_config();
    let (_, doc) = json_of(&[tmp.path().to_str().unwrap()]);
    assert_matches_schema(&v, &doc);
    let d = diagnostics(&doc);
    assert!(
        d.iter()
            .any(|d| d["code"] == "N0701" && d["line"].is_null()),
        "{doc:#}"
    );
}

#[test]
fn json_schema_rejects_wrong_shapes() {
    let v = schema_validator();
    let (_, good) = json_of(&["unknown_field.pbtxt"]);
    assert!(v.is_valid(&good));
    let mut zero_line = good.clone();
    zero_line["files"][0]["diagnostics"][0]["line"] = 0.into();
    assert!(!v.is_valid(&zero_line), "line 0 must be refused");
    let mut no_category = good.clone();
    no_category["files"][0]["diagnostics"][0]
        .as_object_mut()
        .unwrap()
        .remove("category");
    assert!(
        !v.is_valid(&no_category),
        "a diagnostic without category must be refused"
    );
    let mut bad_severity = good.clone();
    bad_severity["files"][0]["diagnostics"][0]["severity"] = "fatal".into();
    assert!(!v.is_valid(&bad_severity));
    let mut no_summary = good;
    no_summary.as_object_mut().unwrap().remove("summary");
    assert!(!v.is_valid(&no_summary));
}

#[test]
fn json_reports_one_based_positions_and_rule_details() {
    let (code, doc) = json_of(&["unknown_field.pbtxt"]);
    assert_eq!(code, 1);
    let f = &doc["files"][0];
    assert_eq!(f["path"], "unknown_field.pbtxt");
    let d = &f["diagnostics"][0];
    assert_eq!(d["code"], "E0101");
    assert_eq!(d["rule"], "unknown-field");
    assert_eq!(d["severity"], "error");
    assert_eq!(d["category"], "schema");
    // `max_batch_sise` is on line 2, columns 1..15 (14 characters).
    assert_eq!(
        (d["line"].as_u64(), d["column"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(
        (d["end_line"].as_u64(), d["end_column"].as_u64()),
        (Some(2), Some(15))
    );
    assert!(d["help"].as_str().unwrap().contains("max_batch_size"));
    assert_eq!(doc["summary"]["files"], 1);
    assert_eq!(doc["summary"]["errors"], 1);
    assert_eq!(doc["summary"]["warnings"], 0);
}

#[test]
fn json_summary_counts_every_file() {
    let (code, doc) = json_of(&["clean.pbtxt", "two_errors.pbtxt", "syntax_error.pbtxt"]);
    assert_eq!(code, 1);
    assert_eq!(doc["summary"]["files"], 3);
    let c = codes(&doc);
    assert!(
        c.contains(&"E0103".into()) && c.contains(&"E0101".into()) && c.contains(&"E0001".into()),
        "{c:?}"
    );
    let errors = diagnostics(&doc)
        .iter()
        .filter(|d| d["severity"] == "error")
        .count();
    assert_eq!(doc["summary"]["errors"].as_u64(), Some(errors as u64));
    let paths: Vec<&str> = doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        ["clean.pbtxt", "two_errors.pbtxt", "syntax_error.pbtxt"]
    );
}

#[test]
fn format_comes_from_the_environment() {
    let (_, out, _) = tritonctl()
        .current_dir(data_dir())
        .args(["validate", "unknown_field.pbtxt"])
        .env("TRITONCTL_FORMAT", "json")
        .run()
        .parts();
    let doc: Value = serde_json::from_str(&out).expect("TRITONCTL_FORMAT=json gives JSON");
    assert_eq!(doc["summary"]["errors"], 1);
    // The flag wins over the environment.
    let (_, out, _) = tritonctl()
        .current_dir(data_dir())
        .args(["validate", "--format", "github", "unknown_field.pbtxt"])
        .env("TRITONCTL_FORMAT", "json")
        .run()
        .parts();
    assert!(out.starts_with("::error "), "{out}");
}

// ---------------------------------------------------------------- human

#[test]
fn human_output_shows_code_location_source_and_caret() {
    let (code, out, _) = tritonctl()
        .current_dir(data_dir())
        .args(["validate", "--color", "never", "unknown_field.pbtxt"])
        .run()
        .parts();
    assert_eq!(code, 1);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("error[E0101]: "), "{out}");
    assert!(lines[0].contains("max_batch_sise"), "{out}");
    assert_eq!(
        lines[1].trim_start(),
        "--> unknown_field.pbtxt:2:1",
        "{out}"
    );
    let src = lines
        .iter()
        .position(|l| l.ends_with("| max_batch_sise: 8"))
        .expect("source line shown");
    assert!(lines[src].trim_start().starts_with("2 |"), "{out}");
    let carets = lines[src + 1];
    let bar = carets.find('|').unwrap();
    assert_eq!(
        &carets[bar..],
        "| ^^^^^^^^^^^^^^",
        "14 carets under `max_batch_sise`:\n{out}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.trim_start().starts_with("= help: ") && l.contains("max_batch_size")),
        "{out}"
    );
    assert_eq!(lines.last(), Some(&"Found 1 error in 1 file."));
}

#[test]
fn human_caret_columns_follow_the_span() {
    let (_, out, _) = tritonctl()
        .current_dir(data_dir())
        .args(["validate", "two_errors.pbtxt"])
        .run()
        .parts();
    // `TYPE_FP33` starts at column 16 of line 7.
    assert!(out.contains("--> two_errors.pbtxt:7:16"), "{out}");
    let lines: Vec<&str> = out.lines().collect();
    let i = lines
        .iter()
        .position(|l| l.ends_with("data_type: TYPE_FP33"))
        .unwrap();
    let source_col = lines[i].find("TYPE_FP33").unwrap();
    let caret_col = lines[i + 1].find('^').unwrap();
    assert_eq!(source_col, caret_col, "{out}");
    assert_eq!(lines[i + 1].matches('^').count(), "TYPE_FP33".len());
    assert_eq!(lines.last(), Some(&"Found 2 errors in 1 file."));
}

#[test]
fn human_multi_line_span_is_shown_on_its_first_line() {
    let (code, out, _) = tritonctl()
        .current_dir(data_dir())
        .args(["validate", "multiline.pbtxt"])
        .run()
        .parts();
    assert_eq!(code, 1);
    assert!(out.contains("--> multiline.pbtxt:2:17"), "{out}");
    assert!(
        out.lines().any(|l| l.ends_with("| max_batch_size: {")),
        "{out}"
    );
    assert!(
        !out.contains("a: 1"),
        "only the first line of the span is shown:\n{out}"
    );
}

#[test]
fn human_summary_for_clean_input_and_quiet() {
    let (code, out, _) = tritonctl()
        .current_dir(data_dir())
        .args(["validate", "clean.pbtxt"])
        .run()
        .parts();
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("error["), "{out}");
    assert_eq!(
        out.lines().last(),
        Some("All checks passed (1 file)."),
        "{out}"
    );

    let (code, out, _) = tritonctl()
        .current_dir(data_dir())
        .args(["validate", "-q", "clean.pbtxt"])
        .run()
        .parts();
    assert_eq!(code, 0);
    assert!(
        !out.contains("All checks passed"),
        "-q drops the summary: {out}"
    );

    let (code, out, _) = tritonctl()
        .current_dir(data_dir())
        .args(["validate", "--quiet", "unknown_field.pbtxt"])
        .run()
        .parts();
    assert_eq!(code, 1);
    assert!(out.starts_with("error[E0101]"), "{out}");
    assert!(!out.contains("Found "), "{out}");
}

#[test]
fn verbose_lists_checked_files_on_stderr() {
    let (_, out, err) = tritonctl()
        .current_dir(data_dir())
        .args(["validate", "-v", "clean.pbtxt", "unknown_field.pbtxt"])
        .run()
        .parts();
    assert!(
        err.contains("clean.pbtxt") && err.contains("unknown_field.pbtxt"),
        "{err}"
    );
    assert!(out.contains("Found 1 error in 1 of 2 files."), "{out}");
}

#[test]
fn colour_follows_flag_and_no_color() {
    const ESC: &str = "\x1b[";
    let (_, out, _) = tritonctl()
        .current_dir(data_dir())
        .args(["validate", "--color", "always", "unknown_field.pbtxt"])
        .run()
        .parts();
    assert!(out.contains(ESC), "--color always colours");
    let (_, out, _) = tritonctl()
        .current_dir(data_dir())
        .args(["validate", "--color", "never", "unknown_field.pbtxt"])
        .run()
        .parts();
    assert!(!out.contains(ESC));
    // auto: stdout is a pipe here, so no colour.
    let (_, out, _) = tritonctl()
        .current_dir(data_dir())
        .args(["validate", "unknown_field.pbtxt"])
        .run()
        .parts();
    assert!(!out.contains(ESC));
    let (_, out, _) = tritonctl()
        .current_dir(data_dir())
        .args(["validate", "--color", "auto", "unknown_field.pbtxt"])
        .env("NO_COLOR", "1")
        .env("CLICOLOR_FORCE", "1")
        .run()
        .parts();
    assert!(!out.contains(ESC), "NO_COLOR turns auto off");
    let (_, out, _) = tritonctl()
        .current_dir(data_dir())
        .args(["validate", "--color", "auto", "unknown_field.pbtxt"])
        .env("CLICOLOR_FORCE", "1")
        .run()
        .parts();
    assert!(out.contains(ESC), "CLICOLOR_FORCE turns auto on");
    let (_, out, _) = tritonctl()
        .current_dir(data_dir())
        .args(["validate", "--color", "always", "unknown_field.pbtxt"])
        .env("NO_COLOR", "1")
        .run()
        .parts();
    assert!(
        out.contains(ESC),
        "an explicit --color always wins over NO_COLOR"
    );
    // Machine formats are never coloured.
    let (_, out, _) = tritonctl()
        .current_dir(data_dir())
        .args([
            "validate",
            "--color",
            "always",
            "--format",
            "json",
            "unknown_field.pbtxt",
        ])
        .run()
        .parts();
    assert!(!out.contains(ESC));
    serde_json::from_str::<Value>(&out).unwrap();
}

// ---------------------------------------------------------------- github

#[test]
fn github_annotations() {
    let (code, out, _) = tritonctl()
        .current_dir(data_dir())
        .args([
            "validate",
            "--format",
            "github",
            "unknown_field.pbtxt",
            "multiline.pbtxt",
        ])
        .run()
        .parts();
    assert_eq!(code, 1);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "one line per finding, nothing else:\n{out}");
    assert!(
        lines[0].starts_with(
            "::error file=unknown_field.pbtxt,line=2,col=1,endLine=2,endColumn=15,title=E0101::"
        ),
        "{out}"
    );
    assert!(lines[0].contains("max_batch_sise"));
    // A span over lines 2..4: no columns.
    assert!(
        lines[1].starts_with("::error file=multiline.pbtxt,line=2,endLine=4,title=E0102::"),
        "{out}"
    );
}

#[test]
fn github_escapes_properties() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(
        data_dir().join("unknown_field.pbtxt"),
        tmp.path().join("a,b:c.pbtxt"),
    )
    .unwrap();
    let out = tritonctl()
        .current_dir(tmp.path())
        .args(["validate", "--format", "github", "a,b:c.pbtxt"])
        .run();
    let out = out.stdout;
    assert!(
        out.starts_with("::error file=a%2Cb%3Ac.pbtxt,line=2,"),
        "{out}"
    );
}

#[test]
fn github_file_level_findings_have_no_line() {
    let tmp = model_without_config();
    let out = tritonctl()
        .current_dir(tmp.path())
        .args(["validate", "--format", "github", "--deny", "N0701", "."])
        .run();
    let out = out.stdout;
    let line = out
        .lines()
        .find(|l| l.contains("title=N0701::"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        line.starts_with("::error file=m/config.pbtxt,title=N0701::"),
        "{line}"
    );
}

// ---------------------------------------------------------------- sarif

#[test]
fn sarif_lists_every_rule_once_and_points_at_regions() {
    let (code, out, _) = tritonctl()
        .current_dir(data_dir())
        .args([
            "validate",
            "--format",
            "sarif",
            "unknown_field.pbtxt",
            "repo",
        ])
        .run()
        .parts();
    assert_eq!(code, 1);
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["version"], "2.1.0");
    assert!(doc["$schema"].as_str().unwrap().contains("sarif"));
    let run = &doc["runs"][0];
    let driver = &run["tool"]["driver"];
    assert_eq!(driver["name"], "tritonctl");
    let rules = driver["rules"].as_array().unwrap();
    let ids: Vec<&str> = rules.iter().map(|r| r["id"].as_str().unwrap()).collect();
    let mut unique = ids.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "a rule is listed twice");
    // Every rule `explain --all` knows is listed.
    let (_, listing, _) = run_list();
    for code in listing {
        assert!(
            ids.contains(&code.as_str()),
            "{code} missing from SARIF rules"
        );
    }
    for r in rules {
        for key in ["shortDescription", "fullDescription", "help"] {
            assert!(
                r[key]["text"].as_str().is_some_and(|t| !t.is_empty()),
                "{key} of {}",
                r["id"]
            );
        }
        assert!(["error", "warning", "note"]
            .contains(&r["defaultConfiguration"]["level"].as_str().unwrap()));
    }
    let results = run["results"].as_array().unwrap();
    assert!(!results.is_empty());
    for res in results {
        let i = res["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(
            rules[i]["id"], res["ruleId"],
            "ruleIndex points at the rule"
        );
        assert!(["error", "warning", "note"].contains(&res["level"].as_str().unwrap()));
        assert!(!res["message"]["text"].as_str().unwrap().is_empty());
        let uri = res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            .as_str()
            .unwrap();
        assert!(
            !uri.contains('\\') && !uri.starts_with('/') && !uri.contains(':'),
            "relative URI: {uri}"
        );
    }
    let first = results.iter().find(|r| r["ruleId"] == "E0101").unwrap();
    let loc = &first["locations"][0]["physicalLocation"];
    assert_eq!(loc["artifactLocation"]["uri"], "unknown_field.pbtxt");
    let region = &loc["region"];
    assert_eq!(
        (
            &region["startLine"],
            &region["startColumn"],
            &region["endLine"],
            &region["endColumn"]
        ),
        (
            &Value::from(2),
            &Value::from(1),
            &Value::from(2),
            &Value::from(15)
        )
    );
    let repo_uris: Vec<&str> = results
        .iter()
        .map(|r| {
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                .as_str()
                .unwrap()
        })
        .filter(|u| u.starts_with("repo/"))
        .collect();
    assert!(
        repo_uris.contains(&"repo/bad_field/config.pbtxt"),
        "{repo_uris:?}"
    );
}

/// Codes from `tritonctl explain --all`.
fn run_list() -> (i32, Vec<String>, String) {
    let (code, out, err) = tritonctl()
        .current_dir(data_dir())
        .args(["explain", "--all"])
        .run()
        .parts();
    let codes = out
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect();
    (code, codes, err)
}

// ---------------------------------------------------------------- junit

#[test]
fn junit_has_one_testcase_per_file_and_failures_for_errors() {
    let (code, out, _) = tritonctl()
        .current_dir(data_dir())
        .args([
            "validate",
            "--format",
            "junit",
            "clean.pbtxt",
            "unknown_field.pbtxt",
            "two_errors.pbtxt",
        ])
        .run()
        .parts();
    assert_eq!(code, 1);
    let mut reader = quick_xml::Reader::from_str(&out);
    let mut cases = Vec::new();
    let mut failures = 0;
    let mut current: Option<String> = None;
    loop {
        use quick_xml::events::Event;
        match reader
            .read_event()
            .unwrap_or_else(|e| panic!("JUnit XML is not well-formed: {e}\n{out}"))
        {
            Event::Start(e) | Event::Empty(e) if e.name().as_ref() == b"testcase" => {
                let name = e
                    .try_get_attribute("name")
                    .unwrap()
                    .expect("testcase has a name");
                let name = name.unescape_value().unwrap().into_owned();
                cases.push(name.clone());
                current = Some(name);
            }
            Event::Start(e) if e.name().as_ref() == b"failure" => {
                failures += 1;
                assert_ne!(
                    current.as_deref(),
                    Some("clean.pbtxt"),
                    "a clean file does not fail"
                );
            }
            Event::Eof => break,
            _ => {}
        }
    }
    assert_eq!(
        cases,
        ["clean.pbtxt", "unknown_field.pbtxt", "two_errors.pbtxt"]
    );
    assert_eq!(failures, 2);
    assert!(out.contains(r#"tests="3" failures="2""#), "{out}");
}

// ---------------------------------------------------------------- exit codes

#[test]
fn exit_codes() {
    assert_eq!(
        tritonctl()
            .current_dir(data_dir())
            .args(["validate", "clean.pbtxt"])
            .run()
            .parts()
            .0,
        0
    );
    assert_eq!(
        tritonctl()
            .current_dir(data_dir())
            .args(["validate", "unknown_field.pbtxt"])
            .run()
            .parts()
            .0,
        1
    );
    assert_eq!(
        tritonctl()
            .current_dir(data_dir())
            .args(["validate", "syntax_error.pbtxt"])
            .run()
            .parts()
            .0,
        1
    );
    assert_eq!(
        tritonctl()
            .current_dir(data_dir())
            .args(["validate", "--exit-zero", "unknown_field.pbtxt"])
            .run()
            .parts()
            .0,
        0
    );
    let (code, _, err) = tritonctl()
        .current_dir(data_dir())
        .args(["validate", "--format", "xml", "clean.pbtxt"])
        .run()
        .parts();
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = tritonctl()
        .current_dir(data_dir())
        .args(["validate", "--no-such-flag"])
        .run()
        .parts();
    assert_eq!(code, 2, "{err}");
    let (code, _, _) = tritonctl()
        .current_dir(data_dir())
        .args(["no-such-command"])
        .run()
        .parts();
    assert_eq!(code, 2);
    let (code, out, _) = tritonctl()
        .current_dir(data_dir())
        .args(["--help"])
        .run()
        .parts();
    assert_eq!(code, 0);
    assert!(out.contains("validate"));
    let (code, out, _) = tritonctl()
        .current_dir(data_dir())
        .args(["--version"])
        .run()
        .parts();
    assert_eq!(code, 0);
    assert!(out.starts_with("tritonctl "));
}

#[test]
fn unreadable_path_is_exit_2_naming_the_file() {
    let (code, out, err) = tritonctl()
        .current_dir(data_dir())
        .args(["validate", "no/such/config.pbtxt"])
        .run()
        .parts();
    assert_eq!(code, 2);
    assert!(err.contains("no/such/config.pbtxt"), "{err}");
    assert!(!out.contains("error["), "{out}");
    // The readable inputs are still reported; the exit code stays 2.
    let (code, doc) = json_of(&["unknown_field.pbtxt", "missing.pbtxt"]);
    assert_eq!(code, 2);
    assert_eq!(doc["summary"]["errors"], 1);
}

#[test]
fn stdin_is_read_for_dash() {
    let src = std::fs::read(data_dir().join("unknown_field.pbtxt")).unwrap();
    let out = tritonctl()
        .args(["validate", "--format", "json", "-"])
        .stdin(src)
        .run();
    assert_eq!(out.code, 1);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["files"][0]["path"], "<stdin>");
    assert_eq!(codes(&doc), ["E0101"]);
    assert_eq!(doc["files"][0]["diagnostics"][0]["line"], 2);

    let clean = std::fs::read(data_dir().join("clean.pbtxt")).unwrap();
    let out = tritonctl().args(["validate", "-"]).stdin(clean).run();
    assert_eq!(out.code, 0, "{}", out.stdout);

    let out = tritonctl().args(["validate", "-", "-"]).stdin("").run();
    assert_eq!(out.code, 2, "stdin twice is a usage error");
}

#[test]
fn allow_and_deny_change_findings() {
    // --allow drops an error (by code, by name, any case).
    for allow in ["E0101", "unknown-field", "e0101"] {
        let (code, doc) = json_of(&["--allow", allow, "unknown_field.pbtxt"]);
        assert_eq!(code, 0, "--allow {allow}");
        assert!(codes(&doc).is_empty(), "--allow {allow}: {doc:#}");
    }
    // Only the allowed rule goes.
    let (code, doc) = json_of(&["--allow", "E0101", "two_errors.pbtxt"]);
    assert_eq!(code, 1);
    assert_eq!(codes(&doc), ["E0103"]);

    // --deny makes a note an error.
    let tmp = model_without_config();
    let dir = tmp.path().to_str().unwrap();
    let (_, doc) = json_of(&[dir]);
    let note = diagnostics(&doc)
        .into_iter()
        .find(|d| d["code"] == "N0701")
        .cloned()
        .expect("N0701");
    assert_eq!(note["severity"], "note");
    let (code, doc) = json_of(&["--deny", "missing-config", dir]);
    assert_eq!(code, 1);
    let denied = diagnostics(&doc)
        .into_iter()
        .find(|d| d["code"] == "N0701")
        .cloned()
        .unwrap();
    assert_eq!(denied["severity"], "error");
    assert!(doc["summary"]["errors"].as_u64().unwrap() >= 1);
}

#[test]
fn unknown_rule_codes_are_usage_errors() {
    for flag in ["--allow", "--deny"] {
        let (code, out, err) = tritonctl()
            .current_dir(data_dir())
            .args(["validate", flag, "E9999", "clean.pbtxt"])
            .run()
            .parts();
        assert_eq!(code, 2, "{flag}");
        assert!(err.contains("E9999"), "{err}");
        assert!(out.is_empty(), "nothing validated: {out}");
    }
    let (_, _, err) = tritonctl()
        .current_dir(data_dir())
        .args(["validate", "--allow", "unknown-feild", "clean.pbtxt"])
        .run()
        .parts();
    assert!(
        err.contains("unknown-field"),
        "suggests the near name: {err}"
    );
}

#[test]
fn strict_turns_warnings_into_errors() {
    // Whatever warnings the rules raise on these inputs, --strict makes
    // them errors and the exit code follows.
    let inputs = ["clean.pbtxt", "unknown_field.pbtxt", "repo"];
    let (_, plain) = json_of(&inputs);
    let (code, strict) = json_of(&[&["--strict"][..], &inputs[..]].concat());
    let s = |d: &Value, k: &str| d["summary"][k].as_u64().unwrap();
    assert_eq!(s(&strict, "warnings"), 0);
    assert_eq!(
        s(&strict, "errors"),
        s(&plain, "errors") + s(&plain, "warnings")
    );
    assert_eq!(code, 1);
    assert!(diagnostics(&strict)
        .iter()
        .all(|d| d["severity"] != "warning"));
}

#[test]
fn broken_pipe_exits_quietly() {
    // Enough findings that the output far exceeds a pipe buffer.
    let tmp = tempfile::tempdir().unwrap();
    let src = std::fs::read(data_dir().join("two_errors.pbtxt")).unwrap();
    let mut paths = Vec::new();
    for i in 0..300 {
        let p = tmp.path().join(format!("c{i}.pbtxt"));
        std::fs::write(&p, &src).unwrap();
        paths.push(p);
    }
    for format in ["human", "json", "sarif", "github", "junit"] {
        let mut child = tritonctl()
            .command()
            .arg("validate")
            .args(["--format", format])
            .args(&paths)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let mut one = [0u8; 1];
        stdout.read_exact(&mut one).unwrap(); // `| head -c1`
        drop(stdout);
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{format}: {err}");
        assert!(err.is_empty(), "{format}: nothing on stderr, got: {err}");
    }
}

// ---------------------------------------------------------------- explain

#[test]
fn explain_prints_rule_docs() {
    for arg in ["E0101", "unknown-field", "e0101"] {
        let (code, out, _) = tritonctl()
            .current_dir(data_dir())
            .args(["explain", arg])
            .run()
            .parts();
        assert_eq!(code, 0, "{arg}");
        assert!(out.starts_with("E0101 (unknown-field)"), "{out}");
        assert!(out.contains("schema") && out.contains("error"), "{out}");
        assert!(
            out.contains("max_batch_sise"),
            "the docs' example is shown: {out}"
        );
        assert!(
            out.contains("protobuf text_format.cc"),
            "Triton source: {out}"
        );
    }
}

#[test]
fn explain_unknown_code_suggests() {
    let (code, out, err) = tritonctl()
        .current_dir(data_dir())
        .args(["explain", "unknown-feild"])
        .run()
        .parts();
    assert_eq!(code, 2);
    assert!(out.is_empty());
    assert!(
        err.contains("unknown-feild") && err.contains("unknown-field"),
        "{err}"
    );
    let (code, _, _) = tritonctl()
        .current_dir(data_dir())
        .args(["explain"])
        .run()
        .parts();
    assert_eq!(code, 2, "a code or --all is required");
}

#[test]
fn explain_all_lists_codes_in_order() {
    let (code, codes, _) = run_list();
    assert_eq!(code, 0);
    for c in ["E0001", "E0101", "E0109", "N0701"] {
        assert!(codes.contains(&c.to_string()), "{c} listed");
    }
    let mut sorted = codes.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted, codes, "sorted and unique");
}

/// Every optional part of the JSON shape (labels, help, Triton's text, a
/// file-level finding, a note) against the schema, from a report built by
/// hand so that it does not depend on which rules exist.
#[test]
fn json_schema_covers_labels_notes_and_file_level_findings() {
    use tritonctl::diagnostics::render::{render, Format, RenderOptions};
    use tritonctl::diagnostics::Diagnostic;
    use tritonctl::diagnostics::{FileReport, Report};
    use tritonctl::text::Span;
    let src = "name: \"m\"\nmax_batch_size: 4\n";
    let report = Report {
        files: vec![
            FileReport {
                path: "m/config.pbtxt".into(),
                model: Some("m".into()),
                src: src.into(),
                diagnostics: vec![
                    Diagnostic::new(tritonctl::rule!("E0101"), "first")
                        .at(Span::new(10, 24))
                        .label(Span::new(0, 4), "name here")
                        .help("a fix")
                        .triton("Triton's text"),
                    Diagnostic::new(tritonctl::rule!("N0701"), "a note about the file"),
                ],
            },
            FileReport {
                path: "<stdin>".into(),
                model: None,
                src: String::new(),
                diagnostics: vec![],
            },
        ],
    };
    let mut out = Vec::new();
    render(Format::Json, &mut out, &report, &RenderOptions::default()).unwrap();
    let doc: Value = serde_json::from_slice(&out).unwrap();
    assert_matches_schema(&schema_validator(), &doc);
    let d = &doc["files"][0]["diagnostics"];
    assert_eq!(d[0]["labels"][0]["message"], "name here");
    assert_eq!(
        (
            d[0]["labels"][0]["line"].as_u64(),
            d[0]["labels"][0]["end_column"].as_u64()
        ),
        (Some(1), Some(5))
    );
    assert_eq!(d[0]["triton_message"], "Triton's text");
    assert_eq!(d[1]["severity"], "note");
    assert!(d[1]["line"].is_null() && d[1]["column"].is_null());
    assert_eq!(doc["summary"]["notes"], 1);
}
