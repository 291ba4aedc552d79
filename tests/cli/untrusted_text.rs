//! Text from the input reaches the terminal escaped (docs/hostile.md):
//! control characters in a config, a directory name, a trace, a comment or
//! a server's answer cannot drive the terminal or forge an output line; a
//! long source line is shown as a window.

use crate::common::tritonctl;
use std::path::Path;

/// Sets the terminal title and clears the screen when printed raw.
const PWNED: &str = "\u{1b}]0;pwned\u{7}\u{1b}[2J";

/// What a line forged by a `\n` in a value would start with.
const FORGED: &str = "error[E9999]: forged";

/// No raw control character but the line breaks of the output itself (and
/// no bidirectional override).
fn assert_clean(what: &str, text: &str) {
    let bad: Vec<char> = text
        .chars()
        .filter(|&c| c != '\n' && ::tritonctl::text::display::needs_escape(c))
        .collect();
    assert!(bad.is_empty(), "{what}: raw {bad:?} in {text:?}");
}

/// A config whose name (a raw ESC/BEL sequence) is quoted by a finding,
/// with the same characters raw in the source line under it.
fn hostile_config(dir: &Path) -> std::path::PathBuf {
    let text = format!(
        "name: \"{PWNED}\"\nplatform: \"onnxruntime_onnx\"\nmax_batch_size: 4\n\
         input [ {{ name: \"x\" data_type: TYPE_FP32 dims: [ 4 ] }} ]\n\
         output [ {{ name: \"y\" data_type: TYPE_FP32 dims: [ 4 ] }} ]\n\
         sequence_batching {{ control_input [\n\
         {{ name: \"S{PWNED}\" control [ {{ kind: CONTROL_SEQUENCE_START fp32_false_true: [ 0, 1 ] }} ] }},\n\
         {{ name: \"S{PWNED}\" control [ {{ kind: CONTROL_SEQUENCE_READY fp32_false_true: [ 0, 1 ] }} ] }}\n\
         ] }}\n"
    );
    let p = dir.join("hostile.pbtxt");
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn validate_shows_control_characters_escaped_in_every_text_format() {
    let tmp = tempfile::tempdir().unwrap();
    let config = hostile_config(tmp.path());
    for format in ["human", "github", "junit"] {
        let (code, out, err) = tritonctl()
            .current_dir(tmp.path())
            .args(["validate", "--format", format, "hostile.pbtxt"])
            .run()
            .parts();
        assert_eq!(code, 1, "{format}: {out}{err}");
        assert_clean(format, &out);
        assert_clean(format, &err);
        assert!(
            out.contains("\\u{1b}]0;pwned\\u{7}\\u{1b}[2J"),
            "{format}: the name is shown escaped: {out}"
        );
    }
    // The source lines under the finding are escaped, and the marks stay
    // under the escaped name.
    let out = tritonctl()
        .current_dir(tmp.path())
        .args(["validate", "hostile.pbtxt"])
        .run()
        .stdout;
    let lines: Vec<&str> = out.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("8 |"))
        .unwrap_or_else(|| panic!("line 8 shown: {out}"));
    let shown = lines[at];
    let under = lines[at + 1];
    let name = "\"S\\u{1b}]0;pwned\\u{7}\\u{1b}[2J\"";
    let col = shown.find(name).expect("escaped name in the snippet");
    assert_eq!(under.find('^'), Some(col), "{shown}\n{under}");
    assert_eq!(
        under.trim_end().len() - col,
        name.len(),
        "the caret covers the escaped name: {shown}\n{under}"
    );
    assert!(config.exists());
}

