//! Command-line definition (clap types only; behaviour lives in
//! `crate::commands`). The contract is docs/spec/cli.md: names, flags and
//! exit codes here are stable.

pub use crate::term::ColorChoice;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Validate, auto-configure, simulate, run and load-test NVIDIA Triton
/// Inference Server models.
#[derive(Debug, Parser)]
#[command(
    name = "tritonctl",
    version,
    propagate_version = true,
    disable_help_subcommand = true,
    after_help = "Exit status: 0 no error findings, 1 error findings, 2 usage error, unreadable input or internal error."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Options every subcommand accepts.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Global options")]
pub struct GlobalArgs {
    /// When to use colour in human output (`auto`: on a terminal, unless
    /// NO_COLOR is set or CLICOLOR=0; CLICOLOR_FORCE=1 turns it on).
    #[arg(
        long,
        value_enum,
        global = true,
        default_value_t = ColorChoice::Auto,
        value_name = "WHEN"
    )]
    pub color: ColorChoice,
    /// Print only the findings: no summary, no progress.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Also report what was checked (on standard error).
    #[arg(short, long, global = true)]
    pub verbose: bool,
    /// The largest config, trace, input or settings file read, in bytes
    /// (suffixes K, M, G: powers of 1024); ONNX model files have no limit.
    #[arg(long, global = true, value_name = "BYTES", default_value = "64M", value_parser = parse_byte_size)]
    pub max_file_bytes: u64,
    /// Follow symbolic links that lead out of the directory being
    /// processed (a model repository or model directory); without it such
    /// files are reported and not read, nor written through.
    #[arg(long, global = true)]
    pub follow_symlinks: bool,
}

/// A rule code or name (`explain`, `--allow`, `--deny`). Any text parses:
/// the commands resolve it (codes in any case, names) and refuse an unknown
/// one with suggestions. The parser only lists the registry's codes as the
/// possible values that shell completions offer, each with its summary;
/// the arguments hide them from `--help`.
#[derive(Debug, Clone, Copy)]
pub struct RuleCode;

impl clap::builder::TypedValueParser for RuleCode {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        clap::builder::StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(crate::lint::registry::all().iter().map(|r| {
            clap::builder::PossibleValue::new(r.code).help(r.summary)
        })))
    }
}

/// `--max-file-bytes`, `--max-response-bytes`, `--max-input-bytes`: a
/// number of bytes, optionally with K, M or G (KiB, MiB, GiB).
fn parse_byte_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (digits, shift) = match t.char_indices().last() {
        Some((i, c)) if c.eq_ignore_ascii_case(&'k') => (&t[..i], 10),
        Some((i, c)) if c.eq_ignore_ascii_case(&'m') => (&t[..i], 20),
        Some((i, c)) if c.eq_ignore_ascii_case(&'g') => (&t[..i], 30),
        _ => (t, 0),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("'{s}' is not a number of bytes (for example 1048576 or 512M)"))?;
    n.checked_mul(1 << shift).filter(|&n| n > 0).ok_or_else(|| {
        format!(
            "'{s}' must be at least 1 byte and at most {} bytes",
            u64::MAX
        )
    })
}

#[derive(Debug, Subcommand)]
// Each subcommand's arguments are defined only when it is the one run:
// defining all of them took a measurable part of a short command's
// start-up (CONTRIBUTING.md, "Start-up").
#[command(defer = true)]
pub enum Command {
    /// Check config.pbtxt files, model directories and model repositories the
    /// way Triton does when it loads them.
    Validate(ValidateArgs),
    /// Print the documentation of a rule.
    Explain(ExplainArgs),
    /// Print a shell completion script.
    Completions(CompletionsArgs),
    /// Rewrite config.pbtxt files in one canonical layout, comments kept.
    Fmt(FmtArgs),
    /// Convert a config between text format and Triton's JSON form.
    Convert(ConvertArgs),
    /// Print the config Triton's ONNX Runtime backend auto-completes for an
    /// ONNX model.
    Autoconfig(AutoconfigArgs),
    /// Replay a trace of requests through a model's scheduler on a virtual
    /// clock.
    Simulate(SimulateArgs),
    /// Make request traces for `simulate`.
    Trace(TraceArgs),
    /// Report what this machine offers the local runner: ONNX Runtime,
    /// execution providers, CUDA driver and devices.
    Doctor(DoctorArgs),
    /// Run a model locally with ONNX Runtime, batched by the same scheduler
    /// code as `simulate`, on a real clock.
    Run(RunArgs),
    /// Load-test a model on a running KServe v2 / Triton server (closed or
    /// open loop, latency from the intended send time).
    Perf(Box<PerfCommand>),
    /// Find the cheapest config (instances, batching, queue delay) that
    /// meets a latency objective at a workload, on simulate's virtual clock.
    Tune(Box<TuneArgs>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// rustc-style messages with the source line (default).
    Human,
    /// One JSON document (see schemas/validate.schema.json).
    Json,
    /// GitHub Actions workflow commands (annotations).
    Github,
    /// SARIF 2.1.0, for code scanning.
    Sarif,
    /// JUnit XML, one test case per file.
    Junit,
}

#[derive(Debug, Clone, Args)]
pub struct ValidateArgs {
    /// Config files, model directories or model repositories; `-` reads
    /// standard input.
    #[arg(value_name = "PATH", default_value = ".")]
    pub paths: Vec<PathBuf>,
    /// Output format.
    #[arg(
        long,
        value_enum,
        env = "TRITONCTL_FORMAT",
        hide_env_values = true,
        default_value_t = OutputFormat::Human
    )]
    pub format: OutputFormat,
    /// Warnings count as errors.
    #[arg(long)]
    pub strict: bool,
    /// Drop the findings of a rule (code or name; repeatable).
    #[arg(long, value_name = "CODE", value_parser = RuleCode, hide_possible_values = true)]
    pub allow: Vec<String>,
    /// Report the findings of a rule as errors (code or name; repeatable).
    #[arg(long, value_name = "CODE", value_parser = RuleCode, hide_possible_values = true)]
    pub deny: Vec<String>,
    /// Platform assumed when a config names neither platform nor backend and
    /// no model file reveals it.
    #[arg(long, value_name = "PLATFORM")]
    pub platform_default: Option<String>,
    /// A backend installed on the target server besides Triton's standard
    /// ones (repeatable).
    #[arg(long, value_name = "NAME")]
    pub known_backend: Vec<String>,
    /// GPU ids of the target server, comma-separated (default: none, a
    /// CPU-only server).
    #[arg(long, value_name = "IDS", value_delimiter = ',')]
    pub gpus: Vec<i32>,
    /// The target server's minimum supported CUDA compute capability.
    #[arg(long, value_name = "F", default_value = "6.0")]
    pub min_compute_capability: f64,
    /// Validate as a server started with --disable-auto-complete-config
    /// does: configs must be complete, a missing config.pbtxt is an error.
    #[arg(long)]
    pub disable_auto_complete_config: bool,
    /// Exit 0 even when there are error findings.
    #[arg(long)]
    pub exit_zero: bool,
    /// Read settings from FILE instead of the tritonctl.toml found by
    /// walking up from each path.
    #[arg(long, value_name = "FILE", conflicts_with = "no_config")]
    pub config: Option<PathBuf>,
    /// Ignore tritonctl.toml files.
    #[arg(long)]
    pub no_config: bool,
    /// Print each model directory's config as Triton reports it after the
    /// load (GET /v2/models/<m>/config: defaults, auto-complete, instance
    /// groups filled in) instead of the findings; exit 1 with the findings
    /// when Triton would refuse the load.
    #[arg(long)]
    pub print_config: bool,
}

