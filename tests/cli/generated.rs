//! The committed shell completions (completions/) and man pages (man/) must
//! match what the current CLI definition generates.
//!
//! To refresh them: `UPDATE_GENERATED=1 cargo test --test cli generated`.

use crate::common::{crate_root, tritonctl};
use std::collections::BTreeMap;
use std::path::Path;

const HOW: &str =
    "regenerate with `UPDATE_GENERATED=1 cargo test --test cli generated` and commit the result";

/// Files of `dir/sub` whose names mention tritonctl (what the generator owns).
fn generated_files(dir: &Path, sub: &str) -> BTreeMap<String, Vec<u8>> {
    let mut m = BTreeMap::new();
    let Ok(rd) = std::fs::read_dir(dir.join(sub)) else {
        return m;
    };
    for e in rd {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        if name.contains("tritonctl") {
            m.insert(format!("{sub}/{name}"), std::fs::read(e.path()).unwrap());
        }
    }
    m
}

fn generate_into(dir: &Path) {
    tritonctl::commands::completions::write_assets(dir).unwrap_or_else(|e| {
        panic!(
            "cannot write completions and man pages into {}: {e}",
            dir.display()
        )
    });
}

#[test]
fn completions_and_man_pages_are_up_to_date() {
    if std::env::var("UPDATE_GENERATED").is_ok_and(|v| v == "1") {
        generate_into(&crate_root());
    }
    let tmp = tempfile::tempdir().unwrap();
    generate_into(tmp.path());
    for sub in ["completions", "man"] {
        let fresh = generated_files(tmp.path(), sub);
        let committed = generated_files(&crate_root(), sub);
        assert!(!fresh.is_empty(), "the generator wrote nothing into {sub}/");
        let fresh_names: Vec<&String> = fresh.keys().collect();
        let committed_names: Vec<&String> = committed.keys().collect();
        assert_eq!(
            committed_names, fresh_names,
            "{sub}/ has missing or extra files; {HOW}"
        );
        for (name, bytes) in &fresh {
            assert!(committed[name] == *bytes, "{name} is out of date; {HOW}");
        }
    }
}

#[test]
fn every_shell_and_subcommand_is_covered() {
    let tmp = tempfile::tempdir().unwrap();
    generate_into(tmp.path());
    let comp = generated_files(tmp.path(), "completions");
    for f in [
        "tritonctl.bash",
        "_tritonctl",
        "tritonctl.fish",
        "tritonctl.elv",
        "_tritonctl.ps1",
    ] {
        let text = String::from_utf8(comp[&format!("completions/{f}")].clone()).unwrap();
        assert!(
            text.contains("validate") && text.contains("explain"),
            "{f} completes the subcommands"
        );
    }
    let bash = String::from_utf8(comp["completions/tritonctl.bash"].clone()).unwrap();
    assert!(
        bash.contains("--format") && bash.contains("sarif"),
        "bash completes --format values"
    );
    let man = generated_files(tmp.path(), "man");
    for page in [
        "tritonctl.1",
        "tritonctl-validate.1",
        "tritonctl-explain.1",
        "tritonctl-completions.1",
    ] {
        assert!(
            man.contains_key(&format!("man/{page}")),
            "man/{page} missing: {:?}",
            man.keys()
        );
    }
    // The `completions` subcommand prints the same script as committed.
    let out = tritonctl().args(["completions", "bash"]).run();
    assert!(out.success());
    assert_eq!(out.stdout.as_bytes(), comp["completions/tritonctl.bash"]);
}
