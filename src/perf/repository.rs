//! Triton's model repository extension (docs/spec/v2-protocol.md section
//! 1): loading a model with a config given in the request, waiting until
//! it is ready, and unloading it. `tune --verify` loads each config it
//! measures this way into a Triton started with
//! `--model-control-mode=explicit`.
//!
//! Blocking functions (each runs its own small runtime), like
//! [`super::load::run`]; errors are [`StartError`]s whose text quotes the
//! server's message raw: the caller escapes it when showing it.

use super::client::{Client, ClientConfig, Endpoint, DEFAULT_DISCOVERY_RESPONSE_BYTES};
use super::load::StartError;
use super::tls::{Tls, TlsOptions};
use bytes::Bytes;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// A Triton server over HTTP, as `tune`'s live steps reach it.
#[derive(Debug, Clone)]
pub struct Server {
    /// `HOST:PORT`, `http://...` or `https://...` (as `perf -u`).
    pub url: String,
    /// Extra headers on every request (as `perf -H`).
    pub headers: Vec<(String, String)>,
    /// Bounds each request (connecting, sending, the whole answer); a
    /// load waits for the model's load this long too.
    pub timeout: Duration,
    /// For an `https://` URL (as `perf --ssl-https-*`).
    pub tls: TlsOptions,
}

impl Server {
    /// The server at `url`, no headers, 60 s per request, default TLS
    /// checks.
    pub fn new(url: impl Into<String>) -> Self {
        Server {
            url: url.into(),
            headers: Vec::new(),
            timeout: Duration::from_secs(60),
            tls: TlsOptions::default(),
        }
    }

    /// An HTTP client of the server (nothing sent yet).
    pub(super) fn client(&self) -> Result<Client, StartError> {
        let tls = Tls::new(&self.tls, false, std::slice::from_ref(&self.url))
            .map_err(StartError::Usage)?;
        Ok(Client::new(ClientConfig {
            endpoint: Endpoint::parse(&self.url).map_err(StartError::Usage)?,
            headers: self.headers.clone(),
            timeout: self.timeout,
            max_response_bytes: DEFAULT_DISCOVERY_RESPONSE_BYTES,
            tls: tls.for_url(&self.url).cloned(),
        }))
    }
}

/// A small runtime for the blocking functions of `tune`'s live steps.
pub(super) fn runtime() -> Result<tokio::runtime::Runtime, StartError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| StartError::Unreachable(format!("cannot start the async runtime: {e}")))
}

/// The body of a load request: the config (Triton's JSON form of a
/// ModelConfig, as `convert` writes it) as the string parameter `config`,
/// which Triton uses instead of the model directory's `config.pbtxt`;
/// without a config, no parameter (the directory's own).
pub fn load_body(config_json: Option<&str>) -> String {
    match config_json {
        Some(c) => json!({"parameters": {"config": c}}).to_string(),
        None => "{}".to_string(),
    }
}

/// How often readiness is asked for while waiting.
const POLL: Duration = Duration::from_millis(50);

/// `/v2/models/M/ready`: whether the model is ready (HTTP 200), with the
/// status and the server's text when not.
pub(super) async fn ready(c: &Client, model: &str) -> Result<Result<(), String>, StartError> {
    let (status, text) = c
        .get_status(&format!("/v2/models/{model}/ready"))
        .await
        .map_err(StartError::Unreachable)?;
    Ok(if status == 200 {
        Ok(())
    } else if text.is_empty() {
        Err(format!("HTTP {status}"))
    } else {
        Err(format!("HTTP {status}: {text}"))
    })
}

/// Loads (or reloads) `model` with `config_json` (see [`load_body`]) and
/// waits until it is ready, at most the server's timeout. Triton answers
/// a load once it is done; the wait covers servers that answer sooner.
pub fn load_model(
    server: &Server,
    model: &str,
    config_json: Option<&str>,
) -> Result<(), StartError> {
    let c = server.client()?;
    runtime()?.block_on(async {
        let at = &c.config().endpoint.authority;
        let (status, text) = c
            .post_json(
                &format!("/v2/repository/models/{model}/load"),
                Bytes::from(load_body(config_json)),
            )
            .await
            .map_err(StartError::Unreachable)?;
        if status != 200 {
            return Err(StartError::Unreachable(format!(
                "the server at {at} did not load model '{model}': HTTP {status}: {text}"
            )));
        }
        let start = Instant::now();
        loop {
            match ready(&c, model).await? {
                Ok(()) => return Ok(()),
                Err(why) if start.elapsed() >= server.timeout => {
                    return Err(StartError::Unreachable(format!(
                        "the server at {at} loaded model '{model}' but it is not ready after {} ms ({why})",
                        server.timeout.as_millis()
                    )))
                }
                Err(_) => tokio::time::sleep(POLL).await,
            }
        }
    })
}

