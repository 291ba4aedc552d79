//! TLS for `perf`: `https://` URLs over HTTP and TLS gRPC
//! (`--ssl-https-*`, `--ssl-grpc-*`, perf_analyzer's flags with its
//! meaning, docs/spec/cli.md "perf: TLS").
//!
//! One place opens every connection, plain or TLS: [`connect`]. The HTTP
//! pool (inference, discovery, generative endpoints) and the gRPC channel
//! (through [`Connector`], a tower service) both call it, so every request
//! of a run goes through the same rustls client config.
//!
//! Default trust is the system's certificate store (rustls-native-certs),
//! plus the CA file given. Why the system store and not a compiled-in
//! Mozilla list (webpki-roots): perf_analyzer's clients (libcurl, gRPC)
//! trust what the machine trusts, so an internal CA installed there works
//! here unchanged, and `SSL_CERT_FILE` / `SSL_CERT_DIR` are honoured.

use super::client::ErrorKind;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// How a certificate or key file is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Encoding {
    #[default]
    Pem,
    Der,
}

/// What the `--ssl-https-*` flags ask for (applies to `https://` URLs).
#[derive(Debug, Clone)]
pub struct HttpsOptions {
    /// `--ssl-https-verify-peer`: check the certificate chain.
    pub verify_peer: bool,
    /// `--ssl-https-verify-host`: 0 skips the name check; 1 and 2 check it
    /// (as libcurl does today, 1 means 2).
    pub verify_host: u8,
    pub ca_file: Option<PathBuf>,
    pub client_cert: Option<(PathBuf, Encoding)>,
    pub private_key: Option<(PathBuf, Encoding)>,
}

impl Default for HttpsOptions {
    fn default() -> Self {
        HttpsOptions {
            verify_peer: true,
            verify_host: 2,
            ca_file: None,
            client_cert: None,
            private_key: None,
        }
    }
}

/// What the `--ssl-grpc-*` flags ask for.
#[derive(Debug, Clone, Default)]
pub struct GrpcTlsOptions {
    /// `--ssl-grpc-use-ssl` (an `https://` URL also turns TLS on).
    pub use_ssl: bool,
    pub root_certs: Option<PathBuf>,
    pub private_key: Option<PathBuf>,
    pub cert_chain: Option<PathBuf>,
}

/// Every TLS flag of `perf`.
#[derive(Debug, Clone, Default)]
pub struct TlsOptions {
    pub https: HttpsOptions,
    pub grpc: GrpcTlsOptions,
}

impl TlsOptions {
    /// Whether any `--ssl-grpc-*` file was given.
    fn grpc_files(&self) -> bool {
        let g = &self.grpc;
        g.root_certs.is_some() || g.private_key.is_some() || g.cert_chain.is_some()
    }
}

/// A rustls client config for one protocol, with the flag names its
/// messages point to.
#[derive(Clone)]
pub struct Connector {
    config: Arc<ClientConfig>,
    /// The flag that adds a CA (named when the issuer is unknown).
    ca_flag: &'static str,
    /// The flag that adds a client certificate.
    cert_flag: &'static str,
}

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connector")
            .field("alpn", &self.config.alpn_protocols)
            .finish_non_exhaustive()
    }
}

/// The TLS of a run: the connector of its protocol and the URLs it is for.
#[derive(Debug, Clone, Default)]
pub struct Tls {
    connector: Option<Connector>,
    /// `--ssl-grpc-use-ssl`: every URL, not only the `https://` ones.
    every_url: bool,
}

impl Tls {
    /// Reads the certificate and key files once for the whole run (a
    /// missing or malformed file is a usage error naming it and its flag).
    pub fn new(opts: &TlsOptions, grpc: bool, urls: &[String]) -> Result<Self, String> {
        if grpc {
            Ok(Tls {
                connector: Connector::for_grpc(opts, urls)?,
                every_url: opts.grpc.use_ssl,
            })
        } else {
            Ok(Tls {
                connector: Connector::for_http(opts, urls)?,
                every_url: false,
            })
        }
    }

    /// The connector for the server at `url`, `None` for plain text.
    pub fn for_url(&self, url: &str) -> Option<&Connector> {
        self.connector
            .as_ref()
            .filter(|_| self.every_url || is_https(url))
    }
}

