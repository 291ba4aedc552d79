//! Robustness: whatever bytes come in, parsing, binding and checking never
//! panic, every diagnostic points inside the text, and the binary exits with
//! 0, 1 or 2 and a JSON report, never with a panic.
//!
//! Inputs: random bytes, real configs (the corpus when `../shared` is there,
//! plus the hand-written valid cases) damaged in small ways, every prefix of
//! the hand-written cases, absurd nesting, and (ignored by default; run by
//! `scripts/test`) a 100 MB file.

use crate::{common, corpus};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::TestCaseError;
use std::sync::OnceLock;
use tritonctl::diagnostics::{Category, Diagnostic, Severity};
use tritonctl::validate::{self, ValidateOptions};

/// Real configs to damage: the hand-written valid cases and, when present,
/// the corpus.
fn seeds() -> &'static [Vec<u8>] {
    static SEEDS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let mut seeds: Vec<Vec<u8>> = valid_cases().into_iter().map(|(_, b)| b).collect();
        if let Some(shared) = common::shared_dir() {
            for f in corpus::corpus_files(&shared) {
                seeds.push(std::fs::read(&f.path).expect("corpus file"));
            }
        }
        seeds
    })
}

/// `testdata/pbtxt/valid/*.pbtxt`: between them they use every construct of
/// the format.
fn valid_cases() -> Vec<(String, Vec<u8>)> {
    corpus::cases("valid")
        .into_iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).expect("case file"))
        })
        .collect()
}

fn spans_inside(src: &str, diagnostics: &[Diagnostic]) -> Result<(), String> {
    for d in diagnostics {
        let spans = d.span.iter().chain(d.labels.iter().map(|l| &l.span));
        for s in spans {
            let (start, end) = (s.start as usize, s.end as usize);
            if start > end
                || end > src.len()
                || !src.is_char_boundary(start)
                || !src.is_char_boundary(end)
            {
                return Err(format!(
                    "{} {:?}: span {s:?} is not inside the {}-byte text",
                    d.code(),
                    d.message,
                    src.len()
                ));
            }
        }
    }
    Ok(())
}

/// Parse, bind and check `bytes` the way `validate -` does; any panic fails
/// the test by itself.
fn library_check(bytes: &[u8]) -> Result<(), String> {
    let parsed = tritonctl::config::ParsedConfig::from_bytes(bytes.to_vec());
    spans_inside(&parsed.src, &parsed.diagnostics)?;
    let refused = parsed.diagnostics.iter().any(|d| {
        d.severity == Severity::Error && matches!(d.category(), Category::Syntax | Category::Schema)
    });
    if parsed.doc.is_none() && !refused {
        return Err("no tree but no syntax error either".into());
    }
    if parsed.config.is_some() == refused {
        return Err(format!(
            "typed config present: {}, syntax/schema error: {refused}",
            parsed.config.is_some()
        ));
    }
    let report = validate::validate_stdin(bytes.to_vec(), &ValidateOptions::default());
    for f in &report.files {
        spans_inside(&f.src, &f.diagnostics)?;
    }
    Ok(())
}

/// Runs `tritonctl validate - --format json` (or on `path`) and checks the
/// process: exit 0, 1 or 2, no panic, and for 0/1 a JSON report whose error
/// count agrees with the exit code.
fn binary_check(input: BinaryInput) -> Result<(), String> {
    let mut cmd = common::tritonctl();
    // Above the default --max-file-bytes: the large-file test's 100 MB.
    cmd.args(["validate", "--format", "json", "--max-file-bytes", "128M"]);
    match input {
        BinaryInput::Stdin(bytes) => {
            cmd.arg("-").stdin(bytes);
        }
        BinaryInput::Path(p) => {
            cmd.arg(p);
        }
    }
    // A panic, a signal or non-UTF-8 output fail inside `run`.
    let out = cmd.run();
    let stderr = &out.stderr;
    if stderr.contains("panicked") || stderr.contains("internal error") {
        return Err(format!("tritonctl panicked:\n{stderr}"));
    }
    let code = Some(out.code);
    match code {
        Some(0) | Some(1) => {
            let json: serde_json::Value = serde_json::from_str(&out.stdout).map_err(|e| {
                format!(
                    "exit {code:?} but stdout is not one JSON document ({e}): {:?}",
                    out.stdout.chars().take(300).collect::<String>()
                )
            })?;
            let errors = json["summary"]["errors"]
                .as_u64()
                .ok_or("no summary.errors in the JSON report")?;
            if (errors > 0) != (code == Some(1)) {
                return Err(format!("exit {code:?} with summary.errors = {errors}"));
            }
            Ok(())
        }
        Some(2) => Ok(()),
        _ => Err(format!("exit status {code:?}; stderr:\n{stderr}")),
    }
}

