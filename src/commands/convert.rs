//! `tritonctl convert --to json|pbtxt FILE|-`.
//!
//! The input is text format or Triton's JSON form (detected: JSON when its
//! first character that is not a blank is `{`); a model directory stands
//! for its `config.pbtxt`. The result goes to standard output: `--to json`
//! prints Triton's JSON form (see `crate::convert`), `--to pbtxt` the
//! message in the layout of `tritonctl fmt` (comments are not part of the
//! message and do not survive a conversion).
//!
//! An input that does not parse or does not fit the ModelConfig schema is
//! reported on standard error (text format: the diagnostics as `validate`
//! shows them; JSON: `file:line:column: message`) and exits 1; an unreadable
//! input exits 2.

use super::{CommandError, Context, ExitStatus};
use crate::cli::{ConvertArgs, ConvertTarget};
use crate::config::ParsedConfig;
use crate::convert;
use crate::diagnostics::{render, Severity};
use crate::diagnostics::{FileReport, Report};
use prost_reflect::DynamicMessage;
use std::io::Write;
use std::path::Path;

pub fn run(
    args: &ConvertArgs,
    ctx: &Context,
    out: &mut dyn Write,
) -> Result<ExitStatus, CommandError> {
    let (name, bytes) = read_input(&args.input)?;
    let (src, _lossy) = crate::text::decode_source(bytes);
    let msg = if convert::looks_like_json(&src) {
        match convert::from_json(src.strip_prefix('\u{feff}').unwrap_or(&src)) {
            Ok(m) => m,
            Err(e) => {
                crate::term::error(ctx.global.color, &format!("{name}:{e}"));
                return Ok(ExitStatus::Failure);
            }
        }
    } else {
        match parse_text(&name, src, ctx) {
            Some(m) => m,
            None => return Ok(ExitStatus::Failure),
        }
    };
    let text = match args.to {
        ConvertTarget::Json => convert::to_json(&msg),
        ConvertTarget::Pbtxt => crate::pbtxt::printer::print_message(&msg),
    };
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(ExitStatus::Success)
}

/// The bytes of `FILE`, `-` or `DIR/config.pbtxt`, with the name to report.
fn read_input(path: &Path) -> Result<(String, Vec<u8>), CommandError> {
    if path.as_os_str() == "-" {
        let bytes = crate::term::read_stdin().map_err(|e| {
            CommandError::Input(format!("<stdin>: cannot read standard input: {e}"))
        })?;
        return Ok(("<stdin>".into(), bytes));
    }
    let (file, root) = if path.is_dir() {
        let f = path.join("config.pbtxt");
        if f.symlink_metadata().is_err() {
            return Err(CommandError::Input(format!(
                "{}: a directory without a config.pbtxt",
                path.display()
            )));
        }
        (f, Some(path))
    } else {
        (path.to_path_buf(), None)
    };
    let name = file.display().to_string();
    let read = match root {
        Some(root) => crate::files::read_in(&file, root),
        None => crate::files::read_file(&file),
    };
    let bytes = read.map_err(|e| {
        CommandError::Input(format!(
            "{name}: cannot read: {}",
            crate::files::io_message(&e)
        ))
    })?;
    Ok((name, bytes))
}

/// Parses and binds a text-format config; on syntax or schema errors shows
/// them on standard error and returns `None`.
fn parse_text(name: &str, src: String, ctx: &Context) -> Option<DynamicMessage> {
    let parsed = ParsedConfig::parse(src);
    let errors = parsed
        .diagnostics
        .iter()
        .any(|d| d.severity == Severity::Error);
    if !errors {
        return parsed.message;
    }
    let report = Report {
        files: vec![FileReport {
            path: name.to_string(),
            model: None,
            src: parsed.src,
            diagnostics: parsed.diagnostics,
        }],
    };
    show_diagnostics(&report, ctx);
    None
}

/// Renders `report` in the human format on standard error.
pub(crate) fn show_diagnostics(report: &Report, ctx: &Context) {
    let opts = render::RenderOptions {
        color: crate::term::stderr_color(ctx.global.color),
        quiet: true,
        ..Default::default()
    };
    let mut buf = Vec::new();
    let _ = render::human::render(&mut buf, report, &opts);
    crate::term::eprint(&String::from_utf8_lossy(&buf));
}
