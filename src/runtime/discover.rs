//! The ONNX Runtime library inside Python environments: the
//! `onnxruntime` package (`pip install onnxruntime`, or `tritonctl[run]`,
//! which depends on it) keeps it in `<site-packages>/onnxruntime/capi/`.
//!
//! A prefix is the root of a Python environment (a virtual environment,
//! a conda environment, `~/.local`, `/usr/local`). Its site-packages
//! directories are, in the order they are searched:
//! - `<prefix>/lib/python3.<minor>/site-packages`, then `dist-packages`
//!   (Debian's pip), for each `python3.<minor>` directory, the highest
//!   minor version first (free-threaded `python3.<minor>t` after the
//!   plain one of the same minor);
//! - `<prefix>/Lib/site-packages` (Windows).
//!
//! The search is bounded: it lists one directory (`<prefix>/lib`, at most
//! [`MAX_LIB_ENTRIES`] entries) and opens a fixed number of paths per
//! python version; it never walks a tree.
//!
//! The wheel (`pip install tritonctl`) installs the binary in
//! `<prefix>/bin` (`<prefix>\Scripts` on Windows): [`executable_prefix`]
//! goes from the running executable back to its prefix, so that
//! `pip install 'tritonctl[run]'` needs no environment variable.

use std::ffi::OsStr;
use std::fmt;
use std::path::{Path, PathBuf};

use super::library_in;

/// At most this many entries of `<prefix>/lib` are looked at (a system
/// `lib` directory has hundreds; the python ones are among them).
pub const MAX_LIB_ENTRIES: usize = 10_000;

/// How the ONNX Runtime library was found: the rule that found it, in
/// the order of `crate::runtime`'s search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LibrarySource {
    /// `ORT_DYLIB_PATH` names it, or the directory holding it.
    OrtDylibPath,
    /// The `onnxruntime` package of the Python environment this
    /// executable is installed in (`prefix` holds `bin/tritonctl`).
    /// (Prefixes are boxed to keep the errors that carry an
    /// `OrtLibrary` small.)
    Executable { prefix: Box<Path> },
    /// The `onnxruntime` package of the active virtual environment
    /// (`VIRTUAL_ENV`).
    VirtualEnv { prefix: Box<Path> },
    /// The `onnxruntime` package of the active conda environment
    /// (`CONDA_PREFIX`).
    CondaPrefix { prefix: Box<Path> },
    /// The `onnxruntime` package `python3` (from `PATH`) imports.
    Python3,
}

impl LibrarySource {
    /// The rule's stable name: `doctor --format json`'s
    /// `onnxruntime.source` (docs/spec/cli.md).
    pub fn code(&self) -> &'static str {
        match self {
            LibrarySource::OrtDylibPath => "ORT_DYLIB_PATH",
            LibrarySource::Executable { .. } => "executable_prefix",
            LibrarySource::VirtualEnv { .. } => "VIRTUAL_ENV",
            LibrarySource::CondaPrefix { .. } => "CONDA_PREFIX",
            LibrarySource::Python3 => "python3",
        }
    }
}

impl fmt::Display for LibrarySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LibrarySource::OrtDylibPath => write!(f, "ORT_DYLIB_PATH"),
            LibrarySource::Executable { prefix } => write!(
                f,
                "the onnxruntime package of the Python environment tritonctl is installed in ({})",
                prefix.display()
            ),
            LibrarySource::VirtualEnv { prefix } => write!(
                f,
                "the onnxruntime package of the active virtual environment (VIRTUAL_ENV={})",
                prefix.display()
            ),
            LibrarySource::CondaPrefix { prefix } => write!(
                f,
                "the onnxruntime package of the active conda environment (CONDA_PREFIX={})",
                prefix.display()
            ),
            LibrarySource::Python3 => write!(f, "the onnxruntime package of python3"),
        }
    }
}

/// The prefix of the Python environment an executable is installed in:
/// the parent of its `bin` (or `Scripts`) directory; `None` for an
/// executable elsewhere (`target/release/tritonctl`).
pub fn executable_prefix(exe: &Path) -> Option<PathBuf> {
    let dir = exe.parent()?;
    let name = dir.file_name()?.to_str()?;
    if name == "bin" || name.eq_ignore_ascii_case("scripts") {
        dir.parent().map(Path::to_path_buf)
    } else {
        None
    }
}

/// `(minor, free-threaded)` of a `python3.<minor>` or `python3.<minor>t`
/// directory name.
fn python_version(name: &str) -> Option<(u32, bool)> {
    let rest = name.strip_prefix("python3.")?;
    let (digits, threaded) = match rest.strip_suffix('t') {
        Some(d) => (d, true),
        None => (rest, false),
    };
    if digits.is_empty() || digits.len() > 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((digits.parse().ok()?, threaded))
}

