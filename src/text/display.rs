//! Untrusted text made safe to show: the one place that turns text from
//! the input (configs, directory names, traces, server replies) into text
//! for a terminal, a log or a table.
//!
//! Escaped as `\u{1b}`-style text: every C0 control (`\n`, `\r` and `\t`
//! too, shown as `\n`, `\r`, `\t`), DEL, the C1 controls (U+0080..U+009F),
//! the Unicode bidirectional embeddings, overrides and isolates
//! (U+202A..U+202E, U+2066..U+2069, the "Trojan Source" characters) and the
//! line and paragraph separators (U+2028, U+2029). Everything else,
//! multi-byte text included, is shown as it is, and text that needs no
//! escape is borrowed, not copied. A backslash is not escaped: the
//! escapes are for reading, not for parsing back.
//!
//! The rule (ARCHITECTURE.md): human and table output is trusted template
//! text with untrusted values in it, and each value is escaped where it is
//! rendered. Diagnostics are one line each (message, label, help, Triton's
//! text), so their renderers escape the whole text; source lines are
//! escaped by the snippet renderer; `term::error` and `term::warning`
//! escape the whole message. A message meant to span lines is written as
//! several lines by the code that prints it, never as one value with `\n`
//! in it. JSON and SARIF output keeps the raw text (serde escapes it).
//!
//! An [`Untrusted`] value longer than [`MAX_SHOWN_BYTES`] is shown cut, with
//! the number of bytes left out: a 50 MB name must not become 50 MB of log
//! for each finding that quotes it.

use std::borrow::Cow;
use std::fmt;
use std::path::Path;

/// Whether `c` is shown escaped.
pub fn needs_escape(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1f}'
        | '\u{7f}'..='\u{9f}'
        | '\u{202a}'..='\u{202e}'
        | '\u{2066}'..='\u{2069}'
        | '\u{2028}'
        | '\u{2029}')
}

/// How `c` is shown when [`needs_escape`] says so.
fn write_escaped(out: &mut impl fmt::Write, c: char) -> fmt::Result {
    match c {
        '\n' => out.write_str("\\n"),
        '\r' => out.write_str("\\r"),
        '\t' => out.write_str("\\t"),
        c => write!(out, "\\u{{{:x}}}", c as u32),
    }
}

/// The number of terminal columns `c` takes when shown: its escape's
/// length when escaped, else its width by Unicode's East Asian Width (2 for
/// wide characters such as CJK ones, 0 for combining marks), as terminals
/// draw it, so that carets line up under the text they mark.
pub fn shown_width(c: char) -> usize {
    if !needs_escape(c) {
        return unicode_width::UnicodeWidthChar::width(c).unwrap_or(1);
    }
    match c {
        '\n' | '\r' | '\t' => 2,
        // `\u{` + hex digits + `}`
        c => 4 + hex_digits(c as u32),
    }
}

fn hex_digits(mut n: u32) -> usize {
    let mut d = 1;
    while n >= 16 {
        n /= 16;
        d += 1;
    }
    d
}

/// `text` with every character of [`needs_escape`] escaped; borrowed when
/// there is none.
pub fn escape(text: &str) -> Cow<'_, str> {
    let Some(first) = text.find(needs_escape) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 8);
    out.push_str(&text[..first]);
    push_escaped(&mut out, &text[first..]);
    Cow::Owned(out)
}

/// Appends `text` to `out`, escaped as [`escape`] does.
pub fn push_escaped(out: &mut String, text: &str) {
    let _ = write_str_escaped(out, text);
}

fn write_str_escaped(out: &mut impl fmt::Write, text: &str) -> fmt::Result {
    let mut rest = text;
    while let Some(at) = rest.find(needs_escape) {
        out.write_str(&rest[..at])?;
        let c = rest[at..].chars().next().expect("found a character");
        write_escaped(out, c)?;
        rest = &rest[at + c.len_utf8()..];
    }
    out.write_str(rest)
}

/// The most of one [`Untrusted`] value shown; the rest is counted, not shown.
pub const MAX_SHOWN_BYTES: usize = 4096;

/// Untrusted text for `format!`: `format!("model '{}'", Untrusted(name))`
/// shows `name` escaped, without an intermediate `String`, and cut after
/// [`MAX_SHOWN_BYTES`].
#[derive(Clone, Copy, Debug)]
pub struct Untrusted<'a>(pub &'a str);

