//! The versions of a model as Triton lists them (its `VersionsToLoad`):
//! every sub-directory whose name C++'s `stoll` reads as a number, except
//! names with leading zeros and the directories Triton reserves, then the
//! ones the version policy selects. The one reader of version directories:
//! `validate`, `autoconfig` and `run` all take versions from here.

use crate::schema::inference::model_version_policy::PolicyChoice;
use crate::schema::inference::ModelConfig;
use std::collections::BTreeSet;
use std::path::Path;

/// Why Triton ignores a sub-directory of a model directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IgnoredReason {
    /// `01`: Triton refuses leading zeros.
    LeadingZeros,
    /// `v1`: not a number as `stoll` reads it.
    NotANumber,
}

/// A sub-directory Triton ignores, with the warning it logs.
#[derive(Debug, Clone)]
pub struct IgnoredDir {
    pub name: String,
    pub reason: IgnoredReason,
    pub triton_text: String,
}

/// Sub-directories Triton skips silently when it looks for versions.
const NOT_VERSIONS: &[&str] = &["warmup", "initial_state", "configs"];

/// The version Triton reads from a sub-directory name of a model
/// directory, or `None` when it does not take the directory as a version
/// (reserved names, leading zeros, no number).
pub fn version_of(name: &str) -> Option<i64> {
    if NOT_VERSIONS.contains(&name) || (name.len() > 1 && name.starts_with('0')) {
        return None;
    }
    crate::text::stoll(name)
}

/// The version directories of a model and what its policy selects.
#[derive(Debug, Default, Clone)]
pub struct VersionScan {
    /// Numeric version directories (as Triton reads their names).
    pub existing: BTreeSet<i64>,
    /// The directory name each version was read from.
    pub dir_names: std::collections::BTreeMap<i64, String>,
    /// Directory names Triton ignores, with why and its warning.
    pub ignored: Vec<IgnoredDir>,
    /// Versions the policy selects, highest first.
    pub loaded: Vec<i64>,
    /// `specific` versions (index in the list, version) without a directory.
    pub missing_specific: Vec<(usize, i64)>,
}

impl VersionScan {
    /// The directories of the versions the policy selects, highest first,
    /// as (directory name, path under `dir`).
    pub fn loaded_dirs(&self, dir: &Path) -> Vec<(String, std::path::PathBuf)> {
        self.loaded
            .iter()
            .filter_map(|v| self.dir_names.get(v))
            .map(|name| (name.clone(), dir.join(name)))
            .collect()
    }
}

/// The sub-directories of `dir` (hidden ones included, as Triton lists
/// them), sorted by name; none when `dir` cannot be read.
pub fn subdirs(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Triton's `VersionsToLoad` on `dir` with the (normalized) `cfg`.
pub fn scan_versions(dir: &Path, cfg: &ModelConfig) -> VersionScan {
    let subdirs = subdirs(dir);
    let mut scan = VersionScan::default();
    for d in subdirs {
        if NOT_VERSIONS.contains(&d.as_str()) {
            continue;
        }
        if d.len() > 1 && d.starts_with('0') {
            let text = format!(
                "ignore version directory '{d}' which contains leading zeros in its directory name"
            );
            scan.ignored.push(IgnoredDir {
                name: d,
                reason: IgnoredReason::LeadingZeros,
                triton_text: text,
            });
            continue;
        }
        match crate::text::stoll(&d) {
            Some(v) => {
                scan.existing.insert(v);
                scan.dir_names.insert(v, d);
            }
            None => {
                let text = format!(
                    "ignore version directory '{d}' which fails to convert to integral number"
                );
                scan.ignored.push(IgnoredDir {
                    name: d,
                    reason: IgnoredReason::NotANumber,
                    triton_text: text,
                });
            }
        }
    }
    match cfg
        .version_policy
        .as_ref()
        .and_then(|p| p.policy_choice.as_ref())
    {
        Some(PolicyChoice::Specific(s)) => {
            for (i, v) in s.versions.iter().enumerate() {
                if scan.existing.contains(v) {
                    if !scan.loaded.contains(v) {
                        scan.loaded.push(*v);
                    }
                } else {
                    scan.missing_specific.push((i, *v));
                }
            }
            scan.loaded.sort_by(|a, b| b.cmp(a));
        }
        Some(PolicyChoice::Latest(l)) => {
            scan.loaded = scan
                .existing
                .iter()
                .rev()
                .take(l.num_versions as usize)
                .copied()
                .collect();
        }
        // `all`, and a policy message with no choice (Triton's else branch).
        Some(PolicyChoice::All(_)) | None if cfg.version_policy.is_some() => {
            scan.loaded = scan.existing.iter().rev().copied().collect();
        }
        // No policy at all: normalization makes it `latest { 1 }`.
        _ => {
            scan.loaded = scan
                .existing
                .iter()
                .next_back()
                .copied()
                .into_iter()
                .collect()
        }
    }
    scan
}
