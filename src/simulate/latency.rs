//! `--latency`: the execution time of a batch by its size.

use super::Error;
use crate::batching::{Latency, Settings};
use std::path::Path;

/// A specification (`1:2000,2:2400`, `2000+150*b`), or a file holding one
/// (one point or term per line, `#` comments allowed).
pub fn read_latency(spec: &str) -> Result<Latency, Error> {
    let path = Path::new(spec);
    if !spec.is_empty() && path.is_file() {
        let text = crate::files::read_file_to_string(path).map_err(|e| {
            Error::Input(format!(
                "{spec}: cannot read: {}",
                crate::files::io_message(&e)
            ))
        })?;
        let joined: Vec<&str> = text
            .lines()
            .map(|l| l.split('#').next().unwrap_or("").trim())
            .filter(|l| !l.is_empty())
            .collect();
        return Latency::parse(&joined.join(","))
            .map_err(|e| Error::Input(format!("{spec}: invalid latency: {e}")));
    }
    Latency::parse(spec).map_err(|e| Error::Usage(format!("--latency: {e}")))
}

/// The latency model must keep every batch time on the simulator's clock;
/// `setting` names the sweep setting checked, if any.
pub fn check_latency(
    latency: &Latency,
    settings: &Settings,
    setting: Option<&str>,
) -> Result<(), Error> {
    let largest = settings.max_batch_size.clamp(1, 4096);
    if let Some(b) = (1..=largest).find(|&b| latency.eval(b) > crate::trace::MAX_TIME_US) {
        return Err(Error::Usage(format!(
            "--latency: {} µs for a batch of {b} is too large (at most {}){}",
            latency.eval(b),
            crate::trace::MAX_TIME_US,
            setting.map_or(String::new(), |s| format!(" with {s}"))
        )));
    }
    Ok(())
}
