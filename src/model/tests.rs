use super::*;

fn cfg(text: &str) -> ModelConfig {
    crate::config::ParsedConfig::parse(text.to_string())
        .config
        .expect("test config parses")
}

fn loaded(text: &str, gpus: &[i32]) -> LoadedModel {
    LoadedModel::new(
        "m".into(),
        PathBuf::from("m"),
        cfg(text),
        vec![1],
        false,
        gpus,
    )
}

fn summary(m: &LoadedModel) -> Vec<(String, String, bool)> {
    m.instances
        .iter()
        .map(|i| (i.name.clone(), i.device.to_string(), i.passive))
        .collect()
}

fn s(name: &str, device: &str, passive: bool) -> (String, String, bool) {
    (name.to_string(), device.to_string(), passive)
}

#[test]
fn count_is_per_listed_gpu() {
    // count 2 on GPUs 1 and 2: four instances, k-major, sharing names per k.
    let m = loaded(
        "name: \"m\" backend: \"onnxruntime\" instance_group [ { count: 2 kind: KIND_GPU gpus: [ 1, 2 ] } ]",
        &[0, 1, 2],
    );
    assert_eq!(
        summary(&m),
        vec![
            s("m_0_0", "gpu:1", false),
            s("m_0_0", "gpu:2", false),
            s("m_0_1", "gpu:1", false),
            s("m_0_1", "gpu:2", false),
        ]
    );
}

#[test]
fn default_counts_follow_backend_and_kind() {
    // CPU: 2 for onnxruntime and tensorflow, 1 for the others.
    for (backend, n) in [
        ("onnxruntime", 2),
        ("tensorflow", 2),
        ("python", 1),
        ("pytorch", 1),
        ("openvino", 1),
    ] {
        let m = loaded(
            &format!("name: \"m\" backend: \"{backend}\" instance_group [ {{ kind: KIND_CPU }} ]"),
            &[],
        );
        assert_eq!(m.instances.len(), n, "{backend}");
        assert!(m.instances.iter().all(|i| i.device == Device::Cpu));
        assert_eq!(m.config.instance_group[0].count, n as i32);
    }
    // GPU: 1 per GPU whatever the backend.
    let m = loaded(
        "name: \"m\" backend: \"onnxruntime\" instance_group [ { kind: KIND_GPU } ]",
        &[0, 3],
    );
    assert_eq!(
        summary(&m),
        vec![s("m_0_0", "gpu:0", false), s("m_0_0", "gpu:3", false)]
    );
    assert_eq!(m.config.instance_group[0].gpus, vec![0, 3]);
}

#[test]
fn default_group_with_and_without_gpus() {
    // No group: one named after the model, KIND_AUTO resolved.
    let m = loaded("name: \"m\" backend: \"onnxruntime\"", &[]);
    assert_eq!(
        summary(&m),
        vec![s("m_0", "cpu", false), s("m_1", "cpu", false)]
    );
    let g = &m.config.instance_group[0];
    assert_eq!(
        (g.name.as_str(), g.kind, g.count),
        ("m", Kind::Cpu as i32, 2)
    );

    let m = loaded("name: \"m\" backend: \"onnxruntime\"", &[0, 1]);
    assert_eq!(
        summary(&m),
        vec![s("m_0", "gpu:0", false), s("m_0", "gpu:1", false)]
    );
    let g = &m.config.instance_group[0];
    assert_eq!(
        (g.kind, g.count, g.gpus.clone()),
        (Kind::Gpu as i32, 1, vec![0, 1])
    );
}

#[test]
fn auto_kind_falls_back_to_cpu_when_a_listed_gpu_is_missing() {
    let m = loaded(
        "name: \"m\" backend: \"python\" instance_group [ { gpus: [ 0, 5 ] }, { name: \"g\" count: 3 } ]",
        &[0],
    );
    assert_eq!(m.config.instance_group[0].kind, Kind::Cpu as i32);
    assert_eq!(m.config.instance_group[0].name, "m_0");
    assert_eq!(m.config.instance_group[1].kind, Kind::Gpu as i32);
    assert_eq!(m.config.instance_group[1].gpus, vec![0]);
    assert_eq!(
        summary(&m),
        vec![
            s("m_0_0", "cpu", false),
            s("g_0", "gpu:0", false),
            s("g_1", "gpu:0", false),
            s("g_2", "gpu:0", false),
        ]
    );
}

