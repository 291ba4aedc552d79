//! `tritonctl perf -m MODEL -u HOST:PORT ...`: load-tests a model on a
//! running KServe v2 / Triton server (see `crate::perf`).
//!
//! Exit status: 0 when every level's error rate is at most
//! `--max-error-rate` (and with `-l` some level is within the latency
//! threshold), 1 when a level's is above it (or no level is within `-l`),
//! 2 for usage errors and
//! when the server or model cannot be reached before the load starts.
//! Without the `perf` feature the command only says so (exit 2).

use super::{CommandError, Context, ExitStatus};
use crate::cli::PerfArgs;
use std::io::Write;

pub mod merge;
#[cfg(feature = "perf")]
mod progress;

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

/// `--shared-memory`, `--output-shared-memory-size` and
/// `--shared-memory-device`, checked: the combinations that cannot work
/// are usage errors (exit 2), and `cuda` opens the GPU here, before
/// anything is sent, so that a missing driver or GPU says so first.
#[cfg(feature = "perf")]
fn shared_memory(
    args: &PerfArgs,
    api: crate::perf::generative::Api,
) -> Result<crate::perf::shm::SharedMemory, CommandError> {
    use crate::cli::SharedMemoryKind;
    use crate::perf::shm::SharedMemory;
    let usage = CommandError::Usage;
    let flag = match args.shared_memory {
        SharedMemoryKind::None => {
            if let Some(d) = args.shared_memory_device {
                return Err(usage(format!(
                    "--shared-memory-device {d} is for --shared-memory cuda"
                )));
            }
            return Ok(SharedMemory::None);
        }
        SharedMemoryKind::System => "--shared-memory system",
        SharedMemoryKind::Cuda => "--shared-memory cuda",
    };
    if api != crate::perf::generative::Api::Infer {
        return Err(usage(format!(
            "{flag} is for KServe v2 inference requests: leave out --endpoint {}",
            api.name()
        )));
    }
    if args.output_shared_memory_size == 0 {
        return Err(usage(
            "--output-shared-memory-size must be at least 1".into(),
        ));
    }
    match args.shared_memory {
        SharedMemoryKind::System => {
            if let Some(d) = args.shared_memory_device {
                return Err(usage(format!(
                    "--shared-memory-device {d} is for --shared-memory cuda (system shared memory is on no device)"
                )));
            }
            if cfg!(unix) {
                Ok(SharedMemory::System)
            } else {
                Err(usage(crate::perf::shm::NEEDS_POSIX.into()))
            }
        }
        _ => {
            let ordinal = args.shared_memory_device.unwrap_or(0);
            crate::perf::device::cuda(ordinal)
                .map(SharedMemory::Cuda)
                .map_err(|e| {
                    usage(format!(
                        "--shared-memory cuda needs a CUDA GPU and driver on this host: {e}; use --shared-memory system or none"
                    ))
                })
        }
    }
}

