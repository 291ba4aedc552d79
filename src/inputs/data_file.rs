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

/// One entry of a document read by [`stream`].
#[derive(Debug)]
pub struct StreamEntry<'a> {
    /// `data[3]` or `data[1][0]`.
    pub path: String,
    /// Input name -> tensor value.
    pub tensors: &'a Map<String, Value>,
    /// `data` is a list of sequences.
    pub sequences: bool,
    /// 0-based sequence (always 0 for a flat `data`).
    pub sequence: usize,
    /// 0-based step within the sequence (the position in a flat `data`).
    pub step: usize,
    /// How many steps the sequence has; `None` for a flat `data`, whose
    /// length is known only at its end.
    pub steps: Option<usize>,
}

/// What a document read by [`stream`] held besides its entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Streamed {
    pub sequences: bool,
    /// Top-level members other than `data`, sorted as [`read`] gives them.
    pub ignored: Vec<String>,
    /// How many entries there were.
    pub entries: usize,
}

/// Why [`stream`] stopped.
#[derive(Debug)]
pub enum StreamError<E> {
    /// The text is not JSON (or has text after the document).
    Json(serde_json::Error),
    /// The document is not perf_analyzer's input data.
    Data(DataError),
    /// The callback stopped the reading.
    Stopped(E),
}

/// Reads the JSON object `text` entry by entry, handing each to `each` as
/// it is read: only one entry (one sequence of steps) is held as a
/// [`Value`] at a time, so that memory does not grow with a parsed copy of
/// the whole document (memory in proportion to the input: docs/hostile.md). `Ok(None)` when the object has no `data` member. The
/// checks and messages are those of [`read`], reported as they are met.
pub fn stream<E>(
    text: &str,
    each: &mut dyn FnMut(&StreamEntry) -> Result<(), E>,
) -> Result<Option<Streamed>, StreamError<E>> {
    use serde::de::DeserializeSeed;
    let mut st = StreamState {
        each,
        fail: None,
        sequences: None,
        saw_data: false,
        ignored: std::collections::BTreeSet::new(),
        entries: 0,
    };
    let mut de = serde_json::Deserializer::from_str(text);
    let read = DocSeed(&mut st).deserialize(&mut de);
    if let Some(fail) = st.fail.take() {
        return Err(fail);
    }
    read.map_err(StreamError::Json)?;
    if !st.saw_data {
        return Ok(None);
    }
    de.end().map_err(StreamError::Json)?;
    Ok(Some(Streamed {
        sequences: st.sequences.unwrap_or(false),
        ignored: st.ignored.into_iter().collect(),
        entries: st.entries,
    }))
}

struct StreamState<'f, E> {
    each: &'f mut dyn FnMut(&StreamEntry) -> Result<(), E>,
    /// Set when a check or the callback stops the reading (serde then
    /// only carries a placeholder error).
    fail: Option<StreamError<E>>,
    sequences: Option<bool>,
    saw_data: bool,
    /// Other top-level members, once each and sorted (a set: a document
    /// may hold any number of them).
    ignored: std::collections::BTreeSet<String>,
    entries: usize,
}

impl<E> StreamState<'_, E> {
    fn stop<X: serde::de::Error>(&mut self, fail: StreamError<E>) -> X {
        self.fail = Some(fail);
        X::custom("stopped")
    }

    fn data_error<X: serde::de::Error>(&mut self, path: String, message: String) -> X {
        self.stop(StreamError::Data(DataError {
            path: Some(path),
            message,
        }))
    }

    fn call<X: serde::de::Error>(&mut self, entry: &StreamEntry) -> Result<(), X> {
        self.entries += 1;
        match (self.each)(entry) {
            Ok(()) => Ok(()),
            Err(e) => Err(self.stop(StreamError::Stopped(e))),
        }
    }

    /// `data[i]`, read whole.
    fn item<X: serde::de::Error>(&mut self, i: usize, item: Value) -> Result<(), X> {
        let sequences = *self.sequences.get_or_insert(item.is_array());
        match (sequences, &item) {
            (false, Value::Object(tensors)) => self.call(&StreamEntry {
                path: format!("data[{i}]"),
                tensors,
                sequences,
                sequence: 0,
                step: i,
                steps: None,
            }),
            (true, Value::Array(steps)) => {
                if steps.is_empty() {
                    return Err(
                        self.data_error(format!("data[{i}]"), "is an empty sequence".into())
                    );
                }
                for (k, step) in steps.iter().enumerate() {
                    let path = format!("data[{i}][{k}]");
                    let Value::Object(tensors) = step else {
                        return Err(self.data_error(
                            path,
                            format!("expected a request (an object), found {}", kind(step)),
                        ));
                    };
                    self.call(&StreamEntry {
                        path,
                        tensors,
                        sequences,
                        sequence: i,
                        step: k,
                        steps: Some(steps.len()),
                    })?;
                }
                Ok(())
            }
            _ => Err(self.data_error(
                format!("data[{i}]"),
                format!(
                    "expected {} like data[0], found {}; entries are either all requests \
                     (objects) or all sequences (arrays of requests)",
                    if sequences {
                        "an array of steps"
                    } else {
                        "an object"
                    },
                    kind(&item)
                ),
            )),
        }
    }

    fn not_array<X: serde::de::Error>(&mut self, found: Value) -> Result<(), X> {
        Err(self.data_error(
            "data".into(),
            format!("expected an array of requests, found {}", kind(&found)),
        ))
    }
}

