//! Business Logic Scripting (BLS): Python models that call other models of
//! the repository with `pb_utils.InferenceRequest(model_name=...)`.
//!
//! Triton loads a Python model without looking at what its `model.py`
//! calls; a wrong target only shows when the first request runs the call.
//! This module reads `model.py` statically (no Python needed): a small
//! tokenizer that knows Python's comments, string literals (prefixes,
//! triple quotes, escapes) and brackets, then finds each
//! `InferenceRequest(` call and reads its keyword arguments. Model names
//! are understood when written as a string literal or as a module-level
//! constant assigned a string literal once (`TARGET = "encoder"`); any
//! other expression is left alone rather than guessed.
//!
//! The findings are warnings in the `model.py` file, with byte spans into
//! its text: a target that is not in the repository (W1101), a call to a
//! stateful model (one with `sequence_batching`) without a correlation ID
//! or sequence start/end flags (W1102), and a model that calls itself
//! (W1103).

use crate::diagnostics::FileReport;
use crate::diagnostics::Rule;
use crate::diagnostics::{Category, Diagnostic, Severity};
use crate::lint::registry::rule;
use crate::schema::inference::model_config::SchedulingChoice;
use crate::schema::inference::ModelConfig;
use crate::text::Span;
use std::collections::HashMap;
use std::path::Path;

const fn rule(
    code: &'static str,
    name: &'static str,
    summary: &'static str,
    docs: &'static str,
) -> Rule {
    Rule {
        code,
        name,
        category: Category::Repository,
        severity: Severity::Warning,
        summary,
        docs,
        triton_source: None,
    }
}

pub const RULES: &[Rule] = &[
    rule(
        "W1101",
        "bls-target-missing",
        "A Python model's BLS call names a model that is not in the repository",
        "A Python model can call other models of the server with `pb_utils.InferenceRequest(model_name=...)` (Business Logic Scripting). Triton does not check the name when it loads the calling model: the call fails at run time, on the first request that reaches it, with an error saying the model is unknown or not ready.\n\ntritonctl reads `model.py` in each version directory of models whose backend is `python`, and checks names written as string literals or as module-level constants (`TARGET = \"x\"`) against the model repository.\n\n```\nrequest = pb_utils.InferenceRequest(\n    model_name=\"encodr\",   # warning: no model 'encodr' in the repository\n    requested_output_names=[\"EMBEDDING\"],\n    inputs=[text],\n)\n```",
    ),
    rule(
        "W1102",
        "bls-stateful-without-sequence",
        "A BLS call to a stateful model without a correlation ID or sequence flags",
        "A model with `sequence_batching` keeps state per sequence: each request must carry a correlation ID naming its sequence, the first one the sequence start flag and the last one the sequence end flag. A BLS request built without `correlation_id=` is refused by the sequence batcher, and one without `flags=` (`pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START` / `..._END`) never starts or ends its sequence, so state leaks or requests are refused.\n\n```\nrequest = pb_utils.InferenceRequest(\n    model_name=\"tracker\",\n    requested_output_names=[\"STATE\"],\n    inputs=[frame],\n    correlation_id=stream_id,\n    flags=pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START,\n)\n```",
    ),
    rule(
        "W1103",
        "bls-calls-itself",
        "A Python model's BLS call targets the model itself",
        "A model that sends a BLS request to itself waits for a response that needs one of its own instances. With every instance busy in such a call the model deadlocks, and otherwise the recursion never ends. Call a different model, or do the work in a plain Python function.\n\n```\n# models/pipeline/1/model.py\npb_utils.InferenceRequest(model_name=\"pipeline\", ...)   # warning: calls itself\n```",
    ),
];

/// A model of the repository as the BLS checks see it.
pub struct ModelInfo<'a> {
    /// Triton's name for the model.
    pub name: &'a str,
    pub dir: &'a Path,
    /// The directory being validated, outside which nothing is read
    /// (`files::read_in`); `None`: anywhere.
    pub root: Option<&'a Path>,
    /// The config after Triton's fill-in, when it could be read.
    pub cfg: Option<&'a ModelConfig>,
}

/// Whether a model uses the Python backend.
pub fn is_python(cfg: &ModelConfig) -> bool {
    cfg.backend == "python"
}

