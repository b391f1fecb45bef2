//! What the `emq` binary tests share: running the binary (to the end, or
//! in the background with its output read line by line), bounded waits,
//! and library calls that put jobs where a test needs them.
#![allow(dead_code)] // Each test file uses its own part.

pub(crate) mod readme;

use echomq::{Connector, JobId, Queue};
use echomq_testkit::{TestServer, wait_until};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

/// How long a bounded wait waits before the test fails.
pub(crate) const PATIENCE: Duration = Duration::from_secs(15);

/// A finished run of `emq`.
pub(crate) struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Stdout as one JSON value.
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(self.stdout.trim())
            .unwrap_or_else(|err| panic!("stdout is not one JSON value ({err}): {}", self.stdout))
    }
}

/// `emq` with no `EMQ_URL` from the environment.
pub(crate) fn command(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_emq"));
    command
        .args(args)
        .env_remove("EMQ_URL")
        // The default log format, whatever the developer's shell sets.
        .env_remove("RUST_LOG")
        .env("RUST_BACKTRACE", "1");
    command
}

/// Runs `emq` with `args` to the end (stdin empty, not a terminal).
pub(crate) fn emq(args: &[&str]) -> Run {
    emq_with_env(args, &[])
}

/// Runs `emq` with `args` to the end with the variables `env` set.
pub(crate) fn emq_with_env(args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut emq = command(args);
    emq.envs(env.iter().copied());
    run_to_end(emq)
}

/// Runs `command` (an `emq` from [`command`]) to the end, stdin empty.
pub(crate) fn run_to_end(mut command: Command) -> Run {
    let out = command.stdin(Stdio::null()).output().expect("run emq");
    Run {
        code: out.status.code().expect("exit code"),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `--url <server> args…`.
fn on(server: &TestServer, args: &[&str]) -> Vec<String> {
    let mut all = vec!["--url".to_string(), server.url()];
    all.extend(args.iter().map(|arg| arg.to_string()));
    all
}

/// A server on wire 4, and one with the module loaded on wire 6, each with
/// the `--wire` that reaches it.
pub(crate) fn servers() -> Vec<(TestServer, &'static str)> {
    vec![
        (TestServer::start(), "script"),
        (
            TestServer::with_config(
                echomq_testkit::ServerBinary::locate().unwrap(),
                false,
                vec![echomq_testkit::module_path()],
            ),
            "native",
        ),
    ]
}

/// The server that the `wire` arguments of a test reach: one with the
/// module loaded for `--wire native`, else a plain one (wire 4).
pub(crate) fn server_for(wire: &[&str]) -> TestServer {
    match wire {
        ["--wire", "native"] => TestServer::with_config(
            echomq_testkit::ServerBinary::locate().expect("a server binary"),
            false,
            vec![echomq_testkit::module_path()],
        ),
        _ => TestServer::start(),
    }
}

/// `emq --url <server> --wire <wire> args…`, to the end.
pub(crate) fn run_on(server: &TestServer, wire: &str, args: &[&str]) -> Run {
    let mut all = vec!["--wire", wire];
    all.extend_from_slice(args);
    emq_on(server, &all)
}

/// Runs `emq --url <server> args…` to the end.
pub(crate) fn emq_on(server: &TestServer, args: &[&str]) -> Run {
    let all = on(server, args);
    emq(&all.iter().map(String::as_str).collect::<Vec<_>>())
}

pub(crate) fn assert_ok(run: &Run) {
    assert_eq!(
        run.code, 0,
        "stdout: {}\nstderr: {}",
        run.stdout, run.stderr
    );
}

/// Exit 1, one line on stderr containing every `needle`, nothing on stdout.
pub(crate) fn assert_refused(run: &Run, needles: &[&str]) {
    assert_eq!(
        run.code, 1,
        "stdout: {}\nstderr: {}",
        run.stdout, run.stderr
    );
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.starts_with("emq: "), "{}", run.stderr);
    for needle in needles {
        assert!(run.stderr.contains(needle), "{needle:?} in {}", run.stderr);
    }
    assert_eq!(run.stdout, "");
}

/// A line of a human table: its words.
pub(crate) fn table_row<'a>(text: &'a str, first: &str) -> Vec<&'a str> {
    text.lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>())
        .find(|words| words.first() == Some(&first))
        .unwrap_or_else(|| panic!("no row {first:?} in:\n{text}"))
}

/// `emq job <queue> <id> --json`.
pub(crate) fn job(server: &TestServer, queue: &str, id: &str) -> Value {
    let run = emq_on(server, &["job", queue, id, "--json"]);
    assert_ok(&run);
    run.json()
}

/// `emq stats <queue> --json`.
pub(crate) fn stats(server: &TestServer, queue: &str) -> Value {
    let run = emq_on(server, &["stats", queue, "--json"]);
    assert_ok(&run);
    run.json()
}

/// Waits (at most [`PATIENCE`]) until job `id` of `queue` is in `state`;
/// returns it.
pub(crate) fn wait_for_state(server: &TestServer, queue: &str, id: &str, state: &str) -> Value {
    wait_until(&format!("job {id} to be {state}"), PATIENCE, || {
        let job = job(server, queue, id);
        (job["state"] == state).then_some(job)
    })
}

/// `emq` running in the background, its output read line by line.
pub(crate) struct Spawned {
    child: Child,
    stdout: Receiver<String>,
    stderr: Receiver<String>,
    /// Every stderr line read so far.
    pub errors: Vec<String>,
}

/// Starts `emq --url <server> args…` in the background (stdin empty).
pub(crate) fn spawn_on(server: &TestServer, args: &[&str]) -> Spawned {
    spawn(
        &on(server, args)
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    )
}

