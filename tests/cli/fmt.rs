//! `tritonctl fmt` and `tritonctl convert`: the canonical printer over the
//! whole corpus (library level, one process), protoc as the judge that the
//! printed text is the same message, the hand-written layouts of
//! testdata/fmt/ (`X.pbtxt` formats to `X.formatted.pbtxt`), and the
//! command-line behaviour (exit codes, --check, --diff, atomic writes,
//! CRLF, standard input) through the real binary.

use crate::common::{self, crate_root, tritonctl};
use serde_json::Value as Json;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use tritonctl::config::ParsedConfig;
use tritonctl::convert;
use tritonctl::diagnostics::{Category, Severity};
use tritonctl::pbtxt::{self, comments, printer};

// ---------------------------------------------------------------------------
// Helpers

fn fmt_dir() -> PathBuf {
    crate_root().join("testdata").join("fmt")
}

/// Every corpus file, sorted (empty when ../shared is absent).
fn corpus_files() -> Vec<PathBuf> {
    let Some(shared) = common::shared_dir() else {
        return Vec::new();
    };
    let mut files = Vec::new();
    for owner in std::fs::read_dir(shared.join("corpus").join("configs")).expect("corpus/configs") {
        let owner = owner.unwrap().path();
        for f in std::fs::read_dir(&owner).unwrap() {
            files.push(f.unwrap().path());
        }
    }
    files.sort();
    assert!(files.len() > 900, "the corpus has {} files", files.len());
    files
}

/// testdata/fmt inputs paired with their hand-written formatted forms.
fn fmt_cases() -> Vec<(PathBuf, PathBuf)> {
    let mut cases: Vec<(PathBuf, PathBuf)> = std::fs::read_dir(fmt_dir())
        .expect("testdata/fmt")
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.ends_with(".pbtxt") && !n.ends_with(".formatted.pbtxt")
        })
        .map(|p| {
            let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
            let expected = p.with_file_name(format!("{stem}.formatted.pbtxt"));
            (p, expected)
        })
        .collect();
    cases.sort();
    assert!(cases.len() >= 5, "testdata/fmt has too few cases");
    cases
}

fn read_text(p: &Path) -> String {
    String::from_utf8(std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .unwrap_or_else(|_| panic!("{} is not UTF-8", p.display()))
}

fn comment_texts(src: &str) -> Vec<String> {
    comments::scan(src)
        .iter()
        .map(|s| src[s.range()].trim_end().to_string())
        .collect()
}

/// Whether protobuf's parser would refuse the text, in our terms.
fn has_schema_or_syntax_error(p: &ParsedConfig) -> bool {
    p.diagnostics.iter().any(|d| {
        d.severity == Severity::Error && matches!(d.category(), Category::Syntax | Category::Schema)
    })
}

/// Checks what `fmt` promises for one text; returns the formatted text, or
/// `None` when the text does not parse.
fn check_fmt(name: &str, src: &str, failures: &mut Vec<String>) -> Option<String> {
    let doc = pbtxt::parse(src).ok()?;
    let out = printer::print_document(src, &doc);
    let Ok(doc2) = pbtxt::parse(&out) else {
        failures.push(format!("{name}: the formatted text does not parse:\n{out}"));
        return None;
    };
    let again = printer::print_document(&out, &doc2);
    if again != out {
        failures.push(format!(
            "{name}: not idempotent:\n--- first\n{out}\n--- second\n{again}"
        ));
    }
    let before = ParsedConfig::parse(src.to_string());
    let after = ParsedConfig::parse(out.clone());
    if !convert::messages_equal(before.message.as_ref()?, after.message.as_ref()?) {
        failures.push(format!(
            "{name}: the formatted text binds to another message"
        ));
    }
    if has_schema_or_syntax_error(&before) != has_schema_or_syntax_error(&after) {
        failures.push(format!(
            "{name}: schema errors before: {}, after: {}",
            has_schema_or_syntax_error(&before),
            has_schema_or_syntax_error(&after)
        ));
    }
    if comment_texts(src) != comment_texts(&out) {
        failures.push(format!(
            "{name}: comments differ:\n{:?}\n{:?}",
            comment_texts(src),
            comment_texts(&out)
        ));
    }
    if out.contains('\r') && !src.contains('\r') {
        failures.push(format!("{name}: a carriage return appeared"));
    }
    if !out.is_empty() && (!out.ends_with('\n') || out.ends_with("\n\n")) {
        failures.push(format!(
            "{name}: the text must end with exactly one newline"
        ));
    }
    Some(out)
}

fn protoc_required() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// `protoc --encode=inference.ModelConfig` of a text: `Ok(binary)` or
/// `Err(first line of the complaint)`. `None` when protoc is not installed
/// (a failure when CI=true).
struct Protoc {
    descriptor_set: PathBuf,
}

impl Protoc {
    fn find() -> Option<Protoc> {
        let shared = common::shared_dir()?;
        let found = Command::new("protoc")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            assert!(
                !protoc_required(),
                "protoc is required when CI=true but is not on PATH; install protobuf-compiler"
            );
            eprintln!("skipped: protoc is not on PATH (apt-get install protobuf-compiler)");
            return None;
        }
        Some(Protoc {
            descriptor_set: shared.join("corpus").join("model_config.desc"),
        })
    }

    fn encode(&self, text: &str) -> Result<Vec<u8>, String> {
        let mut child = Command::new("protoc")
            .arg(format!(
                "--descriptor_set_in={}",
                self.descriptor_set.display()
            ))
            .arg("--encode=inference.ModelConfig")
            .arg("model_config.proto")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("protoc runs");
        let mut stdin = child.stdin.take().unwrap();
        let bytes = text.as_bytes().to_vec();
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(&bytes);
        });
        let out = child.wait_with_output().expect("protoc finishes");
        writer.join().unwrap();
        if out.status.success() {
            Ok(out.stdout)
        } else {
            Err(String::from_utf8_lossy(&out.stderr)
                .lines()
                .next()
                .unwrap_or("")
                .to_string())
        }
    }
}