/// What a signal must load back: `tune --verify` loads candidate configs
/// into a server and owes it the model's own config at the end.
static RESTORE: std::sync::Mutex<Option<(Server, String, String)>> = std::sync::Mutex::new(None);

/// Until [`forget_restore`], a signal loads `config_json` back into
/// `model` at `server` ([`restore_on_signal`]).
pub fn restore_on_signal_later(server: &Server, model: &str, config_json: &str) {
    crate::interrupt::arm();
    if let Ok(mut r) = RESTORE.lock() {
        *r = Some((server.clone(), model.to_string(), config_json.to_string()));
    }
}

/// The config was loaded back (or nothing was changed): nothing to do on
/// a signal.
pub fn forget_restore() {
    if let Ok(mut r) = RESTORE.lock() {
        *r = None;
    }
}

/// On a signal: loads back the config [`restore_on_signal_later`] noted,
/// waiting at most 30 s. Called from the signal thread of `main.rs` before
/// the process exits; gives whether a config was loaded back (`None`:
/// there was nothing to do) and the model's name.
pub fn restore_on_signal() -> Option<(String, bool)> {
    let (mut server, model, json) = RESTORE.lock().ok()?.take()?;
    server.timeout = server.timeout.min(Duration::from_secs(30));
    let done = load_model(&server, &model, Some(&json)).is_ok();
    Some((model, done))
}

/// Unloads `model` and waits until it is no longer ready, at most the
/// server's timeout.
pub fn unload_model(server: &Server, model: &str) -> Result<(), StartError> {
    let c = server.client()?;
    runtime()?.block_on(async {
        let at = &c.config().endpoint.authority;
        let (status, text) = c
            .post_json(
                &format!("/v2/repository/models/{model}/unload"),
                Bytes::from_static(b"{}"),
            )
            .await
            .map_err(StartError::Unreachable)?;
        if status != 200 {
            return Err(StartError::Unreachable(format!(
                "the server at {at} did not unload model '{model}': HTTP {status}: {text}"
            )));
        }
        let start = Instant::now();
        while ready(&c, model).await?.is_ok() {
            if start.elapsed() >= server.timeout {
                return Err(StartError::Unreachable(format!(
                    "the server at {at} still has model '{model}' ready {} ms after unloading it",
                    server.timeout.as_millis()
                )));
            }
            tokio::time::sleep(POLL).await;
        }
        Ok(())
    })
}

/// The config the server holds for `model` (`/v2/models/M/config`, Triton's
/// JSON form with its defaults filled in).
pub fn model_config(server: &Server, model: &str) -> Result<Value, StartError> {
    let c = server.client()?;
    runtime()?.block_on(async {
        match c
            .get_json(&format!("/v2/models/{model}/config"))
            .await
            .map_err(StartError::Unreachable)?
        {
            Some(v) => Ok(v),
            None => {
                let (status, text) = c
                    .get_status(&format!("/v2/models/{model}/config"))
                    .await
                    .map_err(StartError::Unreachable)?;
                Err(StartError::Unreachable(format!(
                    "the server at {} gives no config for model '{model}': HTTP {status}: {text}",
                    c.config().endpoint.authority
                )))
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_goes_as_a_string_parameter() {
        let cfg = "{\n  \"name\": \"m\",\n  \"max_batch_size\": 8\n}\n";
        let body: Value = serde_json::from_str(&load_body(Some(cfg))).unwrap();
        // a string holding the JSON text, not an object
        assert_eq!(body["parameters"]["config"].as_str(), Some(cfg));
        assert_eq!(body.as_object().unwrap().len(), 1);
        assert_eq!(load_body(None), "{}");
    }

    #[test]
    fn bad_urls_are_usage_errors() {
        let e = Server::new("ftp://h:1").client().err().unwrap();
        assert!(
            matches!(e, StartError::Usage(ref m) if m.contains("only http")),
            "{e}"
        );
    }
}