#[derive(Debug, Clone, Args)]
pub struct ExplainArgs {
    /// Rule code (E0101) or name (unknown-field).
    #[arg(
        value_name = "CODE",
        required_unless_present = "all",
        value_parser = RuleCode,
        hide_possible_values = true
    )]
    pub code: Option<String>,
    /// List every rule.
    #[arg(long, conflicts_with = "code")]
    pub all: bool,
}

#[derive(Debug, Clone, Args)]
pub struct CompletionsArgs {
    /// The shell to print a completion script for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Clone, Args)]
#[command(
    after_help = "Exit status: 0 nothing to change (or all files rewritten), 1 a file would change (--check, --diff) or does not parse, 2 unreadable input, a failed write or an internal error."
)]
pub struct FmtArgs {
    /// Config files, model directories or model repositories; `-` reads
    /// standard input and writes the result to standard output.
    #[arg(value_name = "PATH", default_value = ".")]
    pub paths: Vec<PathBuf>,
    /// Write nothing; list the files that would change and exit 1 if any.
    #[arg(long)]
    pub check: bool,
    /// Write nothing; print a unified diff of the changes and exit 1 if any.
    #[arg(long)]
    pub diff: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ConvertTarget {
    /// Triton's JSON form (what GET /v2/models/<model>/config returns).
    Json,
    /// Protobuf text format, in the layout of `tritonctl fmt`.
    Pbtxt,
}

#[derive(Debug, Clone, Args)]
#[command(
    after_help = "The input format is detected: JSON when the first character that is not a blank is '{', text format otherwise.\nExit status: 0 converted, 1 the input is not a valid ModelConfig, 2 unreadable input."
)]
pub struct ConvertArgs {
    /// Output format.
    #[arg(long, value_enum)]
    pub to: ConvertTarget,
    /// A config file (text format or JSON), a model directory, or `-` for
    /// standard input.
    #[arg(value_name = "FILE")]
    pub input: PathBuf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ConfigFormat {
    /// Protobuf text format (config.pbtxt).
    Pbtxt,
    /// Triton's JSON form (what GET /v2/models/<model>/config returns).
    Json,
}

#[derive(Debug, Clone, Args)]
#[command(
    after_help = "MODEL is a .onnx file or a model directory (<dir>/<version>/model.onnx; the highest version the version policy selects is read, the model is named after the directory).\nOutput shapes the file does not fully declare are taken from ONNX Runtime, as Triton does, when its library is found (ORT_DYLIB_PATH, else the Python onnxruntime package; TRITONCTL_NO_ORT=1 turns this off); otherwise from the file's value info, with a note.\nNotes and warnings go to standard error.\nExit status: 0 config printed or written, 1 Triton would refuse the model or the --merge config (its message is printed), 2 unreadable or invalid input (not an ONNX model, no model file, ...), a refused or failed write, or a usage error."
)]
pub struct AutoconfigArgs {
    /// A .onnx file or a model directory.
    #[arg(value_name = "MODEL")]
    pub model: PathBuf,
    /// Triton's default-max-batch-size: the max_batch_size given to a model
    /// that can batch when the config sets none (0 disables batching).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 4,
        allow_negative_numbers = true,
        visible_alias = "default-max-batch-size"
    )]
    pub max_batch_size: i64,
    /// Complete this partial config the way Triton does (fails with
    /// Triton's message where it contradicts the model); `-` reads standard
    /// input.
    #[arg(long, value_name = "CONFIG")]
    pub merge: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ConfigFormat::Pbtxt)]
    pub format: ConfigFormat,
    /// Write config.pbtxt into the model directory instead of printing it.
    #[arg(long)]
    pub write: bool,
    /// With --write: replace an existing config.pbtxt.
    #[arg(long, requires = "write")]
    pub force: bool,
    /// GPU ids of the target server, comma-separated (default: none, a
    /// CPU-only server); decides the instance group of --full.
    #[arg(long, value_name = "IDS", value_delimiter = ',')]
    pub gpus: Vec<i32>,
    /// Print everything Triton reports for the model (version policy,
    /// instance groups, pinned memory, ...), not only what auto-complete adds.
    #[arg(long, conflicts_with = "minimal")]
    pub full: bool,
    /// Print only what auto-complete adds to the config (the default): name,
    /// platform and backend, max_batch_size, input, output, dynamic_batching.
    #[arg(long)]
    pub minimal: bool,
    /// Do as Triton does even where it fails: list sequence control and
    /// state tensors as ordinary inputs and outputs.
    #[arg(long)]
    pub triton_compatible: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SimulateFormat {
    /// Summary tables (default).
    Human,
    /// One JSON document: every request, every batch and a summary.
    Json,
}

