//! `tritonctl.toml`: project settings for `validate`.
//!
//! ```toml
//! default-platform = "onnxruntime_onnx"   # or `platform`
//! exclude = ["experimental/**", "legacy_*"]
//!
//! [rules]
//! W0001 = "error"              # codes or names; error|warning|note|off
//! unknown-field = "warning"
//! ```
//!
//! The file is found by walking up from each validated path; the walk stops
//! at the directory holding `.git` (the top of the project) or at the
//! filesystem root.

use crate::diagnostics::Severity;
use crate::text::LineIndex;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use toml::Spanned;

/// The file name looked for.
pub const FILE_NAME: &str = "tritonctl.toml";

/// What a `[rules]` entry sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// The finding is reported with this severity.
    Severity(Severity),
    /// The finding is dropped.
    Off,
}

/// A loaded settings file.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// The file it was read from.
    pub path: PathBuf,
    /// The directory exclude patterns are relative to (the file's own).
    pub root: PathBuf,
    /// Severity overrides by rule code, in file order.
    pub rules: Vec<(&'static str, Level)>,
    /// Glob patterns of paths skipped when walking a repository.
    pub exclude: Vec<String>,
    /// `exclude`, compiled (same order).
    excludes: Vec<Exclude>,
    /// Platform assumed when a config names neither platform nor backend
    /// (like `--platform-default`, which wins over it).
    pub default_platform: Option<String>,
}

/// A settings file that cannot be used (exit code 2).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{path}:{line}:{column}: {message}")]
pub struct SettingsError {
    pub path: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawSettings {
    #[serde(default)]
    rules: BTreeMap<Spanned<String>, Spanned<String>>,
    #[serde(default)]
    exclude: Vec<Spanned<String>>,
    platform: Option<Spanned<String>>,
    default_platform: Option<Spanned<String>>,
}

impl Settings {
    /// Reads and checks a settings file.
    pub fn load(path: &Path) -> Result<Settings, SettingsError> {
        let text = crate::files::read_file_to_string(path).map_err(|e| SettingsError {
            path: shown_path(path),
            line: 1,
            column: 1,
            message: format!("cannot read: {}", crate::files::io_message(&e)),
        })?;
        Settings::parse(&text, path)
    }

    /// Parses settings text read from `path`.
    pub fn parse(text: &str, path: &Path) -> Result<Settings, SettingsError> {
        let index = LineIndex::new(text);
        let shown = shown_path(path);
        let err = |offset: usize, message: String| {
            let lc = index.line_col(text, offset.min(text.len()));
            SettingsError {
                path: shown.clone(),
                line: lc.line,
                column: lc.column,
                message,
            }
        };
        let raw: RawSettings = toml::from_str(text).map_err(|e| {
            let at = e.span().map(|s| s.start).unwrap_or(0);
            err(at, e.message().trim().to_string())
        })?;
        let mut rules = Vec::new();
        for (key, value) in &raw.rules {
            let Some(rule) = crate::lint::registry::find_loose(key.get_ref()) else {
                return Err(err(
                    key.span().start,
                    crate::lint::registry::unknown_rule_message("[rules] entry", key.get_ref()),
                ));
            };
            let level = match value.get_ref().to_ascii_lowercase().as_str() {
                "error" => Level::Severity(Severity::Error),
                "warning" | "warn" => Level::Severity(Severity::Warning),
                "note" | "info" => Level::Severity(Severity::Note),
                "off" | "ignore" | "allow" => Level::Off,
                other => {
                    return Err(err(
                        value.span().start,
                        format!(
                            "'{other}' is not a level for {}: use \"error\", \"warning\", \"note\" or \"off\"",
                            rule.code
                        ),
                    ))
                }
            };
            rules.push((rule.code, level));
        }
        rules.sort_by_key(|(code, _)| *code);
        let platform = match (raw.platform, raw.default_platform) {
            (Some(a), Some(_)) => {
                return Err(err(
                    a.span().start,
                    "give `platform` or `default-platform`, not both".into(),
                ))
            }
            (a, b) => a.or(b),
        };
        if let Some(p) = &platform {
            if p.get_ref().trim().is_empty() {
                return Err(err(p.span().start, "the platform is empty".into()));
            }
        }
        let mut excludes = Vec::new();
        for g in &raw.exclude {
            if g.get_ref().trim().is_empty() {
                return Err(err(g.span().start, "an exclude pattern is empty".into()));
            }
            excludes.push(Exclude::new(g.get_ref()).map_err(|e| err(g.span().start, e))?);
        }
        Ok(Settings {
            path: path.to_path_buf(),
            root: path
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| PathBuf::from(".")),
            rules,
            exclude: raw.exclude.into_iter().map(Spanned::into_inner).collect(),
            excludes,
            default_platform: platform.map(Spanned::into_inner),
        })
    }

