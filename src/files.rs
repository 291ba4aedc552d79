//! Files: the one atomic writer every command writes through, and the
//! words used for I/O errors.
//!
//! One rule for every writer (`fmt`, `autoconfig --write`, `simulate
//! --timeline`, `run --profile`, ...):
//! - the new content goes to a uniquely named temporary file in the
//!   target's directory, is synced, and is renamed over the target, so a
//!   reader sees the old file or the whole new one, never a mix; a killed
//!   process leaves at most that temporary file, never a half-written target;
//! - a symbolic link is written through: the file it points to is replaced
//!   (as editors do), and the link stays a link;
//! - a target that exists and is not a regular file (a directory, a FIFO, a
//!   device) is refused, never replaced;
//! - an existing file keeps its permissions; a read-only one is refused;
//! - [`Replace::Never`] never replaces an existing file, even one created
//!   between the check and the write (the last step is a hard link).
//! - inside a directory being processed (`fmt` on a repository, `autoconfig
//!   --write` into a model directory: [`write_atomic_in`]) a symbolic link
//!   is written through only when its file stays inside that directory;
//!   one that leaves it is refused unless `--follow-symlinks`;
//! - the temporary file is registered while it exists, so that an
//!   interrupted process (SIGINT, SIGTERM, SIGHUP: `main.rs` installs the
//!   handler, armed by the first write: `interrupt`) removes it with
//!   [`remove_temporary_files`] before it exits.
//!
//! One rule for every reader of a config, trace, input or model file
//! ([`read_file`], [`read_in`], [`open_regular`]):
//! - only regular files are read: a FIFO, socket or device is refused with
//!   a message before it is opened (so a FIFO never blocks), and the opened
//!   file is checked again;
//! - at most `--max-file-bytes` bytes ([`DEFAULT_MAX_FILE_BYTES`]) are read,
//!   whatever the file's size says (files under `/proc` say 0); the error
//!   names the file, the limit and the flag. ONNX model files, which can
//!   hold gigabytes of weights and are streamed, have no limit;
//! - a file read because it sits in a directory being processed (a model's
//!   `config.pbtxt`, `model.py`, model file, warm-up data) is read only when
//!   it resolves inside that directory: a symbolic link leaving it is
//!   reported and not followed, unless `--follow-symlinks`. A file named on
//!   the command line is the user's choice and is followed.
//!
//! The limit and `--follow-symlinks` are process-wide ([`set_read_policy`],
//! called once by `main.rs` from the global flags), so that every reader
//! applies the same ones without threading them through each layer.

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// Whether [`write_atomic`] may replace an existing file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Replace {
    /// Replace the file if it exists (after following symbolic links).
    Allow,
    /// Fail with [`io::ErrorKind::AlreadyExists`] if the name exists.
    Never,
}

/// Writes `bytes` to `path` atomically under the rules of this module.
/// Errors carry a message in the words of [`io_message`].
pub fn write_atomic(path: &Path, bytes: &[u8], replace: Replace) -> io::Result<()> {
    write_atomic_with(path, replace, |w| w.write_all(bytes))
}

/// Like [`write_atomic`], for output written piece by piece (a trace of a
/// million requests need not be held in memory): `write` fills a buffered
/// writer on the temporary file, which replaces the target only when
/// `write` succeeds.
pub fn write_atomic_with(
    path: &Path,
    replace: Replace,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    write_atomic_impl(path, None, replace, write)
}

/// Like [`write_atomic`], for a file inside the directory `root` being
/// processed: when `path` is a symbolic link, the file it leads to must be
/// inside `root` too, unless `--follow-symlinks` ([`ReadPolicy`]).
pub fn write_atomic_in(path: &Path, root: &Path, bytes: &[u8], replace: Replace) -> io::Result<()> {
    write_atomic_impl(path, Some(root), replace, |w| w.write_all(bytes))
}

