//! The two text-format parsers against each other: `pbtxt::parse` runs a
//! hand-written parser and falls back to the pest grammar only when that
//! one refuses the text, so the two must accept exactly the same documents
//! and build exactly the same trees (spans, scalar kinds, radixes).
//!
//! Inputs: every corpus file (when `../shared` is there), every hand-written
//! case in `testdata/pbtxt/{valid,invalid}` and every prefix of the valid
//! ones, token soup from the grammar's tokens, and corpus files and cases
//! damaged in small ways.

use crate::{common, corpus};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::TestCaseError;
use std::sync::OnceLock;
use tritonctl::pbtxt;

/// Same verdict and same tree from both parsers; `Ok(true)` if accepted.
fn agree(src: &str) -> Result<bool, String> {
    let fast = pbtxt::parse_fast(src);
    let pest = pbtxt::parse_with_pest(src);
    match (fast, pest) {
        (Some(a), Ok(b)) if a == b => {
            // What callers get is that tree too.
            match pbtxt::parse(src) {
                Ok(c) if c == a => Ok(true),
                _ => Err("pbtxt::parse does not return the fast parser's tree".into()),
            }
        }
        (Some(a), Ok(b)) => Err(format!("trees differ\nfast: {a:?}\npest: {b:?}")),
        (None, Err(e)) => {
            // And the diagnostic is pest's.
            match pbtxt::parse(src) {
                Err(d) if d == e => Ok(false),
                _ => Err("pbtxt::parse does not return pest's diagnostic".into()),
            }
        }
        (Some(_), Err(e)) => Err(format!(
            "the fast parser accepts, pest refuses: {} {}",
            e.code(),
            e.message
        )),
        (None, Ok(_)) => Err("the fast parser refuses, pest accepts".into()),
    }
}

fn text(bytes: &[u8]) -> String {
    tritonctl::text::decode_source(bytes.to_vec()).0
}

fn case_files() -> Vec<(String, Vec<u8>)> {
    ["valid", "invalid"]
        .into_iter()
        .flat_map(corpus::cases)
        .map(|p| {
            let name = p.display().to_string();
            let bytes = std::fs::read(&p).expect("case file");
            (name, bytes)
        })
        .collect()
}

/// The hand-written cases and, when present, the corpus.
fn seeds() -> &'static [Vec<u8>] {
    static SEEDS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let mut seeds: Vec<Vec<u8>> = case_files().into_iter().map(|(_, b)| b).collect();
        if let Some(shared) = common::shared_dir() {
            for f in corpus::corpus_files(&shared) {
                seeds.push(std::fs::read(&f.path).expect("corpus file"));
            }
        }
        seeds
    })
}