#[derive(Debug, Clone, Args)]
#[command(
    after_help = "The trace is JSON Lines, one request per line: {\"id\": \"r1\", \"arrival_us\": 0, \"sequence_id\": 7, \"start\": true, \"end\": false, \"batch_size\": 1, \"priority\": 0, \"timeout_us\": 0} (only arrival_us is required), sorted by arrival_us.\n--sweep runs the trace once per setting (the cross product of all --sweep options) and prints one summary row per setting; each setting's config is validated as `tritonctl validate` would, and a setting Triton would refuse (an error the config without it does not have) is reported in its row instead of simulated. The trace file is read again for every setting; a trace on standard input is read into memory once (at most 256 MiB).\nExit status: 0 simulated, 1 the config does not parse or a --sweep setting is refused, 2 unreadable or invalid input (a bad trace line is reported as FILE:LINE), or a usage error (such as an unknown --sweep key or value)."
)]
pub struct SimulateArgs {
    /// The model's config.pbtxt, or its model directory. For an ensemble,
    /// its model directory in the model repository (REPO/ENSEMBLE): the
    /// composing models are read from the same repository.
    #[arg(long, value_name = "CONFIG")]
    pub config: PathBuf,
    /// The trace (JSON Lines); `-` reads standard input.
    #[arg(long, value_name = "FILE")]
    pub trace: PathBuf,
    /// Execution time of one batch by size: "1:2000,2:2400,4:3100"
    /// (µs, interpolated linearly), "2000+150*b", or a file holding either.
    /// For an ensemble, repeatable: MODEL=SPEC for one composing model, a
    /// SPEC without MODEL= for every composing model not named.
    #[arg(long, value_name = "[MODEL=]SPEC", required = true)]
    pub latency: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = SimulateFormat::Human)]
    pub format: SimulateFormat,
    /// Also draw the run as an SVG picture in FILE: time to the right, one
    /// lane per instance and slot (sequence batching) or per instance, one
    /// box per execution, coloured by sequence (or shaded by batch size).
    #[arg(long, value_name = "FILE.svg", conflicts_with = "sweep")]
    pub timeline: Option<PathBuf>,
    /// Draw only the executions that overlap this time range, in µs of the
    /// trace's clock; either end may be left out ("5000:").
    #[arg(long, value_name = "START_US:END_US", requires = "timeline")]
    pub timeline_window: Option<String>,
    /// Draw at most N executions, the first ones (of the window); the
    /// picture says when some were left out.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 2000,
        requires = "timeline",
        value_parser = clap::value_parser!(u32).range(1..=100_000)
    )]
    pub timeline_max_batches: u32,
    /// Also draw each executed request's queue wait (arrival to start of
    /// its execution) as a thin bar under the execution.
    #[arg(long, requires = "timeline")]
    pub timeline_queue: bool,
    /// Run the trace once per value of a config field and print one summary
    /// row per setting. KEY is a field path in the model config
    /// (dynamic_batching.max_queue_delay_microseconds, max_batch_size,
    /// instance_group[0].count, sequence_batching.oldest.max_candidate_sequences,
    /// ...); values are comma-separated, in config syntax ("[4,8]" for a
    /// list; strings need no quotes). Repeatable: every combination is run
    /// (at most 1000).
    #[arg(long, value_name = "KEY=V1,V2,...")]
    pub sweep: Vec<String>,
    /// GPU ids of the target server, comma-separated (default: none, a
    /// CPU-only server). Instances are those Triton creates on it: count
    /// per listed GPU, one per GPU for a GPU group without count.
    #[arg(long, value_name = "IDS", value_delimiter = ',')]
    pub gpus: Vec<i32>,
}

#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// The model directory (config.pbtxt and numeric version directories).
    /// An ensemble's composing models are looked up next to it, in the same
    /// model repository.
    #[arg(value_name = "MODEL_DIR")]
    pub model: PathBuf,
    /// Requests: perf_analyzer's input-data JSON, or JSON Lines of requests;
    /// `-` reads standard input.
    #[arg(long, short = 'i', value_name = "FILE")]
    pub input: PathBuf,
    /// Stateful mode: fill the sequence control inputs and keep state per
    /// sequence (each top-level array of perf_analyzer's input data is one
    /// sequence).
    #[arg(long)]
    pub sequence: bool,
    /// Execution device: `cpu`, `cuda` or `cuda:N`; default cuda when a CUDA
    /// device and ONNX Runtime's CUDA execution provider are present.
    #[arg(long, value_name = "DEVICE")]
    pub device: Option<String>,
    /// Model version to run (default: the highest numeric version directory).
    #[arg(long = "model-version", value_name = "N")]
    pub model_version: Option<u64>,
    /// GPU ids of the server the model is meant for, comma-separated
    /// (default: none, a CPU-only server): the instances are those Triton
    /// creates there, and a GPU instance on GPU N runs on cuda:N when this
    /// machine has it (else on the CPU, with a note).
    #[arg(long, value_name = "IDS", value_delimiter = ',')]
    pub gpus: Vec<i32>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = SimulateFormat::Human)]
    pub format: SimulateFormat,
    /// Measure the execution time per batch size and write a latency file
    /// that `simulate --latency` reads.
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
#[command(
    after_help = "ONNX Runtime is looked up in ORT_DYLIB_PATH (the library file or its directory), else in the Python onnxruntime (or onnxruntime-gpu) package of the first environment that has it: the one tritonctl is installed in (pip install 'tritonctl[run]'), VIRTUAL_ENV, CONDA_PREFIX, then python3's. The report says which rule found the library. TRITONCTL_NO_ORT=1 makes doctor behave as if ONNX Runtime were absent, TRITONCTL_NO_CUDA=1 as if the CUDA driver were.\nExit status: 0 `run` can run models (on the CPU at least), 1 it cannot (ONNX Runtime missing or unusable, or a binary built without the `run` feature), 2 internal error."
)]
pub struct DoctorArgs {
    /// Output format: human (default) or json (one object; fields in the
    /// documentation of `tritonctl::commands::doctor`).
    #[arg(long, value_enum, default_value_t = SimulateFormat::Human)]
    pub format: SimulateFormat,
}

#[derive(Debug, Clone, Args)]
pub struct TraceArgs {
    #[command(subcommand)]
    pub command: TraceCommand,
}