/// Whether a model keeps per-sequence state.
pub fn is_stateful(cfg: &ModelConfig) -> bool {
    matches!(
        cfg.scheduling_choice,
        Some(SchedulingChoice::SequenceBatching(_))
    )
}

/// The Python files of a model: `<dir>/<version>/model.py` (or the config's
/// `default_model_filename` when it names a `.py` file) for each numeric
/// version directory, in version order.
pub fn model_files(dir: &Path, cfg: &ModelConfig) -> Vec<std::path::PathBuf> {
    let file = if cfg.default_model_filename.ends_with(".py")
        && !cfg.default_model_filename.contains(['/', '\\'])
    {
        cfg.default_model_filename.as_str()
    } else {
        "model.py"
    };
    let mut versions: Vec<(u64, std::path::PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let v = name.parse::<u64>().ok()?;
            let p = e.path().join(file);
            p.is_file().then_some((v, p))
        })
        .collect();
    versions.sort();
    versions.into_iter().map(|(_, p)| p).collect()
}

/// What the checks need to know about a target model: `None` when the
/// repository has no such model, else whether it is stateful (see
/// [`is_stateful`]; `false` when its config could not be read).
pub type Lookup<'l> = dyn FnMut(&str) -> Option<bool> + 'l;

/// The checks for one Python model, with `lookup` telling about the other
/// models of the repository. Returns one report per `model.py` that has
/// findings.
pub fn check_model(model: &ModelInfo<'_>, lookup: &mut Lookup<'_>) -> Vec<FileReport> {
    let Some(cfg) = model.cfg else {
        return Vec::new();
    };
    if !is_python(cfg) {
        return Vec::new();
    }
    let mut reports = Vec::new();
    for path in model_files(model.dir, cfg) {
        let read = match model.root {
            Some(root) => crate::files::read_in(&path, root),
            None => crate::files::read_file(&path),
        };
        let bytes = match read {
            Ok(bytes) => bytes,
            Err(e) => {
                if let Some(outside) = crate::files::outside_root(&e) {
                    reports.push(FileReport {
                        path: path.display().to_string(),
                        model: Some(model.name.to_string()),
                        src: String::new(),
                        diagnostics: vec![super::repository::symlink_leaves_repository(
                            &path, outside,
                        )],
                    });
                }
                continue;
            }
        };
        let src = String::from_utf8_lossy(&bytes).into_owned();
        let diagnostics = check_source(&src, model.name, lookup);
        if !diagnostics.is_empty() {
            reports.push(FileReport {
                path: path.display().to_string(),
                model: Some(model.name.to_string()),
                src,
                diagnostics,
            });
        }
    }
    reports
}

/// The findings for one `model.py` text of model `own_name`.
pub fn check_source(src: &str, own_name: &str, lookup: &mut Lookup<'_>) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for call in find_calls(src) {
        let Some(target) = &call.model_name else {
            continue;
        };
        let name = target.value.as_str();
        if name == own_name {
            out.push(
                Diagnostic::new(
                    rule!("W1103"),
                    format!("model '{own_name}' sends a BLS request to itself"),
                )
                .at(target.span)
                .label(call.callee, "request built here")
                .help("call a different model; a model calling itself deadlocks once all its instances wait on such calls"),
            );
            continue;
        }
        match lookup(name) {
            None => out.push(
                Diagnostic::new(
                    rule!("W1101"),
                    format!("BLS request to model '{name}', which is not in the model repository"),
                )
                .at(target.span)
                .label(call.callee, "request built here")
                .help(format!(
                    "add model '{name}' to the repository, or fix the name; the call fails at run time"
                )),
            ),
            Some(true) => {
                let mut missing = Vec::new();
                if !call.correlation_id {
                    missing.push("correlation_id=");
                }
                if !call.sequence_flags {
                    missing.push("flags= with TRITONSERVER_REQUEST_FLAG_SEQUENCE_START/END");
                }
                if !missing.is_empty() {
                    out.push(
                        Diagnostic::new(
                            rule!("W1102"),
                            format!(
                                "BLS request to stateful model '{name}' (it uses sequence_batching) without {}",
                                missing.join(" or ")
                            ),
                        )
                        .at(target.span)
                        .label(call.callee, "request built here")
                        .help("pass correlation_id= the sequence's ID, and flags=pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START on its first request and ..._SEQUENCE_END on its last"),
                    );
                }
            }
            Some(false) => {}
        }
    }
    out
}

