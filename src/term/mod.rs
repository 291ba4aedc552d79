//! The only module that touches the terminal: whether to colour, and the
//! standard streams (writes that never panic; a closed pipe is reported as
//! [`std::io::ErrorKind::BrokenPipe`] for the caller to treat as success).

use std::io::{self, IsTerminal, Write};

/// `--color`: whether human output may be coloured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// Colour when standard output is a terminal, unless NO_COLOR is set or
    /// CLICOLOR=0 (CLICOLOR_FORCE=1: colour anyway).
    Auto,
    /// Always colour, even when NO_COLOR is set.
    Always,
    /// Never colour.
    Never,
}

/// Whether output to a stream is coloured, given `--color`, the environment
/// (`NO_COLOR`, `CLICOLOR_FORCE`, `CLICOLOR`, `TERM=dumb`) and whether the
/// stream is a terminal, in the order anstream decides it for `auto`: a
/// non-empty `NO_COLOR` turns colour off, then `CLICOLOR_FORCE` (not `0`)
/// on, then `CLICOLOR=0` off (docs/spec/cli.md). `--color always` and
/// `never` win over all of them; `NO_COLOR` only turns `auto` off (as
/// ripgrep and ruff do).
pub fn color_enabled(
    choice: ColorChoice,
    is_terminal: bool,
    env: &dyn Fn(&str) -> Option<String>,
) -> bool {
    let set = |k: &str| env(k).is_some_and(|v| !v.is_empty());
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            if set("NO_COLOR") {
                return false;
            }
            if env("CLICOLOR_FORCE").is_some_and(|v| !v.is_empty() && v != "0") {
                return true;
            }
            if env("CLICOLOR").is_some_and(|v| v == "0") {
                return false;
            }
            is_terminal && env("TERM").is_none_or(|t| t != "dumb")
        }
    }
}

fn process_env(k: &str) -> Option<String> {
    std::env::var(k).ok()
}

/// Colour decision for standard output.
pub fn stdout_color(choice: ColorChoice) -> bool {
    color_enabled(choice, io::stdout().is_terminal(), &process_env)
}

/// Colour decision for standard error.
pub fn stderr_color(choice: ColorChoice) -> bool {
    color_enabled(choice, io::stderr().is_terminal(), &process_env)
}

/// Whether standard error is a terminal (progress display).
pub fn stderr_is_terminal() -> bool {
    io::stderr().is_terminal()
}

/// Buffered, locked standard output. Callers must `flush` it and treat a
/// `BrokenPipe` error as a quiet success.
pub fn stdout() -> io::BufWriter<io::StdoutLock<'static>> {
    io::BufWriter::with_capacity(64 * 1024, io::stdout().lock())
}

/// Writes to standard error, ignoring failures (a closed stderr must not
/// turn into a panic, as `eprintln!` would).
pub fn eprint(text: &str) {
    let mut e = io::stderr().lock();
    let _ = e.write_all(text.as_bytes());
    let _ = e.flush();
}

/// `error: message` on standard error, `error:` in red when colour is on.
/// The message is one line: control characters in it (which can only come
/// from the input it quotes) are shown escaped
/// ([`crate::text::display`]).
pub fn error(color: ColorChoice, message: &str) {
    prefixed(color, "error", anstyle::AnsiColor::Red, message);
}

/// `warning: message` on standard error, escaped as [`error`]'s.
pub fn warning(color: ColorChoice, message: &str) {
    prefixed(color, "warning", anstyle::AnsiColor::Yellow, message);
}

/// `note: message` on standard error, escaped as [`error`]'s.
pub fn note(color: ColorChoice, message: &str) {
    prefixed(color, "note", anstyle::AnsiColor::Cyan, message);
}

fn prefixed(color: ColorChoice, prefix: &str, c: anstyle::AnsiColor, message: &str) {
    eprint(&prefixed_line(stderr_color(color), prefix, c, message));
}

