//! `tritonctl simulate` and `tritonctl trace generate`, through the binary.

use crate::common::{crate_root, tritonctl, Output, Tritonctl};
use serde_json::Value;
use std::path::PathBuf;

fn traces() -> PathBuf {
    crate_root().join("testdata").join("traces")
}

fn generate(args: &[&str]) -> String {
    let out = tritonctl().arg("trace").arg("generate").args(args).run();
    assert!(out.success(), "{}", out.stderr);
    out.stdout
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
fn simulate_stdin(config: &str, trace: &str, extra: &[&str]) -> Output {
    tritonctl()
        .arg("simulate")
        .arg("--config")
        .arg(traces().join(config))
        .args(["--trace", "-", "--latency", "1000"])
        .args(extra)
        .stdin(trace.to_string())
        .run()
}

fn simulate_json(config: &str, trace: &str) -> Value {
    let out = simulate_stdin(config, trace, &["--format", "json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap()
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
        .run();
    assert!(out.success());
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
        let out = tritonctl().args(["trace", "generate"]).args(args).run();
        assert_eq!(out.code, 2, "{args:?}");
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
        let err = &out.stderr;
        assert_eq!(out.code, 2, "{trace}: {err}");
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
        .run();
    assert_eq!(out.code, 2);
    let err = &out.stderr;
    assert!(err.contains("trace.jsonl:2: "), "{err}");
}

#[test]
fn unknown_trace_fields_are_warnings() {
    let out = simulate_stdin(
        "dynamic.pbtxt",
        "{\"arrival_us\": 0, \"priorty\": 1}\n",
        &["--format", "json"],
    );
    assert_eq!(out.code, 0);
    let err = &out.stderr;
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
        .stdin("{\"arrival_us\": 0}\n")
        .run();
    assert_eq!(out.code, 1);
    assert!(&out.stderr.contains("bogus"));

    let out = simulate_stdin(
        "dynamic.pbtxt",
        "{\"arrival_us\": 0}\n",
        &["--latency", "fast"],
    );
    assert_eq!(out.code, 2);
}

/// Expected batches derived by hand from docs/spec/schedulers.md §2.1/§2.4/§2.6
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
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
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
        .run();
    assert_eq!(out.code, 0);
    let text = out.stdout;
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
fn json_lists_requests_in_trace_order_even_with_repeated_ids() {
    // One instance: "a" executes from 0 to 1000, so the first "d" (same
    // sequence) waits until 1000, while the second "d" (no START for an
    // unknown sequence) is rejected on arrival at 2. Its record comes
    // first, yet each record keeps its own line's place.
    let doc = simulate_json(
        "direct.pbtxt",
        "{\"id\": \"a\", \"arrival_us\": 0, \"sequence_id\": 7, \"start\": true}\n\
         {\"id\": \"d\", \"arrival_us\": 1, \"sequence_id\": 7}\n\
         {\"id\": \"d\", \"arrival_us\": 2, \"sequence_id\": 9}\n",
    );
    let requests = doc["requests"].as_array().unwrap();
    let got: Vec<(&str, u64, &str)> = requests
        .iter()
        .map(|r| {
            (
                r["id"].as_str().unwrap(),
                r["arrival_us"].as_u64().unwrap(),
                r["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, [("a", 0, "ok"), ("d", 1, "ok"), ("d", 2, "rejected")]);
    assert_eq!(requests[1]["start_us"], 1000);
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
            let err = &out.stderr;
            assert!(matches!(out.code, 0 | 2), "{config} {line:?}: {err}");
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
        .run();
    assert_eq!(out.code, 0);
    let text = out.stdout;
    assert!(text.contains("rejected"), "{text}");
    assert!(text.contains("START flag"), "{text}");
}

// ------------------------------------------------------------------ --sweep

/// A dynamic-batching config: max_batch_size 8 and no preferred sizes, so
/// the preferred set is {8} (docs/spec/schedulers.md §2.1); queue delay
/// `delay`.
fn delay_config(delay: u64) -> String {
    format!(
        "name: \"sweep\"\nbackend: \"onnxruntime\"\nmax_batch_size: 8\n\
         input [ {{ name: \"X\" data_type: TYPE_FP32 dims: [ 4 ] }} ]\n\
         output [ {{ name: \"Y\" data_type: TYPE_FP32 dims: [ 4 ] }} ]\n\
         dynamic_batching {{ max_queue_delay_microseconds: {delay} }}\n\
         instance_group [ {{ count: 1 kind: KIND_CPU }} ]\n"
    )
}

/// Sixteen size-1 requests, one every 100 µs from t = 0.
fn every_100us() -> String {
    (0..16)
        .map(|i| format!("{{\"id\": \"r{i}\", \"arrival_us\": {}}}\n", i * 100))
        .collect()
}

fn simulate_files(config: &std::path::Path, trace: &std::path::Path) -> Tritonctl {
    let mut c = tritonctl();
    c.arg("simulate")
        .arg("--config")
        .arg(config)
        .arg("--trace")
        .arg(trace);
    c
}

/// Expected from docs/spec/schedulers.md §2.4 (idle dispatch, one instance,
/// service 100 µs, so the instance is free again when the next request
/// arrives):
///
/// * DELAY 0: each request finds the instance idle and a queue of one;
///   no preferred size is reached and DELAY is 0, so it is sent alone:
///   16 batches of 1, every latency 100.
/// * DELAY 350: r0 waits until its age reaches 350 (r1..r3 join), then
///   [r0..r3] runs 350–450; r4 (400) waits until 750 with r5..r7, and so
///   on: 4 batches of 4. Latencies per group 450, 350, 250, 150: the
///   median (8th of 16) is 250.
/// * DELAY 10000: at 700 the queue holds 8 = the preferred size and is
///   sent at once, the same again at 1500: 2 batches of 8, latencies 800,
///   700, ..., 100 twice: median 400.
#[test]
fn sweep_bigger_queue_delay_gives_bigger_batches() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("sweep.pbtxt");
    std::fs::write(&cfg, delay_config(0)).unwrap();
    let trace = dir.path().join("t.jsonl");
    std::fs::write(&trace, every_100us()).unwrap();
    let (code, out, err) = simulate_files(&cfg, &trace)
        .args([
            "--latency",
            "100",
            "--format",
            "json",
            "--sweep",
            "dynamic_batching.max_queue_delay_microseconds=0,350,10000",
        ])
        .run()
        .parts();
    assert_eq!(code, 0, "{err}");
    let rows: Value = serde_json::from_str(&out).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 3);
    let expected = [(0, 16, 1.0, 100), (350, 4, 4.0, 250), (10000, 2, 8.0, 400)];
    for (row, (delay, batches, mean, p50)) in rows.iter().zip(expected) {
        assert_eq!(
            row["settings"]["dynamic_batching.max_queue_delay_microseconds"], delay,
            "{row}"
        );
        let s = &row["summary"];
        assert_eq!(s["requests"], 16, "{row}");
        assert_eq!(s["ok"], 16, "{row}");
        assert_eq!(s["batches"], batches, "{row}");
        assert_eq!(s["mean_batch_size"].as_f64(), Some(mean), "{row}");
        assert_eq!(s["latency_us"]["p50"], p50, "{row}");
        assert!(row.get("refused").is_none());
    }
    // Each row is what a plain run of the config with that value gives.
    for (row, delay) in rows.iter().zip([0, 350, 10000]) {
        let one = dir.path().join(format!("d{delay}.pbtxt"));
        std::fs::write(&one, delay_config(delay)).unwrap();
        let (code, out, err) = simulate_files(&one, &trace)
            .args(["--latency", "100", "--format", "json"])
            .run()
            .parts();
        assert_eq!(code, 0, "{err}");
        let doc: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(doc["summary"], row["summary"], "delay {delay}");
    }
}

#[test]
fn sweep_runs_the_cross_product() {
    let mut cmd = tritonctl();
    cmd.arg("simulate")
        .arg("--config")
        .arg(traces().join("dynamic.pbtxt"))
        .arg("--trace")
        .arg(traces().join("dynamic.jsonl"))
        .args([
            "--latency",
            "1000+100*b",
            "--format",
            "json",
            "--sweep",
            "max_batch_size=4,8",
            "--sweep",
            "instance_group[0].count=1,2,3",
        ]);
    let (code, out, err) = cmd.run().parts();
    assert_eq!(code, 0, "{err}");
    let rows: Value = serde_json::from_str(&out).unwrap();
    let rows = rows.as_array().unwrap();
    let got: Vec<(u64, u64, usize)> = rows
        .iter()
        .map(|r| {
            (
                r["settings"]["max_batch_size"].as_u64().unwrap(),
                r["settings"]["instance_group[0].count"].as_u64().unwrap(),
                r["summary"]["instances"].as_array().unwrap().len(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (4, 1, 1),
            (4, 2, 2),
            (4, 3, 3),
            (8, 1, 1),
            (8, 2, 2),
            (8, 3, 3)
        ]
    );
    for r in rows {
        assert_eq!(r["summary"]["requests"], 9, "{r}");
    }

    // The table: one row per setting, the keys as the first columns.
    let mut cmd = tritonctl();
    cmd.arg("simulate")
        .arg("--config")
        .arg(traces().join("dynamic.pbtxt"))
        .arg("--trace")
        .arg(traces().join("dynamic.jsonl"))
        .args([
            "--latency",
            "1000+100*b",
            "--sweep",
            "max_batch_size=4,8",
            "--sweep",
            "instance_group[0].count=1,2,3",
        ]);
    let (code, out, err) = cmd.run().parts();
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().filter(|l| l.contains('┆')).collect();
    assert_eq!(lines.len(), 1 + 6, "{out}");
    for word in [
        "max_batch_size",
        "instance_group[0].count",
        "throughput",
        "p99",
        "queue p50",
        "mean batch",
        "rejected",
        "timed out",
    ] {
        assert!(lines[0].contains(word), "{word} missing in\n{out}");
    }
}

#[test]
fn sweep_reports_settings_triton_would_refuse() {
    // dynamic.pbtxt prefers batches of 4: max_batch_size 2 is refused.
    let mut cmd = tritonctl();
    cmd.arg("simulate")
        .arg("--config")
        .arg(traces().join("dynamic.pbtxt"))
        .arg("--trace")
        .arg(traces().join("dynamic.jsonl"))
        .args([
            "--latency",
            "1000",
            "--format",
            "json",
            "--sweep",
            "max_batch_size=2,8",
        ]);
    let (code, out, err) = cmd.run().parts();
    assert_eq!(code, 1, "{err}");
    let rows: Value = serde_json::from_str(&out).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert!(rows[0]["summary"].is_null(), "{}", rows[0]);
    let why = rows[0]["refused"][0].as_str().unwrap();
    assert!(why.contains("preferred"), "{why}");
    assert_eq!(rows[1]["summary"]["requests"], 9);
    assert!(rows[1].get("refused").is_none());
}

#[test]
fn sweep_reads_a_trace_from_stdin_once() {
    let out = simulate_stdin(
        "dynamic.pbtxt",
        &every_100us(),
        &[
            "--format",
            "json",
            "--sweep",
            "dynamic_batching.preferred_batch_size=[2],[4],[2,4]",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let rows: Value = serde_json::from_str(&out.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(
        rows[2]["settings"]["dynamic_batching.preferred_batch_size"],
        serde_json::json!([2, 4])
    );
    for r in rows {
        assert_eq!(r["summary"]["requests"], 16, "{r}");
    }
}

#[test]
fn bad_sweeps_are_usage_errors() {
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["dynamic_batching.max_queue_delay=1"],
            &[
                "dynamic_batching.max_queue_delay",
                "did you mean 'dynamic_batching.max_queue_delay_microseconds'",
            ],
        ),
        (&["bogus=1"], &["'bogus'", "max_batch_size"]),
        (&["max_batch_size=eight"], &["max_batch_size", "eight"]),
        (
            &["instance_group[0].kind=KIND_TPU"],
            &["KIND_TPU", "KIND_GPU", "KIND_CPU"],
        ),
        (&["instance_group[3].count=1"], &["instance_group[3]"]),
        (&["instance_group.count=1"], &["instance_group[0].count"]),
        (
            &["sequence_batching.max_sequence_idle_microseconds=5"],
            &["sequence_batching", "dynamic_batching"],
        ),
        (&["max_batch_size"], &["KEY=V1,V2"]),
        (&["max_batch_size=4,,8"], &["empty value"]),
        (
            &["max_batch_size=4", "--sweep", "max_batch_size=8"],
            &["twice"],
        ),
        (&["max_batch_size=4 name: 'x'"], &["max_batch_size"]),
    ];
    for (sweep, words) in cases {
        let mut args = vec!["--sweep"];
        args.extend_from_slice(sweep);
        let out = simulate_stdin("dynamic.pbtxt", "{\"arrival_us\": 0}\n", &args);
        let err = &out.stderr;
        assert_eq!(out.code, 2, "{sweep:?}: {err}");
        assert!(out.stdout.is_empty(), "{sweep:?}");
        for w in *words {
            assert!(err.contains(w), "{sweep:?}: '{w}' not in {err}");
        }
        assert!(!err.contains("internal error"), "{err}");
    }
}

// --------------------------------------------------------------- --timeline

/// An `rect class="exec"` of the picture, with the lane it is drawn in.
#[derive(Debug, Clone)]
struct Drawn {
    instance: usize,
    slot: Option<usize>,
    x: f64,
    fill: String,
    attrs: std::collections::HashMap<String, String>,
}

/// A lane of the picture: instance and slot (none for instance lanes).
type Lane = (usize, Option<usize>);

/// Parses the whole SVG (any well-formedness error fails the test) and
/// returns the execution boxes, the lanes (instance, slot) and all text.
fn read_svg(svg: &str) -> (Vec<Drawn>, Vec<Lane>, String) {
    use quick_xml::events::{BytesStart, Event};
    use std::collections::HashMap;
    fn attrs_of(e: &BytesStart) -> HashMap<String, String> {
        e.attributes()
            .map(|a| {
                let a = a.expect("well-formed attribute");
                (
                    String::from_utf8(a.key.as_ref().to_vec()).unwrap(),
                    a.unescape_value().unwrap().into_owned(),
                )
            })
            .collect()
    }
    let mut reader = quick_xml::Reader::from_str(svg);
    // The lane being read and the depth of its <g>.
    let mut lane: Option<(Lane, usize)> = None;
    let mut lanes = Vec::new();
    let mut drawn = Vec::new();
    let mut text = String::new();
    let mut depth = 0usize;
    let mut saw_root = false;
    loop {
        let ev = reader
            .read_event()
            .unwrap_or_else(|e| panic!("the SVG is not well-formed: {e}"));
        let (e, opens) = match &ev {
            Event::Start(e) => (e, true),
            Event::Empty(e) => (e, false),
            Event::End(_) => {
                depth -= 1;
                if lane.is_some_and(|(_, d)| d == depth) {
                    lane = None;
                }
                continue;
            }
            Event::Text(t) => {
                text.push_str(&t.decode().unwrap());
                continue;
            }
            Event::GeneralRef(r) => {
                text.push(crate::common::xml_entity(r));
                continue;
            }
            Event::Eof => break,
            _ => continue,
        };
        text.push('\n');
        let name = e.name().as_ref().to_vec();
        let attrs = attrs_of(e);
        if depth == 0 {
            assert_eq!(name, b"svg");
            assert_eq!(
                attrs.get("xmlns").map(String::as_str),
                Some("http://www.w3.org/2000/svg")
            );
            saw_root = true;
        }
        let class = attrs.get("class").map(String::as_str);
        if name == b"g" && class == Some("lane") {
            let l = (
                attrs["data-instance"].parse().unwrap(),
                attrs.get("data-slot").map(|s| s.parse().unwrap()),
            );
            lanes.push(l);
            lane = Some((l, depth));
        }
        if name == b"rect" && class == Some("exec") {
            let ((instance, slot), _) = lane.expect("execution boxes are inside a lane");
            drawn.push(Drawn {
                instance,
                slot,
                x: attrs["x"].parse().unwrap(),
                fill: attrs["fill"].clone(),
                attrs: attrs.clone(),
            });
        }
        if opens {
            depth += 1;
        }
    }
    assert!(saw_root);
    assert_eq!(depth, 0);
    (drawn, lanes, text)
}

/// Direct strategy, two instances of two slots each.
const DIRECT_2X2: &str = "name: \"seq2\"\nbackend: \"onnxruntime\"\nmax_batch_size: 2\n\
    input [ { name: \"X\" data_type: TYPE_FP32 dims: [ 1 ] } ]\n\
    output [ { name: \"Y\" data_type: TYPE_FP32 dims: [ 1 ] } ]\n\
    sequence_batching { max_sequence_idle_microseconds: 50000000 direct { } }\n\
    instance_group [ { count: 2 kind: KIND_CPU } ]\n";

/// Sequences 7 (a0 a1 a2), 9 (b0 b1) and 11 (c0 c1), all starting at 0.
const THREE_SEQUENCES: &str = "\
{\"id\": \"a0\", \"arrival_us\": 0, \"sequence_id\": 7, \"start\": true}
{\"id\": \"b0\", \"arrival_us\": 0, \"sequence_id\": 9, \"start\": true}
{\"id\": \"c0\", \"arrival_us\": 0, \"sequence_id\": 11, \"start\": true}
{\"id\": \"a1\", \"arrival_us\": 5000, \"sequence_id\": 7}
{\"id\": \"b1\", \"arrival_us\": 5000, \"sequence_id\": 9, \"end\": true}
{\"id\": \"c1\", \"arrival_us\": 5000, \"sequence_id\": 11, \"end\": true}
{\"id\": \"a2\", \"arrival_us\": 10000, \"sequence_id\": 7, \"end\": true}
";

fn draw(config: &str, trace: &str, extra: &[&str]) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("m.pbtxt");
    std::fs::write(&cfg, config).unwrap();
    let t = dir.path().join("t.jsonl");
    std::fs::write(&t, trace).unwrap();
    let svg = dir.path().join("run.svg");
    let (code, out, err) = simulate_files(&cfg, &t)
        .args(["--latency", "1000", "--timeline"])
        .arg(&svg)
        .args(extra)
        .run()
        .parts();
    assert_eq!(code, 0, "{err}");
    (std::fs::read_to_string(&svg).unwrap(), out)
}

/// Slots per docs/spec/schedulers.md §3.1 ("spread" order: slot index first,
/// then instance): 7 → instance 0 slot 0, 9 → instance 1 slot 0, 11 → instance
/// 0 slot 1; instance 1 slot 1 stays empty. One box per executed request,
/// in its sequence's slot.
#[test]
fn timeline_draws_one_lane_per_slot_and_one_colour_per_sequence() {
    let (svg, _) = draw(DIRECT_2X2, THREE_SEQUENCES, &[]);
    let (drawn, lanes, text) = read_svg(&svg);
    assert_eq!(
        lanes,
        [(0, Some(0)), (0, Some(1)), (1, Some(0)), (1, Some(1))]
    );
    let in_lane = |i: usize, s: usize| -> Vec<String> {
        drawn
            .iter()
            .filter(|d| d.instance == i && d.slot == Some(s))
            .map(|d| d.attrs["data-request"].clone())
            .collect()
    };
    assert_eq!(in_lane(0, 0), ["a0", "a1", "a2"]);
    assert_eq!(in_lane(1, 0), ["b0", "b1"]);
    assert_eq!(in_lane(0, 1), ["c0", "c1"]);
    assert!(in_lane(1, 1).is_empty());

    let fill = |id: &str| {
        drawn
            .iter()
            .find(|d| d.attrs["data-request"] == id)
            .unwrap()
            .fill
            .clone()
    };
    let x = |id: &str| {
        drawn
            .iter()
            .find(|d| d.attrs["data-request"] == id)
            .unwrap()
            .x
    };
    assert_eq!(fill("a0"), fill("a1"));
    assert_eq!(fill("a0"), fill("a2"));
    assert_eq!(fill("b0"), fill("b1"));
    assert_ne!(fill("a0"), fill("b0"));
    assert_ne!(fill("a0"), fill("c0"));
    // Same start, same place on the time axis; later starts to the right.
    assert_eq!(x("a0"), x("b0"));
    assert_eq!(x("a1"), x("c1"));
    assert!(x("a0") < x("a1") && x("a1") < x("a2"));
    assert!(drawn.iter().all(|d| !d.attrs["data-sequence"].is_empty()));
    // A title naming the model and the scheduler, the axis unit, a legend.
    assert!(text.contains("model 'seq2'"), "{text}");
    assert!(text.contains("sequence batching (direct)"), "{text}");
    assert!(text.contains("time (ms)"), "{text}");
    for s in ["sequence 7", "sequence 9", "sequence 11"] {
        assert!(text.contains(s), "{s} missing in {text}");
    }

    // The same input gives the same bytes.
    let (again, _) = draw(DIRECT_2X2, THREE_SEQUENCES, &[]);
    assert_eq!(svg, again);
}

/// dynamic.jsonl's batches are worked out in `dynamic_batching_end_to_end`:
/// sizes 4, 2, 1, 3, 2 running 300–1700, 1700–2900, 6000–7100,
/// 8010–9310 and 9310–10510 µs on the one instance.
#[test]
fn timeline_of_the_dynamic_batcher_has_one_box_per_batch() {
    let cfg = std::fs::read_to_string(traces().join("dynamic.pbtxt")).unwrap();
    let trace = std::fs::read_to_string(traces().join("dynamic.jsonl")).unwrap();
    let sizes = |svg: &str| -> Vec<String> {
        let (drawn, lanes, _) = read_svg(svg);
        assert_eq!(lanes, [(0, None)]);
        drawn.iter().map(|d| d.attrs["data-size"].clone()).collect()
    };
    let latency = ["--latency", "1000+100*b"];
    let dir = tempfile::tempdir().unwrap();
    let svg_path = dir.path().join("dyn.svg");
    let cfg_path = dir.path().join("config.pbtxt");
    std::fs::write(&cfg_path, &cfg).unwrap();
    let trace_path = dir.path().join("t.jsonl");
    std::fs::write(&trace_path, &trace).unwrap();
    let run = |extra: &[&str]| {
        let (code, out, err) = simulate_files(&cfg_path, &trace_path)
            .args(latency)
            .arg("--timeline")
            .arg(&svg_path)
            .args(extra)
            .run()
            .parts();
        assert_eq!(code, 0, "{err}");
        (std::fs::read_to_string(&svg_path).unwrap(), out)
    };
    let (svg, out) = run(&["--timeline-queue"]);
    assert_eq!(sizes(&svg), ["4", "2", "1", "3", "2"]);
    assert!(out.contains("throughput"), "the summary is still printed");
    assert!(svg.contains("class=\"wait\""), "queue waits drawn");
    assert!(svg.contains("dynamic batching"));

    // Only what overlaps 2000..8500 µs.
    let (svg, _) = run(&["--timeline-window", "2000:8500"]);
    assert_eq!(sizes(&svg), ["2", "1", "3"]);
    assert!(!svg.contains("class=\"wait\""));

    // The cap: the first two, and the picture says so.
    let (svg, _) = run(&["--timeline-max-batches", "2"]);
    assert_eq!(sizes(&svg), ["4", "2"]);
    let (_, _, text) = read_svg(&svg);
    assert!(text.contains("first 2 of 5 executions"), "{text}");

    // No temporary files are left next to the picture.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let mut names = names;
    names.sort();
    assert_eq!(names, ["config.pbtxt", "dyn.svg", "t.jsonl"]);
}

#[test]
fn timeline_of_a_long_run_stays_small() {
    let trace = generate(&["--rate", "20000", "--requests", "20000", "--seed", "5"]);
    let (svg, _) = draw(
        &std::fs::read_to_string(traces().join("dynamic.pbtxt")).unwrap(),
        &trace,
        &["--timeline-max-batches", "50"],
    );
    let (drawn, _, text) = read_svg(&svg);
    assert_eq!(drawn.len(), 50);
    assert!(text.contains("first 50 of"), "{text}");
    assert!(svg.len() < 100_000, "{} bytes", svg.len());
}

#[test]
fn timeline_option_errors() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no").join("such").join("dir.svg");
    let cases: Vec<Vec<String>> = vec![
        vec!["--timeline-window".into(), "0:10".into()],
        vec![
            "--timeline".into(),
            "x.svg".into(),
            "--timeline-window".into(),
            "10:5".into(),
        ],
        vec![
            "--timeline".into(),
            "x.svg".into(),
            "--timeline-window".into(),
            "soon".into(),
        ],
        vec![
            "--timeline".into(),
            "x.svg".into(),
            "--sweep".into(),
            "max_batch_size=4".into(),
        ],
        vec!["--timeline".into(), missing.display().to_string()],
        vec!["--timeline".into(), dir.path().display().to_string()],
    ];
    for extra in cases {
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        let out = simulate_stdin("dynamic.pbtxt", "{\"arrival_us\": 0}\n", &extra);
        let err = &out.stderr;
        assert_eq!(out.code, 2, "{extra:?}: {err}");
        assert!(!err.contains("internal error"), "{err}");
    }
    assert!(!missing.exists());
}

/// A finding the config has anyway (an output dimension of 0, which the
/// scheduler does not look at) is not blamed on the settings; plain
/// simulate ignores it too.
#[test]
fn sweep_refuses_only_what_the_setting_breaks() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("bad-output.pbtxt");
    let text = std::fs::read_to_string(traces().join("dynamic.pbtxt"))
        .unwrap()
        .replace(
            "output [ { name: \"Y\" data_type: TYPE_FP32 dims: [ 4 ] } ]",
            "output [ { name: \"Y\" data_type: TYPE_FP32 dims: [ 0 ] } ]",
        );
    assert!(text.contains("dims: [ 0 ]"));
    std::fs::write(&cfg, text).unwrap();
    let (code, out, err) = simulate_files(&cfg, &traces().join("dynamic.jsonl"))
        .args([
            "--latency",
            "1000",
            "--format",
            "json",
            "--sweep",
            "max_batch_size=4,8",
        ])
        .run()
        .parts();
    assert_eq!(code, 0, "{err}");
    let rows: Value = serde_json::from_str(&out).unwrap();
    for r in rows.as_array().unwrap() {
        assert!(r.get("refused").is_none(), "{r}");
        assert_eq!(r["summary"]["ok"], 9, "{r}");
    }
}

#[test]
fn sequence_batches_carry_their_control_tensors() {
    // docs/spec/schedulers.md §3.11 S10: START bool [false, true], READY int32
    // [0, 1], CORRID TYPE_INT32, max_batch_size 2, Direct. Ids 7 and 2^32+5
    // start together: one batch whose CORRID holds 7 and 5 (truncated to 32
    // bits).
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.pbtxt");
    std::fs::write(
        &config,
        r#"name: "s10"
backend: "python"
max_batch_size: 2
input [ { name: "X" data_type: TYPE_FP32 dims: [ 1 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ 1 ] } ]
sequence_batching {
  direct { }
  control_input [
    { name: "START" control [ { kind: CONTROL_SEQUENCE_START bool_false_true: [ false, true ] } ] },
    { name: "READY" control [ { kind: CONTROL_SEQUENCE_READY int32_false_true: [ 0, 1 ] } ] },
    { name: "CORRID" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_INT32 } ] }
  ]
}
"#,
    )
    .unwrap();
    let trace = format!(
        "{{\"id\": \"a\", \"arrival_us\": 0, \"sequence_id\": 7, \"start\": true}}\n\
         {{\"id\": \"b\", \"arrival_us\": 0, \"sequence_id\": {}, \"start\": true}}\n",
        (1u64 << 32) + 5
    );
    let out = tritonctl()
        .arg("simulate")
        .arg("--config")
        .arg(&config)
        .args(["--trace", "-", "--latency", "1000", "--format", "json"])
        .stdin(trace)
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    let batches = doc["batches"].as_array().unwrap();
    assert_eq!(batches.len(), 1, "{doc}");
    assert_eq!(batches[0]["requests"], serde_json::json!(["a", "b"]));
    let controls = batches[0]["controls"].as_array().unwrap();
    let by_name = |name: &str| {
        controls
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no control {name} in {controls:?}"))
    };
    assert_eq!(controls.len(), 3);
    let start = by_name("START");
    assert_eq!(start["datatype"], "BOOL");
    assert_eq!(start["kind"], "START");
    assert_eq!(start["shape"], serde_json::json!([2, 1]));
    assert_eq!(start["data"], serde_json::json!([[true], [true]]));
    let ready = by_name("READY");
    assert_eq!(ready["datatype"], "INT32");
    assert_eq!(ready["data"], serde_json::json!([[1], [1]]));
    let corrid = by_name("CORRID");
    assert_eq!(corrid["datatype"], "INT32");
    assert_eq!(corrid["data"], serde_json::json!([[7], [5]]));

    // A sequence model without control inputs has no "controls".
    let plain = dir.path().join("plain.pbtxt");
    let text = std::fs::read_to_string(&config).unwrap();
    let cut = text.find("  control_input").unwrap();
    std::fs::write(&plain, format!("{}}}\n", &text[..cut])).unwrap();
    let out = tritonctl()
        .arg("simulate")
        .arg("--config")
        .arg(&plain)
        .args(["--trace", "-", "--latency", "1000", "--format", "json"])
        .stdin("{\"id\": \"a\", \"arrival_us\": 0, \"sequence_id\": 7, \"start\": true}\n")
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    let batches = doc["batches"].as_array().unwrap();
    assert_eq!(batches.len(), 1);
    assert!(batches[0]["slots"].is_array());
    assert!(batches[0].get("controls").is_none(), "{doc}");
}

// ---------------------------------------------------------------- ensembles

fn ensemble_repo() -> PathBuf {
    crate_root().join("testdata").join("ensemble-sim")
}

/// Two sequences through `pipeline` (pre: dynamic batcher, max_batch_size
/// 4; stateful: Direct, max_batch_size 2).
const ENSEMBLE_TRACE: &str = r#"{"id": "a", "arrival_us": 0, "sequence_id": 1, "start": true}
{"id": "b", "arrival_us": 100, "sequence_id": 2, "start": true}
{"id": "c", "arrival_us": 5000, "sequence_id": 1}
{"id": "d", "arrival_us": 9000, "sequence_id": 1, "end": true}
{"id": "e", "arrival_us": 9500, "sequence_id": 2, "end": true}
{"id": "f", "arrival_us": 9600, "sequence_id": 3, "start": true, "end": true}
"#;

fn simulate_ensemble(config: &std::path::Path, trace: &str, extra: &[&str]) -> Output {
    tritonctl()
        .arg("simulate")
        .arg("--config")
        .arg(config)
        .args(["--trace", "-"])
        .args(extra)
        .stdin(trace.to_string())
        .run()
}

#[test]
fn an_ensemble_runs_every_request_through_every_step_in_order() {
    let out = simulate_ensemble(
        &ensemble_repo().join("pipeline"),
        ENSEMBLE_TRACE,
        &[
            "--latency",
            "pre=1:1000,4:1600",
            "--latency",
            "stateful=2000",
            "--format",
            "json",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    let batches = doc["batches"].as_array().unwrap();
    let mbs = |m: &str| match m {
        "pre" => 4,
        "stateful" => 2,
        other => panic!("unknown model {other}"),
    };
    // (model, start, end, slot row) of each request's steps.
    let mut steps: std::collections::BTreeMap<String, Vec<(String, u64, u64, Value)>> =
        Default::default();
    let mut last_start = 0;
    for b in batches {
        let model = b["model"].as_str().unwrap().to_string();
        let start = b["start_us"].as_u64().unwrap();
        assert!(start >= last_start, "batches are listed by start time");
        last_start = start;
        assert!(b["size"].as_u64().unwrap() <= mbs(&model), "{b}");
        for id in b["requests"].as_array().unwrap() {
            let id = id.as_str().unwrap();
            let slot = b["slots"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|s| s["request"] == id)
                .cloned()
                .unwrap_or(Value::Null);
            steps.entry(id.to_string()).or_default().push((
                model.clone(),
                start,
                b["end_us"].as_u64().unwrap(),
                slot,
            ));
        }
    }
    let requests = doc["requests"].as_array().unwrap();
    let ids: Vec<&str> = requests.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["a", "b", "c", "d", "e", "f"], "trace order");
    for line in ENSEMBLE_TRACE.lines() {
        let t: Value = serde_json::from_str(line).unwrap();
        let id = t["id"].as_str().unwrap();
        let s = &steps[id];
        let models: Vec<&str> = s.iter().map(|x| x.0.as_str()).collect();
        assert_eq!(models, ["pre", "stateful"], "{id}");
        assert!(s[0].1 >= t["arrival_us"].as_u64().unwrap(), "{id}");
        assert!(
            s[1].1 >= s[0].2,
            "{id}: the second step before the first ended"
        );
        // The stateful step sees the request's sequence and flags.
        let row = &s[1].3;
        assert_eq!(row["sequence_id"], t["sequence_id"], "{id}");
        assert_eq!(
            row["start"],
            t.get("start").cloned().unwrap_or(false.into())
        );
        assert_eq!(row["end"], t.get("end").cloned().unwrap_or(false.into()));
        let r = requests.iter().find(|r| r["id"] == id).unwrap();
        assert_eq!(r["status"], "ok");
        assert_eq!(
            r["end_us"].as_u64(),
            Some(s[1].2),
            "{id}: answered with its last step"
        );
    }
    // a and b arrive together: pre runs them as one batch of 2 after its
    // 1 ms queue delay (1000 + 2 requests: 1200 µs), stateful right after.
    assert_eq!(steps["a"][0].1, 1000);
    assert_eq!(steps["a"][0].2, 2200);
    assert_eq!(steps["a"][1].1, 2200);
    assert_eq!(requests[0]["end_us"], 4200);
    let summary = &doc["summary"];
    assert_eq!(summary["ensemble"], "pipeline");
    assert_eq!(summary["requests"], 6);
    assert!(summary["latency_us"]["p50"].as_u64().is_some());
    let models: Vec<&str> = summary["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["model"].as_str().unwrap())
        .collect();
    assert_eq!(models, ["pre", "stateful"]);
    for m in summary["models"].as_array().unwrap() {
        assert_eq!(m["requests"], 6, "every step request counted: {m}");
        let total: u64 = m["batch_sizes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["size"].as_u64().unwrap() * s["count"].as_u64().unwrap())
            .sum();
        assert_eq!(total, 6);
    }

    // Deterministic: the same output again.
    let again = simulate_ensemble(
        &ensemble_repo().join("pipeline"),
        ENSEMBLE_TRACE,
        &[
            "--latency",
            "pre=1:1000,4:1600",
            "--latency",
            "stateful=2000",
            "--format",
            "json",
        ],
    );
    assert_eq!(again.stdout, out.stdout);
}

#[test]
fn an_ensembles_human_summary_shows_end_to_end_then_each_model() {
    let out = simulate_ensemble(
        &ensemble_repo().join("pipeline").join("config.pbtxt"),
        ENSEMBLE_TRACE,
        &["--latency", "2000"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let e2e = out
        .stdout
        .find("ensemble 'pipeline'")
        .expect("ensemble line");
    let pre = out
        .stdout
        .find("model 'pre': dynamic batching")
        .expect("pre");
    let st = out
        .stdout
        .find("model 'stateful': sequence batching (direct)")
        .expect("stateful");
    assert!(e2e < pre && pre < st, "{}", out.stdout);
    assert!(out.stdout.contains("end to end"), "{}", out.stdout);
}

#[test]
fn ensemble_latency_and_config_errors_are_clear() {
    let dir = ensemble_repo().join("pipeline");
    for (latencies, expect) in [
        (
            vec!["--latency", "nosuch=100"],
            "no composing model of that name; its models: 'pre', 'stateful'",
        ),
        (
            vec!["--latency", "pre=100"],
            "no latency for composing model 'stateful'",
        ),
        (
            vec!["--latency", "100", "--latency", "200"],
            "more than one specification",
        ),
        (
            vec![
                "--latency",
                "pre=100",
                "--latency",
                "pre=200",
                "--latency",
                "5",
            ],
            "'pre' is given twice",
        ),
        (
            vec!["--latency", "100", "--sweep", "max_batch_size=1,2"],
            "--sweep",
        ),
    ] {
        let out = simulate_ensemble(&dir, ENSEMBLE_TRACE, &latencies);
        assert_eq!(out.code, 2, "{latencies:?}: {}", out.stderr);
        assert!(out.stderr.contains(expect), "{latencies:?}: {}", out.stderr);
        assert!(out.stdout.is_empty());
    }

    // The ensemble's config without its repository.
    let tmp = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(dir.join("config.pbtxt")).unwrap();
    std::fs::write(tmp.path().join("pipeline.pbtxt"), &text).unwrap();
    let out = simulate_ensemble(
        &tmp.path().join("pipeline.pbtxt"),
        ENSEMBLE_TRACE,
        &["--latency", "100"],
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("--config REPO/pipeline"),
        "{}",
        out.stderr
    );
    std::fs::create_dir(tmp.path().join("pipeline")).unwrap();
    std::fs::write(tmp.path().join("pipeline").join("config.pbtxt"), &text).unwrap();
    let out = simulate_ensemble(
        &tmp.path().join("pipeline"),
        ENSEMBLE_TRACE,
        &["--latency", "100"],
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("composing model 'pre' is not a model directory"),
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains("cannot be simulated"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_single_model_takes_one_latency_bare_or_named() {
    let trace = "{\"arrival_us\": 0}\n";
    let out = simulate_stdin("dynamic.pbtxt", trace, &["--latency", "2000"]);
    assert_eq!(out.code, 2, "two --latency for one model: {}", out.stderr);
    assert!(out.stderr.contains("given 2 times"), "{}", out.stderr);
    let cfg = ensemble_repo().join("pre");
    let out = simulate_ensemble(
        &cfg,
        trace,
        &["--latency", "pre=1:1000,4:1600", "--format", "json"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let named: Value = serde_json::from_str(&out.stdout).unwrap();
    let out = simulate_ensemble(
        &cfg,
        trace,
        &["--latency", "1:1000,4:1600", "--format", "json"],
    );
    let bare: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(named, bare);
    assert!(
        named["batches"][0].get("model").is_none(),
        "single-model output unchanged"
    );
    let out = simulate_ensemble(&cfg, trace, &["--latency", "other=1000"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("the model simulated is 'pre'"),
        "{}",
        out.stderr
    );
}