/// A string value with its span in the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    pub value: String,
    pub span: Span,
}

/// One `InferenceRequest(...)` call as read from the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// The name `InferenceRequest` in the call.
    pub callee: Span,
    /// The target, when given as a literal or a known constant.
    pub model_name: Option<Located>,
    /// `correlation_id=` is given (and is not a literal 0 or empty string).
    pub correlation_id: bool,
    /// `flags=` is given and can carry the sequence start/end flags: it
    /// names them, is a non-zero number, or is an expression in a file that
    /// uses the flags somewhere.
    pub sequence_flags: bool,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Name(String),
    /// A string literal; `None` when its value is not a plain constant
    /// (f-strings with fields, byte strings).
    Str(Option<String>),
    Number(String),
    Punct(char),
    Newline,
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    span: Span,
}

fn span(start: usize, end: usize) -> Span {
    Span::new(start, end)
}

/// Splits Python source into tokens. `Newline` marks the end of a logical
/// line (not inside brackets, not after a backslash). Never fails: what it
/// does not understand becomes punctuation.
fn tokenize(src: &str) -> Vec<Token> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut depth: usize = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'\\' if b.get(i + 1) == Some(&b'\n') => i += 2,
            b'\\' if b.get(i + 1) == Some(&b'\r') && b.get(i + 2) == Some(&b'\n') => i += 3,
            b'\n' => {
                if depth == 0
                    && !matches!(
                        out.last(),
                        None | Some(Token {
                            tok: Tok::Newline,
                            ..
                        })
                    )
                {
                    out.push(Token {
                        tok: Tok::Newline,
                        span: span(i, i + 1),
                    });
                }
                i += 1;
            }
            b' ' | b'\t' | b'\r' | b'\x0c' => i += 1,
            b'"' | b'\'' => {
                let (tok, end) = string(src, i, i);
                out.push(Token {
                    tok,
                    span: span(i, end),
                });
                i = end;
            }
            b'0'..=b'9' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.')
                {
                    i += 1;
                }
                out.push(Token {
                    tok: Tok::Number(src[start..i].to_string()),
                    span: span(start, i),
                });
            }
            _ if c == b'_' || c.is_ascii_alphabetic() || c >= 0x80 => {
                let start = i;
                while i < b.len() && (b[i] == b'_' || b[i].is_ascii_alphanumeric() || b[i] >= 0x80)
                {
                    i += 1;
                }
                let word = &src[start..i];
                // A string prefix (r, b, f, u and their combinations).
                if i < b.len()
                    && (b[i] == b'"' || b[i] == b'\'')
                    && word.len() <= 2
                    && word.chars().all(|ch| "rRbBfFuU".contains(ch))
                {
                    let (tok, end) = string(src, start, i);
                    out.push(Token {
                        tok,
                        span: span(start, end),
                    });
                    i = end;
                } else {
                    out.push(Token {
                        tok: Tok::Name(word.to_string()),
                        span: span(start, i),
                    });
                }
            }
            _ => {
                // One character (multi-byte ones whole, so spans stay on
                // character boundaries).
                let ch = src[i..].chars().next().unwrap_or('\u{fffd}');
                let len = ch.len_utf8();
                match ch {
                    '(' | '[' | '{' => depth += 1,
                    ')' | ']' | '}' => depth = depth.saturating_sub(1),
                    _ => {}
                }
                out.push(Token {
                    tok: Tok::Punct(ch),
                    span: span(i, i + len),
                });
                i += len;
            }
        }
    }
    out
}

