//! `tritonctl autoconfig MODEL`: the config Triton's ONNX Runtime backend
//! auto-completes for an ONNX model (see `crate::autoconfig`).
//!
//! Output: the config on standard output (`--format pbtxt|json`), or
//! written to `<model dir>/config.pbtxt` with `--write` (a temporary file
//! in the same directory renamed into place, so a failed write leaves
//! nothing behind; an existing file is kept unless `--force`). Notes,
//! warnings and errors go to standard error.
//!
//! Exit status: 0 config printed or written; 1 Triton would refuse the
//! model (or the `--merge` config does not parse), with Triton's message;
//! 2 unreadable or invalid input (no model file, not an ONNX model, an
//! unsupported backend in the config), a refused or failed write, or a
//! usage error.

use super::{CommandError, Context, ExitStatus};
use crate::autoconfig::{self, AutoconfigError, AutoconfigOptions, LoadFailure, Note, NoteLevel};
use crate::cli::{AutoconfigArgs, ConfigFormat};
use crate::config::ParsedConfig;
use crate::diagnostics::{render, Severity};
use crate::diagnostics::{FileReport, Report};
use crate::files;
use crate::schema::inference::ModelConfig;
use crate::text::display::{DisplayPath, Untrusted};
use std::io::Write;
use std::path::Path;

pub fn run(
    args: &AutoconfigArgs,
    ctx: &Context,
    out: &mut dyn Write,
) -> Result<ExitStatus, CommandError> {
    if args.write && args.format == ConfigFormat::Json {
        return Err(CommandError::Usage(
            "--write writes config.pbtxt, which Triton reads as text format; leave out --format json"
                .into(),
        ));
    }
    let partial = match &args.merge {
        Some(path) => match read_partial(path, ctx)? {
            Some(cfg) => Some(cfg),
            None => return Ok(ExitStatus::Failure),
        },
        None => None,
    };
    let opts = AutoconfigOptions {
        default_max_batch_size: args.max_batch_size,
        gpus: args.gpus.clone(),
        triton_compatible: args.triton_compatible,
        ..AutoconfigOptions::default()
    };
    let outcome = match autoconfig::complete(&args.model, partial.as_ref(), &opts) {
        Ok(o) => o,
        Err(AutoconfigError::Load(f)) => {
            report_failure(args, ctx, &f);
            return Ok(ExitStatus::Failure);
        }
        Err(AutoconfigError::NotOnnxRuntime { backend, platform }) => {
            let file = args.merge.as_deref().unwrap_or(&args.model);
            return Err(CommandError::Input(format!(
                "{}: the configuration selects backend '{backend}' (platform '{platform}'); autoconfig completes ONNX Runtime models only",
                file.display()
            )));
        }
        Err(e) => return Err(CommandError::Input(e.to_string())),
    };

    if ctx.global.verbose {
        let version = outcome
            .version
            .map(|v| format!(" (version {v})"))
            .unwrap_or_default();
        crate::term::eprint(&format!(
            "read {}{version}: {} input(s), {} output(s), IR version {}, opset {}\n",
            DisplayPath(&outcome.model_file),
            outcome.signature.inputs.len(),
            outcome.signature.outputs.len(),
            outcome.signature.ir_version,
            outcome
                .signature
                .default_opset()
                .map(|v| v.to_string())
                .unwrap_or_else(|| "none".into()),
        ));
    }
    show_notes(ctx, &outcome.notes);
    if args.merge.is_none() {
        if let Some(dir) = &outcome.model_dir {
            let existing = dir.join("config.pbtxt");
            if existing.is_file() && !ctx.global.quiet {
                note(
                    ctx,
                    &format!(
                        "{} exists and was not used; pass --merge {} to complete it as Triton would",
                        existing.display(),
                        existing.display()
                    ),
                );
            }
        }
    }

    let cfg = if args.full {
        &outcome.full
    } else {
        &outcome.minimal
    };
    let text = match args.format {
        ConfigFormat::Pbtxt => autoconfig::to_pbtxt(cfg),
        ConfigFormat::Json => {
            let mut j = autoconfig::to_json(cfg);
            if !j.ends_with('\n') {
                j.push('\n');
            }
            j
        }
    };
    if !args.write {
        out.write_all(text.as_bytes())?;
        out.flush()?;
        return Ok(ExitStatus::Success);
    }
    let Some(dir) = &outcome.model_dir else {
        return Err(CommandError::Usage(format!(
            "{}: --write needs a model directory (<dir>/<version>/model.onnx); pass the model directory, or redirect the printed config",
            args.model.display()
        )));
    };
    let target = dir.join("config.pbtxt");
    let replace = if args.force {
        files::Replace::Allow
    } else {
        files::Replace::Never
    };
    files::write_atomic_in(&target, dir, text.as_bytes(), replace).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            CommandError::Input(format!(
                "{}: already exists; pass --force to overwrite it, or --merge it to complete it",
                target.display()
            ))
        } else {
            CommandError::Input(format!(
                "{}: cannot write: {}",
                target.display(),
                files::io_message(&e)
            ))
        }
    })?;
    if !ctx.global.quiet {
        crate::term::eprint(&format!("wrote {}\n", DisplayPath(&target)));
    }
    Ok(ExitStatus::Success)
}

