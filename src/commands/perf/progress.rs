//! The progress of `tritonctl perf` on standard error, drawn from a thread
//! of its own while the load runs: on a terminal one indicatif spinner per
//! load level with the requests and errors so far; on a file or pipe
//! (`--progress always` in a CI log) plain lines, without carriage returns
//! or escape sequences: one every [`PLAIN_EVERY`] and one per finished
//! level.

use crate::perf::load::{Finished, Progress};
use crate::perf::schedule::Level;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often a plain progress line is printed during a level.
pub(super) const PLAIN_EVERY: Duration = Duration::from_secs(5);

/// The drawing thread; [`Ticker::stop`] ends it.
pub(super) struct Ticker {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<()>,
}

/// `concurrency=4`, `rate=250/s`.
fn load_label(level: Option<Level>, intervals: bool) -> String {
    match level {
        Some(Level::Concurrency(c)) => format!("concurrency={c}"),
        Some(Level::Rate(r)) if intervals => format!("rate={r:.1}/s (intervals)"),
        Some(Level::Rate(r)) => format!("rate={r}/s"),
        None => String::new(),
    }
}

/// The line for a finished level.
fn finished_line(i: usize, f: &Finished, intervals: bool) -> String {
    format!(
        "perf: level {} {} done: {} requests, {} errors, {:.1} infer/s, mean latency {}, {:.1} s\n",
        i + 1,
        load_label(Some(f.level), intervals),
        f.requests,
        f.errors,
        f.throughput_per_s,
        f.mean_latency_us
            .map_or("-".to_string(), |us| format!("{:.2} ms", us / 1000.0)),
        f.duration_s
    )
}

impl Ticker {
    /// Starts drawing `progress` over `levels` (`intervals`: the level's
    /// rate comes from `--request-intervals`; `searching`: a binary search
    /// picks the levels, so their number is not known).
    pub(super) fn start(
        progress: Arc<Progress>,
        levels: Vec<Level>,
        intervals: bool,
        searching: bool,
    ) -> Ticker {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let handle = if crate::term::stderr_is_terminal() {
            std::thread::spawn(move || bar(&progress, &levels, intervals, searching, &s))
        } else {
            std::thread::spawn(move || plain(&progress, intervals, &s))
        };
        Ticker { stop, handle }
    }

    /// Draws the last line and waits for the thread.
    pub(super) fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.handle.join();
    }
}

/// Plain lines for a file or pipe.
fn plain(p: &Progress, intervals: bool, stop: &AtomicBool) {
    let mut printed = 0usize;
    let mut level = u64::MAX;
    let mut last = (Instant::now(), 0u64);
    let mut started = Instant::now();
    loop {
        let stopping = stop.load(Ordering::Relaxed);
        let finished: Vec<Finished> = p.finished.lock().expect("progress lock")[printed..].to_vec();
        for f in &finished {
            crate::term::eprint(&finished_line(printed, f, intervals));
            printed += 1;
        }
        if stopping {
            break;
        }
        let i = p.level.load(Ordering::Relaxed);
        let done = p.done.load(Ordering::Relaxed);
        if i != level {
            level = i;
            started = Instant::now();
            last = (started, 0);
        } else if last.0.elapsed() >= PLAIN_EVERY && (i as usize) >= printed {
            let now = Instant::now();
            let rate = done.saturating_sub(last.1) as f64
                / now.duration_since(last.0).as_secs_f64().max(1e-9);
            let current = *p.current.lock().expect("progress lock");
            crate::term::eprint(&format!(
                "perf: level {} {} {:.1} s: {} requests, {} errors, {:.1} req/s\n",
                i + 1,
                load_label(current, intervals),
                now.duration_since(started).as_secs_f64(),
                done,
                p.errors.load(Ordering::Relaxed),
                rate
            ));
            last = (now, done);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The indicatif bar on a terminal.
fn bar(p: &Progress, n: &[Level], intervals: bool, searching: bool, stop: &AtomicBool) {
    let new_bar = || {
        let bar =
            indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr());
        if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} [{elapsed}] {msg}") {
            bar.set_style(style);
        }
        bar
    };
    let rate_label = if intervals {
        "req/s (intervals)"
    } else {
        "req/s"
    };
    let message = |i: usize| {
        let what = match *p.current.lock().expect("progress lock") {
            Some(Level::Concurrency(c)) => format!("concurrency {c}"),
            Some(Level::Rate(r)) => format!("{r:.1} {rate_label}"),
            None => String::new(),
        };
        let of = if searching {
            " (binary search)".to_string()
        } else {
            format!("/{}", n.len())
        };
        format!(
            "level {}{of} ({what}): {} requests, {} errors",
            i + 1,
            p.done.load(Ordering::Relaxed),
            p.errors.load(Ordering::Relaxed)
        )
    };
    // one bar per level; a finished level keeps its last line
    let mut current = 0usize;
    let mut bar = new_bar();
    loop {
        let stopping = stop.load(Ordering::Relaxed);
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
}
