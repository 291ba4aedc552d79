//! The dynamic batcher: the worked examples of docs/spec/schedulers.md §2.9
//! (preferred sizes, delays, shape breaks, pipelining, queue policies,
//! priority levels, preserve_ordering).

use super::*;

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
    // default; docs/spec/schedulers.md §2.6, docs/spec/schedulers-observed.md):
    // while x runs, [a] is built ahead (a+b passes MAXP 6), [b] follows when
    // its delay expires at 10 s; at 11 s the instance takes [a] and merges [b]
    // (it waited longer than the delay, 3+4 <= 8); c then waits its own delay.
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
    // instance; the time per batch passed to `run` is that recording's).
    // r2 (3) is cut into its own payload when
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
