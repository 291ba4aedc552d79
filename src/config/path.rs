//! Field paths (`input[0].dims[1]`, `parameters{state_pairs}`): the one
//! way the program names a place in a model config.
//!
//! * Rules work on the typed config and name *where* a problem is by path;
//!   the span is looked up only when a diagnostic is made ([`resolve`],
//!   walking the syntax tree), so binding keeps no index at all.
//! * `simulate --sweep` takes a path typed by the user
//!   ([`FieldPath::from_str`](std::str::FromStr), strict), resolves it
//!   against the schema ([`FieldPath::resolve_in`]) and sets a value there
//!   in a bound message ([`FieldTarget::set`]).
//!
//! Syntax: field names joined by `.`; `[INDEX]` picks an element of a
//! repeated field, `{KEY}` the entry of a map field (the key runs to the
//! next `}` and is taken as written).

use crate::diagnostics::Severity;
use crate::pbtxt::ast::{Field, Scalar, ScalarKind, Value};
use crate::pbtxt::{ast::Document, literal};
use crate::text::Span;
use prost_reflect::{
    DynamicMessage, FieldDescriptor, Kind, MapKey, MessageDescriptor, Value as ProtoValue,
};
use std::collections::HashMap;
use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seg {
    Field(String),
    /// The i-th element of a repeated field, counted over every occurrence
    /// of the field in order (lists and repeated entries alike), as protobuf
    /// merges them.
    Index(usize),
    /// The entry of a map field with this key.
    Key(String),
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldPath(pub Vec<Seg>);

impl FieldPath {
    pub fn root() -> FieldPath {
        FieldPath(Vec::new())
    }

    /// Parses `a.b[2].c{key}.d` as the program writes paths: never fails
    /// (what is not a path is read as well as it can be; an index that is
    /// not a number reads as 0). Paths typed by a user go through
    /// [`str::parse`], which refuses them instead.
    pub fn parse(s: &str) -> FieldPath {
        FieldPath(scan(s, false).unwrap_or_default())
    }

    pub fn field(mut self, name: &str) -> FieldPath {
        self.0.push(Seg::Field(name.to_string()));
        self
    }

    pub fn index(mut self, i: usize) -> FieldPath {
        self.0.push(Seg::Index(i));
        self
    }

    pub fn key(mut self, k: impl Into<String>) -> FieldPath {
        self.0.push(Seg::Key(k.into()));
        self
    }
}

impl From<&str> for FieldPath {
    fn from(s: &str) -> FieldPath {
        FieldPath::parse(s)
    }
}

impl std::str::FromStr for FieldPath {
    type Err = PathError;

    /// Parses a path typed by a user: only `NAME`, `.NAME`, `[INDEX]` and
    /// `{KEY}`, a name first and last of all or after `.`.
    fn from_str(s: &str) -> Result<FieldPath, PathError> {
        scan(s, true).map(FieldPath)
    }
}

/// Reads a path; `strict` refuses anything but the syntax of the module
/// documentation, otherwise the path is read as well as it can be.
fn scan(s: &str, strict: bool) -> Result<Vec<Seg>, PathError> {
    let syntax = || PathError::Syntax(s.to_string());
    let mut segs = Vec::new();
    let mut rest = s;
    let mut name_next = true;
    while let Some(c) = rest.chars().next() {
        match c {
            '.' => {
                if strict && name_next {
                    return Err(syntax());
                }
                name_next = true;
                rest = &rest[1..];
            }
            '[' | '{' => {
                if strict && name_next {
                    return Err(syntax());
                }
                let close = if c == '[' { ']' } else { '}' };
                let end = match rest.find(close) {
                    Some(e) => e,
                    None if strict => return Err(syntax()),
                    None => rest.len(),
                };
                let inner = &rest[1..end];
                segs.push(if c == '[' {
                    let inner = inner.trim();
                    match inner.parse() {
                        Ok(i) => Seg::Index(i),
                        Err(_) if strict => {
                            return Err(PathError::Index {
                                path: s.to_string(),
                                index: inner.to_string(),
                            })
                        }
                        Err(_) => Seg::Index(0),
                    }
                } else {
                    Seg::Key(inner.to_string())
                });
                rest = rest.get(end + 1..).unwrap_or("");
                name_next = false;
            }
            _ => {
                let end = rest.find(['.', '[', '{']).unwrap_or(rest.len());
                let name = &rest[..end];
                if strict
                    && (!name_next || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
                {
                    return Err(syntax());
                }
                segs.push(Seg::Field(name.to_string()));
                rest = &rest[end..];
                name_next = false;
            }
        }
    }
    if strict && name_next {
        return Err(syntax());
    }
    Ok(segs)
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, s) in self.0.iter().enumerate() {
            match s {
                Seg::Field(n) if i == 0 => write!(f, "{n}")?,
                Seg::Field(n) => write!(f, ".{n}")?,
                Seg::Index(x) => write!(f, "[{x}]")?,
                Seg::Key(k) => write!(f, "{{{k}}}")?,
            }
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Resolved {
    /// The value's span, or the closest ancestor's.
    pub span: Span,
    /// The name of the last field reached.
    pub name_span: Option<Span>,
    /// Whether the whole path was found.
    pub exact: bool,
}

pub fn resolve(src: &str, doc: &Document, path: &FieldPath) -> Resolved {
    resolve_with(src, doc, path, None)
}

/// Where an element of a repeated field is: the field's index among its
/// message's fields, and its index in the field's list (`NOT_LISTED` for a
/// field written without brackets).
type ElementAt = (u32, u32);
const NOT_LISTED: u32 = u32::MAX;

/// One repeated field of one message, indexed: which fields carry the name,
/// and (built on the first key lookup) the last element per map key.
#[derive(Debug)]
struct Indexed {
    /// The message's fields (address and length), to recognise it.
    fields: (usize, usize),
    name: String,
    last: u32,
    elements: Vec<ElementAt>,
    keys: Option<HashMap<String, ElementAt>>,
}

/// Remembers the last few repeated fields [`resolve_with`] looked at, so
/// that spans for every element of a long list (`ensemble_scheduling.step[i]`
/// for each of 100,000 steps) cost a constant each instead of a walk of the
/// list each. Plain fields of messages with few fields are found directly.
#[derive(Debug, Default)]
pub struct PathCache(std::sync::Mutex<Vec<Indexed>>);

/// Plain fields of messages with fewer fields are found directly.
const INDEX_FROM: usize = 32;
/// Repeated fields remembered at once.
const REMEMBERED: usize = 4;

impl PathCache {
    fn lookup<R>(
        &self,
        src: &str,
        fields: &[Field],
        name: &str,
        f: impl FnOnce(&mut Indexed) -> R,
    ) -> Option<R> {
        let mut entries = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let key = (fields.as_ptr() as usize, fields.len());
        let at = match entries
            .iter()
            .position(|e| e.fields == key && e.name == name)
        {
            Some(at) => at,
            None => {
                let mut elements = Vec::new();
                let mut last = None;
                for (fi, field) in fields.iter().enumerate() {
                    if &src[field.name.span.range()] != name {
                        continue;
                    }
                    let fi = u32::try_from(fi).ok()?;
                    last = Some(fi);
                    match &field.value {
                        Value::List(l) => {
                            for ii in 0..l.items.len() {
                                elements.push((fi, u32::try_from(ii).ok()?));
                            }
                        }
                        _ => elements.push((fi, NOT_LISTED)),
                    }
                }
                if entries.len() == REMEMBERED {
                    entries.remove(0);
                }
                entries.push(Indexed {
                    fields: key,
                    name: name.to_string(),
                    last: last?,
                    elements,
                    keys: None,
                });
                entries.len() - 1
            }
        };
        Some(f(&mut entries[at]))
    }
}

fn element_at(fields: &[Field], (fi, ii): ElementAt) -> &Value {
    let v = &fields[fi as usize].value;
    match v {
        Value::List(l) if ii != NOT_LISTED => &l.items[ii as usize],
        _ => v,
    }
}

/// [`resolve`], with `cache` (when given) for long repeated fields.
pub fn resolve_with(
    src: &str,
    doc: &Document,
    path: &FieldPath,
    cache: Option<&PathCache>,
) -> Resolved {
    let mut fields: &[Field] = &doc.fields;
    let mut best = Resolved {
        span: Span::empty(0),
        name_span: None,
        exact: path.0.is_empty(),
    };
    if path.0.is_empty() {
        best.span = doc.span;
        return best;
    }
    let segs = &path.0;
    let mut i = 0;
    while i < segs.len() {
        let Seg::Field(name) = &segs[i] else {
            return best;
        };
        let element = matches!(segs.get(i + 1), Some(Seg::Index(_) | Seg::Key(_)));
        let cache = cache.filter(|_| element || fields.len() >= INDEX_FROM);
        let value: Option<&Value>;
        if let Some(cache) = cache {
            // (last field, element asked for), as indices.
            let found = cache.lookup(src, fields, name, |e| {
                let el = match segs.get(i + 1) {
                    Some(Seg::Index(n)) => Some(e.elements.get(*n).copied()),
                    Some(Seg::Key(k)) => {
                        let keys = e.keys.get_or_insert_with(|| {
                            let mut keys = HashMap::new();
                            for &at in &e.elements {
                                if let Some(key) = entry_key(src, element_at(fields, at)) {
                                    keys.insert(key, at);
                                }
                            }
                            keys
                        });
                        Some(keys.get(k.as_str()).copied())
                    }
                    _ => None,
                };
                (e.last, el)
            });
            let Some((last, el)) = found else {
                return best;
            };
            let last = &fields[last as usize];
            best.name_span = Some(last.name.span);
            value = match el {
                None => Some(&last.value),
                Some(el) => {
                    i += 1;
                    el.map(|at| element_at(fields, at))
                }
            };
            if value.is_none() {
                best.span = last.name.span;
                return best;
            }
        } else {
            let occurrences: Vec<&Field> = fields
                .iter()
                .filter(|f| &src[f.name.span.range()] == name.as_str())
                .collect();
            let Some(last) = occurrences.last() else {
                return best;
            };
            best.name_span = Some(last.name.span);
            value = match segs.get(i + 1) {
                Some(Seg::Index(n)) => {
                    i += 1;
                    elements(&occurrences).nth(*n)
                }
                Some(Seg::Key(k)) => {
                    i += 1;
                    elements(&occurrences).rfind(|v| entry_key_is(src, v, k))
                }
                _ => Some(&last.value),
            };
            if value.is_none() {
                best.span = last.name.span;
                return best;
            }
        }
        let value = value.expect("checked above");
        best.span = value.span();
        i += 1;
        if i == segs.len() {
            best.exact = true;
            return best;
        }
        match value {
            Value::Message(m) => fields = &m.fields,
            _ => return best,
        }
    }
    best
}

fn elements<'a>(occ: &[&'a Field]) -> std::vec::IntoIter<&'a Value> {
    let mut out = Vec::new();
    for f in occ {
        match &f.value {
            Value::List(l) => out.extend(l.items.iter()),
            v => out.push(v),
        }
    }
    out.into_iter()
}

