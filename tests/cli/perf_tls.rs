//! `tritonctl perf` over TLS: `https://` URLs and TLS gRPC. A CA, a
//! server certificate for `localhost` and 127.0.0.1 and a client
//! certificate are generated for each test (rcgen); a TLS terminator
//! (tokio-rustls) in front of the loopback responders of `perf.rs` (HTTP)
//! and `perf_grpc.rs` (gRPC) serves them, optionally requiring a client
//! certificate signed by the CA.

use crate::common::tritonctl;
use crate::perf::{triton_like, Responder};
use crate::perf_grpc::Server;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// The certificates of one test, as files.
struct Pki {
    dir: tempfile::TempDir,
    ca_der: CertificateDer<'static>,
    server: (CertificateDer<'static>, Vec<u8>),
    /// A server certificate for another name only.
    other: (CertificateDer<'static>, Vec<u8>),
}

impl Pki {
    fn new() -> Pki {
        let dir = tempfile::tempdir().unwrap();
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "tritonctl test CA");
        let ca_cert = ca_params.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(ca_params, ca_key);
        let leaf = |names: &[&str]| {
            let key = KeyPair::generate().unwrap();
            let params =
                CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                    .unwrap();
            let cert = params.signed_by(&key, &issuer).unwrap();
            (cert, key)
        };
        let (server, server_key) = leaf(&["localhost", "127.0.0.1"]);
        let (other, other_key) = leaf(&["other.example"]);
        let (client, client_key) = leaf(&["client.example"]);
        let write =
            |name: &str, bytes: &[u8]| std::fs::write(dir.path().join(name), bytes).unwrap();
        write("ca.pem", ca_cert.pem().as_bytes());
        write("client.pem", client.pem().as_bytes());
        write("client.key", client_key.serialize_pem().as_bytes());
        write("client.der", client.der());
        write("client-key.der", &client_key.serialize_der());
        // the certificate and its key in one file (as libcurl reads it
        // when no key file is given)
        write(
            "client-both.pem",
            format!("{}{}", client.pem(), client_key.serialize_pem()).as_bytes(),
        );
        write("garbage.pem", b"-----BEGIN CERTIFICATE-----\nnot base64!\n");
        Pki {
            ca_der: ca_cert.der().clone(),
            server: (server.der().clone(), server_key.serialize_der()),
            other: (other.der().clone(), other_key.serialize_der()),
            dir,
        }
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).to_str().unwrap().to_string()
    }
}

/// How the terminator serves.
struct Serve {
    /// The server certificate is `Pki::other` (for another name).
    other_name: bool,
    /// A client certificate signed by the test CA is required.
    client_auth: bool,
    /// ALPN: `h2` for gRPC.
    alpn: &'static [u8],
}

/// A TLS terminator on a free loopback port that forwards the plain bytes
/// to `backend` (a port on 127.0.0.1).
fn terminate(pki: &Pki, backend: u16, serve: Serve) -> u16 {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap();
    let builder = if serve.client_auth {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(pki.ca_der.clone()).unwrap();
        builder.with_client_cert_verifier(
            rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .unwrap(),
        )
    } else {
        builder.with_no_client_auth()
    };
    let (cert, key) = if serve.other_name {
        pki.other.clone()
    } else {
        pki.server.clone()
    };
    let mut config = builder
        .with_single_cert(
            vec![cert],
            PrivateKeyDer::try_from(key).expect("a generated key"),
        )
        .unwrap();
    config.alpn_protocols = vec![serve.alpn.to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let (ptx, prx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            ptx.send(l.local_addr().unwrap().port()).unwrap();
            loop {
                let Ok((tcp, _)) = l.accept().await else {
                    return;
                };
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let _ = tcp.set_nodelay(true);
                    let mut tls = match acceptor.accept(tcp).into_fallible().await {
                        Ok(tls) => tls,
                        // a refused client: read what it still sends before
                        // closing, as a server that lingers does (closing
                        // with unread data resets the connection, and the
                        // client may then never read the alert)
                        Err((_, mut tcp)) => {
                            use tokio::io::AsyncReadExt;
                            let mut buf = [0u8; 4096];
                            let drain = async {
                                while let Ok(n) = tcp.read(&mut buf).await {
                                    if n == 0 {
                                        break;
                                    }
                                }
                            };
                            let _ = tokio::time::timeout(Duration::from_secs(5), drain).await;
                            return;
                        }
                    };
                    let Ok(mut back) = tokio::net::TcpStream::connect(("127.0.0.1", backend)).await
                    else {
                        return;
                    };
                    let _ = back.set_nodelay(true);
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut back).await;
                });
            }
        });
    });
    prx.recv_timeout(Duration::from_secs(10)).unwrap()
}

