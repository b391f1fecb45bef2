//! The embedded server loads the EchoMQ module when it was built, and the
//! demo runs on wire 6 and says so.

use std::process::Command;

#[test]
fn the_demo_runs_on_wire_6_with_the_built_module() {
    let output = Command::new(env!("CARGO_BIN_EXE_emq"))
        .args(["demo", "--wire", "native", "--jobs", "300", "--json"])
        .env("EMQ_MODULE", echomq_testkit::module_path())
        .output()
        .expect("emq runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("one JSON object");
    assert_eq!(report["wire"], "native", "{report}");
    assert_eq!(report["completed"], 300, "{report}");
    assert_eq!(report["retried"], 30, "{report}");
}

#[test]
fn without_the_module_wire_6_is_refused_with_a_one_line_cause() {
    let output = Command::new(env!("CARGO_BIN_EXE_emq"))
        .args(["demo", "--wire", "native", "--jobs", "10"])
        .env("EMQ_MODULE", "/nonexistent/libechomq_module.so")
        .output()
        .expect("emq runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("module"), "{stderr}");
}
