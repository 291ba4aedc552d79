//! The driver API: a real-clock driver's view (records at completion,
//! releases, padding rows).

use super::*;

/// What a real-clock driver sees, recorded by [`drive_at_completion`].
#[derive(Default)]
pub(super) struct Driven {
    pub(super) sink: CollectSink,
    releases: Vec<Release>,
    /// Request id -> (tag, sequence handle) as dispatched.
    rows: std::collections::HashMap<String, (u64, Option<SeqHandle>)>,
    /// Direct padding rows dispatched.
    padding: usize,
}

/// Drives a [`Scheduler`] the way a real-clock runner does: records are
/// emitted only when a batch completes (`complete`), never at dispatch.
pub(super) fn drive_at_completion(s: &Settings, lats: &[Latency], trace: Vec<Request>) -> Driven {
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
