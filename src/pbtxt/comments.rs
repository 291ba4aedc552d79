//! Comments are not part of the tree (the grammar skips them); this scanner
//! finds them by the same lexical rules, for the printer and suppressions.

use crate::text::Span;

/// Spans of every `#` comment (from `#` to the end of its line, newline excluded).
pub fn scan(src: &str) -> Vec<Span> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'#' => {
                let start = i;
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                let end = if i > start && b[i - 1] == b'\r' {
                    i - 1
                } else {
                    i
                };
                out.push(Span::new(start, end));
                continue;
            }
            q @ (b'"' | b'\'') => {
                i += 1;
                while i < b.len() && b[i] != q && b[i] != b'\n' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn finds_comments_outside_strings() {
        let src = "a: \"#no\" # yes\r\nb: 1#glued\n";
        let spans = super::scan(src);
        let texts: Vec<&str> = spans.iter().map(|s| &src[s.range()]).collect();
        assert_eq!(texts, vec!["# yes", "#glued"]);
    }
}
