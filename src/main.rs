//! The `tritonctl` binary: parse the arguments, run the command, map the
//! outcome to an exit code (0 no error findings, 1 findings, 2 usage error,
//! unreadable input or internal error). A closed stdout (`| head`) is a
//! quiet success; a panic is reported as an internal error, exit 2.

use clap::Parser;
use std::process::ExitCode;
use tritonctl::cli::{Cli, Command, PerfAction};
use tritonctl::commands::{self, CommandError, Context, ExitStatus};
use tritonctl::term;

fn main() -> ExitCode {
    std::panic::set_hook(Box::new(|info| {
        term::eprint(&format!(
            "error: internal error (a bug in tritonctl {}; please report it): {info}\n",
            env!("CARGO_PKG_VERSION")
        ));
    }));
    let status = std::panic::catch_unwind(run).unwrap_or(ExitStatus::Error);
    ExitCode::from(status.code() as u8)
}

fn run() -> ExitStatus {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version go to stdout and succeed; usage errors exit 2.
            let _ = e.print();
            return if e.use_stderr() {
                ExitStatus::Error
            } else {
                ExitStatus::Success
            };
        }
    };
    match dispatch(&cli) {
        Ok(status) => status,
        Err(e) => {
            let e: anyhow::Error = e.into();
            if e.downcast_ref::<CommandError>()
                .is_some_and(CommandError::is_broken_pipe)
            {
                return ExitStatus::Success;
            }
            term::error(cli.global.color, &format!("{e:#}"));
            ExitStatus::Error
        }
    }
}

fn dispatch(cli: &Cli) -> Result<ExitStatus, CommandError> {
    tritonctl::files::set_read_policy(tritonctl::files::ReadPolicy {
        max_file_bytes: cli.global.max_file_bytes,
        follow_symlinks: cli.global.follow_symlinks,
    });
    tritonctl::interrupt::set_guard(catch_signals);
    if matches!(cli.command, Command::Perf(_) | Command::Tune(_)) {
        // Load tests run long and hold server state: Ctrl-C always exits
        // through the guard (exit 130). Other commands start it on their
        // first write (src/interrupt.rs).
        tritonctl::interrupt::arm();
    }
    let ctx = Context {
        global: &cli.global,
        color: term::stdout_color(cli.global.color),
    };
    let mut out = term::stdout();
    match &cli.command {
        Command::Validate(a) => commands::validate::run(a, &ctx, &mut out),
        Command::Explain(a) => commands::explain::run(a, &ctx, &mut out),
        Command::Completions(a) => commands::completions::run(a, &mut out),
        Command::Fmt(a) => commands::fmt::run(a, &ctx, &mut out),
        Command::Convert(a) => commands::convert::run(a, &ctx, &mut out),
        Command::Autoconfig(a) => commands::autoconfig::run(a, &ctx, &mut out),
        Command::Simulate(a) => commands::simulate::run(a, &ctx, &mut out),
        Command::Trace(a) => commands::trace::run(a, &mut out),
        Command::Doctor(a) => commands::doctor::run(a, &ctx, &mut out),
        Command::Run(a) => commands::run::run(a, &ctx, &mut out),
        Command::Perf(a) => match (&a.action, &a.run) {
            (Some(PerfAction::Merge(m)), _) => commands::perf::merge::run(m, &ctx, &mut out),
            (None, Some(run)) => commands::perf::run(run, &ctx, &mut out),
            // clap requires -m without a subcommand
            (None, None) => Err(CommandError::Usage("perf needs -m MODEL".into())),
        },
        Command::Tune(a) => commands::tune::run(a, &ctx, &mut out),
    }
}