#[test]
fn passive_instances_are_created_but_not_active() {
    let m = loaded(
        "name: \"m\" backend: \"python\" instance_group [ { count: 1 kind: KIND_CPU }, { count: 2 kind: KIND_CPU passive: true } ]",
        &[],
    );
    assert_eq!(
        summary(&m),
        vec![
            s("m_0_0", "cpu", false),
            s("m_1_0", "cpu", true),
            s("m_1_1", "cpu", true),
        ]
    );
    assert_eq!(m.active_instances(), vec![0]);
}

#[test]
fn kind_model_is_one_instance_per_count() {
    let m = loaded(
        "name: \"m\" backend: \"pytorch\" instance_group [ { count: 2 kind: KIND_MODEL } ]",
        &[0, 1],
    );
    assert_eq!(
        summary(&m),
        vec![s("m_0_0", "model", false), s("m_0_1", "model", false)]
    );
}

#[test]
fn ensembles_get_no_groups_and_a_step_graph() {
    let m = loaded(
        r#"name: "m" platform: "ensemble"
        input [ { name: "IN" data_type: TYPE_FP32 dims: [ 1 ] } ]
        output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 1 ] } ]
        ensemble_scheduling { step [
          { model_name: "c" model_version: -1 input_map { key: "X" value: "MID_A" } input_map { key: "Y" value: "MID_B" } output_map { key: "Z" value: "OUT" } },
          { model_name: "a" model_version: 2 input_map { key: "X" value: "IN" } output_map { key: "Y" value: "MID_A" } },
          { model_name: "b" model_version: -1 input_map { key: "X" value: "IN" } output_map { key: "Y" value: "MID_B" } }
        ] }"#,
        &[0],
    );
    assert!(m.instances.is_empty());
    assert!(m.config.instance_group.is_empty());
    let g = m.ensemble.as_ref().expect("an ensemble");
    assert_eq!(g.steps.len(), 3);
    assert_eq!(g.steps[0].after, vec![1, 2]);
    assert!(g.steps[1].after.is_empty() && g.steps[2].after.is_empty());
    assert_eq!(g.steps[1].version, 2);
    assert_eq!(g.steps[0].inputs[0], ("X".to_string(), "MID_A".to_string()));
}

#[test]
fn io_carries_reshape() {
    let m = loaded(
        r#"name: "m" backend: "onnxruntime" max_batch_size: 8
        input [ { name: "X" data_type: TYPE_FP32 dims: [ 1 ] reshape { shape: [ ] } } ]
        output [ { name: "Y" data_type: TYPE_INT64 dims: [ 2, 3 ] reshape { shape: [ 6 ] } },
                 { name: "Z" data_type: TYPE_STRING dims: [ -1 ] } ]"#,
        &[],
    );
    let i = &m.inputs()[0];
    assert_eq!(
        (i.dims.clone(), i.model_dims.clone(), i.reshaped()),
        (vec![1], vec![], true)
    );
    assert_eq!(i.datatype, "FP32");
    let o = m.outputs();
    assert_eq!(o[0].model_dims, vec![6]);
    assert_eq!(o[1].datatype, "STRING");
    assert!(!o[1].reshaped());
}

#[test]
fn config_json_prints_primitive_fields_with_proto_names() {
    let m = loaded("name: \"m\" backend: \"python\" max_batch_size: 4", &[]);
    let v: serde_json::Value = serde_json::from_str(&m.config_json()).unwrap();
    assert_eq!(v["name"], "m");
    assert_eq!(v["max_batch_size"], 4);
    // Printed although left at its default.
    assert_eq!(v["platform"], "");
    assert_eq!(v["instance_group"][0]["kind"], "KIND_CPU");
    assert_eq!(v["instance_group"][0]["count"], 1);
    assert_eq!(v["instance_group"][0]["name"], "m");
}