/// Reads the string literal whose prefix starts at `start` and whose
/// opening quote is at `quote`. Returns the token and the end offset.
fn string(src: &str, start: usize, quote: usize) -> (Tok, usize) {
    let b = src.as_bytes();
    let prefix = src[start..quote].to_ascii_lowercase();
    let raw = prefix.contains('r');
    let plain = !prefix.contains('b');
    let q = b[quote];
    let triple = b.get(quote + 1) == Some(&q) && b.get(quote + 2) == Some(&q);
    let open = if triple { 3 } else { 1 };
    let mut i = quote + open;
    let body_start = i;
    let mut body_end = b.len();
    let mut end = b.len();
    while i < b.len() {
        let c = b[i];
        if c == b'\\' {
            i += 2;
            continue;
        }
        if !triple && c == b'\n' {
            // An unterminated string ends at the line's end.
            body_end = i;
            end = i;
            break;
        }
        if c == q && (!triple || (b.get(i + 1) == Some(&q) && b.get(i + 2) == Some(&q))) {
            body_end = i;
            end = i + open;
            break;
        }
        i += 1;
    }
    let body_end = body_end.min(b.len());
    let end = end.min(b.len());
    // Skipping an escape may have stepped into a multi-byte character.
    let body = src.get(body_start..body_end).unwrap_or("");
    let value = if !plain || (prefix.contains('f') && body.contains('{')) {
        None
    } else if raw {
        Some(body.to_string())
    } else {
        Some(unescape(body))
    };
    let end = (end..=b.len())
        .find(|&e| src.is_char_boundary(e))
        .unwrap_or(b.len());
    (Tok::Str(value), end)
}

/// The common escapes of a Python string; others are kept as written.
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('\\') => out.push('\\'),
            Some('\'') => out.push('\''),
            Some('"') => out.push('"'),
            Some('\n') => {}
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// Module-level constants assigned exactly once a string literal:
/// `NAME = "x"` at the start of an unindented logical line.
fn constants(src: &str, toks: &[Token]) -> HashMap<String, Option<String>> {
    let mut out: HashMap<String, Option<String>> = HashMap::new();
    for (i, t) in toks.iter().enumerate() {
        let Tok::Name(name) = &t.tok else {
            continue;
        };
        let line_start = i == 0 || toks[i - 1].tok == Tok::Newline;
        let start = t.span.start as usize;
        let unindented = start == 0 || src.as_bytes().get(start - 1) == Some(&b'\n');
        if !line_start || !unindented || toks.get(i + 1).map(|t| &t.tok) != Some(&Tok::Punct('=')) {
            continue;
        }
        // `NAME = "x"` followed by the end of the line; anything else (or a
        // second assignment) makes the name unknown.
        let value = match (
            toks.get(i + 2).map(|t| &t.tok),
            toks.get(i + 3).map(|t| &t.tok),
        ) {
            (Some(Tok::Str(Some(v))), None | Some(Tok::Newline)) => Some(v.clone()),
            _ => None,
        };
        out.entry(name.clone())
            .and_modify(|v| *v = None)
            .or_insert(value);
    }
    out
}

/// Every `InferenceRequest(...)` call of a Python source.
pub fn find_calls(src: &str) -> Vec<Call> {
    let toks = tokenize(src);
    let consts = constants(src, &toks);
    let file_uses_flags = toks
        .iter()
        .any(|t| matches!(&t.tok, Tok::Name(n) if is_sequence_flag(n)));
    let mut calls = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        if t.tok != Tok::Name("InferenceRequest".into())
            || toks.get(i + 1).map(|t| &t.tok) != Some(&Tok::Punct('('))
            || (i > 0 && matches!(toks[i - 1].tok, Tok::Name(ref k) if k == "def" || k == "class"))
        {
            continue;
        }
        let args = arguments(&toks[i + 2..]);
        let mut call = Call {
            callee: t.span,
            model_name: None,
            correlation_id: false,
            sequence_flags: false,
        };
        for arg in args {
            let [Token {
                tok: Tok::Name(key),
                ..
            }, Token {
                tok: Tok::Punct('='),
                ..
            }, value @ ..] = arg
            else {
                continue;
            };
            match key.as_str() {
                "model_name" => call.model_name = model_name(value, &consts),
                "correlation_id" => call.correlation_id = !is_zero(value),
                "flags" => {
                    let names_flag = value
                        .iter()
                        .any(|t| matches!(&t.tok, Tok::Name(n) if is_sequence_flag(n)));
                    let number = matches!(
                        value,
                        [Token {
                            tok: Tok::Number(_),
                            ..
                        }]
                    );
                    call.sequence_flags = names_flag
                        || (number && !is_zero(value))
                        || (!number && !value.is_empty() && file_uses_flags);
                }
                _ => {}
            }
        }
        calls.push(call);
    }
    calls
}

