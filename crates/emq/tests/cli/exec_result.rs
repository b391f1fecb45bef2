//! `emq worker --exec`: how a command's stdout is stored as the job's
//! result (JSON when it parses as JSON, a string otherwise, null when
//! empty), as its `--help` and docs/worker.md say.

use crate::common::{assert_ok, emq, emq_on, spawn_on, wait_for_state};
use echomq_testkit::TestServer;
use serde_json::json;

/// Prints, by job id: a number, an object, plain text, nothing.
const COMMAND: &str = r#"case "$EMQ_JOB_ID" in
  number) echo 42 ;;
  object) echo '{"sent":true}' ;;
  text) echo 'sent to ada' ;;
  empty) ;;
esac"#;

#[test]
fn exec_stdout_is_stored_as_json_when_it_parses_else_as_a_string() {
    let server = TestServer::start();
    for id in ["number", "object", "text", "empty"] {
        assert_ok(&emq_on(&server, &["enqueue", "q", "{}", "--id", id]));
    }
    let mut worker = spawn_on(&server, &["worker", "q", "--exec", COMMAND, "--quiet"]);
    let result = |id: &str| wait_for_state(&server, "q", id, "completed")["result"].clone();
    assert_eq!(result("number"), json!(42));
    assert_eq!(result("object"), json!({"sent": true}));
    assert_eq!(result("text"), json!("sent to ada"));
    assert_eq!(result("empty"), json!(null));
    worker.signal("TERM");
    assert_eq!(worker.wait_exit().code(), Some(0), "{:?}", worker.errors);
}

#[test]
fn worker_help_says_how_stdout_is_stored() {
    let run = emq(&["worker", "--help"]);
    assert_ok(&run);
    let help = run.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        help.contains("stored as JSON when it parses as JSON"),
        "{help}"
    );
    assert!(
        help.contains("as a JSON string otherwise, null when empty"),
        "{help}"
    );
}
