//! What wire 4 knows the server holds: its function library, or (where the
//! library is refused) which scripts it has loaded. Shared by a dispatch's
//! clones.
//!
//! A call the server cannot run as sent (no library, a script not in its
//! cache) is sent again once loaded. That is fine for one call, but not
//! inside a pipeline: the calls behind it have run by then, and a bulk
//! enqueue's jobs would take their ids out of order. So before a pipeline
//! goes out, [`Loaded::prepare`] makes sure the server holds what its calls
//! run.

use crate::scripts::{LIBRARY, LuaScript};
use crate::transport::link::Link;
use redis::Value;
use std::collections::HashSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Debug)]
pub(crate) struct Loaded {
    /// Calls go as `FCALL`s of the library: until the server or the user's
    /// ACL refuses it, then as `EVALSHA`s for good.
    functions: AtomicBool,
    /// The library answered an `FCALL` on this connection.
    library: AtomicBool,
    /// The scripts loaded by `SCRIPT LOAD` (once functions are refused).
    scripts: Mutex<HashSet<&'static str>>,
}

impl Default for Loaded {
    fn default() -> Self {
        Self {
            functions: AtomicBool::new(true),
            library: AtomicBool::new(false),
            scripts: Mutex::new(HashSet::new()),
        }
    }
}

impl Loaded {
    /// Whether calls go as `FCALL`s.
    pub(super) fn functions(&self) -> bool {
        self.functions.load(Ordering::Relaxed)
    }

    /// Calls go as `EVALSHA`s from now on.
    pub(super) fn refuse_functions(&self) {
        self.functions.store(false, Ordering::Relaxed);
    }

    /// The library answered a call: pipelines need not ask.
    pub(super) fn library_answered(&self) {
        if !self.library.load(Ordering::Relaxed) {
            self.library.store(true, Ordering::Relaxed);
        }
    }

    /// Whether the library is there and the user may call it (its
    /// `emq_ready_<tag>`, which answers 1 and writes nothing).
    async fn answers(link: &Link) -> bool {
        let ready = redis::cmd("FCALL")
            .arg(LIBRARY.ready.as_str())
            .arg(0)
            .query_async::<Value>(&mut link.clone())
            .await;
        matches!(ready, Ok(Value::Int(1)))
    }

    /// The server has lost what it held (a restart, a flush): the next
    /// pipeline makes sure of it again.
    pub(super) fn forget(&self) {
        self.library.store(false, Ordering::Relaxed);
        self.scripts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    /// Loads the library (`FUNCTION LOAD`; one already there, or loaded by
    /// another client meanwhile, is an error the next call does not see).
    pub(super) async fn load_library(link: &Link) {
        let _ = redis::cmd("FUNCTION")
            .arg("LOAD")
            .arg(LIBRARY.source.as_str())
            .query_async::<Value>(&mut link.clone())
            .await;
    }

    /// Makes sure the server holds what `scripts` run before a pipeline of
    /// them goes out: the library, loaded and answering (else functions
    /// are refused for good), or each script loaded.
    pub(super) async fn prepare(
        &self,
        link: &Link,
        scripts: impl Iterator<Item = &'static LuaScript>,
    ) {
        if self.functions() && !self.library.load(Ordering::Relaxed) {
            // Asked first, loaded only when missing: a load is a write,
            // which a paused server (`CLIENT PAUSE WRITE`) would hold.
            if !Self::answers(link).await {
                Self::load_library(link).await;
                if !Self::answers(link).await {
                    self.refuse_functions();
                }
            }
            if self.functions() {
                self.library_answered();
            }
        }
        if self.functions() {
            return;
        }
        let wanted: Vec<&'static LuaScript> = {
            let loaded = self.scripts.lock().unwrap_or_else(|e| e.into_inner());
            let mut wanted: Vec<&'static LuaScript> = Vec::new();
            for script in scripts {
                if !loaded.contains(script.name) && !wanted.iter().any(|w| w.name == script.name) {
                    wanted.push(script);
                }
            }
            wanted
        };
        for script in wanted {
            let load = script.load().query_async::<Value>(&mut link.clone()).await;
            if matches!(load, Ok(Value::BulkString(_) | Value::SimpleString(_))) {
                let mut loaded = self.scripts.lock().unwrap_or_else(|e| e.into_inner());
                loaded.insert(script.name);
            }
        }
    }
}
