//! A config file read, parsed and bound: the typed view the rules read, plus
//! the tree that maps a field path back to the bytes it came from.

pub mod normalize;
pub mod path;

use crate::diagnostics::Diagnostic;
use crate::pbtxt::{self, ast::Document};
use crate::schema::{self, inference::ModelConfig};
use crate::text::Span;
pub use path::FieldPath;
use prost_reflect::DynamicMessage;

/// One `config.pbtxt` (or standard input) after parsing and binding.
#[derive(Debug)]
pub struct ParsedConfig {
    /// The text (invalid UTF-8 bytes replaced one for one, see `text::decode_source`).
    pub src: String,
    /// The tree, when the text parsed.
    pub doc: Option<Document>,
    /// The bound message, when the text parsed (possibly partial if binding
    /// reported errors); [`parse_checked`](Self::parse_checked) drops it once
    /// the typed config is there.
    pub message: Option<DynamicMessage>,
    /// The typed config, only when parsing and binding were clean.
    pub config: Option<ModelConfig>,
    /// Syntax and schema diagnostics.
    pub diagnostics: Vec<Diagnostic>,
    /// Long repeated fields indexed for [`span`](Self::span) and its
    /// siblings (see [`path::PathCache`]).
    pub paths: path::PathCache,
}

impl ParsedConfig {
    /// Parses and binds `src` against ModelConfig.
    pub fn parse(src: String) -> ParsedConfig {
        ParsedConfig::parse_with(src, true)
    }

    /// [`parse`](Self::parse) for the checks, which read the typed config
    /// and the tree only: the bound message, several times the size of the
    /// text, is dropped as soon as the typed config is made from it.
    pub fn parse_checked(src: String) -> ParsedConfig {
        ParsedConfig::parse_with(src, false)
    }

    fn parse_with(src: String, keep_message: bool) -> ParsedConfig {
        let mut out = ParsedConfig {
            src,
            doc: None,
            message: None,
            config: None,
            diagnostics: Vec::new(),
            paths: path::PathCache::default(),
        };
        match pbtxt::parse(&out.src) {
            Err(d) => out.diagnostics.push(*d),
            Ok(doc) => {
                // A clean config binds through the static tables, with no
                // descriptor pool (its decoding dominated `validate`'s
                // start-up); anything else goes to the binder, which
                // reports the errors.
                if !keep_message {
                    if let Some(config) =
                        schema::table::encode_clean(&out.src, &doc, schema::table::model_config())
                            .and_then(|bytes| prost::Message::decode(bytes.as_slice()).ok())
                    {
                        out.config = Some(config);
                        out.doc = Some(doc);
                        return out;
                    }
                }
                if !keep_message && out.bind_spilled(&doc).is_some() {
                    out.doc = Some(doc);
                    return out;
                }
                let (msg, diags) = schema::bind::bind(&out.src, &doc, &schema::model_config());
                if diags.is_empty() {
                    // What `transcode_to` does (encode, decode as the typed
                    // message), with an encoder that is several times
                    // quicker than prost-reflect's on large configs (it
                    // sizes each nested message once instead of once per
                    // level). Anything it does not handle takes the
                    // prost-reflect path.
                    out.config = match crate::schema::wire::encode(&msg) {
                        Some(bytes) if keep_message => {
                            prost::Message::decode(bytes.as_slice()).ok()
                        }
                        Some(bytes) => {
                            drop(msg);
                            out.diagnostics = diags;
                            out.doc = Some(doc);
                            out.config = prost::Message::decode(bytes.as_slice()).ok();
                            return out;
                        }
                        None => msg.transcode_to::<ModelConfig>().ok(),
                    };
                }
                out.diagnostics = diags;
                if keep_message || out.config.is_none() {
                    out.message = Some(msg);
                }
                out.doc = Some(doc);
            }
        }
        out
    }

    /// The checks' binding (see [`schema::bind::bind_spilled`]): the
    /// repeated top-level messages go to wire format one by one, so the
    /// peak is the text, the tree and the typed config, not a bound message
    /// many times the text's size. `None` (and `self` untouched) when that
    /// binding cannot be used.
    fn bind_spilled(&mut self, doc: &Document) -> Option<()> {
        let (mut msg, spill, diags) =
            schema::bind::bind_spilled(&self.src, doc, &schema::model_config())?;
        if diags.is_empty() {
            let mut bytes = crate::schema::wire::encode(&msg)?;
            drop(msg);
            bytes.extend_from_slice(&spill);
            drop(spill);
            self.config = Some(prost::Message::decode(bytes.as_slice()).ok()?);
        } else {
            // The checks read a partial message when binding failed.
            prost::Message::merge(&mut msg, spill.as_slice()).ok()?;
            self.message = Some(msg);
        }
        self.diagnostics = diags;
        Some(())
    }