/// A map entry's key (the last `key` field), as [`entry_key_is`] reads it.
fn entry_key(src: &str, v: &Value) -> Option<String> {
    let Value::Message(m) = v else { return None };
    m.fields
        .iter()
        .rfind(|f| &src[f.name.span.range()] == "key")
        .and_then(|f| match &f.value {
            Value::Scalar(s) => Some(scalar_text(src, s)),
            _ => None,
        })
}

fn entry_key_is(src: &str, v: &Value, key: &str) -> bool {
    let Value::Message(m) = v else { return false };
    m.fields
        .iter()
        .rfind(|f| &src[f.name.span.range()] == "key")
        .is_some_and(|f| match &f.value {
            Value::Scalar(s) => scalar_text(src, s) == key,
            _ => false,
        })
}

/// A scalar's value as text: strings decoded, numbers as written.
pub fn scalar_text(src: &str, s: &Scalar) -> String {
    match &s.kind {
        ScalarKind::Strings(parts) => {
            let mut b = Vec::new();
            for p in parts {
                literal::unescape_into(&src[p.range()], &mut b);
            }
            String::from_utf8_lossy(&b).into_owned()
        }
        ScalarKind::Int {
            negative,
            radix,
            lit,
        } => {
            let mag = literal::parse_uint(&src[lit.range()], *radix)
                .map_or_else(|| src[lit.range()].to_string(), |m| m.to_string());
            if *negative {
                format!("-{mag}")
            } else {
                mag
            }
        }
        _ => src[s.span.range()].to_string(),
    }
}

