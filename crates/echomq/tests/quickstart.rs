//! The README's library example runs against a real server, and the README
//! shows exactly the example's code.

#[path = "../examples/quickstart.rs"]
mod quickstart;

use echomq_testkit::TestServer;

#[tokio::test]
async fn the_readme_example_runs() {
    let server = TestServer::start();
    assert_eq!(quickstart::run(&server.url()).await.unwrap(), 3);
}

#[test]
fn the_readme_shows_the_example_code() {
    let example = include_str!("../examples/quickstart.rs");
    let start =
        example.find("// README example begins\n").unwrap() + "// README example begins\n".len();
    let end = example.find("// README example ends").unwrap();
    let readme = include_str!("../../../README.md");
    assert!(
        readme.contains(&example[start..end]),
        "README.md must show crates/echomq/examples/quickstart.rs between its markers, verbatim"
    );
}
