//! Wire 6 refusals on the client: a transition the loaded module does not
//! serve is refused before anything is sent, and wire 6 without the module
//! fails at connect.

mod common;

use echomq::{Connector, Error, Wire};
use echomq_testkit::TestServer;
use serde_json::{Value, json};

#[tokio::test]
async fn a_transition_the_module_does_not_serve_is_refused_wire6_unsupported() {
    let h = common::Harness::native().await;
    let q = h.queue::<Value>("wire6_unsupported");
    let err = q.admin().pause().await.unwrap_err();
    assert!(
        matches!(&err, Error::Wire6Unsupported { name } if name == "EMQ.PAUSE"),
        "{err:?}"
    );
    // The served spine still works on the same connector.
    assert!(q.enqueue(json!(1)).await.unwrap().created);
    h.check(&q).await;
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