const MESSY: &str =
    "name:'m' max_batch_size :8 # batch\ninput [{name:\"x\",data_type:TYPE_FP32,dims:[1,2]}]\n";
const MESSY_FORMATTED: &str = "name: \"m\"\nmax_batch_size: 8 # batch\ninput [\n  {\n    name: \"x\"\n    data_type: TYPE_FP32\n    dims: [ 1, 2 ]\n  }\n]\n";

// ---------------------------------------------------------------------------
// Library level: the corpus and testdata/fmt

#[test]
fn corpus_formats_idempotently_keeping_message_and_comments() {
    let files = corpus_files();
    let mut failures = Vec::new();
    let (mut formatted, mut unparsed) = (0, 0);
    for f in &files {
        let src = read_text(f);
        match check_fmt(&f.display().to_string(), &src, &mut failures) {
            Some(_) => formatted += 1,
            None => unparsed += 1,
        }
    }
    eprintln!("corpus: {formatted} files formatted, {unparsed} do not parse");
    if !files.is_empty() {
        assert!(formatted > 900, "only {formatted} corpus files parse");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn testdata_cases_format_as_written_by_hand() {
    let mut failures = Vec::new();
    for (input, expected) in fmt_cases() {
        let src = read_text(&input);
        let want = read_text(&expected);
        let name = input.file_name().unwrap().to_string_lossy().into_owned();
        let got = check_fmt(&name, &src, &mut failures)
            .unwrap_or_else(|| panic!("{name} does not parse"));
        if got != want {
            failures.push(format!("{name}:\n--- got\n{got}--- want\n{want}"));
        }
        // The formatted form is a fixed point, and CRLF input gives LF output.
        check_fmt(&format!("{name} (formatted)"), &want, &mut failures);
        let crlf = src.replace('\n', "\r\n");
        let got_crlf = printer::format_source(&crlf).expect("CRLF input parses");
        if got_crlf != want {
            failures.push(format!(
                "{name} with CRLF:\n--- got\n{got_crlf}--- want\n{want}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn fmt_output_parses_with_protoc_exactly_when_the_input_did() {
    let Some(protoc) = Protoc::find() else {
        return;
    };
    let files = corpus_files();
    // Every corpus file and every case.
    let mut inputs: Vec<(String, String)> = files
        .iter()
        .map(|f| (f.display().to_string(), read_text(f)))
        .collect();
    for (input, expected) in fmt_cases() {
        inputs.push((input.display().to_string(), read_text(&input)));
        inputs.push((expected.display().to_string(), read_text(&expected)));
    }
    let mut failures = Vec::new();
    let (mut accepted, mut refused) = (0, 0);
    for (name, src) in &inputs {
        let Ok(out) = printer::format_source(src) else {
            continue;
        };
        match (protoc.encode(src), protoc.encode(&out)) {
            (Ok(a), Ok(b)) => {
                accepted += 1;
                if a != b {
                    failures.push(format!(
                        "{name}: protoc encodes the formatted text differently"
                    ));
                }
            }
            (Err(_), Err(_)) => refused += 1,
            (a, b) => failures.push(format!(
                "{name}: protoc on the input: {:?}, on the formatted text: {:?}",
                a.err(),
                b.err()
            )),
        }
    }
    eprintln!("protoc: {accepted} accepted before and after, {refused} refused before and after");
    assert!(accepted > 50, "too few files checked with protoc");
    assert!(refused > 0, "no file that protoc refuses was checked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn convert_round_trips_over_the_corpus() {
    let mut failures = Vec::new();
    let mut converted = 0;
    for f in corpus_files() {
        let parsed = ParsedConfig::parse(read_text(&f));
        if !parsed.diagnostics.is_empty() {
            continue;
        }
        let name = f.display().to_string();
        let msg = parsed.message.unwrap();
        let json = convert::to_json(&msg);
        if let Err(e) = serde_json::from_str::<Json>(&json) {
            failures.push(format!("{name}: to_json is not JSON: {e}"));
            continue;
        }
        let back = match convert::from_json(&json) {
            Ok(m) => m,
            Err(e) => {
                failures.push(format!("{name}: our JSON does not read back: {e}"));
                continue;
            }
        };
        if !convert::messages_equal(&msg, &back) {
            failures.push(format!(
                "{name}: pbtxt -> json -> message changes the message"
            ));
        }
        let text = printer::print_message(&back);
        let reparsed = ParsedConfig::parse(text.clone());
        if !reparsed.diagnostics.is_empty() {
            failures.push(format!("{name}: the printed message has errors:\n{text}"));
            continue;
        }
        let again = reparsed.message.unwrap();
        if !convert::messages_equal(&msg, &again) {
            failures.push(format!("{name}: json -> pbtxt changes the message"));
        }
        if convert::to_json(&again) != json {
            failures.push(format!(
                "{name}: pbtxt -> json -> pbtxt -> json is not the identity"
            ));
        }
        converted += 1;
    }
    eprintln!("convert: {converted} corpus files round-tripped");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Our JSON against protobuf's own JSON printer (Python `json_format`, with
/// the options Triton uses), when Python's protobuf is installed: the same
/// members and values, except that 64-bit integers are numbers here where
/// protobuf quotes them.
#[test]
fn json_matches_protobufs_printer() {
    let Some(shared) = common::shared_dir() else {
        return;
    };
    let probe = Command::new("python3")
        .args(["-c", "import google.protobuf.json_format"])
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        eprintln!("skipped: Python's protobuf package is not installed");
        return;
    }
    let files: Vec<PathBuf> = corpus_files().into_iter().step_by(7).collect();
    let list = files
        .iter()
        .map(|f| f.display().to_string())
        .collect::<Vec<_>>()
        .join("\n");
    let script = r#"
import sys, json
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory, text_format
fds = descriptor_pb2.FileDescriptorSet()
fds.ParseFromString(open(sys.argv[1], 'rb').read())
pool = descriptor_pool.DescriptorPool()
for f in fds.file:
    pool.Add(f)
cls = message_factory.GetMessageClass(pool.FindMessageTypeByName('inference.ModelConfig'))
for path in sys.stdin.read().split('\n'):
    m = cls()
    try:
        text_format.Parse(open(path, encoding='utf-8').read(), m)
    except Exception:
        continue
    d = json_format.MessageToDict(m, preserving_proto_field_name=True,
                                  always_print_fields_with_no_presence=True)
    print(json.dumps({'path': path, 'json': d}))
"#;
    let mut child = Command::new("python3")
        .args(["-c", script])
        .arg(shared.join("corpus").join("model_config.desc"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(list.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut failures = Vec::new();
    let mut compared = 0;
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let rec: Json = serde_json::from_str(line).unwrap();
        let path = rec["path"].as_str().unwrap();
        let parsed = ParsedConfig::parse(read_text(Path::new(path)));
        let Some(msg) = parsed.message.filter(|_| parsed.diagnostics.is_empty()) else {
            failures.push(format!("{path}: protobuf parses it, we do not"));
            continue;
        };
        let ours: Json = serde_json::from_str(&convert::to_json(&msg)).unwrap();
        if let Some(diff) = json_diff(&ours, &rec["json"], "") {
            failures.push(format!("{path}: {diff}"));
        }
        compared += 1;
    }
    eprintln!("json: {compared} corpus files compared with protobuf's printer");
    assert!(compared > 50, "too few files compared");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The first difference between our JSON and protobuf's (which quotes
/// 64-bit integers and may print floats with other digits).
fn json_diff(ours: &Json, theirs: &Json, at: &str) -> Option<String> {
    match (ours, theirs) {
        (Json::Object(a), Json::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                match (a.get(k), b.get(k)) {
                    (Some(x), Some(y)) => {
                        if let Some(d) = json_diff(x, y, &format!("{at}.{k}")) {
                            return Some(d);
                        }
                    }
                    (x, y) => {
                        return Some(format!("{at}.{k}: ours {x:?}, protobuf's {y:?}"));
                    }
                }
            }
            None
        }
        (Json::Array(a), Json::Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .enumerate()
            .find_map(|(i, (x, y))| json_diff(x, y, &format!("{at}[{i}]"))),
        (Json::Number(n), Json::String(s)) if n.to_string() == *s => None,
        (Json::Number(x), Json::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            ((x - y).abs() > 1e-6 * x.abs().max(1.0))
                .then(|| format!("{at}: ours {x}, protobuf's {y}"))
        }
        (x, y) if x == y => None,
        (x, y) => Some(format!("{at}: ours {x}, protobuf's {y}")),
    }
}

// ---------------------------------------------------------------------------
// The binary: fmt

#[test]
fn check_lists_files_that_would_change_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("messy.pbtxt"), MESSY).unwrap();
    std::fs::write(tmp.path().join("tidy.pbtxt"), MESSY_FORMATTED).unwrap();
    let (code, out, _) = tritonctl()
        .current_dir(tmp.path())
        .args(["fmt", "--check", "messy.pbtxt", "tidy.pbtxt"])
        .run()
        .parts();
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("messy.pbtxt"), "{out}");
    assert!(
        !out.lines()
            .any(|l| l.contains("Would reformat") && l.contains("tidy")),
        "{out}"
    );
    assert_eq!(read_text(&tmp.path().join("messy.pbtxt")), MESSY);
    let (code, out, _) = tritonctl()
        .current_dir(tmp.path())
        .args(["fmt", "--check", "tidy.pbtxt"])
        .run()
        .parts();
    assert_eq!(code, 0, "{out}");
}

#[test]
fn diff_prints_a_unified_diff_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("messy.pbtxt"), MESSY).unwrap();
    let (code, out, _) = tritonctl()
        .current_dir(tmp.path())
        .args(["fmt", "--diff", "messy.pbtxt"])
        .run()
        .parts();
    assert_eq!(code, 1);
    assert!(
        out.starts_with("--- messy.pbtxt\n+++ messy.pbtxt\n@@ -1,2 +1,9 @@\n"),
        "{out}"
    );
    assert!(
        out.contains("\n-name:'m' max_batch_size :8 # batch\n"),
        "{out}"
    );
    assert!(out.contains("\n+    dims: [ 1, 2 ]\n"), "{out}");
    assert_eq!(read_text(&tmp.path().join("messy.pbtxt")), MESSY);
    std::fs::write(tmp.path().join("messy.pbtxt"), MESSY_FORMATTED).unwrap();
    let (code, out, _) = tritonctl()
        .current_dir(tmp.path())
        .args(["fmt", "--diff", "messy.pbtxt"])
        .run()
        .parts();
    assert_eq!((code, out.as_str()), (0, ""));
}

#[test]
fn rewrites_in_place_keeping_permissions() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("config.pbtxt");
    std::fs::write(&f, MESSY).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o640)).unwrap();
    }
    let (code, out, err) = tritonctl()
        .current_dir(tmp.path())
        .args(["fmt", "config.pbtxt"])
        .run()
        .parts();
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("1 file reformatted"), "{out}");
    assert_eq!(read_text(&f), MESSY_FORMATTED);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&f).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
    }
    let leftovers: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert_eq!(leftovers.len(), 1, "a temporary file was left behind");
    let (code, out, _) = tritonctl()
        .current_dir(tmp.path())
        .args(["fmt", "config.pbtxt"])
        .run()
        .parts();
    assert_eq!(code, 0);
    assert!(out.contains("1 file left unchanged"), "{out}");
}