#[derive(Debug, Clone, Subcommand)]
pub enum TraceCommand {
    /// Write a synthetic trace (JSON Lines, sorted by arrival); the same
    /// options and seed give the same bytes.
    Generate(TraceGenerateArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ArrivalDistribution {
    /// Evenly spaced arrivals.
    Constant,
    /// A Poisson process (exponential inter-arrival times).
    Poisson,
}

#[derive(Debug, Clone, Args)]
pub struct TraceGenerateArgs {
    /// Requests per second (with --sequences: sequence starts per second).
    #[arg(long, value_name = "R")]
    pub rate: f64,
    /// Inter-arrival times.
    #[arg(long, value_enum, default_value_t = ArrivalDistribution::Constant)]
    pub distribution: ArrivalDistribution,
    /// Only arrivals in the first S seconds.
    #[arg(long, value_name = "S")]
    pub duration: Option<f64>,
    /// At most N requests.
    #[arg(long, value_name = "N")]
    pub requests: Option<u64>,
    /// Group the requests into N sequences (START on the first step, END on
    /// the last).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub sequences: u64,
    /// Mean number of requests per sequence.
    #[arg(long, value_name = "L", default_value_t = 4)]
    pub sequence_length: u64,
    /// Sequence lengths vary uniformly by up to this many percent.
    #[arg(long, value_name = "PERCENT", default_value_t = 0.0)]
    pub sequence_length_variation: f64,
    /// Microseconds between the steps of a sequence.
    #[arg(long, value_name = "US", default_value_t = 1000)]
    pub think_time_us: u64,
    /// Give each request a random priority 1..=K.
    #[arg(long, value_name = "K", default_value_t = 0)]
    pub priority_levels: u32,
    /// Sequence ids as strings ("s1") instead of integers.
    #[arg(long)]
    pub string_ids: bool,
    /// Seed of the random generator.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,
    /// Write to FILE instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// The clap command, for completions and man pages.
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definition_is_consistent() {
        command().debug_assert();
    }

    #[test]
    fn gpus_are_comma_separated() {
        let cli = Cli::try_parse_from(["tritonctl", "validate", "--gpus", "0,1", "x"]).unwrap();
        let Command::Validate(v) = cli.command else {
            panic!("not validate")
        };
        assert_eq!(v.gpus, vec![0, 1]);
        assert_eq!(v.paths, vec![PathBuf::from("x")]);
    }
}

/// Output format of `perf`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PerfFormat {
    /// A table per load level (default).
    Human,
    /// One JSON document (see schemas/perf.schema.json).
    Json,
}

/// When `perf` draws its progress bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PerfProgress {
    /// When standard error is a terminal (and not --quiet).
    Auto,
    /// Always: a bar on a terminal, plain lines on a file or pipe.
    Always,
    /// Never.
    Never,
}

/// Transport of `perf`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PerfProtocol {
    /// HTTP/1.1 with keep-alive connections.
    Http,
    /// gRPC: unary `ModelInfer`, or `ModelStreamInfer` with `--streaming`.
    Grpc,
}

/// How `perf`'s stability windows end (perf_analyzer's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MeasurementMode {
    /// Each window lasts `--measurement-interval` milliseconds.
    #[value(name = "time_windows")]
    TimeWindows,
    /// Each window has at least `--measurement-request-count` finished
    /// requests and lasts at least 1 s.
    #[value(name = "count_windows")]
    CountWindows,
}

/// The API `perf` sends requests to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PerfEndpoint {
    /// KServe v2 inference (`/infer`, gRPC `ModelInfer`; a decoupled model
    /// over gRPC `ModelStreamInfer`, read until its final response).
    Infer,
    /// Triton's generate extension: `/generate`, or `/generate_stream`
    /// (server-sent events) for a decoupled model.
    Generate,
    /// An OpenAI-compatible server's `/v1/chat/completions`, streamed.
    OpenaiChat,
    /// An OpenAI-compatible server's `/v1/completions`, streamed.
    OpenaiCompletions,
}

/// How tensors travel over HTTP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TensorFormat {
    /// The binary tensor data extension (`Inference-Header-Content-Length`).
    Binary,
    /// Tensors as JSON arrays.
    Json,
}

/// Where `perf` puts input and output tensors (`--shared-memory`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SharedMemoryKind {
    /// In the requests and responses (default).
    None,
    /// POSIX shared memory (/dev/shm), registered with the server.
    System,
    /// CUDA device memory shared through CUDA IPC handles.
    Cuda,
}

/// Gaps between open-loop sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RequestDistribution {
    /// Evenly spaced sends.
    Constant,
    /// Exponential gaps (a Poisson arrival process), seeded by `--seed`.
    Poisson,
}

/// How a certificate or key file of `perf`'s `--ssl-https-*` flags is
/// encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CertEncoding {
    /// Base64 between `-----BEGIN ...-----` lines.
    #[value(name = "PEM")]
    Pem,
    /// Binary ASN.1 (one certificate or key).
    #[value(name = "DER")]
    Der,
}