enum BinaryInput {
    Stdin(Vec<u8>),
    Path(std::path::PathBuf),
}

/// One small change to a file.
#[derive(Debug, Clone)]
enum Mutation {
    Truncate(Index),
    Flip(Index, u8),
    Insert(Index, u8),
    Delete(Index),
}

/// Bytes that open, close or escape something in the format.
const SPECIAL: &[u8] = b"{}[]<>\"'#\\:,;-\n\r\x00\xff";

fn mutation() -> impl Strategy<Value = Mutation> {
    let special = prop::sample::select(SPECIAL);
    prop_oneof![
        any::<Index>().prop_map(Mutation::Truncate),
        (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Mutation::Flip(i, b)),
        (any::<Index>(), special.clone()).prop_map(|(i, b)| Mutation::Insert(i, b)),
        (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Mutation::Insert(i, b)),
        any::<Index>().prop_map(Mutation::Delete),
    ]
}

fn mutate(seed: &[u8], mutations: &[Mutation]) -> Vec<u8> {
    let mut b = seed.to_vec();
    for m in mutations {
        match *m {
            Mutation::Truncate(i) => b.truncate(i.index(b.len() + 1)),
            Mutation::Flip(i, x) if !b.is_empty() => {
                let at = i.index(b.len());
                b[at] ^= x.max(1);
            }
            Mutation::Insert(i, x) => b.insert(i.index(b.len() + 1), x),
            Mutation::Delete(i) if !b.is_empty() => {
                b.remove(i.index(b.len()));
            }
            _ => {}
        }
    }
    b
}

fn mutated_seed() -> impl Strategy<Value = Vec<u8>> {
    (any::<Index>(), prop::collection::vec(mutation(), 1..4)).prop_map(|(i, ms)| {
        let seeds = seeds();
        mutate(&seeds[i.index(seeds.len())], &ms)
    })
}

