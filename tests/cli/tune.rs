//! `tritonctl tune`, through the binary.

use crate::common::{crate_root, tritonctl, Output};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn densenet() -> PathBuf {
    crate_root().join("testdata/model_repository/densenet_onnx")
}

/// A copy of a model directory of testdata in a temporary directory.
fn copy_model(from: &Path) -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let m = d.path().join(from.file_name().unwrap());
    std::fs::create_dir_all(m.join("1")).unwrap();
    std::fs::copy(from.join("config.pbtxt"), m.join("config.pbtxt")).unwrap();
    (d, m)
}

fn tune(model: &Path, extra: &[&str]) -> Output {
    tritonctl()
        .arg("tune")
        .arg(model)
        .args([
            "--latency",
            "2000+500*b",
            "--rate",
            "1500",
            "--requests",
            "3000",
        ])
        .args(extra)
        .run()
}

#[test]
fn json_names_the_recommended_config_its_prediction_and_every_candidate() {
    let out = tune(&densenet(), &["--slo-p99-ms", "15", "--format", "json"]);
    out.assert_code(0);
    let j = out.json();
    let r = &j["recommended"];
    assert_eq!(j["meets_objective"], true);
    assert_eq!(r["meets_objective"], true);
    // Triton's JSON form of the config, with the searched fields set.
    assert_eq!(r["config"]["name"], "densenet_onnx");
    assert_eq!(r["config"]["instance_group"][0]["count"], r["count"]);
    assert_eq!(
        r["config"]["max_batch_size"],
        r["settings"]["max_batch_size"]
    );
    assert_eq!(
        r["config"]["dynamic_batching"]["max_queue_delay_microseconds"]
            .as_str()
            .map(|s| s.parse::<u64>().unwrap())
            .or(r["config"]["dynamic_batching"]["max_queue_delay_microseconds"].as_u64()),
        r["settings"]["max_queue_delay_microseconds"].as_u64()
    );
    // CPU instances: the count is the instances.
    assert_eq!(r["instances"], r["count"]);
    let lat = &r["predicted"]["latency_us"];
    let p: Vec<u64> = ["p50", "p90", "p95", "p99"]
        .iter()
        .map(|k| lat[k].as_u64().unwrap())
        .collect();
    assert!(p.windows(2).all(|w| w[0] <= w[1]), "{p:?}");
    assert!(p[3] <= 15_000);
    // The cheaper candidate misses the objective.
    let x = &j["rejected"];
    assert_eq!(x["meets_objective"], false);
    assert_eq!(
        x["instances"].as_u64().unwrap() + 1,
        r["instances"].as_u64().unwrap()
    );
    assert!(x["predicted"]["objective_us"]
        .as_u64()
        .is_none_or(|v| v > 15_000));
    // Candidates: each simulated or refused, at most the grid.
    let c = j["candidates"].as_array().unwrap();
    let simulated = j["simulated"].as_u64().unwrap() as usize;
    let grid = j["grid"].as_u64().unwrap() as usize;
    assert!(simulated < grid, "{simulated} of {grid}");
    let refused = c.iter().filter(|c| c.get("refused").is_some()).count();
    assert_eq!(c.len(), simulated + refused);
    let meeting: Vec<&Value> = c.iter().filter(|c| c["meets_objective"] == true).collect();
    assert!(!meeting.is_empty());
    // None of fewer instances meets it; none of as many has a lower p99.
    let instances = r["instances"].as_u64().unwrap();
    for m in &meeting {
        assert!(m["instances"].as_u64().unwrap() >= instances);
        if m["instances"].as_u64().unwrap() == instances {
            assert!(
                m["predicted"]["objective_us"].as_u64().unwrap()
                    >= r["predicted"]["objective_us"].as_u64().unwrap()
            );
        }
    }
}

#[test]
fn no_candidate_meeting_the_objective_is_exit_1_with_the_closest_shown() {
    let (_d, m) = copy_model(&densenet());
    let before = std::fs::read_to_string(m.join("config.pbtxt")).unwrap();
    // No batch runs in under 2.5 ms.
    let out = tune(&m, &["--slo-p99-ms", "1", "--format", "json", "--write"]);
    out.assert_code(1);
    let j = out.json();
    assert_eq!(j["meets_objective"], false);
    assert_eq!(j["recommended"]["meets_objective"], false);
    assert!(
        j["recommended"]["predicted"]["latency_us"]["p99"]
            .as_u64()
            .unwrap()
            > 1000
    );
    assert_eq!(
        std::fs::read_to_string(m.join("config.pbtxt")).unwrap(),
        before
    );
    let out = tune(&m, &["--slo-p99-ms", "1"]);
    out.assert_code(1);
    assert!(
        out.stdout.contains("no candidate meets the objective"),
        "{}",
        out.stdout
    );
}