/// Whether a URL of `-u` asks for TLS.
pub fn is_https(url: &str) -> bool {
    url.get(..8)
        .is_some_and(|s| s.eq_ignore_ascii_case("https://"))
}

impl Connector {
    /// The connector for `https://` URLs over HTTP/1.1, or `None` when no
    /// URL asks for TLS.
    pub fn for_http(opts: &TlsOptions, urls: &[String]) -> Result<Option<Self>, String> {
        if !urls.iter().any(|u| is_https(u)) {
            return Ok(None);
        }
        let h = &opts.https;
        let identity = match (&h.client_cert, &h.private_key) {
            (None, None) => None,
            (Some((_, Encoding::Der)), None) => {
                return Err(
                    "--ssl-https-client-certificate-file in DER needs --ssl-https-private-key-file"
                        .into(),
                )
            }
            // as libcurl: without a key file, the key is in the certificate file
            (Some((cert, ce)), None) => Some(identity(
                cert,
                *ce,
                cert,
                Encoding::Pem,
                "--ssl-https-client-certificate-file",
                "--ssl-https-private-key-file",
            )?),
            (None, Some(_)) => {
                return Err(
                    "--ssl-https-private-key-file needs --ssl-https-client-certificate-file".into(),
                )
            }
            (Some((cert, ce)), Some((key, ke))) => Some(identity(
                cert,
                *ce,
                key,
                *ke,
                "--ssl-https-client-certificate-file",
                "--ssl-https-private-key-file",
            )?),
        };
        let trust = Trust {
            verify_peer: h.verify_peer,
            verify_host: h.verify_host != 0,
            ca_file: h.ca_file.as_deref(),
            ca_flag: "--ssl-https-ca-certificates-file",
        };
        Ok(Some(Connector {
            config: Arc::new(client_config(&trust, identity, b"http/1.1")?),
            ca_flag: "--ssl-https-ca-certificates-file",
            cert_flag: "--ssl-https-client-certificate-file",
        }))
    }

    /// The connector for gRPC over TLS (`--ssl-grpc-use-ssl` or an
    /// `https://` URL), or `None` for plain gRPC.
    pub fn for_grpc(opts: &TlsOptions, urls: &[String]) -> Result<Option<Self>, String> {
        let g = &opts.grpc;
        if !g.use_ssl && !urls.iter().any(|u| is_https(u)) {
            if opts.grpc_files() {
                return Err(
                    "the --ssl-grpc-* files need --ssl-grpc-use-ssl (or an https:// URL)".into(),
                );
            }
            return Ok(None);
        }
        let identity = match (&g.cert_chain, &g.private_key) {
            (None, None) => None,
            (Some(_), None) => {
                return Err(
                    "--ssl-grpc-certificate-chain-file needs --ssl-grpc-private-key-file".into(),
                )
            }
            (None, Some(_)) => {
                return Err(
                    "--ssl-grpc-private-key-file needs --ssl-grpc-certificate-chain-file".into(),
                )
            }
            (Some(cert), Some(key)) => Some(identity(
                cert,
                Encoding::Pem,
                key,
                Encoding::Pem,
                "--ssl-grpc-certificate-chain-file",
                "--ssl-grpc-private-key-file",
            )?),
        };
        let trust = Trust {
            verify_peer: true,
            verify_host: true,
            ca_file: g.root_certs.as_deref(),
            ca_flag: "--ssl-grpc-root-certifications-file",
        };
        Ok(Some(Connector {
            config: Arc::new(client_config(&trust, identity, b"h2")?),
            ca_flag: "--ssl-grpc-root-certifications-file",
            cert_flag: "--ssl-grpc-certificate-chain-file",
        }))
    }

