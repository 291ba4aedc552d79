//! Helpers shared by the test modules, among them [`tritonctl`]: the one
//! way the tests run the binary.
#![allow(dead_code)]

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The repository root of this crate.
pub fn crate_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `../shared` next to the checkout, when present (CI always has it). Tests
/// that need it print why they are skipped when it is absent, unless
/// `TRITONCTL_REQUIRE_SHARED=1` (set by scripts/test in CI), which makes
/// its absence a failure.
pub fn shared_dir() -> Option<PathBuf> {
    let d = crate_root().join("..").join("shared");
    if d.join("corpus").is_dir() {
        return Some(d);
    }
    if std::env::var("TRITONCTL_REQUIRE_SHARED").is_ok_and(|v| v == "1") {
        panic!("../shared is required (TRITONCTL_REQUIRE_SHARED=1) but missing");
    }
    eprintln!("skipped: ../shared (corpus and conformance data) is not next to this checkout");
    None
}

/// Sends signal `name` (`INT`, `TERM`, `HUP`) to a child process, as a user's
/// Ctrl-C or a container runtime's stop would.
pub fn send_signal(child: &std::process::Child, name: &str) {
    let sent = std::process::Command::new("kill")
        .args([&format!("-{name}"), &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success(), "kill -{name} {} failed", child.id());
}

/// A port on 127.0.0.1 where nothing listens (the kernel's choice, closed
/// again at once): for tests of a refused connection.
pub fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// Waits for a child process to end, at most `limit`; after that kills it
/// and fails the test (`what` says what was expected to end it).
pub fn wait_at_most(
    child: &mut std::process::Child,
    limit: Duration,
    what: &str,
) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("the child's status") {
            return status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("still running {limit:?} after {what}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The path of the built `tritonctl` binary, for the few tests that hand it
/// to another program (a script that runs it) or need a raw child process
/// ([`Tritonctl::command`]).
pub fn tritonctl_path() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_tritonctl"))
}

/// A run of the built `tritonctl` binary: `tritonctl().args([...]).run()`.
///
/// The environment is cleared except for `PATH`, so that the developer's or
/// the CI runner's variables (`TRITONCTL_FORMAT`, `NO_COLOR`,
/// `ORT_DYLIB_PATH`, `GITHUB_ACTIONS`, ...) cannot change what a test sees; a
/// test sets what it needs with [`env`](Self::env) or passes a variable of
/// its own environment on with [`pass_env`](Self::pass_env).
pub fn tritonctl() -> Tritonctl {
    Tritonctl {
        args: Vec::new(),
        envs: std::env::var_os("PATH")
            .map(|p| (OsString::from("PATH"), p))
            .into_iter()
            .collect(),
        dir: None,
        stdin: None,
        timeout: None,
    }
}

/// The builder [`tritonctl`] returns.
pub struct Tritonctl {
    args: Vec<OsString>,
    envs: Vec<(OsString, OsString)>,
    dir: Option<PathBuf>,
    stdin: Option<Vec<u8>>,
    timeout: Option<Duration>,
}

impl Tritonctl {
    pub fn arg(&mut self, arg: impl AsRef<OsStr>) -> &mut Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    pub fn args<I, S>(&mut self, args: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        for a in args {
            self.arg(a);
        }
        self
    }

    pub fn env(&mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> &mut Self {
        self.envs
            .push((key.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    pub fn envs<'a, K, V>(&mut self, vars: impl IntoIterator<Item = &'a (K, V)>) -> &mut Self
    where
        K: AsRef<OsStr> + 'a,
        V: AsRef<OsStr> + 'a,
    {
        for (k, v) in vars {
            self.env(k, v);
        }
        self
    }

    /// Passes the test's own value of `key` on, when it has one.
    pub fn pass_env(&mut self, key: &str) -> &mut Self {
        if let Some(v) = std::env::var_os(key) {
            self.env(key, v);
        }
        self
    }

    pub fn current_dir(&mut self, dir: impl AsRef<Path>) -> &mut Self {
        self.dir = Some(dir.as_ref().to_owned());
        self
    }

    /// Bytes on standard input (otherwise it is empty).
    pub fn stdin(&mut self, bytes: impl Into<Vec<u8>>) -> &mut Self {
        self.stdin = Some(bytes.into());
        self
    }

    /// Kills the process after `limit`: the run then fails the test as a
    /// hang.
    pub fn timeout(&mut self, limit: Duration) -> &mut Self {
        self.timeout = Some(limit);
        self
    }

    /// Runs the binary to its end. Fails the test when it cannot be started,
    /// was killed by a signal (or the timeout), panicked, or wrote anything
    /// but UTF-8 to stdout.
    pub fn run(&self) -> Output {
        let mut c = assert_cmd::Command::from_std(self.command());
        if let Some(bytes) = &self.stdin {
            c.write_stdin(bytes.clone());
        }
        if let Some(limit) = self.timeout {
            c.timeout(limit);
        }
        let started = Instant::now();
        let out = c.output().expect("tritonctl runs");
        let shown = self.shown();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let code = out.status.code().unwrap_or_else(|| {
            panic!(
                "tritonctl {shown} killed after {:?} (a hang?): {stderr}",
                started.elapsed()
            )
        });
        assert!(
            !stderr.contains("panicked") && !stderr.contains("internal error"),
            "tritonctl {shown} panicked:\n{stderr}"
        );
        let stdout = String::from_utf8(out.stdout)
            .unwrap_or_else(|e| panic!("tritonctl {shown}: stdout is not UTF-8: {e}"));
        Output {
            code,
            stdout,
            stderr,
            args: shown,
        }
    }

    /// The configured command (without stdin and timeout), for a test that
    /// drives the child process itself: reads part of its output, closes a
    /// pipe early.
    pub fn command(&self) -> std::process::Command {
        let mut c = std::process::Command::new(tritonctl_path());
        c.env_clear()
            .envs(self.envs.iter().cloned())
            .args(&self.args);
        if let Some(dir) = &self.dir {
            c.current_dir(dir);
        }
        c
    }

    /// [`command`](Self::command) for a test that sends the child signals:
    /// the child starts with the default action of SIGINT, SIGTERM and
    /// SIGHUP, as a command typed at a terminal does, whatever the test
    /// runner inherited (a shell's background job ignores SIGINT, `nohup`
    /// SIGHUP; an ignored signal stays ignored across exec, and tritonctl
    /// keeps a signal ignored at its start). Only these tests pay for it:
    /// a child set up this way is started by `fork`, which copies the
    /// whole test process's page tables, where other children are started
    /// by `posix_spawn`.
    #[cfg(unix)]
    pub fn command_with_default_signals(&self) -> std::process::Command {
        use std::os::unix::process::CommandExt;
        let mut c = self.command();
        // SAFETY: `signal` is async-signal-safe; nothing else runs in the
        // child before exec.
        unsafe {
            c.pre_exec(|| {
                for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                    libc::signal(s, libc::SIG_DFL);
                }
                Ok(())
            });
        }
        c
    }

    fn shown(&self) -> String {
        self.args
            .iter()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// What a finished run left: its exit code and its output.
#[derive(Debug)]
pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    /// The arguments, for failure messages.
    pub args: String,
}

impl Output {
    /// `(exit code, stdout, stderr)`.
    pub fn parts(self) -> (i32, String, String) {
        (self.code, self.stdout, self.stderr)
    }

    /// `(exit code, stdout followed by stderr)`: what a user sees in a
    /// terminal.
    pub fn combined(self) -> (i32, String) {
        (self.code, self.stdout + &self.stderr)
    }

    /// stdout parsed as one JSON document.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "tritonctl {}: stdout is not JSON ({e}):\n{}\nstderr:\n{}",
                self.args, self.stdout, self.stderr
            )
        })
    }

    /// stdout parsed as one JSON document a line.
    pub fn json_lines(&self) -> Vec<serde_json::Value> {
        self.stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect()
    }

    pub fn success(&self) -> bool {
        self.code == 0
    }

    /// Fails the test, showing both outputs, unless the exit code is `code`.
    pub fn assert_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code, code,
            "tritonctl {}\nstdout:\n{}\nstderr:\n{}",
            self.args, self.stdout, self.stderr
        );
        self
    }

    pub fn assert_success(&self) -> &Self {
        self.assert_code(0)
    }

    pub fn assert_stdout_contains(&self, needle: &str) -> &Self {
        assert!(
            self.stdout.contains(needle),
            "tritonctl {}: {needle:?} not in stdout:\n{}",
            self.args,
            self.stdout
        );
        self
    }

    pub fn assert_stderr_contains(&self, needle: &str) -> &Self {
        assert!(
            self.stderr.contains(needle),
            "tritonctl {}: {needle:?} not in stderr:\n{}",
            self.args,
            self.stderr
        );
        self
    }
}