#[test]
fn formats_every_model_of_a_repository() {
    let tmp = tempfile::tempdir().unwrap();
    for m in ["a", "b"] {
        std::fs::create_dir_all(tmp.path().join("repo").join(m).join("1")).unwrap();
        std::fs::write(tmp.path().join("repo").join(m).join("config.pbtxt"), MESSY).unwrap();
    }
    // A model without a config is skipped, not an error.
    std::fs::create_dir_all(tmp.path().join("repo").join("c").join("1")).unwrap();
    let (code, out, err) = tritonctl()
        .current_dir(tmp.path())
        .args(["fmt", "--check", "repo"])
        .run()
        .parts();
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("repo/a/config.pbtxt") && out.contains("repo/b/config.pbtxt"),
        "{out}"
    );
    let (code, _, err) = tritonctl()
        .current_dir(tmp.path())
        .args(["fmt", "repo"])
        .run()
        .parts();
    assert_eq!(code, 0, "{err}");
    for m in ["a", "b"] {
        assert_eq!(
            read_text(&tmp.path().join("repo").join(m).join("config.pbtxt")),
            MESSY_FORMATTED
        );
    }
    // A model directory on its own.
    std::fs::write(tmp.path().join("repo/a/config.pbtxt"), MESSY).unwrap();
    let (code, _, _) = tritonctl()
        .current_dir(tmp.path())
        .args(["fmt", "repo/a"])
        .run()
        .parts();
    assert_eq!(code, 0);
    assert_eq!(
        read_text(&tmp.path().join("repo/a/config.pbtxt")),
        MESSY_FORMATTED
    );
}

