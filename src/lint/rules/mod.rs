//! Rules by area. Each module declares its rules (`RULES`, part of the one
//! registry) next to the code that raises them (`check`).

pub mod bls;
pub mod ensemble;
pub mod hints;
pub mod instance;
pub mod io;
pub mod model;
pub mod repository;
pub mod scheduler;
pub mod stateful;
pub mod suppress;
pub mod warmup;

use super::ModelCtx;
use crate::diagnostics::Diagnostic;

/// Per-model rules, in Triton's stage order.
pub fn check_model(ctx: &ModelCtx, out: &mut Vec<Diagnostic>) {
    model::check(ctx, out);
    io::check(ctx, out);
    ensemble::check(ctx, out);
    instance::check(ctx, out);
    scheduler::check(ctx, out);
    warmup::check(ctx, out);
    stateful::check(ctx, out);
    repository::check(ctx, out);
    hints::check(ctx, out);
}