/// The site-packages directories of `prefix`, in search order (see the
/// module docs); they need not exist.
pub fn site_packages(prefix: &Path) -> Vec<PathBuf> {
    let lib = prefix.join("lib");
    let mut versions: Vec<((std::cmp::Reverse<u32>, bool), PathBuf)> = std::fs::read_dir(&lib)
        .into_iter()
        .flatten()
        .take(MAX_LIB_ENTRIES)
        .flatten()
        .filter_map(|e| {
            let (minor, threaded) = python_version(e.file_name().to_str()?)?;
            Some(((std::cmp::Reverse(minor), threaded), e.path()))
        })
        .collect();
    versions.sort();
    let mut out = Vec::with_capacity(versions.len() * 2 + 1);
    for (_, dir) in versions {
        out.push(dir.join("site-packages"));
        out.push(dir.join("dist-packages"));
    }
    out.push(prefix.join("Lib").join("site-packages"));
    out
}

/// The ONNX Runtime library of the `onnxruntime` package installed in
/// `prefix`: the first site-packages directory (in search order) whose
/// package holds one.
pub fn library_in_prefix(prefix: &Path) -> Option<PathBuf> {
    site_packages(prefix)
        .iter()
        .find_map(|sp| library_in(&sp.join("onnxruntime").join("capi")))
}

/// Searches the Python environments, in order: the running executable's
/// own (`exe`), `VIRTUAL_ENV`, `CONDA_PREFIX` (a prefix already searched
/// is not searched again). Without a library, the prefixes searched, for
/// the error message.
pub fn in_environments(
    exe: Option<&Path>,
    virtual_env: Option<&OsStr>,
    conda_prefix: Option<&OsStr>,
) -> Result<(PathBuf, LibrarySource), Vec<LibrarySource>> {
    let nonempty = |v: Option<&OsStr>| {
        v.filter(|v| !v.is_empty())
            .map(|v| PathBuf::from(v).into_boxed_path())
    };
    let candidates = [
        exe.and_then(executable_prefix)
            .map(|prefix| LibrarySource::Executable {
                prefix: prefix.into_boxed_path(),
            }),
        nonempty(virtual_env).map(|prefix| LibrarySource::VirtualEnv { prefix }),
        nonempty(conda_prefix).map(|prefix| LibrarySource::CondaPrefix { prefix }),
    ];
    let mut searched: Vec<LibrarySource> = Vec::new();
    for source in candidates.into_iter().flatten() {
        let prefix = prefix_of(&source);
        if searched.iter().any(|s| prefix_of(s) == prefix) {
            continue;
        }
        if let Some(lib) = library_in_prefix(prefix) {
            return Ok((lib, source));
        }
        searched.push(source);
    }
    Err(searched)
}

fn prefix_of(source: &LibrarySource) -> &Path {
    match source {
        LibrarySource::Executable { prefix }
        | LibrarySource::VirtualEnv { prefix }
        | LibrarySource::CondaPrefix { prefix } => prefix,
        LibrarySource::OrtDylibPath | LibrarySource::Python3 => Path::new(""),
    }
}

