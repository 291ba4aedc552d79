//! The progress line of `tritonctl perf` on standard error: one
//! indicatif spinner per load level with the requests and errors so far,
//! drawn from a thread of its own while the load runs.

use crate::perf::load::Progress;
use crate::perf::schedule::Level;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The drawing thread; [`Ticker::stop`] ends it.
pub(super) struct Ticker {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<()>,
}

impl Ticker {
    /// Starts drawing `progress` over `levels` (`intervals`: the level's
    /// rate comes from `--request-intervals`).
    pub(super) fn start(progress: Arc<Progress>, levels: Vec<Level>, intervals: bool) -> Ticker {
        // forced onto a file or pipe: drawn the same way, through our writer
        let forced = !crate::term::stderr_is_terminal();
        let p = progress;
        let n = levels;
        let rate_label = if intervals {
            "req/s (intervals)"
        } else {
            "req/s"
        };
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let handle = std::thread::spawn(move || {
            let new_bar = || {
                let target = if forced {
                    indicatif::ProgressDrawTarget::term_like(Box::new(StderrTerm))
                } else {
                    indicatif::ProgressDrawTarget::stderr()
                };
                let bar = indicatif::ProgressBar::with_draw_target(None, target);
                if let Ok(style) =
                    indicatif::ProgressStyle::with_template("{spinner} [{elapsed}] {msg}")
                {
                    bar.set_style(style);
                }
                bar
            };
            let message = |i: usize| {
                let what = match n.get(i) {
                    Some(Level::Concurrency(c)) => format!("concurrency {c}"),
                    Some(Level::Rate(r)) => format!("{r:.1} {rate_label}"),
                    None => String::new(),
                };
                format!(
                    "level {}/{} ({what}): {} requests, {} errors",
                    i + 1,
                    n.len(),
                    p.done.load(Ordering::Relaxed),
                    p.errors.load(Ordering::Relaxed)
                )
            };
            // one bar per level; a finished level keeps its last line
            let mut current = 0usize;
            let mut bar = new_bar();
            loop {
                let stopping = s.load(Ordering::Relaxed);
                let i = p.level.load(Ordering::Relaxed) as usize;
                if i != current {
                    bar.finish();
                    bar = new_bar();
                    current = i;
                }
                bar.set_message(message(i));
                bar.tick();
                if stopping {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            bar.finish();
        });
        Ticker { stop, handle }
    }

    /// Draws the last line and waits for the thread.
    pub(super) fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.handle.join();
    }
}

/// Standard error as indicatif's terminal, also when it is a file or pipe
/// (`--progress always`): the same escape sequences a terminal gets.
#[derive(Debug)]
struct StderrTerm;

impl StderrTerm {
    fn put(&self, s: &str) -> std::io::Result<()> {
        std::io::stderr().write_all(s.as_bytes())
    }
}

impl indicatif::TermLike for StderrTerm {
    fn width(&self) -> u16 {
        100
    }
    fn move_cursor_up(&self, n: usize) -> std::io::Result<()> {
        if n > 0 {
            self.put(&format!("\x1b[{n}A"))?;
        }
        Ok(())
    }
    fn move_cursor_down(&self, n: usize) -> std::io::Result<()> {
        if n > 0 {
            self.put(&format!("\x1b[{n}B"))?;
        }
        Ok(())
    }
    fn move_cursor_right(&self, n: usize) -> std::io::Result<()> {
        if n > 0 {
            self.put(&format!("\x1b[{n}C"))?;
        }
        Ok(())
    }
    fn move_cursor_left(&self, n: usize) -> std::io::Result<()> {
        if n > 0 {
            self.put(&format!("\x1b[{n}D"))?;
        }
        Ok(())
    }
    fn write_line(&self, s: &str) -> std::io::Result<()> {
        self.put(&format!("{s}\n"))
    }
    fn write_str(&self, s: &str) -> std::io::Result<()> {
        self.put(s)
    }
    fn clear_line(&self) -> std::io::Result<()> {
        self.put("\r\x1b[2K")
    }
    fn flush(&self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}