fn port_of(url: &str) -> u16 {
    url.rsplit_once(':').unwrap().1.parse().unwrap()
}

/// `tritonctl perf` with 20 requests: exit status, the JSON document (when
/// there is one) and standard error.
fn perf(args: &[&str]) -> (i32, Option<Value>, String) {
    perf_env(args, &[])
}

fn perf_env(args: &[&str], env: &[(&str, &str)]) -> (i32, Option<Value>, String) {
    let mut a = vec!["-m", "m", "--request-count", "20", "--format", "json"];
    a.extend(args);
    let mut cmd = tritonctl();
    cmd.arg("perf").args(&a).timeout(Duration::from_secs(60));
    for (k, v) in env {
        cmd.env(k, v);
    }
    let (code, out, err) = cmd.run().parts();
    (code, serde_json::from_str(&out).ok(), err)
}

/// A run that measured its 20 requests without an error.
fn assert_measured(r: &(i32, Option<Value>, String)) {
    let (code, doc, err) = r;
    assert_eq!(*code, 0, "{err}");
    let doc = doc.as_ref().expect("a JSON report");
    let l = &doc["levels"][0];
    assert_eq!(l["requests"], 20, "{l:#}");
    assert_eq!(l["errors"], 0, "{l:#}");
}

#[test]
fn https_checks_the_server_certificate() {
    let pki = Pki::new();
    let r = Responder::start(triton_like());
    let port = terminate(
        &pki,
        port_of(&r.url()),
        Serve {
            other_name: false,
            client_auth: false,
            alpn: b"http/1.1",
        },
    );
    let ca = pki.path("ca.pem");
    // the CA file: by name and by address (the certificate has both)
    for host in ["localhost", "127.0.0.1"] {
        let url = format!("https://{host}:{port}");
        let run = perf(&["-u", &url, "--ssl-https-ca-certificates-file", &ca]);
        assert_measured(&run);
        assert_eq!(run.1.unwrap()["url"], format!("{host}:{port}"));
    }
    assert!(r.bad().is_empty(), "{:?}", r.bad());
    let url = format!("https://localhost:{port}");
    // without it: not trusted, said before the load starts (exit 2)
    let (code, _, err) = perf(&["-u", &url]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&format!("localhost:{port}")), "{err}");
    assert!(err.contains("unknown issuer"), "{err}");
    assert!(err.contains("--ssl-https-ca-certificates-file"), "{err}");
    // the system's store is trusted by default (SSL_CERT_FILE names it)
    assert_measured(&perf_env(&["-u", &url], &[("SSL_CERT_FILE", &ca)]));
    // verify-peer 0: any certificate, with a warning
    let run = perf(&["-u", &url, "--ssl-https-verify-peer", "0"]);
    assert_measured(&run);
    assert!(run.2.contains("--ssl-https-verify-peer 0"), "{}", run.2);
    // plain HTTP to a TLS port is not mistaken for a working server
    let (code, _, err) = perf(&["-u", &format!("127.0.0.1:{port}")]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn https_checks_the_host_name_unless_told_not_to() {
    let pki = Pki::new();
    let r = Responder::start(triton_like());
    let port = terminate(
        &pki,
        port_of(&r.url()),
        Serve {
            other_name: true,
            client_auth: false,
            alpn: b"http/1.1",
        },
    );
    let url = format!("https://localhost:{port}");
    let ca = pki.path("ca.pem");
    let (code, _, err) = perf(&["-u", &url, "--ssl-https-ca-certificates-file", &ca]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("not valid for the name \"localhost\" (it names other.example)"),
        "{err}"
    );
    // 1 is 2, as in libcurl
    let (code, _, err) = perf(&[
        "-u",
        &url,
        "--ssl-https-ca-certificates-file",
        &ca,
        "--ssl-https-verify-host",
        "1",
    ]);
    assert_eq!(code, 2, "{err}");
    // 0: the chain is still checked, the name is not
    let run = perf(&[
        "-u",
        &url,
        "--ssl-https-ca-certificates-file",
        &ca,
        "--ssl-https-verify-host",
        "0",
    ]);
    assert_measured(&run);
    let (code, _, err) = perf(&["-u", &url, "--ssl-https-verify-host", "0"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unknown issuer"), "{err}");
    let (code, _, err) = perf(&["-u", &url, "--ssl-https-verify-host", "3"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn https_client_certificates_in_pem_and_der() {
    let pki = Pki::new();
    let r = Responder::start(triton_like());
    let port = terminate(
        &pki,
        port_of(&r.url()),
        Serve {
            other_name: false,
            client_auth: true,
            alpn: b"http/1.1",
        },
    );
    let url = format!("https://localhost:{port}");
    let ca = pki.path("ca.pem");
    let base = ["-u", &url, "--ssl-https-ca-certificates-file", &ca];
    // no client certificate: the server refuses, and the message says why
    let (code, _, err) = perf(&base);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("client certificate"), "{err}");
    assert!(err.contains("--ssl-https-client-certificate-file"), "{err}");
    let (cert, key, cert_der, key_der, both) = (
        pki.path("client.pem"),
        pki.path("client.key"),
        pki.path("client.der"),
        pki.path("client-key.der"),
        pki.path("client-both.pem"),
    );
    for extra in [
        vec![
            "--ssl-https-client-certificate-file",
            &cert,
            "--ssl-https-private-key-file",
            &key,
        ],
        vec![
            "--ssl-https-client-certificate-file",
            &cert_der,
            "--ssl-https-client-certificate-type",
            "DER",
            "--ssl-https-private-key-file",
            &key_der,
            "--ssl-https-private-key-type",
            "der",
        ],
        // the key in the certificate's file
        vec!["--ssl-https-client-certificate-file", &both],
    ] {
        let mut a = base.to_vec();
        a.extend(&extra);
        assert_measured(&perf(&a));
    }
    assert!(r.bad().is_empty(), "{:?}", r.bad());
}

#[test]
fn bad_certificate_files_are_usage_errors_naming_the_file() {
    let pki = Pki::new();
    let url = "https://localhost:1";
    let missing = pki.path("missing.pem");
    let cases: Vec<(Vec<String>, Vec<String>)> = vec![
        (
            vec!["--ssl-https-ca-certificates-file".into(), missing.clone()],
            vec![
                format!("--ssl-https-ca-certificates-file {missing}"),
                "no such file".into(),
            ],
        ),
        (
            vec![
                "--ssl-https-ca-certificates-file".into(),
                pki.path("garbage.pem"),
            ],
            vec![pki.path("garbage.pem"), "not a PEM file".into()],
        ),
        (
            // a key where certificates were expected
            vec![
                "--ssl-https-ca-certificates-file".into(),
                pki.path("client.key"),
            ],
            vec![pki.path("client.key"), "no PEM certificate".into()],
        ),
        (
            vec![
                "--ssl-https-client-certificate-file".into(),
                pki.path("client.pem"),
            ],
            vec![
                pki.path("client.pem"),
                "no PEM private key".into(),
                "--ssl-https-private-key-file".into(),
            ],
        ),
        (
            vec![
                "--ssl-https-private-key-file".into(),
                pki.path("client.key"),
            ],
            vec!["needs --ssl-https-client-certificate-file".into()],
        ),
    ];
    for (extra, wanted) in cases {
        let mut a = vec!["-u", url];
        a.extend(extra.iter().map(String::as_str));
        let (code, _, err) = perf(&a);
        assert_eq!(code, 2, "{extra:?}: {err}");
        for w in wanted {
            assert!(err.contains(&w), "{extra:?}: {w:?} in {err}");
        }
        assert!(!err.contains("panicked"), "{err}");
    }
    // gRPC: files without TLS are refused rather than ignored
    let (code, _, err) = perf(&[
        "-i",
        "grpc",
        "-u",
        "localhost:1",
        "--ssl-grpc-root-certifications-file",
        &pki.path("ca.pem"),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--ssl-grpc-use-ssl"), "{err}");
    let (code, _, err) = perf(&[
        "-i",
        "grpc",
        "-u",
        "localhost:1",
        "--ssl-grpc-use-ssl",
        "--ssl-grpc-root-certifications-file",
        &missing,
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!("--ssl-grpc-root-certifications-file {missing}")),
        "{err}"
    );
}

#[test]
fn grpc_over_tls() {
    let pki = Pki::new();
    let s = Server::start(Default::default());
    let port = terminate(
        &pki,
        port_of(&s.url()),
        Serve {
            other_name: false,
            client_auth: false,
            alpn: b"h2",
        },
    );
    let ca = pki.path("ca.pem");
    let plain = format!("localhost:{port}");
    let https = format!("https://localhost:{port}");
    // perf_analyzer's flags, and an https:// URL
    for args in [
        vec![
            "-u",
            &plain,
            "--ssl-grpc-use-ssl",
            "--ssl-grpc-root-certifications-file",
            &ca,
        ],
        vec!["-u", &https, "--ssl-grpc-root-certifications-file", &ca],
        vec![
            "-u",
            &plain,
            "--ssl-grpc-use-ssl",
            "--ssl-grpc-root-certifications-file",
            &ca,
            "--streaming",
        ],
    ] {
        let mut a = vec!["-i", "grpc"];
        a.extend(&args);
        let run = perf(&a);
        assert_measured(&run);
        // the server's statistics came over the same connection
        assert!(
            run.1.unwrap()["levels"][0]["server"]["requests"]
                .as_u64()
                .unwrap()
                >= 18
        );
    }
    assert!(s.bad().is_empty(), "{:?}", s.bad());
    let (code, _, err) = perf(&["-i", "grpc", "-u", &plain, "--ssl-grpc-use-ssl"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unknown issuer"), "{err}");
    assert!(err.contains("--ssl-grpc-root-certifications-file"), "{err}");
}

#[test]
fn grpc_mutual_tls() {
    let pki = Pki::new();
    let s = Server::start(Default::default());
    let port = terminate(
        &pki,
        port_of(&s.url()),
        Serve {
            other_name: false,
            client_auth: true,
            alpn: b"h2",
        },
    );
    let url = format!("localhost:{port}");
    let ca = pki.path("ca.pem");
    let base = [
        "-i",
        "grpc",
        "-u",
        &url,
        "--ssl-grpc-use-ssl",
        "--ssl-grpc-root-certifications-file",
        &ca,
    ];
    let (code, _, err) = perf(&base);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("client certificate"), "{err}");
    let (cert, key) = (pki.path("client.pem"), pki.path("client.key"));
    let mut a = base.to_vec();
    a.extend([
        "--ssl-grpc-certificate-chain-file",
        &cert,
        "--ssl-grpc-private-key-file",
        &key,
    ]);
    assert_measured(&perf(&a));
}