#[test]
fn ensembles_are_decoupled_when_a_step_is() {
    fn model(name: &str, text: &str) -> LoadedModel {
        LoadedModel::new(
            name.into(),
            PathBuf::from(name),
            cfg(text),
            vec![1],
            false,
            &[],
        )
    }
    fn ensemble(name: &str, steps: &[&str]) -> LoadedModel {
        let steps: Vec<String> = steps
            .iter()
            .map(|s| {
                format!(
                    "{{ model_name: \"{s}\" model_version: -1 input_map {{ key: \"IN\" value: \"IN\" }} output_map {{ key: \"OUT\" value: \"{s}_out\" }} }}"
                )
            })
            .collect();
        // the file's own flag is overwritten by the computed one
        model(
            name,
            &format!(
                "name: \"{name}\" platform: \"ensemble\" model_transaction_policy {{ decoupled: true }} ensemble_scheduling {{ step [ {} ] }}",
                steps.join(", ")
            ),
        )
    }
    let plain = model("plain", "name: \"plain\" backend: \"python\"");
    let streaming = model(
        "streaming",
        "name: \"streaming\" backend: \"python\" model_transaction_policy { decoupled: true }",
    );
    let mut set = LoadedSet {
        models: vec![
            ensemble("outer", &["inner", "plain"]),
            ensemble("inner", &["streaming"]),
            ensemble("calm", &["plain"]),
            plain,
            streaming,
        ],
        requested: 3,
    };
    set.mark_decoupled_ensembles();
    let flag = |name: &str| {
        set.get(name)
            .and_then(|m| m.config.model_transaction_policy.as_ref())
            .map(|p| p.decoupled)
    };
    assert_eq!(flag("inner"), Some(true));
    assert_eq!(flag("outer"), Some(true), "through the composed ensemble");
    assert_eq!(flag("calm"), Some(false), "set, not decoupled");
    assert_eq!(flag("plain"), None, "other models keep their config");
    assert_eq!(flag("streaming"), Some(true));
}

#[test]
fn a_deep_chain_of_ensembles_is_marked_without_recursion() {
    let n = 50_000;
    let mut models = Vec::with_capacity(n + 1);
    for i in 0..n {
        let next = if i + 1 < n {
            format!("e{}", i + 1)
        } else {
            "leaf".into()
        };
        let text = format!(
            "name: \"e{i}\" platform: \"ensemble\" ensemble_scheduling {{ step [ {{ model_name: \"{next}\" model_version: -1 input_map {{ key: \"IN\" value: \"IN\" }} output_map {{ key: \"OUT\" value: \"OUT\" }} }} ] }}"
        );
        models.push(LoadedModel::new(
            format!("e{i}"),
            PathBuf::from("e"),
            cfg(&text),
            vec![1],
            false,
            &[],
        ));
    }
    models.push(LoadedModel::new(
        "leaf".into(),
        PathBuf::from("leaf"),
        cfg("name: \"leaf\" backend: \"python\" model_transaction_policy { decoupled: true }"),
        vec![1],
        false,
        &[],
    ));
    let mut set = LoadedSet {
        models,
        requested: 1,
    };
    set.mark_decoupled_ensembles();
    assert!(set.models[0]
        .config
        .model_transaction_policy
        .as_ref()
        .is_some_and(|p| p.decoupled));
}

#[test]
fn a_huge_count_is_counted_not_listed() {
    let m = loaded(
        "name: \"m\" backend: \"python\" instance_group [ { count: 2000000000 kind: KIND_GPU gpus: [ 0, 1, 2 ] } ]",
        &[0, 1, 2],
    );
    assert_eq!(instance_count(&m.config), 6_000_000_000);
    assert_eq!(m.instances.len(), MAX_LISTED_INSTANCES);
    assert_eq!(m.instances.last().unwrap().device, Device::Gpu(0));
}