#[cfg(feature = "perf")]
pub fn run(
    args: &PerfArgs,
    ctx: &Context,
    out: &mut dyn Write,
) -> Result<ExitStatus, CommandError> {
    use crate::cli::{
        MeasurementMode, PerfEndpoint, PerfFormat, PerfProgress, PerfProtocol, RequestDistribution,
        TensorFormat,
    };
    use crate::perf::generative::Api;
    use crate::perf::inputs::Strings;
    use crate::perf::load::{self, PerfOptions, Progress, StartError};
    use crate::perf::options::{self as check, WindowArgs};
    use crate::perf::schedule::Distribution;
    use std::sync::Arc;
    use std::time::Duration;

    let usage = CommandError::Usage;
    if args.streaming && args.protocol != PerfProtocol::Grpc {
        return Err(usage("--streaming needs -i grpc".into()));
    }
    let api = match args.endpoint {
        PerfEndpoint::Infer => Api::Infer,
        PerfEndpoint::Generate => Api::Generate,
        PerfEndpoint::OpenaiChat => Api::OpenAiChat,
        PerfEndpoint::OpenaiCompletions => Api::OpenAiCompletions,
    };
    if api != Api::Infer && args.protocol == PerfProtocol::Grpc {
        return Err(usage(format!(
            "--endpoint {} is an HTTP endpoint: leave out -i grpc",
            api.name()
        )));
    }
    if api == Api::Infer && (args.prompt_words.is_some() || args.max_tokens.is_some()) {
        return Err(usage(
            "--prompt-words and --max-tokens are for generative endpoints (--endpoint generate, openai-chat or openai-completions)".into(),
        ));
    }
    if api != Api::Infer && args.batch_size != 1 {
        return Err(usage(format!(
            "--endpoint {} sends one prompt per request: use -b 1",
            api.name()
        )));
    }
    let prompt_words = args
        .prompt_words
        .as_deref()
        .map(crate::perf::prompts::parse_words)
        .transpose()
        .map_err(usage)?;
    if args.max_tokens == Some(0) {
        return Err(usage("--max-tokens must be at least 1".into()));
    }
    let intervals_mode = args.request_intervals.is_some()
        && args.concurrency_range.is_none()
        && args.request_rate_range.is_none();
    check::check_latency_threshold(args.latency_threshold).map_err(usage)?;
    let binary_search = if args.binary_search {
        if intervals_mode {
            return Err(usage(
                "--binary-search searches a --concurrency-range or --request-rate-range, not --request-intervals".into(),
            ));
        }
        Some(
            check::binary_range(
                args.concurrency_range.as_deref(),
                args.request_rate_range.as_deref(),
            )
            .map_err(usage)?,
        )
    } else {
        None
    };
    let check::LoadLevels { levels, intervals } = match binary_search {
        // a search measures few of the range's loads: the range is not
        // expanded into a list (a fine STEP is its normal use)
        Some(r) => check::LoadLevels {
            levels: vec![r.start, r.end],
            intervals: None,
        },
        None => check::levels(
            args.concurrency_range.as_deref(),
            args.request_rate_range.as_deref(),
            args.request_intervals.as_deref(),
            args.latency_threshold.is_some(),
        )
        .map_err(usage)?,
    };
    check::check_concurrency(&levels).map_err(usage)?;
    let headers = check::headers(&args.headers).map_err(usage)?;
    let count_windows = check::measurement_mode(
        args.measurement_mode == MeasurementMode::CountWindows,
        args.measurement_request_count,
        args.duration.is_some() || args.request_count.is_some(),
    )
    .map_err(usage)?;
    let window = check::window(WindowArgs {
        duration: args.duration,
        request_count: args.request_count,
        measurement_interval: args.measurement_interval,
        stability_percentage: args.stability_percentage,
        max_trials: args.max_trials,
        count_windows,
    })
    .map_err(usage)?;
    check::check_sequence_length_variation(args.sequence_length_variation).map_err(usage)?;
    let (input_data, data_file, prompts) =
        check::input_data(&args.input_data, api).map_err(usage)?;
    if prompts.is_some() && prompt_words.is_some() {
        return Err(usage(
            "--prompt-words makes synthetic prompts: leave it out when --input-data gives a prompt file".into(),
        ));
    }
    check::check_limits(args.warmup, args.max_error_rate, args.timeout).map_err(usage)?;
    check::check_maxima(
        args.max_concurrency,
        args.max_response_bytes,
        args.max_input_bytes,
    )
    .map_err(usage)?;
    if let Some(path) = &args.plot {
        check_plot_path(path).map_err(usage)?;
    }
    if let Some(url) = &args.metrics_url {
        crate::perf::metrics::metrics_url(Some(url), "localhost:8000").map_err(usage)?;
    }
    let urls = check::urls(&args.url, args.protocol == PerfProtocol::Grpc);
    let start_at = args
        .start_at
        .as_deref()
        .map(crate::perf::shard::parse_start_at)
        .transpose()
        .map_err(usage)?;
    let start_past = match start_at {
        Some(at) => {
            crate::perf::shard::check_start_at(at, std::time::SystemTime::now()).map_err(usage)?
        }
        None => None,
    };
    let shard = args
        .shard
        .as_deref()
        .map(crate::perf::shard::Shard::parse)
        .transpose()
        .map_err(usage)?;
    let sequence_ids = match shard {
        Some(s) => {
            check::check_shard_sweep(args.latency_threshold.is_some()).map_err(usage)?;
            s.check_levels(&levels).map_err(usage)?;
            check::shard_sequence_ids(args.sequence_id_range.as_deref(), s, args.seed, start_at)
                .map_err(usage)?
        }
        None => check::sequence_ids(args.sequence_id_range.as_deref()).map_err(usage)?,
    };
    check::check_sequences(args.sequence_length, args.num_of_sequences).map_err(usage)?;
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
        max_concurrency: args.max_concurrency,
        window,
        percentile: args.percentile,
        strings: match (&args.string_data, args.string_length) {
            (Some(s), _) => Strings::Fixed(s.clone()),
            (None, Some(n)) => Strings::Random(n),
            (None, None) => Strings::default(),
        },
        warmup: Duration::from_secs_f64(args.warmup),
        timeout: Duration::from_millis(args.timeout),
        max_response_bytes: args.max_response_bytes,
        max_input_bytes: args.max_input_bytes,
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
        sequence_ids,
        num_sequences: args.num_of_sequences,
        api,
        prompts: prompts.map(Arc::new),
        prompt_words,
        max_tokens: args.max_tokens,
        shared_memory: shared_memory(args, api)?,
        output_shm_size: args.output_shared_memory_size,
        tls: tls_options(args),
        latency_threshold_ms: args.latency_threshold,
        binary_search,
        metrics: args.collect_metrics.then(|| {
            (
                args.metrics_url.clone(),
                Duration::from_millis(args.metrics_interval.unwrap_or(1000)),
            )
        }),
        shard,
        // a time already past is warned about here, once, and not waited for
        start_at: start_at.filter(|_| start_past.is_none()),
    };
    if let Some(late) = start_past {
        crate::term::warning(
            ctx.global.color,
            &format!(
                "--start-at {} is {:.3} s in the past; starting at once",
                args.start_at.as_deref().unwrap_or_default(),
                late.as_secs_f64()
            ),
        );
    }

    // perf_analyzer's flags of its client threads: accepted, and said what
    // tritonctl does instead
    if !ctx.global.quiet {
        if args.r#async || args.sync {
            let flag = if args.sync { "--sync" } else { "--async" };
            crate::term::eprint(&format!(
                "note: {flag} is accepted for perf_analyzer's command lines: tritonctl is always asynchronous (the closed or open loop is the same either way)\n"
            ));
        }
        if args.max_threads.is_some() {
            crate::term::eprint(
                "note: --max-threads is accepted for perf_analyzer's command lines: tritonctl's asynchronous runtime needs no thread per request\n",
            );
        }
    }
    if args.ssl_https_verify_peer == 0
        && args.protocol == PerfProtocol::Http
        && opts.urls.iter().any(|u| crate::perf::tls::is_https(u))
    {
        crate::term::warning(
            ctx.global.color,
            "--ssl-https-verify-peer 0: the server's certificate is not checked; anyone on the path can pose as the server",
        );
    }
    let progress = Arc::new(Progress::default());
    let show = match args.progress {
        PerfProgress::Never => false,
        PerfProgress::Always => true,
        PerfProgress::Auto => !ctx.global.quiet && crate::term::stderr_is_terminal(),
    };
    let ticker = show.then(|| {
        progress::Ticker::start(
            progress.clone(),
            levels,
            intervals_mode,
            binary_search.is_some(),
        )
    });
    let result = match &args.export_requests {
        None => load::run(&opts, progress, None),
        // the lines go to a temporary file that replaces FILE when the run
        // is over; a run that cannot start leaves FILE as it was
        Some(path) => {
            let mut outcome = None;
            let written =
                crate::files::write_atomic_with(path, crate::files::Replace::Allow, |w| {
                    let r = load::run(&opts, progress, Some(w));
                    let failed = match &r {
                        Ok(_) => None,
                        Err(StartError::Export(e)) => {
                            Some(std::io::Error::new(e.kind(), e.to_string()))
                        }
                        Err(_) => Some(std::io::Error::other("the run did not start")),
                    };
                    outcome = Some(r);
                    failed.map_or(Ok(()), Err)
                });
            match (outcome, written) {
                (Some(Err(StartError::Export(e))), _) | (Some(Ok(_)), Err(e)) => {
                    Err(StartError::Export(e))
                }
                (Some(r), _) => r,
                (None, Err(e)) => Err(StartError::Export(e)),
                (None, Ok(())) => Err(StartError::Unreachable("the load did not run".into())),
            }
        }
    };
    if let Some(ticker) = ticker {
        ticker.stop();
    }
    let report = match result {
        Ok(r) => r,
        Err(StartError::Usage(m)) => return Err(usage(m)),
        Err(StartError::Unreachable(m)) => return Err(CommandError::Input(m)),
        Err(StartError::Export(e)) => {
            let path = args
                .export_requests
                .as_deref()
                .unwrap_or(std::path::Path::new("-"));
            return Err(CommandError::Input(format!(
                "cannot write {}: {}",
                crate::text::display::path(path),
                crate::files::io_message(&e)
            )));
        }
    };
    notes_and_csv(&report, ctx, args.csv.as_deref())?;
    // what was measured is plotted, failed levels included
    if let Some(path) = &args.plot {
        write_file(path, crate::perf::plot::render(&report).as_bytes())?;
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
                    "level {} did not stabilize in {} windows of {} (throughput and {} latency within {}%); its numbers are from the last 3 windows",
                    i + 1,
                    l.windows,
                    match window {
                        load::Window::Stability { count: Some(n), .. } =>
                            format!("at least {n} requests"),
                        _ => format!("{} ms", args.measurement_interval),
                    },
                    args.percentile.map_or("mean".to_string(), |p| format!("p{p}")),
                    args.stability_percentage
                ),
            );
        }
    }
    // -l: no level within the threshold is a failure (the lowest load
    // measured is already too slow)
    let none_within = args.latency_threshold.is_some()
        && !report
            .levels
            .iter()
            .any(|l| l.latency_threshold_met == Some(true));
    if none_within {
        crate::term::warning(
            ctx.global.color,
            &format!(
                "no level measured is within the latency threshold of {} ms",
                args.latency_threshold.unwrap_or_default()
            ),
        );
    }
    let worst = report.worst_error_rate();
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
    if none_within {
        return Ok(ExitStatus::Failure);
    }
    Ok(ExitStatus::Success)
}

