//! `tune`'s live-server steps as library functions (`perf::curve`,
//! `perf::repository`, `perf::verify`): against the loopback responder of
//! `perf.rs` (statistics with `batch_stats` at known costs, the repository
//! extension), and, when `TRITONCTL_TUNE_TRITON_URL` is set
//! (scripts/perf-harness/run --only tune-live sets it), against real
//! Triton serving the harness's `tune_linear` model.

use crate::perf::{batch_cost_ns, tune_like, Responder};
use serde_json::{json, Value};
use std::time::Duration;
use tritonctl::perf::curve::{self, CurveOptions};
use tritonctl::perf::load::StartError;
use tritonctl::perf::repository::{self, Server};
use tritonctl::perf::verify::{self, Workload};

fn server(r: &Responder) -> Server {
    let mut s = Server::new(r.url());
    s.timeout = Duration::from_secs(10);
    s
}

/// The responder's compute time of one execution of `b` rows, µs:
/// (10,000 + 1,000,000 + 250,000 b + 5,000 b) ns.
fn expected_us(b: u64) -> f64 {
    let (i, f, o) = batch_cost_ns(b);
    (i + f + o) as f64 / 1000.0
}

#[test]
fn the_curve_is_the_compute_time_per_execution_of_each_batch_size() {
    let r = Responder::start(tune_like(false, None));
    let mut opts = CurveOptions::new("m");
    opts.requests = 5;
    let c = curve::measure_curve(&server(&r), &opts).unwrap();
    // max_batch_size 8: 1, 2, 4, 8
    let sizes: Vec<u64> = c.points.iter().map(|p| p.batch_size).collect();
    assert_eq!(sizes, vec![1, 2, 4, 8]);
    for p in &c.points {
        assert_eq!((p.executions, p.requests), (5, 5), "{p:?}");
        // every execution costs the same: median and mean agree
        assert_eq!(p.compute_us, expected_us(p.batch_size), "{p:?}");
        assert_eq!(p.mean_us, p.compute_us, "{p:?}");
    }
    // 1010 + 255 b µs
    assert_eq!(c.latency_spec(), "1:1265,2:1520,4:2030,8:3050");
    // the server saw those requests and 2 unmeasured ones per size first
    assert_eq!(
        r.batches().into_iter().collect::<Vec<_>>(),
        vec![(1, 7), (2, 7), (4, 7), (8, 7)]
    );
    assert!(r.bad().is_empty(), "{:?}", r.bad());
}

#[test]
fn chosen_sizes_and_a_time_budget() {
    let r = Responder::start(tune_like(false, Some(Duration::from_millis(30))));
    let mut opts = CurveOptions::new("m");
    opts.batch_sizes = vec![4, 2, 4];
    opts.requests = 1000;
    // 30 ms per request: the budget stops each size after about 4
    opts.time_per_size = Duration::from_millis(100);
    let c = curve::measure_curve(&server(&r), &opts).unwrap();
    assert_eq!(c.points.len(), 2);
    for p in &c.points {
        assert!((3..=6).contains(&p.requests), "{p:?}");
        assert_eq!(p.executions, p.requests);
        assert_eq!(p.compute_us, expected_us(p.batch_size));
    }
    // above max_batch_size 8: refused before any request
    opts.batch_sizes = vec![16];
    let e = curve::measure_curve(&server(&r), &opts).unwrap_err();
    assert!(
        matches!(&e, StartError::Usage(m) if m.contains("above the model's max_batch_size 8")),
        "{e}"
    );
}

#[test]
fn a_server_that_batched_differently_is_named() {
    let r = Responder::start(tune_like(true, None));
    let mut opts = CurveOptions::new("m");
    opts.requests = 3;
    let e = curve::measure_curve(&server(&r), &opts).unwrap_err();
    // size 1 is right; the 3 requests of size 2 were counted as size 1
    assert!(
        e.to_string().contains(
            "no execution of batch size 2 for model 'm' in its batch_stats after 3 requests of that size; it counted executions of batch size 1 (3×) instead"
        ),
        "{e}"
    );
}

