//! Model-repository discovery: the model directories Triton finds in a
//! repository, as it polls one.

pub mod versions;

use crate::files::dir_name_of;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// One model directory found on disk.
#[derive(Debug, Clone)]
pub struct ModelEntry {
    /// The directory name (Triton's model name when the config has none).
    pub name: String,
    pub dir: PathBuf,
    /// `<dir>/config.pbtxt`, shown in reports.
    pub config_path: PathBuf,
    /// The directory being processed (the repository or model directory
    /// named on the command line): the model's files are read only inside
    /// it (`files::read_in`). `None` for a config file named on the
    /// command line, which is read wherever it leads.
    pub root: Option<PathBuf>,
}

/// Whether `path` is a model directory rather than a repository: it holds
/// a `config.pbtxt`, or (a model relying on auto-complete) it holds no
/// config but every sub-directory is named like a version (`1`, `2`, ...).
/// Triton itself would take such sub-directories as models named `1`...,
/// which is almost never what a user pointing at one model means.
pub fn is_model_dir(path: &Path) -> bool {
    // Any config.pbtxt counts, also one that cannot be read (a FIFO, a
    // dangling link): reading it reports why.
    if std::fs::symlink_metadata(path.join("config.pbtxt")).is_ok_and(|m| !m.is_dir()) {
        return true;
    }
    let subdirs = visible_subdirs(path).unwrap_or_default();
    !subdirs.is_empty()
        && subdirs
            .iter()
            .all(|n| n.to_str().and_then(versions::version_of).is_some())
}

/// Names of the visible sub-directories, as the file system spells them
/// (a name that is not UTF-8 is kept as it is, so the directory can be
/// opened; only its display is lossy).
fn visible_subdirs(path: &Path) -> std::io::Result<Vec<OsString>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(path)? {
        let e = e?;
        let name = e.file_name();
        if name.as_encoded_bytes().starts_with(b".") || !e.path().is_dir() {
            continue;
        }
        out.push(name);
    }
    out.sort();
    Ok(out)
}

/// Models under `path`: the directory itself when it is a model directory
/// (see [`is_model_dir`]), else each of its sub-directories, as Triton
/// polls a repository (files are ignored). Hidden directories are skipped
/// here; [`hidden_dirs`] lists them.
pub fn discover(path: &Path) -> std::io::Result<Vec<ModelEntry>> {
    if is_model_dir(path) {
        let name = dir_name_of(path).unwrap_or_default();
        return Ok(vec![ModelEntry::new(path.to_path_buf(), name).within(path)]);
    }
    Ok(visible_subdirs(path)?
        .into_iter()
        .map(|name| {
            ModelEntry::new(path.join(&name), name.to_string_lossy().into_owned()).within(path)
        })
        .collect())
}

/// Hidden sub-directories of a repository (none for a model directory).
/// Triton would try to load each of them as a model.
pub fn hidden_dirs(path: &Path) -> Vec<PathBuf> {
    if is_model_dir(path) {
        return Vec::new();
    }
    let mut out: Vec<PathBuf> = std::fs::read_dir(path)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with('.') && e.path().is_dir())
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

impl ModelEntry {
    /// The model in directory `dir`, named `name`; its files are read only
    /// inside `dir` until [`ModelEntry::within`] says otherwise.
    pub fn new(dir: PathBuf, name: String) -> ModelEntry {
        ModelEntry {
            config_path: dir.join("config.pbtxt"),
            name,
            root: Some(dir.clone()),
            dir,
        }
    }

    /// The same model, read inside `root` (the repository being processed).
    pub fn within(mut self, root: &Path) -> ModelEntry {
        self.root = Some(root.to_path_buf());
        self
    }

    /// Reads one of the model's files under the rules of `files` (inside
    /// [`ModelEntry::root`]).
    pub fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        match &self.root {
            Some(root) => crate::files::read_in(path, root),
            None => crate::files::read_file(path),
        }
    }
}
