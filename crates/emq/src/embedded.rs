//! The server a command talks to: the one at `--url`, or a private
//! `valkey-server` started for the length of the command.

use crate::error::CliError;
use echomq_server::{ServerBinary, ServerConfig, ServerProcess, built_module};
use std::path::Path;
use tempfile::TempDir;

/// A private server child process; stopped (`SHUTDOWN NOSAVE`) and its
/// temp directory removed when dropped.
#[derive(Debug)]
pub struct Embedded {
    // Dropped first: the server stops before its directory is removed.
    process: ServerProcess,
    module: Option<std::path::PathBuf>,
    preload: Option<std::path::PathBuf>,
    binary: ServerBinary,
    version: Option<String>,
    _dir: Option<TempDir>,
}

impl Embedded {
    /// A throwaway server in a fresh temp dir, on a free port, without AOF,
    /// with the EchoMQ module loaded when it was built and jemalloc when the
    /// binary lacks it.
    pub fn start_temp() -> Result<Self, CliError> {
        let dir = tempfile::Builder::new().prefix("emq-embedded-").tempdir()?;
        Self::spawn(ServerConfig::new(dir.path()), Some(dir))
    }

    /// A server keeping its data in `dir` (created), with AOF on, on
    /// `port` (0: a free one), with the EchoMQ module loaded when it was
    /// built and jemalloc when the binary lacks it.
    pub fn start_in(dir: &Path, port: u16) -> Result<Self, CliError> {
        let mut config = ServerConfig::new(dir);
        config.port = port;
        config.appendonly = true;
        Self::spawn(config, None)
    }

    /// A replica of the server on `primary_port`, in a fresh temp dir, with
    /// AOF on and fsynced at every write (so that it confirms a
    /// `WAITAOF` at once): what `emq --durability replicas:N bench` waits for.
    pub fn start_replica(primary_port: u16) -> Result<Self, CliError> {
        let dir = tempfile::Builder::new().prefix("emq-replica-").tempdir()?;
        let mut config = ServerConfig::new(dir.path());
        config.appendonly = true;
        config.extra_args = ["--appendfsync", "always", "--replicaof", "127.0.0.1"]
            .map(String::from)
            .into_iter()
            .chain([primary_port.to_string()])
            .collect();
        Self::spawn(config, Some(dir))
    }

    /// Starts the located binary with `config`, the built module and the
    /// jemalloc it lacks added.
    fn spawn(mut config: ServerConfig, dir: Option<TempDir>) -> Result<Self, CliError> {
        let binary = ServerBinary::locate()?;
        config.preload = binary.jemalloc_preload();
        let module = built_module();
        config.modules.extend(module.clone());
        let process = ServerProcess::spawn(&binary, &config)?;
        let version = binary.version().ok();
        Ok(Self {
            process,
            module,
            preload: config.preload,
            binary,
            version,
            _dir: dir,
        })
    }

    /// The EchoMQ module loaded into the server, if one was built.
    pub fn module(&self) -> Option<&Path> {
        self.module.as_deref()
    }

    /// The jemalloc preloaded into the server, when its binary was built
    /// with libc's malloc and the machine has jemalloc
    /// ([`ServerBinary::jemalloc_preload`]).
    pub fn preload(&self) -> Option<&Path> {
        self.preload.as_deref()
    }

    /// The binary the server runs: what `$EMQ_VALKEY_SERVER`, `PATH` or
    /// `target/valkey/` gave, else a `redis-server` on `PATH`
    /// ([`ServerBinary::locate`]).
    pub fn binary(&self) -> &ServerBinary {
        &self.binary
    }

    /// The binary's version as its `--version` says, e.g. `9.1.2`.
    pub fn version(&self) -> Option<&str> {
        self.version.as_deref()
    }

    /// `Valkey 9.1.2 (/path/to/valkey-server)`: the software, its version
    /// (as `--version` says) and the binary's path, for banners.
    pub fn describe(&self) -> String {
        let version = self.version.as_deref().unwrap_or("(unknown version)");
        format!(
            "{} {version} ({})",
            self.binary.kind,
            self.binary.path.display()
        )
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        self.process.url()
    }

    /// The child process.
    pub fn process(&mut self) -> &mut ServerProcess {
        &mut self.process
    }
}

/// Where a `demo` or `bench` runs: `--url`, or an embedded server.
#[derive(Debug)]
pub struct Target {
    /// The server's URL.
    pub url: String,
    /// The embedded server, when one was started.
    pub embedded: Option<Embedded>,
}

impl Target {
    /// The server at `url`, or a fresh embedded one when `url` is `None`.
    pub async fn resolve(url: Option<&str>) -> Result<Self, CliError> {
        if let Some(url) = url {
            return Ok(Self {
                url: url.to_string(),
                embedded: None,
            });
        }
        let embedded = tokio::task::spawn_blocking(Embedded::start_temp)
            .await
            .map_err(|err| CliError::usage(format!("starting the embedded server: {err}")))??;
        Ok(Self {
            url: embedded.url(),
            embedded: Some(embedded),
        })
    }

    /// The embedded server's binary path, when this command started one.
    pub fn embedded_binary(&self) -> Option<String> {
        self.embedded
            .as_ref()
            .map(|embedded| embedded.binary().path.display().to_string())
    }

    /// Runs `work` against this target, then stops the embedded server (if
    /// any), also when Ctrl-C interrupts the work.
    pub async fn run<T>(
        self,
        work: impl Future<Output = Result<T, CliError>>,
    ) -> Result<T, CliError> {
        let result = tokio::select! {
            result = work => result,
            _ = tokio::signal::ctrl_c() => Err(CliError::interrupted()),
        };
        self.stop().await;
        result
    }

    /// Stops the embedded server, if any, off the async threads.
    pub async fn stop(self) {
        if let Some(embedded) = self.embedded {
            let _ = tokio::task::spawn_blocking(move || drop(embedded)).await;
        }
    }
}
