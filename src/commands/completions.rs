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
    out.write_all(&script(args.shell))?;
    out.flush()?;
    Ok(ExitStatus::Success)
}

/// The completion script for `shell`.
fn script(shell: Shell) -> Vec<u8> {
    let mut cmd = crate::cli::command();
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cmd, BIN, &mut buf);
    if shell == Shell::Fish {
        fish_positional_values(&cmd, &mut buf);
    }
    buf
}

/// clap_complete's fish generator completes options and subcommands only;
/// this adds the possible values of the subcommands' positionals
/// (`explain`'s rule codes, `completions`' shells) in the form it uses for
/// an option's values: one `NAME\t'HELP'` line each, quoted as it quotes
/// them.
fn fish_positional_values(cmd: &clap::Command, buf: &mut Vec<u8>) {
    let escape = |s: &str| {
        s.replace('\\', "\\\\")
            .replace('\'', "\\'")
            .replace('"', "\\\"")
            .replace('$', "\\$")
            .replace('\n', " ")
    };
    for sub in cmd.get_subcommands() {
        for pos in sub.get_positionals() {
            let values: Vec<String> = pos
                .get_possible_values()
                .iter()
                .filter(|v| !v.is_hide_set())
                .map(|v| {
                    let help = v.get_help().map(|h| h.to_string()).unwrap_or_default();
                    format!("{}\\t'{}'", escape(v.get_name()), escape(&help))
                })
                .collect();
            if values.is_empty() {
                continue;
            }
            buf.extend_from_slice(
                format!(
                    "complete -c {BIN} -n \"__fish_{BIN}_using_subcommand {}\" -f -a \"{}\"\n",
                    sub.get_name(),
                    values.join("\n")
                )
                .as_bytes(),
            );
        }
    }
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
        let buf = script(*shell);
        crate::files::write_atomic(&comp.join(file), &buf, crate::files::Replace::Allow)?;
    }
    clap_mangen::generate_to(crate::cli::command(), &man)?;
    Ok(())
}
