//! Triton's model warm-up (`model_warmup`), which `tritonctl run` runs on
//! every instance of an onnxruntime-backend model before its first
//! request, as Triton does when it loads the model (docs/spec/validation.md
//! §3.8; Triton's `GenerateWarmupData` and `WarmUp`, then the batch checks
//! of the onnxruntime backend's `ProcessRequests`):
//!
//! - samples with `batch_size` 0 are skipped; the others run `count`
//!   times, at least once;
//! - a sample is `batch_size` requests executed together, which the
//!   backend stacks into one batch: a model input gets the batch
//!   dimension when the model batches (`[batch_size] + dims`); any other
//!   input (a sequence control) is passed as given, the requests stacked
//!   along its first dimension;
//! - the data: zeros; random bytes (zeros for BYTES, as in Triton); or
//!   the file `warmup/<input_data_file>` of the model directory, read as
//!   raw little-endian elements (its first element count × size bytes) or,
//!   for BYTES, as 4-byte-length-prefixed strings (the first element
//!   count of them);
//! - the backend refuses a batch larger than `max_batch_size` (larger than
//!   1 for a model that does not batch);
//! - a failure stops the load with Triton's words: `failed to run warmup
//!   sample '<name>': `, then `<error>; ` once per request of the sample.
//!
//! The static checks of the samples (dims, data types, files, inputs) are
//! `validate` rules (E09xx), which stop a run before this.

use std::path::Path;

use crate::inputs::codec::{decode_first, decode_le, Shortfall};
use crate::runtime::ModelSession;
use crate::schema::inference::model_warmup::input::InputDataType;
use crate::schema::inference::ModelConfig;
use crate::tensor::{element_count, DataType, Tensor, TensorData, TensorError};

/// One warm-up sample, ready to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    /// Requests executed together (the sample's `batch_size`).
    pub requests: usize,
    /// Executions (the sample's `count`, at least 1).
    pub runs: usize,
    /// The tensors of one execution, the requests stacked.
    pub inputs: Vec<(String, Tensor)>,
    /// The backend's refusal of the batch (too many requests), which is
    /// this sample's failure; its tensors are not made then.
    pub refusal: Option<String>,
}

/// The samples of `cfg` (skipping those of batch size 0), with the data
/// files read from `model_dir/warmup`. Errors carry Triton's words where
/// Triton has them.
pub fn samples(cfg: &ModelConfig, model_dir: &Path) -> Result<Vec<Sample>, String> {
    let batching = cfg.max_batch_size != 0;
    let limit = usize::try_from(cfg.max_batch_size).unwrap_or(0);
    let mut out = Vec::new();
    for w in cfg.model_warmup.iter().filter(|w| w.batch_size > 0) {
        let requests = w.batch_size as usize;
        let runs = (w.count as usize).max(1);
        if requests != 1 && requests > limit {
            out.push(Sample {
                name: w.name.clone(),
                requests,
                runs,
                inputs: Vec::new(),
                refusal: Some(format!(
                    "batch size {requests} for '{}', max allowed is {}",
                    cfg.name, cfg.max_batch_size
                )),
            });
            continue;
        }
        let in_input =
            |name: &str, e: TensorError| format!("warmup sample '{}': input '{name}': {e}", w.name);
        let mut inputs = Vec::with_capacity(w.inputs.len());
        for (name, input) in &w.inputs {
            let dtype = DataType::from_config(input.data_type).ok_or_else(|| {
                format!(
                    "warmup sample '{}': input '{name}' has no data type",
                    w.name
                )
            })?;
            let count = element_count(&input.dims)
                .filter(|_| input.dims.iter().all(|&d| d >= 0))
                .ok_or_else(|| {
                    format!(
                        "warmup setting expects all variable-size dimensions are specified for input '{name}'"
                    )
                })?;
            let one = match &input.input_data_type {
                Some(InputDataType::RandomData(_)) if dtype != DataType::Bytes => {
                    random(dtype, count).map_err(|e| in_input(name, e))?
                }
                Some(InputDataType::ZeroData(_) | InputDataType::RandomData(_)) => {
                    TensorData::try_zeros(dtype, count).map_err(|e| in_input(name, e))?
                }
                Some(InputDataType::InputDataFile(file)) => {
                    from_file(name, dtype, count, file, model_dir)?
                }
                None => {
                    return Err(format!(
                        "warmup setting expects input '{name}' to have input_data_type set"
                    ))
                }
            };
            let config_input = cfg.input.iter().find(|i| &i.name == name);
            // Warm-up requests go through Triton's request normalization
            // as any other: an input's `reshape` applies (see
            // `crate::run::reshape`).
            let dims = match config_input.and_then(|i| i.reshape.as_ref().map(|r| (i, r))) {
                Some((i, r)) => crate::run::reshape::map_shape(&input.dims, false, &i.dims, &r.shape)
                    .map_err(|e| {
                        format!(
                            "warmup sample '{}': input '{name}' with dims {:?} cannot take its reshape {:?}: {e}",
                            w.name, input.dims, r.shape
                        )
                    })?,
                None => input.dims.clone(),
            };
            let shape = stacked_shape(&dims, requests, batching, config_input.is_some());
            let mut data = TensorData::empty(dtype);
            data.try_reserve(one.len().saturating_mul(requests))
                .map_err(|e| in_input(name, e))?;
            for _ in 0..requests {
                data.extend_from(&one).map_err(|e| in_input(name, e))?;
            }
            let tensor = Tensor::new(shape, data).map_err(|e| in_input(name, e))?;
            inputs.push((name.clone(), tensor));
        }
        out.push(Sample {
            name: w.name.clone(),
            requests,
            runs,
            inputs,
            refusal: None,
        });
    }
    Ok(out)
}