    pub fn from_bytes(bytes: Vec<u8>) -> ParsedConfig {
        let (src, _lossy) = crate::text::decode_source(bytes);
        ParsedConfig::parse(src)
    }

    /// [`from_bytes`](Self::from_bytes) for the checks (see
    /// [`parse_checked`](Self::parse_checked)).
    pub fn from_bytes_checked(bytes: Vec<u8>) -> ParsedConfig {
        let (src, _lossy) = crate::text::decode_source(bytes);
        ParsedConfig::parse_checked(src)
    }

    /// The span of the value at `path`, or of its closest existing ancestor
    /// (for a field that is missing, the message that should hold it).
    pub fn span(&self, path: &FieldPath) -> Option<Span> {
        let doc = self.doc.as_ref()?;
        Some(path::resolve_with(&self.src, doc, path, Some(&self.paths)).span)
    }

    /// Like [`span`](Self::span) but only when the path exists exactly.
    pub fn exact_span(&self, path: &FieldPath) -> Option<Span> {
        let doc = self.doc.as_ref()?;
        let r = path::resolve_with(&self.src, doc, path, Some(&self.paths));
        r.exact.then_some(r.span)
    }

    /// The span of the field *name* at `path` (`max_batch_size` in
    /// `max_batch_size: 8`), falling back like [`span`](Self::span).
    pub fn name_span(&self, path: &FieldPath) -> Option<Span> {
        let doc = self.doc.as_ref()?;
        let r = path::resolve_with(&self.src, doc, path, Some(&self.paths));
        Some(r.name_span.unwrap_or(r.span))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_print_in_declaration_order() {
        let src = "backend: \"b\" max_batch_size: 8 name: \"m\" input { name: \"x\" dims: [1, -1] } parameters { key: \"k\" value { string_value: \"v\" } }";
        let parsed = ParsedConfig::parse(src.to_string());
        assert!(parsed.diagnostics.is_empty());
        let out = crate::pbtxt::printer::print_message(parsed.message.as_ref().unwrap());
        assert_eq!(
            out,
            "name: \"m\"\nbackend: \"b\"\nmax_batch_size: 8\ninput [\n  {\n    name: \"x\"\n    dims: [ 1, -1 ]\n  }\n]\nparameters {\n  key: \"k\"\n  value {\n    string_value: \"v\"\n  }\n}\n"
        );
    }

    /// The checks bind top-level repeated messages straight to wire format
    /// (the bound message is many times the text: docs/hostile.md); the
    /// typed config, and the partial message after an error, must be what
    /// the full binding gives, interleaved fields and lists included.
    #[test]
    fn checked_binding_gives_the_same_config() {
        let src = "name: \"m\"\ninput { name: \"a\" data_type: TYPE_FP32 dims: [ 1 ] }\n\
                   output [ { name: \"y\" data_type: TYPE_INT8 dims: [ 2, 3 ] }, { name: \"z\" data_type: TYPE_FP16 dims: [ -1 ] } ]\n\
                   max_batch_size: 4\ninput { name: \"b\" data_type: TYPE_STRING dims: [ 5 ] }\n\
                   instance_group [ { kind: KIND_CPU count: 2 } ]\nparameters { key: \"k\" value: { string_value: \"v\" } }\n\
                   dynamic_batching { max_queue_delay_microseconds: 10 }\n";
        let full = ParsedConfig::parse(src.to_string());
        let checked = ParsedConfig::parse_checked(src.to_string());
        assert!(full.diagnostics.is_empty() && checked.diagnostics.is_empty());
        let config = checked.config.expect("typed config");
        assert_eq!(Some(&config), full.config.as_ref());
        assert_eq!(config.input.len(), 2);
        assert_eq!(config.input[1].name, "b");
        assert!(checked.message.is_none());

        let bad = format!("{src}input {{ name: \"c\" dims: [ x ] }}\nmax_batch_size: 8\n");
        let full = ParsedConfig::parse(bad.clone());
        let checked = ParsedConfig::parse_checked(bad);
        assert!(checked.config.is_none());
        let codes = |p: &ParsedConfig| {
            p.diagnostics
                .iter()
                .map(|d| d.rule.code)
                .collect::<Vec<_>>()
        };
        assert_eq!(codes(&checked), codes(&full));
        assert!(!codes(&checked).is_empty());
        assert_eq!(checked.message, full.message);
    }
}
