//! The requests of `tritonctl run --input FILE` (docs/spec/cli.md), in two
//! formats:
//!
//! * **perf_analyzer's input-data JSON**: `{"data": [ {"INPUT0": [...]}, ... ]}`.
//!   Each entry is one request. A tensor is a flat list of values (reshaped
//!   to the config dims), nested lists, `{"content": [...], "shape": [...]}`
//!   (the shape without the batch dimension, as perf_analyzer's `--shape`),
//!   or `{"b64": "..."}` raw little-endian bytes (also as `"content"`; BYTES
//!   elements carry their 4-byte length prefixes). With `--sequence`, each
//!   array of steps in `data` is one sequence: ids 1, 2, ..., START on its
//!   first step, END on its last (a flat `data` is one sequence).
//! * **JSON Lines of requests**: `{"id": "r1", "arrival_us": 0,
//!   "sequence_id": 7, "start": true, "end": false, "priority": 0,
//!   "timeout_us": 0, "inputs": {"INPUT": [...]}}`, every field optional;
//!   tensors as above.
//!
//! Tensors are converted to the config's data types and shaped to its
//! dims: a single `-1` is resolved from the number of values, and a
//! batching model (`max_batch_size > 0`) gets a leading batch dimension of
//! 1 unless the value's shape already has one. The runner fills control
//! inputs (START/END/READY/CORRID) and state inputs itself; naming them is
//! an error. Every error names the file, the line (JSON Lines) or JSON
//! path (perf_analyzer), the request and the input.
//!
//! A malformed file (bad JSON, bad request fields) is refused as a whole; a
//! request whose tensors cannot be used (unknown, missing, wrong type or
//! shape) fails alone (`ParsedInput::failed`), and so does the rest of its
//! sequence, whose state would be wrong.

use super::state::stateful_pairs;
use crate::batching::CorrId;
use crate::inputs::data_file;
use crate::inputs::json::json_member;
pub use crate::inputs::json::{tensor_from_json, InputSpec, ValueError};
pub use crate::inputs::request::MAX_TIME_US;
use crate::inputs::request::{self, ArrivalOrder, LineError, Reader};
use crate::schema::inference::model_config::SchedulingChoice;
use crate::schema::inference::model_sequence_batching::control::Kind as ControlKind;
use crate::schema::inference::ModelConfig;
use crate::tensor::{DataType, NamedTensors};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashSet};
use std::fmt;

/// The inputs a model takes from the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputSchema {
    /// For messages.
    pub model: String,
    /// `> 0`: tensors get a leading batch dimension.
    pub max_batch_size: i64,
    /// In config order.
    pub inputs: Vec<InputSpec>,
    /// Tensors the runner fills itself (control and state inputs), each
    /// with a description for the error raised when a request names it.
    pub runner_filled: BTreeMap<String, String>,
}

impl InputSchema {
    /// The client inputs of a (normalized) config. Fails when an input's
    /// data type has no tensor type (`TYPE_INVALID`).
    pub fn from_config(cfg: &ModelConfig) -> Result<InputSchema, String> {
        let mut inputs = Vec::with_capacity(cfg.input.len());
        for i in &cfg.input {
            let dtype = DataType::from_config(i.data_type).ok_or_else(|| {
                format!(
                    "input '{}' has data type {}, which cannot be fed",
                    i.name,
                    crate::schema::data_type_name(i.data_type)
                )
            })?;
            inputs.push(InputSpec {
                name: i.name.clone(),
                dtype,
                dims: i.dims.clone(),
                optional: i.optional,
            });
        }
        let mut runner_filled = BTreeMap::new();
        if let Some(SchedulingChoice::SequenceBatching(sb)) = &cfg.scheduling_choice {
            for ci in &sb.control_input {
                let kinds: Vec<&str> = ci
                    .control
                    .iter()
                    .map(|c| {
                        ControlKind::try_from(c.kind)
                            .map(|k| k.as_str_name())
                            .unwrap_or("unknown")
                    })
                    .collect();
                runner_filled.insert(
                    ci.name.clone(),
                    format!(
                        "a control input of the sequence batcher ({})",
                        kinds.join(", ")
                    ),
                );
            }
            for st in &sb.state {
                runner_filled.insert(
                    st.input_name.clone(),
                    "a state input (sequence_batching.state)".to_string(),
                );
            }
        }
        if cfg.backend == "stateful" {
            // A malformed state_pairs is reported when the states are set up.
            for pair in stateful_pairs(cfg).unwrap_or_default() {
                runner_filled.insert(
                    pair.input,
                    "a state input of the stateful backend (state_pairs)".to_string(),
                );
            }
        }
        Ok(InputSchema {
            model: cfg.name.clone(),
            max_batch_size: i64::from(cfg.max_batch_size),
            inputs,
            runner_filled,
        })
    }

    pub fn input(&self, name: &str) -> Option<&InputSpec> {
        self.inputs.iter().find(|i| i.name == name)
    }
}

/// How to read the input file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ParseOptions {
    /// `--sequence`: perf_analyzer data are sequences.
    pub sequence: bool,
}

/// The two input formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputFormat {
    PerfAnalyzer,
    JsonLines,
}

/// One request to run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRequest {
    /// The request's `id`, else its 0-based position in the input.
    pub id: String,
    /// 0-based position in the input.
    pub index: usize,
    /// Where it came from, for messages: `line 3` or `data[1][0]`.
    pub origin: String,
    /// Release time relative to the start of the run.
    pub arrival_us: Option<u64>,
    pub sequence_id: Option<CorrId>,
    pub start: bool,
    pub end: bool,
    /// 0 = not set.
    pub priority: u32,
    /// 0 = none.
    pub timeout_us: u64,
    /// Named inputs, converted and shaped (batch dimension included when
    /// the model batches).
    pub inputs: NamedTensors,
}