/// Random bytes, biased towards the format's own punctuation and words.
fn random_text() -> impl Strategy<Value = Vec<u8>> {
    let token = prop_oneof![
        any::<u8>().prop_map(|b| vec![b]),
        prop::sample::select(SPECIAL).prop_map(|b| vec![b]),
        prop::sample::select(vec![
            "input",
            "dims",
            "name",
            "max_batch_size",
            "TYPE_FP32",
            "-1",
            "0x",
            "1e",
            "inf",
            " ",
            "\"",
            "{",
            "}",
            "[",
            "]",
            ": ",
            "#",
            "\\x",
            "\\u",
            "\u{feff}",
            "é",
        ])
        .prop_map(|s| s.as_bytes().to_vec()),
    ];
    prop::collection::vec(token, 0..200).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn library_random_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        library_check(&bytes).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn library_random_text(bytes in random_text()) {
        library_check(&bytes).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn library_mutated_configs(bytes in mutated_seed()) {
        library_check(&bytes).map_err(TestCaseError::fail)?;
    }
}

proptest! {
    // Each case starts a process: fewer of them.
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn binary_random_text(bytes in random_text()) {
        binary_check(BinaryInput::Stdin(bytes)).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn binary_mutated_configs(bytes in mutated_seed()) {
        binary_check(BinaryInput::Stdin(bytes)).map_err(TestCaseError::fail)?;
    }
}

/// Every prefix of every hand-written valid case: a truncation after each
/// kind of token and inside each (strings, escapes, comments, numbers,
/// multi-byte characters, CRLF).
#[test]
fn truncation_at_every_position() {
    let mut failures = Vec::new();
    for (name, bytes) in valid_cases() {
        for end in 0..=bytes.len() {
            if let Err(e) = library_check(&bytes[..end]) {
                failures.push(format!("{name} cut at byte {end}: {e}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// 10,000 levels of nesting, by every kind of bracket: refused with a
/// diagnostic, not a stack overflow (which would abort the process).
#[test]
fn deep_nesting() {
    const DEPTH: usize = 10_000;
    let texts = [
        ("a {", "a {".repeat(DEPTH)),
        ("a <", "a <".repeat(DEPTH)),
        (
            "balanced a { }",
            format!("{}{}", "a {".repeat(DEPTH), "}".repeat(DEPTH)),
        ),
        ("[", format!("a: {}", "[".repeat(DEPTH))),
        (
            "balanced [ ]",
            format!("a: {}{}", "[".repeat(DEPTH), "]".repeat(DEPTH)),
        ),
        ("[ {", format!("input {}", "[ { a ".repeat(DEPTH))),
    ];
    for (what, text) in texts {
        library_check(text.as_bytes()).unwrap_or_else(|e| panic!("{what}: {e}"));
        let parsed = tritonctl::config::ParsedConfig::from_bytes(text.clone().into_bytes());
        assert!(
            parsed
                .diagnostics
                .iter()
                .any(|d| d.severity == Severity::Error),
            "{what}: 10,000 levels must be refused"
        );
        binary_check(BinaryInput::Stdin(text.into_bytes()))
            .unwrap_or_else(|e| panic!("{what}: {e}"));
    }
}

/// A file being written, and how many bytes so far.
struct Counted<W> {
    out: W,
    written: usize,
}

impl<W: std::io::Write> Counted<W> {
    fn put(&mut self, s: &str) {
        self.out.write_all(s.as_bytes()).expect("write");
        self.written += s.len();
    }
}

/// A 100 MB config (long comments, a long string, a long list, many
/// entries) through the binary once. Ignored by default because it writes 100 MB;
/// `scripts/test` runs it.
#[test]
#[ignore = "writes a 100 MB file; scripts/test runs it with --ignored"]
fn large_file_through_the_binary() {
    use std::io::Write;
    const SIZE: usize = 100 << 20;
    let dir = tempfile::tempdir().expect("temp dir");
    let model = dir.path().join("large");
    std::fs::create_dir(&model).unwrap();
    let path = model.join("config.pbtxt");
    let mut f = Counted {
        out: std::io::BufWriter::new(std::fs::File::create(&path).unwrap()),
        written: 0,
    };
    f.put("name: \"large\"\nbackend: \"onnxruntime\"\nmax_batch_size: 8\n");
    // Most of the bytes go where the parser is fastest (comments, then one
    // long string) so that the test stays quick; every kind of content still
    // comes in millions of bytes: a list of 1.7 million items and 80,000
    // separate entries.
    let comment = format!("# {}\n", "-".repeat(78));
    f.put(&comment.repeat(SIZE * 6 / 10 / comment.len()));
    f.put("parameters { key: \"blob\" value { string_value: \"");
    f.put(&"0123456789abcdef".repeat(SIZE * 3 / 10 / 16));
    f.put("\" } }\n");
    f.put("input { name: \"WIDE\" data_type: TYPE_FP32 dims: [ 1");
    f.put(&", 1".repeat(SIZE / 20 / 3));
    f.put(" ] }\n");
    let mut i = 0;
    while f.written < SIZE {
        f.put(&format!(
            "output {{ name: \"OUTPUT_{i}\" data_type: TYPE_FP32 dims: [ -1, 16 ] }}\n"
        ));
        i += 1;
    }
    f.out.flush().unwrap();
    drop(f);
    let started = std::time::Instant::now();
    binary_check(BinaryInput::Path(path)).unwrap_or_else(|e| panic!("100 MB file: {e}"));
    eprintln!("100 MB file validated in {:.1?}", started.elapsed());
}