/// Why a path typed by a user does not name a place in the config.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("'{0}' is not a field path (NAME, NAME.NAME, NAME[INDEX] or NAME{{KEY}}, for example instance_group[0].count)")]
    Syntax(String),
    #[error("'{path}': the index '{index}' is not a whole number")]
    Index { path: String, index: String },
    /// `name` is not a field of the message at `at` (`""` for the root).
    #[error("{}", unknown_field_message(.at, .name, .suggestion, .fields))]
    UnknownField {
        at: String,
        name: String,
        /// The closest field's whole path, when one is close.
        suggestion: Option<String>,
        /// The fields the message has.
        fields: Vec<String>,
    },
    /// The path does not fit the schema or the message (a list without
    /// an index, an index out of range, another member of a `oneof`, ...).
    #[error("{0}")]
    Invalid(String),
}

fn place(at: &str) -> String {
    if at.is_empty() {
        "the model config".to_string()
    } else {
        format!("'{at}'")
    }
}

fn unknown_field_message(
    at: &str,
    name: &str,
    suggestion: &Option<String>,
    fields: &[String],
) -> String {
    let place = place(at);
    let mut m = format!("{place} has no field '{name}'");
    if let Some(s) = suggestion {
        m.push_str(&format!("; did you mean '{s}'?"));
    }
    m.push_str(&format!(" Fields of {place}: {}", fields.join(", ")));
    m
}