fn prefixed_line(color: bool, prefix: &str, c: anstyle::AnsiColor, message: &str) -> String {
    let message = crate::text::display::escape(message);
    if color {
        let s = anstyle::Style::new().bold().fg_color(Some(c.into()));
        format!("{s}{prefix}{s:#}: {message}\n")
    } else {
        format!("{prefix}: {message}\n")
    }
}

/// All of standard input, at most `--max-file-bytes` (`files`).
pub fn read_stdin() -> io::Result<Vec<u8>> {
    crate::files::read_all_limited(
        io::stdin().lock(),
        crate::files::read_policy().max_file_bytes,
    )
}

/// True when the error (or one it wraps) is a closed pipe.
pub fn is_broken_pipe(err: &io::Error) -> bool {
    err.kind() == io::ErrorKind::BrokenPipe
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn messages_show_control_characters_escaped() {
        let line = prefixed_line(
            false,
            "error",
            anstyle::AnsiColor::Red,
            "m/\u{1b}]0;pwned\u{7}: bad\nerror: forged",
        );
        assert_eq!(
            line,
            "error: m/\\u{1b}]0;pwned\\u{7}: bad\\nerror: forged\n"
        );
        let colored = prefixed_line(true, "warning", anstyle::AnsiColor::Yellow, "\u{1b}[2J");
        assert!(colored.ends_with(": \\u{1b}[2J\n"));
    }

    #[test]
    fn no_color_turns_auto_off_but_not_always() {
        let e = env(&[("NO_COLOR", "1")]);
        assert!(!color_enabled(ColorChoice::Auto, true, &e));
        assert!(color_enabled(ColorChoice::Always, false, &e));
        let empty = env(&[("NO_COLOR", "")]);
        assert!(color_enabled(ColorChoice::Auto, true, &empty));
    }

    /// The CLICOLOR conventions with `auto`: `CLICOLOR=0` turns colour off
    /// on a terminal, `CLICOLOR_FORCE` (not `0`) turns it on anywhere and
    /// wins over `CLICOLOR=0`, `NO_COLOR` wins over both; `always` and
    /// `never` are not changed by any of them.
    #[test]
    fn clicolor_zero_turns_auto_off_and_clicolor_force_on() {
        let auto =
            |pairs: &[(&str, &str)], tty: bool| color_enabled(ColorChoice::Auto, tty, &env(pairs));
        assert!(!auto(&[("CLICOLOR", "0")], true));
        assert!(auto(&[("CLICOLOR", "1")], true));
        assert!(!auto(&[("CLICOLOR", "1")], false));
        assert!(auto(&[("CLICOLOR", "")], true));
        assert!(auto(&[("CLICOLOR_FORCE", "1")], false));
        assert!(!auto(&[("CLICOLOR_FORCE", "0")], false));
        assert!(auto(&[("CLICOLOR", "0"), ("CLICOLOR_FORCE", "1")], false));
        assert!(!auto(&[("NO_COLOR", "1"), ("CLICOLOR_FORCE", "1")], true));
        let off = env(&[("CLICOLOR", "0")]);
        assert!(color_enabled(ColorChoice::Always, true, &off));
        let force = env(&[("CLICOLOR_FORCE", "1")]);
        assert!(!color_enabled(ColorChoice::Never, true, &force));
    }

    #[test]
    fn auto_follows_the_terminal() {
        let e = env(&[]);
        assert!(color_enabled(ColorChoice::Auto, true, &e));
        assert!(!color_enabled(ColorChoice::Auto, false, &e));
        assert!(!color_enabled(ColorChoice::Never, true, &e));
        assert!(!color_enabled(
            ColorChoice::Auto,
            true,
            &env(&[("TERM", "dumb")])
        ));
        assert!(color_enabled(
            ColorChoice::Auto,
            false,
            &env(&[("CLICOLOR_FORCE", "1")])
        ));
    }
}
