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
//! Two more tests keep the traces replayable on a slow machine: the batches
//! must not depend on Triton's per-batch overhead (0 to 30 ms), and the
//! Oldest trace must avoid the instants where Triton races.

use crate::common::{crate_root, require_ort, tritonctl, tritonctl_path};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

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

/// `tritonctl simulate --format json` on a case's trace and model.
fn simulate(dir: &Path, case: &Value, latency_us: u64) -> Value {
    let trace = case["trace"].as_str().unwrap();
    let out = tritonctl()
        .arg("simulate")
        .arg("--config")
        .arg(dir.join("models").join(case["model"].as_str().unwrap()))
        .arg("--trace")
        .arg(dir.join(format!("{trace}.jsonl")))
        .arg("--latency")
        .arg(latency_us.to_string())
        .args(["--format", "json"])
        .run();
    assert!(out.success(), "{trace}: {}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap()
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
    let sim = simulate(dir, case, recorded["latency_us"].as_u64().unwrap());
    let mut diffs = Vec::new();
    if scheduler == "ensemble" {
        // Model by model: each composing model's batches as Triton's log
        // of that model shows them, against simulate's of that model. The
        // steps form a chain, listed in order.
        let mut previous: Option<(Vec<Value>, Vec<Value>)> = None;
        for model in case["steps"]
            .as_array()
            .expect("an ensemble case lists its steps")
        {
            let model = model.as_str().unwrap();
            let kind = &recorded["schedulers"][model];
            let of = |doc: &Value| -> Vec<Value> {
                doc["batches"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|b| b["model"] == model)
                    .cloned()
                    .collect()
            };
            let (tb, sb) = (of(&recorded), of(&sim));
            assert!(!tb.is_empty(), "{trace}: no recorded batch of {model}");
            let empty: &[Value] = &[];
            let up = previous
                .as_ref()
                .map_or((empty, empty), |(t, s)| (t.as_slice(), s.as_slice()));
            diffs.extend(compare_batches(
                &format!("{trace}/{model}"),
                &tb,
                &sb,
                kind.as_str().unwrap(),
                &timing_exempt,
                Some(up),
            ));
            previous = Some((tb, sb));
        }
    } else {
        diffs.extend(compare_batches(
            trace,
            recorded["batches"].as_array().unwrap(),
            sim["batches"].as_array().unwrap(),
            scheduler,
            &timing_exempt,
            None,
        ));
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
        } else if t["status"] == "ok" && scheduler != "ensemble" && t["batch"] != s["batch"] {
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

/// Triton's batches `tb` against simulate's `sb` (of one model): the same
/// requests in order on the same instance (relabelled by first use), the
/// same slot rows, starts within the tolerance unless `exempt`.
fn compare_batches(
    trace: &str,
    tb: &[Value],
    sb: &[Value],
    scheduler: &str,
    timing_exempt: &BTreeSet<&str>,
    chain: Option<(&[Value], &[Value])>,
) -> Vec<String> {
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
        let start = |b: &Value| b["start_us"].as_i64().unwrap();
        let mut dt = start(t) - start(s);
        if let Some((up_t, up_s)) = chain {
            // An ensemble's batch that simulate starts the moment the batch
            // before it on its instance, or the previous step's batch
            // holding its first request, ends is timed from that batch
            // (Triton's per-batch overhead adds up along the chain).
            let holding = |bs: &[Value], b: &Value| -> Option<Value> {
                let first = &b["requests"][0];
                bs.iter()
                    .find(|x| x["requests"].as_array().unwrap().contains(first))
                    .cloned()
            };
            let same = (0..n).rev().find(|&k| sb[k]["instance"] == s["instance"]);
            let before = same
                .filter(|&k| sb[k]["end_us"] == s["start_us"])
                .map(|k| (tb[k].clone(), sb[k].clone()))
                .or_else(|| {
                    let (tp, sp) = (holding(up_t, t)?, holding(up_s, s)?);
                    (sp["end_us"] == s["start_us"]).then_some((tp, sp))
                });
            if let Some((tp, sp)) = before {
                dt = (start(t) - start(&tp)) - (start(s) - start(&sp));
            }
        }
        if !exempt && dt.abs() > START_TOLERANCE_US {
            diffs.push(format!(
                "{trace} batch {n}: Triton started it at {} µs, simulate at {} µs",
                t["start_us"], s["start_us"]
            ));
        }
    }
    diffs
}

/// `testdata/fidelity/` and its `cases.json`.
fn fidelity_cases() -> (PathBuf, Value) {
    let dir = crate_root().join("testdata").join("fidelity");
    let cases =
        serde_json::from_str(&std::fs::read_to_string(dir.join("cases.json")).unwrap()).unwrap();
    (dir, cases)
}

#[test]
fn simulate_forms_the_batches_real_triton_formed() {
    let (dir, cases) = fidelity_cases();
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
    for s in ["dynamic", "direct", "oldest", "ensemble"] {
        assert!(schedulers.contains(s), "no recorded {s} trace");
    }
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}

/// What a run of simulate decided, times left out: every batch's requests,
/// instance (relabelled by first use) and slot rows, every request's status.
fn decisions(sim: &Value) -> Vec<String> {
    let batches = sim["batches"].as_array().unwrap();
    // Instances relabelled per model (an ensemble lists several).
    let mut maps: BTreeMap<String, BTreeMap<u64, u64>> = BTreeMap::new();
    let mut out: Vec<String> = batches
        .iter()
        .map(|b| {
            let model = b["model"].as_str().unwrap_or("").to_string();
            let map = maps.entry(model.clone()).or_default();
            let next = map.len() as u64;
            let label = *map.entry(b["instance"].as_u64().unwrap()).or_insert(next);
            format!("{model}#{label} {} {}", b["requests"], b["slots"])
        })
        .collect();
    out.extend(
        sim["requests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| format!("{} {} {}", r["id"], r["status"], r["reason"])),
    );
    out
}

/// The traces are replayed on machines where Triton needs a varying time
/// between two batches of an instance (short on a quiet machine, much
/// longer on a loaded one), and its delays add up along a chain of batches. Every arrival and timer of the traces is placed so
/// that the batches do not depend on it: simulate must decide the same for
/// every per-batch overhead from 0 to 30 ms (scripts/fidelity/fidelity.py,
/// DESIGN_OVERHEAD_US). A trace edit that puts an arrival near a batch
/// boundary fails here, before it makes the real-Triton replay flaky.
#[test]
fn the_traces_form_the_same_batches_whatever_the_overhead_up_to_30_ms() {
    let (dir, cases) = fidelity_cases();
    let sleep_us = cases["sleep_ms"].as_u64().unwrap() * 1000;
    let mut problems = Vec::new();
    for case in cases["cases"].as_array().unwrap() {
        let trace = case["trace"].as_str().unwrap();
        let base = decisions(&simulate(&dir, case, sleep_us));
        for overhead_ms in 1..=30 {
            let other = decisions(&simulate(&dir, case, sleep_us + overhead_ms * 1000));
            if other != base {
                let first = base
                    .iter()
                    .zip(&other)
                    .find(|(a, b)| a != b)
                    .map(|(a, b)| format!("{a} becomes {b}"))
                    .unwrap_or_else(|| "the number of batches changes".into());
                problems.push(format!("{trace}: at {overhead_ms} ms overhead {first}"));
                break;
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Oldest races when a request is released by its predecessor's completion
/// while others wait, or when a new sequence starts while an END request
/// executes (scripts/fidelity/README.md): the `oldest` trace must avoid both
/// instants with no overhead and with 30 ms per batch alike.
#[test]
fn the_oldest_trace_avoids_the_instants_where_triton_races() {
    let (dir, cases) = fidelity_cases();
    let sleep_us = cases["sleep_ms"].as_u64().unwrap() * 1000;
    let mut checked = 0;
    let mut problems = Vec::new();
    for case in cases["cases"].as_array().unwrap() {
        let trace = case["trace"].as_str().unwrap();
        let text = std::fs::read_to_string(
            dir.join("models")
                .join(case["model"].as_str().unwrap())
                .join("config.pbtxt"),
        )
        .unwrap();
        if !text.contains("oldest") {
            continue;
        }
        for overhead_us in [0, 30_000] {
            checked += 1;
            let sim = simulate(&dir, case, sleep_us + overhead_us);
            let requests = sim["requests"].as_array().unwrap();
            let at = |r: &Value, k: &str| r[k].as_u64().unwrap();
            let mut last: BTreeMap<u64, &Value> = BTreeMap::new();
            for r in requests {
                let seq = at(r, "sequence_id");
                if let Some(q) = last.insert(seq, r) {
                    if at(r, "arrival_us") <= at(q, "end_us") {
                        problems.push(format!(
                            "{trace} (+{overhead_us} µs): {} arrives before {} completes",
                            r["id"], q["id"]
                        ));
                    }
                }
            }
            let ends: Vec<(u64, u64)> = requests
                .iter()
                .filter(|r| {
                    sim["batches"][at(r, "batch") as usize]["slots"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|s| s["request"] == r["id"] && s["end"] == true)
                })
                .map(|r| (at(r, "start_us"), at(r, "end_us")))
                .collect();
            let starts = sim["batches"].as_array().unwrap().iter().flat_map(|b| {
                b["slots"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|s| s["start"] == true)
                    .map(|s| s["request"].clone())
            });
            for id in starts {
                let r = requests.iter().find(|r| r["id"] == id).unwrap();
                let t = at(r, "arrival_us");
                if ends.iter().any(|&(s, e)| s <= t && t <= e) {
                    problems.push(format!(
                        "{trace} (+{overhead_us} µs): {id} starts a sequence while an END executes"
                    ));
                }
            }
        }
    }
    assert!(checked > 0, "no Oldest case");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// `scripts/fidelity/fidelity.py compare` on an observation of `direct`
/// (the recorded one, changed by `shift(instance, the batch's index on its
/// instance, start)`): exit status and output.
fn compare_shifted(shift: impl Fn(u64, usize, i64) -> i64) -> Option<(i32, String)> {
    let root = crate_root();
    let dir = root.join("testdata").join("fidelity");
    let mut obs: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("direct.triton.json")).unwrap())
            .unwrap();
    let mut on_instance: BTreeMap<u64, usize> = BTreeMap::new();
    for b in obs["batches"].as_array_mut().unwrap() {
        let instance = b["instance"].as_u64().unwrap();
        let k = on_instance.entry(instance).or_default();
        let start = b["start_us"].as_i64().unwrap();
        b["start_us"] = shift(instance, *k, start).into();
        *k += 1;
    }
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("direct.triton.json"),
        serde_json::to_string(&obs).unwrap(),
    )
    .unwrap();
    let out = std::process::Command::new("python3")
        .arg(root.join("scripts/fidelity/fidelity.py"))
        .arg("compare")
        .arg("--cases")
        .arg(dir.join("cases.json"))
        .arg("--observed")
        .arg(tmp.path())
        .arg("--tritonctl")
        .arg(tritonctl_path())
        .args(["--only", "direct"])
        .output();
    match out {
        Ok(o) => Some((
            o.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr),
        )),
        Err(e) if require_ort() => panic!("python3 does not run: {e}"),
        Err(e) => {
            eprintln!("skipped: python3 does not run: {e}");
            None
        }
    }
}

/// On a loaded machine Triton starts batches late and needs more time
/// between the batches of an instance, and that adds up along a chain of
/// back-to-back batches. The comparison measures the overhead on the
/// batches simulate runs back to back and compares such a batch with the
/// one before it: a run 15 ms late with 9 ms more per batch agrees, while a
/// batch held back 60 ms is reported once, where it happens.
#[test]
fn the_replay_comparison_absorbs_a_slow_machine_but_not_a_held_back_batch() {
    let slow = |_: u64, k: usize, start: i64| start + 15_000 + 9_000 * k as i64;
    let Some((code, out)) = compare_shifted(slow) else {
        return;
    };
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("result: ok"), "{out}");
    // The third batch of instance 0 is [e0 c1]; it and the ones after it
    // on that instance start 60 ms later.
    let held = |instance: u64, k: usize, start: i64| {
        let late = if instance == 0 && k >= 2 { 60_000 } else { 0 };
        slow(instance, k, start) + late
    };
    let (code, out) = compare_shifted(held).unwrap();
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("distance from the batch before it on the instance differs by 60."),
        "{out}"
    );
    assert_eq!(out.matches("DIFFERENCE").count(), 1, "{out}");
    assert!(out.contains("[e0 c1]"), "{out}");
}
