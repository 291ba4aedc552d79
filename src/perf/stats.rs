//! Triton's statistics extension: cumulative counters per model, read
//! before and after a level; the difference gives the server's share of the
//! latency (queue, compute input/infer/output).

use super::model::lenient_int;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// `{count, ns}` pairs and counters summed over the model's versions.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Snapshot {
    pub inference_count: i64,
    pub execution_count: i64,
    pub success: (i64, i64),
    pub fail: (i64, i64),
    pub queue: (i64, i64),
    pub compute_input: (i64, i64),
    pub compute_infer: (i64, i64),
    pub compute_output: (i64, i64),
}

fn duration(v: &Value) -> (i64, i64) {
    (
        lenient_int(&v["count"]).unwrap_or(0),
        lenient_int(&v["ns"]).unwrap_or(0),
    )
}

fn add(a: (i64, i64), b: (i64, i64)) -> (i64, i64) {
    (a.0 + b.0, a.1 + b.1)
}

impl Snapshot {
    /// The counters of two servers added up.
    pub fn plus(&self, o: &Snapshot) -> Snapshot {
        Snapshot {
            inference_count: self.inference_count + o.inference_count,
            execution_count: self.execution_count + o.execution_count,
            success: add(self.success, o.success),
            fail: add(self.fail, o.fail),
            queue: add(self.queue, o.queue),
            compute_input: add(self.compute_input, o.compute_input),
            compute_infer: add(self.compute_infer, o.compute_infer),
            compute_output: add(self.compute_output, o.compute_output),
        }
    }

    /// From a `/v2/models/M/stats` answer; `None` when it has no entry for
    /// the model.
    pub fn parse(doc: &Value, model: &str) -> Option<Snapshot> {
        let mut s = Snapshot::default();
        let mut found = false;
        for m in doc["model_stats"].as_array()? {
            if m["name"].as_str() != Some(model) {
                continue;
            }
            found = true;
            let i = &m["inference_stats"];
            s.inference_count += lenient_int(&m["inference_count"]).unwrap_or(0);
            s.execution_count += lenient_int(&m["execution_count"]).unwrap_or(0);
            s.success = add(s.success, duration(&i["success"]));
            s.fail = add(s.fail, duration(&i["fail"]));
            s.queue = add(s.queue, duration(&i["queue"]));
            s.compute_input = add(s.compute_input, duration(&i["compute_input"]));
            s.compute_infer = add(s.compute_infer, duration(&i["compute_infer"]));
            s.compute_output = add(s.compute_output, duration(&i["compute_output"]));
        }
        found.then_some(s)
    }
}

/// The server's view of one level (averages in microseconds per request).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ServerStats {
    /// Successful requests the server counted.
    pub requests: i64,
    /// Inferences (batch elements).
    pub inference_count: i64,
    /// Model executions (fewer than inferences when batching).
    pub execution_count: i64,
    pub queue_us: f64,
    pub compute_input_us: f64,
    pub compute_infer_us: f64,
    pub compute_output_us: f64,
    /// Request time not in queue or compute (parsing, copying, ...).
    pub overhead_us: f64,
    /// Ensembles: the same per composing model (an ensemble's own
    /// statistics leave out its steps' queue time, see
    /// docs/spec/v2-protocol.md section 8). Absent for other models.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub composing_models: Option<Vec<ComposingStats>>,
}

/// The server's view of one composing model of an ensemble over a level.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ComposingStats {
    pub model: String,
    /// The version the ensemble's step names; `None` when the step takes
    /// the latest (then the versions the statistics listed at the start,
    /// comma-separated, if any).
    pub version: Option<String>,
    #[serde(flatten)]
    pub stats: ServerStats,
}

