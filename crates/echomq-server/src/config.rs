//! How to start a server.

use std::path::PathBuf;

/// Name of the log file (the child's stdout and stderr) inside the server's directory.
pub const LOG_FILE: &str = "server.log";

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
    /// jemalloc of [`ServerBinary::jemalloc_preload`](crate::ServerBinary::jemalloc_preload).
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
