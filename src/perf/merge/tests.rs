use super::*;
use crate::perf::report::{Latency, Shard};
use crate::perf::rng::Rng;

/// A level of `perf --format json` as a worker writes it, with these
/// latency samples (µs) and, as its first responses, half of each.
fn level(concurrency: u64, samples: &[u64], window: (u64, u64)) -> LevelResult {
    let mut h = new_histogram();
    let mut first = new_histogram();
    for &s in samples {
        h.saturating_record(s);
        first.saturating_record((s / 2).max(1));
    }
    let ok = samples.len() as u64;
    LevelResult {
        concurrency: Some(concurrency),
        duration_s: (window.1 - window.0) as f64 / 1e6,
        requests: ok + 1,
        errors: 1,
        errors_by_kind: [("timeout".to_string(), 1)].into(),
        latency_us: (ok > 0).then(|| latency(&h, None)),
        cancelled: 2,
        responses: ok,
        responses_per_request: (ok > 0).then_some(PerRequest { mean: 1.0, max: 1 }),
        late_sends: 3,
        targets: vec![TargetCount {
            url: "h:8000".into(),
            requests: ok + 1,
        }],
        successful_requests: ok,
        inferences: ok * 2,
        successful_responses: ok,
        client_send_total_us: 10.0 * ok as f64,
        client_recv_total_us: 20.0 * ok as f64,
        window_start_us: window.0,
        window_end_us: window.1,
        histograms: Some(Histograms {
            latency_us: encode(&h),
            first_response_us: encode(&first),
            inter_response_us: None,
            sequence_latency_us: None,
        }),
        ..crate::perf::report::fixture::level()
    }
}

fn report(levels: Vec<LevelResult>) -> PerfReport {
    PerfReport {
        batch_size: 2,
        ..crate::perf::report::fixture::report(levels)
    }
}

/// `r` through its JSON document, as `perf merge` reads it.
fn through_json(name: &str, r: &PerfReport) -> Input {
    parse(name, &r.to_json()).unwrap()
}

/// Every quantile the merged histogram and `whole` are compared at.
fn quantiles() -> impl Iterator<Item = f64> {
    (0..=1000)
        .map(|i| f64::from(i) / 1000.0)
        .chain([0.9995, 0.9999, 0.99999])
}

fn assert_same(merged: &Histogram<u64>, whole: &Histogram<u64>) {
    assert_eq!(merged.len(), whole.len());
    assert_eq!(merged.min(), whole.min());
    assert_eq!(merged.max(), whole.max());
    assert_eq!(merged.mean(), whole.mean());
    for q in quantiles() {
        assert_eq!(
            merged.value_at_quantile(q),
            whole.value_at_quantile(q),
            "quantile {q}"
        );
    }
}

/// Latency samples spread over 5 decades, with a tail (seeded).
fn samples(seed: u64, n: usize) -> Vec<u64> {
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|_| {
            let base = 10u64.pow(1 + rng.below(5) as u32);
            base + rng.below(base * 9)
        })
        .collect()
}

