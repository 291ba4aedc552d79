//! `--format sarif`: SARIF 2.1.0 for code scanning. The driver lists every
//! rule of the catalogue it is given once (the whole registry from
//! `validate`, so `ruleIndex` is stable between runs);
//! results point at relative, forward-slash URIs under `%SRCROOT%` (the
//! current directory) with 1-based regions counted in code points.

use super::{portable_path, uri_encode, Location, RenderOptions};
use crate::diagnostics::Severity;
use crate::diagnostics::{Report, Rule};
use crate::text::{LineIndex, Span};
use serde_json::{json, Map, Value};
use std::io::{self, Write};
use std::path::Path;

const SCHEMA: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";
const SRCROOT: &str = "%SRCROOT%";

pub fn level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "note",
    }
}

pub fn render(out: &mut dyn Write, report: &Report, opts: &RenderOptions) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, &document(report, opts)).map_err(io::Error::from)?;
    writeln!(out)
}

/// The SARIF log as a JSON value.
pub fn document(report: &Report, opts: &RenderOptions) -> Value {
    let rules: Vec<&Rule> = if opts.rules.is_empty() {
        let mut used: Vec<&Rule> = report
            .files
            .iter()
            .flat_map(|f| f.diagnostics.iter().map(|d| d.rule))
            .collect();
        used.sort_by_key(|r| r.code);
        used.dedup_by_key(|r| r.code);
        used
    } else {
        opts.rules.iter().collect()
    };
    let rule_objs: Vec<Value> = rules
        .iter()
        .map(|r| {
            let mut props = Map::new();
            props.insert("category".into(), json!(r.category.as_str()));
            props.insert("tags".into(), json!([r.category.as_str()]));
            if let Some(src) = r.triton_source {
                props.insert("triton_source".into(), json!(src));
            }
            json!({
                "id": r.code,
                "name": r.name,
                "shortDescription": {"text": r.summary},
                "fullDescription": {"text": r.docs, "markdown": r.docs},
                "help": {"text": r.docs, "markdown": r.docs},
                "defaultConfiguration": {"level": level(r.severity)},
                "properties": props,
            })
        })
        .collect();

    let base = opts.base_dir.as_deref();
    let mut results = Vec::new();
    for f in &report.files {
        let index = LineIndex::new(&f.src);
        let artifact = artifact_location(&f.path, base);
        let region = |span: Span| {
            let l = Location::of(&index, &f.src, span);
            json!({
                "startLine": l.line,
                "startColumn": l.column,
                "endLine": l.end_line,
                "endColumn": l.end_column,
            })
        };
        for d in &f.diagnostics {
            let mut physical = Map::new();
            physical.insert("artifactLocation".into(), artifact.clone());
            if let Some(span) = d.span {
                physical.insert("region".into(), region(span));
            }
            let mut result = Map::new();
            result.insert("ruleId".into(), json!(d.code()));
            if let Some(i) = rules.iter().position(|r| r.code == d.code()) {
                result.insert("ruleIndex".into(), json!(i));
            }
            result.insert("level".into(), json!(level(d.severity)));
            result.insert("message".into(), json!({ "text": d.message }));
            result.insert(
                "locations".into(),
                json!([{ "physicalLocation": physical }]),
            );
            if !d.labels.is_empty() {
                let related: Vec<Value> = d
                    .labels
                    .iter()
                    .enumerate()
                    .map(|(i, l)| {
                        json!({
                            "id": i,
                            "message": {"text": l.message},
                            "physicalLocation": {
                                "artifactLocation": artifact.clone(),
                                "region": region(l.span),
                            },
                        })
                    })
                    .collect();
                result.insert("relatedLocations".into(), json!(related));
            }
            let mut props = Map::new();
            props.insert("category".into(), json!(d.category().as_str()));
            if let Some(h) = &d.help {
                props.insert("help".into(), json!(h));
            }
            if let Some(t) = &d.triton_message {
                props.insert("triton_message".into(), json!(t));
            }
            if let Some(m) = &f.model {
                props.insert("model".into(), json!(m));
            }
            result.insert("properties".into(), Value::Object(props));
            results.push(Value::Object(result));
        }
    }

    let mut run = Map::new();
    run.insert(
        "tool".into(),
        json!({"driver": {
            "name": "tritonctl",
            "semanticVersion": env!("CARGO_PKG_VERSION"),
            "version": env!("CARGO_PKG_VERSION"),
            "rules": rule_objs,
        }}),
    );
    if let Some(b) = base {
        run.insert(
            "originalUriBaseIds".into(),
            json!({ SRCROOT: {"uri": dir_uri(b)} }),
        );
    }
    run.insert("columnKind".into(), json!("unicodeCodePoints"));
    run.insert("results".into(), json!(results));
    json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [Value::Object(run)],
    })
}

fn artifact_location(path: &str, base: Option<&Path>) -> Value {
    let (p, relative) = portable_path(path, base);
    if path == "<stdin>" {
        json!({ "uri": uri_encode(path) })
    } else if relative {
        json!({"uri": uri_encode(&p), "uriBaseId": SRCROOT})
    } else {
        json!({"uri": format!("file://{}", uri_encode(&p))})
    }
}

/// `file:///abs/dir/` for a directory (absolute paths only).
fn dir_uri(dir: &Path) -> String {
    let mut s = dir.to_string_lossy().replace('\\', "/");
    if !s.starts_with('/') {
        s.insert(0, '/');
    }
    if !s.ends_with('/') {
        s.push('/');
    }
    format!("file://{}", uri_encode(&s))
}
