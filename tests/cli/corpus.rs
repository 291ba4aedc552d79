//! The syntax/schema verdict against protobuf's own text parser, which is
//! what Triton uses: a file that parser accepts as a ModelConfig must give no
//! `syntax`/`schema` error, a file it refuses at least one.
//!
//! Two sources: the real-world corpus in `../shared/corpus` (protoc's verdict
//! recorded in its manifest) and the hand-written cases in
//! `testdata/pbtxt/{valid,invalid}`, which are run through `protoc` here.

use crate::common;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use tritonctl::config::ParsedConfig;
use tritonctl::diagnostics::{Category, Severity};

/// The first syntax or schema error, if any: our verdict in protoc's terms.
fn refusal(bytes: Vec<u8>) -> Option<String> {
    let parsed = ParsedConfig::from_bytes(bytes);
    parsed
        .diagnostics
        .iter()
        .find(|d| {
            d.severity == Severity::Error
                && matches!(d.category(), Category::Syntax | Category::Schema)
        })
        .map(|d| format!("{} {}", d.code(), d.message))
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// Whether a missing oracle must fail the test rather than skip it.
fn oracle_required() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
        || std::env::var("TRITONCTL_REQUIRE_SHARED").is_ok_and(|v| v == "1")
}

/// One file of the shared corpus and protoc's verdict on it.
pub(crate) struct CorpusFile {
    /// The path as the manifest gives it (relative to `corpus/`).
    pub name: String,
    pub path: PathBuf,
    pub protoc_accepts: bool,
}

/// Every file listed in `<shared>/corpus/manifest.tsv`.
pub(crate) fn corpus_files(shared: &Path) -> Vec<CorpusFile> {
    let corpus = shared.join("corpus");
    let manifest = std::fs::read_to_string(corpus.join("manifest.tsv"))
        .expect("corpus/manifest.tsv is readable");
    let mut lines = manifest.lines();
    let header: Vec<&str> = lines.next().expect("manifest header").split('\t').collect();
    let column = |name: &str| {
        header
            .iter()
            .position(|c| *c == name)
            .unwrap_or_else(|| panic!("manifest has no column {name:?}"))
    };
    let (file_col, oracle_col) = (column("file"), column("oracle"));
    lines
        .filter(|l| !l.is_empty())
        .map(|line| {
            let cols: Vec<&str> = line.split('\t').collect();
            let name = cols[file_col].to_string();
            let protoc_accepts = match cols[oracle_col] {
                "ok" => true,
                "error" => false,
                other => panic!("{name}: unknown oracle verdict {other:?}"),
            };
            CorpusFile {
                path: corpus.join(&name),
                name,
                protoc_accepts,
            }
        })
        .collect()
}

#[test]
fn corpus_verdicts_match_protoc() {
    let Some(shared) = common::shared_dir() else {
        return;
    };
    let (mut accepted, mut refused) = (0usize, 0usize);
    let mut failures = Vec::new();
    for file in corpus_files(&shared) {
        let name = &file.name;
        match (file.protoc_accepts, refusal(read(&file.path))) {
            (true, None) => accepted += 1,
            (false, Some(_)) => refused += 1,
            (true, Some(msg)) => {
                failures.push(format!("{name}: protoc accepts it, we refuse: {msg}"))
            }
            (false, None) => failures.push(format!("{name}: protoc refuses it, we accept it")),
        }
    }
    let total = accepted + refused + failures.len();
    eprintln!(
        "corpus: {total} files; agree with protoc on {} ({accepted} accepted, {refused} refused); disagree on {}",
        accepted + refused,
        failures.len()
    );
    assert!(
        accepted > 0 && refused > 0,
        "the corpus should hold both accepted and refused files"
    );
    assert!(
        failures.is_empty(),
        "{} of {total} corpus files disagree with protoc:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// `protoc --encode` against the shared ModelConfig descriptor set.
struct Protoc {
    descriptor_set: PathBuf,
}

impl Protoc {
    /// `None` (after saying why) when protoc or the descriptor set is absent
    /// and the oracle is not required.
    fn find() -> Option<Protoc> {
        let shared = common::shared_dir()?;
        let descriptor_set = shared.join("corpus").join("model_config.desc");
        assert!(
            descriptor_set.is_file(),
            "{} is missing",
            descriptor_set.display()
        );
        let found = Command::new("protoc")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            assert!(
                !oracle_required(),
                "protoc is required (CI=true or TRITONCTL_REQUIRE_SHARED=1) but is not on PATH; \
                 install protobuf-compiler"
            );
            eprintln!("skipped comparison with protoc: protoc is not on PATH (apt-get install protobuf-compiler)");
            return None;
        }
        Some(Protoc { descriptor_set })
    }

    /// `Err(first line of protoc's complaint)` when protoc refuses the file.
    fn verdict(&self, file: &Path) -> Result<(), String> {
        let input = std::fs::File::open(file).expect("case file opens");
        let out = Command::new("protoc")
            .arg(format!(
                "--descriptor_set_in={}",
                self.descriptor_set.display()
            ))
            .arg("--encode=inference.ModelConfig")
            .arg("model_config.proto")
            .stdin(input)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .expect("protoc runs");
        if out.status.success() {
            Ok(())
        } else {
            let err = String::from_utf8_lossy(&out.stderr);
            Err(err.lines().next().unwrap_or("").to_string())
        }
    }
}

/// The hand-written cases in `testdata/pbtxt/<dir>/*.pbtxt`, sorted.
pub(crate) fn cases(dir: &str) -> Vec<PathBuf> {
    let dir = common::crate_root().join("testdata/pbtxt").join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "pbtxt"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no cases in {}", dir.display());
    files
}

#[test]
fn handwritten_cases_match_protoc() {
    let protoc = Protoc::find();
    let mut failures = Vec::new();
    let mut checked = 0;
    for (dir, should_accept) in [("valid", true), ("invalid", false)] {
        for file in cases(dir) {
            let name = format!("{dir}/{}", file.file_name().unwrap().to_string_lossy());
            checked += 1;
            let ours = refusal(read(&file));
            if let Some(protoc) = &protoc {
                let theirs = protoc.verdict(&file);
                if theirs.is_ok() != should_accept {
                    failures.push(format!(
                        "{name}: protoc {} it, so it belongs in the other directory ({})",
                        if theirs.is_ok() { "accepts" } else { "refuses" },
                        theirs.err().unwrap_or_default()
                    ));
                    continue;
                }
            }
            match (should_accept, ours) {
                (true, Some(msg)) => {
                    failures.push(format!("{name}: protoc accepts it, we refuse: {msg}"))
                }
                (false, None) => failures.push(format!("{name}: protoc refuses it, we accept it")),
                _ => {}
            }
        }
    }
    eprintln!(
        "hand-written cases: {checked} checked{}, {} disagree",
        if protoc.is_some() {
            " against protoc"
        } else {
            " against their directory only"
        },
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