#[derive(Debug, Clone, Args)]
pub struct PerfArgs {
    /// Model name.
    #[arg(short = 'm', long = "model", value_name = "MODEL")]
    pub model: String,
    /// Model version (default: the server's choice).
    #[arg(short = 'x', long = "model-version", value_name = "V")]
    pub model_version: Option<String>,
    /// Server address, HOST:PORT or http://HOST:PORT; repeat to spread
    /// the load over several servers (connections and open-loop sends go
    /// round-robin). Default: localhost:8000, with `-i grpc` localhost:8001.
    #[arg(short = 'u', long = "url", value_name = "HOST:PORT")]
    pub url: Vec<String>,
    /// Protocol (any case: perf_analyzer's `-i gRPC` and `-i HTTP` too).
    #[arg(
        short = 'i',
        long = "protocol",
        value_enum,
        ignore_case = true,
        default_value_t = PerfProtocol::Http
    )]
    pub protocol: PerfProtocol,
    /// gRPC only: send requests over bidirectional `ModelStreamInfer`
    /// streams (one per request in flight) instead of unary calls.
    #[arg(long = "streaming")]
    pub streaming: bool,
    /// The API requests go to: `infer` (KServe v2; a decoupled model's
    /// responses stream over gRPC), `generate` (Triton's generate
    /// extension; `generate_stream` for a decoupled model), `openai-chat`
    /// or `openai-completions` (an OpenAI-compatible server, streamed).
    #[arg(long, value_enum, default_value_t = PerfEndpoint::Infer)]
    pub endpoint: PerfEndpoint,
    /// Generative endpoints: synthetic prompts of MEAN words (normally
    /// distributed with STDDEV, seeded by `--seed`; default 100:0).
    #[arg(long = "prompt-words", value_name = "MEAN[:STDDEV]")]
    pub prompt_words: Option<String>,
    /// Generative endpoints: the most tokens to generate per request,
    /// sent as `max_tokens`.
    #[arg(long = "max-tokens", value_name = "N")]
    pub max_tokens: Option<u64>,
    /// Write one JSON line per measured request to FILE: its level, its
    /// scheduled and actual send times, the arrival of each response (in
    /// microseconds since the Unix epoch) and its error kind or null.
    /// `--profile-export-file` is another name for it (perf_analyzer's).
    #[arg(
        long = "export-requests",
        visible_alias = "profile-export-file",
        value_name = "FILE.jsonl"
    )]
    pub export_requests: Option<PathBuf>,
    /// Extra HTTP header `Name:Value` on every request (repeatable).
    #[arg(short = 'H', long = "header", value_name = "NAME:VALUE")]
    pub headers: Vec<String>,
    /// gRPC over TLS (an `https://` URL in `-u` does the same for that
    /// server). The server's certificate is checked against the system's
    /// CAs and `--ssl-grpc-root-certifications-file`.
    #[arg(long = "ssl-grpc-use-ssl")]
    pub ssl_grpc_use_ssl: bool,
    /// gRPC over TLS: PEM file of CA certificates to trust besides the
    /// system's.
    #[arg(long = "ssl-grpc-root-certifications-file", value_name = "FILE")]
    pub ssl_grpc_root_certifications_file: Option<PathBuf>,
    /// gRPC over TLS: PEM file of the client's private key (with
    /// `--ssl-grpc-certificate-chain-file`, for servers that require a
    /// client certificate).
    #[arg(long = "ssl-grpc-private-key-file", value_name = "FILE")]
    pub ssl_grpc_private_key_file: Option<PathBuf>,
    /// gRPC over TLS: PEM file of the client's certificate chain.
    #[arg(long = "ssl-grpc-certificate-chain-file", value_name = "FILE")]
    pub ssl_grpc_certificate_chain_file: Option<PathBuf>,
    /// `https://` URLs: check the server's certificate chain (1, default),
    /// or accept any certificate (0, with a warning).
    #[arg(
        long = "ssl-https-verify-peer",
        value_name = "0|1",
        default_value_t = 1,
        value_parser = clap::value_parser!(u8).range(0..=1)
    )]
    pub ssl_https_verify_peer: u8,
    /// `https://` URLs: check that the certificate names the host of the
    /// URL (2, default; 1 is the same, as in libcurl), or not (0).
    #[arg(
        long = "ssl-https-verify-host",
        value_name = "0|1|2",
        default_value_t = 2,
        value_parser = clap::value_parser!(u8).range(0..=2)
    )]
    pub ssl_https_verify_host: u8,
    /// `https://` URLs: PEM file of CA certificates to trust besides the
    /// system's.
    #[arg(long = "ssl-https-ca-certificates-file", value_name = "FILE")]
    pub ssl_https_ca_certificates_file: Option<PathBuf>,
    /// `https://` URLs: the client certificate, for servers that require
    /// one (its key from `--ssl-https-private-key-file`, or from this file
    /// when that is not given and the file is PEM).
    #[arg(long = "ssl-https-client-certificate-file", value_name = "FILE")]
    pub ssl_https_client_certificate_file: Option<PathBuf>,
    /// Encoding of `--ssl-https-client-certificate-file` (any case).
    #[arg(
        long = "ssl-https-client-certificate-type",
        value_enum,
        ignore_case = true,
        default_value_t = CertEncoding::Pem
    )]
    pub ssl_https_client_certificate_type: CertEncoding,
    /// `https://` URLs: the private key of the client certificate.
    #[arg(long = "ssl-https-private-key-file", value_name = "FILE")]
    pub ssl_https_private_key_file: Option<PathBuf>,
    /// Encoding of `--ssl-https-private-key-file` (any case).
    #[arg(
        long = "ssl-https-private-key-type",
        value_enum,
        ignore_case = true,
        default_value_t = CertEncoding::Pem
    )]
    pub ssl_https_private_key_type: CertEncoding,
    /// Closed loop: keep N requests outstanding, for N from START to END by
    /// STEP (`START[:END[:STEP]]`). The default load is concurrency 1.
    #[arg(
        long = "concurrency-range",
        value_name = "START:END:STEP",
        conflicts_with = "request_rate_range"
    )]
    pub concurrency_range: Option<String>,
    /// Open loop: send at R requests per second, for R from START to END by
    /// STEP; latency counts from the scheduled send time.
    #[arg(long = "request-rate-range", value_name = "START:END:STEP")]
    pub request_rate_range: Option<String>,
    /// Open loop with the gaps of FILE (perf_analyzer's format: one gap in
    /// microseconds per line, replayed cyclically).
    #[arg(
        long = "request-intervals",
        value_name = "FILE",
        conflicts_with_all = ["concurrency_range", "request_rate_range"]
    )]
    pub request_intervals: Option<PathBuf>,
    /// Gaps between open-loop sends.
    #[arg(long = "request-distribution", value_enum, default_value_t = RequestDistribution::Constant)]
    pub request_distribution: RequestDistribution,
    /// Seed of the Poisson schedule and of random input data.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Scale-out: this worker's share of the load, shard I of N (0 <= I < N
    /// <= 10000): the full schedule's arrivals of index I mod N (a Poisson
    /// stream of rate R/N seeded from `--seed` and I), concurrency C/N
    /// (one more for the first C mod N shards), sequence ids and
    /// `--input-data` streams of its own. Start every worker with the same
    /// flags and `--start-at`, then `perf merge` their JSON.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// Wait until TIME on this host's clock before the first level (after
    /// connecting and reading the model): RFC 3339 (2026-11-29T10:00:00Z,
    /// or with an offset) or Unix seconds (1795946400.5). A time already
    /// past warns and starts at once; more than 24 hours ahead is refused.
    #[arg(long = "start-at", value_name = "TIME")]
    pub start_at: Option<String>,
    /// Open loop: at most N requests in flight; a send that has to wait for
    /// a free slot is late.
    #[arg(long = "max-concurrency", value_name = "N", default_value_t = 1024)]
    pub max_concurrency: usize,
    /// Length of a measurement window in milliseconds. Without
    /// `--duration` or `--request-count` a level is measured in such
    /// windows until the last 3 are stable (or `--max-trials`).
    #[arg(
        short = 'p',
        long = "measurement-interval",
        value_name = "MS",
        default_value_t = 5000
    )]
    pub measurement_interval: u64,
    /// Stability windows: the last 3 windows' throughputs and mean latencies
    /// (pP latencies with `--percentile`) may differ by this many percent
    /// (max/min <= 1 + P/100).
    #[arg(
        short = 's',
        long = "stability-percentage",
        value_name = "P",
        default_value_t = 10.0
    )]
    pub stability_percentage: f64,
    /// Stability windows: at most this many windows per level; a level that
    /// is not stable by then is reported with `stable: false`.
    #[arg(
        short = 'r',
        long = "max-trials",
        value_name = "N",
        default_value_t = 10
    )]
    pub max_trials: u32,
    /// How stability windows end (perf_analyzer's modes): `time_windows`
    /// after `--measurement-interval`, or `count_windows` when at least
    /// `--measurement-request-count` requests finished in the window and it
    /// lasted at least 1 s.
    #[arg(long = "measurement-mode", value_enum, default_value_t = MeasurementMode::TimeWindows)]
    pub measurement_mode: MeasurementMode,
    /// Count windows: finished requests per window (default 50; needs
    /// `--measurement-mode count_windows`).
    #[arg(long = "measurement-request-count", value_name = "N")]
    pub measurement_request_count: Option<u64>,
    /// The latency percentile (1 to 100) stability windows compare instead
    /// of the mean; the table shows it as a `pP µs` column when it is not
    /// one of p50, p90, p95, p99.
    #[arg(
        long,
        value_name = "P",
        value_parser = clap::value_parser!(u8).range(1..=100)
    )]
    pub percentile: Option<u8>,
    /// Accepted for perf_analyzer's command lines: tritonctl always sends
    /// asynchronously (a note says so).
    #[arg(short = 'a', long = "async", conflicts_with = "sync")]
    pub r#async: bool,
    /// Accepted for perf_analyzer's command lines: tritonctl sends
    /// asynchronously all the same (a note says so); the load is the same
    /// closed or open loop.
    #[arg(long = "sync")]
    pub sync: bool,
    /// Accepted for perf_analyzer's command lines (its worker threads):
    /// tritonctl's asynchronous runtime needs no thread per request (a
    /// note says so).
    #[arg(
        long = "max-threads",
        value_name = "N",
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub max_threads: Option<u32>,
    /// The latency limit in milliseconds (perf_analyzer's `-l`): the sweep
    /// stops at the first level whose latency (pP with `--percentile`,
    /// else the mean) is not below it; exit 1 when no level is.
    #[arg(short = 'l', long = "latency-threshold", value_name = "MS")]
    pub latency_threshold: Option<f64>,
    /// With `-l`: binary search between the range's START and END for the
    /// highest concurrency or request rate under the threshold, to within
    /// STEP (perf_analyzer's meaning).
    #[arg(long = "binary-search", requires = "latency_threshold")]
    pub binary_search: bool,
    /// Read Triton's Prometheus metrics during each level and report GPU
    /// utilization, power and memory per GPU (table, JSON, CSV).
    #[arg(long = "collect-metrics")]
    pub collect_metrics: bool,
    /// The metrics endpoint, `[http://]HOST[:PORT][/PATH]` (default: the
    /// first server's host, port 8002, path /metrics).
    #[arg(long = "metrics-url", value_name = "URL", requires = "collect_metrics")]
    pub metrics_url: Option<String>,
    /// How often the metrics are read during a level, in milliseconds
    /// (default 1000).
    #[arg(
        long = "metrics-interval",
        value_name = "MS",
        requires = "collect_metrics",
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub metrics_interval: Option<u64>,
    /// Length of the measurement window in seconds (overrides
    /// `--measurement-interval`).
    #[arg(long, value_name = "S", conflicts_with = "request_count")]
    pub duration: Option<f64>,
    /// Measure exactly N requests per level instead of a time window.
    #[arg(long = "request-count", value_name = "N")]
    pub request_count: Option<u64>,
    /// Seconds of load before each level's measurement starts (not counted).
    #[arg(long, value_name = "S", default_value_t = 0.0)]
    pub warmup: f64,
    /// Per-request timeout in milliseconds (a timed-out request is an error
    /// of kind `timeout`).
    #[arg(long, value_name = "MS", default_value_t = 30000)]
    pub timeout: u64,
    /// The largest response body read, in bytes (a larger one is refused
    /// unread or cut off at the limit). Default: 16 MiB for the metadata,
    /// config and statistics endpoints, and for inference 4 times the
    /// outputs' size at the batch size sent, at least 64 MiB.
    #[arg(long = "max-response-bytes", value_name = "BYTES", value_parser = parse_byte_size)]
    pub max_response_bytes: Option<u64>,
    /// The largest input tensor built, in bytes as sent (elements times
    /// element size; 32 bytes per element as JSON), checked before it is
    /// allocated (suffixes K, M, G as for --max-file-bytes).
    #[arg(long = "max-input-bytes", value_name = "BYTES", default_value = "1G", value_parser = parse_byte_size)]
    pub max_input_bytes: u64,
    /// Input values: `random` (seeded), `zero`, or a JSON file in
    /// perf_analyzer's format (`{"data": [{"INPUT": [..]}, ...]}`, values
    /// also as `{"content": [..], "shape": [..]}` or `{"b64": ".."}`; for
    /// sequence models `data` may be a list of streams, one per sequence);
    /// a directory with one file per input, named after it (raw bytes, or
    /// for BYTES inputs one string per line, as perf_analyzer); for the
    /// generative endpoints a file of prompts as JSON Lines (one
    /// `{"text": ".."}`, `{"prompt": ".."}` or JSON string per line).
    #[arg(
        long = "input-data",
        value_name = "random|zero|FILE|DIR",
        default_value = "random"
    )]
    pub input_data: String,
    /// Generated BYTES (string) inputs: random lowercase strings of N
    /// characters (default 128, as perf_analyzer).
    #[arg(long = "string-length", value_name = "N")]
    pub string_length: Option<usize>,
    /// Generated BYTES (string) inputs: this text in every element
    /// (wins over `--string-length`).
    #[arg(long = "string-data", value_name = "S")]
    pub string_data: Option<String>,
    /// Inputs and outputs in shared memory registered with the server
    /// (Triton's shared-memory extensions, as perf_analyzer's flag):
    /// `system` uses POSIX shared memory under /dev/shm, so the server must
    /// run on this host and share its /dev/shm (POSIX systems only);
    /// `cuda` uses GPU memory shared through CUDA IPC handles, so the
    /// server must run on this host and reach the GPU of
    /// `--shared-memory-device`.
    #[arg(long = "shared-memory", value_enum, value_name = "KIND", default_value_t = SharedMemoryKind::None, ignore_case = true)]
    pub shared_memory: SharedMemoryKind,
    /// With `--shared-memory`: bytes of shared memory per output and
    /// request in flight (perf_analyzer's default 102400).
    #[arg(
        long = "output-shared-memory-size",
        value_name = "BYTES",
        default_value_t = 102_400
    )]
    pub output_shared_memory_size: u64,
    /// With `--shared-memory cuda`: the GPU whose memory holds the tensors
    /// (its CUDA device number, as the server sees it; default 0).
    #[arg(long = "shared-memory-device", value_name = "N")]
    pub shared_memory_device: Option<u32>,
    /// Shape of an input without the batch dimension, `NAME:D1,D2`
    /// (needed for variable dims; repeatable).
    #[arg(long, value_name = "NAME:DIMS")]
    pub shape: Vec<String>,
    /// Batch size of every request.
    #[arg(
        short = 'b',
        long = "batch-size",
        value_name = "N",
        default_value_t = 1
    )]
    pub batch_size: u64,
    /// Input tensor encoding over HTTP (default: binary when the server
    /// advertises the `binary_tensor_data` extension, else json).
    #[arg(long = "input-tensor-format", value_enum)]
    pub input_tensor_format: Option<TensorFormat>,
    /// Output tensor encoding requested over HTTP (default as for
    /// `--input-tensor-format`).
    #[arg(long = "output-tensor-format", value_enum)]
    pub output_tensor_format: Option<TensorFormat>,
    /// Exit with status 1 when the share of failed requests in any level is
    /// above this (0 to 1).
    #[arg(long = "max-error-rate", value_name = "RATE", default_value_t = 0.0)]
    pub max_error_rate: f64,
    /// Output format.
    #[arg(long, value_enum, default_value_t = PerfFormat::Human)]
    pub format: PerfFormat,
    /// Also write perf_analyzer's CSV columns to FILE (Model Analyzer reads
    /// it).
    #[arg(short = 'f', long = "csv", value_name = "FILE.csv")]
    pub csv: Option<PathBuf>,
    /// Also write an SVG picture to FILE: throughput against the latency
    /// percentiles per level, and each level's latency distribution.
    #[arg(long = "plot", value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Model without the config endpoint (plain KServe v2 servers): the
    /// first metadata dim is a batch dim.
    #[arg(long = "batched")]
    pub batched: bool,
    /// Sequence models (detected from the config): requests per sequence
    /// (default 20, or the length of the data streams of `--input-data`).
    #[arg(long = "sequence-length", value_name = "N")]
    pub sequence_length: Option<u64>,
    /// Sequence models: each sequence's length is drawn uniformly within
    /// ±P % of `--sequence-length` (at least 1; seeded by `--seed`).
    #[arg(
        long = "sequence-length-variation",
        value_name = "P",
        default_value_t = 20.0
    )]
    pub sequence_length_variation: f64,
    /// Sequence models: send string sequence ids, PREFIX followed by the
    /// number (the model must use a string CORRID).
    #[arg(long = "sequence-id-prefix", value_name = "PREFIX")]
    pub sequence_id_prefix: Option<String>,
    /// Sequence ids `START[:END]` (END exclusive; ids wrap around). The
    /// default starts at a random base so that two runs do not collide.
    #[arg(long = "sequence-id-range", value_name = "START[:END]")]
    pub sequence_id_range: Option<String>,
    /// Open loop, sequence models: sequences live at once (each has at
    /// most one request in flight).
    #[arg(long = "num-of-sequences", value_name = "N", default_value_t = 4)]
    pub num_of_sequences: usize,
    /// Live progress on standard error: `auto` (a bar when it is a
    /// terminal), `always` (also on a file or pipe, as plain lines every
    /// 5 s and one per finished level), or `never`.
    #[arg(long, value_enum, default_value_t = PerfProgress::Auto)]
    pub progress: PerfProgress,
}

