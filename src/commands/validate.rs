//! `tritonctl validate [PATH...]`.

use super::{CommandError, Context, ExitStatus};
use crate::cli::{OutputFormat, ValidateArgs};
use crate::diagnostics::render::{self, Format, RenderOptions, Summary};
use crate::diagnostics::Report;
use crate::lint::registry::{find_loose as find_rule, unknown_rule_message};
use crate::lint::ServerOptions;
use crate::validate::{
    validate_paths, validate_stdin, SettingsLookup, SeverityOverrides, ValidateOptions,
};
use std::io::Write;
use std::path::Path;
use std::time::Instant;

pub fn run(
    args: &ValidateArgs,
    ctx: &Context,
    out: &mut dyn Write,
) -> Result<ExitStatus, CommandError> {
    let base = options(args)?;
    if args.print_config {
        return print_config(args, &base, ctx, out);
    }
    let mut settings =
        SettingsLookup::new(args.config.as_deref(), args.no_config).map_err(CommandError::Input)?;
    let started = Instant::now();
    let mut report = Report::default();
    let mut unreadable = false;
    let mut stdin_seen = false;
    for p in &args.paths {
        if p.as_os_str() == "-" {
            if stdin_seen {
                return Err(CommandError::Usage(
                    "standard input ('-') is given more than once".into(),
                ));
            }
            stdin_seen = true;
            let opts = settings
                .options_for(Path::new("."), &base, args.platform_default.is_some())
                .map_err(CommandError::Input)?;
            let bytes = crate::term::read_stdin().map_err(|e| {
                CommandError::Input(format!("<stdin>: cannot read standard input: {e}"))
            })?;
            report.files.extend(validate_stdin(bytes, &opts).files);
            continue;
        }
        let opts = settings
            .options_for(p, &base, args.platform_default.is_some())
            .map_err(CommandError::Input)?;
        match validate_paths(std::slice::from_ref(p), &opts) {
            Ok(r) => report.files.extend(r.files),
            Err(e) => {
                // Keep going: the other inputs are still worth reporting.
                crate::term::error(ctx.global.color, &e.to_string());
                unreadable = true;
            }
        }
    }
    for f in &mut report.files {
        f.path = crate::files::tidy_path(&f.path);
    }

    if ctx.global.verbose {
        for f in &report.files {
            let s = Summary::of(&Report {
                files: vec![f.clone()],
            });
            crate::term::eprint(&format!(
                "checked {} ({}, {}, {})\n",
                crate::text::display::Untrusted(&f.path),
                render::plural(s.errors, "error"),
                render::plural(s.warnings, "warning"),
                render::plural(s.notes, "note"),
            ));
        }
        crate::term::eprint(&format!(
            "checked {} in {} ms\n",
            render::plural(report.files.len(), "file"),
            started.elapsed().as_millis()
        ));
    }

    let format = format_of(args.format);
    let render_opts = RenderOptions {
        color: ctx.color && format == Format::Human,
        quiet: ctx.global.quiet,
        base_dir: std::env::current_dir().ok(),
        rules: crate::lint::registry::all(),
    };
    // Nothing readable at all: the error above says it; a human summary
    // ("No model configurations found.") would only contradict it.
    if !(unreadable && report.files.is_empty() && format == Format::Human) {
        render::render(format, out, &report, &render_opts)?;
        out.flush()?;
    }

    Ok(if unreadable {
        ExitStatus::Error
    } else if report.errors() > 0 && !args.exit_zero {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}

/// `--print-config`: the loaded config of each model directory, one JSON
/// object (several: one per line, in argument order). A model Triton would
/// not load gets its findings on standard error and no line.
fn print_config(
    args: &ValidateArgs,
    opts: &ValidateOptions,
    ctx: &Context,
    out: &mut dyn Write,
) -> Result<ExitStatus, CommandError> {
    let mut status = ExitStatus::Success;
    let one = args.paths.len() == 1;
    for p in &args.paths {
        // A model's config.pbtxt stands for its directory.
        let dir = match p.file_name() {
            Some(n) if n == "config.pbtxt" && !p.is_dir() => match p.parent() {
                Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
                _ => std::path::PathBuf::from("."),
            },
            _ => p.clone(),
        };
        if p.as_os_str() == "-" || !crate::repo::is_model_dir(&dir) {
            return Err(CommandError::Usage(format!(
                "--print-config takes model directories; {} is not one",
                crate::text::display::path(p)
            )));
        }
        match crate::validate::load::load_model(&dir, &opts.lint) {
            Ok(set) => {
                let json = set.models[0].config_json();
                if one {
                    out.write_all(json.as_bytes())?;
                } else {
                    let v: serde_json::Value = serde_json::from_str(&json)
                        .map_err(|e| CommandError::Input(format!("internal: {e}")))?;
                    serde_json::to_writer(&mut *out, &v)
                        .map_err(|e| CommandError::Output(e.into()))?;
                    out.write_all(b"\n")?;
                }
            }
            Err(crate::validate::load::LoadError::Invalid(report)) => {
                super::convert::show_diagnostics(&report, ctx);
                status = ExitStatus::Failure;
            }
            Err(e) => {
                crate::term::error(ctx.global.color, &e.to_string());
                if status == ExitStatus::Success {
                    status = ExitStatus::Failure;
                }
            }
        }
    }
    out.flush()?;
    Ok(status)
}

/// Library options from the command line; unknown rule codes in `--allow`
/// and `--deny` are usage errors.
pub fn options(args: &ValidateArgs) -> Result<ValidateOptions, CommandError> {
    let resolve = |flag: &str, codes: &[String]| -> Result<Vec<String>, CommandError> {
        codes
            .iter()
            .map(|c| {
                find_rule(c)
                    .map(|r| r.code.to_string())
                    .ok_or_else(|| CommandError::Usage(unknown_rule_message(flag, c)))
            })
            .collect()
    };
    let overrides = SeverityOverrides {
        strict: args.strict,
        allow: resolve("--allow", &args.allow)?,
        deny: resolve("--deny", &args.deny)?,
        levels: Vec::new(),
    };
    if let Some(c) = overrides.unknown_codes().first() {
        return Err(CommandError::Usage(unknown_rule_message(
            "--allow/--deny",
            c,
        )));
    }
    if !args.min_compute_capability.is_finite() || args.min_compute_capability < 0.0 {
        return Err(CommandError::Usage(format!(
            "--min-compute-capability must be a non-negative number, not {}",
            args.min_compute_capability
        )));
    }
    Ok(ValidateOptions {
        settings: None,
        report_unused_suppressions: false,
        lint: ServerOptions {
            platform_default: args.platform_default.clone(),
            known_backends: args.known_backend.clone(),
            gpus: args.gpus.clone(),
            min_compute_capability: args.min_compute_capability,
            autocomplete: !args.disable_auto_complete_config,
        },
        overrides,
    })
}

pub fn format_of(f: OutputFormat) -> Format {
    match f {
        OutputFormat::Human => Format::Human,
        OutputFormat::Json => Format::Json,
        OutputFormat::Github => Format::Github,
        OutputFormat::Sarif => Format::Sarif,
        OutputFormat::Junit => Format::Junit,
    }
}
