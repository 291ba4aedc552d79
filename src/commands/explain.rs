//! `tritonctl explain CODE|NAME` and `tritonctl explain --all`.

use super::{find_rule, unknown_rule_message, CommandError, Context, ExitStatus};
use crate::cli::ExplainArgs;
use crate::lint::registry::{self, Rule};
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

/// The documentation of one rule.
pub fn explain(out: &mut dyn Write, r: &Rule, color: bool) -> std::io::Result<()> {
    let bold = if color {
        Style::new().bold()
    } else {
        Style::new()
    };
    writeln!(out, "{bold}{} ({}){bold:#}", r.code, r.name)?;
    writeln!(out)?;
    writeln!(out, "{}", r.summary)?;
    writeln!(out)?;
    writeln!(out, "Category:          {}", r.category.as_str())?;
    writeln!(out, "Default severity:  {}", r.severity.as_str())?;
    writeln!(
        out,
        "Triton source:     {}",
        r.triton_source.unwrap_or("(none: a tritonctl check)")
    )?;
    writeln!(out)?;
    writeln!(out, "{}", r.docs.trim_end())
}

/// One line per rule: code, severity, category, name, summary.
pub fn list(out: &mut dyn Write) -> std::io::Result<()> {
    let rules = registry::all();
    let name_w = rules.iter().map(|r| r.name.len()).max().unwrap_or(4).max(4);
    writeln!(
        out,
        "{:<5}  {:<8}  {:<10}  {:<name_w$}  SUMMARY",
        "CODE", "SEVERITY", "CATEGORY", "NAME"
    )?;
    for r in rules {
        writeln!(
            out,
            "{:<5}  {:<8}  {:<10}  {:<name_w$}  {}",
            r.code,
            r.severity.as_str(),
            r.category.as_str(),
            r.name,
            r.summary
        )?;
    }
    Ok(())
}
