//! Hostile paths (docs/hostile.md): symbolic links that leave the directory being
//! processed, FIFOs and devices where a file is expected, files larger than
//! `--max-file-bytes`, non-UTF-8 directory names, writes over what is not
//! ours, and temporary files left behind by an interrupted write. The rules
//! are those of `src/files.rs`.

#![cfg(unix)]

use crate::common::{crate_root, send_signal, tritonctl, wait_at_most};
use std::fs;
use std::os::unix::fs::{symlink, FileTypeExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

const HANG: Duration = Duration::from_secs(60);

const VALID: &str = "name: \"m\"\nbackend: \"onnxruntime\"\nmax_batch_size: 8\n\
    input [ { name: \"X\" data_type: TYPE_FP32 dims: [ 1 ] } ]\n\
    output [ { name: \"Y\" data_type: TYPE_FP32 dims: [ 1 ] } ]\n";

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success(), "mkfifo {}", path.display());
}

/// `<tmp>/repo/m/1/` and, outside the repository, `<tmp>/outside/`.
fn layout() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    fs::create_dir_all(repo.join("m").join("1")).unwrap();
    let outside = tmp.path().join("outside");
    fs::create_dir_all(&outside).unwrap();
    (tmp, repo, outside)
}

fn is_fifo(p: &Path) -> bool {
    fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_fifo())
}

// ------------------------------------------------------------ symlinks out

#[test]
fn validate_reports_a_config_linking_out_of_the_repository_without_its_content() {
    let (_tmp, repo, outside) = layout();
    let secret = outside.join("passwd");
    fs::write(&secret, "root:x:0:0:hunter2-secret:/root:/bin/bash\n").unwrap();
    symlink(&secret, repo.join("m").join("config.pbtxt")).unwrap();
    for format in ["human", "json", "github", "sarif", "junit"] {
        let r = tritonctl()
            .args(["validate", "--format", format])
            .arg(&repo)
            .timeout(HANG)
            .run();
        assert_eq!(r.code, 1, "{format}: {}{}", r.stdout, r.stderr);
        assert!(r.stdout.contains("E0706"), "{format}: {}", r.stdout);
        assert!(
            !r.stdout.contains("hunter2") && !r.stderr.contains("hunter2"),
            "{format}: the linked file's content leaked: {}{}",
            r.stdout,
            r.stderr
        );
    }
    // The user's choice: --follow-symlinks reads it (a syntax error, then).
    let r = tritonctl()
        .args(["validate", "--follow-symlinks"])
        .arg(&repo)
        .run();
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stdout.contains("E0001"), "{}", r.stdout);
    assert!(!r.stdout.contains("E0706"), "{}", r.stdout);
    // A config named on the command line is followed too.
    let r = tritonctl()
        .arg("validate")
        .arg(repo.join("m").join("config.pbtxt"))
        .run();
    assert!(r.stdout.contains("E0001"), "{}", r.stdout);
}

#[test]
fn validate_never_shows_the_environment_through_proc_self_environ() {
    if !Path::new("/proc/self/environ").exists() {
        return;
    }
    let (_tmp, repo, _) = layout();
    symlink("/proc/self/environ", repo.join("m").join("config.pbtxt")).unwrap();
    let r = tritonctl()
        .arg("validate")
        .arg(&repo)
        .env("CI_DEPLOY_TOKEN", "tok-3141592653")
        .timeout(HANG)
        .run();
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("E0706"), "{}", r.stdout);
    assert!(
        !r.stdout.contains("tok-3141592653") && !r.stderr.contains("tok-3141592653"),
        "{}{}",
        r.stdout,
        r.stderr
    );
}

#[test]
fn a_link_inside_the_repository_is_followed() {
    let (_tmp, repo, _) = layout();
    fs::write(repo.join("shared.pbtxt"), VALID).unwrap();
    symlink("../shared.pbtxt", repo.join("m").join("config.pbtxt")).unwrap();
    let r = tritonctl().arg("validate").arg(repo.join("m")).run();
    // The model directory is the root here: the link leaves it.
    assert!(r.stdout.contains("E0706"), "{}", r.stdout);
    let r = tritonctl().arg("validate").arg(&repo).run();
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(!r.stdout.contains("E0706"), "{}", r.stdout);
}