    /// A TLS handshake on `tcp` with the server named by `authority`
    /// (`host:port`); a failure says why, with the flag that fixes it.
    async fn handshake(
        &self,
        authority: &str,
        tcp: TcpStream,
    ) -> Result<TlsStream<TcpStream>, ErrorKind> {
        let name = server_name(authority).map_err(ErrorKind::Tls)?;
        tokio_rustls::TlsConnector::from(self.config.clone())
            .connect(name, tcp)
            .await
            .map_err(|e| match rustls_error(&e) {
                Some(r) => ErrorKind::Tls(self.explain(authority, r)),
                // the server closed or reset the connection mid-handshake
                None => ErrorKind::Tls(format!(
                    "the TLS handshake with {authority} failed: {e} (is it a TLS port?)"
                )),
            })
    }

    /// A TLS failure that came after the handshake (a TLS 1.3 server
    /// refuses a missing client certificate then), as an error kind with
    /// its sentence; `None` when `e` is no TLS failure.
    pub fn kind_after_handshake(
        &self,
        authority: &str,
        e: &(dyn std::error::Error + 'static),
    ) -> Option<ErrorKind> {
        rustls_error(e).map(|r| ErrorKind::Tls(self.explain(authority, r)))
    }

    /// A sentence for a TLS failure with the server at `authority`.
    pub fn explain(&self, authority: &str, e: &rustls::Error) -> String {
        explain(authority, e, self.ca_flag, self.cert_flag)
    }
}

/// A sentence for a TLS failure with the server at `authority`; `ca_flag`
/// and `cert_flag` are the flags that fix an unknown issuer or a missing
/// client certificate.
fn explain(authority: &str, e: &rustls::Error, ca_flag: &str, cert_flag: &str) -> String {
    use rustls::AlertDescription as A;
    match e {
        rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer) => format!(
            "the certificate of {authority} is not signed by a trusted CA (unknown issuer): give its CA with {ca_flag}{}",
            if ca_flag.starts_with("--ssl-https") {
                ", or skip the check with --ssl-https-verify-peer 0"
            } else {
                ""
            }
        ),
        rustls::Error::InvalidCertificate(CertificateError::NotValidForNameContext {
            expected,
            presented,
        }) => format!(
            "the certificate of {authority} is not valid for the name {:?} (it names {})",
            expected.to_str(),
            if presented.is_empty() {
                "nothing".to_string()
            } else {
                // rustls shows them as `DnsName("host")`: the names alone
                presented
                    .iter()
                    .map(|p| p.split('"').nth(1).unwrap_or(p))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ),
        rustls::Error::InvalidCertificate(CertificateError::NotValidForName) => {
            format!("the certificate of {authority} is not valid for its name")
        }
        rustls::Error::InvalidCertificate(c) => {
            format!("the certificate of {authority} is refused: {c:?}")
        }
        rustls::Error::AlertReceived(A::CertificateRequired)
        | rustls::Error::AlertReceived(A::HandshakeFailure)
            if !cert_flag.is_empty() =>
        {
            format!(
                "the TLS handshake with {authority} failed: the server sent {e}; does it require a client certificate ({cert_flag})?"
            )
        }
        _ => format!("the TLS handshake with {authority} failed: {e}"),
    }
}

/// A sentence for a TLS failure of a gRPC call after the handshake.
pub fn explain_grpc(e: &rustls::Error) -> String {
    explain(
        "the gRPC server",
        e,
        "--ssl-grpc-root-certifications-file",
        "--ssl-grpc-certificate-chain-file",
    )
}

/// A sentence for a TLS alert the gRPC server sent after the handshake,
/// known only by its name (`CertificateRequired`).
pub fn explain_grpc_alert(alert: &str) -> String {
    format!(
        "the gRPC server ended the TLS connection with the alert {alert}; does it require a client certificate (--ssl-grpc-certificate-chain-file and --ssl-grpc-private-key-file)?"
    )
}

/// A rustls error inside an error chain (tokio-rustls wraps it in an
/// `io::Error`, hyper and tonic wrap that again).
pub fn rustls_error<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(r) = err.downcast_ref::<rustls::Error>() {
            return Some(r);
        }
        // `io::Error::source` skips the error it wraps: look at it first
        if let Some(inner) = err
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            if let Some(r) = rustls_error(inner) {
                return Some(r);
            }
        }
        cur = err.source();
    }
    None
}

