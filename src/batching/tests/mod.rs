//! Worked examples of docs/spec/schedulers.md (§2.9, §3.11) and invariants.
//! Expected values are transcribed from the spec.

use super::*;
use crate::config::ParsedConfig;
use std::collections::BTreeMap;

const MS: u64 = 1_000;
const S: u64 = 1_000_000;

fn settings(pbtxt: &str) -> Settings {
    let p = ParsedConfig::parse(pbtxt.to_string());
    let cfg = p.config.as_ref().expect("test config parses");
    Settings::from_config(cfg).expect("simulatable")
}

fn run(s: &Settings, latency_us: u64, trace: Vec<Request>) -> CollectSink {
    let mut sink = CollectSink::default();
    simulate(s, &Latency::constant(latency_us), trace, &mut sink);
    sink
}

fn req(id: &str, t: u64, size: u32) -> Request {
    Request {
        batch_size: size,
        ..Request::new(id, t)
    }
}

fn sreq(id: &str, t: u64, corr: u64, start: bool, end: bool) -> Request {
    Request {
        sequence_id: Some(CorrId::Int(corr)),
        start,
        end,
        ..Request::new(id, t)
    }
}

/// (start_us, instance, request ids) per batch.
fn batches(sink: &CollectSink) -> Vec<(u64, usize, Vec<&str>)> {
    sink.batches
        .iter()
        .map(|b| {
            (
                b.start_us,
                b.instance,
                b.requests.iter().map(String::as_str).collect(),
            )
        })
        .collect()
}

fn record<'a>(sink: &'a CollectSink, id: &str) -> &'a RequestRecord {
    let v: Vec<_> = sink.requests.iter().filter(|r| r.id == id).collect();
    assert_eq!(v.len(), 1, "request {id} must end exactly once");
    v[0]
}

fn histogram(sink: &CollectSink) -> BTreeMap<u32, usize> {
    let mut h = BTreeMap::new();
    for b in &sink.batches {
        *h.entry(b.size).or_insert(0) += 1;
    }
    h
}

mod controls;
mod direct;
mod driver;
mod dynamic;
mod oldest;
mod pipeline;
mod props;

use direct::{direct_rows, skip_batch_trace};
use driver::drive_at_completion;
use oldest::oldest_trace;

// ---------------------------------------------------------------- latency

#[test]
fn latency_points_interpolate_and_extrapolate() {
    let l = Latency::parse("1:2000, 2:2400, 4:3100, 8:4600").unwrap();
    assert_eq!(l.eval(1), 2000);
    assert_eq!(l.eval(2), 2400);
    assert_eq!(l.eval(3), 2750);
    assert_eq!(l.eval(6), 3850);
    assert_eq!(l.eval(16), 7600);
    let l = Latency::parse("2000+150*b").unwrap();
    assert_eq!(l.eval(4), 2600);
    assert_eq!(Latency::parse("500").unwrap().eval(9), 500);
    assert!(Latency::parse("1:2000,x").is_err());
    assert!(Latency::parse("0:5").is_err());
    assert!(Latency::parse("").is_err());
}