// `tritonctl perf`: a load test (`perf -m MODEL ...`), or `perf merge`.
// The load test's flags and the subcommand exclude each other, and `-m`
// is required only without the subcommand (so `perf -m merge` still
// load-tests a model named "merge"). A plain comment: a doc comment here
// would become perf's help text, in place of the variant's.
#[derive(Debug, Clone, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct PerfCommand {
    #[command(flatten)]
    pub run: Option<PerfArgs>,
    #[command(subcommand)]
    pub action: Option<PerfAction>,
}

#[derive(Debug, Clone, Subcommand)]
pub enum PerfAction {
    /// Combine the `perf --format json` results of workers that loaded one
    /// server together into one report: histograms added (percentiles of
    /// all samples), counters summed.
    #[command(
        after_help = "Files that are not parts of one load (another model, mode, batch size or level set, a shard twice) are refused.\nExit status: 0 merged, 2 a file unreadable, not a perf JSON document, without histograms, or not part of the same load."
    )]
    Merge(PerfMergeArgs),
}

/// Output format of `perf merge`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PerfMergeFormat {
    /// The table of `perf` (default).
    #[value(alias = "human")]
    Table,
    /// The JSON document of `perf --format json`, with `merged_from`.
    Json,
    /// perf_analyzer's CSV columns, as `perf -f` writes them.
    Csv,
}