#[test]
fn model_py_linking_out_of_the_repository_is_reported_not_read() {
    let (_tmp, repo, outside) = layout();
    fs::write(
        repo.join("m").join("config.pbtxt"),
        "name: \"m\"\nbackend: \"python\"\nmax_batch_size: 8\n",
    )
    .unwrap();
    let secret = outside.join("secret.py");
    fs::write(&secret, "hunter2 = 1\n").unwrap();
    symlink(&secret, repo.join("m").join("1").join("model.py")).unwrap();
    let r = tritonctl().arg("validate").arg(&repo).run();
    assert!(r.stdout.contains("E0706"), "{}", r.stdout);
    assert!(r.stdout.contains("model.py"), "{}", r.stdout);
    assert!(!r.stdout.contains("hunter2"), "{}", r.stdout);
}

#[test]
fn fmt_does_not_write_through_a_link_out_of_the_directory() {
    let (_tmp, repo, outside) = layout();
    let real = outside.join("real.pbtxt");
    let ugly = "name:\"m\"   max_batch_size:8\n";
    fs::write(&real, ugly).unwrap();
    let link = repo.join("m").join("config.pbtxt");
    symlink(&real, &link).unwrap();
    let r = tritonctl().arg("fmt").arg(&repo).run();
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("--follow-symlinks"), "{}", r.stderr);
    assert_eq!(fs::read_to_string(&real).unwrap(), ugly);
    assert!(fs::symlink_metadata(&link).unwrap().is_symlink());
    // With the flag, or naming the file itself: written through the link.
    let r = tritonctl()
        .args(["fmt", "--follow-symlinks"])
        .arg(&repo)
        .run();
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_ne!(fs::read_to_string(&real).unwrap(), ugly);
    assert!(fs::symlink_metadata(&link).unwrap().is_symlink());
    fs::write(&real, ugly).unwrap();
    let r = tritonctl().arg("fmt").arg(&link).run();
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_ne!(fs::read_to_string(&real).unwrap(), ugly);
    assert!(fs::symlink_metadata(&link).unwrap().is_symlink());
}

#[test]
fn autoconfig_force_follows_the_same_rule_as_fmt() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("a1_symbolic");
    copy_dir(&crate_root().join("testdata/autoconfig/a1_symbolic"), &d);
    let _ = fs::remove_file(d.join("config.pbtxt"));
    let real = tmp.path().join("elsewhere.pbtxt");
    fs::write(&real, "max_batch_size: 2\n").unwrap();
    let link = d.join("config.pbtxt");
    symlink(&real, &link).unwrap();
    let r = tritonctl()
        .arg("autoconfig")
        .arg(&d)
        .args(["--write", "--force"])
        .run();
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--follow-symlinks"), "{}", r.stderr);
    assert_eq!(fs::read_to_string(&real).unwrap(), "max_batch_size: 2\n");
    assert!(fs::symlink_metadata(&link).unwrap().is_symlink());
    // Inside the directory: written through, the link stays a link.
    let inner = d.join("kept.pbtxt");
    fs::write(&inner, "max_batch_size: 2\n").unwrap();
    fs::remove_file(&link).unwrap();
    symlink("kept.pbtxt", &link).unwrap();
    let r = tritonctl()
        .arg("autoconfig")
        .arg(&d)
        .args(["--write", "--force"])
        .run();
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(fs::symlink_metadata(&link).unwrap().is_symlink());
    assert!(fs::read_to_string(&inner).unwrap().contains("input"));
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            fs::copy(e.path(), &target).unwrap();
        }
    }
}

// ------------------------------------------------ FIFOs, devices, limits

#[test]
fn validate_refuses_special_files_given_as_arguments() {
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("config.pbtxt");
    mkfifo(&fifo);
    for (arg, what) in [(fifo.as_path(), "FIFO"), (Path::new("/dev/zero"), "device")] {
        if !arg.exists() {
            continue;
        }
        let r = tritonctl().arg("validate").arg(arg).timeout(HANG).run();
        assert_eq!(r.code, 2, "{}: {}{}", arg.display(), r.stdout, r.stderr);
        assert!(r.stderr.contains(what), "{}", r.stderr);
        assert!(r.stderr.contains(&*arg.to_string_lossy()), "{}", r.stderr);
        assert!(
            !r.stdout.contains("No model configurations"),
            "{}",
            r.stdout
        );
    }
}

