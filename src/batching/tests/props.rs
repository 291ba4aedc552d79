//! Invariants of every scheduler on random traces (proptest).

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
