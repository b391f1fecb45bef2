//! [`TestServer`]: one real server on a free loopback port in a temp dir.

use std::path::{Path, PathBuf};

use echomq_server::{ServerBinary, ServerConfig, ServerError, ServerKind, ServerProcess};
use tempfile::TempDir;

use crate::TEST_SERVER_ENV;

/// A real server on a free loopback port in a temp dir; `SHUTDOWN NOSAVE`
/// on drop, then the directory is removed (it is kept, and its path
/// printed, when the thread is panicking, so a failed test leaves its
/// `server.log` behind).
#[derive(Debug)]
pub struct TestServer {
    process: ServerProcess,
    binary: ServerBinary,
    config: ServerConfig,
    dir: Option<TempDir>,
}

impl TestServer {
    /// Valkey (via [`ServerBinary::locate`]). Panics with a clear message
    /// when no binary is found.
    pub fn valkey() -> Self {
        Self::with_config(binary_or_panic(ServerBinary::locate()), false, Vec::new())
    }

    /// Redis (via [`ServerBinary::redis`]: `$EMQ_REDIS_SERVER`, then
    /// `redis-server` on `PATH`). Panics with a clear message when none is
    /// found.
    pub fn redis() -> Self {
        Self::with_config(binary_or_panic(ServerBinary::redis()), false, Vec::new())
    }

    /// The suite's default: Redis when `EMQ_TEST_SERVER=redis`, else Valkey.
    pub fn start() -> Self {
        Self::with_config(default_binary(), false, Vec::new())
    }

    /// `binary` with AOF on or off and `modules` loaded. Panics (quoting
    /// the server's log) when it does not start.
    pub fn with_config(binary: ServerBinary, appendonly: bool, modules: Vec<PathBuf>) -> Self {
        Self::spawn(&binary, appendonly, modules, Vec::new())
            .unwrap_or_else(|e| panic!("TestServer: {e}"))
    }

    /// Start a server with extra arguments; the caller handles the error.
    pub(crate) fn spawn(
        binary: &ServerBinary,
        appendonly: bool,
        modules: Vec<PathBuf>,
        extra_args: Vec<String>,
    ) -> Result<Self, ServerError> {
        let dir = tempfile::Builder::new()
            .prefix(&format!("emq-test-{}-", binary.kind.name()))
            .tempdir()?;
        let mut config = ServerConfig {
            dir: dir.path().to_path_buf(),
            port: 0,
            appendonly,
            modules,
            preload: binary.jemalloc_preload(),
            extra_args,
        };
        let process = ServerProcess::spawn(binary, &config)?;
        // A restart comes back on the same port.
        config.port = process.port();
        Ok(TestServer {
            process,
            binary: binary.clone(),
            config,
            dir: Some(dir),
        })
    }

    /// Stops the server with `SHUTDOWN SAVE` and starts it again on the same
    /// port and directory, with the same modules, so it loads what it saved:
    /// what clients see of a server restart (their connections are closed,
    /// the script cache is empty, the data is back). Panics (quoting the
    /// server's log) when it does not come back.
    pub fn restart(&mut self) {
        self.process
            .shutdown(true)
            .unwrap_or_else(|e| panic!("TestServer: stopping for a restart: {e}"));
        self.process = ServerProcess::spawn(&self.binary, &self.config)
            .unwrap_or_else(|e| panic!("TestServer: restarting: {e}"));
    }

    /// Kills the server with `SIGKILL` (a crash: no shutdown, no save) and
    /// reaps it; [`TestServer::start_again`] brings it back.
    pub fn kill(&mut self) {
        self.process
            .kill()
            .unwrap_or_else(|e| panic!("TestServer: killing port {}: {e}", self.port()));
    }

    /// Starts the server again on the same port and directory with the
    /// same settings, after [`TestServer::kill`]: it loads what its AOF
    /// holds. Panics (quoting the server's log) when it does not come back.
    pub fn start_again(&mut self) {
        self.process = ServerProcess::spawn(&self.binary, &self.config)
            .unwrap_or_else(|e| panic!("TestServer: starting again: {e}"));
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        self.process.url()
    }

    /// The port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.process.port()
    }

    /// Which server software runs.
    pub fn kind(&self) -> ServerKind {
        self.process.kind()
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// The server's temporary directory (data files and `server.log`).
    pub fn dir(&self) -> &Path {
        self.process.dir()
    }

    /// The last lines of the server's log.
    pub fn log_tail(&self) -> String {
        self.process.log_tail()
    }

    /// A `redis` client for this server (sync or async use).
    pub fn client(&self) -> redis::Client {
        redis::Client::open(self.url())
            .unwrap_or_else(|e| panic!("TestServer: bad url {}: {e}", self.url()))
    }

    /// A multiplexed async connection with the response timeout disabled
    /// (a loaded CI machine must not turn slowness into errors).
    pub async fn connection(&self) -> redis::aio::MultiplexedConnection {
        let config = redis::AsyncConnectionConfig::new().set_response_timeout(None);
        self.client()
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .unwrap_or_else(|e| panic!("TestServer: connecting to {}: {e}", self.url()))
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = self.process.shutdown(false);
        let Some(dir) = self.dir.take() else {
            return;
        };
        if std::thread::panicking() {
            let kept = dir.keep();
            eprintln!(
                "TestServer ({} on port {}): kept {} for inspection",
                self.process.kind(),
                self.process.port(),
                kept.display()
            );
        }
    }
}

/// The suite's default binary: Redis when `EMQ_TEST_SERVER=redis`, else
/// Valkey. Panics with a clear message when it is not found or the
/// variable is not understood.
pub(crate) fn default_binary() -> ServerBinary {
    binary_or_panic(match std::env::var(TEST_SERVER_ENV) {
        Ok(v) if v.eq_ignore_ascii_case("redis") => ServerBinary::redis(),
        Ok(v) if v.is_empty() || v.eq_ignore_ascii_case("valkey") => ServerBinary::locate(),
        Ok(v) => panic!("{TEST_SERVER_ENV}={v:?} is not understood; use `valkey` or `redis`"),
        Err(_) => ServerBinary::locate(),
    })
}

fn binary_or_panic(found: Result<ServerBinary, ServerError>) -> ServerBinary {
    found.unwrap_or_else(|e| panic!("TestServer: {e}"))
}
