//! Servers reached another way than plain TCP: [`TlsServer`] (TLS, with
//! certificates made for the test by [`TestCertificates`]) and
//! [`TestServer::with_unix_socket`].

use std::path::Path;

use echomq_server::{ServerBinary, free_loopback_port};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use tempfile::TempDir;

use crate::TestServer;

/// A CA, a server certificate it signed for `localhost` and `127.0.0.1`,
/// and a client certificate it signed (all PEM), made fresh for a test.
#[derive(Debug, Clone)]
pub struct TestCertificates {
    /// The CA's certificate: what a client trusts.
    pub ca: String,
    /// The server's certificate.
    pub server_cert: String,
    /// The server's private key.
    pub server_key: String,
    /// A client certificate (for mutual TLS).
    pub client_cert: String,
    /// The client certificate's private key.
    pub client_key: String,
}

impl TestCertificates {
    /// New certificates. Panics when rcgen fails (it does not, for these
    /// fixed parameters).
    pub fn generate() -> Self {
        let ca_key = KeyPair::generate().expect("CA key");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "EchoMQ test CA");
        let ca = ca_params.self_signed(&ca_key).expect("CA certificate");
        let issuer = Issuer::new(ca_params, ca_key);
        let signed = |names: Vec<String>, common_name: &str| {
            let key = KeyPair::generate().expect("key");
            let mut params = CertificateParams::new(names).expect("params");
            params
                .distinguished_name
                .push(DnType::CommonName, common_name);
            let cert = params.signed_by(&key, &issuer).expect("certificate");
            (cert.pem(), key.serialize_pem())
        };
        let (server_cert, server_key) = signed(
            vec!["localhost".into(), "127.0.0.1".into()],
            "EchoMQ test server",
        );
        let (client_cert, client_key) = signed(Vec::new(), "EchoMQ test client");
        Self {
            ca: ca.pem(),
            server_cert,
            server_key,
            client_cert,
            client_key,
        }
    }
}

/// Whether a [`TlsServer`] asks clients for a certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// Any client may connect (`tls-auth-clients no`).
    None,
    /// Only a client presenting a certificate the CA signed
    /// (`tls-auth-clients yes`).
    Required,
}

/// [`TestCertificates`] written to the files a server reads.
#[derive(Debug)]
pub(crate) struct TlsFiles {
    certificates: TestCertificates,
    dir: TempDir,
}

impl TlsFiles {
    /// Fresh certificates, written to a temporary directory.
    pub(crate) fn generate() -> Self {
        let certificates = TestCertificates::generate();
        let dir = tempfile::Builder::new()
            .prefix("emq-test-tls-")
            .tempdir()
            .expect("a temporary directory for the certificates");
        for (name, pem) in [
            ("ca.pem", &certificates.ca),
            ("server.pem", &certificates.server_cert),
            ("server.key", &certificates.server_key),
        ] {
            std::fs::write(dir.path().join(name), pem).expect("writing a certificate file");
        }
        Self { certificates, dir }
    }

    /// The certificates written.
    pub(crate) fn certificates(&self) -> &TestCertificates {
        &self.certificates
    }

    /// The server arguments for TLS on `port`.
    pub(crate) fn server_args(&self, port: u16, client_auth: ClientAuth) -> Vec<String> {
        let file = |name: &str| path_arg(&self.dir.path().join(name));
        let auth = match client_auth {
            ClientAuth::None => "no",
            ClientAuth::Required => "yes",
        };
        vec![
            "--tls-port".to_string(),
            port.to_string(),
            "--tls-cert-file".into(),
            file("server.pem"),
            "--tls-key-file".into(),
            file("server.key"),
            "--tls-ca-cert-file".into(),
            file("ca.pem"),
            "--tls-auth-clients".into(),
            auth.into(),
        ]
    }
}

/// A server speaking TLS on one loopback port (`rediss://localhost:PORT`)
/// and plain TCP on another ([`TlsServer::plain`]: for checks outside the
/// code under test). It is Debian's `redis-server` ([`ServerBinary::redis`]):
/// the Valkey of `scripts/valkey` is built without TLS.
#[derive(Debug)]
pub struct TlsServer {
    server: TestServer,
    tls_port: u16,
    files: TlsFiles,
}

impl TlsServer {
    /// Starts one, with fresh [`TestCertificates`]. Panics with a clear
    /// message when no Redis is found or it does not start.
    pub fn start(client_auth: ClientAuth) -> Self {
        let files = TlsFiles::generate();
        let tls_port = free_loopback_port().expect("a free port for TLS");
        let binary = tls_binary();
        let args = files.server_args(tls_port, client_auth);
        let server = TestServer::spawn(&binary, false, Vec::new(), args)
            .unwrap_or_else(|e| panic!("TlsServer: {e}"));
        Self {
            server,
            tls_port,
            files,
        }
    }

    /// `rediss://localhost:PORT`: the name the server's certificate carries.
    pub fn url(&self) -> String {
        format!("rediss://localhost:{}", self.tls_port)
    }

    /// The certificates: the CA a client must trust, and a client
    /// certificate it signed.
    pub fn certificates(&self) -> &TestCertificates {
        self.files.certificates()
    }

    /// The same server over plain TCP.
    pub fn plain(&self) -> &TestServer {
        &self.server
    }
}

/// The socket file of [`TestServer::with_unix_socket`], in the server's
/// directory (the server runs there, so the relative path lands in it).
const SOCKET_FILE: &str = "server.sock";

impl TestServer {
    /// The suite's default server ([`TestServer::start`]'s choice) also
    /// listening on a Unix socket in its directory: see
    /// [`TestServer::unix_url`].
    pub fn with_unix_socket() -> Self {
        let args = vec![
            "--unixsocket".to_string(),
            SOCKET_FILE.into(),
            "--unixsocketperm".into(),
            "700".into(),
        ];
        Self::spawn(&crate::server::default_binary(), false, Vec::new(), args)
            .unwrap_or_else(|e| panic!("TestServer: {e}"))
    }

    /// `unix:///path/to/server.sock`: the socket of a server started by
    /// [`TestServer::with_unix_socket`].
    pub fn unix_url(&self) -> String {
        format!("unix://{}", path_arg(&self.dir().join(SOCKET_FILE)))
    }
}

/// A server binary built with TLS: Debian's Redis ([`ServerBinary::redis`]).
/// Panics with a clear message when there is none.
pub(crate) fn tls_binary() -> ServerBinary {
    ServerBinary::redis()
        .unwrap_or_else(|e| panic!("TLS tests need Debian's redis-server (built with TLS): {e}"))
}

fn path_arg(path: &Path) -> String {
    path.to_str()
        .expect("temporary paths are UTF-8")
        .to_string()
}