fn join_path(at: &str, name: &str) -> String {
    if at.is_empty() {
        name.to_string()
    } else {
        format!("{at}.{name}")
    }
}

/// What the last step of a resolved path names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leaf {
    /// A whole field (a whole list for a repeated field).
    Field,
    /// One element of a repeated field: `dims[1]`.
    Element,
    /// The value of one map entry: `parameters{KEY}`.
    MapValue,
}

/// One step of a resolved path.
#[derive(Debug, Clone)]
enum Step {
    Field(FieldDescriptor),
    Index(usize),
    /// The key, bound, and as written.
    Key(MapKey, String),
}

/// A [`FieldPath`] resolved against a message schema: the place a value
/// can be set in a bound message of that schema.
#[derive(Debug, Clone)]
pub struct FieldTarget {
    steps: Vec<Step>,
    field: FieldDescriptor,
    leaf: Leaf,
}

impl FieldPath {
    /// Resolves the path against the ModelConfig schema.
    pub fn resolve_config(&self) -> Result<FieldTarget, PathError> {
        self.resolve_in(&crate::schema::model_config())
    }

    /// Resolves the path against `root`: every name must be a field,
    /// `[INDEX]` only after a repeated field, `{KEY}` (a valid key) only
    /// after a map field, which needs one; a list or a map is only crossed
    /// through one element or entry.
    pub fn resolve_in(&self, root: &MessageDescriptor) -> Result<FieldTarget, PathError> {
        let key = self.to_string();
        let invalid = |m: String| PathError::Invalid(m);
        let mut steps = Vec::new();
        let mut msg = root.clone();
        let mut at = String::new();
        let mut it = self.0.iter().peekable();
        while let Some(seg) = it.next() {
            let Seg::Field(name) = seg else {
                return Err(invalid(format!("'{key}': one index or key per field")));
            };
            let Some(fd) = msg.get_field_by_name(name) else {
                let fields: Vec<String> = msg.fields().map(|f| f.name().to_string()).collect();
                let suggestion = crate::text::suggestions(name, fields.iter().map(String::as_str))
                    .first()
                    .map(|s| join_path(&at, s));
                return Err(PathError::UnknownField {
                    at,
                    name: name.clone(),
                    suggestion,
                    fields,
                });
            };
            at = join_path(&at, name);
            steps.push(Step::Field(fd.clone()));
            let mut leaf = Leaf::Field;
            let mut inner = fd.kind();
            match it.peek() {
                Some(Seg::Index(i)) => {
                    if !fd.is_list() {
                        return Err(invalid(format!(
                            "'{at}' is not a list; leave out the [{i}]"
                        )));
                    }
                    at = format!("{at}[{i}]");
                    steps.push(Step::Index(*i));
                    leaf = Leaf::Element;
                    it.next();
                }
                Some(Seg::Key(k)) => {
                    let (Kind::Message(entry), true) = (fd.kind(), fd.is_map()) else {
                        return Err(invalid(format!(
                            "'{at}' is not a map; leave out the {{{k}}}"
                        )));
                    };
                    let mk = parse_map_key(&entry, k)
                        .map_err(|e| invalid(format!("'{at}{{{k}}}': invalid key: {e}")))?;
                    at = format!("{at}{{{k}}}");
                    steps.push(Step::Key(mk, k.clone()));
                    inner = entry.map_entry_value_field().kind();
                    leaf = Leaf::MapValue;
                    it.next();
                }
                _ => {}
            }
            match it.peek() {
                None => {
                    if leaf == Leaf::Field && fd.is_map() {
                        return Err(invalid(format!(
                            "'{at}' is a map; name one entry, for example {at}{{KEY}}"
                        )));
                    }
                    return Ok(FieldTarget {
                        steps,
                        field: fd,
                        leaf,
                    });
                }
                Some(Seg::Field(next)) => {
                    if leaf == Leaf::Field && fd.is_list() {
                        return Err(invalid(format!(
                            "'{at}' is a list; pick one element, for example {at}[0].{next}"
                        )));
                    }
                    match inner {
                        Kind::Message(m) => msg = m,
                        _ => {
                            return Err(invalid(format!(
                                "'{at}' is not a message; it has no field '{next}'"
                            )))
                        }
                    }
                }
                Some(_) => return Err(invalid(format!("'{key}': one index or key per field"))),
            }
        }
        Err(PathError::Syntax(key))
    }
}

