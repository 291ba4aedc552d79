//! Byte ranges and the line index, and reading numbers from text as
//! Triton's C++ does ([`stoll`]).
//!
//! Everything in the tree and in diagnostics carries byte ranges into the
//! source; line and column are computed only when a diagnostic is rendered.
//! Untrusted text is turned into display text by [`display`].

pub mod display;

use std::fmt;

/// A half-open byte range `start..end` into one source text.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Span {
        Span {
            start: start as u32,
            end: end as u32,
        }
    }

    pub fn empty(at: usize) -> Span {
        Span::new(at, at)
    }

    pub fn len(self) -> usize {
        (self.end - self.start) as usize
    }

    pub fn is_empty(self) -> bool {
        self.start == self.end
    }

    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }

    /// The smallest span covering both.
    pub fn cover(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
}

impl fmt::Debug for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.start, self.end)
    }
}

/// 1-based line and column (column counted in characters, as editors do).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineCol {
    pub line: usize,
    pub column: usize,
}

/// Start offsets of every line of a text.
#[derive(Clone, Debug)]
pub struct LineIndex {
    starts: Vec<u32>,
}

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        let mut starts = vec![0u32];
        for (i, b) in text.bytes().enumerate() {
            if b == b'\n' {
                starts.push(i as u32 + 1);
            }
        }
        LineIndex { starts }
    }

    /// 0-based line number holding `offset`.
    pub fn line_of(&self, offset: usize) -> usize {
        match self.starts.binary_search(&(offset as u32)) {
            Ok(i) => i,
            Err(i) => i - 1,
        }
    }

    pub fn line_start(&self, line: usize) -> usize {
        self.starts[line] as usize
    }

    pub fn line_count(&self) -> usize {
        self.starts.len()
    }

    /// The text of 0-based `line`, without its line ending.
    pub fn line_text<'a>(&self, text: &'a str, line: usize) -> &'a str {
        let start = self.starts[line] as usize;
        let end = self
            .starts
            .get(line + 1)
            .map(|&e| e as usize)
            .unwrap_or(text.len());
        let s = &text[start.min(text.len())..end.min(text.len())];
        s.strip_suffix('\n')
            .map(|s| s.strip_suffix('\r').unwrap_or(s))
            .unwrap_or(s)
    }

    pub fn line_col(&self, text: &str, offset: usize) -> LineCol {
        let offset = floor_char_boundary(text, offset.min(text.len()));
        let line = self.line_of(offset);
        let start = self.starts[line] as usize;
        let column = text[start..offset].chars().count() + 1;
        LineCol {
            line: line + 1,
            column,
        }
    }
}

/// A number read as C++'s `std::stoll` (and `std::stoi`) read one, as
/// Triton reads version directory names and backend parameters: leading
/// white space, an optional sign, then the longest run of decimal digits;
/// whatever follows is ignored (`"12abc"` is 12). `None` when no digit
/// comes first or the number does not fit in an `i64`.
pub fn stoll(text: &str) -> Option<i64> {
    let t = text.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (negative, rest) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let end = rest.bytes().take_while(u8::is_ascii_digit).count();
    if end == 0 {
        return None;
    }
    let digits = &rest[..end];
    if negative {
        format!("-{digits}").parse().ok()
    } else {
        digits.parse().ok()
    }
}

pub fn floor_char_boundary(text: &str, mut offset: usize) -> usize {
    while offset > 0 && !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// Source text as read from disk: bytes that are not valid UTF-8 are replaced
/// one for one by U+001A (SUB), so byte offsets stay those of the file. The
/// tokenizer accepts SUB only inside strings and comments, as protobuf's
/// parser accepts raw bytes there.
pub fn decode_source(bytes: Vec<u8>) -> (String, bool) {
    match String::from_utf8(bytes) {
        Ok(s) => (s, false),
        Err(e) => {
            let mut bytes = e.into_bytes();
            let mut i = 0;
            while i < bytes.len() {
                match std::str::from_utf8(&bytes[i..]) {
                    Ok(_) => break,
                    Err(err) => {
                        i += err.valid_up_to();
                        let bad = err.error_len().unwrap_or(bytes.len() - i);
                        for b in &mut bytes[i..i + bad] {
                            *b = 0x1A;
                        }
                        i += bad;
                    }
                }
            }
            (
                String::from_utf8(bytes).expect("all invalid sequences were replaced"),
                true,
            )
        }
    }
}

/// Known names close to `word` (for "did you mean"): the best match and
/// up to two others about as close.
pub fn suggestions<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let w = word.to_ascii_lowercase();
    let mut scored: Vec<(f64, &str)> = candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(&w, &c.to_ascii_lowercase()), c))
        .filter(|(s, _)| *s > 0.8)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    scored.dedup_by(|a, b| a.1 == b.1);
    let best = scored.first().map(|s| s.0).unwrap_or(0.0);
    scored
        .into_iter()
        .take_while(|(s, _)| *s >= best - 0.02)
        .take(3)
        .map(|(_, c)| c)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_characters() {
        let text = "ab\n\u{00e9}x\r\nlast";
        let idx = LineIndex::new(text);
        assert_eq!(idx.line_col(text, 0), LineCol { line: 1, column: 1 });
        assert_eq!(idx.line_col(text, 3), LineCol { line: 2, column: 1 });
        assert_eq!(idx.line_col(text, 5), LineCol { line: 2, column: 2 });
        assert_eq!(idx.line_text(text, 1), "\u{00e9}x");
        assert_eq!(idx.line_text(text, 2), "last");
    }

    #[test]
    fn invalid_utf8_keeps_offsets() {
        let (s, lossy) = decode_source(b"a\xffb\xc3".to_vec());
        assert!(lossy);
        assert_eq!(s.len(), 4);
        assert_eq!(s.as_bytes(), b"a\x1ab\x1a");
    }

    #[test]
    fn suggests_the_closest_names() {
        let names = [
            "unknown-field",
            "unknown-extension",
            "unknown-enum-value",
            "syntax-error",
        ];
        assert_eq!(suggestions("unknown-feild", names), ["unknown-field"]);
        assert!(suggestions("zzz", names).is_empty());
    }
}