#[test]
fn a_file_with_a_syntax_error_is_reported_and_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = "name: \"x\"\nmax_batch_size 8\n";
    std::fs::write(tmp.path().join("bad.pbtxt"), bad).unwrap();
    std::fs::write(tmp.path().join("ok.pbtxt"), MESSY).unwrap();
    let (code, _, err) = tritonctl()
        .current_dir(tmp.path())
        .args(["fmt", "bad.pbtxt", "ok.pbtxt"])
        .run()
        .parts();
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("error[E0001]") && err.contains("bad.pbtxt:2:"),
        "{err}"
    );
    assert_eq!(read_text(&tmp.path().join("bad.pbtxt")), bad);
    // The other file is still formatted.
    assert_eq!(read_text(&tmp.path().join("ok.pbtxt")), MESSY_FORMATTED);
}

#[test]
fn unreadable_inputs_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, _, err) = tritonctl()
        .current_dir(tmp.path())
        .args(["fmt", "missing.pbtxt"])
        .run()
        .parts();
    assert_eq!(code, 2);
    assert!(err.contains("missing.pbtxt"), "{err}");
    let latin1 = b"name: \"caf\xe9\"\n";
    std::fs::write(tmp.path().join("latin1.pbtxt"), latin1).unwrap();
    let (code, _, err) = tritonctl()
        .current_dir(tmp.path())
        .args(["fmt", "latin1.pbtxt"])
        .run()
        .parts();
    assert_eq!(code, 2);
    assert!(err.contains("UTF-8"), "{err}");
    assert_eq!(
        std::fs::read(tmp.path().join("latin1.pbtxt")).unwrap(),
        latin1
    );
}