#[test]
fn split_samples_merge_to_the_percentiles_of_all_samples() {
    let all = samples(7, 20_000);
    let mut whole = new_histogram();
    let mut whole_first = new_histogram();
    for &s in &all {
        whole.record(s).unwrap();
        whole_first.record((s / 2).max(1)).unwrap();
    }
    // three workers with unequal shares (every 2nd, 3rd by rest, others)
    let mut parts: [Vec<u64>; 3] = Default::default();
    for (i, &s) in all.iter().enumerate() {
        parts[if i % 2 == 0 {
            0
        } else if i % 3 == 0 {
            1
        } else {
            2
        }]
        .push(s);
    }
    let windows = [
        (1_000_000, 11_000_000),
        (1_200_000, 11_100_000),
        (900_000, 10_900_000),
    ];
    let inputs: Vec<Input> = parts
        .iter()
        .zip(windows)
        .enumerate()
        .map(|(i, (p, w))| through_json(&format!("w{i}.json"), &report(vec![level(4, p, w)])))
        .collect();
    let merged = merge(&inputs).unwrap();
    let l = &merged.levels[0];
    let h = decode(l.histograms.as_ref().unwrap().latency_us.as_ref().unwrap()).unwrap();
    assert_same(&h, &whole);
    let f = decode(
        l.histograms
            .as_ref()
            .unwrap()
            .first_response_us
            .as_ref()
            .unwrap(),
    )
    .unwrap();
    assert_same(&f, &whole_first);
    // the report's percentiles are the whole histogram's
    let want: Latency = latency(&whole, None);
    assert_eq!(l.latency_us.as_ref().unwrap(), &want);
    assert_eq!(l.first_response_us, Some(latency(&whole_first, None)));
    // what it read from the whole, checked against the samples themselves:
    // within the histogram's 3 significant digits of the exact order
    // statistic
    let mut sorted = all.clone();
    sorted.sort_unstable();
    let exact = |q: f64| sorted[((q * sorted.len() as f64).ceil() as usize).max(1) - 1];
    for (got, q) in [(want.p50, 0.5), (want.p90, 0.9), (want.p99, 0.99)] {
        let e = exact(q) as f64;
        assert!(
            (got as f64 - e).abs() <= e / 1000.0 + 1.0,
            "p{q}: {got} vs {e}"
        );
    }
    assert_eq!(want.max, whole.highest_equivalent(*sorted.last().unwrap()));
    // counters summed, window the union
    assert_eq!(l.successful_requests, 20_000);
    assert_eq!(l.requests, 20_003);
    assert_eq!(l.errors, 3);
    assert_eq!(l.errors_by_kind["timeout"], 3);
    assert_eq!(l.cancelled, 6);
    assert_eq!(l.late_sends, 9);
    assert_eq!(l.inferences, 40_000);
    assert_eq!(l.targets[0].requests, 20_003);
    assert_eq!((l.window_start_us, l.window_end_us), (900_000, 11_100_000));
    assert_eq!(l.duration_s, 10.2);
    assert_eq!(l.throughput_per_s, 40_000.0 / 10.2);
    assert_eq!(l.requests_per_s, 20_000.0 / 10.2);
    let c = l.client.as_ref().unwrap();
    assert_eq!((c.send_us, c.recv_us), (10.0, 20.0));
    // without shards the level is the workers' common one
    assert_eq!(l.concurrency, Some(4));
    assert_eq!(
        merged.merged_from.as_deref(),
        Some(&["w0.json".to_string(), "w1.json".into(), "w2.json".into()][..])
    );
    // and a merge merges again: with a fourth part, the same as all at once
    let more = samples(8, 500);
    let fourth = through_json("w3.json", &report(vec![level(4, &more, (0, 1))]));
    let again = merge(&[through_json("merged.json", &merged), fourth]).unwrap();
    for &s in &more {
        whole.record(s).unwrap();
    }
    let h = decode(
        again.levels[0]
            .histograms
            .as_ref()
            .unwrap()
            .latency_us
            .as_ref()
            .unwrap(),
    )
    .unwrap();
    assert_same(&h, &whole);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Any samples, split any way over 1 to 5 workers: the merge is the
    /// histogram of all of them, at every quantile.
    #[test]
    fn any_split_merges_exactly(
        picks in proptest::collection::vec((0u32..32, 0u64..1_000_000, 0usize..5), 1..400),
        workers in 1usize..6,
    ) {
        let mut whole = new_histogram();
        let mut parts = vec![Vec::new(); workers];
        for (bits, frac, w) in picks {
            // log-uniform over 1 µs .. 1 hour and above (saturated)
            let s = (1u64 << bits) + frac % (1u64 << bits);
            whole.saturating_record(s);
            parts[w % workers].push(s);
        }
        let inputs: Vec<Input> = parts
            .iter()
            .enumerate()
            .map(|(i, p)| through_json(&format!("w{i}"), &report(vec![level(1, p, (0, 10))])))
            .collect();
        let merged = merge(&inputs).unwrap();
        let l = &merged.levels[0];
        let h = decode(l.histograms.as_ref().unwrap().latency_us.as_ref().unwrap()).unwrap();
        assert_same(&h, &whole);
        proptest::prop_assert_eq!(l.latency_us.as_ref(), Some(&latency(&whole, None)));
    }
}