    /// The level set for `code`, if any.
    pub fn level(&self, code: &str) -> Option<Level> {
        self.rules.iter().find(|(c, _)| *c == code).map(|(_, l)| *l)
    }

    /// Whether `path` (a model directory or file met while walking) matches
    /// an exclude pattern (see [`Exclude`]). A match excludes everything
    /// below.
    ///
    /// Only components below `walked` (the directory named on the command
    /// line) are matched: a path given explicitly is never excluded.
    pub fn excludes(&self, path: &Path, walked: &Path) -> bool {
        if self.excludes.is_empty() {
            return false;
        }
        let Some(rel) = relative_to(path, &self.root) else {
            return false;
        };
        let skip = relative_to(walked, &self.root).map_or(0, |w| w.len());
        if rel.len() <= skip {
            return false;
        }
        self.excludes.iter().any(|e| e.matches(&rel, skip))
    }
}

/// One `exclude` pattern, a glob (globset's syntax): `*` and `?` match
/// within one path component, `**` any number of components, `[a-z]` one
/// character of a class, `{a,b}` either alternative. One without `/`
/// matches any single component; one with `/` the path (or a leading part
/// of it) relative to the settings file's directory.
#[derive(Debug, Clone)]
struct Exclude {
    /// Matched against the path's leading parts, or against each component
    /// for a pattern without `/`.
    glob: globset::GlobMatcher,
    /// For `dir/**`, `dir` itself too.
    dir: Option<globset::GlobMatcher>,
    per_component: bool,
}

impl Exclude {
    /// The compiled pattern, or why it is not a glob (naming it).
    fn new(pattern: &str) -> Result<Exclude, String> {
        let pattern = pattern
            .trim()
            .trim_start_matches("./")
            .trim_end_matches('/');
        let per_component = !pattern.contains('/');
        let pattern = pattern.trim_start_matches('/');
        let compile = |p: &str| {
            globset::GlobBuilder::new(p)
                .literal_separator(true)
                .build()
                .map(|g| g.compile_matcher())
                .map_err(|e| {
                    format!(
                        "exclude pattern '{pattern}' is not a valid glob: {}",
                        e.kind()
                    )
                })
        };
        Ok(Exclude {
            glob: compile(pattern)?,
            dir: match pattern.strip_suffix("/**") {
                Some(d) if !d.is_empty() => Some(compile(d)?),
                _ => None,
            },
            per_component,
        })
    }

    /// Whether the path of components `parts` matches, looking only at the
    /// components after the first `skip`.
    fn matches(&self, parts: &[String], skip: usize) -> bool {
        if self.per_component {
            return parts[skip..].iter().any(|p| self.glob.is_match(p));
        }
        (skip + 1..=parts.len()).any(|n| {
            let prefix = parts[..n].join("/");
            self.glob.is_match(&prefix) || self.dir.as_ref().is_some_and(|d| d.is_match(&prefix))
        })
    }
}

/// `path` relative to the current directory when it lies below it.
fn shown_path(path: &Path) -> String {
    std::env::current_dir()
        .ok()
        .and_then(|cwd| path.strip_prefix(cwd).ok())
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// `path`'s components below `root`, both made absolute.
fn relative_to(path: &Path, root: &Path) -> Option<Vec<String>> {
    let abs = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| absolute(p));
    let path = abs(path);
    let root = abs(root);
    let rel = path.strip_prefix(&root).ok()?;
    Some(
        rel.components()
            .filter_map(|c| match c {
                Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
                _ => None,
            })
            .collect(),
    )
}

fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(p)
    }
}

