//! `tritonctl simulate` and `tritonctl trace generate`, through the binary.

use crate::common::{crate_root, tritonctl};
use serde_json::Value;
use std::path::PathBuf;

fn traces() -> PathBuf {
    crate_root().join("testdata").join("traces")
}

fn generate(args: &[&str]) -> String {
    let out = tritonctl()
        .arg("trace")
        .arg("generate")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn parse_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect()
}

fn arrivals(lines: &[Value]) -> Vec<u64> {
    lines
        .iter()
        .map(|v| v["arrival_us"].as_u64().unwrap())
        .collect()
}

/// Runs simulate with a trace given on standard input.
fn simulate_stdin(config: &str, trace: &str, extra: &[&str]) -> std::process::Output {
    tritonctl()
        .arg("simulate")
        .arg("--config")
        .arg(traces().join(config))
        .args(["--trace", "-", "--latency", "1000"])
        .args(extra)
        .write_stdin(trace.to_string())
        .output()
        .unwrap()
}

fn simulate_json(config: &str, trace: &str) -> Value {
    let out = simulate_stdin(config, trace, &["--format", "json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn generator_is_deterministic() {
    let args = [
        "--rate",
        "500",
        "--distribution",
        "poisson",
        "--requests",
        "200",
        "--priority-levels",
        "3",
        "--seed",
        "42",
    ];
    let a = generate(&args);
    let b = generate(&args);
    assert_eq!(a, b);
    let mut other = args;
    other[9] = "43";
    assert_ne!(a, generate(&other));
    let lines = parse_lines(&a);
    assert_eq!(lines.len(), 200);
    for v in &lines {
        let p = v["priority"].as_u64().unwrap();
        assert!((1..=3).contains(&p), "priority {p}");
    }
}

#[test]
fn poisson_mean_rate_is_close_to_the_requested_rate() {
    let text = generate(&[
        "--rate",
        "1000",
        "--distribution",
        "poisson",
        "--requests",
        "20000",
        "--seed",
        "7",
    ]);
    let t = arrivals(&parse_lines(&text));
    assert_eq!(t.len(), 20000);
    assert!(t.windows(2).all(|w| w[0] <= w[1]), "sorted by arrival");
    // Mean inter-arrival 1000 µs; its standard error over 20000 samples is
    // about 7 µs, so 3% is a wide margin.
    let mean = (t[t.len() - 1] - t[0]) as f64 / (t.len() - 1) as f64;
    assert!((mean - 1000.0).abs() < 30.0, "mean inter-arrival {mean}");
    // Exponential gaps: not all equal, and some much shorter than the mean.
    let short = t.windows(2).filter(|w| w[1] - w[0] < 100).count();
    assert!(short > 1000, "only {short} gaps under 100 µs");
}

#[test]
fn constant_rate_and_duration() {
    let t = arrivals(&parse_lines(&generate(&[
        "--rate",
        "200",
        "--duration",
        "0.1",
    ])));
    // 200/s for 100 ms: arrivals at 0, 5000, ..., 95000.
    assert_eq!(t, (0..20).map(|i| i * 5000).collect::<Vec<u64>>());
}

#[test]
fn generated_sequences_are_complete() {
    let text = generate(&[
        "--rate",
        "100",
        "--sequences",
        "20",
        "--sequence-length",
        "5",
        "--sequence-length-variation",
        "40",
        "--think-time-us",
        "3000",
        "--string-ids",
        "--seed",
        "3",
    ]);
    let lines = parse_lines(&text);
    let t = arrivals(&lines);
    assert!(t.windows(2).all(|w| w[0] <= w[1]), "sorted by arrival");
    let mut total = 0;
    for s in 1..=20 {
        let id = format!("s{s}");
        let steps: Vec<&Value> = lines.iter().filter(|v| v["sequence_id"] == id).collect();
        assert!(
            (3..=7).contains(&steps.len()),
            "{id}: {} steps",
            steps.len()
        );
        total += steps.len();
        assert_eq!(steps[0]["start"], true, "{id}");
        assert_eq!(steps[steps.len() - 1]["end"], true, "{id}");
        for w in steps.windows(2) {
            assert_eq!(w[1]["start"], false);
            let gap = w[1]["arrival_us"].as_u64().unwrap() - w[0]["arrival_us"].as_u64().unwrap();
            assert_eq!(gap, 3000);
        }
    }
    assert_eq!(total, lines.len());
    // The generated trace is accepted by simulate.
    let doc = simulate_json("direct.pbtxt", &text);
    assert_eq!(doc["summary"]["requests"], lines.len());
}

#[test]
fn generator_writes_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    let out = tritonctl()
        .args(["trace", "generate", "--rate", "10", "--requests", "3", "-o"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(out.stdout.is_empty());
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(arrivals(&parse_lines(&text)), [0, 100_000, 200_000]);
}

#[test]
fn generator_rejects_bad_options() {
    for args in [
        &["--rate", "0", "--requests", "3"][..],
        &["--rate", "10"][..],
        &[
            "--rate",
            "10",
            "--requests",
            "3",
            "--sequence-length-variation",
            "150",
        ][..],
    ] {
        let out = tritonctl()
            .args(["trace", "generate"])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn bad_traces_name_the_line() {
    let good = "{\"arrival_us\": 0}\n";
    let cases = [
        (
            format!("{good}{{\"arrival_us\": 10}}\n{{\"arrival_us\": 5}}\n"),
            "<stdin>:3:",
            "earlier than 10 on line 2",
        ),
        (
            format!("{good}{{\"arrival_us\": -5}}\n"),
            "<stdin>:2:",
            "negative",
        ),
        (
            format!("{good}{{\"arrival_us\": 2.5}}\n"),
            "<stdin>:2:",
            "integer",
        ),
        (
            format!("{good}\n{{\"arrival_us\": 1,\n"),
            "<stdin>:3:",
            "malformed JSON",
        ),
        (
            format!("{good}{{\"arrival_us\": 1, \"sequence_id\": 1.5}}\n"),
            "<stdin>:2:",
            "sequence_id",
        ),
        (
            format!("{good}{{\"arrival_us\": 1, \"id\": {{\"a\": 1}}}}\n"),
            "<stdin>:2:",
            "'id'",
        ),
        (
            format!("{good}{{\"id\": \"x\"}}\n"),
            "<stdin>:2:",
            "arrival_us",
        ),
    ];
    let cases = cases.into_iter().chain([(
        format!("{good}{{\"arrival_us\": 18446744073709551615}}\n"),
        "<stdin>:2:",
        "too large",
    )]);
    for (trace, location, words) in cases {
        let out = simulate_stdin("dynamic.pbtxt", &trace, &[]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{trace}: {err}");
        assert!(err.contains(location), "{trace}: {err}");
        assert!(err.contains(words), "{trace}: {err}");
        assert!(!err.contains("internal error"), "{err}");
        assert!(out.stdout.is_empty(), "nothing on stdout after a bad line");
    }
}

#[test]
fn bad_trace_file_errors_carry_the_file_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.jsonl");
    std::fs::write(&path, "{\"arrival_us\": 1}\n{\"arrival_us\": \"soon\"}\n").unwrap();
    let out = tritonctl()
        .arg("simulate")
        .arg("--config")
        .arg(traces().join("dynamic.pbtxt"))
        .arg("--trace")
        .arg(&path)
        .args(["--latency", "1000"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("trace.jsonl:2: "), "{err}");
}

#[test]
fn unknown_trace_fields_are_warnings() {
    let out = simulate_stdin(
        "dynamic.pbtxt",
        "{\"arrival_us\": 0, \"priorty\": 1}\n",
        &["--format", "json"],
    );
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("<stdin>:1:"), "{err}");
    assert!(err.contains("priorty"), "{err}");
}

#[test]
fn bad_config_and_latency() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.pbtxt");
    std::fs::write(&cfg, "max_batch_size: 8\ndynamic_batching { bogus: 1 }\n").unwrap();
    let out = tritonctl()
        .arg("simulate")
        .arg("--config")
        .arg(dir.path())
        .args(["--trace", "-", "--latency", "1000"])
        .write_stdin("{\"arrival_us\": 0}\n")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bogus"));

    let out = simulate_stdin(
        "dynamic.pbtxt",
        "{\"arrival_us\": 0}\n",
        &["--latency", "fast"],
    );
    assert_eq!(out.status.code(), Some(2));
}

/// Expected batches derived by hand from schedulers.md §2.1/§2.4/§2.6
/// (idle dispatch, one instance). Config: max_batch_size 8, preferred
/// {4} (so MAXP = 4), DELAY = 1000 µs; latency 1000 + 100·b µs.
///
/// * r0..r3 arrive at 0, 100, 200, 300 (size 1 each). Until r3 no prefix
///   reaches a preferred size and the oldest has waited < DELAY, so the
///   batcher waits. At 300 the sum hits 4 ∈ PREF: send [r0 r1 r2 r3] at
///   300, ending at 300 + 1000 + 400 = 1700.
/// * r4 (400), r5 (500) queue while the instance is busy. At 1700 the
///   instance frees; sum 2, no preferred size, but the oldest (r4) has
///   waited 1300 ≥ DELAY: send all, [r4 r5] at 1700, end 1700 + 1200 = 2900.
/// * r6 alone at 5000: waits the full DELAY, sent at 6000, ends 7100.
/// * r7 (size 3) at 8000 waits; r8 (size 2) at 8010 would push the sum to
///   5 > MAXP with no mark yet, so the mark is the prefix [r7]; not expired
///   → send [r7] at 8010, end 8010 + 1000 + 300 = 9310. r8 then waits for
///   the instance; at 9310 it has waited 1300 ≥ DELAY: [r8] at 9310, end
///   9310 + 1200 = 10510.
#[test]
fn dynamic_batching_end_to_end() {
    let out = tritonctl()
        .arg("simulate")
        .arg("--config")
        .arg(traces().join("dynamic.pbtxt"))
        .arg("--trace")
        .arg(traces().join("dynamic.jsonl"))
        .args(["--latency", "1000+100*b", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let expected: [(&[&str], u64, u64, u64); 5] = [
        (&["r0", "r1", "r2", "r3"], 300, 1700, 4),
        (&["r4", "r5"], 1700, 2900, 2),
        (&["r6"], 6000, 7100, 1),
        (&["r7"], 8010, 9310, 3),
        (&["r8"], 9310, 10510, 2),
    ];
    let batches = doc["batches"].as_array().unwrap();
    assert_eq!(batches.len(), expected.len());
    for (b, (reqs, start, end, size)) in batches.iter().zip(expected) {
        assert_eq!(b["requests"], serde_json::json!(reqs), "{b}");
        assert_eq!(b["start_us"], start, "{b}");
        assert_eq!(b["end_us"], end, "{b}");
        assert_eq!(b["size"], size, "{b}");
        assert_eq!(b["instance"], 0);
        assert!(
            b.get("slots").is_none(),
            "no slots without sequence batching"
        );
    }
    // Every request is ok and points at its batch.
    let requests = doc["requests"].as_array().unwrap();
    let ids: Vec<&str> = requests.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8"]);
    for r in requests {
        assert_eq!(r["status"], "ok");
        let batch = &batches[r["batch"].as_u64().unwrap() as usize];
        assert!(batch["requests"].as_array().unwrap().contains(&r["id"]));
        assert_eq!(r["start_us"], batch["start_us"]);
        assert_eq!(r["end_us"], batch["end_us"]);
    }
    let s = &doc["summary"];
    assert_eq!(
        (s["requests"].as_u64(), s["ok"].as_u64()),
        (Some(9), Some(9))
    );
    assert_eq!(s["rejected"], 0);
    assert_eq!(s["timed_out"], 0);
    // 9 responses between 0 and 10510 µs.
    let tp = s["throughput_per_s"].as_f64().unwrap();
    assert!((tp - 9.0 / 0.010510).abs() < 0.01, "{tp}");
    // Latencies: 1700 1600 1500 1400 2500 2400 2100 1310 2500 (sorted:
    // 1310 1400 1500 1600 1700 2100 2400 2500 2500), nearest rank.
    assert_eq!(s["latency_us"]["p50"], 1700);
    assert_eq!(s["latency_us"]["p99"], 2500);
}

#[test]
fn human_summary_shows_the_tables() {
    let out = tritonctl()
        .arg("simulate")
        .arg("--config")
        .arg(traces().join("dynamic.pbtxt"))
        .arg("--trace")
        .arg(traces().join("dynamic.jsonl"))
        .args(["--latency", "1:1100,2:1200"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    for word in [
        "throughput",
        "p50",
        "p99",
        "queue",
        "compute",
        "batch size",
        "utilisation",
    ] {
        assert!(text.contains(word), "{word} missing in\n{text}");
    }
}

#[test]
fn sequence_batches_list_every_slot() {
    let doc = simulate_json(
        "direct.pbtxt",
        &std::fs::read_to_string(traces().join("direct.jsonl")).unwrap(),
    );
    let batches = doc["batches"].as_array().unwrap();
    assert_eq!(batches.len(), 3);
    for b in batches {
        let slots = b["slots"].as_array().unwrap();
        // max_batch_size 2: two slots on the one instance, slot 1 unused.
        assert_eq!(slots.len(), 2, "{b}");
        assert_eq!(slots[0]["ready"], true);
        assert_eq!(slots[0]["corrid"], 7);
        assert_eq!(slots[1]["ready"], false);
        assert!(slots[1]["request"].is_null());
        assert_eq!(b["requests"].as_array().unwrap().len(), 1);
        assert_eq!(slots[0]["request"], b["requests"][0]);
    }
    assert_eq!(batches[0]["slots"][0]["start"], true);
    assert_eq!(batches[2]["slots"][0]["end"], true);
    // Requests are listed in trace order.
    let ids: Vec<&str> = doc["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["a0", "a1", "x0", "a2"]);
    // A request of an unknown sequence without START is rejected.
    let x0 = doc["requests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "x0")
        .unwrap();
    assert_eq!(x0["status"], "rejected");
    assert!(x0["reason"].as_str().unwrap().contains("START"));
    assert_eq!(doc["summary"]["rejected"], 1);
}

#[test]
fn start_inside_a_live_sequence_does_not_fail() {
    // The core restarts the sequence in its slot: the second START is
    // executed with the START control set.
    let doc = simulate_json(
        "direct.pbtxt",
        "{\"id\": \"a\", \"arrival_us\": 0, \"sequence_id\": 7, \"start\": true}\n\
         {\"id\": \"b\", \"arrival_us\": 100, \"sequence_id\": 7, \"start\": true}\n\
         {\"id\": \"c\", \"arrival_us\": 200, \"sequence_id\": 7, \"end\": true}\n",
    );
    let batches = doc["batches"].as_array().unwrap();
    let b = batches
        .iter()
        .find(|b| b["requests"][0] == "b")
        .expect("b executed");
    let slot = b["slots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["request"] == "b")
        .unwrap();
    assert_eq!(slot["start"], true);
    assert_eq!(doc["summary"]["requests"], 3);
}

#[test]
fn odd_traces_never_panic() {
    let lines = [
        "",
        "null",
        "\"text\"",
        "{}",
        "{\"arrival_us\": 0, \"batch_size\": 4294967295}",
        "{\"arrival_us\": 0, \"batch_size\": 0}",
        "{\"arrival_us\": 0, \"priority\": 4294967295, \"timeout_us\": 1}",
        "{\"arrival_us\": 0, \"sequence_id\": 0, \"start\": true}",
        "{\"arrival_us\": 0, \"sequence_id\": \"\", \"start\": true, \"end\": true}",
        "{\"arrival_us\": 1152921504606846976, \"sequence_id\": 1, \"start\": true}",
        "{\"arrival_us\": 1e3}",
        "\u{feff}{\"arrival_us\": 0}",
        "\u{0}",
    ];
    for config in ["dynamic.pbtxt", "direct.pbtxt"] {
        for line in lines {
            let out = simulate_stdin(config, &format!("{line}\n"), &["--format", "json"]);
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                matches!(out.status.code(), Some(0 | 2)),
                "{config} {line:?}: {err}"
            );
            assert!(!err.contains("internal error"), "{config} {line:?}: {err}");
        }
    }
}

#[test]
fn human_summary_lists_rejections_with_reasons() {
    let out = tritonctl()
        .arg("simulate")
        .arg("--config")
        .arg(traces().join("direct.pbtxt"))
        .arg("--trace")
        .arg(traces().join("direct.jsonl"))
        .args(["--latency", "1000"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("rejected"), "{text}");
    assert!(text.contains("START flag"), "{text}");
}
