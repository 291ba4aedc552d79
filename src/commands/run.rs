//! `tritonctl run`: run a model locally with ONNX Runtime.

use super::{CommandError, Context, ExitStatus};
use crate::cli::RunArgs;
use std::io::Write;

pub fn run(
    _args: &RunArgs,
    _ctx: &Context,
    _out: &mut dyn Write,
) -> Result<ExitStatus, CommandError> {
    Err(CommandError::Usage("run: not implemented yet".into()))
}
