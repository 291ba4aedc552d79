//! `tritonctl simulate` against what real Triton did with the same traces.
//!
//! `scripts/triton-fidelity` replays the traces of `testdata/fidelity/`
//! against Triton 2.51 (python-backend models that sleep a fixed time per
//! batch and log what they receive) and records the batches Triton formed
//! in `<trace>.triton.json`. This test runs `simulate` on the same traces
//! with the recorded latency and asserts the same batches: the request ids
//! of every batch in order, the instance (relabelled by first use on both
//! sides, since Triton numbers its instances differently at every start),
//! every slot row with its control values for sequence batching, and every
//! request's status, batch and slot. Start times must agree within 20 ms,
//! except where `cases.json` lists a timing difference of Triton's own.

use crate::common::{crate_root, tritonctl};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

const START_TOLERANCE_US: i64 = 20_000;

/// Maps instance numbers to their rank of first use over `batches`.
fn relabel(batches: &[Value]) -> BTreeMap<u64, u64> {
    let mut map = BTreeMap::new();
    for b in batches {
        let i = b["instance"].as_u64().expect("instance");
        let next = map.len() as u64;
        map.entry(i).or_insert(next);
    }
    map
}

/// Whether Triton's slot rows (the control values its model received,
/// and the slot where Triton's log shows it) match the rows simulate
/// executed: simulate lists every slot of a Direct instance, the executed
/// batch is its first `size` rows.
fn rows_match(t: &Value, s: &Value, scheduler: &str) -> bool {
    let trows = t["slots"].as_array().cloned().unwrap_or_default();
    let mut srows = s["slots"].as_array().cloned().unwrap_or_default();
    if scheduler == "direct" {
        if let Some(size) = s["size"].as_u64() {
            srows.truncate(size as usize);
        }
    }
    trows.len() == srows.len()
        && trows.iter().zip(&srows).all(|(tr, sr)| {
            tr.as_object()
                .unwrap()
                .iter()
                .all(|(k, v)| sr.get(k) == Some(v))
        })
}

fn compare(dir: &Path, case: &Value) -> Vec<String> {
    let trace = case["trace"].as_str().unwrap();
    let recorded: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join(format!("{trace}.triton.json"))).unwrap(),
    )
    .unwrap();
    let scheduler = recorded["scheduler"].as_str().unwrap_or("");
    let timing_exempt: BTreeSet<&str> = case["known"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|k| k["kind"] == "timing")
        .flat_map(|k| k["requests"].as_array().into_iter().flatten())
        .filter_map(Value::as_str)
        .collect();
    let out = tritonctl()
        .arg("simulate")
        .arg("--config")
        .arg(dir.join("models").join(case["model"].as_str().unwrap()))
        .arg("--trace")
        .arg(dir.join(format!("{trace}.jsonl")))
        .arg("--latency")
        .arg(recorded["latency_us"].as_u64().unwrap().to_string())
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{trace}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sim: Value = serde_json::from_slice(&out.stdout).unwrap();
    let (tb, sb) = (
        recorded["batches"].as_array().unwrap(),
        sim["batches"].as_array().unwrap(),
    );
    let mut diffs = Vec::new();
    if tb.len() != sb.len() {
        diffs.push(format!(
            "{trace}: Triton formed {} batches, simulate {}",
            tb.len(),
            sb.len()
        ));
    }
    let (tmap, smap) = (relabel(tb), relabel(sb));
    for (n, (t, s)) in tb.iter().zip(sb).enumerate() {
        let ti = tmap[&t["instance"].as_u64().unwrap()];
        let si = smap[&s["instance"].as_u64().unwrap()];
        if t["requests"] != s["requests"] || ti != si {
            diffs.push(format!(
                "{trace} batch {n}: Triton ran {} on instance #{ti}, simulate {} on #{si}",
                t["requests"], s["requests"]
            ));
            continue;
        }
        if !t["slots"].is_null() && !rows_match(t, s, scheduler) {
            diffs.push(format!(
                "{trace} batch {n}: slot rows differ: Triton {}, simulate {}",
                t["slots"], s["slots"]
            ));
        }
        let exempt = t["requests"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| timing_exempt.contains(r.as_str().unwrap_or("")));
        let dt = t["start_us"].as_i64().unwrap() - s["start_us"].as_i64().unwrap();
        if !exempt && dt.abs() > START_TOLERANCE_US {
            diffs.push(format!(
                "{trace} batch {n}: Triton started it at {} µs, simulate at {} µs",
                t["start_us"], s["start_us"]
            ));
        }
    }
    let sim_requests: BTreeMap<&str, &Value> = sim["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["id"].as_str().unwrap(), r))
        .collect();
    for t in recorded["requests"].as_array().unwrap() {
        let id = t["id"].as_str().unwrap();
        let Some(s) = sim_requests.get(id) else {
            diffs.push(format!("{trace}: simulate has no request {id}"));
            continue;
        };
        if t["status"] != s["status"] {
            diffs.push(format!(
                "{trace} request {id}: Triton {}, simulate {}",
                t["status"], s["status"]
            ));
        } else if t["status"] == "ok" && t["batch"] != s["batch"] {
            diffs.push(format!(
                "{trace} request {id}: Triton batch {}, simulate batch {}",
                t["batch"], s["batch"]
            ));
        } else if t["status"] == "ok" && !t["slot"].is_null() && t["slot"] != s["slot"] {
            diffs.push(format!(
                "{trace} request {id}: Triton slot {}, simulate slot {}",
                t["slot"], s["slot"]
            ));
        } else if t["status"] == "rejected" && t["reason"] != s["reason"] {
            diffs.push(format!(
                "{trace} request {id}: Triton said {}, simulate {}",
                t["reason"], s["reason"]
            ));
        }
    }
    diffs
}

#[test]
fn simulate_forms_the_batches_real_triton_formed() {
    let dir = crate_root().join("testdata").join("fidelity");
    let cases: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("cases.json")).unwrap()).unwrap();
    let cases = cases["cases"].as_array().unwrap();
    assert!(
        cases.len() >= 3,
        "dynamic, Direct and Oldest traces at least"
    );
    let mut schedulers = BTreeSet::new();
    let mut diffs = Vec::new();
    for case in cases {
        let trace = case["trace"].as_str().unwrap();
        let recorded: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join(format!("{trace}.triton.json"))).unwrap(),
        )
        .unwrap();
        schedulers.insert(recorded["scheduler"].as_str().unwrap().to_string());
        diffs.extend(compare(&dir, case));
    }
    for s in ["dynamic", "direct", "oldest"] {
        assert!(schedulers.contains(s), "no recorded {s} trace");
    }
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}