/// The TLS server name (SNI and the certificate check) of `host:port`.
fn server_name(authority: &str) -> Result<ServerName<'static>, String> {
    let host = super::client::host_of(authority)
        .trim_start_matches('[')
        .trim_end_matches(']');
    ServerName::try_from(host.to_string())
        .map_err(|_| format!("{authority}: '{host}' is not a host name TLS can check"))
}

/// Which certificates are trusted and what is checked.
struct Trust<'a> {
    verify_peer: bool,
    verify_host: bool,
    ca_file: Option<&'a Path>,
    ca_flag: &'static str,
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The client config: the trust, the client certificate (`identity`) and
/// the ALPN protocol (`h2` for gRPC, which gRPC servers require).
fn client_config(
    trust: &Trust<'_>,
    identity: Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>,
    alpn: &[u8],
) -> Result<ClientConfig, String> {
    let provider = provider();
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?;
    let verifier: Arc<dyn ServerCertVerifier> = if trust.verify_peer {
        let roots = roots(trust)?;
        let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .build()
            .map_err(|e| format!("TLS: no certificate to trust ({e})"))?;
        if trust.verify_host {
            webpki
        } else {
            Arc::new(AnyName(webpki))
        }
    } else {
        Arc::new(NoCheck(provider))
    };
    let builder = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let mut config = match identity {
        Some((certs, key)) => builder
            .with_client_auth_cert(certs, key)
            .map_err(|e| format!("the client certificate and key do not go together: {e}"))?,
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![alpn.to_vec()];
    Ok(config)
}

/// The system's certificates and those of the CA file.
fn roots(trust: &Trust<'_>) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    // an unreadable system store leaves only the CA file: a server it does
    // not cover then fails with "unknown issuer", which names the flag
    let native = rustls_native_certs::load_native_certs();
    roots.add_parsable_certificates(native.certs);
    if let Some(path) = trust.ca_file {
        let certs = read_certs(path, Encoding::Pem, trust.ca_flag)?;
        for c in certs {
            roots.add(c).map_err(|e| {
                format!(
                    "{}: a certificate of {} cannot be a CA: {e}",
                    crate::text::display::path(path),
                    trust.ca_flag
                )
            })?;
        }
    }
    Ok(roots)
}

/// Reads a file given to `flag`, naming both in the error.
fn read(path: &Path, flag: &str) -> Result<Vec<u8>, String> {
    crate::files::read_file(path).map_err(|e| {
        format!(
            "{flag} {}: {}",
            crate::text::display::path(path),
            crate::files::io_message(&e)
        )
    })
}

/// The certificates of a file (PEM: every `CERTIFICATE` section; DER: one
/// certificate).
fn read_certs(
    path: &Path,
    encoding: Encoding,
    flag: &str,
) -> Result<Vec<CertificateDer<'static>>, String> {
    let bytes = read(path, flag)?;
    let shown = crate::text::display::path(path);
    if encoding == Encoding::Der {
        return Ok(vec![CertificateDer::from(bytes)]);
    }
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{flag} {shown}: not a PEM file: {e}"))?;
    if certs.is_empty() {
        return Err(format!(
            "{flag} {shown}: no PEM certificate (-----BEGIN CERTIFICATE-----) in the file"
        ));
    }
    Ok(certs)
}

/// The private key of a file (PEM: the first key section of any kind;
/// DER: PKCS#8, SEC1 or PKCS#1).
fn read_key(path: &Path, encoding: Encoding, flag: &str) -> Result<PrivateKeyDer<'static>, String> {
    let bytes = read(path, flag)?;
    let shown = crate::text::display::path(path);
    match encoding {
        Encoding::Der => PrivateKeyDer::try_from(bytes)
            .map_err(|e| format!("{flag} {shown}: not a DER private key: {e}")),
        Encoding::Pem => PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| match e {
            rustls::pki_types::pem::Error::NoItemsFound => format!(
                "{flag} {shown}: no PEM private key (-----BEGIN PRIVATE KEY-----) in the file"
            ),
            e => format!("{flag} {shown}: not a PEM file: {e}"),
        }),
    }
}

