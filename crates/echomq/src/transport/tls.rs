//! TLS: `rediss://` servers, and what a URL cannot say (the CAs to trust,
//! a client certificate).
//!
//! The client library makes the connections that carry transitions; the
//! worker's cancel subscription opens a socket of its own. Both use rustls
//! (with the ring provider) and trust the same roots: the system's, or the
//! CAs given in [`TlsOptions::root_certificates`].

use crate::error::{Error, Result};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::sync::Arc;

/// TLS settings for `rediss://` servers beyond what the URL says. With none,
/// a `rediss://` server's certificate is checked against the system's
/// trusted roots and its name against the URL's host.
///
/// ```no_run
/// # async fn run() -> echomq::Result<()> {
/// use echomq::{Connector, TlsOptions};
/// let ca = std::fs::read("ca.pem").expect("the CA that signed the server's certificate");
/// let emq = Connector::builder("rediss://queue.internal:6380")
///     .tls(TlsOptions::new().root_certificates(ca))
///     .connect()
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Default)]
pub struct TlsOptions {
    roots: Option<Vec<u8>>,
    client: Option<(Vec<u8>, Vec<u8>)>,
}

impl std::fmt::Debug for TlsOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsOptions")
            .field("root_certificates", &self.roots.is_some())
            .field("client_certificate", &self.client.is_some())
            .finish()
    }
}

impl TlsOptions {
    /// The defaults: the system's roots, no client certificate.
    pub fn new() -> Self {
        Self::default()
    }

    /// Trusts only the CA certificates in `pem` (one or more PEM blocks)
    /// instead of the system's roots: for a server whose certificate a
    /// private CA signed.
    pub fn root_certificates(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.roots = Some(pem.into());
        self
    }

    /// Presents this certificate chain and its private key (both PEM) to
    /// a server that asks clients for one (mutual TLS, `tls-auth-clients`).
    pub fn client_certificate(
        mut self,
        chain: impl Into<Vec<u8>>,
        key: impl Into<Vec<u8>>,
    ) -> Self {
        self.client = Some((chain.into(), key.into()));
        self
    }

    /// The same settings as the `redis` crate takes them
    /// (`redis::Client::build_with_tls`), for a connection of your own.
    pub fn certificates(&self) -> redis::TlsCertificates {
        redis::TlsCertificates {
            client_tls: self
                .client
                .as_ref()
                .map(|(chain, key)| redis::ClientTlsConfig {
                    client_cert: chain.clone(),
                    client_key: key.clone(),
                }),
            root_cert: self.roots.clone(),
        }
    }

    /// The rustls configuration of a socket the client library does not
    /// open (the cancel subscription), built as the library builds its
    /// own. Checks every PEM given: a bad one fails here, at connect,
    /// naming which.
    pub(crate) fn client_config(&self) -> Result<Arc<rustls::ClientConfig>> {
        let mut roots = rustls::RootCertStore::empty();
        match &self.roots {
            Some(pem) => {
                for cert in certificates(pem, "root certificates")? {
                    roots
                        .add(cert)
                        .map_err(|err| bad("root certificates", err))?;
                }
            }
            None => {
                // Unreadable system certificates are skipped, as a server
                // signed by a readable one still verifies.
                for cert in rustls_native_certs::load_native_certs().certs {
                    let _ = roots.add(cert);
                }
            }
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|err| bad("protocol versions", err))?
            .with_root_certificates(roots);
        let config = match &self.client {
            None => builder.with_no_client_auth(),
            Some((chain, key)) => {
                let chain = certificates(chain, "client certificate")?;
                let key = PrivateKeyDer::from_pem_slice(key)
                    .map_err(|err| bad("client certificate key", err))?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|err| bad("client certificate", err))?
            }
        };
        Ok(Arc::new(config))
    }
}

/// Every CERTIFICATE block of `pem`; `what` names it in the error when one
/// does not parse or there is none.
fn certificates(pem: &[u8], what: &str) -> Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| bad(what, err))?;
    if certs.is_empty() {
        return Err(Error::Tls(format!(
            "{what}: no CERTIFICATE block in the PEM given"
        )));
    }
    Ok(certs)
}

fn bad(what: &str, err: impl std::fmt::Display) -> Error {
    Error::Tls(format!("{what}: {err}"))
}

/// Whether `url` asks for TLS (`rediss://`, `valkeys://`); false for a
/// URL the client library cannot parse (which fails on its own, clearly).
pub(crate) fn is_tls_url(url: &str) -> bool {
    use redis::IntoConnectionInfo;
    url.into_connection_info()
        .is_ok_and(|info| matches!(info.addr(), redis::ConnectionAddr::TcpTls { .. }))
}

/// [`Error::Tls`] saying what to do, for a connect that failed in the TLS
/// handshake: the server's certificate refused, or a client certificate
/// the server asks for and was not given. `None` for any other failure.
pub(crate) fn refused_handshake(err: &redis::RedisError) -> Option<Error> {
    // The client library keeps the I/O error behind an `Arc` (its
    // `source()`), and the I/O error keeps the TLS error as its payload.
    let io = std::error::Error::source(err)?
        .downcast_ref::<Arc<dyn std::error::Error + Send + Sync>>()?
        .downcast_ref::<std::io::Error>()?;
    let tls = io.get_ref()?.downcast_ref::<rustls::Error>()?;
    Some(Error::Tls(describe(tls)))
}

fn describe(err: &rustls::Error) -> String {
    match err {
        rustls::Error::InvalidCertificate(why) => format!(
            "the server's certificate was refused ({why:?}): trust the CA that signed it with TlsOptions::root_certificates (emq: --tls-ca-cert), and connect by a name the certificate carries"
        ),
        rustls::Error::AlertReceived(rustls::AlertDescription::CertificateRequired) => {
            "the server asks for a client certificate: give one with TlsOptions::client_certificate (emq: --tls-cert and --tls-key)".to_string()
        }
        other => format!("the TLS handshake failed: {other}"),
    }
}