impl FieldTarget {
    /// The field of the last step.
    pub fn field(&self) -> &FieldDescriptor {
        &self.field
    }

    /// What of the field the path names.
    pub fn leaf(&self) -> Leaf {
        self.leaf
    }

    /// The kind of the values set here (the element kind for a list, the
    /// value kind for a map entry).
    pub fn value_kind(&self) -> Kind {
        match (self.leaf, self.field.kind()) {
            (Leaf::MapValue, Kind::Message(entry)) => entry.map_entry_value_field().kind(),
            (_, k) => k,
        }
    }

    /// Reads a value for this place in config syntax (`8`, `[4, 8]`,
    /// `KIND_CPU`, `{ count: 2 }`), bound as a config file is bound.
    pub fn parse_value(&self, text: &str) -> Result<ProtoValue, String> {
        let fd = &self.field;
        match self.leaf {
            Leaf::Field => {
                let snippet = format!("{}: {text}", fd.name());
                let msg = bind_snippet(&snippet, &fd.parent_message().clone())?;
                Ok(msg.get_field(fd).into_owned())
            }
            Leaf::Element => {
                let snippet = format!("{}: [ {text} ]", fd.name());
                let msg = bind_snippet(&snippet, &fd.parent_message().clone())?;
                match msg.get_field(fd).into_owned() {
                    ProtoValue::List(mut l) if l.len() == 1 => Ok(l.remove(0)),
                    _ => Err("expected one element".into()),
                }
            }
            Leaf::MapValue => {
                let Kind::Message(entry) = fd.kind() else {
                    return Err("not a map".into());
                };
                let vf = entry.map_entry_value_field();
                let msg = bind_snippet(&format!("value: {text}"), &entry)?;
                Ok(msg.get_field(&vf).into_owned())
            }
        }
    }

    /// Sets `value` here in `msg`, a message of the schema the path was
    /// resolved in. A map entry is added when missing; an element must
    /// exist; a `oneof` keeps the member the message has.
    pub fn set(&self, msg: &mut DynamicMessage, value: &ProtoValue) -> Result<(), PathError> {
        set_at(msg, &self.steps, value, "").map_err(PathError::Invalid)
    }
}

/// A map key written in the key's own syntax (strings need no quotes).
fn parse_map_key(entry: &MessageDescriptor, text: &str) -> Result<MapKey, String> {
    let kf = entry.map_entry_key_field();
    let lit = if matches!(kf.kind(), Kind::String) && !text.starts_with(['"', '\'']) {
        crate::pbtxt::printer::quote_bytes(text.as_bytes())
    } else {
        text.to_string()
    };
    let v = bind_snippet(&format!("key: {lit}"), entry)?
        .get_field(&kf)
        .into_owned();
    v.into_map_key()
        .ok_or_else(|| "not a valid map key".to_string())
}