/// Whether `TRITONCTL_REQUIRE_ORT=1` (set by scripts/test): tests that need
/// ONNX Runtime must then fail instead of skipping.
pub fn require_ort() -> bool {
    std::env::var_os("TRITONCTL_REQUIRE_ORT").is_some_and(|v| v == "1")
}

/// The ONNX Runtime library the tests run with, or `None` after printing
/// why the test is skipped (a failure under [`require_ort`]).
#[cfg(feature = "run")]
pub fn ort_library() -> Option<tritonctl::runtime::OrtLibrary> {
    match tritonctl::runtime::probe() {
        Ok(lib) => Some(lib),
        Err(e) if require_ort() => {
            panic!("TRITONCTL_REQUIRE_ORT=1 but ONNX Runtime is not available: {e}")
        }
        Err(e) => {
            eprintln!("skipped: ONNX Runtime is not available: {e}");
            None
        }
    }
}

/// The request line and headers (names lower-cased) of one HTTP/1.1
/// request, for the loopback servers of the perf tests; `None` at the end
/// of the connection.
pub fn read_request_head(
    r: &mut impl std::io::BufRead,
) -> Option<(String, String, std::collections::BTreeMap<String, String>)> {
    let mut line = String::new();
    if r.read_line(&mut line).unwrap_or(0) == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let path = parts.next().unwrap_or("").to_string();
    let mut headers = std::collections::BTreeMap::new();
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).unwrap_or(0) == 0 {
            return None;
        }
        let h = h.trim_end();
        if h.is_empty() {
            return Some((method, path, headers));
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
}