fn is_sequence_flag(name: &str) -> bool {
    name.ends_with("REQUEST_FLAG_SEQUENCE_START") || name.ends_with("REQUEST_FLAG_SEQUENCE_END")
}

/// A literal 0 or empty string.
fn is_zero(value: &[Token]) -> bool {
    match value {
        [] => true,
        [Token {
            tok: Tok::Number(n),
            ..
        }] => n
            .trim_start_matches(['0', '_', 'x', 'X', 'o', 'O', 'b', 'B', '.'])
            .is_empty(),
        [Token {
            tok: Tok::Str(Some(s)),
            ..
        }] => s.is_empty(),
        _ => false,
    }
}

/// The target of a `model_name=` argument: a literal (adjacent literals
/// are joined, as Python does), or a module constant.
fn model_name(value: &[Token], consts: &HashMap<String, Option<String>>) -> Option<Located> {
    let first = value.first()?;
    let last = value.last()?;
    let whole = span(first.span.start as usize, last.span.end as usize);
    if let [Token {
        tok: Tok::Name(n), ..
    }] = value
    {
        let v = consts.get(n)?.clone()?;
        return Some(Located {
            value: v,
            span: whole,
        });
    }
    let mut s = String::new();
    for t in value {
        match &t.tok {
            Tok::Str(Some(part)) => s.push_str(part),
            _ => return None,
        }
    }
    Some(Located {
        value: s,
        span: whole,
    })
}