#[cfg(unix)]
#[test]
fn a_read_only_file_is_not_rewritten() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("config.pbtxt");
    std::fs::write(&f, MESSY).unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o444)).unwrap();
    let (code, _, err) = tritonctl()
        .current_dir(tmp.path())
        .args(["fmt", "config.pbtxt"])
        .run()
        .parts();
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("read-only"), "{err}");
    assert_eq!(read_text(&f), MESSY);
}

/// Makes a directory unwritable for the test's lifetime: by its mode, or,
/// where that does not stop the process (root), by the immutable attribute.
#[cfg(unix)]
struct Unwritable {
    dir: PathBuf,
    immutable: bool,
}

#[cfg(unix)]
impl Unwritable {
    fn new(dir: &Path) -> Option<Unwritable> {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555)).unwrap();
        let mut guard = Unwritable {
            dir: dir.to_path_buf(),
            immutable: false,
        };
        let probe = dir.join(".probe");
        if std::fs::write(&probe, "x").is_err() {
            return Some(guard);
        }
        let _ = std::fs::remove_file(&probe);
        guard.immutable = Command::new("chattr")
            .arg("+i")
            .arg(dir)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if guard.immutable && std::fs::write(&probe, "x").is_err() {
            return Some(guard);
        }
        let _ = std::fs::remove_file(&probe);
        None
    }
}

#[cfg(unix)]
impl Drop for Unwritable {
    fn drop(&mut self) {
        use std::os::unix::fs::PermissionsExt;
        if self.immutable {
            let _ = Command::new("chattr").arg("-i").arg(&self.dir).status();
        }
        let _ = std::fs::set_permissions(&self.dir, std::fs::Permissions::from_mode(0o755));
    }
}

#[cfg(unix)]
#[test]
fn a_read_only_directory_fails_cleanly_and_keeps_the_original() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    std::fs::create_dir(&dir).unwrap();
    let f = dir.join("config.pbtxt");
    std::fs::write(&f, MESSY).unwrap();
    let Some(guard) = Unwritable::new(&dir) else {
        eprintln!("skipped: cannot make a directory unwritable for this user");
        return;
    };
    let (code, _, err) = tritonctl()
        .current_dir(tmp.path())
        .args(["fmt", "m"])
        .run()
        .parts();
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("m/config.pbtxt") && err.contains("left unchanged"),
        "{err}"
    );
    assert_eq!(read_text(&f), MESSY);
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["config.pbtxt"]);
    drop(guard);
}