/// The prefixes searched, for an error message: `/venv (tritonctl's
/// environment), /other (VIRTUAL_ENV)`.
pub fn searched_text(searched: &[LibrarySource]) -> String {
    searched
        .iter()
        .map(|s| {
            let why = match s {
                LibrarySource::Executable { .. } => "tritonctl's environment",
                other => other.code(),
            };
            format!("{} ({why})", prefix_of(s).display())
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::env::consts::{DLL_PREFIX, DLL_SUFFIX};

    /// A library file name of this platform's kind, with a version.
    fn lib_name(version: &str) -> String {
        if DLL_SUFFIX == ".dylib" {
            format!("{DLL_PREFIX}onnxruntime.{version}{DLL_SUFFIX}")
        } else if DLL_SUFFIX == ".dll" {
            format!("{DLL_PREFIX}onnxruntime{DLL_SUFFIX}")
        } else {
            format!("{DLL_PREFIX}onnxruntime{DLL_SUFFIX}.{version}")
        }
    }

    /// Puts a fake library into `<prefix>/<site>/onnxruntime/capi/`.
    fn install(prefix: &Path, site: &str, version: &str) -> PathBuf {
        let capi = prefix.join(site).join("onnxruntime").join("capi");
        std::fs::create_dir_all(&capi).unwrap();
        let lib = capi.join(lib_name(version));
        std::fs::write(&lib, b"").unwrap();
        lib
    }

    /// `<prefix>/bin/tritonctl`, as the wheel installs it.
    fn exe_in(prefix: &Path) -> PathBuf {
        let bin = prefix.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let exe = bin.join("tritonctl");
        std::fs::write(&exe, b"").unwrap();
        exe
    }

    #[test]
    fn the_prefix_is_above_bin_or_scripts() {
        assert_eq!(
            executable_prefix(Path::new("/venv/bin/tritonctl")),
            Some(PathBuf::from("/venv"))
        );
        assert_eq!(
            executable_prefix(Path::new("/venv/Scripts/tritonctl.exe")),
            Some(PathBuf::from("/venv"))
        );
        assert_eq!(
            executable_prefix(Path::new("/repo/target/release/tritonctl")),
            None
        );
        assert_eq!(executable_prefix(Path::new("tritonctl")), None);
    }

    #[test]
    fn python_version_directories() {
        assert_eq!(python_version("python3.11"), Some((11, false)));
        assert_eq!(python_version("python3.13t"), Some((13, true)));
        assert_eq!(python_version("python3.9"), Some((9, false)));
        for name in [
            "python3",
            "python3.",
            "python3.x",
            "python2.7",
            "pypy3.10",
            "python3.1a",
        ] {
            assert_eq!(python_version(name), None, "{name}");
        }
    }

    #[test]
    fn a_wheel_install_is_found_from_the_executable() {
        let d = tempfile::tempdir().unwrap();
        let exe = exe_in(d.path());
        let lib = install(d.path(), "lib/python3.11/site-packages", "1.31.1");
        let (found, source) = in_environments(Some(exe.as_path()), None, None).unwrap();
        assert_eq!(found, lib);
        assert_eq!(
            source,
            LibrarySource::Executable {
                prefix: d.path().into()
            }
        );
        assert_eq!(source.code(), "executable_prefix");
        assert!(source.to_string().contains(&d.path().display().to_string()));
    }

    #[test]
    fn the_highest_python_version_wins_numerically() {
        let d = tempfile::tempdir().unwrap();
        let exe = exe_in(d.path());
        install(d.path(), "lib/python3.9/site-packages", "1.31.1");
        let newest = install(d.path(), "lib/python3.10/site-packages", "1.20.0");
        install(d.path(), "lib/python3.10t/site-packages", "1.31.1");
        let (found, _) = in_environments(Some(exe.as_path()), None, None).unwrap();
        // 3.10 > 3.9 (not as text), and the plain 3.10 before 3.10t,
        // whatever the library versions.
        assert_eq!(found, newest);
    }

    #[test]
    fn a_python_directory_without_the_package_is_passed_over() {
        let d = tempfile::tempdir().unwrap();
        let exe = exe_in(d.path());
        std::fs::create_dir_all(d.path().join("lib/python3.12/site-packages")).unwrap();
        let lib = install(d.path(), "lib/python3.11/dist-packages", "1.31.1");
        assert_eq!(
            in_environments(Some(exe.as_path()), None, None).unwrap().0,
            lib
        );
    }

    #[test]
    fn the_windows_layout_is_found() {
        let d = tempfile::tempdir().unwrap();
        let scripts = d.path().join("Scripts");
        std::fs::create_dir_all(&scripts).unwrap();
        let lib = install(d.path(), "Lib/site-packages", "1.31.1");
        let exe = scripts.join("tritonctl.exe");
        assert_eq!(
            in_environments(Some(exe.as_path()), None, None).unwrap().0,
            lib
        );
    }

    #[test]
    fn the_executable_comes_before_virtual_env_before_conda_prefix() {
        let own = tempfile::tempdir().unwrap();
        let venv = tempfile::tempdir().unwrap();
        let conda = tempfile::tempdir().unwrap();
        let exe = exe_in(own.path());
        let own_lib = install(own.path(), "lib/python3.11/site-packages", "1.31.1");
        let venv_lib = install(venv.path(), "lib/python3.11/site-packages", "1.31.1");
        let conda_lib = install(conda.path(), "lib/python3.11/site-packages", "1.31.1");
        let v = Some(venv.path().as_os_str());
        let c = Some(conda.path().as_os_str());
        assert_eq!(
            in_environments(Some(exe.as_path()), v, c).unwrap().0,
            own_lib
        );
        // A binary outside any environment (cargo's target directory).
        let elsewhere = own.path().join("target/release/tritonctl");
        let (found, source) = in_environments(Some(elsewhere.as_path()), v, c).unwrap();
        assert_eq!(found, venv_lib);
        assert_eq!(source.code(), "VIRTUAL_ENV");
        let (found, source) = in_environments(Some(elsewhere.as_path()), None, c).unwrap();
        assert_eq!(found, conda_lib);
        assert_eq!(source.code(), "CONDA_PREFIX");
        // Empty variables count as unset.
        let empty = Some(OsStr::new(""));
        assert_eq!(in_environments(None, empty, c).unwrap().0, conda_lib);
    }

    #[test]
    fn without_a_library_the_searched_prefixes_are_listed_once() {
        let own = tempfile::tempdir().unwrap();
        let exe = exe_in(own.path());
        // The package directory without a library counts as absent.
        std::fs::create_dir_all(
            own.path()
                .join("lib/python3.11/site-packages/onnxruntime/capi"),
        )
        .unwrap();
        let searched =
            in_environments(Some(exe.as_path()), Some(own.path().as_os_str()), None).unwrap_err();
        assert_eq!(
            searched,
            vec![LibrarySource::Executable {
                prefix: own.path().into()
            }]
        );
        let text = searched_text(&searched);
        assert!(text.contains("tritonctl's environment"), "{text}");
        assert_eq!(in_environments(None, None, None), Err(Vec::new()));
    }
}
