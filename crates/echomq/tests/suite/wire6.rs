//! Wire 6 refusals on the client: a transition the loaded module does not
//! serve is refused before anything is sent, and wire 6 without the module
//! fails at connect.

use crate::common;

use echomq::{Connector, Error, Wire};
use echomq_server::{ServerConfig, ServerProcess};
use echomq_testkit::{TestServer, invariant, module_path};
use serde_json::{Value, json};

/// A server of the suite's default kind with the module loaded with
/// `EXCLUDE EMQ.PAUSE`: it neither registers nor lists that command.
struct WithoutPause {
    process: ServerProcess,
    dir: std::path::PathBuf,
}

impl WithoutPause {
    fn start() -> Self {
        let dir = std::env::temp_dir().join(format!(
            "emq-wire6-exclude-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let mut config = ServerConfig::new(&dir);
        config.extra_args = vec![
            "--loadmodule".into(),
            module_path().to_string_lossy().into_owned(),
            "EXCLUDE".into(),
            "EMQ.PAUSE".into(),
        ];
        let process = ServerProcess::spawn(&common::default_binary(), &config)
            .unwrap_or_else(|e| panic!("server with EXCLUDE EMQ.PAUSE: {e}"));
        Self { process, dir }
    }
}

impl Drop for WithoutPause {
    fn drop(&mut self) {
        let _ = self.process.shutdown(false);
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

#[tokio::test]
async fn a_transition_the_module_does_not_serve_is_refused_wire6_unsupported() {
    let server = WithoutPause::start();
    let url = server.process.url();
    let urls = [url.clone()];
    let mut raw = redis::Client::open(url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let (_, names): (String, Vec<String>) = redis::cmd("EMQ.VERSION")
        .query_async(&mut raw)
        .await
        .unwrap();
    assert!(!names.contains(&"EMQ.PAUSE".to_string()), "{names:?}");
    assert!(names.contains(&"EMQ.RESUME".to_string()), "{names:?}");
    let unknown = redis::cmd("EMQ.PAUSE")
        .arg("emq:{wire6_unsupported}")
        .query_async::<redis::Value>(&mut raw)
        .await
        .unwrap_err();
    assert!(
        unknown.to_string().contains("unknown command"),
        "EMQ.PAUSE is not registered: {unknown}"
    );

    let connector = Connector::builder(url.as_str())
        .wire(Wire::Native)
        .connect()
        .await
        .unwrap();
    let q = connector.queue::<Value>("wire6_unsupported").unwrap();
    let err = q.admin().pause().await.unwrap_err();
    assert!(
        matches!(&err, Error::Wire6Unsupported { name } if name == "EMQ.PAUSE"),
        "{err:?}"
    );
    // Nothing was sent: the queue has no key.
    assert!(
        invariant::queue_keys(&urls, q.keys())
            .await
            .unwrap()
            .is_empty()
    );
    // The commands it serves still work on the same connector.
    assert!(q.enqueue(json!(1)).await.unwrap().created);
    q.admin().resume().await.unwrap();
    invariant::assert_invariant(&urls, q.keys()).await;
}

#[tokio::test]
async fn wire_6_without_the_module_fails_module_missing() {
    let server = TestServer::start();
    let err = Connector::builder(server.url())
        .wire(Wire::Native)
        .connect()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::ModuleMissing(_)), "{err:?}");
}