fn write_atomic_impl(
    path: &Path,
    root: Option<&Path>,
    replace: Replace,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let target = resolve_links(path)?;
    if let (Some(root), false) = (root, read_policy().follow_symlinks) {
        // The target may not exist yet: its directory must.
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let resolved = fs::canonicalize(dir)?.join(target.file_name().unwrap_or_default());
        check_inside(&resolved, root)?;
    }
    let existing = match fs::metadata(&target) {
        Ok(m) => Some(m),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    if let Some(meta) = &existing {
        if replace == Replace::Never {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                "already exists",
            ));
        }
        if meta.is_dir() {
            return Err(io::Error::other("is a directory"));
        }
        if !meta.is_file() {
            return Err(io::Error::other(
                "is not a regular file (a FIFO, socket or device is never replaced)",
            ));
        }
        if meta.permissions().readonly() {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "the file is read-only",
            ));
        }
    }
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    // The temporary name starts with the file's (cut short, to stay within
    // the file system's name limit) so that a leftover is recognisable.
    let base: String = target
        .file_name()
        .map(|n| n.to_string_lossy().chars().take(100).collect())
        .unwrap_or_default();
    // Signals are caught before the temporary file exists (src/interrupt.rs),
    // and the list of temporary files stays locked from its creation to its
    // registration, so that a signal in between still finds it.
    crate::interrupt::arm();
    let mut list = lock_temporary_files();
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{base}.tritonctl-"))
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot create a temporary file in {}: {}",
                    dir.display(),
                    io_message(&io::Error::from(e.kind()))
                ),
            )
        })?;
    let _registered = Registered::new(&mut list, tmp.path());
    drop(list);
    {
        let mut buffered = io::BufWriter::new(tmp.as_file_mut());
        write(&mut buffered)?;
        buffered.flush()?;
    }
    tmp.as_file().sync_all()?;
    if let Some(meta) = &existing {
        fs::set_permissions(tmp.path(), meta.permissions())?;
    }
    // On failure the temporary file is removed when `tmp` is dropped.
    match replace {
        Replace::Allow => tmp.persist(&target).map(drop).map_err(|e| e.error)?,
        Replace::Never => match tmp.persist_noclobber(&target) {
            Ok(_) => {}
            Err(e) if e.error.kind() == io::ErrorKind::AlreadyExists => {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    "already exists",
                ))
            }
            Err(e) => return Err(e.error),
        },
    }
    // Make the rename itself durable (best effort: not every platform lets
    // a directory be opened and synced).
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Temporary files being written, removed by [`remove_temporary_files`]
/// when the process is interrupted.
static TEMPORARY_FILES: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Registers a temporary file for as long as it lives.
struct Registered(PathBuf);

impl Registered {
    fn new(list: &mut Vec<PathBuf>, path: &Path) -> Registered {
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        list.push(path.clone());
        Registered(path)
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut list = lock_temporary_files();
        if let Some(i) = list.iter().position(|p| *p == self.0) {
            list.swap_remove(i);
        }
    }
}

fn lock_temporary_files() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    TEMPORARY_FILES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Removes the temporary files of writes in progress; for the signal
/// handler of `main.rs`, which exits right after. A write that renames its
/// file at the same moment either has replaced its target with the whole
/// new content or fails without touching it.
pub fn remove_temporary_files() {
    for p in lock_temporary_files().drain(..) {
        let _ = fs::remove_file(p);
    }
}

/// The largest config, trace or input file read unless `--max-file-bytes`
/// says otherwise: 64 MiB, far above any real config (checking one takes
/// memory some times its size: docs/hostile.md) and within the memory of a
/// CI runner.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 64 << 20;

/// How files are read: the process-wide settings of the global flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadPolicy {
    /// `--max-file-bytes`: the largest config, trace or input file read.
    pub max_file_bytes: u64,
    /// `--follow-symlinks`: follow symbolic links that leave the directory
    /// being processed.
    pub follow_symlinks: bool,
}

impl Default for ReadPolicy {
    fn default() -> ReadPolicy {
        ReadPolicy {
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            follow_symlinks: false,
        }
    }
}

static READ_POLICY: OnceLock<ReadPolicy> = OnceLock::new();

/// Sets the process-wide [`ReadPolicy`] (once, before anything is read;
/// later calls are ignored).
pub fn set_read_policy(policy: ReadPolicy) {
    let _ = READ_POLICY.set(policy);
}