impl RunRequest {
    /// The request's batch size: the first dimension of its inputs for a
    /// batching model, else 1.
    pub fn batch_size(&self, max_batch_size: i64) -> u32 {
        if max_batch_size <= 0 {
            return 1;
        }
        self.inputs
            .values()
            .find_map(|t| t.shape.first())
            .map_or(1, |&d| u32::try_from(d).unwrap_or(u32::MAX))
    }
}

/// The requests of an input file.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedInput {
    pub format: InputFormat,
    /// The requests to run, in input order.
    pub requests: Vec<RunRequest>,
    /// The requests that fail without running, in input order: bad
    /// tensors, and the rest of a sequence after a bad step. Their `index`
    /// places them among `requests`.
    pub failed: Vec<FailedRequest>,
    /// `file:line: ...` or `file: path: ...` notes (unknown fields, ignored
    /// sections, duplicate ids).
    pub warnings: Vec<String>,
}

/// A request that fails before it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct FailedRequest {
    pub id: String,
    /// 0-based position in the input (as `RunRequest::index`).
    pub index: usize,
    pub sequence_id: Option<CorrId>,
    /// Names the file and line (or JSON path), the request and the tensor.
    pub error: String,
}

/// A request as read, with the error that keeps it from running.
pub type Parsed = (RunRequest, Option<Box<InputError>>);

/// The requests read so far: all of them in input order, and the errors
/// of the bad ones by position (few, usually), so that [`finish`] can sort
/// them out in place instead of building a second list.
#[derive(Default)]
struct Collected {
    requests: Vec<RunRequest>,
    bad: Vec<(usize, Box<InputError>)>,
}

impl Collected {
    /// Fails, naming the file, when the list cannot grow: a huge input
    /// ends with a message instead of an aborted allocation
    /// (docs/hostile.md).
    fn push(&mut self, (req, bad): Parsed, file: &str) -> Result<(), Box<InputError>> {
        let n = self.requests.len();
        if n == self.requests.capacity() && self.requests.try_reserve(n.max(64)).is_err() {
            return Err(InputError::new(
                file,
                format!(
                    "not enough memory to hold the requests ({n} read so far); split the \
                     input into smaller files"
                ),
            ));
        }
        if let Some(e) = bad {
            self.bad.push((self.requests.len(), e));
        }
        self.requests.push(req);
        Ok(())
    }

    fn len(&self) -> usize {
        self.requests.len()
    }

    fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }
}

/// Splits the requests read into those to run and those that fail. A bad
/// step of a sequence also fails the rest of that sequence (up to its END,
/// or a new START with the same id): its state would be wrong. Arrival
/// times are made explicit, so that a request keeps its release time when
/// the one before it is left out.
fn finish(format: InputFormat, file: &str, all: Collected, warnings: Vec<String>) -> ParsedInput {
    let Collected { mut requests, bad } = all;
    let timed = requests.iter().any(|r| r.arrival_us.is_some());
    let any_bad = !bad.is_empty();
    let mut bad = bad.into_iter().peekable();
    let mut failed = Vec::new();
    // Sequence -> the bad request that aborted it (label, location).
    let mut aborted: std::collections::HashMap<CorrId, (String, String)> =
        std::collections::HashMap::new();
    let mut last = 0u64;
    let mut position = 0usize;
    requests.retain_mut(|req| {
        let here = position;
        position += 1;
        if timed && any_bad {
            let a = req.arrival_us.unwrap_or(last);
            req.arrival_us = Some(a);
            last = a;
        }
        let fail = |error: String| FailedRequest {
            id: req.id.clone(),
            index: req.index,
            sequence_id: req.sequence_id.clone(),
            error,
        };
        if let Some((_, e)) = bad.next_if(|(at, _)| *at == here) {
            failed.push(fail(e.to_string()));
            if let Some(seq) = &req.sequence_id {
                if req.end {
                    aborted.remove(seq);
                } else {
                    aborted.insert(
                        seq.clone(),
                        (request_label(req), location(file, &req.origin)),
                    );
                }
            }
            return false;
        }
        if let Some(seq) = &req.sequence_id {
            if req.start {
                aborted.remove(seq);
            } else if let Some((label, loc)) = aborted.get(seq) {
                let error = format!(
                    "{}: request {}: not run: sequence {seq} was aborted by the earlier bad \
                     request {label} ({loc})",
                    location(file, &req.origin),
                    request_label(req),
                );
                failed.push(fail(error));
                if req.end {
                    aborted.remove(seq);
                }
                return false;
            }
        }
        true
    });
    ParsedInput {
        format,
        requests,
        failed,
        warnings,
    }
}

/// `file:3` for a JSON Lines request, `file: at data[1][0]` for a
/// perf_analyzer one.
fn location(file: &str, origin: &str) -> String {
    match origin.strip_prefix("line ") {
        Some(n) => format!("{file}:{n}"),
        None => format!("{file}: at {origin}"),
    }
}