/// Binds a one-field text against `desc`, as a config file is bound.
fn bind_snippet(snippet: &str, desc: &MessageDescriptor) -> Result<DynamicMessage, String> {
    let doc = crate::pbtxt::parse(snippet).map_err(|d| d.message.clone())?;
    if doc.fields.len() != 1 {
        return Err("expected one value".into());
    }
    let (msg, diags) = crate::schema::bind::bind(snippet, &doc, desc);
    if let Some(d) = diags
        .iter()
        .find(|d| d.severity == Severity::Error)
        .or(diags.first())
    {
        return Err(d.message.clone());
    }
    Ok(msg)
}

/// Refuses to switch a `oneof` (the scheduler, the sequence strategy, ...)
/// to another member than the message's.
fn check_oneof(msg: &DynamicMessage, fd: &FieldDescriptor, at: &str) -> Result<(), String> {
    let Some(o) = fd.containing_oneof() else {
        return Ok(());
    };
    if let Some(other) = o
        .fields()
        .find(|f| f.number() != fd.number() && msg.has_field(f))
    {
        let names: Vec<String> = o.fields().map(|f| join_path(at, f.name())).collect();
        return Err(format!(
            "'{}' cannot be set: the config uses '{}', and a config holds only one of {}",
            join_path(at, fd.name()),
            join_path(at, other.name()),
            names.join(", ")
        ));
    }
    Ok(())
}