#[test]
fn special_files_inside_a_repository_do_not_hang() {
    let (_tmp, repo, _) = layout();
    mkfifo(&repo.join("m").join("config.pbtxt"));
    fs::create_dir_all(repo.join("z").join("1")).unwrap();
    symlink("/dev/zero", repo.join("z").join("config.pbtxt")).unwrap();
    for args in [&["validate"][..], &["validate", "--follow-symlinks"]] {
        let r = tritonctl().args(args).arg(&repo).timeout(HANG).run();
        assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
        assert!(r.stdout.contains("FIFO"), "{}", r.stdout);
    }
    let r = tritonctl()
        .args(["validate", "--follow-symlinks"])
        .arg(&repo)
        .timeout(HANG)
        .run();
    assert!(r.stdout.contains("character device"), "{}", r.stdout);
    // The model directory itself.
    let r = tritonctl()
        .arg("validate")
        .arg(repo.join("m"))
        .timeout(HANG)
        .run();
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("FIFO"), "{}", r.stdout);
    // fmt reports it and leaves it a FIFO.
    for target in [repo.clone(), repo.join("m").join("config.pbtxt")] {
        let r = tritonctl().arg("fmt").arg(&target).timeout(HANG).run();
        assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
        assert!(r.stderr.contains("FIFO"), "{}", r.stderr);
        assert!(is_fifo(&repo.join("m").join("config.pbtxt")));
    }
}

#[test]
fn files_larger_than_the_limit_name_the_limit_and_the_flag() {
    let (_tmp, repo, _) = layout();
    let big = format!("{VALID}{}", "# padding\n".repeat(300));
    let cfg = repo.join("m").join("config.pbtxt");
    fs::write(&cfg, &big).unwrap();
    let r = tritonctl()
        .args(["--max-file-bytes", "1K", "validate"])
        .arg(&cfg)
        .run();
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("config.pbtxt"), "{}", r.stderr);
    assert!(r.stderr.contains("1024 bytes"), "{}", r.stderr);
    assert!(r.stderr.contains("--max-file-bytes"), "{}", r.stderr);
    // Inside a repository: the model's finding says the same.
    let r = tritonctl()
        .args(["validate", "--max-file-bytes", "1024"])
        .arg(&repo)
        .run();
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("--max-file-bytes"), "{}", r.stdout);
    // Standard input, fmt and convert too.
    let r = tritonctl()
        .args(["validate", "--max-file-bytes", "1K", "-"])
        .stdin(big.clone())
        .run();
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--max-file-bytes"), "{}", r.stderr);
    for cmd in ["fmt", "convert"] {
        let r = tritonctl()
            .args([cmd, "--max-file-bytes", "1K"])
            .args(if cmd == "convert" {
                &["--to", "json"][..]
            } else {
                &[]
            })
            .arg(&cfg)
            .run();
        assert_eq!(r.code, 2, "{cmd}: {}", r.stderr);
        assert!(r.stderr.contains("1024 bytes"), "{cmd}: {}", r.stderr);
    }
    // Within the limit: read as usual.
    let r = tritonctl()
        .args(["validate", "--max-file-bytes", "1M"])
        .arg(&cfg)
        .run();
    assert_ne!(r.code, 2, "{}", r.stderr);
    // A bad value is a usage error.
    let r = tritonctl()
        .args(["validate", "--max-file-bytes", "lots"])
        .arg(&cfg)
        .run();
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("--max-file-bytes"), "{}", r.stderr);
}

#[test]
fn simulate_refuses_special_and_oversized_traces() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("m.pbtxt");
    fs::write(
        &cfg,
        format!("{VALID}dynamic_batching {{ }}\n").replace("name: \"m\"", "name: \"s\""),
    )
    .unwrap();
    let trace = tmp.path().join("t.jsonl");
    let line = "{\"arrival_us\": 0}\n";
    fs::write(&trace, line.repeat(200)).unwrap();
    let fifo = tmp.path().join("fifo.jsonl");
    mkfifo(&fifo);
    for (t, what) in [(fifo.as_path(), "FIFO"), (Path::new("/dev/zero"), "device")] {
        if !t.exists() {
            continue;
        }
        let r = tritonctl()
            .args(["simulate", "--latency", "1000", "--config"])
            .arg(&cfg)
            .arg("--trace")
            .arg(t)
            .timeout(HANG)
            .run();
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert!(r.stderr.contains(what), "{}", r.stderr);
    }
    let r = tritonctl()
        .args(["--max-file-bytes", "1K", "simulate", "--latency", "1000"])
        .arg("--config")
        .arg(&cfg)
        .arg("--trace")
        .arg(&trace)
        .run();
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("t.jsonl"), "{}", r.stderr);
    assert!(r.stderr.contains("--max-file-bytes"), "{}", r.stderr);
}