#[test]
fn standard_input_goes_to_standard_output() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, out, _) = tritonctl()
        .current_dir(tmp.path())
        .args(["fmt", "-"])
        .stdin(MESSY.as_bytes())
        .run()
        .parts();
    assert_eq!((code, out.as_str()), (0, MESSY_FORMATTED));
    // CRLF in, LF out.
    let crlf = MESSY.replace('\n', "\r\n");
    let (code, out, _) = tritonctl()
        .current_dir(tmp.path())
        .args(["fmt", "-"])
        .stdin(crlf.as_bytes())
        .run()
        .parts();
    assert_eq!((code, out.as_str()), (0, MESSY_FORMATTED));
    let (code, out, _) = tritonctl()
        .current_dir(tmp.path())
        .args(["fmt", "--check", "-"])
        .stdin(MESSY.as_bytes())
        .run()
        .parts();
    assert_eq!(code, 1);
    assert!(out.contains("<stdin>"), "{out}");
    let (code, out, _) = tritonctl()
        .current_dir(tmp.path())
        .args(["fmt", "--check", "-"])
        .stdin(MESSY_FORMATTED.as_bytes())
        .run()
        .parts();
    assert_eq!(code, 0, "{out}");
    let (code, out, err) = tritonctl()
        .current_dir(tmp.path())
        .args(["fmt", "-"])
        .stdin(b"name {")
        .run()
        .parts();
    assert_eq!((code, out.as_str()), (1, ""));
    assert!(err.contains("<stdin>:1:"), "{err}");
}

// ---------------------------------------------------------------------------
// The binary: convert

#[test]
fn convert_to_json_prints_tritons_form() {
    let (code, out, err) = tritonctl()
        .current_dir(fmt_dir())
        .args(["convert", "--to", "json", "layout.pbtxt"])
        .run()
        .parts();
    assert_eq!(code, 0, "{err}");
    let v: Json = serde_json::from_str(&out).expect("JSON output");
    assert_eq!(v["name"], "layout");
    assert_eq!(v["max_batch_size"], 16);
    assert_eq!(v["input"][0]["data_type"], "TYPE_INT64");
    assert_eq!(v["input"][0]["dims"], serde_json::json!([-1, 3, 224]));
    assert_eq!(v["input"][0]["reshape"]["shape"], serde_json::json!([]));
    assert_eq!(v["output"][0]["dims"], serde_json::json!([-1, 1000]));
    assert_eq!(
        v["version_policy"]["specific"]["versions"],
        serde_json::json!([1, 2])
    );
    assert_eq!(v["instance_group"][1]["kind"], "KIND_CPU");
    assert_eq!(v["instance_group"][1]["count"], 0);
    assert_eq!(v["parameters"]["b"]["string_value"], "2");
    assert_eq!(v["optimization"]["cuda"]["busy_wait_events"], true);
    assert_eq!(v["dynamic_batching"]["max_queue_delay_microseconds"], 0);
    assert_eq!(v["backend"], "");
    assert_eq!(v["batch_input"], serde_json::json!([]));
    assert!(v.get("sequence_batching").is_none());
    // 64-bit values beyond 2^53 stay exact.
    let (code, out, err) = tritonctl()
        .current_dir(fmt_dir())
        .args(["convert", "--to", "json", "numbers.pbtxt"])
        .run()
        .parts();
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("\"max_sequence_idle_microseconds\": 18446744073709551615"),
        "{out}"
    );
}

#[test]
fn convert_json_back_to_pbtxt() {
    let json = "{\n  \"name\": \"m\",\n  \"max_batch_size\": 8,\n  \"input\": [{\"name\": \"x\", \"data_type\": \"TYPE_FP32\", \"dims\": [\"1\", 2]}],\n  \"dynamic_batching\": {\"max_queue_delay_microseconds\": \"100\"}\n}\n";
    let tmp = tempfile::tempdir().unwrap();
    let (code, out, err) = tritonctl()
        .current_dir(tmp.path())
        .args(["convert", "--to", "pbtxt", "-"])
        .stdin(json.as_bytes())
        .run()
        .parts();
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        "name: \"m\"\nmax_batch_size: 8\ninput [\n  {\n    name: \"x\"\n    data_type: TYPE_FP32\n    dims: [ 1, 2 ]\n  }\n]\ndynamic_batching {\n  max_queue_delay_microseconds: 100\n}\n"
    );
    // And to JSON again: the same message.
    let (code, back, _) = tritonctl()
        .current_dir(tmp.path())
        .args(["convert", "--to", "json", "-"])
        .stdin(out.as_bytes())
        .run()
        .parts();
    assert_eq!(code, 0);
    let (code, again, _) = tritonctl()
        .current_dir(tmp.path())
        .args(["convert", "--to", "json", "-"])
        .stdin(json.as_bytes())
        .run()
        .parts();
    assert_eq!(code, 0);
    assert_eq!(back, again);
}