#[test]
fn corpus_files_agree() {
    let Some(shared) = common::shared_dir() else {
        return;
    };
    let (mut accepted, mut refused, mut failures) = (0, 0, Vec::new());
    for f in corpus::corpus_files(&shared) {
        let bytes = std::fs::read(&f.path).expect("corpus file");
        match agree(&text(&bytes)) {
            Ok(true) => accepted += 1,
            // What protoc accepts is well-formed text.
            Ok(false) if f.protoc_accepts => failures.push(format!(
                "{}: protoc accepts it, both parsers refuse",
                f.name
            )),
            Ok(false) => refused += 1,
            Err(e) => failures.push(format!("{}: {e}", f.name)),
        }
    }
    eprintln!("corpus: both parsers accept {accepted} files and refuse {refused}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(accepted > 0 && refused > 0, "the corpus has both kinds");
}

#[test]
fn hand_written_cases_and_their_prefixes_agree() {
    let mut failures = Vec::new();
    let mut accepted = 0;
    for (name, bytes) in case_files() {
        let src = text(&bytes);
        match agree(&src) {
            Ok(ok) => accepted += usize::from(ok),
            Err(e) => failures.push(format!("{name}: {e}")),
        }
        if !name.contains("invalid") {
            for end in (0..src.len()).filter(|&i| src.is_char_boundary(i)) {
                if let Err(e) = agree(&src[..end]) {
                    failures.push(format!("{name} cut at byte {end}: {e}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(accepted >= 44, "every valid case parses ({accepted})");
}

/// The grammar's tokens, near misses and bytes that break them.
const TOKENS: &[&str] = &[
    "name",
    "dims",
    "input",
    "_x",
    "TYPE_FP32",
    "inf",
    "nan",
    "true",
    " ",
    "\n",
    "\t",
    "\r\n",
    "\u{0b}",
    "\u{0c}",
    "# comment\n",
    "#",
    ":",
    ",",
    ";",
    "{",
    "}",
    "<",
    ">",
    "[",
    "]",
    "-",
    "+",
    "0",
    "1",
    "42",
    "07",
    "08",
    "0x1F",
    "0x",
    "1.5",
    ".5",
    "1.",
    "1e5",
    "1e",
    "E-3",
    "2f",
    "F",
    ".",
    "\"",
    "'",
    "\"str\"",
    "'str'",
    "\\",
    "\\x4",
    "\\x41",
    "\\101",
    "\\u00e9",
    "\\U0001F600",
    "\\n",
    "\\'",
    "\\q",
    "[ext.name]",
    "[type.googleapis.com/a.B]",
    "/",
    "é",
    "\u{feff}",
    "\u{0}",
    "//",
];

fn token_soup() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(TOKENS), 0..60).prop_map(|v| v.concat())
}

/// Blanks and comments, or nothing.
fn gap() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "", "", " ", " ", "\n", "\t", " # c\n", "#\n", "\r\n  ",
    ])
}

/// Nested documents in the grammar's shape (messages, lists, adjacent
/// strings, signed numbers, extension names, separators), each piece now
/// and then replaced by a random token: mostly well-formed, some not.
fn nested_document() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        8 => prop::sample::select(vec![
            "1", "-1", "- 2", "-\n3", "0", "0x10", "0X1f", "010", "1.5", "1.5e3", ".5f", "1e-3",
            "2F", "1.", "-inf", "nan", "TYPE_FP32", "true", "\"s\"", "'t'", "\"s\" 't'",
            "\"a\\n\\x41\\101\\u00e9\"", "\"\"\n''",
        ])
        .prop_map(String::from),
        1 => prop::sample::select(TOKENS).prop_map(String::from),
    ];
    let value = leaf.prop_recursive(4, 48, 5, |inner| {
        let name = prop::sample::select(vec!["a", "input", "dims", "[e.x]", "[ a.b/c.D ]"]);
        let colon = prop::sample::select(vec![": ", ":", " ", "", " : "]);
        let sep = prop::sample::select(vec!["", "", ",", ";", " ,"]);
        let field = (name, gap(), colon, inner.clone(), gap(), sep)
            .prop_map(|(n, g, c, v, g2, s)| format!("{n}{g}{c}{v}{g2}{s}"));
        let brackets = prop::sample::select(vec![("{", "}"), ("<", ">"), ("{", ">")]);
        prop_oneof![
            3 => (brackets, gap(), prop::collection::vec((field, gap()), 0..4))
                .prop_map(|((open, close), g, fs)| {
                    let body: String = fs.into_iter().map(|(f, g)| f + g).collect();
                    format!("{open}{g}{body}{close}")
                }),
            2 => (
                gap(),
                prop::collection::vec((inner, gap()), 0..4),
                prop::sample::select(vec![",", ", ", " ,", ",,", ";"]),
                prop::sample::select(vec!["]", "]", "]", "]", ";", "}", ">"]),
            )
                .prop_map(|(g, items, comma, close)| {
                    let items: Vec<String> = items.into_iter().map(|(v, g)| v + g).collect();
                    format!("[{g}{}{close}", items.join(comma))
                }),
        ]
    });
    let name = prop::sample::select(vec!["name", "input", "[e.x]", "x_1"]);
    let colon = prop::sample::select(vec![": ", ":", " "]);
    let sep = prop::sample::select(vec!["", "\n", ",\n", ";", " # c\n"]);
    prop::collection::vec((gap(), name, colon, value, sep), 0..6).prop_map(|fs| {
        fs.into_iter()
            .map(|(g, n, c, v, s)| format!("{g}{n}{c}{v}{s}"))
            .collect()
    })
}