/// Why the input cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    pub file: String,
    /// 1-based line (JSON Lines, JSON syntax errors).
    pub line: Option<usize>,
    pub column: Option<usize>,
    /// JSON path of the offending value, e.g. `data[1][0].INPUT0[3]`
    /// (perf_analyzer format) or `inputs.INPUT0[3]` (JSON Lines).
    pub path: Option<String>,
    /// The request: its id (quoted) or its index.
    pub request: Option<String>,
    /// The input tensor concerned.
    pub input: Option<String>,
    pub message: String,
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(col) = self.column {
                write!(f, ":{col}")?;
            }
        }
        if let Some(path) = &self.path {
            write!(f, ": at {path}")?;
        }
        f.write_str(": ")?;
        match (&self.request, &self.input) {
            (Some(r), Some(i)) => write!(f, "request {r}, input '{i}': ")?,
            (Some(r), None) => write!(f, "request {r}: ")?,
            (None, Some(i)) => write!(f, "input '{i}': ")?,
            (None, None) => {}
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for InputError {}

impl InputError {
    fn new(file: &str, message: impl Into<String>) -> Box<Self> {
        Box::new(InputError {
            file: file.to_string(),
            line: None,
            column: None,
            path: None,
            request: None,
            input: None,
            message: message.into(),
        })
    }
}

/// Reads an input file, telling the two formats apart: a JSON object with
/// a `data` member is perf_analyzer's format, anything else JSON Lines.
pub fn parse_input(
    text: &str,
    file: &str,
    schema: &InputSchema,
    opts: &ParseOptions,
) -> Result<ParsedInput, Box<InputError>> {
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    if body.trim().is_empty() {
        return Err(InputError::new(file, "the input holds no requests"));
    }
    if body.trim_start().starts_with('{') {
        let broken = match parse_perf_analyzer(body, file, schema, opts) {
            Ok(Some(parsed)) => return Ok(parsed),
            Err(PerfAnalyzerError::Input(e)) => return Err(e),
            Err(PerfAnalyzerError::Json(e)) => Some(e),
            // An object without `data`: one request written over several
            // lines, or the first of JSON Lines (then the document parse
            // below stops at the second).
            Ok(None) => match serde_json::from_str::<Value>(body) {
                Ok(single @ Value::Object(_)) if body.trim().lines().count() > 1 => {
                    let line = body.lines().position(|l| !l.trim().is_empty()).unwrap_or(0) + 1;
                    let mut warnings = Vec::new();
                    let compact = single.to_string();
                    let mut all = Collected::default();
                    if let Some(req) =
                        parse_request_line(&compact, line, 0, file, schema, &mut warnings)?
                    {
                        all.push(req, file)?;
                    }
                    return Ok(finish(InputFormat::JsonLines, file, all, warnings));
                }
                Ok(_) => None,
                Err(e) => Some(e),
            },
        };
        if let Some(e) = broken {
            // JSON Lines fail here with "trailing characters"; a broken
            // single document is reported where serde found the problem
            // unless its first line is a complete request on its own.
            let first = body.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            if serde_json::from_str::<Value>(first).is_err() && e.line() > 1 {
                let mut err = InputError::new(file, format!("malformed JSON: {e}"));
                err.line = Some(e.line());
                err.column = Some(e.column());
                return Err(err);
            }
        }
    }
    parse_json_lines(body, file, schema)
}

/// Why [`parse_perf_analyzer`] did not read the input.
#[derive(Debug)]
pub enum PerfAnalyzerError {
    /// Not JSON, or text after the document (JSON Lines, perhaps).
    Json(serde_json::Error),
    /// perf_analyzer's format, but unusable.
    Input(Box<InputError>),
}

/// perf_analyzer's input-data JSON: `Ok(None)` when `text` is a JSON
/// object without a `data` member. The requests are converted as they are
/// read (see [`data_file::stream`]): the document is never held whole as
/// JSON values, so memory stays a small multiple of the file.
pub fn parse_perf_analyzer(
    text: &str,
    file: &str,
    schema: &InputSchema,
    opts: &ParseOptions,
) -> Result<Option<ParsedInput>, PerfAnalyzerError> {
    let at = |path: Option<String>, message: String| {
        let mut e = InputError::new(file, message);
        e.path = path;
        e
    };
    let mut requests = Collected::default();
    let mut each = |entry: &data_file::StreamEntry| -> Result<(), Box<InputError>> {
        if entry.sequences && !opts.sequence {
            return Err(at(
                Some("data[0]".into()),
                "the data holds sequences (arrays of steps); run with --sequence".into(),
            ));
        }
        let index = requests.len();
        // A bad tensor fails this request only.
        let (inputs, bad) = match inputs_from_object(entry.tensors, schema) {
            Ok(inputs) => (inputs, None),
            Err(e) => {
                let mut err = at(Some(format!("{}{}", entry.path, e.path)), e.message);
                err.request = Some(index.to_string());
                err.input = e.input;
                (NamedTensors::new(), Some(err))
            }
        };
        // Each sequence gets ids 1, 2, ...; a flat list with --sequence is
        // one sequence (its END is set once its length is known).
        let (sequence_id, start, end) = if opts.sequence {
            (
                Some(CorrId::Int(entry.sequence as u64 + 1)),
                entry.step == 0,
                entry.steps.is_some_and(|n| entry.step + 1 == n),
            )
        } else {
            (None, false, false)
        };
        requests.push(
            (
                RunRequest {
                    id: index.to_string(),
                    index,
                    origin: entry.path.clone(),
                    arrival_us: None,
                    sequence_id,
                    start,
                    end,
                    priority: 0,
                    timeout_us: 0,
                    inputs,
                },
                bad,
            ),
            file,
        )
    };
    let streamed = match data_file::stream(text, &mut each) {
        Ok(Some(s)) => s,
        Ok(None) => return Ok(None),
        Err(data_file::StreamError::Json(e)) => return Err(PerfAnalyzerError::Json(e)),
        Err(data_file::StreamError::Data(e)) => {
            return Err(PerfAnalyzerError::Input(at(e.path, e.message)))
        }
        Err(data_file::StreamError::Stopped(e)) => return Err(PerfAnalyzerError::Input(e)),
    };
    if opts.sequence && !streamed.sequences {
        if let Some(last) = requests.requests.last_mut() {
            last.end = true;
        }
    }
    let warnings = streamed
        .ignored
        .iter()
        .map(|key| match key.as_str() {
            "validation_data" => format!(
                "{file}: \"validation_data\" is ignored: tritonctl run does not check outputs"
            ),
            other => format!("{file}: unknown member \"{other}\" is ignored"),
        })
        .collect();
    Ok(Some(finish(
        InputFormat::PerfAnalyzer,
        file,
        requests,
        warnings,
    )))
}

/// JSON Lines of requests. Blank lines are skipped.
pub fn parse_json_lines(
    text: &str,
    file: &str,
    schema: &InputSchema,
) -> Result<ParsedInput, Box<InputError>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut requests = Collected::default();
    let mut warnings = Vec::new();
    let mut order = ArrivalOrder::default();
    let mut ids = HashSet::new();
    for (n, line) in text.lines().enumerate() {
        let line_no = n + 1;
        let Some((req, bad)) =
            parse_request_line(line, line_no, requests.len(), file, schema, &mut warnings)?
        else {
            continue;
        };
        if let Some(t) = req.arrival_us {
            if let Err(message) = order.check(t, line_no) {
                let mut e = InputError::new(file, message);
                e.line = Some(line_no);
                e.request = Some(request_label(&req));
                return Err(e);
            }
        }
        if !ids.insert(req.id.clone()) {
            warnings.push(format!(
                "{file}:{line_no}: request id '{}' is used more than once",
                req.id
            ));
        }
        requests.push((req, bad), file)?;
    }
    if requests.is_empty() {
        return Err(InputError::new(file, "the input holds no requests"));
    }
    Ok(finish(InputFormat::JsonLines, file, requests, warnings))
}

