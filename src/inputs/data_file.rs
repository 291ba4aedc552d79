//! perf_analyzer's input-data JSON, read alike by `run --input` and
//! `perf --input-data`: `{"data": [ENTRY, ...]}`, or for sequences
//! `{"data": [[ENTRY, ...], ...]}` (one array of steps per sequence). An
//! entry maps input names to tensor values (see [`super::json`]).

use super::kind;
use serde_json::{Map, Value};
use std::fmt;

/// One entry (one request) and where it is in the file.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry<'a> {
    /// `data[3]` or `data[1][0]`.
    pub path: String,
    /// Input name -> tensor value.
    pub tensors: &'a Map<String, Value>,
}

/// The entries of a document.
#[derive(Debug, Clone, PartialEq)]
pub struct Data<'a> {
    /// `data` is a list of sequences (arrays of steps).
    pub sequences: bool,
    /// The sequences in order, each with its steps; a flat `data` is one.
    pub streams: Vec<Vec<Entry<'a>>>,
    /// Top-level members other than `data`, which perf_analyzer reads for
    /// other purposes (`validation_data`) or not at all.
    pub ignored: Vec<&'a str>,
}

impl Data<'_> {
    /// How many entries there are in all.
    pub fn len(&self) -> usize {
        self.streams.iter().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Why the document is not perf_analyzer's input data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataError {
    /// The JSON path of the offending value (`data[1]`), if one is.
    pub path: Option<String>,
    pub message: String,
}

impl fmt::Display for DataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.path {
            Some(p) => write!(f, "at {p}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for DataError {}

/// Reads the structure of a parsed document (the tensors are converted by
/// the caller, which knows the model).
pub fn read(doc: &Value) -> Result<Data<'_>, DataError> {
    let at = |path: String, message: String| DataError {
        path: Some(path),
        message,
    };
    let Value::Object(top) = doc else {
        return Err(DataError {
            path: None,
            message: format!(
                "expected perf_analyzer's {{\"data\": [...]}}, found {}",
                kind(doc)
            ),
        });
    };
    let ignored = top
        .keys()
        .map(String::as_str)
        .filter(|k| *k != "data")
        .collect();
    let data = match top.get("data") {
        Some(Value::Array(a)) => a,
        Some(v) => {
            return Err(at(
                "data".into(),
                format!("expected an array of requests, found {}", kind(v)),
            ))
        }
        None => {
            return Err(DataError {
                path: None,
                message: "missing member \"data\"".into(),
            })
        }
    };
    if data.is_empty() {
        return Err(at("data".into(), "holds no requests".into()));
    }
    let sequences = data[0].is_array();
    for (i, e) in data.iter().enumerate() {
        let ok = if sequences {
            e.is_array()
        } else {
            e.is_object()
        };
        if !ok {
            return Err(at(
                format!("data[{i}]"),
                format!(
                    "expected {} like data[0], found {}; entries are either all requests \
                     (objects) or all sequences (arrays of requests)",
                    if sequences {
                        "an array of steps"
                    } else {
                        "an object"
                    },
                    kind(e)
                ),
            ));
        }
    }
    let mut streams = Vec::new();
    if sequences {
        for (s, stream) in data.iter().enumerate() {
            let items = stream.as_array().map(Vec::as_slice).unwrap_or_default();
            if items.is_empty() {
                return Err(at(format!("data[{s}]"), "is an empty sequence".into()));
            }
            let mut steps = Vec::with_capacity(items.len());
            for (k, item) in items.iter().enumerate() {
                let path = format!("data[{s}][{k}]");
                let Value::Object(tensors) = item else {
                    return Err(at(
                        path,
                        format!("expected a request (an object), found {}", kind(item)),
                    ));
                };
                steps.push(Entry { path, tensors });
            }
            streams.push(steps);
        }
    } else {
        let steps = data
            .iter()
            .enumerate()
            .filter_map(|(k, item)| {
                item.as_object().map(|tensors| Entry {
                    path: format!("data[{k}]"),
                    tensors,
                })
            })
            .collect();
        streams.push(steps);
    }
    Ok(Data {
        sequences,
        streams,
        ignored,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> Value {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn flat_data_is_one_stream() {
        let d = doc(r#"{"data": [{"X": [1]}, {"X": [2]}], "validation_data": []}"#);
        let data = read(&d).unwrap();
        assert!(!data.sequences);
        assert_eq!(data.len(), 2);
        assert_eq!(data.streams.len(), 1);
        assert_eq!(data.streams[0][1].path, "data[1]");
        assert_eq!(data.ignored, ["validation_data"]);
    }

    #[test]
    fn sequences_are_streams_of_steps() {
        let d = doc(r#"{"data": [[{"X": [1]}, {"X": [2]}], [{"X": [3]}]]}"#);
        let data = read(&d).unwrap();
        assert!(data.sequences);
        let paths: Vec<Vec<&str>> = data
            .streams
            .iter()
            .map(|s| s.iter().map(|e| e.path.as_str()).collect())
            .collect();
        assert_eq!(
            paths,
            [vec!["data[0][0]", "data[0][1]"], vec!["data[1][0]"]]
        );
    }

    #[test]
    fn errors_name_the_json_path() {
        let cases = [
            (
                r#"[1]"#,
                "expected perf_analyzer's {\"data\": [...]}, found an array",
            ),
            (r#"{"inputs": []}"#, "missing member \"data\""),
            (r#"{"data": {}}"#, "at data: expected an array of requests"),
            (r#"{"data": []}"#, "at data: holds no requests"),
            (
                r#"{"data": [{}, []]}"#,
                "at data[1]: expected an object like data[0]",
            ),
            (r#"{"data": [[]]}"#, "at data[0]: is an empty sequence"),
            (
                r#"{"data": [[{}, 3]]}"#,
                "at data[0][1]: expected a request",
            ),
        ];
        for (text, want) in cases {
            let e = read(&doc(text)).unwrap_err().to_string();
            assert!(e.starts_with(want), "{e}");
        }
    }
}