#[test]
fn a_directory_name_cannot_forge_an_output_line() {
    let tmp = tempfile::tempdir().unwrap();
    let dir_name = format!("m\n{FORGED}\n{PWNED}");
    let model = tmp.path().join("repo").join(&dir_name);
    std::fs::create_dir_all(model.join("1")).unwrap();
    // A syntax error: the finding points into the file (`-->` line) and
    // the repository checks quote the directory's name.
    std::fs::write(
        model.join("config.pbtxt"),
        "name: \"other\"\nmax_batch_size: \n",
    )
    .unwrap();
    for format in ["human", "github", "junit"] {
        let (_, out, err) = tritonctl()
            .current_dir(tmp.path())
            .args(["validate", "--format", format, "repo"])
            .run()
            .parts();
        assert_clean(format, &out);
        assert_clean(format, &err);
        assert!(
            !out.lines().chain(err.lines()).any(|l| l.contains(FORGED)
                && !l.contains("m\\nerror[E9999]: forged")
                && !l.contains("m%0Aerror[E9999]: forged")
                && !l.contains("m&#10;error[E9999]: forged")),
            "{format}: a line of its own for the directory's name: {out}{err}"
        );
        assert!(out.contains("forged"), "{format}: the name is shown: {out}");
    }
    let out = tritonctl()
        .current_dir(tmp.path())
        .args(["validate", "repo"])
        .run()
        .stdout;
    let arrow = out
        .lines()
        .find(|l| l.trim_start().starts_with("-->"))
        .unwrap_or_else(|| panic!("a --> line: {out}"));
    assert!(
        arrow.contains(
            "repo/m\\nerror[E9999]: forged\\n\\u{1b}]0;pwned\\u{7}\\u{1b}[2J/config.pbtxt"
        ),
        "{arrow}"
    );
}

#[test]
fn simulate_rejection_reasons_show_the_sequence_id_escaped() {
    let traces = crate::common::crate_root().join("testdata").join("traces");
    let id = format!("{PWNED}\n{FORGED}\u{202e}");
    let line = serde_json::json!({"id": "x0", "arrival_us": 6000, "sequence_id": id});
    let trace = format!(
        "{{\"id\": \"a0\", \"arrival_us\": 0, \"sequence_id\": 7, \"start\": true}}\n{line}\n\
         {{\"id\": \"a2\", \"arrival_us\": 10000, \"sequence_id\": 7, \"end\": true}}\n"
    );
    let (code, out, err) = tritonctl()
        .arg("simulate")
        .arg("--config")
        .arg(traces.join("direct.pbtxt"))
        .args(["--trace", "-", "--latency", "1000"])
        .stdin(trace)
        .run()
        .parts();
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("START flag"), "{out}");
    assert_clean("simulate", &out);
    assert_clean("simulate", &err);
    assert!(
        !out.lines().any(|l| l.starts_with(FORGED)),
        "no forged line: {out}"
    );
    assert!(out.contains("\\u{1b}]0;pwned"), "{out}");
}

#[test]
fn fmt_diff_shows_control_characters_of_comments_escaped() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("c.pbtxt");
    let text = format!("# {PWNED} comment\nname:'m'   max_batch_size :8\n");
    std::fs::write(&f, &text).unwrap();
    for color in ["never", "always"] {
        let (code, out, err) = tritonctl()
            .current_dir(tmp.path())
            .args(["--color", color, "fmt", "--diff", "c.pbtxt"])
            .run()
            .parts();
        assert_eq!(code, 1, "{out}{err}");
        assert!(
            out.contains("# \\u{1b}]0;pwned\\u{7}\\u{1b}[2J comment"),
            "{out}"
        );
        if color == "never" {
            assert_clean("fmt --diff", &out);
        } else {
            // Only the diff's own colours: every ESC starts an SGR sequence.
            assert!(!out.contains('\u{7}'), "{out:?}");
            assert!(!out.contains("\u{1b}]"), "{out:?}");
            assert!(!out.contains("\u{1b}[2J"), "{out:?}");
        }
    }
    assert_eq!(std::fs::read_to_string(&f).unwrap(), text);
}

#[test]
fn a_long_source_line_is_shown_as_a_window() {
    // One line of 4 MB with the error near its end.
    let tmp = tempfile::tempdir().unwrap();
    let long = "x".repeat(4 << 20);
    let text = format!("name: \"m\" max_batch_size: 4 parameters {{ key: \"{long}\" value {{ string_value: \"v\" }} }} bogus_field: 1\n");
    std::fs::write(tmp.path().join("long.pbtxt"), &text).unwrap();
    let (code, out, err) = tritonctl()
        .current_dir(tmp.path())
        .args(["validate", "long.pbtxt"])
        .run()
        .parts();
    assert_eq!(code, 1, "{err}");
    assert!(out.len() < 4096, "{} bytes of output", out.len());
    let col = text.find("bogus_field").unwrap() + 1;
    assert!(out.contains(&format!("long.pbtxt:1:{col}")), "{out}");
    let shown = out
        .lines()
        .find(|l| l.starts_with("1 |"))
        .unwrap_or_else(|| panic!("the line is shown: {out}"));
    assert!(
        shown.starts_with("1 | …") && shown.contains("bogus_field: 1"),
        "{shown}"
    );
    let caret = out.lines().find(|l| l.contains('^')).unwrap();
    assert_eq!(
        caret.find('^'),
        shown
            .find("bogus_field")
            .map(|b| shown[..b].chars().count()),
        "{shown}\n{caret}"
    );
}

