//! `tritonctl run`: run a model locally with ONNX Runtime, through the
//! same scheduler code `simulate` uses, on a real clock (see
//! `crate::run::runner`).
//!
//! Exit status: 0 every request succeeded, 1 some request failed (when it
//! ran, or before: a request with bad tensors and the rest of its sequence
//! fail alone), 2 the
//! run could not start (usage error, unreadable model or input, config
//! errors, no ONNX Runtime, an unusable `--device`, a binary built without
//! the `run` feature).

use super::{CommandError, Context, ExitStatus};
use crate::cli::RunArgs;
use std::io::Write;

#[cfg(not(feature = "run"))]
pub fn run(
    _args: &RunArgs,
    _ctx: &Context,
    _out: &mut dyn Write,
) -> Result<ExitStatus, CommandError> {
    Err(CommandError::Usage(
        "this tritonctl was built without the `run` feature (ONNX Runtime support); rebuild it with `--features run`".into(),
    ))
}

#[cfg(feature = "run")]
pub fn run(args: &RunArgs, ctx: &Context, out: &mut dyn Write) -> Result<ExitStatus, CommandError> {
    use crate::cli::SimulateFormat;
    use crate::run::input::{parse_input, InputSchema, ParseOptions};
    use crate::run::model::{load_model_on, LoadError};
    use crate::run::output::{render_table, write_json_line, TableOptions};
    use crate::run::runner::RunOptions;

    // The model first: its config decides how the input is read.
    let server = crate::lint::ServerOptions {
        gpus: args.gpus.clone(),
        ..crate::lint::ServerOptions::default()
    };
    let model = match load_model_on(&args.model, args.model_version, &server) {
        Ok(m) => m,
        Err(LoadError::Invalid(report)) => {
            let text = LoadError::Invalid(report.clone()).to_string();
            super::convert::show_diagnostics(&report, ctx);
            return Err(CommandError::Input(format!(
                "{text}; fix them before running (see `tritonctl validate`)"
            )));
        }
        Err(LoadError::Other(m)) => return Err(CommandError::Input(m)),
    };
    if model.autocompleted {
        let what = if args.model.join("config.pbtxt").exists() {
            "the config.pbtxt is partial"
        } else {
            "no config.pbtxt"
        };
        crate::term::warning(
            ctx.global.color,
            &format!(
                "{}: {what}; running with the configuration Triton's ONNX Runtime backend auto-completes (`tritonctl validate --print-config` shows it)",
                crate::text::display::path(&args.model)
            ),
        );
    }
    let device = crate::runtime::select_device(args.device.as_deref())
        .map_err(|e| CommandError::Usage(e.to_string()))?;
    // Each instance on the device Triton would give it, as far as this
    // machine has it (`run::devices`).
    let runtime = crate::runtime::report();
    let machine = crate::run::devices::Machine {
        cuda: match (&runtime.cuda, runtime.cuda_provider.is_ready()) {
            (Ok(d), true) => d.devices.iter().map(|d| d.ordinal).collect(),
            _ => Vec::new(),
        },
        why_not: match &runtime.cuda {
            Err(e) => e.to_string(),
            Ok(_) if !runtime.cuda_provider.is_ready() => {
                "ONNX Runtime's CUDA execution provider is not ready".to_string()
            }
            Ok(_) => "the CUDA driver shows no device".to_string(),
        },
    };
    let (instance_devices, placement_notes) = crate::run::devices::place(
        &model.instances,
        args.device.is_some().then_some(device),
        device,
        &machine,
    );
    if !ctx.global.quiet {
        for note in &placement_notes {
            crate::term::note(
                ctx.global.color,
                &format!("{}: {note}", args.model.display()),
            );
        }
    }
    crate::runtime::probe().map_err(|e| CommandError::Input(e.to_string()))?;
    if matches!(device, crate::runtime::Device::Cpu) && !ctx.global.quiet {
        for note in &model.notes {
            crate::term::warning(
                ctx.global.color,
                &format!("{}: {note}", args.model.display()),
            );
        }
    }

    let (text, file) = if args.input.as_os_str() == "-" {
        let bytes = crate::term::read_stdin()
            .map_err(|e| CommandError::Input(format!("<stdin>: cannot read: {e}")))?;
        // Valid UTF-8 is kept as read, without a second copy.
        let text = String::from_utf8(bytes)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        (text, "<stdin>".to_string())
    } else {
        let name = args.input.display().to_string();
        let text = crate::files::read_file_to_string(&args.input).map_err(|e| {
            CommandError::Input(format!(
                "{name}: cannot read: {}",
                crate::files::io_message(&e)
            ))
        })?;
        (text, name)
    };
    let schema = InputSchema::from_config(&model.cfg)
        .map_err(|e| CommandError::Input(format!("{}: {e}", args.model.display())))?;
    let mut parsed = parse_input(
        &text,
        &file,
        &schema,
        &ParseOptions {
            sequence: args.sequence,
        },
    )
    .map_err(|e| CommandError::Input(e.to_string()))?;
    for w in &parsed.warnings {
        crate::term::warning(ctx.global.color, w);
    }

    let show_progress =
        crate::term::stderr_is_terminal() && parsed.requests.len() >= 100 && !ctx.global.quiet;
    let progress = |done: usize, total: usize| {
        if done == total || done.is_multiple_of(50) {
            crate::term::eprint(&format!("\r{done}/{total} requests"));
            if done == total {
                crate::term::eprint("\n");
            }
        }
    };
    let opts = RunOptions {
        device,
        instance_devices,
        progress: if show_progress { Some(&progress) } else { None },
        profile: args.profile.is_some(),
    };
    // The runner consumes the requests (their tensors are freed as they
    // run); their positions in the input are kept for the merge below.
    let indices: Vec<usize> = parsed.requests.iter().map(|r| r.index).collect();
    let requests = std::mem::take(&mut parsed.requests);
    let mut output = crate::run::ensemble::run_owned(&model, requests, &opts)
        .map_err(|e| CommandError::Input(format!("{}: {e}", args.model.display())))?;
    // Requests with bad tensors (and the rest of their sequences) failed
    // while the input was read: their errors take their places among the
    // results.
    output.results = crate::run::output::merge_failed(
        std::mem::take(&mut output.results),
        &indices,
        &parsed.failed,
    );

    match args.format {
        SimulateFormat::Json => {
            for r in &output.results {
                write_json_line(out, r)?;
            }
        }
        SimulateFormat::Human => {
            let opts = TableOptions::default();
            let table = render_table(&output.results, &opts);
            writeln!(out, "{table}")?;
            if output.results.len() > opts.max_rows {
                writeln!(
                    out,
                    "… {} more requests not shown (--format json lists every result)",
                    output.results.len() - opts.max_rows
                )?;
            }
            let failed = output.results.iter().filter(|r| !r.is_ok()).count();
            writeln!(
                out,
                "{} requests on {} ({}): {} ok, {failed} failed",
                output.results.len(),
                crate::text::display::Untrusted(&model.name),
                device,
                output.results.len() - failed
            )?;
        }
    }
    if let Some(path) = &args.profile {
        let spec = output.latency_spec().ok_or_else(|| {
            CommandError::Input("--profile: no batch was executed, nothing to write".into())
        })?;
        let text = format!("{spec}\n");
        crate::files::write_atomic(path, text.as_bytes(), crate::files::Replace::Allow).map_err(
            |e| {
                CommandError::Input(format!(
                    "{}: cannot write: {}",
                    path.display(),
                    crate::files::io_message(&e)
                ))
            },
        )?;
    }
    Ok(if output.results.iter().all(|r| r.is_ok()) {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}