/// The process-wide [`ReadPolicy`] (the default until one is set).
pub fn read_policy() -> ReadPolicy {
    READ_POLICY.get().copied().unwrap_or_default()
}

/// A file that resolves outside the directory being processed (see the
/// module documentation); carried inside the [`io::Error`] of a refused
/// read or write, so that `validate` can report it under its own rule.
#[derive(Debug)]
pub struct OutsideRoot {
    /// Where the path leads (resolved).
    pub resolved: PathBuf,
    /// The directory being processed, as given.
    pub root: PathBuf,
}

impl std::fmt::Display for OutsideRoot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "a symbolic link leads to {}, outside {}; not followed (--follow-symlinks follows it)",
            self.resolved.display(),
            self.root.display()
        )
    }
}

impl std::error::Error for OutsideRoot {}

/// The [`OutsideRoot`] inside `e`, if that is why a read or write was refused.
pub fn outside_root(e: &io::Error) -> Option<&OutsideRoot> {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<OutsideRoot>())
}

/// Refuses `resolved` (where `path` leads) when it is not inside `root`.
fn check_inside(resolved: &Path, root: &Path) -> io::Result<()> {
    let canonical_root = fs::canonicalize(root)?;
    if resolved.starts_with(&canonical_root) {
        return Ok(());
    }
    Err(io::Error::new(
        io::ErrorKind::PermissionDenied,
        OutsideRoot {
            resolved: resolved.to_path_buf(),
            root: root.to_path_buf(),
        },
    ))
}

/// What a non-regular file is, for messages; `None` for a regular file.
fn special_kind(meta: &fs::Metadata) -> Option<&'static str> {
    let t = meta.file_type();
    if t.is_file() {
        return None;
    }
    if t.is_dir() {
        return Some("a directory");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return Some("a FIFO");
        }
        if t.is_socket() {
            return Some("a socket");
        }
        if t.is_char_device() {
            return Some("a character device");
        }
        if t.is_block_device() {
            return Some("a block device");
        }
    }
    Some("not a regular file")
}

fn refuse_special(kind: &str) -> io::Error {
    let what = if kind.starts_with("not ") {
        kind.to_string()
    } else {
        format!("is {kind}, not a regular file")
    };
    let kind = if kind == "a directory" {
        io::ErrorKind::IsADirectory
    } else {
        io::ErrorKind::InvalidInput
    };
    io::Error::new(kind, format!("{what}; only regular files are read"))
}

/// Opens `path` for reading under the rules of this module: a regular
/// file (checked before opening, so that a FIFO never blocks, and again on
/// the opened file), inside `root` when one is given (unless
/// `--follow-symlinks`). No size limit: for streamed files such as ONNX
/// models; [`read_in`] and [`read_file`] also limit the size.
pub fn open_regular(path: &Path, root: Option<&Path>) -> io::Result<fs::File> {
    let mut target = path.to_path_buf();
    if let (Some(root), false) = (root, read_policy().follow_symlinks) {
        let resolved = fs::canonicalize(path)?;
        check_inside(&resolved, root)?;
        // Open what was checked.
        target = resolved;
    }
    if let Some(kind) = special_kind(&fs::metadata(&target)?) {
        return Err(refuse_special(kind));
    }
    let mut options = fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        // Should the file be swapped for a FIFO after the check, opening
        // it does not wait for a writer.
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(&target)?;
    if let Some(kind) = special_kind(&file.metadata()?) {
        return Err(refuse_special(kind));
    }
    Ok(file)
}

/// The error for input larger than `limit` bytes.
pub fn too_large(limit: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::FileTooLarge,
        format!(
            "larger than {}, the limit for an input file; --max-file-bytes raises it",
            bytes_in_words(limit)
        ),
    )
}

/// `268435456 bytes (256 MiB)`.
fn bytes_in_words(n: u64) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{n} bytes ({} MiB)", n >> 20)
    } else if n >= 1 << 10 && n.is_multiple_of(1 << 10) {
        format!("{n} bytes ({} KiB)", n >> 10)
    } else {
        format!("{n} bytes")
    }
}