/// The character an XML entity reference stands for (the five predefined
/// entities and character references); any other fails the test.
pub fn xml_entity(r: &quick_xml::events::BytesRef) -> char {
    let name = String::from_utf8_lossy(r.as_ref()).into_owned();
    match name.as_str() {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        _ => r
            .resolve_char_ref()
            .unwrap()
            .unwrap_or_else(|| panic!("unknown entity &{name};")),
    }
}

/// The memory of a loopback server's shared-memory region: a system
/// region's memory object, or a CUDA region's device memory (the fake
/// device's, reached through the IPC handle as Triton's
/// `cudaIpcOpenMemHandle` reaches real device memory).
#[cfg(feature = "perf")]
pub enum ShmRegion {
    File(std::fs::File),
    Cuda(std::sync::Arc<std::sync::Mutex<Vec<u8>>>),
}

/// The key under which the loopback servers keep a CUDA region: the
/// registered handle, base64.
#[cfg(feature = "perf")]
pub const CUDA_KEY: &str = "cuda:";

#[cfg(feature = "perf")]
impl ShmRegion {
    pub fn read_exact_at(&self, buf: &mut [u8], off: u64) -> std::io::Result<()> {
        match self {
            ShmRegion::File(f) => std::os::unix::fs::FileExt::read_exact_at(f, buf, off),
            ShmRegion::Cuda(m) => {
                let m = m.lock().unwrap();
                let src = m
                    .get(off as usize..off as usize + buf.len())
                    .ok_or(std::io::ErrorKind::UnexpectedEof)?;
                buf.copy_from_slice(src);
                Ok(())
            }
        }
    }

    pub fn write_all_at(&self, buf: &[u8], off: u64) -> std::io::Result<()> {
        match self {
            ShmRegion::File(f) => std::os::unix::fs::FileExt::write_all_at(f, buf, off),
            ShmRegion::Cuda(m) => {
                let mut m = m.lock().unwrap();
                let dst = m
                    .get_mut(off as usize..off as usize + buf.len())
                    .ok_or(std::io::ErrorKind::WriteZero)?;
                dst.copy_from_slice(buf);
                Ok(())
            }
        }
    }
}

/// The device memory of a CUDA IPC handle (base64), while the client's
/// fake device holds it.
#[cfg(feature = "perf")]
pub fn open_cuda_handle(b64: &str) -> Result<std::sync::Arc<std::sync::Mutex<Vec<u8>>>, String> {
    let raw = tritonctl::inputs::codec::b64_decode(b64)?;
    if raw.len() != 64 {
        return Err(format!("a CUDA IPC handle has 64 bytes, not {}", raw.len()));
    }
    tritonctl::perf::device::fake::open_handle(&raw)
        .ok_or_else(|| "Unable to open CUDA IPC handle: invalid handle".to_string())
}

/// The loopback servers' shared-memory regions: name -> (key, byte
/// size); a CUDA region's key is [`CUDA_KEY`] and its handle. The memory
/// of region `name`, opened as Triton opens it (`shm_open` of the key: a
/// file under /dev/shm on Linux; the IPC handle of a CUDA region), and its
/// size.
#[cfg(feature = "perf")]
pub fn shm_region_file(
    regions: &std::sync::Mutex<std::collections::BTreeMap<String, (String, u64)>>,
    name: &str,
) -> Result<(ShmRegion, u64), String> {
    let (key, size) = regions
        .lock()
        .unwrap()
        .get(name)
        .cloned()
        .ok_or_else(|| format!("Unable to find shared memory region: '{name}'"))?;
    if let Some(h) = key.strip_prefix(CUDA_KEY) {
        return Ok((ShmRegion::Cuda(open_cuda_handle(h)?), size));
    }
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(format!("/dev/shm{key}"))
        .map_err(|e| format!("cannot open {key}: {e}"))?;
    Ok((ShmRegion::File(f), size))
}
