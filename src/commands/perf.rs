//! `tritonctl perf -m MODEL -u HOST:PORT ...`: load-tests a model on a
//! running KServe v2 / Triton server (see `crate::perf`).
//!
//! Exit status: 0 when every level's error rate is at most
//! `--max-error-rate`, 1 when a level's is above it, 2 for usage errors and
//! when the server or model cannot be reached before the load starts.
//! Without the `perf` feature the command only says so (exit 2).

use super::{CommandError, Context, ExitStatus};
use crate::cli::PerfArgs;
use std::io::Write;

#[cfg(not(feature = "perf"))]
pub fn run(
    _args: &PerfArgs,
    _ctx: &Context,
    _out: &mut dyn Write,
) -> Result<ExitStatus, CommandError> {
    Err(CommandError::Usage(
        "this tritonctl was built without the `perf` feature; rebuild with `--features perf`"
            .into(),
    ))
}

#[cfg(feature = "perf")]
pub fn run(
    args: &PerfArgs,
    ctx: &Context,
    out: &mut dyn Write,
) -> Result<ExitStatus, CommandError> {
    use crate::cli::{PerfFormat, PerfProgress, PerfProtocol, RequestDistribution, TensorFormat};
    use crate::perf::inputs::{DataFile, InputData};
    use crate::perf::load::{self, PerfOptions, Progress, StartError, Window};
    use crate::perf::schedule::{self, Distribution, Level};
    use std::sync::atomic::Ordering;
    use std::sync::Arc;
    use std::time::Duration;

    let usage = CommandError::Usage;
    if args.streaming && args.protocol != PerfProtocol::Grpc {
        return Err(usage("--streaming needs -i grpc".into()));
    }
    let mut intervals = None;
    let intervals_mode = args.request_intervals.is_some()
        && args.concurrency_range.is_none()
        && args.request_rate_range.is_none();
    let levels: Vec<Level> = match (&args.concurrency_range, &args.request_rate_range) {
        (_, Some(r)) => schedule::rate_levels(r).map_err(usage)?,
        (Some(c), None) => schedule::concurrency_levels(c).map_err(usage)?,
        (None, None) => match &args.request_intervals {
            Some(path) => {
                let name = path.display().to_string();
                let text = std::fs::read_to_string(path)
                    .map_err(|e| usage(format!("cannot read {name}: {e}")))?;
                let gaps = schedule::parse_intervals(&name, &text).map_err(usage)?;
                // the level's rate is the file's mean
                let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
                intervals = Some(Arc::new(gaps));
                vec![Level::Rate(1.0 / mean)]
            }
            None => vec![Level::Concurrency(1)],
        },
    };
    let mut headers = Vec::new();
    for h in &args.headers {
        let (k, v) = h
            .split_once(':')
            .ok_or_else(|| usage(format!("-H '{h}' is not Name:Value")))?;
        let (k, v) = (k.trim(), v.trim());
        if k.is_empty()
            || hyper::header::HeaderName::from_bytes(k.as_bytes()).is_err()
            || hyper::header::HeaderValue::from_str(v).is_err()
        {
            return Err(usage(format!("-H '{h}' is not a valid HTTP header")));
        }
        headers.push((k.to_string(), v.to_string()));
    }
    let window = match (args.duration, args.request_count) {
        (_, Some(0)) => return Err(usage("--request-count must be at least 1".into())),
        (_, Some(n)) => Window::Count(n),
        (Some(d), None) if !(d > 0.0 && d.is_finite()) => {
            return Err(usage("--duration must be above 0 seconds".into()))
        }
        (Some(d), None) => Window::Time(Duration::from_secs_f64(d)),
        (None, None) if args.measurement_interval == 0 => {
            return Err(usage("--measurement-interval must be above 0".into()))
        }
        (None, None)
            if !(args.stability_percentage > 0.0 && args.stability_percentage.is_finite()) =>
        {
            return Err(usage("--stability-percentage must be above 0".into()))
        }
        (None, None) if args.max_trials < 3 => {
            return Err(usage(
                "--max-trials must be at least 3 (stability compares the last 3 windows)".into(),
            ))
        }
        (None, None) => Window::Stability {
            interval: Duration::from_millis(args.measurement_interval),
            percentage: args.stability_percentage,
            max_trials: args.max_trials,
        },
    };
    if !(args.sequence_length_variation >= 0.0 && args.sequence_length_variation <= 100.0) {
        return Err(usage(
            "--sequence-length-variation must be a percentage from 0 to 100".into(),
        ));
    }
    let (input_data, data_file) = match InputData::parse(&args.input_data) {
        Ok(d) => (d, None),
        Err(_) => {
            let name = &args.input_data;
            let text = std::fs::read_to_string(name).map_err(|e| {
                usage(format!(
                    "--input-data '{name}' is not 'random', 'zero' or a readable JSON file: {e}"
                ))
            })?;
            (
                InputData::Random,
                Some(DataFile::parse(name, &text).map_err(usage)?),
            )
        }
    };
    if !(args.warmup >= 0.0 && args.warmup.is_finite()) {
        return Err(usage("--warmup must be 0 or more seconds".into()));
    }
    if !(0.0..=1.0).contains(&args.max_error_rate) {
        return Err(usage("--max-error-rate must be between 0 and 1".into()));
    }
    if args.timeout == 0 {
        return Err(usage("--timeout must be above 0 ms".into()));
    }
    // the default server: Triton's HTTP or gRPC port
    let urls = if args.url.is_empty() {
        vec![match args.protocol {
            PerfProtocol::Http => "localhost:8000".to_string(),
            PerfProtocol::Grpc => "localhost:8001".to_string(),
        }]
    } else {
        args.url.clone()
    };
    let opts = PerfOptions {
        model: args.model.clone(),
        version: args.model_version.clone(),
        url: urls[0].clone(),
        urls,
        headers,
        protocol: match args.protocol {
            PerfProtocol::Http => crate::perf::client::Protocol::Http,
            PerfProtocol::Grpc => crate::perf::client::Protocol::Grpc {
                streaming: args.streaming,
            },
        },
        levels: levels.clone(),
        distribution: match args.request_distribution {
            RequestDistribution::Constant => Distribution::Constant,
            RequestDistribution::Poisson => Distribution::Poisson,
        },
        intervals,
        seed: args.seed,
        max_concurrency: args.max_concurrency.max(1),
        window,
        warmup: Duration::from_secs_f64(args.warmup),
        timeout: Duration::from_millis(args.timeout),
        input_data,
        data_file,
        shapes: args.shape.clone(),
        batch: args.batch_size,
        binary_inputs: args.input_tensor_format != Some(TensorFormat::Json),
        binary_outputs: args.output_tensor_format != Some(TensorFormat::Json),
        tensor_formats_given: (
            args.input_tensor_format.is_some(),
            args.output_tensor_format.is_some(),
        ),
        batched: args.batched,
        sequence_length: args.sequence_length,
        sequence_length_variation: args.sequence_length_variation,
        sequence_id_prefix: args.sequence_id_prefix.clone(),
        sequence_ids: sequence_ids(args.sequence_id_range.as_deref()).map_err(usage)?,
        num_sequences: args.num_of_sequences,
    };
    if args.sequence_length == Some(0) || args.num_of_sequences == 0 {
        return Err(usage(
            "--sequence-length and --num-of-sequences must be at least 1".into(),
        ));
    }

    let progress = Arc::new(Progress::default());
    let show = match args.progress {
        PerfProgress::Never => false,
        PerfProgress::Always => true,
        PerfProgress::Auto => !ctx.global.quiet && crate::term::stderr_is_terminal(),
    };
    // forced onto a file or pipe: drawn the same way, through our writer
    let forced = !crate::term::stderr_is_terminal();
    let ticker = show.then(|| {
        let p = progress.clone();
        let n = levels.clone();
        let rate_label = if intervals_mode {
            "req/s (intervals)"
        } else {
            "req/s"
        };
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
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
        (stop, handle)
    });
    let result = load::run(&opts, progress);
    if let Some((stop, handle)) = ticker {
        stop.store(true, Ordering::Relaxed);
        let _ = handle.join();
    }
    let report = match result {
        Ok(r) => r,
        Err(StartError::Usage(m)) => return Err(usage(m)),
        Err(StartError::Unreachable(m)) => return Err(CommandError::Input(m)),
    };
    if !ctx.global.quiet {
        for n in &report.notes {
            crate::term::eprint(&format!("note: {n}\n"));
        }
    }
    for w in &report.warnings {
        crate::term::warning(ctx.global.color, w);
    }
    if let Some(path) = &args.csv {
        std::fs::write(path, report.csv())
            .map_err(|e| CommandError::Input(format!("cannot write {}: {e}", path.display())))?;
    }
    match args.format {
        PerfFormat::Json => writeln!(out, "{}", report.to_json())?,
        PerfFormat::Human => write!(out, "{}", report.table())?,
    }
    out.flush()?;
    for (i, l) in report.levels.iter().enumerate() {
        if l.stable == Some(false) {
            crate::term::warning(
                ctx.global.color,
                &format!(
                    "level {} did not stabilize in {} windows of {} ms (throughput and latency within {}%); its numbers are from the last 3 windows",
                    i + 1,
                    l.windows,
                    args.measurement_interval,
                    args.stability_percentage
                ),
            );
        }
    }
    let worst = report
        .levels
        .iter()
        .map(|l| l.error_rate())
        .fold(0.0f64, f64::max);
    if worst > args.max_error_rate {
        crate::term::warning(
            ctx.global.color,
            &format!(
                "error rate {:.2}% is above --max-error-rate {:.2}%",
                worst * 100.0,
                args.max_error_rate * 100.0
            ),
        );
        return Ok(ExitStatus::Failure);
    }
    Ok(ExitStatus::Success)
}

