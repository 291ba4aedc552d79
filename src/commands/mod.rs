//! One module per subcommand. Each takes its parsed arguments and returns
//! an [`ExitStatus`]; errors that end the command early are
//! [`CommandError`]s, which the binary prints and maps to exit code 2.
//! Output goes to the writer the binary hands in; messages on standard
//! error go through `crate::term`.

pub mod autoconfig;
pub mod completions;
pub mod convert;
pub mod doctor;
pub mod explain;
pub mod fmt;
pub mod perf;
pub mod run;
pub mod simulate;
pub mod trace;
pub mod tune;
pub mod validate;

use crate::cli::GlobalArgs;
use std::io;

/// The three outcomes of docs/spec/cli.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// No error findings.
    Success,
    /// Findings (validation errors, ...).
    Failure,
    /// Usage error, unreadable input or internal error.
    Error,
}

impl ExitStatus {
    pub fn code(self) -> i32 {
        match self {
            ExitStatus::Success => 0,
            ExitStatus::Failure => 1,
            ExitStatus::Error => 2,
        }
    }
}

/// Why a command stopped (exit code 2, unless the output pipe was closed).
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// The arguments do not make sense (unknown rule code, ...).
    #[error("{0}")]
    Usage(String),
    /// An input could not be read.
    #[error("{0}")]
    Input(String),
    /// Writing the output failed.
    #[error("cannot write output: {0}")]
    Output(#[from] io::Error),
}

impl CommandError {
    /// Standard output was closed by its reader (`| head`): not an error.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, CommandError::Output(e) if crate::term::is_broken_pipe(e))
    }
}

/// Context every command gets.
pub struct Context<'a> {
    pub global: &'a GlobalArgs,
    /// Whether human output on standard output may be coloured.
    pub color: bool,
}