/// The `--ssl-https-*` and `--ssl-grpc-*` flags.
#[cfg(feature = "perf")]
fn tls_options(args: &PerfArgs) -> crate::perf::tls::TlsOptions {
    use crate::cli::CertEncoding;
    use crate::perf::tls::{Encoding, GrpcTlsOptions, HttpsOptions, TlsOptions};
    let enc = |e: CertEncoding| match e {
        CertEncoding::Pem => Encoding::Pem,
        CertEncoding::Der => Encoding::Der,
    };
    TlsOptions {
        https: HttpsOptions {
            verify_peer: args.ssl_https_verify_peer != 0,
            verify_host: args.ssl_https_verify_host,
            ca_file: args.ssl_https_ca_certificates_file.clone(),
            client_cert: args
                .ssl_https_client_certificate_file
                .clone()
                .map(|p| (p, enc(args.ssl_https_client_certificate_type))),
            private_key: args
                .ssl_https_private_key_file
                .clone()
                .map(|p| (p, enc(args.ssl_https_private_key_type))),
        },
        grpc: GrpcTlsOptions {
            use_ssl: args.ssl_grpc_use_ssl,
            root_certs: args.ssl_grpc_root_certifications_file.clone(),
            private_key: args.ssl_grpc_private_key_file.clone(),
            cert_chain: args.ssl_grpc_certificate_chain_file.clone(),
        },
    }
}