/// A client certificate chain and its key.
fn identity(
    cert: &Path,
    cert_encoding: Encoding,
    key: &Path,
    key_encoding: Encoding,
    cert_flag: &str,
    key_flag: &str,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), String> {
    let certs = read_certs(cert, cert_encoding, cert_flag)?;
    let key = read_key(key, key_encoding, key_flag)?;
    Ok((certs, key))
}

/// `--ssl-https-verify-host 0`: the chain is checked, the name is not.
#[derive(Debug)]
struct AnyName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            // the chain is checked before the name: only the name failed
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            r => r,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// `--ssl-https-verify-peer 0`: any certificate is accepted (the
/// handshake's signatures are still checked against it, so the connection
/// is encrypted, but to a server nobody vouched for).
#[derive(Debug)]
struct NoCheck(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for NoCheck {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// A connection, plain or TLS.
pub enum Io {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

/// Opens a connection to `authority` (`host:port`), with a TLS handshake
/// when `tls` is given: the one place every `perf` connection is made.
pub async fn connect(authority: &str, tls: Option<&Connector>) -> Result<Io, ErrorKind> {
    let tcp = TcpStream::connect(authority)
        .await
        .map_err(|_| ErrorKind::Connect)?;
    let _ = tcp.set_nodelay(true);
    match tls {
        None => Ok(Io::Plain(tcp)),
        Some(c) => Ok(Io::Tls(Box::new(c.handshake(authority, tcp).await?))),
    }
}

impl AsyncRead for Io {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Io {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Io::Plain(s) => s.is_write_vectored(),
            Io::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_flush(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// A connection failure for tonic: the error kind, found again by
/// [`super::grpc::kind_of`] in the status's source chain.
#[derive(Debug)]
pub struct ConnectFailure(pub ErrorKind);

impl std::fmt::Display for ConnectFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            ErrorKind::Tls(m) => f.write_str(m),
            _ => f.write_str("tcp connect error"),
        }
    }
}

impl std::error::Error for ConnectFailure {}

/// The gRPC channel's connector: every connection through [`connect`],
/// to `authority` whatever the URI says.
pub fn grpc_connector(
    authority: String,
    tls: Option<Connector>,
) -> impl tower::Service<
    hyper::Uri,
    Response = hyper_util::rt::TokioIo<Io>,
    Error = ConnectFailure,
    Future = impl std::future::Future<Output = Result<hyper_util::rt::TokioIo<Io>, ConnectFailure>>
                 + Send,
> + Send
       + Clone
       + 'static {
    let shared = Arc::new((authority, tls));
    tower::service_fn(move |_uri: hyper::Uri| {
        let shared = shared.clone();
        async move {
            connect(&shared.0, shared.1.as_ref())
                .await
                .map(hyper_util::rt::TokioIo::new)
                .map_err(ConnectFailure)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_for_tls() {
        assert!(matches!(
            server_name("localhost:8000"),
            Ok(ServerName::DnsName(_))
        ));
        assert!(matches!(
            server_name("127.0.0.1:8000"),
            Ok(ServerName::IpAddress(_))
        ));
        assert!(matches!(
            server_name("[::1]:8001"),
            Ok(ServerName::IpAddress(_))
        ));
        assert!(server_name("bad_name!:1").is_err());
        assert!(is_https("HTTPS://h:1"));
        assert!(!is_https("http://h:1"));
        assert!(!is_https("h"));
    }

    #[test]
    fn grpc_files_without_tls_are_refused() {
        let mut o = TlsOptions::default();
        assert!(Connector::for_grpc(&o, &["h:1".into()]).unwrap().is_none());
        o.grpc.root_certs = Some("ca.pem".into());
        let e = Connector::for_grpc(&o, &["h:1".into()]).unwrap_err();
        assert!(e.contains("--ssl-grpc-use-ssl"), "{e}");
        assert!(Connector::for_http(&o, &["h:1".into()]).unwrap().is_none());
    }

    #[test]
    fn missing_files_are_named_with_their_flag() {
        let mut o = TlsOptions::default();
        o.https.ca_file = Some("no/such/ca.pem".into());
        let e = Connector::for_http(&o, &["https://h:1".into()]).unwrap_err();
        assert!(
            e.starts_with("--ssl-https-ca-certificates-file no/such/ca.pem: no such file"),
            "{e}"
        );
    }
}
