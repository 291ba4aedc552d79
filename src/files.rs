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

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

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
    let target = resolve_links(path)?;
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
                    io_message(&e)
                ),
            )
        })?;
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
        io::ErrorKind::NotFound => "no such file or directory".into(),
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
        let ok = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            let e = write_atomic(&fifo, b"y", Replace::Allow).unwrap_err();
            assert!(e.to_string().contains("not a regular file"), "{e}");
            assert!(!fs::metadata(&fifo).unwrap().is_file());
        }
        assert!(leftovers(d.path()).is_empty());
    }

    #[test]
    fn io_errors_in_plain_words() {
        let e = io::Error::from(io::ErrorKind::NotFound);
        assert_eq!(io_message(&e), "no such file or directory");
        let e = io::Error::new(io::ErrorKind::PermissionDenied, "the file is read-only");
        assert_eq!(io_message(&e), "the file is read-only");
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