/// `--plot FILE` is checked before the load, so that a run is not lost to
/// a path that cannot be written: its directory must exist, and FILE must
/// not be a directory.
#[cfg(feature = "perf")]
fn check_plot_path(path: &std::path::Path) -> Result<(), String> {
    let shown = crate::text::display::path(path);
    if path.is_dir() {
        return Err(format!(
            "--plot {shown}: is a directory, not a file to write"
        ));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    if !dir.is_dir() {
        return Err(format!(
            "--plot {shown}: the directory {} does not exist",
            crate::text::display::path(dir)
        ));
    }
    Ok(())
}

/// A report's notes (unless `-q`) and warnings on standard error, and its
/// CSV to `csv` (`-f`): for `perf` and `perf merge` alike.
#[cfg(feature = "perf")]
pub(super) fn notes_and_csv(
    report: &crate::perf::report::PerfReport,
    ctx: &Context,
    csv: Option<&std::path::Path>,
) -> Result<(), CommandError> {
    if !ctx.global.quiet {
        for n in &report.notes {
            // notes quote the server's answers and the files merged
            crate::term::eprint(&format!("note: {}\n", crate::text::display::Untrusted(n)));
        }
    }
    for w in &report.warnings {
        crate::term::warning(ctx.global.color, w);
    }
    if let Some(path) = csv {
        write_file(path, report.csv().as_bytes())?;
    }
    Ok(())
}

/// `bytes` written atomically to `path` (an output file of the command).
#[cfg(feature = "perf")]
fn write_file(path: &std::path::Path, bytes: &[u8]) -> Result<(), CommandError> {
    crate::files::write_atomic(path, bytes, crate::files::Replace::Allow).map_err(|e| {
        CommandError::Input(format!(
            "cannot write {}: {}",
            crate::text::display::path(path),
            crate::files::io_message(&e)
        ))
    })
}
