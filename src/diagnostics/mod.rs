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

/// What kind of problem a diagnostic reports (the `category` of cli.md).
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

/// A secondary location ("max_batch_size set here").
#[derive(Clone, Debug, PartialEq)]
pub struct Label {
    pub span: Span,
    pub message: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    /// Stable rule code from the registry (`crate::lint::registry`).
    pub code: &'static str,
    pub severity: Severity,
    pub category: Category,
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
    pub fn new(code: &'static str, message: impl Into<String>) -> Diagnostic {
        let rule = crate::lint::registry::rule(code);
        Diagnostic {
            code,
            severity: rule.severity,
            category: rule.category,
            message: message.into(),
            span: None,
            labels: Vec::new(),
            help: None,
            triton_message: None,
        }
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