/// All of `reader`, at most `limit` bytes (else [`too_large`]).
pub fn read_all_limited(reader: impl Read, limit: u64) -> io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    reader.take(limit.saturating_add(1)).read_to_end(&mut buf)?;
    if buf.len() as u64 > limit {
        return Err(too_large(limit));
    }
    Ok(buf)
}

/// A reader that fails with [`too_large`] past `limit` bytes, for files
/// read as a stream (traces).
pub struct Limited<R> {
    inner: R,
    left: u64,
    limit: u64,
}

impl<R: Read> Limited<R> {
    /// `inner`, limited to the process-wide `--max-file-bytes`.
    pub fn new(inner: R) -> Limited<R> {
        let limit = read_policy().max_file_bytes;
        Limited {
            inner,
            left: limit,
            limit,
        }
    }
}

impl<R: Read> Read for Limited<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 {
            // One byte more tells whether the input ends at the limit.
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => Err(too_large(self.limit)),
            };
        }
        let max = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..max])?;
        self.left -= n as u64;
        Ok(n)
    }
}

fn read_impl(path: &Path, root: Option<&Path>) -> io::Result<Vec<u8>> {
    let file = open_regular(path, root)?;
    let limit = read_policy().max_file_bytes;
    // The size is only a hint (files under /proc say 0).
    let hint = file.metadata().map(|m| m.len()).unwrap_or(0).min(limit);
    let mut buf = Vec::with_capacity(usize::try_from(hint).unwrap_or(0).saturating_add(1));
    file.take(limit.saturating_add(1)).read_to_end(&mut buf)?;
    if buf.len() as u64 > limit {
        return Err(too_large(limit));
    }
    Ok(buf)
}

/// Reads a file the user named (on the command line or in a flag): a
/// regular file of at most `--max-file-bytes`; symbolic links are followed.
/// Errors carry a message in the words of [`io_message`].
pub fn read_file(path: &Path) -> io::Result<Vec<u8>> {
    read_impl(path, None)
}

/// [`read_file`] as UTF-8 text.
pub fn read_file_to_string(path: &Path) -> io::Result<String> {
    String::from_utf8(read_file(path)?)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8 text"))
}

/// Reads a file found inside the directory `root` being processed (see the
/// module documentation): like [`read_file`], and refused with
/// [`OutsideRoot`] when it resolves outside `root` (unless
/// `--follow-symlinks`).
pub fn read_in(path: &Path, root: &Path) -> io::Result<Vec<u8>> {
    read_impl(path, Some(root))
}

/// Follows symbolic links from `path` to the name that is finally written
/// (which may not exist yet: a dangling link names the file to create).
fn resolve_links(path: &Path) -> io::Result<PathBuf> {
    let mut current = path.to_path_buf();
    // As the kernel does (ELOOP), give up on long chains and loops.
    for _ in 0..40 {
        match fs::symlink_metadata(&current) {
            Ok(m) if m.file_type().is_symlink() => {
                let next = fs::read_link(&current)?;
                current = match current.parent() {
                    Some(parent) if next.is_relative() => parent.join(next),
                    _ => next,
                };
            }
            _ => return Ok(current),
        }
    }
    Err(io::Error::other("too many levels of symbolic links"))
}

/// An I/O error in the words tritonctl uses in its messages.
pub fn io_message(e: &io::Error) -> String {
    match e.kind() {
        // Only the bare OS error: a message of tritonctl's own says more.
        io::ErrorKind::NotFound if e.get_ref().is_none() => "no such file or directory".into(),
        io::ErrorKind::PermissionDenied if e.get_ref().is_none() => "permission denied".into(),
        _ => e.to_string(),
    }
}

/// The directory's own name (`.` resolved through the current directory).
pub fn dir_name_of(dir: &Path) -> Option<String> {
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
    name.or_else(|| {
        fs::canonicalize(dir)
            .ok()
            .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
    })
}

