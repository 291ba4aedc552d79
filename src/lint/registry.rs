//! The one registry of rule codes. Every diagnostic the tool emits has a code
//! listed here, with its default severity, category and documentation.
//! Codes are stable: never renumber or reuse one.
//!
//! Code blocks: `E00xx` syntax, `E01xx` schema, `E02xx` model configuration
//! (ValidateModelConfig), `E03xx` inputs/outputs, `E04xx` instance groups,
//! `E05xx` schedulers, state and batch strategy, `E06xx` ensembles, `E07xx`
//! repository layout, names and versions, `E08xx` backend-specific (stateful
//! backend), `E09xx` warmup and model metrics; `W....` warnings beyond what
//! Triton checks; `N....` notes.

use crate::diagnostics::{Category, Severity};
use std::collections::HashMap;
use std::sync::OnceLock;

#[derive(Debug, Clone, Copy)]
pub struct Rule {
    /// Stable code, e.g. `E0101`.
    pub code: &'static str,
    /// Kebab-case name, e.g. `unknown-field`.
    pub name: &'static str,
    pub category: Category,
    pub severity: Severity,
    /// One line, shown in listings and SARIF `shortDescription`.
    pub summary: &'static str,
    /// Markdown: what the rule checks, why it matters, an example.
    pub docs: &'static str,
    /// Where Triton implements the check (file in its sources), if it does.
    pub triton_source: Option<&'static str>,
}

impl Rule {
    /// A rule for a load-time check Triton itself fails the model on.
    pub const fn semantic_error(
        code: &'static str,
        name: &'static str,
        summary: &'static str,
        docs: &'static str,
        triton_source: Option<&'static str>,
    ) -> Rule {
        Rule {
            code,
            name,
            category: Category::Semantic,
            severity: Severity::Error,
            summary,
            docs,
            triton_source,
        }
    }
}

/// Syntax and schema rules (raised by `pbtxt` and `schema::bind`).
pub const PARSE_RULES: &[Rule] = &[
    Rule {
        code: "E0001",
        name: "syntax-error",
        category: Category::Syntax,
        severity: Severity::Error,
        summary: "The text is not valid protobuf text format",
        docs: "Triton reads `config.pbtxt` with protobuf's text-format parser and refuses the model when the text does not parse (`failed to read text proto from <path>`).\n\nCommon causes: `//` comments (only `#` starts a comment), a trailing comma in a list (`dims: [1, 2,]`), a missing comma between list elements, a scalar without `:` (`max_batch_size 8`), a leading `+` on a number, a string that runs past the end of its line, a UTF-8 byte order mark, and unrendered template placeholders (`${x}`, `{{ x }}`).\n\n```\ndims: [ 1, 2, ]   # error: a list cannot end with a comma\n```",
        triton_source: Some("core src/model_config_utils.cc (ReadTextProto), protobuf text_format.cc"),
    },
    Rule {
        code: "E0002",
        name: "nesting-too-deep",
        category: Category::Syntax,
        severity: Severity::Error,
        summary: "Messages or lists are nested deeper than 100 levels",
        docs: "No ModelConfig nests more than a handful of levels, so such a file cannot be a valid configuration. tritonctl refuses it before parsing so that hostile input cannot exhaust the stack.",
        triton_source: None,
    },
    Rule {
        code: "E0101",
        name: "unknown-field",
        category: Category::Schema,
        severity: Severity::Error,
        summary: "A field that the message type does not have",
        docs: "Protobuf's parser refuses unknown field names (`Message type \"inference.ModelConfig\" has no field named \"...\"`), so Triton does not load the model. Names are case-sensitive. tritonctl suggests the closest existing field.\n\n```\nmax_batch_sise: 8   # error: did you mean 'max_batch_size'?\n```",
        triton_source: Some("protobuf text_format.cc"),
    },
    Rule {
        code: "E0102",
        name: "wrong-value-kind",
        category: Category::Schema,
        severity: Severity::Error,
        summary: "A value of the wrong kind for its field (string, number, message, list)",
        docs: "Each field takes one kind of value: strings are quoted, integers have no fraction or exponent, messages are written in braces, and only repeated fields take `[ ... ]` lists.\n\n```\nmax_batch_size: 8.0     # error: expects an integer\nname: my_model          # error: expects a string\n```",
        triton_source: Some("protobuf text_format.cc"),
    },
    Rule {
        code: "E0103",
        name: "unknown-enum-value",
        category: Category::Schema,
        severity: Severity::Error,
        summary: "An enum value name that the enum does not define",
        docs: "Enum values are written as bare, case-sensitive names (`TYPE_FP32`, `KIND_GPU`). Quoted names and names from other tools (`TYPE_BYTES` is `TYPE_STRING` in Triton) are refused by protobuf's parser. A number is accepted (proto3 enums are open) but is rarely what you mean.",
        triton_source: Some("protobuf text_format.cc"),
    },
    Rule {
        code: "E0104",
        name: "integer-out-of-range",
        category: Category::Schema,
        severity: Severity::Error,
        summary: "An integer outside the range of its field's type",
        docs: "`int32` fields take -2147483648..2147483647, unsigned fields take no minus sign, and so on. Protobuf's parser refuses values outside the range (`Integer out of range`).",
        triton_source: Some("protobuf text_format.cc"),
    },
    Rule {
        code: "E0105",
        name: "field-repeated",
        category: Category::Schema,
        severity: Severity::Error,
        summary: "A non-repeated field is given more than once",
        docs: "Protobuf's parser refuses a second value for a singular field (`Non-repeated field \"...\" is specified multiple times.`). A proto3 scalar that was given its default value (0, \"\", false) the first time does not count, exactly as protobuf behaves.",
        triton_source: Some("protobuf text_format.cc"),
    },
    Rule {
        code: "E0106",
        name: "oneof-conflict",
        category: Category::Schema,
        severity: Severity::Error,
        summary: "Two members of one oneof are set",
        docs: "Some fields exclude each other: `dynamic_batching`, `sequence_batching` and `ensemble_scheduling`; `direct` and `oldest`; `latest`, `all` and `specific`. Protobuf's parser refuses the second one.",
        triton_source: Some("protobuf text_format.cc"),
    },
    Rule {
        code: "E0107",
        name: "missing-colon",
        category: Category::Schema,
        severity: Severity::Error,
        summary: "A scalar field without ':' after its name",
        docs: "In text format only message values may omit the colon (`input { ... }`); scalars and lists of scalars need it (`dims: [ 1 ]`).",
        triton_source: Some("protobuf text_format.cc"),
    },
    Rule {
        code: "E0108",
        name: "unknown-extension",
        category: Category::Schema,
        severity: Severity::Error,
        summary: "An extension or Any field name in brackets",
        docs: "ModelConfig has no extensions and no `google.protobuf.Any` fields, so `[name]` field names are refused.",
        triton_source: Some("protobuf text_format.cc"),
    },
    Rule {
        code: "E0109",
        name: "invalid-boolean",
        category: Category::Schema,
        severity: Severity::Error,
        summary: "A boolean written in a form protobuf does not accept",
        docs: "Booleans are `true`, `false`, `True`, `False`, `t`, `f`, `1` or `0`. `TRUE`, `yes` and `on` are refused.",
        triton_source: Some("protobuf text_format.cc"),
    },
];