impl fmt::Display for Untrusted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (shown, left_out) = clip(self.0);
        write_str_escaped(f, shown)?;
        if left_out > 0 {
            write!(f, "… ({left_out} more bytes not shown)")?;
        }
        Ok(())
    }
}

/// `text` cut to at most [`MAX_SHOWN_BYTES`] on a character boundary, and
/// the number of bytes cut off.
pub fn clip(text: &str) -> (&str, usize) {
    if text.len() <= MAX_SHOWN_BYTES {
        return (text, 0);
    }
    let end = crate::text::floor_char_boundary(text, MAX_SHOWN_BYTES);
    (&text[..end], text.len() - end)
}

/// A path as display text: its name escaped as [`escape`] does, and bytes
/// that are not UTF-8 shown as `\xff` (not as U+FFFD, which would hide
/// which name it is). Borrowed when the path is UTF-8 and needs no escape.
pub fn path(p: &Path) -> Cow<'_, str> {
    if let Some(s) = p.to_str() {
        return escape(s);
    }
    let mut out = String::new();
    let _ = write_path(&mut out, p);
    Cow::Owned(out)
}

/// A path for `format!`, shown as [`path`] shows it.
#[derive(Clone, Copy, Debug)]
pub struct DisplayPath<'a>(pub &'a Path);

impl fmt::Display for DisplayPath<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_path(f, self.0)
    }
}

fn write_path(out: &mut impl fmt::Write, p: &Path) -> fmt::Result {
    if let Some(s) = p.to_str() {
        return write_str_escaped(out, s);
    }
    for chunk in path_bytes(p).utf8_chunks() {
        write_str_escaped(out, chunk.valid())?;
        for b in chunk.invalid() {
            write!(out, "\\x{b:02x}")?;
        }
    }
    Ok(())
}

#[cfg(unix)]
fn path_bytes(p: &Path) -> Cow<'_, [u8]> {
    use std::os::unix::ffi::OsStrExt;
    Cow::Borrowed(p.as_os_str().as_bytes())
}

#[cfg(not(unix))]
fn path_bytes(p: &Path) -> Cow<'_, [u8]> {
    // Elsewhere a name that is not Unicode has no bytes of its own; the
    // lossy form is the best there is.
    Cow::Owned(p.to_string_lossy().into_owned().into_bytes())
}

/// The part of a line shown in a source snippet: at most `width` shown
/// columns (escapes count as their length, wide characters as two), starting at the character
/// that starts at or after column `from`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    /// The shown text, escaped, without the markers.
    pub text: String,
    /// The column (in shown columns of the whole line) `text` starts at.
    pub start: usize,
    /// Whether the line goes on before `text` / after it.
    pub cut_before: bool,
    pub cut_after: bool,
}

