//! `tritonctl doctor`: what it finds, its exit status and its JSON fields.

#[cfg(feature = "run")]
use crate::common::ort_library;
use crate::common::{tritonctl, Output};
use std::ffi::OsStr;

/// The fields documented in the module docs of `commands::doctor`.
const FIELDS: &[&str] = &[
    "tritonctl_version",
    "run_feature",
    "can_run",
    "onnxruntime",
    "execution_providers",
    "cuda_execution_provider",
    "cuda_driver",
    "devices",
    "default_device",
    "hints",
];

fn json(r: &Output) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_str(&r.stdout)
        .unwrap_or_else(|e| panic!("doctor --format json: {e}\n{}", r.stdout));
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    let mut want = FIELDS.to_vec();
    want.sort_unstable();
    let mut got = keys.clone();
    got.sort_unstable();
    assert_eq!(got, want, "{}", r.stdout);
    for (object, fields) in [
        (
            "onnxruntime",
            &["found", "path", "version", "source", "error"][..],
        ),
        (
            "cuda_execution_provider",
            &["available", "status", "library", "error"][..],
        ),
        ("cuda_driver", &["found", "version", "error"][..]),
    ] {
        let mut got: Vec<&str> = v[object]
            .as_object()
            .unwrap_or_else(|| panic!("{object} is an object"))
            .keys()
            .map(String::as_str)
            .collect();
        got.sort_unstable();
        let mut want = fields.to_vec();
        want.sort_unstable();
        assert_eq!(got, want, "{object}");
    }
    assert!(v["hints"].is_array() && v["devices"].is_array());
    assert!(v["execution_providers"].is_array());
    assert_eq!(v["tritonctl_version"], env!("CARGO_PKG_VERSION"));
    v
}

/// The doctor of a machine without ONNX Runtime: exit 1, and it says what
/// to install.
#[test]
fn without_onnx_runtime_it_exits_1_and_says_what_to_install() {
    let no_ort = [("TRITONCTL_NO_ORT", OsStr::new("1"))];
    let r = tritonctl().arg("doctor").envs(&no_ort).run();
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("cannot run models"), "{}", r.stdout);
    if cfg!(feature = "run") {
        assert!(r.stdout.contains("pip install onnxruntime"), "{}", r.stdout);
        assert!(r.stdout.contains("ORT_DYLIB_PATH"), "{}", r.stdout);
    }

    let r = tritonctl()
        .arg("doctor")
        .args(["--format", "json"])
        .envs(&no_ort)
        .run();
    assert_eq!(r.code, 1, "{}", r.stderr);
    let v = json(&r);
    assert_eq!(v["can_run"], false);
    assert_eq!(v["onnxruntime"]["found"], false);
    assert_eq!(v["onnxruntime"]["path"], serde_json::Value::Null);
    assert_eq!(v["default_device"], serde_json::Value::Null);
    assert_eq!(v["cuda_execution_provider"]["available"], false);
    let hints = v["hints"].to_string();
    assert!(!v["hints"].as_array().unwrap().is_empty());
    if cfg!(feature = "run") {
        assert!(hints.contains("pip install onnxruntime"), "{hints}");
        assert_eq!(v["run_feature"], true);
        let e = v["onnxruntime"]["error"].as_str().unwrap();
        assert!(e.contains("TRITONCTL_NO_ORT is set"), "{e}");
        assert_eq!(v["cuda_execution_provider"]["status"], "no_onnxruntime");
        assert!(hints.contains("unset TRITONCTL_NO_ORT"), "{hints}");
    }
}

#[cfg(feature = "run")]
#[test]
fn a_library_path_that_does_not_exist_is_reported() {
    let missing = std::env::temp_dir().join("tritonctl-no-such-dir/libonnxruntime.so");
    let r = tritonctl()
        .arg("doctor")
        .args(["--format", "json"])
        .envs(&[("ORT_DYLIB_PATH", missing.as_os_str())])
        .run();
    assert_eq!(r.code, 1, "{}", r.stderr);
    let v = json(&r);
    let e = v["onnxruntime"]["error"].as_str().unwrap();
    assert!(
        e.contains("ORT_DYLIB_PATH") && e.contains("does not exist"),
        "{e}"
    );
}

