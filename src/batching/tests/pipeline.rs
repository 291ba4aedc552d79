//! The ensemble driver: steps in order, each on its own scheduler.

use super::*;

#[derive(Default, Debug, PartialEq)]
struct Collected {
    steps: Vec<(usize, RequestRecord)>,
    batches: Vec<(usize, BatchRecord)>,
    requests: Vec<RequestRecord>,
}

impl PipelineSink for Collected {
    fn step_request(&mut self, model: usize, r: RequestRecord) {
        self.steps.push((model, r));
    }
    fn step_batch(&mut self, model: usize, b: BatchRecord) {
        self.batches.push((model, b));
    }
    fn request(&mut self, r: RequestRecord) {
        self.requests.push(r);
    }
}

impl Collected {
    /// (start, end, request ids) of `model`'s batches, by start.
    fn of(&self, model: usize) -> Vec<(u64, u64, Vec<&str>)> {
        let mut v: Vec<_> = self
            .batches
            .iter()
            .filter(|(m, _)| *m == model)
            .map(|(_, b)| {
                (
                    b.start_us,
                    b.end_us,
                    b.requests.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        v.sort();
        v
    }

    fn ensemble(&self, id: &str) -> &RequestRecord {
        let v: Vec<_> = self.requests.iter().filter(|r| r.id == id).collect();
        assert_eq!(v.len(), 1, "ensemble request {id} must end exactly once");
        v[0]
    }
}

fn model(pbtxt: &str, latency_us: u64) -> PipelineModel {
    PipelineModel {
        settings: settings(pbtxt),
        latencies: vec![Latency::constant(latency_us)],
    }
}

fn step(model: usize, after: &[usize], output: bool) -> PipelineStep {
    PipelineStep {
        model,
        after: after.to_vec(),
        output,
    }
}

fn run_pipeline(p: &Pipeline, trace: Vec<Request>) -> Collected {
    p.check().expect("valid pipeline");
    let mut c = Collected::default();
    simulate_pipeline(p, trace, &mut c);
    c
}

const PLAIN_A: &str = r#"name: "a" max_batch_size: 0"#;
const PLAIN_B: &str = r#"name: "b" max_batch_size: 0"#;

#[test]
fn a_two_step_chain_sends_the_second_step_when_the_first_answers() {
    let p = Pipeline {
        name: "e".into(),
        models: vec![model(PLAIN_A, 10 * MS), model(PLAIN_B, 5 * MS)],
        steps: vec![step(0, &[], false), step(1, &[0], true)],
    };
    let c = run_pipeline(&p, vec![req("r0", 0, 1), req("r1", 2 * MS, 1)]);
    // a runs one request at a time: r0 0–10, r1 10–20; b gets each as a
    // answers: r0 10–15, r1 20–25.
    assert_eq!(
        c.of(0),
        vec![(0, 10 * MS, vec!["r0"]), (10 * MS, 20 * MS, vec!["r1"])]
    );
    assert_eq!(
        c.of(1),
        vec![
            (10 * MS, 15 * MS, vec!["r0"]),
            (20 * MS, 25 * MS, vec!["r1"])
        ]
    );
    for (id, arrival, end) in [("r0", 0, 15 * MS), ("r1", 2 * MS, 25 * MS)] {
        let r = c.ensemble(id);
        assert_eq!(
            (r.status, r.arrival_us, r.end_us),
            (Status::Ok, arrival, Some(end))
        );
    }
    // The step request reaches b when a's response leaves: its queue time
    // on b is 0, on a it is r1's wait behind r0.
    let b_r1 = c
        .steps
        .iter()
        .find(|(m, r)| *m == 1 && r.id == "r1")
        .unwrap();
    assert_eq!(
        (b_r1.1.arrival_us, b_r1.1.start_us),
        (20 * MS, Some(20 * MS))
    );
    let a_r1 = c
        .steps
        .iter()
        .find(|(m, r)| *m == 0 && r.id == "r1")
        .unwrap();
    assert_eq!(
        (a_r1.1.arrival_us, a_r1.1.start_us),
        (2 * MS, Some(10 * MS))
    );
}

#[test]
fn a_diamond_step_waits_for_both_of_its_inputs() {
    let p = Pipeline {
        name: "e".into(),
        models: vec![
            model(PLAIN_A, 10 * MS),
            model(PLAIN_B, 4 * MS),
            model(r#"name: "c" max_batch_size: 0"#, MS),
        ],
        steps: vec![
            step(0, &[], false),
            step(1, &[], false),
            step(2, &[0, 1], true),
        ],
    };
    let c = run_pipeline(&p, vec![req("r0", 0, 1)]);
    // a and b start at once; c only when the slower (a) has answered.
    assert_eq!(c.of(0), vec![(0, 10 * MS, vec!["r0"])]);
    assert_eq!(c.of(1), vec![(0, 4 * MS, vec!["r0"])]);
    assert_eq!(c.of(2), vec![(10 * MS, 11 * MS, vec!["r0"])]);
    assert_eq!(c.ensemble("r0").end_us, Some(11 * MS));
}

#[test]
fn the_response_waits_for_every_output_step_not_for_the_others() {
    // Step 0 feeds the output step 1 and a slow step 2 whose result is not
    // an ensemble output: the response leaves when step 1 answers, step 2
    // still runs.
    let p = Pipeline {
        name: "e".into(),
        models: vec![
            model(PLAIN_A, MS),
            model(PLAIN_B, MS),
            model(r#"name: "c" max_batch_size: 0"#, 50 * MS),
        ],
        steps: vec![
            step(0, &[], false),
            step(1, &[0], true),
            step(2, &[0], false),
        ],
    };
    let c = run_pipeline(&p, vec![req("r0", 0, 1)]);
    assert_eq!(c.ensemble("r0").end_us, Some(2 * MS));
    assert_eq!(c.of(2), vec![(MS, 51 * MS, vec!["r0"])]);
}

#[test]
fn sequence_flags_and_ids_pass_through_to_a_stateful_step() {
    let p = Pipeline {
        name: "e".into(),
        models: vec![
            model(r#"name: "pre" max_batch_size: 4 dynamic_batching {}"#, MS),
            model(
                r#"name: "s" max_batch_size: 2
                   sequence_batching { direct {} }"#,
                2 * MS,
            ),
        ],
        steps: vec![step(0, &[], false), step(1, &[0], true)],
    };
    let trace = vec![
        sreq("s0", 0, 7, true, false),
        sreq("t0", MS / 2, 9, true, true),
        sreq("s1", 20 * MS, 7, false, false),
        sreq("s2", 40 * MS, 7, false, true),
    ];
    let c = run_pipeline(&p, trace);
    let rows: Vec<(String, Option<CorrId>, bool, bool)> = c
        .batches
        .iter()
        .filter(|(m, _)| *m == 1)
        .flat_map(|(_, b)| b.executed_slots().to_vec())
        .filter_map(|s| Some((s.request?, s.sequence_id, s.start, s.end)))
        .collect();
    let seven = Some(CorrId::Int(7));
    assert_eq!(
        rows,
        vec![
            ("s0".into(), seven.clone(), true, false),
            ("t0".into(), Some(CorrId::Int(9)), true, true),
            ("s1".into(), seven.clone(), false, false),
            ("s2".into(), seven.clone(), false, true),
        ]
    );
    assert!(c.requests.iter().all(|r| r.status == Status::Ok));
    assert_eq!(c.ensemble("s2").sequence_id, seven);
}

#[test]
fn a_rejected_step_fails_the_ensemble_request_with_its_reason_and_stops_it() {
    let p = Pipeline {
        name: "ens".into(),
        models: vec![
            model(r#"name: "a" max_batch_size: 8 dynamic_batching {}"#, 3 * MS),
            model(r#"name: "b" max_batch_size: 2 dynamic_batching {}"#, MS),
            model(r#"name: "c" max_batch_size: 8 dynamic_batching {}"#, MS),
        ],
        steps: vec![
            step(0, &[], false),
            step(1, &[0], false),
            step(2, &[1], true),
        ],
    };
    let c = run_pipeline(&p, vec![req("big", 0, 4), req("small", 10 * MS, 1)]);
    let big = c.ensemble("big");
    assert_eq!(big.status, Status::Rejected);
    assert_eq!(
        big.end_us,
        Some(3 * MS),
        "rejected when a's response reaches b"
    );
    assert_eq!(
        big.reason.as_deref(),
        Some("in ensemble 'ens', [request id: big] inference request batch-size must be <= 2 for 'b'")
    );
    assert_eq!(
        c.of(2),
        vec![(14 * MS, 15 * MS, vec!["small"])],
        "big never reaches c"
    );
    assert_eq!(c.ensemble("small").status, Status::Ok);
}

#[test]
fn one_model_in_two_steps_shares_its_scheduler() {
    let p = Pipeline {
        name: "e".into(),
        models: vec![model(PLAIN_A, 10 * MS)],
        steps: vec![step(0, &[], false), step(0, &[0], true)],
    };
    let c = run_pipeline(&p, vec![req("r0", 0, 1), req("r1", MS, 1)]);
    // r1's first step queues before r0's second step is sent.
    assert_eq!(
        c.of(0),
        vec![
            (0, 10 * MS, vec!["r0"]),
            (10 * MS, 20 * MS, vec!["r1"]),
            (20 * MS, 30 * MS, vec!["r0"]),
            (30 * MS, 40 * MS, vec!["r1"])
        ]
    );
    assert_eq!(c.ensemble("r0").end_us, Some(30 * MS));
}

#[test]
fn plans_that_cannot_run_are_refused() {
    let m = || vec![model(PLAIN_A, MS)];
    let bad = [
        vec![],
        vec![step(1, &[], true)],
        vec![step(0, &[0], true)],
        vec![step(0, &[1], false), step(0, &[0], true)],
        vec![step(0, &[5], true)],
    ];
    for steps in bad {
        let p = Pipeline {
            name: "e".into(),
            models: m(),
            steps: steps.clone(),
        };
        assert!(p.check().is_err(), "{steps:?}");
        let mut c = Collected::default();
        simulate_pipeline(&p, vec![req("r0", 0, 1)], &mut c);
        assert_eq!(c, Collected::default());
    }
}

/// A three-step chain over batching models of different sizes, with a
/// busy trace: every request goes through every step once, in order, and
/// no batch is above its model's max_batch_size.
#[test]
fn every_request_goes_through_every_step_in_order_within_each_max_batch_size() {
    let p = Pipeline {
        name: "e".into(),
        models: vec![
            model(
                r#"name: "a" max_batch_size: 4 instance_group [{count: 2}]
                   dynamic_batching { preferred_batch_size: [2, 4] max_queue_delay_microseconds: 1000 }"#,
                3 * MS,
            ),
            model(r#"name: "b" max_batch_size: 2 dynamic_batching {}"#, MS),
            model(
                r#"name: "c" max_batch_size: 8 dynamic_batching { max_queue_delay_microseconds: 500 }"#,
                2 * MS,
            ),
        ],
        steps: vec![
            step(0, &[], false),
            step(1, &[0], false),
            step(2, &[1], true),
        ],
    };
    let mbs = [4, 2, 8];
    // A deterministic irregular trace: 300 requests, 0–600 µs apart.
    let mut x = 12345u64;
    let mut t = 0;
    let trace: Vec<Request> = (0..300)
        .map(|i| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            t += (x >> 33) % 600;
            req(&format!("r{i}"), t, 1)
        })
        .collect();
    let c = run_pipeline(&p, trace.clone());
    let mut seen: std::collections::HashMap<&str, Vec<(usize, u64, u64)>> = Default::default();
    for (m, b) in &c.batches {
        assert!(b.size <= mbs[*m], "model {m}: batch of {}", b.size);
        assert_eq!(b.size as usize, b.requests.len());
        for id in &b.requests {
            seen.entry(id).or_default().push((*m, b.start_us, b.end_us));
        }
    }
    assert_eq!(c.requests.len(), trace.len());
    for r in &trace {
        let mut steps = seen[r.id.as_str()].clone();
        steps.sort_by_key(|s| s.1);
        assert_eq!(
            steps.iter().map(|s| s.0).collect::<Vec<_>>(),
            vec![0, 1, 2],
            "{}",
            r.id
        );
        assert!(steps[0].1 >= r.arrival_us);
        for w in steps.windows(2) {
            assert!(
                w[1].1 >= w[0].2,
                "{}: a step started before the previous ended",
                r.id
            );
        }
        let e = c.ensemble(&r.id);
        assert_eq!((e.status, e.end_us), (Status::Ok, Some(steps[2].2)));
    }
    // Batches did form (the trace is busy enough to batch).
    assert!(c.batches.iter().any(|(m, b)| *m == 0 && b.size > 1));
    // Deterministic: the same run gives the same records.
    assert_eq!(run_pipeline(&p, trace), c);
}