/// The arguments of a call whose opening bracket was just read: token
/// slices split at top-level commas, up to the matching `)` (or the end).
fn arguments(toks: &[Token]) -> Vec<&[Token]> {
    let mut args = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, t) in toks.iter().enumerate() {
        match t.tok {
            Tok::Punct('(' | '[' | '{') => depth += 1,
            Tok::Punct(')' | ']' | '}') if depth == 0 => {
                args.push(&toks[start..i]);
                return args.into_iter().filter(|a| !a.is_empty()).collect();
            }
            Tok::Punct(')' | ']' | '}') => depth -= 1,
            Tok::Punct(',') if depth == 0 => {
                args.push(&toks[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    args.push(&toks[start..]);
    args.into_iter().filter(|a| !a.is_empty()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::inference::ModelSequenceBatching;

    fn text(src: &str, s: Span) -> &str {
        &src[s.start as usize..s.end as usize]
    }

    fn names(src: &str) -> Vec<Option<String>> {
        find_calls(src)
            .into_iter()
            .map(|c| c.model_name.map(|m| m.value))
            .collect()
    }

    #[test]
    fn literal_names_in_single_and_multi_line_calls() {
        let src = "import triton_python_backend_utils as pb_utils\n\
                   r = pb_utils.InferenceRequest(model_name=\"a\", inputs=[x], requested_output_names=[\"o\"])\n\
                   r2 = pb_utils.InferenceRequest(\n    inputs=[f(x, (1, 2))],\n    # model_name=\"commented\"\n    model_name='b',\n)\n";
        assert_eq!(names(src), [Some("a".into()), Some("b".into())]);
        let calls = find_calls(src);
        let m = calls[1].model_name.as_ref().unwrap();
        assert_eq!(text(src, m.span), "'b'");
        assert_eq!(text(src, calls[0].callee), "InferenceRequest");
    }

    #[test]
    fn strings_with_brackets_comments_and_prefixes() {
        let src = "s = \"InferenceRequest(model_name='no')\"\n\
                   # InferenceRequest(model_name='no')\n\
                   t = '''\nInferenceRequest(model_name=\"no\")\n'''\n\
                   r = InferenceRequest(inputs=[g(\")(\")], model_name=r\"raw\\d\", flags=0)\n\
                   q = InferenceRequest(model_name=f\"m{i}\")\n\
                   p = InferenceRequest(model_name=\"con\" 'cat')\n";
        assert_eq!(
            names(src),
            [Some("raw\\d".into()), None, Some("concat".into())]
        );
    }

    #[test]
    fn module_constants_are_resolved_once_assigned() {
        let src = "TARGET = \"enc\"\nTWICE = \"a\"\nTWICE = \"b\"\nclass M:\n    LOCAL = \"x\"\n    def f(self):\n        InferenceRequest(model_name=TARGET)\n        InferenceRequest(model_name=TWICE)\n        InferenceRequest(model_name=LOCAL)\n        InferenceRequest(model_name=self.name)\n";
        assert_eq!(names(src), [Some("enc".into()), None, None, None]);
    }

    #[test]
    fn sequence_arguments() {
        let src = "import triton_python_backend_utils as pb_utils\n\
                   InferenceRequest(model_name='s', correlation_id=cid, flags=pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START)\n\
                   InferenceRequest(model_name='s')\n\
                   InferenceRequest(model_name='s', correlation_id=0, flags=0)\n\
                   InferenceRequest(model_name='s', correlation_id=\"seq\", flags=3)\n";
        let c = find_calls(src);
        let got: Vec<(bool, bool)> = c
            .iter()
            .map(|c| (c.correlation_id, c.sequence_flags))
            .collect();
        assert_eq!(
            got,
            [(true, true), (false, false), (false, false), (true, true)]
        );
        // A flags variable counts only when the file uses the flags.
        let c = find_calls("InferenceRequest(model_name='s', correlation_id=c, flags=f)");
        assert!(!c[0].sequence_flags);
        let c = find_calls("F = pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_END\nInferenceRequest(model_name='s', correlation_id=c, flags=f)");
        assert!(c[0].sequence_flags);
    }

    #[test]
    fn diagnostics_for_missing_stateful_and_self() {
        let stateful = ModelConfig {
            scheduling_choice: Some(SchedulingChoice::SequenceBatching(
                ModelSequenceBatching::default(),
            )),
            ..Default::default()
        };
        let plain = ModelConfig::default();
        let src = "InferenceRequest(model_name='missing')\nInferenceRequest(model_name='state')\nInferenceRequest(model_name='me')\nInferenceRequest(model_name='plain')\nInferenceRequest(model_name='state', correlation_id=c, flags=pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_END)\n";
        assert!(is_stateful(&stateful) && !is_stateful(&plain));
        let mut lookup = |n: &str| match n {
            "state" => Some(true),
            "plain" | "me" => Some(false),
            _ => None,
        };
        let ds = check_source(src, "me", &mut lookup);
        let got: Vec<(&str, &str)> = ds
            .iter()
            .map(|d| (d.code(), text(src, d.span.unwrap())))
            .collect();
        assert_eq!(
            got,
            [
                ("W1101", "'missing'"),
                ("W1102", "'state'"),
                ("W1103", "'me'")
            ]
        );
        assert!(ds.iter().all(|d| d.severity == Severity::Warning));
    }

    #[test]
    fn odd_input_never_panics() {
        for src in [
            "",
            "InferenceRequest(",
            "InferenceRequest(model_name=",
            "InferenceRequest(model_name='unterminated",
            "InferenceRequest(model_name=\"\"\"never closed",
            "InferenceRequest(model_name='\\",
            "InferenceRequest(model_name='é\\é')",
            "InferenceRequest(model_name=b'bytes')",
            ")))]]}InferenceRequest)(model_name='x'",
            "X = \nInferenceRequest(model_name=X)",
            "\\",
            "'\\\u{e9}",
            "r'",
            "\u{feff}InferenceRequest(model_name='bom')",
        ] {
            let calls = find_calls(src);
            for c in calls {
                assert!(src.is_char_boundary(c.callee.end as usize));
                if let Some(m) = c.model_name {
                    assert!(m.span.end as usize <= src.len());
                    assert!(src
                        .get(m.span.start as usize..m.span.end as usize)
                        .is_some());
                }
            }
        }
        // Every prefix of a realistic file.
        let src = "T = 'x'\ndef f():\n    r = pb_utils.InferenceRequest(\n        model_name=T,  # (\n        inputs=[a(')')], flags=pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START,\n    )\n";
        for end in (0..=src.len()).filter(|&e| src.is_char_boundary(e)) {
            let _ = find_calls(&src[..end]);
        }
    }
}