/// Sets `value` at `steps` in `msg` (`at` is the path of `msg`).
fn set_at(
    msg: &mut DynamicMessage,
    steps: &[Step],
    value: &ProtoValue,
    at: &str,
) -> Result<(), String> {
    let Some((Step::Field(fd), rest)) = steps.split_first() else {
        return Err("a path starts with a field name".into());
    };
    check_oneof(msg, fd, at)?;
    let here = join_path(at, fd.name());
    match rest {
        [] => msg
            .try_set_field(fd, value.clone())
            .map_err(|e| e.to_string()),
        [Step::Index(i), more @ ..] => {
            let n = match msg.get_field(fd).as_ref() {
                ProtoValue::List(l) => l.len(),
                _ => 0,
            };
            if *i >= n {
                return Err(format!(
                    "'{here}[{i}]': the config has {} (indices start at 0)",
                    match n {
                        0 => format!("no {here}"),
                        1 => format!("1 {here} entry"),
                        n => format!("{n} {here} entries"),
                    }
                ));
            }
            let ProtoValue::List(items) = msg.get_field_mut(fd) else {
                return Err(format!("'{here}' is not a list"));
            };
            let item = &mut items[*i];
            if more.is_empty() {
                *item = value.clone();
                return Ok(());
            }
            match item {
                ProtoValue::Message(m) => set_at(m, more, value, &format!("{here}[{i}]")),
                _ => Err(format!("'{here}[{i}]' is not a message")),
            }
        }
        [Step::Key(k, written), more @ ..] => {
            let Kind::Message(entry) = fd.kind() else {
                return Err(format!("'{here}' is not a map"));
            };
            let value_kind = entry.map_entry_value_field().kind();
            let ProtoValue::Map(map) = msg.get_field_mut(fd) else {
                return Err(format!("'{here}' is not a map"));
            };
            let slot = map
                .entry(k.clone())
                .or_insert_with(|| value_kind.default_value());
            if more.is_empty() {
                *slot = value.clone();
                return Ok(());
            }
            match slot {
                ProtoValue::Message(m) => set_at(m, more, value, &format!("{here}{{{written}}}")),
                _ => Err(format!("'{here}{{{written}}}' is not a message")),
            }
        }
        more => match msg.get_field_mut(fd) {
            ProtoValue::Message(m) => set_at(m, more, value, &here),
            _ => Err(format!("'{here}' is not a message")),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span_text<'a>(src: &'a str, p: &str) -> (&'a str, bool) {
        let doc = crate::pbtxt::parse(src).unwrap();
        let r = resolve(src, &doc, &FieldPath::parse(p));
        (&src[r.span.range()], r.exact)
    }

    #[test]
    fn paths_round_trip() {
        for p in [
            "input[0].dims[1]",
            "parameters{state_pairs}.string_value",
            "name",
        ] {
            assert_eq!(FieldPath::parse(p).to_string(), p);
        }
    }

    #[test]
    fn resolves_lists_repeated_entries_and_maps() {
        let src = "input [ { name: \"a\" dims: [ 1, 0 ] } ]\ninput { name: \"b\" dims: 7 dims: 9 }\nparameters { key: \"k1\" value { string_value: \"v\" } }\nparameters [ { key: 'k2' value: { string_value: \"w\" } } ]\ndynamic_batching { }";
        assert_eq!(span_text(src, "input[0].dims[1]"), ("0", true));
        assert_eq!(span_text(src, "input[1].name"), ("\"b\"", true));
        assert_eq!(span_text(src, "input[1].dims[1]"), ("9", true));
        assert_eq!(
            span_text(src, "parameters{k2}.value.string_value"),
            ("\"w\"", true)
        );
        assert_eq!(
            span_text(src, "parameters{k1}.value.string_value"),
            ("\"v\"", true)
        );
        // Missing: falls back to the closest ancestor.
        assert_eq!(
            span_text(src, "dynamic_batching.max_queue_delay_microseconds"),
            ("{ }", false)
        );
        assert_eq!(span_text(src, "input[5]"), ("input", false));
    }

    /// The index gives the spans the walk gives, on messages above and
    /// below the size it starts at, for elements, map keys (the last entry
    /// of a key wins), plain fields and paths that do not exist.
    #[test]
    fn indexed_lookups_agree_with_the_walk() {
        let mut src = String::from("name: \"m\"\n");
        for i in 0..80 {
            src.push_str(&format!(
                "input {{ name: \"i{i}\" dims: [ {i}, 2 ] }}\nparameters {{ key: \"k{}\" value {{ string_value: \"{i}\" }} }}\n",
                i % 50
            ));
        }
        src.push_str("output [ { name: \"o\" }, { name: \"p\" } ]\nmax_batch_size: 4\n");
        let doc = crate::pbtxt::parse(&src).unwrap();
        let cache = PathCache::default();
        let mut paths = vec![
            "name".to_string(),
            "max_batch_size".into(),
            "output[1].name".into(),
            "output[2]".into(),
            "input[80]".into(),
            "parameters{nope}".into(),
            "nothing.here".into(),
        ];
        for i in 0..80 {
            paths.push(format!("input[{i}].dims[{}]", i % 3));
            paths.push(format!("parameters{{k{i}}}.value.string_value"));
        }
        // Twice: the second round reads the remembered index.
        for _ in 0..2 {
            for p in &paths {
                let path = FieldPath::parse(p);
                let walk = resolve(&src, &doc, &path);
                let indexed = resolve_with(&src, &doc, &path, Some(&cache));
                assert_eq!(
                    (walk.span, walk.name_span, walk.exact),
                    (indexed.span, indexed.name_span, indexed.exact),
                    "{p}"
                );
            }
        }
        let last_k3 = resolve_with(
            &src,
            &doc,
            &FieldPath::parse("parameters{k3}.value.string_value"),
            Some(&cache),
        );
        assert_eq!(&src[last_k3.span.range()], "\"53\"");
    }

    fn target(p: &str) -> Result<FieldTarget, PathError> {
        p.parse::<FieldPath>()?.resolve_config()
    }

    #[test]
    fn user_paths_parse_strictly_and_print_back() {
        for p in [
            "instance_group[0].count",
            "input[1].dims[0]",
            "parameters{k}.string_value",
            "dynamic_batching.priority_queue_policy{2}.max_queue_size",
            "max_batch_size",
        ] {
            let path: FieldPath = p.parse().unwrap();
            assert_eq!(path, FieldPath::parse(p), "{p}");
            assert_eq!(path.to_string(), p);
        }
        assert_eq!(
            "input[ 1 ].dims".parse::<FieldPath>().unwrap(),
            FieldPath::root().field("input").index(1).field("dims")
        );
        // A map key is taken as written, as protobuf compares keys.
        assert_eq!(
            "parameters{ k }".parse::<FieldPath>().unwrap(),
            FieldPath::root().field("parameters").key(" k ")
        );
        for bad in ["", ".a", "a..b", "a.", "a[0]b", "a-b", "a[0", "a{k", "[0]"] {
            assert!(
                matches!(bad.parse::<FieldPath>(), Err(PathError::Syntax(_))),
                "{bad}"
            );
        }
        assert_eq!(
            "input[a]".parse::<FieldPath>().unwrap_err().to_string(),
            "'input[a]': the index 'a' is not a whole number"
        );
        // What the program writes is read whatever it holds.
        assert_eq!(
            FieldPath::parse("a[x]..b{"),
            FieldPath::root().field("a").index(0).field("b").key("")
        );
    }

    #[test]
    fn paths_resolve_against_the_schema() {
        let t = target("instance_group[0].count").unwrap();
        assert_eq!(t.steps.len(), 3);
        assert_eq!(t.field().name(), "count");
        assert_eq!(t.leaf(), Leaf::Field);
        let t = target("input[1].dims[0]").unwrap();
        assert_eq!((t.field().name(), t.leaf()), ("dims", Leaf::Element));
        let t = target("parameters{k}.string_value").unwrap();
        assert_eq!((t.field().name(), t.leaf()), ("string_value", Leaf::Field));
        let t = target("dynamic_batching.priority_queue_policy{2}").unwrap();
        assert_eq!(t.leaf(), Leaf::MapValue);
        assert!(matches!(t.value_kind(), Kind::Message(m) if m.name() == "ModelQueuePolicy"));
        for bad in [
            "",
            ".a",
            "a..b",
            "max_batch_size[0]",
            "instance_group.count",
            "parameters",
            "dynamic_batching.priority_queue_policy{x}",
            "max_batch_size.x",
            "input[0][1]",
            "input[a]",
        ] {
            assert!(target(bad).is_err(), "{bad}");
        }
        assert_eq!(
            target("instance_group.count").unwrap_err().to_string(),
            "'instance_group' is a list; pick one element, for example instance_group[0].count"
        );
    }

    #[test]
    fn unknown_fields_are_named_with_a_suggestion() {
        let err = target("dynamic_batching.max_queue_delay").unwrap_err();
        let PathError::UnknownField {
            at,
            name,
            suggestion,
            fields,
        } = &err
        else {
            panic!("{err:?}");
        };
        assert_eq!(
            (at.as_str(), name.as_str()),
            ("dynamic_batching", "max_queue_delay")
        );
        assert_eq!(
            suggestion.as_deref(),
            Some("dynamic_batching.max_queue_delay_microseconds")
        );
        assert!(fields.iter().any(|f| f == "preferred_batch_size"));
        let m = err.to_string();
        assert!(
            m.starts_with("'dynamic_batching' has no field 'max_queue_delay'; did you mean 'dynamic_batching.max_queue_delay_microseconds'? Fields of 'dynamic_batching': "),
            "{m}"
        );
        let m = target("bogus").unwrap_err().to_string();
        assert!(
            m.starts_with("the model config has no field 'bogus' Fields of the model config: "),
            "{m}"
        );
        assert!(m.contains("max_batch_size"), "{m}");
    }

    #[test]
    fn targets_read_values_and_edit_messages() {
        let base = crate::config::ParsedConfig::parse(
            "max_batch_size: 8\ninstance_group [ { count: 1 }, { count: 2 } ]\ninput [ { name: \"x\" dims: [ 1, 2 ] } ]\ndynamic_batching { }\n"
                .into(),
        )
        .message
        .unwrap();
        let edit = |path: &str, value: &str| {
            let t = target(path).unwrap();
            let v = t.parse_value(value).unwrap();
            let mut m = base.clone();
            t.set(&mut m, &v).map(|()| {
                crate::config::ParsedConfig::parse(crate::pbtxt::printer::print_message(&m))
                    .config
                    .unwrap()
            })
        };
        assert_eq!(edit("max_batch_size", "4").unwrap().max_batch_size, 4);
        assert_eq!(edit("input[0].dims[1]", "7").unwrap().input[0].dims, [1, 7]);
        assert_eq!(edit("input[0].dims", "[3]").unwrap().input[0].dims, [3]);
        let cfg = edit("parameters{k}.string_value", "\"v\"").unwrap();
        assert_eq!(cfg.parameters["k"].string_value, "v");
        let err = edit("instance_group[2].count", "1")
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "'instance_group[2]': the config has 2 instance_group entries (indices start at 0)"
        );
        let err = edit("sequence_batching.max_sequence_idle_microseconds", "5")
            .unwrap_err()
            .to_string();
        assert!(err.contains("the config uses 'dynamic_batching'"), "{err}");
        assert!(target("max_batch_size")
            .unwrap()
            .parse_value("eight")
            .is_err());
    }
}
