//! `tritonctl completions SHELL`, and [`write_assets`], which writes the
//! committed completions/ and man/ files (called by the test that checks
//! them: `UPDATE_GENERATED=1 cargo test --test cli generated`).

use super::{CommandError, ExitStatus};
use crate::cli::CompletionsArgs;
use clap_complete::Shell;
use std::io::Write;
use std::path::Path;

const BIN: &str = "tritonctl";

pub fn run(args: &CompletionsArgs, out: &mut dyn Write) -> Result<ExitStatus, CommandError> {
    let mut buf = Vec::new();
    clap_complete::generate(args.shell, &mut crate::cli::command(), BIN, &mut buf);
    out.write_all(&buf)?;
    out.flush()?;
    Ok(ExitStatus::Success)
}

/// Every shell we ship a script for, with the file name it is installed as.
pub const SHELLS: &[(Shell, &str)] = &[
    (Shell::Bash, "tritonctl.bash"),
    (Shell::Zsh, "_tritonctl"),
    (Shell::Fish, "tritonctl.fish"),
    (Shell::Elvish, "tritonctl.elv"),
    (Shell::PowerShell, "_tritonctl.ps1"),
];

/// Writes `dir/completions/*` and `dir/man/*.1`, replacing what is there.
pub fn write_assets(dir: &Path) -> std::io::Result<()> {
    let comp = dir.join("completions");
    let man = dir.join("man");
    for d in [&comp, &man] {
        std::fs::create_dir_all(d)?;
        // Drop our own earlier output (a page of a removed subcommand must
        // not linger); leave anything else alone.
        for e in std::fs::read_dir(d)? {
            let e = e?;
            if e.file_name().to_string_lossy().contains(BIN) && e.file_type()?.is_file() {
                std::fs::remove_file(e.path())?;
            }
        }
    }
    for (shell, file) in SHELLS {
        let mut buf = Vec::new();
        clap_complete::generate(*shell, &mut crate::cli::command(), BIN, &mut buf);
        crate::files::write_atomic(&comp.join(file), &buf, crate::files::Replace::Allow)?;
    }
    clap_mangen::generate_to(crate::cli::command(), &man)?;
    Ok(())
}
