//! Edits of a config's text that keep everything else as written: each
//! edit replaces, inserts or removes the text of one field, found through
//! the syntax tree's spans, so comments, layout and the other fields stay
//! byte for byte. `tune --write` uses it; the caller parses the result
//! again (as `fmt` checks its output before writing).

use crate::pbtxt::ast::{Document, Field, Message, Value};

/// One step of an edit's path: a field name, and for a repeated message
/// field which of its messages (counted over every occurrence and list).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step<'a> {
    pub name: &'a str,
    pub index: usize,
}

/// `a.b.c` as steps (index 0 each); `instance_group#1` selects a message.
pub fn steps(path: &str) -> Vec<Step<'_>> {
    path.split('.')
        .map(|s| match s.split_once('#') {
            Some((name, i)) => Step {
                name,
                index: i.parse().unwrap_or(0),
            },
            None => Step { name: s, index: 0 },
        })
        .collect()
}

/// Why an edit could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct EditError(pub String);

fn parse(src: &str) -> Result<Document, EditError> {
    crate::pbtxt::parse(src)
        .map_err(|d| EditError(format!("the text does not parse: {}", d.message)))
}

/// Where new fields go: the fields of a block and, for a message, its
/// braces.
struct Block<'d> {
    fields: &'d [Field],
    /// `{`…`}` of a message; `None` for the document.
    message: Option<&'d Message>,
}

/// The messages named `name` among `fields`, in order (a field written
/// several times, or as a list of messages).
fn messages<'d>(fields: &'d [Field], src: &str, name: &str) -> Vec<&'d Message> {
    let mut out = Vec::new();
    for f in fields.iter().filter(|f| field_name(src, f) == name) {
        match &f.value {
            Value::Message(m) => out.push(m),
            Value::List(l) => out.extend(l.items.iter().filter_map(|i| match i {
                Value::Message(m) => Some(m),
                _ => None,
            })),
            Value::Scalar(_) => {}
        }
    }
    out
}

fn field_name<'s>(src: &'s str, f: &Field) -> &'s str {
    &src[f.name.span.start as usize..f.name.span.end as usize]
}

/// The block `path` leads to, and the first step of `path` that does not
/// exist there yet (`path.len()` when all do).
fn walk<'d>(doc: &'d Document, src: &str, path: &[Step]) -> (Block<'d>, usize) {
    let mut block = Block {
        fields: &doc.fields,
        message: None,
    };
    for (k, step) in path.iter().enumerate() {
        let found = messages(block.fields, src, step.name);
        match found.get(step.index) {
            Some(m) => {
                block = Block {
                    fields: &m.fields,
                    message: Some(m),
                }
            }
            None => return (block, k),
        }
    }
    (block, path.len())
}

/// `a { b { c: v } }` for the steps not yet there.
fn nested(path: &[Step], leaf: Option<(&str, &str)>) -> String {
    let mut text = match leaf {
        Some((name, value)) => format!("{name}: {value}"),
        None => String::new(),
    };
    for step in path.iter().rev() {
        text = if text.is_empty() {
            format!("{} {{ }}", step.name)
        } else {
            format!("{} {{ {text} }}", step.name)
        };
    }
    text
}

/// Applies `(start, end, text)` replacements that do not overlap.
fn splice(src: &str, mut edits: Vec<(usize, usize, String)>) -> String {
    edits.sort_by_key(|e| std::cmp::Reverse(e.0));
    let mut out = src.to_string();
    for (start, end, text) in edits {
        out.replace_range(start..end, &text);
    }
    out
}

fn line_start(src: &str, at: usize) -> usize {
    src[..at].rfind('\n').map_or(0, |i| i + 1)
}

