//! The `tritonctl` binary: parse the arguments, run the command, map the
//! outcome to an exit code (0 no error findings, 1 findings, 2 usage error,
//! unreadable input or internal error). A closed stdout (`| head`) is a
//! quiet success; a panic is reported as an internal error, exit 2.

use clap::Parser;
use std::process::ExitCode;
use tritonctl::cli::{Cli, Command};
use tritonctl::commands::{self, CommandError, Context, ExitStatus};
use tritonctl::term;

fn main() -> ExitCode {
    std::panic::set_hook(Box::new(|info| {
        term::eprint(&format!(
            "error: internal error (a bug in tritonctl {}; please report it): {info}\n",
            env!("CARGO_PKG_VERSION")
        ));
    }));
    let status = std::panic::catch_unwind(run).unwrap_or(ExitStatus::Error);
    ExitCode::from(status.code() as u8)
}

fn run() -> ExitStatus {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version go to stdout and succeed; usage errors exit 2.
            let _ = e.print();
            return if e.use_stderr() {
                ExitStatus::Error
            } else {
                ExitStatus::Success
            };
        }
    };
    match dispatch(&cli) {
        Ok(status) => status,
        Err(e) => {
            let e: anyhow::Error = e.into();
            if e.downcast_ref::<CommandError>()
                .is_some_and(CommandError::is_broken_pipe)
            {
                return ExitStatus::Success;
            }
            term::error(cli.global.color, &format!("{e:#}"));
            ExitStatus::Error
        }
    }
}

fn dispatch(cli: &Cli) -> Result<ExitStatus, CommandError> {
    let ctx = Context {
        global: &cli.global,
        color: term::stdout_color(cli.global.color),
    };
    let mut out = term::stdout();
    match &cli.command {
        Command::Validate(a) => commands::validate::run(a, &ctx, &mut out),
        Command::Explain(a) => commands::explain::run(a, &ctx, &mut out),
        Command::Completions(a) => commands::completions::run(a, &mut out),
        Command::Fmt(a) => commands::fmt::run(a, &ctx, &mut out),
        Command::Convert(a) => commands::convert::run(a, &ctx, &mut out),
        Command::Autoconfig(a) => commands::autoconfig::run(a, &ctx, &mut out),
        Command::Simulate(a) => commands::simulate::run(a, &ctx, &mut out),
        Command::Trace(a) => commands::trace::run(a, &mut out),
        Command::Doctor(a) => commands::doctor::run(a, &ctx, &mut out),
        Command::Run(a) => commands::run::run(a, &ctx, &mut out),
        Command::Perf(a) => commands::perf::run(a, &ctx, &mut out),
    }
}