#[cfg(unix)]
#[test]
fn write_edits_the_config_in_place_keeping_comments_atomically() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let (_d, m) = copy_model(&densenet());
    let file = m.join("config.pbtxt");
    let before = std::fs::read_to_string(&file).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
    let inode = std::fs::metadata(&file).unwrap().ino();
    let out = tune(&m, &["--slo-p99-ms", "15", "--format", "json", "--write"]);
    out.assert_code(0);
    let j = out.json();
    let after = std::fs::read_to_string(&file).unwrap();
    assert_ne!(after, before);
    // Comments and every line not searched are kept, in order.
    let searched = [
        "max_batch_size",
        "count",
        "max_queue_delay_microseconds",
        "preferred_batch_size",
    ];
    let kept = |l: &&str| !searched.iter().any(|s| l.trim_start().starts_with(s));
    let a: Vec<&str> = before.lines().filter(kept).collect();
    let b: Vec<&str> = after.lines().filter(kept).collect();
    assert_eq!(a, b);
    assert!(after.starts_with("# An image classifier exported to ONNX."));
    let r = &j["recommended"]["settings"];
    assert!(after.contains(&format!("max_batch_size: {}\n", r["max_batch_size"])));
    assert!(after.contains(&format!("count: {}\n", j["recommended"]["count"])));
    // Written by rename over the file: a new inode, the permissions kept,
    // no temporary file left.
    assert_ne!(std::fs::metadata(&file).unwrap().ino(), inode);
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o640
    );
    let mut names: Vec<String> = std::fs::read_dir(&m)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["1", "config.pbtxt"]);
    // The written config is the recommended one: tuning it again with the
    // same inputs changes nothing.
    let again = tune(&m, &["--slo-p99-ms", "15", "--format", "json"]);
    again.assert_code(0);
    assert_eq!(
        again.json()["recommended"]["config"],
        j["recommended"]["config"]
    );
    let human = tune(&m, &["--slo-p99-ms", "15"]);
    assert!(
        human
            .stdout
            .contains("the current config is the recommended one"),
        "{}",
        human.stdout
    );
}

#[cfg(unix)]
#[test]
fn a_write_that_fails_leaves_the_config_as_it_was() {
    use std::os::unix::fs::PermissionsExt;
    let (_d, m) = copy_model(&densenet());
    let file = m.join("config.pbtxt");
    let before = std::fs::read_to_string(&file).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o444)).unwrap();
    let out = tune(&m, &["--slo-p99-ms", "15", "--write"]);
    out.assert_code(2);
    assert!(out.stderr.contains("cannot write"), "{}", out.stderr);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), before);
}

#[test]
fn an_exported_perf_run_is_the_same_workload_as_its_trace() {
    let d = tempfile::tempdir().unwrap();
    let gen = tritonctl()
        .args([
            "trace",
            "generate",
            "--rate",
            "1200",
            "--distribution",
            "poisson",
        ])
        .args(["--requests", "2000", "--seed", "5"])
        .run();
    gen.assert_code(0);
    let trace = d.path().join("trace.jsonl");
    std::fs::write(&trace, &gen.stdout).unwrap();
    // The same arrivals as `perf --export-requests` lines: microseconds
    // since the epoch, in completion order (here reversed).
    let mut lines: Vec<String> = gen
        .json_lines()
        .iter()
        .map(|v| {
            let t = 1_700_000_000_000_000u64 + v["arrival_us"].as_u64().unwrap();
            format!(
                "{{\"level\": 0, \"scheduled_us\": {t}, \"send_us\": {}, \"response_us\": [{}], \"error\": null}}",
                t + 40,
                t + 3000
            )
        })
        .collect();
    lines.reverse();
    let export = d.path().join("export.jsonl");
    std::fs::write(&export, lines.join("\n") + "\n").unwrap();
    let run = |f: &Path| {
        let out = tritonctl()
            .arg("tune")
            .arg(densenet())
            .args([
                "--latency",
                "2000+500*b",
                "--slo-p99-ms",
                "12",
                "--format",
                "json",
            ])
            .arg("--trace")
            .arg(f)
            .run();
        out.assert_code(0);
        out.json()
    };
    let (a, b) = (run(&trace), run(&export));
    assert_eq!(a["recommended"], b["recommended"]);
    assert_eq!(a["candidates"], b["candidates"]);
    assert_eq!(a["workload"]["requests"], 2000);
}

