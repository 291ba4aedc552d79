use super::search::{exhaustive, fewest_instances, Evaluate, Objective, Outcome};
use super::*;
use crate::batching::Latency;
use crate::trace::{Distribution, GenerateOptions};
use proptest::prelude::*;
use proptest::strategy::Strategy as Gen;

const DYNAMIC: &str = "name: \"m\"\nbackend: \"python\"\nmax_batch_size: MBS\n\
input [ { name: \"X\" data_type: TYPE_FP32 dims: [ 1 ] } ]\n\
output [ { name: \"Y\" data_type: TYPE_FP32 dims: [ 1 ] } ]\n\
instance_group [ { count: 1 kind: KIND_CPU } ]\n";

const SEQUENCE: &str = "name: \"m\"\nbackend: \"python\"\nmax_batch_size: MBS\n\
input [ { name: \"X\" data_type: TYPE_FP32 dims: [ 1 ] } ]\n\
output [ { name: \"Y\" data_type: TYPE_FP32 dims: [ 1 ] } ]\n\
sequence_batching {\n  max_sequence_idle_microseconds: 100000000\n  control_input [\n    { name: \"START\" control [ { kind: CONTROL_SEQUENCE_START fp32_false_true: [ 0, 1 ] } ] },\n    { name: \"READY\" control [ { kind: CONTROL_SEQUENCE_READY fp32_false_true: [ 0, 1 ] } ] }\n  ]\n}\n";

/// A model directory holding `config` (and an empty `1/model.py`).
fn model_dir(config: &str) -> (tempfile::TempDir, Loaded) {
    let d = tempfile::tempdir().unwrap();
    let m = d.path().join("m");
    std::fs::create_dir_all(m.join("1")).unwrap();
    std::fs::write(m.join("1/model.py"), "").unwrap();
    std::fs::write(m.join("config.pbtxt"), config).unwrap();
    let loaded = crate::simulate::load_config(&m, &[]).unwrap();
    (d, loaded)
}

fn workload(rate: f64, requests: u64, sequences: u64, seed: u64) -> Workload {
    let mut o = GenerateOptions::new(rate);
    o.distribution = Distribution::Poisson;
    o.requests = Some(requests);
    o.sequences = sequences;
    o.sequence_length = 3;
    o.think_time_us = 700;
    o.seed = seed;
    workload::generated(&o).unwrap()
}

/// The best `(instances, objective value, setting, count)` of a search.
fn optimum(found: &search::Found, tuner: &mut Tuner) -> Option<(usize, u64, usize, u32)> {
    found.best.map(|i| {
        let t = &found.tried[i];
        let Outcome::Done(p) = &t.outcome else {
            panic!("the winner was simulated to the end")
        };
        (
            tuner.instances(t.setting, t.count).unwrap(),
            p.objective_us.unwrap(),
            t.setting,
            t.count,
        )
    })
}

