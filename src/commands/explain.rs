//! `tritonctl explain CODE|NAME` and `tritonctl explain --all`: the rule
//! pages of `crate::lint::docs`, which also generates `docs/rules/`.

use super::{CommandError, Context, ExitStatus};
use crate::cli::ExplainArgs;
use crate::diagnostics::Rule;
use crate::lint::docs::{list, markdown};
use crate::lint::registry::{find_loose as find_rule, unknown_rule_message};
use anstyle::Style;
use std::io::Write;

pub fn run(
    args: &ExplainArgs,
    ctx: &Context,
    out: &mut dyn Write,
) -> Result<ExitStatus, CommandError> {
    if args.all {
        list(out)?;
    } else {
        let code = args.code.as_deref().unwrap_or_default();
        let rule = find_rule(code)
            .ok_or_else(|| CommandError::Usage(unknown_rule_message("rule", code)))?;
        explain(out, rule, ctx.color)?;
    }
    out.flush()?;
    Ok(ExitStatus::Success)
}

/// The documentation of one rule: its Markdown page ([`markdown`]), with
/// the title in bold when `color` is set.
pub fn explain(out: &mut dyn Write, r: &Rule, color: bool) -> std::io::Result<()> {
    let page = markdown(r);
    let bold = if color {
        Style::new().bold()
    } else {
        Style::new()
    };
    let (title, rest) = page.split_once('\n').unwrap_or((&page, ""));
    writeln!(out, "{bold}{title}{bold:#}")?;
    write!(out, "{rest}")
}