fn err(inputs: &[Input]) -> String {
    merge(inputs).unwrap_err().0
}

#[test]
fn documents_of_different_loads_are_refused_naming_the_files() {
    let a = report(vec![level(1, &[100], (0, 10)), level(2, &[200], (10, 20))]);
    let mut b = a.clone();
    b.model = "other".into();
    let e = err(&[through_json("a.json", &a), through_json("b.json", &b)]);
    assert!(
        e.contains("a.json and b.json") && e.contains("model"),
        "{e}"
    );

    let mut b = a.clone();
    b.levels[1].concurrency = Some(4);
    let e = err(&[through_json("a.json", &a), through_json("b.json", &b)]);
    assert!(
        e.contains("a.json and b.json measured different levels (concurrency 1, concurrency 2 and concurrency 1, concurrency 4)"),
        "{e}"
    );
    let mut b = a.clone();
    b.levels.pop();
    assert!(
        err(&[through_json("a.json", &a), through_json("b.json", &b)]).contains("different levels")
    );

    for (field, change) in [
        (
            "batch size",
            (|r: &mut PerfReport| r.batch_size = 4) as fn(&mut PerfReport),
        ),
        ("mode", |r| r.mode = "request_rate".into()),
        ("protocol", |r| r.protocol = "grpc".into()),
        ("request distribution", |r| {
            r.request_distribution = Some("poisson".into())
        }),
    ] {
        let mut b = a.clone();
        change(&mut b);
        let e = err(&[through_json("a.json", &a), through_json("b.json", &b)]);
        assert!(
            e.contains("a.json and b.json") && e.contains(field),
            "{field}: {e}"
        );
    }
}

#[test]
fn shards_are_summed_and_each_is_taken_once() {
    let shard = |index: u64, concurrency: u64| {
        let mut r = report(vec![level(concurrency, &[100, 200], (0, 1_000_000))]);
        r.shard = Some(Shard { index, count: 3 });
        r
    };
    // concurrency 8 over 3 workers: 3, 3, 2
    let inputs = [
        through_json("s0", &shard(0, 3)),
        through_json("s1", &shard(1, 3)),
        through_json("s2", &shard(2, 2)),
    ];
    let merged = merge(&inputs).unwrap();
    assert_eq!(merged.levels[0].concurrency, Some(8));
    assert_eq!(merged.levels[0].successful_requests, 6);
    assert!(merged.warnings.is_empty(), "{:?}", merged.warnings);
    assert_eq!(merged.shard, None);
    // two of three: merged, with a warning
    let partial = merge(&inputs[..2]).unwrap();
    assert!(
        partial.warnings[0].contains("2 of 3 shards merged (indexes 0, 1)"),
        "{:?}",
        partial.warnings
    );

    let e = err(&[
        through_json("s0", &shard(0, 3)),
        through_json("again", &shard(0, 3)),
    ]);
    assert!(
        e.contains("s0 and again are the same shard (0 of 3)"),
        "{e}"
    );
    let e = err(&[
        through_json("s0", &shard(0, 3)),
        through_json("plain", &report(vec![level(3, &[1], (0, 1))])),
    ]);
    assert!(
        e.contains("s0 is one shard of a load (--shard) and plain is not"),
        "{e}"
    );
    let mut four = shard(1, 3);
    four.shard = Some(Shard { index: 1, count: 4 });
    let e = err(&[through_json("s0", &shard(0, 3)), through_json("s1", &four)]);
    assert!(e.contains("different numbers of shards (3 and 4)"), "{e}");
}

#[test]
fn open_loop_shares_sum_to_the_full_rate() {
    let shard = |index: u64| {
        let mut l = level(0, &[100], (0, 1_000_000));
        l.concurrency = None;
        l.request_rate = Some(100.0 / 3.0);
        let mut r = report(vec![l]);
        r.mode = "request_rate".into();
        r.request_distribution = Some("poisson".into());
        r.shard = Some(Shard { index, count: 3 });
        r
    };
    let inputs: Vec<Input> = (0..3)
        .map(|i| through_json(&format!("s{i}"), &shard(i)))
        .collect();
    let merged = merge(&inputs).unwrap();
    let rate = merged.levels[0].request_rate.unwrap();
    assert!((rate - 100.0).abs() < 1e-9, "{rate}");
    assert_eq!(merged.levels[0].concurrency, None);
    assert_eq!(merged.request_distribution.as_deref(), Some("poisson"));
}

