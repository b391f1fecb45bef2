//! Reaching the server over TLS (`rediss://`) and over a Unix socket: what
//! is refused at connect, and why; and what a connect checks of the server
//! (its eviction policy). A worker over each transport (cancellation
//! included) is in `in_hand` and `reconnect`.

use crate::common;

use common::Harness;
use echomq::{Connector, Error, TlsOptions};
use echomq_testkit::{ClientAuth, TestCertificates, TestCluster, TlsServer};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

/// The error of connecting to `url` with `tls` (which must fail).
async fn refusal(url: String, tls: TlsOptions) -> Error {
    Connector::builder(url)
        .tls(tls)
        .connect()
        .await
        .expect_err("the connect is refused")
}

/// Asserts `err` is [`Error::Tls`] and says `hint`.
fn assert_tls(err: &Error, hint: &str) {
    assert!(matches!(err, Error::Tls(_)), "{err:?}");
    assert!(err.to_string().contains(hint), "{err}");
}

#[tokio::test]
async fn a_tls_server_signed_by_an_untrusted_ca_is_refused_at_connect() {
    let server = TlsServer::start(ClientAuth::None);
    // Without the CA: the system's roots do not know the test CA.
    let err = Connector::connect(server.url()).await.unwrap_err();
    assert_tls(&err, "UnknownIssuer");
    assert_tls(&err, "TlsOptions::root_certificates");
    // Trusting another CA than the one that signed it.
    let other = TestCertificates::generate();
    let err = refusal(server.url(), TlsOptions::new().root_certificates(other.ca)).await;
    assert_tls(&err, "the server's certificate was refused");
}

#[tokio::test]
async fn a_server_that_asks_for_a_client_certificate_refuses_a_client_without_one() {
    let server = TlsServer::start(ClientAuth::Required);
    let ca = server.certificates().ca.clone();
    let err = refusal(server.url(), TlsOptions::new().root_certificates(ca)).await;
    assert_tls(&err, "TlsOptions::client_certificate");
}

#[tokio::test]
async fn tls_options_for_a_url_without_tls_are_refused() {
    let h = Harness::server().await;
    let err = refusal(h.urls()[0].clone(), TlsOptions::new()).await;
    assert_tls(&err, "rediss://");
}

#[tokio::test]
async fn root_certificates_without_a_certificate_are_refused() {
    let server = TlsServer::start(ClientAuth::None);
    for pem in [
        "",
        "not a certificate",
        "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
    ] {
        let err = refusal(server.url(), TlsOptions::new().root_certificates(pem)).await;
        assert_tls(&err, "root certificates");
    }
}

#[tokio::test]
async fn a_client_key_that_does_not_parse_is_refused() {
    let server = TlsServer::start(ClientAuth::Required);
    let certs = server.certificates().clone();
    let tls = TlsOptions::new()
        .root_certificates(certs.ca)
        .client_certificate(certs.client_cert, "no key here");
    let err = refusal(server.url(), tls).await;
    assert_tls(&err, "client certificate key");
}

#[tokio::test]
async fn a_queue_over_tls_enqueues_and_reads_back() {
    let h = Harness::tls(ClientAuth::Required).await;
    let q = h.queue::<Value>("tls_queue");
    let job = q.enqueue(json!({"over": "tls"})).await.unwrap();
    let stored = q
        .jobs()
        .get(&job.id)
        .await
        .unwrap()
        .expect("the job is stored");
    assert_eq!(stored.payload, r#"{"over":"tls"}"#);
    h.check(&q).await;
}

/// What `tracing` writes while the guard lives (on this thread: the
/// tests run on a current-thread runtime).
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

/// Connects with `builder`, capturing what `tracing` writes meanwhile
/// (`traces::scoped`: no sibling test's thread caches the warning's
/// callsite as unwanted).
async fn connect_capturing(builder: echomq::ConnectorBuilder) -> (Connector, String) {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _guard = common::traces::scoped(subscriber);
    let connector = builder.connect().await.unwrap();
    (connector, captured.text())
}

/// Sets `maxmemory-policy` on the server at `url`.
async fn set_eviction(url: &str, policy: &str) {
    let mut raw = redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg(&["SET", "maxmemory-policy", policy])
        .query_async(&mut raw)
        .await
        .unwrap();
}

const WARNING: &str = "set maxmemory-policy to noeviction";

#[tokio::test]
async fn a_server_that_may_evict_a_queues_keys_is_warned_of_at_connect() {
    let h = Harness::server().await;
    assert_eq!(h.connector.eviction_policy(), Some("noeviction"));
    let url = h.urls()[0].clone();
    for (policy, warned) in [("volatile-lru", false), ("allkeys-lru", true)] {
        set_eviction(&url, policy).await;
        let (connector, logged) = connect_capturing(Connector::builder(url.clone())).await;
        assert_eq!(connector.eviction_policy(), Some(policy));
        assert_eq!(logged.contains(WARNING), warned, "{policy}: {logged}");
    }
}

#[tokio::test]
async fn a_cluster_node_that_may_evict_a_queues_keys_is_warned_of_at_connect() {
    let cluster = TestCluster::start(3);
    let (connector, logged) = connect_capturing(Connector::cluster(cluster.urls())).await;
    assert_eq!(connector.eviction_policy(), Some("noeviction"));
    assert!(!logged.contains(WARNING), "{logged}");
    let node = &cluster.nodes()[1];
    set_eviction(&node.url(), "allkeys-random").await;
    let (connector, logged) = connect_capturing(Connector::cluster(cluster.urls())).await;
    assert_eq!(connector.eviction_policy(), Some("allkeys-random"));
    assert!(logged.contains(WARNING), "{logged}");
    assert!(
        logged.contains(&format!(":{}", node.port())),
        "names the node: {logged}"
    );
    assert_eq!(logged.matches(WARNING).count(), 1, "{logged}");
}
