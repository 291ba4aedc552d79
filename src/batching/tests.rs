//! Worked examples of schedulers.md (§2.9, §3.11) and invariants.
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
    // priority_levels is 0 (scheduler_utils.cc); a policy listed for key 1
    // is ignored.
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

// ---------------------------------------------------------------- dynamic

const QA_BATCHER: &str = r#"name: "m" max_batch_size: 8
    dynamic_batching { preferred_batch_size: [2, 6] max_queue_delay_microseconds: 10000000 }"#;

#[test]
fn u1_u2_u6_biggest_preferred_and_waiting() {
    let s = settings(QA_BATCHER);
    // U1: six requests of 1 → one batch of 6.
    let out = run(
        &s,
        100 * MS,
        (0..6).map(|i| req(&format!("r{i}"), 0, 1)).collect(),
    );
    assert_eq!(out.batches.len(), 1);
    assert_eq!(out.batches[0].size, 6);
    // U2: three → first 2 at once, the third waits the full delay.
    let out = run(
        &s,
        100 * MS,
        (0..3).map(|i| req(&format!("r{i}"), 0, 1)).collect(),
    );
    assert_eq!(
        batches(&out),
        vec![(0, 0, vec!["r0", "r1"]), (10 * S, 0, vec!["r2"])]
    );
    // U6 / D1: 7 ≥ MAXP goes at once; 2 and 6 are preferred; 1 and 3 wait.
    for (size, at) in [(7, 0), (2, 0), (6, 0), (1, 10 * S), (3, 10 * S)] {
        let out = run(&s, 100 * MS, vec![req("x", 0, size)]);
        assert_eq!(batches(&out), vec![(at, 0, vec!["x"])], "size {size}");
    }
}

#[test]
fn u7_shape_break() {
    let cfg = r#"name: "m" max_batch_size: 8
        input [{ name: "x" data_type: TYPE_FP32 dims: [DIM] }]
        output [{ name: "y" data_type: TYPE_FP32 dims: [-1] }]
        dynamic_batching { preferred_batch_size: [2, 6] max_queue_delay_microseconds: 10000000 }"#;
    let s = settings(&cfg.replace("DIM", "-1"));
    assert!(s.enforce_shapes);
    let shaped = |id: &str, size: u32, shape: &str| Request {
        shape: Some(shape.into()),
        ..req(id, 0, size)
    };
    let trace = vec![
        shaped("1a", 1, "a"),
        shaped("3a", 3, "a"),
        shaped("1b", 1, "b"),
        shaped("5b", 5, "b"),
    ];
    let out = run(&s, 100 * MS, trace);
    assert_eq!(
        batches(&out),
        vec![(0, 0, vec!["1a", "3a"]), (100 * MS, 0, vec!["1b", "5b"])]
    );
    assert_eq!(out.batches[1].size, 6);
    // Fixed dims: shapes are never compared.
    assert!(!settings(&cfg.replace("DIM", "4")).enforce_shapes);
}

#[test]
fn direct_pads_a_head_with_another_shape() {
    // §3.8 rule 4: the head of slot 1 has another shape than the first
    // ready head, so it is padded and runs in the next batch.
    let s = settings(
        r#"name: "m" max_batch_size: 2
        input [{ name: "x" data_type: TYPE_FP32 dims: [-1] }]
        output [{ name: "y" data_type: TYPE_FP32 dims: [-1] }]
        sequence_batching { direct {} }"#,
    );
    let shaped = |id: &str, corr: u64, shape: &str| Request {
        shape: Some(shape.into()),
        ..sreq(id, 0, corr, true, true)
    };
    let out = run(&s, MS, vec![shaped("a", 1, "x"), shaped("b", 2, "y")]);
    assert_eq!(
        direct_rows(&out),
        vec![
            (0, 0, vec![(Some("a"), true, true), (None, false, false)]),
            (MS, 0, vec![(None, false, false), (Some("b"), true, true)]),
        ]
    );
}

#[test]
fn d2_u5_wait_for_delay() {
    let s = settings(QA_BATCHER);
    let out = run(&s, 100 * MS, vec![req("a", 0, 1), req("b", S, 3)]);
    assert_eq!(batches(&out), vec![(10 * S, 0, vec!["a", "b"])]);
    assert_eq!(out.batches[0].size, 4);
}

#[test]
fn d3_d4_u3_cut_before_exceeding_max_preferred() {
    let s = settings(QA_BATCHER);
    let out = run(&s, 100 * MS, vec![req("a", 0, 3), req("b", S, 7)]);
    assert_eq!(
        batches(&out),
        vec![(S, 0, vec!["a"]), (S + 100 * MS, 0, vec!["b"])]
    );
    let out = run(&s, 100 * MS, vec![req("a", 0, 3), req("b", S, 4)]);
    assert_eq!(
        batches(&out),
        vec![(S, 0, vec!["a"]), (11 * S, 0, vec!["b"])]
    );
}

#[test]
fn u4_expired_delay_uses_max_batch() {
    // U4 is a decision on a queue that holds all three requests (the QA
    // test holds the batcher back until they are queued). Emulated here
    // with x (8) occupying the instance for 11 s and batches formed only
    // for an idle instance: 3 and 4 are then 11 s old.
    let mut s = settings(QA_BATCHER);
    if let SchedulerKind::Dynamic(d) = &mut s.kind {
        d.prefetch = false;
    }
    let trace = || {
        vec![
            req("x", 0, 8),
            req("a", 0, 3),
            req("b", 0, 4),
            req("c", 11 * S, 1),
        ]
    };
    let out = run(&s, 11 * S, trace());
    assert_eq!(
        batches(&out)[..2],
        [(0, 0, vec!["x"]), (11 * S, 0, vec!["a", "b", "c"])]
    );
    assert_eq!(out.batches[1].size, 8);
    // What Triton does with this trace (pipelined mode, this config's
    // default; schedulers.md 2.6, schedulers-observed.md): while x runs,
    // [a] is built ahead (a+b passes MAXP 6), [b] follows when its delay
    // expires at 10 s; at 11 s the instance takes [a] and merges [b] (it
    // waited longer than the delay, 3+4 <= 8); c then waits its own delay.
    let out = run(&settings(QA_BATCHER), 11 * S, trace());
    assert_eq!(
        batches(&out),
        [
            (0, 0, vec!["x"]),
            (11 * S, 0, vec!["a", "b"]),
            (22 * S, 0, vec!["c"])
        ]
    );
}

#[test]
fn pipelined_batches_are_built_while_the_instance_is_busy() {
    // Recorded on Triton 2.51 (testdata/fidelity/dynamic-prefetch, config
    // dynamic-1: max_batch_size 8, preferred 2 and 4, delay 100 ms, one
    // instance, 151.6 ms per batch). r2 (3) is cut into its own payload when
    // r3 (3) arrives (3+3 passes MAXP 4) and stays alone although its delay
    // has expired when the instance frees up; [r5 r6] is built ahead at
    // preferred size 2 and r7 does not wake the batcher (below the stored
    // next preferred size), so it waits its own delay after r5 r6 start.
    let s = settings(
        r#"name: "m" max_batch_size: 8
           dynamic_batching { preferred_batch_size: [2, 4] max_queue_delay_microseconds: 100000 }"#,
    );
    let trace = vec![
        req("r1", 0, 4),
        req("r2", 40 * MS, 3),
        req("r3", 60 * MS, 3),
        req("r4", 600 * MS, 4),
        req("r5", 680 * MS, 1),
        req("r6", 690 * MS, 1),
        req("r7", 700 * MS, 1),
    ];
    let out = run(&s, 151_556, trace);
    let got: Vec<Vec<&str>> = batches(&out).into_iter().map(|b| b.2).collect();
    assert_eq!(
        got,
        [
            vec!["r1"],
            vec!["r2"],
            vec!["r3"],
            vec!["r4"],
            vec!["r5", "r6"],
            vec!["r7"]
        ]
    );
    // testdata/fidelity/dynamic-nodelay: no delay, requests trickling in
    // while the instance is busy: the payload saturates at the smallest
    // preferred size reached ([r2 r3]); r5 cannot join [r4] while two
    // payloads wait (the cap is 2 per instance) and joins it when the
    // instance takes [r2 r3].
    let s = settings(
        r#"name: "m" max_batch_size: 8 dynamic_batching { preferred_batch_size: [2, 4] }"#,
    );
    let trace = (0..5)
        .map(|i| req(&format!("r{}", i + 1), [0, 30, 50, 70, 90][i] * MS, 1))
        .collect();
    let out = run(&s, 151_669, trace);
    let got: Vec<Vec<&str>> = batches(&out).into_iter().map(|b| b.2).collect();
    assert_eq!(got, [vec!["r1"], vec!["r2", "r3"], vec!["r4", "r5"]]);
    // With a priority level, Triton does not build ahead: the batch is
    // formed when the instance frees up, the largest preferred prefix.
    let s = settings(
        r#"name: "m" max_batch_size: 8
           dynamic_batching { preferred_batch_size: [2, 4] priority_levels: 1 default_priority_level: 1 }"#,
    );
    let trace = (0..5)
        .map(|i| req(&format!("r{}", i + 1), [0, 30, 50, 70, 90][i] * MS, 1))
        .collect();
    let out = run(&s, 151_669, trace);
    let got: Vec<Vec<&str>> = batches(&out).into_iter().map(|b| b.2).collect();
    assert_eq!(got, [vec!["r1"], vec!["r2", "r3", "r4", "r5"]]);
}