/// `--sequence-id-range START[:END]` as (first id, how many); without it a
/// random base (from the clock and the process id) and 2^20 ids.
#[cfg(feature = "perf")]
fn sequence_ids(range: Option<&str>) -> Result<(u64, u64), String> {
    const MAX: u64 = 1 << 62;
    match range {
        None => {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0);
            let mut r = crate::perf::rng::Rng::new(nanos ^ ((std::process::id() as u64) << 32));
            Ok((1 + r.below(1 << 40), 1 << 20))
        }
        Some(text) => {
            let bad =
                || format!("--sequence-id-range '{text}' is not START[:END] with 1 <= START < END");
            let (a, b) = match text.split_once(':') {
                Some((a, b)) => (a, Some(b)),
                None => (text, None),
            };
            let start: u64 = a.trim().parse().map_err(|_| bad())?;
            let end: u64 = match b {
                Some(b) => b.trim().parse().map_err(|_| bad())?,
                None => MAX,
            };
            if start == 0 || end <= start || end > MAX {
                return Err(bad());
            }
            Ok((start, end - start))
        }
    }
}

/// Standard error as indicatif's terminal, also when it is a file or pipe
/// (`--progress always`): the same escape sequences a terminal gets.
#[cfg(feature = "perf")]
#[derive(Debug)]
struct StderrTerm;

#[cfg(feature = "perf")]
impl StderrTerm {
    fn put(&self, s: &str) -> std::io::Result<()> {
        std::io::stderr().write_all(s.as_bytes())
    }
}

#[cfg(feature = "perf")]
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