/// One small change to a file.
#[derive(Debug, Clone)]
enum Mutation {
    Truncate(Index),
    Flip(Index, u8),
    Insert(Index, &'static str),
    Delete(Index),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<Index>().prop_map(Mutation::Truncate),
        (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Mutation::Flip(i, b)),
        (any::<Index>(), prop::sample::select(TOKENS)).prop_map(|(i, t)| Mutation::Insert(i, t)),
        any::<Index>().prop_map(Mutation::Delete),
    ]
}

fn mutate(seed: &[u8], mutations: &[Mutation]) -> Vec<u8> {
    let mut b = seed.to_vec();
    for m in mutations {
        match m {
            Mutation::Truncate(i) => b.truncate(i.index(b.len() + 1)),
            Mutation::Flip(i, x) if !b.is_empty() => {
                let at = i.index(b.len());
                b[at] ^= (*x).max(1);
            }
            Mutation::Insert(i, t) => {
                let at = i.index(b.len() + 1);
                b.splice(at..at, t.bytes());
            }
            Mutation::Delete(i) if !b.is_empty() => {
                b.remove(i.index(b.len()));
            }
            _ => {}
        }
    }
    b
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn token_soup_agrees(src in token_soup()) {
        agree(&src).map_err(|e| TestCaseError::fail(format!("{src:?}: {e}")))?;
    }

    #[test]
    fn nested_documents_agree(src in nested_document()) {
        agree(&src).map_err(|e| TestCaseError::fail(format!("{src:?}: {e}")))?;
    }

    #[test]
    fn damaged_files_agree(
        i in any::<Index>(),
        ms in prop::collection::vec(mutation(), 1..4),
    ) {
        let seeds = seeds();
        let src = text(&mutate(&seeds[i.index(seeds.len())], &ms));
        agree(&src).map_err(|e| TestCaseError::fail(format!("{src:?}: {e}")))?;
    }
}

/// Every `*.pbtxt` under `dir`, sorted.
fn pbtxt_files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let p = e.expect("directory entry").path();
            if p.is_dir() {
                todo.push(p);
            } else if p.extension().is_some_and(|x| x == "pbtxt") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// `ParsedConfig::parse` turns the bound message into the typed config
/// with its own wire encoder; the result must be what prost-reflect's
/// `transcode_to` gives, on every config that binds cleanly (the corpus,
/// Triton's conformance configs and the hand-written cases between them
/// use maps, oneofs, enums, packed and unpacked lists and every scalar type
/// of the schema).
#[test]
fn typed_config_matches_transcode() {
    use tritonctl::config::ParsedConfig;
    use tritonctl::schema::{self, inference::ModelConfig};
    let mut files: Vec<std::path::PathBuf> = ["valid", "invalid"]
        .into_iter()
        .flat_map(corpus::cases)
        .collect();
    if let Some(shared) = common::shared_dir() {
        files.extend(corpus::corpus_files(&shared).into_iter().map(|f| f.path));
        files.extend(pbtxt_files_under(&shared.join("conformance")));
    }
    let (mut typed, mut failures) = (0, Vec::new());
    for path in &files {
        let src = text(&std::fs::read(path).expect("config file"));
        let parsed = ParsedConfig::parse(src.clone());
        // `validate`'s path: clean configs bound from the static tables
        let checked = ParsedConfig::parse_checked(src.clone());
        let reference = pbtxt::parse(&src).ok().and_then(|doc| {
            let (msg, diags) = schema::bind::bind(&src, &doc, &schema::model_config());
            diags
                .is_empty()
                .then(|| msg.transcode_to::<ModelConfig>().ok())
                .flatten()
        });
        typed += usize::from(reference.is_some());
        // Compared encoded: NaN is not equal to itself, its bits are (and
        // the schema's maps are BTreeMaps, encoded in key order).
        let bytes = |c: &Option<ModelConfig>| c.as_ref().map(prost::Message::encode_to_vec);
        if bytes(&parsed.config) != bytes(&reference) {
            failures.push(format!(
                "{}:\nours: {:?}\ntranscode_to: {reference:?}",
                path.display(),
                parsed.config
            ));
        }
        if bytes(&checked.config) != bytes(&reference) {
            failures.push(format!(
                "{} (static tables):\nours: {:?}\ntranscode_to: {reference:?}",
                path.display(),
                checked.config
            ));
        }
    }
    eprintln!("{typed} of {} configs bind cleanly", files.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(typed > 0, "some configs bind cleanly");
}