// ----------------------------------------------------------------- writes

fn simulate_timeline(dir: &Path, target: &Path) -> crate::common::Output {
    let cfg = dir.join("m.pbtxt");
    fs::write(
        &cfg,
        format!("{VALID}dynamic_batching {{ }}\n").replace("name: \"m\"", "name: \"s\""),
    )
    .unwrap();
    let trace = dir.join("t.jsonl");
    fs::write(&trace, "{\"arrival_us\": 0}\n{\"arrival_us\": 10}\n").unwrap();
    tritonctl()
        .args(["simulate", "--latency", "1000", "--config"])
        .arg(&cfg)
        .arg("--trace")
        .arg(&trace)
        .arg("--timeline")
        .arg(target)
        .timeout(HANG)
        .run()
}

fn leftovers(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect()
}

#[test]
fn timeline_never_replaces_what_is_not_a_regular_file() {
    let tmp = tempfile::tempdir().unwrap();
    // A symbolic link: written through, and still a link.
    let real = tmp.path().join("real.svg");
    fs::write(&real, "old").unwrap();
    let link = tmp.path().join("link.svg");
    symlink("real.svg", &link).unwrap();
    let r = simulate_timeline(tmp.path(), &link);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(fs::symlink_metadata(&link).unwrap().is_symlink());
    assert!(fs::read_to_string(&real).unwrap().contains("<svg"));
    // A FIFO: refused, still a FIFO.
    let fifo = tmp.path().join("fifo.svg");
    mkfifo(&fifo);
    let r = simulate_timeline(tmp.path(), &fifo);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("not a regular file"), "{}", r.stderr);
    assert!(is_fifo(&fifo));
    assert!(leftovers(tmp.path()).is_empty());
    // A device (as root, the node itself must stay).
    let full = Path::new("/dev/full");
    if fs::metadata(full).is_ok_and(|m| m.file_type().is_char_device()) {
        let r = simulate_timeline(tmp.path(), full);
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert!(fs::metadata(full).unwrap().file_type().is_char_device());
    }
}

#[test]
fn an_unwritable_timeline_gives_the_true_reason() {
    let tmp = tempfile::tempdir().unwrap();
    if Path::new("/proc/version").is_file() {
        let r = simulate_timeline(tmp.path(), Path::new("/proc/version"));
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert!(r.stderr.contains("/proc/version"), "{}", r.stderr);
        assert!(!r.stderr.contains("no such file"), "{}", r.stderr);
        assert!(r.stderr.contains("read-only"), "{}", r.stderr);
    }
    // A missing directory is named as such.
    let r = simulate_timeline(tmp.path(), &tmp.path().join("no-dir").join("t.svg"));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("cannot create a temporary file in"),
        "{}",
        r.stderr
    );
}

