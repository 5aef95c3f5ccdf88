//! Test certificate authorities and HTTPS serving for the test servers.
//!
//! A [`TestCa`] is generated in-process (no files, no network) and issues server certificates for loopback
//! names; [`serve_https`] runs an axum router behind TLS with its own accept loop. The Kubernetes API
//! emulator serves this way because client-go (kubectl) sends credentials only over TLS.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose, SanType,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::net::TcpListener;
pub use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// Why a certificate could not be made.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// rcgen refused the parameters.
    #[error("cannot generate a certificate: {0}")]
    Generate(#[from] rcgen::Error),
    /// rustls refused the certificate or key.
    #[error("cannot build the TLS configuration: {0}")]
    Config(#[from] rustls::Error),
}

/// A certificate authority made for one test run.
pub struct TestCa {
    cert: rcgen::Certificate,
    key: KeyPair,
}

/// A server certificate issued by a [`TestCa`], with its key.
#[derive(Clone)]
pub struct ServerCert {
    /// The certificate, PEM.
    pub cert_pem: String,
    /// The private key, PKCS#8 PEM.
    pub key_pem: String,
    cert_der: CertificateDer<'static>,
    key_der: Vec<u8>,
}

fn distinguished_name(common_name: &str) -> DistinguishedName {
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, common_name);
    name
}

impl TestCa {
    /// A new CA named `common_name`.
    pub fn new(common_name: &str) -> Result<Self, TlsError> {
        let mut params = CertificateParams::default();
        params.distinguished_name = distinguished_name(common_name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let key = KeyPair::generate()?;
        let cert = params.self_signed(&key)?;
        Ok(TestCa { cert, key })
    }

    /// The CA certificate, PEM (what a client trusts).
    pub fn cert_pem(&self) -> String {
        self.cert.pem()
    }

    /// Issues a server certificate for `localhost`, `127.0.0.1`, `::1` and `extra_names` (DNS names or IPs).
    pub fn issue_server_cert(&self, common_name: &str, extra_names: &[&str]) -> Result<ServerCert, TlsError> {
        let mut params = CertificateParams::default();
        params.distinguished_name = distinguished_name(common_name);
        params.subject_alt_names = vec![
            SanType::DnsName("localhost".try_into()?),
            SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)),
            SanType::IpAddress(IpAddr::V6(Ipv6Addr::LOCALHOST)),
        ];
        for name in extra_names {
            let san = match name.parse::<IpAddr>() {
                Ok(ip) => SanType::IpAddress(ip),
                Err(_) => SanType::DnsName((*name).try_into()?),
            };
            params.subject_alt_names.push(san);
        }
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.cert, &self.key)?;
        Ok(ServerCert {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            cert_der: cert.der().clone(),
            key_der: key.serialize_der(),
        })
    }
}

impl std::fmt::Debug for ServerCert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key is left out on purpose.
        f.debug_struct("ServerCert")
            .field("cert_pem", &self.cert_pem)
            .finish_non_exhaustive()
    }
}

impl ServerCert {
    /// A TLS acceptor serving this certificate over HTTP/1.1.
    pub fn acceptor(&self) -> Result<TlsAcceptor, TlsError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(
                vec![self.cert_der.clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key_der.clone())),
            )?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(TlsAcceptor::from(Arc::new(config)))
    }
}

/// An accepted connection: plain, or TLS once the handshake is done.
pub type MaybeTlsStream =
    tokio_util::either::Either<tokio::net::TcpStream, tokio_rustls::server::TlsStream<tokio::net::TcpStream>>;

/// Completes the TLS handshake on `stream` when `acceptor` is given (`None` when it fails: the client did not
/// trust us, or spoke plain HTTP); passes plain connections through.
pub async fn accept(stream: tokio::net::TcpStream, acceptor: Option<&TlsAcceptor>) -> Option<MaybeTlsStream> {
    match acceptor {
        None => Some(tokio_util::either::Either::Left(stream)),
        Some(acceptor) => match acceptor.accept(stream).await {
            Ok(tls) => Some(tokio_util::either::Either::Right(tls)),
            Err(error) => {
                tracing::debug!(%error, "TLS handshake failed");
                None
            }
        },
    }
}

/// Serves `router` over TLS on `listener` until `shutdown` is cancelled; connections then finish the
/// requests in flight (open watches end with the server's own shutdown).
pub async fn serve_https(listener: TcpListener, router: Router, acceptor: TlsAcceptor, shutdown: CancellationToken) {
    loop {
        let (stream, _) = tokio::select! {
            _ = shutdown.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    tracing::debug!(%error, "accept failed");
                    continue;
                }
            },
        };
        // Small answers (a watch event, a Status) must not wait for Nagle's algorithm.
        let _ = stream.set_nodelay(true);
        let acceptor = acceptor.clone();
        let router = router.clone();
        let stop = shutdown.clone();
        tokio::spawn(async move {
            let Ok(stream) = acceptor.accept(stream).await else {
                return;
            };
            let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
                let router = router.clone();
                async move { router.oneshot(request.map(Body::new)).await }
            });
            let connection = http1::Builder::new().serve_connection(TokioIo::new(stream), service);
            tokio::pin!(connection);
            tokio::select! {
                _ = connection.as_mut() => {}
                _ = stop.cancelled() => {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_ca_issues_loopback_server_certificates() {
        let ca = TestCa::new("test-ca").expect("ca");
        let cert = ca.issue_server_cert("server", &["keycloak.test"]).expect("cert");
        assert!(ca.cert_pem().starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(cert.key_pem.contains("PRIVATE KEY"));
        cert.acceptor().expect("rustls accepts the pair");
    }
}
