//! A minimal streaming reader for the protobuf binary wire format.
//!
//! It works on any `Read + Seek` source and never holds more than one small
//! field in memory: length-delimited fields the caller does not want (tensor
//! payloads, doc strings, sub-graphs) are skipped with a relative seek, so a
//! multi-gigabyte initializer costs one `lseek` and no reads.
//!
//! Every read is checked against an explicit end offset (the end of the
//! enclosing message, or the end of the file at top level). Running past the
//! end of the file is reported as [`WireError::Eof`] (the file is truncated);
//! running past the end of an enclosing message, bad varints, field number 0
//! and the unused wire types 6 and 7 are reported as
//! [`WireError::Malformed`].

use std::io::{self, BufRead, Seek};

/// Longest string field the reader accepts (names, op types, dim params).
/// Real ONNX names are far shorter; the cap keeps a corrupt length from
/// turning into a huge allocation.
pub(crate) const MAX_STRING: u64 = 1 << 20;

/// Deepest nesting of (deprecated) protobuf groups that is skipped before
/// the input is declared malformed.
const MAX_GROUP_DEPTH: usize = 64;

/// Protobuf wire types (the low three bits of a field tag).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WireType {
    Varint,
    Fixed64,
    Len,
    StartGroup,
    EndGroup,
    Fixed32,
}

impl WireType {
    pub(crate) fn describe(self) -> &'static str {
        match self {
            WireType::Varint => "varint",
            WireType::Fixed64 => "64-bit",
            WireType::Len => "length-delimited",
            WireType::StartGroup => "start-group",
            WireType::EndGroup => "end-group",
            WireType::Fixed32 => "32-bit",
        }
    }
}

/// A failure while decoding the wire format.
#[derive(Debug)]
pub(crate) enum WireError {
    /// The data ends before the structure it describes (truncated file).
    Eof { offset: u64, detail: String },
    /// The bytes are not valid protobuf for the message being read.
    Malformed { offset: u64, detail: String },
    /// The operating system failed to read or seek.
    Io(io::Error),
}

impl From<io::Error> for WireError {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            // The length was checked against the file size up front, so a
            // short read means the file shrank under us: report truncation.
            WireError::Eof {
                offset: 0,
                detail: "the file ended while it was being read".into(),
            }
        } else {
            WireError::Io(e)
        }
    }
}

pub(crate) type WireResult<T> = Result<T, WireError>;

/// Streaming cursor over protobuf bytes with a known total length.
pub(crate) struct WireReader<R> {
    inner: R,
    pos: u64,
    len: u64,
    /// Names of the messages being read, outermost first, for error texts.
    context: Vec<&'static str>,
}

impl<R: BufRead + Seek> WireReader<R> {
    /// `len` is the number of bytes available from the current position of
    /// `inner` (the file size when starting at offset 0).
    pub(crate) fn new(inner: R, len: u64) -> Self {
        WireReader {
            inner,
            pos: 0,
            len,
            context: Vec::new(),
        }
    }

    pub(crate) fn pos(&self) -> u64 {
        self.pos
    }

    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Enters a named sub-message (for error messages).
    pub(crate) fn push(&mut self, name: &'static str) {
        self.context.push(name);
    }

    /// Leaves the innermost sub-message.
    pub(crate) fn pop(&mut self) {
        self.context.pop();
    }

    fn where_(&self) -> String {
        if self.context.is_empty() {
            "at top level".to_string()
        } else {
            format!("in {}", self.context.join("."))
        }
    }

    /// An error for running past `end` at `offset`: truncation when `end` is
    /// the end of the file, malformed nesting otherwise.
    fn overrun(&self, offset: u64, end: u64, what: &str) -> WireError {
        if end >= self.len {
            WireError::Eof {
                offset,
                detail: format!(
                    "{what} {} runs past the end of the file ({} bytes)",
                    self.where_(),
                    self.len
                ),
            }
        } else {
            WireError::Malformed {
                offset,
                detail: format!(
                    "{what} {} runs past the end of its enclosing message (which ends at byte {end})",
                    self.where_()
                ),
            }
        }
    }

    /// A malformed-input error at the current position.
    pub(crate) fn malformed(&self, offset: u64, what: impl AsRef<str>) -> WireError {
        WireError::Malformed {
            offset,
            detail: format!("{} {}", what.as_ref(), self.where_()),
        }
    }