/// The top-level object.
struct DocSeed<'s, 'f, E>(&'s mut StreamState<'f, E>);

impl<'de, E> serde::de::DeserializeSeed<'de> for DocSeed<'_, '_, E> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, E> serde::de::Visitor<'de> for DocSeed<'_, '_, E> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let st = self.0;
        while let Some(key) = map.next_key::<String>()? {
            if key == "data" {
                if st.saw_data {
                    return Err(st.data_error(
                        "data".into(),
                        "the member \"data\" appears more than once".into(),
                    ));
                }
                st.saw_data = true;
                map.next_value_seed(DataSeed(&mut *st))?;
            } else {
                st.ignored.insert(key);
                map.next_value::<serde::de::IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

/// The `data` member.
struct DataSeed<'s, 'f, E>(&'s mut StreamState<'f, E>);

impl<'de, E> serde::de::DeserializeSeed<'de> for DataSeed<'_, '_, E> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, E> serde::de::Visitor<'de> for DataSeed<'_, '_, E> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of requests")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0;
        while let Some(item) = seq.next_element::<Value>()? {
            self.0.item(i, item)?;
            i += 1;
        }
        if i == 0 {
            return Err(self.0.data_error("data".into(), "holds no requests".into()));
        }
        Ok(())
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map
            .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
            .is_some()
        {}
        self.0.not_array(Value::Object(Map::new()))
    }

    fn visit_bool<X: serde::de::Error>(self, v: bool) -> Result<(), X> {
        self.0.not_array(Value::Bool(v))
    }

    fn visit_i64<X: serde::de::Error>(self, v: i64) -> Result<(), X> {
        self.0.not_array(Value::from(v))
    }

    fn visit_u64<X: serde::de::Error>(self, v: u64) -> Result<(), X> {
        self.0.not_array(Value::from(v))
    }

    fn visit_f64<X: serde::de::Error>(self, v: f64) -> Result<(), X> {
        self.0.not_array(Value::from(v))
    }

    fn visit_str<X: serde::de::Error>(self, v: &str) -> Result<(), X> {
        self.0.not_array(Value::from(v))
    }

    fn visit_unit<X: serde::de::Error>(self) -> Result<(), X> {
        self.0.not_array(Value::Null)
    }
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

    fn streamed(text: &str) -> (Vec<String>, Result<Option<Streamed>, StreamError<()>>) {
        let mut paths = Vec::new();
        let r = stream(text, &mut |e: &StreamEntry| {
            paths.push(e.path.clone());
            Ok(())
        });
        (paths, r)
    }

    #[test]
    fn stream_hands_out_entries_before_the_document_ends() {
        // The entries before a syntax error are handed out already: the
        // document is read entry by entry, not parsed whole first.
        let (paths, r) = streamed(r#"{"data": [{"X": [1]}, {"X": [2]}, {"X": [3"#);
        assert_eq!(paths, ["data[0]", "data[1]"]);
        assert!(matches!(r, Err(StreamError::Json(_))), "{r:?}");
        let (paths, r) =
            streamed(r#"{"b": 1, "data": [[{"X": [1]}, {"X": [2]}], [{"X": [3]}]], "a": 2}"#);
        assert_eq!(paths, ["data[0][0]", "data[0][1]", "data[1][0]"]);
        let s = r.unwrap().unwrap();
        assert!(s.sequences);
        assert_eq!(s.entries, 3);
        assert_eq!(s.ignored, ["a", "b"]);
        let (paths, r) = streamed(r#"{"inputs": {"X": [1]}}"#);
        assert!(paths.is_empty());
        assert!(matches!(r, Ok(None)), "{r:?}");
    }

    #[test]
    fn stream_reports_what_read_reports() {
        let cases = [
            r#"{"data": {}}"#,
            r#"{"data": 3}"#,
            r#"{"data": []}"#,
            r#"{"data": [{}, []]}"#,
            r#"{"data": [[{}], {}]}"#,
            r#"{"data": [[]]}"#,
            r#"{"data": [[{}, 3]]}"#,
        ];
        for text in cases {
            let want = read(&doc(text)).unwrap_err().to_string();
            match streamed(text).1 {
                Err(StreamError::Data(e)) => assert_eq!(e.to_string(), want),
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn stream_stops_when_the_callback_does() {
        let mut seen = 0;
        let r = stream(
            r#"{"data": [{"X": [1]}, {"X": [2]}]}"#,
            &mut |_: &StreamEntry| {
                seen += 1;
                Err("no")
            },
        );
        assert!(matches!(r, Err(StreamError::Stopped("no"))), "{r:?}");
        assert_eq!(seen, 1);
    }
}