/// Starts `trace generate -o TARGET` on an endless trace and waits until its
/// temporary file exists; `nohup` starts it with SIGHUP ignored, as the
/// `nohup` command does.
fn start_endless_write(dir: &Path, target: &Path, nohup: bool) -> std::process::Child {
    let mut command = tritonctl().command_with_default_signals();
    command
        .args(["trace", "generate", "--rate", "1000000", "--requests"])
        .arg("1000000000000")
        .arg("-o")
        .arg(target)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    if nohup {
        use std::os::unix::process::CommandExt;
        // runs after the defaults are set
        // SAFETY: `signal` is async-signal-safe; nothing else runs in the child.
        unsafe {
            command.pre_exec(|| {
                libc::signal(libc::SIGHUP, libc::SIG_IGN);
                Ok(())
            });
        }
    }
    let mut child = command.spawn().expect("tritonctl starts");
    let started = std::time::Instant::now();
    while leftovers(dir).is_empty() {
        assert!(
            started.elapsed() < HANG,
            "no temporary file appeared in {}",
            dir.display()
        );
        assert!(child.try_wait().unwrap().is_none(), "ended too early");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

#[test]
fn an_interrupted_write_leaves_no_temporary_file() {
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("trace.jsonl");
    fs::write(&target, "old\n").unwrap();
    for (signal, number) in [("TERM", 15), ("INT", 2), ("HUP", 1)] {
        let mut child = start_endless_write(tmp.path(), &target, false);
        send_signal(&child, signal);
        let status = wait_at_most(&mut child, HANG, signal);
        assert_eq!(status.code(), Some(128 + number), "{signal}: {status:?}");
        assert!(
            leftovers(tmp.path()).is_empty(),
            "{signal}: {:?}",
            leftovers(tmp.path())
        );
        assert_eq!(fs::read_to_string(&target).unwrap(), "old\n");
    }
}

/// A signal ignored when tritonctl starts stays ignored: `nohup` ignores
/// SIGHUP, so a hang-up neither ends a write in progress nor removes its
/// temporary file; SIGTERM still does both.
#[cfg(target_os = "linux")]
#[test]
fn a_signal_ignored_at_start_stays_ignored_while_writing() {
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("trace.jsonl");
    fs::write(&target, "old\n").unwrap();
    let mut child = start_endless_write(tmp.path(), &target, true);
    send_signal(&child, "HUP");
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        child.try_wait().unwrap().is_none(),
        "SIGHUP ended a write started under nohup"
    );
    assert_eq!(leftovers(tmp.path()).len(), 1);
    send_signal(&child, "TERM");
    let status = wait_at_most(&mut child, HANG, "SIGTERM");
    assert_eq!(status.code(), Some(128 + libc::SIGTERM), "{status:?}");
    assert!(
        leftovers(tmp.path()).is_empty(),
        "{:?}",
        leftovers(tmp.path())
    );
    assert_eq!(fs::read_to_string(&target).unwrap(), "old\n");
}

/// A command that writes nothing starts no signal thread (src/interrupt.rs:
/// a thread is a measurable part of a short run) and keeps the default
/// action of the signals: Ctrl-C ends it at once.
#[cfg(target_os = "linux")]
#[test]
fn a_command_that_writes_nothing_runs_one_thread_and_keeps_the_default_signal_action() {
    use std::io::Write;
    use std::os::unix::process::ExitStatusExt;
    let mut child = tritonctl()
        .command_with_default_signals()
        .args(["validate", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("tritonctl starts");
    // More than a pipe holds: once written, validate is reading its input.
    // Written by another thread, so that a validate that stopped reading
    // fails the test instead of hanging it.
    let mut stdin = child.stdin.take().unwrap();
    let (written, wait) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let chunk = "# a comment line of a config being read\n".repeat(4096);
        let result = stdin.write_all(chunk.as_bytes());
        let _ = written.send((result.is_ok(), stdin));
    });
    let Ok((true, stdin)) = wait.recv_timeout(HANG) else {
        let _ = child.kill();
        panic!("validate did not read its standard input");
    };
    let threads = fs::read_dir(format!("/proc/{}/task", child.id()))
        .unwrap()
        .count();
    assert_eq!(threads, 1, "validate started a thread");
    send_signal(&child, "INT");
    let status = wait_at_most(&mut child, HANG, "SIGINT");
    assert_eq!(status.signal(), Some(libc::SIGINT), "{status:?}");
    drop(stdin);
}

// ------------------------------------------------------ non-UTF-8 names

#[cfg(target_os = "linux")]
#[test]
fn a_model_directory_whose_name_is_not_utf8_is_read_under_its_real_name() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    let dir = repo.join(OsStr::from_bytes(b"bad\xffname"));
    if fs::create_dir_all(dir.join("1")).is_err() {
        return; // a file system that wants UTF-8 names
    }
    fs::write(dir.join("config.pbtxt"), "max_batch_size: \"eight\"\n").unwrap();
    let r = tritonctl().arg("validate").arg(&repo).run();
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    // The real syntax error of the file, not a missing config.
    assert!(r.stdout.contains("max_batch_size"), "{}", r.stdout);
    assert!(!r.stdout.contains("N0701"), "{}", r.stdout);
    assert!(!r.stdout.contains("E0705"), "{}", r.stdout);
}

// ------------------------------------------------------------- one reader

/// Library and command code read files only through `src/files.rs`, which
/// applies the rules above; a direct `fs::read` would bypass them.
#[test]
fn files_are_read_only_through_the_one_reader() {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut sources = Vec::new();
    walk(&crate_root().join("src"), &mut sources);
    let mut found = Vec::new();
    for p in sources {
        if p.ends_with("files.rs") || p.ends_with("tests.rs") {
            continue;
        }
        let text = fs::read_to_string(&p).unwrap();
        // Unit tests read their fixtures directly.
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for needle in ["fs::read(", "fs::read_to_string(", "File::open("] {
            if code.contains(needle) {
                found.push(format!("{}: {needle}", p.display()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "read through crate::files instead: {found:?}"
    );
}
