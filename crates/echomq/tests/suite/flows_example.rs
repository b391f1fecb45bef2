//! The flows example (`examples/flows.rs`) runs against a real server:
//! its mail job runs after both resizes and mails both links; a second
//! order on the same server runs as the first.

#[path = "../../examples/flows.rs"]
mod example;

use echomq_testkit::TestServer;

#[tokio::test]
async fn the_flows_example_mails_both_links_after_both_resizes() {
    let server = TestServer::start();
    let links = vec![
        "https://cdn.example.com/64.png".to_string(),
        "https://cdn.example.com/1024.png".to_string(),
    ];
    assert_eq!(example::run(&server.url(), "order-1").await.unwrap(), links);
    assert_eq!(example::run(&server.url(), "order-2").await.unwrap(), links);
}
