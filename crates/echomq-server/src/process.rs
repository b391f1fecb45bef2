//! [`ServerProcess`]: a server child process on loopback, started, probed
//! until it answers and stopped within bounds.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::resp::{probe, send_shutdown};
use crate::{LOG_FILE, ServerBinary, ServerConfig, ServerError, ServerKind, free_loopback_port};

/// How long [`ServerProcess::spawn`] waits for the server to answer `PING`.
const READY_TIMEOUT: Duration = Duration::from_secs(10);
/// How many fresh ports [`ServerProcess::spawn`] tries when the picked one was taken.
const PORT_ATTEMPTS: usize = 5;
/// How long [`ServerProcess::shutdown`] waits for the child to exit before killing it.
const EXIT_TIMEOUT_NOSAVE: Duration = Duration::from_secs(5);
const EXIT_TIMEOUT_SAVE: Duration = Duration::from_secs(30);
/// Poll interval of the bounded wait loops.
const POLL: Duration = Duration::from_millis(10);
/// Lines of `server.log` quoted in errors.
const LOG_TAIL_LINES: usize = 20;

/// A running server child process on 127.0.0.1. Stopped with
/// `SHUTDOWN NOSAVE` when dropped.
#[derive(Debug)]
pub struct ServerProcess {
    child: Child,
    path: PathBuf,
    kind: ServerKind,
    port: u16,
    dir: PathBuf,
    log_start: u64,
    exited: Option<ExitStatus>,
}

/// Outcome of one launch attempt.
enum Attempt {
    Ready(ServerProcess),
    PortTaken(ServerError),
}

impl ServerProcess {
    /// Start `binary` with `config` and wait (up to 10 s) until it answers
    /// `PING` with `PONG`. With `config.port == 0` a free port is picked, and
    /// a fresh one is tried if another process took it first. The child's
    /// stdout and stderr are appended to `<dir>/server.log`; errors quote its
    /// tail.
    pub fn spawn(binary: &ServerBinary, config: &ServerConfig) -> Result<Self, ServerError> {
        fs::create_dir_all(&config.dir)?;
        // The server chdirs into --dir: make every path absolute first.
        let dir = fs::canonicalize(&config.dir)?;
        let readable = |what: &str, file: &Path| {
            fs::canonicalize(file).map_err(|e| ServerError::Spawn {
                path: binary.path.clone(),
                reason: format!("{what} {} is not readable: {e}", file.display()),
                log_tail: String::new(),
            })
        };
        let mut modules = Vec::with_capacity(config.modules.len());
        for module in &config.modules {
            modules.push(readable("module", module)?);
        }
        let preload = match &config.preload {
            Some(library) => Some(readable("preloaded library", library)?),
            None => None,
        };
        let attempts = if config.port == 0 { PORT_ATTEMPTS } else { 1 };
        let mut last = None;
        for _ in 0..attempts {
            let port = if config.port == 0 {
                free_loopback_port()?
            } else {
                config.port
            };
            match Self::launch(binary, config, &dir, &modules, preload.as_deref(), port)? {
                Attempt::Ready(server) => return Ok(server),
                Attempt::PortTaken(err) => last = Some(err),
            }
        }
        Err(last.unwrap_or_else(|| ServerError::Spawn {
            path: binary.path.clone(),
            reason: "no launch attempt was made".into(),
            log_tail: String::new(),
        }))
    }

