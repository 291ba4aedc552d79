//! Scale-out (docs/scale-out.md): the Kubernetes manifests in
//! `deploy/kubernetes` and the page's command lines agree with each other,
//! with the Dockerfile and Cargo.toml, and with the flags the binary has.
//! Their validity as Kubernetes objects is checked by `scripts/lint-ci`
//! against the API's schemas.

use crate::common::{crate_root, tritonctl};
use regex::Regex;
use std::collections::BTreeSet;

/// The worker Jobs: each sends one share of the load per pod.
const WORKER_JOBS: [&str; 2] = ["perf-job.yaml", "perf-job-pvc.yaml"];

/// Flags (and `perf merge`) of the scale-out commands that this test may
/// meet in the files before the binary has them: accepted while `--help`
/// does not list them, an error once it does (then take them out of this
/// list).
const PENDING: &[&str] = &[];

fn read(relative: &str) -> String {
    std::fs::read_to_string(crate_root().join(relative))
        .unwrap_or_else(|e| panic!("{relative}: {e}"))
}

fn manifest(name: &str) -> String {
    read(&format!("deploy/kubernetes/{name}"))
}

/// The lines of a YAML file that are not comments.
fn without_comments(yaml: &str) -> String {
    yaml.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every value of `key: N` (a number) on its own line.
fn numbers(yaml: &str, key: &str) -> Vec<u64> {
    let re = Regex::new(&format!(r"(?m)^\s*{key}:\s*(\d+)\s*$")).unwrap();
    re.captures_iter(yaml)
        .map(|c| c[1].parse().unwrap())
        .collect()
}

/// The one value of `key: N` in `yaml`.
fn number(name: &str, yaml: &str, key: &str) -> u64 {
    match numbers(yaml, key).as_slice() {
        [n] => *n,
        other => panic!("{name}: expected one `{key}: N`, found {other:?}"),
    }
}

/// The COUNT of every `--shard $(JOB_COMPLETION_INDEX)/COUNT` in `yaml`.
fn shard_counts(yaml: &str) -> Vec<u64> {
    Regex::new(r"--shard \$\(JOB_COMPLETION_INDEX\)/(\d+)")
        .unwrap()
        .captures_iter(yaml)
        .map(|c| c[1].parse().unwrap())
        .collect()
}

#[test]
fn each_worker_job_runs_one_pod_per_shard_at_once_without_retries() {
    for name in WORKER_JOBS {
        let yaml = without_comments(&manifest(name));
        let completions = number(name, &yaml, "completions");
        let parallelism = number(name, &yaml, "parallelism");
        assert!(completions >= 2, "{name}: {completions} workers");
        // all workers measure the same window: none waits for another
        assert_eq!(parallelism, completions, "{name}: parallelism");
        assert_eq!(
            shard_counts(&yaml),
            vec![completions],
            "{name}: the command line's --shard $(JOB_COMPLETION_INDEX)/N, N = completions"
        );
        assert!(
            yaml.contains("completionMode: Indexed"),
            "{name}: JOB_COMPLETION_INDEX is set for Indexed Jobs only"
        );
        // a retried worker would measure a later window than the others
        assert_eq!(number(name, &yaml, "backoffLimit"), 0, "{name}");
        assert!(yaml.contains("restartPolicy: Never"), "{name}");
        // every worker starts at the one instant the user fills in
        assert!(
            yaml.contains(r#"--start-at "$(START_AT)""#),
            "{name}: --start-at $(START_AT)"
        );
        assert!(yaml.contains(r#"value: "@START_AT@""#), "{name}: START_AT");
        assert!(yaml.contains("--format json"), "{name}: JSON results");
        assert!(
            yaml.contains("preferredDuringSchedulingIgnoredDuringExecution"),
            "{name}: spread over nodes, preferred (a small cluster still runs it)"
        );
    }
}

#[test]
fn the_merge_job_expects_as_many_results_as_the_volume_job_has_workers() {
    let workers = number(
        "perf-job-pvc.yaml",
        &without_comments(&manifest("perf-job-pvc.yaml")),
        "completions",
    );
    let merge = without_comments(&manifest("perf-merge-job.yaml"));
    assert!(
        merge.contains(&format!(r#"[ "$#" != {workers} ]"#)),
        "perf-merge-job.yaml must check for {workers} worker results"
    );
    assert!(merge.contains("tritonctl perf merge"));
}

/// The image's user (Dockerfile `USER`), the image name the release
/// workflow pushes (docs/install.md) and Cargo.toml's version are what
/// the manifests use.
#[test]
fn the_manifests_run_the_released_image_as_its_user() {
    let dockerfile = read("Dockerfile");
    let user = Regex::new(r"(?m)^USER (\d+):(\d+)$")
        .unwrap()
        .captures(&dockerfile)
        .expect("the Dockerfile's USER");
    let cargo = read("Cargo.toml");
    let version = Regex::new(r#"(?m)^version = "([^"]+)"$"#)
        .unwrap()
        .captures(&cargo)
        .expect("Cargo.toml's version")[1]
        .to_string();
    assert!(read("docs/install.md").contains("`ghcr.io/OWNER/tritonctl:VERSION`"));
    let image = Regex::new(r"(?m)^\s*image:\s*(\S+)\s*$").unwrap();
    for name in ["perf-job.yaml", "perf-job-pvc.yaml", "perf-merge-job.yaml"] {
        let yaml = without_comments(&manifest(name));
        let images: Vec<&str> = image
            .captures_iter(&yaml)
            .map(|c| c.get(1).unwrap().as_str())
            .collect();
        assert_eq!(
            images,
            vec![format!("ghcr.io/OWNER/tritonctl:{version}")],
            "{name}"
        );
        assert_eq!(
            number(name, &yaml, "runAsUser"),
            user[1].parse::<u64>().unwrap()
        );
        assert_eq!(
            number(name, &yaml, "runAsGroup"),
            user[2].parse::<u64>().unwrap()
        );
        assert!(yaml.contains("runAsNonRoot: true"), "{name}");
    }
}

/// The logical lines of shell text: continuation backslashes joined.
fn logical_lines(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let line = line.trim();
        match line.strip_suffix('\\') {
            Some(head) => {
                current.push_str(head);
                current.push(' ');
            }
            None => {
                current.push_str(line);
                out.push(std::mem::take(&mut current));
            }
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// The shell text of a manifest: its lines with a leading `#` taken off
/// (the header comments show commands too).
fn manifest_shell(yaml: &str) -> String {
    yaml.lines()
        .map(|l| {
            let t = l.trim_start();
            t.strip_prefix('#').unwrap_or(t)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The contents of the fenced code blocks of a Markdown page.
fn code_blocks(markdown: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            match current.take() {
                Some(b) => blocks.push(b),
                None => current = Some(String::new()),
            }
        } else if let Some(b) = current.as_mut() {
            b.push_str(line);
            b.push('\n');
        }
    }
    assert!(current.is_none(), "an unclosed code block");
    blocks
}

/// One `tritonctl perf` command: `merge` or not, and its flags (long flags
/// without `=VALUE`, and short ones).
#[derive(Debug)]
struct Command {
    merge: bool,
    flags: Vec<String>,
    text: String,
}

/// Every `tritonctl perf` command in the lines, up to the first shell
/// operator or redirection.
fn perf_commands(lines: &[String]) -> Vec<Command> {
    let mut out = Vec::new();
    for line in lines {
        let mut rest = line.as_str();
        while let Some(at) = rest.find("tritonctl perf") {
            let after = &rest[at + "tritonctl perf".len()..];
            let words: Vec<&str> = after
                .split_whitespace()
                .take_while(|w| {
                    !(["|", "&", "&&", ";", "||"].contains(w)
                        || w.starts_with('>')
                        || w.starts_with("2>")
                        || w.starts_with('<')
                        || w.starts_with('#'))
                })
                .collect();
            let merge = words.first() == Some(&"merge");
            let flags = words
                .iter()
                .filter(|w| {
                    (w.starts_with("--") && w.len() > 2)
                        || (w.len() == 2 && w.starts_with('-') && w != &&"--")
                })
                .map(|w| w.split('=').next().unwrap().to_string())
                .collect();
            out.push(Command {
                merge,
                flags,
                text: words.join(" "),
            });
            rest = after;
        }
    }
    out
}

/// The flags a `--help` text defines: each option line's short and long
/// name (`-m, --model <MODEL>`, `--seed <SEED>`) and the visible aliases
/// (`[alias: --profile-export-file]`); not flags named in descriptions.
fn help_flags(help: &str) -> BTreeSet<String> {
    let definition =
        Regex::new(r"^(?:(-[A-Za-z0-9])(?:,\s*|\s|$))?(--[A-Za-z0-9][A-Za-z0-9-]*)?").unwrap();
    let long = Regex::new(r"--[A-Za-z0-9][A-Za-z0-9-]*").unwrap();
    let mut flags = BTreeSet::new();
    for line in help.lines() {
        let t = line.trim_start();
        if t.starts_with("[alias") {
            flags.extend(long.find_iter(t).map(|m| m.as_str().to_string()));
        } else if let Some(c) = definition.captures(t) {
            flags.extend(
                [c.get(1), c.get(2)]
                    .into_iter()
                    .flatten()
                    .map(|m| m.as_str().to_string()),
            );
        }
    }
    flags
}

/// `tritonctl ARGS --help`, when it succeeds.
fn help(args: &[&str]) -> Option<String> {
    let out = tritonctl().args(args).arg("--help").run();
    out.success().then(|| out.stdout.clone())
}

/// What the page and the manifests tell users to run exists: every flag of
/// every `tritonctl perf` and `tritonctl perf merge` command line is
/// in that command's `--help` (or in [`PENDING`] while it is not).
#[test]
fn every_flag_in_the_manifests_and_the_page_exists() {
    let mut commands = Vec::new();
    for name in ["perf-job.yaml", "perf-job-pvc.yaml", "perf-merge-job.yaml"] {
        let found = perf_commands(&logical_lines(&manifest_shell(&manifest(name))));
        assert!(!found.is_empty(), "{name}: no tritonctl perf command");
        commands.extend(found);
    }
    let page = read("docs/scale-out.md");
    let blocks: String = code_blocks(&page).concat();
    let found = perf_commands(&logical_lines(&blocks));
    assert!(
        found.iter().any(|c| c.merge) && found.iter().any(|c| !c.merge),
        "docs/scale-out.md: perf and perf merge command lines"
    );
    commands.extend(found);

    let perf = help_flags(&help(&["perf"]).expect("tritonctl perf --help"));
    assert!(perf.contains("--model") && perf.contains("-m") && perf.contains("--quiet"));
    let merge = help(&["perf", "merge"]).map(|h| help_flags(&h));
    let pending = |what: &str| PENDING.contains(&what);
    let mut missing = Vec::new();
    match (&merge, pending("perf merge")) {
        (None, false) => missing.push("perf merge (the subcommand)".to_string()),
        (Some(_), true) => panic!("`perf merge` exists now: take it out of PENDING"),
        _ => {}
    }
    for c in &commands {
        let known = if c.merge { merge.as_ref() } else { Some(&perf) };
        let Some(known) = known else { continue };
        for f in &c.flags {
            if !known.contains(f) && !pending(f) {
                missing.push(format!("{f} in `tritonctl perf {}`", c.text));
            }
        }
    }
    assert!(missing.is_empty(), "unknown flags: {missing:#?}");
    for f in PENDING.iter().filter(|f| f.starts_with('-')) {
        assert!(!perf.contains(*f), "{f} exists now: take it out of PENDING");
    }
}

/// The page shows the worker's command line of perf-job.yaml as it is.
#[test]
fn the_page_shows_the_manifests_command_line() {
    let yaml = without_comments(&manifest("perf-job.yaml"));
    let script = perf_commands(&logical_lines(&yaml));
    let [worker] = script.as_slice() else {
        panic!("perf-job.yaml: one command, found {script:?}");
    };
    let page = read("docs/scale-out.md");
    let shown: Vec<Command> = perf_commands(&logical_lines(&code_blocks(&page).concat()))
        .into_iter()
        .filter(|c| c.text.contains("$(JOB_COMPLETION_INDEX)"))
        .collect();
    assert_eq!(shown.len(), 1, "docs/scale-out.md: {shown:?}");
    assert_eq!(shown[0].text, worker.text);
}

#[test]
fn the_extraction_finds_commands_and_stops_at_shell_operators() {
    let lines = logical_lines(
        "ssh h tritonctl perf -m x \\\n  --shard 1/3 --start-at=5 > w.json 2> w.log &\n\
         tritonctl perf merge --format json w*.json | jq .\n",
    );
    let c = perf_commands(&lines);
    assert_eq!(c.len(), 2);
    assert!(!c[0].merge);
    assert_eq!(c[0].flags, ["-m", "--shard", "--start-at"]);
    assert_eq!(c[0].text, "-m x --shard 1/3 --start-at=5");
    assert!(c[1].merge);
    assert_eq!(c[1].flags, ["--format"]);
    let help = "Options:\n  -m, --model <MODEL>\n          Model name\n      \
                --export-requests <FILE.jsonl>\n          see --not-a-flag\n\n          \
                [alias: --profile-export-file]\n  -i <PROTOCOL>\n          - http: also --nor-this\n";
    let flags = help_flags(help);
    assert_eq!(
        flags.into_iter().collect::<Vec<_>>(),
        [
            "--export-requests",
            "--model",
            "--profile-export-file",
            "-i",
            "-m"
        ]
    );
}