fn request_label(r: &RunRequest) -> String {
    if r.id == r.index.to_string() {
        r.id.clone()
    } else {
        format!("'{}'", r.id)
    }
}

/// One line of JSON Lines input: `None` for a blank line. `index` is the
/// request's 0-based position (its default id); `warnings` receives notes
/// about unknown fields. A request whose tensors cannot be used (unknown,
/// missing, wrong type or shape) comes with its error and no inputs: it
/// fails alone; errors in the line itself (JSON, fields) fail the input.
pub fn parse_request_line(
    text: &str,
    line: usize,
    index: usize,
    file: &str,
    schema: &InputSchema,
    warnings: &mut Vec<String>,
) -> Result<Option<Parsed>, Box<InputError>> {
    let line_error = |e: LineError| {
        let mut x = InputError::new(file, e.message);
        x.line = Some(e.line);
        x.column = e.column;
        x
    };
    let Some(obj) = request::parse_line(text, line).map_err(line_error)? else {
        return Ok(None);
    };
    for w in request::unknown_fields(&obj, Reader::Run) {
        warnings.push(format!("{file}:{line}: {w}"));
    }
    // The request's label: its id when it has one, else its index.
    let given_id = match obj.get("id") {
        Some(Value::String(s)) => Some(format!("'{s}'")),
        Some(Value::Number(n)) if n.is_u64() => Some(format!("'{n}'")),
        _ => None,
    };
    let fields = request::read_fields(&obj, Reader::Run, line).map_err(|e| {
        let bad_id = e.field == Some("id");
        let mut x = line_error(e);
        // A bad id leaves the request without a name.
        if bad_id {
            return x;
        }
        x.request = Some(given_id.clone().unwrap_or_else(|| index.to_string()));
        x
    })?;
    let id = fields.id.unwrap_or_else(|| index.to_string());
    let label = given_id.unwrap_or_else(|| id.clone());
    let empty = Map::new();
    let inputs_obj = fields.inputs.unwrap_or(&empty);
    // A bad tensor fails this request only: the line itself is sound.
    let (inputs, bad) = match inputs_from_object(inputs_obj, schema) {
        Ok(inputs) => (inputs, None),
        Err(e) => {
            let mut x = InputError::new(file, e.message);
            x.line = Some(line);
            x.request = Some(label);
            x.path = Some(format!("inputs{}", e.path));
            x.input = e.input;
            (NamedTensors::new(), Some(x))
        }
    };
    let req = RunRequest {
        id,
        index,
        origin: format!("line {line}"),
        arrival_us: fields.arrival_us,
        sequence_id: fields.sequence_id,
        start: fields.start,
        end: fields.end,
        priority: fields.priority,
        timeout_us: fields.timeout_us,
        inputs,
    };
    Ok(Some((req, bad)))
}

/// An error in a request's inputs: `path` relative to the inputs object
/// (`.INPUT0[3]`), the input concerned.
struct InputsError {
    path: String,
    input: Option<String>,
    message: String,
}

