//! `tritonctl perf merge`: documents of real `perf` runs against the
//! loopback responder of `perf.rs`, merged (docs/spec/cli.md, "Mergeable
//! results").

use crate::common::tritonctl;
use crate::perf::{assert_matches_schema, triton_like, Responder};
use hdrhistogram::Histogram;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tritonctl::perf::histogram::{decode, new_histogram};

const HANG: Duration = Duration::from_secs(60);

/// One `perf --format json` run written to `dir/name`.
fn run_to(dir: &Path, name: &str, url: &str, extra: &[&str]) -> PathBuf {
    let mut args = vec!["-m", "m", "-u", url, "--format", "json"];
    args.extend(extra);
    let (code, out, err) = tritonctl()
        .arg("perf")
        .args(&args)
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 0, "{err}");
    let path = dir.join(name);
    std::fs::write(&path, &out).unwrap();
    path
}

fn read(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn merge(files: &[&Path], extra: &[&str]) -> (i32, String, String) {
    tritonctl()
        .args(["perf", "merge"])
        .args(files)
        .args(extra)
        .timeout(HANG)
        .run()
        .parts()
}

fn hist(level: &Value, which: &str) -> Option<Histogram<u64>> {
    level["histograms"][which]
        .as_str()
        .map(|t| decode(t).unwrap())
}

#[test]
fn two_runs_merge_into_the_report_of_all_their_requests() {
    let r = Responder::start(triton_like());
    let dir = tempfile::tempdir().unwrap();
    let load = [
        "--concurrency-range",
        "1:2",
        "--request-count",
        "80",
        "-b",
        "2",
    ];
    let a = run_to(dir.path(), "a.json", &r.url(), &load);
    let b = run_to(dir.path(), "b.json", &r.url(), &load);
    let (da, db) = (read(&a), read(&b));
    let (code, out, err) = merge(&[&a, &b], &["--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let m: Value = serde_json::from_str(&out).unwrap();
    assert_matches_schema(&m);
    assert_eq!(
        m["merged_from"],
        serde_json::json!([a.display().to_string(), b.display().to_string()])
    );
    assert_eq!(m["model"], "m");
    assert_eq!(m["shard"], Value::Null);
    let levels = m["levels"].as_array().unwrap();
    assert_eq!(levels.len(), 2);
    // each run's histograms are the ones its percentiles were read from
    for l in da["levels"]
        .as_array()
        .unwrap()
        .iter()
        .chain(db["levels"].as_array().unwrap())
    {
        for which in ["latency_us", "first_response_us"] {
            let h = hist(l, which).unwrap();
            assert_eq!(h.len(), l["successful_requests"].as_u64().unwrap());
            let p = &l[which];
            assert_eq!(p["p50"].as_u64().unwrap(), h.value_at_quantile(0.5));
            assert_eq!(p["p99"].as_u64().unwrap(), h.value_at_quantile(0.99));
            assert_eq!(p["max"].as_u64().unwrap(), h.max());
        }
        // one response per request: no gaps; not a sequence model
        assert!(l["histograms"]["inter_response_us"].is_null());
        assert!(l["histograms"]["sequence_latency_us"].is_null());
    }
    for (k, l) in levels.iter().enumerate() {
        let (la, lb) = (&da["levels"][k], &db["levels"][k]);
        assert_eq!(l["concurrency"], la["concurrency"]);
        // every count is the sum (80 requests per run and level)
        assert_eq!(l["requests"], 160);
        for key in [
            "successful_requests",
            "inferences",
            "responses",
            "errors",
            "cancelled",
        ] {
            assert_eq!(
                l[key].as_u64().unwrap(),
                la[key].as_u64().unwrap() + lb[key].as_u64().unwrap(),
                "{key}"
            );
        }
        assert_eq!(l["inferences"], 320);
        // the percentiles are those of the two histograms added up
        let mut all = new_histogram();
        all.add(hist(la, "latency_us").unwrap()).unwrap();
        all.add(hist(lb, "latency_us").unwrap()).unwrap();
        assert_eq!(all.len(), 160);
        let lat = &l["latency_us"];
        for (key, q) in [("p50", 0.5), ("p90", 0.9), ("p95", 0.95), ("p99", 0.99)] {
            assert_eq!(
                lat[key].as_u64().unwrap(),
                all.value_at_quantile(q),
                "{key}"
            );
        }
        assert_eq!(lat["max"].as_u64().unwrap(), all.max());
        // (serde_json reads floats to within one unit in the last place)
        let mean = lat["mean"].as_f64().unwrap();
        assert!((mean - all.mean()).abs() <= 1e-12 * all.mean(), "{mean}");
        assert_eq!(hist(l, "latency_us").unwrap(), all);
        // the window spans both runs (one after the other here), and the
        // rates are over it
        let start = la["window_start_us"]
            .as_u64()
            .unwrap()
            .min(lb["window_start_us"].as_u64().unwrap());
        let end = la["window_end_us"]
            .as_u64()
            .unwrap()
            .max(lb["window_end_us"].as_u64().unwrap());
        assert_eq!(l["window_start_us"].as_u64().unwrap(), start);
        assert_eq!(l["window_end_us"].as_u64().unwrap(), end);
        let secs = (end - start) as f64 / 1e6;
        assert!((l["duration_s"].as_f64().unwrap() - secs).abs() < 1e-9);
        let tput = l["throughput_per_s"].as_f64().unwrap();
        assert!((tput - 320.0 / secs).abs() < 1e-6 * tput, "{tput}");
        // each run's own window is its duration, on the host's clock
        for one in [la, lb] {
            let w =
                one["window_end_us"].as_u64().unwrap() - one["window_start_us"].as_u64().unwrap();
            assert!((w as f64 / 1e6 - one["duration_s"].as_f64().unwrap()).abs() < 1e-5);
        }
        assert!(l["server"].is_null());
    }
    // the windows of the second run come after the first's: a warning
    // says the rate is over both
    assert!(err.contains("do not overlap"), "{err}");

    // a merged document merges again: with a third run, as all three at once
    let merged = dir.path().join("ab.json");
    std::fs::write(&merged, &out).unwrap();
    let c = run_to(dir.path(), "c.json", &r.url(), &load);
    let (code, out, err) = merge(&[&merged, &c], &["--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let abc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(abc["levels"][0]["requests"], 240);
    let mut all = new_histogram();
    for d in [&da, &db, &read(&c)] {
        all.add(hist(&d["levels"][0], "latency_us").unwrap())
            .unwrap();
    }
    assert_eq!(hist(&abc["levels"][0], "latency_us").unwrap(), all);

    // the table and the CSV of perf, for the merged levels
    let (code, table, err) = merge(&[&a, &b], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(table.starts_with("model m at "), "{table}");
    assert!(table.contains("p99 µs") && table.contains("160"), "{table}");
    let (code, table2, _) = merge(&[&a, &b], &["--format", "table"]);
    assert_eq!((code, &table2), (0, &table));
    let csv_file = dir.path().join("m.csv");
    let (code, csv, err) = merge(
        &[&a, &b],
        &["--format", "csv", "-f", csv_file.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read_to_string(&csv_file).unwrap(), csv);
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(head[0], "Concurrency");
    let p99 = head.iter().position(|h| *h == "p99 latency").unwrap();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 2);
    for row in rows {
        let l = levels
            .iter()
            .find(|l| l["concurrency"].as_u64().map(|c| c.to_string()).as_deref() == Some(row[0]))
            .unwrap();
        assert_eq!(row[p99], l["latency_us"]["p99"].to_string());
    }
}

/// `doc` with `edit` applied, written to `dir/name`.
fn edited(dir: &Path, name: &str, doc: &Value, edit: impl FnOnce(&mut Value)) -> PathBuf {
    let mut d = doc.clone();
    edit(&mut d);
    let p = dir.join(name);
    std::fs::write(&p, d.to_string()).unwrap();
    p
}

#[test]
fn results_of_other_loads_are_refused_naming_the_files() {
    let r = Responder::start(triton_like());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let a = run_to(d, "a.json", &r.url(), &["--request-count", "20"]);
    let doc = read(&a);
    let refused = |files: &[&Path], names: &[&str], what: &str| {
        let (code, out, err) = merge(files, &["--format", "json"]);
        assert_eq!(code, 2, "{out}{err}");
        assert!(out.is_empty(), "{out}");
        for n in names {
            assert!(err.contains(n), "{n} not in {err}");
        }
        assert!(err.contains(what), "{what} not in {err}");
    };
    // another model
    let other = edited(d, "other.json", &doc, |v| v["model"] = "m2".into());
    refused(
        &[&a, &other],
        &["a.json", "other.json"],
        "model \"m\" and \"m2\"",
    );
    // another level set: a real run at concurrency 3
    let c3 = run_to(
        d,
        "c3.json",
        &r.url(),
        &["--request-count", "20", "--concurrency-range", "3"],
    );
    refused(
        &[&a, &c3],
        &["a.json", "c3.json"],
        "measured different levels (concurrency 1 and concurrency 3)",
    );
    // the same shard twice
    let shard = |v: &mut Value| v["shard"] = serde_json::json!({"index": 0, "count": 2});
    let s0 = edited(d, "s0.json", &doc, shard);
    let s0b = edited(d, "s0b.json", &doc, shard);
    refused(
        &[&s0, &s0b],
        &["s0.json", "s0b.json"],
        "the same shard (0 of 2)",
    );
    // two shards of one load: merged, the concurrency summed
    let s1 = edited(d, "s1.json", &doc, |v| {
        v["shard"] = serde_json::json!({"index": 1, "count": 2})
    });
    let (code, out, err) = merge(&[&s0, &s1], &["--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let m: Value = serde_json::from_str(&out).unwrap();
    assert_matches_schema(&m);
    assert_eq!(m["levels"][0]["concurrency"], 2);
    assert_eq!(m["levels"][0]["requests"], 40);
    assert_eq!(m["shard"], Value::Null);
    // not JSON: its position
    let bad = d.join("bad.json");
    std::fs::write(&bad, "{\n  \"model\": nope\n}").unwrap();
    refused(&[&a, &bad], &["bad.json:2:"], "expected");
    // JSON, but not perf's
    let list = d.join("list.json");
    std::fs::write(&list, "[1, 2, 3]").unwrap();
    refused(
        &[&a, &list],
        &["list.json"],
        "not a document of `tritonctl perf --format json`",
    );
    // a document without histograms (an older tritonctl)
    let old = edited(d, "old.json", &doc, |v| {
        v["levels"][0].as_object_mut().unwrap().remove("histograms");
    });
    refused(&[&a, &old], &["old.json"], "no \"histograms\"");
    // a missing file, a file above --max-file-bytes
    refused(
        &[&a, &d.join("missing.json")],
        &["missing.json"],
        "cannot read",
    );
    let (code, _, err) = tritonctl()
        .args(["--max-file-bytes", "100", "perf", "merge"])
        .arg(&a)
        .run()
        .parts();
    assert_eq!(code, 2);
    assert!(
        err.contains("a.json") && err.contains("--max-file-bytes"),
        "{err}"
    );
    // a name with a control character is escaped where it is shown
    let odd = edited(d, "odd\u{1b}.json", &doc, |v| v["model"] = "x".into());
    let (code, _, err) = merge(&[&a, &odd], &[]);
    assert_eq!(code, 2);
    assert!(!err.contains('\u{1b}') && err.contains("odd"), "{err:?}");
}

#[test]
fn merge_is_a_subcommand_and_merge_still_a_model_name() {
    // `perf -m merge` load-tests a model named "merge" (the responder has
    // no such model)
    let r = Responder::start(triton_like());
    let (code, _, err) = tritonctl()
        .args([
            "perf",
            "-m",
            "merge",
            "-u",
            &r.url(),
            "--request-count",
            "5",
        ])
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 2);
    assert!(err.contains("'merge'") && err.contains("400"), "{err}");
    // the subcommand takes none of the load test's flags
    let (code, _, err) = tritonctl()
        .args(["perf", "-m", "m", "merge", "a.json"])
        .run()
        .parts();
    assert_eq!(code, 2);
    assert!(err.contains("cannot be used with"), "{err}");
    let (code, _, err) = tritonctl().args(["perf", "merge"]).run().parts();
    assert_eq!(code, 2);
    assert!(err.contains("<FILE.json>"), "{err}");
}

#[test]
fn control_characters_in_a_merged_file_never_reach_the_terminal() {
    let r = Responder::start(triton_like());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let a = run_to(d, "a.json", &r.url(), &["--request-count", "20"]);
    let doc = read(&a);
    // a field of a fixed set with an escape sequence: refused, named
    for field in ["mode", "endpoint", "input_tensor_format", "protocol"] {
        let bad = edited(d, "esc.json", &doc, |v| {
            v[field] = "\u{1b}[2J\u{1b}]0;owned\u{7}".into()
        });
        let (code, out, err) = merge(&[&bad], &[]);
        assert_eq!(code, 2, "{field}: {out}{err}");
        assert!(
            err.contains("esc.json") && err.contains(field),
            "{field}: {err}"
        );
        assert!(
            !out.contains('\u{1b}') && !err.contains('\u{1b}'),
            "{err:?}"
        );
    }
    // an error kind (it may come from a server's status text): escaped
    let kinds = edited(d, "kinds.json", &doc, |v| {
        v["levels"][0]["errors"] = 1.into();
        v["levels"][0]["errors_by_kind"] = serde_json::json!({"HTTP 500 \u{1b}[31mred": 1});
    });
    let (code, out, err) = merge(&[&kinds], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("HTTP 500 ") && out.contains("red 1"), "{out}");
    assert!(
        !out.contains('\u{1b}') && !err.contains('\u{1b}'),
        "{out:?}"
    );
}
