//! Server-sent events (the `text/event-stream` format that Triton's
//! `generate_stream` and OpenAI-compatible servers stream): a state machine
//! fed with the body's bytes as they arrive, which hands out each event
//! when its blank line comes.
//!
//! Hand-written rather than taken from a crate: the event-stream crates
//! buffer an event for as long as it grows (a hostile server could fill
//! memory with one endless event), and they hide when each event's bytes
//! arrived, which is what `perf` measures. Here at most one event's bytes
//! are held, bounded by a limit (`--max-response-bytes`), and the caller
//! feeds each frame of the body with its arrival time.
//!
//! The format: lines end with CRLF, LF or CR; `data: VALUE` appends VALUE
//! to the event's data (lines joined with `\n`, one space after the colon
//! dropped); `event: TYPE` names the event; a line starting with `:` is a
//! comment; `id`, `retry` and unknown fields are ignored; a blank line ends
//! the event, which is dispatched when it has data.

use std::ops::ControlFlow;

/// An event larger than the limit: its lines as sent, without their ends
/// and without comments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLarge;

/// What a [`Parser::feed`] call ended with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fed {
    /// Every byte was read; more may come.
    More,
    /// The callback asked to stop (the rest of the bytes are not read).
    Stopped,
}

/// One dispatched event, borrowed from the parser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event<'a> {
    /// The `event:` field, empty when there was none.
    pub kind: &'a [u8],
    /// The `data:` lines joined with `\n`.
    pub data: &'a [u8],
}

/// The state of one event stream.
#[derive(Debug)]
pub struct Parser {
    limit: usize,
    /// The line being read (without its end), unless it is skipped.
    line: Vec<u8>,
    /// The current line is a comment: its bytes are not kept.
    skipping: bool,
    /// The last byte fed was a CR: an LF right after it ends nothing.
    after_cr: bool,
    /// The event being built.
    data: Vec<u8>,
    has_data: bool,
    kind: Vec<u8>,
    /// The bytes of the event's lines so far (what the limit bounds).
    size: usize,
}

impl Parser {
    /// A parser holding at most `limit` bytes of one event.
    pub fn new(limit: u64) -> Self {
        Parser {
            limit: usize::try_from(limit).unwrap_or(usize::MAX),
            line: Vec::new(),
            skipping: false,
            after_cr: false,
            data: Vec::new(),
            has_data: false,
            kind: Vec::new(),
            size: 0,
        }
    }

    /// Whether bytes of an event that has not ended are held (a stream
    /// ending now would cut that event off).
    pub fn in_event(&self) -> bool {
        !self.line.is_empty() || self.skipping || self.has_data || !self.kind.is_empty()
    }