    fn read_byte(&mut self, end: u64, start: u64, what: &str) -> WireResult<u8> {
        if self.pos >= end {
            return Err(self.overrun(start, end, what));
        }
        let buf = self.inner.fill_buf()?;
        let Some(&b) = buf.first() else {
            return Err(WireError::Eof {
                offset: self.pos,
                detail: format!("the file ended early {}", self.where_()),
            });
        };
        self.inner.consume(1);
        self.pos += 1;
        Ok(b)
    }

    /// Reads a base-128 varint that must end before `end`.
    pub(crate) fn varint(&mut self, end: u64) -> WireResult<u64> {
        let start = self.pos;
        let mut value: u64 = 0;
        for i in 0..10 {
            let b = self.read_byte(end, start, "a varint")?;
            if i == 9 && b > 1 {
                return Err(self.malformed(start, "a varint longer than 64 bits"));
            }
            value |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        unreachable!("the loop returns by the tenth byte")
    }

    /// Reads a field tag; `None` when `pos == end` (end of the message).
    pub(crate) fn tag(&mut self, end: u64) -> WireResult<Option<(u32, WireType)>> {
        if self.pos >= end {
            return Ok(None);
        }
        let start = self.pos;
        let key = self.varint(end)?;
        let field = key >> 3;
        if field == 0 || field > (1 << 29) - 1 {
            return Err(self.malformed(start, format!("invalid field number {field}")));
        }
        let wt = match key & 7 {
            0 => WireType::Varint,
            1 => WireType::Fixed64,
            2 => WireType::Len,
            3 => WireType::StartGroup,
            4 => WireType::EndGroup,
            5 => WireType::Fixed32,
            other => {
                return Err(
                    self.malformed(start, format!("invalid wire type {other} (field {field})"))
                )
            }
        };
        Ok(Some((field as u32, wt)))
    }

    /// Reads the length prefix of a length-delimited field and returns the
    /// absolute end offset of its payload (checked against `end`).
    pub(crate) fn len_end(&mut self, end: u64) -> WireResult<u64> {
        let start = self.pos;
        let n = self.varint(end)?;
        match self.pos.checked_add(n) {
            Some(e) if e <= end => Ok(e),
            _ => Err(self.overrun(
                start,
                end,
                &format!("a length-delimited field of {n} bytes"),
            )),
        }
    }

    /// Moves forward to the absolute offset `to` without reading the bytes.
    pub(crate) fn skip_to(&mut self, to: u64) -> WireResult<()> {
        debug_assert!(to >= self.pos);
        let delta = to - self.pos;
        if delta > 0 {
            let delta = i64::try_from(delta)
                .map_err(|_| self.malformed(self.pos, "a field larger than 2^63 bytes"))?;
            self.inner.seek_relative(delta)?;
            self.pos = to;
        }
        Ok(())
    }

    /// Reads a length-delimited field as bytes (at most [`MAX_STRING`]).
    pub(crate) fn bytes(&mut self, end: u64, what: &str) -> WireResult<Vec<u8>> {
        let start = self.pos;
        let stop = self.len_end(end)?;
        let n = stop - self.pos;
        if n > MAX_STRING {
            return Err(self.malformed(
                start,
                format!(
                    "{what} is {n} bytes long (more than the {MAX_STRING} accepted for a name)"
                ),
            ));
        }
        let mut buf = vec![0u8; n as usize];
        self.inner.read_exact(&mut buf)?;
        self.pos = stop;
        Ok(buf)
    }

    /// Reads a length-delimited field as (lossy) UTF-8 text.
    pub(crate) fn string(&mut self, end: u64, what: &str) -> WireResult<String> {
        let b = self.bytes(end, what)?;
        Ok(match String::from_utf8(b) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        })
    }

    /// Skips the payload of a field whose tag was just read.
    pub(crate) fn skip(&mut self, field: u32, wt: WireType, end: u64) -> WireResult<()> {
        match wt {
            WireType::Varint => {
                self.varint(end)?;
            }
            WireType::Fixed64 => self.skip_fixed(8, end)?,
            WireType::Fixed32 => self.skip_fixed(4, end)?,
            WireType::Len => {
                let stop = self.len_end(end)?;
                self.skip_to(stop)?;
            }
            WireType::StartGroup => self.skip_group(field, end)?,
            WireType::EndGroup => {
                return Err(self.malformed(
                    self.pos,
                    format!("an end-group marker (field {field}) without a matching start"),
                ))
            }
        }
        Ok(())
    }

    fn skip_fixed(&mut self, n: u64, end: u64) -> WireResult<()> {
        let start = self.pos;
        match self.pos.checked_add(n) {
            Some(e) if e <= end => self.skip_to(e),
            _ => Err(self.overrun(start, end, &format!("a {}-bit field", n * 8))),
        }
    }

