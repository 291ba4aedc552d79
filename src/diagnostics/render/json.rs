//! `--format json`: one document, the shape of docs/spec/cli.md (described by
//! `schemas/validate.schema.json`). Every key is always present; values
//! that do not apply are `null` (a file-level finding has no line).

use super::{Location, RenderOptions, Summary};
use crate::diagnostics::Diagnostic;
use crate::diagnostics::Report;
use crate::text::LineIndex;
use serde::Serialize;
use std::io::{self, Write};

#[derive(Serialize)]
struct Doc<'a> {
    files: Vec<FileOut<'a>>,
    summary: SummaryOut,
}

#[derive(Serialize)]
struct FileOut<'a> {
    path: &'a str,
    model: Option<&'a str>,
    diagnostics: Vec<DiagOut<'a>>,
}

#[derive(Serialize)]
struct DiagOut<'a> {
    code: &'a str,
    rule: &'a str,
    severity: &'a str,
    category: &'a str,
    message: &'a str,
    line: Option<usize>,
    column: Option<usize>,
    end_line: Option<usize>,
    end_column: Option<usize>,
    help: Option<&'a str>,
    triton_message: Option<&'a str>,
    labels: Vec<LabelOut<'a>>,
}

#[derive(Serialize)]
struct LabelOut<'a> {
    message: &'a str,
    line: usize,
    column: usize,
    end_line: usize,
    end_column: usize,
}

#[derive(Serialize)]
struct SummaryOut {
    files: usize,
    errors: usize,
    warnings: usize,
    notes: usize,
}

pub fn render(out: &mut dyn Write, report: &Report, _opts: &RenderOptions) -> io::Result<()> {
    let files = report
        .files
        .iter()
        .map(|f| {
            let index = LineIndex::new(&f.src);
            FileOut {
                path: &f.path,
                model: f.model.as_deref(),
                diagnostics: f
                    .diagnostics
                    .iter()
                    .map(|d| diagnostic(&index, &f.src, d))
                    .collect(),
            }
        })
        .collect();
    let s = Summary::of(report);
    let doc = Doc {
        files,
        summary: SummaryOut {
            files: s.files,
            errors: s.errors,
            warnings: s.warnings,
            notes: s.notes,
        },
    };
    serde_json::to_writer_pretty(&mut *out, &doc).map_err(io::Error::from)?;
    writeln!(out)
}

fn diagnostic<'a>(index: &LineIndex, src: &str, d: &'a Diagnostic) -> DiagOut<'a> {
    let loc = d.span.map(|s| Location::of(index, src, s));
    DiagOut {
        code: d.code(),
        rule: d.rule.name,
        severity: d.severity.as_str(),
        category: d.category().as_str(),
        message: &d.message,
        line: loc.map(|l| l.line),
        column: loc.map(|l| l.column),
        end_line: loc.map(|l| l.end_line),
        end_column: loc.map(|l| l.end_column),
        help: d.help.as_deref(),
        triton_message: d.triton_message.as_deref(),
        labels: d
            .labels
            .iter()
            .map(|l| {
                let loc = Location::of(index, src, l.span);
                LabelOut {
                    message: &l.message,
                    line: loc.line,
                    column: loc.column,
                    end_line: loc.end_line,
                    end_column: loc.end_column,
                }
            })
            .collect(),
    }
}