/// The window of `line` from shown column `from`, `width` columns wide.
/// `tab` is the width a tab is expanded to (snippets show tabs as spaces so
/// that the source keeps its layout). Only the window is copied, however
/// long the line is.
pub fn window(line: &str, from: usize, width: usize, tab: usize) -> Window {
    let mut col = 0;
    let mut text = String::new();
    let mut start = None;
    let mut cut_after = false;
    for c in line.chars() {
        let w = if c == '\t' { tab } else { shown_width(c) };
        if start.is_none() {
            if col < from {
                col += w;
                continue;
            }
            start = Some(col);
        }
        let begun = start.expect("set above");
        if col + w > begun + width {
            cut_after = true;
            break;
        }
        match c {
            '\t' => text.extend(std::iter::repeat_n(' ', tab)),
            c if needs_escape(c) => {
                let _ = write_escaped(&mut text, c);
            }
            c => text.push(c),
        }
        col += w;
    }
    let start = start.unwrap_or(col);
    Window {
        text,
        start,
        cut_before: start > 0,
        cut_after,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_every_class() {
        let cases = [
            ("\u{1b}]0;pwned\u{7}", "\\u{1b}]0;pwned\\u{7}"),
            ("a\nb\rc\td", "a\\nb\\rc\\td"),
            ("\u{0}", "\\u{0}"),
            ("\u{7f}", "\\u{7f}"),
            ("\u{80}\u{9b}\u{9f}", "\\u{80}\\u{9b}\\u{9f}"),
            (
                "\u{202a}\u{202b}\u{202c}\u{202d}\u{202e}",
                "\\u{202a}\\u{202b}\\u{202c}\\u{202d}\\u{202e}",
            ),
            (
                "\u{2066}\u{2067}\u{2068}\u{2069}",
                "\\u{2066}\\u{2067}\\u{2068}\\u{2069}",
            ),
            ("\u{2028}\u{2029}", "\\u{2028}\\u{2029}"),
        ];
        for (raw, shown) in cases {
            assert_eq!(escape(raw), shown, "{raw:?}");
            assert_eq!(Untrusted(raw).to_string(), shown);
            assert!(!shown.chars().any(needs_escape));
        }
    }

    #[test]
    fn leaves_text_alone_and_borrows_it() {
        for clean in [
            "",
            "model 'résumé' 日本語 🙂 \\x and \\u{1b} as typed",
            "\u{a0}\u{a1}\u{200f}\u{2027}\u{202f}\u{206a}",
        ] {
            assert!(matches!(escape(clean), Cow::Borrowed(s) if s == clean));
            assert!(matches!(path(Path::new(clean)), Cow::Borrowed(_)));
        }
        // Multi-byte characters around an escape stay whole.
        assert_eq!(escape("é\u{1b}日"), "é\\u{1b}日");
    }

    #[test]
    fn widths_match_the_escapes() {
        for c in [
            'a', 'é', '\n', '\t', '\u{0}', '\u{1b}', '\u{9f}', '\u{202e}',
        ] {
            assert_eq!(
                shown_width(c),
                escape(&c.to_string()).chars().count(),
                "{c:?}"
            );
        }
        // Wide characters take two columns, combining marks none.
        assert_eq!(shown_width('模'), 2);
        assert_eq!(shown_width('\u{ff21}'), 2);
        assert_eq!(shown_width('\u{301}'), 0);
    }

    #[cfg(unix)]
    #[test]
    fn paths_show_bytes_that_are_not_utf8() {
        use std::ffi::OsStr;
        use std::os::unix::ffi::OsStrExt;
        let p = Path::new(OsStr::from_bytes(b"models/a\xffb\n/\xc3"));
        assert_eq!(path(p), "models/a\\xffb\\n/\\xc3");
        assert_eq!(DisplayPath(p).to_string(), "models/a\\xffb\\n/\\xc3");
        assert_eq!(path(Path::new("m/\u{1b}[2J")), "m/\\u{1b}[2J");
    }

    #[test]
    fn windows_cut_long_lines() {
        let w = window("short line", 0, 120, 4);
        assert_eq!(w.text, "short line");
        assert!(!w.cut_before && !w.cut_after);

        let line = "x".repeat(10_000);
        let w = window(&line, 5000, 100, 4);
        assert_eq!((w.start, w.text.len()), (5000, 100));
        assert!(w.cut_before && w.cut_after);

        // Escapes and tabs count as what they show; a character is never
        // split, and the window starts at a character boundary.
        let w = window("ab\u{1b}cd\te", 3, 6, 4);
        assert_eq!((w.start, w.text.as_str()), (8, "cd    "));
        assert!(w.cut_before && w.cut_after);
        // Wide characters take two columns: column 3 is inside 本, so the
        // window starts at 語 (column 4); 4 columns hold two of them.
        let w = window("日本語日本語", 2, 4, 4);
        assert_eq!((w.start, w.text.as_str()), (2, "本語"));
        let w = window("日本語日本語", 3, 5, 4);
        assert_eq!((w.start, w.text.as_str(), w.cut_after), (4, "語日", true));
        // A start past the end gives an empty window at the end.
        let w = window("abc", 10, 5, 4);
        assert_eq!((w.start, w.text.as_str(), w.cut_after), (3, "", false));
    }

    #[test]
    fn long_values_are_cut_and_the_rest_counted() {
        let long = "é".repeat(MAX_SHOWN_BYTES); // 2 bytes each
        let shown = Untrusted(&long).to_string();
        assert!(shown.len() < MAX_SHOWN_BYTES + 64, "{}", shown.len());
        assert!(shown.ends_with(&format!("… ({} more bytes not shown)", MAX_SHOWN_BYTES)));
        let short = "x".repeat(MAX_SHOWN_BYTES);
        assert_eq!(Untrusted(&short).to_string(), short);
    }
}
