//! What one request brought back, for every kind of endpoint: the outcome,
//! the arrival time of each response (one for a plain request, any number
//! for a decoupled model or a streamed generation), the client's own time,
//! and the output tokens where the server counts them; and the signal that
//! cancels requests still streaming when a level ends.

use super::client::{ClientTime, ErrorKind};
use std::time::Instant;
use tokio::sync::watch;

/// One request's result.
#[derive(Debug, Clone)]
pub struct Exchange {
    /// `Err(ErrorKind::Cancelled)` for a request cut off at the end of a
    /// level: counted apart, not as an error.
    pub result: Result<(), ErrorKind>,
    /// The client's own share (send and receive), for successful requests.
    pub time: ClientTime,
    /// When each response that carries output arrived, in order. An empty
    /// final response (only the end-of-request flag) is not one; a failed
    /// request keeps the responses that came before the failure.
    pub responses: Vec<Instant>,
    /// Output tokens of the request, where known.
    pub tokens: Option<Tokens>,
}

/// The most responses one request may bring: their arrival times are kept
/// until the request ends, so a server streaming tiny replies or events
/// without end must not fill memory before `--timeout` (16 MiB of times per
/// request in flight). Far above what a generation streams; one more makes
/// the request `malformed`.
pub const MAX_RESPONSES: usize = 1 << 20;

/// Keeps the arrival of one more response of a request, within
/// [`MAX_RESPONSES`].
pub fn push_response(responses: &mut Vec<Instant>, at: Instant) -> Result<(), ErrorKind> {
    if responses.len() >= MAX_RESPONSES {
        return Err(ErrorKind::Malformed);
    }
    responses.push(at);
    Ok(())
}

/// The output tokens of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tokens {
    pub count: u64,
    /// From the server's `usage`; false when the responses (chunks) were
    /// counted instead.
    pub from_usage: bool,
}

impl Exchange {
    /// A request with a single answer (or none, when it failed) arriving
    /// at `at`.
    pub fn single(result: Result<ClientTime, ErrorKind>, at: Instant) -> Self {
        match result {
            Ok(time) => Exchange {
                result: Ok(()),
                time,
                responses: vec![at],
                tokens: None,
            },
            Err(k) => Exchange::failed(k, Vec::new()),
        }
    }

    /// A failed request, with the responses that came before the failure.
    pub fn failed(kind: ErrorKind, responses: Vec<Instant>) -> Self {
        Exchange {
            result: Err(kind),
            time: ClientTime::default(),
            responses,
            tokens: None,
        }
    }

    /// When the request ended for its latency: its last response, else
    /// `end` (a request whose only answer was an empty final response).
    pub fn last(&self, end: Instant) -> Instant {
        self.responses.last().copied().unwrap_or(end)
    }

    pub fn is_cancelled(&self) -> bool {
        matches!(self.result, Err(ErrorKind::Cancelled))
    }
}

/// Fires once, when the level's measurement ends: requests still streaming
/// then stop (the stream or connection is closed) and end as
/// [`ErrorKind::Cancelled`].
#[derive(Debug)]
pub struct Canceller(watch::Sender<bool>);

/// The receiving side of a [`Canceller`], cloned into every request.
#[derive(Debug, Clone)]
pub struct Cancel(Option<watch::Receiver<bool>>);

impl Canceller {
    pub fn new() -> (Canceller, Cancel) {
        let (tx, rx) = watch::channel(false);
        (Canceller(tx), Cancel(Some(rx)))
    }

    pub fn cancel(&self) {
        let _ = self.0.send(true);
    }
}

impl Cancel {
    /// A signal that never fires.
    pub fn never() -> Cancel {
        Cancel(None)
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.as_ref().is_some_and(|r| *r.borrow())
    }

    /// Completes when the signal fires (never for [`Cancel::never`], or
    /// when its [`Canceller`] is gone without firing).
    pub async fn cancelled(&self) {
        if let Some(r) = &self.0 {
            let mut r = r.clone();
            if r.wait_for(|v| *v).await.is_ok() {
                return;
            }
        }
        std::future::pending::<()>().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn cancel_fires_once_for_every_clone() {
        let (canceller, cancel) = Canceller::new();
        let other = cancel.clone();
        assert!(!cancel.is_cancelled());
        let waiting = tokio::spawn(async move { other.cancelled().await });
        canceller.cancel();
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("the waiting request is woken")
            .unwrap();
        assert!(cancel.is_cancelled());
        // a request that starts after the signal sees it at once
        tokio::time::timeout(Duration::from_secs(5), cancel.cancelled())
            .await
            .expect("already cancelled");
    }

    #[tokio::test]
    async fn never_never_fires() {
        let never = Cancel::never();
        assert!(!never.is_cancelled());
        let r = tokio::time::timeout(Duration::from_millis(20), never.cancelled()).await;
        assert!(r.is_err());
        let (canceller, cancel) = Canceller::new();
        drop(canceller);
        let r = tokio::time::timeout(Duration::from_millis(20), cancel.cancelled()).await;
        assert!(r.is_err(), "a dropped canceller did not fire");
    }

    #[test]
    fn responses_per_request_are_bounded() {
        let at = Instant::now();
        let mut r = vec![at; MAX_RESPONSES - 1];
        assert_eq!(push_response(&mut r, at), Ok(()));
        assert_eq!(r.len(), MAX_RESPONSES);
        assert_eq!(push_response(&mut r, at), Err(ErrorKind::Malformed));
        assert_eq!(r.len(), MAX_RESPONSES);
    }

    #[test]
    fn latency_ends_at_the_last_response() {
        let t = Instant::now();
        let later = t + Duration::from_millis(5);
        let e = Exchange::single(Ok(ClientTime::default()), t);
        assert_eq!(e.last(later), t);
        let e = Exchange::failed(ErrorKind::StreamIncomplete, Vec::new());
        assert_eq!(e.last(later), later);
        assert!(!e.is_cancelled());
        assert!(Exchange::failed(ErrorKind::Cancelled, vec![t]).is_cancelled());
    }
}