/// The shape of an input of `requests` requests of `dims` each: the batch
/// dimension of a batching model's input, else the first dimension
/// (a scalar control becomes one value per request).
fn stacked_shape(dims: &[i64], requests: usize, batching: bool, is_input: bool) -> Vec<i64> {
    let n = requests as i64;
    if batching && is_input {
        std::iter::once(n).chain(dims.iter().copied()).collect()
    } else if let Some((&first, rest)) = dims.split_first() {
        std::iter::once(first.saturating_mul(n))
            .chain(rest.iter().copied())
            .collect()
    } else if requests > 1 {
        vec![n]
    } else {
        Vec::new()
    }
}

/// `count` elements of random bytes (a fixed sequence: a warm-up is the
/// same on every run). BOOL elements are 0 or 1.
fn random(dtype: DataType, count: usize) -> Result<TensorData, TensorError> {
    let size = dtype.element_size().unwrap_or(1);
    let too_large = || TensorError::Alloc {
        dtype,
        elements: count,
    };
    let n = count.checked_mul(size).ok_or_else(too_large)?;
    let mut bytes: Vec<u8> = Vec::new();
    bytes.try_reserve_exact(n).map_err(|_| too_large())?;
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    bytes.extend((0..n).map(|_| {
        // xorshift64
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let b = (state >> 24) as u8;
        if dtype == DataType::Bool {
            b & 1
        } else {
            b
        }
    }));
    // Whole elements of a fixed-size type: this cannot fail.
    decode_le(dtype, &bytes).map_err(|_| too_large())
}

fn from_file(
    name: &str,
    dtype: DataType,
    count: usize,
    file: &str,
    model_dir: &Path,
) -> Result<TensorData, String> {
    let path = model_dir.join("warmup").join(file);
    let bytes = crate::files::read_in(&path, model_dir)
        .map_err(|e| format!("warmup input '{name}': cannot read {}: {e}", path.display()))?;
    decode_first(dtype, count, &bytes).map_err(|e| match e {
        // Triton's text, including its missing space.
        Shortfall::Bytes { need, have } => format!(
            "warmup setting expects {need} bytes, but the data provided from {file}only has {have} bytes"
        ),
        Shortfall::Strings { have } => {
            format!("warmup input '{name}': {file} holds {have} strings, the input needs {count}")
        }
        Shortfall::Malformed(m) => format!("warmup input '{name}': {file}: {m}"),
    })
}