/// The settings file for `path`: `tritonctl.toml` in its directory (its
/// parent, for a file) or the nearest ancestor, stopping after the
/// directory that holds `.git` or at the root.
pub fn discover(path: &Path) -> Option<PathBuf> {
    let start = if path.is_dir() {
        path.to_path_buf()
    } else {
        path.parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."))
    };
    let start = std::fs::canonicalize(&start).unwrap_or_else(|_| absolute(&start));
    for dir in start.ancestors() {
        let candidate = dir.join(FILE_NAME);
        if candidate.is_file() {
            return Some(candidate);
        }
        if dir.join(".git").exists() {
            return None;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exclude(pattern: &str, path: &str) -> bool {
        let parts: Vec<String> = path.split('/').map(str::to_string).collect();
        Exclude::new(pattern).unwrap().matches(&parts, 0)
    }

    #[test]
    fn wildcards() {
        assert!(exclude("legacy_*", "models/legacy_bert"));
        assert!(!exclude("legacy_*", "models/bert"));
        assert!(exclude("m?", "m1"));
        assert!(exclude("a/**", "a"));
        assert!(exclude("a/**", "a/b/c"));
        assert!(exclude("**/b", "a/x/b"));
        assert!(!exclude("a/*", "b/c"));
        assert!(!exclude("a/*", "ab"));
        assert!(exclude("./a/*/", "a/c"));
        assert!(exclude("[mn]odel_{x,y}", "node/model_y"));
    }

    #[test]
    fn alternation_and_classes_alone() {
        for path in ["a", "b", "models/a", "models/b/1"] {
            assert!(exclude("{a,b}", path), "{path}");
        }
        assert!(!exclude("{a,b}", "models/ab"));
        assert!(exclude("[c]", "models/c"));
        assert!(!exclude("[c]", "models/cc"));
        assert!(!exclude("[c]", "models/[c]"));
    }

    /// Regression (docs/hostile.md): invalid globs were accepted silently (and matched
    /// nothing); they are refused, naming the pattern, the reason and
    /// where it is.
    #[test]
    fn invalid_exclude_globs_are_refused_with_their_reason() {
        for (pattern, reason) in [
            ("[z-a]", "invalid range"),
            ("{a,b", "unclosed alternate group"),
            ("models/[abc", "unclosed character class"),
        ] {
            let text = format!("platform = \"x\"\nexclude = [\"ok\", \"{pattern}\"]\n");
            let e = Settings::parse(&text, Path::new("t.toml")).unwrap_err();
            assert!(
                e.message.starts_with(&format!(
                    "exclude pattern '{pattern}' is not a valid glob: "
                )) && e.message.contains(reason),
                "{pattern}: {}",
                e.message
            );
            assert_eq!((e.line, e.column), (2, 18), "{pattern}");
        }
    }

    #[test]
    fn parses_rules_and_reports_positions() {
        let s = Settings::parse(
            "default-platform = \"onnxruntime_onnx\"\n[rules]\nunknown-field = \"warning\"\nW0001 = \"off\"\n",
            Path::new("t.toml"),
        )
        .unwrap();
        assert_eq!(s.level("E0101"), Some(Level::Severity(Severity::Warning)));
        assert_eq!(s.level("W0001"), Some(Level::Off));
        assert_eq!(s.default_platform.as_deref(), Some("onnxruntime_onnx"));

        let e = Settings::parse("[rules]\nE0101 = \"loud\"\n", Path::new("t.toml")).unwrap_err();
        assert_eq!((e.line, e.column), (2, 9));
        let e = Settings::parse("[rules]\nE9999 = \"off\"\n", Path::new("t.toml")).unwrap_err();
        assert_eq!((e.line, e.column), (2, 1));
        let e = Settings::parse(
            "platform = \"x\"\nexclude = [\"a\", 3]\n",
            Path::new("t.toml"),
        )
        .unwrap_err();
        assert_eq!(e.line, 2);
        let e =
            Settings::parse("platform = \"x\"\nrules = 1 2\n", Path::new("t.toml")).unwrap_err();
        assert_eq!(e.line, 2);
        let e = Settings::parse("\nplatfrom = \"x\"\n", Path::new("t.toml")).unwrap_err();
        assert_eq!((e.line, e.column), (2, 1));
    }
}
