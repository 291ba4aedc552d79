//! `perf`'s perf_analyzer measurement flags against the loopback responder
//! of `perf.rs`: `-l`/`--binary-search`, `--collect-metrics`,
//! `--percentile` in the JSON and CSV, `--progress` as plain lines, and
//! `--input-data DIR`.

use super::{
    csv_row, gpu_utilization, perf_json, perf_run, triton_like, u, Behaviour, Responder, HANG,
};
use crate::common::tritonctl;
use serde_json::Value;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// The loads of the levels, in the order measured.
fn loads(doc: &Value) -> Vec<u64> {
    doc["levels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| u(&l["concurrency"]))
        .collect()
}

/// Every request holds the responder's one model lock for 20 ms, so at
/// concurrency c a request's mean latency is c × 20 ms or a little more
/// (Little's law: 50 requests per second with c in flight).
fn twenty_ms_per_request() -> Responder {
    Responder::start(Behaviour {
        delay: Some(Duration::from_millis(20)),
        ..triton_like()
    })
}

/// Measured after a warm-up, so that every level is in its steady state.
const STEADY: [&str; 4] = ["--warmup", "0.3", "--request-count", "20"];

#[test]
fn binary_search_finds_the_highest_concurrency_under_the_threshold() {
    let r = twenty_ms_per_request();
    let url = r.url();
    // concurrency 3 takes about 60 ms, 4 about 80 ms: 75 ms lies between
    // (with room for the sleeps of a busy machine to overshoot)
    let mut args = vec![
        "-m",
        "m",
        "-u",
        &url,
        "--concurrency-range",
        "1:32",
        "-l",
        "75",
        "--binary-search",
    ];
    args.extend(STEADY);
    let (code, doc) = perf_json(&args);
    assert_eq!(code, 0, "{doc:#}");
    // perf_analyzer's path: the start, the end, then halving the interval
    // between the highest passing and the lowest failing load until they
    // are one step apart: 2 + ceil(log2(31)) levels, not 32
    assert_eq!(loads(&doc), [1, 32, 16, 8, 4, 2, 3], "{doc:#}");
    let met: Vec<bool> = doc["levels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["latency_threshold_met"].as_bool().unwrap())
        .collect();
    assert_eq!(met, [true, false, false, false, false, true, true]);
    assert_eq!(doc["binary_search"]["highest_passing"], 3);
    assert_eq!(doc["binary_search"]["levels_measured"], 7);
    assert_eq!(doc["latency_threshold_ms"], 75.0);
    // each verdict follows from the level's own mean latency
    for l in doc["levels"].as_array().unwrap() {
        let mean = l["latency_us"]["mean"].as_f64().unwrap();
        assert_eq!(l["latency_threshold_met"], mean < 75_000.0, "{l:#}");
    }
    assert!(r.bad().is_empty(), "{:?}", r.bad());

    // the table says it in a line under it
    let (code, out, err) = perf_run(&args);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(
            "latency threshold 75 ms (mean latency): binary search over 7 levels: the highest within it is concurrency 3"
        ),
        "{out}"
    );
}

#[test]
fn latency_threshold_stops_the_sweep_and_no_passing_level_is_exit_1() {
    let r = twenty_ms_per_request();
    let url = r.url();
    let mut args = vec![
        "-m",
        "m",
        "-u",
        &url,
        "--concurrency-range",
        "1:8",
        "-l",
        "75",
    ];
    args.extend(STEADY);
    let (code, doc) = perf_json(&args);
    assert_eq!(code, 0, "{doc:#}");
    // the sweep stops at the first level above the threshold
    assert_eq!(loads(&doc), [1, 2, 3, 4], "{doc:#}");
    assert_eq!(doc["levels"][3]["latency_threshold_met"], false);
    assert!(doc["binary_search"].is_null());
    let (code, out, _) = perf_run(&args);
    assert_eq!(code, 0);
    assert!(
        out.contains(
            "latency threshold 75 ms (mean latency): the sweep stopped at concurrency 4, which is above it"
        ),
        "{out}"
    );

    // even the lowest load is above it: no answer, exit 1
    let mut args = vec![
        "-m",
        "m",
        "-u",
        &url,
        "--concurrency-range",
        "1:8",
        "--latency-threshold",
        "5",
        "--binary-search",
    ];
    args.extend(STEADY);
    let (code, doc) = perf_json(&args);
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(loads(&doc), [1]);
    assert!(doc["binary_search"]["highest_passing"].is_null());
    let (code, _, err) = perf_run(&args);
    assert_eq!(code, 1);
    assert!(
        err.contains("no level measured is within the latency threshold of 5 ms"),
        "{err}"
    );

    // with --percentile the threshold applies to that percentile
    let mut args = vec![
        "-m",
        "m",
        "-u",
        &url,
        "--concurrency-range",
        "2",
        "-l",
        "1000",
        "--percentile",
        "90",
    ];
    args.extend(STEADY);
    let (code, doc) = perf_json(&args);
    assert_eq!(code, 0);
    assert_eq!(doc["levels"][0]["latency_threshold_met"], true);
    let (_, out, _) = perf_run(&args);
    assert!(
        out.contains("latency threshold 1000 ms (p90 latency): every level measured is within it"),
        "{out}"
    );
}

#[test]
fn binary_search_and_latency_threshold_usage_errors() {
    for (args, needle) in [
        (
            vec!["--binary-search", "--concurrency-range", "1:4"],
            "--latency-threshold",
        ),
        (
            vec!["-l", "10", "--binary-search", "--concurrency-range", "4"],
            "END",
        ),
        (vec!["-l", "10", "--binary-search"], "--concurrency-range"),
        (vec!["-l", "0"], "above 0"),
        (vec!["-l", "-3"], ""),
        (vec!["--metrics-url", "h:1/metrics"], "--collect-metrics"),
        (
            vec!["--collect-metrics", "--metrics-url", "https://h/metrics"],
            "http://",
        ),
        (
            vec!["--collect-metrics", "--metrics-interval", "0"],
            "metrics-interval",
        ),
    ] {
        let mut a = vec!["-m", "m", "-u", "127.0.0.1:1"];
        a.extend(&args);
        let (code, _, err) = perf_run(&a);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn percentile_is_in_the_json_and_the_csv() {
    let r = Responder::start(Behaviour {
        delay: Some(Duration::from_millis(1)),
        ..triton_like()
    });
    let url = r.url();
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("out.csv");
    let (code, doc) = perf_json(&[
        "-m",
        "m",
        "-u",
        &url,
        "--request-count",
        "40",
        "--percentile",
        "85",
        "-f",
        csv.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(doc["percentile"], 85);
    let l = &doc["levels"][0];
    let p85 = u(&l["percentile_latency_us"]);
    let lat = &l["latency_us"];
    assert!(u(&lat["p50"]) <= p85 && p85 <= u(&lat["p90"]), "{l:#}");
    // perf_analyzer's CSV: p85 among the percentiles in order, and no Avg
    // latency column when --percentile is given
    let text = std::fs::read_to_string(&csv).unwrap();
    let head = text.lines().next().unwrap();
    assert!(
        head.contains("Client Recv,p50 latency,p85 latency,p90 latency,p95 latency,p99 latency,request/response,response wait"),
        "{head}"
    );
    let row = csv_row(&text, "1");
    assert_eq!(row["p85 latency"], p85 as f64);
    assert!(!row.contains_key("Avg latency"));

    // without it: null, and the CSV keeps its usual columns
    let (_, doc) = perf_json(&[
        "-m",
        "m",
        "-u",
        &url,
        "--request-count",
        "5",
        "-f",
        csv.to_str().unwrap(),
    ]);
    assert!(doc["percentile"].is_null());
    assert!(doc["levels"][0]["percentile_latency_us"].is_null());
    let text = std::fs::read_to_string(&csv).unwrap();
    assert!(text
        .lines()
        .next()
        .unwrap()
        .contains("p99 latency,Avg latency,request/response"));
}

/// The mean and max of values over reads `first..=last` of `/metrics`.
fn mean_max(first: u64, last: u64, f: impl Fn(u64) -> f64) -> (f64, f64) {
    let v: Vec<f64> = (first..=last).map(f).collect();
    (
        v.iter().sum::<f64>() / v.len() as f64,
        v.iter().copied().fold(f64::MIN, f64::max),
    )
}

#[test]
fn collect_metrics_reports_gpu_gauges_per_level() {
    let r = Responder::start(Behaviour {
        metrics_gpus: Some(true),
        delay: Some(Duration::from_millis(1)),
        ..triton_like()
    });
    let url = r.url();
    let metrics = format!("http://{url}/metrics");
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("out.csv");
    let (code, doc) = perf_json(&[
        "-m",
        "m",
        "-u",
        &url,
        "--concurrency-range",
        "1:2",
        "--duration",
        "0.6",
        "--collect-metrics",
        "--metrics-url",
        &metrics,
        "--metrics-interval",
        "100",
        "-f",
        csv.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(doc["metrics_url"], format!("{url}/metrics"));
    // the levels read the page one after the other: level 1 got reads
    // 1..=n1, level 2 the next n2; the page's values follow the read
    let mut first = 1;
    let csv_text = std::fs::read_to_string(&csv).unwrap();
    for (i, l) in doc["levels"].as_array().unwrap().iter().enumerate() {
        let m = &l["metrics"];
        let n = u(&m["scrapes"]);
        assert!(
            (3..=12).contains(&n),
            "level {i}: {n} reads in 0.6 s every 100 ms"
        );
        assert_eq!(u(&m["failed_scrapes"]), 0);
        let last = first + n - 1;
        let close = |got: &Value, want: f64| {
            let g = got.as_f64().unwrap();
            assert!((g - want).abs() < 1e-9, "level {i}: {got} != {want}\n{m:#}");
        };
        let (mean, max) = mean_max(first, last, |k| gpu_utilization(k).0);
        close(&m["gpu_utilization"]["GPU-aaaa"]["mean"], mean);
        close(&m["gpu_utilization"]["GPU-aaaa"]["max"], max);
        let (mean_b, _) = mean_max(first, last, |k| gpu_utilization(k).1);
        close(&m["gpu_utilization"]["GPU-bbbb"]["mean"], mean_b);
        let (power, power_max) = mean_max(first, last, |k| 100.0 + k as f64);
        close(&m["gpu_power_usage"]["GPU-aaaa"]["mean"], power);
        close(&m["gpu_power_usage"]["GPU-aaaa"]["max"], power_max);
        close(&m["gpu_power_usage"]["GPU-bbbb"]["mean"], 50.0);
        close(
            &m["gpu_memory_used_bytes"]["GPU-aaaa"]["max"],
            last as f64 * 1e6,
        );
        assert!(m["gpu_memory_used_bytes"].get("GPU-bbbb").is_none());
        close(&m["gpu_memory_total_bytes"]["GPU-aaaa"]["max"], 1.6e10);
        close(&m["gpu_memory_total_bytes"]["GPU-bbbb"]["mean"], 8e9);
        // the CSV: perf_analyzer's --verbose-csv columns, uuid:value; per GPU
        let head: Vec<&str> = csv_text.lines().next().unwrap().split(',').collect();
        let row: Vec<&str> = csv_text
            .lines()
            .map(|l| l.split(',').collect::<Vec<_>>())
            .find(|r| r[0] == (i + 1).to_string())
            .unwrap();
        let cell = |name: &str| row[head.iter().position(|h| *h == name).unwrap()];
        let util = cell("Avg GPU Utilization");
        let parts: Vec<(&str, f64)> = util
            .split_terminator(';')
            .map(|p| {
                let (k, v) = p.split_once(':').unwrap();
                (k, v.parse().unwrap())
            })
            .collect();
        assert_eq!(parts.len(), 2, "{util}");
        assert_eq!(parts[0].0, "GPU-aaaa");
        assert!((parts[0].1 - mean).abs() < 1e-9, "{util}");
        assert_eq!(
            cell("Total GPU Memory"),
            "GPU-aaaa:16000000000;GPU-bbbb:8000000000;"
        );
        first = last + 1;
    }
    // after response wait, before tritonctl's own columns
    assert!(csv_text.lines().next().unwrap().contains(
        "response wait,Avg GPU Utilization,Avg GPU Power Usage,Max GPU Memory Usage,Total GPU Memory,Responses"
    ));
    // no read was lost: every read the page counted is in a level
    assert_eq!(r.counters.scrapes.load(Ordering::SeqCst), first - 1);

    // the table: one row per level and GPU
    let (code, out, _) = perf_run(&[
        "-m",
        "m",
        "-u",
        &url,
        "--duration",
        "0.3",
        "--collect-metrics",
        "--metrics-url",
        &metrics,
        "--metrics-interval",
        "100",
    ]);
    assert_eq!(code, 0);
    assert!(out.contains("GPU metrics per level"), "{out}");
    assert!(
        out.contains("GPU-aaaa") && out.contains("GPU-bbbb"),
        "{out}"
    );
    assert!(out.contains("15258.8"), "16e9 bytes in MiB: {out}");
}

#[test]
fn collect_metrics_without_gpus_is_a_note_and_an_unreachable_endpoint_a_warning() {
    let r = Responder::start(Behaviour {
        metrics_gpus: Some(false),
        ..triton_like()
    });
    let url = r.url();
    let metrics = format!("{url}/metrics");
    let args = [
        "-m",
        "m",
        "-u",
        url.as_str(),
        "--concurrency-range",
        "1:2",
        "--duration",
        "0.2",
        "--collect-metrics",
        "--metrics-url",
        metrics.as_str(),
        "--metrics-interval",
        "50",
    ];
    let (code, out, err) = perf_run(&args);
    assert_eq!(code, 0, "{err}");
    // said once, not per level, and not as an error
    assert_eq!(err.matches("have no GPU metrics").count(), 1, "{err}");
    assert!(err.starts_with("note:") || err.contains("\nnote:"), "{err}");
    assert!(!out.contains("GPU metrics per level"), "{out}");
    let (code, doc) = perf_json(&args);
    assert_eq!(code, 0);
    for l in doc["levels"].as_array().unwrap() {
        assert!(u(&l["metrics"]["scrapes"]) >= 1, "{l:#}");
        assert_eq!(l["metrics"]["gpu_utilization"], serde_json::json!({}));
    }

    // nothing listens there: a warning, the run goes on
    let closed = format!("127.0.0.1:{}/metrics", crate::common::closed_port());
    let (code, doc) = perf_json(&[
        "-m",
        "m",
        "-u",
        &url,
        "--duration",
        "0.2",
        "--collect-metrics",
        "--metrics-url",
        &closed,
    ]);
    assert_eq!(code, 0);
    assert_eq!(u(&doc["levels"][0]["metrics"]["scrapes"]), 0);
    assert!(u(&doc["levels"][0]["metrics"]["failed_scrapes"]) >= 1);
    let (code, _, err) = perf_run(&[
        "-m",
        "m",
        "-u",
        &url,
        "--duration",
        "0.2",
        "--collect-metrics",
        "--metrics-url",
        &closed,
    ]);
    assert_eq!(code, 0);
    assert!(err.contains("could not read the metrics at"), "{err}");
}

#[test]
fn progress_on_a_pipe_is_plain_lines() {
    let r = Responder::start(Behaviour {
        delay: Some(Duration::from_millis(1)),
        ..triton_like()
    });
    let url = r.url();
    // standard error is a pipe here; one level long enough for a periodic
    // line (every 5 s), then a short one
    let (code, _, err) = perf_run(&[
        "-m",
        "m",
        "-u",
        &url,
        "--concurrency-range",
        "1:2",
        "--duration",
        "5.6",
        "--progress",
        "always",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains('\r') && !err.contains('\u{1b}'), "{err:?}");
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("perf: ")).collect();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("perf: level 1 concurrency=1 5.")
                && l.contains(" requests, 0 errors, ")
                && l.ends_with(" req/s")),
        "{err}"
    );
    for level in [
        "level 1 concurrency=1 done: ",
        "level 2 concurrency=2 done: ",
    ] {
        assert_eq!(
            lines.iter().filter(|l| l.contains(level)).count(),
            1,
            "{level}: {err}"
        );
    }
    // the finished lines come in order
    let done: Vec<&&str> = lines.iter().filter(|l| l.contains(" done: ")).collect();
    assert!(
        done[0].contains("level 1") && done[1].contains("level 2"),
        "{err}"
    );
    // auto: nothing on a pipe
    let (code, _, err) = perf_run(&["-m", "m", "-u", &url, "--duration", "0.2"]);
    assert_eq!(code, 0);
    assert!(!err.contains("perf: level"), "{err}");
    let _ = HANG;
}

/// The bytes of f32 values, little-endian.
fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

#[test]
fn input_data_directory_sends_exactly_its_bytes() {
    let r = Responder::start(triton_like());
    let dir = tempfile::tempdir().unwrap();
    let values = [1.5f32, -2.0, 3.25, 1.0e-3];
    std::fs::write(dir.path().join("X"), f32_bytes(&values)).unwrap();
    // a file named after an output is left alone, as perf_analyzer's
    // expected outputs
    std::fs::write(dir.path().join("Y"), b"ignored").unwrap();
    let data = dir.path().to_str().unwrap();
    for format in ["binary", "json"] {
        let (code, doc) = perf_json(&[
            "-m",
            "m",
            "-u",
            &r.url(),
            "--request-count",
            "3",
            "--input-data",
            data,
            "--input-tensor-format",
            format,
        ]);
        assert_eq!(code, 0, "{format}: {doc:#}");
    }
    assert!(r.bad().is_empty(), "{:?}", r.bad());
    let sent = r.counters.x_values.lock().unwrap().clone();
    assert!(sent.len() >= 6, "{sent:?}");
    assert!(sent.iter().all(|x| x == &values), "{sent:?}");

    // batch 2: the batch-1 values twice
    let (code, _) = perf_json(&[
        "-m",
        "m",
        "-u",
        &r.url(),
        "--request-count",
        "1",
        "-b",
        "2",
        "--input-data",
        data,
    ]);
    assert_eq!(code, 0);
    let last = r.counters.x_values.lock().unwrap().last().unwrap().clone();
    assert_eq!(last, [values, values].concat());
}

#[test]
fn input_data_directory_strings_are_one_per_line() {
    let r = Responder::start(Behaviour {
        strings: true,
        ..triton_like()
    });
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("X"), "alpha\nβeta\n\ngamma delta\n").unwrap();
    let (code, doc) = perf_json(&[
        "-m",
        "m",
        "-u",
        &r.url(),
        "--request-count",
        "2",
        "--input-data",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{doc:#}");
    assert!(r.bad().is_empty(), "{:?}", r.bad());
    let sent = r.counters.x_strings.lock().unwrap().clone();
    assert_eq!(sent.len(), 2);
    for s in sent {
        assert_eq!(s, ["alpha", "βeta", "", "gamma delta"]);
    }
}

#[test]
fn input_data_directory_errors_name_the_file() {
    let r = Responder::start(triton_like());
    let url = r.url();
    let run = |dir: &std::path::Path| {
        perf_run(&[
            "-m",
            "m",
            "-u",
            &url,
            "--request-count",
            "1",
            "--input-data",
            dir.to_str().unwrap(),
        ])
    };
    // 15 bytes where 4 FP32 take 16
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("X"), [0u8; 15]).unwrap();
    let (code, _, err) = run(d.path());
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("/X: 15 bytes, but input 'X' (FP32 [4]) takes 16 for a batch of 1"),
        "{err}"
    );
    // a file that is no input
    std::fs::write(d.path().join("X"), [0u8; 16]).unwrap();
    std::fs::write(d.path().join("Z"), [0u8; 16]).unwrap();
    let (code, _, err) = run(d.path());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("/Z: not an input of the model"), "{err}");
    // an input without a file
    let e = tempfile::tempdir().unwrap();
    let (code, _, err) = run(e.path());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no file for input 'X'"), "{err}");
    // a file above --max-file-bytes is refused unread, naming it
    std::fs::write(e.path().join("X"), [0u8; 4096]).unwrap();
    let (code, _, err) = tritonctl()
        .args([
            "--max-file-bytes",
            "1K",
            "perf",
            "-m",
            "m",
            "-u",
            &url,
            "--input-data",
        ])
        .arg(e.path())
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("/X") && err.contains("--max-file-bytes"),
        "{err}"
    );
    // strings: the line count must be the element count
    let s = Responder::start(Behaviour {
        strings: true,
        ..triton_like()
    });
    std::fs::write(d.path().join("X"), "a\nb\n").unwrap();
    std::fs::remove_file(d.path().join("Z")).unwrap();
    let (code, _, err) = perf_run(&[
        "-m",
        "m",
        "-u",
        &s.url(),
        "--request-count",
        "1",
        "--input-data",
        d.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("/X: 2 lines, but input 'X' (BYTES [4]) takes 4 strings"),
        "{err}"
    );
}

#[test]
fn perf_analyzer_measurement_command_lines_run_unchanged() {
    // perf_analyzer's command lines with the flags of this module, as users
    // paste them (the loopback responder serves /metrics too)
    let r = Responder::start(Behaviour {
        delay: Some(Duration::from_millis(3)),
        metrics_gpus: Some(true),
        ..triton_like()
    });
    let url = r.url();
    let metrics_url = format!("{url}/metrics");
    for (line, levels) in [
        // concurrency 1 and 8 are both far under 1 s: the answer is 8
        ("-m m -u URL --concurrency-range 1:8 -p 300 -s 50 --latency-threshold 1000 --binary-search", 2),
        // no END: concurrency 1 takes about 3 ms, 3 about 9 ms
        ("-m m -u URL --concurrency-range 1:0:2 -p 300 -s 50 -l 6", 2),
        ("-m m -u URL --concurrency-range 1 -p 300 -s 50 --collect-metrics --metrics-url URL/metrics --metrics-interval 100", 1),
    ] {
        let args: Vec<&str> = line
            .split(' ')
            .map(|a| match a {
                "URL" => url.as_str(),
                "URL/metrics" => metrics_url.as_str(),
                a => a,
            })
            .collect();
        let (code, doc) = perf_json(&args);
        assert_eq!(code, 0, "{line}: {doc:#}");
        let ls = doc["levels"].as_array().unwrap();
        assert_eq!(ls.len(), levels, "{line}: {doc:#}");
        assert!(ls.iter().all(|l| u(&l["requests"]) > 0 && u(&l["errors"]) == 0), "{line}: {doc:#}");
        if line.contains("--binary-search") {
            assert_eq!(doc["binary_search"]["highest_passing"], 8, "{doc:#}");
        }
        if line.contains("--collect-metrics") {
            assert!(u(&ls[0]["metrics"]["scrapes"]) >= 1, "{doc:#}");
            assert!(ls[0]["metrics"]["gpu_utilization"].get("GPU-aaaa").is_some(), "{doc:#}");
        }
    }
}