/// Runs `samples` on `session` (one instance of the model), stopping at
/// the first failure.
pub fn run(session: &mut ModelSession, samples: &[Sample]) -> Result<(), String> {
    // Each of the sample's requests gets the error.
    let failed = |s: &Sample, e: &str| {
        let mut m = format!("failed to run warmup sample '{}': ", s.name);
        for _ in 0..s.requests {
            m.push_str(e);
            m.push_str("; ");
        }
        m
    };
    for s in samples {
        if let Some(e) = &s.refusal {
            return Err(failed(s, e));
        }
        let inputs: Vec<(&str, &Tensor)> = s.inputs.iter().map(|(n, t)| (n.as_str(), t)).collect();
        let mut outputs = Vec::new();
        for _ in 0..s.runs {
            session
                .run_into(&inputs, &mut outputs)
                .map_err(|e| failed(s, &e.to_string()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(text: &str) -> ModelConfig {
        crate::config::ParsedConfig::parse(format!(
            "name: \"m\" backend: \"onnxruntime\" \
             input [ {{ name: \"X\" data_type: TYPE_FP32 dims: [ 2 ] }} ] {text}"
        ))
        .config
        .unwrap()
    }

    #[test]
    fn samples_stack_their_requests_as_the_backend_batches_them() {
        let c = cfg("max_batch_size: 8 model_warmup [ \
            { name: \"zero\" batch_size: 3 count: 2 \
              inputs { key: \"X\" value { data_type: TYPE_FP32 dims: [ 2 ] zero_data: true } } \
              inputs { key: \"START\" value { data_type: TYPE_INT32 dims: [ 1 ] zero_data: true } } }, \
            { name: \"skipped\" batch_size: 0 \
              inputs { key: \"X\" value { data_type: TYPE_FP32 dims: [ 2 ] zero_data: true } } } ]");
        let s = samples(&c, Path::new(".")).unwrap();
        assert_eq!(s.len(), 1, "batch size 0 is skipped");
        assert_eq!(
            (s[0].name.as_str(), s[0].requests, s[0].runs),
            ("zero", 3, 2)
        );
        let x = &s[0].inputs.iter().find(|(n, _)| n == "X").unwrap().1;
        assert_eq!(x.shape, vec![3, 2]);
        assert_eq!(x.data, TensorData::F32(vec![0.0; 6]));
        // A control input: the requests' values one after the other.
        let start = &s[0].inputs.iter().find(|(n, _)| n == "START").unwrap().1;
        assert_eq!(start.shape, vec![3]);
        assert_eq!(start.data, TensorData::I32(vec![0; 3]));
    }

    #[test]
    fn a_model_without_batching_takes_the_dims_as_they_are_and_runs_once_by_default() {
        let c = cfg(
            "max_batch_size: 0 model_warmup [ { name: \"w\" batch_size: 1 \
            inputs { key: \"X\" value { data_type: TYPE_FP32 dims: [ 2 ] random_data: true } } } ]",
        );
        let s = samples(&c, Path::new(".")).unwrap();
        assert_eq!(s[0].runs, 1);
        let x = &s[0].inputs[0].1;
        assert_eq!(x.shape, vec![2]);
        // Random, and the same every time.
        assert_eq!(samples(&c, Path::new(".")).unwrap(), s);
        assert_ne!(x.data, TensorData::F32(vec![0.0; 2]));
    }

    #[test]
    fn random_booleans_are_booleans_and_random_strings_are_empty() {
        let TensorData::Bool(b) = random(DataType::Bool, 64).unwrap() else {
            panic!("BOOL")
        };
        assert!(b.iter().any(|&v| v) && b.iter().any(|&v| !v));
        let c = cfg("max_batch_size: 0 model_warmup [ { name: \"w\" batch_size: 1 \
            inputs { key: \"S\" value { data_type: TYPE_STRING dims: [ 2 ] random_data: true } } } ]");
        let s = samples(&c, Path::new(".")).unwrap();
        assert_eq!(
            s[0].inputs[0].1.data,
            TensorData::Bytes(vec![vec![], vec![]])
        );
    }

    #[test]
    fn data_files_are_read_from_the_warmup_folder() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("warmup")).unwrap();
        let floats: Vec<u8> = [1.5f32, -2.0, 9.0]
            .iter()
            .flat_map(|f| f.to_le_bytes())
            .collect();
        std::fs::write(dir.path().join("warmup").join("x.bin"), &floats).unwrap();
        let mut strings = Vec::new();
        for s in ["ab", ""] {
            strings.extend_from_slice(&(s.len() as u32).to_le_bytes());
            strings.extend_from_slice(s.as_bytes());
        }
        std::fs::write(dir.path().join("warmup").join("s.bin"), &strings).unwrap();
        let c = cfg("max_batch_size: 4 model_warmup [ { name: \"w\" batch_size: 2 \
            inputs { key: \"X\" value { data_type: TYPE_FP32 dims: [ 2 ] input_data_file: \"x.bin\" } } \
            inputs { key: \"S\" value { data_type: TYPE_STRING dims: [ 2 ] input_data_file: \"s.bin\" } } } ]");
        let s = samples(&c, dir.path()).unwrap();
        let get = |n: &str| &s[0].inputs.iter().find(|(k, _)| k == n).unwrap().1;
        // The first 2 floats of the file, once per request.
        assert_eq!(get("X").shape, vec![2, 2]);
        assert_eq!(get("X").data, TensorData::F32(vec![1.5, -2.0, 1.5, -2.0]));
        assert_eq!(get("S").shape, vec![4]);
        assert_eq!(
            get("S").data,
            TensorData::Bytes(vec![b"ab".to_vec(), vec![], b"ab".to_vec(), vec![]])
        );
        let short = cfg("max_batch_size: 4 model_warmup [ { name: \"w\" batch_size: 1 \
            inputs { key: \"X\" value { data_type: TYPE_FP32 dims: [ 4 ] input_data_file: \"x.bin\" } } } ]");
        assert_eq!(
            samples(&short, dir.path()).unwrap_err(),
            "warmup setting expects 16 bytes, but the data provided from x.binonly has 12 bytes"
        );
        let missing = cfg("max_batch_size: 4 model_warmup [ { name: \"w\" batch_size: 1 \
            inputs { key: \"X\" value { data_type: TYPE_FP32 dims: [ 2 ] input_data_file: \"nope\" } } } ]");
        let e = samples(&missing, dir.path()).unwrap_err();
        assert!(e.starts_with("warmup input 'X': cannot read "), "{e}");
    }

    #[test]
    fn a_batch_the_backend_refuses_is_the_samples_failure_and_makes_no_tensors() {
        let c = cfg(
            "max_batch_size: 2 model_warmup [ { name: \"big\" batch_size: 3 \
            inputs { key: \"X\" value { data_type: TYPE_FP32 dims: [ 2 ] zero_data: true } } } ]",
        );
        let s = samples(&c, Path::new(".")).unwrap();
        assert_eq!(
            s[0].refusal.as_deref(),
            Some("batch size 3 for 'm', max allowed is 2")
        );
        assert!(s[0].inputs.is_empty());
        // Without batching only one request is accepted.
        let c = cfg(
            "max_batch_size: 0 model_warmup [ { name: \"two\" batch_size: 2 \
            inputs { key: \"X\" value { data_type: TYPE_FP32 dims: [ 2 ] zero_data: true } } } ]",
        );
        assert_eq!(
            samples(&c, Path::new(".")).unwrap()[0].refusal.as_deref(),
            Some("batch size 2 for 'm', max allowed is 0")
        );
    }

    #[test]
    fn data_too_large_for_memory_is_an_error_not_an_abort() {
        for kind in ["zero_data: true", "random_data: true"] {
            let c = cfg(&format!(
                "max_batch_size: 4 model_warmup [ {{ name: \"w\" batch_size: 2 \
                 inputs {{ key: \"X\" value {{ data_type: TYPE_FP32 dims: [ 100000000000000000 ] {kind} }} }} }} ]"
            ));
            let e = samples(&c, Path::new(".")).unwrap_err();
            assert_eq!(
                e,
                "warmup sample 'w': input 'X': cannot allocate 100000000000000000 elements of FP32: not enough memory",
                "{kind}"
            );
        }
    }

    #[test]
    fn variable_dims_and_missing_data_kinds_are_refused_with_tritons_words() {
        let c = cfg(
            "max_batch_size: 4 model_warmup [ { name: \"w\" batch_size: 1 \
            inputs { key: \"X\" value { data_type: TYPE_FP32 dims: [ -1 ] zero_data: true } } } ]",
        );
        assert_eq!(
            samples(&c, Path::new(".")).unwrap_err(),
            "warmup setting expects all variable-size dimensions are specified for input 'X'"
        );
        let c = cfg(
            "max_batch_size: 4 model_warmup [ { name: \"w\" batch_size: 1 \
            inputs { key: \"X\" value { data_type: TYPE_FP32 dims: [ 2 ] } } } ]",
        );
        assert_eq!(
            samples(&c, Path::new(".")).unwrap_err(),
            "warmup setting expects input 'X' to have input_data_type set"
        );
    }
}
