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

/// The rule codes written in `text` (`E0101`, `W0301`, `N0701`).
fn codes_in(text: &str) -> std::collections::BTreeSet<String> {
    let re = regex::Regex::new(r"\b[EWN][0-9]{4}\b").unwrap();
    re.find_iter(text).map(|m| m.as_str().to_string()).collect()
}

/// The text of `script` from the first line containing `start` (after
/// `after`, when given) to the next line containing `end`, or to the end.
fn region<'a>(script: &'a str, after: Option<&str>, start: &str, end: &str) -> &'a str {
    let from = after.map_or(0, |a| {
        script
            .find(a)
            .unwrap_or_else(|| panic!("{a:?} not in the script"))
    });
    let s = from
        + script[from..]
            .find(start)
            .unwrap_or_else(|| panic!("{start:?} not in the script"));
    let body = &script[s + start.len()..];
    let e = body.find(end).unwrap_or(body.len());
    &script[s..s + start.len() + e]
}

/// bash, zsh and fish offer every code of the registry, and nothing else,
/// for `explain CODE`, `validate --allow` and `validate --deny`; a new rule
/// appears there without anyone listing it.
#[test]
fn rule_codes_are_completed_for_explain_allow_and_deny() {
    let registry: std::collections::BTreeSet<String> = tritonctl::lint::registry::all()
        .iter()
        .map(|r| r.code.to_string())
        .collect();
    for c in ["E0001", "E0101", "E0109", "N0701"] {
        assert!(registry.contains(c), "{c} is a rule");
    }
    let tmp = tempfile::tempdir().unwrap();
    generate_into(tmp.path());
    let comp = generated_files(tmp.path(), "completions");
    let script = |f: &str| String::from_utf8(comp[&format!("completions/{f}")].clone()).unwrap();
    let (bash, zsh, fish) = (
        script("tritonctl.bash"),
        script("_tritonctl"),
        script("tritonctl.fish"),
    );
    let places: Vec<(&str, &str, &str)> = vec![
        // bash: the option's `compgen -W` word list; the subcommand's words.
        (
            "bash --allow",
            "--allow)",
            region(
                &bash,
                Some("tritonctl__subcmd__validate)"),
                "--allow)",
                "return 0",
            ),
        ),
        (
            "bash --deny",
            "--deny)",
            region(
                &bash,
                Some("tritonctl__subcmd__validate)"),
                "--deny)",
                "return 0",
            ),
        ),
        (
            "bash explain",
            "opts=",
            region(&bash, Some("tritonctl__subcmd__explain)"), "opts=", "\n"),
        ),
        // zsh: the argument specs, values with their summaries (one a
        // line).
        (
            "zsh --allow",
            "--allow=",
            region(&zsh, Some("(validate)"), "'*--allow=", "))'"),
        ),
        (
            "zsh --deny",
            "--deny=",
            region(&zsh, Some("(validate)"), "'*--deny=", "))'"),
        ),
        (
            "zsh explain",
            "::code",
            region(&zsh, Some("(explain)"), "'::code", "))'"),
        ),
        // fish: one `complete` line each (values separated by newlines
        // inside its quotes).
        (
            "fish --allow",
            "-l allow",
            region(
                &fish,
                None,
                "__fish_tritonctl_using_subcommand validate\" -l allow ",
                "\ncomplete ",
            ),
        ),
        (
            "fish --deny",
            "-l deny",
            region(
                &fish,
                None,
                "__fish_tritonctl_using_subcommand validate\" -l deny ",
                "\ncomplete ",
            ),
        ),
        (
            "fish explain",
            "-f -a",
            region(
                &fish,
                None,
                "__fish_tritonctl_using_subcommand explain\" -f -a ",
                "\ncomplete ",
            ),
        ),
    ];
    for (what, marker, text) in places {
        assert!(text.contains(marker), "{what}: found {text:?}");
        let listed = codes_in(text);
        let missing: Vec<_> = registry.difference(&listed).collect();
        let extra: Vec<_> = listed.difference(&registry).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "{what}: codes missing {missing:?}, not rules {extra:?}"
        );
    }
    // zsh and fish show each code's summary.
    let e0101 = tritonctl::lint::registry::find("E0101").unwrap().summary;
    assert!(zsh.contains(e0101), "zsh shows summaries");
    assert!(
        fish.contains(&format!("E0101\\t'{e0101}'")),
        "fish shows summaries"
    );
}

/// The codes stay out of `--help`: the flags' help says what they take.
#[test]
fn help_does_not_list_rule_codes() {
    for args in [
        ["validate", "--help"],
        ["validate", "-h"],
        ["explain", "--help"],
        ["explain", "-h"],
    ] {
        let out = tritonctl().args(args).run();
        assert!(out.success());
        let listed = codes_in(&out.stdout);
        assert!(
            listed.len() <= 1,
            "{args:?} lists rule codes: {listed:?}\n{}",
            out.stdout
        );
    }
}