    fn launch(
        binary: &ServerBinary,
        config: &ServerConfig,
        dir: &Path,
        modules: &[PathBuf],
        preload: Option<&Path>,
        port: u16,
    ) -> Result<Attempt, ServerError> {
        let log_path = dir.join(LOG_FILE);
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)?;
        let log_start = log.metadata()?.len();
        let mut cmd = Command::new(&binary.path);
        cmd.arg("--port")
            .arg(port.to_string())
            .args(["--bind", "127.0.0.1"])
            .arg("--dir")
            .arg(dir)
            .args(["--save", ""])
            .args(["--appendonly", if config.appendonly { "yes" } else { "no" }])
            .args(["--protected-mode", "no"])
            .args(["--daemonize", "no"]);
        for module in modules {
            cmd.arg("--loadmodule").arg(module);
        }
        if let Some(library) = preload {
            cmd.env("LD_PRELOAD", library);
        }
        cmd.args(&config.extra_args)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        let child = cmd.spawn().map_err(|e| ServerError::Spawn {
            path: binary.path.clone(),
            reason: e.to_string(),
            log_tail: String::new(),
        })?;
        let mut server = ServerProcess {
            child,
            path: binary.path.clone(),
            kind: binary.kind,
            port,
            dir: dir.to_path_buf(),
            log_start,
            exited: None,
        };
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if let Some(status) = server.child.try_wait()? {
                server.exited = Some(status);
                let log_tail = server.log_tail();
                let err = ServerError::Spawn {
                    path: binary.path.clone(),
                    reason: format!("it exited ({status}) before answering PING on port {port}"),
                    log_tail: log_tail.clone(),
                };
                let taken = config.port == 0 && log_tail.contains("Address already in use");
                return if taken {
                    Ok(Attempt::PortTaken(err))
                } else {
                    Err(err)
                };
            }
            // PONG from the port is not enough: another process may own it.
            if probe(port).ok() == Some(server.child.id()) {
                return Ok(Attempt::Ready(server));
            }
            if Instant::now() >= deadline {
                let _ = server.child.kill();
                server.exited = server.child.wait().ok();
                return Err(ServerError::NotReady {
                    path: binary.path.clone(),
                    port,
                    dir: dir.to_path_buf(),
                    waited: READY_TIMEOUT,
                    log_tail: server.log_tail(),
                });
            }
            thread::sleep(POLL);
        }
    }

    /// The port the server listens on (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The server's directory (data files and `server.log`), absolute.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Which server software is running.
    pub fn kind(&self) -> ServerKind {
        self.kind
    }

    /// The binary that was started.
    pub fn binary_path(&self) -> &Path {
        &self.path
    }

    /// Stop the server: `SHUTDOWN SAVE` (when `save`) or `SHUTDOWN NOSAVE`,
    /// then wait (bounded) for the child to exit, killing it if it lingers.
    /// Calling it again after the child has exited does nothing.
    ///
    /// Errors when `save` was asked for and the server refused to save; the
    /// process is stopped nevertheless.
    pub fn shutdown(&mut self, save: bool) -> Result<(), ServerError> {
        if self.exited.is_some() {
            return Ok(());
        }
        if let Some(status) = self.child.try_wait()? {
            self.exited = Some(status);
            return Ok(());
        }
        let modifier = if save { "SAVE" } else { "NOSAVE" };
        let limit = if save {
            EXIT_TIMEOUT_SAVE
        } else {
            EXIT_TIMEOUT_NOSAVE
        };
        let refused = match send_shutdown(self.port, modifier, limit) {
            Ok(None) => None,
            Ok(Some(err)) => Some(err),
            // Not reachable: go straight to killing it.
            Err(_) => {
                self.kill_and_reap()?;
                return Ok(());
            }
        };
        // After a refused SHUTDOWN the server keeps running: no point waiting.
        let deadline = Instant::now()
            + if refused.is_some() {
                Duration::ZERO
            } else {
                limit
            };
        loop {
            if let Some(status) = self.child.try_wait()? {
                self.exited = Some(status);
                break;
            }
            if Instant::now() >= deadline {
                self.kill_and_reap()?;
                break;
            }
            thread::sleep(POLL);
        }
        match refused {
            Some(err) => Err(ServerError::Io(io::Error::other(format!(
                "SHUTDOWN {modifier} on 127.0.0.1:{} was refused ({err}); the server was killed",
                self.port
            )))),
            None => Ok(()),
        }
    }

    /// Kill the server with `SIGKILL`, as a crash would, and reap it: no
    /// shutdown, no save, nothing flushed beyond what the server already
    /// wrote. Calling it again after the child has exited does nothing.
    pub fn kill(&mut self) -> io::Result<()> {
        if self.exited.is_some() {
            return Ok(());
        }
        self.kill_and_reap()
    }

    fn kill_and_reap(&mut self) -> io::Result<()> {
        match self.child.kill() {
            Ok(()) => {}
            // Already exited (but not yet reaped).
            Err(e) if e.kind() == io::ErrorKind::InvalidInput => {}
            Err(e) => return Err(e),
        }
        self.exited = Some(self.child.wait()?);
        Ok(())
    }

    /// Wait for the server to exit on its own (for `emq server` running in
    /// the foreground).
    pub fn wait(&mut self) -> io::Result<ExitStatus> {
        if let Some(status) = self.exited {
            return Ok(status);
        }
        let status = self.child.wait()?;
        self.exited = Some(status);
        Ok(status)
    }

    /// The last lines this server wrote to `server.log`.
    pub fn log_tail(&self) -> String {
        read_tail(&self.dir.join(LOG_FILE), self.log_start).unwrap_or_default()
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.shutdown(false);
    }
}

fn read_tail(path: &Path, from: u64) -> io::Result<String> {
    let mut file = File::open(path)?;
    file.seek(SeekFrom::Start(from))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(LOG_TAIL_LINES);
    Ok(lines[start..].join("\n"))
}

#[cfg(test)]
mod tests;
