//! [`SentinelProcess`]: one `--sentinel` process on a free loopback port,
//! started again on a fresh port when another process took its port
//! first, and known dead (with its log's tail) rather than waited on.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use echomq_server::free_loopback_port;

use crate::server::default_binary;
use crate::wait::{SETUP_EVERY, Wait};

/// How many ports a sentinel tries before the setup gives up.
const PORT_ATTEMPTS: usize = 8;
/// How long a sentinel may take to answer its first `PING`.
const STARTUP: Duration = Duration::from_secs(20);
/// How much of the log a failure quotes.
const TAIL_BYTES: usize = 2000;

/// A running sentinel: killed (and waited for) on drop.
#[derive(Debug)]
pub(crate) struct SentinelProcess {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl SentinelProcess {
    /// Starts a sentinel named `name` (its files are `<name>.conf` and
    /// `<name>.log` in `dir`) whose config is `settings(port)`, and returns
    /// once it answers `PING`. A free port can be taken by another process
    /// before the sentinel binds it (the kernel hands the same range out to
    /// outgoing connections): then it starts again on a fresh one. Panics,
    /// quoting the log, when it exits for any other reason.
    pub(crate) fn start(dir: &Path, name: &str, settings: impl Fn(u16) -> String) -> Self {
        let conf = dir.join(format!("{name}.conf"));
        let log = dir.join(format!("{name}.log"));
        for _ in 0..PORT_ATTEMPTS {
            let port = free_loopback_port().expect("a free port for a sentinel");
            fs::write(&conf, settings(port)).expect("writing a sentinel's config");
            let out = fs::File::create(&log).expect("a sentinel's log");
            let child = Command::new(&default_binary().path)
                .arg(&conf)
                .arg("--sentinel")
                .current_dir(dir)
                .stdin(Stdio::null())
                .stdout(out.try_clone().expect("a sentinel's log"))
                .stderr(out)
                .spawn()
                .unwrap_or_else(|e| panic!("starting the sentinel {name}: {e}"));
            let mut sentinel = Self {
                child,
                port,
                log: log.clone(),
            };
            let up = Wait::new(&format!("the sentinel {name} to answer PING"), STARTUP)
                .every(SETUP_EVERY)
                .until(|| match sentinel.exited() {
                    Some(tail) => Ok(Err(tail)),
                    None => sentinel.value(&["PING"]).map(|_| Ok(())),
                });
            match up {
                Ok(()) => return sentinel,
                Err(tail) if tail.contains("Address already in use") => continue,
                Err(tail) => panic!("the sentinel {name} exited:\n{tail}"),
            }
        }
        panic!("the sentinel {name}: every one of {PORT_ATTEMPTS} free ports was taken first")
    }

    /// The port it listens on.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// `Err` with the log's tail when the sentinel has exited: a setup
    /// wait gives up at once instead of waiting its whole limit.
    pub(crate) fn alive(&mut self) -> Result<(), String> {
        match self.exited() {
            Some(tail) => Err(format!("the sentinel on {} exited:\n{tail}", self.port)),
            None => Ok(()),
        }
    }

    /// One command to the sentinel.
    pub(crate) fn value(&self, args: &[&str]) -> Result<redis::Value, String> {
        sentinel_value(self.port, args)
    }

    /// The log's tail, once the process has exited.
    fn exited(&mut self) -> Option<String> {
        self.child.try_wait().ok().flatten()?;
        let log = fs::read(&self.log).unwrap_or_default();
        let tail = &log[log.len().saturating_sub(TAIL_BYTES)..];
        Some(String::from_utf8_lossy(tail).into_owned())
    }
}

impl Drop for SentinelProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One command to the sentinel on `port`, its reply.
pub(crate) fn sentinel_value(port: u16, args: &[&str]) -> Result<redis::Value, String> {
    let client =
        redis::Client::open(format!("redis://127.0.0.1:{port}")).map_err(|e| e.to_string())?;
    let mut con = client
        .get_connection_with_timeout(Duration::from_secs(2))
        .map_err(|e| e.to_string())?;
    redis::cmd(args[0])
        .arg(&args[1..])
        .query(&mut con)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::net::{Ipv4Addr, TcpListener};

    use super::*;

    #[test]
    fn a_sentinel_whose_port_was_taken_starts_again_on_a_fresh_one() {
        let dir = tempfile::tempdir().unwrap();
        let taken = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let taken_port = taken.local_addr().unwrap().port();
        let calls = Cell::new(0);
        let sentinel = SentinelProcess::start(dir.path(), "s", |port| {
            calls.set(calls.get() + 1);
            let port = if calls.get() == 1 { taken_port } else { port };
            format!("port {port}\nbind 127.0.0.1\nsentinel monitor m 127.0.0.1 1 1\n")
        });
        assert_eq!(
            calls.get(),
            2,
            "one start on the taken port, one on a fresh one"
        );
        assert_ne!(sentinel.port(), taken_port);
        let pong: String = redis::from_redis_value(sentinel.value(&["PING"]).unwrap()).unwrap();
        assert_eq!(pong, "PONG");
    }

    #[test]
    #[should_panic(expected = "FATAL CONFIG FILE ERROR")]
    fn a_sentinel_that_exits_for_another_reason_fails_the_setup_quoting_its_log() {
        let dir = tempfile::tempdir().unwrap();
        SentinelProcess::start(dir.path(), "s", |port| {
            format!("port {port}\nno-such-directive yes\n")
        });
    }
}