#[test]
fn curve_errors_say_what_is_missing() {
    // an unloaded model
    let mut b = tune_like(false, None);
    let r = Responder::start(b.clone());
    repository::unload_model(&server(&r), "m").unwrap();
    let e = curve::measure_curve(&server(&r), &CurveOptions::new("m")).unwrap_err();
    assert!(
        matches!(&e, StartError::Unreachable(m) if m.starts_with("model 'm' is not ready at 127.0.0.1:") && m.ends_with("HTTP 400: model 'm' is not ready")),
        "{e}"
    );
    // a request slower than the timeout
    b = tune_like(false, Some(Duration::from_millis(800)));
    let r = Responder::start(b);
    let mut s = server(&r);
    s.timeout = Duration::from_millis(300);
    let e = curve::measure_curve(&s, &CurveOptions::new("m")).unwrap_err();
    assert!(
        e.to_string()
            .contains("a request of batch size 1 to model 'm' at 127.0.0.1:")
            && e.to_string().contains("did not answer within 300 ms"),
        "{e}"
    );
    // nobody listening
    let s = Server::new(format!("127.0.0.1:{}", crate::common::closed_port()));
    let e = curve::measure_curve(&s, &CurveOptions::new("m")).unwrap_err();
    assert!(e.to_string().contains("cannot connect"), "{e}");
}

#[test]
fn load_sends_the_config_as_a_json_text_parameter() {
    let r = Responder::start(tune_like(false, None));
    let s = server(&r);
    let cfg = json!({"name": "m", "max_batch_size": 8,
        "dynamic_batching": {"max_queue_delay_microseconds": "500", "preferred_batch_size": [4]},
        "instance_group": [{"kind": "KIND_CPU", "count": 2}]});
    let text = serde_json::to_string_pretty(&cfg).unwrap();
    repository::load_model(&s, "m", Some(&text)).unwrap();
    let loads = r.loads();
    assert_eq!(loads.len(), 1);
    let body: Value = serde_json::from_str(&loads[0]).unwrap();
    // {"parameters": {"config": "<the JSON text>"}}: the text as given
    assert_eq!(body, json!({"parameters": {"config": text}}));
    // what the server now holds, and the curve follows its preferred size
    assert_eq!(repository::model_config(&s, "m").unwrap(), cfg);
    assert_eq!(curve::batch_sizes_of(&cfg), vec![1, 2, 4, 8]);
    // unloaded: not ready; loaded again without a config: ready
    repository::unload_model(&s, "m").unwrap();
    repository::load_model(&s, "m", None).unwrap();
    assert_eq!(r.loads()[1], "{}");
}