#[test]
fn unreadable_documents_are_named_with_their_position() {
    let e = parse("bad.json", "{\n  \"model\": \"m\",\n  \"levels\": [1,,]\n}")
        .unwrap_err()
        .0;
    assert!(e.starts_with("bad.json:3:16: "), "{e}");
    assert!(!e.contains(" at line "), "{e}");
    let e = parse("x.json", "[1, 2]").unwrap_err().0;
    assert!(
        e.contains("x.json: not a document of `tritonctl perf --format json`"),
        "{e}"
    );
    // a level without histograms: a document of an older tritonctl
    let mut doc: Value =
        serde_json::from_str(&report(vec![level(1, &[5], (0, 1))]).to_json()).unwrap();
    doc["levels"][0]
        .as_object_mut()
        .unwrap()
        .remove("histograms");
    let e = parse("old.json", &doc.to_string()).unwrap_err().0;
    assert!(e.contains("old.json: level 1 has no \"histograms\""), "{e}");
    // a histogram that is not one
    let mut doc: Value =
        serde_json::from_str(&report(vec![level(1, &[5], (0, 1))]).to_json()).unwrap();
    doc["levels"][0]["histograms"]["latency_us"] = "HISTFAAAxyz=".into();
    let input = parse("h.json", &doc.to_string()).unwrap();
    let e = err(&[input]);
    assert!(
        e.starts_with("h.json: level 1: histogram latency_us: "),
        "{e}"
    );
    // wrong types keep their position
    let e = parse(
        "t.json",
        "{\"model\": \"m\", \"levels\": [{\"concurrency\": \"x\"}]}",
    )
    .unwrap_err()
    .0;
    assert!(e.starts_with("t.json:1:"), "{e}");
}

#[test]
fn a_written_level_reads_back_with_every_field() {
    let l = level(2, &[1, 10, 100], (5, 9));
    let r = report(vec![l.clone()]);
    let back = through_json("r", &r).report;
    let b = &back.levels[0];
    assert_eq!(b.histograms, l.histograms);
    assert_eq!(
        (
            b.successful_requests,
            b.inferences,
            b.successful_responses,
            b.window_start_us,
            b.window_end_us
        ),
        (3, 6, 3, 5, 9)
    );
    assert_eq!(
        (b.client_send_total_us, b.client_recv_total_us),
        (30.0, 60.0)
    );
    // the document written is the one read: nothing lost on the way
    assert_eq!(back.to_json(), r.to_json());
}

#[test]
fn the_chosen_percentile_and_the_threshold_come_from_the_merged_histogram() {
    let (a, b) = (samples(1, 3000), samples(2, 1000));
    let mut whole = new_histogram();
    for &s in a.iter().chain(&b) {
        whole.record(s).unwrap();
    }
    let with = |samples: &[u64]| {
        let mut r = report(vec![level(2, samples, (0, 1_000_000))]);
        r.percentile = Some(85);
        r.latency_threshold_ms = Some(whole.value_at_quantile(0.85) as f64 / 1000.0 + 0.001);
        r
    };
    let merged = merge(&[through_json("a", &with(&a)), through_json("b", &with(&b))]).unwrap();
    let l = &merged.levels[0];
    assert_eq!(l.percentile_latency_us, Some(whole.value_at_quantile(0.85)));
    assert_eq!(
        l.latency_us.as_ref().unwrap().chosen,
        Some((85, whole.value_at_quantile(0.85)))
    );
    // p85 is just below the threshold: met
    assert_eq!(l.latency_threshold_met, Some(true));
    let mut tight = with(&a);
    tight.latency_threshold_ms = Some(whole.value_at_quantile(0.85) as f64 / 1000.0);
    let mut tight_b = with(&b);
    tight_b.latency_threshold_ms = tight.latency_threshold_ms;
    let merged = merge(&[through_json("a", &tight), through_json("b", &tight_b)]).unwrap();
    assert_eq!(merged.levels[0].latency_threshold_met, Some(false));
}