#[test]
fn sequence_models_search_both_strategies() {
    let out = tritonctl()
        .arg("tune")
        .arg(crate_root().join("testdata/model_repository/accumulator"))
        .args([
            "--latency",
            "1000+200*b",
            "--rate",
            "300",
            "--requests",
            "1200",
        ])
        .args(["--sequence-length", "4", "--think-time-us", "2000"])
        .args([
            "--slo-p99-ms",
            "20",
            "--max-instances",
            "2",
            "--format",
            "json",
        ])
        .args(["--queue-delays", "0,1000"])
        .run();
    out.assert_code(0);
    let j = out.json();
    let kinds: std::collections::BTreeSet<String> = j["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            c["settings"]["strategy"]["kind"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(kinds.into_iter().collect::<Vec<_>>(), ["direct", "oldest"]);
    // Every request of the workload was answered.
    let p = &j["recommended"]["predicted"];
    assert_eq!(p["ok"], p["requests"]);
    assert_eq!(p["requests"], 1200);
}

#[test]
fn usage_errors_are_exit_2() {
    for args in [
        vec!["--rate", "10", "--slo-p99-ms", "5"],
        vec!["--latency", "1000", "--slo-p99-ms", "5"],
        vec!["--latency", "1000", "--rate", "10"],
        vec![
            "--latency",
            "1000",
            "--rate",
            "10",
            "--slo-ms",
            "5",
            "--slo-percentile",
            "0",
        ],
        vec!["--latency", "1000", "--rate", "10", "--slo-p99-ms", "-1"],
        vec!["--latency", "1000", "--rate", "0", "--slo-p99-ms", "5"],
        vec!["--latency", "nope", "--rate", "10", "--slo-p99-ms", "5"],
    ] {
        let out = tritonctl().arg("tune").arg(densenet()).args(&args).run();
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn a_workload_too_large_to_keep_is_exit_2_naming_the_flag() {
    // Before: each of these allocated until the process was killed.
    for (args, flag) in [
        (
            vec!["--rate", "1000000", "--requests", "100000000000"],
            "--requests 100000000000",
        ),
        (vec!["--rate", "1000000", "--duration", "1e8"], "--duration"),
    ] {
        let out = tritonctl()
            .arg("tune")
            .arg(densenet())
            .args(["--latency", "1:800,8:2000", "--slo-p99-ms", "6"])
            .args(&args)
            .timeout(std::time::Duration::from_secs(60))
            .run();
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(flag), "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains("10000000 requests"), "{}", out.stderr);
        assert!(out.stdout.is_empty());
    }
    let out = tritonctl()
        .arg("tune")
        .arg(crate_root().join("testdata/model_repository/accumulator"))
        .args(["--latency", "1000", "--slo-p99-ms", "6", "--rate", "10"])
        .args(["--sequences", "5000000", "--sequence-length", "3"])
        .args(["--duration", "1e9"])
        .timeout(std::time::Duration::from_secs(60))
        .run();
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("--sequences 5000000"), "{}", out.stderr);
}

#[test]
fn a_workload_no_candidate_answers_is_an_error_not_a_recommendation() {
    // Requests without sequence ids: a sequence model rejects every one.
    let d = tempfile::tempdir().unwrap();
    let export = d.path().join("export.jsonl");
    let lines: Vec<String> = (0..50)
        .map(|i| {
            format!(
                "{{\"level\": 0, \"scheduled_us\": {}, \"sequence_id\": null}}",
                1000 * i
            )
        })
        .collect();
    std::fs::write(&export, lines.join("\n") + "\n").unwrap();
    let out = tritonctl()
        .arg("tune")
        .arg(crate_root().join("testdata/model_repository/accumulator"))
        .args([
            "--latency",
            "1000",
            "--slo-p99-ms",
            "20",
            "--max-instances",
            "2",
        ])
        .arg("--trace")
        .arg(&export)
        .run();
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("no request of the workload was answered"),
        "{}",
        out.stderr
    );
    assert!(out.stdout.is_empty(), "{}", out.stdout);
}