#[test]
fn convert_reports_bad_inputs() {
    let tmp = tempfile::tempdir().unwrap();
    // Issue 28: a duplicate key was accepted silently, an array was read as
    // text format.
    for (input, words) in [
        (
            &b"{\n  \"name\": \"m\",\n  \"name\": \"n\"\n}\n"[..],
            "the key 'name' is given twice",
        ),
        (
            &b"\n[{\"name\": \"m\"}]\n"[..],
            "<stdin>:2:1: expected a JSON object (a ModelConfig), found an array",
        ),
    ] {
        let (code, out, err) = tritonctl()
            .current_dir(tmp.path())
            .args(["convert", "--to", "pbtxt", "-"])
            .stdin(input)
            .run()
            .parts();
        assert_eq!(code, 1, "{err}");
        assert!(out.is_empty(), "{out}");
        assert!(err.contains(words) && err.contains("<stdin>:"), "{err}");
        assert!(!err.contains("E0001"), "{err}");
    }
    let (code, _, err) = tritonctl()
        .current_dir(tmp.path())
        .args(["convert", "--to", "pbtxt", "-"])
        .stdin(b"{\n  \"name\": \"m\",\n  \"max_batch_sise\": 8\n}\n")
        .run()
        .parts();
    assert_eq!(code, 1);
    assert!(
        err.contains("<stdin>:3:") && err.contains("max_batch_sise"),
        "{err}"
    );
    let (code, _, err) = tritonctl()
        .current_dir(tmp.path())
        .args(["convert", "--to", "json", "-"])
        .stdin(b"name: \"m\"\nmax_batch_sise: 8\n")
        .run()
        .parts();
    assert_eq!(code, 1);
    assert!(
        err.contains("error[E0101]") && err.contains("<stdin>:2:1"),
        "{err}"
    );
    let (code, _, err) = tritonctl()
        .current_dir(tmp.path())
        .args(["convert", "--to", "json", "nope.pbtxt"])
        .run()
        .parts();
    assert_eq!(code, 2);
    assert!(err.contains("nope.pbtxt"), "{err}");
    let (code, _, _) = tritonctl()
        .current_dir(tmp.path())
        .args(["convert", "nope.pbtxt"])
        .run()
        .parts();
    assert_eq!(code, 2, "--to is required");
}

#[test]
fn convert_takes_a_model_directory() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("m")).unwrap();
    std::fs::write(tmp.path().join("m/config.pbtxt"), MESSY).unwrap();
    let (code, out, err) = tritonctl()
        .current_dir(tmp.path())
        .args(["convert", "--to", "pbtxt", "m"])
        .run()
        .parts();
    assert_eq!(code, 0, "{err}");
    // Comments are not part of the message.
    assert_eq!(out, MESSY_FORMATTED.replace(" # batch", ""));
}

// ---------------------------------------------------------------------------
// Generated documents: comments and blanks anywhere the grammar allows them

mod generated {
    use super::*;
    use proptest::prelude::*;

    /// A schema-free document tree.
    #[derive(Debug, Clone)]
    enum Node {
        Scalar(String),
        Message(Vec<(String, Node)>, bool),
        List(Vec<Node>),
    }

    fn string_literal() -> impl Strategy<Value = String> {
        (
            proptest::collection::vec("[a-z\"'\\\\ \t\u{e9}#]{0,4}", 1..3),
            any::<bool>(),
        )
            .prop_map(|(parts, single)| {
                let q = if single { '\'' } else { '"' };
                parts
                    .iter()
                    .map(|p| {
                        let mut s = String::from(q);
                        for c in p.chars() {
                            match c {
                                '\\' => s.push_str("\\\\"),
                                c if c == q => {
                                    s.push('\\');
                                    s.push(c);
                                }
                                c => s.push(c),
                            }
                        }
                        s.push(q);
                        s
                    })
                    .collect::<Vec<_>>()
                    .join("\u{1}")
            })
    }