#[test]
fn fields_of_a_fixed_set_with_another_value_are_refused() {
    let a = report(vec![level(1, &[100], (0, 10))]);
    for (field, change) in [
        (
            "mode",
            (|r: &mut PerfReport| r.mode = "concurrency\x1b[31m".into()) as fn(&mut PerfReport),
        ),
        ("endpoint", |r| r.endpoint = "infer\x1b]0;x\x07".into()),
        ("protocol", |r| r.protocol = "ftp".into()),
        ("input_tensor_format", |r| {
            r.input_tensor_format = "\x1b[2J".into()
        }),
        ("output_tensor_format", |r| {
            r.output_tensor_format = "raw".into()
        }),
        ("request_distribution", |r| {
            r.request_distribution = Some("uniform".into())
        }),
    ] {
        let mut b = a.clone();
        change(&mut b);
        let e = parse("b.json", &b.to_json()).unwrap_err().0;
        assert!(
            e.starts_with(&format!("b.json: \"{field}\" is '")),
            "{field}: {e}"
        );
        assert!(!e.contains('\x1b') && !e.contains('\x07'), "{e:?}");
    }
    // --percentile takes 1 to 100
    for (p, ok) in [
        (0u8, false),
        (1, true),
        (100, true),
        (101, false),
        (250, false),
    ] {
        let mut b = a.clone();
        b.percentile = Some(p);
        let got = parse("p.json", &b.to_json());
        assert_eq!(got.is_ok(), ok, "{p}");
        if !ok {
            let e = got.unwrap_err().0;
            assert!(e.contains("p.json: \"percentile\" is"), "{e}");
        }
    }
}

#[test]
fn error_kinds_from_a_file_are_shown_escaped() {
    let mut l = level(1, &[100], (0, 1_000_000));
    l.errors_by_kind = [("HTTP 500 \x1b[31mred".to_string(), 1)].into();
    let merged = merge(&[through_json("a", &report(vec![l]))]).unwrap();
    let table = merged.table();
    assert!(!table.contains('\x1b'), "{table:?}");
    assert!(
        table.contains("HTTP 500 \\u{1b}[31mred 1") || table.contains("HTTP 500 \\x1b[31mred 1"),
        "{table}"
    );
}

#[test]
fn counters_past_u64_are_refused_naming_the_file() {
    let set = |f: fn(&mut LevelResult)| {
        let mut l = level(1, &[100], (0, 10));
        f(&mut l);
        report(vec![l])
    };
    let a = report(vec![level(1, &[100], (0, 10))]);
    for (what, f) in [
        (
            "requests",
            (|l: &mut LevelResult| l.requests = u64::MAX) as fn(&mut LevelResult),
        ),
        ("late_sends", |l| l.late_sends = u64::MAX),
        ("errors_by_kind", |l| {
            l.errors_by_kind = [("timeout".to_string(), u64::MAX)].into()
        }),
        ("targets", |l| l.targets[0].requests = u64::MAX),
        ("output_token_count", |l| {
            l.output_token_count = Some(u64::MAX)
        }),
    ] {
        let mut first = a.clone();
        first.levels[0].output_token_count = Some(1);
        let e = err(&[
            through_json("a.json", &first),
            through_json("big.json", &set(f)),
        ]);
        assert!(
            e.contains(&format!("big.json: level 1: \"{what}\" is too large")),
            "{what}: {e}"
        );
    }
}

