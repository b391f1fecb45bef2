//! The README's library example runs against a real server, and the README
//! shows exactly the example's code.

#[path = "../../examples/quickstart.rs"]
mod example;

use echomq::Connector;
use echomq_testkit::TestServer;
use serde_json::Value;

#[tokio::test]
async fn the_readme_example_runs() {
    let server = TestServer::start();
    assert_eq!(example::run(&server.url()).await.unwrap(), 3);
}

/// Earlier runs' jobs on the server (completed ones, and any other) must
/// not end a run early: each run waits on its own three jobs, reports
/// them sent, and leaves none of them waiting.
#[tokio::test]
async fn the_readme_example_runs_twice_on_the_same_server() {
    let server = TestServer::start();
    let emq = Connector::connect(&server.url()).await.unwrap();
    let mail = emq.queue::<Value>("mail").unwrap();
    for run in 1..=2u64 {
        assert_eq!(example::run(&server.url()).await.unwrap(), 3, "run {run}");
        let counts = mail.admin().counts().await.unwrap();
        assert_eq!(counts.completed, 3 * run, "run {run}: {counts:?}");
        assert_eq!(
            counts.pending + counts.scheduled + counts.active,
            0,
            "run {run}: {counts:?}"
        );
    }
}

#[test]
fn the_readme_shows_the_example_code() {
    let example = include_str!("../../examples/quickstart.rs");
    let start =
        example.find("// README example begins\n").unwrap() + "// README example begins\n".len();
    let end = example.find("// README example ends").unwrap();
    let readme = include_str!("../../../../README.md");
    assert!(
        readme.contains(&example[start..end]),
        "README.md must show crates/echomq/examples/quickstart.rs between its markers, verbatim"
    );
}