/// The text that inserts `text` (one line, no newline) at the end of
/// `block`: on its own line at the block's indentation, or inside braces
/// written on one line.
fn insert(src: &str, block: &Block, text: &str) -> (usize, usize, String) {
    let Some(m) = block.message else {
        let at = src.len();
        let sep = if src.is_empty() || src.ends_with('\n') {
            ""
        } else {
            "\n"
        };
        return (at, at, format!("{sep}{text}\n"));
    };
    let close = m.span.end as usize - 1;
    let ls = line_start(src, close);
    let before = &src[ls..close];
    let open_line = line_start(src, m.span.start as usize);
    if ls != open_line && before.trim().is_empty() {
        // The closing brace on a line of its own: a new line before it,
        // indented one level deeper than the brace.
        let indent = format!("{before}  ");
        return (ls, ls, format!("{indent}{text}\n"));
    }
    // `{ }` or `{ a: 1 }` on one line, or a brace after a field.
    let trimmed = src[..close].trim_end().len();
    (trimmed, close, format!(" {text} "))
}

/// Sets the field at `path` (its last step the field) to `value` (config
/// syntax: `8`, `[ 4, 8 ]`): the value of its first occurrence is
/// replaced and any other occurrence removed; a field or message missing
/// is added at the end of its block.
pub fn set(src: &str, path: &[Step], value: &str) -> Result<String, EditError> {
    let doc = parse(src)?;
    let (parents, leaf) = path.split_at(path.len() - 1);
    let leaf = &leaf[0];
    let (block, have) = walk(&doc, src, parents);
    if have < parents.len() {
        let text = nested(&parents[have..], Some((leaf.name, value)));
        return Ok(splice(src, vec![insert(src, &block, &text)]));
    }
    let same: Vec<&Field> = block
        .fields
        .iter()
        .filter(|f| field_name(src, f) == leaf.name)
        .collect();
    let Some(first) = same.first() else {
        let text = format!("{}: {value}", leaf.name);
        return Ok(splice(src, vec![insert(src, &block, &text)]));
    };
    let span = first.value.span();
    let mut edits = vec![(span.start as usize, span.end as usize, value.to_string())];
    for f in &same[1..] {
        edits.push(removal(src, f));
    }
    Ok(splice(src, edits))
}

/// Makes sure the message at `path` exists (added empty at the end of its
/// block when missing).
pub fn ensure(src: &str, path: &[Step]) -> Result<String, EditError> {
    let doc = parse(src)?;
    let (block, have) = walk(&doc, src, path);
    if have == path.len() {
        return Ok(src.to_string());
    }
    let text = nested(&path[have..], None);
    Ok(splice(src, vec![insert(src, &block, &text)]))
}

/// Removes every occurrence of the field at `path` (nothing when there is
/// none); a line left blank by it goes too.
pub fn remove(src: &str, path: &[Step]) -> Result<String, EditError> {
    let doc = parse(src)?;
    let (parents, leaf) = path.split_at(path.len() - 1);
    let (block, have) = walk(&doc, src, parents);
    if have < parents.len() {
        return Ok(src.to_string());
    }
    let edits: Vec<_> = block
        .fields
        .iter()
        .filter(|f| field_name(src, f) == leaf[0].name)
        .map(|f| removal(src, f))
        .collect();
    Ok(splice(src, edits))
}