/// The versions a `/v2/models/M/stats` answer lists for `model`, in order.
pub fn versions(doc: &Value, model: &str) -> Vec<String> {
    doc["model_stats"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|m| m["name"].as_str() == Some(model))
                .filter_map(|m| m["version"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn avg_us(before: (i64, i64), after: (i64, i64)) -> Option<f64> {
    let dc = after.0 - before.0;
    let dn = after.1 - before.1;
    if dc < 0 || dn < 0 {
        return None;
    }
    Some(if dc == 0 {
        0.0
    } else {
        dn as f64 / dc as f64 / 1000.0
    })
}

/// `after - before`; `None` when a counter went backwards (model reloaded)
/// or nothing was counted.
pub fn diff(before: &Snapshot, after: &Snapshot) -> Option<ServerStats> {
    diff_counts(before, after).filter(|s| s.requests > 0)
}

/// `after - before` (averages 0 when nothing was counted); `None` when a
/// counter went backwards.
pub fn diff_counts(before: &Snapshot, after: &Snapshot) -> Option<ServerStats> {
    let requests = after.success.0 - before.success.0;
    let inference_count = after.inference_count - before.inference_count;
    let execution_count = after.execution_count - before.execution_count;
    if requests < 0 || inference_count < 0 || execution_count < 0 {
        return None;
    }
    let queue_us = avg_us(before.queue, after.queue)?;
    let compute_input_us = avg_us(before.compute_input, after.compute_input)?;
    let compute_infer_us = avg_us(before.compute_infer, after.compute_infer)?;
    let compute_output_us = avg_us(before.compute_output, after.compute_output)?;
    let success_us = avg_us(before.success, after.success)?;
    Some(ServerStats {
        requests,
        inference_count,
        execution_count,
        queue_us,
        compute_input_us,
        compute_infer_us,
        compute_output_us,
        overhead_us: (success_us
            - queue_us
            - compute_input_us
            - compute_infer_us
            - compute_output_us)
            .max(0.0),
        composing_models: None,
    })
}

/// One batch size's executions in the statistics' `batch_stats`: how many,
/// and the compute time (input + infer + output) they took together.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BatchCompute {
    /// Executions of this batch size (`compute_infer.count`).
    pub executions: i64,
    /// `compute_input.ns + compute_infer.ns + compute_output.ns`.
    pub compute_ns: i64,
}

/// The `batch_stats` of `model` in a `/v2/models/M/stats` answer, by batch
/// size, summed over the versions listed (docs/spec/v2-protocol.md section
/// 8); `None` when the answer has no entry for the model. Counters from
/// the server are added without overflow (saturating) and a negative or
/// missing batch size is skipped.
pub fn batch_compute(doc: &Value, model: &str) -> Option<BTreeMap<u64, BatchCompute>> {
    let mut out: BTreeMap<u64, BatchCompute> = BTreeMap::new();
    let mut found = false;
    for m in doc["model_stats"].as_array()? {
        if m["name"].as_str() != Some(model) {
            continue;
        }
        found = true;
        for b in m["batch_stats"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
        {
            let Some(size) = lenient_int(&b["batch_size"]).and_then(|s| u64::try_from(s).ok())
            else {
                continue;
            };
            let ns = ["compute_input", "compute_infer", "compute_output"]
                .iter()
                .map(|k| duration(&b[*k]).1)
                .fold(0i64, i64::saturating_add);
            let e = out.entry(size).or_default();
            e.executions = e.executions.saturating_add(duration(&b["compute_infer"]).0);
            e.compute_ns = e.compute_ns.saturating_add(ns);
        }
    }
    found.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(n: i64, ns: i64) -> Value {
        let d = json!({"count": n, "ns": ns});
        json!({"model_stats": [
            {"name": "other", "inference_count": 99},
            {"name": "m", "version": "1", "inference_count": n * 2, "execution_count": n,
             "inference_stats": {"success": {"count": n, "ns": ns * 5}, "queue": d, "compute_input": d,
                                 "compute_infer": {"count": n.to_string(), "ns": (ns * 2).to_string()},
                                 "compute_output": d}}]})
    }

    #[test]
    fn diffs() {
        let a = Snapshot::parse(&doc(10, 10_000), "m").unwrap();
        let b = Snapshot::parse(&doc(30, 50_000), "m").unwrap();
        let s = diff(&a, &b).unwrap();
        assert_eq!(s.requests, 20);
        assert_eq!(s.inference_count, 40);
        // queue: 40,000 ns over 20 = 2 us; infer 80,000 / 20 = 4 us
        assert_eq!(s.queue_us, 2.0);
        assert_eq!(s.compute_infer_us, 4.0);
        // success 200,000 / 20 = 10 us; 10 - 2 - 2 - 4 - 2 = 0
        assert_eq!(s.overhead_us, 0.0);
        assert!(diff(&b, &a).is_none());
        assert!(Snapshot::parse(&doc(1, 1), "x").is_none());
        // nothing counted: no stats for the model itself, zeros for a
        // composing model
        assert!(diff(&a, &a).is_none());
        let idle = diff_counts(&a, &a).unwrap();
        assert_eq!(
            (idle.requests, idle.queue_us, idle.overhead_us),
            (0, 0.0, 0.0)
        );
        assert!(diff_counts(&b, &a).is_none());
        assert_eq!(versions(&doc(1, 1), "m"), vec!["1"]);
        assert!(versions(&doc(1, 1), "x").is_empty());
    }

    #[test]
    fn batch_stats_by_size() {
        let d = |n: i64, ns: i64| json!({"count": n, "ns": ns});
        let doc = json!({"model_stats": [
            {"name": "m", "version": "1", "batch_stats": [
                {"batch_size": 1, "compute_input": d(4, 400), "compute_infer": d(4, 8000),
                 "compute_output": d(4, 600)},
                {"batch_size": "8", "compute_input": d(2, 100), "compute_infer": {"count": 2, "ns": "900"},
                 "compute_output": d(2, 0)},
                {"batch_size": -1, "compute_infer": d(9, 9)}]},
            {"name": "m", "version": "2", "batch_stats": [
                {"batch_size": 1, "compute_input": d(1, 0), "compute_infer": d(1, 1000),
                 "compute_output": d(1, 0)}]},
            {"name": "other", "batch_stats": [{"batch_size": 2, "compute_infer": d(1, 1)}]}]});
        let b = batch_compute(&doc, "m").unwrap();
        // size 1: 4 + 1 executions, 400 + 8000 + 600 + 1000 ns; size 8 as a
        // string, its infer ns as a string; the negative size is skipped
        assert_eq!(
            b.into_iter().collect::<Vec<_>>(),
            vec![
                (
                    1,
                    BatchCompute {
                        executions: 5,
                        compute_ns: 10_000
                    }
                ),
                (
                    8,
                    BatchCompute {
                        executions: 2,
                        compute_ns: 1000
                    }
                ),
            ]
        );
        assert!(batch_compute(&doc, "x").is_none());
        // an entry without batch_stats: known, nothing executed
        let empty = json!({"model_stats": [{"name": "m"}]});
        assert!(batch_compute(&empty, "m").unwrap().is_empty());
        let huge = json!({"model_stats": [{"name": "m", "batch_stats": [
            {"batch_size": 1, "compute_input": d(1, i64::MAX), "compute_infer": d(1, i64::MAX)}]}]});
        assert_eq!(batch_compute(&huge, "m").unwrap()[&1].compute_ns, i64::MAX);
    }
}
