//! What an interrupted process (SIGINT, SIGTERM, SIGHUP) must undo before
//! it exits, and when signals start being caught.
//!
//! The binary owns signal handling: it gives [`set_guard`] the function that
//! starts catching the signals (in `main.rs`, a thread that undoes what the
//! registries list, then exits with 128 + the signal). Catching is started
//! on first need, not at start-up: every registry of something to undo (the
//! temporary files of `files::write_atomic`, `perf`'s shared-memory regions,
//! the server config `tune --verify` owes) calls [`arm`] before it records
//! its first entry, so a command that never writes (`validate`, `explain`)
//! never starts the thread and keeps the default action of the signals.
//! Starting a thread is a measurable part of a short command's run
//! (CONTRIBUTING.md, "Start-up").

use std::sync::{Once, OnceLock};

static GUARD: OnceLock<fn()> = OnceLock::new();
static ARMED: Once = Once::new();

/// Sets the function that starts catching the signals; the first call
/// wins. Without one (library use, tests), [`arm`] does nothing.
pub fn set_guard(start: fn()) {
    let _ = GUARD.set(start);
}

/// Makes sure the signals are caught from now on: starts the guard once,
/// the first time anything is registered for undoing (or a long-running
/// command starts). Cheap after the first call.
pub fn arm() {
    if let Some(start) = GUARD.get() {
        ARMED.call_once(start);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static STARTS: AtomicUsize = AtomicUsize::new(0);

    fn count() {
        STARTS.fetch_add(1, Ordering::SeqCst);
    }

    #[test]
    fn the_guard_starts_once_on_first_need() {
        // The library's tests set no other guard; writes of other tests
        // may have armed it already, still once.
        set_guard(count);
        arm();
        arm();
        assert_eq!(STARTS.load(Ordering::SeqCst), 1);
    }
}
