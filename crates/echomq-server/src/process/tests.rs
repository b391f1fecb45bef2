use std::fs;
use std::io::{self, BufReader, Write};
use std::net::{Ipv4Addr, TcpListener};
use std::path::PathBuf;

use super::*;
use crate::JEMALLOC_PATHS;
use crate::resp::{connect, encode, protocol_error, read_line};

/// A fresh, empty directory for one test's server.
fn temp_dir(name: &str) -> PathBuf {
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
