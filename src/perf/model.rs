//! What a load test needs to know about a model, from the model metadata
//! and (when the server has Triton's configuration extension) its config.

use crate::tensor::DataType;
use serde_json::Value;

/// One input, its dims without the batch dim.
#[derive(Debug, Clone, PartialEq)]
pub struct InputSpec {
    pub name: String,
    pub datatype: DataType,
    pub dims: Vec<i64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ModelInfo {
    pub name: String,
    /// 0: requests have no batch dim.
    pub max_batch_size: u64,
    pub inputs: Vec<InputSpec>,
    pub outputs: Vec<String>,
    /// The config has `sequence_batching`.
    pub sequence: bool,
    /// `model_transaction_policy.decoupled`.
    pub decoupled: bool,
    /// The config endpoint answered.
    pub has_config: bool,
}

/// An integer written as a JSON number or a numeric string (proto3 JSON
/// prints 64-bit fields as strings).
pub fn lenient_int(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn dims_of(v: Option<&Value>) -> Result<Vec<i64>, String> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .map(|d| lenient_int(d).ok_or_else(|| format!("dimension {d} is not an integer")))
            .collect(),
        Some(other) => Err(format!("dims {other} is not an array")),
    }
}

fn datatype(name: &str) -> Result<DataType, String> {
    DataType::parse(name).ok_or_else(|| format!("unknown datatype '{name}'"))
}