#[derive(Debug, Clone, Args)]
pub struct PerfMergeArgs {
    /// The documents of `perf --format json`, one per worker (a merged
    /// document may be merged again).
    #[arg(value_name = "FILE.json", required = true)]
    pub files: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = PerfMergeFormat::Table)]
    pub format: PerfMergeFormat,
    /// Also write perf_analyzer's CSV columns to FILE.
    #[arg(short = 'f', long = "csv", value_name = "FILE.csv")]
    pub csv: Option<PathBuf>,
}

/// What `tune` optimises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TuneObjective {
    /// The fewest instances meeting the latency objective at the workload
    /// (default).
    Instances,
    /// The highest rate one instance sustains under the latency objective.
    Throughput,
}

#[derive(Debug, Clone, Args)]
#[command(group(clap::ArgGroup::new("tune_workload").required(true).args(["rate", "trace"])))]
#[command(group(clap::ArgGroup::new("tune_latency").required(true).multiple(true).args(["latency", "profile", "url"])))]
#[command(group(clap::ArgGroup::new("tune_slo").required(true).args(["slo_p99_ms", "slo_ms"])))]
pub struct TuneArgs {
    /// The model directory (or its config.pbtxt), as `simulate --config`
    /// takes it.
    #[arg(value_name = "MODEL_DIR")]
    pub model: PathBuf,
    /// Execution time of one batch by size: "1:2000,2:2400,4:3100" (µs,
    /// interpolated linearly), "2000+150*b", or a file holding either.
    #[arg(long, value_name = "SPEC")]
    pub latency: Option<String>,
    /// The latency file `run --profile` wrote.
    #[arg(long, value_name = "FILE", conflicts_with = "latency")]
    pub profile: Option<PathBuf>,
    /// Workload: Poisson arrivals at R requests per second (with
    /// --sequences: sequence starts per second), seeded by --seed.
    #[arg(long, value_name = "R", conflicts_with = "trace")]
    pub rate: Option<f64>,
    /// With --rate: this many requests (default 10000 without --duration).
    #[arg(long, value_name = "N", requires = "rate")]
    pub requests: Option<u64>,
    /// With --rate: only arrivals in the first S seconds.
    #[arg(long, value_name = "S", requires = "rate")]
    pub duration: Option<f64>,
    /// With --rate: group the requests into N sequences, as `trace
    /// generate` does (default: as many as the requests allow for a
    /// sequence model, none otherwise).
    #[arg(long, value_name = "N", requires = "rate")]
    pub sequences: Option<u64>,
    /// With --rate: mean steps per sequence.
    #[arg(long, value_name = "L", default_value_t = 4, requires = "rate")]
    pub sequence_length: u64,
    /// With --rate: sequence lengths vary uniformly by up to this many
    /// percent.
    #[arg(long, value_name = "PERCENT", default_value_t = 0.0, requires = "rate")]
    pub sequence_length_variation: f64,
    /// With --rate: microseconds between the steps of a sequence.
    #[arg(long, value_name = "US", default_value_t = 1000, requires = "rate")]
    pub think_time_us: u64,
    /// Seed of the arrivals of --rate.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,
    /// Workload: a trace (simulate's JSON Lines) or the lines `perf
    /// --export-requests` wrote (their scheduled times become arrivals).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// With --trace of a `perf --export-requests` file: the lines of level
    /// I only (required when the file holds more than one level).
    #[arg(long, value_name = "I", requires = "trace")]
    pub level: Option<u64>,
    /// Objective: the p99 latency at most MS milliseconds (the same as
    /// --slo-ms MS --slo-percentile 99).
    #[arg(long, value_name = "MS", conflicts_with_all = ["slo_ms", "slo_percentile"])]
    pub slo_p99_ms: Option<f64>,
    /// Objective: the --slo-percentile latency at most MS milliseconds.
    #[arg(long, value_name = "MS")]
    pub slo_ms: Option<f64>,
    /// The percentile --slo-ms applies to (above 0, at most 100).
    #[arg(long, value_name = "P", default_value_t = 99.0, requires = "slo_ms")]
    pub slo_percentile: f64,
    /// What to optimise.
    #[arg(long, value_enum, default_value_t = TuneObjective::Instances)]
    pub objective: TuneObjective,
    /// Instance counts searched: 1 to N (per GPU for a GPU instance group).
    #[arg(long, value_name = "N", default_value_t = 8,
          value_parser = clap::value_parser!(u32).range(1..=256))]
    pub max_instances: u32,
    /// Largest max_batch_size searched (default: the config's); sizes are
    /// the powers of two below it and it.
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=1_048_576))]
    pub max_batch_size: Option<u32>,
    /// The max_queue_delay_microseconds values searched.
    #[arg(
        long,
        value_name = "US,...",
        value_delimiter = ',',
        default_value = "0,100,500,1000,2000,5000,10000"
    )]
    pub queue_delays: Vec<u64>,
    /// GPU ids of the target server, comma-separated (default: none, a
    /// CPU-only server), as for simulate: a GPU group's count is per GPU.
    #[arg(long, value_name = "IDS", value_delimiter = ',')]
    pub gpus: Vec<i32>,
    /// Edit the config.pbtxt in place to the recommended config (comments
    /// and layout kept; written atomically).
    #[arg(long)]
    pub write: bool,
    /// A live Triton (HOST:PORT or http://HOST:PORT): without --latency
    /// and --profile, the latency curve is measured on it (batches of each
    /// size at concurrency 1, compute times from its statistics); with
    /// --verify, the recommendation is proven on it.
    #[arg(short = 'u', long = "url", value_name = "HOST:PORT")]
    pub url: Option<String>,
    /// The model's name on the server (default: the config's name, else
    /// the directory's).
    #[arg(short = 'm', long = "model", value_name = "NAME", requires = "url")]
    pub server_model: Option<String>,
    /// Load the recommended config into the server (repository extension:
    /// Triton started with --model-control-mode=explicit), measure it at the
    /// workload's rate (Poisson, --seed), then the cheapest rejected
    /// candidate; the server's config of the model is loaded back at the
    /// end.
    #[arg(long, requires = "url")]
    pub verify: bool,
    /// --verify: seconds measured per config.
    #[arg(
        long = "verify-duration",
        value_name = "S",
        default_value_t = 10.0,
        requires = "verify"
    )]
    pub verify_duration: f64,
    /// Output format.
    #[arg(long, value_enum, default_value_t = SimulateFormat::Human)]
    pub format: SimulateFormat,
}