#[test]
fn settings_from_config() {
    let s = settings(
        r#"name: "m" max_batch_size: 8
           instance_group [{count: 2}, {count: 0}]
           dynamic_batching { priority_levels: 2 default_priority_level: 2
             default_queue_policy { max_queue_size: 3 }
             priority_queue_policy { key: 1 value { timeout_action: DELAY default_timeout_microseconds: 7 } } }"#,
    );
    assert_eq!(s.instances, 3);
    let SchedulerKind::Dynamic(d) = &s.kind else {
        panic!("dynamic expected")
    };
    assert_eq!(d.preferred, vec![8]);
    assert_eq!(d.default_level, 1);
    assert_eq!(d.levels.len(), 2);
    assert_eq!(d.levels[0].timeout_action, TimeoutAction::Delay);
    assert_eq!(d.levels[0].max_queue_size, 0);
    assert_eq!(d.levels[1].max_queue_size, 3);
    let s = settings(r#"name: "m" max_batch_size: 2 sequence_batching { oldest {} }"#);
    let SchedulerKind::Oldest(o) = &s.kind else {
        panic!("oldest expected")
    };
    assert_eq!(o.max_candidate_sequences, 2);
    assert_eq!(o.seq.idle_us, 1_000_000);
    assert_eq!(s.instances, 1);
}

#[test]
fn sizes_no_machine_could_hold_are_refused_with_a_message() {
    let err = |text: &str| {
        let cfg = ParsedConfig::parse(text.to_string()).config.unwrap();
        Settings::from_config(&cfg).err()
    };
    assert_eq!(
        err(r#"name: "m" max_batch_size: 2 sequence_batching { oldest { max_candidate_sequences: 2000000000 } }"#)
            .as_deref(),
        Some(
            "the sequence batcher would hold 2000000000 sequence slots (2000000000 per instance from \
             max_candidate_sequences, 1 instance(s)); tritonctl holds at most 1048576"
        )
    );
    let e = err(
        r#"name: "m" max_batch_size: 2000000 instance_group [ { count: 2 } ] sequence_batching { direct {} }"#,
    )
    .unwrap();
    assert!(
        e.contains("4000000 sequence slots") && e.contains("from max_batch_size"),
        "{e}"
    );
    let e = err(r#"name: "m" max_batch_size: 2 instance_group [ { count: 100000 } ]"#).unwrap();
    assert_eq!(
        e,
        "instance_group asks for 100000 model instances; tritonctl runs and simulates at most 4096"
    );
    // The limits themselves are accepted.
    assert_eq!(
        err(
            r#"name: "m" max_batch_size: 2 instance_group [ { count: 2 } ] sequence_batching { oldest { max_candidate_sequences: 524288 } }"#
        ),
        None
    );
}

#[test]
fn without_priority_levels_only_the_default_policy_applies() {
    // Triton's PriorityQueue instantiates just the default policy when
    // priority_levels is 0 (docs/spec/schedulers.md §2.2); a policy listed
    // for key 1 is ignored.
    let s = settings(
        r#"name: "m" max_batch_size: 8
           dynamic_batching {
             default_queue_policy { max_queue_size: 2 }
             priority_queue_policy { key: 1 value { max_queue_size: 1 default_timeout_microseconds: 5 } } }"#,
    );
    let SchedulerKind::Dynamic(d) = &s.kind else {
        panic!("dynamic expected")
    };
    assert_eq!(d.levels.len(), 1);
    assert_eq!(d.levels[0].max_queue_size, 2);
    assert_eq!(d.levels[0].default_timeout_us, 0);
    // Through the scheduler: the third request (not the second) overflows.
    let sink = run(
        &s,
        1_000_000,
        vec![
            req("a", 0, 8),
            req("b", 1, 1),
            req("c", 2, 1),
            req("d", 3, 1),
        ],
    );
    assert_eq!(record(&sink, "b").status, Status::Ok);
    assert_eq!(record(&sink, "c").status, Status::Ok);
    assert_eq!(record(&sink, "d").status, Status::Rejected);
}

// ---------------------------------------------------------------- default

#[test]
fn default_scheduler_one_request_per_execution_fifo() {
    let s = settings(r#"name: "m" max_batch_size: 8 instance_group [{count: 2}]"#);
    let out = run(
        &s,
        10 * MS,
        vec![req("a", 0, 2), req("b", 0, 1), req("c", 0, 1)],
    );
    assert_eq!(
        batches(&out),
        vec![
            (0, 0, vec!["a"]),
            (0, 1, vec!["b"]),
            (10 * MS, 0, vec!["c"])
        ]
    );
}

// ---------------------------------------------------------------- output

#[test]
fn stats_sink_counts_like_triton_statistics() {
    let one = settings(r#"name: "m" max_batch_size: 4 sequence_batching { direct {} }"#);
    let mut stats = Stats::default();
    let mut trace = skip_batch_trace();
    trace.push(sreq("bad", 0, 77, false, false));
    simulate(&one, &Latency::constant(MS), trace, &mut stats);
    assert_eq!(stats.batch_sizes, [(4, 2), (2, 2)].into_iter().collect());
    assert_eq!(
        (stats.requests, stats.ok, stats.rejected, stats.executions),
        (13, 12, 1, 4)
    );
    assert_eq!(stats.last_end_us, 4 * MS);
}

#[test]
fn records_serialize_in_the_cli_json_shape() {
    let s = settings(r#"name: "m" max_batch_size: 2 sequence_batching { direct {} }"#);
    let out = run(&s, 2000, vec![sreq("r1", 0, 7, true, false)]);
    let r = serde_json::to_value(&out.requests[0]).unwrap();
    assert_eq!(r["id"], "r1");
    assert_eq!(r["sequence_id"], 7);
    assert_eq!(r["status"], "ok");
    assert_eq!(
        (r["start_us"].as_u64(), r["end_us"].as_u64()),
        (Some(0), Some(2000))
    );
    assert_eq!(
        (
            r["instance"].as_u64(),
            r["slot"].as_u64(),
            r["batch"].as_u64()
        ),
        (Some(0), Some(0), Some(0))
    );
    let b = serde_json::to_value(&out.batches[0]).unwrap();
    assert_eq!(b["size"], 1);
    assert_eq!(b["requests"], serde_json::json!(["r1"]));
    assert_eq!(
        b["slots"],
        serde_json::json!([
            {"slot": 0, "request": "r1", "sequence_id": 7, "start": true, "end": false, "ready": true, "corrid": 7},
            {"slot": 1, "request": null, "sequence_id": null, "start": false, "end": false, "ready": false, "corrid": 0}
        ])
    );
    let timed = Status::TimedOut;
    assert_eq!(serde_json::to_value(timed).unwrap(), "timed_out");
    let s = serde_json::to_value(CorrId::Str("abc".into())).unwrap();
    assert_eq!(s, "abc");
}

// ---------------------------------------------------------------- huge times

#[test]
fn times_near_u64_max_saturate() {
    let near = u64::MAX - 10;
    let policy = QueuePolicy {
        timeout_action: TimeoutAction::Delay,
        default_timeout_us: u64::MAX,
        allow_timeout_override: true,
        max_queue_size: 0,
    };
    let seq = SequenceSettings { idle_us: u64::MAX };
    let kinds = [
        SchedulerKind::Default,
        SchedulerKind::Dynamic(DynamicSettings {
            preferred: vec![4],
            max_queue_delay_us: u64::MAX,
            preserve_ordering: true,
            levels: vec![
                policy.clone(),
                QueuePolicy {
                    timeout_action: TimeoutAction::Reject,
                    ..policy
                },
            ],
            default_level: 0,
            prefetch: false,
        }),
        SchedulerKind::Dynamic(DynamicSettings {
            preferred: vec![4],
            max_queue_delay_us: u64::MAX,
            preserve_ordering: true,
            levels: vec![QueuePolicy::default()],
            default_level: 0,
            prefetch: true,
        }),
        SchedulerKind::Direct(DirectSettings {
            seq: seq.clone(),
            max_queue_delay_us: u64::MAX,
            minimum_slot_utilization: 1.0,
        }),
        SchedulerKind::Oldest(OldestSettings {
            seq,
            max_candidate_sequences: 1,
            preferred: vec![4],
            max_queue_delay_us: u64::MAX,
            preserve_ordering: true,
        }),
    ];
    let latencies = [
        Latency::constant(u64::MAX),
        Latency::Linear { a: 1e300, b: 1e300 },
        Latency::constant(3),
    ];
    for kind in kinds {
        let s = Settings {
            model: "m".into(),
            max_batch_size: 4,
            instances: 2,
            instance_list: Vec::new(),
            active: Vec::new(),
            enforce_shapes: false,
            kind,
        };
        for lat in &latencies {
            let trace: Vec<Request> = (0..12u64)
                .map(|i| {
                    let t = if i < 4 {
                        i * 1000
                    } else {
                        near.saturating_add(i)
                    };
                    let mut r = Request {
                        timeout_us: [0, u64::MAX, u64::MAX - 1, 5][i as usize % 4],
                        priority: (i % 3) as u32,
                        ..req(&format!("r{i}"), t, 1)
                    };
                    r.sequence_id = Some(CorrId::Int(i % 3 + 1));
                    r.start = i < 3 || i % 5 == 0;
                    r.end = i % 7 == 6;
                    r
                })
                .collect();
            let mut out = CollectSink::default();
            simulate(&s, lat, trace.clone(), &mut out);
            assert_eq!(out.requests.len(), trace.len(), "{:?} {lat:?}", s.kind);
            for r in &out.requests {
                assert!(r.end_us.unwrap() >= r.arrival_us);
            }
            assert!(
                out.requests
                    .iter()
                    .any(|r| r.status == Status::Ok && r.arrival_us >= near),
                "{:?}: requests near the end of time run",
                s.kind
            );
            let d = drive_at_completion(&s, std::slice::from_ref(lat), trace.clone());
            assert_eq!(d.sink.requests.len(), trace.len());
        }
    }
    assert_eq!(Latency::Linear { a: 1e300, b: 1e300 }.eval(4), u64::MAX);
}