    /// Reads `bytes`, calling `on_event` for every event they complete,
    /// until they are all read or `on_event` breaks.
    pub fn feed(
        &mut self,
        mut bytes: &[u8],
        mut on_event: impl FnMut(Event<'_>) -> ControlFlow<()>,
    ) -> Result<Fed, TooLarge> {
        while !bytes.is_empty() {
            if self.after_cr {
                self.after_cr = false;
                if bytes[0] == b'\n' {
                    bytes = &bytes[1..];
                    continue;
                }
            }
            let Some(end) = bytes.iter().position(|&b| b == b'\n' || b == b'\r') else {
                self.take(bytes)?;
                return Ok(Fed::More);
            };
            self.take(&bytes[..end])?;
            self.after_cr = bytes[end] == b'\r';
            bytes = &bytes[end + 1..];
            if self.line_ended(&mut on_event).is_break() {
                return Ok(Fed::Stopped);
            }
        }
        Ok(Fed::More)
    }

    /// Part of a line.
    fn take(&mut self, part: &[u8]) -> Result<(), TooLarge> {
        if self.skipping || part.is_empty() {
            return Ok(());
        }
        if self.line.is_empty() && part[0] == b':' {
            self.skipping = true;
            return Ok(());
        }
        self.size = self.size.saturating_add(part.len());
        if self.size > self.limit {
            return Err(TooLarge);
        }
        self.line.extend_from_slice(part);
        Ok(())
    }

    fn line_ended(
        &mut self,
        on_event: &mut impl FnMut(Event<'_>) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        if self.skipping {
            self.skipping = false;
            return ControlFlow::Continue(());
        }
        if self.line.is_empty() {
            // a blank line: dispatch
            let flow = if self.has_data {
                on_event(Event {
                    kind: &self.kind,
                    data: &self.data,
                })
            } else {
                ControlFlow::Continue(())
            };
            self.data.clear();
            self.kind.clear();
            self.has_data = false;
            self.size = 0;
            return flow;
        }
        let (field, value) = match self.line.iter().position(|&b| b == b':') {
            Some(i) => {
                let v = &self.line[i + 1..];
                (&self.line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (&self.line[..], &[][..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            b"event" => {
                self.kind.clear();
                self.kind.extend_from_slice(value);
            }
            _ => {}
        }
        self.line.clear();
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every event of `chunks` as (kind, data) strings, or the error.
    fn events(limit: u64, chunks: &[&[u8]]) -> Result<(Vec<(String, String)>, bool), TooLarge> {
        let mut p = Parser::new(limit);
        let mut out = Vec::new();
        for c in chunks {
            p.feed(c, |e| {
                out.push((
                    String::from_utf8_lossy(e.kind).into_owned(),
                    String::from_utf8_lossy(e.data).into_owned(),
                ));
                ControlFlow::Continue(())
            })?;
        }
        Ok((out, p.in_event()))
    }

    fn ev(kind: &str, data: &str) -> (String, String) {
        (kind.to_string(), data.to_string())
    }

    #[test]
    fn events_split_anywhere_give_the_same_result() {
        let text = b": keep-alive\r\ndata: {\"a\":1}\r\n\r\nevent: error\ndata:x\ndata:  y\n\nid: 7\nretry: 10\ndata\n\n\rdata: cr\r\rdata: [DONE]\n\n";
        let want = vec![
            ev("", "{\"a\":1}"),
            ev("error", "x\n y"),
            ev("", ""),
            ev("", "cr"),
            ev("", "[DONE]"),
        ];
        assert_eq!(events(1 << 20, &[text]).unwrap(), (want.clone(), false));
        // every split point, and byte by byte
        for i in 0..text.len() {
            let (a, b) = text.split_at(i);
            assert_eq!(
                events(1 << 20, &[a, b]).unwrap(),
                (want.clone(), false),
                "split at {i}"
            );
        }
        let bytes: Vec<&[u8]> = text.chunks(1).collect();
        assert_eq!(events(1 << 20, &bytes).unwrap(), (want, false));
    }

    #[test]
    fn an_event_without_data_is_not_dispatched_and_a_cut_event_is_seen() {
        assert_eq!(
            events(100, &[b"event: x\n\n\n\n"]).unwrap(),
            (vec![], false)
        );
        assert_eq!(events(100, &[b"id: 1\n\n"]).unwrap(), (vec![], false));
        // a stream cut inside an event
        assert_eq!(
            events(100, &[b"data: 1\n\ndata: 2\n"]).unwrap(),
            (vec![ev("", "1")], true)
        );
        assert_eq!(
            events(100, &[b"data: 1\n\ndat"]).unwrap(),
            (vec![ev("", "1")], true)
        );
        assert_eq!(events(100, &[b": ping"]).unwrap(), (vec![], true));
        assert_eq!(
            events(100, &[b"data: 1\r\n\r"]).unwrap(),
            (vec![ev("", "1")], false)
        );
    }

    #[test]
    fn one_event_is_bounded_but_a_stream_is_not() {
        // an event of 16 bytes (line ends not counted)
        let one = b"data: 0123456789\r\n\r\n";
        assert!(events(16, &[one]).is_ok());
        assert_eq!(events(15, &[one]), Err(TooLarge));
        // many events of 16 bytes each under a limit of 16
        let many: Vec<&[u8]> = std::iter::repeat_n(&one[..], 1000).collect();
        assert_eq!(events(16, &many).unwrap().0.len(), 1000);
        // the lines of one event add up, split or not
        assert_eq!(
            events(20, &[b"data: 012345\ndata: 6789\n\n"]),
            Err(TooLarge)
        );
        assert!(events(22, &[b"data: 012345\ndata: 6789\n\n"]).is_ok());
        assert_eq!(
            events(20, &[b"data: 012345\n", b"data: 67", b"89\n\n"]),
            Err(TooLarge)
        );
        // an endless line without data is refused too, comments are skipped
        let long = vec![b'x'; 100];
        assert_eq!(events(10, &[&long[..]]), Err(TooLarge));
        let mut comment = b":".to_vec();
        comment.extend_from_slice(&long);
        comment.extend_from_slice(b"\ndata: ok\n\n");
        assert_eq!(events(10, &[&comment]).unwrap().0, vec![ev("", "ok")]);
    }

    #[test]
    fn the_callback_can_stop_the_stream() {
        let mut p = Parser::new(100);
        let mut seen = 0;
        let r = p.feed(b"data: 1\n\ndata: 2\n\ndata: 3\n\n", |_| {
            seen += 1;
            if seen == 2 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        assert_eq!(r, Ok(Fed::Stopped));
        assert_eq!(seen, 2);
    }
}
