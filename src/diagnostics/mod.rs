//! The one diagnostic model every stage reports into, and its renderers.
//!
//! Stages never print: they push [`Diagnostic`]s into a [`Sink`]. Spans are
//! byte ranges into the file's text; line and column are computed by the
//! renderers.

pub mod render;

use crate::text::Span;
use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Note,
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
        }
    }
}

/// What kind of problem a diagnostic reports (the `category` of
/// docs/spec/cli.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// The text is not protobuf text format.
    Syntax,
    /// The text does not fit the ModelConfig schema (what protobuf refuses).
    Schema,
    /// What Triton refuses or warns about when it loads the model.
    Semantic,
    /// Cross-model and layout findings.
    Repository,
}

impl Category {
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Syntax => "syntax",
            Category::Schema => "schema",
            Category::Semantic => "semantic",
            Category::Repository => "repository",
        }
    }
}

/// A rule: what a diagnostic reports, with its documentation. Every
/// diagnostic carries its rule, so renderers never consult the registry
/// (`crate::lint::registry`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    /// Stable code, e.g. `E0101`.
    pub code: &'static str,
    /// Kebab-case name, e.g. `unknown-field`.
    pub name: &'static str,
    pub category: Category,
    pub severity: Severity,
    /// One line, shown in listings and SARIF `shortDescription`.
    pub summary: &'static str,
    /// Markdown: what the rule checks, why it matters, an example.
    pub docs: &'static str,
    /// Where Triton implements the check (file in its sources), if it does.
    pub triton_source: Option<&'static str>,
}

impl Rule {
    /// A rule for a load-time check Triton itself fails the model on.
    pub const fn semantic_error(
        code: &'static str,
        name: &'static str,
        summary: &'static str,
        docs: &'static str,
        triton_source: Option<&'static str>,
    ) -> Rule {
        Rule {
            code,
            name,
            category: Category::Semantic,
            severity: Severity::Error,
            summary,
            docs,
            triton_source,
        }
    }
}

/// The rule with `code` among `rules`, usable in constants.
pub const fn find_rule_in(rules: &'static [Rule], code: &str) -> Option<&'static Rule> {
    let mut i = 0;
    while i < rules.len() {
        if str_eq(rules[i].code, code) {
            return Some(&rules[i]);
        }
        i += 1;
    }
    None
}

/// The rule with `code` among `rules`, for constants: an unknown code is
/// a compile-time error where the result initialises a `const`.
pub const fn rule_in(rules: &'static [Rule], code: &str) -> &'static Rule {
    match find_rule_in(rules, code) {
        Some(r) => r,
        None => panic!("unknown rule code"),
    }
}

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// A secondary location ("max_batch_size set here").
#[derive(Clone, Debug, PartialEq)]
pub struct Label {
    pub span: Span,
    pub message: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    /// The rule this finding belongs to (code, name, category, docs).
    pub rule: &'static Rule,
    /// The rule's default severity unless settings changed it.
    pub severity: Severity,
    pub message: String,
    /// Primary location in the file; `None` for findings about a file as a
    /// whole (a missing file, a directory layout).
    pub span: Option<Span>,
    pub labels: Vec<Label>,
    pub help: Option<String>,
    /// The text Triton itself logs for this problem, byte for byte.
    pub triton_message: Option<String>,
}

impl Diagnostic {
    /// A diagnostic with the rule's default severity and category.
    pub fn new(rule: &'static Rule, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            rule,
            severity: rule.severity,
            message: message.into(),
            span: None,
            labels: Vec::new(),
            help: None,
            triton_message: None,
        }
    }

    /// The rule's stable code, e.g. `E0101`.
    pub fn code(&self) -> &'static str {
        self.rule.code
    }

    pub fn category(&self) -> Category {
        self.rule.category
    }

    pub fn at(mut self, span: Span) -> Diagnostic {
        self.span = Some(span);
        self
    }

    pub fn at_opt(mut self, span: Option<Span>) -> Diagnostic {
        self.span = span;
        self
    }

    pub fn label(mut self, span: Span, message: impl Into<String>) -> Diagnostic {
        self.labels.push(Label {
            span,
            message: message.into(),
        });
        self
    }

    pub fn help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    /// Sets Triton's own text; the message defaults to it when empty.
    pub fn triton(mut self, text: impl Into<String>) -> Diagnostic {
        let text = text.into();
        if self.message.is_empty() {
            self.message = text.clone();
        }
        self.triton_message = Some(text);
        self
    }

    pub fn with_severity(mut self, severity: Severity) -> Diagnostic {
        self.severity = severity;
        self
    }
}

/// Findings for one file (a `config.pbtxt`, standard input, or a model
/// directory without a config).
#[derive(Debug, Clone)]
pub struct FileReport {
    /// The path as the user would write it (relative to the argument given).
    pub path: String,
    /// The model's name, when the file belongs to a model.
    pub model: Option<String>,
    /// The text, for rendering source lines (empty when there is none).
    pub src: String,
    pub diagnostics: Vec<Diagnostic>,
}

#[derive(Debug, Clone, Default)]
pub struct Report {
    pub files: Vec<FileReport>,
}

impl Report {
    pub fn count(&self, severity: Severity) -> usize {
        self.files
            .iter()
            .flat_map(|f| &f.diagnostics)
            .filter(|d| d.severity == severity)
            .count()
    }

    pub fn errors(&self) -> usize {
        self.count(Severity::Error)
    }

    pub fn warnings(&self) -> usize {
        self.count(Severity::Warning)
    }
}

/// Where stages report. A plain vector is enough; the type keeps the door
/// open for early stopping and counting.
#[derive(Default, Debug)]
pub struct Sink {
    pub diagnostics: Vec<Diagnostic>,
}

impl Sink {
    pub fn push(&mut self, d: Diagnostic) {
        self.diagnostics.push(d);
    }

    pub fn has_errors(&self) -> bool {
        self.diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error)
    }

    pub fn into_vec(self) -> Vec<Diagnostic> {
        self.diagnostics
    }
}
