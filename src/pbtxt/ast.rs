//! The syntax tree of a text-format document. Nodes hold byte spans only;
//! the text they cover is read back from the source when needed.

use crate::text::Span;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Document {
    pub fields: Vec<Field>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    pub name: Name,
    /// Where the ':' after the name stands, if there is one.
    pub colon: Option<Span>,
    pub value: Value,
    /// From the name to the end of the value.
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Name {
    /// The identifier, or for `[a.b]` the whole bracketed name.
    pub span: Span,
    /// `[a.b]` or `[type.googleapis.com/a.B]`.
    pub extension: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Scalar(Scalar),
    Message(Message),
    List(List),
}

impl Value {
    pub fn span(&self) -> Span {
        match self {
            Value::Scalar(s) => s.span,
            Value::Message(m) => m.span,
            Value::List(l) => l.span,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    pub fields: Vec<Field>,
    /// From the opening brace to the closing one, both included.
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct List {
    /// Scalars or messages (the grammar refuses nested lists).
    pub items: Vec<Value>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scalar {
    pub kind: ScalarKind,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntRadix {
    Decimal,
    Hex,
    Octal,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScalarKind {
    /// One or more adjacent string literals; each span includes its quotes.
    Strings(Vec<Span>),
    /// An integer literal; `lit` covers the digits (prefix included).
    Int {
        negative: bool,
        radix: IntRadix,
        lit: Span,
    },
    /// A floating-point literal (`1.5`, `1e3`, `2f`, `.5`).
    Float { negative: bool, lit: Span },
    /// An identifier (enum value, bool, `inf`, `nan`), possibly after '-'.
    Ident { negative: bool, ident: Span },
}

impl ScalarKind {
    /// A short description for messages: "string", "integer", ...
    pub fn describe(&self) -> &'static str {
        match self {
            ScalarKind::Strings(_) => "a string",
            ScalarKind::Int { .. } => "an integer",
            ScalarKind::Float { .. } => "a floating-point number",
            ScalarKind::Ident { .. } => "an identifier",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A large config is mostly fields, values and scalars: their sizes,
    /// times the node count, are the tree's share of `validate`'s memory
    /// (docs/hostile.md). Growing one of them should be a decision, not an accident.
    #[test]
    fn hot_nodes_stay_small() {
        assert!(std::mem::size_of::<Span>() <= 8);
        assert!(std::mem::size_of::<Scalar>() <= 40);
        assert!(std::mem::size_of::<Value>() <= 40);
        assert!(std::mem::size_of::<Field>() <= 72);
    }
}