/// The edit that removes `f`: its whole line when nothing else is on it
/// but a trailing comment, which is about the field and goes with it
/// (comments on lines of their own stay).
fn removal(src: &str, f: &Field) -> (usize, usize, String) {
    let (start, end) = (f.span.start as usize, f.span.end as usize);
    let ls = line_start(src, start);
    let le = src[end..].find('\n').map_or(src.len(), |i| end + i);
    let rest = src[end..le].trim_start();
    if src[ls..start].trim().is_empty() && (rest.is_empty() || rest.starts_with('#')) {
        let le = if le < src.len() { le + 1 } else { le };
        (ls, le, String::new())
    } else {
        (start, end, String::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set_(src: &str, path: &str, v: &str) -> String {
        set(src, &steps(path), v).unwrap()
    }

    #[test]
    fn a_value_is_replaced_in_place_comments_kept() {
        let src = "# model\nmax_batch_size: 8 # the most\ninput [ ]\n";
        assert_eq!(
            set_(src, "max_batch_size", "16"),
            "# model\nmax_batch_size: 16 # the most\ninput [ ]\n"
        );
        // Added at the end when missing.
        assert_eq!(
            set_("name: \"m\"", "max_batch_size", "4"),
            "name: \"m\"\nmax_batch_size: 4\n"
        );
    }

    #[test]
    fn messages_are_found_and_made() {
        let src = "dynamic_batching {\n  # wait\n  max_queue_delay_microseconds: 100\n}\n";
        assert_eq!(
            set_(src, "dynamic_batching.max_queue_delay_microseconds", "500"),
            "dynamic_batching {\n  # wait\n  max_queue_delay_microseconds: 500\n}\n"
        );
        assert_eq!(
            set_(src, "dynamic_batching.preferred_batch_size", "[ 4, 8 ]"),
            "dynamic_batching {\n  # wait\n  max_queue_delay_microseconds: 100\n  preferred_batch_size: [ 4, 8 ]\n}\n"
        );
        assert_eq!(
            set_(
                "dynamic_batching { }\n",
                "dynamic_batching.max_queue_delay_microseconds",
                "5"
            ),
            "dynamic_batching { max_queue_delay_microseconds: 5 }\n"
        );
        assert_eq!(
            set_(
                "name: \"m\"\n",
                "sequence_batching.oldest.max_candidate_sequences",
                "4"
            ),
            "name: \"m\"\nsequence_batching { oldest { max_candidate_sequences: 4 } }\n"
        );
        assert_eq!(
            ensure("x: 1\n", &steps("dynamic_batching")).unwrap(),
            "x: 1\ndynamic_batching { }\n"
        );
    }

    #[test]
    fn repeated_messages_are_counted_over_lists_and_occurrences() {
        let src = "instance_group [\n  {\n    count: 1 # one\n    kind: KIND_CPU\n  }\n]\n";
        assert_eq!(
            set_(src, "instance_group#0.count", "3"),
            "instance_group [\n  {\n    count: 3 # one\n    kind: KIND_CPU\n  }\n]\n"
        );
        let src = "instance_group { kind: KIND_GPU }\ninstance_group { count: 2 }\n";
        assert_eq!(
            set_(src, "instance_group#1.count", "5"),
            "instance_group { kind: KIND_GPU }\ninstance_group { count: 5 }\n"
        );
        assert_eq!(
            set_(src, "instance_group#0.count", "5"),
            "instance_group { kind: KIND_GPU count: 5 }\ninstance_group { count: 2 }\n"
        );
    }

    #[test]
    fn removal_takes_the_line_when_nothing_else_is_on_it() {
        let src =
            "sequence_batching {\n  direct { }\n  # idle\n  max_sequence_idle_microseconds: 5\n}\n";
        assert_eq!(
            remove(src, &steps("sequence_batching.direct")).unwrap(),
            "sequence_batching {\n  # idle\n  max_sequence_idle_microseconds: 5\n}\n"
        );
        assert_eq!(
            remove("a { b: 1 c: 2 }\n", &steps("a.b")).unwrap(),
            "a {  c: 2 }\n"
        );
        assert_eq!(remove("a: 1\n", &steps("x.y")).unwrap(), "a: 1\n");
        // Duplicates of a scalar: the first is set, the others go.
        assert_eq!(set_("a: 1\nb: 2\na: 3\n", "a", "9"), "a: 9\nb: 2\n");
    }

    #[test]
    fn removal_takes_the_trailing_comment_and_keeps_comments_above() {
        let src = "dynamic_batching {\n  # why the delay\n  max_queue_delay_microseconds: 100 # tuned\n  preserve_ordering: true\n}\n";
        assert_eq!(
            remove(src, &steps("dynamic_batching.max_queue_delay_microseconds")).unwrap(),
            "dynamic_batching {\n  # why the delay\n  preserve_ordering: true\n}\n"
        );
        // Another field on the line: only the field goes.
        assert_eq!(
            remove("a { b: 1 c: 2 # both\n}\n", &steps("a.b")).unwrap(),
            "a {  c: 2 # both\n}\n"
        );
    }
}