#[cfg(not(feature = "run"))]
#[test]
fn a_binary_without_the_run_feature_says_so() {
    let r = tritonctl().arg("doctor").run();
    assert_eq!(r.code, 1);
    assert!(
        r.stdout.contains("without the `run` feature"),
        "{}",
        r.stdout
    );
    let r = tritonctl().arg("doctor").args(["--format", "json"]).run();
    assert_eq!(r.code, 1);
    let v = json(&r);
    assert_eq!(v["run_feature"], false);
    assert_eq!(v["can_run"], false);
}

#[cfg(feature = "run")]
#[test]
fn with_onnx_runtime_it_exits_0_and_reports_the_library() {
    let Some(lib) = ort_library() else {
        return;
    };
    let env = [("ORT_DYLIB_PATH", lib.path.as_os_str())];
    let r = tritonctl().arg("doctor").envs(&env).run();
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains(&lib.path.display().to_string()),
        "{}",
        r.stdout
    );
    if let Some(v) = &lib.version {
        assert!(r.stdout.contains(v.as_str()), "{}", r.stdout);
    }
    assert!(r.stdout.contains("CPUExecutionProvider"), "{}", r.stdout);
    assert!(
        r.stdout.contains("\nfound by         ORT_DYLIB_PATH\n"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("can run models"), "{}", r.stdout);
    assert!(!r.stdout.contains("cannot run"), "{}", r.stdout);
    assert!(r.stderr.is_empty(), "{}", r.stderr);

    let r = tritonctl()
        .arg("doctor")
        .args(["--format", "json"])
        .envs(&env)
        .run();
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v = json(&r);
    assert_eq!(v["run_feature"], true);
    assert_eq!(v["can_run"], true);
    assert_eq!(v["onnxruntime"]["found"], true);
    assert_eq!(
        v["onnxruntime"]["path"].as_str(),
        Some(lib.path.display().to_string().as_str())
    );
    assert_eq!(v["onnxruntime"]["version"].as_str(), lib.version.as_deref());
    assert_eq!(v["onnxruntime"]["error"], serde_json::Value::Null);
    assert_eq!(v["onnxruntime"]["source"], "ORT_DYLIB_PATH");
    let providers: Vec<&str> = v["execution_providers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert!(providers.contains(&"CPUExecutionProvider"), "{providers:?}");
    // The CUDA provider is available exactly when the library lists it
    // and the default device follows from it and the driver.
    let cuda_ep = &v["cuda_execution_provider"];
    if !providers.contains(&"CUDAExecutionProvider") {
        assert_eq!(cuda_ep["status"], "not_built");
        assert_eq!(cuda_ep["available"], false);
        assert!(v["hints"].to_string().contains("onnxruntime-gpu"));
    }
    let gpu = cuda_ep["available"] == true
        && v["cuda_driver"]["found"] == true
        && !v["devices"].as_array().unwrap().is_empty();
    assert_eq!(v["default_device"], if gpu { "cuda:0" } else { "cpu" });

    // Without the CUDA driver: the CPU, and the driver hint.
    let r = tritonctl()
        .arg("doctor")
        .args(["--format", "json"])
        .envs(&[env[0], ("TRITONCTL_NO_CUDA", OsStr::new("1"))])
        .run();
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v = json(&r);
    assert_eq!(v["cuda_driver"]["found"], false);
    assert_eq!(v["cuda_driver"]["error"], "TRITONCTL_NO_CUDA is set");
    assert_eq!(v["devices"], serde_json::json!([]));
    assert_eq!(v["default_device"], "cpu");
}

/// A Python environment as `pip install 'tritonctl[run]'` lays it out: the
/// binary in `<prefix>/bin`, ONNX Runtime's library in
/// `<prefix>/lib/python3.11/site-packages/onnxruntime/capi/` (a copy of
/// `library`).
#[cfg(feature = "run")]
fn wheel_layout(
    library: &std::path::Path,
    file_name: &str,
) -> (tempfile::TempDir, std::path::PathBuf) {
    let prefix = tempfile::tempdir().unwrap();
    let bin = prefix.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let exe = bin.join("tritonctl");
    std::fs::copy(crate::common::tritonctl_path(), &exe).unwrap();
    let capi = prefix
        .path()
        .join("lib/python3.11/site-packages/onnxruntime/capi");
    std::fs::create_dir_all(&capi).unwrap();
    std::fs::copy(library, capi.join(file_name)).unwrap();
    (prefix, exe)
}

/// Runs an installed copy of the binary with nothing in its environment
/// but a `PATH` where no `python3` is, so that only the search from the
/// executable can find ONNX Runtime.
#[cfg(feature = "run")]
fn run_installed(exe: &std::path::Path, args: &[&str]) -> Output {
    let empty = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(exe)
        .env_clear()
        .env("PATH", empty.path())
        .args(args)
        .output()
        .expect("the installed copy runs");
    Output {
        code: out.status.code().expect("an exit code"),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        args: args.join(" "),
    }
}

/// The library of a wheel install is found from the executable, with no
/// variable set: here a file that is not a library, which doctor names
/// as found there and unusable.
#[cfg(all(feature = "run", target_os = "linux"))]
#[test]
fn the_library_of_the_environment_the_binary_is_installed_in_is_found() {
    let junk = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(junk.path(), b"not a library").unwrap();
    let (prefix, exe) = wheel_layout(junk.path(), "libonnxruntime.so.1.31.1");
    let r = run_installed(&exe, &["doctor", "--format", "json"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let v = json(&r);
    let e = v["onnxruntime"]["error"].as_str().unwrap();
    let expected = std::fs::canonicalize(prefix.path())
        .unwrap()
        .join("lib/python3.11/site-packages/onnxruntime/capi/libonnxruntime.so.1.31.1");
    assert!(
        e.contains(&format!("{} could not be loaded", expected.display())),
        "{e}"
    );

    // Without the package the error lists the environment searched, and
    // python3 (not on this PATH) last.
    std::fs::remove_dir_all(prefix.path().join("lib")).unwrap();
    let r = run_installed(&exe, &["doctor", "--format", "json"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let v = json(&r);
    let e = v["onnxruntime"]["error"].as_str().unwrap();
    assert!(e.contains("ORT_DYLIB_PATH is not set"), "{e}");
    assert!(e.contains("tritonctl's environment"), "{e}");
    assert!(e.contains("python3 cannot run"), "{e}");
}

/// With the real library installed next to the binary: doctor finds it by
/// the `executable_prefix` rule and says so, and `run` runs a model.
#[cfg(feature = "run")]
#[test]
fn a_wheel_install_runs_models_with_no_environment_variables() {
    let Some(lib) = ort_library() else {
        return;
    };
    let name = lib.path.file_name().unwrap().to_str().unwrap().to_string();
    let (prefix, exe) = wheel_layout(&lib.path, &name);
    let r = run_installed(&exe, &["doctor", "--format", "json"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let v = json(&r);
    let root = std::fs::canonicalize(prefix.path()).unwrap();
    assert_eq!(v["onnxruntime"]["source"], "executable_prefix");
    assert_eq!(
        v["onnxruntime"]["path"].as_str().unwrap(),
        root.join("lib/python3.11/site-packages/onnxruntime/capi")
            .join(&name)
            .display()
            .to_string()
    );
    let r = run_installed(&exe, &["doctor"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let line = format!(
        "found by         the onnxruntime package of the Python environment tritonctl is installed in ({})",
        root.display()
    );
    assert!(r.stdout.contains(&line), "{}", r.stdout);

    // testdata/run/preprocess: Output = 2 * Input + 1.
    let model = crate::common::crate_root().join("testdata/run/preprocess");
    let input = crate::common::crate_root().join("testdata/run/preprocess.json");
    let r = run_installed(
        &exe,
        &[
            "run",
            model.to_str().unwrap(),
            "--input",
            input.to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let first: serde_json::Value = serde_json::from_str(r.stdout.lines().next().unwrap()).unwrap();
    assert_eq!(first["id"], "0", "{}", r.stdout);
    assert_eq!(
        first["outputs"]["Output"]["data"],
        serde_json::json!([1.0, 3.0, 5.0, 7.0]),
        "{}",
        r.stdout
    );
}
