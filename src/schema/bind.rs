//! Binding a syntax tree to a message type: unknown fields, value kinds,
//! enum names, integer ranges, repeated/non-repeated and oneof rules, maps.
//!
//! The rules are those of protobuf's C++ text parser (the one Triton runs):
//! a text it accepts binds without error here, and a text it refuses gets at
//! least one `schema` diagnostic. Unlike protobuf, binding goes on after an
//! error so that one run reports every problem.

use crate::diagnostics::{rule_in, Category, Diagnostic, Rule, Severity};
use crate::pbtxt::ast::{self, Scalar, ScalarKind};
use crate::pbtxt::literal;
use crate::text::Span;
use prost_reflect::{DynamicMessage, FieldDescriptor, Kind, MapKey, MessageDescriptor, Value};

/// The schema rules, raised here (part of the one registry, `crate::lint::registry`).
pub const RULES: &[Rule] = &[
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

const E0101: &Rule = rule_in(RULES, "E0101");
const E0102: &Rule = rule_in(RULES, "E0102");
const E0103: &Rule = rule_in(RULES, "E0103");
const E0104: &Rule = rule_in(RULES, "E0104");
const E0105: &Rule = rule_in(RULES, "E0105");
const E0106: &Rule = rule_in(RULES, "E0106");
const E0107: &Rule = rule_in(RULES, "E0107");
const E0108: &Rule = rule_in(RULES, "E0108");
const E0109: &Rule = rule_in(RULES, "E0109");

/// Binds `doc` (parsed from `src`) to `desc`.
pub fn bind(
    src: &str,
    doc: &ast::Document,
    desc: &MessageDescriptor,
) -> (DynamicMessage, Vec<Diagnostic>) {
    let mut b = Binder {
        src,
        diags: Vec::new(),
    };
    let msg = b.message(&doc.fields, desc.clone());
    (msg, b.diags)
}

/// [`bind`] for a caller that wants the message only to encode it: the
/// elements of top-level repeated message fields (`input`, `output`,
/// `instance_group`, ...), which make up nearly all of a large config, are
/// encoded to protobuf wire format as soon as each is bound instead of being
/// kept as `DynamicMessage`s, which take over ten times the size of their
/// text. The message plus the returned bytes, concatenated after its own
/// encoding, decode to what [`bind`]'s message encodes to: repeated fields
/// append, and these fields take part in no duplicate or oneof check.
/// `None` when an element could not be encoded (then use [`bind`]).
pub fn bind_spilled(
    src: &str,
    doc: &ast::Document,
    desc: &MessageDescriptor,
) -> Option<(DynamicMessage, Vec<u8>, Vec<Diagnostic>)> {
    let mut b = Binder {
        src,
        diags: Vec::new(),
    };
    let mut msg = DynamicMessage::new(desc.clone());
    let mut spill = Vec::new();
    for f in &doc.fields {
        let fd = (!f.name.extension)
            .then(|| desc.get_field_by_name(b.text(f.name.span)))
            .flatten()
            .filter(|fd| fd.is_list() && matches!(fd.kind(), Kind::Message(_)));
        let Some(fd) = fd else {
            b.field(&mut msg, f, desc);
            continue;
        };
        // What `field` and `element` do for a repeated message field.
        let items = match &f.value {
            ast::Value::List(list) => list.items.as_slice(),
            v => std::slice::from_ref(v),
        };
        for item in items {
            if let Some(value) = b.value(&fd, item) {
                crate::schema::wire::encode_field(&mut spill, &fd, &value)?;
            }
        }
    }
    Some((msg, spill, b.diags))
}

struct Binder<'s> {
    src: &'s str,
    diags: Vec<Diagnostic>,
}