    fn scalar() -> impl Strategy<Value = Node> {
        prop_oneof![
            Just("0".to_string()),
            Just("-\u{1}5".to_string()),
            Just("0x1F".to_string()),
            Just("010".to_string()),
            Just("1.5".to_string()),
            Just("1e3".to_string()),
            Just("-inf".to_string()),
            Just("TYPE_FP32".to_string()),
            Just("True".to_string()),
            string_literal(),
        ]
        .prop_map(Node::Scalar)
    }

    fn node() -> impl Strategy<Value = Node> {
        let leaf = scalar();
        leaf.prop_recursive(4, 40, 5, |inner| {
            prop_oneof![
                (
                    proptest::collection::vec(("[a-z_]{1,6}", inner.clone()), 0..4),
                    any::<bool>()
                )
                    .prop_map(|(f, angle)| Node::Message(f, angle)),
                proptest::collection::vec(scalar(), 0..4).prop_map(Node::List),
                proptest::collection::vec(
                    proptest::collection::vec(("[a-z_]{1,6}", inner), 0..3)
                        .prop_map(|f| Node::Message(f, false)),
                    0..3
                )
                .prop_map(Node::List),
            ]
        })
    }

    /// Places where blanks may go (`\u{1}`, also inside scalars) become
    /// one of several kinds of blank, some with comments.
    struct Blanks {
        choices: Vec<u8>,
        next: usize,
        comments: usize,
    }

    impl Blanks {
        fn take(&mut self) -> String {
            let c = self.choices[self.next % self.choices.len()];
            self.next += 1;
            match c % 8 {
                0 | 1 => " ".into(),
                2 => "\n".into(),
                3 => "\n\n\n".into(),
                4 => "\r\n  ".into(),
                5 | 6 => {
                    self.comments += 1;
                    format!(" # c{} \n", self.comments)
                }
                _ => {
                    self.comments += 1;
                    format!("\n# c{}\n\n", self.comments)
                }
            }
        }
    }

    fn render_fields(fields: &[(String, Node)], b: &mut Blanks, out: &mut String) {
        for (i, (name, v)) in fields.iter().enumerate() {
            out.push_str(&b.take());
            out.push_str(name);
            let colon = matches!(v, Node::Scalar(_) | Node::List(_)) || i % 2 == 0;
            if colon {
                out.push_str(&b.take());
                out.push(':');
            }
            out.push_str(&b.take());
            render(v, b, out);
            if i % 3 == 1 {
                out.push_str(&b.take());
                out.push(if i % 2 == 0 { ',' } else { ';' });
            }
        }
        out.push_str(&b.take());
    }

    fn render(v: &Node, b: &mut Blanks, out: &mut String) {
        match v {
            Node::Scalar(s) => {
                for (i, part) in s.split('\u{1}').enumerate() {
                    if i > 0 {
                        out.push_str(&b.take());
                    }
                    out.push_str(part);
                }
            }
            Node::Message(fields, angle) => {
                out.push(if *angle { '<' } else { '{' });
                render_fields(fields, b, out);
                out.push(if *angle { '>' } else { '}' });
            }
            Node::List(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    out.push_str(&b.take());
                    if i > 0 {
                        out.push(',');
                        out.push_str(&b.take());
                    }
                    render(item, b, out);
                }
                out.push_str(&b.take());
                out.push(']');
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn generated_documents_keep_fields_and_comments(
            fields in proptest::collection::vec(("[a-z_]{1,6}", node()), 0..5),
            choices in proptest::collection::vec(any::<u8>(), 1..64),
        ) {
            let mut blanks = Blanks { choices, next: 0, comments: 0 };
            let mut src = String::new();
            render_fields(&fields, &mut blanks, &mut src);
            let doc = pbtxt::parse(&src)
                .map_err(|e| TestCaseError::fail(format!("generated text does not parse: {}\n{src}", e.message)))?;
            let out = printer::print_document(&src, &doc);
            let doc2 = pbtxt::parse(&out)
                .map_err(|e| TestCaseError::fail(format!("{}\n--- in\n{src}\n--- out\n{out}", e.message)))?;
            prop_assert!(printer::same_tree(&src, &doc, &out, &doc2), "tree changed\n--- in\n{}\n--- out\n{}", src, out);
            let again = printer::print_document(&out, &doc2);
            prop_assert_eq!(&again, &out, "not idempotent; input:\n{}", src);
            prop_assert_eq!(comment_texts(&src), comment_texts(&out), "comments; output:\n{}", out);
            prop_assert!(!out.contains('\r'));
            prop_assert!(!out.contains("\n\n\n"), "more than one blank line:\n{}", out);
        }
    }

    use proptest::test_runner::TestCaseError;
}