/// Every rule, in code order.
pub fn all() -> &'static [Rule] {
    static ALL: OnceLock<Vec<Rule>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut v: Vec<Rule> = PARSE_RULES
            .iter()
            .chain(crate::lint::rules::all_rules())
            .copied()
            .collect();
        v.sort_by_key(|r| r.code);
        v
    })
}

/// Looks a rule up by code (or by name). Unknown codes are a programming
/// error caught by the registry test, so this falls back to a generic rule.
pub fn find(code_or_name: &str) -> Option<&'static Rule> {
    static INDEX: OnceLock<HashMap<&'static str, usize>> = OnceLock::new();
    let idx = INDEX.get_or_init(|| {
        let mut m = HashMap::new();
        for (i, r) in all().iter().enumerate() {
            m.insert(r.code, i);
            m.insert(r.name, i);
        }
        m
    });
    idx.get(code_or_name).map(|&i| &all()[i])
}

pub fn rule(code: &str) -> &'static Rule {
    find(code).unwrap_or_else(|| {
        debug_assert!(false, "rule {code} is not in the registry");
        &PARSE_RULES[0]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_names_are_unique_and_documented() {
        let mut codes = std::collections::HashSet::new();
        let mut names = std::collections::HashSet::new();
        for r in all() {
            assert!(codes.insert(r.code), "duplicate code {}", r.code);
            assert!(names.insert(r.name), "duplicate name {}", r.name);
            assert!(
                !r.summary.is_empty() && !r.docs.is_empty(),
                "{} lacks docs",
                r.code
            );
            let c = r.code.as_bytes();
            assert!(
                c.len() == 5
                    && matches!(c[0], b'E' | b'W' | b'N')
                    && c[1..].iter().all(u8::is_ascii_digit),
                "bad code {}",
                r.code
            );
            let expect = match c[0] {
                b'E' => Severity::Error,
                b'W' => Severity::Warning,
                _ => Severity::Note,
            };
            assert_eq!(
                r.severity, expect,
                "{}: severity must match its letter",
                r.code
            );
        }
    }
}