/// From now on, on SIGINT, SIGTERM or SIGHUP: remove the temporary files
/// of writes in progress (`files::write_atomic`), then exit with 128 + the
/// signal, as a shell reports a process the signal ended. Started by
/// `interrupt::arm`, once. A signal ignored when the process started stays
/// ignored: `nohup` (SIGHUP) and a shell's background jobs (SIGINT) ask
/// for that.
fn catch_signals() {
    #[cfg(unix)]
    {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let wanted: Vec<i32> = [SIGINT, SIGTERM, SIGHUP]
            .into_iter()
            .filter(|&s| !ignored(s))
            .collect();
        if wanted.is_empty() {
            return;
        }
        let Ok(mut signals) = signal_hook::iterator::Signals::new(wanted) else {
            return;
        };
        // Without a thread the handlers are unregistered again (the closure
        // and its `signals` are dropped) and the signals keep their default
        // action; a failed spawn is not a panic inside `interrupt::arm`.
        let _ = std::thread::Builder::new().spawn(move || {
            if let Some(signal) = signals.forever().next() {
                tritonctl::files::remove_temporary_files();
                // `perf --shared-memory`: its regions and memory objects
                #[cfg(feature = "perf")]
                tritonctl::perf::shm::release_on_signal();
                // `tune --verify`: the server's own config of the model
                #[cfg(feature = "perf")]
                if let Some((model, done)) = tritonctl::perf::repository::restore_on_signal() {
                    let model = tritonctl::text::display::Untrusted(&model);
                    let message = if done {
                        format!("note: the server's config of model '{model}' was loaded back\n")
                    } else {
                        format!("error: the server's config of model '{model}' could not be loaded back: it still runs a candidate of tune --verify\n")
                    };
                    tritonctl::term::eprint(&message);
                }
                // `_exit`, not `exit`: the other threads are still running
                // (ONNX Runtime, tokio), and the C and C++ exit handlers
                // `exit` runs could wait on them or free what they use.
                // SAFETY: `_exit` ends the process at once; nothing after it runs.
                unsafe { libc::_exit(128 + signal) }
            }
        });
    }
}

/// Whether `signal` is ignored (SIG_IGN), as inherited from the parent.
#[cfg(unix)]
fn ignored(signal: i32) -> bool {
    // SAFETY: a null new action only reads the current one into `old`,
    // which is a plain C struct that zeroes make valid.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal, std::ptr::null(), &mut old) == 0
            && old.sa_sigaction == libc::SIG_IGN
    }
}

/// With feature `run`, the whole process allocates with mimalloc: the Rust
/// code through this global allocator; every C and C++ library of the
/// process through `malloc` and `free`, which the `override` build exports
/// in place of the C library's, and through C++'s `operator new` and
/// `operator delete`, which `build.rs` exports. That is the point: ONNX
/// Runtime allocates and frees dozens of small blocks in each run, which
/// glibc's `malloc` makes measurably slower (docs/commands/run.md;
/// `cargo bench --bench run`). Triton's own documentation likewise
/// suggests running the server with tcmalloc or jemalloc in place of
/// glibc's `malloc`. The allocator is the program's choice, so it is set
/// here and not in the library; the benchmarks of `run` set the same one.
#[cfg(feature = "run")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[cfg(all(test, feature = "run"))]
mod allocator_tests {
    use std::ffi::{c_char, c_void, CStr};

    extern "C" {
        // The C library's: it allocates its copy with `malloc`, called
        // through the dynamic linker as any shared library's call is.
        fn strdup(s: *const c_char) -> *mut c_char;
        fn free(p: *mut c_void);
        // mimalloc's (compiled in by the `mimalloc` crate).
        fn mi_is_in_heap_region(p: *const c_void) -> bool;
        // Its C++ `operator new`, exported by `build.rs` (64-bit Linux).
        #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
        fn _Znwm(n: usize) -> *mut c_void;
    }

    #[test]
    fn shared_libraries_allocate_with_mimalloc() {
        let text = c"ONNX Runtime allocates through malloc";
        // SAFETY: a NUL-terminated string; the copy is freed once.
        unsafe {
            let copy = strdup(text.as_ptr());
            assert!(!copy.is_null());
            assert_eq!(CStr::from_ptr(copy), text);
            assert!(
                mi_is_in_heap_region(copy as *const c_void),
                "a C library's malloc did not go to mimalloc"
            );
            free(copy as *mut c_void);
        }
        // The Rust side: the global allocator.
        let v: Box<[u8]> = vec![1u8; 100].into_boxed_slice();
        // SAFETY: a live allocation.
        assert!(unsafe { mi_is_in_heap_region(v.as_ptr() as *const c_void) });
    }

    // `build.rs` exports the operators on 64-bit Linux (their mangled
    // names depend on the width of `size_t`).
    #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
    #[test]
    fn shared_libraries_find_mimallocs_operator_new_first() {
        // What the dynamic linker finds for `operator new` in the global
        // scope (the program first, then the libraries in load order) is
        // what ONNX Runtime's `new` calls.
        let program = libloading::os::unix::Library::this();
        // SAFETY: the symbol is a function of this signature.
        let found = unsafe { program.get::<unsafe extern "C" fn(usize) -> *mut c_void>(b"_Znwm") }
            .expect("operator new is exported");
        assert_eq!(*found as *const (), _Znwm as *const ());
        // SAFETY: a live allocation of 16 bytes, freed once.
        unsafe {
            let p = found(16);
            assert!(mi_is_in_heap_region(p));
            free(p);
        }
    }
}