#[test]
fn a_long_value_quoted_in_messages_is_cut() {
    // A 1 MB model name, quoted by the finding on max_batch_size and by
    // the directory-name check: each quote is cut, with the rest counted.
    let tmp = tempfile::tempdir().unwrap();
    let name = "n".repeat(1 << 20);
    let dir = tmp.path().join("m");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(
        dir.join("config.pbtxt"),
        format!("name: \"{name}\"\nbackend: \"onnxruntime\"\nmax_batch_size: -1\n"),
    )
    .unwrap();
    for format in ["human", "github"] {
        let (code, out, err) = tritonctl()
            .current_dir(tmp.path())
            .args(["validate", "--format", format, "m/config.pbtxt"])
            .run()
            .parts();
        assert_eq!(code, 1, "{err}");
        assert!(
            out.len() < 64 << 10,
            "{format}: {} bytes of output",
            out.len()
        );
        assert!(
            out.contains("more bytes not shown)"),
            "{format}: {}",
            &out[..2000.min(out.len())]
        );
    }
}

#[cfg(feature = "perf")]
#[test]
fn perf_shows_a_servers_error_text_escaped() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let error = format!("{PWNED}\n{FORGED}\u{9b}31m");
    let body = serde_json::json!({ "error": error }).to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { return };
            let body = body.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let mut seen = Vec::new();
                // Every request (a GET without a body) gets the same answer.
                while let Ok(n) = s.read(&mut buf) {
                    if n == 0 {
                        return;
                    }
                    seen.extend_from_slice(&buf[..n]);
                    while let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
                        seen.drain(..end + 4);
                        let answer = format!(
                            "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                            body.len()
                        );
                        if s.write_all(answer.as_bytes()).is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    let (code, out, err) = tritonctl()
        .args(["perf", "-m", "m", "-u", &format!("127.0.0.1:{port}")])
        .timeout(std::time::Duration::from_secs(60))
        .run()
        .parts();
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("HTTP 400"), "{err}");
    assert_clean("perf", &err);
    assert!(
        err.contains("\\u{1b}]0;pwned\\u{7}\\u{1b}[2J\\nerror[E9999]: forged\\u{9b}31m"),
        "{err}"
    );
    assert!(!err.lines().any(|l| l.starts_with(FORGED)), "{err}");
}

#[cfg(feature = "run")]
#[test]
fn run_table_shows_ids_and_errors_escaped() {
    let Some(lib) = crate::common::ort_library().map(|l| l.path) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let id = format!("{PWNED}\n{FORGED}");
    let rows: Vec<serde_json::Value> = (0..9).map(|_| serde_json::json!([1, 2, 3, 4])).collect();
    let text = format!(
        "{}\n{}\n",
        serde_json::json!({"id": id, "inputs": {"Input": [[0, 0, 0, 1]]}}),
        // Refused (batch of 9 > max_batch_size 8): the error quotes the id.
        serde_json::json!({"id": format!("big{id}"), "inputs": {"Input": rows}}),
    );
    let input = tmp.path().join("in.jsonl");
    std::fs::write(&input, text).unwrap();
    let model = crate::common::crate_root()
        .join("testdata")
        .join("run")
        .join("preprocess");
    let (code, out, err) = tritonctl()
        .env("ORT_DYLIB_PATH", &lib)
        .arg("run")
        .arg(&model)
        .arg("--input")
        .arg(&input)
        .run()
        .parts();
    assert_eq!(code, 1, "{out}{err}");
    assert_clean("run", &out);
    assert_clean("run", &err);
    assert!(out.contains("\\u{1b}]0;pwned\\u{7}"), "{out}");
    assert!(
        !out.lines()
            .chain(err.lines())
            .any(|l| l.contains(FORGED) && !l.contains("\\nerror[E9999]: forged")),
        "no forged line: {out}{err}"
    );
}