fn inputs_from_object(
    obj: &Map<String, Value>,
    schema: &InputSchema,
) -> Result<NamedTensors, InputsError> {
    let mut out = NamedTensors::new();
    for (name, value) in obj {
        let fail = |path: String, message: String| InputsError {
            path,
            input: Some(name.clone()),
            message,
        };
        let member = json_member(name);
        if let Some(what) = schema.runner_filled.get(name) {
            return Err(fail(
                member,
                format!("'{name}' is {what}; the runner fills it, leave it out of the input"),
            ));
        }
        let Some(spec) = schema.input(name) else {
            let names: Vec<&str> = schema.inputs.iter().map(|i| i.name.as_str()).collect();
            let near = crate::text::suggestions(name, names.iter().copied());
            let hint = match near.first() {
                Some(s) => format!("did you mean '{s}'? "),
                None => String::new(),
            };
            return Err(fail(
                member,
                format!(
                    "unknown input '{name}'; {hint}the model's inputs are: {}",
                    if names.is_empty() {
                        "(none)".to_string()
                    } else {
                        names.join(", ")
                    }
                ),
            ));
        };
        let t = tensor_from_json(value, spec, schema.max_batch_size)
            .map_err(|e| fail(format!("{member}{}", e.path), e.message))?;
        out.insert(name.clone(), t);
    }
    for spec in &schema.inputs {
        if !spec.optional && !out.contains_key(&spec.name) {
            return Err(InputsError {
                path: String::new(),
                input: Some(spec.name.clone()),
                message: format!("missing input '{}'", spec.name),
            });
        }
    }
    if schema.max_batch_size > 0 {
        let mut batch: Option<(&str, i64)> = None;
        for (name, t) in &out {
            let b = t.shape.first().copied().unwrap_or(1);
            match batch {
                None => batch = Some((name, b)),
                Some((first, fb)) if fb != b => {
                    return Err(InputsError {
                        path: json_member(name),
                        input: Some(name.clone()),
                        message: format!(
                            "batch size {b} differs from the batch size {fb} of input '{first}'"
                        ),
                    })
                }
                Some(_) => {}
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ParsedConfig;
    use crate::tensor::{Tensor, TensorData};

    fn config(text: &str) -> ModelConfig {
        ParsedConfig::parse(text.to_string())
            .config
            .expect("valid config")
    }

    /// `INPUT0` FP32 [4] and optional `MASK` BOOL [-1] at max_batch_size 8.
    fn schema() -> InputSchema {
        InputSchema::from_config(&config(
            "name: \"m\" max_batch_size: 8
             input [ { name: \"INPUT0\" data_type: TYPE_FP32 dims: [ 4 ] },
                     { name: \"MASK\" data_type: TYPE_BOOL dims: [ -1 ] optional: true } ]",
        ))
        .unwrap()
    }

    fn spec(dtype: DataType, dims: &[i64]) -> InputSpec {
        InputSpec {
            name: "X".into(),
            dtype,
            dims: dims.to_vec(),
            optional: false,
        }
    }

    fn convert(v: &str, dtype: DataType, dims: &[i64], mbs: i64) -> Result<Tensor, ValueError> {
        tensor_from_json(&serde_json::from_str(v).unwrap(), &spec(dtype, dims), mbs)
    }

    fn parse(text: &str, s: &InputSchema, sequence: bool) -> Result<ParsedInput, Box<InputError>> {
        parse_input(text, "in.json", s, &ParseOptions { sequence })
    }

    /// The error that stops the input, or else that of the first request
    /// that fails alone.
    fn err(text: &str, s: &InputSchema, sequence: bool) -> String {
        match parse(text, s, sequence) {
            Err(e) => e.to_string(),
            Ok(p) => match p.failed.first() {
                Some(f) => f.error.clone(),
                None => panic!("no error in {text}"),
            },
        }
    }

    #[test]
    fn a_bad_tensor_fails_its_request_and_the_rest_of_its_sequence() {
        // perf_analyzer sequences: data[1][1] has a string for FP32.
        let p = parse(
            r#"{"data": [[{"INPUT0": [1, 2, 3, 4]}, {"INPUT0": [1, 2, 3, 4]}],
                         [{"INPUT0": [1, 2, 3, 4]}, {"INPUT0": [1, "x", 3, 4]},
                          {"INPUT0": [1, 2, 3, 4]}, {"INPUT0": [1, 2, 3, 4]}],
                         [{"INPUT0": [1, 2, 3, 4]}]]}"#,
            &schema(),
            true,
        )
        .unwrap();
        let ran: Vec<usize> = p.requests.iter().map(|r| r.index).collect();
        assert_eq!(ran, vec![0, 1, 2, 6]);
        let failed: Vec<usize> = p.failed.iter().map(|f| f.index).collect();
        assert_eq!(failed, vec![3, 4, 5]);
        assert!(p
            .failed
            .iter()
            .all(|f| f.sequence_id == Some(CorrId::Int(2))));
        assert!(
            p.failed[0].error.starts_with(
                "in.json: at data[1][1].INPUT0[1]: request 3, input 'INPUT0': \
                 expected a number for FP32, found the string \"x\""
            ),
            "{}",
            p.failed[0].error
        );
        for f in &p.failed[1..] {
            assert!(
                f.error.contains(&format!(
                    "request {}: not run: sequence 2 was aborted",
                    f.index
                )) && f.error.contains("bad request 3 (in.json: at data[1][1])"),
                "{}",
                f.error
            );
        }

        // JSON Lines: the abort lasts until the sequence's END; a new START
        // with the same id runs again; other sequences are not touched.
        let lines = [
            r#"{"id": "a0", "sequence_id": 1, "start": true, "arrival_us": 10, "inputs": {"INPUT0": [1, 2, 3, 4]}}"#,
            r#"{"id": "b0", "sequence_id": 2, "start": true, "inputs": {"INPUT0": [1, 2, 3, 4]}}"#,
            r#"{"id": "a1", "sequence_id": 1, "arrival_us": 20, "inputs": {"INPUT0": [1, 2, 3]}}"#,
            r#"{"id": "b1", "sequence_id": 2, "inputs": {"INPUT0": [1, 2, 3, 4]}}"#,
            r#"{"id": "a2", "sequence_id": 1, "end": true, "inputs": {"INPUT0": [1, 2, 3, 4]}}"#,
            r#"{"id": "a3", "sequence_id": 1, "inputs": {"INPUT0": [1, 2, 3, 4]}}"#,
            r#"{"id": "c0", "sequence_id": 1, "start": true, "inputs": {"NOPE": [1, 2, 3, 4]}}"#,
            r#"{"id": "c1", "sequence_id": 1, "inputs": {"INPUT0": [1, 2, 3, 4]}}"#,
            r#"{"id": "d0", "sequence_id": 1, "start": true, "inputs": {"INPUT0": [1, 2, 3, 4]}}"#,
        ];
        let p = parse(&lines.join("\n"), &schema(), false).unwrap();
        let ran: Vec<&str> = p.requests.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ran, ["a0", "b0", "b1", "a3", "d0"]);
        let failed: Vec<&str> = p.failed.iter().map(|f| f.id.as_str()).collect();
        assert_eq!(failed, ["a1", "a2", "c0", "c1"]);
        let indexes: Vec<usize> = p.failed.iter().map(|f| f.index).collect();
        assert_eq!(indexes, [2, 4, 6, 7]);
        assert!(p.failed[0].error.starts_with(
            "in.json:3: at inputs.INPUT0: request 'a1', input 'INPUT0': expected 4 values"
        ));
        assert!(
            p.failed[1].error.starts_with(
                "in.json:5: request 'a2': not run: sequence 1 was aborted by the earlier bad \
                 request 'a1' (in.json:3)"
            ),
            "{}",
            p.failed[1].error
        );
        assert!(p.failed[2].error.contains("unknown input 'NOPE'"));
        assert!(p.failed[3].error.contains("bad request 'c0' (in.json:7)"));
        // b1 keeps its release time (it follows a1 at 20 µs).
        let arrivals: Vec<Option<u64>> = p.requests.iter().map(|r| r.arrival_us).collect();
        assert_eq!(arrivals, [Some(10), Some(10), Some(20), Some(20), Some(20)]);
    }

    #[test]
    fn perf_analyzer_flat_data() {
        let p = parse(
            r#"{"data": [{"INPUT0": [1, 2, 3, 4]},
                         {"INPUT0": {"content": [5, 6, 7, 8], "shape": [4]}, "MASK": [true, false]},
                         {"INPUT0": {"content": [[1, 2, 3, 4], [5, 6, 7, 8]], "shape": [2, 4]}}]}"#,
            &schema(),
            false,
        )
        .unwrap();
        assert_eq!(p.format, InputFormat::PerfAnalyzer);
        let r = &p.requests;
        assert_eq!(r.len(), 3);
        assert_eq!((r[0].id.as_str(), r[2].id.as_str()), ("0", "2"));
        assert_eq!(r[0].origin, "data[0]");
        assert_eq!(
            r[0].inputs["INPUT0"],
            Tensor::new(vec![1, 4], TensorData::F32(vec![1.0, 2.0, 3.0, 4.0])).unwrap()
        );
        assert!(!r[0].inputs.contains_key("MASK"));
        assert_eq!(r[1].inputs["MASK"].shape, vec![1, 2]);
        assert_eq!(
            r[1].inputs["MASK"].data,
            TensorData::Bool(vec![true, false])
        );
        // A shape with the batch dimension is taken as it is.
        assert_eq!(r[2].inputs["INPUT0"].shape, vec![2, 4]);
        assert_eq!(r[2].batch_size(8), 2);
        assert!(r
            .iter()
            .all(|q| q.sequence_id.is_none() && !q.start && !q.end));
        assert!(p.warnings.is_empty());
    }

    #[test]
    fn perf_analyzer_sequences() {
        let text = r#"{"data": [[{"INPUT0": [1, 1, 1, 1]}, {"INPUT0": [2, 2, 2, 2]}, {"INPUT0": [3, 3, 3, 3]}],
                                 [{"INPUT0": [4, 4, 4, 4]}]],
                       "validation_data": []}"#;
        let p = parse(text, &schema(), true).unwrap();
        let flags: Vec<(String, Option<CorrId>, bool, bool)> = p
            .requests
            .iter()
            .map(|r| (r.id.clone(), r.sequence_id.clone(), r.start, r.end))
            .collect();
        let s = |n| Some(CorrId::Int(n));
        assert_eq!(
            flags,
            vec![
                ("0".into(), s(1), true, false),
                ("1".into(), s(1), false, false),
                ("2".into(), s(1), false, true),
                ("3".into(), s(2), true, true),
            ]
        );
        assert_eq!(p.requests[3].origin, "data[1][0]");
        assert_eq!(p.warnings.len(), 1, "validation_data is mentioned");
        // Sequences need --sequence.
        let e = err(text, &schema(), false);
        assert!(e.contains("at data[0]") && e.contains("--sequence"), "{e}");
        // A flat list with --sequence is one sequence.
        let p = parse(
            r#"{"data": [{"INPUT0": [1, 1, 1, 1]}, {"INPUT0": [2, 2, 2, 2]}]}"#,
            &schema(),
            true,
        )
        .unwrap();
        assert_eq!(
            p.requests
                .iter()
                .map(|r| (r.start, r.end))
                .collect::<Vec<_>>(),
            vec![(true, false), (false, true)]
        );
        assert!(p.requests.iter().all(|r| r.sequence_id == s(1)));
    }

    #[test]
    fn perf_analyzer_b64_values() {
        let bytes: Vec<u8> = [1.5f32, -2.0, 0.0, 8.0]
            .iter()
            .flat_map(|f| f.to_le_bytes())
            .collect();
        let b64 = crate::inputs::codec::b64_encode(&bytes);
        let text = format!(
            r#"{{"data": [{{"INPUT0": {{"b64": "{b64}"}}}}, {{"INPUT0": {{"content": {{"b64": "{b64}"}}, "shape": [4]}}}}]}}"#
        );
        let p = parse(&text, &schema(), false).unwrap();
        for r in &p.requests {
            assert_eq!(
                r.inputs["INPUT0"],
                Tensor::new(vec![1, 4], TensorData::F32(vec![1.5, -2.0, 0.0, 8.0])).unwrap()
            );
        }
        // Three floats do not fill [4].
        let short = crate::inputs::codec::b64_encode(&bytes[..12]);
        let e = err(
            &format!(r#"{{"data": [{{"INPUT0": {{"b64": "{short}"}}}}]}}"#),
            &schema(),
            false,
        );
        assert!(
            e.contains("request 0, input 'INPUT0'") && e.contains("expected 4 values"),
            "{e}"
        );
        // BYTES elements carry their length prefixes.
        let words = crate::inputs::codec::b64_encode(&[2, 0, 0, 0, b'h', b'i', 0, 0, 0, 0]);
        let t = convert(
            &format!(r#"{{"b64": "{words}"}}"#),
            DataType::Bytes,
            &[-1],
            0,
        )
        .unwrap();
        assert_eq!(t.shape, vec![2]);
        assert_eq!(t.data, TensorData::Bytes(vec![b"hi".to_vec(), vec![]]));
    }

    #[test]
    fn json_lines_requests() {
        let text = "{\"id\": \"r1\", \"arrival_us\": 0, \"sequence_id\": 7, \"start\": true, \"inputs\": {\"INPUT0\": [1, 2, 3, 4]}}\n\
                    \n\
                    {\"arrival_us\": 10, \"sequence_id\": \"user-b\", \"end\": true, \"priority\": 2, \"timeout_us\": 5, \"inputs\": {\"INPUT0\": [[1, 2, 3, 4]]}}\n\
                    {\"id\": 12, \"inputs\": {\"INPUT0\": [0, 0, 0, 0]}}\n";
        let p = parse(text, &schema(), false).unwrap();
        assert_eq!(p.format, InputFormat::JsonLines);
        let r = &p.requests;
        assert_eq!(r.len(), 3);
        assert_eq!(
            (
                r[0].id.as_str(),
                r[0].arrival_us,
                r[0].sequence_id.clone(),
                r[0].start,
                r[0].end
            ),
            ("r1", Some(0), Some(CorrId::Int(7)), true, false)
        );
        assert_eq!(r[1].id, "1", "default id is the position in the input");
        assert_eq!(r[1].origin, "line 3");
        assert_eq!(r[1].sequence_id, Some(CorrId::Str("user-b".into())));
        assert_eq!((r[1].priority, r[1].timeout_us, r[1].end), (2, 5, true));
        assert_eq!(r[1].inputs["INPUT0"].shape, vec![1, 4]);
        assert_eq!((r[2].id.as_str(), r[2].arrival_us), ("12", None));
        // A lone pretty-printed request is one request too.
        let one = parse(
            "{\n \"inputs\": {\"INPUT0\": [1, 2, 3, 4]}\n}\n",
            &schema(),
            false,
        );
        let one = one.unwrap();
        assert_eq!(one.requests.len(), 1);
        assert_eq!(one.requests[0].inputs["INPUT0"].shape, vec![1, 4]);
    }

    #[test]
    fn json_lines_errors_name_line_request_and_input() {
        let s = schema();
        let cases = [
            (
                "{\"inputs\": {\"INPUT0\": [1, 2, 3, 4]}}\n{\"id\": \"r2\", \"inputs\": {\"INPUT0\": [1, 2, \"x\", 4]}}",
                "in.json:2: at inputs.INPUT0[2]: request 'r2', input 'INPUT0': expected a number for FP32, found the string \"x\"",
            ),
            (
                "{\"inputs\": {\"INPUT1\": [1, 2, 3, 4]}}",
                "in.json:1: at inputs.INPUT1: request 0, input 'INPUT1': unknown input 'INPUT1'; did you mean 'INPUT0'?",
            ),
            (
                "{\"id\": \"a\", \"inputs\": {}}",
                "in.json:1: at inputs: request 'a', input 'INPUT0': missing input 'INPUT0'",
            ),
            (
                "{\"inputs\": {\"INPUT0\": [1, 2, 3]}}",
                "in.json:1: at inputs.INPUT0: request 0, input 'INPUT0': expected 4 values for shape [1, 4], found 3",
            ),
            (
                "{\"arrival_us\": 5, \"inputs\": {\"INPUT0\": [1, 2, 3, 4]}}\n{\"arrival_us\": 4, \"inputs\": {\"INPUT0\": [1, 2, 3, 4]}}",
                "in.json:2: request 1: arrival_us 4 is earlier than 5 on line 1",
            ),
            ("{\"inputs\": [1]}", "in.json:1: request 0: field 'inputs' must be an object"),
            ("{\"start\": 1}", "in.json:1: request 0: field 'start' must be true or false"),
            ("{\"sequence_id\": -3}", "in.json:1: request 0: field 'sequence_id' must be"),
            ("{\"arrival_us\": 1.5}", "in.json:1: request 0: field 'arrival_us' must be"),
            (
                "{\"inputs\": {\"INPUT0\": [1, 2, 3, 4]}}\n{oops",
                "in.json:2:2: malformed JSON",
            ),
            ("[1, 2]", "in.json:1: expected a JSON object"),
            ("", "in.json: the input holds no requests"),
            (
                "{\"inputs\": {\"INPUT0\": [1, 2, 3, 4], \"MASK\": [[true], [false]]}}",
                "input 'MASK': batch size 2 differs from the batch size 1 of input 'INPUT0'",
            ),
        ];
        for (text, want) in cases {
            let got = err(text, &s, false);
            assert!(got.contains(want), "{got}\n  does not contain\n{want}");
        }
    }

    #[test]
    fn perf_analyzer_errors_name_the_json_path() {
        let s = schema();
        let cases = [
            (r#"{"data": [{"INPUT0": [1, 2, 3, 4]}, {"INPUT0": [1, 2, 3, 1e40]}]}"#, "in.json: at data[1].INPUT0[3]: request 1, input 'INPUT0': 1e+40 does not fit FP32"),
            (r#"{"data": []}"#, "at data: holds no requests"),
            (r#"{"data": {}}"#, "at data: expected an array of requests"),
            (r#"{"data": [{"INPUT0": [1, 2, 3, 4]}, [{"INPUT0": [1, 2, 3, 4]}]]}"#, "at data[1]: expected an object like data[0]"),
            (r#"{"data": [[]]}"#, "at data[0]: is an empty sequence"),
            (r#"{"data": [{"INPUT0": {"content": [1, 2, 3, 4], "shape": [2, 2]}}]}"#, "shape [2, 2] does not match dims [4]"),
            (r#"{"data": [{"INPUT0": {"content": [1, 2, 3, 4], "shape": [4], "type": "x"}}]}"#, "unknown member \"type\""),
            (r#"{"data": [{"INPUT0": {"content": [1, 2, 3, 4], "shape": [-4]}}]}"#, "at data[0].INPUT0.shape: request 0, input 'INPUT0': dimensions must be non-negative"),
            (r#"{"data": [{"INPUT0": {"b64": "!!"}}]}"#, "at data[0].INPUT0.b64: request 0, input 'INPUT0': invalid base64"),
            (r#"{"data": [{"INPUT0": [[1, 2], [3]]}]}"#, "at data[0].INPUT0[1]: request 0, input 'INPUT0': nested arrays are not rectangular"),
            ("{\n  \"data\": [\n  {\"INPUT0\": [1, 2, 3, 4]\n  ]\n}", "in.json:4:3: malformed JSON"),
        ];
        for (text, want) in cases {
            let got = err(text, &s, true);
            assert!(got.contains(want), "{got}\n  does not contain\n{want}");
        }
    }

    #[test]
    fn runner_filled_inputs_are_refused() {
        let implicit = InputSchema::from_config(&config(
            "name: \"acc\" max_batch_size: 4
             input [ { name: \"Input\" data_type: TYPE_FP32 dims: [ 4 ] } ]
             sequence_batching {
               control_input [ { name: \"START\" control [ { kind: CONTROL_SEQUENCE_START bool_false_true: [ false, true ] } ] },
                               { name: \"CORRID\" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 } ] } ]
               state [ { input_name: \"S_IN\" output_name: \"S_OUT\" data_type: TYPE_FP32 dims: [ 1 ] } ] }",
        ))
        .unwrap();
        let e = err(
            "{\"inputs\": {\"Input\": [1, 2, 3, 4], \"START\": [1]}}",
            &implicit,
            false,
        );
        assert!(e.contains("input 'START': 'START' is a control input of the sequence batcher (CONTROL_SEQUENCE_START); the runner fills it"), "{e}");
        let e = err(
            "{\"inputs\": {\"Input\": [1, 2, 3, 4], \"CORRID\": [1]}}",
            &implicit,
            false,
        );
        assert!(e.contains("CONTROL_SEQUENCE_CORRID"), "{e}");
        let e = err(
            "{\"inputs\": {\"Input\": [1, 2, 3, 4], \"S_IN\": [0]}}",
            &implicit,
            false,
        );
        assert!(e.contains("a state input (sequence_batching.state)"), "{e}");

        let stateful = InputSchema::from_config(&config(
            "name: \"acc\" backend: \"stateful\" max_batch_size: 4
             input [ { name: \"Input\" data_type: TYPE_FP32 dims: [ 4, -1, 5 ] } ]
             sequence_batching {
               control_input [ { name: \"ResetSequence\" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] } ] }
             parameters { key: \"state_pairs\" value { string_value: \"<<<Accumulate_In, Accumulate_Out>>>\" } }",
        ))
        .unwrap();
        let e = err(
            r#"{"data": [{"Input": [0], "Accumulate_In": [0]}]}"#,
            &stateful,
            false,
        );
        assert!(
            e.contains("input 'Accumulate_In'") && e.contains("state_pairs"),
            "{e}"
        );
        let e = err(r#"{"data": [{"ResetSequence": [1]}]}"#, &stateful, false);
        assert!(e.contains("the runner fills it"), "{e}");
    }

    #[test]
    fn schema_from_config() {
        let s = schema();
        assert_eq!(s.model, "m");
        assert_eq!(s.max_batch_size, 8);
        assert_eq!(
            s.inputs,
            vec![
                InputSpec {
                    name: "INPUT0".into(),
                    dtype: DataType::F32,
                    dims: vec![4],
                    optional: false
                },
                InputSpec {
                    name: "MASK".into(),
                    dtype: DataType::Bool,
                    dims: vec![-1],
                    optional: true
                }
            ]
        );
        assert!(s.runner_filled.is_empty());
        assert!(InputSchema::from_config(&config(
            "name: \"m\" input [ { name: \"X\" data_type: TYPE_INVALID dims: [ 1 ] } ]"
        ))
        .is_err());
    }

    #[test]
    fn unknown_fields_and_duplicate_ids_warn() {
        let p = parse(
            "{\"id\": \"a\", \"arival_us\": 3, \"inputs\": {\"INPUT0\": [1, 2, 3, 4]}}\n\
             {\"id\": \"a\", \"batch_size\": 2, \"inputs\": {\"INPUT0\": [1, 2, 3, 4]}}",
            &schema(),
            false,
        )
        .unwrap();
        assert_eq!(p.warnings.len(), 3, "{:?}", p.warnings);
        assert!(
            p.warnings[0].contains("in.json:1: unknown field 'arival_us'")
                && p.warnings[0].contains("did you mean 'arrival_us'")
        );
        assert!(p
            .warnings
            .iter()
            .any(|w| w.contains("'batch_size'") && w.contains("first dimension")));
        assert!(p
            .warnings
            .iter()
            .any(|w| w.contains("in.json:2: request id 'a' is used more than once")));
    }

    #[test]
    fn nothing_panics_on_odd_input() {
        let s = schema();
        let texts = [
            "{",
            "}",
            "null",
            "{\"data\": null}",
            "{\"data\": [null]}",
            "{\"data\": [[null]]}",
            "{\"data\": [{\"INPUT0\": null}]}",
            "{\"data\": [{\"INPUT0\": {}}]}",
            "{\"data\": [{\"INPUT0\": {\"content\": null}}]}",
            "{\"data\": [{\"INPUT0\": [[[]]]}]}",
            "{\"inputs\": {\"INPUT0\": {\"content\": [1], \"shape\": [99999999999, 99999999999]}}}",
            "\u{feff}{\"inputs\": {\"INPUT0\": [1,2,3,4]}}",
            "{\"id\": null}",
            "1",
            "\"x\"",
        ];
        for t in texts {
            let _ = parse(t, &s, true);
            let _ = parse(t, &s, false);
        }
        assert!(parse("\u{feff}{\"inputs\": {\"INPUT0\": [1,2,3,4]}}", &s, false).is_ok());
    }

    #[test]
    fn perf_analyzer_requests_are_read_as_they_come_into_compact_tensors() {
        // Memory stays near the input's size (docs/hostile.md): the
        // document is not parsed whole into JSON values before the
        // requests are made: a broken tail is met after the requests before it were
        // converted (the error is still the file's), and each request
        // holds its values as one typed buffer, not as JSON values.
        let s = schema();
        let e = err(
            "{\"data\": [{\"INPUT0\": [1, 2, 3, 4]},\n {\"INPUT0\": [1, 2, 3, 4]},\n {\"INPUT0\": [1,",
            &s,
            false,
        );
        assert!(e.starts_with("in.json:3:"), "{e}");
        let p = parse(r#"{"data": [{"INPUT0": [1, 2, 3, 4]}]}"#, &s, false).unwrap();
        let t = p.requests[0].inputs.get("INPUT0").expect("INPUT0");
        match &t.data {
            TensorData::F32(v) => assert!(v.len() == 4 && v.capacity() == 4, "{v:?}"),
            other => panic!("{other:?}"),
        }
        assert!(std::mem::size_of::<RunRequest>() <= 160);
    }
}