    /// Skips a (deprecated) group, including nested groups, iteratively.
    fn skip_group(&mut self, field: u32, end: u64) -> WireResult<()> {
        let start = self.pos;
        let mut open = vec![field];
        while let Some(&current) = open.last() {
            let Some((f, wt)) = self.tag(end)? else {
                return Err(self.overrun(start, end, &format!("group {current}")));
            };
            match wt {
                WireType::StartGroup => {
                    if open.len() >= MAX_GROUP_DEPTH {
                        return Err(self.malformed(start, "groups nested too deeply"));
                    }
                    open.push(f);
                }
                WireType::EndGroup => {
                    if f != current {
                        return Err(self.malformed(
                            self.pos,
                            format!("group {current} closed by an end-group marker for field {f}"),
                        ));
                    }
                    open.pop();
                }
                other => self.skip(f, other, end)?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn reader(bytes: &[u8]) -> WireReader<Cursor<&[u8]>> {
        WireReader::new(Cursor::new(bytes), bytes.len() as u64)
    }

    #[test]
    fn varints_decode_and_overlong_ones_fail() {
        let mut r = reader(&[0x96, 0x01, 0x00]);
        assert_eq!(r.varint(3).unwrap(), 150);
        assert_eq!(r.varint(3).unwrap(), 0);
        // -1 as int64: ten bytes, last one 0x01.
        let mut bytes = vec![0xff; 9];
        bytes.push(0x01);
        assert_eq!(reader(&bytes).varint(10).unwrap() as i64, -1);
        let too_long = [0xff; 11];
        assert!(matches!(
            reader(&too_long).varint(11),
            Err(WireError::Malformed { .. })
        ));
        assert!(matches!(
            reader(&[0x80, 0x80]).varint(2),
            Err(WireError::Eof { .. })
        ));
    }

    #[test]
    fn lengths_past_the_file_are_truncation_past_the_parent_malformed() {
        // field 1, len 5, only 2 bytes follow
        let mut r = reader(&[0x0a, 0x05, 1, 2]);
        r.tag(4).unwrap();
        assert!(matches!(r.len_end(4), Err(WireError::Eof { .. })));
        // same but the parent message ends at byte 3 while the file goes on
        let mut r = reader(&[0x0a, 0x03, 1, 2, 3, 4]);
        r.tag(6).unwrap();
        assert!(matches!(r.len_end(3), Err(WireError::Malformed { .. })));
    }

    #[test]
    fn every_wire_type_is_skipped() {
        let bytes = [
            0x08, 0x96, 0x01, // field 1 varint
            0x11, 1, 2, 3, 4, 5, 6, 7, 8, // field 2 fixed64
            0x1a, 0x02, 9, 9, // field 3 len
            0x23, 0x08, 0x01, 0x2b, 0x2c, 0x24, // group 4 holding field 1 and empty group 5
            0x35, 1, 2, 3, 4, // field 6 fixed32
            0x38, 0x07, // field 7 varint = 7
        ];
        let end = bytes.len() as u64;
        let mut r = reader(&bytes);
        let mut seen = Vec::new();
        while let Some((f, wt)) = r.tag(end).unwrap() {
            seen.push(f);
            if f == 7 {
                assert_eq!(r.varint(end).unwrap(), 7);
            } else {
                r.skip(f, wt, end).unwrap();
            }
        }
        assert_eq!(seen, vec![1, 2, 3, 4, 6, 7]);
        assert_eq!(r.pos(), end);
    }

    #[test]
    fn bad_tags_are_rejected() {
        // field number 0
        assert!(matches!(
            reader(&[0x00]).tag(1),
            Err(WireError::Malformed { .. })
        ));
        // wire type 7
        assert!(matches!(
            reader(&[0x0f]).tag(1),
            Err(WireError::Malformed { .. })
        ));
        // mismatched end group
        let bytes = [0x0b, 0x14];
        let mut r = reader(&bytes);
        let (f, wt) = r.tag(2).unwrap().unwrap();
        assert!(matches!(r.skip(f, wt, 2), Err(WireError::Malformed { .. })));
        // unterminated group
        let bytes = [0x0b, 0x08, 0x01];
        let mut r = reader(&bytes);
        let (f, wt) = r.tag(3).unwrap().unwrap();
        assert!(matches!(r.skip(f, wt, 3), Err(WireError::Eof { .. })));
    }
}