impl<'s> Binder<'s> {
    fn text(&self, span: Span) -> &'s str {
        &self.src[span.range()]
    }

    fn message(&mut self, fields: &[ast::Field], desc: MessageDescriptor) -> DynamicMessage {
        let mut msg = DynamicMessage::new(desc.clone());
        for f in fields {
            self.field(&mut msg, f, &desc);
        }
        msg
    }

    fn field(&mut self, msg: &mut DynamicMessage, f: &ast::Field, desc: &MessageDescriptor) {
        let name = self.text(f.name.span);
        if f.name.extension {
            let inner = name.trim_start_matches('[').trim_end_matches(']').trim();
            let d = if inner.contains('/') {
                Diagnostic::new(
                    E0108,
                    format!("'{inner}': Any expansion is only allowed in a google.protobuf.Any field, and {} is not one", desc.name()),
                )
            } else {
                Diagnostic::new(
                    E0108,
                    format!(
                        "extension '{inner}' is not defined or is not an extension of \"{}\"",
                        desc.full_name()
                    ),
                )
            };
            self.diags.push(d.at(f.name.span));
            return;
        }
        let Some(fd) = desc.get_field_by_name(name) else {
            let mut d =
                Diagnostic::new(E0101, format!("unknown field '{name}' in {}", desc.name()))
                    .at(f.name.span);
            if let Some(s) = suggest(name, desc.fields().map(|x| x.name().to_string())) {
                d = d.help(format!("did you mean '{s}'?"));
            } else {
                d = d.help(format!(
                    "{} has the fields: {}",
                    desc.name(),
                    desc.fields()
                        .map(|x| x.name().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            self.diags.push(d);
            return;
        };
        let is_message = matches!(fd.kind(), Kind::Message(_));
        if !is_message && f.colon.is_none() {
            self.diags.push(
                Diagnostic::new(E0107, format!("expected ':' after field name '{name}'"))
                    .at(f.name.span)
                    .help("scalar fields need a colon: `name: value`; only messages may omit it"),
            );
            return;
        }
        if !fd.is_list() && !fd.is_map() {
            // Protobuf's rule: a non-repeated field may not be given twice
            // (a proto3 scalar still at its default value does not count),
            // and only one member of a oneof may be set.
            if msg.has_field(&fd) {
                self.diags.push(
                    Diagnostic::new(
                        E0105,
                        format!("non-repeated field '{name}' is specified multiple times"),
                    )
                    .at(f.name.span),
                );
                return;
            }
            if let Some(oneof) = fd.containing_oneof() {
                if let Some(other) = oneof
                    .fields()
                    .find(|o| o.number() != fd.number() && msg.has_field(o))
                {
                    self.diags.push(
                        Diagnostic::new(
                            E0106,
                            format!(
                                "field '{name}' is specified along with field '{}', another member of oneof '{}'",
                                other.name(),
                                oneof.name()
                            ),
                        )
                        .at(f.name.span)
                        .help(format!("set only one of: {}", oneof.fields().map(|o| o.name().to_string()).collect::<Vec<_>>().join(", "))),
                    );
                    return;
                }
            }
        }
        match &f.value {
            ast::Value::List(list) => {
                if !fd.is_list() && !fd.is_map() {
                    self.diags.push(
                        Diagnostic::new(
                            E0102,
                            format!("field '{name}' is not repeated, so it cannot take a list"),
                        )
                        .at(list.span),
                    );
                    return;
                }
                for item in &list.items {
                    self.element(msg, &fd, item);
                }
            }
            v => {
                if fd.is_list() || fd.is_map() {
                    self.element(msg, &fd, v);
                } else if let Some(value) = self.value(&fd, v) {
                    msg.set_field(&fd, value);
                }
            }
        }
    }

    /// One element of a repeated or map field.
    fn element(&mut self, msg: &mut DynamicMessage, fd: &FieldDescriptor, v: &ast::Value) {
        if fd.is_map() {
            let Kind::Message(entry) = fd.kind() else {
                return;
            };
            let ast::Value::Message(m) = v else {
                self.wrong_kind(fd, v, "a message ({ key: ... value: ... })");
                return;
            };
            let entry_msg = self.message(&m.fields, entry.clone());
            let key_fd = entry.map_entry_key_field();
            let value_fd = entry.map_entry_value_field();
            let key = match entry_msg.get_field(&key_fd).into_owned() {
                Value::String(s) => MapKey::String(s),
                Value::I32(x) => MapKey::I32(x),
                Value::I64(x) => MapKey::I64(x),
                Value::U32(x) => MapKey::U32(x),
                Value::U64(x) => MapKey::U64(x),
                Value::Bool(x) => MapKey::Bool(x),
                _ => return,
            };
            let value = entry_msg.get_field(&value_fd).into_owned();
            if let Value::Map(map) = msg.get_field_mut(fd) {
                map.insert(key, value);
            }
        } else if let Some(value) = self.value(fd, v) {
            if let Value::List(list) = msg.get_field_mut(fd) {
                list.push(value);
            }
        }
    }

    fn wrong_kind(&mut self, fd: &FieldDescriptor, v: &ast::Value, expected: &str) {
        let got = match v {
            ast::Value::Scalar(s) => s.kind.describe(),
            ast::Value::Message(_) => "a message",
            ast::Value::List(_) => "a list",
        };
        self.diags.push(
            Diagnostic::new(
                E0102,
                format!("field '{}' expects {expected}, got {got}", fd.name()),
            )
            .at(v.span()),
        );
    }

    /// A single (non-list) value for `fd`'s element type.
    fn value(&mut self, fd: &FieldDescriptor, v: &ast::Value) -> Option<Value> {
        let kind = fd.kind();
        if let Kind::Message(md) = &kind {
            return match v {
                ast::Value::Message(m) => Some(Value::Message(self.message(&m.fields, md.clone()))),
                _ => {
                    self.wrong_kind(fd, v, &format!("a message ({})", md.name()));
                    None
                }
            };
        }
        let ast::Value::Scalar(s) = v else {
            self.wrong_kind(fd, v, expected_words(&kind));
            return None;
        };
        let r = self.scalar(fd, &kind, s);
        if r.is_none() && self.diags.last().is_none_or(|d| d.span != Some(s.span)) {
            self.wrong_kind(fd, v, expected_words(&kind));
        }
        r
    }

    fn scalar(&mut self, fd: &FieldDescriptor, kind: &Kind, s: &Scalar) -> Option<Value> {
        match kind {
            Kind::String | Kind::Bytes => {
                let ScalarKind::Strings(parts) = &s.kind else {
                    return None;
                };
                let mut bytes = Vec::new();
                for p in parts {
                    literal::unescape_into(self.text(*p), &mut bytes);
                }
                Some(if matches!(kind, Kind::Bytes) {
                    Value::Bytes(bytes.into())
                } else {
                    Value::String(String::from_utf8_lossy(&bytes).into_owned())
                })
            }
            Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => self
                .signed(fd, s, i32::MIN as i128, i32::MAX as i128)
                .map(|x| Value::I32(x as i32)),
            Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => self
                .signed(fd, s, i64::MIN as i128, i64::MAX as i128)
                .map(|x| Value::I64(x as i64)),
            Kind::Uint32 | Kind::Fixed32 => self
                .signed(fd, s, 0, u32::MAX as i128)
                .map(|x| Value::U32(x as u32)),
            Kind::Uint64 | Kind::Fixed64 => self
                .signed(fd, s, 0, u64::MAX as i128)
                .map(|x| Value::U64(x as u64)),
            Kind::Float | Kind::Double => {
                let x = self.float(fd, s)?;
                Some(if matches!(kind, Kind::Float) {
                    Value::F32(x as f32)
                } else {
                    Value::F64(x)
                })
            }
            Kind::Bool => match &s.kind {
                ScalarKind::Int {
                    negative: false, ..
                } => {
                    let x = self.signed(fd, s, 0, 1)?;
                    Some(Value::Bool(x == 1))
                }
                ScalarKind::Ident {
                    negative: false,
                    ident,
                } => match self.text(*ident) {
                    "true" | "True" | "t" => Some(Value::Bool(true)),
                    "false" | "False" | "f" => Some(Value::Bool(false)),
                    other => {
                        self.diags.push(
                            Diagnostic::new(
                                E0109,
                                format!(
                                    "invalid value '{other}' for boolean field '{}'",
                                    fd.name()
                                ),
                            )
                            .at(s.span)
                            .help("write true, false, True, False, t, f, 1 or 0"),
                        );
                        None
                    }
                },
                _ => None,
            },
            Kind::Enum(ed) => match &s.kind {
                ScalarKind::Ident {
                    negative: false,
                    ident,
                } => {
                    let name = self.text(*ident);
                    match ed.get_value_by_name(name) {
                        Some(v) => Some(Value::EnumNumber(v.number())),
                        None => {
                            let mut d = Diagnostic::new(
                                E0103,
                                format!(
                                    "unknown value '{name}' for enum field '{}' ({})",
                                    fd.name(),
                                    ed.name()
                                ),
                            )
                            .at(s.span);
                            let names = ed.values().map(|v| v.name().to_string());
                            if let Some(sug) = suggest(name, names) {
                                d = d.help(format!("did you mean '{sug}'?"));
                            } else {
                                d = d.help(format!(
                                    "{} values are: {}",
                                    ed.name(),
                                    ed.values()
                                        .map(|v| v.name().to_string())
                                        .collect::<Vec<_>>()
                                        .join(", ")
                                ));
                            }
                            self.diags.push(d);
                            None
                        }
                    }
                }
                ScalarKind::Int { .. } => {
                    // Open (proto3) enums keep numbers they do not name.
                    self.signed(fd, s, i32::MIN as i128, i32::MAX as i128)
                        .map(|x| Value::EnumNumber(x as i32))
                }
                ScalarKind::Strings(_) => {
                    self.diags.push(
                        Diagnostic::new(
                            E0103,
                            format!("enum field '{}' takes a name without quotes", fd.name()),
                        )
                        .at(s.span)
                        .help(format!(
                            "write {}",
                            self.text(s.span).trim_matches(['"', '\''])
                        )),
                    );
                    None
                }
                _ => None,
            },
            Kind::Message(_) => None,
        }
    }

    /// An integer literal within `[min, max]`.
    fn signed(&mut self, fd: &FieldDescriptor, s: &Scalar, min: i128, max: i128) -> Option<i128> {
        let ScalarKind::Int {
            negative,
            radix,
            lit,
        } = &s.kind
        else {
            return None;
        };
        if *negative && min == 0 {
            self.diags.push(
                Diagnostic::new(
                    E0104,
                    format!("field '{}' is unsigned and cannot be negative", fd.name()),
                )
                .at(s.span),
            );
            return None;
        }
        let mag = literal::parse_uint(self.text(*lit), *radix).map(|m| m as i128);
        let value = mag.map(|m| if *negative { -m } else { m });
        match value {
            Some(v) if v >= min && v <= max => Some(v),
            _ => {
                self.diags.push(
                    Diagnostic::new(
                        E0104,
                        format!(
                            "integer {} is out of range for field '{}' ({min}..={max})",
                            self.text(s.span).trim(),
                            fd.name()
                        ),
                    )
                    .at(s.span),
                );
                None
            }
        }
    }

    fn float(&mut self, fd: &FieldDescriptor, s: &Scalar) -> Option<f64> {
        let (neg, x) = match &s.kind {
            ScalarKind::Float { negative, lit } => {
                (*negative, literal::parse_float(self.text(*lit)))
            }
            ScalarKind::Int {
                negative,
                radix,
                lit,
            } => {
                let t = self.text(*lit);
                if *radix != ast::IntRadix::Decimal {
                    self.diags.push(
                        Diagnostic::new(
                            E0102,
                            format!("field '{}' expects a decimal number, got {t}", fd.name()),
                        )
                        .at(s.span),
                    );
                    return None;
                }
                (*negative, t.parse::<f64>().unwrap_or(f64::INFINITY))
            }
            ScalarKind::Ident { negative, ident } => {
                let t = self.text(*ident).to_ascii_lowercase();
                match t.as_str() {
                    "inf" | "infinity" => (*negative, f64::INFINITY),
                    "nan" => (*negative, f64::NAN),
                    _ => return None,
                }
            }
            ScalarKind::Strings(_) => return None,
        };
        Some(if neg { -x } else { x })
    }
}

fn expected_words(kind: &Kind) -> &'static str {
    match kind {
        Kind::String | Kind::Bytes => "a string",
        Kind::Bool => "a boolean",
        Kind::Enum(_) => "an enum value name",
        Kind::Float | Kind::Double => "a number",
        Kind::Message(_) => "a message",
        _ => "an integer",
    }
}

/// The candidate closest to `word` by edit distance, if it is close enough.
pub fn suggest(word: &str, candidates: impl Iterator<Item = String>) -> Option<String> {
    let lower = word.to_ascii_lowercase();
    let mut best: Option<(usize, String)> = None;
    for c in candidates {
        let d = if c.eq_ignore_ascii_case(word) {
            0
        } else {
            edit_distance(&lower, &c.to_ascii_lowercase())
        };
        if best.as_ref().is_none_or(|(bd, _)| d < *bd) {
            best = Some((d, c));
        }
    }
    let (d, c) = best?;
    let limit = (word.len() / 3).max(1);
    (d <= limit || c.contains(&lower) || lower.contains(&c.to_ascii_lowercase()) && c.len() > 3)
        .then_some(c)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pbtxt;

    fn run(src: &str) -> (DynamicMessage, Vec<Diagnostic>) {
        let doc = pbtxt::parse(src).unwrap_or_else(|e| panic!("{}", e.message));
        bind(src, &doc, &crate::schema::model_config())
    }

    fn codes(src: &str) -> Vec<&'static str> {
        run(src).1.iter().map(|d| d.code()).collect()
    }

    #[test]
    fn accepts_what_protobuf_accepts() {
        for src in [
            "max_batch_size: 0 max_batch_size: 8",
            "input [ { name: \"a\" data_type: TYPE_FP32 dims: [ -1, 0x10 ] } ] input { name: 'b' dims: 1 dims: 2 }",
            "input { data_type: 11 } output { data_type: 99 }",
            "parameters { key: \"a\" value { string_value: \"x\" } } parameters [ { key: \"b\" value: { string_value: \"y\" } } ]",
            "parameters { key: \"a\" }",
            "model_transaction_policy { decoupled: t }",
            "optimization { cuda { graphs: 1 } }",
            "sequence_batching { control_input [ { name: \"S\" control [ { kind: CONTROL_SEQUENCE_START fp32_false_true: [ 0, 1 ] } ] } ] }",
            "model_metrics { metric_control [ { metric_identifier { family: \"x\" } histogram_options { buckets: [ 1, 2.5, inf, -inf, 1e3, 1.5f ] } } ] }",
            "dynamic_batching { priority_queue_policy { key: 1 value { max_queue_size: 4 } } }",
            "instance_group [ { kind: KIND_GPU, count: 4 }, { gpus: 0 } ]",
            "version_policy: < latest: < num_versions: 4294967295 > >",
            "name: \"a\" \"b\" 'c'",
        ] {
            let (_, d) = run(src);
            assert!(d.is_empty(), "{src}: {:?}", d.iter().map(|d| &d.message).collect::<Vec<_>>());
        }
    }

    #[test]
    fn refuses_what_protobuf_refuses() {
        let cases = [
            ("nmae: \"x\"", "E0101"),
            ("max_batch_size: 8 max_batch_size: 4", "E0105"),
            ("dynamic_batching {} sequence_batching {}", "E0106"),
            ("version_policy { latest {} all {} }", "E0106"),
            ("dynamic_batching {} dynamic_batching {}", "E0105"),
            ("input { data_type: TYPE_BYTES }", "E0103"),
            ("input { data_type: \"TYPE_FP32\" }", "E0103"),
            ("input { data_type: type_fp32 }", "E0103"),
            ("max_batch_size: 1.0", "E0102"),
            ("max_batch_size: 2147483648", "E0104"),
            (
                "dynamic_batching { max_queue_delay_microseconds: -1 }",
                "E0104",
            ),
            ("model_transaction_policy { decoupled: TRUE }", "E0109"),
            ("model_transaction_policy { decoupled: 2 }", "E0104"),
            ("input { dims [1, 2] }", "E0107"),
            ("name: foo", "E0102"),
            ("name: [\"a\"]", "E0102"),
            ("dynamic_batching: 5", "E0102"),
            ("name { }", "E0107"),
            ("[ext.foo]: 1", "E0108"),
            ("sequence_batching { generative_sequence: true }", "E0101"),
            ("input [ 1 ]", "E0102"),
            (
                "model_metrics { metric_control { histogram_options { buckets: 0x10 } } }",
                "E0102",
            ),
        ];
        for (src, code) in cases {
            let c = codes(src);
            assert!(c.contains(&code), "{src}: expected {code}, got {c:?}");
        }
    }

    #[test]
    fn unknown_field_suggests() {
        let (_, d) = run("max_batch_sise: 4");
        assert_eq!(d[0].help.as_deref(), Some("did you mean 'max_batch_size'?"));
        assert_eq!(d[0].span, Some(Span::new(0, 14)));
    }

    #[test]
    fn values_land_in_the_message() {
        let (m, d) = run("name: \"m\" max_batch_size: 8 input [ { name: \"x\" dims: [ -1, 3 ] } ] parameters { key: \"k\" value { string_value: \"v\" } }");
        assert!(d.is_empty());
        let cfg: crate::schema::inference::ModelConfig = m.transcode_to().unwrap();
        assert_eq!(cfg.name, "m");
        assert_eq!(cfg.max_batch_size, 8);
        assert_eq!(cfg.input[0].dims, vec![-1, 3]);
        assert_eq!(cfg.parameters["k"].string_value, "v");
    }
}
