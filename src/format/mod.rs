//! Formatting configs in the canonical layout of `crate::pbtxt::printer`,
//! checked before anything is written: the printed text is parsed again
//! and must hold exactly the same fields and values as the input
//! (schema-free, so unknown fields are covered too) and bind to an equal
//! ModelConfig message. `tritonctl fmt` and the fuzz targets use it.

mod diff;
pub mod edit;

pub use diff::unified_diff;

use crate::diagnostics::Diagnostic;
use crate::pbtxt::{self, printer};
use crate::schema;

/// Why a text could not be formatted.
#[derive(Debug)]
pub enum FormatError {
    /// The text does not parse.
    Syntax(Box<Diagnostic>),
    /// The printed text would not hold the same document (a bug).
    Internal(String),
}

/// Formats `src` and checks that the result holds the same document (see
/// the module documentation).
pub fn format_text(src: &str) -> Result<String, FormatError> {
    let doc = pbtxt::parse(src).map_err(FormatError::Syntax)?;
    let out = printer::print_document(src, &doc);
    let again = pbtxt::parse(&out).map_err(|d| {
        FormatError::Internal(format!("the formatted text does not parse: {}", d.message))
    })?;
    if !printer::same_tree(src, &doc, &out, &again) {
        return Err(FormatError::Internal(
            "the formatted text holds different fields or values".into(),
        ));
    }
    let desc = schema::model_config();
    let (before, _) = schema::bind::bind(src, &doc, &desc);
    let (after, _) = schema::bind::bind(&out, &again, &desc);
    if !crate::convert::messages_equal(&before, &after) {
        return Err(FormatError::Internal(
            "the formatted text binds to a different ModelConfig".into(),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_text_checks_and_reports() {
        assert_eq!(format_text("name:'m'").unwrap(), "name: \"m\"\n");
        assert!(matches!(
            format_text("name 'm'"),
            Err(FormatError::Syntax(_))
        ));
        // Unknown fields are formatted like the others.
        assert_eq!(format_text("foo <bar: 1>").unwrap(), "foo {\n  bar: 1\n}\n");
    }
}
