//! One job's shell command for `emq worker --exec`: `sh -c <command>` in a
//! process group of its own, the payload on its stdin, its stdout kept
//! whole and the tail of its stderr kept; stopped with SIGTERM to the
//! whole group (then SIGKILL, after the worker's `--shutdown-deadline`)
//! when the job must stop: cancelled, at its time limit, or the lease
//! lost.
//!
//! The group matters twice: a Ctrl-C in the terminal reaches only `emq`
//! (which then shuts down gracefully, letting commands finish), and a
//! stop reaches the command's own children too, so none is left holding
//! the output pipes.

use std::future::Future;
use std::io;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Child;

/// Bytes of stderr kept (the last ones): the job's error.
pub(crate) const STDERR_KEEP: usize = 4096;
/// What one run of the command left.
#[derive(Debug)]
pub(crate) struct Finished {
    /// How it ended.
    pub status: ExitStatus,
    /// Everything it wrote on stdout.
    pub stdout: Vec<u8>,
    /// The last [`STDERR_KEEP`] bytes (or fewer) it wrote on stderr.
    pub stderr: Vec<u8>,
    /// Whether it was stopped (SIGTERM) because `stop` fired.
    pub stopped: bool,
}

/// Runs `sh -c command` with `env` added, `stdin` written to it (then
/// closed), until it exits — or until `stop` fires, when its process group
/// gets SIGTERM, then SIGKILL unless it exited within `kill_after`, and
/// the run waits for it to exit.
pub(crate) async fn run(
    command: &str,
    env: &[(&str, String)],
    stdin: Vec<u8>,
    (stop, kill_after): (impl Future<Output = ()>, Duration),
) -> io::Result<Finished> {
    let mut shell = tokio::process::Command::new("sh");
    shell
        .arg("-c")
        .arg(command)
        .envs(env.iter().map(|(name, value)| (name, value)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(unix)]
    shell.process_group(0);
    let mut child = shell.spawn()?;
    let input = child.stdin.take();
    let output = child.stdout.take();
    let errors = child.stderr.take();
    let feed = async move {
        if let Some(mut input) = input {
            // A command that exits without reading its stdin is fine.
            let _ = input.write_all(&stdin).await;
        }
    };
    let ended = async {
        tokio::select! {
            status = child.wait() => status.map(|status| (status, false)),
            () = stop => terminate(&mut child, kill_after).await.map(|status| (status, true)),
        }
    };
    let ((), stdout, stderr, ended) = tokio::join!(
        feed,
        read_all(output),
        read_tail(errors, STDERR_KEEP),
        ended
    );
    let (status, stopped) = ended?;
    Ok(Finished {
        status,
        stdout,
        stderr,
        stopped,
    })
}

/// SIGTERM to the group, then SIGKILL after `kill_after`; its exit status.
async fn terminate(child: &mut Child, kill_after: Duration) -> io::Result<ExitStatus> {
    signal_group(child, "TERM").await;
    match tokio::time::timeout(kill_after, child.wait()).await {
        Ok(status) => status,
        Err(_) => {
            signal_group(child, "KILL").await;
            child.wait().await
        }
    }
}

/// Sends `signal` to the child's process group with the `kill` command
/// (the workspace allows no `unsafe`, so no `libc::kill`); when that
/// fails, SIGKILL to the child alone.
async fn signal_group(child: &mut Child, signal: &str) {
    let Some(pid) = child.id() else {
        return; // Already reaped.
    };
    let sent = tokio::process::Command::new("kill")
        .arg(format!("-{signal}"))
        .arg("--")
        .arg(format!("-{pid}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await
        .is_ok_and(|status| status.success());
    if !sent {
        let _ = child.start_kill();
    }
}

/// Everything `pipe` yields until end of file (read errors end it).
async fn read_all(pipe: Option<impl AsyncRead + Unpin>) -> Vec<u8> {
    let mut bytes = Vec::new();
    if let Some(mut pipe) = pipe {
        let _ = pipe.read_to_end(&mut bytes).await;
    }
    bytes
}

/// The last `keep` bytes `pipe` yields, starting on a character boundary.
async fn read_tail(pipe: Option<impl AsyncRead + Unpin>, keep: usize) -> Vec<u8> {
    let mut tail = Vec::new();
    let Some(mut pipe) = pipe else {
        return tail;
    };
    let mut chunk = vec![0; 8192];
    while let Ok(n @ 1..) = pipe.read(&mut chunk).await {
        tail.extend_from_slice(&chunk[..n]);
        if tail.len() > 2 * keep {
            tail.drain(..tail.len() - keep);
        }
    }
    if tail.len() > keep {
        tail.drain(..tail.len() - keep);
        // Skip UTF-8 continuation bytes left by the cut.
        let start = tail
            .iter()
            .position(|byte| byte & 0b1100_0000 != 0b1000_0000)
            .unwrap_or(tail.len());
        tail.drain(..start);
    }
    tail
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block_on<F: Future>(future: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(future)
    }

    #[test]
    fn payload_in_stdout_out_and_env_set() {
        let env = [("EMQ_JOB_ID", "j7".to_string())];
        let finished = block_on(run(
            r#"cat; printf " $EMQ_JOB_ID"; echo oops >&2; exit 4"#,
            &env,
            br#"{"a":1}"#.to_vec(),
            (std::future::pending(), Duration::from_secs(5)),
        ))
        .unwrap();
        assert_eq!(finished.stdout, br#"{"a":1} j7"#);
        assert_eq!(finished.stderr, b"oops\n");
        assert_eq!(finished.status.code(), Some(4));
        assert!(!finished.stopped);
    }

    #[test]
    fn stop_terminates_the_whole_group() {
        // The inner sleep is a grandchild: only a signal to the group
        // reaches it, and only then does stdout reach end of file. The stop
        // comes once the shell has started it (and said so in a file).
        let dir = tempfile::tempdir().unwrap();
        let started = dir.path().join("started");
        let command = format!("sleep 30 & echo $! > '{}'; wait", started.display());
        let stop = async {
            echomq_testkit::wait_for(
                "the shell to start its sleep",
                Duration::from_secs(10),
                || std::future::ready(started.is_file()),
            )
            .await
        };
        let finished = block_on(run(
            &command,
            &[],
            Vec::new(),
            (stop, Duration::from_secs(5)),
        ))
        .unwrap();
        assert!(finished.stopped);
        assert!(!finished.status.success());
    }

    #[test]
    fn a_command_that_ignores_sigterm_gets_sigkill_after_the_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let started = dir.path().join("started");
        let command = format!("trap '' TERM; touch '{}'; sleep 30", started.display());
        let stop = async {
            echomq_testkit::wait_for("the shell to trap SIGTERM", Duration::from_secs(10), || {
                std::future::ready(started.is_file())
            })
            .await
        };
        let begun = std::time::Instant::now();
        let finished = block_on(run(
            &command,
            &[],
            Vec::new(),
            (stop, Duration::from_millis(300)),
        ))
        .unwrap();
        assert!(finished.stopped);
        assert!(!finished.status.success(), "{:?}", finished.status);
        assert!(
            begun.elapsed() < Duration::from_secs(20),
            "killed after the deadline, not after the sleep"
        );
    }

    #[test]
    fn stderr_keeps_the_tail_on_a_char_boundary() {
        let text = format!("{}é{}", "a".repeat(10), "b".repeat(STDERR_KEEP - 1));
        let tail = block_on(read_tail(Some(text.as_bytes()), STDERR_KEEP));
        assert_eq!(tail, "b".repeat(STDERR_KEEP - 1).as_bytes());
        let short = block_on(read_tail(Some(&b"short"[..]), STDERR_KEEP));
        assert_eq!(short, b"short");
    }
}