impl ModelInfo {
    /// From the model metadata and, when present, the config. Without a
    /// config the first metadata dim is a batch dim only when `batched`.
    pub fn new(meta: &Value, config: Option<&Value>, batched: bool) -> Result<Self, String> {
        let name = meta["name"].as_str().unwrap_or_default().to_string();
        let meta_inputs = meta["inputs"]
            .as_array()
            .ok_or("model metadata has no 'inputs' array")?;
        let outputs = meta["outputs"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|o| o["name"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let mut info = ModelInfo {
            name,
            max_batch_size: 0,
            inputs: Vec::new(),
            outputs,
            sequence: false,
            decoupled: false,
            has_config: config.is_some(),
        };
        match config {
            Some(cfg) => {
                info.max_batch_size = cfg
                    .get("max_batch_size")
                    .and_then(lenient_int)
                    .unwrap_or(0)
                    .max(0) as u64;
                info.sequence = cfg.get("sequence_batching").is_some_and(|v| v.is_object());
                info.decoupled = cfg["model_transaction_policy"]["decoupled"]
                    .as_bool()
                    .unwrap_or(false);
                let cfg_inputs = cfg["input"].as_array().cloned().unwrap_or_default();
                for m in meta_inputs {
                    let spec = Self::meta_input(m, info.max_batch_size > 0)?;
                    // the config's dims are the ones without the batch dim;
                    // prefer them (reshape makes metadata differ)
                    let from_cfg = cfg_inputs
                        .iter()
                        .find(|c| c["name"].as_str() == Some(spec.name.as_str()));
                    let dims = match from_cfg {
                        Some(c) if c.get("dims").is_some() && c.get("reshape").is_none() => {
                            dims_of(c.get("dims"))?
                        }
                        _ => spec.dims.clone(),
                    };
                    info.inputs.push(InputSpec { dims, ..spec });
                }
            }
            None => {
                for m in meta_inputs {
                    info.inputs.push(Self::meta_input(m, batched)?);
                }
                if batched {
                    info.max_batch_size = u64::MAX;
                }
            }
        }
        Ok(info)
    }

    fn meta_input(m: &Value, strip_batch: bool) -> Result<InputSpec, String> {
        let name = m["name"]
            .as_str()
            .ok_or("a metadata input has no name")?
            .to_string();
        let dt = m["datatype"]
            .as_str()
            .ok_or_else(|| format!("input '{name}' has no datatype"))?;
        let mut dims = dims_of(m.get("shape")).map_err(|e| format!("input '{name}': {e}"))?;
        if strip_batch && !dims.is_empty() {
            dims.remove(0);
        }
        Ok(InputSpec {
            datatype: datatype(dt).map_err(|e| format!("input '{name}': {e}"))?,
            name,
            dims,
        })
    }

    /// Applies `--shape NAME:D1,D2` overrides and, with `require_fixed`,
    /// checks that no variable dim is left.
    pub fn apply_shapes(&mut self, shapes: &[String], require_fixed: bool) -> Result<(), String> {
        for s in shapes {
            let (name, dims) = s
                .rsplit_once(':')
                .ok_or_else(|| format!("--shape '{s}' is not NAME:D1,D2,..."))?;
            let dims: Vec<i64> = dims
                .split(',')
                .map(|d| d.trim().parse::<i64>().ok().filter(|v| *v >= 0))
                .collect::<Option<_>>()
                .ok_or_else(|| format!("--shape '{s}': dims must be whole numbers >= 0"))?;
            let names: Vec<String> = self.inputs.iter().map(|i| i.name.clone()).collect();
            let input = self
                .inputs
                .iter_mut()
                .find(|i| i.name == name)
                .ok_or_else(|| {
                    format!(
                        "--shape names '{name}', which is not an input of the model (inputs: {})",
                        names.join(", ")
                    )
                })?;
            input.dims = dims;
        }
        let shown = |dims: &[i64]| {
            dims.iter()
                .map(|d| {
                    if *d < 0 {
                        "N".to_string()
                    } else {
                        d.to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join(",")
        };
        for i in self.inputs.iter().filter(|_| require_fixed) {
            if i.dims.iter().any(|d| *d < 0) {
                // without the config the batch dim is only known with
                // --batched: a leading -1 is likely one
                let batched_hint = if !self.has_config
                    && self.max_batch_size == 0
                    && i.dims.first() == Some(&-1)
                {
                    format!(
                        "; if its first dim is the batch dim, pass --batched and give the rest, e.g. --batched --shape {}:{}",
                        i.name,
                        shown(&i.dims[1..])
                    )
                } else {
                    String::new()
                };
                return Err(format!(
                    "input '{}' has a variable dimension ({:?}); give its shape without the batch dimension with --shape {}:{}{batched_hint}",
                    i.name,
                    i.dims,
                    i.name,
                    shown(&i.dims)
                ));
            }
        }
        Ok(())
    }

    /// Checks the batch size against the model.
    pub fn check_batch(&self, batch: u64) -> Result<(), String> {
        if batch == 0 {
            return Err("batch size must be at least 1".into());
        }
        if batch > 1 && self.max_batch_size == 0 {
            return Err(format!(
                "model '{}' does not batch (max_batch_size 0{}); use -b 1",
                self.name,
                if self.has_config {
                    ""
                } else {
                    "; pass --batched if its first dim is a batch dim"
                }
            ));
        }
        if batch > self.max_batch_size && self.max_batch_size > 0 {
            return Err(format!(
                "batch size {batch} is above the model's max_batch_size {}",
                self.max_batch_size
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta() -> Value {
        json!({"name": "m", "platform": "python",
               "inputs": [{"name": "X", "datatype": "FP32", "shape": [-1, -1]},
                          {"name": "S", "datatype": "BYTES", "shape": [-1, 1]}],
               "outputs": [{"name": "Y", "datatype": "FP32", "shape": [-1, -1]}]})
    }

    #[test]
    fn config_gives_batch_and_dims() {
        let cfg = json!({"max_batch_size": "8", "input": [{"name": "X", "data_type": "TYPE_FP32", "dims": ["4"]}],
                         "sequence_batching": {}});
        let info = ModelInfo::new(&meta(), Some(&cfg), false).unwrap();
        assert_eq!(info.max_batch_size, 8);
        assert!(info.sequence);
        assert_eq!(info.inputs[0].dims, vec![4]);
        assert_eq!(info.inputs[1].dims, vec![1]);
        assert_eq!(info.inputs[1].datatype, DataType::Bytes);
        assert_eq!(info.outputs, vec!["Y"]);
    }

    #[test]
    fn metadata_only_and_shapes() {
        let mut info = ModelInfo::new(&meta(), None, false).unwrap();
        assert_eq!(info.inputs[0].dims, vec![-1, -1]);
        let err = info.apply_shapes(&[], true).unwrap_err();
        assert!(err.contains("--shape X:"), "{err}");
        assert!(err.contains("--batched --shape X:N"), "{err}");
        assert!(info.check_batch(2).is_err());
        let fixed_first =
            json!({"name": "m", "inputs": [{"name": "X", "datatype": "FP32", "shape": [3, -1]}]});
        let mut f = ModelInfo::new(&fixed_first, None, false).unwrap();
        let err = f.apply_shapes(&[], true).unwrap_err();
        assert!(!err.contains("--batched"), "{err}");
        let mut b = ModelInfo::new(&meta(), None, true).unwrap();
        b.apply_shapes(&["X:3".into()], true).unwrap();
        assert_eq!(b.inputs[0].dims, vec![3]);
        assert!(b.check_batch(4).is_ok());
        assert!(b
            .apply_shapes(&["Q:3".into()], true)
            .unwrap_err()
            .contains("not an input"));
        assert!(b.apply_shapes(&["X:a".into()], true).is_err());
    }
}