fn latency_curve() -> impl Gen<Value = Latency> {
    prop_oneof![
        (0.0f64..3000.0, 0.0f64..1500.0).prop_map(|(a, b)| Latency::Linear { a, b }),
        // Any shape, falling and rising: nothing assumes monotone costs.
        proptest::collection::vec(1u64..6000, 4).prop_map(|v| Latency::Points(
            v.iter()
                .enumerate()
                .map(|(i, &us)| (1u32 << i, us))
                .collect()
        )),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// The pruned search finds the same optimum as simulating the whole
    /// grid to the end: same instances, same objective value, same
    /// candidate.
    #[test]
    fn the_pruned_search_finds_the_optimum_of_the_whole_grid(
        sequence in any::<bool>(),
        mbs in prop_oneof![Just(0u32), Just(2), Just(4), Just(8)],
        delays in proptest::sample::subsequence(vec![0u64, 100, 500, 2000, 8000], 1..=3),
        max_instances in 1u32..=4,
        latency in latency_curve(),
        rate in 100.0f64..4000.0,
        requests in 20u64..150,
        seed in any::<u64>(),
        percentile in prop_oneof![Just(50.0), Just(90.0), Just(99.0), Just(100.0)],
        slo_us in 500u64..20_000,
    ) {
        let template = if sequence { SEQUENCE } else { DYNAMIC };
        let mbs = if sequence { mbs.max(1) } else { mbs };
        let (_d, base) = model_dir(&template.replace("MBS", &mbs.to_string()));
        let w = workload(rate, requests, if sequence { requests / 3 + 1 } else { 0 }, seed);
        let space = space::space(base.config(), &SpaceOptions {
            max_instances,
            max_batch_size: None,
            delays_us: delays,
        }).unwrap();
        let objective = Objective { percentile, slo_us };
        let n = space.settings.len();
        let mut pruned = Tuner::new(&base, &latency, &w.requests, &space, percentile);
        let a = fewest_instances(&mut pruned, n, max_instances, objective);
        let mut full = Tuner::new(&base, &latency, &w.requests, &space, percentile);
        let b = exhaustive(&mut full, n, max_instances, objective);
        prop_assert_eq!(optimum(&a, &mut pruned), optimum(&b, &mut full));
        prop_assert!(a.tried.len() <= b.tried.len());
    }
}

/// A search-level model: the candidates refused are the ones that would
/// win; they never do.
struct Table(Vec<Vec<Outcome>>);

impl Evaluate for Table {
    fn evaluate(&mut self, s: usize, c: u32, _: f64, _: Option<u64>) -> Outcome {
        self.0[s][c as usize - 1].clone()
    }
}

fn prediction(objective_us: u64) -> Prediction {
    Prediction {
        latency_us: Latencies {
            p50: Some(objective_us / 2),
            p90: Some(objective_us),
            p95: Some(objective_us),
            p99: Some(objective_us),
        },
        objective_us: Some(objective_us),
        throughput_per_s: 1.0,
        utilization: 0.5,
        requests: 10,
        ok: 10,
        mean_batch_size: 1.0,
    }
}

#[test]
fn a_refused_candidate_never_wins_the_search() {
    let refused = || Outcome::Refused(vec!["E0809: refused".into()]);
    let objective = Objective {
        percentile: 99.0,
        slo_us: 1000,
    };
    // Setting 0 would meet the objective with 1 instance, but is refused;
    // setting 1 meets it with 2.
    let mut t = Table(vec![
        vec![refused(), refused(), refused()],
        vec![
            Outcome::Done(prediction(5000)),
            Outcome::Done(prediction(900)),
            Outcome::Done(prediction(100)),
        ],
    ]);
    for found in [
        fewest_instances(&mut t, 2, 3, objective),
        exhaustive(&mut t, 2, 3, objective),
    ] {
        let w = &found.tried[found.best.unwrap()];
        assert_eq!((w.setting, w.count), (1, 2));
    }
}

/// The stateful backend refuses the Oldest strategy with
/// max_candidate_sequences × 0.9 below max_batch_size (E0809): those
/// candidates are refused, the recommended one validates as the config
/// itself does, and the search says why the others were refused.
#[test]
fn candidates_validate_refuses_are_reported_and_never_recommended() {
    let config = "name: \"acc\"\nbackend: \"stateful\"\nmax_batch_size: 4\n\
sequence_batching {\n  oldest { max_candidate_sequences: 1280 }\n  control_input [\n\
    { name: \"ResetSequence\" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] },\n\
    { name: \"EndSequence\" control [ { kind: CONTROL_SEQUENCE_END int32_false_true: [ 0, 1 ] } ] },\n\
    { name: \"CORRID\" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 } ] }\n  ]\n}\n\
input [ { name: \"Input\" data_type: TYPE_FP32 dims: [ 4, -1, 5 ] } ]\n\
output [ { name: \"Output\" data_type: TYPE_FP32 dims: [ 4, -1, 5 ] } ]\n\
parameters [\n  { key: \"onnx_file_name\" value { string_value: \"accumulate_fp32.onnx\" } },\n\
  { key: \"state_pairs\" value { string_value: \"<<<Accumulate_In, Accumulate_Out>>>\" } }\n]\n\
instance_group [ { count: 1 kind: KIND_CPU } ]\n";
    let (_d, base) = model_dir(config);
    let w = workload(3000.0, 400, 120, 3);
    let latency = Latency::Linear { a: 400.0, b: 100.0 };
    let opts = TuneOptions {
        space: SpaceOptions {
            max_instances: 3,
            max_batch_size: None,
            delays_us: vec![0, 500],
        },
        objective: Objective {
            percentile: 99.0,
            slo_us: 3000,
        },
        goal: Goal::Instances,
        overhead_us: 0,
    };
    let t = tune(&base, &latency, &w, &opts).unwrap();
    let refused: Vec<_> = t
        .tried
        .iter()
        .filter_map(|(x, _, _)| match &x.outcome {
            Outcome::Refused(why) => Some((x.setting, x.count, why.clone())),
            _ => None,
        })
        .collect();
    assert!(!refused.is_empty());
    for (s, _, why) in &refused {
        assert!(why.iter().any(|w| w.starts_with("E0809")), "{why:?}");
        assert!(
            matches!(t.space.settings[*s].strategy, super::Strategy::Oldest { max_candidate_sequences } if (max_candidate_sequences as f32 * 0.9) < t.space.settings[*s].max_batch_size.unwrap() as f32)
                || matches!(t.space.settings[*s].strategy, super::Strategy::Direct),
            "{:?}",
            t.space.settings[*s]
        );
    }
    let r = &t.recommended;
    assert!(!refused
        .iter()
        .any(|(s, c, _)| t.space.settings[*s] == r.setting && *c == r.count));
    let base_errors = crate::simulate::sweep::config_errors(&base, &base.parsed.src);
    assert!(
        crate::simulate::sweep::check_setting(&base, &base_errors, r.config_text.clone()).is_ok()
    );
}

#[test]
fn predictions_count_unanswered_requests_as_late_and_stop_early() {
    let (_d, base) = model_dir(&DYNAMIC.replace("MBS", "4"));
    let settings = base.settings(base.config()).unwrap();
    // One instance, 1 ms per batch of one (no dynamic batching: the
    // default scheduler), requests every 0.5 ms: the queue grows.
    let latency = Latency::constant(1000);
    let requests: Vec<_> = (0..100)
        .map(|i| crate::batching::Request::new(format!("r{i}"), i * 500))
        .collect();
    let p = predict_at_client(&settings, &latency, &requests, 1.0, 99.0, None, 0).unwrap();
    assert_eq!(p.ok, 100);
    // Request i runs from 1000·i to 1000·(i + 1): its latency is
    // 1000 + 500·i, and the 99th of 100 is i = 98.
    assert_eq!(p.latency_us.p99, Some(1000 + 500 * 98));
    assert!((p.utilization - 1.0).abs() < 0.01, "{}", p.utilization);
    // Twice as slow arrivals: each request is alone.
    let p = predict_at_client(&settings, &latency, &requests, 2.0, 99.0, None, 0).unwrap();
    assert_eq!(p.latency_us.p99, Some(1000));
    // A bound the run misses stops it.
    assert!(
        predict_at_client(&settings, &latency, &requests, 1.0, 99.0, Some(10_000), 0).is_none()
    );
    assert!(
        predict_at_client(&settings, &latency, &requests, 1.0, 99.0, Some(60_000), 0).is_some()
    );
}