#[test]
fn load_errors_carry_the_servers_message_raw() {
    let r = Responder::start(tune_like(false, None));
    let s = server(&r);
    let e = repository::load_model(&s, "m", Some(r#"{"name": "other"}"#)).unwrap_err();
    let m = e.to_string();
    assert!(
        m.starts_with("the server at 127.0.0.1:")
            && m.ends_with(
                "did not load model 'm': HTTP 400: failed to load 'm': the config names model \"other\"\u{1b}[31m"
            ),
        "{m:?}"
    );
    let e = repository::load_model(&s, "nope", None).unwrap_err();
    assert!(
        e.to_string()
            .ends_with("HTTP 400: failed to load 'nope/load', no version is available"),
        "{e}"
    );
    // a server without the extension
    let plain = Responder::start(crate::perf::triton_like());
    let e = repository::load_model(&server(&plain), "m", None).unwrap_err();
    assert!(e.to_string().contains("HTTP 400: unknown request"), "{e}");
}

#[test]
fn a_poisson_level_gives_percentiles() {
    let r = Responder::start(tune_like(false, Some(Duration::from_millis(2))));
    let w = Workload {
        rate: 100.0,
        duration: Duration::from_secs(1),
        seed: 3,
        warmup: Duration::ZERO,
    };
    let m = verify::measure_poisson(&server(&r), "m", &w).unwrap();
    let p = m.latency_us.expect("percentiles");
    assert_eq!(m.errors, 0);
    // about 100 requests in 1 s (Poisson: within ±4 standard deviations)
    assert!((60..=140).contains(&m.requests), "{}", m.requests);
    // each takes at least the responder's 2 ms
    assert!(
        p.p50 >= 2000 && p.p50 <= p.p90 && p.p90 <= p.p95 && p.p95 <= p.p99,
        "{p:?}"
    );
    assert_eq!(m.level.request_rate, Some(100.0));
}

/// Against real Triton (scripts/perf-harness/run --only tune-live): the
/// harness's `tune_linear` model sleeps a + b·batch ms per execution (its
/// config's parameters a_ms and b_ms). The curve must be within 10 % of
/// that at every batch size; a config loaded through the repository
/// extension (2 instances, a queue delay, a preferred size) must be what
/// the server then reports; a Poisson level must give percentiles.
#[test]
fn against_real_triton() {
    let Ok(url) = std::env::var("TRITONCTL_TUNE_TRITON_URL") else {
        eprintln!("skipped: TRITONCTL_TUNE_TRITON_URL is not set (scripts/perf-harness/run --only tune-live)");
        return;
    };
    let s = Server::new(url);
    let model = "tune_linear";
    let cfg = repository::model_config(&s, model).unwrap();
    let param = |k: &str| -> f64 {
        cfg["parameters"][k]["string_value"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap()
    };
    let (a, b) = (param("a_ms"), param("b_ms"));
    let mut opts = CurveOptions::new(model);
    opts.requests = 10;
    let started = std::time::Instant::now();
    let c = curve::measure_curve(&s, &opts).unwrap();
    eprintln!(
        "tune-live: curve in {:.1} s: {} (a + b·batch: a = {a} ms, b = {b} ms)",
        started.elapsed().as_secs_f64(),
        c.latency_spec()
    );
    assert_eq!(
        c.points.iter().map(|p| p.batch_size).collect::<Vec<_>>(),
        vec![1, 2, 4, 8, 16]
    );
    for p in &c.points {
        let want = (a + b * p.batch_size as f64) * 1000.0;
        let off = (p.compute_us - want).abs() / want;
        eprintln!(
            "tune-live: batch {:>2}: {:.0} µs measured, {want:.0} µs expected ({:+.1} %), {} executions",
            p.batch_size,
            p.compute_us,
            (p.compute_us - want) / want * 100.0,
            p.executions
        );
        assert!(
            off <= 0.10,
            "batch {}: {p:?} against {want} µs",
            p.batch_size
        );
        // one execution per request, each counted
        assert_eq!(p.executions, p.requests, "{p:?}");
    }
    // another config through the repository extension
    let mut changed = cfg.clone();
    changed["instance_group"] = json!([{"kind": "KIND_CPU", "count": 2}]);
    changed["dynamic_batching"] =
        json!({"max_queue_delay_microseconds": 2000, "preferred_batch_size": [4, 8]});
    let started = std::time::Instant::now();
    repository::load_model(&s, model, Some(&changed.to_string())).unwrap();
    eprintln!(
        "tune-live: load with 2 instances in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let now = repository::model_config(&s, model).unwrap();
    assert_eq!(now["instance_group"][0]["count"], json!(2), "{now}");
    assert_eq!(
        now["dynamic_batching"]["max_queue_delay_microseconds"]
            .to_string()
            .trim_matches('"'),
        "2000",
        "{now}"
    );
    assert_eq!(
        now["dynamic_batching"]["preferred_batch_size"],
        json!([4, 8]),
        "{now}"
    );
    // a config Triton refuses: its message comes back
    let mut bad = cfg.clone();
    bad["max_batch_size"] = json!(-1);
    let e = repository::load_model(&s, model, Some(&bad.to_string())).unwrap_err();
    eprintln!("tune-live: refused config: {e}");
    assert!(
        e.to_string()
            .contains("did not load model 'tune_linear': HTTP"),
        "{e}"
    );
    // the Poisson level on the loaded config (a failed load leaves the
    // previous one serving, or none: load it again to be sure)
    repository::load_model(&s, model, Some(&changed.to_string())).unwrap();
    let w = Workload {
        rate: 50.0,
        duration: Duration::from_secs(2),
        seed: 1,
        warmup: Duration::from_millis(200),
    };
    let m = verify::measure_poisson(&s, model, &w).unwrap();
    let p = m.latency_us.expect("percentiles");
    eprintln!(
        "tune-live: Poisson 50/s for 2 s: {} requests ({:.1}/s, {} sent late), {} errors, p50 {} p90 {} p95 {} p99 {} µs",
        m.requests, m.requests_per_s, m.level.late_sends, m.errors, p.p50, p.p90, p.p95, p.p99
    );
    assert_eq!(m.errors, 0);
    // no execution is shorter than a + b
    assert!(p.p50 as f64 >= (a + b) * 1000.0 && p.p50 <= p.p99, "{p:?}");
    // a load without a config keeps the one given before; after an
    // unload too (Triton 2.51): printed, to be documented
    repository::load_model(&s, model, None).unwrap();
    let kept = repository::model_config(&s, model).unwrap();
    repository::unload_model(&s, model).unwrap();
    repository::load_model(&s, model, None).unwrap();
    let after_unload = repository::model_config(&s, model).unwrap();
    eprintln!(
        "tune-live: instances after a load without a config: {}; after unload and load: {}",
        kept["instance_group"][0]["count"], after_unload["instance_group"][0]["count"]
    );
    // back to the repository's own config: the one read at the start
    repository::load_model(&s, model, Some(&cfg.to_string())).unwrap();
    let back = repository::model_config(&s, model).unwrap();
    assert_eq!(back["instance_group"][0]["count"], json!(1), "{back}");
}

/// `tune -u --verify` through the binary: the curve measured on the
/// responder, the recommendation and the candidate with one instance fewer
/// loaded (named as the server names the model) and measured, and the
/// server's own config loaded back last.
#[test]
fn tune_verify_measures_both_candidates_and_loads_the_servers_config_back() {
    let r = Responder::start(tune_like(false, None));
    let model = crate::common::crate_root().join("testdata/model_repository/densenet_onnx");
    let out = crate::common::tritonctl()
        .arg("tune")
        .arg(&model)
        .args([
            "-u",
            &r.url(),
            "-m",
            "m",
            "--rate",
            "3000",
            "--requests",
            "6000",
        ])
        .args(["--slo-p99-ms", "20", "--max-instances", "4", "--verify"])
        .args(["--verify-duration", "0.5", "--format", "json"])
        .run();
    out.assert_code(0);
    let j = out.json();
    // the curve: the responder's costs at its sizes 1, 2, 4, 8
    let points = j["measured_curve"]["points"].as_array().unwrap();
    let sizes: Vec<u64> = points
        .iter()
        .map(|p| p["batch_size"].as_u64().unwrap())
        .collect();
    assert_eq!(sizes, vec![1, 2, 4, 8]);
    for p in points {
        let b = p["batch_size"].as_u64().unwrap();
        assert_eq!(p["compute_us"].as_f64().unwrap(), expected_us(b), "{p}");
        // the round trip holds the compute
        assert!(p["request_us"].as_f64().unwrap() > 0.0, "{p}");
    }
    assert_eq!(j["overhead_us"], j["measured_curve"]["overhead_us"]);
    // at 3000/s one instance (at most 8 rows per 3.05 ms) cannot keep up
    let rec = &j["recommended"];
    assert!(rec["instances"].as_u64().unwrap() >= 2, "{rec:#}");
    let v = &j["verify"];
    for what in ["recommended", "rejected"] {
        let c = &v[what];
        assert!(
            c["measured"]["requests"].as_u64().unwrap() > 0,
            "{what}: {c:#}"
        );
        assert_eq!(c["measured"]["errors"], 0, "{what}: {c:#}");
        assert_eq!(c["rate_per_s"], rec["rate_per_s"], "{what}: {c:#}");
    }
    assert_eq!(v["recommended"]["instances"], rec["instances"]);
    assert_eq!(v["rejected"]["instances"], j["rejected"]["instances"]);
    assert_eq!(v["recommended"]["meets_objective"], true, "{v:#}");
    // three loads: the two candidates, then the server's own config
    let loads: Vec<Value> = r
        .loads()
        .iter()
        .map(|b| {
            let body: Value = serde_json::from_str(b).unwrap();
            serde_json::from_str(body["parameters"]["config"].as_str().unwrap()).unwrap()
        })
        .collect();
    assert_eq!(loads.len(), 3, "{loads:#?}");
    let count = |c: &Value| c["instance_group"][0]["count"].as_u64();
    assert_eq!(count(&loads[0]), rec["count"].as_u64(), "{:#}", loads[0]);
    assert_eq!(
        count(&loads[1]),
        j["rejected"]["count"].as_u64(),
        "{:#}",
        loads[1]
    );
    for c in &loads[..2] {
        assert_eq!(c["name"], "m", "{c:#}");
    }
    // the responder's config before any load: no instance group
    assert_eq!(loads[2]["name"], "m");
    assert_eq!(loads[2]["max_batch_size"], 8);
    assert!(loads[2].get("instance_group").is_none(), "{:#}", loads[2]);
    assert!(r.bad().is_empty(), "{:?}", r.bad());
}
