//! `emq worker --exec` workers: `emq` processes connected as the library
//! workers are (the same topology, wire and durability), whose command
//! appends `<job id> <token>` (`EMQ_JOB_ID`, `EMQ_TOKEN`) to a file of
//! the run and prints `{"exec_token": <token>}` as the job's result. At
//! the end the lines join the ledger as exec runs, so the tally counts
//! them as it counts the library workers' runs.

use super::ledger::Ledger;
use echomq::{Durability, Wire};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::process::{Child, Command};

/// Jobs each `emq worker` runs at once.
const CONCURRENCY: &str = "4";
/// How long a stopped worker may take to exit (its commands take ms).
const EXIT_TIMEOUT: Duration = Duration::from_secs(15);

/// The `emq` binary: `EMQ_BIN`, else an `emq` in a directory above this
/// program (`target/release/examples/failover` finds
/// `target/release/emq`; the suite's `target/debug/deps/suite-…` finds
/// `target/debug/emq`).
pub(crate) fn emq_binary() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("EMQ_BIN") {
        return Ok(PathBuf::from(path));
    }
    let me = std::env::current_exe().map_err(|e| format!("this program's path: {e}"))?;
    me.ancestors()
        .skip(1)
        .take(3)
        .map(|dir| dir.join("emq"))
        .find(|path| path.is_file())
        .ok_or_else(|| {
            format!(
                "no emq binary in the directories above {}: build it (`cargo build -p emq`, \
                 `--release` for the release run) or set EMQ_BIN",
                me.display()
            )
        })
}

/// Running `emq worker --exec` processes and the directory of their
/// records.
#[derive(Debug)]
pub(crate) struct ExecWorkers {
    children: Vec<Child>,
    dir: tempfile::TempDir,
}

/// How the `emq` processes reach the queue: the connection flags of the
/// topology (`--sentinel …`, `--cluster …`), the wire and the durability.
#[derive(Debug, Clone)]
pub(crate) struct Reach {
    pub(crate) connection: Vec<String>,
    pub(crate) wire: Wire,
    pub(crate) durability: Durability,
}

/// Starts `count` workers on `queue`.
pub(crate) fn start(
    emq: &Path,
    reach: &Reach,
    queue: &str,
    count: usize,
) -> Result<ExecWorkers, String> {
    let dir = tempfile::Builder::new()
        .prefix("emq-failover-exec-")
        .tempdir()
        .map_err(|e| format!("a directory for the exec workers: {e}"))?;
    let records = dir.path().join("runs");
    let command = format!(
        r#"printf '%s %s\n' "$EMQ_JOB_ID" "$EMQ_TOKEN" >> '{}' && printf '{{"exec_token":%s}}' "$EMQ_TOKEN""#,
        records.display()
    );
    let wire = match reach.wire {
        Wire::Script => "script",
        Wire::Native => "native",
    };
    let mut children = Vec::with_capacity(count);
    for n in 0..count {
        let log = std::fs::File::create(dir.path().join(format!("worker-{n}.log")))
            .map_err(|e| format!("an exec worker's log: {e}"))?;
        let child = Command::new(emq)
            .args(&reach.connection)
            .args(["--wire", wire, "--durability"])
            .arg(reach.durability.to_string())
            .args(["worker", queue, "--exec", &command, "--concurrency"])
            .arg(CONCURRENCY)
            // As the library workers: a short lease, a frequent sweep, and
            // a job stranded by every failover recovered, not dead-lettered.
            .args(["--lease", "2s", "--stalled-interval", "500ms"])
            .args(["--max-stalls", "1000", "--quiet"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("starting {}: {e}", emq.display()))?;
        children.push(child);
    }
    Ok(ExecWorkers { children, dir })
}

impl ExecWorkers {
    /// Stops the workers (SIGTERM: they finish their commands and exit)
    /// and adds every run their commands recorded to `ledger`. An error
    /// when a worker had exited early or does not exit cleanly, with its
    /// log.
    pub(crate) async fn stop(mut self, ledger: &Ledger) -> Result<(), String> {
        for (n, child) in self.children.iter_mut().enumerate() {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(format!(
                    "exec worker {n} exited early ({status}){}",
                    self.log(n)
                ));
            }
        }
        for child in &self.children {
            let pid = child.id().ok_or("an exec worker without a pid")?;
            // The workspace allows no `unsafe` (no `libc::kill`).
            Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status()
                .await
                .map_err(|e| format!("kill -TERM {pid}: {e}"))?;
        }
        for n in 0..self.children.len() {
            let exited = tokio::time::timeout(EXIT_TIMEOUT, self.children[n].wait()).await;
            match exited {
                Ok(Ok(status)) if status.success() => {}
                Ok(Ok(status)) => return Err(format!("exec worker {n}: {status}{}", self.log(n))),
                Ok(Err(e)) => return Err(format!("exec worker {n}: {e}")),
                Err(_) => return Err(format!("exec worker {n} did not exit{}", self.log(n))),
            }
        }
        let records = self.dir.path().join("runs");
        let text = match std::fs::read_to_string(&records) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(format!("{}: {e}", records.display())),
        };
        for line in text.lines() {
            let run = line
                .split_once(' ')
                .and_then(|(id, token)| Some((id.to_string(), token.parse().ok()?)));
            let (id, token) = run.ok_or_else(|| format!("a bad exec record: {line:?}"))?;
            ledger.exec_ran(id, token);
        }
        Ok(())
    }

    fn log(&self, n: usize) -> String {
        let path = self.dir.path().join(format!("worker-{n}.log"));
        let text = std::fs::read_to_string(path).unwrap_or_default();
        format!("; its log:\n{text}")
    }
}
