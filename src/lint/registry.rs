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

use crate::diagnostics::Rule;
use std::collections::HashMap;
use std::sync::OnceLock;

/// Every rule set, each declared next to the code that raises it.
pub const SETS: &[&[Rule]] = &[
    crate::pbtxt::RULES,
    crate::schema::RULES,
    super::rules::model::RULES,
    super::rules::io::RULES,
    super::rules::instance::RULES,
    super::rules::scheduler::RULES,
    super::rules::ensemble::RULES,
    super::rules::repository::RULES,
    super::rules::stateful::RULES,
    super::rules::warmup::RULES,
    super::rules::hints::RULES,
    super::rules::suppress::RULES,
    super::rules::bls::RULES,
];

/// The rule with `code`, for the [`rule!`] macro: evaluated at compile
/// time, so an unknown code does not compile.
pub const fn lookup(code: &str) -> &'static Rule {
    let mut i = 0;
    while i < SETS.len() {
        if let Some(r) = crate::diagnostics::find_rule_in(SETS[i], code) {
            return r;
        }
        i += 1;
    }
    panic!("unknown rule code: every code must be declared in a rule set of `lint::registry::SETS`")
}

/// `rule!("E0101")`: the rule with that code, checked by the compiler.
///
/// ```
/// let rule = tritonctl::rule!("E0101");
/// assert_eq!(rule.name, "unknown-field");
/// ```
///
/// A code that no rule set declares does not compile:
///
/// ```compile_fail
/// let rule = tritonctl::rule!("E0199");
/// ```
#[macro_export]
macro_rules! rule {
    ($code:literal) => {{
        const RULE: &'static $crate::diagnostics::Rule = $crate::lint::registry::lookup($code);
        RULE
    }};
}
pub use crate::rule;

/// Every rule, in code order.
pub fn all() -> &'static [Rule] {
    static ALL: OnceLock<Vec<Rule>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut v: Vec<Rule> = SETS.iter().flat_map(|s| s.iter()).copied().collect();
        v.sort_by_key(|r| r.code);
        v
    })
}

/// Looks a rule up by its exact code or name.
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

/// Resolves a rule code or name as a user writes it (`--allow e0101`,
/// `[rules]` entries, suppressions): codes in any case.
pub fn find_loose(code_or_name: &str) -> Option<&'static Rule> {
    find(code_or_name)
        .or_else(|| find(&code_or_name.to_ascii_uppercase()))
        .or_else(|| find(&code_or_name.to_ascii_lowercase()))
}

/// "unknown rule 'X'" with suggestions from the registry.
pub fn unknown_rule_message(what: &str, code: &str) -> String {
    let names = all().iter().flat_map(|r| [r.code, r.name]);
    let near = crate::text::suggestions(code, names);
    let mut m = format!("{what} '{code}' is not a known rule code or name");
    if !near.is_empty() {
        let list: Vec<String> = near.iter().map(|s| format!("'{s}'")).collect();
        m.push_str(&format!("; did you mean {}?", list.join(" or ")));
    }
    m.push_str(" (`tritonctl explain --all` lists the rules)");
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostics::Severity;

    #[test]
    fn rules_are_found_in_any_case() {
        assert_eq!(find_loose("e0101").map(|r| r.code), Some("E0101"));
        assert_eq!(find_loose("Unknown-Field").map(|r| r.code), Some("E0101"));
        assert!(find_loose("E9999").is_none());
        assert_eq!(rule!("E0401").code, "E0401");
    }

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