/// Starts `emq args…` in the background (stdin empty).
pub(crate) fn spawn(args: &[&str]) -> Spawned {
    spawn_command(command(args))
}

/// Starts `command` (an `emq` from [`command`]) in the background, stdin
/// empty, its output read line by line.
pub(crate) fn spawn_command(mut command: Command) -> Spawned {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn emq");
    Spawned {
        stdout: lines(child.stdout.take().expect("stdout")),
        stderr: lines(child.stderr.take().expect("stderr")),
        child,
        errors: Vec::new(),
    }
}

/// A thread sending each line of `pipe` until end of file.
fn lines(pipe: impl std::io::Read + Send + 'static) -> Receiver<String> {
    let (send, receive) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines() {
            let Ok(line) = line else { break };
            if send.send(line).is_err() {
                break;
            }
        }
    });
    receive
}

impl Spawned {
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The next stdout line, waiting at most [`PATIENCE`].
    pub(crate) fn next_line(&mut self) -> String {
        match self.stdout.recv_timeout(PATIENCE) {
            Ok(line) => line,
            Err(RecvTimeoutError::Timeout) => panic!(
                "no stdout line within {PATIENCE:?}; stderr: {:?}",
                self.drain_stderr()
            ),
            Err(RecvTimeoutError::Disconnected) => {
                panic!("stdout closed; stderr: {:?}", self.drain_stderr())
            }
        }
    }

    /// Waits (at most [`PATIENCE`]) for a stderr line containing `needle`.
    pub(crate) fn wait_stderr(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(line) = self.errors.iter().find(|line| line.contains(needle)) {
                return line.clone();
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stderr.recv_timeout(left) {
                Ok(line) => self.errors.push(line),
                Err(_) => panic!("no stderr line with {needle:?}; got {:?}", self.errors),
            }
        }
    }

    /// Every stderr line so far (waiting for none).
    pub(crate) fn drain_stderr(&mut self) -> Vec<String> {
        while let Ok(line) = self.stderr.try_recv() {
            self.errors.push(line);
        }
        self.errors.clone()
    }

    /// Sends `signal` (`TERM`, `INT`, `KILL`) with the `kill` command.
    pub(crate) fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{signal} failed");
    }

    /// Waits (at most [`PATIENCE`]) for the process to close its stderr
    /// (to exit), reading it; `None` when it still runs then.
    pub(crate) fn try_wait_exit(&mut self) -> Option<ExitStatus> {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stderr.recv_timeout(left) {
                Ok(line) => self.errors.push(line),
                Err(RecvTimeoutError::Timeout) => return None,
                Err(RecvTimeoutError::Disconnected) => return Some(self.wait_exit()),
            }
        }
    }

    /// Waits (at most [`PATIENCE`]) for the process to exit.
    pub(crate) fn wait_exit(&mut self) -> ExitStatus {
        let mut status = None;
        wait_until("emq to exit", PATIENCE, || {
            status = self.child.try_wait().expect("try_wait");
            status.is_some()
        });
        // Whatever it printed last.
        let deadline = Instant::now() + Duration::from_secs(2);
        while let Ok(line) = self
            .stderr
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            self.errors.push(line);
        }
        status.expect("exited")
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `future` to the end on a runtime of its own.
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
        .block_on(future)
}

/// The library's handle on `queue` of `server`.
pub(crate) async fn queue(server: &TestServer, queue: &str) -> Queue<Value> {
    Connector::connect(server.url())
        .await
        .expect("connect")
        .queue(queue)
        .expect("queue name")
}

/// Claims every pending job of `queue` (as worker `test`, lease `lease`);
/// their ids and tokens.
pub(crate) fn claim_all(server: &TestServer, name: &str, lease: Duration) -> Vec<(JobId, u64)> {
    block_on(async {
        let queue = queue(server, name).await;
        let claimed = queue.claim("test", lease, 1000).await.expect("claim");
        claimed.into_iter().map(|job| (job.id, job.token)).collect()
    })
}

/// Claims and completes one pending job of `queue` (result `"done"`).
pub(crate) fn complete_one(server: &TestServer, name: &str) -> JobId {
    block_on(async {
        let queue = queue(server, name).await;
        let mut claimed = queue
            .claim("test", Duration::from_secs(60), 1)
            .await
            .expect("claim");
        let job = claimed.pop().expect("a pending job");
        queue
            .complete(&job.id, job.token, "done")
            .await
            .expect("complete");
        job.id
    })
}

/// Every key of `queue` on `server` (prefix `emq`).
pub(crate) fn queue_keys(server: &TestServer, name: &str) -> Vec<String> {
    block_on(async {
        let queue = queue(server, name).await;
        echomq_testkit::invariant::queue_keys(&[server.url()], queue.keys())
            .await
            .expect("scan")
    })
}

/// Sets `key` on `server` to a string: a key of the wrong type for every
/// queue key but the sweep guard.
pub(crate) fn clobber(server: &TestServer, key: &str) {
    block_on(async {
        let _: () = redis::cmd("SET")
            .arg(key)
            .arg("not of its type")
            .query_async(&mut server.connection().await)
            .await
            .expect("SET");
    })
}

/// `GET path` over HTTP/1.1 on `addr` (`host:port`): the status line and
/// headers, and the body.
pub(crate) fn http_get(addr: &str, path: &str) -> (String, String) {
    http_get_as(addr, addr, path)
}

/// `GET path` from `addr` naming `host` as its `Host`: head and body.
pub(crate) fn http_get_as(addr: &str, host: &str, path: &str) -> (String, String) {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("a head and a body");
    (head.to_string(), body.to_string())
}