/// Reads, parses and binds the `--merge` config. Syntax and schema errors
/// are shown (as `validate` shows them) and give `None`.
fn read_partial(path: &Path, ctx: &Context) -> Result<Option<ModelConfig>, CommandError> {
    let (name, bytes) = if path.as_os_str() == "-" {
        let b = crate::term::read_stdin().map_err(|e| {
            CommandError::Input(format!("<stdin>: cannot read standard input: {e}"))
        })?;
        ("<stdin>".to_string(), b)
    } else {
        let b = crate::files::read_file(path).map_err(|e| {
            CommandError::Input(format!(
                "{}: cannot read: {}",
                path.display(),
                crate::files::io_message(&e)
            ))
        })?;
        (path.display().to_string(), b)
    };
    let parsed = ParsedConfig::from_bytes(bytes);
    let errors = parsed
        .diagnostics
        .iter()
        .any(|d| d.severity == Severity::Error);
    if !errors {
        if let Some(cfg) = parsed.config {
            return Ok(Some(cfg));
        }
    }
    let report = Report {
        files: vec![FileReport {
            path: name,
            model: None,
            src: parsed.src,
            diagnostics: parsed.diagnostics,
        }],
    };
    let opts = render::RenderOptions {
        color: crate::term::stderr_color(ctx.global.color),
        quiet: true,
        ..Default::default()
    };
    let mut buf = Vec::new();
    let _ = render::human::render(&mut buf, &report, &opts);
    crate::term::eprint(&String::from_utf8_lossy(&buf));
    Ok(None)
}

/// `note: text` on standard error; the text quotes names from the model
/// and is shown escaped.
fn note(ctx: &Context, text: &str) {
    let text = Untrusted(text);
    let line = if crate::term::stderr_color(ctx.global.color) {
        let s = anstyle::Style::new()
            .bold()
            .fg_color(Some(anstyle::AnsiColor::Cyan.into()));
        format!("{s}note{s:#}: {text}\n")
    } else {
        format!("note: {text}\n")
    };
    crate::term::eprint(&line);
}

fn show_notes(ctx: &Context, notes: &[Note]) {
    for n in notes {
        match n.level {
            NoteLevel::Warning => crate::term::warning(ctx.global.color, &n.text),
            NoteLevel::Note if !ctx.global.quiet => note(ctx, &n.text),
            NoteLevel::Note => {}
        }
    }
}

/// `error: <status>: <Triton's text>`, the file it is about, and a help line.
fn report_failure(args: &AutoconfigArgs, ctx: &Context, f: &LoadFailure) {
    show_notes(ctx, &f.notes);
    let code = f.code.map(|c| format!("[{c}]")).unwrap_or_default();
    // A type the backend cannot serve is the model's fault; anything else
    // is fixed in the config.
    let file: &Path = match &args.merge {
        Some(m) if !f.model_side => m,
        _ => &args.model,
    };
    // Triton's text and the help quote names from the model file.
    let mut text = format!(
        "{}: {}\n  --> {}\n",
        f.status,
        Untrusted(&f.text),
        DisplayPath(file)
    );
    if let Some(h) = &f.help {
        text.push_str(&format!("  = help: {}\n", Untrusted(h)));
    }
    let (s, e) = if crate::term::stderr_color(ctx.global.color) {
        let s = anstyle::Style::new()
            .bold()
            .fg_color(Some(anstyle::AnsiColor::Red.into()));
        (format!("{s}"), format!("{s:#}"))
    } else {
        (String::new(), String::new())
    };
    crate::term::eprint(&format!("{s}error{code}{e}: {text}"));
}