#[test]
fn u8_to_u13_no_delay() {
    let s = settings(
        r#"name: "m" max_batch_size: 8 dynamic_batching { preferred_batch_size: [4, 6] }"#,
    );
    let sizes = |n: usize| {
        let out = run(
            &s,
            100 * MS,
            (0..n).map(|i| req(&format!("r{i}"), 0, 1)).collect(),
        );
        out.batches.iter().map(|b| b.size).collect::<Vec<_>>()
    };
    assert_eq!(sizes(5), vec![4, 1]);
    assert_eq!(sizes(7), vec![6, 1]);
    assert_eq!(sizes(3), vec![3]);
    let s =
        settings(r#"name: "m" max_batch_size: 4 dynamic_batching { preferred_batch_size: [4] }"#);
    let out = run(&s, 100 * MS, vec![req("a", 0, 3), req("b", 0, 2)]);
    assert_eq!(
        batches(&out),
        vec![(0, 0, vec!["a"]), (100 * MS, 0, vec!["b"])]
    );
    let s = settings(r#"name: "m" max_batch_size: 100 dynamic_batching {}"#);
    let out = run(
        &s,
        100 * MS,
        (0..12).map(|i| req(&format!("r{i}"), 0, 1)).collect(),
    );
    assert_eq!(out.batches.len(), 1);
    assert_eq!(out.batches[0].size, 12);
    let s = settings(r#"name: "m" max_batch_size: 0 dynamic_batching {}"#);
    let out = run(
        &s,
        100 * MS,
        (0..3).map(|i| req(&format!("r{i}"), 0, 1)).collect(),
    );
    assert_eq!(
        out.batches.iter().map(|b| b.size).collect::<Vec<_>>(),
        vec![1, 1, 1]
    );
}

const QA_QUEUE: &str = r#"name: "m" max_batch_size: 32
    dynamic_batching { preferred_batch_size: [4, 8] max_queue_delay_microseconds: 10000000
      default_queue_policy { timeout_action: ACTION default_timeout_microseconds: 100000 } }"#;

#[test]
fn d5_delay_policy_parks_request() {
    let s = settings(&QA_QUEUE.replace("ACTION", "DELAY"));
    let trace = vec![req("A", 0, 1), req("B", 200 * MS, 2), req("C", 200 * MS, 2)];
    let out = run(&s, 100 * MS, trace);
    assert_eq!(
        batches(&out),
        vec![(200 * MS, 0, vec!["B", "C"]), (10 * S, 0, vec!["A"])]
    );
}

#[test]
fn d6_reject_policy_times_out() {
    let s = settings(&QA_QUEUE.replace("ACTION", "REJECT"));
    let trace = vec![req("A", 0, 1), req("B", 200 * MS, 2), req("C", 200 * MS, 2)];
    let out = run(&s, 100 * MS, trace);
    assert_eq!(batches(&out), vec![(200 * MS, 0, vec!["B", "C"])]);
    let a = record(&out, "A");
    assert_eq!(a.status, Status::TimedOut);
    assert_eq!(a.reason.as_deref(), Some("Request timeout expired"));
    assert_eq!(a.end_us, Some(100 * MS));
}

#[test]
fn d7_timeout_override_only_shortens() {
    let cfg = r#"name: "m" max_batch_size: 32
        dynamic_batching { preferred_batch_size: [4, 8] max_queue_delay_microseconds: 10000000
          default_queue_policy { default_timeout_microseconds: 1000000 allow_timeout_override: true } }"#;
    let s = settings(cfg);
    for (own, expired_at) in [(100 * MS, 100 * MS), (5 * S, S)] {
        let a = Request {
            timeout_us: own,
            ..req("A", 0, 1)
        };
        let out = run(
            &s,
            100 * MS,
            vec![a, req("B", 200 * MS, 2), req("C", 200 * MS, 2)],
        );
        if own == 100 * MS {
            assert_eq!(batches(&out), vec![(200 * MS, 0, vec!["B", "C"])]);
        }
        let a = record(&out, "A");
        assert_eq!(a.status, Status::TimedOut);
        assert_eq!(a.end_us, Some(expired_at), "own timeout {own}");
    }
}

#[test]
fn d8_max_queue_size_rejects() {
    let s = settings(
        r#"name: "m" max_batch_size: 32
        dynamic_batching { preferred_batch_size: [4, 8] default_queue_policy { max_queue_size: 8 } }"#,
    );
    let mut trace = vec![req("R0", 0, 8)];
    trace.extend((1..=10).map(|i| req(&format!("R{i}"), 500 * MS, 1)));
    let out = run(&s, 5 * S, trace);
    let b = batches(&out);
    assert_eq!(b[0], (0, 0, vec!["R0"]));
    assert_eq!(
        b[1],
        (
            5 * S,
            0,
            vec!["R1", "R2", "R3", "R4", "R5", "R6", "R7", "R8"]
        )
    );
    assert_eq!(b.len(), 2);
    for id in ["R9", "R10"] {
        let r = record(&out, id);
        assert_eq!(r.status, Status::Rejected);
        assert_eq!(
            r.reason.as_deref(),
            Some(format!("[request id: {id}] Exceeds maximum queue size").as_str())
        );
    }
}

#[test]
fn d9_priority_levels() {
    let s = settings(
        r#"name: "m" max_batch_size: 8
        dynamic_batching { preferred_batch_size: [4] priority_levels: 2 default_priority_level: 2 }"#,
    );
    let p = |id: &str, prio: u32| Request {
        priority: prio,
        ..req(id, 100 * MS, 1)
    };
    let trace = vec![
        req("R0", 0, 4),
        p("a", 2),
        p("b", 2),
        p("c", 1),
        p("d", 0),
        p("e", 1),
    ];
    let out = run(&s, S, trace);
    assert_eq!(
        batches(&out),
        vec![
            (0, 0, vec!["R0"]),
            (S, 0, vec!["c", "e", "a", "b"]),
            (2 * S, 0, vec!["d"])
        ]
    );
}

#[test]
fn d10_two_instances() {
    let s = settings(
        r#"name: "m" max_batch_size: 4 instance_group [{count: 2}]
        dynamic_batching { preferred_batch_size: [4] }"#,
    );
    let out = run(
        &s,
        100 * MS,
        (1..=8).map(|i| req(&format!("r{i}"), 0, 1)).collect(),
    );
    assert_eq!(
        batches(&out),
        vec![
            (0, 0, vec!["r1", "r2", "r3", "r4"]),
            (0, 1, vec!["r5", "r6", "r7", "r8"])
        ]
    );
}

#[test]
fn preserve_ordering_holds_later_responses() {
    // §2.7 documented semantics: a response ready early waits for every
    // request that left the queue before it.
    let cfg = r#"name: "m" max_batch_size: 4 instance_group [{count: 2}]
        dynamic_batching { preferred_batch_size: [4] preserve_ordering: ORD }"#;
    let lat = Latency::parse("1:100,4:400").unwrap();
    for (ord, r5_end) in [("true", 400), ("false", 100)] {
        let s = settings(&cfg.replace("ORD", ord));
        let mut out = CollectSink::default();
        let trace: Vec<_> = (1..=5).map(|i| req(&format!("r{i}"), 0, 1)).collect();
        simulate(&s, &lat, trace, &mut out);
        assert_eq!(record(&out, "r1").end_us, Some(400));
        assert_eq!(
            record(&out, "r5").end_us,
            Some(r5_end),
            "preserve_ordering {ord}"
        );
    }
}

#[test]
fn d11_preserve_ordering_two_speeds() {
    let cfg = r#"name: "m" max_batch_size: 4 instance_group [{count: 2}]
        dynamic_batching { preferred_batch_size: [4] preserve_ordering: ORD }"#;
    let lat = [Latency::constant(400 * MS), Latency::constant(100 * MS)];
    for ord in ["true", "false"] {
        let s = settings(&cfg.replace("ORD", ord));
        let mut out = CollectSink::default();
        let trace: Vec<_> = (1..=12).map(|i| req(&format!("r{i}"), 0, 1)).collect();
        simulate_per_instance(&s, &lat, trace, &mut out);
        assert_eq!(
            batches(&out),
            vec![
                (0, 0, vec!["r1", "r2", "r3", "r4"]),
                (0, 1, vec!["r5", "r6", "r7", "r8"]),
                (100 * MS, 1, vec!["r9", "r10", "r11", "r12"]),
            ]
        );
        let (b2, b3) = if ord == "true" {
            (400 * MS, 400 * MS)
        } else {
            (100 * MS, 200 * MS)
        };
        assert_eq!(record(&out, "r1").end_us, Some(400 * MS));
        assert_eq!(record(&out, "r5").end_us, Some(b2), "ordering {ord}");
        assert_eq!(record(&out, "r12").end_us, Some(b3), "ordering {ord}");
    }
}

#[test]
fn batch_larger_than_max_is_rejected() {
    let s = settings(r#"name: "m" max_batch_size: 4 dynamic_batching {}"#);
    let out = run(&s, MS, vec![req("big", 0, 5)]);
    assert_eq!(
        record(&out, "big").reason.as_deref(),
        Some("[request id: big] inference request batch-size must be <= 4 for 'm'")
    );
}

// ---------------------------------------------------------------- Direct

#[test]
fn direct_free_slots_come_from_tritons_heap() {
    // testdata/fidelity/direct-reuse (recorded on Triton 2.51): 2 instances
    // x 2 slots. p0 and q0 take slot 0 of instance 0 and 1; q1 (END) frees
    // instance 1's slot 0 before p1 (END) frees instance 0's. The free
    // slots are a heap keyed by slot index only: the next new sequence, r0,
    // gets instance 1's slot 0, s0 instance 0's, and t0 slot 1 of
    // instance 1 (schedulers-observed.md, Direct).
    let s = settings(
        r#"name: "m" max_batch_size: 2 instance_group [{count: 2}]
           sequence_batching { max_sequence_idle_microseconds: 5000000 direct {} }"#,
    );
    let ms = 1000;
    let trace = vec![
        sreq("p0", 0, 31, true, false),
        sreq("q0", 20 * ms, 32, true, false),
        sreq("q1", 200 * ms, 32, false, true),
        sreq("p1", 250 * ms, 31, false, true),
        sreq("r0", 450 * ms, 33, true, false),
        sreq("s0", 470 * ms, 34, true, false),
        sreq("t0", 490 * ms, 35, true, true),
        sreq("r1", 700 * ms, 33, false, true),
        sreq("s1", 720 * ms, 34, false, true),
    ];
    let out = run(&s, 151_482, trace);
    let placed = |id: &str| (record(&out, id).instance, record(&out, id).slot);
    assert_eq!(placed("p0"), (Some(0), Some(0)));
    assert_eq!(placed("q0"), (Some(1), Some(0)));
    assert_eq!(placed("r0"), (Some(1), Some(0)));
    assert_eq!(placed("s0"), (Some(0), Some(0)));
    assert_eq!(placed("t0"), (Some(1), Some(1)));
    assert_eq!(placed("r1"), (Some(1), Some(0)));
    assert_eq!(placed("s1"), (Some(0), Some(0)));
}

/// (start, instance, per-slot (request, START, READY) for the executed entries)
type DirectRow<'a> = (u64, usize, Vec<(Option<&'a str>, bool, bool)>);

fn direct_rows(sink: &CollectSink) -> Vec<DirectRow<'_>> {
    sink.batches
        .iter()
        .map(|b| {
            let entries = b.slots[..b.size as usize]
                .iter()
                .map(|s| (s.request.as_deref(), s.start, s.ready))
                .collect();
            (b.start_us, b.instance, entries)
        })
        .collect()
}

#[test]
fn s1_direct_docs_example_with_backlog() {
    let s = settings(
        r#"name: "m" max_batch_size: 2 instance_group [{count: 2}]
        sequence_batching { direct {} }"#,
    );
    let u = MS; // one time unit
    let lens = [5u64, 3, 6, 2, 3, 2];
    let starts = [0u64, 0, 0, 0, 10, 20];
    let mut trace = Vec::new();
    for t in (0..=50).step_by(10) {
        for k in 0..6 {
            if t >= starts[k] && (t - starts[k]) / 10 < lens[k] {
                let n = (t - starts[k]) / 10;
                trace.push(sreq(
                    &format!("S{k}.{n}"),
                    t * u,
                    100 + k as u64,
                    n == 0,
                    n + 1 == lens[k],
                ));
            }
        }
    }
    // Arrival order within a timestamp as in the spec's table.
    let out = run(&s, u, trace);
    let r = |id| Some(id);
    let expected: Vec<DirectRow> = vec![
        (0, 0, vec![(r("S0.0"), true, true), (r("S2.0"), true, true)]),
        (0, 1, vec![(r("S1.0"), true, true), (r("S3.0"), true, true)]),
        (
            10 * u,
            0,
            vec![(r("S0.1"), false, true), (r("S2.1"), false, true)],
        ),
        (
            10 * u,
            1,
            vec![(r("S1.1"), false, true), (r("S3.1"), false, true)],
        ),
        (
            11 * u,
            1,
            vec![(None, false, false), (r("S4.0"), true, true)],
        ),
        (
            20 * u,
            0,
            vec![(r("S0.2"), false, true), (r("S2.2"), false, true)],
        ),
        (
            20 * u,
            1,
            vec![(r("S1.2"), false, true), (r("S4.1"), false, true)],
        ),
        (21 * u, 1, vec![(r("S5.0"), true, true)]),
        (
            30 * u,
            0,
            vec![(r("S0.3"), false, true), (r("S2.3"), false, true)],
        ),
        (
            30 * u,
            1,
            vec![(r("S5.1"), false, true), (r("S4.2"), false, true)],
        ),
        (
            40 * u,
            0,
            vec![(r("S0.4"), false, true), (r("S2.4"), false, true)],
        ),
        (
            50 * u,
            0,
            vec![(None, false, false), (r("S2.5"), false, true)],
        ),
    ];
    assert_eq!(direct_rows(&out), expected);
    // Every batch lists every slot of its instance; padding has CORRID 0.
    assert!(out.batches.iter().all(|b| b.slots.len() == 2));
    let pad = &out.batches[4].slots[0];
    assert_eq!((pad.end, pad.corrid.clone()), (false, CorrId::Int(0)));
    assert_eq!(out.batches[4].slots[1].corrid, CorrId::Int(104));
    assert!(out.requests.iter().all(|r| r.status == Status::Ok));
    assert_eq!(out.requests.len(), 21);
}

fn skip_batch_trace() -> Vec<Request> {
    // 1002 (4 requests) and 1004 (4) start first, then 1001 (2), 1003 (2).
    let lens = [(1002u64, 4u64), (1004, 4), (1001, 2), (1003, 2)];
    let mut trace = Vec::new();
    for n in 0..4 {
        for &(id, len) in &lens {
            if n < len {
                trace.push(sreq(&format!("{id}.{n}"), 0, id, n == 0, n + 1 == len));
            }
        }
    }
    trace
}

#[test]
fn s2_skip_batch_spread_order() {
    let h = |pairs: &[(u32, usize)]| pairs.iter().copied().collect::<BTreeMap<_, _>>();
    let one = settings(r#"name: "m" max_batch_size: 4 sequence_batching { direct {} }"#);
    let out = run(&one, MS, skip_batch_trace());
    assert_eq!(histogram(&out), h(&[(4, 2), (2, 2)]));
    let slot_of = |out: &CollectSink, id: &str| {
        let r = record(out, id);
        (r.instance.unwrap(), r.slot.unwrap())
    };
    assert_eq!(slot_of(&out, "1002.0"), (0, 0));
    assert_eq!(slot_of(&out, "1004.0"), (0, 1));
    assert_eq!(slot_of(&out, "1001.0"), (0, 2));
    assert_eq!(slot_of(&out, "1003.0"), (0, 3));

    let two = settings(
        r#"name: "m" max_batch_size: 2 instance_group [{count: 2}] sequence_batching { direct {} }"#,
    );
    let out = run(&two, MS, skip_batch_trace());
    assert_eq!(histogram(&out), h(&[(2, 4), (1, 4)]));
    assert_eq!(slot_of(&out, "1002.3"), (0, 0));
    assert_eq!(slot_of(&out, "1004.3"), (1, 0));
    assert_eq!(slot_of(&out, "1001.1"), (0, 1));
    assert_eq!(slot_of(&out, "1003.1"), (1, 1));

    let four = settings(
        r#"name: "m" max_batch_size: 1 instance_group [{count: 4}] sequence_batching { direct {} }"#,
    );
    let out = run(&four, MS, skip_batch_trace());
    assert_eq!(histogram(&out), h(&[(1, 12)]));
}

#[test]
fn s3_direct_delay_and_minimum_slot_utilization() {
    let cfg = r#"name: "m" max_batch_size: 4
        sequence_batching { max_sequence_idle_microseconds: 100000000
          direct { max_queue_delay_microseconds: 3000000 minimum_slot_utilization: U } }"#;
    let trace = |late: u64| {
        vec![
            sreq("1001.0", 0, 1001, true, false),
            sreq("1002.0", 0, 1002, true, false),
            sreq("1002.1", late, 1002, false, false),
        ]
    };
    let out = run(&settings(&cfg.replace("U", "0")), 100 * MS, trace(500 * MS));
    assert_eq!(
        direct_rows(&out),
        vec![
            (
                0,
                0,
                vec![(Some("1001.0"), true, true), (Some("1002.0"), true, true)]
            ),
            (
                500 * MS,
                0,
                vec![(None, false, false), (Some("1002.1"), false, true)]
            ),
        ]
    );
    assert_eq!(histogram(&out), [(2, 2)].into_iter().collect());
    // U = 0.5: first batch at once, second waits 3 s after 1002.1 arrived
    // (strictly more than the delay: an instant later).
    let out = run(
        &settings(&cfg.replace("U", "0.5")),
        100 * MS,
        trace(500 * MS),
    );
    let starts: Vec<u64> = out.batches.iter().map(|b| b.start_us).collect();
    assert_eq!(starts, vec![0, 3500 * MS + 1]);
    // U = 1: the first batch waits 3 s; 1002.1 (sent at 3.5 s) waits again.
    let out = run(
        &settings(&cfg.replace("U", "1")),
        100 * MS,
        trace(3500 * MS),
    );
    let starts: Vec<u64> = out.batches.iter().map(|b| b.start_us).collect();
    assert_eq!(starts, vec![3 * S + 1, 6500 * MS + 1]);
}

#[test]
fn s6_admission_errors() {
    let s = settings(r#"name: "m" max_batch_size: 4 sequence_batching { direct {} }"#);
    let trace = vec![
        sreq("zero", 0, 0, true, false),
        sreq("n1", 0, 37469245, false, false),
        sreq("n2", MS, 37469245, false, false),
        sreq("n3", 2 * MS, 37469245, false, true),
        sreq("c1", 10 * MS, 3, true, false),
        sreq("c2", 11 * MS, 3, false, false),
        sreq("c3", 12 * MS, 3, false, true),
        sreq("c4", 13 * MS, 3, false, false),
        Request {
            batch_size: 2,
            ..sreq("big", 20 * MS, 9, true, true)
        },
    ];
    let out = run(&s, MS / 10, trace);
    let reason = |id| record(&out, id).reason.clone().unwrap_or_default();
    assert_eq!(
        reason("zero"),
        "inference request to model 'm' must specify a non-zero or non-empty correlation ID"
    );
    let start37 = "inference request for sequence 37469245 to model 'm' must specify the START flag on the first request of the sequence";
    for id in ["n1", "n2", "n3"] {
        assert_eq!(reason(id), start37);
        assert_eq!(record(&out, id).status, Status::Rejected);
    }
    for id in ["c1", "c2", "c3"] {
        assert_eq!(record(&out, id).status, Status::Ok);
    }
    assert_eq!(
        reason("c4"),
        "inference request for sequence 3 to model 'm' must specify the START flag on the first request of the sequence"
    );
    assert_eq!(
        reason("big"),
        "inference request to model 'm' must specify batch-size 1 due to requirements of sequence batcher"
    );
}

#[test]
fn s7_restart_without_end_keeps_slot() {
    let s = settings(r#"name: "m" max_batch_size: 4 sequence_batching { direct {} }"#);
    let trace = vec![
        sreq("a", 0, 4566, true, false),
        sreq("b", 10 * MS, 4566, false, false),
        sreq("c", 20 * MS, 4566, true, false),
        sreq("d", 30 * MS, 4566, false, true),
    ];
    let out = run(&s, MS, trace);
    assert_eq!(out.batches.len(), 4);
    assert!(out.batches.iter().all(|b| b.size == 1));
    assert!(out
        .requests
        .iter()
        .all(|r| r.status == Status::Ok && r.slot == Some(0) && r.instance == Some(0)));
}

#[test]
fn s8_idle_timeout_reaps_and_backlog_moves_in() {
    let s = settings(
        r#"name: "m" max_batch_size: 1
        sequence_batching { max_sequence_idle_microseconds: 5000000 direct {} }"#,
    );
    let trace = vec![
        sreq("X.0", 0, 1, true, false),
        sreq("Y.0", S, 2, true, false),
        sreq("Y.1", 2 * S, 2, false, true),
        sreq("X.1", 7 * S, 1, false, false),
    ];
    let out = run(&s, MS, trace);
    assert_eq!(
        batches(&out),
        vec![
            (0, 0, vec!["X.0"]),
            (5 * S, 0, vec!["Y.0"]),
            (5 * S + MS, 0, vec!["Y.1"])
        ]
    );
    assert_eq!(
        record(&out, "X.1").reason.as_deref(),
        Some("inference request for sequence 1 to model 'm' must specify the START flag on the first request of the sequence")
    );
}

#[test]
fn s9_backlog_request_timeout() {
    let s = settings(r#"name: "m" max_batch_size: 1 sequence_batching { direct {} }"#);
    let t = |r: Request| Request {
        timeout_us: 3 * S,
        ..r
    };
    let trace = vec![
        t(sreq("1.0", 0, 1, true, false)),
        t(sreq("1.1", 500 * MS, 1, false, false)),
        t(sreq("1.2", S, 1, false, true)),
        t(sreq("2.0", S, 2, true, false)),
        t(sreq("2.1", 2 * S, 2, false, false)),
        t(sreq("2.2", 5 * S, 2, false, true)),
    ];
    let out = run(&s, 5 * S, trace);
    assert_eq!(
        batches(&out),
        vec![
            (0, 0, vec!["1.0"]),
            (5 * S, 0, vec!["1.1"]),
            (10 * S, 0, vec!["1.2"])
        ]
    );
    for id in ["2.0", "2.1"] {
        let r = record(&out, id);
        assert_eq!(r.status, Status::TimedOut);
        assert_eq!(
            r.reason.as_deref(),
            Some("timeout of the corresponding sequence has been expired")
        );
        assert_eq!(r.end_us, Some(4 * S));
    }
    assert_eq!(record(&out, "2.2").status, Status::Rejected);
}

// ---------------------------------------------------------------- Oldest

const DOCS_OLDEST: &str = r#"name: "m" max_batch_size: 2
    sequence_batching { oldest { max_candidate_sequences: 4 } }"#;

fn oldest_trace(d_before_c: bool) -> Vec<Request> {
    let (a, b, c, d) = (1, 2, 3, 4);
    let mut t0 = vec![
        sreq("A1", 0, a, true, false),
        sreq("B1", 0, b, true, false),
        sreq("C1", 0, c, true, true),
        sreq("D1", 0, d, true, false),
    ];
    if d_before_c {
        t0.swap(2, 3);
    }
    t0.extend([
        sreq("A2", 1500, a, false, false),
        sreq("B2", 1500, b, false, true),
        sreq("D2", 1500, d, false, false),
        sreq("A3", 2500, a, false, true),
        sreq("D3", 2500, d, false, false),
        sreq("D4", 3500, d, false, true),
    ]);
    t0
}

#[test]
fn s4a_oldest_docs_order() {
    let out = run(&settings(DOCS_OLDEST), MS, oldest_trace(false));
    assert_eq!(
        batches(&out),
        vec![
            (0, 0, vec!["A1", "B1"]),
            (MS, 0, vec!["C1"]),
            (2 * MS, 0, vec!["A2", "B2"]),
            (3 * MS, 0, vec!["D1", "A3"]),
            (4 * MS, 0, vec!["D2"]),
            (5 * MS, 0, vec!["D3"]),
            (6 * MS, 0, vec!["D4"]),
        ]
    );
    let t3 = &out.batches[3].slots;
    assert_eq!(
        t3.iter().map(|s| s.start).collect::<Vec<_>>(),
        vec![true, false]
    );
    assert_eq!(
        t3.iter().map(|s| s.end).collect::<Vec<_>>(),
        vec![false, true]
    );
    assert_eq!(
        t3.iter().map(|s| s.corrid.clone()).collect::<Vec<_>>(),
        vec![CorrId::Int(4), CorrId::Int(1)]
    );
    // Candidates: A→0, B→1, C→2, and D reuses C's slot 2.
    let slots: Vec<_> = ["A1", "B1", "C1", "D1"]
        .iter()
        .map(|id| record(&out, id).slot)
        .collect();
    assert_eq!(slots, vec![Some(0), Some(1), Some(2), Some(2)]);
}

#[test]
fn s4b_oldest_docs_figure() {
    let out = run(&settings(DOCS_OLDEST), MS, oldest_trace(true));
    let ids: Vec<Vec<&str>> = batches(&out).into_iter().map(|b| b.2).collect();
    assert_eq!(
        ids,
        vec![
            vec!["A1", "B1"],
            vec!["D1", "C1"],
            vec!["A2", "B2"],
            vec!["D2", "A3"],
            vec!["D3"],
            vec!["D4"],
        ]
    );
    assert_eq!(record(&out, "D1").slot, Some(2));
    assert_eq!(record(&out, "C1").slot, Some(3));
}

#[test]
fn s5_oldest_backlog() {
    let s = settings(
        r#"name: "m" max_batch_size: 4
        sequence_batching { oldest { max_candidate_sequences: 4 preferred_batch_size: [4]
          max_queue_delay_microseconds: 5000000 } }"#,
    );
    let mut trace = Vec::new();
    for n in 0..3u64 {
        for k in 1..=5u64 {
            trace.push(sreq(&format!("{k}.{n}"), 0, k, n == 0, n == 2));
        }
    }
    let out = run(&s, 100 * MS, trace);
    assert_eq!(
        histogram(&out),
        [(4, 3), (1, 3)].into_iter().collect::<BTreeMap<_, _>>()
    );
    assert!(out.requests.iter().all(|r| r.status == Status::Ok));
}

// ---------------------------------------------------------------- invariants

mod props {
    use super::*;
    use proptest::prelude::*;
    use std::collections::{HashMap, HashSet};

    fn config(strategy: u8, mbs: u32, instances: u32, cands: u32, delay: u64, idle: u64) -> String {
        let strat = if strategy == 0 {
            "direct {}".to_string()
        } else {
            format!(
                "oldest {{ max_candidate_sequences: {cands} max_queue_delay_microseconds: {delay} }}"
            )
        };
        format!(
            r#"name: "m" max_batch_size: {mbs} instance_group [{{count: {instances}}}]
            sequence_batching {{ max_sequence_idle_microseconds: {idle} {strat} }}"#
        )
    }

    /// Random sequence traces from (gap µs, stream 1..=6, flags, timeout).
    /// With `unique`, every START..END run of a stream gets its own
    /// correlation id and no START is repeated inside a live sequence; else
    /// ids are reused and STARTs may restart live sequences.
    fn trace_strategy(unique: bool) -> impl Strategy<Value = Vec<Request>> {
        proptest::collection::vec((0u64..400, 1u64..=6, 0u8..6, 0u64..3), 1..60).prop_map(
            move |steps| {
                let mut t = 0;
                let mut open: HashSet<u64> = HashSet::new();
                let mut generation: HashMap<u64, u64> = HashMap::new();
                steps
                    .into_iter()
                    .enumerate()
                    .map(|(i, (gap, stream, flag, to))| {
                        t += gap;
                        let live = open.contains(&stream);
                        let start = !live || (!unique && flag == 0);
                        let end = flag == 1;
                        let g = generation.entry(stream).or_insert(0);
                        let id = if unique { stream * 1000 + *g } else { stream };
                        if end {
                            open.remove(&stream);
                            *g += 1;
                        } else {
                            open.insert(stream);
                        }
                        Request {
                            timeout_us: to * 700,
                            ..sreq(&format!("r{i}"), t, id, start, end)
                        }
                    })
                    .collect()
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn sequence_invariants(
            unique in any::<bool>(),
            trace in trace_strategy(true),
            reused in trace_strategy(false),
            strategy in 0u8..2,
            mbs in 1u32..4,
            instances in 1u32..3,
            cands in 1u32..4,
            delay in prop_oneof![Just(0u64), 1u64..500],
            idle in prop_oneof![Just(1_000_000u64), 200u64..2000],
        ) {
            // Reaping ends sequences at times the trace does not show;
            // the per-sequence checks need every sequence to live to its END.
            let idle = if unique { 1_000_000_000 } else { idle };
            let trace = if unique { trace } else { reused };
            let s = settings(&config(strategy, mbs, instances, cands, delay, idle));
            let lat = Latency::parse("1:100,2:150").unwrap();
            let mut out = CollectSink::default();
            simulate(&s, &lat, trace.clone(), &mut out);
            let mut again = CollectSink::default();
            simulate(&s, &lat, trace.clone(), &mut again);
            prop_assert_eq!(&out.requests, &again.requests);
            prop_assert_eq!(&out.batches, &again.batches);

            // Every request ends exactly once.
            let mut seen = HashMap::new();
            for r in &out.requests {
                *seen.entry(r.id.as_str()).or_insert(0) += 1;
            }
            prop_assert_eq!(seen.len(), trace.len());
            prop_assert!(seen.values().all(|&n| n == 1));

            let by_id: HashMap<&str, &RequestRecord> =
                out.requests.iter().map(|r| (r.id.as_str(), r)).collect();
            for b in &out.batches {
                prop_assert!(b.size <= mbs.max(1));
                let mut seqs = HashSet::new();
                for id in &b.requests {
                    let r = by_id[id.as_str()];
                    prop_assert_eq!(r.status, Status::Ok);
                    if unique {
                        prop_assert!(seqs.insert(r.sequence_id.clone()), "two requests of one sequence in a batch");
                    }
                }
            }
            if !unique {
                return Ok(());
            }
            // Within one sequence (START to END), requests run in arrival
            // order and keep their instance (and slot for Direct).
            let mut cur: HashMap<u64, (usize, usize, u64)> = HashMap::new();
            for req in &trace {
                let r = by_id[req.id.as_str()];
                let Some(CorrId::Int(k)) = req.sequence_id else { unreachable!() };
                if r.status != Status::Ok {
                    if req.start { cur.remove(&k); }
                    continue;
                }
                let here = (r.instance.unwrap(), r.slot.unwrap(), r.batch.unwrap());
                if let Some(&(i, sl, b)) = cur.get(&k) {
                    if !req.start {
                        prop_assert_eq!(i, here.0, "instance changed");
                        if strategy == 0 { prop_assert_eq!(sl, here.1, "slot changed"); }
                        prop_assert!(b < here.2, "order within a sequence");
                    }
                }
                cur.insert(k, here);
                if req.end { cur.remove(&k); }
            }
        }

        #[test]
        fn dynamic_invariants(
            sizes in proptest::collection::vec((0u64..300, 1u32..5, 0u32..3), 1..60),
            mbs in 1u32..9,
            delay in prop_oneof![Just(0u64), 1u64..1000],
            pref in proptest::collection::vec(1u32..9, 0..3),
        ) {
            let pref: Vec<u32> = pref.into_iter().filter(|&p| p <= mbs).collect();
            let cfg = format!(
                r#"name: "m" max_batch_size: {mbs} instance_group [{{count: 2}}]
                dynamic_batching {{ preferred_batch_size: {pref:?} max_queue_delay_microseconds: {delay}
                  priority_levels: 2 default_priority_level: 2 }}"#
            );
            let s = settings(&cfg);
            let mut t = 0;
            let trace: Vec<Request> = sizes.iter().enumerate().map(|(i, &(gap, b, p))| {
                t += gap;
                Request { priority: p, ..req(&format!("r{i}"), t, b) }
            }).collect();
            let lat = Latency::parse("100+20*b").unwrap();
            let mut out = CollectSink::default();
            simulate(&s, &lat, trace.clone(), &mut out);
            prop_assert_eq!(out.requests.len(), trace.len());
            let ids: HashSet<&str> = out.requests.iter().map(|r| r.id.as_str()).collect();
            prop_assert_eq!(ids.len(), trace.len());
            let mut busy: HashMap<usize, u64> = HashMap::new();
            for b in &out.batches {
                prop_assert!(b.size <= mbs);
                let free = busy.get(&b.instance).copied().unwrap_or(0);
                prop_assert!(b.start_us >= free, "instance runs one batch at a time");
                busy.insert(b.instance, b.end_us);
            }
            // A request waits longer than max_queue_delay only while no
            // instance is free: from its delay's end until it starts, every
            // instance is executing without a gap.
            let mut runs: Vec<Vec<(u64, u64)>> = vec![Vec::new(); s.instances];
            for b in &out.batches {
                runs[b.instance].push((b.start_us, b.end_us));
            }
            for r in out.requests.iter().filter(|r| r.status == Status::Ok) {
                let (lo, hi) = (r.arrival_us + delay, r.start_us.unwrap());
                if hi <= lo {
                    continue;
                }
                for (inst, iv) in runs.iter().enumerate() {
                    let mut t = lo;
                    for &(s0, e0) in iv {
                        if e0 <= t || s0 >= hi {
                            continue;
                        }
                        prop_assert!(s0 <= t, "{} waited past its delay while instance {inst} was idle from {t} to {s0}", r.id);
                        t = t.max(e0);
                    }
                    prop_assert!(t >= hi, "{} waited past its delay while instance {inst} was idle from {t} to {hi}", r.id);
                }
            }
        }
    }
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

// ---------------------------------------------------------------- control tensors

use super::controls::{control_tensors, ControlKind, ControlSpec, ControlValues};

fn model_config(pbtxt: &str) -> crate::schema::inference::ModelConfig {
    ParsedConfig::parse(pbtxt.to_string())
        .config
        .expect("test config parses")
}

/// (name, datatype, shape, data) of each control tensor.
fn tensors_of(
    cfg: &crate::schema::inference::ModelConfig,
    b: &BatchRecord,
) -> Vec<(String, &'static str, Vec<i64>, ControlValues)> {
    control_tensors(cfg, b.executed_slots())
        .expect("valid controls")
        .into_iter()
        .map(|t| (t.name, t.datatype, t.shape, t.data))
        .collect()
}

#[test]
fn s10_corrid_truncated_and_controls_in_configured_dtypes() {
    let cfg = model_config(
        r#"name: "m" max_batch_size: 2
        sequence_batching { direct {}
          control_input [
            { name: "START" control [{ kind: CONTROL_SEQUENCE_START bool_false_true: [false, true] }] },
            { name: "READY" control [{ kind: CONTROL_SEQUENCE_READY int32_false_true: [0, 1] }] },
            { name: "CORRID" control [{ kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_INT32 }] }
          ] }"#,
    );
    let s = Settings::from_config(&cfg).unwrap();
    let big = (1u64 << 32) + 5;
    let out = run(
        &s,
        MS,
        vec![sreq("a", 0, 7, true, false), sreq("b", 0, big, true, false)],
    );
    assert_eq!(out.batches.len(), 1, "both start together");
    assert_eq!(
        tensors_of(&cfg, &out.batches[0]),
        vec![
            (
                "START".into(),
                "BOOL",
                vec![2, 1],
                ControlValues::Bool(vec![true, true])
            ),
            (
                "READY".into(),
                "INT32",
                vec![2, 1],
                ControlValues::Int32(vec![1, 1])
            ),
            (
                "CORRID".into(),
                "INT32",
                vec![2, 1],
                ControlValues::Int32(vec![7, 5])
            ),
        ]
    );
    let t = control_tensors(&cfg, out.batches[0].executed_slots()).unwrap();
    assert_eq!(
        t.iter().map(|t| t.kind).collect::<Vec<_>>(),
        vec![ControlKind::Start, ControlKind::Ready, ControlKind::Corrid]
    );
    let json = serde_json::to_value(&t[2]).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"name": "CORRID", "kind": "CORRID", "datatype": "INT32", "shape": [2, 1], "data": [7, 5]})
    );
}

#[test]
fn fp32_controls_with_direct_padding() {
    // S1's configuration: START and READY as fp32_false_true [0, 1].
    let cfg = model_config(
        r#"name: "m" max_batch_size: 2
        sequence_batching { direct {}
          control_input [
            { name: "START" control [{ kind: CONTROL_SEQUENCE_START fp32_false_true: [0, 1] }] },
            { name: "READY" control [{ kind: CONTROL_SEQUENCE_READY fp32_false_true: [0.5, 2] }] }
          ] }"#,
    );
    let s = Settings::from_config(&cfg).unwrap();
    // Slot 0: 1 (START, then idle); slot 1: 2 (START, then a second step).
    let out = run(
        &s,
        MS,
        vec![
            sreq("1.0", 0, 1, true, false),
            sreq("2.0", 0, 2, true, false),
            sreq("2.1", 10 * MS, 2, false, false),
        ],
    );
    assert_eq!(out.batches.len(), 2);
    assert_eq!(
        tensors_of(&cfg, &out.batches[1]),
        vec![
            (
                "START".into(),
                "FP32",
                vec![2, 1],
                ControlValues::Fp32(vec![0.0, 0.0])
            ),
            (
                "READY".into(),
                "FP32",
                vec![2, 1],
                ControlValues::Fp32(vec![0.5, 2.0])
            ),
        ]
    );
}

#[test]
fn string_corrid_and_padding_and_kind_mismatch() {
    let text = |dtype: &str| {
        format!(
            r#"name: "m" max_batch_size: 2
            sequence_batching {{ direct {{}}
              control_input [
                {{ name: "END" control [{{ kind: CONTROL_SEQUENCE_END int32_false_true: [-1, 9] }}] }},
                {{ name: "CORRID" control [{{ kind: CONTROL_SEQUENCE_CORRID data_type: {dtype} }}] }}
              ] }}"#
        )
    };
    let cfg = model_config(&text("TYPE_STRING"));
    let s = Settings::from_config(&cfg).unwrap();
    let str_req = |id: &str, t, corr: &str, start, end| Request {
        sequence_id: Some(CorrId::Str(corr.into())),
        start,
        end,
        ..Request::new(id, t)
    };
    let out = run(
        &s,
        MS,
        vec![
            str_req("a0", 0, "alpha", true, false),
            str_req("b0", 0, "beta", true, false),
            str_req("b1", 10 * MS, "beta", false, true),
        ],
    );
    assert_eq!(
        tensors_of(&cfg, &out.batches[0])[1],
        (
            "CORRID".into(),
            "BYTES",
            vec![2, 1],
            ControlValues::Bytes(vec!["alpha".into(), "beta".into()])
        )
    );
    // The second batch pads slot 0: CORRID is the empty string, END false.
    assert_eq!(
        tensors_of(&cfg, &out.batches[1]),
        vec![
            (
                "END".into(),
                "INT32",
                vec![2, 1],
                ControlValues::Int32(vec![-1, 9])
            ),
            (
                "CORRID".into(),
                "BYTES",
                vec![2, 1],
                ControlValues::Bytes(vec![String::new(), "beta".into()])
            ),
        ]
    );
    // An integer id with a TYPE_STRING CORRID, a string id with a numeric one.
    let ints = run(&s, MS, vec![sreq("x", 0, 9, true, false)]);
    let e = control_tensors(&cfg, ints.batches[0].executed_slots()).unwrap_err();
    assert!(e.contains("integer correlation id 9"), "{e}");
    let numeric = model_config(&text("TYPE_UINT64"));
    let e = control_tensors(&numeric, out.batches[0].executed_slots()).unwrap_err();
    assert!(e.contains("string correlation id alpha"), "{e}");
}

#[test]
fn corrid_keeps_the_low_order_bytes_of_the_id() {
    let row = |slot, id: u64| SlotRecord {
        slot,
        request: Some(format!("r{slot}")),
        sequence_id: Some(CorrId::Int(id)),
        start: false,
        end: false,
        ready: true,
        corrid: CorrId::Int(id),
    };
    let pad = SlotRecord {
        request: None,
        sequence_id: None,
        ready: false,
        corrid: CorrId::Int(0),
        ..row(2, 0)
    };
    let rows = [row(0, u64::MAX), row(1, (1 << 31) | (7 << 32)), pad];
    let corrid = |dtype: &str| {
        let cfg = model_config(&format!(
            r#"name: "m" max_batch_size: 4 sequence_batching {{ direct {{}}
              control_input [{{ name: "C" control [{{ kind: CONTROL_SEQUENCE_CORRID data_type: {dtype} }}] }}] }}"#
        ));
        let t = control_tensors(&cfg, &rows).unwrap();
        assert_eq!(t[0].shape, vec![3, 1]);
        (t[0].datatype, t[0].data.clone())
    };
    assert_eq!(
        corrid("TYPE_UINT64"),
        (
            "UINT64",
            ControlValues::Uint64(vec![u64::MAX, (1 << 31) | (7 << 32), 0])
        )
    );
    assert_eq!(
        corrid("TYPE_INT64"),
        (
            "INT64",
            ControlValues::Int64(vec![-1, (1 << 31) | (7 << 32), 0])
        )
    );
    assert_eq!(
        corrid("TYPE_UINT32"),
        ("UINT32", ControlValues::Uint32(vec![u32::MAX, 1 << 31, 0]))
    );
    assert_eq!(
        corrid("TYPE_INT32"),
        ("INT32", ControlValues::Int32(vec![-1, i32::MIN, 0]))
    );
}

#[test]
fn oldest_controls_and_unbatched_shape() {
    let cfg = model_config(
        r#"name: "m" max_batch_size: 2
        sequence_batching { oldest { max_candidate_sequences: 4 }
          control_input [
            { name: "S" control [{ kind: CONTROL_SEQUENCE_START int32_false_true: [0, 1] }] },
            { name: "E" control [{ kind: CONTROL_SEQUENCE_END int32_false_true: [0, 1] }] },
            { name: "C" control [{ kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 }] }
          ] }"#,
    );
    let s = Settings::from_config(&cfg).unwrap();
    let out = run(&s, MS, oldest_trace(false));
    // S4a at t3: [D1, A3] with START [1,0], END [0,1], CORRID [D, A].
    assert_eq!(out.batches[3].requests, vec!["D1", "A3"]);
    let data: Vec<ControlValues> = tensors_of(&cfg, &out.batches[3])
        .into_iter()
        .map(|t| t.3)
        .collect();
    assert_eq!(
        data,
        vec![
            ControlValues::Int32(vec![1, 0]),
            ControlValues::Int32(vec![0, 1]),
            ControlValues::Uint64(vec![4, 1]),
        ]
    );
    // max_batch_size 0: one entry, shape [1].
    let cfg0 = model_config(
        r#"name: "m" max_batch_size: 0 sequence_batching { direct {}
          control_input [{ name: "R" control [{ kind: CONTROL_SEQUENCE_READY bool_false_true: [false, true] }] }] }"#,
    );
    let s0 = Settings::from_config(&cfg0).unwrap();
    let out = run(&s0, MS, vec![sreq("a", 0, 3, true, true)]);
    assert_eq!(
        tensors_of(&cfg0, &out.batches[0]),
        vec![("R".into(), "BOOL", vec![1], ControlValues::Bool(vec![true]))]
    );
}

#[test]
fn control_spec_rejects_what_triton_would_not_load() {
    let spec = |controls: &str| {
        ControlSpec::from_config(&model_config(&format!(
            r#"name: "m" max_batch_size: 2 sequence_batching {{ control_input [{controls}] }}"#
        )))
    };
    let bad = [
        r#"{ name: "S" control [{ kind: CONTROL_SEQUENCE_START int32_false_true: [0, 1] fp32_false_true: [0, 1] }] }"#,
        r#"{ name: "S" control [{ kind: CONTROL_SEQUENCE_START int32_false_true: [1] }] }"#,
        r#"{ name: "S" control [{ kind: CONTROL_SEQUENCE_START }] }"#,
        r#"{ name: "C" control [{ kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_FP32 }] }"#,
        r#"{ name: "A" control [{ kind: CONTROL_SEQUENCE_READY bool_false_true: [false, true] }] },
           { name: "B" control [{ kind: CONTROL_SEQUENCE_READY bool_false_true: [false, true] }] }"#,
    ];
    for b in bad {
        assert!(spec(b).is_err(), "{b} must be rejected");
    }
    let ok = spec(
        r#"{ name: "S" control [{ kind: CONTROL_SEQUENCE_START int32_false_true: [0, 1] }] }"#,
    )
    .unwrap()
    .unwrap();
    assert!(!ok.is_empty());
    let none = ControlSpec::from_config(&model_config(
        r#"name: "m" max_batch_size: 2 dynamic_batching {}"#,
    ))
    .unwrap();
    assert!(none.is_none());
}

// ---------------------------------------------------------------- driver API

/// What a real-clock driver sees, recorded by [`drive_at_completion`].
#[derive(Default)]
struct Driven {
    sink: CollectSink,
    releases: Vec<Release>,
    /// Request id -> (tag, sequence handle) as dispatched.
    rows: std::collections::HashMap<String, (u64, Option<SeqHandle>)>,
    /// Direct padding rows dispatched.
    padding: usize,
}

/// Drives a [`Scheduler`] the way a real-clock runner does: records are
/// emitted only when a batch completes (`complete`), never at dispatch.
fn drive_at_completion(s: &Settings, lats: &[Latency], trace: Vec<Request>) -> Driven {
    let mut sched = Scheduler::new(s);
    let mut d = Driven::default();
    let mut ends: Vec<Option<u64>> = vec![None; sched.instances()];
    let mut trace = trace.into_iter().peekable();
    let mut started = Vec::new();
    let mut now = 0;
    loop {
        let next = [
            ends.iter().flatten().min().copied(),
            trace.peek().map(|r| r.arrival_us),
            sched.next_deadline(),
        ]
        .into_iter()
        .flatten()
        .min();
        let Some(t) = next else { break };
        now = t.max(now);
        for (i, end) in ends.iter_mut().enumerate() {
            if *end == Some(now) {
                *end = None;
                sched.complete(now, i, &mut d.sink);
            }
        }
        while trace.peek().is_some_and(|r| r.arrival_us <= now) {
            let r = trace.next().unwrap();
            sched.arrive(now, r, &mut d.sink);
        }
        sched.poll(now, &mut d.sink, &mut started);
        for &i in &started {
            let b = sched.batch(i);
            assert!(sched.is_busy(i));
            for row in &b.rows {
                match &row.request {
                    Some(r) => {
                        d.rows.insert(r.id.clone(), (r.tag, row.sequence));
                    }
                    None => d.padding += 1,
                }
            }
            ends[i] = Some(now.saturating_add(lats[i % lats.len()].eval(b.size)));
        }
        d.releases.extend(sched.drain_releases());
    }
    d
}

fn sorted(mut sink: CollectSink) -> (Vec<RequestRecord>, Vec<BatchRecord>) {
    sink.requests.sort_by(|a, b| a.id.cmp(&b.id));
    sink.batches.sort_by_key(|b| b.id);
    (sink.requests, sink.batches)
}

#[test]
fn recording_at_completion_gives_the_virtual_clock_records() {
    // Two instances of different speeds: batches finish out of order, and
    // preserve_ordering must hold the fast instance's responses.
    let lats = [Latency::constant(5 * MS), Latency::constant(MS)];
    let cases = [
        r#"name: "m" max_batch_size: 4 instance_group [{count: 2}]
           dynamic_batching { preferred_batch_size: [2] preserve_ordering: true }"#,
        r#"name: "m" max_batch_size: 4 instance_group [{count: 2}]
           dynamic_batching { max_queue_delay_microseconds: 300 }"#,
        r#"name: "m" max_batch_size: 2 instance_group [{count: 2}]
           sequence_batching { max_sequence_idle_microseconds: 4000 oldest { max_candidate_sequences: 2 preserve_ordering: true } }"#,
        r#"name: "m" max_batch_size: 2 instance_group [{count: 2}]
           sequence_batching { max_sequence_idle_microseconds: 4000 direct {} }"#,
        r#"name: "m" instance_group [{count: 2}]"#,
    ];
    for cfg in cases {
        let s = settings(cfg);
        let sequence = matches!(s.kind, SchedulerKind::Direct(_) | SchedulerKind::Oldest(_));
        let trace: Vec<Request> = (0..60u64)
            .map(|i| {
                let k = i % 5;
                let step = i / 5;
                let mut r = Request {
                    tag: 1000 + i,
                    ..req(&format!("r{i:02}"), i * 700, 1)
                };
                if sequence {
                    r.sequence_id = Some(CorrId::Int(k + 1 + 10 * (step / 4)));
                    r.start = step % 4 == 0;
                    r.end = step % 4 == 3;
                }
                r
            })
            .collect();
        let mut virt = CollectSink::default();
        simulate_per_instance(&s, &lats, trace.clone(), &mut virt);
        let real = drive_at_completion(&s, &lats, trace.clone());
        assert_eq!(sorted(real.sink), sorted(virt.clone()), "{cfg}");
        // Tags come back with their requests.
        for r in virt.requests.iter().filter(|r| r.status == Status::Ok) {
            let i: u64 = r.id[1..].parse().unwrap();
            assert_eq!(real.rows[&r.id].0, 1000 + i);
        }
        if cfg.contains("dynamic_batching { preferred_batch_size: [2] preserve_ordering") {
            let out_of_order = virt
                .requests
                .iter()
                .filter(|r| r.status == Status::Ok)
                .any(|r| {
                    let b = &virt.batches[r.batch.unwrap() as usize];
                    r.end_us.unwrap() > b.end_us
                });
            assert!(out_of_order, "{cfg}: some response must be held");
        }
    }
}

#[test]
fn releases_report_end_idle_and_backlog_timeout() {
    // S8: X is reaped at 5 s (idle), Y then runs from the backlog and ends.
    let s = settings(
        r#"name: "m" max_batch_size: 1
        sequence_batching { max_sequence_idle_microseconds: 5000000 direct {} }"#,
    );
    let trace = vec![
        sreq("x0", 0, 1, true, false),
        sreq("y0", S, 2, true, false),
        sreq("y1", 2 * S, 2, false, true),
        sreq("x1", 7 * S, 1, false, false),
    ];
    let d = drive_at_completion(&s, &[Latency::constant(MS)], trace);
    let hx = d.rows["x0"].1.expect("sequence row");
    let hy = d.rows["y0"].1.expect("sequence row");
    assert_ne!(hx, hy);
    assert_eq!(d.rows["y1"].1, Some(hy));
    assert_eq!(
        d.releases,
        vec![
            Release {
                sequence: hx,
                reason: ReleaseReason::Idle
            },
            Release {
                sequence: hy,
                reason: ReleaseReason::End
            },
        ]
    );
    assert_eq!(record(&d.sink, "x1").status, Status::Rejected);

    // S9: one slot, 5 s executions, 3 s timeouts: seq 2's backlog expires.
    let s = settings(
        r#"name: "m" max_batch_size: 1
        sequence_batching { max_sequence_idle_microseconds: 60000000 direct {} }"#,
    );
    let timed = |id: &str, t, corr, start, end| Request {
        timeout_us: 3 * S,
        ..sreq(id, t, corr, start, end)
    };
    let trace = vec![
        timed("a0", 0, 1, true, false),
        timed("b0", S, 2, true, false),
        timed("a1", 2 * S, 1, false, true),
    ];
    let d = drive_at_completion(&s, &[Latency::constant(5 * S)], trace);
    assert_eq!(record(&d.sink, "b0").status, Status::TimedOut);
    let ha = d.rows["a0"].1.unwrap();
    assert_eq!(d.releases.len(), 2);
    assert_eq!(d.releases[0].reason, ReleaseReason::BacklogTimeout);
    assert_ne!(d.releases[0].sequence, ha);
    assert_eq!(
        d.releases[1],
        Release {
            sequence: ha,
            reason: ReleaseReason::End
        }
    );
    assert_eq!(d.padding, 0);
}

#[test]
fn direct_padding_rows_have_no_request_and_no_sequence() {
    let s = settings(r#"name: "m" max_batch_size: 2 sequence_batching { direct {} }"#);
    let mut sched = Scheduler::new(&s);
    let mut sink = CollectSink::default();
    let mut started = Vec::new();
    sched.arrive(0, sreq("a", 0, 1, true, false), &mut sink);
    sched.arrive(0, sreq("b", 0, 2, true, false), &mut sink);
    sched.poll(0, &mut sink, &mut started);
    assert_eq!(started, vec![0]);
    sched.complete(10, 0, &mut sink);
    sched.arrive(20, sreq("b1", 20, 2, false, false), &mut sink);
    sched.poll(20, &mut sink, &mut started);
    let b = sched.batch(0);
    assert_eq!(b.size, 2);
    assert!(b.rows[0].request.is_none() && b.rows[0].sequence.is_none());
    assert_eq!(b.rows[0].slot, Some(0));
    assert_eq!(b.rows[1].request.as_ref().unwrap().id, "b1");
    let slots = b.executed_slot_records();
    assert_eq!(
        slots
            .iter()
            .map(|s| (s.ready, s.corrid.clone()))
            .collect::<Vec<_>>(),
        vec![(false, CorrId::Int(0)), (true, CorrId::Int(2))]
    );
    // Not recorded before completion; recorded once.
    assert_eq!(sink.batches.len(), 1);
    sched.complete(30, 0, &mut sink);
    sched.complete(30, 0, &mut sink);
    assert_eq!(sink.batches.len(), 2);
    assert_eq!((sink.batches[1].start_us, sink.batches[1].end_us), (20, 30));
    assert_eq!(sched.next_deadline(), Some(1_000_000), "idle timeout of a");
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
