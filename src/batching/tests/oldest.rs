//! The Oldest sequence batcher (docs/spec/schedulers.md §3.11).

use super::*;

const DOCS_OLDEST: &str = r#"name: "m" max_batch_size: 2
    sequence_batching { oldest { max_candidate_sequences: 4 } }"#;

pub(super) fn oldest_trace(d_before_c: bool) -> Vec<Request> {
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
