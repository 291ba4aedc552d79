//! Rules: hints (to be filled in).

use crate::diagnostics::Diagnostic;
use crate::lint::registry::Rule;
use crate::lint::ModelCtx;

pub const RULES: &[Rule] = &[];

pub fn check(_ctx: &ModelCtx, _out: &mut Vec<Diagnostic>) {}