/// A path as reports show it: leading `./` dropped, so that `tritonctl
/// validate` (path `.`) reports `m/config.pbtxt`, not `./m/config.pbtxt`.
pub fn tidy_path(path: &str) -> String {
    let mut p = path;
    while let Some(rest) = p.strip_prefix("./") {
        p = rest.trim_start_matches('/');
    }
    if p.is_empty() || Path::new(p) == Path::new("") {
        path.to_string()
    } else {
        p.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Makes a FIFO with mkfifo(1); false where there is none.
    fn mkfifo(path: &Path) -> bool {
        std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .is_ok_and(|s| s.success())
    }

    fn leftovers(dir: &Path) -> Vec<String> {
        fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect()
    }

    #[test]
    fn writes_a_new_file_and_replaces_an_existing_one() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("config.pbtxt");
        write_atomic(&p, b"one", Replace::Allow).unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"one");
        write_atomic(&p, b"two", Replace::Allow).unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        assert!(leftovers(d.path()).is_empty());
    }

    #[test]
    fn a_failed_writer_leaves_the_target_alone() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("trace.jsonl");
        fs::write(&p, "old").unwrap();
        write_atomic_with(&p, Replace::Allow, |w| {
            w.write_all(b"partial")?;
            Err(io::Error::other("stopped"))
        })
        .unwrap_err();
        assert_eq!(fs::read(&p).unwrap(), b"old");
        assert!(leftovers(d.path()).is_empty());
        write_atomic_with(&p, Replace::Allow, |w| w.write_all(b"new")).unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"new");
    }

    #[test]
    fn never_replaces_when_told_not_to() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("config.pbtxt");
        fs::write(&p, "mine").unwrap();
        let e = write_atomic(&p, b"new", Replace::Never).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read(&p).unwrap(), b"mine");
        assert!(leftovers(d.path()).is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn writes_through_a_symbolic_link_and_keeps_it() {
        let d = tempfile::tempdir().unwrap();
        let real = d.path().join("real.pbtxt");
        fs::write(&real, "old").unwrap();
        let link = d.path().join("config.pbtxt");
        std::os::unix::fs::symlink("real.pbtxt", &link).unwrap();
        write_atomic(&link, b"new", Replace::Allow).unwrap();
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read(&real).unwrap(), b"new");
    }

    #[cfg(unix)]
    #[test]
    fn keeps_permissions_and_refuses_special_files() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        fs::write(&p, "x").unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o640)).unwrap();
        write_atomic(&p, b"y", Replace::Allow).unwrap();
        assert_eq!(
            fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o640
        );

        let e = write_atomic(d.path(), b"y", Replace::Allow).unwrap_err();
        assert!(e.to_string().contains("is a directory"), "{e}");
        let fifo = d.path().join("fifo");
        if mkfifo(&fifo) {
            let e = write_atomic(&fifo, b"y", Replace::Allow).unwrap_err();
            assert!(e.to_string().contains("not a regular file"), "{e}");
            assert!(!fs::metadata(&fifo).unwrap().is_file());
        }
        assert!(leftovers(d.path()).is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn reads_inside_the_root_and_refuses_links_that_leave_it() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("repo");
        fs::create_dir(&root).unwrap();
        let secret = d.path().join("secret");
        fs::write(&secret, "s3cret").unwrap();
        fs::write(root.join("own"), "mine").unwrap();
        std::os::unix::fs::symlink("own", root.join("inner")).unwrap();
        std::os::unix::fs::symlink(&secret, root.join("outer")).unwrap();
        assert_eq!(read_in(&root.join("inner"), &root).unwrap(), b"mine");
        let e = read_in(&root.join("outer"), &root).unwrap_err();
        let outside = outside_root(&e).expect("refused as outside the root");
        assert_eq!(outside.root, root);
        assert!(e.to_string().contains("--follow-symlinks"), "{e}");
        // Named by the user: followed.
        assert_eq!(read_file(&root.join("outer")).unwrap(), b"s3cret");
        // Writes follow the same rule.
        let e = write_atomic_in(&root.join("outer"), &root, b"x", Replace::Allow).unwrap_err();
        assert!(outside_root(&e).is_some(), "{e}");
        assert_eq!(fs::read(&secret).unwrap(), b"s3cret");
        write_atomic_in(&root.join("inner"), &root, b"new", Replace::Allow).unwrap();
        assert_eq!(fs::read(root.join("own")).unwrap(), b"new");
        assert!(leftovers(&root).is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn refuses_special_files_without_blocking() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("fifo");
        if mkfifo(&fifo) {
            let e = read_file(&fifo).unwrap_err();
            assert!(e.to_string().contains("FIFO"), "{e}");
        }
        if Path::new("/dev/zero").exists() {
            let e = read_file(Path::new("/dev/zero")).unwrap_err();
            assert!(e.to_string().contains("character device"), "{e}");
        }
        let e = read_file(d.path()).unwrap_err();
        assert!(e.to_string().contains("directory"), "{e}");
    }

    #[test]
    fn limits_what_is_read_whatever_the_size_says() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        fs::write(&p, vec![b'x'; 300]).unwrap();
        assert_eq!(
            read_all_limited(fs::File::open(&p).unwrap(), 300)
                .unwrap()
                .len(),
            300
        );
        let e = read_all_limited(fs::File::open(&p).unwrap(), 299).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::FileTooLarge);
        assert!(e.to_string().contains("299 bytes"), "{e}");
        assert!(e.to_string().contains("--max-file-bytes"), "{e}");
        let e = read_all_limited(&[0u8; 2048][..], 1024).unwrap_err();
        assert!(e.to_string().contains("1024 bytes (1 KiB)"), "{e}");
        // A streamed reader stops at the limit too.
        let mut out = Vec::new();
        let mut r = Limited {
            inner: &[1u8; 10][..],
            left: 10,
            limit: 10,
        };
        r.read_to_end(&mut out).unwrap();
        assert_eq!(out.len(), 10);
        let mut r = Limited {
            inner: &[1u8; 11][..],
            left: 10,
            limit: 10,
        };
        let e = r.read_to_end(&mut Vec::new()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::FileTooLarge);
        // Files that say they are empty (/proc) are still read whole.
        if Path::new("/proc/self/status").exists() {
            assert!(!read_file(Path::new("/proc/self/status"))
                .unwrap()
                .is_empty());
        }
    }

    #[test]
    fn temporary_files_are_registered_while_they_exist() {
        // Not `remove_temporary_files` itself: it would take the files of
        // tests writing at the same time (tests/cli/paths.rs sends the
        // signals to the binary).
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("out");
        let registered = |dir: &Path| {
            let dir = std::path::absolute(dir).unwrap();
            lock_temporary_files()
                .iter()
                .filter(|t| t.starts_with(&dir))
                .count()
        };
        write_atomic_with(&p, Replace::Allow, |w| {
            w.write_all(b"partial")?;
            assert_eq!(leftovers(d.path()).len(), 1);
            assert_eq!(registered(d.path()), 1);
            Ok(())
        })
        .unwrap();
        assert_eq!(registered(d.path()), 0);
        assert!(leftovers(d.path()).is_empty());
    }

    #[test]
    fn io_errors_in_plain_words() {
        let e = io::Error::from(io::ErrorKind::NotFound);
        assert_eq!(io_message(&e), "no such file or directory");
        let e = io::Error::new(io::ErrorKind::PermissionDenied, "the file is read-only");
        assert_eq!(io_message(&e), "the file is read-only");
        // A message of our own is kept, also for a missing file.
        let e = io::Error::new(
            io::ErrorKind::NotFound,
            "cannot create a temporary file in /x",
        );
        assert_eq!(io_message(&e), "cannot create a temporary file in /x");
    }

    #[test]
    fn tidy_paths() {
        assert_eq!(tidy_path("./m/config.pbtxt"), "m/config.pbtxt");
        assert_eq!(tidy_path("././m/config.pbtxt"), "m/config.pbtxt");
        assert_eq!(tidy_path("../m/config.pbtxt"), "../m/config.pbtxt");
        assert_eq!(tidy_path("<stdin>"), "<stdin>");
        assert_eq!(tidy_path("./"), "./");
    }
}