#[test]
fn shards_of_different_loads_are_refused() {
    let shard = |index: u64, count: u64, concurrency: u64| {
        let mut r = report(vec![level(concurrency, &[100], (0, 1_000_000))]);
        r.shard = Some(Shard { index, count });
        r
    };
    let merge_of = |parts: &[(u64, u64, u64)]| {
        let inputs: Vec<Input> = parts
            .iter()
            .map(|&(i, n, c)| through_json(&format!("s{i}"), &shard(i, n, c)))
            .collect();
        merge(&inputs)
    };
    // shard 0/2 at concurrency 2 and shard 1/2 at 40: not shares of 42
    let e = merge_of(&[(0, 2, 2), (1, 2, 40)]).unwrap_err().0;
    assert!(
        e.contains("s0 and s1 are not shards of one load: at level 1 shard 0 has concurrency 2 and shard 1 has 40"),
        "{e}"
    );
    // 3, 3, 2 are the shares of 8; 2, 3, 3 are not (extras go first)
    assert_eq!(
        merge_of(&[(0, 3, 3), (1, 3, 3), (2, 3, 2)]).unwrap().levels[0].concurrency,
        Some(8)
    );
    let e = merge_of(&[(0, 3, 2), (1, 3, 3), (2, 3, 3)]).unwrap_err().0;
    assert!(e.contains("s0 and s2 are not shards of one load"), "{e}");
    // part of the shards: consistent ones merge, others do not
    assert!(merge_of(&[(0, 3, 3), (2, 3, 2)]).is_ok());
    assert!(merge_of(&[(1, 3, 3), (2, 3, 3)]).is_ok());
    assert!(merge_of(&[(1, 3, 2), (2, 3, 3)]).is_err());

    // rates: R/N in every shard
    let rated = |index: u64, rate: f64| {
        let mut r = shard(index, 2, 0);
        r.levels[0].concurrency = None;
        r.levels[0].request_rate = Some(rate);
        r.mode = "request_rate".into();
        r.request_distribution = Some("poisson".into());
        through_json(&format!("r{index}"), &r)
    };
    let e = err(&[rated(0, 50.0), rated(1, 5.0)]);
    assert!(
        e.contains("r0 and r1 are not shards of one load: level 1 is rate 50/s in one and 5/s in the other"),
        "{e}"
    );
    assert_eq!(
        merge(&[rated(0, 50.0), rated(1, 50.0)]).unwrap().levels[0].request_rate,
        Some(100.0)
    );
}

#[test]
fn a_rate_split_over_shards_merges_back_without_float_noise() {
    for (rate, n) in [
        (1000.0, 6u64),
        (100.0, 3),
        (33.3, 7),
        (0.5, 9),
        (12345.678, 11),
    ] {
        let inputs: Vec<Input> = (0..n)
            .map(|index| {
                let mut l = level(0, &[100], (0, 1_000_000));
                l.concurrency = None;
                // what each worker writes: Shard::load divides R by N
                l.request_rate = Some(rate / n as f64);
                let mut r = report(vec![l]);
                r.mode = "request_rate".into();
                r.request_distribution = Some("poisson".into());
                r.shard = Some(Shard { index, count: n });
                through_json(&format!("s{index}"), &r)
            })
            .collect();
        let merged = merge(&inputs).unwrap();
        assert_eq!(merged.levels[0].request_rate, Some(rate), "{rate} over {n}");
    }
}

#[test]
fn many_targets_and_urls_keep_their_first_seen_order() {
    let mut a = report(vec![level(1, &[100], (0, 10))]);
    let mut b = a.clone();
    a.urls = (0..3000).map(|i| format!("h{i}:8000")).collect();
    b.urls = (1500..4500).rev().map(|i| format!("h{i}:8000")).collect();
    let each = |urls: &[String], requests| {
        urls.iter()
            .map(|u| TargetCount {
                url: u.clone(),
                requests,
            })
            .collect::<Vec<_>>()
    };
    a.levels[0].targets = each(&a.urls, 1);
    b.levels[0].targets = each(&b.urls, 2);
    let merged = merge(&[through_json("a", &a), through_json("b", &b)]).unwrap();
    let want: Vec<String> = a
        .urls
        .iter()
        .chain(b.urls[..1500].iter())
        .cloned()
        .collect();
    assert_eq!(merged.urls, want);
    let t = &merged.levels[0].targets;
    assert_eq!(t.iter().map(|t| t.url.clone()).collect::<Vec<_>>(), want);
    assert_eq!(t[0].requests, 1);
    assert_eq!(t[2999].requests, 3);
    assert_eq!(t[3000].requests, 2);
    assert_eq!(t[1500].requests, 3);
}
